#!/usr/bin/env bash
# Kills `fabtwin sweep` (kill -9) at random moments, starts it again each time, lets the last
# start finish, and fails unless (1) the table equals an uninterrupted run's, (2) no finished
# point-and-seed was computed again (no "start KEY" after its "stored KEY" in the sweep's event
# log), (3) none was stored twice or lost, and (4) no temporary file is left.
# usage: check_sweep_resume.sh FABTWIN SWEEP OUTDIR [KILLS]
set -euo pipefail
fabtwin=$1 sweep=$2 out=$3 kills=${4:-6}
rm -rf "$out"
mkdir -p "$out"
start=$(date +%s%N)
"$fabtwin" sweep "$sweep" --out "$out/whole" --jobs 2 > /dev/null
whole_ms=$(( ($(date +%s%N) - start) / 1000000 ))
log="$out/events.log"
: > "$log"
for i in $(seq "$kills"); do
  FABTWIN_SWEEP_LOG="$log" "$fabtwin" sweep "$sweep" --out "$out/killed" --jobs 2 \
    > /dev/null 2>&1 &
  pid=$!
  # A random moment within an uninterrupted run's time (start-up and checks included).
  delay_ms=$(( RANDOM % (whole_ms + 1) ))
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  kill -9 "$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
  echo "kill $i after $delay_ms ms" >> "$out/kills.txt"
done
FABTWIN_SWEEP_LOG="$log" "$fabtwin" sweep "$sweep" --out "$out/killed" --jobs 2 > /dev/null
cmp "$out/whole/table.csv" "$out/killed/table.csv"
/usr/bin/python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
stored, started_after = {}, []
for line in open(os.path.join(out, "events.log")):
    what, key = line.split()
    if what == "stored":
        stored[key] = stored.get(key, 0) + 1
    elif what == "start" and key in stored:
        started_after.append(key)
assert not started_after, f"finished points computed again: {started_after}"
assert all(n == 1 for n in stored.values()), f"stored twice: {stored}"
def records(d):
    p = os.path.join(out, d, "points")
    names = os.listdir(p)
    assert not [n for n in names if ".partial-" in n], f"temporary files left in {p}"
    return {n: json.load(open(os.path.join(p, n))) for n in names}
whole, killed = records("whole"), records("killed")
assert whole.keys() == killed.keys(), "the same point-and-seeds stored"
for n, r in whole.items():
    k = killed[n]
    assert (r["fingerprint"], r["metrics"]) == (k["fingerprint"], k["metrics"]), n
lost = [n for n in killed if n[:-5] not in stored]
# A kill between a record's rename and its log line leaves a record without "stored": rare.
print(f"{len(whole)} runs, {sum(stored.values())} stored with a log line, {len(lost)} without")
PY
cat "$out/kills.txt"
