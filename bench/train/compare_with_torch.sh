#!/usr/bin/env bash
# compare_with_torch.sh BENCH_BINARY OUT_DIR [train_step_bench options...]
# Runs conveyor's train_step_bench and the PyTorch peer (bench/peers/torch_resnet18.py) with the same
# model, batch, precision, steps and warm-up, one after the other in this run, and prints both figures
# and their ratio (the only comparison that counts: the machine of the day changes both).
set -euo pipefail
bench=$1 out=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
tag=$(echo "$*" | tr -c 'a-zA-Z0-9_-' '_' | sed 's/__*/_/g; s/^_//; s/_$//')
"$bench" "$@" --json "$out/conveyor_${tag:-default}.json"
# The peer takes the same options, except --device and --no-graph (it runs its own variants: eager, its
# whole-step CUDA graph and torch.compile, and reports the strongest).
peer_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --device) shift 2 ;;
    --no-graph) shift ;;
    *) peer_args+=("$1"); shift ;;
  esac
done
python3 "$here/../peers/torch_resnet18.py" "${peer_args[@]}" --json "$out/torch_${tag:-default}.json"
python3 - "$out/conveyor_${tag:-default}.json" "$out/torch_${tag:-default}.json" <<'PY'
import json, sys
c, t = (json.load(open(p)) for p in sys.argv[1:3])
print(f"conveyor {c['images_per_s']:.0f} img/s (median step {c['step_ms_median']:.2f} ms, warm-up {c['warmup_s']:.2f} s)")
print(f"PyTorch  {t['images_per_s']:.0f} img/s (median step {t['step_ms_median']:.2f} ms, first step {t['first_step_s']:.2f} s)")
print(f"ratio    {c['images_per_s'] / t['images_per_s']:.3f} (wall clock: {c['images_per_s_wall'] / t['images_per_s_wall']:.3f})")
PY
