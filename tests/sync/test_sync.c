/*
 * tests/sync/test_sync.c: ULT synchronization objects (coexec/sync.h), keys
 * (coexec/key.h), sleep and timeouts (coexec/time.h).
 *
 *   mutex     exclusion between ULTs on 4 streams and external threads,
 *             static initialisers, recursion, FIFO hand-off, no starvation,
 *             timed locks, every error code
 *   cond      signal wakes one (the oldest), broadcast wakes all, the mutex
 *             is held on return, timed waits, producer/consumer, errors
 *   rwlock    shared readers, exclusive writers, arrival order (a waiting
 *             writer is not starved), try/timed variants, errors
 *   barrier   generations on 4 streams, one serial waiter per generation,
 *             external threads, errors
 *   xbarrier  the xstream barrier: one ULT per stream, external threads, a
 *             tasklet, errors
 *   key       per-ULT values, destructor counts and rounds (exit and
 *             detached ULTs too), delete, keys of an earlier init, limits
 *   sleep     never early, does not block the stream (sleep_ns(0) yields),
 *             parks an idle stream, deadline order, wakers do not cut a
 *             sleep short
 *   timeout   many timed waits of every kind on one stream, none early;
 *             short timeouts racing with hand-offs and signals leave every
 *             object consistent
 *   context   tasklets get COEXEC_ECONTEXT from every call that may wait
 *   args      NULL pointers and never-initialised objects
 *
 * Timing never decides a pass: the only time assertions are lower bounds
 * ("a timed wait or a sleep never returns early"), and the CPU-time bound of
 * sleep/idle_stream_parks, whose comment explains why it is a fact about
 * parking. Short pauses (linger()) only give a broken implementation the
 * chance to show itself; a correct one passes whatever their length. Loop
 * counts go through ch_iters() so COEXEC_TEST_SCALE shrinks them.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define NSTREAMS 4
#define MS 1000000ull
/* Timeout of timed waits that are expected to succeed: a hang guard only. */
#define LONG_TIMEOUT_NS ((uint64_t)(CH_WAIT_LIMIT_S * 1e9))

/* ======================================================================= */
/* helpers                                                                  */
/* ======================================================================= */

static int thread_state(coexec_thread_t t)
{
    coexec_unit_state_t st;
    int rc = coexec_thread_get_state(t, &st);
    return rc == COEXEC_OK ? (int)st : rc;
}

static coexec_xstream_t xs_rank(int rank)
{
    coexec_xstream_t xs = {0};
    CH_CHECK_RC(coexec_xstream_by_rank(rank, &xs), COEXEC_OK);
    return xs;
}

static coexec_pool_t pool_of_rank(int rank)
{
    coexec_pool_t p = {0};
    CH_CHECK_RC(coexec_xstream_get_main_pool(xs_rank(rank), &p), COEXEC_OK);
    return p;
}

/* A ULT on the main pool of stream `rank` (it may be stolen later). */
static void spawn_on(int rank, coexec_thread_fn_t fn, void *arg,
                     coexec_thread_t *t)
{
    CH_CHECK_RC(coexec_thread_create_on(xs_rank(rank), fn, arg, NULL, t),
                COEXEC_OK);
}

static void free_threads(coexec_thread_t *t, int n)
{
    for (int i = 0; i < n; i++)
        CH_CHECK_RC(coexec_thread_free(&t[i]), COEXEC_OK);
}

/* Waits until t is parked (for a lock, a cond, a barrier ...). */
static bool wait_blocked(coexec_thread_t t)
{
    return CH_WAIT(thread_state(t) == COEXEC_UNIT_BLOCKED);
}

/*
 * Lets others run for about ms milliseconds. Used only to give a broken
 * implementation the time to do the wrong thing (wake too many, grant a
 * lock it must not); a correct implementation passes whatever the length.
 */
static void linger(double ms)
{
    double t0 = ch_now();
    while ((ch_now() - t0) * 1e3 < ms)
        ch_relax();
}

/* A helper pthread running fn(arg) with a done flag. */
typedef struct {
    ch_pthread_t th;
    void (*fn)(void *);
    void *arg;
    atomic_int done;
    atomic_int tid;
} ext_t;

static void *ext_body(void *p)
{
    ext_t *e = p;
    atomic_store(&e->tid, (int)ch_gettid());
    e->fn(e->arg);
    atomic_store(&e->done, 1);
    return NULL;
}

static void ext_start(ext_t *e, void (*fn)(void *), void *arg)
{
    e->fn = fn;
    e->arg = arg;
    atomic_init(&e->done, 0);
    atomic_init(&e->tid, 0);
    ch_pthread_start(&e->th, ext_body, e);
}

static void ext_join(ext_t *e) { ch_pthread_join(&e->th); }

/* A pinned stream per slot (no stealing: units queued there run there). */
static void streams_create(ch_stream_t *s, int n)
{
    for (int i = 0; i < n; i++)
        CH_CHECK_RC(ch_stream_create(&s[i], COEXEC_SCHED_BASIC_WAIT),
                    COEXEC_OK);
}

static void streams_free(ch_stream_t *s, int n)
{
    for (int i = 0; i < n; i++)
        CH_CHECK_RC(ch_stream_free(&s[i]), COEXEC_OK);
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

/* ======================================================================= */
/* mutex                                                                    */
/* ======================================================================= */

typedef struct {
    coexec_mutex_t *m;
    long iters;
    long counter; /* protected by m; deliberately not atomic */
    atomic_int inside;
    atomic_long overlaps;
} excl_t;

/* iters rounds of lock, read-relax-write, unlock; from a ULT or a pthread */
static void excl_body(void *arg)
{
    excl_t *x = arg;
    long overlaps = 0;
    for (long i = 0; i < x->iters; i++) {
        int rc = coexec_mutex_lock(x->m);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            return;
        }
        if (atomic_fetch_add(&x->inside, 1) != 0)
            overlaps++;
        long v = x->counter;
        if (i % 8 == 0)
            ch_relax(); /* a ULT yields while holding the lock */
        x->counter = v + 1;
        atomic_fetch_sub(&x->inside, 1);
        CH_CHECK_RC(coexec_mutex_unlock(x->m), COEXEC_OK);
    }
    atomic_fetch_add(&x->overlaps, overlaps);
}

static void run_exclusion(coexec_mutex_t *m, int nult, int next, long iters)
{
    excl_t x = {.m = m, .iters = iters};
    coexec_thread_t t[32];
    ext_t e[4];
    for (int i = 0; i < nult; i++)
        spawn_on(i % NSTREAMS, excl_body, &x, &t[i]);
    for (int i = 0; i < next; i++)
        ext_start(&e[i], excl_body, &x);
    free_threads(t, nult);
    for (int i = 0; i < next; i++)
        ext_join(&e[i]);
    CH_ASSERT_EQ(atomic_load(&x.overlaps), 0);
    CH_ASSERT_EQ(x.counter, (long)(nult + next) * iters);
}

static void t_mutex_exclusion(void)
{
    ch_init(NSTREAMS);
    coexec_mutex_t m;
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&m, COEXEC_MUTEX_PLAIN));
    run_exclusion(&m, 16, 2, ch_iters(3000, 100));
    CH_ASSERT_OK(coexec_mutex_destroy(&m));
    /* a recursive mutex excludes others just the same */
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&m, COEXEC_MUTEX_RECURSIVE));
    run_exclusion(&m, 8, 2, ch_iters(2000, 50));
    CH_ASSERT_OK(coexec_mutex_destroy(&m));
    ch_finalize();
}

/* ---- static initialisers ---- */

static coexec_mutex_t g_static_mutex = COEXEC_MUTEX_INITIALIZER;
static coexec_mutex_t g_static_rec = COEXEC_MUTEX_RECURSIVE_INITIALIZER;

typedef struct {
    coexec_mutex_t *m;
    int want;
} try_t;

/* trylock expecting want; unlocks again if it got the lock */
static void try_body(void *arg)
{
    try_t *t = arg;
    int rc = coexec_mutex_trylock(t->m);
    CH_CHECK_RC(rc, t->want);
    if (rc == COEXEC_OK)
        CH_CHECK_RC(coexec_mutex_unlock(t->m), COEXEC_OK);
}

/* unlock of a mutex the caller does not hold */
static void unlock_eperm_body(void *arg)
{
    CH_CHECK_RC(coexec_mutex_unlock((coexec_mutex_t *)arg), COEXEC_EPERM);
}

static void t_mutex_static(void)
{
    ch_init(NSTREAMS);
    coexec_pool_t p1 = pool_of_rank(1);
    run_exclusion(&g_static_mutex, 8, 1, ch_iters(1000, 50));
    CH_ASSERT_OK(coexec_mutex_trylock(&g_static_mutex));
    try_t busy = {&g_static_mutex, COEXEC_EBUSY};
    CH_ASSERT_OK(ch_run_ult_in(p1, try_body, &busy));
    CH_ASSERT_RC(coexec_mutex_lock(&g_static_mutex), COEXEC_EDEADLK);
    CH_ASSERT_OK(coexec_mutex_unlock(&g_static_mutex));
    CH_ASSERT_OK(coexec_mutex_destroy(&g_static_mutex));

    /* the recursive initialiser makes a recursive mutex */
    CH_ASSERT_OK(coexec_mutex_lock(&g_static_rec));
    CH_ASSERT_OK(coexec_mutex_lock(&g_static_rec));
    try_t busy2 = {&g_static_rec, COEXEC_EBUSY};
    CH_ASSERT_OK(ch_run_ult_in(p1, try_body, &busy2));
    CH_ASSERT_OK(coexec_mutex_unlock(&g_static_rec));
    CH_ASSERT_OK(coexec_mutex_unlock(&g_static_rec));
    CH_ASSERT_RC(coexec_mutex_unlock(&g_static_rec), COEXEC_EPERM);
    CH_ASSERT_OK(coexec_mutex_destroy(&g_static_rec));
    ch_finalize();
}

/* ---- recursive ---- */

typedef struct {
    coexec_mutex_t *m;
    atomic_int trying;
    atomic_int got;
} contend_t;

static void contend_body(void *arg)
{
    contend_t *c = arg;
    atomic_store(&c->trying, 1);
    CH_CHECK_RC(coexec_mutex_lock(c->m), COEXEC_OK);
    atomic_store(&c->got, 1);
    CH_CHECK_RC(coexec_mutex_unlock(c->m), COEXEC_OK);
}

static void t_mutex_recursive(void)
{
    ch_init(NSTREAMS);
    coexec_pool_t p2 = pool_of_rank(2);
    coexec_mutex_t m;
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&m, COEXEC_MUTEX_RECURSIVE));
    CH_ASSERT_OK(coexec_mutex_lock(&m));
    CH_ASSERT_OK(coexec_mutex_lock(&m));
    /* trylock by the owner of a recursive mutex counts as one more lock */
    CH_ASSERT_OK(coexec_mutex_trylock(&m));
    CH_ASSERT_OK(coexec_mutex_lock_timed(&m, 0));
    CH_ASSERT_OK(coexec_mutex_unlock(&m)); /* back to three */

    contend_t c = {.m = &m};
    coexec_thread_t t;
    spawn_on(1, contend_body, &c, &t);
    CU_ASSERT(wait_blocked(t));
    try_t busy = {&m, COEXEC_EBUSY};
    for (int held = 3; held > 1; held--) {
        CH_ASSERT_OK(coexec_mutex_unlock(&m));
        linger(2);
        CH_ASSERT_EQ(atomic_load(&c.got), 0);
        CH_ASSERT_EQ(thread_state(t), COEXEC_UNIT_BLOCKED);
        CH_ASSERT_OK(ch_run_ult_in(p2, try_body, &busy));
        CH_ASSERT_OK(ch_run_ult_in(p2, unlock_eperm_body, &m));
    }
    /* the last unlock hands it over */
    CH_ASSERT_OK(coexec_mutex_unlock(&m));
    CH_WAIT(atomic_load(&c.got) == 1);
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(atomic_load(&c.got), 1);
    CH_ASSERT_RC(coexec_mutex_unlock(&m), COEXEC_EPERM);
    /* and it is free again, for anyone */
    try_t ok = {&m, COEXEC_OK};
    CH_ASSERT_OK(ch_run_ult_in(p2, try_body, &ok));
    CH_ASSERT_OK(coexec_mutex_lock(&m));
    CH_ASSERT_OK(coexec_mutex_unlock(&m));
    CH_ASSERT_OK(coexec_mutex_destroy(&m));
    ch_finalize();
}

/* ---- errors ---- */

static void *ext_try_unlock(void *arg)
{
    coexec_mutex_t *m = arg;
    CH_CHECK_RC(coexec_mutex_trylock(m), COEXEC_EBUSY);
    CH_CHECK_RC(coexec_mutex_unlock(m), COEXEC_EPERM);
    CH_CHECK_RC(coexec_mutex_lock_timed(m, 1 * MS), COEXEC_ETIMEDOUT);
    return NULL;
}

static void *ext_unlock_unlocked(void *arg)
{
    CH_CHECK_RC(coexec_mutex_unlock((coexec_mutex_t *)arg), COEXEC_EPERM);
    return NULL;
}

static void t_mutex_errors(void)
{
    ch_init(NSTREAMS);
    coexec_pool_t p1 = pool_of_rank(1);
    coexec_mutex_t m;
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&m, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_RC(coexec_mutex_unlock(&m), COEXEC_EPERM); /* unlocked */
    CH_ASSERT_OK(coexec_mutex_lock(&m));
    /* the owner relocks a plain mutex */
    CH_ASSERT_RC(coexec_mutex_lock(&m), COEXEC_EDEADLK);
    CH_ASSERT_RC(coexec_mutex_lock_timed(&m, 1 * MS), COEXEC_EDEADLK);
    CH_ASSERT_RC(coexec_mutex_trylock(&m), COEXEC_EBUSY);
    /* others: trylock is busy, unlock is not theirs */
    try_t busy = {&m, COEXEC_EBUSY};
    CH_ASSERT_OK(ch_run_ult_in(p1, try_body, &busy));
    CH_ASSERT_OK(ch_run_ult_in(p1, unlock_eperm_body, &m));
    ch_pthread_t th;
    ch_pthread_start(&th, ext_try_unlock, &m);
    ch_pthread_join(&th);
    /* destroy while locked: refused, the mutex stays usable */
    CH_ASSERT_RC(coexec_mutex_destroy(&m), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_mutex_unlock(&m));
    CH_ASSERT_RC(coexec_mutex_unlock(&m), COEXEC_EPERM);
    CH_ASSERT_OK(ch_run_ult_in(p1, unlock_eperm_body, &m));
    ch_pthread_start(&th, ext_unlock_unlocked, &m);
    ch_pthread_join(&th);
    CH_ASSERT_OK(coexec_mutex_lock_timed(&m, 0)); /* free: no wait needed */
    CH_ASSERT_OK(coexec_mutex_unlock(&m));
    CH_ASSERT_OK(coexec_mutex_destroy(&m));
    /* use after destroy */
    CH_ASSERT_RC(coexec_mutex_lock(&m), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_mutex_lock_timed(&m, 1 * MS), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_mutex_trylock(&m), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_mutex_unlock(&m), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_mutex_destroy(&m), COEXEC_EHANDLE);
    /* init makes it usable again */
    CH_ASSERT_OK(coexec_mutex_init(&m, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK(coexec_mutex_lock(&m));
    CH_ASSERT_OK(coexec_mutex_unlock(&m));
    CH_ASSERT_OK(coexec_mutex_destroy(&m));
    CH_ASSERT_RC(coexec_mutex_init(&m, (coexec_mutex_kind_t)7), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_mutex_init(&m, (coexec_mutex_kind_t)-1),
                 COEXEC_EINVAL);
    ch_finalize();
}

/* ---- timed ---- */

typedef struct {
    coexec_mutex_t *m;
    uint64_t timeout;
    atomic_int started;
    atomic_int done;
    int rc;
    uint64_t elapsed;
    int *order;   /* optional: where to log id when the lock is had */
    atomic_int *pos;
    int id;
} tlock_t;

static void tlock_body(void *arg)
{
    tlock_t *t = arg;
    atomic_store(&t->started, 1);
    uint64_t t0 = coexec_now_ns();
    int rc = t->timeout == UINT64_MAX ? coexec_mutex_lock(t->m)
                                      : coexec_mutex_lock_timed(t->m, t->timeout);
    t->elapsed = coexec_now_ns() - t0;
    t->rc = rc;
    if (rc == COEXEC_OK) {
        if (t->order)
            t->order[atomic_fetch_add(t->pos, 1)] = t->id;
        CH_CHECK_RC(coexec_mutex_unlock(t->m), COEXEC_OK);
    }
    atomic_store(&t->done, 1);
}

static void t_mutex_timed(void)
{
    ch_init(NSTREAMS);
    coexec_pool_t p1 = pool_of_rank(1);
    coexec_mutex_t m;
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&m, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK(coexec_mutex_lock(&m));

    /* held throughout: a ULT and an external thread time out, not early */
    const uint64_t tmo[] = {0, 1 * MS, 20 * MS};
    for (unsigned i = 0; i < sizeof tmo / sizeof tmo[0]; i++) {
        tlock_t a = {.m = &m, .timeout = tmo[i]};
        CH_ASSERT_OK(ch_run_ult_in(p1, tlock_body, &a));
        CH_ASSERT_RC(a.rc, COEXEC_ETIMEDOUT);
        CU_ASSERT(a.elapsed >= tmo[i]);
        tlock_t b = {.m = &m, .timeout = tmo[i]};
        ext_t e;
        ext_start(&e, tlock_body, &b);
        ext_join(&e);
        CH_ASSERT_RC(b.rc, COEXEC_ETIMEDOUT);
        CU_ASSERT(b.elapsed >= tmo[i]);
    }
    /* released in time: a ULT and an external thread get it */
    tlock_t a = {.m = &m, .timeout = LONG_TIMEOUT_NS};
    tlock_t b = {.m = &m, .timeout = LONG_TIMEOUT_NS};
    coexec_thread_t t;
    spawn_on(2, tlock_body, &a, &t);
    ext_t e;
    ext_start(&e, tlock_body, &b);
    CU_ASSERT(wait_blocked(t));
    CH_WAIT(atomic_load(&b.started));
    linger(5);
    CH_ASSERT_OK(coexec_mutex_unlock(&m));
    CH_ASSERT_OK(coexec_thread_free(&t));
    ext_join(&e);
    CH_ASSERT_OK(a.rc);
    CH_ASSERT_OK(b.rc);

    /*
     * A timed-out waiter in the middle of the queue leaves it: B (untimed),
     * C (times out), D (untimed) queue behind the holder; C times out; the
     * holder unlocks; B then D get the lock, and the mutex ends free.
     */
    int order[4] = {-1, -1, -1, -1};
    atomic_int pos = 0;
    tlock_t w[3] = {
        {.m = &m, .timeout = UINT64_MAX, .order = order, .pos = &pos, .id = 0},
        {.m = &m, .timeout = 10 * MS, .order = order, .pos = &pos, .id = 1},
        {.m = &m, .timeout = UINT64_MAX, .order = order, .pos = &pos, .id = 2},
    };
    coexec_thread_t wt[3];
    CH_ASSERT_OK(coexec_mutex_lock(&m));
    for (int i = 0; i < 3; i++) {
        spawn_on(1 + i, tlock_body, &w[i], &wt[i]);
        /* C may time out before this thread gets to see it blocked (a
         * busy machine can hold it off for longer than 10 ms): then it is
         * done, and D simply queues behind B alone. */
        CU_ASSERT(CH_WAIT(thread_state(wt[i]) == COEXEC_UNIT_BLOCKED ||
                          atomic_load(&w[i].done)));
    }
    CH_WAIT(atomic_load(&w[1].done));
    CH_ASSERT_RC(w[1].rc, COEXEC_ETIMEDOUT);
    CU_ASSERT(w[1].elapsed >= 10 * MS);
    CH_ASSERT_EQ(atomic_load(&pos), 0);
    CH_ASSERT_OK(coexec_mutex_unlock(&m));
    free_threads(wt, 3);
    CH_ASSERT_EQ(atomic_load(&pos), 2);
    CH_ASSERT_EQ(order[0], 0);
    CH_ASSERT_EQ(order[1], 2);
    try_t ok = {&m, COEXEC_OK};
    CH_ASSERT_OK(ch_run_ult_in(p1, try_body, &ok));
    CH_ASSERT_OK(coexec_mutex_destroy(&m));
    ch_finalize();
}

/* ---- FIFO hand-off ---- */

typedef struct {
    coexec_mutex_t m;
    int order[16]; /* protected by m */
    int n;         /* protected by m */
    atomic_int first_holds; /* the first waiter holds m until released */
    atomic_int release_first;
} fifo_t;

typedef struct {
    fifo_t *f;
    int id;
    int timed;
} fifo_arg_t;

static void fifo_waiter(void *arg)
{
    fifo_arg_t *a = arg;
    fifo_t *f = a->f;
    int rc = a->timed ? coexec_mutex_lock_timed(&f->m, LONG_TIMEOUT_NS)
                      : coexec_mutex_lock(&f->m);
    CH_CHECK_RC(rc, COEXEC_OK);
    if (rc != COEXEC_OK)
        return;
    f->order[f->n++] = a->id;
    if (a->id == 0) {
        atomic_store(&f->first_holds, 1);
        CH_WAIT(atomic_load(&f->release_first));
    }
    CH_CHECK_RC(coexec_mutex_unlock(&f->m), COEXEC_OK);
}

/*
 * Waiters are served in arrival order when no newcomer competes: they are
 * queued one at a time (each is parked before the next is created), so
 * the acquisition order must be the creation order. The holder's unlock
 * either releases waiter 0 to take the mutex or, once it has waited long
 * enough to count as starving, hands it over directly; the test does not
 * depend on which.
 */
static void t_mutex_fifo(void)
{
    ch_init(NSTREAMS);
    enum { K = 10 };
    fifo_t f;
    memset(&f, 0, sizeof f);
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&f.m, COEXEC_MUTEX_PLAIN));
    fifo_arg_t a[K];
    coexec_thread_t t[K];
    CH_ASSERT_OK(coexec_mutex_lock(&f.m));
    for (int i = 0; i < K; i++) {
        a[i] = (fifo_arg_t){&f, i, i % 3 == 1};
        spawn_on(1 + i % 3, fifo_waiter, &a[i], &t[i]);
        CU_ASSERT(wait_blocked(t[i]));
    }
    CH_ASSERT_OK(coexec_mutex_unlock(&f.m));
    CH_WAIT(atomic_load(&f.first_holds));
    int rc = coexec_mutex_trylock(&f.m);
    CH_ASSERT_RC(rc, COEXEC_EBUSY);
    if (rc == COEXEC_OK)
        CH_ASSERT_OK(coexec_mutex_unlock(&f.m));
    atomic_store(&f.release_first, 1);
    free_threads(t, K);
    CH_ASSERT_EQ(f.n, K);
    for (int i = 0; i < K; i++)
        CH_ASSERT_EQ(f.order[i], i);
    CH_ASSERT_OK(coexec_mutex_destroy(&f.m));
    ch_finalize();
}

/* ---- no starvation under constant contention ---- */

typedef struct {
    coexec_mutex_t m;
    long quota;    /* acquisitions each ULT must make */
    long count[4]; /* protected by m */
    atomic_int started;
    atomic_int satisfied; /* ULTs that made their quota */
} fair_t;

typedef struct {
    fair_t *f;
    int id;
} fair_arg_t;

/*
 * Each ULT locks and unlocks without ever yielding, and keeps doing so
 * after it made its quota, until every ULT has made its own: the contention
 * never lets up while anyone still waits. A ULT that starved would never
 * make its quota and the test would hang (the ctest timeout is the verdict
 * then), whatever the machine's speed.
 */
static void fair_body(void *arg)
{
    fair_arg_t *a = arg;
    fair_t *f = a->f;
    atomic_fetch_add(&f->started, 1);
    while (atomic_load(&f->started) < 4)
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    bool made = false;
    while (atomic_load(&f->satisfied) < 4) {
        if (coexec_mutex_lock(&f->m) != COEXEC_OK) {
            ch_fail_at(__FILE__, __LINE__, "lock failed");
            atomic_fetch_add(&f->satisfied, made ? 0 : 1);
            break;
        }
        long c = ++f->count[a->id];
        CH_CHECK_RC(coexec_mutex_unlock(&f->m), COEXEC_OK);
        if (!made && c >= f->quota) {
            made = true;
            atomic_fetch_add(&f->satisfied, 1);
        }
        /* no yield: the unlocker comes straight back for the lock */
    }
}

static void t_mutex_no_starvation(void)
{
    ch_init(1);
    ch_stream_t s[2];
    streams_create(s, 2);
    fair_t f;
    memset(&f, 0, sizeof f);
    f.quota = ch_iters(2000, 50);
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&f.m, COEXEC_MUTEX_PLAIN));
    fair_arg_t a[4];
    coexec_thread_t t[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (fair_arg_t){&f, i};
        CH_ASSERT_OK(coexec_thread_create(s[i % 2].pool, fair_body, &a[i],
                                          NULL, &t[i]));
    }
    free_threads(t, 4);
    for (int i = 0; i < 4; i++)
        CU_ASSERT(f.count[i] >= f.quota);
    CH_ASSERT_OK(coexec_mutex_destroy(&f.m));
    streams_free(s, 2);
    ch_finalize();
}

/* ======================================================================= */
/* cond                                                                     */
/* ======================================================================= */

typedef struct {
    coexec_mutex_t m;
    coexec_cond_t c;
    int tokens;        /* protected by m */
    int go;            /* protected by m */
    int waiting;       /* protected by m: waiters that entered the wait */
    int entry_log[32]; /* protected by m */
    int wake_log[32];  /* protected by m */
    int woken;         /* protected by m */
    atomic_int inside; /* waiters between return from wait and unlock */
    atomic_long overlaps;
    atomic_int done;
} cv_t;

typedef struct {
    cv_t *cv;
    int id;
} cv_arg_t;

/* Checks that the caller is alone in the critical section. */
static void cv_enter(cv_t *cv)
{
    if (atomic_fetch_add(&cv->inside, 1) != 0)
        atomic_fetch_add(&cv->overlaps, 1);
}

static void cv_leave(cv_t *cv) { atomic_fetch_sub(&cv->inside, 1); }

/* waits for a token; logs entry and wake order */
static void token_waiter(void *arg)
{
    cv_arg_t *a = arg;
    cv_t *cv = a->cv;
    CH_CHECK_RC(coexec_mutex_lock(&cv->m), COEXEC_OK);
    cv_enter(cv);
    cv->entry_log[cv->waiting++] = a->id;
    while (cv->tokens == 0) {
        cv_leave(cv);
        int rc = coexec_cond_wait(&cv->c, &cv->m);
        cv_enter(cv);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            break;
        }
    }
    cv->tokens--;
    cv->wake_log[cv->woken++] = a->id;
    cv_leave(cv);
    /* unlock succeeds only for the owner: the wait returned with m held */
    CH_CHECK_RC(coexec_mutex_unlock(&cv->m), COEXEC_OK);
    atomic_fetch_add(&cv->done, 1);
}

/* waits until go is set (broadcast) */
static void go_waiter(void *arg)
{
    cv_arg_t *a = arg;
    cv_t *cv = a->cv;
    CH_CHECK_RC(coexec_mutex_lock(&cv->m), COEXEC_OK);
    cv_enter(cv);
    cv->entry_log[cv->waiting++] = a->id;
    while (!cv->go) {
        cv_leave(cv);
        int rc = coexec_cond_wait(&cv->c, &cv->m);
        cv_enter(cv);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            break;
        }
    }
    cv->wake_log[cv->woken++] = a->id;
    cv_leave(cv);
    CH_CHECK_RC(coexec_mutex_unlock(&cv->m), COEXEC_OK);
    atomic_fetch_add(&cv->done, 1);
}

static int cv_read(cv_t *cv, int *field)
{
    CH_CHECK_RC(coexec_mutex_lock(&cv->m), COEXEC_OK);
    int v = *field;
    CH_CHECK_RC(coexec_mutex_unlock(&cv->m), COEXEC_OK);
    return v;
}

static void cv_init(cv_t *cv)
{
    memset(cv, 0, sizeof *cv);
    CH_CHECK_RC(coexec_mutex_init(&cv->m, COEXEC_MUTEX_PLAIN), COEXEC_OK);
    CH_CHECK_RC(coexec_cond_init(&cv->c), COEXEC_OK);
}

static void cv_destroy(cv_t *cv)
{
    CH_CHECK_RC(coexec_cond_destroy(&cv->c), COEXEC_OK);
    CH_CHECK_RC(coexec_mutex_destroy(&cv->m), COEXEC_OK);
}

/* the last token of t_cond_signal comes from a tasklet */
static void tasklet_give_token(void *arg)
{
    cv_t *cv = arg;
    CH_CHECK_RC(coexec_mutex_trylock(&cv->m), COEXEC_OK);
    cv->tokens++;
    CH_CHECK_RC(coexec_cond_signal(&cv->c), COEXEC_OK);
    CH_CHECK_RC(coexec_mutex_unlock(&cv->m), COEXEC_OK);
}

/*
 * N waiters (ULTs on 4 streams and 2 external threads) wait for tokens.
 * Each signal releases exactly one of them, the oldest: the wake order is
 * the order in which they entered the wait (each entered while holding m,
 * and m is released only once it is queued).
 */
static void t_cond_signal(void)
{
    ch_init(NSTREAMS);
    enum { NU = 8, NE = 2, N = NU + NE };
    cv_t cv;
    cv_init(&cv);
    cv_arg_t a[N];
    coexec_thread_t t[NU];
    ext_t e[NE];
    for (int i = 0; i < N; i++)
        a[i] = (cv_arg_t){&cv, i};
    for (int i = 0; i < NU; i++)
        spawn_on(i % NSTREAMS, token_waiter, &a[i], &t[i]);
    for (int i = 0; i < NE; i++)
        ext_start(&e[i], token_waiter, &a[NU + i]);
    CH_WAIT(cv_read(&cv, &cv.waiting) == N);
    for (int k = 0; k < N; k++) {
        if (k == N - 1) {
            CH_ASSERT_OK(ch_run_tasklet_in(pool_of_rank(1),
                                           tasklet_give_token, &cv));
        } else {
            CH_ASSERT_OK(coexec_mutex_lock(&cv.m));
            cv.tokens++;
            CH_ASSERT_OK(coexec_cond_signal(&cv.c));
            CH_ASSERT_OK(coexec_mutex_unlock(&cv.m));
        }
        CH_WAIT(cv_read(&cv, &cv.woken) == k + 1);
        linger(1);
        CH_ASSERT_EQ(cv_read(&cv, &cv.woken), k + 1); /* one, not more */
    }
    free_threads(t, NU);
    for (int i = 0; i < NE; i++)
        ext_join(&e[i]);
    CH_ASSERT_EQ(cv.tokens, 0);
    CH_ASSERT_EQ(atomic_load(&cv.overlaps), 0);
    for (int i = 0; i < N; i++)
        CH_ASSERT_EQ(cv.wake_log[i], cv.entry_log[i]);
    /* nobody waits: signal and broadcast do nothing */
    CH_ASSERT_OK(coexec_cond_signal(&cv.c));
    CH_ASSERT_OK(coexec_cond_broadcast(&cv.c));
    cv_destroy(&cv);
    ch_finalize();
}

static void t_cond_broadcast(void)
{
    ch_init(NSTREAMS);
    enum { NU = 16, NE = 2, N = NU + NE };
    long rounds = ch_iters(20, 3);
    for (long r = 0; r < rounds; r++) {
        cv_t cv;
        cv_init(&cv);
        cv_arg_t a[N];
        coexec_thread_t t[NU];
        ext_t e[NE];
        for (int i = 0; i < N; i++)
            a[i] = (cv_arg_t){&cv, i};
        for (int i = 0; i < NU; i++)
            spawn_on(i % NSTREAMS, go_waiter, &a[i], &t[i]);
        for (int i = 0; i < NE; i++)
            ext_start(&e[i], go_waiter, &a[NU + i]);
        CH_WAIT(cv_read(&cv, &cv.waiting) == N);
        CH_ASSERT_OK(coexec_mutex_lock(&cv.m));
        cv.go = 1;
        CH_ASSERT_OK(coexec_cond_broadcast(&cv.c));
        CH_ASSERT_OK(coexec_mutex_unlock(&cv.m));
        free_threads(t, NU);
        for (int i = 0; i < NE; i++)
            ext_join(&e[i]);
        CH_ASSERT_EQ(atomic_load(&cv.done), N);
        CH_ASSERT_EQ(cv.woken, N);
        CH_ASSERT_EQ(atomic_load(&cv.overlaps), 0);
        cv_destroy(&cv);
    }
    ch_finalize();
}

/* ---- requires the mutex, one mutex per cond ---- */

typedef struct {
    coexec_cond_t *c;
    coexec_mutex_t *m;
    int want;
} cwait_t;

static void cond_wait_expect(void *arg)
{
    cwait_t *w = arg;
    CH_CHECK_RC(coexec_cond_wait(w->c, w->m), w->want);
    CH_CHECK_RC(coexec_cond_wait_timed(w->c, w->m, 1 * MS), w->want);
}

static void *ext_cond_wait_expect(void *arg)
{
    cond_wait_expect(arg);
    return NULL;
}

static void t_cond_requires_mutex(void)
{
    ch_init(NSTREAMS);
    coexec_pool_t p1 = pool_of_rank(1);
    cv_t cv;
    cv_init(&cv);
    /* not held at all */
    CH_ASSERT_RC(coexec_cond_wait(&cv.c, &cv.m), COEXEC_EPERM);
    CH_ASSERT_RC(coexec_cond_wait_timed(&cv.c, &cv.m, 1 * MS), COEXEC_EPERM);
    CH_ASSERT_OK(coexec_mutex_trylock(&cv.m)); /* and still not held */
    /* held by another: a ULT and an external thread get EPERM */
    cwait_t w = {&cv.c, &cv.m, COEXEC_EPERM};
    CH_ASSERT_OK(ch_run_ult_in(p1, cond_wait_expect, &w));
    ch_pthread_t th;
    ch_pthread_start(&th, ext_cond_wait_expect, &w);
    ch_pthread_join(&th);
    CH_ASSERT_OK(coexec_mutex_unlock(&cv.m));

    /* a recursive mutex held once is fine */
    coexec_mutex_t rm;
    CH_ASSERT_OK(coexec_mutex_init(&rm, COEXEC_MUTEX_RECURSIVE));
    CH_ASSERT_OK(coexec_mutex_lock(&rm));
    CH_ASSERT_RC(coexec_cond_wait_timed(&cv.c, &rm, 1 * MS),
                 COEXEC_ETIMEDOUT);
    CH_ASSERT_OK(coexec_mutex_unlock(&rm));
    CH_ASSERT_RC(coexec_mutex_unlock(&rm), COEXEC_EPERM);

    /*
     * While a waiter waits with m, a wait with another mutex is refused
     * (COEXEC_EINVAL) and leaves that mutex held; once nobody waits, any
     * mutex may be used again.
     */
    coexec_mutex_t m2;
    CH_ASSERT_OK(coexec_mutex_init(&m2, COEXEC_MUTEX_PLAIN));
    cv_arg_t a = {&cv, 0};
    coexec_thread_t t;
    spawn_on(2, go_waiter, &a, &t);
    CH_WAIT(cv_read(&cv, &cv.waiting) == 1);
    CH_ASSERT_OK(coexec_mutex_lock(&m2));
    CH_ASSERT_RC(coexec_cond_wait(&cv.c, &m2), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_cond_wait_timed(&cv.c, &m2, 1 * MS), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_mutex_unlock(&m2));
    CH_ASSERT_OK(coexec_mutex_lock(&cv.m));
    cv.go = 1;
    CH_ASSERT_OK(coexec_cond_signal(&cv.c));
    CH_ASSERT_OK(coexec_mutex_unlock(&cv.m));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(cv.woken, 1);
    CH_ASSERT_OK(coexec_mutex_lock(&m2));
    CH_ASSERT_RC(coexec_cond_wait_timed(&cv.c, &m2, 1 * MS),
                 COEXEC_ETIMEDOUT);
    CH_ASSERT_OK(coexec_mutex_unlock(&m2));
    CH_ASSERT_OK(coexec_mutex_destroy(&m2));
    CH_ASSERT_OK(coexec_mutex_destroy(&rm));
    cv_destroy(&cv);
    ch_finalize();
}

/* ---- timed ---- */

typedef struct {
    cv_t *cv;
    uint64_t timeout;
    int rc;
    uint64_t elapsed;
    int held_after; /* 1: unlock after the wait succeeded */
} ctimed_t;

static void cond_timed_body(void *arg)
{
    ctimed_t *t = arg;
    CH_CHECK_RC(coexec_mutex_lock(&t->cv->m), COEXEC_OK);
    uint64_t t0 = coexec_now_ns();
    t->rc = coexec_cond_wait_timed(&t->cv->c, &t->cv->m, t->timeout);
    t->elapsed = coexec_now_ns() - t0;
    t->held_after = coexec_mutex_unlock(&t->cv->m) == COEXEC_OK;
}

/* waits for go with a (long) timeout */
static void go_waiter_timed(void *arg)
{
    cv_arg_t *a = arg;
    cv_t *cv = a->cv;
    CH_CHECK_RC(coexec_mutex_lock(&cv->m), COEXEC_OK);
    cv->waiting++;
    while (!cv->go) {
        int rc = coexec_cond_wait_timed(&cv->c, &cv->m, LONG_TIMEOUT_NS);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            break;
        }
    }
    cv->woken++;
    CH_CHECK_RC(coexec_mutex_unlock(&cv->m), COEXEC_OK);
}

static void t_cond_timed(void)
{
    ch_init(NSTREAMS);
    coexec_pool_t p1 = pool_of_rank(1);
    cv_t cv;
    cv_init(&cv);
    const uint64_t tmo[] = {0, 2 * MS, 20 * MS};
    for (unsigned i = 0; i < sizeof tmo / sizeof tmo[0]; i++) {
        /* the main ULT: m is held again after the timeout */
        CH_ASSERT_OK(coexec_mutex_lock(&cv.m));
        uint64_t t0 = coexec_now_ns();
        CH_ASSERT_RC(coexec_cond_wait_timed(&cv.c, &cv.m, tmo[i]),
                     COEXEC_ETIMEDOUT);
        CU_ASSERT(coexec_now_ns() - t0 >= tmo[i]);
        try_t busy = {&cv.m, COEXEC_EBUSY};
        CH_ASSERT_OK(ch_run_ult_in(p1, try_body, &busy));
        CH_ASSERT_OK(coexec_mutex_unlock(&cv.m));
        /* another ULT and an external thread */
        ctimed_t a = {.cv = &cv, .timeout = tmo[i]};
        CH_ASSERT_OK(ch_run_ult_in(p1, cond_timed_body, &a));
        CH_ASSERT_RC(a.rc, COEXEC_ETIMEDOUT);
        CU_ASSERT(a.elapsed >= tmo[i]);
        CU_ASSERT(a.held_after);
        ctimed_t b = {.cv = &cv, .timeout = tmo[i]};
        ext_t e;
        ext_start(&e, cond_timed_body, &b);
        ext_join(&e);
        CH_ASSERT_RC(b.rc, COEXEC_ETIMEDOUT);
        CU_ASSERT(b.elapsed >= tmo[i]);
        CU_ASSERT(b.held_after);
    }
    /* nobody is left queued: a destroy would see no waiter */
    CH_ASSERT_OK(coexec_cond_destroy(&cv.c));
    CH_ASSERT_OK(coexec_cond_init(&cv.c));

    /* a timed waiter that is signalled returns COEXEC_OK */
    cv_arg_t ga[3] = {{&cv, 0}, {&cv, 1}, {&cv, 2}};
    coexec_thread_t t[2];
    spawn_on(1, go_waiter_timed, &ga[0], &t[0]);
    spawn_on(2, go_waiter_timed, &ga[1], &t[1]);
    ext_t e;
    ext_start(&e, go_waiter_timed, &ga[2]);
    CH_WAIT(cv_read(&cv, &cv.waiting) == 3);
    CH_ASSERT_OK(coexec_mutex_lock(&cv.m));
    cv.go = 1;
    CH_ASSERT_OK(coexec_cond_broadcast(&cv.c));
    CH_ASSERT_OK(coexec_mutex_unlock(&cv.m));
    free_threads(t, 2);
    ext_join(&e);
    CH_ASSERT_EQ(cv.woken, 3);

    /* a signal after a waiter timed out goes to the waiter still there */
    cv.go = 0;
    cv.waiting = 0;
    cv.woken = 0;
    ctimed_t gone = {.cv = &cv, .timeout = 5 * MS};
    coexec_thread_t tg;
    spawn_on(3, cond_timed_body, &gone, &tg);
    CH_ASSERT_OK(coexec_thread_free(&tg));
    CH_ASSERT_RC(gone.rc, COEXEC_ETIMEDOUT);
    cv_arg_t ta = {&cv, 0};
    coexec_thread_t tt;
    spawn_on(1, token_waiter, &ta, &tt);
    CH_WAIT(cv_read(&cv, &cv.waiting) == 1);
    CH_ASSERT_OK(coexec_mutex_lock(&cv.m));
    cv.tokens = 1;
    CH_ASSERT_OK(coexec_cond_signal(&cv.c));
    CH_ASSERT_OK(coexec_mutex_unlock(&cv.m));
    CH_ASSERT_OK(coexec_thread_free(&tt));
    CH_ASSERT_EQ(cv.woken, 1);
    cv_destroy(&cv);
    ch_finalize();
}

/* ---- producer / consumer ---- */

#define PC_CAP 8

typedef struct {
    coexec_mutex_t m;
    coexec_cond_t not_full, not_empty;
    long buf[PC_CAP]; /* protected by m */
    int head, count;  /* protected by m */
    long total;
    long consumed;    /* protected by m */
    long per_producer;
    atomic_uchar *seen;
} pc_t;

typedef struct {
    pc_t *pc;
    int id;
} pc_arg_t;

static void producer(void *arg)
{
    pc_arg_t *a = arg;
    pc_t *pc = a->pc;
    for (long i = 0; i < pc->per_producer; i++) {
        long item = a->id * pc->per_producer + i;
        CH_CHECK_RC(coexec_mutex_lock(&pc->m), COEXEC_OK);
        while (pc->count == PC_CAP)
            if (coexec_cond_wait(&pc->not_full, &pc->m) != COEXEC_OK) {
                ch_fail_at(__FILE__, __LINE__, "wait(not_full) failed");
                break;
            }
        pc->buf[(pc->head + pc->count) % PC_CAP] = item;
        pc->count++;
        CH_CHECK_RC(coexec_cond_signal(&pc->not_empty), COEXEC_OK);
        CH_CHECK_RC(coexec_mutex_unlock(&pc->m), COEXEC_OK);
    }
}

static void consumer(void *arg)
{
    pc_arg_t *a = arg;
    pc_t *pc = a->pc;
    for (;;) {
        CH_CHECK_RC(coexec_mutex_lock(&pc->m), COEXEC_OK);
        while (pc->count == 0 && pc->consumed < pc->total)
            if (coexec_cond_wait(&pc->not_empty, &pc->m) != COEXEC_OK) {
                ch_fail_at(__FILE__, __LINE__, "wait(not_empty) failed");
                break;
            }
        if (pc->count == 0) { /* everything consumed */
            CH_CHECK_RC(coexec_mutex_unlock(&pc->m), COEXEC_OK);
            return;
        }
        long item = pc->buf[pc->head];
        pc->head = (pc->head + 1) % PC_CAP;
        pc->count--;
        if (++pc->consumed == pc->total)
            CH_CHECK_RC(coexec_cond_broadcast(&pc->not_empty), COEXEC_OK);
        CH_CHECK_RC(coexec_cond_signal(&pc->not_full), COEXEC_OK);
        CH_CHECK_RC(coexec_mutex_unlock(&pc->m), COEXEC_OK);
        if (item >= 0 && item < pc->total)
            atomic_fetch_add(&pc->seen[item], 1);
        else
            ch_fail_at(__FILE__, __LINE__, "bad item %ld", item);
    }
}

static void t_cond_producer_consumer(void)
{
    ch_init(NSTREAMS);
    enum { NP = 6, NC = 6 }; /* plus one external producer and consumer */
    pc_t pc;
    memset(&pc, 0, sizeof pc);
    pc.per_producer = ch_iters(3000, 60);
    pc.total = (NP + 1) * pc.per_producer;
    pc.seen = calloc((size_t)pc.total, sizeof *pc.seen);
    CU_ASSERT_PTR_NOT_NULL_FATAL(pc.seen);
    CH_ASSERT_OK(coexec_mutex_init(&pc.m, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK(coexec_cond_init(&pc.not_full));
    CH_ASSERT_OK(coexec_cond_init(&pc.not_empty));
    pc_arg_t pa[NP + 1], ca[NC + 1];
    coexec_thread_t pt[NP], ct[NC];
    ext_t pe, ce;
    for (int i = 0; i <= NP; i++)
        pa[i] = (pc_arg_t){&pc, i};
    for (int i = 0; i <= NC; i++)
        ca[i] = (pc_arg_t){&pc, i};
    for (int i = 0; i < NC; i++)
        spawn_on(i % NSTREAMS, consumer, &ca[i], &ct[i]);
    ext_start(&ce, consumer, &ca[NC]);
    for (int i = 0; i < NP; i++)
        spawn_on((i + 1) % NSTREAMS, producer, &pa[i], &pt[i]);
    ext_start(&pe, producer, &pa[NP]);
    free_threads(pt, NP);
    ext_join(&pe);
    free_threads(ct, NC);
    ext_join(&ce);
    CH_ASSERT_EQ(pc.consumed, pc.total);
    CH_ASSERT_EQ(pc.count, 0);
    long missing = 0, dup = 0;
    for (long i = 0; i < pc.total; i++) {
        unsigned v = atomic_load(&pc.seen[i]);
        missing += v == 0;
        dup += v > 1;
    }
    CH_ASSERT_EQ(missing, 0);
    CH_ASSERT_EQ(dup, 0);
    CH_ASSERT_OK(coexec_cond_destroy(&pc.not_full));
    CH_ASSERT_OK(coexec_cond_destroy(&pc.not_empty));
    CH_ASSERT_OK(coexec_mutex_destroy(&pc.m));
    free(pc.seen);
    ch_finalize();
}

/* ---- destroy, static initialiser ---- */

static coexec_cond_t g_static_cond = COEXEC_COND_INITIALIZER;

static void t_cond_destroy(void)
{
    ch_init(NSTREAMS);
    cv_t cv;
    cv_init(&cv);
    cv_arg_t a[2] = {{&cv, 0}, {&cv, 1}};
    coexec_thread_t t;
    ext_t e;
    spawn_on(1, go_waiter, &a[0], &t);
    ext_start(&e, go_waiter, &a[1]);
    CH_WAIT(cv_read(&cv, &cv.waiting) == 2);
    CH_ASSERT_RC(coexec_cond_destroy(&cv.c), COEXEC_EBUSY);
    /* still a working cond: the waiters are released by a broadcast */
    CH_ASSERT_OK(coexec_mutex_lock(&cv.m));
    cv.go = 1;
    CH_ASSERT_OK(coexec_cond_broadcast(&cv.c));
    CH_ASSERT_OK(coexec_mutex_unlock(&cv.m));
    CH_ASSERT_OK(coexec_thread_free(&t));
    ext_join(&e);
    CH_ASSERT_EQ(cv.woken, 2);
    CH_ASSERT_OK(coexec_cond_destroy(&cv.c));
    /* use after destroy */
    CH_ASSERT_RC(coexec_cond_signal(&cv.c), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_cond_broadcast(&cv.c), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_cond_destroy(&cv.c), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_mutex_lock(&cv.m));
    CH_ASSERT_RC(coexec_cond_wait(&cv.c, &cv.m), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_cond_wait_timed(&cv.c, &cv.m, 1 * MS),
                 COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_mutex_unlock(&cv.m)); /* still held after EHANDLE */
    CH_ASSERT_OK(coexec_mutex_destroy(&cv.m));

    /* the static initialiser: a working cond */
    coexec_mutex_t m = COEXEC_MUTEX_INITIALIZER;
    CH_ASSERT_OK(coexec_mutex_lock(&m));
    CH_ASSERT_RC(coexec_cond_wait_timed(&g_static_cond, &m, 1 * MS),
                 COEXEC_ETIMEDOUT);
    CH_ASSERT_OK(coexec_cond_signal(&g_static_cond));
    CH_ASSERT_OK(coexec_mutex_unlock(&m));
    CH_ASSERT_OK(coexec_cond_destroy(&g_static_cond));
    CH_ASSERT_OK(coexec_mutex_destroy(&m));
    ch_finalize();
}

/* ======================================================================= */
/* rwlock                                                                   */
/* ======================================================================= */

typedef struct {
    coexec_rwlock_t l;
    long iters;
    long value; /* written under the write lock only */
    atomic_int readers;
    atomic_int writers;
    atomic_int arrived;
    atomic_int release;
    atomic_int stop;
    atomic_long reads;
    atomic_long bad;
} rw_t;

typedef struct {
    rw_t *rw;
    int id;
} rw_arg_t;

static int rd_variant(coexec_rwlock_t *l, long i)
{
    switch (i % 3) {
    case 0:
        return coexec_rwlock_rdlock(l);
    case 1:
        return coexec_rwlock_rdlock_timed(l, LONG_TIMEOUT_NS);
    default: {
        int rc = coexec_rwlock_tryrdlock(l);
        return rc == COEXEC_EBUSY ? coexec_rwlock_rdlock(l) : rc;
    }
    }
}

static int wr_variant(coexec_rwlock_t *l, long i)
{
    switch (i % 3) {
    case 0:
        return coexec_rwlock_wrlock(l);
    case 1:
        return coexec_rwlock_wrlock_timed(l, LONG_TIMEOUT_NS);
    default: {
        int rc = coexec_rwlock_trywrlock(l);
        return rc == COEXEC_EBUSY ? coexec_rwlock_wrlock(l) : rc;
    }
    }
}

/* holds a read lock until every reader of the test holds one */
static void share_reader(void *arg)
{
    rw_arg_t *a = arg;
    rw_t *rw = a->rw;
    int rc;
    switch (a->id % 3) {
    case 0:
        rc = coexec_rwlock_rdlock(&rw->l);
        break;
    case 1:
        rc = coexec_rwlock_rdlock_timed(&rw->l, LONG_TIMEOUT_NS);
        break;
    default:
        rc = coexec_rwlock_tryrdlock(&rw->l); /* nobody writes: no wait */
        break;
    }
    CH_CHECK_RC(rc, COEXEC_OK);
    if (rc != COEXEC_OK)
        return;
    atomic_fetch_add(&rw->readers, 1);
    atomic_fetch_add(&rw->arrived, 1);
    CH_WAIT(atomic_load(&rw->release));
    atomic_fetch_sub(&rw->readers, 1);
    CH_CHECK_RC(coexec_rwlock_unlock(&rw->l), COEXEC_OK);
}

typedef struct {
    coexec_rwlock_t *l;
    int write;
    int want;
    uint64_t timeout; /* UINT64_MAX: the try variant */
} rwexp_t;

/* one lock attempt expecting want; unlocks what it got */
static void rw_expect(void *arg)
{
    rwexp_t *x = arg;
    uint64_t t0 = coexec_now_ns();
    int rc;
    if (x->timeout == UINT64_MAX)
        rc = x->write ? coexec_rwlock_trywrlock(x->l)
                      : coexec_rwlock_tryrdlock(x->l);
    else
        rc = x->write ? coexec_rwlock_wrlock_timed(x->l, x->timeout)
                      : coexec_rwlock_rdlock_timed(x->l, x->timeout);
    uint64_t el = coexec_now_ns() - t0;
    CH_CHECK_RC(rc, x->want);
    if (rc == COEXEC_ETIMEDOUT && x->timeout != UINT64_MAX)
        CH_CHECK(el >= x->timeout);
    if (rc == COEXEC_OK)
        CH_CHECK_RC(coexec_rwlock_unlock(x->l), COEXEC_OK);
}

static void t_rwlock_readers_share(void)
{
    ch_init(NSTREAMS);
    coexec_pool_t p1 = pool_of_rank(1);
    enum { NU = 12, N = NU + 1 };
    rw_t rw;
    memset(&rw, 0, sizeof rw);
    CH_ASSERT_OK_FATAL(coexec_rwlock_init(&rw.l));
    rw_arg_t a[N];
    coexec_thread_t t[NU];
    for (int i = 0; i < N; i++)
        a[i] = (rw_arg_t){&rw, i};
    for (int i = 0; i < NU; i++)
        spawn_on(i % NSTREAMS, share_reader, &a[i], &t[i]);
    ext_t e;
    ext_start(&e, share_reader, &a[NU]);
    /* every reader holds it at once (it would hang here otherwise) */
    CU_ASSERT(CH_WAIT(atomic_load(&rw.arrived) == N));
    CH_ASSERT_EQ(atomic_load(&rw.readers), N);
    /* no writer while they hold it; a timed-out writer leaves no trace */
    rwexp_t w1 = {&rw.l, 1, COEXEC_EBUSY, UINT64_MAX};
    rwexp_t w2 = {&rw.l, 1, COEXEC_ETIMEDOUT, 5 * MS};
    rwexp_t r1 = {&rw.l, 0, COEXEC_OK, UINT64_MAX};
    CH_ASSERT_OK(ch_run_ult_in(p1, rw_expect, &w1));
    CH_ASSERT_OK(ch_run_ult_in(p1, rw_expect, &w2));
    CH_ASSERT_OK(ch_run_ult_in(p1, rw_expect, &r1));
    CH_ASSERT_RC(coexec_rwlock_trywrlock(&rw.l), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_rwlock_destroy(&rw.l), COEXEC_EBUSY);
    atomic_store(&rw.release, 1);
    free_threads(t, NU);
    ext_join(&e);
    CH_ASSERT_EQ(atomic_load(&rw.readers), 0);
    CH_ASSERT_OK(coexec_rwlock_trywrlock(&rw.l));
    CH_ASSERT_OK(coexec_rwlock_unlock(&rw.l));
    CH_ASSERT_OK(coexec_rwlock_destroy(&rw.l));
    ch_finalize();
}

static void excl_writer(void *arg)
{
    rw_arg_t *a = arg;
    rw_t *rw = a->rw;
    long bad = 0;
    for (long i = 0; i < rw->iters; i++) {
        int rc = wr_variant(&rw->l, i + a->id);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            break;
        }
        if (atomic_fetch_add(&rw->writers, 1) != 0)
            bad++;
        if (atomic_load(&rw->readers) != 0)
            bad++;
        long v = rw->value;
        if (i % 4 == 0)
            ch_relax();
        rw->value = v + 1;
        atomic_fetch_sub(&rw->writers, 1);
        CH_CHECK_RC(coexec_rwlock_unlock(&rw->l), COEXEC_OK);
    }
    atomic_fetch_add(&rw->bad, bad);
}

static void excl_reader(void *arg)
{
    rw_arg_t *a = arg;
    rw_t *rw = a->rw;
    long bad = 0;
    for (long i = 0; i < rw->iters; i++) {
        int rc = rd_variant(&rw->l, i + a->id);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            break;
        }
        atomic_fetch_add(&rw->readers, 1);
        if (atomic_load(&rw->writers) != 0)
            bad++;
        long v = rw->value;
        if (i % 4 == 0)
            ch_relax();
        if (rw->value != v) /* no writer while it is read-held */
            bad++;
        atomic_fetch_sub(&rw->readers, 1);
        CH_CHECK_RC(coexec_rwlock_unlock(&rw->l), COEXEC_OK);
    }
    atomic_fetch_add(&rw->bad, bad);
}

static void t_rwlock_writer_excludes(void)
{
    ch_init(NSTREAMS);
    enum { NW = 4, NR = 8 }; /* plus one external writer and reader */
    rw_t rw;
    memset(&rw, 0, sizeof rw);
    rw.iters = ch_iters(2000, 60);
    CH_ASSERT_OK_FATAL(coexec_rwlock_init(&rw.l));
    rw_arg_t a[NW + NR + 2];
    coexec_thread_t t[NW + NR];
    for (int i = 0; i < NW + NR + 2; i++)
        a[i] = (rw_arg_t){&rw, i};
    for (int i = 0; i < NW + NR; i++)
        spawn_on(i % NSTREAMS, i < NW ? excl_writer : excl_reader, &a[i],
                 &t[i]);
    ext_t ew, er;
    ext_start(&ew, excl_writer, &a[NW + NR]);
    ext_start(&er, excl_reader, &a[NW + NR + 1]);
    free_threads(t, NW + NR);
    ext_join(&ew);
    ext_join(&er);
    CH_ASSERT_EQ(atomic_load(&rw.bad), 0);
    CH_ASSERT_EQ(rw.value, (long)(NW + 1) * rw.iters);
    CH_ASSERT_OK(coexec_rwlock_destroy(&rw.l));
    ch_finalize();
}

/* reads until stop, yielding inside the read section */
static void stream_reader(void *arg)
{
    rw_arg_t *a = arg;
    rw_t *rw = a->rw;
    while (!atomic_load(&rw->stop)) {
        int rc = coexec_rwlock_rdlock(&rw->l);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            return;
        }
        atomic_fetch_add(&rw->readers, 1);
        atomic_fetch_add(&rw->reads, 1);
        ch_relax();
        atomic_fetch_sub(&rw->readers, 1);
        CH_CHECK_RC(coexec_rwlock_unlock(&rw->l), COEXEC_OK);
    }
}

static void starved_writer(void *arg)
{
    rw_arg_t *a = arg;
    rw_t *rw = a->rw;
    CH_WAIT(atomic_load(&rw->reads) > 200 * (a->id + 1));
    CH_CHECK_RC(coexec_rwlock_wrlock(&rw->l), COEXEC_OK);
    if (atomic_load(&rw->readers) != 0)
        atomic_fetch_add(&rw->bad, 1);
    rw->value++;
    CH_CHECK_RC(coexec_rwlock_unlock(&rw->l), COEXEC_OK);
    atomic_fetch_add(&rw->arrived, 1);
}

/*
 * Readers on 3 streams and an external thread keep the lock read-held
 * without a break (their sections overlap). A writer (a ULT, then an
 * external thread) must still get it: readers arriving after it queue
 * behind it. With reader preference this would wait forever.
 */
static void t_rwlock_writer_not_starved(void)
{
    ch_init(NSTREAMS);
    enum { NR = 9 };
    rw_t rw;
    memset(&rw, 0, sizeof rw);
    CH_ASSERT_OK_FATAL(coexec_rwlock_init(&rw.l));
    rw_arg_t a[NR + 3];
    coexec_thread_t t[NR + 1];
    for (int i = 0; i < NR + 3; i++)
        a[i] = (rw_arg_t){&rw, i};
    for (int i = 0; i < NR; i++)
        spawn_on(1 + i % 3, stream_reader, &a[i], &t[i]);
    ext_t er, ew;
    ext_start(&er, stream_reader, &a[NR]);
    rw_arg_t w0 = {&rw, 0}, w1 = {&rw, 1};
    spawn_on(0, starved_writer, &w0, &t[NR]);
    CU_ASSERT(CH_WAIT(atomic_load(&rw.arrived) == 1));
    ext_start(&ew, starved_writer, &w1);
    CU_ASSERT(CH_WAIT(atomic_load(&rw.arrived) == 2));
    atomic_store(&rw.stop, 1);
    free_threads(t, NR + 1);
    ext_join(&er);
    ext_join(&ew);
    CH_ASSERT_EQ(rw.value, 2);
    CH_ASSERT_EQ(atomic_load(&rw.bad), 0);
    CH_ASSERT_OK(coexec_rwlock_destroy(&rw.l));
    ch_finalize();
}

/* ---- arrival order ---- */

typedef struct {
    coexec_rwlock_t *l;
    int write;
    int id;
    int *log;
    atomic_int *pos;
    atomic_int got;
    atomic_int done;
    atomic_int *hold_until; /* optional: hold until it is non-zero */
} rwop_t;

static void rwop_body(void *arg)
{
    rwop_t *o = arg;
    int rc = o->write ? coexec_rwlock_wrlock(o->l) : coexec_rwlock_rdlock(o->l);
    CH_CHECK_RC(rc, COEXEC_OK);
    if (rc == COEXEC_OK) {
        o->log[atomic_fetch_add(o->pos, 1)] = o->id;
        atomic_store(&o->got, 1);
        if (o->hold_until)
            CH_WAIT(atomic_load(o->hold_until));
        CH_CHECK_RC(coexec_rwlock_unlock(o->l), COEXEC_OK);
    }
    atomic_store(&o->done, 1);
}

static void t_rwlock_arrival_order(void)
{
    ch_init(NSTREAMS);
    coexec_pool_t p3 = pool_of_rank(3);
    coexec_rwlock_t l;
    CH_ASSERT_OK_FATAL(coexec_rwlock_init(&l));
    int log[8];
    atomic_int pos = 0;

    /* read-held; a writer waits; a new reader queues behind the writer */
    CH_ASSERT_OK(coexec_rwlock_rdlock(&l));
    rwop_t w = {.l = &l, .write = 1, .id = 0, .log = log, .pos = &pos};
    rwop_t r = {.l = &l, .write = 0, .id = 1, .log = log, .pos = &pos};
    coexec_thread_t tw, tr;
    spawn_on(1, rwop_body, &w, &tw);
    CU_ASSERT(wait_blocked(tw));
    rwexp_t tryr = {&l, 0, COEXEC_EBUSY, UINT64_MAX};
    CH_ASSERT_OK(ch_run_ult_in(p3, rw_expect, &tryr));
    spawn_on(2, rwop_body, &r, &tr);
    CH_WAIT(thread_state(tr) == COEXEC_UNIT_BLOCKED || atomic_load(&r.got));
    linger(2);
    CH_ASSERT_EQ(atomic_load(&r.got), 0);
    CH_ASSERT_EQ(atomic_load(&w.got), 0);
    CH_ASSERT_OK(coexec_rwlock_unlock(&l));
    CH_ASSERT_OK(coexec_thread_free(&tw));
    CH_ASSERT_OK(coexec_thread_free(&tr));
    CH_ASSERT_EQ(atomic_load(&pos), 2);
    CH_ASSERT_EQ(log[0], 0);
    CH_ASSERT_EQ(log[1], 1);

    /*
     * Write-held; queued: R1 R2 W R3. The unlock lets R1 and R2 in
     * together (R1 holds until R2 has it), then W, then R3.
     */
    atomic_store(&pos, 0);
    atomic_int r2_got_flag = 0;
    CH_ASSERT_OK(coexec_rwlock_wrlock(&l));
    rwop_t q[4] = {
        {.l = &l, .write = 0, .id = 0, .log = log, .pos = &pos},
        {.l = &l, .write = 0, .id = 1, .log = log, .pos = &pos},
        {.l = &l, .write = 1, .id = 2, .log = log, .pos = &pos},
        {.l = &l, .write = 0, .id = 3, .log = log, .pos = &pos},
    };
    q[0].hold_until = &r2_got_flag;
    coexec_thread_t tq[4];
    for (int i = 0; i < 4; i++) {
        spawn_on(1 + i % 3, rwop_body, &q[i], &tq[i]);
        CU_ASSERT(wait_blocked(tq[i]));
    }
    CH_ASSERT_OK(coexec_rwlock_unlock(&l));
    CU_ASSERT(CH_WAIT(atomic_load(&q[1].got)));
    atomic_store(&r2_got_flag, 1);
    free_threads(tq, 4);
    CH_ASSERT_EQ(atomic_load(&pos), 4);
    CU_ASSERT((log[0] == 0 && log[1] == 1) || (log[0] == 1 && log[1] == 0));
    CH_ASSERT_EQ(log[2], 2);
    CH_ASSERT_EQ(log[3], 3);
    CH_ASSERT_OK(coexec_rwlock_destroy(&l));
    ch_finalize();
}

/* ---- errors ---- */

static coexec_rwlock_t g_static_rwlock = COEXEC_RWLOCK_INITIALIZER;

static void rw_unlock_eperm(void *arg)
{
    CH_CHECK_RC(coexec_rwlock_unlock((coexec_rwlock_t *)arg), COEXEC_EPERM);
}

static void rw_others_see_writer(coexec_rwlock_t *l, coexec_pool_t p)
{
    rwexp_t x[] = {
        {l, 0, COEXEC_EBUSY, UINT64_MAX},
        {l, 1, COEXEC_EBUSY, UINT64_MAX},
        {l, 0, COEXEC_ETIMEDOUT, 5 * MS},
        {l, 1, COEXEC_ETIMEDOUT, 5 * MS},
        {l, 0, COEXEC_ETIMEDOUT, 0},
    };
    for (unsigned i = 0; i < sizeof x / sizeof x[0]; i++) {
        CH_ASSERT_OK(ch_run_ult_in(p, rw_expect, &x[i]));
        ext_t e;
        ext_start(&e, rw_expect, &x[i]);
        ext_join(&e);
    }
    CH_ASSERT_OK(ch_run_ult_in(p, rw_unlock_eperm, l));
    ext_t e;
    ext_start(&e, rw_unlock_eperm, l);
    ext_join(&e);
}

typedef struct {
    coexec_rwlock_t *l;
    atomic_int holding;
    atomic_int release;
} ext_holder_t;

static void ext_write_holder(void *arg)
{
    ext_holder_t *h = arg;
    CH_CHECK_RC(coexec_rwlock_wrlock(h->l), COEXEC_OK);
    atomic_store(&h->holding, 1);
    CH_WAIT(atomic_load(&h->release));
    CH_CHECK_RC(coexec_rwlock_unlock(h->l), COEXEC_OK);
}

static void t_rwlock_errors(void)
{
    ch_init(NSTREAMS);
    coexec_pool_t p1 = pool_of_rank(1);
    coexec_rwlock_t l;
    CH_ASSERT_OK_FATAL(coexec_rwlock_init(&l));
    CH_ASSERT_RC(coexec_rwlock_unlock(&l), COEXEC_EPERM); /* not held */
    /* write-held by the main ULT */
    CH_ASSERT_OK(coexec_rwlock_wrlock(&l));
    CH_ASSERT_RC(coexec_rwlock_wrlock(&l), COEXEC_EDEADLK);
    CH_ASSERT_RC(coexec_rwlock_wrlock_timed(&l, 1 * MS), COEXEC_EDEADLK);
    rw_others_see_writer(&l, p1);
    CH_ASSERT_RC(coexec_rwlock_destroy(&l), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_rwlock_unlock(&l));
    CH_ASSERT_RC(coexec_rwlock_unlock(&l), COEXEC_EPERM);
    /* write-held by an external thread: the main ULT is not the owner */
    ext_holder_t h = {.l = &l};
    ext_t eh;
    ext_start(&eh, ext_write_holder, &h);
    CH_WAIT(atomic_load(&h.holding));
    CH_ASSERT_RC(coexec_rwlock_tryrdlock(&l), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_rwlock_trywrlock(&l), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_rwlock_rdlock_timed(&l, 2 * MS), COEXEC_ETIMEDOUT);
    CH_ASSERT_RC(coexec_rwlock_unlock(&l), COEXEC_EPERM);
    atomic_store(&h.release, 1);
    ext_join(&eh);
    CH_ASSERT_OK(coexec_rwlock_wrlock_timed(&l, 0));
    CH_ASSERT_OK(coexec_rwlock_unlock(&l));
    /* read-held: writers wait or fail, readers come in */
    CH_ASSERT_OK(coexec_rwlock_rdlock(&l));
    rwexp_t x[] = {
        {&l, 1, COEXEC_EBUSY, UINT64_MAX},
        {&l, 1, COEXEC_ETIMEDOUT, 5 * MS},
        {&l, 1, COEXEC_ETIMEDOUT, 0},
        {&l, 0, COEXEC_OK, UINT64_MAX}, /* the timed-out writer is gone */
        {&l, 0, COEXEC_OK, 5 * MS},
    };
    for (unsigned i = 0; i < sizeof x / sizeof x[0]; i++) {
        CH_ASSERT_OK(ch_run_ult_in(p1, rw_expect, &x[i]));
        ext_t e;
        ext_start(&e, rw_expect, &x[i]);
        ext_join(&e);
    }
    CH_ASSERT_RC(coexec_rwlock_destroy(&l), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_rwlock_rdlock(&l)); /* twice shared */
    CH_ASSERT_OK(coexec_rwlock_unlock(&l));
    CH_ASSERT_OK(coexec_rwlock_unlock(&l));
    CH_ASSERT_RC(coexec_rwlock_unlock(&l), COEXEC_EPERM);
    CH_ASSERT_OK(coexec_rwlock_destroy(&l));
    /* use after destroy */
    CH_ASSERT_RC(coexec_rwlock_rdlock(&l), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_wrlock(&l), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_rdlock_timed(&l, 1 * MS), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_wrlock_timed(&l, 1 * MS), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_tryrdlock(&l), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_trywrlock(&l), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_unlock(&l), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_destroy(&l), COEXEC_EHANDLE);
    /* the static initialiser */
    CH_ASSERT_OK(coexec_rwlock_rdlock(&g_static_rwlock));
    CH_ASSERT_RC(coexec_rwlock_trywrlock(&g_static_rwlock), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_rwlock_unlock(&g_static_rwlock));
    CH_ASSERT_OK(coexec_rwlock_wrlock(&g_static_rwlock));
    CH_ASSERT_OK(coexec_rwlock_unlock(&g_static_rwlock));
    CH_ASSERT_OK(coexec_rwlock_destroy(&g_static_rwlock));
    ch_finalize();
}

/* ======================================================================= */
/* barrier                                                                  */
/* ======================================================================= */

#define BAR_MAX 32

typedef struct {
    coexec_barrier_t b;
    coexec_xstream_barrier_t xb;
    int n;
    long gens;
    atomic_long phase[BAR_MAX];
    atomic_int *serials; /* per generation */
    atomic_long bad_phase;
    atomic_long bad_serial;
    atomic_long bad_rank;
    int want_rank[BAR_MAX]; /* xstream barrier: the stream of each waiter */
    atomic_int done[BAR_MAX];
} bar_t;

typedef struct {
    bar_t *B;
    int id;
} bar_arg_t;

/*
 * Generation g: publish phase g, wait, then every participant must be at
 * phase g or g+1 (it arrived at g; it cannot pass g+1 without us).
 */
static void bar_check(bar_t *B, long g)
{
    for (int j = 0; j < B->n; j++) {
        long p = atomic_load(&B->phase[j]);
        if (p < g || p > g + 1)
            atomic_fetch_add(&B->bad_phase, 1);
    }
}

static void bar_body(void *arg)
{
    bar_arg_t *a = arg;
    bar_t *B = a->B;
    for (long g = 0; g < B->gens; g++) {
        atomic_store(&B->phase[a->id], g);
        if ((a->id + g) % 4 == 0)
            ch_relax(); /* vary the arrival order */
        int serial = -1;
        int rc = coexec_barrier_wait(&B->b, &serial);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            break;
        }
        if (serial == 1)
            atomic_fetch_add(&B->serials[g], 1);
        else if (serial != 0)
            atomic_fetch_add(&B->bad_serial, 1);
        bar_check(B, g);
    }
    atomic_store(&B->done[a->id], 1);
}

static bar_t *bar_new(int n, long gens)
{
    bar_t *B = calloc(1, sizeof *B);
    B->n = n;
    B->gens = gens;
    B->serials = calloc((size_t)gens, sizeof *B->serials);
    for (int i = 0; i < BAR_MAX; i++)
        B->want_rank[i] = -1;
    return B;
}

static void bar_free(bar_t *B)
{
    free(B->serials);
    free(B);
}

/* nu ULTs on 4 streams, ne external threads, the main ULT if with_main */
static void run_barrier(int nu, int ne, int with_main)
{
    int n = nu + ne + with_main;
    bar_t *B = bar_new(n, ch_iters(400, 20));
    CH_ASSERT_OK_FATAL(coexec_barrier_init(&B->b, (unsigned)n));
    bar_arg_t a[BAR_MAX];
    coexec_thread_t t[BAR_MAX];
    ext_t e[4];
    for (int i = 0; i < n; i++)
        a[i] = (bar_arg_t){B, i};
    for (int i = 0; i < nu; i++)
        spawn_on(i % NSTREAMS, bar_body, &a[i], &t[i]);
    for (int i = 0; i < ne; i++)
        ext_start(&e[i], bar_body, &a[nu + i]);
    if (with_main)
        bar_body(&a[n - 1]);
    free_threads(t, nu);
    for (int i = 0; i < ne; i++)
        ext_join(&e[i]);
    CH_ASSERT_EQ(atomic_load(&B->bad_phase), 0);
    CH_ASSERT_EQ(atomic_load(&B->bad_serial), 0);
    long wrong = 0;
    for (long g = 0; g < B->gens; g++)
        wrong += atomic_load(&B->serials[g]) != 1;
    CH_ASSERT_EQ(wrong, 0);
    CH_ASSERT_OK(coexec_barrier_destroy(&B->b));
    bar_free(B);
}

static void t_barrier_generations(void)
{
    ch_init(NSTREAMS);
    run_barrier(12, 0, 0);
    run_barrier(3, 0, 1);
    ch_finalize();
}

static void t_barrier_externals(void)
{
    ch_init(NSTREAMS);
    run_barrier(8, 2, 1);
    run_barrier(0, 3, 1);
    ch_finalize();
}

typedef struct {
    coexec_barrier_t *b;
    int serial;
    int rc;
} bwait_t;

static void bwait_body(void *arg)
{
    bwait_t *w = arg;
    w->serial = -1;
    w->rc = coexec_barrier_wait(w->b, &w->serial);
}

static void t_barrier_errors(void)
{
    ch_init(NSTREAMS);
    coexec_barrier_t b;
    CH_ASSERT_RC(coexec_barrier_init(&b, 0), COEXEC_EINVAL);
    /* n == 1: every caller is the serial one, at once */
    CH_ASSERT_OK(coexec_barrier_init(&b, 1));
    for (int i = 0; i < 3; i++) {
        int serial = -1;
        CH_ASSERT_OK(coexec_barrier_wait(&b, &serial));
        CH_ASSERT_EQ(serial, 1);
    }
    CH_ASSERT_OK(coexec_barrier_wait(&b, NULL));
    CH_ASSERT_OK(coexec_barrier_destroy(&b));
    /* n == 2: destroy with a waiter is refused; the barrier still works */
    CH_ASSERT_OK(coexec_barrier_init(&b, 2));
    bwait_t w = {&b, -1, -1};
    coexec_thread_t t;
    spawn_on(1, bwait_body, &w, &t);
    CU_ASSERT(wait_blocked(t));
    CH_ASSERT_RC(coexec_barrier_destroy(&b), COEXEC_EBUSY);
    int serial = -1;
    CH_ASSERT_OK(coexec_barrier_wait(&b, &serial));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(w.rc);
    CH_ASSERT_EQ(serial + w.serial, 1);
    CU_ASSERT(serial == 0 || serial == 1);
    /* a second generation, this time with an external thread */
    ext_t e;
    ext_start(&e, bwait_body, &w);
    CH_ASSERT_OK(coexec_barrier_wait(&b, &serial));
    ext_join(&e);
    CH_ASSERT_OK(w.rc);
    CH_ASSERT_EQ(serial + w.serial, 1);
    CH_ASSERT_OK(coexec_barrier_destroy(&b));
    CH_ASSERT_RC(coexec_barrier_wait(&b, &serial), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_barrier_destroy(&b), COEXEC_EHANDLE);
    ch_finalize();
}

/* ======================================================================= */
/* xbarrier                                                                 */
/* ======================================================================= */

static void xbar_body(void *arg)
{
    bar_arg_t *a = arg;
    bar_t *B = a->B;
    for (long g = 0; g < B->gens; g++) {
        atomic_store(&B->phase[a->id], g);
        int rc = coexec_xstream_barrier_wait(&B->xb);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            break;
        }
        bar_check(B, g);
        if (B->want_rank[a->id] >= 0) {
            int r = -1;
            CH_CHECK_RC(coexec_xstream_self_rank(&r), COEXEC_OK);
            if (r != B->want_rank[a->id])
                atomic_fetch_add(&B->bad_rank, 1);
        }
    }
    atomic_store(&B->done[a->id], 1);
}

static coexec_poll_status_t xbar_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    xbar_body(arg);
    return COEXEC_READY;
}

/*
 * One ULT on each of ns pinned streams, ne external threads, the main ULT;
 * with_tasklet turns the first stream's ULT into a tasklet.
 */
static void run_xbarrier(int ns, int ne, int with_tasklet)
{
    ch_stream_t s[NSTREAMS];
    streams_create(s, ns);
    int n = ns + ne + 1;
    bar_t *B = bar_new(n, ch_iters(300, 10));
    CH_ASSERT_OK_FATAL(coexec_xstream_barrier_init(&B->xb, (unsigned)n));
    bar_arg_t a[BAR_MAX];
    coexec_thread_t t[NSTREAMS] = {{0}};
    coexec_tasklet_t k = {0};
    ext_t e[4];
    for (int i = 0; i < n; i++)
        a[i] = (bar_arg_t){B, i};
    for (int i = 0; i < ns; i++) {
        B->want_rank[i] = s[i].rank;
        if (i == 0 && with_tasklet)
            CH_ASSERT_OK(coexec_tasklet_create_on(s[i].xs, xbar_tasklet,
                                                  &a[i], &k));
        else
            CH_ASSERT_OK(coexec_thread_create_on(s[i].xs, xbar_body, &a[i],
                                                 NULL, &t[i]));
    }
    for (int i = 0; i < ne; i++)
        ext_start(&e[i], xbar_body, &a[ns + i]);
    B->want_rank[n - 1] = 0;
    xbar_body(&a[n - 1]);
    /* wait before freeing: a join would run a unit that never started in
     * place, on this stream */
    for (int i = 0; i < ns; i++)
        CH_WAIT(atomic_load(&B->done[i]));
    for (int i = 0; i < ns; i++) {
        if (i == 0 && with_tasklet)
            CH_ASSERT_OK(coexec_tasklet_free(&k));
        else
            CH_ASSERT_OK(coexec_thread_free(&t[i]));
    }
    for (int i = 0; i < ne; i++)
        ext_join(&e[i]);
    CH_ASSERT_EQ(atomic_load(&B->bad_phase), 0);
    CH_ASSERT_EQ(atomic_load(&B->bad_rank), 0);
    CH_ASSERT_OK(coexec_xstream_barrier_destroy(&B->xb));
    bar_free(B);
    streams_free(s, ns);
}

static void t_xbarrier_streams(void)
{
    ch_init(1);
    run_xbarrier(NSTREAMS, 0, 0);
    ch_finalize();
}

static void t_xbarrier_externals_tasklet(void)
{
    ch_init(1);
    run_xbarrier(2, 2, 0);
    run_xbarrier(2, 1, 1);
    ch_finalize();
}

typedef struct {
    coexec_xstream_barrier_t *b;
    atomic_int arriving;
    int rc;
} xwait_t;

static void xwait_body(void *arg)
{
    xwait_t *w = arg;
    atomic_store(&w->arriving, 1);
    w->rc = coexec_xstream_barrier_wait(w->b);
}

static void t_xbarrier_errors(void)
{
    ch_init(NSTREAMS);
    coexec_xstream_barrier_t b;
    CH_ASSERT_RC(coexec_xstream_barrier_init(&b, 0), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_xstream_barrier_init(&b, 1));
    for (int i = 0; i < 3; i++)
        CH_ASSERT_OK(coexec_xstream_barrier_wait(&b));
    CH_ASSERT_OK(coexec_xstream_barrier_destroy(&b));
    /*
     * n == 2, an external thread waits: once it sleeps in the kernel (its
     * /proc state is 'S' after it announced its arrival) it is registered,
     * and a destroy must be refused.
     */
    CH_ASSERT_OK(coexec_xstream_barrier_init(&b, 2));
    xwait_t w = {.b = &b, .rc = -1};
    ext_t e;
    ext_start(&e, xwait_body, &w);
    CH_WAIT(atomic_load(&w.arriving) && atomic_load(&e.tid) != 0 &&
            ch_task_state((pid_t)atomic_load(&e.tid)) == 'S');
    CH_ASSERT_RC(coexec_xstream_barrier_destroy(&b), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_xstream_barrier_wait(&b));
    ext_join(&e);
    CH_ASSERT_OK(w.rc);
    CH_ASSERT_OK(coexec_xstream_barrier_destroy(&b));
    CH_ASSERT_RC(coexec_xstream_barrier_wait(&b), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_barrier_destroy(&b), COEXEC_EHANDLE);
    ch_finalize();
}

/* ======================================================================= */
/* key                                                                      */
/* ======================================================================= */

typedef struct {
    int idx;
    uint64_t owner;    /* id of the ULT that set it */
    int resets;        /* dtor_reset: how many calls should set it again */
    atomic_int dtor_calls;
    atomic_int dtor_on_owner;
} kslot_t;

static coexec_key_t g_key_reset;

static void note_dtor(kslot_t *s)
{
    atomic_fetch_add(&s->dtor_calls, 1);
    uint64_t id = 0;
    if (coexec_self_caller() == COEXEC_CALLER_ULT &&
        coexec_self_id(&id) == COEXEC_OK && id == s->owner)
        atomic_fetch_add(&s->dtor_on_owner, 1);
}

static void dtor_count(void *v) { note_dtor(v); }

/* sets its key again while it has resets left */
static void dtor_reset(void *v)
{
    kslot_t *s = v;
    note_dtor(s);
    if (atomic_load(&s->dtor_calls) <= s->resets)
        CH_CHECK_RC(coexec_key_set(g_key_reset, s), COEXEC_OK);
}

typedef struct {
    coexec_key_t k1, k2;
    kslot_t *slot;
    long rounds;
    int mode;
    kslot_t *other; /* mode 3: the value replaced */
} kult_t;

static void set_owner(kslot_t *s)
{
    CH_CHECK_RC(coexec_self_id(&s->owner), COEXEC_OK);
}

/* k1 (destructor) and k2 (none): own values survive yields and steals */
static void key_values_ult(void *arg)
{
    kult_t *u = arg;
    void *v = (void *)1;
    CH_CHECK_RC(coexec_key_get(u->k1, &v), COEXEC_OK);
    CH_CHECK(v == NULL);
    set_owner(u->slot);
    CH_CHECK_RC(coexec_key_set(u->k1, u->slot), COEXEC_OK);
    void *mine = (void *)(uintptr_t)(0x1000 + u->slot->idx);
    CH_CHECK_RC(coexec_key_set(u->k2, mine), COEXEC_OK);
    long bad = 0;
    for (long i = 0; i < u->rounds; i++) {
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
        void *a = NULL, *b = NULL;
        CH_CHECK_RC(coexec_key_get(u->k1, &a), COEXEC_OK);
        CH_CHECK_RC(coexec_key_get(u->k2, &b), COEXEC_OK);
        bad += a != u->slot;
        bad += b != mine;
    }
    CH_CHECK_EQ(bad, 0);
}

static void t_key_values(void)
{
    ch_init(NSTREAMS);
    enum { N = 32 };
    coexec_key_t k1, k2;
    CH_ASSERT_OK_FATAL(coexec_key_create(dtor_count, &k1));
    CH_ASSERT_OK_FATAL(coexec_key_create(NULL, &k2));
    void *v = (void *)1;
    CH_ASSERT_OK(coexec_key_get(k1, &v)); /* the main ULT: not set yet */
    CU_ASSERT_PTR_NULL(v);
    CH_ASSERT_OK(coexec_key_set(k2, (void *)0x77));
    kslot_t slot[N];
    kult_t u[N];
    coexec_thread_t t[N];
    memset(slot, 0, sizeof slot);
    for (int i = 0; i < N; i++) {
        slot[i].idx = i;
        u[i] = (kult_t){.k1 = k1, .k2 = k2, .slot = &slot[i],
                        .rounds = ch_iters(100, 5)};
        spawn_on(i % NSTREAMS, key_values_ult, &u[i], &t[i]);
    }
    free_threads(t, N);
    for (int i = 0; i < N; i++) {
        CH_ASSERT_EQ(atomic_load(&slot[i].dtor_calls), 1);
        CH_ASSERT_EQ(atomic_load(&slot[i].dtor_on_owner), 1);
    }
    /* the main ULT's own value was never touched by the others */
    v = NULL;
    CH_ASSERT_OK(coexec_key_get(k2, &v));
    CU_ASSERT_PTR_EQUAL(v, (void *)0x77);
    CH_ASSERT_OK(coexec_key_get(k1, &v));
    CU_ASSERT_PTR_NULL(v);
    CH_ASSERT_OK(coexec_key_delete(k1));
    CH_ASSERT_OK(coexec_key_delete(k2));
    ch_finalize();
}

/*
 * mode 0: set non-NULL             -> destructor once
 * mode 1: set non-NULL, then NULL  -> never
 * mode 2: never set                -> never
 * mode 3: set other, then slot     -> once, with slot only
 * mode 4: set on both keys         -> once per key
 */
static void key_modes_ult(void *arg)
{
    kult_t *u = arg;
    set_owner(u->slot);
    if (u->other)
        set_owner(u->other);
    switch (u->mode) {
    case 0:
        CH_CHECK_RC(coexec_key_set(u->k1, u->slot), COEXEC_OK);
        break;
    case 1:
        CH_CHECK_RC(coexec_key_set(u->k1, u->slot), COEXEC_OK);
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
        CH_CHECK_RC(coexec_key_set(u->k1, NULL), COEXEC_OK);
        break;
    case 2:
        break;
    case 3:
        CH_CHECK_RC(coexec_key_set(u->k1, u->other), COEXEC_OK);
        CH_CHECK_RC(coexec_key_set(u->k1, u->slot), COEXEC_OK);
        break;
    case 4:
        CH_CHECK_RC(coexec_key_set(u->k1, u->slot), COEXEC_OK);
        CH_CHECK_RC(coexec_key_set(u->k2, u->other), COEXEC_OK);
        break;
    }
}

/* sets k1 and leaves through coexec_thread_exit */
static void key_exit_ult(void *arg)
{
    kult_t *u = arg;
    set_owner(u->slot);
    CH_CHECK_RC(coexec_key_set(u->k1, u->slot), COEXEC_OK);
    int rc = coexec_thread_exit(); /* does not return */
    ch_fail_at(__FILE__, __LINE__, "coexec_thread_exit returned %s",
               coexec_err_name(rc));
}

static void key_reset_ult(void *arg)
{
    kult_t *u = arg;
    set_owner(u->slot);
    CH_CHECK_RC(coexec_key_set(g_key_reset, u->slot), COEXEC_OK);
}

static void t_key_destructors(void)
{
    ch_init(NSTREAMS);
    enum { N = 40 };
    coexec_key_t k1, k2;
    CH_ASSERT_OK_FATAL(coexec_key_create(dtor_count, &k1));
    CH_ASSERT_OK_FATAL(coexec_key_create(dtor_count, &k2));
    kslot_t slot[N], other[N];
    kult_t u[N];
    coexec_thread_t t[N];
    memset(slot, 0, sizeof slot);
    memset(other, 0, sizeof other);
    for (int i = 0; i < N; i++) {
        int mode = i % 5;
        u[i] = (kult_t){.k1 = k1, .k2 = k2, .slot = &slot[i], .mode = mode,
                        .other = mode >= 3 ? &other[i] : NULL};
        spawn_on(i % NSTREAMS, key_modes_ult, &u[i], &t[i]);
    }
    free_threads(t, N); /* destructors run before the ULTs count as done */
    for (int i = 0; i < N; i++) {
        int mode = i % 5;
        int want_slot = mode == 0 || mode == 3 || mode == 4;
        int want_other = mode == 4;
        CH_ASSERT_EQ(atomic_load(&slot[i].dtor_calls), want_slot);
        CH_ASSERT_EQ(atomic_load(&slot[i].dtor_on_owner), want_slot);
        CH_ASSERT_EQ(atomic_load(&other[i].dtor_calls), want_other);
    }

    /* a ULT that exits, and detached ULTs, run their destructors too */
    kslot_t xs_[3];
    kult_t xu[3];
    memset(xs_, 0, sizeof xs_);
    coexec_thread_t xt;
    for (int i = 0; i < 3; i++)
        xu[i] = (kult_t){.k1 = k1, .slot = &xs_[i], .mode = 0};
    spawn_on(1, key_exit_ult, &xu[0], &xt);
    CH_ASSERT_OK(coexec_thread_free(&xt));
    CH_ASSERT_EQ(atomic_load(&xs_[0].dtor_calls), 1);
    CH_ASSERT_EQ(atomic_load(&xs_[0].dtor_on_owner), 1);
    CH_ASSERT_OK(coexec_thread_create_on(xs_rank(2), key_modes_ult, &xu[1],
                                         NULL, NULL));
    CH_ASSERT_OK(coexec_thread_create_on(xs_rank(3), key_exit_ult, &xu[2],
                                         NULL, NULL));
    CH_WAIT(atomic_load(&xs_[1].dtor_calls) == 1 &&
            atomic_load(&xs_[2].dtor_calls) == 1);
    linger(2);
    for (int i = 1; i < 3; i++) {
        CH_ASSERT_EQ(atomic_load(&xs_[i].dtor_calls), 1);
        CH_ASSERT_EQ(atomic_load(&xs_[i].dtor_on_owner), 1);
    }

    /* destructors that set the key again: more rounds, at most four */
    CH_ASSERT_OK_FATAL(coexec_key_create(dtor_reset, &g_key_reset));
    const int resets[] = {0, 1, 2, 3, 100};
    const int calls[] = {1, 2, 3, 4, 4};
    enum { R = sizeof resets / sizeof resets[0] };
    kslot_t rs[R];
    kult_t ru[R];
    coexec_thread_t rt[R];
    memset(rs, 0, sizeof rs);
    for (int i = 0; i < R; i++) {
        rs[i].resets = resets[i];
        ru[i] = (kult_t){.slot = &rs[i]};
        spawn_on(1 + i % 3, key_reset_ult, &ru[i], &rt[i]);
    }
    free_threads(rt, R);
    for (int i = 0; i < R; i++) {
        CH_ASSERT_EQ(atomic_load(&rs[i].dtor_calls), calls[i]);
        CH_ASSERT_EQ(atomic_load(&rs[i].dtor_on_owner), calls[i]);
    }
    CH_ASSERT_OK(coexec_key_delete(g_key_reset));
    CH_ASSERT_OK(coexec_key_delete(k1));
    CH_ASSERT_OK(coexec_key_delete(k2));
    ch_finalize();
}

static void t_key_main_ult(void)
{
    ch_init(2);
    coexec_key_t k;
    kslot_t s;
    memset(&s, 0, sizeof s);
    CH_ASSERT_OK_FATAL(coexec_key_create(dtor_count, &k));
    CH_ASSERT_OK(coexec_self_id(&s.owner));
    CH_ASSERT_OK(coexec_key_set(k, &s));
    void *v = NULL;
    CH_ASSERT_OK(coexec_key_get(k, &v));
    CU_ASSERT_PTR_EQUAL(v, &s);
    CH_ASSERT_EQ(atomic_load(&s.dtor_calls), 0);
    ch_finalize(); /* the main ULT's values are destroyed here */
    CH_ASSERT_EQ(atomic_load(&s.dtor_calls), 1);
    coexec_key_t k2;
    CH_ASSERT_RC(coexec_key_create(NULL, &k2), COEXEC_ENOTINIT);
}

typedef struct {
    coexec_key_t k1;
    coexec_key_t k2; /* written by the main ULT before release */
    kslot_t *a, *b;
    atomic_int set_done;
    atomic_int release;
} kdel_t;

static void key_delete_ult(void *arg)
{
    kdel_t *d = arg;
    set_owner(d->a);
    set_owner(d->b);
    CH_CHECK_RC(coexec_key_set(d->k1, d->a), COEXEC_OK);
    atomic_store(&d->set_done, 1);
    CH_WAIT(atomic_load(&d->release));
    /* k1 is gone; k2 is new (it may reuse k1's slot): nothing set yet */
    void *v = (void *)1;
    CH_CHECK_RC(coexec_key_get(d->k1, &v), COEXEC_EHANDLE);
    CH_CHECK_RC(coexec_key_set(d->k1, d->a), COEXEC_EHANDLE);
    v = (void *)1;
    CH_CHECK_RC(coexec_key_get(d->k2, &v), COEXEC_OK);
    CH_CHECK(v == NULL);
    CH_CHECK_RC(coexec_key_set(d->k2, d->b), COEXEC_OK);
    CH_CHECK_RC(coexec_key_get(d->k2, &v), COEXEC_OK);
    CH_CHECK(v == d->b);
}

static void t_key_delete(void)
{
    ch_init(NSTREAMS);
    kslot_t a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    kdel_t d = {.a = &a, .b = &b};
    CH_ASSERT_OK_FATAL(coexec_key_create(dtor_count, &d.k1));
    coexec_thread_t t;
    spawn_on(1, key_delete_ult, &d, &t);
    CH_WAIT(atomic_load(&d.set_done));
    CH_ASSERT_OK(coexec_key_delete(d.k1));
    CH_ASSERT_OK(coexec_key_create(dtor_count, &d.k2));
    atomic_store(&d.release, 1);
    CH_ASSERT_OK(coexec_thread_free(&t));
    /* the value held at delete is not destroyed; the new key's is */
    CH_ASSERT_EQ(atomic_load(&a.dtor_calls), 0);
    CH_ASSERT_EQ(atomic_load(&b.dtor_calls), 1);
    void *v = NULL;
    CH_ASSERT_RC(coexec_key_set(d.k1, &a), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_key_get(d.k1, &v), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_key_delete(d.k1), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_key_delete(d.k2));
    CH_ASSERT_RC(coexec_key_delete(d.k2), COEXEC_EHANDLE);
    coexec_key_t zero = {0};
    CH_ASSERT_RC(coexec_key_set(zero, &a), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_key_get(zero, &v), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_key_delete(zero), COEXEC_EHANDLE);
    ch_finalize();
}

/* a key of an earlier init names nothing in the next one */
static void t_key_reinit(void)
{
    ch_init(1);
    coexec_key_t old;
    CH_ASSERT_OK_FATAL(coexec_key_create(NULL, &old));
    CH_ASSERT_OK(coexec_key_set(old, (void *)5));
    ch_finalize();
    ch_init(1);
    void *v = (void *)1;
    CH_ASSERT_RC(coexec_key_get(old, &v), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_key_set(old, (void *)6), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_key_delete(old), COEXEC_EHANDLE);
    /* the new runtime's first key is fresh, whatever slot it reuses */
    coexec_key_t k;
    CH_ASSERT_OK(coexec_key_create(NULL, &k));
    v = (void *)1;
    CH_ASSERT_OK(coexec_key_get(k, &v));
    CU_ASSERT_PTR_NULL(v);
    CH_ASSERT_OK(coexec_key_delete(k));
    ch_finalize();
}

static void t_key_limit(void)
{
    ch_init(1);
    static coexec_key_t keys[COEXEC_KEYS_MAX + 1];
    int n = 0, rc = COEXEC_OK;
    while (n <= COEXEC_KEYS_MAX &&
           (rc = coexec_key_create(NULL, &keys[n])) == COEXEC_OK)
        n++;
    CH_ASSERT_RC(rc, COEXEC_EAGAIN);
    CH_ASSERT_EQ(n, COEXEC_KEYS_MAX);
    /* all distinct and usable at once */
    for (int i = 0; i < n; i++)
        CH_ASSERT_OK(coexec_key_set(keys[i], (void *)(uintptr_t)(i + 1)));
    long bad = 0;
    for (int i = 0; i < n; i++) {
        void *v = NULL;
        bad += coexec_key_get(keys[i], &v) != COEXEC_OK ||
               v != (void *)(uintptr_t)(i + 1);
    }
    CH_ASSERT_EQ(bad, 0);
    /* one freed: one more can be had, then none */
    CH_ASSERT_OK(coexec_key_delete(keys[7]));
    CH_ASSERT_OK(coexec_key_create(NULL, &keys[7]));
    void *v = (void *)1;
    CH_ASSERT_OK(coexec_key_get(keys[7], &v));
    CU_ASSERT_PTR_NULL(v);
    coexec_key_t extra;
    CH_ASSERT_RC(coexec_key_create(NULL, &extra), COEXEC_EAGAIN);
    for (int i = 0; i < n; i++)
        CH_ASSERT_OK(coexec_key_delete(keys[i]));
    CH_ASSERT_OK(coexec_key_create(NULL, &extra));
    CH_ASSERT_OK(coexec_key_delete(extra));
    ch_finalize();
}

typedef struct {
    coexec_key_t k;
    coexec_key_t made;
} kext_t;

static void key_external(void *arg)
{
    kext_t *x = arg;
    void *v = NULL;
    CH_CHECK_RC(coexec_key_set(x->k, (void *)1), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_key_get(x->k, &v), COEXEC_ECONTEXT);
    /* creating and deleting are fine from any thread */
    CH_CHECK_RC(coexec_key_create(NULL, &x->made), COEXEC_OK);
}

static void t_key_external(void)
{
    coexec_key_t k;
    CH_ASSERT_RC(coexec_key_create(NULL, &k), COEXEC_ENOTINIT);
    ch_init(2);
    kext_t x;
    CH_ASSERT_OK_FATAL(coexec_key_create(NULL, &x.k));
    ext_t e;
    ext_start(&e, key_external, &x);
    ext_join(&e);
    CH_ASSERT_OK(coexec_key_set(x.made, (void *)3));
    CH_ASSERT_OK(coexec_key_delete(x.made));
    CH_ASSERT_OK(coexec_key_delete(x.k));
    ch_finalize();
}

/* ======================================================================= */
/* sleep                                                                    */
/* ======================================================================= */

typedef struct {
    int id;
    long rounds;
    atomic_long early;
    atomic_long done;
} sleeper_t;

/* sleeps of 0.5 to 5 ms, with both calls; counts early returns */
static void sleeper_body(void *arg)
{
    sleeper_t *s = arg;
    long early = 0;
    for (long j = 0; j < s->rounds; j++) {
        uint64_t d = (uint64_t)((s->id * 7 + j * 3) % 10 + 1) * (MS / 2);
        uint64_t t0 = coexec_now_ns();
        CH_CHECK_RC(coexec_sleep_ns(d), COEXEC_OK);
        uint64_t t1 = coexec_now_ns();
        early += t1 - t0 < d;
        uint64_t dl = t1 + d;
        CH_CHECK_RC(coexec_sleep_until(dl), COEXEC_OK);
        early += coexec_now_ns() < dl;
    }
    atomic_fetch_add(&s->early, early);
    atomic_fetch_add(&s->done, 1);
}

static void t_sleep_never_early(void)
{
    /* an external thread may sleep without the runtime */
    uint64_t t0 = coexec_now_ns();
    CH_ASSERT_OK(coexec_sleep_ns(2 * MS));
    CU_ASSERT(coexec_now_ns() - t0 >= 2 * MS);
    t0 = coexec_now_ns();
    CH_ASSERT_OK(coexec_sleep_until(t0 + 2 * MS));
    CU_ASSERT(coexec_now_ns() >= t0 + 2 * MS);

    ch_init(NSTREAMS);
    enum { NU = 16, NE = 2 };
    sleeper_t s = {.rounds = ch_iters(10, 2)};
    sleeper_t per[NU + NE + 1];
    coexec_thread_t t[NU];
    ext_t e[NE];
    for (int i = 0; i < NU + NE + 1; i++) {
        per[i] = (sleeper_t){.id = i, .rounds = s.rounds};
    }
    for (int i = 0; i < NU; i++)
        spawn_on(i % NSTREAMS, sleeper_body, &per[i], &t[i]);
    for (int i = 0; i < NE; i++)
        ext_start(&e[i], sleeper_body, &per[NU + i]);
    sleeper_body(&per[NU + NE]); /* the main ULT too */
    free_threads(t, NU);
    for (int i = 0; i < NE; i++)
        ext_join(&e[i]);
    long early = 0;
    for (int i = 0; i < NU + NE + 1; i++) {
        early += atomic_load(&per[i].early);
        CH_ASSERT_EQ(atomic_load(&per[i].done), 1);
    }
    CH_ASSERT_EQ(early, 0);
    /* zero and past deadlines return at once, successfully */
    CH_ASSERT_OK(coexec_sleep_ns(0));
    CH_ASSERT_OK(coexec_sleep_until(0));
    CH_ASSERT_OK(coexec_sleep_until(coexec_now_ns() - 1));
    /* the clock is monotonic */
    uint64_t prev = coexec_now_ns();
    long back = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t now = coexec_now_ns();
        back += now < prev;
        prev = now;
    }
    CH_ASSERT_EQ(back, 0);
    ch_finalize();
}

typedef struct {
    atomic_long progress;
    atomic_int stop;
    int rank_a, rank_b;
    int sleeps;
    int advanced; /* sleeps during which the other ULT made progress */
    long early;
} nb_t;

static void nb_spinner(void *arg)
{
    nb_t *n = arg;
    CH_CHECK_RC(coexec_xstream_self_rank(&n->rank_b), COEXEC_OK);
    atomic_store(&n->progress, 0);
    while (!atomic_load(&n->stop)) {
        atomic_fetch_add(&n->progress, 1);
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    }
}

static void nb_sleeper(void *arg)
{
    nb_t *n = arg;
    /* sleep_ns(0) yields once: the spinner on this stream gets to run */
    double t0s = ch_now();
    while (atomic_load(&n->progress) == 0 && ch_now() - t0s < CH_WAIT_LIMIT_S)
        CH_CHECK_RC(coexec_sleep_ns(0), COEXEC_OK);
    CH_CHECK(atomic_load(&n->progress) > 0);
    for (int i = 0; i < n->sleeps; i++) {
        long p0 = atomic_load(&n->progress);
        uint64_t t0 = coexec_now_ns();
        CH_CHECK_RC(coexec_sleep_ns(10 * MS), COEXEC_OK);
        n->early += coexec_now_ns() - t0 < 10 * MS;
        n->advanced += atomic_load(&n->progress) > p0;
    }
    CH_CHECK_RC(coexec_xstream_self_rank(&n->rank_a), COEXEC_OK);
    atomic_store(&n->stop, 1);
}

/*
 * A ULT that sleeps leaves its stream to the others: the spinner on the
 * same stream (no stealing) advances while it sleeps. And a stream kept
 * busy by a yielding ULT still wakes its sleepers.
 */
static void t_sleep_stream_not_blocked(void)
{
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    nb_t n;
    memset(&n, 0, sizeof n);
    n.sleeps = 5;
    coexec_thread_t ta, tb;
    /* the sleeper is queued first (FIFO pool): it runs before the spinner
     * has started and waits for it with sleep_ns(0) */
    CH_ASSERT_OK(coexec_thread_create(s.pool, nb_sleeper, &n, NULL, &ta));
    CH_ASSERT_OK(coexec_thread_create(s.pool, nb_spinner, &n, NULL, &tb));
    CH_WAIT(atomic_load(&n.stop));
    CH_ASSERT_OK(coexec_thread_free(&ta));
    CH_ASSERT_OK(coexec_thread_free(&tb));
    CH_ASSERT_EQ(n.rank_a, s.rank);
    CH_ASSERT_EQ(n.rank_b, s.rank);
    CH_ASSERT_EQ(n.early, 0);
    CU_ASSERT(n.advanced >= 1);
    if (n.advanced < n.sleeps)
        fprintf(stderr, "    the spinner advanced during %d of %d sleeps\n",
                n.advanced, n.sleeps);

    /* the main ULT sleeping on the primary, a spinner beside it */
    nb_t m;
    memset(&m, 0, sizeof m);
    coexec_thread_t tm;
    CH_ASSERT_OK(coexec_thread_create(pool_of_rank(0), nb_spinner, &m, NULL,
                                      &tm));
    CH_WAIT(atomic_load(&m.progress) > 0);
    int adv = 0;
    for (int i = 0; i < 5; i++) {
        long p0 = atomic_load(&m.progress);
        uint64_t t0 = coexec_now_ns();
        CH_ASSERT_OK(coexec_sleep_ns(10 * MS));
        CU_ASSERT(coexec_now_ns() - t0 >= 10 * MS);
        adv += atomic_load(&m.progress) > p0;
    }
    CU_ASSERT(adv >= 1);
    atomic_store(&m.stop, 1);
    CH_ASSERT_OK(coexec_thread_free(&tm));
    CH_ASSERT_EQ(m.rank_b, 0);
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

static void long_sleeper(void *arg)
{
    uint64_t ns = *(uint64_t *)arg;
    uint64_t t0 = coexec_now_ns();
    CH_CHECK_RC(coexec_sleep_ns(ns), COEXEC_OK);
    CH_CHECK(coexec_now_ns() - t0 >= ns);
}

/*
 * Every unit of every stream sleeps for the whole measured window (the
 * other ULTs sleep 600 ms, the main ULT 200 ms of it). Streams whose units
 * all sleep park their OS threads until the earliest deadline, so the
 * process should use almost no CPU in the window. Spinning instead would
 * cost one CPU per stream (4 streams on this 2-core machine: ~2x the wall
 * time); the bound of 25% of the wall time sits far from both, so noise
 * from other processes (not counted by RUSAGE_SELF) or sanitizer runtime
 * threads cannot flip the verdict.
 */
static void t_sleep_idle_stream_parks(void)
{
    ch_init(NSTREAMS);
    uint64_t ns = 600 * MS;
    coexec_thread_t t[NSTREAMS - 1];
    for (int i = 0; i < NSTREAMS - 1; i++) {
        spawn_on(1 + i, long_sleeper, &ns, &t[i]);
        CU_ASSERT(wait_blocked(t[i]));
    }
    linger(5); /* let the streams settle into their parked state */
    double c0 = cpu_seconds(), w0 = ch_now();
    CH_ASSERT_OK(coexec_sleep_ns(200 * MS));
    double c1 = cpu_seconds(), w1 = ch_now();
    double cpu = c1 - c0, wall = w1 - w0;
    fprintf(stderr, "    %.1f ms CPU over %.1f ms with every unit asleep\n",
            cpu * 1e3, wall * 1e3);
    CU_ASSERT(wall >= 0.2);
    CU_ASSERT(cpu < 0.25 * wall);
    free_threads(t, NSTREAMS - 1);
    ch_finalize();
}

typedef struct {
    uint64_t deadline;
    uint64_t before; /* when it called sleep_until */
    int seq;         /* wake order */
    int late_ok;     /* woke at or after its deadline */
} dl_t;

typedef struct {
    dl_t *d;
    atomic_int *arrived;
    atomic_int *go;
    atomic_int *seq;
} dl_arg_t;

static void dl_body(void *arg)
{
    dl_arg_t *a = arg;
    atomic_fetch_add(a->arrived, 1);
    while (!atomic_load(a->go))
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    a->d->before = coexec_now_ns();
    CH_CHECK_RC(coexec_sleep_until(a->d->deadline), COEXEC_OK);
    a->d->late_ok = coexec_now_ns() >= a->d->deadline;
    a->d->seq = atomic_fetch_add(a->seq, 1);
}

/*
 * K ULTs on one stream (FIFO pool, no stealing) sleep until deadlines
 * 1 ms apart, given in a shuffled order. Any two that were both asleep
 * before the earlier deadline must wake in deadline order. The check is
 * only made for such pairs, so a slow start cannot make it fail; the
 * margin grows until most pairs qualify.
 */
static void t_sleep_deadline_order(void)
{
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    enum { K = 16 };
    const int perm[K] = {9, 3, 14, 0, 7, 12, 5, 1, 15, 10, 2, 8, 13, 4, 11, 6};
    long checked = 0, wrong = 0, late = 0;
    uint64_t margin = 20 * MS;
    for (int attempt = 0; attempt < 5; attempt++, margin *= 2) {
        dl_t d[K];
        dl_arg_t a[K];
        coexec_thread_t t[K];
        atomic_int arrived = 0, go = 0, seq = 0;
        memset(d, 0, sizeof d);
        for (int i = 0; i < K; i++) {
            a[i] = (dl_arg_t){&d[i], &arrived, &go, &seq};
            CH_ASSERT_OK(coexec_thread_create(s.pool, dl_body, &a[i], NULL,
                                              &t[i]));
        }
        CH_WAIT(atomic_load(&arrived) == K);
        uint64_t base = coexec_now_ns() + margin;
        for (int i = 0; i < K; i++)
            d[i].deadline = base + (uint64_t)perm[i] * MS;
        atomic_store(&go, 1);
        for (int i = 0; i < K; i++)
            CH_WAIT(thread_state(t[i]) == COEXEC_UNIT_TERMINATED);
        free_threads(t, K);
        long pairs = 0;
        for (int i = 0; i < K; i++) {
            late += !d[i].late_ok;
            for (int j = 0; j < K; j++) {
                if (d[i].deadline >= d[j].deadline)
                    continue;
                uint64_t last_in =
                    d[i].before > d[j].before ? d[i].before : d[j].before;
                if (last_in >= d[i].deadline)
                    continue;
                pairs++;
                wrong += d[i].seq > d[j].seq;
            }
        }
        checked += pairs;
        if (pairs >= K * (K - 1) / 4)
            break;
    }
    CH_ASSERT_EQ(late, 0);
    CH_ASSERT_EQ(wrong, 0);
    CU_ASSERT(checked > 0);
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

typedef struct {
    coexec_waker_t w;
    coexec_thread_t self;
    atomic_int ready;
    atomic_int slept;   /* both sleeps are over */
    atomic_int release; /* the test is done waking it: it may return */
    uint64_t first, second; /* elapsed */
} wk_t;

static void waked_sleeper(void *arg)
{
    wk_t *k = arg;
    CH_CHECK_RC(coexec_self_waker(&k->w), COEXEC_OK);
    CH_CHECK_RC(coexec_thread_self(&k->self), COEXEC_OK);
    atomic_store(&k->ready, 1);
    uint64_t t0 = coexec_now_ns();
    CH_CHECK_RC(coexec_sleep_ns(40 * MS), COEXEC_OK);
    k->first = coexec_now_ns() - t0;
    /* a wake left over from the first sleep does not cut the second */
    t0 = coexec_now_ns();
    CH_CHECK_RC(coexec_sleep_ns(5 * MS), COEXEC_OK);
    k->second = coexec_now_ns() - t0;
    atomic_store(&k->slept, 1);
    /* Stay alive until the test has sent its wakes and its resume: on a
     * busy machine they may come after both sleeps, and a resume of a
     * finished ULT is refused (COEXEC_ESTATE). */
    while (!atomic_load(&k->release))
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
}

static void ext_wake(void *arg)
{
    wk_t *k = arg;
    for (int i = 0; i < 3; i++)
        CH_CHECK_RC(coexec_waker_wake(k->w), COEXEC_OK);
}

/* wakers (from the main ULT and an external thread) and a resume woken
 * during a sleep do not end it early */
static void t_sleep_waker_no_cut(void)
{
    ch_init(NSTREAMS);
    for (int round = 0; round < 2; round++) {
        wk_t k;
        memset(&k, 0, sizeof k);
        coexec_thread_t t;
        spawn_on(1 + round, waked_sleeper, &k, &t);
        CH_WAIT(atomic_load(&k.ready));
        /* Normally it is seen asleep; if this thread is held off past
         * both sleeps, the wakes below come late and prove less, but
         * nothing here may then fail. */
        CU_ASSERT(CH_WAIT(thread_state(t) == COEXEC_UNIT_BLOCKED ||
                          atomic_load(&k.slept)));
        CH_ASSERT_OK(coexec_waker_wake(k.w));
        linger(1);
        ext_t e;
        ext_start(&e, ext_wake, &k);
        ext_join(&e);
        if (round == 1) {
            int rc = coexec_thread_resume(k.self);
            CU_ASSERT(rc == COEXEC_OK);
        }
        CH_ASSERT_OK(coexec_waker_wake(k.w));
        atomic_store(&k.release, 1);
        CH_ASSERT_OK(coexec_thread_free(&t));
        CU_ASSERT(k.first >= 40 * MS);
        CU_ASSERT(k.second >= 5 * MS);
    }
    ch_finalize();
}

/* ======================================================================= */
/* timeout                                                                  */
/* ======================================================================= */

typedef struct {
    coexec_mutex_t held;   /* locked by the main ULT */
    coexec_mutex_t cm;     /* the cond's mutex */
    coexec_cond_t c;
    coexec_rwlock_t rd_held; /* read-held by the main ULT */
    coexec_rwlock_t wr_held; /* write-held by the main ULT */
    atomic_long early;
    atomic_long wrong_rc;
    atomic_int done;
} tmo_t;

typedef struct {
    tmo_t *T;
    int kind;
    uint64_t ns;
} tmo_arg_t;

static void tmo_body(void *arg)
{
    tmo_arg_t *a = arg;
    tmo_t *T = a->T;
    int rc = -1, want = COEXEC_ETIMEDOUT;
    uint64_t t0 = coexec_now_ns();
    switch (a->kind) {
    case 0:
        rc = coexec_mutex_lock_timed(&T->held, a->ns);
        break;
    case 1:
        CH_CHECK_RC(coexec_mutex_lock(&T->cm), COEXEC_OK);
        t0 = coexec_now_ns();
        rc = coexec_cond_wait_timed(&T->c, &T->cm, a->ns);
        break;
    case 2:
        rc = coexec_rwlock_wrlock_timed(&T->rd_held, a->ns);
        break;
    case 3:
        rc = coexec_rwlock_rdlock_timed(&T->wr_held, a->ns);
        break;
    case 4:
        rc = coexec_rwlock_wrlock_timed(&T->wr_held, a->ns);
        break;
    default:
        rc = coexec_sleep_ns(a->ns);
        want = COEXEC_OK;
        break;
    }
    uint64_t el = coexec_now_ns() - t0;
    if (a->kind == 1)
        CH_CHECK_RC(coexec_mutex_unlock(&T->cm), COEXEC_OK);
    if (rc != want) {
        atomic_fetch_add(&T->wrong_rc, 1);
        CH_CHECK_RC(rc, want);
    }
    if (el < a->ns)
        atomic_fetch_add(&T->early, 1);
    atomic_fetch_add(&T->done, 1);
}

/*
 * Timed waits of every kind, with timeouts from 1 to 12 ms, all on one
 * stream (so its timer structure holds many deadlines of several kinds at
 * once), then the same spread over 4 streams with external threads. Each
 * times out (a sleep completes), none early.
 */
static void t_timeout_many(void)
{
    ch_init(NSTREAMS);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    tmo_t T;
    memset(&T, 0, sizeof T);
    CH_ASSERT_OK(coexec_mutex_init(&T.held, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK(coexec_mutex_init(&T.cm, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK(coexec_cond_init(&T.c));
    CH_ASSERT_OK(coexec_rwlock_init(&T.rd_held));
    CH_ASSERT_OK(coexec_rwlock_init(&T.wr_held));
    CH_ASSERT_OK(coexec_mutex_lock(&T.held));
    CH_ASSERT_OK(coexec_rwlock_rdlock(&T.rd_held));
    CH_ASSERT_OK(coexec_rwlock_wrlock(&T.wr_held));
    enum { K = 36, KE = 6 };
    long rounds = ch_iters(3, 1);
    for (long r = 0; r < rounds; r++) {
        tmo_arg_t a[K + KE];
        coexec_thread_t t[K];
        ext_t e[KE];
        atomic_store(&T.done, 0);
        for (int i = 0; i < K + KE; i++)
            a[i] = (tmo_arg_t){&T, i % 6, (uint64_t)(K - i) % 12 * MS + MS};
        /* one stream */
        for (int i = 0; i < K; i++)
            CH_ASSERT_OK(coexec_thread_create(s.pool, tmo_body, &a[i], NULL,
                                              &t[i]));
        CH_WAIT(atomic_load(&T.done) == K);
        free_threads(t, K);
        /* every stream and external threads */
        atomic_store(&T.done, 0);
        for (int i = 0; i < K; i++)
            spawn_on(i % NSTREAMS, tmo_body, &a[i], &t[i]);
        for (int i = 0; i < KE; i++)
            ext_start(&e[i], tmo_body, &a[K + i]);
        free_threads(t, K);
        for (int i = 0; i < KE; i++)
            ext_join(&e[i]);
        CH_ASSERT_EQ(atomic_load(&T.done), K + KE);
    }
    CH_ASSERT_EQ(atomic_load(&T.wrong_rc), 0);
    CH_ASSERT_EQ(atomic_load(&T.early), 0);
    /* nothing is left queued on any object */
    CH_ASSERT_OK(coexec_mutex_unlock(&T.held));
    CH_ASSERT_OK(coexec_rwlock_unlock(&T.rd_held));
    CH_ASSERT_OK(coexec_rwlock_unlock(&T.wr_held));
    CH_ASSERT_OK(coexec_mutex_destroy(&T.held));
    CH_ASSERT_OK(coexec_cond_destroy(&T.c));
    CH_ASSERT_OK(coexec_mutex_destroy(&T.cm));
    CH_ASSERT_OK(coexec_rwlock_destroy(&T.rd_held));
    CH_ASSERT_OK(coexec_rwlock_destroy(&T.wr_held));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* ---- timeouts racing with hand-offs and signals ---- */

typedef struct {
    coexec_mutex_t m;
    coexec_rwlock_t l;
    coexec_mutex_t cm;
    coexec_cond_t c;
    long iters;
    long counter;  /* protected by m */
    long rwvalue;  /* protected by l */
    long tokens;   /* protected by cm */
    long consumed; /* protected by cm */
    long total;
    atomic_int inside;
    atomic_int readers, writers;
    atomic_long got;
    atomic_long timeouts;
    atomic_long bad;
} race_t;

typedef struct {
    race_t *R;
    int id;
} race_arg_t;

/* 0 to 175 us: timeouts that often expire while the lock changes hands */
static uint64_t race_timeout(long i, int id)
{
    return (uint64_t)((i * 37 + id * 11) % 8) * 25000;
}

static void race_mutex(void *arg)
{
    race_arg_t *a = arg;
    race_t *R = a->R;
    long bad = 0, got = 0, tmo = 0;
    for (long i = 0; i < R->iters; i++) {
        int rc = coexec_mutex_lock_timed(&R->m, race_timeout(i, a->id));
        if (rc == COEXEC_OK) {
            if (atomic_fetch_add(&R->inside, 1) != 0)
                bad++;
            R->counter++;
            if (i % 16 == 0)
                ch_relax();
            atomic_fetch_sub(&R->inside, 1);
            bad += coexec_mutex_unlock(&R->m) != COEXEC_OK;
            got++;
        } else if (rc == COEXEC_ETIMEDOUT) {
            /* a waiter that timed out was not made the owner */
            bad += coexec_mutex_unlock(&R->m) != COEXEC_EPERM;
            tmo++;
        } else {
            CH_CHECK_RC(rc, COEXEC_ETIMEDOUT);
            bad++;
        }
    }
    atomic_fetch_add(&R->bad, bad);
    atomic_fetch_add(&R->got, got);
    atomic_fetch_add(&R->timeouts, tmo);
}

static void race_rwlock(void *arg)
{
    race_arg_t *a = arg;
    race_t *R = a->R;
    long bad = 0, got = 0, tmo = 0;
    int writer = a->id % 3 == 0;
    for (long i = 0; i < R->iters; i++) {
        uint64_t t = race_timeout(i, a->id);
        int rc = writer ? coexec_rwlock_wrlock_timed(&R->l, t)
                        : coexec_rwlock_rdlock_timed(&R->l, t);
        if (rc == COEXEC_ETIMEDOUT) {
            tmo++;
            continue;
        }
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            bad++;
            continue;
        }
        if (writer) {
            bad += atomic_fetch_add(&R->writers, 1) != 0;
            bad += atomic_load(&R->readers) != 0;
            R->rwvalue++;
            got++;
            if (i % 16 == 0)
                ch_relax();
            atomic_fetch_sub(&R->writers, 1);
        } else {
            atomic_fetch_add(&R->readers, 1);
            bad += atomic_load(&R->writers) != 0;
            if (i % 16 == 0)
                ch_relax();
            atomic_fetch_sub(&R->readers, 1);
        }
        bad += coexec_rwlock_unlock(&R->l) != COEXEC_OK;
    }
    atomic_fetch_add(&R->bad, bad);
    atomic_fetch_add(&R->got, got);
    atomic_fetch_add(&R->timeouts, tmo);
}

static void race_producer(void *arg)
{
    race_arg_t *a = arg;
    race_t *R = a->R;
    for (long i = 0; i < R->iters; i++) {
        CH_CHECK_RC(coexec_mutex_lock(&R->cm), COEXEC_OK);
        R->tokens++;
        CH_CHECK_RC(i % 8 == 7 ? coexec_cond_broadcast(&R->c)
                               : coexec_cond_signal(&R->c),
                    COEXEC_OK);
        CH_CHECK_RC(coexec_mutex_unlock(&R->cm), COEXEC_OK);
        if (i % 4 == 0)
            ch_relax();
    }
}

/* takes tokens with short timed waits; a lost signal only costs time */
static void race_consumer(void *arg)
{
    race_arg_t *a = arg;
    race_t *R = a->R;
    long bad = 0, got = 0, tmo = 0, i = 0;
    for (;; i++) {
        CH_CHECK_RC(coexec_mutex_lock(&R->cm), COEXEC_OK);
        bad += atomic_fetch_add(&R->inside, 1) != 0;
        while (R->tokens == 0 && R->consumed < R->total) {
            atomic_fetch_sub(&R->inside, 1);
            int rc = coexec_cond_wait_timed(&R->c, &R->cm,
                                            race_timeout(i++, a->id) + 1000);
            /* whatever the result, the mutex is ours again */
            bad += atomic_fetch_add(&R->inside, 1) != 0;
            if (rc == COEXEC_ETIMEDOUT)
                tmo++;
            else if (rc != COEXEC_OK) {
                CH_CHECK_RC(rc, COEXEC_OK);
                bad++;
                break;
            }
        }
        bool over = R->tokens == 0;
        if (!over) {
            R->tokens--;
            R->consumed++;
            got++;
        }
        atomic_fetch_sub(&R->inside, 1);
        bad += coexec_mutex_unlock(&R->cm) != COEXEC_OK;
        if (over)
            break;
    }
    atomic_fetch_add(&R->bad, bad);
    atomic_fetch_add(&R->got, got);
    atomic_fetch_add(&R->timeouts, tmo);
}

static void race_run(race_t *R, void (*fn)(void *), int nu, int ne)
{
    race_arg_t a[24];
    coexec_thread_t t[20];
    ext_t e[4];
    for (int i = 0; i < nu + ne; i++)
        a[i] = (race_arg_t){R, i};
    for (int i = 0; i < nu; i++)
        spawn_on(i % NSTREAMS, fn, &a[i], &t[i]);
    for (int i = 0; i < ne; i++)
        ext_start(&e[i], fn, &a[nu + i]);
    free_threads(t, nu);
    for (int i = 0; i < ne; i++)
        ext_join(&e[i]);
}

/*
 * A stream busy in one long unit cannot fire its own timers. A hog pinned
 * to stream 1 yields until a timed waiter, pinned there too, has unpinned
 * itself and is about to wait (so its timer goes in stream 1's heap), then
 * computes without yielding until the waiter has returned. An idle thread
 * must fire the timer and an idle stream steal the woken waiter: otherwise
 * the hog gives up after HOG_CAP_S and the waiter returns only after it.
 * (On a very slow run stream 1 may fire the timer itself before the hog
 * starts computing; the test then proves less, but still passes.)
 */
#define HOG_CAP_S 20.0

typedef struct {
    int sleep; /* 1: coexec_sleep_ns; 0: a timed eventual wait */
    atomic_int waiting, hog_computing, woke_while_hog;
    atomic_int rank_woken, rc, done, hog_saw_done;
} busy_timer_t;

static void busy_timed_waiter(void *arg)
{
    busy_timer_t *b = arg;
    coexec_thread_t self;
    CH_CHECK_RC(coexec_thread_self(&self), COEXEC_OK);
    /* Running on stream 1, so the wait parks there; once woken it may be
     * stolen like any ready unit. */
    CH_CHECK_RC(coexec_unit_set_pinned(coexec_thread_unit(self), 0), COEXEC_OK);
    coexec_eventual_t ev;
    CH_CHECK_RC(coexec_eventual_init(&ev, 0), COEXEC_OK);
    atomic_store(&b->waiting, 1);
    int rc = b->sleep ? coexec_sleep_ns(50 * MS)
                      : coexec_eventual_wait_timed(&ev, 50 * MS, NULL);
    atomic_store(&b->woke_while_hog, atomic_load(&b->hog_computing));
    CH_CHECK_RC(coexec_eventual_destroy(&ev), COEXEC_OK);
    int r = -1;
    CH_CHECK_RC(coexec_xstream_self_rank(&r), COEXEC_OK);
    atomic_store(&b->rank_woken, r);
    atomic_store(&b->rc, rc);
    atomic_store(&b->done, 1);
}

static void busy_hog(void *arg)
{
    busy_timer_t *b = arg;
    while (!atomic_load(&b->waiting))
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    atomic_store(&b->hog_computing, 1);
    double t0 = ch_now();
    while (!atomic_load(&b->done) && ch_now() - t0 < HOG_CAP_S)
        ;
    atomic_store(&b->hog_saw_done, atomic_load(&b->done));
}

static void busy_stream_timer(int sleep)
{
    ch_init(NSTREAMS);
    int proved = 0, rounds = ch_iters(3, 1);
    for (int round = 0; round < rounds; round++) {
        busy_timer_t b = {.sleep = sleep};
        coexec_thread_attr_t a;
        CH_ASSERT_OK(coexec_thread_attr_init(&a));
        a.pinned = 1;
        coexec_thread_t w, h;
        CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs_rank(1), busy_hog, &b, &a, &h));
        CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs_rank(1), busy_timed_waiter,
                                                   &b, &a, &w));
        CH_ASSERT_OK(coexec_thread_free(&w));
        CH_ASSERT_OK(coexec_thread_free(&h));
        CH_ASSERT_EQ(atomic_load(&b.hog_saw_done), 1);
        CH_ASSERT_EQ(atomic_load(&b.rc), sleep ? COEXEC_OK : COEXEC_ETIMEDOUT);
        if (atomic_load(&b.woke_while_hog)) {
            CU_ASSERT(atomic_load(&b.rank_woken) != 1);
            proved++;
        }
    }
    fprintf(stderr, "    %d of %d rounds woken while the stream was busy\n",
            proved, rounds);
    ch_finalize();
}

static void t_timeout_busy_stream(void) { busy_stream_timer(0); }
static void t_sleep_busy_stream(void) { busy_stream_timer(1); }


/*
 * Short timeouts (0-175 us) under contention, so that timeouts race with
 * unlocks that hand the lock over and with signals. Every result must be
 * consistent: a lock that returned OK is owned, one that timed out is not;
 * a cond wait returns with the mutex held; no token is consumed twice or
 * lost; and at the end every object is free (nobody was left owning it or
 * queued on it).
 */
static void t_timeout_races(void)
{
    ch_init(NSTREAMS);
    race_t R;
    memset(&R, 0, sizeof R);
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&R.m, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK_FATAL(coexec_rwlock_init(&R.l));
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&R.cm, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK_FATAL(coexec_cond_init(&R.c));
    R.iters = ch_iters(3000, 100);

    race_run(&R, race_mutex, 12, 2);
    CH_ASSERT_EQ(atomic_load(&R.bad), 0);
    CH_ASSERT_EQ(R.counter, atomic_load(&R.got));
    CH_ASSERT_EQ(atomic_load(&R.got) + atomic_load(&R.timeouts),
                 14 * R.iters);
    fprintf(stderr, "    mutex: %ld locked, %ld timed out\n",
            atomic_load(&R.got), atomic_load(&R.timeouts));
    CH_ASSERT_OK(coexec_mutex_trylock(&R.m));
    CH_ASSERT_OK(coexec_mutex_unlock(&R.m));
    CH_ASSERT_OK(coexec_mutex_destroy(&R.m));

    atomic_store(&R.got, 0);
    atomic_store(&R.timeouts, 0);
    race_run(&R, race_rwlock, 12, 2);
    CH_ASSERT_EQ(atomic_load(&R.bad), 0);
    CH_ASSERT_EQ(R.rwvalue, atomic_load(&R.got));
    fprintf(stderr, "    rwlock: %ld writes, %ld timed out\n",
            atomic_load(&R.got), atomic_load(&R.timeouts));
    CH_ASSERT_OK(coexec_rwlock_trywrlock(&R.l));
    CH_ASSERT_OK(coexec_rwlock_unlock(&R.l));
    CH_ASSERT_OK(coexec_rwlock_destroy(&R.l));

    /* 3 producers (one external), 7 consumers (one external) */
    atomic_store(&R.got, 0);
    atomic_store(&R.timeouts, 0);
    R.total = 3 * R.iters;
    race_arg_t pa[3];
    coexec_thread_t pt[2];
    ext_t pe;
    for (int i = 0; i < 3; i++)
        pa[i] = (race_arg_t){&R, 100 + i};
    for (int i = 0; i < 2; i++)
        spawn_on(1 + i, race_producer, &pa[i], &pt[i]);
    ext_start(&pe, race_producer, &pa[2]);
    race_run(&R, race_consumer, 6, 1);
    free_threads(pt, 2);
    ext_join(&pe);
    CH_ASSERT_EQ(atomic_load(&R.bad), 0);
    CH_ASSERT_EQ(R.consumed, R.total);
    CH_ASSERT_EQ(atomic_load(&R.got), R.total);
    CH_ASSERT_EQ(R.tokens, 0);
    CH_ASSERT_OK(coexec_cond_destroy(&R.c));
    CH_ASSERT_OK(coexec_mutex_destroy(&R.cm));
    ch_finalize();
}

/* ======================================================================= */
/* context                                                                  */
/* ======================================================================= */

typedef struct {
    coexec_mutex_t m;
    coexec_mutex_t held; /* locked by the main ULT */
    coexec_cond_t c;
    coexec_rwlock_t l;
    coexec_barrier_t b;
    coexec_key_t k;
} ctx_t;

static void tasklet_calls(void *arg)
{
    ctx_t *x = arg;
    CH_CHECK(coexec_self_caller() == COEXEC_CALLER_TASKLET);
    /* mutex: waiting calls refused; trylock makes the tasklet the owner */
    CH_CHECK_RC(coexec_mutex_lock(&x->m), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_mutex_lock_timed(&x->m, 1 * MS), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_mutex_trylock(&x->held), COEXEC_EBUSY);
    CH_CHECK_RC(coexec_mutex_unlock(&x->held), COEXEC_EPERM);
    CH_CHECK_RC(coexec_mutex_trylock(&x->m), COEXEC_OK);
    CH_CHECK_RC(coexec_mutex_trylock(&x->m), COEXEC_EBUSY);
    /* cond: no waits; signal and broadcast are fine */
    CH_CHECK_RC(coexec_cond_wait(&x->c, &x->m), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_cond_wait_timed(&x->c, &x->m, 1 * MS),
                COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_cond_signal(&x->c), COEXEC_OK);
    CH_CHECK_RC(coexec_cond_broadcast(&x->c), COEXEC_OK);
    CH_CHECK_RC(coexec_mutex_unlock(&x->m), COEXEC_OK); /* still its owner */
    /* rwlock: no waits; the try variants work */
    CH_CHECK_RC(coexec_rwlock_rdlock(&x->l), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_rwlock_wrlock(&x->l), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_rwlock_rdlock_timed(&x->l, 1 * MS), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_rwlock_wrlock_timed(&x->l, 1 * MS), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_rwlock_tryrdlock(&x->l), COEXEC_OK);
    CH_CHECK_RC(coexec_rwlock_unlock(&x->l), COEXEC_OK);
    CH_CHECK_RC(coexec_rwlock_trywrlock(&x->l), COEXEC_OK);
    CH_CHECK_RC(coexec_rwlock_unlock(&x->l), COEXEC_OK);
    /* barrier, sleep, keys */
    int serial = -1;
    CH_CHECK_RC(coexec_barrier_wait(&x->b, &serial), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_sleep_ns(1 * MS), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_sleep_until(coexec_now_ns() + 1 * MS),
                COEXEC_ECONTEXT);
    void *v = NULL;
    CH_CHECK_RC(coexec_key_set(x->k, (void *)1), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_key_get(x->k, &v), COEXEC_ECONTEXT);
    coexec_key_t k2;
    CH_CHECK_RC(coexec_key_create(NULL, &k2), COEXEC_OK);
    CH_CHECK_RC(coexec_key_delete(k2), COEXEC_OK);
}

static void t_context_tasklet(void)
{
    ch_init(NSTREAMS);
    ctx_t x;
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&x.m, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&x.held, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK_FATAL(coexec_cond_init(&x.c));
    CH_ASSERT_OK_FATAL(coexec_rwlock_init(&x.l));
    CH_ASSERT_OK_FATAL(coexec_barrier_init(&x.b, 2));
    CH_ASSERT_OK_FATAL(coexec_key_create(NULL, &x.k));
    CH_ASSERT_OK(coexec_mutex_lock(&x.held));
    for (int r = 1; r < NSTREAMS; r++)
        CH_ASSERT_OK(ch_run_tasklet_in(pool_of_rank(r), tasklet_calls, &x));
    CH_ASSERT_OK(coexec_mutex_unlock(&x.held));
    /* the refused calls left nothing behind: every object is free */
    CH_ASSERT_OK(coexec_mutex_destroy(&x.m));
    CH_ASSERT_OK(coexec_mutex_destroy(&x.held));
    CH_ASSERT_OK(coexec_cond_destroy(&x.c));
    CH_ASSERT_OK(coexec_rwlock_destroy(&x.l));
    CH_ASSERT_OK(coexec_barrier_destroy(&x.b));
    CH_ASSERT_OK(coexec_key_delete(x.k));
    ch_finalize();
}

/* a tasklet may hold a mutex: a ULT waiting for it gets it on unlock */
typedef struct {
    coexec_mutex_t m;
    atomic_int step;
} tkhold_t;

static coexec_poll_status_t tasklet_holder(coexec_poll_t *cx, void *arg)
{
    tkhold_t *h = arg;
    (void)cx;
    CH_CHECK_RC(coexec_mutex_trylock(&h->m), COEXEC_OK);
    atomic_store(&h->step, 1);
    /* spin (no wait is possible) until the main ULT has tried */
    while (atomic_load(&h->step) != 2)
        sched_yield();
    CH_CHECK_RC(coexec_mutex_unlock(&h->m), COEXEC_OK);
    return COEXEC_READY;
}

static void t_context_tasklet_owner(void)
{
    ch_init(NSTREAMS);
    tkhold_t h;
    atomic_init(&h.step, 0);
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&h.m, COEXEC_MUTEX_PLAIN));
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create_on(xs_rank(1), tasklet_holder, &h, &k));
    CH_WAIT(atomic_load(&h.step) == 1);
    CH_ASSERT_RC(coexec_mutex_trylock(&h.m), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_mutex_unlock(&h.m), COEXEC_EPERM);
    atomic_store(&h.step, 2);
    CH_ASSERT_OK(coexec_mutex_lock(&h.m));
    CH_ASSERT_OK(coexec_mutex_unlock(&h.m));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_OK(coexec_mutex_destroy(&h.m));
    ch_finalize();
}

/* ======================================================================= */
/* args                                                                     */
/* ======================================================================= */

static void t_args_null(void)
{
    ch_init(1);
    coexec_mutex_t m;
    coexec_cond_t c;
    CH_ASSERT_OK(coexec_mutex_init(&m, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK(coexec_cond_init(&c));
    CH_ASSERT_RC(coexec_mutex_init(NULL, COEXEC_MUTEX_PLAIN), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_mutex_destroy(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_mutex_lock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_mutex_lock_timed(NULL, MS), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_mutex_trylock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_mutex_unlock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_cond_init(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_cond_destroy(NULL), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_mutex_lock(&m));
    CH_ASSERT_RC(coexec_cond_wait(NULL, &m), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_cond_wait(&c, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_cond_wait_timed(NULL, &m, MS), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_cond_wait_timed(&c, NULL, MS), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_mutex_unlock(&m)); /* still held after the refusals */
    CH_ASSERT_RC(coexec_cond_signal(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_cond_broadcast(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_init(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_destroy(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_rdlock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_wrlock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_rdlock_timed(NULL, MS), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_wrlock_timed(NULL, MS), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_tryrdlock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_trywrlock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_unlock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_barrier_init(NULL, 2), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_barrier_destroy(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_barrier_wait(NULL, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_barrier_init(NULL, 2), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_barrier_destroy(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_barrier_wait(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_key_create(NULL, NULL), COEXEC_EINVAL);
    coexec_key_t k;
    CH_ASSERT_OK(coexec_key_create(NULL, &k));
    CH_ASSERT_RC(coexec_key_get(k, NULL), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_key_delete(k));
    CH_ASSERT_OK(coexec_cond_destroy(&c));
    CH_ASSERT_OK(coexec_mutex_destroy(&m));
    ch_finalize();
}

/* objects never initialised (zeroed, or garbage) are not taken for real */
static void t_args_uninitialised(void)
{
    ch_init(1);
    for (int fill = 0; fill < 2; fill++) {
        int byte = fill ? 0xa5 : 0;
        coexec_mutex_t m;
        coexec_cond_t c;
        coexec_rwlock_t l;
        coexec_barrier_t b;
        coexec_xstream_barrier_t xb;
        memset(&m, byte, sizeof m);
        memset(&c, byte, sizeof c);
        memset(&l, byte, sizeof l);
        memset(&b, byte, sizeof b);
        memset(&xb, byte, sizeof xb);
        CH_ASSERT_RC(coexec_mutex_lock(&m), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_mutex_lock_timed(&m, MS), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_mutex_trylock(&m), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_mutex_unlock(&m), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_mutex_destroy(&m), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_cond_signal(&c), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_cond_broadcast(&c), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_cond_destroy(&c), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_rwlock_rdlock(&l), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_rwlock_wrlock(&l), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_rwlock_tryrdlock(&l), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_rwlock_unlock(&l), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_rwlock_destroy(&l), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_barrier_wait(&b, NULL), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_barrier_destroy(&b), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_xstream_barrier_wait(&xb), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_xstream_barrier_destroy(&xb), COEXEC_EHANDLE);
        /* a cond wait with a valid mutex and a bad cond, and vice versa */
        coexec_mutex_t good;
        coexec_cond_t goodc;
        CH_ASSERT_OK(coexec_mutex_init(&good, COEXEC_MUTEX_PLAIN));
        CH_ASSERT_OK(coexec_cond_init(&goodc));
        CH_ASSERT_OK(coexec_mutex_lock(&good));
        CH_ASSERT_RC(coexec_cond_wait(&c, &good), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_cond_wait_timed(&goodc, &m, MS), COEXEC_EHANDLE);
        CH_ASSERT_OK(coexec_mutex_unlock(&good));
        CH_ASSERT_OK(coexec_cond_destroy(&goodc));
        CH_ASSERT_OK(coexec_mutex_destroy(&good));
    }
    ch_finalize();
}

/*
 * init over a live object: refused (COEXEC_EBUSY) while it is held or
 * waited on, the object, its holder and its waiters left as they were;
 * otherwise it starts afresh (a mutex may change its kind).
 */
typedef struct {
    coexec_mutex_t *m;
    coexec_cond_t *c;
    coexec_rwlock_t *l;
    coexec_barrier_t *b;
    atomic_int arriving, done;
    int rc;
} live_t;

static void live_lock(void *arg)
{
    live_t *w = arg;
    atomic_store(&w->arriving, 1);
    w->rc = coexec_mutex_lock(w->m);
    if (w->rc == COEXEC_OK)
        CH_CHECK_RC(coexec_mutex_unlock(w->m), COEXEC_OK);
    atomic_store(&w->done, 1);
}

static void live_cond(void *arg)
{
    live_t *w = arg;
    CH_CHECK_RC(coexec_mutex_lock(w->m), COEXEC_OK);
    atomic_store(&w->arriving, 1);
    w->rc = coexec_cond_wait(w->c, w->m);
    CH_CHECK_RC(coexec_mutex_unlock(w->m), COEXEC_OK);
    atomic_store(&w->done, 1);
}

static void live_rdlock(void *arg)
{
    live_t *w = arg;
    w->rc = coexec_rwlock_rdlock(w->l);
    if (w->rc == COEXEC_OK)
        CH_CHECK_RC(coexec_rwlock_unlock(w->l), COEXEC_OK);
    atomic_store(&w->done, 1);
}

/* (shared by several waiters: counts them) */
static void live_barrier(void *arg)
{
    live_t *w = arg;
    CH_CHECK_RC(coexec_barrier_wait(w->b, NULL), COEXEC_OK);
    atomic_fetch_add(&w->done, 1);
}

static void t_args_init_live(void)
{
    ch_init(NSTREAMS);
    /* mutex: held by us, then waited for by a ULT and a thread */
    coexec_mutex_t m;
    memset(&m, 0, sizeof m);
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&m, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK(coexec_mutex_lock(&m));
    CH_CHECK_RC(coexec_mutex_init(&m, COEXEC_MUTEX_PLAIN), COEXEC_EBUSY);
    live_t wu = {.m = &m, .rc = 1}, we = {.m = &m, .rc = 1};
    coexec_thread_t t;
    spawn_on(1, live_lock, &wu, &t);
    wait_blocked(t);
    CH_CHECK_RC(coexec_mutex_init(&m, COEXEC_MUTEX_RECURSIVE), COEXEC_EBUSY);
    ext_t e;
    ext_start(&e, live_lock, &we);
    CH_WAIT(atomic_load(&we.arriving) && atomic_load(&e.tid) != 0 &&
            ch_task_state((pid_t)atomic_load(&e.tid)) == 'S');
    CH_CHECK_RC(coexec_mutex_init(&m, COEXEC_MUTEX_PLAIN), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_mutex_unlock(&m)); /* still ours */
    CH_ASSERT_OK(coexec_thread_free(&t));
    ext_join(&e);
    CH_ASSERT_RC(wu.rc, COEXEC_OK);
    CH_ASSERT_RC(we.rc, COEXEC_OK);
    /* free: starts afresh, here as a recursive one */
    CH_ASSERT_OK(coexec_mutex_init(&m, COEXEC_MUTEX_RECURSIVE));
    CH_ASSERT_OK(coexec_mutex_lock(&m));
    CH_ASSERT_OK(coexec_mutex_lock(&m));
    CH_CHECK_RC(coexec_mutex_init(&m, COEXEC_MUTEX_PLAIN), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_mutex_unlock(&m));
    CH_ASSERT_OK(coexec_mutex_unlock(&m));
    CH_ASSERT_RC(coexec_mutex_unlock(&m), COEXEC_EPERM);
    CH_ASSERT_OK(coexec_mutex_init(&m, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK(coexec_mutex_lock(&m));
    CH_ASSERT_RC(coexec_mutex_lock(&m), COEXEC_EDEADLK);
    CH_ASSERT_OK(coexec_mutex_unlock(&m));
    coexec_mutex_t sm = COEXEC_MUTEX_INITIALIZER; /* statically live */
    CH_ASSERT_OK(coexec_mutex_init(&sm, COEXEC_MUTEX_RECURSIVE));
    CH_ASSERT_OK(coexec_mutex_lock(&sm));
    CH_ASSERT_OK(coexec_mutex_lock(&sm));
    CH_ASSERT_OK(coexec_mutex_unlock(&sm));
    CH_ASSERT_OK(coexec_mutex_unlock(&sm));
    CH_ASSERT_OK(coexec_mutex_destroy(&sm));

    /* cond: a waiter */
    coexec_cond_t c;
    memset(&c, 0, sizeof c);
    CH_ASSERT_OK_FATAL(coexec_cond_init(&c));
    live_t wc = {.m = &m, .c = &c, .rc = 1};
    spawn_on(2, live_cond, &wc, &t);
    CH_WAIT(atomic_load(&wc.arriving));
    wait_blocked(t);
    CH_ASSERT_OK(coexec_mutex_lock(&m)); /* its wait let go of m */
    CH_CHECK_RC(coexec_cond_init(&c), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_cond_signal(&c));
    CH_ASSERT_OK(coexec_mutex_unlock(&m));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_RC(wc.rc, COEXEC_OK);
    CH_ASSERT_OK(coexec_cond_init(&c));
    CH_ASSERT_OK(coexec_cond_broadcast(&c));
    CH_ASSERT_OK(coexec_cond_destroy(&c));

    /* rwlock: read-held, write-held, waited on */
    coexec_rwlock_t l;
    memset(&l, 0, sizeof l);
    CH_ASSERT_OK_FATAL(coexec_rwlock_init(&l));
    CH_ASSERT_OK(coexec_rwlock_rdlock(&l));
    CH_CHECK_RC(coexec_rwlock_init(&l), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_rwlock_unlock(&l));
    CH_ASSERT_OK(coexec_rwlock_wrlock(&l));
    CH_CHECK_RC(coexec_rwlock_init(&l), COEXEC_EBUSY);
    live_t wr = {.l = &l, .rc = 1};
    spawn_on(3, live_rdlock, &wr, &t);
    wait_blocked(t);
    CH_CHECK_RC(coexec_rwlock_init(&l), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_rwlock_unlock(&l)); /* still ours */
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_RC(wr.rc, COEXEC_OK);
    CH_ASSERT_OK(coexec_rwlock_init(&l));
    CH_ASSERT_OK(coexec_rwlock_trywrlock(&l));
    CH_ASSERT_OK(coexec_rwlock_unlock(&l));
    CH_ASSERT_OK(coexec_rwlock_destroy(&l));

    /* barrier: one of two arrived */
    coexec_barrier_t b;
    memset(&b, 0, sizeof b);
    CH_ASSERT_OK_FATAL(coexec_barrier_init(&b, 2));
    live_t wb = {.b = &b, .rc = 1};
    spawn_on(1, live_barrier, &wb, &t);
    wait_blocked(t);
    CH_CHECK_RC(coexec_barrier_init(&b, 3), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_barrier_wait(&b, NULL)); /* still for two */
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(atomic_load(&wb.done), 1);
    /* nobody inside: now for three */
    CH_ASSERT_OK(coexec_barrier_init(&b, 3));
    coexec_thread_t t2[2];
    atomic_store(&wb.done, 0);
    spawn_on(1, live_barrier, &wb, &t2[0]);
    spawn_on(2, live_barrier, &wb, &t2[1]);
    wait_blocked(t2[0]);
    wait_blocked(t2[1]);
    CH_ASSERT_EQ(atomic_load(&wb.done), 0);
    CH_ASSERT_OK(coexec_barrier_wait(&b, NULL));
    free_threads(t2, 2);
    CH_ASSERT_EQ(atomic_load(&wb.done), 2);
    CH_ASSERT_OK(coexec_barrier_destroy(&b));

    /* xstream barrier: a thread inside */
    coexec_xstream_barrier_t xb;
    memset(&xb, 0, sizeof xb);
    CH_ASSERT_OK_FATAL(coexec_xstream_barrier_init(&xb, 2));
    xwait_t xw = {.b = &xb, .rc = -1};
    ext_start(&e, xwait_body, &xw);
    CH_WAIT(atomic_load(&xw.arriving) && atomic_load(&e.tid) != 0 &&
            ch_task_state((pid_t)atomic_load(&e.tid)) == 'S');
    CH_CHECK_RC(coexec_xstream_barrier_init(&xb, 3), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_xstream_barrier_wait(&xb)); /* still for two */
    ext_join(&e);
    CH_ASSERT_OK(xw.rc);
    CH_ASSERT_OK(coexec_xstream_barrier_init(&xb, 1));
    CH_ASSERT_OK(coexec_xstream_barrier_wait(&xb));
    CH_ASSERT_OK(coexec_xstream_barrier_destroy(&xb));
    CH_ASSERT_OK(coexec_mutex_destroy(&m));
    ch_finalize();
}

/* ======================================================================= */

static const ch_test_t mutex_tests[] = {
    {"exclusion_ults_and_externals", t_mutex_exclusion},
    {"static_initializers", t_mutex_static},
    {"recursive", t_mutex_recursive},
    {"errors", t_mutex_errors},
    {"timed", t_mutex_timed},
    {"fifo_handoff", t_mutex_fifo},
    {"no_starvation", t_mutex_no_starvation},
    {NULL, NULL}};
static const ch_test_t cond_tests[] = {
    {"signal_wakes_oldest", t_cond_signal},
    {"broadcast_wakes_all", t_cond_broadcast},
    {"requires_mutex", t_cond_requires_mutex},
    {"timed", t_cond_timed},
    {"producer_consumer", t_cond_producer_consumer},
    {"destroy_and_static", t_cond_destroy},
    {NULL, NULL}};
static const ch_test_t rwlock_tests[] = {
    {"readers_share", t_rwlock_readers_share},
    {"writer_excludes", t_rwlock_writer_excludes},
    {"writer_not_starved", t_rwlock_writer_not_starved},
    {"arrival_order", t_rwlock_arrival_order},
    {"errors", t_rwlock_errors},
    {NULL, NULL}};
static const ch_test_t barrier_tests[] = {
    {"generations", t_barrier_generations},
    {"externals", t_barrier_externals},
    {"errors", t_barrier_errors},
    {NULL, NULL}};
static const ch_test_t xbarrier_tests[] = {
    {"one_ult_per_stream", t_xbarrier_streams},
    {"externals_and_tasklet", t_xbarrier_externals_tasklet},
    {"errors", t_xbarrier_errors},
    {NULL, NULL}};
static const ch_test_t key_tests[] = {
    {"values_per_ult", t_key_values},
    {"destructors", t_key_destructors},
    {"main_ult_at_finalize", t_key_main_ult},
    {"delete", t_key_delete},
    {"stale_after_reinit", t_key_reinit},
    {"limit", t_key_limit},
    {"external_threads", t_key_external},
    {NULL, NULL}};
static const ch_test_t sleep_tests[] = {
    {"never_early", t_sleep_never_early},
    {"stream_not_blocked", t_sleep_stream_not_blocked},
    {"idle_stream_parks", t_sleep_idle_stream_parks},
    {"deadline_order", t_sleep_deadline_order},
    {"waker_does_not_cut_short", t_sleep_waker_no_cut},
    {"busy_stream_fired_by_idle", t_sleep_busy_stream},
    {NULL, NULL}};
static const ch_test_t timeout_tests[] = {
    {"many_kinds_never_early", t_timeout_many},
    {"races_with_handoff", t_timeout_races},
    {"busy_stream_fired_by_idle", t_timeout_busy_stream},
    {NULL, NULL}};
static const ch_test_t context_tests[] = {
    {"tasklet_calls", t_context_tasklet},
    {"tasklet_owns_mutex", t_context_tasklet_owner},
    {NULL, NULL}};
static const ch_test_t args_tests[] = {
    {"null_pointers", t_args_null},
    {"uninitialised_objects", t_args_uninitialised},
    {"init_over_live", t_args_init_live},
    {NULL, NULL}};

static const ch_suite_t suites[] = {
    {"mutex", mutex_tests},     {"cond", cond_tests},
    {"rwlock", rwlock_tests},   {"barrier", barrier_tests},
    {"xbarrier", xbarrier_tests}, {"key", key_tests},
    {"sleep", sleep_tests},     {"timeout", timeout_tests},
    {"context", context_tests}, {"args", args_tests},
    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
