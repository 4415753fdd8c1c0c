"""python -m conveyor.bench DIR on a small folder: the sides it measures, the table with the ratios of the
same run, the progress bar on stderr, the plot and the JSON; and its timing rule is the project's."""
import json
import os
import subprocess
import sys

import pytest

from support import REPO, conveyor

sys.path.insert(0, str(REPO / "bench" / "peers"))
import timing_rules  # noqa: E402

from conveyor.bench import runs  # noqa: E402

ARGS = ["--batch", "8", "--size", "32", "--batches", "4", "--threads", "2", "--progress", "on"]


def bench(args, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-B", "-m", "conveyor.bench"] + args, cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def feed_and_conveyor(image_folder, tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    done = bench([str(image_folder), "--sides", "feed,conveyor", "--plot", str(out / "bench.png"),
                  "--json", str(out / "bench.json")] + ARGS, cwd=out)
    return done, json.loads((out / "bench.json").read_text()), out


def test_it_measures_feed_and_conveyor_from_their_first_batch(feed_and_conveyor):
    _, result, _ = feed_and_conveyor
    assert result["timing_rule"] == "from_first_batch" and result["conveyor"] == conveyor.__version__
    assert set(result["results"]) == {"feed", "conveyor"}
    for side in result["results"].values():
        assert side["batches"] == 4 and side["images"] == 32
        assert side["images_per_s"] > 0 and side["time_to_first_batch_s"] > 0


def test_the_table_gives_the_ratios_of_the_same_run(feed_and_conveyor):
    done, result, _ = feed_and_conveyor
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines() if line.startswith(("feed", "conv"))}
    assert rows["feed"][-2:] == ["1.00", "-"]  # x feed, x DataLoader (not measured)
    ratio = result["results"]["conveyor"]["images_per_s"] / result["results"]["feed"]["images_per_s"]
    assert rows["conveyor"][-2] == f"{ratio:.2f}"


def test_a_progress_bar_on_stderr_and_a_plot_beside_the_table(feed_and_conveyor):
    done, _, out = feed_and_conveyor
    assert done.stderr.count("4/4 batches") == 2 and "4/4 batches" not in done.stdout
    assert f"plot: {out / 'bench.png'}" in done.stdout
    assert (out / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_dataloader_is_measured_where_torch_is_and_said_missing_where_not(image_folder, tmp_path):
    done = bench([str(image_folder), "--sides", "dataloader", "--plot", ""] + ARGS, cwd=tmp_path)
    if runs.torch_available() is None:
        assert "DataLoader (2 workers" in done.stdout
    else:
        assert "PyTorch's DataLoader not measured" in done.stderr


def test_its_timing_rule_is_the_benchmarks_rule():
    arrivals = [(2.0, 8), (2.1, 8), (3.0, 8), (4.0, 8), (6.0, 8)]
    ours, theirs = runs.rates(arrivals, 0.5, 6.0), timing_rules.pipeline_rates(arrivals, 0.5, 6.0, workers=2)
    for key in ("images_per_s", "time_to_first_batch_s", "images_per_s_overall", "images"):
        assert ours[key] == pytest.approx(theirs[key]), key
