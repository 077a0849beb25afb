/* What the machinery of the family across nodes shares among its files (net_state.c,
 * net_xfer.c, net_agree.c) besides net.h: where a rank's flag words lie, and how often a
 * wait checks that a local peer still runs. */
#ifndef SYMCOLL_ALGO_NET_INT_H
#define SYMCOLL_ALGO_NET_INT_H

#include "algo/net/net.h"
#include "topo/topo.h"

/* How often a rank waiting on a peer of its own node checks that it still runs. */
#define NET_ALIVE_PERIOD 0.005

/* Word word of owner's flags (line 0: words 0 .. 7; line 1 + s: sender s's line). */
static inline uint64_t *net_flag(const net_state_t *st, int owner, int word)
{
    size_t off = st->flags_off + (size_t)word * NET_FLAG_STRIDE;
    if (st->flags_in_pad)
        return (uint64_t *)((char *)pool_signal_pad(st->pool,
                                                    st->comm->topo->rank_local_rank[owner]) +
                            off);
    return (uint64_t *)(owner == st->comm->rank ? algo_net_addr(st, off)
                                                : algo_net_peer_addr(st, owner, off));
}

/* owner's word for the messages of sender in receive area area */
static inline uint64_t *net_msg_flag(const net_state_t *st, int owner, int sender, int area)
{
    return net_flag(st, owner, 1 + sender) + area;
}

#endif
