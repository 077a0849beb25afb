#!/bin/sh
# Host all-reduce across 2 simulated nodes (2 ranks, doubles, UCX over TCP) with two UCX
# releases, in alternating rounds so that a busy machine weighs on both alike; prints
# the median time per size and the ratio of the second build to the first. Needs only
# built trees (their tools/symcoll_run and tools/symcoll_perf).
#
#   bench/ucx_versions.sh BUILD_A BUILD_B [LIBDIR_B] OUTDIR
#
# BUILD_A: a build tree against one UCX (e.g. Debian's 1.13); BUILD_B: a build tree
# against another (configure --with-ucx=DIR); LIBDIR_B: that UCX's lib folder, put first
# in LD_LIBRARY_PATH for B (empty or omitted: B's own run path decides). A tree built
# against 1.13 also runs on 1.22 that way: LIBDIR_B swaps the library under it.
# Environment: ROUNDS (default 5), PROTOCOLS (SYMCOLL_NET_PROTOCOL values, default
# "auto put"), SIZES (symcoll_perf -b/-e/-f, default "-b 8 -e 8M -f 4").
# OUTDIR gets one CSV per round, build and protocol, and summary.txt.
set -eu
[ $# -ge 3 ] || { sed -n '4,15p' "$0" >&2; exit 2; }
A=$(cd "$1" && pwd)
B=$(cd "$2" && pwd)
if [ $# -ge 4 ]; then LIBB=$3; OUT=$4; else LIBB=; OUT=$3; fi
ROUNDS=${ROUNDS:-5}
PROTOCOLS=${PROTOCOLS:-auto put}
SIZES=${SIZES:--b 8 -e 8M -f 4}
mkdir -p "$OUT"
export UCX_TLS=tcp,self UCX_WARN_UNUSED_ENV_VARS=n

one() { # build libdir protocol csv
    # shellcheck disable=SC2086
    env ${2:+LD_LIBRARY_PATH=$2} SYMCOLL_NET_PROTOCOL="$3" \
        "$1/tools/symcoll_run" -n 2 --sim-nodes 2 --timeout 600 \
        "$1/tools/symcoll_perf" -d float64 $SIZES -r 3 -c 0 --csv >"$4" 2>"$4.err" ||
        echo "warning: $1 ($3) failed, see $4.err" >&2
}

r=1
while [ $r -le "$ROUNDS" ]; do
    for p in $PROTOCOLS; do
        one "$A" "" "$p" "$OUT/a-$p-$r.csv"
        one "$B" "$LIBB" "$p" "$OUT/b-$p-$r.csv"
    done
    r=$((r + 1))
done

{
    echo "# A: $A ($(env LD_LIBRARY_PATH= "$A/tools/symcoll_info" -v 2>/dev/null | sed -n 's/^# UCX: //p'))"
    echo "# B: $B ($(env ${LIBB:+LD_LIBRARY_PATH=$LIBB} "$B/tools/symcoll_info" -v 2>/dev/null | sed -n 's/^# UCX: //p'))"
    echo "# $ROUNDS alternating rounds; per size the median over rounds of symcoll_perf's time_us"
    echo "# (itself the median of 3 repeats, slowest rank); ratio = B / A"
    for p in $PROTOCOLS; do
        echo "# SYMCOLL_NET_PROTOCOL=$p"
        printf '%10s %12s %12s %7s\n' bytes A_us B_us B/A
        # shellcheck disable=SC2013
        for s in $(awk -F, '$1 ~ /^[0-9]+$/ { print $1 }' "$OUT"/a-"$p"-*.csv | sort -n -u); do
            ma=$(awk -F, -v s="$s" '$1 == s { print $7 }' "$OUT"/a-"$p"-*.csv | sort -g |
                awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')
            mb=$(awk -F, -v s="$s" '$1 == s { print $7 }' "$OUT"/b-"$p"-*.csv | sort -g |
                awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')
            awk -v s="$s" -v a="${ma:-0}" -v b="${mb:-0}" \
                'BEGIN { printf "%10d %12.2f %12.2f %7.2f\n", s, a, b, (a > 0 ? b / a : 0) }'
        done
    done
} | tee "$OUT/summary.txt"
