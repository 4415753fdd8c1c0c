#!/usr/bin/env bash
# first_batch.sh BIN DATA OUT — issue 41, "start at once": the hybrid pipeline's first batch against
# CPU-only's, in alternating rounds, pipeline_throughput at every core, batch 256, 224 px, the split adapting
# (--deterministic 0), at least 100,000 images a run (so that its rate counting start-up says what a start
# costs). Variants:
#   cpu        CPU-only (--device none): the first batch to beat by at most 0.1 s
#   at_once    --device gpu with the defaults: the CPU decodes everything until nvJPEG is ready behind it
#   warmup     --device gpu --feeder-warmup 1: DeviceFeeder::warmup up front, as issue 36's runs did
#   made_first --device gpu --start-at-once 0: feed() makes nvJPEG ready before the first batch (not in the
#              default FIRST_BATCH_VARIANTS: the warm-up shows that cost, and the call's time is short)
# Each run's JSON in OUT/<variant>_<round>.json (its "device" part says how the decoder came ready, when the
# split opened, the first stage()'s time and the feeder's construction, which creates the CUDA context);
# OUT/summary.json from summarize_levers.py first-batch. Environment: ROUNDS (2), MIN_IMAGES (100000),
# THREADS (every core), FIRST_BATCH_VARIANTS ("cpu at_once warmup"). Expected time on an H200 with 16
# cores: about 40 s for two rounds (an estimate from earlier calls' rates, not measured).
set -uo pipefail
bin=$1 data=$2 out=$3
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
need "$bin" pipeline_throughput || exit 2
mkdir -p "$out"
levers_failed=$out/failed_runs
rounds=${ROUNDS:-2}
threads=${THREADS:-$(nproc)}
epochs=$(epochs_for "$(jpeg_count "$data")" "${MIN_IMAGES:-100000}")
common=(--data "$data" --threads "$threads" --batch 256 --size 224 --epochs "$epochs" --seed 7 --deterministic 0)
variant() {  # NAME ROUND
  local flags=()
  case $1 in
    cpu) flags=() ;;
    at_once) flags=(--device gpu) ;;
    made_first) flags=(--device gpu --start-at-once 0) ;;
    warmup) flags=(--device gpu --feeder-warmup 1) ;;
  esac
  limited 180 "$out/$1_$2.log" "$bin/pipeline_throughput" "${common[@]}" "${flags[@]}" --json "$out/$1_$2.json"
  echo "$1 round $2: $(grep -hE '^threads ' "$out/$1_$2.log" | head -1)"
}
# One hybrid run first, not counted: the split it settles at is where the counted ones start (as a user's
# second run starts), and the algorithm-free pipeline has nothing else to prime.
limited 180 "$out/prime.log" "$bin/pipeline_throughput" "${common[@]}" --device gpu --json "$out/prime.json"
read -r -a variants <<<"${FIRST_BATCH_VARIANTS:-cpu at_once warmup}"
for round in $(seq "$rounds"); do
  for v in $(in_order "$round" "${variants[@]}"); do variant "$v" "$round"; done
done
python3 "$levers_root/bench/levers/summarize_levers.py" first-batch "$out" | tee "$out/summary.txt"
