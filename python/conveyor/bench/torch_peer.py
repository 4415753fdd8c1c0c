"""PyTorch's side of `python -m conveyor.bench`: the work of conveyor's chain with torchvision, as the
project's DataLoader peer does it (bench/peers/torch_datasets.py, which the installed package cannot
import): each file read whole and decoded by torchvision.io.decode_jpeg, then v2 RandomResizedCrop, flip
and ColorJitter on the uint8 tensor. A module-level class, so that it pickles into the workers."""
import torch
import torchvision
from torchvision.transforms import v2


class JpegFolder(torch.utils.data.Dataset):
    """(3 x size x size uint8, label) per (path, label)."""

    def __init__(self, samples, size, antialias):
        self.samples = samples
        self.transform = v2.Compose([
            v2.RandomResizedCrop(size, antialias=antialias),
            v2.RandomHorizontalFlip(0.5),
            v2.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.4),
        ])

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, label = self.samples[i]
        with open(path, "rb") as file:
            data = torch.frombuffer(bytearray(file.read()), dtype=torch.uint8)
        return self.transform(torchvision.io.decode_jpeg(data, mode=torchvision.io.ImageReadMode.RGB)), label
