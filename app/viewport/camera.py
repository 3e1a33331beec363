"""Camera maths of the viewport in numpy: 4x4 <-> QMatrix4x4, preset view orientations, pixel rays."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtGui import QMatrix4x4, QQuaternion, QVector3D

__all__ = ["to_qmatrix", "from_qmatrix", "VIEWS", "views", "view_basis", "view_quaternion", "pixel_ray", "up_axis",
           "up_rotation", "rotation_between"]


def to_qmatrix(T: np.ndarray) -> QMatrix4x4:
    """The QMatrix4x4 of a numpy 4x4 transform (the constructor takes the 16 values row by row)."""
    return QMatrix4x4(*np.asarray(T, dtype=float).reshape(16).tolist())


def from_qmatrix(m: QMatrix4x4) -> np.ndarray:
    """The numpy 4x4 of a QMatrix4x4 (copyDataTo gives row-major values; data() would be column-major)."""
    return np.array(m.copyDataTo(), dtype=float).reshape(4, 4)


# Preset views: (direction from the target to the camera, screen-up direction), per document space.
# Planar documents live in x-y (drawn with x right, y up), so their "front" looks at that plane from +z and their
# "top" looks down from +y with +z (towards the front viewer) at the bottom of the screen, as in a third-angle drawing.
_ISO_SPATIAL = (math.cos(math.radians(30)) * math.cos(math.radians(-55)),
                math.cos(math.radians(30)) * math.sin(math.radians(-55)), math.sin(math.radians(30)))
VIEWS: dict[str, dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]]] = {
    "spatial": {
        "front": ((0.0, -1.0, 0.0), (0.0, 0.0, 1.0)),
        "top": ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0)),
        "iso": (_ISO_SPATIAL, (0.0, 0.0, 1.0)),
    },
    "planar": {
        "front": ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0)),
        "top": ((0.0, 1.0, 0.0), (0.0, 0.0, -1.0)),
        "iso": ((0.55, 0.42, 0.72), (0.0, 1.0, 0.0)),
    },
}


def rotation_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The smallest rotation (3x3) that takes unit vector a to unit vector b (half a turn about an axis normal to a
    when b = -a)."""
    v, c = np.cross(a, b), float(a @ b)
    if c < -1.0 + 1e-12:
        n = np.cross(a, np.eye(3)[int(np.argmin(np.abs(a)))])
        n /= np.linalg.norm(n)
        return 2.0 * np.outer(n, n) - np.eye(3)
    k = np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])
    return np.eye(3) + k + k @ k / (1.0 + c)


def up_axis(space: str, up: tuple[float, float, float] | None = None) -> np.ndarray:
    """The world direction that stays up while orbiting: against the gravity (`up`, Mechanism.up_direction), else z
    for spatial documents and y for planar ones."""
    base = np.array([0.0, 1.0, 0.0]) if space == "planar" else np.array([0.0, 0.0, 1.0])
    return base if up is None else np.asarray(up, float)


def up_rotation(space: str, up: tuple[float, float, float] | None = None) -> np.ndarray:
    """The smallest rotation (3x3) that takes a document's default up (z, or y for planar) to its up (`up`,
    Mechanism.up_direction; the default without gravity): the preset views and the spatial grid turn by it."""
    return rotation_between(up_axis(space), up_axis(space, up))


def views(space: str, up: tuple[float, float, float] | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The preset views of a document: VIEWS[space] turned by the smallest rotation that takes its default up (z, or
    y for planar) to `up`, so "front" still looks level and "top" looks down along the gravity. A planar document's
    up lies in its plane, so its front view still looks at the plane."""
    R = up_rotation(space, up)
    return {name: (R @ np.asarray(back, float), R @ np.asarray(screen_up, float))
            for name, (back, screen_up) in VIEWS[space].items()}


def view_basis(back, up) -> np.ndarray:
    """Rows (right, up, back) of the world-to-camera rotation for a camera on `back` with screen-up `up`."""
    b = np.asarray(back, float)
    b = b / np.linalg.norm(b)
    u = np.asarray(up, float)
    u = u - b * (u @ b)
    u = u / np.linalg.norm(u)
    r = np.cross(u, b)
    return np.array([r, u, b])


def view_quaternion(back, up) -> QQuaternion:
    """The GLViewWidget rotation (world to camera) of a preset camera direction."""
    R = view_basis(back, up)
    # fromAxes builds the rotation whose columns are the given axes (camera to world); the view needs its inverse
    q = QQuaternion.fromAxes(QVector3D(*R[0]), QVector3D(*R[1]), QVector3D(*R[2]))
    return q.conjugated().normalized()


def pixel_ray(proj: np.ndarray, view: np.ndarray, x: float, y: float, width: float, height: float) -> tuple[np.ndarray, np.ndarray]:
    """World origin and unit direction of the ray through widget pixel (x, y) (origin top-left, y down)."""
    ndc_x = 2.0 * x / width - 1.0
    ndc_y = 1.0 - 2.0 * y / height
    inv = np.linalg.inv(proj @ view)
    near = inv @ np.array([ndc_x, ndc_y, -1.0, 1.0])
    far = inv @ np.array([ndc_x, ndc_y, 1.0, 1.0])
    near, far = near[:3] / near[3], far[:3] / far[3]
    d = far - near
    return near, d / np.linalg.norm(d)
