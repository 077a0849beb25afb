#!/bin/sh
# examples/hello_allreduce (no MPI) under symcoll_run -n 4: the launcher's SYMCOLL_ADDR
# and SYMCOLL_COOKIE connect the ranks; the program checks the results exactly.
. "${top_srcdir:-.}/tests/testlib.sh"
prog="$top_builddir/examples/hello_allreduce"
run="$top_builddir/tools/symcoll_run"
[ -x "$prog" ] && [ -x "$run" ] || { echo "ERROR: $prog or $run not built"; exit 99; }
make_tmp hello

UCX_TLS=${UCX_TLS:-tcp,self} UCX_WARN_UNUSED_ENV_VARS=n \
    "$run" -n 4 --timeout 100 "$prog" --topology >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
n=$(grep -c '^hello_allreduce: rank [0-3] of 4: ok$' "$tmp/out")
if [ $rc -ne 0 ] || [ "$n" -ne 4 ]; then
    echo "FAIL: symcoll_run exited with $rc, $n of 4 ranks ok"
    exit 1
fi
grep -q '^# bootstrap: tcp (rank 0 at SYMCOLL_ADDR 127\.0\.0\.1:[0-9]*)$' "$tmp/out" ||
    { echo "FAIL: the ranks did not find each other through symcoll_run's SYMCOLL_ADDR"; exit 1; }
echo "PASS: hello_allreduce under symcoll_run -n 4"
exit 0
