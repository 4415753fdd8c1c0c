#!/usr/bin/env python3
"""The test suite's closing line, `N passed, N failed, N skipped`, from CTest's JUnit report, so that a
skipped test is never read as a passed one (./conveyor.sh test prints it; .ci/run adds the runs up).

    ctest_summary.py JUNIT_XML [--write FILE]   the names of the skipped tests, then the closing line;
                                                --write also puts the line into FILE
    ctest_summary.py --total FILE...            the closing lines of several runs (FILEs written above),
                                                each, then their sum

CTest counts a test as skipped when its output matches its SKIP_REGULAR_EXPRESSION: GoogleTest's
"[  SKIPPED ]" (GTEST_SKIP, e.g. a GPU test without a GPU; cmake/ConveyorTargets.cmake) and a pytest file
whose every case skipped (tests/python/CMakeLists.txt). A test that did not run (a missing program, a
failed fixture) counts as failed.
"""
import argparse
import pathlib
import re
import sys
import xml.etree.ElementTree as ElementTree

LINE = re.compile(r"^(\d+) passed, (\d+) failed, (\d+) skipped$")
SHOWN_SKIPS = 20


def counts(junit):
    """(passed, failed, skipped names) of a CTest JUnit report."""
    root = ElementTree.parse(junit).getroot()
    cases = root.iter("testcase")
    passed, failed, skipped = 0, 0, []
    for case in cases:
        if case.find("skipped") is not None:
            skipped.append(case.get("name"))
        elif case.get("status") == "run" and case.find("failure") is None:
            passed += 1
        else:
            failed += 1
    return passed, failed, skipped


def line(passed, failed, skipped):
    return f"{passed} passed, {failed} failed, {skipped} skipped"


def total(files):
    sums = [0, 0, 0]
    for path in files:
        text = pathlib.Path(path).read_text().strip()
        found = LINE.match(text)
        if not found:
            raise ValueError(f"{path}: not a closing line ('{text}')")
        print(f"{path}: {text}")
        sums = [a + int(b) for a, b in zip(sums, found.groups())]
    return line(*sums)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("junit", nargs="?")
    parser.add_argument("--write", metavar="FILE")
    parser.add_argument("--total", nargs="+", metavar="FILE")
    args = parser.parse_args()
    try:
        if args.total:
            print(f"total: {total(args.total)}")
            return
        if not args.junit:
            parser.error("a JUnit report or --total")
        passed, failed, skipped = counts(args.junit)
    except (OSError, ElementTree.ParseError, ValueError) as error:
        sys.exit(f"ctest_summary: {error}")
    if skipped:
        shown = ", ".join(skipped[:SHOWN_SKIPS]) + (f" and {len(skipped) - SHOWN_SKIPS} more"
                                                    if len(skipped) > SHOWN_SKIPS else "")
        print(f"skipped: {shown}")
    closing = line(passed, failed, len(skipped))
    if args.write:
        pathlib.Path(args.write).write_text(closing + "\n")
    print(closing)


if __name__ == "__main__":
    main()
