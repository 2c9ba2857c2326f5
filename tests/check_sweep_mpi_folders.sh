#!/usr/bin/env bash
# Ranks without a shared folder (each rank's --out in its own working directory): a run a rank
# stored before the sweep was killed, but never sent to rank 0, is sent on the next start, so
# rank 0's table equals one process's.
# usage: check_sweep_mpi_folders.sh FABTWIN SWEEP OUTDIR
set -euo pipefail
fabtwin=$(realpath "$1") sweep=$(realpath "$2") out=$3
rm -rf "$out"
mkdir -p "$out/rank0" "$out/rank1"
"$fabtwin" sweep "$sweep" --out "$out/serial" > /dev/null
run() {
  mpirun --oversubscribe --allow-run-as-root \
    -np 1 -wdir "$out/rank0" "$fabtwin" sweep "$sweep" --out res --threads 1 : \
    -np 1 -wdir "$out/rank1" "$fabtwin" sweep "$sweep" --out res --threads 1 > /dev/null
}
run
cmp "$out/serial/table.csv" "$out/rank0/res/table.csv"
# As if killed after rank 1 stored its runs and before rank 0 had them.
n=0
for f in "$out"/rank1/res/points/*.json; do
  rm "$out/rank0/res/points/$(basename "$f")"
  n=$((n + 1))
done
test "$n" -gt 0
run
cmp "$out/serial/table.csv" "$out/rank0/res/table.csv"
