"""Distance between two convex shapes from their support maps: the Gilbert-Johnson-Keerthi algorithm (GJK, 1988).

GJK minimises |x| over the Minkowski difference C = A - B, using only support points s_C(d) = s_A(d) - s_B(-d):
each iteration adds the support point of C towards the origin to a simplex of at most four points and replaces
the simplex by the smallest sub-simplex containing its point nearest the origin.  For polytopes (boxes,
polytopes) it ends exactly in a few iterations; for curved shapes it converges linearly and stops at a relative
duality gap.  The contact step starts a new pair's closest-point unknowns from here: the closest-point KKT
equations that the step solves have spurious solutions (points on the far sides of the bodies, with a negative
separation) which a poor starting point falls into; GJK's points are the true closest points.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Callable

import numpy as np

__all__ = ["Distance", "gjk_distance"]

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


def _nearest_in_simplex(W: np.ndarray):
    """(point of conv(W) nearest the origin, barycentric weights, indices of the sub-simplex used) for W (k, 3),
    k <= 4: every face of the simplex is tried (at most 15), the nearest with positive weights kept."""
    best = (np.inf, None, None)
    for S in _SUBSETS[len(W)]:
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
            v = np.zeros(3)  # the origin is inside the simplex: the shapes overlap
            break
    a = lam @ np.array(Wa)
    b = lam @ np.array(Wb)
    dist = float(np.linalg.norm(v))
    return Distance(dist, a, b, dist <= abs_tol, it)
