"""scripts/cpu_time_launcher.sh and scripts/build_cpu_times.py: a build's CPU time, logged per command and summed
by target and part of the tree."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

SCRIPTS = pathlib.Path(__file__).resolve().parents[2] / "scripts"
LOG = """1.50 0.50 9.0 CMakeFiles/conveyor_data.dir/src/core/mask.cpp.o
3.00 1.00 12.0 CMakeFiles/conveyor_data.dir/src/core/sample.cpp.o
2.00 0.00 2.0 libconveyor_data.a
5.00 1.00 6.0 tests/core/CMakeFiles/conveyor_core_tests.dir/sample_test.cpp.o
0.70 0.30 1.0 tests/core/conveyor_core_tests
"""


def summarize(*logs):
    done = subprocess.run([sys.executable, str(SCRIPTS / "build_cpu_times.py"), *logs], capture_output=True,
                          text=True, timeout=60)
    return done.returncode, done.stdout + done.stderr


class Summary(unittest.TestCase):
    def test_cpu_time_is_summed_by_kind_part_and_target(self):
        with tempfile.TemporaryDirectory() as folder:
            log = pathlib.Path(folder) / "build.log"
            log.write_text(LOG)
            status, text = summarize(str(log))
        self.assertEqual(status, 0, text)
        lines = {line.split()[0] if not line.startswith("  ") else line.strip().rsplit(None, 1)[0]:
                 line.split()[-1] for line in text.splitlines() if line.strip()}
        self.assertEqual(lines["total"], "15.0")
        self.assertEqual(lines["compile"], "12.0")
        self.assertEqual(lines["link"], "3.0")
        self.assertEqual(lines["libraries"], "8.0")  # the objects and the archive
        self.assertEqual(lines["tests"], "7.0")
        self.assertEqual(lines["conveyor_core_tests"], "7.0")  # its objects and its link

    def test_a_line_that_is_not_a_timing_is_an_error(self):
        with tempfile.TemporaryDirectory() as folder:
            log = pathlib.Path(folder) / "build.log"
            log.write_text("Command exited with non-zero status 1\n")
            status, text = summarize(str(log))
        self.assertNotEqual(status, 0)
        self.assertIn("not 'user sys wall output'", text)


class Launcher(unittest.TestCase):
    def test_a_command_is_run_and_its_time_appended_with_its_output_and_status(self):
        with tempfile.TemporaryDirectory() as folder:
            log = pathlib.Path(folder) / "times.log"
            env = {"CONVEYOR_CPU_TIME_LOG": str(log), "PATH": "/usr/bin:/bin"}
            ok = subprocess.run([str(SCRIPTS / "cpu_time_launcher.sh"), "sh", "-c", "exit 0", "-o", "a.o"], env=env,
                                timeout=60)
            failed = subprocess.run([str(SCRIPTS / "cpu_time_launcher.sh"), "sh", "-c", "exit 3"], env=env, timeout=60)
            lines = log.read_text().splitlines()
        self.assertEqual((ok.returncode, failed.returncode), (0, 3))
        self.assertEqual(len(lines), 2)
        self.assertEqual(lines[0].split()[3], "a.o")
        self.assertEqual(lines[1].split()[3], "?")
        self.assertTrue(all(len(line.split()) == 4 for line in lines))


if __name__ == "__main__":
    unittest.main()
