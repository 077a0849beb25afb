#!/bin/sh
# Calls go down the layers of src/LAYERS only: scripts/layers.sh must find no reference
# of a built object, and no #include of a source, that goes up or sideways. It first
# proves on a made-up tree that it flags an upward call, a sideways call, a folder
# missing from the order, an upward #include, and an upward call from a floor inside a
# folder (high/sub) to the folder's own top floor (high).
. "${top_srcdir:-.}/tests/testlib.sh"
make_tmp layers
check="$top_srcdir/scripts/layers.sh"

# self-check: low calls high (up), a calls b (siblings), stray is not in the order, and
# a header of low includes one of high (up); a header of high including low is fine
mkdir -p "$tmp/b/src/low" "$tmp/b/src/high" "$tmp/b/src/a" "$tmp/b/src/b" "$tmp/b/src/stray" \
    "$tmp/b/src/high/sub"
mkdir -p "$tmp/src/low" "$tmp/src/high"
printf 'low\na b\nhigh/sub\nhigh\n' >"$tmp/src/LAYERS"
printf '#include "high/high.h"\n' >"$tmp/src/low/low.h"
printf '#include "low/low.h"\n#include <stdio.h>\n' >"$tmp/src/high/high.h"
cat >"$tmp/low.c" <<'X'
void high_fn(void);
void low_fn(void) { high_fn(); }
X
cat >"$tmp/high.c" <<'X'
void low_fn(void);
void high_fn(void) { low_fn(); }
X
cat >"$tmp/a.c" <<'X'
void b_fn(void);
void low_fn(void);
void a_fn(void) { b_fn(); low_fn(); }
X
cat >"$tmp/b.c" <<'X'
void b_fn(void) {}
X
cat >"$tmp/sub.c" <<'X'
void high_fn(void);
void low_fn(void);
void sub_fn(void) { high_fn(); low_fn(); }
X
cat >"$tmp/stray.c" <<'X'
void low_fn(void);
void stray_fn(void) { low_fn(); }
X
for f in low high a b stray; do
    ${CC:-cc} -c -o "$tmp/b/src/$f/$f.o" "$tmp/$f.c" || exit 99
done
${CC:-cc} -c -o "$tmp/b/src/high/sub/sub.o" "$tmp/sub.c" || exit 99
out=$(sh "$check" "$tmp/b" "$tmp/src/LAYERS")
rc=$?
if [ $rc -ne 1 ] || [ "$(echo "$out" | wc -l)" -ne 5 ] ||
    ! echo "$out" | grep -q 'low uses high_fn of high (up)' ||
    ! echo "$out" | grep -q 'a uses b_fn of b (sideways)' ||
    ! echo "$out" | grep -q 'stray uses low_fn of low: folder missing' ||
    ! echo "$out" | grep -q 'low/low.h: low uses #include of high (up)' ||
    ! echo "$out" | grep -q 'high/sub uses high_fn of high (up)'; then
    echo "FAIL: self-check: the layer check did not flag exactly the five bad references"
    echo "(exit $rc):"
    echo "$out" | sed 's/^/    /'
    exit 99
fi

out=$(sh "$check" "$top_builddir" "$top_srcdir/src/LAYERS")
rc=$?
if [ $rc -eq 2 ]; then
    echo "FAIL: the layer check could not run: $out"
    exit 99
fi
if [ $rc -ne 0 ]; then
    echo "FAIL: references that do not go down the layers of src/LAYERS:"
    echo "$out" | sed 's/^/    /'
    exit 1
fi
echo "PASS: every reference goes down: $(grep -v '^#' "$top_srcdir/src/LAYERS" | tr '\n' '<' |
    sed 's/<$//; s/</ < /g')"
