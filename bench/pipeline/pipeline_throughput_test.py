#!/usr/bin/env python3
"""End-to-end check of the pipeline_throughput program (run by CTest; the speeds are not checked, only
that the program measures what it says it measures).

    pipeline_throughput_test.py PIPELINE_THROUGHPUT MAKE_IMAGENET_LIKE

Makes 48 ImageNet-like JPEGs from the photos Debian's opencv-doc ships (exit 77, CTest's skip, without
them), then checks: the JSON's fields, the image count over two epochs, the warm-up rule (W = threads
batches, fewer on a short run), equal checksums across a 1,2 thread sweep, and a bad file: counted with
its reason under --on-error skip, and under fail a non-zero exit that names the file and the stage.
"""
import json
import os
import subprocess
import sys
import tempfile

PHOTOS = "/usr/share/doc/opencv-doc/examples"
IMAGES = 48


def run(args, check=True):
    result = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if check and result.returncode != 0:
        sys.exit(f"FAILED ({result.returncode}): {' '.join(args)}\n{result.stdout}\n{result.stderr}")
    return result


def expect(condition, message):
    if not condition:
        sys.exit(f"FAILED: {message}")


def main(throughput, make_images):
    if not os.path.isdir(PHOTOS):
        print(f"skipped: no photos in {PHOTOS} (opencv-doc)")
        return 77
    with tempfile.TemporaryDirectory(prefix="conveyor-throughput-") as tmp:
        data = os.path.join(tmp, "set")
        run([make_images, "--out", data, "--sources", PHOTOS, "--count", str(IMAGES), "--classes", "4"])
        train = os.path.join(data, "train")
        # Both forms of an option's value, "--flag value" and "--flag=value".
        common = [throughput, "--data", train, "--batch=8", "--size", "64", "--epochs=2", "--seed", "3"]

        # A sweep: both points see every image twice, in the same order, with the same bytes.
        sweep_json = os.path.join(tmp, "sweep.json")
        run(common + ["--sweep", "1,2", "--json", sweep_json])
        with open(sweep_json) as f:
            sweep = json.load(f)
        for key in ("images_per_s", "images_per_s_after_first_batch", "images_per_s_overall", "threads", "images",
                    "skipped", "checksum", "warmup_batches", "peak_rss_mb", "stages"):
            expect(key in sweep, f"no '{key}' in the JSON")
        expect(sweep["images"] == 2 * IMAGES, f"{sweep['images']} images, expected {2 * IMAGES}")
        expect(sweep["skipped"] == 0, "skipped images in a clean set")
        expect(sweep["checksums_equal"] is True, "checksums differ between 1 and 2 threads")
        expect([p["threads"] for p in sweep["sweep"]] == [1, 2], "sweep points")
        for point in sweep["sweep"]:
            expect(point["images_per_s"] > 0, f"no speed at {point['threads']} threads")
            expect(point["warmup_batches"] == point["threads"], f"warm-up batches at {point['threads']} threads")
        expect(sweep["sweep"][0]["checksum"] == sweep["sweep"][1]["checksum"], "sweep checksums")

        # A run too short for W = 16 warm-up batches keeps half of its 12 batches for the measurement.
        short_json = os.path.join(tmp, "short.json")
        run(common + ["--threads", "16", "--json", short_json])
        with open(short_json) as f:
            short = json.load(f)
        expect(short["warmup_batches"] == 6, f"warm-up batches {short['warmup_batches']}, expected 6")
        expect(short["checksum"] == sweep["checksum"], "checksum at 16 threads differs")

        # A bad file: skipped and counted with its reason, or the run fails naming it.
        bad = os.path.join(train, sorted(os.listdir(train))[0], "zz_truncated.jpg")
        with open(sorted(os.path.join(os.path.dirname(bad), n) for n in os.listdir(os.path.dirname(bad)))[0],
                  "rb") as f:
            head = f.read(600)
        with open(bad, "wb") as f:
            f.write(head)
        skip_json = os.path.join(tmp, "skip.json")
        run(common + ["--threads", "2", "--on-error", "skip", "--json", skip_json])
        with open(skip_json) as f:
            skipped = json.load(f)
        expect(skipped["skipped"] == 2, f"{skipped['skipped']} skipped, expected 2 (one file, two epochs)")
        expect(skipped["images"] == 2 * IMAGES, f"{skipped['images']} images delivered, expected {2 * IMAGES}")
        expect(sum(skipped["skip_reasons"].values()) == 2, f"skip reasons {skipped['skip_reasons']}")
        failed = run(common + ["--threads", "2", "--on-error", "fail"], check=False)
        expect(failed.returncode != 0, "a bad file under --on-error fail did not fail the run")
        expect("zz_truncated.jpg" in failed.stderr and "decode_random_resized_crop" in failed.stderr,
               f"the error does not name the file and the stage: {failed.stderr.strip()}")
    print("pipeline_throughput: all checks passed")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
