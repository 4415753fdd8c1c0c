#!/usr/bin/env bash
# Issue 20 at the committed code: feed_vs_prefetch prefetch at its default (the step kernel by kernel beside
# nvJPEG) and with --graph, against train_step_bench with its graph (the target's peer) and with --no-graph.
# Three rounds, the order alternating.
set -u
out=${OUT:-/tmp/out}
bash bench/gpu_run.sh data >"$out/data.log" 2>&1
source /tmp/bundle/tools/device-env /tmp/bundle/lib
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib64
bin=/tmp/bundle/bin
data=/tmp/data/imagenet-like-5000/train
step() {  # NAME FLAGS...
  local name=$1; shift
  "$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 --steps 200 --warmup 10 "$@" \
    --json "$out/$name.json" >"$out/$name.log" 2>&1
  echo "$name: $(grep 'steady state' "$out/$name.log")"
}
fvp() {  # NAME FLAGS...
  local name=$1; shift
  "$bin/feed_vs_prefetch" --data "$data" --modes prefetch --threads 16 --batch 256 --steps 300 --warmup 5 "$@" \
    --json "$out/$name.json" >"$out/$name.log" 2>&1
  echo "$name: $(grep -E '^prefetch ' "$out/$name.log" | head -1)"
}
for round in 1 2 3; do
  if [ "$round" = 2 ]; then
    fvp fvp_graph_r$round --graph; step step_eager_r$round --no-graph; fvp fvp_default_r$round; step step_graph_r$round
  else
    step step_graph_r$round; fvp fvp_default_r$round; step step_eager_r$round --no-graph; fvp fvp_graph_r$round --graph
  fi
done
cd "$out" && tar czf exp.tgz *.log *.json && rm -f *.log *.json
