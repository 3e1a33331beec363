"""The inequalities f_i: closed-form gradients and Hessians, signs inside/outside/on the surface, scaling."""

from __future__ import annotations

import numpy as np
import pytest

from core.shapes import parse_shape

from .cases import ALL, BOUNDED, HALFSPACE, ident, random_points


@pytest.mark.parametrize("case", ALL, ids=ident)
def test_gradients_and_hessians_match_central_differences(case):
    s = parse_shape(case, "s")
    x = random_points(s, 40, seed=1)
    h = 1e-6
    num_g = np.empty(x.shape[:1] + (s.m, 3))
    num_h = np.empty(x.shape[:1] + (s.m, 3, 3))
    for k in range(3):
        e = np.zeros(3)
        e[k] = h
        num_g[..., k] = (s.values(x + e) - s.values(x - e)) / (2 * h)
        num_h[..., k] = (s.gradients(x + e) - s.gradients(x - e)) / (2 * h)
    g, hh = s.gradients(x), s.hessians(x)
    # central differences are accurate to ~h^2 f''' + eps f / h; scale the tolerance by the derivative size
    scale_g = 1.0 + np.max(np.abs(g))
    scale_h = 1.0 + np.max(np.abs(hh))
    np.testing.assert_allclose(g, num_g, atol=1e-6 * scale_g)
    np.testing.assert_allclose(hh, num_h, atol=1e-5 * scale_h)
    np.testing.assert_allclose(hh, np.swapaxes(hh, -1, -2), atol=1e-12 * scale_h)
    assert s.values(x).shape == (40, s.m)


@pytest.mark.parametrize("case", [c for c in BOUNDED if c["type"] == "superellipsoid"], ids=ident)
def test_superellipsoid_derivatives_on_axes_and_at_origin_are_finite_and_match(case):
    # points with zero coordinates are where |x|^e and the x-y norm have their only non-smooth-looking terms
    s = parse_shape(case, "s")
    a, b, c = case["radii"]
    pts = np.array([[0, 0, 0], [0.3 * a, 0, 0], [0, 0.4 * b, 0], [0, 0, 0.5 * c], [0, 0, 1.2 * c],
                    [0.5 * a, 0, 0.5 * c], [0, 0.5 * b, -0.3 * c]], dtype=float)
    g, hh = s.gradients(pts), s.hessians(pts)
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(hh))
    assert np.allclose(g[0], 0.0)  # F has its minimum at the origin
    h = 1e-6
    for k in range(3):
        e = np.zeros(3)
        e[k] = h
        fd = (s.gradients(pts + e) - s.gradients(pts - e)) / (2 * h)
        # exponents in (2, 3) make the Hessian only Hoelder continuous at zero coordinates: FD error ~ h^(e-2)
        np.testing.assert_allclose(hh[..., k], fd, atol=2e-2 * (1 + np.max(np.abs(hh))))


@pytest.mark.parametrize("case", BOUNDED, ids=ident)
def test_values_negative_inside_zero_on_surface_positive_outside(case):
    s = parse_shape(case, "s")
    verts, _ = s.mesh(48)
    c = s.interior_point()
    on = s.values(verts).max(axis=-1)
    np.testing.assert_allclose(on, 0.0, atol=1e-9)  # mesh vertices lie on the boundary: the max f_i is zero
    inside = s.values(c + 0.6 * (verts - c)).max(axis=-1)
    outside = s.values(c + 1.4 * (verts - c)).max(axis=-1)
    assert np.all(inside < 0) and np.all(outside > 0)
    assert np.all(s.values(c) < 0)
    assert s.contains(c) and not np.any(s.contains(c + 1.4 * (verts - c)))


def test_halfspace_value_is_the_signed_distance():
    s = parse_shape(HALFSPACE, "s")
    n = np.array(HALFSPACE["normal"]) / 3.0  # |(1, -2, 2)| = 3
    d = HALFSPACE["offset"] / 3.0  # normal·x <= offset  <=>  n·x <= offset/3
    x = random_points(s, 20, seed=3)
    np.testing.assert_allclose(s.values(x)[:, 0], x @ n - d, atol=1e-14)
    assert s.values(s.interior_point())[0] < 0
    verts, _ = s.mesh()
    np.testing.assert_allclose(s.values(verts), 0.0, atol=1e-12)


def test_sphere_inequality_is_the_documented_scaling():
    # (|x|^2 - r^2)/(2r) = (|x| - r)(|x| + r)/(2r) = distance + distance^2/(2r): signed distance to first order
    s = parse_shape({"type": "sphere", "radius": 0.7}, "s")
    x = random_points(s, 30, seed=4)
    r2 = np.sum(x * x, axis=1)
    np.testing.assert_allclose(s.values(x)[:, 0], (r2 - 0.49) / 1.4, rtol=1e-13, atol=1e-15)
    surface = s.support(x)
    np.testing.assert_allclose(np.linalg.norm(s.gradients(surface)[:, 0], axis=1), 1.0, rtol=1e-13)


def test_box_values_are_signed_distances_to_its_faces():
    s = parse_shape({"type": "box", "size": [1.0, 2.0, 0.5]}, "s")
    x = np.array([[0.1, 0.2, 0.05]])
    # faces +x,-x,+y,-y,+z,-z at half sizes (0.5, 1, 0.25)
    expected = [0.1 - 0.5, -0.1 - 0.5, 0.2 - 1.0, -0.2 - 1.0, 0.05 - 0.25, -0.05 - 0.25]
    np.testing.assert_allclose(s.values(x)[0], expected, atol=1e-15)


def test_superellipsoid_with_exponents_two_is_the_ellipsoid_inequality():
    radii = [1.0, 0.8, 0.6]
    sq = parse_shape({"type": "superellipsoid", "radii": radii, "exponents": [2, 2]}, "s")
    el = parse_shape({"type": "ellipsoid", "radii": radii}, "s")
    x = random_points(el, 25, seed=5)
    np.testing.assert_allclose(sq.values(x), el.values(x), atol=1e-14)
    np.testing.assert_allclose(sq.gradients(x), el.gradients(x), atol=1e-14)
    np.testing.assert_allclose(sq.hessians(x), el.hessians(x), atol=1e-13)


@pytest.mark.parametrize("case", [c for c in BOUNDED if c["type"] in ("ellipsoid", "superellipsoid")], ids=ident)
def test_smooth_gradient_satisfies_euler_scaling_on_surface(case):
    # F is homogeneous of degree e1, so x·grad((rho/e1)(F-1)) = rho F = rho on the surface, rho = (abc)^(1/3)
    s = parse_shape(case, "s")
    verts, _ = s.mesh(16)
    rho = np.prod(case["radii"]) ** (1 / 3)
    np.testing.assert_allclose(np.einsum("ij,ij->i", verts, s.gradients(verts)[:, 0]), rho, rtol=1e-9)


def test_cylinder_quadric_is_radial_signed_distance_to_first_order():
    s = parse_shape({"type": "cylinder", "radius": 0.4, "length": 1.5}, "s")
    x = np.array([[0.3, 0.1, 0.2]])
    # (x^2 + y^2 - r^2)/(2r), then z - l/2, -z - l/2
    np.testing.assert_allclose(s.values(x)[0], [(0.09 + 0.01 - 0.16) / 0.8, 0.2 - 0.75, -0.2 - 0.75], atol=1e-15)


def test_single_point_and_batched_shapes():
    s = parse_shape({"type": "cylinder", "radius": 0.4, "length": 1.5}, "s")
    assert s.values(np.zeros(3)).shape == (3,)
    assert s.gradients(np.zeros(3)).shape == (3, 3)
    assert s.hessians(np.zeros((2, 5, 3))).shape == (2, 5, 3, 3, 3)


def test_steep_superellipsoid_far_outside_has_no_nan():
    # |x/a|^e2 with e = 50 overflows at ~1e6 radii; zero factors times an overflowed power must stay 0, not NaN
    s = parse_shape({"type": "superellipsoid", "radii": [1, 1, 1], "exponents": [50, 50]}, "s")
    far = np.array([[1e8, 0.0, 0.0], [0.0, 1e8, 1.0], [1e8, 1e8, 1e8], [0.0, 0.0, -1e8]])
    for out in (s.values(far), s.gradients(far), s.hessians(far)):
        assert not np.any(np.isnan(out))
    assert np.all(s.values(far) > 0)
    # the gradient direction far out along +y is still +y (the x-y norm is computed without overflow)
    g = s.gradients(np.array([0.0, 1e8, 0.0]))[0]
    assert g[1] > 0 and g[0] == 0 and g[2] == 0


@pytest.mark.parametrize("case", ALL, ids=ident)
def test_evaluate_returns_values_gradients_and_hessians_in_one_call(case):
    # the contact step's one-call form must be exactly the three separate evaluations (same formulas), batched or not
    s = parse_shape(case, "s")
    x = random_points(s, 7, seed=3)
    for pts in (x, x[0]):
        f, g, hh = s.evaluate(pts)
        np.testing.assert_array_equal(f, s.values(pts))
        np.testing.assert_array_equal(g, s.gradients(pts))
        np.testing.assert_array_equal(hh, s.hessians(pts))
        f2, g2, none = s.evaluate(pts, hessians=False)
        assert none is None
        np.testing.assert_array_equal(f2, f)
        np.testing.assert_array_equal(g2, g)


@pytest.mark.parametrize("case", ALL, ids=ident)
def test_compiled_rows_agree_with_the_inequalities(case):
    """The contact step's compiled evaluation of a shape's rows (core.contact.kernels.shape_rows, from Shape.rows)
    gives the values, gradients and Hessians of the numpy inequalities: at random points, on the axes and at the
    origin (where the superellipsoid's powers have their zero factors), and far outside (overflowed powers)."""
    from core.contact.kernels import shape_rows

    s = parse_shape(case, "s")
    x = np.concatenate((random_points(s, 40, seed=3), [[0.0, 0.0, 0.0], [0.3, 0.0, 0.0], [0.0, -0.4, 0.0],
                                                         [0.0, 0.0, 0.5], [1e3, 2e3, -1e3]]))
    kinds, params = (np.repeat(a[None], len(x), axis=0) for a in s.rows)
    F, G, H = shape_rows(kinds, params, x, True)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        want = s.values(x), s.gradients(x), s.hessians(x)
    for got, ref in zip((F, G, H), want):
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
    F2, G2, H2 = shape_rows(kinds, params, x, False)  # values and gradients only: the same, and no Hessians
    np.testing.assert_array_equal(F2, F)
    np.testing.assert_array_equal(G2, G)
    assert H2.size == 0
