#!/bin/sh
# Prints every reference that goes up or sideways in the layer order of src/LAYERS (one
# line per layer, ground first; folders on one line are siblings; a folder is a path under
# src/, so "algo/net" is a floor of its own inside src/algo, and the files directly in a
# folder form the floor named by the folder itself): symbols of the built
# objects, read with nm (calls and data, whatever the headers say), and #include lines of
# the sources beside LAYERS_FILE (which also covers what nm cannot see: inline functions,
# macros, struct layouts, and files this configuration did not build).
#   scripts/layers.sh BUILD_DIR [LAYERS_FILE]
# Exit status: 0 when every reference goes down, 1 when one does not, 2 on usage errors.
set -u
LC_ALL=C
export LC_ALL
NM=${NM:-nm}
build=${1:?usage: scripts/layers.sh BUILD_DIR [LAYERS_FILE]}
layers=${2:-$(dirname "$0")/../src/LAYERS}
[ -d "$build/src" ] || { echo "layers.sh: $build/src does not exist: build first" >&2; exit 2; }
[ -f "$layers" ] || { echo "layers.sh: no $layers" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/symcoll-layers.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT

# folder -> rank (line number among non-comment lines)
grep -v '^[[:space:]]*#' "$layers" | awk 'NF { n++; for (i = 1; i <= NF; i++) print $i, n }' \
    >"$work/rank"

# libtool's PIC objects when there are any, else plain objects
objs=$(find "$build/src" -path '*/.libs/*.o' | sort)
[ -n "$objs" ] || objs=$(find "$build/src" -name '*.o' | sort)
[ -n "$objs" ] || { echo "layers.sh: no objects under $build/src" >&2; exit 2; }
: >"$work/defs"
: >"$work/uses"
for o in $objs; do
    folder=${o#"$build/src/"}
    folder=${folder%/*}
    folder=${folder%/.libs}
    $NM -g --defined-only "$o" | awk -v f="$folder" 'NF == 3 { print $3, f }' >>"$work/defs"
    $NM -u "$o" | awk -v f="$folder" -v o="$o" '{ print $NF, f, o }' >>"$work/uses"
done
sort -u "$work/defs" -o "$work/defs"
sort -u "$work/uses" -o "$work/uses"

# includes: file folder included_folder (as a use of the pseudo-symbol "#include")
srcdir=$(dirname "$layers")
if [ -d "$srcdir" ]; then
    find "$srcdir" -mindepth 2 \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) | sort |
        while read -r f; do
            folder=${f#"$srcdir/"}
            folder=${folder%/*}
            sed -n 's|^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_/]*\)/[^/"]*".*|\1|p' "$f" |
                sort -u | awk -v f="$folder" -v file="$f" '{ print "#include", f, file, $1 }'
        done >"$work/includes"
else
    : >"$work/includes"
fi

# symbol user_folder object def_folder
{ join "$work/uses" "$work/defs"; cat "$work/includes"; } | awk -v rankfile="$work/rank" '
    BEGIN { while ((getline line < rankfile) > 0) { split(line, a, " "); rank[a[1]] = a[2] } }
    $2 == $4 { next }
    !($2 in rank) || !($4 in rank) {
        printf "%s: %s uses %s of %s: folder missing from src/LAYERS\n", $3, $2, $1, $4
        bad = 1; next
    }
    rank[$4] >= rank[$2] {
        how = (rank[$4] > rank[$2]) ? "up" : "sideways"
        printf "%s: %s uses %s of %s (%s)\n", $3, $2, $1, $4, how
        bad = 1
    }
    END { exit bad ? 1 : 0 }'
