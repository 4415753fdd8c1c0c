#!/usr/bin/env bash
# gpu_decode_peer.sh BIN DATA OUT — issue 41, "peers a skeptic accepts": conveyor's hybrid pipeline
# (pipeline_throughput --device gpu, the defaults, every core) against torchvision decoding and augmenting on
# the GPU as a practised user writes it (bench/peers/torchvision_gpu_decode.py, variant PEER_VARIANTS: batched
# decode, two streams, flip and jitter batched), each side at least MIN_IMAGES images, counted from its
# first batch with the time to it apart, in alternating rounds. OUT/{hybrid,tvgpu}_<round>.json;
# OUT/summary.json from summarize_levers.py peer. Environment: ROUNDS (2), MIN_IMAGES (100000), PEER_VARIANTS
# (sample; "sample,image" adds the per-image v2 variant, about a minute more), WORKERS (8: the peer's file
# readers). Expected time on an H200: about 60 s for two rounds (the peer's side is the longer one).
set -uo pipefail
bin=$1 data=$2 out=$3
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
need "$bin" pipeline_throughput || exit 2
mkdir -p "$out"
levers_failed=$out/failed_runs
rounds=${ROUNDS:-2}
epochs=$(epochs_for "$(jpeg_count "$data")" "${MIN_IMAGES:-100000}")
variant() {  # NAME ROUND
  local name=$1 round=$2 log=$out/$1_$2.log json=$out/$1_$2.json
  case $name in
    hybrid) limited 180 "$log" "$bin/pipeline_throughput" --data "$data" --threads "$(nproc)" --batch 256 \
              --size 224 --epochs "$epochs" --seed 7 --deterministic 0 --device gpu --json "$json" ;;
    tvgpu) limited 300 "$log" python3 "$levers_root/bench/peers/torchvision_gpu_decode.py" --data "$data" \
             --workers "${WORKERS:-8}" --batch 256 --size 224 --min-images "${MIN_IMAGES:-100000}" --seed 7 \
             --variants "${PEER_VARIANTS:-sample}" --json "$json" ;;
  esac
  echo "$name round $round: $(grep -hE '^threads |^strongest' "$log" | head -1 | cut -c1-160)"
}
for round in $(seq "$rounds"); do
  for v in $(in_order "$round" hybrid tvgpu); do variant "$v" "$round"; done
done
python3 "$levers_root/bench/levers/summarize_levers.py" peer "$out" | tee "$out/summary.txt"
