"""conveyor: a C++ input pipeline that keeps GPUs fed, with batches handed to numpy and PyTorch through
DLPack without a copy.

    import conveyor
    ds = (conveyor.Dataset.image_folder("photos/train").shuffle().repeat()
          .map(conveyor.ops.decode_random_resized_crop(224))
          .map(conveyor.ops.flip_horizontal(0.5))
          .with_options(threads=8, seed=42).batch(256).prefetch(4))
    for batch in ds:
        images = numpy.from_dlpack(batch.images)

The classes and functions are conveyor's C++ API with the same names, from the extension module
conveyor._conveyor (pybind11). `python -m conveyor.bench DIR` measures the pipeline on your own images.
"""
import glob as _glob
import importlib.util as _importlib_util
import os as _os


def _preload_torch_cuda_runtime():
    """Where PyTorch's CUDA wheels are installed, loads their CUDA runtimes before the extension.

    The extension of a GPU build needs libcudart.so.13, and a process keeps the first library of that
    name it loads. Imported before torch, the extension would load the toolkit's copy and torch would then
    get it too, while torch may need its own, newer one; loaded from torch's wheels first, both share
    that one (the extension works with a newer runtime than it was built with)."""
    spec = _importlib_util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return
    import ctypes
    for root in spec.submodule_search_locations:
        for library in sorted(_glob.glob(_os.path.join(root, "*", "lib", "libcudart.so.*"))):
            ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)


_preload_torch_cuda_runtime()

from . import _conveyor  # noqa: E402
from ._conveyor import *  # noqa: E402,F401,F403
from ._conveyor import __version__, built_with_cuda, ops  # noqa: E402,F401


def _present_as_conveyor(namespace):
    """Shows the extension's classes as conveyor.X (help(), repr) rather than conveyor._conveyor.X."""
    for value in list(namespace.values()):
        if isinstance(value, type) and getattr(value, "__module__", "").startswith("conveyor._conveyor"):
            value.__module__ = "conveyor"


_present_as_conveyor(_conveyor.__dict__)
