/*
 * mpi_consumer.c: a program built against an installed libcoexec-mpi
 * (pkg-config coexec-mpi, or CMake coexec::mpi), run under mpiexec -n 1:
 * a ULT receives a message its rank sent itself, parking meanwhile.
 */
#include <coexec/mpi.h>
#include <stdio.h>

static void receiver(void *arg)
{
    int *got = arg;
    if (coexec_mpi_recv(got, 1, MPI_INT, 0, 3, MPI_COMM_WORLD,
                        MPI_STATUS_IGNORE) != COEXEC_OK)
        *got = -1;
}

int main(int argc, char **argv)
{
    int provided, got = 0, v = 42;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    coexec_thread_t t;
    coexec_xstream_t xs;
    int ok = coexec_init(NULL) == COEXEC_OK &&
             coexec_xstream_self(&xs) == COEXEC_OK &&
             coexec_thread_create_on(xs, receiver, &got, NULL, &t) == COEXEC_OK;
    ok = ok && coexec_mpi_send(&v, 1, MPI_INT, 0, 3, MPI_COMM_WORLD) == COEXEC_OK &&
         coexec_thread_join(t) == COEXEC_OK && coexec_thread_free(&t) == COEXEC_OK &&
         coexec_finalize() == COEXEC_OK && got == 42;
    printf("mpi_consumer: %s, libcoexec %s\n", ok ? "ok" : "FAILED",
           coexec_version_string());
    MPI_Finalize();
    return ok ? 0 : 1;
}
