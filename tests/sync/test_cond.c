/*
 * tests/sync/test_cond.c: the cond suite: signal wakes one (the oldest),
 * broadcast wakes all, the mutex is held on return, timed waits,
 * producer/consumer, errors
 */
#include "sync_test.h"

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
    ch_ext_t e[NE];
    for (int i = 0; i < N; i++)
        a[i] = (cv_arg_t){&cv, i};
    for (int i = 0; i < NU; i++)
        ch_spawn_on(i % NSTREAMS, token_waiter, &a[i], &t[i]);
    for (int i = 0; i < NE; i++)
        ch_ext_start(&e[i], token_waiter, &a[NU + i]);
    CH_WAIT(cv_read(&cv, &cv.waiting) == N);
    for (int k = 0; k < N; k++) {
        if (k == N - 1) {
            CH_ASSERT_OK(ch_run_tasklet_in(ch_main_pool(1),
                                           tasklet_give_token, &cv));
        } else {
            CH_ASSERT_OK(coexec_mutex_lock(&cv.m));
            cv.tokens++;
            CH_ASSERT_OK(coexec_cond_signal(&cv.c));
            CH_ASSERT_OK(coexec_mutex_unlock(&cv.m));
        }
        CH_WAIT(cv_read(&cv, &cv.woken) == k + 1);
        ch_linger(1);
        CH_ASSERT_EQ(cv_read(&cv, &cv.woken), k + 1); /* one, not more */
    }
    ch_free_threads(t, NU);
    for (int i = 0; i < NE; i++)
        ch_ext_join(&e[i]);
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
        ch_ext_t e[NE];
        for (int i = 0; i < N; i++)
            a[i] = (cv_arg_t){&cv, i};
        for (int i = 0; i < NU; i++)
            ch_spawn_on(i % NSTREAMS, go_waiter, &a[i], &t[i]);
        for (int i = 0; i < NE; i++)
            ch_ext_start(&e[i], go_waiter, &a[NU + i]);
        CH_WAIT(cv_read(&cv, &cv.waiting) == N);
        CH_ASSERT_OK(coexec_mutex_lock(&cv.m));
        cv.go = 1;
        CH_ASSERT_OK(coexec_cond_broadcast(&cv.c));
        CH_ASSERT_OK(coexec_mutex_unlock(&cv.m));
        ch_free_threads(t, NU);
        for (int i = 0; i < NE; i++)
            ch_ext_join(&e[i]);
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

static void t_cond_requires_mutex(void)
{
    ch_init(NSTREAMS);
    coexec_pool_t p1 = ch_main_pool(1);
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
    ch_pthread_run(&th, cond_wait_expect, &w);
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
    ch_spawn_on(2, go_waiter, &a, &t);
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
    coexec_pool_t p1 = ch_main_pool(1);
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
        ch_ext_t e;
        ch_ext_start(&e, cond_timed_body, &b);
        ch_ext_join(&e);
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
    ch_spawn_on(1, go_waiter_timed, &ga[0], &t[0]);
    ch_spawn_on(2, go_waiter_timed, &ga[1], &t[1]);
    ch_ext_t e;
    ch_ext_start(&e, go_waiter_timed, &ga[2]);
    CH_WAIT(cv_read(&cv, &cv.waiting) == 3);
    CH_ASSERT_OK(coexec_mutex_lock(&cv.m));
    cv.go = 1;
    CH_ASSERT_OK(coexec_cond_broadcast(&cv.c));
    CH_ASSERT_OK(coexec_mutex_unlock(&cv.m));
    ch_free_threads(t, 2);
    ch_ext_join(&e);
    CH_ASSERT_EQ(cv.woken, 3);

    /* a signal after a waiter timed out goes to the waiter still there */
    cv.go = 0;
    cv.waiting = 0;
    cv.woken = 0;
    ctimed_t gone = {.cv = &cv, .timeout = 5 * MS};
    coexec_thread_t tg;
    ch_spawn_on(3, cond_timed_body, &gone, &tg);
    CH_ASSERT_OK(coexec_thread_free(&tg));
    CH_ASSERT_RC(gone.rc, COEXEC_ETIMEDOUT);
    cv_arg_t ta = {&cv, 0};
    coexec_thread_t tt;
    ch_spawn_on(1, token_waiter, &ta, &tt);
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
    ch_ext_t pe, ce;
    for (int i = 0; i <= NP; i++)
        pa[i] = (pc_arg_t){&pc, i};
    for (int i = 0; i <= NC; i++)
        ca[i] = (pc_arg_t){&pc, i};
    for (int i = 0; i < NC; i++)
        ch_spawn_on(i % NSTREAMS, consumer, &ca[i], &ct[i]);
    ch_ext_start(&ce, consumer, &ca[NC]);
    for (int i = 0; i < NP; i++)
        ch_spawn_on((i + 1) % NSTREAMS, producer, &pa[i], &pt[i]);
    ch_ext_start(&pe, producer, &pa[NP]);
    ch_free_threads(pt, NP);
    ch_ext_join(&pe);
    ch_free_threads(ct, NC);
    ch_ext_join(&ce);
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
    ch_ext_t e;
    ch_spawn_on(1, go_waiter, &a[0], &t);
    ch_ext_start(&e, go_waiter, &a[1]);
    CH_WAIT(cv_read(&cv, &cv.waiting) == 2);
    CH_ASSERT_RC(coexec_cond_destroy(&cv.c), COEXEC_EBUSY);
    /* still a working cond: the waiters are released by a broadcast */
    CH_ASSERT_OK(coexec_mutex_lock(&cv.m));
    cv.go = 1;
    CH_ASSERT_OK(coexec_cond_broadcast(&cv.c));
    CH_ASSERT_OK(coexec_mutex_unlock(&cv.m));
    CH_ASSERT_OK(coexec_thread_free(&t));
    ch_ext_join(&e);
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

const ch_test_t sync_cond_tests[] = {
    {"signal_wakes_oldest", t_cond_signal},
    {"broadcast_wakes_all", t_cond_broadcast},
    {"requires_mutex", t_cond_requires_mutex},
    {"timed", t_cond_timed},
    {"producer_consumer", t_cond_producer_consumer},
    {"destroy_and_static", t_cond_destroy},
    {NULL, NULL}};
