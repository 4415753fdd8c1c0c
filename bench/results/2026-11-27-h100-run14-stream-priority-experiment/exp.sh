#!/usr/bin/env bash
# Experiment (CONVEYOR_EXP_PRIO, a switch in the build, not in the project): the input's CUDA streams at the
# device's highest priority. 0: both at the default (the project's), 1: nvJPEG decoder's stream, 2: decoder's
# and the feeder's copy/augment stream. Part A: C++ feed_vs_prefetch prefetch beside the ResNet-18 bf16 step
# against train_step_bench, three rounds, order alternating. Part B: torch.compile'd ResNet-18 fed by
# conveyor at 0 and 2, and on GPU-resident data, two rounds.
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
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for round in 1 2 3; do
  "$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 --steps 200 --warmup 10 \
    --json "$out/step_$round.json" >"$out/step_$round.log" 2>&1
  echo "round $round train_step_bench: $(tail -1 "$out/step_$round.log" | cut -c1-120)"
  order="0 1 2"; [ "$round" = 2 ] && order="2 1 0"
  for p in $order; do
    nvidia-smi dmon -s u -d 1 >"$out/dmon_p${p}_r$round.txt" 2>&1 &
    dmon=$!
    CONVEYOR_EXP_PRIO=$p "$bin/feed_vs_prefetch" --data "$data" --modes prefetch --threads 16 --batch 256 \
      --steps 300 --warmup 5 --json "$out/fvp_p${p}_r$round.json" >"$out/fvp_p${p}_r$round.log" 2>&1
    kill $dmon; wait $dmon 2>/dev/null
    echo "round $round prio $p: $(grep -E '^prefetch ' "$out/fvp_p${p}_r$round.log" | head -1 | cut -c1-60) jpg: $(awk '$1==0 && $6>0 {printf "%s ", $6}' "$out/dmon_p${p}_r$round.txt")"
  done
done
run() {  # NAME PRIO ARGS...
  local name=$1 p=$2; shift 2
  CONVEYOR_EXP_PRIO=$p timeout 200 python3 bench/peers/torch_train_from_jpeg.py --data $data --modes compile --threads 16 \
    --conveyor-deterministic 0 --conveyor-python "$root/build-python" --json "$out/$name.json" "$@" \
    >"$out/$name.log" 2>&1
  echo "$name: $(grep -E '^\[compile\]' "$out/$name.log" | grep -v 'first step' | head -1)"
}
for round in 1 2; do
  run gpu_r$round 0 --feeds gpu
  order="0 2"; [ "$round" = 2 ] && order="2 0"
  for p in $order; do run conveyor_p${p}_r$round $p --feeds conveyor; done
done
cd "$out" && tar czf exp.tgz *.txt *.log *.json && rm -f dmon_*.txt *.log *.json
