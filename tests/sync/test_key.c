/*
 * tests/sync/test_key.c: the key suite: per-ULT values, destructor counts
 * and rounds (exit and detached ULTs too), delete, keys of an earlier
 * init, limits
 */
#include "sync_test.h"

typedef struct {
    int idx;
    uint64_t owner;    /* id of the ULT that set it */
    int resets;        /* dtor_reset: how many calls should set it again */
    atomic_int dtor_calls;
    atomic_int dtor_on_owner;
} kslot_t;

static coexec_key_t g_key_reset;

static void note_dtor(kslot_t *s)
{
    atomic_fetch_add(&s->dtor_calls, 1);
    uint64_t id = 0;
    if (coexec_self_caller() == COEXEC_CALLER_ULT &&
        coexec_self_id(&id) == COEXEC_OK && id == s->owner)
        atomic_fetch_add(&s->dtor_on_owner, 1);
}

static void dtor_count(void *v) { note_dtor(v); }

/* sets its key again while it has resets left */
static void dtor_reset(void *v)
{
    kslot_t *s = v;
    note_dtor(s);
    if (atomic_load(&s->dtor_calls) <= s->resets)
        CH_CHECK_RC(coexec_key_set(g_key_reset, s), COEXEC_OK);
}

typedef struct {
    coexec_key_t k1, k2;
    kslot_t *slot;
    long rounds;
    int mode;
    kslot_t *other; /* mode 3: the value replaced */
} kult_t;

static void set_owner(kslot_t *s)
{
    CH_CHECK_RC(coexec_self_id(&s->owner), COEXEC_OK);
}

/* k1 (destructor) and k2 (none): own values survive yields and steals */
static void key_values_ult(void *arg)
{
    kult_t *u = arg;
    void *v = (void *)1;
    CH_CHECK_RC(coexec_key_get(u->k1, &v), COEXEC_OK);
    CH_CHECK(v == NULL);
    set_owner(u->slot);
    CH_CHECK_RC(coexec_key_set(u->k1, u->slot), COEXEC_OK);
    void *mine = (void *)(uintptr_t)(0x1000 + u->slot->idx);
    CH_CHECK_RC(coexec_key_set(u->k2, mine), COEXEC_OK);
    long bad = 0;
    for (long i = 0; i < u->rounds; i++) {
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
        void *a = NULL, *b = NULL;
        CH_CHECK_RC(coexec_key_get(u->k1, &a), COEXEC_OK);
        CH_CHECK_RC(coexec_key_get(u->k2, &b), COEXEC_OK);
        bad += a != u->slot;
        bad += b != mine;
    }
    CH_CHECK_EQ(bad, 0);
}

static void t_key_values(void)
{
    ch_init(NSTREAMS);
    enum { N = 32 };
    coexec_key_t k1, k2;
    CH_ASSERT_OK_FATAL(coexec_key_create(dtor_count, &k1));
    CH_ASSERT_OK_FATAL(coexec_key_create(NULL, &k2));
    void *v = (void *)1;
    CH_ASSERT_OK(coexec_key_get(k1, &v)); /* the main ULT: not set yet */
    CU_ASSERT_PTR_NULL(v);
    CH_ASSERT_OK(coexec_key_set(k2, (void *)0x77));
    kslot_t slot[N];
    kult_t u[N];
    coexec_thread_t t[N];
    memset(slot, 0, sizeof slot);
    for (int i = 0; i < N; i++) {
        slot[i].idx = i;
        u[i] = (kult_t){.k1 = k1, .k2 = k2, .slot = &slot[i],
                        .rounds = ch_iters(100, 5)};
        ch_spawn_on(i % NSTREAMS, key_values_ult, &u[i], &t[i]);
    }
    ch_free_threads(t, N);
    for (int i = 0; i < N; i++) {
        CH_ASSERT_EQ(atomic_load(&slot[i].dtor_calls), 1);
        CH_ASSERT_EQ(atomic_load(&slot[i].dtor_on_owner), 1);
    }
    /* the main ULT's own value was never touched by the others */
    v = NULL;
    CH_ASSERT_OK(coexec_key_get(k2, &v));
    CU_ASSERT_PTR_EQUAL(v, (void *)0x77);
    CH_ASSERT_OK(coexec_key_get(k1, &v));
    CU_ASSERT_PTR_NULL(v);
    CH_ASSERT_OK(coexec_key_delete(k1));
    CH_ASSERT_OK(coexec_key_delete(k2));
    ch_finalize();
}

/*
 * mode 0: set non-NULL             -> destructor once
 * mode 1: set non-NULL, then NULL  -> never
 * mode 2: never set                -> never
 * mode 3: set other, then slot     -> once, with slot only
 * mode 4: set on both keys         -> once per key
 */
static void key_modes_ult(void *arg)
{
    kult_t *u = arg;
    set_owner(u->slot);
    if (u->other)
        set_owner(u->other);
    switch (u->mode) {
    case 0:
        CH_CHECK_RC(coexec_key_set(u->k1, u->slot), COEXEC_OK);
        break;
    case 1:
        CH_CHECK_RC(coexec_key_set(u->k1, u->slot), COEXEC_OK);
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
        CH_CHECK_RC(coexec_key_set(u->k1, NULL), COEXEC_OK);
        break;
    case 2:
        break;
    case 3:
        CH_CHECK_RC(coexec_key_set(u->k1, u->other), COEXEC_OK);
        CH_CHECK_RC(coexec_key_set(u->k1, u->slot), COEXEC_OK);
        break;
    case 4:
        CH_CHECK_RC(coexec_key_set(u->k1, u->slot), COEXEC_OK);
        CH_CHECK_RC(coexec_key_set(u->k2, u->other), COEXEC_OK);
        break;
    }
}

/* sets k1 and leaves through coexec_thread_exit */
static void key_exit_ult(void *arg)
{
    kult_t *u = arg;
    set_owner(u->slot);
    CH_CHECK_RC(coexec_key_set(u->k1, u->slot), COEXEC_OK);
    int rc = coexec_thread_exit(); /* does not return */
    ch_fail_at(__FILE__, __LINE__, "coexec_thread_exit returned %s",
               coexec_err_name(rc));
}

static void key_reset_ult(void *arg)
{
    kult_t *u = arg;
    set_owner(u->slot);
    CH_CHECK_RC(coexec_key_set(g_key_reset, u->slot), COEXEC_OK);
}

static void t_key_destructors(void)
{
    ch_init(NSTREAMS);
    enum { N = 40 };
    coexec_key_t k1, k2;
    CH_ASSERT_OK_FATAL(coexec_key_create(dtor_count, &k1));
    CH_ASSERT_OK_FATAL(coexec_key_create(dtor_count, &k2));
    kslot_t slot[N], other[N];
    kult_t u[N];
    coexec_thread_t t[N];
    memset(slot, 0, sizeof slot);
    memset(other, 0, sizeof other);
    for (int i = 0; i < N; i++) {
        int mode = i % 5;
        u[i] = (kult_t){.k1 = k1, .k2 = k2, .slot = &slot[i], .mode = mode,
                        .other = mode >= 3 ? &other[i] : NULL};
        ch_spawn_on(i % NSTREAMS, key_modes_ult, &u[i], &t[i]);
    }
    ch_free_threads(t, N); /* destructors run before the ULTs count as done */
    for (int i = 0; i < N; i++) {
        int mode = i % 5;
        int want_slot = mode == 0 || mode == 3 || mode == 4;
        int want_other = mode == 4;
        CH_ASSERT_EQ(atomic_load(&slot[i].dtor_calls), want_slot);
        CH_ASSERT_EQ(atomic_load(&slot[i].dtor_on_owner), want_slot);
        CH_ASSERT_EQ(atomic_load(&other[i].dtor_calls), want_other);
    }

    /* a ULT that exits, and detached ULTs, run their destructors too */
    kslot_t xs_[3];
    kult_t xu[3];
    memset(xs_, 0, sizeof xs_);
    coexec_thread_t xt;
    for (int i = 0; i < 3; i++)
        xu[i] = (kult_t){.k1 = k1, .slot = &xs_[i], .mode = 0};
    ch_spawn_on(1, key_exit_ult, &xu[0], &xt);
    CH_ASSERT_OK(coexec_thread_free(&xt));
    CH_ASSERT_EQ(atomic_load(&xs_[0].dtor_calls), 1);
    CH_ASSERT_EQ(atomic_load(&xs_[0].dtor_on_owner), 1);
    CH_ASSERT_OK(coexec_thread_create_on(ch_xstream(2), key_modes_ult, &xu[1],
                                         NULL, NULL));
    CH_ASSERT_OK(coexec_thread_create_on(ch_xstream(3), key_exit_ult, &xu[2],
                                         NULL, NULL));
    CH_WAIT(atomic_load(&xs_[1].dtor_calls) == 1 &&
            atomic_load(&xs_[2].dtor_calls) == 1);
    ch_linger(2);
    for (int i = 1; i < 3; i++) {
        CH_ASSERT_EQ(atomic_load(&xs_[i].dtor_calls), 1);
        CH_ASSERT_EQ(atomic_load(&xs_[i].dtor_on_owner), 1);
    }

    /* destructors that set the key again: more rounds, at most four */
    CH_ASSERT_OK_FATAL(coexec_key_create(dtor_reset, &g_key_reset));
    const int resets[] = {0, 1, 2, 3, 100};
    const int calls[] = {1, 2, 3, 4, 4};
    enum { R = sizeof resets / sizeof resets[0] };
    kslot_t rs[R];
    kult_t ru[R];
    coexec_thread_t rt[R];
    memset(rs, 0, sizeof rs);
    for (int i = 0; i < R; i++) {
        rs[i].resets = resets[i];
        ru[i] = (kult_t){.slot = &rs[i]};
        ch_spawn_on(1 + i % 3, key_reset_ult, &ru[i], &rt[i]);
    }
    ch_free_threads(rt, R);
    for (int i = 0; i < R; i++) {
        CH_ASSERT_EQ(atomic_load(&rs[i].dtor_calls), calls[i]);
        CH_ASSERT_EQ(atomic_load(&rs[i].dtor_on_owner), calls[i]);
    }
    CH_ASSERT_OK(coexec_key_delete(g_key_reset));
    CH_ASSERT_OK(coexec_key_delete(k1));
    CH_ASSERT_OK(coexec_key_delete(k2));
    ch_finalize();
}

static void t_key_main_ult(void)
{
    ch_init(2);
    coexec_key_t k;
    kslot_t s;
    memset(&s, 0, sizeof s);
    CH_ASSERT_OK_FATAL(coexec_key_create(dtor_count, &k));
    CH_ASSERT_OK(coexec_self_id(&s.owner));
    CH_ASSERT_OK(coexec_key_set(k, &s));
    void *v = NULL;
    CH_ASSERT_OK(coexec_key_get(k, &v));
    CU_ASSERT_PTR_EQUAL(v, &s);
    CH_ASSERT_EQ(atomic_load(&s.dtor_calls), 0);
    ch_finalize(); /* the main ULT's values are destroyed here */
    CH_ASSERT_EQ(atomic_load(&s.dtor_calls), 1);
    coexec_key_t k2;
    CH_ASSERT_RC(coexec_key_create(NULL, &k2), COEXEC_ENOTINIT);
}

typedef struct {
    coexec_key_t k1;
    coexec_key_t k2; /* written by the main ULT before release */
    kslot_t *a, *b;
    atomic_int set_done;
    atomic_int release;
} kdel_t;

static void key_delete_ult(void *arg)
{
    kdel_t *d = arg;
    set_owner(d->a);
    set_owner(d->b);
    CH_CHECK_RC(coexec_key_set(d->k1, d->a), COEXEC_OK);
    atomic_store(&d->set_done, 1);
    CH_WAIT(atomic_load(&d->release));
    /* k1 is gone; k2 is new (it may reuse k1's slot): nothing set yet */
    void *v = (void *)1;
    CH_CHECK_RC(coexec_key_get(d->k1, &v), COEXEC_EHANDLE);
    CH_CHECK_RC(coexec_key_set(d->k1, d->a), COEXEC_EHANDLE);
    v = (void *)1;
    CH_CHECK_RC(coexec_key_get(d->k2, &v), COEXEC_OK);
    CH_CHECK(v == NULL);
    CH_CHECK_RC(coexec_key_set(d->k2, d->b), COEXEC_OK);
    CH_CHECK_RC(coexec_key_get(d->k2, &v), COEXEC_OK);
    CH_CHECK(v == d->b);
}

static void t_key_delete(void)
{
    ch_init(NSTREAMS);
    kslot_t a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    kdel_t d = {.a = &a, .b = &b};
    CH_ASSERT_OK_FATAL(coexec_key_create(dtor_count, &d.k1));
    coexec_thread_t t;
    ch_spawn_on(1, key_delete_ult, &d, &t);
    CH_WAIT(atomic_load(&d.set_done));
    CH_ASSERT_OK(coexec_key_delete(d.k1));
    CH_ASSERT_OK(coexec_key_create(dtor_count, &d.k2));
    atomic_store(&d.release, 1);
    CH_ASSERT_OK(coexec_thread_free(&t));
    /* the value held at delete is not destroyed; the new key's is */
    CH_ASSERT_EQ(atomic_load(&a.dtor_calls), 0);
    CH_ASSERT_EQ(atomic_load(&b.dtor_calls), 1);
    void *v = NULL;
    CH_ASSERT_RC(coexec_key_set(d.k1, &a), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_key_get(d.k1, &v), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_key_delete(d.k1), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_key_delete(d.k2));
    CH_ASSERT_RC(coexec_key_delete(d.k2), COEXEC_EHANDLE);
    coexec_key_t zero = {0};
    CH_ASSERT_RC(coexec_key_set(zero, &a), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_key_get(zero, &v), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_key_delete(zero), COEXEC_EHANDLE);
    ch_finalize();
}

/* a key of an earlier init names nothing in the next one */
static void t_key_reinit(void)
{
    ch_init(1);
    coexec_key_t old;
    CH_ASSERT_OK_FATAL(coexec_key_create(NULL, &old));
    CH_ASSERT_OK(coexec_key_set(old, (void *)5));
    ch_finalize();
    ch_init(1);
    void *v = (void *)1;
    CH_ASSERT_RC(coexec_key_get(old, &v), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_key_set(old, (void *)6), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_key_delete(old), COEXEC_EHANDLE);
    /* the new runtime's first key is fresh, whatever slot it reuses */
    coexec_key_t k;
    CH_ASSERT_OK(coexec_key_create(NULL, &k));
    v = (void *)1;
    CH_ASSERT_OK(coexec_key_get(k, &v));
    CU_ASSERT_PTR_NULL(v);
    CH_ASSERT_OK(coexec_key_delete(k));
    ch_finalize();
}

static void t_key_limit(void)
{
    ch_init(1);
    static coexec_key_t keys[COEXEC_KEYS_MAX + 1];
    int n = 0, rc = COEXEC_OK;
    while (n <= COEXEC_KEYS_MAX &&
           (rc = coexec_key_create(NULL, &keys[n])) == COEXEC_OK)
        n++;
    CH_ASSERT_RC(rc, COEXEC_EAGAIN);
    CH_ASSERT_EQ(n, COEXEC_KEYS_MAX);
    /* all distinct and usable at once */
    for (int i = 0; i < n; i++)
        CH_ASSERT_OK(coexec_key_set(keys[i], (void *)(uintptr_t)(i + 1)));
    long bad = 0;
    for (int i = 0; i < n; i++) {
        void *v = NULL;
        bad += coexec_key_get(keys[i], &v) != COEXEC_OK ||
               v != (void *)(uintptr_t)(i + 1);
    }
    CH_ASSERT_EQ(bad, 0);
    /* one freed: one more can be had, then none */
    CH_ASSERT_OK(coexec_key_delete(keys[7]));
    CH_ASSERT_OK(coexec_key_create(NULL, &keys[7]));
    void *v = (void *)1;
    CH_ASSERT_OK(coexec_key_get(keys[7], &v));
    CU_ASSERT_PTR_NULL(v);
    coexec_key_t extra;
    CH_ASSERT_RC(coexec_key_create(NULL, &extra), COEXEC_EAGAIN);
    for (int i = 0; i < n; i++)
        CH_ASSERT_OK(coexec_key_delete(keys[i]));
    CH_ASSERT_OK(coexec_key_create(NULL, &extra));
    CH_ASSERT_OK(coexec_key_delete(extra));
    ch_finalize();
}

typedef struct {
    coexec_key_t k;
    coexec_key_t made;
} kext_t;

static void key_external(void *arg)
{
    kext_t *x = arg;
    void *v = NULL;
    CH_CHECK_RC(coexec_key_set(x->k, (void *)1), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_key_get(x->k, &v), COEXEC_ECONTEXT);
    /* creating and deleting are fine from any thread */
    CH_CHECK_RC(coexec_key_create(NULL, &x->made), COEXEC_OK);
}

static void t_key_external(void)
{
    coexec_key_t k;
    CH_ASSERT_RC(coexec_key_create(NULL, &k), COEXEC_ENOTINIT);
    ch_init(2);
    kext_t x;
    CH_ASSERT_OK_FATAL(coexec_key_create(NULL, &x.k));
    ch_ext_t e;
    ch_ext_start(&e, key_external, &x);
    ch_ext_join(&e);
    CH_ASSERT_OK(coexec_key_set(x.made, (void *)3));
    CH_ASSERT_OK(coexec_key_delete(x.made));
    CH_ASSERT_OK(coexec_key_delete(x.k));
    ch_finalize();
}

/* ======================================================================= */

const ch_test_t sync_key_tests[] = {
    {"values_per_ult", t_key_values},
    {"destructors", t_key_destructors},
    {"main_ult_at_finalize", t_key_main_ult},
    {"delete", t_key_delete},
    {"stale_after_reinit", t_key_reinit},
    {"limit", t_key_limit},
    {"external_threads", t_key_external},
    {NULL, NULL}};
