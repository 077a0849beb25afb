#!/bin/sh
# Host all-reduce speed, symcoll against Open MPI, timed two ways in the same run: the
# rotating-buffer loop of symcoll_perf and an OSU-style loop that sends the same buffer
# every call (--same-buffer); 2 ranks, doubles, sum, plain (non-pool) buffers, one node
# (Open MPI: vader) and 2 simulated nodes (Open MPI: TCP over loopback). Writes
# OUTDIR/host-speed.md and the raw CSV files under OUTDIR/raw.
#
# Run from the repository root with the build tree in ./build:  bench/host_speed.sh OUTDIR
set -u

usage() {
    cat <<EOF
usage: $0 [options] OUTDIR
  --rounds K      alternating rounds (default 3); in each, every (placement, timing)
                  pair runs symcoll and Open MPI back to back, the first of the two
                  swapping from round to round
  -b, -e, -f      size range and factor (default 8 .. 16M, factor 2)
  -n ITERS        calls per repeat (default: symcoll_perf's auto, ~256 MiB per size)
  -w WARMUP       warm-up calls (default auto)
  -r REPEATS      repeats per run, their median is the run's time (default 5)
  --only intra|inter   one placement only (default both)
  --ucx-tls LIST  UCX_TLS for symcoll between simulated nodes (default tcp,self: the
                  same wire as Open MPI's TCP BTL; 'default' leaves UCX to choose)
  --build DIR     the build tree (default ./build)
  --mpi-extra A   more mpirun arguments for Open MPI's runs, e.g. "--mca
                  btl_vader_single_copy_mechanism none" (default none)
Both launchers run at their defaults: symcoll_run binds rank r to core r, mpirun binds
to cores for 2 ranks; Open MPI runs ob1 with self,vader (one node) or self,tcp on lo
(simulated nodes). Needs mpirun on PATH.
EOF
}

rounds=3 minb=8 maxb=16M factor=2 iters= warmup= repeats=5 only= ucx_tls=tcp,self
build=./build outdir= mpi_extra=
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift ;;
    -b) minb=$2; shift ;;
    -e) maxb=$2; shift ;;
    -f) factor=$2; shift ;;
    -n) iters=$2; shift ;;
    -w) warmup=$2; shift ;;
    -r) repeats=$2; shift ;;
    --only) only=$2; shift ;;
    --ucx-tls) ucx_tls=$2; shift ;;
    --build) build=$2; shift ;;
    --mpi-extra) mpi_extra=" $2"; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) usage >&2; exit 2 ;;
    *) [ -n "$outdir" ] && { usage >&2; exit 2; }; outdir=$1 ;;
    esac
    shift
done
[ -n "$outdir" ] || { usage >&2; exit 2; }
case $only in ''|intra|inter) ;; *) usage >&2; exit 2 ;; esac

for f in tools/symcoll_run tools/symcoll_perf bench/mpi_allreduce_peer; do
    if [ ! -x "$build/$f" ]; then
        echo "$0: $build/$f not found: build first (make in $build)" >&2
        exit 2
    fi
done
command -v mpirun >/dev/null 2>&1 || { echo "$0: mpirun not on PATH" >&2; exit 2; }
mkdir -p "$outdir/raw" || exit 2

root=
[ "$(id -u)" = 0 ] && root=--allow-run-as-root
perf_args="-d float64 -o sum -b $minb -e $maxb -f $factor -r $repeats --csv"
[ -n "$iters" ] && perf_args="$perf_args -n $iters"
[ -n "$warmup" ] && perf_args="$perf_args -w $warmup"
env_tls=
[ "$ucx_tls" != default ] && env_tls="UCX_TLS=$ucx_tls "

# cmd PLACE SYSTEM TIMING: the command line of one run
cmd() {
    t=
    [ "$3" = same ] && t=" --same-buffer"
    case $1.$2 in
    intra.sym) echo "$build/tools/symcoll_run -n 2 --timeout 900 $build/tools/symcoll_perf -m host $perf_args$t" ;;
    inter.sym) echo "${env_tls}$build/tools/symcoll_run -n 2 --sim-nodes 2 --timeout 900 $build/tools/symcoll_perf -m host $perf_args$t" ;;
    intra.mpi) echo "mpirun $root -np 2$mpi_extra --mca pml ob1 --mca btl self,vader $build/bench/mpi_allreduce_peer $perf_args$t" ;;
    inter.mpi) echo "mpirun $root -np 2$mpi_extra --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo $build/bench/mpi_allreduce_peer $perf_args$t" ;;
    esac
}

places="intra inter"
[ -n "$only" ] && places=$only
status=0
date_start=$(date -u '+%Y-%m-%d %H:%M UTC')
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
tls=
case $places in
*inter*)
    tls=$(env ${env_tls} SYMCOLL_LOG_LEVEL=info timeout 120 "$build/tools/symcoll_run" -n 2 \
        --sim-nodes 2 --timeout 100 "$build/tools/symcoll_perf" -d float64 -b 8 -e 8 -n 1 \
        -w 0 -r 1 2>&1 | sed -n 's/.*UCX transports to other nodes: //p' | head -1)
    ;;
esac

r=1
while [ $r -le "$rounds" ]; do
    for place in $places; do
        for timing in rotate same; do
            order="sym mpi"
            [ $((r % 2)) = 0 ] && order="mpi sym"
            for sys in $order; do
                base="$outdir/raw/$place-$timing-$sys-$r"
                echo "round $r/$rounds: $place $timing $sys" >&2
                if ! timeout 1800 sh -c "$(cmd $place $sys $timing)" >"$base.csv" 2>"$base.err"; then
                    echo "  failed:" >&2
                    tail -5 "$base.err" >&2
                    status=1
                fi
            done
        done
    done
    r=$((r + 1))
done

table() { # PLACE
    awk -F, -v place="$1" -v rounds="$rounds" '
function median(a, n,    i, j, t, b) {
    for (i = 1; i <= n; i++) b[i] = a[i]
    for (i = 2; i <= n; i++) { t = b[i]; for (j = i - 1; j >= 1 && b[j] > t; j--) b[j + 1] = b[j]; b[j + 1] = t }
    return n % 2 ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2
}
function target(size) {
    if (place == "intra") return size <= 2048 ? 1.0 : (size >= 131072 ? 0.5 : 0)
    return size >= 1048576 ? 0.7 : 1.0
}
FNR == 1 {
    n = split(FILENAME, p, "/"); split(p[n], q, "-"); timing = q[2]; sys = q[3]
    sub(/\.csv$/, "", q[4]); run = q[4] + 0; next
}
$1 ~ /^[0-9]+$/ && $6 == "out" {
    size = $1 + 0
    if (!(size in seen)) { seen[size] = 1; sizes[++nsizes] = size }
    t[timing, sys, size, run] = $7 + 0
    if ($10 != "") wrong[size] += $10
    if (sys == "sym") algo[size] = $5
}
function cell(timing, size,    j, ns, nm, as, am, lo, hi, r, ms, mm) {
    ns = nm = 0; lo = 1e300; hi = 0
    for (j = 1; j <= rounds; j++) {
        if ((timing, "sym", size, j) in t) as[++ns] = t[timing, "sym", size, j]
        if ((timing, "mpi", size, j) in t) am[++nm] = t[timing, "mpi", size, j]
        if (((timing, "sym", size, j) in t) && ((timing, "mpi", size, j) in t) && t[timing, "mpi", size, j] > 0) {
            r = t[timing, "sym", size, j] / t[timing, "mpi", size, j]; if (r < lo) lo = r; if (r > hi) hi = r
        }
    }
    if (!ns || !nm) { missing++; ratio_last = -1; return "| — | — | — | — " }
    ms = median(as, ns); mm = median(am, nm); ratio_last = mm > 0 ? ms / mm : 0
    return sprintf("| %.2f | %.2f | %.2f | %.2f–%.2f ", ms, mm, ratio_last, lo, hi)
}
END {
    printf "| bytes | algo | rot. symcoll µs | rot. Open MPI µs | rot. ratio | rot. range | same symcoll µs | same Open MPI µs | same ratio | same range | target | met (rot./same) | wrong |\n"
    printf "| ---: | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :---: | ---: |\n"
    for (i = 1; i <= nsizes; i++) {
        size = sizes[i]; tg = target(size)
        a = cell("rotate", size); ra = ratio_last
        b = cell("same", size); rb = ratio_last
        met = "—"
        if (tg) {
            ma = ra < 0 ? "no data" : (ra <= tg ? "yes" : "**no**")
            mb = rb < 0 ? "no data" : (rb <= tg ? "yes" : "**no**")
            met = ma " / " mb
            if (ra > tg || rb > tg) misses++
        }
        if (wrong[size]) bad++
        printf "| %d | %s %s%s| %s | %s | %d |\n", size, algo[size], a, b, tg ? sprintf("≤ %.1f×", tg) : "—", met, wrong[size]
    }
    printf "\n%d sizes; sizes missing a target (either timing): %d; sizes with wrong results: %d; cells without data: %d.\n",
        nsizes, misses + 0, bad + 0, missing + 0
}' "$outdir"/raw/"$1"-*.csv
}

commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
git diff --quiet HEAD 2>/dev/null || commit="$commit (with local changes)"
{
    echo "# Host all-reduce speed, timed two ways: symcoll vs Open MPI"
    echo
    echo "Recorded by \`bench/host_speed.sh\`, started $date_start."
    echo "Machine: $(nproc) CPUs, $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1);" \
         "load average at start: $load_start, at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "symcoll commit: $commit; $(mpirun --version 2>/dev/null | head -1)."
    echo
    echo "2 ranks, float64 sum, plain (malloc) buffers, out of place. Two timings of the same"
    echo "loop (calls back to back, per-call mean of a repeat, slowest rank, median of $repeats"
    echo "repeats): *rot.* sends two input buffers in turn (symcoll_perf's default), *same*"
    echo "sends one buffer every call as OSU's osu_allreduce does (--same-buffer). $rounds rounds;"
    echo "in each, for every placement and timing, symcoll and Open MPI ran back to back"
    echo "(first one swapped every round). Cells: median over the rounds; ratio = symcoll /"
    echo "Open MPI of the medians, range = of the per-round ratios. wrong = wrong elements,"
    echo "all runs, both sides (every repeat's result checked against a reference)."
    echo "Launchers at their defaults (symcoll_run binds rank r to core r; mpirun binds to"
    echo "cores for 2 ranks)."
    echo
    echo "Commands (repository root; TIMING is empty or --same-buffer):"
    echo
    echo '```'
    for place in $places; do
        for sys in sym mpi; do
            echo "$(cmd $place $sys rotate) [TIMING]"
        done
    done
    echo '```'
    for place in $places; do
        echo
        if [ $place = intra ]; then
            echo "## One node (Open MPI: ob1 + vader shared memory)"
        else
            echo "## 2 simulated nodes (symcoll over UCX: ${tls:-unknown}; Open MPI: ob1 + tcp on lo)"
        fi
        echo
        table $place
    done
} >"$outdir/host-speed.md"
cat "$outdir/host-speed.md"
grep -q 'wrong results: 0; cells without data: 0\.' "$outdir/host-speed.md" || status=1
echo "wrote $outdir/host-speed.md" >&2
exit $status
