#!/usr/bin/env bash
# Experiment (lanes-experiment.patch, not in the project): prefetch beside the ResNet-18 bf16 step with
# nvJPEG called from 1, 2 or 3 threads at once (EXP_DECODE_THREADS -> DeviceDecode::host_threads), each on
# its own part of the batch with decoders and a stream of its own; train_step_bench alone for the ratio.
# Two rounds, the thread counts alternating in order; nvidia-smi dmon beside each prefetch run.
set -uo pipefail
out=${OUT:-/tmp/out}
bash bench/gpu_run.sh data >"$out/data.log" 2>&1
source /tmp/bundle/tools/device-env /tmp/bundle/lib
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib64
bin=/tmp/bundle/bin
data=/tmp/data/imagenet-like-5000/train
for round in 1 2; do
  "$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 --steps 200 --warmup 10 \
    --json "$out/step_$round.json" >"$out/step_$round.log" 2>&1
  echo "round $round train_step_bench: $(tail -1 "$out/step_$round.log" | cut -c1-150)"
  order="1 2 3"; [ "$round" = 2 ] && order="3 2 1"
  for t in $order; do
    nvidia-smi dmon -s u -d 1 >"$out/dmon_t${t}_r$round.txt" 2>&1 &
    dmon=$!
    EXP_DECODE_THREADS=$t "$bin/feed_vs_prefetch" --data "$data" --modes prefetch --threads 16 --batch 256 \
      --steps 300 --warmup 5 --json "$out/fvp_t${t}_r$round.json" >"$out/fvp_t${t}_r$round.log" 2>&1
    kill $dmon; wait $dmon 2>/dev/null
    echo "round $round threads $t: $(grep -E '^prefetch ' "$out/fvp_t${t}_r$round.log" | head -1 | cut -c1-60) jpg: $(awk '$1==0 && $6>0 {printf "%s ", $6}' "$out/dmon_t${t}_r$round.txt")"
  done
done
python3 - "$out" <<'PY'
import json, sys, glob, statistics
out = sys.argv[1]
step = {r: json.load(open(f"{out}/step_{r}.json")) for r in (1, 2)}
def step_rate(d):
    for k in ("images_per_s", "img_per_s"):
        if k in d: return d[k]
    return d.get("results", [{}])[0].get("images_per_s")
for t in (1, 2, 3):
    rows = []
    for r in (1, 2):
        res = json.load(open(f"{out}/fvp_t{t}_r{r}.json"))["results"][0]
        dec = res["decoder"]; n = max(dec["gpu_decoded"], 1)
        rows.append(f"r{r}: {res['images_per_s']:.0f} img/s / step {step_rate(step[r])} , share {dec['gpu_share_end']:.2f}, "
                    f"host {1e6*dec['host_s']/n:.0f} us/img, submit {1e6*dec['submit_s']/n:.0f}")
    print(f"threads {t}: " + " | ".join(rows))
PY
cd "$out" && tar czf exp.tgz *.txt *.log *.json && rm -f dmon_*.txt *.log *.json
