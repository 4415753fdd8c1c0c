#!/usr/bin/env bash
# scaling.sh [--gpus N] [--rounds R] [--variant NAME="FLAGS"]...
# ResNet-18 bf16 trained from JPEGs (feed_vs_prefetch's prefetch, batch 256 and 16 pipeline threads per GPU,
# 300 steps) on one GPU against N GPUs data-parallel, one process per GPU (scripts/launch.sh: NVLink
# multicast off), in alternating rounds. Each --variant runs the N processes once more per round with FLAGS added (say --variant cpus="--cpus auto").
# Files: one_R.json, procs_R.rankK.json, procs-NAME_R.rankK.json; every run's log beside
# them. bench/summarize_gpu_scripts.py scaling: each variant's images/s over the round's one GPU, idle per
# GPU (summary.txt).
source "$(dirname "$0")/lib.sh"
bench_options gpus=2 rounds=2 variant+= -- "$@"
bench_begin scaling "$@"
images=$(imagenet_like)
fvp=("$bin/feed_vs_prefetch" --data "$images" --modes prefetch --threads 16 --batch 256 --warmup 10 --steps 300
     --stall-report 30)
declare -A flags=()
sides=(one procs)
for v in "${variant[@]}"; do flags[procs-${v%%=*}]=${v#*=}; sides+=("procs-${v%%=*}"); done

# shellcheck disable=SC2086  # a variant's flags, split
side() {
  local json=$r/$1_$2.json
  case "$1" in
    one) bench_run 180 env CUDA_VISIBLE_DEVICES=0 "${fvp[@]}" --json "$json" ;;
    *) bench_run 180 bash "$root/scripts/launch.sh" "$gpus" "${fvp[@]}" ${flags[$1]:-} --json "$json" ;;
  esac >"$r/$1_$2.log" 2>&1
  echo "$1 round $2: $(grep -hE '^prefetch ' "$r/$1_$2.log" | awk '{printf "%s ", $2}')"
}
alternate "$rounds" side "${sides[@]}"
python3 "$root/bench/summarize_gpu_scripts.py" scaling "$r" | tee "$r/summary.txt"
bench_end
