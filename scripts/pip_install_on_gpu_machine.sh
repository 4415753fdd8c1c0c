#!/usr/bin/env bash
# pip-installs conveyor into the GPU machine's Python (3.12, with torch), as a user installs it into the
# environment where their PyTorch lives, then imports it from another directory and runs the README's
# PyTorch example (its ```python block, as written) on an image folder.
#   scripts/pip_install_on_gpu_machine.sh [BUNDLE_DIR (default /tmp/bundle)] [IMAGE_FOLDER]
# BUNDLE_DIR: scripts/device-bundle.sh BUILD --python ... unpacked: the machine lacks oneTBB's, OpenCV's and
# TurboJPEG's headers, so pip builds only the module, against conveyor installed in bundle/prefix, with the
# shared libraries of bundle/lib (pip's config settings conveyor-prefix and cmake.define.*; setup.py). The
# installed package carries those libraries and finds them through its RPATH: run this without
# LD_LIBRARY_PATH (bench/gpu/pip_install.sh does).
# IMAGE_FOLDER: an ImageFolder for the example (default: the bundle's make_test_jpegs makes a small one).
# PYTHON: the interpreter (default python3). When it is not a virtual environment (an externally managed
# system Python), a venv with --system-site-packages is made over it in /tmp/conveyor-venv and used.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bundle=${1:-/tmp/bundle}
images=${2:-}
python=$(command -v "${PYTHON:-python3}")
say() { printf 'pip_install_on_gpu_machine: %s\n' "$*"; }
start=$SECONDS

if [ ! -d "$bundle/prefix" ]; then
  [ -f .carry/bundle.tar.xz ] || { say "no $bundle/prefix and no .carry/bundle.tar.xz (scripts/device-bundle.sh BUILD --python)"; exit 1; }
  mkdir -p "$(dirname "$bundle")" && tar xf .carry/bundle.tar.xz -C "$(dirname "$bundle")"
  [ -d "$bundle/prefix" ] || { say "the bundle has no prefix/: it was made without --python"; exit 1; }
fi
if ! "$python" -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)'; then
  say "$python is not a virtual environment: making /tmp/conveyor-venv over it (--system-site-packages)"
  "$python" -m venv --system-site-packages /tmp/conveyor-venv
  python=/tmp/conveyor-venv/bin/python
fi
"$python" -m pip --version >/dev/null 2>&1 || { say "no pip in $python's environment: ensurepip"; "$python" -m ensurepip --default-pip; }

# The build backend (pyproject.toml): setuptools >= 61 and a bdist_wheel (setuptools >= 70.1 has its own,
# older ones need the wheel package). The bundle carries Debian's for an environment that lacks them.
# patchelf (the package's libraries are renamed at install): the bundle's where the machine has none.
command -v patchelf >/dev/null || export PATH="$bundle/bin:$PATH"
settings=(--config-settings "conveyor-prefix=$bundle/prefix"
          --config-settings "cmake.define.CONVEYOR_RUNTIME_LIBRARY_DIR=$bundle/lib")
if ! "$python" -c 'import setuptools, sys; v = tuple(int(x) for x in setuptools.__version__.split(".")[:2]); sys.exit(v < (61, 0))' 2>/dev/null; then
  say "no setuptools >= 61 here: the bundle's ($(ls "$bundle"/python/setuptools-*.whl 2>/dev/null))"
  "$python" -m pip install --no-index "$bundle"/python/setuptools-*.whl
fi
if ! "$python" -c 'import setuptools.command.bdist_wheel' 2>/dev/null && ! "$python" -c 'import wheel' 2>/dev/null; then
  say "no bdist_wheel here: the bundle's wheel package on PYTHONPATH"
  export PYTHONPATH="$bundle/python${PYTHONPATH:+:$PYTHONPATH}"
fi
# pybind11: pip's in this environment when there is one (it knows Python 3.12), else the bundle's (Debian's).
if ! "$python" -m pybind11 --cmakedir >/dev/null 2>&1; then
  say "no pybind11 in this environment: the bundle's ($bundle/pybind11)"
  settings+=(--config-settings "cmake.define.pybind11_DIR=$bundle/pybind11/lib/cmake/pybind11")
fi
say "python $("$python" -c 'import sys; print(sys.version.split()[0])') at $python; $("$python" -m pip --version); setuptools $("$python" -c 'import setuptools; print(setuptools.__version__)'); $(cmake --version | head -1)"

"$python" -m pip install --no-build-isolation --no-index "${settings[@]}" "$root"
say "installed in $((SECONDS - start)) s"

work=$(mktemp -d /tmp/conveyor-pip.XXXXXX)
cd "$work"
"$python" -c 'import conveyor, sys; print("import conveyor:", conveyor.__file__, conveyor.__version__, "built_with_cuda =", conveyor.built_with_cuda)'
module=$("$python" -c 'import conveyor._conveyor as m; print(m.__file__)')
if ldd "$module" | grep 'not found'; then
  say "the installed module misses the libraries above"
  exit 1
fi
ldd "$module" | grep -E 'libtbb|libopencv_core|libjpeg|libcudart' | sed 's/^\s*/  /'
# conveyor imported before torch: the package's libraries must not stand in for torch's or Python's own.
"$python" -c 'import conveyor, torch; print("import conveyor, then torch", torch.__version__, "and", torch.nn.__name__)'

# The README's example as written, where its "photos/train" is the image folder.
mkdir -p photos
if [ -n "$images" ]; then
  ln -s "$(cd "$images" && pwd)" photos/train
else
  # A tool of the bundle, not of the package: it finds its libraries in the bundle's folder.
  LD_LIBRARY_PATH="$bundle/lib" "$bundle/bin/make_test_jpegs" photos/train 4 64 256 320
fi
"$python" - "$root/README.md" >readme_example.py <<'EXTRACT'
import re, sys
blocks = re.findall(r"```python\n(.*?)```", open(sys.argv[1]).read(), re.S)
torch_blocks = [b for b in blocks if "torch.from_dlpack" in b]
if not torch_blocks:
    sys.exit("README.md has no ```python block with torch.from_dlpack")
print(torch_blocks[0], end="")
EXTRACT
say "the README's PyTorch example ($(wc -l <readme_example.py) lines) on $(find -L photos/train -name '*.jpg' | wc -l) images"
timeout 400 "$python" readme_example.py
say "done in $((SECONDS - start)) s"
