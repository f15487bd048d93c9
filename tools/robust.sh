#!/bin/sh
# robust.sh: the generator built with ASan+UBSan ($MHAGEN_ASAN) and the
# normal build ($MHAGEN_VG: $MHAGEN with DWARF 4 debug info, which valgrind
# reads) under valgrind, on the example commands: a kernel
# from flags, the same from a spec file, and a bad command line.  Each must
# give the normal build's bytes (or its exit status 2) and no report.
set -u

MHAGEN=${MHAGEN:-build/mhagen}
MHAGEN_ASAN=${MHAGEN_ASAN:-build/mhagen_asan}
MHAGEN_VG=${MHAGEN_VG:-build/mhagen_vg}
VALGRIND="valgrind -q --error-exitcode=1 --leak-check=full"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT INT TERM
status=0

# check NAME WANT_STATUS CMD...: run CMD, compare its exit status and
# stdout with the normal build's
check() {
	name=$1 want=$2
	shift 2
	"$@" > "$dir/out" 2> "$dir/err"
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		echo "robust: $name: exit status $rc, wanted $want" >&2
		cat "$dir/err" >&2
		status=1
	elif ! cmp -s "$dir/out" "$dir/want"; then
		echo "robust: $name: output differs from the normal build's" >&2
		status=1
	else
		echo "  ok      $name"
	fi
}

printf 'h = 8\ndk = 64\ntarget = avx2\n' > "$dir/example.spec"
"$MHAGEN" --h 8 --dk 64 --target avx2 > "$dir/want"
check "asan: --h 8 --dk 64 --target avx2" 0 \
	"$MHAGEN_ASAN" --h 8 --dk 64 --target avx2
check "asan: --spec example.spec" 0 "$MHAGEN_ASAN" --spec "$dir/example.spec"
check "valgrind: --h 8 --dk 64 --target avx2" 0 \
	$VALGRIND "$MHAGEN_VG" --h 8 --dk 64 --target avx2
check "valgrind: --spec example.spec" 0 \
	$VALGRIND "$MHAGEN_VG" --spec "$dir/example.spec"
"$MHAGEN" --h 16 --kv-heads 4 --dk 80 --dv 48 --seq 33 --mask causal,padding,bias \
	--layout bhsd --algo rows --unroll-max 16 --target neon > "$dir/want"
check "asan: every mask, rows, neon" 0 "$MHAGEN_ASAN" --h 16 --kv-heads 4 \
	--dk 80 --dv 48 --seq 33 --mask causal,padding,bias --layout bhsd \
	--algo rows --unroll-max 16 --target neon
: > "$dir/want"
check "asan: bad --kv-heads" 2 "$MHAGEN_ASAN" --h 8 --dk 64 --kv-heads 3
check "asan: broken template" 2 "$MHAGEN_ASAN" --h 8 --dk 64 --target scalar \
	--template-dir tests/fixtures/broken-runtime
check "asan: runaway template" 2 "$MHAGEN_ASAN" --h 3 --dk 64 --target scalar \
	--template-dir tests/fixtures/limits
check "asan: no target tables" 2 "$MHAGEN_ASAN" --h 8 --dk 64 \
	--template-dir tests/fixtures/limits
"$MHAGEN" --emit targets > "$dir/want"
check "asan: --emit targets" 0 "$MHAGEN_ASAN" --emit targets
# valgrind runs the program on a CPU of its own (no AVX-512), so the one
# line naming this CPU's best target (MHA_NATIVE) is left out
# shellcheck disable=SC2317 # (called through check)
vg_targets() {
	$VALGRIND "$MHAGEN_VG" --emit targets > "$dir/vg" || return
	grep -v '^MHA_NATIVE :=' "$dir/vg"
}
grep -v '^MHA_NATIVE :=' "$dir/want" > "$dir/all" && mv "$dir/all" "$dir/want"
check "valgrind: --emit targets" 0 vg_targets
: > "$dir/want"
check "valgrind: bad --kv-heads" 2 $VALGRIND "$MHAGEN_VG" --h 8 --dk 64 --kv-heads 3
check "valgrind: -o in a missing directory" 2 $VALGRIND "$MHAGEN_VG" --h 8 --dk 64 \
	-o "$dir/no-such-dir/k.c"
if [ "$status" -ne 0 ]; then
	echo "robust: the generator failed under sanitizers or valgrind" >&2
fi
exit $status
