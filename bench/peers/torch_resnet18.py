#!/usr/bin/env python3
"""PyTorch peer of bench/train/train_step_bench: the same training step in PyTorch, measured the same way.

torchvision's ResNet-18 (or the small ResNet of the Fashion-MNIST demo), channels_last, bf16 or fp16
autocast (fp16 with a GradScaler) or plain fp32 (TF32 off), SGD with momentum 0.9 and weight decay 5e-4,
cudnn.benchmark on. Each step starts from random uint8 NHWC images already on the GPU and normalizes them
there, as conveyor's step does. Warm-up and first step are reported apart from the steady state; step
times are CUDA events around each step (median, p95); images/s also from the wall clock.

  python3 torch_resnet18.py --batch 256 --precision bf16 --steps 50 --warmup 10 [--unfused-bn] [--graph]
                            [--model resnet18|small_resnet] [--size 224] [--json FILE]

--unfused-bn replaces every BatchNorm2d by a module that computes the batch mean, the batch variance
and the normalization as separate operations (what conveyor's --unfused-bn does with separate kernels).
--graph captures forward, backward and the optimizer step as one CUDA graph (whole-network capture).
"""
import argparse
import json
import statistics
import subprocess
import time

import torch
import torch.nn as nn
import torchvision


class UnfusedBatchNorm2d(nn.Module):
    """Batch norm from separate ops: mean, variance, normalize, scale and shift (NCHW semantics)."""

    def __init__(self, bn: nn.BatchNorm2d):
        super().__init__()
        self.weight, self.bias = bn.weight, bn.bias
        self.register_buffer("running_mean", bn.running_mean)
        self.register_buffer("running_var", bn.running_var)
        self.eps, self.momentum = bn.eps, bn.momentum

    def forward(self, x):
        if self.training:
            mean = x.mean(dim=(0, 2, 3))
            var = x.var(dim=(0, 2, 3), unbiased=False)
            with torch.no_grad():
                n = x.numel() / x.shape[1]
                self.running_mean.mul_(1 - self.momentum).add_(self.momentum * mean.float())
                self.running_var.mul_(1 - self.momentum).add_(self.momentum * var.float() * n / (n - 1))
        else:
            mean, var = self.running_mean, self.running_var
        inv_std = torch.rsqrt(var + self.eps)
        y = (x - mean[None, :, None, None]) * inv_std[None, :, None, None]
        return y * self.weight[None, :, None, None] + self.bias[None, :, None, None]


def unfuse(module: nn.Module):
    for name, child in module.named_children():
        if isinstance(child, nn.BatchNorm2d):
            setattr(module, name, UnfusedBatchNorm2d(child))
        else:
            unfuse(child)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + (x if self.downsample is None else self.downsample(x)))


def small_resnet(channels=1, width=32, blocks=2, classes=10):
    """conveyor's small_resnet: 3x3 stem, stages of width, 2x, 4x channels, global pool, linear."""
    layers = [nn.Conv2d(channels, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU()]
    cin = width
    for stage, cout in enumerate([width, 2 * width, 4 * width]):
        for b in range(blocks):
            layers.append(BasicBlock(cin, cout, 2 if stage > 0 and b == 0 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet18", choices=["resnet18", "small_resnet"])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--precision", default="bf16", choices=["bf16", "fp16", "fp32"])
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--size", type=int, default=0)
    ap.add_argument("--unfused-bn", action="store_true")
    ap.add_argument("--graph", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    resnet18 = a.model == "resnet18"
    size = a.size or (224 if resnet18 else 28)
    channels, classes = (3, 1000) if resnet18 else (1, 10)
    model = torchvision.models.resnet18(num_classes=classes) if resnet18 else small_resnet(channels, classes=classes)
    if a.unfused_bn:
        unfuse(model)
    model = model.to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": None}[a.precision]
    scaler = torch.amp.GradScaler("cuda", enabled=a.precision == "fp16")
    mean = torch.tensor([123.675, 116.28, 103.53][:channels], device=dev).view(1, channels, 1, 1)
    std = torch.tensor([58.395, 57.12, 57.375][:channels], device=dev).view(1, channels, 1, 1)

    gen = torch.Generator(device=dev).manual_seed(42)
    pixels = torch.randint(0, 256, (a.batch, size, size, channels), dtype=torch.uint8, device=dev, generator=gen)
    labels = torch.randint(0, classes, (a.batch,), device=dev, generator=gen)

    def step():
        x = pixels.permute(0, 3, 1, 2).float().sub_(mean).div_(std).contiguous(memory_format=torch.channels_last)
        # The autocast cache must be off for graph capture (PyTorch's CUDA graph notes).
        with torch.autocast("cuda", dtype=dtype or torch.float32, enabled=dtype is not None, cache_enabled=not a.graph):
            loss = loss_fn(model(x), labels)
        opt.zero_grad(set_to_none=False)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    start = time.perf_counter()
    first_loss = step()
    torch.cuda.synchronize()
    first_step_s = time.perf_counter() - start  # PyTorch's first step carries all its warm-up costs

    run = step
    if a.graph:
        if a.precision == "fp16":
            raise SystemExit("--graph with fp16 (GradScaler) is not supported here")
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_loss = step()

        def run():
            graph.replay()
            return static_loss

    for _ in range(a.warmup):
        run()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(a.steps)]
    start = time.perf_counter()
    for begin, end in events:
        begin.record()
        loss = run()
        end.record()
    torch.cuda.synchronize()
    wall = time.perf_counter() - start
    times = sorted(b.elapsed_time(e) for b, e in events)
    median = statistics.median(times)
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = ""
    result = {
        "bench": "torch_resnet18", "commit": commit or "unknown", "model": a.model, "batch": a.batch, "size": size,
        "precision": a.precision, "fused_bn": not a.unfused_bn, "graph": a.graph,
        "device": torch.cuda.get_device_name(), "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
        "first_step_s": first_step_s, "steps": a.steps, "step_ms_median": median, "step_ms_p95": p95,
        "images_per_s": 1000.0 * a.batch / median, "images_per_s_wall": a.batch * a.steps / wall,
        "first_loss": float(first_loss), "last_loss": float(loss),
    }
    print(json.dumps(result))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f)
            f.write("\n")


if __name__ == "__main__":
    main()
