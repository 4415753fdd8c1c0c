#!/usr/bin/env bash
# prefetch_timeline.sh [--steps N] [--flags "FEED_VS_PREFETCH_FLAGS"]
# Where the GPU's time goes while feed_vs_prefetch's prefetch trains ResNet-18 from JPEGs (16 threads, batch
# 256), under Nsight Systems when the machine has it: the summaries of the GPU kernels, the CUDA API calls
# and the memory copies as CSV (the report itself is too large to keep), and the run's own JSON.
source "$(dirname "$0")/lib.sh"
bench_options steps=30 flags= -- "$@"
bench_begin prefetch_timeline "$@"
images=$(imagenet_like)
nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
if [ -z "$nsys" ]; then
  echo "!!! no nsys on this machine"; echo "no nsys" >>"$r/failed_runs"
else
  # shellcheck disable=SC2086  # the flags, split
  bench_run 300 "$nsys" profile -t cuda,nvtx,osrt -o "$r/prefetch" --force-overwrite true "$bin/feed_vs_prefetch" \
    --data "$images" --modes prefetch --threads 16 --batch 256 --steps "$steps" --warmup 5 $flags \
    --json "$r/prefetch.json" 2>&1 | grep -E '^ *prefetch ' | grep -v warm-up
  bench_run 300 "$nsys" stats --report cuda_gpu_kern_sum,cuda_api_sum,cuda_gpu_mem_time_sum --format csv \
    -o "$r/prefetch" "$r/prefetch.nsys-rep" >/dev/null 2>&1
  rm -f "$r/prefetch.nsys-rep" "$r/prefetch.sqlite"
  for f in "$r"/prefetch_*.csv; do echo "--- $f"; head -12 "$f" | cut -c1-220; done
fi
bench_end
