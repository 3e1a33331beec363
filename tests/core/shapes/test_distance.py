"""GJK distance and the expanding polytope's penetration depth (core/shapes/distance.py) against closed forms."""

from __future__ import annotations

import numpy as np
import pytest

from core.shapes import parse_shape
from core.shapes.distance import gjk_distance, penetration_depth
from core.transforms import quat_to_matrix

from .cases import BOUNDED, ident


def _world(shape, R, p):
    """The world support map of `shape` at rotation R and position p of its frame."""
    return lambda d: p + R @ np.asarray(shape.support(R.T @ np.asarray(d, float)), float)


def _sphere(c, r):
    return _world(parse_shape({"type": "sphere", "radius": r}, "a"), np.eye(3), np.asarray(c, float))


def _box(c, size, R=np.eye(3)):
    return _world(parse_shape({"type": "box", "size": list(size)}, "b"), R, np.asarray(c, float))


def _turn(seed):
    q = np.random.default_rng(seed).standard_normal(4)
    return quat_to_matrix(q / np.linalg.norm(q))


@pytest.mark.parametrize("gap", [1e-4, 1e-7, 0.3])
@pytest.mark.parametrize("shift", [(0.1, 0.2), (0.0, 0.0), (0.5, -0.5)])
def test_gjk_distance_of_parallel_faces_is_their_gap_not_an_overlap(gap, shift):
    # a 1 m cube's bottom face `gap` above the top face of a 2 m cube: the Minkowski difference's nearest face is a
    # rectangle, whose corners GJK may gather as four points in one plane (a flat tetrahedron: the origin is off its
    # plane, the shapes do not touch); the distance is the gap.  (The penetration test below met such a simplex
    # with numpy 2.4, whose solve of the singular system returned positive weights: GJK reported an overlap)
    A = _box([0, 0, 0], [2, 2, 2])
    B = _box([shift[0], shift[1], 1.5 + gap], [1, 1, 1])
    for d0 in ([0, 0, 1], [0.3, -0.2, 1], [1, 1, 1], [1, 0, 0]):
        d = gjk_distance(A, B, np.array(d0, float))
        assert not d.overlap and d.distance == pytest.approx(gap, rel=1e-9), d0
        assert d.point_b[2] - d.point_a[2] == pytest.approx(gap, rel=1e-9)


def test_gjk_distance_of_two_spheres_is_centre_distance_minus_radii():
    c = np.array([0.5, 0.4, -0.3])
    d = gjk_distance(_sphere([0, 0, 0], 0.1), _sphere(c, 0.2), c)
    L = np.linalg.norm(c)
    assert not d.overlap
    assert d.distance == pytest.approx(L - 0.3, rel=1e-6)  # |c| - r_a - r_b
    np.testing.assert_allclose(d.point_a, 0.1 * c / L, atol=1e-5)


def test_gjk_distance_of_two_turned_boxes_is_the_face_gap():
    # both boxes turned by the same rotation and B shifted along A's x axis: the gap is the shift minus the half sizes
    R = _turn(3)
    a, b = np.array([0.2, 0.4, 0.6]), np.array([0.4, 0.2, 0.2])
    c = R @ np.array([0.1 + 0.2 + 0.07, 0.05, -0.1])  # half sizes 0.1 and 0.2 along x: 0.07 between the faces
    d = gjk_distance(_box([0, 0, 0], a, R), _box(c, b, R), c)
    assert d.distance == pytest.approx(0.07, abs=1e-12)


def test_penetration_of_two_boxes_is_their_least_overlap_along_a_face_normal():
    # two boxes of half sizes 1 turned alike, B offset by (0.3, 0.1, 1.9) in their frame: the overlaps along the
    # three axes are 2 - |offset| = 1.7, 1.9, 0.1; the least, along z, is the depth, with A's normal +z
    R = _turn(7)
    pen = penetration_depth(_box([0, 0, 0], [2, 2, 2], R), _box(R @ [0.3, 0.1, 1.9], [2, 2, 2], R))
    assert pen is not None and pen.converged
    assert pen.depth == pytest.approx(0.1, abs=1e-9)
    np.testing.assert_allclose(pen.normal, R[:, 2], atol=1e-9)
    np.testing.assert_allclose(pen.point_a - pen.point_b, pen.depth * pen.normal, atol=1e-9)


def test_penetration_of_two_spheres_is_the_sum_of_radii_minus_the_centre_distance():
    c = np.array([0.09, -0.05, 0.06])  # |c| = 0.1196 < 0.15
    pen = penetration_depth(_sphere([0, 0, 0], 0.1), _sphere(c, 0.05), scale=0.05, rel_tol=1e-5)
    L = np.linalg.norm(c)
    assert pen is not None
    # the polytope lies inside A - B: its depth is a lower bound within the tolerance of r_a + r_b - |c|
    assert 0.15 - L - 1e-6 <= pen.depth <= 0.15 - L + 1e-12
    np.testing.assert_allclose(pen.normal, c / L, atol=1e-2)


def test_apart_or_touching_shapes_have_no_penetration():
    assert penetration_depth(_box([0, 0, 0], [2, 2, 2]), _box([0.3, 0.1, 2.1], [2, 2, 2])) is None
    assert penetration_depth(_box([0, 0, 0], [2, 2, 2]), _box([0.3, 0.1, 2.0], [2, 2, 2])) is None  # faces touch
    assert penetration_depth(_sphere([0, 0, 0], 1.0), _sphere([3, 0, 0], 1.0)) is None


@pytest.mark.parametrize("case_b", [BOUNDED[0], BOUNDED[6], BOUNDED[9]], ids=ident)
@pytest.mark.parametrize("case_a", BOUNDED, ids=ident)
def test_penetration_is_the_smallest_separating_translation(case_a, case_b):
    # definition of the depth: B moved by (depth + tol) along the normal no longer overlaps A (GJK finds a positive
    # distance), and B moved by (depth - tol) in any direction still does (the depth is the least such translation)
    sa, sb = parse_shape(case_a, "a"), parse_shape(case_b, "b")
    rng = np.random.default_rng(11)
    Ra, Rb = _turn(1), _turn(2)
    scale = min(sa.bounding_radius, sb.bounding_radius)
    u0 = rng.standard_normal(3)
    pb = Ra @ sa.com - Rb @ sb.com + 0.3 * scale * u0 / np.linalg.norm(u0)  # B's centroid near A's: overlapping
    sup_a = _world(sa, Ra, np.zeros(3))
    pen = penetration_depth(sup_a, _world(sb, Rb, pb), scale=scale, rel_tol=1e-4, max_iter=128)
    assert pen is not None and pen.converged and pen.depth > 0.0
    tol = 2e-4 * scale  # (the depth is known to rel_tol * scale)
    moved = gjk_distance(sup_a, _world(sb, Rb, pb + (pen.depth + tol) * pen.normal), pen.normal)
    assert not moved.overlap and moved.distance > 0.0
    for u in rng.standard_normal((40, 3)):
        u /= np.linalg.norm(u)
        still = gjk_distance(sup_a, _world(sb, Rb, pb + (pen.depth - tol) * u), u)
        assert still.distance <= 1e-9 * scale, (u, still.distance)


def _exact_nearest(P: np.ndarray) -> float:
    """The distance from the origin to conv(P), P (k, 3), in exact rational arithmetic: the least |x| over the
    subsets of affinely independent points of the origin's projection x on their affine hull, where its barycentric
    weights are all >= 0 (the nearest point lies inside a face spanned by such points, Caratheodory).  The
    projection: Q0 + E t with E's columns Q_i - Q0 and (E^T E) t = -E^T Q0, solved by Gaussian elimination on
    Fractions (the input floats are exact rationals); a singular Gram matrix is an affinely dependent subset."""
    from fractions import Fraction
    from itertools import combinations

    def dot(x, y):
        return sum(xm * ym for xm, ym in zip(x, y))

    F = [[Fraction(float(c)) for c in p] for p in P]
    best = None
    for r in range(1, len(F) + 1):
        for S in combinations(range(len(F)), r):
            Q = [F[i] for i in S]
            E = [[q[m] - Q[0][m] for m in range(3)] for q in Q[1:]]
            n = r - 1
            A = [[dot(E[i], E[j]) for j in range(n)] + [-dot(E[i], Q[0])] for i in range(n)]  # [E^T E | -E^T Q0]
            singular = False
            for c in range(n):
                piv = next((i for i in range(c, n) if A[i][c] != 0), None)
                if piv is None:
                    singular = True
                    break
                A[c], A[piv] = A[piv], A[c]
                for i in range(n):
                    if i != c and A[i][c] != 0:
                        f = A[i][c] / A[c][c]
                        A[i] = [a - f * b for a, b in zip(A[i], A[c])]
            if singular:
                continue
            t = [A[i][n] / A[i][i] for i in range(n)]
            lam = [1 - sum(t)] + t
            if min(lam) < 0:
                continue
            x = [sum(l * q[m] for l, q in zip(lam, Q)) for m in range(3)]
            d2 = dot(x, x)
            best = d2 if best is None or d2 < best else best
    return float(best) ** 0.5


def _simplices(rng):
    """Random simplices of 1 to 4 points (name, (k, 3) array), degenerate ones among them."""
    out = []
    for _ in range(60):
        k = int(rng.integers(1, 5))
        scale, shift = 10 ** rng.uniform(-3, 1), 10 ** rng.uniform(-3, 1)
        out.append(("random", scale * rng.standard_normal((k, 3)) + shift * rng.standard_normal(3)))
    for _ in range(15):
        a, e = rng.standard_normal(3), rng.standard_normal(3)
        t = rng.uniform(-1, 2, int(rng.integers(3, 5)))
        out.append(("collinear (to rounding)", a + t[:, None] * e))
        ai, ei = rng.integers(-4, 5, 3) / 4.0, rng.integers(-4, 5, 3) / 8.0  # (dyadic: exactly collinear in floats)
        out.append(("collinear (exactly)", ai + (rng.integers(-3, 4, int(rng.integers(3, 5))) / 2.0)[:, None] * ei))
        n = rng.standard_normal(3)
        n /= np.linalg.norm(n)
        u = np.cross(n, rng.standard_normal(3))
        w = np.cross(n, u)
        c = rng.uniform(-1, 1) * n
        st = rng.standard_normal((4, 2))
        out.append(("coplanar tetrahedron (to rounding)", c + st[:, :1] * u + st[:, 1:] * w))
        z = rng.choice([0.0, rng.uniform(-1, 1)])  # (the plane z = const: exactly coplanar; z = 0: the origin in it)
        out.append(("coplanar tetrahedron (exactly)", np.column_stack((rng.standard_normal((4, 2)), np.full(4, z)))))
        P = rng.standard_normal((int(rng.integers(2, 5)), 3)) + rng.standard_normal(3)
        P[-1] = P[0]
        out.append(("repeated point", P))
        T = rng.standard_normal((4, 3))
        out.append(("origin inside", T - rng.dirichlet(np.ones(4)) @ T))
        k = int(rng.integers(2, 5))
        out.append(("far and small", 1e-3 * rng.standard_normal((k, 3)) + 5.0 * rng.standard_normal(3)))
    for _ in range(60):
        # (four points 1e-11 to 1e-9 off a line: the signs of such a tetrahedron's barycentric coordinates are
        # rounding, and one face in twelve is the nearest although its opposite vertex's coordinate is positive)
        a, e = rng.standard_normal(3), rng.standard_normal(3)
        off = 10 ** rng.uniform(-11, -9) * rng.standard_normal((4, 3))
        out.append(("nearly collinear tetrahedron", a + rng.uniform(-1, 2, 4)[:, None] * e + off))
    return out


def test_nearest_point_of_a_simplex_is_the_exact_nearest_point():
    # GJK's simplex step (signed volumes) against the definition, computed exactly: the distance agrees to rounding,
    # the weights are positive, sum to 1 and make the point returned
    from core.shapes.distance import _nearest_in_simplex

    rng = np.random.default_rng(5)
    for name, P in _simplices(rng):
        x, lam, idx = _nearest_in_simplex([tuple(p) for p in P])
        exact = _exact_nearest(P)
        scale = float(np.abs(P).max())
        assert abs(float(np.linalg.norm(x)) - exact) <= 1e-12 * exact + 1e-14 * scale, (name, P, x, exact)
        assert len(set(idx)) == len(idx) == len(lam) and all(0 <= i < len(P) for i in idx), (name, idx)
        assert min(lam) > 0.0 and abs(sum(lam) - 1.0) <= 1e-15 * len(lam), (name, lam)
        if len(idx) < 4:
            np.testing.assert_allclose(x, np.asarray(lam) @ P[list(idx)], rtol=0, atol=1e-15 * scale)
        else:  # (the four points: the origin is inside the tetrahedron, and is the point returned)
            assert exact == 0.0 and x == (0.0, 0.0, 0.0), (name, P)
            np.testing.assert_allclose(np.asarray(lam) @ P, 0.0, atol=1e-14 * scale)
