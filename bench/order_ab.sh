#!/bin/sh
# The cost of the canonical reduction order (SYMCOLL_REDUCTION_ORDER), A/B in one run:
# for each case, symcoll_perf under symcoll_run with the two settings in turn, ROUNDS
# rounds, then per size the median time of each and the ratio canonical / fastest.
# Inside a node both settings run the same tree; there the comparison is against a
# build of the parent commit (BASE, left-to-right order): --base DIR.
# Usage: bench/order_ab.sh [-b BUILD] [--base BASEBUILD] [-r ROUNDS] [-o OUTDIR]
# (MINBYTES, MAXBYTES: the smallest and largest size, default 8 and 16M; WIDE=1 adds
# 6 ranks on 3 nodes)
set -eu
build=build base= rounds=3 out=order-ab
while [ $# -gt 0 ]; do
    case $1 in
    -b) build=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    -o) out=$2; shift 2 ;;
    *) echo "usage: $0 [-b BUILD] [--base BASEBUILD] [-r ROUNDS] [-o OUTDIR]" >&2; exit 2 ;;
    esac
done
mkdir -p "$out"
export UCX_TLS="${UCX_TLS:-tcp,self}" UCX_WARN_UNUSED_ENV_VARS=n
sizes="-b ${MINBYTES:-8} -e ${MAXBYTES:-16M} -f 8 -r 3"

# one timing: case label, variant label, build dir, order, symcoll_run args, perf args
one() {
    label=$1 var=$2 dir=$3 order=$4 nargs=$5
    shift 5
    SYMCOLL_REDUCTION_ORDER=$order "$dir/tools/symcoll_run" $nargs \
        "$dir/tools/symcoll_perf" $sizes --csv "$@" 2>/dev/null |
        awk -F, -v l="$label" -v v="$var" '$1 ~ /^[0-9]+$/ { print l "," v "," $1 "," $7 "," $10 }' \
            >>"$out/raw.csv"
}

: >"$out/raw.csv"
for r in $(seq "$rounds"); do
    if [ -n "$base" ]; then
        one "1x4 f32" base "$base" canonical "-n 4"
        one "1x4 f32" canonical "$build" canonical "-n 4"
        one "1x4 bf16" base "$base" canonical "-n 4" -d bfloat16
        one "1x4 bf16" canonical "$build" canonical "-n 4" -d bfloat16
    fi
    for o in fastest canonical; do
        one "2x2 f32" $o "$build" $o "-n 4 --sim-nodes 2"
        one "3 on 2 f32" $o "$build" $o "-n 3 --sim-nodes 2"
        [ -z "${WIDE:-}" ] || one "3x2 f32" $o "$build" $o "-n 6 --sim-nodes 3"
    done
    # 16-bit floats: auto (the default) moves their partial sums in their own type
    for o in fastest canonical auto; do
        one "2x2 bf16" $o "$build" $o "-n 4 --sim-nodes 2" -d bfloat16
    done
    echo "round $r done" >&2
done
# medians per (case, variant, size); the ratio against fastest (or base)
python3 - "$out/raw.csv" <<'PY' | tee "$out/table.md"
import csv, sys, statistics
rows = list(csv.reader(open(sys.argv[1])))
t, wrong = {}, 0
for case, var, size, us, bad in rows:
    t.setdefault((case, int(size)), {}).setdefault(var, []).append(float(us))
    wrong += bad not in ("0", "")
print("| case | bytes | reference us | canonical us | canonical / reference | auto / reference |")
print("|---|---:|---:|---:|---:|---:|")
for (case, size), v in sorted(t.items()):
    ref = "base" if "base" in v else "fastest"
    if ref in v and "canonical" in v:
        a, b = statistics.median(v[ref]), statistics.median(v["canonical"])
        c = f"{statistics.median(v['auto']) / a:.2f}" if "auto" in v else "="
        print(f"| {case} ({ref}) | {size} | {a:.1f} | {b:.1f} | {b / a:.2f} | {c} |")
print(f"\nwrong elements in all runs: {wrong}")
PY
