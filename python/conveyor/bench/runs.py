"""The measured runs of `python -m conveyor.bench`: each side makes `batches` batches of the same chain,
and a run's figures are counted from its first batch."""
import os
import random
import time

import conveyor


def rates(arrivals, start, end):
    """From (time_s, images) per batch in arrival order: images_per_s counted from the first batch (the
    images after it over the time from its arrival to `end`), time_to_first_batch_s (start-up, apart) and
    images_per_s_overall. The headline rule of the project's benchmarks (bench/peers/timing_rules.py's
    pipeline_rates; tests/python/test_bench_module.py checks that the two agree)."""
    if not arrivals:
        raise ValueError("no batch arrived")
    after_first = sum(n for _, n in arrivals[1:])
    window = end - arrivals[0][0]
    images = sum(n for _, n in arrivals)
    return {
        "images_per_s": after_first / window if window > 0 and after_first else 0.0,
        "time_to_first_batch_s": arrivals[0][0] - start,
        "images_per_s_overall": images / (end - start) if end > start else 0.0,
        "images": images,
        "batches": len(arrivals),
    }


def conveyor_chain(folder, size, threads, seed):
    ops = conveyor.ops
    return (conveyor.Dataset.image_folder(folder)
            .shuffle(seed=seed).repeat()
            .map(ops.decode_random_resized_crop(size))
            .map(ops.flip_horizontal(0.5))
            .map(ops.distort(brightness=0.4, contrast=0.4, saturation=0.4))
            .with_options(threads=threads, seed=seed))


def run_conveyor(settings, threads, prefetch, progress):
    """conveyor's pipeline with `threads` threads (1 and no prefetch ahead: the feed side)."""
    start = time.perf_counter()
    ds = conveyor_chain(settings.folder, settings.size, threads, settings.seed)
    batched = ds.batch(settings.batch).prefetch(prefetch)
    arrivals = []
    with iter(batched) as it:
        for batch in it:
            arrivals.append((time.perf_counter(), len(batch)))
            progress.advance()
            if len(arrivals) == settings.batches:
                break
    return rates(arrivals, start, time.perf_counter())


def folder_samples(folder):
    """(path, label) of every image, as conveyor's image_folder lists them."""
    listed = conveyor.Dataset.image_folder(folder)
    return [(listed.source_path(i), listed.source_label(i)) for i in range(listed.source_size())]


def run_dataloader(settings, workers, antialias, progress):
    """PyTorch's DataLoader doing the same work (imports torch: call only where torch_available())."""
    import torch
    from . import torch_peer

    samples = folder_samples(settings.folder)
    needed = settings.batches * settings.batch
    order = random.Random(settings.seed)
    repeated = []
    while len(repeated) < needed:  # whole passes over the folder, each shuffled, as conveyor's repeat()
        epoch = list(samples)
        order.shuffle(epoch)
        repeated += epoch
    torch.manual_seed(settings.seed)
    start = time.perf_counter()
    loader = torch.utils.data.DataLoader(torch_peer.JpegFolder(repeated[:needed], settings.size, antialias),
                                         batch_size=settings.batch, num_workers=workers,
                                         pin_memory=torch.cuda.is_available())
    arrivals = []
    for images, _ in loader:
        arrivals.append((time.perf_counter(), images.shape[0]))
        progress.advance()
    return rates(arrivals, start, time.perf_counter())


def torch_available():
    """None when torch and torchvision import, else why not."""
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as error:
        return str(error)
    return None


def default_threads():
    return len(os.sched_getaffinity(0))
