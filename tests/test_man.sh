#!/bin/sh
# The manual covers the API: every function include/symcoll.h exports or defines inline,
# every symcoll_ symbol of the built library, every type and every status code has a
# section 3 page, each tool a section 1 page that names all the options its -h prints,
# and symcoll(7) every variable of the configuration table. `make install` installs the
# pages (and their HTML), groff renders each without a warning, and every page named in
# a SEE ALSO exists.
. "${top_srcdir:-.}/tests/testlib.sh"
: "${MAKE:=make}" "${NM:=nm}" "${mandir:?}" "${docdir:?}" "${SYMCOLL_MAN_ON:=yes}"
make_tmp man
header="$top_srcdir/include/symcoll.h"
tools="symcoll_run symcoll_perf symcoll_info"

# api_names HEADER: the names that need a section 3 page
api_names() {
    {
        sed -n 's/.*SYMCOLL_EXPORT[^(]*[ *]\(symcoll_[a-z0-9_]*\)(.*/\1/p' "$1"
        sed -n 's/^static inline[^(]*[ *]\(symcoll_[a-z0-9_]*\)(.*/\1/p' "$1"
        sed -n 's/^} *\(symcoll_[a-z0-9_]*\);.*/\1/p' "$1"
        sed -n 's/^typedef [^(]*[ *]\(symcoll_[a-z0-9_]*\);.*/\1/p' "$1"
        sed -n 's/^typedef [^(]*(\*\(symcoll_[a-z0-9_]*\))(.*/\1/p' "$1"
        sed -n 's/^ *\(SYMCOLL_OK\|SYMCOLL_ERR_[A-Z0-9_]*\) *=.*/\1/p' "$1" | grep -v '_LAST$'
    } | sort -u
}

# missing_pages NAMES DIR: the names without a page NAME.3 or a source NAME.3.md in DIR
missing_pages() {
    while read -r n; do
        [ -f "$2/$n.3" ] || [ -f "$2/$n.3.md" ] || echo "$n"
    done <"$1"
}

# Self-check: a call, a type and a status code added to the header without a page are
# all caught.
sed -e 's/^\(SYMCOLL_EXPORT const char \*symcoll_build_info(void);\)/\1\
SYMCOLL_EXPORT int symcoll_undocumented(int x);/' \
    -e 's/^\( *SYMCOLL_ERR_INTERNAL = -12,\)/    SYMCOLL_ERR_UNDOCUMENTED = -20,\
\1/' -e 's/^\(typedef struct symcoll_comm \*symcoll_comm_h;\)/\1\
typedef struct symcoll_thing *symcoll_thing_h;/' "$header" >"$tmp/fake.h"
api_names "$tmp/fake.h" >"$tmp/fake_names"
api_names "$header" >"$tmp/real_names"
missing_pages "$tmp/real_names" "$top_srcdir/man" >"$tmp/real_missing"
self=$(missing_pages "$tmp/fake_names" "$top_srcdir/man" | comm -23 - "$tmp/real_missing" |
    tr '\n' ' ')
if [ "$self" != "SYMCOLL_ERR_UNDOCUMENTED symcoll_thing_h symcoll_undocumented " ]; then
    echo "FAIL: self-check: expected the three undocumented names flagged, got '$self'"
    exit 99
fi

api_names "$header" >"$tmp/names"
if [ "$(grep -c '^symcoll_' "$tmp/names")" -lt 25 ] ||
    [ "$(grep -c '^SYMCOLL_ERR_' "$tmp/names")" -lt 10 ]; then
    echo "FAIL: found too few calls, types or status codes in $header:"
    cat "$tmp/names"
    exit 99
fi
# the library's own exports (the header may miss one the library has)
dlname=$(sed -n "s/^dlname='\(.*\)'$/\1/p" "$top_builddir/libsymcoll.la" 2>/dev/null)
if [ -n "$dlname" ]; then
    $NM -D --defined-only "$top_builddir/.libs/$dlname" | awk '{ print $NF }' |
        sed 's/@.*//' | grep '^symcoll_' >>"$tmp/names" || exit 99
    sort -u -o "$tmp/names" "$tmp/names"
fi
nnames=$(wc -l <"$tmp/names")

# 1. the sources: every name has a page written for it
missing_pages "$tmp/names" "$top_srcdir/man" >"$tmp/nosrc"
if [ -s "$tmp/nosrc" ]; then
    echo "FAIL: exported names without a page in man/ (add man/NAME.3.md and list it in" \
        "man/local.mk):"
    sed 's/^/    /' "$tmp/nosrc"
    status=1
fi
for t in $tools; do
    [ -f "$top_srcdir/man/$t.1.md" ] || { echo "FAIL: no man/$t.1.md"; status=1; }
done

# 2. each tool's page names every option its -h prints (as **-x** or **\--long**)
for t in $tools; do
    src="$top_srcdir/man/$t.1.md"
    [ -f "$src" ] || continue
    if ! "$top_builddir/tools/$t" -h >"$tmp/$t.help" 2>&1; then
        echo "FAIL: $t -h failed:"
        cat "$tmp/$t.help"
        status=1
        continue
    fi
    sed -n 's/^ *\(-[a-zA-Z]\)[ ,].*/\1/p; s/^ *-[a-zA-Z], *\(--[a-z][a-z-]*\).*/\1/p;
            s/^ *\(--[a-z][a-z-]*\).*/\1/p' "$tmp/$t.help" | sort -u >"$tmp/$t.opts"
    [ -s "$tmp/$t.opts" ] || { echo "FAIL: found no option in $t -h"; status=1; }
    sed 's/\\//g' "$src" >"$tmp/$t.md"
    while read -r o; do
        grep -qF -- "**$o**" "$tmp/$t.md" ||
            { echo "FAIL: $t -h prints option $o, which man/$t.1.md does not describe"; status=1; }
    done <"$tmp/$t.opts"
done

# 3. every page a SEE ALSO or a text names in bold with a section exists
cat "$top_srcdir"/man/*.[137].md | grep -o '\*\*symcoll[a-z0-9_]*\*\*([137])' |
    sed 's/\*\*\(.*\)\*\*(\(.\))/\1.\2/' | sort -u >"$tmp/refs"
while read -r r; do
    [ -f "$top_srcdir/man/$r.md" ] || { echo "FAIL: a page refers to $r, which has no man/$r.md"; status=1; }
done <"$tmp/refs"

if [ "$SYMCOLL_MAN_ON" != yes ]; then
    [ $status -eq 0 ] && echo "PASS: all $nnames exported names have a page in man/" \
        "(not rendered: configure found neither pandoc nor rendered pages)"
    exit $status
fi

# 4. make install installs a page for each name, the tools and symcoll(7)
dest="$tmp/dest"
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u TESTS $MAKE -C "$top_builddir" \
    install-man install-symcollhtmlDATA DESTDIR="$dest" >"$tmp/install.log" 2>&1; then
    echo "FAIL: make install-man install-symcollhtmlDATA failed:"
    tail -30 "$tmp/install.log"
    exit 1
fi
man="$dest$mandir"
while read -r n; do
    [ -f "$man/man3/$n.3" ] || { echo "FAIL: make install did not install $mandir/man3/$n.3"; status=1; }
done <"$tmp/names"
for p in man1/symcoll_run.1 man1/symcoll_perf.1 man1/symcoll_info.1 man7/symcoll.7; do
    [ -f "$man/$p" ] || { echo "FAIL: make install did not install $mandir/$p"; status=1; }
done

# 5. groff renders every installed page (the .so ones through their target) without a
# warning; -ww enables them all
npages=0
cd "$man" || exit 99
for p in man*/*; do
    npages=$((npages + 1))
    groff -man -ww -z -Tutf8 "$p" >"$tmp/groff.err" 2>&1
    if [ $? -ne 0 ] || [ -s "$tmp/groff.err" ]; then
        echo "FAIL: groff -man -ww warns about $mandir/$p:"
        sed 's/^/    /' "$tmp/groff.err"
        status=1
    fi
done
cd - >/dev/null || exit 99

# 6. symcoll(7) describes every variable of the configuration table
sed -n 's/^[[:space:]]*ROW("\(SYMCOLL_[A-Z0-9_]*\)".*/\1/p' "$top_srcdir/src/core/config.c" |
    sort -u >"$tmp/rows"
[ -s "$tmp/rows" ] || { echo "FAIL: no ROW(\"SYMCOLL_...\") in src/core/config.c"; exit 99; }
grep -o 'SYMCOLL_[A-Z0-9_]*[A-Z0-9]' "$man/man7/symcoll.7" | sort -u >"$tmp/page_vars"
expect_subset "$tmp/rows" "$tmp/page_vars" \
    "variables of src/core/config.c missing from the installed symcoll(7)"

# 7. the HTML: one file per page, links only to files that exist
html="$dest$docdir/html"
nhtml=$(ls "$html"/*.html 2>/dev/null | wc -l)
# the pages written are man/NAME.SECTION.md; a build in the sources may put other
# Markdown beside them
nmd=$(ls "$top_srcdir"/man/*.[137].md | wc -l)
[ "$nhtml" -eq "$nmd" ] ||
    { echo "FAIL: $nhtml HTML pages installed in $docdir/html, $nmd pages written"; status=1; }
for l in $(cat "$html"/*.html | grep -o 'href="symcoll[a-z0-9_.]*html"' | sort -u |
    sed 's/href="\(.*\)"/\1/'); do
    [ -f "$html/$l" ] || { echo "FAIL: an HTML page links to $l, which is not installed"; status=1; }
done

[ $status -eq 0 ] && echo "PASS: $nnames exported names, 3 tools and symcoll(7) have pages;" \
    "$npages pages installed and rendered without warnings, $nhtml in HTML"
exit $status
