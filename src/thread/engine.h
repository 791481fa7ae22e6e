/*
 * src/thread/engine.h: the unit engine's core, inline, shared by its files
 * (run.c: running, finishing, waking, yielding; join.c: creating and
 * joining; move.c: yield_to, child-first, migration; thread.c: the cold
 * calls): releasing a descriptor, giving a ULT its stack, entering and
 * leaving a unit, the calling unit, handle checks. The hot paths inline
 * all of it, so splitting the engine into files costs no call.
 */
#ifndef COEXEC_THREAD_ENGINE_H
#define COEXEC_THREAD_ENGINE_H

#include "base/global.h"
#include "base/valgrind.h"
#include "mem/cache.h"
#include "mem/guard.h"
#include "thread/switch.h"
#include "thread/thread.h"
#include "thread/tool.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

/* Out of line, in run.c. */
void coexec__ult_entry(void *arg); /* a ULT's first frame */
void coexec__dest_arrived(struct coexec_xstream_rec *xs,
                          struct coexec_unit_rec *u);
/* u never started and no stack can be had for it: it ends unrun. */
void coexec__unit_fail_nostack(struct coexec_xstream_rec *xs,
                               struct coexec_unit_rec *u);
/* Tasklet u returned PENDING on stream xs: it waits for its wake. */
void coexec__tasklet_pending(struct coexec_xstream_rec *xs,
                             struct coexec_unit_rec *u);
/* Finishing u (TERMINATED), whose join word names a registered joiner:
 * wakes it and hands u over to it. */
void coexec__unit_finish_joined(struct coexec_unit_rec *u);
/* Parks the calling ULT u until woken (at once if a wake is pending). */
void coexec__park_self(struct coexec_xstream_rec *xs, struct coexec_unit_rec *u);


/* A tasklet's poll context (coexec_poll_t): the tasklet polled. */
struct coexec_poll {
    struct coexec_unit_rec *u;
};

/* Calls tasklet u's function once on stream xs, where u is current: what
 * the scheduler's run (coexec__run_tasklet_unit) and a joiner's run in place
 * share. The caller ends or parks u according to the result. */
static ALWAYS_INLINE coexec_poll_status_t
tasklet_call(struct coexec_xstream_rec *xs, struct coexec_unit_rec *u)
{
    struct coexec_poll cx = {u};
    stat_add(&xs->count[XC_TASKLETS_RUN], 1);
    TOOL_SWITCH(xs, NULL, -1, u);
    u->rflags |= RF_STARTED;
    coexec_poll_status_t r = u->fn.tasklet(&cx, u->arg);
    TOOL_SWITCH(xs, u,
                r == COEXEC_READY ? COEXEC_TOOL_UNIT_FINISH
                                  : COEXEC_TOOL_UNIT_BLOCK,
                NULL);
    return r;
}

/* The calling ULT and its stream, or NULL with *err: COEXEC_ENOTINIT, or
 * COEXEC_ECONTEXT (a tasklet, a scheduler loop, an external thread). */
static ALWAYS_INLINE struct coexec_unit_rec *self_ult(struct coexec_xstream_rec **xsp,
                                                     int *err)
{
    if (UNLIKELY(!rt_on())) {
        *err = COEXEC_ENOTINIT;
        return NULL;
    }
    struct coexec_xstream_rec *xs = xs_self_entry();
    struct coexec_unit_rec *u = xs ? xs->cur : NULL;
    if (UNLIKELY(!u || u->kind == UNIT_TASKLET)) {
        *err = COEXEC_ECONTEXT;
        return NULL;
    }
    *xsp = xs;
    return u;
}

/* Stores unit u as the handle *out (if out). */
#define SET_OUT(out, u)                                                        \
    do {                                                                       \
        if (out) {                                                             \
            (out)->p = (u);                                                    \
            (out)->gen = atom_load_rlx_u64(&(u)->gen);                         \
        }                                                                      \
    } while (0)

/* Handle check plus the kind the handle type promises. */
static inline int check_unit(struct coexec_unit_rec *p, uint64_t gen, bool tasklet)
{
    struct {
        struct coexec_unit_rec *p;
        uint64_t gen;
    } h = {p, gen};
    int rc = CHECK_HANDLE(h);
    if (rc)
        return rc;
    if ((RLX_GET(p->kind) == UNIT_TASKLET) != tasklet)
        return COEXEC_EHANDLE;
    return COEXEC_OK;
}

/* ---- descriptors, stacks, switches ------------------------------------- */

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

/* Gives u, made on stream xs (NULL: an external thread), the next id: of
 * the stream's block, with no shared atomic but once per 4,096 units. */
static ALWAYS_INLINE void unit_new_id(struct coexec_xstream_rec *xs,
                                      struct coexec_unit_rec *u)
{
    if (UNLIKELY(!xs)) {
        RLX_SET(u->id, atom_fadd_rlx_u64(&coexec__g.next_unit_id, 1));
        return;
    }
    if (UNLIKELY(xs->id_next == xs->id_end)) {
        xs->id_next = atom_fadd_rlx_u64(&coexec__g.next_unit_id, 4096);
        xs->id_end = xs->id_next + 4096;
    }
    RLX_SET(u->id, xs->id_next++);
}

/* Gives u, made on stream xs, its id and counts it live there: ids and
 * the leak count stay per stream. */
static ALWAYS_INLINE void unit_count_new(struct coexec_xstream_rec *xs,
                                         struct coexec_unit_rec *u)
{
    unit_new_id(xs, u);
    xs->live_units++;
}

/* The fields of a new incarnation of u, of kind: unqueued, ready, never
 * run, with only the flags in keep left (the caller sets its id, function
 * and argument; the generation and the wake word's tag are the caller's
 * to have set). Kind and flags are written only when they change: a
 * holder of a stale handle may read them before its generation check
 * fails (a revive's racing free). */
static ALWAYS_INLINE void unit_reset(struct coexec_unit_rec *u, int kind,
                                     uint8_t keep)
{
    atom_fence_rel(); /* before any write: see HANDLE_STILL */
    u->next = u->prev = NULL;
    atom_store_rlx_ptr(&u->pool, NULL);
    atom_store_rlx_u32(&u->state, COEXEC_UNIT_READY);
    /* Release: a stale joiner whose compare-and-swap reads this 0 also
     * sees the new generation (join_unit re-checks it). */
    atom_store_rel_uptr(&u->join, 0);
    if (u->kind != kind)
        RLX_SET(u->kind, kind);
    unit_inpool_set(u, 0);
    if (u->flags & ~keep)
        RLX_SET(u->flags, u->flags & keep);
    __atomic_store_n(&u->rflags, 0, __ATOMIC_RELAXED); /* join_result */
    u->sp = NULL;
    RLX_SET(u->stack, NULL);
    u->keys = NULL;
    u->bound_rank = -1;
    __atomic_store_n(&u->last_rank, (int16_t)-1, __ATOMIC_RELAXED);
    atom_store_rlx_u32(&u->attrs, 0);
    atom_store_rlx_uptr(&u->dest, 0);
    u->tsan_fiber = NULL;
}

/* A fresh descriptor of kind for a unit made on stream xs (NULL: an
 * external thread), or NULL; inlined into the creation calls
 * (coexec__unit_new for the others). */
static ALWAYS_INLINE struct coexec_unit_rec *
unit_new(struct coexec_xstream_rec *xs, int kind)
{
    struct coexec_unit_rec *u = coexec__unit_alloc(xs ? &xs->ucache : NULL);
    if (UNLIKELY(!u))
        return NULL;
    /* gen was bumped when the descriptor was freed (or set when carved),
     * and the wake word holds its tag (unit_recycle, desc_take). */
    unit_reset(u, kind, 0);
    if (LIKELY(xs)) {
        unit_count_new(xs, u);
    } else {
        unit_new_id(NULL, u);
        atom_fadd_rlx_u64(&coexec__g.live_units, 1);
    }
    return u;
}

/* Ends u's incarnation and recycles its descriptor; the caller is the
 * only one left touching u (coexec__unit_release out of line). */
static ALWAYS_INLINE void unit_release(struct coexec_xstream_rec *xs,
                                       struct coexec_unit_rec *u)
{
    /* Release: a handle check that sees the new generation must not see
     * this incarnation's fields any more. */
    uint64_t gen = gen_next(atom_load_rlx_u64(&u->gen));
    atom_store_rel_u64(&u->gen, gen);
    unit_recycle(xs, u, gen);
}

static inline size_t unit_stack_bytes(struct coexec_unit_rec *u)
{
    return u->stack_size;
}

static inline struct fiber_info unit_fiber(struct coexec_unit_rec *u)
{
    struct fiber_info f = {u->stack, unit_stack_bytes(u), u->tsan_fiber};
    return f;
}

static inline struct fiber_info sched_fiber(struct coexec_xstream_rec *xs)
{
    struct fiber_info f = {xs->sched_stack_lo, xs->sched_stack_size,
                           xs->sched_fiber};
    return f;
}

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
        if (!u->stack) {
            RLX_SET(u->stack, coexec__stack_map(u->stack_size));
            if (!u->stack)
                return false;
        }
        usable = u->stack_size;
        vg_user_stack_start(u->stack, usable);
    } else {
        RLX_SET(u->stack,
                coexec__stack_alloc(&xs->scache, coexec__g.stack_size));
        if (!u->stack)
            return false;
        usable = coexec__g.stack_size - STACK_NODE_SIZE;
        RLX_SET(u->stack_size, usable);
    }
    u->rflags |= RF_STARTED;
    san_stack_reuse(u->stack, usable);
    u->tsan_fiber = tsan_fiber_new();
    return true;
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
        start_ctx(save, &fi, coexec__ult_entry, to);
    }
}

/* The wait record of the joiner running u in place (RF_INPLACE): the one
 * its join word names, which nobody else may change while the flag is
 * set. */
static ALWAYS_INLINE struct join_waiter *
inplace_waiter(struct coexec_unit_rec *u)
{
    return (struct join_waiter *)atom_load_rlx_uptr(&u->join);
}

/* ... and that joiner. */
static ALWAYS_INLINE struct coexec_unit_rec *
inplace_joiner(struct coexec_unit_rec *u)
{
    return inplace_waiter(u)->ult;
}

static ALWAYS_INLINE void check_arrival(struct coexec_xstream_rec *xs,
                                        struct coexec_unit_rec *u)
{
    if (UNLIKELY(atom_load_rlx_uptr(&u->dest) != 0))
        coexec__dest_arrived(xs, u);
}

/* u starts or resumes on xs: the migration check above, and u's last
 * stream (coexec_unit_get_last_rank). A 2-byte store into the descriptor
 * line the switch writes anyway (sp). */
static ALWAYS_INLINE void unit_arrive(struct coexec_xstream_rec *xs,
                                      struct coexec_unit_rec *u)
{
    check_arrival(xs, u);
    __atomic_store_n(&u->last_rank, (int16_t)xs_rank_of(xs), __ATOMIC_RELAXED);
}

/* A parked unit's waker-page key (in u->prev) names a slot of the stream
 * that gave it, in that stream's incarnation: the slot's mailbox key in
 * the low 16 bits, the low bits of the stream record's generation above,
 * and the record itself in u->next (unused while the unit is parked). A
 * key is good only for that stream: after its home pool changed owners,
 * or the record serves a new stream, the wake goes through the inbox. */
#define PARK_KEY_BITS 16
_Static_assert(WPAGES * 64 < (1u << PARK_KEY_BITS), "a slot key fits");

static ALWAYS_INLINE uintptr_t park_key_take(struct coexec_xstream_rec *xs,
                                             struct coexec_unit_rec *u)
{
    uintptr_t slot = coexec__mb_slot_take(&xs->mb, u);
    if (!slot)
        return 0;
    u->next = (struct coexec_unit_rec *)(void *)xs;
    return ((uintptr_t)atom_load_rlx_u64(&xs->gen) << PARK_KEY_BITS) | slot;
}

/* The mailbox key of u's parking slot on xs, or 0 (none, or not xs's). */
static ALWAYS_INLINE uintptr_t park_key_slot(const struct coexec_unit_rec *u,
                                             struct coexec_xstream_rec *xs)
{
    uintptr_t key = (uintptr_t)u->prev;
    if (!key || (void *)u->next != (void *)xs ||
        key >> PARK_KEY_BITS !=
            ((uintptr_t)atom_load_rlx_u64(&xs->gen) <<
             PARK_KEY_BITS) >> PARK_KEY_BITS)
        return 0;
    return key & (((uintptr_t)1 << PARK_KEY_BITS) - 1);
}

/* Counts a switch of xs's thread to `to`: a unit resumed or started, or
 * (NULL) the scheduler. */
static ALWAYS_INLINE void count_switch(struct coexec_xstream_rec *xs,
                                       struct coexec_unit_rec *to)
{
    /* One add per switch: units run and switches are sums of these. */
    if (to)
        stat_add(&xs->count[XC_ULT_RUNS], 1);
    else
        stat_add(&xs->count[XC_SCHED_SWITCHES], 1);
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
    TOOL_SWITCH(xs, self,
                op == POST_FINISH                   ? COEXEC_TOOL_UNIT_FINISH
                : op == POST_PARK || op == POST_NONE ? COEXEC_TOOL_UNIT_BLOCK
                                                     : COEXEC_TOOL_UNIT_YIELD,
                to);
    count_switch(xs, to);
    /* Leaving for anything but a child run in place (POST_NONE), our own
     * starter gets resumed by a switch, not by our return. */
    if (op != POST_NONE)
        self->rflags &= (uint8_t)~RF_RETURN;
    void *dead_sp; /* a finished context is never resumed */
    void **save = final ? &dead_sp : &self->sp;
    if (to) {
        unit_arrive(xs, to);
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
static inline struct coexec_unit_rec *leave_target(struct coexec_unit_rec *self)
{
    if (self->rflags & RF_INPLACE) {
        self->rflags &= (uint8_t)~RF_INPLACE;
        return inplace_joiner(self);
    }
    return NULL;
}

/* The attr->size from which a caller's attributes include field f. */
#define ATTR_HAS(f)                                                            \
    (offsetof(coexec_thread_attr_t, f) + sizeof(((coexec_thread_attr_t *)0)->f))

/* Makes a unit for pool p (checking the access mode), not yet queued. */
static ALWAYS_INLINE int make_unit(struct coexec_pool_rec *p, int kind, void *fn,
                       void *arg, const coexec_thread_attr_t *attr,
                       bool detached, struct coexec_unit_rec **out)
{
    size_t ss = 0;
    void *ustack = NULL;
    coexec_data_init_fn init = NULL;
    if (attr) {
        ss = attr->stack_size;
        ustack = attr->stack;
        if (attr->size >= ATTR_HAS(data_ctx) && attr->data_init) {
            if (!coexec__g.unit_data)
                return COEXEC_ENOENT;
            init = attr->data_init;
        }
        if (ustack && (((uintptr_t)ustack & 15) || ss < COEXEC__USER_MIN_STACK))
            return COEXEC_EINVAL;
        if (ss && (ss < COEXEC__USER_MIN_STACK || ss > COEXEC_MAX_STACK))
            return COEXEC_EINVAL;
    }
    int rc = pool_check(p, true);
    if (rc)
        return rc;
    struct coexec_xstream_rec *xs = xs_self_entry();
    struct coexec_unit_rec *u = unit_new(xs, kind);
    if (UNLIKELY(!u))
        return COEXEC_ENOMEM;
    if (kind == UNIT_TASKLET) {
        u->fn.tasklet = (coexec_tasklet_fn_t)fn;
    } else {
        u->fn.thread = (coexec_thread_fn_t)fn;
        if (ustack) {
            RLX_SET(u->flags, u->flags | UF_USER_STACK);
            RLX_SET(u->stack, ustack);
            RLX_SET(u->stack_size, ss & ~(size_t)15);
            canary_set(ustack); /* no guard of ours below it */
        } else if (ss && ss != coexec__g.cfg.stack_size) {
            size_t pg = coexec__g.page_size;
            RLX_SET(u->flags, u->flags | UF_BIG_STACK);
            RLX_SET(u->stack_size, (ss + pg - 1) & ~(pg - 1));
        } else {
            RLX_SET(u->stack_size, coexec__g.stack_size - STACK_NODE_SIZE);
        }
    }
    RLX_SET(u->arg, arg);
    if (detached)
        RLX_SET(u->flags, u->flags | UF_DETACHED);
    /* Fields past an older caller's attr->size keep their defaults. */
    if (attr && attr->size >= ATTR_HAS(pinned)) {
        if (attr->priority < 0 || attr->priority > (int)UA_PRIO_MASK) {
            coexec__unit_release(xs, u);
            return COEXEC_EINVAL;
        }
        atom_store_rlx_u32(&u->attrs, (uint32_t)attr->priority |
                                          (attr->pinned ? UA_PINNED : 0));
    }
    if (UNLIKELY(attr && attr->size >= ATTR_HAS(name) && attr->name)) {
        int rc = coexec__unit_name_set(u, attr->name);
        if (rc) {
            coexec__unit_release(xs, u);
            return rc;
        }
    }
    if (init)
        init(unit_data(u), attr->data_ctx);
    *out = u;
    return COEXEC_OK;
}

#endif /* COEXEC_THREAD_ENGINE_H */
