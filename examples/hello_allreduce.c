/* An all-reduce program without MPI: symcoll_comm_create(NULL) finds the other ranks
 * through whatever started it (mpirun, srun --mpi=pmix, symcoll_run) and the results
 * are checked exactly. Build: cc hello_allreduce.c $(pkg-config --cflags --libs symcoll)
 *   mpirun -n 4 ./hello_allreduce        srun --mpi=pmix -n 4 ./hello_allreduce
 *   symcoll_run -n 4 ./hello_allreduce
 * Options: --topology (rank 0 prints how the ranks were found and where they run),
 * --repeat N (create and destroy the communicator N times). Each rank prints
 * "hello_allreduce: rank R of N: ok" and exits 0, or says what went wrong and exits 1. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symcoll.h>

/* element counts: one message of a few bytes, one of 32 KiB, one of 8 MiB of doubles */
static const size_t counts[] = {3, 4096, 1 << 20};

static int fail(int rank, const char *what, symcoll_status_t st)
{
    fprintf(stderr, "hello_allreduce: rank %d: %s: %s\n", rank, what,
            symcoll_status_string(st));
    return 1;
}

/* Sum of doubles that are small integers, so the result is exact in any order; then
 * the maximum of int64 values in place in a buffer from the pool. */
static int check_round(symcoll_comm_h comm, int rank, int size)
{
    size_t max = counts[sizeof(counts) / sizeof(counts[0]) - 1];
    double *send = malloc(max * sizeof(double)), *recv = malloc(max * sizeof(double));
    int64_t *buf = NULL;
    symcoll_status_t st;
    int ret = 1;

    if (!send || !recv) {
        fprintf(stderr, "hello_allreduce: rank %d: out of memory\n", rank);
        goto out;
    }
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        size_t n = counts[c];
        for (size_t i = 0; i < n; i++) {
            send[i] = (double)((rank + 1) * (int)(i % 1000 + 1));
            recv[i] = -1.0;
        }
        st = symcoll_allreduce(send, recv, n, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL);
        if (st != SYMCOLL_OK) {
            ret = fail(rank, "symcoll_allreduce (sum)", st);
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            double want = (double)size * (size + 1) / 2 * (double)(i % 1000 + 1);
            if (recv[i] != want) {
                fprintf(stderr,
                        "hello_allreduce: rank %d: sum of %zu doubles: element %zu is %.17g, "
                        "expected %.17g\n",
                        rank, n, i, recv[i], want);
                goto out;
            }
        }
    }

    st = symcoll_mem_alloc(comm, 1000 * sizeof(int64_t), SYMCOLL_MEM_HOST, (void **)&buf);
    if (st != SYMCOLL_OK) {
        ret = fail(rank, "symcoll_mem_alloc", st);
        goto out;
    }
    for (int i = 0; i < 1000; i++)
        buf[i] = (int64_t)((i + rank) % size) << 40;
    st = symcoll_allreduce(buf, buf, 1000, SYMCOLL_INT64, SYMCOLL_MAX, comm, NULL);
    if (st != SYMCOLL_OK) {
        ret = fail(rank, "symcoll_allreduce (max, in place)", st);
        goto out;
    }
    for (int i = 0; i < 1000; i++) {
        if (buf[i] != (int64_t)(size - 1) << 40) {
            fprintf(stderr,
                    "hello_allreduce: rank %d: max: element %d is %lld, expected %lld\n", rank,
                    i, (long long)buf[i], (long long)((int64_t)(size - 1) << 40));
            goto out;
        }
    }
    ret = 0;
out:
    if (buf && (st = symcoll_mem_free(comm, buf)) != SYMCOLL_OK)
        ret = fail(rank, "symcoll_mem_free", st);
    free(send);
    free(recv);
    return ret;
}

int main(int argc, char **argv)
{
    int topology = 0, repeat = 1, rank = -1, size = 0, ret = 0;

    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--topology")) {
            topology = 1;
        } else if (!strcmp(argv[a], "--repeat") && a + 1 < argc && atoi(argv[a + 1]) > 0) {
            repeat = atoi(argv[++a]);
        } else {
            fprintf(stderr, "usage: %s [--topology] [--repeat N]\n", argv[0]);
            return 2;
        }
    }
    for (int k = 0; k < repeat && ret == 0; k++) {
        symcoll_comm_h comm;
        symcoll_status_t st = symcoll_comm_create(NULL, &comm);

        if (st != SYMCOLL_OK)
            return fail(rank, "symcoll_comm_create", st);
        if (symcoll_comm_rank(comm, &rank) != SYMCOLL_OK ||
            symcoll_comm_size(comm, &size) != SYMCOLL_OK) {
            fprintf(stderr, "hello_allreduce: rank/size query failed\n");
            ret = 1;
        }
        if (ret == 0 && topology && k == 0 && rank == 0)
            symcoll_comm_print_topology(comm, stdout);
        if (ret == 0)
            ret = check_round(comm, rank, size);
        st = symcoll_comm_destroy(comm);
        if (st != SYMCOLL_OK)
            ret = fail(rank, "symcoll_comm_destroy", st);
    }
    if (ret == 0)
        printf("hello_allreduce: rank %d of %d: ok\n", rank, size);
    return ret;
}
