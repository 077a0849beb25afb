#!/bin/sh
# symcoll_info: the version report (with whether CUDA is built and usable here), the
# configuration table (an invalid value is marked and fails), the topology and decision
# reports of a one-process communicator (and -a's paths of the other collectives on one
# node and on 2 simulated nodes), the same as JSON, usage.
. "${top_srcdir:-.}/tests/testlib.sh"
info="$top_builddir/tools/symcoll_info"
make_tmp info-test
export UCX_TLS="${UCX_TLS:-tcp,self}" UCX_WARN_UNUSED_ENV_VARS=n

if [ ! -x "$info" ]; then
    echo "FAIL: $info not built"
    exit 99
fi

# run NAME EXPECTED-STATUS ARGS...: output in $tmp/out and $tmp/err
run() {
    name=$1 want=$2
    shift 2
    timeout -s KILL 120 "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc -ne "$want" ]; then
        echo "FAIL: $name: exit status $rc, expected $want; stderr:"
        sed 's/^/    /' "$tmp/err"
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

run "version" 0 env -u SYMCOLL_TIMEOUT "$info" &&
    expect "version" "$tmp/out" '^# symcoll version [0-9]+\.[0-9]+\.[0-9]+ ' &&
    expect "version" "$tmp/out" '^# build: .*UCX [0-9]'

# built with CUDA or not, and whether the driver here runs it, on a line of their own
run "cuda line" 0 "$info" -v &&
    expect "cuda line" "$tmp/out" '^# CUDA: (not built \(host memory only\)|built; usable here: (yes \(driver for CUDA [0-9]+\.[0-9]+, [1-9][0-9]* devices?\)|no: .+))$'
if grep -q '^# build: .*CUDA on' "$tmp/out"; then
    expect "cuda line, built" "$tmp/out" '^# CUDA: built; '
else
    expect "cuda line, not built" "$tmp/out" '^# CUDA: not built'
fi

run "config, clean environment" 0 env -u SYMCOLL_TIMEOUT "$info" -c &&
    expect "config" "$tmp/out" '^SYMCOLL_TIMEOUT=[^ ]+ +\(default: '

run "config, invalid value" 1 env SYMCOLL_TIMEOUT=abc "$info" -c &&
    expect "config, invalid value" "$tmp/out" '^SYMCOLL_TIMEOUT=abc .*INVALID' &&
    expect "config, invalid value" "$tmp/err" 'invalid'

# alone, -t and -a describe a communicator of this one process
for opt in -t -a; do
    run "$opt" 0 env -u SYMCOLL_RANK -u SYMCOLL_NRANKS -u OMPI_COMM_WORLD_RANK \
        -u PMI_RANK -u SLURM_PROCID "$info" "$opt" &&
        { [ -s "$tmp/out" ] || { echo "FAIL: $opt printed nothing"; status=1; }; }
done

# -a also lists the other collectives' path: native inside a node; across 2 simulated
# nodes (2 ranks) one exchange for reduce-scatter and all-gather at recursive doubling's
# sizes, eager broadcasts up to 32 KiB, native rings above, the barrier as one
# all-reduce; 3 ranks: one all-reduce at recursive doubling's sizes, every row in the
# canonical order; CUDA memory as its all-reduce (none here, without a GPU)
srun="$top_builddir/tools/symcoll_run"
run "-a, 2 ranks" 0 "$srun" -n 2 --timeout 100 "$info" -a &&
    for coll in reduce-scatter all-gather broadcast barrier; do
        expect "-a, 2 ranks, $coll" "$tmp/out" "^  $coll +host .* native host(; order: canonical)?\$"
    done &&
    expect "-a, 2 ranks, cuda" "$tmp/out" '^  all-gather +cuda .* (none \(as the all-reduce\)|via all-reduce: .*)$'
run "-a, 2 simulated nodes" 0 "$srun" -n 2 --sim-nodes 2 --timeout 100 "$info" -a &&
    expect "-a, 2 nodes" "$tmp/out" '^  reduce-scatter +host +8 +[0-9]+  built-in  one exchange over UCX \(2 ranks\); order: canonical$' &&
    expect "-a, 2 nodes, eager" "$tmp/out" '^  broadcast +host +8 +32768  built-in  eager over UCX \(the root does not wait\)$' &&
    expect "-a, 2 nodes, ring" "$tmp/out" '^  all-gather +host +[0-9]+ +[0-9]+  built-in  native over UCX \(ring, chain\)$' &&
    expect "-a, 2 nodes, barrier" "$tmp/out" '^  barrier +host +- +-  built-in  via all-reduce: [a-z]+ \(net-host\)$'
run "-a, 3 ranks on 2 simulated nodes" 0 "$srun" -n 3 --sim-nodes 2 --timeout 100 "$info" -a &&
    expect "-a, 3 ranks" "$tmp/out" '^  reduce-scatter +host +8 +[0-9]+  built-in  via all-reduce: [a-z]+ \(net-host\); order: canonical$' &&
    expect "-a, 3 ranks, order" "$tmp/out" '^  host +[0-9]+ +[0-9A-Z]+ +rd +net-host +canonical +built-in '

# --json: one object with a member per report; python3 validates it where present
unset_launch="-u SYMCOLL_RANK -u SYMCOLL_NRANKS -u OMPI_COMM_WORLD_RANK -u PMI_RANK -u SLURM_PROCID"
# shellcheck disable=SC2086
run "json" 0 env -u SYMCOLL_TIMEOUT $unset_launch "$info" --json -v -c -a -t &&
    for key in version library api build cuda config algorithms topology; do
        expect "json member $key" "$tmp/out" "^  \"$key\": "
    done &&
    expect "json cuda" "$tmp/out" '^  "cuda": \{"built": (true|false), "usable": (true|false), ' &&
    expect "json config row" "$tmp/out" '^    \{"name": "SYMCOLL_TIMEOUT", "value": "[^"]+", "default": ' &&
    expect "json decision row" "$tmp/out" '^    \{"mem": "host", "bytes": 8, "algo": "[a-z]+", ' &&
    expect "json collective row" "$tmp/out" '^    \{"coll": "broadcast", "mem": "host", "from": 8, "to": [0-9]+, "source": "built-in", "path": "[^"]+"\}'
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json, sys; d = json.load(sys.stdin); assert d["config"] and d["algorithms"]["rows"] and d["algorithms"]["collectives"]' \
        <"$tmp/out" 2>"$tmp/err" || { echo "FAIL: json: not valid JSON:"; cat "$tmp/err"; status=1; }
fi
run "json, invalid value" 1 env SYMCOLL_TIMEOUT=abc "$info" -j -c &&
    expect "json, invalid value" "$tmp/out" '"name": "SYMCOLL_TIMEOUT", "value": "abc", .*"invalid": true'

run "unknown option" 2 "$info" -x && expect "unknown option" "$tmp/err" '^Usage: symcoll_info'
run "help" 0 "$info" -h && expect "help" "$tmp/out" '^  -c, --config'

[ $status -eq 0 ] && echo "PASS: symcoll_info reports, exit statuses and usage as expected"
exit $status
