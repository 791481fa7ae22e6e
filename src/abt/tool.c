/*
 * src/abt/tool.c: Argobots' tool interface (ABT_tool_register_thread_callback,
 * ABT_tool_query_thread) over libcoexec's tool events.
 *
 * coexec reports what happens to its units: CREATE, RUN, YIELD, BLOCK,
 * RESUME, FINISH (coexec/tool.h). The layer registers its own coexec
 * callback while a program's ABT callback is registered, keeps the events
 * of the layer's units (recognised by their trampoline, whose argument is
 * the unit's record) and hands them on as THREAD_CREATE, _RUN, _YIELD,
 * _SUSPEND, _RESUME and _FINISH; a run that a cancel ends at once (the
 * one that starts the unit, or one that resumes it in its own yield or
 * suspend) is told as THREAD_CANCEL, and its FINISH not at all. The
 * events only the layer sees it emits itself: THREAD_JOIN and
 * THREAD_FREE (the joins and frees of named
 * units), THREAD_REVIVE (a revive's new coexec unit is reported as that
 * instead of a creation), an unnamed unit's FINISH and FREE, which are
 * emitted just before its record goes, and a named tasklet's FINISH,
 * emitted by its trampoline just before its record may go (coexec's own
 * FINISH of a tasklet comes after, when the record may be free, and is
 * dropped unread).
 *
 * A program callback's context answers ABT_tool_query_thread while the
 * callback runs: the unit's pool, the depth of the scheduler stack (for
 * RUN, YIELD, SUSPEND and FINISH as coexec tells them, a tasklet's FINISH
 * at its RUN's: 1 under a stream's main scheduler; 0 for the other events
 * the layer tells itself),
 * the caller that caused the event (the unit itself for its RUN, YIELD,
 * SUSPEND and FINISH; otherwise the ULT, tasklet or external thread that
 * made the call) and, for a YIELD or a SUSPEND, what the unit waits on:
 * the type and handle that the layer's blocking call noted (abtx_sync_note;
 * USER for the program's own yields and suspends, UNKNOWN for the
 * runtime's).
 */
#include <stdlib.h>

#include "abt_internal.h"

struct ABT_tool_context_opaque {
    ABT_pool pool;
    ABT_thread caller; /* NULL: an external thread */
    int depth;         /* scheduler levels (coexec's sched_depth), or 0 */
    ABT_sync_event_type sync_type; /* YIELD, SUSPEND: what it waits on */
    void *sync_obj;
};

/* The calling OS thread's note of what its unit waits on (abtx_sync_note):
 * out of line, as its callers may have switched OS threads. */
static _Thread_local struct {
    ABT_thread unit;
    ABT_sync_event_type type;
    void *obj;
} sync_tls __attribute__((tls_model("initial-exec")));

__attribute__((noinline)) void abtx_sync_note(ABT_thread self,
                                              ABT_sync_event_type type,
                                              void *obj)
{
    sync_tls.unit = self;
    sync_tls.type = type;
    sync_tls.obj = obj;
}

/* One registration. Replaced ones stay (on `all`, under abtx_lock) until
 * the last ABT_finalize: an event may still be delivered through them. */
struct tool_reg {
    ABT_tool_thread_callback_fn cb;
    uint64_t mask;
    void *arg;
    struct tool_reg *all;
};

static _Atomic(struct tool_reg *) reg;
static struct tool_reg *all;
_Atomic int abtx_tool_on;

/* The coexec events a program's mask needs. */
static unsigned coexec_mask_of(uint64_t m)
{
    unsigned c = 0;
    if (m & (ABT_TOOL_EVENT_THREAD_CREATE | ABT_TOOL_EVENT_THREAD_REVIVE))
        c |= COEXEC_TOOL_BIT(COEXEC_TOOL_UNIT_CREATE);
    /* A cancelled unit's run is its CANCEL, and decides that its FINISH
     * is not told. */
    if (m & (ABT_TOOL_EVENT_THREAD_RUN | ABT_TOOL_EVENT_THREAD_CANCEL |
             ABT_TOOL_EVENT_THREAD_FINISH))
        c |= COEXEC_TOOL_BIT(COEXEC_TOOL_UNIT_RUN);
    if (m & ABT_TOOL_EVENT_THREAD_YIELD)
        c |= COEXEC_TOOL_BIT(COEXEC_TOOL_UNIT_YIELD);
    if (m & ABT_TOOL_EVENT_THREAD_SUSPEND)
        c |= COEXEC_TOOL_BIT(COEXEC_TOOL_UNIT_BLOCK);
    if (m & ABT_TOOL_EVENT_THREAD_RESUME)
        c |= COEXEC_TOOL_BIT(COEXEC_TOOL_UNIT_RESUME);
    if (m & ABT_TOOL_EVENT_THREAD_FINISH)
        c |= COEXEC_TOOL_BIT(COEXEC_TOOL_UNIT_FINISH);
    return c;
}

static void deliver(struct tool_reg *r, ABT_thread t, ABT_xstream x,
                    uint64_t ev, ABT_thread caller, int depth)
{
    struct ABT_tool_context_opaque ctx = {t->pool, caller, depth,
                                          ABT_SYNC_EVENT_TYPE_UNKNOWN, NULL};
    /* A unit leaving tells the wait its layer call noted on this thread. */
    if ((ev == ABT_TOOL_EVENT_THREAD_YIELD ||
         ev == ABT_TOOL_EVENT_THREAD_SUSPEND) &&
        sync_tls.unit == t) {
        ctx.sync_type = sync_tls.type;
        ctx.sync_obj = sync_tls.obj;
    }
    r->cb(t, x, ev, &ctx, r->arg);
}

/* Tells ev of t from the calling thread, at scheduler depth `depth`. */
static void emit_at(ABT_thread t, uint64_t ev, int depth)
{
    struct tool_reg *r = atomic_load_explicit(&reg, memory_order_acquire);
    if (!r || !(r->mask & ev))
        return;
    ABT_thread caller = abtx_cur_get();
    ABT_xstream x = abtx_xstream_self();
    /* A unit's own end is told by the unit on its stream. */
    deliver(r, t, x, ev, ev == ABT_TOOL_EVENT_THREAD_FINISH ? t : caller,
            depth);
}

void abtx_tool_emit(ABT_thread t, uint64_t ev)
{
    emit_at(t, ev, 0);
}

/* t's FINISH, told by t on its stream, unless a cancel ended it (then
 * told as CANCEL in place of its RUN). */
static void finish_at(ABT_thread t, int depth)
{
    if (atomic_load(&t->cancel) != 2)
        emit_at(t, ABT_TOOL_EVENT_THREAD_FINISH, depth);
}

void abtx_tool_unnamed_end(ABT_thread t)
{
    finish_at(t, 0);
    abtx_tool_emit(t, ABT_TOOL_EVENT_THREAD_FREE);
}

/* The FINISH of tasklet t (not unnamed), told by its trampoline on its
 * stream just before it marks t joined: t may be freed at once after
 * that, so coexec's own FINISH of the unit, which comes later, is not
 * used for tasklets. Its depth is the one its RUN was told at. */
void abtx_tool_task_end(ABT_thread t)
{
    finish_at(t, t->tool_depth);
}

/* The layer's unit behind a coexec event, or NULL. */
static ABT_thread unit_of_event(const coexec_tool_info_t *in)
{
    if (in->unit_is_main)
        return in->unit == abtx_g.main_ult.u.p ? &abtx_g.main_ult : NULL;
    if (!abtx_is_trampoline(in->unit_fn, in->unit_is_tasklet))
        return NULL;
    ABT_thread t = abtx_thread((ABT_thread)in->unit_arg);
    /* A record now serving another unit (or none: an unnamed one's, freed
     * at its end) is not this unit's any more. */
    if (!t || (t->u.p && t->u.p != in->unit))
        return NULL;
    return t;
}

static void on_coexec_event(const coexec_tool_info_t *in, void *unused)
{
    (void)unused;
    struct tool_reg *r = atomic_load_explicit(&reg, memory_order_acquire);
    /* A tasklet's FINISH was told by its trampoline (abtx_tool_task_end),
     * and its record may be gone already. */
    if (!r || (in->event == COEXEC_TOOL_UNIT_FINISH && in->unit_is_tasklet))
        return;
    ABT_thread t = unit_of_event(in);
    if (!t)
        return;
    uint64_t ev;
    ABT_thread caller = t;
    switch (in->event) {
    case COEXEC_TOOL_UNIT_CREATE:
        ev = t->tool_revive ? ABT_TOOL_EVENT_THREAD_REVIVE
                            : ABT_TOOL_EVENT_THREAD_CREATE;
        t->tool_revive = 0;
        caller = abtx_cur_get();
        break;
    case COEXEC_TOOL_UNIT_RUN: {
        /* A run that a cancel asked before it ends at once (the run that
         * starts the unit: its trampoline sees the cancel; one that
         * resumes it in its own yield or suspend: self_switch exits) is
         * told as CANCEL, as Argobots does, and its FINISH is not told. */
        uint8_t asked = 1;
        bool ends = in->unit_first_run ||
                    atomic_load_explicit(&t->at_yield, memory_order_relaxed);
        ev = ends && atomic_compare_exchange_strong(&t->cancel, &asked, 2)
                 ? ABT_TOOL_EVENT_THREAD_CANCEL
                 : ABT_TOOL_EVENT_THREAD_RUN;
        if (in->unit_is_tasklet)
            t->tool_depth = (int8_t)in->sched_depth;
        break;
    }
    case COEXEC_TOOL_UNIT_YIELD:
        ev = ABT_TOOL_EVENT_THREAD_YIELD;
        break;
    case COEXEC_TOOL_UNIT_BLOCK:
        ev = ABT_TOOL_EVENT_THREAD_SUSPEND;
        break;
    case COEXEC_TOOL_UNIT_RESUME:
        ev = ABT_TOOL_EVENT_THREAD_RESUME;
        caller = abtx_cur_get();
        break;
    case COEXEC_TOOL_UNIT_FINISH:
        /* A ULT's. An unnamed unit's end was told as its record went; a
         * cancelled one's as CANCEL. */
        if (t->detached || atomic_load(&t->cancel) == 2)
            return;
        ev = ABT_TOOL_EVENT_THREAD_FINISH;
        break;
    default:
        return;
    }
    if (r->mask & ev)
        deliver(r, t, abtx_xstream_of_crank(in->rank), ev, caller,
                in->sched_depth);
}

int ABT_tool_register_thread_callback(ABT_tool_thread_callback_fn cb_func,
                                      uint64_t event_mask, void *user_arg)
{
    ABTX_CHECK_INIT();
    uint64_t m = event_mask & ABT_TOOL_EVENT_THREAD_ALL;
    struct tool_reg *n = NULL;
    if (cb_func && m) {
        if (!(n = malloc(sizeof *n)))
            return ABT_ERR_MEM;
        *n = (struct tool_reg){cb_func, m, user_arg, NULL};
    }
    pthread_mutex_lock(&abtx_lock);
    int rc = coexec_tool_set_callback(n ? on_coexec_event : NULL,
                                      n ? coexec_mask_of(m) : 0, NULL);
    if (rc == COEXEC_OK) {
        if (n) {
            n->all = all;
            all = n;
        }
        atomic_store_explicit(&reg, n, memory_order_release);
        atomic_store_explicit(&abtx_tool_on, n != NULL, memory_order_relaxed);
    }
    pthread_mutex_unlock(&abtx_lock);
    if (rc) {
        free(n);
        return rc == COEXEC_ENOSYS ? ABT_ERR_FEATURE_NA : ABT_ERR_MEM;
    }
    return ABT_SUCCESS;
}

void abtx_tool_release(void)
{
    ABTX_IGNORE(coexec_tool_set_callback(NULL, 0, NULL));
    pthread_mutex_lock(&abtx_lock);
    atomic_store_explicit(&reg, NULL, memory_order_release);
    atomic_store_explicit(&abtx_tool_on, 0, memory_order_relaxed);
    while (all) {
        struct tool_reg *n = all->all;
        free(all);
        all = n;
    }
    pthread_mutex_unlock(&abtx_lock);
}

int ABT_tool_query_thread(ABT_tool_context context, uint64_t event,
                          ABT_tool_query_kind query_kind, void *val)
{
    (void)event;
    if (!context)
        return ABT_ERR_INV_TOOL_CONTEXT;
    if (!val)
        return ABT_ERR_INV_ARG;
    switch (query_kind) {
    case ABT_TOOL_QUERY_KIND_POOL:
        *(ABT_pool *)val = context->pool;
        return ABT_SUCCESS;
    case ABT_TOOL_QUERY_KIND_STACK_DEPTH:
        *(int *)val = context->depth;
        return ABT_SUCCESS;
    case ABT_TOOL_QUERY_KIND_CALLER_TYPE:
        *(ABT_exec_entity_type *)val = context->caller
                                           ? ABT_EXEC_ENTITY_TYPE_THREAD
                                           : ABT_EXEC_ENTITY_TYPE_EXT;
        return ABT_SUCCESS;
    case ABT_TOOL_QUERY_KIND_CALLER_HANDLE:
        *(ABT_thread *)val = context->caller;
        return ABT_SUCCESS;
    case ABT_TOOL_QUERY_KIND_SYNC_OBJECT_TYPE:
        *(ABT_sync_event_type *)val = context->sync_type;
        return ABT_SUCCESS;
    case ABT_TOOL_QUERY_KIND_SYNC_OBJECT_HANDLE:
        *(void **)val = context->sync_obj;
        return ABT_SUCCESS;
    default:
        return ABT_ERR_INV_ARG;
    }
}
