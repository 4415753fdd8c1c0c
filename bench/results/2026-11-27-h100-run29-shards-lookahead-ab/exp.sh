#!/usr/bin/env bash
# Issue 16, A/B: the shard streamer with look-ahead readers (2 x parallel_shards threads, this commit) against
# the same code with parallel_shards threads (the build before f3efdfc's change: .carry/old), both with the
# loopback server's backlog at 128. Local shards and HTTP, 16 threads, 24 shards of 16 MB; blocks of three
# rounds alternating old, new, old, new; in order, then as ready.
set -u
out=${OUT:-/tmp/out}
bash bench/gpu_run.sh data >"$out/data.log" 2>&1
source /tmp/bundle/tools/device-env /tmp/bundle/lib
export CONVEYOR_COMMIT=$(cat .carry/commit)
data=/tmp/data/imagenet-like-5000/train
mkdir -p /tmp/oldbin && cp /tmp/bundle/bin/make_shards /tmp/oldbin/ && cp .carry/old/pipeline_throughput /tmp/oldbin/
/tmp/bundle/bin/make_shards --input "$data" --output /tmp/ab-shards --shard-size 16 | tail -1
for mode in in-order:1 as-ready:0; do
  name=${mode%%:*} det=${mode##*:}
  for block in old-1 new-1 old-2 new-2; do
    bin=/tmp/bundle/bin; [ "${block%-*}" = old ] && bin=/tmp/oldbin
    dir=/tmp/ab-$name-$block; rm -rf "$dir"; mkdir -p "$dir"; ln -s /tmp/ab-shards "$dir/shards"
    ROUNDS=3 KINDS="shards http" timeout 140 bash bench/pipeline/shards_vs_files.sh "$bin" "$data" "$dir" \
      --threads 16 --batch 256 --size 224 --epochs 4 --seed 7 --deterministic $det >"$out/ab-$name-$block.log" 2>&1
    echo "$name $block: $(grep -E '^http_over_shards|^median img/s' "$out/ab-$name-$block.log" | tr '\n' ' ')"
    mkdir -p "$out/$name-$block" && cp "$dir"/*.json "$dir"/*.log "$out/$name-$block/" 2>/dev/null
  done
done
cd "$out" && tar czf exp.tgz in-order-* as-ready-* ab-*.log data.log && rm -rf in-order-* as-ready-* ab-*.log
