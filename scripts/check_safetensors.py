#!/usr/bin/env python3
"""Checks that PyTorch reads a conveyor checkpoint's weights (issue 15): the safetensors file loads with
safetensors.torch.load_file, and a torch model of the same architecture takes it with
load_state_dict(strict=True) (every name, shape and dtype as torch's own state_dict has them). Needs torch,
torchvision and safetensors (the GPU machine has them).

    python3 scripts/check_safetensors.py CHECKPOINT.json

CHECKPOINT.json is the file Trainer::save_checkpoint wrote (train_fashion_mnist --checkpoint FILE); its
weights file is found beside it. Prints one line per check and "OK: ..." at the end; exits 1 on the first
failure, saying what differs.
"""
import json
import math
import os
import sys


def fail(message):
    print(f"FAILED: {message}")
    sys.exit(1)


def small_resnet(torch_nn, torchvision_resnet, channels, width, blocks, classes):
    """conveyor's small_resnet with torchvision's module names: conv1/bn1 (3x3 stem, stride 1, no max-pool),
    layer1..layer3 of torchvision BasicBlocks (width, 2x, 4x), avgpool, fc."""

    class SmallResNet(torch_nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = torch_nn.Conv2d(channels, width, 3, 1, 1, bias=False)
            self.bn1 = torch_nn.BatchNorm2d(width)
            self.relu = torch_nn.ReLU(inplace=True)
            cin = width
            for stage, cout in enumerate([width, 2 * width, 4 * width]):
                layers = []
                for b in range(blocks):
                    stride = 2 if stage > 0 and b == 0 else 1
                    downsample = None
                    if stride != 1 or cin != cout:
                        downsample = torch_nn.Sequential(torch_nn.Conv2d(cin, cout, 1, stride, bias=False),
                                                         torch_nn.BatchNorm2d(cout))
                    layers.append(torchvision_resnet.BasicBlock(cin, cout, stride, downsample))
                    cin = cout
                setattr(self, f"layer{stage + 1}", torch_nn.Sequential(*layers))
            self.avgpool = torch_nn.AdaptiveAvgPool2d(1)
            self.fc = torch_nn.Linear(cin, classes)

        def forward(self, x):
            x = self.relu(self.bn1(self.conv1(x)))
            x = self.layer3(self.layer2(self.layer1(x)))
            return self.fc(self.avgpool(x).flatten(1))

    return SmallResNet()


def main(path):
    import torch
    import torchvision.models.resnet as torchvision_resnet
    from safetensors.torch import load_file

    with open(path) as f:
        document = json.load(f)
    if document.get("format") != "conveyor checkpoint":
        fail(f"{path} is not a conveyor checkpoint")
    state = document["state"]
    model = state["model"]
    weights_file = os.path.join(os.path.dirname(os.path.abspath(path)), state["files"]["weights"]["name"])
    tensors = load_file(weights_file)
    print(f"loaded {len(tensors)} tensors from {weights_file} with safetensors.torch.load_file")

    height, width_px, channels = model["input"]
    if model["kind"] == "resnet18":
        net = torchvision_resnet.resnet18(num_classes=model["classes"])
        if channels != 3:
            fail("resnet18 checkpoints are RGB")
    else:
        net = small_resnet(torch.nn, torchvision_resnet, channels, model["width"], model["blocks_per_stage"],
                           model["classes"])
    expected = net.state_dict()
    missing = sorted(set(expected) - set(tensors))
    extra = sorted(set(tensors) - set(expected))
    if missing or extra:
        fail(f"names differ from torch's: missing {missing[:5]}, extra {extra[:5]}")
    for name, tensor in expected.items():
        if tensors[name].shape != tensor.shape or tensors[name].dtype != tensor.dtype:
            fail(f"{name}: {tuple(tensors[name].shape)} {tensors[name].dtype} in the file, torch has "
                 f"{tuple(tensor.shape)} {tensor.dtype}")
        if tensors[name].is_floating_point() and not torch.isfinite(tensors[name]).all():
            fail(f"{name} holds non-finite values")
    net.load_state_dict(tensors, strict=True)
    print(f"load_state_dict(strict=True) took all {len(expected)} tensors of the {model['kind']}")

    # The model runs: eval-mode logits of a batch are finite and differ between inputs.
    net.eval()
    with torch.no_grad():
        x = torch.randn(4, channels, height, width_px)
        logits = net(x)
    if not torch.isfinite(logits).all() or float((logits[0] - logits[1]).abs().max()) == 0.0:
        fail("the loaded model's logits are not finite or do not depend on the input")
    steps = int(tensors["bn1.num_batches_tracked"])
    print(f"OK: {path}: {model['kind']} after {steps} steps, {sum(t.numel() for t in tensors.values())} values, "
          f"logits finite (max |logit| {float(logits.abs().max()):.3g})")
    return 0 if math.isfinite(float(logits.abs().max())) else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
