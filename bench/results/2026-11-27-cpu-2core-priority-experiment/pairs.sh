#!/usr/bin/env bash
cd "$(git rev-parse --show-toplevel)"
out=${OUT:-/tmp/prio}; mkdir -p $out
bin=build/examples/feed_vs_prefetch/feed_vs_prefetch
for pair in $(seq ${PAIRS:-4}); do
  for cfg in ${CFGS:-base 19 idle}; do
    if [ $((pair % 2)) -eq 1 ]; then modes=feed,prefetch; else modes=prefetch,feed; fi
    if [ $cfg = base ]; then env -u CONVEYOR_EXP_PRIO $bin --device cpu --modes $modes --steps 100 --json $out/${cfg}_$pair.json > $out/${cfg}_$pair.log 2>&1
    else CONVEYOR_EXP_PRIO=$cfg $bin --device cpu --modes $modes --steps 100 --json $out/${cfg}_$pair.json > $out/${cfg}_$pair.log 2>&1; fi
    python3 - $out/${cfg}_$pair.json $cfg $pair <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
r={x["mode"]:x for x in d["results"]}
f,p=r["feed"],r["prefetch"]
print(f'{sys.argv[2]:5} pair {sys.argv[3]}: feed {f["images_per_s"]:.1f} prefetch {p["images_per_s"]:.1f} ratio {p["images_per_s"]/f["images_per_s"]:.3f} compute feed {f["compute_ms"]:.1f} prefetch {p["compute_ms"]:.1f} wait {p["data_wait_fraction"]:.3f}', flush=True)
PY
  done
done
