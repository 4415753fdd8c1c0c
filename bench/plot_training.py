#!/usr/bin/env python3
"""Plots a train_fashion_mnist CSV: loss and accuracy per epoch, one line per run (recipe and seed);
test accuracy where the run evaluated (--eval-every).

    plot_training.py RUN.csv OUT.png
"""
import csv

from plot_figure import plt, run_from_command_line, save


def runs_of(rows):
    """Rows grouped by run, in order: (label, rows)."""
    runs = {}
    for r in rows:
        label = f"{r.get('recipe', '')} seed {r.get('seed', '')}".strip() if r.get("recipe") else "run"
        runs.setdefault(label, []).append(r)
    return list(runs.items())


def main(csv_path, out_path):
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    fig, (loss, acc) = plt.subplots(1, 2, figsize=(10, 4))
    for label, run in runs_of(rows):
        epochs = [int(r["epoch"]) for r in run]
        loss.plot(epochs, [float(r["loss"]) for r in run], marker="o", label=label)
        acc.plot(epochs, [100 * float(r["train_accuracy"]) for r in run], marker="o", label=f"{label}, train")
        tested = [r for r in run if r["test_accuracy"]]
        acc.plot([int(r["epoch"]) for r in tested], [100 * float(r["test_accuracy"]) for r in tested], marker="s",
                 label=f"{label}, test")
    loss.set_xlabel("epoch")
    loss.set_ylabel("training loss")
    loss.legend(fontsize="small")
    acc.set_xlabel("epoch")
    acc.set_ylabel("accuracy (%)")
    acc.legend(fontsize="small")
    acc.grid(alpha=0.3)
    save(fig, out_path)


if __name__ == "__main__":
    run_from_command_line(main, __doc__)
