#!/bin/sh
# tune-nearness.sh MHAGEN DIR BUDGET SPEC...: how near the budgeted search
# comes to the exhaustive one.  For each SPEC (one argument of flags), tunes
# exhaustively into DIR/exhaustive.jsonl (resumed when run again), then with
# --search descent and BUDGET seconds into a fresh DIR/descent.jsonl.  Prints
#  - the exhaustive run's median of the variant the descent picked over the
#    exhaustive best (both from one run; 1.000 = found the same variant);
#  - the two picks measured again, alternating, ROUNDS times each: the
#    median ratio (the best of hundreds of single measurements is biased
#    low by noise, and so is the first ratio).
set -eu

mhagen=$1
dir=$2
budget=$3
shift 3
rounds=${ROUNDS:-3}
mkdir -p "$dir"

# best DB SPEC: "plan|median|knob flags" of the fastest ok record of SPEC
best() {
	grep -F "\"spec\":\"$2\"" "$1" | grep '"status":"ok"' | awk '{
		match($0, /"plan":"[^"]*"/); plan = substr($0, RSTART + 8, RLENGTH - 9)
		match($0, /"median_s":[^,]*/); t = substr($0, RSTART + 11, RLENGTH - 11) + 0
		match($0, /"knobs":\{[^}]*\}/); k = substr($0, RSTART + 9, RLENGTH - 10)
		gsub(/"/, "", k); gsub(/:/, " ", k); gsub(/,/, " --", k)
		if (k != "") k = "--" k
		if (!n++ || t < bt) { bt = t; bp = plan; bk = k }
	} END { print bp "|" bt "|" bk }'
}

# median DB SPEC PLAN: the median of the record of PLAN
median() {
	grep -F "\"spec\":\"$2\"" "$1" | grep -F "\"plan\":\"$3\"" | head -n 1 |
		sed 's/.*"median_s":\([^,]*\).*/\1/'
}

# measure SPEC KNOBS: one fresh measurement of the variant (median seconds)
measure() {
	rm -f "$dir/m.jsonl"
	# shellcheck disable=SC2086 # flags
	"$mhagen" tune $1 $2 --db "$dir/m.jsonl" --budget 0.01 > /dev/null 2>&1
	sed 's/.*"median_s":\([^,]*\).*/\1/' "$dir/m.jsonl"
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
	ex_plan=${ex%%|*}
	de_plan=${de%%|*}
	t_best=$(echo "$ex" | cut -d'|' -f2)
	t_pick=$(median "$dir/exhaustive.jsonl" "$key" "$de_plan")
	n_ex=$(grep -cF "\"spec\":\"$key\"" "$dir/exhaustive.jsonl")
	n_de=$(grep -cF "\"spec\":\"$key\"" "$dir/descent.jsonl")
	ratios=""
	if [ "$ex_plan" != "$de_plan" ]; then
		for r in $(seq "$rounds"); do
			b=$(measure "$spec" "$(echo "$ex" | cut -d'|' -f3)")
			p=$(measure "$spec" "$(echo "$de" | cut -d'|' -f3)")
			ratios="$ratios $(awk -v b="$b" -v p="$p" 'BEGIN { printf "%.3f", p / b }')"
		done
	fi
	rm -f "$dir/m.jsonl"
	# shellcheck disable=SC2086 # one ratio per word
	again=$(printf '%s\n' $ratios | sort -n | sed -n "$(((rounds + 1) / 2))p")
	[ -n "$ratios" ] || again="1.000 (the same variant)"
	awk -v s="$key" -v b="$t_best" -v p="$t_pick" -v ne="$n_ex" -v nd="$n_de" \
	    -v bp="$ex_plan" -v dp="$de_plan" -v a="$again" -v rs="$ratios" 'BEGIN {
		printf "nearness %s: exhaustive best %.4g ms (%s, %d variants); " \
		       "descent pick %.4g ms in the same run (%s, %d variants): %.3f; " \
		       "measured again: %s (rounds:%s)\n",
		       s, b * 1e3, bp, ne, p * 1e3, dp, nd, p / b, a, rs }'
done
