"""python -m conveyor.bench DIR: conveyor on your own image folder (class sub-folders of JPEGs), against
feeding one image after another and, when torch is importable, PyTorch's DataLoader doing the same work.
A progress bar on stderr while it runs; then a table of each side's images/s (from its first batch, the
time to that first batch apart) with the ratios of this run, and a plot beside it (conveyor_bench.png in
the current directory unless --plot says where; matplotlib needed)."""
import argparse
import json
import os
import platform
import sys

import conveyor

from . import report, runs

SIDES = ("feed", "conveyor", "dataloader")


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m conveyor.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", help="an ImageFolder: one sub-folder of JPEGs per class")
    parser.add_argument("--threads", type=int, default=runs.default_threads(),
                        help="conveyor's threads and the DataLoader's workers (default: this process's cores)")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--size", type=int, default=224, help="the random resized crop's side")
    parser.add_argument("--batches", type=int, default=40, help="batches each side makes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sides", default=",".join(SIDES), help=f"comma-separated, from {', '.join(SIDES)}")
    parser.add_argument("--antialias", choices=("both", "on", "off"), default="both",
                        help="the DataLoader's resize; with both, the faster one is its figure")
    parser.add_argument("--plot", default="conveyor_bench.png", help="where the plot goes ('' for none)")
    parser.add_argument("--json", default="", help="also write the figures here")
    parser.add_argument("--progress", choices=("auto", "on", "off"), default="auto",
                        help="the bar on stderr (auto: when stderr is a terminal)")
    args = parser.parse_args(argv)
    args.sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    unknown = set(args.sides) - set(SIDES)
    if unknown or not args.sides:
        parser.error(f"--sides: choose from {', '.join(SIDES)}")
    if min(args.threads, args.batch, args.size, args.batches) < 1:
        parser.error("--threads, --batch, --size and --batches must be positive")
    if not os.path.isdir(args.folder):
        parser.error(f"no folder {args.folder}")
    return args


def measure(args, progress):
    results = {}
    if "feed" in args.sides:
        progress.start("feed (1 thread)", args.batches)
        results["feed"] = dict(runs.run_conveyor(args, threads=1, prefetch=1, progress=progress),
                               label="feed (1 thread)")
    if "conveyor" in args.sides:
        label = f"conveyor ({args.threads} threads)"
        progress.start(label, args.batches)
        results["conveyor"] = dict(runs.run_conveyor(args, threads=args.threads, prefetch=4, progress=progress),
                                   label=label)
    missing = runs.torch_available()
    if "dataloader" in args.sides and missing:
        print(f"PyTorch's DataLoader not measured: {missing}", file=sys.stderr)
    elif "dataloader" in args.sides:
        settings = {"both": (True, False), "on": (True,), "off": (False,)}[args.antialias]
        loaders = {}
        for antialias in settings:
            label = f"DataLoader ({args.threads} workers, antialias {'on' if antialias else 'off'})"
            progress.start(label, args.batches)
            loaders[antialias] = dict(runs.run_dataloader(args, args.threads, antialias, progress), label=label)
        results["dataloader"] = max(loaders.values(), key=lambda r: r["images_per_s"])  # the stronger peer
    progress.finish()
    return results


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    enabled = sys.stderr.isatty() if args.progress == "auto" else args.progress == "on"
    try:
        results = measure(args, report.Progress(enabled))
    except conveyor.Error as error:
        sys.exit(f"conveyor.bench: {error}")
    title = (f"{args.folder}: batch {args.batch}, crop {args.size}, {args.threads} threads, "
             f"{args.batches} batches each")
    print(title)
    print(report.table(results))
    print("(images/s counted from each side's first batch; x: this run's ratios)")
    if args.plot:
        why_not = report.plot(results, args.plot, title)
        print(f"plot: {args.plot}" if why_not is None else f"no plot: {why_not}")
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"benchmark": "conveyor.bench", "conveyor": conveyor.__version__,
                       "python": platform.python_version(), "folder": args.folder, "batch": args.batch,
                       "size": args.size, "threads": args.threads, "batches": args.batches,
                       "timing_rule": "from_first_batch", "results": results}, file, indent=2)
            file.write("\n")


if __name__ == "__main__":
    main()
