/*
 * tests/sched/test_replace.c: the replace suite: replacing a stream's main
 * scheduler from another stream, an external thread and one of its own
 * units, busy and state errors, the primary's and back, streams swapping
 * pools under their schedulers while units are pushed (forwards)
 */
#include "stack_test.h"

typedef struct gate {
    coexec_xstream_t xs;
    coexec_sched_t to;
    int self_replace;
    atomic_int started, open, rc, switched;
    long idx;
} gate_t;

static void gate_ult(void *arg)
{
    gate_t *g = arg;
    if (g->self_replace) {
        atomic_store(&g->rc, coexec_xstream_set_main_sched(g->xs, g->to));
        /* The call returns once the stream has switched. */
        atomic_store(&g->switched, CH_SAME(main_sched_of(g->xs), g->to));
    }
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
    if (who == BY_OWN_UNIT) {
        /* Switched already: pold is served by no running scheduler, so
         * what is pushed there goes to the new one's pool (held by the
         * gate, it runs none yet). */
        CH_ASSERT_EQ(pool_size(pold), 0);
        CH_ASSERT_EQ(pool_size(pnew), n);
    } else {
        CH_ASSERT_EQ(pool_size(pold), n);
    }
    if (who == BY_OTHER_STREAM) {
        CH_ASSERT_OK(coexec_xstream_set_main_sched(xs, news));
    } else if (who == BY_EXTERNAL) {
        ext_call_t c = {.op = EXT_SET_MAIN, .xs = xs, .sched = news};
        CH_ASSERT_OK(ext_call(&c));
    } else {
        CH_ASSERT_OK(atomic_load(&g.rc));
        CH_ASSERT_EQ(atomic_load(&g.switched), 1);
    }
    /* The new one is in use now; the old one until the switch (asked
     * again of a stream it runs already: nothing to do). */
    CH_ASSERT_RC(coexec_xstream_set_main_sched(xs, news),
                 who == BY_OWN_UNIT ? COEXEC_OK : COEXEC_EBUSY);
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
    coexec_pool_t p0 = ch_main_pool(0), pn;
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
    CH_ASSERT_EQ(ch_self_rank(), 0);
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

/*
 * Streams keep changing which of three pools their main scheduler serves,
 * each from its own unit, while the main ULT pushes units into every pool:
 * a pool that loses its last server is forwarded to the stopping stream's
 * new first pool, and one that gets a server back is forwarded no more.
 * A stream starting to serve a pool while another stops serving it must
 * not leave it forwarded (a later forward the other way made a cycle that
 * a push followed for ever). Every unit runs exactly once; at the end
 * every stream serves every pool.
 */
enum { SW_POOLS = 3, SW_STREAMS = 4 };
static coexec_pool_t sw_pools[SW_POOLS];
static atomic_int sw_left;

static void sw_churn(void *arg)
{
    intptr_t id = (intptr_t)arg;
    long iters = ch_iters(3000, 60);
    for (long i = 0; i < iters; i++) {
        coexec_xstream_t xs;
        CH_CHECK_RC(coexec_xstream_self(&xs), COEXEC_OK);
        coexec_pool_t ps[2] = {sw_pools[(id + i) % SW_POOLS],
                               sw_pools[(id + i + 1) % SW_POOLS]};
        coexec_sched_t s = make_sched(0, ps, 1 + (int)((id + i) & 1));
        /* Another churner on this stream may have asked first. */
        int rc = coexec_xstream_set_main_sched(xs, s);
        CH_CHECK(rc == COEXEC_OK || rc == COEXEC_EBUSY);
        if (rc == COEXEC_EBUSY)
            CH_CHECK_RC(coexec_sched_free(&s), COEXEC_OK);
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    }
    atomic_fetch_sub(&sw_left, 1);
}

static void t_replace_swap_churn(void)
{
    ch_init(1);
    for (int i = 0; i < SW_POOLS; i++)
        CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO,
                                              COEXEC_ACCESS_MPMC, &sw_pools[i]));
    coexec_xstream_t xs[SW_STREAMS];
    for (int k = 0; k < SW_STREAMS; k++)
        stream_with(make_sched(0, &sw_pools[k % SW_POOLS], 1), &xs[k]);
    long n = ch_iters(4000, 200);
    hits_new(n);
    cnt_arg_t *args = calloc((size_t)n, sizeof *args);
    CU_ASSERT_FATAL(args != NULL);
    atomic_store(&sw_left, 2 * SW_STREAMS);
    for (intptr_t k = 0; k < 2 * SW_STREAMS; k++)
        CH_ASSERT_OK(coexec_thread_create(sw_pools[k % SW_POOLS], sw_churn,
                                          (void *)k, NULL, NULL));
    for (long i = 0; i < n; i++)
        CH_ASSERT_OK(cnt_create(sw_pools[i % SW_POOLS], args, i, (int)(i % 2)));
    CH_WAIT(atomic_load(&sw_left) == 0);
    /* Every stream serves every pool again: nothing queued is stranded. */
    for (int k = 0; k < SW_STREAMS; k++) {
        coexec_sched_t all = make_sched(0, sw_pools, SW_POOLS);
        CH_ASSERT_OK(coexec_xstream_set_main_sched(xs[k], all));
        CH_WAIT(CH_SAME(main_sched_of(xs[k]), all));
    }
    CH_WAIT(atomic_load(&g_hit_total) == n);
    CH_ASSERT_EQ(hits_bad_and_free(), 0);
    free(args);
    for (int k = 0; k < SW_STREAMS; k++)
        CH_ASSERT_OK(coexec_xstream_free(&xs[k]));
    ch_finalize(); /* the replaced schedulers and the pools go with it */
}

/* ======================================================================= */

const ch_test_t schedx_replace_tests[] = {
    {"swap_churn", t_replace_swap_churn},
    {"from_another_stream", t_replace_other},
    {"from_external_thread", t_replace_external},
    {"from_its_own_unit", t_replace_own_unit},
    {"busy_and_state_errors", t_replace_busy},
    {"primary_and_back", t_replace_primary},
    {NULL, NULL}};
