#!/usr/bin/env bash
# two_gpus_nccl_bootstrap.sh BIN DATA [PHASE...] — data parallel on two GPUs of one host, one process each,
# bootstrapped by NCCL alone (no MPI: scripts/launch.sh's processes, torchrun's variables, NCCL_COMM_ID =
# MASTER_ADDR:MASTER_PORT). For a machine with two GPUs and no MPI (the GPU machine); issue 39's targets.
#   BIN   a folder with feed_vs_prefetch and conveyor_data_parallel_gpu_tests (the bundle's bin/, its
#         libraries found: source the bundle's tools/device-env first)
#   DATA  an ImageFolder tree (bench/gpu/lib.sh's imagenet_like makes one)
# Phases (all by default, in this order):
#   scale  one GPU (CUDA_VISIBLE_DEVICES=0) against two processes, in one call, SCALE_ROUNDS rounds (default
#          2, round 2 reversed): feed_vs_prefetch prefetch, ResNet-18 bf16, batch 256 per GPU, 16 threads per
#          process, 300 steps after 10, as bench/gpu/scaling.sh; the ratio is the two ranks'
#          images/s summed over one GPU's
#   hang   HANG_RUNS (default 50) runs of the two processes (HANG_STEPS steps, default 40, after 3), each
#          under a HANG_LIMIT-second timeout (default 150): a run that passes it is a hang
#   kill   a rank killed (SIGKILL) mid-run: under scripts/launch.sh (the launcher ends the other), and as two
#          processes started here with no launcher to help (the library's watch ends rank 0 after
#          --collective-timeout 20); each must end within 30 s of the kill
#   tests  conveyor_data_parallel_gpu_tests (two processes beside nvJPEG run after run: CONVEYOR_HANG_RUNS=10)
# Writes logs, JSON and summary.txt under OUT (default /tmp/out/two_gpus_nccl_bootstrap).
set -uo pipefail
bin=${1:?usage: two_gpus_nccl_bootstrap.sh BIN DATA [scale|hang|kill|tests]...}
data=${2:?usage: two_gpus_nccl_bootstrap.sh BIN DATA [scale|hang|kill|tests]...}
shift 2
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(scale hang kill tests)
root=$(cd "$(dirname "$0")/../.." && pwd)
launch=$root/scripts/launch.sh
out=${OUT:-/tmp/out}/two_gpus_nccl_bootstrap
mkdir -p "$out"
summary=$out/summary.txt
say() { echo "$*" | tee -a "$summary"; }
export CONVEYOR_LAUNCHER=processes NCCL_NVLS_ENABLE=0  # NCCL's own bootstrap, even where mpirun exists

say "two_gpus_nccl_bootstrap: $(date -u +%FT%TZ), commit $(cat "$root/.carry/commit" 2>/dev/null || git -C "$root" rev-parse --short HEAD 2>/dev/null)"
nvidia-smi -L 2>&1 | tee -a "$summary"
say "$(nproc) cores"

fvp=("$bin/feed_vs_prefetch" --data "$data" --modes prefetch --threads 16 --batch 256 --precision bf16
     --model resnet18 --stall-report 30)

# images/s of one run: its JSON, or the sum of its ranks' JSONs (NAME.rank0.json, NAME.rank1.json).
rate() {
  python3 - "$1" <<'EOF'
import glob, json, os, sys
stem = sys.argv[1]
files = [stem + ".json"] if os.path.exists(stem + ".json") else sorted(glob.glob(stem + ".rank*.json"))
total = 0.0
for f in files:
    total += json.load(open(f))["results"][0]["images_per_s"]
print(f"{total:.0f} {len(files)}")
EOF
}

phase_scale() {
  say "== scale: one GPU against two processes (NCCL_COMM_ID bootstrap), ${SCALE_ROUNDS:-2} rounds"
  mkdir -p "$out/scale"
  local round one two order rc
  for round in $(seq "${SCALE_ROUNDS:-2}"); do
    order=(one two)
    [ $((round % 2)) = 0 ] && order=(two one)
    for v in "${order[@]}"; do
      case $v in
        one) timeout 300 env CUDA_VISIBLE_DEVICES=0 "${fvp[@]}" --warmup 10 --steps 300 \
               --json "$out/scale/one_$round.json" >"$out/scale/one_$round.log" 2>&1 ;;
        two) timeout 300 bash "$launch" 2 "${fvp[@]}" --warmup 10 --steps 300 \
               --json "$out/scale/two_$round.json" >"$out/scale/two_$round.log" 2>&1 ;;
      esac
      rc=$?
      say "  round $round $v: rc $rc, images/s and JSON files: $(rate "$out/scale/${v}_$round")"
    done
    one=$(rate "$out/scale/one_$round" | cut -d' ' -f1)
    two=$(rate "$out/scale/two_$round" | cut -d' ' -f1)
    say "  round $round: two processes / one GPU = $(python3 -c "print(f'{$two / max($one, 1):.3f}x')")"
  done
  say "  bootstrap: $(grep -ho 'bootstrap: [^)]*)' "$out"/scale/two_*.log | sort -u | head -2 | tr '\n' ' ')"
}

phase_hang() {
  local runs=${HANG_RUNS:-50} steps=${HANG_STEPS:-40} limit=${HANG_LIMIT:-150} ended=0 i rc start
  say "== hang: $runs runs of two processes, $steps steps after 3, each under a $limit s timeout"
  mkdir -p "$out/hang"
  for i in $(seq "$runs"); do
    start=$SECONDS
    timeout -k 10 "$limit" bash "$launch" 2 "${fvp[@]}" --warmup 3 --steps "$steps" \
      --json "$out/hang/run_$i.json" >"$out/hang/run_$i.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && [ "$(grep -c '^prefetch ' "$out/hang/run_$i.log")" -ge 2 ]; then
      ended=$((ended + 1))
    else
      say "  !!! run $i: rc $rc after $((SECONDS - start)) s ($( [ $rc -eq 124 ] && echo 'timed out: a hang' || echo failed))"
      grep -A12 'conveyor: no progress' "$out/hang/run_$i.log" | head -14 | tee -a "$summary"
    fi
    printf '%s:%ss ' "$i" $((SECONDS - start))
  done
  echo
  say "  $ended of $runs runs ended"
}

# The pid of rank RANK among the feed_vs_prefetch processes (from their environment).
rank_pid() {
  local pid
  for pid in $(pgrep -f "^$bin/feed_vs_prefetch"); do
    tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "RANK=$1" && { echo "$pid"; return; }
  done
}

# Waits (at most 240 s) until LOG shows the job trained past its warm-up, then 5 s more.
wait_training() {
  local waited=0
  until grep -q 'data parallel over NCCL' "$1" 2>/dev/null || [ $waited -ge 240 ]; do sleep 1; waited=$((waited + 1)); done
  sleep 5
}

phase_kill() {
  say "== kill: a rank killed mid-run"
  mkdir -p "$out/kill"
  local job pid killed_at ended rc
  # Under scripts/launch.sh: the launcher sees rank 1 die and ends rank 0.
  bash "$launch" 2 "${fvp[@]}" --warmup 3 --steps 100000 >"$out/kill/launcher.log" 2>&1 &
  job=$!
  wait_training "$out/kill/launcher.log"
  pid=$(rank_pid 1)
  killed_at=$(date +%s.%N)
  kill -9 "$pid"
  timeout 120 tail --pid="$job" -f /dev/null
  ended=$(date +%s.%N)
  wait "$job"
  rc=$?
  say "  launch.sh: rank 1 (pid $pid) killed; the job ended $(python3 -c "print(f'{$ended - $killed_at:.1f}')") s later, rc $rc"
  grep -h 'launch:' "$out/kill/launcher.log" | tee -a "$summary"
  # Without a launcher: rank 0's own watch (--collective-timeout 20) must end it.
  local port
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  local vars=(WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port)
  env "${vars[@]}" RANK=0 LOCAL_RANK=0 "${fvp[@]}" --warmup 3 --steps 100000 --collective-timeout 20 \
    >"$out/kill/rank0.log" 2>&1 &
  local rank0=$!
  env "${vars[@]}" RANK=1 LOCAL_RANK=1 "${fvp[@]}" --warmup 3 --steps 100000 --collective-timeout 20 \
    >"$out/kill/rank1.log" 2>&1 &
  local rank1=$!
  wait_training "$out/kill/rank0.log"
  killed_at=$(date +%s.%N)
  kill -9 "$rank1"
  timeout 120 tail --pid="$rank0" -f /dev/null || kill -9 "$rank0"
  ended=$(date +%s.%N)
  wait "$rank0"
  rc=$?
  say "  no launcher: rank 1 killed; rank 0 ended $(python3 -c "print(f'{$ended - $killed_at:.1f}')") s later, rc $rc"
  grep -h 'feed_vs_prefetch:' "$out/kill/rank0.log" | head -3 | tee -a "$summary"
  wait "$rank1" 2>/dev/null
}

phase_tests() {
  say "== tests: conveyor_data_parallel_gpu_tests (CONVEYOR_HANG_RUNS=10)"
  CONVEYOR_HANG_RUNS=10 CONVEYOR_FEED_VS_PREFETCH=$bin/feed_vs_prefetch \
    CONVEYOR_DATA_PARALLEL_PEER=$bin/data_parallel_peer CONVEYOR_LAUNCH=$launch \
    CONVEYOR_TWO_HOSTS=$root/tests/support/two_hosts.sh \
    timeout 1800 "$bin/conveyor_data_parallel_gpu_tests" >"$out/tests.log" 2>&1
  local rc=$?
  say "  rc $rc"
  grep -E '^\[ +(PASSED|FAILED|SKIPPED|OK) +\]|^\[ (hang|fault|weights|placement) ' "$out/tests.log" | tee -a "$summary"
}

for phase in "${phases[@]}"; do
  case $phase in
    scale | hang | kill | tests) "phase_$phase" ;;
    *) echo "two_gpus_nccl_bootstrap: unknown phase $phase" >&2; exit 2 ;;
  esac
done
say "done: $out"
