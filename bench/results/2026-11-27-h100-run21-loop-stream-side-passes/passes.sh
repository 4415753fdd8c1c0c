#!/usr/bin/env bash
# Issue 14's benchmark, both modes and all three feeds per pass, with the loop on PyTorch's default stream
# or on a side stream: PASSES="STREAM:N ..." (STREAM: default or side). SETUP=1 first makes the data and
# the Python module.
set -u
root=$PWD
if [ "${SETUP:-0}" = 1 ]; then
  bash bench/gpu_run.sh data >"$OUT/data.log" 2>&1
  scripts/build_python_on_gpu_machine.sh /tmp/bundle build-python >"$OUT/pybuild.log" 2>&1 || { echo "pybuild failed"; tail "$OUT/pybuild.log"; }
fi
source /tmp/bundle/tools/device-env /tmp/bundle/lib
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib64
export CONVEYOR_COMMIT=$(cat .carry/commit)
out=$OUT/passes; mkdir -p $out
img=/tmp/data/imagenet-like-5000/train
for pass in ${PASSES:-side:1 default:1}; do
  stream=${pass%%:*} n=${pass##*:}
  echo "=== $stream pass $n ($(date -u +%T))"
  timeout 200 python3 bench/peers/torch_train_from_jpeg.py --data $img --modes eager,compile \
    --feeds dataloader,conveyor,gpu --threads 16 --conveyor-deterministic 0 --conveyor-python "$root/build-python" \
    --loop-stream $stream --json $out/torch_${stream}_$n.json > $out/torch_${stream}_$n.log 2>&1
  grep -E "^\[" $out/torch_${stream}_$n.log | grep -v "first step"
  tail -3 $out/torch_${stream}_$n.log
done
echo "=== done ($(date -u +%T))"
tar czf $OUT/passes.tgz -C $OUT passes
