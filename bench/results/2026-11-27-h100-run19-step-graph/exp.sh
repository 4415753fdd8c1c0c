#!/usr/bin/env bash
# Issue 20: does the step's CUDA graph make nvJPEG wait for step boundaries? train_step_bench and
# feed_vs_prefetch prefetch, each with the step replayed as one CUDA graph (the default) and launched kernel
# by kernel (--no-graph), three rounds, order alternating.
set -u
out=${OUT:-/tmp/out}
bash bench/gpu_run.sh data >"$out/data.log" 2>&1
source /tmp/bundle/tools/device-env /tmp/bundle/lib
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib64
bin=/tmp/bundle/bin
data=/tmp/data/imagenet-like-5000/train
for round in 1 2 3; do
  order="graph eager"; [ "$round" = 2 ] && order="eager graph"
  for g in $order; do
    flag=""; [ "$g" = eager ] && flag="--no-graph"
    "$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 --steps 200 --warmup 10 $flag \
      --json "$out/step_${g}_r$round.json" >"$out/step_${g}_r$round.log" 2>&1
    echo "round $round $g train_step_bench: $(grep 'steady state' "$out/step_${g}_r$round.log")"
    "$bin/feed_vs_prefetch" --data "$data" --modes prefetch --threads 16 --batch 256 --steps 300 --warmup 5 $flag \
      --json "$out/fvp_${g}_r$round.json" >"$out/fvp_${g}_r$round.log" 2>&1
    echo "round $round $g: $(grep -E '^prefetch ' "$out/fvp_${g}_r$round.log" | head -1)"
  done
done
cd "$out" && tar czf exp.tgz *.log *.json && rm -f *.log *.json
