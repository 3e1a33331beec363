"""Volumes, centroids and inertia tensors against textbook formulas and independent integrations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate
from scipy.special import gamma

from core.errors import LinkwrightError
from core.shapes import mass_properties, parse_shape

M = 2.5  # kg, the mass used throughout


def inertia_of(case: dict) -> tuple[float, np.ndarray, np.ndarray]:
    s = parse_shape(case, "s")
    return s.volume, s.com, s.inertia(M)


def test_sphere():
    r = 0.7
    vol, com, inertia = inertia_of({"type": "sphere", "radius": r})
    assert vol == pytest.approx(4 / 3 * math.pi * r**3, rel=1e-14)
    np.testing.assert_allclose(com, 0.0)
    np.testing.assert_allclose(inertia, 2 / 5 * M * r**2 * np.eye(3), rtol=1e-14)  # solid sphere: 2/5 m r^2


def test_ellipsoid():
    a, b, c = 0.5, 1.0, 1.5
    vol, _, inertia = inertia_of({"type": "ellipsoid", "radii": [a, b, c]})
    assert vol == pytest.approx(4 / 3 * math.pi * a * b * c, rel=1e-14)
    # solid ellipsoid: I_xx = m (b^2 + c^2)/5 and cyclic
    np.testing.assert_allclose(inertia, M / 5 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b]), rtol=1e-14)


def test_box():
    x, y, z = 1.0, 2.0, 0.5
    vol, _, inertia = inertia_of({"type": "box", "size": [x, y, z]})
    assert vol == pytest.approx(x * y * z)
    # cuboid: I_xx = m (y^2 + z^2)/12 and cyclic
    np.testing.assert_allclose(inertia, M / 12 * np.diag([y * y + z * z, x * x + z * z, x * x + y * y]), rtol=1e-14)


@pytest.mark.parametrize("kind,key", [("cylinder", "length"), ("disc", "thickness")])
def test_cylinder_and_disc(kind, key):
    r, l = 0.4, 1.5
    vol, _, inertia = inertia_of({"type": kind, "radius": r, key: l})
    assert vol == pytest.approx(math.pi * r * r * l, rel=1e-14)
    # solid cylinder about its axis m r^2/2; about a diameter through the centre m (3 r^2 + l^2)/12
    side = M * (3 * r * r + l * l) / 12
    np.testing.assert_allclose(inertia, np.diag([side, side, M * r * r / 2]), rtol=1e-14)


def test_polytope_cube_equals_box():
    # a 1 x 2 x 0.5 box written as 8 vertices (shifted by c) and as 6 planes
    c = np.array([0.3, -0.2, 0.1])
    corners = [list(np.array([i * 0.5, j * 1.0, k * 0.25]) + c) for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)]
    box = parse_shape({"type": "box", "size": [1.0, 2.0, 0.5]}, "s")
    planes = [[1, 0, 0, 0.5], [-1, 0, 0, 0.5], [0, 2, 0, 2.0], [0, -1, 0, 1.0], [0, 0, 1, 0.25], [0, 0, -1, 0.25]]
    for shape in (parse_shape({"type": "polytope", "vertices": corners}, "s"),
                  parse_shape({"type": "polytope", "planes": planes}, "s")):
        assert shape.volume == pytest.approx(box.volume, rel=1e-12)
        np.testing.assert_allclose(shape.inertia(M), box.inertia(M), rtol=1e-12, atol=1e-14)
        assert shape.m == 6  # qhull's two triangles per face are merged into one plane
    np.testing.assert_allclose(parse_shape({"type": "polytope", "vertices": corners}, "s").com, c, atol=1e-14)


def test_polytope_tetrahedron():
    # T = {x, y, z >= 0, x + y + z <= 1}: Dirichlet integrals ∫ x^(a-1) y^(b-1) z^(c-1) = Γ(a)Γ(b)Γ(c)/Γ(a+b+c+1)
    # volume 1/6; ∫x = 1/24 -> com 1/4; ∫x^2 = 2/120 = 1/60; ∫xy = 1/120
    # per unit mass about the origin: <x^2> = 6/60 = 1/10, <xy> = 6/120 = 1/20;
    # about the com: <x^2> - 1/16 = 3/80, <xy> - 1/16 = -1/80
    # I_xx = m (<y^2> + <z^2>) = 6m/80 = 3m/40, I_xy = -m <xy> = m/80
    s = parse_shape({"type": "polytope", "vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]}, "s")
    assert s.volume == pytest.approx(1 / 6, rel=1e-14)
    np.testing.assert_allclose(s.com, [0.25] * 3, rtol=1e-14)
    expected = M * (np.full((3, 3), 1 / 80) + np.eye(3) * (3 / 40 - 1 / 80))
    np.testing.assert_allclose(s.inertia(M), expected, rtol=1e-13)
    # the same solid given by its four planes
    p = parse_shape({"type": "polytope", "planes": [[-1, 0, 0, 0], [0, -1, 0, 0], [0, 0, -1, 0], [1, 1, 1, 1]]}, "s")
    np.testing.assert_allclose(p.inertia(M), expected, rtol=1e-12)
    assert p.volume == pytest.approx(1 / 6, rel=1e-12)


def test_polytope_interior_vertices_do_not_change_the_solid():
    pts = [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0.1, 0.1, 0.1], [0.2, 0.2, 0.2]]
    s = parse_shape({"type": "polytope", "vertices": pts}, "s")
    assert s.volume == pytest.approx(1 / 6, rel=1e-14) and s.m == 4


def test_superellipsoid_with_equal_exponents_matches_the_lp_ball():
    # e1 = e2 = p gives |x/a|^p + |y/b|^p + |z/c|^p <= 1; the unit l_p ball (Dirichlet):
    # volume (2 Γ(1+1/p))^3 / Γ(1+3/p) and ∫ x^2 = 8 Γ(3/p) Γ(1/p)^2 / (p^3 Γ(1+5/p))
    a, b, c, p = 1.0, 2.0, 0.5, 4.0
    s = parse_shape({"type": "superellipsoid", "radii": [a, b, c], "exponents": [p, p]}, "s")
    unit_v = (2 * gamma(1 + 1 / p)) ** 3 / gamma(1 + 3 / p)
    unit_x2 = 8 * gamma(3 / p) * gamma(1 / p) ** 2 / (p**3 * gamma(1 + 5 / p))
    assert s.volume == pytest.approx(a * b * c * unit_v, rel=1e-12)
    mean_sq = np.array([a * a, b * b, c * c]) * unit_x2 / unit_v  # <x_i^2> per unit mass
    expected = M * np.diag([mean_sq[1] + mean_sq[2], mean_sq[0] + mean_sq[2], mean_sq[0] + mean_sq[1]])
    np.testing.assert_allclose(s.inertia(M), expected, rtol=1e-12)


@pytest.mark.parametrize("e1,e2", [(4.0, 3.0), (2.5, 6.0), (8.0, 2.0)])
def test_superellipsoid_matches_numerical_integration(e1, e2):
    # independent route: integrate the height z_max(x, y) = c (1 - N^e1)^(1/e1), N = (|x/a|^e2 + |y/b|^e2)^(1/e2),
    # over the quarter x-y region (8 octants by symmetry): V = 8∫∫ z_max, ∫x^2 dV = 8∫∫ x^2 z_max, ∫z^2 dV = 8∫∫ z_max^3/3
    a, b, c = 1.2, 0.5, 0.8
    s = parse_shape({"type": "superellipsoid", "radii": [a, b, c], "exponents": [e1, e2]}, "s")

    def zmax(y, x):
        n = ((x / a) ** e2 + (y / b) ** e2) ** (1 / e2)
        return c * max(0.0, 1 - n**e1) ** (1 / e1)

    ytop = lambda x: b * max(0.0, 1 - (x / a) ** e2) ** (1 / e2)  # noqa: E731
    quad = lambda f: 8 * integrate.dblquad(f, 0, a, 0, ytop, epsabs=1e-11, epsrel=1e-10)[0]  # noqa: E731
    vol = quad(zmax)
    sx = quad(lambda y, x: x * x * zmax(y, x))
    sy = quad(lambda y, x: y * y * zmax(y, x))
    sz = quad(lambda y, x: zmax(y, x) ** 3 / 3)
    assert s.volume == pytest.approx(vol, rel=1e-7)
    expected = M / vol * np.diag([sy + sz, sx + sz, sx + sy])
    np.testing.assert_allclose(s.inertia(M), expected, rtol=1e-6)


def test_superellipsoid_approaches_box_and_cylinder_limits():
    # as both exponents grow the solid fills the box [-a,a]x[-b,b]x[-c,c]; with e2 = 2 and e1 large, the cylinder
    big = parse_shape({"type": "superellipsoid", "radii": [1, 2, 3], "exponents": [50, 50]}, "s")
    assert big.volume == pytest.approx(8 * 6, rel=0.05) and big.volume < 48
    cyl = parse_shape({"type": "superellipsoid", "radii": [1, 1, 1], "exponents": [50, 2]}, "s")
    assert cyl.volume == pytest.approx(2 * math.pi, rel=0.03) and cyl.volume < 2 * math.pi


def test_mass_properties_from_mass_or_density():
    s = parse_shape({"type": "box", "size": [1.0, 2.0, 0.5]}, "s")
    m, com, inertia = mass_properties(s, None, 1000.0)
    assert m == pytest.approx(1000.0)  # 1 m^3 of density 1000
    np.testing.assert_allclose(inertia, s.inertia(1000.0))
    m2, _, _ = mass_properties(s, 3.0, None)
    assert m2 == 3.0 and com.shape == (3,)


@pytest.mark.parametrize("mass,density,loc,msg", [
    (None, None, "bodies[1]", "needs a mass or a density"),
    (1.0, 2.0, "bodies[1]", "give exactly one of mass and density"),
    (-1.0, None, "bodies[1].mass", "must be a positive number, got -1.0"),
    (None, float("nan"), "bodies[1].density", "must be a positive number, got NaN"),
])
def test_mass_properties_errors(mass, density, loc, msg):
    s = parse_shape({"type": "sphere", "radius": 1}, "s")
    with pytest.raises(LinkwrightError) as err:
        mass_properties(s, mass, density, location="bodies[1]")
    assert (err.value.location, err.value.message) == (loc, msg)


def test_halfspace_has_no_mass_properties():
    s = parse_shape({"type": "halfspace", "normal": [0, 0, 1]}, "s")
    with pytest.raises(LinkwrightError, match="unbounded"):
        mass_properties(s, 1.0, None, location="bodies[0]")
    assert math.isinf(s.volume) and math.isinf(s.bounding_radius)
    assert not np.any(np.isnan(s.inertia(1.0)))
