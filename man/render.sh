#!/bin/sh
# Turns one page's Markdown into a man page (roff) or HTML with pandoc. Without pandoc it
# takes the rendered page shipped in the tarball (under $srcdir), as autotools projects
# do with generated files; only a tree without them (a git checkout) needs pandoc.
# Usage: render.sh man|html SRC.md OUT    (environment: PANDOC, VERSION, srcdir)
set -eu
fmt=$1 src=$2 out=$3
: "${srcdir:=.}" "${VERSION:=}"

if [ -z "${PANDOC:-}" ]; then
    if [ -f "$srcdir/$out" ] && [ "$srcdir/$out" -ef "$out" ]; then
        echo "render.sh: pandoc not found: keeping $out, older than $src" >&2
        touch "$out"
    elif [ -f "$srcdir/$out" ]; then
        echo "render.sh: pandoc not found: using the shipped $srcdir/$out" >&2
        mkdir -p "$(dirname "$out")"
        cp "$srcdir/$out" "$out"
        chmod u+w "$out"
    else
        echo "render.sh: cannot make $out: pandoc was not found by configure and no" \
            "rendered page is shipped (install pandoc: apt-get install pandoc)" >&2
        exit 1
    fi
    exit 0
fi

mkdir -p "$(dirname "$out")"
case $fmt in
man)
    "$PANDOC" --standalone --from markdown --to man \
        --variable header="symcoll manual" --variable footer="symcoll $VERSION" \
        --output "$out.tmp" "$src"
    ;;
html)
    # a page name followed by its section, in bold (as in SEE ALSO), links to that page
    "$PANDOC" --standalone --from markdown --to html \
        --metadata pagetitle="$(basename "$out" .html) (symcoll $VERSION)" "$src" |
        sed 's|<strong>\(symcoll[a-z0-9_]*\)</strong>(\([137]\))|<a href="\1.\2.html"><strong>\1</strong>(\2)</a>|g' \
            >"$out.tmp"
    ;;
*)
    echo "render.sh: unknown format $fmt" >&2
    exit 2
    ;;
esac
mv "$out.tmp" "$out"
