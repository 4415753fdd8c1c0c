#!/usr/bin/env bash
# feed_vs_step.sh [--rounds N] [--steps N] [--variant NAME="FLAGS"]...
# ResNet-18 bf16, batch 256, trained from JPEGs (feed_vs_prefetch's prefetch: 16 threads, the hybrid split
# adapting, GPU augmentation) against the same step on data already on the GPU (train_step_bench), in
# alternating rounds on GPU 0: the share of the step's own rate the input keeps. Each --variant runs prefetch
# once more per round with FLAGS added (say --variant nopool="--hardware-pool 0"), to measure a lever beside
# the defaults in the same call. Files: step_R.json, fvp_R.json, fvp-NAME_R.json. The headline's prefetch row
# (bench/summarize_headline.py: entries.json) and every variant's share of the step
# (bench/summarize_gpu_scripts.py feed_vs_step: summary.txt).
source "$(dirname "$0")/lib.sh"
bench_options rounds=3 steps=300 variant+= -- "$@"
bench_begin feed_vs_step "$@"
images=$(imagenet_like)
declare -A flags=([fvp]="")
sides=(step fvp)
for v in "${variant[@]}"; do flags[fvp-${v%%=*}]=${v#*=}; sides+=("fvp-${v%%=*}"); done

side() {
  if [ "$1" = step ]; then
    bench_run 180 env CUDA_VISIBLE_DEVICES=0 "$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 \
      --steps 200 --warmup 5 --json "$r/step_$2.json" 2>&1 | grep -E '^first step|^steady'
  else
    # shellcheck disable=SC2086  # the variant's flags, split
    bench_run 300 env CUDA_VISIBLE_DEVICES=0 "$bin/feed_vs_prefetch" --data "$images" --modes prefetch --threads 16 \
      --batch 256 --steps "$steps" --warmup 3 --progress 0 ${flags[$1]} --json "$r/$1_$2.json" 2>&1 | grep -E '^ *prefetch '
  fi
}
alternate "$rounds" side "${sides[@]}"
python3 "$root/bench/summarize_headline.py" "$r" --machine "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores" \
  --commit "$CONVEYOR_COMMIT" --out "$r/entries.json"
python3 "$root/bench/summarize_gpu_scripts.py" feed_vs_step "$r" | tee "$r/summary.txt"
bench_end
