#!/usr/bin/env bash
# Item 3 of issue 17 (docs/performance.md, "Threads"): the speed-up of N threads over one on the
# three workloads that measure it, in alternating rounds (scripts/alternate_runs.py), so that a
# machine's slow and fast minutes fall on every thread count alike:
#   bench   the standard benchmark (k=8 fat-tree, 128 x 10 MB permutation)
#   nccl    `make bench-nccl`'s ring all-reduce of 1 GiB on 64 GPUs
#   k16     the k=16 permutation (1,024 hosts, 1 MB flows)
# Each workload's fingerprint must be the same for every thread count; alternate_runs.py prints it
# per command.
#
# usage: scripts/thread_scaling.sh FABTWIN ROUNDS THREADS... [-- WORKLOAD...]
# e.g.:  scripts/thread_scaling.sh build/fabtwin 5 1 2 4 8 16
#        scripts/thread_scaling.sh build/fabtwin 3 1 2 -- bench nccl
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: scripts/thread_scaling.sh FABTWIN ROUNDS THREADS... [-- WORKLOAD...]"
fabtwin=${1:?$usage}
rounds=${2:?$usage}
shift 2
threads=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do threads+=("$1"); shift; done
[ $# -gt 0 ] && shift
workloads=("$@")
[ ${#workloads[@]} -gt 0 ] || workloads=(bench nccl k16)
[ ${#threads[@]} -gt 0 ] || { echo "$usage" >&2; exit 2; }

for workload in "${workloads[@]}"; do
  case $workload in
    bench) command="$fabtwin bench" ;;
    nccl) command="$fabtwin run scenarios/bench/nccl_ring_8x8_1gib.json --set output.collective_timeline=false" ;;
    k16) command="$fabtwin bench --set topology.k=16 --set traffic[0].size=1MB" ;;
    *) echo "unknown workload '$workload' (bench, nccl or k16)" >&2; exit 2 ;;
  esac
  commands=()
  for n in "${threads[@]}"; do commands+=("t$n=$command --threads $n"); done
  echo "== $workload: $command, threads ${threads[*]}, $rounds rounds ($(date -u +%H:%M:%S) UTC)"
  scripts/alternate_runs.py "$rounds" "${commands[@]}"
done
