#!/usr/bin/env bash
# Issue 33's install target, timed step by step: a clean clone, ./conveyor.sh deps, a venv, the README's
# pip line, then from another directory `import conveyor` and a few batches of a small folder through
# numpy.from_dlpack. A bare Debian 12 has no CUDA: the toolkit of the build machine is hidden in a mount
# namespace (and its nvcc wrapper), so CMake finds no CUDA compiler, as there. No ccache; a clean
# environment (Debian's python3 first on the PATH).
#   unshare --mount bash run.sh REPOSITORY BRANCH OUT_DIR
set -euo pipefail
repo=$1 branch=$2 out=$3
mount --bind "$(mktemp -d)" /usr/local/cuda-13.0
touch /tmp/not-nvcc && mount --bind /tmp/not-nvcc /usr/local/bin/nvcc
work=$(mktemp -d /tmp/pip-target.XXXXXX)
exec env -i HOME="$work" PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  LANG=C.UTF-8 bash -s "$repo" "$branch" "$work" "$out" <<'STEPS'
set -euo pipefail
repo=$1 branch=$2 work=$3 out=$4
begin=$SECONDS
step() { local s=$SECONDS; "$@"; printf 'step: %s: %d s\n' "$*" $((SECONDS - s)) | tee -a "$out/steps.txt"; }
: >"$out/steps.txt"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), load $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/machine.txt"
step git clone -q --branch "$branch" "$repo" "$work/conveyor"
cd "$work/conveyor"
git log -1 --format='commit %h %s' | tee -a "$out/machine.txt"
step ./conveyor.sh deps
step python3 -m venv --system-site-packages .venv
. .venv/bin/activate
step pip install --no-build-isolation .
make_images() { mkdir -p "$work/photos"; python3 - "$work/photos/train" <<'PY'
import numpy, os, sys
from PIL import Image  # python3-pil, which deps' python3-matplotlib brings
# 2 classes x 12 small JPEGs of noise.
root = sys.argv[1]
for c in range(2):
    os.makedirs(f"{root}/c{c}", exist_ok=True)
    for i in range(12):
        rng = numpy.random.default_rng(c * 100 + i)
        Image.fromarray(rng.integers(0, 255, (96, 128, 3), dtype=numpy.uint8)).save(f"{root}/c{c}/{i:03}.jpg")
PY
}
step make_images
cd "$work"
use() { python3 - "$work/photos/train" <<'PY'
import sys, conveyor, numpy
print("import conveyor:", conveyor.__file__, conveyor.__version__, "built_with_cuda =", conveyor.built_with_cuda)
ds = (conveyor.Dataset.image_folder(sys.argv[1]).shuffle().repeat(2)    # 48 images: 6 batches of 8
      .map(conveyor.ops.decode_random_resized_crop(64)).map(conveyor.ops.flip_horizontal(0.5))
      .with_options(threads=2, seed=1).batch(8))
for i, batch in enumerate(ds):
    images, labels = numpy.from_dlpack(batch.images), numpy.from_dlpack(batch.labels)
    print("batch", i, images.shape, images.dtype, labels.tolist())
PY
}
step use
printf 'total: %d s\n' $((SECONDS - begin)) | tee -a "$out/steps.txt"
STEPS
