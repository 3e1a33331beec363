"""`linkwright kinematics FILE`: solve the driven trajectory and write coordinates and named points as CSV or JSON."""

from __future__ import annotations

import argparse
import json
import shlex
import sys

from .. import io, validate
from ..errors import LinkwrightError
from ..kinematics import trajectory_of
from ..kinematics.mobility import freedoms_text, rank_mobility
from ..run import RunSpec, open_run, run_kind, undriven_massive_bodies
from . import cancel_requested, interruption, report_interruption, run_interruptibly, typed_options

NAME = "kinematics"
HELP = "solve the driven motion (positions, velocities, accelerations) at N+1 times and write CSV or JSON"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `kinematics`."""
    parser.add_argument("file", metavar="FILE", help="a Linkwright mechanism file (.json)")
    parser.add_argument("--t-end", type=float, default=1.0, metavar="T", help="end time in seconds (default 1)")
    parser.add_argument("--steps", type=int, default=100, metavar="N", help="number of steps: N+1 frames (default 100)")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--csv", metavar="OUT", help="write CSV to OUT ('-' for standard output; the default)")
    out.add_argument("--json", action="store_true", help="print a JSON object instead of CSV")


def run(args: argparse.Namespace) -> int:
    """Solve and write; exit status 3 when the trajectory stops early."""
    validate.number(args.t_end, "--t-end", 0.0, validate.MAX_DURATION, positive=True)
    if not 1 <= args.steps <= validate.MAX_STEPS:
        raise LinkwrightError("--steps", f"must be between 1 and {validate.MAX_STEPS:,}, got {args.steps}")
    mech = io.load(args.file)
    if not mech.joints:  # (a trajectory of no coordinates: the time column alone)
        hint = (f"; its free bodies move by contact dynamics: {_simulate_command(args.file)}"
                if run_kind(mech) == "contact" else "")
        raise LinkwrightError(args.file, f"nothing to move by kinematics: the document has no joints{hint}")
    _refer_dynamics(mech, args.file)
    # Ctrl+C and SIGTERM during the solve cancel it between frames (core.cli.run_interruptibly): the rows solved
    # before it are written as for a trajectory stopped early, and the status is 130 or 143
    if args.json or args.csv in (None, "-"):
        traj = _solve_and_write(args, mech, sys.stdout)
    else:
        # Solved inside the atomic write: a bad path is reported at once (the temporary file is made first), and a
        # failed write leaves the user's old file untouched.
        solved = []
        io.write_atomic(args.csv, lambda fh: solved.append(_solve_and_write(args, mech, fh)), "--csv")
        traj = solved[0]
    signum = interruption()
    rows = len(traj.times)
    if signum is not None:
        return report_interruption(signum, float(traj.times[-1]) if rows else None, rows)
    if not traj.ok:  # after the rows are written: a failed write is the one message
        print(f"kinematics: {traj.reason or 'stopped early'}", file=sys.stderr)
        return 3
    return 0


def _simulate_command(file: str) -> str:
    """The command that simulates `file`, as the user gave its path (quoted for a shell where it needs quotes)."""
    return f"linkwright simulate {shlex.quote(file)}"


def _refer_dynamics(mech, file: str) -> None:
    """In a dynamics document (core.run.run_kind: a free body with mass, or a `simulation` section) the freedoms the
    drivers leave to bodies with mass are moved by forces: the refusal names those bodies and `simulate` instead of
    asking for more drivers. (A kinematics document's masses are data for a later simulation: it is under-driven.)"""
    if run_kind(mech) != "contact":
        return
    rank = rank_mobility(mech)
    if len(mech.drivers) >= rank.freedoms_to_drive:
        return
    free = undriven_massive_bodies(mech)
    if free:
        shown = ", ".join(free[:5]) + (", ..." if len(free) > 5 else "")
        raise LinkwrightError(file, f"the mechanism has {rank.freedoms_text()} but {len(mech.drivers)} driver(s) are "
                                    f"given: its bodies with mass that the drivers leave free ({shown}) move by "
                                    f"contact dynamics: {_simulate_command(file)}")


def _unsigned(x):
    """A time of the JSON output as the rows' times are written (core.io.readable_times: 2.3, not 2.3000000000000003)
    and without the sign of a zero (None stays None)."""
    return None if x is None else float(io.readable_times([x])[0]) + 0.0


def _solve_and_write(args: argparse.Namespace, mech, fh):
    """Solve and write the rows; returns the trajectory (its `ok` and `reason` say whether it stopped early)."""
    with typed_options({"steps": "--steps"}):  # (a recording too large for the machine: fewer steps)
        run = open_run(mech, RunSpec(kind="kinematics", t_end=args.t_end, steps=args.steps), cancel=cancel_requested)
    with run_interruptibly():
        traj = trajectory_of(run)
    # (t as 0.3, not 0.30000000000000004, in CSV and JSON: columns and save_csv write core.io.readable_times)
    if args.json:
        head, table = traj.columns()
        # (a zero without its sign, as the CSV writes it, core.io.number_text: a computed -0.0 was written '-0.0',
        # the double pendulum's and the five-bar's accelerations; adding 0.0 changes no other number)
        data = {"name": mech.name, "ok": traj.ok, "reason": traj.reason or None, "stop_time": _unsigned(traj.stop_time),
                "limit_time": _unsigned(traj.limit_time), "columns": head, "rows": (table + 0.0).tolist()}
        print(json.dumps(data))
    else:
        traj.save_csv(fh)
    return traj
