"""Specifications of bench/summarize_scale.py (issue 17's figures from gpu_run.sh's two-GPU phases) on
made-up feed_vs_prefetch JSON: the scaling per pair and its median, and the step-by-step loss comparison
of two GPUs x 256 against one GPU x 512."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

BENCH = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
sys.path.insert(0, BENCH)

import summarize_scale  # noqa: E402


def write(folder, name, images_per_s, idle=0.1, losses=None):
    result = {"mode": "prefetch", "images_per_s": images_per_s, "idle_fraction": idle, "step_ms_median": 20.0,
              "step_ms_p95": 22.0}
    if losses is not None:
        result["losses"] = losses
    with open(os.path.join(folder, name), "w") as file:
        json.dump({"results": [result]}, file)


def summary(folder):
    out, argv = io.StringIO(), sys.argv
    try:
        sys.argv = ["summarize_scale.py", folder]
        with contextlib.redirect_stdout(out):
            summarize_scale.main()
    finally:
        sys.argv = argv
    return out.getvalue()


class Scaling(unittest.TestCase):
    def test_the_two_ranks_are_summed_and_the_pairs_median_is_judged_against_1_9(self):
        with tempfile.TemporaryDirectory() as folder:
            for i, (one, per_rank) in enumerate([(1000, 900), (1000, 980)], start=1):
                write(folder, f"scale_1gpu_{i}.json", one)
                for rank in (0, 1):
                    write(folder, f"scale_2gpu_{i}.rank{rank}.json", per_rank)
            text = summary(folder)
        self.assertIn("scaling 1.800", text)
        self.assertIn("scaling 1.960", text)
        self.assertIn("median of the pairs: 1.880 (target 1.9: not met)", text)


class Losses(unittest.TestCase):
    def test_the_first_step_more_than_two_percent_apart_is_named_per_precision(self):
        with tempfile.TemporaryDirectory() as folder:
            one = [4.0, 3.9, 3.8, 3.7, 3.6]
            write(folder, "losses_fp32_1gpu_batch512.json", 1000, losses=one)
            write(folder, "losses_fp32_2gpu.rank0.json", 1000, losses=[x * 1.01 for x in one])
            write(folder, "losses_bf16_1gpu_batch512.json", 1000, losses=one)
            write(folder, "losses_bf16_2gpu.rank0.json", 1000, losses=one[:3] + [3.7 * 1.05, 3.6 * 1.10])
            text = summary(folder)
        self.assertIn("fp32: first 5 losses", text)
        self.assertIn("worst relative difference 0.0100; first step more than 2 % apart: none", text)
        self.assertIn("bf16: first 5 losses", text)
        self.assertIn("worst relative difference 0.1000; first step more than 2 % apart: 3", text)

    def test_missing_runs_print_nothing_for_that_comparison(self):
        with tempfile.TemporaryDirectory() as folder:
            write(folder, "losses_fp32_1gpu_batch512.json", 1000, losses=[1.0])
            self.assertNotIn("fp32:", summary(folder))


if __name__ == "__main__":
    unittest.main()
