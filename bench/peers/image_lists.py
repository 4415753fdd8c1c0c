"""File lists in conveyor's order, for the PyTorch peers (free of torch, tested in tests/bench/).

list_image_folder follows Dataset::image_folder's rules: class = sorted sub-folder of the root, *.jpg and
*.jpeg in any case, paths sorted within a class. read_list_file follows Dataset::list_file's: one
"relative/path label" line per element, paths relative to the list file's folder.
"""

import os


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
