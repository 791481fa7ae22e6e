/*
 * 09_fj_tasks.c: the fork-join tier (coexec/fj.h): the same Fibonacci as
 * 02_fork_join, with a fork-join task per call instead of a ULT, then a
 * parallel loop and a parallel reduction over an array.
 *
 * Usage: 09_fj_tasks [n]      (default n = 30, at most 40)
 *
 * A spawn writes a 64-byte record into the running stream's deque; the
 * sync finds it there and calls the task inline, unless an idle stream
 * stole it. So fib(30)'s 1.3 million spawns cost a few milliseconds, where
 * a ULT per call costs tens. The program prints how many of the loop's
 * chunks ran on each stream: with more than one stream, idle ones stole.
 */
#include <math.h>
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

/* A task: long fib(int n). Inside it, SPAWN forks, CALL is a plain call
 * and SYNC joins the latest spawn, giving its result. */
COEXEC_FJ_TASK_1(long, fib, int, n)
{
    if (n < 2)
        return n;
    COEXEC_FJ_SPAWN(fib, n - 1);
    long b = COEXEC_FJ_CALL(fib, n - 2);
    long a = COEXEC_FJ_SYNC(fib);
    return a + b;
}

#define N 1000000
#define MAX_STREAMS 64

struct loop {
    double *x;
    int chunks[MAX_STREAMS]; /* chunks run by each stream */
};

/* coexec_parallel_for's body: one chunk [begin, end) of the indices. */
static void fill(int64_t begin, int64_t end, void *arg)
{
    struct loop *l = arg;
    for (int64_t i = begin; i < end; i++)
        l->x[i] = sqrt((double)i);
    int rank = 0;
    if (coexec_xstream_self_rank(&rank) == COEXEC_OK && rank < MAX_STREAMS)
        __atomic_fetch_add(&l->chunks[rank], 1, __ATOMIC_RELAXED);
}

/* coexec_parallel_reduce's body and combine: a sum of the array. */
static void sum(int64_t begin, int64_t end, void *acc, void *arg)
{
    const double *x = arg;
    double s = 0;
    for (int64_t i = begin; i < end; i++)
        s += x[i];
    *(double *)acc += s;
}

static void add(void *acc, const void *other, void *arg)
{
    (void)arg;
    *(double *)acc += *(const double *)other;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 30;
    if (n < 0 || n > 40) {
        fprintf(stderr, "usage: %s [n]   (0 <= n <= 40)\n", argv[0]);
        return EXIT_FAILURE;
    }
    /* Four streams (COEXEC_NUM_XSTREAMS overrides it). */
    coexec_config_t cfg;
    CHECK(coexec_config_init(&cfg));
    cfg.num_xstreams = 4;
    CHECK(coexec_init(&cfg));

    /* A region opened from the main ULT; idle streams steal from it. */
    long r = 0;
    CHECK(COEXEC_FJ_RUN(fib, &r, n));
    long a = 0, b = 1;
    for (int i = 0; i < n; i++) {
        long t = a + b;
        a = b;
        b = t;
    }
    printf("fib(%d) = %ld (a loop says %ld)\n", n, r, a);
    if (r != a)
        return EXIT_FAILURE;

    static struct loop l;
    l.x = malloc(N * sizeof *l.x);
    if (!l.x)
        return EXIT_FAILURE;
    CHECK(coexec_parallel_for(0, N, 0, fill, &l));
    int streams = 0;
    CHECK(coexec_xstream_get_num(&streams));
    int total = 0;
    for (int s = 0; s < streams && s < MAX_STREAMS; s++) {
        printf("parallel_for: stream %d ran %d chunk(s)\n", s, l.chunks[s]);
        total += l.chunks[s];
    }

    double zero = 0, got = 0, want = 0;
    CHECK(coexec_parallel_reduce(0, N, 0, &got, sizeof got, &zero, sum, add,
                                 l.x));
    for (int64_t i = 0; i < N; i++)
        want += l.x[i];
    printf("parallel_reduce: sum of sqrt(0..%d) = %.6e (serial %.6e)\n", N - 1,
           got, want);
    free(l.x);
    if (fabs(got - want) > 1e-9 * want || total < 1)
        return EXIT_FAILURE;
    CHECK(coexec_finalize());
    printf("fj_tasks: all checks passed\n");
    return 0;
}
