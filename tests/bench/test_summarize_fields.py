"""Specifications of bench/summarize_fields.py (bench/gpu/fields_vs_peers.sh's figures) on made-up
pipeline_throughput and torch_fields JSON: medians of each side's rate counted from the first batch, and
the median of the pairs' ratios."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

BENCH = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
sys.path.insert(0, BENCH)

import summarize_fields  # noqa: E402


def write(folder, name, rate, startup=1.0, **extra):
    record = {"images_per_s_after_first_batch": rate, "images_per_s": rate * 1.1, "time_to_first_batch_s": startup}
    record.update(extra)
    with open(os.path.join(folder, name), "w") as file:
        json.dump(record, file)


def summarize(folder):
    with contextlib.redirect_stdout(io.StringIO()) as out:
        summarize_fields.main(["summarize_fields.py", folder])
    with open(os.path.join(folder, "fields_summary.json")) as file:
        return json.load(file), out.getvalue()


class FieldsSummary(unittest.TestCase):
    def test_ratios_are_the_median_of_the_pairs_and_rates_count_from_the_first_batch(self):
        with tempfile.TemporaryDirectory() as folder:
            for i, (ours, theirs) in enumerate([(3000, 1000), (3300, 1000), (2400, 1200)], 1):
                write(folder, f"fields_segmentation_{i}_conveyor.json", ours)
                write(folder, f"fields_segmentation_{i}_torch.json", theirs, antialias=False)
            summary, text = summarize(folder)
            s = summary["segmentation"]
            self.assertEqual(s["pairs"], 3)
            self.assertAlmostEqual(s["ratio_median"], 3.0)
            self.assertEqual(s["conveyor_median"], 3000)
            self.assertEqual(s["torch_antialias"], [False, False, False])
            self.assertIsNone(summary["detection"])
            self.assertIn("segmentation: 3 pairs", text)

    def test_a_pair_without_its_partner_is_left_out(self):
        with tempfile.TemporaryDirectory() as folder:
            write(folder, "fields_detection_1_conveyor.json", 2000)
            write(folder, "fields_detection_1_torch.json", 500)
            write(folder, "fields_detection_2_conveyor.json", 9000)
            summary, _ = summarize(folder)
            self.assertEqual(summary["detection"]["pairs"], 1)
            self.assertAlmostEqual(summary["detection"]["ratio_median"], 4.0)


if __name__ == "__main__":
    unittest.main()
