#!/usr/bin/env bash
# step_beside_decoding.sh BIN DATA OUT — issue 41, "the GPU's share beside the step": feed_vs_prefetch's
# prefetch (ResNet-18 bf16, batch 256, the hybrid split adapting) with each lever against the defaults, and
# train_step_bench alone, as a CUDA graph (the target's peer) and launched kernel by kernel (prefetch's own
# way beside nvJPEG: its step alone), in alternating rounds. Variants:
#   step, step_eager  train_step_bench, graph and --no-graph
#   base              prefetch with the defaults
#   urgent            --step-priority urgent: the step's stream at the device's most urgent priority
#   engines_only      --gpu-hybrid 0: only the hardware engines decode on the GPU; what they refuse, the CPU
#   decoded_only      --copy-whole-batch 0: the deferred slots are left out of the copy
#   all               the three levers above together (not in the default STEP_VARIANTS)
#   fewer_threads     the pipeline on THREADS - 1 threads: a core left to the step's launching thread (not in
#                     the default STEP_VARIANTS)
# OUT/<variant>_<round>.json each; OUT/summary.json from summarize_levers.py step-share: each prefetch
# variant's share of the round's step (graph), against base round by round, its compute time per step and
# idle, and the GPU-decoded images by nvJPEG path. Environment: ROUNDS (2), STEPS (200), STEP_VARIANTS (the
# prefetch ones, space-separated; default "base urgent engines_only decoded_only"), THREADS (every core).
# Expected time on an H200 at STEPS=150 (one_call.sh's): about 60 s for two rounds (an estimate, not measured).
set -uo pipefail
bin=$1 data=$2 out=$3
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
need "$bin" feed_vs_prefetch train_step_bench || exit 2
mkdir -p "$out"
levers_failed=$out/failed_runs
rounds=${ROUNDS:-2}
steps=${STEPS:-200}
threads=${THREADS:-$(nproc)}
read -r -a variants <<<"${STEP_VARIANTS:-base urgent engines_only decoded_only}"
fvp=("$bin/feed_vs_prefetch" --data "$data" --modes prefetch --threads "$threads" --batch 256 --steps "$steps"
     --warmup 10 --progress 0 --stall-report 30)
step=("$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 --steps "$steps" --warmup 10)
variant() {  # NAME ROUND
  local name=$1 round=$2 flags=()
  case $name in
    step) limited 120 "$out/${name}_$round.log" "${step[@]}" --json "$out/${name}_$round.json"
          echo "step round $round: $(grep -hE '^steady' "$out/${name}_$round.log" | head -1)"; return ;;
    step_eager) limited 120 "$out/${name}_$round.log" "${step[@]}" --no-graph --json "$out/${name}_$round.json"
          echo "step_eager round $round: $(grep -hE '^steady' "$out/${name}_$round.log" | head -1)"; return ;;
    base) flags=() ;;
    urgent) flags=(--step-priority urgent) ;;
    engines_only) flags=(--gpu-hybrid 0) ;;
    decoded_only) flags=(--copy-whole-batch 0) ;;
    all) flags=(--step-priority urgent --gpu-hybrid 0 --copy-whole-batch 0) ;;
    fewer_threads) flags=(--threads $((threads > 1 ? threads - 1 : 1))) ;;
    *) echo "unknown variant $name" >&2; return ;;
  esac
  limited 150 "$out/${name}_$round.log" "${fvp[@]}" "${flags[@]}" --json "$out/${name}_$round.json"
  echo "$name round $round: $(grep -hE '^prefetch ' "$out/${name}_$round.log" | head -1)"
}
for round in $(seq "$rounds"); do
  for v in $(in_order "$round" step step_eager "${variants[@]}"); do variant "$v" "$round"; done
done
python3 "$levers_root/bench/levers/summarize_levers.py" step-share "$out" | tee "$out/summary.txt"
