/*
 * tests/sched/test_stack.c: the suites of test_schedx, and the stack suite
 * (schedulers as units of their parent's pools). The other suites live in
 * a file each: user-defined pools and schedulers (test_user_sched.c), the
 * PRIO and RANDWS schedulers and work stealing over DEQUE pools
 * (test_prio.c, test_steal.c), migration and pinning (test_migrate.c),
 * yield_to (test_yield_to.c), child-first creation (test_child_first.c),
 * replacing a stream's main scheduler (test_replace.c), and access checks
 * of user pools (test_user_access.c); stack_test.h holds what they share.
 *
 * Every verdict is a value, an order or a count; waits are bounded by
 * CH_WAIT (a hang guard, never a verdict). Loop sizes follow
 * COEXEC_TEST_SCALE through ch_iters.
 */
#include "stack_test.h"

/* ======================================================================= */
/* stack: schedulers as units of their parent's pools                       */
/* ======================================================================= */

/* Tool events of the level units: the scheduler depth coexec tells with
 * each RUN, YIELD, BLOCK and FINISH must be the level of the scheduler
 * the unit asked for (A 1, B 2, C 3). */
static coexec_sched_t depth_of_level[3];
static atomic_long depth_told, depth_bad;

static void depth_event(const coexec_tool_info_t *in, void *arg)
{
    (void)arg;
    if (in->unit_fn != (void *)lvl_ult && in->unit_fn != (void *)lvl_tasklet)
        return;
    bool four = in->event == COEXEC_TOOL_UNIT_RUN ||
                in->event == COEXEC_TOOL_UNIT_YIELD ||
                in->event == COEXEC_TOOL_UNIT_BLOCK ||
                in->event == COEXEC_TOOL_UNIT_FINISH;
    int want = 0;
    if (four) {
        const lvl_arg_t *a = in->unit_arg;
        for (int l = 0; l < 3; l++)
            if (CH_SAME(a->want, depth_of_level[l]))
                want = l + 1;
        atomic_fetch_add(&depth_told, 1);
    }
    if (in->sched_depth != want)
        atomic_fetch_add(&depth_bad, 1);
}

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

    depth_of_level[0] = a;
    depth_of_level[1] = b;
    depth_of_level[2] = c;
    atomic_store(&depth_told, 0);
    atomic_store(&depth_bad, 0);
    int tools = coexec_tool_set_callback(depth_event, COEXEC_TOOL_ALL, NULL);
    if (tools != COEXEC_ENOSYS)
        CH_ASSERT_OK(tools);
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
    if (tools != COEXEC_ENOSYS) {
        CH_ASSERT_OK(coexec_tool_set_callback(NULL, 0, NULL));
        CU_ASSERT(atomic_load(&depth_told) >= 2 * n);
        CH_ASSERT_EQ(atomic_load(&depth_bad), 0);
    }
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

const ch_test_t schedx_stack_tests[] = {
    {"three_levels_builtin", t_stack_builtin},
    {"user_sched_in_the_middle", t_stack_user_middle},
    {"user_sched_innermost", t_stack_user_inner},
    {"join_unwinds_the_stack", t_stack_join_unwinds},
    {"stacked_in_a_pool_of_two_streams", t_stack_shared},
    {NULL, NULL}};

static const ch_suite_t suites[] = {
    {"user", schedx_user_tests},
    {"stack", schedx_stack_tests},
    {"prio_sched", schedx_prio_tests},
    {"steal", schedx_steal_tests},
    {"migrate", schedx_migrate_tests},
    {"yield_to", schedx_yield_to_tests},
    {"child_first", schedx_child_first_tests},
    {"replace", schedx_replace_tests},
    {"access", schedx_access_tests},
    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
