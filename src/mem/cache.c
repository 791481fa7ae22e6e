/*
 * src/mem/cache.c: per-stream caches of unit descriptors and stacks over a
 * global lock-free stack of batches (see cache.h for the layout).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/global.h"
#include "base/valgrind.h"
#include "mem/guard.h"
#include "pool/pool.h"
#include "sched/sched.h"
#include "thread/thread.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

#ifdef COEXEC_ASAN
#include <sanitizer/asan_interface.h>
#define san_unpoison(p, n) __asan_unpoison_memory_region((p), (n))
#else
#define san_unpoison(p, n) ((void)(p), (void)(n))
#endif

#define BATCH CACHE_BATCH
#define DESC_SLAB 2048
#define STACK_SLAB 16

/* ---- the global stacks of batches --------------------------------------- */

/* A batch is a chain of entries linked through `next`-like fields that only
 * its holder touches; batches are linked to each other through an atomic
 * field that a racing popper may read after the batch was taken (the tag
 * then makes its CAS fail). */
static atom_tagged_t desc_batches;
static atom_tagged_t stack_batches;

static void batch_push(atom_tagged_t *top, void *node, atom_ptr_t *link)
{
    tagged_val_t old = atom_tagged_load(top), nv;
    do {
        atom_store_rlx_ptr(link, old.ptr);
        nv.ptr = node;
        nv.tag = old.tag + 1;
    } while (!atom_tagged_cas(top, old, nv) &&
             ((old = atom_tagged_load(top)), 1));
}

static void *batch_pop(atom_tagged_t *top, atom_ptr_t *(*link_of)(void *))
{
    tagged_val_t old = atom_tagged_load(top), nv;
    for (;;) {
        if (!old.ptr)
            return NULL;
        nv.ptr = atom_load_rlx_ptr(link_of(old.ptr));
        nv.tag = old.tag + 1;
        if (atom_tagged_cas(top, old, nv))
            return old.ptr;
        old = atom_tagged_load(top);
    }
}

/* Gives the chain from b (n entries) to the global stack; b may be NULL.
 * A batch's length sits in its first entry (id, count). */
static void desc_give(struct coexec_unit_rec *b, unsigned n)
{
    if (!b)
        return;
    b->id = n;
    batch_push(&desc_batches, b, &b->batch_next);
}

static void stack_give(struct stack_node *b, unsigned n)
{
    if (!b)
        return;
    b->count = n;
    batch_push(&stack_batches, b, &b->batch_next);
}

/* Slabs, for finalize. */
struct slab {
    struct slab *next;
    void *mem;
    size_t bytes;
    int is_stack;
    unsigned vg_ids[STACK_SLAB]; /* its stacks' valgrind registrations */
};
static struct slab *slabs;
static pthread_mutex_t slab_lock = PTHREAD_MUTEX_INITIALIZER;

/* Records a slab for finalize; false (and nothing kept) when the record
 * itself cannot be had: the caller then gives the slab back and reports
 * the failure, so no slab ever escapes finalize. */
static struct slab *slab_record(void *mem, size_t bytes, int is_stack)
{
    struct slab *s = malloc(sizeof *s);
    if (!s)
        return NULL;
    s->mem = mem;
    s->bytes = bytes;
    s->is_stack = is_stack;
    memset(s->vg_ids, 0, sizeof s->vg_ids);
    pthread_mutex_lock(&slab_lock);
    s->next = slabs;
    slabs = s;
    pthread_mutex_unlock(&slab_lock);
    return s;
}

/* ---- descriptors --------------------------------------------------------- */

/* The distance between descriptors in a slab: the record and its data area
 * (cfg.unit_data_size; unit_data in thread/unit.h). Fixed from init to
 * finalize, which unmaps every slab. */
static size_t desc_stride(void)
{
    return sizeof(struct coexec_unit_rec) + coexec__g.unit_data;
}

static struct coexec_unit_rec *desc_at(void *base, size_t i)
{
    return (struct coexec_unit_rec *)(void *)((char *)base + i * desc_stride());
}

/* In a free batch, descriptors are chained through `next` and the chain's
 * length sits in the head's `id`. */
static atom_ptr_t *desc_link(void *n)
{
    return &((struct coexec_unit_rec *)n)->batch_next;
}

/* External threads' descriptors come from this cache, under ext_lock. */
static struct unit_cache ext_cache;
static pthread_mutex_t ext_lock = PTHREAD_MUTEX_INITIALIZER;

/* Maps a slab for c to carve from. Pages of the mapping become resident
 * only as descriptors are carved from them. */
static bool desc_slab_new(struct unit_cache *c)
{
    size_t bytes = DESC_SLAB * desc_stride();
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return false;
    if (!slab_record(m, bytes, 0)) {
        munmap(m, bytes);
        return false;
    }
    /* The addresses may be those of a stack slab unmapped at an earlier
     * finalize, whose sanitizer shadow still holds the redzones of frames
     * that lived there; finalize reads every descriptor of the slab. */
    san_unpoison(m, bytes);
    c->fresh = m;
    c->fresh_left = DESC_SLAB;
    return true;
}

static struct coexec_unit_rec *desc_take(struct unit_cache *c)
{
    if (!c->head && c->spare) {
        c->head = c->spare;
        c->count = c->spare_count;
        c->spare = NULL;
        c->spare_count = 0;
    }
    if (!c->head) {
        struct coexec_unit_rec *b = batch_pop(&desc_batches, desc_link);
        if (b) {
            c->head = b;
            c->count = (unsigned)b->id;
        }
    }
    struct coexec_unit_rec *u = c->head;
    if (u) {
        c->head = u->next;
        c->count--;
        return u;
    }
    if (!c->fresh_left && !desc_slab_new(c))
        return NULL;
    u = c->fresh;
    c->fresh = desc_at(u, 1);
    c->fresh_left--;
    atom_store_rlx_u64(&u->gen, gen_first());
    /* As a release leaves a free descriptor: the tag of its generation. */
    atom_store_rlx_u32(&u->wake, wake_tag_of(gen_first()));
    return u;
}

struct coexec_unit_rec *coexec__unit_alloc_slow(struct unit_cache *c)
{
    if (c)
        return desc_take(c);
    pthread_mutex_lock(&ext_lock);
    struct coexec_unit_rec *u = desc_take(&ext_cache);
    pthread_mutex_unlock(&ext_lock);
    return u;
}

void coexec__unit_free_slow(struct unit_cache *c, struct coexec_unit_rec *u)
{
    u->next = NULL;
    if (!c) {
        desc_give(u, 1);
        return;
    }
    /* The head is full: it becomes the spare, the spare before it a
     * global batch. */
    desc_give(c->spare, c->spare_count);
    c->spare = c->head;
    c->spare_count = c->count;
    c->head = u;
    c->count = 1;
}

/* Every descriptor carved so far is looked at: slabs are carved from their
 * start, one descriptor at a time, and a carved one has a non-zero
 * generation, so a slab's carved part ends at its first zero generation.
 * Only atomic fields are read (a descriptor may be in use on any stream). A
 * released descriptor names no pool (coexec__unit_release clears it). */
bool coexec__unit_homed_in(const struct coexec_pool_rec *p)
{
    bool found = false;
    pthread_mutex_lock(&slab_lock);
    for (struct slab *s = slabs; s && !found; s = s->next) {
        if (s->is_stack)
            continue;
        for (unsigned i = 0; i < DESC_SLAB && !found; i++) {
            struct coexec_unit_rec *u = desc_at(s->mem, i);
            if (atom_load_rlx_u64(&u->gen) == 0)
                break;
            found = atom_load_acq_ptr(&u->pool) == p &&
                    atom_load_acq_u32(&u->state) != COEXEC_UNIT_TERMINATED;
        }
    }
    pthread_mutex_unlock(&slab_lock);
    return found;
}

/* ---- stacks ------------------------------------------------------------- */

_Static_assert(sizeof(struct stack_node) <= STACK_NODE_SIZE, "stack node");

static ALWAYS_INLINE struct stack_node *node_of(void *stack)
{
    return (struct stack_node *)((char *)stack + coexec__g.stack_size -
                                 STACK_NODE_SIZE);
}
static ALWAYS_INLINE void *stack_of(struct stack_node *n)
{
    return (char *)n + STACK_NODE_SIZE - coexec__g.stack_size;
}
static atom_ptr_t *stack_link(void *n)
{
    return &((struct stack_node *)n)->batch_next;
}

/* The distance between two stacks of a slab: a guard, then the stack. */
static ALWAYS_INLINE size_t stack_stride(void)
{
    return coexec__g.guard_size + coexec__g.stack_size;
}

/* A slab of STACK_SLAB stacks, each with its guard below it, in one
 * mapping (with madvise guards, one mapping also in the kernel's count). */
static bool stack_slab_new(struct stack_cache *c)
{
    size_t stride = stack_stride(), guard = coexec__g.guard_size;
    size_t bytes = stride * STACK_SLAB;
    char *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1,
                   0);
    if (m == MAP_FAILED)
        return false;
    for (unsigned i = 0; guard && i < STACK_SLAB; i++) {
        if (!coexec__guard_install(m + i * stride, guard)) {
            munmap(m, bytes);
            return false;
        }
    }
    struct slab *rec = slab_record(m, bytes, 1);
    if (!rec) {
        munmap(m, bytes);
        return false;
    }
    /* Stacks for valgrind while the slab lives (deregistered at finalize);
     * the guards are not part of them. */
    for (unsigned i = 0; i < STACK_SLAB; i++)
        rec->vg_ids[i] =
            vg_stack_register(m + i * stride + guard, coexec__g.stack_size);
    c->fresh = m + guard;
    c->fresh_left = STACK_SLAB;
    return true;
}

void *coexec__stack_alloc_slow(struct stack_cache *c)
{
    struct stack_node *n = c->spare;
    if (n) {
        c->spare = NULL;
        c->head = n->next;
        c->count = c->spare_count - 1;
        c->spare_count = 0;
        return stack_of(n);
    }
    if (!c->fresh_left) {
        n = batch_pop(&stack_batches, stack_link);
        if (n) {
            c->count = n->count - 1;
            c->head = n->next;
            return stack_of(n);
        }
        if (!stack_slab_new(c))
            return NULL;
    }
    void *s = c->fresh;
    c->fresh += stack_stride();
    c->fresh_left--;
    return s;
}

/* The head is full: it becomes the spare, the spare before it a global
 * batch; the head starts empty. */
void coexec__stack_spill(struct stack_cache *c)
{
    stack_give(c->spare, c->spare_count);
    c->spare = c->head;
    c->spare_count = c->count;
    c->head = NULL;
    c->count = 0;
}

void *coexec__stack_map(size_t size)
{
    size_t guard = coexec__g.guard_size;
    size_t bytes = size + guard;
    char *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1,
                   0);
    if (m == MAP_FAILED)
        return NULL;
    if (guard && !coexec__guard_install(m, guard)) {
        munmap(m, bytes);
        return NULL;
    }
    /* Registered with valgrind by its user while it is a stack. */
    return m + guard;
}

void coexec__stack_unmap(void *stack, size_t size)
{
    size_t guard = coexec__g.guard_size;
    munmap((char *)stack - guard, size + guard);
}

void coexec__cache_flush(struct unit_cache *uc, struct stack_cache *sc)
{
    desc_give(uc->spare, uc->spare_count);
    desc_give(uc->head, uc->count);
    stack_give(sc->spare, sc->spare_count);
    stack_give(sc->head, sc->count);
    uc->head = uc->spare = NULL;
    uc->count = uc->spare_count = 0;
    sc->head = sc->spare = NULL;
    sc->count = sc->spare_count = 0;
    if (uc->fresh_left) {
        /* The rest of the slab serves external threads, or stays unused
         * (and not resident) until finalize. */
        pthread_mutex_lock(&ext_lock);
        if (!ext_cache.fresh_left) {
            ext_cache.fresh = uc->fresh;
            ext_cache.fresh_left = uc->fresh_left;
        }
        pthread_mutex_unlock(&ext_lock);
        uc->fresh = NULL;
        uc->fresh_left = 0;
    }
    /* Fresh stacks never touched go back as a batch too. */
    while (sc->fresh_left) {
        void *s = sc->fresh;
        sc->fresh += stack_stride();
        sc->fresh_left--;
        struct stack_node *n = node_of(s);
        n->next = NULL;
        stack_give(n, 1);
    }
}

void coexec__cache_destroy_all(void)
{
    pthread_mutex_lock(&slab_lock);
    struct slab *s = slabs;
    while (s) {
        struct slab *n = s->next;
        for (unsigned i = 0; s->is_stack && i < STACK_SLAB; i++)
            vg_stack_deregister(s->vg_ids[i]);
        munmap(s->mem, s->bytes);
        free(s);
        s = n;
    }
    slabs = NULL;
    pthread_mutex_unlock(&slab_lock);
    /* Lock order: ext_lock before slab_lock (desc_take under ext_lock maps
     * and records a slab). */
    pthread_mutex_lock(&ext_lock);
    memset(&ext_cache, 0, sizeof ext_cache);
    pthread_mutex_unlock(&ext_lock);
    tagged_val_t z = {NULL, 0};
    atom_store_rlx_ptr(&desc_batches.h.ptr, z.ptr);
    atom_store_rlx_u64(&desc_batches.h.tag, 0);
    atom_store_rlx_ptr(&stack_batches.h.ptr, NULL);
    atom_store_rlx_u64(&stack_batches.h.tag, 0);
}

void coexec__cache_each_unit(void (*fn)(struct coexec_unit_rec *u, void *arg),
                             void *arg)
{
    pthread_mutex_lock(&slab_lock);
    for (struct slab *s = slabs; s; s = s->next) {
        if (s->is_stack)
            continue;
        for (size_t i = 0; i < s->bytes / desc_stride(); i++)
            fn(desc_at(s->mem, i), arg);
    }
    pthread_mutex_unlock(&slab_lock);
}

/* fork (core/process.c): the child reclaims the slabs, so their list must
 * be whole. Lock order as in desc_take: ext_lock, then slab_lock. */
void coexec__cache_atfork_prepare(void)
{
    pthread_mutex_lock(&ext_lock);
    pthread_mutex_lock(&slab_lock);
}

void coexec__cache_atfork_parent(void)
{
    pthread_mutex_unlock(&slab_lock);
    pthread_mutex_unlock(&ext_lock);
}

/* In the child, nothing runs on the parent's descriptors and stacks any
 * more: the slabs are unmapped, unless the child itself runs on one of
 * them (!reclaim), and the caches start empty. The slab records are left
 * allocated: the child handler stays out of the allocator. */
void coexec__cache_atfork_child(bool reclaim)
{
    for (struct slab *s = slabs; s && reclaim; s = s->next)
        munmap(s->mem, s->bytes);
    slabs = NULL;
    memset(&ext_cache, 0, sizeof ext_cache);
    atom_store_rlx_ptr(&desc_batches.h.ptr, NULL);
    atom_store_rlx_u64(&desc_batches.h.tag, 0);
    atom_store_rlx_ptr(&stack_batches.h.ptr, NULL);
    atom_store_rlx_u64(&stack_batches.h.tag, 0);
    pthread_mutex_unlock(&slab_lock);
    pthread_mutex_unlock(&ext_lock);
}
