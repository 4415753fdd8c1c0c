#!/usr/bin/env python3
"""Plots a train_fashion_mnist CSV: loss and accuracy per epoch.

    plot_training.py RUN.csv OUT.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(csv_path, out_path):
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    epochs = [int(r["epoch"]) for r in rows]
    fig, (loss, acc) = plt.subplots(1, 2, figsize=(10, 4))
    loss.plot(epochs, [float(r["loss"]) for r in rows], marker="o")
    loss.set_xlabel("epoch")
    loss.set_ylabel("training loss")
    acc.plot(epochs, [100 * float(r["train_accuracy"]) for r in rows], marker="o", label="train")
    acc.plot(epochs, [100 * float(r["test_accuracy"]) for r in rows], marker="o", label="test")
    acc.set_xlabel("epoch")
    acc.set_ylabel("accuracy (%)")
    acc.legend()
    acc.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
