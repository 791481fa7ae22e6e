/*
 * tests/stress/test_repro.c: reduced reproducers of faults the torture
 * test or another suite found. A suite whose fault is not fixed yet
 * passes without running unless COEXEC_TEST_REPRO=1; a fixed one always
 * runs, as a regression test. Either fails while its fault is there (a
 * hang is caught by a 10 s guard that only ends a wait which can no
 * longer succeed, never by a verdict on speed).
 *
 *   channel_room   a channel whose waiting senders include polling
 *                  tasklets loses the room a receive makes: the tasklet
 *                  released for it hands its message straight to a
 *                  waiting receiver, the next waiting sender is never
 *                  released, and the receiver waits forever with the ring
 *                  empty. Fixed (put_locked passes the room on); runs
 *                  always.
 *   fj_wake        a stream about to park misses the kick of a fork-join
 *                  region that opens meanwhile: it read
 *                  coexec__sched_fj.open as 0 (sched/loop.c), the region
 *                  found no parked thief to kick (fj.c, coexec_fj_run),
 *                  then the stream parked without looking at `open` again
 *                  (sched/idle.c, coexec__sched_park_stream) and sleeps
 *                  through the whole region: nothing is ever stolen from
 *                  it. Found by tests/fj (steal suite). Fixed (a parking
 *                  stream does not sleep while a region is open; opening
 *                  one is seq_cst before the kick); runs always.
 *
 * When a fault is fixed, its suite moves to the area that owns the code,
 * as a regression test that always runs.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_enabled;

/* Waits up to 10 s for cond: a guard against a hang, not a time limit. */
#define REPRO_WAIT(cond)                                                       \
    ({                                                                         \
        double r_t0_ = ch_now();                                               \
        while (!(cond) && ch_now() - r_t0_ < 10.0)                             \
            ch_relax();                                                        \
        (cond);                                                                \
    })

__attribute__((unused)) /* for the suites of faults not fixed yet */
static int skip(void)
{
    if (!g_enabled)
        printf("(skipped: set COEXEC_TEST_REPRO=1) ");
    return !g_enabled;
}

/* ======================================================================= */
/* channel_room                                                             */
/* ======================================================================= */

/*
 * One stream with one FIFO pool and no stealing, so the order is fixed:
 * tasklet A (2 messages), tasklet B (1 message), ULT R (receives 3), on a
 * channel of capacity 1.
 *   A sends a0 into the ring; a1 finds it full: A waits.
 *   B finds it full: B waits behind A.
 *   R takes a0, which releases A (a tasklet: released to poll again, the
 *   room stays empty); R's next receive finds the ring empty: R waits.
 *   A polls: a1 goes straight to R, who waits. A is done.
 *   R waits again, the ring is empty, and B still waits for room: nobody
 *   releases it.
 */
typedef struct room {
    coexec_channel_t ch;
    coexec_pool_t pool;
    coexec_tasklet_t a, b;
    coexec_thread_t r;
    int next[2];
    atomic_int received, r_done;
} room_t;

static coexec_poll_status_t room_sender(coexec_poll_t *cx, void *arg,
                                        int id, int n)
{
    room_t *s = arg;
    while (s->next[id] < n) {
        int msg = id * 100 + s->next[id];
        int rc = coexec_channel_poll_send(&s->ch, cx, &msg);
        if (rc == COEXEC_PENDING)
            return COEXEC_PENDING;
        if (rc == COEXEC_ECLOSED)
            break; /* closed by the test after a hang */
        CH_CHECK_RC(rc, COEXEC_READY);
        if (rc != COEXEC_READY)
            break;
        s->next[id]++;
    }
    return COEXEC_READY;
}

static coexec_poll_status_t room_a(coexec_poll_t *cx, void *arg)
{
    return room_sender(cx, arg, 0, 2);
}

static coexec_poll_status_t room_b(coexec_poll_t *cx, void *arg)
{
    return room_sender(cx, arg, 1, 1);
}

static void room_r(void *arg)
{
    room_t *s = arg;
    for (int i = 0; i < 3; i++) {
        int msg = -1;
        int rc = coexec_channel_recv(&s->ch, &msg);
        if (rc == COEXEC_ECLOSED)
            break; /* closed by the test after a hang */
        CH_CHECK_RC(rc, COEXEC_OK);
        if (rc)
            break;
        atomic_fetch_add(&s->received, 1);
    }
    atomic_store(&s->r_done, 1);
}

static void room_setup(void *arg)
{
    /* runs on the stream: the three units queue behind it, in order */
    room_t *s = arg;
    CH_CHECK_RC(coexec_tasklet_create(s->pool, room_a, s, &s->a), COEXEC_OK);
    CH_CHECK_RC(coexec_tasklet_create(s->pool, room_b, s, &s->b), COEXEC_OK);
    CH_CHECK_RC(coexec_thread_create(s->pool, room_r, s, NULL, &s->r),
                COEXEC_OK);
}

static void t_channel_room(void)
{
    /* fixed: runs always */
    ch_init(1);
    ch_stream_t st;
    CH_ASSERT_EQ_FATAL(ch_stream_create(&st, COEXEC_SCHED_BASIC_WAIT), 0);
    room_t *s = calloc(1, sizeof *s);
    CH_ASSERT_OK_FATAL(coexec_channel_init(&s->ch, sizeof(int), 1));
    s->pool = st.pool;
    CH_ASSERT_EQ(ch_run_ult_in(st.pool, room_setup, s), 0);
    bool done = REPRO_WAIT(atomic_load(&s->r_done));
    if (!done) {
        size_t n = 99;
        CH_ASSERT_OK(coexec_channel_count(&s->ch, &n));
        printf("\n    receiver has %d of 3 messages, %zu queued, sender B "
               "sent %d of 1: B waits for room that is there\n",
               atomic_load(&s->received), n, s->next[1]);
        /* let everyone go so the runtime can stop */
        CH_ASSERT_OK(coexec_channel_close(&s->ch));
    }
    CU_ASSERT(done);
    CH_ASSERT_EQ(atomic_load(&s->received), 3);
    CH_ASSERT_OK(coexec_tasklet_free(&s->a));
    CH_ASSERT_OK(coexec_tasklet_free(&s->b));
    CH_ASSERT_OK(coexec_thread_free(&s->r));
    CH_ASSERT_OK(coexec_channel_destroy(&s->ch));
    free(s);
    CH_ASSERT_EQ(ch_stream_free(&st), 0);
    ch_finalize();
}

static const ch_test_t channel_room_tests[] = {
    {"tasklet_senders", t_channel_room}, {NULL, NULL}};

/* ======================================================================= */
/* fj_wake                                                                  */
/* ======================================================================= */

/*
 * Two streams; the second parks as soon as it is idle (idle_spin_us 0).
 * Round after round the main ULT opens a region the moment the last one
 * closed, while the second stream is on its way to park: the region
 * spawns task A and keeps spawning trivial tasks (each spawn honours a
 * thief's split request) until A has started, which only a thief can
 * make happen. A region whose kick was lost waits for a thief that
 * sleeps on: the 10 s guard ends it, and A runs at its sync.
 */
static atomic_int g_a_started;

COEXEC_FJ_TASK_0(int, wake_a)
{
    atomic_store(&g_a_started, 1);
    return 1;
}

COEXEC_FJ_TASK_1(long, wake_bump, long, x)
{
    return x + 1;
}

static void wake_region(coexec_fj_t *coexec_fj_, void *arg)
{
    bool *stolen = arg;
    COEXEC_FJ_SPAWN(wake_a);
    double t0 = ch_now();
    for (long i = 0; !atomic_load(&g_a_started); i++) {
        COEXEC_FJ_SPAWN(wake_bump, i);
        CH_CHECK_EQ(COEXEC_FJ_SYNC(wake_bump), i + 1);
        if (i % 256 == 255 && ch_now() - t0 > 10.0)
            break;
    }
    *stolen = atomic_load(&g_a_started);
    CH_CHECK_EQ(COEXEC_FJ_SYNC(wake_a), 1);
}

static void t_fj_wake(void)
{
    coexec_config_t cfg;
    CH_ASSERT_OK_FATAL(coexec_config_init(&cfg));
    cfg.num_xstreams = 2;
    cfg.idle_spin_us = 0;
    CH_ASSERT_OK_FATAL(coexec_init(&cfg));
    long rounds = ch_iters(2000, 200), r;
    bool stolen = true;
    for (r = 0; r < rounds && stolen; r++) {
        atomic_store(&g_a_started, 0);
        CH_ASSERT_OK(coexec_fj_run(wake_region, &stolen));
    }
    if (!stolen)
        printf("\n    round %ld of %ld: no thief in 10 s, the second stream "
               "parked through the region\n", r, rounds);
    CU_ASSERT(stolen);
    ch_finalize();
}

static const ch_test_t fj_wake_tests[] = {
    {"region_opens_while_stream_parks", t_fj_wake}, {NULL, NULL}};

static const ch_suite_t suites[] = {{"channel_room", channel_room_tests},
                                    {"fj_wake", fj_wake_tests},
                                    {NULL, NULL}};

int main(int argc, char **argv)
{
    const char *e = getenv("COEXEC_TEST_REPRO");
    g_enabled = e && strcmp(e, "0") != 0;
    return ch_main(argc, argv, suites);
}
