"""The timing rules and statistics the PyTorch peers share, free of torch so that they can be tested
on a machine without it (tests/bench/test_peer_logic.py).

Every peer reports the median of per-step times and an overall rate; warm-up is never inside either.
"""

import math


def median(values):
    """The median of a non-empty sequence of numbers (the mean of the two middle ones for an even count)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("median of no values")
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else 0.5 * (ordered[mid - 1] + ordered[mid])


def percentile(values, q):
    """The value at quantile q (0..1) by the nearest rank on the sorted values, as train_step_bench rounds:
    index round(q * (n - 1))."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} is outside 0..1")
    return ordered[min(len(ordered) - 1, int(math.floor(q * (len(ordered) - 1) + 0.5)))]


def step_summary(step_ms, batch):
    """Median and p95 of per-step milliseconds, and the images/s the median step gives."""
    if not step_ms:
        raise ValueError("no timed steps")
    if batch <= 0:
        raise ValueError(f"batch {batch} is not positive")
    med = median(step_ms)
    return {
        "steps": len(step_ms),
        "step_ms_median": med,
        "step_ms_p95": percentile(step_ms, 0.95),
        "step_ms_min": min(step_ms),
        "images_per_s": 1000.0 * batch / med if med > 0 else 0.0,
    }


def periods(marks_ms):
    """Step periods from the times at which consecutive steps began, plus the time the last one ended:
    n + 1 marks give n periods. A period holds everything between two step starts on the GPU's timeline,
    waiting for data included, which is what a data-starved loop loses."""
    if len(marks_ms) < 2:
        raise ValueError("need at least two marks (a step's start and its end)")
    out = [b - a for a, b in zip(marks_ms, marks_ms[1:])]
    if any(p < 0 for p in out):
        raise ValueError(f"marks are not in time order: {marks_ms}")
    return out


def steady_rate(arrivals, end, warmup):
    """Images of the batches after the first `warmup` ones, over the time from batch `warmup`'s arrival to
    `end`. arrivals: (time_s, images) per batch in arrival order. 0.0 when no batch follows the warm-up
    ones or no time passed. warmup=1 is the headline rule (pipeline_rates)."""
    if warmup < 1:
        raise ValueError(f"warm-up of {warmup} batches: at least one batch must start the clock")
    if len(arrivals) <= warmup:
        return 0.0
    seconds = end - arrivals[warmup - 1][0]
    return sum(n for _, n in arrivals[warmup:]) / seconds if seconds > 0 else 0.0


TIMING_RULE = "from_first_batch"


def pipeline_rates(arrivals, start, end, workers):
    """The figures every pipeline benchmark writes (pipeline_throughput's C++ rule, the peers alike), from
    (time_s, images) per batch in arrival order, the time the loader was started and the last batch's end:
    - images_per_s: the headline, counted from the first batch (images after it, over the time from its
      arrival to `end`); images_per_s_after_first_batch: the same figure under its older name;
    - time_to_first_batch_s: start-up, reported apart;
    - images_per_s_after_warmup_batches: after W = warmup_batches(workers, ...) batches, named as such
      (the headline rule before 2026-11-27, which flatters a pipeline that starts slowly);
    - images_per_s_overall: counting start-up."""
    if not arrivals:
        raise ValueError("no batch arrived")
    warmup = warmup_batches(workers, len(arrivals))
    images = sum(n for _, n in arrivals)
    first = steady_rate(arrivals, end, 1)
    return {
        "timing_rule": TIMING_RULE,
        "images_per_s": first,
        "images_per_s_after_first_batch": first,
        "images_per_s_after_warmup_batches": steady_rate(arrivals, end, warmup),
        "images_per_s_overall": images / (end - start) if end > start else 0.0,
        "images": images,
        "warmup_batches": warmup,
        "time_to_first_batch_s": arrivals[0][0] - start,
        "steady_s": end - arrivals[warmup - 1][0],
    }


def describe_rates(figures):
    """One line for a console: the headline rate and what stands beside it."""
    return (f"{figures['images_per_s']:.1f} images/s from the first batch "
            f"({figures['images_per_s_after_warmup_batches']:.1f} after {figures['warmup_batches']} batches, "
            f"{figures['images_per_s_overall']:.1f} counting start-up; {figures['images']} images, first batch "
            f"after {figures['time_to_first_batch_s']:.3f} s)")


def warmup_batches(workers, batches):
    """W warm-up batches for a loader of `workers` workers that made `batches` batches: the worker count
    (each worker makes whole batches and all start together), at least 1, fewer when the run is too short
    to leave half of it after them."""
    return min(max(workers, 1), max(1, batches // 2))


def alternating_order(variants, rounds):
    """The order in which `rounds` rounds of measurement visit the variants: as given in even rounds,
    reversed in odd ones (A B C, C B A, A B C, ...), so that drift of the machine over the run (clocks,
    temperature, neighbours) weighs on every variant alike."""
    if rounds < 1:
        raise ValueError(f"{rounds} rounds: at least one is needed")
    variants = list(variants)
    if len(set(variants)) != len(variants):
        raise ValueError(f"a variant is named twice in {variants}")
    return [list(variants) if r % 2 == 0 else list(reversed(variants)) for r in range(rounds)]


def parse_choices(text, allowed, what):
    """'a,b,c' -> ['a', 'b', 'c'], each one of `allowed`, none twice, in the given order."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise ValueError(f"no {what} given (choose from {', '.join(allowed)})")
    for name in names:
        if name not in allowed:
            raise ValueError(f"unknown {what} '{name}' (choose from {', '.join(allowed)})")
    if len(set(names)) != len(names):
        raise ValueError(f"a {what} is named twice in '{text}'")
    return names


def strongest(rates):
    """The name with the highest images/s among {name: images_per_s or None}; None when none ran."""
    ran = {name: rate for name, rate in rates.items() if rate}
    return max(ran, key=ran.get) if ran else None


def ratio(numerator, denominator):
    """numerator / denominator, or None when either is missing or the denominator is 0."""
    if not numerator or not denominator:
        return None
    return numerator / denominator


def steps_needed_epochs(images, batch, steps):
    """How many passes over `images` files give at least `steps` full batches of `batch`."""
    if images <= 0:
        raise ValueError("no images")
    return max(1, math.ceil(steps * batch / images))


def conveyor_ratios(conveyor, peer):
    """pipeline_throughput's JSON (`conveyor`) against a DataLoader run's figures (`peer`): conveyor's
    images/s and threads, and conveyor / peer under each timing rule both report."""
    out = {
        "conveyor_images_per_s": conveyor["images_per_s"],
        "conveyor_threads": conveyor.get("threads"),
        "ratio_conveyor_to_torch": ratio(conveyor["images_per_s"], peer["images_per_s"]) or 0.0,
    }
    for rule in ("images_per_s_after_warmup_batches", "images_per_s_overall"):
        value = ratio(conveyor.get(rule), peer.get(rule))
        if value:
            out[f"ratio_conveyor_to_torch_{rule.removeprefix('images_per_s_')}"] = value
    return out
