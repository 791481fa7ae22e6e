/*
 * tests/sync/test_barrier.c: the barrier suite (generations on 4 streams, one
 * serial waiter per generation, external threads, errors) and the xbarrier
 * suite (the xstream barrier: one ULT per stream, external threads, a
 * tasklet, errors)
 */
#include "sync_test.h"

/* ======================================================================= */
/* barrier                                                                  */
/* ======================================================================= */

#define BAR_MAX 32

typedef struct {
    coexec_barrier_t b;
    coexec_xstream_barrier_t xb;
    int n;
    long gens;
    atomic_long phase[BAR_MAX];
    atomic_int *serials; /* per generation */
    atomic_long bad_phase;
    atomic_long bad_serial;
    atomic_long bad_rank;
    int want_rank[BAR_MAX]; /* xstream barrier: the stream of each waiter */
    atomic_int done[BAR_MAX];
} bar_t;

typedef struct {
    bar_t *B;
    int id;
} bar_arg_t;

/*
 * Generation g: publish phase g, wait, then every participant must be at
 * phase g or g+1 (it arrived at g; it cannot pass g+1 without us).
 */
static void bar_check(bar_t *B, long g)
{
    for (int j = 0; j < B->n; j++) {
        long p = atomic_load(&B->phase[j]);
        if (p < g || p > g + 1)
            atomic_fetch_add(&B->bad_phase, 1);
    }
}

static void bar_body(void *arg)
{
    bar_arg_t *a = arg;
    bar_t *B = a->B;
    for (long g = 0; g < B->gens; g++) {
        atomic_store(&B->phase[a->id], g);
        if ((a->id + g) % 4 == 0)
            ch_relax(); /* vary the arrival order */
        int serial = -1;
        int rc = coexec_barrier_wait(&B->b, &serial);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            break;
        }
        if (serial == 1)
            atomic_fetch_add(&B->serials[g], 1);
        else if (serial != 0)
            atomic_fetch_add(&B->bad_serial, 1);
        bar_check(B, g);
    }
    atomic_store(&B->done[a->id], 1);
}

static bar_t *bar_new(int n, long gens)
{
    bar_t *B = calloc(1, sizeof *B);
    B->n = n;
    B->gens = gens;
    B->serials = calloc((size_t)gens, sizeof *B->serials);
    for (int i = 0; i < BAR_MAX; i++)
        B->want_rank[i] = -1;
    return B;
}

static void bar_free(bar_t *B)
{
    free(B->serials);
    free(B);
}

/* nu ULTs on 4 streams, ne external threads, the main ULT if with_main */
static void run_barrier(int nu, int ne, int with_main)
{
    int n = nu + ne + with_main;
    bar_t *B = bar_new(n, ch_iters(400, 20));
    CH_ASSERT_OK_FATAL(coexec_barrier_init(&B->b, (unsigned)n));
    bar_arg_t a[BAR_MAX];
    coexec_thread_t t[BAR_MAX];
    ch_ext_t e[4];
    for (int i = 0; i < n; i++)
        a[i] = (bar_arg_t){B, i};
    for (int i = 0; i < nu; i++)
        ch_spawn_on(i % NSTREAMS, bar_body, &a[i], &t[i]);
    for (int i = 0; i < ne; i++)
        ch_ext_start(&e[i], bar_body, &a[nu + i]);
    if (with_main)
        bar_body(&a[n - 1]);
    ch_free_threads(t, nu);
    for (int i = 0; i < ne; i++)
        ch_ext_join(&e[i]);
    CH_ASSERT_EQ(atomic_load(&B->bad_phase), 0);
    CH_ASSERT_EQ(atomic_load(&B->bad_serial), 0);
    long wrong = 0;
    for (long g = 0; g < B->gens; g++)
        wrong += atomic_load(&B->serials[g]) != 1;
    CH_ASSERT_EQ(wrong, 0);
    CH_ASSERT_OK(coexec_barrier_destroy(&B->b));
    bar_free(B);
}

static void t_barrier_generations(void)
{
    ch_init(NSTREAMS);
    run_barrier(12, 0, 0);
    run_barrier(3, 0, 1);
    ch_finalize();
}

static void t_barrier_externals(void)
{
    ch_init(NSTREAMS);
    run_barrier(8, 2, 1);
    run_barrier(0, 3, 1);
    ch_finalize();
}

typedef struct {
    coexec_barrier_t *b;
    int serial;
    int rc;
} bwait_t;

static void bwait_body(void *arg)
{
    bwait_t *w = arg;
    w->serial = -1;
    w->rc = coexec_barrier_wait(w->b, &w->serial);
}

static void t_barrier_errors(void)
{
    ch_init(NSTREAMS);
    coexec_barrier_t b;
    CH_ASSERT_RC(coexec_barrier_init(&b, 0), COEXEC_EINVAL);
    /* n == 1: every caller is the serial one, at once */
    CH_ASSERT_OK(coexec_barrier_init(&b, 1));
    for (int i = 0; i < 3; i++) {
        int serial = -1;
        CH_ASSERT_OK(coexec_barrier_wait(&b, &serial));
        CH_ASSERT_EQ(serial, 1);
    }
    CH_ASSERT_OK(coexec_barrier_wait(&b, NULL));
    CH_ASSERT_OK(coexec_barrier_destroy(&b));
    /* n == 2: destroy with a waiter is refused; the barrier still works */
    CH_ASSERT_OK(coexec_barrier_init(&b, 2));
    bwait_t w = {&b, -1, -1};
    coexec_thread_t t;
    ch_spawn_on(1, bwait_body, &w, &t);
    CU_ASSERT(wait_blocked(t));
    CH_ASSERT_RC(coexec_barrier_destroy(&b), COEXEC_EBUSY);
    int serial = -1;
    CH_ASSERT_OK(coexec_barrier_wait(&b, &serial));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(w.rc);
    CH_ASSERT_EQ(serial + w.serial, 1);
    CU_ASSERT(serial == 0 || serial == 1);
    /* a second generation, this time with an external thread */
    ch_ext_t e;
    ch_ext_start(&e, bwait_body, &w);
    CH_ASSERT_OK(coexec_barrier_wait(&b, &serial));
    ch_ext_join(&e);
    CH_ASSERT_OK(w.rc);
    CH_ASSERT_EQ(serial + w.serial, 1);
    CH_ASSERT_OK(coexec_barrier_destroy(&b));
    CH_ASSERT_RC(coexec_barrier_wait(&b, &serial), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_barrier_destroy(&b), COEXEC_EHANDLE);
    ch_finalize();
}

/* ======================================================================= */
/* xbarrier                                                                 */
/* ======================================================================= */

static void xbar_body(void *arg)
{
    bar_arg_t *a = arg;
    bar_t *B = a->B;
    for (long g = 0; g < B->gens; g++) {
        atomic_store(&B->phase[a->id], g);
        int rc = coexec_xstream_barrier_wait(&B->xb);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            break;
        }
        bar_check(B, g);
        if (B->want_rank[a->id] >= 0) {
            int r = -1;
            CH_CHECK_RC(coexec_xstream_self_rank(&r), COEXEC_OK);
            if (r != B->want_rank[a->id])
                atomic_fetch_add(&B->bad_rank, 1);
        }
    }
    atomic_store(&B->done[a->id], 1);
}

static coexec_poll_status_t xbar_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    xbar_body(arg);
    return COEXEC_READY;
}

/*
 * One ULT on each of ns pinned streams, ne external threads, the main ULT;
 * with_tasklet turns the first stream's ULT into a tasklet.
 */
static void run_xbarrier(int ns, int ne, int with_tasklet)
{
    ch_stream_t s[NSTREAMS];
    streams_create(s, ns);
    int n = ns + ne + 1;
    bar_t *B = bar_new(n, ch_iters(300, 10));
    CH_ASSERT_OK_FATAL(coexec_xstream_barrier_init(&B->xb, (unsigned)n));
    bar_arg_t a[BAR_MAX];
    coexec_thread_t t[NSTREAMS] = {{0}};
    coexec_tasklet_t k = {0};
    ch_ext_t e[4];
    for (int i = 0; i < n; i++)
        a[i] = (bar_arg_t){B, i};
    for (int i = 0; i < ns; i++) {
        B->want_rank[i] = s[i].rank;
        if (i == 0 && with_tasklet)
            CH_ASSERT_OK(coexec_tasklet_create_on(s[i].xs, xbar_tasklet,
                                                  &a[i], &k));
        else
            CH_ASSERT_OK(coexec_thread_create_on(s[i].xs, xbar_body, &a[i],
                                                 NULL, &t[i]));
    }
    for (int i = 0; i < ne; i++)
        ch_ext_start(&e[i], xbar_body, &a[ns + i]);
    B->want_rank[n - 1] = 0;
    xbar_body(&a[n - 1]);
    /* wait before freeing: a join would run a unit that never started in
     * place, on this stream */
    for (int i = 0; i < ns; i++)
        CH_WAIT(atomic_load(&B->done[i]));
    for (int i = 0; i < ns; i++) {
        if (i == 0 && with_tasklet)
            CH_ASSERT_OK(coexec_tasklet_free(&k));
        else
            CH_ASSERT_OK(coexec_thread_free(&t[i]));
    }
    for (int i = 0; i < ne; i++)
        ch_ext_join(&e[i]);
    CH_ASSERT_EQ(atomic_load(&B->bad_phase), 0);
    CH_ASSERT_EQ(atomic_load(&B->bad_rank), 0);
    CH_ASSERT_OK(coexec_xstream_barrier_destroy(&B->xb));
    bar_free(B);
    streams_free(s, ns);
}

static void t_xbarrier_streams(void)
{
    ch_init(1);
    run_xbarrier(NSTREAMS, 0, 0);
    ch_finalize();
}

static void t_xbarrier_externals_tasklet(void)
{
    ch_init(1);
    run_xbarrier(2, 2, 0);
    run_xbarrier(2, 1, 1);
    ch_finalize();
}

static void t_xbarrier_errors(void)
{
    ch_init(NSTREAMS);
    coexec_xstream_barrier_t b;
    CH_ASSERT_RC(coexec_xstream_barrier_init(&b, 0), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_xstream_barrier_init(&b, 1));
    for (int i = 0; i < 3; i++)
        CH_ASSERT_OK(coexec_xstream_barrier_wait(&b));
    CH_ASSERT_OK(coexec_xstream_barrier_destroy(&b));
    /*
     * n == 2, an external thread waits: once it sleeps in the kernel (its
     * /proc state is 'S' after it announced its arrival) it is registered,
     * and a destroy must be refused.
     */
    CH_ASSERT_OK(coexec_xstream_barrier_init(&b, 2));
    xwait_t w = {.b = &b, .rc = -1};
    ch_ext_t e;
    ch_ext_start(&e, xwait_body, &w);
    CH_WAIT(atomic_load(&w.arriving) && atomic_load(&e.tid) != 0 &&
            ch_task_state((pid_t)atomic_load(&e.tid)) == 'S');
    CH_ASSERT_RC(coexec_xstream_barrier_destroy(&b), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_xstream_barrier_wait(&b));
    ch_ext_join(&e);
    CH_ASSERT_OK(w.rc);
    CH_ASSERT_OK(coexec_xstream_barrier_destroy(&b));
    CH_ASSERT_RC(coexec_xstream_barrier_wait(&b), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_barrier_destroy(&b), COEXEC_EHANDLE);
    ch_finalize();
}

/* ======================================================================= */

const ch_test_t sync_barrier_tests[] = {
    {"generations", t_barrier_generations},
    {"externals", t_barrier_externals},
    {"errors", t_barrier_errors},
    {NULL, NULL}};
const ch_test_t sync_xbarrier_tests[] = {
    {"one_ult_per_stream", t_xbarrier_streams},
    {"externals_and_tasklet", t_xbarrier_externals_tasklet},
    {"errors", t_xbarrier_errors},
    {NULL, NULL}};
