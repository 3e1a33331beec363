"""The shape types of format v1, one row (class) each, and the registry SHAPE_TYPES."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import beta as B
from scipy.special import gamma as G

from core.errors import LinkwrightError

from . import validate as v
from .base import Param, Shape, unit_directions
from .inequalities import Planes, Quadric, Superquadric
from .meshing import cylinder_mesh, plane_patch, superquadric_mesh
from .polyhedra import hull_of_planes, hull_of_points, polyhedron_mass, triangle_mesh

__all__ = [
    "Halfspace", "Sphere", "Ellipsoid", "Superellipsoid", "Box", "Cylinder", "Disc", "Polytope",
    "SHAPE_TYPES", "HALFSPACE_PATCH_SIZE",
]

HALFSPACE_PATCH_SIZE = 20.0  # m, side of the square drawn for a halfspace's boundary plane
# of a shape's bounding radius: hull vertices whose d.x is within this of the largest are one face (_PlaneBody.face)
_FACE_TIE = 1e-9
_RIM = 8  # the points of a cylinder's cap that stand for it as a face (Cylinder.face: a resting cap's patch)
_RIM_ANGLES = np.linspace(0.0, 2.0 * math.pi, _RIM, endpoint=False)
_RIM_COS, _RIM_SIN = np.cos(_RIM_ANGLES), np.sin(_RIM_ANGLES)


class Halfspace(Shape):
    """The solid {x : normal·x <= offset}; stored with the normal and offset divided by |normal|."""

    type = "halfspace"
    PARAMS = (Param("normal", v.nonzero_vector), Param("offset", v.number, default=0.0))
    bounded = False
    flat_faces = True

    def _build(self, normal: list, offset: float) -> None:
        n = np.array(normal, dtype=float)
        big = float(np.max(np.abs(n)))
        length = big * float(np.linalg.norm(n / big))  # scaled first: tiny normals must not underflow to 0
        self.normal = n / big / (length / big)  # unit outward normal
        self.offset = offset / length  # signed distance of the boundary plane from the origin along normal
        if not abs(self.offset) <= v.shared.MAX_COORDINATE:
            raise LinkwrightError(f"{self._location}.offset", f"the plane is {abs(self.offset):.3g} m from the origin "
                                                             f"(offset / |normal|); the limit is {v.shared.MAX_COORDINATE:g} m")
        self._groups = [Planes(self.normal[None], [self.offset])]
        self.volume = math.inf
        self.bounding_radius = math.inf
        self.inner_radius = math.inf
        self.com = self.offset * self.normal  # not a centroid: the boundary point nearest the origin
        self._cov = np.diag([math.inf] * 3)

    def inertia(self, mass: float) -> np.ndarray:
        """Unbounded: infinite on the diagonal (only static bodies may use a halfspace)."""
        return np.diag([math.inf] * 3)

    def interior_point(self) -> np.ndarray:
        """The point one metre below the boundary plane."""
        return self.com - self.normal

    def mesh(self, resolution: int = 24) -> tuple[np.ndarray, np.ndarray]:
        """A HALFSPACE_PATCH_SIZE square of the boundary plane around the point nearest the origin."""
        return plane_patch(self.normal, self.com, HALFSPACE_PATCH_SIZE)

    def support(self, d: np.ndarray) -> np.ndarray:
        """A boundary point for d along the normal; otherwise infinite along the unbounded part of d."""
        d = unit_directions(d)
        along = d @ self.normal
        tangential = d - along[..., None] * self.normal
        # off the normal, the farthest point is at infinity: report it as +-inf in the components that grow
        escape = np.where((along > 0.0)[..., None], tangential, d)
        far = np.where(np.abs(escape) > 1e-12, np.copysign(math.inf, escape), self.com)
        bounded = np.linalg.norm(tangential, axis=-1) <= 1e-12
        return np.where((bounded & (along > 0.0))[..., None], self.com, far)


class Superellipsoid(Shape):
    """(|x/a|^e2 + |y/b|^e2)^(e1/e2) + |z/c|^e1 <= 1, written as (rho/e1)(F - 1) <= 0 with rho = (abc)^(1/3)."""

    type = "superellipsoid"
    PARAMS = (Param("radii", v.positive_vector), Param("exponents", v.exponents))

    def _build(self, radii: list, exponents: list = (2.0, 2.0)) -> None:
        self.radii = np.array(radii)
        self.e1, self.e2 = (float(e) for e in exponents)
        # geometric mean radius; exactly r for equal radii so the sphere is exactly (|x|^2 - r^2)/(2r)
        rho = float(self.radii[0]) if np.all(self.radii == self.radii[0]) else float(np.prod(self.radii) ** (1 / 3))
        self._groups = [self._inequality(rho)]
        self.volume, self._cov = _superquadric_moments(self.radii, self.e1, self.e2)
        self.com = np.zeros(3)
        self.bounding_radius = _superquadric_radius(self.radii, self.e1, self.e2)
        # (exponents >= 2: the shape contains the ellipsoid of its radii, which contains the ball of the least one)
        self.inner_radius = float(np.min(self.radii))

    def _inequality(self, rho: float):
        return Superquadric(self.radii, self.e1, self.e2, rho)

    def mesh(self, resolution: int = 24) -> tuple[np.ndarray, np.ndarray]:
        """Latitude-longitude mesh in Barr's parametrisation."""
        return superquadric_mesh(self.radii, self.e1, self.e2, resolution)

    def support(self, d: np.ndarray) -> np.ndarray:
        """Closed form: the maximiser of d·x over a nested l_p ball, from the dual (conjugate-exponent) norm."""
        d = unit_directions(d) * self.radii  # d·x = (D d)·x' with x' in the unit ball
        a = np.abs(d)
        p, q = self.e2, self.e1
        ps, qs = p / (p - 1), q / (q - 1)  # conjugate exponents
        beta = (a[..., 0] ** ps + a[..., 1] ** ps) ** (1 / ps)  # dual norm of the x-y part
        h = (beta**qs + a[..., 2] ** qs) ** (1 / qs)  # dual norm of the whole (> 0: d is non-zero)
        t = (beta / h) ** (qs - 1)  # e2-norm of the maximiser's x-y part
        safe = np.where(beta > 0, beta, 1.0)[..., None]
        xy = t[..., None] * np.where(beta[..., None] > 0, (a[..., :2] / safe) ** (ps - 1), 0.0)
        z = (a[..., 2] / h) ** (qs - 1)
        x = np.concatenate([xy, z[..., None]], axis=-1) * np.sign(d)
        return x * self.radii


class Ellipsoid(Superellipsoid):
    """(x/a)^2 + (y/b)^2 + (z/c)^2 <= 1 as (rho/2)(sum (x_i/a_i)^2 - 1) <= 0, rho = (abc)^(1/3): e1 = e2 = 2."""

    type = "ellipsoid"
    PARAMS = (Param("radii", v.positive_vector),)

    def _inequality(self, rho: float):
        return Quadric(1.0 / self.radii**2, rho)  # the superquadric with e = 2, evaluated without powers


class Sphere(Ellipsoid):
    """|x|^2 <= r^2 as (|x|^2 - r^2)/(2r) <= 0: the ellipsoid with equal radii."""

    type = "sphere"
    PARAMS = (Param("radius", v.positive),)

    def _build(self, radius: float) -> None:
        super()._build([radius] * 3)
        self.radius = radius


class _PlaneBody(Shape):
    """Shapes that are intersections of planes only: mesh and support come from the hull vertices."""

    flat_faces = True

    _verts: np.ndarray  # hull vertices
    _tris: np.ndarray  # outward triangles of the hull

    def _finish_planes(self, normals: np.ndarray, offsets: np.ndarray) -> None:
        self._groups = [Planes(normals, offsets)]
        self.bounding_radius = float(np.max(np.linalg.norm(self._verts, axis=1)))

    def mesh(self, resolution: int = 24) -> tuple[np.ndarray, np.ndarray]:
        """The hull's triangles, each with its own vertices (flat shading)."""
        return triangle_mesh(self._verts, self._tris)

    def support(self, d: np.ndarray) -> np.ndarray:
        """The hull vertex maximising d·x (exact: a linear programme attains its optimum at a vertex)."""
        d = unit_directions(d)
        return self._verts[np.argmax(d @ self._verts.T, axis=-1)]

    def corners(self, d: np.ndarray) -> np.ndarray:
        """The hull vertices (k, 3), whatever d."""
        return self._verts

    def face(self, d: np.ndarray) -> np.ndarray:
        """The hull vertices (k, 3) farthest along one unit direction d (3,): those whose d.x is within _FACE_TIE of the
        bounding radius of the largest, the face, edge or vertex of the hull that d points out of (k >= 3, 2, 1)."""
        vals = self._verts @ d
        return self._verts[vals >= vals.max() - _FACE_TIE * float(self.bounding_radius)]


class Box(_PlaneBody):
    """|x| <= sx/2, |y| <= sy/2, |z| <= sz/2: six planes (+x, -x, +y, -y, +z, -z), exact signed distances."""

    type = "box"
    PARAMS = (Param("size", v.positive_vector),)

    def _build(self, size: list) -> None:
        self.size = np.array(size)
        half = self.size / 2
        normals = np.repeat(np.eye(3), 2, axis=0) * np.tile([1.0, -1.0], 3)[:, None]
        corners = np.array([[i, j, k] for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)], dtype=float) * half
        self._verts, self._tris, _, _ = hull_of_points(corners, self._location, flat_check=False)
        self._finish_planes(normals, np.repeat(half, 2))
        self.inner_radius = float(np.min(half))
        self.volume = float(np.prod(self.size))
        self._cov = np.diag(self.size**2 / 12.0)  # per axis: (1/s) ∫ x^2 dx over [-s/2, s/2] = s^2/12
        self.com = np.zeros(3)

    def support(self, d: np.ndarray) -> np.ndarray:
        """Closed form: sign(d) * size/2 (a face or edge midpoint where d has zero components)."""
        return np.sign(unit_directions(d)) * self.size / 2


class Polytope(_PlaneBody):
    """{x : n_i·x <= d_i} from "planes" (rows divided by |n_i|) or the convex hull of "vertices"."""

    type = "polytope"
    PARAMS = (Param("planes", v.plane_rows, default=None, rows=True),
              Param("vertices", v.point_rows, default=None, rows=True))
    ONE_OF = ("planes", "vertices")

    def _build(self, planes: list | None = None, vertices: list | None = None) -> None:
        if planes is not None:
            rows = np.array(planes, dtype=float)
            big = np.max(np.abs(rows[:, :3]), axis=1)
            length = big * np.linalg.norm(rows[:, :3] / big[:, None], axis=1)  # scaled: no underflow
            normals, offsets = rows[:, :3] / length[:, None], rows[:, 3] / length
            far = np.flatnonzero(~(np.abs(offsets) <= v.shared.MAX_COORDINATE))
            if far.size:
                raise LinkwrightError(f"{self._location}.planes[{far[0]}]", "the plane is farther than "
                                      f"{v.shared.MAX_COORDINATE:g} m from the origin (d / |n|)")
            self._verts, self._tris = hull_of_planes(normals, offsets, f"{self._location}.planes")
        else:
            self._verts, self._tris, normals, offsets = hull_of_points(np.array(vertices), f"{self._location}.vertices")
        self._finish_planes(normals, offsets)
        self.volume, self.com, self._cov = polyhedron_mass(self._verts, self._tris)
        self.inner_radius = float(np.min(offsets - normals @ self.com))  # (the ball about the centroid; unit normals)


class Cylinder(Shape):
    """x^2 + y^2 <= r^2 as (x^2 + y^2 - r^2)/(2r) <= 0, then z <= l/2 and -z <= l/2 (axis along body z)."""

    type = "cylinder"
    PARAMS = (Param("radius", v.positive), Param("length", v.positive))
    flat_faces = True  # (its caps)

    def _build(self, radius: float, length: float) -> None:
        v.proportioned([radius, length], self._location)
        self.radius, self.length = radius, length
        r, h = radius, length / 2
        self._groups = [
            Quadric([1 / r**2, 1 / r**2, 0.0], r),
            Planes([[0, 0, 1.0], [0, 0, -1.0]], [h, h]),
        ]
        self.volume = math.pi * r**2 * length
        # disc: (1/(pi r^2)) ∫ x^2 dA = r^2/4; along z as for the box: l^2/12
        self._cov = np.diag([r**2 / 4, r**2 / 4, length**2 / 12])
        self.com = np.zeros(3)
        self.bounding_radius = math.hypot(r, h)
        self.inner_radius = min(r, h)
        self._rims = np.vstack([np.column_stack((r * _RIM_COS, r * _RIM_SIN, np.full(_RIM, z))) for z in (h, -h)])

    def mesh(self, resolution: int = 24) -> tuple[np.ndarray, np.ndarray]:
        """Side band and two fan caps."""
        return cylinder_mesh(self.radius, self.length, resolution)

    def corners(self, d: np.ndarray) -> np.ndarray:
        """_RIM points of each cap's rim (2 _RIM, 3), evenly spaced from the rim's point farthest along d (a rolling
        cylinder's line of contact is two of them, one on each rim; a cap facing d: the points of Cylinder.face)."""
        rxy = math.hypot(d[0], d[1])
        c, s = (d[0] / rxy, d[1] / rxy) if rxy > 0.0 else (1.0, 0.0)  # (the first point's angle)
        # (the rims' points from angle 0, _rims, turned by the angle about z)
        return self._rims @ np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])

    def face(self, d: np.ndarray) -> np.ndarray | None:
        """The cap that the unit direction d points out of, as _RIM points of its rim (their mean is its centre), when
        the rim's points are tied along d to _FACE_TIE of the bounding radius (r |d_xy| within it: a cap resting on a
        plane); None otherwise (an edge point or the curved side)."""
        d = np.asarray(d, float)
        if d[2] == 0.0 or self.radius * math.hypot(d[0], d[1]) > _FACE_TIE * self.bounding_radius:
            return None
        a = np.linspace(0.0, 2.0 * math.pi, _RIM, endpoint=False)
        return np.column_stack((self.radius * np.cos(a), self.radius * np.sin(a),
                                np.full(_RIM, math.copysign(self.length / 2, d[2]))))

    def support(self, d: np.ndarray) -> np.ndarray:
        """Closed form: r d_xy/|d_xy| on the rim plane picked by sign(d_z)."""
        d = unit_directions(d)
        rxy = np.linalg.norm(d[..., :2], axis=-1, keepdims=True)
        xy = self.radius * d[..., :2] / np.where(rxy > 0, rxy, 1.0)  # 0 when d is along the axis: cap centre
        return np.concatenate([xy, np.sign(d[..., 2:]) * self.length / 2], axis=-1)


class Disc(Cylinder):
    """A cylinder written with "thickness" for its length (same geometry, same definition)."""

    type = "disc"
    PARAMS = (Param("radius", v.positive), Param("thickness", v.positive, name="length"))


SHAPE_TYPES: dict[str, type[Shape]] = {
    cls.type: cls for cls in (Halfspace, Sphere, Ellipsoid, Superellipsoid, Box, Cylinder, Disc, Polytope)
}


def _superquadric_moments(radii: np.ndarray, e1: float, e2: float) -> tuple[float, np.ndarray]:
    """Exact volume and covariance per unit volume of the superellipsoid, by Gamma/Beta functions.

    With w = (x/a, y/b) and N its e2-norm, slicing at height z' = z/c leaves the e2-disc N <= R,
    R = (1 - |z'|^e1)^(1/e1); a degree-k homogeneous integrand over it is R^(k+2) times its
    integral over the unit e2-disc (Dirichlet: 4 Γ((j+1)/p) Γ((l+1)/p) / (p^2 Γ(1 + (j+l+2)/p)) for
    |u|^j |v|^l), and ∫_{-1}^{1} |z|^m (1 - |z|^q)^s dz = (2/q) B((m+1)/q, s+1).
    Equivalent to the Beta-function formulas of Jaklič, Leonardis & Solina (2000).
    """
    a, b, c = radii
    p, q = e2, e1
    m0 = 4 * G(1 / p) ** 2 / (p**2 * G(1 + 2 / p))  # ∫ 1 over the unit e2-disc
    m2 = 4 * G(3 / p) * G(1 / p) / (p**2 * G(1 + 4 / p))  # ∫ u^2 over it
    z0 = (2 / q) * B(1 / q, 2 / q + 1)  # slices weighted by R^2
    zx = (2 / q) * B(1 / q, 4 / q + 1)  # slices weighted by R^4 (for the u^2 integrand)
    zz = (2 / q) * B(3 / q, 2 / q + 1)  # z'^2 slices weighted by R^2
    unit_volume = m0 * z0
    volume = float(a * b * c * unit_volume)
    cov = np.diag([a**2 * m2 * zx, b**2 * m2 * zx, c**2 * m0 * zz]) / unit_volume
    return volume, cov


def _superquadric_radius(radii: np.ndarray, e1: float, e2: float) -> float:
    """Largest |x| on the surface, by a zooming grid over Barr's parametrisation of one octant (done once)."""
    if e1 == 2.0 and e2 == 2.0:
        return float(np.max(radii))
    lo, hi = np.zeros(2), np.full(2, np.pi / 2)
    best = 0.0
    for _ in range(6):
        eta = np.linspace(lo[0], hi[0], 41)[:, None]
        om = np.linspace(lo[1], hi[1], 41)[None, :]
        ce, se = np.cos(eta) ** (2 / e1), np.abs(np.sin(eta)) ** (2 / e1)
        r2 = ((radii[0] * ce * np.cos(om) ** (2 / e2)) ** 2 + (radii[1] * ce * np.abs(np.sin(om)) ** (2 / e2)) ** 2
              + (radii[2] * se) ** 2)
        i, j = np.unravel_index(np.argmax(r2), r2.shape)
        best = max(best, float(r2[i, j]))
        step = (hi - lo) / 40
        centre = np.array([eta[i, 0], om[0, j]])
        lo, hi = np.maximum(centre - 2 * step, 0.0), np.minimum(centre + 2 * step, np.pi / 2)
    # the grid maximum is a lower bound; pad it, but never beyond the certain bound of the enclosing box
    return float(min(math.sqrt(best) * (1 + 1e-6), np.linalg.norm(radii)))
