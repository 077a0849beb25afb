#!/bin/sh
# Writes one file of the CMake package from its template (cmake/*.cmake.in): the
# installed directories relative to the package's own directory, $libdir/cmake/symcoll,
# so that the installed tree can be moved; absolute where a directory is outside $prefix.
# Usage: config.sh TEMPLATE OUT LIBSYMCOLL.LA
# Environment: VERSION prefix libdir includedir SIZEOF_VOID_P STATIC_LIBS
set -eu
in=$1 out=$2 la=$3

# under_prefix DIR: the path of DIR below $prefix, or nothing if it is not below
under_prefix() {
    case $1 in
    "$prefix"/*) echo "${1#"$prefix"/}" ;;
    *) echo "" ;;
    esac
}

libsub=$(under_prefix "$libdir")
incsub=$(under_prefix "$includedir")
if [ -n "$libsub" ]; then
    # from $libdir/cmake/symcoll up to $prefix: one .. per component of libsub, plus 2
    up=$(echo "$libsub/cmake/symcoll" | tr -s / | sed -e 's|[^/][^/]*|..|g')
    libexpr="\${_symcoll_prefix}/$libsub"
else
    up=.
    libexpr=$libdir
fi
if [ -n "$libsub" ] && [ -n "$incsub" ]; then
    incexpr="\${_symcoll_prefix}/$incsub"
else
    incexpr=$includedir
fi

# what libtool built: the shared library by its soname, the static archive
shared=$(sed -n "s/^dlname='\(.*\)'$/\1/p" "$la")
static=$(sed -n "s/^old_library='\(.*\)'$/\1/p" "$la")

# the static library's dependencies as CMake lists: -L directories, the rest as items
dirs= libs=
for f in $STATIC_LIBS; do
    case $f in
    -L*) dirs="$dirs;${f#-L}" ;;
    *) libs="$libs;$f" ;;
    esac
done
dirs=${dirs#;} libs=${libs#;}

sed -e "s|@VERSION@|$VERSION|g" \
    -e "s|@VERSION_MAJOR@|${VERSION%%.*}|g" \
    -e "s|@SIZEOF_VOID_P@|$SIZEOF_VOID_P|g" \
    -e "s|@REL_PREFIX@|$up|g" \
    -e "s|@LIBDIR@|$libexpr|g" \
    -e "s|@INCLUDEDIR@|$incexpr|g" \
    -e "s|@SHARED_NAME@|$shared|g" \
    -e "s|@STATIC_NAME@|$static|g" \
    -e "s|@STATIC_LINK_DIRS@|$dirs|g" \
    -e "s|@STATIC_LINK_LIBS@|$libs|g" \
    "$in" >"$out.tmp"
mv "$out.tmp" "$out"
