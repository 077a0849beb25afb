#!/bin/sh
# Compares symcoll's host collectives with Open MPI's in the same run (2 ranks, doubles,
# sum; all-reduce unless --coll says another) and writes markdown tables (the current
# figures are kept in docs/performance.md).
#
#   intra: symcoll, 2 ranks on one node        vs  Open MPI ob1 + vader (shared memory)
#   inter: symcoll, 2 simulated nodes (UCX)    vs  Open MPI ob1 + tcp over loopback
#
# Run it from a build directory (after 'make'):  ../bench/compare_host.sh [options]
set -u

usage() {
    cat <<EOF
usage: $0 [--intra] [--inter] [--coll COLL] [--runs K] [-b MIN] [-e MAX] [-f FACTOR]
          [-r REPEATS] [--bind core|none] [--out DIR] [--no-record] [--commit TEXT]
  --intra / --inter  which comparison (default: both)
  --coll COLL        allreduce (default), reduce_scatter, allgather, broadcast or barrier
                     (symcoll_perf --coll; the MPI peer times the MPI equivalent); the
                     tables are named host-{intra,inter}-node[-COLL].md
  --runs K           alternate symcoll and Open MPI K times; medians are reported (default 3)
  -b, -e, -f         size range and step factor (default 8 .. 32M, factor 2)
  -r REPEATS         repeats inside each run (symcoll_perf -r; default 5)
  --bind core|none   core (default): rank i on core i mod nproc, for both sides (what
                     mpirun does by default for 2 ranks); none: the scheduler places them
                     (on a busy 2-core machine it sometimes puts both ranks on one core)
  --out DIR          where the .md files go (default: the current directory)
  --no-record        print the tables only
  --commit TEXT      what to record as the measured commit (default: git HEAD of the
                     source tree this script is in, marked if it has local changes)
Needs tools/symcoll_run, tools/symcoll_perf and bench/mpi_allreduce_peer in the current
directory (a configured and built build tree) and mpirun on PATH.
EOF
}

srcdir=$(cd "$(dirname "$0")/.." && pwd)
do_intra=0 do_inter=0 runs=3 minb=8 maxb=32M factor=2 repeats=5 outdir=.
record=1 bind=core commit= coll=allreduce
while [ $# -gt 0 ]; do
    case $1 in
    --intra) do_intra=1 ;;
    --inter) do_inter=1 ;;
    --runs) runs=$2; shift ;;
    -b) minb=$2; shift ;;
    -e) maxb=$2; shift ;;
    -f) factor=$2; shift ;;
    --coll) coll=$2; shift ;;
    -r) repeats=$2; shift ;;
    --bind) bind=$2; shift ;;
    --out) outdir=$2; shift ;;
    --no-record) record=0 ;;
    --commit) commit=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
    shift
done
[ $do_intra = 0 ] && [ $do_inter = 0 ] && do_intra=1 do_inter=1
case $coll in
allreduce) suffix= cname=all-reduce ;;
reduce_scatter) suffix=-reduce-scatter cname=reduce-scatter ;;
allgather) suffix=-allgather cname=all-gather ;;
broadcast) suffix=-broadcast cname=broadcast ;;
barrier) suffix=-barrier cname=barrier ;;
*) usage >&2; exit 2 ;;
esac

for f in tools/symcoll_run tools/symcoll_perf bench/mpi_allreduce_peer; do
    if [ ! -x "$f" ]; then
        echo "$0: $f not found: run this from a build directory after 'make'" >&2
        exit 2
    fi
done
command -v mpirun >/dev/null 2>&1 || { echo "$0: mpirun not on PATH" >&2; exit 2; }
if [ -z "$commit" ]; then
    commit="$(git -C "$srcdir" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    git -C "$srcdir" diff --quiet HEAD 2>/dev/null || commit="$commit (with local changes)"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/symcoll-compare.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

common="--coll $coll -d float64 -o sum -b $minb -e $maxb -f $factor -r $repeats --csv"
# each launcher binds its ranks itself (symcoll_run's --bind-to core is its default for
# 2 ranks); a wrapper binding inside symcoll_run's binding would see one CPU only
case $bind in
core)
    sym_bind="--bind-to core"
    mpirun_base="mpirun --allow-run-as-root -np 2 --bind-to core"
    ;;
none)
    sym_bind="--bind-to none"
    mpirun_base="mpirun --allow-run-as-root -np 2 --bind-to none"
    ;;
*) usage >&2; exit 2 ;;
esac
status=0

# compare NAME TITLE SYMCOLL_CMD MPI_CMD TARGET_RULE [NOTE]
compare() {
    name=$1 title=$2 sym_cmd=$3 mpi_cmd=$4 rule=$5 note=${6:-}
    echo "== $title" >&2
    load_start=$(cut -d' ' -f1-3 /proc/loadavg)
    date_start=$(date -u '+%Y-%m-%d %H:%M UTC')
    i=1
    while [ $i -le "$runs" ]; do
        # alternate, so drift of a shared machine hits both sides alike
        echo "   run $i/$runs: symcoll" >&2
        if ! timeout 900 sh -c "$sym_cmd" >"$tmp/$name.sym.$i.csv" 2>"$tmp/$name.sym.$i.err"; then
            echo "   symcoll run $i failed:" >&2
            tail -5 "$tmp/$name.sym.$i.err" >&2
            status=1
        fi
        echo "   run $i/$runs: Open MPI" >&2
        if ! timeout 900 sh -c "$mpi_cmd" >"$tmp/$name.mpi.$i.csv" 2>"$tmp/$name.mpi.$i.err"; then
            echo "   Open MPI run $i failed:" >&2
            tail -5 "$tmp/$name.mpi.$i.err" >&2
            status=1
        fi
        i=$((i + 1))
    done

    {
        echo "# $title"
        echo
        echo "Recorded by \`bench/compare_host.sh\`, started $date_start."
        echo "Machine: $(nproc) cores, $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1);" \
             "load average at start: $load_start."
        echo "symcoll commit: $commit; $(mpirun --version 2>/dev/null | head -1)."
        echo
        echo "Placement: --bind $bind (see bench/compare_host.sh --help)."
        [ -n "$note" ] && echo "$note"
        echo
        echo "Each side ran $runs times, alternating (symcoll, Open MPI, symcoll, ...). In each run a"
        echo "size is timed as the median over $repeats repeats of the mean time per call (max over"
        echo "ranks); the table shows, per size, the median over the $runs runs, and the range of the"
        echo "per-run ratios. Every timed result was checked against a reference (the reduction,"
        echo "or the byte patterns of all-gather and broadcast; wrong = wrong elements over all"
        echo "runs, both sides; barrier has nothing to check)."
        echo
        echo "Commands (from the build directory):"
        echo
        echo '```'
        echo "$sym_cmd"
        echo "$mpi_cmd"
        echo '```'
        echo
        awk -F, -v runs="$runs" -v rule="$rule" -v coll="$coll" -f - "$tmp"/$name.sym.*.csv "$tmp"/$name.mpi.*.csv <<'EOF'
function median(a, n,    i, j, t, b) {
    for (i = 1; i <= n; i++) b[i] = a[i]
    for (i = 2; i <= n; i++) { t = b[i]; for (j = i - 1; j >= 1 && b[j] > t; j--) b[j + 1] = b[j]; b[j + 1] = t }
    return n % 2 ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2
}
# all-reduce: PERF.md's targets for it; the other collectives: PERF.md's common ones
function target(size) {
    if (rule == "intra") return size <= 2048 ? 1.0 : (size >= 131072 ? (coll == "allreduce" ? 0.5 : 0.6) : 0)
    return size >= 1048576 && coll == "allreduce" ? 0.7 : 1.0
}
FNR == 1 { side = (FILENAME ~ /\.sym\./) ? "s" : "m"; run = FILENAME; sub(/\.csv$/, "", run); sub(/.*\./, "", run); next }
$1 ~ /^[0-9]+$/ && $6 == "out" {
    size = $1 + 0
    if (!(size in seen)) { seen[size] = 1; sizes[++nsizes] = size }
    t[side, size, run + 0] = $7 + 0
    wrong[size] += $10
}
END {
    printf "| bytes | symcoll µs | Open MPI µs | ratio | ratio range | target | met | wrong |\n"
    printf "| ---: | ---: | ---: | ---: | ---: | ---: | :---: | ---: |\n"
    for (i = 1; i <= nsizes; i++) {
        size = sizes[i]
        ns = nm = 0; lo = 1e300; hi = 0
        for (j = 1; j <= runs; j++) {
            if (("s", size, j) in t) as[++ns] = t["s", size, j]
            if (("m", size, j) in t) am[++nm] = t["m", size, j]
            if ((("s", size, j) in t) && (("m", size, j) in t) && t["m", size, j] > 0) {
                r = t["s", size, j] / t["m", size, j]; if (r < lo) lo = r; if (r > hi) hi = r
            }
        }
        if (!ns || !nm) {
            printf "| %d | %s | %s | — | — | — | no data | %d |\n", size,
                ns ? sprintf("%.2f", median(as, ns)) : "missing",
                nm ? sprintf("%.2f", median(am, nm)) : "missing", wrong[size]
            missing++
            continue
        }
        ms = median(as, ns); mm = median(am, nm)
        ratio = mm > 0 ? ms / mm : 0
        tg = target(size)
        met = tg == 0 ? "—" : (ratio <= tg ? "yes" : "**no**")
        if (tg && ratio > tg) misses++
        if (wrong[size]) bad++
        printf "| %d | %.2f | %.2f | %.2f | %.2f–%.2f | %s | %s | %d |\n", size, ms, mm, ratio, lo, hi,
            tg ? sprintf("≤ %.1f×", tg) : "—", met, wrong[size]
    }
    printf "\n%d sizes; targets missed at %d; sizes with wrong results: %d; sizes without data: %d.\n",
        nsizes, misses + 0, bad + 0, missing + 0
}
EOF
        echo
        echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
    } >"$tmp/$name.md"
    cat "$tmp/$name.md"
    if [ $record = 1 ]; then
        mkdir -p "$outdir" && cp "$tmp/$name.md" "$outdir/$name.md" &&
            echo "wrote $outdir/$name.md" >&2
    fi
    grep -q 'wrong results: 0; sizes without data: 0\.' "$tmp/$name.md" || status=1
}

if [ $do_intra = 1 ]; then
    compare host-intra-node$suffix "Host $cname inside a node: symcoll vs Open MPI (shared memory)" \
        "tools/symcoll_run -n 2 $sym_bind --timeout 600 tools/symcoll_perf -m host $common" \
        "$mpirun_base --mca pml ob1 --mca btl self,vader bench/mpi_allreduce_peer $common" \
        intra
fi
if [ $do_inter = 1 ]; then
    # what UCX chose between the simulated nodes, as the library logs it
    tls=$(SYMCOLL_LOG_LEVEL=info timeout 120 tools/symcoll_run -n 2 --sim-nodes 2 --timeout 100 \
        tools/symcoll_perf -d float64 -b 8 -e 8 -n 1 -w 0 -r 1 2>&1 |
        sed -n 's/.*UCX transports to other nodes: //p' | head -1)
    compare host-inter-node$suffix "Host $cname across 2 simulated nodes: symcoll over UCX vs Open MPI over TCP loopback" \
        "tools/symcoll_run -n 2 --sim-nodes 2 $sym_bind --timeout 600 tools/symcoll_perf -m host $common" \
        "$mpirun_base --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo bench/mpi_allreduce_peer $common" \
        inter "UCX transports between the simulated nodes (library log): ${tls:-unknown}."
fi
exit $status
