"""The device hand-off without a GPU: to_device("cpu") views each batch in place and normalizes it on the
CPU when asked (checked against numpy), the feeder's ring refuses to overwrite held batches, and asking
for a GPU that is not there says so."""
import numpy
import pytest

from support import IMAGENET_MEAN, IMAGENET_STD, conveyor, train_chain


def reference_normalize(pixels, mean, std, layout):
    """(pixel - mean) / std in float32, NHWC -> the asked layout."""
    out = (pixels.astype(numpy.float32) - numpy.float32(mean)) / numpy.float32(std)
    return out.transpose(0, 3, 1, 2) if layout == "NCHW" else out


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_cpu_batches_are_normalized_like_numpy_does(image_folder, layout):
    ds = train_chain(image_folder, size=24).batch(8)
    host = [numpy.from_dlpack(b.images).copy() for b in ds]
    count = 0
    for batch, pixels in zip(ds.to_device("cpu", dtype="float32", layout=layout, mean=IMAGENET_MEAN,
                                          std=IMAGENET_STD), host):
        images = numpy.from_dlpack(batch.images)
        assert batch.normalized and not batch.on_device and batch.device == "cpu"
        assert images.dtype == numpy.float32
        assert images.shape == ((8, 3, 24, 24) if layout == "NCHW" else (8, 24, 24, 3))
        assert numpy.array_equal(numpy.from_dlpack(batch.pixels), pixels)  # the same pipeline output
        expected = reference_normalize(pixels, IMAGENET_MEAN, IMAGENET_STD, layout)
        assert numpy.abs(images - expected).max() < 1e-5
        count += 1
    assert count == 3


def test_float16_and_per_channel_defaults(image_folder):
    ds = train_chain(image_folder, size=16).batch(4)
    pixels = numpy.from_dlpack(next(iter(ds)).images).copy()
    batch = next(iter(ds.to_device("cpu", dtype="float16", mean=[100.0], std=50.0)))
    images = numpy.from_dlpack(batch.images)
    assert images.dtype == numpy.float16 and images.shape == (4, 3, 16, 16)
    # mean [100] covers channel 0 only (the others keep 0); std 50 covers every channel.
    expected = reference_normalize(pixels, [100.0, 0.0, 0.0], [50.0] * 3, "NCHW")
    assert numpy.abs(images.astype(numpy.float32) - expected).max() < 0.01


def test_bfloat16_is_reported_and_refused_by_numpy(image_folder):
    batch = next(iter(train_chain(image_folder, size=16).batch(4).to_device("cpu", dtype="bfloat16")))
    assert batch.images.dtype == "bfloat16" and batch.images.shape == (4, 3, 16, 16)
    with pytest.raises(BufferError, match="bfloat16"):
        numpy.asarray(batch.images)


def test_without_normalize_images_are_the_uint8_pixels(image_folder):
    ds = train_chain(image_folder, size=16).batch(4)
    batch = next(iter(ds.to_device("cpu")))
    assert not batch.normalized
    assert batch.images.dtype == "uint8" and batch.images.shape == (4, 16, 16, 3)
    assert batch.images.data_ptr == batch.pixels.data_ptr
    with pytest.raises(ValueError, match="need a floating-point dtype"):
        ds.to_device("cpu", dtype="uint8", mean=1.0)


def test_torch_spellings_of_dtype_are_accepted(image_folder):
    class TorchLikeDtype:  # what str(torch.bfloat16) gives
        def __str__(self):
            return "torch.float16"

    batch = next(iter(train_chain(image_folder, size=16).batch(4).to_device("cpu", dtype=TorchLikeDtype())))
    assert batch.images.dtype == "float16"


def test_auto_places_batches_on_the_cpu_when_there_is_no_gpu(image_folder):
    feeder = conveyor.DeviceFeeder("auto", depth=2)
    if feeder.placement.gpu:
        pytest.skip("this machine has a GPU")
    assert feeder.placement.device == -1 and "cpu" in feeder.placement.description
    sizes = [len(b) for b in feeder.feed(train_chain(image_folder, size=16).batch(10))]
    assert sizes == [10, 10, 4]
    assert feeder.stats().batches == 3 and feeder.stats().held == 0


def test_asking_for_a_gpu_that_is_not_there_raises_device_error(image_folder):
    if conveyor.DeviceFeeder("auto").placement.gpu:
        pytest.skip("this machine has a GPU")
    with pytest.raises(conveyor.DeviceError):
        train_chain(image_folder).batch(4).to_device("cuda:0")


def test_device_names_are_checked(image_folder):
    with pytest.raises(ValueError, match=r'device must be "auto", "cpu", "cuda" or "cuda:N"'):
        train_chain(image_folder).batch(4).to_device("tpu")


def test_a_feeder_whose_slots_are_all_held_raises_instead_of_overwriting(image_folder):
    ds = train_chain(image_folder, size=16, epochs=4).batch(4)
    kept, copies = [], []
    with pytest.raises(conveyor.Error, match="all 2 ring slots are held"):
        for batch in ds.to_device("cpu", dtype="float32", depth=2):
            kept.append(batch.images)  # each kept Tensor holds its ring slot
            copies.append(numpy.from_dlpack(kept[-1]).copy())
    assert len(kept) == 2
    for tensor, copy in zip(kept, copies):
        assert numpy.array_equal(numpy.from_dlpack(tensor), copy)


def test_stage_takes_a_host_batch_over(image_folder):
    feeder = conveyor.DeviceFeeder("cpu", dtype="float32")
    for batch in train_chain(image_folder, size=16).batch(4):
        pixels = numpy.from_dlpack(batch.images).copy()
        with pytest.raises(conveyor.Error, match="tensors of this batch are still alive"):
            kept = batch.labels
            feeder.stage(batch)
        del kept
        staged = feeder.stage(batch)
        assert batch.released
        assert numpy.array_equal(numpy.from_dlpack(staged.pixels), pixels)
        break


def test_gpu_work_options_on_the_cpu_change_nothing_and_say_so(image_folder):
    ds = train_chain(image_folder, size=16).batch(4)
    plain = [numpy.from_dlpack(b.images).copy() for b in ds.to_device("cpu", dtype="float32", gpu_augment=False,
                                                                      gpu_decode=False)]
    iterator = ds.to_device("cpu", dtype="float32", gpu_augment=True, gpu_decode=True, gpu_share=0.5)
    placed = [numpy.from_dlpack(b.images).copy() for b in iterator]
    assert len(placed) == len(plain) > 0
    assert all(numpy.array_equal(a, b) for a, b in zip(placed, plain))
    stats = iterator.feeder_stats()
    assert stats.gpu_decoded == 0 and stats.cpu_fallbacks == 0 and stats.decode_failures == 0
    assert iterator.stats().deferred == 0
    assert "CPU" in stats.decoder, stats.decoder


def test_a_gpu_share_outside_0_to_1_is_refused(image_folder):
    ds = train_chain(image_folder, size=16).batch(4)
    with pytest.raises(ValueError, match="share"):
        ds.to_device("cpu", gpu_decode=True, gpu_share=1.5)
    with pytest.raises(ValueError, match="depth"):
        conveyor.DeviceFeeder("cpu", depth=1, gpu_decode=True)
