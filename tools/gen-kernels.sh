#!/bin/sh
# gen-kernels.sh [--all] LIST OUTDIR [TARGET]
# Generate one kernel per line of LIST (mhagen flags; '#' comments) into
# OUTDIR/NAME.c and the X-macro registry OUTDIR/kernels.inc; with --all also
# OUTDIR/all.c, one translation unit including every kernel, and
# OUTDIR/part-0.c ... part-(PARTS-1).c, the same kernels dealt into PARTS
# translation units (default 4) that compile in parallel (compile them with
# -I and the repository's root).  With TARGET, --target TARGET is added to
# each line.
# OUTDIR is replaced only when every kernel generated.  MHAGEN names the
# generator (default build/mhagen).
set -eu

all=
if [ "${1:-}" = --all ]; then
	all=1
	shift
fi
list=$1
outdir=$2
target=${3:-}
mhagen=${MHAGEN:-build/mhagen}
parts=${PARTS:-4}

mkdir -p "$(dirname "$outdir")"
tmp=$(mktemp -d "${outdir%/}.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

: > "$tmp/kernels.inc"
# all.c declares every kernel (and layer) by the contract's types (runtime/mha_abi.h,
# through tests/registry.h) before it includes its definition: a kernel
# whose signature strays from the contract does not compile
for f in all $(seq -f 'part-%g' 0 $((parts - 1))); do
	cat > "$tmp/$f.c" <<'EOF'
#include "tests/registry.h"
#define MHA_KERNEL MHA_PROTO
#define MHA_LAYER MHA_LAYER_PROTO
#include "kernels.inc"
#undef MHA_KERNEL
#undef MHA_LAYER
EOF
done
n=0
grep -v '^[[:space:]]*\(#\|$\)' "$list" | while IFS= read -r line; do
	# shellcheck disable=SC2086 # the line is a list of flags
	set -- $line ${target:+--target "$target"}
	name=$("$mhagen" "$@" --emit name)
	"$mhagen" "$@" -o "$tmp/$name.c"
	"$mhagen" "$@" --emit registry >> "$tmp/kernels.inc"
	echo "#include \"$name.c\"" >> "$tmp/all.c"
	echo "#include \"$name.c\"" >> "$tmp/part-$((n % parts)).c"
	n=$((n + 1))
	echo "  $name" >&2
done

[ -n "$all" ] || rm "$tmp"/all.c "$tmp"/part-*.c
mkdir -p "$outdir"
rm -f "$outdir"/*.c "$outdir"/kernels.inc
mv "$tmp"/* "$outdir"/
