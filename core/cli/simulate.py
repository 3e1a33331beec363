"""`linkwright simulate FILE [--t-end T] [--dt H] [--method implicit|explicit] [--out run.csv|run.npz]`."""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from .. import io, validate
from ..errors import LinkwrightError
from . import cancel_requested, interruption, report_interruption, run_interruptibly, typed_options
from ..model import SimulationSettings

NAME = "simulate"
HELP = ("simulate rigid bodies, free or joined by joints, with contact (geometrically implicit time-stepper) and "
        "write the recording")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `simulate`."""
    parser.add_argument("file", metavar="FILE", help="a Linkwright mechanism file (.json) with shaped bodies")
    parser.add_argument("--t-end", type=float, default=None, metavar="T", help="end time in s (default: the file's simulation.duration)")
    parser.add_argument("--dt", type=float, default=None, metavar="H", help="time step in s (default: the file's simulation.dt)")
    parser.add_argument("--method", choices=("implicit", "explicit"), default=None,
                        help="geometrically implicit (default) or explicit (linearised gap) time-stepping")
    parser.add_argument("--solver", choices=("newton", "interior-point"), default=None,
                        help="the step's solver: newton (default: Newton with the friction law in the Alart-Curnier "
                             "form, then in the normalised form, then Alart-Curnier from a cold start; then the step "
                             "halved) or interior-point (the conic interior-point method alone, halved the same way); "
                             "an implicit step that fails even so is taken by the explicit method's step, and a "
                             "step that fails with both by its relaxed problem's (docs/contact.md)")
    parser.add_argument("--out", default=None, metavar="OUT",
                        help="output file, .csv (one row per step) or .npz (lossless); default: CSV on stdout")


def _progress_bar():
    """A progress callback drawing on stderr, or None when stderr is not a terminal; its `open` is True while its
    line is unfinished (a message after an interruption starts on a line of its own)."""
    if not sys.stderr.isatty():
        return None
    last = [-1]

    def show(k: int, n: int) -> None:
        pct = int(100 * k / max(n, 1))
        if pct != last[0]:
            last[0] = pct
            bar = "#" * (pct // 4)
            sys.stderr.write(f"\rsimulating [{bar:<25}] {pct:3d}%")
            show.open = k < n
            if k >= n:
                sys.stderr.write("\n")
            sys.stderr.flush()

    show.open = False
    return show


def prepare_kernels_noted() -> None:
    """The compiled kernels, loaded, or (a machine's first run) compiled first in a child process that Ctrl+C and
    SIGTERM stop at once (core.contact.compiling: the signal's exception is raised in this thread while it waits for
    the child, which is terminated; the command ends with `interrupted`, 130, as anywhere before the run), with a
    note on a terminal when they are compiled."""
    from ..contact.compiling import ensure_kernels

    told = []

    def note(n) -> None:
        if n.stage == "compiling" and not told and sys.stderr.isatty():
            told.append(True)
            sys.stderr.write(f"compiling the contact solver's kernels: a machine's first run only, about "
                             f"{n.estimate:.0f} s (numba; then cached)...\n")
            sys.stderr.flush()

    ensure_kernels(notify=note)


def run(args: argparse.Namespace) -> int:
    """Load, simulate, write; status 3 if the simulation stopped early."""
    from ..contact import record
    from ..run import RunSpec, nothing_to_move, open_run, run_kind

    if args.out == "":
        raise LinkwrightError("--out", io.EMPTY_PATH)
    suffix = os.path.splitext(args.out)[1].lower() if args.out is not None else ""  # (RUN.CSV, as the app's export)
    if args.out is not None and suffix not in (".csv", ".npz"):
        raise LinkwrightError("--out", f"unknown output type '{args.out}' (use .csv or .npz)")
    mech = io.load(args.file)
    if not run_kind(mech):  # (as kinematics and render: no frames of nothing, status 2; a shaped body without a
        raise nothing_to_move(mech, args.file)  # mass or density is named)
    sim = mech.simulation or SimulationSettings()
    t_end, dt = sim.duration if args.t_end is None else args.t_end, sim.dt if args.dt is None else args.dt
    # the run's checks name the document's fields; the options typed name themselves (too many steps: the end time
    # typed, else the step typed)
    typed = {"simulation.duration": "--t-end" if args.t_end is not None else None,
             "simulation.dt": "--dt" if args.dt is not None else None,
             "simulation.method": "--method" if args.method is not None else None,
             "solver": "--solver" if args.solver is not None else None}
    with typed_options(typed):
        n = validate.run_steps(t_end, dt, count_location="simulation.dt" if args.t_end is None and args.dt is not None
                                else "simulation.duration")
    if n * dt > t_end * (1 + 1e-9) + 1e-12:
        print(f"note: {t_end:g} s is not a whole number of steps of {dt:g} s: the run takes {n} step{'s' if n != 1 else ''}, to "
              f"t = {n * dt:.6g} s", file=sys.stderr)
    prepare_kernels_noted()
    with typed_options(typed):
        # Ctrl+C and SIGTERM during the run cancel it between solver iterations (core.cli.run_interruptibly): the
        # rows computed before it are written as for a run stopped early, and the status is 130 or 143
        run = open_run(mech, RunSpec(kind="contact", t_end=args.t_end, dt=args.dt, method=args.method,
                                     solver=args.solver), cancel=cancel_requested)
    progress = _progress_bar()
    with run_interruptibly():
        rec = record(run, progress=progress)
    signum = interruption()
    if signum is not None and progress is not None and progress.open:
        sys.stderr.write("\n")
    # a non-finite number is the run's doing (its document's), not the output's: located at FILE, before the output
    # is touched (save_csv and save_npz check it again, unlocated)
    rec.check_finite(args.file)
    if args.out is None:
        rec.save_csv(sys.stdout)  # (t as 0.3, not 0.30000000000000004: save_csv writes core.io.readable_times)
    elif suffix == ".npz":
        io.write_atomic(args.out, rec.save_npz, "--out", binary=True, suffix=".npz")
    else:
        io.write_atomic(args.out, rec.save_csv, "--out")
    for code, what in ((1, "failed with the implicit method and were taken by the explicit method"),
                       (2, "failed with every Newton attempt and were taken as the solution of their relaxed problem "
                           "(convex friction: a sliding contact ends slightly apart; docs/contact.md)")):
        taken = np.flatnonzero(rec.fallback == code)
        if taken.size:  # (the run's numbers are still within the overlap bound, but its steps are not all its method's)
            when = ", ".join(f"{rec.t[k]:.6g}" for k in taken[:5]) + (", ..." if taken.size > 5 else "")
            print(f"note: {taken.size} step(s) (ending at t = {when} s) {what}", file=sys.stderr)
    if signum is not None:
        if not rec.completed and not rec.reason.startswith("cancelled"):  # (it stopped by itself as the signal came)
            print(f"simulation stopped early: {rec.reason}", file=sys.stderr)
        return report_interruption(signum, float(rec.t[-1]) if rec.n_frames else None, rec.n_frames)
    if not rec.completed:
        print(f"simulation stopped early: {rec.reason} ({rec.n_frames} rows written)", file=sys.stderr)
        return 3
    return 0
