"""Specifications of bench/nsys_overlap.py on captures written here in the tables Nsight Systems exports
(StringIds and CUPTI_ACTIVITY_KIND_KERNEL, the columns it reads) and in bench/tools/cupti_timeline's lines:
which stream is the step's, how much of its busy time other streams' kernels and the copies shared, and which
of its kernels slowed beside the feeder."""

import contextlib
import io
import json
import os
import sqlite3
import sys
import tempfile
import unittest

BENCH = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
sys.path.insert(0, BENCH)

import nsys_overlap  # noqa: E402


def capture(path, kernels):
    """A capture of `kernels`: (start_ns, end_ns, stream, name), on device 0 (and one on device 1, ignored)."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, "
               "streamId INTEGER, shortName INTEGER, demangledName INTEGER)")
    names = {}
    for start, end, stream, name in kernels + [(0, 10**9, 99, "other_device")]:
        if name not in names:
            names[name] = len(names) + 1
            db.execute("INSERT INTO StringIds VALUES (?, ?)", (names[name], name))
        device = 1 if name == "other_device" else 0
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?, ?, ?)",
                   (start, end, device, stream, names[name], names[name]))
    db.commit()
    db.close()


def timeline(path, kernels, copies=()):
    """The same `kernels` as cupti_timeline writes them (and one on device 1, ignored), with `copies`:
    (start_ns, end_ns, stream, bytes, kind)."""
    with open(path, "w") as file:
        for start, end, stream, name in kernels + [(0, 10**9, 99, "other_device")]:
            file.write(f"kernel\t{start}\t{end}\t{1 if name == 'other_device' else 0}\t{stream}\t{name}\n")
        for start, end, stream, size, kind in copies:
            file.write(f"copy\t{start}\t{end}\t0\t{stream}\t{size}\t{kind}\n")


class Intervals(unittest.TestCase):
    def test_union_and_intersection(self):
        self.assertEqual(nsys_overlap.union([(5, 8), (0, 3), (2, 4), (8, 9)]), [(0, 4), (5, 9)])
        self.assertEqual(nsys_overlap.intersection([(0, 4), (5, 9)], [(3, 6), (8, 20)]), 1 + 1 + 1)


class Captures(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.beside = os.path.join(self.tmp.name, "beside.sqlite")
        self.alone = os.path.join(self.tmp.name, "alone.sqlite")
        # Two steps of conv (6 us alone, 8 beside) and relu (2 us both) on stream 7; beside them, the feeder's
        # resize on stream 13 runs during the first conv of each step.
        capture(self.alone, [(0, 6000, 7, "conv"), (6000, 8000, 7, "relu"),
                             (10000, 16000, 7, "conv"), (16000, 18000, 7, "relu")])
        capture(self.beside, [(0, 8000, 7, "conv"), (8000, 10000, 7, "relu"),
                              (12000, 20000, 7, "conv"), (20000, 22000, 7, "relu"),
                              (1000, 5000, 13, "crop_resize"), (13000, 15000, 13, "crop_resize")])

    def tearDown(self):
        self.tmp.cleanup()

    def test_the_step_is_the_stream_with_the_most_kernel_time(self):
        s = nsys_overlap.summarize(self.beside, steps=2)
        self.assertEqual(s["step_stream"], 7)
        self.assertEqual(s["step_busy_ms"], 0.020)  # 10 + 10 us
        self.assertAlmostEqual(s["step_idle_share"], 2 / 22)  # the gap 10-12 us in 0-22 us
        self.assertAlmostEqual(s["step_busy_shared_share"], 6 / 20)  # crop_resize ran 4 + 2 us of it
        self.assertAlmostEqual(s["other_kernel_ms_per_step"], 0.003)

    def test_kernels_that_slowed_beside_the_feeder_are_named(self):
        out = os.path.join(self.tmp.name, "overlap.json")
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            nsys_overlap.main([self.beside, "--alone", self.alone, "--steps", "2", "--json", out])
        with open(out) as file:
            result = json.load(file)
        comparison = result["comparison"]
        self.assertAlmostEqual(comparison["step_kernel_time_ratio"], 20 / 16)
        slowed = comparison["slowed_most"][0]
        self.assertEqual(slowed["name"], "conv")
        self.assertAlmostEqual(slowed["ratio"], 8 / 6)
        self.assertAlmostEqual(slowed["extra_ms"], 0.004)
        self.assertIn("1.250x", printed.getvalue())

    def test_a_cupti_timeline_reads_as_the_capture_and_adds_the_copies_beside_the_step(self):
        path = os.path.join(self.tmp.name, "beside.tsv")
        kernels = [(0, 8000, 7, "conv"), (8000, 10000, 7, "relu"), (12000, 20000, 7, "conv"),
                   (20000, 22000, 7, "relu"), (1000, 5000, 13, "crop_resize"), (13000, 15000, 13, "crop_resize")]
        # The batch's copy overlaps 1 us of the first conv and 2 us of its relu (and the idle gap); a memset
        # overlaps the second step's conv and relu by 1 us each.
        timeline(path, kernels, [(7000, 11000, 17, 4096, "htod"), (19000, 21000, 17, 64, "set")])
        s = nsys_overlap.summarize(path, steps=2)
        self.assertEqual(s["step_stream"], 7)
        self.assertAlmostEqual(s["step_busy_shared_share"], 6 / 20)
        self.assertEqual(s["copies"]["htod"]["count"], 1)
        self.assertAlmostEqual(s["copies"]["htod"]["busy_ms"], 0.004)
        self.assertAlmostEqual(s["copies"]["htod"]["step_busy_shared_share"], 3 / 20)
        self.assertAlmostEqual(s["copies"]["set"]["step_busy_shared_share"], 2 / 20)
        self.assertEqual(nsys_overlap.summarize(self.beside)["copies"], {})  # nsys captures: kernels only

    def test_other_kernels_are_timed_apart_with_the_step_idle_and_beside_it(self):
        path = os.path.join(self.tmp.name, "feeder.tsv")
        # The step's conv 0-8 us and 12-20 us; resize runs 3 us in the idle 9-12 us (and 1 us after the last
        # conv), 5 us inside the first conv, 6 us across the second's start (4 us shared: beside); rgba2rgb
        # touches the first conv for 10 ns, less than 5 % of its time, and counts as idle.
        kernels = [(0, 8000, 7, "conv"), (12000, 20000, 7, "conv"),
                   (9000, 12000, 13, "resize"), (20000, 21000, 13, "resize"), (1000, 6000, 13, "resize"),
                   (10000, 16000, 13, "resize"), (7990, 11990, 14, "rgba2rgb")]
        timeline(path, kernels)
        by_name = {k["name"]: k for k in nsys_overlap.summarize(path)["other_kernels"]}
        self.assertEqual(by_name["resize"], {"name": "resize", "step_idle": 2, "beside_step": 2,
                                             "median_us_step_idle": 2.0, "median_us_beside_step": 5.5})
        self.assertEqual(by_name["rgba2rgb"]["step_idle"], 1)
        self.assertIsNone(by_name["rgba2rgb"]["median_us_beside_step"])

    def test_per_step_figures_split_the_steps_stream_at_the_marker_kernel(self):
        path = os.path.join(self.tmp.name, "steps.tsv")
        # Three steps of 10 us ending in sgd (twice: one for each weight type): conv 4 us, a 1 us launch gap,
        # relu 2 us, sgd 0.5 + 0.5 us; the second and third wait 2 us for their batch before conv. The
        # feeder's kernel on stream 13 is not the step's.
        kernels = []
        for start in (0, 10000, 20000):
            at = start + (0 if start == 0 else 2000)
            kernels += [(at, at + 4000, 7, "conv"), (at + 5000, at + 7000, 7, "relu"),
                        (start + 9000, start + 9500, 7, "sgd"), (start + 9500, start + 10000, 7, "sgd")]
        # In the whole steps' conv-relu gaps: a copy (the second step), a feeder kernel (the third).
        timeline(path, kernels + [(3000, 9000, 13, "crop_resize"), (26200, 26800, 13, "rgba2rgb")],
                 [(15500, 16500, 17, 4096, "htod")])
        s = nsys_overlap.summarize(path, steps=3, marker="sgd")
        self.assertEqual(s["per_step"]["gaps_by_company"], {
            "a copy": {"per_step": 0.5, "mean_us": 1.0, "ms_per_step": 0.0005},
            "a feeder kernel": {"per_step": 0.5, "mean_us": 1.0, "ms_per_step": 0.0005}})
        self.assertEqual(s["per_step"]["steps"], 2)  # the two whole steps after the first marker
        self.assertAlmostEqual(s["per_step"]["period_ms"], 0.010)
        self.assertAlmostEqual(s["per_step"]["busy_ms"], 0.007)
        self.assertAlmostEqual(s["per_step"]["gap_before_first_kernel_ms"], 0.002)
        self.assertAlmostEqual(s["per_step"]["gaps_inside_ms"], 0.001 + 0.0)  # conv-relu 1 us, relu-sgd none
        with self.assertRaises(ValueError) as error:
            nsys_overlap.summarize(path, steps=3, marker="adam")
        self.assertIn("adam", str(error.exception))

    def test_a_capture_without_kernels_is_an_error_that_names_it(self):
        empty = os.path.join(self.tmp.name, "empty.sqlite")
        sqlite3.connect(empty).close()
        with self.assertRaises(ValueError) as error:
            nsys_overlap.kernels(empty)
        self.assertIn("empty.sqlite", str(error.exception))
        copies_only = os.path.join(self.tmp.name, "copies_only.tsv")
        with open(copies_only, "w") as file:
            file.write("copy\t0\t10\t0\t3\t8\thtod\n")
        with self.assertRaises(ValueError) as error:
            nsys_overlap.kernels(copies_only)
        self.assertIn("copies_only.tsv", str(error.exception))


if __name__ == "__main__":
    unittest.main()
