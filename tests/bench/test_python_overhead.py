"""Specifications of python_overhead.py's and pipeline_throughput.py's logic that needs neither the module
nor a GPU: the overhead and its verdict, the two command lines, the timing rule shared with the C++
program. (tests/python/test_bench_scripts.py runs both scripts end to end.)"""
import os
import sys
import unittest

PIPELINE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "pipeline"))
sys.path.insert(0, PIPELINE)

import pipeline_throughput  # noqa: E402
import python_overhead  # noqa: E402


def pair(cpp, python):
    return {"cpp": {"images_per_s": cpp}, "python": {"images_per_s": python}}


class Overhead(unittest.TestCase):
    def test_overhead_is_how_much_slower_python_is(self):
        self.assertAlmostEqual(python_overhead.overhead(98.0, 100.0), 0.02)
        self.assertAlmostEqual(python_overhead.overhead(101.0, 100.0), -0.01)
        self.assertIsNone(python_overhead.overhead(98.0, 0.0))

    def test_summary_takes_the_medians_of_each_side(self):
        s = python_overhead.summarize([pair(100, 99), pair(90, 95), pair(110, 101)])
        self.assertEqual((s["cpp_images_per_s_median"], s["python_images_per_s_median"]), (100, 99))
        self.assertAlmostEqual(s["overhead"], 0.01)
        self.assertTrue(s["met"])
        self.assertAlmostEqual(s["per_pair_overhead"][1], 1 - 95 / 90)

    def test_more_than_two_percent_is_not_met(self):
        s = python_overhead.summarize([pair(100, 97.9)])
        self.assertFalse(s["met"])


class CommandLines(unittest.TestCase):
    def test_both_sides_get_the_same_settings_and_the_cpp_side_skips_its_checksum(self):
        args = python_overhead.parse_args(["--cpp", "bin/pipeline_throughput", "--conveyor-python", "build/python",
                                           "--data", "set", "--threads", "16", "--epochs", "4", "--seed", "7"])
        lines = python_overhead.commands(args, {"cpp": "c.json", "python": "p.json"})
        cpp, python = lines["cpp"], lines["python"]
        self.assertEqual(cpp[0], "bin/pipeline_throughput")
        self.assertTrue(python[1].endswith("pipeline_throughput.py"))
        shared = ["--data", "set", "--threads", "16", "--batch", "256", "--size", "224", "--epochs", "4",
                  "--seed", "7"]
        self.assertEqual(cpp[1:1 + len(shared)], shared)
        self.assertEqual(python[2:2 + len(shared)], shared)
        self.assertEqual(cpp[-4:], ["--checksum", "0", "--json", "c.json"])
        self.assertEqual(python[-4:], ["--conveyor-python", "build/python", "--json", "p.json"])


class TimingRule(unittest.TestCase):
    def test_the_headline_clock_starts_at_the_first_batch_as_in_the_cpp_program(self):
        arrivals = [(1.0, 10), (1.5, 10), (2.0, 10), (3.0, 10)]
        f = pipeline_throughput.figures(arrivals, start=0.0, end=4.0, threads=2)
        self.assertEqual(f["timing_rule"], "from_first_batch")
        self.assertAlmostEqual(f["images_per_s"], 30 / (4.0 - 1.0))
        self.assertAlmostEqual(f["images_per_s_after_first_batch"], f["images_per_s"])
        self.assertEqual(f["warmup_batches"], 2)
        self.assertAlmostEqual(f["images_per_s_after_warmup_batches"], 20 / (4.0 - 1.5))
        self.assertAlmostEqual(f["images_per_s_overall"], 40 / 4.0)
        self.assertEqual((f["images"], f["time_to_first_batch_s"], f["steady_s"]), (40, 1.0, 2.5))

    def test_a_short_run_keeps_half_of_its_batches_for_the_measurement(self):
        arrivals = [(t, 1) for t in range(1, 7)]
        self.assertEqual(pipeline_throughput.figures(arrivals, 0.0, 7.0, threads=16)["warmup_batches"], 3)


if __name__ == "__main__":
    unittest.main()
