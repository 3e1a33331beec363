"""The explicit comparison method's pair rows (Anitescu-Potra, Stewart-Trinkle): impulse unknowns [pn, friction
(nf), sig] with the geometry of the start of the step fixed (normal, contact points, gap) and the gap linearised,
gap0 / h + n . v_rel >= 0, with the same bodies and friction ellipsoid as the implicit method (core.contact.stepper
solves both).  _eval_explicit_batch evaluates a batch of pairs (compiled: kernels.explicit_terms); _eval_explicit is
its one-pair numpy reference.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .kernels import explicit_terms
from .pair import PIN_SPEED, PairLayout, _sk, cross3, separation_pin, tangent_frame

if TYPE_CHECKING:
    from .plan import _Pair

def _explicit_size(lay: PairLayout) -> int:
    return 1 + (lay.nf + 1 if lay.nf else 0)


def _eval_explicit_batch(nf: int, model, h: float, mu, m_ref, e_aux, n, d1, d2, gap0, vA, wA, vB, wB, dyn_b: bool, z,
                         jac: bool = True, rho: float = 0.0):
    """Explicit rows of P pairs with friction dimension nf and one kind of B (dynamic or static): residuals (P, size),
    local Jacobians (P, size, 12 + size), wrenches on A and B (P, 6) and their Jacobians (P, 6, 12 + size), as
    eval_pairs gives them for the implicit method (core.contact.kernels.explicit_terms; _eval_explicit is its one-pair
    reference).  mu, m_ref, gap0: (P,); e_aux, n, lever arms d1 (a1 - pA), d2 (a2 - pB), velocities: (P, 3)."""
    c = np.ascontiguousarray
    e_t, e_o, e_r = (float(x) for x in model.ellipsoid)
    return explicit_terms(int(nf), float(h), c(mu, dtype=float), e_t, e_o, e_r, PIN_SPEED, c(m_ref, dtype=float),
                          c(e_aux, dtype=float), c(n, dtype=float), c(d1, dtype=float), c(d2, dtype=float),
                          c(gap0, dtype=float), c(vA, dtype=float), c(wA, dtype=float), c(vB, dtype=float),
                          c(wB, dtype=float), bool(dyn_b), c(z, dtype=float), bool(jac), float(rho))


def _eval_explicit(pr: _Pair, model, state, vA, wA, vB, wB, dynB, zp, h, rho=0.0):
    """Explicit pair rows of one pair in plain numpy: pn perp gap0/h + n.v_rel; friction with the start-of-step frame
    and lever arms (rho > 0: in the Alart-Curnier form, rho < 0 the conic form, as the implicit pair's kernel).  The
    reference of the batched form (_eval_explicit_batch) in tests/core/contact; the step itself does not use it."""
    nf = pr.lay.nf
    sz = _explicit_size(pr.lay)
    nloc = 12 + sz
    n = pr.n
    d1 = pr.a1 - state.p[pr.a]
    d2 = pr.a2 - state.p[pr.b]
    vrel = vA + cross3(wA, d1)
    J_vrel = np.zeros((3, nloc))
    J_vrel[:, 0:3] = np.eye(3)
    J_vrel[:, 3:6] = -_sk(d1)
    if dynB:
        vrel = vrel - vB - cross3(wB, d2)
        J_vrel[:, 6:9] = -np.eye(3)
        J_vrel[:, 9:12] = _sk(d2)
    r = np.empty(sz)
    J = np.zeros((sz, nloc))
    pn = zp[0]
    r[0] = pr.gap0 / h + n @ vrel
    J[0] = n @ J_vrel
    F = pr.m_ref * pn * n
    J_F = np.zeros((3, nloc))
    J_F[:, 12] = pr.m_ref * n
    tx = np.zeros(3)
    J_tx = np.zeros((3, nloc))
    if nf:
        e_t, e_o, e_r = model.ellipsoid
        t, o = tangent_frame(n, pr.e_aux)
        pf = zp[1:1 + nf]
        sig = zp[1 + nf]
        xi = np.empty(nf)
        J_xi = np.zeros((nf, nloc))
        xi[0] = e_t * (t @ vrel); J_xi[0] = e_t * (t @ J_vrel)
        xi[1] = e_o * (o @ vrel); J_xi[1] = e_o * (o @ J_vrel)
        if nf == 3:
            xi[2] = e_r * (n @ (wA - (wB if dynB else 0.0)))
            J_xi[2, 3:6] = e_r * n
            if dynB:
                J_xi[2, 9:12] = -e_r * n
        mu = pr.mu
        if rho < 0.0:
            # the conic form: the rows are the sliding speeds, (psi, xi) in the cone K with (mu pn, q)
            q = pf
            r[1:1 + nf] = xi
            J[1:1 + nf] = J_xi
        if rho > 0.0:
            # Alart-Curnier rows: q = proj_{|q| <= mu pn}(q - rho xi) (core.contact.kernels.pair_terms)
            q = pf
            x = q - rho * xi
            nx = float(np.sqrt(x @ x))
            rad = mu * pn if pn > 0.0 else 0.0
            if rad > 0.0 and nx <= rad:
                r[1:1 + nf] = rho * xi
                J[1:1 + nf] = rho * J_xi
            elif nx == 0.0:
                r[1:1 + nf] = q
                J[1:1 + nf, 13:13 + nf] = np.eye(nf)
            else:
                Pm = (rad / nx) * (np.eye(nf) - np.outer(x, x) / (nx * nx))
                r[1:1 + nf] = q - rad * x / nx
                J[1:1 + nf] = rho * (Pm @ J_xi)
                J[1:1 + nf, 13:13 + nf] += np.eye(nf) - Pm
                if pn > 0.0:
                    J[1:1 + nf, 12] -= mu * x / nx
        if rho != 0.0:
            r[1 + nf] = sig
            J[1 + nf, 13 + nf] = 1.0
            F = pr.m_ref * (pn * n + e_t * q[0] * t + e_o * q[1] * o)
            J_F[:, 13] += pr.m_ref * e_t * t
            J_F[:, 14] += pr.m_ref * e_o * o
            if nf == 3:
                tx = pr.m_ref * e_r * q[2] * n
                J_tx[:, 15] = pr.m_ref * e_r * n
            nf = 0  # (done)
    if nf:
        mu = pr.mu
        # the same normalised friction rows as the implicit pair (impulse = pn * phi)
        # + pf separation_pin(gap_lin): as for the implicit pair, pins the friction unknowns of a separating pair
        sp, dsp = separation_pin(r[0])
        r[1:1 + nf] = mu * xi + pf * (sig + sp)
        J[1:1 + nf] = mu * J_xi
        J[1:1 + nf, 13:13 + nf] += (sig + sp) * np.eye(nf)
        J[1:1 + nf, 13 + nf] += pf
        J[1:1 + nf] += dsp * np.outer(pf, J[0])
        r[1 + nf] = mu * mu - pf @ pf
        J[1 + nf, 13:13 + nf] = -2 * pf
        dirF = n + e_t * pf[0] * t + e_o * pf[1] * o
        F = pr.m_ref * pn * dirF
        J_F[:, 12] = pr.m_ref * dirF
        J_F[:, 13] += pr.m_ref * pn * e_t * t
        J_F[:, 14] += pr.m_ref * pn * e_o * o
        if nf == 3:
            tx = pr.m_ref * e_r * pn * pf[2] * n
            J_tx[:, 15] = pr.m_ref * e_r * pn * n
            J_tx[:, 12] = pr.m_ref * e_r * pf[2] * n
    WA = np.concatenate((F, cross3(d1, F) + tx))
    JWA = np.vstack((J_F, _sk(d1) @ J_F + J_tx))
    if dynB:
        WB = np.concatenate((-F, -cross3(d2, F) - tx))
        JWB = np.vstack((-J_F, -_sk(d2) @ J_F - J_tx))
    else:
        WB = JWB = None
    return r, J, WA, JWA, WB, JWB
