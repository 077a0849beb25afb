#!/bin/sh
# What a tuning file changes, A/B in one run: for each layout, symcoll_tune writes a file
# (unless -f gives one), then symcoll_perf runs each collective with the built-in rules
# and with the file (SYMCOLL_TUNE_FILE), alternating, ROUNDS rounds; per size the median
# time of each, the ratio tuned / built-in and the algorithms each ran. Then the cost of
# loading the file at creation: bench/scale_setup's creation time with and without it.
# Usage: bench/tune_ab.sh [-b BUILD] [-r ROUNDS] [-o OUTDIR] [-f FILE] [-q]
#   -q: symcoll_tune --quick (and symcoll_perf up to 1M); LAYOUTS: the symcoll_run
#   arguments of each layout, ';'-separated (default "-n 3;-n 4 --sim-nodes 2");
#   SETUP_RANKS: ranks of the creation-cost runs (default 64, on 4 simulated nodes)
set -eu
build=build rounds=3 out=tune-ab file= quick=
while [ $# -gt 0 ]; do
    case $1 in
    -b) build=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    -o) out=$2; shift 2 ;;
    -f) file=$2; shift 2 ;;
    -q) quick=--quick; shift ;;
    *) echo "usage: $0 [-b BUILD] [-r ROUNDS] [-o OUTDIR] [-f FILE] [-q]" >&2; exit 2 ;;
    esac
done
mkdir -p "$out"
export UCX_TLS="${UCX_TLS:-tcp,self}" UCX_WARN_UNUSED_ENV_VARS=n
run="$build/tools/symcoll_run"
max=16M
[ -z "$quick" ] || max=1M
[ -n "$file" ] || file="$out/tune.txt"
: >"$out/raw.csv"
echo "${LAYOUTS:-"-n 3;-n 4 --sim-nodes 2"}" | tr ';' '\n' | while read -r layout; do
    label=$(echo "$layout" | tr -d ' -' | sed 's/simnodes/ on /')
    if ! grep -q "^# tuned for: $label\$" "$out/tuned" 2>/dev/null; then
        # shellcheck disable=SC2086
        "$run" $layout "$build/tools/symcoll_tune" $quick -o "$file" | tee -a "$out/tune.log"
        echo "# tuned for: $label" >>"$out/tuned"
    fi
    for r in $(seq "$rounds"); do
        # each variant first in every other round
        order="builtin tuned"
        [ $((r % 2)) -eq 1 ] || order="tuned builtin"
        for v in $order; do
            for c in allreduce reduce_scatter allgather broadcast; do
                f=
                [ $v = builtin ] || f=$file
                # shellcheck disable=SC2086
                SYMCOLL_TUNE_FILE=$f "$run" $layout "$build/tools/symcoll_perf" --coll $c \
                    -b 8 -e $max -f 4 -r 3 --csv 2>/dev/null |
                    awk -F, -v l="$label" -v v=$v -v c=$c \
                        '$1 ~ /^[0-9]+$/ { print l "," c "," v "," $1 "," $7 "," $5 "," $10 }' \
                        >>"$out/raw.csv"
            done
        done
        echo "$label: round $r done" >&2
    done
done
python3 - "$out/raw.csv" <<'PY' | tee "$out/table.md"
import csv, sys, statistics
t, algo, wrong = {}, {}, 0
for layout, coll, var, size, us, alg, bad in csv.reader(open(sys.argv[1])):
    key = (layout, coll, int(size))
    t.setdefault(key, {}).setdefault(var, []).append(float(us))
    algo.setdefault(key, {})[var] = alg
    wrong += bad not in ("0", "")
print("| layout | collective | bytes | built-in us (algo) | tuned us (algo) | tuned / built-in |")
print("|---|---|---:|---:|---:|---:|")
for key in sorted(t):
    m = t[key]
    if "builtin" not in m or "tuned" not in m:
        continue
    b, u = statistics.median(m["builtin"]), statistics.median(m["tuned"])
    a = algo[key]
    print(f"| {key[0]} | {key[1]} | {key[2]} | {b:.1f} ({a.get('builtin')}) | "
          f"{u:.1f} ({a.get('tuned')}) | {u / b:.2f} |")
print(f"\nwrong elements in all runs: {wrong}")
PY
# creation with and without the file, SETUP_RANKS ranks on 4 simulated nodes
n=${SETUP_RANKS:-64}
if [ "$n" -gt 0 ] && [ -x "$build/bench/scale_setup" ]; then
    for r in $(seq "$rounds"); do
        for v in builtin tuned; do
            f=
            [ $v = builtin ] || f=$file
            SYMCOLL_TUNE_FILE=$f "$run" -n "$n" --sim-nodes 4 --timeout 300 \
                "$build/bench/scale_setup" -c 1 2>/dev/null | grep -E "^  create (time|CPU time) s" |
                sed "s/^/$v round $r: /" | tee -a "$out/setup.txt" || true
        done
    done
fi
