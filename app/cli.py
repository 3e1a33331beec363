"""The `linkwright` command: the GUI with no sub-command, the headless sub-commands of core.cli otherwise."""

from __future__ import annotations

import difflib
import os
import sys
from typing import Sequence

# Our linear systems are small (at most a few hundred unknowns): a second BLAS thread only adds contention
# (measured: a 153x153 solve went from 0.2 ms to several ms on 2 cores). Must be set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from core.cli import build_parser, run_command  # noqa: E402

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line; start the GUI or run a headless sub-command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser, sub = build_parser()
    parser.add_argument("--screenshot", metavar="OUT.png", help="render the main window to a PNG and exit")
    parser.usage = "linkwright [-h] [--version] [--screenshot OUT.png] [FILE] | linkwright COMMAND ..."
    names = set(sub.choices)
    if argv and argv[0] in names:
        args = parser.parse_args(argv)
        return run_command(args)
    # GUI mode: optional FILE, optional --screenshot; sub-commands are listed in --help.
    first = argv[0] if argv else ""
    if first and not first.startswith("-") and not first.lower().endswith(".json") and not os.path.exists(first):
        # Neither a command nor a file: most likely a mistyped command (`linkwright analyse FILE`).
        close = difflib.get_close_matches(first, sorted(names), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        print(f"linkwright: error: '{first}' is not a command or a file (commands: {', '.join(sorted(names))}){hint}",
              file=sys.stderr)
        return 2
    opts = [a for a in argv if a.startswith("-")]
    if any(o in ("-h", "--help", "--version") for o in opts):
        parser.parse_args(argv)  # prints and exits
    gui = build_gui_parser()
    gargs = gui.parse_args(argv)
    from app.main import run_gui  # Qt is imported only when the GUI is really wanted

    return run_gui(file=gargs.file, screenshot=gargs.screenshot)


def build_gui_parser():
    """The GUI's own options (FILE and --screenshot)."""
    import argparse

    p = argparse.ArgumentParser(prog="linkwright", description="Start the Linkwright desktop app.")
    p.add_argument("file", nargs="?", metavar="FILE", help="a mechanism file to open (default: the four-bar example)")
    p.add_argument("--screenshot", metavar="OUT.png", help="render the main window to a PNG and exit")
    return p


if __name__ == "__main__":
    sys.exit(main())
