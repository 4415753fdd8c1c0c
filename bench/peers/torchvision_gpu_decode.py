#!/usr/bin/env python3
"""torchvision decoding and augmenting on the GPU, the peer of pipeline_throughput --device gpu (conveyor's
hybrid pipeline): the way a practised PyTorch user moves this work to the GPU.

A DataLoader's workers only read the files (bytes, no decoding). Each batch is then decoded on the GPU in
one call, torchvision.io.decode_jpeg(list, device="cuda") (nvJPEG's batched decode), and augmented there:
RandomResizedCrop(size) with plain bilinear resizing (antialias=False: the resize conveyor does),
RandomHorizontalFlip(0.5), ColorJitter(.4, .4, .4), then normalized to bf16 NCHW with ImageNet's mean and
std, as conveyor's GPU side makes the model's input. Consecutive batches alternate between two CUDA
streams, so that one batch's decode and kernels overlap the next one's host work and launches; each batch
is ready when its stream's event has passed. Two variants:
  sample  RandomResizedCrop per image (its window and size are the image's own: inherent), then the flip and
          the colour jitter batched over the stacked batch with per-sample parameters (a mask for the flip;
          per-sample brightness, contrast and saturation factors applied with torch broadcasting, in one
          random order per batch, as kornia orders them), a handful of kernels per batch
  image   torchvision's v2 transforms image by image (crop, flip, jitter: each image its own launches)
--variants both (the default) measures each in turn and names the faster as the strongest.

Runs are long enough that start-up is small: --min-images (default 100,000) raises --epochs so that at least
that many images pass. Timing: bench/peers/timing_rules.pipeline_rates, as pipeline_throughput: counted from
the first batch, the time to it reported apart (time_to_first_batch_s; it includes CUDA's and nvJPEG's
start); a batch arrives when its tensor is made (its GPU work queued), and the clock stops once the GPU has
finished the last one.

  torchvision_gpu_decode.py --data DIR [--workers 8] [--batch 256] [--size 224] [--epochs 1]
                            [--min-images 100000] [--seed 0] [--variants sample,image] [--json FILE]
"""
import argparse
import math
import os
import sys
import time

import image_lists
import run_record
import timing_rules

VARIANTS = ("sample", "image")
MEAN = (123.675, 116.28, 103.53)
STD = (58.395, 57.12, 57.375)
JITTER = 0.4  # brightness, contrast and saturation, as conveyor's distort(.4, .4, .4)
STREAMS = 2
GRAY = (0.2989, 0.587, 0.114)  # torchvision's rgb_to_grayscale weights


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="ImageFolder root")
    ap.add_argument("--workers", type=int, default=8, help="DataLoader workers reading the files")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--min-images", type=int, default=100_000,
                    help="raise --epochs until at least this many images pass (0: --epochs as given)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--variants", default="sample,image", help=f"comma-separated, from {', '.join(VARIANTS)}")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    try:
        args.variants = timing_rules.parse_choices(args.variants, VARIANTS, "variant")
    except ValueError as error:
        ap.error(str(error))
    if args.epochs < 1 or args.min_images < 0 or args.batch < 1:
        ap.error("--epochs and --batch must be at least 1, --min-images at least 0")
    return args


def epochs_for(images, epochs, min_images):
    """The passes over `images` files: `epochs`, or more until at least `min_images` images pass."""
    if images <= 0:
        raise ValueError("no images")
    return max(epochs, math.ceil(min_images / images)) if min_images > 0 else epochs


def stream_of(batch_index, streams=STREAMS):
    """The CUDA stream (its index among `streams`) batch `batch_index` runs on: consecutive batches alternate."""
    if streams < 1:
        raise ValueError("at least one stream")
    return batch_index % streams


def jitter_range(strength):
    """ColorJitter's factor range for a strength: uniform in [max(0, 1 - s), 1 + s]."""
    if strength < 0:
        raise ValueError(f"jitter strength {strength} is negative")
    return max(0.0, 1.0 - strength), 1.0 + strength


def require_torch():
    try:
        import torch
        import torchvision  # noqa: F401
    except ImportError as error:
        sys.exit(f"torchvision_gpu_decode.py: cannot import torch/torchvision ({error}); run it with the Python "
                 f"that has torch (the GPU machine's python3)")
    if not torch.cuda.is_available():
        sys.exit("torchvision_gpu_decode.py: no CUDA device")


class Bytes:
    """(the file's bytes as a uint8 tensor, label) per (path, label): the workers' only work."""

    def __init__(self, samples):
        self.samples = samples

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        import torch
        path, label = self.samples[i]
        with open(path, "rb") as file:
            return torch.frombuffer(bytearray(file.read()), dtype=torch.uint8), label


def collate(items):
    import torch
    return [data for data, _ in items], torch.tensor([label for _, label in items])


def crop_each(decoded, size):
    """RandomResizedCrop per image (its own window), bilinear without antialiasing, stacked: N x 3 x size x size."""
    import torch
    from torchvision import transforms
    from torchvision.transforms.v2 import functional as F
    crops = []
    for image in decoded:
        top, left, height, width = transforms.RandomResizedCrop.get_params(image, (0.08, 1.0), (3 / 4, 4 / 3))
        crops.append(F.resized_crop(image, top, left, height, width, [size, size], antialias=False))
    return torch.stack(crops)


def flip_and_jitter_batched(images):
    """RandomHorizontalFlip(0.5) and ColorJitter(.4, .4, .4) over a uint8 batch, each sample its own flip and
    factors, with torchvision's formulas (blend with black, the mean gray, the gray image), in float."""
    import torch
    n = images.shape[0]
    device = images.device
    x = images.float()
    flip = torch.rand(n, device=device) < 0.5
    x = torch.where(flip.view(n, 1, 1, 1), x.flip(-1), x)
    low, high = jitter_range(JITTER)
    weights = torch.tensor(GRAY, device=device).view(1, 3, 1, 1)

    def factors():
        return torch.empty(n, 1, 1, 1, device=device).uniform_(low, high)

    def brightness(x):
        return (x * factors()).clamp_(0, 255)

    def contrast(x):
        mean = (x * weights).sum(1, keepdim=True).mean((2, 3), keepdim=True)
        f = factors()
        return (f * x + (1 - f) * mean).clamp_(0, 255)

    def saturation(x):
        gray = (x * weights).sum(1, keepdim=True)
        f = factors()
        return (f * x + (1 - f) * gray).clamp_(0, 255)

    for i in torch.randperm(3).tolist():  # one order per batch
        x = (brightness, contrast, saturation)[i](x)
    return x


def run(samples, args, variant):
    import torch
    import torchvision
    from torchvision.transforms import v2

    torch.manual_seed(args.seed)
    crop = v2.Compose([v2.RandomResizedCrop(args.size, antialias=False), v2.RandomHorizontalFlip(0.5)])
    jitter = v2.ColorJitter(brightness=JITTER, contrast=JITTER, saturation=JITTER)
    mean = torch.tensor(MEAN, device="cuda").view(1, 3, 1, 1)
    std = torch.tensor(STD, device="cuda").view(1, 3, 1, 1)
    epochs = epochs_for(len(samples), args.epochs, args.min_images)
    loader = torch.utils.data.DataLoader(Bytes(samples * epochs), batch_size=args.batch, shuffle=True,
                                         num_workers=args.workers, collate_fn=collate)
    streams = [torch.cuda.Stream() for _ in range(STREAMS)]
    start = time.perf_counter()
    arrivals = []
    ready = []  # (event, batch, labels) of the batches in flight: kept until their stream passed them
    for index, (encoded, labels) in enumerate(loader):
        stream = streams[stream_of(index)]
        with torch.cuda.stream(stream):
            decoded = torchvision.io.decode_jpeg(encoded, mode=torchvision.io.ImageReadMode.RGB, device="cuda")
            if variant == "image":
                images = torch.stack([jitter(crop(image)) for image in decoded]).float()
            else:
                images = flip_and_jitter_batched(crop_each(decoded, args.size))
            batch = ((images - mean) / std).to(torch.bfloat16)
            labels = labels.cuda(non_blocking=True)
            event = torch.cuda.Event()
            event.record(stream)
        arrivals.append((time.perf_counter(), batch.shape[0]))
        ready.append((event, batch, labels))
        if len(ready) > STREAMS:  # a consumer holds at most a batch per stream
            ready.pop(0)[0].synchronize()
    torch.cuda.synchronize()
    end = time.perf_counter()
    return {"variant": variant, "workers": args.workers, "epochs": epochs, "streams": STREAMS,
            **timing_rules.pipeline_rates(arrivals, start, end, args.workers)}


def main():
    args = parse_args()
    require_torch()
    import torch
    import torchvision
    try:
        samples = image_lists.list_image_folder(args.data)
    except image_lists.ListingError as error:
        sys.exit(f"torchvision_gpu_decode.py: {error}")
    by_variant = {}
    for variant in args.variants:
        by_variant[variant] = run(samples, args, variant)
        print(f"torchvision GPU decode, {variant}: {timing_rules.describe_rates(by_variant[variant])}", flush=True)
    best = timing_rules.strongest({v: r["images_per_s"] for v, r in by_variant.items()})
    result = run_record.header("torchvision_gpu_decode")
    result.update({
        "data": os.path.abspath(args.data), "batch": args.batch, "size": args.size,
        "min_images": args.min_images, "seed": args.seed, "torch": torch.__version__,
        "torchvision": torchvision.__version__, "device": torch.cuda.get_device_name(0), "strongest": best,
        "by_variant": by_variant,
        "transforms": "decode_jpeg(device=cuda) batched; RandomResizedCrop per image (antialias=False); flip and "
                      "ColorJitter(.4, .4, .4) batched with per-sample parameters (sample) or v2 per image "
                      "(image); bf16 NCHW normalized; batches alternate between two CUDA streams",
    })
    result.update(by_variant[best])
    print(f"strongest: {best}, {result['images_per_s']:.1f} images/s from the first batch, first batch after "
          f"{result['time_to_first_batch_s']:.3f} s", flush=True)
    if args.json:
        run_record.write_json(args.json, result)


if __name__ == "__main__":
    main()
