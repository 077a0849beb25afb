#!/bin/sh
# Runs examples/mpi_allreduce (built in the current directory) under Open MPI's mpirun on
# NODES simulated nodes of PER_NODE ranks: each node's ranks get their own
# SYMCOLL_HOST_ID, so symcoll treats them as separate hosts. Used by make check.
#   run_mpi_allreduce.sh NODES [PER_NODE]
set -u
nodes=${1:?usage: $0 NODES [PER_NODE]}
per_node=${2:-1}
prog=./examples/mpi_allreduce
nranks=$((nodes * per_node))

command -v mpirun >/dev/null 2>&1 || { echo "SKIP: mpirun not found"; exit 77; }
[ -x "$prog" ] || { echo "ERROR: $prog not built"; exit 99; }

# one app context per simulated node; 'env' sets that node's host identity
apps=
n=0
while [ $n -lt "$nodes" ]; do
    apps="$apps${apps:+ : }-np $per_node env SYMCOLL_HOST_ID=simnode-$n $prog"
    n=$((n + 1))
done

out=$(mktemp "${TMPDIR:-/tmp}/mpi_allreduce.XXXXXX") || exit 99
trap 'rm -f "$out"' EXIT
# MPI itself only bootstraps here: TCP keeps it out of /dev/shm (checked by other tests);
# UCX is limited to TCP so simulated nodes really talk over sockets.
# shellcheck disable=SC2086
UCX_TLS=${UCX_TLS:-tcp,self} UCX_WARN_UNUSED_ENV_VARS=n SYMCOLL_TIMEOUT=${SYMCOLL_TIMEOUT:-60} \
    timeout 300 mpirun --allow-run-as-root --oversubscribe --bind-to none \
    --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
    $apps >"$out" 2>&1
rc=$?
cat "$out"

if [ $rc -eq 124 ]; then
    echo "FAIL: mpirun did not finish within 300 s"
    exit 1
fi
npass=$(grep -c ': PASS$' "$out")
nboot=$(grep -c 'symcoll_comm_create (bootstrap through MPI_Allgather): ok$' "$out")
nend=$(grep -Ec ': (PASS|FAIL)$' "$out")
nwrong=$(grep -E 'ok, [0-9]+ wrong elements$' "$out" | grep -vc 'ok, 0 wrong elements$')

if [ "$rc" -eq 0 ] && [ "$npass" -eq "$nranks" ]; then
    echo "PASS: $nranks ranks on $nodes simulated nodes: bootstrap and all-reduce correct"
    exit 0
fi
echo "FAIL: mpirun status $rc; $npass of $nranks ranks passed; bootstrap ok on $nboot;" \
     "$nend ranks finished; $nwrong steps with wrong results"
exit 1
