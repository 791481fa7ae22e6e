/*
 * tests/core/test_finalize.c: what finalize does with units still blocked,
 * and the objects they were blocked on.
 *
 *   timed  units in 1-hour sleeps and 1-hour timed waits of every kind
 *          (eventual, future, mutex, cond, rwlock read and write, channel
 *          send and recv), on secondary streams and on the primary: each
 *          is woken with COEXEC_ECANCELED and finalize returns
 *   after  units (ULTs and polling tasklets) blocked without a timeout on
 *          every object kind, a joiner and a suspended ULT: each sees its
 *          named result; afterwards every object answers its calls (a named
 *          error, or the fresh object's behaviour), none crashes, and the
 *          runtime starts again and works
 *   grace  finalize waiting for a running service call parks: the main
 *          thread uses a small part of the wall time in CPU
 *
 * Timing never decides a verdict: the results the units saw are asserted.
 * A watchdog (alarm) ends the process only after 120 s, far beyond any
 * correct run, so that an hour-long hold fails instead of hanging ctest.
 * The grace suite's CPU bound is a property of parking (a spinning wait
 * costs as much CPU as wall time), not a speed measure.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NSTREAMS 3 /* secondary streams, beside the primary */
#define HOUR_NS (3600ull * 1000000000ull)
#define WATCHDOG_S 120
#define RC_NONE 1 /* not returned yet */

static void init_quiet(void)
{
    coexec_config_t cfg;
    CH_ASSERT_OK_FATAL(coexec_config_init(&cfg));
    cfg.num_xstreams = 1;
    cfg.quiet = 1; /* streams, pools and units left to finalize */
    CH_ASSERT_OK_FATAL(coexec_init(&cfg));
}

/* Streams whose units stay there (FIFO pool, no stealing). */
static ch_stream_t streams[NSTREAMS];

static void streams_create(void)
{
    for (int i = 0; i < NSTREAMS; i++)
        CH_ASSERT_OK_FATAL(ch_stream_create(&streams[i],
                                            COEXEC_SCHED_BASIC_WAIT));
}

/* The pool of place i: 0 the primary's main pool, then the streams. */
static coexec_pool_t place_pool(int i)
{
    i %= NSTREAMS + 1;
    if (i > 0)
        return streams[i - 1].pool;
    coexec_xstream_t x;
    coexec_pool_t p = {0};
    CH_CHECK_RC(coexec_xstream_by_rank(0, &x), COEXEC_OK);
    CH_CHECK_RC(coexec_xstream_get_main_pool(x, &p), COEXEC_OK);
    return p;
}

/* Waits (yielding) until the unit is parked. */
static bool wait_blocked(coexec_thread_t t)
{
    return CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_BLOCKED);
}

static bool wait_blocked_tasklet(coexec_tasklet_t k)
{
    return CH_WAIT(ch_tasklet_state(k) == COEXEC_UNIT_BLOCKED);
}

/* ======================================================================= */
/* the objects and the waits                                               */
/* ======================================================================= */

static struct {
    coexec_eventual_t ev;
    coexec_future_t fut;
    coexec_mutex_t mx; /* held by the main ULT */
    coexec_cond_t cv;
    coexec_mutex_t cvm; /* cond's mutex: each waiter's own turn */
    coexec_rwlock_t rw; /* write-held by the main ULT */
    coexec_barrier_t bar;
    coexec_channel_t full;  /* capacity 1, one message in it */
    coexec_channel_t empty; /* nothing in it */
} O;

#define BAR_WAITERS 2
#define MSG_FULL 0x5eed

static void objects_init(void)
{
    /* Fresh memory each test: an init over an object an earlier test left
     * held (the mutex, the rwlock) would be COEXEC_EBUSY. */
    int r_;
    r_ = coexec_eventual_destroy(&O.ev); /* buffers of the earlier test */
    r_ = coexec_future_destroy(&O.fut);
    r_ = coexec_channel_destroy(&O.full);
    r_ = coexec_channel_destroy(&O.empty);
    (void)r_;
    memset(&O, 0, sizeof O);
    CH_ASSERT_OK_FATAL(coexec_eventual_init(&O.ev, sizeof(int)));
    CH_ASSERT_OK_FATAL(coexec_future_init(&O.fut, 1, NULL, NULL));
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&O.mx, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK_FATAL(coexec_cond_init(&O.cv));
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&O.cvm, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK_FATAL(coexec_rwlock_init(&O.rw));
    CH_ASSERT_OK_FATAL(coexec_barrier_init(&O.bar, BAR_WAITERS + 1));
    CH_ASSERT_OK_FATAL(coexec_channel_init(&O.full, sizeof(int), 1));
    CH_ASSERT_OK_FATAL(coexec_channel_init(&O.empty, sizeof(int), 4));
    int m = MSG_FULL;
    CH_ASSERT_OK_FATAL(coexec_channel_try_send(&O.full, &m));
    /* The main ULT holds these, so their waiters wait. */
    CH_ASSERT_OK_FATAL(coexec_mutex_lock(&O.mx));
    CH_ASSERT_OK_FATAL(coexec_rwlock_wrlock(&O.rw));
}

enum wkind {
    W_SLEEP,
    W_EVENTUAL,
    W_FUTURE,
    W_MUTEX,
    W_COND,
    W_RDLOCK,
    W_WRLOCK,
    W_SEND,
    W_RECV,
    W_BARRIER, /* untimed only */
    W_NKINDS
};

static const char *const kind_name[W_NKINDS] = {
    "sleep",  "eventual", "future", "mutex", "cond",
    "rdlock", "wrlock",   "send",   "recv",  "barrier"};

typedef struct {
    enum wkind kind;
    bool timed;
    atomic_int rc;  /* the wait's result */
    atomic_int rc2; /* a second wait of the same kind, after the first */
    bool again;     /* make the second wait */
} wt_t;

/* One wait of w's kind; timed ones last an hour. */
static int do_wait(wt_t *w)
{
    uint64_t t = HOUR_NS;
    int msg = 7;
    switch (w->kind) {
    case W_SLEEP:
        return w->timed ? coexec_sleep_ns(t) : COEXEC_EINVAL;
    case W_EVENTUAL:
        return w->timed ? coexec_eventual_wait_timed(&O.ev, t, NULL)
                        : coexec_eventual_wait(&O.ev, NULL);
    case W_FUTURE:
        return w->timed ? coexec_future_wait_timed(&O.fut, t)
                        : coexec_future_wait(&O.fut);
    case W_MUTEX:
        return w->timed ? coexec_mutex_lock_timed(&O.mx, t)
                        : coexec_mutex_lock(&O.mx);
    case W_COND: {
        int rc = coexec_mutex_lock(&O.cvm);
        if (rc)
            return rc;
        rc = w->timed ? coexec_cond_wait_timed(&O.cv, &O.cvm, t)
                      : coexec_cond_wait(&O.cv, &O.cvm);
        /* Held again on return, whatever the result. */
        CH_CHECK_RC(coexec_mutex_unlock(&O.cvm), COEXEC_OK);
        return rc;
    }
    case W_RDLOCK:
        return w->timed ? coexec_rwlock_rdlock_timed(&O.rw, t)
                        : coexec_rwlock_rdlock(&O.rw);
    case W_WRLOCK:
        return w->timed ? coexec_rwlock_wrlock_timed(&O.rw, t)
                        : coexec_rwlock_wrlock(&O.rw);
    case W_SEND:
        return w->timed ? coexec_channel_send_timed(&O.full, &msg, t)
                        : coexec_channel_send(&O.full, &msg);
    case W_RECV:
        return w->timed ? coexec_channel_recv_timed(&O.empty, &msg, t)
                        : coexec_channel_recv(&O.empty, &msg);
    case W_BARRIER:
        return coexec_barrier_wait(&O.bar, NULL);
    default:
        return COEXEC_EINVAL;
    }
}

static void waiter_ult(void *arg)
{
    wt_t *w = arg;
    atomic_store(&w->rc, do_wait(w));
    if (w->again)
        atomic_store(&w->rc2, do_wait(w));
}

#define MAX_WAITERS 64
static wt_t wts[MAX_WAITERS];
static coexec_thread_t wth[MAX_WAITERS];
static int nwts;

/* Starts a ULT waiting as w on place `place` and waits until it parks. */
static void start_waiter(enum wkind k, bool timed, int place, bool again)
{
    CU_ASSERT_FATAL(nwts < MAX_WAITERS);
    wt_t *w = &wts[nwts];
    w->kind = k;
    w->timed = timed;
    w->again = again;
    atomic_init(&w->rc, RC_NONE);
    atomic_init(&w->rc2, RC_NONE);
    CH_ASSERT_OK_FATAL(
        coexec_thread_create(place_pool(place), waiter_ult, w, NULL,
                             &wth[nwts]));
    CU_ASSERT(wait_blocked(wth[nwts]));
    nwts++;
}

static void check_waiters(int want)
{
    for (int i = 0; i < nwts; i++) {
        int rc = atomic_load(&wts[i].rc);
        if (rc != want)
            fprintf(stderr, "    %s%s waiter %d: %s\n",
                    wts[i].timed ? "timed " : "", kind_name[wts[i].kind], i,
                    rc == RC_NONE ? "never returned" : coexec_err_name(rc));
        CH_ASSERT_RC(rc, want);
        if (wts[i].again)
            CH_ASSERT_RC(atomic_load(&wts[i].rc2), want);
    }
}

static void watchdog_arm(void) { alarm(WATCHDOG_S); }
static void watchdog_disarm(void) { alarm(0); }

/* ======================================================================= */
/* timed                                                                    */
/* ======================================================================= */

/* A 1-hour sleep on a secondary stream and one on the primary. */
static void t_timed_sleep(void)
{
    init_quiet();
    streams_create();
    nwts = 0;
    start_waiter(W_SLEEP, true, 1, true);
    start_waiter(W_SLEEP, true, 0, true);
    watchdog_arm();
    ch_finalize();
    watchdog_disarm();
    check_waiters(COEXEC_ECANCELED);
}

/* 1-hour timed waits of every kind, each on every place: the streams end
 * them when they stop, the primary at the end. */
static void t_timed_every_kind(void)
{
    init_quiet();
    streams_create();
    objects_init();
    nwts = 0;
    for (int k = W_SLEEP; k < W_BARRIER; k++)
        for (int place = 0; place <= NSTREAMS; place++)
            start_waiter((enum wkind)k, true, place, false);
    watchdog_arm();
    ch_finalize();
    watchdog_disarm();
    check_waiters(COEXEC_ECANCELED);
}

/* A sleeper woken by finalize that sleeps again is not held either: its
 * second sleep also ends at once with COEXEC_ECANCELED. */
static void t_timed_sleep_again(void)
{
    init_quiet();
    streams_create();
    nwts = 0;
    for (int place = 0; place <= NSTREAMS; place++)
        start_waiter(W_SLEEP, true, place, true);
    watchdog_arm();
    ch_finalize();
    watchdog_disarm();
    check_waiters(COEXEC_ECANCELED);
}

/* ======================================================================= */
/* after                                                                    */
/* ======================================================================= */

/* A tasklet polling an object: its first poll registers it (PENDING); the
 * result of the poll that finally returns something else is kept. */
enum tkind { T_EVENTUAL, T_FUTURE, T_RECV, T_NKINDS };

typedef struct {
    enum tkind kind;
    atomic_int polls;
    atomic_int rc;
} tp_t;

static coexec_poll_status_t poller(coexec_poll_t *cx, void *arg)
{
    tp_t *t = arg;
    int msg, rc;
    atomic_fetch_add(&t->polls, 1);
    switch (t->kind) {
    case T_EVENTUAL:
        rc = coexec_eventual_poll(&O.ev, cx, NULL);
        break;
    case T_FUTURE:
        rc = coexec_future_poll(&O.fut, cx);
        break;
    default:
        rc = coexec_channel_poll_recv(&O.empty, cx, &msg);
        break;
    }
    if (rc == COEXEC_PENDING)
        return COEXEC_PENDING;
    atomic_store(&t->rc, rc);
    return COEXEC_READY;
}

/* The joinee waits on the eventual; the joiner joins it. */
typedef struct {
    coexec_thread_t joinee;
    atomic_int joinee_rc;
    atomic_int join_rc;
} jn_t;

static void joinee_ult(void *arg)
{
    jn_t *j = arg;
    atomic_store(&j->joinee_rc, coexec_eventual_wait(&O.ev, NULL));
}

static void joiner_ult(void *arg)
{
    jn_t *j = arg;
    atomic_store(&j->join_rc, coexec_thread_join(j->joinee));
}

static void suspender_ult(void *arg)
{
    atomic_int *rc = arg;
    atomic_store(rc, coexec_self_suspend());
}

/* Every object kind with units blocked on it at finalize, then used. */
static void t_after_every_kind(void)
{
    init_quiet();
    streams_create();
    objects_init();
    nwts = 0;
    /* ULTs on every place, the first of each kind waiting again after. */
    for (int k = W_EVENTUAL; k < W_NKINDS; k++) {
        int n = k == W_BARRIER ? BAR_WAITERS : NSTREAMS + 1;
        for (int place = 0; place < n; place++)
            start_waiter((enum wkind)k, false, place, place == 0);
    }
    /* Tasklets polling, on every place. */
    static tp_t tps[T_NKINDS * (NSTREAMS + 1)];
    coexec_tasklet_t tk[T_NKINDS * (NSTREAMS + 1)];
    int ntp = 0;
    for (int k = 0; k < T_NKINDS; k++)
        for (int place = 0; place <= NSTREAMS; place++, ntp++) {
            tps[ntp].kind = (enum tkind)k;
            atomic_init(&tps[ntp].polls, 0);
            atomic_init(&tps[ntp].rc, RC_NONE);
            CH_ASSERT_OK_FATAL(coexec_tasklet_create(
                place_pool(place), poller, &tps[ntp], &tk[ntp]));
            CU_ASSERT(wait_blocked_tasklet(tk[ntp]));
        }
    /* A joiner of a blocked ULT, and a suspended ULT, on a stream. */
    static jn_t jn;
    atomic_init(&jn.joinee_rc, RC_NONE);
    atomic_init(&jn.join_rc, RC_NONE);
    coexec_thread_t joiner, susp;
    CH_ASSERT_OK_FATAL(coexec_thread_create(place_pool(2), joinee_ult, &jn,
                                            NULL, &jn.joinee));
    CU_ASSERT(wait_blocked(jn.joinee));
    CH_ASSERT_OK_FATAL(coexec_thread_create(place_pool(3), joiner_ult, &jn,
                                            NULL, &joiner));
    CU_ASSERT(wait_blocked(joiner));
    static atomic_int susp_rc;
    atomic_init(&susp_rc, RC_NONE);
    CH_ASSERT_OK_FATAL(coexec_thread_create(place_pool(1), suspender_ult,
                                            &susp_rc, NULL, &susp));
    CU_ASSERT(wait_blocked(susp));

    watchdog_arm();
    ch_finalize();
    watchdog_disarm();

    /* What each blocked unit saw. */
    check_waiters(COEXEC_ECANCELED);
    for (int i = 0; i < ntp; i++) {
        CH_ASSERT_RC(atomic_load(&tps[i].rc), COEXEC_ECANCELED);
        CU_ASSERT(atomic_load(&tps[i].polls) == 2);
    }
    CH_ASSERT_RC(atomic_load(&jn.joinee_rc), COEXEC_ECANCELED);
    CH_ASSERT_RC(atomic_load(&jn.join_rc), COEXEC_OK);
    CH_ASSERT_RC(atomic_load(&susp_rc), COEXEC_ECANCELED);

    /* The objects after finalize: no waiter is left on any of them. */
    int v = 42, *pv = NULL, is = -1;
    CH_ASSERT_OK(coexec_eventual_set(&O.ev, &v, sizeof v));
    CH_ASSERT_OK(coexec_eventual_test(&O.ev, (void **)&pv, &is));
    CU_ASSERT(is == 1 && pv && *pv == 42);
    CH_ASSERT_OK(coexec_eventual_wait(&O.ev, NULL)); /* set: no wait */
    CH_ASSERT_OK(coexec_eventual_destroy(&O.ev));
    CH_ASSERT_RC(coexec_eventual_set(&O.ev, NULL, 0), COEXEC_EHANDLE);

    CH_ASSERT_OK(coexec_future_set(&O.fut, &v));
    CH_ASSERT_OK(coexec_future_test(&O.fut, &is));
    CU_ASSERT(is == 1);
    CH_ASSERT_OK(coexec_future_wait(&O.fut));
    CH_ASSERT_OK(coexec_future_reset(&O.fut));
    CH_ASSERT_OK(coexec_future_destroy(&O.fut));

    /* Held by the main ULT of a runtime that is gone: this thread is not
     * its owner now. */
    CH_ASSERT_RC(coexec_mutex_trylock(&O.mx), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_mutex_unlock(&O.mx), COEXEC_EPERM);
    CH_ASSERT_RC(coexec_mutex_destroy(&O.mx), COEXEC_EBUSY);

    CH_ASSERT_OK(coexec_cond_signal(&O.cv));
    CH_ASSERT_OK(coexec_cond_broadcast(&O.cv));
    CH_ASSERT_OK(coexec_cond_destroy(&O.cv));
    CH_ASSERT_OK(coexec_mutex_trylock(&O.cvm));
    CH_ASSERT_OK(coexec_mutex_unlock(&O.cvm));
    CH_ASSERT_OK(coexec_mutex_destroy(&O.cvm));

    CH_ASSERT_RC(coexec_rwlock_tryrdlock(&O.rw), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_rwlock_trywrlock(&O.rw), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_rwlock_unlock(&O.rw), COEXEC_EPERM);
    CH_ASSERT_RC(coexec_rwlock_destroy(&O.rw), COEXEC_EBUSY);

    /* The cancelled arrivals were taken back. */
    CH_ASSERT_OK(coexec_barrier_destroy(&O.bar));

    int m = 0;
    size_t n = 9;
    CH_ASSERT_OK(coexec_channel_count(&O.full, &n));
    CU_ASSERT(n == 1);
    CH_ASSERT_OK(coexec_channel_try_recv(&O.full, &m));
    CU_ASSERT(m == MSG_FULL);
    CH_ASSERT_RC(coexec_channel_try_recv(&O.full, &m), COEXEC_EAGAIN);
    m = 5;
    CH_ASSERT_OK(coexec_channel_try_send(&O.empty, &m));
    m = 0;
    CH_ASSERT_OK(coexec_channel_recv(&O.empty, &m));
    CU_ASSERT(m == 5);
    CH_ASSERT_OK(coexec_channel_close(&O.full));
    CH_ASSERT_OK(coexec_channel_close(&O.empty));
    CH_ASSERT_RC(coexec_channel_send(&O.empty, &m), COEXEC_ECLOSED);
    CH_ASSERT_OK(coexec_channel_destroy(&O.full));
    CH_ASSERT_OK(coexec_channel_destroy(&O.empty));

    /* Handles of the gone runtime. */
    CH_ASSERT_RC(coexec_thread_join(joiner), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_resume(susp), COEXEC_ENOTINIT);
}

/* After a finalize that cancelled blocked units, the runtime starts again
 * and the same kinds of waits work (and end) normally. */
static void setter_ult(void *arg)
{
    (void)arg;
    int v = 3;
    CH_CHECK_RC(coexec_eventual_set(&O.ev, &v, sizeof v), COEXEC_OK);
}

static void locker_ult(void *arg)
{
    atomic_int *rc = arg;
    int r = coexec_mutex_lock(&O.mx);
    if (r == COEXEC_OK)
        r = coexec_mutex_unlock(&O.mx);
    atomic_store(rc, r);
}

static void t_after_reinit(void)
{
    CH_ASSERT_OK_FATAL(coexec_eventual_init(&O.ev, sizeof(int)));
    /* The earlier test left O.mx held by a gone main ULT: an init over a
     * held mutex is COEXEC_EBUSY, so start from fresh memory. */
    memset(&O.mx, 0, sizeof O.mx);
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&O.mx, COEXEC_MUTEX_PLAIN));
    for (int round = 0; round < 2; round++) {
        init_quiet();
        streams_create();
        CH_ASSERT_OK(coexec_mutex_lock(&O.mx));
        nwts = 0;
        for (int place = 0; place <= NSTREAMS; place++) {
            start_waiter(W_EVENTUAL, false, place, false);
            start_waiter(W_EVENTUAL, true, place, false);
            start_waiter(W_MUTEX, false, place, false);
            start_waiter(W_SLEEP, true, place, false);
        }
        CH_ASSERT_OK(coexec_mutex_unlock(&O.mx)); /* wakes one locker */
        watchdog_arm();
        ch_finalize();
        watchdog_disarm();
        /* The mutex's waiters: the one the unlock released may have got
         * it first; the others were cancelled. */
        int got = 0;
        for (int i = 0; i < nwts; i++)
            if (wts[i].kind == W_MUTEX &&
                atomic_load(&wts[i].rc) == COEXEC_OK) {
                got++;
                atomic_store(&wts[i].rc, COEXEC_ECANCELED); /* counted */
            }
        CU_ASSERT(got <= 1);
        check_waiters(COEXEC_ECANCELED);

        /* Again: the same objects, and waits that are now satisfied. */
        init_quiet();
        streams_create();
        if (got) { /* its locker ended holding it: a fresh mutex */
            memset(&O.mx, 0, sizeof O.mx);
            CH_ASSERT_OK_FATAL(coexec_mutex_init(&O.mx, COEXEC_MUTEX_PLAIN));
        }
        CH_ASSERT_OK(coexec_mutex_lock(&O.mx));
        nwts = 0;
        for (int place = 0; place <= NSTREAMS; place++)
            start_waiter(W_EVENTUAL, false, place, false);
        static atomic_int lrc[NSTREAMS];
        coexec_thread_t lt[NSTREAMS], set;
        for (int i = 0; i < NSTREAMS; i++) {
            atomic_init(&lrc[i], RC_NONE);
            CH_ASSERT_OK_FATAL(coexec_thread_create(
                place_pool(i + 1), locker_ult, &lrc[i], NULL, &lt[i]));
            CU_ASSERT(wait_blocked(lt[i]));
        }
        CH_ASSERT_OK(coexec_mutex_unlock(&O.mx));
        CH_ASSERT_OK_FATAL(coexec_thread_create(place_pool(2), setter_ult,
                                                NULL, NULL, &set));
        CH_ASSERT_OK(coexec_thread_join(set));
        for (int i = 0; i < nwts; i++)
            CH_ASSERT_OK(coexec_thread_join(wth[i]));
        for (int i = 0; i < NSTREAMS; i++) {
            CH_ASSERT_OK(coexec_thread_join(lt[i]));
            CH_ASSERT_RC(atomic_load(&lrc[i]), COEXEC_OK);
        }
        check_waiters(COEXEC_OK);
        ch_finalize();
        CH_ASSERT_OK(coexec_eventual_reset(&O.ev));
    }
    CH_ASSERT_OK(coexec_eventual_destroy(&O.ev));
    CH_ASSERT_OK(coexec_mutex_destroy(&O.mx));
}

/* ======================================================================= */
/* grace                                                                    */
/* ======================================================================= */

#define SLOW_CALL_NS 600000000L

static atomic_int slow_started, slow_done;

static intptr_t slow_call(void *arg)
{
    (void)arg;
    atomic_store(&slow_started, 1);
    struct timespec ts = {0, SLOW_CALL_NS};
    while (nanosleep(&ts, &ts) != 0)
        ;
    atomic_store(&slow_done, 1);
    return 42;
}

typedef struct {
    atomic_int rc;
    atomic_long ret;
} offload_t;

static void offloader_ult(void *arg)
{
    offload_t *o = arg;
    intptr_t ret = -1;
    atomic_store(&o->rc, coexec_offload(slow_call, NULL, &ret));
    atomic_store(&o->ret, (long)ret);
}

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Samples the scheduler state of thread `tid` ('R' running or runnable,
 * 'S' asleep...) every 5 ms until slow_done: a thread that spins is 'R'
 * however loaded the machine is, one that parks is 'S'. */
typedef struct {
    pid_t tid;
    atomic_int go;
    int samples, runnable;
} sampler_t;

static void *sampler(void *arg)
{
    sampler_t *sm = arg;
    while (!atomic_load(&sm->go))
        sched_yield();
    struct timespec first = {0, 20000000}; /* past finalize's first steps */
    nanosleep(&first, NULL);
    while (!atomic_load(&slow_done)) {
        char state = ch_task_state(sm->tid);
        if (!state)
            break;
        if (!atomic_load(&slow_done)) {
            sm->samples++;
            sm->runnable += state == 'R';
        }
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* A call runs in the service when finalize begins: finalize waits for it
 * (the grace period), parked, and the call's waiter gets its result. */
static void t_grace_parks(void)
{
    init_quiet();
    streams_create();
    static offload_t o;
    atomic_init(&o.rc, RC_NONE);
    atomic_init(&o.ret, 0);
    atomic_store(&slow_started, 0);
    atomic_store(&slow_done, 0);
    CH_ASSERT_OK_FATAL(coexec_thread_create(place_pool(1), offloader_ult, &o,
                                            NULL, NULL));
    CU_ASSERT(CH_WAIT(atomic_load(&slow_started)));
    static sampler_t sm;
    sm.tid = ch_gettid();
    sm.samples = sm.runnable = 0;
    atomic_init(&sm.go, 0);
    ch_pthread_t th;
    ch_pthread_start(&th, sampler, &sm);
    watchdog_arm();
    double c0 = thread_cpu(), w0 = ch_now();
    atomic_store(&sm.go, 1);
    ch_finalize();
    double cpu = thread_cpu() - c0, wall = ch_now() - w0;
    watchdog_disarm();
    ch_pthread_join(&th);
    fprintf(stderr,
            "    finalize: %.1f ms CPU over %.1f ms waiting for a running "
            "call; runnable in %d of %d samples\n",
            cpu * 1e3, wall * 1e3, sm.runnable, sm.samples);
    /* The call finished within the grace period and its waiter got it. */
    CH_ASSERT_RC(atomic_load(&o.rc), COEXEC_OK);
    CU_ASSERT(atomic_load(&o.ret) == 42);
    /* finalize did wait for it (the measures below mean something)... */
    CU_ASSERT(wall > 0.1);
    CU_ASSERT(sm.samples >= 10);
    /* ...and spent that time parked, not spinning. */
    CU_ASSERT(cpu < 0.25 * wall);
    CU_ASSERT(sm.runnable * 4 <= sm.samples);
}

/* ======================================================================= */

static const ch_test_t timed_tests[] = {
    {"sleep_hour", t_timed_sleep},
    {"every_kind_hour", t_timed_every_kind},
    {"sleep_again", t_timed_sleep_again},
    {NULL, NULL}};
static const ch_test_t after_tests[] = {
    {"every_kind", t_after_every_kind},
    {"reinit", t_after_reinit},
    {NULL, NULL}};
static const ch_test_t grace_tests[] = {
    {"parks", t_grace_parks},
    {NULL, NULL}};

static const ch_suite_t suites[] = {
    {"timed", timed_tests},
    {"after", after_tests},
    {"grace", grace_tests},
    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
