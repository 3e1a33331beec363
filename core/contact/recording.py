"""Simulation runs (ContactRun: the run protocol of core.run, kind "contact") and their recording (per step: body states, contact pairs, joint reactions, solver statistics; .npz and .csv).

Row k of a recording is the state at t = k h (row 0 is the initial state).  Bodies are the dynamic bodies;
positions are body-frame origins, linear velocities those of the origins, all in the world frame.  Pairs are
every candidate pair of the model ("A/B"); a pair is `active` at a row when it was in contact range in the
step that ended there.  For an inactive pair the impulses are 0, `gap` is a lower bound of the distance
(from the bounding spheres) and the points are A's / B's bounding-sphere points facing each other: numbers that
follow from the bodies' poses (OutOfRange).  So a recording holds the per-pair values of the pairs that have been in
contact range at some row only (core.run.ColumnStore: a column per such pair, from its first row in range back to
row 0 filled with its out-of-range values), and computes the others' from its poses when they are asked for; its
memory scales with the pairs in contact range, not with every candidate pair.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import re
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np

from .. import validate
from ..errors import LinkwrightError
from ..io import number_text, readable_times
from ..run import FIRST_FRAMES, Channel, ColumnStore, Verdict, check_recording, grow, grown_room
from ..transforms import quat_to_matrix
from .bodies import ContactModel, RunCancelled, State, build_model, initial_state
from .closest import b_normal, candidate_pairs, centre_inside, closest_points_chunked, start_overlaps
from .plan import Workspace
from .jam import find_jam
from .stepper import (_DEPTH_LIMIT, _KEEP_OVERLAP, MAX_REACH, METHODS, RESOLUTION, SOLVERS, StepResult, fallback_code,
                      longest_step, step, step_too_long, too_far, too_fast_spin)

log = logging.getLogger(__name__)

__all__ = ["Recording", "ContactRun", "ContactFrame", "CONTACT_CHANNELS", "simulate", "record", "iter_steps", "load_npz",
           "prepare_kernels", "OutOfRange"]


def _turn(R: np.ndarray, x: np.ndarray) -> np.ndarray:
    """R @ x over the last axes, row by row in elementwise operations (the same bits whatever the rows' number)."""
    return R[..., :, 0] * x[..., None, 0] + R[..., :, 1] * x[..., None, 1] + R[..., :, 2] * x[..., None, 2]


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]


@dataclass(frozen=True)
class OutOfRange:
    """The recorded values of pairs out of contact range, from the poses of the model's bodies (numpy only: the
    app's recording computes them too).  For pair (A, B): the normal is the line from B's centre of mass to A's
    (0, 0, 1 where they coincide), or the world normal of B's plane when B is a half-space; the gap is the distance
    of the bounding spheres (about the centres of mass) along it, or of A's bounding sphere from the plane, and at
    least 0 (a lower bound of the distance); the point on A is A's bounding-sphere point facing B, the point on B
    the gap further along the normal; the impulses and forces are 0.  A run's frames carry these numbers for the
    pairs out of range (ContactRun.out_of_range), and a Recording computes them from its positions and orientations
    for the pairs it does not hold (bit for bit the same: the same operations on the same numbers)."""

    a: np.ndarray  # (P,) body A of each pair (model order)
    b: np.ndarray  # (P,) body B
    radius: np.ndarray  # (N,) bounding radius about the centre of mass (0 for a half-space)
    com: np.ndarray  # (N, 3) centre of mass in the body frame
    plane: np.ndarray  # (P,) bool: B is a half-space ...
    plane_n: np.ndarray  # (N, 3) ... n.x <= c in the body frame (zeros for the other bodies)
    plane_c: np.ndarray  # (N,)
    dynamic: np.ndarray  # (D,) the dynamic bodies (a Recording's bodies), model indices
    rotation: np.ndarray  # (N, 3, 3) the body frames of the static bodies (they never move; rows of dynamic ones
    origin: np.ndarray  # (N, 3)      unused)

    FIELDS = ("a", "b", "radius", "com", "plane", "plane_n", "plane_c", "dynamic", "rotation", "origin")

    @classmethod
    def of(cls, model: ContactModel) -> "OutOfRange":
        """The model's constants (its static bodies at their initial poses, as ContactRun's frames have them)."""
        n = model.n_bodies
        plane_n, plane_c = np.zeros((n, 3)), np.zeros(n)
        for i, hs in enumerate(model.halfspace):
            if hs is not None:
                plane_n[i], plane_c[i] = np.asarray(hs[0], float), float(hs[1])
        st = initial_state(model)
        R = np.array([quat_to_matrix(q) for q in st.q]).reshape(n, 3, 3)
        r = np.asarray(model.radius, float)
        a = np.array([a for a, _b, _mu in model.pairs], int)
        b = np.array([b for _a, b, _mu in model.pairs], int)
        return cls(a, b, np.where(np.isfinite(r), r, 0.0), np.asarray(model.com_body, float).reshape(n, 3),
                   np.array([model.halfspace[j] is not None for j in b], bool).reshape(-1), plane_n, plane_c,
                   np.asarray(model.dynamic_bodies, int), R, st.p - np.einsum("nij,nj->ni", R, model.com_body))

    def arrays(self) -> dict:
        """Its arrays by field name (a .npz's, prefixed 'out_of_range.')."""
        return {f: getattr(self, f) for f in self.FIELDS}

    def poses(self, position: np.ndarray, orientation: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rotations (K, N, 3, 3), origins (K, N, 3)) of every model body from a Recording's rows of the dynamic
        bodies' origins (K, D, 3) and quaternions (K, D, 4)."""
        k = len(position)
        R = np.repeat(self.rotation[None], k, axis=0)
        t = np.repeat(self.origin[None], k, axis=0)
        if self.dynamic.size and k:
            R[:, self.dynamic] = quat_to_matrix(np.asarray(orientation, float).reshape(k, -1, 4))
            t[:, self.dynamic] = position
        return R, t

    def values(self, R: np.ndarray, t: np.ndarray, pairs) -> dict[str, np.ndarray]:
        """The geometric values of `pairs` (indices) out of range at frames with these rotations (K, N, 3, 3) and
        origins (K, N, 3) of the body frames: gap (K, n), normal, point_a, point_b (K, n, 3)."""
        pairs = np.asarray(pairs, int).reshape(-1)
        a, b = self.a[pairs], self.b[pairs]
        pa = t[:, a] + _turn(R[:, a], self.com[a])  # (the centres of mass)
        pb = t[:, b] + _turn(R[:, b], self.com[b])
        d = pa - pb
        ln = np.sqrt(_dot(d, d))
        n = np.where(ln[..., None] > 0, d / np.where(ln > 0, ln, 1.0)[..., None], (0.0, 0.0, 1.0))
        gap = ln - self.radius[a] - self.radius[b]
        plane = self.plane[pairs]
        if plane.any():
            bp = b[plane]
            m = _turn(R[:, bp], self.plane_n[bp])  # the plane's world normal and offset m.x <= c
            c = self.plane_c[bp] + _dot(m, t[:, bp])
            n[:, plane] = m
            gap[:, plane] = _dot(m, pa[:, plane]) - c - self.radius[a[plane]]
        gap = np.maximum(gap, 0.0)
        point_a = pa - self.radius[a][:, None] * n
        return {"gap": gap, "normal": n, "point_a": point_a, "point_b": point_a - gap[..., None] * n}


# Recording attribute -> channel (the per-pair ones: held for the pairs that came into range, Recording.pairs)
_PAIR_RECORDED = {"active": "pair.active", "gap": "pair.gap", "pn": "pair.pn", "pf": "pair.pf", "pr": "pair.pr",
                  "point_a": "pair.point_a", "point_b": "pair.point_b", "normal": "pair.normal"}
_PAIR_SHAPES = {"active": (), "gap": (), "pn": (), "pf": (3,), "pr": (), "point_a": (3,), "point_b": (3,),
                "normal": (3,)}


@dataclass
class Recording:
    """Everything a run computed; `completed` is False when it stopped early (then `reason` says why).

    The per-pair arrays are held for the pairs that came into contact range (`pair_columns`, indices into
    pair_names, in the order they first came into range; `pairs[attr]` of shape (K, C, ...) for attr in active, gap,
    pn, pf, pr, point_a, point_b, normal); the other pairs' values follow from the poses (`out_of_range`, OutOfRange:
    impulses 0, a gap bound and bounding-sphere points).  `rec.gap`, `rec.pn`, ... are the (K, P, ...) arrays over
    every pair, made when asked for (their memory scales with all the candidate pairs: for a large run read
    `pair_series` or `pairs` instead); a recording that holds every pair (a file written before pairs were held so)
    gives its arrays themselves."""

    method: str
    dt: float
    body_names: list[str]  # dynamic bodies, in model order
    pair_names: list[str]  # "A/B" for every candidate pair (model.pairs order)
    t: np.ndarray  # (K,)
    position: np.ndarray  # (K,B,3) body origin
    orientation: np.ndarray  # (K,B,4) quaternion (w, x, y, z)
    velocity: np.ndarray  # (K,B,3) velocity of the origin
    angular: np.ndarray  # (K,B,3)
    iterations: np.ndarray  # (K,) Newton iterations of the step
    residual: np.ndarray  # (K,) scaled natural residual of the step
    halvings: np.ndarray  # (K,) how often the step had to be halved
    pair_columns: np.ndarray | None = None  # (C,) the pairs held, indices into pair_names; None: every pair
    pairs: dict = field(default_factory=dict)  # attr -> (K, C, ...): active (bool), gap (m), pn (normal impulse over
    # the step, N s), pf (friction impulse on A, N s, 3), pr (torsional friction impulse, N m s), point_a, point_b
    # (contact / closest points on A, B, 3), normal (unit, from B to A, 3)
    out_of_range: OutOfRange | None = None  # the values of the pairs not held (None when every pair is held)
    completed: bool = True
    reason: str = "completed"
    mass: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (B,) for energy/momentum checks
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((0, 3, 3)))  # (B,3,3) body axes, about the com
    com: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))  # (B,3) body frame
    joint_names: list[str] = field(default_factory=list)  # the model's joints (core.contact.joints)
    joint_force: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 3)))  # (K,J,3) reaction on the joint's
    # bodies[1] (impulse over the step / h), N, world
    joint_torque: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 3)))  # (K,J,3) ... its moment about the
    # joint origin, N m
    driver_names: list[str] = field(default_factory=list)  # the document's drivers (driven coordinates)
    driver_effort: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # (K,D) the force or torque each
    # driver gives its coordinate (impulse over the step / h), N or N m
    fallback: np.ndarray | None = None  # (K,) int8: 0 the run's method took the step, 1 the implicit step failed
    # and the explicit method's step took it (core.contact.stepper._explicit_fallback), 2 both failed and the step is
    # its relaxed problem's solution (stepper._relaxed_step); all 0 when not given (a file written before it was
    # recorded; a file of the bool column reads as 0 and 1)

    def __post_init__(self):
        self.fallback = (np.zeros(self.t.shape, np.int8) if self.fallback is None
                         else np.asarray(self.fallback).astype(np.int8))
        K, P = int(self.t.size), len(self.pair_names)
        if self.pair_columns is None:
            self.pair_columns = np.arange(P)
        self.pair_columns = np.asarray(self.pair_columns, int).reshape(-1)
        C = self.pair_columns.size
        for attr, comps in _PAIR_SHAPES.items():
            a = self.pairs.get(attr)
            self.pairs[attr] = (np.zeros((K, C) + comps, bool if attr == "active" else float) if a is None
                                else np.asarray(a, dtype=bool if attr == "active" else float).reshape((K, C) + comps))
        if C < P and self.out_of_range is None:
            raise ValueError("a recording that holds some pairs only needs their out_of_range values")

    @property
    def n_frames(self) -> int:
        """Number of rows (steps + 1)."""
        return int(self.t.size)

    def pair_series(self, attr: str, pairs) -> np.ndarray:
        """(K, len(pairs), ...) values of `attr` (active, gap, pn, pf, pr, point_a, point_b, normal) for `pairs`
        (indices into pair_names): the held columns, the others' out-of-range values."""
        pairs = np.asarray(pairs, int).reshape(-1)
        col = self._column_of()[pairs]
        held = self.pairs[attr]
        out = np.zeros((self.n_frames, pairs.size) + _PAIR_SHAPES[attr], held.dtype)
        out[:, col >= 0] = held[:, col[col >= 0]]
        others = pairs[col < 0]
        if others.size and attr in ("gap", "normal", "point_a", "point_b") and self.n_frames:
            # (a chunk of rows at a time: the poses of every body at every row would take more than the values)
            step = max(1, 65536 // max(len(self.out_of_range.radius), 1))
            for k0 in range(0, self.n_frames, step):
                R, tt = self.out_of_range.poses(self.position[k0:k0 + step], self.orientation[k0:k0 + step])
                out[k0:k0 + step, col < 0] = self.out_of_range.values(R, tt, others)[attr]
        return out

    def _column_of(self) -> np.ndarray:
        """(P,) each pair's column in `pairs`, -1 for a pair not held: made once (again only if pair_columns is
        replaced)."""
        kept = self.__dict__.get("_column_map")
        if kept is None or kept[0] is not self.pair_columns:
            where = np.full(len(self.pair_names), -1, int)
            where[self.pair_columns] = np.arange(self.pair_columns.size)
            kept = self.__dict__["_column_map"] = (self.pair_columns, where)
        return kept[1]

    def _every_pair(self, attr: str) -> np.ndarray:
        P = len(self.pair_names)
        if self.pair_columns.size == P and np.array_equal(self.pair_columns, np.arange(P)):
            return self.pairs[attr]  # (every pair held, in order: the array itself)
        return self.pair_series(attr, np.arange(P))

    active = property(lambda self: self._every_pair("active"), doc="(K,P) bool: in contact range at the row")
    gap = property(lambda self: self._every_pair("gap"), doc="(K,P) m (out of range: a lower bound)")
    pn = property(lambda self: self._every_pair("pn"), doc="(K,P) normal impulse over the step, N s")
    pf = property(lambda self: self._every_pair("pf"), doc="(K,P,3) friction impulse on A, N s")
    pr = property(lambda self: self._every_pair("pr"), doc="(K,P) torsional friction impulse, N m s")
    point_a = property(lambda self: self._every_pair("point_a"), doc="(K,P,3) contact / closest point on A")
    point_b = property(lambda self: self._every_pair("point_b"), doc="(K,P,3) on B")
    normal = property(lambda self: self._every_pair("normal"), doc="(K,P,3) unit normal from B to A")

    def ever_active(self) -> np.ndarray:
        """The pairs (indices into pair_names, ascending) in contact range at some row."""
        return np.sort(self.pair_columns[self.pairs["active"].any(axis=0)])

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

    def check_finite(self, location: str = "") -> None:
        """Refuse to write a recording holding a non-finite number (a LinkwrightError naming the first one, at
        `location`: the caller names where the output was asked for, `linkwright simulate` its '--out', the app its
        export; none by default, as core.io.write_atomic).  The pairs' values out of range follow from the poses
        checked here."""
        for name in ("t", "position", "orientation", "velocity", "angular", "gap", "pn", "pf", "pr", "point_a",
                     "point_b", "normal", "residual", "joint_force", "joint_torque", "driver_effort"):
            a = np.asarray(self.pairs[name] if name in _PAIR_SHAPES else getattr(self, name), dtype=float)
            bad = ~np.isfinite(a)
            if bad.any():
                row = int(np.argwhere(bad)[0][0])
                raise LinkwrightError(location, f"the run computed a non-finite {name} at row {row} (t = "
                                                f"{float(self.t[row]) if row < self.t.size else math.nan:g} s); "
                                                "nothing was written")

    def save_npz(self, path) -> None:
        """Write everything losslessly (numpy .npz): the pairs held (pair_columns) and, when not every pair is,
        what the others' values follow from (out_of_range.*)."""
        self.check_finite()
        arrays = {k: getattr(self, k) for k in (
            "t", "position", "orientation", "velocity", "angular", "iterations", "residual", "halvings", "fallback",
            "mass", "inertia", "com")}
        arrays.update(self.pairs)
        P = len(self.pair_names)
        if not (self.pair_columns.size == P and np.array_equal(self.pair_columns, np.arange(P))):
            arrays["pair_columns"] = self.pair_columns
            arrays.update({f"out_of_range.{k}": v for k, v in self.out_of_range.arrays().items()})
        if self.joint_names:  # (a recording without joints is written as before)
            arrays.update(joint_force=self.joint_force, joint_torque=self.joint_torque,
                          joint_names=np.array(self.joint_names, dtype=str))
        if self.driver_names:
            arrays.update(driver_effort=self.driver_effort, driver_names=np.array(self.driver_names, dtype=str))
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
        for j in self.joint_names:
            cols += [f"{j}.{c}" for c in ("fx", "fy", "fz", "tx", "ty", "tz")]
        cols += [f"{d}.effort" for d in self.driver_names]
        return cols + ["solver.iters", "solver.residual"]

    def _csv_pairs(self, pairs):
        if pairs is not None:
            return list(pairs)
        return [int(p) for p in self.ever_active()]

    def save_csv(self, path, pairs: list[int] | None = None) -> None:
        """Write one row per step with the documented columns (pairs default: those ever in contact range, in
        pair_names order); `t` as core.io.readable_times gives it (0.3, not the computed 3 x 0.1 =
        0.30000000000000004; .npz keeps those); the numbers as core.io.number_text writes them (repr, a zero without
        its sign)."""
        self.check_finite()
        if hasattr(path, "write"):
            self._write_csv(path, self._csv_pairs(pairs))
        else:
            with open(path, "w", newline="") as fh:
                self._write_csv(fh, self._csv_pairs(pairs))

    def _write_csv(self, fh, sel) -> None:
        w = csv.writer(fh)
        w.writerow(self.csv_header(sel))
        t = readable_times(self.t)
        gap, pn, pf, pa = (self.pair_series(a, sel) for a in ("gap", "pn", "pf", "point_a"))
        for k in range(self.n_frames):
            row = [number_text(t[k])]
            for b in range(len(self.body_names)):
                vals = np.concatenate((self.position[k, b], self.orientation[k, b], self.velocity[k, b], self.angular[k, b]))
                row += [number_text(x) for x in vals]
            for i in range(len(sel)):
                row += [number_text(gap[k, i]), number_text(pn[k, i]),
                        number_text(np.linalg.norm(pf[k, i]))] + [number_text(x) for x in pa[k, i]]
            for j in range(len(self.joint_names)):
                row += [number_text(x) for x in np.concatenate((self.joint_force[k, j], self.joint_torque[k, j]))]
            row += [number_text(x) for x in self.driver_effort[k]] if self.driver_names else []
            row += [str(int(self.iterations[k])), number_text(self.residual[k])]
            w.writerow(row)

    def save(self, path) -> None:
        """Save by extension: .npz or .csv (another is a LinkwrightError located at the path)."""
        p = str(path)
        if p.endswith(".npz"):
            self.save_npz(p)
        elif p.endswith(".csv"):
            self.save_csv(p)
        else:
            raise LinkwrightError(p, "unknown output type (use .csv or .npz)")

    @classmethod
    def from_series(cls, header: dict, times, series, completed: bool = True, reason: str = "",
                    columns=None) -> "Recording":
        """A recording from a contact run's channels stacked over its frames (`series[name][k]` = frame k's
        values[name], as `record` or the app's recording of a run hold them) and its header (ContactRun.header).
        columns: the pairs the per-pair channels' series hold (a core.run.ColumnStore's columns; None: every pair)."""
        n = len(times)
        # (the series' own arrays where they are floats already, not copies: a run's recording may take a quarter of
        # the machine's memory, core.validate.MAX_RECORDING_FRACTION, and a copy as much again; rows below a
        # recording's count are never written again)
        kw = {attr: np.asarray(series[name][:n], dtype=float) for attr, name in _RECORDED.items()}
        pairs = {attr: np.asarray(series[name][:n], dtype=bool if attr == "active" else float)
                 for attr, name in _PAIR_RECORDED.items()}
        solver = np.array(series["solver"][:n], dtype=float).reshape(n, -1)
        joints = list(header.get("joint_names", ()))
        for attr, name in (("joint_force", "joint.force"), ("joint_torque", "joint.torque")):
            kw[attr] = (np.array(series[name][:n], dtype=float).reshape(n, len(joints), 3) if name in series
                        else np.zeros((n, len(joints), 3)))
        drivers = list(header.get("driver_names", ()))
        kw["driver_effort"] = (np.array(series["driver.effort"][:n], dtype=float).reshape(n, len(drivers))
                               if "driver.effort" in series else np.zeros((n, len(drivers))))
        return cls(joint_names=joints, driver_names=drivers, method=header["method"], dt=float(header["dt"]), body_names=list(header["body_names"]),
                   pair_names=list(header["pair_names"]), t=np.array(times, dtype=float), **kw,
                   pair_columns=None if columns is None else np.array(columns, int), pairs=pairs,
                   out_of_range=header.get("out_of_range"),
                   iterations=solver[:, 0].astype(int), residual=solver[:, 1].copy(), halvings=solver[:, 2].astype(int),
                   fallback=solver[:, 3] if solver.shape[1] > 3 else None,
                   completed=bool(completed), reason="completed" if completed else reason,
                   mass=np.array(header["mass"], dtype=float), inertia=np.array(header["inertia"], dtype=float),
                   com=np.array(header["com"], dtype=float))


def load_npz(path) -> Recording:
    """Read a recording written by Recording.save_npz (also one written before pairs were held by columns: every pair
    its array's column)."""
    names = ("body_names", "pair_names", "meta", "joint_names", "driver_names")
    with np.load(path, allow_pickle=False) as d:
        meta = [str(x) for x in d["meta"]]
        kw = {k: d[k] for k in d.files if k not in names and not k.startswith("out_of_range.")}
        pairs = {attr: kw.pop(attr) for attr in _PAIR_SHAPES if attr in kw}
        for k in names[3:]:
            if k in d.files:
                kw[k] = [str(x) for x in d[k]]
        if "pair_columns" in d.files:
            kw["out_of_range"] = OutOfRange(**{f: d[f"out_of_range.{f}"] for f in OutOfRange.FIELDS})
        return Recording(method=meta[0], dt=float(meta[1]), body_names=[str(x) for x in d["body_names"]],
                         pair_names=[str(x) for x in d["pair_names"]], completed=meta[2] == "1", reason=meta[3],
                         pairs=pairs, **kw)


def iter_steps(model: ContactModel, h: float, n_steps: int, method: str = "implicit",
               state: State | None = None, *, cancel: Callable[[], bool] | None = None,
               solver: str = "newton", workspace: Workspace | None = None) -> Iterator[StepResult]:
    """Yield the result of every step (stops after a failed or cancelled step, yielded with converged=False).

    cancel: checked before every step and inside the step's solver (a cancelled step is a failed one whose
    reason starts with "cancelled")."""
    st = state if state is not None else initial_state(model)
    ws = workspace if workspace is not None else Workspace()  # this run's caches (the model stays constant)
    for _ in range(n_steps):
        if cancel is not None and cancel():
            yield StepResult(st, False, 0, float("nan"), f"cancelled at t = {st.t:.6g} s")
            return
        # A diverging Newton or MCP iterate can overflow inside the solver (float matrix products of a step that is
        # not going to converge): the step then reports converged=False with its reason, which ends the run with
        # that reason right here, and a non-finite state is never recorded (Recording refuses to write one). The
        # warning would only precede that message. np.errstate is local to this thread (a GUI worker runs steps).
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            res = step(model, st, h, method, cancel=cancel, workspace=ws, solver=solver)
        yield res
        if not res.converged:
            return
        st = res.state


def prepare_kernels() -> float:
    """Load the stepper's compiled kernels (core.contact.kernels) from numba's cache, or compile them on a machine's
    first run (10-60 s), by two steps of each method on a small scene that takes every compiled path: twelve
    touching spheres in a row on a plane (pairs with a static and with a dynamic B; more than two pairs, and more
    unknowns than the dense limit: block elimination) and a box beside them, the box's one-pair closest-point query,
    one small Levenberg-Marquardt solve and one small solve with a sparse Schur complement.  Returns the seconds it
    took.  A compile here cannot be interrupted: the app and `linkwright simulate` call
    core.contact.ensure_kernels, which compiles in a child process a stop can end."""
    from .. import io
    from . import closest, stepper

    t0 = time.perf_counter()
    balls = [{"name": f"s{i}", "mass": 1.0, "shape": {"type": "sphere", "radius": 0.1},
              "pose": {"position": [0.2 * i, 0.0, 0.1]}} for i in range(12)]
    floor = {"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}}
    # ... and a box on the plane (a pair without a closed form: the explicit method's compiled closest-point rows)
    box = {"name": "box", "mass": 1.0, "shape": {"type": "box", "size": [0.2, 0.2, 0.2]},
           "pose": {"position": [-0.5, 0.0, 0.1]}}
    mech = io.loads(json.dumps({"format": "linkwright.mechanism", "version": 1, "space": "spatial",
                                "gravity": [0, 0, -9.81], "bodies": [floor] + balls + [box],
                                "contact": {"friction": 0.5}}))
    model = build_model(mech)
    for method in METHODS:
        st = initial_state(model)
        for _ in range(2):
            st = stepper.step(model, st, 0.01, method).state
    # the one-pair closest-point query (the fallback of the batched queries, which these steps need not reach): the box's
    closest.closest_points(model, st, next(ip for ip, (a, b, _mu) in enumerate(model.pairs)
                                           if model.shapes[a].type == "box" or model.shapes[b].type == "box"))
    # the Levenberg-Marquardt solve's kernels (kernels.lm_*), which these steps need not reach: one tiny solve
    from .elements import ElementMatrix

    tiny = ElementMatrix(3, np.array([1.0, 0.0, 0.0]), [(np.array([[0, 1, 2]]), np.eye(3)[None], 2)])
    tiny.lm_solve(1e-3, np.ones(3))
    # ... and the elimination of a Schur complement too large to be dense (kernels.eliminate: the sparse path, taken
    # above ElementMatrix's dense_s)
    sparse = ElementMatrix(3, np.array([1.0, 0.0, 0.0]), [(np.array([[0, 1, 2]]), np.eye(3)[None], 2)], dense_s=0)
    sparse.solve(np.ones(3))
    return time.perf_counter() - t0


EXPECTED_PER_BODY = 8  # pairs a recording expects per body moved by forces (ContactRun.expected_in_range)

# channel name -> (title, unit, over "bodies" or "pairs", components)
CONTACT_CHANNELS = {
    "body.position": ("body origin position", "m", "bodies", ("x", "y", "z")),
    "body.com": ("centre of mass position", "m", "bodies", ("x", "y", "z")),  # (its path: the 3D view's trails)
    "body.orientation": ("body orientation (quaternion)", "", "bodies", ("w", "x", "y", "z")),
    "body.velocity": ("velocity of the body origin", "m/s", "bodies", ("x", "y", "z")),
    "body.angular": ("angular velocity", "rad/s", "bodies", ("x", "y", "z")),
    "pair.active": ("in contact range", "", "pairs", ()),
    "pair.gap": ("gap", "m", "pairs", ()),
    "pair.pn": ("normal impulse", "N s", "pairs", ()),
    "pair.pf": ("friction impulse on A", "N s", "pairs", ("x", "y", "z")),
    "pair.pr": ("torsional friction impulse", "N m s", "pairs", ()),
    "pair.normal_force": ("normal force", "N", "pairs", ()),
    "pair.friction_force": ("friction force on A", "N", "pairs", ("x", "y", "z")),
    "pair.point_a": ("contact point on A", "m", "pairs", ("x", "y", "z")),
    "pair.point_b": ("contact point on B", "m", "pairs", ("x", "y", "z")),
    "pair.normal": ("contact normal (B to A)", "", "pairs", ("x", "y", "z")),
    "joint.force": ("joint reaction force on its second body", "N", "joints", ("x", "y", "z")),
    "joint.torque": ("joint reaction torque on its second body, about the joint", "N m", "joints", ("x", "y", "z")),
    "driver.effort": ("driver effort", "N or N m", "drivers", ()),
    "energy": ("energy", "J", ("kinetic", "potential", "total"), ()),
    "solver": ("solver", "", ("iterations", "residual", "halvings", "fallback"), ()),  # fallback: 1 where the
    # explicit method took a step the implicit method failed, 2 where the step is its relaxed problem's solution
    # (StepResult.method; fallback_code)
}


@dataclass
class ContactFrame:
    """One instant of a contact run (core.run protocol): poses of every model body and the channels' values."""

    index: int
    t: float
    poses: np.ndarray  # (N, 4, 4) world transforms of the body frames (model.names order; static bodies too)
    values: dict[str, np.ndarray]
    state: State  # the stepper's state (for continuing or checking)
    # the pairs whose values this frame computed in range (ascending): the step's contacts, at frame 0 the pairs whose
    # closest points were found; the others' values are ContactRun.out_of_range's (core.run protocol)
    ranged: np.ndarray = field(default_factory=lambda: np.zeros(0, int))


def _refuse_start_overlap(model: ContactModel, cancel: Callable[[], bool] | None = None) -> None:
    """A run's bodies start apart or touching: two that overlap by more than validate.MAX_START_OVERLAP of the thinner
    one's thinnest width (their real overlap: closest.start_overlaps) are refused, since the first step would push them
    apart at about depth / dt, energy the scene never had, and bodies buried in one another make a pile the step cannot
    separate at a reasonable cost (minutes per step for 7 cubes at one point).  Located at the position of the body
    moved by forces, of two such bodies the later in the file (the one put where the other already is;
    closest.start_located), by its index in the document; the deepest overlap (for the limit) is named, with the other
    bodies that body starts inside, and where the centre of mass of one lies inside the other, that too.  cancel: a
    run's, checked between chunks of the queries (RunCancelled)."""
    state = initial_state(model)
    over = start_overlaps(model, state, cancel)
    if not over:
        return
    ip = max(over, key=lambda k: over[k].depth / over[k].allowed)  # (the first of equals: pairs in the model's order)
    depth, allowed, a, b, buried = over[ip]
    where = ""
    if buried:
        apart = float(np.linalg.norm(state.p[a] - state.p[b]))  # (between the centres of mass)
        if apart <= 1e-9 * float(model.radius[a]):
            where = ", their centres of mass at one point"
        elif centre_inside(model, state, a, b):
            where = f", its centre of mass inside it ({apart:.3g} m from the other's)"
        else:
            where = f", the centre of mass of '{model.names[b]}' inside it ({apart:.3g} m from its own)"
    also = list(dict.fromkeys(o.other for k, o in over.items() if k != ip and o.at == a))
    more = ""
    if also:
        names = [f"'{model.names[o]}'" for o in also]
        more = (f", and inside {names[0]}" if len(names) == 1 else
                ", and inside " + (", ".join(names[:-1]) + f" and {names[-1]}" if len(names) <= 3 else
                                   ", ".join(names[:2]) + f" and {len(names) - 2} other bodies"))
    raise LinkwrightError(
        f"{model.body_location(a)}.pose.position",
        f"'{model.names[a]}' starts {depth:.3g} m inside '{model.names[b]}'{where}{more}: move them apart (an overlap "
        f"of at most {allowed:.2g} m is accepted, a thousandth of the thinner one's width; the first step would push "
        f"a deeper one out at about depth / dt)")


def _uneven_pairs(model: ContactModel) -> dict[int, tuple[float, int, int]]:
    """The pairs (indices into model.pairs) of two bodies moved by forces whose masses differ by more than
    validate.MAX_MASS_RATIO: {pair: (ratio, heavier, lighter)}.  Beyond it the step's Newton systems are as
    ill-conditioned as the ratio and its stopping test, relative to the largest impulse, meets the heavier body's
    equations only roughly."""
    uneven = {}
    for ip, (a, b, _mu) in enumerate(model.pairs):
        if model.free[a] and model.free[b]:
            heavy, light = (a, b) if model.mass[a] >= model.mass[b] else (b, a)
            ratio = float(model.mass[heavy] / model.mass[light])
            if ratio > validate.MAX_MASS_RATIO:
                uneven[ip] = (ratio, heavy, light)
    return uneven


def _mass_ratio_message(model: ContactModel, uneven: dict, pairs, which: str) -> tuple[int, str] | None:
    """Of `pairs`, the uneven one (_uneven_pairs) with the largest ratio: (its heavier body, why); None if none is."""
    found = [uneven[ip] for ip in pairs if ip in uneven]
    if not found:
        return None
    ratio, heavy, light = max(found)
    return heavy, (f"'{model.names[heavy]}' ({model.mass[heavy]:.3g} kg) is {ratio:.3g} times as heavy as "
                   f"'{model.names[light]}' ({model.mass[light]:.3g} kg), {which}: at most "
                   f"{validate.MAX_MASS_RATIO:g} times (beyond that the contact step may fail or go wrong: a 10 t box "
                   f"dropped onto a 1 kg slab squeezed it out from under itself)")


def _refuse_mass_ratio(model: ContactModel, uneven: dict, in_range: list) -> None:
    """Two bodies moved by forces in contact range of one another at the start (in_range: the pairs of the first
    step's broad phase) may differ in mass by at most validate.MAX_MASS_RATIO; located at the heavier body (of the
    pair with the largest ratio).  Pairs that come into range later stop the run there (ContactRun.__iter__)."""
    if uneven:
        worst = _mass_ratio_message(model, uneven, in_range, "in contact range")
        if worst is not None:
            raise LinkwrightError(model.body_location(worst[0]), worst[1])


def _refuse_fast_spin(model: ContactModel, state: State, h: float) -> None:
    """A body may not start spinning so fast that no step of the run can turn it (stepper.too_fast_spin: the run would
    stop at its first step with the solver's reason); located at its angular velocity."""
    fast = too_fast_spin(model, state.w, h)
    if fast is not None:
        raise LinkwrightError(f"{model.body_location(fast[0])}.velocity.angular", fast[1])


def _far_message(model: ContactModel, p: np.ndarray, far: tuple[int, int, float], verb: str) -> str:
    """Why a body reaching `far` (stepper.too_far, its centre of mass at p[i]) is beyond what the contact step
    resolves."""
    i, axis, reach = far
    x, r = "xyz"[axis], float(model.radius[i]) if np.isfinite(model.radius[i]) else 0.0
    return (f"'{model.names[i]}' {verb} {reach:.3g} m from the origin along {x} (its centre of mass at {x} = "
            f"{float(p[i][axis]):.3g} m, its bounding radius {r:.3g} m): there doubles are "
            f"{float(np.spacing(reach)):.2g} m apart, coarser than the contact step's resolution of {RESOLUTION:.2g} m "
            f"(its overlap bound of {_DEPTH_LIMIT:.2g} m less the overlap of {_KEEP_OVERLAP:.2g} m it "
            f"keeps): keep every body within {MAX_REACH:.7g} m (2^{int(math.log2(MAX_REACH))} m) of the origin on each "
            f"axis; move the scene nearer the origin")


def _refuse_far(model: ContactModel, state: State) -> None:
    """No body may start reaching MAX_REACH from the origin on an axis (stepper.too_far: there the step cannot place
    its closest points as finely as its overlap bound asks, and its steps stall); located at the body's position.
    A body that gets there during the run stops it (ContactRun.__iter__)."""
    far = too_far(model, state.p)
    if far is not None:
        raise LinkwrightError(f"{model.body_location(far[0])}.pose.position",
                              _far_message(model, state.p, far, "reaches"))


class ContactRun:
    """The contact time-stepper as a run (core.run protocol, kind "contact"): frame k is the state at t = k h.

    Holds only its own state: several runs of one model may go on at once (implicit and explicit side by side)."""

    kind = "contact"

    def __init__(self, model: ContactModel, t_end: float | None = None, dt: float | None = None,
                 method: str | None = None, *, cancel: Callable[[], bool] | None = None,
                 points: dict[str, tuple[str, tuple]] | None = None, solver: str | None = None) -> None:
        """points: named points to follow ("body.point" -> (body name, position in the body frame)).  cancel: checked
        between frames and inside a step (iter_steps), and also between chunks of the start-up overlap queries
        (RunCancelled raised from here: no run) and of the first frame's (the run then yields no frame, its verdict
        cancelled at t = 0)."""
        h = float(dt if dt is not None else model.dt)
        T = float(t_end if t_end is not None else model.duration)
        meth = method if method is not None else model.method
        # located at the document's fields (simulation.dt, .duration, .method; the solver is the run's alone): a
        # caller that took a value from elsewhere names its own field (the CLI its option, the app its Motion dock)
        if not (h > 0 and math.isfinite(h)):
            raise LinkwrightError("simulation.dt", f"the step must be a positive number, got {h}")
        if not (T >= 0 and math.isfinite(T)):
            raise LinkwrightError("simulation.duration", f"the end time must be a non-negative number, got {T}")
        if meth not in METHODS:
            raise LinkwrightError("simulation.method", f"must be one of {', '.join(METHODS)}, got '{meth}'")
        self.solver = solver if solver is not None else "newton"
        if self.solver not in SOLVERS:
            raise LinkwrightError("solver", f"must be one of {', '.join(SOLVERS)}, got '{self.solver}'")
        # (bounded before any work: no overflow, no hour-long run by mistake)
        n_steps = validate.step_count(T, h, "simulation.duration", "simulation.dt")
        too_long = step_too_long(h, longest_step(model))  # (it stopped the run at its first step: status 3, 1 row)
        if too_long:
            raise LinkwrightError("simulation.dt", too_long)
        start = initial_state(model)
        _refuse_far(model, start)  # (first: the other checks' closest-point queries need the resolution it keeps)
        _refuse_start_overlap(model, cancel)  # (RunCancelled when cancel says stop meanwhile)
        self._uneven = _uneven_pairs(model)  # (pairs that stop the run when they come into range)
        # the pairs in contact range at the start (the first step's broad phase): the mass ratio's, frame 0's and the
        # recording's expectation
        self._start_in_range = candidate_pairs(model, start, h)[0]
        _refuse_mass_ratio(model, self._uneven, self._start_in_range)
        _refuse_fast_spin(model, start, h)
        self.model, self.h, self.method, self.n_steps, self.cancel = model, h, meth, n_steps, cancel
        self.dyn = model.dynamic_bodies
        self.body_names = list(model.names)
        self.dynamic_names = [model.names[i] for i in self.dyn]
        self.pair_names = [f"{model.names[a]}/{model.names[b]}" for a, b, _ in model.pairs]
        self._joints = np.array([k for k, js in enumerate(model.joints) if not js.implied], int)  # (the document's)
        self.joint_names = [model.joints[k].name for k in self._joints]
        self.driver_names = list(model.driver_names)
        # the energies count the bodies moved by forces (a kinematic body is driven: its mass is not the model's)
        self._energy_mass = np.where(model.free[self.dyn], model.mass[self.dyn], 0.0)
        self._energy_inertia = model.inertia_body[self.dyn] * model.free[self.dyn, None, None]
        self.times = np.arange(n_steps + 1) * h
        over = {"bodies": tuple(self.dynamic_names), "pairs": tuple(self.pair_names), "joints": tuple(self.joint_names),
                "drivers": tuple(self.driver_names)}
        units = {"driver.effort": _effort_unit(model)}  # (the table's unit where it depends on the document)
        owners = {"bodies": tuple((b,) for b in self.dynamic_names),
                  "pairs": tuple((model.names[a], model.names[b]) for a, b, _ in model.pairs)}
        # (the per-pair channels are sparse: a recording holds them for the pairs that come into range, the others'
        # values follow from the poses: out_of_range)
        self.channels = tuple(Channel(name, title, units.get(name, unit), over[rows] if isinstance(rows, str) else rows,
                                      comps, owners.get(rows, ()) if isinstance(rows, str) else (), rows == "pairs",
                                      "bool" if name == "pair.active" else "float64")
                              for name, (title, unit, rows, comps) in CONTACT_CHANNELS.items())
        pts = {k: v for k, v in (points or {}).items() if v[0] in model.names}
        self._point_body = np.array([model.names.index(b) for b, _ in pts.values()], int)
        self._point_local = np.array([np.append(np.asarray(x, float), 1.0) for _, x in pts.values()]).reshape(-1, 4)
        self.channels += (Channel("points", "named points", "m", tuple(pts), ("x", "y", "z"),
                                  tuple((b,) for b, _ in pts.values())),)
        self._shapes = tuple((c.name, c.shape) for c in self.channels)  # (each frame's arrays, "points" too)
        self.bounds = OutOfRange.of(model)  # (the values of pairs out of contact range, from the poses)
        # the static bodies never move: their rotations once, the bounds' (each frame computes the dynamic bodies')
        self._rotations = self.bounds.rotation
        # what a recording should expect to hold (core.run.frame_bytes): the pairs in contact range at the start, or
        # EXPECTED_PER_BODY for each body moved by forces if more (bench/bench_recording.py: a 64-sphere pile's
        # pairs ever in range), never more than every pair
        self.expected_in_range = min(len(model.pairs), max(len(self._start_in_range),
                                                           EXPECTED_PER_BODY * int(model.free.sum())))
        self.steps_done = 0
        self._verdict: Verdict | None = None

    @property
    def verdict(self) -> Verdict | None:
        """How the run ended (None while it runs)."""
        return self._verdict

    def header(self) -> dict:
        """What a Recording of this run holds besides its frames (Recording.from_series): method, step, the dynamic
        bodies' and the pairs' names, masses, inertias (zero for kinematic bodies) and centres of mass, the joints'
        and drivers' names, and what the values of pairs out of contact range follow from (OutOfRange)."""
        m, dyn = self.model, self.dyn
        return {"method": self.method, "dt": self.h, "body_names": list(self.dynamic_names),
                "pair_names": list(self.pair_names), "mass": self._energy_mass.copy(),
                "inertia": self._energy_inertia.copy(), "com": m.com_body[dyn].copy(),
                "joint_names": list(self.joint_names), "driver_names": list(self.driver_names),
                "out_of_range": self.bounds}

    def out_of_range(self, rotations: np.ndarray, origins: np.ndarray, pairs) -> dict[str, np.ndarray]:
        """The per-pair channels of `pairs` (indices) out of contact range at frames whose body frames have these
        rotations (k, N, 3, 3) and origins (k, N, 3) (core.run protocol): the numbers the frames carry for them."""
        geo = self.bounds.values(rotations, origins, pairs)
        k, n = geo["gap"].shape
        zero, zero3 = np.zeros((k, n)), np.zeros((k, n, 3))
        return {"pair.active": np.zeros((k, n), bool), "pair.gap": geo["gap"], "pair.pn": zero, "pair.pf": zero3,
                "pair.pr": zero, "pair.normal_force": zero, "pair.friction_force": zero3,
                "pair.point_a": geo["point_a"], "pair.point_b": geo["point_b"], "pair.normal": geo["normal"]}

    def __iter__(self) -> Iterator[ContactFrame]:
        st = initial_state(self.model)
        try:
            first = self._frame(0, st, None)
        except RunCancelled:  # (during the first frame's queries: no frame)
            self._verdict = Verdict(False, "cancelled at t = 0 s", 0.0, True)
            return
        yield first
        k = 0
        reason, stop, cancelled, limit = "", None, False, None
        ws = Workspace()  # (this run's caches: its steps' and, should one fail, the jam test's)
        for res in iter_steps(self.model, self.h, self.n_steps, self.method, state=st, cancel=self.cancel,
                              solver=self.solver, workspace=ws):
            if not res.converged:
                cancelled = res.reason.startswith("cancelled")
                reason = res.reason if cancelled else f"stopped at t = {st.t:.6g} s: {res.reason}"
                stop = float(st.t)
                ends = res.motion_end
                if ends is not None and ends.end is not None:
                    # the drivers' motion ends within the step (a driver's pole or bound, a limit position): the
                    # reason is the driver's, said where the motion ends, as a kinematics run says it
                    limit = float(ends.end)
                    why = re.sub(r" at t = [-+.e\d]+$", "", ends.reason)  # (its time is the end's: said once)
                    reason = f"stopped at t = {st.t:.6g} s: {why}; the motion ends near t = {limit:.9g}"
                elif not cancelled and ends is None:
                    # the drivers may be jamming a part: said with the bodies, the solver's reason after it (one or
                    # two small linear programmes, made only here, after a step has failed: core.contact.jam)
                    try:
                        jam = find_jam(self.model, st, self.h, ws)
                    except Exception:  # noqa: BLE001 - a diagnosis that fails leaves the run's reason as it is
                        log.warning("the jam test of the failed step at t = %.6g s failed", st.t, exc_info=True)
                        jam = None
                    if jam is not None:
                        so = "the solver found no step" if jam.friction else "the step has no solution"
                        reason = f"stopped at t = {st.t:.6g} s: {jam.text}; {so} ({res.reason})"
                break
            worst = self._uneven and _mass_ratio_message(self.model, self._uneven, [c.pair for c in res.contacts],
                                                         "came into contact range")
            if worst:  # (the step is not kept: its solution is the one the ratio makes unreliable)
                reason = f"stopped at t = {st.t:.6g} s: {worst[1]}"
                stop = float(st.t)
                break
            far = too_far(self.model, res.state.p)
            if far is not None:  # (nor is a step that ends beyond the reach: its end was not resolved)
                reason = f"stopped at t = {st.t:.6g} s: {_far_message(self.model, res.state.p, far, 'reached')}"
                stop = float(st.t)
                break
            k += 1
            st = res.state
            self.steps_done = k
            yield self._frame(k, st, res)
        self._verdict = Verdict(stop is None, reason, stop, cancelled, limit)

    def _start_geometry(self, st: State, R: np.ndarray, v: dict, ips: list) -> set:
        """Row 0 (no step yet): each pair in contact range at the start (ips) gets its closest points, exact gap and
        normal (B's, from B towards A, as a step's contacts have) from one query at the initial poses, with no impulse
        and not marked active; the pairs whose query does not converge keep the bounding-sphere values.  The pairs so
        filled."""
        model = self.model
        done = set()
        # (a chunk of pairs at a time, checking the run's cancel: RunCancelled)
        for ip, (geo, r) in zip(ips, closest_points_chunked(model, st, ips, self.cancel) if ips else []):
            if geo is None or not r.converged or not np.all(np.isfinite(geo)):
                continue
            a, b, _mu = model.pairs[ip]
            nb = b_normal(model, a, b, R[b], st.p[b], geo)
            ln = float(np.linalg.norm(nb))
            if not ln > 0.0:
                continue
            v["pair.gap"][ip], v["pair.normal"][ip] = float(geo[-1]), nb / ln  # (s, the block's last unknown)
            v["pair.point_a"][ip], v["pair.point_b"][ip] = geo[0:3], geo[3:6]
            done.add(ip)
        return done

    def _frame(self, k: int, st: State, res: StepResult | None) -> ContactFrame:
        model, h, dyn = self.model, self.h, self.dyn
        N, P = model.n_bodies, len(model.pairs)
        R = self._rotations.copy()
        if dyn.size:  # (the batched form: a Recording's OutOfRange.poses computes the same bits from its quaternions)
            R[dyn] = quat_to_matrix(st.q[dyn].reshape(-1, 4))
        r = np.einsum("nij,nj->ni", R, model.com_body)
        poses = np.zeros((N, 4, 4))
        poses[:, :3, :3] = R
        poses[:, :3, 3] = st.p - r
        poses[:, 3, 3] = 1.0
        v = {name: np.zeros(shape) for name, shape in self._shapes}
        v["pair.active"] = np.zeros(P, bool)
        v["body.position"][:] = poses[dyn, :3, 3]
        v["body.com"][:] = st.p[dyn]
        v["body.orientation"][:] = st.q[dyn]
        v["body.velocity"][:] = st.v[dyn] - _cross_rows(st.w[dyn], r[dyn])
        v["body.angular"][:] = st.w[dyn]
        seen = set()
        for c in (res.contacts if res is not None else []):
            p = c.pair
            seen.add(p)
            v["pair.active"][p] = True
            v["pair.gap"][p], v["pair.pn"][p], v["pair.pf"][p], v["pair.pr"][p] = c.gap, c.pn, c.pf, c.pr
            v["pair.point_a"][p], v["pair.point_b"][p], v["pair.normal"][p] = c.a1, c.a2, c.normal
        if res is None and P:  # (frame 0: st is the start)
            seen = self._start_geometry(st, R, v, self._start_in_range)
        if len(seen) < P:
            # pairs out of contact range: a lower bound of the gap from the bounding volumes, the plane's normal
            # (half-space B) or the centre line, and bounding-sphere points, from the frame's poses (OutOfRange: what
            # a recording computes for the pairs it does not hold)
            out = np.ones(P, bool)
            out[list(seen)] = False
            geo = self.bounds.values(poses[None, :, :3, :3], poses[None, :, :3, 3], np.flatnonzero(out))
            for name in ("gap", "normal", "point_a", "point_b"):
                v[f"pair.{name}"][out] = geo[name][0]
        v["pair.normal_force"][:] = v["pair.pn"] / h  # the step's mean force: impulse over the step / h
        v["pair.friction_force"][:] = v["pair.pf"] / h
        if res is not None and res.joint_impulse is not None:
            v["joint.force"][:] = res.joint_impulse[self._joints, 0:3] / h  # the step's mean reaction: impulse / h
            v["joint.torque"][:] = res.joint_impulse[self._joints, 3:6] / h
        if res is not None and res.driver_impulse is not None:
            v["driver.effort"][:] = res.driver_impulse / h
        m = self._energy_mass
        w = st.w[dyn]
        Rd, vd = R[dyn], st.v[dyn]
        Iw = np.einsum("bij,bjk,blk,bl->bi", Rd, self._energy_inertia, Rd, w)  # R I R^T w
        # (ndarray.sum: the same reduction as np.sum without its Python wrapper)
        kinetic = float(0.5 * (m * np.einsum("bi,bi->b", vd, vd)).sum() + 0.5 * (w * Iw).sum())
        potential = float(-(m * (st.p[dyn] @ model.gravity)).sum())  # zero at the origin
        v["energy"][:] = (kinetic, potential, kinetic + potential)
        if res is not None:
            v["solver"][:] = (res.iterations, res.residual, res.halvings, fallback_code(res.method, self.method))
        if self._point_body.size:  # (else the zero rows above)
            v["points"] = np.einsum("nij,nj->ni", poses[self._point_body], self._point_local)[:, :3]
        return ContactFrame(k, float(k * h), poses, v, st, np.array(sorted(seen), int))


def _effort_unit(model: ContactModel) -> str:
    """The unit of the drivers' efforts: N m when every driver turns its joint, N when every one slides it."""
    units = set(model.driver_units)
    return units.pop() if len(units) == 1 else "N or N m"


def _cross_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.cross(a, b) of (n, 3) rows with numpy's own operations in its order (the same bits), without the ~20 us of
    its axis handling."""
    out = np.empty(a.shape)
    a0, a1, a2 = a[:, 0], a[:, 1], a[:, 2]
    b0, b1, b2 = b[:, 0], b[:, 1], b[:, 2]
    out[:, 0] = a1 * b2 - a2 * b1
    out[:, 1] = a2 * b0 - a0 * b2
    out[:, 2] = a0 * b1 - a1 * b0
    return out


def simulate(mech_or_model, t_end: float | None = None, dt: float | None = None, method: str | None = None, *,
             progress: Callable[[int, int], None] | None = None, cancel: Callable[[], bool] | None = None,
             solver: str | None = None) -> Recording:
    """Run the contact time-stepper from the initial state to t_end (defaults from the document; solver: the implicit
    step's MCP solver, core.contact.stepper.SOLVERS, default newton)."""
    model = mech_or_model if isinstance(mech_or_model, ContactModel) else build_model(mech_or_model)
    run = ContactRun(model, t_end, dt, method, cancel=cancel, solver=solver)
    check_recording(run, "simulation.duration")  # (open_run's check: a recording that fits the machine's memory)
    return record(run, progress=progress)


def record(run: ContactRun, *, progress: Callable[[int, int], None] | None = None) -> Recording:
    """Iterate a contact run to its end into a Recording (rows past a stop are dropped).  Its arrays grow as rows
    arrive (doubling, up to the planned rows); the per-pair channels are held for the pairs that come into contact
    range (core.run.ColumnStore, the rows before a pair came into range filled from the recorded poses); when the
    machine has no memory to grow them, or to compute the next step, the run stops there, its rows kept, with that
    reason."""
    K = run.n_steps + 1
    recorded = [c for c in run.channels if c.name in _SERIES]
    rows = min(K, FIRST_ROWS)
    series = {c.name: np.zeros((rows,) + c.shape, c.dtype) for c in recorded if not c.sparse}
    store = ColumnStore(recorded, rows)
    bounds = run.bounds

    def fill(first, stop, pairs):  # (the out-of-range values of rows already recorded: from their poses)
        R, t = bounds.poses(series["body.position"][first:stop], series["body.orientation"][first:stop])
        return run.out_of_range(R, t, pairs)

    n, growing = 0, False
    try:
        for f in run:
            k, v = f.index, f.values
            room = len(series["body.position"])
            if k >= room:
                growing = True
                rows = grown_room(room, k + 1, K)
                series = _grown(series, n, rows)  # (core.run.grow)
                store.grow_rows(n, rows)
                growing = False
            for name, arr in series.items():
                arr[k] = v[name]
            store.add(f.ranged, k, fill)
            cols = store.columns
            for name, arr in store.arrays.items():
                arr[k, : cols.size] = v[name][cols]
            n = k + 1
            if k and progress is not None:
                progress(k, K - 1)
        verdict = run.verdict
    except MemoryError:  # (the machine's memory, taken by other programs: a stop with the rows so far, not a crash)
        per_row = sum(a[:1].nbytes for a in series.values()) + store.row_bytes()
        what = "record more rows" if growing else "compute the next step"
        why = f"no memory left to {what} (the {n:,} rows kept take {validate.size_text(n * per_row)})"
        verdict = Verdict(False, f"stopped at t = {float(run.times[n - 1]):.6g} s: {why}" if n else why,
                          float(run.times[n - 1]) if n else 0.0)
    held = {name: store.series(name, n) for name in store.arrays}
    return Recording.from_series(run.header(), run.times[:n], {**{name: a[:n] for name, a in series.items()}, **held},
                                 verdict.ok, verdict.reason, columns=store.columns)


FIRST_ROWS = FIRST_FRAMES  # rows `record` has room for at first; they double as rows arrive (core.run.grow)
_grown = grow  # (record's growth of its dense arrays, by this name: the tests watch it)


# Recording attribute -> channel
_RECORDED = {"position": "body.position", "orientation": "body.orientation", "velocity": "body.velocity",
             "angular": "body.angular"}
_SERIES = set(_RECORDED.values()) | set(_PAIR_RECORDED.values()) | {"solver", "joint.force", "joint.torque", "driver.effort"}  # the channels a Recording is made of
