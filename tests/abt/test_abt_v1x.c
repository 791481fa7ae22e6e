/*
 * tests/abt/test_abt_v1x.c: the v1x suite of test_abt. Argobots' reference
 * marks, call by call, what 1.x does where 2.0 changed it (its "changev20"
 * notes); the layer implements 1.x, and each test here checks one family
 * of those notes (the value an output holds after an error is checked by
 * errors.null_outputs):
 *
 *   uninit      the calls that report ABT_ERR_UNINITIALIZED before ABT_init
 *   tasklet     calls a tasklet may not make; ABT_thread_yield has no
 *               effect there (ABT_self_yield, a 1.1 call, is refused)
 *   external    the same for an external thread
 *   ult         the tasklet-only calls made by a ULT
 *   handles     NULL handles given to the info printers, a NULL newsched,
 *               a tasklet's attributes, the primary ULT made migratable,
 *               a pool range past the scheduler's, a resume of a ULT that
 *               is not suspended, schedulers already in use, error strings
 *               of unknown codes, a cond freed under a waiter
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "abt_test.h"

/* ---- before ABT_init --------------------------------------------------- */

static void test_v1x_uninit(void)
{
    CU_ASSERT_EQUAL_FATAL(ABT_initialized(), ABT_ERR_UNINITIALIZED);
    ABT_thread t;
    ABT_task k;
    ABT_xstream x;
    ABT_thread_id id;
    ABT_unit_type type;
    ABT_bool b;
    void *v;
    int n;
    CU_ASSERT_EQUAL(ABT_thread_exit(), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_thread_self(&t), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_thread_self_id(&id), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_xstream_exit(), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_xstream_self(&x), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_xstream_self_rank(&n), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_xstream_get_num(&n), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_xstream_check_events(ABT_SCHED_NULL),
                    ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_self_get_type(&type), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_self_is_primary(&b), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_self_on_primary_xstream(&b), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_self_get_last_pool_id(&n), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_self_set_arg(NULL), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_self_get_arg(&v), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_task_self(&k), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_task_self_id(&id), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_key_set(ABT_KEY_NULL, NULL), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_key_get(ABT_KEY_NULL, &v), ABT_ERR_UNINITIALIZED);
    /* Thread attributes, the query of the configuration, freeing many and
     * migrating to a scheduler, as in Argobots 1.x. */
    ABT_thread_attr attr = ABT_THREAD_ATTR_NULL;
    size_t sz = 0;
    CU_ASSERT_EQUAL(ABT_thread_attr_create(&attr), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_thread_attr_set_stacksize(attr, 65536),
                    ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_thread_attr_set_stack(attr, NULL, 65536),
                    ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_info_query_config(
                        ABT_INFO_QUERY_KIND_DEFAULT_THREAD_STACKSIZE, &sz),
                    ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_thread_free_many(0, NULL), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_thread_migrate_to_sched(ABT_THREAD_NULL,
                                                ABT_SCHED_NULL),
                    ABT_ERR_UNINITIALIZED);
    /* The runtime's printers too. */
    CU_ASSERT_EQUAL(ABT_info_print_config(stderr), ABT_ERR_UNINITIALIZED);
    CU_ASSERT_EQUAL(ABT_info_print_all_xstreams(stderr),
                    ABT_ERR_UNINITIALIZED);
}

/* ---- from a tasklet ------------------------------------------------------ */

/* What a tasklet asks; checked by the main ULT after its join. */
struct in_tasklet {
    ABT_rwlock rw;
    ABT_barrier bar;
    ABT_cond cond;
    ABT_mutex mutex;
    ABT_future fut;
    ABT_eventual ev;
    int rc[12];
};

static void tasklet_calls(void *arg)
{
    struct in_tasklet *x = arg;
    ABT_thread t;
    ABT_thread_id id;
    ABT_bool b;
    struct timespec ts = {0, 0};
    x->rc[0] = ABT_thread_self(&t);
    x->rc[1] = ABT_thread_self_id(&id);
    x->rc[2] = ABT_rwlock_rdlock(x->rw);
    x->rc[3] = ABT_rwlock_wrlock(x->rw);
    x->rc[4] = ABT_barrier_wait(x->bar);
    x->rc[5] = ABT_self_is_primary(&b);
    x->rc[6] = ABT_cond_wait(x->cond, x->mutex);
    x->rc[7] = ABT_future_wait(x->fut);
    x->rc[8] = ABT_eventual_wait(x->ev, NULL);
    x->rc[9] = ABT_eventual_timedwait(x->ev, NULL, &ts);
    x->rc[10] = ABT_thread_yield();
    x->rc[11] = ABT_self_yield();
}

static void test_v1x_tasklet(void)
{
    AT_OK(ABT_init(0, NULL));
    struct in_tasklet x;
    memset(&x, 0, sizeof x);
    AT_OK(ABT_rwlock_create(&x.rw));
    AT_OK(ABT_barrier_create(2, &x.bar));
    AT_OK(ABT_cond_create(&x.cond));
    AT_OK(ABT_mutex_create(&x.mutex));
    AT_OK(ABT_future_create(1, NULL, &x.fut));
    /* Even an eventual already set: the caller is checked first. */
    AT_OK(ABT_eventual_create(0, &x.ev));
    AT_OK(ABT_eventual_set(x.ev, NULL, 0));
    ABT_task k;
    AT_OK(ABT_task_create(at_main_pool(), tasklet_calls, &x, &k));
    AT_OK(ABT_task_free(&k));
    static const int want[12] = {
        ABT_ERR_INV_THREAD, ABT_ERR_INV_THREAD, ABT_ERR_RWLOCK,
        ABT_ERR_RWLOCK,     ABT_ERR_BARRIER,    ABT_ERR_INV_THREAD,
        ABT_ERR_COND,       ABT_ERR_FUTURE,     ABT_ERR_EVENTUAL,
        ABT_ERR_EVENTUAL,   ABT_SUCCESS,        ABT_ERR_INV_THREAD};
    for (int i = 0; i < 12; i++) {
        if (x.rc[i] != want[i])
            fprintf(stderr, "    tasklet call %d: %d, expected %d\n", i,
                    x.rc[i], want[i]);
        CU_ASSERT_EQUAL(x.rc[i], want[i]);
    }
    /* Nothing was taken: the rwlock is free, the barrier still waits for
     * two. */
    AT_OK(ABT_rwlock_wrlock(x.rw));
    AT_OK(ABT_rwlock_unlock(x.rw));
    AT_OK(ABT_rwlock_free(&x.rw));
    AT_OK(ABT_barrier_free(&x.bar));
    AT_OK(ABT_cond_free(&x.cond));
    AT_OK(ABT_mutex_free(&x.mutex));
    AT_OK(ABT_future_free(&x.fut));
    AT_OK(ABT_eventual_free(&x.ev));
    AT_OK(ABT_finalize());
}

/* ---- from an external thread --------------------------------------------- */

static ABT_sched ext_sched;

static void *external_calls(void *arg)
{
    int *rc = arg;
    ABT_bool b;
    ABT_unit_type type;
    rc[0] = ABT_sched_has_to_stop(ext_sched, &b);
    rc[1] = ABT_self_get_type(&type);
    rc[2] = ABT_self_is_primary(&b);
    rc[3] = ABT_self_on_primary_xstream(&b);
    rc[4] = ABT_thread_yield();
    rc[5] = ABT_self_yield();
    return NULL;
}

static void test_v1x_external(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_xstream self;
    AT_OK(ABT_xstream_self(&self));
    AT_OK(ABT_xstream_get_main_sched(self, &ext_sched));
    int rc[6] = {-1, -1, -1, -1, -1, -1};
    pthread_t pt;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&pt, NULL, external_calls, rc), 0);
    pthread_join(pt, NULL);
    static const int want[6] = {ABT_ERR_INV_XSTREAM, ABT_ERR_INV_XSTREAM,
                                ABT_ERR_INV_XSTREAM, ABT_ERR_INV_XSTREAM,
                                ABT_SUCCESS,         ABT_ERR_INV_XSTREAM};
    for (int i = 0; i < 6; i++)
        if (rc[i] != want[i])
            fprintf(stderr, "    external call %d: %d, expected %d\n", i,
                    rc[i], want[i]);
    for (int i = 0; i < 6; i++)
        CU_ASSERT_EQUAL(rc[i], want[i]);
    AT_OK(ABT_finalize());
}

/* ---- from a ULT ------------------------------------------------------------ */

static void test_v1x_ult(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_task k;
    ABT_unit_id id;
    CU_ASSERT_EQUAL(ABT_task_self(&k), ABT_ERR_INV_TASK);
    CU_ASSERT_EQUAL(ABT_task_self_id(&id), ABT_ERR_INV_TASK);
    AT_OK(ABT_finalize());
}

/* ---- handles and arguments ------------------------------------------------- */

static void v1x_noop(void *arg)
{
    (void)arg;
}

static int v1x_sched_init(ABT_sched sched, ABT_sched_config config)
{
    (void)sched;
    (void)config;
    return ABT_SUCCESS;
}

static void v1x_sched_run(ABT_sched sched)
{
    (void)sched;
}

static int v1x_sched_free(ABT_sched sched)
{
    (void)sched;
    return ABT_SUCCESS;
}

static ABT_cond cw_cond;
static ABT_mutex cw_mutex;
static atomic_int cw_waiting;

static void cond_waiter(void *arg)
{
    (void)arg;
    AT_CHECK_OK(ABT_mutex_lock(cw_mutex));
    atomic_store(&cw_waiting, 1);
    AT_CHECK_OK(ABT_cond_wait(cw_cond, cw_mutex));
    AT_CHECK_OK(ABT_mutex_unlock(cw_mutex));
}

static void test_v1x_handles(void)
{
    AT_OK(ABT_init(0, NULL));
    /* The printers refuse NULL handles with the handle's error. */
    CU_ASSERT_EQUAL(ABT_info_print_xstream(stderr, ABT_XSTREAM_NULL),
                    ABT_ERR_INV_XSTREAM);
    CU_ASSERT_EQUAL(ABT_info_print_sched(stderr, ABT_SCHED_NULL),
                    ABT_ERR_INV_SCHED);
    CU_ASSERT_EQUAL(ABT_info_print_pool(stderr, ABT_POOL_NULL),
                    ABT_ERR_INV_POOL);
    CU_ASSERT_EQUAL(ABT_info_print_thread(stderr, ABT_THREAD_NULL),
                    ABT_ERR_INV_THREAD);
    CU_ASSERT_EQUAL(ABT_info_print_thread_attr(stderr, ABT_THREAD_ATTR_NULL),
                    ABT_ERR_INV_THREAD_ATTR);
    CU_ASSERT_EQUAL(ABT_info_print_task(stderr, ABT_TASK_NULL),
                    ABT_ERR_INV_TASK);
    CU_ASSERT_EQUAL(ABT_info_print_thread_stack(stderr, ABT_THREAD_NULL),
                    ABT_ERR_INV_THREAD);
    CU_ASSERT_EQUAL(ABT_info_print_thread_stacks_in_pool(stderr,
                                                         ABT_POOL_NULL),
                    ABT_ERR_INV_POOL);
    /* A NULL newsched. */
    ABT_sched_def def = {.type = ABT_SCHED_TYPE_ULT,
                         .init = v1x_sched_init,
                         .run = v1x_sched_run,
                         .free = v1x_sched_free,
                         .get_migr_pool = NULL};
    CU_ASSERT_EQUAL(ABT_sched_create(&def, 0, NULL, ABT_SCHED_CONFIG_NULL,
                                     NULL),
                    ABT_ERR_SCHED);
    /* A tasklet has no ULT attributes. */
    ABT_task k;
    ABT_thread_attr attr;
    AT_OK(ABT_task_create(at_main_pool(), v1x_noop, NULL, &k));
    CU_ASSERT_EQUAL(ABT_thread_get_attr(k, &attr), ABT_ERR_INV_THREAD);
    AT_OK(ABT_task_free(&k));
    /* The primary ULT: made migratable, to no effect. */
    ABT_thread me;
    AT_OK(ABT_self_get_thread(&me));
    AT_OK(ABT_thread_set_migratable(me, ABT_TRUE));
    /* A range of pools past the scheduler's. */
    ABT_xstream self;
    ABT_sched main_sched;
    AT_OK(ABT_xstream_self(&self));
    AT_OK(ABT_xstream_get_main_sched(self, &main_sched));
    ABT_pool pools[2];
    CU_ASSERT_EQUAL(ABT_sched_get_pools(main_sched, 1, 5, pools),
                    ABT_ERR_SCHED);
    /* A resume of a ULT that is not suspended. */
    ABT_thread t;
    AT_OK(ABT_thread_create(at_main_pool(), v1x_noop, NULL,
                            ABT_THREAD_ATTR_NULL, &t));
    CU_ASSERT_EQUAL(ABT_thread_resume(t), ABT_ERR_THREAD);
    AT_OK(ABT_thread_free(&t));
    /* Schedulers in use. */
    CU_ASSERT_EQUAL(ABT_sched_free(&main_sched), ABT_ERR_SCHED);
    CU_ASSERT_EQUAL(ABT_xstream_set_main_sched(self, main_sched),
                    ABT_ERR_INV_SCHED);
    CU_ASSERT_EQUAL(ABT_pool_add_sched(at_main_pool(), main_sched),
                    ABT_ERR_INV_SCHED);
    ABT_xstream x;
    CU_ASSERT_EQUAL(ABT_xstream_create(main_sched, &x), ABT_ERR_INV_SCHED);
    /* The string of an unknown code. */
    char buf[64];
    size_t len = 0;
    CU_ASSERT_EQUAL(ABT_error_get_str(9999, buf, &len), ABT_ERR_OTHER);
    /* A cond freed while a ULT waits on it. */
    AT_OK(ABT_cond_create(&cw_cond));
    AT_OK(ABT_mutex_create(&cw_mutex));
    atomic_store(&cw_waiting, 0);
    ABT_xstream other;
    AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &other));
    AT_OK(ABT_thread_create_on_xstream(other, cond_waiter, NULL,
                                       ABT_THREAD_ATTR_NULL, &t));
    int yrc = ABT_SUCCESS;
    while (!atomic_load(&cw_waiting) && yrc == ABT_SUCCESS)
        yrc = ABT_thread_yield();
    AT_OK(yrc);
    /* Locked by main: the waiter has released it inside its wait. */
    AT_OK(ABT_mutex_lock(cw_mutex));
    CU_ASSERT_EQUAL(ABT_cond_free(&cw_cond), ABT_ERR_COND);
    CU_ASSERT_PTR_NOT_NULL(cw_cond);
    AT_OK(ABT_cond_signal(cw_cond));
    AT_OK(ABT_mutex_unlock(cw_mutex));
    AT_OK(ABT_thread_free(&t));
    AT_OK(ABT_cond_free(&cw_cond));
    AT_OK(ABT_mutex_free(&cw_mutex));
    AT_OK(ABT_xstream_join(other));
    AT_OK(ABT_xstream_free(&other));
    AT_OK(ABT_finalize());
}

const ch_test_t abt_v1x_tests[] = {{"uninit", test_v1x_uninit},
                                   {"tasklet", test_v1x_tasklet},
                                   {"external", test_v1x_external},
                                   {"ult", test_v1x_ult},
                                   {"handles", test_v1x_handles},
                                   {NULL, NULL}};
