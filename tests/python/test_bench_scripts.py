"""The Python-overhead benchmark's two scripts end to end on a small folder (speeds are not checked, only
that they measure what they say): pipeline_throughput.py through the module, and python_overhead.py
running it against the C++ pipeline_throughput (CONVEYOR_PIPELINE_THROUGHPUT, or the build folder's;
skipped when there is none)."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from support import REPO, conveyor

PIPELINE = REPO / "bench" / "pipeline"
MODULE_DIR = str(pathlib.Path(conveyor.__file__).parents[1])  # the folder that holds the package
SETTINGS = ["--threads", "2", "--batch", "8", "--size", "32", "--epochs", "2", "--seed", "3"]


def run(args):
    done = subprocess.run([sys.executable, "-B"] + args, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_pipeline_throughput_py_counts_every_image_with_the_cpp_timing_rule(image_folder, tmp_path):
    out = tmp_path / "python.json"
    printed = run([str(PIPELINE / "pipeline_throughput.py"), "--data", str(image_folder), "--conveyor-python",
                   MODULE_DIR, "--json", str(out)] + SETTINGS)
    result = json.loads(out.read_text())
    assert result["images"] == 48 and result["skipped"] == 0
    assert result["warmup_batches"] == 2 and result["threads"] == 2
    for key in ("images_per_s", "images_per_s_after_first_batch", "images_per_s_overall"):
        assert result[key] > 0, key
    assert result["config"]["batch"] == 8 and result["commit"] and result["machine"]["nproc"]
    assert "threads 2:" in printed


def test_python_overhead_runs_both_sides_alternately(image_folder, tmp_path):
    cpp = os.environ.get("CONVEYOR_PIPELINE_THROUGHPUT") or \
        pathlib.Path(MODULE_DIR).parent / "bench" / "pipeline" / "pipeline_throughput"
    if not os.access(cpp, os.X_OK):
        pytest.skip(f"no {cpp} (benchmarks not built)")
    out = tmp_path / "overhead.json"
    printed = run([str(PIPELINE / "python_overhead.py"), "--cpp", str(cpp), "--conveyor-python", MODULE_DIR,
                   "--data", str(image_folder), "--pairs", "2", "--json", str(out)] + SETTINGS)
    result = json.loads(out.read_text())
    assert len(result["pairs"]) == 2
    for pair in result["pairs"]:
        assert pair["cpp"]["images"] == pair["python"]["images"] == 48
        assert pair["cpp"]["checksum"] == "off"
    assert isinstance(result["overhead"], float) and "Python overhead" in printed
