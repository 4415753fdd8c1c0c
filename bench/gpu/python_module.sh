#!/usr/bin/env bash
# python_module.sh: the Python module built on this machine from the bundle (scripts/device-bundle.sh
# --python), then its tests, the GPU ones included (scripts/test_python_on_gpu_machine.sh: a GPU test that
# skips fails there). A failing test fails the script. The module stays in /tmp/build-python for
# pytorch_loop.sh in the same call.
source "$(dirname "$0")/lib.sh"
[ $# -eq 0 ] || { echo "python_module.sh takes no options" >&2; exit 2; }
bench_begin python_module
status=0
timeout -k 10 1200 "$root/scripts/test_python_on_gpu_machine.sh" "$bundle" /tmp/build-python >"$r/tests.log" 2>&1 ||
  status=$?
tail -40 "$r/tests.log"
[ "$status" -eq 0 ] || echo "python module tests (rc $status)" >>"$r/tests_failed"
bench_end
