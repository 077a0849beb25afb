# Shared preamble and helpers of the shell tests; sourced as
#   . "${top_srcdir:-.}/tests/testlib.sh"
# (make check sets top_srcdir, top_builddir and the tools' variables, see tests/local.mk).
set -u
LC_ALL=C
export LC_ALL
top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
status=0

# make_tmp NAME: a private temporary directory in $tmp, removed on exit
make_tmp() {
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/symcoll-$1.XXXXXX") || exit 99
    trap 'rm -rf "$tmp"' EXIT
}

# expect_subset A B WHAT: every line of the sorted file A must be in the sorted file B;
# otherwise prints "FAIL: WHAT:" and the missing lines, sets status=1 and returns 1
expect_subset() {
    missing=$(comm -23 "$1" "$2")
    [ -z "$missing" ] && return 0
    echo "FAIL: $3:"
    echo "$missing" | sed 's/^/    /'
    status=1
    return 1
}
