/*
 * 08_stacked_schedulers.c: a scheduler inside a pool of another one.
 *
 * One secondary xstream does two kinds of work:
 *
 *   - batch: four long computations, each split into slices with a yield
 *     between them;
 *   - requests: small tasks that arrive now and then from another stream
 *     and should not wait behind the batch.
 *
 * Its main scheduler (BASIC_WAIT) serves one pool, `top`. In `top` sits a
 * PRIO scheduler over two pools, `latency` (first: served first) and
 * `batch` (with aging, so the batch still moves while requests keep
 * coming). coexec_pool_add_sched makes the PRIO scheduler a unit of `top`:
 * when the main scheduler takes it, it runs a few of its own units, then
 * yields back. Other units could share `top` with it; here it is alone.
 *
 * A request notes how many batch slices ran between its submission and
 * its start: with the requests' pool first, only the slice running at that
 * moment should come in between. The program checks that every request
 * ran (under the PRIO scheduler, on the stream), that every batch result
 * is right, and that coexec_sched_finish lets the stack unwind.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

#define N_BATCH 4
#define SLICES 200     /* per batch job */
#define N_REQUESTS 20

static coexec_sched_t prio; /* the stacked scheduler */
static atomic_long slices_done;

/* ---- batch: sum of i*i over a range, one slice at a time ------------------- */

struct batch {
    long from, to; /* [from, to) */
    unsigned long long sum;
};

static void batch_main(void *arg)
{
    struct batch *b = arg;
    long per = (b->to - b->from) / SLICES;
    for (int s = 0; s < SLICES; s++) {
        long lo = b->from + s * per, hi = s + 1 == SLICES ? b->to : lo + per;
        for (long i = lo; i < hi; i++)
            b->sum += (unsigned long long)i * (unsigned long long)i;
        atomic_fetch_add(&slices_done, 1);
        CHECK(coexec_yield()); /* let requests in */
    }
}

/* ---- requests ------------------------------------------------------------------ */

struct request {
    long submitted_at; /* slices_done when it was submitted */
    long waited;       /* batch slices that ran before it started */
    int on_prio;       /* it ran under the stacked scheduler */
    atomic_int done;
};

static coexec_poll_status_t request_main(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    struct request *r = arg;
    r->waited = atomic_load(&slices_done) - r->submitted_at;
    coexec_sched_t s;
    r->on_prio = coexec_sched_self(&s) == COEXEC_OK && s.p == prio.p &&
                 s.gen == prio.gen;
    atomic_store(&r->done, 1);
    return COEXEC_READY;
}

static void pause_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

int main(void)
{
    CHECK(coexec_init(NULL));

    /* The pools: the PRIO scheduler's two, and the main scheduler's one. */
    coexec_pool_t latency, batch, top;
    CHECK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &latency));
    CHECK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &batch));
    CHECK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &top));

    /* The stacked scheduler: requests first; a batch slice gets its turn
     * after at most 8 requests. */
    coexec_sched_config_t cfg;
    CHECK(coexec_sched_config_init(&cfg));
    cfg.aging = 8;
    coexec_pool_t mine[2] = {latency, batch};
    CHECK(coexec_sched_create(COEXEC_SCHED_PRIO, mine, 2, &cfg, &prio));
    CHECK(coexec_pool_add_sched(top, prio));

    /* The stream's main scheduler serves `top`, hence the PRIO one. */
    coexec_sched_t main_sched;
    CHECK(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &top, 1, NULL, &main_sched));
    coexec_xstream_attr_t attr;
    CHECK(coexec_xstream_attr_init(&attr));
    attr.sched = main_sched;
    coexec_xstream_t xs;
    CHECK(coexec_xstream_create(&attr, &xs));

    /* Batch work first, then requests now and then from this stream. */
    struct batch jobs[N_BATCH];
    coexec_thread_t bt[N_BATCH];
    for (int i = 0; i < N_BATCH; i++) {
        jobs[i] = (struct batch){i * 200000L, (i + 1) * 200000L, 0};
        CHECK(coexec_thread_create(batch, batch_main, &jobs[i], NULL, &bt[i]));
    }
    static struct request req[N_REQUESTS];
    for (int i = 0; i < N_REQUESTS; i++) {
        pause_us(200);
        req[i].submitted_at = atomic_load(&slices_done);
        CHECK(coexec_tasklet_create(latency, request_main, &req[i], NULL));
    }
    /* Wait for the batch (a join of a job that had not started would run
     * it here, in place), then join and free the jobs. */
    while (atomic_load(&slices_done) < N_BATCH * SLICES)
        CHECK(coexec_yield());
    for (int i = 0; i < N_BATCH; i++)
        CHECK(coexec_thread_free(&bt[i]));
    for (int i = 0; i < N_REQUESTS; i++)
        while (!atomic_load(&req[i].done))
            CHECK(coexec_yield());

    /* Unwind: the stacked scheduler finishes (its pools are empty) and
     * leaves `top`; then the stream is joined. */
    CHECK(coexec_sched_finish(prio));
    int rc;
    while ((rc = coexec_sched_free(&prio)) == COEXEC_EBUSY)
        CHECK(coexec_yield());
    CHECK(rc);
    CHECK(coexec_xstream_free(&xs));
    CHECK(coexec_sched_free(&main_sched));
    CHECK(coexec_pool_free(&top));
    CHECK(coexec_pool_free(&batch));
    CHECK(coexec_pool_free(&latency));
    CHECK(coexec_finalize());

    int ok = 1;
    long max_wait = 0, total_wait = 0;
    for (int i = 0; i < N_REQUESTS; i++) {
        ok &= req[i].on_prio;
        total_wait += req[i].waited;
        if (req[i].waited > max_wait)
            max_wait = req[i].waited;
    }
    for (int i = 0; i < N_BATCH; i++) {
        unsigned long long want = 0;
        for (long k = jobs[i].from; k < jobs[i].to; k++)
            want += (unsigned long long)k * (unsigned long long)k;
        ok &= jobs[i].sum == want;
    }
    ok &= atomic_load(&slices_done) == N_BATCH * SLICES;
    printf("%d batch jobs (%d slices each) and %d requests on one stream\n",
           N_BATCH, SLICES, N_REQUESTS);
    printf("batch slices run between a request's submission and its start: "
           "%.1f on average, at most %ld\n",
           (double)total_wait / N_REQUESTS, max_wait);
    if (!ok) {
        printf("stacked_schedulers: FAILED\n");
        return EXIT_FAILURE;
    }
    printf("stacked_schedulers: all checks passed\n");
    return EXIT_SUCCESS;
}
