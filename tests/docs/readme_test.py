"""README.md against bench/results/headline.json (scripts/headline_table.py prints the table) and
bench/results/README.md against the results folders."""
import json
import os
import pathlib
import re
import sys
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import headline_table  # noqa: E402

README = (ROOT / "README.md").read_text()
RESULTS = ROOT / "bench" / "results"
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def readme_table():
    begin, end = README.index(headline_table.BEGIN), README.index(headline_table.END)
    return README[begin:end + len(headline_table.END)].split("\n")


def numbers(text):
    return {float(n.replace(",", "")) for n in NUMBER.findall(text)}


class HeadlineTable(unittest.TestCase):
    def test_the_readme_holds_the_table_the_script_prints(self):
        self.assertEqual(readme_table(), headline_table.table(headline_table.load()),
                         "README.md's headline table differs: run scripts/headline_table.py --update README.md")

    def test_every_entry_names_a_results_folder_that_exists(self):
        for entry in json.loads(headline_table.JSON.read_text()):
            self.assertTrue((ROOT / entry["folder"]).is_dir(), f"{entry['id']}: no {entry['folder']}")

    def test_every_number_in_the_readme_table_is_in_headline_json(self):
        rows = "\n".join(line for line in readme_table() if line.startswith("| ["))
        rows = re.sub(r"\]\([^)]*\)", "]", rows)  # the folders' names are checked above
        recorded = numbers(headline_table.JSON.read_text())
        recorded |= {100 * n for n in recorded}  # shares shown as per cent
        missing = sorted(n for n in numbers(rows) if not any(abs(n - r) < 1e-6 for r in recorded))
        self.assertEqual(missing, [], "numbers in README.md's table that headline.json does not hold")

    def test_the_table_holds_at_most_the_rows_the_script_allows(self):
        # One table of headline numbers: the rows that issues ask for, each measured, and no more.
        self.assertLessEqual(len([line for line in readme_table() if line.startswith("| [")]), headline_table.MAX_ROWS)


class Readme(unittest.TestCase):
    def test_it_fits_in_200_lines(self):
        self.assertLessEqual(len(README.splitlines()), 200)

    def test_exactly_one_code_line_begins_with_pip_install(self):
        in_code, lines = False, []
        for line in README.splitlines():
            if line.startswith("```"):
                in_code = not in_code
            elif in_code and line.startswith("pip install"):
                lines.append(line)
        self.assertEqual(len(lines), 1, lines)


class ResultsIndex(unittest.TestCase):
    def test_every_results_folder_has_its_line_in_the_index(self):
        index = (RESULTS / "README.md").read_text()
        folders = sorted(p.name for p in RESULTS.iterdir() if p.is_dir())
        missing = [name for name in folders if f"`{name}/`" not in index]
        self.assertEqual(missing, [], "results folders without a line in bench/results/README.md")

    def test_every_folder_the_index_names_exists(self):
        index = (RESULTS / "README.md").read_text()
        named = re.findall(r"^\| `([^`]+)/` \|", index, re.MULTILINE)
        self.assertTrue(named)
        self.assertEqual([n for n in named if not (RESULTS / n).is_dir()], [])


if __name__ == "__main__":
    unittest.main()
