#!/usr/bin/env bash
# prefetch_timeline.sh [--steps N] [--flags "FEED_VS_PREFETCH_FLAGS"]
# Where the GPU's time goes while feed_vs_prefetch's prefetch trains ResNet-18 from JPEGs (16 threads, batch
# 256), under Nsight Systems when the machine has it: the summaries of the GPU kernels, the CUDA API calls
# and the memory copies as CSV (the report itself is too large to keep), and the run's own JSON.
source "$(dirname "$0")/lib.sh"
bench_options steps=30 flags= -- "$@"
bench_begin prefetch_timeline "$@"
images=$(imagenet_like)
nsys=$(find_nsys)
if [ -n "$nsys" ]; then
  # shellcheck disable=SC2086  # the flags, split
  nsys_capture "$nsys" prefetch "$bin/feed_vs_prefetch" --data "$images" --modes prefetch --threads 16 \
    --batch 256 --steps "$steps" --warmup 5 $flags --json "$r/prefetch.json"
  grep -E '^ *prefetch ' "$r/prefetch.log" | grep -v warm-up
  rm -f "$r/prefetch.sqlite"
  for f in "$r"/prefetch_*.csv; do echo "--- $f"; head -12 "$f" | cut -c1-220; done
fi
bench_end
