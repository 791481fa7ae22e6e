/*
 * tests/pool/test_pool.c: pool order (FIFO/LIFO), size, EBUSY rules, access
 * modes under the concurrency each allows, access checks (COEXEC_CHECKS
 * builds), push of units in the wrong state, argument errors.
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
    for (int i = 0; i < N; i++) {
        if (i % 2) {
            CH_ASSERT_OK_FATAL(coexec_thread_create(pool, noop_ult, NULL, NULL, &t[i]));
            u[i] = coexec_thread_unit(t[i]);
        } else {
            CH_ASSERT_OK_FATAL(coexec_tasklet_create(pool, noop_tasklet, NULL, &k[i]));
            u[i] = coexec_tasklet_unit(k[i]);
        }
    }
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
    atomic_store(&g_ran, 0);
    for (int i = 0; i < N; i++)
        requeue(u[i]);
    for (int i = 0; i < N; i++) {
        if (i % 2)
            CH_ASSERT_OK(coexec_thread_free(&t[i]));
        else
            CH_ASSERT_OK(coexec_tasklet_free(&k[i]));
    }
    CH_ASSERT_EQ(atomic_load(&g_ran), N);
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
    g_hits = calloc((size_t)n, sizeof *g_hits);
    g_order = calloc((size_t)n, sizeof *g_order);
    atomic_store(&g_order_n, 0);
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
    free(g_hits);
    free(g_order);
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

static int thread_state(coexec_thread_t t)
{
    coexec_unit_state_t st;
    int rc = coexec_thread_get_state(t, &st);
    return rc == COEXEC_OK ? (int)st : rc;
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
    CH_WAIT(thread_state(t) == COEXEC_UNIT_BLOCKED);
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

static const ch_suite_t suites[] = {
    {"order", order_tests},   {"size", size_tests},
    {"busy", busy_tests},     {"concurrency", conc_tests},
    {"access", access_tests}, {"push_state", push_state_tests},
    {"errors", errors_tests}, {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
