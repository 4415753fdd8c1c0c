"""What `python -m conveyor.bench` shows: a progress bar on stderr while it runs, a table with the ratios
of the same run on stdout, and a plot (matplotlib, when importable)."""
import sys

WIDTH = 30


class Progress:
    """A bar on stderr for the run in progress, redrawn in place: `label [#####.....] 12/30 batches`."""

    def __init__(self, enabled, stream=None):
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.label, self.total, self.done = "", 0, 0

    def start(self, label, total):
        self.label, self.total, self.done = label, total, 0
        self._draw()

    def advance(self):
        self.done += 1
        self._draw()

    def finish(self):
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()

    def _draw(self):
        if not self.enabled:
            return
        filled = WIDTH * self.done // max(self.total, 1)
        self.stream.write(f"\r{self.label:<22} [{'#' * filled}{'.' * (WIDTH - filled)}] "
                          f"{self.done}/{self.total} batches")
        self.stream.flush()


def table(results, baseline="feed"):
    """The rows: each side's images/s from its first batch, its start-up, and its ratio to `baseline` and
    to the DataLoader, all from this run."""
    base = results.get(baseline, {}).get("images_per_s")
    loader = results.get("dataloader", {}).get("images_per_s")
    lines = [f"{'':<24} {'images/s':>10} {'first batch':>12} {'x feed':>8} {'x DataLoader':>13}",
             f"{'':<24} {'':>10} {'(s)':>12}"]
    for name, r in results.items():
        rate = r["images_per_s"]
        vs_feed = f"{rate / base:.2f}" if base else "-"
        vs_loader = f"{rate / loader:.2f}" if loader else "-"
        lines.append(f"{r['label']:<24} {rate:>10.1f} {r['time_to_first_batch_s']:>12.3f} {vs_feed:>8} "
                     f"{vs_loader:>13}")
    return "\n".join(lines)


def plot(results, path, title):
    """A bar per side, its ratio to feed written on it. Returns None, or why no plot was drawn."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (Debian: python3-matplotlib; pip: matplotlib)"
    labels = [r["label"] for r in results.values()]
    rates = [r["images_per_s"] for r in results.values()]
    base = results.get("feed", {}).get("images_per_s")
    figure, axes = plt.subplots(figsize=(7, 3.5))
    bars = axes.barh(labels[::-1], rates[::-1], color="#4c72b0")
    for bar, rate in zip(bars, rates[::-1]):
        if base:
            axes.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {rate / base:.2f}x feed",
                      va="center")
    axes.set_xlabel("images/s, from the first batch")
    axes.set_xlim(0, max(rates) * 1.25 if max(rates) > 0 else 1)
    axes.set_title(title, fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return None
