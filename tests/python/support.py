"""What the tests share besides fixtures: the module (from PYTHONPATH, or from the build folder when run by
hand), the fixture tool's path, and small helpers."""
import hashlib
import os
import pathlib
import shutil
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]

# Where torch is installed (the GPU machine), it is loaded first: torch and the module both need
# libcudart.so.13, a process keeps the first one it loads, and torch's may be newer than the toolkit the
# module was built with (the module works with a newer one, torch perhaps not with an older one).
try:
    import torch  # noqa: F401
except ImportError:
    pass

try:
    import conveyor
except ImportError:  # run by hand: python3 -m pytest tests/python, after ./conveyor.sh build
    sys.path.insert(0, str(REPO / "build" / "python"))
    import conveyor

import numpy

IMAGENET_MEAN = [123.675, 116.28, 103.53]
IMAGENET_STD = [58.395, 57.12, 57.375]


def image_tool():
    """The make_test_jpegs program, or None."""
    tool = os.environ.get("CONVEYOR_MAKE_TEST_JPEGS") or str(REPO / "build" / "tests" / "python" / "make_test_jpegs")
    return tool if shutil.which(tool) else None


def train_chain(folder, size=32, threads=2, seed=7, epochs=1):
    """The issue's training chain on a small folder (shuffle, repeat, RRC, flip, distort)."""
    return (conveyor.Dataset.image_folder(folder)
            .shuffle(100, seed=seed).repeat(epochs)
            .map(conveyor.ops.decode_random_resized_crop(size))
            .map(conveyor.ops.flip_horizontal(0.5))
            .map(conveyor.ops.distort(brightness=0.4, contrast=0.4, saturation=0.4))
            .with_options(threads=threads, seed=seed))


def digest(batches):
    """A hash of every batch's pixels and labels, in order (numpy.from_dlpack: no copy)."""
    h = hashlib.sha256()
    for batch in batches:
        h.update(numpy.from_dlpack(batch.images).tobytes())
        h.update(numpy.from_dlpack(batch.labels).tobytes())
    return h.hexdigest()


def thread_count():
    return len(os.listdir("/proc/self/task"))


def resident_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
