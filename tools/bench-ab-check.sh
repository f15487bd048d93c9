#!/bin/sh
# bench-ab-check.sh: make bench-ab, the A/B measurement of a change, used as
# the README tells (a small shape, one round, so it asserts no time): two
# kernels of one spec with different knobs are checked against the
# reference and timed, by two binaries linking them in either order; a
# kernel file of another scale (wrong results on purpose) is refused, and
# timed with AB_CHECK=0; kernels of two different specs and a file that
# exports the wrong name are refused.  Then make
# bench-where's grouping of a kernel's perf samples by part, on h8 dk64
# s128 (its shares summing to 100, the micro-kernels most of them: a check
# of the grouping, not of a time).  Last, a shape list naming a shape
# bench/bench.mk does not have is refused by name by make bench,
# bench-where and bench-mca, a CPU bench-where cannot run on, and a
# BENCH_TARGET this CPU does not run.  Run from the top of the repository
# (make bench-ab-check, part of make test).
set -u

MAKE=${MAKE:-make}
BUILD=${BUILD:-build}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT INT TERM
log=$dir/log
spec='--h 2 --dk 16 --seq 40 --mask causal'

fail() {
	echo "bench-ab-check: $*" >&2
	[ -s "$log" ] && tail -n 30 "$log" >&2
	exit 1
}
ok() { echo "  ok      $*"; }
# ab ARGS...: make bench-ab-run with them, output in $log; its status
ab() { $MAKE --no-print-directory bench-ab-run BUILD="$BUILD" AB_ROUNDS=1 "$@" > "$log" 2>&1; }

# knobs valid on every x86 target (vector width 8 or 16), other than
# their defaults
ab AB_SPEC="$spec" AB_B='--block-kv 32 --mq 16' ||
	fail "two kernels of one spec: make bench-ab failed"
grep -q '^  A/B [0-9.]* (A.s time over B.s' "$log" && grep -q '% of peak' "$log" ||
	fail "make bench-ab printed no ratio"
# both link orders, and the mean over them
grep -q "; A's code linked first" "$log" && grep -q "; B's code linked first" "$log" ||
	fail "make bench-ab did not time both link orders"
grep -q '^A/B [0-9.]* over the two link orders' "$log" ||
	fail "make bench-ab printed no ratio over the two link orders"
ok "bench-ab times two kernels of one spec, in both link orders"
# one output buffer for both (as make bench's calls of one kernel find it)
ab AB_SPEC="$spec" AB_B='--block-kv 32' AB_ONE_OUT=1 &&
	[ "$(grep -c "both write A's output" "$log")" = 2 ] &&
	grep -q '^A/B [0-9.]* over the two link orders' "$log" ||
	fail "AB_ONE_OUT=1: make bench-ab failed, or did not say both write one output"
if ab AB_SPEC="$spec" AB_ONE_OUT=2; then
	fail "AB_ONE_OUT=2 was taken"
fi
grep -q 'AB_ONE_OUT must be a whole number from 0 to 1' "$log" ||
	fail "AB_ONE_OUT=2: no clear error"
ok "bench-ab times both kernels into one output with AB_ONE_OUT=1"
# whether make bench-ab builds its kernels with OpenMP (where it can)
omp=0
grep -q 'BENCH   A: mhagen .*--threads openmp' "$log" && omp=1

# a kernel computing something else: scores scaled by 0.5, named ab_b
# (with OpenMP, as make bench-ab builds its kernels where it can)
"$BUILD/mhagen" $spec --scale 0.5 --target scalar --threads openmp --name ab_b -o "$dir/wrong.c" ||
	fail "mhagen failed"
if ab AB_SPEC="$spec" AB_FILE_B="$dir/wrong.c"; then
	fail "a kernel that differs from the reference was timed"
fi
grep -q 'B (ab_b) differs from the reference' "$log" ||
	fail "a wrong kernel was refused without naming it"
ab AB_SPEC="$spec" AB_FILE_B="$dir/wrong.c" AB_CHECK=0 &&
	grep -q 'beyond the tolerance' "$log" ||
	fail "AB_CHECK=0 did not time the wrong kernel, or did not say it is wrong"
ok "bench-ab refuses a wrong kernel, and times it with AB_CHECK=0"

if ab AB_SPEC="$spec" AB_B='--window 8'; then
	fail "kernels of two specs were compared"
fi
grep -q 'kernels of different specs' "$log" || fail "two specs: no clear error"
sed 's/ab_b/ab_c/g' "$dir/wrong.c" > "$dir/named.c"
if ab AB_SPEC="$spec" AB_FILE_B="$dir/named.c"; then
	fail "a file exporting ab_c was taken as B"
fi
grep -q 'exports no ab_b_args' "$log" || fail "a misnamed file: no clear error"
# a file without OpenMP against A's kernel with it (a team's cost apart)
"$BUILD/mhagen" $spec --target scalar --name ab_b -o "$dir/serial.c" || fail "mhagen failed"
if [ "$omp" = 1 ]; then
	if ab AB_SPEC="$spec" AB_FILE_B="$dir/serial.c"; then
		fail "a file without OpenMP was timed against a kernel with it"
	fi
	grep -q 'was not generated with' "$log" ||
		fail "a file without OpenMP: no clear error"
fi
ok "bench-ab refuses two specs, a misnamed file and one without OpenMP"

# make bench-where's grouping (tools/bench-where.sh) of a kernel's perf
# samples by part: one row, the parts' shares summing to 100, most of
# them the two micro-kernels' (whatever the machine, they do 80% of the
# work; a grouping that loses their lines leaves them near 0), and some
# the output's (a few percent: a grouping that loses its lines, which sit
# inside the block loop, leaves 0)
BUILD="$BUILD" tools/bench-where.sh --header > "$log" 2>&1 || fail "bench-where --header failed"
MAKE="$MAKE" BUILD="$BUILD" tools/bench-where.sh check '--h 8 --dk 64 --seq 128' 1 201 \
	> "$log" 2>&1 || fail "bench-where failed on h8 dk64 s128"
grep -q '^h8 dk64 s128 ' "$log" || fail "bench-where printed no row"
awk -F, 'NR == 1 {
	for (i = 1; i <= NF; ++i)
		col[$i] = i
	next
}
NR == 2 {
	for (i = col["scores"]; i <= NF; ++i)
		s += $i
	m = $col["scores"] + $col["P.V"]
	if (s < 99.5 || s > 100.5 || m < 50 || $col["output"] <= 0) {
		print "parts sum to " s "%, scores and P.V " m "%, output " $col["output"] "%"
		exit 1
	}
}' "$BUILD/bench-where/where.csv" >> "$log" || fail "bench-where grouped the samples wrongly"
ok "bench-where groups a kernel's samples by part"

# a shape bench/bench.mk does not have, named by each bench target that
# takes a list of them (before anything is built or timed)
for t in "bench-where-run WHERE_SHAPES" "bench-mca-run MCA_SHAPES" "$BUILD/bench/shapes BENCH_SHAPES"; do
	target=${t% *}
	if $MAKE --no-print-directory "$target" BUILD="$BUILD" "${t#* }=k1 k0" > "$log" 2>&1; then
		fail "make $target ran with an unknown shape k0"
	fi
	grep -q ': no shape k0 in bench/bench.mk' "$log" || fail "make $target: no clear error for shape k0"
done
if $MAKE --no-print-directory bench-mca-run BUILD="$BUILD" MCA_SHAPES=k1 MCA_TARGETS=k0 > "$log" 2>&1; then
	fail "make bench-mca-run ran a target it has no CPU models for"
fi
grep -q '^bench-mca: target k0 has no CPU models' "$log" || fail "make bench-mca-run: no clear error for target k0"
ok "bench, bench-where and bench-mca name a shape they do not have; bench-mca a target"
# a CPU this process cannot run on, named before anything is built
if WHERE_CPU=4095 MAKE="$MAKE" BUILD="$BUILD" tools/bench-where.sh check "$spec" 1 1 > "$log" 2>&1; then
	fail "bench-where ran on CPU 4095"
fi
grep -q '^bench-where: WHERE_CPU=4095: this process cannot run there' "$log" ||
	fail "bench-where on CPU 4095: no clear error"
ok "bench-where names a CPU it cannot run on"
# a BENCH_TARGET of the other architecture: refused by its name before any
# kernel is built (it was an illegal instruction in the run)
other=neon
grep -q '^MHA_NATIVE := neon$' "$BUILD/targets.mk" && other=avx2
if $MAKE --no-print-directory bench-target-check BUILD="$BUILD" BENCH_TARGET=$other > "$log" 2>&1; then
	fail "make bench-target-check passed BENCH_TARGET=$other"
fi
grep -q "^bench: BENCH_TARGET=$other does not run on this CPU" "$log" ||
	fail "BENCH_TARGET=$other: no clear error"
$MAKE --no-print-directory bench-target-check BUILD="$BUILD" > "$log" 2>&1 ||
	fail "make bench-target-check refused this machine's own target"
ok "bench targets refuse a BENCH_TARGET this CPU does not run"
