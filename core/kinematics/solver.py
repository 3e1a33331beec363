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
import scipy.linalg.lapack

from ..transforms import inverse as _inv
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
    "loop_bias",
    "loop_bias_forms",
]

RANK_RTOL = 1e-9  # singular values below this fraction of the largest count as zero (rank decisions)
_LU_RCOND = 1e3 * RANK_RTOL  # a square system takes the LU path when rcond_1 > n * this (else the SVD decides)
_MIN_DEN = 1e-3  # keeps the Rodrigues residual finite near a half-turn
_AXIS_I = np.array([1, 2, 0])  # for a rotation about axis a: the plane (i, j) it turns
_AXIS_J = np.array([2, 0, 1])
_C1, _C2 = _AXIS_I, _AXIS_J  # (a x b)_k = a_C1 b_C2 - a_C2 b_C1
# skew(v) = v @ _SKEW reshaped to 3x3 (one matmul for a batch instead of six assignments)
_SKEW = np.zeros((3, 9))
for _k, (_i, _j) in enumerate(zip(_AXIS_I, _AXIS_J)):
    _SKEW[_k, 3 * _j + _i], _SKEW[_k, 3 * _i + _j] = 1.0, -1.0
_getrf, _getrs, _gecon = scipy.linalg.lapack.get_lapack_funcs(("getrf", "getrs", "gecon"), (np.zeros((1, 1)),))


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross products along the last axis (np.cross has ~10x the fixed cost on small arrays)."""
    return a[..., _C1] * b[..., _C2] - a[..., _C2] * b[..., _C1]


def _skew(v: np.ndarray) -> np.ndarray:
    return (v @ _SKEW).reshape(v.shape[:-1] + (3, 3))


class Workspace:
    """Buffers and results of the last evaluation for one model (the model itself stays constant).

    Everything derived from the configuration (closure matrices, step twists, constraint matrices and their
    factorisation, body twists for given rates) is computed at most once per `forward` and cached here."""

    def __init__(self, km: KinematicModel) -> None:
        self.km = km
        m = km.n_joints
        self.q = np.zeros(km.nq)  # joint coordinates of the last evaluation
        self.T = km.design_pose.copy()  # (n, 4, 4) world poses of the bodies
        self.J = np.tile(np.eye(4), (m, 1, 1))  # (m, 4, 4) joint transforms aTb
        # (m, 3, 4, 4) motion before each step (step 0: E4; steps past the model's last moving step stay E4)
        self.Mpre = np.tile(np.eye(4), (m, 3, 1, 1))
        self._E = np.tile(np.eye(4), (m, 3, 1, 1))  # (m, 3, 4, 4) elementary step matrices (buffer)
        self.S: np.ndarray | None = None  # (m, 3, 6) world twists of the steps at q
        kind, scale = km.step_kind, km.step_scale
        act = np.nonzero(scale != 0.0)  # steps that move (padding and zero-pitch steps stay E4 forever)
        aj, as_ = act
        ak = kind[act]
        rot = ak >= 3
        flat = aj * 3 + as_  # index of the step in (m * 3)
        # index maps into the flat (m * 3 * 16) buffer of elementary matrices, fixed per model
        t, r = ~rot, rot
        self._t_flat = flat[t] * 16 + ak[t] * 4 + 3
        self._t_coord, self._t_scale = km.step_coord[act][t], scale[act][t]
        ri, rj = _AXIS_I[ak[r] - 3], _AXIS_J[ak[r] - 3]
        base = flat[r] * 16
        self._r_flat = np.concatenate((base + ri * 5, base + rj * 5, base + ri * 4 + rj, base + rj * 4 + ri))
        self._r_coord, self._r_scale = km.step_coord[act][r], scale[act][r]
        self._act_flat = flat  # (A,) active steps
        self._nsteps = int(as_.max()) + 1 if len(as_) else 0  # steps that move in some joint (1: all R/P)
        self._act_j, self._act_s = aj, as_
        self._act_a = km.ja[aj]
        self._act_Fa = km.Fa[aj]
        self._act_rot = rot[:, None]
        self._act_scale = scale[act][:, None]
        # flat gather of the step axis (column `kind % 3` of the rotation) from the (A, 4, 4) frames
        self._u_idx = np.arange(len(aj))[:, None] * 16 + np.arange(3)[None, :] * 4 + (ak % 3)[:, None]
        self._levels = []
        for child, par, jt in km.levels:
            rev = np.nonzero(~km.tree_forward[jt])[0]
            sign = np.where(km.tree_forward[jt], 1.0, -1.0)[:, None]
            self._levels.append((child, par, jt, rev if len(rev) else None, sign))
        self._chord_a, self._chord_b = km.ja[km.chords], km.jb[km.chords]
        pos = np.full(m * 3, -1, dtype=np.int64)
        pos[flat] = np.arange(len(flat))
        self._pair_act = pos[km.pair_joint * 3 + km.pair_step]  # (P,) active step of each pair
        self._pair_flat = km.pair_joint * 3 + km.pair_step
        keys = km.pair_loop * max(km.nq, 1) + km.pair_col
        self._pair_unique = len(np.unique(keys)) == len(keys)  # no two steps of a loop on one column (helical)
        # (L, P) sums pair terms per loop. Dense it is L x P: a 1,051-body ladder's 350 loops of up to 700 joints
        # (122,000 pairs) made 340 MB of zeros and 4 s of the rank-based count; sparse beyond a million entries
        P = len(km.pair_loop)
        if km.n_loops * P > 1_000_000:
            import scipy.sparse

            self._loop_pair = scipy.sparse.csr_matrix((np.asarray(km.pair_coef, float), (km.pair_loop, np.arange(P))),
                                                      shape=(km.n_loops, P))
        else:
            self._loop_pair = np.zeros((km.n_loops, P))
            self._loop_pair[km.pair_loop, np.arange(P)] = km.pair_coef
        self._clear()

    def _clear(self) -> None:
        self.S = None
        self._Sact = None  # (A, 6) world twists of the active steps
        self._B = self._C = None  # (L, 4, 4) oTb of each chord and its closure matrix
        self._G6 = self._G = None  # (L, 6, nq) twist matrix, (n_rows, nq) its kept rows
        self._fac = None  # factorisation of G[:, unknown]
        self._tw = None  # (qd, xi, brk) body twists and step brackets for rates qd


@dataclass
class PositionResult:
    """Outcome of a position solve: coordinates, whether the loops closed, and why not."""

    q: np.ndarray  # (nq,) coordinates (the last iterate when not converged)
    converged: bool
    residual: float  # max |loop residual|
    iterations: int
    rank: int  # rank of the Jacobian in the unknowns at the last linearisation
    sigma_ratio: float  # smallest / largest singular value among the unknowns (1 when no loop; estimate on the LU path)
    reason: str = ""  # why it did not converge ("" when it did)


def forward(ws: Workspace, q: np.ndarray) -> np.ndarray:
    """Evaluate joint transforms and body world poses at q into `ws`; returns the poses (n, 4, 4)."""
    km = ws.km
    q = np.array(q, dtype=float)
    ws.q = q
    ws._clear()
    if km.n_joints:
        E = ws._E
        flat = E.reshape(-1)
        flat[ws._t_flat] = q[ws._t_coord] * ws._t_scale
        a = q[ws._r_coord] * ws._r_scale
        c, s = np.cos(a), np.sin(a)
        flat[ws._r_flat] = np.concatenate((c, c, -s, s))
        ns, Mp = ws._nsteps, ws.Mpre
        if ns <= 1:  # only first steps move (revolute, prismatic): M = E0
            M = E[:, 0]
        else:
            Mp[:, 1] = E[:, 0]
            if ns == 2:
                M = Mp[:, 1] @ E[:, 1]
            else:
                np.matmul(Mp[:, 1], E[:, 1], out=Mp[:, 2])
                M = Mp[:, 2] @ E[:, 2]
        ws.J = km.Fa @ M @ km.Fb_inv
    T = km.design_pose.copy()
    for child, par, jt, rev, _ in ws._levels:
        rel = ws.J[jt]  # a copy (fancy index)
        if rev is not None:
            rel[rev] = _inv(rel[rev])
        T[child] = T[par] @ rel
    ws.T = T
    return T


def body_poses(km: KinematicModel, q: np.ndarray, ws: Workspace | None = None) -> np.ndarray:
    """World transforms (n_bodies, 4, 4) of every body at coordinates q (loops are not enforced)."""
    return forward(ws or Workspace(km), q).copy()


def _closure(ws: Workspace) -> tuple[np.ndarray, np.ndarray]:
    if ws._C is None:
        B = ws.T[ws._chord_b]
        ws._B, ws._C = B, _inv(B) @ ws.T[ws._chord_a] @ ws.J[ws.km.chords]
    return ws._B, ws._C


def _vee_antisym(X: np.ndarray) -> np.ndarray:
    return np.stack((X[..., 2, 1] - X[..., 1, 2], X[..., 0, 2] - X[..., 2, 0], X[..., 1, 0] - X[..., 0, 1]), -1)


# Flat (4x4 -> 16) indices of the residual entries: translation C[:3, 3] and vee(R - R^T) = hi - lo
# (lo of a translation row is C[3, 0], which is 0 in every homogeneous transform).
_RES_HI = np.array([3, 7, 11, 9, 2, 4])
_RES_LO = np.array([12, 12, 12, 6, 8, 1])


def _lin(C: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Residual entries `rows` (of 6) of closure matrices C (L, 4, 4): translation and the Rodrigues vector.

    vee(R - R^T) / (1 + tr R) = tan(theta/2) axis vanishes only at R = E3 (the bare antisymmetric part
    would also vanish at a half-turn, a false closure Newton can be drawn to)."""
    Cf = C.reshape(len(C), 16)
    r = Cf[:, _RES_HI[rows]] - Cf[:, _RES_LO[rows]]
    rot = rows >= 3
    den = np.maximum(1.0 + Cf[:, 0] + Cf[:, 5] + Cf[:, 10], _MIN_DEN)
    r[:, rot] /= den[:, None]
    return r


def loop_residual(ws: Workspace) -> np.ndarray:
    """Loop-closure residual (n_rows,) at the last `forward` evaluation."""
    km = ws.km
    if not km.n_loops:
        return np.zeros(0)
    _, C = _closure(ws)
    return _lin(C, km.rows).ravel()


def _active_twists(ws: Workspace) -> np.ndarray:
    """(A, 6) world twists of the moving steps: S = scale * (p x u, u) for rotations, (u, 0) for translations."""
    if ws._Sact is None:
        W = ws.T[ws._act_a] @ ws._act_Fa  # world frame just before each step
        if ws._nsteps > 1:
            W = W @ ws.Mpre[ws._act_j, ws._act_s]
        u = W.reshape(-1)[ws._u_idx]  # step axis, world
        p = W[:, :3, 3]
        rot = ws._act_rot
        S = np.concatenate((np.where(rot, _cross(p, u), u), u * rot), axis=1)
        S *= ws._act_scale
        ws._Sact = S
    return ws._Sact


def _step_twists(ws: Workspace) -> np.ndarray:
    """(m, 3, 6) world twists of every step (0 for padding)."""
    if ws.S is None:
        km = ws.km
        S = np.zeros((km.n_joints * 3, 6))
        S[ws._act_flat] = _active_twists(ws)
        ws.S = S.reshape(km.n_joints, 3, 6)
    return ws.S


def _twist_matrix(ws: Workspace) -> tuple[np.ndarray, np.ndarray]:
    """(L, 6, nq) world twist of each loop's closing gap per unit rate, and its kept rows (n_rows, nq)."""
    if ws._G is None:
        km = ws.km
        G6 = np.zeros((km.n_loops, 6, km.nq))
        if len(km.pair_loop):
            vals = _active_twists(ws)[ws._pair_act] * km.pair_coef[:, None]
            if ws._pair_unique:
                G6[km.pair_loop, :, km.pair_col] = vals
            else:
                np.add.at(G6, (km.pair_loop[:, None], np.arange(6)[None, :], km.pair_col[:, None]), vals)
        ws._G6, ws._G = G6, G6[:, km.rows, :].reshape(km.n_rows, km.nq)
    return ws._G6, ws._G


def loop_jacobian(ws: Workspace) -> np.ndarray:
    """Exact derivative (n_rows, nq) of `loop_residual` with respect to all coordinates."""
    km = ws.km
    if not km.n_loops or not len(km.pair_loop):
        return np.zeros((km.n_rows, km.nq))
    B, C = _closure(ws)
    G6, _ = _twist_matrix(ws)
    # A world twist (v, w) of a step changes C by B^-1 S^ B C: in frame b, w1 = RB^T w, v1 = RB^T (v - pB x w);
    # the translation of C moves by v1 - c x w1 and the Rodrigues vector vee(R - R^T) / (1 + tr R) by N w1, with
    # vee(w1^ R - (w1^ R)^T) = (tr R E3 - R) w1 and tr(w1^ R) = -vee(R - R^T) . w1 (quotient rule; the clamp
    # makes the denominator constant below _MIN_DEN). One 6x6 map per loop, applied to the twist matrix.
    RBt = np.swapaxes(B[:, :3, :3], 1, 2)
    R, c = C[:, :3, :3], C[:, :3, 3]
    trR = R[:, 0, 0] + R[:, 1, 1] + R[:, 2, 2]
    tr = 1.0 + trR
    den = np.maximum(tr, _MIN_DEN)
    a = _vee_antisym(R)
    N = (trR[:, None, None] * np.eye(3) - R) / den[:, None, None]
    N += (np.where(tr > _MIN_DEN, 1.0, 0.0) / den**2)[:, None, None] * (a[:, :, None] * a[:, None, :])
    Mx = np.zeros((km.n_loops, 6, 6))
    Mx[:, :3, :3] = RBt
    Mx[:, :3, 3:] = -(RBt @ _skew(B[:, :3, 3])) - _skew(c) @ RBt
    Mx[:, 3:, 3:] = N @ RBt
    return (Mx[:, km.rows, :] @ G6).reshape(km.n_rows, km.nq)


def twist_jacobian(ws: Workspace) -> np.ndarray:
    """Velocity-level constraint matrix (n_rows, nq): world twist of each loop's closing gap per coordinate."""
    km = ws.km
    if not km.n_loops or not len(km.pair_loop):
        return np.zeros((km.n_rows, km.nq))
    return _twist_matrix(ws)[1].copy()


def _factor(A: np.ndarray) -> tuple:
    """Factorise A for `_apply`: (factors, rank, sigma_ratio).

    Square and well conditioned (LAPACK's 1-norm estimate rcond_1 > n * _LU_RCOND, so sigma_min / sigma_max >=
    rcond_1 / n stays well above RANK_RTOL): LU. Otherwise, or when not square, the rank-revealing SVD whose
    truncation gives the minimum-norm least-squares solution (idle freedoms, redundant loop rows)."""
    n, k = A.shape
    if n == 0 or k == 0:
        return ("zero", k), 0, 1.0 if k == 0 else 0.0
    if n == k:
        lu, piv, info = _getrf(A)
        if info == 0:
            rcond, info = _gecon(lu, float(np.abs(A).sum(axis=0).max()))
            if info == 0 and rcond > n * _LU_RCOND:
                return ("lu", lu, piv), k, float(rcond)
    try:
        U, s, Vt = np.linalg.svd(A, full_matrices=False)
    except np.linalg.LinAlgError:  # non-finite entries: no step rather than NaNs
        return ("zero", k), 0, 0.0
    if not s[0] > 0.0:
        return ("zero", k), 0, 0.0
    r = int((s > RANK_RTOL * s[0]).sum())
    return ("svd", U[:, :r], s[:r], Vt[:r]), r, float(s[-1] / s[0])


def _apply(fac: tuple, b: np.ndarray) -> np.ndarray:
    """Solution of the factorised system for right-hand side b (n,) (minimum norm on the SVD path)."""
    if fac[0] == "lu":
        return _getrs(fac[1], fac[2], b)[0]
    if fac[0] == "svd":
        _, U, s, Vt = fac
        return Vt.T @ ((U.T @ b) / s)
    return np.zeros(fac[1])


def _lstsq(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, int, float]:
    """Solution (minimum-norm least squares when rank deficient), the rank and sigma_min / sigma_max (estimate on LU)."""
    fac, rank, ratio = _factor(A)
    return _apply(fac, b), rank, ratio


def _velocity_factor(ws: Workspace) -> tuple:
    if ws._fac is None:
        ws._fac = _factor(_twist_matrix(ws)[1][:, ws.km.unknown])
    return ws._fac


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
            if km.n_loops and (C[:, 0, 0] + C[:, 1, 1] + C[:, 2, 2]).min() < 1.0:
                return PositionResult(q, False, nr, it, rank, ratio, "converged to a half-turn, not a closed loop")
            return PositionResult(q, True, nr, it, rank, ratio)
        if it == max_iter:
            break
        fac, rank, ratio = _factor(loop_jacobian(ws)[:, U])
        dx = _apply(fac, -r)
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


def _twists(ws: Workspace, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cached (xi, brk): body twists (n, 6) for rates qd and per-step brackets [xi_W, S] qd (m, 3, 6)."""
    tw = ws._tw
    if tw is not None and np.array_equal(tw[0], qd):
        return tw[1], tw[2]
    km = ws.km
    S = _step_twists(ws)
    rate = qd[km.step_coord]  # (m, 3); padding steps have S = 0
    contrib = S * rate[..., None]  # (m, 3, 6)
    xi = np.zeros((km.n_bodies, 6))
    for child, par, jt, _, sign in ws._levels:
        xi[child] = xi[par] + sign * contrib[jt].sum(axis=1)
    # twist of the frame just before each step: body a's twist plus the joint's earlier steps
    frame = xi[km.ja][:, None, :] + np.cumsum(contrib, axis=1) - contrib
    brk = _bracket(frame, S) * rate[..., None]
    ws._tw = (np.array(qd, dtype=float), xi, brk)
    return xi, brk


def _accelerations(ws: Workspace, brk: np.ndarray, qdd: np.ndarray) -> np.ndarray:
    km = ws.km
    acc = _step_twists(ws) * qdd[km.step_coord][..., None] + brk
    alpha = np.zeros((km.n_bodies, 6))
    for child, par, jt, _, sign in ws._levels:
        alpha[child] = alpha[par] + sign * acc[jt].sum(axis=1)
    return alpha


def body_twists(ws: Workspace, qd: np.ndarray, qdd: np.ndarray | None = None):
    """World twists (n, 6) of the bodies at the last `forward` for rates qd, and their derivatives for qdd.

    Also returns the per-step frame twists and brackets, so loop bias terms reuse them:
    (xi, alpha_or_None, step_twist_S, bracket_terms) where bracket_terms[j, s] = [xi_W, S_js] qd_js."""
    xi, brk = _twists(ws, qd)
    alpha = None if qdd is None else _accelerations(ws, brk, qdd)
    return xi.copy(), alpha, _step_twists(ws).copy(), brk.copy()


def _bracket(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Lie bracket [a, b] of twists (v, w): (w_a x v_b - w_b x v_a, w_a x w_b)."""
    wa = a[..., None, 3:]
    ab = _cross(wa, b.reshape(b.shape[:-1] + (2, 3)))  # (w_a x v_b, w_a x w_b) in one product
    ab[..., 0, :] -= _cross(b[..., 3:], a[..., :3])
    return ab.reshape(b.shape)


def solve_velocities(ws: Workspace, qd_driven: np.ndarray) -> tuple[np.ndarray, int]:
    """Joint rates (nq,) at the solved configuration in `ws` from the driven rates (min-norm for idle freedoms)."""
    km = ws.km
    qd = np.zeros(km.nq)
    qd[km.driven] = qd_driven
    if not km.n_loops or not len(km.unknown):
        return qd, 0
    G = _twist_matrix(ws)[1]
    fac, rank, _ = _velocity_factor(ws)
    qd[km.unknown] = _apply(fac, -(G[:, km.driven] @ qd[km.driven]))
    return qd, rank


def loop_bias(ws: Workspace, qd: np.ndarray) -> np.ndarray:
    """The loop equations' term quadratic in the rates (n_rows,): along a motion q(s) of the configuration in `ws`
    with q' = qd, d/ds (G q') = G q'' + loop_bias(qd) (the accelerations solve G qdd = -loop_bias(qd))."""
    km = ws.km
    if not km.n_loops or not len(km.pair_loop):
        return np.zeros(km.n_rows)
    _, brk = _twists(ws, qd)
    gamma = np.asarray(ws._loop_pair @ brk.reshape(-1, 6)[ws._pair_flat])  # (L, 6): sum of the loop's bracket terms
    return gamma[:, km.rows].ravel()


def loop_bias_forms(ws: Workspace, V: np.ndarray, loops: np.ndarray | None = None) -> np.ndarray:
    """(n_rows, k, k) symmetric: the bilinear forms of `loop_bias` on the rates V (k, nq),
    loop_bias(x @ V) = out @ x @ x for every x (k,), at the configuration in `ws` (one batched evaluation); with
    `loops`, the rows of those loops only (the others are left zero)."""
    km = ws.km
    k = len(V)
    out = np.zeros((km.n_rows, k, k))
    if not km.n_loops or not len(km.pair_loop) or not k:
        return out
    S = _step_twists(ws)  # (m, 3, 6)
    rate = V[:, km.step_coord]  # (k, m, 3); padding steps have S = 0
    contrib = S[None] * rate[..., None]  # (k, m, 3, 6)
    xi = np.zeros((k, km.n_bodies, 6))
    for child, par, jt, _, sign in ws._levels:
        xi[:, child] = xi[:, par] + sign * contrib[:, jt].sum(axis=2)
    frame = xi[:, km.ja][:, :, None, :] + np.cumsum(contrib, axis=2) - contrib  # as in _twists, per rate vector
    P = ws._pair_flat
    Fp = frame.reshape(k, -1, 6)[:, P]  # (k, P, 6): the frame twist before each pair's step, per rate vector
    X = _bracket(Fp, np.broadcast_to(S.reshape(-1, 6)[P], Fp.shape))  # (k, P, 6)
    R = rate.reshape(k, -1)[:, P]  # (k, P): each pair's rate
    X *= km.pair_coef[None, :, None]
    G = np.zeros((km.n_loops, 6, k, k))  # the bias' bracket terms per loop, unsymmetrised
    for loop in range(km.n_loops) if loops is None else loops:
        p = np.flatnonzero(km.pair_loop == loop)
        G[loop] = np.einsum("apr,bp->rab", X[:, p], R[:, p])
    G = 0.5 * (G + np.swapaxes(G, 2, 3))
    return G[:, km.rows].reshape(km.n_rows, k, k)


def solve_accelerations(ws: Workspace, qd: np.ndarray, qdd_driven: np.ndarray) -> np.ndarray:
    """Joint accelerations (nq,) from the differentiated loop equations at the solved configuration and rates."""
    km = ws.km
    qdd = np.zeros(km.nq)
    qdd[km.driven] = qdd_driven
    if not km.n_loops or not len(km.unknown):
        return qdd
    G = _twist_matrix(ws)[1]
    bias = loop_bias(ws, qd) + G[:, km.driven] @ qdd[km.driven]
    fac, _, _ = _velocity_factor(ws)
    qdd[km.unknown] = _apply(fac, -bias)
    return qdd


def point_positions(ws: Workspace) -> np.ndarray:
    """World positions (n_points, 3) of the named points at the last `forward`."""
    km = ws.km
    T = ws.T[km.point_body]
    return (T[:, :3, :3] @ km.point_local[:, :, None])[:, :, 0] + T[:, :3, 3]


def point_kinematics(ws: Workspace, qd: np.ndarray, qdd: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """World positions, velocities and accelerations (each (n_points, 3)) of the named points."""
    km = ws.km
    p = point_positions(ws)
    xi, brk = _twists(ws, qd)
    alpha = _accelerations(ws, brk, qdd)
    x, a = xi[km.point_body], alpha[km.point_body]
    v = _cross(x[:, 3:], p) + x[:, :3]
    acc = _cross(a[:, 3:], p) + a[:, :3] + _cross(x[:, 3:], v)
    return p, v, acc
