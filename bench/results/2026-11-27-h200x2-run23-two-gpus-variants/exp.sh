#!/usr/bin/env bash
# Issue 17: why two ranks make 15k img/s each where one GPU alone makes 18k. Two rounds of: one GPU at the
# defaults; two processes at the defaults; with NCCL limited to 4 channels (fewer SMs taken from the
# backward pass); with the step as a CUDA graph; each rank pinned to 16 cores of its own; 12 threads a rank.
set -u
out=${OUT:-/tmp/out}
bash bench/gpu_run.sh data >"$out/data.log" 2>&1
source /tmp/bundle/tools/device-env /tmp/bundle/lib
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib64
bin=/tmp/bundle/bin
fvp=("$bin/feed_vs_prefetch" --data /tmp/data/imagenet-like-5000/train --modes prefetch --warmup 10 --steps 300 --batch 256)
row() {  # NAME JSON-PREFIX: images/s (sum over ranks), idle and compute per rank
  python3 - "$out" "$1" <<'PY'
import glob, json, sys
out, name = sys.argv[1:]
files = sorted(glob.glob(f"{out}/{name}.json")) or sorted(glob.glob(f"{out}/{name}.rank*.json"))
rs = [json.load(open(f))["results"][0] for f in files]
print(f"{name}: {sum(r['images_per_s'] for r in rs):.0f} img/s; idle " + ", ".join(f"{100*r['idle_fraction']:.1f}" for r in rs)
      + " %; compute " + ", ".join(f"{r['compute_ms']:.2f}" for r in rs) + " ms; share " +
      ", ".join(f"{r['decoder']['gpu_share_end']:.2f}" for r in rs))
PY
}
one() { local n=$1; shift; timeout 120 "${fvp[@]}" --threads 16 "$@" --json "$out/$n.json" >"$out/$n.log" 2>&1; row "$n"; }
two() { local n=$1 t=$2; shift 2; timeout 120 bash scripts/launch.sh 2 "${fvp[@]}" --threads "$t" "$@" --json "$out/$n.json" >"$out/$n.log" 2>&1; row "$n"; }
pinned() {
  local n=$1; shift
  timeout 120 bash scripts/launch.sh 2 bash -c 'first=$((LOCAL_RANK * 16)); exec taskset -c "$first-$((first + 15))" "$@"' pin \
    "${fvp[@]}" --threads 16 --json "$out/$n.json" >"$out/$n.log" 2>&1
  row "$n"
}
for round in 1 2; do
  one one_r$round
  two two_r$round 16
  NCCL_MAX_NCHANNELS=4 two two_ch4_r$round 16
  two two_graph_r$round 16 --graph
  pinned two_pinned_r$round
  two two_t12_r$round 12
done
cd "$out" && tar czf exp.tgz *.log *.json && rm -f *.log *.json
