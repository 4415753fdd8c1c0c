"""What the plotting scripts share: matplotlib without a display, the PNG written at one resolution, and the
command line `SCRIPT INPUT OUT.png`.

A script imports it from its own folder: beside it in bench/, and copied beside it where a program runs it
(examples/*/CMakeLists.txt copy plot.sh, the script and this module into the program's folder).
"""
import sys

import matplotlib

matplotlib.use("Agg")  # no display: the figure only goes to a file
import matplotlib.pyplot as plt  # noqa: E402,F401  (the scripts' pyplot, after the backend is chosen)


def save(fig, out_path, **layout):
    """Lays the figure out (tight_layout's arguments) and writes it to out_path."""
    fig.tight_layout(**layout)
    fig.savefig(out_path, dpi=110)


def run_from_command_line(main, usage):
    """main(INPUT, OUT_PATH) from the command line; with other arguments, exits with the script's usage."""
    if len(sys.argv) != 3:
        sys.exit(usage)
    main(sys.argv[1], sys.argv[2])
