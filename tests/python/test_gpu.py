"""Device batches on a GPU, taken by torch (runs on the GPU machine; skips elsewhere, saying why).

Written with unittest so that it also runs where pytest is not installed:
    PYTHONPATH=<module folder> CONVEYOR_MAKE_TEST_JPEGS=<make_test_jpegs> python3 tests/python/test_gpu.py -v
(scripts/test_python_on_gpu_machine.sh does that). Each failure message says what was compared, where it
differed and by how much, so one log is enough to find the bug.
"""
import gc
import subprocess
import tempfile
import unittest

import numpy

from support import IMAGENET_MEAN, IMAGENET_STD, conveyor, image_tool, thread_count, train_chain

SIZE, BATCH = 64, 16


def first_difference(a, b):
    """Where two arrays differ first, as text (the assertion message is built before the check: equal
    arrays must give a message too)."""
    if a.shape != b.shape:
        return f"shapes {a.shape} vs {b.shape}"
    differing = numpy.argwhere(a != b)
    if len(differing) == 0:
        return "no element differs"
    index = tuple(int(i) for i in differing[0])
    return f"first at {index}: {a[index]!r} vs {b[index]!r}, {int((a != b).sum())} of {a.size} differ"


class DeviceBatchesInTorch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        try:
            import torch
        except ImportError as error:
            raise unittest.SkipTest(f"torch is not importable ({error}): the GPU tests run on the GPU machine")
        if not torch.cuda.is_available():
            raise unittest.SkipTest("torch sees no CUDA device")
        if not conveyor.built_with_cuda:
            raise unittest.SkipTest("this conveyor module was built without CUDA")
        tool = image_tool()
        if tool is None:
            raise unittest.SkipTest("no make_test_jpegs (set CONVEYOR_MAKE_TEST_JPEGS)")
        cls.torch = torch
        cls.tmp = tempfile.TemporaryDirectory(prefix="conveyor-gpu-tests-")
        cls.folder = f"{cls.tmp.name}/train"
        subprocess.run([tool, cls.folder, "3", "16", "160", "200"], check=True, timeout=60)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def chain(self, epochs=1, batch=BATCH, size=SIZE):
        return train_chain(self.folder, size=size, threads=4, seed=11, epochs=epochs).batch(batch)

    def host_batches(self, dataset, **normalize):
        """Each batch as the CPU feeder gives it: (images, pixels, labels) as numpy copies."""
        out = []
        for b in dataset.to_device("cpu", **normalize):
            images = self.torch.from_dlpack(b.images).float().numpy().copy()
            out.append((images, numpy.from_dlpack(b.pixels).copy(), numpy.from_dlpack(b.labels).copy()))
        return out

    def test_bfloat16_nchw_on_the_gpu_has_the_cpu_normalize_bits(self):
        torch = self.torch
        ds = self.chain()
        normalize = dict(dtype="bfloat16", layout="NCHW", mean=IMAGENET_MEAN, std=IMAGENET_STD)
        reference = self.host_batches(ds, **normalize)
        float32 = self.host_batches(ds, dtype="float32", layout="NCHW", mean=IMAGENET_MEAN, std=IMAGENET_STD)
        count = 0
        # Only normalize on the GPU here: the pipeline makes every pixel, as on the CPU.
        on_gpu = ds.to_device("cuda:0", gpu_augment=False, gpu_decode=False, **normalize)
        for b, (want, pixels, labels), (exact, _, _) in zip(on_gpu, reference, float32):
            self.assertFalse(b.augmented)
            x, y = torch.from_dlpack(b.images), torch.from_dlpack(b.labels)
            self.assertEqual((x.device.type, x.dtype, tuple(x.shape)), ("cuda", torch.bfloat16, (BATCH, 3, SIZE, SIZE)))
            self.assertTrue(x.is_contiguous(), f"strides {x.stride()}")
            self.assertEqual((y.device.type, y.dtype), ("cuda", torch.int64))
            got = x.float().cpu().numpy()
            self.assertTrue(numpy.array_equal(got, want), f"batch {count}: GPU bf16 vs CPU bf16, "
                            f"{first_difference(got, want)}")
            # And both are float32's normalize rounded once: within half a bf16 step (2^-8 relative).
            worst = float((numpy.abs(got - exact) / numpy.maximum(numpy.abs(exact), 1e-3)).max())
            self.assertLessEqual(worst, 2 ** -8 + 1e-6, f"batch {count}: relative error {worst} against float32")
            gpu_pixels = torch.from_dlpack(b.pixels).cpu().numpy()
            self.assertTrue(numpy.array_equal(gpu_pixels, pixels), f"batch {count}: uint8 pixels, "
                            f"{first_difference(gpu_pixels, pixels)}")
            self.assertEqual(y.cpu().tolist(), labels.tolist(), f"batch {count}: labels")
            count += 1
        self.assertEqual(count, 3)

    def test_the_chains_flip_and_distort_run_on_the_gpu_with_the_cpu_bits(self):
        torch = self.torch
        ds = self.chain()
        normalize = dict(dtype="bfloat16", layout="NCHW", mean=IMAGENET_MEAN, std=IMAGENET_STD)
        reference = self.host_batches(ds, **normalize)
        count = moved_pixels = 0
        for b, (want, pixels, _) in zip(ds.to_device("cuda:0", gpu_decode=False, **normalize), reference):
            self.assertTrue(b.augmented, "to_device left flip and distort in the pipeline")
            got = torch.from_dlpack(b.images).float().cpu().numpy()
            self.assertTrue(numpy.array_equal(got, want), f"batch {count}: GPU flip+distort+normalize vs the "
                            f"CPU chain, {first_difference(got, want)}")
            # pixels are the pipeline's output, before the ops that moved: not the CPU chain's.
            moved_pixels += not numpy.array_equal(torch.from_dlpack(b.pixels).cpu().numpy(), pixels)
            count += 1
        self.assertEqual(count, 3)
        self.assertEqual(moved_pixels, 3, "the pipeline still ran the ops that moved to the GPU")

    def decoded_on_the_gpu(self, threads, share=0.5):
        """Every batch of a hybrid-decoded run as numpy float32, and the feeder's stats."""
        torch = self.torch
        ds = train_chain(self.folder, size=SIZE, threads=threads, seed=11).batch(BATCH)
        iterator = ds.to_device("cuda:0", dtype="float32", mean=IMAGENET_MEAN, std=IMAGENET_STD, gpu_share=share)
        out = [torch.from_dlpack(b.images).cpu().numpy().copy() for b in iterator]
        return out, iterator.feeder_stats()

    def test_hybrid_decode_takes_its_share_is_close_to_the_cpu_and_reproducible(self):
        images, stats = self.decoded_on_the_gpu(threads=2)
        if stats.gpu_decoded == 0 and "nvJPEG" not in stats.decoder:
            self.skipTest(f"no GPU decoder here: {stats.decoder}")
        total = 3 * BATCH
        self.assertEqual(stats.decode_failures, 0, stats.fallback_reasons)
        self.assertGreater(stats.gpu_decoded, total // 4, f"share 0.5 of {total}: {stats.fallback_reasons}")
        self.assertLess(stats.gpu_decoded + stats.cpu_fallbacks, total * 3 // 4)
        reference = self.host_batches(self.chain(), dtype="float32", mean=IMAGENET_MEAN, std=IMAGENET_STD)
        self.assertEqual(len(images), len(reference))
        # Another IDCT and resize: a few levels per image (the C++ GPU tests measured a median 2.3 and a
        # worst 7.1 before distort, which may stretch them by 1.4), where a wrong crop window, flip or
        # colour gives tens. 57.5: levels per normalized unit (ImageNet's std).
        levels = numpy.concatenate([numpy.abs(got - want).reshape(BATCH, -1).mean(axis=1) * 57.5
                                    for got, (want, _, _) in zip(images, reference)])
        self.assertLess(float(levels.max()), 20.0, f"mean difference per image in levels: {levels}")
        self.assertLess(float(numpy.median(levels)), 8.0, f"mean difference per image in levels: {levels}")
        again, _ = self.decoded_on_the_gpu(threads=4)
        for i, (a, b) in enumerate(zip(images, again)):
            self.assertTrue(numpy.array_equal(a, b), f"batch {i} at 2 vs 4 threads: {first_difference(a, b)}")

    def test_nhwc_is_a_channels_last_view_of_nchw(self):
        torch = self.torch
        for b in self.chain().to_device("cuda:0", dtype="bfloat16", layout="NHWC", mean=IMAGENET_MEAN,
                                        std=IMAGENET_STD):
            x = torch.from_dlpack(b.images)
            self.assertEqual(tuple(x.shape), (BATCH, SIZE, SIZE, 3))
            self.assertTrue(x.permute(0, 3, 1, 2).is_contiguous(memory_format=torch.channels_last))
            break

    def test_torch_takes_the_batch_without_a_copy(self):
        torch = self.torch
        for b in self.chain().to_device("cuda:0", dtype="float16", mean=IMAGENET_MEAN, std=IMAGENET_STD):
            self.assertEqual(b.device, "cuda:0")
            self.assertEqual(b.images.__dlpack_device__(), (2, 0))  # kDLCUDA, device 0
            self.assertEqual(torch.from_dlpack(b.images).data_ptr(), b.images.data_ptr)
            self.assertEqual(torch.from_dlpack(b.labels).data_ptr(), b.labels.data_ptr)
            with self.assertRaises(BufferError):
                numpy.asarray(b.images)
            break

    def test_a_side_stream_reads_every_batch_after_its_copy(self):
        torch = self.torch
        ds = self.chain(epochs=4)
        want = [pixels.astype(numpy.int64).sum() for _, pixels, _ in self.host_batches(ds)]
        side = torch.cuda.Stream()
        sums = []
        with torch.cuda.stream(side):  # torch.from_dlpack passes this stream to __dlpack__(stream=...)
            for b in ds.to_device("cuda:0", depth=2):
                sums.append(torch.from_dlpack(b.pixels).to(torch.int64).sum())
        side.synchronize()
        got = [int(s) for s in sums]
        self.assertEqual(got, [int(w) for w in want], "pixel sums read on a side stream")

    def test_kept_tensors_are_never_overwritten(self):
        torch = self.torch
        kept, copies = [], []
        with self.assertRaisesRegex(conveyor.Error, "all 2 ring slots are held"):
            for b in self.chain(epochs=4).to_device("cuda:0", depth=2):
                kept.append(torch.from_dlpack(b.pixels))  # holds the batch's ring slot
                copies.append(kept[-1].clone())
        self.assertEqual(len(kept), 2)
        torch.cuda.synchronize()
        for i, (tensor, copy) in enumerate(zip(kept, copies)):
            self.assertTrue(torch.equal(tensor, copy), f"kept batch {i} changed after later batches were staged")

    def test_early_break_gives_threads_and_device_memory_back(self):
        torch = self.torch
        ds = self.chain(epochs=None, batch=64, size=128)

        def break_after_two():
            for i, b in enumerate(ds.to_device("cuda:0", dtype="bfloat16", depth=3)):
                torch.from_dlpack(b.images).float().mean()
                if i == 1:
                    break
            del b  # the loop variable holds the last batch (and so the feeder's ring)
            gc.collect()
            torch.cuda.synchronize()

        break_after_two()
        threads, free = thread_count(), torch.cuda.mem_get_info()[0]
        for _ in range(10):
            break_after_two()
        # Each feeder's ring is 3 x (64 x 128 x 128 x 3 uint8 + bf16 images) = 28 MiB: ten leaked rings are 280.
        lost = (free - torch.cuda.mem_get_info()[0]) / 2**20
        self.assertLess(lost, 100, f"{lost:.0f} MiB of device memory not given back after 10 early breaks")
        self.assertLessEqual(thread_count(), threads, "threads left behind by early breaks")

    def test_a_training_step_consumes_the_batches(self):
        torch = self.torch
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2), torch.nn.ReLU(),
                                    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 3)).cuda()
        model = model.to(memory_format=torch.channels_last)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        losses = []
        for b in self.chain(epochs=3).to_device("cuda:0", dtype="bfloat16", mean=IMAGENET_MEAN, std=IMAGENET_STD):
            x = torch.from_dlpack(b.images).contiguous(memory_format=torch.channels_last)
            y = torch.from_dlpack(b.labels)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        values = [float(v) for v in losses]
        self.assertEqual(len(values), 9)
        self.assertTrue(all(numpy.isfinite(values)), f"losses {values}")


if __name__ == "__main__":
    unittest.main()
