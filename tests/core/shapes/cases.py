"""Example shape objects covering every format-v1 type, shared by the shape tests."""

from __future__ import annotations

import numpy as np

# a rotated, off-centre tetrahedron-ish hull and an octahedron given by planes exercise the general polytope paths
_OCTAHEDRON_PLANES = [[sx, sy, sz, 1.0] for sx in (1, -1) for sy in (1, -1) for sz in (1, -1)]

BOUNDED = [
    {"type": "sphere", "radius": 0.7},
    {"type": "ellipsoid", "radii": [0.5, 1.0, 1.5]},
    {"type": "superellipsoid", "radii": [1.0, 0.8, 0.6], "exponents": [2, 2]},
    {"type": "superellipsoid", "radii": [1.0, 0.8, 0.6], "exponents": [4, 3]},
    {"type": "superellipsoid", "radii": [0.5, 0.9, 0.7], "exponents": [2.5, 6]},
    {"type": "superellipsoid", "radii": [1.2, 0.5, 0.8], "exponents": [8, 2]},
    {"type": "box", "size": [1.0, 2.0, 0.5]},
    {"type": "cylinder", "radius": 0.4, "length": 1.5},
    {"type": "disc", "radius": 1.0, "thickness": 0.1},
    {"type": "polytope", "vertices": [[0.1, 0.2, 0.0], [1.3, 0.0, 0.2], [0.0, 1.1, 0.1], [0.2, 0.3, 0.9], [0.6, 0.6, 0.5]]},
    {"type": "polytope", "planes": _OCTAHEDRON_PLANES},
]
HALFSPACE = {"type": "halfspace", "normal": [1.0, -2.0, 2.0], "offset": 0.6}
ALL = BOUNDED + [HALFSPACE]


def ident(case: dict) -> str:
    """A readable test id."""
    extra = case.get("exponents") or ("planes" if "planes" in case else "vertices" if "vertices" in case else "")
    return f"{case['type']}{extra}".replace(" ", "")


def random_points(shape, n: int, seed: int, spread: float = 1.4) -> np.ndarray:
    """n seeded points in a box of `spread` times the shape's extent around its centroid."""
    rng = np.random.default_rng(seed)
    r = shape.bounding_radius if np.isfinite(shape.bounding_radius) else 2.0
    return shape.com + spread * r * rng.uniform(-1.0, 1.0, size=(n, 3))
