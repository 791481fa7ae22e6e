/*
 * src/service/service.c: the service stream: OS threads that run blocking
 * calls for the units of the compute streams.
 *
 * Room plaque.
 *  - Submission: a request record (the caller's stack for coexec_offload,
 *    its storage for the submit/poll pair) is pushed on `inbox`, a
 *    lock-free stack (one CAS). A worker that needs work takes the whole
 *    inbox with one exchange under `qlock`, reverses it onto the FIFO
 *    `qhead`/`qtail` (a batch), and pops the oldest. A submitter wakes a
 *    parked worker only when one sleeps (an event count: `seq` plus
 *    `sleepers`, both seq_cst against the push). A record submitted again
 *    is claimed from its settled state by one CAS (resubmit), so it is
 *    never on the queue twice.
 *  - Running: a worker takes the oldest request and marks itself busy with
 *    it under qlock, runs it outside any lock, then completes it under its
 *    own lock unless finalize abandoned it meanwhile. An idle worker only
 *    reads the inbox, so the submitters keep its cache line.
 *  - Completion: the result is stored and one CAS turns RQ_QUEUED into
 *    the final state with RQ_SETTLED: a waiter that only watched (the
 *    common case) sees it and may leave; nothing touches the record after.
 *    A waiter or poller that registered set RQ_WAITERS under the record's
 *    lock, which fails that CAS: then, under the lock, the state becomes
 *    final (late registrants wait for RQ_SETTLED instead), the nodes are
 *    unlinked and marked WN_DETACHED (a timeout leaves them alone) and the
 *    poller's waker taken; RQ_SETTLED is stored as the last touch of the
 *    record, and then the nodes (on their waiters' stacks) are released
 *    and the tasklet woken.
 *  - Growth: a waiter whose request is not done after STUCK_NS (its timed
 *    wait's timeout) starts another worker when requests are queued, none
 *    is idle and every worker has been inside its current call for over
 *    BLOCKED_NS (blocked, not merely busy or preempted), up to
 *    service_max_threads; a tasklet's submit arms one shared timer on its
 *    stream that makes the same check STUCK_NS later. Workers beyond
 *    service_threads park as soon as they are idle and exit after
 *    IDLE_EXIT_NS.
 *  - File I/O: where io_uring can be had (service_io auto or uring), the
 *    POSIX wrappers' file calls (coexec__service_fop) skip the workers:
 *    their records go to the ring thread (ring.h, ring/uring.c), which
 *    batches them into one ring; they complete through the same
 *    coexec__rq_complete. Everything else stays on the workers.
 *  - Finalize: close refuses new requests (COEXEC_ECLOSED), cancels the
 *    queued ones, gives running ones (the ring's too) GRACE_NS, then
 *    cancels the ring's calls still in the kernel and abandons the rest:
 *    their waiters get COEXEC_ECANCELED and their workers, detached, exit
 *    when the call returns without touching anything of the runtime.
 *    Meanwhile the closer parks on `grace` (a wait list and a count of
 *    completions), which every completion after close releases: it
 *    burns no CPU while calls run.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "arch/clock.h"
#include "arch/futex.h"
#include "base/cpulist.h"
#include "base/lfstack.h"
#include "base/list.h"
#include "base/osthread.h"
#include "service/ring.h"
#include "service/service.h"
#include "service/svc.h"
#include "waker/wait.h"
#include "thread/tool.h"



struct service_state coexec__svc = {.qlock = PTHREAD_MUTEX_INITIALIZER,
                                    .live_lock = PTHREAD_MUTEX_INITIALIZER};
#define svc coexec__svc

/* Finalize's wait for the running calls: completions after close bump
 * seq and release the waiters, under lock. */
static struct {
    atom_u32_t lock;
    uint32_t seq;
    struct wlist waiters;
} grace;

/* Tests set it to make the ring's start fail as a kernel that refuses
 * io_uring would. */
int coexec__service_ring_refuse;

/* ---- completion ---------------------------------------------------------- */

/* Completes r with v and final state fin; see the plaque. */
void coexec__rq_complete(struct request *r, intptr_t v, uint32_t fin)
{
    atom_fadd_rlx_u64(&svc.completed, 1);
    r->result = v;
    uint32_t exp = RQ_QUEUED;
    /* Release: the result with the state. Nobody registered: done, and
     * this was the last touch of the record. */
    if (LIKELY(atom_cas_ar_u32(&r->state, &exp, fin | RQ_SETTLED)))
        return;
    spin_lock(&r->lock);
    atom_store_rel_u32(&r->state, fin); /* late registrants now wait */
    struct wait_node *list = r->waiters.head;
    r->waiters.head = r->waiters.tail = NULL;
    for (struct wait_node *n = list; n; n = n->next)
        n->flags |= WN_DETACHED; /* a timeout leaves it to us now */
    struct coexec_unit_rec *poller = r->poller;
    uint32_t tag = r->poller_tag;
    r->poller = NULL;
    spin_unlock(&r->lock);
    /* Release, and the last touch of the record. */
    atom_store_rel_u32(&r->state, fin | RQ_SETTLED);
    while (list) {
        struct wait_node *n = list;
        list = n->next;
        n->next = n->prev = NULL;
        coexec__wait_release(n, WN_DONE);
    }
    if (poller)
        coexec__wake_tagged(poller, tag);
}

/* ---- queue -------------------------------------------------------------- */

/* Moves the inbox onto the FIFO, oldest first (qlock held). */
void coexec__svc_drain_inbox_locked(void)
{
    struct request *rev = lfs_take_all(&svc.inbox);
    LFS_REVERSE(rev);
    while (rev) {
        struct request *n = rev->next;
        DL_PUSH_TAIL(svc.qhead, svc.qtail, rev);
        /* seq_cst: against a parking worker's check (see take). */
        atom_store_sc_u32(&svc.queued, atom_load_rlx_u32(&svc.queued) + 1);
        rev = n;
    }
}

void coexec__svc_fifo_unlink_locked(struct request *r)
{
    atom_store_sc_u32(&svc.queued, atom_load_rlx_u32(&svc.queued) - 1);
    DL_UNLINK(svc.qhead, svc.qtail, r);
}

void coexec__svc_kick_one(void)
{
    if (atom_load_sc_u32(&svc.sleepers)) {
        atom_fadd_sc_u32(&svc.seq, 1);
        coexec__futex_wake(&svc.seq, 1);
    }
}

/* The timer keeper's way to wake the workers that sleep (they keep timers
 * too: src/sched/keeper.c); true if one slept. */
static bool kick_idle(void)
{
    if (!atom_load_sc_u32(&svc.sleepers))
        return false;
    atom_fadd_sc_u32(&svc.seq, 1);
    coexec__futex_wake(&svc.seq, INT_MAX);
    return true;
}

static const struct timer_helper timer_helper = {kick_idle};

static void kick_all(void)
{
    atom_fadd_sc_u32(&svc.seq, 1);
    coexec__futex_wake(&svc.seq, INT_MAX);
}

/* ---- workers -------------------------------------------------------------- */

static void *worker_main(void *arg);

/* Starts a worker (qlock held). */
static int worker_spawn_locked(int extra)
{
    struct worker *w = calloc(1, sizeof *w);
    if (!w)
        return COEXEC_ENOMEM;
    w->extra = extra;
    w->cpu = svc.ncpus ? svc.cpus[svc.nthreads % svc.ncpus] : -1;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 256 * 1024);
    int e = coexec__os_thread_create(&w->thread, &a, worker_main, w,
                                     "coexec-svc", svc.spawned++, 0);
    pthread_attr_destroy(&a);
    if (e) {
        free(w);
        return e == ENOMEM ? COEXEC_ENOMEM : COEXEC_EAGAIN;
    }
    w->next = svc.workers;
    svc.workers = w;
    svc.nthreads++;
    return COEXEC_OK;
}

/* True when every worker is inside one call for over BLOCKED_NS: blocked
 * in the kernel, not merely busy (qlock held). */
static bool all_stuck_locked(void)
{
    uint64_t now = clock_now_ns();
    for (struct worker *w = svc.workers; w; w = w->next) {
        uint64_t t = atom_load_acq_u64(&w->since);
        if (!t || now - t < BLOCKED_NS)
            return false;
    }
    return true;
}

/* Requests wait: start another worker if every worker is stuck in a call
 * (a worker that is merely busy, or preempted, frees up soon). */
void coexec__svc_grow(void)
{
    if (atom_load_acq_u32(&svc.closed))
        return;
    if (atom_load_acq_u32(&svc.nidle)) {
        if (atom_load_sc_u32(&svc.queued))
            coexec__svc_kick_one(); /* an idle worker parked: the queue is its work */
        return;
    }
    pthread_mutex_lock(&svc.qlock);
    if (!atom_load_rlx_u32(&svc.nidle) && svc.nthreads < svc.max &&
        !atom_load_rlx_u32(&svc.stop) &&
        (svc.qhead || atom_load_rlx_ptr(&svc.inbox)) && all_stuck_locked())
        IGNORE_RESULT(worker_spawn_locked(1));
    pthread_mutex_unlock(&svc.qlock);
}

/* Takes the oldest request for w, or NULL. */
static struct request *take(struct worker *w)
{
    /* Idle workers only read: submitters keep the inbox's line. */
    if (!atom_load_rlx_ptr(&svc.inbox) && !atom_load_rlx_u32(&svc.queued))
        return NULL;
    pthread_mutex_lock(&svc.qlock);
    if (!svc.qhead)
        coexec__svc_drain_inbox_locked();
    struct request *r = svc.qhead;
    if (r) {
        coexec__svc_fifo_unlink_locked(r);
        spin_lock(&w->lock);
        w->cur = r;
        spin_unlock(&w->lock);
    }
    pthread_mutex_unlock(&svc.qlock);
    /* Requests of this batch stay on the FIFO while w runs r, which may
     * block: a parked worker must take them (its park checks queued). */
    if (r && atom_load_sc_u32(&svc.queued))
        coexec__svc_kick_one();
    return r;
}

/* Removes w from the list (it exits on its own). */
static void worker_leave(struct worker *w)
{
    pthread_mutex_lock(&svc.qlock);
    for (struct worker **p = &svc.workers; *p; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            break;
        }
    }
    svc.nthreads--;
    pthread_mutex_unlock(&svc.qlock);
    pthread_detach(w->thread);
    free(w);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    if (w->cpu >= 0)
        coexec__affinity_bind_self(w->cpu);
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    uint64_t idle_since = 0;
    for (;;) {
        struct request *r = take(w);
        if (r) {
            if (idle_since)
                atom_fsub_sc_u32(&svc.nidle, 1);
            idle_since = 0;
            atom_store_rel_u64(&w->since, clock_now_ns());
            TOOL_EVENT(COEXEC_TOOL_OFFLOAD_BEGIN, NULL, NULL, (void *)r->fn);
            intptr_t v = r->fn(r->arg);
            TOOL_EVENT(COEXEC_TOOL_OFFLOAD_END, NULL, NULL, (void *)r->fn);
            atom_store_rel_u64(&w->since, 0);
            spin_lock(&w->lock);
            if (w->abandoned) {
                /* Finalize gave up on this call and owns nothing of ours
                 * any more but this record: leave quietly. */
                spin_unlock(&w->lock);
                free(w);
                return NULL;
            }
            w->cur = NULL;
            coexec__rq_complete(r, v, RQ_DONE);
            spin_unlock(&w->lock);
            coexec__service_progress();
            continue;
        }
        if (atom_load_acq_u32(&svc.stop)) {
            if (idle_since)
                atom_fsub_sc_u32(&svc.nidle, 1);
            return NULL; /* joined by coexec__service_stop */
        }
        uint64_t now = clock_now_ns();
        if (!idle_since) {
            /* Idle from now on, spinning or parked, until it takes work:
             * a waiter does not start a thread while one is idle. */
            idle_since = now;
            atom_fadd_sc_u32(&svc.nidle, 1);
        }
        /* Extra workers park at once: they share a CPU with another. */
        if (!w->extra && now - idle_since < svc.spin_ns) {
            cpu_relax();
            continue;
        }
        if (w->extra && now - idle_since >= IDLE_EXIT_NS) {
            atom_fsub_sc_u32(&svc.nidle, 1);
            worker_leave(w);
            return NULL;
        }
        /* Park: the event count makes "check, then sleep" race-free. A
         * base worker keeps the timers of busy streams meanwhile (the
         * keeper, src/sched/keeper.c): it wakes for the next one. */
        uint32_t seq = atom_load_sc_u32(&svc.seq);
        atom_fadd_sc_u32(&svc.sleepers, 1);
        if (!atom_load_sc_ptr(&svc.inbox) && !atom_load_sc_u32(&svc.queued) &&
            !atom_load_sc_u32(&svc.stop)) {
            struct timespec ts = {0, (long)(IDLE_EXIT_NS / 2)};
            bool held = false;
            uint64_t until = w->extra ? UINT64_MAX
                                      : coexec__timers_keep(NULL, &held);
            if (until != UINT64_MAX)
                ts = clock_until(until);
            coexec__futex_wait(&svc.seq, seq,
                               w->extra || until != UINT64_MAX ? &ts : NULL);
            if (!w->extra)
                coexec__timers_unkeep(NULL, held,
                                      atom_load_sc_ptr(&svc.inbox) ||
                                          atom_load_sc_u32(&svc.queued));
        }
        atom_fsub_sc_u32(&svc.sleepers, 1);
    }
}

/* ---- start and stop ------------------------------------------------------ */

static void ring_start(coexec_service_io_t mode);

int coexec__service_start(void)
{
    const coexec_config_t *c = &coexec__g.cfg;
    memset(svc.cpus, 0, sizeof svc.cpus);
    svc.ncpus = 0;
    svc.shares_cpu = 0;
    if (c->affinity) {
        if (c->service_cpus[0]) {
            /* Checked at init: a list of CPUs the process may run on. */
            if (coexec__cpulist_parse(c->service_cpus, svc.cpus, MAX_SVC_CPUS,
                                      &svc.ncpus))
                svc.ncpus = 0;
        } else {
            int last = coexec__affinity_last_cpu();
            if (last >= 0) {
                svc.cpus[0] = last;
                svc.ncpus = 1;
            }
        }
    }
    /* Does the first service CPU also run a compute stream? */
    if (svc.ncpus) {
        pthread_mutex_lock(&coexec__g.lock);
        for (int r = 0; r < MAX_XSTREAMS; r++) {
            struct coexec_xstream_rec *xs = coexec__xsr.by_rank[r];
            if (xs && xs->cpu == svc.cpus[0])
                svc.shares_cpu = 1;
        }
        pthread_mutex_unlock(&coexec__g.lock);
        /* The default (the binding's last CPU) shares it whenever the
         * streams fill the binding, as documented: only CPUs the user
         * chose deserve a word. */
        if (svc.shares_cpu && c->service_cpus[0])
            coexec__warn("the service stream shares cpu %d with a compute "
                         "stream (COEXEC_SERVICE_CPUS)", svc.cpus[0]);
    }
    atom_store_rlx_ptr(&svc.inbox, NULL);
    atom_store_rlx_u32(&svc.closed, 0);
    wlist_init(&grace.waiters, &grace.lock);
    atom_store_rlx_u32(&svc.stop, 0);
    atom_store_rlx_u32(&svc.nidle, 0);
    atom_store_rlx_u32(&svc.sleepers, 0);
    atom_store_rlx_u64(&svc.completed, 0);
    svc.qhead = svc.qtail = NULL;
    svc.workers = NULL;
    svc.nthreads = 0;
    svc.spawned = 0;
    svc.base = c->service_threads;
    svc.max = c->service_max_threads;
    svc.spin_ns = (uint64_t)c->service_spin_us * 1000;
    coexec__timers_set_helper(&timer_helper); /* before a worker parks */
    svc.ring_kinds = 0;
    svc.io_mode = c->service_io;
    atom_store_rlx_u32(&svc.live, 0);
    svc.started = 1;
    /* The threads and the ring start on first use (coexec__svc_live_slow):
     * a program that never offloads has no thread of the service. */
    return COEXEC_OK;
}

int coexec__svc_live_slow(void)
{
    int rc = COEXEC_OK;
    pthread_mutex_lock(&svc.live_lock);
    if (atom_load_rlx_u32(&svc.live) == 0 && !atom_load_acq_u32(&svc.closed)) {
        pthread_mutex_lock(&svc.qlock);
        while (svc.nthreads < svc.base && rc == COEXEC_OK)
            rc = worker_spawn_locked(0);
        pthread_mutex_unlock(&svc.qlock);
        if (rc == COEXEC_OK) {
            ring_start(svc.io_mode);
            /* Release: ring_kinds, to every reader that acquires it. */
            atom_store_rel_u32(&svc.live, 1);
        }
    }
    pthread_mutex_unlock(&svc.live_lock);
    return rc;
}

/* Starts the io_uring path unless told not to; falls back to the thread
 * path silently (auto) or with one warning (uring). */
static void ring_start(coexec_service_io_t mode)
{
    if (mode == COEXEC_SERVICE_IO_THREADS)
        return;
    const char *why = "refused (test)";
    int rc = coexec__service_ring_refuse
                 ? COEXEC_EPERM
                 : coexec__ring_start(svc.ncpus ? svc.cpus[0] : -1,
                                      svc.spin_ns, &why);
    if (rc == COEXEC_OK)
        svc.ring_kinds = coexec__ring_kinds();
    else if (mode == COEXEC_SERVICE_IO_URING)
        coexec__warn("service_io is uring, but %s: file I/O takes the "
                     "service threads", why);
}

void coexec__service_progress(void)
{
    /* seq_cst, against close's store of `closed` and its later reading of
     * the busy state (a worker's cur under its lock, the ring's busy count,
     * both changed before this call): a completion that misses the flag
     * is seen there. */
    if (LIKELY(!atom_load_sc_u32(&svc.closed)))
        return;
    spin_lock(&grace.lock);
    grace.seq++;
    coexec__wait_release_all(&grace.waiters, WN_DONE);
    spin_unlock(&grace.lock);
}

static uint32_t grace_seq(void)
{
    spin_lock(&grace.lock);
    uint32_t s = grace.seq;
    spin_unlock(&grace.lock);
    return s;
}

/* Parks the caller (a ULT: its stream runs other units meanwhile, or
 * parks) until a call completes after grace_seq() returned seen, or until
 * `until`. */
static void grace_wait(uint32_t seen, uint64_t until)
{
    struct caller c;
    if (wait_caller(&c) != COEXEC_OK) {
        sched_yield(); /* a scheduler loop cannot wait: look again */
        return;
    }
    spin_lock(&grace.lock);
    if (grace.seq != seen) {
        spin_unlock(&grace.lock);
        return;
    }
    struct waiter w;
    waiter_init(&w, &c, &grace.waiters, &grace.lock, WN_NOCANCEL,
                "service grace period", NULL);
    wlist_push(&grace.waiters, &w.node);
    spin_unlock(&grace.lock);
    IGNORE_RESULT(coexec__wait_block(&w, until));
}

/* The ring's wait for its cancelled calls: until the next completion, at
 * most 10 ms (it checks its own deadline between the waits). */
static void grace_pause(void)
{
    grace_wait(grace_seq(), clock_now_ns() + 10000000ull);
}

void coexec__service_close(void)
{
    if (!svc.started)
        return;
    atom_store_sc_u32(&svc.closed, 1);
    /* Cancel everything queued. */
    pthread_mutex_lock(&svc.qlock);
    coexec__svc_drain_inbox_locked();
    struct request *r = svc.qhead;
    svc.qhead = svc.qtail = NULL;
    pthread_mutex_unlock(&svc.qlock);
    atom_store_rlx_u32(&svc.queued, 0);
    while (r) {
        struct request *n = r->next;
        r->next = r->prev = NULL;
        coexec__rq_complete(r, -ECANCELED, RQ_CANCELED);
        r = n;
    }
    coexec__ring_cancel_queued();
    /* Let running calls finish, then abandon the stuck ones. */
    uint64_t until = clock_now_ns() + GRACE_NS;
    for (;;) {
        /* Read before the busy state: a completion after it is seen. */
        uint32_t seen = grace_seq();
        int busy = (int)coexec__ring_busy();
        pthread_mutex_lock(&svc.qlock);
        for (struct worker *w = svc.workers; w; w = w->next) {
            spin_lock(&w->lock);
            busy += w->cur != NULL && !w->abandoned;
            spin_unlock(&w->lock);
        }
        pthread_mutex_unlock(&svc.qlock);
        if (!busy || clock_now_ns() >= until)
            break;
        grace_wait(seen, until);
    }
    /* The ring's calls still in the kernel: cancelled, else abandoned. */
    int lost = coexec__ring_cancel_all(grace_pause);
    if (lost)
        coexec__warn("coexec_finalize: %d file call(s) in io_uring could not "
                     "be cancelled; their waiters got ECANCELED", lost);
    pthread_mutex_lock(&svc.qlock);
    struct worker **p = &svc.workers;
    while (*p) {
        struct worker *w = *p;
        spin_lock(&w->lock);
        if (w->cur) {
            w->abandoned = 1;
            coexec__rq_complete(w->cur, -ECANCELED, RQ_CANCELED);
            w->cur = NULL;
            spin_unlock(&w->lock);
            *p = w->next; /* it frees itself when its call returns */
            svc.nthreads--;
            pthread_detach(w->thread);
            coexec__warn("coexec_finalize: a service call was still running "
                         "after %llu ms; its waiter got ECANCELED",
                         (unsigned long long)(GRACE_NS / 1000000));
            continue;
        }
        spin_unlock(&w->lock);
        p = &w->next;
    }
    pthread_mutex_unlock(&svc.qlock);
}

void coexec__service_stop(void)
{
    if (!svc.started)
        return;
    /* No thread starts from now on (a late first use finds it stopped). */
    pthread_mutex_lock(&svc.live_lock);
    atom_store_rel_u32(&svc.live, 2);
    pthread_mutex_unlock(&svc.live_lock);
    coexec__ring_stop();
    svc.ring_kinds = 0;
    atom_store_sc_u32(&svc.stop, 1);
    kick_all();
    for (;;) {
        pthread_mutex_lock(&svc.qlock);
        struct worker *w = svc.workers;
        if (w) {
            svc.workers = w->next;
            svc.nthreads--;
        }
        pthread_mutex_unlock(&svc.qlock);
        if (!w)
            break;
        pthread_join(w->thread, NULL);
        free(w);
    }
    /* Requests that slipped in after close. */
    pthread_mutex_lock(&svc.qlock);
    coexec__svc_drain_inbox_locked();
    struct request *r = svc.qhead;
    svc.qhead = svc.qtail = NULL;
    atom_store_rlx_u32(&svc.queued, 0);
    pthread_mutex_unlock(&svc.qlock);
    while (r) {
        struct request *n = r->next;
        coexec__rq_complete(r, -ECANCELED, RQ_CANCELED);
        r = n;
    }
    coexec__timers_set_helper(NULL);
    svc.started = 0;
}

bool coexec__service_offloads(void)
{
    struct coexec_xstream_rec *xs = xs_self_entry();
    return xs && xs->cur && xs->cur->kind != UNIT_TASKLET && svc.started &&
           !atom_load_rlx_u32(&svc.closed);
}

/* fork, in the child (core/process.c): the workers and the ring thread
 * are gone with the parent's other threads; their records stay allocated.
 * Requests the parent had queued never complete here. */
void coexec__service_atfork_child(void)
{
    coexec__ring_atfork_child();
    pthread_mutex_init(&svc.qlock, NULL);
    pthread_mutex_init(&svc.live_lock, NULL);
    atom_store_rlx_u32(&svc.live, 0);
    atom_store_rlx_ptr(&svc.inbox, NULL);
    atom_store_rlx_u32(&svc.queued, 0);
    svc.qhead = svc.qtail = NULL;
    svc.workers = NULL;
    svc.nthreads = 0;
    svc.ring_kinds = 0;
    svc.started = 0;
    coexec__svc_request_atfork_child();
}
