"""One contact pair of the geometrically implicit step: residual rows and their analytic local Jacobian.

Unknowns of a pair (in this order, "pair block"):
    a1 (3)   point of body A, world, end of step
    a2 (3)   point of body B, world, end of step
    lam (m)  multipliers of A's inequalities f_i        (>= 0, complementary to -f_i(a1))
    mu (k)   multipliers of B's inequalities g_j        (>= 0, complementary to -g_j(a2))
    s        separation multiplier: a2 - a1 = s n_A     (free; the gap)
    pn       normal impulse / m_ref                     (>= 0, complementary to s / h)
    phi_k    friction impulses / (m_ref e_k pn), k = t, o (and r when e_r > 0)   (free)
    sig      sliding-speed multiplier                   (>= 0, complementary to the ellipsoid slack)
Equations (paired with the unknowns slot by slot, as the MCP needs):
    [a1 slot]  n_A + n_B = 0                    n_A = sum lam_i grad f_i(a1), n_B = sum mu_j grad g_j(a2)
    [a2 slot]  a2 - a1 - s n_A = 0              (a2 lies off A along A's outward normal)
    [lam]      -f_i(a1)                         [mu] -g_j(a2)
    [s slot]   (|n_A|^2 - 1)/2 = 0              (normalisation: s is the signed separation in metres)
    [pn]       s / h                            (non-penetration of the END-OF-STEP closest points; the step
                                                 subtracts the overlap a pair keeps, core.contact.stepper._kept_overlap)
    [phi_k]    mu_f (e_k v_k) + phi_k (sig + separation_pin(s/h)) = 0   (maximal dissipation; v_k end-of-step
               sliding/spin speeds of A relative to B's motion, carried_slip; the s term vanishes under load and
               pins phi of a separated pair)
    [sig]      mu_f^2 - sum phi_k^2             (friction ellipsoid)
The friction impulses are p_k = m_ref e_k pn phi_k: multiplying the [phi_k] rows by pn gives exactly the
formulation's e_k^2 mu p_n v_k + p_k sigma' = 0 and the [sig] row by pn^2 its ellipsoid, so for pn > 0
the solutions coincide; the normalised form stays regular (no double root) when the pair separates.
With s >= 0 the two support planes through a1 and a2 (normals n_A, n_B = -n_A) separate the bodies, so
complementarity on s is exactly "no interpenetration at the end of the step".  The contact normal is
n = n_B (from B towards A); A receives +[F; r_A x F + p_r n], B the opposite, with
F = m_ref pn (n + e_t phi_t t + e_o phi_o o).

The "local" columns are [vA, wA, vB, wB, pair block]; derivatives flow through the position update
p+ = p + h v, R+ = cayley(h w / 2) R (world rotation perturbation dtheta = T(w) dw).

Two more forms of the same friction law share the slots (eval_pairs(rho=...), core.contact.kernels.pair_terms; the
step tries them in turn, docs/contact.md "The solver"): the friction slots hold the impulses q_k = p_k / (m_ref e_k)
themselves, so F = m_ref (pn n + e_t q_t t + e_o q_o o) is linear in the impulses, and
    Alart-Curnier (rho > 0):  [q_k]  q - proj_{|q| <= mu_f pn}(q - rho e v) = 0   (free, nonsmooth)
                              [sig]  sig  (unused: 0 <= sig perp sig >= 0 gives sig = 0)
    conic (rho < 0):          [q_k]  e_k v_k,  [sig] psi: (mu_f pn, q) and (psi, e v) in the second-order cone,
                              complementary (the interior-point solver keeps the cones, core.contact.ipm)
For pn > 0 all three have the same solutions (q = pn phi; psi = sig); with pn = 0 the first two give q = 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bodies import cayley, cayley_jacobian
from .kernels import pair_batch

__all__ = ["cross3", "carried_slip", "shared_spin", "PairLayout", "pair_layout", "eval_pair", "eval_pairs", "eval_geometry",
           "separation_pin", "tangent_frame", "contact_frame_aux", "PIN_SPEED", "DEPTH_LIMIT"]


def _sk(v):
    """Skew matrix [v]x (from a Python float triple: numpy scalar indexing is slow)."""
    x, y, z = v.tolist()
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def cross3(a, b):
    """a x b for 3-vectors (np.cross costs ~20 us per call on small arrays)."""
    ax, ay, az = a.tolist()
    bx, by, bz = b.tolist()
    return np.array([ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx])


_I3 = np.eye(3)
_I3.setflags(write=False)


def shared_spin(wA: np.ndarray, wB: np.ndarray):
    """The rotation two bodies share, ws = s (wA + wB) with s = (wA . wB) / (|wA|^2 + |wB|^2), and its derivatives
    dws/dwA, dws/dwB (3 x 3): w when both turn at w, 0 when either does not turn or their spins are perpendicular or
    opposite (meshing gears), symmetric in the two bodies, |ws| <= max(|wA|, |wB|); 0 when neither turns."""
    q = float(wA @ wA + wB @ wB)
    if q == 0.0:
        return np.zeros(3), np.zeros((3, 3)), np.zeros((3, 3))
    s = float(wA @ wB) / q
    u = wA + wB
    ds_dA = (wB - 2.0 * s * wA) / q
    ds_dB = (wA - 2.0 * s * wB) / q
    return s * u, s * _I3 + np.outer(u, ds_dA), s * _I3 + np.outer(u, ds_dB)


def carried_slip(wA: np.ndarray, wB: np.ndarray, d1: np.ndarray, d2: np.ndarray, h: float):
    """The part of a pair's slip velocity that the bodies' shared rotation carries over the step: c = (I - M) g, with
    g = wB x d2 - wA x d1 (d1 = a1 - pA+, d2 = a2 - pB+, the end-of-step lever arms of the closest points from the
    bodies' centres), M = (I + h [ws]x / 2)^-1 and ws the rotation the two share (shared_spin).  Returns c (3) and its
    derivatives dc/dwA, dc/dwB, dc/dd1 and dc/dd2 (3 x 3 each).

    The slip is the end-of-step relative velocity at the contact, v_A + wA x d1 - v_B - wB x d2, plus c; that is
    v_A - v_B + M (wA x d1 - wB x d2).  The step moves a body by p+ = p + h v, R+ = cayley(h w / 2) R, so two bodies
    that move as one rigid body (the same w, and then ws = w) have v_A - v_B = M (w x (pA+ - pB+)), and their slip is
    M (w x (a1 - a2)) = 0 at the contact: a sticking cluster can turn as one (without c such a pair slips by about
    h |w|^2 |D| / 2 in every step, and a jammed pile has no consistent end-of-step geometry).  Where one body does not
    turn (a fixed or translating support, ws = 0) c = 0: the slip is the end-of-step relative velocity, so a ball
    rolls at v = w r on a floor or a sliding plank.  The lever arms are the bodies' own and ws is symmetric, so the
    slip of (B, A) is minus that of (A, B): the order of the bodies in a document changes nothing.  (With B's spin in
    M and A's centre as B's lever, a 5 cm ball rolling at 20 rad/s on a 2 m plank listed first slipped by about 1 m/s
    that did not exist, and friction drove the ball.)

    With a = h/2, W = [ws]x and den = 1 + a^2 |ws|^2: I - M = (a W - a^2 W^2) / den, so
    c = (a ws x g - a^2 ws (ws . g) + a^2 |ws|^2 g) / den."""
    a = 0.5 * h
    w, dw_dA, dw_dB = shared_spin(wA, wB)
    w2 = float(w @ w)
    den = 1.0 + a * a * w2
    g = cross3(wB, d2) - cross3(wA, d1)
    wg = float(w @ g)
    c = (a * cross3(w, g) - (a * a * wg) * w + (a * a * w2) * g) / den
    Sw = _sk(w)
    K = (a * Sw - (a * a) * (Sw @ Sw)) / den  # I - M
    dc_dd2 = K @ _sk(wB)
    dc_dd1 = -K @ _sk(wA)
    dc_dw = (-a * _sk(g) - (a * a * wg) * _I3 - (a * a) * np.outer(w, g) + 2.0 * a * a * np.outer(g - c, w)) / den
    dc_dwA = dc_dw @ dw_dA + K @ _sk(d1)
    dc_dwB = dc_dw @ dw_dB - K @ _sk(d2)
    return c, dc_dwA, dc_dwB, dc_dd1, dc_dd2


@dataclass(frozen=True)
class PairLayout:
    """Offsets of the pair unknowns inside the pair block."""

    m: int  # inequalities of A
    k: int  # inequalities of B
    nf: int  # friction impulse components (0 = frictionless, 2 = tangential, 3 = with torsion)

    @property
    def a1(self):
        return 0

    @property
    def a2(self):
        return 3

    @property
    def lam(self):
        return 6

    @property
    def mu(self):
        return 6 + self.m

    @property
    def s(self):
        return 6 + self.m + self.k

    @property
    def pn(self):
        return 7 + self.m + self.k

    @property
    def pf(self):
        return 8 + self.m + self.k

    @property
    def sig(self):
        return 8 + self.m + self.k + self.nf

    @property
    def size(self):
        return 8 + self.m + self.k + (self.nf + 1 if self.nf else 0)

    @property
    def n_geom(self):
        """Number of geometric unknowns (a1, a2, lam, mu, s)."""
        return 7 + self.m + self.k

    def lower(self) -> np.ndarray:
        """Lower bounds of the pair block (-inf = free)."""
        lo = np.full(self.size, -np.inf)
        lo[self.lam:self.s] = 0.0
        lo[self.pn] = 0.0
        if self.nf:
            lo[self.sig] = 0.0
        return lo


def pair_layout(m: int, k: int, mu_f: float, e_r: float) -> PairLayout:
    """Layout for shapes with m and k inequalities, friction mu_f and torsion length e_r."""
    nf = 0 if mu_f <= 0.0 else (3 if e_r > 0.0 else 2)
    return PairLayout(m, k, nf)


PIN_SPEED = 1e-4  # m/s: below this separation speed the friction pin fades out quadratically
DEPTH_LIMIT = 9e-10  # m: the deepest overlap of two bodies (first order) that an implicit step accepts (the stopping
# test's overlap bound, core.contact.stepper._DEPTH_LIMIT, where its measurements are); a closest-point query finding
# a deeper one looks for the penetration with the expanding polytope (core.contact.closest)


def separation_pin(x):
    """The friction pin of a separated pair and its derivative: x^2 / (|x| + PIN_SPEED) for x = s/h (or arrays).

    About max(x, 0) for a clearly separated pair; zero with zero slope at x = 0, so the friction rows stay
    smooth at a loaded contact (s = 0 at the solution; a kink there stalls the Newton iteration)."""
    ax = np.abs(x)
    d = ax + PIN_SPEED
    return x * x / d, x * (ax + 2.0 * PIN_SPEED) / (d * d)


def contact_frame_aux(n: np.ndarray) -> np.ndarray:
    """A fixed auxiliary axis far from n, used to build the tangent frame during one step."""
    ax = np.abs(n)
    e = np.zeros(3)
    e[int(np.argmin(ax))] = 1.0
    return e


def tangent_frame(n: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tangents t = (e x n)/|e x n|, o = n x t."""
    u = cross3(e, n)
    t = u / np.linalg.norm(u)
    return t, cross3(n, t)


def _shape_eval(shape, y):
    """Values (m), gradients (m,3), Hessians (m,3,3) of a shape's inequalities at body point y."""
    return (np.asarray(shape.values(y), float), np.asarray(shape.gradients(y), float),
            np.asarray(shape.hessians(y), float))


def eval_geometry(shapeA, RA, pA, cA, shapeB, RB, pB, cB, z):
    """Geometric rows (a1, a2, lam, mu, s slots) and their Jacobian w.r.t. the geometric unknowns at fixed poses:
    the numpy reference of the compiled kernels.geometry_rows, which the closest-point queries use."""
    m, k = shapeA.m, shapeB.m
    lay = PairLayout(m, k, 0)
    a1, a2 = z[0:3], z[3:6]
    lam, mu, s = z[6:6 + m], z[6 + m:6 + m + k], z[6 + m + k]
    FA, dFA, HFA = _shape_eval(shapeA, RA.T @ (a1 - pA) + cA)
    GB, dGB, HGB = _shape_eval(shapeB, RB.T @ (a2 - pB) + cB)
    NA = RA @ dFA.T
    NB = RB @ dGB.T
    HA = RA @ np.tensordot(lam, HFA, 1) @ RA.T
    HB = RB @ np.tensordot(mu, HGB, 1) @ RB.T
    nA = NA @ lam
    nB = NB @ mu
    ng = lay.n_geom
    r = np.empty(ng)
    J = np.zeros((ng, ng))
    r[0:3] = nA + nB
    J[0:3, 0:3] = HA
    J[0:3, 3:6] = HB
    J[0:3, 6:6 + m] = NA
    J[0:3, 6 + m:6 + m + k] = NB
    r[3:6] = a2 - a1 - s * nA
    J[3:6, 0:3] = -np.eye(3) - s * HA
    J[3:6, 3:6] = np.eye(3)
    J[3:6, 6:6 + m] = -s * NA
    J[3:6, 6 + m + k] = -nA
    r[6:6 + m] = -FA
    J[6:6 + m, 0:3] = -NA.T
    r[6 + m:6 + m + k] = -GB
    J[6 + m:6 + m + k, 3:6] = -NB.T
    r[6 + m + k] = 0.5 * (nA @ nA - 1.0)
    J[6 + m + k, 0:3] = nA @ HA
    J[6 + m + k, 6:6 + m] = nA @ NA
    return r, J


def eval_pair(lay: PairLayout, h: float, mu_f: float, ell, m_ref: float, e_aux: np.ndarray,
              shapeA, pA0, RA0, cA, vA, wA, shapeB, pB0, RB0, cB, vB, wB, dynB: bool, z: np.ndarray):
    """One pair: residual (lay.size), local Jacobian (lay.size x (12 + lay.size)), the impulse wrench on A
    [F; tau] (6) with its local Jacobian (6 x nloc), and the wrench on B likewise (None when B is static).

    The same rows as eval_pairs, written for one pair in plain numpy: the reference the compiled kernels are
    tested against (tests/core/contact/test_stepper.py: the two agree to rounding, and this one's Jacobian agrees
    with central differences); the step itself evaluates pairs in batches (eval_pairs)."""
    m, k, nf = lay.m, lay.k, lay.nf
    nloc = 12 + lay.size
    o = 12  # offset of the pair block among local columns
    ia1, ia2, ilam, imu, i_s, ipn, ipf, isig = (o + lay.a1, o + lay.a2, o + lay.lam, o + lay.mu, o + lay.s,
                                               o + lay.pn, o + lay.pf, o + lay.sig)
    a1, a2 = z[lay.a1:lay.a1 + 3], z[lay.a2:lay.a2 + 3]
    lam, mu = z[lay.lam:lay.mu], z[lay.mu:lay.s]
    s, pn = z[lay.s], z[lay.pn]
    I3 = _I3

    # end-of-step poses and their local Jacobians (dp = J_p dx, dtheta = J_th dx)
    RA = cayley(0.5 * h * wA) @ RA0
    pA = pA0 + h * vA
    J_pA = np.zeros((3, nloc)); J_pA[:, 0:3] = h * I3
    J_thA = np.zeros((3, nloc)); J_thA[:, 3:6] = cayley_jacobian(wA, h)
    if dynB:
        RB = cayley(0.5 * h * wB) @ RB0
        pB = pB0 + h * vB
        J_pB = np.zeros((3, nloc)); J_pB[:, 6:9] = h * I3
        J_thB = np.zeros((3, nloc)); J_thB[:, 9:12] = cayley_jacobian(wB, h)
    else:
        RB, pB = RB0, pB0
        J_pB = J_thB = np.zeros((3, nloc))

    d1 = a1 - pA
    d2 = a2 - pB
    J_d1 = -J_pA.copy(); J_d1[:, ia1:ia1 + 3] += I3
    J_d2 = -J_pB.copy(); J_d2[:, ia2:ia2 + 3] += I3
    J_x1 = J_d1 + _sk(d1) @ J_thA  # world displacement of a1 relative to body A
    J_x2 = J_d2 + _sk(d2) @ J_thB

    FA, dFA, HFA = _shape_eval(shapeA, RA.T @ d1 + cA)
    GB, dGB, HGB = _shape_eval(shapeB, RB.T @ d2 + cB)
    NA = RA @ dFA.T  # (3, m) world gradients
    NB = RB @ dGB.T
    HA = RA @ np.tensordot(lam, HFA, 1) @ RA.T
    HB = RB @ np.tensordot(mu, HGB, 1) @ RB.T
    nA = NA @ lam
    nB = NB @ mu
    J_nA = HA @ J_x1 - _sk(nA) @ J_thA
    J_nA[:, ilam:imu] += NA
    J_nB = HB @ J_x2 - _sk(nB) @ J_thB
    J_nB[:, imu:i_s] += NB

    r = np.empty(lay.size)
    J = np.zeros((lay.size, nloc))
    # closest-point (KKT) rows
    r[0:3] = nA + nB
    J[0:3] = J_nA + J_nB
    r[3:6] = a2 - a1 - s * nA
    J[3:6] = -s * J_nA
    J[3:6, ia2:ia2 + 3] += I3
    J[3:6, ia1:ia1 + 3] -= I3
    J[3:6, i_s] -= nA
    r[lay.lam:lay.mu] = -FA
    J[lay.lam:lay.mu] = -(NA.T @ J_x1)
    r[lay.mu:lay.s] = -GB
    J[lay.mu:lay.s] = -(NB.T @ J_x2)
    r[lay.s] = 0.5 * (nA @ nA - 1.0)
    J[lay.s] = nA @ J_nA
    # non-penetration (in velocity units so that it is commensurate with pn)
    r[lay.pn] = s / h
    J[lay.pn, i_s] = 1.0 / h

    # contact frame from B's normal
    n = nB
    J_n = J_nB
    F = m_ref * pn * n
    J_F = m_ref * pn * J_n
    J_F[:, ipn] += m_ref * n
    tauA_extra = np.zeros(3)
    J_tauA_extra = np.zeros((3, nloc))
    if nf:
        e_t, e_o, e_r = ell
        u = cross3(e_aux, n)
        lu = max(float(np.linalg.norm(u)), 1e-300)  # n along e_aux (or zero) only at wild trial points, rejected
        t = u / lu
        J_t = ((I3 - np.outer(t, t)) / lu) @ _sk(e_aux) @ J_n
        ov = cross3(n, t)
        J_o = -_sk(t) @ J_n + _sk(n) @ J_t
        vrel = vA + cross3(wA, d1)
        J_vrel = _sk(wA) @ J_d1
        J_vrel[:, 0:3] += I3
        J_vrel[:, 3:6] -= _sk(d1)
        if dynB:
            vrel = vrel - vB - cross3(wB, d2)
            J_vrel -= _sk(wB) @ J_d2
            J_vrel[:, 6:9] -= I3
            J_vrel[:, 9:12] += _sk(d2)
            # measured against B's motion over the step (carried_slip)
            c, dc_dwA, dc_dwB, dc_dd1, dc_dd2 = carried_slip(wA, wB, d1, d2, h)
            vrel = vrel + c
            J_vrel[:, 3:6] += dc_dwA
            J_vrel[:, 9:12] += dc_dwB
            J_vrel += dc_dd1 @ J_d1 + dc_dd2 @ J_d2
        xi = np.empty(nf)
        J_xi = np.empty((nf, nloc))
        xi[0] = e_t * (t @ vrel)
        J_xi[0] = e_t * (t @ J_vrel + vrel @ J_t)
        xi[1] = e_o * (ov @ vrel)
        J_xi[1] = e_o * (ov @ J_vrel + vrel @ J_o)
        if nf == 3:
            dw = wA - (wB if dynB else 0.0)
            xi[2] = e_r * (n @ dw)
            J_xi[2] = e_r * (dw @ J_n)
            J_xi[2, 3:6] += e_r * n
            if dynB:
                J_xi[2, 9:12] -= e_r * n
        phi = z[lay.pf:lay.pf + nf]
        sig = z[lay.sig]
        # friction impulses are pn * phi_k (phi = impulse per unit normal impulse): the max-dissipation rows
        # mu pn xi + p sig = 0 divided by pn > 0, which keeps them regular when the pair separates (pn = 0)
        # + phi separation_pin(s/h): see eval_pairs
        sp, dsp = separation_pin(s / h)
        r[lay.pf:lay.pf + nf] = mu_f * xi + phi * (sig + sp)
        J[lay.pf:lay.pf + nf] = mu_f * J_xi
        J[lay.pf:lay.pf + nf, ipf:ipf + nf] += (sig + sp) * np.eye(nf)
        J[lay.pf:lay.pf + nf, isig] += phi
        J[lay.pf:lay.pf + nf, i_s] += phi * (dsp / h)
        r[lay.sig] = mu_f * mu_f - phi @ phi
        J[lay.sig, ipf:ipf + nf] = -2.0 * phi
        # friction impulse on A
        dirF = n + e_t * phi[0] * t + e_o * phi[1] * ov
        F = m_ref * pn * dirF
        J_F = m_ref * pn * (J_n + e_t * phi[0] * J_t + e_o * phi[1] * J_o)
        J_F[:, ipn] += m_ref * dirF
        J_F[:, ipf] += m_ref * pn * e_t * t
        J_F[:, ipf + 1] += m_ref * pn * e_o * ov
        if nf == 3:
            tauA_extra = m_ref * e_r * pn * phi[2] * n
            J_tauA_extra = m_ref * e_r * pn * phi[2] * J_n
            J_tauA_extra[:, ipf + 2] += m_ref * e_r * pn * n
            J_tauA_extra[:, ipn] += m_ref * e_r * phi[2] * n
    tauA = cross3(d1, F) + tauA_extra
    J_tauA = -_sk(F) @ J_d1 + _sk(d1) @ J_F + J_tauA_extra
    WA = np.concatenate((F, tauA))
    J_WA = np.vstack((J_F, J_tauA))
    if dynB:
        tauB = -cross3(d2, F) - tauA_extra
        J_tauB = _sk(F) @ J_d2 - _sk(d2) @ J_F - J_tauA_extra
        WB = np.concatenate((-F, tauB))
        J_WB = np.vstack((-J_F, J_tauB))
    else:
        WB, J_WB = None, None
    return r, J, WA, J_WA, WB, J_WB


def eval_pairs(lay: PairLayout, h: float, mu_f, ell, m_ref, e_aux, rowsA, pA0, RA0, cA, vA, wA,
               rowsB, pB0, RB0, cB, vB, wB, z, jac: bool = True, rho: float = 0.0):
    """A batch of P pairs with the same layout: residuals (P, size), local Jacobians (P, size, 12 + size),
    the impulse wrench on A [F; tau] (P, 6) with its Jacobian (P, 6, nloc) and the wrench on B likewise.

    Per-pair inputs are stacked along the first axis (mu_f, m_ref: (P,); e_aux, positions, velocities: (P, 3);
    rotations (P, 3, 3); z (P, size)); rowsA, rowsB: the shapes' inequality rows (kinds, params,
    core.shapes.stack_rows).  A static B is given with zero velocities; its velocity columns (6:12) of every Jacobian
    are then meaningless and the caller drops them.  With jac=False only the values are computed
    (the Jacobians are returned as None): the line search of the solver needs nothing else.  rho > 0: friction in
    the Alart-Curnier form with that parameter (the module docstring's last paragraph)."""
    c = np.ascontiguousarray
    e_t, e_o, e_r = (float(x) for x in ell)
    r, J, WA, J_WA, WB, J_WB = pair_batch(
        lay.m, lay.k, lay.nf, float(h), c(mu_f, dtype=float), e_t, e_o, e_r, PIN_SPEED, c(m_ref, dtype=float),
        c(e_aux, dtype=float), rowsA[0], rowsA[1], c(RA0), c(pA0), c(cA), c(vA), c(wA), rowsB[0], rowsB[1], c(RB0),
        c(pB0), c(cB), c(vB), c(wB), c(z), jac, float(rho))
    if not jac:
        return r, None, WA, None, WB, None
    return r, J, WA, J_WA, WB, J_WB
