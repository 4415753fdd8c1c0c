#!/usr/bin/env bash
# Issue 16 with the streamer's look-ahead readers: loose files, local shards streamed, the same shards over
# loopback HTTP, and local shards read at random; 16 threads, 24 shards of 16 MB, the kinds' order
# alternating by round: eight rounds in order (pipeline_throughput's default), then eight as ready.
set -u
out=${OUT:-/tmp/out}
bash bench/gpu_run.sh data >"$out/data.log" 2>&1
source /tmp/bundle/tools/device-env /tmp/bundle/lib
export CONVEYOR_COMMIT=$(cat .carry/commit)
data=/tmp/data/imagenet-like-5000/train
for mode in in-order:1 as-ready:0; do
  name=${mode%%:*} det=${mode##*:}
  rm -rf /tmp/svf-$name
  SHARD_MB=16 ROUNDS=8 KINDS="files shards http random" timeout 290 bash bench/pipeline/shards_vs_files.sh /tmp/bundle/bin \
    "$data" /tmp/svf-$name --threads 16 --batch 256 --size 224 --epochs 4 --seed 7 --deterministic $det >"$out/svf-$name.log" 2>&1
  echo "== $name"; grep -vE "round [0-9]+:" "$out/svf-$name.log" | tail -12
  mkdir -p "$out/$name" && cp /tmp/svf-$name/*.json /tmp/svf-$name/*.log "$out/$name/" 2>/dev/null
done
cd "$out" && tar czf exp.tgz in-order as-ready svf-*.log data.log && rm -rf in-order as-ready svf-*.log
