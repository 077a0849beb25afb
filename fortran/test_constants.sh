#!/bin/sh
# The Fortran module's constants are the C header's: every enumerator and API version
# macro of include/symcoll.h is printed with its value by a C program and by a Fortran
# program that uses the module, and the two lists must be equal. A constant added to the
# header and not to the module fails the Fortran compilation here.
. "${top_srcdir:-.}/tests/testlib.sh"
make_tmp fconst
hdr=$top_srcdir/include/symcoll.h
: "${CC:=cc}" "${FC:=gfortran}"

# enumerators are the indented lines that start with SYMCOLL_ in the header's enums
{
    sed -n 's/^[[:space:]]\{1,\}\(SYMCOLL_[A-Z0-9_]*\)[[:space:]]*\([=,/].*\)\{0,1\}$/\1/p' "$hdr"
    sed -n 's/^#define \(SYMCOLL_API_[A-Z]*\) .*/\1/p' "$hdr"
} | sort -u >"$tmp/names"
n=$(wc -l <"$tmp/names")
if [ "$n" -lt 45 ]; then
    echo "FAIL: only $n constants found in $hdr: the pattern above no longer matches it"
    exit 1
fi

{
    echo '#include <stdio.h>'
    echo '#include "symcoll.h"'
    echo 'int main(void) {'
    while read -r name; do
        printf '    printf("%%s %%lld\\n", "%s", (long long)(%s));\n' "$name" "$name"
    done <"$tmp/names"
    echo '    return 0; }'
} >"$tmp/c.c"
{
    echo 'program constants'
    echo '    use symcoll'
    echo '    implicit none'
    while read -r name; do
        printf "    print '(a,1x,i0)', '%s', %s\n" "$name" "$name"
    done <"$tmp/names"
    echo 'end program constants'
} >"$tmp/f.f90"

if ! $CC -I"$top_srcdir/include" -o "$tmp/c" "$tmp/c.c" >"$tmp/cc.log" 2>&1; then
    echo "FAIL: the C program does not compile:"
    sed 's/^/    /' "$tmp/cc.log"
    exit 1
fi
# only constants are used: nothing of the library is linked
if ! $FC -I"$top_builddir/fortran" -o "$tmp/f" "$tmp/f.f90" >"$tmp/fc.log" 2>&1; then
    echo "FAIL: the Fortran module lacks constants of symcoll.h (or their kind differs):"
    sed 's/^/    /' "$tmp/fc.log" | head -40
    exit 1
fi
"$tmp/c" | sort >"$tmp/c.out" && "$tmp/f" | sort >"$tmp/f.out" || exit 1
if ! diff "$tmp/c.out" "$tmp/f.out" >"$tmp/diff"; then
    echo "FAIL: Fortran constants differ from the header (< C, > Fortran):"
    sed 's/^/    /' "$tmp/diff"
    exit 1
fi
echo "PASS: $n constants of symcoll.h have the same values in the Fortran module"
