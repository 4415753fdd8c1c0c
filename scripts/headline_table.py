#!/usr/bin/env python3
"""Prints the README's headline table from bench/results/headline.json, the one table of record.

    scripts/headline_table.py [--json FILE]        the table, as the README must hold it
    scripts/headline_table.py --update README.md   writes it between the README's markers

Each entry of headline.json: id, metric, unit ("images/s" or "s"), conveyor (a number), peer ({"name",
"value"}: the strongest peer variant, named, measured in the same run), ratio (conveyor's advantage: for
rates conveyor / peer, for times peer / conveyor), ratio_format ("x" or "percent"), timing (the rule the
figures were counted by, TIMING), target, machine, date, commit, folder (the results folder, which must
exist), and optionally startup_s ({"conveyor", "peer"}: the time to the first batch, reported apart) and
how (medians of what). tests/docs/readme_test.py checks the README against this script.
"""
import argparse
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
JSON = ROOT / "bench" / "results" / "headline.json"
BEGIN = "<!-- headline table: printed by scripts/headline_table.py from bench/results/headline.json -->"
END = "<!-- end of headline table -->"
MAX_ROWS = 13
# How the figures of a row were counted (bench/peers/timing_rules.py, docs/benchmarks.md).
TIMING = {
    "from_first_batch": "from the first batch",
    "after_warmup_steps": "after warm-up steps",
    "median_step": "median step",
    "time_to_train": "whole run",
}
FIELDS = ("id", "metric", "unit", "conveyor", "peer", "ratio", "ratio_format", "timing", "target", "machine",
          "date", "commit", "folder")


def load(path=JSON):
    """The entries, each checked for its fields and its folder; ValueError says what is wrong."""
    entries = json.loads(pathlib.Path(path).read_text())
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{path}: not a non-empty list of entries")
    if len(entries) > MAX_ROWS:
        raise ValueError(f"{path}: {len(entries)} entries, the README's table holds at most {MAX_ROWS}")
    for entry in entries:
        name = entry.get("id", "?")
        missing = [field for field in FIELDS if field not in entry]
        if missing:
            raise ValueError(f"{path}: entry {name} lacks {', '.join(missing)}")
        if not {"name", "value"} <= set(entry["peer"]):
            raise ValueError(f"{path}: entry {name}: peer must have a name and a value")
        if entry["timing"] not in TIMING:
            raise ValueError(f"{path}: entry {name}: timing '{entry['timing']}' is not one of {', '.join(TIMING)}")
        if entry["unit"] not in ("images/s", "s") or entry["ratio_format"] not in ("x", "percent"):
            raise ValueError(f"{path}: entry {name}: unit or ratio_format unknown")
        if not (ROOT / entry["folder"]).is_dir():
            raise ValueError(f"{path}: entry {name}: folder {entry['folder']} does not exist")
    return entries


def value(number, unit):
    return f"{number:,} img/s" if unit == "images/s" else f"{number} s"


def ratio(entry):
    if entry["ratio_format"] == "percent":
        return f"**{100 * entry['ratio']:.1f} %**"
    return f"**{entry['ratio']}x**"


def startup(entry, side):
    seconds = entry.get("startup_s", {}).get(side)
    return f", first batch after {seconds} s" if seconds is not None else ""


def table(entries):
    """The table's lines, markers included."""
    lines = [BEGIN,
             "| what (results folder) | conveyor | strongest peer, same run | ratio | counted | target |",
             "|---|---|---|---|---|---|"]
    for e in entries:
        lines.append(
            f"| [{e['metric']}]({e['folder']}/) | {value(e['conveyor'], e['unit'])}{startup(e, 'conveyor')} | "
            f"{e['peer']['name']}: {value(e['peer']['value'], e['unit'])}{startup(e, 'peer')} | {ratio(e)} | "
            f"{TIMING[e['timing']]} | {e['target']} |")
    machines = "; ".join(sorted({e["machine"] for e in entries}))
    dates = sorted(e["date"] for e in entries)
    when = dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
    lines.append("")
    lines.append(f"Measured on {machines}, {when}; each row's folder holds its command, commit and the "
                 "programs' JSON. Every ratio is taken within one run, from the median of its rounds (`how` in "
                 "headline.json). How each row was counted, and what was tried on the way: "
                 "[docs/benchmarks.md](docs/benchmarks.md).")
    lines.append(END)
    return lines


def update(readme, lines):
    text = pathlib.Path(readme).read_text()
    if BEGIN not in text or END not in text:
        raise ValueError(f"{readme} has no headline table markers ({BEGIN} ... {END})")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    pathlib.Path(readme).write_text(head + "\n".join(lines) + tail)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", default=str(JSON))
    parser.add_argument("--update", metavar="README", help="write the table between the README's markers")
    args = parser.parse_args()
    try:
        lines = table(load(args.json))
        if args.update:
            update(args.update, lines)
        else:
            print("\n".join(lines))
    except ValueError as error:
        sys.exit(f"headline_table: {error}")


if __name__ == "__main__":
    main()
