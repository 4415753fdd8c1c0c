#!/usr/bin/env bash
# Issue 14, compiled: does a fixed GPU decode share feed torch.compile's ResNet-18 better than the adapting
# split? Two rounds; in each, the loop on GPU-resident data, then conveyor-fed (16 threads, as ready) with
# the share adapting and fixed at 0.25, 0.5 and 0.75 (to_device's gpu_share), in an order that reverses in
# round 2.
set -u
root=$PWD
out=${OUT:-/tmp/out}
bash bench/gpu_run.sh data >"$out/data.log" 2>&1
scripts/build_python_on_gpu_machine.sh /tmp/bundle build-python >"$out/pybuild.log" 2>&1 || { echo "pybuild failed"; tail "$out/pybuild.log"; }
source /tmp/bundle/tools/device-env /tmp/bundle/lib
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib64
export CONVEYOR_COMMIT=$(cat .carry/commit)
img=/tmp/data/imagenet-like-5000/train
run() {  # NAME ARGS...
  local name=$1; shift
  timeout 200 python3 bench/peers/torch_train_from_jpeg.py --data $img --modes compile --threads 16 \
    --conveyor-deterministic 0 --conveyor-python "$root/build-python" --json "$out/$name.json" "$@" \
    >"$out/$name.log" 2>&1
  echo "$name: $(grep -E '^\[compile\]' "$out/$name.log" | grep -v 'first step' | head -1)"
}
for round in 1 2; do
  run gpu_r$round --feeds gpu
  shares="adapt 0.25 0.5 0.75"; [ "$round" = 2 ] && shares="0.75 0.5 0.25 adapt"
  for share in $shares; do
    if [ "$share" = adapt ]; then run conveyor_adapt_r$round --feeds conveyor
    else run conveyor_${share}_r$round --feeds conveyor --gpu-share "$share"; fi
  done
done
cd "$out" && tar czf exp.tgz *.log *.json && rm -f *.log *.json
