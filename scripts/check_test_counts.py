#!/usr/bin/env python3
"""Prints how many CTest tests each test program and each label has in a build tree, and fails when one
is below its minimum in tests/test_counts.txt or missing: a program that silently dropped out (GPU programs
without nvcc, the examples' tests without the examples, a scripted test without its interpreter) fails the
run instead of passing unnoticed.

    check_test_counts.py BUILD_DIR [--label LABEL] [--require FEATURE]...

A row of tests/test_counts.txt applies when the build has every feature the row needs:
  examples, benchmarks  the CMake options CONVEYOR_EXAMPLES, CONVEYOR_BENCHMARKS are ON
  cuda                  the build has its GPU parts (CONVEYOR_BUILT_WITH_CUDA in the generated version.h:
                        CMake found a CUDA compiler and no sanitizer is on)
A --require'd feature the build lacks is an error (CI requires cuda: a machine whose CUDA compiler went
missing must not pass with the GPU programs gone). With --label, only tests carrying LABEL are counted
and only that label's row is checked (a build of just those programs, such as the ThreadSanitizer one).
Programs are GoogleTest executables (one CTest test per case); any other CTest test counts as a program
of its own, under its test name. A program gtest_discover_tests could not list (<target>_NOT_BUILT) fails
(except with --label, where programs without the label are left unbuilt on purpose).
"""
import argparse
import collections
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COUNTS = os.path.join(ROOT, "tests", "test_counts.txt")
FEATURES = ("cuda", "examples", "benchmarks")


def read_minimums(path):
    """[(kind, name, minimum, needs)] from the table; '#' starts a comment."""
    rows = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            if len(fields) not in (3, 4) or fields[0] not in ("program", "label") or not fields[2].isdigit():
                sys.exit(f"{path}:{number}: expected 'program|label NAME MINIMUM [FEATURE,...]'")
            needs = set(fields[3].split(",")) if len(fields) == 4 else set()
            unknown = needs - set(FEATURES)
            if unknown:
                sys.exit(f"{path}:{number}: unknown feature {', '.join(sorted(unknown))}")
            rows.append((fields[0], fields[1], int(fields[2]), needs))
    return rows


def read_cache(build):
    cache = {}
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith(("#", "//")) or "=" not in line or ":" not in line.split("=", 1)[0]:
                continue
            key, value = line.rstrip("\n").split("=", 1)
            cache[key.split(":", 1)[0]] = value
    return cache


def build_features(cache):
    on = lambda key: cache.get(key, "OFF").upper() in ("ON", "1", "TRUE", "YES")
    features = set()
    if on("CONVEYOR_EXAMPLES"):
        features.add("examples")
    if on("CONVEYOR_BENCHMARKS"):
        features.add("benchmarks")
    return features


def built_with_cuda(build):
    """What the configure decided, as it wrote it into the generated version header."""
    path = os.path.join(build, "include", "conveyor", "version.h")
    if not os.path.exists(path):
        return False
    with open(path) as f:
        return any(line.split()[:3] == ["#define", "CONVEYOR_BUILT_WITH_CUDA", "1"] for line in f)


def list_tests(build):
    result = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"], capture_output=True,
                            text=True)
    if result.returncode != 0:
        sys.exit(f"ctest could not list the tests of {build}:\n{result.stderr}")
    tests = []
    for test in json.loads(result.stdout)["tests"]:
        command = test.get("command") or []
        labels = []
        for prop in test.get("properties", []):
            if prop["name"] == "LABELS":
                labels = prop["value"]
        discovered = any(arg.startswith("--gtest_filter=") for arg in command[1:])
        program = os.path.basename(command[0]) if command and discovered else test["name"]
        if program.endswith(".sh"):  # a wrapper (run_unprivileged.sh): its test is a program of its own
            program = test["name"]
        tests.append((test["name"], program, labels))
    return tests


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build")
    parser.add_argument("--label")
    parser.add_argument("--require", action="append", default=[], choices=FEATURES)
    args = parser.parse_args()

    features = build_features(read_cache(args.build))
    if built_with_cuda(args.build):
        features.add("cuda")
    problems = [f"the build has no {feature} parts, and they are required" for feature in args.require
                if feature not in features]
    tests = list_tests(args.build)
    if args.label:
        # Programs without the label are not built in such a build: their placeholders are expected.
        tests = [t for t in tests if args.label in t[2]]
    else:
        problems += [f"{name}: the program was not built" for name, _, _ in tests if name.endswith("_NOT_BUILT")]
    programs = collections.Counter(program for _, program, _ in tests)
    labels = collections.Counter(label for _, _, test_labels in tests for label in test_labels)

    scope = f" labelled {args.label}" if args.label else ""
    print(f"test counts{scope} in {args.build} (build features: {', '.join(sorted(features)) or 'none'})")
    # Several rows may name one program or label (a label whose count depends on the features): the one
    # that applies and needs the most features counts.
    rows = collections.defaultdict(list)
    for kind, name, minimum, needs in read_minimums(COUNTS):
        rows[(kind, name)].append((minimum, needs))
    checked = set()
    for (kind, name), choices in rows.items():
        if args.label and (kind, name) != ("label", args.label):
            continue
        counts = programs if kind == "program" else labels
        have = counts.get(name, 0)
        checked.add((kind, name))
        applicable = [(len(needs), minimum, needs) for minimum, needs in choices if needs <= features]
        if not applicable:
            missing = min((needs - features for _, needs in choices), key=len)
            print(f"  {kind:7} {name:44} {have:5}   (not expected: needs {', '.join(sorted(missing))})")
            continue
        _, minimum, needs = max(applicable, key=lambda row: (row[0], row[1]))
        status = "ok" if have >= minimum else "BELOW MINIMUM" if have else "MISSING"
        print(f"  {kind:7} {name:44} {have:5} >= {minimum:<5} {status}")
        if have < minimum:
            problems.append(f"{kind} {name}: {have} tests, at least {minimum} expected")
    for kind, counts in (("program", programs), ("label", labels)):
        for name in sorted(set(counts) - {n for k, n in checked if k == kind}):
            if not (args.label and kind == "label"):
                print(f"  {kind:7} {name:44} {counts[name]:5}   (no minimum in tests/test_counts.txt)")
    print(f"  {len(tests)} tests{scope}")
    for problem in problems:
        print(f"check_test_counts: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
