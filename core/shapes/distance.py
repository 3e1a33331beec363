"""Distance between two convex shapes from their support maps: the Gilbert-Johnson-Keerthi algorithm (GJK, 1988).

GJK minimises |x| over the Minkowski difference C = A - B, using only support points s_C(d) = s_A(d) - s_B(-d):
each iteration adds the support point of C towards the origin to a simplex of at most four points and replaces
the simplex by the smallest sub-simplex containing its point nearest the origin.  For polytopes (boxes,
polytopes) it ends exactly in a few iterations; for curved shapes it converges linearly and stops at a relative
duality gap.  The contact step starts a new pair's closest-point unknowns from here: the closest-point KKT
equations that the step solves have spurious solutions (points on the far sides of the bodies, with a negative
separation) which a poor starting point falls into; GJK's points are the true closest points.

When the shapes overlap, `penetration_depth` finds how deep by the expanding polytope algorithm (EPA, van den
Bergen 2001): the smallest translation that separates them is the point of the boundary of A - B nearest the
origin, found by growing a polytope inside A - B (facets from qhull, scipy.spatial.ConvexHull) towards its facet
nearest the origin.  Overlapping shapes have other pairs of boundary points with opposite normals too (the far
sides again); the explicit contact method starts its query there so that it measures the real depth.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Callable

import numpy as np

__all__ = ["Distance", "Penetration", "gjk_distance", "penetration_depth"]

Support = Callable[[np.ndarray], np.ndarray]  # world direction -> world support point

_SUBSETS = {k: [c for r in range(1, k + 1) for c in combinations(range(k), r)] for k in range(1, 5)}


@dataclass(frozen=True)
class Distance:
    """Result of gjk_distance: the distance (0 when the shapes touch or overlap) and a closest point on each."""

    distance: float
    point_a: np.ndarray
    point_b: np.ndarray
    overlap: bool  # the shapes touch or overlap (the points are then only some points of A and B)
    iterations: int


def _nearest_in_simplex(W: np.ndarray, max_k: int = 4):
    """(point of conv(W) nearest the origin, barycentric weights, indices of the sub-simplex used) for W (k, 3),
    k <= 4: every face of the simplex of at most max_k points is tried (at most 15), the nearest with positive
    weights kept."""
    best = (np.inf, None, None)
    for S in _SUBSETS[len(W)]:
        if len(S) > max_k:
            continue
        P = W[list(S)]
        if len(S) == 1:
            lam = np.ones(1)
        else:
            # min |P^T lam|^2 with sum(lam) = 1: the KKT system [[2 P P^T, 1], [1^T, 0]]
            k = len(S)
            G = P @ P.T
            A = np.zeros((k + 1, k + 1))
            A[:k, :k] = G
            A[:k, k] = 1.0
            A[k, :k] = 1.0
            rhs = np.zeros(k + 1)
            rhs[k] = 1.0
            try:
                sol = np.linalg.solve(A, rhs)
            except np.linalg.LinAlgError:
                continue
            lam = sol[:k]
            if not np.all(np.isfinite(lam)) or np.any(lam <= 0.0):
                continue
        x = lam @ P
        d2 = float(x @ x)
        if d2 < best[0] - 1e-30:
            best = (d2, lam, S)
    d2, lam, S = best
    return lam @ W[list(S)], lam, list(S)


def gjk_distance(support_a: Support, support_b: Support, d0: np.ndarray, *, rel_tol: float = 1e-10,
                 abs_tol: float = 1e-14, max_iter: int = 64) -> Distance:
    """Distance and closest points of two convex shapes given by their world support maps, from direction d0
    (e.g. centre of B minus centre of A)."""
    d = np.asarray(d0, float)
    if not np.all(np.isfinite(d)) or float(d @ d) == 0.0:
        d = np.array([1.0, 0.0, 0.0])
    pa, pb = np.asarray(support_a(d), float), np.asarray(support_b(-d), float)
    Wa, Wb = [pa], [pb]
    v = pa - pb
    lam = np.ones(1)
    it = 0
    for it in range(1, max_iter + 1):
        vv = float(v @ v)
        if vv <= abs_tol ** 2:
            break
        qa, qb = np.asarray(support_a(-v), float), np.asarray(support_b(v), float)
        w = qa - qb
        # duality gap: |v|^2 - v.w bounds |v|^2 - dist^2 from above
        if vv - float(v @ w) <= rel_tol * vv + abs_tol ** 2:
            break
        if any(np.array_equal(qa, a) and np.array_equal(qb, b) for a, b in zip(Wa, Wb)):
            break  # no new support point: v is as near as the support maps can tell
        Wa.append(qa)
        Wb.append(qb)
        W = np.array(Wa) - np.array(Wb)
        v_new, lam, S = _nearest_in_simplex(W)
        Wa, Wb = [Wa[i] for i in S], [Wb[i] for i in S]
        if float(v_new @ v_new) >= vv:
            break  # rounding: no progress
        v = v_new
        if len(S) == 4:
            if float(v @ v) <= (1e-12 * float(np.max(np.abs(W)))) ** 2:
                v = np.zeros(3)  # the origin is inside the tetrahedron: the shapes overlap
                break
            # four points in a plane (a flat tetrahedron: its KKT system is singular, and a solve may still return
            # positive weights): the origin is off that plane, so the nearest point lies on a face of at most three
            # (a box and a sphere 1.3e-4 m apart, and two polytopes 2e-4 m apart, were reported overlapping)
            v, lam, S = _nearest_in_simplex(W, 3)
            Wa, Wb = [Wa[i] for i in S], [Wb[i] for i in S]
    a = lam @ np.array(Wa)
    b = lam @ np.array(Wb)
    dist = float(np.linalg.norm(v))
    return Distance(dist, a, b, dist <= abs_tol, it)


@dataclass(frozen=True)
class Penetration:
    """Result of penetration_depth: how deep A and B overlap, along which direction, and the witness points."""

    depth: float  # the length of the smallest translation of B that separates the shapes (>= 0)
    normal: np.ndarray  # A's outward normal at point_a (B moves along it to separate)
    point_a: np.ndarray  # point of A's boundary
    point_b: np.ndarray  # point of B's boundary, point_b = point_a - depth * normal
    converged: bool  # the support maps could not push the polytope further than the tolerance
    iterations: int


# unit directions of the starting polytope: the six axes and the eight diagonals
_EPA_START = np.vstack((np.eye(3), -np.eye(3), np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1)
                                                           for z in (-1, 1)]) / np.sqrt(3.0)))


def penetration_depth(support_a: Support, support_b: Support, *, scale: float = 1.0, rel_tol: float = 1e-6,
                      max_iter: int = 64) -> Penetration | None:
    """The penetration of two overlapping convex shapes given by their world support maps (EPA), or None when the
    origin is not strictly inside A - B (the shapes are apart or only touch).

    The polytope starts from the support points of A - B in 14 directions (grown first until it holds the origin)
    and grows at its facet nearest the origin by the support point along that facet's normal, until that point lies
    within rel_tol * scale of the facet (scale: a length of the shapes, e.g. the smaller bounding radius).  The
    polytope lies inside A - B, so its nearest facet's distance is a lower bound of the depth, and the support value
    along that facet's normal an upper bound: the depth returned is within the tolerance for polytopes, and for
    curved shapes when it converges (a curved boundary needs many facets: a tolerance of 1e-4 to 1e-3 of the size
    is a good start for an exact solve).  The witness points are the facet point's barycentric combinations of the
    support points of A and of B."""
    from scipy.spatial import ConvexHull, QhullError

    Pa = [np.asarray(support_a(d), float) for d in _EPA_START]
    Pb = [np.asarray(support_b(-d), float) for d in _EPA_START]
    tol = rel_tol * scale
    it = 0
    for it in range(1, max_iter + 1):
        W = np.array(Pa) - np.array(Pb)
        try:
            hull = ConvexHull(W)
        except (QhullError, ValueError):
            return None  # a flat or degenerate difference: no interior
        dist = -hull.equations[:, 3]  # outward unit normals: n . x + off <= 0 inside, the origin's distance -off
        i = int(np.argmin(dist))
        n = hull.equations[i, :3]
        qa, qb = np.asarray(support_a(n), float), np.asarray(support_b(-n), float)
        hn = float(n @ (qa - qb))  # A - B reaches this far along n
        if dist[i] <= tol:  # the origin is not inside the polytope yet
            if hn <= tol:
                return None  # A - B does not reach past the origin along n: apart, or only touching
            Pa.append(qa)
            Pb.append(qb)
            continue
        converged = hn - dist[i] <= tol
        if converged or it == max_iter:
            tri = W[hull.simplices[i]]
            x = dist[i] * n  # the facet's point nearest the origin, by its barycentric weights in the triangle
            T = np.vstack((tri.T, np.ones(3)))
            lam = np.linalg.lstsq(T, np.append(x, 1.0), rcond=None)[0]
            pa = lam @ np.array(Pa)[hull.simplices[i]]
            pb = lam @ np.array(Pb)[hull.simplices[i]]
            return Penetration(float(dist[i]), n.copy(), pa, pb, converged, it)
        Pa.append(qa)
        Pb.append(qb)
    return None  # the polytope never came to hold the origin within max_iter points: no overlap found
