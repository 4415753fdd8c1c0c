#!/usr/bin/env bash
# pipeline_vs_previous.sh --previous PATH [--rounds N] [--formats "classification segmentation detection"]
#                         [--field-epochs N]
# This build's pipeline_throughput against a previous binary (PATH, carried in the bundle: say
# bin/pipeline_throughput_prev), in alternating pairs, for each format: classification (RRC 224, batch 256,
# 4 epochs), segmentation (RRC 512, batch 32) and detection (RRC 640, batch 32; --field-epochs passes over
# the 5,000 images, default 1), 16 threads, from the first
# batch. A change that must not slow the pipeline is judged by the median of the pairs' ratios
# (bench/summarize_against_previous.py: summary.json).
source "$(dirname "$0")/lib.sh"
bench_options previous=pipeline_throughput_prev rounds=3 formats="classification segmentation detection" field-epochs=1 -- "$@"
bench_begin pipeline_vs_previous "$@"
case "$previous" in /*) ;; bin/*) previous=$bundle/$previous ;; *) previous=$bin/${previous:-pipeline_throughput_prev} ;; esac
[ -x "$previous" ] || { echo "!!! no previous binary at $previous"; echo "no previous binary" >>"$r/failed_runs"; bench_end 1; exit; }
images=$(imagenet_like)
fields=$(fields_set)

side() {  # which ROUND, for every format
  local exe=$bin/pipeline_throughput format options
  [ "$1" = previous ] && exe=$previous
  for format in $formats; do
    case "$format" in
      classification) options=(--data "$images" --batch 256 --size 224 --epochs 4) ;;
      segmentation) options=(--format segmentation --data "$fields" --batch 32 --size 512 --epochs "$field_epochs") ;;
      detection) options=(--format detection --data "$fields/instances.json" --batch 32 --size 640 --epochs "$field_epochs") ;;
      *) echo "!!! unknown format $format"; continue ;;
    esac
    bench_run 180 "$exe" "${options[@]}" --threads 16 --seed 7 --json "$r/${format}_${1}_$2.json" |
      grep -E '^threads 16' | sed "s/^/$format, $1: /"
  done
}
alternate "$rounds" side current previous
python3 "$root/bench/summarize_against_previous.py" "$r" | tee "$r/summary.txt"
bench_end
