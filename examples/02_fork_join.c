/*
 * 02_fork_join.c: recursive fork-join with ULTs, the classic Fibonacci.
 *
 * Usage: 02_fork_join [n]      (default n = 20, at most 35)
 *
 * fib(n) = fib(n-1) + fib(n-2). Each call with n >= 2 forks a ULT for
 * fib(n-1), computes fib(n-2) itself, then joins the ULT and frees it. The
 * result is checked against a plain loop.
 *
 * Why this stays cheap even though fib(20) creates over ten thousand ULTs:
 *
 *   - The default setup gives each xstream a LIFO pool: its scheduler takes
 *     the newest unit first. The newest unit is the deepest call of the
 *     recursion, so each stream works depth-first, like ordinary recursion,
 *     and only about n ULTs per stream are alive at any time.
 *   - Joining a ULT that has not started does not wait: the joiner runs it
 *     at once, in place. In the common case nobody else took the child, so
 *     fork + join costs little more than a function call.
 *   - An idle stream steals, and it steals the oldest unit of another
 *     stream's pool: the one the owner would take last. The oldest unit is
 *     the shallowest call, i.e. the biggest piece of work left, so a single
 *     steal keeps the thief busy for a long time, and the owner's
 *     depth-first order is not disturbed.
 *   - A ULT takes its stack only when it first runs, so the children still
 *     waiting in a pool cost a small descriptor each, not a stack.
 *
 * The program counts on which stream each ULT started (and how many ended
 * on another one: a join that waits parks the ULT, and a parked ULT may
 * resume on any stream that takes it), and prints the streams' own
 * counters (coexec/stats.h): what they ran, stole, and had stolen.
 */
#include <errno.h>
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

/* The argument and the result of one fib call, shared with its ULT. */
struct fib_arg {
    int n;
    unsigned long long result;
};

/* ULTs that started on each stream (indexed by rank), and ULTs that
 * finished on another stream than the one they started on. */
static atomic_ulong *started_on;
static atomic_ulong moved;

static unsigned long long fib(int n);

/* The body of a forked ULT: compute fib(a->n) and leave it in a->result. */
static void fib_ult(void *arg)
{
    struct fib_arg *a = arg;
    int first, last;
    CHECK(coexec_xstream_self_rank(&first));
    atomic_fetch_add_explicit(&started_on[first], 1, memory_order_relaxed);
    a->result = fib(a->n);
    CHECK(coexec_xstream_self_rank(&last));
    if (last != first)
        atomic_fetch_add_explicit(&moved, 1, memory_order_relaxed);
}

static unsigned long long fib(int n)
{
    if (n < 2)
        return (unsigned long long)n;

    /*
     * Fork: queue a ULT for fib(n-1) into the main pool of the stream we are
     * running on. The argument lives in this stack frame, which is fine
     * because we join the ULT before returning.
     */
    coexec_xstream_t self;
    coexec_pool_t pool;
    CHECK(coexec_xstream_self(&self));
    CHECK(coexec_xstream_get_main_pool(self, &pool));
    struct fib_arg child = {.n = n - 1, .result = 0};
    coexec_thread_t t;
    CHECK(coexec_thread_create(pool, fib_ult, &child, NULL, &t));

    /* Meanwhile, do the other half ourselves. */
    unsigned long long right = fib(n - 2);

    /*
     * Join: if another stream stole the child, we wait for it (our stream
     * runs other units meanwhile); if not, it runs right here, in place.
     * coexec_thread_free joins first, so the separate join call is only here
     * to make the step visible.
     */
    CHECK(coexec_thread_join(t));
    CHECK(coexec_thread_free(&t));
    return child.result + right;
}

static unsigned long long fib_loop(int n)
{
    unsigned long long a = 0, b = 1;
    for (int i = 0; i < n; i++) {
        unsigned long long c = a + b;
        a = b;
        b = c;
    }
    return a;
}

int main(int argc, char **argv)
{
    int n = 20;
    if (argc > 1) {
        char *end;
        errno = 0;
        long v = strtol(argv[1], &end, 10);
        if (errno || *end || end == argv[1] || v < 0 || v > 35) {
            fprintf(stderr, "usage: %s [n]   (0 <= n <= 35)\n", argv[0]);
            return EXIT_FAILURE;
        }
        n = (int)v;
    }

    /*
     * Two xstreams: the primary (this thread) and one secondary, both with
     * the default setup (a LIFO pool each, stealing on).
     */
    coexec_config_t cfg;
    CHECK(coexec_config_init(&cfg));
    cfg.num_xstreams = 2;
    CHECK(coexec_init(&cfg));
    int nxs;
    CHECK(coexec_xstream_get_num(&nxs));
    started_on = calloc((size_t)nxs, sizeof *started_on);
    if (!started_on) {
        fprintf(stderr, "out of memory\n");
        return EXIT_FAILURE;
    }

    /* main is itself a ULT (the primary's main ULT), so it may fork and join.
     * The counters start from zero here, so they count the fib only. */
    CHECK(coexec_stats_reset());
    unsigned long long got = fib(n);
    unsigned long long want = fib_loop(n);

    /* Every call with n >= 2 forks one ULT: fib(n + 1) - 1 of them. A unit
     * run is a start or a resume: a join that runs its child in place
     * counts two, the child's start and the parent's resume. */
    unsigned long long ults = fib_loop(n + 1) - 1, counted = 0;
    printf("fib(%d) forked %llu ULTs on %d xstreams:\n", n, ults, nxs);
    for (int r = 0; r < nxs; r++) {
        coexec_xstream_t xs;
        coexec_xstream_stats_t st = {.size = sizeof st};
        CHECK(coexec_xstream_by_rank(r, &xs));
        CHECK(coexec_xstream_get_stats(xs, &st));
        unsigned long here = atomic_load(&started_on[r]);
        printf("  xstream %d: %lu ULTs started here, %llu unit runs, "
               "%llu steals, %llu stolen\n",
               r, here, (unsigned long long)st.units_run,
               (unsigned long long)st.steals, (unsigned long long)st.stolen);
        counted += here;
    }
    printf("  %lu ULTs finished on another xstream than they started on\n",
           atomic_load(&moved));
    free(started_on);

    CHECK(coexec_finalize());

    if (got != want || counted != ults) {
        printf("fib(%d) = %llu: FAILED, expected %llu (%llu of %llu ULTs "
               "counted)\n",
               n, got, want, counted, ults);
        return EXIT_FAILURE;
    }
    printf("fib(%d) = %llu (ok)\n", n, got);
    return EXIT_SUCCESS;
}
