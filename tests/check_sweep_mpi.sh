#!/usr/bin/env bash
# Runs a sweep in one process and under mpirun with RANKS ranks (points farmed over the ranks)
# and fails unless the tables are identical and every run was stored once.
# usage: check_sweep_mpi.sh FABTWIN RANKS SWEEP OUTDIR
set -euo pipefail
fabtwin=$1 ranks=$2 sweep=$3 out=$4
rm -rf "$out"
mkdir -p "$out"
"$fabtwin" sweep "$sweep" --out "$out/serial" > /dev/null
mpirun --oversubscribe --allow-run-as-root -np "$ranks" \
  "$fabtwin" sweep "$sweep" --out "$out/mpi" --threads 1 > /dev/null
cmp "$out/serial/table.csv" "$out/mpi/table.csv"
test "$(ls "$out/serial/points" | wc -l)" -eq "$(ls "$out/mpi/points" | wc -l)"
