#!/usr/bin/env python3
"""Plots torch_train_from_jpeg results: images/s of one PyTorch ResNet-18 training loop fed by the
DataLoader, by conveyor (and by conveyor with every pixel on the CPU, when run) and from a batch already on
the GPU, eager and under torch.compile, with the
ratios conveyor / DataLoader and conveyor / on-GPU over each group.

    plot_train_from_jpeg.py RESULTS.json OUT.png

RESULTS.json is what `bench/peers/torch_train_from_jpeg.py --json` writes. A variant that was skipped or
failed is drawn as an empty slot with its reason under the axis.
"""
import json
import sys

from plot_figure import plt, run_from_command_line, save

FEEDS = [("dataloader", "DataLoader", "#c44e52"), ("conveyor", "conveyor (GPU-side stages)", "#55a868"),
         ("conveyor-cpu", "conveyor, all on the CPU", "#8fd19e"), ("gpu", "batch on the GPU (ceiling)", "#4c72b0")]


def main(results_path, out_path):
    with open(results_path) as f:
        run = json.load(f)
    results, ratios = run["results"], run.get("ratios", {})
    modes = list(results)
    if not modes:
        sys.exit(f"plot_train_from_jpeg: {results_path} holds no results")
    # The feeds this run has (older runs have no conveyor-cpu).
    feeds = [f for f in FEEDS if any(f[0] in by_feed for by_feed in results.values())]
    width = 0.8 / len(feeds)
    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    notes = []
    top = max([f.get("images_per_s", 0) for by_feed in results.values() for f in by_feed.values()] + [1])
    for j, (feed, label, color) in enumerate(feeds):
        xs, heights = [], []
        for i, mode in enumerate(modes):
            figures = results[mode].get(feed, {})
            if "images_per_s" in figures:
                xs.append(i + (j - (len(feeds) - 1) / 2) * width)
                heights.append(figures["images_per_s"])
            elif figures:
                notes.append(f"{mode}/{feed}: {figures.get('skipped') or figures.get('error')}")
        bars = ax.bar(xs, heights, width, label=label, color=color)
        ax.bar_label(bars, fmt="%.0f", fontsize=8)
    for i, mode in enumerate(modes):
        r = ratios.get(mode, {})
        parts = [f"{name} {r[key]:.2f}x" for key, name in (("conveyor_over_dataloader", "conveyor/DataLoader"),
                                                             ("conveyor_over_gpu", "conveyor/GPU")) if r.get(key)]
        if parts:
            ax.text(i, top * 1.12, "\n".join(parts), ha="center", va="bottom", fontsize=9)
    ax.set_xticks(range(len(modes)))
    ax.set_xticklabels([{"eager": "eager", "compile": "torch.compile"}.get(m, m) for m in modes])
    ax.set_ylim(0, top * 1.35)
    ax.set_ylabel("training images / s (timed steps, GPU timeline)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=len(feeds), fontsize=8)  # clear of the ratios
    ax.set_title(f"ResNet-18 bf16, batch {run.get('batch')}, {run.get('workers')} workers / {run.get('threads')} "
                 f"threads on {run.get('device', '?')} ({run.get('date_utc', '')[:10]})", fontsize=10)
    if notes:
        fig.text(0.01, 0.01, "\n".join(notes), fontsize=7, va="bottom")
        fig.subplots_adjust(bottom=0.12 + 0.03 * len(notes))
    save(fig, out_path, rect=(0, 0.03 * len(notes), 1, 1))


if __name__ == "__main__":
    run_from_command_line(main, __doc__)
