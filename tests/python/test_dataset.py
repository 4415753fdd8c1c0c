"""conveyor.Dataset from Python: sources (folders, file lists, list files, in-memory bytes), the ordering
methods, options, and iteration over samples."""
import os
import pathlib

import numpy
import pytest

from support import conveyor


def test_image_folder_lists_classes_in_sorted_order_with_their_labels(image_folder):
    ds = conveyor.Dataset.image_folder(image_folder)
    assert ds.class_names == ["class_0", "class_1", "class_2"]
    assert ds.source_size() == 24
    labels = [ds.source_label(i) for i in range(ds.source_size())]
    assert labels == [0] * 8 + [1] * 8 + [2] * 8
    assert ds.source_path(0).endswith(os.path.join("class_0", "image_000.jpg"))


def test_image_folder_takes_a_pathlike(image_folder):
    assert conveyor.Dataset.image_folder(pathlib.Path(image_folder)).source_size() == 24


def test_files_from_a_python_list_keep_their_order_and_labels(image_paths):
    ds = conveyor.Dataset.files([pathlib.Path(p) for p in image_paths[:5]], [4, 3, 2, 1, 0])
    samples = list(ds.map(conveyor.ops.decode()).with_options(threads=2))
    assert [s.path for s in samples] == image_paths[:5]
    assert [s.label for s in samples] == [4, 3, 2, 1, 0]
    assert [s.index for s in samples] == [0, 1, 2, 3, 4]


def test_files_without_labels_have_label_minus_one(image_paths):
    assert [s.label for s in conveyor.Dataset.files(image_paths[:3])] == [-1, -1, -1]


def test_list_file_reads_paths_relative_to_its_folder(image_folder, tmp_path):
    listing = tmp_path / "list.txt"
    listing.write_text("# comment\nclass_1/image_000.jpg 5\n\nclass_2/image_001.jpg 6\n")
    ds = conveyor.Dataset.list_file(listing, image_folder)
    assert [(pathlib.Path(s.path).name, s.label) for s in ds] == [("image_000.jpg", 5), ("image_001.jpg", 6)]


def test_memory_source_decodes_bytes_held_in_python(image_paths):
    blobs = [pathlib.Path(p).read_bytes() for p in image_paths[:4]]
    ds = conveyor.Dataset.memory([blobs[0], bytearray(blobs[1]), memoryview(blobs[2]),
                                  numpy.frombuffer(blobs[3], dtype=numpy.uint8)], [0, 1, 0, 1])
    samples = list(ds.map(conveyor.ops.decode()))
    assert [s.path for s in samples] == ["<memory:0>", "<memory:1>", "<memory:2>", "<memory:3>"]
    assert [s.label for s in samples] == [0, 1, 0, 1]
    assert samples[0].encoded == blobs[0]
    from_files = list(conveyor.Dataset.files(image_paths[:4]).map(conveyor.ops.decode()))
    for a, b in zip(samples, from_files):
        assert numpy.array_equal(numpy.asarray(a.image), numpy.asarray(b.image))


def test_sample_carries_its_pixels_as_an_hwc_uint8_copy(image_paths):
    (sample,) = list(conveyor.Dataset.files(image_paths[:1]).map(conveyor.ops.decode_center_crop(32)))
    pixels = numpy.asarray(sample.image)
    assert pixels.shape == (32, 32, 3) and pixels.dtype == numpy.uint8
    assert sample.shape == (32, 32, 3)
    assert pixels.std() > 0  # a real picture, not a blank


def test_a_sample_before_any_op_has_bytes_but_no_image(image_paths):
    (sample,) = list(conveyor.Dataset.files(image_paths[:1]))
    assert sample.image is None and sample.shape is None
    assert sample.encoded[:2] == b"\xff\xd8"  # a JPEG's SOI marker


def test_repeat_take_skip_shard_count_elements(image_folder):
    ds = conveyor.Dataset.image_folder(image_folder)
    assert len(list(ds.repeat(2))) == 48
    assert len(list(ds.take(5))) == 5
    assert len(list(ds.skip(20))) == 4
    assert [s.index for s in ds.shard(4, 1)] == [1, 5, 9, 13, 17, 21]
    assert sorted(s.epoch for s in ds.repeat(2)) == [0] * 24 + [1] * 24


def test_repeat_without_count_runs_until_the_consumer_stops(image_folder):
    count = 0
    for _ in conveyor.Dataset.image_folder(image_folder).repeat():
        count += 1
        if count == 100:
            break
    assert count == 100


def test_shuffle_is_a_seeded_permutation_of_the_epoch(image_folder):
    ds = conveyor.Dataset.image_folder(image_folder)
    order = [s.path for s in ds.shuffle(100, seed=1)]
    assert sorted(order) == sorted(s.path for s in ds)
    assert order != [s.path for s in ds]
    assert order == [s.path for s in ds.shuffle(100, seed=1)]
    assert order != [s.path for s in ds.shuffle(100, seed=2)]


def test_the_whole_epoch_shuffle_is_seeded_from_the_pipeline_unless_given(image_folder):
    ds = conveyor.Dataset.image_folder(image_folder)
    whole = [s.path for s in ds.shuffle().with_options(seed=5)]
    assert sorted(whole) == sorted(s.path for s in ds)
    assert whole == [s.path for s in ds.shuffle().with_options(seed=5)]
    assert whole != [s.path for s in ds.shuffle().with_options(seed=6)]
    assert [s.path for s in ds.shuffle(seed=3)] == [s.path for s in ds.shuffle(seed=3).with_options(seed=9)]


def test_with_options_keywords_change_only_what_they_name_as_in_cpp(image_folder):
    ds = conveyor.Dataset.image_folder(image_folder).with_options(threads=3, seed=9, on_error="skip")
    assert (ds.options.threads, ds.options.seed, ds.options.on_error) == (3, 9, "skip")
    again = ds.with_options(seed=4)
    assert (again.options.threads, again.options.seed, again.options.on_error) == (3, 4, "skip")
    options = conveyor.PipelineOptions(threads=2, deterministic=False, held_batches=3)
    given = ds.with_options(options)
    assert (given.options.threads, given.options.deterministic, given.options.held_batches) == (2, False, 3)


def test_with_options_names_what_it_does_not_know(image_folder):
    ds = conveyor.Dataset.image_folder(image_folder)
    with pytest.raises(conveyor.InvalidArgument, match="no option 'thread'.*threads"):
        ds.with_options(thread=4)
    with pytest.raises(ValueError, match="on_error must be one of 'fail', 'skip'; got 'ignore'"):
        ds.with_options(on_error="ignore")
    with pytest.raises(conveyor.InvalidArgument, match="not both"):
        ds.with_options(conveyor.PipelineOptions(), threads=2)


def test_python_map_changes_pixels_and_labels(image_paths):
    def invert(sample):
        sample.image = 255 - numpy.asarray(sample.image)
        sample.label = sample.index * 10

    plain = list(conveyor.Dataset.files(image_paths[:4]).map(conveyor.ops.decode_center_crop(24)))
    mapped = list(conveyor.Dataset.files(image_paths[:4]).map(conveyor.ops.decode_center_crop(24))
                  .map(invert, name="invert").with_options(threads=2))
    for a, b in zip(plain, mapped):
        assert numpy.array_equal(255 - numpy.asarray(a.image), numpy.asarray(b.image))
    assert [s.label for s in mapped] == [0, 10, 20, 30]


def test_python_map_may_replace_the_image_with_another_shape(image_paths):
    def gray_half(sample):
        pixels = numpy.asarray(sample.image)
        sample.image = numpy.ascontiguousarray(pixels[::2, ::2, 0])  # strided input, 2-D: one channel

    (sample,) = list(conveyor.Dataset.files(image_paths[:1]).map(conveyor.ops.decode_center_crop(32)).map(gray_half))
    assert sample.shape == (16, 16, 1)


def test_python_map_sample_expires_after_the_call(image_paths):
    kept = []
    list(conveyor.Dataset.files(image_paths[:1]).map(kept.append))
    with pytest.raises(conveyor.Error, match="gone now that the call returned"):
        kept[0].path


def test_python_filter_keeps_what_it_returns_true_for(image_folder):
    ds = conveyor.Dataset.image_folder(image_folder).filter(lambda s: s.label != 1).with_options(threads=2)
    assert sorted({s.label for s in ds}) == [0, 2]
    assert len(list(ds)) == 16


def test_python_filter_sees_a_read_only_sample(image_folder):
    def relabel(sample):
        sample.label = 3
        return True

    ds = conveyor.Dataset.image_folder(image_folder).take(1).filter(relabel)
    with pytest.raises(conveyor.PipelineError, match="read-only"):
        list(ds)


def test_ordering_after_a_filter_is_refused(image_folder):
    ds = conveyor.Dataset.image_folder(image_folder).filter(lambda s: True)
    with pytest.raises(conveyor.InvalidArgument):
        ds.shuffle(10, seed=1)


def test_each_iteration_runs_the_chain_again(image_folder):
    ds = conveyor.Dataset.image_folder(image_folder).take(3)
    assert [s.path for s in ds] == [s.path for s in ds]


def test_worker_nice_is_an_option_of_0_to_19_with_10_by_default(image_folder):
    ds = conveyor.Dataset.image_folder(image_folder)
    assert ds.options.worker_nice == 10
    assert ds.with_options(worker_nice=0).options.worker_nice == 0
    assert conveyor.PipelineOptions(worker_nice=4).worker_nice == 4
    assert "worker_nice=4" in repr(conveyor.PipelineOptions(worker_nice=4))
    with pytest.raises(conveyor.InvalidArgument, match="worker_nice must be 0-19"):
        ds.with_options(worker_nice=20)
