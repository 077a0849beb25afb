#!/bin/sh
# bench/scale_setup at 8 ranks on 2 simulated nodes, 2 extra communicators: every rank
# reports, the all-reduces are right, and the set-up numbers are there and plausible
# (times, bytes, connections, endpoints, sockets and RSS positive; each rank reaches the
# other node through UCX, on need). bench/scale.sh quick is run too, and extra creations
# with rank 0 under a wrapper shell.
. "${top_srcdir:-.}/tests/testlib.sh"
run=$top_builddir/tools/symcoll_run
prog=$top_builddir/bench/scale_setup
[ -x "$prog" ] && [ -x "$run" ] || { echo "ERROR: $prog or $run not built"; exit 99; }
make_tmp scale
export UCX_TLS="${UCX_TLS:-tcp,self}" UCX_WARN_UNUSED_ENV_VARS=n
unset SYMCOLL_ALGO SYMCOLL_HOST_ID

timeout -s KILL 60 "$run" -n 8 --sim-nodes 2 --timeout 50 "$prog" -c 2 -l t -v \
    >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -ne 0 ]; then
    echo "FAIL: scale_setup exited with $rc; stderr:"
    sed 's/^/    /' "$tmp/err" | head -20
    exit 1
fi

fail() {
    echo "FAIL: $1; output:"
    sed 's/^/    /' "$tmp/out" | head -60
    status=1
}
n=$(grep -c '^rank [0-7]:' "$tmp/out")
[ "$n" -eq 8 ] || fail "$n of 8 ranks printed their numbers"
grep -q '^# scale_setup: 8 ranks on 2 node(s), 2 extra communicator(s); bootstrap tcp' \
    "$tmp/out" || fail "no header for 8 ranks on 2 nodes"
grep -q '^# all-reduce check: ok (0 wrong elements' "$tmp/out" || fail "all-reduce check"
for row in 'create time s' 'bootstrap bytes sent+recv, created' 'TCP connections, created' \
    'UCX endpoints, after calls' 'socket fds, after calls' 'RSS MiB, after calls' \
    'extra comm: create time s (mean)' 'extra comm: fds'; do
    grep -q "^  $row  *[0-9]" "$tmp/out" || fail "no row '$row'"
done

# the csv line, by its header's names
csv=$(sed -n 's/^csv: //p' "$tmp/out")
hdr=$(sed -n 's/^# csv: //p' "$tmp/out")
[ -n "$csv" ] && [ -n "$hdr" ] || fail "no csv line"
printf '%s\n%s\n' "$hdr" "$csv" | awk -F, '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; nf = NF; next }
    function v(name) { return $col[name] + 0 }
    function need(cond, what) { if (!cond) { print "    csv: " what; bad = 1 } }
    {
        need(NF == nf, "fields " NF " != " nf)
        need(v("n") == 8 && v("nodes") == 2, "n, nodes")
        need(v("create_max_s") > 0 && v("create_med_s") > 0 && v("span_s") > 0, "times")
        need(v("create_max_s") >= v("create_med_s"), "max < median")
        need(v("bytes_max") > 0 && v("bytes_med") > 0, "bytes")
        need(v("conns_max") >= 1 && v("conns_med") >= 1, "TCP connections")
        need(v("eps_calls_max") >= 1 && v("eps_calls_med") >= 1, "UCX endpoints to the other node")
        need(v("socks_max") > 0 && v("socks_med") > 0, "sockets")
        need(v("rss_max_mb") > 0 && v("rss_med_mb") > 0, "RSS")
        need(v("xcreate_max_s") > 0 && v("xfds_med") > 0, "extra communicators")
        need(v("wrong") == 0, "wrong elements")
        need(v("rendezvous_cpu_s") > 0, "rank 0 rendezvous CPU time")
    }
    END { exit bad }' || fail "csv line out of range"

# the sweep script on its quick cases: the unit costs, one table row per case, csv
# files to model
timeout -s KILL 180 "$top_srcdir/bench/scale.sh" -b "$top_builddir" -o "$tmp/sweep" -c 1 \
    unit run:4:1 run:8:2 >"$tmp/sweep.out" 2>&1 || {
    echo "FAIL: bench/scale.sh:"
    sed 's/^/    /' "$tmp/sweep.out"
    status=1
}
rows=$(grep -c '^| symcoll_run | [48] |' "$tmp/sweep.out")
[ "$rows" -eq 2 ] || { echo "FAIL: bench/scale.sh printed $rows of 2 rows"; status=1; }
units=$(grep -c '^unit,2,2,' "$tmp/sweep/unit.csv" 2>/dev/null)
[ "${units:-0}" -eq 3 ] || { echo "FAIL: bench/scale.sh wrote ${units:-0} of 3 unit rows"; status=1; }
if command -v python3 >/dev/null 2>&1 && [ -s "$tmp/sweep/scale.csv" ]; then
    python3 "$top_srcdir/bench/scale_model.py" "$tmp/sweep/scale.csv" >"$tmp/model.out" 2>&1 ||
        { echo "FAIL: bench/scale_model.py:"; sed 's/^/    /' "$tmp/model.out"; status=1; }
    for n in 1000 10000 100000; do
        grep -q "^ *$n  *[0-9]" "$tmp/model.out" ||
            { echo "FAIL: no model row for $n ranks:"; sed 's/^/    /' "$tmp/model.out"; status=1; }
    done
fi

# rank 0 under a wrapper that keeps a copy of the rendezvous socket symcoll_run hands it
# (a shell that does not exec): the further creations still bind the port again
timeout -s KILL 60 "$run" -n 3 --timeout 50 sh -c '"$0" -c 2; exit $?' "$prog" \
    >"$tmp/wrap.out" 2>"$tmp/wrap.err" ||
    { echo "FAIL: scale_setup -c 2 under a wrapper shell:"; sed 's/^/    /' "$tmp/wrap.err" |
          head -20; status=1; }

[ $status -eq 0 ] && echo "PASS: scale_setup on 8 ranks, 2 simulated nodes; scale.sh; model"
exit $status
