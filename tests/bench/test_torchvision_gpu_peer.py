"""Specifications of the torchvision GPU peer's logic that needs no torch (bench/peers/torchvision_gpu_decode.py):
how long it runs, which stream a batch takes, the jitter's factor range, its command line. Its torch part
runs on the GPU machine."""

import contextlib
import io
import os
import sys
import unittest

BENCH = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
sys.path.insert(0, os.path.join(BENCH, "peers"))

import torchvision_gpu_decode as peer  # noqa: E402


class RunLength(unittest.TestCase):
    def test_enough_epochs_for_the_minimum_of_images(self):
        # 6,000 images, at least 100,000: 17 passes (102,000), not 16 (96,000).
        self.assertEqual(peer.epochs_for(6000, 1, 100_000), 17)
        self.assertEqual(peer.epochs_for(6000, 20, 100_000), 20, "more epochs asked for than needed")
        self.assertEqual(peer.epochs_for(100_000, 1, 100_000), 1)
        self.assertEqual(peer.epochs_for(5, 3, 0), 3, "no minimum: the epochs as given")

    def test_no_images_is_an_error(self):
        with self.assertRaises(ValueError):
            peer.epochs_for(0, 1, 100)


class Streams(unittest.TestCase):
    def test_consecutive_batches_alternate_between_the_two_streams(self):
        self.assertEqual([peer.stream_of(i) for i in range(6)], [0, 1, 0, 1, 0, 1])
        self.assertEqual([peer.stream_of(i, 3) for i in range(4)], [0, 1, 2, 0])
        with self.assertRaises(ValueError):
            peer.stream_of(1, 0)


class Jitter(unittest.TestCase):
    def test_the_factor_range_is_color_jitters(self):
        self.assertEqual(peer.jitter_range(0.4), (0.6, 1.4))
        self.assertEqual(peer.jitter_range(1.5), (0.0, 2.5), "torchvision clips the low end at 0")
        with self.assertRaises(ValueError):
            peer.jitter_range(-0.1)


class CommandLine(unittest.TestCase):
    def error_of(self, argv):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as exit_:
            peer.parse_args(argv)
        self.assertEqual(exit_.exception.code, 2)
        return err.getvalue()

    def test_defaults_measure_both_variants_over_100000_images(self):
        args = peer.parse_args(["--data", "d"])
        self.assertEqual(args.variants, ["sample", "image"])
        self.assertEqual(args.min_images, 100_000)

    def test_an_unknown_variant_or_a_bad_count_is_refused(self):
        self.assertIn("unknown variant", self.error_of(["--data", "d", "--variants", "sample,batch"]))
        self.assertIn("at least", self.error_of(["--data", "d", "--epochs", "0"]))
        self.assertIn("at least", self.error_of(["--data", "d", "--min-images", "-1"]))


if __name__ == "__main__":
    unittest.main()
