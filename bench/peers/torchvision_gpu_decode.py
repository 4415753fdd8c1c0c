#!/usr/bin/env python3
"""torchvision decoding and augmenting on the GPU, the peer of pipeline_throughput --device gpu (conveyor's
hybrid pipeline): the way a practised PyTorch user moves this work to the GPU.

A DataLoader's workers only read the files (bytes, no decoding); each batch is then decoded on the GPU by
torchvision.io.decode_jpeg(list, device="cuda") (nvJPEG, one batched call), and per image
v2.RandomResizedCrop(size, antialias=False: bilinear, the resize conveyor does) + RandomHorizontalFlip(0.5)
run there; the images are stacked, colour-jittered (v2.ColorJitter(.4, .4, .4)) and normalized to bf16 NCHW
with ImageNet's mean and std, as conveyor's GPU side makes the model's input. Two variants of the jitter:
  image  each image its own draw (what conveyor's distort does; one launch sequence per image)
  batch  one draw for the whole batch (fewer launches, less randomness)
--variants both (the default) measures each in turn and names the faster as the strongest.

Timing: bench/peers/timing_rules.pipeline_rates, as pipeline_throughput: counted from the first batch, the
time to it apart; a batch arrives when its tensor is made (its GPU work queued), and the clock stops once
the GPU has finished the last one.

  torchvision_gpu_decode.py --data DIR [--workers 8] [--batch 256] [--size 224] [--epochs 1] [--seed 0]
                            [--variants image,batch] [--json FILE]
"""
import argparse
import os
import sys
import time

import image_lists
import run_record
import timing_rules

VARIANTS = ("image", "batch")
MEAN = (123.675, 116.28, 103.53)
STD = (58.395, 57.12, 57.375)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="ImageFolder root")
    ap.add_argument("--workers", type=int, default=8, help="DataLoader workers reading the files")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--variants", default="image,batch", help=f"comma-separated, from {', '.join(VARIANTS)}")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    args.variants = timing_rules.parse_choices(args.variants, VARIANTS, "variant")
    return args


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


def run(samples, args, variant):
    import torch
    import torchvision
    from torchvision.transforms import v2

    torch.manual_seed(args.seed)
    crop = v2.Compose([v2.RandomResizedCrop(args.size, antialias=False), v2.RandomHorizontalFlip(0.5)])
    jitter = v2.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.4)
    mean = torch.tensor(MEAN, device="cuda").view(1, 3, 1, 1)
    std = torch.tensor(STD, device="cuda").view(1, 3, 1, 1)
    loader = torch.utils.data.DataLoader(Bytes(samples * args.epochs), batch_size=args.batch, shuffle=True,
                                         num_workers=args.workers, collate_fn=collate)
    start = time.perf_counter()
    arrivals = []
    for encoded, labels in loader:
        decoded = torchvision.io.decode_jpeg(encoded, mode=torchvision.io.ImageReadMode.RGB, device="cuda")
        if variant == "image":
            images = torch.stack([jitter(crop(image)) for image in decoded])
        else:
            images = jitter(torch.stack([crop(image) for image in decoded]))
        batch = ((images.float() - mean) / std).to(torch.bfloat16)
        labels = labels.cuda(non_blocking=True)
        arrivals.append((time.perf_counter(), batch.shape[0]))
    torch.cuda.synchronize()
    end = time.perf_counter()
    return {"variant": variant, "workers": args.workers,
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
        print(f"torchvision GPU decode, jitter per {variant}: {timing_rules.describe_rates(by_variant[variant])}",
              flush=True)
    best = timing_rules.strongest({v: r["images_per_s"] for v, r in by_variant.items()})
    result = run_record.header("torchvision_gpu_decode")
    result.update({
        "data": os.path.abspath(args.data), "batch": args.batch, "size": args.size, "epochs": args.epochs,
        "seed": args.seed, "torch": torch.__version__, "torchvision": torchvision.__version__,
        "device": torch.cuda.get_device_name(0), "strongest": best, "by_variant": by_variant,
        "transforms": "decode_jpeg(device=cuda) batched + per image v2.RandomResizedCrop(antialias=False) + "
                      "RandomHorizontalFlip; ColorJitter(.4, .4, .4) per image or per batch; bf16 NCHW normalized",
    })
    result.update(by_variant[best])
    print(f"strongest: jitter per {best}, {result['images_per_s']:.1f} images/s from the first batch", flush=True)
    if args.json:
        run_record.write_json(args.json, result)


if __name__ == "__main__":
    main()
