#!/usr/bin/env bash
# gpu_tests.sh [PROGRAM[:GTEST_FILTER]]...
# The GPU test programs of the bundle (default: every conveyor_*gpu_tests program in it), each under a time
# limit with stacks of a hang, after the nvJPEG ABI check (our declarations against NVIDIA's header). The
# console keeps each program's summary, every failure with the lines around it, and the diagnostic lines the
# tests print; the full logs and JSON stay in the results. A failed or missing program fails the script.
# (The whole suite, CPU tests too: scripts/gpu-test-bundle.sh and scripts/gpu_test_run.sh.)
source "$(dirname "$0")/lib.sh"
bench_begin gpu_tests "$@"
programs=("$@")
if [ ${#programs[@]} -eq 0 ]; then
  for exe in "$bin"/conveyor_*gpu_tests; do [ -x "$exe" ] && programs+=("$(basename "$exe")"); done
fi
[ ${#programs[@]} -gt 0 ] || { echo "!!! no GPU test program in the bundle"; echo "no GPU test program" >>"$r/tests_failed"; }
nvjpeg_abi_check
for program in "${programs[@]}"; do
  name=${program%%:*} filter=
  [ "$program" = "$name" ] || filter=${program#*:}
  echo "--- $name${filter:+ ($filter)}"
  if [ ! -x "$bin/$name" ]; then
    echo "!!! $name is not in the bundle"; echo "$name missing" >>"$r/tests_failed"; continue
  fi
  log=$r/$name.log
  bench_run "${GPU_TEST_LIMIT:-600}" "$bin/$name" --gtest_output=json:"$r/$name.json" ${filter:+--gtest_filter="$filter"} \
    >"$log" 2>&1
  grep -E '^\[ +(PASSED|FAILED|SKIPPED) +\]|^\[ (nvjpeg|stages|images|placement) ' "$log" | head -150
  grep -B2 -A12 -E 'Failure$|^unknown file: Failure|Segmentation|terminate called' "$log" | head -200
  if grep -qE '^\[  FAILED  \]' "$log" || ! grep -q '^\[  PASSED  \]' "$log"; then
    echo "$name" >>"$r/tests_failed"
  fi
done
bench_end
