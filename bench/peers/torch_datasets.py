"""The DataLoader datasets the PyTorch peers read JPEG files with: each file read whole and decoded by
torchvision.io.decode_jpeg on a uint8 tensor, then augmented by torchvision's v2 transforms on that
tensor. TarShardImages reads the samples of tar shards (a prepared set among them: its images may be stored
decoded, as binary PPM, which are taken as they are). Module-level classes, so that they pickle when a
DataLoader starts its workers with spawn or forkserver. Imports torch: load it only after checking that
torch is there (the peers' require_torch)."""

import os

import numpy
import torch
import torchvision
from torchvision.transforms import v2

from image_lists import netpbm_header


def read_jpeg(path, mode):
    """The file's bytes decoded to a C x H x W uint8 tensor (mode: torchvision.io.ImageReadMode)."""
    with open(path, "rb") as file:
        data = torch.frombuffer(bytearray(file.read()), dtype=torch.uint8)
    return torchvision.io.decode_jpeg(data, mode=mode)


def decode_rgb(data):
    """Encoded bytes (a JPEG, or a binary PPM as make_shards --store raw writes) as a 3 x H x W uint8 tensor:
    a PPM's pixels are taken as stored, with no decoding, as conveyor's decode ops take them."""
    header = netpbm_header(data)
    if header is None:
        return torchvision.io.decode_jpeg(torch.frombuffer(bytearray(data), dtype=torch.uint8),
                                          mode=torchvision.io.ImageReadMode.RGB)
    width, height, channels, offset = header
    if channels != 3:
        raise ValueError("a gray (PGM) image where RGB is read")
    pixels = numpy.frombuffer(data, dtype=numpy.uint8, count=width * height * 3, offset=offset)
    return torch.from_numpy(pixels.reshape(height, width, 3).copy()).permute(2, 0, 1)


def training_transform(size, antialias):
    """RandomResizedCrop(size) (bilinear, antialiased when shrinking if `antialias`), RandomHorizontalFlip(0.5),
    ColorJitter(.4, .4, .4): the work of conveyor's decode_random_resized_crop + flip_horizontal + distort."""
    return v2.Compose([
        v2.RandomResizedCrop(size, antialias=antialias),
        v2.RandomHorizontalFlip(0.5),
        v2.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.4),
    ])


class JpegFolder(torch.utils.data.Dataset):
    """(3 x size x size uint8, label) per (path, label): RGB decode, then training_transform."""

    def __init__(self, samples, size, antialias=True):
        self.samples = samples
        self.transform = training_transform(size, antialias)

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, label = self.samples[i]
        return self.transform(read_jpeg(path, torchvision.io.ImageReadMode.RGB)), label


class TarShardImages(torch.utils.data.Dataset):
    """(3 x size x size uint8, label) per (shard, offset, size, label) of image_lists.list_tar_shards: the
    image's bytes read from its shard with one pread (each worker opens the shards it reads once), decoded
    by decode_rgb (a stored PPM is not decoded), then training_transform."""

    def __init__(self, samples, size, antialias=True):
        self.samples = samples
        self.transform = training_transform(size, antialias)
        self.files = {}  # per worker process: shard path -> descriptor

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        shard, offset, size, label = self.samples[i]
        fd = self.files.get(shard)
        if fd is None:
            fd = self.files[shard] = os.open(shard, os.O_RDONLY)
        data = os.pread(fd, size, offset)
        if len(data) != size:
            raise ValueError(f"{shard}: {len(data)} of {size} bytes at {offset}")
        return self.transform(decode_rgb(data)), label


class GrayJpegs(torch.utils.data.Dataset):
    """(1 x side x side uint8, label) per (path, label): grayscale decode, then, if `augment`, pad `pad`
    with zeros + RandomCrop(side) (when pad > 0) and RandomHorizontalFlip(0.5) (when `flip`): conveyor's
    random_crop(side, side, pad) + flip_horizontal. A file of another size is an error naming it."""

    def __init__(self, samples, side, pad, augment, flip=True):
        self.samples, self.side = samples, side
        steps = ([v2.RandomCrop(side, padding=pad)] if pad > 0 else []) + ([v2.RandomHorizontalFlip(0.5)] if flip else [])
        self.transform = v2.Compose(steps) if augment and steps else None

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, label = self.samples[i]
        image = read_jpeg(path, torchvision.io.ImageReadMode.GRAY)
        if tuple(image.shape) != (1, self.side, self.side):
            raise ValueError(f"{path}: decoded to {tuple(image.shape)}, expected (1, {self.side}, {self.side})")
        return (self.transform(image) if self.transform else image), label
