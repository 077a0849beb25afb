#!/bin/sh
# Sweep of bench/scale_setup (what a communicator's set-up costs each rank) over the
# sizes one machine can start: symcoll_run on one node and on simulated nodes, and
# Open MPI's mpirun (PMIx) oversubscribed. Prints one Markdown row per run and keeps the
# logs and the csv lines (scale.csv, the input of bench/scale_model.py) in OUT.
#   bench/scale.sh [-b BUILD_DIR] [-o OUT] [-c C] quick|full|CASE...
# quick: n <= 16 (seconds); full: n = 16, 64, 256 on 1 node and on 4..32 simulated
# nodes, the same without host leaders at 64 and 256 on 8, mpirun at 64 and 128 on 1 and
# 4 simulated nodes (minutes on 2 cores); both
# begin with unit. A CASE is run:N:K (symcoll_run, N ranks on K simulated nodes),
# direct:N:K (the same, every rank dialling rank 0 itself: SYMCOLL_RENDEZVOUS_LEADERS=0),
# mpirun:N[:K], or unit: the bootstrap's unit costs (a round, a byte) and a creation on
# 2 ranks on 2 simulated nodes, 3 times, into OUT/unit.csv (the model's constants).
# C: extra communicators per run (default 7;
# runs of 256 ranks and more take 1, see below). Exit status 1 if a run failed (a run
# whose extra communicators failed still gets its row).
set -u
LC_ALL=C
export LC_ALL
here=$(cd "$(dirname "$0")" && pwd)
build=
out=
extra=7
usage() {
    sed -n '2,14s/^# \{0,1\}//p' "$0"
    exit "$1"
}
while getopts b:o:c:h opt; do
    case $opt in
    b) build=$OPTARG ;;
    o) out=$OPTARG ;;
    c) extra=$OPTARG ;;
    h) usage 0 ;;
    *) usage 2 >&2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || usage 2 >&2
if [ -z "$build" ]; then
    for d in . "$here/../build" "$here/.."; do
        [ -x "$d/bench/scale_setup" ] && build=$d && break
    done
fi
prog=$build/bench/scale_setup
run=$build/tools/symcoll_run
if [ ! -x "$prog" ] || [ ! -x "$run" ]; then
    echo "scale.sh: no $prog or $run: build first, or give -b BUILD_DIR" >&2
    exit 2
fi
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/symcoll-scale.XXXXXX") || exit 2
mkdir -p "$out" || exit 2

case $1 in
quick) set -- unit run:4:1 run:8:2 run:16:1 run:16:4 mpirun:16 ;;
full)
    set -- unit run:16:1 run:16:4 run:64:1 run:64:4 run:64:8 direct:64:8 mpirun:64 run:256:1 \
        run:256:8 direct:256:8 run:256:32 mpirun:128 mpirun:128:4
    ;;
esac

# UCX over TCP between the simulated nodes (shared memory transports would not cross
# them); the deadline of every wait is long because 256 ranks share 2 cores here.
UCX_TLS=${UCX_TLS:-tcp,self}
UCX_WARN_UNUSED_ENV_VARS=n
SYMCOLL_TIMEOUT=${SYMCOLL_TIMEOUT:-900}
export UCX_TLS UCX_WARN_UNUSED_ENV_VARS SYMCOLL_TIMEOUT
unset SYMCOLL_HOST_ID SYMCOLL_ALGO
# Rank 0 of the star bootstrap holds a socket per rank, each rank one per local rank for
# the node channel and UCX's per endpoint, all of it again per communicator: raise the
# soft limit to the hard one (dash and bash have -H and -n).
# shellcheck disable=SC3045
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
root=
[ "$(id -u)" = 0 ] && root=--allow-run-as-root

commit=$(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "# scale.sh: commit $commit, $(nproc) CPU(s), $(uname -r); logs in $out"
echo "| launcher | n | nodes | create s max / med | span s | bytes busiest / med | rounds | TCP conns max / med | UCX eps max / med | sockets max / med | RSS MiB max / med | +comm s (med) | +comm MiB | +comm fds (sockets) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
status=0
for c in "$@"; do
    IFS=: read -r how n k <<EOF
$c
EOF
    if [ "$how" = unit ]; then
        # 2 ranks, no core shared: what one round, one byte and a creation cost here
        log=$out/unit.log
        : >"$log"
        rm -f "$out/unit.csv"
        for i in 1 2 3; do
            timeout -s KILL 300 "$run" -n 2 --sim-nodes 2 --timeout 120 "$prog" -u >>"$log" 2>&1 ||
                { echo "# unit: FAILED (see $log)"; status=1; continue 2; }
        done
        sed -n 's/^# csv: \(unit,.*\)$/\1/p' "$log" | head -n 1 >"$out/unit.csv"
        sed -n 's/^unit: //p' "$log" >>"$out/unit.csv"
        sed -n 's/^# \(unit costs.*\)$/# \1/p' "$log"
        continue
    fi
    # every rank creates C+1 communicators, each with sockets to every local rank and
    # UCX endpoints to every remote one: at 256 ranks on one host that is 10^5 sockets
    # per communicator, so the big runs create one extra
    x=$extra
    [ "$n" -ge 256 ] && [ "$x" -gt 1 ] && x=1
    log=$out/$how-$n-${k:-1}.log
    t0=$(date +%s)
    case $how in
    run | direct)
        lead=1
        [ "$how" = direct ] && lead=0
        SYMCOLL_RENDEZVOUS_LEADERS=$lead timeout -s KILL 1800 "$run" -n "$n" --sim-nodes "$k" \
            --timeout 1700 "$prog" -c "$x" -l "symcoll_run$([ $lead = 0 ] && echo -direct)" \
            >"$log" 2>&1
        ;;
    mpirun)
        command -v mpirun >/dev/null 2>&1 || { echo "# $c: skipped, no mpirun"; continue; }
        grep -q '^#define HAVE_PMIX 1' "$build/symcoll_config.h" 2>/dev/null ||
            { echo "# $c: skipped, built without PMIx"; continue; }
        # K simulated nodes: one app context per node, each with its own
        # SYMCOLL_HOST_ID, in blocks as symcoll_run makes them
        k=${k:-1}
        apps=
        i=0
        while [ $i -lt "$k" ]; do
            cnt=$((n / k + (i < n % k ? 1 : 0)))
            [ $i -gt 0 ] && apps="$apps :"
            apps="$apps -n $cnt env SYMCOLL_HOST_ID=simnode-$i $prog -c $x -l mpirun"
            i=$((i + 1))
        done
        [ "$k" -eq 1 ] && apps="-n $n $prog -c $x -l mpirun"
        # nothing of symcoll's in the environment: PMIx gives rank, size and node
        # shellcheck disable=SC2086
        env -u SYMCOLL_ADDR -u SYMCOLL_RANK -u SYMCOLL_NRANKS -u SYMCOLL_COOKIE \
            timeout -s KILL 1800 mpirun $root --oversubscribe --bind-to none \
            -x UCX_TLS -x UCX_WARN_UNUSED_ENV_VARS -x SYMCOLL_TIMEOUT $apps >"$log" 2>&1
        ;;
    *)
        echo "scale.sh: unknown case $c" >&2
        status=1
        continue
        ;;
    esac
    rc=$?
    line=$(sed -n 's/^csv: //p' "$log")
    # status 3: the first communicator's numbers are there, an extra one failed
    if [ -z "$line" ] || { [ $rc -ne 0 ] && [ $rc -ne 3 ]; }; then
        echo "# $c: FAILED (exit status $rc after $(($(date +%s) - t0)) s, see $log)"
        status=1
        continue
    fi
    if [ $rc -eq 3 ]; then
        echo "# $c: an extra communicator failed: $(grep -m1 'ERROR' "$log" | sed 's/^\[[^]]*\] //')"
        status=1
    fi
    # the columns: scale_setup's, then the extra communicators asked and the run's seconds
    [ -s "$out/scale.csv" ] ||
        sed -n 's/^# csv: \(.*\)$/\1,asked_extra,wall_s/p' "$log" >"$out/scale.csv"
    echo "$line,$x,$(($(date +%s) - t0))" >>"$out/scale.csv"
    echo "$line" | awk -F, -v x="$x" '{
        xc = sprintf("%.3f | %.2f | %.0f (%.0f)", $25, $27, $28, $29)
        if ($35 < x)
            xc = sprintf("failed (%d of %d) | | ", $35, x)
        printf "| %s | %d | %d | %.3f / %.3f | %.3f | %d / %d | %d | %d / %g | %d / %g | %d / %g | %.1f / %.1f | %s |\n",
            $1, $2, $3, $4, $5, $6, $9, $10, $12, $14, $15, $18, $19, $20, $21, $22, $23, xc }'
done
exit $status
