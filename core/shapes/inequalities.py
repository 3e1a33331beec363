"""Vectorised convex inequality groups f(x) <= 0 (planes, axis-aligned quadrics, superquadrics) with closed-form derivatives.

Every group maps points x (..., 3) to values (..., k), gradients (..., k, 3) and Hessians (..., k, 3, 3), one at a
time or all three in one call (evaluate: the contact step's inner loop, where the per-call cost dominates).
Each is scaled so that it is close to a signed distance near its surface (see docs/shapes.md).

The contact step evaluates the same rows compiled, for whole batches of pairs in one call
(core.contact.kernels.shape_rows): every group gives its rows as a kind (ROW_PLANE, ROW_QUADRIC, ROW_SUPERQUADRIC) and a
row of ROW_PARAMS parameters (row_params); tests/core/shapes check the compiled rows against these.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Planes", "Quadric", "Superquadric", "ROW_PLANE", "ROW_QUADRIC", "ROW_SUPERQUADRIC", "ROW_PARAMS"]

# the kinds of rows of the compiled evaluation, and the length of a row's parameters (row_params)
ROW_PLANE, ROW_QUADRIC, ROW_SUPERQUADRIC = 0, 1, 2
ROW_PARAMS = 6


class Planes:
    """k half-spaces n_i·x - d_i <= 0 with unit normals n_i: the values are exact signed distances."""

    def __init__(self, normals: np.ndarray, offsets: np.ndarray) -> None:
        self.normals = np.array(normals, dtype=float).reshape(-1, 3)  # (k, 3) unit outward normals
        self.offsets = np.array(offsets, dtype=float).reshape(-1)  # (k,) plane offsets along the normals
        self.m = len(self.offsets)

    kind = ROW_PLANE

    def row_params(self) -> np.ndarray:
        """(m, ROW_PARAMS): per row the normal and the offset."""
        out = np.zeros((self.m, ROW_PARAMS))
        out[:, 0:3], out[:, 3] = self.normals, self.offsets
        return out

    def values(self, x: np.ndarray) -> np.ndarray:
        """n_i·x - d_i."""
        return x @ self.normals.T - self.offsets

    def gradients(self, x: np.ndarray) -> np.ndarray:
        """n_i, broadcast over the points."""
        g = np.empty(x.shape[:-1] + (self.m, 3))  # (filled by assignment: np.broadcast_to costs ~4 us per call)
        g[...] = self.normals
        return g

    def hessians(self, x: np.ndarray) -> np.ndarray:
        """Zero."""
        return np.zeros(x.shape[:-1] + (self.m, 3, 3))

    def evaluate(self, x: np.ndarray, hessians: bool = True):
        """(values, gradients, Hessians or None)."""
        g = np.empty(x.shape[:-1] + (self.m, 3))
        g[...] = self.normals
        return self.values(x), g, (np.zeros(x.shape[:-1] + (self.m, 3, 3)) if hessians else None)


class Quadric:
    """One inequality (rho/2)(sum_j w_j x_j^2 - 1) <= 0: ellipsoid (all w_j > 0) or elliptic cylinder (w_z = 0)."""

    m = 1

    def __init__(self, weights: np.ndarray, rho: float) -> None:
        self.weights = np.array(weights, dtype=float)  # (3,) 1/radius^2 per axis (0: unbounded along it)
        self.rho = float(rho)  # length scale making the gradient ~unit on the surface
        self._h = np.diag(self.rho * self.weights)

    kind = ROW_QUADRIC

    def row_params(self) -> np.ndarray:
        """(1, ROW_PARAMS): the weights and rho."""
        out = np.zeros((1, ROW_PARAMS))
        out[0, 0:3], out[0, 3] = self.weights, self.rho
        return out

    def values(self, x: np.ndarray) -> np.ndarray:
        """(rho/2)(sum w x^2 - 1)."""
        return (0.5 * self.rho * ((x * x) @ self.weights - 1.0))[..., None]

    def gradients(self, x: np.ndarray) -> np.ndarray:
        """rho w x."""
        return (self.rho * self.weights * x)[..., None, :]

    def hessians(self, x: np.ndarray) -> np.ndarray:
        """rho diag(w), constant."""
        H = np.empty(x.shape[:-1] + (1, 3, 3))
        H[...] = self._h
        return H

    def evaluate(self, x: np.ndarray, hessians: bool = True):
        """(values, gradients, Hessians or None)."""
        H = None
        if hessians:
            H = np.empty(x.shape[:-1] + (1, 3, 3))
            H[...] = self._h
        return self.values(x), self.gradients(x), H


def _times(big: np.ndarray, t: np.ndarray) -> np.ndarray:
    """big * t with 0 wherever t is 0, so an overflowed power (far outside) times a zero factor is 0, not NaN."""
    with np.errstate(over="ignore", invalid="ignore"):  # inf * 0 is computed, then replaced by the where
        return np.where(t == 0.0, 0.0, big * t)


def _pnorm(u: np.ndarray, w: np.ndarray, p: float) -> np.ndarray:
    """(u^p + w^p)^(1/p) for u, w >= 0, scaled by the larger so that it cannot overflow."""
    big = np.maximum(u, w)
    safe = np.where(big > 0.0, big, 1.0)
    return big * ((u / safe) ** p + (w / safe) ** p) ** (1.0 / p)


class Superquadric:
    """One inequality (rho/e1)(F - 1) <= 0 with F = (|x/a|^e2 + |y/b|^e2)^(e1/e2) + |z/c|^e1.

    F is homogeneous of degree e1 in x, so x·grad f = rho on the surface (Euler), which keeps the
    gradient close to unit length there for rho = (abc)^(1/3).
    """

    m = 1

    def __init__(self, radii: np.ndarray, e1: float, e2: float, rho: float) -> None:
        self.radii = np.array(radii, dtype=float)  # (3,) semi-axes a, b, c
        self.e1 = float(e1)  # exponent between the x-y "norm" and z (north-south roundness)
        self.e2 = float(e2)  # exponent in the x-y plane (east-west roundness)
        self.rho = float(rho)

    kind = ROW_SUPERQUADRIC

    def row_params(self) -> np.ndarray:
        """(1, ROW_PARAMS): the semi-axes, e1, e2 and rho."""
        return np.array([[*self.radii, self.e1, self.e2, self.rho]])

    def _parts(self, x: np.ndarray):
        """Scaled coordinates and the pieces shared by value, gradient and Hessian."""
        u = x / self.radii
        s = np.abs(u)
        sg = np.sign(u)
        p, q = self.e2, self.e1
        n = _pnorm(s[..., 0], s[..., 1], p)  # e2-norm of the scaled (x, y)
        safe = np.where(n > 0.0, n, 1.0)
        # ratios |x'|/N, |y'|/N lie in [0, 1]; at N = 0 they are set to 0, which gives the correct limits
        r = np.where((n > 0.0)[..., None], s[..., :2] / safe[..., None], 0.0)
        return u, s, sg, n, r

    def values(self, x: np.ndarray) -> np.ndarray:
        """(rho/e1)(F - 1)."""
        p, q = self.e2, self.e1
        s = np.abs(x / self.radii)
        n = _pnorm(s[..., 0], s[..., 1], p)
        # Far outside a boxy superquadric (large exponents) the powers exceed the largest float: +inf is the value
        # there (outside, f > 0) and every caller only compares it; numpy's overflow warning would say nothing more.
        with np.errstate(over="ignore"):
            return ((self.rho / q) * (n**q + s[..., 2] ** q - 1.0))[..., None]

    def gradients(self, x: np.ndarray) -> np.ndarray:
        """(rho/e1) dF/dx in closed form."""
        p, q = self.e2, self.e1
        u, s, sg, n, r = self._parts(x)
        g = np.empty(x.shape)
        with np.errstate(over="ignore"):  # +inf far outside, as in values(); _times keeps 0 * inf at 0
            nq1 = n ** (q - 1.0)
            g[..., 2] = s[..., 2] ** (q - 1.0) * sg[..., 2]
        g[..., 0] = _times(nq1, r[..., 0] ** (p - 1.0) * sg[..., 0])
        g[..., 1] = _times(nq1, r[..., 1] ** (p - 1.0) * sg[..., 1])
        return (self.rho * g / self.radii)[..., None, :]

    def hessians(self, x: np.ndarray) -> np.ndarray:
        """(rho/e1) d2F/dx2 in closed form, written with bounded ratios so the axes and the origin are exact."""
        p, q = self.e2, self.e1
        u, s, sg, n, r = self._parts(x)
        rx, ry = r[..., 0], r[..., 1]
        with np.errstate(over="ignore"):  # +inf far outside, as in values(); _times keeps 0 * inf at 0
            nq2 = n ** (q - 2.0)  # 0**0 = 1: the constant Hessian of the ellipsoid case at the z axis
            hzz = (q - 1.0) * s[..., 2] ** (q - 2.0)
        h = np.zeros(x.shape + (3,))
        for i, ri in ((0, rx), (1, ry)):
            h[..., i, i] = _times(nq2, (q - 1.0) * ri ** (2 * p - 2) + (p - 1.0) * (ri ** (p - 2) - ri ** (2 * p - 2)))
        h[..., 0, 1] = h[..., 1, 0] = _times(nq2, (q - p) * (rx * ry) ** (p - 1.0) * sg[..., 0] * sg[..., 1])
        h[..., 2, 2] = hzz
        h *= self.rho / np.multiply.outer(self.radii, self.radii)
        return h[..., None, :, :]

    def evaluate(self, x: np.ndarray, hessians: bool = True):
        """(values, gradients, Hessians or None)."""
        return self.values(x), self.gradients(x), (self.hessians(x) if hessians else None)
