#!/bin/sh
# The installed package works for a user: `make install` into a temporary DESTDIR, build
# tests/installed_hello.c with `pkg-config symcoll` against the installed header and
# library only, and run it on 2 ranks under the installed symcoll_run.
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
for f in "$dest$includedir/symcoll.h" "$dest$libdir/pkgconfig/symcoll.pc" \
    "$dest$bindir/symcoll_run" "$dest$bindir/symcoll_info"; do
    [ -e "$f" ] || { echo "FAIL: make install did not install $f"; exit 1; }
done

# pkg-config prefixes -I/-L with the sysroot, so the flags point into DESTDIR
pc() {
    PKG_CONFIG_PATH="$dest$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest" \
        $PKG_CONFIG "$@" symcoll
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

# Build the user program: only the installed header and library (no -I into the sources).
# A library built with --enable-sanitizers needs its sanitizer runtime loaded first, so a
# program using it links with the same flags (SANITIZER_CFLAGS, empty otherwise).
if ! $CC -std=c11 -Wall -Wextra -Werror ${SANITIZER_CFLAGS:-} -o "$tmp/installed_hello" \
    "$top_srcdir/tests/installed_hello.c" $cflags $libs; then
    echo "FAIL: tests/installed_hello.c does not build against the installed symcoll"
    exit 1
fi

LD_LIBRARY_PATH="$dest$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
# It must load the installed library, not one from the build tree or the system.
resolved=$(ldd "$tmp/installed_hello" | awk '/libsymcoll\.so/ { print $3 }')
case "$resolved" in
"$dest$libdir"/*) ;;
*) echo "FAIL: installed_hello loads libsymcoll from '$resolved', not $dest$libdir"; exit 1 ;;
esac

"$dest$bindir/symcoll_info" >"$tmp/info.out" 2>&1 ||
    { echo "FAIL: the installed symcoll_info fails:"; cat "$tmp/info.out"; exit 1; }
grep -q "symcoll version $version" "$tmp/info.out" ||
    { echo "FAIL: installed symcoll_info does not report version $version:"; cat "$tmp/info.out"; exit 1; }

UCX_TLS=${UCX_TLS:-tcp,self} UCX_WARN_UNUSED_ENV_VARS=n \
    "$dest$bindir/symcoll_run" -n 2 --timeout 120 "$tmp/installed_hello" >"$tmp/run.out" 2>&1
rc=$?
cat "$tmp/run.out"
if [ $rc -ne 0 ]; then
    echo "FAIL: installed_hello under the installed symcoll_run -n 2 exited with $rc"
    exit 1
fi
n=$(grep -c '^installed_hello: rank [01] of 2: allreduce ok$' "$tmp/run.out")
if [ "$n" -ne 2 ]; then
    echo "FAIL: expected 'allreduce ok' from each of the 2 ranks, got $n"
    exit 1
fi
echo "PASS: installed header, library, pkg-config file and tools work from $dest$prefix"
exit 0
