#!/usr/bin/env bash
# scaling.sh [--gpus N] [--rounds R] [--threads N] [--steps N] [--variant NAME="FLAGS"]...
#            [--prepared NAME:MAKE_SHARDS_FLAGS] [--resident] [--together] [--gpu-each]
# ResNet-18 bf16 trained from JPEGs (feed_vs_prefetch's prefetch, batch 256 and 16 pipeline threads per GPU,
# 300 steps) on one GPU against N GPUs data-parallel, one process per GPU (scripts/launch.sh: NVLink
# multicast off), in alternating rounds. By default each rank's pipeline runs on its share of the CPUs close
# to its GPU and its batches live on its GPU's NUMA node (issue 41, FeederOptions::host). Each --variant runs
# the N processes once more per round with FLAGS added (a variant's own --threads replaces the script's);
# a variant's leading NAME=VALUE words set the ranks' environment (conn32="CUDA_DEVICE_MAX_CONNECTIONS=32");
# issue 41's baselines: all="--cpus all --memory-near-gpu 0" (wherever the scheduler puts them) and
# even="--cpus auto" (issue 36's even, contiguous shares, whatever the GPU's node). --prepared reads, in every
# run, the ImageNet-like set as make_shards prepared it (say q90s320:"--max-side 320 --quality 90"), written
# out as a folder. --resident trains every side's timed steps on the last warm-up batch, kept on the GPU
# (feed_vs_prefetch --resident): the data-parallel step's own scaling, all-reduce and all, with no input
# (issue 41's ceiling beside the scaling from JPEGs). --together adds a side of N single-GPU processes started
# at once, each training its own GPU alone (world size 1, CUDA_VISIBLE_DEVICES): N pipelines, copies and steps
# on one host without the all-reduce, which separates what the host's shared supply costs from what the
# data-parallel step costs. --gpu-each adds a side of N data-parallel processes that each see only their own
# GPU (launch.sh's processes with CONVEYOR_GPU_EACH=1, as Slurm's --gpus-per-task=1 starts them). Files:
# one_R.json, procs_R.rankK.json, procs-NAME_R.rankK.json, together_R.rankK.json, own-gpu_R.rankK.json; every
# run's log beside them; gpu_places.txt (each GPU's NUMA node and close CPUs). bench/summarize_gpu_scripts.py
# scaling: each variant's images/s over the round's one GPU and against the defaults, idle per GPU, each rank's
# CPUs, batch memory and the GPUs it holds a context on (summary.txt).
source "$(dirname "$0")/lib.sh"
bench_options gpus=2 rounds=2 threads=16 steps=300 variant+= prepared= resident! together! gpu-each! -- "$@"
bench_begin scaling "$@"
images=$(imagenet_like)
[ -z "$prepared" ] || images=$(prepared_folder "$prepared")
gpu_places | tee "$r/gpu_places.txt"
fvp=("$bin/feed_vs_prefetch" --data "$images" --modes prefetch --batch 256 --warmup 10 --steps "$steps"
     --stall-report 30)
[ "$resident" = 1 ] && fvp+=(--resident 1)
declare -A flags=([one]="" [procs]="")
sides=(one procs)
for v in "${variant[@]}"; do flags[procs-${v%%=*}]=${v#*=}; sides+=("procs-${v%%=*}"); done
[ "$together" = 1 ] && { flags[together]=""; sides+=(together); }
[ "$gpu_each" = 1 ] && { flags[own-gpu]=""; sides+=(own-gpu); }

side() {
  local json=$r/$1_$2.json k pids=()
  unless_given "${flags[$1]}" --threads "$threads"
  case "$1" in
    one) bench_run 180 env CUDA_VISIBLE_DEVICES=0 "${fvp[@]}" "${given_defaults[@]}" --json "$json" ;;
    together)  # N lone processes at once, GPU K's writing together_R.rankK.json (as a launcher's ranks would)
      # (waits for these alone: bench_begin's own background jobs never end)
      for ((k = 0; k < gpus; k++)); do
        bench_run 180 env CUDA_VISIBLE_DEVICES=$k "${fvp[@]}" "${given_defaults[@]}" --json "${json%.json}.rank$k.json" &
        pids+=($!)
      done
      wait "${pids[@]}" ;;
    own-gpu) bench_run 180 env CONVEYOR_LAUNCHER=processes CONVEYOR_GPU_EACH=1 bash "$root/scripts/launch.sh" "$gpus" \
         "${fvp[@]}" "${given_defaults[@]}" --json "$json" ;;
    *) split_variant "${flags[$1]}"  # a variant's NAME=VALUE words are the ranks' environment
      bench_run 180 env "${variant_env[@]}" bash "$root/scripts/launch.sh" "$gpus" "${fvp[@]}" "${given_defaults[@]}" \
        "${variant_flags[@]}" --json "$json" ;;
  esac >"$r/$1_$2.log" 2>&1
  echo "$1 round $2: $(grep -hE '^prefetch ' "$r/$1_$2.log" | awk '{printf "%s ", $2}')"
}
alternate "$rounds" side "${sides[@]}"
python3 "$root/bench/summarize_gpu_scripts.py" scaling "$r" | tee "$r/summary.txt"
bench_end
