/*
 * tests/sched/test_migrate.c: the migrate suite: a ULT migrates itself, queued,
 * parked and running ULTs are migrated, a pinned ULT never moves
 */
#include "stack_test.h"

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
    CH_ASSERT_OK(coexec_thread_create(ch_main_pool(1), hop_ult, &h, NULL, &t));
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
    atomic_store(&w->rank[0], ch_self_rank());
    atomic_store(&w->step, 1);
    if (w->suspend) {
        CH_CHECK_RC(coexec_self_suspend(), COEXEC_OK);
    } else {
        /* Running: the migration applies at the next yield. */
        while (!atomic_load(&w->go))
            ;
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    }
    atomic_store(&w->rank[1], ch_self_rank());
    atomic_store(&w->step, 2);
    CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    atomic_store(&w->rank[2], ch_self_rank());
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
    CH_ASSERT_EQ(ch_self_rank(), 0);

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
    int first = ch_self_rank();
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
        int now = ch_self_rank();
        if (p->pinned && now != first)
            atomic_fetch_add(&g_pin_moved, 1);
    }
    if (p->pinned && first != 1)
        atomic_fetch_add(&g_pin_moved, 1);
    if (!p->pinned && ch_self_rank() != 1)
        atomic_fetch_add(&g_unpinned_away, 1);
    hit(p->idx);
}

static void t_pinned(void)
{
    ch_init_ex(NSTEAL, COEXEC_SCHED_RANDWS, 1);
    coexec_pool_t p1 = ch_main_pool(1), p2 = ch_main_pool(2);
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
    /* wait: a free alone could run t here, in place, on rank 0. */
    CH_ASSERT_OK(coexec_thread_wait(t));
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

const ch_test_t schedx_migrate_tests[] = {
    {"self_to_xstream", t_migrate_self},
    {"queued_parked_running", t_migrate_others},
    {"pinned_never_moves", t_pinned},
    {NULL, NULL}};
