"""Specifications of the PyTorch peers' logic that needs no torch: timing rules, file listings, JSON
records, argument parsing, the assembly of results and ratios. The torch parts run on the GPU machine."""

import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

BENCH = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
sys.path.insert(0, os.path.join(BENCH, "peers"))

import image_lists  # noqa: E402
import run_record  # noqa: E402
import timing_rules  # noqa: E402
import torch_fashion_mnist  # noqa: E402
import torch_resnet18  # noqa: E402
import torch_train_from_jpeg  # noqa: E402


def argparse_error(parse, argv):
    """The message argparse prints when `parse(argv)` rejects the arguments."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            parse(argv)
        except SystemExit as exit_:
            if exit_.code != 2:
                raise AssertionError(f"exit code {exit_.code}, expected 2; stderr: {err.getvalue()}")
            return err.getvalue()
    raise AssertionError(f"{argv} was accepted")


class MedianAndPercentile(unittest.TestCase):
    def test_median_of_odd_and_even_counts(self):
        self.assertEqual(timing_rules.median([3.0, 1.0, 2.0]), 2.0)
        self.assertEqual(timing_rules.median([4.0, 1.0, 3.0, 2.0]), 2.5)

    def test_median_of_nothing_is_an_error(self):
        with self.assertRaises(ValueError):
            timing_rules.median([])

    def test_percentile_rounds_like_train_step_bench(self):
        # train_step_bench: index round(q * (n - 1)); for 50 steps p95 is the 48th smallest (index 47).
        values = list(range(1, 51))
        self.assertEqual(timing_rules.percentile(values, 0.95), 48)
        self.assertEqual(timing_rules.percentile(values, 0.5), 26)  # index round(24.5) = 25 (half up)
        self.assertEqual(timing_rules.percentile([7.0], 0.95), 7.0)

    def test_percentile_outside_zero_to_one_is_an_error(self):
        with self.assertRaises(ValueError):
            timing_rules.percentile([1.0], 1.5)

    def test_step_summary_turns_the_median_step_into_images_per_second(self):
        s = timing_rules.step_summary([10.0, 20.0, 10.0, 30.0, 10.0], 256)
        self.assertEqual(s["steps"], 5)
        self.assertEqual(s["step_ms_median"], 10.0)
        self.assertAlmostEqual(s["images_per_s"], 25600.0)
        self.assertEqual(s["step_ms_p95"], 30.0)
        self.assertEqual(s["step_ms_min"], 10.0)

    def test_step_summary_refuses_no_steps_and_no_batch(self):
        with self.assertRaises(ValueError):
            timing_rules.step_summary([], 256)
        with self.assertRaises(ValueError):
            timing_rules.step_summary([1.0], 0)


class Periods(unittest.TestCase):
    def test_n_plus_one_marks_give_n_periods(self):
        self.assertEqual(timing_rules.periods([0.0, 10.0, 25.0, 26.0]), [10.0, 15.0, 1.0])

    def test_marks_out_of_order_are_an_error(self):
        with self.assertRaisesRegex(ValueError, "not in time order"):
            timing_rules.periods([0.0, 10.0, 5.0])

    def test_one_mark_is_not_enough(self):
        with self.assertRaises(ValueError):
            timing_rules.periods([0.0])


class DataLoaderTimingRule(unittest.TestCase):
    def test_clock_starts_at_the_warmup_batch_and_counts_only_later_batches(self):
        # Four workers deliver their first batches together at t = 1; later batches at 2, 3, 4.
        arrivals = [(1.0, 10), (1.0, 10), (1.0, 10), (1.0, 10), (2.0, 10), (3.0, 10), (4.0, 10)]
        self.assertAlmostEqual(timing_rules.steady_rate(arrivals, end=4.0, warmup=4), 30 / 3.0)
        # From the first batch on, the three other early batches would be credited too.
        self.assertAlmostEqual(timing_rules.steady_rate(arrivals, end=4.0, warmup=1), 60 / 3.0)

    def test_no_batch_after_the_warmup_gives_zero(self):
        self.assertEqual(timing_rules.steady_rate([(1.0, 10), (2.0, 10)], end=2.0, warmup=2), 0.0)

    def test_warmup_of_zero_batches_is_an_error(self):
        with self.assertRaises(ValueError):
            timing_rules.steady_rate([(1.0, 10)], end=1.0, warmup=0)

    def test_warmup_batches_is_the_worker_count_but_leaves_half_the_run(self):
        self.assertEqual(timing_rules.warmup_batches(16, 80), 16)
        self.assertEqual(timing_rules.warmup_batches(16, 20), 10)
        self.assertEqual(timing_rules.warmup_batches(0, 80), 1)
        self.assertEqual(timing_rules.warmup_batches(4, 1), 1)

    def test_conveyor_ratios_under_each_rule(self):
        conveyor = {"images_per_s": 15000.0, "threads": 16, "images_per_s_after_warmup_batches": 14000.0,
                    "images_per_s_overall": 12000.0}
        peer = {"images_per_s": 5000.0, "images_per_s_after_warmup_batches": 7000.0, "images_per_s_overall": 0.0}
        r = timing_rules.conveyor_ratios(conveyor, peer)
        self.assertEqual(r["conveyor_threads"], 16)
        self.assertAlmostEqual(r["ratio_conveyor_to_torch"], 3.0)
        self.assertAlmostEqual(r["ratio_conveyor_to_torch_after_warmup_batches"], 2.0)
        self.assertNotIn("ratio_conveyor_to_torch_overall", r)  # the peer's 0 gives no ratio

    def test_pipeline_rates_count_the_headline_from_the_first_batch(self):
        arrivals = [(2.0, 8), (2.1, 8), (3.0, 8), (4.0, 8), (6.0, 8)]
        f = timing_rules.pipeline_rates(arrivals, start=0.0, end=6.0, workers=2)
        self.assertAlmostEqual(f["time_to_first_batch_s"], 2.0)          # start-up, apart
        self.assertAlmostEqual(f["images_per_s"], 32 / 4.0)               # batches 2-5 over 2.0 .. 6.0
        self.assertAlmostEqual(f["images_per_s_after_warmup_batches"], 24 / 3.9)  # batches 3-5 over 2.1 .. 6.0
        self.assertAlmostEqual(f["images_per_s_overall"], 40 / 6.0)
        self.assertIn("from the first batch", timing_rules.describe_rates(f))
        with self.assertRaises(ValueError):
            timing_rules.pipeline_rates([], 0.0, 1.0, 2)

    def test_passes_over_the_folder_cover_the_steps(self):
        self.assertEqual(timing_rules.steps_needed_epochs(5000, 256, 261), 14)  # 13.4 passes -> 14
        self.assertEqual(timing_rules.steps_needed_epochs(100000, 256, 10), 1)
        self.assertGreaterEqual(14 * 5000 // 256, 261)


class VariantsAndOrder(unittest.TestCase):
    def test_rounds_alternate_the_order(self):
        self.assertEqual(timing_rules.alternating_order(["a", "b", "c"], 3),
                         [["a", "b", "c"], ["c", "b", "a"], ["a", "b", "c"]])

    def test_zero_rounds_or_a_repeated_variant_is_an_error(self):
        with self.assertRaises(ValueError):
            timing_rules.alternating_order(["a"], 0)
        with self.assertRaises(ValueError):
            timing_rules.alternating_order(["a", "a"], 1)

    def test_parse_choices_keeps_the_order_and_names_what_is_wrong(self):
        self.assertEqual(timing_rules.parse_choices("b, a", ["a", "b"], "feed"), ["b", "a"])
        with self.assertRaisesRegex(ValueError, "unknown feed 'c'"):
            timing_rules.parse_choices("a,c", ["a", "b"], "feed")
        with self.assertRaisesRegex(ValueError, "named twice"):
            timing_rules.parse_choices("a,a", ["a", "b"], "feed")
        with self.assertRaisesRegex(ValueError, "no feed"):
            timing_rules.parse_choices(" , ", ["a", "b"], "feed")

    def test_strongest_ignores_variants_that_did_not_run(self):
        self.assertEqual(timing_rules.strongest({"eager": 13000.0, "compile": 18000.0, "graph": None}), "compile")
        self.assertIsNone(timing_rules.strongest({"eager": None}))

    def test_ratio_is_none_when_a_side_is_missing(self):
        self.assertAlmostEqual(timing_rules.ratio(3.0, 2.0), 1.5)
        self.assertIsNone(timing_rules.ratio(None, 2.0))
        self.assertIsNone(timing_rules.ratio(3.0, 0.0))


class Listings(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def touch(self, *parts):
        path = os.path.join(self.root, *parts)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(b"\xff\xd8")
        return path

    def test_image_folder_order_and_labels_follow_conveyor(self):
        b2 = self.touch("b", "2.JPEG")
        b1 = self.touch("b", "1.jpg")
        a_deep = self.touch("a", "sub", "0.jpg")
        a1 = self.touch("a", "1.jpeg")
        self.touch("a", "notes.txt")
        self.touch("loose.jpg")  # not in a class folder
        os.makedirs(os.path.join(self.root, "c_empty"))
        samples = image_lists.list_image_folder(self.root)
        self.assertEqual(samples, [(a1, 0), (a_deep, 0), (b1, 1), (b2, 1)])
        self.assertEqual(image_lists.list_image_folder(self.root, limit=3), samples[:3])
        self.assertEqual(image_lists.class_count(samples), 2)

    def test_a_folder_without_images_is_an_error_naming_it(self):
        os.makedirs(os.path.join(self.root, "a"))
        with self.assertRaisesRegex(image_lists.ListingError, "no .jpg/.jpeg image"):
            image_lists.list_image_folder(self.root)
        with self.assertRaisesRegex(image_lists.ListingError, "not a folder"):
            image_lists.list_image_folder(os.path.join(self.root, "missing"))

    def test_list_file_reads_paths_with_spaces_tabs_and_comments(self):
        path = os.path.join(self.root, "train.txt")
        with open(path, "w") as f:
            f.write("# made by make_fashion_mnist\ntrain/0/00000.jpg 9\n\n  my photos/a b.jpg\t3\r\nx.jpg 0")
        self.assertEqual(image_lists.read_list_file(path), [
            (os.path.join(self.root, "train/0/00000.jpg"), 9),
            (os.path.join(self.root, "my photos/a b.jpg"), 3),
            (os.path.join(self.root, "x.jpg"), 0)])

    def test_a_bad_list_line_names_the_file_and_the_line(self):
        path = os.path.join(self.root, "test.txt")
        with open(path, "w") as f:
            f.write("a.jpg 1\nb.jpg -2\n")
        with self.assertRaisesRegex(image_lists.ListingError, r"test.txt, line 2: expected '<path> <label>'"):
            image_lists.read_list_file(path)
        with open(path, "w") as f:
            f.write("just-a-path.jpg\n")
        with self.assertRaisesRegex(image_lists.ListingError, "line 1"):
            image_lists.read_list_file(path)

    def test_a_missing_or_empty_list_is_an_error(self):
        with self.assertRaisesRegex(image_lists.ListingError, "cannot read"):
            image_lists.read_list_file(os.path.join(self.root, "none.txt"))
        path = os.path.join(self.root, "empty.txt")
        open(path, "w").close()
        with self.assertRaisesRegex(image_lists.ListingError, "no entries"):
            image_lists.read_list_file(path)


class TarShardListings(unittest.TestCase):
    """The peer reads a shard index (a prepared set's too) as conveyor's tar_shard_index does."""

    def setUp(self):
        self.folder = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(self.folder))

    def shard(self, name, members):
        import tarfile
        path = os.path.join(self.folder, name)
        with tarfile.open(path, "w") as tar:
            for member, data in members:
                info = tarfile.TarInfo(member)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return path

    def index(self, names):
        path = os.path.join(self.folder, "shards.json")
        with open(path, "w") as file:
            json.dump({"shardlist": [{"url": name, "nsamples": 0} for name in names]}, file)
        return path

    def test_samples_come_in_stored_order_with_their_bytes_and_labels(self):
        first = self.shard("a.tar", [("c0/x.jpg", b"JPEG-x"), ("c0/x.cls", b"0\n"),
                                     ("c1/y.ppm", b"P6 1 1 255\nabc"), ("c1/y.cls", b"1\n")])
        second = self.shard("b.tar", [("w.cls", b"2"), ("w.jpeg", b"JPEG-w")])
        samples = image_lists.list_tar_shards(self.index(["a.tar", "b.tar"]))
        self.assertEqual([(path, label) for path, _, _, label in samples], [(first, 0), (first, 1), (second, 2)])
        with open(first, "rb") as file:
            data = file.read()
        _, offset, size, _ = samples[1]
        self.assertEqual(data[offset:offset + size], b"P6 1 1 255\nabc")
        self.assertEqual(image_lists.list_tar_shards(self.index(["a.tar", "b.tar"]), limit=2), samples[:2])

    def test_a_sample_without_a_label_or_a_broken_index_is_an_error_naming_it(self):
        self.shard("a.tar", [("x.jpg", b"JPEG")])
        with self.assertRaisesRegex(image_lists.ListingError, "'x' has no image or no label"):
            image_lists.list_tar_shards(self.index(["a.tar"]))
        broken = os.path.join(self.folder, "broken.json")
        with open(broken, "w") as file:
            file.write("{")
        with self.assertRaisesRegex(image_lists.ListingError, "not a shard index"):
            image_lists.list_tar_shards(broken)

    def test_netpbm_headers_read_as_conveyor_reads_them(self):
        self.assertEqual(image_lists.netpbm_header(b"P6 # c\n2\t1\n255\n" + bytes(6)), (2, 1, 3, 15))
        self.assertEqual(image_lists.netpbm_header(b"P5\n1 1\n255\n" + bytes(1))[2], 1)
        self.assertIsNone(image_lists.netpbm_header(b"\xff\xd8\xff"))
        for bad in (b"P6\n2 1\n65535\n" + bytes(12), b"P6\n2 1\n255\n" + bytes(5), b"P6\nx 1\n255\n"):
            with self.assertRaises(ValueError):
                image_lists.netpbm_header(bad)


class Records(unittest.TestCase):
    def test_header_names_the_bench_the_command_and_the_machine(self):
        h = run_record.header("torch_resnet18")
        self.assertEqual(h["bench"], "torch_resnet18")
        self.assertTrue(h["commit"])
        self.assertRegex(h["date_utc"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertEqual(h["machine"]["nproc"], os.cpu_count())

    def test_the_commit_given_in_the_environment_wins_over_git(self):
        # The GPU machine's runner sets it from the bundle: git there may name another commit.
        saved = os.environ.get("CONVEYOR_COMMIT")
        try:
            os.environ["CONVEYOR_COMMIT"] = "abc1234"
            self.assertEqual(run_record.header("x")["commit"], "abc1234")
            os.environ["CONVEYOR_COMMIT"] = ""
            self.assertNotEqual(run_record.git_commit(), "")
        finally:
            if saved is None:
                os.environ.pop("CONVEYOR_COMMIT", None)
            else:
                os.environ["CONVEYOR_COMMIT"] = saved

    def test_write_json_round_trips(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            run_record.write_json(path, {"images_per_s": 1.5, "variants": {"eager": {}}})
            with open(path) as f:
                self.assertEqual(json.load(f), {"images_per_s": 1.5, "variants": {"eager": {}}})

    def test_an_unwritable_path_ends_the_program_naming_it(self):
        with self.assertRaises(SystemExit) as caught:
            run_record.write_json("/nonexistent-dir/r.json", {})
        self.assertIn("/nonexistent-dir/r.json", str(caught.exception.code))


class ResNet18Peer(unittest.TestCase):
    def test_default_runs_eager_graph_and_compile(self):
        a = torch_resnet18.parse_args([])
        self.assertEqual(a.variants, ["eager", "graph", "compile"])
        self.assertEqual(a.size, 224)
        self.assertEqual(a.order, [["eager", "graph", "compile"]])

    def test_graph_flag_means_the_graph_variant_alone(self):
        self.assertEqual(torch_resnet18.parse_args(["--graph"]).variants, ["graph"])
        self.assertIn("--graph and --variants", argparse_error(torch_resnet18.parse_args,
                                                               ["--graph", "--variants", "eager"]))

    def test_rounds_alternate_and_small_resnet_defaults_to_28(self):
        a = torch_resnet18.parse_args(["--variants", "compile,eager", "--rounds", "2", "--model", "small_resnet"])
        self.assertEqual(a.order, [["compile", "eager"], ["eager", "compile"]])
        self.assertEqual(a.size, 28)

    def test_unknown_variant_is_refused_with_the_choices(self):
        message = argparse_error(torch_resnet18.parse_args, ["--variants", "eager,jit"])
        self.assertIn("unknown variant 'jit'", message)
        self.assertIn("compile-reduce-overhead", message)

    def test_fp16_skips_the_graphed_variants(self):
        a = torch_resnet18.parse_args(["--precision", "fp16"])
        self.assertIsNotNone(torch_resnet18.skip_reason("graph", a))
        self.assertIsNone(torch_resnet18.skip_reason("compile", a))

    def test_top_level_fields_are_the_strongest_variants(self):
        a = torch_resnet18.parse_args(["--json", "x"])

        def figures(rate, first):
            return {"what": "", "first_step_s": first, "steps": 50, "step_ms_median": 256000 / rate,
                    "step_ms_p95": 1.0, "images_per_s": rate, "images_per_s_wall": rate * 0.99,
                    "first_loss": 7.0, "last_loss": 6.9}

        variants = {"eager": figures(13266.0, 5.3), "graph": {"what": "", "error": "RuntimeError: capture"},
                    "compile": figures(17990.0, 19.7)}
        r = torch_resnet18.assemble(a, variants, {"device": "H200", "cudnn": 91900})
        self.assertEqual(r["strongest"], "compile")
        self.assertEqual(r["variant"], "compile")
        self.assertFalse(r["graph"])
        self.assertEqual(r["images_per_s"], 17990.0)
        self.assertEqual(r["first_step_s"], 19.7)
        self.assertEqual(r["variants"]["graph"]["error"], "RuntimeError: capture")
        for key in ("commit", "model", "batch", "precision", "fused_bn", "device", "cudnn", "steps",
                    "step_ms_median", "step_ms_p95", "images_per_s_wall", "first_loss", "last_loss"):
            self.assertIn(key, r)  # what the results' readers take
        json.dumps(r)

    def test_no_variant_ran_leaves_no_figures(self):
        r = torch_resnet18.assemble(torch_resnet18.parse_args([]), {"graph": {"what": "", "skipped": "fp16"}}, {})
        self.assertIsNone(r["strongest"])
        self.assertNotIn("images_per_s", r)


class FashionMnistPeer(unittest.TestCase):
    def test_defaults_are_the_default_recipe_on_both_feeds(self):
        a = torch_fashion_mnist.parse_args(["--data", "d"])
        self.assertEqual([r["name"] for r in a.recipes], ["fast15"])
        self.assertEqual((a.recipes[0]["epochs"], a.recipes[0]["batch"], a.recipes[0]["width"]), (15, 256, 32))
        self.assertEqual((a.workers, a.eval_every), (16, 0))
        self.assertEqual(a.feeds, ["gpu", "dataloader"])
        self.assertEqual(a.impl, ["graph"])
        self.assertEqual(a.seeds, [1])

    def test_overrides_change_every_chosen_recipe_and_not_the_table(self):
        a = torch_fashion_mnist.parse_args(["--data", "d", "--recipe", "fast16,baseline", "--epochs", "3",
                                            "--lr", "0.05"])
        self.assertEqual([(r["name"], r["epochs"], r["peak_lr"]) for r in a.recipes],
                         [("fast16", 3, 0.05), ("baseline", 3, 0.05)])
        self.assertEqual(torch_fashion_mnist.fashion_recipes.find("fast16")["epochs"], 16)

    def test_bad_choices_are_refused(self):
        self.assertIn("unknown feed", argparse_error(torch_fashion_mnist.parse_args, ["--data", "d", "--feeds", "disk"]))
        self.assertIn("unknown recipe", argparse_error(torch_fashion_mnist.parse_args, ["--data", "d", "--recipe", "x"]))
        self.assertIn("--epochs", argparse_error(torch_fashion_mnist.parse_args, ["--data", "d", "--epochs", "0"]))
        self.assertIn("--data", argparse_error(torch_fashion_mnist.parse_args, []))

    def test_summary_takes_the_median_over_seeds_per_recipe_and_skips_failed_runs(self):
        runs = [{"recipe": "fast18", "feed": "gpu", "impl": "graph", "seed": s, "final_test_accuracy": acc,
                 "seconds_training_and_evaluation": sec} for s, acc, sec in [(1, 0.93, 9.0), (2, 0.94, 8.0),
                                                                             (3, 0.935, 10.0)]]
        runs.append({"recipe": "fast18", "feed": "dataloader", "impl": "graph", "seed": 1, "error": "RuntimeError"})
        s = torch_fashion_mnist.summarize(runs)
        self.assertEqual(list(s), ["fast18/gpu/graph"])
        self.assertAlmostEqual(s["fast18/gpu/graph"]["median_final_test_accuracy"], 0.935)
        self.assertAlmostEqual(s["fast18/gpu/graph"]["median_seconds_training_and_evaluation"], 9.0)
        self.assertEqual(s["fast18/gpu/graph"]["seeds"], [1, 2, 3])


class TrainFromJpegPeer(unittest.TestCase):
    def test_defaults_run_six_variants(self):
        a = torch_train_from_jpeg.parse_args(["--data", "d"])
        self.assertEqual(a.modes, ["eager", "compile"])
        self.assertEqual(a.feeds, ["dataloader", "conveyor", "gpu"])
        self.assertEqual((a.workers, a.threads, a.batch, a.size, a.prefetch), (16, 16, 256, 224, 4))
        self.assertEqual(a.conveyor_layout, "NCHW")
        self.assertEqual(a.loop_stream, "side")

    def test_the_loop_can_run_on_pytorchs_default_stream(self):
        self.assertEqual(torch_train_from_jpeg.parse_args(["--data", "d", "--loop-stream", "default"]).loop_stream,
                         "default")
        self.assertIn("--loop-stream", argparse_error(torch_train_from_jpeg.parse_args,
                                                      ["--data", "d", "--loop-stream", "legacy"]))

    def test_fewer_than_two_timed_steps_are_refused(self):
        self.assertIn("--steps", argparse_error(torch_train_from_jpeg.parse_args, ["--data", "d", "--steps", "1"]))

    def test_the_all_cpu_conveyor_feed_and_a_share_can_be_asked_for(self):
        a = torch_train_from_jpeg.parse_args(["--data", "d", "--feeds", "conveyor,conveyor-cpu", "--gpu-share", "0.6"])
        self.assertEqual((a.feeds, a.gpu_share), (["conveyor", "conveyor-cpu"], 0.6))
        self.assertIsNone(torch_train_from_jpeg.parse_args(["--data", "d"]).gpu_share)

    def test_figures_come_from_the_gpu_timeline(self):
        # Three steps of 10 ms, then one that waited 50 ms for data.
        f = torch_train_from_jpeg.feed_figures([0.0, 10.0, 20.0, 30.0, 80.0], 256, wait_s=0.04, wall_s=0.08)
        self.assertEqual(f["timed_steps"], 4)
        self.assertAlmostEqual(f["gpu_timeline_s"], 0.08)
        self.assertAlmostEqual(f["images_per_s"], 4 * 256 / 0.08)  # the overall rate sees the wait
        self.assertAlmostEqual(f["step_ms_median"], 10.0)  # the median step does not
        self.assertAlmostEqual(f["images_per_s_median_step"], 25600.0)
        self.assertAlmostEqual(f["data_wait_fraction"], 0.5)

    def test_ratios_carry_the_issue_targets(self):
        by_feed = {"dataloader": {"images_per_s": 4400.0, "images_per_s_median_step": 4500.0},
                   "conveyor": {"images_per_s": 13200.0, "images_per_s_median_step": 13300.0},
                   "gpu": {"images_per_s": 13300.0, "images_per_s_median_step": 13400.0}}
        r = torch_train_from_jpeg.ratios(by_feed, "eager")
        self.assertAlmostEqual(r["conveyor_over_dataloader"], 3.0)
        self.assertAlmostEqual(r["conveyor_over_gpu"], 13200.0 / 13300.0)
        self.assertEqual(r["conveyor_over_dataloader_target"], 3.0)
        self.assertEqual(r["conveyor_over_gpu_target"], 0.95)
        compiled = torch_train_from_jpeg.ratios(by_feed, "compile")
        self.assertEqual(compiled["conveyor_over_gpu_target"], 0.85)
        self.assertNotIn("conveyor_over_dataloader_target", compiled)

    def test_a_skipped_conveyor_feed_gives_no_ratio(self):
        by_feed = {"dataloader": {"images_per_s": 4400.0, "images_per_s_median_step": 4500.0},
                   "conveyor": {"skipped": "cannot import conveyor"},
                   "gpu": {"images_per_s": 13300.0, "images_per_s_median_step": 13400.0}}
        r = torch_train_from_jpeg.ratios(by_feed, "eager")
        self.assertIsNone(r["conveyor_over_dataloader"])
        self.assertIsNone(r["conveyor_over_gpu"])
        self.assertAlmostEqual(r["dataloader_over_gpu"], 4400.0 / 13300.0)

    def test_a_module_that_fails_to_load_is_reported_with_its_reason(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "conveyor"))
            with open(os.path.join(d, "conveyor", "__init__.py"), "w") as f:
                f.write("raise ImportError('built for another Python')\n")
            saved = list(sys.path)
            try:
                module, reason = torch_train_from_jpeg.import_conveyor(d)
            finally:
                sys.path[:] = saved
                sys.modules.pop("conveyor", None)
        self.assertIsNone(module)
        self.assertIn(f"cannot import conveyor from --conveyor-python {d}", reason)
        self.assertIn("built for another Python", reason)


@unittest.skipUnless(importlib.util.find_spec("matplotlib"), "this Python has no matplotlib (Debian's "
                     "/usr/bin/python3 with python3-matplotlib has)")
class TrainFromJpegPlot(unittest.TestCase):
    def test_plots_every_variant_and_names_the_skipped_one(self):
        eager = {"dataloader": torch_train_from_jpeg.feed_figures([0.0, 60.0, 120.0], 256, 0.1, 0.12),
                 "conveyor": {"what": "", "skipped": "cannot import conveyor"},
                 "gpu": torch_train_from_jpeg.feed_figures([0.0, 19.0, 38.0], 256, 0.0, 0.04)}
        compiled = {feed: torch_train_from_jpeg.feed_figures([0.0, 15.0, 30.0], 256, 0.0, 0.03)
                    for feed in ("dataloader", "conveyor", "gpu")}
        run = {"batch": 256, "workers": 16, "threads": 16, "device": "test", "date_utc": "2026-11-24T00:00:00Z",
               "results": {"eager": eager, "compile": compiled},
               "ratios": {"eager": torch_train_from_jpeg.ratios(eager, "eager"),
                          "compile": torch_train_from_jpeg.ratios(compiled, "compile")}}
        with tempfile.TemporaryDirectory() as d:
            results, png = os.path.join(d, "r.json"), os.path.join(d, "r.png")
            with open(results, "w") as f:
                json.dump(run, f)
            done = subprocess.run([sys.executable, os.path.join(BENCH, "plot_train_from_jpeg.py"), results, png],
                                  capture_output=True, text=True, timeout=120)
            self.assertEqual(done.returncode, 0, done.stderr)
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


if __name__ == "__main__":
    unittest.main()
