#!/usr/bin/env bash
# first_batch.sh [--rounds N] [--epochs N] [--threads N] [--variant NAME="FLAGS"]... [--previous NAME] [--no-torch]
# How soon each pipeline gives its first batch, and its rate from there: pipeline_throughput CPU-only (cpu),
# hybrid with the library's defaults (gpu: issue 41's start at once, the CPU decoding every image until
# nvJPEG is ready behind it), hybrid with FLAGS added for each --variant, and PyTorch's DataLoader (torch);
# 16 threads or workers, 4,800 images x 5 epochs a run (--epochs 21: issue 41's 100,000), alternating rounds.
# Issue 41's variants: warmup="--feeder-warmup 1" (DeviceFeeder::warmup up front, issue 36's way) and
# made_first="--start-at-once 0" (feed() makes nvJPEG ready before the first batch), in_constructor=
# "--set-up-behind 0" (the feeder's CUDA context made by its constructor, not behind the first batch's CPU
# decoding); both_first="--open-before-second 0" (both of nvJPEG's decoders made before the split opens,
# not the second behind it); to_gpu="--gpu-decode 0" (CPU-only decoding with batches delivered to the
# GPU); issue 36's: cold="--feeder-warmup 0 --remember-split 0 --hardware-pool 0"; ctx="--context-first 1"
# (the CUDA context made before the clock starts, as a training program has it). A variant's FLAGS may begin
# with program=NAME: that side runs bin/NAME of the bundle (a previous build's pipeline_throughput) with the
# rest, say ctx_before="program=pipeline_throughput_prev --context-first 1". The split's memory starts
# fresh in this call, after one run that only primes it. Files: cpu_R.json, gpu_R.json, gpu-NAME_R.json, torch_R.json;
# bench/summarize_gpu_scripts.py first_batch: time to the first batch, each hybrid side's first batch less
# CPU-only's round by round, the decoder's readiness, the rates, and each side over the DataLoader at its
# faster antialias setting, round by round (summary.txt). --previous NAME runs the hybrid once more per round
# with a previous build's pipeline_throughput (bin/NAME, carried in the bundle) and the defaults: side
# gpu-previous, a change's effect against the binary before it.
source "$(dirname "$0")/lib.sh"
bench_options rounds=3 epochs=5 threads=16 variant+= previous= no-torch! -- "$@"
bench_begin first_batch "$@"
images=$(imagenet_like)
pt=("$bin/pipeline_throughput" --data "$images" --limit 4800 --epochs "$epochs" --threads "$threads" --batch 256
    --size 224 --seed 7 --deterministic 0)
export CONVEYOR_ALGORITHM_CACHE
CONVEYOR_ALGORITHM_CACHE=$(mktemp -d /tmp/conveyor-split.XXXXXX)  # the split's memory, fresh for this call
bench_run 180 "${pt[@]}" --device gpu --json "$r/prime.json" | grep -E '^threads [0-9]+:|^split:'
declare -A flags=([gpu]="")
sides=(cpu gpu)
for v in "${variant[@]}"; do flags[gpu-${v%%=*}]=${v#*=}; sides+=("gpu-${v%%=*}"); done
if [ -n "$previous" ]; then
  [ -x "$bin/$previous" ] || { echo "!!! no previous binary at $bin/$previous"; echo "no previous binary" >>"$r/failed_runs"; bench_end 1; exit; }
  flags[gpu-previous]="" && sides+=(gpu-previous)
fi
[ "$no_torch" = 0 ] && sides+=(torch)

# shellcheck disable=SC2086  # a variant's flags, split
side() {
  case "$1" in
    cpu) bench_run 180 "${pt[@]}" --json "$r/cpu_$2.json" | grep -E '^threads [0-9]+:' ;;
    torch) bench_run 300 python3 "$root/bench/peers/torch_dataloader.py" --data "$images" --limit 4800 \
             --epochs "$epochs" --workers "$threads" --batch 256 --size 224 --seed 7 --antialias both \
             --json "$r/torch_$2.json" | grep -E '^torch DataLoader' ;;
    gpu-previous) bench_run 180 "$bin/$previous" "${pt[@]:1}" --device gpu --json "$r/$1_$2.json" |
                    grep -E '^threads [0-9]+:|^split:' ;;
    *) local program=pipeline_throughput words=${flags[$1]}
       # A variant's leading program=NAME runs another build's pipeline_throughput (bin/NAME in the bundle).
       if [[ $words == program=* ]]; then read -r program words <<<"$words"; program=${program#program=}; fi
       bench_run 180 "$bin/$program" "${pt[@]:1}" --device gpu $words --json "$r/$1_$2.json" |
         grep -E '^threads [0-9]+:|^split:' ;;
  esac
}
alternate "$rounds" side "${sides[@]}"
python3 "$root/bench/summarize_gpu_scripts.py" first_batch "$r" | tee "$r/summary.txt"
bench_end
