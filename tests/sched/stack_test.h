/*
 * tests/sched/stack_test.h: what the suites of test_schedx share (order
 * logs, run counters, streams, a pthread that runs one call).
 *
 * Every verdict is a value, an order or a count; waits are bounded by
 * CH_WAIT (a hang guard, never a verdict). Loop sizes follow
 * COEXEC_TEST_SCALE through ch_iters.
 */
#ifndef COEXEC_TEST_STACK_TEST_H
#define COEXEC_TEST_STACK_TEST_H

#define _GNU_SOURCE
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ======================================================================= */
/* shared helpers                                                           */
/* ======================================================================= */

/* Per-unit run counters: every unit must run exactly once. */
static atomic_int *g_hits;
static long g_nhits;
static atomic_long g_hit_total;

static inline void hits_new(long n)
{
    g_hits = calloc((size_t)n, sizeof *g_hits);
    g_nhits = n;
    atomic_store(&g_hit_total, 0);
    CU_ASSERT_FATAL(g_hits != NULL);
}

static inline void hit(long i)
{
    if (i >= 0 && i < g_nhits)
        atomic_fetch_add(&g_hits[i], 1);
    atomic_fetch_add(&g_hit_total, 1);
}

/* Number of units that did not run exactly once; frees the counters. */
static inline long hits_bad_and_free(void)
{
    long bad = 0;
    for (long i = 0; i < g_nhits; i++)
        bad += atomic_load(&g_hits[i]) != 1;
    free(g_hits);
    g_hits = NULL;
    g_nhits = 0;
    return bad;
}

static inline coexec_sched_t self_sched(void)
{
    coexec_sched_t s = {0};
    CH_CHECK_RC(coexec_sched_self(&s), COEXEC_OK);
    return s;
}

static inline coexec_thread_t self_thread(void)
{
    coexec_thread_t t = {0};
    CH_CHECK_RC(coexec_thread_self(&t), COEXEC_OK);
    return t;
}

static inline coexec_unit_state_t state_of(coexec_thread_t t)
{
    coexec_unit_state_t st = COEXEC_UNIT_READY;
    CH_CHECK_RC(coexec_thread_get_state(t, &st), COEXEC_OK);
    return st;
}

static inline size_t pool_size(coexec_pool_t p)
{
    size_t n = 0;
    CH_CHECK_RC(coexec_pool_get_size(p, &n), COEXEC_OK);
    return n;
}

/* The state a user pool's (scheduler's) init made. */
static inline void *pool_data(coexec_pool_t p)
{
    void *st = NULL;
    CH_CHECK_RC(coexec_pool_get_data(p, &st), COEXEC_OK);
    return st;
}

static inline void *sched_data(coexec_sched_t s)
{
    void *st = NULL;
    CH_CHECK_RC(coexec_sched_get_data(s, &st), COEXEC_OK);
    return st;
}

/* Starts a stream whose main scheduler is sched. */
static inline void stream_with(coexec_sched_t sched, coexec_xstream_t *xs)
{
    coexec_xstream_attr_t a;
    CH_ASSERT_OK_FATAL(coexec_xstream_attr_init(&a));
    a.sched = sched;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&a, xs));
}

static inline coexec_sched_config_t no_steal_cfg(void)
{
    coexec_sched_config_t sc;
    CH_ASSERT_OK(coexec_sched_config_init(&sc));
    sc.steal = 0;
    return sc;
}

/* A unit that counts itself; ULTs yield `yields` times first. */
typedef struct cnt_arg {
    long idx;
    int yields;
} cnt_arg_t;

static inline void cnt_ult(void *arg)
{
    cnt_arg_t *c = arg;
    for (int i = 0; i < c->yields; i++)
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    hit(c->idx);
}

static inline coexec_poll_status_t cnt_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    hit(((cnt_arg_t *)arg)->idx);
    return COEXEC_READY;
}

/* Creates unit i of a counted batch into pool (ULTs for odd i). */
static inline int cnt_create(coexec_pool_t pool, cnt_arg_t *args, long i,
                             int yields)
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
static inline void hop_ult(void *arg)
{
    hop_t *h = arg;
    coexec_thread_t me = self_thread();
    for (int r = 0; r < h->rounds; r++)
        for (int i = 0; i < h->nto; i++) {
            CH_CHECK_RC(coexec_thread_migrate_to_xstream(me, h->to[i]), COEXEC_OK);
            int now = ch_self_rank();
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

static inline coexec_poll_status_t noop_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    (void)arg;
    return COEXEC_READY;
}

static inline void *ext_call_main(void *arg)
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
static inline int ext_call(ext_call_t *c)
{
    ch_pthread_t th;
    c->rc = 1;
    memset(&c->got, 0, sizeof c->got);
    ch_pthread_start(&th, ext_call_main, c);
    ch_pthread_join(&th);
    return c->rc;
}

/* ---- shared across the suites' files ----------------------------------- */

/* Streams of the stealing tests (test_steal.c, test_migrate.c,
 * test_child_first.c). */
#define NSTEAL 4
/* Runs counted by stream rank (index 15: the spawners of child_first). */
extern atomic_int g_rank_runs[16];
/* Runs a fork-join fib tree from pool and checks every unit ran once
 * (test_steal.c). */
void check_fib(coexec_pool_t pool, int child_first);

/* The order log of the user, prio_sched, yield_to and child_first suites
 * (test_user_sched.c). */
extern olog_t g_log;
/* A user scheduler that takes from its pools in order (test_user_sched.c). */
extern const coexec_sched_ops_t us_ops;
/* An earliest-deadline-first user pool (test_user_sched.c). */
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

extern const coexec_pool_ops_t edf_ops;
/* A user pool that wraps a built-in FIFO pool (test_user_sched.c). */
extern const coexec_pool_ops_t wrap_ops;

typedef struct lvl_arg {
    long idx;
    coexec_sched_t want;
    int rank;
    int yields;
} lvl_arg_t;

static inline void lvl_ult(void *arg)
{
    lvl_arg_t *a = arg;
    CH_CHECK(CH_SAME(self_sched(), a->want));
    for (int i = 0; i < a->yields; i++) {
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
        CH_CHECK(CH_SAME(self_sched(), a->want));
    }
    CH_CHECK_EQ(ch_self_rank(), a->rank);
    hit(a->idx);
}

static inline coexec_poll_status_t lvl_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    lvl_arg_t *a = arg;
    CH_CHECK(CH_SAME(self_sched(), a->want));
    CH_CHECK_EQ(ch_self_rank(), a->rank);
    hit(a->idx);
    return COEXEC_READY;
}

static inline void lvl_create(coexec_pool_t pool, lvl_arg_t *a, long idx,
                              coexec_sched_t want, int rank)
{
    *a = (lvl_arg_t){idx, want, rank, (int)(idx % 3)};
    if (idx % 2)
        CH_ASSERT_OK(coexec_thread_create(pool, lvl_ult, a, NULL, NULL));
    else
        CH_ASSERT_OK(coexec_tasklet_create(pool, lvl_tasklet, a, NULL));
}

static inline coexec_sched_t make_sched(int user, coexec_pool_t *pools, int n)
{
    coexec_sched_t s = {0};
    coexec_sched_config_t sc = no_steal_cfg();
    if (user)
        CH_ASSERT_OK_FATAL(coexec_sched_create_user(&us_ops, pools, n, &sc, NULL, &s));
    else
        CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, pools, n, &sc, &s));
    return s;
}

static inline coexec_sched_t main_sched_of(coexec_xstream_t xs)
{
    coexec_sched_t s = {0};
    CH_CHECK_RC(coexec_xstream_get_main_sched(xs, &s), COEXEC_OK);
    return s;
}

/* Waits until sched can be freed (it left its pool for good). */
static inline void wait_freed(coexec_sched_t *s)
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

static inline void log_ult(void *arg) { olog_add(&g_log, (int)(intptr_t)arg); }

static inline coexec_poll_status_t log_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    olog_add(&g_log, (int)(intptr_t)arg);
    return COEXEC_READY;
}

/* The suites, one file each; test_stack.c lists them. */
extern const ch_test_t schedx_user_tests[];
extern const ch_test_t schedx_stack_tests[];
extern const ch_test_t schedx_prio_tests[];
extern const ch_test_t schedx_steal_tests[];
extern const ch_test_t schedx_migrate_tests[];
extern const ch_test_t schedx_yield_to_tests[];
extern const ch_test_t schedx_child_first_tests[];
extern const ch_test_t schedx_replace_tests[];
extern const ch_test_t schedx_access_tests[];

#endif /* COEXEC_TEST_STACK_TEST_H */
