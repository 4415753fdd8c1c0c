#!/usr/bin/env python3
"""Plots images/s against threads for conveyor (pipeline_throughput --sweep) and PyTorch's DataLoader
(torch_dataloader.py --sweep), measured in the same run; optionally the DataLoader's figure on the same
number of images as conveyor's (torch_dataloader.py without --sweep) as one more point.

    plot_sweep.py PIPELINE_THROUGHPUT.json TORCH_DATALOADER_SWEEP.json OUT.png [TORCH_DATALOADER.json]
"""
import json
import sys

from plot_figure import plt, save


def main(ours_path, peer_path, out_path, peer_main_path=None):
    with open(ours_path) as f:
        ours = json.load(f)
    with open(peer_path) as f:
        peer = json.load(f)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    xs = [p["threads"] for p in ours["sweep"]]
    ax.plot(xs, [p["images_per_s"] for p in ours["sweep"]], marker="o", label="conveyor (threads)")
    peer_images = peer["sweep"][-1]["images"]
    ax.plot([p["workers"] for p in peer["sweep"]], [p["images_per_s"] for p in peer["sweep"]], marker="s",
            label=f"PyTorch DataLoader (workers), {peer_images:,} images")
    if peer_main_path:
        with open(peer_main_path) as f:
            peer_main = json.load(f)
        ax.plot([peer_main["workers"]], [peer_main["images_per_s"]], marker="D", linestyle="none", color="C3",
                label=f"PyTorch DataLoader, {peer_main['images']:,} images")
    base = ours["sweep"][0]["images_per_s"] / ours["sweep"][0]["threads"]
    ax.plot(xs, [base * x for x in xs], linestyle=":", color="gray", label="conveyor, linear scaling")
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs)
    ax.set_xticklabels([str(x) for x in xs])
    ax.set_xlabel("threads / workers")
    ax.set_ylabel("images / s")
    ax.set_title("decode + RandomResizedCrop(224) + flip + ColorJitter + batch 256", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend()
    save(fig, out_path)


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    main(*sys.argv[1:])
