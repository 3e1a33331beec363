"""Distance between two convex shapes from their support maps: the Gilbert-Johnson-Keerthi algorithm (GJK, 1988).

GJK minimises |x| over the Minkowski difference C = A - B, using only support points s_C(d) = s_A(d) - s_B(-d):
each iteration adds the support point of C towards the origin to a simplex of at most four points and replaces
the simplex by the smallest sub-simplex containing its point nearest the origin.  That point comes from Johnson's
sub-algorithm in its signed-volume form (Montanari, Petrinic and Barbieri 2017): the origin's barycentric
coordinates in the simplex from determinants of its edges, in closed form on 3-tuples of floats, and only the faces
those coordinates put the origin beyond are searched (_nearest_in_simplex); the support maps are an iteration's only
numpy calls.  For polytopes (boxes, polytopes) it ends exactly in a few iterations; for curved shapes it converges
linearly and stops at a relative duality gap.  The contact step starts a new pair's closest-point unknowns from
here: the closest-point KKT equations that the step solves have spurious solutions (points on the far sides of the
bodies, with a negative separation) which a poor starting point falls into; GJK's points are the true closest
points.

When the shapes overlap, `penetration_depth` finds how deep by the expanding polytope algorithm (EPA, van den
Bergen 2001): the smallest translation that separates them is the point of the boundary of A - B nearest the
origin, found by growing a polytope inside A - B (facets from qhull, scipy.spatial.ConvexHull) towards its facet
nearest the origin.  Overlapping shapes have other pairs of boundary points with opposite normals too (the far
sides again); the explicit contact method starts its query there so that it measures the real depth.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["Distance", "Penetration", "gjk_distance", "penetration_depth"]

Support = Callable[[np.ndarray], np.ndarray]  # world direction -> world support point


@dataclass(frozen=True)
class Distance:
    """Result of gjk_distance: the distance (0 when the shapes touch or overlap) and a closest point on each."""

    distance: float
    point_a: np.ndarray
    point_b: np.ndarray
    overlap: bool  # the shapes touch or overlap (the points are then only some points of A and B)
    iterations: int


Vec = tuple[float, float, float]

# Nearly degenerate simplices: a triangle with |e1 x e2|^2 <= _THIN |e1|^2 |e2|^2 (its edges e1, e2 from one vertex),
# a tetrahedron with det(e1, e2, e3)^2 <= _THIN |e1|^2 |e2|^2 |e3|^2.  The signs of their barycentric coordinates,
# which say the faces the origin lies beyond, are rounding there, and all their faces are searched (_triangle,
# _tetrahedron): without it, one in twelve tetrahedra whose points lie 1e-11 to 1e-9 off a line gave a face that is
# not the nearest (tests/core/shapes/test_distance.py)
_THIN = 1e-8
# A nearly flat tetrahedron holds the origin only when the point its barycentric coordinates make is the origin
# within this fraction of the points' largest coordinate: a flat one's coordinates may all be positive for an origin
# off its plane (a box and a sphere 1.3e-4 m apart, and two polytopes 2e-4 m apart, were reported overlapping)
_INSIDE = 1e-12


def _dot(a: Vec, b: Vec) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _sub(a: Vec, b: Vec) -> Vec:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def _cross(a: Vec, b: Vec) -> Vec:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _det(a: Vec, b: Vec, c: Vec) -> float:
    """The determinant of the columns a, b, c: (a x b) . c."""
    return _dot(_cross(a, b), c)


def _combine(P, face, lam) -> Vec:
    """The point sum_j lam[j] P[face[j]]."""
    return (sum(l * P[i][0] for i, l in zip(face, lam)), sum(l * P[i][1] for i, l in zip(face, lam)),
            sum(l * P[i][2] for i, l in zip(face, lam)))


def _segment(P, i: int, j: int):
    """(squared distance, indices, weights) of the point of segment P[i] P[j] nearest the origin."""
    a, b = P[i], P[j]
    e = _sub(b, a)
    ee = _dot(e, e)
    t = -_dot(a, e) / ee if ee > 0.0 else 0.0  # the origin's projection a + t e on the line
    if t <= 0.0:
        return _dot(a, a), (i,), (1.0,)
    if t >= 1.0:
        return _dot(b, b), (j,), (1.0,)
    x = _combine(P, (i, j), (1.0 - t, t))
    return _dot(x, x), (i, j), (1.0 - t, t)


def _nearest(candidates):
    """The nearest of (squared distance, indices, weights) results."""
    return min(candidates, key=lambda c: c[0])


def _triangle(P, i: int, j: int, k: int):
    """(squared distance, indices, weights) of the point of triangle P[i] P[j] P[k] nearest the origin: the origin's
    projection on its plane when its barycentric coordinates are all positive, else the nearest point of the edges
    opposite the vertices whose coordinates are not (the edges whose line separates the projection from the
    triangle; all three when the triangle is nearly degenerate)."""
    a = P[i]
    e1, e2 = _sub(P[j], a), _sub(P[k], a)
    n = _cross(e1, e2)
    nn = _dot(n, n)
    edges = ((j, k), (i, k), (i, j))  # opposite i, j, k
    found = []
    if nn > 0.0:
        # the projection a + u e1 + w e2 of the origin: u, w are ratios of signed areas (Cramer's rule in the plane,
        # from the edges: no difference of large products when the triangle is far from the origin)
        r = (-a[0], -a[1], -a[2])
        u, w = _det(r, e2, n) / nn, _det(e1, r, n) / nn
        lam = (1.0 - u - w, u, w)
        if lam[0] > 0.0 and u > 0.0 and w > 0.0:
            x = _combine(P, (i, j, k), lam)
            found.append((_dot(x, x), (i, j, k), lam))
        if nn > _THIN * _dot(e1, e1) * _dot(e2, e2):
            if found:
                return found[0]
            edges = [e for e, l in zip(edges, lam) if l <= 0.0]
    return _nearest(found + [_segment(P, *e) for e in edges])


_FACES = ((1, 2, 3), (0, 2, 3), (0, 1, 3), (0, 1, 2))  # of a tetrahedron, opposite its vertices 0, 1, 2, 3


def _tetrahedron(P):
    """(squared distance, indices, weights) of the point of tetrahedron P (four points) nearest the origin: the origin
    (distance 0, its barycentric coordinates) when they are all positive, else the nearest point of the faces opposite
    the vertices whose coordinates are not (all four when the tetrahedron is nearly flat)."""
    a = P[0]
    e1, e2, e3 = _sub(P[1], a), _sub(P[2], a), _sub(P[3], a)
    D = _det(e1, e2, e3)  # six times the signed volume
    faces = _FACES
    if D != 0.0:
        r = (-a[0], -a[1], -a[2])
        u, v, w = _det(r, e2, e3) / D, _det(e1, r, e3) / D, _det(e1, e2, r) / D  # the origin = a + u e1 + v e2 + w e3
        lam = (1.0 - u - v - w, u, v, w)
        flat = D * D <= _THIN * _dot(e1, e1) * _dot(e2, e2) * _dot(e3, e3)
        if lam[0] > 0.0 and u > 0.0 and v > 0.0 and w > 0.0:
            x = _combine(P, (0, 1, 2, 3), lam)
            if not flat or _dot(x, x) <= (_INSIDE * max(abs(c) for p in P for c in p)) ** 2:
                return 0.0, (0, 1, 2, 3), lam
        elif not flat:
            faces = [f for f, l in zip(_FACES, lam) if l <= 0.0]
    return _nearest([_triangle(P, *f) for f in faces])


def _nearest_in_simplex(P):
    """(point of the simplex P nearest the origin, its barycentric weights, the indices of the points they weigh) for P
    a sequence of 1 to 4 points (3-tuples): the smallest face holding that point, with weights > 0 summing to 1 (the
    point is the origin exactly, with the four points, when a tetrahedron holds it).

    Johnson's sub-algorithm by signed volumes (Montanari, Petrinic and Barbieri 2017, "Improving the GJK algorithm
    for faster and more reliable distance queries between convex objects"): the origin's barycentric coordinates in
    the simplex (of its projection, for a segment or a triangle) from determinants of its edges, in closed form on
    3-vectors; where one is not positive, the origin lies beyond the face opposite that point, and the nearest point
    is looked for in those faces only.  About 7 us a call: before, every one of the up to 15 faces was solved as a
    small KKT system by np.linalg.solve, about 0.2 ms a call and two thirds of GJK's time (docs/notes/contact-solver.md,
    "GJK's simplex by signed volumes")."""
    k = len(P)
    if k == 1:
        d2, idx, lam = _dot(P[0], P[0]), (0,), (1.0,)
    elif k == 2:
        d2, idx, lam = _segment(P, 0, 1)
    elif k == 3:
        d2, idx, lam = _triangle(P, 0, 1, 2)
    else:
        d2, idx, lam = _tetrahedron(P)
    x = (0.0, 0.0, 0.0) if len(idx) == 4 else _combine(P, idx, lam)
    return x, lam, idx


def gjk_distance(support_a: Support, support_b: Support, d0: np.ndarray, *, rel_tol: float = 1e-10,
                 abs_tol: float = 1e-14, max_iter: int = 64) -> Distance:
    """Distance and closest points of two convex shapes given by their world support maps, from direction d0
    (e.g. centre of B minus centre of A).  (The simplex is kept as 3-tuples of floats; the support maps are given
    arrays.)"""
    d = np.asarray(d0, float)
    if not np.all(np.isfinite(d)) or float(d @ d) == 0.0:
        d = np.array([1.0, 0.0, 0.0])
    Wa = [tuple(np.asarray(support_a(d), float).tolist())]
    Wb = [tuple(np.asarray(support_b(-d), float).tolist())]
    W = [_sub(Wa[0], Wb[0])]  # points of A - B
    v, lam = W[0], (1.0,)
    it = 0
    for it in range(1, max_iter + 1):
        vv = _dot(v, v)
        if vv <= abs_tol ** 2:
            break
        vn = np.array(v)
        qa = tuple(np.asarray(support_a(-vn), float).tolist())
        qb = tuple(np.asarray(support_b(vn), float).tolist())
        w = _sub(qa, qb)
        # duality gap: |v|^2 - v.w bounds |v|^2 - dist^2 from above
        if vv - _dot(v, w) <= rel_tol * vv + abs_tol ** 2:
            break
        if any(qa == a and qb == b for a, b in zip(Wa, Wb)):
            break  # no new support point: v is as near as the support maps can tell
        Wa.append(qa)
        Wb.append(qb)
        W.append(w)
        v_new, lam, S = _nearest_in_simplex(W)
        Wa, Wb, W = [Wa[i] for i in S], [Wb[i] for i in S], [W[i] for i in S]
        if _dot(v_new, v_new) >= vv:
            break  # rounding: no progress
        v = v_new
        if len(S) == 4:
            break  # the origin is inside the tetrahedron: the shapes overlap (v is 0)
    a = np.asarray(lam) @ np.array(Wa)
    b = np.asarray(lam) @ np.array(Wb)
    dist = float(np.sqrt(_dot(v, v)))
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
