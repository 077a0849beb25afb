#!/bin/sh
# The installed CMake package works for a user: `make install` into a temporary DESTDIR,
# move the installed tree (the package must find its files relative to itself), build
# tests/cmake_consumer with find_package(symcoll) and symcoll::symcoll, and run it on 2
# ranks under the installed symcoll_run. Skipped (77) without cmake.
. "${top_srcdir:-.}/tests/testlib.sh"
: "${MAKE:=make}" "${CC:=cc}"
: "${prefix:?}" "${bindir:?}" "${libdir:?}"
CMAKE=${CMAKE:-$(command -v cmake)}
if [ -z "$CMAKE" ]; then
    echo "SKIP: cmake not found (apt-get install cmake)"
    exit 77
fi
make_tmp cmake
dest="$tmp/dest"
pkgdir="$dest$libdir/cmake/symcoll"

if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u TESTS \
    $MAKE -C "$top_builddir" install DESTDIR="$dest" >"$tmp/install.log" 2>&1; then
    echo "FAIL: make install DESTDIR=$dest failed:"
    tail -30 "$tmp/install.log"
    exit 1
fi
for f in symcollConfig.cmake symcollConfigVersion.cmake; do
    [ -f "$pkgdir/$f" ] || { echo "FAIL: make install did not install $libdir/cmake/symcoll/$f"; exit 1; }
done
# Relocatable: the installed tree, moved away from where it was installed, still works
# (unless a directory lies outside the prefix, which then is named absolutely).
root="$dest$prefix" instlib="$dest$libdir" instbin="$dest$bindir"
case $libdir:$includedir:$bindir in
"$prefix"/*:"$prefix"/*:"$prefix"/*)
    mv "$root" "$tmp/moved" || exit 99
    root="$tmp/moved"
    instlib="$root${libdir#"$prefix"}" instbin="$root${bindir#"$prefix"}"
    ;;
esac
pkgdir="$instlib/cmake/symcoll"

# configure_consumer DIR VERSION: cmake configures the consumer asking for VERSION (with
# the sanitizer flags of a --enable-sanitizers build: a program using the sanitized
# library needs their runtime)
configure_consumer() {
    cc_arg=
    case $CC in *" "*) ;; *) cc_arg="-DCMAKE_C_COMPILER=$CC" ;; esac
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "$CMAKE" -S "$top_srcdir/tests/cmake_consumer" \
        -B "$1" -DCMAKE_PREFIX_PATH="$root" -DCMAKE_FIND_PACKAGE_NO_SYSTEM_PACKAGE_REGISTRY=ON \
        -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON -DSYMCOLL_REQUEST_VERSION="$2" $cc_arg \
        -DCMAKE_C_FLAGS="${SANITIZER_CFLAGS:-}" >"$1.log" 2>&1
}

# Self-check: a version the package cannot serve is refused.
if configure_consumer "$tmp/too_new" 99.0; then
    echo "FAIL: find_package(symcoll 99.0) accepted the installed package:"
    cat "$tmp/too_new.log"
    exit 1
fi

if ! configure_consumer "$tmp/build" 0.1; then
    echo "FAIL: cmake could not configure tests/cmake_consumer against $root:"
    cat "$tmp/build.log"
    exit 1
fi
grep 'symcoll .* from' "$tmp/build.log"
found=$(sed -n 's/^symcoll_DIR:PATH=//p' "$tmp/build/CMakeCache.txt")
[ "$found" = "$pkgdir" ] ||
    { echo "FAIL: find_package took symcoll from '$found', not $pkgdir"; exit 1; }
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "$CMAKE" --build "$tmp/build" \
    >"$tmp/build_out.log" 2>&1; then
    echo "FAIL: building tests/cmake_consumer failed:"
    cat "$tmp/build_out.log"
    exit 1
fi

# The imported target alone lets the program find the installed library (build RPATH).
exe="$tmp/build/cmake_consumer"
resolved=$(env -u LD_LIBRARY_PATH ldd "$exe" | awk '/libsymcoll\.so/ { print $3 }')
case "$resolved" in
"$instlib"/*) ;;
*) echo "FAIL: cmake_consumer loads libsymcoll from '$resolved', not $instlib"; exit 1 ;;
esac

# run_consumer EXE: EXE on 2 ranks under the installed symcoll_run, checked on each rank
run_consumer() {
    env -u LD_LIBRARY_PATH UCX_TLS=${UCX_TLS:-tcp,self} UCX_WARN_UNUSED_ENV_VARS=n \
        "$instbin/symcoll_run" -n 2 --timeout 120 "$1" >"$tmp/run.out" 2>&1
    rc=$?
    cat "$tmp/run.out"
    if [ $rc -ne 0 ]; then
        echo "FAIL: $(basename "$1") under symcoll_run -n 2 exited with $rc"
        exit 1
    fi
    n=$(grep -c '^cmake_consumer: rank [01] of 2: allreduce ok$' "$tmp/run.out")
    if [ "$n" -ne 2 ]; then
        echo "FAIL: expected 'allreduce ok' from each of the 2 ranks of $(basename "$1"), got $n"
        exit 1
    fi
}
run_consumer "$exe"
# symcoll::symcoll_static, where the static library is installed, links with the
# dependencies the package lists for it
what="symcoll::symcoll"
if [ -f "$instlib/libsymcoll.a" ]; then
    [ -x "$exe"_static ] ||
        { echo "FAIL: libsymcoll.a is installed but symcoll::symcoll_static is not defined"; exit 1; }
    if env -u LD_LIBRARY_PATH ldd "$exe"_static | grep -q 'libsymcoll\.so'; then
        echo "FAIL: cmake_consumer_static loads the shared libsymcoll"
        exit 1
    fi
    run_consumer "$exe"_static
    what="symcoll::symcoll and symcoll::symcoll_static"
fi
[ $status -eq 0 ] && echo "PASS: find_package(symcoll) and $what from" \
    "$root (installed, then moved) build a program that all-reduces right on 2 ranks"
exit $status
