/*
 * src/thread/key.c: keys, ULT-local storage.
 *
 * Room plaque. The key table (one entry per index: a generation and the
 * destructor) is global, changed under coexec__g.lock, read without it. A
 * ULT's values live in a table it allocates on its first set, sized to
 * the highest index it used; each value carries the generation of the key
 * it was set under, so a value left behind by a deleted key is invisible
 * to a new key that reuses the index. The destructors run on the ULT
 * itself, after its function returns (or coexec_thread_exit), before its
 * stack is released.
 */
#include <stdlib.h>
#include <string.h>

#include "base/global.h"
#include "pool/pool.h"
#include "sched/sched.h"
#include "thread/thread.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

struct key_entry {
    void *value;
    uint32_t gen;
};

struct key_table {
    uint32_t cap;
    struct key_entry e[];
};

static struct {
    atom_u32_t gen; /* odd: the key exists; even: free */
    void (*dtor)(void *);
} key_defs[COEXEC_KEYS_MAX];

static bool key_live(coexec_key_t k)
{
    return k.index < COEXEC_KEYS_MAX && (k.gen & 1) &&
           atom_load_acq_u32(&key_defs[k.index].gen) == k.gen;
}

COEXEC_API int coexec_key_create(void (*destructor)(void *), coexec_key_t *key)
{
    if (!key)
        return COEXEC_EINVAL;
    RT_CHECK();
    pthread_mutex_lock(&coexec__g.lock);
    for (uint32_t i = 0; i < COEXEC_KEYS_MAX; i++) {
        uint32_t g = atom_load_rlx_u32(&key_defs[i].gen);
        if (!(g & 1)) {
            key_defs[i].dtor = destructor;
            /* Release: the destructor is visible with the generation. */
            atom_store_rel_u32(&key_defs[i].gen, g + 1);
            pthread_mutex_unlock(&coexec__g.lock);
            key->index = i;
            key->gen = g + 1;
            return COEXEC_OK;
        }
    }
    pthread_mutex_unlock(&coexec__g.lock);
    return COEXEC_EAGAIN;
}

COEXEC_API int coexec_key_delete(coexec_key_t key)
{
    RT_CHECK();
    pthread_mutex_lock(&coexec__g.lock);
    if (!key_live(key)) {
        pthread_mutex_unlock(&coexec__g.lock);
        return COEXEC_EHANDLE;
    }
    atom_store_rel_u32(&key_defs[key.index].gen, key.gen + 1);
    pthread_mutex_unlock(&coexec__g.lock);
    return COEXEC_OK;
}

static int self_for_keys(struct coexec_unit_rec **out)
{
    RT_CHECK();
    struct coexec_xstream_rec *xs = xs_self_entry();
    struct coexec_unit_rec *u = xs ? xs->cur : NULL;
    if (!u || u->kind == UNIT_TASKLET)
        return COEXEC_ECONTEXT;
    *out = u;
    return COEXEC_OK;
}

COEXEC_API int coexec_key_set(coexec_key_t key, void *value)
{
    struct coexec_unit_rec *u;
    int rc = self_for_keys(&u);
    if (rc)
        return rc;
    if (!key_live(key))
        return COEXEC_EHANDLE;
    struct key_table *t = u->keys;
    if (!t || t->cap <= key.index) {
        uint32_t cap = t ? t->cap : 0, ncap = cap ? cap : 8;
        while (ncap <= key.index)
            ncap *= 2;
        struct key_table *n = realloc(t, sizeof *n + ncap * sizeof n->e[0]);
        if (!n)
            return COEXEC_ENOMEM;
        memset(&n->e[cap], 0, (ncap - cap) * sizeof n->e[0]);
        n->cap = ncap;
        u->keys = t = n;
    }
    t->e[key.index].value = value;
    t->e[key.index].gen = key.gen;
    return COEXEC_OK;
}

COEXEC_API int coexec_key_get(coexec_key_t key, void **value)
{
    if (!value)
        return COEXEC_EINVAL;
    struct coexec_unit_rec *u;
    int rc = self_for_keys(&u);
    if (rc)
        return rc;
    if (!key_live(key))
        return COEXEC_EHANDLE;
    struct key_table *t = u->keys;
    *value = t && key.index < t->cap && t->e[key.index].gen == key.gen
                 ? t->e[key.index].value
                 : NULL;
    return COEXEC_OK;
}

/* Rounds of destructors, for destructors that set keys again (POSIX's
 * PTHREAD_DESTRUCTOR_ITERATIONS). */
#define KEY_ROUNDS 4

void coexec__keys_destroy(struct coexec_unit_rec *u)
{
    for (int round = 0; round < KEY_ROUNDS; round++) {
        bool again = false;
        struct key_table *t = u->keys;
        for (uint32_t i = 0; t && i < t->cap; i++) {
            struct key_entry *e = &t->e[i];
            if (!e->value)
                continue;
            void *v = e->value;
            e->value = NULL;
            void (*d)(void *) = key_defs[i].dtor;
            if (atom_load_acq_u32(&key_defs[i].gen) != e->gen || !d)
                continue;
            d(v);
            again = true;
            t = u->keys; /* a destructor's set may have moved the table */
        }
        if (!again)
            break;
    }
    free(u->keys);
    u->keys = NULL;
}

void coexec__keys_reset(void)
{
    for (int i = 0; i < COEXEC_KEYS_MAX; i++) {
        atom_store_rlx_u32(&key_defs[i].gen, 0);
        key_defs[i].dtor = NULL;
    }
}
