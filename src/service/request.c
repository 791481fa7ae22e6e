/*
 * src/service/request.c: what the units and threads call: coexec_offload,
 * the submit/poll/wait/cancel requests and the service's figures. The
 * workers that run the requests, and start and stop, are service.c (see
 * its plaque for the protocol).
 */
#include <errno.h>

#include "arch/clock.h"
#include "base/lfstack.h"
#include "base/valgrind.h"
#include "service/ring.h"
#include "service/service.h"
#include "service/svc.h"
#include "waker/wait.h"
#include "xstream/xstream.h"

#define svc coexec__svc

#define OBJ_MAGIC_REQUEST 0x636f72657175ull

OBJ_CAST(coexec_request_t, struct request, rq_of)

/* Fills r, whose lock and (empty) waiter list are set up, for fn(arg);
 * COEXEC_ECLOSED (r settled as cancelled) once finalize began. */
static int rq_fill(struct request *r, coexec_offload_fn_t fn, void *arg)
{
    r->fn = fn;
    r->arg = arg;
    r->result = 0;
    r->next = r->prev = NULL;
    r->poller = NULL;
    if (atom_load_acq_u32(&svc.closed)) {
        r->result = -ECANCELED;
        atom_store_rel_u32(&r->state, RQ_CANCELED | RQ_SETTLED);
        return COEXEC_ECLOSED;
    }
    /* Release: a waiter that sees it queued again sees it filled. */
    atom_store_rel_u32(&r->state, RQ_QUEUED);
    struct coexec_xstream_rec *xs = coexec__xs_self();
    if (xs)
        stat_add(&xs->count[XC_OFFLOADS], 1);
    return COEXEC_OK;
}

/* Fills a fresh record r for fn(arg) (see rq_fill). */
static int rq_init(struct request *r, coexec_offload_fn_t fn, void *arg)
{
    atom_store_rlx_u32(&r->lock, 0);
    wlist_init(&r->waiters, &r->lock);
    r->magic_ = OBJ_MAGIC_REQUEST;
    return rq_fill(r, fn, arg);
}

/* Pushes the filled record r for the workers. */
static void rq_push(struct request *r)
{
    /* seq_cst: ordered before the sleepers check in kick_one. */
    LFS_PUSH(&svc.inbox, r);
    coexec__svc_kick_one();
}

static int submit(struct request *r, coexec_offload_fn_t fn, void *arg)
{
    int rc = svc_live();
    if (rc)
        return rc;
    rc = rq_init(r, fn, arg);
    if (rc)
        return rc;
    rq_push(r);
    return COEXEC_OK;
}

/*
 * coexec_request_submit of r, which may have been submitted before (its
 * header matches): only once it is settled, and only one of concurrent
 * submitters. The winner's CAS holds the state final but not settled
 * while it fills the record, so that waiters and pollers wait for it to
 * be queued again, and registrants leave the lock and the (empty) list
 * alone. COEXEC_EBUSY while r is queued, running or being completed.
 */
static int resubmit(struct request *r, coexec_offload_fn_t fn, void *arg)
{
    if (r->magic_ != OBJ_MAGIC_REQUEST)
        return submit(r, fn, arg);
    uint32_t s = atom_load_rlx_u32(&r->state);
    /* Acquire: after the completer's last touch of the record. */
    if (!(s & RQ_SETTLED) || !atom_cas_acq_u32(&r->state, &s, RQ_CANCELED))
        return COEXEC_EBUSY;
    int rc = rq_fill(r, fn, arg);
    if (rc)
        return rc;
    rq_push(r);
    return COEXEC_OK;
}

/* The result of a settled request as the API reports it. */
static int rq_outcome(struct request *r, intptr_t *ret)
{
    if ((atom_load_acq_u32(&r->state) & RQ_FINAL) == RQ_CANCELED)
        return COEXEC_ECANCELED;
    if (ret)
        *ret = r->result;
    return COEXEC_OK;
}

/* Registers under r's lock (RQ_WAITERS) unless r is final: true if it
 * did, with the lock still held. */
static bool rq_register(struct request *r)
{
    spin_lock(&r->lock);
    if (atom_for_ar_u32(&r->state, RQ_WAITERS) & RQ_FINAL) {
        spin_unlock(&r->lock);
        return false;
    }
    return true;
}

/* Waits for r as c (a ULT or an external thread), until deadline
 * (UINT64_MAX: none); COEXEC_ETIMEDOUT leaves r running. */
static int rq_wait(struct request *r, struct caller *c, intptr_t *ret,
                   uint64_t deadline)
{
    bool spun = false;
    uint64_t watch = STUCK_NS; /* doubles while the call runs on */
    for (;;) {
        uint32_t s = atom_load_acq_u32(&r->state);
        if (s & RQ_SETTLED)
            return rq_outcome(r, ret);
        if (s & RQ_FINAL) {
            cpu_relax(); /* its completer is a few instructions from done */
            continue;
        }
        if (deadline != UINT64_MAX && clock_now_ns() >= deadline)
            return COEXEC_ETIMEDOUT;
        if (!spun) {
            spun = true;
            /* A short call finishes within the watch: no node, no park. */
            if (caller_may_spin(c)) {
                for (int i = 0; i < 2 * WAIT_SPIN; i++) {
                    if (atom_load_acq_u32(&r->state) & RQ_FINAL)
                        break;
                    cpu_relax();
                }
            }
            continue;
        }
        if (!rq_register(r))
            continue;
        /* Finalize settles every request itself: not cancellable. */
        struct waiter w;
        waiter_init(&w, c, &r->waiters, &r->lock, WN_NOCANCEL, "service request",
                    r);
        wlist_push(&r->waiters, &w.node);
        spin_unlock(&r->lock);
        uint64_t until = clock_deadline(watch);
        uint32_t res = coexec__wait_block(&w, until < deadline ? until : deadline);
        if (res == WN_TIMEDOUT && until >= deadline)
            continue; /* the caller's deadline: checked above */
        if (res == WN_TIMEDOUT) {
            coexec__svc_grow(); /* still not done: add a worker if none is idle */
            if (watch < MAX_WATCH_NS)
                watch *= 2;
        }
    }
}

COEXEC_API int coexec_offload(coexec_offload_fn_t fn, void *arg, intptr_t *ret)
{
    RT_CHECK();
    if (!fn)
        return COEXEC_EINVAL;
    struct caller c;
    int rc = wait_caller(&c);
    if (rc)
        return rc;
    struct request r;
    rc = submit(&r, fn, arg);
    if (rc)
        return rc;
    return rq_wait(&r, &c, ret, UINT64_MAX);
}

int coexec__service_fop(int kind, const intptr_t *a, intptr_t *ret)
{
    if (svc_live() != COEXEC_OK || !(svc.ring_kinds & 1u << kind))
        return COEXEC_ENOSYS;
    struct caller c;
    int rc = wait_caller(&c);
    if (rc)
        return rc;
    struct fop f = {kind, a};
    struct request r;
    rc = rq_init(&r, NULL, &f);
    if (rc)
        return rc;
    coexec__ring_push(&r);
    return rq_wait(&r, &c, ret, UINT64_MAX);
}

/* A tasklet cannot watch its request: one timer at a time, on the
 * submitting stream, checks STUCK_NS later for requests stuck behind busy
 * workers. */
static struct timer watchdog;
static atom_u32_t watchdog_armed;

static void watchdog_fire(struct timer *t, bool cancel)
{
    (void)t;
    (void)cancel;
    atom_store_rel_u32(&watchdog_armed, 0);
    coexec__svc_grow();
}

static void watchdog_arm(struct coexec_xstream_rec *xs)
{
    uint32_t exp = 0;
    if (atom_load_rlx_u32(&svc.nidle) ||
        !atom_cas_ar_u32(&watchdog_armed, &exp, 1))
        return;
    watchdog.deadline = clock_deadline(STUCK_NS);
    watchdog.fire = watchdog_fire;
    watchdog.idx = TIMER_OFF;
    if (coexec__timer_add(&xs->timers, &watchdog) != COEXEC_OK)
        atom_store_rel_u32(&watchdog_armed, 0);
}

COEXEC_API int coexec_request_submit(coexec_request_t *req,
                                     coexec_offload_fn_t fn, void *arg)
{
    vg_init_reads(req, sizeof *req);
    if (!req || !fn)
        return COEXEC_EINVAL;
    RT_CHECK();
    int rc = resubmit(rq_of(req), fn, arg);
    struct coexec_xstream_rec *xs = xs_self_entry();
    if (rc == COEXEC_OK && xs && xs->cur && xs->cur->kind == UNIT_TASKLET)
        watchdog_arm(xs);
    return rc;
}

COEXEC_API int coexec_request_poll(coexec_request_t *req, coexec_poll_t *cx,
                                   intptr_t *ret)
{
    struct request *r = rq_of(req);
    OBJ_CHECK(r, OBJ_MAGIC_REQUEST);
    struct coexec_unit_rec *u = coexec__poll_unit(cx);
    if (!u)
        return COEXEC_EINVAL;
    for (;;) {
        uint32_t s = atom_load_acq_u32(&r->state);
        if (s & RQ_SETTLED)
            return rq_outcome(r, ret);
        if (s & RQ_FINAL) {
            cpu_relax();
            continue;
        }
        if (!rq_register(r))
            continue;
        /* A waker, not a node: completion wakes it after its last touch
         * of the record, and a stale one is harmless. */
        r->poller = u;
        r->poller_tag = atom_load_rlx_u32(&u->wake) & ~WAKE_FLAGS;
        spin_unlock(&r->lock);
        return COEXEC_PENDING;
    }
}

COEXEC_API int coexec_request_wait(coexec_request_t *req, intptr_t *ret)
{
    struct request *r = rq_of(req);
    OBJ_CHECK(r, OBJ_MAGIC_REQUEST);
    /* Unsettled with no runtime: a request of the runtime of a parent
     * process (fork), which nothing completes here. (Finalize settles
     * every request before the runtime goes off.) */
    if (!rt_on() && !(atom_load_acq_u32(&r->state) & RQ_SETTLED))
        return COEXEC_ENOTINIT;
    struct caller c;
    int rc = wait_caller(&c);
    if (rc)
        return rc;
    return rq_wait(r, &c, ret, UINT64_MAX);
}

COEXEC_API int coexec_request_wait_timed(coexec_request_t *req, intptr_t *ret,
                                         uint64_t timeout_ns)
{
    struct request *r = rq_of(req);
    OBJ_CHECK(r, OBJ_MAGIC_REQUEST);
    struct caller c;
    int rc = wait_caller(&c);
    if (rc)
        return rc;
    return rq_wait(r, &c, ret, clock_deadline(timeout_ns));
}

COEXEC_API int coexec_request_cancel(coexec_request_t *req)
{
    struct request *r = rq_of(req);
    OBJ_CHECK(r, OBJ_MAGIC_REQUEST);
    /* Not started means still queued: in the inbox or on the FIFO, and
     * after a drain on the FIFO, where workers take it under qlock. */
    pthread_mutex_lock(&svc.qlock);
    coexec__svc_drain_inbox_locked();
    struct request *q = svc.qhead;
    while (q && q != r)
        q = q->next;
    if (q)
        coexec__svc_fifo_unlink_locked(r);
    pthread_mutex_unlock(&svc.qlock);
    if (!q)
        return COEXEC_EBUSY;
    coexec__rq_complete(r, -ECANCELED, RQ_CANCELED);
    return COEXEC_OK;
}

COEXEC_API int coexec_service_get_info(coexec_service_info_t *info)
{
    if (!info || info->size < sizeof *info)
        return COEXEC_EINVAL;
    RT_CHECK();
    /* What it would report before the first offload is not what it will
     * be: start now (a failure shows as no thread). */
    IGNORE_RESULT(svc_live());
    pthread_mutex_lock(&svc.qlock);
    info->threads = svc.nthreads;
    pthread_mutex_unlock(&svc.qlock);
    info->idle = (int)atom_load_acq_u32(&svc.nidle);
    info->cpu = svc.ncpus ? svc.cpus[0] : -1;
    info->shares_cpu = svc.shares_cpu;
    info->completed = atom_load_acq_u64(&svc.completed);
    info->io_path = svc.ring_kinds ? "io_uring" : "threads";
    return COEXEC_OK;
}

bool coexec__service_live(void)
{
    return atom_load_acq_u32(&svc.live) == 1;
}

/* fork, in the child: no watchdog timer is armed any more. */
void coexec__svc_request_atfork_child(void)
{
    atom_store_rlx_u32(&watchdog_armed, 0);
}
