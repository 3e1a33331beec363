"""Kinematics benchmarks: frames per second of the generic solver (four-bar vs closed form, Jansen, 12-leg chain)."""

from __future__ import annotations

import os

# "on one core": single-threaded BLAS/LAPACK (set before numpy loads). On a shared machine a second OpenBLAS thread
# spinning for a core turns a 153 x 153 LU from 0.2 ms into several ms (the 100-body chain then drops below 20 fps).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from core import io  # noqa: E402
from core.fourbar import FourBar, closed_form_motion, find_fourbar  # noqa: E402
from core.kinematics import Workspace, compile_model, forward, solve_trajectory  # noqa: E402
from core.model import Body, Driver, Joint, Mechanism  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "resources" / "examples"


def fps(km, frames: int, repeats: int = 3) -> float:
    """Frames per second of a driven trajectory over one crank turn (positions, velocities, accelerations).

    Best of `repeats` runs (the machine may be shared; the best run is the least disturbed one)."""
    times = np.linspace(0.0, 1.0, frames)
    best = 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        traj = solve_trajectory(km, times)
        best = max(best, frames / (time.perf_counter() - t0))
        assert traj.ok, traj.reason
    return best


def closed_form_fps(found, frames: int, repeats: int = 3) -> float:
    """Frames per second of the four-bar closed form called once per frame (angles, rates, accelerations)."""
    t = np.linspace(0.0, 1.0, frames)
    best = 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        for x in t:
            closed_form_motion(found.fourbar, found.theta2_design + 2 * np.pi * x, 2 * np.pi, 0.0, found.branch)
        best = max(best, frames / (time.perf_counter() - t0))
    return best


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
    found = find_fourbar(fb_doc)
    # measured back to back in this run, the same way (best of 3), so the ratio is not skewed by machine load
    generic = fps(km, n)
    closed_single = closed_form_fps(found, n)
    t = np.linspace(0, 1, n)
    t0 = time.perf_counter()
    reps = 200
    for _ in range(reps):
        closed_form_motion(found.fourbar, found.theta2_design + 2 * np.pi * t, 2 * np.pi, 0.0, found.branch)
    closed_vec = reps * n / (time.perf_counter() - t0)
    ratio = closed_single / generic
    print(f"BLAS threads: {os.environ['OPENBLAS_NUM_THREADS']} (OPENBLAS_NUM_THREADS)")
    print(f"four-bar generic solver (one frame at a time: Newton positions, velocities, accelerations, poses, "
          f"points): {generic:.0f} frames/s")
    print(f"four-bar closed form, one frame per call (angles, rates, accelerations): {closed_single:.0f} frames/s; "
          f"ratio {ratio:.1f}x (target <= 10x: {'met' if ratio <= 10 else 'NOT met'})")
    print(f"four-bar closed form vectorised over all {n} frames at once (not a per-frame reference): "
          f"{closed_vec:.0f} frames/s; ratio {closed_vec / generic:.0f}x")
    jk = compile_model(io.load(EXAMPLES / "jansen.json"))
    print(f"Jansen linkage ({jk.n_bodies} bodies): {fps(jk, 200):.0f} frames/s")
    sb = compile_model(strandbeest(12))
    print(f"12-leg Strandbeest-like chain ({sb.n_bodies} bodies, {sb.n_joints} joints, {sb.n_loops} loops, 1 DOF): "
          f"{fps(sb, 100):.1f} frames/s")
    big = compile_model(strandbeest(17))
    print(f"17-leg chain ({big.n_bodies} bodies, 1 DOF): {fps(big, 60):.1f} frames/s (target >= 60 for 100 bodies)")


if __name__ == "__main__":
    main()
