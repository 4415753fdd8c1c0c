#!/usr/bin/env bash
# fields_vs_peers.sh [--rounds N] [--formats "segmentation:512 detection:640"]
# Samples with fields against PyTorch's DataLoader with torchvision v2 and tv_tensors (16 workers, both
# antialias settings), in alternating pairs: segmentation (JPEG + PNG mask, RRC 512) and detection (JPEG +
# COCO boxes, RRC 640), flip and distort, batches of 32, 16 threads, one epoch of the fields set that
# make_fields builds over the ImageNet-like photos. The headline's segmentation and detection rows:
# bench/summarize_fields.py writes fields_summary.json.
source "$(dirname "$0")/lib.sh"
bench_options rounds=3 formats="segmentation:512 detection:640" -- "$@"
bench_begin fields_vs_peers "$@"
fields=$(fields_set)

pair() {  # FORMAT:SIZE ROUND: conveyor, then the DataLoader (the pair's order alternates with the rounds)
  local format=${1%%:*} size=${1#*:} round=$2 d
  d=$fields; [ "$format" = detection ] && d=$fields/instances.json
  conveyor() {
    bench_run 180 "$bin/pipeline_throughput" --format "$format" --data "$d" --threads 16 --batch 32 --size "$size" \
      --epochs 1 --seed 7 --json "$r/fields_${format}_${round}_conveyor.json" | grep -E '^threads 16'
  }
  torch() {
    bench_run 300 python3 "$root/bench/peers/torch_fields.py" --format "$format" --data "$d" --workers 16 --batch 32 \
      --size "$size" --epochs 1 --seed 7 --antialias both --json "$r/fields_${format}_${round}_torch.json" \
      | grep -E '^torch|^conveyor'
  }
  if [ $((round % 2)) = 0 ]; then torch; conveyor; else conveyor; torch; fi
}
# shellcheck disable=SC2086
alternate "$rounds" pair $formats
python3 "$root/bench/summarize_fields.py" "$r" | tee "$r/summary.txt"
bench_end
