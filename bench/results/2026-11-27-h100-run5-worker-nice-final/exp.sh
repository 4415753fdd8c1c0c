#!/usr/bin/env bash
# Issue 14/20 with PipelineOptions::worker_nice (default 10) against worker_nice 0, in one call.
set -u
root=$PWD
source /tmp/bundle/tools/device-env /tmp/bundle/lib
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib64
export CONVEYOR_COMMIT=$(cat .carry/commit)
out=$OUT/nice; mkdir -p $out
img=/tmp/data/imagenet-like-5000/train
bin=/tmp/bundle/bin
echo "=== torch eager, conveyor (adapting) and gpu feeds: worker_nice 10 (default) vs 0 ($(date -u +%T))"
for round in 1 2 3; do
  order="10 0"; [ $((round % 2)) -eq 0 ] && order="0 10"
  for nice in $order; do
    timeout 150 python3 bench/peers/torch_train_from_jpeg.py --data $img --modes eager --feeds conveyor,gpu \
      --threads 16 --worker-nice $nice --conveyor-deterministic 0 --conveyor-python "$root/build-python" \
      --json $out/torch_n${nice}_r$round.json > $out/torch_n${nice}_r$round.log 2>&1
    python3 - $out/torch_n${nice}_r$round.json "worker_nice $nice round $round" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["results"]["eager"]
c, g = d["conveyor"]["images_per_s"], d["gpu"]["images_per_s"]
print(f"{sys.argv[2]}: conveyor {c:.0f} gpu {g:.0f} ratio {c/g:.3f}", flush=True)
PY
  done
done
echo "=== C++ feed_vs_prefetch prefetch (--pipeline-nice 10 default vs 0) and train_step_bench ($(date -u +%T))"
for round in 1 2; do
  timeout 120 $bin/train_step_bench --model resnet18 --batch 256 --precision bf16 --steps 50 --warmup 5 \
    --json $out/step_$round.json > $out/step_$round.log 2>&1
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('train_step_bench', round(d.get('images_per_s', 0)))" $out/step_$round.json
  for nice in 10 0; do
    timeout 150 $bin/feed_vs_prefetch --data $img --modes prefetch --batch 256 --steps 50 --pipeline-nice $nice \
      --warmup 5 --threads 16 --pipeline-deterministic 0 --json $out/fvp_n${nice}_r$round.json 2>&1 |
      grep -E '^ *prefetch ' | grep -v warm-up | sed "s/^/pipeline-nice $nice round $round: /"
  done
done
echo "=== the issue-14 benchmark at the library's defaults ($(date -u +%T))"
timeout 300 python3 bench/peers/torch_train_from_jpeg.py --data $img --modes eager,compile \
  --feeds dataloader,conveyor,gpu,conveyor-cpu --threads 16 --conveyor-deterministic 0 --conveyor-python "$root/build-python" \
  --json $out/torch_train_from_jpeg.json 2>&1 | tee $out/torch_train_from_jpeg.log | grep -E "^\[|ratio|x " | tail -20
echo "=== done ($(date -u +%T))"
tar czf $OUT/nice.tgz -C $OUT nice
