#!/usr/bin/env bash
# ranks_per_host.sh BIN DATA OUT — issue 41, "every GPU of a host": one process per GPU on every GPU of this
# host (scripts/launch.sh) against one GPU alone, feed_vs_prefetch's prefetch (ResNet-18 bf16, batch 256 per
# GPU, the host's cores divided evenly: THREADS per rank, the one-GPU run too), alternating rounds. Variants:
#   one        one process on GPU 0 (CUDA_VISIBLE_DEVICES=0), with THREADS threads
#   ranks      N processes, the defaults: each rank's pipeline on its share of the CPUs close to its GPU,
#              its batches on its GPU's NUMA node (FeederOptions::host)
#   ranks_all  N processes, --cpus all --memory-near-gpu 0: wherever the scheduler puts them (before issue 41)
#   ranks_even N processes, --cpus auto: issue 36's even, contiguous shares, whatever the GPU's node
# OUT/<variant>_<round>[.rankR].json each (every rank writes its own: its images/s, its GPU's idle, compute
# and copy times per step, its CPUs and batch memory); OUT/summary.json from summarize_levers.py ranks: the
# job's images/s (the ranks' sum) over the round's one GPU, and idle per GPU. Environment: GPUS (every GPU
# nvidia-smi lists), ROUNDS (2), STEPS (300), THREADS (cores / GPUS), RANKS_VARIANTS. Expected time: about 100 s
# for two rounds on 2 or 4 H200s (each run ~10-15 s with NCCL's set-up).
set -uo pipefail
bin=$1 data=$2 out=$3
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
need "$bin" feed_vs_prefetch || exit 2
mkdir -p "$out"
levers_failed=$out/failed_runs
gpus=${GPUS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
[ "$gpus" -ge 2 ] || { echo "ranks_per_host.sh: $gpus GPU(s) here; it needs two or more" >&2; exit 2; }
rounds=${ROUNDS:-2}
steps=${STEPS:-300}
threads=${THREADS:-$(($(nproc) / gpus))}
read -r -a variants <<<"${RANKS_VARIANTS:-one ranks ranks_all ranks_even}"
export NCCL_NVLS_ENABLE=0  # launch.sh sets it for ranks; the one-GPU run has no collective, but alike
fvp=("$bin/feed_vs_prefetch" --data "$data" --modes prefetch --threads "$threads" --batch 256 --steps "$steps"
     --warmup 10 --progress 0 --stall-report 30)
variant() {  # NAME ROUND
  local name=$1 round=$2 json=$out/$1_$2.json
  case $name in
    one) limited 150 "$out/${name}_$round.log" env CUDA_VISIBLE_DEVICES=0 "${fvp[@]}" --json "$json" ;;
    ranks) limited 200 "$out/${name}_$round.log" bash "$levers_root/scripts/launch.sh" "$gpus" "${fvp[@]}" \
             --json "$json" ;;
    ranks_all) limited 200 "$out/${name}_$round.log" bash "$levers_root/scripts/launch.sh" "$gpus" "${fvp[@]}" \
                 --cpus all --memory-near-gpu 0 --json "$json" ;;
    ranks_even) limited 200 "$out/${name}_$round.log" bash "$levers_root/scripts/launch.sh" "$gpus" "${fvp[@]}" \
                  --cpus auto --json "$json" ;;
    *) echo "unknown variant $name" >&2; return ;;
  esac
  echo "$name round $round: $(grep -hE '^prefetch ' "$out/${name}_$round.log" | awk '{printf "%s ", $2}')"
}
for round in $(seq "$rounds"); do
  for v in $(in_order "$round" "${variants[@]}"); do variant "$v" "$round"; done
done
python3 "$levers_root/bench/levers/summarize_levers.py" ranks "$out" --gpus "$gpus" | tee "$out/summary.txt"
