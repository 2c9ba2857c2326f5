#!/usr/bin/env bash
# The regression guard of `make bench` (docs/performance.md, "Regression history"): counts the
# instructions of the standard benchmark's 400 KB variant under callgrind, which repeat exactly
# run to run where wall-clock figures do not, and prints them beside the commit, the fingerprint
# and the last row of the history table in docs/performance.md, with the ratio to it. Each run
# is also appended to BUILD/bench-history.tsv.
#
# usage: scripts/bench_instructions.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/bench_instructions.sh BUILD_DIR}

if ! command -v valgrind > /dev/null; then
  echo "instructions: valgrind is not installed (make bench-setup installs it); no count taken"
  exit 0
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.out" \
  "$build/fabtwin" bench --set 'traffic[0].size=400KB' > "$out/bench.txt" 2> "$out/valgrind.txt" || {
  cat "$out/valgrind.txt" >&2
  exit 1
}
instructions=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out/callgrind.out")
fingerprint=$(sed -n 's/^fingerprint *//p' "$out/bench.txt")
events=$(sed -n 's/^events  *\([0-9][0-9]*\)$/\1/p' "$out/bench.txt")
commit=$(git rev-parse --short=7 HEAD 2> /dev/null || echo unknown)
git diff --quiet HEAD 2> /dev/null || commit="$commit+changes"

# The last row of the history table: | commit | date | instructions | ... (commas allowed).
last=$(awk '/^<!-- bench-history -->/{on=1; next} on && /^\| *[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f] /{row=$0} \
            on && /^$/{on=0} END{print row}' docs/performance.md)
last_commit=$(echo "$last" | awk -F'|' '{gsub(/ /, "", $2); print $2}')
last_instructions=$(echo "$last" | awk -F'|' '{gsub(/[ ,]/, "", $4); print $4}')

group() { echo "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/; ta'; }
printf "instructions        %s (400 KB variant, callgrind; %s events, fingerprint %s, commit %s)\n" \
  "$(group "$instructions")" "$events" "$fingerprint" "$commit"
if [ -n "$last_instructions" ]; then
  awk -v now="$instructions" -v then="$last_instructions" -v c="$last_commit" \
    'BEGIN{printf "against history     %.4f x the last row of docs/performance.md (%s)\n", now / then, c}'
fi
printf "%s\t%s\t%s\t%s\t%s\n" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$commit" "$instructions" \
  "$events" "$fingerprint" >> "$build/bench-history.tsv"
