#!/bin/sh
# The shared library exports only the public API: every defined dynamic symbol starts
# with symcoll_ (besides the linker's own markers), every function that
# include/symcoll.h declares with SYMCOLL_EXPORT is exported, and so is every symcoll_
# function it defines as a static inline wrapper.
. "${top_srcdir:-.}/tests/testlib.sh"
NM=${NM:-nm}
make_tmp exports

# Symbols the toolchain may put in the dynamic table of any shared library.
linker_symbols='_init _fini _edata _end __bss_start _etext __data_start __dso_handle'

# list_bad LIB: prints every defined dynamic symbol of LIB that is not allowed.
list_bad() {
    $NM -D --defined-only "$1" >"$tmp/nm.out" || return 2
    sed -e 's/@.*//' "$tmp/nm.out" | awk '{ print $NF }' | sort -u >"$tmp/syms"
    for s in $linker_symbols; do
        echo "$s"
    done | sort -u >"$tmp/allowed"
    grep -v '^symcoll_' "$tmp/syms" | comm -23 - "$tmp/allowed"
}

la="$top_builddir/libsymcoll.la"
if [ ! -f "$la" ]; then
    echo "FAIL: $la not found (is the library built?)"
    exit 99
fi
dlname=$(sed -n "s/^dlname='\(.*\)'$/\1/p" "$la")
if [ -z "$dlname" ]; then
    echo "SKIP: libsymcoll was built without a shared library (--disable-shared)"
    exit 77
fi
lib="$top_builddir/.libs/$dlname"

# The checker must catch a leaked symbol, or this test proves nothing.
cat >"$tmp/leak.c" <<'EOF'
__attribute__((visibility("default"))) int symcoll_ok(void) { return 1; }
__attribute__((visibility("default"))) int leaked_helper(void) { return 2; }
EOF
${CC:-cc} -shared -fPIC -o "$tmp/libleak.so" "$tmp/leak.c" || exit 99
self=$(list_bad "$tmp/libleak.so")
if [ "$self" != "leaked_helper" ]; then
    echo "FAIL: self-check: expected the checker to flag exactly 'leaked_helper', got: $self"
    exit 99
fi

bad=$(list_bad "$lib") || { echo "FAIL: $NM -D failed on $lib"; exit 99; }
if [ -n "$bad" ]; then
    echo "FAIL: $lib exports symbols outside the symcoll_ namespace:"
    echo "$bad" | sed 's/^/    /'
    echo "(give them hidden visibility, or keep static libraries' symbols out of the"
    echo " dynamic table, e.g. -Wl,--exclude-libs,ALL)"
    status=1
fi
nsyms=$(grep -c '^symcoll_' "$tmp/syms")
echo "$lib: $nsyms symcoll_ symbols exported"

# Every function the public header exports must be in the library.
sed -n 's/.*SYMCOLL_EXPORT[^(]*[ *]\(symcoll_[a-z0-9_]*\)(.*/\1/p' \
    "$top_srcdir/include/symcoll.h" | sort -u >"$tmp/api"
napi=$(wc -l <"$tmp/api")
if [ "$napi" -lt 10 ]; then
    echo "FAIL: found only $napi SYMCOLL_EXPORT functions in include/symcoll.h"
    status=1
fi
expect_subset "$tmp/api" "$tmp/syms" "declared in include/symcoll.h but not exported by $lib"

# A call the header defines as a static inline wrapper (symcoll_comm_create passes the
# header's API version to symcoll_comm_create_version) is still exported under its own
# name, for programs that call the symbol; the header must not also declare it exported.
sed -n 's/^static inline[^(]*[ *]\(symcoll_[a-z0-9_]*\)(.*/\1/p' \
    "$top_srcdir/include/symcoll.h" | sort -u >"$tmp/inline"
ninline=$(wc -l <"$tmp/inline")
if ! grep -qx symcoll_comm_create "$tmp/inline"; then
    echo "FAIL: include/symcoll.h does not define symcoll_comm_create as a static inline wrapper"
    status=1
fi
both=$(comm -12 "$tmp/inline" "$tmp/api")
if [ -n "$both" ]; then
    echo "FAIL: include/symcoll.h declares these both inline and SYMCOLL_EXPORT: $both"
    status=1
fi
expect_subset "$tmp/inline" "$tmp/syms" "inline in include/symcoll.h but not exported by $lib"
[ $status -eq 0 ] && echo "PASS: only symcoll_ symbols exported; all $napi API functions and $ninline inline wrappers present"
exit $status
