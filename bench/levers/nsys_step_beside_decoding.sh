#!/usr/bin/env bash
# nsys_step_beside_decoding.sh BIN DATA OUT — issue 41's timeline evidence: Nsight Systems captures of the
# ResNet-18 step beside the hybrid feeder (feed_vs_prefetch's prefetch with the defaults, or with the flags in
# PREFETCH_FLAGS) and alone (train_step_bench --no-graph: launched kernel by kernel, as prefetch launches
# it). Kept in OUT: each capture's kernel, CUDA API and memory-copy summaries as CSV (nsys stats), and
# nsys_overlap.json (nsys_overlap.py: what the step's kernels share the GPU with, and which of them slow
# beside the feeder). The reports themselves (hundreds of MB) are deleted. Without nsys on the machine it
# says so and does nothing. Environment: STEPS (60), THREADS (every core), PREFETCH_FLAGS. Expected time on
# an H200: about 60 s (most of it nsys's own processing).
set -uo pipefail
bin=$1 data=$2 out=$3
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
need "$bin" feed_vs_prefetch train_step_bench || exit 2
mkdir -p "$out"
levers_failed=$out/failed_runs
nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
if [ -z "$nsys" ]; then
  echo "no nsys on this machine: no capture" | tee "$out/summary.txt"
  exit 0
fi
steps=${STEPS:-60}
threads=${THREADS:-$(nproc)}
work=$(mktemp -d /tmp/levers-nsys.XXXXXX)
trap 'rm -rf "$work"' EXIT
# shellcheck disable=SC2086
capture() {  # NAME COMMAND...: the capture, its CSV summaries in OUT, its SQLite export in the work folder
  local name=$1
  shift
  limited 240 "$out/$name.log" "$nsys" profile -t cuda --cpuctxsw=none -s none -o "$work/$name" \
    --force-overwrite true "$@"
  limited 240 "$out/${name}_stats.log" "$nsys" stats --report cuda_gpu_kern_sum,cuda_api_sum,cuda_gpu_mem_time_sum \
    --format csv -o "$out/$name" "$work/$name.nsys-rep"
  [ -f "$work/$name.sqlite" ] || limited 240 "$out/${name}_export.log" "$nsys" export --type sqlite \
    -o "$work/$name.sqlite" "$work/$name.nsys-rep"
}
# shellcheck disable=SC2086
capture beside "$bin/feed_vs_prefetch" --data "$data" --modes prefetch --threads "$threads" --batch 256 \
  --steps "$steps" --warmup 0 --progress 0 ${PREFETCH_FLAGS:-} --json "$out/beside_fvp.json"
capture alone "$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 --steps "$steps" --warmup 0 \
  --no-graph --json "$out/alone_step.json"
# Every step of each capture is in it (warm-up steps 0): feed_vs_prefetch also runs the trainer's and the
# feeder's warm-up, train_step_bench its first step, which the per-step figures spread a little.
python3 "$levers_root/bench/levers/nsys_overlap.py" "$work/beside.sqlite" --alone "$work/alone.sqlite" \
  --steps "$steps" --json "$out/nsys_overlap.json" | tee "$out/summary.txt"
for f in "$out"/*.csv; do [ -f "$f" ] && { echo "--- $(basename "$f")"; head -8 "$f" | cut -c1-200; }; done
