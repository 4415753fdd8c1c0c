#!/usr/bin/env bash
# Packs what a run on the GPU machine needs into .carry/ (git-ignored), within the 64 MiB that travels:
# the chosen binaries from BUILD_DIR (stripped) with the shared libraries they need that the GPU machine
# lacks and the device helper scripts, as one compressed archive; optionally the photos the ImageNet-like
# set is made from (--photos, 15 MB) and Fashion-MNIST's IDX files (--fashion, 30 MB), which are
# already compressed. --python adds what building the Python module there needs (the GPU machine has
# Python 3.12 but not conveyor's dependencies' headers): conveyor installed from BUILD_DIR
# (headers, static libraries, CMake package) as bundle/prefix with dlpack's header, the shared libraries
# the module links into bundle/lib, make_test_jpegs for its tests (scripts/build_python_on_gpu_machine.sh),
# and for a pip install there (scripts/pip_install_on_gpu_machine.sh) Debian's pybind11 (bundle/pybind11,
# used where the machine's Python has none), setuptools wheel and wheel package (bundle/python, used where
# its environment lacks them) and patchelf (bundle/bin).
#   scripts/device-bundle.sh BUILD_DIR [--photos] [--fashion] [--python] [--symbols] BINARY_NAME...
# (--symbols keeps the binaries' symbol tables, so that bench/gpu/lib.sh's stacks of a hang name functions)
# On the GPU machine: tar xf .carry/bundle.tar.xz -C /tmp && source /tmp/bundle/tools/device-env /tmp/bundle/lib
set -euo pipefail
cd "$(dirname "$0")/.."
# The device helpers (device-libs, device-env) live in the shared folder beside the checkout unless
# CONVEYOR_DEVICE_TOOLS names another place.
tools=${CONVEYOR_DEVICE_TOOLS:-$(cd .. && pwd)/shared/tools}
[ -x "$tools/device-libs" ] || { echo "device-bundle: no device-libs in $tools (set CONVEYOR_DEVICE_TOOLS)" >&2; exit 1; }
build=$1; shift
photos=0 fashion=0 python=0 strip_flags=()
rm -rf .carry && mkdir -p .carry
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bundle/bin" "$stage/bundle/lib" "$stage/bundle/tools"
for name in "$@"; do
  case "$name" in
    --photos) photos=1; continue ;;
    --fashion) fashion=1; continue ;;
    --python) python=1; continue ;;
    --symbols) strip_flags=(--strip-debug); continue ;;  # function names stay, for stacks of a hang
  esac
  bin=$(find "$build" -type f -name "$name" -perm -u+x | head -1)
  [ -n "$bin" ] || { echo "device-bundle: no binary $name in $build" >&2; exit 1; }
  strip "${strip_flags[@]}" -o "$stage/bundle/bin/$name" "$bin"
done
needs=("$stage"/bundle/bin/*)  # the binaries whose shared libraries device-libs copies
if [ $python -eq 1 ]; then
  module=$(find "$build/python/conveyor" -maxdepth 1 -name '_conveyor*.so' | head -1)
  [ -n "$module" ] || { echo "device-bundle: no Python module in $build/python (build it first)" >&2; exit 1; }
  strip -o "$stage/bundle/bin/make_test_jpegs" "$build/tests/python/make_test_jpegs"
  cmake --install "$build" --prefix "$stage/bundle/prefix" >/dev/null
  # conveyor's public headers include <dlpack/dlpack.h>: the one the libraries were built with.
  dlpack=$(printf '#include <dlpack/dlpack.h>\n' | g++ -M -x c++ - | tr ' ' '\n' | grep 'dlpack/dlpack.h$')
  mkdir -p "$stage/bundle/prefix/include/dlpack" && cp "$dlpack" "$stage/bundle/prefix/include/dlpack/"
  needs+=("$module" "$stage/bundle/bin/make_test_jpegs")
  # pybind11's headers and CMake package keep their relative layout (its config finds ../../../include).
  mkdir -p "$stage/bundle/pybind11/include" "$stage/bundle/pybind11/lib/cmake"
  cp -r /usr/include/pybind11 "$stage/bundle/pybind11/include/"
  cp -r /usr/lib/cmake/pybind11 "$stage/bundle/pybind11/lib/cmake/"
  mkdir -p "$stage/bundle/python"
  cp /usr/share/python-wheels/setuptools-*.whl "$stage/bundle/python/"
  # patchelf renames the package's libraries at install (python/cmake/BundleRuntimeLibraries.cmake).
  cp "$(command -v patchelf)" "$stage/bundle/bin/patchelf"
  cp -r "$(python3 -c 'import os, wheel; print(os.path.dirname(wheel.__file__))' 2>/dev/null ||
           echo /usr/lib/python3/dist-packages/wheel)" "$stage/bundle/python/"
fi
"$tools/device-libs" "$stage/bundle/lib" "${needs[@]}" >/dev/null
# oneTBB's scalable allocator, for the benchmark variant that preloads it.
libdir=$(dirname "$(ldconfig -p | awk '/libtbbmalloc.so.2 / {print $NF; exit}')")
cp -L "$libdir/libtbbmalloc.so.2" "$libdir/libtbbmalloc_proxy.so.2" "$stage/bundle/lib/"
cp "$tools/device-env" "$stage/bundle/tools/"
tar -C "$stage" -cJf .carry/bundle.tar.xz bundle
# The commit the binaries were built at, for every record made from them (the GPU machine's copy of the tree
# may answer git with another one).
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit+uncommitted changes"
echo "$commit" >.carry/commit
[ $photos -eq 0 ] || data/pack_photo_sources.sh .carry/photos "$build" >/dev/null
if [ $fashion -eq 1 ]; then mkdir -p .carry/fashion-mnist && cp /usr/share/datasets/fashion-mnist/*.gz .carry/fashion-mnist/; fi
du -sh .carry/* | sed 's/^/device-bundle: /'
du -sh .carry | sed 's/^/device-bundle: total /'
