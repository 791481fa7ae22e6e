/*
 * examples/10_mpi_overlap.c: halo exchanges that overlap computation.
 *
 * Two MPI ranks each hold a strip of a 1-D grid and smooth it for a number
 * of time steps. A step needs the neighbour's edge cells (the halo), but
 * only the cells next to the edge do: the interior can be computed while
 * the halo is on its way. Each rank runs:
 *
 *   - a communication ULT that, every step, exchanges halos with the
 *     other rank through coexec_mpi_sendrecv: the ULT parks while the
 *     messages travel, it does not block its stream;
 *   - compute ULTs that update the interior of the strip in chunks,
 *     yielding between chunks so the communication ULT gets its turns.
 *
 * The edges are updated once the halo is in. The program checks the
 * result against the same computation done serially, and prints how much
 * computation ran while messages were in flight.
 *
 * Build and run (libcoexec-mpi is built when CMake finds an MPI):
 *   mpiexec -n 2 ./10_mpi_overlap
 */
#include <coexec.h>
#include <coexec/mpi.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CELLS 65536  /* per rank */
#define STEPS 100
#define CHUNKS 16    /* the interior's pieces, one per compute turn */
#define WORKERS 4    /* compute ULTs */

static int me, peer;
static double *cur, *nxt; /* CELLS + 2: a halo cell on each side */
static atomic_int next_chunk, chunks_done, in_flight;
static atomic_long chunks_overlapped; /* computed while a halo travelled */

static void check(int rc, const char *what)
{
    if (rc != COEXEC_OK) {
        fprintf(stderr, "rank %d: %s: %s\n", me, what, coexec_strerror(rc));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void smooth(const double *a, double *b, int lo, int hi)
{
    for (int i = lo; i < hi; i++)
        b[i] = 0.25 * a[i - 1] + 0.5 * a[i] + 0.25 * a[i + 1];
}

/* Rank 0's strip is on the left: its halo comes from its right end. */
static void exchange_halo(void *arg)
{
    (void)arg;
    double send = me == 0 ? cur[CELLS] : cur[1];
    double *recv = me == 0 ? &cur[CELLS + 1] : &cur[0];
    atomic_store(&in_flight, 1);
    check(coexec_mpi_sendrecv(&send, 1, MPI_DOUBLE, peer, 0, recv, 1,
                              MPI_DOUBLE, peer, 0, MPI_COMM_WORLD,
                              MPI_STATUS_IGNORE), "coexec_mpi_sendrecv");
    atomic_store(&in_flight, 0);
}

/* Interior cells 2 .. CELLS-1 need no halo. */
static void compute_interior(void *arg)
{
    (void)arg;
    int per = (CELLS - 2) / CHUNKS;
    int c;
    while ((c = atomic_fetch_add(&next_chunk, 1)) < CHUNKS) {
        int lo = 2 + c * per, hi = c == CHUNKS - 1 ? CELLS : lo + per;
        smooth(cur, nxt, lo, hi);
        if (atomic_load(&in_flight))
            atomic_fetch_add(&chunks_overlapped, 1);
        atomic_fetch_add(&chunks_done, 1);
        check(coexec_yield(), "coexec_yield");
    }
}

static void init_strip(double *a, int rank)
{
    for (int i = 1; i <= CELLS; i++)
        a[i] = sin((rank * CELLS + i) * 0.001) + (i % 7 == 0);
    a[0] = a[CELLS + 1] = 0.0; /* the outer ends stay 0 */
}

/* The same steps done by rank 0 alone over both strips. */
static double serial_checksum(void)
{
    int n = 2 * CELLS;
    double *a = calloc((size_t)n + 2, sizeof *a), *b = calloc((size_t)n + 2, sizeof *b);
    double *tmp = malloc(sizeof(double) * (CELLS + 2));
    for (int r = 0; r < 2; r++) {
        init_strip(tmp, r);
        memcpy(a + 1 + r * CELLS, tmp + 1, sizeof(double) * CELLS);
    }
    for (int s = 0; s < STEPS; s++) {
        smooth(a, b, 1, n + 1);
        double *t = a;
        a = b;
        b = t;
    }
    double sum = 0;
    for (int i = 1; i <= n; i++)
        sum += a[i];
    free(a);
    free(b);
    free(tmp);
    return sum;
}

int main(int argc, char **argv)
{
    int provided, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || provided < MPI_THREAD_FUNNELED) {
        if (me == 0)
            fprintf(stderr, "mpi_overlap: run it as mpiexec -n 2 (thread level "
                            "FUNNELED or more)\n");
        MPI_Finalize();
        return 1;
    }
    peer = 1 - me;
    check(coexec_init(NULL), "coexec_init");
    cur = calloc(CELLS + 2, sizeof *cur);
    nxt = calloc(CELLS + 2, sizeof *nxt);
    init_strip(cur, me);

    coexec_xstream_t xs;
    check(coexec_xstream_self(&xs), "coexec_xstream_self");
    double t0 = MPI_Wtime();
    for (int s = 0; s < STEPS; s++) {
        atomic_store(&next_chunk, 0);
        atomic_store(&chunks_done, 0);
        coexec_thread_t comm, work[WORKERS];
        for (int w = 0; w < WORKERS; w++)
            check(coexec_thread_create_on(xs, compute_interior, NULL, NULL,
                                          &work[w]), "create");
        /* Last in, first run (the default pool is LIFO): the halo is sent
         * before the interior starts. */
        check(coexec_thread_create_on(xs, exchange_halo, NULL, NULL, &comm),
              "create");
        check(coexec_thread_join(comm), "join");
        for (int w = 0; w < WORKERS; w++) {
            check(coexec_thread_join(work[w]), "join");
            check(coexec_thread_free(&work[w]), "free");
        }
        check(coexec_thread_free(&comm), "free");
        /* The two cells next to the edges, now that the halo is in. */
        smooth(cur, nxt, 1, 2);
        smooth(cur, nxt, CELLS, CELLS + 1);
        double *t = cur;
        cur = nxt;
        nxt = t;
        cur[0] = me == 0 ? 0.0 : cur[0];
        cur[CELLS + 1] = me == 1 ? 0.0 : cur[CELLS + 1];
    }
    double elapsed = MPI_Wtime() - t0;

    double local = 0, total = 0;
    for (int i = 1; i <= CELLS; i++)
        local += cur[i];
    check(coexec_mpi_reduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, 0,
                            MPI_COMM_WORLD), "coexec_mpi_reduce");
    long overlapped = atomic_load(&chunks_overlapped), all = 0;
    check(coexec_mpi_reduce(&overlapped, &all, 1, MPI_LONG, MPI_SUM, 0,
                            MPI_COMM_WORLD), "coexec_mpi_reduce");
    coexec_mpi_info_t info = {.size = sizeof info};
    check(coexec_mpi_get_info(&info), "coexec_mpi_get_info");
    check(coexec_finalize(), "coexec_finalize");

    int ok = 1;
    if (me == 0) {
        double want = serial_checksum();
        ok = fabs(total - want) <= 1e-9 * fabs(want);
        printf("mpi_overlap: %d steps of %d cells on each of 2 ranks in "
               "%.1f ms\n", STEPS, CELLS, elapsed * 1e3);
        printf("  checksum %.9f, serial %.9f: %s\n", total, want,
               ok ? "equal" : "DIFFERENT");
        printf("  %ld of %d interior chunks (%.0f%%) were computed while a "
               "halo was in flight\n", all, 2 * STEPS * CHUNKS,
               100.0 * (double)all / (2.0 * STEPS * CHUNKS));
        printf("  rank 0's waits: %llu parked, %llu completed by the poller "
               "(%llu polls)\n", (unsigned long long)info.parked,
               (unsigned long long)info.completed,
               (unsigned long long)info.polls);
        if (ok)
            printf("mpi_overlap: all checks passed\n");
    }
    free(cur);
    free(nxt);
    MPI_Finalize();
    return ok ? 0 : 1;
}
