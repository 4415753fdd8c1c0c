#!/usr/bin/env bash
# The Python module's tests on the GPU machine: the GPU tests (tests/python/test_gpu.py: torch.from_dlpack
# on device batches, bf16 NCHW against the CPU normalize, a side stream, kept tensors, early break, a
# training step), then the whole suite under pytest when the machine's Python has it (Python 3.12, numpy
# 2.x: the CPU tests there too). Builds the module first when BUILD_DIR has none.
#   scripts/test_python_on_gpu_machine.sh [BUNDLE_DIR (default /tmp/bundle)] [BUILD_DIR (default build-python)]
# Exit status 0 only when every test ran and passed (a skipped GPU test fails this script: on this machine
# they must run).
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-/tmp/bundle}
build=${2:-build-python}
python=$(command -v "${PYTHON:-python3}")
if ! ls "$build"/conveyor/_conveyor*.so >/dev/null 2>&1; then
  scripts/build_python_on_gpu_machine.sh "$bundle" "$build" || exit 1
fi
export PYTHONPATH="$(cd "$build" && pwd)" CONVEYOR_MAKE_TEST_JPEGS="$bundle/bin/make_test_jpegs" PYTHONDONTWRITEBYTECODE=1
# The C++ side of test_bench_scripts.py's overhead run, when the bundle carries it (its libraries through
# device-env, as bench/gpu/lib.sh runs everything; the module needs none of that).
if [ -x "$bundle/bin/pipeline_throughput" ]; then
  export CONVEYOR_PIPELINE_THROUGHPUT="$bundle/bin/pipeline_throughput"
  # shellcheck disable=SC1091
  source "$bundle/tools/device-env" "$bundle/lib"
fi
status=0
echo "=== GPU tests (unittest)"
log=$(mktemp)
timeout 600 "$python" tests/python/test_gpu.py -v 2>&1 | tee "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
if grep -q 'skipped' "$log"; then
  echo "!!! GPU tests were skipped on the GPU machine"
  status=1
fi
rm -f "$log"
if "$python" -c 'import pytest' 2>/dev/null; then
  echo "=== the whole Python suite (pytest)"
  timeout 900 "$python" -m pytest -q -rs -p no:cacheprovider tests/python || status=1
else
  echo "=== pytest is not installed here: only the GPU tests ran"
fi
echo "=== python tests: $([ $status -eq 0 ] && echo PASSED || echo FAILED)"
exit $status
