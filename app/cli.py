"""The `linkwright` command: the GUI with no sub-command, the headless sub-commands of core.cli otherwise."""

from __future__ import annotations

import difflib
import os
import sys
from typing import Sequence

# Our linear systems are small (at most a few hundred unknowns): a second BLAS thread only adds contention
# (measured: a 153x153 solve went from 0.2 ms to several ms on 2 cores). Must be set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from core.cli import build_parser_or_status, command_signals, release_signals, run_command, signal_status  # noqa: E402

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line; start the GUI or run a headless sub-command. Ctrl+C and SIGTERM: one handler from here
    to the exit (core.cli.command_signals: 130 or 143 with `interrupted` or `terminated`, no traceback, at any moment
    of a command, its modules' loading included); the GUI gets Python's default handling back."""
    program = argv is None  # the process's own command line (not a caller's or a test's, in their process)
    with command_signals(program):
        try:
            return _main(program, list(sys.argv[1:] if argv is None else argv))
        except BaseException as exc:  # noqa: BLE001 - a signal's exception (parsing the options), or one it caused
            status = signal_status(exc)
            if status is None:
                raise
            return status


def _main(program: bool, argv: list[str]) -> int:
    built = build_parser_or_status()  # (Ctrl+C or SIGTERM while the commands load: 130 or 143, no traceback)
    if isinstance(built, int):
        return built
    parser, sub = built
    add_render_command(sub)
    parser.add_argument("--screenshot", metavar="OUT.png", help="render the main window to a PNG and exit")
    parser.add_argument("--time", type=float, metavar="T",
                        help="with --screenshot: run the document to T seconds first and show that time")
    parser.usage = "linkwright [-h] [--version] [--screenshot OUT.png [--time T]] [FILE] | linkwright COMMAND ..."
    names = set(sub.choices)
    if argv and argv[0] in names:
        args = parser.parse_args(argv)
        status = run_command(args)
        if program:
            _skip_shutdown_collections()
        return status
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
    if gargs.screenshot == "":  # (it read as no --screenshot at all: the interactive app opened and never exited)
        from core.io import EMPTY_PATH

        print(f"error: --screenshot: {EMPTY_PATH}", file=sys.stderr)
        return 2
    if gargs.time is not None and gargs.screenshot is None:
        print("linkwright: error: --time goes with --screenshot OUT.png", file=sys.stderr)
        return 2
    release_signals()  # the GUI's signals are Python's defaults, as before
    from app.main import run_gui  # Qt is imported only when the GUI is really wanted

    return run_gui(file=gargs.file, screenshot=gargs.screenshot, time=gargs.time)


def _skip_shutdown_collections() -> None:
    """Before the interpreter exits after a headless command: freeze the objects there are (gc.freeze), so that the
    garbage collections of the interpreter's shutdown do not walk them. A contact run leaves some 160,000 objects
    (numba's and llvmlite's types, dispatchers and caches), and those collections took 1.2-2 s on a loaded 2-core
    machine: after `interrupted at t = ...`, Ctrl+C seemed not to end the command (user test s52, F10); frozen, the
    exit takes about 0.2 s. Everything else is as before: the output is written and closed by then (atomic writes
    included), and the atexit handlers and the final flush of stdout and stderr still run. Only for the process's
    own command line: a caller's process (a test's) keeps collecting its objects."""
    import gc

    gc.freeze()


def add_render_command(sub) -> None:
    """The `render` sub-command: it needs Qt and OpenGL, so it lives here and not in core.cli."""
    p = sub.add_parser("render", help="render the 3D view's animation of a document to a GIF or an MP4 (headless)",
                       description="Run FILE (its driven motion or its contact simulation) and render the 3D view's "
                                   "animation to a GIF or an MP4. Needs a display: under Xvfb on a headless machine.")
    p.add_argument("file", metavar="FILE", help="a Linkwright mechanism file (.json)")
    p.add_argument("--out", required=True, metavar="anim.gif|anim.mp4", help="the animation to write")
    p.add_argument("--t-end", type=float, default=None, metavar="T",
                   help="end time in s (default: the file's simulation.duration for a contact scene, else 1)")
    p.add_argument("--fps", type=int, default=25, metavar="N", help="frames per second (default 25)")

    def run(args) -> int:
        from app.export import render_command

        return render_command(args)

    # (it runs Qt's event loop: Ctrl+C and SIGTERM are its own, app.export._stop_signals)
    p.set_defaults(_run=run, _event_loop=True)


def build_gui_parser():
    """The GUI's own options (FILE and --screenshot)."""
    import argparse

    p = argparse.ArgumentParser(prog="linkwright", description="Start the Linkwright desktop app.")
    p.add_argument("file", nargs="?", metavar="FILE", help="a mechanism file to open (default: the four-bar example)")
    p.add_argument("--screenshot", metavar="OUT.png", help="render the main window to a PNG and exit")
    p.add_argument("--time", type=float, metavar="T",
                   help="with --screenshot: run the document to T seconds first and show that time (status 3 and "
                        "the last frame if the run stops before T)")
    return p


if __name__ == "__main__":
    sys.exit(main())
