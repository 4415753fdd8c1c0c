#!/usr/bin/env bash
# cpu_ceiling.sh [--seconds N]
# What this machine's cores can do for the pipeline's work with nothing shared but the machine: ops_bench's
# one-core chain (decode + RRC 224 + flip + distort) alone on one core, then one copy on every core at once.
# The pipeline's rate at N threads over N x the one-core figure is then the pipeline's own loss, and the
# copies' sum over N x the one-core figure the machine's (memory bandwidth, shared caches, turbo).
source "$(dirname "$0")/lib.sh"
bench_options seconds=8 -- "$@"
bench_begin cpu_ceiling "$@"
images=$(imagenet_like)
chain=(env CONVEYOR_BENCH_IMAGES="$images" "$bin/ops_bench" --benchmark_filter='^chain/rrc224_flip_distort$'
       --benchmark_min_time="$seconds" --benchmark_out_format=json)
bench_run 120 taskset -c 0 "${chain[@]}" --benchmark_out="$r/one_core.json" 2>/dev/null | grep chain
copies=()
for c in $(seq 0 $(($(nproc) - 1))); do
  bench_run 180 taskset -c "$c" "${chain[@]}" --benchmark_out="$r/every_core_$c.json" >/dev/null 2>&1 &
  copies+=($!)
done
wait "${copies[@]}"  # these only: a bare wait would wait for the console's tee too
python3 - "$r" <<'SUM' | tee "$r/summary.txt"
import glob, json, sys
rate = lambda path: json.load(open(path))["benchmarks"][0]["items_per_second"]
one = rate(f"{sys.argv[1]}/one_core.json")
every = [rate(p) for p in glob.glob(f"{sys.argv[1]}/every_core_*.json")]
print(f"one core alone: {one:.0f} img/s; {len(every)} cores at once: {sum(every):.0f} img/s "
      f"({sum(every) / (len(every) * one):.3f} of {len(every)} x one core)")
SUM
bench_end
