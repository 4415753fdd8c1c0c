#!/usr/bin/env python3
"""Reads one traceN_events.csv of this folder (the training thread's, the GPU decoder's and the feeder's
spans, taken from feed_vs_prefetch --trace-dir) and prints how long nvJPEG's decode calls took and when.

The trace has no GPU timeline, so the GPU is modelled: step i starts when it is queued or when step i-1
ends, whichever is later, and takes STEP_MS (train_step_bench's median in the same call). A decode call
is "slow" above 20 ms. For each call, the steps pending at its start are those queued before it and not
yet finished in the model.

  analyse_trace.py trace1_events.csv [STEP_MS]
"""
import csv
import statistics
import sys


def main():
    path = sys.argv[1]
    step_ms = float(sys.argv[2]) if len(sys.argv) > 2 else 14.46
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    queued = [float(r["start_ms"]) for r in rows if r["event"] == "queue step"]
    calls = [(float(r["start_ms"]), float(r["start_ms"]) + float(r["duration_ms"])) for r in rows
             if r["track"] == "GPU decoder"]
    waits = [float(r["duration_ms"]) for r in rows if r["event"].startswith("wait for batch")]
    starts, ends = [], []
    for q in queued:
        start = max(q, ends[-1] if ends else 0.0)
        starts.append(start)
        ends.append(start + step_ms)
    first = 10  # the warm-up's steps and their calls are left out
    timed = [c for c in calls if c[0] >= queued[first]]
    slow, fast = [], []
    for begin, end in timed:
        pending = [ends[i] for i in range(len(queued)) if queued[i] <= begin < ends[i]]
        if not pending:
            continue
        (slow if end - begin > 20 else fast).append((end - begin, len(pending), end - max(pending), end - min(pending)))
    span = ends[-1] - starts[first]
    idle = sum(max(0.0, starts[i] - ends[i - 1]) for i in range(first + 1, len(queued)))
    print(f"{path}: {len(timed)} decode calls after the warm-up, {len(slow)} over 20 ms")
    print(f"  training thread waiting for a batch: {sum(waits[first:]) / 1e3:.2f} s of {span / 1e3:.2f} s")
    print(f"  slow calls: median {statistics.median(r[0] for r in slow):.1f} ms, "
          f"{statistics.median(r[1] for r in slow):.0f} steps pending at their start (median), ending a median "
          f"{statistics.median(r[2] for r in slow):.1f} ms after the last of those steps")
    print(f"  other calls: median {statistics.median(r[0] for r in fast):.1f} ms, "
          f"{statistics.median(r[1] for r in fast):.0f} steps pending at their start (median)")
    print(f"  modelled GPU idle: {idle:.0f} ms of {span:.0f} ms ({100 * idle / span:.1f} %)")


if __name__ == "__main__":
    main()
