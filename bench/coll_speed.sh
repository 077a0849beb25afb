#!/bin/sh
# Times symcoll's host reduce-scatter, all-gather, broadcast and barrier against Open
# MPI's, 2 ranks, inside one node (vader) and across 2 simulated nodes (TCP loopback),
# alternating the two in every round, and writes OUTDIR/collectives-speed.md.
#
#   bench/coll_speed.sh OUTDIR [options]     (from the source tree root, built in ./build)
set -u

usage() {
    cat <<EOF
usage: $0 OUTDIR [--build DIR] [--rounds K] [--colls "LIST"] [--where "intra inter"]
          [-b MIN] [-e MAX] [-f FACTOR] [-r REPEATS] [-n ITERS] [-w WARMUP] [--pool]
  OUTDIR        where collectives-speed.md and the raw CSVs (OUTDIR/raw) go
  --build DIR   the build tree (default: ./build)
  --rounds K    rounds; each runs every collective with symcoll, then Open MPI (default 3)
  --colls LIST  default "reduce_scatter allgather broadcast barrier"
  --where LIST  intra (2 ranks, one node) and/or inter (2 simulated nodes); default both
  -b, -e, -f    sizes as symcoll_perf (default 8, 8M, 4)
  -r REPEATS    repeats inside each run (default 5); -n, -w: symcoll_perf's (default auto;
                the barrier, whose auto count is short enough to be noisy: -n 20000)
  --pool        symcoll's buffers from its pool (symcoll_perf -P: symcoll_mem_alloc, read
                and written in place by the peers); default plain malloc buffers, which
                go through the staging slots. Open MPI's are malloc buffers either way.
Needs DIR/tools/symcoll_run, DIR/tools/symcoll_perf, DIR/bench/mpi_allreduce_peer and
mpirun on PATH. A cell is the median over the rounds; ratio = symcoll / Open MPI.
EOF
}

[ $# -ge 1 ] || { usage >&2; exit 2; }
case $1 in -h|--help) usage; exit 0 ;; esac
out=$1
shift
build=./build rounds=3 colls="reduce_scatter allgather broadcast barrier" where="intra inter"
minb=8 maxb=8M factor=4 repeats=5 iters= warmup= bar_iters="-n 20000" pool=
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --colls) colls=$2; shift ;;
    --where) where=$2; shift ;;
    -b) minb=$2; shift ;;
    -e) maxb=$2; shift ;;
    -f) factor=$2; shift ;;
    -r) repeats=$2; shift ;;
    -n) iters="-n $2" bar_iters="-n $2"; shift ;;
    -w) warmup="-w $2"; shift ;;
    --pool) pool=" -P" ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
    shift
done
for f in tools/symcoll_run tools/symcoll_perf bench/mpi_allreduce_peer; do
    [ -x "$build/$f" ] || { echo "$0: $build/$f not found (build first)" >&2; exit 2; }
done
command -v mpirun >/dev/null 2>&1 || { echo "$0: mpirun not on PATH" >&2; exit 2; }
mkdir -p "$out/raw" || exit 2
build=$(cd "$build" && pwd)
srcdir=$(cd "$(dirname "$0")/.." && pwd)
commit="$(git -C "$srcdir" rev-parse --short HEAD 2>/dev/null || echo unknown)"
git -C "$srcdir" diff --quiet HEAD 2>/dev/null || commit="$commit (with local changes)"

export UCX_TLS=tcp,self UCX_WARN_UNUSED_ENV_VARS=n
args="-d float64 -o sum -b $minb -e $maxb -f $factor -r $repeats $iters $warmup --csv"
sym="$build/tools/symcoll_run -n 2 --bind-to core --timeout 900"
mpi="mpirun --allow-run-as-root -np 2 --bind-to core --mca pml ob1"
peer="$build/bench/mpi_allreduce_peer"
sym_intra="$sym $build/tools/symcoll_perf -m host$pool"
sym_inter="$sym --sim-nodes 2 $build/tools/symcoll_perf -m host$pool"
mpi_intra="$mpi --mca btl self,vader $peer"
mpi_inter="$mpi --mca btl self,tcp --mca btl_tcp_if_include lo $peer"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
date_start=$(date -u '+%Y-%m-%d %H:%M UTC')
status=0

# run SIDE WHERE COLL ROUND CMD
run() {
    f="$out/raw/$2.$3.$1.$4"
    echo "round $4: $2 $3 $1" >&2
    a=$args
    [ "$3" = barrier ] && a="$a $bar_iters"
    if ! timeout 1200 sh -c "$5 --coll $3 $a" >"$f.csv" 2>"$f.err"; then
        echo "  failed: $(tail -3 "$f.err")" >&2
        status=1
    fi
}

r=1
while [ $r -le "$rounds" ]; do
    for w in $where; do
        for c in $colls; do
            eval "run sym $w $c $r \"\$sym_$w\""
            eval "run mpi $w $c $r \"\$mpi_$w\""
        done
    done
    r=$((r + 1))
done

# table WHERE COLL: the markdown rows of one collective at one place
table() {
    awk -F, -v where="$1" -v coll="$2" -v rounds="$rounds" -f - \
        "$out"/raw/"$1.$2".sym.*.csv "$out"/raw/"$1.$2".mpi.*.csv <<'EOF'
function median(a, n,    i, j, t, b) {
    for (i = 1; i <= n; i++) b[i] = a[i]
    for (i = 2; i <= n; i++) { t = b[i]; for (j = i - 1; j >= 1 && b[j] > t; j--) b[j + 1] = b[j]; b[j + 1] = t }
    return n % 2 ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2
}
# the targets: inside a node <= 1.0x up to 2 KB, <= 0.6x from 128 KB; across nodes
# <= 1.0x; none for a call that moves nothing (count 0: size 8 of 2 ranks' blocks)
function target(size, count) {
    if (count == 0 && coll != "barrier") return 0
    if (where == "inter") return 1.0
    return size <= 2048 ? 1.0 : (size >= 131072 ? 0.6 : 0)
}
FNR == 1 { side = FILENAME ~ /\.sym\./ ? "s" : "m"; n = split(FILENAME, p, "."); run = p[n - 1] + 0 }
$1 ~ /^[0-9]+$/ && $6 == "out" {
    size = $1 + 0
    if (!(size in seen)) { seen[size] = 1; sizes[++nsizes] = size; cnt[size] = $2 + 0 }
    t[side, size, run] = $7 + 0
    if ($10 != "") wrong[size] += $10
}
END {
    for (i = 1; i <= nsizes; i++) {
        size = sizes[i]; ns = nm = 0; lo = 1e300; hi = 0
        for (j = 1; j <= rounds; j++) {
            if (("s", size, j) in t) as[++ns] = t["s", size, j]
            if (("m", size, j) in t) am[++nm] = t["m", size, j]
            if ((("s", size, j) in t) && (("m", size, j) in t) && t["m", size, j] > 0) {
                r = t["s", size, j] / t["m", size, j]; if (r < lo) lo = r; if (r > hi) hi = r
            }
        }
        tg = target(size, cnt[size])
        if (!ns || !nm) {
            printf "| %s | %s | %d | %s | %s | — | — | %s | no data | %d |\n", coll, where, size,
                ns ? sprintf("%.2f", median(as, ns)) : "missing",
                nm ? sprintf("%.2f", median(am, nm)) : "missing",
                tg ? sprintf("≤ %.1f×", tg) : "—", wrong[size]
            continue
        }
        ms = median(as, ns); mm = median(am, nm); ratio = mm > 0 ? ms / mm : 0
        met = tg == 0 ? "—" : (ratio <= tg ? "yes" : "**no**")
        printf "| %s | %s | %d | %.2f | %.2f | %.2f | %.2f–%.2f | %s | %s | %d |\n", coll, where,
            size, ms, mm, ratio, lo, hi, tg ? sprintf("≤ %.1f×", tg) : "—", met, wrong[size]
    }
}
EOF
}

md="$out/collectives-speed.md"
{
    echo "# Host collectives: symcoll vs Open MPI, 2 ranks, doubles"
    echo
    echo "Recorded by \`bench/coll_speed.sh\`, started $date_start; $rounds rounds, each running"
    echo "every collective with symcoll, then with Open MPI (so that drift hits both alike)."
    echo "Machine: $(nproc) cores, $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1);"
    echo "load average at start $load_start, at the end $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "symcoll commit $commit; $(mpirun --version 2>/dev/null | head -1)."
    echo
    echo "intra: 2 ranks on one node, symcoll's host algorithms vs ob1 + vader; inter: 2"
    echo "simulated nodes x 1 rank, symcoll over UCX (UCX_TLS=tcp,self) vs ob1 + tcp over"
    echo "loopback. Both launchers bind a rank per core. Size as nccl-tests counts it (the"
    echo "larger buffer); a run times a size as the median of $repeats repeats of the mean"
    echo "time per call of the slowest rank; a cell is the median over the rounds, ratio ="
    echo "symcoll / Open MPI (below 1: symcoll faster), with the range of the per-round"
    echo "ratios. Targets: intra ≤ 1.0× up to 2 KB and ≤ 0.6× from 128 KB, inter ≤ 1.0×;"
    echo "none for the 0-element calls (size 8 of reduce-scatter and all-gather). wrong ="
    echo "wrong elements over every round, both sides."
    if [ -n "$pool" ]; then
        echo "symcoll's buffers come from its pool (symcoll_mem_alloc, \`-P\`): no staging copy."
    else
        echo "symcoll's buffers are plain malloc buffers (through its staging slots)."
    fi
    echo
    echo "Commands (COLL one of: $colls; ARGS: --coll COLL $args, barrier also $bar_iters):"
    echo
    echo '```'
    for w in $where; do
        eval "echo \"\$sym_$w ARGS\""
        eval "echo \"\$mpi_$w ARGS\""
    done
    echo '```'
    echo
    echo "| collective | where | bytes | symcoll µs | Open MPI µs | ratio | ratio range | target | met | wrong |"
    echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | :---: | ---: |"
    for c in $colls; do
        for w in $where; do
            table "$w" "$c"
        done
    done
} >"$md.rows"
misses=$(grep -c '\*\*no\*\*' "$md.rows")
nodata=$(grep -c 'no data' "$md.rows")
badrows=$(awk -F'|' '$11 + 0 > 0' "$md.rows" | wc -l)
{
    cat "$md.rows"
    echo
    echo "Sizes missing their target: $misses; without data: $nodata; with wrong results: $badrows."
} >"$md"
rm -f "$md.rows"
cat "$md"
echo "wrote $md" >&2
[ "$nodata" = 0 ] && [ "$badrows" = 0 ] || status=1
exit $status
