#!/usr/bin/env python3
"""PyTorch's DataLoader with torchvision's v2 transforms and tv_tensors, as the peer of
pipeline_throughput --format segmentation|detection (issue 35).

The same work per sample as conveyor's chain: read the files; torchvision.io.decode_jpeg the image (a
uint8 tensor) and, for segmentation, decode_png the mask; wrap them as tv_tensors.Image and
tv_tensors.Mask, or the boxes as tv_tensors.BoundingBoxes (XYXY, in the image's pixels) with their labels;
v2.RandomResizedCrop(size, antialias=A) + v2.RandomHorizontalFlip(0.5) + v2.ColorJitter(.4, .4, .4), which
move the mask (nearest) and the boxes (clamped) with the image, then, for detection,
v2.SanitizeBoundingBoxes() (drops the boxes the crop left degenerate, with their labels, as conveyor drops
boxes under a pixel of area); batches in pinned memory, 16 worker processes. A detection batch is padded
as conveyor's: boxes (N, M, 4), labels (N, M) with -1 padding, counts (N,), M the batch's most; the
collation runs in the workers.

  torch_fields.py --format segmentation --data ROOT (images/, masks/)
  torch_fields.py --format detection --data instances.json [--images DIR]   (default: images/ beside it)
      [--workers 16] [--batch 32] [--size 512] [--epochs 1] [--seed 0] [--limit N]
      [--antialias true|false|both] [--json FILE] [--conveyor-json FILE]

Timing (timing_rules.py): from the first batch: images_per_s_after_first_batch is the images of the
batches after the first over the time from its arrival to the last batch's; time_to_first_batch_s is the
start-up, reported apart. images_per_s (after W = workers warm-up batches, the rule torch_dataloader.py
uses) and images_per_s_overall are reported too. --antialias both measures both settings; the top level
holds the faster one's figures (issue 35 compares with the faster).

With --conveyor-json (pipeline_throughput --format ... in the same session) it prints and writes the
ratios conveyor / torch of both rates.
"""

import argparse
import json
import os
import socket
import sys
import time

import run_record
import timing_rules

try:
    import torch
    import torchvision
    from torchvision import tv_tensors
    from torchvision.io import decode_jpeg, decode_png, ImageReadMode
    from torchvision.transforms import v2
except ImportError as _error:
    sys.exit(f"torch_fields.py: cannot import torch/torchvision ({_error}); run it with the Python that has "
             f"torch (the GPU machine's python3)")

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png")


def read_bytes(path):
    with open(path, "rb") as file:
        return torch.frombuffer(bytearray(file.read()), dtype=torch.uint8)


def decode_image(path):
    data = read_bytes(path)
    if path.lower().endswith(".png"):
        return decode_png(data, ImageReadMode.RGB)
    return decode_jpeg(data, ImageReadMode.RGB)


def list_segmentation(root, limit):
    """(image, mask) pairs as Dataset::segmentation_folder pairs them: by path without extension, sorted."""
    images, masks = {}, {}
    for folder, into, extensions in ((os.path.join(root, "images"), images, IMAGE_EXTENSIONS),
                                     (os.path.join(root, "masks"), masks, (".png",))):
        for directory, _, files in os.walk(folder):
            for name in files:
                stem, ext = os.path.splitext(name)
                if ext.lower() in extensions:
                    key = os.path.relpath(os.path.join(directory, stem), folder)
                    into[key] = os.path.join(directory, name)
    pairs = [(images[k], masks[k]) for k in sorted(images) if k in masks]
    return pairs[:limit] if limit else pairs


def list_detection(annotations, images_root, limit):
    """(path, boxes XYXY, labels) per image as Dataset::coco_detection reads them: crowd boxes and boxes of
    no area dropped, classes 0..K-1 in category-id order."""
    with open(annotations) as file:
        coco = json.load(file)
    class_of = {c["id"]: k for k, c in enumerate(sorted(coco["categories"], key=lambda c: c["id"]))}
    per_image = {image["id"]: [] for image in coco["images"]}
    for a in coco["annotations"]:
        x, y, w, h = a["bbox"]
        if w <= 0 or h <= 0 or a.get("iscrowd", 0):
            continue
        per_image[a["image_id"]].append(([x, y, x + w, y + h], class_of[a["category_id"]]))
    out = []
    for image in coco["images"]:
        boxes = per_image[image["id"]]
        out.append((os.path.join(images_root, image["file_name"]), [b for b, _ in boxes], [c for _, c in boxes]))
    return out[:limit] if limit else out


def transforms(size, antialias, detection):
    steps = [v2.RandomResizedCrop(size, antialias=antialias), v2.RandomHorizontalFlip(0.5),
             v2.ColorJitter(0.4, 0.4, 0.4)]
    if detection:
        steps.append(v2.SanitizeBoundingBoxes())
    return v2.Compose(steps)


class SegmentationFiles(torch.utils.data.Dataset):
    def __init__(self, pairs, size, antialias):
        self.pairs, self.transform = pairs, transforms(size, antialias, False)

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, i):
        image_path, mask_path = self.pairs[i]
        image = tv_tensors.Image(decode_image(image_path))
        mask = tv_tensors.Mask(decode_png(read_bytes(mask_path), ImageReadMode.UNCHANGED)[0])
        image, mask = self.transform(image, mask)
        return image, mask


class DetectionFiles(torch.utils.data.Dataset):
    def __init__(self, records, size, antialias):
        self.records, self.transform = records, transforms(size, antialias, True)

    def __len__(self):
        return len(self.records)

    def __getitem__(self, i):
        path, boxes, labels = self.records[i]
        image = tv_tensors.Image(decode_image(path))
        sample = {
            "image": image,
            "boxes": tv_tensors.BoundingBoxes(torch.tensor(boxes, dtype=torch.float32).reshape(-1, 4),
                                              format="XYXY", canvas_size=image.shape[-2:]),
            "labels": torch.tensor(labels, dtype=torch.int64),
        }
        sample = self.transform(sample)
        return sample["image"], sample["boxes"], sample["labels"]


def collate_detection(samples):
    """Images stacked; boxes padded to (N, M, 4), labels (N, M) with -1, counts (N,): conveyor's layout."""
    images = torch.stack([s[0] for s in samples])
    counts = torch.tensor([len(s[1]) for s in samples], dtype=torch.int64)
    most = int(counts.max()) if len(samples) else 0
    boxes = torch.zeros(len(samples), most, 4)
    labels = torch.full((len(samples), most), -1, dtype=torch.int64)
    for k, (_, b, l) in enumerate(samples):
        boxes[k, :len(b)] = b
        labels[k, :len(l)] = l
    return images, boxes, labels, counts


def run(args, items, antialias):
    torch.manual_seed(args.seed)
    detection = args.format == "detection"
    dataset = (DetectionFiles if detection else SegmentationFiles)(items * args.epochs, args.size, antialias)
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                                         pin_memory=True, drop_last=False,
                                         collate_fn=collate_detection if detection else None)
    start = time.perf_counter()
    arrivals = []
    for batch in loader:
        arrivals.append((time.perf_counter(), batch[0].shape[0]))
    end = time.perf_counter()
    if not arrivals:
        sys.exit(f"torch_fields: the DataLoader gave no batch ({len(dataset)} samples, batch {args.batch})")
    warmup = timing_rules.warmup_batches(args.workers, len(arrivals))
    images = sum(n for _, n in arrivals)
    figures = {
        "workers": args.workers,
        "antialias": antialias,
        "images_per_s_after_first_batch": timing_rules.steady_rate(arrivals, end, 1),
        "images_per_s": timing_rules.steady_rate(arrivals, end, warmup),
        "images_per_s_overall": images / (end - start),
        "images": images,
        "warmup_batches": warmup,
        "time_to_first_batch_s": arrivals[0][0] - start,
    }
    print(f"torch DataLoader ({args.format}), {args.workers} workers, antialias={antialias}: "
          f"{figures['images_per_s_after_first_batch']:.1f} images/s from the first batch "
          f"(start-up {figures['time_to_first_batch_s']:.2f} s; {figures['images_per_s']:.1f} after "
          f"{warmup} batches; {images} images)", flush=True)
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--format", required=True, choices=["segmentation", "detection"])
    parser.add_argument("--data", required=True, help="segmentation: the root (images/, masks/); detection: "
                                                      "the instances JSON")
    parser.add_argument("--images", default="", help="detection: the images folder (default: images/ beside "
                                                     "the JSON)")
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--antialias", default="both", choices=["true", "false", "both"])
    parser.add_argument("--json", default="")
    parser.add_argument("--conveyor-json", default="")
    args = parser.parse_args()
    if args.format == "detection":
        images = args.images or os.path.join(os.path.dirname(os.path.abspath(args.data)), "images")
        items = list_detection(args.data, images, args.limit)
    else:
        items = list_segmentation(args.data, args.limit)
    if not items:
        sys.exit(f"torch_fields: no samples in {args.data}")
    settings = {"true": [True], "false": [False], "both": [True, False]}[args.antialias]
    by_antialias = {str(a).lower(): run(args, items, a) for a in settings}
    faster = max(by_antialias.values(), key=lambda f: f["images_per_s_after_first_batch"])
    result = {"benchmark": "torch_fields", "format": args.format}
    result.update(faster)
    result.update({
        "batch": args.batch,
        "config": {"data": args.data, "size": args.size, "epochs": args.epochs, "seed": args.seed,
                   "limit": args.limit, "pin_memory": True, "antialias": args.antialias,
                   "transforms": "decode + tv_tensors + v2.RandomResizedCrop(antialias) + RandomHorizontalFlip + "
                                 "ColorJitter(.4,.4,.4)" + (" + SanitizeBoundingBoxes" if args.format == "detection"
                                                            else "")},
        "machine": {"hostname": socket.gethostname(), "nproc": os.cpu_count(), "torch": torch.__version__,
                    "torchvision": torchvision.__version__},
        "by_antialias": by_antialias,
    })
    if args.conveyor_json:
        with open(args.conveyor_json) as file:
            conveyor = json.load(file)
        for key in ("images_per_s_after_first_batch", "images_per_s"):
            if faster.get(key) and conveyor.get(key):
                result[f"ratio_{key}"] = conveyor[key] / faster[key]
        print(f"conveyor ({args.format}): {conveyor['images_per_s_after_first_batch']:.1f} images/s from the first "
              f"batch; ratio conveyor / torch = {result.get('ratio_images_per_s_after_first_batch', 0):.2f}")
    if args.json:
        run_record.write_json(args.json, result)


if __name__ == "__main__":
    main()
