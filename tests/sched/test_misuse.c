/*
 * tests/sched/test_misuse.c: misuse of the pool, scheduler and migration
 * API. Every bad argument (NULL pointer, null, freed or old-epoch handle,
 * size out of range, ops table too small or incomplete), wrong caller
 * (external thread, tasklet, ULT, scheduler loop) and wrong state (busy
 * pool or scheduler, terminated, running or parked unit, the caller
 * itself) must get its named error, change nothing, and leave the runtime
 * working: every test ends by creating and joining a ULT and a tasklet.
 *
 * Verdicts are return codes and counts; waits are bounded by CH_WAIT (a
 * hang guard, never a verdict).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================================= */
/* helpers                                                                  */
/* ======================================================================= */

static const coexec_pool_t NULL_POOL = {0};
static const coexec_sched_t NULL_SCHED = {0};
static const coexec_thread_t NULL_THREAD = {0};
static const coexec_unit_t NULL_UNIT = {0};
static const coexec_xstream_t NULL_XS = {0};

static coexec_xstream_t xs_of_rank(int rank)
{
    coexec_xstream_t xs = {0};
    CH_CHECK_RC(coexec_xstream_by_rank(rank, &xs), COEXEC_OK);
    return xs;
}

/* The first pool of the primary's main scheduler. */
static coexec_pool_t main_pool(void)
{
    coexec_pool_t p = {0};
    CH_CHECK_RC(coexec_xstream_get_main_pool(xs_of_rank(0), &p), COEXEC_OK);
    return p;
}

static coexec_sched_t main_sched_of(coexec_xstream_t xs)
{
    coexec_sched_t s = {0};
    CH_CHECK_RC(coexec_xstream_get_main_sched(xs, &s), COEXEC_OK);
    return s;
}

static size_t size_of(coexec_pool_t p)
{
    size_t n = (size_t)-1;
    CH_CHECK_RC(coexec_pool_get_size(p, &n), COEXEC_OK);
    return n;
}

static void noop_ult(void *arg)
{
    if (arg)
        atomic_fetch_add((atomic_int *)arg, 1);
}

static coexec_poll_status_t noop_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    if (arg)
        atomic_fetch_add((atomic_int *)arg, 1);
    return COEXEC_READY;
}

/* The runtime still works: a ULT and a tasklet in the primary's main pool
 * are created, run and joined. */
static void still_works_at(const char *file, int line)
{
    atomic_int ran = 0;
    coexec_thread_t t;
    coexec_tasklet_t k;
    int rc = coexec_thread_create(main_pool(), noop_ult, &ran, NULL, &t);
    if (rc == COEXEC_OK)
        rc = coexec_thread_free(&t);
    if (rc == COEXEC_OK)
        rc = coexec_tasklet_create(main_pool(), noop_tasklet, &ran, &k);
    if (rc == COEXEC_OK)
        rc = coexec_tasklet_free(&k);
    if (rc != COEXEC_OK || atomic_load(&ran) != 2)
        ch_fail_at(file, line, "runtime no longer works: %s, %d units ran",
                   coexec_err_name(rc), atomic_load(&ran));
}
#define STILL_WORKS() still_works_at(__FILE__, __LINE__)

/* A pool handle whose pool was freed (its record may be reused). */
static coexec_pool_t freed_pool(void)
{
    coexec_pool_t p, old;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p));
    old = p;
    CH_ASSERT_OK_FATAL(coexec_pool_free(&p));
    CU_ASSERT(CH_IS_NULL(p));
    return old;
}

static coexec_sched_t freed_sched(void)
{
    coexec_pool_t p;
    coexec_sched_t s, old;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, &p, 1, NULL, &s));
    old = s;
    CH_ASSERT_OK_FATAL(coexec_sched_free(&s));
    CU_ASSERT(CH_IS_NULL(s));
    CH_ASSERT_OK_FATAL(coexec_pool_free(&p));
    return old;
}

/* A ULT handle whose ULT finished and was freed. */
static coexec_thread_t freed_thread(void)
{
    coexec_thread_t t, old;
    CH_ASSERT_OK_FATAL(coexec_thread_create(main_pool(), noop_ult, NULL, NULL, &t));
    old = t;
    CH_ASSERT_OK_FATAL(coexec_thread_free(&t));
    return old;
}

static coexec_xstream_t freed_xstream(void)
{
    coexec_xstream_t xs, old;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(NULL, &xs));
    old = xs;
    CH_ASSERT_OK_FATAL(coexec_xstream_free(&xs));
    return old;
}

/* A ULT that has finished but is not freed yet (its handle stays valid). */
static coexec_thread_t terminated_thread(void)
{
    coexec_thread_t t;
    CH_ASSERT_OK_FATAL(coexec_thread_create(main_pool(), noop_ult, NULL, NULL, &t));
    CH_ASSERT_OK_FATAL(coexec_thread_join(t));
    coexec_unit_state_t st = COEXEC_UNIT_READY;
    CH_ASSERT_OK(coexec_thread_get_state(t, &st));
    CH_ASSERT_EQ(st, COEXEC_UNIT_TERMINATED);
    return t;
}

static coexec_thread_t self_thread(void)
{
    coexec_thread_t t = {0};
    CH_CHECK_RC(coexec_thread_self(&t), COEXEC_OK);
    return t;
}

/* A tasklet's handle read as a ULT's (a foreign handle of the wrong kind). */
static coexec_thread_t as_thread(coexec_tasklet_t k)
{
    coexec_thread_t t = {k.p, k.gen};
    return t;
}

/* ---- running a function as an external thread, a tasklet, a ULT ------ */

/* A PRIV/SPSC-style pool side bound to a helper thread: pops once from an
 * agent so that the pool belongs to that thread (COEXEC_CHECKS builds). */
static void pop_once(void *arg)
{
    coexec_unit_t u;
    CH_CHECK_RC(coexec_pool_pop(*(coexec_pool_t *)arg, &u), COEXEC_OK);
    CH_CHECK(CH_IS_NULL(u));
}

/* A PRIV pool owned by a helper pthread that stays alive until
 * priv_pool_done. */
typedef struct priv_pool {
    ch_agent_t agent;
    coexec_pool_t pool;
} priv_pool_t;

static void priv_pool_make(priv_pool_t *pp)
{
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_PRIV, &pp->pool));
    ch_agent_start(&pp->agent);
    ch_agent_run(&pp->agent, pop_once, &pp->pool);
}

static void free_on_agent(void *arg)
{
    CH_CHECK_RC(coexec_pool_free((coexec_pool_t *)arg), COEXEC_OK);
}

static void priv_pool_done(priv_pool_t *pp)
{
    CH_ASSERT_EQ(size_of(pp->pool), 0);
    ch_agent_run(&pp->agent, free_on_agent, &pp->pool);
    ch_agent_stop(&pp->agent);
}

/* ---- a user scheduler that runs jobs in its own loop ------------------- */

typedef void (*loop_job_t)(coexec_sched_t self, void *arg);

typedef struct job_sched {
    coexec_sched_t self;
    _Atomic(loop_job_t) job;
    void *job_arg;
    atomic_int jobs_done;
    atomic_int frees;
} job_sched_t;

static int js_init(coexec_sched_t s, void *arg, void **state)
{
    job_sched_t *j = arg;
    j->self = s;
    *state = j;
    return COEXEC_OK;
}

static void js_free(void *state)
{
    atomic_fetch_add(&((job_sched_t *)state)->frees, 1);
}

static void js_run(coexec_sched_t sched, void *state)
{
    job_sched_t *j = state;
    int np = 0;
    CH_CHECK_RC(coexec_sched_get_num_pools(sched, &np), COEXEC_OK);
    for (;;) {
        loop_job_t fn = atomic_exchange(&j->job, NULL);
        if (fn) {
            fn(sched, j->job_arg);
            atomic_fetch_add(&j->jobs_done, 1);
        }
        coexec_unit_t u = {0};
        for (int i = 0; i < np && CH_IS_NULL(u); i++)
            CH_CHECK_RC(coexec_sched_pop(sched, i, &u), COEXEC_OK);
        if (!CH_IS_NULL(u))
            CH_CHECK_RC(coexec_sched_run_unit(sched, u), COEXEC_OK);
        CH_CHECK_RC(coexec_sched_check_events(sched), COEXEC_OK);
        int stop = -1;
        CH_CHECK_RC(coexec_sched_has_to_stop(sched, &stop), COEXEC_OK);
        if (stop == 1)
            return;
        if (CH_IS_NULL(u) && !atomic_load(&j->job))
            CH_CHECK_RC(coexec_sched_idle(sched), COEXEC_OK);
    }
}

static const coexec_sched_ops_t js_ops = {
    .size = sizeof(coexec_sched_ops_t),
    .init = js_init,
    .run = js_run,
    .free = js_free,
};

/* A stream whose main scheduler is a job scheduler over its own pool. */
typedef struct job_stream {
    job_sched_t js;
    coexec_pool_t pool;
    coexec_sched_t sched;
    coexec_xstream_t xs;
} job_stream_t;

static void job_stream_start(job_stream_t *s)
{
    memset(s, 0, sizeof *s);
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &s->pool));
    CH_ASSERT_OK_FATAL(coexec_sched_create_user(&js_ops, &s->pool, 1, NULL, &s->js, &s->sched));
    coexec_xstream_attr_t a;
    CH_ASSERT_OK_FATAL(coexec_xstream_attr_init(&a));
    a.sched = s->sched;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(&a, &s->xs));
}

/* Runs job(sched, arg) inside the stream's scheduler loop and waits. */
static void job_stream_run(job_stream_t *s, loop_job_t job, void *arg)
{
    int before = atomic_load(&s->js.jobs_done);
    s->js.job_arg = arg;
    atomic_store(&s->js.job, job);
    /* A push wakes the loop if it parked. */
    CH_ASSERT_OK(coexec_tasklet_create(s->pool, noop_tasklet, NULL, NULL));
    CH_WAIT(atomic_load(&s->js.jobs_done) > before);
}

static void job_stream_stop(job_stream_t *s)
{
    CH_ASSERT_OK(coexec_xstream_free(&s->xs));
    CH_ASSERT_OK(coexec_sched_free(&s->sched));
    CH_ASSERT_EQ(atomic_load(&s->js.frees), 1);
    CH_ASSERT_OK(coexec_pool_free(&s->pool));
}

/* Waits until a stacked scheduler has finished and frees it. */
static void free_when_finished(coexec_sched_t *s)
{
    int rc = COEXEC_EBUSY;
    CH_WAIT((rc = coexec_sched_free(s)) != COEXEC_EBUSY);
    CH_ASSERT_OK(rc);
}

/* ======================================================================= */
/* pool                                                                     */
/* ======================================================================= */

static void t_pool_create_args(void)
{
    ch_init(1);
    coexec_pool_t p = {0};
    CH_ASSERT_RC(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_create((coexec_pool_kind_t)99, COEXEC_ACCESS_MPMC, &p), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_create((coexec_pool_kind_t)-1, COEXEC_ACCESS_MPMC, &p), COEXEC_EINVAL);
    /* USER is reported, never made by kind. */
    CH_ASSERT_RC(coexec_pool_create(COEXEC_POOL_USER, COEXEC_ACCESS_MPMC, &p), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_create(COEXEC_POOL_FIFO, (coexec_pool_access_t)5, &p), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_create(COEXEC_POOL_FIFO, (coexec_pool_access_t)-1, &p), COEXEC_EINVAL);
    CU_ASSERT(CH_IS_NULL(p));

    coexec_pool_config_t cfg;
    CH_ASSERT_RC(coexec_pool_config_init(NULL), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_pool_config_init(&cfg));
    CH_ASSERT_RC(coexec_pool_create_ex(COEXEC_POOL_PRIO, COEXEC_ACCESS_MPMC, &cfg, NULL), COEXEC_EINVAL);
    coexec_pool_config_t bad = cfg;
    bad.size = 0;
    CH_ASSERT_RC(coexec_pool_create_ex(COEXEC_POOL_PRIO, COEXEC_ACCESS_MPMC, &bad, &p), COEXEC_EINVAL);
    bad.size = sizeof bad - 1;
    CH_ASSERT_RC(coexec_pool_create_ex(COEXEC_POOL_PRIO, COEXEC_ACCESS_MPMC, &bad, &p), COEXEC_EINVAL);
    bad = cfg;
    bad.levels = 0;
    CH_ASSERT_RC(coexec_pool_create_ex(COEXEC_POOL_PRIO, COEXEC_ACCESS_MPMC, &bad, &p), COEXEC_EINVAL);
    bad.levels = -3;
    CH_ASSERT_RC(coexec_pool_create_ex(COEXEC_POOL_PRIO, COEXEC_ACCESS_MPMC, &bad, &p), COEXEC_EINVAL);
    bad.levels = 65;
    CH_ASSERT_RC(coexec_pool_create_ex(COEXEC_POOL_PRIO, COEXEC_ACCESS_MPMC, &bad, &p), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_create_ex(COEXEC_POOL_USER, COEXEC_ACCESS_MPMC, &cfg, &p), COEXEC_EINVAL);
    CU_ASSERT(CH_IS_NULL(p));

    /* The bounds themselves are fine. */
    bad.levels = 64;
    CH_ASSERT_OK(coexec_pool_create_ex(COEXEC_POOL_PRIO, COEXEC_ACCESS_MPMC, &bad, &p));
    CH_ASSERT_OK(coexec_pool_free(&p));
    bad.levels = 1;
    CH_ASSERT_OK(coexec_pool_create_ex(COEXEC_POOL_PRIO, COEXEC_ACCESS_MPMC, &bad, &p));
    CH_ASSERT_OK(coexec_pool_free(&p));
    CH_ASSERT_OK(coexec_pool_create_ex(COEXEC_POOL_DEQUE, COEXEC_ACCESS_PRIV, NULL, &p));
    coexec_pool_access_t acc = COEXEC_ACCESS_PRIV;
    CH_ASSERT_OK(coexec_pool_get_info(p, NULL, &acc));
    CH_ASSERT_EQ(acc, COEXEC_ACCESS_MPMC); /* a DEQUE is always MPMC */
    CH_ASSERT_OK(coexec_pool_free(&p));
    STILL_WORKS();
    ch_finalize();
}

/* ---- user pools ---------------------------------------------------------- */

typedef struct upool {
    coexec_unit_t q[16];
    int n;
    atomic_int inits, frees;
} upool_t;

static int up_init_fail(coexec_pool_t pool, void *arg, void **state)
{
    atomic_fetch_add(&((upool_t *)arg)->inits, 1);
    return COEXEC_EAGAIN;
}

static int up_init(coexec_pool_t pool, void *arg, void **state)
{
    atomic_fetch_add(&((upool_t *)arg)->inits, 1);
    *state = arg;
    return COEXEC_OK;
}

static void up_free(void *state)
{
    atomic_fetch_add(&((upool_t *)state)->frees, 1);
}

static void up_push(void *state, coexec_unit_t u, coexec_push_kind_t k)
{
    upool_t *q = state;
    q->q[q->n++] = u;
}

static coexec_unit_t up_pop(void *state)
{
    upool_t *q = state;
    coexec_unit_t u = {0};
    if (q->n > 0) {
        u = q->q[0];
        memmove(q->q, q->q + 1, (size_t)--q->n * sizeof u);
    }
    return u;
}

static size_t up_size(void *state)
{
    return (size_t)((upool_t *)state)->n;
}

static const coexec_pool_ops_t up_ops = {
    .size = sizeof(coexec_pool_ops_t),
    .init = up_init,
    .free = up_free,
    .push = up_push,
    .pop = up_pop,
    .get_size = up_size,
};

static void t_pool_create_user_args(void)
{
    ch_init(1);
    upool_t st = {0};
    coexec_pool_t p = {0};
    CH_ASSERT_RC(coexec_pool_create_user(NULL, COEXEC_ACCESS_MPMC, &st, &p), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_create_user(&up_ops, COEXEC_ACCESS_MPMC, &st, NULL), COEXEC_EINVAL);
    coexec_pool_ops_t o = up_ops;
    o.size = 0;
    CH_ASSERT_RC(coexec_pool_create_user(&o, COEXEC_ACCESS_MPMC, &st, &p), COEXEC_EINVAL);
    o.size = offsetof(coexec_pool_ops_t, pop);
    CH_ASSERT_RC(coexec_pool_create_user(&o, COEXEC_ACCESS_MPMC, &st, &p), COEXEC_EINVAL);
    o.size = sizeof o - 1;
    CH_ASSERT_RC(coexec_pool_create_user(&o, COEXEC_ACCESS_MPMC, &st, &p), COEXEC_EINVAL);
    o = up_ops;
    o.push = NULL;
    CH_ASSERT_RC(coexec_pool_create_user(&o, COEXEC_ACCESS_MPMC, &st, &p), COEXEC_EINVAL);
    o = up_ops;
    o.pop = NULL;
    CH_ASSERT_RC(coexec_pool_create_user(&o, COEXEC_ACCESS_MPMC, &st, &p), COEXEC_EINVAL);
    o = up_ops;
    o.get_size = NULL;
    CH_ASSERT_RC(coexec_pool_create_user(&o, COEXEC_ACCESS_MPMC, &st, &p), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_create_user(&up_ops, (coexec_pool_access_t)7, &st, &p), COEXEC_EINVAL);
    CU_ASSERT(CH_IS_NULL(p));
    /* None of the refused tables reached init. */
    CH_ASSERT_EQ(atomic_load(&st.inits), 0);

    /* A failing init: its code comes back, free is not called. */
    o = up_ops;
    o.init = up_init_fail;
    CH_ASSERT_RC(coexec_pool_create_user(&o, COEXEC_ACCESS_MPMC, &st, &p), COEXEC_EAGAIN);
    CU_ASSERT(CH_IS_NULL(p));
    CH_ASSERT_EQ(atomic_load(&st.inits), 1);
    CH_ASSERT_EQ(atomic_load(&st.frees), 0);

    /* A good table works, and a bigger one (a newer caller) too. */
    struct {
        coexec_pool_ops_t ops;
        void *later[4];
    } big = {up_ops, {NULL}};
    big.ops.size = sizeof big;
    CH_ASSERT_OK(coexec_pool_create_user(&big.ops, COEXEC_ACCESS_MPMC, &st, &p));
    void *data = NULL;
    CH_ASSERT_OK(coexec_pool_get_data(p, &data));
    CU_ASSERT(data == &st);
    CH_ASSERT_OK(coexec_pool_free(&p));
    CH_ASSERT_EQ(atomic_load(&st.frees), 1);
    /* Built-in pools have no data. */
    CH_ASSERT_OK(coexec_pool_get_data(main_pool(), &data));
    CU_ASSERT(data == NULL);
    STILL_WORKS();
    ch_finalize();
}

static void t_pool_handles(void)
{
    ch_init(1);
    coexec_pool_t dead = freed_pool();
    coexec_pool_t live;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &live));
    coexec_sched_t s;
    coexec_pool_t sp;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &sp));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, &sp, 1, NULL, &s));
    coexec_thread_t t;
    CH_ASSERT_OK_FATAL(coexec_thread_create(live, noop_ult, NULL, NULL, &t));
    coexec_unit_t u;
    CH_ASSERT_OK(coexec_pool_pop(live, &u));
    CU_ASSERT(CH_SAME(u, coexec_thread_unit(t)));

    const coexec_pool_t bad[] = {NULL_POOL, dead, {live.p, live.gen + 1},
                                 {live.p, 0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        coexec_pool_t b = bad[i];
        void *d;
        size_t n;
        coexec_unit_t got;
        coexec_pool_kind_t k;
        CH_ASSERT_RC(coexec_pool_get_data(b, &d), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_pool_get_size(b, &n), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_pool_get_info(b, &k, NULL), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_pool_pop(b, &got), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_pool_steal(b, &got), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_pool_push(b, u), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_pool_add_sched(b, s), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_pool_free(&b), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_thread_migrate_to(t, bad[i]), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_thread_create(bad[i], noop_ult, NULL, NULL, NULL), COEXEC_EHANDLE);
    }
    /* NULL out pointers. */
    CH_ASSERT_RC(coexec_pool_free(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_get_data(live, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_get_size(live, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_pop(live, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_steal(live, NULL), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_pool_get_info(live, NULL, NULL));
    /* A freed pool's record, reused by the next pool: the old handle
     * stays dead, the new one works. */
    coexec_pool_t again;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_LIFO, COEXEC_ACCESS_MPMC, &again));
    size_t n = 0;
    CH_ASSERT_RC(coexec_pool_get_size(dead, &n), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_pool_get_size(again, &n));
    CH_ASSERT_OK(coexec_pool_free(&again));
    /* Double free. */
    coexec_pool_t twice = again;
    CH_ASSERT_RC(coexec_pool_free(&twice), COEXEC_EHANDLE);

    /* Nothing changed: t is still in no pool; it can be pushed and run. */
    CH_ASSERT_EQ(size_of(live), 0);
    CH_ASSERT_OK(coexec_pool_push(main_pool(), u));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_sched_free(&s));
    CH_ASSERT_OK(coexec_pool_free(&sp));
    CH_ASSERT_OK(coexec_pool_free(&live));
    STILL_WORKS();
    ch_finalize();
}

static void t_pool_free_busy(void)
{
    ch_init(2);
    coexec_pool_t p;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p));
    coexec_thread_t t;
    coexec_tasklet_t k;
    CH_ASSERT_OK_FATAL(coexec_thread_create(p, noop_ult, NULL, NULL, &t));
    CH_ASSERT_OK_FATAL(coexec_tasklet_create(p, noop_tasklet, NULL, &k));
    /* Units queued. */
    coexec_pool_t h = p;
    CH_ASSERT_RC(coexec_pool_free(&h), COEXEC_EBUSY);
    CU_ASSERT(CH_SAME(h, p)); /* not cleared */
    CH_ASSERT_EQ(size_of(p), 2);
    /* Joining runs them in place and empties the pool. */
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_EQ(size_of(p), 0);

    /* Used by a scheduler that runs nowhere. */
    coexec_sched_t s;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, &p, 1, NULL, &s));
    CH_ASSERT_RC(coexec_pool_free(&h), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_sched_free(&s));

    /* Used by a running stream's main scheduler. */
    ch_stream_t cs;
    CH_ASSERT_OK_FATAL(ch_stream_create(&cs, COEXEC_SCHED_BASIC_WAIT));
    h = cs.pool;
    CH_ASSERT_RC(coexec_pool_free(&h), COEXEC_EBUSY);
    atomic_int ran = 0;
    CH_ASSERT_OK(ch_run_ult_in(cs.pool, noop_ult, &ran));
    CH_ASSERT_EQ(atomic_load(&ran), 1);

    /* A stream's default pool goes with the stream. */
    coexec_pool_t dp = main_pool();
    CH_ASSERT_RC(coexec_pool_free(&dp), COEXEC_EPERM);

    CH_ASSERT_OK(ch_stream_free(&cs));
    CH_ASSERT_OK(coexec_pool_free(&p));
    STILL_WORKS();
    ch_finalize();
}

/* ---- push of units in the wrong state ----------------------------------- */

static coexec_pool_t g_target;

static void push_self(void *arg)
{
    coexec_thread_t me = self_thread();
    CH_CHECK_RC(coexec_pool_push(g_target, coexec_thread_unit(me)), COEXEC_ESTATE);
}

static void t_pool_push_state(void)
{
    ch_init(2);
    coexec_pool_t q; /* served by nobody */
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &q));
    g_target = q;
    coexec_thread_t t;
    CH_ASSERT_OK_FATAL(coexec_thread_create(q, noop_ult, NULL, NULL, &t));
    /* Queued. */
    CH_ASSERT_RC(coexec_pool_push(q, coexec_thread_unit(t)), COEXEC_ESTATE);
    CH_ASSERT_RC(coexec_pool_push(main_pool(), coexec_thread_unit(t)), COEXEC_ESTATE);
    CH_ASSERT_EQ(size_of(q), 1);
    /* Running (itself). */
    CH_ASSERT_OK(ch_run_ult_in(main_pool(), push_self, NULL));
    CH_ASSERT_EQ(size_of(q), 1);
    /* Terminated. */
    coexec_thread_t done = terminated_thread();
    CH_ASSERT_RC(coexec_pool_push(q, coexec_thread_unit(done)), COEXEC_ESTATE);
    /* Freed. */
    CH_ASSERT_RC(coexec_pool_push(q, coexec_thread_unit(freed_thread())), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_pool_push(q, NULL_UNIT), COEXEC_EHANDLE);
    /* The main ULT is bound to its stream: COEXEC_EPERM (not listed in
     * pool.h's header: see the report). */
    CH_ASSERT_RC(coexec_pool_push(q, coexec_thread_unit(self_thread())), COEXEC_EPERM);
    CH_ASSERT_EQ(size_of(q), 1);

    /* The right way still works: pop, push elsewhere, join. */
    coexec_unit_t u;
    CH_ASSERT_OK(coexec_pool_pop(q, &u));
    CU_ASSERT(CH_SAME(u, coexec_thread_unit(t)));
    CH_ASSERT_OK(coexec_pool_push(main_pool(), u));
    CH_ASSERT_RC(coexec_pool_push(q, u), COEXEC_ESTATE); /* queued again */
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_thread_free(&done));
    CH_ASSERT_OK(coexec_pool_free(&q));
    STILL_WORKS();
    ch_finalize();
}

static void push_on_ext(void *arg)
{
    priv_pool_t *pp = arg;
    coexec_unit_t u = {0};
    /* The helper agent owns the pool; this is another thread. */
    CH_CHECK_RC(coexec_pool_pop(pp->pool, &u), COEXEC_EACCESS);
}

static void t_pool_access(void)
{
    if (!CH_HAVE_CHECKS) {
        fprintf(stderr, "    (skipped: no COEXEC_CHECKS)\n");
        return;
    }
    ch_init(2);
    priv_pool_t pp;
    priv_pool_make(&pp);
    coexec_thread_t t;
    /* The main ULT's thread is not the owner. */
    CH_ASSERT_RC(coexec_thread_create(pp.pool, noop_ult, NULL, NULL, &t), COEXEC_EACCESS);
    coexec_unit_t u;
    CH_ASSERT_RC(coexec_pool_pop(pp.pool, &u), COEXEC_EACCESS);
    ch_run_external(push_on_ext, &pp);
    coexec_pool_t q;
    coexec_sched_t s;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &q));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, &q, 1, NULL, &s));
    CH_ASSERT_RC(coexec_pool_add_sched(pp.pool, s), COEXEC_EACCESS);
    /* s was not taken. */
    CH_ASSERT_OK(coexec_sched_free(&s));
    /* Migration into it is refused too, and the ULT stays put. */
    CH_ASSERT_OK_FATAL(coexec_thread_create(q, noop_ult, NULL, NULL, &t));
    CH_ASSERT_RC(coexec_thread_migrate_to(t, pp.pool), COEXEC_EACCESS);
    CH_ASSERT_EQ(size_of(q), 1);
    CH_ASSERT_OK(coexec_thread_migrate_to(t, main_pool()));
    /* A revive into it too, and the finished ULT stays revivable. */
    CH_ASSERT_OK(coexec_thread_join(t));
    coexec_thread_t before = t;
    CH_ASSERT_RC(coexec_thread_revive(pp.pool, noop_ult, NULL, &t),
                 COEXEC_EACCESS);
    CU_ASSERT(CH_SAME(t, before));
    CH_ASSERT_OK(coexec_thread_revive(q, noop_ult, NULL, &t));
    CH_ASSERT_EQ(size_of(q), 1);
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(size_of(q), 0);
    CH_ASSERT_OK(coexec_pool_free(&q));
    priv_pool_done(&pp);
    STILL_WORKS();
    ch_finalize();
}

/* ======================================================================= */
/* sched                                                                    */
/* ======================================================================= */

static void dummy_run(coexec_sched_t s, void *st) {}

static int fail_init(coexec_sched_t s, void *arg, void **state)
{
    atomic_fetch_add((atomic_int *)arg, 1);
    return COEXEC_ENOENT;
}

static void count_free(void *state)
{
    atomic_fetch_add((atomic_int *)state, 100);
}

static void t_sched_create_args(void)
{
    ch_init(1);
    coexec_pool_t p, q;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p));
    coexec_sched_t s = {0};
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, &p, 1, NULL, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, NULL, 1, NULL, &s), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, &p, 0, NULL, &s), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, &p, -1, NULL, &s), COEXEC_EINVAL);
    coexec_pool_t many[65];
    for (int i = 0; i < 65; i++)
        many[i] = p;
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, many, 65, NULL, &s), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_USER, &p, 1, NULL, &s), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create((coexec_sched_kind_t)42, &p, 1, NULL, &s), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create((coexec_sched_kind_t)-1, &p, 1, NULL, &s), COEXEC_EINVAL);
    /* A bad pool anywhere in the array; the good ones are not kept busy. */
    coexec_pool_t two[2] = {p, NULL_POOL};
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, two, 2, NULL, &s), COEXEC_EHANDLE);
    two[1] = freed_pool();
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, two, 2, NULL, &s), COEXEC_EHANDLE);
    /* Config. */
    coexec_sched_config_t cfg;
    CH_ASSERT_RC(coexec_sched_config_init(NULL), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_sched_config_init(&cfg));
    coexec_sched_config_t bad = cfg;
    bad.size = 0;
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, &p, 1, &bad, &s), COEXEC_EINVAL);
    bad = cfg;
    bad.stack_size = 1;
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, &p, 1, &bad, &s), COEXEC_EINVAL);
    bad.stack_size = (size_t)1 << 31;
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, &p, 1, &bad, &s), COEXEC_EINVAL);
    CU_ASSERT(CH_IS_NULL(s));
    /* Nothing kept p: it can be freed and made again. */
    CH_ASSERT_OK(coexec_pool_free(&p));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p));

    /* User schedulers. */
    atomic_int calls = 0;
    coexec_sched_ops_t o = {.size = sizeof o, .run = dummy_run};
    CH_ASSERT_RC(coexec_sched_create_user(NULL, &p, 1, NULL, NULL, &s), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create_user(&o, NULL, 1, NULL, NULL, &s), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create_user(&o, &p, 1, NULL, NULL, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create_user(&o, &p, 0, NULL, NULL, &s), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create_user(&o, many, 65, NULL, NULL, &s), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create_user(&o, &p, 1, &bad, NULL, &s), COEXEC_EINVAL);
    coexec_pool_t nullp = NULL_POOL;
    CH_ASSERT_RC(coexec_sched_create_user(&o, &nullp, 1, NULL, NULL, &s), COEXEC_EHANDLE);
    o.size = 0;
    CH_ASSERT_RC(coexec_sched_create_user(&o, &p, 1, NULL, NULL, &s), COEXEC_EINVAL);
    o.size = offsetof(coexec_sched_ops_t, free);
    CH_ASSERT_RC(coexec_sched_create_user(&o, &p, 1, NULL, NULL, &s), COEXEC_EINVAL);
    o.size = sizeof o;
    o.run = NULL;
    CH_ASSERT_RC(coexec_sched_create_user(&o, &p, 1, NULL, NULL, &s), COEXEC_EINVAL);
    CU_ASSERT(CH_IS_NULL(s));
    /* A failing init: its code, no free, out stays null, p not kept. */
    o.run = dummy_run;
    o.init = fail_init;
    o.free = count_free;
    CH_ASSERT_RC(coexec_sched_create_user(&o, &p, 1, NULL, &calls, &s), COEXEC_ENOENT);
    CH_ASSERT_EQ(atomic_load(&calls), 1);
    CU_ASSERT(CH_IS_NULL(s));
    q = p;
    CH_ASSERT_OK(coexec_pool_free(&q));
    STILL_WORKS();
    ch_finalize();
}

static void t_sched_handles(void)
{
    ch_init(1);
    coexec_sched_t dead = freed_sched();
    const coexec_sched_t bad[] = {NULL_SCHED, dead};
    coexec_pool_t p;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        coexec_sched_t b = bad[i];
        void *d;
        int n, stop;
        coexec_pool_t gp;
        coexec_unit_t u;
        CH_ASSERT_RC(coexec_sched_get_data(b, &d), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_sched_get_num_pools(b, &n), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_sched_get_pool(b, 0, &gp), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_sched_pop(b, 0, &u), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_sched_run_unit(b, NULL_UNIT), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_sched_check_events(b), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_sched_has_to_stop(b, &stop), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_sched_idle(b), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_sched_finish(b), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_pool_add_sched(p, b), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_xstream_set_main_sched(xs_of_rank(0), b), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_sched_free(&b), COEXEC_EHANDLE);
    }
    CH_ASSERT_RC(coexec_sched_free(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_self(NULL), COEXEC_EINVAL);
    coexec_sched_t ms = main_sched_of(xs_of_rank(0));
    void *d;
    CH_ASSERT_RC(coexec_sched_get_data(ms, NULL), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_sched_get_data(ms, &d));
    CU_ASSERT(d == NULL);
    int n;
    CH_ASSERT_RC(coexec_sched_get_num_pools(ms, NULL), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_sched_get_num_pools(ms, &n));
    coexec_pool_t gp;
    CH_ASSERT_RC(coexec_sched_get_pool(ms, n, &gp), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_get_pool(ms, -1, &gp), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_get_pool(ms, 0, NULL), COEXEC_EINVAL);
    /* Double free. */
    coexec_sched_t s;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, &p, 1, NULL, &s));
    coexec_sched_t copy = s;
    CH_ASSERT_OK(coexec_sched_free(&s));
    CH_ASSERT_RC(coexec_sched_free(&copy), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_pool_free(&p));
    STILL_WORKS();
    ch_finalize();
}

/* ---- the loop-only calls from everywhere but the loop ---------------- */

typedef struct loop_calls {
    coexec_sched_t sched; /* a valid scheduler that is not the caller's loop */
    coexec_unit_t unit;   /* a unit for run_unit */
    int want;             /* the error every call must return */
    atomic_int done;
} loop_calls_t;

static void loop_calls_check(loop_calls_t *c)
{
    coexec_unit_t u = {0};
    int stop = -1;
    CH_CHECK_RC(coexec_sched_pop(c->sched, 0, &u), c->want);
    CH_CHECK_RC(coexec_sched_run_unit(c->sched, c->unit), c->want);
    CH_CHECK_RC(coexec_sched_check_events(c->sched), c->want);
    CH_CHECK_RC(coexec_sched_has_to_stop(c->sched, &stop), c->want);
    CH_CHECK_RC(coexec_sched_idle(c->sched), c->want);
    CH_CHECK(stop == -1);
    atomic_fetch_add(&c->done, 1);
}

static void loop_calls_fn(void *arg)
{
    loop_calls_check(arg);
}

static void loop_calls_job(coexec_sched_t self, void *arg)
{
    loop_calls_check(arg);
}

static void self_is(void *arg)
{
    coexec_sched_t s = {0};
    CH_CHECK_RC(coexec_sched_self(&s), COEXEC_OK);
    CH_CHECK(CH_SAME(s, *(coexec_sched_t *)arg));
}

/* A unit of a pool other streams steal from may run on any stream: its
 * scheduler is the main scheduler of the stream that runs it. */
static void self_is_stream_main(void *arg)
{
    (void)arg;
    coexec_xstream_t xs = {0};
    CH_CHECK_RC(coexec_xstream_self(&xs), COEXEC_OK);
    coexec_sched_t m = main_sched_of(xs);
    self_is(&m);
}

static void self_is_job(coexec_sched_t self, void *arg)
{
    self_is(&self);
}

static void self_ext(void *arg)
{
    coexec_sched_t s = {0};
    CH_CHECK_RC(coexec_sched_self(&s), COEXEC_ECONTEXT);
    CH_CHECK(CH_IS_NULL(s));
}

/* The calls for a scheduler's own loop, from every other kind of caller:
 * the main ULT, a ULT, a tasklet, an external thread, another scheduler's
 * loop. */
static void t_sched_wrong_context(void)
{
    ch_init(2);
    job_stream_t js;
    job_stream_start(&js);
    coexec_thread_t done = terminated_thread();
    coexec_sched_t ms = main_sched_of(xs_of_rank(0));
    loop_calls_t c = {.sched = ms, .unit = coexec_thread_unit(done),
                      .want = COEXEC_ECONTEXT};
    loop_calls_check(&c);
    CH_ASSERT_OK(ch_run_ult_in(main_pool(), loop_calls_fn, &c));
    CH_ASSERT_OK(ch_run_tasklet_in(main_pool(), loop_calls_fn, &c));
    ch_run_external(loop_calls_fn, &c);
    job_stream_run(&js, loop_calls_job, &c);
    /* The job stream's own scheduler, from outside its loop. */
    c.sched = js.sched;
    loop_calls_check(&c);
    CH_ASSERT_OK(ch_run_ult_in(js.pool, loop_calls_fn, &c));
    CH_ASSERT_OK(ch_run_tasklet_in(js.pool, loop_calls_fn, &c));
    ch_run_external(loop_calls_fn, &c);
    CH_ASSERT_EQ(atomic_load(&c.done), 9);
    CH_ASSERT_EQ(ch_remote_failures(), 0);

    /* sched_self: fine from ULTs, tasklets and loops, not from outside. */
    ch_run_external(self_ext, NULL);
    self_is(&ms);
    CH_ASSERT_OK(ch_run_tasklet_in(main_pool(), self_is_stream_main, NULL));
    CH_ASSERT_OK(ch_run_ult_in(js.pool, self_is, &js.sched));
    job_stream_run(&js, self_is_job, NULL);

    CH_ASSERT_OK(coexec_thread_free(&done));
    job_stream_stop(&js);
    STILL_WORKS();
    ch_finalize();
}

/* Misuse from inside a scheduler loop. */
typedef struct in_loop {
    coexec_pool_t q;
    coexec_unit_t queued, done, freed, main_ult, tasklet;
    coexec_thread_t done_t;
    atomic_int ran;
} in_loop_t;

static void in_loop_job(coexec_sched_t self, void *arg)
{
    in_loop_t *l = arg;
    int np = 0;
    coexec_unit_t u = {0};
    CH_CHECK_RC(coexec_sched_get_num_pools(self, &np), COEXEC_OK);
    CH_CHECK_RC(coexec_sched_pop(self, -1, &u), COEXEC_EINVAL);
    CH_CHECK_RC(coexec_sched_pop(self, np, &u), COEXEC_EINVAL);
    CH_CHECK_RC(coexec_sched_pop(self, 0, NULL), COEXEC_EINVAL);
    CH_CHECK_RC(coexec_sched_has_to_stop(self, NULL), COEXEC_EINVAL);
    CH_CHECK_RC(coexec_sched_run_unit(self, NULL_UNIT), COEXEC_EHANDLE);
    CH_CHECK_RC(coexec_sched_run_unit(self, l->freed), COEXEC_EHANDLE);
    CH_CHECK_RC(coexec_sched_run_unit(self, l->queued), COEXEC_ESTATE);
    CH_CHECK_RC(coexec_sched_run_unit(self, l->tasklet), COEXEC_ESTATE);
    CH_CHECK_RC(coexec_sched_run_unit(self, l->done), COEXEC_ESTATE);
    CH_CHECK_RC(coexec_sched_run_unit(self, l->main_ult), COEXEC_ESTATE);
    /* Blocking and ULT-only calls from a loop. */
    CH_CHECK_RC(coexec_yield(), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_yield_to(l->done_t), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_thread_create_child_first(l->q, noop_ult, NULL, NULL, NULL),
                COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_thread_join(l->done_t), COEXEC_ECONTEXT);
    /* Its own scheduler is running: it cannot be freed or stacked. */
    coexec_sched_t me = self;
    CH_CHECK_RC(coexec_sched_free(&me), COEXEC_EBUSY);
    CH_CHECK_RC(coexec_pool_add_sched(l->q, self), COEXEC_EBUSY);
    CH_CHECK_EQ(atomic_load(&l->ran), 0);
    /* Nothing was lost: the queued unit is still there and runs. */
    CH_CHECK_RC(coexec_pool_pop(l->q, &u), COEXEC_OK);
    CH_CHECK(CH_SAME(u, l->queued));
    CH_CHECK_RC(coexec_sched_run_unit(self, u), COEXEC_OK);
    CH_CHECK_RC(coexec_pool_pop(l->q, &u), COEXEC_OK);
    CH_CHECK(CH_SAME(u, l->tasklet));
    CH_CHECK_RC(coexec_sched_run_unit(self, u), COEXEC_OK);
    CH_CHECK_EQ(atomic_load(&l->ran), 2);
}

static void t_sched_in_loop(void)
{
    ch_init(2);
    job_stream_t js;
    job_stream_start(&js);
    in_loop_t l = {0};
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &l.q));
    coexec_thread_t t;
    coexec_tasklet_t k;
    CH_ASSERT_OK_FATAL(coexec_thread_create(l.q, noop_ult, &l.ran, NULL, &t));
    CH_ASSERT_OK_FATAL(coexec_tasklet_create(l.q, noop_tasklet, &l.ran, &k));
    l.queued = coexec_thread_unit(t);
    l.tasklet = coexec_tasklet_unit(k);
    l.done_t = terminated_thread();
    l.done = coexec_thread_unit(l.done_t);
    l.freed = coexec_thread_unit(freed_thread());
    l.main_ult = coexec_thread_unit(self_thread());
    job_stream_run(&js, in_loop_job, &l);
    CH_ASSERT_EQ(ch_remote_failures(), 0);
    CH_ASSERT_EQ(atomic_load(&l.ran), 2);
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_OK(coexec_thread_free(&l.done_t));
    CH_ASSERT_OK(coexec_pool_free(&l.q));
    /* The loop still serves its pool. */
    atomic_int ran = 0;
    CH_ASSERT_OK(ch_run_ult_in(js.pool, noop_ult, &ran));
    CH_ASSERT_EQ(atomic_load(&ran), 1);
    job_stream_stop(&js);
    STILL_WORKS();
    ch_finalize();
}

/* ======================================================================= */
/* stacked schedulers (coexec_pool_add_sched, coexec_sched_finish)          */
/* ======================================================================= */

static void t_stacked_busy(void)
{
    ch_init(2);
    coexec_pool_t p2, other;
    coexec_sched_t s;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p2));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &other));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &p2, 1, NULL, &s));
    CH_ASSERT_OK_FATAL(coexec_pool_add_sched(main_pool(), s));
    atomic_int ran = 0;
    CH_ASSERT_OK(ch_run_ult_in(p2, noop_ult, &ran));
    CH_ASSERT_EQ(atomic_load(&ran), 1);
    /* A scheduler is a unit of one pool at a time. */
    CH_ASSERT_RC(coexec_pool_add_sched(main_pool(), s), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_pool_add_sched(other, s), COEXEC_EBUSY);
    CH_ASSERT_EQ(size_of(other), 0);
    /* ... and not a stream's main scheduler meanwhile. */
    CH_ASSERT_RC(coexec_xstream_set_main_sched(xs_of_rank(1), s), COEXEC_EBUSY);
    /* Neither it nor its pool can be freed. */
    coexec_sched_t h = s;
    CH_ASSERT_RC(coexec_sched_free(&h), COEXEC_EBUSY);
    coexec_pool_t hp = p2;
    CH_ASSERT_RC(coexec_pool_free(&hp), COEXEC_EBUSY);
    /* A main scheduler in use cannot be stacked. */
    CH_ASSERT_RC(coexec_pool_add_sched(other, main_sched_of(xs_of_rank(1))), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_pool_add_sched(other, main_sched_of(xs_of_rank(0))), COEXEC_EBUSY);
    CH_ASSERT_EQ(size_of(other), 0);
    /* It still serves p2. */
    CH_ASSERT_OK(ch_run_ult_in(p2, noop_ult, &ran));
    CH_ASSERT_EQ(atomic_load(&ran), 2);
    CH_ASSERT_OK(coexec_sched_finish(s));
    CH_ASSERT_OK(coexec_sched_finish(s)); /* twice is once */
    free_when_finished(&s);
    CH_ASSERT_OK(coexec_pool_free(&p2));
    CH_ASSERT_OK(coexec_pool_free(&other));
    STILL_WORKS();
    ch_finalize();
}

/* A scheduler may not run inside itself. */
static void t_stacked_cycle(void)
{
    ch_init(2);
    coexec_pool_t p1, p3;
    coexec_sched_t s1, s2;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p1));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p3));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &p1, 1, NULL, &s1));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &p3, 1, NULL, &s2));
    /* Into its own pool (COEXEC_EINVAL, which pool.h does not list). */
    CH_ASSERT_RC(coexec_pool_add_sched(p1, s1), COEXEC_EINVAL);
    CH_ASSERT_EQ(size_of(p1), 0);
    /* s2 inside s1, then s1 inside s2: refused. */
    CH_ASSERT_OK(coexec_pool_add_sched(p1, s2));
    CH_ASSERT_RC(coexec_pool_add_sched(p3, s1), COEXEC_EINVAL);
    CH_ASSERT_EQ(size_of(p3), 0);
    CH_ASSERT_EQ(size_of(p1), 1);
    /* s1 was not taken: it can still be stacked where it makes sense. */
    CH_ASSERT_OK(coexec_pool_add_sched(main_pool(), s1));
    atomic_int ran = 0;
    CH_ASSERT_OK(ch_run_ult_in(p3, noop_ult, &ran)); /* main > s1 > s2 */
    CH_ASSERT_OK(ch_run_ult_in(p1, noop_ult, &ran));
    CH_ASSERT_EQ(atomic_load(&ran), 2);
    CH_ASSERT_OK(coexec_sched_finish(s2));
    free_when_finished(&s2);
    CH_ASSERT_OK(coexec_sched_finish(s1));
    free_when_finished(&s1);
    CH_ASSERT_OK(coexec_pool_free(&p1));
    CH_ASSERT_OK(coexec_pool_free(&p3));
    STILL_WORKS();
    ch_finalize();
}

/* ======================================================================= */
/* replace (coexec_xstream_set_main_sched) and freeing schedulers           */
/* ======================================================================= */

static void t_replace_errors(void)
{
    ch_init(1);
    coexec_xstream_t b, c;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(NULL, &b));
    CH_ASSERT_OK_FATAL(coexec_xstream_create(NULL, &c));
    coexec_pool_t pn, p2, pst;
    coexec_sched_t s, s2, st;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pn));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p2));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pst));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &pn, 1, NULL, &s));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &p2, 1, NULL, &s2));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &pst, 1, NULL, &st));
    CH_ASSERT_OK_FATAL(coexec_pool_add_sched(main_pool(), st));

    CH_ASSERT_RC(coexec_xstream_set_main_sched(NULL_XS, s), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_set_main_sched(freed_xstream(), s), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_set_main_sched(b, NULL_SCHED), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_set_main_sched(b, freed_sched()), COEXEC_EHANDLE);
    /* In use elsewhere: another stream's main scheduler, a stacked one. */
    CH_ASSERT_RC(coexec_xstream_set_main_sched(b, main_sched_of(xs_of_rank(0))), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_xstream_set_main_sched(b, main_sched_of(c)), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_xstream_set_main_sched(b, st), COEXEC_EBUSY);
    /* Its own: nothing to do. */
    coexec_sched_t d = main_sched_of(b);
    CH_ASSERT_OK(coexec_xstream_set_main_sched(b, d));
    CU_ASSERT(CH_SAME(main_sched_of(b), d));

    /* Asked for by b: nobody else may have it. */
    CH_ASSERT_OK(coexec_xstream_set_main_sched(b, s));
    CH_ASSERT_RC(coexec_xstream_set_main_sched(c, s), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_pool_add_sched(main_pool(), s), COEXEC_EBUSY);
    coexec_sched_t h = s;
    CH_ASSERT_RC(coexec_sched_free(&h), COEXEC_EBUSY);
    /* b runs s once a unit of s's pool has run (polling get_main_sched
     * instead would not say whether units run under it yet). */
    atomic_int ran = 0;
    CH_ASSERT_OK(ch_run_ult_in(pn, noop_ult, &ran));
    CH_ASSERT_EQ(atomic_load(&ran), 1);
    CU_ASSERT(CH_SAME(main_sched_of(b), s));
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create_on(b, noop_ult, &ran, NULL, &t));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(atomic_load(&ran), 2);
    CH_ASSERT_RC(coexec_sched_free(&h), COEXEC_EBUSY);
    coexec_pool_t hp = pn;
    CH_ASSERT_RC(coexec_pool_free(&hp), COEXEC_EBUSY);
    /* b's old default scheduler is idle now but goes with b (COEXEC_EPERM,
     * which sched.h does not list). */
    coexec_sched_t dh = d;
    CH_ASSERT_RC(coexec_sched_free(&dh), COEXEC_EPERM);
    CU_ASSERT(CH_SAME(dh, d));

    /* A joined stream takes no scheduler; s2 is not taken. */
    CH_ASSERT_OK(coexec_xstream_join(b));
    CH_ASSERT_RC(coexec_xstream_set_main_sched(b, s2), COEXEC_ESTATE);
    CH_ASSERT_OK(coexec_xstream_free(&b));
    CH_ASSERT_OK(coexec_sched_free(&s));
    CH_ASSERT_OK(coexec_pool_free(&pn));

    /* A request the stream never honoured is dropped with the stream. */
    CH_ASSERT_OK(coexec_xstream_set_main_sched(c, s2));
    CH_ASSERT_OK(coexec_xstream_free(&c));
    CH_ASSERT_OK(coexec_sched_free(&s2));
    CH_ASSERT_OK(coexec_pool_free(&p2));

    CH_ASSERT_OK(coexec_sched_finish(st));
    free_when_finished(&st);
    CH_ASSERT_OK(coexec_pool_free(&pst));
    STILL_WORKS();
    ch_finalize();
}

/* ======================================================================= */
/* migrate                                                                  */
/* ======================================================================= */

static void rank_ult(void *arg)
{
    int r = -1;
    CH_CHECK_RC(coexec_xstream_self_rank(&r), COEXEC_OK);
    atomic_store((atomic_int *)arg, r);
}

typedef struct mig {
    coexec_thread_t t;
    coexec_pool_t pool;
    coexec_xstream_t xs;
} mig_t;

static void migrate_to_pool(void *arg)
{
    mig_t *m = arg;
    CH_CHECK_RC(coexec_thread_migrate_to(m->t, m->pool), COEXEC_OK);
}

static void migrate_to_xs(void *arg)
{
    mig_t *m = arg;
    CH_CHECK_RC(coexec_thread_migrate_to_xstream(m->t, m->xs), COEXEC_OK);
}

static void t_migrate_errors(void)
{
    ch_init(1);
    ch_stream_t b;
    CH_ASSERT_OK_FATAL(ch_stream_create(&b, COEXEC_SCHED_BASIC_WAIT));
    coexec_pool_t q; /* served by nobody */
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &q));

    /* The main ULT is bound to the primary. */
    coexec_thread_t me = self_thread();
    CH_ASSERT_RC(coexec_thread_migrate_to(me, b.pool), COEXEC_EPERM);
    CH_ASSERT_RC(coexec_thread_migrate_to_xstream(me, b.xs), COEXEC_EPERM);
    /* Bad handles. */
    atomic_int r1 = -1, r2 = -1, r3 = -1, r4 = -1;
    coexec_thread_t t;
    CH_ASSERT_OK_FATAL(coexec_thread_create(q, rank_ult, &r1, NULL, &t));
    CH_ASSERT_RC(coexec_thread_migrate_to(NULL_THREAD, b.pool), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_migrate_to(freed_thread(), b.pool), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_migrate_to_xstream(NULL_THREAD, b.xs), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_migrate_to_xstream(freed_thread(), b.xs), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_migrate_to(t, NULL_POOL), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_migrate_to(t, freed_pool()), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_migrate_to_xstream(t, NULL_XS), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_migrate_to_xstream(t, freed_xstream()), COEXEC_EHANDLE);
    coexec_tasklet_t k;
    CH_ASSERT_OK_FATAL(coexec_tasklet_create(q, noop_tasklet, NULL, &k));
    CH_ASSERT_RC(coexec_thread_migrate_to(as_thread(k), b.pool), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_migrate_to_xstream(as_thread(k), b.xs), COEXEC_EHANDLE);
    CH_ASSERT_EQ(size_of(q), 2);

    /* Pinned. */
    CH_ASSERT_OK(coexec_unit_set_pinned(coexec_thread_unit(t), 1));
    CH_ASSERT_RC(coexec_thread_migrate_to(t, b.pool), COEXEC_EPERM);
    CH_ASSERT_RC(coexec_thread_migrate_to_xstream(t, b.xs), COEXEC_EPERM);
    CH_ASSERT_EQ(size_of(q), 2);
    CH_ASSERT_OK(coexec_unit_set_pinned(coexec_thread_unit(t), 0));
    CH_ASSERT_OK(coexec_thread_migrate_to(t, b.pool));
    /* (A join of a unit that never started would run it in place.) */
    CH_WAIT(atomic_load(&r1) != -1);
    CH_ASSERT_OK(coexec_thread_join(t));
    CH_ASSERT_EQ(atomic_load(&r1), b.rank);

    /* Terminated (joined, not freed). */
    CH_ASSERT_RC(coexec_thread_migrate_to(t, b.pool), COEXEC_ESTATE);
    CH_ASSERT_RC(coexec_thread_migrate_to_xstream(t, b.xs), COEXEC_ESTATE);
    CH_ASSERT_OK(coexec_thread_free(&t));

    /* A joined stream. */
    coexec_xstream_t dx;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(NULL, &dx));
    CH_ASSERT_OK(coexec_xstream_join(dx));
    mig_t m = {0};
    CH_ASSERT_OK_FATAL(coexec_thread_create(q, rank_ult, &r2, NULL, &m.t));
    CH_ASSERT_RC(coexec_thread_migrate_to_xstream(m.t, dx), COEXEC_ESTATE);
    CH_ASSERT_OK(coexec_xstream_free(&dx));
    CH_ASSERT_EQ(size_of(q), 2);

    /* From an external thread, a tasklet and a ULT: allowed. */
    m.pool = b.pool;
    ch_run_external(migrate_to_pool, &m);
    CH_WAIT(atomic_load(&r2) != -1);
    CH_ASSERT_OK(coexec_thread_free(&m.t));
    CH_ASSERT_EQ(atomic_load(&r2), b.rank);
    CH_ASSERT_OK_FATAL(coexec_thread_create(q, rank_ult, &r3, NULL, &m.t));
    m.xs = b.xs;
    CH_ASSERT_OK(ch_run_tasklet_in(main_pool(), migrate_to_xs, &m));
    CH_WAIT(atomic_load(&r3) != -1);
    CH_ASSERT_OK(coexec_thread_free(&m.t));
    CH_ASSERT_EQ(atomic_load(&r3), b.rank);
    CH_ASSERT_OK_FATAL(coexec_thread_create(q, rank_ult, &r4, NULL, &m.t));
    CH_ASSERT_OK(ch_run_ult_in(main_pool(), migrate_to_pool, &m));
    CH_WAIT(atomic_load(&r4) != -1);
    CH_ASSERT_OK(coexec_thread_free(&m.t));
    CH_ASSERT_EQ(atomic_load(&r4), b.rank);

    CH_ASSERT_EQ(size_of(q), 1); /* the tasklet */
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_OK(coexec_pool_free(&q));
    CH_ASSERT_OK(ch_stream_free(&b));
    STILL_WORKS();
    ch_finalize();
}

/* ======================================================================= */
/* yield_to                                                                 */
/* ======================================================================= */

typedef struct spin {
    atomic_int started, release, phase;
} spin_t;

static void spinner(void *arg)
{
    spin_t *s = arg;
    atomic_store(&s->started, 1);
    while (!atomic_load(&s->release))
        sched_yield(); /* keeps its stream, never yields as a ULT */
}

static void suspender(void *arg)
{
    spin_t *s = arg;
    atomic_store(&s->phase, 1);
    CH_CHECK_RC(coexec_self_suspend(), COEXEC_OK);
    atomic_store(&s->phase, 2);
}

static coexec_thread_t g_yt_target, g_main_ult;

static void yield_to_ctx(void *arg)
{
    CH_CHECK_RC(coexec_yield_to(g_yt_target), COEXEC_ECONTEXT);
}

/* On the primary the main ULT is no ready unit (ESTATE); elsewhere it is
 * bound to another stream (EPERM). */
static void yield_to_main(void *arg)
{
    (void)arg;
    int rank = -1;
    CH_CHECK_RC(coexec_xstream_self_rank(&rank), COEXEC_OK);
    CH_CHECK_RC(coexec_yield_to(g_main_ult),
                rank == 0 ? COEXEC_ESTATE : COEXEC_EPERM);
}

static coexec_unit_state_t state_of(coexec_thread_t t)
{
    coexec_unit_state_t st = COEXEC_UNIT_READY;
    CH_CHECK_RC(coexec_thread_get_state(t, &st), COEXEC_OK);
    return st;
}

/* Moves a never-started unit queued in p (nobody serves p) to the main
 * pool. */
static void move_to_main(coexec_pool_t p)
{
    coexec_unit_t u;
    CH_ASSERT_OK(coexec_pool_pop(p, &u));
    CU_ASSERT_FATAL(!CH_IS_NULL(u));
    CH_ASSERT_OK(coexec_pool_push(main_pool(), u));
}

static void t_yield_to_errors(void)
{
    ch_init(1);
    ch_stream_t b;
    CH_ASSERT_OK_FATAL(ch_stream_create(&b, COEXEC_SCHED_BASIC_WAIT));
    coexec_pool_t q;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &q));
    atomic_int ran = 0;

    CH_ASSERT_RC(coexec_yield_to(NULL_THREAD), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_yield_to(freed_thread()), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_yield_to(self_thread()), COEXEC_EDEADLK);
    coexec_tasklet_t k;
    CH_ASSERT_OK_FATAL(coexec_tasklet_create(q, noop_tasklet, &ran, &k));
    CH_ASSERT_RC(coexec_yield_to(as_thread(k)), COEXEC_EHANDLE);
    coexec_thread_t done = terminated_thread();
    CH_ASSERT_RC(coexec_yield_to(done), COEXEC_ESTATE);

    /* Running on another stream. */
    spin_t sp = {0};
    coexec_thread_t run;
    CH_ASSERT_OK_FATAL(coexec_thread_create(b.pool, spinner, &sp, NULL, &run));
    CH_WAIT(atomic_load(&sp.started));
    CH_ASSERT_RC(coexec_yield_to(run), COEXEC_ESTATE);
    atomic_store(&sp.release, 1);
    CH_ASSERT_OK(coexec_thread_free(&run));

    /* Parked. */
    spin_t su = {0};
    coexec_thread_t parked;
    CH_ASSERT_OK_FATAL(coexec_thread_create(b.pool, suspender, &su, NULL, &parked));
    CH_WAIT(state_of(parked) == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_RC(coexec_yield_to(parked), COEXEC_ESTATE);
    CH_ASSERT_EQ(atomic_load(&su.phase), 1);
    CH_ASSERT_OK(coexec_thread_resume(parked));
    CH_ASSERT_OK(coexec_thread_free(&parked));
    CH_ASSERT_EQ(atomic_load(&su.phase), 2);

    /* Queued in pools that cannot give one unit up (PRIO, DEQUE). */
    coexec_pool_t pp, dq;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_PRIO, COEXEC_ACCESS_MPMC, &pp));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_DEQUE, COEXEC_ACCESS_MPMC, &dq));
    coexec_thread_t tp, td;
    CH_ASSERT_OK_FATAL(coexec_thread_create(pp, noop_ult, &ran, NULL, &tp));
    CH_ASSERT_OK_FATAL(coexec_thread_create(dq, noop_ult, &ran, NULL, &td));
    CH_ASSERT_RC(coexec_yield_to(tp), COEXEC_ESTATE);
    CH_ASSERT_RC(coexec_yield_to(td), COEXEC_ESTATE);
    CH_ASSERT_EQ(size_of(pp), 1);
    CH_ASSERT_EQ(size_of(dq), 1);
    move_to_main(pp);
    move_to_main(dq);
    CH_ASSERT_OK(coexec_thread_free(&tp));
    CH_ASSERT_OK(coexec_thread_free(&td));
    CH_ASSERT_EQ(atomic_load(&ran), 2);

    /* From a tasklet, an external thread; to the main ULT from a ULT. */
    coexec_thread_t t;
    CH_ASSERT_OK_FATAL(coexec_thread_create(q, noop_ult, &ran, NULL, &t));
    g_yt_target = t;
    CH_ASSERT_OK(ch_run_tasklet_in(main_pool(), yield_to_ctx, NULL));
    ch_run_external(yield_to_ctx, NULL);
    g_main_ult = self_thread();
    CH_ASSERT_OK(ch_run_ult_in(main_pool(), yield_to_main, NULL));
    CH_ASSERT_OK(ch_run_ult_in(b.pool, yield_to_main, NULL));
    CH_ASSERT_EQ(size_of(q), 2);
    CH_ASSERT_EQ(atomic_load(&ran), 2);

    /* After all that, a good yield_to runs t before we resume. */
    CH_ASSERT_OK(coexec_yield_to(t));
    CH_ASSERT_EQ(atomic_load(&ran), 3);
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_OK(coexec_thread_free(&done));
    CH_ASSERT_OK(coexec_pool_free(&q));
    CH_ASSERT_OK(coexec_pool_free(&pp));
    CH_ASSERT_OK(coexec_pool_free(&dq));
    CH_ASSERT_OK(ch_stream_free(&b));
    STILL_WORKS();
    ch_finalize();
}

/* ======================================================================= */
/* child_first                                                              */
/* ======================================================================= */

static void cf_ctx(void *arg)
{
    coexec_pool_t p = *(coexec_pool_t *)arg;
    coexec_thread_t t = {0};
    CH_CHECK_RC(coexec_thread_create_child_first(p, noop_ult, NULL, NULL, &t), COEXEC_ECONTEXT);
    CH_CHECK(CH_IS_NULL(t));
}

static void cf_ctx_job(coexec_sched_t self, void *arg)
{
    cf_ctx(arg);
}

typedef struct cf {
    coexec_pool_t pool, dead;
    priv_pool_t *priv;
    atomic_int ran;
    int child_before_parent;
} cf_t;

static void cf_ult(void *arg)
{
    cf_t *c = arg;
    coexec_thread_t t = {0};
    coexec_thread_attr_t a;
    CH_CHECK_RC(coexec_thread_create_child_first(c->pool, NULL, NULL, NULL, &t), COEXEC_EINVAL);
    CH_CHECK_RC(coexec_thread_create_child_first(NULL_POOL, noop_ult, NULL, NULL, &t), COEXEC_EHANDLE);
    CH_CHECK_RC(coexec_thread_create_child_first(c->dead, noop_ult, NULL, NULL, &t), COEXEC_EHANDLE);
    CH_CHECK_RC(coexec_thread_attr_init(&a), COEXEC_OK);
    a.stack_size = 1;
    CH_CHECK_RC(coexec_thread_create_child_first(c->pool, noop_ult, NULL, &a, &t), COEXEC_EINVAL);
    static char stack[64 * 1024] __attribute__((aligned(16)));
    CH_CHECK_RC(coexec_thread_attr_init(&a), COEXEC_OK);
    a.stack = stack + 8;
    a.stack_size = sizeof stack - 64;
    CH_CHECK_RC(coexec_thread_create_child_first(c->pool, noop_ult, NULL, &a, &t), COEXEC_EINVAL);
    if (c->priv)
        CH_CHECK_RC(coexec_thread_create_child_first(c->priv->pool, noop_ult, NULL, NULL, &t),
                    COEXEC_EACCESS);
    CH_CHECK(CH_IS_NULL(t));
    CH_CHECK_EQ(atomic_load(&c->ran), 0);
    /* The right call runs the child before we come back. */
    CH_CHECK_RC(coexec_thread_create_child_first(c->pool, noop_ult, &c->ran, NULL, &t), COEXEC_OK);
    c->child_before_parent = atomic_load(&c->ran) == 1;
    CH_CHECK_RC(coexec_thread_free(&t), COEXEC_OK);
}

static void t_cf_errors(void)
{
    ch_init(1);
    ch_stream_t b;
    CH_ASSERT_OK_FATAL(ch_stream_create(&b, COEXEC_SCHED_BASIC_WAIT));
    job_stream_t js;
    job_stream_start(&js);
    coexec_pool_t p = b.pool;
    /* Tasklets, external threads, loops are not ULTs. The main ULT, bound
     * to the primary, may create child first (into another stream's pool
     * too: the child runs here first). */
    coexec_thread_t mc = {0};
    CH_ASSERT_OK(coexec_thread_create_child_first(p, noop_ult, NULL, NULL, &mc));
    CH_ASSERT_OK(coexec_thread_free(&mc));
    CH_ASSERT_OK(ch_run_tasklet_in(b.pool, cf_ctx, &p));
    ch_run_external(cf_ctx, &p);
    job_stream_run(&js, cf_ctx_job, &p);
    CH_ASSERT_EQ(size_of(b.pool), 0);

    priv_pool_t pp;
    cf_t c = {.pool = b.pool, .dead = freed_pool()};
    if (CH_HAVE_CHECKS) {
        priv_pool_make(&pp);
        c.priv = &pp;
    }
    CH_ASSERT_OK(ch_run_ult_in(b.pool, cf_ult, &c));
    CH_ASSERT_EQ(atomic_load(&c.ran), 1);
    CU_ASSERT(c.child_before_parent);
    if (c.priv)
        priv_pool_done(&pp);
    job_stream_stop(&js);
    CH_ASSERT_OK(ch_stream_free(&b));
    STILL_WORKS();
    ch_finalize();
}

/* ======================================================================= */
/* unit attributes                                                          */
/* ======================================================================= */

static void t_unit_args(void)
{
    ch_init(1);
    int x = 0;
    coexec_pool_t q;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &q));
    coexec_thread_t t;
    coexec_tasklet_t k;
    CH_ASSERT_OK_FATAL(coexec_thread_create(q, noop_ult, NULL, NULL, &t));
    CH_ASSERT_OK_FATAL(coexec_tasklet_create(q, noop_tasklet, &x, &k));
    coexec_unit_t ut = coexec_thread_unit(t), uk = coexec_tasklet_unit(k);
    const coexec_unit_t bad[] = {NULL_UNIT, coexec_thread_unit(freed_thread()),
                                 {ut.p, ut.gen + 1}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int v;
        void *a;
        CH_ASSERT_RC(coexec_unit_set_pinned(bad[i], 1), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_unit_get_pinned(bad[i], &v), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_unit_set_priority(bad[i], 1), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_unit_get_priority(bad[i], &v), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_unit_get_arg(bad[i], &a), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_unit_is_thread(bad[i], &v), COEXEC_EHANDLE);
        coexec_sched_t bs;
        CH_ASSERT_RC(coexec_unit_get_sched(bad[i], &bs), COEXEC_EHANDLE);
    }
    coexec_sched_t us;
    CH_ASSERT_RC(coexec_unit_get_sched(ut, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_unit_get_sched(ut, &us), COEXEC_ENOENT);
    CH_ASSERT_RC(coexec_unit_get_sched(uk, &us), COEXEC_ENOENT);
    CH_ASSERT_RC(coexec_unit_get_pinned(ut, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_unit_get_priority(ut, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_unit_get_arg(ut, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_unit_is_thread(ut, NULL), COEXEC_EINVAL);
    const int bad_prio[] = {-1, 65536, INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof bad_prio / sizeof bad_prio[0]; i++)
        CH_ASSERT_RC(coexec_unit_set_priority(ut, bad_prio[i]), COEXEC_EINVAL);
    int v = -1;
    CH_ASSERT_OK(coexec_unit_get_priority(ut, &v));
    CH_ASSERT_EQ(v, 0); /* unchanged */
    CH_ASSERT_OK(coexec_unit_set_priority(ut, 65535));
    CH_ASSERT_OK(coexec_unit_get_priority(ut, &v));
    CH_ASSERT_EQ(v, 65535);
    CH_ASSERT_OK(coexec_unit_set_priority(uk, 0));
    /* Pinned: any non-zero value pins. */
    CH_ASSERT_OK(coexec_unit_set_pinned(ut, 7));
    CH_ASSERT_OK(coexec_unit_get_pinned(ut, &v));
    CH_ASSERT_EQ(v, 1);
    CH_ASSERT_OK(coexec_unit_set_pinned(ut, 0));
    CH_ASSERT_OK(coexec_unit_get_pinned(ut, &v));
    CH_ASSERT_EQ(v, 0);
    /* Arg and kind, also of the main ULT. */
    void *a = &v;
    CH_ASSERT_OK(coexec_unit_get_arg(ut, &a));
    CU_ASSERT(a == NULL);
    CH_ASSERT_OK(coexec_unit_get_arg(uk, &a));
    CU_ASSERT(a == &x);
    CH_ASSERT_OK(coexec_unit_is_thread(ut, &v));
    CH_ASSERT_EQ(v, 1);
    CH_ASSERT_OK(coexec_unit_is_thread(uk, &v));
    CH_ASSERT_EQ(v, 0);
    coexec_unit_t um = coexec_thread_unit(self_thread());
    a = &v;
    CH_ASSERT_OK(coexec_unit_get_arg(um, &a));
    CU_ASSERT(a == NULL);
    CH_ASSERT_OK(coexec_unit_is_thread(um, &v));
    CH_ASSERT_EQ(v, 1);
    /* A stacked scheduler's unit names its scheduler and has no argument. */
    coexec_pool_t q2, sp;
    coexec_sched_t s;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &q2));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &sp));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, &sp, 1, NULL, &s));
    CH_ASSERT_OK_FATAL(coexec_pool_add_sched(q2, s));
    coexec_unit_t su;
    CH_ASSERT_OK(coexec_pool_pop(q2, &su));
    CU_ASSERT_FATAL(!CH_IS_NULL(su));
    CH_ASSERT_OK(coexec_unit_get_sched(su, &us));
    CU_ASSERT(us.p == s.p && us.gen == s.gen);
    a = &v;
    CH_ASSERT_OK(coexec_unit_get_arg(su, &a));
    CU_ASSERT(a == NULL);
    CH_ASSERT_OK(coexec_unit_is_thread(su, &v));
    CH_ASSERT_EQ(v, 1);
    CH_ASSERT_RC(coexec_unit_get_sched(um, &us), COEXEC_ENOENT);
    CH_ASSERT_OK(coexec_sched_finish(s));
    CH_ASSERT_OK(coexec_pool_push(main_pool(), su));
    free_when_finished(&s);
    CH_ASSERT_OK(coexec_pool_free(&q2));
    CH_ASSERT_OK(coexec_pool_free(&sp));
    /* A finished unit keeps its handle until freed. */
    move_to_main(q);
    move_to_main(q);
    CH_ASSERT_OK(coexec_thread_join(t));
    CH_ASSERT_OK(coexec_tasklet_join(k));
    CH_ASSERT_OK(coexec_unit_get_arg(uk, &a));
    CU_ASSERT(a == &x);
    CH_ASSERT_EQ(x, 1);
    CH_ASSERT_OK(coexec_unit_is_thread(ut, &v));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_RC(coexec_unit_get_arg(uk, &a), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_pool_free(&q));
    STILL_WORKS();
    ch_finalize();
}

/* Every call before coexec_init, and with handles of an earlier runtime. */
static void all_calls(coexec_pool_t p, coexec_sched_t s, coexec_thread_t t,
                      coexec_xstream_t xs, int want, bool creates)
{
    coexec_pool_t out = {0};
    coexec_sched_t so = {0};
    coexec_unit_t u = coexec_thread_unit(t);
    coexec_unit_t uo;
    size_t n;
    void *d;
    int v;
    coexec_pool_config_t pc;
    CH_ASSERT_OK(coexec_pool_config_init(&pc)); /* any time */
    if (creates) {
        CH_ASSERT_RC(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &out), want);
        CH_ASSERT_RC(coexec_pool_create_ex(COEXEC_POOL_PRIO, COEXEC_ACCESS_MPMC, &pc, &out), want);
        CH_ASSERT_RC(coexec_pool_create_user(&up_ops, COEXEC_ACCESS_MPMC, NULL, &out), want);
        CU_ASSERT(CH_IS_NULL(out));
    }
    CH_ASSERT_RC(coexec_pool_get_data(p, &d), want);
    CH_ASSERT_RC(coexec_pool_get_size(p, &n), want);
    CH_ASSERT_RC(coexec_pool_get_info(p, NULL, NULL), want);
    CH_ASSERT_RC(coexec_pool_push(p, u), want);
    CH_ASSERT_RC(coexec_pool_pop(p, &uo), want);
    CH_ASSERT_RC(coexec_pool_steal(p, &uo), want);
    CH_ASSERT_RC(coexec_pool_add_sched(p, s), want);
    coexec_pool_t pf = p;
    CH_ASSERT_RC(coexec_pool_free(&pf), want);
    /* Before init: ENOTINIT; later: the old pool is refused. */
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, &p, 1, NULL, &so), want);
    coexec_sched_ops_t o = {.size = sizeof o, .run = dummy_run};
    CH_ASSERT_RC(coexec_sched_create_user(&o, &p, 1, NULL, NULL, &so), want);
    CU_ASSERT(CH_IS_NULL(so));
    CH_ASSERT_RC(coexec_sched_get_data(s, &d), want);
    CH_ASSERT_RC(coexec_sched_pop(s, 0, &uo), want);
    CH_ASSERT_RC(coexec_sched_run_unit(s, u), want);
    CH_ASSERT_RC(coexec_sched_check_events(s), want);
    CH_ASSERT_RC(coexec_sched_has_to_stop(s, &v), want);
    CH_ASSERT_RC(coexec_sched_idle(s), want);
    CH_ASSERT_RC(coexec_sched_finish(s), want);
    coexec_sched_t sf = s;
    CH_ASSERT_RC(coexec_sched_free(&sf), want);
    CH_ASSERT_RC(coexec_xstream_set_main_sched(xs, s), want);
    CH_ASSERT_RC(coexec_thread_migrate_to(t, p), want);
    CH_ASSERT_RC(coexec_thread_migrate_to_xstream(t, xs), want);
    CH_ASSERT_RC(coexec_unit_set_pinned(u, 1), want);
    CH_ASSERT_RC(coexec_unit_set_priority(u, 1), want);
    CH_ASSERT_RC(coexec_unit_get_arg(u, &d), want);
    CH_ASSERT_RC(coexec_unit_is_thread(u, &v), want);
}

static void t_not_init_and_old_epoch(void)
{
    coexec_sched_t s0 = {0};
    CH_ASSERT_RC(coexec_sched_self(&s0), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_yield_to(NULL_THREAD), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_create_child_first(NULL_POOL, noop_ult, NULL, NULL, NULL),
                 COEXEC_ENOTINIT);
    all_calls(NULL_POOL, NULL_SCHED, NULL_THREAD, NULL_XS, COEXEC_ENOTINIT, true);

    /* Handles of a finalized runtime are refused by the next one. */
    ch_init(2);
    coexec_pool_t p;
    coexec_sched_t s;
    coexec_thread_t t;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, &p, 1, NULL, &s));
    CH_ASSERT_OK_FATAL(coexec_thread_create(main_pool(), noop_ult, NULL, NULL, &t));
    CH_ASSERT_OK_FATAL(coexec_thread_join(t));
    coexec_xstream_t xs = xs_of_rank(1);
    /* Finalize reclaims what the user left behind, and says so. */
    char buf[4096];
    ch_stderr_begin();
    int rc = coexec_finalize();
    ch_stderr_end(buf, sizeof buf);
    CH_ASSERT_OK(rc);
    CH_ASSERT_EQ(ch_count_lines(buf, "never freed"), 1);
    ch_init(2);
    CH_ASSERT_RC(coexec_yield_to(t), COEXEC_EHANDLE);
    all_calls(p, s, t, xs, COEXEC_EHANDLE, false);
    STILL_WORKS();
    ch_finalize();
}

/* ======================================================================= */
/* ownership and state rules once broken: each test failed before its fix   */
/* ======================================================================= */


/*
 * coexec_sched_finish is for stacked schedulers: on one that is not stacked
 * it is refused, and leaves nothing behind that would end the scheduler's
 * next stacking before the units pushed later have run.
 */
static void t_finish_unstacked(void)
{
    ch_init(2);
    coexec_pool_t p2;
    coexec_sched_t s;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p2));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &p2, 1, NULL, &s));
    CH_ASSERT_RC(coexec_sched_finish(s), COEXEC_ESTATE);
    atomic_int ran = 0;
    coexec_thread_t t;
    CH_ASSERT_OK_FATAL(coexec_thread_create(p2, noop_ult, &ran, NULL, &t));
    CH_ASSERT_OK(coexec_pool_add_sched(main_pool(), s));
    CH_WAIT(atomic_load(&ran) == 1);
    /* s must still be stacked and serve p2. */
    CH_ASSERT_OK(ch_run_ult_in(p2, noop_ult, &ran));
    CH_ASSERT_EQ(atomic_load(&ran), 2);
    coexec_sched_t h = s;
    CH_ASSERT_RC(coexec_sched_free(&h), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_sched_finish(s));
    free_when_finished(&s);
    CH_ASSERT_OK(coexec_pool_free(&p2));
    ch_finalize();
}

/*
 * A PRIV pool that a running stream's scheduler pops from belongs to that
 * stream's thread: a push from another thread is refused (checks builds),
 * not written into the unlocked list while the owner pops from it.
 */
static void t_priv_foreign_push(void)
{
    if (!CH_HAVE_CHECKS)
        return;
    ch_init(1);
    ch_stream_t b;
    CH_ASSERT_OK_FATAL(ch_stream_create_ex(&b, COEXEC_SCHED_BASIC_WAIT,
                                           COEXEC_POOL_FIFO, COEXEC_ACCESS_PRIV));
    /* The pool is the stream's once its scheduler runs there. */
    coexec_xstream_state_t st = COEXEC_XSTREAM_CREATED;
    CH_WAIT(coexec_xstream_get_state(b.xs, &st) == COEXEC_OK &&
            st == COEXEC_XSTREAM_RUNNING);
    atomic_int ran = 0;
    coexec_thread_t t;
    int rc = coexec_thread_create(b.pool, noop_ult, &ran, NULL, &t);
    CH_ASSERT_RC(rc, COEXEC_EACCESS);
    if (rc == COEXEC_OK)
        CH_ASSERT_OK(coexec_thread_free(&t));
    coexec_pool_t q;
    coexec_sched_t s;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &q));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &q, 1, NULL, &s));
    rc = coexec_pool_add_sched(b.pool, s);
    CH_ASSERT_RC(rc, COEXEC_EACCESS);
    if (rc == COEXEC_OK) {
        CH_ASSERT_OK(coexec_sched_finish(s));
        free_when_finished(&s);
    } else {
        CH_ASSERT_OK(coexec_sched_free(&s));
    }
    CH_ASSERT_OK(coexec_pool_free(&q));
    CH_ASSERT_OK(ch_stream_free(&b));
    ch_finalize();
}

/*
 * Reading a stream's main scheduler from another thread while the stream
 * replaces it (TSan reports a race if the field is read plainly).
 */
static void t_get_main_sched_during_replacement(void)
{
    ch_init(1);
    coexec_xstream_t b;
    CH_ASSERT_OK_FATAL(coexec_xstream_create(NULL, &b));
    coexec_pool_t pn;
    coexec_sched_t s;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pn));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &pn, 1, NULL, &s));
    CH_ASSERT_OK(coexec_xstream_set_main_sched(b, s));
    CH_WAIT(CH_SAME(main_sched_of(b), s));
    CH_ASSERT_OK(coexec_xstream_free(&b));
    CH_ASSERT_OK(coexec_sched_free(&s));
    CH_ASSERT_OK(coexec_pool_free(&pn));
    ch_finalize();
}


/* ======================================================================= */

static const ch_test_t pool_tests[] = {
    {"create_args", t_pool_create_args},
    {"create_user_args", t_pool_create_user_args},
    {"bad_handles", t_pool_handles},
    {"free_busy", t_pool_free_busy},
    {"push_wrong_state", t_pool_push_state},
    {"access_modes", t_pool_access},
    {"priv_pool_of_a_stream_pushed_from_elsewhere", t_priv_foreign_push},
    {NULL, NULL}};
static const ch_test_t sched_tests[] = {
    {"create_args", t_sched_create_args},
    {"bad_handles", t_sched_handles},
    {"loop_calls_outside_the_loop", t_sched_wrong_context},
    {"misuse_inside_a_loop", t_sched_in_loop},
    {NULL, NULL}};
static const ch_test_t stacked_tests[] = {
    {"busy", t_stacked_busy},
    {"cycles", t_stacked_cycle},
    {"finish_of_unstacked_sched", t_finish_unstacked},
    {NULL, NULL}};
/* The primary's main ULT runs only on the primary. A ULT of the primary
 * gives it a scheduler that does not pop the main ULT's home (and does not
 * steal) while the main ULT joins that ULT; the main ULT then yields with
 * another unit to run, and switches back itself: it keeps running under
 * both (the switch re-homes it to a pool the new scheduler pops). */
static coexec_pool_t g_rehome_pool;
static coexec_sched_t g_rehome_sched;

static void switch_primary_away(void *arg)
{
    (void)arg;
    coexec_thread_t me;
    CH_CHECK_RC(coexec_thread_self(&me), COEXEC_OK);
    /* Its own home goes first: it waits for the switch, then runs under
     * the new scheduler. */
    CH_CHECK_RC(coexec_thread_set_home(me, g_rehome_pool), COEXEC_OK);
    CH_CHECK_RC(coexec_xstream_set_main_sched(xs_of_rank(0), g_rehome_sched),
                COEXEC_OK);
}

static void t_main_ult_rehomed(void)
{
    ch_init(1);
    coexec_sched_t s0 = main_sched_of(xs_of_rank(0));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC,
                                          &g_rehome_pool));
    /* No stealing: nothing but the switch may bring the main ULT back. */
    coexec_sched_config_t cfg;
    CH_ASSERT_OK_FATAL(coexec_sched_config_init(&cfg));
    cfg.steal = 0;
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT,
                                           &g_rehome_pool, 1, &cfg,
                                           &g_rehome_sched));
    for (int round = 0; round < 3; round++) {
        coexec_thread_t t;
        CH_ASSERT_OK(coexec_thread_create(main_pool(), switch_primary_away,
                                          NULL, NULL, &t));
        CH_ASSERT_OK(coexec_thread_join(t));
        CH_ASSERT_OK(coexec_thread_free(&t));
        /* With another unit to run, the yield queues the main ULT in its
         * home, from where it must come back. */
        atomic_int ran = 0;
        CH_ASSERT_OK(coexec_thread_create(g_rehome_pool, noop_ult, &ran, NULL,
                                          &t));
        CH_ASSERT_OK(coexec_yield());
        CH_ASSERT_OK(coexec_thread_free(&t));
        CH_ASSERT_EQ(atomic_load(&ran), 1);
        CU_ASSERT(CH_SAME(main_sched_of(xs_of_rank(0)), g_rehome_sched));
        CH_ASSERT_OK(coexec_xstream_set_main_sched(xs_of_rank(0), s0));
        CH_ASSERT_OK(coexec_yield());
        CU_ASSERT(CH_SAME(main_sched_of(xs_of_rank(0)), s0));
    }
    CH_ASSERT_OK(coexec_sched_free(&g_rehome_sched));
    CH_ASSERT_OK(coexec_pool_free(&g_rehome_pool));
    ch_finalize();
}

static const ch_test_t replace_tests[] = {
    {"errors", t_replace_errors},
    {"main_ult_rehomed", t_main_ult_rehomed},
    {"get_main_sched_during_replacement", t_get_main_sched_during_replacement},
    {NULL, NULL}};
static const ch_test_t migrate_tests[] = {
    {"errors", t_migrate_errors},
    {NULL, NULL}};
static const ch_test_t yield_to_tests[] = {
    {"errors", t_yield_to_errors},
    {NULL, NULL}};
static const ch_test_t child_first_tests[] = {
    {"errors", t_cf_errors},
    {NULL, NULL}};
static const ch_test_t unit_tests[] = {
    {"attributes", t_unit_args},
    {"not_initialized_and_old_epoch", t_not_init_and_old_epoch},
    {NULL, NULL}};

static const ch_suite_t suites[] = {
    {"pool", pool_tests},
    {"sched", sched_tests},
    {"stacked", stacked_tests},
    {"replace", replace_tests},
    {"migrate", migrate_tests},
    {"yield_to", yield_to_tests},
    {"child_first", child_first_tests},
    {"unit", unit_tests},
    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
