"""`linkwright kinematics FILE`: solve the driven trajectory and write coordinates and named points as CSV or JSON."""

from __future__ import annotations

import argparse
import csv
import json
import sys

import numpy as np

from .. import io, validate
from ..errors import LinkwrightError
from ..kinematics import trajectory_of
from ..run import RunSpec, open_run

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


def columns(traj) -> tuple[list[str], np.ndarray]:
    """CSV header and the (frames, columns) table of a trajectory."""
    head = ["t"]
    cols = [traj.times[:, None]]
    for i, name in enumerate(traj.coord_names):
        head += [name, f"{name}.vel", f"{name}.acc"]
        cols.append(np.stack((traj.q[:, i], traj.qd[:, i], traj.qdd[:, i]), axis=1))
    for i, name in enumerate(traj.point_names):
        head += [f"{name}.{c}" for c in ("x", "y", "z", "vx", "vy", "vz", "ax", "ay", "az")]
        cols.append(np.concatenate((traj.points[:, i], traj.point_vel[:, i], traj.point_acc[:, i]), axis=1))
    return head, np.concatenate(cols, axis=1) if len(traj.times) else np.zeros((0, len(head)))


def run(args: argparse.Namespace) -> int:
    """Solve and write; exit status 3 when the trajectory stops early."""
    validate.number(args.t_end, "--t-end", 0.0, validate.MAX_DURATION, positive=True)
    if not 1 <= args.steps <= validate.MAX_STEPS:
        raise LinkwrightError("--steps", f"must be between 1 and {validate.MAX_STEPS:,}, got {args.steps}")
    mech = io.load(args.file)
    if args.json or args.csv in (None, "-"):
        reason = _solve_and_write(args, mech, sys.stdout)
    else:
        # Solved inside the atomic write: a bad path is reported at once (the temporary file is made first), and a
        # failed write leaves the user's old file untouched.
        reasons = []
        io.write_atomic(args.csv, lambda fh: reasons.append(_solve_and_write(args, mech, fh)), "--csv")
        reason = reasons[0]
    if reason:  # after the rows are written: a failed write is the one message
        print(f"kinematics: {reason}", file=sys.stderr)
        return 3
    return 0


def _solve_and_write(args: argparse.Namespace, mech, fh) -> str:
    """Solve and write the rows; returns why the trajectory stopped early ('' when it did not)."""
    traj = trajectory_of(open_run(mech, RunSpec(kind="kinematics", t_end=args.t_end, steps=args.steps)))
    head, table = columns(traj)
    if args.json:
        data = {"name": mech.name, "ok": traj.ok, "reason": traj.reason or None, "stop_time": traj.stop_time,
                "limit_time": traj.limit_time, "columns": head, "rows": table.tolist()}
        print(json.dumps(data))
    else:
        w = csv.writer(fh)
        w.writerow(head)
        for row in table:
            w.writerow([repr(float(x)) for x in row])
    return "" if traj.ok else (traj.reason or "stopped early")
