/* Built by tests/test_cmake.sh through the installed CMake package (symcoll::symcoll) and
 * run under symcoll_run: an all-reduce whose result is checked exactly on every rank,
 * and the library loaded must be the version the package announced. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <symcoll.h>

#define COUNT 1000

int main(void)
{
    int64_t send[COUNT], recv[COUNT];
    symcoll_comm_h comm;
    symcoll_status_t st;
    int rank = -1, size = 0, ret = 1;

    if (strcmp(symcoll_version_string(), SYMCOLL_PACKAGE_VERSION)) {
        fprintf(stderr, "cmake_consumer: library %s, but the CMake package says %s\n",
                symcoll_version_string(), SYMCOLL_PACKAGE_VERSION);
        return 1;
    }
    st = symcoll_comm_create(NULL, &comm);
    if (st != SYMCOLL_OK) {
        fprintf(stderr, "cmake_consumer: symcoll_comm_create: %s\n", symcoll_status_string(st));
        return 1;
    }
    symcoll_comm_rank(comm, &rank);
    symcoll_comm_size(comm, &size);

    for (int i = 0; i < COUNT; i++)
        send[i] = (int64_t)(rank + 1) * i - 7;
    st = symcoll_allreduce(send, recv, COUNT, SYMCOLL_INT64, SYMCOLL_SUM, comm, NULL);
    if (st != SYMCOLL_OK) {
        fprintf(stderr, "cmake_consumer: rank %d: symcoll_allreduce: %s\n", rank,
                symcoll_status_string(st));
        goto out;
    }
    for (int i = 0; i < COUNT; i++) {
        int64_t want = (int64_t)size * (size + 1) / 2 * i - 7 * size;
        if (recv[i] != want) {
            fprintf(stderr, "cmake_consumer: rank %d: element %d is %lld, expected %lld\n",
                    rank, i, (long long)recv[i], (long long)want);
            goto out;
        }
    }
    printf("cmake_consumer: rank %d of %d: allreduce ok\n", rank, size);
    ret = 0;
out:
    if (symcoll_comm_destroy(comm) != SYMCOLL_OK)
        ret = 1;
    return ret;
}
