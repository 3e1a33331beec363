"""Time-stepping of rigid bodies with intermittent contact: geometrically implicit and explicit methods.

One step of size h solves, for the end-of-step velocities nu = (v, w) of every dynamic body and the
pair unknowns of every candidate pair (see core.contact.pair), the mixed complementarity problem
    v - v0 - h (g + f/m)                         - sum F / m            = 0
    w - w0 - h I0^-1 (tau - w0 x I0 w0)          - sum I0^-1 tau_c      = 0
    pair rows (closest points by KKT, non-penetration, friction ellipsoid)
with I0 = R0 I_body R0^T, the world inertia at the START of the step (the gyroscopic term is explicit),
and the position update p+ = p + h v, Q+ = (1, h w / 2) * Q / sqrt(1 + h^2 |w|^2 / 4).

method "implicit": the geometry of every pair is evaluated at the end-of-step configuration (Chakraborty
et al. 2014).  method "explicit": contact points and normal from a closest-point query at the start of the
step and the gap linearised, gap0 / h + n . v_rel(nu) >= 0 (Anitescu-Potra / Stewart-Trinkle), with the
same bodies and friction ellipsoid.

The step size h is fixed (the caller's dt).  A step that does not converge is retried as two half steps
(up to `max_halvings` times); if that also fails the step is reported as failed and the state is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .bodies import ContactModel, State, cayley
from .mcp import solve_mcp
from .pair import PairLayout, contact_frame_aux, eval_geometry, eval_pair, pair_layout, tangent_frame
from ..transforms import quat_to_matrix

__all__ = ["ContactResult", "StepResult", "step", "closest_points", "candidate_pairs", "METHODS"]

METHODS = ("implicit", "explicit")
_DENSE_LIMIT = 250  # above this many unknowns the Jacobian is assembled sparse


@dataclass(frozen=True)
class ContactResult:
    """One candidate pair after a step (physical impulses over the step, world frame)."""

    pair: int  # index into model.pairs
    a1: np.ndarray  # closest point on A (end of step for implicit, start for explicit)
    a2: np.ndarray  # closest point on B
    normal: np.ndarray  # unit normal from B towards A
    gap: float  # separation along the normal (m); for "explicit" the linearised end-of-step gap
    pn: float  # normal impulse (N s)
    pf: np.ndarray  # friction impulse vector on A, world (N s)
    pr: float  # torsional friction impulse about the normal (N m s)
    slip: np.ndarray  # end-of-step sliding velocity of A relative to B at the contact, world (m/s)
    mu: float  # friction coefficient of the pair


@dataclass
class StepResult:
    """Outcome of one step (a result; on failure `state` is the unchanged input state)."""

    state: State
    converged: bool
    iterations: int
    residual: float
    reason: str
    contacts: list = field(default_factory=list)
    halvings: int = 0  # how many times the step had to be split to converge


def _rot(q):
    return quat_to_matrix(q)


def _world_halfspace(model: ContactModel, b: int, state: State):
    """World normal and offset (n.x <= c) of half-space body b."""
    nb, off = model.halfspace[b]
    R = _rot(state.q[b])
    nw = R @ nb
    return nw, off - nb @ model.com_body[b] + nw @ state.p[b]


def candidate_pairs(model: ContactModel, state: State, h: float, keep=()) -> tuple[list[int], dict[int, float]]:
    """Pairs whose bounding volumes, inflated by what can be travelled in one step, overlap; and lower gap bounds."""
    g = float(np.linalg.norm(model.gravity))
    out, bounds = [], {}
    for ip, (a, b, _mu) in enumerate(model.pairs):
        ra = model.radius[a]
        reach = np.linalg.norm(state.v[a]) + np.linalg.norm(state.w[a]) * ra
        if model.halfspace[b] is not None:
            nw, c = _world_halfspace(model, b, state)
            lb = nw @ state.p[a] - c - ra
        else:
            rb = model.radius[b]
            reach += np.linalg.norm(state.v[b]) + np.linalg.norm(state.w[b]) * rb
            lb = np.linalg.norm(state.p[a] - state.p[b]) - ra - rb
        margin = 2.0 * h * reach + 2.0 * h * h * g + 1e-3 + 0.02 * ra
        bounds[ip] = float(lb)
        if lb <= margin or (ip in keep and lb <= 2.0 * margin):
            out.append(ip)
    return out, bounds


def _initial_geometry(model: ContactModel, state: State, ip: int) -> np.ndarray:
    """A starting point for the closest-point unknowns (support points, most active inequality)."""
    a, b, _ = model.pairs[ip]
    sa, sb = model.shapes[a], model.shapes[b]
    Ra, Rb = _rot(state.q[a]), _rot(state.q[b])
    if model.halfspace[b] is not None:
        nw, c = _world_halfspace(model, b, state)
        dA = -nw  # deepest point of A towards the plane
    else:
        dA = state.p[b] - state.p[a]
        ln = np.linalg.norm(dA)
        dA = dA / ln if ln > 1e-12 else np.array([0.0, 0.0, -1.0])
    ya = np.asarray(sa.support(Ra.T @ dA), float)
    a1 = state.p[a] + Ra @ (ya - model.com_body[a])
    if model.halfspace[b] is not None:
        a2 = a1 - (nw @ a1 - c) * nw
        yb = Rb.T @ (a2 - state.p[b]) + model.com_body[b]
    else:
        yb = np.asarray(sb.support(Rb.T @ (-dA)), float)
        a2 = state.p[b] + Rb @ (yb - model.com_body[b])
    lay = PairLayout(sa.m, sb.m, 0)
    z = np.zeros(lay.n_geom)
    z[0:3], z[3:6] = a1, a2
    fa, ga = np.asarray(sa.values(ya)), np.asarray(sa.gradients(ya))
    i = int(np.argmax(fa))
    z[6 + i] = 1.0 / max(np.linalg.norm(ga[i]), 1e-12)
    fb, gb = np.asarray(sb.values(yb)), np.asarray(sb.gradients(yb))
    j = int(np.argmax(fb))
    z[6 + sa.m + j] = 1.0 / max(np.linalg.norm(gb[j]), 1e-12)
    nA = Ra @ (ga[i] * z[6 + i])
    z[lay.s] = nA @ (a2 - a1)
    return z


def closest_points(model: ContactModel, state: State, ip: int, guess: np.ndarray | None = None):
    """Closest points (or common boundary point) of pair ip at the given state by the KKT system; (z, result)."""
    a, b, _ = model.pairs[ip]
    sa, sb = model.shapes[a], model.shapes[b]
    Ra, Rb = _rot(state.q[a]), _rot(state.q[b])
    lay = PairLayout(sa.m, sb.m, 0)
    z0 = guess if guess is not None else _initial_geometry(model, state, ip)

    def fun(z):
        return eval_geometry(sa, Ra, state.p[a], model.com_body[a], sb, Rb, state.p[b], model.com_body[b], z)

    res = solve_mcp(fun, z0, lay.lower()[: lay.n_geom], tol=1e-12, max_iter=80)
    if not res.converged and guess is not None:
        res2 = solve_mcp(fun, _initial_geometry(model, state, ip), lay.lower()[: lay.n_geom], tol=1e-12, max_iter=80)
        if res2.residual < res.residual:
            res = res2
    return res.z, res


@dataclass
class _Pair:
    ip: int
    a: int
    b: int
    mu: float
    lay: PairLayout
    off: int  # offset of the pair block in the global unknowns
    m_ref: float
    e_aux: np.ndarray
    # explicit method only: fixed geometry from the start of the step
    a1: np.ndarray | None = None
    a2: np.ndarray | None = None
    n: np.ndarray | None = None
    gap0: float = 0.0
    geo0: np.ndarray | None = None  # implicit: starting closest-point unknowns
    zf0: np.ndarray | None = None  # implicit: starting impulse unknowns (warm start or predictor)


def _layout_for(model, ip, method):
    a, b, mu = model.pairs[ip]
    e_r = model.ellipsoid[2]
    if method == "implicit":
        return pair_layout(model.shapes[a].m, model.shapes[b].m, mu, e_r)
    return pair_layout(0, 0, mu, e_r)  # explicit: only the impulse part (offsets shifted below)


def step(model: ContactModel, state: State, h: float, method: str = "implicit", *, tol: float = 1e-10,
         max_iter: int = 60, max_halvings: int = 2) -> StepResult:
    """Advance `state` by h (no exception on failure: a result with converged=False and the input state)."""
    res = _step_once(model, state, h, method, tol, max_iter)
    if not res.converged and method == "implicit":
        # the warm start may be what failed: restart every pair from the explicit predictor
        again = _step_once(model, state, h, method, tol, max_iter, predict=True)
        again.iterations += res.iterations
        res = again
    if res.converged or max_halvings <= 0:
        return res
    first = step(model, state, 0.5 * h, method, tol=tol, max_iter=max_iter, max_halvings=max_halvings - 1)
    if not first.converged:
        return StepResult(state, False, res.iterations + first.iterations, first.residual,
                          f"step did not converge even when halved ({first.reason})", res.contacts, first.halvings + 1)
    second = step(model, first.state, 0.5 * h, method, tol=tol, max_iter=max_iter, max_halvings=max_halvings - 1)
    if not second.converged:
        return StepResult(state, False, res.iterations + first.iterations + second.iterations, second.residual,
                          f"step did not converge even when halved ({second.reason})", res.contacts,
                          max(first.halvings, second.halvings) + 1)
    # merge the two halves: impulses add, geometry is the end of the second half
    merged = _merge_contacts(first.contacts, second.contacts)
    return StepResult(second.state, True, res.iterations + first.iterations + second.iterations,
                      max(first.residual, second.residual), "converged after halving", merged,
                      max(first.halvings, second.halvings) + 1)


def _merge_contacts(c1, c2):
    by = {c.pair: c for c in c1}
    out = []
    for c in c2:
        p = by.pop(c.pair, None)
        if p is None:
            out.append(c)
        else:
            out.append(ContactResult(c.pair, c.a1, c.a2, c.normal, c.gap, p.pn + c.pn, p.pf + c.pf, p.pr + c.pr,
                                     c.slip, c.mu))
    out.extend(by.values())
    return sorted(out, key=lambda c: c.pair)


def _step_once(model: ContactModel, state: State, h: float, method: str, tol: float, max_iter: int,
               predict: bool = False) -> StepResult:
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}")
    dyn = np.flatnonzero(model.dynamic)
    bidx = -np.ones(model.n_bodies, int)
    bidx[dyn] = np.arange(dyn.size)
    nb = dyn.size
    R0 = [_rot(state.q[i]) for i in range(model.n_bodies)]
    Iw = np.zeros((model.n_bodies, 3, 3))
    Iw_inv = np.zeros((model.n_bodies, 3, 3))
    for i in dyn:
        Iw[i] = R0[i] @ model.inertia_body[i] @ R0[i].T
        Iw_inv[i] = R0[i] @ np.linalg.inv(model.inertia_body[i]) @ R0[i].T
    # free-motion part of the body rows: v - v0 - h (g + f/m), w - w0 - h I^-1 (tau - w x I w)
    c_v = np.zeros((nb, 3))
    c_w = np.zeros((nb, 3))
    for k, i in enumerate(dyn):
        c_v[k] = state.v[i] + h * (model.gravity + model.force[i] / model.mass[i])
        w0 = state.w[i]
        c_w[k] = w0 + h * Iw_inv[i] @ (model.torque[i] - np.cross(w0, Iw[i] @ w0))

    cand, _ = candidate_pairs(model, state, h, keep=state.warm.keys())
    pairs: list[_Pair] = []
    off = 6 * nb
    geo_iters = 0
    new_warm_geo = {}
    pred = None
    if method == "implicit" and (predict or any(
            state.warm.get(ip) is None or state.warm[ip].get("z") is None for ip in cand)):
        # a pair without a warm start (a new contact): the explicit step is a cheap, well-posed predictor of the
        # velocities and impulses, and the closest points at its end configuration start the implicit solve
        pred = _step_once(model, state, h, "explicit", tol, max_iter)
        if not pred.converged:
            pred = None
    for ip in cand:
        a, b, mu = model.pairs[ip]
        lay = _layout_for(model, ip, method)
        m_ref = model.mass[a] if not model.dynamic[b] else model.mass[a] * model.mass[b] / (model.mass[a] + model.mass[b])
        pr = _Pair(ip, a, b, mu, lay, off, m_ref, np.zeros(3))
        warm = state.warm.get(ip)
        if method == "implicit":
            pr.zf0 = None
            if not predict and warm is not None and warm.get("z") is not None and warm["z"].size == lay.size:
                geo = warm["z"][: lay.n_geom]
                pr.zf0 = warm["z"][lay.n_geom:]
            else:
                geo, r = closest_points(model, state, ip)
                if pred is not None:
                    geo, r = closest_points(model, pred.state, ip, geo)
                    pr.zf0 = pred.state.warm[ip]["zx"]
            yb = R0[b].T @ (geo[3:6] - state.p[b]) + model.com_body[b]
            n0 = R0[b] @ (np.asarray(model.shapes[b].gradients(yb)).T @ geo[lay.mu:lay.s])
            pr.e_aux = contact_frame_aux(n0)
            pr.geo0 = geo
        else:
            sa, sb = model.shapes[a], model.shapes[b]
            glay = PairLayout(sa.m, sb.m, 0)
            g0 = None
            if warm is not None:
                g0 = warm.get("geo")
                if g0 is None and warm.get("z") is not None:
                    g0 = warm["z"][: glay.n_geom]
            if g0 is not None and g0.size != glay.n_geom:
                g0 = None
            geo, r = closest_points(model, state, ip, g0)
            geo_iters += r.iterations
            new_warm_geo[ip] = geo
            Rb = R0[b]
            yb = Rb.T @ (geo[3:6] - state.p[b]) + model.com_body[b]
            nB = Rb @ (np.asarray(sb.gradients(yb)).T @ geo[6 + glay.m:6 + glay.m + glay.k])
            pr.a1, pr.a2 = geo[0:3].copy(), geo[3:6].copy()
            pr.n = nB / np.linalg.norm(nB)
            pr.gap0 = float(geo[glay.s])
            pr.e_aux = contact_frame_aux(pr.n)
        pairs.append(pr)
        off += lay.size if method == "implicit" else _explicit_size(lay)
    ntot = off

    # initial guess and bounds
    z0 = np.zeros(ntot)
    lower = np.full(ntot, -np.inf)
    start = pred.state if pred is not None else state
    for k, i in enumerate(dyn):
        z0[6 * k:6 * k + 3] = start.v[i]
        z0[6 * k + 3:6 * k + 6] = start.w[i]
    for pr in pairs:
        warm = state.warm.get(pr.ip)
        if method == "implicit":
            sz = pr.lay.size
            lower[pr.off:pr.off + sz] = pr.lay.lower()
            z0[pr.off:pr.off + pr.lay.n_geom] = pr.geo0
            if pr.zf0 is not None and pr.zf0.size == sz - pr.lay.n_geom:
                z0[pr.off + pr.lay.n_geom:pr.off + sz] = pr.zf0
        else:
            sz = _explicit_size(pr.lay)
            lower[pr.off] = 0.0
            if pr.lay.nf:
                lower[pr.off + sz - 1] = 0.0
            if warm is not None and warm.get("zx") is not None and warm["zx"].size == sz:
                z0[pr.off:pr.off + sz] = warm["zx"]

    dense = ntot <= _DENSE_LIMIT

    def fun(z):
        Fv = np.empty(ntot)
        rows, cols, vals = [], [], []
        Jd = np.zeros((ntot, ntot)) if dense else None
        # body rows
        for k, i in enumerate(dyn):
            Fv[6 * k:6 * k + 3] = z[6 * k:6 * k + 3] - c_v[k]
            Fv[6 * k + 3:6 * k + 6] = z[6 * k + 3:6 * k + 6] - c_w[k]
        if dense:
            Jd[np.arange(6 * nb), np.arange(6 * nb)] = 1.0
        else:
            rows.append(np.arange(6 * nb)); cols.append(np.arange(6 * nb)); vals.append(np.ones(6 * nb))
        for pr in pairs:
            a, b = pr.a, pr.b
            ka, kb = bidx[a], bidx[b]
            dynB = kb >= 0
            vA, wA = z[6 * ka:6 * ka + 3], z[6 * ka + 3:6 * ka + 6]
            vB = z[6 * kb:6 * kb + 3] if dynB else np.zeros(3)
            wB = z[6 * kb + 3:6 * kb + 6] if dynB else np.zeros(3)
            if method == "implicit":
                sz = pr.lay.size
                zp = z[pr.off:pr.off + sz]
                r, Jl, WA, JWA, WB, JWB = eval_pair(
                    pr.lay, h, pr.mu, model.ellipsoid, pr.m_ref, pr.e_aux,
                    model.shapes[a], state.p[a], R0[a], model.com_body[a], vA, wA,
                    model.shapes[b], state.p[b], R0[b], model.com_body[b], vB, wB, dynB, zp)
            else:
                sz = _explicit_size(pr.lay)
                zp = z[pr.off:pr.off + sz]
                r, Jl, WA, JWA, WB, JWB = _eval_explicit(pr, model, state, vA, wA, vB, wB, dynB, zp, h)
            colmap = np.empty(12 + sz, int)
            colmap[0:6] = np.arange(6 * ka, 6 * ka + 6)
            colmap[6:12] = np.arange(6 * kb, 6 * kb + 6) if dynB else -1
            colmap[12:] = np.arange(pr.off, pr.off + sz)
            valid = colmap >= 0
            cv = colmap[valid]
            Fv[pr.off:pr.off + sz] = r
            # body rows: subtract M^-1 W
            scaleA = np.zeros((6, 6))
            scaleA[0:3, 0:3] = np.eye(3) / model.mass[a]
            scaleA[3:6, 3:6] = Iw_inv[a]
            Fv[6 * ka:6 * ka + 6] -= scaleA @ WA
            blkA = -(scaleA @ JWA)[:, valid]
            prow = np.arange(pr.off, pr.off + sz)
            arow = np.arange(6 * ka, 6 * ka + 6)
            if dynB:
                scaleB = np.zeros((6, 6))
                scaleB[0:3, 0:3] = np.eye(3) / model.mass[b]
                scaleB[3:6, 3:6] = Iw_inv[b]
                Fv[6 * kb:6 * kb + 6] -= scaleB @ WB
                blkB = -(scaleB @ JWB)[:, valid]
                brow = np.arange(6 * kb, 6 * kb + 6)
            if dense:
                Jd[np.ix_(prow, cv)] += Jl[:, valid]
                Jd[np.ix_(arow, cv)] += blkA
                if dynB:
                    Jd[np.ix_(brow, cv)] += blkB
            else:
                for rr, blk in ((prow, Jl[:, valid]), (arow, blkA)) + (((brow, blkB),) if dynB else ()):
                    R_, C_ = np.meshgrid(rr, cv, indexing="ij")
                    rows.append(R_.ravel()); cols.append(C_.ravel()); vals.append(blk.ravel())
        if dense:
            return Fv, Jd
        J = sp.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(ntot, ntot)).tocsc()
        return Fv, J

    res = solve_mcp(fun, z0, lower, tol=tol, max_iter=max_iter)
    iters = res.iterations
    if not res.converged:
        return StepResult(state, False, iters, res.residual, f"MCP solver: {res.reason} (residual {res.residual:.3g})")
    z = res.z
    new = state.copy()
    new.t = state.t + h
    new.warm = {}
    for k, i in enumerate(dyn):
        v, w = z[6 * k:6 * k + 3], z[6 * k + 3:6 * k + 6]
        new.v[i], new.w[i] = v, w
        new.p[i] = state.p[i] + h * v
        u = 0.5 * h * w
        dq = np.concatenate(([1.0], u)) / np.sqrt(1.0 + u @ u)
        qn = _qmul(dq, state.q[i])
        new.q[i] = qn / np.linalg.norm(qn)
    contacts = []
    for pr in pairs:
        if method == "implicit":
            zp = z[pr.off:pr.off + pr.lay.size]
            new.warm[pr.ip] = {"z": zp.copy()}
            contacts.append(_contact_implicit(model, new, pr, zp))
        else:
            sz = _explicit_size(pr.lay)
            zp = z[pr.off:pr.off + sz]
            new.warm[pr.ip] = {"zx": zp.copy(), "geo": new_warm_geo[pr.ip]}
            contacts.append(_contact_explicit(model, state, new, pr, zp, h))
    if not all(np.all(np.isfinite(x)) for x in (new.p, new.q, new.v, new.w)):
        return StepResult(state, False, iters, res.residual, "non-finite state after step")
    return StepResult(new, True, iters, res.residual, "converged", contacts)


def _qmul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def _slip(model, st, a, b, a1, a2, n):
    """Tangential velocity of A's material point at a1 relative to B's at a2 (world)."""
    vrel = st.v[a] + np.cross(st.w[a], a1 - st.p[a])
    if model.dynamic[b]:
        vrel = vrel - st.v[b] - np.cross(st.w[b], a2 - st.p[b])
    return vrel - (vrel @ n) * n


def _contact_implicit(model, new, pr: _Pair, zp) -> ContactResult:
    lay = pr.lay
    a1, a2 = zp[0:3].copy(), zp[3:6].copy()
    sb = model.shapes[pr.b]
    Rb = _rot(new.q[pr.b])
    yb = Rb.T @ (a2 - new.p[pr.b]) + model.com_body[pr.b]
    n = Rb @ (np.asarray(sb.gradients(yb)).T @ zp[lay.mu:lay.s])
    n = n / np.linalg.norm(n)
    pn = pr.m_ref * zp[lay.pn]
    pf = np.zeros(3)
    prr = 0.0
    if lay.nf:
        e_t, e_o, e_r = model.ellipsoid
        t, o = tangent_frame(n, pr.e_aux)
        pf = pn * (e_t * zp[lay.pf] * t + e_o * zp[lay.pf + 1] * o)
        if lay.nf == 3:
            prr = pn * e_r * zp[lay.pf + 2]
    return ContactResult(pr.ip, a1, a2, n, float(zp[lay.s]), float(pn), pf, float(prr),
                         _slip(model, new, pr.a, pr.b, a1, a2, n), pr.mu)


# ---- explicit method: impulse unknowns [pn, pf (nf), sig] with geometry fixed at the start of the step ----


def _explicit_size(lay: PairLayout) -> int:
    return 1 + (lay.nf + 1 if lay.nf else 0)


def _eval_explicit(pr: _Pair, model, state, vA, wA, vB, wB, dynB, zp, h):
    """Explicit pair rows: pn perp gap0/h + n.v_rel; friction with the start-of-step frame and lever arms."""
    nf = pr.lay.nf
    sz = _explicit_size(pr.lay)
    nloc = 12 + sz
    n = pr.n
    d1 = pr.a1 - state.p[pr.a]
    d2 = pr.a2 - state.p[pr.b]
    vrel = vA + np.cross(wA, d1)
    J_vrel = np.zeros((3, nloc))
    J_vrel[:, 0:3] = np.eye(3)
    J_vrel[:, 3:6] = -_sk(d1)
    if dynB:
        vrel = vrel - vB - np.cross(wB, d2)
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
        # the same normalised friction rows as the implicit pair (impulse = pn * phi)
        r[1:1 + nf] = mu * xi + pf * sig
        J[1:1 + nf] = mu * J_xi
        J[1:1 + nf, 13:13 + nf] += sig * np.eye(nf)
        J[1:1 + nf, 13 + nf] += pf
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
    WA = np.concatenate((F, np.cross(d1, F) + tx))
    JWA = np.vstack((J_F, _sk(d1) @ J_F + J_tx))
    if dynB:
        WB = np.concatenate((-F, -np.cross(d2, F) - tx))
        JWB = np.vstack((-J_F, -_sk(d2) @ J_F - J_tx))
    else:
        WB = JWB = None
    return r, J, WA, JWA, WB, JWB


def _contact_explicit(model, state, new, pr: _Pair, zp, h) -> ContactResult:
    nf = pr.lay.nf
    pn = pr.m_ref * zp[0]
    pf = np.zeros(3)
    prr = 0.0
    if nf:
        e_t, e_o, e_r = model.ellipsoid
        t, o = tangent_frame(pr.n, pr.e_aux)
        pf = pn * (e_t * zp[1] * t + e_o * zp[2] * o)
        if nf == 3:
            prr = pn * e_r * zp[3]
    vrel = new.v[pr.a] + np.cross(new.w[pr.a], pr.a1 - state.p[pr.a])
    if model.dynamic[pr.b]:
        vrel = vrel - new.v[pr.b] - np.cross(new.w[pr.b], pr.a2 - state.p[pr.b])
    gap_lin = pr.gap0 + h * (pr.n @ vrel)
    slip = vrel - (vrel @ pr.n) * pr.n
    return ContactResult(pr.ip, pr.a1, pr.a2, pr.n, float(gap_lin), float(pn), pf, float(prr), slip, pr.mu)


def _sk(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])
