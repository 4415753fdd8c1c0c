#!/usr/bin/env bash
# Issue 20: where does prefetch lose its ~10 % beside the step? feed_vs_prefetch prefetch with its Chrome
# trace (--trace-dir), beside runs without the trace and train_step_bench for the ratio.
set -u
out=${OUT:-/tmp/out}
bash bench/gpu_run.sh data >"$out/data.log" 2>&1
source /tmp/bundle/tools/device-env /tmp/bundle/lib
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib64
bin=/tmp/bundle/bin
data=/tmp/data/imagenet-like-5000/train
"$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 --steps 200 --warmup 10 \
  --json "$out/step_1.json" >"$out/step_1.log" 2>&1
echo "train_step_bench: $(grep 'steady state' "$out/step_1.log")"
fvp() {  # NAME ARGS...
  local name=$1; shift
  "$bin/feed_vs_prefetch" --data "$data" --modes prefetch --threads 16 --batch 256 --steps 300 --warmup 5 \
    --json "$out/$name.json" "$@" >"$out/$name.log" 2>&1
  echo "$name: $(grep -E '^prefetch ' "$out/$name.log" | head -1)"
}
fvp fvp_plain_1
fvp fvp_trace_1 --trace-dir "$out/trace1"
fvp fvp_plain_2
fvp fvp_trace_2 --trace-dir "$out/trace2"
"$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 --steps 200 --warmup 10 \
  --json "$out/step_2.json" >"$out/step_2.log" 2>&1
echo "train_step_bench: $(grep 'steady state' "$out/step_2.log")"
ls -la "$out"/trace*/
cd "$out" && tar czf exp.tgz *.log *.json trace1 trace2 && rm -rf *.log *.json trace1 trace2 && ls -la exp.tgz
