#!/usr/bin/env python3
"""What the training step's kernels meet on the GPU, from Nsight Systems captures exported to SQLite
(nsys export --type sqlite) or from bench/tools/cupti_timeline's records (.tsv, where nsys cannot make a
report; .tsv.gz too): the timeline evidence for issue 41's "the GPU's share beside the step".

  nsys_overlap.py BESIDE.sqlite|.tsv [--alone ALONE.sqlite|.tsv] [--steps N] [--step-marker NAME] [--json FILE]

BESIDE: a capture of the step beside the feeder (feed_vs_prefetch's prefetch); ALONE: the same step without
it (train_step_bench --no-graph, launched kernel by kernel as prefetch launches it). In each capture the
step's stream is the one that runs --step-marker, else the one with the most kernel time (a ResNet-18 step
is ~15 ms of kernels per batch; the feeder's kernels are a fraction of that); every other stream's kernels
are the feeder's (nvJPEG's GPU hybrid path, the crop-resize, the fused augmentation) or, in a data-parallel
rank, NCCL's. Written for each capture:
- per stream: kernels, kernel time, busy time (the union of its kernels), the longest kernels by name;
- on the step's stream: the share of its busy time during which a kernel of another stream ran (the SMs
  were shared), and its idle share between its first and last kernel (the GPU waited for launches or data);
- per step (with --steps): the step's busy time and the other streams' kernel time;
with --step-marker (a kernel that ends each step, say sgd_kernel), per step of the last N - 1 (the steady
state: a capture holds warm-up too): the step's period, its kernels' busy time, the gaps between its kernels
(the GPU waiting for launches) and the gap before its first kernel (waiting for the batch), and the long gaps
that ended as another stream's kernel ended (the step's kernel queued behind it in a shared hardware queue);
with --alone, per kernel name of the step: its mean time beside the feeder over its mean time alone, the
names that slowed most, and the step's busy time per step in both. The hardware JPEG engines are no
kernels: their work shows only through what it takes from memory bandwidth (the step's kernels slowing).
Standard library only (sqlite3), so it runs wherever the capture is read."""

import argparse
import bisect
import gzip
import json
import sqlite3
import sys
from collections import defaultdict


def timeline_rows(path, kind):
    """The lines of one kind ("kernel" or "copy") of a cupti_timeline record, fields after the kind."""
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as file:
        rows = [line.rstrip("\n").split("\t")[1:] for line in file if line.startswith(kind + "\t")]
    if kind == "kernel" and not rows:
        raise ValueError(f"{path}: no kernels (did CUPTI record anything?)")
    return rows


def first_device_only(rows):
    first = min(r[4] for r in rows)
    return [(s, e, stream, n or "?") for s, e, stream, n, d in rows if d == first and e > s]


def kernels(path):
    """[(start_ns, end_ns, stream, name)] of every kernel of the capture's first device."""
    if path.endswith((".tsv", ".tsv.gz")):
        return first_device_only([(int(s), int(e), int(stream), name, int(d))
                                  for s, e, d, stream, name in timeline_rows(path, "kernel")])
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        columns = {row[1] for row in db.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")}
        if not columns:
            raise ValueError(f"{path}: no kernels (table CUPTI_ACTIVITY_KIND_KERNEL is missing)")
        name = "shortName" if "shortName" in columns else "demangledName"
        device = "deviceId" if "deviceId" in columns else "0"
        rows = db.execute(f"SELECT k.start, k.end, k.streamId, s.value, {device} FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                          f"LEFT JOIN StringIds s ON s.id = k.{name} ORDER BY k.start").fetchall()
    finally:
        db.close()
    if not rows:
        raise ValueError(f"{path}: the capture has no kernel")
    return first_device_only(rows)


def copies(path):
    """[(start_ns, end_ns, stream, kind)] of the memory copies and sets (kind "set") of a cupti_timeline
    record; empty for an nsys capture."""
    if not path.endswith((".tsv", ".tsv.gz")):
        return []
    return [(int(s), int(e), int(stream), kind)
            for s, e, _device, stream, _bytes, kind in timeline_rows(path, "copy")]


def union(intervals):
    """The union of [start, end) intervals as sorted, disjoint intervals."""
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [tuple(m) for m in merged]


def total(intervals):
    return sum(e - s for s, e in intervals)


def intersection(a, b):
    """The time two sorted, disjoint interval lists share."""
    i = j = 0
    shared = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            shared += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return shared


def summarize(path, steps=None, top=8, marker=None):
    rows = kernels(path)
    by_stream = defaultdict(list)
    for row in rows:
        by_stream[row[2]].append(row)
    # The stream that ends steps with the marker; without one, the busiest. (A data-parallel rank's NCCL
    # stream can be the busiest: its all-reduce kernels spin while they wait for the other rank.)
    marked = {s: sum(n == marker for _, _, _, n in ks) for s, ks in by_stream.items()} if marker else {}
    step_stream = (max(marked, key=marked.get) if marked and max(marked.values()) > 0 else
                   max(by_stream, key=lambda s: sum(e - st for st, e, _, _ in by_stream[s])))
    busy = {s: union((st, e) for st, e, _, _ in ks) for s, ks in by_stream.items()}
    others = union(iv for s, ivs in busy.items() if s != step_stream for iv in ivs)
    step_busy = busy[step_stream]
    window = step_busy[-1][1] - step_busy[0][0]
    streams = []
    for s, ks in sorted(by_stream.items(), key=lambda item: -sum(e - st for st, e, _, _ in item[1])):
        by_name = defaultdict(lambda: [0, 0])
        for st, e, _, n in ks:
            by_name[n][0] += 1
            by_name[n][1] += e - st
        longest = sorted(by_name.items(), key=lambda item: -item[1][1])[:top]
        streams.append({
            "stream": s, "step": s == step_stream, "kernels": len(ks),
            "kernel_ms": sum(e - st for st, e, _, _ in ks) / 1e6, "busy_ms": total(busy[s]) / 1e6,
            "longest": [{"name": n, "count": c, "ms": t / 1e6} for n, (c, t) in longest],
        })
    out = {
        "capture": path,
        "step_stream": step_stream,
        "streams": streams,
        "step_busy_ms": total(step_busy) / 1e6,
        "step_window_ms": window / 1e6,
        "step_idle_share": 1 - total(step_busy) / window if window > 0 else 0.0,
        "step_busy_shared_share": intersection(step_busy, others) / total(step_busy) if step_busy else 0.0,
        "other_kernel_ms": sum(st["kernel_ms"] for st in streams if not st["step"]),
    }
    # The step's busy time during which a copy engine moved data for anyone (its own copies included).
    moved = copies(path)
    by_kind = defaultdict(list)
    for st, e, _, kind in moved:
        by_kind[kind].append((st, e))
    out["copies"] = {kind: {"count": len(ivs), "busy_ms": total(union(ivs)) / 1e6,
                            "step_busy_shared_share": intersection(step_busy, union(ivs)) / total(step_busy)}
                     for kind, ivs in by_kind.items()}
    if steps:
        out["steps"] = steps
        out["step_busy_ms_per_step"] = out["step_busy_ms"] / steps
        out["other_kernel_ms_per_step"] = out["other_kernel_ms"] / steps
    out["other_kernels"] = other_kernels(rows, step_stream, step_busy, top)
    if marker:
        feeder = [(st, e) for st, e, stream, _ in rows if stream != step_stream]
        copy_intervals = [(st, e) for st, e, stream, _ in moved if stream != step_stream]
        other_ends = sorted((e, n) for _, e, stream, n in rows if stream != step_stream)
        out["per_step"] = per_step(by_stream[step_stream], marker, steps or len(by_stream[step_stream]),
                                   feeder, copy_intervals, other_ends)
    out["_step_names"] = mean_by_name(by_stream[step_stream])
    return out


def other_kernels(rows, step_stream, step_busy, top):
    """The other streams' kernels with the most time, by name: median duration of those that ran while the
    step's stream was idle (what the kernel takes on a GPU of its own) and of those that met the step's
    kernels (us)."""
    runs = defaultdict(lambda: ([], []))  # name: (durations with the step idle, durations beside it)
    for st, e, stream, name in rows:
        if stream != step_stream:
            shared = intersection([(st, e)], step_busy)
            runs[name][1 if shared > 0.05 * (e - st) else 0].append(e - st)
    longest = sorted(runs.items(), key=lambda item: -sum(map(sum, item[1])))[:top]
    return [{"name": name, "step_idle": len(idle), "beside_step": len(beside),
             "median_us_step_idle": median(idle) / 1e3 if idle else None,
             "median_us_beside_step": median(beside) / 1e3 if beside else None}
            for name, (idle, beside) in longest]


def overlaps(intervals, lo, hi):
    """Whether any of the sorted, disjoint `intervals` meets [lo, hi]."""
    i = bisect.bisect_right(intervals, (hi, float("inf")))
    return i > 0 and intervals[i - 1][1] >= lo


# A gap of the step's stream that ends within this of another stream's kernel ending was, most likely,
# released by it: the step's next kernel waited behind that kernel in a hardware work queue they shared (a
# launch from the host lands microseconds after whatever happened to end before it, rarely this close).
RELEASE_NS = 20_000
RELEASE_MIN_GAP_NS = 200_000  # gaps shorter than this are launch gaps, whatever ended near them


def per_step(rows, marker, steps, feeder=(), copy_intervals=(), other_ends=()):
    """Medians over the last `steps` - 1 intervals between the ends of the kernels named `marker` (runs of
    them as one) on the step's stream: period, busy, gaps inside, gap before the first kernel (ms); and the
    gaps of 0.2 ms or more that ended as another stream's kernel ended (`other_ends`: sorted (end, name)),
    by that kernel's name."""
    rows = sorted(rows)
    ends = []  # the end of each run of marker kernels (an optimizer may end a step with several)
    previous = None
    for _, e, _, n in rows:
        if n == marker:
            if previous == marker:
                ends[-1] = e
            else:
                ends.append(e)
        previous = n
    if len(ends) < 2:
        raise ValueError(f"the step's stream has {len(ends)} kernel(s) named {marker!r}: no whole step")
    ends = ends[-steps:]
    others = (("a feeder kernel", union(feeder)), ("a copy", union(copy_intervals)))
    periods, busy, gaps, first = [], [], [], []
    company = defaultdict(lambda: [0, 0])  # what else ran in a gap: [count, ns]
    released = defaultdict(lambda: [0, 0])  # the kernel whose end a long gap ended with: [count, ns]
    end_times = [e for e, _ in other_ends]
    for lo, hi in zip(ends, ends[1:]):
        inside = [(s, e) for s, e, _, _ in rows if lo < s <= hi]
        if not inside:
            continue
        merged = union(inside)
        periods.append(hi - lo)
        busy.append(total(merged))
        first.append(inside[0][0] - lo)
        gaps.append(sum(b[0] - a[1] for a, b in zip(merged, merged[1:])))
        for a, b in zip(merged, merged[1:]):
            kind = " and ".join(name for name, intervals in others if overlaps(intervals, a[1], b[0]))
            kind = kind or "nothing else"
            company[kind][0] += 1
            company[kind][1] += b[0] - a[1]
            if b[0] - a[1] >= RELEASE_MIN_GAP_NS:
                i = bisect.bisect_right(end_times, b[0]) - 1
                if i >= 0 and b[0] - end_times[i] <= RELEASE_NS and end_times[i] > a[1]:
                    released[other_ends[i][1]][0] += 1
                    released[other_ends[i][1]][1] += b[0] - a[1]
    count = len(periods)
    return {"marker": marker, "steps": count,
            "period_ms": median(periods) / 1e6, "busy_ms": median(busy) / 1e6,
            "gaps_inside_ms": median(gaps) / 1e6, "gap_before_first_kernel_ms": median(first) / 1e6,
            # The gaps between the step's kernels by what else the GPU did meanwhile (another stream's kernel,
            # a copy on another stream): how much longer a gap is when the feeder's work falls into it.
            "gaps_by_company": {kind: {"per_step": n / count, "mean_us": t / n / 1e3,
                                       "ms_per_step": t / count / 1e6}
                                for kind, (n, t) in sorted(company.items())},
            # Gaps that ended as another stream's kernel ended: the step's work queued behind that kernel.
            "gaps_released_by": {name: {"per_step": n / count, "ms_per_step": t / count / 1e6}
                                 for name, (n, t) in sorted(released.items(), key=lambda item: -item[1][1])}}


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def mean_by_name(rows):
    sums = defaultdict(lambda: [0, 0])
    for st, e, _, n in rows:
        sums[n][0] += 1
        sums[n][1] += e - st
    return {n: (c, t / c) for n, (c, t) in sums.items()}


def compare(beside, alone, top=10):
    """Per kernel name of the step: mean time beside over mean time alone, weighted by its share of the step."""
    a, b = alone["_step_names"], beside["_step_names"]
    rows = []
    for name in set(a) & set(b):
        count, mean_beside = b[name]
        _, mean_alone = a[name]
        rows.append({"name": name, "count_beside": count, "mean_us_alone": mean_alone / 1e3,
                     "mean_us_beside": mean_beside / 1e3, "ratio": mean_beside / mean_alone if mean_alone else None,
                     "extra_ms": count * (mean_beside - mean_alone) / 1e6})
    rows.sort(key=lambda r: -r["extra_ms"])
    time_alone = sum(c * m for c, m in a.values())
    time_beside_alone_mix = sum(b[n][0] * a[n][1] for n in set(a) & set(b))
    time_beside = sum(b[n][0] * b[n][1] for n in set(a) & set(b))
    return {
        "step_kernel_time_ratio": time_beside / time_beside_alone_mix if time_beside_alone_mix else None,
        "names_only_beside": sorted(set(b) - set(a))[:top],
        "slowed_most": rows[:top],
        "step_kernel_ms_alone": time_alone / 1e6,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("beside")
    ap.add_argument("--alone")
    ap.add_argument("--steps", type=int, help="steps in each capture (per-step figures)")
    ap.add_argument("--step-marker", help="the kernel that ends each step (per-step figures)")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    try:
        beside = summarize(args.beside, args.steps, marker=args.step_marker)
        alone = summarize(args.alone, args.steps, marker=args.step_marker) if args.alone else None
    except (ValueError, sqlite3.Error) as error:
        sys.exit(f"nsys_overlap.py: {error}")
    result = {"beside": {k: v for k, v in beside.items() if not k.startswith("_")}}
    if alone:
        result["alone"] = {k: v for k, v in alone.items() if not k.startswith("_")}
        result["comparison"] = compare(beside, alone)
    for side in ("beside", "alone"):
        if side not in result:
            continue
        s = result[side]
        print(f"{side}: step stream busy {s['step_busy_ms']:.1f} ms over {s['step_window_ms']:.1f} ms "
              f"(idle {100 * s['step_idle_share']:.1f} %), shared with other streams' kernels "
              f"{100 * s['step_busy_shared_share']:.1f} % of it; other streams' kernels {s['other_kernel_ms']:.1f} ms")
        if "per_step" in s:
            p = s["per_step"]
            print(f"{side}, per step (median of {p['steps']}): period {p['period_ms']:.2f} ms, kernels busy "
                  f"{p['busy_ms']:.2f} ms, gaps between them {p['gaps_inside_ms']:.2f} ms, before the first "
                  f"{p['gap_before_first_kernel_ms']:.2f} ms")
            for kind, g in p["gaps_by_company"].items():
                print(f"  gaps with {kind} beside: {g['per_step']:.1f} a step, {g['mean_us']:.1f} us each, "
                      f"{g['ms_per_step']:.3f} ms a step")
            for name, g in list(p["gaps_released_by"].items())[:3]:
                print(f"  gaps of 0.2 ms or more that ended as {name[:40]} ended: {g['per_step']:.1f} a step, "
                      f"{g['ms_per_step']:.3f} ms a step")
        for k in s["other_kernels"][:4]:
            idle, beside = k["median_us_step_idle"], k["median_us_beside_step"]
            print(f"  other kernel {k['name'][:40]}: {k['step_idle']} with the step idle"
                  + (f" (median {idle:.1f} us)" if idle is not None else "")
                  + f", {k['beside_step']} beside its kernels"
                  + (f" (median {beside:.1f} us)" if beside is not None else ""))
    if alone and result["comparison"]["step_kernel_time_ratio"]:
        c = result["comparison"]
        print(f"the step's kernels beside the feeder take {c['step_kernel_time_ratio']:.3f}x their time alone; "
              f"slowed most: " + ", ".join(f"{r['name']} {r['ratio']:.2f}x" for r in c["slowed_most"][:4]))
    if args.json:
        with open(args.json, "w") as file:
            json.dump(result, file, indent=2)
            file.write("\n")


if __name__ == "__main__":
    main()
