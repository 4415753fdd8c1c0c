#!/usr/bin/env python3
"""feed_vs_prefetch on a user's own folder, on the CPU: the three modes, a progress bar per mode on stderr,
the table with each mode's ratio to feed, the JSON (every mode counted from its first batch, the older
figure beside it) and the plot beside it.

    feed_vs_prefetch_folder_test.py FEED_VS_PREFETCH MAKE_TEST_JPEGS
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

PROGRAM, MAKE_JPEGS = sys.argv[1], sys.argv[2]


class FeedVsPrefetchOnAFolder(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.folder = os.path.join(cls.dir.name, "photos")
        subprocess.run([MAKE_JPEGS, cls.folder, "2", "6", "48", "64"], check=True, timeout=60)
        cls.json = os.path.join(cls.dir.name, "fvp.json")
        cls.plot = os.path.join(cls.dir.name, "fvp.png")
        cls.done = subprocess.run(
            [PROGRAM, "--data", cls.folder, "--device", "cpu", "--steps", "3", "--warmup", "1", "--batch", "4",
             "--size", "32", "--threads", "2", "--progress", "1", "--json", cls.json, "--plot", cls.plot],
            capture_output=True, text=True, timeout=240)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def result(self):
        with open(self.json) as f:
            return json.load(f)

    def test_it_runs_the_three_modes_on_the_folder(self):
        self.assertEqual(self.done.returncode, 0, self.done.stderr)
        result = self.result()
        self.assertEqual(result["data"], self.folder)
        self.assertEqual([r["mode"] for r in result["results"]], ["feed", "parallel", "prefetch"])

    def test_each_mode_is_counted_from_its_first_batch_with_the_older_figure_beside_it(self):
        for r in self.result()["results"]:
            self.assertEqual(r["timing_rule"], "from_first_batch")
            self.assertGreater(r["images_per_s"], 0, r["mode"])
            self.assertGreater(r["images_per_s_after_warmup_steps"], 0, r["mode"])
            self.assertGreater(r["first_batch_s"], 0, r["mode"])

    def test_the_table_gives_each_modes_ratio_to_feed(self):
        rows = {line.split()[0]: line.split() for line in self.done.stdout.splitlines()
                if line.startswith(("feed ", "parallel ", "prefetch "))}  # the table's rows, not indented
        self.assertEqual(rows["feed"][-1], "1.0", self.done.stdout)
        result = {r["mode"]: r for r in self.result()["results"]}
        ratio = result["prefetch"]["images_per_s"] / result["feed"]["images_per_s"]
        self.assertAlmostEqual(float(rows["prefetch"][-1]), ratio, delta=0.1)

    def test_a_progress_bar_per_mode_goes_to_stderr(self):
        for mode in ("feed", "parallel", "prefetch"):
            self.assertIn(f"{mode}", self.done.stderr)
        self.assertEqual(self.done.stderr.count("4/4 steps"), 3, self.done.stderr)  # 1 warm-up + 3 timed
        self.assertNotIn("4/4 steps", self.done.stdout)

    def test_the_plot_is_written(self):
        self.assertIn(f"plot: {self.plot}", self.done.stdout)
        with open(self.plot, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
