"""Stopping early and the GIL: an early break stops the pipeline at once (no hang), joins its threads and
gives its memory back (no leak); a pipeline whose maps are Python callables keeps running while the
consumer waits (the GIL is released) and can be stopped while they run. A hang here ends in the watchdog's
stack dump (conftest.py)."""
import threading

import numpy
import pytest

from support import conveyor, resident_mb, thread_count, train_chain


def endless(folder, size=128, threads=2):
    return train_chain(folder, size=size, threads=threads, epochs=None).batch(16).prefetch(4)


def break_after(dataset, count):
    for i, _ in enumerate(dataset):
        if i + 1 == count:
            break


def test_early_break_joins_the_threads_and_frees_the_batches(large_folder):
    ds = endless(large_folder)
    break_after(ds, 3)  # warm-up: oneTBB's workers and the allocator's arenas exist from here on
    threads, resident = thread_count(), resident_mb()
    for _ in range(25):
        break_after(ds, 3)
    # Each iterator owns a driver thread and about 12 buffers of 16 x 128 x 128 x 3 bytes (9 MB): a leak of
    # either would show as 25 more threads or about 200 MB.
    assert thread_count() <= threads
    assert resident_mb() - resident < 64, f"resident memory grew from {resident:.0f} to {resident_mb():.0f} MB"


def test_close_stops_the_pipeline_and_keeps_the_last_stats(large_folder):
    it = iter(endless(large_folder))
    next(it), next(it)
    it.close()
    with pytest.raises(StopIteration):
        next(it)
    assert it.stats().batches == 2


def test_a_with_block_closes_the_iterator(large_folder):
    with iter(endless(large_folder)) as it:
        next(it)
    with pytest.raises(StopIteration):
        next(it)


def test_a_tensor_kept_past_the_break_stays_valid(large_folder):
    for batch in endless(large_folder):
        kept = numpy.from_dlpack(batch.images)
        copy = kept.copy()
        break
    break_after(endless(large_folder), 5)  # another pipeline, other buffers
    assert numpy.array_equal(kept, copy)


def test_python_maps_run_on_the_pipeline_threads_while_the_consumer_waits(image_folder):
    seen = set()

    def note_thread(sample):
        seen.add(threading.get_ident())

    ds = conveyor.Dataset.image_folder(image_folder).repeat(4).map(note_thread).with_options(threads=3)
    assert len(list(ds)) == 96  # would deadlock if next() held the GIL while waiting
    assert threading.get_ident() not in seen  # the maps ran on the pipeline's threads


def test_dropping_an_iterator_while_python_maps_run_does_not_deadlock(large_folder):
    calls = []

    def decode_in_python(sample):
        calls.append(sample.index)
        sample.image = numpy.zeros((8, 8, 3), numpy.uint8)

    ds = conveyor.Dataset.image_folder(large_folder).repeat().map(decode_in_python).with_options(threads=3)
    for _ in range(10):
        break_after(ds.batch(4).prefetch(2), 2)  # the iterator's destructor joins maps waiting for the GIL
    assert len(calls) >= 10 * 2 * 4


def test_an_iterator_used_from_two_threads_at_once_refuses_the_second(image_folder):
    go = threading.Event()

    def wait_for_go(sample):  # holds the first element until the test lets it through
        go.wait()

    it = iter(conveyor.Dataset.image_folder(image_folder).map(wait_for_go).with_options(threads=2))
    refused, results = threading.Event(), []

    def take():
        try:
            results.append(next(it).index)
        except conveyor.Error as error:
            results.append(str(error))
            refused.set()

    takers = [threading.Thread(target=take) for _ in range(2)]
    for t in takers:
        t.start()
    assert refused.wait(60), "neither call of next() was refused"  # the other one waits inside next()
    go.set()
    for t in takers:
        t.join()
    it.close()
    assert sorted(results, key=str) == [0, "conveyor: an iterator is used from two threads at once"]
