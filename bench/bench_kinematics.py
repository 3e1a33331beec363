"""Kinematics benchmarks: frames per second of the generic solver (four-bar vs closed form, Jansen, 12-leg chain)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from core import io
from core.fourbar import FourBar, closed_form_motion, find_fourbar
from core.kinematics import Workspace, compile_model, forward, solve_trajectory
from core.model import Body, Driver, Joint, Mechanism

EXAMPLES = Path(__file__).resolve().parents[1] / "resources" / "examples"


def fps(km, frames: int) -> float:
    """Frames per second of a driven trajectory over one crank turn (positions, velocities, accelerations)."""
    times = np.linspace(0.0, 1.0, frames)
    t0 = time.perf_counter()
    traj = solve_trajectory(km, times)
    dt = time.perf_counter() - t0
    assert traj.ok, traj.reason
    return frames / dt


def strandbeest(legs: int = 12) -> Mechanism:
    """Jansen legs on one crank, each drawn at its own crank phase (1 DOF, 1 + 1 + 6 legs bodies)."""
    base = io.load(EXAMPLES / "jansen.json")
    km = compile_model(base)
    phases = np.arange(legs) / legs
    traj = solve_trajectory(km, np.concatenate(([0.0], np.sort(phases[1:]))) if legs > 1 else [0.0])
    ws = Workspace(km)
    m = Mechanism(name=f"strandbeest-{legs}", space="planar")
    m.bodies += [Body("frame", ground=True), Body("crank")]
    for i in range(legs):
        q = traj.q[i]
        T = forward(ws, q)
        for b in base.bodies[2:]:
            m.bodies.append(Body(f"{b.name}{i}"))
        for k, j in enumerate(base.joints):
            bi = base.body_index(j.bodies[0])
            p = T[bi] @ np.r_[j.at, 1.0]  # the joint's current world position on leg i's configuration
            names = tuple(n if n in ("frame", "crank") else f"{n}{i}" for n in j.bodies)
            if j.name == "O1":
                if i:
                    continue
                names = ("frame", "crank")
            m.joints.append(Joint(f"{j.name}{i}", "revolute", names, (float(p[0]), float(p[1]), 0.0)))
    m.drivers.append(Driver("O10", "2*pi*t"))
    return m


def main() -> None:
    """Print the numbers."""
    fb_doc = io.load(EXAMPLES / "fourbar.json")
    km = compile_model(fb_doc)
    n = 400
    generic = fps(km, n)
    found = find_fourbar(fb_doc)
    t = np.linspace(0, 1, n)
    t0 = time.perf_counter()
    reps = 200
    for _ in range(reps):
        closed_form_motion(found.fourbar, found.theta2_design + 2 * np.pi * t, 2 * np.pi, 0.0, found.branch)
    closed = reps * n / (time.perf_counter() - t0)
    # fair per-frame reference: the closed form evaluated frame by frame (as a GUI drag would)
    t0 = time.perf_counter()
    for x in t:
        closed_form_motion(found.fourbar, found.theta2_design + 2 * np.pi * x, 2 * np.pi, 0.0, found.branch)
    closed_single = n / (time.perf_counter() - t0)
    print(f"four-bar generic solver: {generic:.0f} frames/s")
    print(f"four-bar closed form (vectorised over frames): {closed:.0f} frames/s; ratio {closed / generic:.1f}x")
    print(f"four-bar closed form (one frame per call): {closed_single:.0f} frames/s; ratio {closed_single / generic:.1f}x")
    jk = compile_model(io.load(EXAMPLES / "jansen.json"))
    print(f"Jansen linkage ({jk.n_bodies} bodies): {fps(jk, 200):.0f} frames/s")
    sb = compile_model(strandbeest(12))
    print(f"12-leg Strandbeest-like chain ({sb.n_bodies} bodies, {sb.n_joints} joints, {sb.n_loops} loops, 1 DOF): "
          f"{fps(sb, 100):.1f} frames/s")
    big = compile_model(strandbeest(17))
    print(f"17-leg chain ({big.n_bodies} bodies, 1 DOF): {fps(big, 60):.1f} frames/s (target >= 60 for 100 bodies)")


if __name__ == "__main__":
    main()
