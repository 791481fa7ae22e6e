/*
 * tests/sync/test_sync_misuse.c: the context suite (tasklets get
 * COEXEC_ECONTEXT from every call that may wait) and the args suite (NULL
 * pointers and never-initialised objects)
 */
#include "sync_test.h"

/* ======================================================================= */
/* context                                                                  */
/* ======================================================================= */

typedef struct {
    coexec_mutex_t m;
    coexec_mutex_t held; /* locked by the main ULT */
    coexec_cond_t c;
    coexec_rwlock_t l;
    coexec_barrier_t b;
    coexec_key_t k;
} ctx_t;

static void tasklet_calls(void *arg)
{
    ctx_t *x = arg;
    CH_CHECK(coexec_self_caller() == COEXEC_CALLER_TASKLET);
    /* mutex: waiting calls refused; trylock makes the tasklet the owner */
    CH_CHECK_RC(coexec_mutex_lock(&x->m), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_mutex_lock_timed(&x->m, 1 * MS), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_mutex_trylock(&x->held), COEXEC_EBUSY);
    CH_CHECK_RC(coexec_mutex_unlock(&x->held), COEXEC_EPERM);
    CH_CHECK_RC(coexec_mutex_trylock(&x->m), COEXEC_OK);
    CH_CHECK_RC(coexec_mutex_trylock(&x->m), COEXEC_EBUSY);
    /* cond: no waits; signal and broadcast are fine */
    CH_CHECK_RC(coexec_cond_wait(&x->c, &x->m), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_cond_wait_timed(&x->c, &x->m, 1 * MS),
                COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_cond_signal(&x->c), COEXEC_OK);
    CH_CHECK_RC(coexec_cond_broadcast(&x->c), COEXEC_OK);
    CH_CHECK_RC(coexec_mutex_unlock(&x->m), COEXEC_OK); /* still its owner */
    /* rwlock: no waits; the try variants work */
    CH_CHECK_RC(coexec_rwlock_rdlock(&x->l), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_rwlock_wrlock(&x->l), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_rwlock_rdlock_timed(&x->l, 1 * MS), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_rwlock_wrlock_timed(&x->l, 1 * MS), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_rwlock_tryrdlock(&x->l), COEXEC_OK);
    CH_CHECK_RC(coexec_rwlock_unlock(&x->l), COEXEC_OK);
    CH_CHECK_RC(coexec_rwlock_trywrlock(&x->l), COEXEC_OK);
    CH_CHECK_RC(coexec_rwlock_unlock(&x->l), COEXEC_OK);
    /* barrier, sleep, keys */
    int serial = -1;
    CH_CHECK_RC(coexec_barrier_wait(&x->b, &serial), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_sleep_ns(1 * MS), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_sleep_until(coexec_now_ns() + 1 * MS),
                COEXEC_ECONTEXT);
    void *v = NULL;
    CH_CHECK_RC(coexec_key_set(x->k, (void *)1), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_key_get(x->k, &v), COEXEC_ECONTEXT);
    coexec_key_t k2;
    CH_CHECK_RC(coexec_key_create(NULL, &k2), COEXEC_OK);
    CH_CHECK_RC(coexec_key_delete(k2), COEXEC_OK);
}

static void t_context_tasklet(void)
{
    ch_init(NSTREAMS);
    ctx_t x;
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&x.m, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&x.held, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK_FATAL(coexec_cond_init(&x.c));
    CH_ASSERT_OK_FATAL(coexec_rwlock_init(&x.l));
    CH_ASSERT_OK_FATAL(coexec_barrier_init(&x.b, 2));
    CH_ASSERT_OK_FATAL(coexec_key_create(NULL, &x.k));
    CH_ASSERT_OK(coexec_mutex_lock(&x.held));
    for (int r = 1; r < NSTREAMS; r++)
        CH_ASSERT_OK(ch_run_tasklet_in(ch_main_pool(r), tasklet_calls, &x));
    CH_ASSERT_OK(coexec_mutex_unlock(&x.held));
    /* the refused calls left nothing behind: every object is free */
    CH_ASSERT_OK(coexec_mutex_destroy(&x.m));
    CH_ASSERT_OK(coexec_mutex_destroy(&x.held));
    CH_ASSERT_OK(coexec_cond_destroy(&x.c));
    CH_ASSERT_OK(coexec_rwlock_destroy(&x.l));
    CH_ASSERT_OK(coexec_barrier_destroy(&x.b));
    CH_ASSERT_OK(coexec_key_delete(x.k));
    ch_finalize();
}

/* a tasklet may hold a mutex: a ULT waiting for it gets it on unlock */
typedef struct {
    coexec_mutex_t m;
    atomic_int step;
} tkhold_t;

static coexec_poll_status_t tasklet_holder(coexec_poll_t *cx, void *arg)
{
    tkhold_t *h = arg;
    (void)cx;
    CH_CHECK_RC(coexec_mutex_trylock(&h->m), COEXEC_OK);
    atomic_store(&h->step, 1);
    /* spin (no wait is possible) until the main ULT has tried */
    while (atomic_load(&h->step) != 2)
        sched_yield();
    CH_CHECK_RC(coexec_mutex_unlock(&h->m), COEXEC_OK);
    return COEXEC_READY;
}

static void t_context_tasklet_owner(void)
{
    ch_init(NSTREAMS);
    tkhold_t h;
    atomic_init(&h.step, 0);
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&h.m, COEXEC_MUTEX_PLAIN));
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create_on(ch_xstream(1), tasklet_holder, &h, &k));
    CH_WAIT(atomic_load(&h.step) == 1);
    CH_ASSERT_RC(coexec_mutex_trylock(&h.m), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_mutex_unlock(&h.m), COEXEC_EPERM);
    atomic_store(&h.step, 2);
    CH_ASSERT_OK(coexec_mutex_lock(&h.m));
    CH_ASSERT_OK(coexec_mutex_unlock(&h.m));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_OK(coexec_mutex_destroy(&h.m));
    ch_finalize();
}

/* ======================================================================= */
/* args                                                                     */
/* ======================================================================= */

static void t_args_null(void)
{
    ch_init(1);
    coexec_mutex_t m;
    coexec_cond_t c;
    CH_ASSERT_OK(coexec_mutex_init(&m, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK(coexec_cond_init(&c));
    CH_ASSERT_RC(coexec_mutex_init(NULL, COEXEC_MUTEX_PLAIN), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_mutex_destroy(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_mutex_lock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_mutex_lock_timed(NULL, MS), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_mutex_trylock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_mutex_unlock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_cond_init(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_cond_destroy(NULL), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_mutex_lock(&m));
    CH_ASSERT_RC(coexec_cond_wait(NULL, &m), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_cond_wait(&c, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_cond_wait_timed(NULL, &m, MS), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_cond_wait_timed(&c, NULL, MS), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_mutex_unlock(&m)); /* still held after the refusals */
    CH_ASSERT_RC(coexec_cond_signal(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_cond_broadcast(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_init(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_destroy(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_rdlock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_wrlock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_rdlock_timed(NULL, MS), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_wrlock_timed(NULL, MS), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_tryrdlock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_trywrlock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_rwlock_unlock(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_barrier_init(NULL, 2), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_barrier_destroy(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_barrier_wait(NULL, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_barrier_init(NULL, 2), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_barrier_destroy(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_barrier_wait(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_key_create(NULL, NULL), COEXEC_EINVAL);
    coexec_key_t k;
    CH_ASSERT_OK(coexec_key_create(NULL, &k));
    CH_ASSERT_RC(coexec_key_get(k, NULL), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_key_delete(k));
    CH_ASSERT_OK(coexec_cond_destroy(&c));
    CH_ASSERT_OK(coexec_mutex_destroy(&m));
    ch_finalize();
}

/* objects never initialised (zeroed, or garbage) are not taken for real */
static void t_args_uninitialised(void)
{
    ch_init(1);
    for (int fill = 0; fill < 2; fill++) {
        int byte = fill ? 0xa5 : 0;
        coexec_mutex_t m;
        coexec_cond_t c;
        coexec_rwlock_t l;
        coexec_barrier_t b;
        coexec_xstream_barrier_t xb;
        memset(&m, byte, sizeof m);
        memset(&c, byte, sizeof c);
        memset(&l, byte, sizeof l);
        memset(&b, byte, sizeof b);
        memset(&xb, byte, sizeof xb);
        CH_ASSERT_RC(coexec_mutex_lock(&m), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_mutex_lock_timed(&m, MS), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_mutex_trylock(&m), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_mutex_unlock(&m), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_mutex_destroy(&m), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_cond_signal(&c), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_cond_broadcast(&c), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_cond_destroy(&c), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_rwlock_rdlock(&l), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_rwlock_wrlock(&l), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_rwlock_tryrdlock(&l), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_rwlock_unlock(&l), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_rwlock_destroy(&l), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_barrier_wait(&b, NULL), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_barrier_destroy(&b), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_xstream_barrier_wait(&xb), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_xstream_barrier_destroy(&xb), COEXEC_EHANDLE);
        /* a cond wait with a valid mutex and a bad cond, and vice versa */
        coexec_mutex_t good;
        coexec_cond_t goodc;
        CH_ASSERT_OK(coexec_mutex_init(&good, COEXEC_MUTEX_PLAIN));
        CH_ASSERT_OK(coexec_cond_init(&goodc));
        CH_ASSERT_OK(coexec_mutex_lock(&good));
        CH_ASSERT_RC(coexec_cond_wait(&c, &good), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_cond_wait_timed(&goodc, &m, MS), COEXEC_EHANDLE);
        CH_ASSERT_OK(coexec_mutex_unlock(&good));
        CH_ASSERT_OK(coexec_cond_destroy(&goodc));
        CH_ASSERT_OK(coexec_mutex_destroy(&good));
    }
    ch_finalize();
}

/*
 * init over a live object: refused (COEXEC_EBUSY) while it is held or
 * waited on, the object, its holder and its waiters left as they were;
 * otherwise it starts afresh (a mutex may change its kind).
 */
typedef struct {
    coexec_mutex_t *m;
    coexec_cond_t *c;
    coexec_rwlock_t *l;
    coexec_barrier_t *b;
    atomic_int arriving, done;
    int rc;
} live_t;

static void live_lock(void *arg)
{
    live_t *w = arg;
    atomic_store(&w->arriving, 1);
    w->rc = coexec_mutex_lock(w->m);
    if (w->rc == COEXEC_OK)
        CH_CHECK_RC(coexec_mutex_unlock(w->m), COEXEC_OK);
    atomic_store(&w->done, 1);
}

static void live_cond(void *arg)
{
    live_t *w = arg;
    CH_CHECK_RC(coexec_mutex_lock(w->m), COEXEC_OK);
    atomic_store(&w->arriving, 1);
    w->rc = coexec_cond_wait(w->c, w->m);
    CH_CHECK_RC(coexec_mutex_unlock(w->m), COEXEC_OK);
    atomic_store(&w->done, 1);
}

static void live_rdlock(void *arg)
{
    live_t *w = arg;
    w->rc = coexec_rwlock_rdlock(w->l);
    if (w->rc == COEXEC_OK)
        CH_CHECK_RC(coexec_rwlock_unlock(w->l), COEXEC_OK);
    atomic_store(&w->done, 1);
}

/* (shared by several waiters: counts them) */
static void live_barrier(void *arg)
{
    live_t *w = arg;
    CH_CHECK_RC(coexec_barrier_wait(w->b, NULL), COEXEC_OK);
    atomic_fetch_add(&w->done, 1);
}

static void t_args_init_live(void)
{
    ch_init(NSTREAMS);
    /* mutex: held by us, then waited for by a ULT and a thread */
    coexec_mutex_t m;
    memset(&m, 0, sizeof m);
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&m, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK(coexec_mutex_lock(&m));
    CH_CHECK_RC(coexec_mutex_init(&m, COEXEC_MUTEX_PLAIN), COEXEC_EBUSY);
    live_t wu = {.m = &m, .rc = 1}, we = {.m = &m, .rc = 1};
    coexec_thread_t t;
    ch_spawn_on(1, live_lock, &wu, &t);
    wait_blocked(t);
    CH_CHECK_RC(coexec_mutex_init(&m, COEXEC_MUTEX_RECURSIVE), COEXEC_EBUSY);
    ch_ext_t e;
    ch_ext_start(&e, live_lock, &we);
    CH_WAIT(atomic_load(&we.arriving) && atomic_load(&e.tid) != 0 &&
            ch_task_state((pid_t)atomic_load(&e.tid)) == 'S');
    CH_CHECK_RC(coexec_mutex_init(&m, COEXEC_MUTEX_PLAIN), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_mutex_unlock(&m)); /* still ours */
    CH_ASSERT_OK(coexec_thread_free(&t));
    ch_ext_join(&e);
    CH_ASSERT_RC(wu.rc, COEXEC_OK);
    CH_ASSERT_RC(we.rc, COEXEC_OK);
    /* free: starts afresh, here as a recursive one */
    CH_ASSERT_OK(coexec_mutex_init(&m, COEXEC_MUTEX_RECURSIVE));
    CH_ASSERT_OK(coexec_mutex_lock(&m));
    CH_ASSERT_OK(coexec_mutex_lock(&m));
    CH_CHECK_RC(coexec_mutex_init(&m, COEXEC_MUTEX_PLAIN), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_mutex_unlock(&m));
    CH_ASSERT_OK(coexec_mutex_unlock(&m));
    CH_ASSERT_RC(coexec_mutex_unlock(&m), COEXEC_EPERM);
    CH_ASSERT_OK(coexec_mutex_init(&m, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK(coexec_mutex_lock(&m));
    CH_ASSERT_RC(coexec_mutex_lock(&m), COEXEC_EDEADLK);
    CH_ASSERT_OK(coexec_mutex_unlock(&m));
    coexec_mutex_t sm = COEXEC_MUTEX_INITIALIZER; /* statically live */
    CH_ASSERT_OK(coexec_mutex_init(&sm, COEXEC_MUTEX_RECURSIVE));
    CH_ASSERT_OK(coexec_mutex_lock(&sm));
    CH_ASSERT_OK(coexec_mutex_lock(&sm));
    CH_ASSERT_OK(coexec_mutex_unlock(&sm));
    CH_ASSERT_OK(coexec_mutex_unlock(&sm));
    CH_ASSERT_OK(coexec_mutex_destroy(&sm));

    /* cond: a waiter */
    coexec_cond_t c;
    memset(&c, 0, sizeof c);
    CH_ASSERT_OK_FATAL(coexec_cond_init(&c));
    live_t wc = {.m = &m, .c = &c, .rc = 1};
    ch_spawn_on(2, live_cond, &wc, &t);
    CH_WAIT(atomic_load(&wc.arriving));
    wait_blocked(t);
    CH_ASSERT_OK(coexec_mutex_lock(&m)); /* its wait let go of m */
    CH_CHECK_RC(coexec_cond_init(&c), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_cond_signal(&c));
    CH_ASSERT_OK(coexec_mutex_unlock(&m));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_RC(wc.rc, COEXEC_OK);
    CH_ASSERT_OK(coexec_cond_init(&c));
    CH_ASSERT_OK(coexec_cond_broadcast(&c));
    CH_ASSERT_OK(coexec_cond_destroy(&c));

    /* rwlock: read-held, write-held, waited on */
    coexec_rwlock_t l;
    memset(&l, 0, sizeof l);
    CH_ASSERT_OK_FATAL(coexec_rwlock_init(&l));
    CH_ASSERT_OK(coexec_rwlock_rdlock(&l));
    CH_CHECK_RC(coexec_rwlock_init(&l), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_rwlock_unlock(&l));
    CH_ASSERT_OK(coexec_rwlock_wrlock(&l));
    CH_CHECK_RC(coexec_rwlock_init(&l), COEXEC_EBUSY);
    live_t wr = {.l = &l, .rc = 1};
    ch_spawn_on(3, live_rdlock, &wr, &t);
    wait_blocked(t);
    CH_CHECK_RC(coexec_rwlock_init(&l), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_rwlock_unlock(&l)); /* still ours */
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_RC(wr.rc, COEXEC_OK);
    CH_ASSERT_OK(coexec_rwlock_init(&l));
    CH_ASSERT_OK(coexec_rwlock_trywrlock(&l));
    CH_ASSERT_OK(coexec_rwlock_unlock(&l));
    CH_ASSERT_OK(coexec_rwlock_destroy(&l));

    /* barrier: one of two arrived */
    coexec_barrier_t b;
    memset(&b, 0, sizeof b);
    CH_ASSERT_OK_FATAL(coexec_barrier_init(&b, 2));
    live_t wb = {.b = &b, .rc = 1};
    ch_spawn_on(1, live_barrier, &wb, &t);
    wait_blocked(t);
    CH_CHECK_RC(coexec_barrier_init(&b, 3), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_barrier_wait(&b, NULL)); /* still for two */
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(atomic_load(&wb.done), 1);
    /* nobody inside: now for three */
    CH_ASSERT_OK(coexec_barrier_init(&b, 3));
    coexec_thread_t t2[2];
    atomic_store(&wb.done, 0);
    ch_spawn_on(1, live_barrier, &wb, &t2[0]);
    ch_spawn_on(2, live_barrier, &wb, &t2[1]);
    wait_blocked(t2[0]);
    wait_blocked(t2[1]);
    CH_ASSERT_EQ(atomic_load(&wb.done), 0);
    CH_ASSERT_OK(coexec_barrier_wait(&b, NULL));
    ch_free_threads(t2, 2);
    CH_ASSERT_EQ(atomic_load(&wb.done), 2);
    CH_ASSERT_OK(coexec_barrier_destroy(&b));

    /* xstream barrier: a thread inside */
    coexec_xstream_barrier_t xb;
    memset(&xb, 0, sizeof xb);
    CH_ASSERT_OK_FATAL(coexec_xstream_barrier_init(&xb, 2));
    xwait_t xw = {.b = &xb, .rc = -1};
    ch_ext_start(&e, xwait_body, &xw);
    CH_WAIT(atomic_load(&xw.arriving) && atomic_load(&e.tid) != 0 &&
            ch_task_state((pid_t)atomic_load(&e.tid)) == 'S');
    CH_CHECK_RC(coexec_xstream_barrier_init(&xb, 3), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_xstream_barrier_wait(&xb)); /* still for two */
    ch_ext_join(&e);
    CH_ASSERT_OK(xw.rc);
    CH_ASSERT_OK(coexec_xstream_barrier_init(&xb, 1));
    CH_ASSERT_OK(coexec_xstream_barrier_wait(&xb));
    CH_ASSERT_OK(coexec_xstream_barrier_destroy(&xb));
    CH_ASSERT_OK(coexec_mutex_destroy(&m));
    ch_finalize();
}

/* ======================================================================= */

const ch_test_t sync_context_tests[] = {
    {"tasklet_calls", t_context_tasklet},
    {"tasklet_owns_mutex", t_context_tasklet_owner},
    {NULL, NULL}};
const ch_test_t sync_args_tests[] = {
    {"null_pointers", t_args_null},
    {"uninitialised_objects", t_args_uninitialised},
    {"init_over_live", t_args_init_live},
    {NULL, NULL}};
