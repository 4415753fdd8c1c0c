#!/usr/bin/env python3
"""pipeline_throughput.py: pipeline_throughput (the C++ program beside this file) from Python, through the
conveyor module: the same chain with the same settings and the same timing rule, so that the two measure
what iterating from Python costs (issue 14: at most 2 %).

  image_folder -> shuffle(10,000) -> repeat(epochs) -> decode_random_resized_crop(S) -> flip_horizontal(0.5)
  -> distort(.4, .4, .4) -> batch(B, (S, S, 3)) -> prefetch(P), iterated as `for batch in ds`

Each batch is handed on as a user would: numpy.from_dlpack of its images and labels (no copy, no pixel
touched); the C++ program does the same amount of consumer work with --checksum 0. Timing, as the C++
program: the clock starts before the dataset is made; images_per_s is counted from the first batch (its
images over the time from its arrival to the last one's), the time to it reported apart, and the rate
after W batches stands beside it (timing_rules.pipeline_rates); with --repeat R, the median run by
images_per_s. The JSON has the C++ program's field names.

  pipeline_throughput.py --data DIR [--conveyor-python DIR] [--threads N] [--batch 256] [--size 224]
                         [--epochs 1] [--seed 0] [--on-error fail|skip] [--prefetch 4] [--repeat 1]
                         [--in-flight N] [--deterministic 1|0] [--json FILE]
"""
import argparse
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
import run_record  # noqa: E402
import timing_rules  # noqa: E402


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="ImageFolder root (ROOT/<class>/*.jpg)")
    ap.add_argument("--conveyor-python", default="", help="the folder holding the conveyor module (put on sys.path)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--on-error", default="fail", choices=["fail", "skip"])
    ap.add_argument("--prefetch", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--in-flight", type=int, default=0, help="max_in_flight; 0: the library's default")
    ap.add_argument("--deterministic", type=int, default=1, choices=[0, 1])
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    if min(a.threads, a.batch, a.size, a.epochs, a.prefetch, a.repeat) < 1 or a.in_flight < 0:
        ap.error("--threads, --batch, --size, --epochs, --prefetch and --repeat must be >= 1, --in-flight >= 0")
    return a


def import_conveyor(directory):
    if directory:
        sys.path.insert(0, directory)
    try:
        import conveyor
        import numpy
    except ImportError as error:
        sys.exit(f"pipeline_throughput.py: {error} (give the module's folder with --conveyor-python)")
    return conveyor, numpy


def figures(arrivals, start, end, threads):
    """The C++ program's figures from (arrival time, images) per batch, the start and the end."""
    if not arrivals:
        return {"images_per_s": 0.0, "images": 0, "warmup_batches": 0}
    return timing_rules.pipeline_rates(arrivals, start, end, threads)


def run_once(conveyor, numpy, args):
    start = time.perf_counter()
    ops = conveyor.ops
    ds = (conveyor.Dataset.image_folder(args.data)
          .shuffle(10_000, seed=args.seed).repeat(args.epochs)
          .map(ops.decode_random_resized_crop(args.size))
          .map(ops.flip_horizontal(0.5))
          .map(ops.distort(brightness=0.4, contrast=0.4, saturation=0.4))
          .with_options(threads=args.threads, deterministic=bool(args.deterministic), on_error=args.on_error,
                        seed=args.seed, max_in_flight=args.in_flight)
          .batch(args.batch, sample_shape=(args.size, args.size, 3))
          .prefetch(args.prefetch))
    arrivals = []
    it = iter(ds)
    for batch in it:
        arrivals.append((time.perf_counter(), len(batch)))
        numpy.from_dlpack(batch.images), numpy.from_dlpack(batch.labels)
    end = time.perf_counter()
    out = figures(arrivals, start, end, args.threads)
    stats = it.stats()
    out.update({"threads": args.threads, "skipped": stats.skipped, "skip_reasons": dict(stats.skip_reasons),
                "consumer_wait_s": stats.consumer_wait_ns / 1e9, "pool_buffers": stats.pool_buffers,
                "max_in_flight": stats.max_in_flight})
    return out


def main():
    args = parse_args()
    conveyor, numpy = import_conveyor(args.conveyor_python)
    runs = [run_once(conveyor, numpy, args) for _ in range(args.repeat)]
    main_run = sorted(runs, key=lambda r: r["images_per_s"])[len(runs) // 2]
    result = run_record.header("pipeline_throughput_python")
    result.update({
        "config": {"data": args.data, "batch": args.batch, "size": args.size, "epochs": args.epochs,
                   "seed": args.seed, "on_error": args.on_error, "prefetch": args.prefetch, "repeat": args.repeat,
                   "in_flight": main_run["max_in_flight"], "deterministic": bool(args.deterministic),
                   "consumer": "numpy.from_dlpack(images), numpy.from_dlpack(labels)"},
        "conveyor": conveyor.__version__, "numpy": numpy.__version__,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "runs": [r["images_per_s"] for r in runs],
    })
    result.update(main_run)
    rates = timing_rules.describe_rates(main_run) if main_run["images"] else "no batch"
    print(f"threads {args.threads}: {rates}, skipped {main_run['skipped']}, "
          f"peak RSS {result['peak_rss_mb']:.1f} MB (Python)", flush=True)
    if args.json:
        run_record.write_json(args.json, result)


if __name__ == "__main__":
    main()
