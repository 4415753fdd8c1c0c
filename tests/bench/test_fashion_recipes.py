"""The Fashion-MNIST recipe table of the PyTorch anchors (bench/peers/fashion_recipes.py) against the one
train_fashion_mnist was built with (examples/train_fashion_mnist/recipes.cpp): the same names in the same
order, the same settings and the same learning rate at the steps that show the schedule's shape. The
program's path comes from CONVEYOR_TRAIN_FASHION_MNIST (CTest sets it); the schedule itself is checked
without it."""

import json
import math
import os
import subprocess
import sys
import unittest

BENCH = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
sys.path.insert(0, os.path.join(BENCH, "peers"))

import fashion_recipes  # noqa: E402


def same(a, b, where="recipes"):
    """Where a and b differ (floats to 1e-12 relative), or None."""
    if isinstance(a, float) or isinstance(b, float):
        return None if math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15) else f"{where}: {a!r} != {b!r}"
    if isinstance(a, dict) and isinstance(b, dict):
        if sorted(a) != sorted(b):
            return f"{where}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            d = same(a[k], b[k], f"{where}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} entries != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = same(x, y, f"{where}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{where}: {a!r} != {b!r}"


class Schedule(unittest.TestCase):
    def test_warm_up_rises_linearly_to_the_peak_then_the_cosine_falls_to_zero(self):
        r = fashion_recipes.find("fast18")
        self.assertAlmostEqual(fashion_recipes.learning_rate(r, 0, 234), 0.1 / 234)
        self.assertAlmostEqual(fashion_recipes.learning_rate(r, 233, 234), 0.1)
        self.assertAlmostEqual(fashion_recipes.learning_rate(r, 234, 234), 0.1)
        total, warm = 18 * 234, 234
        self.assertAlmostEqual(fashion_recipes.learning_rate(r, warm + (total - warm) // 2, 234), 0.05)
        self.assertLess(fashion_recipes.learning_rate(r, total - 1, 234), 1e-7)

    def test_without_warm_up_it_is_the_plain_cosine_by_step(self):
        r = fashion_recipes.find("baseline")
        self.assertAlmostEqual(fashion_recipes.learning_rate(r, 0, 234), 0.1)
        self.assertAlmostEqual(fashion_recipes.learning_rate(r, 15 * 234 // 2, 234), 0.05)

    def test_an_unknown_name_lists_the_choices(self):
        with self.assertRaisesRegex(ValueError, "fast15, fast16, fast18, fast20, baseline"):
            fashion_recipes.find("fastest")


@unittest.skipUnless(os.environ.get("CONVEYOR_TRAIN_FASHION_MNIST"), "CONVEYOR_TRAIN_FASHION_MNIST is not set")
class SameTableAsTheProgram(unittest.TestCase):
    def test_names_settings_and_schedules_agree(self):
        program = os.environ["CONVEYOR_TRAIN_FASHION_MNIST"]
        theirs = json.loads(subprocess.run([program, "--list-recipes"], check=True, capture_output=True,
                                           text=True, timeout=60).stdout)
        ours = fashion_recipes.recipes_json(234)
        self.assertIsNone(same(ours, theirs))


if __name__ == "__main__":
    unittest.main()
