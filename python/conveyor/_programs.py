"""The commands pip installs for the data service's programs (pyproject.toml's [project.scripts]): each runs
the program of the same name that the package carries in conveyor/_bin/, with the same arguments."""
import os
import sys

_BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin")


def _run(name):
    program = os.path.join(_BIN, name)
    if not os.access(program, os.X_OK):
        sys.exit(f"{name}: this conveyor package was built without the data service's programs ({program})")
    os.execv(program, [name] + sys.argv[1:])


def dispatcher():
    _run("conveyor-dispatcher")


def worker():
    _run("conveyor-worker")


def service_status():
    _run("conveyor-service-status")
