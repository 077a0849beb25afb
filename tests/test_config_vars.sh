#!/bin/sh
# Every SYMCOLL_* variable the library mentions in a string (getenv, the config table,
# log messages) must be a row of the configuration table, as printed by `symcoll_info -c`;
# every row of the table must be printed. The tools may also use the variables that
# symcoll_run documents in its help (it sets them for programs, the library ignores them).
. "${top_srcdir:-.}/tests/testlib.sh"
info="$top_builddir/tools/symcoll_info"
run="$top_builddir/tools/symcoll_run"
make_tmp config-vars

# names_in_strings DIR...: SYMCOLL_* names inside C string literals of the sources under
# DIR, minus identifiers of the public header (enum constants, macros), which are not
# variables. Names in comments do not count: they are not read.
names_in_strings() {
    find "$@" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cc' \
        -o -name '*.cpp' \) 2>/dev/null | sort | while read -r f; do
        # the compiler drops the comments (no macro expansion, no includes), so a
        # quoted name in a comment is not taken for a read; then keep string literals
        # (if the compiler cannot, take the file as it is: too many names, never too few)
        ${CC:-cc} -fpreprocessed -dD -E -P -x c "$f" 2>/dev/null >"$tmp/pp" ||
            cp "$f" "$tmp/pp"
        grep -o '"\([^"\\]\|\\.\)*"' "$tmp/pp" |
            grep -o 'SYMCOLL_[A-Z0-9_]*[A-Z0-9]'
    done | sort -u | comm -23 - "$tmp/api_idents"
}

grep -o 'SYMCOLL_[A-Z0-9_]*' "$top_srcdir/include/symcoll.h" | sort -u >"$tmp/api_idents"

for t in "$info" "$run"; do
    if [ ! -x "$t" ]; then
        echo "FAIL: $t not built"
        exit 99
    fi
done

# What the table prints, from a clean environment (an invalid SYMCOLL_* value in the
# caller's environment must not change the result).
env -i PATH="$PATH" "$info" -c >"$tmp/info.out" 2>"$tmp/info.err"
rc=$?
if [ $rc -ne 0 ]; then
    echo "FAIL: symcoll_info -c exited with $rc:"
    cat "$tmp/info.err"
    exit 1
fi
# A row's former name (ROW_FORMER) is still read where the new one is unset: allowed.
{
    sed -n 's/^\(SYMCOLL_[A-Z0-9_]*\)=.*/\1/p' "$tmp/info.out"
    tr '\n' ' ' <"$top_srcdir/src/core/config.c" |
        grep -o 'ROW_FORMER( *"SYMCOLL_[A-Z0-9_]*", *"SYMCOLL_[A-Z0-9_]*"' |
        sed 's/.*"\(SYMCOLL_[A-Z0-9_]*\)"$/\1/'
} | sort -u >"$tmp/table"
ntable=$(wc -l <"$tmp/table")

# Self-check: a source that reads a variable missing from the table must be flagged,
# one that only names an API constant or mentions a variable in a comment must not.
mkdir -p "$tmp/fake"
cat >"$tmp/fake/fake.c" <<'EOF'
/* reads "SYMCOLL_IN_A_COMMENT" */
static const char *v = "SYMCOLL_NOT_A_ROW";
static const char *e = "failed with SYMCOLL_ERR_TIMED_OUT";
const char *x(void) { return getenv("SYMCOLL_TIMEOUT") ? v : e; } // "SYMCOLL_LINE_COMMENT"
EOF
self=$(names_in_strings "$tmp/fake" | comm -23 - "$tmp/table" | tr '\n' ' ')
if [ "$self" != "SYMCOLL_NOT_A_ROW " ]; then
    echo "FAIL: self-check: expected only SYMCOLL_NOT_A_ROW flagged, got '$self'"
    exit 99
fi

"$run" -h | grep -o 'SYMCOLL_[A-Z0-9_]*[A-Z0-9]' | sort -u >"$tmp/launcher"
sort -u "$tmp/table" "$tmp/launcher" >"$tmp/table_launcher"

# report_unknown WHERE DIR NAMES ALLOWED WHAT-ALLOWED: names not allowed, and their files
report_unknown() {
    expect_subset "$3" "$4" "named in $1 but not $5" && return 0
    for n in $missing; do
        echo "    $n is in:"
        grep -rln "\"[^\"]*${n}[^A-Z0-9_]" "$2" | sed 's/^/        /'
    done
}
# 1. the library
names_in_strings "$top_srcdir/src" >"$tmp/read"
report_unknown src/ "$top_srcdir/src" "$tmp/read" "$tmp/table" \
    "in the configuration table (src/core/config.c)"
# 2. the tools
names_in_strings "$top_srcdir/tools" >"$tmp/read_tools"
report_unknown tools/ "$top_srcdir/tools" "$tmp/read_tools" "$tmp/table_launcher" \
    "in the configuration table nor among the variables symcoll_run -h documents"
nread=$(sort -u "$tmp/read" "$tmp/read_tools" | wc -l)

# 3. every row of the table shows up in symcoll_info -c
tr '\n' ' ' <"$top_srcdir/src/core/config.c" | grep -o 'ROW\(_FORMER\)\{0,1\}( *"SYMCOLL_[A-Z0-9_]*"' |
    sed 's/.*"\(SYMCOLL_[A-Z0-9_]*\)"$/\1/' |
    sort -u >"$tmp/rows"
nrows=$(wc -l <"$tmp/rows")
if [ "$nrows" -eq 0 ]; then
    echo "FAIL: no ROW(\"SYMCOLL_...\") found in src/core/config.c"
    status=1
fi
expect_subset "$tmp/rows" "$tmp/table" "rows of src/core/config.c that symcoll_info -c does not print"

# 4. every row carries a documentation line (printed as '# text' before it)
nodoc=$(awk '/^# ./ { doc = 1; next } /^SYMCOLL_/ { if (!doc) print $0; doc = 0 }' \
    "$tmp/info.out")
if [ -n "$nodoc" ]; then
    echo "FAIL: variables printed without documentation:"
    echo "$nodoc" | sed 's/^/    /'
    status=1
fi

# Rows that no other source names are worth a look (a knob nobody reads), not a failure:
# the table itself is what reads them.
[ $status -eq 0 ] &&
    echo "PASS: $nread SYMCOLL_* names used in src/ and tools/, all among the $ntable rows" \
        "printed by symcoll_info -c (tools: or the $(wc -l <"$tmp/launcher") documented by" \
        "symcoll_run -h)"
exit $status
