#!/usr/bin/env bash
# Issue 17 at the current code on two GPUs: data, the NCCL probe, three alternating pairs (1 GPU / 2 processes),
# the losses in fp32 and bf16, then train_step_bench on GPU 0 for the step alone.
set -u
out=${OUT:-/tmp/out}
bash bench/gpu_run.sh data two-gpus-probe two-gpus two-gpus-losses
source /tmp/bundle/tools/device-env /tmp/bundle/lib
mkdir -p "$out/step"
for i in 1 2; do
  /tmp/bundle/bin/train_step_bench --model resnet18 --batch 256 --precision bf16 --steps 300 --warmup 10 \
    --json "$out/step/step_$i.json" >"$out/step/step_$i.log" 2>&1
  echo "step $i: $(grep 'steady state' "$out/step/step_$i.log")"
done
cd "$out" && tar czf step.tgz step && rm -rf step
