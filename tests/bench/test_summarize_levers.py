"""Specifications of bench/levers/summarize_levers.py: how issue 41's runs are paired round by round and judged
against the issue's targets, on folders of JSON files written here the way the programs write them."""

import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

BENCH = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
sys.path.insert(0, os.path.join(BENCH, "levers"))

import summarize_levers  # noqa: E402


def fvp(images_per_s, **more):
    """A feed_vs_prefetch JSON with one prefetch result."""
    return {"results": [{"mode": "prefetch", "images_per_s": images_per_s, **more}]}


class Folder(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.folder = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, data):
        with open(os.path.join(self.folder, name), "w") as file:
            json.dump(data, file)

    def summarize(self, *argv):
        with contextlib.redirect_stdout(io.StringIO()):
            summary = summarize_levers.main([argv[0], self.folder, *argv[1:]])
        with open(os.path.join(self.folder, "summary.json")) as file:
            self.assertEqual(json.load(file), json.loads(json.dumps(summary)), "summary.json differs")
        return summary


class FirstBatch(Folder):
    def test_the_start_is_judged_by_the_difference_to_cpu_only_round_by_round(self):
        for r, (cpu, at_once) in enumerate([(0.030, 0.110), (0.025, 0.090), (0.040, 0.200)], 1):
            self.write(f"cpu_{r}.json", {"time_to_first_batch_s": cpu, "images_per_s": 15000,
                                         "images_per_s_overall": 14000})
            self.write(f"at_once_{r}.json", {"time_to_first_batch_s": at_once, "images_per_s": 26000,
                                             "images_per_s_overall": 21000,
                                             "device": {"decoder_ready_s": 1.2, "feeder_construction_s": 0.1}})
            self.write(f"warmup_{r}.json", {"time_to_first_batch_s": 1.4, "images_per_s": 33000,
                                            "images_per_s_overall": 20000})
        self.write("prime.json", {"time_to_first_batch_s": 9.0})  # not counted
        s = self.summarize("first-batch")
        delta = s["at_once_first_batch_minus_cpu_s"]
        self.assertAlmostEqual(delta["median"], 0.08)  # 0.08, 0.065, 0.16
        self.assertTrue(delta["met"])  # <= 0.1 s
        self.assertAlmostEqual(s["at_once_over_warmup_counting_start_up"]["median"], 21000 / 20000)
        self.assertEqual(s["variants"]["at_once"]["decoder_ready_s"], 1.2)
        self.assertNotIn("prime", s["variants"])


class StepShare(Folder):
    def test_each_variant_is_a_share_of_its_rounds_step_and_a_ratio_to_base(self):
        for r in (1, 2):
            self.write(f"step_{r}.json", {"images_per_s": 20000})
            self.write(f"step_eager_{r}.json", {"images_per_s": 19000})
            self.write(f"base_{r}.json", fvp(18600, compute_ms=15.2, idle_fraction=0.01,
                                             gpu_decode_paths={"hardware_roi": 100}))
            self.write(f"urgent_{r}.json", fvp(19000 + 200 * r, compute_ms=14.9, idle_fraction=0.01))
        s = self.summarize("step-share")
        self.assertAlmostEqual(s["variants"]["base"]["share_of_step"]["median"], 0.93)
        self.assertFalse(s["variants"]["base"]["share_of_step"]["met"])
        self.assertAlmostEqual(s["variants"]["urgent"]["over_base"]["median"], (19200 + 19400) / 2 / 18600)
        self.assertAlmostEqual(s["eager_over_graph"]["median"], 0.95)
        # The eager step alone takes 256 / 19000 s a batch: 13.47 ms; beside it, 15.2.
        self.assertAlmostEqual(s["variants"]["base"]["compute_over_eager_step"], 15.2 / (256000 / 19000))
        self.assertEqual(s["variants"]["base"]["gpu_decode_paths"], {"hardware_roi": 100})


class Ranks(Folder):
    def test_the_job_is_every_ranks_sum_over_the_rounds_one_gpu(self):
        for r in (1, 2):
            self.write(f"one_{r}.json", fvp(18000))
            for rank in (0, 1):
                self.write(f"ranks_{r}.rank{rank}.json",
                           fvp(17000 + 100 * rank, idle_fraction=0.02 * (rank + 1), pipeline_cpus=[rank]))
        # A round whose second rank left no file does not count.
        self.write("ranks_3.rank0.json", fvp(17000))
        self.write("one_3.json", fvp(18000))
        s = self.summarize("ranks", "--gpus", "2")
        scaling = s["variants"]["ranks"]["scaling"]
        self.assertEqual(len(scaling["rounds"]), 2)
        self.assertAlmostEqual(scaling["median"], 34100 / 18000)
        self.assertFalse(scaling["met"])  # 1.894 < 1.9
        self.assertEqual(s["variants"]["ranks"]["idle_per_gpu_by_round"][0], [0.02, 0.04])
        self.assertEqual(s["variants"]["ranks"]["pipeline_cpus_last_round"], [[0], [1]])


class Prepared(Folder):
    def test_one_gpu_shares_and_the_dataloaders_faster_setting(self):
        for r in (1, 2):
            self.write(f"step_{r}.json", {"images_per_s": 19000})
            self.write(f"fvp_prepared_{r}.json", fvp(18700))
            self.write(f"fvp_original_{r}.json", fvp(17700))
            self.write(f"cpu_prepared_{r}.json", {"images_per_s": 23000, "time_to_first_batch_s": 0.03})
            self.write(f"torch_prepared_{r}.json", {"images_per_s": 3700, "time_to_first_batch_s": 2.5,
                                                    "by_antialias": {"true": {"images_per_s": 3800},
                                                                     "false": {"images_per_s": 3700}}})
        self.write("index.json", {"prepared": {"max_side": 320, "quality": 90}})
        s = self.summarize("prepared")
        self.assertAlmostEqual(s["fvp_prepared_share_of_step"]["median"], 18700 / 19000)
        self.assertTrue(s["fvp_prepared_share_of_step"]["met"])
        self.assertAlmostEqual(s["cpu_prepared_over_dataloader"]["median"], 23000 / 3800)
        self.assertEqual(s["preparation"], {"max_side": 320, "quality": 90})
        self.assertEqual(s["first_batch_s"]["torch_prepared"], 2.5)

    def test_several_gpus_scale_against_one(self):
        for r in (1, 2):
            self.write(f"one_prepared_{r}.json", fvp(18500))
            for rank in range(4):
                self.write(f"ranks_prepared_{r}.rank{rank}.json", fvp(17000))
        s = self.summarize("prepared", "--gpus", "4")
        self.assertAlmostEqual(s["ranks_over_one"]["median"], 68000 / 18500)
        self.assertTrue(s["ranks_over_one"]["met"])  # >= 3.6


class Peer(Folder):
    def test_the_hybrid_against_the_torchvision_gpu_peer(self):
        for r in (1, 2):
            self.write(f"hybrid_{r}.json", {"images_per_s": 30000, "time_to_first_batch_s": 0.1})
            self.write(f"tvgpu_{r}.json", {"images_per_s": 6000 * r, "time_to_first_batch_s": 1.5})
        s = self.summarize("peer")
        self.assertAlmostEqual(s["hybrid_over_torchvision_gpu"]["median"], (5 + 2.5) / 2)
        self.assertEqual(s["tvgpu_first_batch_s"], 1.5)


if __name__ == "__main__":
    unittest.main()
