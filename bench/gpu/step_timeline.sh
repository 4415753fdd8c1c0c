#!/usr/bin/env bash
# step_timeline.sh [--steps N] [--threads N] [--flags "FEED_VS_PREFETCH_FLAGS"] [--cupti] [--gpus N]
# What the ResNet-18 step's kernels meet on the GPU beside the hybrid feeder (issue 41, "the GPU's share
# beside the step"): timelines of feed_vs_prefetch's prefetch (16 threads, batch 256, the defaults or with
# FLAGS added) and of the step alone, launched kernel by kernel as prefetch launches it (train_step_bench
# --no-graph). With Nsight Systems where the machine has it: each capture's GPU kernel, CUDA API and
# memory-copy summaries as CSV (beside_*.csv, alone_*.csv; the reports, hundreds of MB, deleted). Where nsys
# is missing or --cupti is given, bench/tools/cupti_timeline records the kernels and copies through CUPTI
# instead (beside.tsv.gz, alone.tsv.gz kept). Either way bench/nsys_overlap.py writes nsys_overlap.json and
# summary.txt: the share of the step's busy time shared with the feeder's kernels, its idle share, which of
# its kernels slow beside the feeder, and per step (cut at sgd_kernel) the period, the kernel time and the
# gaps between the step's kernels by what else ran in them. Every step of each capture is in it (no warm-up
# steps): feed_vs_prefetch also runs the trainer's and the feeder's warm-up, train_step_bench its first step.
# --gpus N (N > 1) captures feed_vs_prefetch data-parallel on N GPUs, one process each (scripts/launch.sh),
# through CUPTI, each rank its own timeline (beside.rankK.tsv.gz) and summary (nsys_overlap.rankK.json): what
# a rank's GPU does while the ranks' steps wait for each other (the all-reduce's kernels among the streams).
source "$(dirname "$0")/lib.sh"
bench_options steps=60 threads=16 flags= cupti! gpus=1 -- "$@"
bench_begin step_timeline "$@"
images=$(imagenet_like)
beside=("$bin/feed_vs_prefetch" --data "$images" --modes prefetch --threads "$threads" --batch 256 --steps "$steps"
        --warmup 0 --progress 0)
alone=("$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 --steps "$steps" --warmup 0 --no-graph)
# capture NAME COMMAND...: COMMAND's timeline as $r/NAME.$ext, by whichever recorder this machine has.
nsys='' library='' ext=''
[ "$cupti" = 1 ] || [ "$gpus" -gt 1 ] || nsys=$(find_nsys --quiet)
if [ -n "$nsys" ]; then
  capture() { nsys_capture "$nsys" "$@"; } && ext=sqlite
else
  library=$(cupti_library)
  [ -z "$library" ] || { capture() { cupti_capture "$library" "$@"; } && ext=tsv; }
fi
if [ -n "$ext" ] && [ "$gpus" -gt 1 ]; then
  # shellcheck disable=SC2086  # the flags, split
  capture 'beside.rank%r' bash "$root/scripts/launch.sh" "$gpus" "${beside[@]}" $flags --json "$r/beside.json"
  capture alone env CUDA_VISIBLE_DEVICES=0 "${alone[@]}" --json "$r/alone.json"
  for ((k = 0; k < gpus; k++)); do
    echo "--- rank $k"
    python3 "$root/bench/nsys_overlap.py" "$r/beside.rank$k.tsv" --alone "$r/alone.tsv" --steps "$steps" \
      --step-marker sgd_kernel --json "$r/nsys_overlap.rank$k.json" | tee -a "$r/summary.txt"
    gzip -f "$r/beside.rank$k.tsv"
  done
  gzip -f "$r/alone.tsv"
elif [ -n "$ext" ]; then
  # shellcheck disable=SC2086  # the flags, split
  capture beside env CUDA_VISIBLE_DEVICES=0 "${beside[@]}" $flags --json "$r/beside.json"
  capture alone env CUDA_VISIBLE_DEVICES=0 "${alone[@]}" --json "$r/alone.json"
  python3 "$root/bench/nsys_overlap.py" "$r/beside.$ext" --alone "$r/alone.$ext" --steps "$steps" \
    --step-marker sgd_kernel --json "$r/nsys_overlap.json" | tee "$r/summary.txt"
  if [ "$ext" = tsv ]; then
    gzip -f "$r/beside.tsv" "$r/alone.tsv"
  else
    rm -f "$r/beside.sqlite" "$r/alone.sqlite"
    for f in "$r"/*.csv; do [ -f "$f" ] && { echo "--- $(basename "$f")"; head -8 "$f" | cut -c1-200; }; done
  fi
fi
bench_end
