#!/usr/bin/env bash
# multi_gpu_hangs.sh [--gpus N] [--runs N] [--steps N] [--test-runs N]
# Data parallel on N GPUs, one process each (scripts/launch.sh's processes: NCCL's own bootstrap, as on a
# machine without MPI), beside nvJPEG, run after run, each under a time limit with a stall report after 30 s
# (stacks of a hang land in the results): first the data-parallel GPU test that does the same
# (TwoGpusBesideNvjpeg, CONVEYOR_HANG_RUNS times), then feed_vs_prefetch on N ranks. Counts the runs that
# ended (bench/summarize_gpu_scripts.py multi_gpu_hangs: summary.txt). A failing test fails the script.
# (One process driving several GPUs, which this script ran until 2026-11-28, was removed: it hung.)
source "$(dirname "$0")/lib.sh"
bench_options gpus=2 runs=20 steps=100 test-runs=10 -- "$@"
bench_begin multi_gpu_hangs "$@"
images=$(imagenet_like)
export NCCL_NVLS_ENABLE=0 CONVEYOR_LAUNCHER=processes
if [ "$test_runs" -gt 0 ]; then
  log=$r/conveyor_data_parallel_gpu_tests.log
  CONVEYOR_HANG_RUNS=$test_runs bench_run 1200 "$bin/conveyor_data_parallel_gpu_tests" \
    --gtest_filter='TwoGpusBesideNvjpeg.*' >"$log" 2>&1
  grep -E '^\[ +(PASSED|FAILED|SKIPPED) +\]' "$log"
  grep -qE '^\[  FAILED  \]' "$log" || ! grep -q '^\[  PASSED  \]' "$log" && echo "hang test" >>"$r/tests_failed"
fi
for i in $(seq "$runs"); do
  bench_run 120 bash "$root/scripts/launch.sh" "$gpus" "$bin/feed_vs_prefetch" --data "$images" --threads 16 \
    --batch 256 --warmup 5 --steps "$steps" --stall-report 30 --json "$r/fvp_$i.json" >"$r/fvp_$i.log" 2>&1
  grep -q '^prefetch ' "$r/fvp_$i.log" || echo "!!! run $i did not end"
  grep -A12 'conveyor: no progress' "$r/fvp_$i.log" | head -14
done
python3 "$root/bench/summarize_gpu_scripts.py" multi_gpu_hangs "$r" | tee "$r/summary.txt"
bench_end
