/*
 * tests/core/test_errors.c: every error code the public headers name for a
 * call, produced by a case that really causes it, so that the headers'
 * "Returns:" lists and the code stay the same.
 *
 * One suite per header. Each call's listed codes are produced in turn: bad
 * arguments, stale handles, calls from the wrong kind of caller (a tasklet,
 * a scheduler's own loop, an external thread), objects in the wrong state,
 * and COEXEC_ENOTINIT before init (suite "notinit").
 *
 * Codes left to tests/faultinj (only a failing allocation produces them):
 * COEXEC_ENOMEM of coexec_init, xstream_create, xstream_post,
 * pool_create[_ex,_user], pool_add_sched, sched_create[_user],
 * thread_create[_on], tasklet_create[_on], create_child_first, yield_to and
 * join/free (a stack that cannot be mapped), key_set, eventual_init,
 * future_init, channel_init, sleep and the timed waits (a timer heap that
 * cannot grow); COEXEC_EAGAIN of coexec_init (no thread). COEXEC_EACCESS
 * is produced only in builds with COEXEC_CHECKS (the Debug default).
 */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define E(expr, want) CH_CHECK_RC((expr), (want))

/* ---- callers of every kind ---------------------------------------------- */

static coexec_pool_t main_pool(void)
{
    coexec_xstream_t x0;
    coexec_pool_t p = {0};
    CH_CHECK_RC(coexec_xstream_by_rank(0, &x0), COEXEC_OK);
    CH_CHECK_RC(coexec_xstream_get_main_pool(x0, &p), COEXEC_OK);
    return p;
}

static coexec_xstream_t primary(void)
{
    coexec_xstream_t x0 = {0};
    CH_CHECK_RC(coexec_xstream_by_rank(0, &x0), COEXEC_OK);
    return x0;
}

/* fn(arg) in a tasklet of the primary's pool. */
static void in_tasklet(void (*fn)(void *), void *arg)
{
    CH_CHECK_RC(ch_run_tasklet_in(main_pool(), fn, arg), COEXEC_OK);
}

/* fn(arg) in a ULT of the primary's pool (not run in place by a join). */
static void in_ult(void (*fn)(void *), void *arg)
{
    CH_CHECK_RC(ch_run_ult_in(main_pool(), fn, arg), COEXEC_OK);
}

struct pt_call {
    void (*fn)(void *);
    void *arg;
};
static void *pt_body(void *a)
{
    struct pt_call *c = a;
    c->fn(c->arg);
    return NULL;
}
/* fn(arg) on an external thread. */
static void in_pthread(void (*fn)(void *), void *arg)
{
    struct pt_call c = {fn, arg};
    ch_pthread_t th;
    ch_pthread_start(&th, pt_body, &c);
    ch_pthread_join(&th);
}

/* fn(arg) in a scheduler's own loop: the run function of a user scheduler,
 * the main scheduler of a stream made for the call. g_loop_sched is that
 * scheduler while fn runs. */
static coexec_sched_t g_loop_sched;
struct loop {
    void (*fn)(void *);
    void *arg;
    coexec_pool_t p;
    coexec_sched_t s;
    coexec_xstream_t xs;
    atomic_int done;
};
static int loop_init(coexec_sched_t s, void *arg, void **state)
{
    (void)s;
    *state = arg;
    return COEXEC_OK;
}
static void loop_run(coexec_sched_t s, void *state)
{
    struct loop *l = state;
    g_loop_sched = s;
    l->fn(l->arg);
    atomic_store(&l->done, 1);
    for (;;) {
        coexec_unit_t u;
        int stop = 0;
        CH_CHECK_RC(coexec_sched_pop(s, 0, &u), COEXEC_OK);
        if (u.p) {
            CH_CHECK_RC(coexec_sched_run_unit(s, u), COEXEC_OK);
            continue;
        }
        CH_CHECK_RC(coexec_sched_has_to_stop(s, &stop), COEXEC_OK);
        if (stop)
            break;
        CH_CHECK_RC(coexec_sched_idle(s), COEXEC_OK);
    }
}
static void loop_start(struct loop *l, void (*fn)(void *), void *arg)
{
    coexec_sched_ops_t ops = {.size = sizeof ops, .init = loop_init,
                              .run = loop_run};
    coexec_xstream_attr_t a;
    l->fn = fn;
    l->arg = arg;
    atomic_init(&l->done, 0);
    CH_CHECK_RC(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &l->p),
                COEXEC_OK);
    CH_CHECK_RC(coexec_sched_create_user(&ops, &l->p, 1, NULL, l, &l->s),
                COEXEC_OK);
    CH_CHECK_RC(coexec_xstream_attr_init(&a), COEXEC_OK);
    a.sched = l->s;
    CH_CHECK_RC(coexec_xstream_create(&a, &l->xs), COEXEC_OK);
    CH_WAIT(atomic_load(&l->done));
}
static void loop_stop(struct loop *l)
{
    CH_CHECK_RC(coexec_xstream_free(&l->xs), COEXEC_OK);
    CH_CHECK_RC(coexec_sched_free(&l->s), COEXEC_OK);
    CH_CHECK_RC(coexec_pool_free(&l->p), COEXEC_OK);
}
static void in_sched_loop(void (*fn)(void *), void *arg)
{
    struct loop l;
    loop_start(&l, fn, arg);
    loop_stop(&l);
}

static void noop_ult(void *arg)
{
    (void)arg;
}
static coexec_poll_status_t noop_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    (void)arg;
    return COEXEC_READY;
}

static void noop_data_init(void *data, void *ctx)
{
    (void)data;
    (void)ctx;
}

/* Handles of each kind whose record has been freed. */
static coexec_pool_t stale_pool(void)
{
    coexec_pool_t p, s;
    CH_CHECK_RC(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p),
                COEXEC_OK);
    s = p;
    CH_CHECK_RC(coexec_pool_free(&p), COEXEC_OK);
    return s;
}
static coexec_sched_t stale_sched(void)
{
    coexec_pool_t p;
    coexec_sched_t s, st;
    CH_CHECK_RC(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p),
                COEXEC_OK);
    CH_CHECK_RC(coexec_sched_create(COEXEC_SCHED_BASIC, &p, 1, NULL, &s),
                COEXEC_OK);
    st = s;
    CH_CHECK_RC(coexec_sched_free(&s), COEXEC_OK);
    CH_CHECK_RC(coexec_pool_free(&p), COEXEC_OK);
    return st;
}
static coexec_xstream_t stale_xstream(void)
{
    coexec_xstream_t x, s;
    CH_CHECK_RC(coexec_xstream_create(NULL, &x), COEXEC_OK);
    s = x;
    CH_CHECK_RC(coexec_xstream_free(&x), COEXEC_OK);
    return s;
}
static coexec_thread_t stale_thread(void)
{
    coexec_thread_t t, s;
    CH_CHECK_RC(coexec_thread_create(main_pool(), noop_ult, NULL, NULL, &t),
                COEXEC_OK);
    s = t;
    CH_CHECK_RC(coexec_thread_free(&t), COEXEC_OK);
    return s;
}
static coexec_tasklet_t stale_tasklet(void)
{
    coexec_tasklet_t k, s;
    CH_CHECK_RC(coexec_tasklet_create(main_pool(), noop_tasklet, NULL, &k),
                COEXEC_OK);
    s = k;
    CH_CHECK_RC(coexec_tasklet_free(&k), COEXEC_OK);
    return s;
}
static coexec_unit_t stale_unit(void)
{
    return coexec_thread_unit(stale_thread());
}
/* Made by the main ULT, for callers that cannot join (tasklets, loops). */
static coexec_thread_t g_stale_thread;

/* A stream that has been joined and not freed. */
static coexec_xstream_t joined_xstream(void)
{
    coexec_xstream_t x = {0};
    CH_CHECK_RC(coexec_xstream_create(NULL, &x), COEXEC_OK);
    CH_CHECK_RC(coexec_xstream_join(x), COEXEC_OK);
    return x;
}

/* ======================================================================= */
/* notinit: COEXEC_ENOTINIT before init (and after finalize)               */
/* ======================================================================= */

static void t_notinit(void)
{
    ch_init(1);
    coexec_xstream_t xs = primary();
    coexec_pool_t pool = main_pool();
    coexec_sched_t sched;
    CH_ASSERT_OK(coexec_xstream_get_main_sched(xs, &sched));
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_self(&t));
    coexec_tasklet_t k = {t.p, t.gen};
    coexec_unit_t u = coexec_thread_unit(t);
    coexec_key_t key;
    CH_ASSERT_OK(coexec_key_create(NULL, &key));
    coexec_waker_t w;
    CH_ASSERT_OK(coexec_self_waker(&w));
    ch_finalize();

    int i;
    size_t sz;
    void *v;
    uint64_t id;
    coexec_unit_state_t us;
    coexec_xstream_state_t xst;
    coexec_config_t cfg;
    coexec_pool_config_t pc;
    CH_ASSERT_OK(coexec_pool_config_init(&pc));
    coexec_pool_ops_t pops = {0};
    coexec_sched_ops_t sops = {0};
    coexec_service_info_t info = {.size = sizeof info};
    coexec_request_t req;
    intptr_t ret;
    CH_ASSERT_RC(coexec_finalize(), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_get_config(&cfg), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_print_config(NULL), COEXEC_ENOTINIT);
    /* xstream.h */
    CH_ASSERT_RC(coexec_xstream_create(NULL, &xs), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_join(xs), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_free(&xs), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_self(&xs), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_self_rank(&i), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_get_rank(xs, &i), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_by_rank(0, &xs), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_get_num(&i), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_get_state(xs, &xst), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_get_cpu(xs, &i), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_get_main_sched(xs, &sched), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_set_main_sched(xs, sched), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_get_main_pool(xs, &pool), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_post(xs, noop_tasklet, NULL), COEXEC_ENOTINIT);
    /* pool.h */
    CH_ASSERT_RC(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pool),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_pool_create_ex(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC,
                                       &pc, &pool),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_pool_create_user(&pops, COEXEC_ACCESS_MPMC, NULL, &pool),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_pool_get_data(pool, &v), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_pool_free(&pool), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_pool_push(pool, u), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_pool_pop(pool, &u), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_pool_steal(pool, &u), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_pool_add_sched(pool, sched), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_pool_get_size(pool, &sz), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_pool_get_info(pool, NULL, NULL), COEXEC_ENOTINIT);
    /* sched.h */
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, &pool, 1, NULL, &sched),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_sched_create_user(&sops, &pool, 1, NULL, NULL, &sched),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_sched_get_data(sched, &v), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_sched_pop(sched, 0, &u), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_sched_run_unit(sched, u), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_sched_check_events(sched), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_sched_has_to_stop(sched, &i), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_sched_idle(sched), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_sched_finish(sched), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_sched_self(&sched), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_sched_free(&sched), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_sched_get_num_pools(sched, &i), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_sched_get_pool(sched, 0, &pool), COEXEC_ENOTINIT);
    /* thread.h */
    CH_ASSERT_RC(coexec_thread_create(pool, noop_ult, NULL, NULL, &t),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_create_on(xs, noop_ult, NULL, NULL, &t),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_join(t), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_free(&t), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_self(&t), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_get_id(t, &id), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_self_id(&id), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_get_state(t, &us), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_yield(), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_exit(), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_self_suspend(), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_resume(t), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_create_child_first(pool, noop_ult, NULL, NULL, &t),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_yield_to(t), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_migrate_to(t, pool), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_migrate_to_xstream(t, xs), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_unit_set_pinned(u, 1), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_unit_get_pinned(u, &i), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_unit_set_priority(u, 1), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_unit_get_priority(u, &i), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_unit_get_arg(u, &v), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_unit_is_thread(u, &i), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_tasklet_create(pool, noop_tasklet, NULL, &k),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_tasklet_create_on(xs, noop_tasklet, NULL, &k),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_tasklet_join(k), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_tasklet_free(&k), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_tasklet_get_state(k, &us), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_unit_get_data(u, &v), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_self_get_data(&v), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_tasklet_create_init(pool, noop_tasklet, NULL,
                                            noop_data_init, NULL, &k),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_revive(pool, noop_ult, NULL, &t),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_tasklet_revive(pool, noop_tasklet, NULL, &k),
                 COEXEC_ENOTINIT);
    /* key.h, waker.h */
    CH_ASSERT_RC(coexec_key_create(NULL, &key), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_key_delete(key), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_key_set(key, &i), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_key_get(key, &v), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_self_waker(&w), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_park(), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_waker_wake(w), COEXEC_ENOTINIT);
    /* time.h: an external thread sleeps without the runtime. */
    CH_ASSERT_OK(coexec_sleep_ns(1000));
    CH_ASSERT_OK(coexec_sleep_until(coexec_now_ns()));
    /* service.h */
    CH_ASSERT_RC(coexec_offload((coexec_offload_fn_t)(void (*)(void))noop_ult,
                                NULL, &ret),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_request_submit(&req, (coexec_offload_fn_t)(void (*)(void))noop_ult,
                                       NULL),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_service_get_info(&info), COEXEC_ENOTINIT);
}

/* ======================================================================= */
/* runtime: runtime.h, error.h, version.h                                   */
/* ======================================================================= */

static void finalize_from_elsewhere(void *arg)
{
    (void)arg;
    E(coexec_finalize(), COEXEC_ECONTEXT);
}

static void t_runtime(void)
{
    CH_ASSERT_RC(coexec_config_init(NULL), COEXEC_EINVAL);
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    /* init: a bad field, a malformed variable; both leave nothing running */
    cfg.num_xstreams = 0;
    CH_ASSERT_RC(coexec_init(&cfg), COEXEC_EINVAL);
    CH_ASSERT_EQ(coexec_initialized(), 0);
    setenv("COEXEC_NUM_XSTREAMS", "two", 1);
    int rc = coexec_init(NULL);
    unsetenv("COEXEC_NUM_XSTREAMS");
    CH_ASSERT_RC(rc, COEXEC_EENV);
    CU_ASSERT(strstr(coexec_init_error(), "COEXEC_NUM_XSTREAMS") != NULL);
    CH_ASSERT_EQ(coexec_initialized(), 0);

    ch_init(2);
    CH_ASSERT_RC(coexec_init(NULL), COEXEC_EINIT);
    CH_ASSERT_RC(coexec_get_config(NULL), COEXEC_EINVAL);
    FILE *f = fopen("/dev/null", "w");
    CU_ASSERT_FATAL(f != NULL);
    CH_ASSERT_OK(coexec_print_config(f));
    fclose(f);
    /* finalize: only the primary's main ULT may call it */
    in_tasklet(finalize_from_elsewhere, NULL);
    in_ult(finalize_from_elsewhere, NULL);
    in_pthread(finalize_from_elsewhere, NULL);
    in_sched_loop(finalize_from_elsewhere, NULL);
    ch_finalize();
    CH_ASSERT_RC(coexec_finalize(), COEXEC_ENOTINIT);

    /* error.h: never fails; unknown codes have a name and a text too */
    CU_ASSERT(strcmp(coexec_err_name(12345), "UNKNOWN") == 0);
    CU_ASSERT(strcmp(coexec_strerror(12345), "unknown error") == 0);
    CU_ASSERT(strcmp(coexec_err_name(COEXEC_EDEADLK), "EDEADLK") == 0);
    CU_ASSERT(coexec_version() == COEXEC_VERSION_HEX);
}

/* ======================================================================= */
/* xstream: xstream.h                                                       */
/* ======================================================================= */

static coexec_xstream_t g_xs;

static void xs_join_here(void *arg)
{
    (void)arg;
    coexec_xstream_t me;
    E(coexec_xstream_self(&me), COEXEC_OK);
    E(coexec_xstream_join(me), COEXEC_EDEADLK);
    coexec_xstream_t copy = me;
    E(coexec_xstream_free(&copy), COEXEC_EDEADLK);
}

static void xs_from_wrong_caller(void *arg)
{
    (void)arg;
    coexec_xstream_t x = g_xs;
    E(coexec_xstream_join(x), COEXEC_ECONTEXT);
    E(coexec_xstream_free(&x), COEXEC_ECONTEXT);
}

static void xs_from_external(void *arg)
{
    (void)arg;
    coexec_xstream_t x;
    int r;
    E(coexec_xstream_self(&x), COEXEC_ECONTEXT);
    E(coexec_xstream_self_rank(&r), COEXEC_ECONTEXT);
    x = primary();
    E(coexec_xstream_join(x), COEXEC_EPERM);
    E(coexec_xstream_free(&x), COEXEC_EPERM);
}

static void t_xstream(void)
{
    ch_init(1);
    coexec_xstream_t x0 = primary(), stale = stale_xstream();
    coexec_xstream_t joined = joined_xstream();
    coexec_sched_t s0, sst = stale_sched();
    coexec_pool_t p;
    coexec_xstream_state_t st;
    int i;
    CH_ASSERT_OK(coexec_xstream_get_main_sched(x0, &s0));

    CH_ASSERT_RC(coexec_xstream_attr_init(NULL), COEXEC_EINVAL);
    /* create */
    coexec_xstream_attr_t a;
    CH_ASSERT_OK(coexec_xstream_attr_init(&a));
    CH_ASSERT_RC(coexec_xstream_create(&a, NULL), COEXEC_EINVAL);
    a.cpu = 1 << 20;
    CH_ASSERT_RC(coexec_xstream_create(&a, &g_xs), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_xstream_attr_init(&a));
    a.sched = sst;
    CH_ASSERT_RC(coexec_xstream_create(&a, &g_xs), COEXEC_EHANDLE);
    a.sched = s0;
    CH_ASSERT_RC(coexec_xstream_create(&a, &g_xs), COEXEC_EBUSY);
    /* join and free */
    CH_ASSERT_OK(coexec_xstream_create(NULL, &g_xs));
    CH_ASSERT_RC(coexec_xstream_join(stale), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_free(&stale), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_free(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_join(x0), COEXEC_EPERM);
    in_pthread(xs_from_external, NULL);
    coexec_pool_t gp;
    CH_ASSERT_OK(coexec_xstream_get_main_pool(g_xs, &gp));
    CH_ASSERT_OK(ch_run_ult_in(gp, xs_join_here, NULL));
    in_tasklet(xs_from_wrong_caller, NULL);
    in_sched_loop(xs_from_wrong_caller, NULL);
    /* queries */
    CH_ASSERT_RC(coexec_xstream_self(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_self_rank(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_get_rank(x0, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_get_rank(stale, &i), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_by_rank(0, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_by_rank(-1, &stale), COEXEC_ENOENT);
    CH_ASSERT_RC(coexec_xstream_by_rank(7, &stale), COEXEC_ENOENT);
    CH_ASSERT_RC(coexec_xstream_by_rank(1 << 20, &stale), COEXEC_ENOENT);
    CH_ASSERT_RC(coexec_xstream_get_num(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_get_state(x0, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_get_state(stale, &st), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_get_cpu(x0, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_get_cpu(stale, &i), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_get_main_sched(x0, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_get_main_sched(stale, &s0), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_get_main_sched(joined, &s0), COEXEC_ESTATE);
    CH_ASSERT_RC(coexec_xstream_get_main_pool(x0, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_get_main_pool(stale, &p), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_get_main_pool(joined, &p), COEXEC_ESTATE);
    /* set_main_sched */
    coexec_sched_t s1;
    coexec_pool_t p1;
    CH_ASSERT_OK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p1));
    CH_ASSERT_OK(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &p1, 1, NULL, &s1));
    CH_ASSERT_RC(coexec_xstream_set_main_sched(stale, s1), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_set_main_sched(g_xs, sst), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_xstream_get_main_sched(x0, &s0));
    CH_ASSERT_RC(coexec_xstream_set_main_sched(g_xs, s0), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_xstream_set_main_sched(joined, s1), COEXEC_ESTATE);
    /* ... a stacked scheduler is busy too */
    coexec_pool_t holder;
    CH_ASSERT_OK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &holder));
    CH_ASSERT_OK(coexec_pool_add_sched(holder, s1));
    CH_ASSERT_RC(coexec_xstream_set_main_sched(g_xs, s1), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_sched_finish(s1));
    coexec_unit_t su;
    CH_ASSERT_OK(coexec_pool_pop(holder, &su));
    CH_ASSERT_OK(coexec_pool_push(main_pool(), su)); /* runs, finishes */
    CH_WAIT(coexec_sched_free(&s1) == COEXEC_OK);
    CH_ASSERT_OK(coexec_pool_free(&p1));
    CH_ASSERT_OK(coexec_pool_free(&holder));
    /* post */
    CH_ASSERT_RC(coexec_xstream_post(x0, NULL, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_post(stale, noop_tasklet, NULL), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_post(joined, noop_tasklet, NULL), COEXEC_ESTATE);
    /* create_on a joined stream */
    coexec_thread_t t;
    coexec_tasklet_t k;
    CH_ASSERT_RC(coexec_thread_create_on(joined, noop_ult, NULL, NULL, &t),
                 COEXEC_ESTATE);
    CH_ASSERT_RC(coexec_tasklet_create_on(joined, noop_tasklet, NULL, &k),
                 COEXEC_ESTATE);
    CH_ASSERT_OK(coexec_xstream_join(joined)); /* again: harmless */
    CH_ASSERT_OK(coexec_xstream_free(&joined));
    CH_ASSERT_OK(coexec_xstream_free(&g_xs));
    ch_finalize();
}

/* Streams made and not freed fill the 1,024-entry table: COEXEC_EAGAIN,
 * a limit, not COEXEC_ENOMEM. Joined streams hold no OS thread. */
static void t_xstream_table_full(void)
{
    ch_init(1);
    enum { MAXXS = 1024 };
    static coexec_xstream_t xs[MAXXS];
    int n = 0, rc = COEXEC_OK;
    while (n < MAXXS) {
        coexec_xstream_attr_t a;
        CH_ASSERT_OK(coexec_xstream_attr_init(&a));
        rc = coexec_xstream_create(&a, &xs[n]);
        if (rc != COEXEC_OK)
            break;
        CH_ASSERT_OK(coexec_xstream_join(xs[n]));
        n++;
    }
    CH_ASSERT_RC(rc, COEXEC_EAGAIN);
    CH_ASSERT_EQ(n, MAXXS - 1); /* the primary holds the first entry */
    for (int i = 0; i < n; i++)
        CH_ASSERT_OK(coexec_xstream_free(&xs[i]));
    /* Freed entries are reused. */
    coexec_xstream_t again;
    CH_ASSERT_OK(coexec_xstream_create(NULL, &again));
    CH_ASSERT_OK(coexec_xstream_free(&again));
    ch_finalize();
}

/* ======================================================================= */
/* pool: pool.h                                                             */
/* ======================================================================= */

static int upool_init_fails(coexec_pool_t pool, void *arg, void **state)
{
    (void)pool;
    (void)arg;
    (void)state;
    return COEXEC_ERANGE;
}
static void upool_push(void *s, coexec_unit_t u, coexec_push_kind_t k)
{
    (void)s;
    (void)u;
    (void)k;
}
static coexec_unit_t upool_pop(void *s)
{
    (void)s;
    coexec_unit_t u = {0};
    return u;
}
static size_t upool_size(void *s)
{
    (void)s;
    return 0;
}

static void t_pool(void)
{
    ch_init(1);
    coexec_pool_t p, stale = stale_pool(), mp = main_pool(), out;
    coexec_unit_t u, su = stale_unit();
    size_t sz;
    void *v;
    CH_ASSERT_RC(coexec_pool_config_init(NULL), COEXEC_EINVAL);
    /* create, create_ex */
    CH_ASSERT_RC(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, NULL),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_create((coexec_pool_kind_t)9, COEXEC_ACCESS_MPMC, &out),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_create(COEXEC_POOL_USER, COEXEC_ACCESS_MPMC, &out),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_create(COEXEC_POOL_FIFO, (coexec_pool_access_t)9, &out),
                 COEXEC_EINVAL);
    coexec_pool_config_t pc;
    CH_ASSERT_OK(coexec_pool_config_init(&pc));
    CH_ASSERT_RC(coexec_pool_create_ex(COEXEC_POOL_PRIO, COEXEC_ACCESS_MPMC, &pc, NULL),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_create_ex((coexec_pool_kind_t)9, COEXEC_ACCESS_MPMC, &pc, &out),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_create_ex(COEXEC_POOL_PRIO, (coexec_pool_access_t)-1, &pc, &out),
                 COEXEC_EINVAL);
    pc.levels = 0;
    CH_ASSERT_RC(coexec_pool_create_ex(COEXEC_POOL_PRIO, COEXEC_ACCESS_MPMC, &pc, &out),
                 COEXEC_EINVAL);
    pc.levels = 65;
    CH_ASSERT_RC(coexec_pool_create_ex(COEXEC_POOL_PRIO, COEXEC_ACCESS_MPMC, &pc, &out),
                 COEXEC_EINVAL);
    /* create_user */
    coexec_pool_ops_t ops = {.size = sizeof ops, .push = upool_push,
                             .pop = upool_pop, .get_size = upool_size};
    CH_ASSERT_RC(coexec_pool_create_user(NULL, COEXEC_ACCESS_MPMC, NULL, &out),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_create_user(&ops, COEXEC_ACCESS_MPMC, NULL, NULL),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_create_user(&ops, (coexec_pool_access_t)9, NULL, &out),
                 COEXEC_EINVAL);
    coexec_pool_ops_t bad = ops;
    bad.size = sizeof bad - 1;
    CH_ASSERT_RC(coexec_pool_create_user(&bad, COEXEC_ACCESS_MPMC, NULL, &out),
                 COEXEC_EINVAL);
    bad = ops;
    bad.push = NULL;
    CH_ASSERT_RC(coexec_pool_create_user(&bad, COEXEC_ACCESS_MPMC, NULL, &out),
                 COEXEC_EINVAL);
    bad = ops;
    bad.pop = NULL;
    CH_ASSERT_RC(coexec_pool_create_user(&bad, COEXEC_ACCESS_MPMC, NULL, &out),
                 COEXEC_EINVAL);
    bad = ops;
    bad.get_size = NULL;
    CH_ASSERT_RC(coexec_pool_create_user(&bad, COEXEC_ACCESS_MPMC, NULL, &out),
                 COEXEC_EINVAL);
    bad = ops;
    bad.init = upool_init_fails;
    CH_ASSERT_RC(coexec_pool_create_user(&bad, COEXEC_ACCESS_MPMC, NULL, &out),
                 COEXEC_ERANGE);
    /* get_data */
    CH_ASSERT_RC(coexec_pool_get_data(mp, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_get_data(stale, &v), COEXEC_EHANDLE);
    /* free */
    CH_ASSERT_RC(coexec_pool_free(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_free(&stale), COEXEC_EHANDLE);
    coexec_pool_t copy = mp;
    CH_ASSERT_RC(coexec_pool_free(&copy), COEXEC_EPERM);
    CH_ASSERT_OK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p));
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create(p, noop_ult, NULL, NULL, &t));
    copy = p;
    CH_ASSERT_RC(coexec_pool_free(&copy), COEXEC_EBUSY);
    /* push: a queued unit, the main ULT, bad handles */
    CH_ASSERT_RC(coexec_pool_push(p, coexec_thread_unit(t)), COEXEC_ESTATE);
    coexec_thread_t self;
    CH_ASSERT_OK(coexec_thread_self(&self));
    CH_ASSERT_RC(coexec_pool_push(p, coexec_thread_unit(self)), COEXEC_EPERM);
    CH_ASSERT_RC(coexec_pool_push(stale, coexec_thread_unit(t)), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_pool_push(p, su), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_thread_free(&t)); /* runs in place */
    /* pop, steal, get_size, get_info */
    CH_ASSERT_RC(coexec_pool_pop(p, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_pop(stale, &u), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_pool_steal(p, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_steal(stale, &u), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_pool_get_size(p, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_pool_get_size(stale, &sz), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_pool_get_info(stale, NULL, NULL), COEXEC_EHANDLE);
    /* add_sched */
    coexec_sched_t s, sst = stale_sched(), s0;
    CH_ASSERT_OK(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &p, 1, NULL, &s));
    CH_ASSERT_RC(coexec_pool_add_sched(stale, s), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_pool_add_sched(mp, sst), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_xstream_get_main_sched(primary(), &s0));
    CH_ASSERT_RC(coexec_pool_add_sched(mp, s0), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_pool_add_sched(p, s), COEXEC_EINVAL); /* its own */
    CH_ASSERT_OK(coexec_sched_free(&s));
    CH_ASSERT_OK(coexec_pool_free(&p));
    ch_finalize();
}

/* pool_push, add_sched and migrate_to into a pool whose single producer is
 * another thread: COEXEC_EACCESS. */
struct acc_ctx {
    coexec_pool_t sp;
    coexec_sched_t s;
    coexec_unit_t u;
    coexec_thread_t t2;
};
static void acc_other_producer(void *arg)
{
    struct acc_ctx *c = arg;
    coexec_unit_t got;
    coexec_thread_t t;
    E(coexec_pool_pop(c->sp, &got), COEXEC_EACCESS);
    E(coexec_thread_create(c->sp, noop_ult, NULL, NULL, &t), COEXEC_EACCESS);
    E(coexec_thread_migrate_to(c->t2, c->sp), COEXEC_EACCESS);
    E(coexec_pool_push(c->sp, c->u), COEXEC_EACCESS);
    E(coexec_pool_add_sched(c->sp, c->s), COEXEC_EACCESS);
    coexec_tasklet_t k;
    E(coexec_tasklet_create(c->sp, noop_tasklet, NULL, &k), COEXEC_EACCESS);
}

static void t_pool_access(void)
{
    if (!CH_HAVE_CHECKS)
        return;
    ch_init(1);
    struct acc_ctx c;
    coexec_pool_t other;
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_SPSC, &c.sp));
    CH_ASSERT_OK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &other));
    CH_ASSERT_OK(coexec_sched_create(COEXEC_SCHED_BASIC, &other, 1, NULL, &c.s));
    CH_ASSERT_OK(coexec_thread_create(other, noop_ult, NULL, NULL, &t));
    CH_ASSERT_OK(coexec_pool_pop(other, &c.u)); /* in no pool now */
    CH_ASSERT_OK(coexec_thread_create(other, noop_ult, NULL, NULL, &c.t2));
    CH_ASSERT_OK(coexec_pool_push(c.sp, c.u));  /* binds the producer */
    CH_ASSERT_OK(coexec_pool_pop(c.sp, &c.u));
    in_pthread(acc_other_producer, &c);
    CH_ASSERT_OK(coexec_pool_push(main_pool(), c.u));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_thread_free(&c.t2));
    CH_ASSERT_OK(coexec_sched_free(&c.s));
    CH_ASSERT_OK(coexec_pool_free(&c.sp));
    CH_ASSERT_OK(coexec_pool_free(&other));
    ch_finalize();
}

/* ======================================================================= */
/* sched: sched.h                                                           */
/* ======================================================================= */

static int usched_init_fails(coexec_sched_t s, void *arg, void **state)
{
    (void)s;
    (void)arg;
    (void)state;
    return COEXEC_ERANGE;
}
static void usched_run(coexec_sched_t s, void *state)
{
    (void)s;
    (void)state;
}

static coexec_sched_t g_other_sched;
static coexec_unit_t g_bound_unit;
static coexec_thread_t g_loop_t;

static void sched_loop_checks(void *arg)
{
    (void)arg;
    coexec_sched_t s = g_loop_sched, stale = stale_sched();
    coexec_unit_t u;
    int stop;
    E(coexec_sched_pop(s, 0, NULL), COEXEC_EINVAL);
    E(coexec_sched_pop(s, 1, &u), COEXEC_EINVAL);
    E(coexec_sched_pop(s, -1, &u), COEXEC_EINVAL);
    E(coexec_sched_pop(stale, 0, &u), COEXEC_EHANDLE);
    E(coexec_sched_has_to_stop(s, NULL), COEXEC_EINVAL);
    E(coexec_sched_has_to_stop(stale, &stop), COEXEC_EHANDLE);
    E(coexec_sched_check_events(stale), COEXEC_EHANDLE);
    E(coexec_sched_idle(stale), COEXEC_EHANDLE);
    E(coexec_sched_run_unit(stale, u), COEXEC_EHANDLE);
    E(coexec_sched_run_unit(s, coexec_thread_unit(g_stale_thread)),
      COEXEC_EHANDLE);
    /* Another scheduler's loop is not this one's. */
    E(coexec_sched_pop(g_other_sched, 0, &u), COEXEC_ECONTEXT);
    E(coexec_sched_run_unit(g_other_sched, u), COEXEC_ECONTEXT);
    E(coexec_sched_check_events(g_other_sched), COEXEC_ECONTEXT);
    E(coexec_sched_has_to_stop(g_other_sched, &stop), COEXEC_ECONTEXT);
    E(coexec_sched_idle(g_other_sched), COEXEC_ECONTEXT);
    /* A queued unit (freed by the main ULT), and calls that cannot wait. */
    E(coexec_thread_create(main_pool(), noop_ult, NULL, NULL, &g_loop_t),
      COEXEC_OK);
    E(coexec_sched_run_unit(s, coexec_thread_unit(g_loop_t)), COEXEC_ESTATE);
    E(coexec_thread_join(g_loop_t), COEXEC_ECONTEXT);
}

/* On stream X's loop: a tasklet posted to X (bound to it) taken out of X's
 * pool, for another stream's loop to try. */
static void take_bound_tasklet(void *arg)
{
    coexec_xstream_t me;
    E(coexec_xstream_self(&me), COEXEC_OK);
    E(coexec_xstream_post(me, noop_tasklet, NULL), COEXEC_OK);
    E(coexec_pool_pop(*(coexec_pool_t *)arg, &g_bound_unit), COEXEC_OK);
    CH_CHECK(g_bound_unit.p != NULL);
}
static void run_bound_elsewhere(void *arg)
{
    (void)arg;
    E(coexec_sched_run_unit(g_loop_sched, g_bound_unit), COEXEC_EPERM);
}

static void sched_from_ult(void *arg)
{
    (void)arg;
    coexec_sched_t s;
    coexec_unit_t u;
    int stop;
    E(coexec_sched_self(&s), COEXEC_OK);
    E(coexec_sched_pop(s, 0, &u), COEXEC_ECONTEXT);
    E(coexec_sched_run_unit(s, u), COEXEC_ECONTEXT);
    E(coexec_sched_check_events(s), COEXEC_ECONTEXT);
    E(coexec_sched_has_to_stop(s, &stop), COEXEC_ECONTEXT);
    E(coexec_sched_idle(s), COEXEC_ECONTEXT);
}

static void sched_self_external(void *arg)
{
    (void)arg;
    coexec_sched_t s;
    E(coexec_sched_self(&s), COEXEC_ECONTEXT);
}

static void t_sched(void)
{
    ch_init(1);
    coexec_pool_t p, sp = stale_pool(), mp = main_pool();
    coexec_sched_t s, stale = stale_sched(), s0;
    void *v;
    int n;
    CH_ASSERT_OK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p));
    CH_ASSERT_RC(coexec_sched_config_init(NULL), COEXEC_EINVAL);
    /* create */
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, &p, 1, NULL, NULL),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, NULL, 1, NULL, &s),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_USER, &p, 1, NULL, &s),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create((coexec_sched_kind_t)-1, &p, 1, NULL, &s),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, &p, 0, NULL, &s),
                 COEXEC_EINVAL);
    coexec_pool_t many[65];
    for (int i = 0; i < 65; i++)
        many[i] = p;
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, many, 65, NULL, &s),
                 COEXEC_EINVAL);
    coexec_sched_config_t sc;
    CH_ASSERT_OK(coexec_sched_config_init(&sc));
    sc.size = 4;
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, &p, 1, &sc, &s),
                 COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_sched_config_init(&sc));
    sc.stack_size = 100;
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, &p, 1, &sc, &s),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, &sp, 1, NULL, &s),
                 COEXEC_EHANDLE);
    /* create_user */
    coexec_sched_ops_t ops = {.size = sizeof ops, .run = usched_run};
    CH_ASSERT_RC(coexec_sched_create_user(NULL, &p, 1, NULL, NULL, &s),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create_user(&ops, NULL, 1, NULL, NULL, &s),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create_user(&ops, &p, 1, NULL, NULL, NULL),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create_user(&ops, &p, 0, NULL, NULL, &s),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create_user(&ops, many, 65, NULL, NULL, &s),
                 COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_sched_config_init(&sc));
    sc.stack_size = 100;
    CH_ASSERT_RC(coexec_sched_create_user(&ops, &p, 1, &sc, NULL, &s),
                 COEXEC_EINVAL);
    coexec_sched_ops_t bad = ops;
    bad.size = 8;
    CH_ASSERT_RC(coexec_sched_create_user(&bad, &p, 1, NULL, NULL, &s),
                 COEXEC_EINVAL);
    bad = ops;
    bad.run = NULL;
    CH_ASSERT_RC(coexec_sched_create_user(&bad, &p, 1, NULL, NULL, &s),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_create_user(&ops, &sp, 1, NULL, NULL, &s),
                 COEXEC_EHANDLE);
    bad = ops;
    bad.init = usched_init_fails;
    CH_ASSERT_RC(coexec_sched_create_user(&bad, &p, 1, NULL, NULL, &s),
                 COEXEC_ERANGE);
    /* get_data, get_num_pools, get_pool */
    CH_ASSERT_OK(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &p, 1, NULL, &s));
    CH_ASSERT_RC(coexec_sched_get_data(s, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_get_data(stale, &v), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_sched_get_num_pools(s, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_get_num_pools(stale, &n), COEXEC_EHANDLE);
    coexec_pool_t got;
    CH_ASSERT_RC(coexec_sched_get_pool(s, 0, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_get_pool(s, 1, &got), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_get_pool(s, -1, &got), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_get_pool(stale, 0, &got), COEXEC_EHANDLE);
    /* finish: only a stacked scheduler */
    CH_ASSERT_RC(coexec_sched_finish(s), COEXEC_ESTATE);
    CH_ASSERT_RC(coexec_sched_finish(stale), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_xstream_get_main_sched(primary(), &s0));
    CH_ASSERT_RC(coexec_sched_finish(s0), COEXEC_ESTATE);
    /* self */
    CH_ASSERT_RC(coexec_sched_self(NULL), COEXEC_EINVAL);
    in_pthread(sched_self_external, NULL);
    /* free: running, stacked, a default scheduler */
    CH_ASSERT_RC(coexec_sched_free(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_sched_free(&stale), COEXEC_EHANDLE);
    coexec_sched_t copy = s0;
    CH_ASSERT_RC(coexec_sched_free(&copy), COEXEC_EPERM);
    coexec_pool_t holder;
    CH_ASSERT_OK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &holder));
    CH_ASSERT_OK(coexec_pool_add_sched(holder, s));
    copy = s;
    CH_ASSERT_RC(coexec_sched_free(&copy), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_sched_finish(s));
    coexec_unit_t su;
    CH_ASSERT_OK(coexec_pool_pop(holder, &su));
    CH_ASSERT_OK(coexec_pool_push(mp, su)); /* runs, finds nothing, ends */
    CH_WAIT(coexec_sched_free(&s) == COEXEC_OK);
    /* the scheduler-loop calls from a ULT and from a loop */
    in_ult(sched_from_ult, NULL);
    coexec_xstream_t other;
    CH_ASSERT_OK(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &p, 1, NULL,
                                     &g_other_sched));
    coexec_xstream_attr_t a;
    CH_ASSERT_OK(coexec_xstream_attr_init(&a));
    a.sched = g_other_sched;
    CH_ASSERT_OK(coexec_xstream_create(&a, &other));
    copy = g_other_sched;
    CH_ASSERT_RC(coexec_sched_free(&copy), COEXEC_EBUSY);
    g_stale_thread = stale_thread();
    in_sched_loop(sched_loop_checks, NULL);
    CH_ASSERT_OK(coexec_thread_free(&g_loop_t));
    /* run_unit of a unit bound to another stream */
    struct loop x;
    loop_start(&x, take_bound_tasklet, &x.p);
    in_sched_loop(run_bound_elsewhere, NULL);
    CH_ASSERT_OK(coexec_pool_push(x.p, g_bound_unit)); /* X runs it */
    loop_stop(&x);
    CH_ASSERT_OK(coexec_xstream_free(&other));
    CH_ASSERT_OK(coexec_sched_free(&g_other_sched));
    CH_ASSERT_OK(coexec_pool_free(&holder));
    CH_ASSERT_OK(coexec_pool_free(&p));
    ch_finalize();
}

/* ======================================================================= */
/* thread: thread.h, ULT calls                                              */
/* ======================================================================= */

static coexec_thread_t g_main_ult;
static coexec_tasklet_t g_loop_k;

static void ult_calls_from_tasklet(void *arg)
{
    (void)arg;
    coexec_thread_t t;
    uint64_t id;
    E(coexec_thread_self(&t), COEXEC_ECONTEXT);
    E(coexec_self_id(&id), COEXEC_OK);
    E(coexec_yield(), COEXEC_ECONTEXT);
    E(coexec_thread_exit(), COEXEC_ECONTEXT);
    E(coexec_self_suspend(), COEXEC_ECONTEXT);
    E(coexec_thread_create_child_first(main_pool(), noop_ult, NULL, NULL, &t),
      COEXEC_ECONTEXT);
    E(coexec_yield_to(g_main_ult), COEXEC_ECONTEXT);
    E(coexec_thread_join(g_main_ult), COEXEC_ECONTEXT);
    coexec_thread_t m = g_main_ult;
    E(coexec_thread_free(&m), COEXEC_ECONTEXT);
    E(coexec_thread_join(g_stale_thread), COEXEC_EHANDLE);
    E(coexec_thread_create(main_pool(), noop_ult, NULL, NULL, &t), COEXEC_OK);
    E(coexec_thread_join(t), COEXEC_ECONTEXT);
    E(coexec_thread_join_timed(t, 0), COEXEC_ECONTEXT);
    /* t may have been stolen and run to its end already (another stream
     * serves the main pool): ESTATE then, for the resume and the
     * migration alike. */
    int rrc = coexec_thread_resume(t);
    CH_CHECK(rrc == COEXEC_OK || rrc == COEXEC_ESTATE);
    int mrc = coexec_thread_migrate_to(t, main_pool());
    CH_CHECK(mrc == COEXEC_OK || mrc == COEXEC_ESTATE);
    g_loop_t = t; /* freed by the main ULT */
}

static void ult_calls_from_loop(void *arg)
{
    (void)arg;
    coexec_thread_t t;
    uint64_t id;
    E(coexec_thread_self(&t), COEXEC_ECONTEXT);
    E(coexec_self_id(&id), COEXEC_ECONTEXT);
    E(coexec_yield(), COEXEC_ECONTEXT);
    E(coexec_thread_exit(), COEXEC_ECONTEXT);
    E(coexec_self_suspend(), COEXEC_ECONTEXT);
    E(coexec_yield_to(g_main_ult), COEXEC_ECONTEXT);
    E(coexec_thread_join(g_main_ult), COEXEC_ECONTEXT);
    coexec_tasklet_t k;
    E(coexec_tasklet_create(main_pool(), noop_tasklet, NULL, &k), COEXEC_OK);
    E(coexec_tasklet_join(k), COEXEC_ECONTEXT);
    E(coexec_tasklet_join_timed(k, 0), COEXEC_ECONTEXT);
    g_loop_k = k;
}

static void ult_calls_from_external(void *arg)
{
    (void)arg;
    coexec_thread_t t, m = g_main_ult;
    uint64_t id;
    E(coexec_thread_self(&t), COEXEC_ECONTEXT);
    E(coexec_self_id(&id), COEXEC_ECONTEXT);
    E(coexec_yield(), COEXEC_ECONTEXT);
    E(coexec_thread_exit(), COEXEC_ECONTEXT);
    E(coexec_self_suspend(), COEXEC_ECONTEXT);
    E(coexec_yield_to(g_main_ult), COEXEC_ECONTEXT);
    E(coexec_thread_create_child_first(main_pool(), noop_ult, NULL, NULL, &t),
      COEXEC_ECONTEXT);
    /* the primary's main ULT never finishes: it cannot be joined */
    E(coexec_thread_join(g_main_ult), COEXEC_EPERM);
    E(coexec_thread_free(&m), COEXEC_EPERM);
}

static void join_self_ult(void *arg)
{
    (void)arg;
    coexec_thread_t me, copy;
    E(coexec_thread_self(&me), COEXEC_OK);
    E(coexec_thread_join(me), COEXEC_EDEADLK);
    copy = me;
    E(coexec_thread_free(&copy), COEXEC_EDEADLK);
    E(coexec_thread_join(g_main_ult), COEXEC_EPERM);
    copy = g_main_ult;
    E(coexec_thread_free(&copy), COEXEC_EPERM);
    E(coexec_yield_to(me), COEXEC_EDEADLK);
}

/* From a ULT of another stream, the primary's main ULT is bound away. */
static void yield_to_main_elsewhere(void *arg)
{
    (void)arg;
    E(coexec_yield_to(g_main_ult), COEXEC_EPERM);
}

/* On the primary, the main ULT is no ready queued unit (a thief may have
 * taken this ULT to another stream: there it is bound away). */
static void yield_to_main_here(void *arg)
{
    (void)arg;
    int rank = -1;
    E(coexec_xstream_self_rank(&rank), COEXEC_OK);
    E(coexec_yield_to(g_main_ult), rank == 0 ? COEXEC_ESTATE : COEXEC_EPERM);
}

/* A detached ULT hands out its own handle, then waits to be released. */
struct detached {
    coexec_thread_t self;
    atomic_int published, release;
};
static void detached_ult(void *arg)
{
    struct detached *d = arg;
    E(coexec_thread_self(&d->self), COEXEC_OK);
    atomic_store(&d->published, 1);
    while (!atomic_load(&d->release))
        E(coexec_yield(), COEXEC_OK);
}

/* Two external threads join (or free) one ULT that cannot finish yet:
 * one waits, the other is refused with COEXEC_EBUSY at once. */
struct two_joiners {
    coexec_thread_t t;
    atomic_int go, returned;
    int use_free;
};
struct joiner {
    struct two_joiners *j;
    int rc;
    atomic_int done;
};
static void block_until_go(void *arg)
{
    struct two_joiners *j = arg;
    while (!atomic_load(&j->go))
        E(coexec_yield(), COEXEC_OK);
}
static void *joiner_thread(void *arg)
{
    struct joiner *me = arg;
    coexec_thread_t t = me->j->t;
    me->rc = me->j->use_free ? coexec_thread_free(&t) : coexec_thread_join(t);
    atomic_store(&me->done, 1);
    atomic_fetch_add(&me->j->returned, 1);
    return NULL;
}
static void two_joiners(int use_free)
{
    struct two_joiners j = {.use_free = use_free};
    coexec_unit_state_t us;
    E(coexec_thread_create(main_pool(), block_until_go, &j, NULL, &j.t),
      COEXEC_OK);
    CH_WAIT(coexec_thread_get_state(j.t, &us) == COEXEC_OK &&
            us != COEXEC_UNIT_READY); /* started: no join runs it in place */
    struct joiner a = {.j = &j}, b = {.j = &j};
    ch_pthread_t ta, tb;
    ch_pthread_start(&ta, joiner_thread, &a);
    ch_pthread_start(&tb, joiner_thread, &b);
    CH_WAIT(atomic_load(&j.returned) >= 1);
    struct joiner *early = atomic_load(&a.done) ? &a : &b;
    struct joiner *late = early == &a ? &b : &a;
    E(early->rc, COEXEC_EBUSY);
    atomic_store(&j.go, 1);
    ch_pthread_join(&ta);
    ch_pthread_join(&tb);
    E(late->rc, COEXEC_OK);
    if (!use_free)
        E(coexec_thread_free(&j.t), COEXEC_OK);
}

static void exit_ult(void *arg)
{
    atomic_int *n = arg;
    atomic_fetch_add(n, 1);
    E(coexec_thread_exit(), COEXEC_OK); /* not reached */
    atomic_fetch_add(n, 100);
}

static void suspend_once_ult(void *arg)
{
    (void)arg;
    int rc = coexec_self_suspend();
    (void)rc;
}

static void t_thread(void)
{
    ch_init(2);
    coexec_pool_t mp = main_pool(), sp = stale_pool();
    coexec_xstream_t sx = stale_xstream();
    coexec_thread_t t, st = stale_thread();
    coexec_unit_state_t us;
    uint64_t id;
    CH_ASSERT_OK(coexec_thread_self(&g_main_ult));
    CH_ASSERT_RC(coexec_thread_attr_init(NULL), COEXEC_EINVAL);
    /* create, create_on */
    coexec_thread_attr_t a;
    CH_ASSERT_OK(coexec_thread_attr_init(&a));
    CH_ASSERT_RC(coexec_thread_create(mp, NULL, NULL, NULL, &t), COEXEC_EINVAL);
    a.stack_size = 512;
    CH_ASSERT_RC(coexec_thread_create(mp, noop_ult, NULL, &a, &t), COEXEC_EINVAL);
    static char stack[64 * 1024] __attribute__((aligned(16)));
    CH_ASSERT_OK(coexec_thread_attr_init(&a));
    a.stack = stack + 8;
    a.stack_size = sizeof stack - 16;
    CH_ASSERT_RC(coexec_thread_create(mp, noop_ult, NULL, &a, &t), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_thread_create(sp, noop_ult, NULL, NULL, &t), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_create_on(primary(), NULL, NULL, NULL, &t),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_thread_create_on(sx, noop_ult, NULL, NULL, &t),
                 COEXEC_EHANDLE);
    /* join and free; join_timed as join, plus ETIMEDOUT */
    CH_ASSERT_RC(coexec_thread_join_timed(st, 1000), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_join_timed(g_main_ult, 1000), COEXEC_EDEADLK);
    {
        coexec_thread_t sus;
        CH_ASSERT_OK(coexec_thread_create(mp, suspend_once_ult, NULL, NULL,
                                          &sus));
        CH_ASSERT_RC(coexec_thread_join_timed(sus, 0), COEXEC_ETIMEDOUT);
        CH_ASSERT_RC(coexec_thread_join_timed(sus, 1000000), COEXEC_ETIMEDOUT);
        CH_ASSERT_OK(coexec_thread_resume(sus));
        CH_ASSERT_OK(coexec_thread_join_timed(sus, UINT64_MAX));
        CH_ASSERT_OK(coexec_thread_free(&sus));
    }
    CH_ASSERT_RC(coexec_thread_join(st), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_free(&st), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_free(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_thread_join(g_main_ult), COEXEC_EDEADLK);
    in_ult(join_self_ult, NULL);
    ch_stream_t other;
    CH_ASSERT_OK(ch_stream_create(&other, COEXEC_SCHED_BASIC_WAIT));
    CH_ASSERT_OK(ch_run_ult_in(other.pool, yield_to_main_elsewhere, NULL));
    CH_ASSERT_OK(ch_stream_free(&other));
    in_ult(yield_to_main_here, NULL);
    g_stale_thread = stale_thread();
    in_tasklet(ult_calls_from_tasklet, NULL);
    CH_ASSERT_OK(coexec_thread_free(&g_loop_t));
    in_sched_loop(ult_calls_from_loop, NULL);
    CH_ASSERT_OK(coexec_tasklet_free(&g_loop_k));
    in_pthread(ult_calls_from_external, NULL);
    /* a detached ULT cannot be joined */
    struct detached d = {.published = 0, .release = 0};
    CH_ASSERT_OK(coexec_thread_create(mp, detached_ult, &d, NULL, NULL));
    CH_WAIT(atomic_load(&d.published));
    CH_ASSERT_RC(coexec_thread_join(d.self), COEXEC_EINVAL);
    coexec_thread_t dc = d.self;
    CH_ASSERT_RC(coexec_thread_free(&dc), COEXEC_EINVAL);
    atomic_store(&d.release, 1);
    /* a second joiner while another waits */
    two_joiners(0);
    two_joiners(1);
    /* queries */
    CH_ASSERT_RC(coexec_thread_self(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_thread_get_id(g_main_ult, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_thread_get_id(stale_thread(), &id), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_self_id(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_thread_get_state(g_main_ult, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_thread_get_state(stale_thread(), &us), COEXEC_EHANDLE);
    /* exit: the main ULT may not; another ULT does not come back */
    CH_ASSERT_RC(coexec_thread_exit(), COEXEC_EPERM);
    atomic_int n = 0;
    CH_ASSERT_OK(coexec_thread_create(mp, exit_ult, &n, NULL, &t));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(atomic_load(&n), 1);
    /* resume */
    CH_ASSERT_RC(coexec_thread_resume(stale_thread()), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_thread_create(mp, noop_ult, NULL, NULL, &t));
    CH_ASSERT_OK(coexec_thread_join(t));
    CH_ASSERT_RC(coexec_thread_resume(t), COEXEC_ESTATE);
    /* yield_to: finished, running, a tasklet's handle */
    CH_ASSERT_RC(coexec_yield_to(t), COEXEC_ESTATE);
    CH_ASSERT_RC(coexec_yield_to(stale_thread()), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_thread_free(&t));
    /* migrate_to, migrate_to_xstream */
    CH_ASSERT_OK(coexec_thread_create(mp, noop_ult, NULL, NULL, &t));
    CH_ASSERT_OK(coexec_thread_join(t));
    CH_ASSERT_RC(coexec_thread_migrate_to(t, mp), COEXEC_ESTATE);
    CH_ASSERT_RC(coexec_thread_migrate_to_xstream(t, primary()), COEXEC_ESTATE);
    CH_ASSERT_RC(coexec_thread_migrate_to(t, sp), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_migrate_to_xstream(t, sx), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_RC(coexec_thread_migrate_to(stale_thread(), mp), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_migrate_to(g_main_ult, mp), COEXEC_EPERM);
    CH_ASSERT_RC(coexec_thread_migrate_to_xstream(g_main_ult, primary()),
                 COEXEC_EPERM);
    CH_ASSERT_OK(coexec_thread_attr_init(&a));
    a.pinned = 1;
    CH_ASSERT_OK(coexec_thread_create(mp, noop_ult, NULL, &a, &t));
    CH_ASSERT_RC(coexec_thread_migrate_to(t, mp), COEXEC_EPERM);
    coexec_xstream_t joined = joined_xstream();
    CH_ASSERT_OK(coexec_unit_set_pinned(coexec_thread_unit(t), 0));
    CH_ASSERT_RC(coexec_thread_migrate_to_xstream(t, joined), COEXEC_ESTATE);
    CH_ASSERT_OK(coexec_xstream_free(&joined));
    CH_ASSERT_OK(coexec_thread_free(&t));
    /* child-first from the primary's main ULT, bound to its stream: the
     * child runs first, the main ULT goes back to its pool */
    CH_ASSERT_OK(coexec_thread_create_child_first(mp, noop_ult, NULL, NULL, &t));
    CH_ASSERT_OK(coexec_thread_free(&t));
    ch_finalize();
}

static void child_first_checks(void *arg)
{
    (void)arg;
    coexec_thread_t t;
    coexec_pool_t mp = main_pool();
    E(coexec_thread_create_child_first(mp, NULL, NULL, NULL, &t), COEXEC_EINVAL);
    E(coexec_thread_create_child_first(stale_pool(), noop_ult, NULL, NULL, &t),
      COEXEC_EHANDLE);
    coexec_thread_attr_t a;
    E(coexec_thread_attr_init(&a), COEXEC_OK);
    a.stack_size = 100;
    E(coexec_thread_create_child_first(mp, noop_ult, NULL, &a, &t),
      COEXEC_EINVAL);
    E(coexec_thread_create_child_first(mp, noop_ult, NULL, NULL, &t), COEXEC_OK);
    E(coexec_thread_free(&t), COEXEC_OK);
}

static void child_first_access(void *arg)
{
    coexec_thread_t t;
    E(coexec_thread_create_child_first(*(coexec_pool_t *)arg, noop_ult, NULL,
                                       NULL, &t),
      COEXEC_EACCESS);
}

static void t_thread_child_first(void)
{
    ch_init(1);
    in_ult(child_first_checks, NULL);
    if (CH_HAVE_CHECKS) {
        coexec_pool_t sp;
        coexec_unit_t u;
        CH_ASSERT_OK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_SPSC, &sp));
        coexec_thread_t t;
        CH_ASSERT_OK(coexec_thread_create(sp, noop_ult, NULL, NULL, &t));
        ch_stream_t other;
        CH_ASSERT_OK(ch_stream_create(&other, COEXEC_SCHED_BASIC_WAIT));
        CH_ASSERT_OK(ch_run_ult_in(other.pool, child_first_access, &sp));
        CH_ASSERT_OK(ch_stream_free(&other));
        CH_ASSERT_OK(coexec_pool_pop(sp, &u));
        CH_ASSERT_OK(coexec_pool_push(main_pool(), u));
        CH_ASSERT_OK(coexec_thread_free(&t));
        CH_ASSERT_OK(coexec_pool_free(&sp));
    }
    ch_finalize();
}

/* ======================================================================= */
/* tasklet: thread.h, tasklet calls                                         */
/* ======================================================================= */

static coexec_poll_status_t join_self_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    /* The handle of the running tasklet, handed over by the main ULT. */
    coexec_tasklet_t *k = arg;
    coexec_tasklet_t copy = *k;
    E(coexec_tasklet_join(*k), COEXEC_EDEADLK);
    E(coexec_tasklet_free(&copy), COEXEC_EDEADLK);
    return COEXEC_READY;
}

static void tasklet_calls_from_tasklet(void *arg)
{
    coexec_tasklet_t k = *(coexec_tasklet_t *)arg;
    E(coexec_tasklet_join(k), COEXEC_ECONTEXT);
    E(coexec_tasklet_free(&k), COEXEC_ECONTEXT);
}

static void t_tasklet(void)
{
    ch_init(1);
    coexec_pool_t mp = main_pool(), sp = stale_pool(), holder;
    coexec_xstream_t sx = stale_xstream();
    coexec_tasklet_t k, sk = stale_tasklet();
    coexec_unit_state_t us;
    CH_ASSERT_RC(coexec_tasklet_create(mp, NULL, NULL, &k), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_tasklet_create(sp, noop_tasklet, NULL, &k), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_tasklet_create_on(primary(), NULL, NULL, &k),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_tasklet_create_on(sx, noop_tasklet, NULL, &k),
                 COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_tasklet_join(sk), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_tasklet_free(&sk), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_tasklet_free(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_tasklet_get_state(k, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_tasklet_get_state(stale_tasklet(), &us), COEXEC_EHANDLE);
    /* a ULT's handle is not a tasklet's */
    coexec_thread_t me;
    CH_ASSERT_OK(coexec_thread_self(&me));
    coexec_tasklet_t as_k = {me.p, me.gen};
    CH_ASSERT_RC(coexec_tasklet_get_state(as_k, &us), COEXEC_EHANDLE);
    /* join itself: run by a pool no scheduler serves, popped and pushed
     * where it runs with its own handle as argument */
    CH_ASSERT_OK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &holder));
    static coexec_tasklet_t selfk;
    CH_ASSERT_OK(coexec_tasklet_create(holder, join_self_tasklet, &selfk, &selfk));
    coexec_unit_t u;
    CH_ASSERT_OK(coexec_pool_pop(holder, &u));
    CH_ASSERT_OK(coexec_pool_push(mp, u));
    CH_ASSERT_OK(coexec_tasklet_free(&selfk));
    /* from a tasklet and from a loop */
    CH_ASSERT_OK(coexec_tasklet_create(holder, noop_tasklet, NULL, &k));
    in_tasklet(tasklet_calls_from_tasklet, &k);
    in_sched_loop(tasklet_calls_from_tasklet, &k);
    /* a detached one, taken out of its pool to get its handle */
    CH_ASSERT_OK(coexec_tasklet_create(holder, noop_tasklet, NULL, NULL));
    CH_ASSERT_OK(coexec_pool_pop(holder, &u)); /* k */
    CH_ASSERT_OK(coexec_pool_push(mp, u));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_OK(coexec_pool_pop(holder, &u)); /* the detached one */
    coexec_tasklet_t dk = {u.p, u.gen};
    CH_ASSERT_RC(coexec_tasklet_join(dk), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_tasklet_free(&dk), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_pool_push(mp, u));
    coexec_xstream_t joined = joined_xstream();
    CH_ASSERT_RC(coexec_tasklet_create_on(joined, noop_tasklet, NULL, &k),
                 COEXEC_ESTATE);
    CH_ASSERT_OK(coexec_xstream_free(&joined));
    CH_ASSERT_OK(coexec_pool_free(&holder));
    ch_finalize();
}

/* ======================================================================= */
/* unit: pinning, priority, argument, kind                                  */
/* ======================================================================= */

static void t_unit(void)
{
    ch_init(1);
    coexec_unit_t su = stale_unit(), u;
    coexec_thread_t me;
    int i;
    void *v;
    CH_ASSERT_OK(coexec_thread_self(&me));
    u = coexec_thread_unit(me);
    CH_ASSERT_RC(coexec_unit_set_pinned(su, 1), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_unit_get_pinned(su, &i), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_unit_get_pinned(u, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_unit_set_priority(u, -1), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_unit_set_priority(u, 65536), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_unit_set_priority(su, 1), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_unit_get_priority(u, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_unit_get_priority(su, &i), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_unit_get_arg(u, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_unit_get_arg(su, &v), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_unit_is_thread(u, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_unit_is_thread(su, &i), COEXEC_EHANDLE);
    /* a stacked scheduler's unit stays pinned */
    coexec_pool_t p, holder;
    coexec_sched_t s;
    CH_ASSERT_OK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p));
    CH_ASSERT_OK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &holder));
    CH_ASSERT_OK(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &p, 1, NULL, &s));
    CH_ASSERT_OK(coexec_pool_add_sched(holder, s));
    CH_ASSERT_OK(coexec_pool_pop(holder, &u));
    CH_ASSERT_RC(coexec_unit_set_pinned(u, 0), COEXEC_EPERM);
    CH_ASSERT_OK(coexec_unit_set_pinned(u, 1));
    CH_ASSERT_OK(coexec_sched_finish(s));
    CH_ASSERT_OK(coexec_pool_push(main_pool(), u));
    CH_WAIT(coexec_sched_free(&s) == COEXEC_OK);
    CH_ASSERT_OK(coexec_pool_free(&p));
    CH_ASSERT_OK(coexec_pool_free(&holder));
    ch_finalize();
}

/* Data areas and revives (thread.h): coexec_unit_get_data,
 * coexec_self_get_data, coexec_tasklet_create_init, coexec_thread_revive,
 * coexec_tasklet_revive. */
struct data_ctx {
    coexec_pool_t sp; /* single producer: the main ULT's thread */
    coexec_thread_t t; /* finished */
    coexec_tasklet_t k; /* finished */
};

static void data_other_producer(void *arg)
{
    struct data_ctx *c = arg;
    coexec_tasklet_t k;
    E(coexec_tasklet_create_init(c->sp, noop_tasklet, NULL, noop_data_init,
                                 NULL, &k),
      COEXEC_EACCESS);
    E(coexec_thread_revive(c->sp, noop_ult, NULL, &c->t), COEXEC_EACCESS);
    E(coexec_tasklet_revive(c->sp, noop_tasklet, NULL, &c->k),
      COEXEC_EACCESS);
}

static void data_wrong_caller(void *arg)
{
    (void)arg;
    void *v;
    E(coexec_self_get_data(&v), COEXEC_ECONTEXT);
}

static void block_on(void *arg)
{
    CH_CHECK_RC(coexec_eventual_wait((coexec_eventual_t *)arg, NULL),
                COEXEC_OK);
}

static void t_data_revive(void)
{
    coexec_config_t cfg;
    CH_ASSERT_OK_FATAL(coexec_config_init(&cfg));
    cfg.unit_data_size = 64;
    CH_ASSERT_OK_FATAL(coexec_init(&cfg));
    coexec_pool_t pool = main_pool(), sp = stale_pool();
    coexec_unit_t su = stale_unit();
    coexec_thread_t me, st = stale_thread(), t;
    coexec_tasklet_t sk = stale_tasklet(), k;
    void *v;
    CH_ASSERT_OK(coexec_thread_self(&me));
    /* get_data */
    CH_ASSERT_OK(coexec_unit_get_data(coexec_thread_unit(me), &v));
    CH_ASSERT_RC(coexec_unit_get_data(coexec_thread_unit(me), NULL),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_unit_get_data(su, &v), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_self_get_data(&v));
    CH_ASSERT_RC(coexec_self_get_data(NULL), COEXEC_EINVAL);
    in_pthread(data_wrong_caller, NULL);
    in_sched_loop(data_wrong_caller, NULL);
    /* create_init */
    CH_ASSERT_RC(coexec_tasklet_create_init(pool, NULL, NULL, noop_data_init,
                                            NULL, &k),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_tasklet_create_init(pool, noop_tasklet, NULL, NULL,
                                            NULL, &k),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_tasklet_create_init(sp, noop_tasklet, NULL,
                                            noop_data_init, NULL, &k),
                 COEXEC_EHANDLE);
    /* revive: wrong arguments, handles and states */
    coexec_eventual_t ev;
    CH_ASSERT_OK(coexec_eventual_init(&ev, 0));
    CH_ASSERT_OK(coexec_thread_create(pool, block_on, &ev, NULL, &t));
    CH_ASSERT_OK(coexec_tasklet_create(pool, noop_tasklet, NULL, &k));
    CH_ASSERT_RC(coexec_thread_revive(pool, noop_ult, NULL, &t),
                 COEXEC_ESTATE);
    CH_ASSERT_RC(coexec_tasklet_revive(pool, noop_tasklet, NULL, &k),
                 COEXEC_ESTATE);
    CH_ASSERT_OK(coexec_eventual_set(&ev, NULL, 0));
    CH_ASSERT_OK(coexec_thread_join(t));
    CH_ASSERT_OK(coexec_tasklet_join(k));
    CH_ASSERT_RC(coexec_thread_revive(pool, noop_ult, NULL, NULL),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_thread_revive(pool, NULL, NULL, &t), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_tasklet_revive(pool, noop_tasklet, NULL, NULL),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_tasklet_revive(pool, NULL, NULL, &k), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_thread_revive(sp, noop_ult, NULL, &t),
                 COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_tasklet_revive(sp, noop_tasklet, NULL, &k),
                 COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_revive(pool, noop_ult, NULL, &st),
                 COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_tasklet_revive(pool, noop_tasklet, NULL, &sk),
                 COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_revive(pool, noop_ult, NULL, &me),
                 COEXEC_EPERM);
    if (CH_HAVE_CHECKS) {
        struct data_ctx c = {.t = t, .k = k};
        CH_ASSERT_OK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_SPSC,
                                        &c.sp));
        coexec_tasklet_t bind;
        CH_ASSERT_OK(coexec_tasklet_create(c.sp, noop_tasklet, NULL, &bind));
        in_pthread(data_other_producer, &c);
        CH_ASSERT_OK(coexec_tasklet_free(&bind)); /* run in place */
        CH_ASSERT_OK(coexec_pool_free(&c.sp));
    }
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_OK(coexec_eventual_destroy(&ev));
    ch_finalize();
    /* No data area. */
    ch_init(1);
    pool = main_pool();
    CH_ASSERT_OK(coexec_thread_self(&me));
    CH_ASSERT_RC(coexec_unit_get_data(coexec_thread_unit(me), &v),
                 COEXEC_ENOENT);
    CH_ASSERT_RC(coexec_self_get_data(&v), COEXEC_ENOENT);
    CH_ASSERT_RC(coexec_tasklet_create_init(pool, noop_tasklet, NULL,
                                            noop_data_init, NULL, &k),
                 COEXEC_ENOENT);
    ch_finalize();
}

/* ======================================================================= */
/* key, waker, time: key.h, waker.h, time.h                                 */
/* ======================================================================= */

static coexec_key_t g_key;

static void key_waker_wrong_caller(void *arg)
{
    int from_tasklet = arg != NULL;
    void *v;
    coexec_waker_t w;
    E(coexec_key_set(g_key, &v), COEXEC_ECONTEXT);
    E(coexec_key_get(g_key, &v), COEXEC_ECONTEXT);
    E(coexec_self_waker(&w), COEXEC_ECONTEXT);
    E(coexec_park(), COEXEC_ECONTEXT);
    if (from_tasklet || coexec_self_caller() == COEXEC_CALLER_SCHED) {
        E(coexec_sleep_ns(1000), COEXEC_ECONTEXT);
        E(coexec_sleep_ns(0), COEXEC_ECONTEXT);
        E(coexec_sleep_until(coexec_now_ns() + 1000), COEXEC_ECONTEXT);
    } else {
        E(coexec_sleep_ns(1000), COEXEC_OK); /* an external thread sleeps */
    }
}

static coexec_poll_status_t poll_waker_checks(coexec_poll_t *cx, void *arg)
{
    (void)arg;
    coexec_waker_t w;
    E(coexec_poll_waker(cx, NULL), COEXEC_EINVAL);
    E(coexec_poll_waker(NULL, &w), COEXEC_EINVAL);
    E(coexec_poll_waker(cx, &w), COEXEC_OK);
    return COEXEC_READY;
}

static void t_key_waker_time(void)
{
    ch_init(1);
    coexec_key_t keys[COEXEC_KEYS_MAX];
    void *v;
    CH_ASSERT_RC(coexec_key_create(NULL, NULL), COEXEC_EINVAL);
    int n = 0;
    int rc;
    while ((rc = coexec_key_create(NULL, &keys[n])) == COEXEC_OK &&
           n < COEXEC_KEYS_MAX - 1)
        n++;
    if (rc == COEXEC_OK)
        n++;
    coexec_key_t extra;
    CH_ASSERT_RC(coexec_key_create(NULL, &extra), COEXEC_EAGAIN);
    CH_ASSERT_EQ(n, COEXEC_KEYS_MAX);
    for (int i = 0; i < n; i++)
        CH_ASSERT_OK(coexec_key_delete(keys[i]));
    coexec_key_t dead = keys[0], zero = {0, 0};
    CH_ASSERT_RC(coexec_key_delete(dead), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_key_delete(zero), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_key_set(dead, &n), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_key_get(dead, &v), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_key_create(NULL, &g_key));
    CH_ASSERT_RC(coexec_key_get(g_key, NULL), COEXEC_EINVAL);
    in_tasklet(key_waker_wrong_caller, &n);
    in_sched_loop(key_waker_wrong_caller, NULL);
    in_pthread(key_waker_wrong_caller, NULL);
    CH_ASSERT_OK(coexec_key_delete(g_key));
    /* wakers */
    CH_ASSERT_RC(coexec_self_waker(NULL), COEXEC_EINVAL);
    coexec_waker_t nullw = {0};
    CH_ASSERT_RC(coexec_waker_wake(nullw), COEXEC_EINVAL);
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create(main_pool(), poll_waker_checks, NULL, &k));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    ch_finalize();
}

/* ======================================================================= */
/* eventual, future: eventual.h                                             */
/* ======================================================================= */

struct waits {
    coexec_eventual_t *ev;
    coexec_future_t *f;
    coexec_channel_t *ch;
    coexec_barrier_t *b;
    atomic_int started, done;
};

static void ev_waiter_ult(void *arg)
{
    struct waits *w = arg;
    atomic_store(&w->started, 1);
    if (w->ev)
        E(coexec_eventual_wait(w->ev, NULL), COEXEC_OK);
    if (w->f)
        E(coexec_future_wait(w->f), COEXEC_OK);
    atomic_store(&w->done, 1);
}

static void ev_wrong_caller(void *arg)
{
    struct waits *w = arg;
    coexec_future_t *fs[1] = {w->f};
    E(coexec_eventual_wait(w->ev, NULL), COEXEC_ECONTEXT);
    E(coexec_eventual_wait_timed(w->ev, 1000, NULL), COEXEC_ECONTEXT);
    E(coexec_future_wait(w->f), COEXEC_ECONTEXT);
    E(coexec_future_wait_timed(w->f, 1000), COEXEC_ECONTEXT);
    E(coexec_future_wait_all(fs, 1), COEXEC_ECONTEXT);
}

static coexec_poll_status_t ev_poll_checks(coexec_poll_t *cx, void *arg)
{
    struct waits *w = arg;
    coexec_eventual_t dead;
    coexec_future_t fdead;
    E(coexec_eventual_init(&dead, 0), COEXEC_OK);
    E(coexec_eventual_destroy(&dead), COEXEC_OK);
    E(coexec_future_init(&fdead, 1, NULL, NULL), COEXEC_OK);
    E(coexec_future_destroy(&fdead), COEXEC_OK);
    coexec_future_t *fs[2] = {w->f, &fdead}, *fnull[1] = {NULL};
    E(coexec_eventual_poll(NULL, cx, NULL), COEXEC_EINVAL);
    E(coexec_eventual_poll(w->ev, NULL, NULL), COEXEC_EINVAL);
    E(coexec_eventual_poll(&dead, cx, NULL), COEXEC_EHANDLE);
    E(coexec_future_poll(NULL, cx), COEXEC_EINVAL);
    E(coexec_future_poll(w->f, NULL), COEXEC_EINVAL);
    E(coexec_future_poll(&fdead, cx), COEXEC_EHANDLE);
    E(coexec_future_poll_all(NULL, 1, cx), COEXEC_EINVAL);
    E(coexec_future_poll_all(fs, 0, cx), COEXEC_EINVAL);
    E(coexec_future_poll_all(fnull, 1, cx), COEXEC_EINVAL);
    E(coexec_future_poll_all(fs, 1, NULL), COEXEC_EINVAL);
    E(coexec_future_poll_all(fs, 2, cx), COEXEC_EHANDLE);
    /* unset: PENDING (registered); then the main ULT sets them */
    if (!atomic_load(&w->started)) {
        atomic_store(&w->started, 1);
        E(coexec_eventual_poll(w->ev, cx, NULL), COEXEC_PENDING);
        return COEXEC_PENDING;
    }
    E(coexec_eventual_poll(w->ev, cx, NULL), COEXEC_READY);
    return COEXEC_READY;
}

static void t_eventual(void)
{
    ch_init(1);
    coexec_eventual_t ev, dead;
    void *v;
    int set;
    CH_ASSERT_RC(coexec_eventual_init(NULL, 0), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_eventual_init(&dead, 8));
    CH_ASSERT_OK(coexec_eventual_destroy(&dead));
    CH_ASSERT_RC(coexec_eventual_destroy(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_eventual_destroy(&dead), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_eventual_init(&ev, 8));
    long x = 1;
    CH_ASSERT_RC(coexec_eventual_set(NULL, &x, sizeof x), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_eventual_set(&ev, &x, 9), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_eventual_set(&ev, NULL, 4), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_eventual_set(&dead, &x, sizeof x), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_eventual_wait(NULL, &v), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_eventual_wait(&dead, &v), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_eventual_wait_timed(NULL, 10, &v), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_eventual_wait_timed(&dead, 10, &v), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_eventual_wait_timed(&ev, 1000, &v), COEXEC_ETIMEDOUT);
    CH_ASSERT_RC(coexec_eventual_test(NULL, &v, &set), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_eventual_test(&ev, &v, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_eventual_test(&dead, &v, &set), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_eventual_reset(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_eventual_reset(&dead), COEXEC_EHANDLE);
    /* destroy with a waiter */
    struct waits w = {.ev = &ev};
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create(main_pool(), ev_waiter_ult, &w, NULL, &t));
    coexec_unit_state_t us;
    CH_WAIT(coexec_thread_get_state(t, &us) == COEXEC_OK &&
            us == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_RC(coexec_eventual_destroy(&ev), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_eventual_set(&ev, &x, sizeof x));
    CH_ASSERT_RC(coexec_eventual_set(&ev, &x, sizeof x), COEXEC_ESTATE);
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_eventual_reset(&ev));
    /* futures */
    coexec_future_t f, fdead;
    CH_ASSERT_RC(coexec_future_init(NULL, 1, NULL, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_init(&f, 0, NULL, NULL), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_future_init(&fdead, 1, NULL, NULL));
    CH_ASSERT_OK(coexec_future_destroy(&fdead));
    CH_ASSERT_RC(coexec_future_destroy(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_destroy(&fdead), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_future_init(&f, 1, NULL, NULL));
    CH_ASSERT_RC(coexec_future_set(NULL, &x), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_set(&fdead, &x), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_future_wait(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_wait(&fdead), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_future_wait_timed(NULL, 10), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_wait_timed(&fdead, 10), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_future_wait_timed(&f, 1000), COEXEC_ETIMEDOUT);
    CH_ASSERT_RC(coexec_future_test(NULL, &set), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_test(&f, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_test(&fdead, &set), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_future_get(NULL, 0, &v), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_get(&f, 1, &v), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_get(&f, 0, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_get(&fdead, 0, &v), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_future_reset(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_reset(&fdead), COEXEC_EHANDLE);
    coexec_future_t *fs[2] = {&f, &fdead}, *fnull[1] = {NULL};
    CH_ASSERT_RC(coexec_future_wait_all(NULL, 1), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_wait_all(fs, 0), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_wait_all(fnull, 1), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_future_wait_all(fs, 2), COEXEC_EHANDLE);
    struct waits fw = {.f = &f};
    CH_ASSERT_OK(coexec_thread_create(main_pool(), ev_waiter_ult, &fw, NULL, &t));
    CH_WAIT(coexec_thread_get_state(t, &us) == COEXEC_OK &&
            us == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_RC(coexec_future_destroy(&f), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_future_reset(&f), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_future_set(&f, &x));
    CH_ASSERT_RC(coexec_future_set(&f, &x), COEXEC_ESTATE);
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_future_reset(&f));
    /* tasklets and loops */
    struct waits cw = {.ev = &ev, .f = &f};
    in_tasklet(ev_wrong_caller, &cw);
    in_sched_loop(ev_wrong_caller, &cw);
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create(main_pool(), ev_poll_checks, &cw, &k));
    CH_WAIT(atomic_load(&cw.started));
    CH_ASSERT_OK(coexec_eventual_set(&ev, &x, sizeof x));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_OK(coexec_eventual_destroy(&ev));
    CH_ASSERT_OK(coexec_future_destroy(&f));
    ch_finalize();
}

/* ======================================================================= */
/* sync: sync.h                                                             */
/* ======================================================================= */

struct sync_ctx {
    coexec_mutex_t m, m2;
    coexec_cond_t c;
    coexec_rwlock_t l;
    coexec_barrier_t b;
    coexec_xstream_barrier_t xb;
    atomic_int started, done, tid;
};

static void sync_wrong_caller(void *arg)
{
    struct sync_ctx *s = arg;
    E(coexec_mutex_lock(&s->m), COEXEC_ECONTEXT);
    E(coexec_mutex_lock_timed(&s->m, 1000), COEXEC_ECONTEXT);
    E(coexec_cond_wait(&s->c, &s->m), COEXEC_ECONTEXT);
    E(coexec_cond_wait_timed(&s->c, &s->m, 1000), COEXEC_ECONTEXT);
    E(coexec_rwlock_rdlock(&s->l), COEXEC_ECONTEXT);
    E(coexec_rwlock_wrlock(&s->l), COEXEC_ECONTEXT);
    E(coexec_rwlock_rdlock_timed(&s->l, 1000), COEXEC_ECONTEXT);
    E(coexec_rwlock_wrlock_timed(&s->l, 1000), COEXEC_ECONTEXT);
    E(coexec_barrier_wait(&s->b, NULL), COEXEC_ECONTEXT);
}

/* An external thread: the main ULT holds s->m and s->l (write). */
static void sync_other_owner(void *arg)
{
    struct sync_ctx *s = arg;
    E(coexec_mutex_trylock(&s->m), COEXEC_EBUSY);
    E(coexec_mutex_lock_timed(&s->m, 1000), COEXEC_ETIMEDOUT);
    E(coexec_mutex_unlock(&s->m), COEXEC_EPERM);
    E(coexec_rwlock_tryrdlock(&s->l), COEXEC_EBUSY);
    E(coexec_rwlock_trywrlock(&s->l), COEXEC_EBUSY);
    E(coexec_rwlock_rdlock_timed(&s->l, 1000), COEXEC_ETIMEDOUT);
    E(coexec_rwlock_wrlock_timed(&s->l, 1000), COEXEC_ETIMEDOUT);
    E(coexec_rwlock_unlock(&s->l), COEXEC_EPERM);
}

static void barrier_waiter_ult(void *arg)
{
    struct sync_ctx *s = arg;
    atomic_store(&s->started, 1);
    E(coexec_barrier_wait(&s->b, NULL), COEXEC_OK);
}

static void cond_waiter_ult(void *arg)
{
    struct sync_ctx *s = arg;
    E(coexec_mutex_lock(&s->m), COEXEC_OK);
    atomic_store(&s->started, 1);
    while (!atomic_load(&s->done))
        E(coexec_cond_wait(&s->c, &s->m), COEXEC_OK);
    E(coexec_mutex_unlock(&s->m), COEXEC_OK);
}

/* Thread tid of this process sleeps in a futex call: its state is S and,
 * where the kernel shows it, its current system call is futex. */
static int thread_sleeps_in_futex(int tid)
{
    if (ch_task_state(tid) != 'S')
        return 0;
    long nr = ch_task_syscall(tid);
    return nr == -1 || nr == SYS_futex;
}

static void *xbarrier_thread(void *arg)
{
    struct sync_ctx *s = arg;
    atomic_store(&s->tid, (int)ch_gettid());
    E(coexec_xstream_barrier_wait(&s->xb), COEXEC_OK);
    return NULL;
}

static void t_sync(void)
{
    ch_init(1);
    struct sync_ctx s;
    memset(&s, 0, sizeof s);
    coexec_mutex_t md;
    coexec_cond_t cd;
    coexec_rwlock_t ld;
    coexec_barrier_t bd;
    coexec_xstream_barrier_t xd;
    /* init, and the destroyed objects */
    CH_ASSERT_RC(coexec_mutex_init(NULL, COEXEC_MUTEX_PLAIN), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_mutex_init(&md, (coexec_mutex_kind_t)7), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_cond_init(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_init(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_barrier_init(NULL, 1), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_barrier_init(&bd, 0), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_barrier_init(NULL, 1), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_barrier_init(&xd, 0), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_mutex_init(&md, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK(coexec_mutex_destroy(&md));
    CH_ASSERT_OK(coexec_cond_init(&cd));
    CH_ASSERT_OK(coexec_cond_destroy(&cd));
    CH_ASSERT_OK(coexec_rwlock_init(&ld));
    CH_ASSERT_OK(coexec_rwlock_destroy(&ld));
    CH_ASSERT_OK(coexec_barrier_init(&bd, 1));
    CH_ASSERT_OK(coexec_barrier_destroy(&bd));
    CH_ASSERT_OK(coexec_xstream_barrier_init(&xd, 1));
    CH_ASSERT_OK(coexec_xstream_barrier_destroy(&xd));
    /* every call: NULL and destroyed */
    CH_ASSERT_RC(coexec_mutex_destroy(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_mutex_destroy(&md), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_mutex_lock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_mutex_lock(&md), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_mutex_lock_timed(NULL, 10), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_mutex_lock_timed(&md, 10), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_mutex_trylock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_mutex_trylock(&md), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_mutex_unlock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_mutex_unlock(&md), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_cond_destroy(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_cond_destroy(&cd), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_cond_signal(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_cond_signal(&cd), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_cond_broadcast(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_cond_broadcast(&cd), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_destroy(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_destroy(&ld), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_rdlock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_rdlock(&ld), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_wrlock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_wrlock(&ld), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_rdlock_timed(NULL, 10), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_rdlock_timed(&ld, 10), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_wrlock_timed(NULL, 10), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_wrlock_timed(&ld, 10), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_tryrdlock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_tryrdlock(&ld), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_trywrlock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_trywrlock(&ld), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_unlock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_unlock(&ld), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_barrier_destroy(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_barrier_destroy(&bd), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_barrier_wait(NULL, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_barrier_wait(&bd, NULL), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_barrier_destroy(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_barrier_destroy(&xd), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_barrier_wait(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_barrier_wait(&xd), COEXEC_EHANDLE);

    CH_ASSERT_OK(coexec_mutex_init(&s.m, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK(coexec_mutex_init(&s.m2, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK(coexec_cond_init(&s.c));
    CH_ASSERT_OK(coexec_rwlock_init(&s.l));
    CH_ASSERT_OK(coexec_barrier_init(&s.b, 2));
    CH_ASSERT_OK(coexec_xstream_barrier_init(&s.xb, 2));
    in_tasklet(sync_wrong_caller, &s);
    in_sched_loop(sync_wrong_caller, &s);
    /* mutex: unlocking what is not held; relocking a plain mutex */
    CH_ASSERT_RC(coexec_mutex_unlock(&s.m), COEXEC_EPERM);
    CH_ASSERT_RC(coexec_cond_wait(&s.c, &s.m), COEXEC_EPERM);
    CH_ASSERT_RC(coexec_cond_wait_timed(&s.c, &s.m, 1000), COEXEC_EPERM);
    CH_ASSERT_OK(coexec_mutex_lock(&s.m));
    CH_ASSERT_RC(coexec_mutex_lock(&s.m), COEXEC_EDEADLK);
    CH_ASSERT_RC(coexec_mutex_lock_timed(&s.m, 1000), COEXEC_EDEADLK);
    CH_ASSERT_RC(coexec_mutex_trylock(&s.m), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_mutex_destroy(&s.m), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_cond_wait(NULL, &s.m), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_cond_wait(&s.c, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_cond_wait(&cd, &s.m), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_cond_wait_timed(NULL, &s.m, 10), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_cond_wait_timed(&cd, &s.m, 10), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_cond_wait_timed(&s.c, &s.m, 1000), COEXEC_ETIMEDOUT);
    /* rwlock: the writer that holds it */
    CH_ASSERT_OK(coexec_rwlock_wrlock(&s.l));
    CH_ASSERT_RC(coexec_rwlock_rdlock(&s.l), COEXEC_EDEADLK);
    CH_ASSERT_RC(coexec_rwlock_wrlock(&s.l), COEXEC_EDEADLK);
    CH_ASSERT_RC(coexec_rwlock_rdlock_timed(&s.l, 1000), COEXEC_EDEADLK);
    CH_ASSERT_RC(coexec_rwlock_wrlock_timed(&s.l, 1000), COEXEC_EDEADLK);
    CH_ASSERT_RC(coexec_rwlock_trywrlock(&s.l), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_rwlock_tryrdlock(&s.l), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_rwlock_destroy(&s.l), COEXEC_EBUSY);
    in_pthread(sync_other_owner, &s);
    CH_ASSERT_OK(coexec_rwlock_unlock(&s.l));
    CH_ASSERT_RC(coexec_rwlock_unlock(&s.l), COEXEC_EPERM);
    CH_ASSERT_OK(coexec_mutex_unlock(&s.m));
    /* cond: a waiter bound to m; another mutex is refused; busy destroy */
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create(main_pool(), cond_waiter_ult, &s, NULL, &t));
    CH_WAIT(atomic_load(&s.started));
    CH_ASSERT_OK(coexec_mutex_lock(&s.m)); /* the waiter is in cond_wait */
    CH_ASSERT_OK(coexec_mutex_lock(&s.m2));
    CH_ASSERT_RC(coexec_cond_wait(&s.c, &s.m2), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_cond_destroy(&s.c), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_mutex_unlock(&s.m2));
    atomic_store(&s.done, 1);
    CH_ASSERT_OK(coexec_cond_signal(&s.c));
    CH_ASSERT_OK(coexec_mutex_unlock(&s.m));
    CH_ASSERT_OK(coexec_thread_free(&t));
    /* barrier with a waiter */
    atomic_store(&s.started, 0);
    CH_ASSERT_OK(coexec_thread_create(main_pool(), barrier_waiter_ult, &s, NULL, &t));
    coexec_unit_state_t us;
    CH_WAIT(coexec_thread_get_state(t, &us) == COEXEC_OK &&
            us == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_RC(coexec_barrier_destroy(&s.b), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_barrier_wait(&s.b, NULL));
    CH_ASSERT_OK(coexec_thread_free(&t));
    /* xstream barrier with a thread inside: it has gone to sleep there */
    ch_pthread_t th;
    atomic_store(&s.tid, 0);
    ch_pthread_start(&th, xbarrier_thread, &s);
    CH_WAIT(atomic_load(&s.tid) != 0);
    CH_WAIT(thread_sleeps_in_futex(atomic_load(&s.tid)));
    CH_ASSERT_RC(coexec_xstream_barrier_destroy(&s.xb), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_xstream_barrier_wait(&s.xb));
    ch_pthread_join(&th);
    CH_WAIT(coexec_xstream_barrier_destroy(&s.xb) == COEXEC_OK);
    CH_ASSERT_OK(coexec_barrier_destroy(&s.b));
    CH_ASSERT_OK(coexec_rwlock_destroy(&s.l));
    CH_ASSERT_OK(coexec_cond_destroy(&s.c));
    CH_ASSERT_OK(coexec_mutex_destroy(&s.m));
    CH_ASSERT_OK(coexec_mutex_destroy(&s.m2));
    ch_finalize();
}

/* ======================================================================= */
/* channel: channel.h                                                       */
/* ======================================================================= */

static void ch_wrong_caller(void *arg)
{
    coexec_channel_t *ch = arg;
    long m = 0;
    E(coexec_channel_send(ch, &m), COEXEC_ECONTEXT);
    E(coexec_channel_recv(ch, &m), COEXEC_ECONTEXT);
    E(coexec_channel_send_timed(ch, &m, 1000), COEXEC_ECONTEXT);
    E(coexec_channel_recv_timed(ch, &m, 1000), COEXEC_ECONTEXT);
}

static void ch_recv_ult(void *arg)
{
    struct waits *w = arg;
    long m;
    atomic_store(&w->started, 1);
    E(coexec_channel_recv(w->ch, &m), COEXEC_ECLOSED);
}

static atomic_int g_poll_round;

static coexec_poll_status_t ch_poll_checks(coexec_poll_t *cx, void *arg)
{
    coexec_channel_t *ch = arg, dead;
    long m = 1;
    E(coexec_channel_init(&dead, sizeof m, 1), COEXEC_OK);
    E(coexec_channel_destroy(&dead), COEXEC_OK);
    E(coexec_channel_poll_send(NULL, cx, &m), COEXEC_EINVAL);
    E(coexec_channel_poll_send(ch, NULL, &m), COEXEC_EINVAL);
    E(coexec_channel_poll_send(ch, cx, NULL), COEXEC_EINVAL);
    E(coexec_channel_poll_send(&dead, cx, &m), COEXEC_EHANDLE);
    E(coexec_channel_poll_recv(NULL, cx, &m), COEXEC_EINVAL);
    E(coexec_channel_poll_recv(ch, NULL, &m), COEXEC_EINVAL);
    E(coexec_channel_poll_recv(ch, cx, NULL), COEXEC_EINVAL);
    E(coexec_channel_poll_recv(&dead, cx, &m), COEXEC_EHANDLE);
    if (atomic_fetch_add(&g_poll_round, 1) == 0) {
        E(coexec_channel_poll_send(ch, cx, &m), COEXEC_READY);
        E(coexec_channel_poll_send(ch, cx, &m), COEXEC_PENDING); /* full */
        return COEXEC_PENDING;
    }
    E(coexec_channel_poll_send(ch, cx, &m), COEXEC_READY);
    return COEXEC_READY;
}

static coexec_poll_status_t ch_poll_closed(coexec_poll_t *cx, void *arg)
{
    coexec_channel_t *ch = arg;
    long m = 1;
    E(coexec_channel_poll_send(ch, cx, &m), COEXEC_ECLOSED);
    E(coexec_channel_poll_recv(ch, cx, &m), COEXEC_ECLOSED);
    return COEXEC_READY;
}

static void t_channel(void)
{
    ch_init(1);
    coexec_channel_t ch, dead;
    long m = 1;
    size_t n;
    CH_ASSERT_RC(coexec_channel_init(NULL, 8, 1), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_init(&ch, 0, 1), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_init(&ch, 8, 0), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_init(&ch, SIZE_MAX / 2, 4), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_channel_init(&dead, 8, 1));
    CH_ASSERT_OK(coexec_channel_destroy(&dead));
    CH_ASSERT_RC(coexec_channel_destroy(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_destroy(&dead), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_send(NULL, &m), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_send(&dead, &m), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_recv(NULL, &m), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_recv(&dead, &m), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_send_timed(NULL, &m, 10), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_send_timed(&dead, &m, 10), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_recv_timed(NULL, &m, 10), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_recv_timed(&dead, &m, 10), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_try_send(NULL, &m), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_try_send(&dead, &m), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_try_recv(NULL, &m), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_try_recv(&dead, &m), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_close(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_close(&dead), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_count(NULL, &n), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_count(&dead, &n), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_channel_init(&ch, sizeof m, 1));
    CH_ASSERT_RC(coexec_channel_count(&ch, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_send(&ch, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_recv(&ch, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_try_send(&ch, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_try_recv(&ch, NULL), COEXEC_EINVAL);
    in_tasklet(ch_wrong_caller, &ch);
    in_sched_loop(ch_wrong_caller, &ch);
    /* empty, full */
    CH_ASSERT_RC(coexec_channel_try_recv(&ch, &m), COEXEC_EAGAIN);
    CH_ASSERT_RC(coexec_channel_recv_timed(&ch, &m, 1000), COEXEC_ETIMEDOUT);
    CH_ASSERT_OK(coexec_channel_try_send(&ch, &m));
    CH_ASSERT_RC(coexec_channel_try_send(&ch, &m), COEXEC_EAGAIN);
    CH_ASSERT_RC(coexec_channel_send_timed(&ch, &m, 1000), COEXEC_ETIMEDOUT);
    CH_ASSERT_OK(coexec_channel_recv(&ch, &m));
    /* polls: READY, PENDING */
    coexec_tasklet_t k;
    atomic_store(&g_poll_round, 0);
    CH_ASSERT_OK(coexec_tasklet_create(main_pool(), ch_poll_checks, &ch, &k));
    CH_WAIT(atomic_load(&g_poll_round) == 1);
    CH_ASSERT_OK(coexec_channel_recv(&ch, &m)); /* room: polled again */
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_EQ(atomic_load(&g_poll_round), 2);
    CH_ASSERT_OK(coexec_channel_recv(&ch, &m));
    /* a waiting receiver: destroy is busy; close releases it */
    struct waits w = {.ch = &ch};
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create(main_pool(), ch_recv_ult, &w, NULL, &t));
    coexec_unit_state_t us;
    CH_WAIT(coexec_thread_get_state(t, &us) == COEXEC_OK &&
            us == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_RC(coexec_channel_destroy(&ch), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_channel_close(&ch));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_channel_close(&ch));
    CH_ASSERT_RC(coexec_channel_send(&ch, &m), COEXEC_ECLOSED);
    CH_ASSERT_RC(coexec_channel_send_timed(&ch, &m, 1000), COEXEC_ECLOSED);
    CH_ASSERT_RC(coexec_channel_try_send(&ch, &m), COEXEC_ECLOSED);
    CH_ASSERT_RC(coexec_channel_recv(&ch, &m), COEXEC_ECLOSED);
    CH_ASSERT_RC(coexec_channel_recv_timed(&ch, &m, 1000), COEXEC_ECLOSED);
    CH_ASSERT_RC(coexec_channel_try_recv(&ch, &m), COEXEC_ECLOSED);
    CH_ASSERT_OK(coexec_tasklet_create(main_pool(), ch_poll_closed, &ch, &k));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_OK(coexec_channel_destroy(&ch));
    ch_finalize();
}

/* ======================================================================= */
/* service: service.h                                                       */
/* ======================================================================= */

static intptr_t ret_7(void *arg)
{
    (void)arg;
    return 7;
}

static atomic_int g_release_call;
static intptr_t blocked_call(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_release_call))
        usleep(100);
    return 1;
}

static void svc_wrong_caller(void *arg)
{
    coexec_request_t *req = arg;
    intptr_t r;
    E(coexec_offload(ret_7, NULL, &r), COEXEC_ECONTEXT);
    E(coexec_request_wait(req, &r), COEXEC_ECONTEXT);
    E(coexec_request_wait_timed(req, &r, 0), COEXEC_ECONTEXT);
}

static coexec_poll_status_t svc_poll_checks(coexec_poll_t *cx, void *arg)
{
    coexec_request_t *req = arg, never;
    intptr_t r;
    memset(&never, 0, sizeof never);
    E(coexec_request_poll(NULL, cx, &r), COEXEC_EINVAL);
    E(coexec_request_poll(req, NULL, &r), COEXEC_EINVAL);
    E(coexec_request_poll(&never, cx, &r), COEXEC_EHANDLE);
    int rc = coexec_request_poll(req, cx, &r);
    CH_CHECK(rc == COEXEC_READY || rc == COEXEC_PENDING);
    if (rc == COEXEC_READY)
        E(r, 7);
    return rc == COEXEC_READY ? COEXEC_READY : COEXEC_PENDING;
}

static coexec_poll_status_t svc_poll_cancelled(coexec_poll_t *cx, void *arg)
{
    intptr_t r;
    E(coexec_request_poll(arg, cx, &r), COEXEC_ECANCELED);
    return COEXEC_READY;
}

/* Offloads from a ULT of stream 1 while finalize runs. */
struct fin_offload {
    atomic_int running;
    int queued_rc, late_rc;
};
static void offload_queued_ult(void *arg)
{
    struct fin_offload *f = arg;
    intptr_t r;
    atomic_store(&f->running, 1);
    /* The only service thread is stuck in blocked_call: this waits in the
     * queue until finalize cancels it. */
    f->queued_rc = coexec_offload(ret_7, NULL, &r);
    atomic_store(&g_release_call, 1);
    /* finalize has begun: no new request */
    f->late_rc = coexec_offload(ret_7, NULL, &r);
}

static void t_service(void)
{
    ch_init(1);
    coexec_request_t req, never;
    intptr_t r = 0;
    memset(&never, 0, sizeof never);
    CH_ASSERT_RC(coexec_offload(NULL, NULL, &r), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_offload(ret_7, NULL, &r));
    CH_ASSERT_EQ(r, 7);
    CH_ASSERT_RC(coexec_request_submit(NULL, ret_7, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_request_submit(&req, NULL, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_request_wait(NULL, &r), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_request_wait(&never, &r), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_request_wait_timed(NULL, &r, 0), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_request_wait_timed(&never, &r, 0), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_request_cancel(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_request_cancel(&never), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_service_get_info(NULL), COEXEC_EINVAL);
    coexec_service_info_t info = {.size = 0};
    CH_ASSERT_RC(coexec_service_get_info(&info), COEXEC_EINVAL);
    /* done: cancel is too late */
    CH_ASSERT_OK(coexec_request_submit(&req, ret_7, NULL));
    CH_ASSERT_OK(coexec_request_wait(&req, &r));
    CH_ASSERT_EQ(r, 7);
    CH_ASSERT_RC(coexec_request_cancel(&req), COEXEC_EBUSY);
    in_tasklet(svc_wrong_caller, &req);
    in_sched_loop(svc_wrong_caller, &req);
    /* poll: READY (or PENDING first) */
    CH_ASSERT_OK(coexec_request_submit(&req, ret_7, NULL));
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create(main_pool(), svc_poll_checks, &req, &k));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    /* cancelled while queued behind a stuck call */
    coexec_request_t stuck;
    atomic_store(&g_release_call, 0);
    CH_ASSERT_OK(coexec_request_submit(&stuck, blocked_call, NULL));
    CH_ASSERT_RC(coexec_request_wait_timed(&stuck, &r, 1000000),
                 COEXEC_ETIMEDOUT);
    coexec_service_info_t si = {.size = sizeof si};
    CH_WAIT(coexec_service_get_info(&si) == COEXEC_OK && si.idle == 0);
    CH_ASSERT_OK(coexec_request_submit(&req, ret_7, NULL));
    int rc = coexec_request_cancel(&req);
    /* a second service thread may have started and taken it */
    CU_ASSERT(rc == COEXEC_OK || rc == COEXEC_EBUSY);
    if (rc == COEXEC_OK) {
        CH_ASSERT_RC(coexec_request_wait(&req, &r), COEXEC_ECANCELED);
        CH_ASSERT_OK(coexec_tasklet_create(main_pool(), svc_poll_cancelled, &req,
                                           &k));
        CH_ASSERT_OK(coexec_tasklet_free(&k));
    } else {
        CH_ASSERT_OK(coexec_request_wait(&req, &r));
    }
    atomic_store(&g_release_call, 1);
    CH_ASSERT_OK(coexec_request_wait(&stuck, &r));
    CH_ASSERT_EQ(r, 1);
    /* the wrappers return -errno */
    char b;
    ssize_t n = coexec_read(-1, &b, 1);
    CH_ASSERT_EQ(n, -EBADF);
    ch_finalize();
}

/* finalize cancels what is queued (COEXEC_ECANCELED) and refuses what
 * comes after it began (COEXEC_ECLOSED); submit is refused too. */
static void submit_after_close_ult(void *arg)
{
    int *rc = arg;
    coexec_request_t req;
    /* wait for finalize to close the service stream */
    for (;;) {
        int r = coexec_request_submit(&req, ret_7, NULL);
        if (r != COEXEC_OK) {
            *rc = r;
            return;
        }
        intptr_t v;
        r = coexec_request_wait(&req, &v);
        CH_CHECK(r == COEXEC_OK || r == COEXEC_ECANCELED);
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    }
}

static void t_service_finalize(void)
{
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.num_xstreams = 3;
    cfg.service_threads = 1;
    cfg.service_max_threads = 1;
    cfg.service_io = COEXEC_SERVICE_IO_THREADS;
    cfg.quiet = 1; /* the waiting ULT's handle is left to finalize */
    CH_ASSERT_OK_FATAL(coexec_init(&cfg));
    struct fin_offload f = {.queued_rc = 1, .late_rc = 1};
    int submit_rc = 1;
    coexec_xstream_t x1, x2;
    CH_ASSERT_OK(coexec_xstream_by_rank(1, &x1));
    CH_ASSERT_OK(coexec_xstream_by_rank(2, &x2));
    atomic_store(&g_release_call, 0);
    coexec_request_t stuck;
    CH_ASSERT_OK(coexec_request_submit(&stuck, blocked_call, NULL));
    coexec_service_info_t si = {.size = sizeof si};
    CH_WAIT(coexec_service_get_info(&si) == COEXEC_OK && si.idle == 0);
    coexec_thread_t waiter;
    CH_ASSERT_OK(coexec_thread_create_on(x1, offload_queued_ult, &f, NULL,
                                         &waiter));
    CH_ASSERT_OK(coexec_thread_create_on(x2, submit_after_close_ult, &submit_rc,
                                         NULL, NULL));
    /* Parked in its offload: the request is queued behind the stuck one. */
    coexec_unit_state_t us;
    CH_WAIT(coexec_thread_get_state(waiter, &us) == COEXEC_OK &&
            us == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_OK(coexec_finalize());
    CH_ASSERT_RC(f.queued_rc, COEXEC_ECANCELED);
    CH_ASSERT_RC(f.late_rc, COEXEC_ECLOSED);
    CH_ASSERT_RC(submit_rc, COEXEC_ECLOSED);
}

/* ======================================================================= */

static const ch_test_t notinit_tests[] = {{"every_call", t_notinit},
                                          {NULL, NULL}};
static const ch_test_t runtime_tests[] = {{"runtime", t_runtime},
                                          {NULL, NULL}};
static const ch_test_t xstream_tests[] = {
    {"xstream", t_xstream}, {"table_full", t_xstream_table_full}, {NULL, NULL}};
static const ch_test_t pool_tests[] = {
    {"pool", t_pool}, {"access", t_pool_access}, {NULL, NULL}};
static const ch_test_t sched_tests[] = {{"sched", t_sched}, {NULL, NULL}};
static const ch_test_t thread_tests[] = {
    {"thread", t_thread}, {"child_first", t_thread_child_first}, {NULL, NULL}};
static const ch_test_t tasklet_tests[] = {{"tasklet", t_tasklet}, {NULL, NULL}};
static const ch_test_t unit_tests[] = {
    {"unit", t_unit}, {"data_revive", t_data_revive}, {NULL, NULL}};
static const ch_test_t kwt_tests[] = {{"key_waker_time", t_key_waker_time},
                                      {NULL, NULL}};
static const ch_test_t eventual_tests[] = {{"eventual_future", t_eventual},
                                           {NULL, NULL}};
static const ch_test_t sync_tests[] = {{"sync", t_sync}, {NULL, NULL}};
static const ch_test_t channel_tests[] = {{"channel", t_channel}, {NULL, NULL}};
static const ch_test_t service_tests[] = {
    {"service", t_service}, {"finalize", t_service_finalize}, {NULL, NULL}};

static const ch_suite_t suites[] = {
    {"notinit", notinit_tests}, {"runtime", runtime_tests},
    {"xstream", xstream_tests}, {"pool", pool_tests},
    {"sched", sched_tests},     {"thread", thread_tests},
    {"tasklet", tasklet_tests}, {"unit", unit_tests},
    {"key_waker_time", kwt_tests}, {"eventual", eventual_tests},
    {"sync", sync_tests},       {"channel", channel_tests},
    {"service", service_tests}, {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
