#!/bin/sh
# time-cc.sh NAME OBJ BUILD CC [FLAGS...] SRC: compile SRC to OBJ three times
# with CC FLAGS, then write to BUILD one line for the benchmark's table,
#   BENCH_BUILD(NAME, median seconds, object bytes)
# The compiler's messages are shown; a failed compile fails the script.
set -eu

name=$1
obj=$2
out=$3
shift 3

times=""  # nanoseconds of each compile
for run in 1 2 3; do
	t0=$(date +%s%N)
	"$@" -c -o "$obj"
	t1=$(date +%s%N)
	times="$times $((t1 - t0))"
done
# shellcheck disable=SC2086 # one number per word
median=$(printf '%s\n' $times | sort -n | sed -n 2p)
bytes=$(wc -c < "$obj")
printf 'BENCH_BUILD(%s, %d.%09d, %d)\n' "$name" \
	$((median / 1000000000)) $((median % 1000000000)) "$bytes" > "$out"
