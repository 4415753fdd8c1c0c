#!/usr/bin/env python3
"""python_overhead.py: what iterating conveyor from Python costs against the same pipeline iterated from
C++, measured in one call (issue 14's target: at most 2 %).

Runs pipeline_throughput (C++, --checksum 0: its consumer does nothing) and pipeline_throughput.py (the
same chain through the Python module; its consumer takes each batch with numpy.from_dlpack) alternately,
--pairs times (C++ first in even pairs, Python first in odd ones, so the machine's drift weighs on both
alike), each in its own process with the same arguments and the same timing rule. Reports each side's
median images/s and overhead = 1 - python / cpp on the medians, and the same per pair.

  python_overhead.py --cpp BUILD/bench/pipeline/pipeline_throughput --conveyor-python BUILD/python --data DIR
                     [--threads 16] [--batch 256] [--size 224] [--epochs 4] [--seed 7] [--pairs 3]
                     [--json FILE]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "peers"))
import run_record  # noqa: E402
import timing_rules  # noqa: E402

TARGET = 0.02  # the Python side may be at most 2 % slower


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cpp", required=True, help="the pipeline_throughput program")
    ap.add_argument("--conveyor-python", required=True, help="the folder holding the conveyor module")
    ap.add_argument("--data", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=600, help="seconds per run")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    if a.pairs < 1:
        ap.error("--pairs must be >= 1")
    return a


def commands(args, json_path):
    """The two command lines, same settings, each writing its JSON to json_path[side]."""
    common = ["--data", args.data, "--threads", str(args.threads), "--batch", str(args.batch), "--size",
              str(args.size), "--epochs", str(args.epochs), "--seed", str(args.seed)]
    return {
        "cpp": [args.cpp] + common + ["--checksum", "0", "--json", json_path["cpp"]],
        "python": [sys.executable, os.path.join(HERE, "pipeline_throughput.py")] + common
                  + ["--conveyor-python", args.conveyor_python, "--json", json_path["python"]],
    }


def overhead(python_rate, cpp_rate):
    """1 - python / cpp (positive: Python is slower); None without both figures."""
    r = timing_rules.ratio(python_rate, cpp_rate)
    return None if r is None else 1.0 - r


def summarize(pairs):
    """The medians of each side over the pairs, the overhead on the medians and per pair, and the verdict."""
    cpp = [p["cpp"]["images_per_s"] for p in pairs]
    python = [p["python"]["images_per_s"] for p in pairs]
    out = {
        "cpp_images_per_s_median": timing_rules.median(cpp),
        "python_images_per_s_median": timing_rules.median(python),
        "per_pair_overhead": [overhead(p, c) for p, c in zip(python, cpp)],
        "target_overhead_at_most": TARGET,
    }
    out["overhead"] = overhead(out["python_images_per_s_median"], out["cpp_images_per_s_median"])
    out["met"] = out["overhead"] is not None and out["overhead"] <= TARGET
    return out


def run(command, timeout):
    print("+ " + " ".join(command), flush=True)
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    sys.stdout.write(done.stdout)
    if done.returncode != 0:
        sys.exit(f"python_overhead.py: exit {done.returncode}: {' '.join(command)}\n{done.stderr}")


def main():
    args = parse_args()
    pairs = []
    with tempfile.TemporaryDirectory(prefix="python-overhead-") as tmp:
        for i, order in enumerate(timing_rules.alternating_order(["cpp", "python"], args.pairs)):
            paths = {side: os.path.join(tmp, f"{side}_{i}.json") for side in ("cpp", "python")}
            lines = commands(args, paths)
            for side in order:
                run(lines[side], args.timeout)
            pair = {}
            for side in ("cpp", "python"):
                with open(paths[side]) as f:
                    pair[side] = json.load(f)
            pairs.append(pair)
    result = run_record.header("python_overhead")
    result.update({"threads": args.threads, "batch": args.batch, "size": args.size, "epochs": args.epochs,
                   "seed": args.seed, "data": args.data, "pairs": pairs})
    result.update(summarize(pairs))
    shown = "-" if result["overhead"] is None else f"{100 * result['overhead']:.2f} %"
    print(f"C++ {result['cpp_images_per_s_median']:.1f} images/s, Python {result['python_images_per_s_median']:.1f} "
          f"images/s (medians of {args.pairs} pairs): Python overhead {shown} "
          f"(target <= {100 * TARGET:.0f} %: {'met' if result['met'] else 'NOT met'}); per pair: "
          + ", ".join("-" if o is None else f"{100 * o:.2f} %" for o in result["per_pair_overhead"]), flush=True)
    if args.json:
        run_record.write_json(args.json, result)


if __name__ == "__main__":
    main()
