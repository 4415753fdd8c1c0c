#!/usr/bin/env bash
# 2-core CPU step: prefetch/feed with the pipeline's thread at --pipeline-nice 10 (the default) and 0.
cd "$(git rev-parse --show-toplevel)"
out=${OUT:-/tmp/nice2core}; mkdir -p $out
bin=build/examples/feed_vs_prefetch/feed_vs_prefetch
for round in $(seq ${ROUNDS:-4}); do
  for nice in 10 0; do
    if [ $((round % 2)) -eq 1 ]; then modes=feed,prefetch; else modes=prefetch,feed; fi
    $bin --device cpu --modes $modes --steps 100 --pipeline-nice $nice --json $out/n${nice}_$round.json > $out/n${nice}_$round.log 2>&1
    python3 - $out/n${nice}_$round.json $nice $round <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
r={x["mode"]:x for x in d["results"]}
f,p=r["feed"],r["prefetch"]
print(f'nice {sys.argv[2]:2} round {sys.argv[3]}: feed {f["images_per_s"]:.1f} prefetch {p["images_per_s"]:.1f} ratio {p["images_per_s"]/f["images_per_s"]:.3f} compute feed {f["compute_ms"]:.1f} prefetch {p["compute_ms"]:.1f} wait {p["data_wait_fraction"]:.3f}', flush=True)
PY
  done
done
