/*
 * tests/waker/test_wakestress.c: the lost-wake-up stress (label "stress"),
 * scaled by COEXEC_TEST_SCALE.
 *
 *   lost_wakeup  ULTs parking in a loop (coexec_park) and tasklets
 *                returning PENDING, on 4 streams, woken concurrently by
 *                ULTs of every stream and by external threads, with wakes
 *                arriving while they run, while they park and after they
 *                finished, and stale wakers of freed (recycled) units
 *                fired all the time. Token protocol: a waker increments a
 *                unit's token counter, then wakes it; the unit consumes
 *                tokens and parks only when it has consumed them all.
 *                Most units accept one outstanding token at a time, so a
 *                single lost wake leaves one parked for good, its wakers
 *                waiting for it and the main ULT in its join: THE TEST
 *                HANGS (ctest timeout) instead of passing. Sentinel units
 *                that nobody wakes count park returns that no wake
 *                explains.
 *   pingpong     an eventual ping-pong and a channel ping-pong between two
 *                ULTs of different streams, and between a ULT and an
 *                external thread, for many rounds (a lost wake hangs).
 *
 * Nothing here waits with a time limit: a lost wake hangs by design.
 */
#define _GNU_SOURCE
#include "wk.h"

#include <stdio.h>
#include <stdlib.h>

/* ======================================================================= */
/* lost_wakeup                                                              */
/* ======================================================================= */

enum { NPARK = 48, NSENT = 8, NAGENT_ULT = WK_NSTREAMS, NAGENT_PT = 2 };

typedef struct {
    coexec_waker_t w; /* written once, before ready */
    atomic_int ready;
    atomic_long tokens;     /* handed out by wakers (claimed by CAS) */
    atomic_long acked;      /* consumed by the unit */
    atomic_long wakes_sent; /* every wake sent to it, tokens or not */
    atomic_int finished;
    long target;
    int window;    /* outstanding tokens allowed: 1 = a lost wake hangs */
    int bare_ok;   /* may also receive wakes without a token */
    int tasklet;
    /* the unit's own counters */
    long consumed;
    long park_returns;
    long polls;
    int waker_changed;
    coexec_thread_t t;
    coexec_tasklet_t k;
} tp_t;

typedef struct {
    coexec_waker_t w;
    atomic_int ready;
    atomic_int release;
    long unexplained; /* park returns before the release */
    coexec_thread_t t;
} sentinel_t;

typedef struct {
    tp_t *p;
    sentinel_t *s;
    coexec_waker_t *stale; /* wakers of the previous generation's units */
    int nstale;
    atomic_int finished_units;
    atomic_long token_wakes, bare_wakes, stale_wakes, done_wakes;
} gen_t;

typedef struct {
    gen_t *g;
    int id;
} agent_t;

static void tp_consume(tp_t *p)
{
    long t = atomic_load(&p->tokens);
    if (t > p->consumed) {
        p->consumed = t;
        atomic_store(&p->acked, t);
    }
}

static void token_parker_ult(void *arg)
{
    tp_t *p = arg;
    CH_CHECK_RC(coexec_self_waker(&p->w), COEXEC_OK);
    atomic_store(&p->ready, 1);
    for (;;) {
        tp_consume(p);
        if (p->consumed >= p->target)
            break;
        int rc = coexec_park();
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            break;
        }
        p->park_returns++;
    }
    atomic_store(&p->finished, 1);
}

static coexec_poll_status_t token_parker_tasklet(coexec_poll_t *cx, void *arg)
{
    tp_t *p = arg;
    if (p->polls++ > 0)
        p->park_returns++;
    coexec_waker_t w;
    CH_CHECK_RC(coexec_poll_waker(cx, &w), COEXEC_OK);
    if (!atomic_load(&p->ready)) {
        p->w = w;
        atomic_store(&p->ready, 1);
    } else if (!CH_SAME(w, p->w)) {
        p->waker_changed = 1;
    }
    tp_consume(p);
    if (p->consumed >= p->target) {
        atomic_store(&p->finished, 1);
        return COEXEC_READY;
    }
    /* a token handed out after this check comes with a wake that is
     * either recorded (we still run) or queues us again */
    return COEXEC_PENDING;
}

static void sentinel_ult(void *arg)
{
    sentinel_t *s = arg;
    CH_CHECK_RC(coexec_self_waker(&s->w), COEXEC_OK);
    atomic_store(&s->ready, 1);
    while (!atomic_load(&s->release)) {
        CH_CHECK_RC(coexec_park(), COEXEC_OK);
        if (!atomic_load(&s->release))
            s->unexplained++;
    }
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* Hands out tokens and wakes until every unit of the generation has
 * finished. No time limit: a lost wake keeps this loop (and the test)
 * running forever. */
static void agent_run(agent_t *a)
{
    gen_t *g = a->g;
    uint64_t rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(a->id + 1);
    long token_wakes = 0, bare = 0, stale = 0, done = 0;
    while (atomic_load(&g->finished_units) < NPARK) {
        int start = (int)(xorshift(&rng) % NPARK);
        for (int j = 0; j < NPARK; j++) {
            tp_t *p = &g->p[(start + j) % NPARK];
            if (!atomic_load(&p->ready))
                continue;
            uint64_t r = xorshift(&rng);
            if (atomic_load(&p->finished)) {
                /* wakes after the unit finished (not yet freed) */
                if ((r & 15) == 0) {
                    atomic_fetch_add(&p->wakes_sent, 1);
                    CH_CHECK_RC(coexec_waker_wake(p->w), COEXEC_OK);
                    done++;
                }
                continue;
            }
            long t = atomic_load(&p->tokens);
            if (t < p->target && t - atomic_load(&p->acked) < p->window &&
                atomic_compare_exchange_strong(&p->tokens, &t, t + 1)) {
                atomic_fetch_add(&p->wakes_sent, 1);
                CH_CHECK_RC(coexec_waker_wake(p->w), COEXEC_OK);
                token_wakes++;
            } else if (p->bare_ok && (r & 7) == 0) {
                atomic_fetch_add(&p->wakes_sent, 1);
                CH_CHECK_RC(coexec_waker_wake(p->w), COEXEC_OK);
                bare++;
            }
        }
        /* stale wakers: freed units whose descriptors new units reuse */
        for (int j = 0; j < 4 && g->nstale; j++) {
            CH_CHECK_RC(coexec_waker_wake(g->stale[xorshift(&rng) % (uint64_t)g->nstale]),
                        COEXEC_OK);
            stale++;
        }
        ch_relax();
    }
    atomic_fetch_add(&g->token_wakes, token_wakes);
    atomic_fetch_add(&g->bare_wakes, bare);
    atomic_fetch_add(&g->stale_wakes, stale);
    atomic_fetch_add(&g->done_wakes, done);
}

static void agent_ult(void *arg) { agent_run(arg); }

static void *agent_pthread(void *arg)
{
    agent_run(arg);
    return NULL;
}

/* Counts finished units for the agents' exit test; joins nothing. */
static void count_finished(gen_t *g, int *counted)
{
    for (int i = 0; i < NPARK; i++)
        if (!counted[i] && atomic_load(&g->p[i].finished)) {
            counted[i] = 1;
            atomic_fetch_add(&g->finished_units, 1);
        }
}

static void t_token_storm(void)
{
    ch_init(WK_NSTREAMS);
    int gens = (int)ch_iters(16, 2);
    long target = ch_iters(1500, 40);
    coexec_waker_t *stale = calloc(NPARK + NSENT, sizeof *stale);
    int nstale = 0;
    long total_tokens = 0, total_returns = 0, total_unexplained = 0;
    long sum_token_wakes = 0, sum_bare = 0, sum_stale = 0, sum_done = 0;
    int over_returns = 0, bad_tokens = 0, changed = 0;
    double t0 = ch_now();
    for (int gi = 0; gi < gens; gi++) {
        gen_t *g = calloc(1, sizeof *g);
        g->p = calloc(NPARK, sizeof *g->p);
        g->s = calloc(NSENT, sizeof *g->s);
        g->stale = stale;
        g->nstale = nstale;
        /* sentinels first, so they tend to take recycled descriptors */
        for (int i = 0; i < NSENT; i++)
            CH_ASSERT_OK_FATAL(coexec_thread_create_on(ch_xstream(i % WK_NSTREAMS), sentinel_ult,
                                                       &g->s[i], NULL, &g->s[i].t));
        for (int i = 0; i < NPARK; i++) {
            tp_t *p = &g->p[i];
            p->target = target;
            p->window = (i % 4 == 3) ? 3 : 1;
            p->bare_ok = (i % 4 == 3);
            p->tasklet = (i % 4 == 1);
            coexec_xstream_t xs = ch_xstream((i + gi) % WK_NSTREAMS);
            if (p->tasklet)
                CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(xs, token_parker_tasklet, p, &p->k));
            else
                CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs, token_parker_ult, p, NULL, &p->t));
        }
        agent_t ag[NAGENT_ULT + NAGENT_PT];
        coexec_thread_t at[NAGENT_ULT];
        ch_pthread_t pt[NAGENT_PT];
        for (int i = 0; i < NAGENT_ULT + NAGENT_PT; i++)
            ag[i] = (agent_t){g, i + gi * 16};
        for (int i = 0; i < NAGENT_ULT; i++)
            CH_ASSERT_OK_FATAL(coexec_thread_create_on(ch_xstream(i), agent_ult, &ag[i], NULL, &at[i]));
        for (int i = 0; i < NAGENT_PT; i++)
            ch_pthread_start(&pt[i], agent_pthread, &ag[NAGENT_ULT + i]);
        /* the main ULT counts finished units (never joining one that has
         * not started: that would run it here) */
        int counted[NPARK];
        memset(counted, 0, sizeof counted);
        while (atomic_load(&g->finished_units) < NPARK) {
            count_finished(g, counted);
            ch_relax();
        }
        for (int i = 0; i < NAGENT_ULT; i++)
            CH_ASSERT_OK(coexec_thread_free(&at[i]));
        for (int i = 0; i < NAGENT_PT; i++)
            ch_pthread_join(&pt[i]);
        /* results of the generation */
        nstale = 0;
        for (int i = 0; i < NPARK; i++) {
            tp_t *p = &g->p[i];
            if (p->tasklet)
                CH_ASSERT_OK(coexec_tasklet_free(&p->k));
            else
                CH_ASSERT_OK(coexec_thread_free(&p->t));
            bad_tokens += p->consumed != target || atomic_load(&p->tokens) != target;
            over_returns += p->park_returns > atomic_load(&p->wakes_sent);
            changed += p->waker_changed;
            total_tokens += p->consumed;
            total_returns += p->park_returns;
            stale[nstale++] = p->w;
        }
        /* sentinels: nobody woke them yet */
        for (int i = 0; i < NSENT; i++) {
            sentinel_t *s = &g->s[i];
            while (!atomic_load(&s->ready))
                ch_relax();
            atomic_store(&s->release, 1);
            CH_ASSERT_OK(coexec_waker_wake(s->w));
            CH_ASSERT_OK(coexec_thread_free(&s->t));
            total_unexplained += s->unexplained;
            stale[nstale++] = s->w;
        }
        sum_token_wakes += atomic_load(&g->token_wakes);
        sum_bare += atomic_load(&g->bare_wakes);
        sum_stale += atomic_load(&g->stale_wakes);
        sum_done += atomic_load(&g->done_wakes);
        free(g->p);
        free(g->s);
        free(g);
    }
    CH_ASSERT_EQ(bad_tokens, 0);
    CH_ASSERT_EQ(over_returns, 0);
    CH_ASSERT_EQ(changed, 0);
    CH_ASSERT_EQ(total_unexplained, 0);
    CH_ASSERT_EQ(total_tokens, (long)gens * NPARK * target);
    CH_ASSERT_EQ(sum_token_wakes, (long)gens * NPARK * target);
    printf("[%ld token wakes, %ld bare, %ld stale, %ld after finish, %ld park returns in %.2f s] ",
           sum_token_wakes, sum_bare, sum_stale, sum_done, total_returns, ch_now() - t0);
    free(stale);
    ch_finalize();
}

/* ======================================================================= */
/* pingpong                                                                 */
/* ======================================================================= */

typedef struct {
    coexec_eventual_t ping, pong;
    long rounds;
    atomic_long bad;
    long done_a, done_b;
} evpp_t;

static void evpp_a(void *arg)
{
    evpp_t *p = arg;
    for (long r = 0; r < p->rounds; r++) {
        CH_CHECK_RC(coexec_eventual_set(&p->ping, &r, sizeof r), COEXEC_OK);
        void *v = NULL;
        int rc = coexec_eventual_wait(&p->pong, &v);
        if (rc != COEXEC_OK || !v || *(long *)v != -r) {
            CH_CHECK_RC(rc, COEXEC_OK);
            atomic_fetch_add(&p->bad, 1);
            return;
        }
        CH_CHECK_RC(coexec_eventual_reset(&p->pong), COEXEC_OK);
        p->done_a++;
    }
}

static void evpp_b(void *arg)
{
    evpp_t *p = arg;
    for (long r = 0; r < p->rounds; r++) {
        void *v = NULL;
        int rc = coexec_eventual_wait(&p->ping, &v);
        if (rc != COEXEC_OK || !v || *(long *)v != r) {
            CH_CHECK_RC(rc, COEXEC_OK);
            atomic_fetch_add(&p->bad, 1);
            return;
        }
        CH_CHECK_RC(coexec_eventual_reset(&p->ping), COEXEC_OK);
        long back = -r;
        CH_CHECK_RC(coexec_eventual_set(&p->pong, &back, sizeof back), COEXEC_OK);
        p->done_b++;
    }
}

static void t_eventual_pingpong(void)
{
    ch_init(2);
    ch_stream_t s1, s2;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s1, COEXEC_SCHED_BASIC_WAIT));
    CH_ASSERT_OK_FATAL(ch_stream_create(&s2, COEXEC_SCHED_BASIC_WAIT));
    for (int variant = 0; variant < 2; variant++) {
        /* 0: ULTs on two streams; 1: a ULT and an external thread */
        evpp_t p;
        memset(&p, 0, sizeof p);
        p.rounds = ch_iters(variant ? 30000 : 100000, 500);
        CH_ASSERT_OK_FATAL(coexec_eventual_init(&p.ping, sizeof(long)));
        CH_ASSERT_OK_FATAL(coexec_eventual_init(&p.pong, sizeof(long)));
        double t0 = ch_now();
        coexec_thread_t ta, tb;
        ch_pthread_t th;
        CH_ASSERT_OK_FATAL(coexec_thread_create(s1.pool, evpp_a, &p, NULL, &ta));
        if (variant == 0)
            CH_ASSERT_OK_FATAL(coexec_thread_create(s2.pool, evpp_b, &p, NULL, &tb));
        else
            ch_pthread_run(&th, evpp_b, &p);
        CH_ASSERT_OK(coexec_thread_free(&ta));
        if (variant == 0)
            CH_ASSERT_OK(coexec_thread_free(&tb));
        else
            ch_pthread_join(&th);
        CH_ASSERT_EQ(atomic_load(&p.bad), 0);
        CH_ASSERT_EQ(p.done_a, p.rounds);
        CH_ASSERT_EQ(p.done_b, p.rounds);
        printf("[%s: %ld rounds in %.2f s] ", variant ? "ULT-thread" : "ULT-ULT", p.rounds,
               ch_now() - t0);
        CH_ASSERT_OK(coexec_eventual_destroy(&p.ping));
        CH_ASSERT_OK(coexec_eventual_destroy(&p.pong));
    }
    CH_ASSERT_OK(ch_stream_free(&s1));
    CH_ASSERT_OK(ch_stream_free(&s2));
    ch_finalize();
}

typedef struct {
    coexec_channel_t to_b, to_a;
    long rounds;
    atomic_long bad;
    long done_a, done_b;
} chpp_t;

static void chpp_a(void *arg)
{
    chpp_t *p = arg;
    for (long r = 0; r < p->rounds; r++) {
        uint64_t m = (uint64_t)r * 2654435761u, back = 0;
        CH_CHECK_RC(coexec_channel_send(&p->to_b, &m), COEXEC_OK);
        int rc = coexec_channel_recv(&p->to_a, &back);
        if (rc != COEXEC_OK || back != ~m) {
            CH_CHECK_RC(rc, COEXEC_OK);
            atomic_fetch_add(&p->bad, 1);
            return;
        }
        p->done_a++;
    }
}

static void chpp_b(void *arg)
{
    chpp_t *p = arg;
    for (long r = 0; r < p->rounds; r++) {
        uint64_t m = 0;
        int rc = coexec_channel_recv(&p->to_b, &m);
        if (rc != COEXEC_OK || m != (uint64_t)r * 2654435761u) {
            CH_CHECK_RC(rc, COEXEC_OK);
            atomic_fetch_add(&p->bad, 1);
            return;
        }
        m = ~m;
        CH_CHECK_RC(coexec_channel_send(&p->to_a, &m), COEXEC_OK);
        p->done_b++;
    }
}

static void t_channel_pingpong(void)
{
    ch_init(2);
    ch_stream_t s1, s2;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s1, COEXEC_SCHED_BASIC_WAIT));
    CH_ASSERT_OK_FATAL(ch_stream_create(&s2, COEXEC_SCHED_BASIC_WAIT));
    for (int variant = 0; variant < 2; variant++) {
        chpp_t p;
        memset(&p, 0, sizeof p);
        p.rounds = ch_iters(variant ? 30000 : 100000, 500);
        CH_ASSERT_OK_FATAL(coexec_channel_init(&p.to_b, sizeof(uint64_t), 1));
        CH_ASSERT_OK_FATAL(coexec_channel_init(&p.to_a, sizeof(uint64_t), 1));
        double t0 = ch_now();
        coexec_thread_t ta, tb;
        ch_pthread_t th;
        CH_ASSERT_OK_FATAL(coexec_thread_create(s1.pool, chpp_a, &p, NULL, &ta));
        if (variant == 0)
            CH_ASSERT_OK_FATAL(coexec_thread_create(s2.pool, chpp_b, &p, NULL, &tb));
        else
            ch_pthread_run(&th, chpp_b, &p);
        CH_ASSERT_OK(coexec_thread_free(&ta));
        if (variant == 0)
            CH_ASSERT_OK(coexec_thread_free(&tb));
        else
            ch_pthread_join(&th);
        CH_ASSERT_EQ(atomic_load(&p.bad), 0);
        CH_ASSERT_EQ(p.done_a, p.rounds);
        CH_ASSERT_EQ(p.done_b, p.rounds);
        size_t c1 = 9, c2 = 9;
        CH_ASSERT_OK(coexec_channel_count(&p.to_b, &c1));
        CH_ASSERT_OK(coexec_channel_count(&p.to_a, &c2));
        CH_ASSERT_EQ(c1 + c2, 0);
        printf("[%s: %ld rounds in %.2f s] ", variant ? "ULT-thread" : "ULT-ULT", p.rounds,
               ch_now() - t0);
        CH_ASSERT_OK(coexec_channel_destroy(&p.to_b));
        CH_ASSERT_OK(coexec_channel_destroy(&p.to_a));
    }
    CH_ASSERT_OK(ch_stream_free(&s1));
    CH_ASSERT_OK(ch_stream_free(&s2));
    ch_finalize();
}

/* ======================================================================= */

static const ch_test_t lost_wakeup_tests[] = {{"token_storm", t_token_storm}, {NULL, NULL}};
static const ch_test_t pingpong_tests[] = {{"eventual_pingpong", t_eventual_pingpong},
                                           {"channel_pingpong", t_channel_pingpong},
                                           {NULL, NULL}};

static const ch_suite_t suites[] = {{"lost_wakeup", lost_wakeup_tests},
                                    {"pingpong", pingpong_tests},
                                    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
