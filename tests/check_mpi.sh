#!/usr/bin/env bash
# Runs a scenario in one process and under mpirun with RANKS ranks, and fails unless the
# results (--json report and HDF5 file, wall-clock figures aside) are identical.
# usage: check_mpi.sh FABTWIN RANKS OUTDIR SCENARIO [--set ...]...
set -euo pipefail
fabtwin=$1 ranks=$2 out=$3 scenario=$4
shift 4
mkdir -p "$out"
name=$(basename "$scenario" .json)-$ranks
"$fabtwin" run "$scenario" "$@" --threads 1 --json "$out/$name-serial.json" --out "$out/$name-serial.h5" > /dev/null
mpirun --oversubscribe --allow-run-as-root -np "$ranks" \
  "$fabtwin" run "$scenario" "$@" --json "$out/$name-mpi.json" --out "$out/$name-mpi.h5" > /dev/null
/usr/bin/python3 "$(dirname "$0")/compare_results.py" \
  "$out/$name-serial.json" "$out/$name-mpi.json" "$out/$name-serial.h5" "$out/$name-mpi.h5"
