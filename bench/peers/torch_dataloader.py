#!/usr/bin/env python3
"""PyTorch's DataLoader on the same JPEG folder as bench/pipeline/pipeline_throughput, as its peer.

The same work per image: read the file, torchvision.io.decode_jpeg on a uint8 tensor, then torchvision's
v2 RandomResizedCrop(size) + RandomHorizontalFlip(0.5) + ColorJitter(.4, .4, .4) on the uint8 tensor,
batches of 256 in pinned memory, 16 worker processes. The folder is listed with conveyor's
image_folder rules (class = sorted sub-folder, *.jpg/*.jpeg in any case, sorted paths; --limit keeps
the first N).

--epochs E repeats the list E times and reads it as one shuffled pass, as pipeline_throughput's
repeat(E) does: a DataLoader drains and restarts its workers at each epoch's end, a cost that a small
test folder would show every 20 batches but an ImageNet epoch (5,000 batches) hardly ever.

Timing, the same rule as pipeline_throughput: images_per_s counts the images of the batches after the
first W (W = the worker count, at least 1) over the time from batch W's arrival to the last batch's.
Each worker makes whole batches and all start together, so the first W batches arrive at about the same
moment; a clock started at the first batch would credit the loader with the work of the other W - 1
batches, done before the clock started. Also reported: the rate after the
first batch only (images_per_s_after_first_batch) and over the whole run (images_per_s_overall).

  torch_dataloader.py --data DIR [--workers 16] [--batch 256] [--size 224] [--epochs 1] [--seed 0]
                      [--limit N] [--sweep 1,2,4,8,16] [--json FILE] [--conveyor-json FILE]

With --conveyor-json (the JSON that pipeline_throughput wrote in the same session), it also prints
conveyor's images/s and the ratio of the two.
"""

import argparse
import json
import os
import socket
import sys
import time

import torch
import torchvision
from torchvision.transforms import v2


def list_image_folder(root, limit):
    """(path, label) pairs, in conveyor's image_folder order."""
    classes = sorted(entry.name for entry in os.scandir(root) if entry.is_dir(follow_symlinks=False))
    samples = []
    for label, name in enumerate(classes):
        paths = []
        for folder, _, files in os.walk(os.path.join(root, name), followlinks=False):
            for file in files:
                path = os.path.join(folder, file)
                if file.lower().endswith((".jpg", ".jpeg")) and os.path.isfile(path):
                    paths.append(path)
        samples.extend((path, label) for path in sorted(paths))
    if not samples:
        sys.exit(f"torch_dataloader: no .jpg/.jpeg image in a class folder under {root}")
    return samples[:limit] if limit else samples


class JpegFolder(torch.utils.data.Dataset):
    """The listed files, decoded and augmented on uint8 tensors. At module level so that it pickles
    when the DataLoader starts its workers with spawn or forkserver."""

    def __init__(self, samples, size):
        self.samples = samples
        self.transform = v2.Compose([
            v2.RandomResizedCrop(size, antialias=True),
            v2.RandomHorizontalFlip(0.5),
            v2.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.4),
        ])

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, label = self.samples[i]
        with open(path, "rb") as file:
            data = torch.frombuffer(bytearray(file.read()), dtype=torch.uint8)
        image = torchvision.io.decode_jpeg(data, mode=torchvision.io.ImageReadMode.RGB)  # 3 x H x W uint8
        return self.transform(image), label


def run(samples, args, workers):
    """One timed pass: {"workers", "images_per_s", "images_per_s_after_first_batch",
    "images_per_s_overall", "images", "warmup_batches", "time_to_first_batch_s", "steady_s"}."""
    torch.manual_seed(args.seed)
    dataset = JpegFolder(samples * args.epochs, args.size)
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

    def rate_after(warmup):
        if len(arrivals) <= warmup:
            return 0.0
        seconds = end - arrivals[warmup - 1][0]
        return sum(n for _, n in arrivals[warmup:]) / seconds if seconds > 0 else 0.0

    # W warm-up batches, fewer when the run is too short to leave half of it after them.
    warmup = min(max(workers, 1), max(1, len(arrivals) // 2))
    images = sum(n for _, n in arrivals)
    return {
        "workers": workers,
        "images_per_s": rate_after(warmup),
        "images_per_s_after_first_batch": rate_after(1),
        "images_per_s_overall": images / (end - start),
        "images": images,
        "warmup_batches": warmup,
        "time_to_first_batch_s": (arrivals[0][0] - start) if arrivals else 0.0,
        "steady_s": (end - arrivals[warmup - 1][0]) if arrivals else 0.0,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="ImageFolder root")
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=0, help="use the first N images only")
    parser.add_argument("--sweep", default="", help="worker counts, e.g. 1,2,4,8,16")
    parser.add_argument("--json", default="", help="write the results here")
    parser.add_argument("--conveyor-json", default="", help="pipeline_throughput's JSON from the same run")
    args = parser.parse_args()

    samples = list_image_folder(args.data, args.limit)
    points = []
    if args.sweep:
        print(f"{'workers':>8} {'images/s':>12} {'efficiency':>11} {'first (s)':>10}")
        for workers in (int(w) for w in args.sweep.split(",")):
            point = run(samples, args, workers)
            base = points[0] if points else point
            point["efficiency"] = (point["images_per_s"] * max(base["workers"], 1)
                                   / (max(workers, 1) * base["images_per_s"])) if base["images_per_s"] else 0.0
            points.append(point)
            print(f"{workers:>8} {point['images_per_s']:>12.1f} {100 * point['efficiency']:>10.1f}% "
                  f"{point['time_to_first_batch_s']:>10.3f}", flush=True)
        main_point = points[-1]
    else:
        main_point = run(samples, args, args.workers)

    result = {
        "benchmark": "torch_dataloader",
        "images_per_s": main_point["images_per_s"],
        "images_per_s_after_first_batch": main_point["images_per_s_after_first_batch"],
        "images_per_s_overall": main_point["images_per_s_overall"],
        "warmup_batches": main_point["warmup_batches"],
        "workers": main_point["workers"],
        "batch": args.batch,
        "images": main_point["images"],
        "time_to_first_batch_s": main_point["time_to_first_batch_s"],
        "steady_s": main_point["steady_s"],
        "config": {"data": args.data, "size": args.size, "epochs": args.epochs, "seed": args.seed,
                   "limit": args.limit, "pin_memory": True,
                   "transforms": "decode_jpeg + v2.RandomResizedCrop + RandomHorizontalFlip + ColorJitter(.4,.4,.4)"},
        "machine": {"hostname": socket.gethostname(), "nproc": os.cpu_count(),
                    "torch": torch.__version__, "torchvision": torchvision.__version__},
        "sweep": points,
    }
    print(f"torch DataLoader, {result['workers']} workers: {result['images_per_s']:.1f} images/s steady after "
          f"{result['warmup_batches']} warm-up batches ({result['images_per_s_after_first_batch']:.1f} after the "
          f"first batch, {result['images_per_s_overall']:.1f} overall; {result['images']} images, first batch "
          f"after {result['time_to_first_batch_s']:.3f} s)")
    if args.conveyor_json:
        with open(args.conveyor_json) as file:
            conveyor = json.load(file)
        ratio = conveyor["images_per_s"] / result["images_per_s"] if result["images_per_s"] else 0.0
        result["conveyor_images_per_s"] = conveyor["images_per_s"]
        result["conveyor_threads"] = conveyor.get("threads")
        result["ratio_conveyor_to_torch"] = ratio
        for rule in ("images_per_s_after_first_batch", "images_per_s_overall"):
            if conveyor.get(rule) and result[rule]:
                result[f"ratio_conveyor_to_torch_{rule.removeprefix('images_per_s_')}"] = conveyor[rule] / result[rule]
        print(f"conveyor, {conveyor.get('threads')} threads: {conveyor['images_per_s']:.1f} images/s; "
              f"ratio conveyor / torch = {ratio:.2f}")
    if args.json:
        with open(args.json, "w") as file:
            json.dump(result, file, indent=2)
            file.write("\n")


if __name__ == "__main__":
    main()
