/* Example: an MPI program that uses symcoll for its all-reduces. symcoll bootstraps through
 * MPI_Allgather (the out-of-band callback), then reduces plain and pool buffers.
 *
 *   mpicc mpi_allreduce.c $(pkg-config --cflags --libs symcoll) -o mpi_allreduce
 *   mpirun -np 4 ./mpi_allreduce
 *
 * Every rank prints one line per step with the status symcoll returned, and a last line
 * "rank R: PASS" or "rank R: FAIL". Exit status 0 only if every step succeeded with the
 * right result on this rank. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include <symcoll.h>

#define COUNT 100003 /* a prime: not a multiple of any rank count or vector width */

/* symcoll's out-of-band allgather, done by MPI */
static int mpi_allgather(const void *src, void *dst, size_t size, void *ctx)
{
    MPI_Comm comm = *(MPI_Comm *)ctx;
    if (size > INT_MAX)
        return -1;
    return MPI_Allgather(src, (int)size, MPI_BYTE, dst, (int)size, MPI_BYTE, comm) ==
                   MPI_SUCCESS
               ? 0
               : -1;
}

/* rank r contributes r + (i % 7) to element i: the sum is exact in doubles */
static double input(int rank, size_t i)
{
    return (double)rank + (double)(i % 7);
}

static double expected(int nranks, size_t i)
{
    return (double)nranks * (double)(nranks - 1) / 2.0 + (double)nranks * (double)(i % 7);
}

static size_t count_wrong(const double *buf, int nranks)
{
    size_t wrong = 0;
    for (size_t i = 0; i < COUNT; i++)
        wrong += buf[i] != expected(nranks, i);
    return wrong;
}

/* Prints the step's outcome; returns 1 if it failed. */
static int report(int rank, const char *step, symcoll_status_t s, long wrong)
{
    if (s != SYMCOLL_OK) {
        printf("rank %d: %s: %s (status %d)\n", rank, step, symcoll_status_string(s), (int)s);
        return 1;
    }
    if (wrong < 0)
        printf("rank %d: %s: ok\n", rank, step);
    else
        printf("rank %d: %s: ok, %ld wrong elements\n", rank, step, wrong);
    return wrong > 0;
}

int main(int argc, char **argv)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    symcoll_comm_params_t params = {0};
    symcoll_comm_h sc = NULL;
    symcoll_status_t s;
    double *send = NULL, *recv = NULL, *sym = NULL;
    int rank, nranks, failed = 0, any_failed = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);

    params.field_mask = SYMCOLL_COMM_PARAM_FIELD_RANK | SYMCOLL_COMM_PARAM_FIELD_NRANKS |
                        SYMCOLL_COMM_PARAM_FIELD_ALLGATHER;
    params.rank = rank;
    params.nranks = nranks;
    params.allgather = mpi_allgather;
    params.allgather_ctx = &comm;
    s = symcoll_comm_create(&params, &sc);
    failed |= report(rank, "symcoll_comm_create (bootstrap through MPI_Allgather)", s, -1);
    if (s != SYMCOLL_OK)
        goto out; /* every rank fails here alike: the bootstrap is collective */

    /* 1. ordinary buffers: symcoll stages them through its pool */
    send = malloc(COUNT * sizeof(double));
    recv = malloc(COUNT * sizeof(double));
    if (!send || !recv) {
        printf("rank %d: out of memory\n", rank);
        failed = 1;
        goto out_destroy;
    }
    for (size_t i = 0; i < COUNT; i++) {
        send[i] = input(rank, i);
        recv[i] = -1;
    }
    s = symcoll_allreduce(send, recv, COUNT, SYMCOLL_FLOAT64, SYMCOLL_SUM, sc, NULL);
    failed |= report(rank, "allreduce of plain buffers", s,
                     s == SYMCOLL_OK ? (long)count_wrong(recv, nranks) : 0);
    /* a later step would hang if the ranks disagreed on whether to go on: agree first */
    MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, comm);
    if (any_failed)
        goto out_destroy;

    /* 2. a symmetric buffer from the pool, reduced in place with no staging copy */
    s = symcoll_mem_alloc(sc, COUNT * sizeof(double), SYMCOLL_MEM_HOST, (void **)&sym);
    failed |= report(rank, "symcoll_mem_alloc", s, -1);
    if (s == SYMCOLL_OK) {
        for (size_t i = 0; i < COUNT; i++)
            sym[i] = input(rank, i);
        s = symcoll_allreduce(sym, sym, COUNT, SYMCOLL_FLOAT64, SYMCOLL_SUM, sc, NULL);
        failed |= report(rank, "in-place allreduce of a pool buffer", s,
                         s == SYMCOLL_OK ? (long)count_wrong(sym, nranks) : 0);
        s = symcoll_mem_free(sc, sym);
        failed |= report(rank, "symcoll_mem_free", s, -1);
    }

out_destroy:
    s = symcoll_comm_destroy(sc);
    failed |= report(rank, "symcoll_comm_destroy", s, -1);
out:
    free(send);
    free(recv);
    printf("rank %d: %s\n", rank, failed ? "FAIL" : "PASS");
    MPI_Finalize();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
