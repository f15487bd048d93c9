#!/bin/sh
# tune-bench.sh MHAGEN DIR BUDGET: tune the kernels of the bench shapes for
# TUNE_TARGET (default avx2)
# (batch 1, one thread) into DIR/tune.jsonl, sharing BUDGET seconds, then
# write DIR/tune.csv and DIR/tune.svg: default against tuned GFLOP/s per
# shape.  Re-running resumes from the database.
#
# The tuned median is the minimum over many variants measured once, so it
# is biased low by noise; the check afterwards measures the default and the
# tuned kernel again, alternating, ROUNDS times each in fresh databases, and
# prints the median ratio.
set -eu

mhagen=$1
dir=$2
budget=$3
rounds=${ROUNDS:-3}
target=${TUNE_TARGET:-avx2}
db=$dir/tune.jsonl
each=$((budget / 5))

median_of() { # the median_s of the only record of a database
	sed 's/.*"median_s":\([^,]*\).*/\1/' "$1"
}

mkdir -p "$dir"
start=$(date +%s)
: > "$dir/check.txt"
for shape in "--h 8 --dk 64 --seq 128" \
             "--h 12 --dk 64 --seq 197" \
             "--h 8 --dk 64 --seq 512 --mask causal" \
             "--h 16 --dk 128 --seq 1024 --mask causal" \
             "--h 32 --dk 128 --seq 1 --seq-kv 2048"; do
	# shellcheck disable=SC2086 # the shape is a list of flags
	tuned=$("$mhagen" tune $shape --target "$target" --db "$db" --budget "$each")
	knobs=$(echo "$tuned" | sed -n "s/^.*--target $target//p")
	ratios=""
	for r in $(seq "$rounds"); do
		rm -f "$dir/d.jsonl" "$dir/t.jsonl"
		# shellcheck disable=SC2086
		"$mhagen" tune $shape --target "$target" --db "$dir/d.jsonl" --budget 0.01 \
			> /dev/null 2>&1
		# shellcheck disable=SC2086
		"$mhagen" tune $shape --target "$target" $knobs --db "$dir/t.jsonl" \
			--budget 0.01 > /dev/null 2>&1
		ratios="$ratios $(awk -v d="$(median_of "$dir/d.jsonl")" \
		                      -v t="$(median_of "$dir/t.jsonl")" \
		                      'BEGIN { printf "%.4f", d / t }')"
	done
	rm -f "$dir/d.jsonl" "$dir/t.jsonl"
	# shellcheck disable=SC2086 # one ratio per word
	echo "$shape|$(printf '%s\n' $ratios | sort -n | sed -n "$(((rounds + 1) / 2))p")|$ratios|$knobs" \
		>> "$dir/check.txt"
done
"$mhagen" tune --db "$db" --report "$dir/tune.csv" --plot "$dir/tune.svg"
echo "tune-bench: $(($(date +%s) - start)) s (budget $budget s for the search)"
echo "in the search ($dir/tune.csv): default and tuned GFLOP/s, speedup (spread), knobs that differ"
awk -F, 'NR > 1 { printf "  %-45s %8.1f %8.1f %6.3fx (%.3f to %.3f)  %s\n", $1, $7, $9, $10, $11, $12, $13 }' \
	"$dir/tune.csv"
echo "measured again, default median / tuned median, median of $rounds rounds:"
awk -F'|' -v t="$target" '{ printf "  %-45s %6.3fx  (rounds:%s)\n", $1 " --target " t, $2, $3 }' \
	"$dir/check.txt"
