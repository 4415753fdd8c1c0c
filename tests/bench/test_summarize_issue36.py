"""Specifications of bench/summarize_issue36.py (issue 36's figures from gpu_run.sh's issue36-* phases) on
made-up JSON: ranks summed, ratios taken within a round, medians judged against the issue's targets."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

BENCH = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
sys.path.insert(0, BENCH)

import summarize_issue36  # noqa: E402


def write(folder, name, data):
    with open(os.path.join(folder, name), "w") as file:
        json.dump(data, file)


def fvp(images_per_s, idle=0.02, idle_per_gpu=None, stalls=0):
    result = {"mode": "prefetch", "images_per_s": images_per_s, "idle_fraction": idle, "compute_ms": 15.0,
              "gpu_decoded_fraction": 0.4, "stall_reports": stalls}
    if idle_per_gpu is not None:
        result["idle_per_gpu"] = idle_per_gpu
    return {"results": [result]}


def run(part, folder):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        summarize_issue36.__dict__[part](folder)
    return out.getvalue()


class Scale(unittest.TestCase):
    def test_ranks_are_summed_and_each_round_is_against_its_own_one_gpu(self):
        with tempfile.TemporaryDirectory() as folder:
            for round_, one in ((1, 16000), (2, 18000)):
                write(folder, f"one_{round_}.json", fvp(one))
                write(folder, f"two_{round_}.rank0.json", fvp(one * 0.96))
                write(folder, f"two_{round_}.rank1.json", fvp(one * 0.96))
                write(folder, f"inproc_{round_}.json", fvp(one * 1.8, idle_per_gpu=[0.03, 0.04]))
            text = run("scale", folder)
        self.assertIn("two processes / one GPU: median 1.920x over 2 round(s)", text)
        self.assertIn("target 1.9x: met", text)
        self.assertIn("one process, two GPUs / one GPU: median 1.800x", text)
        self.assertIn("idle per GPU 3.0 %, 4.0 %", text)


class Fvp(unittest.TestCase):
    def test_prefetch_is_judged_against_the_same_rounds_step(self):
        with tempfile.TemporaryDirectory() as folder:
            for round_ in (1, 2, 3):
                write(folder, f"step_{round_}.json", {"images_per_s": 17500.0})
                write(folder, f"pool_{round_}.json", fvp(17000.0))
                write(folder, f"nopool_{round_}.json", fvp(16300.0))
                write(folder, f"blocks2_{round_}.json", fvp(17200.0))
            text = run("fvp", folder)
        self.assertIn("nvJPEG pool on (the defaults): median 0.971 over 3 round(s)", text)
        self.assertIn("target 0.97: met", text)
        self.assertIn("pool off (before issue 36): median 0.931", text)
        self.assertIn("pool (defaults) / nopool, round by round: median 1.043x", text)
        self.assertIn("prefetch / train_step_bench, blocks2: median 0.983", text)


class Start(unittest.TestCase):
    def test_first_batch_rates_against_the_runs_own_and_the_dataloaders(self):
        with tempfile.TemporaryDirectory() as folder:
            write(folder, "torch_1.json", {"images_per_s_after_first_batch": 3000.0})
            write(folder, "new_1.json", {"images_per_s_after_first_batch": 25000.0, "images_per_s": 26000.0})
            write(folder, "old_1.json", {"images_per_s_after_first_batch": 17000.0, "images_per_s": 24000.0})
            text = run("start", folder)
        self.assertIn("with warm-up, remembered split, pool: first batch / after 16: median 0.962", text)
        self.assertIn("first batch / DataLoader first batch: median 8.333x", text)
        self.assertIn("without them (before issue 36): first batch / after 16: median 0.708", text)


class Hang(unittest.TestCase):
    def test_runs_without_a_json_did_not_end(self):
        with tempfile.TemporaryDirectory() as folder:
            for i in (1, 2, 3):
                open(os.path.join(folder, f"fvp_{i}.log"), "w").close()
            write(folder, "fvp_1.json", fvp(28000.0))
            write(folder, "fvp_2.json", fvp(27000.0))
            text = run("hang", folder)
        self.assertIn("2 of 3 runs ended", text)


if __name__ == "__main__":
    unittest.main()
