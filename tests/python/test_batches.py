"""Host batches from Python: shapes and dtypes through DLPack and the buffer protocol, who each sample is,
determinism at any thread count, and the lifetime rules (a batch is valid until the next one; kept tensors
keep their memory, and keeping too many raises instead of overwriting)."""
import numpy
import pytest

from support import conveyor, digest, train_chain


def test_batches_are_nhwc_uint8_images_and_int64_labels(image_folder):
    sizes = []
    for batch in train_chain(image_folder, size=32).batch(8):
        sizes.append(len(batch))
        images, labels = numpy.from_dlpack(batch.images), numpy.from_dlpack(batch.labels)
        assert images.shape == (8, 32, 32, 3) and images.dtype == numpy.uint8
        assert labels.shape == (8,) and labels.dtype == numpy.int64
        assert batch.images.shape == (8, 32, 32, 3) and batch.images.dtype == "uint8"
        assert batch.labels.dtype == "int64" and batch.images.device == "cpu"
        assert batch.sample_shape == (32, 32, 3) and batch.capacity == 8
        assert batch.images.__dlpack_device__() == (1, 0)  # kDLCPU
    assert sizes == [8, 8, 8]


def test_dlpack_and_the_array_interface_view_the_same_memory_without_copying(image_folder):
    for batch in train_chain(image_folder).batch(8):
        via_dlpack, via_interface = numpy.from_dlpack(batch.images), numpy.asarray(batch.images)
        assert via_dlpack.ctypes.data == via_interface.ctypes.data == batch.images.data_ptr
        assert numpy.array_equal(via_dlpack, via_interface)
        assert numpy.array_equal(numpy.asarray(batch.labels), numpy.from_dlpack(batch.labels))
        break


def test_labels_and_sample_info_say_who_each_sample_is(image_folder):
    ds = conveyor.Dataset.image_folder(image_folder)
    infos, labels, sequences = [], [], []
    for batch in ds.map(conveyor.ops.decode_center_crop(16)).batch(5):
        infos += batch.samples
        labels += numpy.from_dlpack(batch.labels).tolist()
        sequences.append(batch.sequence)
    assert [info.index for info in infos] == list(range(24))
    assert all(info.epoch == 0 and not info.padding for info in infos)
    assert labels == [ds.source_label(i) for i in range(24)]
    assert sequences == [0, 1, 2, 3, 4]


def test_the_last_batch_is_smaller_unless_dropped(image_folder):
    ds = conveyor.Dataset.image_folder(image_folder).map(conveyor.ops.decode_center_crop(16))
    assert [len(b) for b in ds.batch(10)] == [10, 10, 4]  # each len() while its batch is the current one
    assert [len(b) for b in ds.batch(10, drop_remainder=True)] == [10, 10]


def test_a_given_sample_shape_is_kept(image_folder):
    ds = conveyor.Dataset.image_folder(image_folder).map(conveyor.ops.decode_center_crop(20))
    batched = ds.batch(4, sample_shape=(20, 20, 3))
    assert batched.sample_shape == (20, 20, 3) and batched.batch_size == 4
    assert next(iter(batched)).images.shape == (4, 20, 20, 3)


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
def test_batches_are_identical_at_any_thread_count(image_folder, threads):
    reference = digest(train_chain(image_folder, threads=1, epochs=2).batch(6).prefetch(3))
    assert digest(train_chain(image_folder, threads=threads, epochs=2).batch(6).prefetch(3)) == reference


def test_the_same_elements_arrive_without_determinism(image_folder):
    def by_index(ds):
        rows = {}
        for batch in ds:
            images = numpy.from_dlpack(batch.images)
            for k, info in enumerate(batch.samples):
                rows[(info.epoch, info.index)] = images[k].tobytes()
        return rows

    ordered = by_index(train_chain(image_folder, threads=1).batch(4))
    relaxed = by_index(train_chain(image_folder, threads=3).with_options(threads=3, seed=7, deterministic=False)
                       .batch(4))
    assert ordered == relaxed


def test_a_batch_is_released_when_the_iterator_moves_on(image_folder):
    it = iter(train_chain(image_folder).batch(4))
    first = next(it)
    assert not first.released
    next(it)
    assert first.released
    with pytest.raises(conveyor.Error, match="valid until its iterator moves on"):
        first.images


def test_kept_tensors_outlive_their_batch_unchanged(image_folder):
    kept, copies = [], []
    with iter(train_chain(image_folder, epochs=3).batch(4).prefetch(2)) as it:
        batch = next(it)
        kept.append(batch.images)  # held: its buffer stays out of the pool
        copies.append(numpy.array(numpy.from_dlpack(kept[0])))
        for _ in it:  # many more batches than the pool has buffers
            pass
    assert numpy.array_equal(numpy.from_dlpack(kept[0]), copies[0])


def test_keeping_more_batches_than_held_batches_raises_instead_of_overwriting(image_folder):
    ds = train_chain(image_folder, epochs=20).batch(2).prefetch(2).with_options(threads=2, held_batches=1)
    kept, copies = [], []
    with pytest.raises(conveyor.Error, match="keeps more batches alive than PipelineOptions::held_batches"):
        for batch in ds:
            kept.append(numpy.from_dlpack(batch.images))  # a numpy view: holds the batch's memory
            copies.append(kept[-1].copy())
    assert len(kept) >= 2
    for view, copy in zip(kept, copies):
        assert numpy.array_equal(view, copy)


def test_release_gives_a_batch_back_early_and_kept_views_still_hold_it(image_folder):
    it = iter(train_chain(image_folder).batch(4))
    batch = next(it)
    view = numpy.from_dlpack(batch.images)
    copy = view.copy()
    batch.release()
    assert batch.released
    next(it), next(it)
    assert numpy.array_equal(view, copy)


def test_the_pool_gets_every_buffer_back_over_a_long_run(image_folder):
    it = iter(train_chain(image_folder, epochs=10).batch(4).prefetch(2))
    count = sum(1 for _ in it)
    stats = it.stats()
    assert count == 60 and stats.batches == 60
    assert 0 < stats.pool_buffers <= stats.pool_capacity < 60
