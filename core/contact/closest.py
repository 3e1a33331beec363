"""Broad phase and closest points of a step's pairs.

candidate_pairs: the pairs whose bounding volumes, inflated by what a step can travel, overlap (and every pair's lower
gap bound).  closest_points, closest_points_many: the closest points (or, overlapping, the deepest points) of two
convex shapes as the solution of their KKT system (core.contact.pair's closest-point rows), by semismooth Newton from
GJK's points, a Frank-Wolfe direction or the expanding polytope's points; spheres against spheres or static planes in
closed form.  The implicit step starts a new pair's closest-point unknowns here; the explicit method's geometry is
these queries at the start of its step (core.contact.stepper).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import validate
from .bodies import ContactModel, State, check_cancel
from .kernels import broad_bounds, closest_newton, geometry_rows, quat_matrices
from .mcp import MCPResult, solve_mcp
from .pair import DEPTH_LIMIT as _DEPTH_LIMIT
from .pair import PairLayout
from ..shapes.base import stack_rows
from ..transforms import quat_to_matrix

__all__ = ["candidate_pairs", "closest_points", "closest_points_many", "StartOverlap", "start_overlaps",
           "start_located", "centre_inside", "buried_pair"]

# row of touching balls) 1 -> no convergence in 120 iterations, 3 -> 34, 10 -> 21, 100 -> 18
_FW_ITERS = 30  # Frank-Wolfe iterations of a new pair's starting direction (closest_points)


def _rot(q):
    """Rotation matrix of a quaternion (4,), or matrices (N, 3, 3) of quaternions (N, 4) (compiled)."""
    q = np.asarray(q, float)
    return quat_matrices(q) if q.ndim == 2 else quat_to_matrix(q)


def _world_halfspace(model: ContactModel, b: int, state: State):
    """World normal and offset (n.x <= c) of half-space body b."""
    bp = model.broad
    nw = quat_to_matrix(state.q[b]) @ bp.plane_n[b]
    return nw, float(bp.plane_c[b] + nw @ state.p[b])


def candidate_pairs(model: ContactModel, state: State, h: float, keep=()) -> tuple[list[int], np.ndarray]:
    """Pairs whose bounding volumes, inflated by what can be travelled in one step, overlap; and the lower gap bound
    of every pair (P,), from the bounding volumes.  keep: pairs solved last step, kept while within twice the margin."""
    if not model.pairs:
        return [], np.zeros(0)
    bp = model.broad
    lb, margin = broad_bounds(state.p, state.q, state.v, state.w, bp.radius, bp.ia, bp.ib, bp.to_plane, bp.plane_n,
                              bp.plane_c, float(h), bp.gravity)
    inside = lb <= margin
    if keep:
        # (a loop over the kept pairs, mostly in range already: numpy's fancy indexing costs more per call than this
        # loop over a pile's pairs)
        n = lb.size
        for ip in keep:
            if 0 <= ip < n and not inside[ip] and lb[ip] <= 2.0 * margin[ip]:
                inside[ip] = True
    return np.flatnonzero(inside).tolist(), lb


def _initial_geometry(model: ContactModel, state: State, ip: int) -> np.ndarray:
    """A starting point for the closest-point unknowns (support points, most active inequality)."""
    a, b, _ = model.pairs[ip]
    sa, sb = model.shapes[a], model.shapes[b]
    blk = _closed_form_geometry(model, state, ip)
    if blk is not None:
        return blk
    Ra, Rb = _rot(state.q[a]), _rot(state.q[b])
    if model.halfspace[b] is not None:
        nw, c = _world_halfspace(model, b, state)
        dA = -nw  # deepest point of A towards the plane
    else:
        dA = state.p[b] - state.p[a]
        ln = np.linalg.norm(dA)
        dA = dA / ln if ln > 1e-12 else np.array([0.0, 0.0, -1.0])
        z = _gjk_geometry(model, state, a, b, Ra, Rb, dA)
        if z is not None:
            return z
        dA = _separating_direction(model, state, a, b, Ra, Rb, dA)
    if model.halfspace[b] is not None:
        ya = _deepest_face_point(sa, Ra.T @ dA)
    else:
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
    if model.halfspace[b] is not None:
        # A's deepest point towards the plane and its projection on it: the closest points (or, overlapping, the
        # deepest point), with the multipliers that make A's normal -nw exactly
        scale = max(float(model.radius[a]), 1e-3)
        z[lay.lam:lay.mu] = _multipliers(sa, ya, Ra.T @ (-nw), scale)
        z[lay.mu:lay.s] = _multipliers(sb, yb, Rb.T @ nw, scale)
        z[lay.s] = float(nw @ a1 - c)
        return z
    fa, ga = np.asarray(sa.values(ya)), np.asarray(sa.gradients(ya))
    i = int(np.argmax(fa))
    z[6 + i] = 1.0 / max(np.linalg.norm(ga[i]), 1e-12)
    fb, gb = np.asarray(sb.values(yb)), np.asarray(sb.gradients(yb))
    j = int(np.argmax(fb))
    z[6 + sa.m + j] = 1.0 / max(np.linalg.norm(gb[j]), 1e-12)
    nA = Ra @ (ga[i] * z[6 + i])
    z[lay.s] = nA @ (a2 - a1)
    return z


def _deepest_face_point(shape, d: np.ndarray) -> np.ndarray:
    """A support point of `shape` along d (body frame): for a shape of planes (box, polytope), the mean of the vertices
    of its face farthest along d (Shape.face: those tied for the largest d.x to a tolerance of its size; a face or an
    edge along d: a body resting on a plane), inside that face; otherwise shape.support(d).  The starting closest point of a body on a half-space:
    at a corner of a resting face (the support map's vertex) three faces are active there with two multipliers zero,
    a kink of every complementarity row at the start, and Newton on a 30-degree wedge prism resting on a floor with a
    block 1 mm above it stalled at 1.2e-6 in every attempt at every depth of halving (the run stopped at t = 0); from
    the face's centre, one face active, it converges (docs/notes/contact-solver.md)."""
    face = shape.face(np.asarray(d, float) / float(np.linalg.norm(d)))
    if face is None:
        return np.asarray(shape.support(d), float)
    return face.mean(axis=0)


def b_normal(model: ContactModel, a: int, b: int, Rb: np.ndarray, pb: np.ndarray, geo: np.ndarray) -> np.ndarray:
    """B's outward normal at its closest point, not normalised: sum mu_j grad g_j(a2) in the world, from a
    closest-point block geo [a1, a2, lam (A's m), mu (B's m), s] of pair (a, b) and B's pose (rotation Rb, centre of
    mass pb).  It points from B towards A (the contact normal of a step's results)."""
    ma, mb = model.shapes[a].m, model.shapes[b].m
    yb = Rb.T @ (geo[3:6] - pb) + model.com_body[b]
    return Rb @ (np.asarray(model.shapes[b].gradients(yb)).T @ geo[6 + ma:6 + ma + mb])


def _closed_form_geometry(model: ContactModel, state: State, ip: int) -> np.ndarray | None:
    """The closest-point unknowns of a sphere against a sphere or a static plane (_eliminable) in closed form (as the
    elimination's), exact to rounding; None for other pairs and for spheres with coincident centres.  (GJK and the
    Frank-Wolfe direction cost 140 ms for the 85 pairs of a 27-sphere pile's cold start.)"""
    return _closed_forms(model, state, [ip])[0]


def _closed_forms(model: ContactModel, state: State, ips) -> list:
    """_closed_form_geometry of several pairs, the sphere-plane and the sphere-sphere pairs each in one vectorised
    evaluation (the explicit method's query of a 27-sphere pile: 87 pairs, 72 us a pair one at a time)."""
    out = [None] * len(ips)
    planes, spheres = [], []
    for q, ip in enumerate(ips):
        a, b, _ = model.pairs[ip]
        if _eliminable(model, a, b):
            (planes if model.halfspace[b] is not None else spheres).append(q)
    radius = lambda bodies: np.array([float(model.shapes[i].radius) for i in bodies])  # noqa: E731
    if planes:
        a, b = np.array([model.pairs[ips[q]][:2] for q in planes]).T
        walls = {int(i): _world_halfspace(model, int(i), state) for i in set(b.tolist())}
        blk = _sphere_plane_geometry(state.p[a], radius(a), np.array([walls[i][0] for i in b]),
                                     np.array([walls[i][1] for i in b], float))
        for q, row in zip(planes, blk):
            out[q] = row
    if spheres:
        a, b = np.array([model.pairs[ips[q]][:2] for q in spheres]).T
        blk = _spheres_geometry(state.p[a], radius(a), state.p[b], radius(b))
        for q, row in zip(spheres, blk):
            out[q] = row if np.all(np.isfinite(row)) else None
    return out


# Nonlinear elimination of the geometry (the last attempt of _ATTEMPTS): the closest-point unknowns of a pair
# have a unique solution for given end-of-step poses; replacing them at every point Newton evaluates (solve_mcp's
# project) by that solution makes the line search work on the reduced system in velocities and impulses, whose gap
# is a smooth function of the poses.  For pairs of two spheres and of a sphere and a static plane the solution is in
# closed form (below); other pairs keep their closest-point unknowns.
def _eliminable(model: ContactModel, a: int, b: int) -> bool:
    """Whether the last attempt eliminates pair (a, b)'s closest points: a moving sphere (frame at its centre)
    against another such sphere, moving or not, or against a static half-space."""
    def sphere(i):
        # (ndarray.any: np.any's Python wrapper made this a tenth of a replayed step's set-up, over 486 pairs)
        return getattr(model.shapes[i], "type", None) == "sphere" and not (model.com_body[i] != 0.0).any()

    if not (sphere(a) and model.dynamic[a]):
        return False
    return not model.dynamic[b] if model.halfspace[b] is not None else sphere(b)


def _spheres_geometry(xa: np.ndarray, ra: np.ndarray, xb: np.ndarray, rb: np.ndarray) -> np.ndarray:
    """Closest-point blocks (P, 9) [a1, a2, lam, mu, s] of spheres centred at xa, xb (P, 3) with radii ra, rb: the
    points on the centre line, the unit multipliers of the spheres' inequality (its gradient has unit length on the
    surface) and s the centre distance minus the radii (centres closer than 1e-9 (ra + rb) give NaN rows)."""
    d = xb - xa
    L = np.sqrt(np.sum(d * d, axis=1))
    n = d / np.where(L > 1e-9 * (ra + rb), L, np.nan)[:, None]
    blk = np.empty((xa.shape[0], 9))
    blk[:, 0:3] = xa + ra[:, None] * n
    blk[:, 3:6] = xb - rb[:, None] * n
    blk[:, 6:8] = 1.0
    blk[:, 8] = L - ra - rb
    return blk


def _sphere_plane_geometry(xa: np.ndarray, ra: np.ndarray, n: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Closest-point blocks (P, 9) of spheres centred at xa with radii ra against the planes n . x = c (outward unit
    normals n): the sphere's deepest point towards the plane, its projection on it, unit multipliers, and s the
    centre's height over the plane minus the radius."""
    a1 = xa - ra[:, None] * n
    sep = np.sum(n * a1, axis=1) - c
    blk = np.empty((xa.shape[0], 9))
    blk[:, 0:3] = a1
    blk[:, 3:6] = a1 - sep[:, None] * n
    blk[:, 6:8] = 1.0
    blk[:, 8] = sep
    return blk


def _multipliers(shape, y, n_body, scale):
    """Non-negative multipliers of the inequalities active at body point y whose gradients sum to n_body (NNLS)."""
    from scipy.optimize import nnls
    f, g = np.asarray(shape.values(y), float), np.asarray(shape.gradients(y), float)
    act = np.flatnonzero(f >= f.max() - 1e-7 * scale)
    lam = np.zeros(shape.m)
    lam[act] = nnls(g[act].T, n_body)[0]
    return lam


def _world_support(model, state, i, R):
    """Body i's support map in world coordinates at the given state (direction -> farthest point)."""
    shape, p, c = model.shapes[i], state.p[i], model.com_body[i]
    return lambda d: p + R @ (np.asarray(shape.support(R.T @ d), float) - c)


def _geometry_block(model, state, a, b, Ra, Rb, point_a, point_b, normal, s, scale):
    """Closest-point unknowns (a1, a2, lam, mu, s) from a pair of points, A's outward normal and the separation: the
    multipliers of the inequalities active there that make the normals exact (_multipliers)."""
    sa, sb = model.shapes[a], model.shapes[b]
    lay = PairLayout(sa.m, sb.m, 0)
    z = np.zeros(lay.n_geom)
    z[0:3], z[3:6] = point_a, point_b
    z[lay.lam:lay.mu] = _multipliers(sa, Ra.T @ (point_a - state.p[a]) + model.com_body[a], Ra.T @ normal, scale)
    z[lay.mu:lay.s] = _multipliers(sb, Rb.T @ (point_b - state.p[b]) + model.com_body[b], -(Rb.T @ normal), scale)
    z[lay.s] = s
    return z


def _gjk_geometry(model, state, a, b, Ra, Rb, d0):
    """Closest-point unknowns (a1, a2, lam, mu, s) of two separated bodies from GJK; None when they touch."""
    from ..shapes.distance import gjk_distance
    res = gjk_distance(_world_support(model, state, a, Ra), _world_support(model, state, b, Rb), d0)
    scale = max(float(model.radius[a]), 1e-3)
    if res.overlap or res.distance <= 1e-9 * scale:
        return None
    n = (res.point_b - res.point_a) / res.distance  # A's outward normal
    return _geometry_block(model, state, a, b, Ra, Rb, res.point_a, res.point_b, n, res.distance, scale)


def _separating_direction(model, state, a, b, Ra, Rb, d0, iters=_FW_ITERS):
    """Approximate direction from A's closest point to B's: Frank-Wolfe on min |x|^2 over the Minkowski difference
    A - B (each iteration one support point of each body), from the support points along d0; d0 when the bodies
    overlap or touch (x -> 0, no direction).  The centre-to-centre direction is a poor start for flat faces: an
    ellipsoid beside a cube started from the cube's corner along it, and the KKT Newton failed after 316
    iterations; from this direction it converges in 8."""
    sup_a, sup_b = _world_support(model, state, a, Ra), _world_support(model, state, b, Rb)
    pa, pb = sup_a(d0), sup_b(-d0)
    for _ in range(iters):
        x = pa - pb
        qa, qb = sup_a(-x), sup_b(x)
        g = x - (qa - qb)
        gg = float(g @ g)
        if not np.all(np.isfinite(g)) or gg <= 1e-30:
            break
        gam = min(max(float(x @ g) / gg, 0.0), 1.0)  # exact line search of |x|^2 along the FW direction
        pa, pb = pa + gam * (qa - pa), pb + gam * (qb - pb)
    d = pb - pa
    ln = float(np.linalg.norm(d))
    return d / ln if np.isfinite(ln) and ln > 1e-9 else d0


def closest_points(model: ContactModel, state: State, ip: int, guess: np.ndarray | None = None):
    """Closest points (or common boundary point) of pair ip at the given state by the KKT system; (z, result).
    The pairs of spheres and of a sphere and a static plane (_eliminable) take their closed form, exact to rounding,
    with no Newton iteration (a settling 27-sphere pile meets two new such pairs a step, and the explicit method
    queries every pair twice a step)."""
    a, b, _ = model.pairs[ip]
    sa, sb = model.shapes[a], model.shapes[b]
    blk = _closed_form_geometry(model, state, ip)
    if blk is not None:  # (unique: a guess changes nothing)
        return blk, MCPResult(blk, True, 0, 0.0, "converged (closed form)")
    z0 = guess if guess is not None else _initial_geometry(model, state, ip)
    Ra, Rb = _rot(state.q[a]), _rot(state.q[b])
    lay = PairLayout(sa.m, sb.m, 0)

    # (the compiled rows, kernels.geometry_rows, for one pair: pair.eval_geometry is their numpy reference)
    rows = (*stack_rows([sa]), Ra[None], state.p[a][None], model.com_body[a][None],
            *stack_rows([sb]), Rb[None], state.p[b][None], model.com_body[b][None])

    def fun(z):
        r, J = geometry_rows(*rows, z[None], True)
        return r[0], J[0]

    prox = None
    if sa.flat_faces and sb.flat_faces:
        # two shapes with flat faces: the closest points are not unique while two faces are parallel (a box resting
        # on a box), which leaves the Newton equations singular; the proximal term on the points, as in the step
        prox = np.zeros(lay.n_geom)
        prox[0:6] = 1.0
    def solve(start):
        return solve_mcp(fun, start, lay.lower()[: lay.n_geom], tol=1e-12, max_iter=80, prox=prox)

    res = solve(z0)
    if not res.converged and guess is not None:
        res2 = solve(_initial_geometry(model, state, ip))
        if res2.residual < res.residual:
            res = res2
    if model.halfspace[b] is None and (not res.converged or res.z[lay.s] < -_DEPTH_LIMIT):
        # overlapping bodies (the explicit method lets them): the KKT equations also hold at pairs of points on
        # the bodies' far sides, deeper than the overlap; the penetration is the solution with the largest s, and
        # the expanding polytope's points start Newton next to it
        z_epa = _epa_geometry(model, state, a, b, Ra, Rb)
        if z_epa is not None:
            res2 = solve(z_epa)
            if res2.converged and (not res.converged or res2.z[lay.s] > res.z[lay.s]):
                res = res2
    return res.z, res


def closest_points_many(model: ContactModel, state: State, ips, guesses=None) -> list:
    """closest_points of several pairs at one state: [(z, result)] in the order of ips, by the same rules.

    The pairs without a closed form take a compiled semismooth Newton run each (kernels.closest_newton: the stopping
    test and the proximal term of closest_points, plain Armijo backtracking), the pairs with equal numbers of
    inequalities in one call; overlapping pairs a second one from the expanding polytope's points, as in
    closest_points.  A pair the compiled run gives up on goes through closest_points from its start.  guesses[q]
    (or None) starts pair ips[q].  (The explicit method queries every pair at the end of every step.  One pair at a
    time through solve_mcp, the solver's per-iteration overhead dominated its steps: 8 turned cubes in two layers
    spent 3.5 ms a query, 47 queries a step.)"""
    out = [None] * len(ips)
    groups: dict = {}
    for q, (ip, blk) in enumerate(zip(ips, _closed_forms(model, state, ips))):
        if blk is not None:
            out[q] = (blk, MCPResult(blk, True, 0, 0.0, "converged (closed form)"))
            continue
        a, b, _ = model.pairs[ip]
        groups.setdefault((model.shapes[a].m, model.shapes[b].m), []).append(q)
    R = _rot(state.q) if groups else None
    for members in groups.values():
        ab = np.array([model.pairs[ips[q]][:2] for q in members])
        z0 = np.array([guesses[q] if guesses is not None and guesses[q] is not None
                       else _initial_geometry(model, state, ips[q]) for q in members], float)
        Z, ok, its, res = _closest_newton(model, state, R, ab, z0)
        # overlapping bodies: the penetration is the solution with the largest s (closest_points), and the
        # expanding polytope's points start a second run next to it
        deep = [j for j in np.flatnonzero(ok) if model.halfspace[ab[j, 1]] is None and Z[j, -1] < -_DEPTH_LIMIT]
        epa = [(j, _epa_geometry(model, state, *ab[j], R[ab[j, 0]], R[ab[j, 1]])) for j in deep]
        epa = [(j, z) for j, z in epa if z is not None]
        if epa:
            sel = np.array([j for j, _z in epa])
            Z2, ok2, its2, res2 = _closest_newton(model, state, R, ab[sel], np.array([z for _j, z in epa]))
            for i, j in enumerate(sel):
                if ok2[i] and Z2[i, -1] > Z[j, -1]:
                    Z[j], its[j], res[j] = Z2[i], its[j] + its2[i], res2[i]
        for j, q in enumerate(members):
            if ok[j]:
                out[q] = (Z[j], MCPResult(Z[j], True, int(its[j]), float(res[j]), "converged"))
            else:
                # from the start, not from where the compiled run stopped: there (a kink of a degenerate edge-face
                # contact, residual 1e-5 to 1e-3) solve_mcp took 70-115 iterations (8 turned cubes in two layers,
                # 100 steps: 9.7 CPU-s against 7.4)
                out[q] = closest_points(model, state, ips[q], z0[j])
    return out


# pairs queried between two looks at a run's cancel callable (closest_points_chunked): the 64-body pile's 260 start
# queries took 150-220 ms in one call, which a Stop had to wait for
CANCEL_CHUNK = 16


def closest_points_chunked(model: ContactModel, state: State, ips, cancel=None, guesses=None,
                           chunk: int = CANCEL_CHUNK) -> list:
    """closest_points_many of ips (from guesses), `chunk` pairs at a time, checking `cancel` before each chunk
    (RunCancelled when it says stop).  The same results: each pair's query is its own (closest_newton runs one pair at
    a time)."""
    if cancel is None:
        return closest_points_many(model, state, ips, guesses)
    out = []
    for k in range(0, len(ips), chunk):
        check_cancel(cancel)
        out += closest_points_many(model, state, ips[k:k + chunk], None if guesses is None else guesses[k:k + chunk])
    return out


def _closest_newton(model, state, R, ab, z0):
    """kernels.closest_newton for the pairs of bodies ab (P, 2), all with the same numbers of inequalities, from z0
    (P, ng): z (the multipliers projected on their bounds where converged, as solve_mcp's), converged, iterations and
    the residual."""
    a, b = ab[:, 0], ab[:, 1]
    rows = (*stack_rows([model.shapes[i] for i in a]), R[a], state.p[a], model.com_body[a],
            *stack_rows([model.shapes[i] for i in b]), R[b], state.p[b], model.com_body[b])
    flat = np.array([model.shapes[i].flat_faces and model.shapes[j].flat_faces for i, j in ab])
    Z, ok, its, res = closest_newton(*rows, np.ascontiguousarray(z0, float), flat, _MANY_ITER, 1e-12)
    lo, hi = 6, 6 + rows[0].shape[1] + rows[5].shape[1]
    Z[:, lo:hi] = np.where(ok[:, None], np.maximum(Z[:, lo:hi], 0.0), Z[:, lo:hi])
    return Z, ok, its, res


# Newton iterations of a pair in closest_points_many before it goes through closest_points.  Explicit method, 8 turned
# cubes in two layers (100 steps) and the mixed pile (150): 6.8 and 7.2 CPU-s with 10, 4.8 and 5.6 with 15, 4.1 and
# 5.4 with 30, 4.1 and 5.6 with 60
_MANY_ITER = 30


def _epa_geometry(model, state, a, b, Ra, Rb):
    """Closest-point unknowns (a1, a2, lam, mu, s) of two overlapping or touching bodies from the expanding polytope
    (core.shapes.distance.penetration_depth, to 1e-4 of the smaller radius); None when they are apart.

    Touching bodies (a box set exactly on another: the origin on the boundary of A - B, no interior for the polytope)
    are A grown by a small delta against B: their overlap is delta, and its normal is the touching normal (the face
    the bodies share).  Without it the closest-point run from the centres' direction stayed at a pair of far sides
    (two boxes face to face, offset 3 cm: a normal along x and s = -0.22 m), and the first step shot the lower box out
    at 12 m/s or failed."""
    from ..shapes.distance import penetration_depth
    scale = max(min(float(model.radius[a]), float(model.radius[b])), 1e-3)
    sup_a, sup_b = _world_support(model, state, a, Ra), _world_support(model, state, b, Rb)
    pen = penetration_depth(sup_a, sup_b, scale=scale, rel_tol=1e-4)
    if pen is not None:
        return _geometry_block(model, state, a, b, Ra, Rb, pen.point_a, pen.point_b, pen.normal, -pen.depth, scale)
    delta = _TOUCH_GROWTH * scale

    def grown(d):  # (the support map of A plus a ball of radius delta)
        return np.asarray(sup_a(d), float) + delta * np.asarray(d, float) / max(float(np.linalg.norm(d)), 1e-300)

    pen = penetration_depth(grown, sup_b, scale=scale, rel_tol=1e-4)
    if pen is None or pen.depth > 2.0 * delta:  # (apart, or not touching: then the first query stands)
        return None
    point_a = pen.point_a - delta * pen.normal  # (back on A's own boundary)
    return _geometry_block(model, state, a, b, Ra, Rb, point_a, pen.point_b, pen.normal, delta - pen.depth, scale)


# of the smaller radius: how far A is grown to find the normal of touching bodies (_epa_geometry).  The expanding
# polytope needs the origin inside by more than its start's own rounding: two boxes touching face to face gave no
# polytope grown by 1e-6 or 1e-4 of the radius, the face normal at 1e-3 and 1e-2 (its depth the growth to 1e-9)
_TOUCH_GROWTH = 1e-3


def _thinnest_width(shape) -> float:
    """A bounded shape's thinnest width along its body axes (its extent between the supports along +-x, +-y, +-z)."""
    axes = np.vstack((np.eye(3), -np.eye(3)))
    ext = np.einsum("ij,ij->i", np.asarray(shape.support(axes), float), axes)
    return float(np.min(ext[:3] + ext[3:]))


class StartOverlap(NamedTuple):
    """A pair of bodies that overlap at the start beyond the limit (start_overlaps)."""

    depth: float  # m, the real overlap
    allowed: float  # m, validate.MAX_START_OVERLAP of the thinner one's thinnest width
    at: int  # the body a refusal is located at (start_located) ...
    other: int  # ... and the other
    buried: bool  # the centre of mass of one lies inside the other (buried_pair)


def start_overlaps(model: ContactModel, state: State, cancel=None) -> dict:
    """The pairs of bodies that overlap at `state` by more than validate.MAX_START_OVERLAP of the thinner one's
    thinnest width: {ip: StartOverlap}, empty when every pair is apart, touching or within it.
    The depth is the real overlap: the closest-point query of a pair whose bounding volumes overlap
    (closest_points_many: the penetration of overlapping bodies is its negative s), or, where that query does not converge (bodies whose
    closest-point problem has no unique normal, such as two at the same place), the expanding polytope's penetration
    depth of the two shapes (core.shapes.distance.penetration_depth).  Queried a chunk at a time when a run's `cancel`
    is given (RunCancelled when it says stop).

    Bodies buried in one another (two bounded bodies, the centre of mass of one inside the other: an overlap of a
    good part of a width, far beyond the limit) are looked for first, by the shapes' inequalities at the centres alone,
    and only the pairs of the first body in the file so buried (the body start_located names) are queried (all of
    them when none of those pairs overlaps beyond the limit after all): a pile of 100 spheres at one point has 4,950
    such pairs, whose queries took 103 s, where its first body put inside another takes one.  (This replaces a rule
    on the distance of the bodies' origins, closer than half the smaller bounding radius, which also refused bodies
    that do not touch: two 0.2 x 0.2 x 0.05 m plates stacked 1 mm apart, user test ut2 P5.)"""
    _cand, lb = candidate_pairs(model, state, 0.0)  # (lb: each pair's lower gap bound from its bounding volumes)
    ips = np.flatnonzero(lb <= 0.0).tolist()
    if not ips:
        return {}
    R = _rot(state.q)
    buried = {ip for ip in ips if buried_pair(model, state, ip, R)}
    if buried:
        first = min(start_located(model, *model.pairs[ip][:2])[0] for ip in buried)
        over = _overlaps(model, state, [ip for ip in ips if ip in buried and
                                        start_located(model, *model.pairs[ip][:2])[0] == first], R, buried, cancel)
        if over:
            return over
    return _overlaps(model, state, ips, R, buried, cancel)


def _overlaps(model: ContactModel, state: State, ips: list, R: np.ndarray, buried: set, cancel=None) -> dict:
    """start_overlaps of the pairs ips (buried: those of them that are buried_pair)."""
    over = {}
    for n, (ip, (z, res)) in enumerate(zip(ips, closest_points_chunked(model, state, ips, cancel))):
        if n % CANCEL_CHUNK == 0:
            check_cancel(cancel)  # (the widths of 260 pairs took tens of milliseconds too)
        a, b, _mu = model.pairs[ip]
        bounded = model.halfspace[a] is None and model.halfspace[b] is None
        if res.converged:
            depth = -float(z[PairLayout(model.shapes[a].m, model.shapes[b].m, 0).s])
        elif bounded:
            depth = _penetration(model, state, a, b, R)
        else:
            continue
        widths = [_thinnest_width(model.shapes[i]) for i in (a, b) if model.halfspace[i] is None]
        allowed = validate.MAX_START_OVERLAP * min(widths)
        if depth > allowed:
            over[ip] = StartOverlap(depth, allowed, *start_located(model, a, b), ip in buried)
    return over


def start_located(model: ContactModel, a: int, b: int) -> tuple[int, int]:
    """Of two bodies that start inside one another, (the one a refusal is located at, the other): the body moved by
    forces, of two such bodies the later in the file (the one put where the other already is)."""
    if not model.free[a] or (model.free[b] and b > a):  # (a body the drivers move starts where they put it)
        return b, a
    return a, b


def centre_inside(model: ContactModel, state: State, i: int, j: int, R=None) -> bool:
    """Whether body i's centre of mass lies inside body j's shape (its inequalities all <= 0 there)."""
    Rj = _rot(state.q[j]) if R is None else R[j]
    y = Rj.T @ (state.p[i] - state.p[j]) + model.com_body[j]
    return bool(np.all(np.asarray(model.shapes[j].values(y), float) <= 0.0))


def buried_pair(model: ContactModel, state: State, ip: int, R=None) -> bool:
    """Whether pair ip's bodies are both bounded and the centre of mass of one lies inside the other."""
    a, b, _mu = model.pairs[ip]
    if model.halfspace[a] is not None or model.halfspace[b] is not None:
        return False
    return centre_inside(model, state, a, b, R) or centre_inside(model, state, b, a, R)


def _penetration(model, state, a, b, R) -> float:
    """The penetration depth of bounded bodies a and b by the expanding polytope (0 when they are apart or touch)."""
    from ..shapes.distance import penetration_depth

    scale = max(min(float(model.radius[a]), float(model.radius[b])), 1e-3)
    pen = penetration_depth(_world_support(model, state, a, R[a]), _world_support(model, state, b, R[b]),
                            scale=scale, rel_tol=1e-4)
    return 0.0 if pen is None else float(pen.depth)
