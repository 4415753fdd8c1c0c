#!/usr/bin/env bash
# Issue 20: does the pipeline's nice value explain the hybrid's gain since 2026-11-26? pipeline_throughput
# hybrid (nvJPEG + GPU augmentation, split adapting, 16 threads, 60,000 images) with the workers at the
# default nice 10 and at 0 (--worker-nice 0), alternating, four pairs, the order reversed in every second.
set -u
out=${OUT:-/tmp/out}
w=$out/nice && mkdir -p "$w"
echo "=== machine ($(date -u +%H:%M:%S))"; nvidia-smi --query-gpu=name --format=csv,noheader; nproc
OUT=$out/prep bash bench/gpu_run.sh data >"$w/data.log" 2>&1
source /tmp/bundle/tools/device-env /tmp/bundle/lib
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib64
export CONVEYOR_COMMIT=$(cat .carry/commit)
bin=/tmp/bundle/bin
common=(--data /tmp/data/imagenet-like-5000/train --batch 256 --size 224 --epochs 12 --seed 7 --deterministic 0 --threads 16 --device gpu)
gpu() {  # NAME FLAGS...
  local name=$1; shift
  timeout 120 "$bin/pipeline_throughput" "${common[@]}" "$@" --json "$w/$name.json" 2>&1 | grep -E '^threads 16:|^device:' | sed "s/^/$name: /"
}
for i in 1 2 3 4; do
  if [ $((i % 2)) = 0 ]; then gpu nice0_$i --worker-nice 0; gpu nice10_$i; else gpu nice10_$i; gpu nice0_$i --worker-nice 0; fi
done
echo "=== end ($(date -u +%H:%M:%S))"
cd "$out" && rm -rf prep && tar czf nice.tgz nice && rm -rf nice
