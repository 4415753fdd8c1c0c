"""Specifications of bench/summarize_gpu_scripts.py (the figures of bench/gpu/'s scripts that alternate
rounds) on made-up JSON: ranks summed, ratios taken within a round, medians over the rounds."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

BENCH = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
sys.path.insert(0, BENCH)

import summarize_gpu_scripts  # noqa: E402


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
        summarize_gpu_scripts.__dict__[part](folder)
    return out.getvalue()


class Scaling(unittest.TestCase):
    def test_ranks_are_summed_and_each_round_is_against_its_own_one_gpu(self):
        with tempfile.TemporaryDirectory() as folder:
            for round_, one in ((1, 16000), (2, 18000)):
                write(folder, f"one_{round_}.json", fvp(one))
                write(folder, f"procs_{round_}.rank0.json", fvp(one * 0.96))
                write(folder, f"procs_{round_}.rank1.json", fvp(one * 0.96))
                write(folder, f"inproc_{round_}.json", fvp(one * 1.8, idle_per_gpu=[0.03, 0.04]))
                write(folder, f"procs-cpus_{round_}.rank0.json", fvp(one))
                write(folder, f"procs-cpus_{round_}.rank1.json", fvp(one))
            text = run("scaling", folder)
        self.assertIn("one process per GPU / one GPU: median 1.920x over 2 round(s)", text)
        self.assertIn("one process, every GPU / one GPU: median 1.800x", text)
        self.assertIn("one process per GPU, cpus / one GPU: median 2.000x", text)
        self.assertIn("idle per GPU 3.0 %, 4.0 %", text)

    def test_a_round_without_its_one_gpu_run_is_left_out(self):
        with tempfile.TemporaryDirectory() as folder:
            write(folder, "one_1.json", fvp(16000))
            write(folder, "procs_1.json", fvp(30000))
            write(folder, "procs_2.json", fvp(10000))
            text = run("scaling", folder)
        self.assertIn("median 1.875x over 1 round(s)", text)


    def test_each_variant_against_the_defaults_and_each_ranks_placement(self):
        with tempfile.TemporaryDirectory() as folder:
            for round_ in (1, 2):
                write(folder, f"one_{round_}.json", fvp(16000))
                for rank in (0, 1):
                    placed = fvp(15000)
                    placed["results"][0].update({"pipeline_cpus": [8 * rank + c for c in range(8)],
                                                 "pipeline_cpus_reason": "close to the GPU",
                                                 "host_memory": f"NUMA node {rank}"})
                    write(folder, f"procs_{round_}.rank{rank}.json", placed)
                    write(folder, f"procs-all_{round_}.rank{rank}.json", fvp(13500))
            text = run("scaling", folder)
        self.assertIn("procs-all / procs (the defaults), round by round: median 0.900x over 2 round(s)", text)
        self.assertIn("rank 1: CPUs [8, 9, 10, 11, 12, 13, 14, 15] (close to the GPU); batches NUMA node 1", text)


class FeedVsStep(unittest.TestCase):
    def test_prefetch_and_each_variant_against_the_same_rounds_step(self):
        with tempfile.TemporaryDirectory() as folder:
            for round_ in (1, 2, 3):
                write(folder, f"step_{round_}.json", {"images_per_s": 17500.0})
                write(folder, f"fvp_{round_}.json", fvp(17000.0))
                write(folder, f"fvp-nopool_{round_}.json", fvp(16300.0))
            text = run("feed_vs_step", folder)
        self.assertIn("prefetch / train_step_bench, the defaults: median 0.971 over 3 round(s)", text)
        self.assertIn("prefetch / train_step_bench, nopool: median 0.931", text)
        self.assertIn("nopool / the defaults, round by round: median 0.959x", text)

    def test_the_eager_step_is_no_variant_and_measures_the_compute_beside_the_feeder(self):
        with tempfile.TemporaryDirectory() as folder:
            for round_ in (1, 2):
                write(folder, f"step_{round_}.json", {"images_per_s": 20000.0})
                write(folder, f"step_eager_{round_}.json", {"images_per_s": 16000.0})  # 16 ms a batch
                write(folder, f"fvp_{round_}.json", fvp(15000.0))  # compute_ms 15.0
            text = run("feed_vs_step", folder)
        self.assertNotIn("step_eager /", text)
        self.assertNotIn("train_step_bench, step_eager", text)
        self.assertIn("the step alone, eager / graph: median 0.800x over 2 round(s)", text)
        self.assertIn("the defaults: compute per step / the eager step alone: median 0.938x", text)


class FirstBatch(unittest.TestCase):
    def test_time_to_the_first_batch_and_the_rate_of_every_side(self):
        with tempfile.TemporaryDirectory() as folder:
            write(folder, "prime.json", {"images_per_s_after_first_batch": 1.0, "time_to_first_batch_s": 9.0})
            for round_, first in ((1, 1.3), (2, 1.1)):
                write(folder, f"gpu_{round_}.json", {"images_per_s_after_first_batch": 25000.0,
                                                     "time_to_first_batch_s": first})
                write(folder, f"cpu_{round_}.json", {"images_per_s_after_first_batch": 11000.0,
                                                     "time_to_first_batch_s": 0.03})
            text = run("first_batch", folder)
        self.assertIn("gpu: time to the first batch: median 1.200 s over 2 round(s)", text)
        self.assertIn("cpu: images/s from the first batch: median 11000.000 over 2 round(s)", text)
        self.assertNotIn("prime", text)

    def test_each_hybrid_side_against_the_same_rounds_cpu_only_and_its_decoder_readiness(self):
        with tempfile.TemporaryDirectory() as folder:
            for round_, late in ((1, 0.05), (2, 0.07)):
                write(folder, f"cpu_{round_}.json", {"images_per_s_after_first_batch": 11000.0,
                                                     "time_to_first_batch_s": 0.10})
                write(folder, f"gpu_{round_}.json", {"images_per_s_after_first_batch": 25000.0,
                                                     "time_to_first_batch_s": 0.10 + late,
                                                     "device": {"decoder_ready_s": 0.9, "first_stage_s": 0.02}})
                write(folder, f"gpu-warmup_{round_}.json", {"images_per_s_after_first_batch": 25000.0,
                                                            "time_to_first_batch_s": 1.1})
            text = run("first_batch", folder)
        self.assertIn("gpu: first batch less CPU-only's, round by round: median 0.060 s over 2 round(s)", text)
        self.assertIn("gpu-warmup: first batch less CPU-only's, round by round: median 1.000 s", text)
        self.assertIn("gpu: decoder_ready_s: median 0.900 s", text)
        self.assertNotIn("cpu: first batch less", text)

    def test_each_side_against_the_dataloader_at_its_faster_antialias_setting_round_by_round(self):
        with tempfile.TemporaryDirectory() as folder:
            for round_, (gpu, slow, fast) in enumerate(((30000.0, 3000.0, 4000.0), (24000.0, 2500.0, 3000.0)), 1):
                write(folder, f"gpu_{round_}.json", {"images_per_s_after_first_batch": gpu,
                                                     "time_to_first_batch_s": 0.2,
                                                     "device": {"second_decoder_s": 1.0}})
                # The top level is the antialias=False run; here True is the faster one in round 2.
                write(folder, f"torch_{round_}.json", {
                    "images_per_s_after_first_batch": fast if round_ == 1 else slow,
                    "by_antialias": {"true": {"images_per_s_after_first_batch": slow if round_ == 1 else fast},
                                     "false": {"images_per_s_after_first_batch": fast if round_ == 1 else slow}}})
            text = run("first_batch", folder)
        # 30000 / 4000 = 7.5 and 24000 / 3000 = 8.0, each against that round's faster setting.
        self.assertIn("gpu / the DataLoader at its faster antialias setting, from each one's first batch: "
                      "median 7.750x over 2 round(s)", text)
        self.assertIn("(torch's faster setting: antialias=false)", text)
        self.assertIn("(torch's faster setting: antialias=true)", text)
        self.assertIn("gpu: second_decoder_s: median 1.000 s", text)


class MultiGpuHangs(unittest.TestCase):
    def test_runs_without_a_json_did_not_end(self):
        with tempfile.TemporaryDirectory() as folder:
            for i in (1, 2, 3):
                open(os.path.join(folder, f"fvp_{i}.log"), "w").close()
            write(folder, "fvp_1.json", fvp(28000.0))
            write(folder, "fvp_2.json", fvp(27000.0, stalls=1))
            text = run("multi_gpu_hangs", folder)
        self.assertIn("on 1 ranks: 2 of 3 runs ended (every rank's result written); stall reports in ended runs: 1",
                      text)

    def test_a_run_ended_when_every_rank_wrote_its_result_and_its_rate_is_theirs_together(self):
        with tempfile.TemporaryDirectory() as folder:
            for i in (1, 2, 3):
                open(os.path.join(folder, f"fvp_{i}.log"), "w").close()
            for i in (1, 2):
                write(folder, f"fvp_{i}.rank0.json", fvp(12000.0))
                write(folder, f"fvp_{i}.rank1.json", fvp(11000.0 + i))
            write(folder, "fvp_3.rank0.json", fvp(12000.0))  # rank 1 never ended: the run did not end
            text = run("multi_gpu_hangs", folder)
        self.assertIn("on 2 ranks: 2 of 3 runs ended", text)
        self.assertIn("median 23002, min 23001, max 23002", text)


class PreparedData(unittest.TestCase):
    def test_each_set_with_its_size_and_each_sides_median(self):
        with tempfile.TemporaryDirectory() as folder:
            write(folder, "index_q90.json", {"shardlist": [{"filesize": 60e6}, {"filesize": 60e6}]})
            write(folder, "cpu_q90_1.json", {"images_per_s": 20000.0})
            write(folder, "cpu_q90_2.json", {"images_per_s": 22000.0})
            text = run("prepared_data", folder)
        self.assertIn("q90: shards 120 MB", text)
        self.assertIn("cpu: median 21000 img/s (20000, 22000)", text)


if __name__ == "__main__":
    unittest.main()
