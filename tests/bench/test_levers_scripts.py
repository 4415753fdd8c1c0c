"""Specifications of the helpers of bench/levers/: a prepared set's shards written out as an ImageFolder byte
for byte (shards_to_folder.py), and lib.sh's alternating order and run length, run in bash."""

import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import unittest

BENCH = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
sys.path.insert(0, os.path.join(BENCH, "levers"))

import shards_to_folder  # noqa: E402


def add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


class ShardsToFolder(unittest.TestCase):
    def test_every_image_lands_in_its_class_folder_byte_for_byte(self):
        with tempfile.TemporaryDirectory() as tmp:
            images = {f"{i:04}": bytes([0xFF, 0xD8, i, i + 1]) * (50 + i) for i in range(5)}
            for shard, keys in (("shard-000000.tar", ["0000", "0001", "0002"]), ("shard-000001.tar", ["0003", "0004"])):
                with tarfile.open(os.path.join(tmp, shard), "w") as tar:
                    for key in keys:
                        add(tar, f"{key}.jpg", images[key])
                        add(tar, f"{key}.cls", str(int(key) % 2).encode())
            with open(os.path.join(tmp, "shards.json"), "w") as file:
                json.dump({"shardlist": [{"url": "shard-000000.tar", "nsamples": 3},
                                         {"url": "shard-000001.tar", "nsamples": 2}]}, file)
            out = os.path.join(tmp, "folder")
            self.assertEqual(shards_to_folder.extract(os.path.join(tmp, "shards.json"), out), 5)
            self.assertEqual(sorted(os.listdir(out)), ["c000", "c001"])
            for n, key in enumerate(sorted(images)):
                with open(os.path.join(out, f"c{int(key) % 2:03}", f"{n:06}.jpg"), "rb") as file:
                    self.assertEqual(file.read(), images[key], key)


class Lib(unittest.TestCase):
    def bash(self, script):
        lib = os.path.join(BENCH, "levers", "lib.sh")
        return subprocess.run(["bash", "-c", f"source {lib}; {script}"], capture_output=True, text=True,
                              check=True).stdout.split()

    def test_rounds_alternate_their_order(self):
        self.assertEqual(self.bash("in_order 1 a b c"), ["a", "b", "c"])
        self.assertEqual(self.bash("in_order 2 a b c"), ["c", "b", "a"])
        self.assertEqual(self.bash("in_order 3 a b c"), ["a", "b", "c"])

    def test_enough_passes_for_the_images_asked_for(self):
        self.assertEqual(self.bash("epochs_for 6000 100000"), ["17"])
        self.assertEqual(self.bash("epochs_for 5000 100000"), ["20"])
        self.assertEqual(self.bash("epochs_for 200000 100000"), ["1"])

    def test_a_failed_run_is_listed_and_the_script_goes_on(self):
        with tempfile.TemporaryDirectory() as tmp:
            failed = os.path.join(tmp, "failed")
            out = self.bash(f"levers_failed={failed}; limited 5 {tmp}/a.log false; echo rc=$?; "
                            f"limited 5 {tmp}/b.log true; echo rc=$?")
            self.assertEqual(out, ["rc=1", "rc=0"])
            with open(failed) as file:
                self.assertEqual(file.read().split(), ["1", "false"])


if __name__ == "__main__":
    unittest.main()
