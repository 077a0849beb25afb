#!/bin/sh
# The last step of `make install` (install-exec-hook): installed programs must find
# libsymcoll.so.0 at once. After a real install (no DESTDIR: a staged install belongs
# to a package, whose own scripts run ldconfig) into a directory the dynamic linker
# searches, refresh its cache as root; otherwise say what a user does. Never fails.
#   ldconfig-hook.sh DESTDIR LIBDIR
destdir=$1
libdir=$2
[ -n "$destdir" ] && exit 0
ldconfig=$(command -v ldconfig 2>/dev/null || echo /sbin/ldconfig)
[ -x "$ldconfig" ] || exit 0
real=$(cd "$libdir" 2>/dev/null && pwd -P) || exit 0

# the directories the dynamic linker searches: "DIR: (from FILE:LINE)" lines of ldconfig -v
searched=no
for d in $("$ldconfig" -v -N -X 2>/dev/null | sed -n 's|^\(/[^:	]*\):.*|\1|p'); do
    if [ "$(cd "$d" 2>/dev/null && pwd -P)" = "$real" ]; then
        searched=yes
        break
    fi
done

if [ $searched = no ]; then
    echo "symcoll: $libdir is not a directory the dynamic linker searches: the installed"
    echo "  tools find libsymcoll through their run path; link your programs with"
    echo "  -Wl,-rpath,$libdir (or add $libdir to /etc/ld.so.conf.d/ and run ldconfig)"
elif [ "$(id -u)" = 0 ]; then
    if "$ldconfig"; then
        echo "symcoll: ran ldconfig: programs find libsymcoll in $libdir"
    else
        echo "symcoll: ldconfig failed: run it by hand so programs find libsymcoll in $libdir"
    fi
else
    echo "symcoll: run 'sudo ldconfig' so that programs find libsymcoll in $libdir"
fi
exit 0
