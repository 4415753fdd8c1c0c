#!/usr/bin/env bash
# cpu_data_parallel_faults.sh BUILD_DIR [ROUNDS] — how fast a fault ends a data-parallel job of two CPU
# ranks (Open MPI), on this host (scripts/launch.sh, which runs mpirun) and across the two hosts of
# tests/support/two_hosts.sh (root only), each scenario ROUNDS times (default 3):
#   kill         rank 1 kills itself (SIGKILL) before step 3; mpirun ends rank 0
#   hang         rank 1 stops taking part before step 3; rank 0's collective_timeout (3 s) ends it, MPI_Abort
#                ends the job
#   hosts-kill   kill, one rank on each host
#   unreachable  the second host has no route back to the first (mpirun's daemon there cannot call home)
#   world        the ranks say a world of 3 under mpirun -np 2
# Prints one line per run: scenario, round, exit status, seconds from the fault to the job's end (the fault's
# time is what the rank printed; for unreachable and world the job's start), the run's whole seconds, and
# whether the expected message came. Logs go to OUT (default /tmp/out/cpu_data_parallel_faults).
set -uo pipefail
build=${1:?usage: cpu_data_parallel_faults.sh BUILD_DIR [ROUNDS]}
rounds=${2:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
peer=$(cd "$build" && pwd)/tests/train/distributed/data_parallel_peer
[ -x "$peer" ] || { echo "no $peer: build data_parallel_peer" >&2; exit 1; }
out=${OUT:-/tmp/out}/cpu_data_parallel_faults
mkdir -p "$out"
export CONVEYOR_LAUNCHER=mpirun
root_flag=""
[ "$(id -u)" -ne 0 ] || root_flag=--allow-run-as-root
across() {  # the mpirun line of tests/train/distributed/peer_runs.cpp, one rank on each host
  echo "\"\$CONVEYOR_ON_HOST\" \"\$CONVEYOR_HOST_A\" mpirun $root_flag --host \"\$CONVEYOR_HOST_A,\$CONVEYOR_HOST_B\"" \
       "-np 2 --bind-to none --mca plm_rsh_agent \"\$CONVEYOR_ON_HOST\" --mca btl tcp,self" \
       "--mca oob_tcp_if_include 10.77.0.0/24 --mca btl_tcp_if_include 10.77.0.0/24 $peer $*"
}
now_ms() { date +%s%3N; }

one() {  # SCENARIO ROUND
  local log=$out/$1_$2.log start end rc fault expect
  start=$(now_ms)
  # The expected message first: the case's status is then its command's.
  case $1 in
    kill) expect='exited on signal 9'
          "$root/scripts/launch.sh" 2 "$peer" --steps 200 --die-at-step 3 >"$log" 2>&1 ;;
    hang) expect='made no progress for 3 s'
          "$root/scripts/launch.sh" 2 "$peer" --steps 200 --hang-at-step 3 --collective-timeout-ms 3000 >"$log" 2>&1 ;;
    hosts-kill) expect='on node 10.77.0.2 exited on signal 9'
          "$root/tests/support/two_hosts.sh" sh -c "$(across --steps 200 --die-at-step 3)" >"$log" 2>&1 ;;
    unreachable) expect='connection back to mpirun'
          "$root/tests/support/two_hosts.sh" sh -c \
            "ip -n \"\$CONVEYOR_NETNS_B\" route flush table main && $(across --steps 4)" >"$log" 2>&1 ;;
    world) expect='but the ranks given say rank 0 of 3'
          "$root/scripts/launch.sh" 2 "$peer" --world-size 3 --steps 2 >"$log" 2>&1 ;;
  esac
  rc=$?
  end=$(now_ms)
  fault=$(grep -ho 'at [0-9]* ms' "$log" | head -1 | tr -dc 0-9)
  [ -n "$fault" ] || fault=$start
  printf '%-12s round %d  rc %3d  fault to end %6.2f s  whole run %6.2f s  message %s\n' "$1" "$2" "$rc" \
    "$(echo "($end - $fault) / 1000" | bc -l)" "$(echo "($end - $start) / 1000" | bc -l)" \
    "$(grep -q "$expect" "$log" && echo yes || echo NO)"
}

echo "cpu_data_parallel_faults: $(date -u +%FT%TZ), commit $(git -C "$root" rev-parse --short HEAD), $(nproc) cores, $(mpirun --version | head -1)"
for scenario in kill hang hosts-kill unreachable world; do
  for round in $(seq "$rounds"); do one "$scenario" "$round"; done
done
