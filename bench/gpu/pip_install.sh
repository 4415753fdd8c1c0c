#!/usr/bin/env bash
# pip_install.sh: the package pip-installed into this machine's Python from the bundle (scripts/device-bundle.sh
# --python), imported from another folder, and the README's PyTorch example run on the ImageNet-like photos
# (scripts/pip_install_on_gpu_machine.sh). Without the bundle's library path: the package must find its
# libraries through its RPATH. A failure fails the script.
source "$(dirname "$0")/lib.sh"
[ $# -eq 0 ] || { echo "pip_install.sh takes no options" >&2; exit 2; }
bench_begin pip_install
images=$(imagenet_like)
status=0
timeout -k 10 580 env -u LD_LIBRARY_PATH "$root/scripts/pip_install_on_gpu_machine.sh" "$bundle" "$images" \
  >"$r/pip.log" 2>&1 || status=$?
tail -30 "$r/pip.log"
[ "$status" -eq 0 ] || echo "pip install (rc $status)" >>"$r/tests_failed"
bench_end
