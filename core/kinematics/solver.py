"""Positions, velocities and accelerations of a compiled mechanism by the matrix method.

Open chains: world poses are products of joint transforms along the spanning tree (oTchild = oTparent · aTb
or its inverse). Closed chains: every chord joint c between a and b closes a fundamental loop with
C = (oTb)^-1 · oTa · aTb(q_c) = E4; its 6 independent entries (translation and the antisymmetric part of
the rotation, all linear in C) form the residual, 3 of them (x, y, rotation z) in planar documents.

Derivatives come from the generator matrices: moving one elementary step e of a joint moves everything on the
far side of it by the world twist S_e = W_e G_e W_e^-1 (W_e: world frame just before the step), so the
Jacobian is exact and velocities/accelerations solve the differentiated loop equations
Phi_q qd = 0 and Phi_q qdd = -sum coef [xi_W, S_e] qd_e (the bracket is dS_e/dt).
Twists are 6-vectors (v, w): w the angular velocity, v the velocity of the body point at the world origin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from ..transforms import inverse
from .model import KinematicModel

__all__ = [
    "Workspace",
    "PositionResult",
    "forward",
    "body_poses",
    "loop_residual",
    "loop_jacobian",
    "twist_jacobian",
    "solve_positions",
    "solve_velocities",
    "solve_accelerations",
    "body_twists",
    "point_positions",
    "point_kinematics",
    "RANK_RTOL",
]

RANK_RTOL = 1e-9  # singular values below this fraction of the largest count as zero (rank decisions)
_MIN_DEN = 1e-3  # keeps the Rodrigues residual finite near a half-turn
_AXIS_I = np.array([1, 2, 0])  # for a rotation about axis a: the plane (i, j) it turns
_AXIS_J = np.array([2, 0, 1])


class Workspace:
    """Buffers and results of the last evaluation for one model (the model itself stays constant)."""

    def __init__(self, km: KinematicModel) -> None:
        self.km = km
        m = km.n_joints
        self.q = np.zeros(km.nq)  # joint coordinates of the last evaluation
        self.T = km.design_pose.copy()  # (n, 4, 4) world poses of the bodies
        self.J = np.tile(np.eye(4), (m, 1, 1))  # (m, 4, 4) joint transforms aTb
        self.Mpre = np.tile(np.eye(4), (m, 3, 1, 1))  # (m, 3, 4, 4) motion before each step
        self.S: np.ndarray | None = None  # (m, 3, 6) world twists of the steps at q
        kind = km.step_kind
        rot = kind >= 3
        # index maps of the batched elementary motions (fixed per model)
        self._t_idx = np.nonzero(~rot)
        self._t_axis = kind[~rot]
        self._r_idx = np.nonzero(rot)
        self._r_i = _AXIS_I[kind[rot] - 3]
        self._r_j = _AXIS_J[kind[rot] - 3]
        self._axis = kind % 3
        self._is_rot = rot
        self._rev = [~km.tree_forward[jt] for _, _, jt in km.levels]


@dataclass
class PositionResult:
    """Outcome of a position solve: coordinates, whether the loops closed, and why not."""

    q: np.ndarray  # (nq,) coordinates (the last iterate when not converged)
    converged: bool
    residual: float  # max |loop residual|
    iterations: int
    rank: int  # rank of the Jacobian in the unknowns at the last linearisation
    sigma_ratio: float  # smallest / largest singular value among the unknowns (1 when no loop)
    reason: str = ""  # why it did not converge ("" when it did)


def _elementary_batch(ws: Workspace, val: np.ndarray) -> np.ndarray:
    """All joints' elementary step matrices at step values `val` (m, 3)."""
    E = np.zeros(val.shape + (4, 4))
    E[..., 0, 0] = E[..., 1, 1] = E[..., 2, 2] = E[..., 3, 3] = 1.0
    ti, ts = ws._t_idx
    E[ti, ts, ws._t_axis, 3] = val[ti, ts]
    ri, rs = ws._r_idx
    a = val[ri, rs]
    c, s = np.cos(a), np.sin(a)
    i, j = ws._r_i, ws._r_j
    E[ri, rs, i, i] = c
    E[ri, rs, j, j] = c
    E[ri, rs, i, j] = -s
    E[ri, rs, j, i] = s
    return E


def forward(ws: Workspace, q: np.ndarray) -> np.ndarray:
    """Evaluate joint transforms and body world poses at q into `ws`; returns the poses (n, 4, 4)."""
    km = ws.km
    ws.q = np.array(q, dtype=float)
    ws.S = None
    if km.n_joints:
        E = _elementary_batch(ws, ws.q[km.step_coord] * km.step_scale)
        m1 = E[:, 0]
        m2 = m1 @ E[:, 1]
        ws.Mpre = np.stack((np.broadcast_to(np.eye(4), m1.shape), m1, m2), axis=1)
        ws.J = km.Fa @ (m2 @ E[:, 2]) @ km.Fb_inv
    T = km.design_pose.copy()
    for (child, par, jt), rev in zip(km.levels, ws._rev):
        rel = ws.J[jt]
        if rev.any():
            rel = rel.copy()
            rel[rev] = inverse(rel[rev])
        T[child] = T[par] @ rel
    ws.T = T
    return T


def body_poses(km: KinematicModel, q: np.ndarray, ws: Workspace | None = None) -> np.ndarray:
    """World transforms (n_bodies, 4, 4) of every body at coordinates q (loops are not enforced)."""
    return forward(ws or Workspace(km), q).copy()


def _closure(ws: Workspace) -> tuple[np.ndarray, np.ndarray]:
    km = ws.km
    c = km.chords
    B = ws.T[km.jb[c]]
    C = inverse(B) @ ws.T[km.ja[c]] @ ws.J[c]
    return B, C


def _vee_antisym(X: np.ndarray) -> np.ndarray:
    return np.stack((X[..., 2, 1] - X[..., 1, 2], X[..., 0, 2] - X[..., 2, 0], X[..., 1, 0] - X[..., 0, 1]), -1)


def _lin(C: np.ndarray) -> np.ndarray:
    """The 6 residual entries of closure matrices C (..., 4, 4): translation and the Rodrigues vector.

    vee(R - R^T) / (1 + tr R) = tan(theta/2) axis vanishes only at R = E3 (the bare antisymmetric part
    would also vanish at a half-turn, a false closure Newton can be drawn to)."""
    den = np.maximum(1.0 + np.trace(C[..., :3, :3], axis1=-2, axis2=-1), _MIN_DEN)
    return np.concatenate((C[..., :3, 3], _vee_antisym(C[..., :3, :3]) / den[..., None]), axis=-1)


def loop_residual(ws: Workspace) -> np.ndarray:
    """Loop-closure residual (n_rows,) at the last `forward` evaluation."""
    km = ws.km
    if not km.n_loops:
        return np.zeros(0)
    _, C = _closure(ws)
    return _lin(C)[:, km.rows].ravel()


def _step_twists(ws: Workspace) -> np.ndarray:
    if ws.S is None:
        km = ws.km
        W = ws.T[km.ja][:, None] @ km.Fa[:, None] @ ws.Mpre  # (m, 3, 4, 4) frame before each step
        u = np.take_along_axis(W[..., :3, :3], ws._axis[..., None, None], axis=-1)[..., 0]  # step axis, world
        p = W[..., :3, 3]
        rot = ws._is_rot[..., None]
        S = np.concatenate((np.where(rot, np.cross(p, u), u), np.where(rot, u, 0.0)), axis=-1)
        ws.S = S * km.step_scale[..., None]
    return ws.S


def _scatter(km: KinematicModel, lin: np.ndarray) -> np.ndarray:
    """Assemble per-pair 6-vectors into the (n_rows, nq) matrix of the kept rows."""
    out = np.zeros((km.n_loops, 6, km.nq))
    np.add.at(out, (km.pair_loop[:, None], np.arange(6)[None, :], km.pair_col[:, None]), lin * km.pair_coef[:, None])
    return out[:, km.rows, :].reshape(km.n_rows, km.nq)


def loop_jacobian(ws: Workspace) -> np.ndarray:
    """Exact derivative (n_rows, nq) of `loop_residual` with respect to all coordinates."""
    km = ws.km
    if not km.n_loops or not len(km.pair_loop):
        return np.zeros((km.n_rows, km.nq))
    S = _step_twists(ws)[km.pair_joint, km.pair_step]  # (P, 6) world twists
    B, C = _closure(ws)
    Bp, Cp = B[km.pair_loop], C[km.pair_loop]
    RBt = np.swapaxes(Bp[:, :3, :3], 1, 2)
    v, w = S[:, :3], S[:, 3:]
    # dC/dq = B^-1 S^ B C: the twist S moved into frame b, then times C
    w1 = np.einsum("pij,pj->pi", RBt, w)
    v1 = np.einsum("pij,pj->pi", RBt, v + np.cross(w, Bp[:, :3, 3]))
    trans = np.cross(w1, Cp[:, :3, 3]) + v1
    R = Cp[:, :3, :3]
    wx = np.zeros((len(w1), 3, 3))
    wx[:, 0, 1], wx[:, 0, 2], wx[:, 1, 2] = -w1[:, 2], w1[:, 1], -w1[:, 0]
    wx[:, 1, 0], wx[:, 2, 0], wx[:, 2, 1] = w1[:, 2], -w1[:, 1], w1[:, 0]
    X = wx @ R  # dR/dq
    tr = 1.0 + np.trace(R, axis1=1, axis2=2)
    den = np.maximum(tr, _MIN_DEN)
    # quotient rule on vee(R - R^T) / (1 + tr R); the clamp makes the denominator constant there
    dden = np.where(tr > _MIN_DEN, np.trace(X, axis1=1, axis2=2), 0.0)
    rot = _vee_antisym(X) / den[:, None] - _vee_antisym(R) * (dden / den**2)[:, None]
    return _scatter(km, np.concatenate((trans, rot), axis=1))


def twist_jacobian(ws: Workspace) -> np.ndarray:
    """Velocity-level constraint matrix (n_rows, nq): world twist of each loop's closing gap per coordinate."""
    km = ws.km
    if not km.n_loops or not len(km.pair_loop):
        return np.zeros((km.n_rows, km.nq))
    return _scatter(km, _step_twists(ws)[km.pair_joint, km.pair_step])


def _lstsq(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, int, np.ndarray]:
    """Minimum-norm least-squares solution with the rank and singular values (rank-revealing SVD)."""
    if A.shape[1] == 0:
        return np.zeros((0,) + b.shape[1:]), 0, np.zeros(0)
    if A.shape[0] == 0:
        return np.zeros((A.shape[1],) + b.shape[1:]), 0, np.zeros(0)
    x, _, rank, s = scipy.linalg.lstsq(A, b, cond=RANK_RTOL, lapack_driver="gelsd", check_finite=False)
    return x, int(rank), s


def solve_positions(
    ws: Workspace,
    q_driven: np.ndarray,
    guess: np.ndarray,
    tol: float = 1e-12,
    max_iter: int = 40,
) -> PositionResult:
    """Close all loops by damped Newton-Raphson in the undriven coordinates, starting from `guess`."""
    km = ws.km
    q = np.array(guess, dtype=float)
    q[km.driven] = q_driven
    U = km.unknown
    floor = 1e-10 * km.length_scale  # round-off floor: accepted only once Newton can improve no further
    forward(ws, q)
    r = loop_residual(ws)
    nr = float(np.abs(r).max(initial=0.0))
    rank, ratio = 0, 1.0
    for it in range(max_iter + 1):
        if nr <= tol:
            # C = E4 and C = a half-turn share the residual's zero; only the first is a closed loop
            _, C = _closure(ws)
            if km.n_loops and np.trace(C[:, :3, :3], axis1=1, axis2=2).min() < 1.0:
                return PositionResult(q, False, nr, it, rank, ratio, "converged to a half-turn, not a closed loop")
            return PositionResult(q, True, nr, it, rank, ratio)
        if it == max_iter:
            break
        Ju = loop_jacobian(ws)[:, U]
        dx, rank, s = _lstsq(Ju, -r)
        ratio = float(s[-1] / s[0]) if len(s) and s[0] > 0 and len(s) == min(Ju.shape) else 0.0
        # Backtracking line search on the residual norm keeps Newton from leaving the basin (damping).
        alpha, n2 = 1.0, float(r @ r)
        while True:
            qt = q.copy()
            qt[U] += alpha * dx
            forward(ws, qt)
            rt = loop_residual(ws)
            if float(rt @ rt) < (1.0 - 1e-4 * alpha) * n2 or alpha < 1.0 / 256:
                break
            alpha *= 0.5
        if float(rt @ rt) >= n2 and alpha < 1.0 / 256:
            forward(ws, q)
            if nr <= floor:
                return PositionResult(q, True, nr, it + 1, rank, ratio)
            return PositionResult(q, False, nr, it + 1, rank, ratio, "Newton made no progress (no assembly near the guess)")
        q, r = qt, rt
        nr = float(np.abs(r).max(initial=0.0))
    return PositionResult(q, False, nr, max_iter, rank, ratio, f"not converged in {max_iter} iterations")


def body_twists(ws: Workspace, qd: np.ndarray, qdd: np.ndarray | None = None):
    """World twists (n, 6) of the bodies at the last `forward` for rates qd, and their derivatives for qdd.

    Also returns the per-step frame twists and brackets, so loop bias terms reuse them:
    (xi, alpha_or_None, step_twist_S, bracket_terms) where bracket_terms[j, s] = [xi_W, S_js] qd_js."""
    km = ws.km
    S = _step_twists(ws)
    rate = qd[km.step_coord]  # (m, 3); padding steps have S = 0
    contrib = S * rate[..., None]  # (m, 3, 6)
    xi = np.zeros((km.n_bodies, 6))
    for child, par, jt in km.levels:
        sign = np.where(km.tree_forward[jt], 1.0, -1.0)[:, None]
        xi[child] = xi[par] + sign * contrib[jt].sum(axis=1)
    # twist of the frame just before each step: body a's twist plus the joint's earlier steps
    frame = xi[km.ja][:, None, :] + np.cumsum(contrib, axis=1) - contrib
    brk = _bracket(frame, S) * rate[..., None]
    alpha = None
    if qdd is not None:
        acc = S * qdd[km.step_coord][..., None] + brk
        alpha = np.zeros((km.n_bodies, 6))
        for child, par, jt in km.levels:
            sign = np.where(km.tree_forward[jt], 1.0, -1.0)[:, None]
            alpha[child] = alpha[par] + sign * acc[jt].sum(axis=1)
    return xi, alpha, S, brk


def _bracket(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Lie bracket [a, b] of twists (v, w): (w_a x v_b - w_b x v_a, w_a x w_b)."""
    va, wa, vb, wb = a[..., :3], a[..., 3:], b[..., :3], b[..., 3:]
    return np.concatenate((np.cross(wa, vb) - np.cross(wb, va), np.cross(wa, wb)), axis=-1)


def solve_velocities(ws: Workspace, qd_driven: np.ndarray) -> tuple[np.ndarray, int]:
    """Joint rates (nq,) at the solved configuration in `ws` from the driven rates (min-norm for idle freedoms)."""
    km = ws.km
    qd = np.zeros(km.nq)
    qd[km.driven] = qd_driven
    if not km.n_loops or not len(km.unknown):
        return qd, 0
    G = twist_jacobian(ws)
    x, rank, _ = _lstsq(G[:, km.unknown], -G[:, km.driven] @ qd[km.driven])
    qd[km.unknown] = x
    return qd, rank


def solve_accelerations(ws: Workspace, qd: np.ndarray, qdd_driven: np.ndarray) -> np.ndarray:
    """Joint accelerations (nq,) from the differentiated loop equations at the solved configuration and rates."""
    km = ws.km
    qdd = np.zeros(km.nq)
    qdd[km.driven] = qdd_driven
    if not km.n_loops or not len(km.unknown):
        return qdd
    G = twist_jacobian(ws)
    _, _, _, brk = body_twists(ws, qd)
    gamma = np.zeros((km.n_loops, 6))
    np.add.at(gamma, km.pair_loop, brk[km.pair_joint, km.pair_step] * km.pair_coef[:, None])
    bias = gamma[:, km.rows].ravel() + G[:, km.driven] @ qdd[km.driven]
    x, _, _ = _lstsq(G[:, km.unknown], -bias)
    qdd[km.unknown] = x
    return qdd


def point_positions(ws: Workspace) -> np.ndarray:
    """World positions (n_points, 3) of the named points at the last `forward`."""
    km = ws.km
    T = ws.T[km.point_body]
    return np.einsum("pij,pj->pi", T[:, :3, :3], km.point_local) + T[:, :3, 3]


def point_kinematics(ws: Workspace, qd: np.ndarray, qdd: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """World positions, velocities and accelerations (each (n_points, 3)) of the named points."""
    km = ws.km
    p = point_positions(ws)
    xi, alpha, _, _ = body_twists(ws, qd, qdd)
    x, a = xi[km.point_body], alpha[km.point_body]
    v = np.cross(x[:, 3:], p) + x[:, :3]
    acc = np.cross(a[:, 3:], p) + a[:, :3] + np.cross(x[:, 3:], v)
    return p, v, acc
