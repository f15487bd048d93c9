#!/bin/sh
# tune-nearness.sh MHAGEN DIR BUDGET SPEC...: how near the budgeted search
# comes to the exhaustive one.  For each SPEC (one argument of flags), tunes
# exhaustively into DIR/exhaustive.jsonl, then with --search descent and
# BUDGET seconds into DIR/descent.jsonl, and prints the exhaustive median of
# the variant the descent picked over the exhaustive best (1.000 = found
# the best; both medians from the same exhaustive run, so run-to-run noise
# does not enter), with the variants each measured.
set -eu

mhagen=$1
dir=$2
budget=$3
shift 3
mkdir -p "$dir"

# best DB SPEC: "plan median" of the fastest ok record of SPEC in DB
best() {
	grep -F "\"spec\":\"$2\"" "$1" | grep '"status":"ok"' | awk '{
		match($0, /"plan":"[^"]*"/); plan = substr($0, RSTART + 8, RLENGTH - 9)
		match($0, /"median_s":[^,]*/); t = substr($0, RSTART + 11, RLENGTH - 11) + 0
		if (!n++ || t < bt) { bt = t; bp = plan }
	} END { print bp "|" bt }'
}

# median DB SPEC PLAN: the median of the record of PLAN
median() {
	grep -F "\"spec\":\"$2\"" "$1" | grep -F "\"plan\":\"$3\"" | head -n 1 |
		sed 's/.*"median_s":\([^,]*\).*/\1/'
}

for spec in "$@"; do
	# shellcheck disable=SC2086 # a spec is a list of flags
	key=$("$mhagen" tune $spec --db "$dir/exhaustive.jsonl" --search exhaustive \
	      --budget 100000 2> "$dir/exhaustive.log" | sed 's/ --algo.*//')
	tail -n 1 "$dir/exhaustive.log"
	rm -f "$dir/descent.jsonl"
	# shellcheck disable=SC2086
	"$mhagen" tune $spec --db "$dir/descent.jsonl" --search descent \
		--budget "$budget" > /dev/null 2> "$dir/descent.log"
	tail -n 1 "$dir/descent.log"
	ex=$(best "$dir/exhaustive.jsonl" "$key")
	de=$(best "$dir/descent.jsonl" "$key")
	t_best=${ex#*|}
	t_pick=$(median "$dir/exhaustive.jsonl" "$key" "${de%|*}")
	n_ex=$(grep -cF "\"spec\":\"$key\"" "$dir/exhaustive.jsonl")
	n_de=$(grep -cF "\"spec\":\"$key\"" "$dir/descent.jsonl")
	awk -v s="$key" -v b="$t_best" -v p="$t_pick" -v ne="$n_ex" -v nd="$n_de" \
	    -v bp="${ex%|*}" -v dp="${de%|*}" 'BEGIN {
		printf "nearness %s: exhaustive best %.4g ms (%s, %d variants); " \
		       "descent pick %.4g ms (%s, %d variants): %.3f\n",
		       s, b * 1e3, bp, ne, p * 1e3, dp, nd, p / b }'
done
