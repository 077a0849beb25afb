#!/bin/sh
# The Fortran module under symcoll_run: fortran/test_fortran on 3 ranks of one node and
# on 3 ranks split over 2 simulated nodes, the example on 2 ranks, and, when built, the
# MPI creation helper (fortran/test_fortran_mpi) under mpirun on 2 ranks.
. "${top_srcdir:-.}/tests/testlib.sh"
make_tmp ftest
run=$top_builddir/tools/symcoll_run
export UCX_TLS="${UCX_TLS:-tcp,self}" UCX_WARN_UNUSED_ENV_VARS=n
export SYMCOLL_TIMEOUT="${SYMCOLL_TIMEOUT:-60}"
unset SYMCOLL_ALGO SYMCOLL_HOST_ID

# check NAME NRANKS CMD...: the command exits 0 and NRANKS ranks print PASS
check() {
    name=$1 nranks=$2
    shift 2
    timeout -s KILL 240 "$@" >"$tmp/out" 2>&1
    rc=$?
    npass=$(grep -c ': PASS' "$tmp/out")
    if [ $rc -ne 0 ] || [ "$npass" -ne "$nranks" ]; then
        echo "FAIL: $name: exit status $rc, $npass of $nranks ranks passed:"
        sed 's/^/    /' "$tmp/out" | head -60
        status=1
    else
        echo "ok: $name"
    fi
}

check "test_fortran, 3 ranks" 3 "$run" -n 3 --timeout 200 "$top_builddir/fortran/test_fortran"
check "test_fortran, 3 ranks on 2 simulated nodes" 3 \
    "$run" -n 3 --sim-nodes 2 --timeout 200 "$top_builddir/fortran/test_fortran"
check "examples/allreduce.f90, 2 ranks" 2 \
    "$run" -n 2 --timeout 200 "$top_builddir/examples/allreduce_fortran"

if [ -x "$top_builddir/fortran/test_fortran_mpi" ] && [ -n "${MPIRUN:-}" ]; then
    check "symcoll_comm_create_mpi under mpirun, 2 ranks" 2 \
        "$MPIRUN" --allow-run-as-root --oversubscribe --bind-to none \
        --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
        -np 2 "$top_builddir/fortran/test_fortran_mpi"
fi

[ $status -eq 0 ] && echo "PASS: the Fortran module's calls and results on every type"
exit $status
