#!/usr/bin/env bash
# Issue 17: what one host supplies when two pipelines run at once. The CPU (lscpu); pipeline_throughput
# CPU-only (16 threads) and hybrid (nvJPEG + CPU, the split adapting), one process alone and two at once
# (one per GPU), two rounds; then feed_vs_prefetch on two GPUs with the split fixed at 0.45 and 0.6 beside
# one GPU and two at the defaults.
set -u
out=${OUT:-/tmp/out}
bash bench/gpu_run.sh data >"$out/data.log" 2>&1
source /tmp/bundle/tools/device-env /tmp/bundle/lib
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib64
bin=/tmp/bundle/bin
data=/tmp/data/imagenet-like-5000/train
lscpu | grep -E '^(CPU\(s\)|Thread|Core|Socket|Model name|NUMA node)' | tee "$out/lscpu.txt"
pt=("$bin/pipeline_throughput" --data "$data" --batch 256 --size 224 --epochs 4 --seed 7 --threads 16)
for round in 1 2; do
  for kind in cpu gpu; do
    extra=(); [ $kind = gpu ] && extra=(--device gpu --deterministic 0)
    CUDA_VISIBLE_DEVICES=0 timeout 120 "${pt[@]}" "${extra[@]}" --json "$out/pt_${kind}_alone_r$round.json" >"$out/pt_${kind}_alone_r$round.log" 2>&1
    CUDA_VISIBLE_DEVICES=0 timeout 120 "${pt[@]}" "${extra[@]}" --json "$out/pt_${kind}_both0_r$round.json" >"$out/pt_${kind}_both0_r$round.log" 2>&1 &
    CUDA_VISIBLE_DEVICES=1 timeout 120 "${pt[@]}" "${extra[@]}" --json "$out/pt_${kind}_both1_r$round.json" >"$out/pt_${kind}_both1_r$round.log" 2>&1
    wait
    echo "round $round $kind: alone $(grep -E '^threads 16' "$out/pt_${kind}_alone_r$round.log" | head -1) | at once: $(grep -hE '^threads 16' "$out/pt_${kind}_both0_r$round.log" "$out/pt_${kind}_both1_r$round.log" | tr '\n' ' ')"
  done
done
fvp=("$bin/feed_vs_prefetch" --data "$data" --modes prefetch --warmup 10 --steps 300 --batch 256 --threads 16)
row() {
  python3 - "$out" "$1" <<'PY'
import glob, json, sys
out, name = sys.argv[1:]
files = sorted(glob.glob(f"{out}/{name}.json")) or sorted(glob.glob(f"{out}/{name}.rank*.json"))
rs = [json.load(open(f))["results"][0] for f in files]
print(f"{name}: {sum(r['images_per_s'] for r in rs):.0f} img/s; idle " + ", ".join(f"{100*r['idle_fraction']:.1f}" for r in rs)
      + " %; compute " + ", ".join(f"{r['compute_ms']:.2f}" for r in rs) + " ms; GPU-decoded " +
      ", ".join(f"{r['gpu_decoded_fraction']:.2f}" for r in rs))
PY
}
timeout 120 "${fvp[@]}" --json "$out/one.json" >"$out/one.log" 2>&1; row one
timeout 120 bash scripts/launch.sh 2 "${fvp[@]}" --json "$out/two.json" >"$out/two.log" 2>&1; row two
for share in 0.45 0.6; do
  timeout 120 bash scripts/launch.sh 2 "${fvp[@]}" --pipeline-deterministic 1 --gpu-share $share \
    --json "$out/two_share$share.json" >"$out/two_share$share.log" 2>&1; row two_share$share
done
cd "$out" && tar czf exp.tgz *.log *.json *.txt && rm -f *.log *.json
