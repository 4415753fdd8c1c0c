"""conveyor.ops from Python: every op factory makes a SampleOp that runs in a pipeline and gives the shape
it promises; options are keywords with the C++ names; enumerations are strings, checked."""
import numpy
import pytest

from support import conveyor

ops = conveyor.ops


def first_sample(paths, *maps):
    ds = conveyor.Dataset.files(paths[:1])
    for op in maps:
        ds = ds.map(op)
    (sample,) = list(ds)
    return sample


def test_decode_gives_the_whole_image(image_paths):
    assert first_sample(image_paths, ops.decode()).shape == (48, 64, 3)
    assert first_sample(image_paths, ops.decode(color="gray")).shape == (48, 64, 1)


@pytest.mark.parametrize("op,shape", [
    (ops.decode_random_resized_crop(20), (20, 20, 3)),
    (ops.decode_random_resized_crop(20, scale_min=0.5, ratio_min=1.0, ratio_max=1.0, interpolation="area",
                                    fast=True), (20, 20, 3)),
    (ops.decode_center_crop(30), (30, 30, 3)),
])
def test_fused_decodes_give_their_size(image_paths, op, shape):
    assert first_sample(image_paths, op).shape == shape


@pytest.mark.parametrize("op,shape", [
    (ops.random_crop(16, 24, padding=4, mode="reflect"), (16, 24, 3)),
    (ops.pad(1, 2, 3, 4, mode="constant", value=7), (51, 71, 3)),
    (ops.resize(10, 12, interpolation="nearest"), (10, 12, 3)),
    (ops.flip_horizontal(1.0), (48, 64, 3)),
    (ops.flip_vertical(0.0), (48, 64, 3)),
    (ops.distort(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1), (48, 64, 3)),
])
def test_image_ops_give_their_shape(image_paths, op, shape):
    assert first_sample(image_paths, ops.decode(), op).shape == shape


def test_flip_with_probability_one_mirrors_the_image(image_paths):
    plain = numpy.asarray(first_sample(image_paths, ops.decode()).image)
    flipped = numpy.asarray(first_sample(image_paths, ops.decode(), ops.flip_horizontal(1.0)).image)
    assert numpy.array_equal(plain[:, ::-1], flipped)


def test_pad_fills_the_margin_with_its_value(image_paths):
    padded = numpy.asarray(first_sample(image_paths, ops.decode(), ops.pad(2, 0, 0, 0, value=9)).image)
    assert (padded[:2] == 9).all()


def test_ops_carry_their_names():
    assert ops.decode_random_resized_crop(224).name == "decode_random_resized_crop"
    assert repr(ops.flip_horizontal()) == "conveyor.ops.SampleOp('flip_horizontal')"


def test_enumeration_strings_are_checked():
    with pytest.raises(ValueError, match="color must be one of 'rgb', 'gray', 'keep'; got 'cmyk'"):
        ops.decode(color="cmyk")
    with pytest.raises(ValueError, match="mode must be one of 'constant', 'edge', 'reflect', 'symmetric'"):
        ops.pad(1, 1, 1, 1, mode="wrap")


def test_import_conveyor_ops_works():
    import conveyor.ops as imported
    assert imported is conveyor.ops
