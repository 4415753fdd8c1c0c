"""bench/summarize_headline.py: the rounds of bench/gpu/pipeline_vs_peers.sh and feed_vs_step.sh as headline.json
entries."""
import json
import os
import sys
import tempfile
import unittest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(BENCH, "..", "scripts"))
import headline_table  # noqa: E402
import summarize_headline  # noqa: E402


def pipeline(first, after, startup):
    return {"images_per_s": first, "images_per_s_after_warmup_batches": after, "time_to_first_batch_s": startup}


class Rounds(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        rounds = {  # round: (cpu, gpu, loader on, loader off, tv image, tv batch, prefetch, step)
            1: (10000, 20000, 4000, 4200, 1000, 2500, 16000, 17000),
            2: (11000, 23000, 4400, 4100, 1100, 2400, 16500, 17200),
            3: (10500, 21000, 4300, 4300, 900, 2600, 16200, 17100),
        }
        for i, (cpu, gpu, on, off, image, batch, prefetch, step) in rounds.items():
            self.write(f"cpu_{i}", pipeline(cpu, cpu * 1.01, 0.04))
            self.write(f"gpu_{i}", pipeline(gpu, gpu * 1.2, 0.9))
            self.write(f"torch_{i}", {"by_antialias": {"true": pipeline(on, on * 0.95, 2.0),
                                                       "false": pipeline(off, off * 0.95, 1.0)}})
            self.write(f"tvgpu_{i}", {"by_variant": {"image": pipeline(image, image, 3.0),
                                                     "batch": pipeline(batch, batch, 3.0)}})
            self.write(f"fvp_{i}", {"results": [{"mode": "prefetch", "images_per_s": prefetch,
                                                 "images_per_s_after_warmup_steps": prefetch + 300,
                                                 "first_batch_s": 0.8}]})
            self.write(f"step_{i}", {"images_per_s_from_first_step": step, "images_per_s": step + 200, "warmup_s": 0.4})
        self.entries = {e["id"]: e for e in summarize_headline.summarize(
            self.dir.name, "H100, 16 cores", "abc1234", "2026-11-28", "bench/results")}

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, value):
        with open(os.path.join(self.dir.name, name + ".json"), "w") as f:
            json.dump(value, f)

    def test_the_peer_of_each_round_is_its_strongest_variant(self):
        e = self.entries["pipeline_cpu_vs_dataloader"]
        self.assertEqual(e["peer_variant_by_round"], ["false", "true", "true"])  # 4200, 4400, 4300 (a tie: first)
        self.assertEqual([r["peer"] for r in e["rounds"]], [4200, 4400, 4300])
        self.assertEqual(self.entries["pipeline_hybrid_vs_torchvision_gpu"]["peer_variant_by_round"], ["batch"] * 3)

    def test_figures_are_medians_and_the_ratio_the_median_of_the_rounds_ratios(self):
        e = self.entries["pipeline_hybrid_vs_dataloader"]
        self.assertEqual((e["conveyor"], e["peer"]["value"]), (21000, 4300))
        self.assertEqual(e["ratio"], round(sorted([20000 / 4200, 23000 / 4400, 21000 / 4300])[1], 2))
        self.assertEqual(e["timing"], "from_first_batch")
        self.assertEqual(e["startup_s"], {"conveyor": 0.9, "peer": 2.0})  # the rounds' peers: off, on, on

    def test_the_older_rule_stands_beside_named(self):
        e = self.entries["prefetch_vs_step"]
        self.assertEqual(e["ratio_format"], "percent")
        self.assertEqual(e["older_rule"]["conveyor"], 16500)
        self.assertEqual(e["older_rule"]["peer"], 17300)
        self.assertIn("warm-up", e["older_rule"]["rule"])

    def test_targets_get_their_verdict(self):
        self.assertEqual(self.entries["pipeline_hybrid_vs_cpu"]["target"], ">= 1.8x: met")
        self.assertEqual(self.entries["pipeline_hybrid_vs_dataloader"]["target"], ">= 8x: not met")
        self.assertEqual(self.entries["prefetch_vs_step"]["target"], ">= 97 %: not met")

    def test_entries_print_in_the_readme_table(self):
        lines = headline_table.table(list(self.entries.values()))
        self.assertEqual(len([line for line in lines if line.startswith("| [")]), 5)

    def test_a_variant_of_the_hybrid_is_set_against_the_hybrid_of_its_own_rounds_and_makes_no_entry(self):
        for i, rate in ((1, 21000), (2, 22000)):  # against gpu_1 20000 and gpu_2 23000; round 3 has none
            self.write(f"gpu-ahead4_{i}", pipeline(rate, rate, 0.5))
        lines = summarize_headline.hybrid_variants(self.dir.name)
        self.assertEqual(len(lines), 1)
        self.assertTrue(lines[0].startswith("gpu-ahead4 against the hybrid's defaults: 21500 vs 21500 img/s"), lines[0])
        self.assertIn(f"-> {(21000 / 20000 + 22000 / 23000) / 2:.3f}x (rounds: 1.050, 0.957)", lines[0])
        ids = [e["id"] for e in summarize_headline.summarize(self.dir.name, "m", "c", "d", "f")]
        self.assertEqual(sorted(ids), sorted(self.entries))

    def test_merge_replaces_entries_of_the_same_id_and_keeps_the_others(self):
        path = os.path.join(self.dir.name, "headline.json")
        with open(path, "w") as f:
            json.dump([{"id": "step_vs_torch_compile"}, {"id": "prefetch_vs_step", "ratio": 0.5}], f)
        summarize_headline.merge(path, [self.entries["prefetch_vs_step"], self.entries["pipeline_hybrid_vs_cpu"]])
        with open(path) as f:
            merged = json.load(f)
        self.assertEqual([e["id"] for e in merged], ["step_vs_torch_compile", "prefetch_vs_step",
                                                     "pipeline_hybrid_vs_cpu"])
        self.assertNotEqual(merged[1]["ratio"], 0.5)


if __name__ == "__main__":
    unittest.main()
