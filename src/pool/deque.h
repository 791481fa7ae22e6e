/*
 * src/pool/deque.h: the DEQUE pool's state and its owner's inline paths.
 *
 * Room plaque. Included by pool.h only, after the list operations and the
 * take checks it uses. src/pool/deque.c holds the algorithm, its orderings
 * and the rules of who owns what; this header holds the part of it that the
 * owner stream runs on every create, join and pop (push at the bottom, take
 * at the bottom, the count), so that those cost no call through the pool's
 * table. Anything out of the ordinary (a full array, a side queue due for a
 * turn, a unit the owner may not run, a started unit) goes back to deque.c.
 */
#ifndef COEXEC_POOL_DEQUE_H
#define COEXEC_POOL_DEQUE_H

/* The owner serves its side queue at least once every SIDE_EVERY pops. */
#define SIDE_EVERY 16

struct dq_array {
    uint64_t mask;           /* capacity - 1; capacity a power of two */
    struct dq_array *older;  /* retired list (p->lock) */
    atom_ptr_t slot[];       /* struct coexec_unit_rec * */
};

struct deque {
    /* Written by every taker (CAS). */
    atom_u64_t top CACHE_ALIGNED;
    /* Written by the owner, read by thieves. */
    atom_u64_t bottom CACHE_ALIGNED;
    atom_ptr_t array;  /* struct dq_array * */
    atom_ptr_t owner;  /* struct coexec_xstream_rec * */
    atom_u32_t tick;   /* owner pops since it last served the side queue */
    unsigned owner_uses; /* the owner's schedulers using p (p->lock) */
    bool steal_half;
    /* Under p->lock. */
    struct coexec_unit_rec *side_head CACHE_ALIGNED;
    struct coexec_unit_rec *side_tail;
    atom_u64_t side_n; /* read without the lock to skip an empty queue */
    struct dq_array *retired;
};

/* An owner fast path's answer when deque.c must decide. */
#define DQ_SLOW ((struct coexec_unit_rec *)2)

static ALWAYS_INLINE struct deque *dq_of(struct coexec_pool_rec *p)
{
    return p->istate;
}

/* Is xs (NULL: an external thread) the stream that owns p's bottom? */
static ALWAYS_INLINE bool dq_is_owner(struct deque *d,
                                      struct coexec_xstream_rec *xs)
{
    return xs && xs == atom_load_rlx_ptr(&d->owner);
}

/* Units in the deque part right now (a snapshot; any thread). */
static ALWAYS_INLINE uint64_t dq_span(struct deque *d)
{
    uint64_t t = atom_load_acq_u64(&d->top);
    uint64_t b = atom_load_acq_u64(&d->bottom);
    int64_t n = (int64_t)(b - t);
    return n > 0 ? (uint64_t)n : 0;
}

/* The pool's count: the deque's span plus the side queue. */
static ALWAYS_INLINE uint64_t dq_count(struct deque *d)
{
    return dq_span(d) + atom_load_acq_u64(&d->side_n);
}

/* Owner: queues u at the bottom if the array has room; false otherwise
 * (deque.c grows it). */
static ALWAYS_INLINE bool dq_push_bottom(struct deque *d,
                                         struct coexec_unit_rec *u)
{
    uint64_t b = atom_load_rlx_u64(&d->bottom);
    /* Acquire: a slot is reused only after the thief that took it is done
     * reading it (its CAS on top, seq_cst, released it). */
    uint64_t t = atom_load_acq_u64(&d->top);
    struct dq_array *a = atom_load_rlx_ptr(&d->array);
    if (UNLIKELY((int64_t)(b - t) > (int64_t)a->mask))
        return false;
    atom_store_rlx_ptr(&a->slot[b & a->mask], u);
    /* Release: pairs with the thief's acquire of bottom; the slot and
     * everything the owner wrote to u before are visible with it. */
    atom_store_rel_u64(&d->bottom, b + 1);
    return true;
}

/* Owner: the newest unit, or NULL when the deque is empty. */
static ALWAYS_INLINE struct coexec_unit_rec *dq_take_bottom(struct deque *d)
{
    uint64_t b = atom_load_rlx_u64(&d->bottom) - 1;
    struct dq_array *a = atom_load_rlx_ptr(&d->array);
    /* seq_cst store, then seq_cst load: a Dekker pair with the thieves'
     * seq_cst loads of top, then bottom: either a thief sees the smaller
     * bottom or we see its larger top. */
    atom_store_sc_u64(&d->bottom, b);
    uint64_t t = atom_load_sc_u64(&d->top);
    if ((int64_t)(b - t) < 0) {
        atom_store_rlx_u64(&d->bottom, b + 1); /* empty: undo */
        return NULL;
    }
    struct coexec_unit_rec *u = atom_load_rlx_ptr(&a->slot[b & a->mask]);
    if (b == t) {
        /* The last unit: race the thieves for it on top. */
        if (!atom_cas_sc_u64(&d->top, &t, t + 1))
            u = NULL;
        atom_store_rlx_u64(&d->bottom, b + 1);
    }
    return u;
}

/* Out of line (deque.c): u, taken from the bottom, goes back into p (the
 * side queue when the array cannot take it). */
void coexec__deque_put_back(struct coexec_pool_rec *p, struct coexec_unit_rec *u);
/* u, taken by a taker that may not run it, goes to p's side queue. */
void coexec__deque_refuse(struct coexec_pool_rec *p, struct coexec_unit_rec *u);

/* The owner xs's push of a new or woken unit: true if done here. The
 * caller has set u's state. A retired pool (forward set, by its owner's own
 * thread) and a full array go the slow way. */
static ALWAYS_INLINE bool dq_owner_push(struct coexec_pool_rec *p,
                                        struct coexec_unit_rec *u,
                                        struct coexec_xstream_rec *xs)
{
    struct deque *d = dq_of(p);
    if (!dq_is_owner(d, xs) || atom_load_rlx_ptr(&p->forward) != NULL)
        return false;
    atom_store_rlx_ptr(&u->pool, p);
    unit_inpool_set(u, INPOOL_LIST);
    if (UNLIKELY(!dq_push_bottom(d, u)))
        return false;
    pool_wake_sleepers_relaxed(p);
    return true;
}

/* The owner xs's pop: the bottom unit, NULL when p is empty, or DQ_SLOW
 * when deque.c must decide (the side queue is due or holds units, or the
 * bottom unit is bound elsewhere). */
static ALWAYS_INLINE struct coexec_unit_rec *
dq_owner_pop(struct coexec_pool_rec *p, struct coexec_xstream_rec *xs)
{
    struct deque *d = dq_of(p);
    if (atom_load_rlx_u64(&d->side_n) != 0)
        return DQ_SLOW;
    /* The owner's own counters: relaxed, nobody else writes bottom. */
    if ((int64_t)(atom_load_rlx_u64(&d->bottom) -
                  atom_load_rlx_u64(&d->top)) <= 0)
        return NULL;
    struct coexec_unit_rec *u = dq_take_bottom(d);
    if (LIKELY(u != NULL) && LIKELY(pool_may_take(u, xs))) {
        unit_inpool_set(u, 0);
        return u;
    }
    if (u)
        coexec__deque_refuse(p, u);
    return DQ_SLOW;
}

/* The owner xs's remove of u (join in place): 1 if taken, 0 if u is not
 * p's bottom unit or has started or a thief got it; the side queue is
 * deque.c's (-1). */
static ALWAYS_INLINE int dq_owner_remove(struct coexec_pool_rec *p,
                                         struct coexec_unit_rec *u,
                                         struct coexec_xstream_rec *xs,
                                         bool started_ok)
{
    struct deque *d = dq_of(p);
    if (!dq_is_owner(d, xs))
        return -1;
    /* Only the bottom unit: the owner wrote every slot, so reading them
     * races with nobody. */
    uint64_t b = atom_load_rlx_u64(&d->bottom);
    uint64_t t = atom_load_acq_u64(&d->top);
    struct dq_array *a = atom_load_rlx_ptr(&d->array);
    if ((int64_t)(b - 1 - t) < 0 ||
        atom_load_rlx_ptr(&a->slot[(b - 1) & a->mask]) != u)
        return -1;
    if (dq_take_bottom(d) != u)
        return 0; /* a thief was faster */
    /* Ours now, so its run flags are safe to read. */
    if (UNLIKELY(!started_ok && (u->rflags & RF_STARTED))) {
        coexec__deque_put_back(p, u);
        return 0;
    }
    unit_inpool_set(u, 0);
    return 1;
}

#endif /* COEXEC_POOL_DEQUE_H */
