#!/usr/bin/env python3
"""PyTorch's DataLoader on the same JPEG folder (or tar shards, a prepared set among them: --data
shards.json) as bench/pipeline/pipeline_throughput, as its peer.

The same work per image: read the file, torchvision.io.decode_jpeg on a uint8 tensor, then torchvision's
v2 RandomResizedCrop(size, antialias=A) + RandomHorizontalFlip(0.5) + ColorJitter(.4, .4, .4) on the uint8 tensor,
batches of 256 in pinned memory, 16 worker processes. The folder is listed with conveyor's
image_folder rules (class = sorted sub-folder, *.jpg/*.jpeg in any case, sorted paths; --limit keeps
the first N).

--epochs E repeats the list E times and reads it as one shuffled pass, as pipeline_throughput's
repeat(E) does: a DataLoader drains and restarts its workers at each epoch's end, a cost that a small
test folder would show every 20 batches but an ImageNet epoch (5,000 batches) hardly ever.

Timing, the same rule as pipeline_throughput (timing_rules.pipeline_rates): images_per_s is counted from
the first batch (the images after it over the time from its arrival to the last batch's), the time to the
first batch reported apart as start-up. Beside it, named: the rate after W batches
(images_per_s_after_warmup_batches, W = the worker count: each worker makes whole batches and all start
together, so the first W batches arrive at about the same moment and the headline rule credits the loader
with the work of the other W - 1, done before its clock started) and over the whole run
(images_per_s_overall).

  torch_dataloader.py --data DIR [--workers 16] [--batch 256] [--size 224] [--epochs 1] [--seed 0]
                      [--limit N] [--sweep 1,2,4,8,16] [--antialias true|false|both] [--json FILE]
                      [--conveyor-json FILE]

--antialias true (the default, torchvision's own default) resizes with an antialiasing filter when it
shrinks; --antialias false resizes with plain bilinear interpolation, the work conveyor's resize does.
--antialias both measures true, then false, in one call: the top-level fields are then the false run's
("antialias" says which), and "by_antialias" holds both runs (each with its sweep and ratios).

With --conveyor-json (the JSON that pipeline_throughput wrote in the same session), it also prints
conveyor's images/s and the ratio of the two (for each antialias setting measured).
"""

import argparse
import json
import os
import socket
import sys
import time

import image_lists
import timing_rules

try:
    import torch
    import torchvision
except ImportError as _error:
    sys.exit(f"torch_dataloader.py: cannot import torch/torchvision ({_error}); run it with the Python that has "
             f"torch (the GPU machine's python3)")
from torch_datasets import JpegFolder, TarShardImages  # noqa: E402  (after the check above, which names what is missing)


def run(samples, args, workers, antialias):
    """One timed pass: {"workers", "antialias"} and timing_rules.pipeline_rates' figures."""
    torch.manual_seed(args.seed)
    kind = TarShardImages if args.data.endswith(".json") else JpegFolder
    dataset = kind(samples * args.epochs, args.size, antialias)
    loader = torch.utils.data.DataLoader(
        dataset,
        batch_size=args.batch,
        shuffle=True,
        num_workers=workers,
        pin_memory=True,
        drop_last=False,
    )
    start = time.perf_counter()
    arrivals = []  # (time, images) per batch
    for batch, labels in loader:
        arrivals.append((time.perf_counter(), batch.shape[0]))
    end = time.perf_counter()

    if not arrivals:
        sys.exit(f"torch_dataloader: the DataLoader gave no batch ({len(dataset)} images, batch {args.batch})")
    return {"workers": workers, "antialias": antialias, **timing_rules.pipeline_rates(arrivals, start, end, workers)}


ANTIALIAS = {"true": [True], "false": [False], "both": [True, False]}


def measure(samples, args, antialias):
    """One antialias setting: the sweep's points (if any) and the figures of the last point (or of the one
    run at --workers)."""
    points = []
    if args.sweep:
        print(f"antialias={antialias}\n{'workers':>8} {'images/s':>12} {'efficiency':>11} {'first (s)':>10}")
        for workers in args.sweep:
            point = run(samples, args, workers, antialias)
            base = points[0] if points else point
            point["efficiency"] = (point["images_per_s"] * max(base["workers"], 1)
                                   / (max(workers, 1) * base["images_per_s"])) if base["images_per_s"] else 0.0
            points.append(point)
            print(f"{workers:>8} {point['images_per_s']:>12.1f} {100 * point['efficiency']:>10.1f}% "
                  f"{point['time_to_first_batch_s']:>10.3f}", flush=True)
        main_point = points[-1]
    else:
        main_point = run(samples, args, args.workers, antialias)
    figures = dict(main_point)
    figures["sweep"] = points
    print(f"torch DataLoader, {figures['workers']} workers, antialias={antialias}: "
          f"{timing_rules.describe_rates(figures)}", flush=True)
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True,
                        help="ImageFolder root, or a shard index (make_shards' shards.json, a prepared set too)")
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=0, help="use the first N images only")
    parser.add_argument("--sweep", default="", help="worker counts, e.g. 1,2,4,8,16")
    parser.add_argument("--antialias", default="true", choices=list(ANTIALIAS),
                        help="RandomResizedCrop's antialias; both: true, then false (default true)")
    parser.add_argument("--json", default="", help="write the results here")
    parser.add_argument("--conveyor-json", default="", help="pipeline_throughput's JSON from the same run")
    args = parser.parse_args()
    try:
        args.sweep = [int(w) for w in args.sweep.split(",")] if args.sweep else []
    except ValueError:
        parser.error(f"--sweep takes worker counts such as 1,2,4,8,16, not '{args.sweep}'")
    if any(w < 0 for w in args.sweep) or args.workers < 0 or args.batch < 1 or args.epochs < 1:
        parser.error("worker counts must be >= 0, --batch and --epochs >= 1")
    conveyor = None
    if args.conveyor_json:
        try:
            with open(args.conveyor_json) as file:
                conveyor = json.load(file)
        except (OSError, ValueError) as error:
            sys.exit(f"torch_dataloader: cannot read --conveyor-json {args.conveyor_json}: {error}")

    try:
        samples = (image_lists.list_tar_shards(args.data, args.limit) if args.data.endswith(".json")
                   else image_lists.list_image_folder(args.data, args.limit))
    except image_lists.ListingError as error:
        sys.exit(f"torch_dataloader: {error}")
    by_antialias = {}
    for antialias in ANTIALIAS[args.antialias]:
        figures = measure(samples, args, antialias)
        if conveyor:
            figures.update(timing_rules.conveyor_ratios(conveyor, figures))
            print(f"conveyor, {conveyor.get('threads')} threads: {conveyor['images_per_s']:.1f} images/s; "
                  f"ratio conveyor / torch (antialias={antialias}) = {figures['ratio_conveyor_to_torch']:.2f}")
        by_antialias[str(antialias).lower()] = figures
    # The top level keeps the fields older readers know; with both settings it is the antialias=False run,
    # the same resize work as conveyor's.
    primary = by_antialias["false" if args.antialias == "both" else args.antialias]
    result = {"benchmark": "torch_dataloader"}
    result.update({key: value for key, value in primary.items()})
    result.update({
        "batch": args.batch,
        "config": {"data": args.data, "size": args.size, "epochs": args.epochs, "seed": args.seed,
                   "limit": args.limit, "pin_memory": True, "antialias": args.antialias,
                   "transforms": "decode_jpeg + v2.RandomResizedCrop(antialias) + RandomHorizontalFlip + "
                                 "ColorJitter(.4,.4,.4)"},
        "machine": {"hostname": socket.gethostname(), "nproc": os.cpu_count(),
                    "torch": torch.__version__, "torchvision": torchvision.__version__},
        "by_antialias": by_antialias,
    })
    if args.json:
        try:
            with open(args.json, "w") as file:
                json.dump(result, file, indent=2)
                file.write("\n")
        except OSError as error:
            sys.exit(f"torch_dataloader: cannot write {args.json}: {error.strerror}")


if __name__ == "__main__":
    main()
