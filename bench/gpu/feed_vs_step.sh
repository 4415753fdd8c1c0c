#!/usr/bin/env bash
# feed_vs_step.sh [--rounds N] [--steps N] [--threads N] [--variant NAME="FLAGS"]... [--eager-step]
#                 [--prepared NAME:MAKE_SHARDS_FLAGS]
# ResNet-18 bf16, batch 256, trained from JPEGs (feed_vs_prefetch's prefetch: 16 threads, the hybrid split
# adapting, GPU augmentation) against the same step on data already on the GPU (train_step_bench), in
# alternating rounds on GPU 0: the share of the step's own rate the input keeps. Each --variant runs prefetch
# once more per round with FLAGS added (say --variant nopool="--hardware-pool 0"; a variant's own --threads or
# --data replaces the script's; its leading NAME=VALUE words are the run's environment), to measure a lever
# beside the defaults in the same call. Issue 41's levers beside the step: urgent="--step-priority urgent",
# engines_only="--gpu-hybrid 0", decoded_only="--copy-whole-batch 0", fewer_threads="--threads 15" (a core
# left to the step's launching thread). --eager-step adds train_step_bench --no-graph (step_eager: the step
# launched kernel by kernel, as prefetch launches it beside nvJPEG). --prepared reads, in every prefetch run,
# the ImageNet-like set as make_shards prepared it (say q90s320:"--max-side 320 --quality 90"), written out
# as a folder.
# --previous NAME runs prefetch once more per round with a previous build's feed_vs_prefetch (bin/NAME, carried
# in the bundle) and the defaults: side fvp-previous, a change's effect against the binary before it.
# Files: step_R.json, step_eager_R.json, fvp_R.json, fvp-NAME_R.json. The headline's prefetch row
# (bench/summarize_headline.py: entries.json) and every variant's share of the step, against the defaults
# round by round, its compute time per step and GPU-decoded images by nvJPEG path
# (bench/summarize_gpu_scripts.py feed_vs_step: summary.txt).
source "$(dirname "$0")/lib.sh"
bench_options rounds=3 steps=300 threads=16 variant+= eager-step! prepared= previous= -- "$@"
bench_begin feed_vs_step "$@"
images=$(imagenet_like)
[ -z "$prepared" ] || images=$(prepared_folder "$prepared")
declare -A flags=([fvp]="")
sides=(step fvp)
[ "$eager_step" = 0 ] || sides=(step step_eager fvp)
for v in "${variant[@]}"; do flags[fvp-${v%%=*}]=${v#*=}; sides+=("fvp-${v%%=*}"); done
if [ -n "$previous" ]; then
  [ -x "$bin/$previous" ] || { echo "!!! no previous binary at $bin/$previous"; echo "no previous binary" >>"$r/failed_runs"; bench_end 1; exit; }
  flags[fvp-previous]="" && sides+=(fvp-previous)
fi

side() {
  local step=(env CUDA_VISIBLE_DEVICES=0 "$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16
              --steps 200 --warmup 5)
  case "$1" in
    step) bench_run 180 "${step[@]}" --json "$r/step_$2.json" 2>&1 | grep -E '^first step|^steady' ;;
    step_eager) bench_run 180 "${step[@]}" --no-graph --json "$r/step_eager_$2.json" 2>&1 | grep -E '^steady' ;;
    *)
      local exe=$bin/feed_vs_prefetch
      [ "$1" = fvp-previous ] && exe=$bin/$previous
      unless_given "${flags[$1]}" --threads "$threads" --data "$images"
      split_variant "${flags[$1]}"
      bench_run 300 env CUDA_VISIBLE_DEVICES=0 "${variant_env[@]}" "$exe" "${given_defaults[@]}" --modes prefetch \
        --batch 256 --steps "$steps" --warmup 3 --progress 0 "${variant_flags[@]}" --json "$r/$1_$2.json" 2>&1 |
        grep -E '^ *prefetch ' ;;
  esac
}
alternate "$rounds" side "${sides[@]}"
python3 "$root/bench/summarize_headline.py" "$r" --machine "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores" \
  --commit "$CONVEYOR_COMMIT" --out "$r/entries.json"
python3 "$root/bench/summarize_gpu_scripts.py" feed_vs_step "$r" | tee "$r/summary.txt"
bench_end
