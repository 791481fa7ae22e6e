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
 *  runs it in place (RF_INPLACE): the unit then returns straight to the
 *  joiner when it finishes, without the scheduler or any atomic on the
 *  joiner. If the unit yields or parks meanwhile it switches back to its
 *  joiner, which then waits like any other joiner.
 */
#include <string.h>
#include <sys/mman.h>

#include "arch/clock.h"
#include "arch/futex.h"
#include "base/global.h"
#include "base/valgrind.h"
#include "mem/guard.h"
#include "pool/pool.h"
#include "sched/sched.h"
#include "thread/engine.h"
#include "thread/switch.h"
#include "thread/thread.h"
#include "thread/unit.h"
#include "thread/wlist.h"
#include "waker/wait.h"
#include "xstream/xstream.h"

/* ---- descriptors --------------------------------------------------------- */

struct coexec_unit_rec *coexec__unit_new(struct coexec_xstream_rec *xs,
                                         int kind)
{
    struct coexec_unit_rec *u = coexec__unit_alloc(xs ? &xs->ucache : NULL);
    if (UNLIKELY(!u))
        return NULL;
    /* gen was bumped when the descriptor was freed (or set when carved). */
    u->next = u->prev = NULL;
    atom_store_rlx_ptr(&u->pool, NULL);
    atom_store_rlx_u32(&u->state, COEXEC_UNIT_READY);
    atom_store_rlx_u32(&u->wake, wake_tag_of(atom_load_rlx_u64(&u->gen)));
    /* Release: a stale joiner whose compare-and-swap reads this 0 also
     * sees the new generation (join_unit re-checks it). */
    atom_store_rel_uptr(&u->join, 0);
    u->kind = (uint8_t)kind;
    unit_inpool_set(u, 0);
    u->flags = 0;
    u->rflags = 0;
    u->sp = NULL;
    u->stack = NULL;
    u->keys = NULL;
    u->bound_rank = -1;
    atom_store_rlx_u32(&u->attrs, 0);
    atom_store_rlx_uptr(&u->dest, 0);
    u->tsan_fiber = NULL;
    if (LIKELY(xs)) {
        /* Ids and the leak count stay per stream: no shared atomic here. */
        if (UNLIKELY(xs->id_next == xs->id_end)) {
            xs->id_next = atom_fadd_rlx_u64(&coexec__g.next_unit_id, 4096);
            xs->id_end = xs->id_next + 4096;
        }
        u->id = xs->id_next++;
        xs->live_units++;
    } else {
        u->id = atom_fadd_rlx_u64(&coexec__g.next_unit_id, 1);
        atom_fadd_rlx_u64(&coexec__g.live_units, 1);
    }
    return u;
}

/* The second half of a release, once u's generation is `gen`. */
static ALWAYS_INLINE void unit_recycle(struct coexec_xstream_rec *xs,
                                      struct coexec_unit_rec *u, uint64_t gen)
{
    if (LIKELY(xs))
        xs->live_units--;
    else
        atom_fsub_rlx_u64(&coexec__g.live_units, 1);
    /* Wakes aimed at this incarnation fail from now on. */
    atom_store_rlx_u32(&u->wake, wake_tag_of(gen));
    /* A free descriptor names no home (coexec__unit_homed_in). */
    atom_store_rlx_ptr(&u->pool, NULL);
    coexec__unit_free(xs ? &xs->ucache : NULL, u);
}

void coexec__unit_release(struct coexec_xstream_rec *xs,
                          struct coexec_unit_rec *u)
{
    /* Release: a handle check that sees the new generation must not see
     * this incarnation's fields any more. */
    uint64_t gen = gen_next(atom_load_rlx_u64(&u->gen));
    atom_store_rel_u64(&u->gen, gen);
    unit_recycle(xs, u, gen);
}

/* Releases u for the holder of handle generation `gen`: of racing
 * releases through the same handle exactly one gets true. */
static ALWAYS_INLINE bool unit_release_handle(struct coexec_xstream_rec *xs,
                                              struct coexec_unit_rec *u,
                                              uint64_t gen)
{
    uint64_t exp = gen, next = gen_next(gen);
    if (UNLIKELY(!atom_cas_ar_u64(&u->gen, &exp, next)))
        return false;
    unit_recycle(xs, u, next);
    return true;
}

/* ---- stacks ------------------------------------------------------------ */

static size_t unit_stack_bytes(struct coexec_unit_rec *u)
{
    return u->stack_size;
}

static struct fiber_info unit_fiber(struct coexec_unit_rec *u)
{
    struct fiber_info f = {u->stack, unit_stack_bytes(u), u->tsan_fiber};
    return f;
}

static struct fiber_info sched_fiber(struct coexec_xstream_rec *xs)
{
    struct fiber_info f = {xs->sched_stack_lo, xs->sched_stack_size,
                           xs->sched_fiber};
    return f;
}

static void ult_entry(void *arg);

/* Gives u a stack; its context starts on it at the first switch to it.
 * Returns false when out of memory. */
static ALWAYS_INLINE bool ult_prepare(struct coexec_xstream_rec *xs,
                        struct coexec_unit_rec *u)
{
    size_t usable;
    if (u->flags & UF_USER_STACK) {
        usable = u->stack_size;
        vg_user_stack_start(u->stack, usable);
    } else if (u->flags & UF_BIG_STACK) {
        /* A stacked scheduler's unit has its stack from its creation. */
        if (!u->stack && !(u->stack = coexec__stack_map(u->stack_size)))
            return false;
        usable = u->stack_size;
        vg_user_stack_start(u->stack, usable);
    } else {
        u->stack = coexec__stack_alloc(&xs->scache, coexec__g.stack_size);
        if (!u->stack)
            return false;
        usable = coexec__g.stack_size - STACK_NODE_SIZE;
        u->stack_size = (uint32_t)usable;
    }
    u->rflags |= RF_STARTED;
    san_stack_reuse(u->stack, usable);
    u->tsan_fiber = tsan_fiber_new();
    return true;
}

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
        u->stack = NULL;
    } else if (u->stack) {
        coexec__stack_free(&xs->scache, u->stack, coexec__g.stack_size);
        u->stack = NULL;
    }
    tsan_fiber_free(u->tsan_fiber);
    u->tsan_fiber = NULL;
    u->sp = NULL;
}

/* Transfers control from the current context (saved in *save unless
 * `final`) to the ULT `to`: resumes it, or starts it on its stack if it
 * never ran. `back` says the current context is where `to` goes when it
 * finishes, so a fresh `to` may simply return there. */
static ALWAYS_INLINE void enter_unit(void **save, struct coexec_unit_rec *to,
                                     int final, bool back)
{
    struct fiber_info fi = unit_fiber(to);
    if (to->sp) {
        switch_ctx(save, to->sp, &fi, final);
    } else {
        if (back && !SANITIZED)
            to->rflags |= RF_RETURN;
        start_ctx(save, &fi, ult_entry, to);
    }
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

static ALWAYS_INLINE void enqueue_as(struct coexec_unit_rec *u, int how)
{
    check_dest(u);
    struct coexec_pool_rec *p = unit_pool(u);
    if (!p->shared && p->owner_xs) {
        struct coexec_xstream_rec *me = coexec__xs_self();
        if (me != p->owner_xs) {
            /* A private pool is touched by its owner only. */
            atom_store_rlx_u32(&u->state, COEXEC_UNIT_READY);
            coexec__mb_push(&p->owner_xs->mb, u);
            return;
        }
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
    uintptr_t key = (uintptr_t)u->prev;
    if (!p->shared && p->owner_xs) {
        struct coexec_xstream_rec *owner = p->owner_xs;
        if (coexec__xs_self() != owner) {
            /* The owner queues it (and applies a migration request). */
            atom_store_rlx_u32(&u->state, COEXEC_UNIT_READY);
            if (key)
                coexec__mb_wake(&owner->mb, key);
            else
                coexec__mb_push(&owner->mb, u);
            return;
        }
        if (key)
            coexec__mb_slot_free(&owner->mb, key);
    }
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
        if (!p->shared && p->owner_xs == xs)
            key = coexec__mb_slot_take(&xs->mb, u);
        u->prev = (struct coexec_unit_rec *)key;
        if (atom_cas_ar_u32(&u->wake, &w, w | WAKE_PARKED))
            return true;
        if (key)
            coexec__mb_slot_free(&xs->mb, key);
    }
    /* A wake arrived while u was still running: consume it. */
    atom_store_rlx_u32(&u->wake, w & ~WAKE_FLAGS);
    return false;
}

/* The joiner running u in place (RF_INPLACE): the waiter its join word
 * names, which nobody else may change while the flag is set. */
static ALWAYS_INLINE struct coexec_unit_rec *
inplace_joiner(struct coexec_unit_rec *u)
{
    return ((struct join_waiter *)atom_load_rlx_uptr(&u->join))->ult;
}

/* ---- wait lists ----------------------------------------------------------- */

atom_ptr_t coexec__wlist_ungrant;

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

/* u's function has returned and nothing runs on its stack any more. */
static ALWAYS_INLINE void unit_finish(struct coexec_xstream_rec *xs,
                        struct coexec_unit_rec *u)
{
    if (u->kind != UNIT_TASKLET)
        ult_release_stack(xs, u);
    atom_store_rlx_u32(&u->state, COEXEC_UNIT_TERMINATED);
    if (u->flags & UF_DETACHED) {
        coexec__unit_release(xs, u);
        return;
    }
    if (u->rflags & RF_INPLACE) {
        /* Our caller is the joiner itself: nobody else waits; it stores
         * JOIN_DONE as it leaves. */
        u->rflags &= (uint8_t)~RF_INPLACE;
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
    old = atom_xchg_ar_uptr(&u->join, JOIN_WAKING);
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
    case POST_REQUEUE_LOCKED: {
        struct coexec_pool_rec *p = xs->post_pool;
        pool_push_locked(p, u, true);
        if (p->shared)
            pool_unlock(p);
        break;
    }
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
static NOINLINE void unit_fail_nostack(struct coexec_xstream_rec *xs,
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

static void run_tasklet(struct coexec_xstream_rec *xs,
                        struct coexec_unit_rec *u)
{
    struct coexec_poll cx = {u};
    u->rflags |= RF_STARTED;
    coexec_poll_status_t r = u->fn.tasklet(&cx, u->arg);
    if (r == COEXEC_READY) {
        wait_tasklet_leave(u);
        unit_finish(xs, u);
        return;
    }
    atom_store_rlx_u32(&u->state, COEXEC_UNIT_BLOCKED);
    /* From now on a joiner that ran us in place waits the ordinary way:
     * clear the flag before a wake can make us visible to other streams. */
    u->rflags &= (uint8_t)~RF_INPLACE;
    if (!park_commit(xs, u))
        coexec__enqueue_woken(u);
}

/* u is about to run on xs: a DEST_BOUND naming xs has done its job. */
static NOINLINE void dest_arrived(struct coexec_xstream_rec *xs,
                                  struct coexec_unit_rec *u)
{
    uintptr_t d = atom_load_rlx_uptr(&u->dest);
    if ((d & DEST_TAGS) == DEST_BOUND &&
        (struct coexec_xstream_rec *)(d & ~DEST_TAGS) == xs)
        atom_cas_rlx_uptr(&u->dest, &d, 0);
}

static ALWAYS_INLINE void check_arrival(struct coexec_xstream_rec *xs,
                                        struct coexec_unit_rec *u)
{
    if (UNLIKELY(atom_load_rlx_uptr(&u->dest) != 0))
        dest_arrived(xs, u);
}

/* Called by the scheduler, on the scheduler's context. */
void coexec__run_unit(struct coexec_xstream_rec *xs, struct coexec_unit_rec *u)
{
    check_arrival(xs, u);
    atom_store_rlx_u32(&u->state, COEXEC_UNIT_RUNNING);
    xs->cur = u;
    if (u->kind == UNIT_TASKLET) {
        run_tasklet(xs, u);
        xs->cur = NULL;
        return;
    }
    if (UNLIKELY(!(u->rflags & RF_STARTED)) && UNLIKELY(!ult_prepare(xs, u))) {
        xs->cur = NULL;
        unit_fail_nostack(xs, u);
        return;
    }
    enter_unit(&xs->sched_sp, u, 0, true);
    /* Scheduler contexts never change OS thread: xs is still ours. */
    coexec__post_switch(xs);
    xs->cur = NULL;
}

/* Leaves the running ULT `self` for `to` (a unit, or the scheduler when
 * NULL) after recording what to do with self. */
static ALWAYS_INLINE void leave_to(struct coexec_xstream_rec *xs, struct coexec_unit_rec *self,
                     struct coexec_unit_rec *to, int op, int final)
{
    if (UNLIKELY(self->flags & UF_USER_STACK))
        canary_check(self, self->stack);
    xs->post_op = op;
    xs->post_unit = self;
    /* Leaving for anything but a child run in place (POST_NONE), our own
     * starter gets resumed by a switch, not by our return. */
    if (op != POST_NONE)
        self->rflags &= (uint8_t)~RF_RETURN;
    void *dead_sp; /* a finished context is never resumed */
    void **save = final ? &dead_sp : &self->sp;
    if (to) {
        check_arrival(xs, to);
        xs->cur = to;
        atom_store_rlx_u32(&to->state, COEXEC_UNIT_RUNNING);
        enter_unit(save, to, final, op == POST_NONE);
    } else {
        xs->cur = NULL;
        struct fiber_info fi = sched_fiber(xs);
        switch_ctx(save, xs->sched_sp, &fi, final);
    }
    /* Resumed, possibly on another stream: look it up again. */
    coexec__post_switch(coexec__xs_self());
}

/* Where a ULT that stops running goes: its in-place joiner if any (which
 * then waits for it the ordinary way), else the scheduler. */
static struct coexec_unit_rec *leave_target(struct coexec_unit_rec *self)
{
    if (self->rflags & RF_INPLACE) {
        self->rflags &= (uint8_t)~RF_INPLACE;
        return inplace_joiner(self);
    }
    return NULL;
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

static void ult_entry(void *arg)
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
        return;
    }
    ult_finish_self(u);
}

/* ---- the calling unit ----------------------------------------------------- */

/* Parks the calling ULT until woken (returns at once if a wake is pending). */
static void park_self(struct coexec_xstream_rec *xs, struct coexec_unit_rec *u)
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

COEXEC_API int coexec_yield(void)
{
    int err;
    struct coexec_xstream_rec *xs;
    struct coexec_unit_rec *u = self_ult(&xs, &err);
    if (!u)
        return err;
    struct coexec_unit_rec *to = leave_target(u);
    struct coexec_sched_rec *cs = xs->cur_sched;
    if (!to && ++xs->direct_yields < cs->event_freq) {
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
        if (p->shared)
            pool_lock(p);
        struct coexec_unit_rec *n =
            pool_take_from(p, xs, p->kind == COEXEC_POOL_FIFO);
        if (n && n->kind != UNIT_TASKLET &&
            ((n->rflags & RF_STARTED) || ult_prepare(xs, n))) {
            atom_store_rlx_u32(&u->state, COEXEC_UNIT_READY);
            xs->post_pool = p;
            leave_to(xs, u, n, POST_REQUEUE_LOCKED, 0);
            return COEXEC_OK;
        }
        if (p->shared)
            pool_unlock(p);
        if (!n)
            return COEXEC_OK;
        xs->run_next = n; /* a tasklet (or no memory for a stack) */
    } else {
    through_sched:
        xs->direct_yields = 0;
    }
    atom_store_rlx_u32(&u->state, COEXEC_UNIT_READY);
    leave_to(xs, u, to, POST_REQUEUE, 0);
    return COEXEC_OK;
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
    park_self(xs, u);
    /* Woken by finalize (or resumed while it cancels waits). */
    return fin_cancelling() ? COEXEC_ECANCELED : COEXEC_OK;
}

COEXEC_API int coexec_park(void)
{
    return coexec_self_suspend();
}

void coexec__park_current(struct coexec_unit_rec *self)
{
    park_self(coexec__xs_self(), self);
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
        u->bound_rank = coexec__g.primary->rank;
    atom_store_rlx_ptr(&u->pool, to);
    return coexec__wake_tagged(u, w & ~WAKE_FLAGS);
}

/* ---- join ---------------------------------------------------------------- */

static bool may_run_here(struct coexec_unit_rec *u, struct coexec_xstream_rec *xs)
{
    return pool_may_take(u, xs);
}

/* Runs the not-started unit u (just removed from its pool, and our
 * registration as its joiner in u->join) in place. */
static ALWAYS_INLINE void run_in_place(struct coexec_xstream_rec *xs, struct coexec_unit_rec *self,
                         struct coexec_unit_rec *u)
{
    if (u->kind == UNIT_TASKLET) {
        xs->cur = u;
        atom_store_rlx_u32(&u->state, COEXEC_UNIT_RUNNING);
        u->rflags |= RF_INPLACE;
        run_tasklet(xs, u); /* READY completes the join in place */
        xs->cur = self;
        return;
    }
    if (UNLIKELY(!(u->rflags & RF_STARTED)) && UNLIKELY(!ult_prepare(xs, u))) {
        /* It ends here, unrun; as its in-place joiner we are told so
         * without a wake (unit_finish under RF_INPLACE). */
        u->rflags |= RF_INPLACE;
        unit_fail_nostack(xs, u);
        return;
    }
    u->rflags |= RF_INPLACE; /* its joiner: w->ult, through u->join */
    atom_store_rlx_u32(&self->state, COEXEC_UNIT_BLOCKED);
    leave_to(xs, self, u, POST_NONE, 0);
    atom_store_rlx_u32(&self->state, COEXEC_UNIT_RUNNING);
}

/* What a join reports of a finished unit: it ran, or it could not. */
static ALWAYS_INLINE int join_result(const struct coexec_unit_rec *u)
{
    return UNLIKELY(u->rflags & RF_NOSTACK) ? COEXEC_ENOMEM : COEXEC_OK;
}

/* The registered joiner of u, which finished (join word j), leaves: the
 * result is read first, JOIN_DONE is its last touch of u. A free keeps
 * JOIN_HANDED instead (w->held): while it stays, every other free is
 * EBUSY, so the free releases u with no atomic read-modify-write. */
static ALWAYS_INLINE int join_leave(struct coexec_unit_rec *u, uintptr_t j,
                                    struct join_waiter *w)
{
    int rc = join_result(u);
    if (j == JOIN_HANDED) {
        if (w->keep)
            w->held = true;
        else
            atom_store_rel_uptr(&u->join, JOIN_DONE);
    }
    return rc;
}

/* A ULT registered as u's joiner waits for the finish (JOIN_DONE when u
 * was run in place, else JOIN_HANDED, which it turns into JOIN_DONE as it
 * leaves). The finisher's wake may find us running (a wake recorded as
 * NOTIFIED, for instance because we ran u in place and were resumed
 * directly): consume such a leftover so a later park of ours does not
 * return early. */
/* How long a joiner watches a unit running elsewhere before parking: short
 * units finish within it, and parking plus the wake that ends it cost far
 * more than the watch. A unit that is not running (queued, parked) is not
 * watched: nothing will finish it within a spin. */
#define JOIN_SPIN 128

/* A timed joiner's timer: at the deadline it takes the registration back
 * (only while the join word still names the waiter: a finisher that got
 * there first completes the join) and wakes the joiner. */
struct join_timer {
    struct timer t;
    struct coexec_unit_rec *u;
    struct join_waiter *w;
    atom_u32_t fired;
};

static void join_timer_fire(struct timer *t, bool cancel)
{
    /* Finalize ends the timer early: the join goes on like an untimed one
     * (finalize wakes the unit it waits for). */
    if (cancel)
        return;
    struct join_timer *jt = container_of(t, struct join_timer, t);
    uintptr_t exp = (uintptr_t)jt->w;
    if (atom_cas_ar_uptr(&jt->u->join, &exp, 0)) {
        struct coexec_unit_rec *joiner = jt->w->ult;
        atom_store_rel_u32(&jt->fired, 1);
        coexec__wake_unit(joiner);
    }
}

static NOINLINE int join_wait_ult_timed(struct coexec_unit_rec *u,
                                        struct coexec_unit_rec *self,
                                        struct join_waiter *w,
                                        uint64_t deadline)
{
    struct join_timer jt;
    jt.t.deadline = deadline;
    jt.t.fire = join_timer_fire;
    jt.u = u;
    jt.w = w;
    atom_store_rlx_u32(&jt.fired, 0);
    if (coexec__timer_add(&coexec__xs_self()->timers, &jt.t) != COEXEC_OK) {
        uintptr_t exp = (uintptr_t)w;
        if (atom_cas_ar_uptr(&u->join, &exp, 0))
            return COEXEC_ENOMEM; /* no room for the timer; not joined */
        deadline = UINT64_MAX;    /* finishing already: wait for it */
    }
    uintptr_t j;
    bool timed_out = false;
    for (;;) {
        if (atom_load_acq_u32(&jt.fired)) {
            timed_out = true; /* our registration is gone: u is not ours */
            break;
        }
        j = atom_load_acq_uptr(&u->join);
        if (join_finished(j))
            break;
        if (j == JOIN_WAKING)
            cpu_relax();
        else
            park_self(coexec__xs_self(), self);
    }
    /* Once cancel returns the timer is done with us (it fires under the
     * heap's lock); then drop a wake it or the finisher left. */
    if (deadline != UINT64_MAX)
        coexec__timer_cancel(&jt.t);
    coexec__wake_clear(self);
    return timed_out ? COEXEC_ETIMEDOUT : join_leave(u, j, w);
}

static int join_wait_ult(struct coexec_unit_rec *u, struct coexec_unit_rec *self,
                         struct join_waiter *w, uint64_t deadline)
{
    uintptr_t j;
    if (UNLIKELY(deadline != UINT64_MAX))
        return join_wait_ult_timed(u, self, w, deadline);
    for (int i = 0; i < JOIN_SPIN; i++) {
        j = atom_load_acq_uptr(&u->join);
        if (j <= JOIN_HANDED ||
            atom_load_rlx_u32(&u->state) != COEXEC_UNIT_RUNNING)
            break;
        cpu_relax();
    }
    for (;;) {
        j = atom_load_acq_uptr(&u->join);
        if (join_finished(j))
            break;
        if (j == JOIN_WAKING)
            cpu_relax(); /* its wake reached us; the finish is imminent */
        else
            park_self(coexec__xs_self(), self);
    }
    coexec__wake_clear(self);
    return join_leave(u, j, w);
}

/* Does the descriptor still serve the handle's unit? (A stale handle's
 * unit was freed by someone else meanwhile.) */
static ALWAYS_INLINE bool gen_is(const struct coexec_unit_rec *u, uint64_t gen)
{
    return atom_load_acq_u64(&((struct coexec_unit_rec *)u)->gen) == gen;
}

/* A finished unit whose join word says j: what join (for_free false) or
 * free reports. JOIN_HANDED: its registered joiner has not left yet. */
static int join_done_result(const struct coexec_unit_rec *u, uint64_t gen,
                            uintptr_t j, bool for_free)
{
    if (!gen_is(u, gen))
        return COEXEC_EHANDLE;
    if (j == JOIN_HANDED && for_free)
        return COEXEC_EBUSY;
    return join_result(u);
}

/* An external thread registered as u's joiner waits, until deadline. */
static int join_wait_external(struct coexec_unit_rec *u, struct join_waiter *w,
                              uint64_t deadline)
{
    uintptr_t j;
    while (!join_finished(j = atom_load_acq_uptr(&u->join))) {
        if (deadline == UINT64_MAX) {
            coexec__futex_wait(&w->futex, 0, NULL);
            continue;
        }
        if (clock_now_ns() >= deadline) {
            uintptr_t exp = (uintptr_t)w;
            if (atom_cas_ar_uptr(&u->join, &exp, 0))
                return COEXEC_ETIMEDOUT;
            continue; /* its finisher is waking us */
        }
        struct timespec ts = clock_until(deadline);
        coexec__futex_wait(&w->futex, 0, &ts);
    }
    return join_leave(u, j, w);
}

/* Waits for u until deadline (UINT64_MAX: none); gen is the caller's
 * handle generation. for_free: the caller will release u if this returns
 * COEXEC_OK or COEXEC_ENOMEM, so it must be the only one left touching u. */
static ALWAYS_INLINE int join_unit(struct coexec_unit_rec *u, uint64_t gen,
                                   bool for_free, uint64_t deadline,
                                   bool *held)
{
    struct coexec_xstream_rec *xs = xs_self_entry();
    struct coexec_unit_rec *self = xs ? xs->cur : NULL;
    if (xs && !self)
        return COEXEC_ECONTEXT; /* a scheduler loop cannot wait */
    if (self == u)
        return COEXEC_EDEADLK;
    if (self && self->kind == UNIT_TASKLET)
        return COEXEC_ECONTEXT;
    if (u->flags & UF_DETACHED)
        return COEXEC_EINVAL;
    /* Acquire: pairs with the finisher's release of JOIN_DONE. */
    uintptr_t j = atom_load_acq_uptr(&u->join);
    if (LIKELY(j == JOIN_DONE) || j == JOIN_HANDED)
        return join_done_result(u, gen, j, for_free);

    /* Registered first, claimed second: of racing joiners only the one
     * whose CAS wins may take the unit out of its pool to run it. */
    struct join_waiter w = {self, ATOM_INIT(0), for_free, false};
    uintptr_t exp = 0;
    if (!atom_cas_ar_uptr(&u->join, &exp, (uintptr_t)&w)) {
        if (exp == JOIN_WAKING) {
            /* Its finisher is a few instructions from done. */
            while ((exp = atom_load_acq_uptr(&u->join)) == JOIN_WAKING)
                cpu_relax();
        }
        if (join_finished(exp))
            return join_done_result(u, gen, exp, for_free);
        /* Somebody else is joining it (or it serves another unit now). */
        return gen_is(u, gen) ? COEXEC_EBUSY : COEXEC_EHANDLE;
    }
    bool stale = false;
    if (UNLIKELY(!gen_is(u, gen))) {
        /* We registered on the descriptor's next unit: take it back. */
        exp = (uintptr_t)&w;
        if (atom_cas_ar_uptr(&u->join, &exp, 0))
            return COEXEC_EHANDLE;
        /* It finished meanwhile and its finisher is waking us: let it. */
        stale = true;
    }
    if (self && !stale) {
        /* Still queued: run it in place. Acquire: pairs with a thief's
         * release of u's new home. */
        struct coexec_pool_rec *p = atom_load_acq_ptr(&u->pool);
        bool claimed = false;
        if (atom_load_acq_u32(&u->state) == COEXEC_UNIT_READY &&
            may_run_here(u, xs)) {
            if (p)
                claimed = (p->shared || p->owner_xs == xs || !p->owner_xs) &&
                          coexec__pool_remove_as(p, u, xs);
            else if (!unit_inpool(u) && !(u->rflags & RF_STARTED)) {
                /* Popped out of its pool by the user: ours to run. It needs
                 * a home pool in case it yields or parks: the joiner's. */
                atom_store_rlx_ptr(&u->pool, xs->cur_sched->pools[0]);
                claimed = true;
            }
        }
        if (claimed)
            run_in_place(xs, self, u);
    }
    if (stale)
        deadline = UINT64_MAX; /* only waiting out a finisher */
    int rc = self ? join_wait_ult(u, self, &w, deadline)
                  : join_wait_external(u, &w, deadline);
    if (!stale) {
        *held = w.held;
        return rc;
    }
    if (w.held) /* not ours: its own free must find it done */
        atom_store_rel_uptr(&u->join, JOIN_DONE);
    return COEXEC_EHANDLE;
}

/* ---- public ULT and tasklet calls ------------------------------------- */

/* Makes a unit for pool p (checking the access mode), not yet queued. */
static ALWAYS_INLINE int make_unit(struct coexec_pool_rec *p, int kind, void *fn,
                       void *arg, const coexec_thread_attr_t *attr,
                       bool detached, struct coexec_unit_rec **out)
{
    size_t ss = 0;
    void *ustack = NULL;
    if (attr) {
        ss = attr->stack_size;
        ustack = attr->stack;
        if (ustack && (((uintptr_t)ustack & 15) || ss < COEXEC__USER_MIN_STACK))
            return COEXEC_EINVAL;
        if (ss && (ss < COEXEC__USER_MIN_STACK || ss > COEXEC_MAX_STACK))
            return COEXEC_EINVAL;
    }
    int rc = pool_check(p, true);
    if (rc)
        return rc;
    struct coexec_xstream_rec *xs = xs_self_entry();
    struct coexec_unit_rec *u = coexec__unit_new(xs, kind);
    if (UNLIKELY(!u))
        return COEXEC_ENOMEM;
    if (kind == UNIT_TASKLET) {
        u->fn.tasklet = (coexec_tasklet_fn_t)fn;
    } else {
        u->fn.thread = (coexec_thread_fn_t)fn;
        if (ustack) {
            u->flags |= UF_USER_STACK;
            u->stack = ustack;
            u->stack_size = (uint32_t)(ss & ~(size_t)15);
            canary_set(ustack); /* no guard of ours below it */
        } else if (ss && ss != coexec__g.cfg.stack_size) {
            size_t pg = coexec__g.page_size;
            u->flags |= UF_BIG_STACK;
            u->stack_size = (uint32_t)((ss + pg - 1) & ~(pg - 1));
        } else {
            u->stack_size = (uint32_t)(coexec__g.stack_size - STACK_NODE_SIZE);
        }
    }
    u->arg = arg;
    if (detached)
        u->flags |= UF_DETACHED;
    if (attr && attr->size >= sizeof *attr) {
        if (attr->priority < 0 || attr->priority > (int)UA_PRIO_MASK) {
            coexec__unit_release(xs, u);
            return COEXEC_EINVAL;
        }
        atom_store_rlx_u32(&u->attrs, (uint32_t)attr->priority |
                                          (attr->pinned ? UA_PINNED : 0));
    }
    *out = u;
    return COEXEC_OK;
}

/* Makes a unit and queues it in p. */
static ALWAYS_INLINE int create_unit(struct coexec_pool_rec *p, int kind,
                                     void *fn, void *arg,
                                     const coexec_thread_attr_t *attr,
                                     bool detached,
                                     struct coexec_unit_rec **out)
{
    int rc = make_unit(p, kind, fn, arg, attr, detached, out);
    /* A public call's prologue: no switch since entry, the inline
     * thread-local read is the calling stream. */
    if (LIKELY(rc == COEXEC_OK))
        coexec__pool_push_as(p, *out, PUSH_NEW, xs_self_entry());
    return rc;
}

static int pool_of_xstream(coexec_xstream_t xs, struct coexec_pool_rec **p)
{
    int rc = CHECK_HANDLE(xs);
    if (rc)
        return rc;
    struct coexec_sched_rec *s = atom_load_acq_ptr(&xs.p->sched);
    if (!s || s->npools < 1)
        return COEXEC_ESTATE;
    *p = s->pools[0];
    return COEXEC_OK;
}

COEXEC_API int coexec_thread_attr_init(coexec_thread_attr_t *attr)
{
    if (!attr)
        return COEXEC_EINVAL;
    attr->size = sizeof *attr;
    attr->stack_size = 0;
    attr->stack = NULL;
    attr->priority = 0;
    attr->pinned = 0;
    return COEXEC_OK;
}

COEXEC_API int coexec_thread_create(coexec_pool_t pool, coexec_thread_fn_t fn,
                                    void *arg, const coexec_thread_attr_t *attr,
                                    coexec_thread_t *out)
{
    RT_CHECK();
    if (!fn)
        return COEXEC_EINVAL;
    int rc = CHECK_HANDLE(pool);
    if (rc)
        return rc;
    struct coexec_unit_rec *u;
    rc = create_unit(pool.p, UNIT_ULT, (void *)fn, arg, attr, out == NULL, &u);
    if (rc)
        return rc;
    SET_OUT(out, u);
    return COEXEC_OK;
}

COEXEC_API int coexec_thread_create_on(coexec_xstream_t xs,
                                       coexec_thread_fn_t fn, void *arg,
                                       const coexec_thread_attr_t *attr,
                                       coexec_thread_t *out)
{
    RT_CHECK();
    if (!fn)
        return COEXEC_EINVAL;
    struct coexec_pool_rec *p;
    int rc = pool_of_xstream(xs, &p);
    if (rc)
        return rc;
    struct coexec_unit_rec *u;
    rc = create_unit(p, UNIT_ULT, (void *)fn, arg, attr, out == NULL, &u);
    if (rc)
        return rc;
    SET_OUT(out, u);
    return COEXEC_OK;
}

COEXEC_API int coexec_tasklet_create(coexec_pool_t pool, coexec_tasklet_fn_t fn,
                                     void *arg, coexec_tasklet_t *out)
{
    RT_CHECK();
    if (!fn)
        return COEXEC_EINVAL;
    int rc = CHECK_HANDLE(pool);
    if (rc)
        return rc;
    struct coexec_unit_rec *u;
    rc = create_unit(pool.p, UNIT_TASKLET, (void *)fn, arg, NULL, out == NULL,
                     &u);
    if (rc)
        return rc;
    SET_OUT(out, u);
    return COEXEC_OK;
}

COEXEC_API int coexec_tasklet_create_on(coexec_xstream_t xs,
                                        coexec_tasklet_fn_t fn, void *arg,
                                        coexec_tasklet_t *out)
{
    RT_CHECK();
    if (!fn)
        return COEXEC_EINVAL;
    struct coexec_pool_rec *p;
    int rc = pool_of_xstream(xs, &p);
    if (rc)
        return rc;
    struct coexec_unit_rec *u;
    rc = create_unit(p, UNIT_TASKLET, (void *)fn, arg, NULL, out == NULL, &u);
    if (rc)
        return rc;
    SET_OUT(out, u);
    return COEXEC_OK;
}

static ALWAYS_INLINE int join_common(struct coexec_unit_rec *p, uint64_t gen,
                                     bool tasklet, bool for_free,
                                     uint64_t deadline, bool *held)
{
    RT_CHECK();
    int rc = check_unit(p, gen, tasklet);
    if (rc)
        return rc;
    if (p->kind == UNIT_MAIN) {
        /* The wrong kind of caller first, as for any other unit. */
        struct coexec_xstream_rec *xs = xs_self_entry();
        if (xs && (!xs->cur || xs->cur->kind == UNIT_TASKLET))
            return COEXEC_ECONTEXT;
        return xs && xs->cur == p ? COEXEC_EDEADLK : COEXEC_EPERM;
    }
    return join_unit(p, gen, for_free, deadline, held);
}

static int free_common(struct coexec_unit_rec **pp, uint64_t *gp, bool tasklet)
{
    bool held = false;
    int rc = join_common(*pp, *gp, tasklet, true, UINT64_MAX, &held);
    /* COEXEC_ENOMEM: it ended without running; it is freed all the same. */
    if (rc && rc != COEXEC_ENOMEM)
        return rc;
    if (held)
        coexec__unit_release(coexec__xs_self(), *pp); /* ours alone */
    else if (!unit_release_handle(coexec__xs_self(), *pp, *gp))
        return COEXEC_EHANDLE; /* another free of the same handle won */
    *pp = NULL;
    *gp = 0;
    return rc;
}

COEXEC_API int coexec_thread_join(coexec_thread_t t)
{
    bool held;
    return join_common(t.p, t.gen, false, false, UINT64_MAX, &held);
}

COEXEC_API int coexec_thread_join_timed(coexec_thread_t t, uint64_t timeout_ns)
{
    bool held;
    return join_common(t.p, t.gen, false, false, clock_deadline(timeout_ns),
                       &held);
}

COEXEC_API int coexec_thread_free(coexec_thread_t *t)
{
    if (!t)
        return COEXEC_EINVAL;
    return free_common(&t->p, &t->gen, false);
}

COEXEC_API int coexec_tasklet_join(coexec_tasklet_t k)
{
    bool held;
    return join_common(k.p, k.gen, true, false, UINT64_MAX, &held);
}

COEXEC_API int coexec_tasklet_join_timed(coexec_tasklet_t k,
                                         uint64_t timeout_ns)
{
    bool held;
    return join_common(k.p, k.gen, true, false, clock_deadline(timeout_ns),
                       &held);
}

COEXEC_API int coexec_tasklet_free(coexec_tasklet_t *k)
{
    if (!k)
        return COEXEC_EINVAL;
    return free_common(&k->p, &k->gen, true);
}

int coexec__join_unit(struct coexec_unit_rec *u)
{
    bool held;
    return join_unit(u, atom_load_acq_u64(&u->gen), false, UINT64_MAX, &held);
}

/* ---- stacked schedulers' units -------------------------------------------- */

void coexec__unit_yield_to_sched(struct coexec_xstream_rec *xs,
                                 struct coexec_unit_rec *self)
{
    atom_store_rlx_u32(&self->state, COEXEC_UNIT_READY);
    leave_to(xs, self, NULL, POST_REQUEUE, 0);
}

/* ---- child-first creation, yield_to, migration --------------------------- */

/* self, run in place by its joiner, is about to switch to another unit
 * instead of back to the joiner: the joiner (its context saved since it
 * switched to us) becomes an ordinary ready unit, and waits for us the
 * ordinary way (join_wait_ult) when it runs again. */
static void release_inplace_joiner(struct coexec_unit_rec *self)
{
    if (self->rflags & RF_INPLACE) {
        struct coexec_unit_rec *j = inplace_joiner(self);
        self->rflags &= (uint8_t)~RF_INPLACE;
        coexec__enqueue(j, false);
    }
}

/* A ready unit still queued in its home pool, taken out for the calling
 * stream xs to run now (as a join claims one): true if we got it. */
static bool claim_queued(struct coexec_xstream_rec *xs, struct coexec_unit_rec *u,
                         bool started_ok)
{
    struct coexec_pool_rec *p = atom_load_acq_ptr(&u->pool);
    if (!p || atom_load_acq_u32(&u->state) != COEXEC_UNIT_READY ||
        !pool_may_take(u, xs))
        return false;
    if (!(p->shared || p->owner_xs == xs || !p->owner_xs))
        return false;
    if (started_ok) {
        /* Any queued unit, started or not (yield_to). */
        if (p->impl) {
            return false;
        }
        bool ok;
        if (p->shared)
            pool_lock(p);
        ok = unit_inpool(u) && unit_pool(u) == p;
        if (ok)
            list_unlink(p, u);
        if (p->shared)
            pool_unlock(p);
        return ok;
    }
    return coexec__pool_remove(p, u);
}

COEXEC_API int coexec_yield_to(coexec_thread_t t)
{
    int err;
    struct coexec_xstream_rec *xs;
    struct coexec_unit_rec *self = self_ult(&xs, &err);
    if (!self)
        return err;
    int rc = check_unit(t.p, t.gen, false);
    if (rc)
        return rc;
    struct coexec_unit_rec *u = t.p;
    if (u == self)
        return COEXEC_EDEADLK;
    /* Bound elsewhere (the primary's main ULT, from another stream) is
     * EPERM; the main ULT is never switched to directly. */
    if (!pool_may_take(u, xs))
        return COEXEC_EPERM;
    if (u->kind != UNIT_ULT)
        return COEXEC_ESTATE;
    if (!claim_queued(xs, u, true))
        return COEXEC_ESTATE;
    if (UNLIKELY(!(u->rflags & RF_STARTED)) && UNLIKELY(!ult_prepare(xs, u))) {
        unit_fail_nostack(xs, u);
        return COEXEC_ENOMEM;
    }
    release_inplace_joiner(self);
    atom_store_rlx_u32(&self->state, COEXEC_UNIT_READY);
    leave_to(xs, self, u, POST_REQUEUE, 0);
    return COEXEC_OK;
}

COEXEC_API int coexec_thread_create_child_first(coexec_pool_t pool,
                                                coexec_thread_fn_t fn, void *arg,
                                                const coexec_thread_attr_t *attr,
                                                coexec_thread_t *out)
{
    int err;
    struct coexec_xstream_rec *xs;
    struct coexec_unit_rec *self = self_ult(&xs, &err);
    if (!self)
        return err;
    if (!fn)
        return COEXEC_EINVAL;
    if (self->flags & UF_NOSTEAL)
        return COEXEC_ECONTEXT;
    int rc = CHECK_HANDLE(pool);
    if (rc)
        return rc;
    struct coexec_unit_rec *u;
    rc = make_unit(pool.p, UNIT_ULT, (void *)fn, arg, attr, out == NULL, &u);
    if (rc)
        return rc;
    atom_store_rlx_ptr(&u->pool, pool.p);
    bool here = pool_may_take(u, xs);
    if (here && !ult_prepare(xs, u)) {
        coexec__unit_release(xs, u);
        return COEXEC_ENOMEM;
    }
    if (!here) {
        coexec__enqueue(u, false); /* it runs later instead */
    } else {
        SET_OUT(out, u);
        release_inplace_joiner(self);
        atom_store_rlx_u32(&self->state, COEXEC_UNIT_READY);
        /* We go back to our pool as a new unit would. */
        leave_to(xs, self, u, POST_REQUEUE_NEW, 0);
        return COEXEC_OK;
    }
    SET_OUT(out, u);
    return COEXEC_OK;
}

static bool unit_movable(struct coexec_unit_rec *u)
{
    return !(u->flags & (UF_NOSTEAL | UF_SCHED)) &&
           !(atom_load_rlx_u32(&u->attrs) & UA_PINNED);
}

/* Moves t (a ULT) so that its home becomes `to` (or, for a stream, that
 * stream's migration pool; bound_xs is then non-NULL). */
static int migrate(coexec_thread_t t, struct coexec_pool_rec *to,
                   struct coexec_xstream_rec *bound)
{
    int rc = check_unit(t.p, t.gen, false);
    if (rc)
        return rc;
    struct coexec_unit_rec *u = t.p;
    if (!unit_movable(u))
        return COEXEC_EPERM;
    if (atom_load_acq_u32(&u->state) == COEXEC_UNIT_TERMINATED ||
        join_finished(atom_load_acq_uptr(&u->join)))
        return COEXEC_ESTATE;
    if ((rc = pool_check(to, true)))
        return rc;
    struct coexec_xstream_rec *xs = xs_self_entry();
    uintptr_t req = bound ? (uintptr_t)bound | DEST_MOVE | DEST_BOUND
                          : (uintptr_t)to | DEST_MOVE;
    if (xs && xs->cur == u) {
        /* Ourselves: the request applies as we yield. */
        atom_store_rel_uptr(&u->dest, req);
        xs->direct_yields = 0;
        atom_store_rlx_u32(&u->state, COEXEC_UNIT_READY);
        leave_to(xs, u, leave_target(u), POST_REQUEUE, 0);
        return COEXEC_OK;
    }
    /* Queued somewhere we may take it from: move it now. */
    if (xs && claim_queued(xs, u, true)) {
        atom_store_rel_uptr(&u->dest, req);
        coexec__enqueue(u, false);
        return COEXEC_OK;
    }
    if (!xs && atom_load_acq_u32(&u->state) == COEXEC_UNIT_READY) {
        struct coexec_pool_rec *p = atom_load_acq_ptr(&u->pool);
        if (p && p->shared && !p->impl) {
            pool_lock(p);
            bool ok = unit_inpool(u) && unit_pool(u) == p;
            if (ok)
                list_unlink(p, u);
            pool_unlock(p);
            if (ok) {
                atom_store_rel_uptr(&u->dest, req);
                coexec__enqueue(u, false);
                return COEXEC_OK;
            }
        }
    }
    /* Running or parked (or queued where only its owner may touch it):
     * it moves when it next goes back to a pool. */
    atom_store_rel_uptr(&u->dest, req);
    return COEXEC_OK;
}

COEXEC_API int coexec_thread_migrate_to(coexec_thread_t t, coexec_pool_t pool)
{
    RT_CHECK();
    int rc = CHECK_HANDLE(pool);
    if (rc)
        return rc;
    return migrate(t, pool.p, NULL);
}

COEXEC_API int coexec_thread_migrate_to_xstream(coexec_thread_t t,
                                                coexec_xstream_t xs)
{
    RT_CHECK();
    int rc = CHECK_HANDLE(xs);
    if (rc)
        return rc;
    struct coexec_xstream_rec *x = xs.p;
    if (x->joined || atom_load_acq_u32(&x->stop) || !atom_load_acq_ptr(&x->sched))
        return COEXEC_ESTATE;
    return migrate(t, coexec__migr_pool(x), x);
}
