/* A user's first program, built by tests/test_install.sh against the *installed* header
 * and library (pkg-config symcoll) and run under the installed symcoll_run: create a
 * communicator from the environment, check rank and size, all-reduce a few doubles
 * (plain buffers, then in place in a buffer from the pool). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symcoll.h>

#define COUNT 5

static int env_int(const char *name)
{
    const char *v = getenv(name);
    return v ? atoi(v) : -1;
}

int main(void)
{
    symcoll_comm_h comm;
    symcoll_status_t st;
    double send[COUNT], recv[COUNT], *buf;
    int rank, size, ret = 1;

    st = symcoll_comm_create(NULL, &comm);
    if (st != SYMCOLL_OK) {
        fprintf(stderr, "installed_hello: symcoll_comm_create: %s\n",
                symcoll_status_string(st));
        return 1;
    }
    if (symcoll_comm_rank(comm, &rank) != SYMCOLL_OK ||
        symcoll_comm_size(comm, &size) != SYMCOLL_OK) {
        fprintf(stderr, "installed_hello: rank/size query failed\n");
        goto out;
    }
    if (rank != env_int("SYMCOLL_RANK") || size != env_int("SYMCOLL_NRANKS")) {
        fprintf(stderr, "installed_hello: rank %d of %d, but the launcher set %d of %d\n", rank,
                size, env_int("SYMCOLL_RANK"), env_int("SYMCOLL_NRANKS"));
        goto out;
    }

    /* small integers: the sum is exact in any order of reduction */
    for (int i = 0; i < COUNT; i++) {
        send[i] = (double)(rank + 1) * (i + 1);
        recv[i] = -1.0;
    }
    st = symcoll_allreduce(send, recv, COUNT, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, NULL);
    if (st == SYMCOLL_OK) {
        double ranks_sum = (double)size * (size + 1) / 2;
        for (int i = 0; i < COUNT; i++) {
            if (recv[i] != ranks_sum * (i + 1)) {
                fprintf(stderr, "installed_hello: rank %d: element %d is %g, expected %g\n",
                        rank, i, recv[i], ranks_sum * (i + 1));
                goto out;
            }
        }
    } else {
        fprintf(stderr, "installed_hello: rank %d: symcoll_allreduce: %s\n", rank,
                symcoll_status_string(st));
        goto out;
    }

    /* in place on a buffer from the pool (reduced without a staging copy) */
    st = symcoll_mem_alloc(comm, COUNT * sizeof(double), SYMCOLL_MEM_HOST, (void **)&buf);
    if (st != SYMCOLL_OK) {
        fprintf(stderr, "installed_hello: rank %d: symcoll_mem_alloc: %s\n", rank,
                symcoll_status_string(st));
        goto out;
    }
    for (int i = 0; i < COUNT; i++)
        buf[i] = rank == 0 ? (double)i : 1.0;
    st = symcoll_allreduce(buf, buf, COUNT, SYMCOLL_FLOAT64, SYMCOLL_MAX, comm, NULL);
    for (int i = 0; st == SYMCOLL_OK && i < COUNT; i++) {
        double want = (i >= 1 || size == 1) ? (double)i : 1.0;
        if (buf[i] != want) {
            fprintf(stderr, "installed_hello: rank %d: pool element %d is %g, expected %g\n",
                    rank, i, buf[i], want);
            st = SYMCOLL_ERR_INTERNAL;
        }
    }
    if (st != SYMCOLL_OK) {
        fprintf(stderr, "installed_hello: rank %d: in-place pool all-reduce: %s\n", rank,
                symcoll_status_string(st));
        goto out; /* the pool goes with the communicator */
    }
    st = symcoll_mem_free(comm, buf);
    if (st != SYMCOLL_OK) {
        fprintf(stderr, "installed_hello: rank %d: symcoll_mem_free: %s\n", rank,
                symcoll_status_string(st));
        goto out;
    }
    printf("installed_hello: rank %d of %d: allreduce ok\n", rank, size);
    ret = 0;
out:
    st = symcoll_comm_destroy(comm);
    if (st != SYMCOLL_OK) {
        fprintf(stderr, "installed_hello: symcoll_comm_destroy: %s\n",
                symcoll_status_string(st));
        ret = 1;
    }
    return ret;
}
