"""Compiled (numba) kernels of the batched pair evaluation: end-of-step poses, and the pair rows with their local
Jacobians and impulse wrenches.

These are the rows of core.contact.pair (its module docstring states them and their unknowns), written as loops over
the pairs of a batch with small fixed-size arithmetic per pair.  The batched numpy form spent its time in the ~150
numpy calls per evaluation on arrays of a few dozen pairs (the per-call overhead, not the arithmetic); compiled, an
evaluation of a 27-sphere pile's 80 pairs takes tens of microseconds.  The shapes' inequalities are evaluated here
too (shape_rows), from the rows each shape gives (core.shapes.inequalities: a kind and its parameters per row), for
all the pairs of a batch in one call: a mixed pile's many batches of few pairs spent over half of its step in the
numpy evaluation of the shapes, one call per distinct shape.  A step evaluates each batch in one call (batch_rows:
the gathers, pair_batch's end poses, shape rows and pair terms, then the body rows, body_blocks).

tests/core/contact/test_stepper.py checks these rows against the one-pair numpy forms (core.contact.pair.eval_pair;
the explicit method's explicit_terms against core.contact.explicit._eval_explicit) and the Jacobians against finite
differences.  Compiled on first use and cached (numba cache=True) where numba's locators put it: NUMBA_CACHE_DIR,
else __pycache__ beside this file when writable, else numba's per-user cache folder (core.contact.compiling).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# the kernels the step calls (shape_rows, end_poses and pair_terms are called inside pair_batch, and it inside
# batch_rows; eval_pairs calls pair_batch)
__all__ = ["batch_rows", "quat_matrices", "broad_bounds", "body_rows", "advance_poses", "explicit_terms",
           "contact_frames", "body_blocks", "scatter_add", "scale_blocks", "eliminate", "eliminate_into",
           "finish_schur", "all_finite", "eliminate_rhs", "back_substitute", "lm_eliminate", "lm_eliminate_rhs",
           "lm_back_substitute", "fb_reformulate", "natural_parts", "overlap_depth", "geometry_rows", "closest_newton"]


def _cache_folder_probe():
    """(Only its source file matters: numba's cache locators are asked where they would cache this module's code.)"""


def _cacheable() -> bool:
    """Whether numba can cache this module's kernels: one of its locators finds a writable folder (NUMBA_CACHE_DIR,
    __pycache__ beside this file, the per-user cache folder). With none, `njit(cache=True)` raised RuntimeError
    ("cannot cache function ...: no locator available") when this module was imported (a read-only install with a
    read-only home): the kernels are then compiled in every process instead."""
    try:
        from numba.core.caching import FunctionCache
    except ImportError:  # (numba's internals moved: let njit decide, as before)
        return True
    try:
        FunctionCache(_cache_folder_probe)
    except RuntimeError:
        return False
    except Exception:  # noqa: BLE001 - numba's internals changed: let njit decide, as before
        return True
    return True


CACHED = _cacheable()  # whether the kernels are cached on disk (core.contact.compiling)
_CACHE = CACHED


@njit(cache=_CACHE)
def _sk(v, S):
    """S = [v]x."""
    S[0, 0] = 0.0
    S[0, 1] = -v[2]
    S[0, 2] = v[1]
    S[1, 0] = v[2]
    S[1, 1] = 0.0
    S[1, 2] = -v[0]
    S[2, 0] = -v[1]
    S[2, 1] = v[0]
    S[2, 2] = 0.0


@njit(cache=_CACHE)
def _cross(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit(cache=_CACHE)
def _mm(A, B, out):
    """out = A @ B for A (3, 3), B (3, n)."""
    n = B.shape[1]
    for i in range(3):
        for c in range(n):
            out[i, c] = A[i, 0] * B[0, c] + A[i, 1] * B[1, c] + A[i, 2] * B[2, c]


@njit(cache=_CACHE)
def _mm_add(A, B, out, sign):
    """out += sign * A @ B for A (3, 3), B (3, n)."""
    n = B.shape[1]
    for i in range(3):
        for c in range(n):
            out[i, c] += sign * (A[i, 0] * B[0, c] + A[i, 1] * B[1, c] + A[i, 2] * B[2, c])


@njit(cache=_CACHE)
def _fill(A, x):
    for i in range(A.shape[0]):
        for c in range(A.shape[1]):
            A[i, c] = x


@njit(cache=_CACHE)
def _copy(A, out):
    for i in range(A.shape[0]):
        for c in range(A.shape[1]):
            out[i, c] = A[i, c]


@njit(cache=_CACHE)
def _add_at(out, c0, B, sign):
    """out[:, c0:c0 + n] += sign * B for B (3, n)."""
    for i in range(3):
        for c in range(B.shape[1]):
            out[i, c0 + c] += sign * B[i, c]


@njit(cache=_CACHE)
def _cayley_T(w, h, T):
    """T = cayley_jacobian(w, h) = (h / D)(I + [u]x), u = h w / 2, D = 1 + |u|^2."""
    ux, uy, uz = 0.5 * h * w[0], 0.5 * h * w[1], 0.5 * h * w[2]
    f = h / (1.0 + ux * ux + uy * uy + uz * uz)
    T[0, 0] = f
    T[0, 1] = -uz * f
    T[0, 2] = uy * f
    T[1, 0] = uz * f
    T[1, 1] = f
    T[1, 2] = -ux * f
    T[2, 0] = -uy * f
    T[2, 1] = ux * f
    T[2, 2] = f


@njit(cache=_CACHE)
def quat_matrices(q):
    """Rotation matrices (N, 3, 3) of quaternions (N, 4) (w, x, y, z), each normalised first
    (core.transforms.quat_to_matrix, without numpy's per-call overhead on a few bodies)."""
    N = q.shape[0]
    R = np.empty((N, 3, 3))
    for i in range(N):
        _quat_matrix(q[i], R[i])
    return R


@njit(cache=_CACHE)
def _quat_matrix(q, R):
    """R = the rotation matrix of the quaternion q (w, x, y, z), normalised first."""
    nq = np.sqrt(q[0] ** 2 + q[1] ** 2 + q[2] ** 2 + q[3] ** 2)
    w, x, y, z = q[0] / nq, q[1] / nq, q[2] / nq, q[3] / nq
    R[0, 0] = 1 - 2 * (y * y + z * z)
    R[0, 1] = 2 * (x * y - w * z)
    R[0, 2] = 2 * (x * z + w * y)
    R[1, 0] = 2 * (x * y + w * z)
    R[1, 1] = 1 - 2 * (x * x + z * z)
    R[1, 2] = 2 * (y * z - w * x)
    R[2, 0] = 2 * (x * z - w * y)
    R[2, 1] = 2 * (y * z + w * x)
    R[2, 2] = 1 - 2 * (x * x + y * y)


@njit(cache=_CACHE)
def contact_frames(q, pos, vel, ang, ia, ib, cB, kind_b, par_b, e_aux, m_ref, Z, mu_i, pn_i, pf_i, nf, e_t, e_o, e_r,
                   dynamic, impulses, h):
    """Per pair after a step of size h: the unit normal n = Rb G^T mu_b / |.| (from B towards A), the normal impulse,
    the friction impulse vector and the torsional impulse (in the step's tangent frame from e_aux, as
    core.contact.pair.tangent_frame), and the slip (tangential velocity of A's point a1 relative to B's motion, as the
    friction rows measure it: core.contact.pair.carried_slip; B's part only for a dynamic B).  q, pos, vel, ang:
    every body's end-of-step quaternion, position, velocity and angular velocity; ia, ib (P,) the pairs' bodies; G
    (k, 3) are B's gradients (rows kind_b, par_b (P, k, ...), body frame offset cB) at its closest point; Z (P, size)
    the pair unknowns: a1, a2, B's multipliers mu_b from column mu_i, pn at pn_i and the friction unknowns from pf_i
    (impulses: q_k = p_k / (m_ref e_k), the Alart-Curnier form; else fractions of pn, the normalised form)."""
    P = Z.shape[0]
    k = kind_b.shape[1]
    n = np.empty((P, 3))
    pf = np.zeros((P, 3))
    pr = np.zeros(P)
    pn = np.empty(P)
    slip = np.empty((P, 3))
    Rb = np.empty((P, 3, 3))
    G = np.empty((1, k, 3))
    fb = np.empty((1, k))
    no_h = np.zeros((0, 0, 3, 3))
    g = np.empty(3)
    t = np.empty(3)
    o = np.empty(3)
    v = np.empty(3)
    c = np.empty(3)
    dA = np.empty(3)
    dB = np.empty(3)
    c3 = np.empty((2, 3))
    CS = np.empty((11, 3, 3))
    for p in range(P):
        a, b = ia[p], ib[p]
        _quat_matrix(q[b], Rb[p])
        for i in range(3):
            dA[i] = Z[p, i] - pos[a, i]
            dB[i] = Z[p, 3 + i] - pos[b, i]
        y0 = Rb[p, 0, 0] * dB[0] + Rb[p, 1, 0] * dB[1] + Rb[p, 2, 0] * dB[2] + cB[p, 0]
        y1 = Rb[p, 0, 1] * dB[0] + Rb[p, 1, 1] * dB[1] + Rb[p, 2, 1] * dB[2] + cB[p, 1]
        y2 = Rb[p, 0, 2] * dB[0] + Rb[p, 1, 2] * dB[1] + Rb[p, 2, 2] * dB[2] + cB[p, 2]
        for m in range(k):
            _shape_row(kind_b[p, m], par_b[p, m], y0, y1, y2, fb, G, no_h, 0, m, False)
        for j in range(3):
            g[j] = 0.0
            for m in range(k):
                g[j] += G[0, m, j] * Z[p, mu_i + m]
        for i in range(3):
            n[p, i] = Rb[p, i, 0] * g[0] + Rb[p, i, 1] * g[1] + Rb[p, i, 2] * g[2]
        ln = np.sqrt(n[p, 0] ** 2 + n[p, 1] ** 2 + n[p, 2] ** 2)
        for i in range(3):
            n[p, i] /= ln
        pn[p] = m_ref[p] * Z[p, pn_i]
        if nf:
            _cross(e_aux[p], n[p], t)
            lt = np.sqrt(t[0] ** 2 + t[1] ** 2 + t[2] ** 2)
            for i in range(3):
                t[i] /= lt
            _cross(n[p], t, o)
            f = m_ref[p] if impulses else pn[p]
            for i in range(3):
                pf[p, i] = f * (e_t * Z[p, pf_i] * t[i] + e_o * Z[p, pf_i + 1] * o[i])
            if nf == 3:
                pr[p] = f * e_r * Z[p, pf_i + 2]
        _cross(ang[a], dA, c)
        for i in range(3):
            v[i] = vel[a, i] + c[i]
        if dynamic[b]:
            _cross(ang[b], dB, c)
            for i in range(3):
                v[i] -= vel[b, i] + c[i]
            _carried_slip(ang[a], ang[b], dA, dB, h, c, CS, False, c3)
            for i in range(3):
                v[i] += c[i]
        vn = v[0] * n[p, 0] + v[1] * n[p, 1] + v[2] * n[p, 2]
        for i in range(3):
            slip[p, i] = v[i] - vn * n[p, i]
    return n, pn, pf, pr, slip


@njit(cache=_CACHE)
def _times(big, t):
    """big * t, and 0 wherever t is 0 (an overflowed power far outside times a zero factor; inequalities._times)."""
    return 0.0 if t == 0.0 else big * t


@njit(cache=_CACHE)
def _sign(u):
    return 1.0 if u > 0.0 else (-1.0 if u < 0.0 else 0.0)


@njit(cache=_CACHE)
def shape_rows(kind, par, y, hessians):
    """Values (P, m), gradients (P, m, 3) and, with hessians, Hessians (P, m, 3, 3) (else empty (0, 0, 3, 3)) of the
    inequality rows kind (P, m), par (P, m, ROW_PARAMS) of P shapes at their body points y (P, 3): the formulas of
    core.shapes.inequalities (Planes, Quadric, Superquadric), row by row."""
    P, m = kind.shape
    F = np.empty((P, m))
    G = np.empty((P, m, 3))
    H = np.zeros((P, m, 3, 3)) if hessians else np.zeros((0, 0, 3, 3))
    for p in range(P):
        for i in range(m):
            _shape_row(kind[p, i], par[p, i], y[p, 0], y[p, 1], y[p, 2], F, G, H, p, i, hessians)
    return F, G, H


@njit(cache=_CACHE)
def _shape_row(kd, q, x0, x1, x2, F, G, H, p, i, hessians):
    """Row i of shape p (kind kd, parameters q) at the body point (x0, x1, x2): F[p, i], G[p, i] and, with hessians,
    H[p, i] (zero on entry)."""
    if kd == 0:  # plane n . x - d
        F[p, i] = x0 * q[0] + x1 * q[1] + x2 * q[2] - q[3]
        for j in range(3):
            G[p, i, j] = q[j]
    elif kd == 1:  # quadric (rho/2)(sum w x^2 - 1)
        w0, w1, w2, rho = q[0], q[1], q[2], q[3]
        F[p, i] = 0.5 * rho * (x0 * x0 * w0 + x1 * x1 * w1 + x2 * x2 * w2 - 1.0)
        G[p, i, 0] = rho * w0 * x0
        G[p, i, 1] = rho * w1 * x1
        G[p, i, 2] = rho * w2 * x2
        if hessians:
            H[p, i, 0, 0] = rho * w0
            H[p, i, 1, 1] = rho * w1
            H[p, i, 2, 2] = rho * w2
    else:  # superquadric (rho/e1)(F - 1), F = (|x/a|^e2 + |y/b|^e2)^(e1/e2) + |z/c|^e1
        a0, a1, a2 = q[0], q[1], q[2]
        e1, e2, rho = q[3], q[4], q[5]
        u0, u1, u2 = x0 / a0, x1 / a1, x2 / a2
        s0, s1, s2 = abs(u0), abs(u1), abs(u2)
        big = max(s0, s1)
        safe = big if big > 0.0 else 1.0
        n = big * ((s0 / safe) ** e2 + (s1 / safe) ** e2) ** (1.0 / e2)
        F[p, i] = (rho / e1) * (n ** e1 + s2 ** e1 - 1.0)
        r0 = s0 / n if n > 0.0 else 0.0
        r1 = s1 / n if n > 0.0 else 0.0
        g0, g1, g2 = _sign(u0), _sign(u1), _sign(u2)
        nq1 = n ** (e1 - 1.0)
        G[p, i, 0] = rho * _times(nq1, r0 ** (e2 - 1.0) * g0) / a0
        G[p, i, 1] = rho * _times(nq1, r1 ** (e2 - 1.0) * g1) / a1
        G[p, i, 2] = rho * (s2 ** (e1 - 1.0) * g2) / a2
        if hessians:
            nq2 = n ** (e1 - 2.0)
            H[p, i, 0, 0] = _times(nq2, (e1 - 1.0) * r0 ** (2 * e2 - 2) + (e2 - 1.0) * (
                r0 ** (e2 - 2) - r0 ** (2 * e2 - 2))) * (rho / (a0 * a0))
            H[p, i, 1, 1] = _times(nq2, (e1 - 1.0) * r1 ** (2 * e2 - 2) + (e2 - 1.0) * (
                r1 ** (e2 - 2) - r1 ** (2 * e2 - 2))) * (rho / (a1 * a1))
            h01 = _times(nq2, (e1 - e2) * (r0 * r1) ** (e2 - 1.0) * g0 * g1) * (rho / (a0 * a1))
            H[p, i, 0, 1] = h01
            H[p, i, 1, 0] = h01
            H[p, i, 2, 2] = (e1 - 1.0) * s2 ** (e1 - 2.0) * (rho / (a2 * a2))


@njit(cache=_CACHE)
def end_poses(h, R0, p0, c, v, w, a):
    """End-of-step rotations R = cayley(h w / 2) R0 (P, 3, 3), offsets d = a - (p0 + h v) of the points a from the
    centres (P, 3) and the points in the body frames y = R^T d + c (P, 3)."""
    P = R0.shape[0]
    R = np.empty((P, 3, 3))
    d = np.empty((P, 3))
    y = np.empty((P, 3))
    C = np.empty((3, 3))
    for p in range(P):
        ux, uy, uz = 0.5 * h * w[p, 0], 0.5 * h * w[p, 1], 0.5 * h * w[p, 2]
        uu = ux * ux + uy * uy + uz * uz
        al = 1.0 - uu
        inv = 1.0 / (1.0 + uu)
        C[0, 0] = (al + 2 * ux * ux) * inv
        C[0, 1] = 2 * (ux * uy - uz) * inv
        C[0, 2] = 2 * (ux * uz + uy) * inv
        C[1, 0] = 2 * (ux * uy + uz) * inv
        C[1, 1] = (al + 2 * uy * uy) * inv
        C[1, 2] = 2 * (uy * uz - ux) * inv
        C[2, 0] = 2 * (ux * uz - uy) * inv
        C[2, 1] = 2 * (uy * uz + ux) * inv
        C[2, 2] = (al + 2 * uz * uz) * inv
        for i in range(3):
            for j in range(3):
                R[p, i, j] = C[i, 0] * R0[p, 0, j] + C[i, 1] * R0[p, 1, j] + C[i, 2] * R0[p, 2, j]
        for i in range(3):
            d[p, i] = a[p, i] - (p0[p, i] + h * v[p, i])
        for j in range(3):
            y[p, j] = R[p, 0, j] * d[p, 0] + R[p, 1, j] * d[p, 1] + R[p, 2, j] * d[p, 2] + c[p, j]
    return R, d, y


@njit(cache=_CACHE)
def pair_batch(m, k, nf, h, mu_f, e_t, e_o, e_r, pin, m_ref, e_aux, kind_a, par_a, RA0, pA0, cA, vA, wA,
               kind_b, par_b, RB0, pB0, cB, vB, wB, z, jac, rho):
    """pair_terms of a batch from the start-of-step poses: the end poses of both bodies (end_poses), their shapes'
    rows at the closest points (shape_rows), then the rows, Jacobians and wrenches; one call per batch (a mixed pile
    has a dozen batches of a few pairs, whose five calls each spent more in the calling than in the arithmetic)."""
    RA, d1, yA = end_poses(h, RA0, pA0, cA, vA, wA, z[:, 0:3])
    RB, d2, yB = end_poses(h, RB0, pB0, cB, vB, wB, z[:, 3:6])
    FA, dFA, HFA = shape_rows(kind_a, par_a, yA, jac)
    GB, dGB, HGB = shape_rows(kind_b, par_b, yB, jac)
    return pair_terms(m, k, nf, h, mu_f, e_t, e_o, e_r, pin, m_ref, e_aux, RA, d1, vA, wA, RB, d2, vB, wB,
                      FA, dFA, HFA, GB, dGB, HGB, z, jac, rho)


@njit(cache=_CACHE)
def _world_normal(p, R, dF, z, off, N, n):
    """One body's side of pair p's closest-point rows: the world gradients N = R dF^T (3, m) of its inequality rows
    and the normal n = N z[p, off:off + m] (the multipliers)."""
    for i in range(3):
        acc = 0.0
        for j in range(N.shape[1]):
            g = R[p, i, 0] * dF[p, j, 0] + R[p, i, 1] * dF[p, j, 1] + R[p, i, 2] * dF[p, j, 2]
            N[i, j] = g
            acc += g * z[p, off + j]
        n[i] = acc


@njit(cache=_CACHE)
def _kkt_rows(p, RA, dFA, FA, RB, dGB, GB, z, NA, NB, nA, nB, r):
    """The closest-point (KKT) rows r[p, 0:7 + m + k] of pair p (core.contact.pair: nA + nB, a2 - a1 - s nA, -f(a1),
    -g(a2), (|nA|^2 - 1) / 2) from its shapes' rows at a1 and a2 (values FA, GB; gradients dFA, dGB in the body
    frames) and rotations RA, RB; also the world gradients NA = RA dFA^T (3, m), NB and normals nA = NA lam, nB =
    NB mu, for the caller's Jacobian (geometry_rows, pair_terms)."""
    m, k = NA.shape[1], NB.shape[1]
    ilam, imu, i_s = 6, 6 + m, 6 + m + k
    s = z[p, i_s]
    _world_normal(p, RA, dFA, z, ilam, NA, nA)
    _world_normal(p, RB, dGB, z, imu, NB, nB)
    for i in range(3):
        r[p, i] = nA[i] + nB[i]
        r[p, 3 + i] = z[p, 3 + i] - z[p, i] - s * nA[i]
    for j in range(m):
        r[p, ilam + j] = -FA[p, j]
    for j in range(k):
        r[p, imu + j] = -GB[p, j]
    r[p, i_s] = 0.5 * (nA[0] * nA[0] + nA[1] * nA[1] + nA[2] * nA[2] - 1.0)


@njit(cache=_CACHE)
def _world_hessian(R, H, w, HL, out):
    """out = R (sum_q w_q H_q) R^T: a shape's weighted inequality Hessians (body frame, H (m, 3, 3)) in world axes."""
    for i in range(3):
        for j in range(3):
            acc = 0.0
            for q in range(w.shape[0]):
                acc += w[q] * H[q, i, j]
            HL[i, j] = acc
    for i in range(3):
        for j in range(3):
            acc = 0.0
            for a in range(3):
                for b in range(3):
                    acc += R[i, a] * HL[a, b] * R[j, b]
            out[i, j] = acc


@njit(cache=_CACHE)
def geometry_rows(kind_a, par_a, RA, pA, cA, kind_b, par_b, RB, pB, cB, z, jac):
    """The closest-point (KKT) rows of P pairs at fixed poses (RA (P, 3, 3), pA, cA (P, 3), likewise B) and, with
    jac, their Jacobians in the geometric unknowns z (P, 7 + m + k) = (a1, a2, lam, mu, s): the rows of
    core.contact.pair.eval_geometry, one call for a batch (the explicit method's closest-point queries).  Returns
    r (P, ng) and J (P, ng, ng) (empty (P, 0, 0) without jac)."""
    P = z.shape[0]
    m, k = kind_a.shape[1], kind_b.shape[1]
    ng = 7 + m + k
    ilam, imu, i_s = 6, 6 + m, 6 + m + k
    yA = np.empty((P, 3))
    yB = np.empty((P, 3))
    for p in range(P):
        for j in range(3):
            yA[p, j] = (RA[p, 0, j] * (z[p, 0] - pA[p, 0]) + RA[p, 1, j] * (z[p, 1] - pA[p, 1])
                        + RA[p, 2, j] * (z[p, 2] - pA[p, 2]) + cA[p, j])
            yB[p, j] = (RB[p, 0, j] * (z[p, 3] - pB[p, 0]) + RB[p, 1, j] * (z[p, 4] - pB[p, 1])
                        + RB[p, 2, j] * (z[p, 5] - pB[p, 2]) + cB[p, j])
    FA, dFA, HFA = shape_rows(kind_a, par_a, yA, jac)
    GB, dGB, HGB = shape_rows(kind_b, par_b, yB, jac)
    r = np.empty((P, ng))
    J = np.zeros((P, ng, ng)) if jac else np.zeros((P, 0, 0))
    NA = np.empty((3, m))
    NB = np.empty((3, k))
    nA = np.empty(3)
    nB = np.empty(3)
    HL = np.empty((3, 3))
    HA = np.empty((3, 3))
    HB = np.empty((3, 3))
    for p in range(P):
        s = z[p, i_s]
        _kkt_rows(p, RA, dFA, FA, RB, dGB, GB, z, NA, NB, nA, nB, r)
        if not jac:
            continue
        # world Hessians HA = RA (sum lam_j HFA_j) RA^T, likewise HB
        _world_hessian(RA[p], HFA[p], z[p, ilam:ilam + m], HL, HA)
        _world_hessian(RB[p], HGB[p], z[p, imu:imu + k], HL, HB)
        for i in range(3):
            for j in range(3):
                J[p, i, j] = HA[i, j]
                J[p, i, 3 + j] = HB[i, j]
                J[p, 3 + i, j] = -s * HA[i, j]
            J[p, 3 + i, i] -= 1.0
            J[p, 3 + i, 3 + i] = 1.0
            for j in range(m):
                J[p, i, ilam + j] = NA[i, j]
                J[p, 3 + i, ilam + j] = -s * NA[i, j]
                J[p, ilam + j, i] = -NA[i, j]
            for j in range(k):
                J[p, i, imu + j] = NB[i, j]
                J[p, imu + j, 3 + i] = -NB[i, j]
            J[p, 3 + i, i_s] = -nA[i]
        for j in range(3):
            J[p, i_s, j] = nA[0] * HA[0, j] + nA[1] * HA[1, j] + nA[2] * HA[2, j]
        for j in range(m):
            J[p, i_s, ilam + j] = nA[0] * NA[0, j] + nA[1] * NA[1, j] + nA[2] * NA[2, j]
    return r, J


@njit(cache=_CACHE)
def _merit(Phi):
    """0.5 |Phi|^2, summed in order."""
    psi = 0.0
    for i in range(Phi.shape[0]):
        psi += 0.5 * Phi[i] * Phi[i]
    return psi


@njit(cache=_CACHE)
def closest_newton(kind_a, par_a, RA, pA, cA, kind_b, par_b, RB, pB, cB, z0, flat, max_iter, tol):
    """Semismooth Newton on the closest-point KKT system of each of P pairs, one pair at a time (geometry_rows'
    rows; the multipliers lam, mu >= 0 by the Fischer-Burmeister function, fb_reformulate with lam = 1): Armijo
    backtracking on the merit, with the proximal term of the points (weight min(0.1, 0.1 |Phi|)) where flat[p] (two
    shapes with flat faces: non-unique points).  Stops a pair at the scaled natural residual max|nat| / (1 + max|z|)
    <= tol (natural_parts), or gives it up: max_iter iterations, a singular Newton matrix, a direction that is not
    one of descent, a failed line search.  Returns z (P, ng), converged (P,), iterations (P,) and the scaled natural
    residual at z (P,)."""
    P, ng = z0.shape
    m = kind_a.shape[1]
    lower = np.full(ng, -np.inf)
    lower[6:6 + m + kind_b.shape[1]] = 0.0  # the multipliers lam, mu
    bounded = np.isfinite(lower)
    ones = np.ones(ng)
    Z = z0.copy()
    ok = np.zeros(P, np.bool_)
    its = np.zeros(P, np.int64)
    res = np.full(P, np.inf)
    H = np.empty((ng, ng))
    piv = np.empty(ng, np.int64)
    d = np.empty((ng, 1))
    grad = np.empty(ng)
    zt = np.empty((1, ng))
    for p in range(P):
        q = slice(p, p + 1)
        z = Z[p:p + 1]
        r, J = geometry_rows(kind_a[q], par_a[q], RA[q], pA[q], cA[q], kind_b[q], par_b[q], RB[q], pB[q], cB[q], z,
                             True)
        for it in range(max_iter + 1):
            nat, zm = natural_parts(z[0], r[0], lower)
            res[p] = nat / (1.0 + zm)
            if not np.isfinite(res[p]):
                break
            if res[p] <= tol:
                ok[p] = True
                break
            if it == max_iter:
                break
            Phi, da, db = fb_reformulate(z[0], r[0], lower, bounded, 1.0, 0.0, ones)
            psi = _merit(Phi)
            e = min(0.1, 0.1 * np.sqrt(2.0 * psi)) if flat[p] else 0.0
            for i in range(ng):
                for j in range(ng):
                    H[i, j] = db[i] * J[0, i, j]
                H[i, i] += da[i]
            # the merit's gradient H^T Phi (without the proximal term)
            for j in range(ng):
                acc = 0.0
                for i in range(ng):
                    acc += H[i, j] * Phi[i]
                grad[j] = acc
            for i in range(6):
                H[i, i] += e * db[i]
            if not _lu(H, piv):
                break
            for i in range(ng):
                d[i, 0] = -Phi[i]
            _lu_solve(H, piv, d)
            gd = 0.0
            for i in range(ng):
                gd += grad[i] * d[i, 0]
            if not (gd < 0.0):
                break
            t, done = 1.0, False
            while t > 1e-10:
                for i in range(ng):
                    zt[0, i] = z[0, i] + t * d[i, 0]
                rt, _Jt = geometry_rows(kind_a[q], par_a[q], RA[q], pA[q], cA[q], kind_b[q], par_b[q], RB[q], pB[q],
                                        cB[q], zt, False)
                Pt = fb_reformulate(zt[0], rt[0], lower, bounded, 1.0, 0.0, ones)[0]
                if _merit(Pt) <= psi + 1e-4 * t * gd:
                    done = True
                    break
                t *= 0.5
            if not done:
                break
            for i in range(ng):
                z[0, i] = zt[0, i]
            its[p] += 1
            r, J = geometry_rows(kind_a[q], par_a[q], RA[q], pA[q], cA[q], kind_b[q], par_b[q], RB[q], pB[q], cB[q],
                                 z, True)
    return Z, ok, its, res


@njit(cache=_CACHE)
def batch_rows(m, k, nf, h, mu_f, e_t, e_o, e_r, pin, m_ref, e_aux, kind_a, par_a, RA0, pA0, cA, kind_b, par_b, RB0,
               pB0, cB, V, ka, kb, dyn_b, z, zidx, floor, SA, SB, valid, Fb, jac, rho):
    """The implicit step's rows of a batch of pairs and their part of the body rows, in one call: the pairs'
    unknowns z[zidx] (P, size) and their bodies' velocities V[ka], V[kb] (V (nb, 6): the step's body unknowns), the
    rows and wrenches (pair_batch), the normal rows (s - floor) / h when floor has one entry a pair (a kept
    overlap; empty: none), and the wrenches' velocity changes SA WA, SB WB subtracted from the body rows Fb (with jac,
    the pair's blocks of the step Jacobian; body_blocks).  Returns the rows (P, size) and the blocks."""
    P = zidx.shape[0]
    size = zidx.shape[1]
    zp = np.empty((P, size))
    vA = np.empty((P, 3))
    wA = np.empty((P, 3))
    vB = np.zeros((P, 3))
    wB = np.zeros((P, 3))
    for p in range(P):
        for i in range(size):
            zp[p, i] = z[zidx[p, i]]
        for i in range(3):
            vA[p, i] = V[ka[p], i]
            wA[p, i] = V[ka[p], 3 + i]
            if dyn_b:
                vB[p, i] = V[kb[p], i]
                wB[p, i] = V[kb[p], 3 + i]
    r, J, WA, JWA, WB, JWB = pair_batch(m, k, nf, h, mu_f, e_t, e_o, e_r, pin, m_ref, e_aux, kind_a, par_a, RA0, pA0,
                                        cA, vA, wA, kind_b, par_b, RB0, pB0, cB, vB, wB, zp, jac, rho)
    if floor.shape[0] == P:
        ipn = 7 + m + k
        for p in range(P):
            r[p, ipn] -= floor[p] / h
    _dA, _dB, blk = body_blocks(SA, WA, JWA, SB, WB, JWB, J, valid, dyn_b, jac, Fb, ka, kb)
    return r, blk


@njit(cache=_CACHE)
def _pair_outputs(P, size, nloc, jac):
    """The output arrays of a batch of P pairs: rows (P, size), local Jacobian (P, size, nloc), wrenches on A and B
    (P, 6) and their Jacobians (P, 6, nloc); the Jacobians zero, or empty (P, 0, 0) without jac."""
    r = np.empty((P, size))
    WA = np.empty((P, 6))
    WB = np.zeros((P, 6))
    if jac:
        return r, np.zeros((P, size, nloc)), WA, np.zeros((P, 6, nloc)), WB, np.zeros((P, 6, nloc))
    return r, np.zeros((P, 0, 0)), WA, np.zeros((P, 0, 0)), WB, np.zeros((P, 0, 0))


@njit(cache=_CACHE)
def _wrench_geometry(J_F, J_tx, a, b0, b1, b2, J_nB, J_t, J_o, nf, nloc):
    """The columns of the Jacobians of F = a n + b0 t + b1 o and tx = b2 n (nf = 3) through the contact frame
    (J_nB, J_t, J_o); the coefficients' own derivatives (the impulse unknowns' columns) are the caller's."""
    for i in range(3):
        for c in range(nloc):
            J_F[i, c] = a * J_nB[i, c] + b0 * J_t[i, c] + b1 * J_o[i, c]
    if nf == 3:
        for i in range(3):
            for c in range(nloc):
                J_tx[i, c] = b2 * J_nB[i, c]


@njit(cache=_CACHE)
def _carried_slip(wA, wB, d1, d2, h, c, cs, jac, gv):
    """core.contact.pair.carried_slip into c (3) and, with jac, cs[0:4] = dc/dwA, dc/dwB, dc/dd1, dc/dd2 (3 x 3);
    cs[4:11] (3 x 3) and gv (2, 3) are scratch.  Bodies that share no rotation (ws = 0): c = 0."""
    a = 0.5 * h
    g, w = gv[0], gv[1]
    # the shared rotation ws = s (wA + wB), s = (wA . wB) / (|wA|^2 + |wB|^2) (core.contact.pair.shared_spin)
    q = 0.0
    ab = 0.0
    for i in range(3):
        q += wA[i] * wA[i] + wB[i] * wB[i]
        ab += wA[i] * wB[i]
    sh = ab / q if q > 0.0 else 0.0
    w2 = 0.0
    for i in range(3):
        w[i] = sh * (wA[i] + wB[i])
        w2 += w[i] * w[i]
    if w2 == 0.0 and not jac:
        for i in range(3):
            c[i] = 0.0
        return
    den = 1.0 + a * a * w2
    # g = wB x d2 - wA x d1
    g[0] = (wB[1] * d2[2] - wB[2] * d2[1]) - (wA[1] * d1[2] - wA[2] * d1[1])
    g[1] = (wB[2] * d2[0] - wB[0] * d2[2]) - (wA[2] * d1[0] - wA[0] * d1[2])
    g[2] = (wB[0] * d2[1] - wB[1] * d2[0]) - (wA[0] * d1[1] - wA[1] * d1[0])
    wg = w[0] * g[0] + w[1] * g[1] + w[2] * g[2]
    # c = (a ws x g - a^2 ws (ws . g) + a^2 |ws|^2 g) / den
    c[0] = (a * (w[1] * g[2] - w[2] * g[1]) - a * a * wg * w[0] + a * a * w2 * g[0]) / den
    c[1] = (a * (w[2] * g[0] - w[0] * g[2]) - a * a * wg * w[1] + a * a * w2 * g[1]) / den
    c[2] = (a * (w[0] * g[1] - w[1] * g[0]) - a * a * wg * w[2] + a * a * w2 * g[2]) / den
    if not jac:
        return
    K, Sw, Sx, T, dwA, dwB, dcw = cs[4], cs[5], cs[6], cs[7], cs[8], cs[9], cs[10]
    # K = I - M = (a W - a^2 W^2) / den, W = [ws]x
    _sk(w, Sw)
    for i in range(3):
        for j in range(3):
            acc = 0.0
            for l in range(3):
                acc += Sw[i, l] * Sw[l, j]
            K[i, j] = (a * Sw[i, j] - a * a * acc) / den
    # dws/dwA = s I + (wA + wB) ds/dwA^T, ds/dwA = (wB - 2 s wA) / q (and likewise for B)
    for i in range(3):
        for j in range(3):
            e = sh if i == j else 0.0
            if q > 0.0:
                dwA[i, j] = e + (wA[i] + wB[i]) * (wB[j] - 2.0 * sh * wA[j]) / q
                dwB[i, j] = e + (wA[i] + wB[i]) * (wA[j] - 2.0 * sh * wB[j]) / q
            else:
                dwA[i, j] = 0.0
                dwB[i, j] = 0.0
    # dc/dws (g fixed) = (-a [g]x - a^2 (ws . g) I - a^2 ws g^T + 2 a^2 (g - c) ws^T) / den
    _sk(g, Sx)
    for i in range(3):
        for j in range(3):
            dcw[i, j] = (-a * Sx[i, j] - a * a * (wg if i == j else 0.0) - a * a * w[i] * g[j]
                         + 2.0 * a * a * (g[i] - c[i]) * w[j]) / den
    # dc/dd2 = K [wB]x, dc/dd1 = -K [wA]x
    _sk(wB, Sx)
    _mm(K, Sx, cs[3])
    _sk(wA, Sx)
    _mm(K, Sx, T)
    for i in range(3):
        for j in range(3):
            cs[2, i, j] = -T[i, j]
    # dc/dwA = dc/dws dws/dwA + K [d1]x, dc/dwB = dc/dws dws/dwB - K [d2]x
    _mm(dcw, dwA, cs[0])
    _sk(d1, Sx)
    _mm_add(K, Sx, cs[0], 1.0)
    _mm(dcw, dwB, cs[1])
    _sk(d2, Sx)
    _mm_add(K, Sx, cs[1], -1.0)


@njit(cache=_CACHE)
def pair_terms(m, k, nf, h, mu_f, e_t, e_o, e_r, pin, m_ref, e_aux, RA, d1, vA, wA, RB, d2, vB, wB,
               FA, dFA, HFA, GB, dGB, HGB, z, jac, rho):
    """Rows (P, size), local Jacobians (P, size, 12 + size), wrenches on A and B (P, 6) and their Jacobians
    (P, 6, 12 + size) of P pairs with the same layout (m, k, nf); see core.contact.pair.eval_pairs.  With jac False
    the Jacobian arrays are empty (P, 0, 0) and HFA, HGB are not read.  rho > 0: the friction slots in the
    Alart-Curnier form with parameter rho (the impulses q_k = p_k / (m_ref e_k), rows q - proj(q - rho e v); the sig
    slot unused, its row sig itself); rho < 0: the conic form (the same impulses, their rows the sliding speeds e_k v_k,
    the sig slot psi with the row psi, for the interior-point solver's cone complementarity); rho = 0: the normalised
    form (core.contact.pair)."""
    P = z.shape[0]
    ilam, imu, i_s = 6, 6 + m, 6 + m + k
    ipn = i_s + 1
    ipf = i_s + 2
    isig = ipf + nf
    size = 8 + m + k + (nf + 1 if nf > 0 else 0)
    nloc = 12 + size
    o = 12
    ia1, ia2 = o, o + 3
    ilam_c, imu_c, is_c, ipn_c, ipf_c, isig_c = o + ilam, o + imu, o + i_s, o + ipn, o + ipf, o + isig
    r, J, WA, JWA, WB, JWB = _pair_outputs(P, size, nloc, jac)
    # per-pair scratch
    NA = np.empty((3, m))
    NB = np.empty((3, k))
    nA = np.empty(3)
    nB = np.empty(3)
    TA = np.empty((3, 3))
    TB = np.empty((3, 3))
    S1 = np.empty((3, 3))
    S2 = np.empty((3, 3))
    Sx = np.empty((3, 3))
    M3 = np.empty((3, 3))
    HA = np.empty((3, 3))
    HB = np.empty((3, 3))
    J_d1 = np.empty((3, nloc))
    J_d2 = np.empty((3, nloc))
    J_x1 = np.empty((3, nloc))
    J_x2 = np.empty((3, nloc))
    J_nA = np.empty((3, nloc))
    J_nB = np.empty((3, nloc))
    J_t = np.empty((3, nloc))
    J_o = np.empty((3, nloc))
    J_vrel = np.empty((3, nloc))
    J_F = np.empty((3, nloc))
    J_tx = np.empty((3, nloc))
    J_xi = np.empty((3, nloc))
    tmp = np.empty((3, nloc))
    t = np.empty(3)
    ov = np.empty(3)
    u = np.empty(3)
    vrel = np.empty(3)
    cr = np.empty(3)
    F = np.empty(3)
    tx = np.empty(3)
    dirF = np.empty(3)
    xi = np.empty(3)
    xac = np.empty(3)
    cc = np.empty(3)
    cs = np.empty((11, 3, 3))  # the carried slip's derivatives (dc/dwA, dc/dwB, dc/dd1, dc/dd2) and scratch
    gv3 = np.empty((2, 3))  # (_carried_slip's scratch)
    for p in range(P):
        s = z[p, i_s]
        pn = z[p, ipn]
        _kkt_rows(p, RA, dFA, FA, RB, dGB, GB, z, NA, NB, nA, nB, r)  # the closest-point rows, normals nA, nB
        r[p, ipn] = s / h  # non-penetration (velocity units, commensurate with pn)
        if jac:
            _cayley_T(wA[p], h, TA)
            _cayley_T(wB[p], h, TB)
            _sk(d1[p], S1)
            _sk(d2[p], S2)
            _fill(J_d1, 0.0)
            _fill(J_d2, 0.0)
            for i in range(3):
                J_d1[i, i] = -h
                J_d1[i, ia1 + i] += 1.0
                J_d2[i, 6 + i] = -h
                J_d2[i, ia2 + i] += 1.0
            _copy(J_d1, J_x1)
            _copy(J_d2, J_x2)
            _mm(S1, TA, M3)
            _add_at(J_x1, 3, M3, 1.0)  # world displacement of a1 relative to body A
            _mm(S2, TB, M3)
            _add_at(J_x2, 9, M3, 1.0)
            # HA = RA (sum lam_j HFA_j) RA^T
            for i in range(3):
                for c in range(3):
                    acc = 0.0
                    for j in range(m):
                        acc += z[p, ilam + j] * HFA[p, j, i, c]
                    Sx[i, c] = acc
            for i in range(3):
                for c in range(3):
                    M3[i, c] = RA[p, i, 0] * Sx[0, c] + RA[p, i, 1] * Sx[1, c] + RA[p, i, 2] * Sx[2, c]
            for i in range(3):
                for c in range(3):
                    HA[i, c] = M3[i, 0] * RA[p, c, 0] + M3[i, 1] * RA[p, c, 1] + M3[i, 2] * RA[p, c, 2]
            for i in range(3):
                for c in range(3):
                    acc = 0.0
                    for j in range(k):
                        acc += z[p, imu + j] * HGB[p, j, i, c]
                    Sx[i, c] = acc
            for i in range(3):
                for c in range(3):
                    M3[i, c] = RB[p, i, 0] * Sx[0, c] + RB[p, i, 1] * Sx[1, c] + RB[p, i, 2] * Sx[2, c]
            for i in range(3):
                for c in range(3):
                    HB[i, c] = M3[i, 0] * RB[p, c, 0] + M3[i, 1] * RB[p, c, 1] + M3[i, 2] * RB[p, c, 2]
            _mm(HA, J_x1, J_nA)
            _sk(nA, Sx)
            _mm(Sx, TA, M3)
            _add_at(J_nA, 3, M3, -1.0)
            _add_at(J_nA, ilam_c, NA, 1.0)
            _mm(HB, J_x2, J_nB)
            _sk(nB, Sx)
            _mm(Sx, TB, M3)
            _add_at(J_nB, 9, M3, -1.0)
            _add_at(J_nB, imu_c, NB, 1.0)
            for i in range(3):
                for c in range(nloc):
                    J[p, i, c] = J_nA[i, c] + J_nB[i, c]
                    J[p, 3 + i, c] = -s * J_nA[i, c]
                J[p, 3 + i, ia2 + i] += 1.0
                J[p, 3 + i, ia1 + i] -= 1.0
                J[p, 3 + i, is_c] -= nA[i]
            for c in range(nloc):
                for j in range(m):
                    J[p, ilam + j, c] = -(NA[0, j] * J_x1[0, c] + NA[1, j] * J_x1[1, c] + NA[2, j] * J_x1[2, c])
                for j in range(k):
                    J[p, imu + j, c] = -(NB[0, j] * J_x2[0, c] + NB[1, j] * J_x2[1, c] + NB[2, j] * J_x2[2, c])
                J[p, i_s, c] = nA[0] * J_nA[0, c] + nA[1] * J_nA[1, c] + nA[2] * J_nA[2, c]
            J[p, ipn, is_c] = 1.0 / h
        # contact frame from B's normal n = nB (J_n = J_nB)
        mp = m_ref[p] * pn
        tx[0] = tx[1] = tx[2] = 0.0
        if jac:
            _fill(J_tx, 0.0)
        if nf > 0:
            _cross(e_aux[p], nB, u)
            lu = np.sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
            if lu < 1e-300:
                lu = 1e-300  # n along e_aux only at wild trial points
            for i in range(3):
                t[i] = u[i] / lu
            _cross(nB, t, ov)
            _cross(wA[p], d1[p], u)
            _cross(wB[p], d2[p], cr)
            # plus the part of the slip that B's rotation carries (core.contact.pair.carried_slip)
            _carried_slip(wA[p], wB[p], d1[p], d2[p], h, cc, cs, jac, gv3)
            for i in range(3):
                vrel[i] = vA[p, i] + u[i] - vB[p, i] - cr[i] + cc[i]
            xi[0] = e_t * (t[0] * vrel[0] + t[1] * vrel[1] + t[2] * vrel[2])
            xi[1] = e_o * (ov[0] * vrel[0] + ov[1] * vrel[1] + ov[2] * vrel[2])
            if nf == 3:
                xi[2] = e_r * (nB[0] * (wA[p, 0] - wB[p, 0]) + nB[1] * (wA[p, 1] - wB[p, 1])
                               + nB[2] * (wA[p, 2] - wB[p, 2]))
            x = s / h
            ax = abs(x)
            dd = ax + pin
            sp = x * x / dd
            dsp = x * (ax + 2.0 * pin) / (dd * dd)
            mu = mu_f[p]
            p0, p1 = z[p, ipf], z[p, ipf + 1]
            stick = False
            rad = 0.0
            nx = nx2 = 1.0
            if rho < 0.0:
                for j in range(nf):
                    r[p, ipf + j] = xi[j]
            if rho > 0.0:
                # Alart-Curnier: q = proj_{|q| <= mu pn}(q - rho xi), a free equation per friction slot
                rad = mu * pn if pn > 0.0 else 0.0
                nx2 = 0.0
                for j in range(nf):
                    xac[j] = z[p, ipf + j] - rho * xi[j]
                    nx2 += xac[j] * xac[j]
                nx = np.sqrt(nx2)
                stick = rad > 0.0 and nx <= rad  # (no load: q = 0, whatever the slip)
                for j in range(nf):
                    if stick:
                        r[p, ipf + j] = rho * xi[j]
                    elif nx > 0.0:
                        r[p, ipf + j] = z[p, ipf + j] - rad * xac[j] / nx
                    else:
                        r[p, ipf + j] = z[p, ipf + j]
            if rho != 0.0:
                r[p, isig] = z[p, isig]
                mr = m_ref[p]
                for i in range(3):
                    F[i] = mr * (pn * nB[i] + e_t * p0 * t[i] + e_o * p1 * ov[i])
                if nf == 3:
                    p2 = z[p, ipf + 2]
                    for i in range(3):
                        tx[i] = mr * e_r * p2 * nB[i]
            else:
                ss = 0.0
                for j in range(nf):
                    ph = z[p, ipf + j]
                    r[p, ipf + j] = mu * xi[j] + ph * (z[p, isig] + sp)
                    ss += ph * ph
                r[p, isig] = mu * mu - ss
                for i in range(3):
                    dirF[i] = nB[i] + e_t * p0 * t[i] + e_o * p1 * ov[i]
                    F[i] = mp * dirF[i]
                if nf == 3:
                    p2 = z[p, ipf + 2]
                    for i in range(3):
                        tx[i] = mp * e_r * p2 * nB[i]
            if jac:
                # J_t = ((I - t t^T) / lu) [e_aux]x J_n
                _sk(e_aux[p], Sx)
                _mm(Sx, J_nB, tmp)
                for i in range(3):
                    for c in range(3):
                        M3[i, c] = ((1.0 if i == c else 0.0) - t[i] * t[c]) / lu
                _mm(M3, tmp, J_t)
                # J_o = -[t]x J_n + [n]x J_t
                _sk(t, Sx)
                _fill(J_o, 0.0)
                _mm_add(Sx, J_nB, J_o, -1.0)
                _sk(nB, Sx)
                _mm_add(Sx, J_t, J_o, 1.0)
                # J_vrel = [wA]x J_d1 - [wB]x J_d2 + the velocity columns
                _sk(wA[p], Sx)
                _mm(Sx, J_d1, J_vrel)
                _sk(wB[p], Sx)
                _mm_add(Sx, J_d2, J_vrel, -1.0)
                _mm_add(cs[2], J_d1, J_vrel, 1.0)  # (the carried slip's lever arms)
                _mm_add(cs[3], J_d2, J_vrel, 1.0)
                for i in range(3):
                    J_vrel[i, i] += 1.0
                    J_vrel[i, 6 + i] -= 1.0
                    for c in range(3):
                        J_vrel[i, 3 + c] += cs[0, i, c] - S1[i, c]
                        J_vrel[i, 9 + c] += S2[i, c] + cs[1, i, c]
                for c in range(nloc):
                    J_xi[0, c] = e_t * (t[0] * J_vrel[0, c] + t[1] * J_vrel[1, c] + t[2] * J_vrel[2, c]
                                        + vrel[0] * J_t[0, c] + vrel[1] * J_t[1, c] + vrel[2] * J_t[2, c])
                    J_xi[1, c] = e_o * (ov[0] * J_vrel[0, c] + ov[1] * J_vrel[1, c] + ov[2] * J_vrel[2, c]
                                        + vrel[0] * J_o[0, c] + vrel[1] * J_o[1, c] + vrel[2] * J_o[2, c])
                if nf == 3:
                    for c in range(nloc):
                        J_xi[2, c] = e_r * ((wA[p, 0] - wB[p, 0]) * J_nB[0, c] + (wA[p, 1] - wB[p, 1]) * J_nB[1, c]
                                            + (wA[p, 2] - wB[p, 2]) * J_nB[2, c])
                    for i in range(3):
                        J_xi[2, 3 + i] += e_r * nB[i]
                        J_xi[2, 9 + i] -= e_r * nB[i]
                if rho < 0.0:
                    for j in range(nf):
                        for c in range(nloc):
                            J[p, ipf + j, c] = J_xi[j, c]
                if rho > 0.0:
                    if stick:
                        for j in range(nf):
                            for c in range(nloc):
                                J[p, ipf + j, c] = rho * J_xi[j, c]
                    elif nx == 0.0:
                        for j in range(nf):
                            J[p, ipf + j, ipf_c + j] = 1.0
                    else:
                        # d(q - rad x/|x|) with x = q - rho xi: dq - (rad/|x|)(I - x x^T/|x|^2)(dq - rho dxi)
                        # - mu (x/|x|) dpn (pn > 0)
                        for j in range(nf):
                            for i in range(nf):
                                pm = rad / nx * ((1.0 if i == j else 0.0) - xac[i] * xac[j] / nx2)
                                for c in range(nloc):
                                    J[p, ipf + j, c] += pm * rho * J_xi[i, c]
                                J[p, ipf + j, ipf_c + i] -= pm
                            J[p, ipf + j, ipf_c + j] += 1.0
                            if pn > 0.0:
                                J[p, ipf + j, ipn_c] -= mu * xac[j] / nx
                p2 = z[p, ipf + 2] if nf == 3 else 0.0
                if rho != 0.0:
                    J[p, isig, isig_c] = 1.0
                    mr = m_ref[p]
                    # F = mr (pn n + e_t q_t t + e_o q_o o), tx = mr e_r q_r n
                    _wrench_geometry(J_F, J_tx, mr * pn, mr * e_t * p0, mr * e_o * p1, mr * e_r * p2, J_nB, J_t, J_o,
                                     nf, nloc)
                    for i in range(3):
                        J_F[i, ipn_c] += mr * nB[i]
                        J_F[i, ipf_c] += mr * e_t * t[i]
                        J_F[i, ipf_c + 1] += mr * e_o * ov[i]
                        if nf == 3:
                            J_tx[i, ipf_c + 2] += mr * e_r * nB[i]
                else:
                    for j in range(nf):
                        ph = z[p, ipf + j]
                        for c in range(nloc):
                            J[p, ipf + j, c] = mu * J_xi[j, c]
                        J[p, ipf + j, ipf_c + j] += z[p, isig] + sp
                        J[p, ipf + j, isig_c] += ph
                        J[p, ipf + j, is_c] += ph * (dsp / h)
                        J[p, isig, ipf_c + j] = -2.0 * ph
                    # F = mp (n + e_t phi_t t + e_o phi_o o), tx = mp e_r phi_r n, mp = m_ref pn
                    _wrench_geometry(J_F, J_tx, mp, mp * e_t * p0, mp * e_o * p1, mp * e_r * p2, J_nB, J_t, J_o, nf,
                                     nloc)
                    for i in range(3):
                        J_F[i, ipn_c] += m_ref[p] * dirF[i]
                        J_F[i, ipf_c] += mp * e_t * t[i]
                        J_F[i, ipf_c + 1] += mp * e_o * ov[i]
                        if nf == 3:
                            J_tx[i, ipf_c + 2] += mp * e_r * nB[i]
                            J_tx[i, ipn_c] += m_ref[p] * e_r * p2 * nB[i]
        else:
            for i in range(3):
                F[i] = mp * nB[i]
            if jac:
                for i in range(3):
                    for c in range(nloc):
                        J_F[i, c] = mp * J_nB[i, c]
                    J_F[i, ipn_c] += m_ref[p] * nB[i]
        # wrenches: A receives [F; d1 x F + tx], B the opposite about its own centre
        _cross(d1[p], F, u)
        _cross(d2[p], F, cr)
        for i in range(3):
            WA[p, i] = F[i]
            WA[p, 3 + i] = u[i] + tx[i]
            WB[p, i] = -F[i]
            WB[p, 3 + i] = -cr[i] - tx[i]
        if jac:
            _sk(F, Sx)
            for i in range(3):
                for c in range(nloc):
                    JWA[p, i, c] = J_F[i, c]
                    JWB[p, i, c] = -J_F[i, c]
                    a_ = (-(Sx[i, 0] * J_d1[0, c] + Sx[i, 1] * J_d1[1, c] + Sx[i, 2] * J_d1[2, c])
                          + S1[i, 0] * J_F[0, c] + S1[i, 1] * J_F[1, c] + S1[i, 2] * J_F[2, c] + J_tx[i, c])
                    b_ = (Sx[i, 0] * J_d2[0, c] + Sx[i, 1] * J_d2[1, c] + Sx[i, 2] * J_d2[2, c]
                          - (S2[i, 0] * J_F[0, c] + S2[i, 1] * J_F[1, c] + S2[i, 2] * J_F[2, c]) - J_tx[i, c])
                    JWA[p, 3 + i, c] = a_
                    JWB[p, 3 + i, c] = b_
    return r, J, WA, JWA, WB, JWB


@njit(cache=_CACHE)
def explicit_terms(nf, h, mu_f, e_t, e_o, e_r, pin, m_ref, e_aux, n_w, d1, d2, gap0, vA, wA, vB, wB, dyn_b, z, jac,
                   rho):
    """Rows (P, size), local Jacobians (P, size, 12 + size), wrenches on A and B (P, 6) and their Jacobians of P pairs
    of the explicit method (core.contact.stepper, size = 1 + (nf + 1 if nf else 0)): unknowns [pn, friction (nf),
    sig], the normal n_w, lever arms d1 (A's closest point from A's centre), d2 (B's from B's) and gap gap0 fixed at
    the start of the step; the row pn perp gap0 / h + n . v_rel, the friction rows in the start-of-step frame
    (tangent_frame(n, e_aux)): rho > 0 the Alart-Curnier form, rho = 0 the normalised form with the separation pin of
    the linearised gap speed (pair_terms states both).  A static B is given with zero velocities (dyn_b False: its
    columns 6:12 stay zero and its wrench is not filled).  With jac False the Jacobian arrays are empty (P, 0, 0)."""
    P = z.shape[0]
    size = 1 + (nf + 1 if nf > 0 else 0)
    nloc = 12 + size
    r, J, WA, JWA, WB, JWB = _pair_outputs(P, size, nloc, jac)
    vrel = np.empty(3)
    c1 = np.empty(3)
    t = np.empty(3)
    o = np.empty(3)
    u = np.empty(3)
    F = np.empty(3)
    tx = np.empty(3)
    xi = np.empty(3)
    x = np.empty(3)
    Jv = np.empty((3, 12))  # d v_rel / d(vA, wA, vB, wB)
    Jxi = np.empty((3, 12))
    J_F = np.empty((3, nloc))
    J_tx = np.empty((3, nloc))
    Pm = np.empty((3, 3))
    S1 = np.empty((3, 3))
    S2 = np.empty((3, 3))
    for p in range(P):
        n = n_w[p]
        m = m_ref[p]
        mu = mu_f[p]
        # relative velocity of A's contact point over B's, and its Jacobian
        _cross(wA[p], d1[p], c1)
        for i in range(3):
            vrel[i] = vA[p, i] + c1[i]
        if dyn_b:
            _cross(wB[p], d2[p], c1)
            for i in range(3):
                vrel[i] = vrel[i] - vB[p, i] - c1[i]
        pn = z[p, 0]
        r[p, 0] = gap0[p] / h + (n[0] * vrel[0] + n[1] * vrel[1] + n[2] * vrel[2])
        if jac:
            _fill(Jv, 0.0)
            _sk(d1[p], S1)
            _sk(d2[p], S2)
            for i in range(3):
                Jv[i, i] = 1.0
                for c in range(3):
                    Jv[i, 3 + c] = -S1[i, c]
                if dyn_b:
                    Jv[i, 6 + i] = -1.0
                    for c in range(3):
                        Jv[i, 9 + c] = S2[i, c]
            for c in range(12):
                J[p, 0, c] = n[0] * Jv[0, c] + n[1] * Jv[1, c] + n[2] * Jv[2, c]
            _fill(J_F, 0.0)
            _fill(J_tx, 0.0)
            for i in range(3):
                J_F[i, 12] = m * n[i]
        for i in range(3):
            F[i] = m * pn * n[i]
            tx[i] = 0.0
        if nf > 0:
            # the start-of-step tangent frame t = (e x n) / |e x n|, o = n x t (core.contact.pair.tangent_frame)
            _cross(e_aux[p], n, u)
            nu = np.sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
            for i in range(3):
                t[i] = u[i] / nu
            _cross(n, t, o)
            xi[0] = e_t * (t[0] * vrel[0] + t[1] * vrel[1] + t[2] * vrel[2])
            xi[1] = e_o * (o[0] * vrel[0] + o[1] * vrel[1] + o[2] * vrel[2])
            if nf == 3:
                if dyn_b:
                    xi[2] = e_r * (n[0] * (wA[p, 0] - wB[p, 0]) + n[1] * (wA[p, 1] - wB[p, 1])
                                   + n[2] * (wA[p, 2] - wB[p, 2]))
                else:
                    xi[2] = e_r * (n[0] * wA[p, 0] + n[1] * wA[p, 1] + n[2] * wA[p, 2])
            if jac:
                for c in range(12):
                    Jxi[0, c] = e_t * (t[0] * Jv[0, c] + t[1] * Jv[1, c] + t[2] * Jv[2, c])
                    Jxi[1, c] = e_o * (o[0] * Jv[0, c] + o[1] * Jv[1, c] + o[2] * Jv[2, c])
                    Jxi[2, c] = 0.0
                if nf == 3:
                    for i in range(3):
                        Jxi[2, 3 + i] = e_r * n[i]
                        if dyn_b:
                            Jxi[2, 9 + i] = -e_r * n[i]
            if rho != 0.0:
                if rho < 0.0:
                    # the conic form: the rows are the sliding speeds, (psi, xi) in the cone with (mu pn, q)
                    for i in range(nf):
                        r[p, 1 + i] = xi[i]
                        if jac:
                            for c in range(12):
                                J[p, 1 + i, c] = Jxi[i, c]
                else:
                    # Alart-Curnier rows: q = proj_{|q| <= mu pn}(q - rho xi)
                    nx2 = 0.0
                    for i in range(nf):
                        x[i] = z[p, 1 + i] - rho * xi[i]
                        nx2 += x[i] * x[i]
                    nx = np.sqrt(nx2)
                    rad = mu * pn if pn > 0.0 else 0.0
                    if rad > 0.0 and nx <= rad:  # sticking
                        for i in range(nf):
                            r[p, 1 + i] = rho * xi[i]
                            if jac:
                                for c in range(12):
                                    J[p, 1 + i, c] = rho * Jxi[i, c]
                    elif nx == 0.0:
                        for i in range(nf):
                            r[p, 1 + i] = z[p, 1 + i]
                            if jac:
                                J[p, 1 + i, 13 + i] = 1.0
                    else:  # sliding (or unloaded): on the rim of the disc
                        for i in range(nf):
                            for j in range(nf):
                                Pm[i, j] = (rad / nx) * ((1.0 if i == j else 0.0) - x[i] * x[j] / (nx * nx))
                        for i in range(nf):
                            r[p, 1 + i] = z[p, 1 + i] - rad * x[i] / nx
                            if jac:
                                for c in range(12):
                                    a = 0.0
                                    for j in range(nf):
                                        a += Pm[i, j] * Jxi[j, c]
                                    J[p, 1 + i, c] = rho * a
                                for j in range(nf):
                                    J[p, 1 + i, 13 + j] += (1.0 if i == j else 0.0) - Pm[i, j]
                                if pn > 0.0:
                                    J[p, 1 + i, 12] -= mu * x[i] / nx
                r[p, 1 + nf] = z[p, 1 + nf]
                for i in range(3):
                    F[i] = m * (pn * n[i] + e_t * z[p, 1] * t[i] + e_o * z[p, 2] * o[i])
                    if nf == 3:
                        tx[i] = m * e_r * z[p, 3] * n[i]
                if jac:
                    J[p, 1 + nf, 13 + nf] = 1.0
                    for i in range(3):
                        J_F[i, 13] += m * e_t * t[i]
                        J_F[i, 14] += m * e_o * o[i]
                        if nf == 3:
                            J_tx[i, 15] = m * e_r * n[i]
            else:
                # the normalised rows (impulse = pn phi), + phi separation_pin(gap speed): pins the friction unknowns
                # of a separating pair
                g = r[p, 0]
                ag = abs(g)
                dd = ag + pin
                sp = g * g / dd
                dsp = g * (ag + 2.0 * pin) / (dd * dd)
                sig = z[p, 1 + nf]
                pp = 0.0
                for i in range(nf):
                    pf = z[p, 1 + i]
                    r[p, 1 + i] = mu * xi[i] + pf * (sig + sp)
                    pp += pf * pf
                    if jac:
                        for c in range(12):
                            J[p, 1 + i, c] = mu * Jxi[i, c]
                        J[p, 1 + i, 13 + i] += sig + sp
                        J[p, 1 + i, 13 + nf] += pf
                        for c in range(nloc):
                            J[p, 1 + i, c] += dsp * pf * J[p, 0, c]
                        J[p, 1 + nf, 13 + i] = -2.0 * pf
                r[p, 1 + nf] = mu * mu - pp
                for i in range(3):
                    dirF = n[i] + e_t * z[p, 1] * t[i] + e_o * z[p, 2] * o[i]
                    F[i] = m * pn * dirF
                    if nf == 3:
                        tx[i] = m * e_r * pn * z[p, 3] * n[i]
                    if jac:
                        J_F[i, 12] = m * dirF
                        J_F[i, 13] += m * pn * e_t * t[i]
                        J_F[i, 14] += m * pn * e_o * o[i]
                        if nf == 3:
                            J_tx[i, 15] = m * e_r * pn * n[i]
                            J_tx[i, 12] = m * e_r * z[p, 3] * n[i]
        # the wrenches [F; d x F + tx] on A and minus that on B (B's lever arm d2)
        _cross(d1[p], F, c1)
        for i in range(3):
            WA[p, i] = F[i]
            WA[p, 3 + i] = c1[i] + tx[i]
        if dyn_b:
            _cross(d2[p], F, c1)
            for i in range(3):
                WB[p, i] = -F[i]
                WB[p, 3 + i] = -c1[i] - tx[i]
        if jac:
            for i in range(3):
                for c in range(nloc):
                    JWA[p, i, c] = J_F[i, c]
                    JWA[p, 3 + i, c] = S1[i, 0] * J_F[0, c] + S1[i, 1] * J_F[1, c] + S1[i, 2] * J_F[2, c] + J_tx[i, c]
                    if dyn_b:
                        JWB[p, i, c] = -J_F[i, c]
                        JWB[p, 3 + i, c] = -(S2[i, 0] * J_F[0, c] + S2[i, 1] * J_F[1, c]
                                             + S2[i, 2] * J_F[2, c]) - J_tx[i, c]
    return r, J, WA, JWA, WB, JWB


@njit(cache=_CACHE)
def _minus_s_jw(S, JW, valid, p, acc, blk, r0):
    """blk[p, r0 + i, c] = -sum_j S[p, i, j] JW[p, j, valid[c]] (i < 6; body_blocks), the zero S[p, i, j] left out."""
    nv = valid.shape[0]
    for i in range(6):
        for c in range(nv):
            acc[c] = 0.0
        for j in range(6):
            sij = S[p, i, j]
            if sij != 0.0:
                for c in range(nv):
                    acc[c] += sij * JW[p, j, valid[c]]
        for c in range(nv):
            blk[p, r0 + i, c] = -acc[c]


@njit(cache=_CACHE)
def body_blocks(SA, WA, JWA, SB, WB, JWB, J, valid, dyn_b, jac, Fb, ka, kb):
    """Velocity changes dA = SA WA, dB = SB WB (P, 6) that the pairs give their bodies (S = M^-1 of the body),
    subtracted from the body rows Fb (nb, 6) at rows ka (and kb for a dynamic B), and, with jac, each pair's block of
    the step Jacobian (P, nl, nl) in its local columns [nuA, nuB (dynamic B only), pair block] (valid: those columns
    among the 12 + size of J): rows -d(dA), -d(dB), then the pair rows J."""
    P = WA.shape[0]
    nv = valid.shape[0]
    dA = np.empty((P, 6))
    dB = np.empty((P, 6))
    blk = np.empty((P, nv, nv)) if jac else np.empty((P, 0, 0))
    acc = np.empty(nv)
    nb = 12 if dyn_b else 6
    for p in range(P):
        for i in range(6):
            a = 0.0
            b = 0.0
            for j in range(6):
                a += SA[p, i, j] * WA[p, j]
                b += SB[p, i, j] * WB[p, j]
            dA[p, i] = a
            dB[p, i] = b
            Fb[ka[p], i] -= a
            if dyn_b:
                Fb[kb[p], i] -= b
        if not jac:
            continue
        # rows -S JW[:, valid], summed over j in order as sum_j S[i, j] JW[j, c] from 0.0, leaving out the zero
        # entries of S (M^-1 of a body: no linear-angular coupling, a diagonal I/m): a sum from +0.0 never becomes -0.0,
        # so a term 0 * JW[j, c] (+-0 for a finite entry) leaves it unchanged, and the blocks are bit-identical
        _minus_s_jw(SA, JWA, valid, p, acc, blk, 0)
        if dyn_b:
            _minus_s_jw(SB, JWB, valid, p, acc, blk, 6)
        for i in range(nv - nb):
            for c in range(nv):
                blk[p, nb + i, c] = J[p, i, valid[c]]
    return dA, dB, blk

# ---- per-body and broad-phase arithmetic of a step (core.contact.stepper) -----------------------------------------


@njit(cache=_CACHE)
def broad_bounds(p, q, v, w, radius, ia, ib, to_plane, plane_n, plane_c, h, g):
    """Broad phase of every candidate pair: a lower bound lb of its gap (bounding sphere of A against B's bounding
    sphere, or against B's plane n.x <= c when B is a half-space: plane_n, plane_c in B's centre-of-mass frame) and
    the margin a step of size h can close, 2 h (c + h |g|) + 1 mm + 2 % of A's radius, where c is the speed at which
    the gap bound closes at the start of the step: -(vA - vB) . (pA - pB) / |pA - pB| for two bounding spheres, the
    normal speed of A's centre against the plane's point there for a half-space (0 when they separate).  (The
    constant part keeps the pairs of a pile at rest within a few millimetres: with 0.1 % of the radius instead, the
    8-sphere pile of the validation tests ended its run jittering at 1e-9 m/s, a pair held at the kept overlap.)

    The bounding spheres are centred on the centres of mass, so a rotation moves neither, and at constant velocities
    the distance of two centres falls by at most h c in a step (|d + h u| >= d + h u . d/|d|, the norm being
    convex): tangential motion cannot close a gap.  The factor 2 and h |g| cover velocity changes within the step;
    what an impulse of the step adds beyond them is caught by the step's check of the pairs it did not solve (their
    bounding volumes must stay apart at its end, core.contact.stepper)."""
    P = ia.shape[0]
    lb = np.empty(P)
    margin = np.empty(P)
    R = np.empty((3, 3))
    for k in range(P):
        a, b = ia[k], ib[k]
        if to_plane[k]:
            # the plane's world normal m = R(q_b) n and offset c + m . p_b
            _quat_matrix(q[b], R)
            n0, n1, n2 = plane_n[b, 0], plane_n[b, 1], plane_n[b, 2]
            m0 = R[0, 0] * n0 + R[0, 1] * n1 + R[0, 2] * n2
            m1 = R[1, 0] * n0 + R[1, 1] * n1 + R[1, 2] * n2
            m2 = R[2, 0] * n0 + R[2, 1] * n1 + R[2, 2] * n2
            c = plane_c[b] + m0 * p[b, 0] + m1 * p[b, 1] + m2 * p[b, 2]
            lb[k] = m0 * p[a, 0] + m1 * p[a, 1] + m2 * p[a, 2] - c - radius[a]
            # A's centre relative to the point of B (a moving half-space) where it is: vA - vB - wB x (pA - pB)
            r0, r1, r2 = p[a, 0] - p[b, 0], p[a, 1] - p[b, 1], p[a, 2] - p[b, 2]
            u0 = v[a, 0] - v[b, 0] - (w[b, 1] * r2 - w[b, 2] * r1)
            u1 = v[a, 1] - v[b, 1] - (w[b, 2] * r0 - w[b, 0] * r2)
            u2 = v[a, 2] - v[b, 2] - (w[b, 0] * r1 - w[b, 1] * r0)
            closing = -(m0 * u0 + m1 * u1 + m2 * u2)
        else:
            d0, d1, d2 = p[a, 0] - p[b, 0], p[a, 1] - p[b, 1], p[a, 2] - p[b, 2]
            dist = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
            lb[k] = dist - radius[a] - radius[b]
            closing = -((v[a, 0] - v[b, 0]) * d0 + (v[a, 1] - v[b, 1]) * d1 + (v[a, 2] - v[b, 2]) * d2) / max(dist,
                                                                                                               1e-300)
        margin[k] = 2.0 * h * (max(closing, 0.0) + h * g) + 1e-3 + 0.02 * radius[a]
    return lb, margin


@njit(cache=_CACHE)
def _isotropic(Ib):
    """Whether a body inertia is a multiple of the identity to rounding (a sphere's, a cube's): then w x I w = 0."""
    tr = Ib[0, 0] + Ib[1, 1] + Ib[2, 2]
    dev = 0.0
    for r in range(3):
        for s in range(3):
            dev = max(dev, abs(Ib[r, s] - (tr / 3.0 if r == s else 0.0)))
    return dev <= 1e-12 * abs(tr)


@njit(cache=_CACHE)
def _gyro_residual(Ib, x, b, h, G):
    """G = 2 Ib x + h x x (Ib x) - b; returns max|G|."""
    L0 = Ib[0, 0] * x[0] + Ib[0, 1] * x[1] + Ib[0, 2] * x[2]
    L1 = Ib[1, 0] * x[0] + Ib[1, 1] * x[1] + Ib[1, 2] * x[2]
    L2 = Ib[2, 0] * x[0] + Ib[2, 1] * x[1] + Ib[2, 2] * x[2]
    G[0] = 2.0 * L0 + h * (x[1] * L2 - x[2] * L1) - b[0]
    G[1] = 2.0 * L1 + h * (x[2] * L0 - x[0] * L2) - b[1]
    G[2] = 2.0 * L2 + h * (x[0] * L1 - x[1] * L0) - b[2]
    return max(abs(G[0]), abs(G[1]), abs(G[2]))


_GYRO_ITER = 50  # Newton iterations of the free rotation's midpoint equation at most (body_rows)


@njit(cache=_CACHE)
def _gyro_midpoint(Ib, w1, tau, h, w2):
    """The free rotation over a step by the implicit midpoint rule of Euler's equations in the body frame,
    Ib (w2 - w1) + h wm x Ib wm = h tau with wm = (w1 + w2) / 2: the equation 2 Ib wm + h wm x Ib wm = 2 Ib w1 + h tau
    solved for wm by Newton's method (damped by halving; the Jacobian 2 Ib + h ([wm]x Ib - [Ib wm]x)), then
    w2 = 2 wm - w1 into w2.  Without torque it keeps the kinetic energy w.Ib w / 2 and |Ib w| exactly (both are
    quadratic invariants, which the midpoint rule keeps).  False when it does not converge (a spin far too fast for
    the step: h |w| of several radians)."""
    b = np.empty(3)
    for r in range(3):
        b[r] = 2.0 * (Ib[r, 0] * w1[0] + Ib[r, 1] * w1[1] + Ib[r, 2] * w1[2]) + h * tau[r]
    scale = max(abs(b[0]), abs(b[1]), abs(b[2]))
    x = w1.copy()
    G = np.empty(3)
    xt = np.empty(3)
    Gt = np.empty(3)
    J = np.empty((3, 3))
    d = np.empty((3, 1))
    piv = np.empty(3, np.int64)
    L = np.empty(3)
    g = _gyro_residual(Ib, x, b, h, G)
    for _ in range(_GYRO_ITER):
        if g <= 4e-16 * scale:
            break
        for r in range(3):
            L[r] = Ib[r, 0] * x[0] + Ib[r, 1] * x[1] + Ib[r, 2] * x[2]
        # J = 2 Ib + h ([x]x Ib - [L]x)
        for c in range(3):
            J[0, c] = 2.0 * Ib[0, c] + h * (x[1] * Ib[2, c] - x[2] * Ib[1, c])
            J[1, c] = 2.0 * Ib[1, c] + h * (x[2] * Ib[0, c] - x[0] * Ib[2, c])
            J[2, c] = 2.0 * Ib[2, c] + h * (x[0] * Ib[1, c] - x[1] * Ib[0, c])
        J[0, 1] += h * L[2]
        J[0, 2] -= h * L[1]
        J[1, 0] -= h * L[2]
        J[1, 2] += h * L[0]
        J[2, 0] += h * L[1]
        J[2, 1] -= h * L[0]
        if not _lu(J, piv):
            break
        for r in range(3):
            d[r, 0] = -G[r]
        _lu_solve(J, piv, d)
        t = 1.0
        gt = np.inf
        while t > 1e-6:
            for r in range(3):
                xt[r] = x[r] + t * d[r, 0]
            gt = _gyro_residual(Ib, xt, b, h, Gt)
            if gt < g:
                break
            t *= 0.5
        if not gt < g:
            break  # no decrease: as close as rounding allows
        for r in range(3):
            x[r] = xt[r]
            G[r] = Gt[r]
        g = gt
    for r in range(3):
        w2[r] = 2.0 * x[r] - w1[r]
    return g <= 1e-12 * scale and np.isfinite(g)


@njit(cache=_CACHE)
def body_rows(h, dyn, R, inertia, inertia_inv, mass, v, w, gravity, force, torque):
    """Per dynamic body dyn[k]: the free-motion part of its velocity rows c = (v0 + h (g + f/m), w_free) (nb, 6), its
    inverse mass matrix diag(I/m, I0^-1) (nb, 6, 6) with the world inertia I0 = R I_body R^T at the start of the step,
    and whether its free rotation converged (nb,).  w_free is the rotation without contact over the step by the
    implicit midpoint rule of Euler's equations in the body frame (_gyro_midpoint: R^T w_free solves it from R^T w0,
    with the body torque R^T tau); the orientation update turns the body about its end-of-step w, which leaves R^T w as
    it is, so a body spinning freely keeps its kinetic energy and |angular momentum| exactly.  (The explicit term
    w0 + h I0^-1 (tau - w0 x I0 w0) gained energy at every step: an ellipsoid spinning at 60 rad/s in zero gravity
    reached 1e239 J in one second.)  A body whose inertia is isotropic (a sphere, a cube) has no gyroscopic term:
    w_free = w0 + h I0^-1 (tau - w0 x I0 w0), the term computed to rounding, as the explicit form does."""
    nb = dyn.shape[0]
    c = np.empty((nb, 6))
    S = np.zeros((nb, 6, 6))
    ok = np.ones(nb, np.bool_)
    I0 = np.empty((3, 3))
    T = np.empty((3, 3))
    Iw = np.empty(3)
    tq = np.empty(3)
    wb = np.empty(3)
    tb = np.empty(3)
    w2 = np.empty(3)
    for k in range(nb):
        i = dyn[k]
        for r in range(3):
            c[k, r] = v[i, r] + h * (gravity[r] + force[i, r] / mass[i])
            S[k, r, r] = 1.0 / mass[i]
        # I0 = R I R^T and I0^-1 = R I^-1 R^T
        for pass_ in range(2):
            src = inertia if pass_ == 0 else inertia_inv
            for r in range(3):
                for s in range(3):
                    T[r, s] = R[i, r, 0] * src[i, 0, s] + R[i, r, 1] * src[i, 1, s] + R[i, r, 2] * src[i, 2, s]
            for r in range(3):
                for s in range(3):
                    x = T[r, 0] * R[i, s, 0] + T[r, 1] * R[i, s, 1] + T[r, 2] * R[i, s, 2]
                    if pass_ == 0:
                        I0[r, s] = x
                    else:
                        S[k, 3 + r, 3 + s] = x
        if _isotropic(inertia[i]):
            for r in range(3):
                Iw[r] = I0[r, 0] * w[i, 0] + I0[r, 1] * w[i, 1] + I0[r, 2] * w[i, 2]
            tq[0] = torque[i, 0] - (w[i, 1] * Iw[2] - w[i, 2] * Iw[1])
            tq[1] = torque[i, 1] - (w[i, 2] * Iw[0] - w[i, 0] * Iw[2])
            tq[2] = torque[i, 2] - (w[i, 0] * Iw[1] - w[i, 1] * Iw[0])
            for r in range(3):
                c[k, 3 + r] = w[i, r] + h * (S[k, 3 + r, 3] * tq[0] + S[k, 3 + r, 4] * tq[1]
                                             + S[k, 3 + r, 5] * tq[2])
            continue
        for r in range(3):  # body frame: R^T w0, R^T tau
            wb[r] = R[i, 0, r] * w[i, 0] + R[i, 1, r] * w[i, 1] + R[i, 2, r] * w[i, 2]
            tb[r] = R[i, 0, r] * torque[i, 0] + R[i, 1, r] * torque[i, 1] + R[i, 2, r] * torque[i, 2]
        ok[k] = _gyro_midpoint(inertia[i], wb, tb, h, w2)
        for r in range(3):
            c[k, 3 + r] = R[i, r, 0] * w2[0] + R[i, r, 1] * w2[1] + R[i, r, 2] * w2[2]
    return c, S, ok


@njit(cache=_CACHE)
def advance_poses(h, dyn, V, p, q, v, w):
    """The position update of the dynamic bodies dyn[k] in place, from their end-of-step velocities V (nb, 6):
    v, w = V; p += h v; Q <- (1, h w / 2) * Q / sqrt(1 + h^2 |w|^2 / 4), renormalised."""
    for k in range(dyn.shape[0]):
        i = dyn[k]
        for r in range(3):
            v[i, r] = V[k, r]
            w[i, r] = V[k, 3 + r]
            p[i, r] += h * V[k, r]
        ux, uy, uz = 0.5 * h * V[k, 3], 0.5 * h * V[k, 4], 0.5 * h * V[k, 5]
        s = 1.0 / np.sqrt(1.0 + ux * ux + uy * uy + uz * uz)
        w2, x2, y2, z2 = q[i, 0], q[i, 1], q[i, 2], q[i, 3]
        a0 = (w2 - ux * x2 - uy * y2 - uz * z2) * s
        a1 = (x2 + ux * w2 + uy * z2 - uz * y2) * s
        a2 = (y2 - ux * z2 + uy * w2 + uz * x2) * s
        a3 = (z2 + ux * y2 - uy * x2 + uz * w2) * s
        nq = np.sqrt(a0 * a0 + a1 * a1 + a2 * a2 + a3 * a3)
        q[i, 0], q[i, 1], q[i, 2], q[i, 3] = a0 / nq, a1 / nq, a2 / nq, a3 / nq


# ---- block elimination of core.contact.elements.ElementMatrix.solve ------------------------------------------------


@njit(cache=_CACHE)
def scatter_add(J, cols, blk):
    """J[cols[p][:, None], cols[p][None, :]] += blk[p] for every p (np.add.at of the pair blocks into a dense
    Jacobian: pairs that share a body add into the same entries)."""
    for p in range(cols.shape[0]):
        for i in range(cols.shape[1]):
            for j in range(cols.shape[1]):
                J[cols[p, i], cols[p, j]] += blk[p, i, j]


@njit(cache=_CACHE)
def scale_blocks(B, cols, s):
    """The blocks of diag(s) A: out[p, i, j] = s[cols[p, i]] * B[p, i, j] (each block row scaled by its unknown's s;
    core.contact.elements.ElementMatrix.scale_rows)."""
    P, nl = B.shape[0], B.shape[1]
    out = np.empty((P, nl, nl))
    for p in range(P):
        for i in range(nl):
            si = s[cols[p, i]]
            for j in range(nl):
                out[p, i, j] = si * B[p, i, j]
    return out


@njit(cache=_CACHE)
def _lu(A, piv):
    """LU factorisation with partial pivoting in place (LAPACK getrf's layout: unit L below the diagonal, whole rows
    swapped, piv[c] the row swapped with c at step c); False if a pivot is zero or not finite."""
    n = A.shape[0]
    for c in range(n):
        p = c
        best = abs(A[c, c])
        for r in range(c + 1, n):
            if abs(A[r, c]) > best:
                best = abs(A[r, c])
                p = r
        if not (best > 0.0) or not np.isfinite(best):
            return False
        piv[c] = p
        if p != c:
            for j in range(n):
                A[c, j], A[p, j] = A[p, j], A[c, j]
        inv = 1.0 / A[c, c]
        for r in range(c + 1, n):
            f = A[r, c] * inv
            A[r, c] = f
            if f != 0.0:
                for j in range(c + 1, n):
                    A[r, j] -= f * A[c, j]
    return True


@njit(cache=_CACHE)
def _lu_solve(LU, piv, X):
    """X <- A^-1 X for the factors of _lu (X (n, m), solved for all its columns at once)."""
    n, m = X.shape
    for c in range(n):
        p = piv[c]
        if p != c:
            for j in range(m):
                X[c, j], X[p, j] = X[p, j], X[c, j]
    for c in range(n):
        for r in range(c + 1, n):
            f = LU[r, c]
            if f != 0.0:
                for j in range(m):
                    X[r, j] -= f * X[c, j]
    for c in range(n - 1, -1, -1):
        inv = 1.0 / LU[c, c]
        for j in range(m):
            X[c, j] *= inv
        for r in range(c):
            f = LU[r, c]
            if f != 0.0:
                for j in range(m):
                    X[r, j] -= f * X[c, j]


@njit(cache=_CACHE)
def eliminate(B, ns, d_own):
    """For P elements with blocks B (P, nl, nl) whose last nl - ns unknowns are their own (diagonal d_own (P, k) added
    to the own-own blocks): LU factors of the own-own blocks (P, k, k) with their pivots (P, k), inv(B_gg) B_gx
    (P, k, ns) and the Schur complements B_xx - B_xg inv(B_gg) B_gx (P, ns, ns); ok is False when an own-own block
    is singular."""
    P, nl = B.shape[0], B.shape[1]
    k = nl - ns
    LU = np.empty((P, k, k))
    piv = np.empty((P, k), np.int64)
    IBgx = np.empty((P, k, ns))
    Sxx = np.empty((P, ns, ns))
    for p in range(P):
        if not _own_block(B[p], ns, d_own[p], LU[p], piv[p], IBgx[p]):
            return LU, piv, IBgx, Sxx, False
        for i in range(ns):
            _schur_row(B[p], ns, i, IBgx[p], Sxx[p, i])
    return LU, piv, IBgx, Sxx, True


@njit(cache=_CACHE)
def _own_block(Bp, ns, dg, G, piv, X):
    """One element's own-own block Bp[ns:, ns:] with dg (k) added to its diagonal, LU-factored into G (k, k) with its
    pivots piv, and inv(B_gg) B_gx into X (k, ns); False when the block is singular."""
    k = G.shape[0]
    for i in range(k):
        for j in range(k):
            G[i, j] = Bp[ns + i, ns + j]
        G[i, i] += dg[i]
    if not _lu(G, piv):
        return False
    for i in range(k):
        for j in range(ns):
            X[i, j] = Bp[ns + i, j]
    _lu_solve(G, piv, X)
    return True


@njit(cache=_CACHE)
def _schur_row(Bp, ns, i, X, row):
    """Row i of one element's Schur complement, B_xx - B_xg inv(B_gg) B_gx (X = inv(B_gg) B_gx), into row (ns)."""
    for j in range(ns):
        row[j] = Bp[i, j]
    for l in range(X.shape[0]):
        b = Bp[i, ns + l]
        if b != 0.0:
            for j in range(ns):
                row[j] -= b * X[l, j]


@njit(cache=_CACHE)
def eliminate_into(B, ns, d, own, wx, S):
    """eliminate and scatter_add in one pass, for a dense Schur complement: the LU factors of the own-own blocks (P, k,
    k) with d[own] (P, k) added to their diagonals, their pivots and inv(B_gg) B_gx (P, k, ns), each element's
    B_xx - B_xg inv(B_gg) B_gx added into S at (wx_e, wx_e) as it is computed (no (P, ns, ns) array; the same
    floating-point operations in the same order as eliminate then scatter_add: bit-identical); ok is False when an
    own-own block is singular (S is then partly filled)."""
    P, nl = B.shape[0], B.shape[1]
    k = nl - ns
    LU = np.empty((P, k, k))
    piv = np.empty((P, k), np.int64)
    IBgx = np.empty((P, k, ns))
    row = np.empty(ns)
    dg = np.empty(k)
    for p in range(P):
        for i in range(k):
            dg[i] = d[own[p, i]]
        if not _own_block(B[p], ns, dg, LU[p], piv[p], IBgx[p]):
            return LU, piv, IBgx, False
        for i in range(ns):
            _schur_row(B[p], ns, i, IBgx[p], row)
            wi = wx[p, i]
            for j in range(ns):
                S[wi, wx[p, j]] += row[j]
    return LU, piv, IBgx, True


@njit(cache=_CACHE)
def finish_schur(S, x, d):
    """The dense Schur complement's last pass: False if an entry of S is not finite (np.all(np.isfinite(S))), else
    S[i, i] += d[x[i]] for every i and True."""
    n = S.shape[0]
    bad = False
    for j in range(n):
        for i in range(n):
            v = S[i, j]
            bad |= (v - v) != 0.0  # (NaN for an infinite or NaN entry; branch-free: 3.6 us, not 15, for 162 x 162)
    if bad:
        return False
    for i in range(n):
        S[i, i] += d[x[i]]
    return True


@njit(cache=_CACHE)
def all_finite(A):
    """np.all(np.isfinite(A)) of a 2-D array, branch-free (ElementMatrix.lm_solve's reduced matrix: 5 us, not 25)."""
    bad = False
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            v = A[i, j]
            bad |= (v - v) != 0.0  # (NaN for an infinite or NaN entry)
    return not bad


@njit(cache=_CACHE)
def eliminate_rhs(B, ns, LU, piv, own, wx, b, bx):
    """Forward elimination of a right-hand side b: y_e = inv(B_gg,e) b[own_e] (returned, (P, k)); bx[wx_e] -= B_xg,e y_e.
    (_lu_solve written out for the one column, in y itself: the same operations, 30 % less time.)"""
    P, nl = B.shape[0], B.shape[1]
    k = nl - ns
    y = np.empty((P, k))
    for p in range(P):
        for i in range(k):
            y[p, i] = b[own[p, i]]
        for c in range(k):
            q = piv[p, c]
            if q != c:
                y[p, c], y[p, q] = y[p, q], y[p, c]
        for c in range(k):
            yc = y[p, c]
            for r in range(c + 1, k):
                f = LU[p, r, c]
                if f != 0.0:
                    y[p, r] -= f * yc
        for c in range(k - 1, -1, -1):
            inv = 1.0 / LU[p, c, c]
            y[p, c] *= inv
            yc = y[p, c]
            for r in range(c):
                f = LU[p, r, c]
                if f != 0.0:
                    y[p, r] -= f * yc
        for i in range(ns):
            acc = 0.0
            for l in range(k):
                acc += B[p, i, ns + l] * y[p, l]
            bx[wx[p, i]] -= acc
    return y


@njit(cache=_CACHE)
def back_substitute(IBgx, own, wx, y, dx, out):
    """out[own_e] = y_e - inv B_gx,e dx[wx_e]."""
    P, k, ns = IBgx.shape
    for p in range(P):
        for i in range(k):
            acc = y[p, i]
            for j in range(ns):
                acc -= IBgx[p, i, j] * dx[wx[p, j]]
            out[own[p, i]] = acc


# ---- the Levenberg-Marquardt solve of core.contact.elements.ElementMatrix.lm_solve -----------------------------------


@njit(cache=_CACHE)
def _chol(K):
    """K = L L^T in place (L in the lower triangle; the strict upper one is not read); False if a pivot is not
    positive and finite (K not numerically positive definite)."""
    k = K.shape[0]
    for j in range(k):
        s = K[j, j]
        for l in range(j):
            s -= K[j, l] * K[j, l]
        if not (s > 0.0) or not np.isfinite(s):
            return False
        ljj = np.sqrt(s)
        K[j, j] = ljj
        inv = 1.0 / ljj
        for i in range(j + 1, k):
            t = K[i, j]
            for l in range(j):
                t -= K[i, l] * K[j, l]
            K[i, j] = t * inv
    return True


@njit(cache=_CACHE)
def _fwd(L, v):
    """v <- L^-1 v (L lower triangular)."""
    for a in range(L.shape[0]):
        t = v[a]
        for l in range(a):
            t -= L[a, l] * v[l]
        v[a] = t / L[a, a]


@njit(cache=_CACHE)
def lm_eliminate(B, ns, d_own, nu):
    """The own unknowns of P elements eliminated from the augmented LM system [[diag(nu), A^T], [A, -I]] (d, r) of
    A = diag + sum_e P_e^T B_e P_e (blocks B (P, nl, nl), the last k = nl - ns local unknowns own, diagonal d_own
    (P, k) of A on them, damping nu (P, k) of them).

    An element's own rows r_o occur only in its rows A_o = [B_os | B_oo + diag(d_own)] (Bo, k x nl), so they are
    eliminated exactly (r_o = A_o d - g_o), which adds Bo^T Bo to the element's d-d block; its own d unknowns then
    have the SPD block K = diag(nu) + Bo_oo^T Bo_oo (Cholesky factors L, (P, k, k), instead of the 2k x 2k LU of the augmented
    own-own block) and couple to the shared unknowns (d_s, r_s) by C = [Bo_oo^T Bo_os | B_so^T] (k x 2 ns).
    Returns L (P, k, k), WT = (L^-1 C)^T (P, 2 ns, k), the elements' Schur complements on (d_s, r_s)
    [[Bo_os^T Bo_os, B_ss^T], [B_ss, 0]] - WT WT^T (P, 2 ns, 2 ns), and ok (False when a K is not numerically
    positive definite)."""
    P, nl = B.shape[0], B.shape[1]
    k = nl - ns
    m = 2 * ns
    L = np.zeros((P, k, k))
    WT = np.empty((P, m, k))
    S = np.empty((P, m, m))
    BoT = np.empty((nl, k))  # Bo transposed: its columns contiguous
    for p in range(P):
        for i in range(k):
            for j in range(nl):
                BoT[j, i] = B[p, ns + i, j]
            BoT[ns + i, i] += d_own[p, i]
        K = L[p]
        Wp = WT[p]
        for a in range(k):
            for c in range(a + 1):
                s = 0.0
                for i in range(k):
                    s += BoT[ns + a, i] * BoT[ns + c, i]
                K[a, c] = s
            K[a, a] += nu[p, a]
        for j in range(ns):
            for a in range(k):
                s = 0.0
                for i in range(k):
                    s += BoT[ns + a, i] * BoT[j, i]
                Wp[j, a] = s
                Wp[ns + j, a] = B[p, j, ns + a]
        if not _chol(K):
            return L, WT, S, False
        for i in range(m):
            _fwd(K, Wp[i])
        for i in range(m):
            for j in range(i + 1):
                s = 0.0
                for l in range(k):
                    s -= Wp[i, l] * Wp[j, l]
                S[p, i, j] = s
        for i in range(ns):
            for j in range(i + 1):
                s = 0.0
                for l in range(k):
                    s += BoT[i, l] * BoT[j, l]
                S[p, i, j] += s
            for j in range(ns):
                S[p, ns + i, j] += B[p, i, j]  # row r_i, column d_j: A's entry (i, j)
        for i in range(m):
            for j in range(i):
                S[p, j, i] = S[p, i, j]
    return L, WT, S, True


@njit(cache=_CACHE)
def lm_eliminate_rhs(B, ns, L, WT, d_own, own, wx, nxs, f, g, bx):
    """Forward elimination of a right-hand side (f, g) (d rows, r rows) of the augmented system for the factors of
    lm_eliminate: the own d rows' right-hand side h = f_o + Bo_oo^T g_o, z = L^-1 h (returned, (P, k)); the shared
    d rows gain Bo_os^T g_o and lose the (d_s, r_s) rows of WT z (bx: d_s at wx, r_s at nxs + wx)."""
    P, nl = B.shape[0], B.shape[1]
    k = nl - ns
    z = np.empty((P, k))
    for p in range(P):
        zp = z[p]
        for a in range(k):
            zp[a] = f[own[p, a]] + d_own[p, a] * g[own[p, a]]
        for i in range(k):
            gi = g[own[p, i]]
            if gi != 0.0:
                for a in range(k):
                    zp[a] += B[p, ns + i, ns + a] * gi
        for j in range(ns):
            s = 0.0
            for i in range(k):
                s += B[p, ns + i, j] * g[own[p, i]]
            bx[wx[p, j]] += s
        _fwd(L[p], zp)
        for i in range(ns):
            s = 0.0
            t = 0.0
            for l in range(k):
                s += WT[p, i, l] * zp[l]
                t += WT[p, ns + i, l] * zp[l]
            bx[wx[p, i]] -= s
            bx[nxs + wx[p, i]] -= t
    return z


@njit(cache=_CACHE)
def lm_back_substitute(B, ns, L, WT, d_own, own, wx, nxs, z, g, sx, out_d, out_r):
    """The own unknowns from the shared ones sx = (d_s, r_s): d_o = L^-T (z - WT^T sx_e) (out_d[own]), and the
    eliminated own residuals r_o = Bo d_e - g_o (out_r[own])."""
    P, nl = B.shape[0], B.shape[1]
    k = nl - ns
    m = 2 * ns
    xl = np.empty(m)
    t = np.empty(k)
    for p in range(P):
        for i in range(ns):
            xl[i] = sx[wx[p, i]]
            xl[ns + i] = sx[nxs + wx[p, i]]
        for l in range(k):
            t[l] = z[p, l]
        for i in range(m):
            xi = xl[i]
            if xi != 0.0:
                for l in range(k):
                    t[l] -= WT[p, i, l] * xi
        Lp = L[p]
        for a in range(k - 1, -1, -1):
            s = t[a]
            for l in range(a + 1, k):
                s -= Lp[l, a] * t[l]
            t[a] = s / Lp[a, a]
        for a in range(k):
            out_d[own[p, a]] = t[a]
        for i in range(k):
            s = d_own[p, i] * t[i] - g[own[p, i]]
            for j in range(ns):
                s += B[p, ns + i, j] * xl[j]
            for a in range(k):
                s += B[p, ns + i, ns + a] * t[a]
            out_r[own[p, i]] = s


# ---- the Fischer-Burmeister reformulation and the stopping test of core.contact.mcp ----------------------------------


_SQRT_HALF = np.sqrt(0.5)


@njit(cache=_CACHE)
def _np_max0(x):
    """np.maximum(x, 0.0) (x itself when it is NaN)."""
    return x if (x >= 0.0 or x != x) else 0.0


@njit(cache=_CACHE)
def fb_reformulate(z, F, lower, bounded, lam, eps, weights):
    """Phi(z), dA and dB of core.contact.mcp._reformulate in one pass: for a bounded index i, with a = z_i - l_i and
    b = F_i, the penalised (smoothed for eps > 0) Fischer-Burmeister value phi(a, b) = lam (rho - a - b)
    - (1 - lam) max(a, 0) max(b, 0), rho = sqrt(a^2 + b^2 + 2 eps^2), and its gradient element (da, db) (at the kink
    rho = 0 the diagonal (sqrt(1/2) - 1) lam); for a free index Phi_i = w_i F_i, dA_i = 0, dB_i = w_i.  The same
    floating-point operations in the same order as core.contact.mcp.fb_function (bit-identical results)."""
    n = z.shape[0]
    Phi = np.empty(n)
    dA = np.empty(n)
    dB = np.empty(n)
    e2 = 2.0 * eps * eps
    pen = 1.0 - lam
    for i in range(n):
        b = F[i]
        if not bounded[i]:
            Phi[i] = weights[i] * b
            dA[i] = 0.0
            dB[i] = weights[i]
            continue
        a = z[i] - lower[i]
        rho = np.sqrt(a * a + b * b + e2)
        phi = lam * (rho - a - b)
        if rho < 1e-300:
            da = lam * (_SQRT_HALF - 1.0)
            db = da
        else:
            da = lam * (a / rho - 1.0)
            db = lam * (b / rho - 1.0)
        if lam < 1.0:
            ap = _np_max0(a)
            bp = _np_max0(b)
            phi = phi - pen * ap * bp
            da = da - pen * (1.0 if a > 0.0 else 0.0) * bp
            db = db - pen * (1.0 if b > 0.0 else 0.0) * ap
        Phi[i] = phi
        dA[i] = da
        dB[i] = db
    return Phi, dA, dB


@njit(cache=_CACHE)
def natural_parts(z, F, lower):
    """(max_i |nat_i|, max_i |z_i|) of core.contact.mcp.natural_residual: nat_i = min(z_i - l_i, F_i) for a finite
    lower bound l_i, F_i for l_i = -inf; NaN when an entry is NaN (as np.max)."""
    m_nat = 0.0
    m_z = 0.0
    for i in range(z.shape[0]):
        f = F[i]
        if np.isfinite(lower[i]):
            x = z[i] - lower[i]
            if x <= f or x != x:  # np.minimum: NaN propagates
                f = x
        v = abs(f)
        if v > m_nat or v != v:
            m_nat = v
            if v != v:
                break
    for i in range(z.shape[0]):
        v = abs(z[i])
        if v > m_z or v != v:
            m_z = v
            if v != v:
                break
    return m_nat, m_z


@njit(cache=_CACHE)
def overlap_depth(z, F, i_lam, i_mu, i_s, i_a1, i_a2, span):
    """The deepest first-order overlap over the pairs (core.contact.stepper._StepProblem.depth_residual): per pair
    sum lam_i+ (-f_i(a1))+ over its rows i_lam (P, m) (an index >= z.size pads: 0), likewise for B (i_mu), plus the
    norm of the rows i_a2 (P, 3), the negative part of s (i_s), and span times the norm of the rows i_a1; NaN when a
    pair's depth is NaN."""
    n = z.shape[0]
    worst = 0.0
    for p in range(i_s.shape[0]):
        dA = 0.0
        for j in range(i_lam.shape[1]):
            i = i_lam[p, j]
            if i < n:
                dA += max(z[i], 0.0) * max(F[i], 0.0)
        dB = 0.0
        for j in range(i_mu.shape[1]):
            i = i_mu[p, j]
            if i < n:
                dB += max(z[i], 0.0) * max(F[i], 0.0)
        m2 = F[i_a2[p, 0]] ** 2 + F[i_a2[p, 1]] ** 2 + F[i_a2[p, 2]] ** 2
        m1 = F[i_a1[p, 0]] ** 2 + F[i_a1[p, 1]] ** 2 + F[i_a1[p, 2]] ** 2
        d = dA + dB + np.sqrt(m2) + max(-z[i_s[p]], 0.0) + span[p] * np.sqrt(m1)
        if d != d:
            return d
        if d > worst or p == 0:
            worst = d
    return worst
