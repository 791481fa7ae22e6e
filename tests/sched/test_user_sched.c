/*
 * tests/sched/test_user_sched.c: the user suite: a user pool (earliest
 * deadline first) under a user scheduler that takes from its pools in
 * order, a user pool that wraps a built-in FIFO pool, bad ops tables and
 * init errors, what a user pool may look at, a user scheduler's migration
 * pool
 */
#include "stack_test.h"

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

const coexec_sched_ops_t us_ops = {
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

const coexec_pool_ops_t edf_ops = {
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
        CH_CHECK_EQ(ch_self_rank(), j->want_rank);
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

olog_t g_log;

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

const coexec_pool_ops_t wrap_ops = {
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

/* A table of the first version (no steal) whose state is the wrap_t its
 * init is handed. */
static coexec_pool_ops_t shim_ops(coexec_unit_t (*pop)(void *))
{
    coexec_pool_ops_t o = {0};
    o.size = sizeof o;
    o.init = hand_over_init;
    o.push = wrap_push;
    o.pop = pop;
    o.get_size = wrap_size;
    return o;
}

static atomic_int g_pop_calls;

static coexec_unit_t pop_counted(void *state)
{
    atomic_fetch_add(&g_pop_calls, 1);
    return wrap_pop(state);
}

/* coexec_pool_pop asks a user pool's pop even when the runtime counts no
 * unit in it: the pool alone knows what it holds. */
static void t_pop_asks_user_pool(void)
{
    ch_init(1);
    wrap_t shim;
    memset(&shim, 0, sizeof shim);
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC,
                                          &shim.inner));
    coexec_pool_ops_t o = shim_ops(pop_counted);
    coexec_pool_t p;
    CH_ASSERT_OK_FATAL(coexec_pool_create_user(&o, COEXEC_ACCESS_MPMC, &shim, &p));
    atomic_store(&g_pop_calls, 0);
    coexec_unit_t u = {0};
    for (int i = 1; i <= 3; i++) {
        CH_ASSERT_OK(coexec_pool_pop(p, &u));
        CU_ASSERT(CH_IS_NULL(u));
        CH_ASSERT_EQ(atomic_load(&g_pop_calls), i);
    }
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create(p, noop_tasklet, NULL, &k));
    CH_ASSERT_OK(coexec_pool_pop(p, &u));
    CU_ASSERT(CH_SAME(u, coexec_tasklet_unit(k)));
    CH_ASSERT_EQ(atomic_load(&g_pop_calls), 4);
    size_t n = 9;
    CH_ASSERT_OK(coexec_pool_get_size(p, &n));
    CH_ASSERT_EQ(n, 0);
    CH_ASSERT_OK(coexec_pool_push(ch_main_pool(0), u));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_OK(coexec_pool_free(&p));
    CH_ASSERT_OK(coexec_pool_free(&shim.inner));
    ch_finalize();
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
    coexec_pool_ops_t old = shim_ops(wrap_pop);
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
    CH_ASSERT_OK(coexec_pool_push(ch_main_pool(0), u));
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
    CH_ASSERT_OK(coexec_pool_push(ch_main_pool(0), u));
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
        CH_ASSERT_OK(coexec_pool_push(ch_main_pool(0), u));
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

const ch_test_t schedx_user_tests[] = {
    {"edf_pool_user_sched", t_edf_on_user_sched},
    {"wrapped_fifo_basic_sched", t_wrapped_basic},
    {"wrapped_fifo_user_sched", t_wrapped_user},
    {"bad_ops_and_init_errors", t_bad_ops},
    {"pop_asks_the_user_pool", t_pop_asks_user_pool},
    {"unit_queries", t_unit_queries},
    {"user_sched_migration_pool", t_user_migr_pool},
    {NULL, NULL}};
