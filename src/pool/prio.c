/*
 * src/pool/prio.c: the PRIO pool kind: N priority levels with aging.
 *
 * Room plaque. A unit is queued at level min(unit_prio(u), levels - 1) at
 * the time of its push (a later coexec_unit_set_priority applies from the
 * next push); a higher level is more urgent. Each level is a FIFO,
 * doubly-linked through u->next/u->prev, so remove() of a queued unit (join
 * in place) is O(1). `nonempty` has bit l set while level l holds units:
 * pop finds the most urgent level with one count-leading-zeros. A thief
 * takes from the most urgent level too, its oldest unit: a unit stolen is
 * one the busy owner could not run yet, and the most urgent of those is
 * the one whose wait matters most.
 *
 * Aging: `clock` counts the units pop handed out; a level's `since` is the
 * clock when it last became non-empty or was last served. A non-empty level
 * is due once clock - since >= aging, i.e. it has been passed over for
 * `aging` pops; pop then serves the due level that has waited longest
 * (ties: the more urgent), and serving it restarts its wait. So with k
 * levels due at once they are served in turn, each within aging + k pops
 * of its last service, while the most urgent level still gets the other
 * pops. `next_due` is a lower bound of the clock at which some level can be
 * due, so the common pop does one compare and no scan. aging == 0 turns
 * aging off (strict priority).
 *
 * Ownership: every field of the state, and u->next/prev/in_pool of queued
 * units, are guarded by p->lock; a PRIV pool (!p->shared) takes no lock,
 * its one thread owns them. p->size is written under the same lock (a
 * relaxed store) and read by anyone. A push wakes parked schedulers in the
 * same lock hold, which orders it against coexec__pool_sleep_register.
 */
#include <stdlib.h>
#include <string.h>

#include "base/global.h"
#include "base/list.h"
#include "pool/pool.h"
#include "sched/sched.h"
#include "thread/thread.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

#define PRIO_MAX_LEVELS 64

struct prio_level {
    struct coexec_unit_rec *head; /* oldest: served first */
    struct coexec_unit_rec *tail; /* newest */
    uint64_t since;               /* clock at last service or fill */
};

struct prio_state {
    uint64_t nonempty; /* bit l: level l holds units */
    uint64_t clock;    /* units popped so far */
    uint64_t next_due; /* no level is due before this clock value */
    unsigned levels;
    unsigned aging; /* 0: strict priority */
    struct prio_level lv[];
};

static ALWAYS_INLINE struct prio_state *st_of(struct coexec_pool_rec *p)
{
    return p->istate;
}

/* These calls never switch, so the inline thread-local read is the
 * caller's stream throughout (pool_list_enter). */
static ALWAYS_INLINE bool prio_enter(struct coexec_pool_rec *p,
                                       enum pool_hold *locked)
{
    return pool_list_enter(p, xs_self_entry(), locked);
}

static ALWAYS_INLINE void size_add(struct coexec_pool_rec *p, int64_t d)
{
    /* Written under the lock only: a relaxed read-add-store is exact. */
    atom_store_rlx_u64(&p->size, atom_load_rlx_u64(&p->size) + (uint64_t)d);
}

static ALWAYS_INLINE int top_level(uint64_t mask)
{
    return 63 - __builtin_clzll(mask);
}

/* The level whose head or tail u is (u is queued here and is one of them):
 * a short scan of the non-empty levels, needed only at the list ends. */
static int level_of_end(struct prio_state *st, struct coexec_unit_rec *u)
{
    for (uint64_t m = st->nonempty; m; m &= m - 1) {
        int l = __builtin_ctzll(m);
        if (st->lv[l].head == u || st->lv[l].tail == u)
            return l;
    }
    return -1;
}

/* Unlinks u from level l (l < 0: find it; only needed when u is at an end). */
static ALWAYS_INLINE void level_unlink(struct coexec_pool_rec *p,
                                       struct prio_state *st, int l,
                                       struct coexec_unit_rec *u)
{
    if ((!u->prev || !u->next) && l < 0)
        l = level_of_end(st, u);
    /* l < 0 only for a unit in the middle, whose unlink touches neither
     * end of its level. */
    bool alone = !u->prev && !u->next;
    DL_UNLINK(st->lv[l].head, st->lv[l].tail, u);
    if (alone)
        st->nonempty &= ~(1ull << l);
    unit_inpool_set(u, 0);
    size_add(p, -1);
}

static bool prio_push(struct coexec_pool_rec *p, struct coexec_unit_rec *u,
                      int how)
{
    (void)how; /* NEW, YIELD and WAKE all go to the tail of their level */
    struct prio_state *st = st_of(p);
    unsigned l = unit_prio(u);
    if (l >= st->levels)
        l = st->levels - 1;
    /* A pusher that is not the owner: as in coexec__pool_push_as, a
     * private pool that a stream took over since the look is its owner's,
     * and u goes to that owner's mailbox. */
    struct coexec_xstream_rec *self = xs_self_entry();
    enum pool_hold locked = HOLD_NONE;
    if (pool_must_lock(p, self) && pool_lock_to_push(p, u, self, &locked))
        return true;
    struct prio_level *lv = &st->lv[l];
    bool was_empty = lv->head == NULL;
    DL_PUSH_TAIL(lv->head, lv->tail, u);
    if (was_empty) {
        st->nonempty |= 1ull << l;
        /* It starts waiting now. */
        lv->since = st->clock;
        if (st->aging && st->clock + st->aging < st->next_due)
            st->next_due = st->clock + st->aging;
    }
    unit_inpool_set(u, INPOOL_LIST);
    size_add(p, 1);
    if (p->shared && UNLIKELY(p->sleepers != NULL))
        coexec__pool_wake_sleepers_locked(p);
    pool_list_leave(p, locked);
    return false;
}

/*
 * The due level that has waited longest (ties: the more urgent), or -1;
 * recomputes next_due from every non-empty level on the way.
 */
static int due_level(struct prio_state *st)
{
    int best = -1;
    uint64_t best_since = 0, min_since = UINT64_MAX;
    for (uint64_t m = st->nonempty; m; m &= m - 1) {
        int l = __builtin_ctzll(m);
        uint64_t s = st->lv[l].since;
        if (s < min_since)
            min_since = s;
        /* Levels come least urgent first: <= lets a more urgent tie win. */
        if (st->clock - s >= st->aging && (best < 0 || s <= best_since)) {
            best = l;
            best_since = s;
        }
    }
    st->next_due = min_since == UINT64_MAX ? UINT64_MAX
                                           : min_since + st->aging;
    return best;
}

/* The first unit of level l that xs may take, or NULL. */
static ALWAYS_INLINE struct coexec_unit_rec *
level_first(struct prio_state *st, int l, struct coexec_xstream_rec *xs)
{
    struct coexec_unit_rec *u = st->lv[l].head;
    while (UNLIKELY(u && !pool_may_take(u, xs)))
        u = u->next;
    return u;
}

/* Hands u (at level l) out as the next popped unit. */
static ALWAYS_INLINE void serve(struct coexec_pool_rec *p,
                                struct prio_state *st, int l,
                                struct coexec_unit_rec *u)
{
    level_unlink(p, st, l, u);
    st->clock++;
    st->lv[l].since = st->clock;
}

static struct coexec_unit_rec *take(struct coexec_pool_rec *p,
                                    struct prio_state *st,
                                    struct coexec_xstream_rec *xs)
{
    if (!st->nonempty)
        return NULL;
    struct coexec_unit_rec *u;
    if (st->aging && UNLIKELY(st->clock >= st->next_due)) {
        int l = due_level(st);
        if (l >= 0 && (u = level_first(st, l, xs)) != NULL) {
            serve(p, st, l, u);
            return u;
        }
    }
    for (uint64_t m = st->nonempty; m;) {
        int l = top_level(m);
        if ((u = level_first(st, l, xs)) != NULL) {
            serve(p, st, l, u);
            return u;
        }
        m &= ~(1ull << l);
    }
    return NULL;
}

static struct coexec_unit_rec *prio_pop(struct coexec_pool_rec *p,
                                        struct coexec_xstream_rec *xs)
{
    if (atom_load_rlx_u64(&p->size) == 0)
        return NULL;
    struct prio_state *st = st_of(p);
    enum pool_hold locked;
    if (!prio_enter(p, &locked))
        return NULL; /* another stream's private pool now */
    struct coexec_unit_rec *u = take(p, st, xs);
    pool_list_leave(p, locked);
    return u;
}

static bool prio_remove(struct coexec_pool_rec *p, struct coexec_unit_rec *u,
                        bool started_ok)
{
    struct prio_state *st = st_of(p);
    enum pool_hold locked;
    if (!prio_enter(p, &locked))
        return false; /* another stream's private pool now */
    /* RF_STARTED is read under the lock that the runner's later push
     * released (as in coexec__pool_remove). */
    bool ok = unit_inpool(u) == INPOOL_LIST && unit_pool(u) == p &&
              (started_ok || !(u->rflags & RF_STARTED));
    if (ok)
        level_unlink(p, st, -1, u);
    pool_list_leave(p, locked);
    return ok;
}

/* A thief takes the oldest unit it may steal of the most urgent level that
 * has one. */
static struct coexec_unit_rec *prio_steal(struct coexec_pool_rec *p,
                                          struct coexec_xstream_rec *xs,
                                          struct coexec_pool_rec *into)
{
    (void)into;
    if (!p->shared || atom_load_rlx_u64(&p->size) == 0)
        return NULL;
    struct prio_state *st = st_of(p);
    struct coexec_unit_rec *u = NULL;
    impl_lock(p);
    for (uint64_t m = st->nonempty; m && !u;) {
        int l = top_level(m);
        m &= ~(1ull << l);
        for (u = st->lv[l].head; u && !pool_may_steal(u, xs); u = u->next)
            ;
        if (u)
            level_unlink(p, st, l, u);
    }
    impl_unlock(p);
    return u;
}

static struct coexec_unit_rec *prio_drain(struct coexec_pool_rec *p)
{
    struct prio_state *st = st_of(p);
    struct coexec_unit_rec *first = NULL, *last = NULL;
    enum pool_hold locked;
    if (!prio_enter(p, &locked))
        return NULL; /* another stream's private pool now */
    /* Most urgent first, FIFO within a level: the order pop would give
     * without aging. */
    for (uint64_t m = st->nonempty; m;) {
        int l = top_level(m);
        m &= ~(1ull << l);
        for (struct coexec_unit_rec *u = st->lv[l].head; u; u = u->next)
            unit_inpool_set(u, 0);
        if (last)
            last->next = st->lv[l].head;
        else
            first = st->lv[l].head;
        last = st->lv[l].tail;
        st->lv[l].head = st->lv[l].tail = NULL;
    }
    st->nonempty = 0;
    st->next_due = UINT64_MAX;
    atom_store_rlx_u64(&p->size, 0);
    pool_list_leave(p, locked);
    return first;
}

static void prio_foreach(struct coexec_pool_rec *p,
                         void (*visit)(void *ctx, struct coexec_unit_rec *u),
                         void *ctx)
{
    struct prio_state *st = st_of(p);
    enum pool_hold locked;
    if (!prio_enter(p, &locked))
        return; /* another stream's private pool now */
    /* Most urgent first, oldest first within a level (as prio_drain). */
    for (uint64_t m = st->nonempty; m;) {
        int l = top_level(m);
        m &= ~(1ull << l);
        for (struct coexec_unit_rec *u = st->lv[l].head; u; u = u->next)
            visit(ctx, u);
    }
    pool_list_leave(p, locked);
}

static void prio_fini(struct coexec_pool_rec *p)
{
    free(p->istate);
    p->istate = NULL;
}

static const struct pool_impl prio_impl = {
    .push = prio_push,
    .pop = prio_pop,
    .remove = prio_remove,
    .steal = prio_steal,
    .drain = prio_drain,
    .fini = prio_fini,
    .foreach = prio_foreach,
};

int coexec__prio_init(struct coexec_pool_rec *p, int levels, unsigned aging)
{
    if (levels < 1 || levels > PRIO_MAX_LEVELS)
        return COEXEC_EINVAL;
    struct prio_state *st =
        calloc(1, sizeof *st + (size_t)levels * sizeof st->lv[0]);
    if (!st)
        return COEXEC_ENOMEM;
    st->levels = (unsigned)levels;
    st->aging = aging;
    st->next_due = UINT64_MAX;
    p->istate = st;
    p->impl = &prio_impl;
    return COEXEC_OK;
}
