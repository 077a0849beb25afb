#!/bin/sh
# The installed package works for a user: `make install` into a temporary DESTDIR, build
# tests/installed_hello.c with `pkg-config symcoll` against the installed header and
# library only, linked both ways (shared, with a run path as for a prefix the dynamic
# linker does not search, and static with `pkg-config --static`), and run it on 2 ranks
# under the installed symcoll_run, with no LD_LIBRARY_PATH. The installed symcoll_info
# starts right after a real `make install` (its install hook runs ldconfig), checked in
# a private mount namespace where that is possible (root, unshare, overlayfs).
. "${top_srcdir:-.}/tests/testlib.sh"
: "${MAKE:=make}" "${CC:=cc}" "${PKG_CONFIG:=pkg-config}"
: "${prefix:?}" "${bindir:?}" "${libdir:?}" "${includedir:?}"
make_tmp install
dest="$tmp/dest"

# The parent make's flags (jobserver, -k, TESTS=...) are not for this install.
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u TESTS \
    $MAKE -C "$top_builddir" install DESTDIR="$dest" >"$tmp/install.log" 2>&1; then
    echo "FAIL: make install DESTDIR=$dest failed:"
    tail -30 "$tmp/install.log"
    exit 1
fi
if grep -q 'ran ldconfig' "$tmp/install.log"; then
    echo "FAIL: make install DESTDIR=... ran ldconfig (a staged install must not):"
    cat "$tmp/install.log"
    exit 1
fi
for f in "$dest$includedir/symcoll.h" "$dest$libdir/pkgconfig/symcoll.pc" \
    "$dest$bindir/symcoll_run" "$dest$bindir/symcoll_info"; do
    [ -e "$f" ] || { echo "FAIL: make install did not install $f"; exit 1; }
done

# The installed symcoll.pc as it reads once the tree is in place: its own directories
# moved into DESTDIR (a sysroot would move those of UCX, hwloc and PMIx too)
mkdir "$tmp/pc"
sed -e "s#^\(prefix\|exec_prefix\|libdir\|includedir\)=/#\1=$dest/#" \
    "$dest$libdir/pkgconfig/symcoll.pc" >"$tmp/pc/symcoll.pc"
pc() {
    PKG_CONFIG_PATH="$tmp/pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" $PKG_CONFIG "$@" symcoll
}
version=$(pc --modversion) || { echo "FAIL: pkg-config does not find the installed symcoll.pc"; exit 1; }
cflags=$(pc --cflags) && libs=$(pc --libs) || exit 1
echo "pkg-config symcoll $version: cflags '$cflags' libs '$libs'"
case "$cflags" in
*"$dest"*) ;;
*) echo "FAIL: --cflags does not point into the installed tree: $cflags"; exit 1 ;;
esac

# The installed header alone is valid strict C and C++.
printf '#include <symcoll.h>\nint main(void) { return symcoll_version_string() == 0; }\n' \
    >"$tmp/header.c"
if ! $CC -std=c11 -Wall -Wextra -Wpedantic -Werror $cflags -c "$tmp/header.c" \
    -o "$tmp/header.o"; then
    echo "FAIL: the installed symcoll.h is not clean C11"
    exit 1
fi
if command -v "${CXX:-c++}" >/dev/null 2>&1; then
    if ! "${CXX:-c++}" -Wall -Wextra -Werror -x c++ $cflags -c "$tmp/header.c" \
        -o "$tmp/header_cxx.o"; then
        echo "FAIL: the installed symcoll.h does not compile as C++"
        exit 1
    fi
fi

# Nothing of the build's or the caller's: what runs finds its libraries by itself.
unset LD_LIBRARY_PATH
export UCX_TLS="${UCX_TLS:-tcp,self}" UCX_WARN_UNUSED_ENV_VARS=n

# needs_symcoll PROGRAM: whether it loads libsymcoll.so
needs_symcoll() {
    readelf -d "$1" 2>/dev/null | grep -q 'NEEDED.*libsymcoll\.so'
}

# Shared: only the installed header and library (no -I into the sources); the run path
# is what a user adds for a prefix the dynamic linker does not search. A library built
# with --enable-sanitizers needs its sanitizer runtime loaded first, so a program using
# it links with the same flags (SANITIZER_CFLAGS, empty otherwise).
if ! $CC -std=c11 -Wall -Wextra -Werror ${SANITIZER_CFLAGS:-} -o "$tmp/hello_shared" \
    "$top_srcdir/tests/installed_hello.c" $cflags $libs -Wl,-rpath,"$dest$libdir"; then
    echo "FAIL: tests/installed_hello.c does not build against the installed symcoll"
    exit 1
fi
resolved=$(ldd "$tmp/hello_shared" | awk '/libsymcoll\.so/ { print $3 }')
case "$resolved" in
"$dest$libdir"/*) ;;
*) echo "FAIL: hello_shared loads libsymcoll from '$resolved', not $dest$libdir"; exit 1 ;;
esac

# Static: libsymcoll.a and what `pkg-config --static` adds (hwloc, UCX, PMIx, ...)
slibs=$(pc --static --libs) || exit 1
echo "pkg-config --static --libs symcoll: $slibs"
# shellcheck disable=SC2086
if ! $CC -std=c11 -Wall -Wextra -Werror ${SANITIZER_CFLAGS:-} -o "$tmp/hello_static" \
    "$top_srcdir/tests/installed_hello.c" $cflags $(echo "$slibs" | sed 's/-lsymcoll\b/-l:libsymcoll.a/'); then
    echo "FAIL: tests/installed_hello.c does not link statically with pkg-config --static"
    exit 1
fi
if needs_symcoll "$tmp/hello_static"; then
    echo "FAIL: hello_static still loads libsymcoll.so"
    exit 1
fi

# The installed launcher: it needs no library of its own; if it ever does, a staged
# tree cannot give it one without LD_LIBRARY_PATH
run_env=
if needs_symcoll "$dest$bindir/symcoll_run"; then
    echo "note: symcoll_run loads libsymcoll: run from the staged tree with LD_LIBRARY_PATH"
    run_env="LD_LIBRARY_PATH=$dest$libdir"
fi
for kind in shared static; do
    env $run_env "$dest$bindir/symcoll_run" -n 2 --timeout 120 "$tmp/hello_$kind" \
        >"$tmp/run.out" 2>&1
    rc=$?
    sed "s/^/    [$kind] /" "$tmp/run.out"
    if [ $rc -ne 0 ]; then
        echo "FAIL: installed_hello ($kind) under the installed symcoll_run -n 2 exited with $rc"
        exit 1
    fi
    n=$(grep -c '^installed_hello: rank [01] of 2: allreduce ok$' "$tmp/run.out")
    if [ "$n" -ne 2 ]; then
        echo "FAIL: installed_hello ($kind): expected 'allreduce ok' from each of 2 ranks, got $n"
        exit 1
    fi
done

# symcoll_info: a real install of the build's prefix, seen only by a private mount
# namespace (overlays on /etc and the prefix), then the tool with nothing set; where
# that is not possible, the staged copy with LD_LIBRARY_PATH.
info_real=no
case "$bindir:$libdir" in
"$prefix"/*:"$prefix"/*) under_prefix=yes ;;
*) under_prefix=no ;;
esac
if [ "$(id -u)" = 0 ] && [ $under_prefix = yes ] && [ -d "$prefix" ] &&
    command -v unshare >/dev/null 2>&1; then
    mkdir -p "$tmp/ov"
    # shellcheck disable=SC2016
    unshare -m sh -c '
        set -e
        mount --make-rprivate /
        mount -t tmpfs tmpfs "$1"
        mkdir "$1/etc.u" "$1/etc.w" "$1/pfx.u" "$1/pfx.w"
        mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/etc.u,workdir=$1/etc.w" /etc
        mount -t overlay overlay -o "lowerdir=$2,upperdir=$1/pfx.u,workdir=$1/pfx.w" "$2"
        echo "namespace ready"
        if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u TESTS -u DESTDIR \
            $3 -C "$4" install >"$1/install.log" 2>&1; then
            tail -20 "$1/install.log"
            echo "make install failed"
            exit 1
        fi
        grep "^symcoll: " "$1/install.log" || true
        exec "$5/symcoll_info" -v
    ' x "$tmp/ov" "$prefix" "$MAKE" "$top_builddir" "$bindir" >"$tmp/info.out" 2>&1
    rc=$?
    if grep -q '^namespace ready$' "$tmp/info.out"; then
        info_real=yes
        sed 's/^/    [make install; symcoll_info -v] /' "$tmp/info.out"
        [ $rc -eq 0 ] ||
            { echo "FAIL: the installed symcoll_info does not start after make install ($rc)"; exit 1; }
    else
        echo "note: no private mount namespace with overlays here: $(tail -1 "$tmp/info.out")"
    fi
fi
if [ $info_real = no ]; then
    env LD_LIBRARY_PATH="$dest$libdir" "$dest$bindir/symcoll_info" -v >"$tmp/info.out" 2>&1 ||
        { echo "FAIL: the installed symcoll_info fails:"; cat "$tmp/info.out"; exit 1; }
fi
grep -q "symcoll version $version" "$tmp/info.out" ||
    { echo "FAIL: installed symcoll_info does not report version $version:"; cat "$tmp/info.out"; exit 1; }

echo "PASS: installed header, library (shared and static), pkg-config file and tools work" \
    "from $dest$prefix${info_real:+; symcoll_info after a real install: $info_real}"
exit 0
