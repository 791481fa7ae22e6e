/*
 * bench/mpi_worker.c: coexec-bench-mpi, the two-rank side of coexec-bench's
 * MPI benchmarks (bench/mpi.c starts it as `mpiexec -n 2 coexec-bench-mpi
 * NAME REPS WARMUPS` and reads what rank 0 prints):
 *
 *   sample <value>      one per timed repetition
 *   setup <text>        how it was set up
 *   ref <text>          figures measured beside it
 *   error <text>        why it could not run (then exit 1)
 *
 * Benchmarks (each rank: coexec_init with one stream, pinned inside the
 * rank's binding; MPI_THREAD_MULTIPLE):
 *   mpi_pingpong         round trip of 8 bytes, in us: rank 0's main ULT
 *                        coexec_mpi_send then coexec_mpi_recv (it parks
 *                        while the message is on its way), rank 1 echoes
 *   mpi_pingpong_plain   the same with MPI_Send and MPI_Recv (MPI_Wait
 *                        blocking the stream), in the same process setup
 *   mpi_overlap          compute progress while a ULT exchanges halos
 *                        (coexec_mpi_sendrecv of 16 KiB each way, then a
 *                        50 us sleep: a time step's interior, 200 times)
 *                        as a percentage of compute-only progress over
 *                        the same time: compute ULTs run chunks of work
 *                        and yield between chunks
 *
 * Uses the public headers only (coexec.h, coexec/mpi.h).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <coexec.h>
#include <coexec/mpi.h>

static int me;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void say(const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(const char *kind, const char *fmt, ...)
{
    if (me != 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", kind);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

static int check(int rc, const char *what)
{
    if (rc != COEXEC_OK)
        say("error", "%s: %s", what, coexec_strerror(rc));
    return rc;
}

/* ---- ping-pong ---------------------------------------------------------------- */

#define PP_ITERS 2000

/* One sample: PP_ITERS round trips of 8 bytes; rank 0's time per trip. */
static int pingpong_once(bool plain, double *us)
{
    char buf[8] = {0};
    int peer = 1 - me, rc = COEXEC_OK;
    uint64_t t0 = now_ns();
    for (int i = 0; i < PP_ITERS && rc == COEXEC_OK; i++) {
        bool send_first = me == 0;
        for (int step = 0; step < 2 && rc == COEXEC_OK; step++) {
            bool sending = send_first == (step == 0);
            if (plain)
                rc = (sending ? MPI_Send(buf, 8, MPI_CHAR, peer, 1, MPI_COMM_WORLD)
                              : MPI_Recv(buf, 8, MPI_CHAR, peer, 1, MPI_COMM_WORLD,
                                         MPI_STATUS_IGNORE)) == MPI_SUCCESS
                         ? COEXEC_OK : COEXEC_EIO;
            else
                rc = sending ? coexec_mpi_send(buf, 8, MPI_CHAR, peer, 1,
                                               MPI_COMM_WORLD)
                             : coexec_mpi_recv(buf, 8, MPI_CHAR, peer, 1,
                                               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    *us = (double)(now_ns() - t0) / 1e3 / PP_ITERS;
    return check(rc, plain ? "MPI_Send/MPI_Recv" : "coexec_mpi_send/recv");
}

static int run_pingpong(bool plain, int reps, int warmups)
{
    say("setup", "2 ranks, 1 xstream each; %d round trips of 8 B per sample, "
        "from the main ULT%s", PP_ITERS,
        plain ? ", MPI_Send/MPI_Recv blocking the stream"
              : ", coexec_mpi_send/recv parking it");
    for (int i = 0; i < warmups + reps; i++) {
        double us;
        if (pingpong_once(plain, &us) != COEXEC_OK)
            return 1;
        if (i >= warmups)
            say("sample", "%.4f", us);
    }
    return 0;
}

/* ---- overlap ------------------------------------------------------------------ */

#define COMPUTE_ULTS 4
#define HALO_BYTES (16 * 1024)
#define EXCHANGES 200
#define PACE_NS 50000 /* between two exchanges: a time step's interior */

static atomic_long chunks;
static atomic_int stop_compute;
static volatile double sink;

/* A chunk of about 10 us of arithmetic, then a yield. */
static void compute_ult(void *arg)
{
    (void)arg;
    double x = 1.0;
    while (!atomic_load_explicit(&stop_compute, memory_order_relaxed)) {
        for (int i = 0; i < 4000; i++)
            x = x * 1.0000001 + 1e-9;
        sink = x;
        atomic_fetch_add_explicit(&chunks, 1, memory_order_relaxed);
        if (coexec_yield() != COEXEC_OK)
            break;
    }
}

typedef struct {
    char *out, *in;
    int rc;
    uint64_t ns;
    atomic_int done;
} halo_t;

static void halo_ult(void *arg)
{
    halo_t *h = arg;
    int peer = 1 - me;
    uint64_t t0 = now_ns();
    uint64_t comm = 0;
    for (int i = 0; i < EXCHANGES && h->rc == COEXEC_OK; i++) {
        uint64_t c0 = now_ns();
        h->rc = coexec_mpi_sendrecv(h->out, HALO_BYTES, MPI_CHAR, peer, 7, h->in,
                                    HALO_BYTES, MPI_CHAR, peer, 7,
                                    MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        comm += now_ns() - c0;
        if (h->rc == COEXEC_OK)
            h->rc = coexec_sleep_ns(PACE_NS);
    }
    (void)t0;
    h->ns = comm;
    atomic_store(&h->done, 1);
}

/* Chunks per second of the compute ULTs over `ns` (or, with a halo ULT,
 * until it finished its exchanges). */
static int compute_rate(halo_t *h, uint64_t ns, double *rate, uint64_t *took)
{
    coexec_thread_t t[COMPUTE_ULTS], ht;
    coexec_xstream_t xs;
    if (check(coexec_xstream_self(&xs), "coexec_xstream_self") != 0)
        return -1;
    atomic_store(&chunks, 0);
    atomic_store(&stop_compute, 0);
    for (int i = 0; i < COMPUTE_ULTS; i++)
        if (check(coexec_thread_create_on(xs, compute_ult, NULL, NULL, &t[i]),
                  "create") != 0)
            return -1;
    uint64_t t0 = now_ns();
    if (h) {
        atomic_store(&h->done, 0);
        if (check(coexec_thread_create_on(xs, halo_ult, h, NULL, &ht),
                  "create") != 0)
            return -1;
        while (!atomic_load(&h->done))
            if (coexec_yield() != COEXEC_OK)
                break;
        if (coexec_thread_join(ht) != COEXEC_OK)
            return -1;
    } else {
        while (now_ns() - t0 < ns)
            if (coexec_yield() != COEXEC_OK)
                break;
    }
    uint64_t el = now_ns() - t0;
    long c = atomic_load(&chunks);
    atomic_store(&stop_compute, 1);
    for (int i = 0; i < COMPUTE_ULTS; i++)
        if (coexec_thread_join(t[i]) != COEXEC_OK ||
            coexec_thread_free(&t[i]) != COEXEC_OK)
            return -1;
    if (h && coexec_thread_free(&ht) != COEXEC_OK)
        return -1;
    *rate = (double)c / ((double)el / 1e9);
    *took = el;
    return h ? check(h->rc, "coexec_mpi_sendrecv") : 0;
}

static int run_overlap(int reps, int warmups)
{
    halo_t h = {malloc(HALO_BYTES), malloc(HALO_BYTES), COEXEC_OK, 0, 0};
    if (!h.out || !h.in)
        return say("error", "no memory"), 1;
    memset(h.out, me, HALO_BYTES);
    /* Communication alone, for its time. */
    uint64_t alone = now_ns();
    for (int i = 0; i < EXCHANGES && h.rc == COEXEC_OK; i++)
        h.rc = coexec_mpi_sendrecv(h.out, HALO_BYTES, MPI_CHAR, 1 - me, 7, h.in,
                                   HALO_BYTES, MPI_CHAR, 1 - me, 7,
                                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    alone = now_ns() - alone;
    double sum_with = 0, sum_alone = 0;
    uint64_t comm_ns = 0;
    int n = 0;
    coexec_mpi_info_t i0 = {.size = sizeof i0}, i1 = {.size = sizeof i1};
    if (check(coexec_mpi_get_info(&i0), "coexec_mpi_get_info") != 0)
        return 1;
    for (int i = 0; i < warmups + reps; i++) {
        double with_rate, alone_rate;
        uint64_t took, t2;
        MPI_Barrier(MPI_COMM_WORLD);
        if (compute_rate(&h, 0, &with_rate, &took) != 0)
            return 1;
        MPI_Barrier(MPI_COMM_WORLD);
        if (compute_rate(NULL, took, &alone_rate, &t2) != 0)
            return 1;
        if (i < warmups)
            continue;
        say("sample", "%.2f", 100.0 * with_rate / alone_rate);
        sum_with += with_rate;
        sum_alone += alone_rate;
        comm_ns += h.ns;
        n++;
    }
    say("setup", "2 ranks, 1 xstream each: %d compute ULTs (~10 us chunks, "
        "yield between) and a ULT doing %d sendrecv of %d KiB, %d us apart",
        COMPUTE_ULTS, EXCHANGES, HALO_BYTES / 1024, PACE_NS / 1000);
    if (check(coexec_mpi_get_info(&i1), "coexec_mpi_get_info") != 0)
        return 1;
    say("ref", "compute %.0f chunks/s with communication, %.0f alone; the %d "
        "exchanges took %.1f ms in all beside compute (%.1f polls each), "
        "%.1f ms alone", sum_with / n, sum_alone / n, EXCHANGES,
        (double)comm_ns / n / 1e6,
        (double)(i1.polls - i0.polls) / ((double)n * EXCHANGES),
        (double)alone / 1e6);
    free(h.out);
    free(h.in);
    return 0;
}

int main(int argc, char **argv)
{
    int provided, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    setvbuf(stdout, NULL, _IOLBF, 0);
    int rc = 1;
    if (argc != 4 || size != 2)
        say("error", "usage: mpiexec -n 2 coexec-bench-mpi NAME REPS WARMUPS");
    else if (provided != MPI_THREAD_MULTIPLE)
        say("error", "MPI gives thread level %d, not MPI_THREAD_MULTIPLE",
            provided);
    else if (check(coexec_init(NULL), "coexec_init") == COEXEC_OK) {
        int reps = atoi(argv[2]), warmups = atoi(argv[3]);
        if (!strcmp(argv[1], "mpi_pingpong"))
            rc = run_pingpong(false, reps, warmups);
        else if (!strcmp(argv[1], "mpi_pingpong_plain"))
            rc = run_pingpong(true, reps, warmups);
        else if (!strcmp(argv[1], "mpi_overlap"))
            rc = run_overlap(reps, warmups);
        else
            say("error", "unknown benchmark %s", argv[1]);
        if (check(coexec_finalize(), "coexec_finalize") != COEXEC_OK)
            rc = 1;
    }
    MPI_Finalize();
    return rc;
}
