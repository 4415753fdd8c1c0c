#!/usr/bin/env bash
# Issue 14, compiled: does the loop's stream matter? torch.compile'd ResNet-18 on PyTorch's default stream
# (the legacy stream) and on a side stream (torch.cuda.Stream, --loop-stream side), each fed by conveyor
# (16 threads, as ready, the split adapting) and from GPU-resident data. Three rounds, the order reversed in
# round 2. (The build also carries CONVEYOR_EXP_PRIO, unset here: every stream at the default priority.)
set -u
root=$PWD
out=${OUT:-/tmp/out}
bash bench/gpu_run.sh data >"$out/data.log" 2>&1
scripts/build_python_on_gpu_machine.sh /tmp/bundle build-python >"$out/pybuild.log" 2>&1 || { echo "pybuild failed"; tail "$out/pybuild.log"; }
source /tmp/bundle/tools/device-env /tmp/bundle/lib
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib64
export CONVEYOR_COMMIT=$(cat .carry/commit)
data=/tmp/data/imagenet-like-5000/train
run() {  # NAME ARGS...
  local name=$1; shift
  timeout 150 python3 bench/peers/torch_train_from_jpeg.py --data $data --modes compile --threads 16 \
    --conveyor-deterministic 0 --conveyor-python "$root/build-python" --json "$out/$name.json" "$@" \
    >"$out/$name.log" 2>&1
  echo "$name: $(grep -E '^\[compile\]' "$out/$name.log" | grep -v 'first step' | head -1)"
}
for round in 1 2 3; do
  order="default side"; [ "$round" = 2 ] && order="side default"
  for s in $order; do run gpu_${s}_r$round --feeds gpu --loop-stream $s; run conveyor_${s}_r$round --feeds conveyor --loop-stream $s; done
done
cd "$out" && tar czf exp.tgz *.log *.json && rm -f *.log *.json
