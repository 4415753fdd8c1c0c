"""Specifications of bench/train/summarize_seam.py (issue 34's figures from gpu_run.sh's seam phases) on
made-up results: the new binary's step against the previous one's, pair by pair, judged on the median of
the pairs' ratios; the other targets judged from their own files; a figure that is missing is unknown, not
a pass."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN_BENCH = os.path.normpath(os.path.join(HERE, "..", "..", "bench", "train"))
sys.path.insert(0, TRAIN_BENCH)

import summarize_seam  # noqa: E402


def write(folder, name, content):
    with open(os.path.join(folder, name), "w") as file:
        file.write(content if isinstance(content, str) else json.dumps(content))


def summary(folder):
    argv = sys.argv
    try:
        sys.argv = ["summarize_seam.py", folder]
        with contextlib.redirect_stdout(io.StringIO()):
            summarize_seam.main()
    finally:
        sys.argv = argv
    with open(os.path.join(folder, "seam_summary.json")) as file:
        return json.load(file)


def pairs(folder, new, prev, warmup=0.4):
    for i, (n, p) in enumerate(zip(new, prev), 1):
        write(folder, f"seam_step_new_{i}.json", {"images_per_s": n, "warmup_s": warmup})
        write(folder, f"seam_step_prev_{i}.json", {"images_per_s": p, "warmup_s": warmup})


class StepAgainstThePreviousBinary(unittest.TestCase):
    def test_the_median_of_the_pairs_ratios_is_judged_against_98_percent(self):
        with tempfile.TemporaryDirectory() as folder:
            # Pair 2 drifted: the median of the ratios (0.99, 0.50, 0.99) is 0.99 and holds.
            pairs(folder, [17300, 8000, 17400], [17475, 16000, 17576])
            s = summary(folder)
            self.assertAlmostEqual(s["train_step_bench"]["median_pair_ratio"], 0.99, places=3)
            self.assertTrue(s["targets"]["step within 2 % of the previous binary"])

    def test_a_step_three_percent_slower_fails(self):
        with tempfile.TemporaryDirectory() as folder:
            pairs(folder, [16975, 16975, 16975], [17500, 17500, 17500])
            self.assertFalse(summary(folder)["targets"]["step within 2 % of the previous binary"])

    def test_the_warm_up_with_a_warm_cache_is_judged_against_half_a_second(self):
        with tempfile.TemporaryDirectory() as folder:
            pairs(folder, [17500] * 3, [17500] * 3, warmup=0.62)
            self.assertFalse(summary(folder)["targets"]["warm-up with a warm cache <= 0.5 s"])


class OtherTargets(unittest.TestCase):
    def test_each_target_is_read_from_its_own_file(self):
        with tempfile.TemporaryDirectory() as folder:
            pairs(folder, [17500] * 3, [17400] * 3)
            write(folder, "seam_torch_max_autotune.json", {"images_per_s": 16778, "first_step_s": 264.9})
            write(folder, "seam_fashion.json", {"summary": {"fast15": {
                "median_final_test_accuracy": 0.9418, "median_seconds_training_and_evaluation": 7.14}}})
            write(folder, "seam_custom_network_gpu.log", "step 60/60: loss 0.61\nfinal loss 2.2221 -> 0.7216\n")
            write(folder, "conveyor_train_gpu_tests.log", "[  PASSED  ] 88 tests.\n")
            t = summary(folder)["targets"]
            self.assertTrue(t["ahead of torch.compile max-autotune"])
            self.assertTrue(t["fashion-mnist median of 3 seeds >= 94.0 %"])
            self.assertTrue(t["fashion-mnist in <= 8 s"])
            self.assertTrue(t["custom_network loss falls on the GPU"])
            self.assertTrue(t["every GPU test of the train wing passes"])

    def test_a_missing_figure_is_unknown_and_a_failed_test_program_fails(self):
        with tempfile.TemporaryDirectory() as folder:
            write(folder, "conveyor_train_gpu_tests.log", "[  FAILED  ] 1 test\n")
            write(folder, "tests_failed", "conveyor_train_gpu_tests\n")
            t = summary(folder)["targets"]
            self.assertIsNone(t["step within 2 % of the previous binary"])
            self.assertIsNone(t["ahead of torch.compile max-autotune"])
            self.assertIsNone(t["custom_network loss falls on the GPU"])
            self.assertFalse(t["every GPU test of the train wing passes"])


if __name__ == "__main__":
    unittest.main()
