"""Triangle meshes of the smooth shapes for drawing: vertices on the surface, faces outward and counter-clockwise."""

from __future__ import annotations

import numpy as np

__all__ = ["superquadric_mesh", "cylinder_mesh", "plane_patch", "signed_power"]


def signed_power(v: np.ndarray, e: float) -> np.ndarray:
    """sign(v) |v|^e."""
    return np.sign(v) * np.abs(v) ** e


def _band_faces(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Two outward triangles per quad between two rings whose angle increases counter-clockwise about +z."""
    a, b = lower, np.roll(lower, -1)
    c, d = np.roll(upper, -1), upper
    return np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])


def _fan(centre: int, ring: np.ndarray, up: bool) -> np.ndarray:
    nxt = np.roll(ring, -1)
    c = np.full_like(ring, centre)
    return np.stack([c, ring, nxt] if up else [c, nxt, ring], 1)


def superquadric_mesh(radii: np.ndarray, e1: float, e2: float, resolution: int) -> tuple[np.ndarray, np.ndarray]:
    """Latitude-longitude mesh of (|x/a|^e2+|y/b|^e2)^(e1/e2)+|z/c|^e1 = 1 in Barr's parametrisation (a UV sphere for e=2)."""
    n_lon = max(int(resolution), 3)
    n_lat = max(int(resolution) // 2, 2)
    eta = -np.pi / 2 + np.pi * np.arange(1, n_lat) / n_lat  # ring latitudes, poles excluded
    omega = 2 * np.pi * np.arange(n_lon) / n_lon
    ce, se = np.cos(eta)[:, None], np.sin(eta)[:, None]
    cw, sw = np.cos(omega)[None, :], np.sin(omega)[None, :]
    ring = np.stack(
        np.broadcast_arrays(
            signed_power(ce, 2 / e1) * signed_power(cw, 2 / e2),
            signed_power(ce, 2 / e1) * signed_power(sw, 2 / e2),
            signed_power(se, 2 / e1),
        ),
        axis=-1,
    ).reshape(-1, 3)
    verts = np.concatenate([[[0.0, 0.0, -1.0]], ring, [[0.0, 0.0, 1.0]]]) * radii
    rings = 1 + np.arange((n_lat - 1) * n_lon).reshape(n_lat - 1, n_lon)
    top = len(verts) - 1
    faces = [_fan(0, rings[0], up=False)]
    faces += [_band_faces(rings[k], rings[k + 1]) for k in range(n_lat - 2)]
    faces.append(_fan(top, rings[-1], up=True))
    return verts, np.concatenate(faces)


def cylinder_mesh(radius: float, length: float, resolution: int) -> tuple[np.ndarray, np.ndarray]:
    """Side and two caps of a z-axis cylinder; the caps have their own vertices so the rim shades sharp."""
    n = max(int(resolution), 3)
    w = 2 * np.pi * np.arange(n) / n
    circle = np.stack([radius * np.cos(w), radius * np.sin(w), np.zeros(n)], 1)
    h = np.array([0.0, 0.0, length / 2])
    verts = np.concatenate([circle - h, circle + h, circle - h, circle + h, [-h, h]])
    ids = np.arange(4 * n).reshape(4, n)
    faces = np.concatenate([
        _band_faces(ids[0], ids[1]),
        _fan(4 * n, ids[2], up=False),
        _fan(4 * n + 1, ids[3], up=True),
    ])
    return verts, faces


def plane_patch(normal: np.ndarray, point: np.ndarray, size: float) -> tuple[np.ndarray, np.ndarray]:
    """A square of side `size` centred at `point` in the plane with unit `normal`, facing along the normal."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(normal[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = np.cross(normal, helper)
    t1 /= np.linalg.norm(t1)
    t2 = np.cross(normal, t1)  # t1 x t2 = normal, so (-,-), (+,-), (+,+) is counter-clockwise seen from outside
    s = size / 2
    verts = np.array([point + s * (i * t1 + j * t2) for i, j in ((-1, -1), (1, -1), (1, 1), (-1, 1))])
    return verts, np.array([[0, 1, 2], [0, 2, 3]])
