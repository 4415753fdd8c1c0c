#!/usr/bin/env python3
"""Plots feed_vs_prefetch results: images/s per mode, and where one step's time goes.

    plot_feed_vs_prefetch.py RESULTS.json OUT.png

RESULTS.json is what `feed_vs_prefetch --json` writes.
"""
import json

from plot_figure import plt, run_from_command_line, save


def main(results_path, out_path):
    with open(results_path) as f:
        run = json.load(f)
    results = run["results"]
    modes = [r["mode"] for r in results]
    fig, (speed, split) = plt.subplots(1, 2, figsize=(11, 4.2))

    bars = speed.bar(modes, [r["images_per_s"] for r in results], color=["#c44e52", "#dd8452", "#55a868"][: len(modes)])
    speed.bar_label(bars, fmt="%.0f")
    speed.set_ylabel("images / s")
    speed.set_title("Training throughput")

    parts = [("data_wait_ms", "waiting for data", "#c44e52"), ("copy_ms", "copy to device", "#8172b2"),
             ("compute_ms", "compute", "#4c72b0")]
    bottom = [0.0] * len(results)
    for key, label, color in parts:
        values = [r.get(key, 0.0) for r in results]
        split.bar(modes, values, bottom=bottom, label=label, color=color)
        bottom = [b + v for b, v in zip(bottom, values)]
    split.set_ylabel("ms per step (median split)")
    split.set_title("Where a step's time goes")
    split.legend()

    fig.suptitle(f"{run.get('model', '')} batch {run.get('batch')} on {run.get('device')}, "
                 f"{run.get('threads')} threads ({run.get('date', '')})", fontsize=10)
    save(fig, out_path)


if __name__ == "__main__":
    run_from_command_line(main, __doc__)
