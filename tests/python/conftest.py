"""Shared set-up of the Python module's tests: the module, a watchdog, and real JPEGs made by the C++
tests' fixtures (make_test_jpegs; CTest passes its path in CONVEYOR_MAKE_TEST_JPEGS)."""
import faulthandler
import pathlib
import subprocess

import pytest

from support import conveyor, image_tool

WATCHDOG_S = 120  # per test: a hang dumps every thread's stack and ends the process


@pytest.fixture(autouse=True)
def watchdog():
    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def make_images(out, classes=3, per_class=8, height=48, width=64):
    tool = image_tool()
    if tool is None:
        pytest.skip("no make_test_jpegs (set CONVEYOR_MAKE_TEST_JPEGS, or build it: tests/python)")
    subprocess.run([tool, str(out), str(classes), str(per_class), str(height), str(width)], check=True, timeout=60)
    return out


@pytest.fixture(scope="session")
def image_folder(tmp_path_factory):
    """3 classes of 8 JPEGs, about 48 x 64 to 66 x 80."""
    return make_images(tmp_path_factory.mktemp("images") / "train")


@pytest.fixture(scope="session")
def large_folder(tmp_path_factory):
    """2 classes of 40 JPEGs of about 160 x 200, for batches big enough to make leaks visible."""
    return make_images(tmp_path_factory.mktemp("large") / "train", classes=2, per_class=40, height=160, width=200)


@pytest.fixture(scope="session")
def image_paths(image_folder):
    return sorted(str(p) for p in pathlib.Path(image_folder).rglob("*.jpg"))
