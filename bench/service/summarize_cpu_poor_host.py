#!/usr/bin/env python3
"""summarize_cpu_poor_host.py OUT: issue 40's ratios from cpu_poor_host.sh's JSON in OUT.

Prints summary.txt's lines and writes OUT/summary.json. Every ratio is the median of the rounds' own ratios
(round R's run against round R's baseline, measured next to each other), with the rounds' figures beside it:
(a) each fed trainer's images/s over train_step_bench's; (b) each served run over the local pipeline's.
"""
import glob
import json
import os
import statistics
import sys


def rate(path):
    with open(path) as f:
        j = json.load(f)
    if "results" in j:  # feed_vs_prefetch: its prefetch mode
        return next(m["images_per_s"] for m in j["results"] if m["mode"] == "prefetch")
    return j["images_per_s"]


def runs(out, prefix):
    """{round: images/s} of the runs named PREFIX_R.json."""
    found = {}
    for path in glob.glob(os.path.join(out, prefix + "_*.json")):
        tail = os.path.basename(path)[len(prefix) + 1:-len(".json")]
        if tail.isdigit():
            found[int(tail)] = rate(path)
    return found


def cpu_per_image(out, prefix):
    """{round: (CPU us an image, system share)}: the local pipeline's own (its JSON's rusage), or for a served
    run its workers' (cpu_poor_host.sh's PREFIX_R.cpu.json) over the images the trainer received."""
    found = {}
    for path in glob.glob(os.path.join(out, prefix + "_*.json")):
        tail = os.path.basename(path)[len(prefix) + 1:-len(".json")]
        if not tail.isdigit():
            continue
        with open(path) as f:
            j = json.load(f)
        cpu = j.get("cpu", {})
        account = os.path.join(out, f"{prefix}_{tail}.cpu.json")
        if os.path.exists(account):
            with open(account) as f:
                workers = json.load(f).get("workers", [])
            cpu = {"user_s": sum(w["user_s"] for w in workers), "system_s": sum(w["system_s"] for w in workers)}
        total = cpu.get("user_s", 0) + cpu.get("system_s", 0)
        if total > 0 and j.get("images"):
            found[int(tail)] = (1e6 * total / j["images"], cpu["system_s"] / total)
    return found


def paired(values, baseline):
    """The rounds' ratios (rounds both sides ran) and their median."""
    rounds = sorted(set(values) & set(baseline))
    ratios = [values[r] / baseline[r] for r in rounds]
    return ratios, (statistics.median(ratios) if ratios else None)


def main(out):
    summary = {}
    lines = []
    steps = runs(out, "a_step")
    if steps:
        summary["a_train_step_bench"] = [steps[r] for r in sorted(steps)]
        fed = sorted({os.path.basename(p)[2:].rsplit("_", 1)[0]
                      for p in glob.glob(os.path.join(out, "a_service_*.json"))})
        for name in ["host", "alone"] + fed:
            values = runs(out, "a_" + name)
            ratios, median = paired(values, steps)
            if median is None:
                continue
            summary["a_" + name] = {"images_per_s": [values[r] for r in sorted(values)],
                                    "share_of_step_by_round": ratios, "share_of_step": median}
            lines.append(f"(a) {name:16s} {100 * median:5.1f} % of train_step_bench, median of rounds "
                         f"({', '.join(f'{100 * x:.1f}' for x in ratios)}); img/s "
                         f"{[round(values[r]) for r in sorted(values)]} against {[round(steps[r]) for r in sorted(steps)]}")
    for path in sorted(glob.glob(os.path.join(out, "b_k*_local_1.json"))):
        k = os.path.basename(path).split("_")[1]
        local = runs(out, f"b_{k}_local")
        served = sorted({os.path.basename(p).split("_")[2]
                         for p in glob.glob(os.path.join(out, f"b_{k}_service*.json"))})
        for name in served:
            remote = runs(out, f"b_{k}_{name}")
            ratios, median = paired(remote, local)
            if median is None:
                continue
            key = "b_" + k + ("" if name == "service" else "_" + name[len("service-"):])
            summary[key] = {"local": [local[r] for r in sorted(local)],
                            "service": [remote[r] for r in sorted(remote)],
                            "ratio_by_round": ratios, "ratio": median}
            lines.append(f"(b) {k} {name}: {median:.3f}x the local pipeline, median of rounds "
                         f"({', '.join(f'{x:.3f}' for x in ratios)}); img/s "
                         f"{[round(remote[r]) for r in sorted(remote)]} against {[round(local[r]) for r in sorted(local)]}")
            # What an image costs the worker's cores against the local pipeline's (where both were recorded).
            local_cpu, remote_cpu = cpu_per_image(out, f"b_{k}_local"), cpu_per_image(out, f"b_{k}_{name}")
            both = sorted(set(local_cpu) & set(remote_cpu))
            if both:
                summary[key]["cpu_us_per_image"] = {"local": [local_cpu[r][0] for r in both],
                                                    "workers": [remote_cpu[r][0] for r in both],
                                                    "local_system_share": [local_cpu[r][1] for r in both],
                                                    "workers_system_share": [remote_cpu[r][1] for r in both]}
                lines.append(f"    CPU an image: workers {statistics.median(remote_cpu[r][0] for r in both):.0f} us "
                             f"(system {100 * statistics.median(remote_cpu[r][1] for r in both):.0f} %) against "
                             f"the local pipeline's {statistics.median(local_cpu[r][0] for r in both):.0f} us "
                             f"(system {100 * statistics.median(local_cpu[r][1] for r in both):.0f} %), medians of rounds")
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("".join(line + "\n" for line in lines))
    print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: summarize_cpu_poor_host.py OUT")
    main(sys.argv[1])
