#!/usr/bin/env bash
# NVJPG engine use (nvidia-smi dmon's "jpg" column) while conveyor's hybrid pipeline runs: alone at 16 and
# 4 threads with the split adapting, with every image sent to the GPU (share 1, fixed), and beside the
# ResNet-18 training step (feed_vs_prefetch's prefetch). Is the GPU's share of the decoding held back by
# the engines or by the host?
set -uo pipefail
out=${OUT:-/tmp/out}
bash bench/gpu_run.sh data >"$out/data.log" 2>&1
source /tmp/bundle/tools/device-env /tmp/bundle/lib
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib64
bin=/tmp/bundle/bin
data=/tmp/data/imagenet-like-5000/train
nvidia-smi dmon -h 2>&1 | head -30 >"$out/dmon_help.txt"
watch() {  # NAME COMMAND...: runs COMMAND with dmon sampling every second beside it
  local name=$1; shift
  nvidia-smi dmon -s u -d 1 >"$out/dmon_$name.txt" 2>&1 &
  local dmon=$!
  sleep 1
  "$@" >"$out/$name.log" 2>&1
  echo "$name: rc $? $(grep -E '^threads|^prefetch' "$out/$name.log" | head -2 | cut -c1-160)"
  sleep 1
  kill $dmon; wait $dmon 2>/dev/null
  echo "  dmon:"; head -40 "$out/dmon_$name.txt" | sed 's/^/    /'
}
pt=("$bin/pipeline_throughput" --data "$data" --batch 256 --size 224 --seed 7 --device gpu)
watch alone16 "${pt[@]}" --threads 16 --epochs 24 --deterministic 0 --json "$out/alone16.json"
watch gpu_only16 "${pt[@]}" --threads 16 --epochs 12 --gpu-share 1 --json "$out/gpu_only16.json"
watch alone4 "${pt[@]}" --threads 4 --epochs 16 --deterministic 0 --json "$out/alone4.json"
watch prefetch16 "$bin/feed_vs_prefetch" --data "$data" --modes prefetch --threads 16 --batch 256 --steps 400 \
  --warmup 5 --json "$out/prefetch16.json"
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
for name in ["alone16", "gpu_only16", "alone4"]:
    d = json.load(open(f"{out}/{name}.json"))
    dev = d["device"]
    n = max(dev.get("gpu_decoded", 0), 1)
    print(f"{name}: {d['images_per_s']:.0f} img/s, share at end {dev.get('gpu_share_at_end')}, gpu decoded {n}, "
          f"host {1e6*dev['decode_host_s']/n:.0f} us/img (submit {1e6*dev['decode_submit_s']/n:.0f}, "
          f"check {1e6*dev['decode_check_s']/n:.0f}), gpu {1e6*dev['decode_gpu_s']/n:.0f} us/img")
PY
cd "$out" && tar czf exp.tgz *.txt *.log *.json && rm -f dmon_*.txt *.log *.json
