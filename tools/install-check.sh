#!/bin/sh
# install-check.sh: make install into a temporary DESTDIR, then use the
# installed tree as a user would: build the installed examples
# (share/mhagen/examples) with CMake (find_package(mhagen),
# mhagen_add_kernel), with the Make fragment and, when meson is installed,
# with Meson, and run them (each compares its kernels with a naive
# attention).  Then the generator's depfile and untouched outputs, through
# the Make example: a spec edit that changes no byte recompiles nothing, a
# template edit regenerates and rebuilds.  Last, make uninstall leaves no
# file.  Run from the top of the repository (make install-check).
set -u

MAKE=${MAKE:-make}
BUILD=${BUILD:-build}
CC=${CC:-cc}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT INT TERM
dest=$dir/dest
prefix=/opt/mhagen
root=$dest$prefix
log=$dir/log
KFLAGS="-O2 -Wall -Wextra -Wshadow -Wcast-align -Werror"

fail() {
	echo "install-check: $*" >&2
	[ -s "$log" ] && tail -n 30 "$log" >&2
	exit 1
}
ok() { echo "  ok      $*"; }
# mtime NAME FILE: FILE's modification time, in seconds
mtime() { stat -c %Y "$1"; }

$MAKE --no-print-directory install BUILD="$BUILD" DESTDIR="$dest" PREFIX="$prefix" \
	> "$log" 2>&1 || fail "make install failed"
for f in bin/mhagen include/mha_abi.h share/man/man1/mhagen.1 \
	share/bash-completion/completions/mhagen share/doc/mhagen/README.md \
	share/doc/mhagen/LICENSE lib/cmake/mhagen/mhagenConfig.cmake \
	lib/cmake/mhagen/mhagenConfigVersion.cmake share/mhagen/mhagen.mk \
	share/mhagen/examples/main.c; do
	[ -s "$root/$f" ] || fail "make install wrote no $prefix/$f"
done
grep -q '^\.TH MHAGEN 1' "$root/share/man/man1/mhagen.1" &&
	grep -q 'depfile' "$root/share/man/man1/mhagen.1" ||
	fail "the man page lacks its title or --depfile"
bash -c ". '$root/share/bash-completion/completions/mhagen'
	COMP_WORDS=(mhagen --dep); COMP_CWORD=1; _mhagen
	[ \"\${COMPREPLY[*]}\" = --depfile ]" || fail "bash completion of --dep"
ok "make install DESTDIR PREFIX=$prefix"

# CMake: configure, build, run; a spec edit that changes the kernel
# regenerates it
src=$dir/cmake
cp -R "$root/share/mhagen/examples" "$src"
cmake -S "$src" -B "$src/build" -DCMAKE_PREFIX_PATH="$root" \
	-DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS="$KFLAGS" > "$log" 2>&1 ||
	fail "cmake: configuring the example failed"
cmake --build "$src/build" -j 2 > "$log" 2>&1 || fail "cmake: the example did not build"
"$src/build/attn_demo" > "$log" 2>&1 || fail "cmake: the example's kernels are wrong"
grep -q 'attn__scalar: .* ok' "$log" || fail "cmake: the example ran no kernel"
if [ "$(uname -m)" = x86_64 ]; then
	grep -q 'attn_any: .* ok' "$log" && grep -q 'attn_any ran its .* variant' "$log" ||
		fail "cmake: the DISPATCH kernel did not run"
fi
ok "CMake: find_package(mhagen), mhagen_add_kernel (per target and DISPATCH), the kernels checked"
echo "exp = fast" >> "$src/attn.spec"
cmake --build "$src/build" -j 2 > "$log" 2>&1 || fail "cmake: rebuilding failed"
grep -q 'exp fast' "$src/build/mhagen/attn/attn__scalar.c" ||
	fail "cmake: a spec edit did not regenerate the kernel"
"$src/build/attn_demo" > "$log" 2>&1 || fail "cmake: the regenerated kernels are wrong"
ok "CMake: a spec edit regenerates"

# Make: the same with the fragment, the templates from a directory
src=$dir/make
cp -R "$root/share/mhagen/examples" "$src"
cp -R templates "$dir/tpl"
mk() {
	$MAKE --no-print-directory -C "$src" MHAGEN_PREFIX="$root" CC="$CC" \
		CFLAGS="$KFLAGS" MHAGEN_ARGS="--template-dir $dir/tpl" > "$log" 2>&1
}
mk || fail "make: the example did not build"
"$src/build/attn_demo" > "$log" 2>&1 || fail "make: the example's kernels are wrong"
grep -q 'attn__scalar: .* ok' "$log" || fail "make: the example ran no kernel"
ok "Make: mhagen.mk, the kernels checked"
d=$src/build/attn__scalar.d
head -n 1 "$d" | grep -q '^build/attn__scalar\.c build/attn__scalar\.h:' ||
	fail "depfile: its targets are not -o and --header: $(head -n 1 "$d")"
for f in attn.spec "$dir/tpl/kernel.c.in" "$dir/tpl/targets/scalar.lua" \
	"$dir/tpl/main.lua"; do
	grep -q "^ $f\( \\\\\)\{0,1\}\$" "$d" || fail "depfile: $f is not listed"
	grep -q "^$f:\$" "$d" || fail "depfile: $f has no empty rule"
done
grep -q 'avx2' "$d" && fail "depfile: the scalar kernel lists the avx2 table"
ok "depfile: the spec file and the templates read"

# a spec edit that changes no byte: generated files untouched, nothing
# recompiled; a template edit: regenerated, rebuilt
touch -d @1000000000 "$src"/build/*.c "$src"/build/*.h "$src/main.c"
touch -d @1000000100 "$src"/build/*.o
echo "# a comment" >> "$src/attn.spec"
mk || fail "make: rebuilding failed"
[ "$(mtime "$src/build/attn__scalar.c")" = 1000000000 ] &&
	[ "$(mtime "$src/build/attn__scalar.h")" = 1000000000 ] ||
	fail "untouched: the same bytes were written again"
[ "$(mtime "$src/build/attn__scalar.o")" = 1000000100 ] &&
	[ "$(mtime "$src/build/main.o")" = 1000000100 ] ||
	fail "untouched: an unchanged kernel was compiled again"
ok "untouched: a spec edit that changes no byte recompiles nothing"
echo "/* edited template */" >> "$dir/tpl/kernel.c.in"
mk || fail "make: rebuilding after a template edit failed"
grep -q 'edited template' "$src/build/attn__scalar.c" ||
	fail "depfile: a template edit did not regenerate the kernel"
[ "$(mtime "$src/build/attn__scalar.o")" != 1000000100 ] ||
	fail "make: the regenerated kernel was not compiled"
"$src/build/attn_demo" > "$log" 2>&1 || fail "make: the rebuilt kernels are wrong"
ok "depfile: a template edit regenerates and rebuilds"

# the tuning database is a prerequisite too
: > "$dir/empty.db"
"$root/bin/mhagen" --h 2 --dk 8 --target scalar --tuning-db "$dir/empty.db" \
	-o "$dir/k.c" --depfile "$dir/k.d" > "$log" 2>&1 || fail "mhagen --tuning-db failed"
grep -q "^ $dir/empty.db\$" "$dir/k.d" || fail "depfile: the tuning database is not listed"
ok "depfile: the tuning database"

# Meson, when installed
if command -v meson > /dev/null 2>&1; then
	src=$dir/meson
	cp -R "$root/share/mhagen/examples" "$src"
	(cd "$src" && PATH="$root/bin:$PATH" CC="$CC" CFLAGS="$KFLAGS" \
		meson setup build && PATH="$root/bin:$PATH" meson compile -C build) \
		> "$log" 2>&1 || fail "meson: the example did not build"
	"$src/build/attn_demo" > "$log" 2>&1 || fail "meson: the example's kernels are wrong"
	ok "Meson: custom_target with depfile, the kernels checked"
fi

$MAKE --no-print-directory uninstall BUILD="$BUILD" DESTDIR="$dest" PREFIX="$prefix" \
	> "$log" 2>&1 || fail "make uninstall failed"
left=$(find "$dest" -type f)
[ -z "$left" ] || fail "make uninstall left $left"
ok "make uninstall"
