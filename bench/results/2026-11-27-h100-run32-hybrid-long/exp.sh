#!/usr/bin/env bash
# Issue 20's 6x at 16 threads with three times the images per run (60,000: 12 epochs of the 5,000), so
# that the steady window after the warm-up batches is several seconds long: pipeline_throughput CPU-only
# and hybrid (nvJPEG + GPU augmentation, split adapting), and the DataLoader (16 workers, antialias on and
# off), three rounds, the order reversed in round 2. --deterministic 0 on both conveyor sides, as in
# bench/gpu_run.sh hybrid-adaptive.
set -u
out=${OUT:-/tmp/out}
w=$out/long && mkdir -p "$w"
echo "=== machine ($(date -u +%H:%M:%S))"; nvidia-smi --query-gpu=name --format=csv,noheader; nproc
OUT=$out/prep bash bench/gpu_run.sh data >"$w/data.log" 2>&1
source /tmp/bundle/tools/device-env /tmp/bundle/lib
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib64
export CONVEYOR_COMMIT=$(cat .carry/commit)
bin=/tmp/bundle/bin
common=(--data /tmp/data/imagenet-like-5000/train --batch 256 --size 224 --epochs 12 --seed 7)
cpu() { timeout 120 "$bin/pipeline_throughput" "${common[@]}" --deterministic 0 --threads 16 --json "$w/cpu_$1.json" 2>&1 | grep -E '^threads 16:' | sed "s/^/cpu $1: /"; }
gpu() { timeout 120 "$bin/pipeline_throughput" "${common[@]}" --deterministic 0 --threads 16 --device gpu --json "$w/gpu_$1.json" 2>&1 | grep -E '^threads 16:|^device:' | sed "s/^/gpu $1: /"; }
torch() { timeout 200 python3 bench/peers/torch_dataloader.py "${common[@]}" --workers 16 --antialias both --json "$w/torch_$1.json" 2>&1 | grep -E '^torch DataLoader' | sed "s/^/torch $1: /"; }
for round in 1 2 3; do
  echo "=== round $round ($(date -u +%H:%M:%S))"
  if [ "$round" = 2 ]; then gpu $round; cpu $round; torch $round; else torch $round; cpu $round; gpu $round; fi
done
echo "=== end ($(date -u +%H:%M:%S))"
cd "$out" && rm -rf prep && tar czf long.tgz long && rm -rf long
