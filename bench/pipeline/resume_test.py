#!/usr/bin/env python3
"""Kill-and-resume test of pipeline_throughput (run by CTest): runs killed with SIGKILL at random batch
boundaries and resumed from their --state-out file, at other thread counts and other shard counts, deliver
exactly what an uninterrupted run delivers, with the same bytes.

    resume_test.py PIPELINE_THROUGHPUT MAKE_IMAGENET_LIKE

Makes 60 ImageNet-like JPEGs from the photos Debian's opencv-doc ships (exit 77, CTest's skip, without them).
A run's batch log ("epoch first_index checksum" per batch) goes to its standard output, which this test reads
line by line and kills the run after a random number of lines (a kill lands wherever the run is then; the
state file is written after each batch's lines). The lines a run wrote after the batch its last state
covers are dropped: the resumed run delivers those batches again. Checks:
  1. one shard: three kills, resumed at 1, 3 and 2 threads: the batch lines equal the uninterrupted run's;
  2. elastic: two shards killed at different points, resumed as three shards from both states, killed
     again and finished as one shard: every sample of both epochs exactly once, each with the pixels of
     the uninterrupted run (sample logs: "epoch index checksum label");
  3. a truncated or damaged state file is refused, naming the file.
"""
import json
import os
import random
import signal
import subprocess
import sys
import tempfile

PHOTOS = "/usr/share/doc/opencv-doc/examples"
IMAGES = 60


def expect(condition, message):
    if not condition:
        sys.exit(f"FAILED: {message}")


class Runner:
    def __init__(self, throughput, data, tmp):
        self.throughput, self.data, self.tmp = throughput, data, tmp
        self.count = 0

    def args(self, threads, shards=1, shard=0, resume=(), extra=()):
        args = [self.throughput, "--data", self.data, "--batch", "4", "--size", "32", "--epochs", "2",
                "--seed", "7", "--threads", str(threads), "--prefetch", "2", "--shards", str(shards),
                "--shard", str(shard), "--batch-log", "/dev/stdout"]
        for state in resume:
            args += ["--resume", state]
        return args + list(extra)

    def segment(self, threads, kill_after=None, shards=1, shard=0, resume=()):
        """One run (or part of one): returns (batch lines, sample lines, state file) of what it delivered up
        to its last state. kill_after: SIGKILL once that many batch lines were read."""
        self.count += 1
        state = os.path.join(self.tmp, f"state_{self.count}.json")
        samples = os.path.join(self.tmp, f"samples_{self.count}.txt")
        start_batches, start_elements = 0, 0
        if len(resume) == 1:  # a combined state restarts the counts at 0
            with open(resume[0]) as f:
                body = json.load(f)["state"]
            start_batches, start_elements = body["batches"], body["elements"]
        process = subprocess.Popen(self.args(threads, shards, shard, resume, ["--state-out", state,
                                                                              "--sample-log", samples]),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = []
        killed = False
        for line in process.stdout:
            parts = line.split()
            if len(parts) == 3 and parts[2].startswith("0x"):
                lines.append(line.strip())
                if kill_after is not None and len(lines) == kill_after and not killed:
                    process.send_signal(signal.SIGKILL)
                    killed = True
        process.wait(timeout=300)
        error = process.stderr.read()
        if not killed:
            expect(process.returncode == 0, f"run failed ({process.returncode}): {error}")
        elif process.returncode == 0:
            print(f"  (the run ended before the kill after {kill_after} batches landed)")
        with open(samples) as f:
            sample_lines = [l.strip() for l in f if l.strip()]
        if not os.path.exists(state):  # killed before its first batch: nothing delivered
            return [], [], None
        with open(state) as f:
            body = json.load(f)["state"]
        batches, elements = body["batches"] - start_batches, body["elements"] - start_elements
        expect(batches <= len(lines), f"the state covers {batches} batches, the log has {len(lines)}")
        return lines[:batches], sample_lines[:elements], state


def single_shard(runner, rng):
    reference, reference_samples, _ = runner.segment(threads=2)
    expect(len(reference) == 2 * IMAGES // 4, f"{len(reference)} batches, expected {2 * IMAGES // 4}")
    delivered, state = [], None
    for threads in (1, 3, 2):
        kill_after = rng.randint(1, max(1, (len(reference) - len(delivered)) // 2))
        lines, _, new_state = runner.segment(threads, kill_after, resume=[state] if state else [])
        delivered += lines
        state = new_state or state
        print(f"  killed after {kill_after} batch lines at {threads} threads; {len(delivered)} batches so far")
    lines, _, _ = runner.segment(threads=4, resume=[state])
    delivered += lines
    expect(delivered == reference, "the killed and resumed run's batch lines differ from the uninterrupted run's")
    print(f"one shard: {len(delivered)} batch lines identical after 3 kills at 1, 3 and 2 threads")
    return reference_samples


def elastic(runner, rng, reference_samples):
    samples = []
    states = []
    for shard in range(2):  # two shards, killed at different points
        _, shard_samples, state = runner.segment(threads=2, kill_after=rng.randint(2, 5), shards=2, shard=shard)
        expect(state is not None, "a shard was killed before its first state")
        samples += shard_samples
        states.append(state)
    second = []
    for shard in range(3):  # three shards from the two states, killed again
        _, shard_samples, state = runner.segment(threads=1 + shard, kill_after=rng.randint(3, 6), shards=3,
                                                 shard=shard, resume=states)
        expect(state is not None, "a shard was killed before its first state")
        samples += shard_samples
        second.append(state)
    _, rest, _ = runner.segment(threads=2, shards=1, shard=0, resume=second)  # one shard finishes the run
    samples += rest
    expect(len(samples) == len(set(samples)), f"{len(samples) - len(set(samples))} samples delivered twice")
    expect(sorted(samples) == sorted(reference_samples),
           f"{len(samples)} samples after 2 -> 3 -> 1 shards, {len(reference_samples)} in the uninterrupted run "
           "(or other pixels)")
    print(f"elastic 2 -> 3 -> 1 shards: all {len(samples)} samples of both epochs exactly once, same pixels")


def damaged_states(runner):
    _, _, state = runner.segment(threads=2, kill_after=3)
    with open(state) as f:
        text = f.read()
    for name, content in (("truncated", text[: len(text) // 2]), ("edited", text.replace('"batches": ', '"batches": 1'))):
        bad = os.path.join(runner.tmp, f"{name}.json")
        with open(bad, "w") as f:
            f.write(content)
        result = subprocess.run(runner.args(2, resume=[bad]), capture_output=True, text=True, timeout=120)
        expect(result.returncode != 0, f"a {name} state file was accepted")
        expect(bad in result.stderr, f"the refusal of a {name} state does not name the file: {result.stderr}")
    print("truncated and edited state files refused, naming the file")


def main(throughput, make_images):
    if not os.path.isdir(PHOTOS):
        print(f"skipped: no photos in {PHOTOS} (opencv-doc)")
        return 77
    rng = random.Random(15)
    with tempfile.TemporaryDirectory(prefix="conveyor-resume-") as tmp:
        data = os.path.join(tmp, "set")
        subprocess.run([make_images, "--out", data, "--sources", PHOTOS, "--count", str(IMAGES), "--classes", "3"],
                       check=True, capture_output=True, timeout=300)
        runner = Runner(throughput, os.path.join(data, "train"), tmp)
        reference_samples = single_shard(runner, rng)
        elastic(runner, rng, reference_samples)
        damaged_states(runner)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
