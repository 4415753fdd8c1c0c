#!/usr/bin/env bash
# Issue 20 at the final code (HEAD): feed_vs_prefetch prefetch at its defaults against train_step_bench,
# three rounds with the order alternating; then bench/gpu_run.sh hybrid-adaptive (pipeline_throughput
# CPU-only and hybrid at 16 and 4 threads with the DataLoader at 16 workers, alternating, three rounds).
set -u
out=${OUT:-/tmp/out}
mkdir -p "$out/prep" "$out/fvp" "$out/hyb"
echo "=== machine ($(date -u +%H:%M:%S))"; nvidia-smi --query-gpu=name --format=csv,noheader; nproc
OUT=$out/prep bash bench/gpu_run.sh data >"$out/prep/data.log" 2>&1
source /tmp/bundle/tools/device-env /tmp/bundle/lib
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib64
export CONVEYOR_COMMIT=$(cat .carry/commit)
bin=/tmp/bundle/bin
data=/tmp/data/imagenet-like-5000/train
step() {  # NAME FLAGS...
  local name=$1; shift
  timeout 120 "$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 --steps 200 --warmup 10 "$@" \
    --json "$out/fvp/$name.json" >"$out/fvp/$name.log" 2>&1
  echo "$name: $(grep 'steady state' "$out/fvp/$name.log")"
}
fvp() {  # NAME FLAGS...
  local name=$1; shift
  timeout 150 "$bin/feed_vs_prefetch" --data "$data" --modes prefetch --threads 16 --batch 256 --steps 300 --warmup 5 "$@" \
    --json "$out/fvp/$name.json" >"$out/fvp/$name.log" 2>&1
  echo "$name: $(grep -E '^prefetch ' "$out/fvp/$name.log" | head -1)"
}
echo "=== fvp rounds ($(date -u +%H:%M:%S))"
for round in 1 2 3; do
  if [ "$round" = 2 ]; then fvp fvp_r$round; step step_r$round
  else step step_r$round; fvp fvp_r$round; fi
done
echo "=== hybrid-adaptive ($(date -u +%H:%M:%S))"
OUT=$out/hyb bash bench/gpu_run.sh hybrid-adaptive 2>&1 | tail -40
echo "=== end ($(date -u +%H:%M:%S))"
cd "$out" && tar czf all.tgz prep fvp hyb && rm -rf prep fvp hyb
