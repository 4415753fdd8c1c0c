"""What every peer's JSON records besides its figures: the command, the commit, the machine, the date;
and how it is written. Free of torch (tested in tests/bench/)."""

import datetime
import json
import os
import platform
import socket
import subprocess
import sys


def git_commit(directory=None):
    """CONVEYOR_COMMIT from the environment when set (bench/gpu/lib.sh sets it from the bundle: the GPU
    machine's copy of the tree may answer git with a commit that is not the one built), else the short
    commit of the repository holding `directory` (this file's by default), else "unknown"."""
    given = os.environ.get("CONVEYOR_COMMIT", "").strip()
    if given:
        return given
    directory = directory or os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(["git", "-C", directory, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def machine():
    """Host, cores, OS and Python: the part of the record that needs no torch."""
    return {
        "hostname": socket.gethostname(),
        "nproc": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def header(bench):
    """The first fields of every peer's JSON."""
    return {
        "bench": bench,
        "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
        "commit": git_commit(),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(),
    }


def write_json(path, result):
    """Writes `result` as indented JSON plus a newline; an unwritable path ends the program with a message
    naming it (the figures were already printed)."""
    try:
        with open(path, "w") as file:
            json.dump(result, file, indent=2)
            file.write("\n")
    except OSError as error:
        sys.exit(f"{os.path.basename(sys.argv[0])}: cannot write {path}: {error.strerror}")
