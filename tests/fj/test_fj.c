/*
 * tests/fj/test_fj.c: the fork-join tier (coexec/fj.h), suites of test_fj.
 * This file holds results, steal, nested, concurrency and contexts;
 * test_fj_rules.c the rules and errors suites, test_fj_loops.c the loops
 * and spill suites; fj_test.h what they share.
 *
 *   results      fib(0..25) against a serial fib; void tasks; tasks of 0 to
 *                6 arguments of mixed types (a struct by value, one of 48
 *                bytes); struct results; COEXEC_FJ_CALL; COEXEC_FJ_RUN
 *                with out NULL
 *   steal        a spawned task runs on another stream while its owner
 *                keeps spawning, and its sync gets its result; many tasks
 *                record their streams, results right
 *   nested       parallel_for in a task and in parallel_for's body,
 *                parallel_reduce in tasks (regions in its body),
 *                coexec_fj_run in a task runs on the task's deque
 *   concurrency  ULTs and tasklets opening regions at once on 4 streams
 *   contexts     regions from the primary's main ULT, from a ULT with the
 *                default 16 KiB stack, from a tasklet
 *   rules        blocking calls in a task return COEXEC_ECONTEXT and leave
 *                the runtime working; calls that do not wait work; a task
 *                is not its stream's scheduler loop (no run_unit, no idle)
 *   errors       every error code of coexec_fj_run, coexec_parallel_for
 *                and coexec_parallel_reduce (also from a user scheduler's
 *                loop); empty ranges; aliasing
 *   loops        every index in exactly one chunk (grains 0, 1, 7, n,
 *                n + 5; negative ranges; ranges at the ends of int64_t);
 *                reductions combine lower into higher; accumulators of 1
 *                to COEXEC_REDUCE_MAX bytes
 *   spill        deques of 64 records: 10,000 spawns, deep recursion,
 *                thieves stealing while the owner spills
 *   fork         a child forked while a region is open starts afresh
 */
#include "fj_test.h"

/* ======================================================================= */
/* results                                                                  */
/* ======================================================================= */

static void t_fib(void)
{
    ch_init(NSTREAMS);
    long rounds = ch_iters(20, 1), bad = 0;
    for (long k = 0; k < rounds; k++) {
        for (int n = 0; n <= 25; n++) {
            long r = -1;
            CH_ASSERT_OK(COEXEC_FJ_RUN(fib, &r, n));
            bad += r != (long)ch_fib(n);
        }
    }
    CH_ASSERT_EQ(bad, 0);
    ch_finalize();
}

static atomic_long g_nodes;

/* A void tree: every node counts itself. */
COEXEC_FJ_VOID_TASK_1(vtree, int, depth)
{
    atomic_fetch_add(&g_nodes, 1);
    if (depth == 0)
        return;
    COEXEC_FJ_SPAWN(vtree, depth - 1);
    COEXEC_FJ_SPAWN(vtree, depth - 1);
    COEXEC_FJ_SYNC(vtree);
    COEXEC_FJ_SYNC(vtree);
}

COEXEC_FJ_VOID_TASK_0(vcount)
{
    atomic_fetch_add(&g_nodes, 1);
}

COEXEC_FJ_VOID_TASK_3(vstore, long *, out, long, a, long, b)
{
    *out = a * 1000 + b;
}

static void void_region(coexec_fj_t *coexec_fj_, void *arg)
{
    long *out = arg; /* 64 of them */
    for (int i = 0; i < 64; i++) {
        COEXEC_FJ_SPAWN(vstore, &out[i], i, 64 - i);
        COEXEC_FJ_SPAWN(vcount);
    }
    for (int i = 0; i < 64; i++) {
        COEXEC_FJ_SYNC(vcount);
        COEXEC_FJ_SYNC(vstore);
    }
    COEXEC_FJ_CALL(vcount);
}

static void t_void_tasks(void)
{
    ch_init(NSTREAMS);
    long rounds = ch_iters(300, 2);
    for (long r = 0; r < rounds; r++) {
        atomic_store(&g_nodes, 0);
        CH_ASSERT_OK(COEXEC_FJ_RUN(vtree, 10));
        CH_ASSERT_EQ(atomic_load(&g_nodes), (1 << 11) - 1);
        atomic_store(&g_nodes, 0);
        CH_ASSERT_OK(COEXEC_FJ_RUN(vcount));
        CH_ASSERT_EQ(atomic_load(&g_nodes), 1);
        long out[64];
        memset(out, 0xff, sizeof out);
        atomic_store(&g_nodes, 0);
        CH_ASSERT_OK(coexec_fj_run(void_region, out));
        CH_ASSERT_EQ(atomic_load(&g_nodes), 65);
        for (int i = 0; i < 64; i++)
            CH_ASSERT_EQ(out[i], i * 1000 + 64 - i);
    }
    ch_finalize();
}

/* Tasks of 0 to 6 arguments of mixed types. */
typedef struct {
    int16_t x, y;
    int32_t z;
} small_t;

typedef struct {
    long v[6];
} blob48_t;

_Static_assert(sizeof(blob48_t) == COEXEC_FJ_DATA_SIZE, "a record's worth");

COEXEC_FJ_TASK_0(int, a0)
{
    return 42;
}

COEXEC_FJ_TASK_1(double, a1, double, x)
{
    return x * 2.5;
}

COEXEC_FJ_TASK_2(long, a2, int, a, long, b)
{
    return a * 1000L + b;
}

COEXEC_FJ_TASK_3(const char *, a3, const char *, s, int, off, char, c)
{
    return s[off] == c ? s + off : NULL;
}

COEXEC_FJ_TASK_4(double, a4, float, f, double, d, short, s, unsigned char, u)
{
    return (double)f + d + s + u;
}

COEXEC_FJ_TASK_5(uint64_t, a5, small_t, sm, int *, p, double, d, int8_t, i8,
                 uint64_t, u)
{
    return (uint64_t)(sm.x + sm.y + sm.z) + (uint64_t)*p + (uint64_t)d +
           (uint64_t)(int64_t)i8 + u;
}

COEXEC_FJ_TASK_6(double, a6, int, a, double, b, const char *, c, small_t, d,
                 long, e, float, f)
{
    return a + b + (double)strlen(c) + d.x * d.y * d.z + (double)e + f;
}

COEXEC_FJ_TASK_1(long, ablob, blob48_t, b)
{
    long s = 0;
    for (int i = 0; i < 6; i++)
        s = s * 31 + b.v[i];
    return s;
}

static const char g_text[] = "fork-join";

static double a6_want(int i)
{
    return i + 0.5 + 9 + 2 * 3 * (i + 1) + 1000000 + 0.25;
}

static long ablob_want(int i)
{
    long s = 0;
    for (int k = 0; k < 6; k++)
        s = s * 31 + (long)i * 10 + k;
    return s;
}

/* Spawns each kind with i in its arguments (interleaved, so the records
 * of different kinds sit side by side in the deque), then syncs them in
 * reverse and checks every result; runs the kinds as plain calls too. */
COEXEC_FJ_VOID_TASK_1(args_round, int, i)
{
    int k = 7 * i;
    small_t sm = {(int16_t)i, 2, 3};
    small_t d6 = {2, 3, (int32_t)(i + 1)};
    blob48_t bl;
    for (int j = 0; j < 6; j++)
        bl.v[j] = (long)i * 10 + j;
    COEXEC_FJ_SPAWN(a0);
    COEXEC_FJ_SPAWN(a1, (double)i);
    COEXEC_FJ_SPAWN(a2, i, -5L);
    COEXEC_FJ_SPAWN(a3, g_text, i % 9, g_text[i % 9]);
    COEXEC_FJ_SPAWN(a4, 0.5f, (double)i, (short)-3, (unsigned char)200);
    COEXEC_FJ_SPAWN(a5, sm, &k, 1e6, (int8_t)-1, UINT64_C(1) << 40);
    COEXEC_FJ_SPAWN(a6, i, 0.5, g_text, d6, 1000000L, 0.25f);
    COEXEC_FJ_SPAWN(ablob, bl);
    CH_CHECK_EQ(COEXEC_FJ_SYNC(ablob), ablob_want(i));
    CH_CHECK(COEXEC_FJ_SYNC(a6) == a6_want(i));
    CH_CHECK_EQ(COEXEC_FJ_SYNC(a5),
                (uint64_t)(i + 5) + (uint64_t)k + 1000000 - 1 +
                    (UINT64_C(1) << 40));
    CH_CHECK(COEXEC_FJ_SYNC(a4) == 0.5 + i - 3 + 200);
    CH_CHECK(COEXEC_FJ_SYNC(a3) == g_text + i % 9);
    CH_CHECK_EQ(COEXEC_FJ_SYNC(a2), i * 1000L - 5);
    CH_CHECK(COEXEC_FJ_SYNC(a1) == i * 2.5);
    CH_CHECK_EQ(COEXEC_FJ_SYNC(a0), 42);
    CH_CHECK(COEXEC_FJ_CALL(a3, g_text, 0, 'x') == NULL);
    CH_CHECK(COEXEC_FJ_CALL(a6, i, 0.5, g_text, d6, 1000000L, 0.25f) ==
             a6_want(i));
    CH_CHECK_EQ(COEXEC_FJ_CALL(ablob, bl), ablob_want(i));
}

static void args_region(coexec_fj_t *coexec_fj_, void *arg)
{
    int n = *(int *)arg;
    for (int i = 0; i < n; i++)
        COEXEC_FJ_SPAWN(args_round, i);
    for (int i = 0; i < n; i++)
        COEXEC_FJ_SYNC(args_round);
}

static void t_args(void)
{
    ch_init(NSTREAMS);
    int n = (int)ch_iters(200, 20);
    fj_run_rounds(100, args_region, &n);
    /* every kind as a region of its own */
    int ri = -1;
    CH_ASSERT_OK(COEXEC_FJ_RUN(a0, &ri));
    CH_ASSERT_EQ(ri, 42);
    double rd = 0;
    CH_ASSERT_OK(COEXEC_FJ_RUN(a1, &rd, 4.0));
    CU_ASSERT(rd == 10.0);
    long rl = 0;
    CH_ASSERT_OK(COEXEC_FJ_RUN(a2, &rl, 3, 4L));
    CH_ASSERT_EQ(rl, 3004);
    const char *rs = NULL;
    CH_ASSERT_OK(COEXEC_FJ_RUN(a3, &rs, g_text, 4, '-'));
    CU_ASSERT_PTR_EQUAL(rs, g_text + 4);
    CH_ASSERT_OK(COEXEC_FJ_RUN(a4, &rd, 1.5f, 2.0, (short)3, (unsigned char)4));
    CU_ASSERT(rd == 10.5);
    int k = 11;
    uint64_t ru = 0;
    CH_ASSERT_OK(COEXEC_FJ_RUN(a5, &ru, ((small_t){1, 2, 3}), &k, 4.0,
                               (int8_t)-2, UINT64_C(100)));
    CH_ASSERT_EQ(ru, 6 + 11 + 4 - 2 + 100);
    CH_ASSERT_OK(COEXEC_FJ_RUN(a6, &rd, 0, 0.5, g_text, ((small_t){2, 3, 1}),
                               1000000L, 0.25f));
    CU_ASSERT(rd == a6_want(0));
    blob48_t bl = {{0, 1, 2, 3, 4, 5}};
    CH_ASSERT_OK(COEXEC_FJ_RUN(ablob, &rl, bl));
    CH_ASSERT_EQ(rl, ablob_want(0));
    ch_finalize();
}

/* Results that are structs, one of them a whole record's 48 bytes. */
typedef struct {
    long q, r;
    double ratio;
    int sign;
} qr_t;

COEXEC_FJ_TASK_2(qr_t, divmod, long, a, long, b)
{
    qr_t v = {a / b, a % b, (double)a / (double)b, (a < 0) != (b < 0)};
    return v;
}

COEXEC_FJ_TASK_1(blob48_t, blob_of, uint64_t, seed)
{
    blob48_t b;
    for (int i = 0; i < 6; i++)
        b.v[i] = (long)ch_mix64(seed * 8 + (uint64_t)i);
    return b;
}

static void struct_region(coexec_fj_t *coexec_fj_, void *arg)
{
    int n = *(int *)arg;
    for (int i = 0; i < n; i++) {
        COEXEC_FJ_SPAWN(divmod, 1000L * i - 77, (long)(i % 13) - 6 ?: 1);
        COEXEC_FJ_SPAWN(blob_of, (uint64_t)i);
    }
    for (int i = n - 1; i >= 0; i--) {
        blob48_t b = COEXEC_FJ_SYNC(blob_of);
        for (int k = 0; k < 6; k++)
            CH_CHECK_EQ(b.v[k], (long)ch_mix64((uint64_t)i * 8 + (uint64_t)k));
        long a = 1000L * i - 77, d = (long)(i % 13) - 6 ?: 1;
        qr_t v = COEXEC_FJ_SYNC(divmod);
        CH_CHECK_EQ(v.q, a / d);
        CH_CHECK_EQ(v.r, a % d);
        CH_CHECK(v.ratio == (double)a / (double)d);
        CH_CHECK_EQ(v.sign, (a < 0) != (d < 0));
    }
}

static void t_struct_result(void)
{
    ch_init(NSTREAMS);
    int n = (int)ch_iters(2000, 100);
    fj_run_rounds(60, struct_region, &n);
    qr_t v = {0};
    CH_ASSERT_OK(COEXEC_FJ_RUN(divmod, &v, -17L, 5L));
    CH_ASSERT_EQ(v.q, -3);
    CH_ASSERT_EQ(v.r, -2);
    CH_ASSERT_EQ(v.sign, 1);
    blob48_t b;
    CH_ASSERT_OK(COEXEC_FJ_RUN(blob_of, &b, UINT64_C(9)));
    for (int k = 0; k < 6; k++)
        CH_ASSERT_EQ(b.v[k], (long)ch_mix64(9 * 8 + (uint64_t)k));
    ch_finalize();
}

/* COEXEC_FJ_CALL from a region function and from a task body. */
COEXEC_FJ_TASK_1(long, call_fib, int, n)
{
    return COEXEC_FJ_CALL(fib, n);
}

static void call_region(coexec_fj_t *coexec_fj_, void *arg)
{
    long *out = arg;
    out[0] = COEXEC_FJ_CALL(fib, 20);
    COEXEC_FJ_SPAWN(call_fib, 18);
    out[1] = COEXEC_FJ_CALL(call_fib, 19);
    out[2] = COEXEC_FJ_SYNC(call_fib);
    atomic_store(&g_nodes, 0);
    COEXEC_FJ_CALL(vtree, 4);
}

static void t_call(void)
{
    ch_init(NSTREAMS);
    long out[3] = {-1, -1, -1};
    CH_ASSERT_OK(coexec_fj_run(call_region, out));
    CH_ASSERT_EQ(out[0], ch_fib(20));
    CH_ASSERT_EQ(out[1], ch_fib(19));
    CH_ASSERT_EQ(out[2], ch_fib(18));
    CH_ASSERT_EQ(atomic_load(&g_nodes), 31);
    ch_finalize();
}

/* COEXEC_FJ_RUN with out NULL runs the task all the same. */
COEXEC_FJ_TASK_1(long, counted, atomic_long *, c)
{
    atomic_fetch_add(c, 1);
    return 7;
}

static void t_run_out_null(void)
{
    ch_init(NSTREAMS);
    atomic_long c;
    atomic_init(&c, 0);
    CH_ASSERT_OK(COEXEC_FJ_RUN(counted, NULL, &c));
    CH_ASSERT_EQ(atomic_load(&c), 1);
    CH_ASSERT_OK(COEXEC_FJ_RUN(fib, NULL, 15));
    long r = -1;
    CH_ASSERT_OK(COEXEC_FJ_RUN(counted, &r, &c));
    CH_ASSERT_EQ(r, 7);
    CH_ASSERT_EQ(atomic_load(&c), 2);
    ch_finalize();
}

const ch_test_t fj_results_tests[] = {
    {"fib_0_to_25", t_fib},
    {"void_tasks", t_void_tasks},
    {"args_0_to_6_mixed_types", t_args},
    {"struct_results", t_struct_result},
    {"call", t_call},
    {"run_out_null", t_run_out_null},
    {NULL, NULL}};

/* ======================================================================= */
/* steal                                                                    */
/* ======================================================================= */

typedef struct {
    atomic_int started;
    atomic_int rank;
    uint64_t x;
    int owner;
    uint64_t result;
} steal_case_t;

/* Task A: says where it runs. */
COEXEC_FJ_TASK_1(uint64_t, steal_a, steal_case_t *, c)
{
    atomic_store(&c->rank, ch_self_rank());
    atomic_store(&c->started, 1);
    return ch_mix64(c->x);
}

/* Spawns A, then spawns and syncs trivial tasks until A has started (the
 * owner never runs A before its sync: a thief did), then syncs A. */
static void steal_region(coexec_fj_t *coexec_fj_, void *arg)
{
    steal_case_t *c = arg;
    c->owner = ch_self_rank();
    COEXEC_FJ_SPAWN(steal_a, c);
    fj_spawn_until(coexec_fj_, &c->started);
    c->result = COEXEC_FJ_SYNC(steal_a);
}

/* steal_region round after round, checking each. */
static void steal_rounds(void *arg)
{
    long rounds = *(long *)arg;
    for (long r = 0; r < rounds; r++) {
        steal_case_t c = {.x = (uint64_t)r + 1, .owner = -1};
        atomic_init(&c.started, 0);
        atomic_init(&c.rank, -1);
        CH_CHECK_RC(coexec_fj_run(steal_region, &c), COEXEC_OK);
        if (!atomic_load(&c.started))
            break; /* no thief came (reported): one hang is enough */
        int rank = atomic_load(&c.rank);
        CH_CHECK(rank >= 0 && rank < NSTREAMS);
        CH_CHECK(rank != c.owner);
        CH_CHECK_EQ(c.result, ch_mix64(c.x));
    }
}

static void t_steal_one(void)
{
    ch_init(NSTREAMS);
    long rounds = ch_iters(1000, 3);
    steal_rounds(&rounds); /* regions of the primary's main ULT */
    CH_ASSERT_OK(ch_run_ult_in(ch_main_pool(2), steal_rounds, &rounds));
    CH_ASSERT_OK(ch_run_tasklet_in(ch_main_pool(3), steal_rounds, &rounds));
    CH_ASSERT_EQ(ch_remote_failures(), 0);
    ch_finalize();
}

/* Tasks that record the stream they ran on. The owner works between
 * spawns (a producer), so that thieves find tasks to take. */
typedef struct {
    int n;
    int owner;
    int8_t *rank;
} ranks_t;

static uint64_t busy_work(uint64_t x, int rounds)
{
    for (int i = 0; i < rounds; i++)
        x = ch_mix64(x + (uint64_t)i);
    return x;
}

COEXEC_FJ_TASK_2(uint64_t, ranked, int, i, int8_t *, rank)
{
    rank[i] = (int8_t)ch_self_rank();
    return busy_work((uint64_t)i, 64);
}

static void ranks_region(coexec_fj_t *coexec_fj_, void *arg)
{
    ranks_t *rk = arg;
    rk->owner = ch_self_rank();
    volatile uint64_t sink = 0;
    for (int i = 0; i < rk->n; i++) {
        COEXEC_FJ_SPAWN(ranked, i, rk->rank);
        sink += busy_work((uint64_t)i, 16);
    }
    for (int i = rk->n - 1; i >= 0; i--)
        CH_CHECK_EQ(COEXEC_FJ_SYNC(ranked), busy_work((uint64_t)i, 64));
    (void)sink;
}

static void t_steal_ranks(void)
{
    ch_init(NSTREAMS);
    ranks_t rk = {.n = (int)ch_iters(2000, 200)};
    rk.rank = malloc((size_t)rk.n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rk.rank);
    long rounds = ch_iters(60, 2), foreign = 0, bad = 0;
    double t0 = ch_now();
    /* At least `rounds` rounds; more until a task ran elsewhere. */
    for (long r = 0; r < rounds || foreign == 0; r++) {
        memset(rk.rank, -1, (size_t)rk.n);
        CH_ASSERT_OK(coexec_fj_run(ranks_region, &rk));
        for (int i = 0; i < rk.n; i++) {
            bad += rk.rank[i] < 0 || rk.rank[i] >= NSTREAMS;
            foreign += rk.rank[i] != rk.owner;
        }
        if (ch_now() - t0 > CH_WAIT_LIMIT_S)
            break;
    }
    CH_ASSERT_EQ(bad, 0);
    CU_ASSERT(foreign > 0);
    free(rk.rank);
    ch_finalize();
}

const ch_test_t fj_steal_tests[] = {
    {"stolen_task_runs_elsewhere", t_steal_one},
    {"ranks_of_many_tasks", t_steal_ranks},
    {NULL, NULL}};

/* ======================================================================= */
/* nested                                                                   */
/* ======================================================================= */

static void mark_body(int64_t begin, int64_t end, void *arg)
{
    atomic_uchar *hits = arg;
    for (int64_t i = begin; i < end; i++)
        atomic_fetch_add(&hits[i], 1);
}

static bool all_once(atomic_uchar *hits, long n)
{
    for (long i = 0; i < n; i++)
        if (atomic_load(&hits[i]) != 1)
            return false;
    return true;
}

/* parallel_for inside tasks: each task marks its own slice. */
COEXEC_FJ_TASK_3(int, pfor_task, atomic_uchar *, hits, int, n, int, grain)
{
    return coexec_parallel_for(0, n, grain, mark_body, hits);
}

#define PT_TASKS 16
#define PT_N 300

static void pfor_tasks_region(coexec_fj_t *coexec_fj_, void *arg)
{
    atomic_uchar *hits = arg;
    for (int t = 0; t < PT_TASKS; t++)
        COEXEC_FJ_SPAWN(pfor_task, hits + t * PT_N, PT_N, t % 5);
    for (int t = 0; t < PT_TASKS; t++)
        CH_CHECK_RC(COEXEC_FJ_SYNC(pfor_task), COEXEC_OK);
}

static void t_pfor_in_task(void)
{
    ch_init(NSTREAMS);
    static atomic_uchar hits[PT_TASKS * PT_N];
    long rounds = ch_iters(200, 2);
    for (long r = 0; r < rounds; r++) {
        memset(hits, 0, sizeof hits);
        CH_ASSERT_OK(coexec_fj_run(pfor_tasks_region, hits));
        CU_ASSERT(all_once(hits, PT_TASKS * PT_N));
    }
    ch_finalize();
}

/* parallel_for inside parallel_for's body: a grid, row by row. */
#define GRID_R 64
#define GRID_C 97

static void grid_rows(int64_t begin, int64_t end, void *arg)
{
    atomic_uchar *grid = arg;
    for (int64_t r = begin; r < end; r++)
        CH_CHECK_RC(coexec_parallel_for(0, GRID_C, r % 4, mark_body,
                                        grid + r * GRID_C),
                    COEXEC_OK);
}

static void t_pfor_in_pfor(void)
{
    ch_init(NSTREAMS);
    static atomic_uchar grid[GRID_R * GRID_C];
    long rounds = ch_iters(200, 2);
    for (long r = 0; r < rounds; r++) {
        memset(grid, 0, sizeof grid);
        CH_ASSERT_OK(coexec_parallel_for(0, GRID_R, 1, grid_rows, grid));
        CU_ASSERT(all_once(grid, GRID_R * GRID_C));
    }
    ch_finalize();
}

/* parallel_reduce inside tasks, and regions inside its body: sums of
 * fib(i % 16) for i in [0, n), each fib a nested COEXEC_FJ_RUN. */
static void fibsum_body(int64_t begin, int64_t end, void *acc, void *arg)
{
    for (int64_t i = begin; i < end; i++) {
        long f = -1;
        CH_CHECK_RC(COEXEC_FJ_RUN(fib, &f, (int)(i % 16)), COEXEC_OK);
        *(int64_t *)acc += f;
    }
}

static int64_t fibsum_serial(int n)
{
    int64_t s = 0;
    for (int i = 0; i < n; i++)
        s += (long)ch_fib(i % 16);
    return s;
}

COEXEC_FJ_TASK_1(int64_t, reduce_task, int, n)
{
    const int64_t zero = 0;
    int64_t s = -1;
    if (n % 2)
        return sum_reduce(0, n, n % 7);
    CH_CHECK_RC(coexec_parallel_reduce(0, n, 0, &s, sizeof s, &zero,
                                       fibsum_body, sum_combine, NULL),
                COEXEC_OK);
    return s;
}

#define RT_TASKS 48

static void reduce_tasks_region(coexec_fj_t *coexec_fj_, void *arg)
{
    for (int n = 0; n < RT_TASKS; n++)
        COEXEC_FJ_SPAWN(reduce_task, n);
    for (int n = RT_TASKS - 1; n >= 0; n--)
        CH_CHECK_EQ(COEXEC_FJ_SYNC(reduce_task),
                    n % 2 ? sum_serial(0, n) : fibsum_serial(n));
}

/* A runtime of NSTREAMS in which fn(NULL) runs as a region round after
 * round; no check failed in any unit or task. */
static void nested_rounds(void (*fn)(coexec_fj_t *coexec_fj_, void *))
{
    ch_init(NSTREAMS);
    fj_run_rounds(200, fn, NULL);
    CH_ASSERT_EQ(ch_remote_failures(), 0);
    ch_finalize();
}

static void t_reduce_in_tasks(void) { nested_rounds(reduce_tasks_region); }

/* coexec_fj_run from a task: the nested function gets the task's own
 * worker (the same deque) and runs on the task's stream. */
typedef struct {
    coexec_fj_t *outer;
    int n;
    int rank;
    long r;
} nested_t;

static void nested_fn(coexec_fj_t *coexec_fj_, void *arg)
{
    nested_t *x = arg;
    CH_CHECK(coexec_fj_ == x->outer);
    CH_CHECK_EQ(ch_self_rank(), x->rank);
    CH_CHECK(coexec_self_caller() == COEXEC_CALLER_SCHED);
    COEXEC_FJ_SPAWN(fib, x->n);
    long b = COEXEC_FJ_CALL(fib, x->n - 1);
    x->r = COEXEC_FJ_SYNC(fib) + b;
}

COEXEC_FJ_TASK_1(long, run_in_task, int, n)
{
    nested_t x = {coexec_fj_, n, ch_self_rank(), -1};
    CH_CHECK_RC(coexec_fj_run(nested_fn, &x), COEXEC_OK);
    return x.r;
}

static void run_in_task_region(coexec_fj_t *coexec_fj_, void *arg)
{
    for (int n = 1; n <= 16; n++)
        COEXEC_FJ_SPAWN(run_in_task, n);
    for (int n = 16; n >= 1; n--)
        CH_CHECK_EQ(COEXEC_FJ_SYNC(run_in_task), ch_fib(n + 1));
    /* and in the region function itself */
    nested_t x = {coexec_fj_, 12, ch_self_rank(), -1};
    CH_CHECK_RC(coexec_fj_run(nested_fn, &x), COEXEC_OK);
    CH_CHECK_EQ(x.r, ch_fib(13));
}

static void t_run_in_task(void) { nested_rounds(run_in_task_region); }

const ch_test_t fj_nested_tests[] = {
    {"parallel_for_in_task", t_pfor_in_task},
    {"parallel_for_in_parallel_for", t_pfor_in_pfor},
    {"parallel_reduce_in_tasks", t_reduce_in_tasks},
    {"fj_run_in_task", t_run_in_task},
    {NULL, NULL}};

/* ======================================================================= */
/* concurrency                                                              */
/* ======================================================================= */

typedef struct {
    int id;
    long rounds;
    atomic_int done;
} conc_t;

static void conc_work(conc_t *c)
{
    for (long r = 0; r < c->rounds; r++) {
        int n = 12 + (int)((c->id + r) % 8);
        long f = -1;
        CH_CHECK_RC(COEXEC_FJ_RUN(fib, &f, n), COEXEC_OK);
        CH_CHECK_EQ(f, ch_fib(n));
        int64_t hi = 1000 + 37 * c->id + r;
        CH_CHECK_EQ(sum_reduce(-hi, hi, r % 3 ? 0 : 5), sum_serial(-hi, hi));
    }
    atomic_store(&c->done, 1);
}

static void conc_ult(void *arg)
{
    CH_CHECK(coexec_self_caller() == COEXEC_CALLER_ULT);
    conc_work(arg);
}

static coexec_poll_status_t conc_tasklet(coexec_poll_t *cx, void *arg)
{
    CH_CHECK(coexec_self_caller() == COEXEC_CALLER_TASKLET);
    conc_work(arg);
    return COEXEC_READY;
}

#define CONC_EACH 3

static void t_tasklets_and_ults(void)
{
    ch_init(NSTREAMS);
    long rounds = ch_iters(3000, 2);
    conc_t c[2 * CONC_EACH + 1];
    coexec_thread_t t[CONC_EACH];
    coexec_tasklet_t k[CONC_EACH];
    for (int i = 0; i < 2 * CONC_EACH + 1; i++) {
        c[i].id = i;
        c[i].rounds = rounds;
        atomic_init(&c[i].done, 0);
    }
    /* Streams 1..3 get ULTs and tasklets in turn; the main ULT works too. */
    for (int i = 0; i < CONC_EACH; i++) {
        CH_ASSERT_OK(coexec_thread_create_on(ch_xstream(1 + i % 3), conc_ult,
                                             &c[i], NULL, &t[i]));
        CH_ASSERT_OK(coexec_tasklet_create_on(ch_xstream(1 + (i + 1) % 3),
                                              conc_tasklet, &c[CONC_EACH + i],
                                              &k[i]));
    }
    conc_work(&c[2 * CONC_EACH]);
    for (int i = 0; i < 2 * CONC_EACH; i++)
        CH_WAIT(atomic_load(&c[i].done));
    for (int i = 0; i < CONC_EACH; i++) {
        CH_ASSERT_OK(coexec_thread_free(&t[i]));
        CH_ASSERT_OK(coexec_tasklet_free(&k[i]));
    }
    CH_ASSERT_EQ(ch_remote_failures(), 0);
    ch_finalize();
}

const ch_test_t fj_concurrency_tests[] = {
    {"tasklets_and_ults_on_4_streams", t_tasklets_and_ults},
    {NULL, NULL}};

/* ======================================================================= */
/* contexts                                                                 */
/* ======================================================================= */

typedef struct {
    int fib_n;
    int64_t n;
    coexec_caller_t caller;
} ctx_t;

/* A region of each kind from the caller; the caller is what it was
 * before and after them. */
static void ctx_regions(void *arg)
{
    ctx_t *x = arg;
    CH_CHECK(coexec_self_caller() == x->caller);
    long f = -1;
    CH_CHECK_RC(COEXEC_FJ_RUN(fib, &f, x->fib_n), COEXEC_OK);
    CH_CHECK_EQ(f, ch_fib(x->fib_n));
    atomic_uchar *hits = calloc((size_t)x->n, 1);
    CH_CHECK(hits != NULL);
    if (hits) {
        CH_CHECK_RC(coexec_parallel_for(0, x->n, 8, mark_body, hits),
                    COEXEC_OK);
        CH_CHECK(all_once(hits, x->n));
        free(hits);
    }
    CH_CHECK_EQ(sum_reduce(0, x->n, 0), sum_serial(0, x->n));
    CH_CHECK(coexec_self_caller() == x->caller);
    if (x->caller == COEXEC_CALLER_ULT) {
        coexec_thread_t self;
        CH_CHECK_RC(coexec_thread_self(&self), COEXEC_OK);
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    }
}

static void t_main_ult(void)
{
    ch_init(NSTREAMS);
    ctx_t x = {22, 20000, COEXEC_CALLER_ULT};
    ctx_regions(&x);
    CH_ASSERT_EQ(ch_remote_failures(), 0);
    ch_finalize();
}

/* ctx_regions in a unit that run() makes on streams 1 to 3 in turn. */
static void ctx_rounds(ctx_t x, int (*run)(coexec_pool_t, void (*)(void *),
                                          void *))
{
    ch_init(NSTREAMS);
    long rounds = ch_iters(200, 2);
    for (long r = 0; r < rounds; r++)
        CH_ASSERT_OK(run(ch_main_pool(1 + r % 3), ctx_regions, &x));
    CH_ASSERT_EQ(ch_remote_failures(), 0);
    ch_finalize();
}

/* The default stack (16 KiB unless COEXEC_STACK_SIZE says otherwise):
 * tasks run on it, as do the thieves' tasks its syncs leapfrog to, so the
 * recursion stays modest. */
static void t_small_stack_ult(void)
{
    ctx_rounds((ctx_t){12, 2000, COEXEC_CALLER_ULT}, ch_run_ult_in);
}

static void t_tasklet(void)
{
    ctx_rounds((ctx_t){18, 5000, COEXEC_CALLER_TASKLET}, ch_run_tasklet_in);
}

const ch_test_t fj_contexts_tests[] = {
    {"primary_main_ult", t_main_ult},
    {"ult_default_stack", t_small_stack_ult},
    {"tasklet", t_tasklet},
    {NULL, NULL}};

/* ======================================================================= */
/* fork                                                                     */
/* ======================================================================= */

/*
 * fork from the main ULT while a region is open on stream 2: the child's
 * runtime starts afresh (coexec/runtime.h), so a region a ULT of its
 * stream 2 opens is a region (its function runs with no unit, as in a
 * scheduler) and computes. The child reports by its exit status.
 */
typedef struct {
    atomic_int in_region, release, done;
    int rc;
    coexec_caller_t inside;
    long fib;
} fk_t;

static void fk_long_region(coexec_fj_t *coexec_fj_, void *arg)
{
    fk_t *f = arg;
    atomic_store(&f->in_region, 1);
    for (long i = 0; !atomic_load(&f->release); i++) {
        COEXEC_FJ_SPAWN(fj_bump, i);
        CH_CHECK_EQ(COEXEC_FJ_SYNC(fj_bump), i + 1);
    }
}

static void fk_open_long(void *arg)
{
    CH_CHECK_RC(coexec_fj_run(fk_long_region, arg), COEXEC_OK);
}

static void fk_probe_region(coexec_fj_t *coexec_fj_, void *arg)
{
    fk_t *f = arg;
    f->inside = coexec_self_caller();
    f->fib = COEXEC_FJ_CALL(fib, 15);
}

static void fk_probe(void *arg)
{
    fk_t *f = arg;
    f->rc = coexec_fj_run(fk_probe_region, f);
    atomic_store(&f->done, 1);
}

/* A ULT pinned to stream `rank` running fn(arg). */
static int fk_pinned(int rank, void (*fn)(void *), void *arg,
                     coexec_thread_t *t)
{
    coexec_thread_attr_t attr;
    coexec_xstream_t xs;
    int rc = coexec_thread_attr_init(&attr);
    if (rc == COEXEC_OK)
        rc = coexec_xstream_by_rank(rank, &xs);
    attr.pinned = 1;
    return rc ? rc : coexec_thread_create_on(xs, fn, arg, &attr, t);
}

/* The child: 0, or which check failed. */
static int fk_child(void)
{
    coexec_config_t cfg;
    if (coexec_config_init(&cfg) || (cfg.num_xstreams = 3, coexec_init(&cfg)))
        return 2;
    fk_t f = {.rc = -1, .fib = -1};
    atomic_init(&f.done, 0);
    coexec_thread_t t;
    if (fk_pinned(2, fk_probe, &f, &t))
        return 3;
    double t0 = ch_now();
    while (!atomic_load(&f.done) && ch_now() - t0 < CH_WAIT_LIMIT_S)
        ch_relax();
    if (!atomic_load(&f.done) || coexec_thread_free(&t))
        return 4;
    if (f.rc != COEXEC_OK)
        return 5;
    if (f.inside != COEXEC_CALLER_SCHED)
        return 6; /* the region did not open: the parent's was inherited */
    if (f.fib != (long)ch_fib(15))
        return 7;
    return coexec_finalize() ? 8 : 0;
}

static void t_fork_during_region(void)
{
    if (CH_SANITIZER) {
        /* as tests/core/test_process.c says: their runtimes cannot start
         * threads in the child of a multithreaded process */
        printf("(skipped: the child cannot start a runtime under a "
               "sanitizer) ");
        return;
    }
    ch_init(3);
    fk_t f;
    memset(&f, 0, sizeof f);
    coexec_thread_t t;
    CH_ASSERT_OK_FATAL(fk_pinned(2, fk_open_long, &f, &t));
    CH_WAIT(atomic_load(&f.in_region));
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        _exit(fk_child());
    CU_ASSERT_FATAL(pid > 0);
    int st = -1;
    if (!CH_WAIT(waitpid(pid, &st, WNOHANG) == pid)) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    CU_ASSERT(WIFEXITED(st));
    /* 6: the child's region on stream 2 ran as if nested in the parent's */
    CH_ASSERT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
    atomic_store(&f.release, 1);
    CH_ASSERT_OK(coexec_thread_free(&t));
    ch_finalize();
}

const ch_test_t fj_fork_tests[] = {
    {"child_starts_afresh", t_fork_during_region},
    {NULL, NULL}};

/* ======================================================================= */

static const ch_suite_t suites[] = {
    {"results", fj_results_tests},
    {"steal", fj_steal_tests},
    {"nested", fj_nested_tests},
    {"concurrency", fj_concurrency_tests},
    {"contexts", fj_contexts_tests},
    {"rules", fj_rules_tests},
    {"errors", fj_errors_tests},
    {"loops", fj_loops_tests},
    {"spill", fj_spill_tests},
    {"fork", fj_fork_tests},
    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
