#!/usr/bin/env python3
"""End-to-end check of the pipeline_throughput program (run by CTest; the speeds are not checked, only
that the program measures what it says it measures).

    pipeline_throughput_test.py PIPELINE_THROUGHPUT MAKE_IMAGENET_LIKE MAKE_SHARDS

Makes 48 ImageNet-like JPEGs from the photos Debian's opencv-doc ships (exit 77, CTest's skip, without
them), then checks: the JSON's fields, the image count over two epochs, the warm-up rule (W = threads
batches, fewer on a short run), equal checksums across a 1,2 thread sweep, a run with --checksum 0; --data
as a list file, as tar shards (their index, a brace pattern, a glob: the same batches) and as shards served
over HTTP on the loopback address (the same batches again); and a bad file: counted with its reason under
--on-error skip, and under fail a non-zero exit that names the file and the stage.
"""
import functools
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading

PHOTOS = "/usr/share/doc/opencv-doc/examples"
IMAGES = 48


def run(args, check=True, env=None):
    result = subprocess.run(args, capture_output=True, text=True, timeout=300,
                            env=None if env is None else {**os.environ, **env})
    if check and result.returncode != 0:
        sys.exit(f"FAILED ({result.returncode}): {' '.join(args)}\n{result.stdout}\n{result.stderr}")
    return result


def expect(condition, message):
    if not condition:
        sys.exit(f"FAILED: {message}")


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    # socketserver's backlog of 5 drops the SYNs of more connections at once (the shard readers open up to
    # 2 x parallel_shards), and each then waits a second for the retransmission.
    request_queue_size = 128


def check_shards(common, train, tmp, make_shards):
    """--data as a list file, tar shards (index, brace pattern, glob) and shards over HTTP."""
    listed = run([a if a != train else os.path.join(os.path.dirname(train), "train.txt") for a in common])
    expect(f"{2 * IMAGES} images" in listed.stdout, f"list file: {listed.stdout}")

    shards = os.path.join(tmp, "shards")
    run([make_shards, "--input", train, "--output", shards, "--shard-size", "0.5"])
    with open(os.path.join(shards, "shards.json")) as f:
        names = [entry["url"] for entry in json.load(f)["shardlist"]]
    expect(len(names) > 2, f"make_shards made {len(names)} shards of 0.5 MB from {IMAGES} images")
    last = f"{len(names) - 1:06d}"

    def checksum(data, name, *extra):
        out = os.path.join(tmp, name + ".json")
        run([a if a != train else data for a in common] + ["--threads", "2", "--json", out, *extra])
        with open(out) as f:
            result = json.load(f)
        expect(result["images"] == 2 * IMAGES and result["skipped"] == 0, f"{data}: {result['images']} images")
        return result["checksum"]

    indexed = checksum(os.path.join(shards, "shards.json"), "index")
    expect(checksum(os.path.join(shards, "shard-{000000.." + last + "}.tar"), "braces") == indexed,
           "a brace pattern of the shards gives other batches than their index")
    expect(checksum(os.path.join(shards, "shard-*.tar"), "glob") == indexed, "a glob gives other batches")
    # Read at random, shards packed from the folder in its order are a table of the same samples: with the
    # same whole-epoch shuffle, the folder's batches.
    expect(checksum(os.path.join(shards, "shards.json"), "random", "--shard-random-access", "1") ==
           checksum(train, "folder"), "shards read at random give other batches than the folder")

    server = Server(("127.0.0.1", 0), functools.partial(QuietHandler, directory=shards))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        # URLs without an index have no counts: read one shard after another, as local ones are when asked.
        expect(checksum(base + "/shard-{000000.." + last + "}.tar", "http") ==
               checksum(os.path.join(shards, "shards.json"), "index_one_at_a_time", "--parallel-shards", "1"),
               "shards over HTTP give other batches than local ones")
        expect(checksum(base + "/shards.json", "http_index") == indexed, "an index over HTTP gives other batches")
    finally:
        server.shutdown()
        thread.join()


def main(throughput, make_images, make_shards):
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

        # --checksum 0: the same images, the consumer does nothing with them.
        # (With the commit given as the GPU machine's runner gives it: the JSON names that one.)
        bare_json = os.path.join(tmp, "bare.json")
        run(common + ["--threads", "2", "--checksum", "0", "--json", bare_json], env={"CONVEYOR_COMMIT": "c0ffee1"})
        with open(bare_json) as f:
            bare = json.load(f)
        expect(bare["machine"]["commit"] == "c0ffee1", f"commit {bare['machine']['commit']}, CONVEYOR_COMMIT c0ffee1")
        expect(bare["checksum"] == "off" and bare["config"]["checksum"] is False, "--checksum 0 in the JSON")
        expect(bare["images"] == 2 * IMAGES and bare["images_per_s"] > 0, "--checksum 0 run")

        check_shards(common, train, tmp, make_shards)

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
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
