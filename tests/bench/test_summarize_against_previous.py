"""Specifications of bench/summarize_against_previous.py (a build against a previous binary, alternating
pairs) on made-up JSON: ratios within a round, medians over the rounds, lone sides left out."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

BENCH = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
sys.path.insert(0, BENCH)

import summarize_against_previous  # noqa: E402


def write(folder, name, rate):
    with open(os.path.join(folder, name), "w") as file:
        json.dump({"images_per_s": rate}, file)


def summarize(folder):
    with contextlib.redirect_stdout(io.StringIO()) as out:
        summarize_against_previous.main(["summarize_against_previous.py", folder])
    with open(os.path.join(folder, "summary.json")) as file:
        return json.load(file), out.getvalue()


class AgainstPrevious(unittest.TestCase):
    def test_each_measurement_is_the_median_of_its_rounds_ratios(self):
        with tempfile.TemporaryDirectory() as folder:
            for round_, current, previous in ((1, 100.0, 100.0), (2, 97.0, 100.0), (3, 104.0, 100.0)):
                write(folder, f"segmentation_current_{round_}.json", current)
                write(folder, f"segmentation_previous_{round_}.json", previous)
            write(folder, "step_current_1.json", 17500.0)
            write(folder, "step_previous_1.json", 17000.0)
            summary, text = summarize(folder)
        self.assertEqual(summary["segmentation"]["ratios"], [1.0, 0.97, 1.04])
        self.assertEqual(summary["segmentation"]["ratio_median"], 1.0)
        self.assertAlmostEqual(summary["step"]["ratio_median"], 17500 / 17000)
        self.assertIn("segmentation: current 100 img/s, previous 100 img/s (medians); current / previous: "
                      "median 1.000 over 3 round(s) (1.000, 0.970, 1.040)", text)

    def test_a_round_with_one_side_only_is_left_out(self):
        with tempfile.TemporaryDirectory() as folder:
            write(folder, "detection_current_1.json", 50.0)
            write(folder, "detection_previous_1.json", 100.0)
            write(folder, "detection_current_2.json", 90.0)
            summary, _ = summarize(folder)
        self.assertEqual(summary["detection"]["rounds"], [1])
        self.assertEqual(summary["detection"]["ratio_median"], 0.5)


if __name__ == "__main__":
    unittest.main()
