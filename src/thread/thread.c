/*
 * src/thread/thread.c: the units' cold public calls: wakers, queries,
 * migration, unit attributes, and the units stacked schedulers run in.
 * The engine they rest on (switches, parking and waking, joining,
 * creating, yielding) is src/thread/run.c.
 */
#include <string.h>

#include "base/global.h"
#include "base/valgrind.h"
#include "mem/cache.h"
#include "pool/pool.h"
#include "sched/sched.h"
#include "thread/engine.h"
#include "thread/thread.h"
#include "thread/unit.h"
#include "xstream/xstream.h"


/* What the main ULT waits on (thread/unit.h, unit_wait_note). */
struct unit_wait_note coexec__main_wait_note;

/* ---- wakers ---------------------------------------------------------------- */

COEXEC_API int coexec_self_waker(coexec_waker_t *out)
{
    if (!out)
        return COEXEC_EINVAL;
    int err;
    struct coexec_xstream_rec *xs;
    struct coexec_unit_rec *u = self_ult(&xs, &err);
    if (!u)
        return err;
    out->p = u;
    out->gen = atom_load_rlx_u64(&u->gen);
    return COEXEC_OK;
}

COEXEC_API int coexec_poll_waker(coexec_poll_t *cx, coexec_waker_t *out)
{
    if (!cx || !out || !cx->u)
        return COEXEC_EINVAL;
    out->p = cx->u;
    out->gen = atom_load_rlx_u64(&cx->u->gen);
    return COEXEC_OK;
}

COEXEC_API int coexec_waker_wake(coexec_waker_t w)
{
    if (!w.p)
        return COEXEC_EINVAL;
    RT_CHECK();
    /* A waker of an earlier init may point to memory that is gone; within
     * one init descriptors are type-stable and the tag decides. */
    if (handle_epoch_ok(w.gen))
        coexec__wake_tagged(w.p, wake_tag_of(w.gen));
    return COEXEC_OK;
}

struct coexec_unit_rec *coexec__poll_unit(coexec_poll_t *cx)
{
    return cx ? cx->u : NULL;
}


/* ---- queries ---------------------------------------------------------------- */

COEXEC_API int coexec_thread_self(coexec_thread_t *out)
{
    if (!out)
        return COEXEC_EINVAL;
    RT_CHECK();
    struct coexec_xstream_rec *xs = xs_self_entry();
    struct coexec_unit_rec *u = xs ? xs->cur : NULL;
    if (!u || u->kind == UNIT_TASKLET)
        return COEXEC_ECONTEXT;
    SET_OUT(out, u);
    return COEXEC_OK;
}

COEXEC_API int coexec_self_id(uint64_t *id)
{
    if (!id)
        return COEXEC_EINVAL;
    RT_CHECK();
    struct coexec_xstream_rec *xs = xs_self_entry();
    struct coexec_unit_rec *u = xs ? xs->cur : NULL;
    if (!u)
        return COEXEC_ECONTEXT;
    *id = u->id;
    return COEXEC_OK;
}

COEXEC_API int coexec_thread_get_id(coexec_thread_t t, uint64_t *id)
{
    if (!id)
        return COEXEC_EINVAL;
    RT_CHECK();
    int rc = check_unit(t.p, t.gen, false);
    if (rc)
        return rc;
    uint64_t v = RLX_GET(t.p->id);
    if (!HANDLE_STILL(t))
        return COEXEC_EHANDLE;
    *id = v;
    return COEXEC_OK;
}

COEXEC_API int coexec_thread_get_stack(coexec_thread_t t,
                                       coexec_stack_info_t *info)
{
    if (!info)
        return COEXEC_EINVAL;
    RT_CHECK();
    int rc = check_unit(t.p, t.gen, false);
    if (rc)
        return rc;
    struct coexec_unit_rec *u = t.p;
    /* The runner writes stack (first run, finish) and stack_size (first
     * run of a cached-size stack): a moment's values from elsewhere. */
    coexec_stack_info_t si;
    void *stack = __atomic_load_n(&u->stack, __ATOMIC_RELAXED);
    si.size = __atomic_load_n(&u->stack_size, __ATOMIC_RELAXED);
    si.user_stack = (RLX_GET(u->flags) & UF_USER_STACK) != 0;
    si.guard_size = RLX_GET(u->kind) == UNIT_MAIN || si.user_stack
                        ? 0
                        : coexec__g.guard_size;
    if (!si.user_stack && join_finished(atom_load_acq_uptr(&u->join)))
        stack = NULL; /* given back, or about to be */
    si.base = stack;
    if (!HANDLE_STILL(t))
        return COEXEC_EHANDLE;
    *info = si;
    return COEXEC_OK;
}

static int get_state(struct coexec_unit_rec *p, uint64_t gen, bool tasklet,
                     coexec_unit_state_t *s)
{
    if (!s)
        return COEXEC_EINVAL;
    RT_CHECK();
    int rc = check_unit(p, gen, tasklet);
    if (rc)
        return rc;
    coexec_unit_state_t v =
        join_finished(atom_load_acq_uptr(&p->join))
            ? COEXEC_UNIT_TERMINATED
            : (coexec_unit_state_t)atom_load_acq_u32(&p->state);
    if (!handle_still(&p->gen, gen))
        return COEXEC_EHANDLE;
    *s = v;
    return COEXEC_OK;
}

COEXEC_API int coexec_thread_get_state(coexec_thread_t t, coexec_unit_state_t *s)
{
    return get_state(t.p, t.gen, false, s);
}

COEXEC_API int coexec_tasklet_get_state(coexec_tasklet_t k,
                                        coexec_unit_state_t *s)
{
    return get_state(k.p, k.gen, true, s);
}

COEXEC_API int coexec_thread_resume(coexec_thread_t t)
{
    RT_CHECK();
    int rc = check_unit(t.p, t.gen, false);
    if (rc)
        return rc;
    if (atom_load_acq_u32(&t.p->state) == COEXEC_UNIT_TERMINATED)
        return COEXEC_ESTATE;
    coexec__wake_tagged(t.p, wake_tag_of(t.gen));
    return COEXEC_OK;
}

COEXEC_API coexec_unit_t coexec_thread_unit(coexec_thread_t t)
{
    coexec_unit_t u = {t.p, t.gen};
    return u;
}

COEXEC_API coexec_unit_t coexec_tasklet_unit(coexec_tasklet_t k)
{
    coexec_unit_t u = {k.p, k.gen};
    return u;
}


/* ---- stacked schedulers' units -------------------------------------------- */

int coexec__sched_unit_new(struct coexec_sched_rec *s, size_t stack_size,
                           coexec_thread_fn_t fn, struct coexec_unit_rec **out)
{
    struct coexec_unit_rec *u = coexec__unit_new(xs_self_entry(), UNIT_ULT);
    if (UNLIKELY(!u))
        return COEXEC_ENOMEM;
    u->fn.thread = fn;
    RLX_SET(u->arg, s);
    RLX_SET(u->flags, UF_DETACHED | UF_SCHED | UF_BIG_STACK);
    size_t pg = coexec__g.page_size;
    RLX_SET(u->stack_size, (stack_size + pg - 1) & ~(pg - 1));
    /* Mapped now, so that a level that cannot have one is refused here
     * rather than failing once queued. */
    RLX_SET(u->stack, coexec__stack_map(u->stack_size));
    if (UNLIKELY(!u->stack)) {
        coexec__unit_release(xs_self_entry(), u);
        return COEXEC_ENOMEM;
    }
    /* A scheduler level is not work to balance: thieves leave it alone. */
    atom_store_rlx_u32(&u->attrs, UA_PINNED);
    *out = u;
    return COEXEC_OK;
}

struct coexec_pool_rec *coexec__migr_pool(struct coexec_xstream_rec *xs)
{
    struct coexec_sched_rec *s = atom_load_acq_ptr(&xs->sched);
    if (s->has_ops && s->ops.get_migr_pool) {
        coexec_sched_t h = {s, atom_load_rlx_u64(&s->gen)};
        coexec_pool_t p = s->ops.get_migr_pool(h, s->ustate);
        if (p.p && CHECK_HANDLE(p) == 0)
            return p.p;
    }
    return s->pools[0];
}


/* ---- unit attributes ------------------------------------------------------ */

static int unit_handle(coexec_unit_t unit)
{
    RT_CHECK();
    return CHECK_HANDLE(unit);
}

COEXEC_API int coexec_unit_set_pinned(coexec_unit_t unit, int pinned)
{
    int rc = unit_handle(unit);
    if (rc)
        return rc;
    if (pinned)
        atom_for_rlx_u32(&unit.p->attrs, UA_PINNED);
    else if (unit.p->flags & UF_SCHED)
        return COEXEC_EPERM; /* its levels live on the stream it runs on */
    else
        atom_fand_rlx_u32(&unit.p->attrs, ~UA_PINNED);
    return COEXEC_OK;
}

COEXEC_API int coexec_unit_get_pinned(coexec_unit_t unit, int *pinned)
{
    if (!pinned)
        return COEXEC_EINVAL;
    int rc = unit_handle(unit);
    if (rc)
        return rc;
    uint32_t a = atom_load_rlx_u32(&unit.p->attrs);
    if (!HANDLE_STILL(unit))
        return COEXEC_EHANDLE;
    *pinned = (a & UA_PINNED) != 0;
    return COEXEC_OK;
}

COEXEC_API int coexec_unit_set_priority(coexec_unit_t unit, int priority)
{
    if (priority < 0 || priority > (int)UA_PRIO_MASK)
        return COEXEC_EINVAL;
    int rc = unit_handle(unit);
    if (rc)
        return rc;
    uint32_t a = atom_load_rlx_u32(&unit.p->attrs);
    while (!atom_cas_rlx_u32(&unit.p->attrs, &a,
                             (a & ~UA_PRIO_MASK) | (uint32_t)priority))
        ;
    return COEXEC_OK;
}

COEXEC_API int coexec_unit_get_priority(coexec_unit_t unit, int *priority)
{
    if (!priority)
        return COEXEC_EINVAL;
    int rc = unit_handle(unit);
    if (rc)
        return rc;
    int v = (int)unit_prio(unit.p);
    if (!HANDLE_STILL(unit))
        return COEXEC_EHANDLE;
    *priority = v;
    return COEXEC_OK;
}

COEXEC_API int coexec_unit_get_arg(coexec_unit_t unit, void **arg)
{
    if (!arg)
        return COEXEC_EINVAL;
    int rc = unit_handle(unit);
    if (rc)
        return rc;
    /* A main ULT has no argument; a scheduler's unit has the runtime's
     * record, which is nobody's business (coexec_unit_get_sched). */
    void *v = RLX_GET(unit.p->kind) == UNIT_MAIN ||
                      (RLX_GET(unit.p->flags) & UF_SCHED)
                  ? NULL
                  : RLX_GET(unit.p->arg);
    if (!HANDLE_STILL(unit))
        return COEXEC_EHANDLE;
    *arg = v;
    return COEXEC_OK;
}

/* The data area of u, a live unit, in *data: ENOENT when there is none for
 * the program (no area configured, or a scheduler's unit). */
static int unit_data_of(struct coexec_unit_rec *u, void **data)
{
    if (!coexec__g.unit_data || (RLX_GET(u->flags) & UF_SCHED))
        return COEXEC_ENOENT;
    *data = unit_data(u);
    return COEXEC_OK;
}

COEXEC_API int coexec_unit_get_data(coexec_unit_t unit, void **data)
{
    if (!data)
        return COEXEC_EINVAL;
    *data = NULL;
    int rc = unit_handle(unit);
    if (rc)
        return rc;
    void *v = NULL;
    rc = unit_data_of(unit.p, &v);
    if (!HANDLE_STILL(unit))
        return COEXEC_EHANDLE;
    *data = v;
    return rc;
}

COEXEC_API int coexec_self_get_data(void **data)
{
    if (!data)
        return COEXEC_EINVAL;
    *data = NULL;
    RT_CHECK();
    struct coexec_xstream_rec *xs = xs_self_entry();
    struct coexec_unit_rec *u = xs ? xs->cur : NULL;
    if (!u || (u->flags & UF_SCHED))
        return COEXEC_ECONTEXT; /* an external thread or a scheduler */
    return unit_data_of(u, data);
}

COEXEC_API int coexec_unit_get_id(coexec_unit_t unit, uint64_t *id)
{
    if (!id)
        return COEXEC_EINVAL;
    int rc = unit_handle(unit);
    if (rc)
        return rc;
    uint64_t v = RLX_GET(unit.p->id);
    if (!HANDLE_STILL(unit))
        return COEXEC_EHANDLE;
    *id = v;
    return COEXEC_OK;
}

COEXEC_API int coexec_unit_get_last_rank(coexec_unit_t unit, int *rank)
{
    if (!rank)
        return COEXEC_EINVAL;
    int rc = unit_handle(unit);
    if (rc)
        return rc;
    int v = __atomic_load_n(&unit.p->last_rank, __ATOMIC_RELAXED);
    if (!HANDLE_STILL(unit))
        return COEXEC_EHANDLE;
    *rank = v;
    return v < 0 ? COEXEC_ESTATE : COEXEC_OK;
}

COEXEC_API int coexec_unit_is_thread(coexec_unit_t unit, int *is_thread)
{
    if (!is_thread)
        return COEXEC_EINVAL;
    int rc = unit_handle(unit);
    if (rc)
        return rc;
    int v = RLX_GET(unit.p->kind) != UNIT_TASKLET;
    if (!HANDLE_STILL(unit))
        return COEXEC_EHANDLE;
    *is_thread = v;
    return COEXEC_OK;
}
