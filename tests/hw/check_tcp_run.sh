#!/usr/bin/env bash
# Runs a scenario with fabtwin-hw over TCP as three processes on this machine, and checks the
# measurement file (every flow completed, sizes as planned, comparable with a simulated run).
# usage: check_tcp_run.sh MODE FABTWIN_HW FABTWIN OUTDIR SCENARIO
#   MODE hosts:       a hosts file of three 127.0.0.1 lines, ranks given with --rank
#   MODE mpirun:      the same job started by mpirun -np 3 (ranks from its environment)
#   MODE wrong-token: rank 2 holds another token: every rank must fail, and no file be written
set -euo pipefail
mode=$1 hw=$2 fabtwin=$3 out=$4 scenario=$5
here=$(dirname "$0")
dir="$out/tcp-$mode"
rm -rf "$dir"
mkdir -p "$dir"
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$hw" token --out "$dir/token" > /dev/null
test "$(stat -c %a "$dir/token")" = 600
sets=(--set hw.transport=tcp --set hw.control_port="$port" --set hw.join_deadline=6s
      --set hw.run_deadline=20s)

case "$mode" in
  hosts|wrong-token)
    printf '# three processes on this machine\n127.0.0.1 0-1\n127.0.0.1 2-3\n127.0.0.1 4-5\n' > "$dir/hosts"
    token2="$dir/token"
    if [ "$mode" = wrong-token ]; then
      "$hw" token --out "$dir/other-token" > /dev/null
      token2="$dir/other-token"
    fi
    pids=()
    for rank in 0 1 2; do
      token="$dir/token"
      [ "$rank" = 2 ] && token="$token2"
      timeout 40 "$hw" run "$scenario" "${sets[@]}" --set hw.hosts="$dir/hosts" --rank "$rank" \
        --token-file "$token" --out "$dir/hw.h5" > "$dir/rank$rank.out" 2> "$dir/rank$rank.err" &
      pids+=($!)
    done
    codes=()
    for pid in "${pids[@]}"; do
      set +e
      wait "$pid"
      codes+=($?)
      set -e
    done
    ;;
  mpirun)
    set +e
    FABTWIN_HW_TOKEN_FILE="$dir/token" timeout 40 mpirun --oversubscribe --allow-run-as-root \
      -np 3 -x FABTWIN_HW_TOKEN_FILE "$hw" run "$scenario" "${sets[@]}" --out "$dir/hw.h5" \
      > "$dir/rank0.out" 2> "$dir/mpirun.err"
    codes=($?)
    set -e
    ;;
  *)
    echo "unknown mode $mode" >&2
    exit 2
    ;;
esac

if [ "$mode" = wrong-token ]; then
  for i in 0 1 2; do
    if [ "${codes[$i]}" = 0 ]; then
      echo "rank $i exited 0 although rank 2 holds another token" >&2
      exit 1
    fi
  done
  if [ -e "$dir/hw.h5" ] || ls "$dir" | grep -q partial; then
    echo "a measurement file was written although the job was refused" >&2
    exit 1
  fi
  cat "$dir"/rank*.err
  grep -qi "control network" "$dir/rank2.err" "$dir/rank0.err"
  exit 0
fi

for code in "${codes[@]}"; do
  if [ "$code" != 0 ]; then
    echo "exit codes: ${codes[*]}" >&2
    cat "$dir"/*.err >&2
    exit 1
  fi
done
cat "$dir/rank0.out"
"$fabtwin" run "$scenario" --out "$dir/sim.h5" > /dev/null
"$fabtwin" compare "$dir/sim.h5" "$dir/hw.h5" --json "$dir/compare.json" > "$dir/compare.txt"
/usr/bin/python3 "$here/check_hw_file.py" "$dir/hw.h5" "$dir/sim.h5" "$dir/compare.json" 3
