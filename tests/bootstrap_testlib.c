/* What the bootstrap test programs share: see bootstrap_testlib.h. */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap_testlib.h"
#include "core/core.h"

bootstrap_params_t env_params(double timeout)
{
    bootstrap_params_t p;
    memset(&p, 0, sizeof(p));
    p.rank = atoi(getenv("SYMCOLL_RANK"));
    p.nranks = atoi(getenv("SYMCOLL_NRANKS"));
    p.addr = getenv("SYMCOLL_ADDR");
    p.cookie = getenv("SYMCOLL_COOKIE");
    p.host_group = getenv("SYMCOLL_HOST_ID"); /* a simulated node has its own leader */
    p.timeout_sec = timeout;
    return p;
}

bootstrap_t *env_bootstrap(void)
{
    bootstrap_params_t p = env_params(BS_TIMEOUT);
    log_set_rank(p.rank);
    bootstrap_t *bs = NULL;
    symcoll_status_t st = bootstrap_create(&p, &bs);
    if (st != SYMCOLL_OK)
        harness_fail("bootstrap_create: %s", symcoll_status_string(st));
    return bs;
}

unsigned char pattern(int rank, size_t i, size_t size)
{
    return (unsigned char)(rank * 131 + i * 7 + size * 3 + 1);
}

void expect_fds(int fds0)
{
    int now = harness_count_fds();
    if (now != fds0)
        harness_fail("descriptors leaked: %d open before, %d after", fds0, now);
}

void check_allgathers_max(bootstrap_t *bs, int rank, int nranks, size_t max)
{
    /* the largest exceeds the socket buffers: partial reads and writes */
    static const size_t sizes[] = {0, 1, 13, 4096 + 7, 3000, (1 << 20) + 3};
    for (size_t s = 0; s < SC_ARRAY_SIZE(sizes); s++) {
        size_t size = sizes[s];
        unsigned char *src, *dst;
        if (size > max)
            continue;
        src = malloc(size + 1);
        dst = malloc(size * (size_t)nranks + 1);
        symcoll_status_t st;
        ck_assert(src && dst);
        for (size_t i = 0; i < size; i++)
            src[i] = pattern(rank, i, size);
        memset(dst, 0xee, size * (size_t)nranks);
        st = bootstrap_allgather(bs, src, dst, size);
        ck_assert_int_eq(st, SYMCOLL_OK);
        for (int r = 0; r < nranks; r++)
            for (size_t i = 0; i < size; i++)
                if (dst[(size_t)r * size + i] != pattern(r, i, size))
                    harness_fail("size %zu: byte %zu of rank %d is %u, expected %u", size, i, r,
                                 dst[(size_t)r * size + i], pattern(r, i, size));
        free(src);
        free(dst);
    }
}

void check_allgathers(bootstrap_t *bs, int rank, int nranks)
{
    check_allgathers_max(bs, rank, nranks, SIZE_MAX);
}

void check_job_id(bootstrap_t *bs, int nranks)
{
    uint64_t id = bootstrap_job_id(bs), *ids = calloc((size_t)nranks, sizeof(*ids));
    ck_assert(ids);
    ck_assert(id != 0);
    ck_assert_int_eq(bootstrap_allgather(bs, &id, ids, sizeof(id)), SYMCOLL_OK);
    for (int r = 0; r < nranks; r++)
        ck_assert(ids[r] == id);
    free(ids);
}

size_t read_all(int fd, unsigned char *buf, size_t cap, double timeout, int *eof)
{
    double end = time_now() + timeout;
    size_t n = 0;
    *eof = 0;
    while (time_now() < end) {
        struct pollfd p = {fd, POLLIN, 0};
        unsigned char tmp[512];
        ssize_t r;
        if (poll(&p, 1, 50) <= 0)
            continue;
        r = recv(fd, tmp, sizeof(tmp), 0);
        if (r == 0 || (r < 0 && errno == ECONNRESET)) {
            *eof = 1;
            break;
        }
        if (r < 0)
            continue;
        for (ssize_t i = 0; i < r && n < cap; i++)
            buf[n++] = tmp[i];
    }
    return n;
}

int raw_dropped(int fd, double timeout)
{
    unsigned char buf[1024];
    int eof;
    size_t n = read_all(fd, buf, sizeof(buf), timeout, &eof);
    bs_hdr_t h;

    if (!eof)
        return 0;
    if (n <= CHALLENGE_LEN)
        return 1;
    /* rank 0 may say that it drops us (a reject header, nothing more) */
    if (n != CHALLENGE_LEN + sizeof(h))
        return 0; /* more: rank 0 answered a bogus peer */
    memcpy(&h, buf + CHALLENGE_LEN, sizeof(h));
    return h.magic == BS_MAGIC && h.type == BS_MSG_REJECT && h.len == 0;
}
