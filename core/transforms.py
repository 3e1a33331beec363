"""4x4 homogeneous transforms of the matrix method: elementary motions, inverse, composition, rotations.

Frame notation (used across core): ``aTb`` is the pose of frame b in frame a, a 4x4 matrix
[[R, p], [0, 1]] mapping b-coordinates of a point to a-coordinates: r_a = aTb @ r_b.
Composition of successive motions: aTc = aTb @ bTc.

The six elementary motions (thesis section 2.4) are indexed as in the thesis' z1..z6:
0 = translation along x, 1 = along y, 2 = along z, 3 = rotation about x, 4 = about y, 5 = about z.
Each is T_k(q) = expm(G_k q) for a constant generator matrix G_k, so its derivatives are
dT/dq = T G = G T and d2T/dq2 = T G G (a translation's second derivative is zero since G G = 0).

Quaternions are (w, x, y, z) with w the scalar part.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "TX", "TY", "TZ", "RX", "RY", "RZ",
    "GENERATORS",
    "elementary", "elementary_d1", "elementary_d2",
    "trans_x", "trans_y", "trans_z", "rot_x", "rot_y", "rot_z",
    "translation", "from_rotation_translation", "frame_from_axis",
    "inverse", "compose", "transform_point",
    "velocity_matrix", "acceleration_matrix",
    "compose_velocity", "compose_acceleration",
    "skew", "unskew",
    "quat_to_matrix", "matrix_to_quat", "quat_multiply", "quat_normalize",
    "axis_angle_to_quat", "quat_to_axis_angle", "axis_angle_to_matrix", "matrix_to_axis_angle",
]

TX, TY, TZ, RX, RY, RZ = range(6)  # elementary motion indices (thesis z1..z6)


def _generators() -> np.ndarray:
    g = np.zeros((6, 4, 4))
    g[TX, 0, 3] = g[TY, 1, 3] = g[TZ, 2, 3] = 1.0
    # rotation generators: skew of the unit axis in the upper-left block
    g[RX, 2, 1], g[RX, 1, 2] = 1.0, -1.0
    g[RY, 0, 2], g[RY, 2, 0] = 1.0, -1.0
    g[RZ, 1, 0], g[RZ, 0, 1] = 1.0, -1.0
    g.setflags(write=False)
    return g


GENERATORS: np.ndarray = _generators()  # (6, 4, 4) constant generator matrices G_k


def elementary(kind: int, q: float) -> np.ndarray:
    """The 4x4 transform of elementary motion `kind` (TX..RZ) by coordinate q."""
    g = GENERATORS[kind]
    if kind < 3:
        return np.eye(4) + g * q
    # Rodrigues: expm(G q) = I + G sin q + G^2 (1 - cos q) for a unit rotation generator
    return np.eye(4) + g * math.sin(q) + (g @ g) * (1.0 - math.cos(q))


def elementary_d1(kind: int, q: float) -> np.ndarray:
    """First derivative dT/dq of elementary motion `kind` at q (= T(q) G)."""
    if kind < 3:
        return GENERATORS[kind].copy()
    return elementary(kind, q) @ GENERATORS[kind]


def elementary_d2(kind: int, q: float) -> np.ndarray:
    """Second derivative d2T/dq2 of elementary motion `kind` at q (= T(q) G G)."""
    g = GENERATORS[kind]
    return elementary(kind, q) @ g @ g


def trans_x(d: float) -> np.ndarray:
    """Translation by d along x."""
    return elementary(TX, d)


def trans_y(d: float) -> np.ndarray:
    """Translation by d along y."""
    return elementary(TY, d)


def trans_z(d: float) -> np.ndarray:
    """Translation by d along z."""
    return elementary(TZ, d)


def rot_x(a: float) -> np.ndarray:
    """Rotation by angle a (rad) about x."""
    return elementary(RX, a)


def rot_y(a: float) -> np.ndarray:
    """Rotation by angle a (rad) about y."""
    return elementary(RY, a)


def rot_z(a: float) -> np.ndarray:
    """Rotation by angle a (rad) about z."""
    return elementary(RZ, a)


def translation(p) -> np.ndarray:
    """The pure translation by vector p (length 3)."""
    t = np.eye(4)
    t[:3, 3] = p
    return t


def from_rotation_translation(R, p=(0.0, 0.0, 0.0)) -> np.ndarray:
    """The homogeneous transform with rotation block R and translation p."""
    t = np.eye(4)
    t[:3, :3] = R
    t[:3, 3] = p
    return t


def frame_from_axis(origin, axis, axis2=None) -> np.ndarray:
    """A right-handed frame at `origin` whose z axis is `axis` (x along `axis2`'s component normal to it, if given)."""
    z = np.asarray(axis, dtype=float)
    z = z / np.linalg.norm(z)
    if axis2 is not None:
        x = np.asarray(axis2, dtype=float)
        x = x - z * (x @ z)
    else:
        x = np.zeros(3)
    if np.linalg.norm(x) < 1e-12:
        # any normal: take the world axis least aligned with z, so the choice is continuous and exact for x/y/z axes
        helper = np.eye(3)[int(np.argmin(np.abs(z)))]
        x = helper - z * (helper @ z)
    x = x / np.linalg.norm(x)
    y = np.cross(z, x)
    return from_rotation_translation(np.column_stack((x, y, z)), origin)


def inverse(T: np.ndarray) -> np.ndarray:
    """Inverse of a homogeneous transform by the block formula [[R^T, -R^T p], [0, 1]] (works on (..., 4, 4))."""
    T = np.asarray(T, dtype=float)
    out = np.empty_like(T)
    rt = np.swapaxes(T[..., :3, :3], -1, -2)
    out[..., :3, :3] = rt
    out[..., :3, 3:] = -(rt @ T[..., :3, 3:])
    out[..., 3, :3] = 0.0
    out[..., 3, 3] = 1.0
    return out


def compose(*Ts: np.ndarray) -> np.ndarray:
    """Product of successive motions T1 @ T2 @ ... (identity when empty)."""
    out = np.eye(4)
    for t in Ts:
        out = out @ t
    return out


def transform_point(T: np.ndarray, p) -> np.ndarray:
    """The point p (3,) or points (n, 3) mapped by T."""
    p = np.asarray(p, dtype=float)
    return p @ T[:3, :3].T + T[:3, 3]


def velocity_matrix(T: np.ndarray, Td: np.ndarray) -> np.ndarray:
    """Velocity matrix V = Td T^-1 of a motion (upper block: angular-velocity skew; column: v of the origin point)."""
    return Td @ inverse(T)


def acceleration_matrix(T: np.ndarray, Tdd: np.ndarray) -> np.ndarray:
    """Acceleration matrix A = Tdd T^-1 of a motion (thesis' counterpart of V)."""
    return Tdd @ inverse(T)


def compose_velocity(T_ab: np.ndarray, Td_ab: np.ndarray, T_bc: np.ndarray, Td_bc: np.ndarray) -> np.ndarray:
    """Time derivative of aTc = aTb bTc for successive motions: Td_ab T_bc + T_ab Td_bc."""
    return Td_ab @ T_bc + T_ab @ Td_bc


def compose_acceleration(T_ab, Td_ab, Tdd_ab, T_bc, Td_bc, Tdd_bc) -> np.ndarray:
    """Second time derivative of aTc = aTb bTc: Tdd_ab T_bc + 2 Td_ab Td_bc + T_ab Tdd_bc."""
    return Tdd_ab @ T_bc + 2.0 * Td_ab @ Td_bc + T_ab @ Tdd_bc


# --- rotations ------------------------------------------------------------------------------------


def skew(v) -> np.ndarray:
    """The 3x3 skew-symmetric matrix [v]x with [v]x w = v x w."""
    x, y, z = (float(c) for c in v)
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def unskew(S: np.ndarray) -> np.ndarray:
    """The vector v of a skew-symmetric matrix S = [v]x (antisymmetric part if S is not exactly skew)."""
    S = np.asarray(S, dtype=float)
    return 0.5 * np.array([S[2, 1] - S[1, 2], S[0, 2] - S[2, 0], S[1, 0] - S[0, 1]])


def quat_normalize(q) -> np.ndarray:
    """Unit quaternion (w, x, y, z) in the direction of q, with w >= 0 (ValueError for a zero quaternion)."""
    q = np.asarray(q, dtype=float)
    n = np.linalg.norm(q)
    if not n > 0.0:
        raise ValueError("zero quaternion has no direction")
    q = q / n
    return -q if q[0] < 0.0 else q


def quat_multiply(a, b) -> np.ndarray:
    """Hamilton product a * b of quaternions (w, x, y, z): the rotation b followed by a."""
    w1, x1, y1, z1 = (float(c) for c in a)
    w2, x2, y2, z2 = (float(c) for c in b)
    return np.array([
        w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
        w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
        w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
    ])


def quat_to_matrix(q) -> np.ndarray:
    """3x3 rotation matrix of quaternion q = (w, x, y, z) (normalised first); quaternions (..., 4) give (..., 3, 3)."""
    q = np.asarray(q, dtype=float)
    if q.ndim > 1:
        q = q / np.sqrt(np.einsum("...i,...i->...", q, q))[..., None]
        w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
        R = np.empty(q.shape[:-1] + (3, 3))
        R[..., 0, 0], R[..., 0, 1], R[..., 0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)
        R[..., 1, 0], R[..., 1, 1], R[..., 1, 2] = 2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)
        R[..., 2, 0], R[..., 2, 1], R[..., 2, 2] = 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)
        return R
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def matrix_to_quat(R) -> np.ndarray:
    """Unit quaternion (w, x, y, z), w >= 0, of rotation matrix R (3x3 or the block of a 4x4)."""
    R = np.asarray(R, dtype=float)[:3, :3]
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    # Shepperd's method: divide by the largest of the four candidates for numerical stability
    if tr > max(R[0, 0], R[1, 1], R[2, 2]):
        s = 2.0 * math.sqrt(1.0 + tr)
        q = [0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s]
    elif R[0, 0] >= R[1, 1] and R[0, 0] >= R[2, 2]:
        s = 2.0 * math.sqrt(max(1.0 + R[0, 0] - R[1, 1] - R[2, 2], 0.0))
        q = [(R[2, 1] - R[1, 2]) / s, 0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s]
    elif R[1, 1] >= R[2, 2]:
        s = 2.0 * math.sqrt(max(1.0 + R[1, 1] - R[0, 0] - R[2, 2], 0.0))
        q = [(R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s]
    else:
        s = 2.0 * math.sqrt(max(1.0 + R[2, 2] - R[0, 0] - R[1, 1], 0.0))
        q = [(R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s]
    return quat_normalize(q)


def axis_angle_to_quat(axis, angle: float) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of the rotation by `angle` (rad) about `axis` (normalised; ValueError if zero)."""
    a = np.asarray(axis, dtype=float)
    n = np.linalg.norm(a)
    if not n > 0.0:
        raise ValueError("rotation axis must be non-zero")
    h = 0.5 * float(angle)
    return np.concatenate(([math.cos(h)], math.sin(h) * a / n))


def quat_to_axis_angle(q) -> tuple[np.ndarray, float]:
    """(unit axis, angle in [0, pi]) of quaternion q; axis (0, 0, 1) for the identity."""
    w, x, y, z = quat_normalize(q)
    v = np.array([x, y, z])
    s = np.linalg.norm(v)
    if s < 1e-15:
        return np.array([0.0, 0.0, 1.0]), 0.0
    return v / s, 2.0 * math.atan2(s, w)


def axis_angle_to_matrix(axis, angle: float) -> np.ndarray:
    """3x3 rotation matrix by `angle` (rad) about `axis` (Rodrigues' formula)."""
    a = np.asarray(axis, dtype=float)
    n = np.linalg.norm(a)
    if not n > 0.0:
        raise ValueError("rotation axis must be non-zero")
    K = skew(a / n)
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * (K @ K)


def matrix_to_axis_angle(R) -> tuple[np.ndarray, float]:
    """(unit axis, angle in [0, pi]) of rotation matrix R."""
    return quat_to_axis_angle(matrix_to_quat(R))
