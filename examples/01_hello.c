/*
 * 01_hello.c: the smallest complete libcoexec program.
 *
 * The concepts, in plain sentences:
 *
 *   - An execution stream (xstream) is one OS thread, pinned to a core, that
 *     runs a scheduler. The thread that calls coexec_init becomes the primary
 *     xstream (rank 0); its code from there on is the primary's "main ULT".
 *   - A pool is a queue of units that are ready to run.
 *   - A scheduler is the loop an xstream runs: it takes the next unit from
 *     its pools and runs it until the unit finishes, yields or blocks.
 *   - A user-level thread (ULT) is a unit with its own small stack. It can
 *     yield, join other units and block, and switching between ULTs costs a
 *     few function calls, not a system call. (A tasklet is the stackless
 *     kind of unit; see 03_tasklets.c.)
 *   - Joining a unit waits for it to finish. If it has not started yet, the
 *     joiner does not wait at all: it runs the unit at once, in place.
 *   - A unit created without a handle (out == NULL) is detached: nobody
 *     joins it and it is freed as soon as it finishes. Here every ULT is
 *     joinable, because main wants to read what each one recorded.
 *
 * What this program does: it starts the runtime with the primary xstream
 * only, creates three secondary xstreams at run time, puts one ULT on each
 * of the four streams, and lets each ULT record the rank of the stream it
 * ran on and its own unit id. Main prints the records in order once every
 * ULT is done, so the output does not depend on which ULT finished first.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <coexec.h>

/* Every libcoexec call returns COEXEC_OK (0) or a negative error code. */
#define CHECK(call)                                                            \
    do {                                                                       \
        int rc_ = (call);                                                      \
        if (rc_ != COEXEC_OK) {                                                \
            fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, \
                    #call, coexec_err_name(rc_), coexec_strerror(rc_));        \
            exit(EXIT_FAILURE);                                                \
        }                                                                      \
    } while (0)

#define NUM_STREAMS 4 /* the primary and three secondary xstreams */

/* What each ULT records; main reads it after the join. */
struct hello {
    int index;   /* which stream main sent this ULT to */
    int rank;    /* the rank of the stream it actually ran on */
    uint64_t id; /* its unit id: unique, never 0 */
};

static atomic_int finished; /* how many ULTs have recorded their line */

/* The body of every ULT. It runs on the stack the runtime gave it. */
static void hello_fn(void *arg)
{
    struct hello *h = arg;
    CHECK(coexec_xstream_self_rank(&h->rank));
    CHECK(coexec_self_id(&h->id));
    atomic_fetch_add_explicit(&finished, 1, memory_order_release);
}

int main(void)
{
    /*
     * Start the runtime with one stream, the primary. (COEXEC_NUM_XSTREAMS
     * in the environment could ask for more; the program still works, the
     * ranks printed below are simply different.)
     */
    coexec_config_t cfg;
    CHECK(coexec_config_init(&cfg));
    cfg.num_xstreams = 1;
    int rc = coexec_init(&cfg);
    if (rc != COEXEC_OK) {
        fprintf(stderr, "coexec_init failed: %s (%s) %s\n", coexec_err_name(rc),
                coexec_strerror(rc), coexec_init_error());
        return EXIT_FAILURE;
    }

    coexec_xstream_t xs[NUM_STREAMS];
    coexec_sched_t sched[NUM_STREAMS];
    coexec_pool_t pool[NUM_STREAMS];
    CHECK(coexec_xstream_self(&xs[0]));

    /*
     * Create three secondary xstreams. Passing attr == NULL would give each
     * the default setup: a pool of its own plus a scheduler that steals work
     * from the other streams when it is idle. Stealing is what you want in a
     * real program, but here it could move a ULT to another stream and make
     * the output vary from run to run. So each stream gets a scheduler we
     * build by hand, over one pool of its own, with stealing off:
     *   - the pool is FIFO and MPSC: any thread may push into it (main does),
     *     only one thread pops from it (the stream's scheduler);
     *   - BASIC_WAIT parks the stream when its pool is empty, so an idle
     *     stream burns no CPU, and a push into the pool wakes it.
     */
    for (int i = 1; i < NUM_STREAMS; i++) {
        coexec_sched_config_t scfg;
        CHECK(coexec_sched_config_init(&scfg));
        scfg.steal = 0;
        CHECK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPSC,
                                 &pool[i]));
        CHECK(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &pool[i], 1, &scfg,
                                  &sched[i]));
        coexec_xstream_attr_t attr;
        CHECK(coexec_xstream_attr_init(&attr));
        attr.sched = sched[i];
        CHECK(coexec_xstream_create(&attr, &xs[i]));
    }

    /*
     * One ULT per stream. coexec_thread_create_on queues the ULT into the
     * main pool of the given stream; it runs when that stream's scheduler
     * gets to it. Creating a ULT never switches: main keeps running.
     */
    struct hello rec[NUM_STREAMS];
    coexec_thread_t ult[NUM_STREAMS];
    for (int i = 0; i < NUM_STREAMS; i++) {
        rec[i].index = i;
        rec[i].rank = -1;
        rec[i].id = 0;
        CHECK(coexec_thread_create_on(xs[i], hello_fn, &rec[i], NULL, &ult[i]));
    }

    /*
     * Joining right now would be correct, but a ULT that had not started yet
     * would then run in place, here on the primary, and report rank 0. To see
     * each ULT on its own stream we first let them all finish. coexec_yield
     * gives the primary's scheduler a turn, which runs the ULT we queued on
     * the primary; the secondary streams run theirs in parallel.
     */
    while (atomic_load_explicit(&finished, memory_order_acquire) < NUM_STREAMS)
        CHECK(coexec_yield());

    /*
     * coexec_thread_free joins (a no-op now: they have all finished), then
     * releases the ULT's descriptor and stack and clears the handle.
     */
    int all_home = 1;
    for (int i = 0; i < NUM_STREAMS; i++) {
        int expected;
        CHECK(coexec_thread_free(&ult[i]));
        CHECK(coexec_xstream_get_rank(xs[i], &expected));
        printf("ULT %d: hello from xstream rank %d (unit id %llu)\n", i,
               rec[i].rank, (unsigned long long)rec[i].id);
        if (rec[i].rank != expected || rec[i].id == 0)
            all_home = 0;
    }

    /*
     * Free the secondary streams: coexec_xstream_free waits until the
     * stream's pools are empty, stops its OS thread and frees it. The
     * scheduler and pool we made ourselves are ours to free afterwards, in
     * that order (a pool cannot be freed while a scheduler uses it).
     */
    for (int i = 1; i < NUM_STREAMS; i++) {
        CHECK(coexec_xstream_free(&xs[i]));
        CHECK(coexec_sched_free(&sched[i]));
        CHECK(coexec_pool_free(&pool[i]));
    }

    CHECK(coexec_finalize());

    if (!all_home) {
        printf("hello: FAILED, a ULT did not run on the stream it was sent to\n");
        return EXIT_FAILURE;
    }
    printf("hello: %d ULTs ran, each on its own xstream\n", NUM_STREAMS);
    return EXIT_SUCCESS;
}
