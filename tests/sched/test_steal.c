/*
 * tests/sched/test_steal.c: the steal suite: the RANDWS scheduler and work
 * stealing over DEQUE pools, the default setup configured for RANDWS; a
 * thief takes a free unit from among units bound to their stream
 */
#include "stack_test.h"

atomic_int g_rank_runs[16];

static void rank_count(void)
{
    int r = ch_self_rank();
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
void check_fib(coexec_pool_t pool, int child_first)
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
        CH_ASSERT_OK(coexec_pool_get_info(ch_main_pool(r), &kind, NULL));
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
        coexec_pool_t p = ch_main_pool(i % 4 == 0 ? (int)(i / 4) % NSTEAL : 1);
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
    check_fib(ch_main_pool(2), 0);
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
    CH_ASSERT_OK(coexec_thread_create(ch_main_pool(1), hold_ult, (void *)(intptr_t)n,
                                      &at, &hold));
    CH_WAIT(atomic_load(&g_hold_started));
    cnt_arg_t *args = calloc((size_t)n, sizeof *args);
    CU_ASSERT_FATAL(args != NULL);
    for (long i = 0; i < n; i++) {
        args[i].idx = i;
        if (i % 3 == 0)
            CH_ASSERT_OK(coexec_thread_create(ch_main_pool(1), srun_ult, &args[i], NULL, NULL));
        else
            CH_ASSERT_OK(coexec_tasklet_create(ch_main_pool(1), srun_tasklet, &args[i], NULL));
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

/* A default pool holding units bound to its stream (posted tasklets)
 * and one unit that may be stolen: an idle thief takes that one, never a
 * bound one, and every bound one runs on its stream. The main ULT posts
 * to its own stream (the posts go straight into its pool) and then holds
 * the primary, so only a thief can run the free unit. */
static atomic_int g_free_ran_on = -2, g_bound_wrong, g_bound_ran;

static coexec_poll_status_t bound_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    (void)arg;
    if (ch_self_rank() != 0)
        atomic_fetch_add(&g_bound_wrong, 1);
    atomic_fetch_add(&g_bound_ran, 1);
    return COEXEC_READY;
}

static coexec_poll_status_t free_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    (void)arg;
    atomic_store(&g_free_ran_on, ch_self_rank());
    return COEXEC_READY;
}

static void t_steal_past_bound_units(void)
{
    ch_init(2);
    coexec_xstream_t self;
    CH_ASSERT_OK_FATAL(coexec_xstream_self(&self));
    int rounds = (int)ch_iters(20, 3), k = (int)ch_iters(500, 50);
    atomic_store(&g_bound_ran, 0);
    atomic_store(&g_bound_wrong, 0);
    for (int round = 0; round < rounds; round++) {
        for (int i = 0; i < k; i++)
            CH_ASSERT_OK(coexec_xstream_post(self, bound_tasklet, NULL));
        atomic_store(&g_free_ran_on, -2);
        CH_ASSERT_OK(coexec_tasklet_create(ch_main_pool(0), free_tasklet, NULL,
                                           NULL));
        /* The primary stays ours (no coexec yield): only a thief runs it. */
        double t0 = ch_now();
        while (atomic_load(&g_free_ran_on) == -2 &&
               ch_now() - t0 < CH_WAIT_LIMIT_S)
            sched_yield();
        CH_ASSERT_EQ(atomic_load(&g_free_ran_on), 1);
        CH_ASSERT_EQ(atomic_load(&g_bound_ran), round * k);
        CH_WAIT(atomic_load(&g_bound_ran) == (round + 1) * k);
    }
    CH_ASSERT_EQ(atomic_load(&g_bound_wrong), 0);
    ch_finalize();
}

/* A DEQUE pool that the schedulers of three streams all pop first, while
 * an external thread replaces their schedulers over and over, fib runs in
 * the pool (its children pushed and joined at the bottom end by whichever
 * stream owns it) and a ULT there makes counted units. A scheduler that
 * starts while another stream's still uses the pool does not take its
 * bottom end over (two owners would both work it; ThreadSanitizer saw the
 * handover unordered): every unit runs once and fib's sum holds. */
typedef struct {
    coexec_xstream_t xs[3];
    coexec_sched_t s[3][2];
    atomic_int stop;
} churn_t;

static void *churn_thread(void *arg)
{
    churn_t *c = arg;
    int cur[3] = {0, 0, 0};
    while (!atomic_load(&c->stop)) {
        for (int i = 0; i < 3; i++) {
            int rc = coexec_xstream_set_main_sched(c->xs[i], c->s[i][cur[i] ^ 1]);
            if (rc == COEXEC_OK)
                cur[i] ^= 1;
            else
                CH_CHECK_RC(rc, COEXEC_EBUSY); /* its last switch is due */
        }
        sched_yield();
    }
    return NULL;
}

typedef struct {
    coexec_pool_t pool;
    cnt_arg_t *args;
    long n;
} counted_t;

static void make_counted(void *arg)
{
    counted_t *m = arg;
    for (long i = 0; i < m->n; i++)
        CH_CHECK_RC(cnt_create(m->pool, m->args, i, 2), COEXEC_OK);
}

static void t_deque_shared_owner(void)
{
    ch_init(1);
    coexec_pool_t dq;
    CH_ASSERT_OK_FATAL(coexec_pool_create_ex(COEXEC_POOL_DEQUE, COEXEC_ACCESS_MPMC,
                                             NULL, &dq));
    churn_t c;
    atomic_store(&c.stop, 0);
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < 2; k++)
            CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, &dq, 1,
                                                   NULL, &c.s[i][k]));
        stream_with(c.s[i][0], &c.xs[i]);
    }
    ch_pthread_t churn;
    ch_pthread_start(&churn, churn_thread, &c);
    for (int round = 0; round < (int)ch_iters(16, 2); round++) {
        check_fib(dq, 0);
        counted_t m = {dq, NULL, ch_iters(2000, 100)};
        hits_new(m.n);
        m.args = calloc((size_t)m.n, sizeof *m.args);
        CU_ASSERT_FATAL(m.args != NULL);
        CH_ASSERT_OK(ch_run_ult_in(dq, make_counted, &m));
        CH_WAIT(atomic_load(&g_hit_total) == m.n);
        CH_ASSERT_EQ(hits_bad_and_free(), 0);
        free(m.args);
    }
    atomic_store(&c.stop, 1);
    ch_pthread_join(&churn);
    for (int i = 0; i < 3; i++) {
        CH_ASSERT_OK(coexec_xstream_free(&c.xs[i]));
        for (int k = 0; k < 2; k++)
            CH_ASSERT_OK(coexec_sched_free(&c.s[i][k]));
    }
    CH_ASSERT_OK(coexec_pool_free(&dq));
    ch_finalize();
}

/* ======================================================================= */

const ch_test_t schedx_steal_tests[] = {
    {"randws_over_deques", t_randws_deques},
    {"randws_over_deques_steal_half", t_randws_deques_half},
    {"default_setup_randws_config", t_default_randws_cfg},
    {"default_setup_randws_env", t_default_randws_env},
    {"randws_one_pool_steals_default_pools", t_randws_one_pool},
    {"steal_past_bound_units", t_steal_past_bound_units},
    {"deque_shared_by_streams", t_deque_shared_owner},
    {NULL, NULL}};
