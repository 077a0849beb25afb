/* Hierarchical all-reduce, for several ranks on each of several nodes (same count on
 * every node).
 *
 * With L ranks per node, the count is split into L slices. 1. Intra-node reduce-scatter
 * through the pool: every rank copies its input into its pool scratch; after a node
 * barrier, local rank l reduces slice l from all L copies (read through the pool
 * mappings, in local-rank order) into its accumulator. 2. Inter-node all-reduce of slice
 * l among the ranks of local index l on every node (one per node, so all over UCX),
 * recursive doubling or ring by the slice's size; the L groups of a node run at the same
 * time, so each rank sends only 1/L of the data across nodes. AVG divides by the total
 * rank count there, once. 3. Intra-node all-gather: after a second barrier, every rank
 * copies the L final slices out of its peers' accumulators.
 *
 * Every final slice is computed by one group all-reduce (identical bits across the
 * group) and copied inside each node, so every rank ends with the same bits.
 * Reuse across calls: a rank writes its accumulator only after the first barrier of the
 * next call, when every local peer has finished copying from it; its input copy is read
 * by peers only before the second barrier of the call that wrote it.
 */
#include "algo/net.h"

#include <string.h>

#include "algo/reduce.h"
#include "topo/select.h"
#include "topo/topo.h"

symcoll_status_t algo_net_hier(net_state_t *st, const void *sendbuf, void *recvbuf,
                               size_t count, symcoll_dtype_t dtype, symcoll_op_t op,
                               deadline_t *dl)
{
    const topo_t *t = st->comm->topo;
    int L = t->local_size, l = t->local_rank, nn = t->nnodes;
    size_t esize = symcoll_dtype_size(dtype), bytes = count * esize;
    size_t s0, slen, max_slice = (count + (size_t)L - 1) / (size_t)L;
    bool rd = max_slice * esize <= topo_rd_max(&t->select_cfg, nn);
    size_t area =
        rd ? algo_net_rd_area(max_slice, esize, nn) : algo_net_ring_area(max_slice, esize, nn);
    size_t in_off, acc_off;
    char *acc;
    net_group_t g;
    net_call_t c;
    symcoll_status_t status;

    status = algo_net_reserve(st, bytes, max_slice * esize, area);
    if (status != SYMCOLL_OK)
        return status;
    in_off = st->scratch_off;
    acc_off = st->scratch_off + st->in_bytes;
    acc = algo_net_addr(st, acc_off);
    algo_net_block(count, L, l, &s0, &slen);

    /* 1. intra-node reduce-scatter */
    memcpy(algo_net_addr(st, in_off), sendbuf, bytes);
    status = algo_net_local_barrier(st, dl);
    if (status != SYMCOLL_OK)
        return status;
    for (int j = 0; j < L; j++)
        st->srcs[j] = (const char *)pool_peer_addr(st->pool, j, in_off) + s0 * esize;
    algo_reduce(acc, st->srcs, L, slen, dtype, op, 0);

    /* 2. inter-node all-reduce of our slice, among the ranks of our local index */
    algo_net_local_index_group(st, &g);
    algo_net_call_init(&c, st, &g, acc, acc, slen, dtype, op, dl);
    if (slen > 0) {
        status = rd ? algo_net_rd(&c) : algo_net_ring(&c);
        if (status == SYMCOLL_OK)
            status = ucx_wait_all(st->ucx, dl);
        if (status != SYMCOLL_OK)
            return status;
    }

    /* 3. intra-node all-gather */
    status = algo_net_local_barrier(st, dl);
    if (status != SYMCOLL_OK)
        return status;
    for (int j = 0; j < L; j++) {
        size_t js, jl;
        algo_net_block(count, L, j, &js, &jl);
        memcpy((char *)recvbuf + js * esize, pool_peer_addr(st->pool, j, acc_off), jl * esize);
    }
    return SYMCOLL_OK;
}
