#!/usr/bin/env bash
# Issue 20 (and 14): does CUDA_DEVICE_MAX_CONNECTIONS, the number of hardware work queues CUDA spreads
# streams over (8 by default), change how nvJPEG's decoding and the step share the GPU? Part A: C++
# feed_vs_prefetch prefetch at 8 and 32 beside train_step_bench, three rounds, order alternating. Part B:
# torch.compile'd ResNet-18 on PyTorch's default stream fed by conveyor at 8 and 32, two rounds.
set -u
root=$PWD
out=${OUT:-/tmp/out}
bash bench/gpu_run.sh data >"$out/data.log" 2>&1
scripts/build_python_on_gpu_machine.sh /tmp/bundle build-python >"$out/pybuild.log" 2>&1 || { echo "pybuild failed"; tail "$out/pybuild.log"; }
source /tmp/bundle/tools/device-env /tmp/bundle/lib
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib64
export CONVEYOR_COMMIT=$(cat .carry/commit)
bin=/tmp/bundle/bin
data=/tmp/data/imagenet-like-5000/train
for round in 1 2 3; do
  "$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 --steps 200 --warmup 10 \
    --json "$out/step_$round.json" >"$out/step_$round.log" 2>&1
  echo "round $round train_step_bench: $(grep 'steady state' "$out/step_$round.log")"
  order="8 32"; [ "$round" = 2 ] && order="32 8"
  for c in $order; do
    CUDA_DEVICE_MAX_CONNECTIONS=$c "$bin/feed_vs_prefetch" --data "$data" --modes prefetch --threads 16 --batch 256 \
      --steps 300 --warmup 5 --json "$out/fvp_c${c}_r$round.json" >"$out/fvp_c${c}_r$round.log" 2>&1
    echo "round $round connections $c: $(grep -E '^prefetch ' "$out/fvp_c${c}_r$round.log" | head -1)"
  done
done
run() {  # NAME CONNECTIONS ARGS...
  local name=$1 c=$2; shift 2
  CUDA_DEVICE_MAX_CONNECTIONS=$c timeout 150 python3 bench/peers/torch_train_from_jpeg.py --data $data --modes compile \
    --threads 16 --conveyor-deterministic 0 --conveyor-python "$root/build-python" --loop-stream default \
    --json "$out/$name.json" "$@" >"$out/$name.log" 2>&1
  echo "$name: $(grep -E '^\[compile\]' "$out/$name.log" | grep -v 'first step' | head -1)"
}
for round in 1 2; do
  run gpu_c8_r$round 8 --feeds gpu
  order="8 32"; [ "$round" = 2 ] && order="32 8"
  for c in $order; do run conveyor_c${c}_r$round $c --feeds conveyor; done
done
cd "$out" && tar czf exp.tgz *.log *.json && rm -f *.log *.json
