"""scripts/ctest_summary.py: the suite's closing line counts skipped tests apart from passed and failed ones."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "ctest_summary.py"
# As CTest 3.25 writes it: a skipped test is "notrun" with a <skipped> child, a missing program "notrun" alone.
JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="x" tests="5" failures="1" disabled="0" skipped="1">
  <testcase name="passes" status="run"><system-out/></testcase>
  <testcase name="GpuFeeder.Copies" status="notrun"><skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/></testcase>
  <testcase name="fails" status="fail"><failure message="Failed"/></testcase>
  <testcase name="missing_program" status="notrun"/>
  <testcase name="passes_too" status="run"/>
</testsuite>
"""


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


class ClosingLine(unittest.TestCase):
    def test_skipped_tests_are_counted_apart_and_named(self):
        with tempfile.TemporaryDirectory() as folder:
            junit, summary = pathlib.Path(folder) / "j.xml", pathlib.Path(folder) / "s.txt"
            junit.write_text(JUNIT)
            done = run(str(junit), "--write", str(summary))
            self.assertEqual(done.returncode, 0, done.stderr)
            lines = done.stdout.splitlines()
            self.assertEqual(lines[-1], "2 passed, 2 failed, 1 skipped")  # a test that did not run failed
            self.assertEqual(lines[0], "skipped: GpuFeeder.Copies")
            self.assertEqual(summary.read_text(), "2 passed, 2 failed, 1 skipped\n")

    def test_the_total_adds_up_the_runs(self):
        with tempfile.TemporaryDirectory() as folder:
            paths = []
            for i, line in enumerate(["850 passed, 0 failed, 12 skipped", "690 passed, 1 failed, 0 skipped"]):
                paths.append(pathlib.Path(folder) / f"{i}.txt")
                paths[-1].write_text(line + "\n")
            done = run("--total", *map(str, paths))
            self.assertEqual(done.stdout.splitlines()[-1], "total: 1540 passed, 1 failed, 12 skipped")

    def test_a_file_that_is_not_a_closing_line_fails(self):
        with tempfile.TemporaryDirectory() as folder:
            path = pathlib.Path(folder) / "x.txt"
            path.write_text("all good\n")
            self.assertNotEqual(run("--total", str(path)).returncode, 0)


if __name__ == "__main__":
    unittest.main()
