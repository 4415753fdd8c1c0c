#!/usr/bin/env python3
"""The headline's rounds (bench/gpu/pipeline_vs_peers.sh, bench/gpu/feed_vs_step.sh) as bench/results/headline.json
entries.

    summarize_headline.py DIR --machine TEXT --commit SHA [--date YYYY-MM-DD] [--folder bench/results/NAME]
                          [--out FILE] [--merge bench/results/headline.json]

DIR holds round i's JSON for each side: cpu_i, gpu_i (pipeline_throughput CPU-only and hybrid), torch_i
(torch_dataloader.py, antialias on and off), tvgpu_i (torchvision_gpu_decode.py), fvp_i (feed_vs_prefetch
prefetch), step_i (train_step_bench). Each entry: conveyor and its peer as the medians of the rounds, the
peer of a round being its strongest variant there (the faster antialias setting, the faster jitter), and
the ratio as the median of the rounds' ratios, all counted from the first batch (the first step for
train_step_bench); beside them, named, the same under the older rule (after W batches, after the warm-up
steps, the median step) and the start-up times. --out writes the entries; --merge replaces the entries of
the same id in headline.json (the others stay) and writes it. Prints one line per entry, then one per variant
of the hybrid (gpu-NAME_i: pipeline_vs_peers.sh's --variant) against the hybrid with the defaults.
"""
import argparse
import datetime
import json
import pathlib
import statistics
import sys

DATALOADER = "PyTorch DataLoader, 16 workers, torchvision.io decode + v2 transforms, pinned, the faster antialias setting of each round"
TVGPU = "torchvision decode_jpeg on the GPU (batched nvJPEG) + v2 transforms there, the faster jitter variant of each round"


def load(folder, name, i):
    path = pathlib.Path(folder) / f"{name}_{i}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def rounds(folder):
    found = sorted({int(p.stem.rsplit("_", 1)[1]) for p in pathlib.Path(folder).glob("*_*.json")
                    if p.stem.rsplit("_", 1)[1].isdigit()})
    if not found:
        raise ValueError(f"{folder}: no round files (cpu_1.json, ...)")
    return found


def pipeline_side(result):
    """(from the first batch, after W batches, start-up) of a pipeline JSON."""
    return (result["images_per_s"], result["images_per_s_after_warmup_batches"], result["time_to_first_batch_s"])


def strongest(by_variant):
    """The variant with the highest from-first-batch rate: (its figures, its name)."""
    name = max(by_variant, key=lambda v: by_variant[v]["images_per_s"])
    return pipeline_side(by_variant[name]), name


def sides(folder, i):
    """Round i's figures per side, each (from the first batch, older rule, start-up) plus what the peer was."""
    out = {}
    for name in ("cpu", "gpu"):
        result = load(folder, name, i)
        if result:
            out[name] = pipeline_side(result)
    torch = load(folder, "torch", i)
    if torch:
        by = torch.get("by_antialias") or {str(torch.get("antialias")): torch}
        out["torch"], out["torch_variant"] = strongest(by)
    tvgpu = load(folder, "tvgpu", i)
    if tvgpu:
        out["tvgpu"], out["tvgpu_variant"] = strongest(tvgpu["by_variant"])
    fvp = load(folder, "fvp", i)
    if fvp:
        prefetch = next(r for r in fvp["results"] if r["mode"] == "prefetch")
        out["fvp"] = (prefetch["images_per_s"], prefetch["images_per_s_after_warmup_steps"], prefetch["first_batch_s"])
    step = load(folder, "step", i)
    if step:
        out["step"] = (step["images_per_s_from_first_step"], step["images_per_s"], step["warmup_s"])
    return out


def entry(per_round, ours, theirs, what):
    """One headline.json entry from the rounds that have both sides, or None."""
    pairs = [(r[ours], r[theirs]) for r in per_round if ours in r and theirs in r]
    if not pairs:
        return None
    med = statistics.median
    return {
        "id": what["id"], "metric": what["metric"], "unit": "images/s",
        "conveyor": round(med(a[0] for a, _ in pairs)),
        "peer": {"name": what["peer"], "value": round(med(b[0] for _, b in pairs))},
        "ratio": round(med(a[0] / b[0] for a, b in pairs), 3 if what.get("percent") else 2),
        "ratio_format": "percent" if what.get("percent") else "x",
        "startup_s": {"conveyor": round(med(a[2] for a, _ in pairs), 3), "peer": round(med(b[2] for _, b in pairs), 3)},
        "timing": "from_first_batch",
        "older_rule": {"rule": what["older"], "conveyor": round(med(a[1] for a, _ in pairs)),
                       "peer": round(med(b[1] for _, b in pairs)),
                       "ratio": round(med(a[1] / b[1] for a, b in pairs), 3)},
        "rounds": [{"conveyor": round(a[0]), "peer": round(b[0]), "ratio": round(a[0] / b[0], 3)} for a, b in pairs],
        "how": f"medians of {len(pairs)} alternating rounds; ratio: median of the rounds' ratios",
        "target": what["target"],
    }


ROWS = [
    ("cpu", "torch", {"id": "pipeline_cpu_vs_dataloader", "peer": DATALOADER, "target": ">= 2.3x",
                      "older": "after 16 batches",
                      "metric": "Input pipeline on the CPU: JPEG decode + random resized crop 224 + flip + colour "
                                "distortion, batches of 256, 16 threads"}),
    ("gpu", "torch", {"id": "pipeline_hybrid_vs_dataloader", "peer": "PyTorch DataLoader as above", "target": ">= 8x",
                      "older": "after 16 batches",
                      "metric": "Same, hybrid: nvJPEG decodes a share of the images, flip and distortion on the GPU"}),
    ("gpu", "cpu", {"id": "pipeline_hybrid_vs_cpu", "peer": "conveyor, CPU only", "target": ">= 1.8x",
                    "older": "after 16 batches", "metric": "Hybrid against conveyor's own CPU-only pipeline"}),
    ("gpu", "tvgpu", {"id": "pipeline_hybrid_vs_torchvision_gpu", "peer": TVGPU, "target": "faster than the peer",
                      "older": "after W batches (W = the peer's reader workers)",
                      "metric": "Hybrid against torchvision doing the same work on the GPU"}),
    ("fvp", "step", {"id": "prefetch_vs_step", "percent": True, "target": ">= 97 %",
                     "peer": "train_step_bench: the same step on data already on the GPU",
                     "older": "after 3 warm-up steps; the step's median step",
                     "metric": "ResNet-18 training fed from JPEGs (feed_vs_prefetch prefetch), share of the "
                               "step's own rate"}),
]


def met(e):
    """The target with its verdict ("met" / "not met"), from the ratio."""
    target = e["target"]
    if target.startswith(">= ") and target.endswith("x"):
        return f"{target}: {'met' if e['ratio'] >= float(target[3:-1]) else 'not met'}"
    if target.startswith(">= ") and target.endswith(" %"):
        return f"{target}: {'met' if 100 * e['ratio'] >= float(target[3:-2]) else 'not met'}"
    if target == "faster than the peer":
        return f"{target}: {'met' if e['ratio'] > 1 else 'not met'}"
    return target


def summarize(folder, machine, commit, date, results_folder):
    per_round = [sides(folder, i) for i in rounds(folder)]
    entries = []
    for ours, theirs, what in ROWS:
        e = entry(per_round, ours, theirs, what)
        if e is None:
            continue
        e["target"] = met(e)
        variants = [r.get(f"{theirs}_variant") for r in per_round if f"{theirs}_variant" in r]
        if variants:
            e["peer_variant_by_round"] = variants
        e.update({"machine": machine, "date": date, "commit": commit, "folder": results_folder})
        entries.append(e)
    return entries


def hybrid_variants(folder):
    """One line per variant of the hybrid (gpu-NAME_i.json) against gpu_i.json of the same rounds."""
    names = sorted({p.stem.rsplit("_", 1)[0] for p in pathlib.Path(folder).glob("gpu-*_*.json")})
    lines = []
    for name in names:
        pairs = [(load(folder, name, i), load(folder, "gpu", i)) for i in rounds(folder)]
        pairs = [(pipeline_side(a), pipeline_side(b)) for a, b in pairs if a and b]
        if not pairs:
            continue
        med = statistics.median
        lines.append(f"{name} against the hybrid's defaults: {med(a[0] for a, _ in pairs):.0f} vs "
                     f"{med(b[0] for _, b in pairs):.0f} img/s from the first batch -> "
                     f"{med(a[0] / b[0] for a, b in pairs):.3f}x (rounds: "
                     f"{', '.join(f'{a[0] / b[0]:.3f}' for a, b in pairs)}); start-up "
                     f"{med(a[2] for a, _ in pairs):.3f} s / {med(b[2] for _, b in pairs):.3f} s")
    return lines


def merge(path, entries):
    existing = json.loads(pathlib.Path(path).read_text())
    fresh = {e["id"]: e for e in entries}
    merged = [fresh.pop(e["id"], e) for e in existing] + list(fresh.values())
    pathlib.Path(path).write_text(json.dumps(merged, indent=2, ensure_ascii=False) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("--machine", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--date", default=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"))
    ap.add_argument("--folder", dest="results_folder", default="bench/results/FILL-IN",
                    help="the results folder the entries will name (where the folder is committed)")
    ap.add_argument("--out", default="")
    ap.add_argument("--merge", default="")
    args = ap.parse_args()
    try:
        entries = summarize(args.folder, args.machine, args.commit, args.date, args.results_folder)
    except (OSError, ValueError, KeyError) as error:
        sys.exit(f"summarize_headline: {error}")
    for e in entries:
        shown = f"{100 * e['ratio']:.1f} %" if e["ratio_format"] == "percent" else f"{e['ratio']}x"
        print(f"{e['id']}: {e['conveyor']} vs {e['peer']['value']} -> {shown} (rounds: "
              f"{', '.join(str(r['ratio']) for r in e['rounds'])}); {e['older_rule']['rule']}: "
              f"{e['older_rule']['ratio']}; start-up {e['startup_s']['conveyor']} s / {e['startup_s']['peer']} s; "
              f"{e['target']}")
    for line in hybrid_variants(args.folder):
        print(line)
    text = json.dumps(entries, indent=2, ensure_ascii=False) + "\n"
    if args.out:
        pathlib.Path(args.out).write_text(text)
    if args.merge:
        merge(args.merge, entries)


if __name__ == "__main__":
    main()
