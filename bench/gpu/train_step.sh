#!/usr/bin/env bash
# train_step.sh [--previous PATH] [--pairs N] [--torch VARIANTS]
# The ResNet-18 training step, bf16, batch 256, on data already on the GPU: train_step_bench (its step
# replayed as a CUDA graph) after one run that fills the algorithm cache, then, with --previous, this build
# and a previous binary (carried in the bundle: say bin/train_step_bench_prev) in alternating pairs on the
# warm cache; then PyTorch's ResNet-18 (bench/peers/torch_resnet18.py) in each of VARIANTS (default
# "eager compile-max-autotune": max-autotune's first step takes minutes). The headline's step row is
# train_step_bench against the fastest torch.compile mode; bench/summarize_against_previous.py judges the
# pairs (summary.txt).
source "$(dirname "$0")/lib.sh"
bench_options previous= pairs=3 torch="eager compile-max-autotune" -- "$@"
bench_begin train_step "$@"
step=(--model resnet18 --batch 256 --precision bf16 --steps 100 --warmup 10)
cache=$(mktemp -d /tmp/conveyor-algorithms.XXXXXX)
CONVEYOR_ALGORITHM_CACHE=$cache bench_run 180 "$bin/train_step_bench" "${step[@]}" --json "$r/step_cold.json" |
  grep -E '^(warm-up|algorithm|steady)'
if [ -n "$previous" ]; then
  case "$previous" in /*) ;; bin/*) previous=$bundle/$previous ;; *) previous=$bin/$previous ;; esac
  [ -x "$previous" ] || { echo "!!! no previous binary at $previous"; echo "no previous binary" >>"$r/failed_runs"; }
  side() {
    local exe=$bin/train_step_bench
    [ "$1" = previous ] && exe=$previous
    CONVEYOR_ALGORITHM_CACHE=$cache bench_run 180 "$exe" "${step[@]}" --json "$r/step_${1}_$2.json" |
      grep -E '^(warm-up|steady)'
  }
  alternate "$pairs" side current previous
  python3 "$root/bench/summarize_against_previous.py" "$r" | tee "$r/summary.txt"
else
  CONVEYOR_ALGORITHM_CACHE=$cache bench_run 180 "$bin/train_step_bench" "${step[@]}" --json "$r/step_warm.json" |
    grep -E '^(warm-up|steady)'
fi
for variant in $torch; do
  bench_run 580 python3 "$root/bench/peers/torch_resnet18.py" --batch 256 --precision bf16 --steps 100 --warmup 10 \
    --variants "$variant" --json "$r/torch_$variant.json" | tail -4
done
bench_end
