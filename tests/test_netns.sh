#!/bin/sh
# Ranks in two network namespaces joined by a veth pair, so the bootstrap and the UCX
# traffic really cross an interface (no loopback shortcut): 2 simulated nodes x 1 and
# x 2 ranks, every result checked by symcoll_perf (#wrong must be 0 on every row).
# Needs root and iproute2; skipped (77) otherwise.
set -u

top_builddir=${top_builddir:-.}
perf=$top_builddir/tools/symcoll_perf
[ -x "$perf" ] || { echo "SKIP: $perf not built"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for network namespaces"; exit 77; }
command -v ip >/dev/null 2>&1 || { echo "SKIP: iproute2 (ip) not installed"; exit 77; }

tag=$$
ns0=symcoll-a-$tag ns1=symcoll-b-$tag
# interface names: at most 15 characters
if0=scA$tag if1=scB$tag
net=10.$((tag % 200 + 20)).$((tag / 200 % 250)).
tmp=$(mktemp -d "${TMPDIR:-/tmp}/symcoll-netns.XXXXXX") || exit 99
pids=

cleanup() {
    for p in $pids; do kill -9 "$p" 2>/dev/null; done
    ip netns del "$ns0" 2>/dev/null
    ip netns del "$ns1" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

if ! ip netns add "$ns0" 2>"$tmp/err"; then
    echo "SKIP: ip netns add failed: $(cat "$tmp/err")"
    exit 77
fi
if ! ip netns add "$ns1" 2>"$tmp/err" ||
    ! ip link add "$if0" type veth peer name "$if1" 2>"$tmp/err"; then
    echo "SKIP: cannot set up the namespaces: $(cat "$tmp/err")"
    exit 77
fi
set -e
ip link set "$if0" netns "$ns0"
ip link set "$if1" netns "$ns1"
ip -n "$ns0" addr add "${net}1/24" dev "$if0"
ip -n "$ns1" addr add "${net}2/24" dev "$if1"
for ns in "$ns0" "$ns1"; do ip -n "$ns" link set lo up; done
ip -n "$ns0" link set "$if0" up
ip -n "$ns1" link set "$if1" up
set +e
# wait for both ends to report carrier (the bootstrap retries its connection anyway)
i=0
until ip -n "$ns0" link show "$if0" | grep -q LOWER_UP &&
    ip -n "$ns1" link show "$if1" | grep -q LOWER_UP; do
    i=$((i + 1))
    [ $i -ge 20 ] && { echo "FAIL: the veth pair did not come up"; exit 1; }
    sleep 0.25
done

port=$((20000 + tag % 20000))
cookie=$(od -An -N8 -tx8 /dev/urandom | tr -d ' \n')
status=0

# run NRANKS: ranks 0 .. NRANKS/2-1 in ns0 (node A), the others in ns1 (node B)
run() {
    n=$1
    shift
    pids=
    r=0
    while [ $r -lt "$n" ]; do
        if [ $r -lt $((n / 2)) ]; then ns=$ns0 dev=$if0 node=A; else ns=$ns1 dev=$if1 node=B; fi
        ip netns exec "$ns" env SYMCOLL_RANK=$r SYMCOLL_NRANKS="$n" \
            SYMCOLL_ADDR="${net}1:$port" SYMCOLL_COOKIE="$cookie" SYMCOLL_HOST_ID="netns-$node" \
            SYMCOLL_TIMEOUT=60 UCX_TLS=tcp,self UCX_NET_DEVICES="$dev" \
            UCX_WARN_UNUSED_ENV_VARS=n SYMCOLL_LOG_LEVEL=info \
            timeout 300 "$perf" -m host --csv "$@" >"$tmp/out.$n.$r" 2>"$tmp/err.$n.$r" &
        pids="$pids $!"
        r=$((r + 1))
    done
    rc=0
    for p in $pids; do wait "$p" || rc=1; done
    pids=
    port=$((port + 1))
    if [ $rc -ne 0 ]; then
        echo "FAIL: $n ranks across the veth:"
        tail -n 5 "$tmp"/err.$n.* 
        status=1
        return
    fi
    # every rank checks its results; rank 0 prints the table
    if ! awk -F, '$1 ~ /^[0-9]+$/ { rows++; if ($10 != 0) bad++ } END { exit !(rows > 0 && !bad) }' \
        "$tmp/out.$n.0"; then
        echo "FAIL: $n ranks: wrong results or no rows"
        cat "$tmp/out.$n.0"
        status=1
        return
    fi
    # the traffic went over the veth, not loopback
    if ! grep -q "transports to other nodes: tcp/$if0\|transports to other nodes: tcp/$if1" \
        "$tmp"/err.$n.*; then
        echo "FAIL: $n ranks: UCX did not report the veth as its transport"
        grep -h "transports" "$tmp"/err.$n.* | head -4
        status=1
        return
    fi
    echo "ok: $n ranks on 2 namespaces: $(grep -c '^[0-9]' "$tmp/out.$n.0") sizes checked"
}

run 2 -d float64 -o sum -b 8 -e 4M -f 8 -r 1 -n 5 -w 1
run 4 -d int32 -o max -b 8 -e 1M -f 16 -r 1 -n 5 -w 1
exit $status
