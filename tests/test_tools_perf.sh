#!/bin/sh
# symcoll_perf's options as nccl-tests has them: -c 0|1 (check), -a 0..3 (time over
# ranks), the forced algorithm as --algo, --json and the min/max columns, --coll with
# nccl-tests' sizes for each collective, checked in and out of place, plain and pool
# buffers, on one node and on 2 simulated nodes; 2 ranks.
. "${top_srcdir:-.}/tests/testlib.sh"
run=$top_builddir/tools/symcoll_run
perf=$top_builddir/tools/symcoll_perf
make_tmp perf-test
export UCX_TLS="${UCX_TLS:-tcp,self}" UCX_WARN_UNUSED_ENV_VARS=n
unset SYMCOLL_ALGO SYMCOLL_HOST_ID

# run NAME EXPECTED-STATUS ARGS...: symcoll_perf on 2 ranks; output in $tmp/out, $tmp/err
run() {
    name=$1 want=$2
    shift 2
    # symcoll_run's options, if any, come before a "--"
    ropts=
    case " $* " in
    *" -- "*)
        while [ "$1" != "--" ]; do ropts="$ropts $1"; shift; done
        shift
        ;;
    esac
    # shellcheck disable=SC2086
    timeout -s KILL 120 "$run" -n 2 --timeout 100 $ropts "$perf" -b 8 -e 4K -f 8 -n 3 -w 1 -r 3 "$@" \
        >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc -ne "$want" ]; then
        echo "FAIL: $name: exit status $rc, expected $want; stderr:"
        sed 's/^/    /' "$tmp/err" | head -20
        status=1
        return 1
    fi
}

# expect NAME FILE REGEX
expect() {
    grep -E -q "$3" "$2" && return 0
    echo "FAIL: $1: no line matches /$3/ in:"
    sed 's/^/    /' "$2" | head -20
    status=1
}

run "text, -a 1" 0 -a 1 &&
    expect "text header" "$tmp/out" '^# time_us: .*mean over ranks \(-a 1\)' &&
    expect "text columns" "$tmp/out" '^# +size +count .* time_us +min_us +max_us ' &&
    expect "text row" "$tmp/out" '^ +4096 +1024 +float32 +sum .* out( +[0-9.]+){5} +0$'

run "--algo, --json" 0 --algo oneshot --json -c 1 &&
    expect "json algo" "$tmp/out" '^  "algo": "oneshot",' &&
    expect "json row" "$tmp/out" '"size": 4096, .*"algo": "oneshot", .*"min_us": [0-9.]+, "max_us": [0-9.]+, .*"wrong": 0\}' &&
    expect "json status" "$tmp/out" '^  "status": "ok"$'
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json, sys; d = json.load(sys.stdin); assert len(d["rows"]) == 4' \
        <"$tmp/out" 2>"$tmp/err" || { echo "FAIL: --json: not valid JSON:"; cat "$tmp/err"; status=1; }
fi

run "-c 0 --csv" 0 -c 0 --csv &&
    expect "csv header" "$tmp/out" '^size,count,type,redop,algo,placement,time_us,algbw_GBs,busbw_GBs,wrong,min_us,max_us$' &&
    expect "csv row, unchecked" "$tmp/out" '^4096,1024,float32,sum,[a-z~]+,out,[0-9.]+,[0-9.]+,[0-9.]+,,[0-9.]+,[0-9.]+$'

# -a is the averaging mode now: an algorithm name there is refused
run "-a NAME" 2 -a oneshot && expect "-a NAME" "$tmp/err" "bad value 'oneshot' for option -a"

# --coll: every collective checked (wrong 0) in and out of place; the size column is
# the larger buffer (4096 bytes of doubles: 256 per rank for reduce_scatter and
# allgather), the operator column "none" where nothing is reduced; the algo column the
# path: native inside a node; across 2 simulated nodes (2 ranks) one exchange for
# reduce-scatter and all-gather, an eager broadcast (the library's decision rows)
for case in "one node|native|native|" "one node, pool|native|native|-P" \
    "2 simulated nodes, pool|ucx:exchange|ucx:eager|-P"; do
    what=${case%%|*} rest=${case#*|}
    algo=${rest%%|*} rest=${rest#*|}
    bc_algo=${rest%|*} bufs=${rest##*|}
    where=
    case $what in 2*) where="--sim-nodes 2" ;; esac
    # shellcheck disable=SC2086
    run "reduce_scatter, $what" 0 $where -- -d float64 --coll reduce_scatter --inplace $bufs &&
        expect "reduce_scatter, $what" "$tmp/out" "^ +4096 +256 +float64 +sum +$algo +in( +[0-9.]+){5} +0\$" &&
        expect "reduce_scatter, $what" "$tmp/out" 'wrong elements 0$'
    # shellcheck disable=SC2086
    run "allgather, $what" 0 $where -- -d float64 --coll allgather --inplace $bufs &&
        expect "allgather, $what" "$tmp/out" "^ +4096 +256 +float64 +none +$algo +in( +[0-9.]+){5} +0\$" &&
        expect "allgather, $what" "$tmp/out" 'wrong elements 0$'
    # shellcheck disable=SC2086
    run "broadcast, $what" 0 $where -- -d float64 --coll broadcast --root 1 --inplace $bufs &&
        expect "broadcast, $what" "$tmp/out" "^ +4096 +512 +float64 +none +$bc_algo +in( +[0-9.]+){5} +0\$" &&
        expect "broadcast, $what" "$tmp/out" 'wrong elements 0$'
done
for where in "" "--sim-nodes 2"; do
    # shellcheck disable=SC2086
    run "barrier, ${where:-one node}" 0 $where -- --coll barrier &&
        expect "barrier" "$tmp/out" '^ +0 +0 +float32 +none +[a-z:~]+ +out( +[0-9.]+){5} +N/A$'
done

run "--coll NAME" 2 -- --coll alltoall && expect "--coll NAME" "$tmp/err" "bad value 'alltoall' for option --coll"
run "--root out of range" 2 -- --coll broadcast --root 2 && expect "--root" "$tmp/err" 'root 2: there are 2 ranks'

[ $status -eq 0 ] && echo "PASS: symcoll_perf -a, -c, --algo, --json, --csv, min/max columns and --coll"
exit $status
