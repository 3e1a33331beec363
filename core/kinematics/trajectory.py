"""Driven trajectories: solve every frame on the same assembly branch, stop with a located reason on failure.

`TrajectoryRun` is the kinematic implementation of the run protocol of `core.run` (kind "kinematics")."""

from __future__ import annotations

import csv
from dataclasses import dataclass, replace
from typing import IO, Callable, Iterator

import numpy as np

from ..errors import LinkwrightError
from ..io import number_text, readable_times
from ..run import Channel, Verdict
from ..transforms import RX
from .mobility import check_drivers
from .model import KinematicModel
from .solver import (
    RANK_RTOL,
    Workspace,
    forward,
    body_twists,
    point_kinematics,
    solve_accelerations,
    solve_positions,
    solve_velocities,
    twist_jacobian,
    loop_bias_forms,
    _velocity_factor,
)

__all__ = ["Frame", "Trajectory", "TrajectoryRun", "DrivenMotion", "solve_trajectory", "trajectory_of", "driver_values",
           "driver_values_until", "MAX_SUBSTEPS", "KINEMATIC_CHANNELS"]

# Continuation between two requested times (TrajectoryRun._advance).  A step is attempted whole only when the motion
# predicted over it is small: MAX_MOVE rad for a coordinate that turns something, MAX_MOVE times the mechanism's size
# for one that only slides.  A solution found from a farther prediction cannot be told from the same configuration
# some turns on or from the other assembly branch (a crank-rocker stepped 50 turns at a time assembled with its
# rocker's joint at 1055 rad), and the coordinates it leaves grow until the loops no longer close to round-off (after
# 782 s, 4918 rad of crank and 3e6 rad of rocker: "the motion ends near t = 781.6" for a linkage that turns forever).
MAX_MOVE = 1.0
# A step that fails, or would move farther, is walked in sub-steps: halved after each failure, doubled after each
# success.  The motion ends (limit_time) only where the mechanism cannot follow its drivers, and that is decided by
# refinement, never by one failed step: every sub-step beyond the last time solved fails down to the resolution of
# the time (a few units in the last place), or the determinant of the Jacobian changes sign (located by bisection),
# and there the Jacobian is singular (its smallest kept singular value below SINGULAR of its largest), or a driver
# leaves its bounds.  A failure that persists where the Jacobian is well conditioned is not called an end of the
# motion.  A run spends at most MAX_SUBSTEPS solves beyond one per requested time (a bounded cost: a few CPU-s for a
# small linkage); when they run out, the run stops as too coarse to follow, without claiming an end of the motion.
MAX_SUBSTEPS = 4096
SINGULAR = 1e-4
# why the motion ends at a state marked fork (TrajectoryRun._through_singular)
_FORK = "two assembly branches cross here (a change point): the run cannot tell which one the linkage takes"
# why a frame is rejected where the determinant of the Jacobian changed sign since the last one
_PASSED = "passed a singular position (toggle, dead-centre or change point) between two frames"
_BISECTIONS = 40  # locating a sign change of the determinant, or where a driver leaves its bounds


@dataclass
class Frame:
    """One solved time: coordinates, rates, accelerations, body poses and named points (world)."""

    index: int
    t: float
    q: np.ndarray  # (nq,)
    qd: np.ndarray
    qdd: np.ndarray
    poses: np.ndarray  # (n_bodies, 4, 4) world transforms
    points: np.ndarray  # (n_points, 3)
    point_vel: np.ndarray
    point_acc: np.ndarray

    @property
    def values(self) -> dict[str, np.ndarray]:
        """The frame's channels (core.run protocol): KINEMATIC_CHANNELS -> arrays."""
        return {name: getattr(self, name) for name in KINEMATIC_CHANNELS}


# channel name (a Frame attribute) -> (title, unit, per-point components)
KINEMATIC_CHANNELS = {
    "q": ("joint coordinates", "rad or m", False),
    "qd": ("joint rates", "rad/s or m/s", False),
    "qdd": ("joint accelerations", "rad/s² or m/s²", False),
    "points": ("named points", "m", True),
    "point_vel": ("velocities of named points", "m/s", True),
    "point_acc": ("accelerations of named points", "m/s²", True),
}


@dataclass
class Trajectory:
    """Every frame solved (stacked arrays); `ok` False with `reason` and `stop_time` when it stopped early."""

    coord_names: list[str]
    point_names: list[str]
    body_names: list[str]
    times: np.ndarray  # (K,) solved times (a prefix of the requested ones)
    q: np.ndarray  # (K, nq)
    qd: np.ndarray
    qdd: np.ndarray
    poses: np.ndarray  # (K, n_bodies, 4, 4)
    points: np.ndarray  # (K, n_points, 3)
    point_vel: np.ndarray
    point_acc: np.ndarray
    requested: int  # number of requested times
    ok: bool = True
    reason: str = ""  # one line: at which time and why it stopped
    stop_time: float | None = None  # first requested time that could not be solved
    limit_time: float | None = None  # where the motion ends, located between the last solved and stop_time

    def columns(self) -> tuple[list[str], np.ndarray]:
        """CSV header and the (frames, columns) table (what save_csv and `linkwright kinematics --json` write): t, as
        core.io.readable_times gives it (0.3, not the computed 3 x 0.1 = 0.30000000000000004), then per coordinate its
        value, rate and acceleration, then per named point its position, velocity and acceleration (x, y, z each)."""
        head = ["t"]
        cols = [readable_times(self.times)[:, None]]
        for i, name in enumerate(self.coord_names):
            head += [name, f"{name}.vel", f"{name}.acc"]
            cols.append(np.stack((self.q[:, i], self.qd[:, i], self.qdd[:, i]), axis=1))
        for i, name in enumerate(self.point_names):
            head += [f"{name}.{c}" for c in ("x", "y", "z", "vx", "vy", "vz", "ax", "ay", "az")]
            cols.append(np.concatenate((self.points[:, i], self.point_vel[:, i], self.point_acc[:, i]), axis=1))
        return head, np.concatenate(cols, axis=1) if len(self.times) else np.zeros((0, len(head)))

    def save_csv(self, fh: IO[str]) -> None:
        """Write the header and one row per solved frame, `columns` (numbers as core.io.number_text writes them:
        Python's repr, which reads back exactly, a zero without its sign; the times as readable_times gives them)."""
        head, table = self.columns()
        w = csv.writer(fh)
        w.writerow(head)
        for row in table:
            w.writerow([number_text(x) for x in row])


def driver_values(km: KinematicModel, times) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Driven coordinates, rates and accelerations (each (len(times), n_drivers)); LinkwrightError where one is not
    finite or beyond MAX_DRIVEN."""
    d, dd, ddd, _, error = driver_values_until(km, times)
    if error is not None:
        raise error
    return d, dd, ddd


def driver_values_until(km: KinematicModel, times) -> tuple[np.ndarray, np.ndarray, np.ndarray, int,
                                                            LinkwrightError | None]:
    """Driver values as `driver_values` at ascending `times`, the index of the first time where a driver is not a
    finite real number within MAX_DRIVEN (len(times) if none) and the located error of the first such driver (None
    if none)."""
    tt = np.atleast_1d(np.asarray(times, dtype=float))
    out = [np.zeros((len(tt), len(km.drivers))) for _ in range(3)]
    first, error = len(tt), None
    for i, d in enumerate(km.drivers):
        *arrays, k, why = d.evaluate_until(tt)
        for arr, v in zip(out, arrays):
            arr[:, i] = v
        if k < first:
            first, error = k, LinkwrightError(d.location, why)
    return out[0], out[1], out[2], first, error


def _common_roots(a: np.ndarray, b: np.ndarray, c: np.ndarray, tol: float = 1e-6) -> list[float]:
    """The real x with a_i x^2 + b_i x + c_i = 0 for every i (to `tol` of each equation's size at x), roots closer
    than 1e-3 of their size counted once: the candidates are the roots of the equation with the largest leading
    coefficient (of the largest linear one when none is quadratic; a discriminant just below zero is a double
    root)."""
    scale = max(float(np.abs(np.concatenate((a, b, c))).max(initial=0.0)), 1e-300)
    if not len(a) or scale <= 1e-300:
        return []
    i = int(np.argmax(np.abs(a)))
    if abs(a[i]) > 1e-8 * scale:
        disc = b[i] * b[i] - 4.0 * a[i] * c[i]
        if disc < -1e-6 * (b[i] * b[i] + abs(4.0 * a[i] * c[i])):
            return []
        w = np.sqrt(max(disc, 0.0))
        cand = [(-b[i] - w) / (2.0 * a[i]), (-b[i] + w) / (2.0 * a[i])]
    else:
        j = int(np.argmax(np.abs(b)))
        if abs(b[j]) <= 1e-8 * scale:
            return []
        cand = [-c[j] / b[j]]
    out: list[float] = []
    for x in cand:
        size = np.abs(a) * x * x + np.abs(b) * abs(x) + np.abs(c) + 1e-12 * scale
        if np.all(np.abs(a * x * x + b * x + c) <= tol * size) and not any(
                abs(x - y) <= 1e-3 * max(abs(x), abs(y), 1e-9) for y in out):
            out.append(float(x))
    return out


def _hermite_at(h: float, x: float, lo, hi) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Value, first and second derivative at x h (x in units of h from the middle) of the quintic that takes (value,
    first, second derivative) lo at -h and hi at +h (every coordinate at once)."""
    # in s = (time - middle) / h: g(s) = sum c_k s^k, g' = h f', g'' = h^2 f''
    M = np.array([[(-1.0) ** k for k in range(6)], [1.0] * 6,
                  [k * (-1.0) ** (k - 1) if k else 0.0 for k in range(6)], [float(k) for k in range(6)],
                  [k * (k - 1) * (-1.0) ** (k - 2) if k > 1 else 0.0 for k in range(6)],
                  [float(k * (k - 1)) for k in range(6)]])
    rhs = np.stack((lo[0], hi[0], h * lo[1], h * hi[1], h * h * lo[2], h * h * hi[2]))
    c = np.linalg.solve(M, rhs)
    k = np.arange(6, dtype=float)[:, None]
    g = (c * x ** k).sum(axis=0)
    g1 = (c[1:] * k[1:] * x ** (k[1:] - 1)).sum(axis=0)
    g2 = (c[2:] * k[2:] * (k[2:] - 1) * x ** (k[2:] - 2)).sum(axis=0)
    return g, g1 / h, g2 / (h * h)


class _Cancelled(Exception):
    """The run's cancel flag was seen inside a step's sub-steps."""


@dataclass
class _State:
    t: float
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    sign: float = 0.0  # sign of det of the square unknown-coordinate Jacobian (0: not square / not computed)
    fork: bool = False  # a singular position where two branches cross, reached during the run: the motion ends here


class TrajectoryRun:
    """Iterate to solve frames one by one (a core.run run of kind "kinematics"); `verdict` (and `ok`, `reason`,
    `stop_time`) are set at the end."""

    kind = "kinematics"

    def __init__(self, km: KinematicModel, times, cancel: Callable[[], bool] | None = None,
                 max_substeps: int = MAX_SUBSTEPS) -> None:
        self.km = km
        self.max_substeps = max_substeps  # solves the run may spend beyond one per requested time (MAX_SUBSTEPS)
        self._substeps = 0  # spent so far
        self.times = np.asarray(times, dtype=float).ravel()
        if not np.all(np.isfinite(self.times)):
            raise LinkwrightError("times", "times must be finite")
        if len(self.times) > 1 and np.any(np.diff(self.times) <= 0):
            raise LinkwrightError("times", "times must increase")
        self.cancel = cancel
        self.ws = Workspace(km)
        # the unit a coordinate's move is measured in: 1 rad for one that turns something, the mechanism's size for
        # one that only slides (see MAX_MOVE)
        turns = np.zeros(km.nq, dtype=bool)
        moving = km.step_scale != 0
        turns[km.step_coord[moving & (km.step_kind >= RX)]] = True
        self._unit = np.where(turns, 1.0, km.length_scale)
        self.expected_rank = check_drivers(km)  # located error before any solving
        self._idle_u = len(km.unknown) - self.expected_rank
        # A driver that is not finite at the first time is a located error (nothing can be computed); later, the
        # run stops there with that error as its reason, keeping the frames before it.
        *self.values, self._undefined_from, self._undefined = driver_values_until(km, self.times)
        if self._undefined is not None and self._undefined_from == 0:
            raise self._undefined
        self.ok = True
        self.reason = ""
        self.stop_time: float | None = None
        self.limit_time: float | None = None
        self.cancelled = False
        self._ended = False
        self.crossing: _State | None = None  # where _advance last ended the motion at a crossing of two branches
        self.body_names = list(km.body_names)
        point_owners = tuple((km.body_names[b],) for b in km.point_body)
        self.channels = tuple(
            Channel(name, title, unit, tuple(km.point_names if pts else km.coord_names), ("x", "y", "z") if pts else (),
                    point_owners if pts else ())
            for name, (title, unit, pts) in KINEMATIC_CHANNELS.items())

    @property
    def verdict(self) -> Verdict | None:
        """How the run ended (None while it runs)."""
        if not self._ended:
            return None
        return Verdict(self.ok, self.reason, self.stop_time, self.cancelled, self.limit_time)

    # ---- one configuration ---------------------------------------------------------------------------------
    def _drive(self, t: float):
        d, dd, ddd = driver_values(self.km, [t])
        return d[0], dd[0], ddd[0]

    def _det_sign(self) -> float:
        """Sign of det of the loop Jacobian in the unknowns at the configuration in ws (0 unless it is square)."""
        U = self.km.unknown
        if not self.km.n_loops or len(U) != self.km.n_rows or not len(U):
            return 0.0
        return float(np.sign(np.linalg.det(twist_jacobian(self.ws)[:, U])))

    def _solve(self, t: float, guess: np.ndarray, prev: np.ndarray | None, drive=None,
               prev_sign: float = 0.0, start: bool = False, base: _State | None = None, bridge: bool = True
               ) -> tuple[_State | None, str, str]:
        """Solve at t from `guess`; reject results that leave the branch (far from the prediction).  Returns (the
        state, "", "") or (None, why, what failed: "driver", "assembly", "jump", "rank", "sign" or "finite").  At a
        singular position the state is _through_singular's (`start`: the run's first frame; `base`: the state the
        run comes from), unless `bridge` is False (its own solves of the neighbouring regular states)."""
        if drive is None:
            try:  # a time between two requested ones (a halved step, locating the limit) may hit a pole
                drive = self._drive(t)
            except LinkwrightError as exc:
                return None, str(exc), "driver"
        d, dd, ddd = drive
        res = solve_positions(self.ws, d, guess)
        if not res.converged or not np.all(np.isfinite(res.q)):
            why = f"cannot assemble ({res.reason or 'not converged'}, loop residual {res.residual:.2e})"
            return None, why, "assembly"
        if prev is not None:
            moved = np.abs(guess - prev).max(initial=0.0)
            err = np.abs(res.q - guess).max(initial=0.0)
            if err > max(0.5 * moved, 1e-4):  # a jump the extrapolation did not foresee: maybe the other branch
                return None, "the solution jumps (near a singular position)", "jump"
        if not np.array_equal(self.ws.q, res.q):  # the solver leaves ws at its last iterate
            forward(self.ws, res.q)
        qd, rank = solve_velocities(self.ws, dd)
        fork = None  # the fork state at t, if the frame may be one (decided by the solve's motion below)
        if self.km.n_loops and len(self.km.unknown):
            # At (or, as a Newton solve finds it, within the square root of its tolerance of) a singular position
            # the rates of the solve are not the motion's: such a frame is made by _through_singular. (ratio: the
            # factor's smallest over largest singular value, or its LU estimate; idle freedoms keep it 0.)
            near = not self._idle_u and _velocity_factor(self.ws)[2] < SINGULAR
            if bridge and (rank < self.expected_rank or near):
                through = self._through_singular(t, res.q, drive, start, base)
                if through is not None and (not through.fork or rank < self.expected_rank):
                    return through, "", ""
                fork = through
                if not np.array_equal(self.ws.q, res.q):  # (_through_singular solved elsewhere)
                    forward(self.ws, res.q)
            if rank < self.expected_rank:
                return None, (f"singular Jacobian (rank {rank} < {self.expected_rank}): toggle, dead-centre "
                              "or change-point position"), "rank"
        qdd = solve_accelerations(self.ws, qd, ddd)
        if fork is not None and not self._same_motion(qd, qdd, fork):
            # Near where two branches cross, the solve's rates and accelerations are the branch's the run comes along
            # only while the position is farther from the crossing than the Newton solve resolves (the square root
            # of its tolerance): at the crossing its position is off it along the lost direction, and the rates
            # solved there are the mean of the two branches' (the line's point midway between the roots), on
            # neither.  Where they are not the branch's, the branch's own position at t (fork.q, the interpolant of
            # two regular solutions, far more precise) tells where t is: at the crossing if the Jacobian has lost
            # the rank there (RANK_RTOL, as every rank decision), the frame is the fork's and the motion ends
            # there; past it if its determinant has changed sign (the sign test's failure, located by bisection);
            # else before it, a regular frame of the branch.  A motion that is the branch's stays the solve's.
            # (expected_rank >= 1 here: _through_singular makes a state only without idle freedoms, _idle_u = 0, and
            # with unknowns, so expected_rank = len(unknown) - _idle_u >= 1)
            forward(self.ws, fork.q)
            sv = np.linalg.svd(twist_jacobian(self.ws)[:, self.km.unknown], compute_uv=False)
            if sv[self.expected_rank - 1] <= RANK_RTOL * sv[0]:
                return fork, "", ""
            if self._det_sign() * fork.sign < 0:
                return None, _PASSED, "sign"
            return replace(fork, fork=False), "", ""
        sign = self._det_sign()
        if sign * prev_sign < 0:
            # The determinant changed sign between two solved times: the motion went through a singular position
            # (e.g. a change point) that no sample hit, and may have continued on the other assembly branch.
            return None, _PASSED, "sign"
        if not (np.all(np.isfinite(qd)) and np.all(np.isfinite(qdd))):
            return None, "velocities are not finite (singular position)", "finite"
        return _State(t, res.q, qd, qdd, sign), "", ""

    def _same_rates(self, qd: np.ndarray, ref: np.ndarray) -> bool:
        """Whether the rates qd are the rates ref (to 1e-3 of the fastest coordinate's, each coordinate in its unit:
        the tolerance to which _through_singular takes its neighbours to be on the branch its rates found)."""
        speed = float(np.max(np.abs(ref) / self._unit, initial=0.0))
        return float(np.max(np.abs(qd - ref) / self._unit, initial=0.0)) <= 1e-3 * max(speed, 1.0)

    def _same_motion(self, qd: np.ndarray, qdd: np.ndarray, ref: _State) -> bool:
        """Whether rates and accelerations qd, qdd are the state ref's: the rates as _same_rates, the accelerations to
        1e-3 of the largest of ref's, the square of its fastest rate (the scale of the loops' term quadratic in the
        rates, which rates equal to 1e-3 keep to about 1e-3) and 1, each coordinate in its unit."""
        if not self._same_rates(qd, ref.qd):
            return False
        speed = float(np.max(np.abs(ref.qd) / self._unit, initial=0.0))
        scale = max(float(np.max(np.abs(ref.qdd) / self._unit, initial=0.0)), speed * speed, 1.0)
        return float(np.max(np.abs(qdd - ref.qdd) / self._unit, initial=0.0)) <= 1e-3 * scale

    def _through_singular(self, t: float, q: np.ndarray, drive, start: bool = False,
                          base: _State | None = None) -> _State | None:
        """The state at t where the configuration q is a singular position of the motion (the loop Jacobian in the
        unknowns has lost one rank), or None.
        Rates: the first-order equations leave a line of rates, G_U x = -G_D qd_D, x = p + a n (n the lost rank's
        direction); along a motion G q'' + b(q') = 0 (b: solver.loop_bias), so Y^T (b(q') + G_D qdd_D) = 0 for Y the
        left null space of G_U: quadratics in a. One root (or a double one) is the one way on: the double
        parallelogram, whose third crank rules out the crossed branch at its flat position. Two roots are two branches
        crossing (a four-bar's change point): the state is the branch's the run comes along (the root nearer the
        rates predicted from `base`), marked `fork`, and the motion ends there (the run cannot tell which branch a
        linkage takes on); a run that starts there (`start`) follows the branch with the smaller rates (the nearer to
        the minimum-norm ones). None when no root is real (a dead point).
        Values: the position a Newton solve finds at a singular position is exact only to the square root of its
        tolerance (the residual is quadratic in the error there), and the accelerations need the third order; so
        the state is the quintic Hermite interpolant of two regular solutions at t -+ d (positions, rates and
        accelerations), d a move of 1e-2 rad of the fastest coordinate: its error is O(d^6) in the positions."""
        km, ws = self.km, self.ws
        U, D = km.unknown, km.driven
        if self._idle_u or not len(U):  # (a lost rank among idle freedoms: not decided here)
            return None
        d, dd, ddd = drive
        forward(ws, q)
        G = twist_jacobian(ws)
        u, sv, vt = np.linalg.svd(G[:, U])
        r = self.expected_rank - 1
        if len(sv) <= r or sv[r] >= SINGULAR * sv[0] or (r + 1 < len(sv) and sv[r + 1] >= SINGULAR * sv[0]):
            return None  # not exactly one rank lost
        rhs = -(G[:, D] @ dd)
        p = vt[:r].T @ ((u[:, :r].T @ rhs) / sv[:r])
        rates = np.zeros((2, km.nq))
        rates[0, D], rates[0, U], rates[1, U] = dd, p, vt[r]
        Y = u[:, r:]
        forms = np.tensordot(Y, loop_bias_forms(ws, rates), axes=(0, 0))  # (p, 2, 2)
        c = forms[:, 0, 0] + Y.T @ (G[:, D] @ ddd)
        b, a = 2.0 * forms[:, 0, 1], forms[:, 1, 1]
        roots = _common_roots(a, b, c)
        fork = len(roots) == 2 and (start or base is not None)
        if fork:
            if start:
                roots = [min(roots, key=abs)]
            else:  # the branch the run comes along
                hint = (base.qd + base.qdd * (t - base.t))[U]
                roots = [min(roots, key=lambda x: float(np.abs(p + x * vt[r] - hint).max()))]
        if len(roots) != 1:
            return None
        qd_s = rates[0] + roots[0] * rates[1]
        # the neighbours: a move of 1e-2 rad (or 1e-2 of the size) of the fastest coordinate (the interpolant's error,
        # O(d^4) in the accelerations, against the positions' round-off over d^2)
        speed = float(np.max(np.abs(qd_s) / self._unit, initial=0.0))
        h = 1e-2 / max(speed, 1e-12)
        side = []
        # both sides of t where the way on is one; where two branches cross, two times on the branch taken (after
        # the start, before a fork reached during the run), the interpolant extrapolated to t
        way = 1.0 if start or (base is not None and base.t > t) else -1.0  # (a run may go backwards: DrivenMotion)
        for t_n in ((t + way * h, t + way * 2.0 * h) if fork else (t - h, t + h)):
            guess = q + qd_s * (t_n - t)
            try:
                got, _why, _kind = self._solve(t_n, guess, None, self._drive(t_n), bridge=False)
            except LinkwrightError:
                return None
            if got is None:
                return None
            side.append(got)
        lo, hi = sorted(side, key=lambda st: st.t)
        # the quintic through both states, evaluated at t: their midpoint, or (a fork) 3 half-spans before the
        # earlier one (after the start) or after the later one
        at = (-3.0 * way) if fork else 0.0
        qh, qdh, qddh = _hermite_at(0.5 * h if fork else h, at, (lo.q, lo.qd, lo.qdd), (hi.q, hi.qd, hi.qdd))
        if not self._same_rates(qdh, qd_s):
            return None  # the neighbours are not on the branch the rates found
        qh[D], qdh[D], qddh[D] = d, dd, ddd
        forward(ws, qh)
        # the sign of the determinant: the way on's (past t in the run's direction; the way in's at a fork)
        ahead = base is None or base.t <= t
        sign = (hi if ahead != (fork and not start) else lo).sign
        return _State(t, qh, qdh, qddh, sign, fork and not start)

    @staticmethod
    def _predict(s: _State, t: float) -> np.ndarray:
        dt = t - s.t
        return s.q + s.qd * dt + 0.5 * s.qdd * dt * dt  # stay on the branch: extrapolate along the motion

    def _advance(self, s: _State, t: float, drive=None, budget: int | None = None
                 ) -> tuple[_State | None, str, float | None]:
        """Continue from s to t (in sub-steps where the whole step fails or would move too far; see MAX_MOVE), with
        at most `budget` solves beyond the first (default: what is left of the run's `max_substeps`).
        Returns (the state at t, "", None), or (None, why, end): `end` is the time where the motion ends (see
        SINGULAR), None when no end was found (the budget ran out, or the mechanism failed where it is not
        singular). Where it ends at a crossing of two branches before t (a sub-step or a bisection's midpoint
        there), `self.crossing` is the state there (the branch's the run came along, marked fork), else None."""
        self.crossing = None
        if s.fork:
            return None, _FORK, s.t
        if budget is None:
            budget = self.max_substeps - self._substeps
        way = 1.0 if t >= s.t else -1.0  # (DrivenMotion also continues backwards, to a contact step's retry)
        h_min = 4 * np.spacing(max(abs(t), abs(s.t)))  # the resolution of the time
        cur, h, attempts = s, abs(t - s.t), [0]

        def solve(t_next: float, base: _State, last: bool):
            if attempts[0] > budget:
                return None, "budget", "budget"
            if attempts[0] and attempts[0] % 64 == 0 and self.cancel is not None and self.cancel():
                raise _Cancelled
            if attempts[0]:
                self._substeps += 1
            attempts[0] += 1
            return self._solve(t_next, self._predict(base, t_next), base.q, drive if last else None, base.sign,
                               base=base)

        while True:
            last = h >= abs(t - cur.t)
            t_next = t if last else cur.t + way * h
            if h > h_min and np.max(np.abs(self._predict(cur, t_next) - cur.q) / self._unit, initial=0.0) > MAX_MOVE:
                h *= 0.5  # (no solve: the prediction alone says the step is too long)
                continue
            new, why, kind = solve(t_next, cur, last)
            if kind == "sign":
                # Locate the sign change by bisection (continuing on the branch up to it); it is the end of the
                # motion if the Jacobian is singular there, else it was the solution of too long a step.
                hi = t_next
                for _ in range(_BISECTIONS):
                    mid = 0.5 * (cur.t + hi)
                    got, _, k = solve(mid, cur, False)
                    if k == "budget":
                        break
                    if got is None:
                        hi = mid
                    elif got.fork:  # (a midpoint at the crossing: the branch's position there has lost the rank)
                        self.crossing = got
                        return None, _FORK, got.t
                    else:
                        cur = got
                if self._singular(cur):
                    return None, why, cur.t
                h = 0.5 * abs(hi - cur.t)
                continue
            if kind == "budget":
                return None, (f"the steps are too coarse to follow the motion: {self.max_substeps:,} sub-steps "
                              f"between requested times spent (solved to t = {cur.t:.9g}; no end of the motion "
                              "found)"), None
            if new is not None:
                if last:
                    return new, "", None
                if new.fork:  # (a sub-step that lands exactly where two branches cross)
                    self.crossing = new
                    return None, _FORK, new.t
                cur, h = new, 2.0 * h
            elif h > h_min:
                h = 0.5 * min(h, abs(t - cur.t))
            elif kind == "driver" or self._singular(cur):
                return None, why, cur.t  # every sub-step beyond cur fails: the motion ends there
            else:
                return None, f"cannot follow the motion beyond t = {cur.t:.9g}: {why}", None

    def _singular(self, s: _State) -> bool:
        """Whether the Jacobian in the unknown coordinates is singular at s (see SINGULAR)."""
        U = self.km.unknown
        if not self.km.n_loops or not len(U) or not self.expected_rank:
            return False
        if not np.array_equal(self.ws.q, s.q):
            forward(self.ws, s.q)
        sv = np.linalg.svd(twist_jacobian(self.ws)[:, U], compute_uv=False)
        return bool(sv[self.expected_rank - 1] < SINGULAR * sv[0])

    def _start(self) -> tuple[_State | None, str]:
        t0 = float(self.times[0])
        drive = tuple(v[0] for v in self.values)
        q0 = np.zeros(self.km.nq)
        s, why, _ = self._solve(t0, q0, None, drive, start=True)
        if s is not None:
            return s, ""
        # continuation from the design configuration (all coordinates 0) to the first driven values
        q = q0
        for lam in np.linspace(0.0, 1.0, 33)[1:]:
            res = solve_positions(self.ws, lam * drive[0], q)
            if not res.converged:
                return None, why
            q = res.q
        return self._solve(t0, q, None, drive, start=True)[:2]

    def _frame(self, k: int, s: _State) -> Frame:
        km = self.km
        if not np.array_equal(self.ws.q, s.q):
            forward(self.ws, s.q)
        poses = self.ws.T.copy()
        if len(km.point_names):
            p, v, acc = point_kinematics(self.ws, s.qd, s.qdd)  # reuses the twists of the acceleration solve
        else:
            p = v = acc = np.zeros((0, 3))
        return Frame(k, s.t, s.q.copy(), s.qd.copy(), s.qdd.copy(), poses, p, v, acc)

    def _locate_driver(self, lo: float, hi: float) -> tuple[float, float]:
        """The last time before `hi` (where a driver is undefined) at which every driver is finite and within its
        bounds, and the first time after it at which one is not, by bisection."""
        for _ in range(_BISECTIONS):
            mid = 0.5 * (lo + hi)
            if driver_values_until(self.km, [mid])[3] == 0:
                hi = mid
            else:
                lo = mid
        return lo, hi

    def _stop(self, t: float, why: str, s: _State | None, end: float | None = None, driver: bool = False) -> None:
        self.ok = False
        self.stop_time = float(t)
        if s is not None and driver:
            end, past = self._locate_driver(s.t, t)  # where the drivers end (a pole, a logarithm's zero)
            # the reason quotes the driver where the motion ends, not at the requested time t beyond it
            # ('exp(800*t)' in steps of 0.01 s: "acceleration ... is 1.91e+09 ... at t = 0.01; the motion ends near
            # t = 0.00919255298"); its time is the end's, said once
            err = driver_values_until(self.km, [past])[4]
            if err is not None and past < t:
                why = str(err).rsplit(" at t = ", 1)[0]
        self.limit_time = end  # where the mechanism stops following its drivers (None: not found)
        self.reason = f"stopped at t = {t:.6g}: {why}"
        if end is not None:
            self.reason += f"; the motion ends near t = {end:.9g}"

    def __iter__(self) -> Iterator[Frame]:
        try:
            yield from self._frames()
        finally:
            self._ended = True

    def _frames(self) -> Iterator[Frame]:
        if not len(self.times):
            return
        s, why = self._start()
        if s is None:
            self._stop(self.times[0], why, None)
            return
        yield self._frame(0, s)
        for k in range(1, len(self.times)):
            if self.cancel is not None and self.cancel():
                self.cancelled, self.ok = True, False
                self.reason = f"cancelled at t = {self.times[k]:.6g}"
                return
            if k == self._undefined_from:
                self._stop(self.times[k], str(self._undefined), s, driver=True)
                return
            # the driver values at the requested times were evaluated at once in __init__
            drive = (self.values[0][k], self.values[1][k], self.values[2][k])
            try:
                new, why, end = self._advance(s, float(self.times[k]), drive)
            except _Cancelled:
                new, why, end = None, "", None
            if new is None and self.cancel is not None and self.cancel():
                self.cancelled, self.ok = True, False
                self.reason = f"cancelled at t = {self.times[k]:.6g}"
                return
            if new is None:
                self._stop(self.times[k], why, s, end)
                if self.crossing is not None:
                    # the crossing located between two requested times has its frame, at its own time, as one that
                    # a requested time hits (whose frame is the fork state, the motion ending at the next time)
                    yield self._frame(k, self.crossing)
                return
            s = new
            yield self._frame(k, s)


@dataclass(frozen=True)
class MotionEnd:
    """Why the driven motion cannot be followed to a time (DrivenMotion.at): the reason, and where the motion ends
    when that was found (a driver's pole or bound, a limit position), else None."""

    reason: str
    end: float | None = None


class DrivenMotion:
    """The driven motion at any time asked for, in any order (the kinematic bodies of a contact run, whose steps may
    be halved and retried): each time is solved by continuation from the nearest time solved before, on the same
    assembly branch as a TrajectoryRun.  LinkwrightError at construction when the mechanism cannot be assembled at
    t = 0."""

    _KEEP = 32  # solved times kept to continue from

    def __init__(self, km: KinematicModel) -> None:
        self.km = km
        self._run = TrajectoryRun(km, [0.0])
        s, why = self._run._start()
        if s is None:
            raise LinkwrightError("drivers", f"the driven bodies cannot be assembled at t = 0: {why}")
        self._solved: dict[float, tuple] = {}
        self._states: dict[float, _State] = {0.0: s}

    def at(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray] | MotionEnd:
        """(poses (n, 4, 4), twists (n, 6), unit twists (n_drivers, n, 6)) at time t: world body poses, world
        twists (v of the body point at the world origin, w), and the twists per unit rate of each driver with the
        others held; or why the motion cannot be solved there (MotionEnd)."""
        t = float(t)
        got = self._solved.get(t)
        if got is not None:
            return got
        s = self._states.get(t)
        if s is None:
            near = min(self._states, key=lambda u: abs(u - t))
            # (a budget per time asked: a contact run asks at every step)
            s, why, end = self._run._advance(self._states[near], t, budget=MAX_SUBSTEPS)
            if s is None:
                return MotionEnd(why, end)
            if len(self._states) >= self._KEEP:
                self._states.pop(next(iter(self._states)))
            self._states[t] = s
        ws = self._run.ws
        if not np.array_equal(ws.q, s.q):
            forward(ws, s.q)
        poses = ws.T.copy()
        twists = body_twists(ws, s.qd)[0]
        unit = np.zeros((len(self.km.driven), self.km.n_bodies, 6))
        for d in range(len(self.km.driven)):
            e = np.zeros(len(self.km.driven))
            e[d] = 1.0
            unit[d] = body_twists(ws, solve_velocities(ws, e)[0])[0]
        if len(self._solved) >= self._KEEP:
            self._solved.pop(next(iter(self._solved)))
        self._solved[t] = out = (poses, twists, unit)
        return out


def solve_trajectory(km: KinematicModel, times, cancel: Callable[[], bool] | None = None) -> Trajectory:
    """Solve the driven motion at `times`; stops early with a reason, keeping the frames solved before."""
    return trajectory_of(TrajectoryRun(km, times, cancel))


def trajectory_of(run: TrajectoryRun) -> Trajectory:
    """Iterate a kinematic run to its end and stack its frames."""
    km = run.km
    frames = list(run)
    n, nb, npt = km.nq, km.n_bodies, len(km.point_names)

    def stack(attr, shape):
        return np.stack([getattr(f, attr) for f in frames]) if frames else np.zeros((0,) + shape)

    return Trajectory(
        coord_names=list(km.coord_names),
        point_names=list(km.point_names),
        body_names=list(km.body_names),
        times=np.array([f.t for f in frames]),
        q=stack("q", (n,)),
        qd=stack("qd", (n,)),
        qdd=stack("qdd", (n,)),
        poses=stack("poses", (nb, 4, 4)),
        points=stack("points", (npt, 3)),
        point_vel=stack("point_vel", (npt, 3)),
        point_acc=stack("point_acc", (npt, 3)),
        requested=len(run.times),
        ok=run.ok,
        reason=run.reason,
        stop_time=run.stop_time,
        limit_time=run.limit_time,
    )
