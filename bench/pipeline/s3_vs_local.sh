#!/usr/bin/env bash
# s3_vs_local.sh: an epoch of tar shards read by pipeline_throughput from local disk and from an
# S3-compatible server on 127.0.0.1 (the tests' server, tests/support/s3server: @20minutes/s3rver under
# Node, signing checked), through the shard cache cold (emptied before the run) and warm (filled by the
# cold run before it), side by side in rounds whose order alternates (even rounds: local, cold, warm; odd:
# cold, warm, local). All three read the same shards through their wids index (make_shards writes it), so
# their batches are the same: the checksums must agree. Issue 39 asks, on the 2-core build machine, for
# cold >= 0.9 x local and warm >= 0.98 x local (medians of the rounds' ratios).
#
#   bench/pipeline/s3_vs_local.sh BUILD_DIR IMAGE_FOLDER OUT_DIR [pipeline_throughput options...]
#
# BUILD_DIR holds bench/pipeline/pipeline_throughput and data/make_shards/make_shards; the server is
# installed into BUILD_DIR/tests/s3server. Options after OUT_DIR go to every run (default: --threads
# $(nproc) --batch 64 --size 224 --epochs 1 --seed 7); ROUNDS (default 5) sets the rounds, SHARD_MB (default
# 16) the shards' size, WORK (default OUT_DIR/work) where the shards, the server's buckets and the cache go
# (several times the images' size). Writes OUT_DIR/<kind>_<round>.json (with "remote": the cache's hits, misses, bytes
# fetched), OUT_DIR/load.txt (uptime before each run) and OUT_DIR/summary.json; prints one line per run and
# the medians.
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
build=$(cd "$1" && pwd) images=$2 out=$3
shift 3
options=("$@")
[ ${#options[@]} -gt 0 ] || options=(--threads "$(nproc)" --batch 64 --size 224 --epochs 1 --seed 7)
rounds=${ROUNDS:-5}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=${WORK:-$out/work}
mkdir -p "$work"
shards=$work/shards
if [ ! -f "$shards/shards.json" ]; then
  rm -rf "$shards"
  "$build/data/make_shards/make_shards" --input "$images" --output "$shards" --shard-size "${SHARD_MB:-16}" | tail -1
fi

"$root/tests/support/s3server/install.sh" "$build/tests/s3server"
rm -rf "$work/server"
node --openssl-legacy-provider "$build/tests/s3server/serve.js" --directory "$work/server" --bucket bench \
  --upload "$shards" --into bench/train/ >"$out/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 600); do
  grep -q '^listening ' "$out/server.log" && break
  kill -0 "$server" 2>/dev/null || { cat "$out/server.log" >&2; exit 1; }
  sleep 0.1
done
port=$(sed -n 's/^listening .*:\([0-9]*\)$/\1/p' "$out/server.log")
export AWS_ENDPOINT_URL=http://127.0.0.1:$port AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1

cache=$work/cache
run() {  # run KIND ROUND
  local kind=$1 round=$2 data=$shards/shards.json extra=()
  case "$kind" in
    cold) rm -rf "$cache"; data=s3://bench/train/shards.json; extra=(--shard-cache-bytes 8000000000 --shard-cache-dir "$cache") ;;
    warm) data=s3://bench/train/shards.json; extra=(--shard-cache-bytes 8000000000 --shard-cache-dir "$cache") ;;
  esac
  printf '%s %s: %s\n' "$kind" "$round" "$(uptime)" >>"$out/load.txt"
  "$build/bench/pipeline/pipeline_throughput" --data "$data" "${options[@]}" "${extra[@]}" \
    --json "$out/${kind}_$round.json" >"$out/${kind}_$round.log"
  python3 - "$out/${kind}_$round.json" "$kind" "$round" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m = r["remote"]
print(f"{sys.argv[2]:5} {sys.argv[3]}: {r['images_per_s']:8.1f} img/s, {r['images']} images, checksum {r['checksum']}, "
      f"cache {m['cache_hits']} hits {m['cache_misses']} misses, {m['bytes_fetched'] / 1e6:.1f} MB fetched")
PY
}
for round in $(seq 0 $((rounds - 1))); do
  if [ $((round % 2)) -eq 0 ]; then order=(local cold warm); else order=(cold warm local); fi
  for kind in "${order[@]}"; do run "$kind" "$round"; done
done

python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
load = lambda kind, r: json.load(open(f"{out}/{kind}_{r}.json"))
rate = {k: [load(k, r)["images_per_s"] for r in range(rounds)] for k in ("local", "cold", "warm")}
checksums = {load(k, r)["checksum"] for k in rate for r in range(rounds)}
ratio = {k: [rate[k][r] / rate["local"][r] for r in range(rounds)] for k in ("cold", "warm")}
summary = {
    "rounds": rounds,
    "images_per_s": rate,
    "median_images_per_s": {k: statistics.median(v) for k, v in rate.items()},
    "ratio_to_local": ratio,
    "median_ratio_to_local": {k: statistics.median(v) for k, v in ratio.items()},
    "targets": {"cold": 0.9, "warm": 0.98},
    "checksums_equal": len(checksums) == 1,
    "remote": {k: [load(k, r)["remote"] for r in range(rounds)] for k in ("cold", "warm")},
}
json.dump(summary, open(f"{out}/summary.json", "w"), indent=2)
for k in ("local", "cold", "warm"):
    print(f"median {k:5}: {summary['median_images_per_s'][k]:8.1f} img/s")
for k in ("cold", "warm"):
    print(f"median ratio {k} / local: {summary['median_ratio_to_local'][k]:.3f} (rounds: "
          + ", ".join(f"{x:.3f}" for x in ratio[k]) + f"; target {summary['targets'][k]})")
print("checksums equal:", summary["checksums_equal"])
PY
