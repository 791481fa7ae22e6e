/*
 * src/thread/run.c: the unit engine: what the scheduler runs (ULTs and
 * tasklets), their switches, parking and waking, joining, creating,
 * yielding and migrating. The cold public calls are src/thread/thread.c.
 *
 * Room plaque. The protocols, each in one place:
 *
 *  Post-switch action. A context that leaves (yield, park, finish) records
 *  in its stream what must happen to it once its registers are saved; the
 *  context that resumes runs coexec__post_switch() first. So a yielding ULT
 *  is queued again, and a parking ULT becomes wakeable, only when nothing of
 *  it is still live on the CPU.
 *
 *  Park / wake. unit->wake holds PARKED and NOTIFIED. A waker turns 0 into
 *  NOTIFIED (the unit is running: its next park returns at once) or PARKED
 *  into 0 (and queues the unit). The post-switch step of a park turns 0
 *  into PARKED, or finds NOTIFIED, clears it and queues the unit again. Both
 *  sides use acq_rel CAS on the one word, so no wake is lost and a unit is
 *  queued exactly once per wake.
 *
 *  Join. unit->join is 0, JOIN_DONE, or the address of the joiner's wait
 *  record (on the joiner's stack). The finisher swaps in JOIN_WAKING, wakes
 *  whoever it found, and stores JOIN_HANDED (release) as its very last
 *  touch of the descriptor, the record and the joiner: a joiner leaves only
 *  after that, so nothing it owns dies while the finisher still uses it;
 *  the joiner's own last touch is JOIN_DONE, so a free elsewhere never
 *  recycles the descriptor under it (a free finding JOIN_HANDED is EBUSY).
 *  A free claims the release by a compare-and-swap of the generation:
 *  of two racing frees exactly one succeeds. A joiner holding a stale
 *  handle re-checks the generation after every change it makes to the
 *  descriptor (registering, claiming) and undoes it if the descriptor
 *  now serves another unit. A
 *  joiner that finds the unit still queued removes it from its pool and
 *  runs it in place. A ULT (RF_INPLACE) then returns straight to the
 *  joiner when it finishes, without the scheduler or any atomic on the
 *  joiner; if it yields or parks meanwhile it switches back to its
 *  joiner, which then waits like any other joiner. A tasklet's function
 *  is called by the joiner itself, which ends it on READY (JOIN_HANDED,
 *  no wake) and on PENDING parks it and waits like any other joiner.
 */

#include "base/global.h"
#include "pool/pool.h"
#include "thread/engine.h"
#include "thread/thread.h"
#include "thread/unit.h"
#include "thread/wlist.h"
#include "waker/wait.h"
#include "xstream/xstream.h"

/* ---- descriptors --------------------------------------------------------- */

_Static_assert(MAX_XSTREAMS - 1 <= INT16_MAX,
               "a rank fits a descriptor's bound_rank and last_rank");

struct coexec_unit_rec *coexec__unit_new(struct coexec_xstream_rec *xs,
                                         int kind)
{
    return unit_new(xs, kind);
}


void coexec__unit_release(struct coexec_xstream_rec *xs,
                          struct coexec_unit_rec *u)
{
    unit_release(xs, u);
}


/* ---- stacks ------------------------------------------------------------ */





static ALWAYS_INLINE void ult_release_stack(struct coexec_xstream_rec *xs,
                              struct coexec_unit_rec *u)
{
    if (u->flags & UF_USER_STACK) {
        /* the caller's memory */
        vg_user_stack_end(u->stack, u->stack_size);
    } else if (u->flags & UF_BIG_STACK) {
        if (u->stack) {
            vg_user_stack_end(u->stack, u->stack_size);
            coexec__stack_unmap(u->stack, u->stack_size);
        }
        RLX_SET(u->stack, NULL);
    } else if (u->stack) {
        coexec__stack_free(&xs->scache, u->stack, coexec__g.stack_size);
        RLX_SET(u->stack, NULL);
    }
    tsan_fiber_free(u->tsan_fiber);
    u->tsan_fiber = NULL;
    u->sp = NULL;
}


/* ---- queueing and waking ------------------------------------------------- */

/* A migration request made while u ran or was parked takes effect now,
 * as u goes back to a pool: its home becomes the requested pool. A request
 * for a stream (DEST_MOVE|DEST_BOUND on the stream's record) goes to the
 * pool that stream's main scheduler gives migrating units, and leaves
 * DEST_BOUND behind: thieves keep off until u has run there. */
static NOINLINE void apply_dest(struct coexec_unit_rec *u)
{
    uintptr_t d = atom_load_acq_uptr(&u->dest);
    if (!(d & DEST_MOVE))
        return;
    struct coexec_pool_rec *to;
    uintptr_t keep = 0;
    if (d & DEST_BOUND) {
        struct coexec_xstream_rec *x = (struct coexec_xstream_rec *)(d & ~DEST_TAGS);
        to = coexec__migr_pool(x);
        keep = (uintptr_t)x | DEST_BOUND;
    } else {
        to = (struct coexec_pool_rec *)(d & ~DEST_TAGS);
    }
    if (atom_cas_ar_uptr(&u->dest, &d, keep))
        atom_store_rlx_ptr(&u->pool, to);
}

static ALWAYS_INLINE void check_dest(struct coexec_unit_rec *u)
{
    if (UNLIKELY(atom_load_rlx_uptr(&u->dest) & DEST_MOVE))
        apply_dest(u);
}

/* u's home p is private and self (the caller's stream, or NULL) is not
 * its owner at the caller's look: if p has an owner still, u goes to that
 * stream's mailbox (through its waker-page slot there, for a wake of a
 * unit that took one) and the owner queues it. False when p has no owner
 * now (the caller pushes u into p, under its lock) or self became it. */
static ALWAYS_INLINE bool send_to_owner(struct coexec_pool_rec *p,
                                        struct coexec_unit_rec *u,
                                        struct coexec_xstream_rec *self,
                                        bool wake)
{
    struct coexec_xstream_rec *owner = pool_send_begin(p);
    bool sent = owner && owner != self;
    if (sent) {
        if (wake) {
            if (self)
                stat_add(&self->count[XC_WAKES_REMOTE], 1);
            TOOL_EVENT(COEXEC_TOOL_UNIT_RESUME, self, u, NULL);
        }
        /* The owner queues it (and applies a migration request). */
        atom_store_rlx_u32(&u->state, COEXEC_UNIT_READY);
        uintptr_t key = wake ? park_key_slot(u, owner) : 0;
        if (key)
            coexec__mb_wake(&owner->mb, key);
        else
            coexec__mb_push(&owner->mb, u);
    }
    pool_send_end(p);
    return sent;
}

static ALWAYS_INLINE void enqueue_as(struct coexec_unit_rec *u, int how)
{
    check_dest(u);
    struct coexec_pool_rec *p = unit_pool(u);
    if (!p->shared) {
        struct coexec_xstream_rec *me = coexec__xs_self();
        if (pool_owner(p) != me && send_to_owner(p, u, me, false))
            return;
    }
    coexec__pool_push(p, u, how);
}

void coexec__enqueue(struct coexec_unit_rec *u, bool yield_end)
{
    enqueue_as(u, yield_end ? PUSH_YIELD : PUSH_NEW);
}

void coexec__enqueue_woken(struct coexec_unit_rec *u)
{
    enqueue_as(u, PUSH_WAKE);
}

/* Queues u, just unparked by a wake: a unit whose home pool is private to
 * another stream goes through that stream's waker page (its key is in
 * u->prev since it parked) or, without one, its inbox. */
static void wake_enqueue(struct coexec_unit_rec *u)
{
    struct coexec_pool_rec *p = unit_pool(u);
    /* Inline: nothing between the wake's entry and here switches. */
    struct coexec_xstream_rec *self = xs_self_entry();
    if (!p->shared) {
        if (self && pool_owner(p) == self) {
            /* Ours: its slot here, if it took one, goes back. */
            uintptr_t key = park_key_slot(u, self);
            if (key)
                coexec__mb_slot_free(&self->mb, key);
        } else if (send_to_owner(p, u, self, true)) {
            return;
        }
    }
    if (self)
        stat_add(&self->count[XC_WAKES_LOCAL], 1);
    TOOL_EVENT(COEXEC_TOOL_UNIT_RESUME, self, u, NULL);
    enqueue_as(u, PUSH_WAKE);
}

bool coexec__wake_tagged(struct coexec_unit_rec *u, uint32_t tag)
{
    uint32_t w = atom_load_acq_u32(&u->wake);
    for (;;) {
        if ((w & ~WAKE_FLAGS) != tag)
            return false; /* another incarnation: a stale wake */
        if (w & WAKE_NOTIFIED)
            return true; /* already recorded */
        if (w & WAKE_PARKED) {
            /* acq_rel: pairs with the parker's CAS that published PARKED
             * (and the page key before it). */
            if (atom_cas_ar_u32(&u->wake, &w, tag)) {
                wake_enqueue(u);
                return true;
            }
        } else if (atom_cas_ar_u32(&u->wake, &w, tag | WAKE_NOTIFIED)) {
            /* Recorded for a unit still running (or about to park). */
            struct coexec_xstream_rec *self = xs_self_entry();
            if (self)
                stat_add(&self->count[XC_WAKES_LOCAL], 1);
            return true;
        }
    }
}

void coexec__wake_unit(struct coexec_unit_rec *u)
{
    coexec__wake_tagged(u, atom_load_rlx_u32(&u->wake) & ~WAKE_FLAGS);
}

void coexec__wake_clear(struct coexec_unit_rec *u)
{
    uint32_t w = atom_load_rlx_u32(&u->wake);
    if (UNLIKELY(w & WAKE_NOTIFIED))
        atom_cas_ar_u32(&u->wake, &w, w & ~WAKE_FLAGS);
}

/* The post-switch step of a park, on the stream u ran on: returns true if
 * u stays parked, false if a wake came first (and was consumed). */
static bool park_commit(struct coexec_xstream_rec *xs, struct coexec_unit_rec *u)
{
    uint32_t w = atom_load_acq_u32(&u->wake);
    if (!(w & WAKE_NOTIFIED)) {
        uintptr_t key = 0;
        struct coexec_pool_rec *p = unit_pool(u);
        if (!p->shared && pool_owner(p) == xs)
            key = park_key_take(xs, u);
        u->prev = (struct coexec_unit_rec *)key;
        if (atom_cas_ar_u32(&u->wake, &w, w | WAKE_PARKED)) {
            stat_add(&xs->count[XC_PARKS], 1);
            return true;
        }
        if (key)
            coexec__mb_slot_free(&xs->mb, park_key_slot(u, xs));
    }
    /* A wake arrived while u was still running: consume it. */
    atom_store_rlx_u32(&u->wake, w & ~WAKE_FLAGS);
    return false;
}


/* ---- wait lists ----------------------------------------------------------- */

atom_ptr_t coexec__wlist_ungrant;
atom_u32_t coexec__pollers_hot;

void coexec__wlist_unlink_tasklet(struct coexec_unit_rec *u)
{
    struct wlist *l = atom_load_acq_ptr(&u->tnode.who);
    if (!l)
        return;
    spin_lock(l->lock);
    if (atom_load_rlx_ptr(&u->tnode.who) == l) {
        wlist_remove(l, &u->tnode);
        atom_store_rlx_ptr(&u->tnode.who, NULL);
        if (u->tnode.flags & WN_GRANTED) {
            void (*ungrant)(struct wlist *) =
                (void (*)(struct wlist *))atom_load_rlx_ptr(&coexec__wlist_ungrant);
            ungrant(l);
        }
    }
    spin_unlock(l->lock);
}

/* ---- finishing ----------------------------------------------------------- */

/* u's function has returned and nothing runs on its stack any more;
 * tasklet: u is known to be one (no stack to release, and none of a ULT's
 * release code in the caller's frame). */
static ALWAYS_INLINE void unit_finish_as(struct coexec_xstream_rec *xs,
                                         struct coexec_unit_rec *u,
                                         bool tasklet)
{
    if (!tasklet)
        ult_release_stack(xs, u);
    /* Release: whoever reads TERMINATED in the state (get_state, with
     * acquire) before the join word says so sees what the unit did. */
    atom_store_rel_u32(&u->state, COEXEC_UNIT_TERMINATED);
    if (u->flags & UF_DETACHED) {
        /* Inline for a tasklet, the most frequent detached unit. */
        if (tasklet)
            unit_release(xs, u);
        else
            coexec__unit_release(xs, u);
        return;
    }
    if (u->rflags & RF_INPLACE) {
        /* Our caller is the joiner itself: nobody else waits; it stores
         * JOIN_DONE as it leaves. */
        u->rflags &= (uint8_t)~RF_INPLACE;
        inplace_waiter(u)->here = true;
        atom_store_rel_uptr(&u->join, JOIN_HANDED);
        return;
    }
    uintptr_t old = atom_load_acq_uptr(&u->join);
    if (old == 0) {
        /* Release: everything above is visible to whoever sees JOIN_DONE.
         * After this the descriptor may be freed at any time. */
        if (atom_cas_ar_uptr(&u->join, &old, JOIN_DONE))
            return;
    }
    coexec__unit_finish_joined(u);
}

static ALWAYS_INLINE void unit_finish(struct coexec_xstream_rec *xs,
                                      struct coexec_unit_rec *u)
{
    unit_finish_as(xs, u, u->kind == UNIT_TASKLET);
}

/* The end of unit_finish when a joiner has registered in u->join (u is
 * TERMINATED already): wakes it, and hands u over to it. */
NOINLINE void coexec__unit_finish_joined(struct coexec_unit_rec *u)
{
    uintptr_t old = atom_xchg_ar_uptr(&u->join, JOIN_WAKING);
    if (UNLIKELY(old == 0)) {
        /* A timed joiner took its registration back meanwhile: nobody to
         * wake. */
        atom_store_rel_uptr(&u->join, JOIN_DONE);
        return;
    }
    struct join_waiter *w = (struct join_waiter *)old;
    if (w->ult) {
        coexec__wake_unit(w->ult);
    } else {
        atom_store_rel_u32(&w->futex, 1);
        coexec__futex_wake(&w->futex, 1);
    }
    /* Release, and the last access: the joiner may now leave (storing
     * JOIN_DONE) and free u. */
    atom_store_rel_uptr(&u->join, JOIN_HANDED);
}

/* POST_REQUEUE_LOCKED: a yielder's push behind the others, into the pool
 * it took its successor from without letting go of it. */
static ALWAYS_INLINE void post_requeue_locked(struct coexec_xstream_rec *xs)
{
    struct coexec_pool_rec *p = xs->post_pool;
    xs->post_op = POST_NONE;
    pool_push_locked(p, xs->post_unit, true);
    pool_list_leave(p, (enum pool_hold)xs->post_hold);
}

void coexec__post_switch(struct coexec_xstream_rec *xs)
{
    int op = xs->post_op;
    if (op == POST_NONE)
        return;
    struct coexec_unit_rec *u = xs->post_unit;
    xs->post_op = POST_NONE;
    switch (op) {
    case POST_REQUEUE:
        coexec__enqueue(u, true);
        break;
    case POST_REQUEUE_NEW:
        coexec__enqueue(u, false);
        break;
    case POST_REQUEUE_LOCKED:
        post_requeue_locked(xs);
        break;
    case POST_PARK:
        if (!park_commit(xs, u))
            coexec__enqueue_woken(u); /* a wake came first */
        break;
    case POST_FINISH:
        unit_finish(xs, u);
        break;
    }
}

/* u never started and no stack can be had for it: it ends without
 * running, and its join reports COEXEC_ENOMEM (join_result). A detached
 * unit has nobody to tell but the log. */
NOINLINE void coexec__unit_fail_nostack(struct coexec_xstream_rec *xs,
                                       struct coexec_unit_rec *u)
{
    u->rflags |= RF_NOSTACK;
    if (u->flags & UF_DETACHED)
        coexec__warn("no stack could be mapped for detached ULT %llu: it "
                     "did not run",
                     (unsigned long long)u->id);
    unit_finish(xs, u);
}

/* ---- running ------------------------------------------------------------- */

/* Tasklet u returned PENDING on stream xs: it waits for its wake. */
void coexec__tasklet_pending(struct coexec_xstream_rec *xs,
                             struct coexec_unit_rec *u)
{
    atom_store_rlx_u32(&u->state, COEXEC_UNIT_BLOCKED);
    if (!park_commit(xs, u))
        coexec__enqueue_woken(u);
}

/* coexec__run_unit for a tasklet, in a function of its own so that the
 * scheduler's most frequent unit pays for none of a ULT's frame. */
void coexec__run_tasklet_unit(struct coexec_xstream_rec *xs,
                              struct coexec_unit_rec *u)
{
    unit_arrive(xs, u);
    atom_store_rlx_u32(&u->state, COEXEC_UNIT_RUNNING);
    xs->cur = u;
    if (LIKELY(tasklet_call(xs, u) == COEXEC_READY)) {
        wait_tasklet_leave(u);
        unit_finish_as(xs, u, true);
    } else {
        coexec__tasklet_pending(xs, u);
    }
    xs->cur = NULL;
}

/* u is about to run on xs: a DEST_BOUND naming xs has done its job. */
NOINLINE void coexec__dest_arrived(struct coexec_xstream_rec *xs,
                                   struct coexec_unit_rec *u)
{
    uintptr_t d = atom_load_rlx_uptr(&u->dest);
    if ((d & DEST_TAGS) == DEST_BOUND &&
        (struct coexec_xstream_rec *)(d & ~DEST_TAGS) == xs)
        atom_cas_rlx_uptr(&u->dest, &d, 0);
}


/* Called by the scheduler, on the scheduler's context. */
void coexec__run_unit(struct coexec_xstream_rec *xs, struct coexec_unit_rec *u)
{
    if (u->kind == UNIT_TASKLET) {
        coexec__run_tasklet_unit(xs, u);
        return;
    }
    unit_arrive(xs, u);
    atom_store_rlx_u32(&u->state, COEXEC_UNIT_RUNNING);
    xs->cur = u;
    if (UNLIKELY(!(u->rflags & RF_STARTED)) && UNLIKELY(!ult_prepare(xs, u))) {
        xs->cur = NULL;
        coexec__unit_fail_nostack(xs, u);
        return;
    }
    count_switch(xs, u);
    TOOL_SWITCH(xs, NULL, -1, u);
    enter_unit(&xs->sched_sp, u, 0, true);
    /* Scheduler contexts never change OS thread: xs is still ours. */
    coexec__post_switch(xs);
    xs->cur = NULL;
}



static NORETURN void ult_finish_self(struct coexec_unit_rec *u)
{
    struct coexec_xstream_rec *xs = coexec__xs_self();
    /* An in-place joiner gets control back directly; POST_FINISH (run by
     * it) sees RF_INPLACE still set and completes the join without atomics. */
    struct coexec_unit_rec *to = (u->rflags & RF_INPLACE) ? inplace_joiner(u)
                                                           : NULL;
    leave_to(xs, u, to, POST_FINISH, 1);
    __builtin_unreachable();
}

void coexec__ult_entry(void *arg)
{
    struct coexec_unit_rec *u = arg;
    switch_first_entry();
    coexec__post_switch(coexec__xs_self());
    u->fn.thread(u->arg);
    if (UNLIKELY(u->keys != NULL))
        coexec__keys_destroy(u);
    if (LIKELY(u->rflags & RF_RETURN)) {
        if (UNLIKELY(u->flags & UF_USER_STACK))
            canary_check(u, u->stack);
        /* Nothing of ours left this stack since we started, so whoever
         * started us still waits in coexec__ctx_start, and it is where we
         * go (our in-place joiner, or the scheduler): just return to it. */
        struct coexec_xstream_rec *xs = coexec__xs_self();
        struct coexec_unit_rec *to = (u->rflags & RF_INPLACE)
                                         ? inplace_joiner(u)
                                         : NULL;
        xs->post_op = POST_FINISH;
        xs->post_unit = u;
        xs->cur = to;
        if (to)
            atom_store_rlx_u32(&to->state, COEXEC_UNIT_RUNNING);
        count_switch(xs, to);
        /* Last, so that the call is a tail call off the common path. */
        TOOL_SWITCH(xs, u, COEXEC_TOOL_UNIT_FINISH, to);
        return;
    }
    ult_finish_self(u);
}

/* ---- the calling unit ----------------------------------------------------- */

/* Parks the calling ULT until woken (returns at once if a wake is pending). */
void coexec__park_self(struct coexec_xstream_rec *xs, struct coexec_unit_rec *u)
{
    uint32_t w = atom_load_acq_u32(&u->wake);
    if (w & WAKE_NOTIFIED) {
        /* Only u itself clears NOTIFIED, so a plain store is enough. */
        atom_store_rlx_u32(&u->wake, w & ~WAKE_FLAGS);
        return;
    }
    atom_store_rlx_u32(&u->state, COEXEC_UNIT_BLOCKED);
    leave_to(xs, u, leave_target(u), POST_PARK, 0);
}

/* coexec_yield's common case, whole: ULT u of stream xs, neither run in
 * place by a joiner nor on a stack of the caller's, hands the CPU to the
 * next ULT of its own pool, when that is the scheduler's direct pool and
 * that unit has run before (or finds the pool empty and goes on). False,
 * with nothing changed, when any of it does not hold: yield_general then
 * does it all. No value is live across the switch, so this path saves no
 * register of its own. */
static ALWAYS_INLINE bool yield_direct(struct coexec_xstream_rec *xs,
                                       struct coexec_unit_rec *u)
{
    struct coexec_sched_rec *cs = xs->cur_sched;
    struct coexec_pool_rec *p = unit_pool(u);
    unsigned dy = xs->direct_yields + 1;
    if (UNLIKELY(u->kind == UNIT_TASKLET) ||
        UNLIKELY((u->rflags & RF_INPLACE) | (u->flags & UF_USER_STACK)) ||
        p != cs->direct_pool || dy >= cs->event_freq ||
        UNLIKELY(atom_load_rlx_u32(&coexec__pollers_hot) != 0) ||
        UNLIKELY(atom_load_rlx_uptr(&u->dest) != 0) ||
        (TOOL_ON() && UNLIKELY(atom_load_rlx_u32(&coexec__tool.mask) != 0)))
        return false;
    if (atom_load_rlx_u64(&p->size) == 0) {
        xs->direct_yields = dy; /* nothing else to run here */
        stat_add(&xs->count[XC_YIELDS], 1);
        return true;
    }
    enum pool_hold hold;
    if (UNLIKELY(!pool_list_try_enter(p, xs, &hold)))
        return false;
    bool fifo = p->kind == COEXEC_POOL_FIFO;
    struct coexec_unit_rec *n = fifo ? p->tail : p->head;
    if (UNLIKELY(!n || n->kind == UNIT_TASKLET || !n->sp ||
                 !pool_may_take(n, xs) ||
                 atom_load_rlx_uptr(&n->dest) != 0)) {
        pool_list_leave(p, hold);
        return false;
    }
    list_unlink_end(p, n, fifo);
    xs->direct_yields = dy;
    stat_add(&xs->count[XC_YIELDS], 1);
    stat_add(&xs->count[XC_ULT_RUNS], 1);
    atom_store_rlx_u32(&u->state, COEXEC_UNIT_READY);
    xs->post_op = POST_REQUEUE_LOCKED;
    xs->post_unit = u;
    xs->post_pool = p;
    xs->post_hold = (uint8_t)hold;
    u->rflags &= (uint8_t)~RF_RETURN;
    __atomic_store_n(&n->last_rank, (int16_t)xs_rank_of(xs), __ATOMIC_RELAXED);
    xs->cur = n;
    atom_store_rlx_u32(&n->state, COEXEC_UNIT_RUNNING);
    struct fiber_info fi = unit_fiber(n);
    switch_ctx(&u->sp, n->sp, &fi, 0);
    /* Resumed, possibly on another stream, most often by a unit that
     * yielded the same way. */
    xs = coexec__xs_self();
    if (LIKELY(xs->post_op == POST_REQUEUE_LOCKED))
        post_requeue_locked(xs);
    else
        coexec__post_switch(xs);
    return true;
}

/* coexec_yield in every case. */
static NOINLINE int yield_general(void)
{
    int err;
    struct coexec_xstream_rec *xs;
    struct coexec_unit_rec *u = self_ult(&xs, &err);
    if (!u)
        return err;
    stat_add(&xs->count[XC_YIELDS], 1);
    struct coexec_unit_rec *to = leave_target(u);
    struct coexec_sched_rec *cs = xs->cur_sched;
    if (!to && ++xs->direct_yields < cs->event_freq &&
        LIKELY(atom_load_rlx_u32(&coexec__pollers_hot) == 0)) {
        /* Hand the CPU straight to the next started ULT of our pool: one
         * switch instead of two. Every event_freq yields go through the
         * scheduler so that it still sees its events and other pools. */
        struct coexec_pool_rec *p = unit_pool(u);
        /* Only from the scheduler's direct pool is "the next unit of my
         * pool" what the scheduler itself would pick (src/sched/sched.c,
         * direct_pool);
         * a migration request must go through the ordinary path. */
        if (p != cs->direct_pool ||
            UNLIKELY(atom_load_rlx_uptr(&u->dest) != 0))
            goto through_sched;
        if (atom_load_rlx_u64(&p->size) == 0)
            return COEXEC_OK; /* nothing else to run here */
        /* One lock hold for both halves: take the next unit now, and queue
         * ourselves behind the others once our context is saved (the next
         * unit does it, then unlocks). */
        enum pool_hold locked;
        if (!pool_list_enter(p, xs, &locked))
            goto through_sched; /* another stream's private pool now */
        struct coexec_unit_rec *n =
            pool_take_from(p, xs, p->kind == COEXEC_POOL_FIFO);
        if (n && n->kind != UNIT_TASKLET &&
            ((n->rflags & RF_STARTED) || ult_prepare(xs, n))) {
            atom_store_rlx_u32(&u->state, COEXEC_UNIT_READY);
            xs->post_pool = p;
            xs->post_hold = (uint8_t)locked;
            leave_to(xs, u, n, POST_REQUEUE_LOCKED, 0);
            return COEXEC_OK;
        }
        pool_list_leave(p, locked);
        if (!n)
            return COEXEC_OK;
        xs->run_next = n; /* a tasklet (or no memory for a stack) */
    } else {
    through_sched:
        /* The scheduler's loop counts only the units it runs itself: tell
         * it that event_freq yields went by, so it checks its events now
         * (sched/loop.c), not event_freq of its turns later. */
        if (xs->direct_yields >= cs->event_freq)
            xs->events_due = 1;
        xs->direct_yields = 0;
    }
    atom_store_rlx_u32(&u->state, COEXEC_UNIT_READY);
    leave_to(xs, u, to, POST_REQUEUE, 0);
    return COEXEC_OK;
}

COEXEC_API int coexec_yield(void)
{
    struct coexec_xstream_rec *xs = xs_self_entry();
    struct coexec_unit_rec *u;
    if (LIKELY(xs != NULL) && LIKELY(rt_on()) &&
        LIKELY((u = xs->cur) != NULL) && LIKELY(yield_direct(xs, u)))
        return COEXEC_OK;
    return yield_general();
}

COEXEC_API int coexec_thread_exit(void)
{
    int err;
    struct coexec_xstream_rec *xs;
    struct coexec_unit_rec *u = self_ult(&xs, &err);
    if (!u)
        return err;
    if (u->kind == UNIT_MAIN)
        return COEXEC_EPERM;
    if (u->keys)
        coexec__keys_destroy(u);
    ult_finish_self(u);
}

COEXEC_API int coexec_self_suspend(void)
{
    int err;
    struct coexec_xstream_rec *xs;
    struct coexec_unit_rec *u = self_ult(&xs, &err);
    if (!u)
        return err;
    unit_note_wait(u, "suspended (coexec_park, coexec_self_suspend)", NULL,
                   UINT64_MAX);
    coexec__park_self(xs, u);
    /* Woken by finalize (or resumed while it cancels waits). */
    return fin_cancelling() ? COEXEC_ECANCELED : COEXEC_OK;
}

COEXEC_API int coexec_park(void)
{
    return coexec_self_suspend();
}

void coexec__park_current(struct coexec_unit_rec *self)
{
    coexec__park_self(coexec__xs_self(), self);
}

bool coexec__unit_finalize_wake(struct coexec_unit_rec *u,
                                struct coexec_pool_rec *to, bool wake)
{
    /* Free and never-carved descriptors have no PARKED bit. */
    uint32_t w = atom_load_acq_u32(&u->wake);
    if (!(w & WAKE_PARKED) || u->kind == UNIT_MAIN || (u->flags & UF_SCHED))
        return false; /* a stacked scheduler holds no object's list */
    if (u->kind == UNIT_TASKLET)
        wait_tasklet_leave(u);
    if (!wake)
        return false;
    /* Its stream may be gone: it runs on the primary now. Only finalize
     * runs, so these fields are ours (a late external waker of u may
     * still read the old home: then u stays queued there, unlinked). */
    atom_store_rlx_uptr(&u->dest, 0);
    if (u->flags & UF_NOSTEAL)
        u->bound_rank = (int16_t)coexec__g.primary->rank;
    atom_store_rlx_ptr(&u->pool, to);
    return coexec__wake_tagged(u, w & ~WAKE_FLAGS);
}

/* ---- stacked schedulers' units -------------------------------------------- */

void coexec__unit_yield_to_sched(struct coexec_xstream_rec *xs,
                                 struct coexec_unit_rec *self)
{
    atom_store_rlx_u32(&self->state, COEXEC_UNIT_READY);
    leave_to(xs, self, NULL, POST_REQUEUE, 0);
}
