"""Specifications of what bench/gpu/'s scripts lean on: a prepared set's shards written out as an ImageFolder
byte for byte (bench/shards_to_folder.py), lib.sh's alternating rounds and a variant's flags replacing a
script's defaults, run in bash; and every script of bench/gpu/ parsing (bash -n)."""

import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import unittest

BENCH = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
sys.path.insert(0, BENCH)

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
        lib = os.path.join(BENCH, "gpu", "lib.sh")
        return subprocess.run(["bash", "-c", f"source {lib}; {script}"], capture_output=True, text=True,
                              check=True).stdout.split()

    def test_rounds_alternate_their_order(self):
        out = self.bash("side() { echo \"$2:$1\"; }; alternate 3 side a b c")
        self.assertEqual([w for w in out if len(w) == 3 and w[1] == ":"],
                         ["1:a", "1:b", "1:c", "2:c", "2:b", "2:a", "3:a", "3:b", "3:c"])

    def test_a_variants_own_flags_replace_the_scripts_defaults(self):
        out = self.bash('unless_given "--threads 15 --gpu-hybrid 0" --threads 16 --data /d; echo "${given_defaults[@]}"')
        self.assertEqual(out, ["--data", "/d"])
        out = self.bash('unless_given "" --threads 16 --data /d; echo "${given_defaults[@]}"')
        self.assertEqual(out, ["--threads", "16", "--data", "/d"])
        # A flag that only starts like a default's name is no replacement.
        out = self.bash('unless_given "--threads-per-gpu 2" --threads 16; echo "${given_defaults[@]}"')
        self.assertEqual(out, ["--threads", "16"])

    def test_options_take_their_defaults_values_lists_and_flags(self):
        out = self.bash('bench_options rounds=3 variant+= eager-step! -- --variant "a=--x 1" --variant b=--y '
                        '--eager-step; echo "$rounds ${#variant[@]} $eager_step"')
        self.assertEqual(out, ["3", "2", "1"])


class Scripts(unittest.TestCase):
    def test_every_script_parses(self):
        folder = os.path.join(BENCH, "gpu")
        for name in sorted(os.listdir(folder)):
            if name.endswith(".sh"):
                with self.subTest(script=name):
                    subprocess.run(["bash", "-n", os.path.join(folder, name)], check=True)


if __name__ == "__main__":
    unittest.main()
