#!/usr/bin/env bash
# Issue 14 at the library's defaults: passes of the benchmark, PASSES="MODE:N ...".
set -u
root=$PWD
source /tmp/bundle/tools/device-env /tmp/bundle/lib
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib64
export CONVEYOR_COMMIT=$(cat .carry/commit)
out=$OUT/passes; mkdir -p $out
img=/tmp/data/imagenet-like-5000/train
for pass in ${PASSES:-eager:2 eager:3 compile:2}; do
  mode=${pass%%:*} n=${pass##*:}
  echo "=== $mode pass $n ($(date -u +%T))"
  timeout 280 python3 bench/peers/torch_train_from_jpeg.py --data $img --modes $mode \
    --feeds dataloader,conveyor,gpu --threads 16 --conveyor-deterministic 0 --conveyor-python "$root/build-python" \
    --json $out/torch_${mode}_$n.json > $out/torch_${mode}_$n.log 2>&1
  grep -E "^\[" $out/torch_${mode}_$n.log | grep -v "first step"
done
echo "=== done ($(date -u +%T))"
tar czf $OUT/passes.tgz -C $OUT passes
