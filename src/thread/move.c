/*
 * src/thread/move.c: a unit handing the CPU to a chosen one (yield_to,
 * child-first creation) and migration between pools and streams.
 */

#include "base/global.h"
#include "pool/pool.h"
#include "thread/engine.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

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

/* A ready unit still queued in its home pool, started or not, taken out
 * for the calling stream xs to run now (yield_to, resume_*_to): true if
 * we got it. Only from a list pool. */
static bool claim_queued(struct coexec_xstream_rec *xs, struct coexec_unit_rec *u)
{
    struct coexec_pool_rec *p = atom_load_acq_ptr(&u->pool);
    if (!p || p->impl || atom_load_acq_u32(&u->state) != COEXEC_UNIT_READY ||
        !pool_may_take(u, xs) || pool_foreign(p, xs))
        return false;
    return pool_list_remove(p, u, xs, true, 0);
}

/* A held unit: one coexec_pool_pop or coexec_pool_steal handed out, so in
 * no pool and with no home, ready. Claimed by giving it `home` as its home:
 * the compare-and-swap on the home word makes one claimer (or one
 * coexec_pool_push) the winner. */
static bool claim_held(struct coexec_unit_rec *u, struct coexec_pool_rec *home)
{
    void *exp = NULL;
    if (atom_load_acq_ptr(&u->pool) != NULL || unit_inpool(u) ||
        atom_load_acq_u32(&u->state) != COEXEC_UNIT_READY ||
        join_finished(atom_load_acq_uptr(&u->join)))
        return false;
    if (!atom_cas_ar_ptr(&u->pool, &exp, home))
        return false;
    unit_held_clear(u);
    return true;
}

/* A ULT parked by a suspend (or any park: as coexec_thread_resume, any
 * wake ends a park), resumed here to be run by xs at once instead of
 * queued: the wake word's compare-and-swap from PARKED makes us the one
 * waker. Not one whose home is private to another stream (that stream
 * keeps its waker page), nor a stacked scheduler's unit. */
static bool claim_parked(struct coexec_xstream_rec *xs, struct coexec_unit_rec *u,
                         uint64_t gen)
{
    struct coexec_pool_rec *p = unit_pool(u);
    if (!p || (u->flags & UF_SCHED) ||
        pool_foreign(p, xs))
        return false;
    uint32_t tag = wake_tag_of(gen);
    uint32_t w = atom_load_acq_u32(&u->wake);
    if (w != (tag | WAKE_PARKED) || !atom_cas_ar_u32(&u->wake, &w, tag))
        return false;
    /* Its waker-page slot, if it took one here, is ours (we own its
     * pool). */
    uintptr_t key = park_key_slot(u, xs);
    if (key)
        coexec__mb_slot_free(&xs->mb, key);
    stat_add(&xs->count[XC_WAKES_LOCAL], 1);
    TOOL_EVENT(COEXEC_TOOL_UNIT_RESUME, xs, u, NULL);
    return true;
}

/* What the caller of hand_off does as it leaves for the target. */
enum { TO_YIELD, TO_SUSPEND, TO_EXIT };

/* The _to calls: the caller yields, suspends or ends (how), and its
 * stream runs t next. t is ready, queued or held
 * (resume false), or parked and resumed here (resume true). */
static ALWAYS_INLINE int hand_off(coexec_thread_t t, int how, bool resume)
{
    int err;
    struct coexec_xstream_rec *xs;
    struct coexec_unit_rec *self = self_ult(&xs, &err);
    if (!self)
        return err;
    if (how == TO_EXIT && self->kind == UNIT_MAIN)
        return COEXEC_EPERM;
    int rc = check_unit(t.p, t.gen, false);
    if (rc)
        return rc;
    struct coexec_unit_rec *u = t.p;
    if (u == self)
        return COEXEC_EDEADLK;
    if (!pool_may_take(u, xs))
        return COEXEC_EPERM;
    if (u->kind != UNIT_ULT)
        return COEXEC_ESTATE;
    if (resume ? !claim_parked(xs, u, t.gen)
               : !claim_queued(xs, u) && !claim_held(u, unit_pool(self)))
        return COEXEC_ESTATE;
    /* A parked target has run: only a ready one may still need a stack. */
    if (UNLIKELY(!(u->rflags & RF_STARTED)) && UNLIKELY(!ult_prepare(xs, u))) {
        coexec__unit_fail_nostack(xs, u);
        return COEXEC_ENOMEM;
    }
    release_inplace_joiner(self);
    switch (how) {
    case TO_YIELD:
        atom_store_rlx_u32(&self->state, COEXEC_UNIT_READY);
        stat_add(&xs->count[XC_YIELDS], 1);
        leave_to(xs, self, u, POST_REQUEUE, 0);
        return COEXEC_OK;
    case TO_SUSPEND:
        /* As coexec_self_suspend: a resume that came first is consumed by
         * the post-switch step (park_commit), which then queues us. */
        unit_note_wait(self, "suspended (coexec_self_suspend_to)", NULL,
                       UINT64_MAX);
        atom_store_rlx_u32(&self->state, COEXEC_UNIT_BLOCKED);
        leave_to(xs, self, u, POST_PARK, 0);
        return fin_cancelling() ? COEXEC_ECANCELED : COEXEC_OK;
    default:
        /* t is ours now (claimed, in no pool): run our key destructors,
         * which may switch, before we go. */
        if (self->keys) {
            coexec__keys_destroy(self);
            xs = coexec__xs_self();
        }
        leave_to(xs, self, u, POST_FINISH, 1);
        __builtin_unreachable();
    }
}

COEXEC_API int coexec_yield_to(coexec_thread_t t)
{
    return hand_off(t, TO_YIELD, false);
}

COEXEC_API int coexec_self_suspend_to(coexec_thread_t t)
{
    return hand_off(t, TO_SUSPEND, false);
}

COEXEC_API int coexec_thread_exit_to(coexec_thread_t t)
{
    return hand_off(t, TO_EXIT, false);
}

COEXEC_API int coexec_resume_yield_to(coexec_thread_t t)
{
    return hand_off(t, TO_YIELD, true);
}

COEXEC_API int coexec_resume_suspend_to(coexec_thread_t t)
{
    return hand_off(t, TO_SUSPEND, true);
}

COEXEC_API int coexec_resume_exit_to(coexec_thread_t t)
{
    return hand_off(t, TO_EXIT, true);
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
    int rc = CHECK_HANDLE(pool);
    if (rc)
        return rc;
    struct coexec_unit_rec *u;
    rc = make_unit(pool.p, UNIT_ULT, (void *)fn, arg, attr, out == NULL, &u);
    if (rc)
        return rc;
    TOOL_EVENT(COEXEC_TOOL_UNIT_CREATE, xs, u, NULL);
    atom_store_rlx_ptr(&u->pool, pool.p);
    bool here = pool_may_take(u, xs);
    if (here && !ult_prepare(xs, u)) {
        coexec__unit_release(xs, u);
        return COEXEC_ENOMEM;
    }
    SET_OUT(out, u);
    if (!here) {
        coexec__enqueue(u, false); /* it runs later instead */
    } else {
        release_inplace_joiner(self);
        atom_store_rlx_u32(&self->state, COEXEC_UNIT_READY);
        /* We go back to our pool as a new unit would. */
        leave_to(xs, self, u, POST_REQUEUE_NEW, 0);
    }
    return COEXEC_OK;
}

static bool unit_movable(struct coexec_unit_rec *u)
{
    return !(u->flags & (UF_NOSTEAL | UF_SCHED)) &&
           !(atom_load_rlx_u32(&u->attrs) & UA_PINNED);
}

/* Moves t (a ULT) so that its home becomes `to` (or, for a stream, that
 * stream's migration pool; bound_xs is then non-NULL). With later, the
 * caller moving itself does not yield: it moves at its next push, and a
 * bound or pinned ULT may be given a home too (coexec_thread_set_home). */
static int migrate(coexec_thread_t t, struct coexec_pool_rec *to,
                   struct coexec_xstream_rec *bound, bool later)
{
    int rc = check_unit(t.p, t.gen, false);
    if (rc)
        return rc;
    struct coexec_unit_rec *u = t.p;
    if (later ? (u->flags & UF_SCHED) != 0 : !unit_movable(u))
        return COEXEC_EPERM;
    if (atom_load_acq_u32(&u->state) == COEXEC_UNIT_TERMINATED ||
        join_finished(atom_load_acq_uptr(&u->join)))
        return COEXEC_ESTATE;
    if ((rc = pool_check(to, true)))
        return rc;
    struct coexec_xstream_rec *xs = xs_self_entry();
    uintptr_t req = bound ? (uintptr_t)bound | DEST_MOVE | DEST_BOUND
                          : (uintptr_t)to | DEST_MOVE;
    if (xs && xs->cur == u && later) {
        atom_store_rel_uptr(&u->dest, req); /* at our next yield or park */
        return COEXEC_OK;
    }
    if (xs && xs->cur == u) {
        /* Ourselves: the request applies as we yield. */
        atom_store_rel_uptr(&u->dest, req);
        xs->direct_yields = 0;
        atom_store_rlx_u32(&u->state, COEXEC_UNIT_READY);
        leave_to(xs, u, leave_target(u), POST_REQUEUE, 0);
        return COEXEC_OK;
    }
    /* Queued somewhere we may take it from: move it now. */
    if (xs && claim_queued(xs, u)) {
        atom_store_rel_uptr(&u->dest, req);
        coexec__enqueue(u, false);
        return COEXEC_OK;
    }
    if (!xs && atom_load_acq_u32(&u->state) == COEXEC_UNIT_READY) {
        struct coexec_pool_rec *p = atom_load_acq_ptr(&u->pool);
        if (p && p->shared && !p->impl) {
            enum pool_hold hold = pool_lock(p);
            bool ok = unit_inpool(u) && unit_pool(u) == p;
            if (ok)
                list_unlink(p, u);
            pool_unlock(p, hold);
            if (ok) {
                atom_store_rel_uptr(&u->dest, req);
                coexec__enqueue(u, false);
                return COEXEC_OK;
            }
        }
    }
    /* Held (popped out of its pool by the user): nobody else would queue
     * it, so it goes to its destination now (set_home leaves it to its
     * holder, to run or push). */
    if (!later && claim_held(u, to)) {
        atom_store_rel_uptr(&u->dest, req);
        coexec__enqueue(u, false);
        return COEXEC_OK;
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
    return migrate(t, pool.p, NULL, false);
}

COEXEC_API int coexec_thread_set_home(coexec_thread_t t, coexec_pool_t pool)
{
    RT_CHECK();
    int rc = CHECK_HANDLE(pool);
    if (rc)
        return rc;
    return migrate(t, pool.p, NULL, true);
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
    return migrate(t, coexec__migr_pool(x), x, false);
}
