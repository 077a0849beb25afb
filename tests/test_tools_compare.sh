#!/bin/sh
# symcoll_compare: a short comparison of symcoll with Open MPI on 2 ranks writes the CSV
# (rows of both systems, every result right), the markdown table with ratios and, where
# matplotlib is installed, the two PNG plots.
. "${top_srcdir:-.}/tests/testlib.sh"
make_tmp compare-test
export UCX_TLS="${UCX_TLS:-tcp,self}" UCX_WARN_UNUSED_ENV_VARS=n
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
command -v mpirun >/dev/null 2>&1 && [ -x "$top_builddir/bench/mpi_allreduce_peer" ] ||
    { echo "SKIP: Open MPI's driver not built"; exit 77; }
plot=--no-plot
python3 -c 'import matplotlib' 2>/dev/null ||
    /usr/bin/python3 -c 'import matplotlib' 2>/dev/null && plot=
# shellcheck disable=SC2086
timeout -s KILL 200 "$top_srcdir/tools/symcoll_compare" --build "$top_builddir" \
    -b 8 -e 2K -f 16 -r 1 --runs 2 --timeout 60 --out "$tmp/out" $plot \
    >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?
if [ $rc -ne 0 ]; then
    echo "FAIL: symcoll_compare exited with $rc:"
    sed 's/^/    /' "$tmp/stderr" | tail -20
    exit 1
fi
grep -q '^symcoll_compare: run 2/2: Open MPI: 3 sizes' "$tmp/stderr" ||
    { echo "FAIL: no progress on stderr"; cat "$tmp/stderr"; status=1; }
for sys in symcoll "Open MPI"; do
    n=$(grep -c "^$sys,[12],[0-9]*," "$tmp/out/compare.csv")
    [ "$n" -eq 6 ] || { echo "FAIL: $n rows of $sys in compare.csv, expected 6"; status=1; }
done
awk -F, 'NR > 1 && $9 != 0 { bad = 1 } END { exit bad }' "$tmp/out/compare.csv" ||
    { echo "FAIL: wrong results in compare.csv"; status=1; }
grep -Eq '^\| 2048 \| [a-z~]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|' "$tmp/out/compare.md" ||
    { echo "FAIL: no row of 2048 bytes with a ratio in compare.md:"; cat "$tmp/out/compare.md"; status=1; }
if [ -z "$plot" ]; then
    for f in latency busbw; do
        head -c 8 "$tmp/out/$f.png" | grep -q PNG || { echo "FAIL: $f.png is no PNG"; status=1; }
    done
fi
[ $status -eq 0 ] && echo "PASS: symcoll_compare wrote the CSV, the table${plot:+ (no matplotlib: no plots)}${plot:- and the plots}"
exit $status
