#!/bin/sh
# examples/hello_allreduce (no MPI) under Open MPI's mpirun with no SYMCOLL_* variable
# set: the launcher's PMIx server gives rank, size and node, and carries rank 0's
# address; 4 ranks on this node, then on 2 simulated nodes (one app context per node,
# each with its own SYMCOLL_HOST_ID), then symcoll_run started by mpirun (its
# SYMCOLL_ADDR job must win over the PMIx server its environment names). The results
# are checked exactly by the program. Skipped without PMIx in the build or mpirun.
. "${top_srcdir:-.}/tests/testlib.sh"
prog="$top_builddir/examples/hello_allreduce"
run="$top_builddir/tools/symcoll_run"

grep -q '^#define HAVE_PMIX 1' "$top_builddir/symcoll_config.h" 2>/dev/null ||
    { echo "SKIP: symcoll was built without PMIx (configure --with-pmix; Debian: libpmix-dev)"; exit 77; }
command -v mpirun >/dev/null 2>&1 ||
    { echo "SKIP: mpirun not found (Debian: openmpi-bin)"; exit 77; }
[ -x "$prog" ] || { echo "ERROR: $prog not built"; exit 99; }
make_tmp pmix

# nothing of symcoll's in the environment: what the ranks know comes from the launcher
for v in $(env | sed -n 's/^\(SYMCOLL_[A-Za-z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done
# UCX over TCP, as in every test: the simulated nodes really talk over sockets
UCX_TLS=${UCX_TLS:-tcp,self} UCX_WARN_UNUSED_ENV_VARS=n
export UCX_TLS UCX_WARN_UNUSED_ENV_VARS
root=
[ "$(id -u)" = 0 ] && root=--allow-run-as-root

# mpirun_case NAME NODES ARGS...: run, then expect 4 "ok" lines, and from rank 0's
# topology the PMIx bootstrap and NODES nodes
mpirun_case() {
    name=$1 nodes=$2
    shift 2
    # shellcheck disable=SC2086
    timeout 120 mpirun $root --oversubscribe --bind-to none "$@" >"$tmp/out" 2>&1
    rc=$?
    sed "s/^/    [$name] /" "$tmp/out"
    n=$(grep -c '^hello_allreduce: rank [0-3] of 4: ok$' "$tmp/out")
    if [ $rc -ne 0 ] || [ "$n" -ne 4 ]; then
        echo "FAIL: $name: mpirun exited with $rc, $n of 4 ranks ok"
        status=1
        return
    fi
    if [ -n "$nodes" ]; then
        grep -q '^# bootstrap: pmix ' "$tmp/out" ||
            { echo "FAIL: $name: the ranks did not find each other through PMIx"; status=1; }
        grep -q "^# symcoll topology: 4 rank(s) on $nodes node(s)" "$tmp/out" ||
            { echo "FAIL: $name: expected 4 ranks on $nodes node(s)"; status=1; }
    fi
}

mpirun_case "mpirun -n 4" 1 -n 4 "$prog" --topology --repeat 2
mpirun_case "mpirun, 2 simulated nodes" 2 \
    -n 2 env SYMCOLL_HOST_ID=simnode-0 "$prog" --topology : \
    -n 2 env SYMCOLL_HOST_ID=simnode-1 "$prog"
if [ -x "$run" ]; then
    mpirun_case "mpirun -n 1 symcoll_run -n 4" "" -n 1 "$run" -n 4 --timeout 100 "$prog"
fi

[ $status -eq 0 ] && echo "PASS: hello_allreduce under mpirun (PMIx) on 1 and 2 nodes," \
    "and symcoll_run inside mpirun"
exit $status
