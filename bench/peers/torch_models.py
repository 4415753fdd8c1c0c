"""The PyTorch models the peers train: conveyor's small_resnet written in torch.nn, and a batch norm made
of separate operations (what conveyor's --unfused-bn measures). Imports torch: load it only after
checking that torch is there (the peers' require_torch)."""

import torch
import torch.nn as nn


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
    """Replaces every BatchNorm2d under `module` by an UnfusedBatchNorm2d sharing its tensors."""
    for name, child in module.named_children():
        if isinstance(child, nn.BatchNorm2d):
            setattr(module, name, UnfusedBatchNorm2d(child))
        else:
            unfuse(child)


class BasicBlock(nn.Module):
    """conveyor's BasicBlock (src/train/network.cpp): conv3x3-BN-ReLU, conv3x3-BN, plus the input (through
    a 1x1 convolution and BN when the stride or the width changes), then ReLU."""

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
    """conveyor's small_resnet (src/train/network.cpp): 3x3 stem (stride 1, no max-pool), stages of width,
    2x and 4x channels with `blocks` BasicBlocks each (the first block of stages 2 and 3 has stride 2),
    global average pooling, linear. Initialised as conveyor initialises it: convolutions Kaiming-normal
    on fan-out, batch norm 1 and 0, the linear layer with PyTorch's default U(+-1/sqrt(fan_in))."""
    layers = [nn.Conv2d(channels, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU()]
    cin = width
    for stage, cout in enumerate([width, 2 * width, 4 * width]):
        for b in range(blocks):
            layers.append(BasicBlock(cin, cout, 2 if stage > 0 and b == 0 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    model = nn.Sequential(*layers)
    for module in model.modules():
        if isinstance(module, nn.Conv2d):
            nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
    return model
