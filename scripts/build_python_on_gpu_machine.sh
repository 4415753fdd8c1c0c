#!/usr/bin/env bash
# Builds conveyor's Python module on the GPU machine, for its Python (3.12, with torch, numpy and pip's
# pybind11), against the conveyor libraries built on the build machine: scripts/device-bundle.sh BUILD
# --python ... packed them (bundle/prefix: headers, static libraries, CMake package, dlpack's header;
# bundle/lib: the shared libraries they need). Nothing else is needed there: no TBB, OpenCV or TurboJPEG
# headers. The module finds its libraries through its RPATH, without LD_LIBRARY_PATH.
#   scripts/build_python_on_gpu_machine.sh [BUNDLE_DIR] [BUILD_DIR]
# BUNDLE_DIR: the unpacked bundle (default /tmp/bundle; unpacked from .carry/bundle.tar.xz when missing).
# BUILD_DIR: where the module goes (default build-python): PYTHONPATH=BUILD_DIR python3 -c "import conveyor"
# PYTHON: the interpreter to build for (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-/tmp/bundle}
build=${2:-build-python}
python=$(command -v "${PYTHON:-python3}")
say() { printf 'build_python_on_gpu_machine: %s\n' "$*"; }

if [ ! -d "$bundle/prefix" ]; then
  [ -f .carry/bundle.tar.xz ] || { say "no $bundle/prefix and no .carry/bundle.tar.xz (scripts/device-bundle.sh BUILD --python)"; exit 1; }
  mkdir -p "$(dirname "$bundle")"
  tar xf .carry/bundle.tar.xz -C "$(dirname "$bundle")"
  [ -d "$bundle/prefix" ] || { say "the bundle has no prefix/: it was made without --python"; exit 1; }
fi
"$python" -c 'import numpy' || { say "$python lacks numpy"; exit 1; }
say "python $("$python" -c 'import sys; print(sys.version.split()[0])') at $python, $(cmake --version | head -1)"

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S python -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$python" \
  -DCMAKE_PREFIX_PATH="$bundle/prefix" -DCONVEYOR_RUNTIME_LIBRARY_DIR="$bundle/lib" >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
grep -E '^-- (conveyor|Found)' "$build.configure.log" || true
cmake --build "$build" -j "$(nproc)"

module=$(find "$build/conveyor" -maxdepth 1 -name '_conveyor*.so' | head -1)
if ldd "$module" | grep 'not found'; then
  say "the module misses the shared libraries above"
  exit 1
fi
PYTHONPATH="$build" "$python" -c 'import conveyor; print("import conveyor:", conveyor.__file__, conveyor.__version__, "built_with_cuda =", conveyor.built_with_cuda)'
