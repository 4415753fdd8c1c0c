#!/usr/bin/env bash
# shards_vs_files.sh [--rounds N] [--kinds "files shards http random"] [--deterministic 0|1] [--shard-mb N]
# The same ImageNet-like photos read by pipeline_throughput (16 threads, RRC 224, batch 256, 4 epochs) as
# loose files, local tar shards (streamed through their index, or read at random) and shards over HTTP on the
# loopback address, in alternating rounds (bench/pipeline/shards_vs_files.sh does the work and writes the
# medians of the rounds' ratios to summary.json). --deterministic 0 takes samples as they are ready.
source "$(dirname "$0")/lib.sh"
bench_options rounds=3 kinds="files shards http random" deterministic=1 shard-mb=64 -- "$@"
bench_begin shards_vs_files "$@"
images=$(imagenet_like)
work=/tmp/shards-vs-files-$shard_mb  # the shards (hundreds of MB) stay out of the results; made once per machine
mkdir -p "$work"
KINDS=$kinds ROUNDS=$rounds SHARD_MB=$shard_mb bench_run 900 bash "$root/bench/pipeline/shards_vs_files.sh" "$bin" "$images" \
  "$work" --threads 16 --batch 256 --size 224 --epochs 4 --seed 7 --deterministic "$deterministic"
cp "$work"/*.json "$work"/*.log "$r/" 2>/dev/null
rm -f "$r/http_server.log"
bench_end
