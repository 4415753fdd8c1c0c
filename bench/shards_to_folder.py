#!/usr/bin/env python3
"""Writes the images of tar shards (a shard index, as make_shards writes it) as an ImageFolder, byte for byte:
OUT/c<label:03>/<n:06>.jpg, so that programs that read folders (feed_vs_prefetch) read a prepared set's very
files. Standard library only.

  shards_to_folder.py SHARDS.json OUT"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
import image_lists  # noqa: E402


def extract(index, out):
    """Writes every sample; returns how many."""
    samples = image_lists.list_tar_shards(index)
    files = {}
    try:
        for n, (shard, offset, size, label) in enumerate(samples):
            fd = files.get(shard)
            if fd is None:
                fd = files[shard] = os.open(shard, os.O_RDONLY)
            data = os.pread(fd, size, offset)
            if len(data) != size:
                raise ValueError(f"{shard}: {len(data)} of {size} bytes at {offset}")
            folder = os.path.join(out, f"c{label:03}")
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, f"{n:06}.jpg"), "wb") as file:
                file.write(data)
    finally:
        for fd in files.values():
            os.close(fd)
    return len(samples)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        sys.exit("usage: shards_to_folder.py SHARDS.json OUT")
    try:
        count = extract(argv[0], argv[1])
    except (image_lists.ListingError, OSError, ValueError) as error:
        sys.exit(f"shards_to_folder.py: {error}")
    print(f"{count} images in {argv[1]}")


if __name__ == "__main__":
    main()
