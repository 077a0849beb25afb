#!/bin/bash
# An 8-byte stream over UCX's TCP transport on loopback, three ways, interleaved by
# round: symcoll's eager broadcast across 2 simulated nodes (one active message per
# call), UCX's own active-message and tag streams (ucx_perftest, Debian's UCX 1.13,
# the library symcoll's build links), and Open MPI's broadcast (ob1 + tcp on lo).
# -e: endpoints with error handling (peer mode), as symcoll creates them.
# Usage: run.sh BUILD_DIR [ROUNDS]
B=$(cd "$1" && pwd); R=${2:-3}
export UCX_TLS=tcp,self UCX_WARN_UNUSED_ENV_VARS=n UCX_NET_DEVICES=lo
ARGS="--coll broadcast -d float64 -o sum -b 8 -e 8 -r 3 -n 20000 --csv"
pt() { # ucx_perftest TEST: the server on core 1, the client on core 0
    taskset -c 1 ucx_perftest -p 13337 >/dev/null 2>&1 &
    sleep 1
    taskset -c 0 ucx_perftest -p 13337 -t "$1" $3 -s 8 -n 200000 127.0.0.1 2>&1 |
        awk -v t="$1$3" -v r="$2" '/^Final:/{print t, r, $4}'
    wait
}
for r in $(seq 1 "$R"); do
    "$B"/tools/symcoll_run -n 2 --bind-to core --sim-nodes 2 "$B"/tools/symcoll_perf -m host $ARGS 2>/dev/null |
        awk -F, -v r=$r '$1=="8"{print "symcoll", r, $7}'
    mpirun --allow-run-as-root -np 2 --bind-to core --mca pml ob1 --mca btl self,tcp \
        --mca btl_tcp_if_include lo "$B"/bench/mpi_allreduce_peer $ARGS 2>/dev/null |
        awk -F, -v r=$r '$1=="8"{print "openmpi", r, $7}'
    pt ucp_am_bw $r
    pt ucp_am_bw $r -e
    pt tag_bw $r
done
