#!/bin/sh
# `fabtwin fluid` refuses what the fluid model cannot express: exit status 2, a message naming
# what is wrong (EXPECTED, a fixed string), and no output file.
# usage: check_fluid_refusal.sh FABTWIN OUTDIR EXPECTED SCENARIO [ARGS...]
fabtwin=$1 out=$2 expected=$3
shift 3
mkdir -p "$out" && rm -f "$out/refused.h5" "$out/refused.json"
"$fabtwin" fluid "$@" --out "$out/refused.h5" --json "$out/refused.json" > "$out/refused.stdout" 2> "$out/refused.stderr"
status=$?
if [ $status -ne 2 ]; then echo "exit status $status, expected 2"; cat "$out/refused.stderr"; exit 1; fi
if ! grep -qF -- "$expected" "$out/refused.stderr"; then
  echo "message lacks \"$expected\":"; cat "$out/refused.stderr"; exit 1
fi
if [ -e "$out/refused.h5" ] || [ -e "$out/refused.json" ]; then echo "an output was written"; exit 1; fi
cat "$out/refused.stderr"
