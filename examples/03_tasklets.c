/*
 * 03_tasklets.c: tasklets, the stackless kind of unit.
 *
 * A ULT has a stack of its own, so it can stop in the middle of its
 * function (yield, join, block) and continue later from the same point. A
 * tasklet has no stack: its function runs on the stack of the scheduler that
 * picked it, and it must return before anything else can run on that
 * stream. That makes a tasklet cheaper to create and to run, and fine for
 * short run-to-completion work. A tasklet may not block: yield, join and the
 * other blocking calls return COEXEC_ECONTEXT inside one.
 *
 * A tasklet can still wait for something, in the style of a future or a
 * poll function: instead of blocking, its function stores a "waker" and
 * returns COEXEC_PENDING. Whoever produces what it waits for later calls
 * coexec_waker_wake, and the scheduler then calls the function again (polls
 * it again). Since there is no stack to keep local variables across the
 * wait, the tasklet keeps its progress in its argument: a small state
 * machine.
 *
 * Part 1 sums an array with a batch of joinable tasklets and prints the
 * order they ran in and where, then shows detached tasklets. Part 2 runs
 * one state-machine tasklet that is woken by a ULT on another stream, and
 * prints the steps of the two sides in the order they happened.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <coexec.h>

#define CHECK(call)                                                            \
    do {                                                                       \
        int rc_ = (call);                                                      \
        if (rc_ != COEXEC_OK) {                                                \
            fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, \
                    #call, coexec_err_name(rc_), coexec_strerror(rc_));        \
            exit(EXIT_FAILURE);                                                \
        }                                                                      \
    } while (0)

/* ------------------------------------------------------------------------ */
/* Part 1: run-to-completion tasklets                                       */
/* ------------------------------------------------------------------------ */

#define N_ELEMS (1 << 16)
#define N_SLICES 8
#define N_DETACHED 16

static unsigned data[N_ELEMS];

struct slice {
    size_t begin, end;
    unsigned long long sum;
    int queued_on; /* the stream it was created on */
    int ran_on;    /* the stream that ran it */
    int turn;      /* 0 for the first slice to run, 1 for the next, ... */
};

static atomic_int turns; /* slices that have started */

/* Sums one slice and is done: it returns COEXEC_READY on its first poll. */
static coexec_poll_status_t sum_slice(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    struct slice *s = arg;
    s->turn = atomic_fetch_add(&turns, 1);
    CHECK(coexec_xstream_self_rank(&s->ran_on));
    unsigned long long sum = 0;
    for (size_t i = s->begin; i < s->end; i++)
        sum += data[i];
    s->sum = sum;
    return COEXEC_READY;
}

static atomic_int detached_done;

/* A detached tasklet: counts itself in its stream's slot of arg. */
static coexec_poll_status_t count_one(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    atomic_int *ran_on = arg;
    int rank;
    CHECK(coexec_xstream_self_rank(&rank));
    atomic_fetch_add(&ran_on[rank], 1);
    atomic_fetch_add_explicit(&detached_done, 1, memory_order_release);
    return COEXEC_READY;
}

static int part1(const coexec_xstream_t *xs, int nxs)
{
    for (size_t i = 0; i < N_ELEMS; i++)
        data[i] = (unsigned)(i % 1000);

    /*
     * Create one tasklet per slice, spread over the streams. Creating a
     * tasklet only queues it; the streams' schedulers run them.
     */
    struct slice sl[N_SLICES];
    coexec_tasklet_t k[N_SLICES];
    for (int i = 0; i < N_SLICES; i++) {
        sl[i].begin = (size_t)i * N_ELEMS / N_SLICES;
        sl[i].end = (size_t)(i + 1) * N_ELEMS / N_SLICES;
        sl[i].sum = 0;
        sl[i].queued_on = i % nxs;
        sl[i].ran_on = sl[i].turn = -1;
        CHECK(coexec_tasklet_create_on(xs[i % nxs], sum_slice, &sl[i], &k[i]));
    }

    /*
     * Join them. A tasklet some stream has already run is simply finished;
     * one that has not started yet is run right here, in place, by the
     * join. Either way, after the join its slice sum is ready. Then free
     * each one (coexec_tasklet_free alone would also have joined).
     */
    unsigned long long total = 0;
    for (int i = 0; i < N_SLICES; i++) {
        CHECK(coexec_tasklet_join(k[i]));
        CHECK(coexec_tasklet_free(&k[i]));
        total += sl[i].sum;
    }

    unsigned long long want = 0;
    for (size_t i = 0; i < N_ELEMS; i++)
        want += data[i];
    if (total != want) {
        printf("sum: FAILED, got %llu, expected %llu\n", total, want);
        return 0;
    }
    printf("sum of %d elements by %d tasklets = %llu (ok)\n", N_ELEMS,
           N_SLICES, total);

    /*
     * The order they ran in. A slice queued on another stream than the one
     * that ran it was taken by a join (which runs a queued tasklet in
     * place) or by a stealing scheduler. Each one ran exactly once.
     */
    int by_turn[N_SLICES];
    for (int i = 0; i < N_SLICES; i++)
        by_turn[i] = -1;
    for (int i = 0; i < N_SLICES; i++) {
        if (sl[i].turn < 0 || sl[i].turn >= N_SLICES ||
            by_turn[sl[i].turn] != -1) {
            printf("order: FAILED, slice %d ran on turn %d\n", i, sl[i].turn);
            return 0;
        }
        by_turn[sl[i].turn] = i;
    }
    printf("the slices in the order they started:\n");
    for (int t = 0; t < N_SLICES; t++) {
        const struct slice *s = &sl[by_turn[t]];
        printf("  %d. slice %d, queued on xstream %d, ran on xstream %d\n",
               t + 1, by_turn[t], s->queued_on, s->ran_on);
    }

    /*
     * Detached tasklets: passing NULL instead of a handle pointer means
     * "fire and forget". There is nothing to join or free; the runtime frees
     * each one when it finishes. The program learns that they are done
     * through its own data, here a counter. coexec_yield lets this stream's
     * scheduler run the queued ones meanwhile.
     */
    atomic_int *ran_on = calloc((size_t)nxs, sizeof *ran_on);
    if (!ran_on) {
        fprintf(stderr, "out of memory\n");
        return 0;
    }
    for (int i = 0; i < N_DETACHED; i++)
        CHECK(coexec_tasklet_create_on(xs[i % nxs], count_one, ran_on, NULL));
    while (atomic_load_explicit(&detached_done, memory_order_acquire) <
           N_DETACHED)
        CHECK(coexec_yield());
    printf("%d detached tasklets ran:", N_DETACHED);
    for (int r = 0; r < nxs; r++)
        printf(" %d on xstream %d%s", atomic_load(&ran_on[r]), r,
               r + 1 < nxs ? "," : "\n");
    free(ran_on);
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Part 2: a tasklet that waits, as a tiny state machine                    */
/* ------------------------------------------------------------------------ */

enum machine_state {
    WANT_VALUE, /* first poll: nothing to work on yet */
    WAITING,    /* the waker is handed out; wait for the value */
    DONE
};

/*
 * The steps of both sides, in the order they happened: each side appends
 * one as it goes (the atomic counter gives each its place), and main
 * prints them after the join.
 */
enum step { POLL_PENDING, PRODUCE, POLL_READY, N_STEPS };
static const char *const step_text[N_STEPS] = {
    [POLL_PENDING] = "tasklet: no value yet; stores its waker, PENDING",
    [PRODUCE] = "producer: publishes the value, wakes the tasklet",
    [POLL_READY] = "tasklet: polled again; reads the value, READY",
};
static struct {
    atomic_int n;
    enum step step[N_STEPS];
    int rank[N_STEPS];
} steps;

static void step(enum step what)
{
    int i = atomic_fetch_add(&steps.n, 1);
    if (i < N_STEPS) {
        steps.step[i] = what;
        CHECK(coexec_xstream_self_rank(&steps.rank[i]));
    }
}

struct machine {
    /* Touched only by the tasklet's function (main reads them after join). */
    enum machine_state state;
    int polls;
    int result;
    /* The hand-over between the tasklet and the producer ULT. */
    coexec_waker_t waker;   /* written by the tasklet before waker_ready */
    atomic_int waker_ready; /* 1 once the waker may be used */
    int value;              /* written by the producer before value_ready */
    atomic_int value_ready; /* 1 once the value may be read */
};

/*
 * The tasklet's function. Every call ("poll") looks at the saved state,
 * makes what progress it can, and either returns COEXEC_READY (finished) or
 * COEXEC_PENDING (call me again once my waker has been woken).
 */
static coexec_poll_status_t machine_poll(coexec_poll_t *cx, void *arg)
{
    struct machine *m = arg;
    m->polls++;
    switch (m->state) {
    case WANT_VALUE:
        /*
         * We need a value that another unit will produce. Store our waker
         * where the producer can find it, then return PENDING. The runtime
         * will not poll us again until someone wakes the waker. If the wake
         * comes early, even before we have returned, it is recorded and not
         * lost: we are then polled again at once.
         */
        CHECK(coexec_poll_waker(cx, &m->waker));
        m->state = WAITING;
        step(POLL_PENDING);
        atomic_store_explicit(&m->waker_ready, 1, memory_order_release);
        return COEXEC_PENDING;
    case WAITING:
        /*
         * We have been woken. Still check the condition we wait for, as any
         * poll function should: if the value were not there, returning
         * PENDING again would simply wait for the next wake.
         */
        if (!atomic_load_explicit(&m->value_ready, memory_order_acquire))
            return COEXEC_PENDING;
        step(POLL_READY);
        m->result = m->value * 2;
        m->state = DONE;
        return COEXEC_READY;
    case DONE:
        break;
    }
    return COEXEC_READY;
}

/*
 * The producer: an ordinary ULT. It waits (politely, yielding) until the
 * tasklet has handed out its waker, publishes the value, and wakes the
 * tasklet. The order matters: value first, then the wake.
 */
static void producer(void *arg)
{
    struct machine *m = arg;
    while (!atomic_load_explicit(&m->waker_ready, memory_order_acquire))
        CHECK(coexec_yield());
    step(PRODUCE);
    m->value = 21;
    atomic_store_explicit(&m->value_ready, 1, memory_order_release);
    CHECK(coexec_waker_wake(m->waker));
}

static int part2(const coexec_xstream_t *xs, int nxs)
{
    struct machine m = {.state = WANT_VALUE, .polls = 0, .result = 0,
                        .value = 0};
    atomic_init(&m.waker_ready, 0);
    atomic_init(&m.value_ready, 0);

    /*
     * The tasklet goes to the last stream, the producer to the primary, so
     * that the wake normally crosses from one OS thread to another. (With
     * stealing the runtime may move either one; the result is the same.)
     */
    coexec_tasklet_t k;
    coexec_thread_t p;
    CHECK(coexec_tasklet_create_on(xs[nxs - 1], machine_poll, &m, &k));
    CHECK(coexec_thread_create_on(xs[0], producer, &m, NULL, &p));

    /*
     * Joining a tasklet waits until it has returned COEXEC_READY, however
     * many polls that takes. While main waits, the primary's scheduler is
     * free to run the producer.
     */
    CHECK(coexec_tasklet_free(&k));
    CHECK(coexec_thread_free(&p));

    /*
     * Exactly two polls: the first stored the waker, and a tasklet is polled
     * again only after a wake, which the producer sends once, after the
     * value was published. So the steps can only come in one order.
     */
    int n = atomic_load(&steps.n), in_order = n == N_STEPS;
    printf("the steps of the tasklet and the producer, in order:\n");
    for (int i = 0; i < n && i < N_STEPS; i++) {
        printf("  %d. on xstream %d, %s\n", i + 1, steps.rank[i],
               step_text[steps.step[i]]);
        in_order &= steps.step[i] == (enum step)i;
    }
    if (m.state != DONE || m.result != 42 || m.polls != 2 || !in_order) {
        printf("state machine: FAILED (state %d, result %d, %d polls, %d "
               "steps%s)\n",
               (int)m.state, m.result, m.polls, n,
               in_order ? "" : " out of order");
        return 0;
    }
    printf("state machine: result %d, finished on poll %d (ok)\n", m.result,
           m.polls);
    return 1;
}

int main(void)
{
    coexec_config_t cfg;
    CHECK(coexec_config_init(&cfg));
    cfg.num_xstreams = 2;
    CHECK(coexec_init(&cfg));

    /* The streams started by init have ranks 0 .. nxs-1. */
    int nxs;
    CHECK(coexec_xstream_get_num(&nxs));
    coexec_xstream_t *xs = calloc((size_t)nxs, sizeof *xs);
    if (!xs) {
        fprintf(stderr, "out of memory\n");
        return EXIT_FAILURE;
    }
    for (int r = 0; r < nxs; r++)
        CHECK(coexec_xstream_by_rank(r, &xs[r]));

    int ok = part1(xs, nxs) && part2(xs, nxs);

    free(xs);
    CHECK(coexec_finalize());
    if (!ok)
        return EXIT_FAILURE;
    printf("tasklets: all checks passed\n");
    return EXIT_SUCCESS;
}
