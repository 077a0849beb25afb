#!/bin/sh
# symcoll_info -t and -a on simulated nodes: rank 0 prints its node's ranks' facts, the node
# map and the decision table; an inapplicable SYMCOLL_ALGO fails with the reason.
. "${top_srcdir:-.}/tests/testlib.sh"
run="$top_builddir/tools/symcoll_run"
info="$top_builddir/tools/symcoll_info"
make_tmp topo-info
guard="timeout -s KILL 240"
export UCX_TLS=${UCX_TLS:-tcp,self} UCX_WARN_UNUSED_ENV_VARS=n
unset SYMCOLL_ALGO SYMCOLL_HOST_ID

for t in "$run" "$info"; do
    if [ ! -x "$t" ]; then
        echo "FAIL: $t not built"
        exit 99
    fi
done

fail() {
    echo "FAIL: $case: $*"
    sed 's/^/    /' "$tmp/out" "$tmp/err" | head -40
    status=1
}

# expect PATTERN COUNT: lines of the output matching PATTERN
expect() {
    n=$(grep -E -c -- "$1" "$tmp/out")
    [ "$n" -eq "$2" ] || fail "$n lines match /$1/, expected $2"
}

case="4 ranks on 2 nodes, -t -a"
$guard "$run" -n 4 --sim-nodes 2 "$info" -t -a >"$tmp/out" 2>"$tmp/err" || fail "exit status $?"
expect '^# symcoll topology: 4 rank\(s\) on 2 node\(s\)' 1
# rank 0 holds the facts of its node's ranks; the other node's stay there
expect '^ +[0-1] +0 +[01] +[0-9]+ ' 2
expect '^ +[2-3] +1 +[01] +- .*\(facts on its node\)$' 2
expect '^# node 0 \(.*\): leader rank 0, 2 rank\(s\): 0 1$' 1
expect '^# node 1 \(.*\): leader rank 2, 2 rank\(s\): 2 3$' 1
# 8 B .. 1 GiB in powers of two, for both memory types
expect '^  host +[0-9]+ ' 28
expect '^  cuda +[0-9]+ ' 28
expect '^  host +8 +8B +hier ' 1
expect '^  host +1073741824 +1G +hier ' 1

case="one process, no launcher"
$guard "$info" -t >"$tmp/out" 2>"$tmp/err" || fail "exit status $?"
expect '^# symcoll topology: 1 rank\(s\) on 1 node\(s\)' 1

case="2 ranks on 1 node, SYMCOLL_ALGO=ring"
SYMCOLL_ALGO=ring $guard "$run" -n 2 "$info" -a >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -ne 0 ] || fail "exit status 0 with an inapplicable SYMCOLL_ALGO"
grep -q "SYMCOLL_ALGO=ring cannot run on this communicator" "$tmp/err" ||
    fail "no reason on stderr"

case="2 ranks on 2 nodes, SYMCOLL_NET_RD_MAX=1K"
SYMCOLL_NET_RD_MAX=1K $guard "$run" -n 2 --sim-nodes 2 "$info" -a >"$tmp/out" 2>"$tmp/err" ||
    fail "exit status $?"
# 2 ranks: rd up to 16 x 1K
expect '^  host +16384 +16K +rd ' 1
expect '^  host +32768 +32K +ring ' 1

exit $status
