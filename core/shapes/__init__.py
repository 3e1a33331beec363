"""Convex shapes {x : f_i(x) <= 0} of format v1: inequalities with closed-form derivatives, mass properties, meshes.

Used by the contact time-stepper (values/gradients/hessians, support, interior_point), the file loader
(parse_shape) and the viewport (mesh). The format keys, inequalities and scaling are in docs/shapes.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from core.errors import LinkwrightError

from .base import Param, Shape
from .kinds import (
    HALFSPACE_PATCH_SIZE, SHAPE_TYPES, Box, Cylinder, Disc, Ellipsoid, Halfspace, Polytope, Sphere, Superellipsoid,
)
from .validate import show

__all__ = [
    "Shape", "Param", "SHAPE_TYPES", "parse_shape", "mass_properties", "HALFSPACE_PATCH_SIZE",
    "Halfspace", "Sphere", "Ellipsoid", "Superellipsoid", "Box", "Cylinder", "Disc", "Polytope",
]


def parse_shape(data: object, location: str) -> Shape:
    """Validate a format-v1 shape object and build its Shape; LinkwrightError(location..., message) if invalid."""
    known = ", ".join(sorted(SHAPE_TYPES))
    if not isinstance(data, Mapping):
        raise LinkwrightError(location, f'must be an object with a "type" (one of: {known}), got {show(data)}')
    if "type" not in data:
        raise LinkwrightError(f"{location}.type", f"is missing (one of: {known})")
    name = data["type"]
    cls = SHAPE_TYPES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise LinkwrightError(f"{location}.type", f"unknown shape type {show(name)} (known types: {known})")
    return cls.from_json(data, location)


def mass_properties(
    shape: Shape, mass: float | None, density: float | None, location: str = ""
) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass, com, inertia about com in body axes) of a uniform solid given exactly one of mass and density."""
    if (mass is None) == (density is None):
        raise LinkwrightError(location, "give exactly one of mass and density" if mass is not None
                              else "needs a mass or a density")
    key, value = ("mass", mass) if mass is not None else ("density", density)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        raise LinkwrightError(f"{location}.{key}" if location else key, f"must be a positive number, got {show(value)}")
    if not shape.bounded:
        raise LinkwrightError(location, f"a {shape.type} is unbounded, so it has no mass or inertia: "
                                        "use it only on a static body")
    m = float(mass) if mass is not None else float(density) * shape.volume
    return m, shape.com.copy(), shape.inertia(m)
