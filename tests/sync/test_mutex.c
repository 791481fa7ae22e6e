/*
 * tests/sync/test_mutex.c: the mutex suite: exclusion between ULTs on 4
 * streams and external threads, static initialisers, recursion, FIFO
 * hand-off, no starvation, timed locks, every error code
 */
#include "sync_test.h"

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
    ch_ext_t e[4];
    for (int i = 0; i < nult; i++)
        ch_spawn_on(i % NSTREAMS, excl_body, &x, &t[i]);
    for (int i = 0; i < next; i++)
        ch_ext_start(&e[i], excl_body, &x);
    ch_free_threads(t, nult);
    for (int i = 0; i < next; i++)
        ch_ext_join(&e[i]);
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

/* unlock of a mutex the caller does not hold */
static void unlock_eperm_body(void *arg)
{
    CH_CHECK_RC(coexec_mutex_unlock((coexec_mutex_t *)arg), COEXEC_EPERM);
}

static void t_mutex_static(void)
{
    ch_init(NSTREAMS);
    coexec_pool_t p1 = ch_main_pool(1);
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
    coexec_pool_t p2 = ch_main_pool(2);
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
    ch_spawn_on(1, contend_body, &c, &t);
    CU_ASSERT(wait_blocked(t));
    try_t busy = {&m, COEXEC_EBUSY};
    for (int held = 3; held > 1; held--) {
        CH_ASSERT_OK(coexec_mutex_unlock(&m));
        ch_linger(2);
        CH_ASSERT_EQ(atomic_load(&c.got), 0);
        CH_ASSERT_EQ(ch_thread_state(t), COEXEC_UNIT_BLOCKED);
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
    coexec_pool_t p1 = ch_main_pool(1);
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
    coexec_pool_t p1 = ch_main_pool(1);
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
        ch_ext_t e;
        ch_ext_start(&e, tlock_body, &b);
        ch_ext_join(&e);
        CH_ASSERT_RC(b.rc, COEXEC_ETIMEDOUT);
        CU_ASSERT(b.elapsed >= tmo[i]);
    }
    /* released in time: a ULT and an external thread get it */
    tlock_t a = {.m = &m, .timeout = LONG_TIMEOUT_NS};
    tlock_t b = {.m = &m, .timeout = LONG_TIMEOUT_NS};
    coexec_thread_t t;
    ch_spawn_on(2, tlock_body, &a, &t);
    ch_ext_t e;
    ch_ext_start(&e, tlock_body, &b);
    CU_ASSERT(wait_blocked(t));
    CH_WAIT(atomic_load(&b.started));
    ch_linger(5);
    CH_ASSERT_OK(coexec_mutex_unlock(&m));
    CH_ASSERT_OK(coexec_thread_free(&t));
    ch_ext_join(&e);
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
        ch_spawn_on(1 + i, tlock_body, &w[i], &wt[i]);
        /* C may time out before this thread gets to see it blocked (a
         * busy machine can hold it off for longer than 10 ms): then it is
         * done, and D simply queues behind B alone. */
        CU_ASSERT(CH_WAIT(ch_thread_state(wt[i]) == COEXEC_UNIT_BLOCKED ||
                          atomic_load(&w[i].done)));
    }
    CH_WAIT(atomic_load(&w[1].done));
    CH_ASSERT_RC(w[1].rc, COEXEC_ETIMEDOUT);
    CU_ASSERT(w[1].elapsed >= 10 * MS);
    CH_ASSERT_EQ(atomic_load(&pos), 0);
    CH_ASSERT_OK(coexec_mutex_unlock(&m));
    ch_free_threads(wt, 3);
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
        ch_spawn_on(1 + i % 3, fifo_waiter, &a[i], &t[i]);
        CU_ASSERT(wait_blocked(t[i]));
    }
    CH_ASSERT_OK(coexec_mutex_unlock(&f.m));
    CH_WAIT(atomic_load(&f.first_holds));
    int rc = coexec_mutex_trylock(&f.m);
    CH_ASSERT_RC(rc, COEXEC_EBUSY);
    if (rc == COEXEC_OK)
        CH_ASSERT_OK(coexec_mutex_unlock(&f.m));
    atomic_store(&f.release_first, 1);
    ch_free_threads(t, K);
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
    ch_free_threads(t, 4);
    for (int i = 0; i < 4; i++)
        CU_ASSERT(f.count[i] >= f.quota);
    CH_ASSERT_OK(coexec_mutex_destroy(&f.m));
    streams_free(s, 2);
    ch_finalize();
}

/* ======================================================================= */

const ch_test_t sync_mutex_tests[] = {
    {"exclusion_ults_and_externals", t_mutex_exclusion},
    {"static_initializers", t_mutex_static},
    {"recursive", t_mutex_recursive},
    {"errors", t_mutex_errors},
    {"timed", t_mutex_timed},
    {"fifo_handoff", t_mutex_fifo},
    {"no_starvation", t_mutex_no_starvation},
    {NULL, NULL}};
