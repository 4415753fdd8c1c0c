#!/usr/bin/env bash
# prepared_data.sh BIN DATA OUT — issue 41, "prepared data, measured": make_shards prepares DATA (longer side
# MAX_SIDE, JPEG quality QUALITY: FFCV's way of making decoding cheaper once), timed, and the same prepared
# files are read by conveyor and by PyTorch's DataLoader. Alternating rounds; what runs depends on the GPUs:
# one GPU (or GPUS=1):
#   step           train_step_bench ResNet-18 bf16 (its CUDA graph: the peer of prefetch's share)
#   fvp_prepared   feed_vs_prefetch prefetch on the prepared images (written out as a folder, byte for byte)
#   fvp_original   the same on DATA (not in the default: step_beside_decoding.sh's base is that run;
#                  PREPARED_VARIANTS="step fvp_prepared fvp_original cpu_prepared torch_prepared" adds it)
#   cpu_prepared   pipeline_throughput CPU-only on the prepared shards (read at random), >= MIN_IMAGES images
#   torch_prepared the DataLoader (16 workers, torchvision.io + v2, antialias on and off) on the same shards,
#                  >= TORCH_IMAGES images a setting
# two GPUs or more (GPUS=N):
#   one_prepared   feed_vs_prefetch prefetch on GPU 0 alone, THREADS (cores / N) threads
#   ranks_prepared one process per GPU (scripts/launch.sh N), the defaults (each rank near its GPU)
# OUT/<variant>_<round>[.rankR].json, OUT/make_shards.log and OUT/index.json (sizes, seconds); OUT/summary.json
# from summarize_levers.py prepared. Environment: MAX_SIDE (320), QUALITY (90), ROUNDS (2), STEPS (200),
# MIN_IMAGES (100000), TORCH_IMAGES (40000: about 10 s a setting at the DataLoader's 4k img/s), THREADS, GPUS,
# PREPARED_VARIANTS. Expected time on H200s: about 90 s on one GPU (200 steps), 55 s on two or four
# (estimates from earlier calls' rates, not measured).
set -uo pipefail
bin=$1 data=$2 out=$3
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
need "$bin" make_shards feed_vs_prefetch || exit 2
mkdir -p "$out"
levers_failed=$out/failed_runs
gpus=${GPUS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
[ "$gpus" -ge 1 ] || gpus=1
rounds=${ROUNDS:-2}
steps=${STEPS:-200}
work=$(mktemp -d /tmp/levers-prepared.XXXXXX)
trap 'rm -rf "$work"' EXIT
prepared=$work/prepared folder=$work/prepared-folder
start=$(date +%s%N)
limited 300 "$out/make_shards.log" "$bin/make_shards" --input "$data" --output "$prepared" --shard-size 64 \
  --max-side "${MAX_SIDE:-320}" --quality "${QUALITY:-90}" || exit 1
echo "make_shards: $((($(date +%s%N) - start) / 1000000)) ms; $(du -sh "$prepared" | cut -f1) prepared from $(du -sh "$data" | cut -f1)"
cp "$prepared/shards.json" "$out/index.json"
python3 "$levers_root/bench/levers/shards_to_folder.py" "$prepared/shards.json" "$folder" || exit 1
images=$(jpeg_count "$folder")
fvp_common=(--modes prefetch --batch 256 --steps "$steps" --warmup 10 --progress 0 --stall-report 30)
if [ "$gpus" -eq 1 ]; then
  threads=${THREADS:-$(nproc)}
  read -r -a variants <<<"${PREPARED_VARIANTS:-step fvp_prepared cpu_prepared torch_prepared}"
else
  threads=${THREADS:-$(($(nproc) / gpus))}
  read -r -a variants <<<"${PREPARED_VARIANTS:-one_prepared ranks_prepared}"
  export NCCL_NVLS_ENABLE=0
fi
fvp=("$bin/feed_vs_prefetch" "${fvp_common[@]}" --threads "$threads")
variant() {  # NAME ROUND
  local name=$1 round=$2 log=$out/$1_$2.log json=$out/$1_$2.json
  case $name in
    step) limited 120 "$log" "$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 \
            --steps 200 --warmup 10 --json "$json" ;;
    fvp_prepared) limited 150 "$log" "${fvp[@]}" --data "$folder" --json "$json" ;;
    fvp_original) limited 150 "$log" "${fvp[@]}" --data "$data" --json "$json" ;;
    cpu_prepared) limited 150 "$log" "$bin/pipeline_throughput" --data "$prepared/shards.json" \
                    --shard-random-access 1 --epochs "$(epochs_for "$images" "${MIN_IMAGES:-100000}")" \
                    --threads "$threads" --batch 256 --size 224 --seed 7 --deterministic 0 --json "$json" ;;
    torch_prepared) limited 240 "$log" python3 "$levers_root/bench/peers/torch_dataloader.py" \
                      --data "$prepared/shards.json" --epochs "$(epochs_for "$images" "${TORCH_IMAGES:-40000}")" \
                      --workers 16 --batch 256 --size 224 --seed 7 --antialias both --json "$json" ;;
    one_prepared) limited 150 "$log" env CUDA_VISIBLE_DEVICES=0 "${fvp[@]}" --data "$folder" --json "$json" ;;
    ranks_prepared) limited 200 "$log" bash "$levers_root/scripts/launch.sh" "$gpus" "${fvp[@]}" \
                      --data "$folder" --json "$json" ;;
  esac
  echo "$name round $round: $(grep -hE '^prefetch |^threads |^torch DataLoader|^steady' "$log" | head -"$gpus" | cut -c1-150 | tr '\n' ' ')"
}
for round in $(seq "$rounds"); do
  for v in $(in_order "$round" "${variants[@]}"); do variant "$v" "$round"; done
done
python3 "$levers_root/bench/levers/summarize_levers.py" prepared "$out" --gpus "$gpus" | tee "$out/summary.txt"
