#!/bin/sh
# run-tests.sh BIN...: run each Criterion test binary, then print the totals
# as "tests: N passed, M failed".  Exit status 1 if any binary failed.
set -u

passed=0
failed=0
status=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT INT TERM

for bin in "$@"; do
	echo "== $bin"
	"$bin" --jobs 2 > "$log" 2>&1
	rc=$?
	cat "$log"
	# Criterion's last line: [====] Synthesis: Tested: T | Passing: P | Failing: F | Crashing: C
	line=$(grep 'Synthesis:' "$log" | tail -n 1)
	if [ -z "$line" ]; then
		echo "run-tests: $bin printed no synthesis line" >&2
		failed=$((failed + 1))
		status=1
		continue
	fi
	p=$(echo "$line" | sed 's/.*Passing: \([0-9]*\).*/\1/')
	f=$(echo "$line" | sed 's/.*Failing: \([0-9]*\).*/\1/')
	c=$(echo "$line" | sed 's/.*Crashing: \([0-9]*\).*/\1/')
	passed=$((passed + p))
	failed=$((failed + f + c))
	if [ "$f" -ne 0 ] || [ "$c" -ne 0 ]; then
		status=1
	fi
	if [ "$rc" -ne 0 ]; then
		echo "run-tests: $bin exited with status $rc" >&2
		status=1
	fi
done

echo "tests: $passed passed, $failed failed"
exit $status
