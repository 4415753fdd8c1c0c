#!/usr/bin/env bash
# step_timeline.sh [--steps N] [--threads N] [--flags "FEED_VS_PREFETCH_FLAGS"]
# What the ResNet-18 step's kernels meet on the GPU beside the hybrid feeder (issue 41, "the GPU's share
# beside the step"): Nsight Systems captures of feed_vs_prefetch's prefetch (16 threads, batch 256, the
# defaults or with FLAGS added) and of the step alone, launched kernel by kernel as prefetch launches it
# (train_step_bench --no-graph), when the machine has nsys. Kept: each capture's GPU kernel, CUDA API and
# memory-copy summaries as CSV (beside_*.csv, alone_*.csv), the runs' JSON, and nsys_overlap.json
# (bench/nsys_overlap.py: the share of the step's busy time shared with the feeder's kernels, its idle share,
# and which of its kernels slow beside the feeder; summary.txt). The reports themselves (hundreds of MB) are
# deleted. Every step of each capture is in it (no warm-up steps): feed_vs_prefetch also runs the trainer's
# and the feeder's warm-up, train_step_bench its first step.
source "$(dirname "$0")/lib.sh"
bench_options steps=60 threads=16 flags= -- "$@"
bench_begin step_timeline "$@"
images=$(imagenet_like)
nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
if [ -z "$nsys" ]; then
  echo "!!! no nsys on this machine"; echo "no nsys" >>"$r/failed_runs"
else
  capture() {  # NAME COMMAND...: the capture, its CSV summaries and its SQLite export, the report deleted
    local name=$1
    shift
    bench_run 300 "$nsys" profile -t cuda --cpuctxsw=none -s none -o "$r/$name" --force-overwrite true "$@" \
      >"$r/$name.log" 2>&1
    bench_run 300 "$nsys" stats --report cuda_gpu_kern_sum,cuda_api_sum,cuda_gpu_mem_time_sum --format csv \
      -o "$r/$name" "$r/$name.nsys-rep" >/dev/null 2>&1
    [ -f "$r/$name.sqlite" ] ||
      bench_run 300 "$nsys" export --type sqlite -o "$r/$name.sqlite" "$r/$name.nsys-rep" >/dev/null 2>&1
    rm -f "$r/$name.nsys-rep"
  }
  # shellcheck disable=SC2086  # the flags, split
  capture beside env CUDA_VISIBLE_DEVICES=0 "$bin/feed_vs_prefetch" --data "$images" --modes prefetch \
    --threads "$threads" --batch 256 --steps "$steps" --warmup 0 --progress 0 $flags --json "$r/beside.json"
  capture alone env CUDA_VISIBLE_DEVICES=0 "$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 \
    --steps "$steps" --warmup 0 --no-graph --json "$r/alone.json"
  python3 "$root/bench/nsys_overlap.py" "$r/beside.sqlite" --alone "$r/alone.sqlite" --steps "$steps" \
    --json "$r/nsys_overlap.json" | tee "$r/summary.txt"
  rm -f "$r/beside.sqlite" "$r/alone.sqlite"
  for f in "$r"/*.csv; do [ -f "$f" ] && { echo "--- $(basename "$f")"; head -8 "$f" | cut -c1-200; }; done
fi
bench_end
