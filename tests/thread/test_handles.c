/*
 * tests/thread/test_handles.c: a unit handle is released exactly once,
 * whatever races on it.
 *
 * Suites:
 *   double_free  two threads free one finished ULT (or tasklet) handle at
 *                once: exactly one gets COEXEC_OK, the other
 *                COEXEC_EHANDLE, and the descriptor is not handed out
 *                twice (every later unit runs exactly once)
 *   join_free    one thread joins while another frees: the free never
 *                recycles the descriptor under the joiner, nothing hangs
 *   stale        a stale handle (a copy kept after the free) is refused by
 *                join and free, even once its descriptor serves a new
 *                unit, which it never joins, runs or releases
 */
#include "harness.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

static void yield_once(void)
{
    int rc = coexec_yield();
    (void)rc;
}

static void nop_ult(void *arg)
{
    if (arg)
        atomic_fetch_add((atomic_int *)arg, 1);
}

static coexec_poll_status_t nop_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    if (arg)
        atomic_fetch_add((atomic_int *)arg, 1);
    return COEXEC_READY;
}

/* ---- two frees at once ------------------------------------------------- */

typedef struct race {
    coexec_thread_t t;   /* both racers free their own copy of it */
    coexec_tasklet_t k;
    int tasklet;
    atomic_int go;
    atomic_int ready;
    int rc[2];
} race_t;

static race_t g_race;

static void *racer(void *arg)
{
    int me = (int)(intptr_t)arg;
    coexec_thread_t t = g_race.t;
    coexec_tasklet_t k = g_race.k;
    atomic_fetch_add(&g_race.ready, 1);
    while (!atomic_load(&g_race.go))
        sched_yield();
    g_race.rc[me] = g_race.tasklet ? coexec_tasklet_free(&k)
                                   : coexec_thread_free(&t);
    return NULL;
}

static void double_free_rounds(int tasklet)
{
    ch_init(2);
    long rounds = ch_iters(1500, 100);
    coexec_xstream_t x1;
    CH_ASSERT_OK(coexec_xstream_by_rank(1, &x1));
    long ok1 = 0, bad = 0;
    for (long r = 0; r < rounds; r++) {
        atomic_int ran = 0;
        memset(&g_race, 0, sizeof g_race);
        g_race.tasklet = tasklet;
        if (tasklet)
            CH_ASSERT_OK(coexec_tasklet_create_on(x1, nop_tasklet, &ran,
                                                  &g_race.k));
        else
            CH_ASSERT_OK(coexec_thread_create_on(x1, nop_ult, &ran, NULL,
                                                 &g_race.t));
        CH_WAIT(atomic_load(&ran) == 1); /* finished, not yet freed */
        ch_pthread_t th[2];
        for (int i = 0; i < 2; i++)
            ch_pthread_start(&th[i], racer, (void *)(intptr_t)i);
        while (atomic_load(&g_race.ready) < 2)
            sched_yield();
        atomic_store(&g_race.go, 1);
        for (int i = 0; i < 2; i++)
            ch_pthread_join(&th[i]);
        int a = g_race.rc[0], b = g_race.rc[1];
        if ((a == COEXEC_OK && b == COEXEC_EHANDLE) ||
            (b == COEXEC_OK && a == COEXEC_EHANDLE))
            ok1++;
        else if (bad++ < 5)
            ch_fail_at(__FILE__, __LINE__, "round %ld: frees gave %s and %s",
                       r, coexec_err_name(a), coexec_err_name(b));
        /* The descriptor went back once: the next units each run once and
         * are freed once. */
        atomic_int ran2 = 0;
        coexec_thread_t u[3];
        for (int i = 0; i < 3; i++)
            CH_ASSERT_OK(coexec_thread_create_on(x1, nop_ult, &ran2, NULL,
                                                 &u[i]));
        for (int i = 0; i < 3; i++)
            CH_ASSERT_OK(coexec_thread_free(&u[i]));
        CH_ASSERT_EQ(atomic_load(&ran2), 3);
    }
    CH_ASSERT_EQ(ok1, rounds);
    ch_finalize();
}

static void t_double_free_ult(void) { double_free_rounds(0); }
static void t_double_free_tasklet(void) { double_free_rounds(1); }

static const ch_test_t double_free_tests[] = {
    {"ult", t_double_free_ult},
    {"tasklet", t_double_free_tasklet},
    {NULL, NULL}};

/* ---- join and free at once --------------------------------------------- */

static atomic_int g_gate;

static void gated_ult(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_gate))
        yield_once();
}

static coexec_thread_t g_jf;
static int g_join_rc, g_free_rc;

static void *joiner(void *arg)
{
    (void)arg;
    g_join_rc = coexec_thread_join(g_jf);
    return NULL;
}

static void *freer(void *arg)
{
    (void)arg;
    coexec_thread_t t = g_jf;
    /* Retries while the other joins (EBUSY), as a careless caller might. */
    for (;;) {
        g_free_rc = coexec_thread_free(&t);
        if (g_free_rc != COEXEC_EBUSY)
            break;
        sched_yield();
    }
    return NULL;
}

static void t_join_free(void)
{
    ch_init(3);
    long rounds = ch_iters(800, 50);
    coexec_xstream_t x1;
    CH_ASSERT_OK(coexec_xstream_by_rank(1, &x1));
    int bad = 0;
    for (long r = 0; r < rounds; r++) {
        atomic_store(&g_gate, 0);
        CH_ASSERT_OK(coexec_thread_create_on(x1, gated_ult, NULL, NULL, &g_jf));
        ch_pthread_t a, b;
        ch_pthread_start(&a, joiner, NULL);
        ch_pthread_start(&b, freer, NULL);
        if (r & 1)
            sched_yield();
        atomic_store(&g_gate, 1);
        ch_pthread_join(&a);
        ch_pthread_join(&b);
        /* The free succeeds exactly once; the join saw the unit finish
         * (OK), found the handle already freed (EHANDLE), or found the
         * free joining it (EBUSY). */
        if (g_free_rc != COEXEC_OK ||
            (g_join_rc != COEXEC_OK && g_join_rc != COEXEC_EHANDLE &&
             g_join_rc != COEXEC_EBUSY)) {
            if (bad++ < 5)
                ch_fail_at(__FILE__, __LINE__,
                           "round %ld: join %s, free %s", r,
                           coexec_err_name(g_join_rc),
                           coexec_err_name(g_free_rc));
        }
    }
    /* Still working. */
    atomic_int ran = 0;
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create_on(x1, nop_ult, &ran, NULL, &t));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(atomic_load(&ran), 1);
    ch_finalize();
}

static const ch_test_t join_free_tests[] = {{"join_while_free", t_join_free},
                                            {NULL, NULL}};

/* ---- stale handles ------------------------------------------------------ */

static void t_stale(void)
{
    /* One stream, so the freed descriptor is the next one handed out. */
    ch_init(1);
    coexec_xstream_t x0;
    CH_ASSERT_OK(coexec_xstream_by_rank(0, &x0));
    atomic_int ran = 0;
    coexec_thread_t t, copy;
    CH_ASSERT_OK(coexec_thread_create_on(x0, nop_ult, &ran, NULL, &t));
    copy = t;
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(atomic_load(&ran), 1);
    /* The descriptor now serves a new, not yet started unit. */
    coexec_thread_t n;
    atomic_int ran2 = 0;
    CH_ASSERT_OK(coexec_thread_create_on(x0, nop_ult, &ran2, NULL, &n));
    CU_ASSERT_PTR_EQUAL(n.p, copy.p); /* the case under test */
    CH_ASSERT_RC(coexec_thread_join(copy), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_free(&copy), COEXEC_EHANDLE);
    CH_ASSERT_EQ(atomic_load(&ran2), 0); /* not run in place by the stale one */
    CH_ASSERT_OK(coexec_thread_free(&n));
    CH_ASSERT_EQ(atomic_load(&ran2), 1);
    ch_finalize();
}

static const ch_test_t stale_tests[] = {{"stale_handle", t_stale},
                                        {NULL, NULL}};

static const ch_suite_t suites[] = {{"double_free", double_free_tests},
                                    {"join_free", join_free_tests},
                                    {"stale", stale_tests},
                                    {NULL, NULL}};

int main(int argc, char **argv)
{
    return ch_main(argc, argv, suites);
}
