#!/usr/bin/env bash
# scripts/gpu-test-bundle.sh BUILD_DIR: packs the whole test suite for a run on the GPU machine
# (scripts/gpu_test_run.sh) into .carry/, through scripts/device-bundle.sh: every test program BUILD_DIR's
# ctest lists (CPU and GPU), the examples and the data tool their tests run, the shared libraries the GPU
# machine lacks, Fashion-MNIST's IDX files for the training test, and .carry/tests.txt, what to run there:
#   gtest PROGRAM COUNT                 a GoogleTest program and the number of tests it lists here
#   unprivileged NAME PROGRAM ARGS...   a CTest test run as an unprivileged user (tests/support/run_unprivileged.sh)
# BUILD_DIR must be a build with the GPU parts (./conveyor.sh build on a machine with nvcc). Anything after
# BUILD_DIR goes to device-bundle.sh too (say --photos and benchmark programs, so that one bundle also serves
# bench/gpu/'s scripts in the same call).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/gpu-test-bundle.sh BUILD_DIR [device-bundle.sh options and programs...]}
shift
extra=("$@")
[ -d "$build" ] || { echo "gpu-test-bundle: no build tree $build" >&2; exit 1; }

# Every program and label at its minimum, the GPU programs included, before anything is packed.
python3 scripts/check_test_counts.py "$build" --require cuda >/dev/null ||
  { python3 scripts/check_test_counts.py "$build" --require cuda; exit 1; }

manifest=$(mktemp)
trap 'rm -f "$manifest"' EXIT
ctest --test-dir "$build" --show-only=json-v1 | python3 -c '
import json, os, sys
programs, lines = {}, []
for test in json.load(sys.stdin)["tests"]:
    command = test.get("command") or []
    if not command:
        continue
    name = os.path.basename(command[0])
    if name == "run_unprivileged.sh":
        lines.append(" ".join(["unprivileged", test["name"], os.path.basename(command[1])] + command[2:]))
    elif name.startswith("conveyor_") and os.access(command[0], os.X_OK):
        programs[name] = command[0]
for name, path in sorted(programs.items()):
    lines.append(f"gtest {name} {path}")
print("\n".join(lines))
' >"$manifest"

# The GoogleTest programs with their test counts here; the full paths are dropped.
rows=()
names=()
while read -r kind first second rest; do
  if [ "$kind" = gtest ]; then
    count=$("$second" --gtest_list_tests | grep -c '^  ' || true)
    [ "$count" -gt 0 ] || { echo "gpu-test-bundle: $first lists no test" >&2; exit 1; }
    rows+=("gtest $first $count")
    names+=("$first")
  else
    rows+=("$kind $first $second${rest:+ $rest}")
  fi
done <"$manifest"

# device-bundle.sh starts from an empty .carry/: the manifest goes in after it.
scripts/device-bundle.sh "$build" --fashion "${extra[@]}" "${names[@]}" feed_vs_prefetch train_fashion_mnist \
  make_fashion_mnist quickstart custom_network make_shards resume_tool data_parallel_peer
printf '%s\n' "${rows[@]}" >.carry/tests.txt
echo "gpu-test-bundle: ${#names[@]} test programs, $(grep -c '^unprivileged' .carry/tests.txt) unprivileged runs" \
  "in .carry/tests.txt (commit $(cat .carry/commit))"
