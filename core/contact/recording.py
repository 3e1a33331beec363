"""Simulation runs and their recording (per step: body states, contact pairs, solver statistics; .npz and .csv).

Row k of a recording is the state at t = k h (row 0 is the initial state).  Bodies are the dynamic bodies;
positions are body-frame origins, linear velocities those of the origins, all in the world frame.  Pairs are
every candidate pair of the model ("A/B"); a pair is `active` at a row when it was in contact range in the
step that ended there.  For an inactive pair the impulses are 0, `gap` is a lower bound of the distance
(from the bounding spheres) and the points are A's / B's bounding-sphere points facing each other.
"""

from __future__ import annotations

import csv
import json
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np

from ..errors import LinkwrightError
from ..transforms import quat_to_matrix
from .bodies import ContactModel, State, build_model, initial_state
from .stepper import METHODS, StepResult, candidate_pairs, step

__all__ = ["Recording", "simulate", "iter_steps", "load_npz", "prepare_kernels"]


@dataclass
class Recording:
    """Everything a run computed; `completed` is False when it stopped early (then `reason` says why)."""

    method: str
    dt: float
    body_names: list[str]  # dynamic bodies, in model order
    pair_names: list[str]  # "A/B" for every candidate pair (model.pairs order)
    t: np.ndarray  # (K,)
    position: np.ndarray  # (K,B,3) body origin
    orientation: np.ndarray  # (K,B,4) quaternion (w, x, y, z)
    velocity: np.ndarray  # (K,B,3) velocity of the origin
    angular: np.ndarray  # (K,B,3)
    active: np.ndarray  # (K,P) bool
    gap: np.ndarray  # (K,P) m
    pn: np.ndarray  # (K,P) normal impulse over the step, N s
    pf: np.ndarray  # (K,P,3) friction impulse on A, N s
    pr: np.ndarray  # (K,P) torsional friction impulse, N m s
    point_a: np.ndarray  # (K,P,3) contact / closest point on A
    point_b: np.ndarray  # (K,P,3) on B
    normal: np.ndarray  # (K,P,3) unit normal from B to A
    iterations: np.ndarray  # (K,) Newton iterations of the step
    residual: np.ndarray  # (K,) scaled natural residual of the step
    halvings: np.ndarray  # (K,) how often the step had to be halved
    completed: bool = True
    reason: str = "completed"
    mass: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (B,) for energy/momentum checks
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((0, 3, 3)))  # (B,3,3) body axes, about the com
    com: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))  # (B,3) body frame

    @property
    def n_frames(self) -> int:
        """Number of rows (steps + 1)."""
        return int(self.t.size)

    def kinetic_energy(self) -> np.ndarray:
        """Total kinetic energy per row (J)."""
        K = np.zeros(self.n_frames)
        for b in range(len(self.body_names)):
            for k in range(self.n_frames):
                R = quat_to_matrix(self.orientation[k, b])
                r = R @ self.com[b]
                vc = self.velocity[k, b] + np.cross(self.angular[k, b], r)
                w = self.angular[k, b]
                K[k] += 0.5 * self.mass[b] * vc @ vc + 0.5 * w @ (R @ self.inertia[b] @ R.T) @ w
        return K

    def check_finite(self) -> None:
        """Refuse to write a recording holding a non-finite number (a LinkwrightError naming the first one)."""
        for name in ("t", "position", "orientation", "velocity", "angular", "gap", "pn", "pf", "pr", "point_a",
                     "point_b", "normal", "residual"):
            a = np.asarray(getattr(self, name), dtype=float)
            bad = ~np.isfinite(a)
            if bad.any():
                row = int(np.argwhere(bad)[0][0])
                raise LinkwrightError("--out", f"the run computed a non-finite {name} at row {row} (t = "
                                               f"{float(self.t[row]) if row < self.t.size else math.nan:g} s); "
                                               "nothing was written")

    def save_npz(self, path) -> None:
        """Write everything losslessly (numpy .npz)."""
        self.check_finite()
        arrays = {k: getattr(self, k) for k in (
            "t", "position", "orientation", "velocity", "angular", "active", "gap", "pn", "pf", "pr",
            "point_a", "point_b", "normal", "iterations", "residual", "halvings", "mass", "inertia", "com")}
        np.savez_compressed(
            path, **arrays, body_names=np.array(self.body_names, dtype=str), pair_names=np.array(self.pair_names, dtype=str),
            meta=np.array([self.method, repr(self.dt), "1" if self.completed else "0", self.reason], dtype=str))

    def csv_header(self, pairs: list[int] | None = None) -> list[str]:
        """CSV column names (pairs: which pair columns; default those active at some row)."""
        cols = ["t"]
        for b in self.body_names:
            cols += [f"{b}.{c}" for c in ("x", "y", "z", "qw", "qx", "qy", "qz", "vx", "vy", "vz", "wx", "wy", "wz")]
        for p in self._csv_pairs(pairs):
            cols += [f"{self.pair_names[p]}.{c}" for c in ("gap", "pn", "pt", "px", "py", "pz")]
        return cols + ["solver.iters", "solver.residual"]

    def _csv_pairs(self, pairs):
        if pairs is not None:
            return list(pairs)
        return [p for p in range(len(self.pair_names)) if self.active[:, p].any()]

    def save_csv(self, path, pairs: list[int] | None = None) -> None:
        """Write one row per step with the documented columns (pairs default: those ever in contact range)."""
        self.check_finite()
        if hasattr(path, "write"):
            self._write_csv(path, self._csv_pairs(pairs))
        else:
            with open(path, "w", newline="") as fh:
                self._write_csv(fh, self._csv_pairs(pairs))

    def _write_csv(self, fh, sel) -> None:
        w = csv.writer(fh)
        w.writerow(self.csv_header(sel))
        for k in range(self.n_frames):
            row = [repr(float(self.t[k]))]
            for b in range(len(self.body_names)):
                vals = np.concatenate((self.position[k, b], self.orientation[k, b], self.velocity[k, b], self.angular[k, b]))
                row += [repr(float(x)) for x in vals]
            for p in sel:
                row += [repr(float(self.gap[k, p])), repr(float(self.pn[k, p])),
                        repr(float(np.linalg.norm(self.pf[k, p])))] + [repr(float(x)) for x in self.point_a[k, p]]
            row += [str(int(self.iterations[k])), repr(float(self.residual[k]))]
            w.writerow(row)

    def save(self, path) -> None:
        """Save by extension: .npz or .csv."""
        p = str(path)
        if p.endswith(".npz"):
            self.save_npz(p)
        elif p.endswith(".csv"):
            self.save_csv(p)
        else:
            raise LinkwrightError("--out", f"unknown output type '{p}' (use .csv or .npz)")


def load_npz(path) -> Recording:
    """Read a recording written by Recording.save_npz."""
    with np.load(path, allow_pickle=False) as d:
        meta = [str(x) for x in d["meta"]]
        kw = {k: d[k] for k in d.files if k not in ("body_names", "pair_names", "meta")}
        return Recording(method=meta[0], dt=float(meta[1]), body_names=[str(x) for x in d["body_names"]],
                         pair_names=[str(x) for x in d["pair_names"]], completed=meta[2] == "1", reason=meta[3], **kw)


def iter_steps(model: ContactModel, h: float, n_steps: int, method: str = "implicit",
               state: State | None = None, *, cancel: Callable[[], bool] | None = None) -> Iterator[StepResult]:
    """Yield the result of every step (stops after a failed or cancelled step, yielded with converged=False).

    cancel: checked before every step and inside the step's solver (a cancelled step is a failed one whose
    reason starts with "cancelled")."""
    st = state if state is not None else initial_state(model)
    for _ in range(n_steps):
        if cancel is not None and cancel():
            yield StepResult(st, False, 0, float("nan"), f"cancelled at t = {st.t:.6g} s")
            return
        res = step(model, st, h, method, cancel=cancel)
        yield res
        if not res.converged:
            return
        st = res.state


def prepare_kernels() -> float:
    """Load the stepper's compiled kernels (core.contact.kernels) from numba's cache, or compile them on a machine's
    first run (10-60 s), by two steps of each method on a small scene that takes every compiled path: twelve
    touching spheres in a row on a plane (pairs with a static and with a dynamic B; more than two pairs, and more
    unknowns than the dense limit: block elimination), and one small Levenberg-Marquardt solve.  Returns the seconds
    it took."""
    from .. import io
    from . import stepper

    t0 = time.perf_counter()
    balls = [{"name": f"s{i}", "mass": 1.0, "shape": {"type": "sphere", "radius": 0.1},
              "pose": {"position": [0.2 * i, 0.0, 0.1]}} for i in range(12)]
    floor = {"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}}
    mech = io.loads(json.dumps({"format": "linkwright.mechanism", "version": 1, "space": "spatial",
                                "gravity": [0, 0, -9.81], "bodies": [floor] + balls, "contact": {"friction": 0.5}}))
    model = build_model(mech)
    for method in METHODS:
        st = initial_state(model)
        for _ in range(2):
            st = stepper.step(model, st, 0.01, method).state
    # the Levenberg-Marquardt solve's kernels (kernels.lm_*), which these steps need not reach: one tiny solve
    from .elements import ElementMatrix

    tiny = ElementMatrix(3, np.array([1.0, 0.0, 0.0]), [(np.array([[0, 1, 2]]), np.eye(3)[None], 2)])
    tiny.lm_solve(1e-3, np.ones(3))
    return time.perf_counter() - t0


def simulate(mech_or_model, t_end: float | None = None, dt: float | None = None, method: str | None = None, *,
             progress: Callable[[int, int], None] | None = None, cancel: Callable[[], bool] | None = None) -> Recording:
    """Run the contact time-stepper from the initial state to t_end (defaults from the document)."""
    model = mech_or_model if isinstance(mech_or_model, ContactModel) else build_model(mech_or_model)
    h = float(dt if dt is not None else model.dt)
    T = float(t_end if t_end is not None else model.duration)
    meth = method if method is not None else model.method
    if not (h > 0 and math.isfinite(h)):
        raise LinkwrightError("--dt", f"the step must be a positive number, got {h}")
    if not (T >= 0 and math.isfinite(T)):
        raise LinkwrightError("--t-end", f"the end time must be a non-negative number, got {T}")
    if meth not in METHODS:
        raise LinkwrightError("--method", f"must be one of {', '.join(METHODS)}, got '{meth}'")
    n_steps = int(round(T / h))
    if n_steps > 10_000_000:
        raise LinkwrightError("--t-end", f"{n_steps} steps is too many (reduce t-end or increase dt)")
    dyn = model.dynamic_bodies
    B, P = dyn.size, len(model.pairs)
    K = n_steps + 1
    rec = Recording(
        method=meth, dt=h, body_names=[model.names[i] for i in dyn],
        pair_names=[f"{model.names[a]}/{model.names[b]}" for a, b, _ in model.pairs],
        t=np.arange(K) * h, position=np.zeros((K, B, 3)), orientation=np.zeros((K, B, 4)), velocity=np.zeros((K, B, 3)),
        angular=np.zeros((K, B, 3)), active=np.zeros((K, P), bool), gap=np.zeros((K, P)), pn=np.zeros((K, P)),
        pf=np.zeros((K, P, 3)), pr=np.zeros((K, P)), point_a=np.zeros((K, P, 3)), point_b=np.zeros((K, P, 3)),
        normal=np.zeros((K, P, 3)), iterations=np.zeros(K, int), residual=np.zeros(K), halvings=np.zeros(K, int),
        mass=model.mass[dyn].copy(), inertia=model.inertia_body[dyn].copy(), com=model.com_body[dyn].copy())
    st = initial_state(model)
    _fill(rec, 0, model, st, dyn, [], h)
    done = 0
    for k in range(1, K):
        if cancel is not None and cancel():
            rec.completed, rec.reason = False, f"cancelled at t = {st.t:.6g} s"
            break
        res = step(model, st, h, meth, cancel=cancel)
        if not res.converged:
            rec.completed, rec.reason = False, f"stopped at t = {st.t:.6g} s: {res.reason}"
            break
        st = res.state
        _fill(rec, k, model, st, dyn, res.contacts, h)
        rec.iterations[k], rec.residual[k], rec.halvings[k] = res.iterations, res.residual, res.halvings
        done = k
        if progress is not None:
            progress(k, K - 1)
    if done + 1 < K:
        _truncate(rec, done + 1)
    return rec


def _fill(rec: Recording, k: int, model: ContactModel, st: State, dyn, contacts, h) -> None:
    for j, i in enumerate(dyn):
        R = quat_to_matrix(st.q[i])
        r = R @ model.com_body[i]
        rec.position[k, j] = st.p[i] - r
        rec.orientation[k, j] = st.q[i]
        rec.velocity[k, j] = st.v[i] - np.cross(st.w[i], r)
        rec.angular[k, j] = st.w[i]
    seen = set()
    for c in contacts:
        p = c.pair
        seen.add(p)
        rec.active[k, p] = True
        rec.gap[k, p], rec.pn[k, p], rec.pf[k, p], rec.pr[k, p] = c.gap, c.pn, c.pf, c.pr
        rec.point_a[k, p], rec.point_b[k, p], rec.normal[k, p] = c.a1, c.a2, c.normal
    _, bounds = candidate_pairs(model, st, h)
    for p, (a, b, _mu) in enumerate(model.pairs):
        if p in seen:
            continue
        rec.gap[k, p] = max(bounds[p], 0.0)
        if model.halfspace[b] is not None:
            nb, _off = model.halfspace[b]
            n = quat_to_matrix(st.q[b]) @ nb
        else:
            d = st.p[a] - st.p[b]
            ln = np.linalg.norm(d)
            n = d / ln if ln > 0 else np.array([0.0, 0.0, 1.0])
        rec.normal[k, p] = n
        rec.point_a[k, p] = st.p[a] - model.radius[a] * n
        rec.point_b[k, p] = rec.point_a[k, p] - rec.gap[k, p] * n


def _truncate(rec: Recording, n: int) -> None:
    for name in ("t", "position", "orientation", "velocity", "angular", "active", "gap", "pn", "pf", "pr",
                 "point_a", "point_b", "normal", "iterations", "residual", "halvings"):
        setattr(rec, name, getattr(rec, name)[:n].copy())
