"""File lists in conveyor's order, for the PyTorch peers (free of torch, tested in tests/bench/).

list_image_folder follows Dataset::image_folder's rules: class = sorted sub-folder of the root, *.jpg and
*.jpeg in any case, paths sorted within a class. read_list_file follows Dataset::list_file's: one
"relative/path label" line per element, paths relative to the list file's folder. list_tar_shards reads
the shards a shard index (make_shards' shards.json) lists as conveyor's tar_shard_index reads them: a
sample is the run of members sharing a key (the name up to the first dot of its file name), its image the
member with an image extension (jpg, jpeg, ppm, pgm: a prepared set's decoded images), its label the .cls
member. netpbm_header reads a binary PPM/PGM's header (what make_shards --store raw writes).
"""

import json
import os
import tarfile

IMAGE_EXTENSIONS = ("jpg", "jpeg", "ppm", "pgm")


class ListingError(Exception):
    """A folder or list file that gives no usable list, with the path and the reason."""


def list_image_folder(root, limit=0):
    """(path, label) pairs, in conveyor's image_folder order; the first `limit` only when limit > 0."""
    if not os.path.isdir(root):
        raise ListingError(f"{root}: not a folder")
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
        raise ListingError(f"{root}: no .jpg/.jpeg image in a class folder (ImageFolder layout: ROOT/<class>/*.jpg)")
    return samples[:limit] if limit else samples


def class_count(samples):
    """1 + the largest label: the classifier's width for these samples."""
    return 1 + max(label for _, label in samples)


def read_list_file(path):
    """(path, label) pairs from a "<path> <label>" list file, as Dataset::list_file reads it: blank lines
    and lines starting with '#' are skipped, the label is the last space- or tab-separated field (so a path
    may hold spaces), paths are relative to the list file's folder. Any other line is an error naming the
    file and the line."""
    base = os.path.dirname(os.path.abspath(path))
    samples = []
    try:
        with open(path, encoding="utf-8") as file:
            lines = file.read().split("\n")
    except OSError as error:
        raise ListingError(f"{path}: cannot read ({error.strerror})") from error
    for number, raw in enumerate(lines, 1):
        line = raw.strip(" \t\r")
        if not line or line.startswith("#"):
            continue
        split = max(line.rfind(" "), line.rfind("\t"))
        name, label = line[:split].strip(" \t\r"), line[split + 1:]
        if split < 0 or not name or not (label.isascii() and label.isdigit()):
            raise ListingError(f"{path}, line {number}: expected '<path> <label>' with a label >= 0, got {line!r}")
        samples.append((os.path.join(base, name), int(label)))
    if not samples:
        raise ListingError(f"{path}: no entries")
    return samples


def list_tar_shards(index, limit=0):
    """(shard path, byte offset, byte count, label) per sample of the shards `index` lists, in stored order
    (shard after shard, members in order); the first `limit` only when limit > 0. Relative shard names are
    relative to the index's folder. A sample without an image or a label is an error naming it."""
    try:
        with open(index, encoding="utf-8") as file:
            shards = [entry["url"] for entry in json.load(file)["shardlist"]]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ListingError(f"{index}: not a shard index ({error})") from error
    base = os.path.dirname(os.path.abspath(index))
    samples = []
    for name in shards:
        path = name if os.path.isabs(name) else os.path.join(base, name)
        try:
            with tarfile.open(path, "r:") as tar:
                pending = {}  # key -> {"image": (offset, size), "label": int}
                order = []
                for member in tar:
                    if not member.isfile():
                        continue
                    folder, _, file_name = member.name.rpartition("/")
                    stem, dot, extension = file_name.partition(".")
                    if not dot:
                        continue
                    key = f"{folder}/{stem}" if folder else stem
                    if key not in pending:
                        pending[key] = {}
                        order.append(key)
                    if extension.lower() in IMAGE_EXTENSIONS:
                        pending[key]["image"] = (member.offset_data, member.size)
                    elif extension.lower() == "cls":
                        pending[key]["label"] = int(tar.extractfile(member).read().decode("ascii").strip())
        except (OSError, tarfile.TarError, ValueError) as error:
            raise ListingError(f"{path}: cannot read as a tar shard ({error})") from error
        for key in order:
            sample = pending[key]
            if "image" not in sample or "label" not in sample:
                raise ListingError(f"{path}: sample {key!r} has no image or no label")
            samples.append((path, sample["image"][0], sample["image"][1], sample["label"]))
            if limit and len(samples) == limit:
                return samples
    if not samples:
        raise ListingError(f"{index}: no sample in its shards")
    return samples


def netpbm_header(data):
    """(width, height, channels, pixel offset) of a binary PPM (3 channels) or PGM (1) with maximum value
    255, as conveyor's read_raw_image reads it (white space and '#' comments in the header); None when
    `data` is not one. A malformed or truncated one is a ValueError."""
    if len(data) < 3 or data[0:1] != b"P" or data[1:2] not in (b"5", b"6") or not data[2:3].isspace():
        return None
    fields, at = [], 2
    while len(fields) < 3:
        while at < len(data) and data[at:at + 1].isspace():
            at += 1
        if data[at:at + 1] == b"#":
            while at < len(data) and data[at:at + 1] != b"\n":
                at += 1
            continue
        start = at
        while at < len(data) and data[at:at + 1].isdigit():
            at += 1
        if start == at:
            raise ValueError("netpbm: a header field is not a number")
        fields.append(int(data[start:at]))
    width, height, maximum = fields
    channels = 3 if data[1:2] == b"6" else 1
    if maximum != 255 or width <= 0 or height <= 0 or at >= len(data) or not data[at:at + 1].isspace():
        raise ValueError(f"netpbm: {width} x {height}, maximum {maximum}: not an 8-bit image with pixels")
    at += 1
    if len(data) - at < width * height * channels:
        raise ValueError("netpbm: fewer pixel bytes than the header promises")
    return width, height, channels, at
