/*
 * src/mem/cache.h: descriptors and stacks without malloc on the hot path.
 *
 * Room plaque. Each stream keeps a private free list of unit descriptors
 * and one of stacks of the runtime's default size. An empty list is
 * refilled with a whole batch from a global lock-free stack of batches
 * (16-byte tagged CAS against ABA); a list grown past twice the batch size
 * gives a batch back. Fresh memory comes in slabs, one mapping each:
 * descriptors 2048 at a time, carved one by one as they are first needed
 * (an untouched descriptor costs no resident memory), stacks 16 at a time
 * (so 100,000 stacks do not exhaust the kernel's mapping limit), each with
 * a guard region of coexec__g.guard_size bytes below it (guard.h); a fresh
 * stack is not touched until a ULT runs on it. The top 64 bytes of every
 * cached-size stack hold its free-list node and are never part of a ULT's
 * usable stack. Slabs are returned to the system only at finalize.
 */
#ifndef COEXEC_MEM_CACHE_H
#define COEXEC_MEM_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "thread/unit.h"

#define STACK_NODE_SIZE 64

/*
 * A stream's cache of descriptors or stacks is two chains, as in a
 * magazine allocator: `head` (count entries, up to CACHE_BATCH), which
 * the inline calls below pop and push, and `spare`, a whole chain kept
 * aside (spare_count entries), or NULL. A free into a full head moves the
 * head to the spare place (the spare there before goes to the global
 * stack of batches); an allocation from an empty head takes the spare
 * back before it looks further. Each move is O(1): no chain is walked.
 */
struct unit_cache {
    struct coexec_unit_rec *head;
    unsigned count;
    unsigned fresh_left;
    struct coexec_unit_rec *fresh; /* next never-used descriptor of a slab */
    struct coexec_unit_rec *spare;
    unsigned spare_count;
};

struct stack_cache {
    void *head; /* a stack_node *, at the top of a cached stack */
    unsigned count;
    char *fresh; /* next never-used stack of the current slab */
    unsigned fresh_left;
    void *spare; /* a stack_node *, as head */
    unsigned spare_count;
};

struct coexec_xstream_rec;

/* Slow paths (src/mem/cache.c): refill an empty head, set a full one
 * aside, and the external-thread case (c == NULL). */
struct coexec_unit_rec *coexec__unit_alloc_slow(struct unit_cache *c);
void coexec__unit_free_slow(struct unit_cache *c, struct coexec_unit_rec *u);
void *coexec__stack_alloc_slow(struct stack_cache *c);
void coexec__stack_spill(struct stack_cache *c);

#define CACHE_BATCH 64

struct stack_node {
    struct stack_node *next; /* chain inside a batch or a stream's list */
    atom_ptr_t batch_next;
    unsigned count;
};

/* A descriptor from the stream's cache c (NULL: an external thread). */
static ALWAYS_INLINE struct coexec_unit_rec *
coexec__unit_alloc(struct unit_cache *c)
{
    struct coexec_unit_rec *u;
    if (LIKELY(c && (u = c->head))) {
        c->head = u->next;
        c->count--;
        return u;
    }
    return coexec__unit_alloc_slow(c);
}

static ALWAYS_INLINE void coexec__unit_free(struct unit_cache *c,
                                            struct coexec_unit_rec *u)
{
    if (LIKELY(c && c->count < CACHE_BATCH)) {
        u->next = c->head;
        c->head = u;
        c->count++;
        return;
    }
    coexec__unit_free_slow(c, u);
}

/* Stacks of the runtime's default size (coexec__g.stack_size, passed in
 * as `size`). Returns the lowest address; the usable stack is size -
 * STACK_NODE_SIZE bytes. */
static ALWAYS_INLINE void *coexec__stack_alloc(struct stack_cache *c,
                                               size_t size)
{
    struct stack_node *n = c->head;
    if (LIKELY(n)) {
        c->head = n->next;
        c->count--;
        return (char *)n + STACK_NODE_SIZE - size;
    }
    return coexec__stack_alloc_slow(c);
}

static ALWAYS_INLINE void coexec__stack_free(struct stack_cache *c,
                                             void *stack, size_t size)
{
    struct stack_node *n =
        (struct stack_node *)((char *)stack + size - STACK_NODE_SIZE);
    if (UNLIKELY(c->count >= CACHE_BATCH))
        coexec__stack_spill(c);
    n->next = c->head;
    c->head = n;
    c->count++;
}

/* Stacks of any other size: mapped one by one, with a guard of
 * coexec__g.guard_size bytes below (src/mem/guard.h). NULL when the
 * mapping or its guard cannot be made. */
void *coexec__stack_map(size_t size);
void coexec__stack_unmap(void *stack, size_t size);

/* Whether a live unit that has not finished (queued, running or parked)
 * has p as its home pool: a pass over every descriptor ever carved, for
 * coexec_pool_free only. */
struct coexec_pool_rec;
bool coexec__unit_homed_in(const struct coexec_pool_rec *p);

/* Gives a stream's cached entries back to the global lists. */
void coexec__cache_flush(struct unit_cache *uc, struct stack_cache *sc);

/* Releases every slab (finalize). */
void coexec__cache_destroy_all(void);

/* Calls fn(u, arg) for every descriptor of every slab, free or in use
 * (finalize, when no other stream runs: fn must read a descriptor's
 * state through its atomic words; a never-carved one reads as zeros). */
void coexec__cache_each_unit(void (*fn)(struct coexec_unit_rec *u, void *arg),
                             void *arg);

/* fork (src/core/process.c): the slab list's lock held across it; the
 * child reclaims the parent's slabs and stacks when reclaim is true. */
void coexec__cache_atfork_prepare(void);
void coexec__cache_atfork_parent(void);
void coexec__cache_atfork_child(bool reclaim);

#endif /* COEXEC_MEM_CACHE_H */
