/*
 * tests/sched/test_stack.c: user-defined pools and schedulers, stacked
 * schedulers, the PRIO and RANDWS schedulers, work stealing over DEQUE
 * pools, migration and pinning, yield_to, child-first creation, replacing
 * a stream's main scheduler, and access checks of user pools.
 *
 * Every verdict is a value, an order or a count; waits are bounded by
 * CH_WAIT (a hang guard, never a verdict). Loop sizes follow
 * COEXEC_TEST_SCALE through ch_iters.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ======================================================================= */
/* shared helpers                                                           */
/* ======================================================================= */

/* An order log: values appended by units, read after they ran. */
#define OLOG_MAX 1024
typedef struct olog {
    atomic_int n;
    atomic_int v[OLOG_MAX];
} olog_t;

static void olog_reset(olog_t *l) { atomic_store(&l->n, 0); }

static void olog_add(olog_t *l, int v)
{
    int i = atomic_fetch_add(&l->n, 1);
    if (i < OLOG_MAX)
        atomic_store(&l->v[i], v);
}

/* Asserts that l holds exactly want[0..n). */
static void olog_expect(olog_t *l, const int *want, int n, const char *what)
{
    int got = atomic_load(&l->n);
    CH_ASSERT_EQ(got, n);
    char buf[1024];
    int len = 0, bad = 0;
    for (int i = 0; i < n && i < got && i < OLOG_MAX; i++)
        bad |= atomic_load(&l->v[i]) != want[i];
    if (!bad && got == n)
        return;
    len += snprintf(buf + len, sizeof buf - (size_t)len, "%s: got", what);
    for (int i = 0; i < got && i < OLOG_MAX && len < 900; i++)
        len += snprintf(buf + len, sizeof buf - (size_t)len, " %d",
                        atomic_load(&l->v[i]));
    len += snprintf(buf + len, sizeof buf - (size_t)len, "; want");
    for (int i = 0; i < n && len < 1000; i++)
        len += snprintf(buf + len, sizeof buf - (size_t)len, " %d", want[i]);
    CU_assertImplementation(CU_FALSE, __LINE__, buf, __FILE__, "", CU_FALSE);
}

/* Per-unit run counters: every unit must run exactly once. */
static atomic_int *g_hits;
static long g_nhits;
static atomic_long g_hit_total;

static void hits_new(long n)
{
    g_hits = calloc((size_t)n, sizeof *g_hits);
    g_nhits = n;
    atomic_store(&g_hit_total, 0);
    CU_ASSERT_FATAL(g_hits != NULL);
}

static void hit(long i)
{
    if (i >= 0 && i < g_nhits)
        atomic_fetch_add(&g_hits[i], 1);
    atomic_fetch_add(&g_hit_total, 1);
}

/* Number of units that did not run exactly once; frees the counters. */
static long hits_bad_and_free(void)
{
    long bad = 0;
    for (long i = 0; i < g_nhits; i++)
        bad += atomic_load(&g_hits[i]) != 1;
    free(g_hits);
    g_hits = NULL;
    g_nhits = 0;
    return bad;
}

static int self_rank(void)
{
    int r = -1;
    CH_CHECK_RC(coexec_xstream_self_rank(&r), COEXEC_OK);
    return r;
}

static coexec_sched_t self_sched(void)
{
    coexec_sched_t s = {0};
    CH_CHECK_RC(coexec_sched_self(&s), COEXEC_OK);
    return s;
}

static coexec_thread_t self_thread(void)
{
    coexec_thread_t t = {0};
    CH_CHECK_RC(coexec_thread_self(&t), COEXEC_OK);
    return t;
}

static coexec_unit_state_t state_of(coexec_thread_t t)
{
    coexec_unit_state_t st = COEXEC_UNIT_READY;
    CH_CHECK_RC(coexec_thread_get_state(t, &st), COEXEC_OK);
    return st;
}

static size_t pool_size(coexec_pool_t p)
{
    size_t n = 0;
    CH_CHECK_RC(coexec_pool_get_size(p, &n), COEXEC_OK);
    return n;
}

/* The state a user pool's (scheduler's) init made. */
static void *pool_data(coexec_pool_t p)
{
    void *st = NULL;
    CH_CHECK_RC(coexec_pool_get_data(p, &st), COEXEC_OK);
    return st;
}

static void *sched_data(coexec_sched_t s)
{
    void *st = NULL;
    CH_CHECK_RC(coexec_sched_get_data(s, &st), COEXEC_OK);
    return st;
}

/* Starts a stream whose main scheduler is sched. */
static void stream_with(coexec_sched_t sched, coexec_xstream_t *xs)
{
    coexec_xstream_attr_t a;
    CH_ASSERT_OK_FATAL(coexec_xstream_attr_init(&a));
    a.sched = sched;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&a, xs));
}

static coexec_sched_config_t no_steal_cfg(void)
{
    coexec_sched_config_t sc;
    CH_ASSERT_OK(coexec_sched_config_init(&sc));
    sc.steal = 0;
    return sc;
}

/* A pool of the default setup of the stream of rank r. */
static coexec_pool_t main_pool_of(int rank)
{
    coexec_xstream_t xs;
    coexec_pool_t p = {0};
    CH_CHECK_RC(coexec_xstream_by_rank(rank, &xs), COEXEC_OK);
    CH_CHECK_RC(coexec_xstream_get_main_pool(xs, &p), COEXEC_OK);
    return p;
}

/* A unit that counts itself; ULTs yield `yields` times first. */
typedef struct cnt_arg {
    long idx;
    int yields;
} cnt_arg_t;

static void cnt_ult(void *arg)
{
    cnt_arg_t *c = arg;
    for (int i = 0; i < c->yields; i++)
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    hit(c->idx);
}

static coexec_poll_status_t cnt_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    hit(((cnt_arg_t *)arg)->idx);
    return COEXEC_READY;
}

/* Creates unit i of a counted batch into pool (ULTs for odd i). */
static int cnt_create(coexec_pool_t pool, cnt_arg_t *args, long i, int yields)
{
    args[i].idx = i;
    args[i].yields = yields;
    if (i % 2)
        return coexec_thread_create(pool, cnt_ult, &args[i], NULL, NULL);
    return coexec_tasklet_create(pool, cnt_tasklet, &args[i], NULL);
}

typedef struct hop {
    coexec_xstream_t to[8];
    int to_rank[8];
    int nto, rounds;
    atomic_int bad, done;
} hop_t;

/* Migrates itself around the given streams and checks where it lands. */
static void hop_ult(void *arg)
{
    hop_t *h = arg;
    coexec_thread_t me = self_thread();
    for (int r = 0; r < h->rounds; r++)
        for (int i = 0; i < h->nto; i++) {
            CH_CHECK_RC(coexec_thread_migrate_to_xstream(me, h->to[i]), COEXEC_OK);
            int now = self_rank();
            if (now != h->to_rank[i]) {
                atomic_fetch_add(&h->bad, 1);
                ch_fail_at(__FILE__, __LINE__, "migrated to rank %d, runs on %d",
                           h->to_rank[i], now);
            }
        }
    atomic_store(&h->done, 1);
}

/* ---- a pthread that runs one call -------------------------------------- */

enum ext_op { EXT_PUSH, EXT_POP, EXT_TASKLET, EXT_ADD_SCHED, EXT_SET_MAIN };

typedef struct ext_call {
    enum ext_op op;
    coexec_pool_t pool;
    coexec_unit_t unit, got;
    coexec_sched_t sched;
    coexec_xstream_t xs;
    int rc;
} ext_call_t;

static coexec_poll_status_t noop_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    (void)arg;
    return COEXEC_READY;
}

static void *ext_call_main(void *arg)
{
    ext_call_t *c = arg;
    switch (c->op) {
    case EXT_PUSH: c->rc = coexec_pool_push(c->pool, c->unit); break;
    case EXT_POP: c->rc = coexec_pool_pop(c->pool, &c->got); break;
    case EXT_TASKLET:
        c->rc = coexec_tasklet_create(c->pool, noop_tasklet, NULL, NULL);
        break;
    case EXT_ADD_SCHED: c->rc = coexec_pool_add_sched(c->pool, c->sched); break;
    case EXT_SET_MAIN: c->rc = coexec_xstream_set_main_sched(c->xs, c->sched); break;
    }
    return NULL;
}

/* Runs the call on a fresh pthread and returns its result. */
static int ext_call(ext_call_t *c)
{
    ch_pthread_t th;
    c->rc = 1;
    memset(&c->got, 0, sizeof c->got);
    ch_pthread_start(&th, ext_call_main, c);
    ch_pthread_join(&th);
    return c->rc;
}

/* ======================================================================= */
/* a user scheduler: takes from its pools in order                          */
/* ======================================================================= */

typedef struct us_state {
    coexec_sched_t sched;
    atomic_long ran;      /* units run by run_unit */
    atomic_int loops;     /* times run was entered */
    atomic_int self_ok;   /* coexec_sched_self in the loop gave sched */
    int check_args;       /* first loop: check the scheduler-side errors */
} us_state_t;

static atomic_int g_us_inits, g_us_frees;

static int us_init(coexec_sched_t sched, void *arg, void **state)
{
    us_state_t *st = calloc(1, sizeof *st);
    if (!st)
        return COEXEC_ENOMEM;
    st->sched = sched;
    st->check_args = arg != NULL;
    atomic_fetch_add(&g_us_inits, 1);
    *state = st;
    return COEXEC_OK;
}

static void us_free(void *state)
{
    atomic_fetch_add(&g_us_frees, 1);
    free(state);
}

static void us_run(coexec_sched_t sched, void *state)
{
    us_state_t *st = state;
    int npools = 0;
    CH_CHECK_RC(coexec_sched_get_num_pools(sched, &npools), COEXEC_OK);
    CH_CHECK(CH_SAME(sched, st->sched));
    atomic_fetch_add(&st->loops, 1);
    if (CH_SAME(self_sched(), sched))
        atomic_store(&st->self_ok, 1);
    if (st->check_args) {
        coexec_unit_t u;
        CH_CHECK_RC(coexec_sched_pop(sched, npools, &u), COEXEC_EINVAL);
        CH_CHECK_RC(coexec_sched_pop(sched, -1, &u), COEXEC_EINVAL);
        CH_CHECK_RC(coexec_sched_pop(sched, 0, NULL), COEXEC_EINVAL);
        CH_CHECK_RC(coexec_sched_has_to_stop(sched, NULL), COEXEC_EINVAL);
        CH_CHECK_RC(coexec_sched_run_unit(sched, (coexec_unit_t){0}),
                    COEXEC_EHANDLE);
        st->check_args = 0;
    }
    unsigned iter = 0;
    for (;;) {
        coexec_unit_t u = {0};
        for (int i = 0; i < npools && CH_IS_NULL(u); i++)
            CH_CHECK_RC(coexec_sched_pop(sched, i, &u), COEXEC_OK);
        if (!CH_IS_NULL(u)) {
            CH_CHECK_RC(coexec_sched_run_unit(sched, u), COEXEC_OK);
            atomic_fetch_add(&st->ran, 1);
        }
        if (CH_IS_NULL(u) || (++iter & 15) == 0)
            CH_CHECK_RC(coexec_sched_check_events(sched), COEXEC_OK);
        int stop = -1;
        CH_CHECK_RC(coexec_sched_has_to_stop(sched, &stop), COEXEC_OK);
        CH_CHECK(stop == 0 || stop == 1);
        if (stop == 1)
            return;
        if (CH_IS_NULL(u))
            CH_CHECK_RC(coexec_sched_idle(sched), COEXEC_OK);
    }
}

static const coexec_sched_ops_t us_ops = {
    .size = sizeof(coexec_sched_ops_t),
    .init = us_init,
    .run = us_run,
    .free = us_free,
};

/* ======================================================================= */
/* an earliest-deadline-first user pool                                     */
/* ======================================================================= */

/* The argument of every unit of an EDF pool: its deadline and id. A ULT
 * with steps > 1 logs, moves its deadline by period and yields. */
typedef struct job {
    int id;
    long deadline;
    long period;
    int steps;
    olog_t *log;
    coexec_sched_t want_sched; /* if not null: coexec_sched_self there */
    int want_rank;             /* if >= 0: the stream it must run on */
} job_t;

typedef struct edf_item {
    long deadline;
    int id;
    coexec_unit_t unit;
} edf_item_t;

typedef struct edf {
    pthread_mutex_t lock;
    edf_item_t *h;
    size_t n, cap;
    atomic_int pushes[3]; /* by coexec_push_kind_t */
    atomic_int pops;
} edf_t;

static atomic_int g_edf_frees;

static int edf_init(coexec_pool_t pool, void *arg, void **state)
{
    (void)pool;
    edf_t *e = calloc(1, sizeof *e);
    if (!e)
        return COEXEC_ENOMEM;
    e->cap = (size_t)(uintptr_t)arg;
    if (e->cap == 0)
        e->cap = 4096;
    e->h = calloc(e->cap, sizeof *e->h);
    if (!e->h) {
        free(e);
        return COEXEC_ENOMEM;
    }
    pthread_mutex_init(&e->lock, NULL);
    *state = e;
    return COEXEC_OK;
}

static void edf_free(void *state)
{
    edf_t *e = state;
    CH_CHECK_EQ(e->n, 0);
    pthread_mutex_destroy(&e->lock);
    free(e->h);
    free(e);
    atomic_fetch_add(&g_edf_frees, 1);
}

static bool edf_less(const edf_item_t *a, const edf_item_t *b)
{
    return a->deadline < b->deadline ||
           (a->deadline == b->deadline && a->id < b->id);
}

static void edf_sift_up(edf_t *e, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!edf_less(&e->h[i], &e->h[p]))
            break;
        edf_item_t t = e->h[i];
        e->h[i] = e->h[p];
        e->h[p] = t;
        i = p;
    }
}

static void edf_sift_down(edf_t *e, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < e->n && edf_less(&e->h[l], &e->h[m]))
            m = l;
        if (r < e->n && edf_less(&e->h[r], &e->h[m]))
            m = r;
        if (m == i)
            return;
        edf_item_t t = e->h[i];
        e->h[i] = e->h[m];
        e->h[m] = t;
        i = m;
    }
}

static void edf_push(void *state, coexec_unit_t unit, coexec_push_kind_t kind)
{
    edf_t *e = state;
    void *arg = NULL;
    CH_CHECK_RC(coexec_unit_get_arg(unit, &arg), COEXEC_OK);
    job_t *j = arg;
    if ((unsigned)kind < 3)
        atomic_fetch_add(&e->pushes[kind], 1);
    else
        ch_fail_at(__FILE__, __LINE__, "push kind %d", (int)kind);
    pthread_mutex_lock(&e->lock);
    if (e->n == e->cap) {
        pthread_mutex_unlock(&e->lock);
        ch_fail_at(__FILE__, __LINE__, "EDF pool full: unit lost");
        return;
    }
    e->h[e->n] = (edf_item_t){j ? j->deadline : 0, j ? j->id : 0, unit};
    edf_sift_up(e, e->n++);
    pthread_mutex_unlock(&e->lock);
}

static coexec_unit_t edf_pop(void *state)
{
    edf_t *e = state;
    coexec_unit_t u = {0};
    pthread_mutex_lock(&e->lock);
    if (e->n) {
        u = e->h[0].unit;
        e->h[0] = e->h[--e->n];
        edf_sift_down(e, 0);
        atomic_fetch_add(&e->pops, 1);
    }
    pthread_mutex_unlock(&e->lock);
    return u;
}

static int edf_remove(void *state, coexec_unit_t unit)
{
    edf_t *e = state;
    int found = 0;
    pthread_mutex_lock(&e->lock);
    for (size_t i = 0; i < e->n; i++)
        if (CH_SAME(e->h[i].unit, unit)) {
            e->h[i] = e->h[--e->n];
            if (i < e->n) {
                edf_sift_down(e, i);
                edf_sift_up(e, i);
            }
            found = 1;
            break;
        }
    pthread_mutex_unlock(&e->lock);
    return found;
}

static size_t edf_size(void *state)
{
    edf_t *e = state;
    pthread_mutex_lock(&e->lock);
    size_t n = e->n;
    pthread_mutex_unlock(&e->lock);
    return n;
}

static const coexec_pool_ops_t edf_ops = {
    .size = sizeof(coexec_pool_ops_t),
    .init = edf_init,
    .free = edf_free,
    .push = edf_push,
    .pop = edf_pop,
    .remove = edf_remove,
    .get_size = edf_size,
};

static void job_check_where(job_t *j)
{
    if (!CH_IS_NULL(j->want_sched))
        CH_CHECK(CH_SAME(self_sched(), j->want_sched));
    if (j->want_rank >= 0)
        CH_CHECK_EQ(self_rank(), j->want_rank);
}

static void job_ult(void *arg)
{
    job_t *j = arg;
    int is_thread = 0;
    coexec_thread_t me = self_thread();
    CH_CHECK_RC(coexec_unit_is_thread(coexec_thread_unit(me), &is_thread),
                COEXEC_OK);
    CH_CHECK_EQ(is_thread, 1);
    for (int s = 0; s < j->steps; s++) {
        job_check_where(j);
        olog_add(j->log, j->id * 100 + s);
        if (s + 1 < j->steps) {
            j->deadline += j->period;
            CH_CHECK_RC(coexec_yield(), COEXEC_OK);
        }
    }
}

static coexec_poll_status_t job_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    job_t *j = arg;
    job_check_where(j);
    olog_add(j->log, j->id * 100);
    return COEXEC_READY;
}

/*
 * The order an EDF pool gives jobs on one stream: the earliest (deadline,
 * id) runs; a job that yields comes back with its deadline moved. Returns
 * the length, or -1 if a yielder would be the strict minimum again (the
 * test then depends on whether the next unit is taken before or after the
 * yielder is queued, which it must not).
 */
static int edf_expected(const job_t *jobs, int n, int *out, int max)
{
    long dl[32];
    int left[32], k = 0;
    for (int i = 0; i < n; i++) {
        dl[i] = jobs[i].deadline;
        left[i] = jobs[i].steps;
    }
    for (;;) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (left[i] &&
                (best < 0 || dl[i] < dl[best] ||
                 (dl[i] == dl[best] && jobs[i].id < jobs[best].id)))
                best = i;
        if (best < 0)
            return k;
        if (k >= max)
            return -1;
        out[k++] = jobs[best].id * 100 + (jobs[best].steps - left[best]);
        if (--left[best] == 0)
            continue;
        dl[best] += jobs[best].period;
        for (int i = 0; i < n; i++)
            if (i != best && left[i] &&
                (dl[best] < dl[i] ||
                 (dl[best] == dl[i] && jobs[best].id < jobs[i].id)))
                goto still_min;
        continue;
still_min:;
        /* strictly smaller than every other live job? */
        int others = 0, smaller = 1;
        for (int i = 0; i < n; i++)
            if (i != best && left[i]) {
                others = 1;
                if (!(dl[best] < dl[i] ||
                      (dl[best] == dl[i] && jobs[best].id < jobs[i].id)))
                    smaller = 0;
            }
        if (others && smaller)
            return -1;
    }
}

/* ======================================================================= */
/* user: a user pool (EDF) and a user scheduler                             */
/* ======================================================================= */

static olog_t g_log;

static void t_edf_on_user_sched(void)
{
    ch_init(1);
    atomic_store(&g_us_inits, 0);
    atomic_store(&g_us_frees, 0);
    atomic_store(&g_edf_frees, 0);
    olog_reset(&g_log);

    coexec_pool_t pool;
    CH_ASSERT_OK_FATAL(coexec_pool_create_user(&edf_ops, COEXEC_ACCESS_MPMC,
                                               (void *)(uintptr_t)64, &pool));
    coexec_pool_kind_t kind = 0;
    coexec_pool_access_t acc = 0;
    CH_ASSERT_OK(coexec_pool_get_info(pool, &kind, &acc));
    CH_ASSERT_EQ(kind, COEXEC_POOL_USER);
    CH_ASSERT_EQ(acc, COEXEC_ACCESS_MPMC);
    edf_t *e = pool_data(pool);
    CU_ASSERT_FATAL(e != NULL);
    CH_ASSERT_EQ(e->cap, 64);

    coexec_sched_t sched;
    CH_ASSERT_OK_FATAL(coexec_sched_create_user(&us_ops, &pool, 1, NULL,
                                                (void *)1, &sched));
    CH_ASSERT_EQ(atomic_load(&g_us_inits), 1);
    us_state_t *st = sched_data(sched);
    CU_ASSERT_FATAL(st != NULL);

    /* Seven jobs: ULTs that yield (moving their deadline) and tasklets,
     * queued out of deadline order before the stream starts. */
    job_t jobs[] = {
        {.id = 1, .deadline = 40, .period = 25, .steps = 3},
        {.id = 2, .deadline = 10, .period = 35, .steps = 2},
        {.id = 3, .deadline = 95, .period = 0, .steps = 1},
        {.id = 4, .deadline = 20, .period = 50, .steps = 3},
        {.id = 5, .deadline = 5, .period = 0, .steps = 1},
        {.id = 6, .deadline = 60, .period = 30, .steps = 4},
        {.id = 7, .deadline = 30, .period = 0, .steps = 1},
    };
    int nj = (int)(sizeof jobs / sizeof jobs[0]);
    int want[64];
    int nwant = edf_expected(jobs, nj, want, 64);
    CU_ASSERT_FATAL(nwant > 0); /* the job set itself is well chosen */
    int yields = 0;
    for (int i = 0; i < nj; i++) {
        jobs[i].log = &g_log;
        jobs[i].want_sched = sched;
        jobs[i].want_rank = -1;
        yields += jobs[i].steps - 1;
        if (jobs[i].steps == 1 && jobs[i].id != 7)
            CH_ASSERT_OK(coexec_tasklet_create(pool, job_tasklet, &jobs[i], NULL));
        else
            CH_ASSERT_OK(coexec_thread_create(pool, job_ult, &jobs[i], NULL, NULL));
    }
    CH_ASSERT_EQ(pool_size(pool), nj);

    /* Scheduler-side calls from outside the scheduler's loop. */
    coexec_unit_t u;
    int stop;
    CH_ASSERT_RC(coexec_sched_pop(sched, 0, &u), COEXEC_ECONTEXT);
    CH_ASSERT_RC(coexec_sched_has_to_stop(sched, &stop), COEXEC_ECONTEXT);
    CH_ASSERT_RC(coexec_sched_check_events(sched), COEXEC_ECONTEXT);
    CH_ASSERT_RC(coexec_sched_idle(sched), COEXEC_ECONTEXT);

    coexec_xstream_t xs;
    stream_with(sched, &xs);
    int rank = -1;
    CH_ASSERT_OK(coexec_xstream_get_rank(xs, &rank));
    CH_ASSERT_OK(coexec_xstream_join(xs));
    olog_expect(&g_log, want, nwant, "EDF order");
    CH_ASSERT_EQ(atomic_load(&e->pushes[COEXEC_PUSH_NEW]), nj);
    CH_ASSERT_EQ(atomic_load(&e->pushes[COEXEC_PUSH_YIELD]), yields);
    CH_ASSERT_EQ(atomic_load(&e->pushes[COEXEC_PUSH_WAKE]), 0);
    CH_ASSERT_EQ(pool_size(pool), 0);
    CU_ASSERT(atomic_load(&st->ran) >= nj);
    CU_ASSERT(atomic_load(&st->ran) <= nwant);
    CH_ASSERT_EQ(atomic_load(&st->self_ok), 1);

    /* Units pushed while the stream runs: with a stream of its own. */
    olog_reset(&g_log);
    coexec_sched_t s2;
    CH_ASSERT_OK_FATAL(coexec_sched_create_user(&us_ops, &pool, 1, NULL, NULL, &s2));
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    CH_ASSERT_OK(coexec_sched_free(&sched));
    CH_ASSERT_EQ(atomic_load(&g_us_frees), 1);
    stream_with(s2, &xs);
    CH_ASSERT_OK(coexec_xstream_get_rank(xs, &rank));
    job_t more[16];
    for (int i = 0; i < 16; i++) {
        more[i] = (job_t){.id = 100 + i, .deadline = 16 - i, .period = 3,
                          .steps = 1 + i % 3, .log = &g_log,
                          .want_sched = s2, .want_rank = rank};
        CH_ASSERT_OK(coexec_thread_create(pool, job_ult, &more[i], NULL, NULL));
    }
    CH_WAIT(atomic_load(&g_log.n) == 16 + 15);
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    CH_ASSERT_EQ(atomic_load(&g_log.n), 16 + 15);
    CH_ASSERT_OK(coexec_sched_free(&s2));
    CH_ASSERT_EQ(atomic_load(&g_us_frees), 2);
    CH_ASSERT_OK(coexec_pool_free(&pool));
    CH_ASSERT_EQ(atomic_load(&g_edf_frees), 1);
    ch_finalize();
}

/* ---- a user pool that wraps a built-in FIFO pool ------------------------ */

typedef struct wrap {
    coexec_pool_t inner;
    atomic_int pushes[3];
    atomic_int pops;
} wrap_t;

static int wrap_init(coexec_pool_t pool, void *arg, void **state)
{
    (void)pool;
    wrap_t *w = calloc(1, sizeof *w);
    if (!w)
        return COEXEC_ENOMEM;
    int rc = coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &w->inner);
    if (rc != COEXEC_OK) {
        free(w);
        return rc;
    }
    (void)arg;
    *state = w;
    return COEXEC_OK;
}

/* A wrapper frees its inner pool in its free operation (the library runs
 * that operation outside its own locks). */
static void wrap_free(void *state)
{
    wrap_t *w = state;
    CH_CHECK_RC(coexec_pool_free(&w->inner), COEXEC_OK);
    free(w);
}

static void wrap_push(void *state, coexec_unit_t unit, coexec_push_kind_t kind)
{
    wrap_t *w = state;
    if ((unsigned)kind < 3)
        atomic_fetch_add(&w->pushes[kind], 1);
    CH_CHECK_RC(coexec_pool_push(w->inner, unit), COEXEC_OK);
}

static coexec_unit_t wrap_pop(void *state)
{
    wrap_t *w = state;
    coexec_unit_t u = {0};
    CH_CHECK_RC(coexec_pool_pop(w->inner, &u), COEXEC_OK);
    if (!CH_IS_NULL(u))
        atomic_fetch_add(&w->pops, 1);
    return u;
}

static size_t wrap_size(void *state)
{
    wrap_t *w = state;
    return pool_size(w->inner);
}

static const coexec_pool_ops_t wrap_ops = {
    .size = sizeof(coexec_pool_ops_t),
    .init = wrap_init,
    .free = wrap_free,
    .push = wrap_push,
    .pop = wrap_pop,
    .get_size = wrap_size,
};

/* First runs in the order of creation; a suspended ULT is woken. */
typedef struct wunit {
    int id;
    int yields;
    coexec_pool_t home; /* the wrapping pool */
} wunit_t;

static atomic_int g_wsusp; /* 1 once the suspender is about to suspend */

static void wunit_ult(void *arg)
{
    wunit_t *w = arg;
    olog_add(&g_log, w->id);
    for (int i = 0; i < w->yields; i++)
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    hit(w->id);
}

static void wunit_suspender(void *arg)
{
    wunit_t *w = arg;
    olog_add(&g_log, w->id);
    atomic_store(&g_wsusp, 1);
    CH_CHECK_RC(coexec_self_suspend(), COEXEC_OK);
    hit(w->id);
}

static coexec_poll_status_t wunit_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    wunit_t *w = arg;
    olog_add(&g_log, w->id);
    hit(w->id);
    return COEXEC_READY;
}

static void run_wrapped(int user_sched)
{
    ch_init(1);
    olog_reset(&g_log);
    atomic_store(&g_wsusp, 0);
    coexec_pool_t pool;
    CH_ASSERT_OK_FATAL(coexec_pool_create_user(&wrap_ops, COEXEC_ACCESS_MPMC,
                                               NULL, &pool));
    wrap_t *w = pool_data(pool);
    CU_ASSERT_FATAL(w != NULL);
    coexec_sched_t sched;
    coexec_sched_config_t sc = no_steal_cfg();
    if (user_sched)
        CH_ASSERT_OK_FATAL(coexec_sched_create_user(&us_ops, &pool, 1, &sc,
                                                    NULL, &sched));
    else
        CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &pool,
                                               1, &sc, &sched));
    enum { N = 40 };
    hits_new(N);
    wunit_t units[N];
    coexec_thread_t susp = {0};
    int yields = 0;
    for (int i = 0; i < N; i++) {
        units[i] = (wunit_t){i, i % 3, pool};
        if (i == 7) {
            CH_ASSERT_OK(coexec_thread_create(pool, wunit_suspender, &units[i],
                                              NULL, &susp));
        } else if (i % 4 == 0) {
            CH_ASSERT_OK(coexec_tasklet_create(pool, wunit_tasklet, &units[i], NULL));
        } else {
            yields += units[i].yields;
            CH_ASSERT_OK(coexec_thread_create(pool, wunit_ult, &units[i], NULL, NULL));
        }
    }
    CH_ASSERT_EQ(pool_size(pool), N);
    CH_ASSERT_EQ(pool_size(w->inner), N);
    coexec_xstream_t xs;
    stream_with(sched, &xs);
    /* The suspender parks; resume it once it is blocked. */
    CH_WAIT(atomic_load(&g_wsusp) == 1);
    CH_WAIT(state_of(susp) == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_OK(coexec_thread_resume(susp));
    CH_WAIT(atomic_load(&g_hit_total) == N);
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    CH_ASSERT_OK(coexec_thread_free(&susp));
    CH_ASSERT_EQ(hits_bad_and_free(), 0);
    /* First runs in creation order (FIFO through the wrapper). */
    int want[N];
    for (int i = 0; i < N; i++)
        want[i] = i;
    olog_expect(&g_log, want, N, "first runs through the wrapper");
    /* Every push went through the user pool: the units' home stayed it. */
    CH_ASSERT_EQ(atomic_load(&w->pushes[COEXEC_PUSH_NEW]), N);
    CH_ASSERT_EQ(atomic_load(&w->pushes[COEXEC_PUSH_YIELD]), yields);
    CH_ASSERT_EQ(atomic_load(&w->pushes[COEXEC_PUSH_WAKE]), 1);
    CH_ASSERT_EQ(pool_size(pool), 0);
    CH_ASSERT_OK(coexec_sched_free(&sched));
    CH_ASSERT_OK(coexec_pool_free(&pool));
    ch_finalize();
}

static void t_wrapped_basic(void) { run_wrapped(0); }
static void t_wrapped_user(void) { run_wrapped(1); }

/* ---- bad tables, init errors ------------------------------------------- */

static int pool_init_fails(coexec_pool_t pool, void *arg, void **state)
{
    (void)pool;
    (void)state;
    return (int)(intptr_t)arg;
}

static int sched_init_fails(coexec_sched_t sched, void *arg, void **state)
{
    (void)sched;
    (void)state;
    return (int)(intptr_t)arg;
}

static atomic_int g_steal_calls;

static int hand_over_init(coexec_pool_t pool, void *arg, void **state)
{
    (void)pool;
    *state = arg;
    return COEXEC_OK;
}

static coexec_unit_t steal_counted(void *state)
{
    (void)state;
    atomic_fetch_add(&g_steal_calls, 1);
    return (coexec_unit_t){0};
}

static void t_bad_ops(void)
{
    ch_init(1);
    coexec_pool_t p = {0};
    coexec_pool_ops_t o = edf_ops;
    CH_ASSERT_RC(coexec_pool_create_user(NULL, COEXEC_ACCESS_MPMC, NULL, &p), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_create_user(&o, COEXEC_ACCESS_MPMC, NULL, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_create_user(&o, (coexec_pool_access_t)99, NULL, &p), COEXEC_EINVAL);
    o.size = 0;
    CH_ASSERT_RC(coexec_pool_create_user(&o, COEXEC_ACCESS_MPMC, NULL, &p), COEXEC_EINVAL);
    o.size = sizeof(size_t); /* knows of no operation at all */
    CH_ASSERT_RC(coexec_pool_create_user(&o, COEXEC_ACCESS_MPMC, NULL, &p), COEXEC_EINVAL);
    o = edf_ops;
    o.push = NULL;
    CH_ASSERT_RC(coexec_pool_create_user(&o, COEXEC_ACCESS_MPMC, NULL, &p), COEXEC_EINVAL);
    o = edf_ops;
    o.pop = NULL;
    CH_ASSERT_RC(coexec_pool_create_user(&o, COEXEC_ACCESS_MPMC, NULL, &p), COEXEC_EINVAL);
    o = edf_ops;
    o.get_size = NULL;
    CH_ASSERT_RC(coexec_pool_create_user(&o, COEXEC_ACCESS_MPMC, NULL, &p), COEXEC_EINVAL);
    CU_ASSERT(CH_IS_NULL(p));

    /* init's error comes back as it is, and nothing is left behind. */
    atomic_store(&g_edf_frees, 0);
    o = edf_ops;
    o.init = pool_init_fails;
    CH_ASSERT_RC(coexec_pool_create_user(&o, COEXEC_ACCESS_MPMC,
                                         (void *)(intptr_t)COEXEC_EAGAIN, &p),
                 COEXEC_EAGAIN);
    CH_ASSERT_RC(coexec_pool_create_user(&o, COEXEC_ACCESS_MPMC,
                                         (void *)(intptr_t)COEXEC_ENOMEM, &p),
                 COEXEC_ENOMEM);
    CH_ASSERT_EQ(atomic_load(&g_edf_frees), 0); /* free is not called */

    /* A table without steal: thieves get nothing. Its state is the shim
     * (init hands arg over). */
    coexec_pool_t inner;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &inner));
    wrap_t shim;
    memset(&shim, 0, sizeof shim);
    shim.inner = inner;
    coexec_pool_ops_t old = {0};
    old.size = sizeof old;
    old.init = hand_over_init;
    old.push = wrap_push;
    old.pop = wrap_pop;
    old.get_size = wrap_size;
    atomic_store(&g_steal_calls, 0);
    CH_ASSERT_OK_FATAL(coexec_pool_create_user(&old, COEXEC_ACCESS_MPMC, &shim, &p));
    void *data = NULL;
    CH_ASSERT_OK(coexec_pool_get_data(p, &data));
    CU_ASSERT(data == &shim);
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create(p, noop_tasklet, NULL, &k));
    coexec_unit_t u = {0};
    CH_ASSERT_OK(coexec_pool_steal(p, &u));
    CU_ASSERT(CH_IS_NULL(u));
    CH_ASSERT_OK(coexec_pool_pop(p, &u));
    CU_ASSERT(CH_SAME(u, coexec_tasklet_unit(k)));
    CH_ASSERT_OK(coexec_pool_push(main_pool_of(0), u));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_EQ(atomic_load(&shim.pushes[COEXEC_PUSH_NEW]), 1);
    CH_ASSERT_OK(coexec_pool_free(&p));
    /* With a steal entry, coexec_pool_steal asks it. */
    old.steal = steal_counted;
    CH_ASSERT_OK_FATAL(coexec_pool_create_user(&old, COEXEC_ACCESS_MPMC, &shim, &p));
    CH_ASSERT_OK(coexec_tasklet_create(p, noop_tasklet, NULL, &k));
    CH_ASSERT_OK(coexec_pool_steal(p, &u));
    CU_ASSERT(CH_IS_NULL(u)); /* what steal_counted gave */
    CH_ASSERT_EQ(atomic_load(&g_steal_calls), 1);
    CH_ASSERT_OK(coexec_pool_pop(p, &u));
    CH_ASSERT_OK(coexec_pool_push(main_pool_of(0), u));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_OK(coexec_pool_free(&p));
    /* get_data of a built-in pool is NULL. */
    data = (void *)1;
    CH_ASSERT_OK(coexec_pool_get_data(inner, &data));
    CU_ASSERT(data == NULL);
    CH_ASSERT_RC(coexec_pool_get_data(inner, NULL), COEXEC_EINVAL);

    /* The scheduler side. */
    coexec_sched_t s = {0};
    coexec_sched_ops_t so = us_ops;
    CH_ASSERT_RC(coexec_sched_create_user(NULL, &inner, 1, NULL, NULL, &s), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create_user(&so, NULL, 1, NULL, NULL, &s), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create_user(&so, &inner, 1, NULL, NULL, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create_user(&so, &inner, 0, NULL, NULL, &s), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create_user(&so, &inner, 65, NULL, NULL, &s), COEXEC_EINVAL);
    so.size = 0;
    CH_ASSERT_RC(coexec_sched_create_user(&so, &inner, 1, NULL, NULL, &s), COEXEC_EINVAL);
    so.size = sizeof(size_t);
    CH_ASSERT_RC(coexec_sched_create_user(&so, &inner, 1, NULL, NULL, &s), COEXEC_EINVAL);
    so = us_ops;
    so.run = NULL;
    CH_ASSERT_RC(coexec_sched_create_user(&so, &inner, 1, NULL, NULL, &s), COEXEC_EINVAL);
    so = us_ops;
    coexec_pool_t stale;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &stale));
    coexec_pool_t gone = stale;
    CH_ASSERT_OK(coexec_pool_free(&stale));
    CH_ASSERT_RC(coexec_sched_create_user(&so, &gone, 1, NULL, NULL, &s), COEXEC_EHANDLE);
    so.init = sched_init_fails;
    CH_ASSERT_RC(coexec_sched_create_user(&so, &inner, 1, NULL,
                                          (void *)(intptr_t)COEXEC_EBUSY, &s),
                 COEXEC_EBUSY);
    CU_ASSERT(CH_IS_NULL(s));
    /* The pool is not held by the failed schedulers. */
    CH_ASSERT_OK(coexec_pool_free(&inner));

    /* Built-in schedulers have no data. */
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &inner));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, &inner, 1, NULL, &s));
    data = (void *)1;
    CH_ASSERT_OK(coexec_sched_get_data(s, &data));
    CU_ASSERT(data == NULL);
    CH_ASSERT_OK(coexec_sched_free(&s));
    CH_ASSERT_OK(coexec_pool_free(&inner));
    ch_finalize();
}

/* ---- what a user pool may look at ------------------------------------- */

static void t_unit_queries(void)
{
    ch_init(1);
    coexec_pool_t idle;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &idle));
    cnt_arg_t x = {-1, 0};
    coexec_thread_attr_t at;
    CH_ASSERT_OK(coexec_thread_attr_init(&at));
    CH_ASSERT_EQ(at.priority, 0);
    at.priority = 5;
    coexec_thread_t t;
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_thread_create(idle, cnt_ult, &x, &at, &t));
    CH_ASSERT_OK(coexec_tasklet_create(idle, noop_tasklet, &t, &k));
    coexec_unit_t ut = coexec_thread_unit(t), uk = coexec_tasklet_unit(k);
    void *arg = NULL;
    int is_thread = -1, prio = -1;
    CH_ASSERT_OK(coexec_unit_get_arg(ut, &arg));
    CU_ASSERT(arg == &x);
    CH_ASSERT_OK(coexec_unit_get_arg(uk, &arg));
    CU_ASSERT(arg == &t);
    CH_ASSERT_OK(coexec_unit_is_thread(ut, &is_thread));
    CH_ASSERT_EQ(is_thread, 1);
    CH_ASSERT_OK(coexec_unit_is_thread(uk, &is_thread));
    CH_ASSERT_EQ(is_thread, 0);
    CH_ASSERT_RC(coexec_unit_get_arg(ut, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_unit_is_thread(ut, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_unit_get_arg((coexec_unit_t){0}, &arg), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_unit_is_thread((coexec_unit_t){0}, &is_thread), COEXEC_EHANDLE);
    /* Priorities: from the attribute, set and read back, range checked. */
    CH_ASSERT_OK(coexec_unit_get_priority(ut, &prio));
    CH_ASSERT_EQ(prio, 5);
    CH_ASSERT_OK(coexec_unit_get_priority(uk, &prio));
    CH_ASSERT_EQ(prio, 0);
    CH_ASSERT_OK(coexec_unit_set_priority(uk, 65535));
    CH_ASSERT_OK(coexec_unit_get_priority(uk, &prio));
    CH_ASSERT_EQ(prio, 65535);
    CH_ASSERT_RC(coexec_unit_set_priority(uk, -1), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_unit_set_priority(uk, 65536), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_unit_get_priority(uk, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_unit_set_priority((coexec_unit_t){0}, 1), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_unit_set_pinned((coexec_unit_t){0}, 1), COEXEC_EHANDLE);
    /* Run them, then the handles are stale. */
    coexec_unit_t u;
    for (int i = 0; i < 2; i++) {
        CH_ASSERT_OK(coexec_pool_pop(idle, &u));
        CH_ASSERT_OK(coexec_pool_push(main_pool_of(0), u));
    }
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_RC(coexec_unit_get_arg(ut, &arg), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_unit_is_thread(uk, &is_thread), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_pool_free(&idle));
    ch_finalize();
}

/* ---- a user scheduler's migration pool ---------------------------------- */

static coexec_pool_t migr_pool(coexec_sched_t sched, void *state)
{
    (void)state;
    coexec_pool_t p = {0};
    CH_CHECK_RC(coexec_sched_get_pool(sched, 1, &p), COEXEC_OK);
    return p;
}

static void t_user_migr_pool(void)
{
    ch_init(1);
    /* Stream S: a user scheduler over a FIFO pool and a wrapping pool;
     * units migrating to S go to the wrapping pool. */
    coexec_pool_t pools[2];
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pools[0]));
    CH_ASSERT_OK_FATAL(coexec_pool_create_user(&wrap_ops, COEXEC_ACCESS_MPMC, NULL, &pools[1]));
    wrap_t *w = pool_data(pools[1]);
    coexec_sched_ops_t ops = us_ops;
    ops.get_migr_pool = migr_pool;
    coexec_sched_t sched;
    CH_ASSERT_OK_FATAL(coexec_sched_create_user(&ops, pools, 2, NULL, NULL, &sched));
    coexec_xstream_t xs;
    stream_with(sched, &xs);
    int rank = -1;
    CH_ASSERT_OK(coexec_xstream_get_rank(xs, &rank));
    ch_stream_t from;
    CH_ASSERT_OK_FATAL(ch_stream_create(&from, COEXEC_SCHED_BASIC_WAIT));
    hop_t h;
    memset(&h, 0, sizeof h);
    h.nto = 1;
    h.rounds = 1;
    h.to[0] = xs;
    h.to_rank[0] = rank;
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create(from.pool, hop_ult, &h, NULL, &t));
    CH_WAIT(atomic_load(&h.done));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(atomic_load(&h.bad), 0);
    /* It came in through the wrapping pool (a push and a pop), not pool 0. */
    CH_ASSERT_EQ(atomic_load(&w->pushes[COEXEC_PUSH_NEW]) +
                     atomic_load(&w->pushes[COEXEC_PUSH_YIELD]) +
                     atomic_load(&w->pushes[COEXEC_PUSH_WAKE]),
                 1);
    CH_ASSERT_EQ(atomic_load(&w->pops), 1);
    CH_ASSERT_OK(ch_stream_free(&from));
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    CH_ASSERT_OK(coexec_sched_free(&sched));
    CH_ASSERT_OK(coexec_pool_free(&pools[0]));
    CH_ASSERT_OK(coexec_pool_free(&pools[1]));
    ch_finalize();
}

/* ======================================================================= */
/* stack: schedulers as units of their parent's pools                       */
/* ======================================================================= */

typedef struct lvl_arg {
    long idx;
    coexec_sched_t want;
    int rank;
    int yields;
} lvl_arg_t;

static void lvl_ult(void *arg)
{
    lvl_arg_t *a = arg;
    CH_CHECK(CH_SAME(self_sched(), a->want));
    for (int i = 0; i < a->yields; i++) {
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
        CH_CHECK(CH_SAME(self_sched(), a->want));
    }
    CH_CHECK_EQ(self_rank(), a->rank);
    hit(a->idx);
}

static coexec_poll_status_t lvl_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    lvl_arg_t *a = arg;
    CH_CHECK(CH_SAME(self_sched(), a->want));
    CH_CHECK_EQ(self_rank(), a->rank);
    hit(a->idx);
    return COEXEC_READY;
}

static void lvl_create(coexec_pool_t pool, lvl_arg_t *a, long idx,
                       coexec_sched_t want, int rank)
{
    *a = (lvl_arg_t){idx, want, rank, (int)(idx % 3)};
    if (idx % 2)
        CH_ASSERT_OK(coexec_thread_create(pool, lvl_ult, a, NULL, NULL));
    else
        CH_ASSERT_OK(coexec_tasklet_create(pool, lvl_tasklet, a, NULL));
}

static coexec_sched_t make_sched(int user, coexec_pool_t *pools, int n)
{
    coexec_sched_t s = {0};
    coexec_sched_config_t sc = no_steal_cfg();
    if (user)
        CH_ASSERT_OK_FATAL(coexec_sched_create_user(&us_ops, pools, n, &sc, NULL, &s));
    else
        CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, pools, n, &sc, &s));
    return s;
}

static coexec_sched_t main_sched_of(coexec_xstream_t xs)
{
    coexec_sched_t s = {0};
    CH_CHECK_RC(coexec_xstream_get_main_sched(xs, &s), COEXEC_OK);
    return s;
}

/* Waits until sched can be freed (it left its pool for good). */
static void wait_freed(coexec_sched_t *s)
{
    coexec_sched_t copy = *s;
    CH_WAIT(coexec_sched_free(&copy) != COEXEC_EBUSY);
    CU_ASSERT(CH_IS_NULL(copy));
    *s = copy;
}

/*
 * A stream that stops must finish every scheduler stacked on it, however
 * deep (join_unwinds_the_stack leaves all of it to the stream's stop).
 */

/*
 * A: main scheduler of the stream, over PA. B, over PB, is a unit of PA.
 * C, over PC1 and PC2, is a unit of PB. Units at every level.
 */
static void run_stack(int user_b, int user_c, int explicit_finish)
{
    ch_init(1);
    coexec_pool_t pa, pb, pc[2];
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pa));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pb));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pc[0]));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_LIFO, COEXEC_ACCESS_MPMC, &pc[1]));
    coexec_sched_config_t sc = no_steal_cfg();
    coexec_sched_t a, b, c;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &pa, 1, &sc, &a));
    b = make_sched(user_b, &pb, 1);
    c = make_sched(user_c, pc, 2);
    CH_ASSERT_OK_FATAL(coexec_pool_add_sched(pb, c));
    CH_ASSERT_OK_FATAL(coexec_pool_add_sched(pa, b));
    /* A stacked scheduler is busy: in one pool at a time, not freed, not
     * a stream's main scheduler. */
    CH_ASSERT_RC(coexec_pool_add_sched(pa, c), COEXEC_EBUSY);
    coexec_sched_t copy = c;
    CH_ASSERT_RC(coexec_sched_free(&copy), COEXEC_EBUSY);
    CU_ASSERT(CH_SAME(copy, c));
    coexec_xstream_attr_t at;
    CH_ASSERT_OK(coexec_xstream_attr_init(&at));
    at.sched = b;
    coexec_xstream_t bad;
    CH_ASSERT_RC(coexec_xstream_create(&at, &bad), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_pool_add_sched(pa, (coexec_sched_t){0}), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_pool_add_sched((coexec_pool_t){0}, a), COEXEC_EHANDLE);

    long per = ch_iters(200, 12);
    long n = per * 6; /* per unit in PA, PB, PC1, PC2 before; PC2, PA after */
    hits_new(n);
    lvl_arg_t *args = calloc((size_t)n, sizeof *args);
    CU_ASSERT_FATAL(args != NULL);
    /* The stream's rank is known once it exists; create it first, with
     * its units queued behind a gate: the ranks below are its. */
    coexec_xstream_t xs;
    stream_with(a, &xs);
    int rank = -1;
    CH_ASSERT_OK(coexec_xstream_get_rank(xs, &rank));
    long k = 0;
    for (long i = 0; i < per; i++) {
        lvl_create(pa, &args[k], k, a, rank), k++;
        lvl_create(pb, &args[k], k, b, rank), k++;
        lvl_create(pc[0], &args[k], k, c, rank), k++;
        lvl_create(pc[1], &args[k], k, c, rank), k++;
    }
    for (long i = 0; i < per; i++) {
        lvl_create(pc[1], &args[k], k, c, rank), k++;
        lvl_create(pa, &args[k], k, a, rank), k++;
    }
    CH_WAIT(atomic_load(&g_hit_total) == n);
    if (explicit_finish) {
        /* C finishes and leaves PB; then B leaves PA; A still runs. */
        CH_ASSERT_OK(coexec_sched_finish(c));
        wait_freed(&c);
        CH_ASSERT_EQ(pool_size(pb), 0);
        CH_ASSERT_OK(coexec_sched_finish(b));
        wait_freed(&b);
        CH_ASSERT_EQ(pool_size(pa), 0);
        coexec_xstream_state_t xst;
        CH_ASSERT_OK(coexec_xstream_get_state(xs, &xst));
        CU_ASSERT(xst == COEXEC_XSTREAM_RUNNING || xst == COEXEC_XSTREAM_READY);
        /* The stream still serves PA. */
        lvl_arg_t late;
        atomic_store(&g_hit_total, 0);
        lvl_create(pa, &late, -1, a, rank);
        CH_WAIT(atomic_load(&g_hit_total) == 1);
    }
    /* Joining the stream unwinds whatever is still stacked. */
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    CH_ASSERT_EQ(hits_bad_and_free(), 0);
    if (!explicit_finish) {
        CH_ASSERT_OK(coexec_sched_free(&c));
        CH_ASSERT_OK(coexec_sched_free(&b));
    }
    CH_ASSERT_OK(coexec_sched_free(&a));
    coexec_pool_t all[] = {pa, pb, pc[0], pc[1]};
    for (int i = 0; i < 4; i++) {
        if (pool_size(all[i]) != 0)
            printf("[pool %d still holds %zu] ", i, pool_size(all[i]));
        CH_ASSERT_EQ(pool_size(all[i]), 0);
        CH_ASSERT_OK(coexec_pool_free(&all[i]));
    }
    free(args);
    ch_finalize();
}

/* A stacked scheduler in a pool that two streams serve: it may resume on
 * either; its units still run exactly once. */
static void run_stack_shared(int user_b)
{
    ch_init(1);
    coexec_pool_t pa, pb;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pa));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pb));
    coexec_sched_config_t sc = no_steal_cfg();
    coexec_sched_t a[2], b = make_sched(user_b, &pb, 1);
    coexec_xstream_t xs[2];
    CH_ASSERT_OK_FATAL(coexec_pool_add_sched(pa, b));
    for (int i = 0; i < 2; i++) {
        CH_ASSERT_OK_FATAL(coexec_sched_create(i ? COEXEC_SCHED_BASIC : COEXEC_SCHED_BASIC_WAIT,
                                               &pa, 1, &sc, &a[i]));
        stream_with(a[i], &xs[i]);
    }
    long n = ch_iters(4000, 100);
    hits_new(n);
    cnt_arg_t *args = calloc((size_t)n, sizeof *args);
    CU_ASSERT_FATAL(args != NULL);
    for (long i = 0; i < n; i++)
        CH_ASSERT_OK(cnt_create(i % 5 ? pb : pa, args, i, (int)(i % 3)));
    CH_WAIT(atomic_load(&g_hit_total) == n);
    CH_ASSERT_OK(coexec_sched_finish(b));
    wait_freed(&b);
    for (int i = 0; i < 2; i++)
        CH_ASSERT_OK(coexec_xstream_free(&xs[i]));
    CH_ASSERT_EQ(hits_bad_and_free(), 0);
    for (int i = 0; i < 2; i++)
        CH_ASSERT_OK(coexec_sched_free(&a[i]));
    CH_ASSERT_OK(coexec_pool_free(&pa));
    CH_ASSERT_OK(coexec_pool_free(&pb));
    free(args);
    ch_finalize();
}

static void t_stack_shared(void)
{
    run_stack_shared(0);
    run_stack_shared(1);
}

static void t_stack_builtin(void) { run_stack(0, 0, 1); }
static void t_stack_user_middle(void) { run_stack(1, 0, 1); }
static void t_stack_user_inner(void) { run_stack(0, 1, 1); }
static void t_stack_join_unwinds(void) { run_stack(1, 1, 0); }

/* ======================================================================= */
/* prio_sched                                                               */
/* ======================================================================= */

static void log_ult(void *arg) { olog_add(&g_log, (int)(intptr_t)arg); }

static coexec_poll_status_t log_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    olog_add(&g_log, (int)(intptr_t)arg);
    return COEXEC_READY;
}

static void t_prio_order(void)
{
    ch_init(1);
    enum { NP = 3, PER = 8 };
    coexec_pool_t pools[NP];
    for (int i = 0; i < NP; i++)
        CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pools[i]));
    olog_reset(&g_log);
    /* Interleaved, lowest priority first. */
    for (int j = 0; j < PER; j++)
        for (int p = NP - 1; p >= 0; p--) {
            intptr_t id = p * 100 + j;
            if ((j + p) % 2)
                CH_ASSERT_OK(coexec_thread_create(pools[p], log_ult, (void *)id, NULL, NULL));
            else
                CH_ASSERT_OK(coexec_tasklet_create(pools[p], log_tasklet, (void *)id, NULL));
        }
    coexec_sched_config_t sc = no_steal_cfg();
    sc.aging = 1000; /* far more than the units: strict priority here */
    coexec_sched_t s;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_PRIO, pools, NP, &sc, &s));
    coexec_xstream_t xs;
    stream_with(s, &xs);
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    int want[NP * PER], k = 0;
    for (int p = 0; p < NP; p++)
        for (int j = 0; j < PER; j++)
            want[k++] = p * 100 + j;
    olog_expect(&g_log, want, NP * PER, "PRIO order");
    CH_ASSERT_OK(coexec_sched_free(&s));
    for (int i = 0; i < NP; i++)
        CH_ASSERT_OK(coexec_pool_free(&pools[i]));
    ch_finalize();
}

/* Aging: pool 0 is refilled by a chain of units; the units of pools 1 and
 * 2 still run, each after a bounded number of pool-0 units. */
static coexec_pool_t g_chain_pool;
static atomic_long g_chain_done, g_chain_made, g_chain_max;
static atomic_long g_low_at[2];

static coexec_poll_status_t chain_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    (void)arg;
    /* The successor first: pool 0 is never empty while the chain runs. */
    if (atomic_fetch_add(&g_chain_made, 1) < atomic_load(&g_chain_max))
        CH_CHECK_RC(coexec_tasklet_create(g_chain_pool, chain_tasklet, NULL, NULL),
                    COEXEC_OK);
    atomic_fetch_add(&g_chain_done, 1);
    return COEXEC_READY;
}

static void low_ult(void *arg)
{
    atomic_store(&g_low_at[(intptr_t)arg], atomic_load(&g_chain_done));
}

static void t_prio_aging(void)
{
    ch_init(1);
    enum { NP = 3, AGING = 8 };
    coexec_pool_t pools[NP];
    for (int i = 0; i < NP; i++)
        CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pools[i]));
    long k = ch_iters(5000, 500);
    g_chain_pool = pools[0];
    atomic_store(&g_chain_done, 0);
    atomic_store(&g_chain_made, 2);
    atomic_store(&g_chain_max, k);
    atomic_store(&g_low_at[0], -1);
    atomic_store(&g_low_at[1], -1);
    /* Two chains in pool 0, one low unit in each lower pool. */
    CH_ASSERT_OK(coexec_thread_create(pools[2], low_ult, (void *)1, NULL, NULL));
    CH_ASSERT_OK(coexec_thread_create(pools[1], low_ult, (void *)0, NULL, NULL));
    CH_ASSERT_OK(coexec_tasklet_create(pools[0], chain_tasklet, NULL, NULL));
    CH_ASSERT_OK(coexec_tasklet_create(pools[0], chain_tasklet, NULL, NULL));
    coexec_sched_config_t sc = no_steal_cfg();
    sc.aging = AGING;
    coexec_sched_t s;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_PRIO, pools, NP, &sc, &s));
    coexec_xstream_t xs;
    stream_with(s, &xs);
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    long at1 = atomic_load(&g_low_at[0]), at2 = atomic_load(&g_low_at[1]);
    printf("[pool-0 units before pool 1: %ld, before pool 2: %ld, of %ld] ",
           at1, at2, k);
    CH_ASSERT_EQ(atomic_load(&g_chain_done), k);
    CU_ASSERT(at1 >= 0 && at1 <= 2 * AGING + 2);
    CU_ASSERT(at2 >= 0 && at2 <= 3 * AGING + 3);
    CU_ASSERT(at1 < k && at2 < k); /* while pool 0 was still refilled */
    CH_ASSERT_OK(coexec_sched_free(&s));
    for (int i = 0; i < NP; i++)
        CH_ASSERT_OK(coexec_pool_free(&pools[i]));
    ch_finalize();
}

/* ======================================================================= */
/* steal                                                                    */
/* ======================================================================= */

#define NSTEAL 4

static atomic_int g_rank_runs[16];

static void rank_count(void)
{
    int r = self_rank();
    if (r >= 0 && r < 16)
        atomic_fetch_add(&g_rank_runs[r], 1);
}

static void srun_ult(void *arg)
{
    cnt_arg_t *c = arg;
    rank_count();
    CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    hit(c->idx);
}

static coexec_poll_status_t srun_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    rank_count();
    hit(((cnt_arg_t *)arg)->idx);
    return COEXEC_READY;
}

/* fib with one ULT per call (n >= 2), into the running stream's main
 * pool; counts the ULTs. */
static atomic_long g_fib_ults;
static int g_fib_child_first;

typedef struct fib_arg {
    int n;
    long result;
} fib_arg_t;

static long fib_rec(int n);

static void fib_ult(void *p)
{
    fib_arg_t *a = p;
    atomic_fetch_add(&g_fib_ults, 1);
    a->result = fib_rec(a->n);
}

static long fib_rec(int n)
{
    if (n < 2)
        return n;
    coexec_xstream_t xs;
    coexec_pool_t pool;
    CH_CHECK_RC(coexec_xstream_self(&xs), COEXEC_OK);
    CH_CHECK_RC(coexec_xstream_get_main_pool(xs, &pool), COEXEC_OK);
    fib_arg_t child = {n - 1, 0};
    coexec_thread_t t;
    int rc = g_fib_child_first
                 ? coexec_thread_create_child_first(pool, fib_ult, &child, NULL, &t)
                 : coexec_thread_create(pool, fib_ult, &child, NULL, &t);
    CH_CHECK_RC(rc, COEXEC_OK);
    if (rc != COEXEC_OK)
        return -1;
    long y = fib_rec(n - 2);
    CH_CHECK_RC(coexec_thread_free(&t), COEXEC_OK);
    return child.result + y;
}

static long fib_plain(int n) { return n < 2 ? n : fib_plain(n - 1) + fib_plain(n - 2); }

/* Calls with n >= 2 in fib(n)'s tree: the ULTs it makes. */
static long fib_calls(int n) { return n < 2 ? 0 : 1 + fib_calls(n - 1) + fib_calls(n - 2); }

/* The largest n whose tree makes at most `budget` ULTs. */
static int fib_n_for(long budget)
{
    int n = 6;
    while (n < 24 && fib_calls(n + 1) <= budget)
        n++;
    return n;
}

static void fib_root(void *arg)
{
    fib_arg_t *a = arg;
    a->result = fib_rec(a->n);
}

/* Runs fib(n) from a ULT queued in pool; checks the value and the count. */
static void check_fib(coexec_pool_t pool, int child_first)
{
    int n = fib_n_for(ch_iters(6000, 60));
    g_fib_child_first = child_first;
    atomic_store(&g_fib_ults, 0);
    fib_arg_t a = {n, -1};
    CH_ASSERT_OK(ch_run_ult_in(pool, fib_root, &a));
    CH_ASSERT_EQ(a.result, fib_plain(n));
    CH_ASSERT_EQ(atomic_load(&g_fib_ults), fib_calls(n));
    g_fib_child_first = 0;
}

static void print_ranks(int n)
{
    printf("[runs per stream:");
    for (int i = 0; i < n && i < 16; i++)
        printf(" %d", atomic_load(&g_rank_runs[i]));
    printf("] ");
}

static void run_randws_deques(int steal_half)
{
    ch_init(1);
    coexec_pool_config_t pc;
    CH_ASSERT_OK(coexec_pool_config_init(&pc));
    pc.steal_half = steal_half;
    coexec_pool_t pools[NSTEAL];
    for (int i = 0; i < NSTEAL; i++)
        CH_ASSERT_OK_FATAL(coexec_pool_create_ex(COEXEC_POOL_DEQUE, COEXEC_ACCESS_MPMC,
                                                 &pc, &pools[i]));
    coexec_sched_t s[NSTEAL];
    coexec_xstream_t xs[NSTEAL];
    for (int i = 0; i < NSTEAL; i++) {
        coexec_pool_t mine[NSTEAL];
        for (int j = 0; j < NSTEAL; j++)
            mine[j] = pools[(i + j) % NSTEAL]; /* own pool, then the victims */
        CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_RANDWS, mine, NSTEAL, NULL, &s[i]));
    }
    for (int i = 0; i < NSTEAL; i++)
        stream_with(s[i], &xs[i]);
    for (int i = 0; i < 16; i++)
        atomic_store(&g_rank_runs[i], 0);
    long n = ch_iters(20000, 400);
    hits_new(n);
    cnt_arg_t *args = calloc((size_t)n, sizeof *args);
    CU_ASSERT_FATAL(args != NULL);
    /* Everything into stream 0's deque: the others must steal. */
    for (long i = 0; i < n; i++) {
        args[i].idx = i;
        if (i % 3 == 0)
            CH_ASSERT_OK(coexec_thread_create(pools[0], srun_ult, &args[i], NULL, NULL));
        else
            CH_ASSERT_OK(coexec_tasklet_create(pools[0], srun_tasklet, &args[i], NULL));
    }
    CH_WAIT(atomic_load(&g_hit_total) == n);
    CH_ASSERT_EQ(hits_bad_and_free(), 0);
    print_ranks(NSTEAL + 1);
    free(args);
    /* Nested fork-join: each ULT forks into its own stream's deque. */
    check_fib(pools[0], 0);
    check_fib(pools[2], 0);
    for (int i = 0; i < NSTEAL; i++)
        CH_ASSERT_OK(coexec_xstream_free(&xs[i]));
    for (int i = 0; i < NSTEAL; i++)
        CH_ASSERT_OK(coexec_sched_free(&s[i]));
    for (int i = 0; i < NSTEAL; i++) {
        CH_ASSERT_EQ(pool_size(pools[i]), 0);
        CH_ASSERT_OK(coexec_pool_free(&pools[i]));
    }
    ch_finalize();
}

static void t_randws_deques(void) { run_randws_deques(0); }
static void t_randws_deques_half(void) { run_randws_deques(1); }

static void run_default_randws(int by_env)
{
    if (by_env) {
        setenv("COEXEC_SCHED", "randws", 1);
        ch_init(NSTEAL);
    } else {
        ch_init_ex(NSTEAL, COEXEC_SCHED_RANDWS, 1);
    }
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_get_config(&cfg));
    CH_ASSERT_EQ(cfg.sched_kind, COEXEC_SCHED_RANDWS);
    for (int r = 0; r < NSTEAL; r++) {
        coexec_pool_kind_t kind = 0;
        CH_ASSERT_OK(coexec_pool_get_info(main_pool_of(r), &kind, NULL));
        CH_ASSERT_EQ(kind, COEXEC_POOL_DEQUE);
    }
    for (int i = 0; i < 16; i++)
        atomic_store(&g_rank_runs[i], 0);
    long n = ch_iters(20000, 400);
    hits_new(n);
    cnt_arg_t *args = calloc((size_t)n, sizeof *args);
    CU_ASSERT_FATAL(args != NULL);
    /* Mostly into stream 1's pool, some into every other one. */
    for (long i = 0; i < n; i++) {
        args[i].idx = i;
        coexec_pool_t p = main_pool_of(i % 4 == 0 ? (int)(i / 4) % NSTEAL : 1);
        if (i % 3 == 0)
            CH_ASSERT_OK(coexec_thread_create(p, srun_ult, &args[i], NULL, NULL));
        else
            CH_ASSERT_OK(coexec_tasklet_create(p, srun_tasklet, &args[i], NULL));
    }
    CH_WAIT(atomic_load(&g_hit_total) == n);
    CH_ASSERT_EQ(hits_bad_and_free(), 0);
    print_ranks(NSTEAL);
    free(args);
    /* fib from the main ULT (forks into the primary's deque) and from a
     * ULT on stream 2. */
    int fn = fib_n_for(ch_iters(6000, 60));
    atomic_store(&g_fib_ults, 0);
    CH_ASSERT_EQ(fib_rec(fn), fib_plain(fn));
    CH_ASSERT_EQ(atomic_load(&g_fib_ults), fib_calls(fn));
    check_fib(main_pool_of(2), 0);
    ch_finalize();
}

/* A RANDWS scheduler with one pool steals from the other streams' default
 * pools. Stream 1 is held by a pinned spinner and the main ULT sleeps, so
 * only the RANDWS stream can run what is queued on stream 1. */
static atomic_int g_hold_started;

static void hold_ult(void *arg)
{
    long n = (long)(intptr_t)arg;
    atomic_store(&g_hold_started, 1);
    double t0 = ch_now();
    while (atomic_load(&g_hit_total) < n && ch_now() - t0 < CH_WAIT_LIMIT_S)
        ;
}

static void sleep_until_hits(long n)
{
    double t0 = ch_now();
    while (atomic_load(&g_hit_total) < n && ch_now() - t0 < CH_WAIT_LIMIT_S) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

static void t_randws_one_pool(void)
{
    ch_init(2);
    coexec_pool_t own;
    CH_ASSERT_OK_FATAL(coexec_pool_create_ex(COEXEC_POOL_DEQUE, COEXEC_ACCESS_MPMC,
                                             NULL, &own));
    coexec_sched_t s;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_RANDWS, &own, 1, NULL, &s));
    long n = ch_iters(2000, 50);
    hits_new(n);
    for (int i = 0; i < 16; i++)
        atomic_store(&g_rank_runs[i], 0);
    coexec_thread_attr_t at;
    CH_ASSERT_OK(coexec_thread_attr_init(&at));
    at.pinned = 1;
    atomic_store(&g_hold_started, 0);
    coexec_thread_t hold;
    CH_ASSERT_OK(coexec_thread_create(main_pool_of(1), hold_ult, (void *)(intptr_t)n,
                                      &at, &hold));
    CH_WAIT(atomic_load(&g_hold_started));
    cnt_arg_t *args = calloc((size_t)n, sizeof *args);
    CU_ASSERT_FATAL(args != NULL);
    for (long i = 0; i < n; i++) {
        args[i].idx = i;
        if (i % 3 == 0)
            CH_ASSERT_OK(coexec_thread_create(main_pool_of(1), srun_ult, &args[i], NULL, NULL));
        else
            CH_ASSERT_OK(coexec_tasklet_create(main_pool_of(1), srun_tasklet, &args[i], NULL));
    }
    coexec_xstream_t xs;
    stream_with(s, &xs);
    int rank = -1;
    CH_ASSERT_OK(coexec_xstream_get_rank(xs, &rank));
    sleep_until_hits(n);
    CH_ASSERT_EQ(atomic_load(&g_hit_total), n);
    CH_ASSERT_OK(coexec_thread_free(&hold));
    CH_ASSERT_EQ(hits_bad_and_free(), 0);
    /* Every unit started on the RANDWS stream. */
    CH_ASSERT_EQ(atomic_load(&g_rank_runs[rank]), n);
    free(args);
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    CH_ASSERT_OK(coexec_sched_free(&s));
    CH_ASSERT_OK(coexec_pool_free(&own));
    ch_finalize();
}

static void t_default_randws_cfg(void) { run_default_randws(0); }
static void t_default_randws_env(void) { run_default_randws(1); }

/* ======================================================================= */
/* migrate                                                                  */
/* ======================================================================= */

static void t_migrate_self(void)
{
    /* Two streams of their own (no stealing), then the default setup with
     * stealing on four streams: the ULT observes the stream it asked for. */
    ch_init(1);
    ch_stream_t s[2];
    CH_ASSERT_OK_FATAL(ch_stream_create(&s[0], COEXEC_SCHED_BASIC_WAIT));
    CH_ASSERT_OK_FATAL(ch_stream_create(&s[1], COEXEC_SCHED_BASIC_WAIT));
    hop_t h;
    memset(&h, 0, sizeof h);
    h.nto = 2;
    h.rounds = (int)ch_iters(50, 3);
    for (int i = 0; i < 2; i++) {
        h.to[i] = s[1 - i].xs;
        h.to_rank[i] = s[1 - i].rank;
    }
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create(s[0].pool, hop_ult, &h, NULL, &t));
    CH_WAIT(atomic_load(&h.done));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(atomic_load(&h.bad), 0);
    /* Moving itself to a pool: it runs where that pool is served. */
    CH_ASSERT_OK(ch_stream_free(&s[0]));
    CH_ASSERT_OK(ch_stream_free(&s[1]));
    ch_finalize();

    ch_init_ex(NSTEAL, COEXEC_SCHED_RANDWS, 1);
    memset(&h, 0, sizeof h);
    h.nto = NSTEAL;
    h.rounds = (int)ch_iters(50, 3);
    for (int i = 0; i < NSTEAL; i++) {
        h.to_rank[i] = (i + 1) % NSTEAL;
        CH_ASSERT_OK(coexec_xstream_by_rank(h.to_rank[i], &h.to[i]));
    }
    CH_ASSERT_OK(coexec_thread_create(main_pool_of(1), hop_ult, &h, NULL, &t));
    CH_WAIT(atomic_load(&h.done));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(atomic_load(&h.bad), 0);
    ch_finalize();
}

/* A ULT that logs its stream at each step. */
typedef struct where {
    atomic_int step;      /* steps done */
    atomic_int rank[4];   /* rank at each step */
    atomic_int go;        /* the test lets it go on */
    int suspend;          /* step 1 suspends instead of spinning */
} where_t;

static void where_ult(void *arg)
{
    where_t *w = arg;
    atomic_store(&w->rank[0], self_rank());
    atomic_store(&w->step, 1);
    if (w->suspend) {
        CH_CHECK_RC(coexec_self_suspend(), COEXEC_OK);
    } else {
        /* Running: the migration applies at the next yield. */
        while (!atomic_load(&w->go))
            ;
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    }
    atomic_store(&w->rank[1], self_rank());
    atomic_store(&w->step, 2);
    CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    atomic_store(&w->rank[2], self_rank());
    atomic_store(&w->step, 3);
}

static void t_migrate_others(void)
{
    ch_init(1);
    ch_stream_t s1, s2;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s1, COEXEC_SCHED_BASIC_WAIT));
    CH_ASSERT_OK_FATAL(ch_stream_create(&s2, COEXEC_SCHED_BASIC_WAIT));
    coexec_pool_t idle;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &idle));

    /* Queued in a pool nobody serves: it moves at once. */
    where_t w;
    memset(&w, 0, sizeof w);
    w.suspend = 1;
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create(idle, where_ult, &w, NULL, &t));
    CH_ASSERT_OK(coexec_thread_migrate_to(t, s2.pool));
    CH_ASSERT_EQ(pool_size(idle), 0);
    CH_WAIT(atomic_load(&w.step) == 1);
    CH_ASSERT_EQ(atomic_load(&w.rank[0]), s2.rank);

    /* Parked: it moves when woken. */
    CH_WAIT(state_of(t) == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_OK(coexec_thread_migrate_to(t, s1.pool));
    CH_ASSERT_OK(coexec_thread_resume(t));
    CH_WAIT(atomic_load(&w.step) == 3);
    CH_ASSERT_EQ(atomic_load(&w.rank[1]), s1.rank);
    CH_ASSERT_EQ(atomic_load(&w.rank[2]), s1.rank); /* its home moved */
    CH_ASSERT_OK(coexec_thread_free(&t));

    /* Running: it moves at its next yield. */
    memset(&w, 0, sizeof w);
    CH_ASSERT_OK(coexec_thread_create(s1.pool, where_ult, &w, NULL, &t));
    CH_WAIT(atomic_load(&w.step) == 1);
    CH_ASSERT_OK(coexec_thread_migrate_to(t, s2.pool));
    atomic_store(&w.go, 1);
    CH_WAIT(atomic_load(&w.step) == 3);
    CH_ASSERT_EQ(atomic_load(&w.rank[0]), s1.rank);
    CH_ASSERT_EQ(atomic_load(&w.rank[1]), s2.rank);
    CH_ASSERT_EQ(atomic_load(&w.rank[2]), s2.rank);
    /* Finished: ESTATE. Bad pool: EHANDLE. */
    CH_WAIT(state_of(t) == COEXEC_UNIT_TERMINATED);
    CH_ASSERT_RC(coexec_thread_migrate_to(t, s1.pool), COEXEC_ESTATE);
    CH_ASSERT_RC(coexec_thread_migrate_to_xstream(t, s1.xs), COEXEC_ESTATE);
    CH_ASSERT_OK(coexec_thread_free(&t));

    memset(&w, 0, sizeof w);
    w.suspend = 1;
    CH_ASSERT_OK(coexec_thread_create(idle, where_ult, &w, NULL, &t));
    CH_ASSERT_RC(coexec_thread_migrate_to(t, (coexec_pool_t){0}), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_migrate_to_xstream(t, (coexec_xstream_t){0}),
                 COEXEC_EHANDLE);
    /* migrate_to_xstream of a queued ULT: to that stream's first pool. */
    CH_ASSERT_OK(coexec_thread_migrate_to_xstream(t, s1.xs));
    CH_WAIT(atomic_load(&w.step) == 1);
    CH_ASSERT_EQ(atomic_load(&w.rank[0]), s1.rank);
    CH_WAIT(state_of(t) == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_OK(coexec_thread_resume(t));
    CH_ASSERT_OK(coexec_thread_free(&t));

    /* The primary's main ULT is bound to its stream. */
    coexec_thread_t me = self_thread();
    CH_ASSERT_RC(coexec_thread_migrate_to(me, s1.pool), COEXEC_EPERM);
    CH_ASSERT_RC(coexec_thread_migrate_to_xstream(me, s1.xs), COEXEC_EPERM);
    CH_ASSERT_EQ(self_rank(), 0);

    /* A stream that has stopped takes no migrating unit. */
    CH_ASSERT_OK(coexec_xstream_join(s2.xs));
    memset(&w, 0, sizeof w);
    CH_ASSERT_OK(coexec_thread_create(idle, where_ult, &w, NULL, &t));
    CH_ASSERT_RC(coexec_thread_migrate_to_xstream(t, s2.xs), COEXEC_ESTATE);
    CH_ASSERT_EQ(pool_size(idle), 1);
    atomic_store(&w.go, 1);
    CH_ASSERT_OK(coexec_thread_migrate_to(t, s1.pool));
    CH_WAIT(atomic_load(&w.step) == 3);
    CH_ASSERT_EQ(atomic_load(&w.rank[0]), s1.rank);
    CH_ASSERT_OK(coexec_thread_free(&t));

    CH_ASSERT_OK(coexec_pool_free(&idle));
    CH_ASSERT_OK(ch_stream_free(&s1));
    CH_ASSERT_OK(ch_stream_free(&s2));
    ch_finalize();
}

/* Pinned units: refuse migration and are never stolen. */
typedef struct pin_arg {
    long idx;
    int yields;
    int pinned;
    coexec_pool_t other; /* a pool to try migrating to */
} pin_arg_t;

static atomic_int g_pin_moved, g_unpinned_away;

static void pin_ult(void *arg)
{
    pin_arg_t *p = arg;
    int first = self_rank();
    if (p->pinned) {
        int pinned = 0;
        coexec_thread_t me = self_thread();
        CH_CHECK_RC(coexec_unit_get_pinned(coexec_thread_unit(me), &pinned), COEXEC_OK);
        CH_CHECK_EQ(pinned, 1);
        if (p->idx % 8 == 0)
            CH_CHECK_RC(coexec_thread_migrate_to(me, p->other), COEXEC_EPERM);
    }
    for (int i = 0; i < p->yields; i++) {
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
        int now = self_rank();
        if (p->pinned && now != first)
            atomic_fetch_add(&g_pin_moved, 1);
    }
    if (p->pinned && first != 1)
        atomic_fetch_add(&g_pin_moved, 1);
    if (!p->pinned && self_rank() != 1)
        atomic_fetch_add(&g_unpinned_away, 1);
    hit(p->idx);
}

static void t_pinned(void)
{
    ch_init_ex(NSTEAL, COEXEC_SCHED_RANDWS, 1);
    coexec_pool_t p1 = main_pool_of(1), p2 = main_pool_of(2);
    coexec_xstream_t x2;
    CH_ASSERT_OK(coexec_xstream_by_rank(2, &x2));

    /* Flag and errors, on a queued ULT of a pool nobody serves. */
    coexec_pool_t idle;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &idle));
    coexec_thread_attr_t at;
    CH_ASSERT_OK(coexec_thread_attr_init(&at));
    CH_ASSERT_EQ(at.pinned, 0);
    pin_arg_t one = {-1, 0, 1, p2};
    at.pinned = 1;
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create(idle, pin_ult, &one, &at, &t));
    int pinned = 0;
    CH_ASSERT_OK(coexec_unit_get_pinned(coexec_thread_unit(t), &pinned));
    CH_ASSERT_EQ(pinned, 1);
    CH_ASSERT_RC(coexec_thread_migrate_to(t, p2), COEXEC_EPERM);
    CH_ASSERT_RC(coexec_thread_migrate_to_xstream(t, x2), COEXEC_EPERM);
    CH_ASSERT_EQ(pool_size(idle), 1);
    /* A thief takes nothing. */
    coexec_unit_t u = {0};
    CH_ASSERT_OK(coexec_pool_steal(idle, &u));
    CU_ASSERT(CH_IS_NULL(u));
    /* Unpinned, it may move; pinned again, it may not. */
    CH_ASSERT_OK(coexec_unit_set_pinned(coexec_thread_unit(t), 0));
    CH_ASSERT_OK(coexec_unit_get_pinned(coexec_thread_unit(t), &pinned));
    CH_ASSERT_EQ(pinned, 0);
    CH_ASSERT_OK(coexec_unit_set_pinned(coexec_thread_unit(t), 1));
    CH_ASSERT_RC(coexec_thread_migrate_to(t, p2), COEXEC_EPERM);
    /* Among unpinned ones, a thief takes an unpinned unit. */
    coexec_tasklet_t k1, k2;
    CH_ASSERT_OK(coexec_tasklet_create(idle, noop_tasklet, NULL, &k1));
    CH_ASSERT_OK(coexec_tasklet_create(idle, noop_tasklet, NULL, &k2));
    CH_ASSERT_OK(coexec_unit_set_pinned(coexec_tasklet_unit(k2), 1));
    CH_ASSERT_OK(coexec_pool_steal(idle, &u));
    CU_ASSERT(CH_SAME(u, coexec_tasklet_unit(k1)));
    CH_ASSERT_OK(coexec_pool_steal(idle, &u));
    CU_ASSERT(CH_IS_NULL(u));
    CH_ASSERT_EQ(pool_size(idle), 2);
    CH_ASSERT_OK(coexec_pool_push(p1, coexec_tasklet_unit(k1)));
    CH_ASSERT_OK(coexec_tasklet_free(&k1));
    /* The pinned ones still run on whatever stream pops their pool. */
    CH_ASSERT_RC(coexec_thread_migrate_to(t, p1), COEXEC_EPERM);
    for (int i = 0; i < 2; i++) {
        CH_ASSERT_OK(coexec_pool_pop(idle, &u));
        CU_ASSERT(!CH_IS_NULL(u));
        if (!CH_IS_NULL(u))
            CH_ASSERT_OK(coexec_pool_push(p1, u));
    }
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_tasklet_free(&k2));

    /* Many pinned and unpinned ULTs queued on stream 1, four stealing
     * streams: the pinned ones run on stream 1 at every resumption. */
    long n = ch_iters(2000, 64);
    hits_new(n);
    atomic_store(&g_pin_moved, 0);
    atomic_store(&g_unpinned_away, 0);
    pin_arg_t *args = calloc((size_t)n, sizeof *args);
    CU_ASSERT_FATAL(args != NULL);
    for (long i = 0; i < n; i++) {
        args[i] = (pin_arg_t){i, 3, (int)(i % 2), p2};
        at.pinned = args[i].pinned;
        CH_ASSERT_OK(coexec_thread_create(p1, pin_ult, &args[i], &at, NULL));
    }
    CH_WAIT(atomic_load(&g_hit_total) == n);
    CH_ASSERT_EQ(hits_bad_and_free(), 0);
    CH_ASSERT_EQ(atomic_load(&g_pin_moved), 0);
    printf("[unpinned ULTs that ended on another stream: %d of %ld] ",
           atomic_load(&g_unpinned_away), n / 2);
    free(args);
    CH_ASSERT_OK(coexec_pool_free(&idle));
    ch_finalize();
}

/* ======================================================================= */
/* yield_to                                                                 */
/* ======================================================================= */

static coexec_thread_t g_yt_target;

static void yt_first(void *arg)
{
    (void)arg;
    olog_add(&g_log, 1);
    CH_CHECK_RC(coexec_yield_to(self_thread()), COEXEC_EDEADLK);
    CH_CHECK_RC(coexec_yield_to(g_yt_target), COEXEC_OK);
    olog_add(&g_log, 5);
}

static void t_yield_to_order(void)
{
    ch_init(1);
    ch_stream_t s;
    coexec_sched_config_t sc = no_steal_cfg();
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &s.pool));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &s.pool, 1, &sc, &s.sched));
    olog_reset(&g_log);
    /* A runs first and yields to D, queued behind B and C: D runs next,
     * then B, C, then A (queued behind them). */
    coexec_thread_t a, b, c;
    CH_ASSERT_OK(coexec_thread_create(s.pool, yt_first, NULL, NULL, &a));
    CH_ASSERT_OK(coexec_thread_create(s.pool, log_ult, (void *)3, NULL, &b));
    CH_ASSERT_OK(coexec_thread_create(s.pool, log_ult, (void *)4, NULL, &c));
    CH_ASSERT_OK(coexec_thread_create(s.pool, log_ult, (void *)2, NULL, &g_yt_target));
    coexec_xstream_attr_t xa;
    CH_ASSERT_OK(coexec_xstream_attr_init(&xa));
    xa.sched = s.sched;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&xa, &s.xs));
    CH_ASSERT_OK(coexec_xstream_join(s.xs));
    int want[] = {1, 2, 3, 4, 5};
    olog_expect(&g_log, want, 5, "yield_to order");
    /* Finished (not freed): ESTATE. */
    CH_ASSERT_RC(coexec_yield_to(g_yt_target), COEXEC_ESTATE);
    coexec_thread_t *all[] = {&a, &b, &c, &g_yt_target};
    for (int i = 0; i < 4; i++)
        CH_ASSERT_OK(coexec_thread_free(all[i]));
    CH_ASSERT_OK(coexec_xstream_free(&s.xs));
    CH_ASSERT_OK(coexec_sched_free(&s.sched));
    CH_ASSERT_OK(coexec_pool_free(&s.pool));

    /* From the primary's main ULT to a ULT of its own pool. */
    olog_reset(&g_log);
    coexec_thread_t x;
    CH_ASSERT_OK(coexec_thread_create(main_pool_of(0), log_ult, (void *)9, NULL, &x));
    CH_ASSERT_OK(coexec_yield_to(x));
    CH_ASSERT_EQ(atomic_load(&g_log.n), 1); /* it ran before we came back */
    CH_ASSERT_OK(coexec_thread_free(&x));
    ch_finalize();
}

static atomic_int g_spin_started, g_spin_stop;

static void spin_ult(void *arg)
{
    (void)arg;
    atomic_store(&g_spin_started, 1);
    while (!atomic_load(&g_spin_stop))
        ;
}

static void park_ult(void *arg)
{
    (void)arg;
    atomic_store(&g_spin_started, 2);
    CH_CHECK_RC(coexec_self_suspend(), COEXEC_OK);
}

static coexec_poll_status_t yt_from_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    CH_CHECK_RC(coexec_yield_to(*(coexec_thread_t *)arg), COEXEC_ECONTEXT);
    return COEXEC_READY;
}

static void *yt_from_pthread(void *arg)
{
    CH_CHECK_RC(coexec_yield_to(*(coexec_thread_t *)arg), COEXEC_ECONTEXT);
    return NULL;
}

/* A yields to a ULT of a user pool that has no remove: ESTATE. */
static coexec_thread_t g_yt_held;

static void yt_held(void *arg)
{
    (void)arg;
    CH_CHECK_RC(coexec_yield_to(g_yt_held), COEXEC_ESTATE);
    olog_add(&g_log, 1);
}

static void t_yield_to_errors(void)
{
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    /* Running on another stream: ESTATE. */
    atomic_store(&g_spin_started, 0);
    atomic_store(&g_spin_stop, 0);
    coexec_thread_t spin, park;
    CH_ASSERT_OK(coexec_thread_create(s.pool, spin_ult, NULL, NULL, &spin));
    CH_WAIT(atomic_load(&g_spin_started) == 1);
    CH_ASSERT_RC(coexec_yield_to(spin), COEXEC_ESTATE);
    atomic_store(&g_spin_stop, 1);
    CH_ASSERT_OK(coexec_thread_free(&spin));
    /* Parked: ESTATE. */
    CH_ASSERT_OK(coexec_thread_create(s.pool, park_ult, NULL, NULL, &park));
    CH_WAIT(atomic_load(&g_spin_started) == 2);
    CH_WAIT(state_of(park) == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_RC(coexec_yield_to(park), COEXEC_ESTATE);
    /* From a tasklet and from an external thread: ECONTEXT. */
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create(s.pool, yt_from_tasklet, &park, &k));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    ch_pthread_t th;
    ch_pthread_start(&th, yt_from_pthread, &park);
    ch_pthread_join(&th);
    CH_ASSERT_OK(coexec_thread_resume(park));
    CH_ASSERT_OK(coexec_thread_free(&park));
    /* A tasklet's handle is no ULT; the null handle is none either. */
    coexec_tasklet_t q;
    coexec_pool_t idle;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &idle));
    CH_ASSERT_OK(coexec_tasklet_create(idle, noop_tasklet, NULL, &q));
    coexec_thread_t as_thread = {q.p, q.gen};
    CH_ASSERT_RC(coexec_yield_to(as_thread), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_yield_to((coexec_thread_t){0}), COEXEC_EHANDLE);
    coexec_unit_t u;
    CH_ASSERT_OK(coexec_pool_pop(idle, &u));
    CH_ASSERT_OK(coexec_pool_push(s.pool, u));
    CH_ASSERT_OK(coexec_tasklet_free(&q));
    CH_ASSERT_OK(coexec_pool_free(&idle));
    CH_ASSERT_OK(ch_stream_free(&s));

    /* A pool that cannot give a unit up (a user pool without remove). */
    olog_reset(&g_log);
    coexec_pool_t pools[2];
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pools[0]));
    CH_ASSERT_OK_FATAL(coexec_pool_create_user(&wrap_ops, COEXEC_ACCESS_MPMC, NULL, &pools[1]));
    coexec_sched_config_t sc = no_steal_cfg();
    coexec_sched_t sched;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, pools, 2, &sc, &sched));
    coexec_thread_t a;
    CH_ASSERT_OK(coexec_thread_create(pools[0], yt_held, NULL, NULL, &a));
    CH_ASSERT_OK(coexec_thread_create(pools[1], log_ult, (void *)2, NULL, &g_yt_held));
    coexec_xstream_t xs;
    stream_with(sched, &xs);
    CH_ASSERT_OK(coexec_xstream_join(xs));
    int want[] = {1, 2};
    olog_expect(&g_log, want, 2, "yield_to refused by a pool without remove");
    CH_ASSERT_OK(coexec_thread_free(&a));
    CH_ASSERT_OK(coexec_thread_free(&g_yt_held));
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    CH_ASSERT_OK(coexec_sched_free(&sched));
    CH_ASSERT_OK(coexec_pool_free(&pools[0]));
    CH_ASSERT_OK(coexec_pool_free(&pools[1]));
    ch_finalize();
}

/* ======================================================================= */
/* child_first                                                              */
/* ======================================================================= */

static coexec_pool_t g_cf_pool;

static void cf_child(void *arg)
{
    olog_add(&g_log, 2);
    if (arg) {
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
        olog_add(&g_log, 5);
    }
}

static void cf_parent(void *arg)
{
    olog_add(&g_log, 1);
    coexec_thread_t c;
    CH_CHECK_RC(coexec_thread_create_child_first(g_cf_pool, cf_child, arg, NULL, &c),
                COEXEC_OK);
    olog_add(&g_log, 3);
    CH_CHECK_RC(coexec_thread_free(&c), COEXEC_OK);
}

/*
 * The parent goes back to its pool the way a new unit is pushed
 * (thread.h): in a LIFO pool it is taken next, in a FIFO pool it waits
 * behind the units already queued.
 */
static void run_cf_order(int child_yields, coexec_pool_kind_t kind)
{
    ch_init(1);
    coexec_pool_t pool;
    CH_ASSERT_OK_FATAL(coexec_pool_create(kind, COEXEC_ACCESS_MPMC, &pool));
    g_cf_pool = pool;
    coexec_sched_config_t sc = no_steal_cfg();
    coexec_sched_t sched;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &pool, 1, &sc, &sched));
    olog_reset(&g_log);
    /* The parent is taken first; the other unit is queued behind it. */
    void *parg = child_yields ? (void *)1 : NULL;
    if (kind == COEXEC_POOL_FIFO)
        CH_ASSERT_OK(coexec_thread_create(pool, cf_parent, parg, NULL, NULL));
    CH_ASSERT_OK(coexec_thread_create(pool, log_ult, (void *)4, NULL, NULL));
    if (kind == COEXEC_POOL_LIFO)
        CH_ASSERT_OK(coexec_thread_create(pool, cf_parent, parg, NULL, NULL));
    coexec_xstream_t xs;
    stream_with(sched, &xs);
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    /* The child runs before the parent goes on; in a LIFO pool the parent
     * goes on before the unit queued behind it, in a FIFO pool after it; a
     * yielding child comes back last. */
    int want_lifo[] = {1, 2, 3, 4, 5};
    int want_fifo[] = {1, 2, 4, 3, 5};
    olog_expect(&g_log, kind == COEXEC_POOL_LIFO ? want_lifo : want_fifo,
                child_yields ? 5 : 4, "child-first order");
    CH_ASSERT_OK(coexec_sched_free(&sched));
    CH_ASSERT_OK(coexec_pool_free(&pool));
    ch_finalize();
}

static void t_cf_order(void)
{
    run_cf_order(0, COEXEC_POOL_LIFO);
    run_cf_order(0, COEXEC_POOL_FIFO);
}

static void t_cf_order_yield(void)
{
    run_cf_order(1, COEXEC_POOL_LIFO);
    run_cf_order(1, COEXEC_POOL_FIFO);
}

static coexec_poll_status_t cf_from_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    CH_CHECK_RC(coexec_thread_create_child_first(*(coexec_pool_t *)arg, cnt_ult,
                                                 NULL, NULL, NULL),
                COEXEC_ECONTEXT);
    return COEXEC_READY;
}

static void cf_errors_ult(void *arg)
{
    coexec_pool_t pool = *(coexec_pool_t *)arg;
    CH_CHECK_RC(coexec_thread_create_child_first(pool, NULL, NULL, NULL, NULL),
                COEXEC_EINVAL);
    CH_CHECK_RC(coexec_thread_create_child_first((coexec_pool_t){0}, cnt_ult,
                                                 NULL, NULL, NULL),
                COEXEC_EHANDLE);
}

static void t_cf_errors(void)
{
    ch_init(1);
    coexec_pool_t p0 = main_pool_of(0);
    /* The primary's main ULT is bound: it cannot leave for a child. */
    coexec_thread_t t = {0};
    CH_ASSERT_RC(coexec_thread_create_child_first(p0, cnt_ult, NULL, NULL, &t),
                 COEXEC_ECONTEXT);
    CU_ASSERT(CH_IS_NULL(t));
    ch_pthread_t th;
    (void)th;
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create(p0, cf_from_tasklet, &p0, &k));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    CH_ASSERT_OK(ch_run_ult_in(s.pool, cf_errors_ult, &s.pool));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* Detached child-first children counted, from parents on every stream. */
static void cnt_any(void *arg)
{
    (void)arg;
    atomic_fetch_add(&g_hit_total, 1);
}

static void cf_spawner(void *arg)
{
    long m = (long)(intptr_t)arg;
    coexec_xstream_t xs;
    coexec_pool_t pool;
    CH_CHECK_RC(coexec_xstream_self(&xs), COEXEC_OK);
    CH_CHECK_RC(coexec_xstream_get_main_pool(xs, &pool), COEXEC_OK);
    for (long i = 0; i < m; i++)
        CH_CHECK_RC(coexec_thread_create_child_first(pool, cnt_any, NULL, NULL, NULL),
                    COEXEC_OK);
    atomic_fetch_add(&g_rank_runs[15], 1);
}

static void run_cf_count(coexec_sched_kind_t kind)
{
    ch_init_ex(NSTEAL, kind, 1);
    /* fork-join with child-first forks */
    check_fib(main_pool_of(1), 1);
    /* detached children */
    atomic_store(&g_hit_total, 0);
    atomic_store(&g_rank_runs[15], 0);
    long m = ch_iters(2000, 50);
    int parents = 2 * NSTEAL;
    for (int i = 0; i < parents; i++)
        CH_ASSERT_OK(coexec_thread_create(main_pool_of(i % NSTEAL), cf_spawner,
                                          (void *)(intptr_t)m, NULL, NULL));
    CH_WAIT(atomic_load(&g_rank_runs[15]) == parents &&
            atomic_load(&g_hit_total) == parents * m);
    CH_ASSERT_EQ(atomic_load(&g_hit_total), parents * m);
    ch_finalize();
}

static void t_cf_count(void) { run_cf_count(COEXEC_SCHED_BASIC_WAIT); }
static void t_cf_count_randws(void) { run_cf_count(COEXEC_SCHED_RANDWS); }

/* ======================================================================= */
/* replace                                                                  */
/* ======================================================================= */

typedef struct gate {
    coexec_xstream_t xs;
    coexec_sched_t to;
    int self_replace;
    atomic_int started, open, rc;
    long idx;
} gate_t;

static void gate_ult(void *arg)
{
    gate_t *g = arg;
    if (g->self_replace)
        atomic_store(&g->rc, coexec_xstream_set_main_sched(g->xs, g->to));
    atomic_store(&g->started, 1);
    while (!atomic_load(&g->open))
        ;
    /* Back into the old scheduler's pool, three times. */
    for (int i = 0; i < 3; i++)
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    hit(g->idx);
}

enum { BY_OTHER_STREAM, BY_EXTERNAL, BY_OWN_UNIT };

static void run_replace(int who)
{
    ch_init(1);
    coexec_pool_t pold, pnew;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pold));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_LIFO, COEXEC_ACCESS_MPMC, &pnew));
    coexec_sched_config_t sc = no_steal_cfg();
    coexec_sched_t olds, news;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &pold, 1, &sc, &olds));
    if (who == BY_EXTERNAL)
        CH_ASSERT_OK_FATAL(coexec_sched_create_user(&us_ops, &pnew, 1, &sc, NULL, &news));
    else
        CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, &pnew, 1, &sc, &news));
    coexec_xstream_t xs;
    stream_with(olds, &xs);
    int rank = -1;
    CH_ASSERT_OK(coexec_xstream_get_rank(xs, &rank));

    long n = ch_iters(3000, 60);
    hits_new(n + 1);
    gate_t g;
    memset(&g, 0, sizeof g);
    g.xs = xs;
    g.to = news;
    g.self_replace = who == BY_OWN_UNIT;
    g.idx = n;
    atomic_store(&g.rc, 1);
    CH_ASSERT_OK(coexec_thread_create(pold, gate_ult, &g, NULL, NULL));
    CH_WAIT(atomic_load(&g.started));
    /* The stream is held by the gate: these stay queued in pold. */
    cnt_arg_t *args = calloc((size_t)n, sizeof *args);
    CU_ASSERT_FATAL(args != NULL);
    for (long i = 0; i < n; i++)
        CH_ASSERT_OK(cnt_create(pold, args, i, (int)(i % 3)));
    CH_ASSERT_EQ(pool_size(pold), n);
    if (who == BY_OTHER_STREAM) {
        CH_ASSERT_OK(coexec_xstream_set_main_sched(xs, news));
    } else if (who == BY_EXTERNAL) {
        ext_call_t c = {.op = EXT_SET_MAIN, .xs = xs, .sched = news};
        CH_ASSERT_OK(ext_call(&c));
    } else {
        CH_ASSERT_OK(atomic_load(&g.rc));
    }
    /* The new one is in use now; the old one until the switch. */
    CH_ASSERT_RC(coexec_xstream_set_main_sched(xs, news), COEXEC_EBUSY);
    atomic_store(&g.open, 1);
    CH_WAIT(atomic_load(&g_hit_total) == n + 1);
    CH_WAIT(CH_SAME(main_sched_of(xs), news));
    CH_ASSERT_EQ(pool_size(pold), 0);
    CH_ASSERT_EQ(hits_bad_and_free(), 0);
    free(args);
    /* The old scheduler is released: it can be freed. */
    wait_freed(&olds);
    /* The new scheduler serves its pool on the same stream. */
    atomic_store(&g_hit_total, 0);
    lvl_arg_t la[4];
    for (int i = 0; i < 4; i++)
        lvl_create(pnew, &la[i], -1, news, rank);
    CH_WAIT(atomic_load(&g_hit_total) == 4);
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    CH_ASSERT_OK(coexec_sched_free(&news));
    CH_ASSERT_OK(coexec_pool_free(&pold));
    CH_ASSERT_OK(coexec_pool_free(&pnew));
    ch_finalize();
}

static void t_replace_other(void) { run_replace(BY_OTHER_STREAM); }
static void t_replace_external(void) { run_replace(BY_EXTERNAL); }
static void t_replace_own_unit(void) { run_replace(BY_OWN_UNIT); }

/*
 * The primary's main scheduler replaced from its main ULT, then given
 * back: the main ULT and the units queued meanwhile go on, and the
 * replacement can be freed.
 */
static void t_replace_primary(void)
{
    ch_init(1);
    coexec_xstream_t x0;
    CH_ASSERT_OK(coexec_xstream_by_rank(0, &x0));
    coexec_sched_t dflt = main_sched_of(x0);
    coexec_pool_t p0 = main_pool_of(0), pn;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pn));
    coexec_sched_config_t sc = no_steal_cfg();
    coexec_sched_t news;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &pn, 1, &sc, &news));
    long n = ch_iters(1000, 40);
    hits_new(2 * n);
    cnt_arg_t *args = calloc((size_t)(2 * n), sizeof *args);
    CU_ASSERT_FATAL(args != NULL);
    for (long i = 0; i < n; i++)
        CH_ASSERT_OK(cnt_create(p0, args, i, (int)(i % 3)));
    CH_ASSERT_OK(coexec_xstream_set_main_sched(x0, news));
    CH_WAIT(CH_SAME(main_sched_of(x0), news));
    for (long i = n; i < 2 * n; i++)
        CH_ASSERT_OK(cnt_create(pn, args, i, (int)(i % 3)));
    CH_WAIT(atomic_load(&g_hit_total) == 2 * n);
    CH_ASSERT_EQ(self_rank(), 0);
    CH_ASSERT_EQ(hits_bad_and_free(), 0);
    free(args);
    /* Back to the default scheduler; the other one can then be freed. */
    CH_ASSERT_OK(coexec_xstream_set_main_sched(x0, dflt));
    CH_WAIT(CH_SAME(main_sched_of(x0), dflt));
    wait_freed(&news);
    CH_ASSERT_OK(coexec_pool_free(&pn));
    ch_finalize();
}

static void t_replace_busy(void)
{
    ch_init(1);
    ch_stream_t s1, s2;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s1, COEXEC_SCHED_BASIC_WAIT));
    CH_ASSERT_OK_FATAL(ch_stream_create(&s2, COEXEC_SCHED_BASIC_WAIT));
    /* In use by another stream. */
    CH_ASSERT_RC(coexec_xstream_set_main_sched(s1.xs, s2.sched), COEXEC_EBUSY);
    /* Stacked in a pool. */
    coexec_pool_t pz;
    coexec_sched_t z;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pz));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, &pz, 1, NULL, &z));
    CH_ASSERT_OK(coexec_pool_add_sched(s2.pool, z));
    CH_ASSERT_RC(coexec_xstream_set_main_sched(s1.xs, z), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_sched_finish(z));
    wait_freed(&z);
    /* Bad handles. */
    coexec_pool_t pn;
    coexec_sched_t fresh;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pn));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &pn, 1, NULL, &fresh));
    CH_ASSERT_RC(coexec_xstream_set_main_sched((coexec_xstream_t){0}, fresh), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_set_main_sched(s1.xs, (coexec_sched_t){0}), COEXEC_EHANDLE);
    /* A joined stream: ESTATE. */
    CH_ASSERT_OK(coexec_xstream_join(s1.xs));
    CH_ASSERT_RC(coexec_xstream_set_main_sched(s1.xs, fresh), COEXEC_ESTATE);
    CH_ASSERT_OK(coexec_sched_free(&fresh));
    CH_ASSERT_OK(coexec_pool_free(&pn));
    CH_ASSERT_OK(coexec_pool_free(&pz));
    CH_ASSERT_OK(ch_stream_free(&s1));
    CH_ASSERT_OK(ch_stream_free(&s2));
    ch_finalize();
}

/* ======================================================================= */
/* access                                                                   */
/* ======================================================================= */

static int skip_without_checks(void)
{
    if (CH_HAVE_CHECKS)
        return 0;
    printf("(library built without COEXEC_CHECKS: access checks not tested) ");
    CU_PASS("skipped");
    return 1;
}

/* Runs one call on the agent (the same pthread every time). */
static void ext_call_fn(void *arg) { ext_call_main(arg); }

static ext_call_t g_agent_call;

static int agent_do(ch_agent_t *a, enum ext_op op, coexec_pool_t pool,
                    coexec_unit_t unit)
{
    g_agent_call = (ext_call_t){.op = op, .pool = pool, .unit = unit, .rc = 1};
    ch_agent_run(a, ext_call_fn, &g_agent_call);
    return g_agent_call.rc;
}

/* Runs the popped unit u (tasklet k) on stream s and frees k. */
static void run_popped(ch_stream_t *s, coexec_unit_t u, coexec_tasklet_t *k)
{
    CU_ASSERT(CH_SAME(u, coexec_tasklet_unit(*k)));
    CH_ASSERT_OK(coexec_pool_push(s->pool, u));
    CH_ASSERT_OK(coexec_tasklet_free(k));
}

static void t_access_user_pool(void)
{
    if (skip_without_checks())
        return;
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    coexec_pool_t p;
    coexec_tasklet_t k;
    coexec_unit_t u, none = {0};
    ch_agent_t ag;
    ch_agent_start(&ag);

    /* PRIV: the main thread, first to push, owns it. */
    CH_ASSERT_OK_FATAL(coexec_pool_create_user(&edf_ops, COEXEC_ACCESS_PRIV, NULL, &p));
    edf_t *e = pool_data(p);
    CH_ASSERT_OK(coexec_tasklet_create(p, noop_tasklet, NULL, &k));
    CH_ASSERT_RC(agent_do(&ag, EXT_TASKLET, p, none), COEXEC_EACCESS);
    CH_ASSERT_RC(agent_do(&ag, EXT_POP, p, none), COEXEC_EACCESS);
    CH_ASSERT_EQ(pool_size(p), 1);
    CH_ASSERT_EQ(atomic_load(&e->pushes[COEXEC_PUSH_NEW]), 1);
    CH_ASSERT_EQ(atomic_load(&e->pops), 0);
    /* It still works for its owner. */
    CH_ASSERT_OK(coexec_pool_pop(p, &u));
    CH_ASSERT_RC(agent_do(&ag, EXT_PUSH, p, u), COEXEC_EACCESS);
    CH_ASSERT_OK(coexec_pool_push(p, u));
    CH_ASSERT_OK(coexec_pool_pop(p, &u));
    CH_ASSERT_EQ(pool_size(p), 0);
    run_popped(&s, u, &k);
    CH_ASSERT_OK(coexec_pool_free(&p));

    /* SPSC: the main thread produces, the agent consumes. */
    CH_ASSERT_OK_FATAL(coexec_pool_create_user(&edf_ops, COEXEC_ACCESS_SPSC, NULL, &p));
    e = pool_data(p);
    CH_ASSERT_OK(coexec_tasklet_create(p, noop_tasklet, NULL, &k));
    CH_ASSERT_RC(agent_do(&ag, EXT_TASKLET, p, none), COEXEC_EACCESS);
    CH_ASSERT_OK(agent_do(&ag, EXT_POP, p, none));
    u = g_agent_call.got;
    CU_ASSERT(CH_SAME(u, coexec_tasklet_unit(k)));
    CH_ASSERT_RC(agent_do(&ag, EXT_PUSH, p, u), COEXEC_EACCESS);
    CH_ASSERT_OK(coexec_pool_push(p, u));
    CH_ASSERT_RC(coexec_pool_pop(p, &u), COEXEC_EACCESS);
    CH_ASSERT_EQ(pool_size(p), 1);
    CH_ASSERT_EQ(atomic_load(&e->pushes[COEXEC_PUSH_NEW]), 2);
    CH_ASSERT_EQ(atomic_load(&e->pops), 1);
    CH_ASSERT_OK(agent_do(&ag, EXT_POP, p, none));
    run_popped(&s, g_agent_call.got, &k);
    CH_ASSERT_OK(coexec_pool_free(&p));

    /* MPSC: anyone pushes; the first popper (the main thread) consumes. */
    CH_ASSERT_OK_FATAL(coexec_pool_create_user(&edf_ops, COEXEC_ACCESS_MPSC, NULL, &p));
    CH_ASSERT_OK(coexec_tasklet_create(p, noop_tasklet, NULL, &k));
    CH_ASSERT_OK(coexec_pool_pop(p, &u));
    CH_ASSERT_OK(agent_do(&ag, EXT_PUSH, p, u));
    CH_ASSERT_RC(agent_do(&ag, EXT_POP, p, none), COEXEC_EACCESS);
    CH_ASSERT_EQ(pool_size(p), 1);
    CH_ASSERT_OK(coexec_pool_pop(p, &u));
    run_popped(&s, u, &k);
    CH_ASSERT_OK(coexec_pool_free(&p));

    ch_agent_stop(&ag);
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* From a ULT on another stream: pushes into a PRIV pool the main thread
 * owns are refused (child-first creation, migration). */
typedef struct priv_try {
    coexec_pool_t priv;
} priv_try_t;

static void priv_try_ult(void *arg)
{
    priv_try_t *pt = arg;
    CH_CHECK_RC(coexec_thread_create_child_first(pt->priv, cnt_ult, NULL, NULL, NULL),
                COEXEC_EACCESS);
    CH_CHECK_RC(coexec_thread_migrate_to(self_thread(), pt->priv), COEXEC_EACCESS);
    CH_CHECK_EQ(pool_size(pt->priv), 1);
}

static void t_access_stacking(void)
{
    if (skip_without_checks())
        return;
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    coexec_pool_t priv, pz;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_PRIV, &priv));
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create(priv, noop_tasklet, NULL, &k));
    /* add_sched from another thread */
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pz));
    coexec_sched_t z;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, &pz, 1, NULL, &z));
    ext_call_t c = {.op = EXT_ADD_SCHED, .pool = priv, .sched = z};
    CH_ASSERT_RC(ext_call(&c), COEXEC_EACCESS);
    CH_ASSERT_EQ(pool_size(priv), 1);
    /* z was not taken: it can be freed */
    CH_ASSERT_OK(coexec_sched_free(&z));
    priv_try_t pt = {priv};
    CH_ASSERT_OK(ch_run_ult_in(s.pool, priv_try_ult, &pt));
    /* The pool still works for its owner. */
    coexec_unit_t u;
    CH_ASSERT_OK(coexec_pool_pop(priv, &u));
    run_popped(&s, u, &k);
    CH_ASSERT_OK(coexec_pool_free(&priv));
    CH_ASSERT_OK(coexec_pool_free(&pz));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* ======================================================================= */

static const ch_test_t user_tests[] = {
    {"edf_pool_user_sched", t_edf_on_user_sched},
    {"wrapped_fifo_basic_sched", t_wrapped_basic},
    {"wrapped_fifo_user_sched", t_wrapped_user},
    {"bad_ops_and_init_errors", t_bad_ops},
    {"unit_queries", t_unit_queries},
    {"user_sched_migration_pool", t_user_migr_pool},
    {NULL, NULL}};
static const ch_test_t stack_tests[] = {
    {"three_levels_builtin", t_stack_builtin},
    {"user_sched_in_the_middle", t_stack_user_middle},
    {"user_sched_innermost", t_stack_user_inner},
    {"join_unwinds_the_stack", t_stack_join_unwinds},
    {"stacked_in_a_pool_of_two_streams", t_stack_shared},
    {NULL, NULL}};
static const ch_test_t prio_tests[] = {
    {"pools_in_priority_order", t_prio_order},
    {"aging_serves_low_pools", t_prio_aging},
    {NULL, NULL}};
static const ch_test_t steal_tests[] = {
    {"randws_over_deques", t_randws_deques},
    {"randws_over_deques_steal_half", t_randws_deques_half},
    {"default_setup_randws_config", t_default_randws_cfg},
    {"default_setup_randws_env", t_default_randws_env},
    {"randws_one_pool_steals_default_pools", t_randws_one_pool},
    {NULL, NULL}};
static const ch_test_t migrate_tests[] = {
    {"self_to_xstream", t_migrate_self},
    {"queued_parked_running", t_migrate_others},
    {"pinned_never_moves", t_pinned},
    {NULL, NULL}};
static const ch_test_t yield_to_tests[] = {
    {"runs_target_next", t_yield_to_order},
    {"errors", t_yield_to_errors},
    {NULL, NULL}};
static const ch_test_t child_first_tests[] = {
    {"child_before_parent", t_cf_order},
    {"yielding_child", t_cf_order_yield},
    {"errors", t_cf_errors},
    {"exact_count_4es", t_cf_count},
    {"exact_count_4es_randws", t_cf_count_randws},
    {NULL, NULL}};
static const ch_test_t replace_tests[] = {
    {"from_another_stream", t_replace_other},
    {"from_external_thread", t_replace_external},
    {"from_its_own_unit", t_replace_own_unit},
    {"busy_and_state_errors", t_replace_busy},
    {"primary_and_back", t_replace_primary},
    {NULL, NULL}};
static const ch_test_t access_tests[] = {
    {"user_pool_modes", t_access_user_pool},
    {"stacking_and_child_first", t_access_stacking},
    {NULL, NULL}};

static const ch_suite_t suites[] = {
    {"user", user_tests},
    {"stack", stack_tests},
    {"prio_sched", prio_tests},
    {"steal", steal_tests},
    {"migrate", migrate_tests},
    {"yield_to", yield_to_tests},
    {"child_first", child_first_tests},
    {"replace", replace_tests},
    {"access", access_tests},
    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
