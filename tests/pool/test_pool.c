/*
 * tests/pool/test_pool.c: pool order (FIFO/LIFO), size, EBUSY rules, access
 * modes under the concurrency each allows, access checks (COEXEC_CHECKS
 * builds), push of units in the wrong state, argument errors; the PRIO
 * kind (levels, FIFO within a level, yield, aging, join in place) and the
 * DEQUE kind (owner LIFO, thieves take the oldest, steal-half, yields, and
 * every unit running once under fork-join on work-stealing streams);
 * coexec_pool_remove (list and PRIO pools of every mode, errors, removes
 * racing a stream's pops, units that ran and yielded, in every kind);
 * coexec_pool_foreach (the pop order of every kind, errors, listings
 * while a stream runs the units); the lock's owner bias, revoked while its
 * owner works, and turned off.
 *
 * Most tests use pools no scheduler serves: units created into them stay
 * queued until popped. A unit popped out belongs to no pool; freeing it
 * runs it in place (join of a unit that has not started).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <stdlib.h>
#include <string.h>

static atomic_long g_ran;

static coexec_poll_status_t noop_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    (void)arg;
    atomic_fetch_add(&g_ran, 1);
    return COEXEC_READY;
}

static void noop_ult(void *arg)
{
    (void)arg;
    atomic_fetch_add(&g_ran, 1);
}

/*
 * Units popped out of a pool belong to no pool. To finish them, push them
 * into the primary's main pool (served by its scheduler) and free them:
 * these tests do not depend on how join treats a unit that is in no pool
 * (tests/thread covers that).
 */
static coexec_pool_t primary_pool(void)
{
    coexec_xstream_t x0;
    coexec_pool_t p = {0};
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(0, &x0));
    CH_ASSERT_OK_FATAL(coexec_xstream_get_main_pool(x0, &p));
    return p;
}

static void requeue(coexec_unit_t u)
{
    CH_ASSERT_OK(coexec_pool_push(primary_pool(), u));
}

/* ---- unit identification ---------------------------------------------- */

typedef struct {
    coexec_unit_t u;
    long idx;
} unit_key_t;

typedef struct {
    unit_key_t *keys; /* sorted by (p, gen) */
    coexec_tasklet_t *k;
    long n;
} unit_set_t;

static int key_cmp(const void *a, const void *b)
{
    const unit_key_t *x = a, *y = b;
    if (x->u.p != y->u.p)
        return (uintptr_t)x->u.p < (uintptr_t)y->u.p ? -1 : 1;
    if (x->u.gen != y->u.gen)
        return x->u.gen < y->u.gen ? -1 : 1;
    return 0;
}

/* Index of u in the set, or -1. */
static long unit_index(const unit_set_t *s, coexec_unit_t u)
{
    unit_key_t key = {u, 0};
    unit_key_t *f = bsearch(&key, s->keys, (size_t)s->n, sizeof key, key_cmp);
    return f ? f->idx : -1;
}

/*
 * Creates n tasklets into a private staging pool and pops them all out, so
 * they belong to no pool. Returns them in creation order (s->k).
 */
static void unit_set_make(unit_set_t *s, long n)
{
    s->n = n;
    s->k = calloc((size_t)n, sizeof *s->k);
    s->keys = calloc((size_t)n, sizeof *s->keys);
    CU_ASSERT_FATAL(s->k && s->keys);
    coexec_pool_t stage;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_PRIV, &stage));
    for (long i = 0; i < n; i++) {
        CH_ASSERT_OK_FATAL(coexec_tasklet_create(stage, noop_tasklet, NULL, &s->k[i]));
        coexec_unit_t u;
        CH_ASSERT_OK_FATAL(coexec_pool_pop(stage, &u));
        CU_ASSERT_FATAL(CH_SAME(u, coexec_tasklet_unit(s->k[i])));
        s->keys[i].u = u;
        s->keys[i].idx = i;
    }
    size_t sz = 1;
    CH_ASSERT_OK(coexec_pool_get_size(stage, &sz));
    CH_ASSERT_EQ(sz, 0);
    CH_ASSERT_OK(coexec_pool_free(&stage));
    qsort(s->keys, (size_t)n, sizeof *s->keys, key_cmp);
    for (long i = 1; i < n; i++)
        CU_ASSERT(key_cmp(&s->keys[i - 1], &s->keys[i]) != 0);
}

/* Frees every tasklet (all in no pool; each runs once). */
static void unit_set_free(unit_set_t *s)
{
    atomic_store(&g_ran, 0);
    for (long i = 0; i < s->n; i++)
        requeue(coexec_tasklet_unit(s->k[i]));
    for (long i = 0; i < s->n; i++)
        CH_ASSERT_OK(coexec_tasklet_free(&s->k[i]));
    CH_ASSERT_EQ(atomic_load(&g_ran), s->n);
    free(s->k);
    free(s->keys);
}

static coexec_unit_t unit_of(const unit_set_t *s, long i)
{
    return coexec_tasklet_unit(s->k[i]);
}

/* Creates n units into pool, ULTs (odd i) and tasklets (even i) mixed. */
static void make_mixed(coexec_pool_t pool, int n, coexec_unit_t *u,
                       coexec_thread_t *t, coexec_tasklet_t *k)
{
    for (int i = 0; i < n; i++) {
        if (i % 2) {
            CH_ASSERT_OK_FATAL(coexec_thread_create(pool, noop_ult, NULL, NULL, &t[i]));
            u[i] = coexec_thread_unit(t[i]);
        } else {
            CH_ASSERT_OK_FATAL(coexec_tasklet_create(pool, noop_tasklet, NULL, &k[i]));
            u[i] = coexec_tasklet_unit(k[i]);
        }
    }
}

/* Runs the n units of make_mixed, each in no pool now, and frees them:
 * each runs once. */
static void finish_mixed(int n, coexec_unit_t *u, coexec_thread_t *t,
                         coexec_tasklet_t *k)
{
    atomic_store(&g_ran, 0);
    for (int i = 0; i < n; i++)
        requeue(u[i]);
    for (int i = 0; i < n; i++) {
        if (i % 2)
            CH_ASSERT_OK(coexec_thread_free(&t[i]));
        else
            CH_ASSERT_OK(coexec_tasklet_free(&k[i]));
    }
    CH_ASSERT_EQ(atomic_load(&g_ran), n);
}

/* ======================================================================= */
/* order                                                                    */
/* ======================================================================= */

static void check_order(coexec_pool_kind_t kind, coexec_pool_access_t acc)
{
    enum { N = 16 };
    coexec_pool_t pool;
    CH_ASSERT_OK_FATAL(coexec_pool_create(kind, acc, &pool));
    /* Units created into the pool: ULTs and tasklets mixed. */
    coexec_unit_t u[N];
    coexec_thread_t t[N];
    coexec_tasklet_t k[N];
    make_mixed(pool, N, u, t, k);
    size_t sz = 0;
    CH_ASSERT_OK(coexec_pool_get_size(pool, &sz));
    CH_ASSERT_EQ(sz, N);
    int order[N];
    for (int i = 0; i < N; i++) {
        coexec_unit_t got;
        CH_ASSERT_OK(coexec_pool_pop(pool, &got));
        int want = kind == COEXEC_POOL_FIFO ? i : N - 1 - i;
        CU_ASSERT(CH_SAME(got, u[want]));
        order[i] = -1;
        for (int j = 0; j < N; j++)
            if (CH_SAME(got, u[j]))
                order[i] = j;
    }
    coexec_unit_t empty;
    memset(&empty, 0xff, sizeof empty);
    CH_ASSERT_OK(coexec_pool_pop(pool, &empty));
    CU_ASSERT(CH_IS_NULL(empty));
    (void)order;

    /* Push back in a scrambled order; pops follow the push order. */
    static const int scramble[N] = {5, 0, 11, 3, 14, 9, 1, 15,
                                    2, 8, 13, 4, 10, 7, 12, 6};
    for (int i = 0; i < N; i++)
        CH_ASSERT_OK(coexec_pool_push(pool, u[scramble[i]]));
    CH_ASSERT_OK(coexec_pool_get_size(pool, &sz));
    CH_ASSERT_EQ(sz, N);
    for (int i = 0; i < N; i++) {
        coexec_unit_t got;
        CH_ASSERT_OK(coexec_pool_pop(pool, &got));
        int want = scramble[kind == COEXEC_POOL_FIFO ? i : N - 1 - i];
        CU_ASSERT(CH_SAME(got, u[want]));
    }

    /* Interleaved pushes and pops against a model. */
    int model[N], head = 0, len = 0; /* deque of indices */
    unsigned seed = 12345;
    int next = 0, out_of_pool[N];
    for (int i = 0; i < N; i++)
        out_of_pool[i] = 1;
    for (int step = 0; step < 400; step++) {
        seed = seed * 1103515245u + 12345u;
        int do_push = len == 0 || (len < N && ((seed >> 16) & 1));
        if (do_push) {
            while (!out_of_pool[next])
                next = (next + 1) % N;
            CH_ASSERT_OK(coexec_pool_push(pool, u[next]));
            out_of_pool[next] = 0;
            model[(head + len) % N] = next;
            len++;
        } else {
            coexec_unit_t got;
            CH_ASSERT_OK(coexec_pool_pop(pool, &got));
            int want;
            if (kind == COEXEC_POOL_FIFO) {
                want = model[head];
                head = (head + 1) % N;
            } else {
                want = model[(head + len - 1) % N];
            }
            len--;
            if (!CH_SAME(got, u[want])) {
                CU_FAIL("interleaved push/pop order differs from the model");
                break;
            }
            out_of_pool[want] = 1;
        }
        size_t s2;
        CH_ASSERT_OK(coexec_pool_get_size(pool, &s2));
        CH_ASSERT_EQ(s2, len);
    }
    /* Drain and free everything (each unit runs once, in place). */
    for (;;) {
        coexec_unit_t got;
        CH_ASSERT_OK(coexec_pool_pop(pool, &got));
        if (CH_IS_NULL(got))
            break;
    }
    finish_mixed(N, u, t, k);
    CH_ASSERT_OK(coexec_pool_free(&pool));
    CU_ASSERT(CH_IS_NULL(pool));
}

static void t_fifo_order(void)
{
    ch_init(1);
    for (int acc = COEXEC_ACCESS_PRIV; acc <= COEXEC_ACCESS_MPMC; acc++)
        check_order(COEXEC_POOL_FIFO, (coexec_pool_access_t)acc);
    ch_finalize();
}

static void t_lifo_order(void)
{
    ch_init(1);
    for (int acc = COEXEC_ACCESS_PRIV; acc <= COEXEC_ACCESS_MPMC; acc++)
        check_order(COEXEC_POOL_LIFO, (coexec_pool_access_t)acc);
    ch_finalize();
}

/* The order a stream runs units in, for a pool served by a scheduler. */
static int g_run_log[64];
static atomic_int g_run_n;

static void log_ult(void *arg)
{
    int i = atomic_fetch_add(&g_run_n, 1);
    if (i < 64)
        g_run_log[i] = (int)(intptr_t)arg;
}

static void t_run_order(void)
{
    ch_init(1);
    for (int kind = COEXEC_POOL_FIFO; kind <= COEXEC_POOL_LIFO; kind++) {
        enum { N = 20 };
        coexec_pool_t pool;
        coexec_sched_t sched;
        coexec_sched_config_t sc;
        CH_ASSERT_OK_FATAL(coexec_pool_create((coexec_pool_kind_t)kind,
                                              COEXEC_ACCESS_MPSC, &pool));
        atomic_store(&g_run_n, 0);
        for (int i = 0; i < N; i++)
            CH_ASSERT_OK(coexec_thread_create(pool, log_ult, (void *)(intptr_t)i,
                                              NULL, NULL));
        CH_ASSERT_OK(coexec_sched_config_init(&sc));
        sc.steal = 0;
        CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &pool, 1,
                                               &sc, &sched));
        coexec_xstream_attr_t a;
        CH_ASSERT_OK(coexec_xstream_attr_init(&a));
        a.sched = sched;
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_create(&a, &xs));
        CH_ASSERT_OK(coexec_xstream_free(&xs));
        CH_ASSERT_EQ_FATAL(atomic_load(&g_run_n), N);
        for (int i = 0; i < N; i++)
            CH_ASSERT_EQ(g_run_log[i], kind == COEXEC_POOL_FIFO ? i : N - 1 - i);
        CH_ASSERT_OK(coexec_sched_free(&sched));
        CH_ASSERT_OK(coexec_pool_free(&pool));
    }
    ch_finalize();
}

/* ======================================================================= */
/* size / info                                                              */
/* ======================================================================= */

static void t_size_info(void)
{
    ch_init(1);
    for (int kind = 0; kind <= 1; kind++)
        for (int acc = 0; acc <= 4; acc++) {
            coexec_pool_t pool;
            CH_ASSERT_OK_FATAL(coexec_pool_create((coexec_pool_kind_t)kind,
                                                  (coexec_pool_access_t)acc, &pool));
            coexec_pool_kind_t k = 99;
            coexec_pool_access_t a = 99;
            CH_ASSERT_OK(coexec_pool_get_info(pool, &k, &a));
            CH_ASSERT_EQ(k, kind);
            CH_ASSERT_EQ(a, acc);
            k = 99;
            CH_ASSERT_OK(coexec_pool_get_info(pool, &k, NULL));
            CH_ASSERT_EQ(k, kind);
            a = 99;
            CH_ASSERT_OK(coexec_pool_get_info(pool, NULL, &a));
            CH_ASSERT_EQ(a, acc);
            CH_ASSERT_OK(coexec_pool_get_info(pool, NULL, NULL));
            size_t sz = 99;
            CH_ASSERT_OK(coexec_pool_get_size(pool, &sz));
            CH_ASSERT_EQ(sz, 0);
            CH_ASSERT_OK(coexec_pool_free(&pool));
        }

    coexec_pool_t pool;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pool));
    coexec_tasklet_t k[100];
    for (int i = 0; i < 100; i++) {
        CH_ASSERT_OK(coexec_tasklet_create(pool, noop_tasklet, NULL, &k[i]));
        size_t sz = 0;
        CH_ASSERT_OK(coexec_pool_get_size(pool, &sz));
        CH_ASSERT_EQ(sz, i + 1);
    }
    for (int i = 99; i >= 0; i--) {
        coexec_unit_t u;
        CH_ASSERT_OK(coexec_pool_pop(pool, &u));
        size_t sz = 1000;
        CH_ASSERT_OK(coexec_pool_get_size(pool, &sz));
        CH_ASSERT_EQ(sz, i);
        requeue(u);
    }
    for (int i = 0; i < 100; i++)
        CH_ASSERT_OK(coexec_tasklet_free(&k[i]));
    CH_ASSERT_OK(coexec_pool_free(&pool));
    ch_finalize();
}

/* ======================================================================= */
/* busy                                                                     */
/* ======================================================================= */

static void t_free_nonempty(void)
{
    ch_init(1);
    coexec_pool_t pool;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_LIFO, COEXEC_ACCESS_MPMC, &pool));
    coexec_thread_t t;
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_thread_create(pool, noop_ult, NULL, NULL, &t));
    CH_ASSERT_OK(coexec_tasklet_create(pool, noop_tasklet, NULL, &k));
    coexec_pool_t copy = pool;
    CH_ASSERT_RC(coexec_pool_free(&copy), COEXEC_EBUSY);
    CU_ASSERT(CH_SAME(copy, pool)); /* not cleared on failure */
    size_t sz = 0;
    CH_ASSERT_OK(coexec_pool_get_size(pool, &sz));
    CH_ASSERT_EQ(sz, 2);
    coexec_unit_t u;
    CH_ASSERT_OK(coexec_pool_pop(pool, &u));
    CH_ASSERT_RC(coexec_pool_free(&copy), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_pool_pop(pool, &u));
    CH_ASSERT_OK(coexec_pool_free(&copy));
    CU_ASSERT(CH_IS_NULL(copy));
    CH_ASSERT_RC(coexec_pool_get_size(pool, &sz), COEXEC_EHANDLE);
    atomic_store(&g_ran, 0);
    requeue(coexec_thread_unit(t));
    requeue(coexec_tasklet_unit(k));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_EQ(atomic_load(&g_ran), 2);
    ch_finalize();
}

static void t_free_used_by_sched(void)
{
    ch_init(1);
    coexec_pool_t pools[2];
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pools[0]));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pools[1]));
    coexec_sched_t sched;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, pools, 2, NULL, &sched));
    /* Used by a scheduler that no stream runs yet. */
    coexec_pool_t c0 = pools[0], c1 = pools[1];
    CH_ASSERT_RC(coexec_pool_free(&c0), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_pool_free(&c1), COEXEC_EBUSY);
    /* ... and by a running stream. */
    coexec_xstream_attr_t a;
    CH_ASSERT_OK(coexec_xstream_attr_init(&a));
    a.sched = sched;
    coexec_xstream_t xs;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&a, &xs));
    CH_ASSERT_RC(coexec_pool_free(&c1), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    CH_ASSERT_RC(coexec_pool_free(&c1), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_sched_free(&sched));
    CH_ASSERT_OK(coexec_pool_free(&c0));
    CH_ASSERT_OK(coexec_pool_free(&c1));
    /* A pool shared by two schedulers stays busy until both are freed. */
    coexec_pool_t p;
    coexec_sched_t s1, s2;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, &p, 1, NULL, &s1));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &p, 1, NULL, &s2));
    coexec_pool_t cp = p;
    CH_ASSERT_OK(coexec_sched_free(&s1));
    CH_ASSERT_RC(coexec_pool_free(&cp), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_sched_free(&s2));
    CH_ASSERT_OK(coexec_pool_free(&cp));
    ch_finalize();
}

/* A unit's home pool is where it goes back when it yields or is woken:
 * freeing it under a running or parked unit would strand that unit in
 * whatever pool reuses the record. Both are refused with EBUSY. */
static void free_own_home_ult(void *arg)
{
    coexec_pool_t home = *(coexec_pool_t *)arg;
    CH_CHECK_RC(coexec_pool_free(&home), COEXEC_EBUSY);
    CH_CHECK(CH_SAME(home, *(coexec_pool_t *)arg));
    atomic_fetch_add(&g_ran, 1);
}

static void t_free_home_of_running(void)
{
    ch_init(1);
    coexec_pool_t pool;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pool));
    atomic_store(&g_ran, 0);
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create(pool, free_own_home_ult, &pool, NULL, &t));
    /* No scheduler takes from pool: the join runs t in place, here. */
    CH_ASSERT_OK(coexec_thread_join(t));
    CH_ASSERT_EQ(atomic_load(&g_ran), 1);
    /* Finished, not yet freed: it no longer holds the pool. */
    CH_ASSERT_OK(coexec_pool_free(&pool));
    CH_ASSERT_OK(coexec_thread_free(&t));
    ch_finalize();
}

struct parked_home {
    coexec_pool_t pool;
    coexec_eventual_t ev;
    coexec_thread_t u;
};

static void park_on_ev_ult(void *arg)
{
    struct parked_home *h = arg;
    CH_CHECK_RC(coexec_eventual_wait(&h->ev, NULL), COEXEC_OK);
    atomic_fetch_add(&g_ran, 1);
}

/* Joins (and so runs in place, on the primary) the unit of h->pool. */
static void join_parker_ult(void *arg)
{
    struct parked_home *h = arg;
    CH_CHECK_RC(coexec_thread_free(&h->u), COEXEC_OK);
}

static void t_free_home_of_parked(void)
{
    ch_init(1);
    struct parked_home h;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &h.pool));
    CH_ASSERT_OK_FATAL(coexec_eventual_init(&h.ev, 0));
    atomic_store(&g_ran, 0);
    coexec_xstream_t x0;
    coexec_pool_t main_pool;
    CH_ASSERT_OK(coexec_xstream_by_rank(0, &x0));
    CH_ASSERT_OK(coexec_xstream_get_main_pool(x0, &main_pool));
    CH_ASSERT_OK_FATAL(coexec_thread_create(h.pool, park_on_ev_ult, &h, NULL, &h.u));
    coexec_thread_t u = h.u, joiner;
    CH_ASSERT_OK_FATAL(coexec_thread_create(main_pool, join_parker_ult, &h, NULL, &joiner));
    coexec_unit_state_t st = COEXEC_UNIT_READY;
    CH_WAIT(coexec_thread_get_state(u, &st) == COEXEC_OK &&
            st == COEXEC_UNIT_BLOCKED);
    size_t sz = 1;
    CH_ASSERT_OK(coexec_pool_get_size(h.pool, &sz));
    CH_ASSERT_EQ(sz, 0);
    coexec_pool_t copy = h.pool;
    CH_ASSERT_RC(coexec_pool_free(&copy), COEXEC_EBUSY);
    CU_ASSERT(CH_SAME(copy, h.pool));
    /* The wake queues it at home; no scheduler serves that pool, so move
     * it to ours by hand. */
    CH_ASSERT_OK(coexec_eventual_set(&h.ev, NULL, 0));
    CH_WAIT(coexec_pool_get_size(h.pool, &sz) == COEXEC_OK && sz == 1);
    coexec_unit_t got = {0};
    CH_ASSERT_OK(coexec_pool_pop(h.pool, &got));
    CU_ASSERT(got.p == u.p);
    CH_ASSERT_OK(coexec_pool_push(main_pool, got));
    CH_ASSERT_OK(coexec_thread_free(&joiner));
    CH_ASSERT_EQ(atomic_load(&g_ran), 1);
    CH_ASSERT_OK(coexec_pool_free(&h.pool));
    CH_ASSERT_OK(coexec_eventual_destroy(&h.ev));
    ch_finalize();
}

/* ======================================================================= */
/* concurrency                                                              */
/* ======================================================================= */

typedef struct {
    unit_set_t *set;
    coexec_pool_t pool;
    atomic_long *count; /* per unit */
    atomic_long pops, pushes;
    long target;
    ch_barrier_t start;
    /* producers: which units each pushes, in order */
    int nprod, ncons;
    long consumed_target;
    atomic_long consumed;
    /* consumer logs (index sequences) */
    long *log[8];
    long logn[8];
    atomic_int next_id;
    atomic_int errors;
} conc_t;

static void *mpmc_worker(void *arg)
{
    conc_t *c = arg;
    ch_barrier_wait(&c->start);
    while (atomic_load(&c->pops) < c->target) {
        coexec_unit_t u;
        int rc = coexec_pool_pop(c->pool, &u);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            break;
        }
        if (CH_IS_NULL(u)) {
            ch_relax();
            continue;
        }
        atomic_fetch_add(&c->pops, 1);
        long i = unit_index(c->set, u);
        if (i < 0) {
            ch_fail_at(__FILE__, __LINE__, "popped a unit that was never pushed");
            break;
        }
        atomic_fetch_add(&c->count[i], 1);
        CH_CHECK_RC(coexec_pool_push(c->pool, u), COEXEC_OK);
        atomic_fetch_add(&c->pushes, 1);
    }
    return NULL;
}

static void run_mpmc(coexec_pool_kind_t kind)
{
    long n = ch_iters(2000, 200);
    unit_set_t set;
    unit_set_make(&set, n);
    conc_t c;
    memset(&c, 0, sizeof c);
    c.set = &set;
    c.count = calloc((size_t)n, sizeof *c.count);
    c.target = ch_iters(400000, 20000);
    CH_ASSERT_OK_FATAL(coexec_pool_create(kind, COEXEC_ACCESS_MPMC, &c.pool));
    for (long i = 0; i < n; i++)
        CH_ASSERT_OK_FATAL(coexec_pool_push(c.pool, unit_of(&set, i)));
    ch_barrier_init(&c.start, 4);
    ch_pthread_t th[4];
    for (int i = 0; i < 4; i++)
        ch_pthread_start(&th[i], mpmc_worker, &c);
    for (int i = 0; i < 4; i++)
        ch_pthread_join(&th[i]);
    CH_ASSERT_EQ(atomic_load(&c.pops), atomic_load(&c.pushes));
    CU_ASSERT(atomic_load(&c.pops) >= c.target);
    long sum = 0;
    for (long i = 0; i < n; i++)
        sum += atomic_load(&c.count[i]);
    CH_ASSERT_EQ(sum, atomic_load(&c.pops));
    size_t sz = 0;
    CH_ASSERT_OK(coexec_pool_get_size(c.pool, &sz));
    CH_ASSERT_EQ(sz, n);
    /* Every unit is in the pool exactly once. */
    char *seen = calloc((size_t)n, 1);
    long got = 0;
    for (;;) {
        coexec_unit_t u;
        CH_ASSERT_OK(coexec_pool_pop(c.pool, &u));
        if (CH_IS_NULL(u))
            break;
        long i = unit_index(&set, u);
        CU_ASSERT_FATAL(i >= 0);
        CU_ASSERT(!seen[i]);
        seen[i] = 1;
        got++;
    }
    CH_ASSERT_EQ(got, n);
    free(seen);
    free(c.count);
    CH_ASSERT_OK(coexec_pool_free(&c.pool));
    unit_set_free(&set);
}

static void t_mpmc(void)
{
    ch_init(1);
    run_mpmc(COEXEC_POOL_FIFO);
    run_mpmc(COEXEC_POOL_LIFO);
    ch_finalize();
}

/* producers push the units p, p+nprod, p+2*nprod, ... in that order */
typedef struct {
    conc_t *c;
    int id;
} role_t;

static void *producer(void *arg)
{
    role_t *r = arg;
    conc_t *c = r->c;
    ch_barrier_wait(&c->start);
    for (long i = r->id; i < c->set->n; i += c->nprod) {
        int rc = coexec_pool_push(c->pool, unit_of(c->set, i));
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            return NULL;
        }
        atomic_fetch_add(&c->pushes, 1);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    role_t *r = arg;
    conc_t *c = r->c;
    ch_barrier_wait(&c->start);
    while (atomic_load(&c->consumed) < c->set->n) {
        coexec_unit_t u;
        int rc = coexec_pool_pop(c->pool, &u);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            return NULL;
        }
        if (CH_IS_NULL(u)) {
            ch_relax();
            continue;
        }
        long i = unit_index(c->set, u);
        if (i < 0) {
            ch_fail_at(__FILE__, __LINE__, "popped a unit that was never pushed");
            return NULL;
        }
        atomic_fetch_add(&c->count[i], 1);
        c->log[r->id][c->logn[r->id]++] = i;
        atomic_fetch_add(&c->consumed, 1);
    }
    return NULL;
}

static void run_roles(coexec_pool_kind_t kind, coexec_pool_access_t acc,
                      int nprod, int ncons)
{
    long n = ch_iters(100000, 5000);
    unit_set_t set;
    unit_set_make(&set, n);
    conc_t c;
    memset(&c, 0, sizeof c);
    c.set = &set;
    c.count = calloc((size_t)n, sizeof *c.count);
    c.nprod = nprod;
    c.ncons = ncons;
    for (int i = 0; i < ncons; i++)
        c.log[i] = calloc((size_t)n, sizeof(long));
    CH_ASSERT_OK_FATAL(coexec_pool_create(kind, acc, &c.pool));
    ch_barrier_init(&c.start, (unsigned)(nprod + ncons));
    ch_pthread_t pt[8], ct[8];
    role_t pr[8], cr[8];
    for (int i = 0; i < ncons; i++) {
        cr[i] = (role_t){&c, i};
        ch_pthread_start(&ct[i], consumer, &cr[i]);
    }
    for (int i = 0; i < nprod; i++) {
        pr[i] = (role_t){&c, i};
        ch_pthread_start(&pt[i], producer, &pr[i]);
    }
    for (int i = 0; i < nprod; i++)
        ch_pthread_join(&pt[i]);
    for (int i = 0; i < ncons; i++)
        ch_pthread_join(&ct[i]);

    CH_ASSERT_EQ(atomic_load(&c.pushes), n);
    CH_ASSERT_EQ(atomic_load(&c.consumed), n);
    long bad = 0;
    for (long i = 0; i < n; i++)
        bad += atomic_load(&c.count[i]) != 1;
    CH_ASSERT_EQ(bad, 0); /* every unit seen exactly once */
    if (kind == COEXEC_POOL_FIFO) {
        /* Per producer, every consumer sees its units in push order. */
        long order_bad = 0;
        for (int ci = 0; ci < ncons; ci++) {
            long last[8];
            for (int p = 0; p < nprod; p++)
                last[p] = -1;
            for (long j = 0; j < c.logn[ci]; j++) {
                long i = c.log[ci][j];
                int p = (int)(i % nprod);
                if (i <= last[p])
                    order_bad++;
                last[p] = i;
            }
        }
        CH_ASSERT_EQ(order_bad, 0);
    }
    size_t sz = 1;
    CH_ASSERT_OK(coexec_pool_get_size(c.pool, &sz));
    CH_ASSERT_EQ(sz, 0);
    CH_ASSERT_OK(coexec_pool_free(&c.pool));
    for (int i = 0; i < ncons; i++)
        free(c.log[i]);
    free(c.count);
    unit_set_free(&set);
}

static void t_mpsc(void)
{
    ch_init(1);
    run_roles(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPSC, 3, 1);
    run_roles(COEXEC_POOL_LIFO, COEXEC_ACCESS_MPSC, 3, 1);
    ch_finalize();
}

static void t_spmc(void)
{
    ch_init(1);
    run_roles(COEXEC_POOL_FIFO, COEXEC_ACCESS_SPMC, 1, 3);
    run_roles(COEXEC_POOL_LIFO, COEXEC_ACCESS_SPMC, 1, 3);
    ch_finalize();
}

static void t_spsc(void)
{
    ch_init(1);
    run_roles(COEXEC_POOL_FIFO, COEXEC_ACCESS_SPSC, 1, 1);
    run_roles(COEXEC_POOL_LIFO, COEXEC_ACCESS_SPSC, 1, 1);
    ch_finalize();
}

static void t_mpmc_roles(void)
{
    ch_init(1);
    run_roles(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, 3, 3);
    run_roles(COEXEC_POOL_LIFO, COEXEC_ACCESS_MPMC, 2, 2);
    ch_finalize();
}

/* Pools whose consumer is a scheduler: external producers push units in. */
typedef struct {
    coexec_pool_t pool;
    long n;          /* units per producer */
    int id;
    ch_barrier_t *start;
} served_t;

static atomic_long *g_hits;
static long *g_order;
static atomic_long g_order_n;

static coexec_poll_status_t hit_tasklet(coexec_poll_t *cx, void *arg)
{
    long i = (long)(intptr_t)arg;
    atomic_fetch_add(&g_hits[i], 1);
    long k = atomic_fetch_add(&g_order_n, 1);
    g_order[k] = i;
    return COEXEC_READY;
}

static void hit_ult(void *arg)
{
    long i = (long)(intptr_t)arg;
    atomic_fetch_add(&g_hits[i], 1);
    long k = atomic_fetch_add(&g_order_n, 1);
    g_order[k] = i;
}

/* The per-unit hit counts and run order of n units (hit_tasklet,
 * hit_ult), and their release. */
static void hits_alloc(long n)
{
    g_hits = calloc((size_t)n, sizeof *g_hits);
    g_order = calloc((size_t)n, sizeof *g_order);
    CU_ASSERT_FATAL(g_hits && g_order);
    atomic_store(&g_order_n, 0);
}

static void hits_free(void)
{
    free(g_hits);
    free(g_order);
}

static void *served_producer(void *arg)
{
    served_t *s = arg;
    ch_barrier_wait(s->start);
    for (long j = 0; j < s->n; j++) {
        long i = s->id * s->n + j;
        int rc = (j % 3 == 0)
                     ? coexec_thread_create(s->pool, hit_ult, (void *)(intptr_t)i, NULL, NULL)
                     : coexec_tasklet_create(s->pool, hit_tasklet, (void *)(intptr_t)i, NULL);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            return NULL;
        }
    }
    return NULL;
}

static void run_served(coexec_pool_access_t acc, int nprod)
{
    long per = ch_iters(20000, 1000);
    long n = per * nprod;
    hits_alloc(n);
    ch_stream_t st;
    coexec_sched_config_t sc;
    memset(&st, 0, sizeof st);
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, acc, &st.pool));
    CH_ASSERT_OK(coexec_sched_config_init(&sc));
    sc.idle_spin_us = 0; /* park as often as possible */
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &st.pool, 1, &sc, &st.sched));
    coexec_xstream_attr_t a;
    CH_ASSERT_OK(coexec_xstream_attr_init(&a));
    a.sched = st.sched;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&a, &st.xs));
    ch_barrier_t start;
    ch_barrier_init(&start, (unsigned)nprod);
    served_t sv[4];
    ch_pthread_t th[4];
    for (int i = 0; i < nprod; i++) {
        sv[i] = (served_t){st.pool, per, i, &start};
        ch_pthread_start(&th[i], served_producer, &sv[i]);
    }
    for (int i = 0; i < nprod; i++)
        ch_pthread_join(&th[i]);
    CH_ASSERT_OK(ch_stream_free(&st)); /* runs what is queued */
    CH_ASSERT_EQ(atomic_load(&g_order_n), n);
    long bad = 0;
    for (long i = 0; i < n; i++)
        bad += atomic_load(&g_hits[i]) != 1;
    CH_ASSERT_EQ(bad, 0);
    /* FIFO: each producer's units ran in the order it pushed them */
    long order_bad = 0, last[4] = {-1, -1, -1, -1};
    for (long k = 0; k < n && k < atomic_load(&g_order_n); k++) {
        long i = g_order[k];
        int p = (int)(i / per);
        if (p < 0 || p >= nprod || i <= last[p])
            order_bad++;
        else
            last[p] = i;
    }
    CH_ASSERT_EQ(order_bad, 0);
    hits_free();
}

static void t_served_mpsc(void)
{
    ch_init(1);
    run_served(COEXEC_ACCESS_MPSC, 3);
    ch_finalize();
}

static void t_served_spsc(void)
{
    ch_init(1);
    run_served(COEXEC_ACCESS_SPSC, 1);
    ch_finalize();
}

/* ======================================================================= */
/* access checks (COEXEC_CHECKS builds)                                      */
/* ======================================================================= */

typedef struct {
    coexec_pool_t pool;
    coexec_unit_t unit;
    int op; /* 0 push, 1 pop */
    atomic_int rc;
    coexec_unit_t popped;
} op_t;

static void *do_op(void *arg)
{
    op_t *o = arg;
    if (o->op == 0)
        atomic_store(&o->rc, coexec_pool_push(o->pool, o->unit));
    else
        atomic_store(&o->rc, coexec_pool_pop(o->pool, &o->popped));
    return NULL;
}

/* Runs one push/pop on a fresh pthread (a distinct thread each time). */
static int op_on_thread(coexec_pool_t pool, int op, coexec_unit_t unit,
                        coexec_unit_t *popped)
{
    op_t o;
    o.pool = pool;
    o.unit = unit;
    o.op = op;
    atomic_init(&o.rc, 1);
    memset(&o.popped, 0, sizeof o.popped);
    ch_pthread_t th;
    ch_pthread_start(&th, do_op, &o);
    ch_pthread_join(&th);
    if (popped)
        *popped = o.popped;
    return atomic_load(&o.rc);
}

/* A pthread that stays alive to act as the single producer/consumer. */
typedef struct {
    coexec_pool_t pool;
    atomic_int req;  /* 0 idle, 1 push, 2 pop, 3 quit */
    coexec_unit_t unit, popped;
    atomic_int rc;
    atomic_int done;
} agent_t;

static void *agent_main(void *arg)
{
    agent_t *a = arg;
    for (;;) {
        int r;
        while ((r = atomic_load(&a->req)) == 0)
            ch_relax();
        if (r == 3)
            return NULL;
        if (r == 1)
            atomic_store(&a->rc, coexec_pool_push(a->pool, a->unit));
        else
            atomic_store(&a->rc, coexec_pool_pop(a->pool, &a->popped));
        atomic_store(&a->req, 0);
        atomic_fetch_add(&a->done, 1);
    }
}

static int agent_do(agent_t *a, int req, coexec_unit_t unit)
{
    int before = atomic_load(&a->done);
    a->unit = unit;
    atomic_store(&a->req, req);
    CH_WAIT(atomic_load(&a->done) != before);
    return atomic_load(&a->rc);
}

static size_t pool_size(coexec_pool_t p)
{
    size_t sz = 12345;
    CH_ASSERT_OK(coexec_pool_get_size(p, &sz));
    return sz;
}

static void t_access_checks(void)
{
    if (!CH_HAVE_CHECKS) {
        printf("(library built without COEXEC_CHECKS: access checks not tested) ");
        CU_PASS("skipped");
        return;
    }
    ch_init(1);
    unit_set_t set;
    unit_set_make(&set, 8);
    coexec_unit_t got;
    coexec_pool_t pool;

    for (int acc = COEXEC_ACCESS_SPSC; acc <= COEXEC_ACCESS_SPMC; acc++) {
        int single_prod = acc == COEXEC_ACCESS_SPSC || acc == COEXEC_ACCESS_SPMC;
        int single_cons = acc == COEXEC_ACCESS_SPSC || acc == COEXEC_ACCESS_MPSC;
        CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO,
                                              (coexec_pool_access_t)acc, &pool));
        agent_t prod, cons;
        memset(&prod, 0, sizeof prod);
        memset(&cons, 0, sizeof cons);
        prod.pool = cons.pool = pool;
        ch_pthread_t pt, ct;
        ch_pthread_start(&pt, agent_main, &prod);
        ch_pthread_start(&ct, agent_main, &cons);

        /* The agents become producer and consumer. */
        CH_ASSERT_OK(agent_do(&prod, 1, unit_of(&set, 0)));
        CH_ASSERT_OK(agent_do(&prod, 1, unit_of(&set, 1)));
        CH_ASSERT_OK(agent_do(&cons, 2, (coexec_unit_t){0}));
        CU_ASSERT(CH_SAME(cons.popped, unit_of(&set, 0)));
        CH_ASSERT_EQ(pool_size(pool), 1);

        /* The main thread pushes: allowed only with several producers. */
        int rc = coexec_pool_push(pool, unit_of(&set, 2));
        CH_ASSERT_RC(rc, single_prod ? COEXEC_EACCESS : COEXEC_OK);
        CH_ASSERT_EQ(pool_size(pool), single_prod ? 1 : 2);
        /* Creating a unit into it is a push too. */
        coexec_tasklet_t extra = {0};
        rc = coexec_tasklet_create(pool, noop_tasklet, NULL, &extra);
        CH_ASSERT_RC(rc, single_prod ? COEXEC_EACCESS : COEXEC_OK);
        int have_extra = rc == COEXEC_OK;
        CH_ASSERT_EQ(pool_size(pool), single_prod ? 1 : 3);
        /* Another thread pushes. */
        rc = op_on_thread(pool, 0, unit_of(&set, 3), NULL);
        CH_ASSERT_RC(rc, single_prod ? COEXEC_EACCESS : COEXEC_OK);
        size_t expect = single_prod ? 1 : 4;
        CH_ASSERT_EQ(pool_size(pool), expect);

        /* The main thread pops: allowed only with several consumers. */
        rc = coexec_pool_pop(pool, &got);
        CH_ASSERT_RC(rc, single_cons ? COEXEC_EACCESS : COEXEC_OK);
        if (rc == COEXEC_OK) {
            CU_ASSERT(CH_SAME(got, unit_of(&set, 1)));
            expect--;
        }
        CH_ASSERT_EQ(pool_size(pool), expect);
        rc = op_on_thread(pool, 1, (coexec_unit_t){0}, &got);
        CH_ASSERT_RC(rc, single_cons ? COEXEC_EACCESS : COEXEC_OK);
        if (rc == COEXEC_OK && !CH_IS_NULL(got))
            expect--;
        CH_ASSERT_EQ(pool_size(pool), expect);

        /* The consumer drains what is left. */
        while (pool_size(pool) > 0) {
            CH_ASSERT_OK(agent_do(&cons, 2, (coexec_unit_t){0}));
            CU_ASSERT_FATAL(!CH_IS_NULL(cons.popped));
        }
        atomic_store(&prod.req, 3);
        atomic_store(&cons.req, 3);
        ch_pthread_join(&pt);
        ch_pthread_join(&ct);
        if (have_extra) {
            requeue(coexec_tasklet_unit(extra));
            CH_ASSERT_OK(coexec_tasklet_free(&extra));
        }
        CH_ASSERT_OK(coexec_pool_free(&pool));
    }

    /* PRIV: the thread that uses it first owns it. */
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_LIFO, COEXEC_ACCESS_PRIV, &pool));
    CH_ASSERT_OK(coexec_pool_push(pool, unit_of(&set, 4)));
    CH_ASSERT_RC(op_on_thread(pool, 0, unit_of(&set, 5), NULL), COEXEC_EACCESS);
    CH_ASSERT_EQ(pool_size(pool), 1);
    CH_ASSERT_RC(op_on_thread(pool, 1, (coexec_unit_t){0}, NULL), COEXEC_EACCESS);
    CH_ASSERT_EQ(pool_size(pool), 1);
    CH_ASSERT_OK(coexec_pool_pop(pool, &got));
    CU_ASSERT(CH_SAME(got, unit_of(&set, 4)));
    CH_ASSERT_OK(coexec_pool_free(&pool));

    /* MPMC: anyone. */
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pool));
    CH_ASSERT_OK(coexec_pool_push(pool, unit_of(&set, 6)));
    CH_ASSERT_OK(op_on_thread(pool, 0, unit_of(&set, 7), NULL));
    CH_ASSERT_OK(op_on_thread(pool, 1, (coexec_unit_t){0}, &got));
    CU_ASSERT(CH_SAME(got, unit_of(&set, 6)));
    CH_ASSERT_OK(coexec_pool_pop(pool, &got));
    CU_ASSERT(CH_SAME(got, unit_of(&set, 7)));
    CH_ASSERT_OK(coexec_pool_free(&pool));

    unit_set_free(&set);
    ch_finalize();
}

/* ======================================================================= */
/* push of units in the wrong state                                         */
/* ======================================================================= */

static atomic_int g_phase;
static coexec_pool_t g_other_pool;

static void push_self_ult(void *arg)
{
    coexec_thread_t me;
    CH_CHECK_RC(coexec_thread_self(&me), COEXEC_OK);
    CH_CHECK_RC(coexec_pool_push(g_other_pool, coexec_thread_unit(me)), COEXEC_ESTATE);
}

static void suspend_once_ult(void *arg)
{
    atomic_store(&g_phase, 1);
    CH_CHECK_RC(coexec_self_suspend(), COEXEC_OK);
    atomic_store(&g_phase, 2);
}

static void t_push_state(void)
{
    ch_init(2);
    coexec_pool_t a, b;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &a));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &b));

    /* Queued: into its own pool or another one. */
    coexec_thread_t t;
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_thread_create(a, noop_ult, NULL, NULL, &t));
    CH_ASSERT_OK(coexec_tasklet_create(a, noop_tasklet, NULL, &k));
    CH_ASSERT_RC(coexec_pool_push(a, coexec_thread_unit(t)), COEXEC_ESTATE);
    CH_ASSERT_RC(coexec_pool_push(b, coexec_thread_unit(t)), COEXEC_ESTATE);
    CH_ASSERT_RC(coexec_pool_push(b, coexec_tasklet_unit(k)), COEXEC_ESTATE);
    CH_ASSERT_EQ(pool_size(a), 2);
    CH_ASSERT_EQ(pool_size(b), 0);

    /* Popped: now it may be pushed once, not twice. */
    coexec_unit_t u;
    CH_ASSERT_OK(coexec_pool_pop(a, &u));
    CU_ASSERT(CH_SAME(u, coexec_thread_unit(t)));
    CH_ASSERT_OK(coexec_pool_push(b, u));
    CH_ASSERT_RC(coexec_pool_push(b, u), COEXEC_ESTATE);
    CH_ASSERT_RC(coexec_pool_push(a, u), COEXEC_ESTATE);
    CH_ASSERT_EQ(pool_size(a), 1);
    CH_ASSERT_EQ(pool_size(b), 1);

    /* Pushed into a served pool, a popped unit runs there. */
    coexec_xstream_t x1;
    coexec_pool_t p1;
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(1, &x1));
    CH_ASSERT_OK_FATAL(coexec_xstream_get_main_pool(x1, &p1));
    CH_ASSERT_OK(coexec_pool_pop(b, &u));
    atomic_store(&g_ran, 0);
    CH_ASSERT_OK(coexec_pool_push(p1, u));
    CH_WAIT(atomic_load(&g_ran) == 1);
    CH_ASSERT_OK(coexec_thread_join(t));
    /* Finished. */
    CH_ASSERT_RC(coexec_pool_push(b, coexec_thread_unit(t)), COEXEC_ESTATE);
    CH_ASSERT_OK(coexec_thread_free(&t));

    /* Running: a ULT pushing itself. */
    g_other_pool = b;
    CH_ASSERT_OK(ch_run_ult_in(p1, push_self_ult, NULL));
    CH_ASSERT_EQ(pool_size(b), 0);

    /* Suspended. */
    atomic_store(&g_phase, 0);
    CH_ASSERT_OK(coexec_thread_create(p1, suspend_once_ult, NULL, NULL, &t));
    CH_WAIT(atomic_load(&g_phase) == 1);
    CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_RC(coexec_pool_push(b, coexec_thread_unit(t)), COEXEC_ESTATE);
    CH_ASSERT_EQ(pool_size(b), 0);
    CH_ASSERT_OK(coexec_thread_resume(t));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(atomic_load(&g_phase), 2);

    /* Freed and null units. */
    coexec_unit_t stale = coexec_tasklet_unit(k);
    CH_ASSERT_OK(coexec_pool_pop(a, &u));
    CH_ASSERT_OK(coexec_pool_push(p1, u));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_RC(coexec_pool_push(b, stale), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_pool_push(b, (coexec_unit_t){0}), COEXEC_EHANDLE);
    CH_ASSERT_EQ(pool_size(b), 0);

    CH_ASSERT_OK(coexec_pool_free(&a));
    CH_ASSERT_OK(coexec_pool_free(&b));
    ch_finalize();
}

/* ======================================================================= */
/* errors                                                                   */
/* ======================================================================= */

static void t_errors(void)
{
    ch_init(1);
    coexec_pool_t p = {0};
    CH_ASSERT_RC(coexec_pool_create(COEXEC_POOL_USER, COEXEC_ACCESS_MPMC, &p), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_create((coexec_pool_kind_t)-1, COEXEC_ACCESS_MPMC, &p), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_create(COEXEC_POOL_FIFO, (coexec_pool_access_t)5, &p), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_create(COEXEC_POOL_FIFO, (coexec_pool_access_t)-1, &p), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_free(NULL), COEXEC_EINVAL);

    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p));
    CH_ASSERT_RC(coexec_pool_pop(p, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_get_size(p, NULL), COEXEC_EINVAL);
    coexec_pool_t old = p;
    CH_ASSERT_OK(coexec_pool_free(&p));
    CU_ASSERT(CH_IS_NULL(p));

    coexec_pool_t nul = {0};
    coexec_pool_t handles[2] = {old, nul};
    for (int h = 0; h < 2; h++) {
        coexec_pool_t x = handles[h];
        coexec_unit_t u;
        size_t sz;
        coexec_pool_kind_t kind;
        coexec_thread_t t;
        coexec_tasklet_t k;
        coexec_sched_t s;
        CH_ASSERT_RC(coexec_pool_free(&x), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_pool_pop(x, &u), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_pool_get_size(x, &sz), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_pool_get_info(x, &kind, NULL), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_thread_create(x, noop_ult, NULL, NULL, &t), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_tasklet_create(x, noop_tasklet, NULL, &k), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, &x, 1, NULL, &s), COEXEC_EHANDLE);
    }
    /* A stale handle stays stale after its record is reused. */
    coexec_pool_t fresh[8];
    for (int i = 0; i < 8; i++)
        CH_ASSERT_OK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &fresh[i]));
    size_t sz;
    CH_ASSERT_RC(coexec_pool_get_size(old, &sz), COEXEC_EHANDLE);
    /* Pushing a valid unit into a stale pool. */
    coexec_tasklet_t k;
    coexec_unit_t u;
    CH_ASSERT_OK(coexec_tasklet_create(fresh[0], noop_tasklet, NULL, &k));
    CH_ASSERT_OK(coexec_pool_pop(fresh[0], &u));
    CH_ASSERT_RC(coexec_pool_push(old, u), COEXEC_EHANDLE);
    requeue(u);
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    for (int i = 0; i < 8; i++)
        CH_ASSERT_OK(coexec_pool_free(&fresh[i]));
    ch_finalize();
}

/* ======================================================================= */

/* ======================================================================= */
/* prio                                                                     */
/* ======================================================================= */

static coexec_pool_t prio_pool(int levels, unsigned aging,
                               coexec_pool_access_t acc)
{
    coexec_pool_config_t cfg;
    coexec_pool_t pool = {0};
    CH_ASSERT_OK(coexec_pool_config_init(&cfg));
    cfg.levels = levels;
    cfg.aging = aging;
    CH_ASSERT_OK_FATAL(coexec_pool_create_ex(COEXEC_POOL_PRIO, acc, &cfg, &pool));
    return pool;
}

/* Pushes unit i of s into pool at priority prio. */
static void push_prio(coexec_pool_t pool, const unit_set_t *s, long i, int prio)
{
    CH_ASSERT_OK(coexec_unit_set_priority(unit_of(s, i), prio));
    CH_ASSERT_OK(coexec_pool_push(pool, unit_of(s, i)));
}

/* Pops one unit and returns its index in s (-1: empty, -2: foreign). */
static long take_index(coexec_pool_t pool, const unit_set_t *s, bool steal)
{
    coexec_unit_t u;
    CH_ASSERT_OK(steal ? coexec_pool_steal(pool, &u) : coexec_pool_pop(pool, &u));
    if (CH_IS_NULL(u))
        return -1;
    long i = unit_index(s, u);
    return i < 0 ? -2 : i;
}

static long pop_index(coexec_pool_t pool, const unit_set_t *s)
{
    return take_index(pool, s, false);
}

/* Most urgent level first, FIFO within a level, priorities clamped; a
 * thief takes in the same order (a PRIV pool has no thieves). */
static void t_prio_order(void)
{
    ch_init(1);
    for (int k2 = 0; k2 < 2 * (COEXEC_ACCESS_MPMC + 1); k2++) {
        int acc = k2 / 2;
        bool steal = k2 % 2;
        if (steal && acc == COEXEC_ACCESS_PRIV)
            continue;
        enum { N = 24 };
        unit_set_t s;
        unit_set_make(&s, N);
        coexec_pool_t pool = prio_pool(4, 0, (coexec_pool_access_t)acc);
        /* Unit i gets priority i % 6: 4 and 5 clamp to level 3. */
        for (long i = 0; i < N; i++)
            push_prio(pool, &s, i, (int)(i % 6));
        size_t sz = 0;
        CH_ASSERT_OK(coexec_pool_get_size(pool, &sz));
        CH_ASSERT_EQ(sz, N);
        long expect[N], k = 0;
        for (int lvl = 3; lvl >= 0; lvl--)
            for (long i = 0; i < N; i++)
                if ((i % 6 > 3 ? 3 : i % 6) == lvl)
                    expect[k++] = i;
        for (k = 0; k < N; k++)
            CH_ASSERT_EQ(take_index(pool, &s, steal), expect[k]);
        CH_ASSERT_EQ(take_index(pool, &s, steal), -1);
        CH_ASSERT_OK(coexec_pool_get_size(pool, &sz));
        CH_ASSERT_EQ(sz, 0);
        CH_ASSERT_OK(coexec_pool_free(&pool));
        unit_set_free(&s);
    }
    ch_finalize();
}

/* Creates n noop ULTs into pool, ULT i at priority prio_of(i). */
static void create_prio_ults(coexec_pool_t pool, coexec_thread_t *t, int n,
                             int (*prio_of)(int))
{
    coexec_thread_attr_t a;
    atomic_store(&g_ran, 0);
    for (int i = 0; i < n; i++) {
        CH_ASSERT_OK(coexec_thread_attr_init(&a));
        a.priority = prio_of(i);
        CH_ASSERT_OK_FATAL(coexec_thread_create(pool, noop_ult, NULL, &a, &t[i]));
    }
}

static int prio_0_2_7(int i) { return i % 3 == 0 ? 0 : i % 3 == 1 ? 2 : 7; }
static int prio_mod3(int i) { return i % 3; }

/* ULTs created with attr.priority land at their level; default is 0. */
static void t_prio_attr(void)
{
    ch_init(1);
    enum { N = 12 };
    coexec_pool_t pool = prio_pool(8, 0, COEXEC_ACCESS_MPMC);
    coexec_thread_t t[N];
    create_prio_ults(pool, t, N, prio_0_2_7);
    /* Expected: i % 3 == 2 (prio 7), then i % 3 == 1 (prio 2), then the
     * priority-0 ones, each group in creation order. */
    int prio;
    for (int grp = 2; grp >= 0; grp--)
        for (int i = 0; i < N; i++) {
            if (i % 3 != grp)
                continue;
            coexec_unit_t u;
            CH_ASSERT_OK(coexec_pool_pop(pool, &u));
            CU_ASSERT(CH_SAME(u, coexec_thread_unit(t[i])));
            CH_ASSERT_OK(coexec_unit_get_priority(u, &prio));
            CH_ASSERT_EQ(prio, prio_0_2_7(i));
            requeue(u);
        }
    for (int i = 0; i < N; i++)
        CH_ASSERT_OK(coexec_thread_free(&t[i]));
    CH_ASSERT_EQ(atomic_load(&g_ran), N);
    CH_ASSERT_OK(coexec_pool_free(&pool));
    ch_finalize();
}

/* A served PRIO pool: a yielding unit goes behind its level's others. */
static char g_ylog[16][4];
static atomic_int g_ylog_n;

static void ylog(const char *what)
{
    int i = atomic_fetch_add(&g_ylog_n, 1);
    if (i < 16)
        snprintf(g_ylog[i], sizeof g_ylog[i], "%s", what);
}

static void yield_ult(void *arg)
{
    const char *name = arg;
    char b[4];
    snprintf(b, sizeof b, "%s0", name);
    ylog(b);
    CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    snprintf(b, sizeof b, "%s1", name);
    ylog(b);
}

static void name_ult(void *arg) { ylog(arg); }

static void t_prio_yield(void)
{
    ch_init(1);
    coexec_pool_t pool = prio_pool(4, 0, COEXEC_ACCESS_MPMC);
    coexec_thread_attr_t a;
    atomic_store(&g_ylog_n, 0);
    struct { void (*fn)(void *); const char *name; int prio; } u[] = {
        {name_ult, "L", 0}, {yield_ult, "A", 1}, {name_ult, "B", 1},
        {name_ult, "C", 1}, {name_ult, "H", 2}};
    for (unsigned i = 0; i < sizeof u / sizeof u[0]; i++) {
        CH_ASSERT_OK(coexec_thread_attr_init(&a));
        a.priority = u[i].prio;
        CH_ASSERT_OK(coexec_thread_create(pool, u[i].fn, (void *)u[i].name, &a, NULL));
    }
    ch_stream_t st = {0};
    st.pool = pool;
    coexec_sched_config_t sc;
    CH_ASSERT_OK(coexec_sched_config_init(&sc));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &pool, 1, &sc, &st.sched));
    coexec_xstream_attr_t xa;
    CH_ASSERT_OK(coexec_xstream_attr_init(&xa));
    xa.sched = st.sched;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&xa, &st.xs));
    CH_ASSERT_OK(ch_stream_free(&st)); /* runs everything first */
    const char *want[] = {"H", "A0", "B", "C", "A1", "L"};
    CH_ASSERT_EQ_FATAL(atomic_load(&g_ylog_n), 6);
    for (int i = 0; i < 6; i++) {
        CU_ASSERT_STRING_EQUAL(g_ylog[i], want[i]);
    }
    ch_finalize();
}

/*
 * Aging, step by step: a constant stream of urgent units (each pop is
 * followed by a new push at level 3) passes a waiting level over `aging`
 * times, then serves it; several waiting levels are served in turn.
 */
static void t_prio_aging_steps(void)
{
    ch_init(1);
    enum { A = 8, N = 200 };
    unit_set_t s;
    unit_set_make(&s, N);
    coexec_pool_t pool = prio_pool(4, A, COEXEC_ACCESS_MPMC);
    long next = 0;
    for (int i = 0; i < 4; i++)
        push_prio(pool, &s, next++, 3);
    long low = next++, mid = next++, midhi = next++;
    push_prio(pool, &s, low, 0);
    push_prio(pool, &s, mid, 1);
    push_prio(pool, &s, midhi, 2);
    long at_low = -1, at_mid = -1, at_midhi = -1;
    for (long k = 0; k < 100 && next < N; k++) {
        long i = pop_index(pool, &s);
        CU_ASSERT_FATAL(i >= 0);
        if (i == low)
            at_low = k;
        else if (i == mid)
            at_mid = k;
        else if (i == midhi)
            at_midhi = k;
        else
            push_prio(pool, &s, next++, 3); /* the urgent stream goes on */
    }
    /* All three waited since clock 0: due at pop A (0-based), served
     * longest-waiting first, ties to the more urgent. */
    CH_ASSERT_EQ(at_midhi, A);
    CH_ASSERT_EQ(at_mid, A + 1);
    CH_ASSERT_EQ(at_low, A + 2);
    /* Drain, then free. */
    while (pop_index(pool, &s) >= 0)
        ;
    CH_ASSERT_OK(coexec_pool_free(&pool));
    unit_set_free(&s);

    /* aging 0: strict priority, the low unit waits for every urgent one. */
    unit_set_make(&s, N);
    pool = prio_pool(4, 0, COEXEC_ACCESS_PRIV);
    next = 0;
    push_prio(pool, &s, next++, 0);
    for (int i = 0; i < 4; i++)
        push_prio(pool, &s, next++, 3);
    long pops = 0, low_at = -1;
    for (;;) {
        long i = pop_index(pool, &s);
        if (i < 0)
            break;
        if (i == 0)
            low_at = pops;
        pops++;
        if (next < N)
            push_prio(pool, &s, next++, 3);
    }
    CH_ASSERT_EQ(pops, N);
    CH_ASSERT_EQ(low_at, N - 1);
    CH_ASSERT_OK(coexec_pool_free(&pool));
    unit_set_free(&s);
    ch_finalize();
}

/* Aging on a served pool while other threads keep pushing urgent ULTs. */
enum { AGING = 16, HIGH_FILL = 200 };
static atomic_long g_high_ran;
static atomic_long g_low_at;   /* g_high_ran when the low unit ran */
static atomic_long g_low_size; /* pool size when the low unit ran */
static atomic_int g_low_done;
static coexec_pool_t g_aging_pool;

static void high_ult(void *arg) { atomic_fetch_add(&g_high_ran, 1); }

static void low_ult(void *arg)
{
    size_t sz = 0;
    CH_CHECK_RC(coexec_pool_get_size(g_aging_pool, &sz), COEXEC_OK);
    atomic_store(&g_low_size, (long)sz);
    atomic_store(&g_low_at, atomic_load(&g_high_ran));
    atomic_store(&g_low_done, 1);
}

static void *high_pusher(void *arg)
{
    coexec_thread_attr_t a;
    CH_CHECK_RC(coexec_thread_attr_init(&a), COEXEC_OK);
    a.priority = 5;
    double t0 = ch_now();
    while (!atomic_load(&g_low_done) && ch_now() - t0 < CH_WAIT_LIMIT_S) {
        size_t sz = 0;
        CH_CHECK_RC(coexec_pool_get_size(g_aging_pool, &sz), COEXEC_OK);
        if (sz >= HIGH_FILL) {
            sched_yield();
            continue;
        }
        int rc = coexec_thread_create(g_aging_pool, high_ult, NULL, &a, NULL);
        if (rc) {
            CH_CHECK_RC(rc, COEXEC_OK);
            break;
        }
    }
    return NULL;
}

static void t_prio_aging_served(void)
{
    ch_init(1);
    g_aging_pool = prio_pool(8, AGING, COEXEC_ACCESS_MPMC);
    atomic_store(&g_high_ran, 0);
    atomic_store(&g_low_done, 0);
    coexec_thread_attr_t a;
    CH_ASSERT_OK(coexec_thread_attr_init(&a));
    a.priority = 5;
    for (int i = 0; i < HIGH_FILL; i++)
        CH_ASSERT_OK(coexec_thread_create(g_aging_pool, high_ult, NULL, &a, NULL));
    ch_stream_t st = {0};
    st.pool = g_aging_pool;
    coexec_sched_config_t sc;
    CH_ASSERT_OK(coexec_sched_config_init(&sc));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &st.pool, 1,
                                           &sc, &st.sched));
    /* The low unit joins a full pool of urgent ones before the stream
     * starts serving it, so that urgent units are still queued when aging
     * lets it through, however slowly the pushers run on a loaded host. */
    coexec_thread_t low;
    CH_ASSERT_OK(coexec_thread_attr_init(&a));
    CH_ASSERT_OK_FATAL(coexec_thread_create(g_aging_pool, low_ult, NULL, &a, &low));
    long h0 = atomic_load(&g_high_ran);
    ch_pthread_t th[2];
    for (int i = 0; i < 2; i++)
        ch_pthread_start(&th[i], high_pusher, NULL);
    coexec_xstream_attr_t xa;
    CH_ASSERT_OK(coexec_xstream_attr_init(&xa));
    xa.sched = st.sched;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&xa, &st.xs));
    bool ok = CH_WAIT(atomic_load(&g_low_done));
    for (int i = 0; i < 2; i++)
        ch_pthread_join(&th[i]);
    CU_ASSERT(ok);
    /* Passed over at most AGING times after it was queued (a few more may
     * have been counted late), and served while urgent units waited. */
    CU_ASSERT(atomic_load(&g_low_at) - h0 <= AGING + 8);
    CU_ASSERT(atomic_load(&g_low_size) > 0);
    CH_ASSERT_OK(coexec_thread_free(&low));
    CH_ASSERT_OK(ch_stream_free(&st));
    ch_finalize();
}

/* A unit removed while queued (join in place) leaves its level intact. */
static void t_prio_remove(void)
{
    ch_init(1);
    enum { N = 9 };
    coexec_pool_t pool = prio_pool(3, 0, COEXEC_ACCESS_MPMC);
    coexec_thread_t t[N];
    create_prio_ults(pool, t, N, prio_mod3);
    /* Heads, middles and tails of each level, joined in place. */
    int order[N] = {4, 0, 8, 5, 1, 7, 2, 6, 3};
    size_t sz = 0;
    for (int k = 0; k < N; k++) {
        CH_ASSERT_OK(coexec_thread_join(t[order[k]]));
        CH_ASSERT_EQ(atomic_load(&g_ran), k + 1);
        CH_ASSERT_OK(coexec_pool_get_size(pool, &sz));
        CH_ASSERT_EQ(sz, N - 1 - k);
    }
    for (int i = 0; i < N; i++)
        CH_ASSERT_OK(coexec_thread_free(&t[i]));
    coexec_unit_t u;
    CH_ASSERT_OK(coexec_pool_pop(pool, &u));
    CU_ASSERT(CH_IS_NULL(u));
    CH_ASSERT_OK(coexec_pool_free(&pool));
    ch_finalize();
}

/* ======================================================================= */
/* deque                                                                    */
/* ======================================================================= */

static coexec_pool_t deque_pool(int steal_half)
{
    coexec_pool_config_t cfg;
    coexec_pool_t pool = {0};
    CH_ASSERT_OK(coexec_pool_config_init(&cfg));
    cfg.steal_half = steal_half;
    CH_ASSERT_OK_FATAL(coexec_pool_create_ex(COEXEC_POOL_DEQUE, COEXEC_ACCESS_MPMC,
                                             &cfg, &pool));
    return pool;
}

/* A stream whose BASIC_WAIT scheduler serves one pool and never steals. */
static void stream_over(ch_stream_t *st, coexec_pool_t pool)
{
    memset(st, 0, sizeof *st);
    st->pool = pool;
    coexec_sched_config_t sc;
    CH_ASSERT_OK(coexec_sched_config_init(&sc));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &st->pool, 1,
                                           &sc, &st->sched));
    coexec_xstream_attr_t xa;
    CH_ASSERT_OK(coexec_xstream_attr_init(&xa));
    xa.sched = st->sched;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&xa, &st->xs));
}

enum { DQ_N = 8 };
static coexec_tasklet_t g_dq_k[64];
static coexec_pool_t g_dq_pool;

/* Index of u among g_dq_k[0..n), or -1. */
static int dq_index(coexec_unit_t u, int n)
{
    for (int i = 0; i < n; i++)
        if (CH_SAME(u, coexec_tasklet_unit(g_dq_k[i])))
            return i;
    return -1;
}

static int dq_take(bool steal)
{
    coexec_unit_t u;
    int rc = steal ? coexec_pool_steal(g_dq_pool, &u) : coexec_pool_pop(g_dq_pool, &u);
    CH_CHECK_RC(rc, COEXEC_OK);
    if (CH_IS_NULL(u))
        return -1;
    int i = dq_index(u, DQ_N);
    CH_CHECK_RC(coexec_pool_push(g_dq_pool, u), COEXEC_OK); /* runs later */
    return i;
}

/* On the owner stream: pops are LIFO, steals take the oldest. Every unit
 * taken goes back in at once (and so becomes the newest): track that. */
static void dq_order_body(void *arg)
{
    for (int i = 0; i < DQ_N; i++)
        CH_CHECK_RC(coexec_tasklet_create(g_dq_pool, noop_tasklet, NULL, &g_dq_k[i]),
                    COEXEC_OK);
    size_t sz = 0;
    CH_CHECK_RC(coexec_pool_get_size(g_dq_pool, &sz), COEXEC_OK);
    CH_CHECK_EQ(sz, DQ_N);
    /* Bottom: 7; pushed back, it is the bottom again. */
    CH_CHECK_EQ(dq_take(false), DQ_N - 1);
    CH_CHECK_EQ(dq_take(false), DQ_N - 1);
    /* Top: 0, 1, 2 (each pushed back at the bottom). */
    CH_CHECK_EQ(dq_take(true), 0);
    CH_CHECK_EQ(dq_take(true), 1);
    CH_CHECK_EQ(dq_take(true), 2);
    /* The bottom now is 2, then... pop without pushing back: */
    int want[DQ_N] = {2, 1, 0, 7, 6, 5, 4, 3};
    coexec_unit_t got[DQ_N];
    for (int k = 0; k < DQ_N; k++) {
        CH_CHECK_RC(coexec_pool_pop(g_dq_pool, &got[k]), COEXEC_OK);
        CH_CHECK_EQ(dq_index(got[k], DQ_N), want[k]);
    }
    CH_CHECK_RC(coexec_pool_get_size(g_dq_pool, &sz), COEXEC_OK);
    CH_CHECK_EQ(sz, 0);
    for (int k = 0; k < DQ_N; k++)
        CH_CHECK_RC(coexec_pool_push(g_dq_pool, got[k]), COEXEC_OK);
}

static void t_deque_order(void)
{
    ch_init(1);
    g_dq_pool = deque_pool(0);
    ch_stream_t st;
    stream_over(&st, g_dq_pool);
    atomic_store(&g_ran, 0);
    CH_ASSERT_OK(ch_run_ult_in(g_dq_pool, dq_order_body, NULL));
    CU_ASSERT_EQUAL_FATAL(ch_remote_failures(), 0);
    for (int i = 0; i < DQ_N; i++)
        CH_ASSERT_OK(coexec_tasklet_free(&g_dq_k[i]));
    CH_ASSERT_EQ(atomic_load(&g_ran), DQ_N);
    /* From a thread that is not the owner: pushes go to the side queue,
     * which serves them oldest first. */
    unit_set_t s;
    unit_set_make(&s, 4);
    atomic_store(&g_ran, 0);
    for (long i = 0; i < 4; i++)
        CH_ASSERT_OK(coexec_pool_push(g_dq_pool, unit_of(&s, i)));
    CH_ASSERT_OK(ch_stream_free(&st));
    CH_ASSERT_EQ(atomic_load(&g_ran), 4);
    for (long i = 0; i < 4; i++)
        CH_ASSERT_OK(coexec_tasklet_free(&s.k[i]));
    free(s.k);
    free(s.keys);
    ch_finalize();
}

/* The owner runs newest first; a yielder goes behind the others. */
static void dq_yield_body(void *arg)
{
    CH_CHECK_RC(coexec_thread_create(g_dq_pool, name_ult, "X1", NULL, NULL), COEXEC_OK);
    CH_CHECK_RC(coexec_thread_create(g_dq_pool, name_ult, "X2", NULL, NULL), COEXEC_OK);
    CH_CHECK_RC(coexec_thread_create(g_dq_pool, yield_ult, "Y", NULL, NULL), COEXEC_OK);
}

static void t_deque_yield(void)
{
    ch_init(1);
    g_dq_pool = deque_pool(0);
    ch_stream_t st;
    stream_over(&st, g_dq_pool);
    atomic_store(&g_ylog_n, 0);
    CH_ASSERT_OK(ch_run_ult_in(g_dq_pool, dq_yield_body, NULL));
    CU_ASSERT(CH_WAIT(atomic_load(&g_ylog_n) == 4));
    CH_ASSERT_OK(ch_stream_free(&st));
    const char *want[] = {"Y0", "X2", "X1", "Y1"};
    CH_ASSERT_EQ_FATAL(atomic_load(&g_ylog_n), 4);
    for (int i = 0; i < 4; i++)
        CU_ASSERT_STRING_EQUAL(g_ylog[i], want[i]);
    ch_finalize();
}

/* steal_half: a thief takes half of the queued units at once. */
static atomic_int g_sh_go, g_sh_first, g_sh_ran;
static atomic_long g_sh_victim_size, g_sh_into_size;
static coexec_pool_t g_sh_into;

static coexec_poll_status_t sh_tasklet(coexec_poll_t *cx, void *arg)
{
    if (atomic_exchange(&g_sh_first, 0)) {
        size_t a = 0, b = 0;
        CH_CHECK_RC(coexec_pool_get_size(g_dq_pool, &a), COEXEC_OK);
        CH_CHECK_RC(coexec_pool_get_size(g_sh_into, &b), COEXEC_OK);
        atomic_store(&g_sh_victim_size, (long)a);
        atomic_store(&g_sh_into_size, (long)b);
    }
    atomic_fetch_add(&g_sh_ran, 1);
    return COEXEC_READY;
}

static void sh_body(void *arg)
{
    for (int i = 0; i < 16; i++)
        CH_CHECK_RC(coexec_tasklet_create(g_dq_pool, sh_tasklet, NULL, NULL),
                    COEXEC_OK);
    atomic_store(&g_sh_go, 1);
    /* Keep the owner busy (no yield) until the thief has taken them all. */
    double t0 = ch_now();
    while (atomic_load(&g_sh_ran) < 16 && ch_now() - t0 < CH_WAIT_LIMIT_S)
        sched_yield();
}

static void t_deque_steal_half(void)
{
    ch_init(1);
    g_dq_pool = deque_pool(1);
    atomic_store(&g_sh_go, 0);
    atomic_store(&g_sh_first, 1);
    atomic_store(&g_sh_ran, 0);
    ch_stream_t owner;
    stream_over(&owner, g_dq_pool);
    coexec_thread_t body;
    CH_ASSERT_OK_FATAL(coexec_thread_create(g_dq_pool, sh_body, NULL, NULL, &body));
    CU_ASSERT_FATAL(CH_WAIT(atomic_load(&g_sh_go)));
    /* The thief: RANDWS over its own pool, then the victim. */
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &g_sh_into));
    coexec_pool_t tp[2] = {g_sh_into, g_dq_pool};
    ch_stream_t thief = {0};
    thief.pool = g_sh_into;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_RANDWS, tp, 2, NULL, &thief.sched));
    coexec_xstream_attr_t xa;
    CH_ASSERT_OK(coexec_xstream_attr_init(&xa));
    xa.sched = thief.sched;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&xa, &thief.xs));
    CU_ASSERT(CH_WAIT(atomic_load(&g_sh_ran) == 16));
    CH_ASSERT_OK(coexec_thread_free(&body));
    /* The first steal found 16: it ran one, left 8, moved 7. */
    CH_ASSERT_EQ(atomic_load(&g_sh_victim_size), 8);
    CH_ASSERT_EQ(atomic_load(&g_sh_into_size), 7);
    CH_ASSERT_OK(ch_stream_free(&thief));
    CH_ASSERT_OK(ch_stream_free(&owner));
    ch_finalize();
}

/*
 * Concurrency: fork-join trees on several streams (children created by
 * whichever stream runs the parent, joined in place or after a thief ran
 * them), yields, and external threads creating tasklets into the streams;
 * every unit runs exactly once.
 */
enum { FJ_TREES = 4, EXT_THREADS = 2, MAX_STREAMS = 8 };
static atomic_uchar *g_fj_hits;
static long g_fj_n; /* nodes of one tree: 2^(d+1) - 1 */
static atomic_uchar *g_ext_hits;
static long g_ext_per;
static int g_nstreams;
static coexec_xstream_t g_streams[MAX_STREAMS];

static void fj_ult(void *arg)
{
    long g = (long)(intptr_t)arg, tree = g / g_fj_n, id = g % g_fj_n;
    atomic_fetch_add(&g_fj_hits[g], 1);
    long c1 = 2 * id + 1, c2 = 2 * id + 2;
    if (c2 >= g_fj_n)
        return;
    coexec_xstream_t xs;
    coexec_pool_t p;
    CH_CHECK_RC(coexec_xstream_self(&xs), COEXEC_OK);
    CH_CHECK_RC(coexec_xstream_get_main_pool(xs, &p), COEXEC_OK);
    coexec_thread_t t1, t2;
    CH_CHECK_RC(coexec_thread_create(p, fj_ult, (void *)(intptr_t)(tree * g_fj_n + c1),
                                     NULL, &t1), COEXEC_OK);
    CH_CHECK_RC(coexec_thread_create(p, fj_ult, (void *)(intptr_t)(tree * g_fj_n + c2),
                                     NULL, &t2), COEXEC_OK);
    if (id % 7 == 3)
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    CH_CHECK_RC(coexec_thread_free(&t2), COEXEC_OK);
    CH_CHECK_RC(coexec_thread_free(&t1), COEXEC_OK);
}

static coexec_poll_status_t ext_tasklet(coexec_poll_t *cx, void *arg)
{
    atomic_fetch_add(&g_ext_hits[(long)(intptr_t)arg], 1);
    return COEXEC_READY;
}

static void *ext_creator(void *arg)
{
    long id = (long)(intptr_t)arg;
    coexec_tasklet_t *k = calloc((size_t)g_ext_per, sizeof *k);
    for (long j = 0; j < g_ext_per; j++) {
        long i = id * g_ext_per + j;
        CH_CHECK_RC(coexec_tasklet_create_on(g_streams[j % g_nstreams], ext_tasklet,
                                             (void *)(intptr_t)i, &k[j]),
                    COEXEC_OK);
        if (j % 16 == 15) /* join some early, in batches */
            for (long m = j - 15; m <= j; m++)
                CH_CHECK_RC(coexec_tasklet_free(&k[m]), COEXEC_OK);
    }
    for (long j = g_ext_per - g_ext_per % 16; j < g_ext_per; j++)
        CH_CHECK_RC(coexec_tasklet_free(&k[j]), COEXEC_OK);
    free(k);
    return NULL;
}

/* Runs the workload over streams g_streams[0..g_nstreams). */
static void run_fj_workload(void)
{
    int depth = 0;
    long target = ch_iters(8192, 256);
    while ((2L << (depth + 1)) - 1 <= target)
        depth++;
    g_fj_n = (2L << depth) - 1;
    g_ext_per = ch_iters(4000, 100);
    long nfj = FJ_TREES * g_fj_n, next = EXT_THREADS * g_ext_per;
    g_fj_hits = calloc((size_t)nfj, 1);
    g_ext_hits = calloc((size_t)next, 1);
    CU_ASSERT_FATAL(g_fj_hits && g_ext_hits);
    ch_pthread_t th[EXT_THREADS];
    for (int i = 0; i < EXT_THREADS; i++)
        ch_pthread_start(&th[i], ext_creator, (void *)(intptr_t)i);
    coexec_thread_t roots[FJ_TREES];
    for (int t = 0; t < FJ_TREES; t++)
        CH_ASSERT_OK(coexec_thread_create_on(g_streams[t % g_nstreams], fj_ult,
                                             (void *)(intptr_t)(t * g_fj_n), NULL,
                                             &roots[t]));
    for (int t = 0; t < FJ_TREES; t++)
        CH_ASSERT_OK(coexec_thread_free(&roots[t]));
    for (int i = 0; i < EXT_THREADS; i++)
        ch_pthread_join(&th[i]);
    long bad = 0;
    for (long i = 0; i < nfj; i++)
        bad += g_fj_hits[i] != 1;
    CH_ASSERT_EQ(bad, 0);
    bad = 0;
    for (long i = 0; i < next; i++)
        bad += g_ext_hits[i] != 1;
    CH_ASSERT_EQ(bad, 0);
    free(g_fj_hits);
    free(g_ext_hits);
}

/* The work-stealing setup: every stream's default pool is a DEQUE. */
static void t_deque_randws_default(void)
{
    ch_init_ex(4, COEXEC_SCHED_RANDWS, 1);
    g_nstreams = 4;
    for (int i = 0; i < 4; i++) {
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(i, &g_streams[i]));
        coexec_pool_t p;
        coexec_pool_kind_t kind;
        CH_ASSERT_OK(coexec_xstream_get_main_pool(g_streams[i], &p));
        CH_ASSERT_OK(coexec_pool_get_info(p, &kind, NULL));
        CH_ASSERT_EQ(kind, COEXEC_POOL_DEQUE);
    }
    run_fj_workload();
    ch_finalize();
}

/* User DEQUE pools with steal_half, RANDWS streams stealing from each
 * other's pools. */
static void t_deque_user_steal_half(void)
{
    ch_init(1);
    enum { NS = 4 };
    coexec_pool_t pools[NS];
    coexec_sched_t scheds[NS];
    for (int i = 0; i < NS; i++)
        pools[i] = deque_pool(1);
    for (int i = 0; i < NS; i++) {
        coexec_pool_t mine[NS];
        for (int k = 0; k < NS; k++)
            mine[k] = pools[(i + k) % NS];
        CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_RANDWS, mine, NS, NULL,
                                               &scheds[i]));
        coexec_xstream_attr_t xa;
        CH_ASSERT_OK(coexec_xstream_attr_init(&xa));
        xa.sched = scheds[i];
        CH_ASSERT_OK_FATAL(coexec_xstream_create(&xa, &g_streams[i]));
    }
    g_nstreams = NS;
    run_fj_workload();
    for (int i = 0; i < NS; i++)
        CH_ASSERT_OK(coexec_xstream_free(&g_streams[i]));
    for (int i = 0; i < NS; i++) {
        size_t sz = 1;
        CH_ASSERT_OK(coexec_pool_get_size(pools[i], &sz));
        CH_ASSERT_EQ(sz, 0);
        CH_ASSERT_OK(coexec_sched_free(&scheds[i]));
    }
    /* Each pool served every scheduler: free them once all are gone. */
    for (int i = 0; i < NS; i++)
        CH_ASSERT_OK(coexec_pool_free(&pools[i]));
    ch_finalize();
}

/* ======================================================================= */
/* remove                                                                   */
/* ======================================================================= */

/* coexec_pool_remove takes queued units out of list and priority pools of
 * every access mode: the rest keep their order, a removed unit is the
 * caller's (pushed again, it runs once), a second remove is ESTATE. */
static void check_remove(coexec_pool_kind_t kind, coexec_pool_access_t acc)
{
    enum { N = 8 };
    coexec_pool_t pool;
    CH_ASSERT_OK_FATAL(coexec_pool_create(kind, acc, &pool));
    coexec_unit_t u[N];
    coexec_thread_t t[N];
    coexec_tasklet_t k[N];
    make_mixed(pool, N, u, t, k);
    static const int gone[] = {3, 0, 6};
    for (int g = 0; g < 3; g++)
        CH_ASSERT_OK(coexec_pool_remove(pool, u[gone[g]]));
    for (int g = 0; g < 3; g++)
        CH_ASSERT_RC(coexec_pool_remove(pool, u[gone[g]]), COEXEC_ESTATE);
    size_t sz = 0;
    CH_ASSERT_OK(coexec_pool_get_size(pool, &sz));
    CH_ASSERT_EQ(sz, N - 3);
    /* The others, in the pool's order (a LIFO backwards). */
    static const int left[] = {1, 2, 4, 5, 7};
    for (int i = 0; i < N - 3; i++) {
        coexec_unit_t got;
        CH_ASSERT_OK(coexec_pool_pop(pool, &got));
        int want = kind == COEXEC_POOL_LIFO ? left[N - 4 - i] : left[i];
        CU_ASSERT(CH_SAME(got, u[want]));
    }
    coexec_unit_t none;
    CH_ASSERT_OK(coexec_pool_pop(pool, &none));
    CU_ASSERT(CH_IS_NULL(none));
    /* Queued elsewhere (the primary's pool) once requeued: not here. */
    requeue(u[1]);
    CH_ASSERT_RC(coexec_pool_remove(pool, u[1]), COEXEC_ESTATE);
    CH_ASSERT_OK(coexec_pool_pop(primary_pool(), &none));
    CU_ASSERT(CH_SAME(none, u[1]));
    finish_mixed(N, u, t, k);
    CH_ASSERT_OK(coexec_pool_free(&pool));
}

static void t_remove_lists(void)
{
    ch_init(1);
    static const coexec_pool_kind_t kinds[] = {
        COEXEC_POOL_FIFO, COEXEC_POOL_LIFO, COEXEC_POOL_PRIO};
    for (int k = 0; k < 3; k++)
        for (int acc = COEXEC_ACCESS_PRIV; acc <= COEXEC_ACCESS_MPMC; acc++)
            check_remove(kinds[k], (coexec_pool_access_t)acc);
    ch_finalize();
}

/* The wrong handles, a unit that is not queued, a user pool without
 * ops.remove. */
static int up_noremove_init(coexec_pool_t pool, void *arg, void **state)
{
    (void)pool;
    *state = arg;
    return COEXEC_OK;
}
static void up_noremove_push(void *state, coexec_unit_t unit,
                             coexec_push_kind_t kind)
{
    (void)kind;
    coexec_unit_t *slot = state;
    *slot = unit;
}
static coexec_unit_t up_noremove_pop(void *state)
{
    coexec_unit_t *slot = state, u = *slot;
    memset(slot, 0, sizeof *slot);
    return u;
}
static size_t up_noremove_size(void *state)
{
    coexec_unit_t *slot = state;
    return slot->p != NULL;
}

/* A user pool of one slot, without ops.remove. */
static coexec_pool_t slot_pool_create(coexec_unit_t *slot)
{
    coexec_pool_ops_t ops = {.size = sizeof ops, .init = up_noremove_init,
                             .push = up_noremove_push, .pop = up_noremove_pop,
                             .get_size = up_noremove_size};
    coexec_pool_t up = {0};
    CH_ASSERT_OK_FATAL(coexec_pool_create_user(&ops, COEXEC_ACCESS_MPMC, slot, &up));
    return up;
}

static void t_remove_errors(void)
{
    ch_init(1);
    coexec_pool_t pool, stale;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pool));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &stale));
    coexec_pool_t gone = stale;
    CH_ASSERT_OK(coexec_pool_free(&stale));
    coexec_tasklet_t k;
    CH_ASSERT_OK_FATAL(coexec_tasklet_create(pool, noop_tasklet, NULL, &k));
    coexec_unit_t u = coexec_tasklet_unit(k), nul = {0};
    CH_ASSERT_RC(coexec_pool_remove(gone, u), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_pool_remove(pool, nul), COEXEC_EHANDLE);
    /* The calling ULT itself: running, in no pool. */
    coexec_thread_t me;
    CH_ASSERT_OK(coexec_thread_self(&me));
    CH_ASSERT_RC(coexec_pool_remove(pool, coexec_thread_unit(me)), COEXEC_ESTATE);
    /* Finished and freed: a stale unit handle. */
    CH_ASSERT_OK(coexec_pool_remove(pool, u));
    atomic_store(&g_ran, 0);
    requeue(u);
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_EQ(atomic_load(&g_ran), 1);
    CH_ASSERT_RC(coexec_pool_remove(pool, u), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_pool_free(&pool));

    /* A user pool without ops.remove cannot. */
    coexec_unit_t slot = {0};
    coexec_pool_t up = slot_pool_create(&slot);
    CH_ASSERT_OK_FATAL(coexec_tasklet_create(up, noop_tasklet, NULL, &k));
    u = coexec_tasklet_unit(k);
    CH_ASSERT_RC(coexec_pool_remove(up, u), COEXEC_ENOSYS);
    coexec_unit_t got;
    CH_ASSERT_OK(coexec_pool_pop(up, &got));
    CU_ASSERT(CH_SAME(got, u));
    requeue(u);
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_OK(coexec_pool_free(&up));
    ch_finalize();
}

/* Removes race a stream that pops the same pool: each unit is removed by
 * the caller or run by the stream, never both, never lost; the removed
 * ones run once when pushed again. */
static void t_remove_races_pop(void)
{
    ch_init(1);
    long n = ch_iters(20000, 1000);
    hits_alloc(n);
    coexec_tasklet_t *k = calloc((size_t)n, sizeof *k);
    char *removed = calloc((size_t)n, 1);
    ch_stream_t st;
    CH_ASSERT_OK_FATAL(ch_stream_create(&st, COEXEC_SCHED_BASIC));
    long nremoved = 0;
    for (long i = 0; i < n; i++) {
        CH_ASSERT_OK_FATAL(coexec_tasklet_create(st.pool, hit_tasklet, (void *)(intptr_t)i, &k[i]));
        /* Every other unit at once, the rest a few creations later. */
        long j = i % 2 ? i : i - 6;
        if (j < 0)
            continue;
        int rc = coexec_pool_remove(st.pool, coexec_tasklet_unit(k[j]));
        if (rc == COEXEC_OK) {
            removed[j] = 1;
            nremoved++;
        } else {
            CH_ASSERT_EQ(rc, COEXEC_ESTATE);
        }
    }
    long ran_before = 0;
    for (long i = 0; i < n; i++)
        if (removed[i])
            ran_before += atomic_load(&g_hits[i]) != 0;
    CH_ASSERT_EQ(ran_before, 0);
    for (long i = 0; i < n; i++)
        if (removed[i])
            requeue(coexec_tasklet_unit(k[i]));
    for (long i = 0; i < n; i++)
        CH_ASSERT_OK(coexec_tasklet_free(&k[i]));
    CH_ASSERT_OK(ch_stream_free(&st));
    long bad = 0;
    for (long i = 0; i < n; i++)
        bad += atomic_load(&g_hits[i]) != 1;
    CH_ASSERT_EQ(bad, 0);
    CH_ASSERT_EQ(atomic_load(&g_order_n), n);
    /* Both sides won some (the stream is slower to start than a remove). */
    CU_ASSERT(nremoved > 0);
    hits_free();
    free(k);
    free(removed);
    ch_finalize();
}

/* A ULT that yields until told to stop, counting its runs, and the rank
 * of the stream of its last run. */
typedef struct {
    atomic_long runs;
    atomic_int stop;
    atomic_int rank;
} yielder_t;

static void yielder(void *arg)
{
    yielder_t *y = arg;
    for (;;) {
        atomic_fetch_add(&y->runs, 1);
        atomic_store(&y->rank, ch_self_rank());
        if (atomic_load(&y->stop))
            return;
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    }
}

/* A unit that ran and was queued again (a ULT that yielded) is removed as
 * well: it runs no more until the caller pushes it somewhere, then goes on
 * where it left off. In every pool kind, from a thread that does not own
 * the pool. A gate ULT that holds the stream without yielding keeps the
 * yielder queued for the remove: a yield with nothing else in the pool
 * returns at once, so without it the yielder is queued only for a few
 * instructions now and then. */
static void t_remove_started(void)
{
    ch_init(1);
    static const coexec_pool_kind_t kinds[] = {
        COEXEC_POOL_FIFO, COEXEC_POOL_LIFO, COEXEC_POOL_PRIO,
        COEXEC_POOL_DEQUE};
    for (int k = 0; k < 4; k++) {
        ch_stream_t st;
        CH_ASSERT_OK_FATAL(ch_stream_create_ex(&st, COEXEC_SCHED_BASIC, kinds[k],
                                               COEXEC_ACCESS_MPMC));
        yielder_t y;
        atomic_init(&y.runs, 0);
        atomic_init(&y.stop, 0);
        atomic_init(&y.rank, -1);
        ch_gate_t gate;
        ch_gate_init(&gate);
        coexec_thread_t t, gt;
        CH_ASSERT_OK_FATAL(coexec_thread_create(st.pool, yielder, &y, NULL, &t));
        CH_WAIT(atomic_load(&y.runs) >= 3);
        CH_ASSERT_OK_FATAL(coexec_thread_create(st.pool, ch_gate_ult, &gate, NULL, &gt));
        CH_WAIT(atomic_load(&gate.running));
        /* The gate holds the stream, so the yielder is queued. */
        coexec_unit_t u = coexec_thread_unit(t);
        int rc = coexec_pool_remove(st.pool, u);
        CH_ASSERT_RC(rc, COEXEC_OK);
        atomic_store(&gate.open, 1);
        CH_ASSERT_OK(coexec_thread_join(gt));
        CH_ASSERT_OK(coexec_thread_free(&gt));
        if (rc != COEXEC_OK) {
            /* Never leave the ULT running on this frame's counters. */
            atomic_store(&y.stop, 1);
            CH_ASSERT_OK(coexec_thread_join(t));
            CH_ASSERT_OK(coexec_thread_free(&t));
            CH_ASSERT_OK(ch_stream_free(&st));
            continue;
        }
        /* Ours now: in no pool, not run, while its stream is idle. */
        long held = atomic_load(&y.runs);
        CH_ASSERT_EQ(ch_thread_state(t), COEXEC_UNIT_READY);
        ch_linger(2);
        CH_ASSERT_EQ(atomic_load(&y.runs), held);
        CH_ASSERT_EQ(atomic_load(&y.rank), st.rank);
        /* Pushed into the primary's pool, it resumes there and ends. */
        atomic_store(&y.stop, 1);
        requeue(u);
        CH_ASSERT_OK(coexec_thread_join(t));
        CH_ASSERT_EQ(atomic_load(&y.runs), held + 1);
        CH_ASSERT_EQ(atomic_load(&y.rank), 0);
        CH_ASSERT_OK(coexec_thread_free(&t));
        CH_ASSERT_OK(ch_stream_free(&st));
    }
    ch_finalize();
}

static const ch_test_t remove_tests[] = {
    {"lists_every_mode", t_remove_lists},
    {"errors", t_remove_errors},
    {"races_pop", t_remove_races_pop},
    {"started_units_too", t_remove_started},
    {NULL, NULL}};

/* ======================================================================= */
/* foreach                                                                  */
/* ======================================================================= */

/* What coexec_pool_foreach visited: indices in a unit set. */
typedef struct {
    const unit_set_t *set;
    long idx[64];
    int n;
} seen_t;

static void seen_add(void *arg, coexec_unit_t u)
{
    seen_t *v = arg;
    if (v->n < 64)
        v->idx[v->n] = unit_index(v->set, u);
    v->n++;
}

/* coexec_pool_foreach visits the queued units in the order pops then take
 * them, for every built-in kind (a PRIO pool strict, priorities mixed; a
 * deque no stream serves queues in its side queue), and changes nothing. */
static void t_foreach_pop_order(void)
{
    ch_init(1);
    enum { N = 12 };
    for (int kind = 0; kind < 4; kind++) {
        for (int acc = COEXEC_ACCESS_PRIV; acc <= COEXEC_ACCESS_MPMC; acc++) {
            unit_set_t s;
            unit_set_make(&s, N);
            coexec_pool_t pool;
            if (kind == COEXEC_POOL_PRIO) {
                pool = prio_pool(4, 0, (coexec_pool_access_t)acc);
            } else {
                CH_ASSERT_OK_FATAL(coexec_pool_create((coexec_pool_kind_t)kind,
                                                      (coexec_pool_access_t)acc,
                                                      &pool));
            }
            for (long i = 0; i < N; i++) {
                if (kind == COEXEC_POOL_PRIO)
                    push_prio(pool, &s, i, (int)(i % 5));
                else
                    CH_ASSERT_OK(coexec_pool_push(pool, unit_of(&s, i)));
            }
            seen_t v = {.set = &s};
            CH_ASSERT_OK(coexec_pool_foreach(pool, seen_add, &v));
            CH_ASSERT_EQ(v.n, N);
            size_t sz = 0;
            CH_ASSERT_OK(coexec_pool_get_size(pool, &sz));
            CH_ASSERT_EQ(sz, N);
            long bad = 0;
            for (int k = 0; k < N; k++)
                bad += pop_index(pool, &s) != v.idx[k];
            CH_ASSERT_EQ(bad, 0);
            CH_ASSERT_EQ(pop_index(pool, &s), -1);
            /* An empty pool: nothing visited. */
            v.n = 0;
            CH_ASSERT_OK(coexec_pool_foreach(pool, seen_add, &v));
            CH_ASSERT_EQ(v.n, 0);
            CH_ASSERT_OK(coexec_pool_free(&pool));
            unit_set_free(&s);
        }
    }
    ch_finalize();
}

static void count_visit(void *arg, coexec_unit_t u)
{
    (void)u;
    (*(long *)arg)++;
}

/* Errors; a user pool lists its own units (ENOSYS). */
static void t_foreach_errors(void)
{
    ch_init(1);
    coexec_pool_t pool, gone, nul = {0};
    long n = 0;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pool));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &gone));
    coexec_pool_t stale = gone;
    CH_ASSERT_OK(coexec_pool_free(&gone));
    CH_ASSERT_RC(coexec_pool_foreach(pool, NULL, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_foreach(stale, count_visit, &n), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_pool_foreach(nul, count_visit, &n), COEXEC_EHANDLE);
    CH_ASSERT_EQ(n, 0);
    CH_ASSERT_OK(coexec_pool_free(&pool));
    coexec_unit_t slot = {0};
    coexec_pool_t up = slot_pool_create(&slot);
    CH_ASSERT_RC(coexec_pool_foreach(up, count_visit, &n), COEXEC_ENOSYS);
    CH_ASSERT_OK(coexec_pool_free(&up));
    ch_finalize();
}

/* Listings taken while a stream pops and runs the pool's units: never more
 * than were queued, and every unit still runs once. */
static void t_foreach_while_served(void)
{
    ch_init(1);
    long n = ch_iters(4000, 400);
    hits_alloc(n);
    ch_stream_t st;
    CH_ASSERT_OK_FATAL(ch_stream_create(&st, COEXEC_SCHED_BASIC));
    long over = 0;
    for (long i = 0; i < n; i++) {
        CH_ASSERT_OK_FATAL(coexec_tasklet_create(st.pool, hit_tasklet, (void *)(intptr_t)i, NULL));
        long seen = 0;
        CH_ASSERT_OK(coexec_pool_foreach(st.pool, count_visit, &seen));
        over += seen > i + 1;
    }
    CH_ASSERT_EQ(over, 0);
    CH_ASSERT_OK(ch_stream_free(&st));
    long bad = 0;
    for (long i = 0; i < n; i++)
        bad += atomic_load(&g_hits[i]) != 1;
    CH_ASSERT_EQ(bad, 0);
    hits_free();
    ch_finalize();
}

/* A deque does not list the units its owner pushed at its bottom (its
 * array, popped and stolen without the lock): the owner's listing of its
 * own eight is empty; they all run. */
typedef struct {
    coexec_pool_t pool;
    coexec_tasklet_t k[8];
    seen_t v;
    unit_set_t s; /* only its keys: indices of k */
    int rc;
} dq_owner_t;

static void dq_owner_ult(void *arg)
{
    dq_owner_t *d = arg;
    for (int i = 0; i < 8; i++)
        CH_CHECK_RC(coexec_tasklet_create(d->pool, noop_tasklet, NULL, &d->k[i]), COEXEC_OK);
    d->s.n = 8;
    d->s.keys = calloc(8, sizeof *d->s.keys);
    for (int i = 0; i < 8; i++) {
        d->s.keys[i].u = coexec_tasklet_unit(d->k[i]);
        d->s.keys[i].idx = i;
    }
    qsort(d->s.keys, 8, sizeof *d->s.keys, key_cmp);
    d->v.set = &d->s;
    d->rc = coexec_pool_foreach(d->pool, seen_add, &d->v);
}

static void t_foreach_deque_owner(void)
{
    ch_init(1);
    ch_stream_t st;
    CH_ASSERT_OK_FATAL(ch_stream_create_ex(&st, COEXEC_SCHED_RANDWS, COEXEC_POOL_DEQUE,
                                           COEXEC_ACCESS_MPMC));
    dq_owner_t d;
    memset(&d, 0, sizeof d);
    d.pool = st.pool;
    atomic_store(&g_ran, 0);
    coexec_thread_t t;
    CH_ASSERT_OK_FATAL(coexec_thread_create(st.pool, dq_owner_ult, &d, NULL, &t));
    /* (A free would run it here, on a stream that does not own the deque.) */
    CH_ASSERT_OK(coexec_thread_wait_free(&t));
    CH_ASSERT_OK(d.rc);
    CH_ASSERT_EQ(d.v.n, 0);
    for (int i = 0; i < 8; i++)
        CH_ASSERT_OK(coexec_tasklet_free(&d.k[i]));
    CH_ASSERT_EQ(atomic_load(&g_ran), 8);
    free(d.s.keys);
    CH_ASSERT_OK(ch_stream_free(&st));
    ch_finalize();
}

static const ch_test_t foreach_tests[] = {
    {"pop_order_every_kind", t_foreach_pop_order},
    {"deque_owner_unlisted", t_foreach_deque_owner},
    {"errors", t_foreach_errors},
    {"while_served", t_foreach_while_served},
    {NULL, NULL}};

static const ch_test_t order_tests[] = {
    {"fifo_every_mode", t_fifo_order},
    {"lifo_every_mode", t_lifo_order},
    {"run_order_on_stream", t_run_order},
    {NULL, NULL}};
static const ch_test_t size_tests[] = {{"size_and_info", t_size_info},
                                       {NULL, NULL}};
static const ch_test_t busy_tests[] = {
    {"free_nonempty_ebusy", t_free_nonempty},
    {"free_used_by_sched_ebusy", t_free_used_by_sched},
    {"free_home_of_running_ebusy", t_free_home_of_running},
    {"free_home_of_parked_ebusy", t_free_home_of_parked},
    {NULL, NULL}};
/* ======================================================================= */
/* the lock's owner bias                                                     */
/* ======================================================================= */

/*
 * A shared list pool's lock is biased to the first stream that holds it:
 * that stream then pushes, takes, claims and yields through the pool
 * without an atomic read-modify-write, and the first other thread to hold
 * it revokes the bias. Each round: stream S serves [Q, P]; a driver ULT on
 * S (in Q) creates batches of tasklets in P and frees them (claimed in
 * place), and ULTs in P yield through it, so S holds P's lock in every way
 * it can; once S has worked a while (and, where the bias is available,
 * holds P's), the main ULT and an external thread push tasklets into P
 * while S goes on: their first holds revoke S's bias in the middle of its
 * work. Every unit runs exactly once, and the dump shows the bias before
 * and not after. With COEXEC_POOL_BIAS=0 the same holds, with no bias.
 */
static struct {
    coexec_pool_t pool;
    atomic_long owner_made, owner_runs, foreign_runs, yielders, yields_done;
    atomic_int started, stop;
    long foreign;
} g_bias;

static coexec_poll_status_t bias_count(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    atomic_fetch_add((atomic_long *)arg, 1);
    return COEXEC_READY;
}

static void bias_yielder(void *arg)
{
    (void)arg;
    for (int i = 0; i < 6; i++)
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    atomic_fetch_add(&g_bias.yields_done, 1);
}

static void bias_driver(void *arg)
{
    (void)arg;
    for (long r = 0; !atomic_load(&g_bias.stop) && r < 1000000; r++) {
        coexec_tasklet_t t[16];
        for (int i = 0; i < 16; i++)
            CH_CHECK_RC(coexec_tasklet_create(g_bias.pool, bias_count,
                                              &g_bias.owner_runs, &t[i]),
                        COEXEC_OK);
        atomic_fetch_add(&g_bias.owner_made, 16);
        if (r % 4 == 0) {
            atomic_fetch_add(&g_bias.yielders, 1);
            CH_CHECK_RC(coexec_thread_create(g_bias.pool, bias_yielder, NULL,
                                             NULL, NULL),
                        COEXEC_OK);
        }
        for (int i = 0; i < 16; i++)
            CH_CHECK_RC(coexec_tasklet_free(&t[i]), COEXEC_OK);
        if (r == 16)
            atomic_store(&g_bias.started, 1);
        if (r % 2)
            CH_CHECK_RC(coexec_yield(), COEXEC_OK); /* the yielders run */
    }
}

static void *bias_foreign_thread(void *arg)
{
    (void)arg;
    for (long i = 0; i < g_bias.foreign; i++)
        CH_CHECK_RC(coexec_tasklet_create(g_bias.pool, bias_count,
                                          &g_bias.foreign_runs, NULL),
                    COEXEC_OK);
    return NULL;
}

/* Whether the line starting at line holds needle. */
static bool line_has(const char *line, const char *needle)
{
    const char *end = strchr(line, '\n');
    const char *at = strstr(line, needle);
    return at && (!end || at < end);
}

/* The dump's line of S's pool P (its second), in buf. */
static void bias_dump(char **buf, const char **pline)
{
    *buf = ch_info_dump(COEXEC_INFO_STREAMS);
    *pline = NULL;
    /* Streams are printed by rank: S is the last one. */
    const char *s = strstr(*buf, "stream 1:");
    if (s)
        *pline = strstr(s, "pool 1:");
}

static void bias_round(bool available)
{
    memset(&g_bias, 0, sizeof g_bias);
    g_bias.foreign = ch_iters(2000, 200);
    coexec_pool_t pools[2];
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC,
                                          &pools[0]));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC,
                                          &pools[1]));
    g_bias.pool = pools[1];
    coexec_sched_t sched;
    CH_ASSERT_OK_FATAL(
        coexec_sched_create(COEXEC_SCHED_BASIC, pools, 2, NULL, &sched));
    coexec_xstream_attr_t a;
    CH_ASSERT_OK(coexec_xstream_attr_init(&a));
    a.sched = sched;
    coexec_xstream_t xs;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&a, &xs));
    coexec_thread_t driver;
    CH_ASSERT_OK_FATAL(
        coexec_thread_create(pools[0], bias_driver, NULL, NULL, &driver));
    CH_WAIT(atomic_load(&g_bias.started));
    char *buf = NULL;
    const char *line;
    bias_dump(&buf, &line);
    CU_ASSERT_FATAL(line != NULL);
    /* Before any other thread held P: S's, where there is a bias. */
    CH_ASSERT_EQ(line_has(line, "lock biased to stream 1"), available);
    free(buf);
    ch_pthread_t th;
    ch_pthread_start(&th, bias_foreign_thread, NULL);
    for (long i = 0; i < g_bias.foreign; i++)
        CH_ASSERT_OK(coexec_tasklet_create(g_bias.pool, bias_count,
                                           &g_bias.foreign_runs, NULL));
    ch_pthread_join(&th);
    atomic_store(&g_bias.stop, 1);
    CH_ASSERT_OK(coexec_thread_free(&driver));
    CH_WAIT(atomic_load(&g_bias.foreign_runs) == 2 * g_bias.foreign &&
            atomic_load(&g_bias.yields_done) ==
                atomic_load(&g_bias.yielders));
    CH_ASSERT_EQ(atomic_load(&g_bias.owner_runs),
                 atomic_load(&g_bias.owner_made));
    bias_dump(&buf, &line);
    CU_ASSERT_FATAL(line != NULL);
    CU_ASSERT(!line_has(line, "lock biased")); /* revoked */
    free(buf);
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    CH_ASSERT_OK(coexec_sched_free(&sched));
    CH_ASSERT_OK(coexec_pool_free(&pools[0]));
    CH_ASSERT_OK(coexec_pool_free(&pools[1]));
}

static void t_bias_revoked_while_owner_works(void)
{
    long rounds = ch_iters(12, 2);
    for (int off = 0; off < 2; off++) {
        if (off)
            CH_ASSERT_EQ(setenv("COEXEC_POOL_BIAS", "0", 1), 0);
        ch_init(1);
        char *buf = ch_info_dump(COEXEC_INFO_STREAMS);
        bool available = strstr(buf, "pool lock bias available") != NULL;
        /* Off when asked; on where the kernel allows it (a process under
         * valgrind may not be allowed membarrier). */
        if (off)
            CU_ASSERT(!available);
        free(buf);
        for (long r = 0; r < rounds; r++)
            bias_round(available);
        ch_finalize();
        if (off)
            CH_ASSERT_EQ(unsetenv("COEXEC_POOL_BIAS"), 0);
    }
}

static const ch_test_t bias_tests[] = {
    {"revoked_while_owner_works", t_bias_revoked_while_owner_works},
    {NULL, NULL}};

static const ch_test_t conc_tests[] = {
    {"mpmc_4_pthreads_push_pop", t_mpmc},
    {"mpmc_producers_consumers", t_mpmc_roles},
    {"mpsc_3_producers", t_mpsc},
    {"spmc_3_consumers", t_spmc},
    {"spsc", t_spsc},
    {"mpsc_served_by_stream", t_served_mpsc},
    {"spsc_served_by_stream", t_served_spsc},
    {NULL, NULL}};
static const ch_test_t access_tests[] = {{"forbidden_thread_eaccess", t_access_checks},
                                         {NULL, NULL}};
static const ch_test_t push_state_tests[] = {{"push_wrong_state", t_push_state},
                                             {NULL, NULL}};
static const ch_test_t errors_tests[] = {{"args_and_handles", t_errors},
                                         {NULL, NULL}};

static const ch_test_t prio_tests[] = {
    {"order_levels_fifo", t_prio_order},
    {"attr_priority", t_prio_attr},
    {"yield_behind", t_prio_yield},
    {"aging_steps_and_strict", t_prio_aging_steps},
    {"aging_under_pushers", t_prio_aging_served},
    {"remove_in_place", t_prio_remove},
    {NULL, NULL}};
static const ch_test_t deque_tests[] = {
    {"owner_lifo_steal_oldest", t_deque_order},
    {"yield_behind", t_deque_yield},
    {"steal_half", t_deque_steal_half},
    {"randws_default_4_streams", t_deque_randws_default},
    {"user_pools_steal_half", t_deque_user_steal_half},
    {NULL, NULL}};
static const ch_suite_t suites[] = {
    {"order", order_tests},   {"size", size_tests},
    {"busy", busy_tests},     {"concurrency", conc_tests},
    {"access", access_tests}, {"push_state", push_state_tests},
    {"errors", errors_tests}, {"prio", prio_tests},
    {"deque", deque_tests},   {"remove", remove_tests},
    {"foreach", foreach_tests}, {"bias", bias_tests}, {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
