#!/bin/sh
# bench-where.sh: where a kernel's time goes, by pass (make bench-where).
# The kernel of one spec is built with line information as make bench-ab's
# A and B (the same spec twice), called ROUNDS times each on one CPU under
# `perf record -e cpu-clock`, and A's samples are grouped by the part of the
# generated file their source line belongs to: the score and P.V
# micro-kernels, the exp, the softmax and masking passes, the query pack, the
# output stage, the key and value copies, the prefetches of what comes next,
# the tail rows (templates/main.lua P.tr) and the rest (loop control, set-up, lines without line information).  A
# libc memcpy the compiler calls for long rows (dk 128) counts as key/value
# copy, half of its samples A's (A and B are the same kernel).
#
# usage: bench-where.sh --header
#        bench-where.sh NAME 'SPEC FLAGS' BATCH ROUNDS
# Environment: MAKE, BUILD (build), WHERE_CPU (0), WHERE_CFLAGS (more
# compiler flags for the kernel: bench/bench.mk's keep clang from giving
# moved instructions line 0); appends a row to
# $BUILD/bench-where/where.csv and writes NAME.lines there (each sampled line
# of A's file: its samples, its part, its text).  Run from the
# top of the repository.
set -u

MAKE=${MAKE:-make}
BUILD=${BUILD:-build}
CPU=${WHERE_CPU:-0}
dir=$BUILD/bench-where
csv=$dir/where.csv
parts="scores P.V exp softmax pack output copies prefetch tail other"

fail() {
	echo "bench-where: $*" >&2
	exit 1
}

if [ "${1:-}" = "--header" ]; then
	mkdir -p "$dir" || fail "cannot make $dir"
	echo "shape,label,spec,batch,ms,peak_pct,samples,$(echo $parts | tr ' ' ',')" > "$csv"
	printf '%-26s %7s %6s' shape ms %peak
	printf ' %7s' $parts
	echo
	exit 0
fi
[ $# -eq 4 ] || fail "usage: bench-where.sh NAME 'SPEC FLAGS' BATCH ROUNDS"
name=$1 spec=$2 batch=$3 rounds=$4
command -v perf > /dev/null ||
	fail "no perf (Debian's linux-perf: tools/install-deps.sh installs it)"
[ -f "$csv" ] || fail "$csv is missing: run bench-where.sh --header first"
taskset -c "$CPU" true 2> /dev/null ||
	fail "WHERE_CPU=$CPU: this process cannot run there (its CPUs: $(taskset -cp $$ | sed 's/.*: //'))"

# the kernel as make bench-ab's A and B, with line information
$MAKE --no-print-directory bench-where-build BENCH_AB="$dir" \
	AB_SPEC="$spec" AB_CFLAGS="-g ${WHERE_CFLAGS:-}" > "$dir/build.log" 2>&1 ||
	{ cat "$dir/build.log" >&2; fail "$name: building the kernel failed"; }

if ! OMP_NUM_THREADS=1 perf record -q -e cpu-clock -F 10000 -o "$dir/perf.data" \
	"$dir/ab" "$rounds" "$batch" "$CPU" 1 0 > "$dir/ab.log" 2>&1; then
	cat "$dir/ab.log" >&2
	fail "$name: perf record failed (as a user, perf needs
kernel.perf_event_paranoid <= 2: sysctl kernel.perf_event_paranoid=2)"
fi
ms=$(awk '$1 == "A" && $2 == "ab_a" { print $3 }' "$dir/ab.log")
pk=$(awk '$1 == "A" && $2 == "ab_a" { sub("%", "", $5); print $5 }' "$dir/ab.log")
[ -n "$ms" ] || { cat "$dir/ab.log" >&2; fail "$name: the timing run printed no time"; }
# the shape as make bench labels it, e.g. "h8 dk64 s512 causal"
label=$(sed -n 's/^\(.*\), batch [0-9]*: [0-9]* rounds.*/\1/p' "$dir/ab.log")
[ "$batch" -gt 1 ] && label="$label batch $batch"

# samples by symbol and source line; then the libc copies' by symbol
perf report -i "$dir/perf.data" --no-children --sort sym,srcline \
	-F sample,sym,srcline -q 2> /dev/null > "$dir/lines.txt" ||
	fail "$name: perf report failed"
perf report -i "$dir/perf.data" --no-children --sort sym -F sample,sym -q \
	2> /dev/null > "$dir/syms.txt" || fail "$name: perf report failed"

# Each line of the generated file gets its part (first file), then the
# samples are summed by part (second and third files).
awk -v name="$name" -v label="$label" -v spec="$spec" -v batch="$batch" -v ms="$ms" -v pk="$pk" \
    -v parts="$parts" -v csv="$csv" -v byline="$dir/$name.lines" '
function part_of_fn(f) {
	if (f ~ /^exp/) return "exp"
	if (f ~ /^qk/) return "scores"
	if (f ~ /^pv/) return "P.V"
	if (f == "pack") return "pack"
	if (f == "next") return "prefetch"
	return ""
}
FILENAME == ARGV[1] {
	if (fn == "" && match($0, /^static .*[ *]ab_a_[a-z0-9_]+\(/)) {
		s = substr($0, RSTART, RLENGTH - 1)
		sub(/.*ab_a_/, "", s)
		fn = s
		state = "other"
	}
	p = "other"
	if (fn ~ /^pvr/) {
		# P.V with the output columns in lanes: in the last block the rows
		# go to out (if (o)), in the others back to the output block
		if ($0 ~ /^\tif \(o\) \{/)
			state = "output"
		else if ($0 ~ /^\t\} else \{/)
			state = "P.V"
		else if (state == "other")
			state = "P.V"
		p = state
	} else if (fn != "" && fn != "block") {
		p = part_of_fn(fn)
		if (p == "") p = "other"
	} else if (fn == "block") {
		# the tail rows (P.tr): their set-up before the block loop, and
		# their pass in each block after the tiles
		if ($0 ~ /\/\* the tail(: row|.s rows: row)/)
			state = "tail"
		else if (state != "tail" && $0 ~ /\/\* (mask only where|online softmax|score modifiers|the additive bias|the boolean mask|the key mask|the tile.s rows in the bias)/)
			state = "softmax"
		if ($0 ~ /const float \*vb0 = vb;|const float \*const al = fresh|\/\* (row r sees keys|tiles that no key block reached)/)
			state = "other"
		# the rows of a tile written out after its last key block, the
		# tail rows after the block loop
		if ($0 ~ /\/\* (the tile.s last block: (its rows written out|each row.s factor)|the tail.s rows, from ta)/)
			state = "output"
		p = state
		# and the prefetch of its first out rows at the start of that block
		if ($0 ~ /__builtin_prefetch\(oh /)
			p = "output"
		if ($0 ~ /memcpy\((kc|vp) |[kv]s16|[kv]d \+/)
			p = "copies"
		else if (state != "output" && $0 ~ /(^|[^a-z_])(pf[a-z]*|nx)([^a-z_]|$)|size_t pc = 0; pc < /)
			p = "prefetch"
	}
	part[FNR] = p
	text[FNR] = $0
	if ($0 == "}") fn = ""
	next
}
FILENAME == ARGV[2] {
	# "  2894  [.] ab_a_block  ab_a.c:123" (samples): A'"'"'s lines only
	if ($NF !~ /^ab_a\.c:[0-9]+$/) next
	v = $1
	split($NF, at, ":")
	p = (at[2] in part) ? part[at[2]] : "other"
	sum[p] += v
	total += v
	# each sampled line with its part, to check the grouping
	printf "%7d  %-8s %5d  %s\n", v, p, at[2], text[at[2]] > byline
	next
}
{
	# the libc copies: half of them A'"'"'s
	if ($NF ~ /^__mem(cpy|move)/) {
		v = $1
		sum["copies"] += v / 2
		total += v / 2
	}
}
END {
	if (total <= 0) {
		print "bench-where: " name ": no samples in the kernel" > "/dev/stderr"
		exit 1
	}
	n = split(parts, P, " ")
	line = sprintf("%-26s %7s %6s", label, ms, pk)
	row = sprintf("%s,\"%s\",\"%s\",%s,%s,%s,%d", name, label, spec, batch, ms, pk, total)
	for (i = 1; i <= n; ++i) {
		x = 100 * sum[P[i]] / total
		line = line sprintf(" %6.1f%%", x)
		row = row sprintf(",%.1f", x)
	}
	print line
	print row >> csv
}' "$dir/ab_a.c" "$dir/lines.txt" "$dir/syms.txt"
