#!/bin/sh
# tune-bench.sh MHAGEN DIR BUDGET: tune the AVX2 kernels of the bench shapes
# (batch 1, one thread) into DIR/tune.jsonl, sharing BUDGET seconds, then
# write DIR/tune.csv and DIR/tune.svg: default against tuned GFLOP/s per
# shape.  Re-running resumes from the database.
set -eu

mhagen=$1
dir=$2
budget=$3
db=$dir/tune.jsonl
each=$((budget / 5))

mkdir -p "$dir"
start=$(date +%s)
for shape in "--h 8 --dk 64 --seq 128" \
             "--h 12 --dk 64 --seq 197" \
             "--h 8 --dk 64 --seq 512 --mask causal" \
             "--h 16 --dk 128 --seq 1024 --mask causal" \
             "--h 32 --dk 128 --seq 1 --seq-kv 2048"; do
	# shellcheck disable=SC2086 # the shape is a list of flags
	"$mhagen" tune $shape --target avx2 --db "$db" --budget "$each" > /dev/null
done
"$mhagen" tune --db "$db" --report "$dir/tune.csv" --plot "$dir/tune.svg"
echo "tune-bench: $(($(date +%s) - start)) s (budget $budget s); $dir/tune.csv:"
# spec, default and tuned GFLOP/s, speedup, tuned knobs
awk -F, 'NR > 1 { printf "%-45s %8.1f %8.1f %6.3fx  %s\n", $1, $7, $9, $10, $11 }' \
	"$dir/tune.csv"
