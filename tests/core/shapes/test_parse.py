"""parse_shape: every located error message, the registry, aliases and the lossless to_dict round trip."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.errors import LinkwrightError
from core.shapes import SHAPE_TYPES, Cylinder, Disc, Shape, Sphere, parse_shape

from .cases import ALL, ident

KNOWN = "box, cylinder, disc, ellipsoid, halfspace, polytope, sphere, superellipsoid"
NAN = float("nan")
BOX_PLANES_YZ = [[0, 1, 0, 1], [0, -1, 0, 1], [0, 0, 1, 1], [0, 0, -1, 1]]

ERRORS = [
    # (shape object, location, message)
    ([1, 2], "b.shape", f'must be an object with a "type" (one of: {KNOWN}), got [1, 2]'),
    ({"radius": 1}, "b.shape.type", f"is missing (one of: {KNOWN})"),
    ({"type": "cube"}, "b.shape.type", f'unknown shape type "cube" (known types: {KNOWN})'),
    ({"type": 3}, "b.shape.type", f"unknown shape type 3 (known types: {KNOWN})"),
    ({"type": "sphere", "radus": 1}, "b.shape.radus", "is not a sphere key (a sphere has: radius)"),
    ({"type": "sphere"}, "b.shape.radius", "is missing (a sphere needs it)"),
    ({"type": "sphere", "radius": -1}, "b.shape.radius", "must be a positive number, got -1"),
    ({"type": "sphere", "radius": 0}, "b.shape.radius", "must be a positive number, got 0"),
    ({"type": "sphere", "radius": "1"}, "b.shape.radius", 'must be a positive number, got "1"'),
    ({"type": "sphere", "radius": True}, "b.shape.radius", "must be a positive number, got true"),
    ({"type": "sphere", "radius": None}, "b.shape.radius", "must be a positive number, got null"),
    ({"type": "sphere", "radius": NAN}, "b.shape.radius", "must be a finite number, got NaN"),
    ({"type": "sphere", "radius": float("inf")}, "b.shape.radius",
     "must be a finite number, got Infinity"),
    ({"type": "ellipsoid", "radii": [1, 2]}, "b.shape.radii", "must be a list of 3 positive numbers, got [1, 2]"),
    ({"type": "ellipsoid", "radii": 1}, "b.shape.radii", "must be a list of 3 positive numbers, got 1"),
    ({"type": "ellipsoid", "radii": [1, -2, 3]}, "b.shape.radii[1]", "must be a positive number, got -2"),
    ({"type": "box", "size": [1, 2, False]}, "b.shape.size[2]", "must be a positive number, got false"),
    ({"type": "cylinder", "radius": 1}, "b.shape.length", "is missing (a cylinder needs it)"),
    ({"type": "disc", "radius": 1, "length": 0.1}, "b.shape.length",
     "is not a disc key (a disc has: radius, thickness)"),
    ({"type": "disc", "radius": 1, "thickness": -0.1}, "b.shape.thickness", "must be a positive number, got -0.1"),
    ({"type": "halfspace", "normal": [0, 0, 0]}, "b.shape.normal",
     "must not be the zero vector (it gives the direction)"),
    ({"type": "halfspace", "normal": [True, 0, 1]}, "b.shape.normal[0]", "must be a number, got true"),
    ({"type": "halfspace", "normal": [0, 0, 1], "offset": NAN}, "b.shape.offset",
     "must be a finite number, got NaN"),
    ({"type": "superellipsoid", "radii": [1, 1, 1], "exponents": [1.5, 2]}, "b.shape.exponents[0]",
     "must be between 2 and 50 (smaller is not convex and smooth, larger overflows), got 1.5"),
    ({"type": "superellipsoid", "radii": [1, 1, 1], "exponents": [3, 51]}, "b.shape.exponents[1]",
     "must be between 2 and 50 (smaller is not convex and smooth, larger overflows), got 51"),
    ({"type": "superellipsoid", "radii": [1, 1, 1], "exponents": [2, 4]}, "b.shape.exponents[0]",
     "must be above 2 when e2 = 4 is not 2 (e1 = 2 with e2 > 2 is not twice differentiable at the poles)"),
    ({"type": "superellipsoid", "radii": [1, 1, 1], "exponents": [3]}, "b.shape.exponents",
     "must be a list of 2 numbers [e1, e2], got [3]"),
    ({"type": "superellipsoid", "radii": [1, 1, 1]}, "b.shape.exponents", "is missing (a superellipsoid needs it)"),
    ({"type": "polytope"}, "b.shape", "a polytope needs exactly one of 'planes' or 'vertices', got 0"),
    ({"type": "polytope", "planes": [[1, 0, 0, 1]] * 4, "vertices": [[0, 0, 0]] * 4}, "b.shape",
     "a polytope needs exactly one of 'planes' or 'vertices', got 2"),
    ({"type": "polytope", "planes": "cube"}, "b.shape.planes",
     'must be a list of planes [nx, ny, nz, d], got "cube"'),
    ({"type": "polytope", "planes": [[1, 0, 0, 1]] * 3}, "b.shape.planes",
     "needs at least 4 planes to enclose a volume, got 3"),
    ({"type": "polytope", "planes": [[1, 0, 0, 1]] * 3 + [[1, 0, 0]]}, "b.shape.planes[3]",
     "must be a list of 4 numbers, got [1, 0, 0]"),
    ({"type": "polytope", "planes": [[1, 0, 0, 1], [0, 0, 0, 1]] * 2}, "b.shape.planes[1]",
     "has a zero normal [nx, ny, nz]"),
    ({"type": "polytope", "planes": [[1, 0, 0, 1], [-1, 0, 0, 1], [0, 1, 0, 1], [0, -1, 0, 1]]}, "b.shape.planes",
     "the planes do not enclose a bounded region (the polytope is unbounded)"),
    ({"type": "polytope", "planes": [[1, 0, 0, -1], [-1, 0, 0, -1]] + BOX_PLANES_YZ}, "b.shape.planes",
     "no point satisfies all the planes, so the polytope is empty"),
    ({"type": "polytope", "planes": [[1, 0, 0, 0], [-1, 0, 0, 0]] + BOX_PLANES_YZ}, "b.shape.planes",
     "the planes enclose no volume (the polytope is flat)"),
    ({"type": "polytope", "vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0]]}, "b.shape.vertices",
     "needs at least 4 vertices to enclose a volume, got 3"),
    ({"type": "polytope", "vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [2, 3, 0]]}, "b.shape.vertices",
     "the vertices are coplanar or coincident, so the polytope has no volume"),
    ({"type": "polytope", "vertices": [[1, 1, 1]] * 4}, "b.shape.vertices",
     "the vertices are coplanar or coincident, so the polytope has no volume"),
    ({"type": "polytope", "vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1e-13]]}, "b.shape.vertices",
     "the vertices are (nearly) coplanar, so the polytope has no volume"),
    ({"type": "polytope", "vertices": [[0, 0, 0], [1, 0], [0, 1, 0], [0, 0, 1]]}, "b.shape.vertices[1]",
     "must be a list of 3 numbers, got [1, 0]"),
    ({"type": "polytope", "vertices": [[0, 0, 0], [1, 0, 0], [0, NAN, 0], [0, 0, 1]]}, "b.shape.vertices[2][1]",
     "must be a finite number, got NaN"),
]


@pytest.mark.parametrize("data,location,message", ERRORS, ids=[f"{e[1]}:{e[2][:30]}" for e in ERRORS])
def test_parse_errors_are_located(data, location, message):
    with pytest.raises(LinkwrightError) as err:
        parse_shape(data, "b.shape")
    assert (err.value.location, err.value.message) == (location, message)


def test_registry_lists_every_format_type():
    assert sorted(SHAPE_TYPES) == KNOWN.split(", ")
    assert all(issubclass(cls, Shape) and cls.type == name for name, cls in SHAPE_TYPES.items())


@pytest.mark.parametrize("case", ALL, ids=ident)
def test_to_dict_round_trips_losslessly(case):
    s = parse_shape(case, "s")
    d = s.to_dict()
    again = parse_shape(json.loads(json.dumps(d)), "s")  # through real JSON text
    assert again == s and hash(again) == hash(s)
    assert d == json.loads(json.dumps(case))  # exactly what the user wrote (numbers compare equal as floats)
    x = np.random.default_rng(0).normal(size=(5, 3))
    np.testing.assert_array_equal(again.values(x), s.values(x))


def test_halfspace_keeps_user_numbers_but_normalises_internally():
    s = parse_shape({"type": "halfspace", "normal": [0, 0, 2]}, "s")  # offset defaults to 0
    assert s.to_dict() == {"type": "halfspace", "normal": [0.0, 0.0, 2.0], "offset": 0.0}
    t = parse_shape({"type": "halfspace", "normal": [0, 0, 2], "offset": 1}, "s")  # 2z <= 1: z <= 0.5
    assert t.values(np.array([0.0, 0.0, 0.5]))[0] == 0.0 and t.values(np.zeros(3))[0] == -0.5


def test_disc_is_the_cylinder_definition_with_thickness():
    disc = parse_shape({"type": "disc", "radius": 1.0, "thickness": 0.1}, "s")
    cyl = parse_shape({"type": "cylinder", "radius": 1.0, "length": 0.1}, "s")
    assert isinstance(disc, Cylinder) and type(disc) is Disc and disc != cyl
    x = np.random.default_rng(1).normal(size=(6, 3))
    np.testing.assert_array_equal(disc.values(x), cyl.values(x))
    np.testing.assert_array_equal(disc.mesh(12)[0], cyl.mesh(12)[0])
    assert disc.to_dict() == {"type": "disc", "radius": 1.0, "thickness": 0.1}


def test_constructors_take_format_keys_and_validate():
    assert Sphere(radius=0.5) == parse_shape({"type": "sphere", "radius": 0.5}, "x")
    with pytest.raises(LinkwrightError) as err:
        Sphere(radius=-1)
    assert err.value.location == "shape.radius"


def test_different_shapes_are_unequal():
    assert parse_shape({"type": "sphere", "radius": 1}, "s") != parse_shape({"type": "sphere", "radius": 2}, "s")
    assert parse_shape({"type": "sphere", "radius": 1}, "s") != parse_shape({"type": "ellipsoid", "radii": [1] * 3}, "s")
