"""What the viewport draws, as plain numpy: meshes of links, joint glyphs and points in body frames, and pick geometry.

No Qt and no OpenGL here, so the scene description and the ray casting are testable on their own.
Frames: every body's geometry is in its body frame; a body's design pose D_b (its `pose`, else identity) places that
frame in the world for the design configuration, so a joint at world point `at` sits at D_b^-1 · at in body b.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from core.errors import LinkwrightError
from core.joints import JOINT_TYPES, joint_design_frame
from core.model import Body, Mechanism, shape_key
from core.transforms import frame_from_axis, inverse, quat_to_matrix

__all__ = [
    "Mesh",
    "BodyGeometry",
    "JointGeometry",
    "PointGeometry",
    "Scene",
    "build_scene",
    "SceneBuilder",
    "geometry_signature",
    "design_pose",
    "box_mesh",
    "cylinder_mesh",
    "sphere_mesh",
    "prism_mesh",
    "stadium_mesh",
    "merge_meshes",
    "transform_mesh",
    "ray_triangles",
    "ray_capsules",
    "ray_spheres",
    "JOINT_GLYPHS",
]

Mesh = tuple[np.ndarray, np.ndarray]  # (vertices (V, 3) float, faces (F, 3) int), faces counter-clockwise outward


# ---- primitive meshes (creases get their own vertices so smooth vertex normals stay sharp at edges) --------------
def box_mesh(size, centre=(0.0, 0.0, 0.0)) -> Mesh:
    """An axis-aligned box of edge lengths `size` around `centre`, four own vertices per face."""
    h = 0.5 * np.asarray(size, dtype=float)
    verts, faces = [], []
    for axis in range(3):
        for sign in (1.0, -1.0):
            u, v = (axis + 1) % 3, (axis + 2) % 3
            quad = []
            for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                p = np.zeros(3)
                p[axis], p[u], p[v] = sign * h[axis], a * h[u], b * sign * h[v]
                quad.append(p)
            k = len(verts)
            verts.extend(quad)
            faces += [[k, k + 1, k + 2], [k, k + 2, k + 3]]
    return np.array(verts) + np.asarray(centre, float), np.array(faces)


def prism_mesh(outline: np.ndarray, z0: float, z1: float, smooth_sides: bool = False) -> Mesh:
    """A prism over a convex counter-clockwise outline (n, 2) from z0 to z1: two fan caps and the side band."""
    outline = np.asarray(outline, dtype=float)
    n = len(outline)
    lo = np.column_stack([outline, np.full(n, z0)])
    hi = np.column_stack([outline, np.full(n, z1)])
    verts = [lo, hi]
    faces = []
    # caps: fans from vertex 0 (convex outline), bottom reversed so it faces -z
    idx = np.arange(1, n - 1)
    faces.append(np.column_stack([np.zeros(n - 2, int), idx + 1, idx]))
    faces.append(np.column_stack([np.full(n - 2, n), n + idx, n + idx + 1]))
    k = 2 * n
    if smooth_sides:
        verts += [lo, hi]
        a = k + np.arange(n)
        b = k + (np.arange(n) + 1) % n
        faces += [np.column_stack([a, b, b + n]), np.column_stack([a, b + n, a + n])]
    else:
        for i in range(n):
            j = (i + 1) % n
            verts.append(np.array([lo[i], lo[j], hi[j], hi[i]]))
            faces.append(np.array([[k, k + 1, k + 2], [k, k + 2, k + 3]]))
            k += 4
    return np.concatenate(verts), np.concatenate(faces).astype(int)


def cylinder_mesh(radius: float, length: float, sides: int = 24, z0: float | None = None) -> Mesh:
    """A z-axis cylinder (centred on z=0 unless z0 gives its bottom), smooth side, flat caps."""
    w = 2 * np.pi * np.arange(sides) / sides
    outline = radius * np.column_stack([np.cos(w), np.sin(w)])
    lo = -length / 2 if z0 is None else z0
    return prism_mesh(outline, lo, lo + length, smooth_sides=sides > 8)


def sphere_mesh(radius: float, centre=(0.0, 0.0, 0.0), rows: int = 12, cols: int = 20) -> Mesh:
    """A UV sphere (shared vertices: smooth)."""
    th = np.linspace(0, np.pi, rows + 1)[1:-1]
    ph = 2 * np.pi * np.arange(cols) / cols
    ring = np.stack([np.outer(np.sin(th), np.cos(ph)), np.outer(np.sin(th), np.sin(ph)),
                     np.outer(np.cos(th), np.ones(cols))], -1).reshape(-1, 3)
    verts = np.concatenate([[[0, 0, 1.0]], ring, [[0, 0, -1.0]]]) * radius + np.asarray(centre, float)
    faces = []
    for c in range(cols):
        faces.append([0, 1 + c, 1 + (c + 1) % cols])
    for r in range(rows - 2):
        for c in range(cols):
            a, b = 1 + r * cols + c, 1 + r * cols + (c + 1) % cols
            faces += [[a, a + cols, b], [b, a + cols, b + cols]]
    last = len(verts) - 1
    base = 1 + (rows - 2) * cols
    for c in range(cols):
        faces.append([last, base + (c + 1) % cols, base + c])
    return verts, np.array(faces)


def stadium_mesh(p0, p1, half_width: float, z0: float, z1: float, arc: int = 10) -> Mesh:
    """A planar link: the stadium (rounded ends of radius half_width) around segment p0-p1 (x-y), from z0 to z1."""
    p0, p1 = np.asarray(p0, float)[:2], np.asarray(p1, float)[:2]
    d = p1 - p0
    ang = math.atan2(d[1], d[0])
    a1 = ang - np.pi / 2 + np.pi * np.arange(arc + 1) / arc  # right-hand half circle around p1
    a0 = a1 + np.pi
    outline = np.concatenate([p1 + half_width * np.column_stack([np.cos(a1), np.sin(a1)]),
                              p0 + half_width * np.column_stack([np.cos(a0), np.sin(a0)])])
    return prism_mesh(outline, z0, z1, smooth_sides=True)


def transform_mesh(mesh: Mesh, T: np.ndarray) -> Mesh:
    """The mesh with its vertices mapped by the 4x4 transform T."""
    v, f = mesh
    return np.asarray(v, float) @ T[:3, :3].T + T[:3, 3], f


def merge_meshes(meshes: list[Mesh]) -> Mesh:
    """One mesh holding all of `meshes` (face indices shifted)."""
    verts, faces, k = [], [], 0
    for v, f in meshes:
        verts.append(np.asarray(v, float))
        faces.append(np.asarray(f, int) + k)
        k += len(v)
    if not verts:
        return np.zeros((0, 3)), np.zeros((0, 3), int)
    return np.concatenate(verts), np.concatenate(faces)


def _segment_frame(p0: np.ndarray, p1: np.ndarray) -> np.ndarray:
    """A frame at p0 whose z axis points to p1."""
    return frame_from_axis(p0, p1 - p0)


# ---- joint glyphs: one table row per joint type ------------------------------------------------------------------
# Each part is (primitive, size in link widths, placement): "cyl" (radius, length, sides) along the frame's z,
# "cylx" the same along x (universal joints' second axis), "box" (sx, sy, sz), "sphere" (radius,).
# A length of None means "span the layers of the two bodies" (planar pins), at least the given minimum.
JOINT_GLYPHS: dict[str, dict] = {
    "revolute": {"parts": [("cyl", (0.30, None, 20))], "color": "pin"},
    "prismatic": {"parts": [("box", (0.95, 0.95, 2.4))], "color": "slide"},
    "slot": {"parts": [("box", (3.2, 0.75, None)), ("cyl", (0.22, None, 16))], "color": "slide"},
    "cylindrical": {"parts": [("cyl", (0.24, 3.0, 16)), ("cyl", (0.48, 0.7, 20))], "color": "slide"},
    "universal": {"parts": [("cyl", (0.2, 1.9, 12)), ("cylx", (0.2, 1.9, 12)), ("sphere", (0.32,))], "color": "pin"},
    "spherical": {"parts": [("sphere", (0.58,))], "color": "pin"},
    "planar": {"parts": [("cyl", (1.1, 0.22, 28))], "color": "slide"},
    "helical": {"parts": [("cyl", (0.30, 2.4, 6)), ("cyl", (0.55, 0.45, 6))], "color": "pin"},
    "fixed": {"parts": [("box", (0.8, 0.8, 0.8))], "color": "fixed"},
}
_ROT_Z_TO_X = np.array([[0, 0, 1, 0], [0, 1, 0, 0], [-1, 0, 0, 0], [0, 0, 0, 1]], float)  # maps z onto x


def _glyph_mesh(jtype: str, width: float, span: float) -> Mesh:
    """The glyph of a joint type in the joint's design frame, sized by the link width and the layer span."""
    row = JOINT_GLYPHS.get(jtype, JOINT_GLYPHS["fixed"])
    parts = []
    for kind, dims in row["parts"]:
        if kind in ("cyl", "cylx"):
            r, length, sides = dims
            length = max(span, 1.6 * width) if length is None else length * width
            m = cylinder_mesh(r * width, length, sides)
            parts.append(transform_mesh(m, _ROT_Z_TO_X) if kind == "cylx" else m)
        elif kind == "box":
            sx, sy, sz = dims
            sz = max(span * 0.6, 0.8 * width) if sz is None else sz * width
            parts.append(box_mesh((sx * width, sy * width, sz)))
        else:
            parts.append(sphere_mesh(dims[0] * width))
    return merge_meshes(parts)


# ---- the scene ----------------------------------------------------------------------------------------------------
@dataclass
class BodyGeometry:
    """A body's drawing in its body frame, with what picking intersects."""

    name: str
    ground: bool
    design: np.ndarray  # 4x4 design pose of the body frame (world)
    mesh: Mesh
    capsules: np.ndarray = field(default_factory=lambda: np.zeros((0, 2, 3)))  # (K, 2, 3) segment ends
    radii: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (K,) capsule radii
    triangles: np.ndarray = field(default_factory=lambda: np.zeros((0, 3, 3)))  # (T, 3, 3) pick triangles
    from_shape: bool = False  # drawn from its `shape` (else bars/plates between joints)
    unbounded: bool = False  # an unbounded shape (halfspace): drawn translucent, left out of "fit"


@dataclass
class JointGeometry:
    """A joint glyph, carried by its first body: `local` places the glyph frame in that body's frame."""

    name: str
    type: str
    body: str
    local: np.ndarray  # 4x4, glyph frame in the body frame
    mesh: Mesh
    color: str  # key of the palette ("pin", "slide", "fixed")


@dataclass
class PointGeometry:
    """A named point of a body (a small sphere), at `position` in the body frame."""

    name: str
    body: str
    position: np.ndarray
    mesh: Mesh


@dataclass
class Scene:
    """Everything the viewport draws for one mechanism geometry."""

    bodies: list[BodyGeometry]
    joints: list[JointGeometry]
    points: list[PointGeometry]
    width: float  # link width (m): the scale of glyphs
    extent: tuple[np.ndarray, np.ndarray]  # world bounding box (min, max) of the design configuration
    planar: bool
    problems: list[str] = field(default_factory=list)  # shapes that could not be meshed (drawn as links instead)


def design_pose(body: Body) -> np.ndarray:
    """The 4x4 world pose of a body's frame in the design configuration (identity without a `pose`)."""
    T = np.eye(4)
    if body.pose is not None:
        T[:3, :3] = quat_to_matrix(body.pose.orientation)
        T[:3, 3] = body.pose.position
    return T


def shape_identity(shape: object) -> object:
    """What the drawing takes as a shape's identity: core.model.shape_key, the loader's and validation's notion (equal
    for two shapes holding the same JSON values of the same types); a shape JSON cannot write (no file holds one) is
    its own, a new object each time, equal to nothing (meshed on its own, at every build)."""
    key = shape_key(shape)
    return object() if key is None else key


def geometry_signature(mech: Mechanism) -> tuple:
    """What the drawn meshes depend on: equal signatures mean only poses (transforms) may differ."""
    joined = {n for j in mech.joints for n in j.bodies}

    def body_key(b: Body) -> tuple:
        # the pose of a body without joints only moves it; with joints it changes where they sit in its frame
        pose = (b.pose.position, b.pose.orientation) if (b.pose is not None and b.name in joined) else None
        return (b.name, b.ground, tuple(sorted(b.points.items())), shape_identity(b.shape), pose)

    return (
        mech.space,
        tuple(body_key(b) for b in mech.bodies),
        tuple((j.name, j.type, j.bodies, j.at, j.axis, j.axis2) for j in mech.joints),
    )


def _unique_points(pts: np.ndarray, tol: float) -> np.ndarray:
    out: list[np.ndarray] = []
    for p in pts:
        if all(np.linalg.norm(p - q) > tol for q in out):
            out.append(p)
    return np.array(out).reshape(-1, 3)


def _hull_2d(pts: np.ndarray) -> np.ndarray:
    """Indices of the convex hull of 2-D points, counter-clockwise (monotone chain; collinear points dropped)."""
    order = sorted(range(len(pts)), key=lambda i: (pts[i][0], pts[i][1]))

    def cross(o, a, b):
        return (pts[a][0] - pts[o][0]) * (pts[b][1] - pts[o][1]) - (pts[a][1] - pts[o][1]) * (pts[b][0] - pts[o][0])

    lower: list[int] = []
    for i in order:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], i) <= 0:
            lower.pop()
        lower.append(i)
    upper: list[int] = []
    for i in reversed(order):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], i) <= 0:
            upper.pop()
        upper.append(i)
    return np.array(lower[:-1] + upper[:-1], dtype=int)


def _colouring(mech: Mechanism, keep: dict[str, int] | None = None) -> dict[str, int]:
    """A greedy colouring of the body adjacency graph: planar layer per body, so joined links never overlap in z.

    Bodies in `keep` (a previous colouring) hold their layer wherever no joined body has taken it first, so an edit
    changes the layers of as few bodies as possible; they are coloured before the new bodies."""
    adj: dict[str, set[str]] = {b.name: set() for b in mech.bodies}
    for j in mech.joints:
        a, b = j.bodies
        if a in adj and b in adj:
            adj[a].add(b)
            adj[b].add(a)
    keep = keep or {}
    layer: dict[str, int] = {}
    order = [b.name for b in mech.bodies if b.name in keep] + [b.name for b in mech.bodies if b.name not in keep]
    for name in order:
        used = {layer[n] for n in adj[name] if n in layer}
        k = keep.get(name)
        if k is None or k in used:
            k = 0
            while k in used:
                k += 1
        layer[name] = k
    return layer


def _link_parts(local: np.ndarray, planar: bool, w: float, z0: float, z1: float, tol: float,
                slide_axis: np.ndarray | None) -> tuple[list[Mesh], list[tuple[np.ndarray, np.ndarray]], list[np.ndarray]]:
    """Meshes, pick capsules and pick triangles of the default link drawing through the joint points `local`."""
    meshes: list[Mesh] = []
    caps: list[tuple[np.ndarray, np.ndarray]] = []
    tris: list[np.ndarray] = []
    pts = _unique_points(local, tol)
    zc = 0.5 * (z0 + z1)
    if len(pts) == 0:
        pts = np.zeros((1, 3))
    if len(pts) == 1:
        # a block: the slider of a slider-crank, a free body; long side along a sliding joint's axis if any
        c = pts[0]
        size = np.array([2.6 * w, 1.7 * w, (z1 - z0) if planar else 1.7 * w])
        T = np.eye(4)
        if slide_axis is not None:
            T = frame_from_axis(np.zeros(3), np.array([0.0, 0.0, 1.0]) if planar else slide_axis,
                                axis2=slide_axis if planar else None)
            if not planar:
                T = T @ _ROT_Z_TO_X
        T[:3, 3] = c + (np.array([0.0, 0.0, zc]) if planar else 0.0)
        meshes.append(transform_mesh(box_mesh(size), T))
        tris.append(meshes[-1][0][meshes[-1][1]])
        return meshes, caps, tris
    if len(pts) == 2:
        edges = [(0, 1)]
        plate = None
    else:
        edges, plate = _outline_edges(pts, planar)
    for i, k in edges:
        p0, p1 = pts[i], pts[k]
        if planar:
            meshes.append(stadium_mesh(p0, p1, 0.5 * w, z0, z1))
            off = np.array([0.0, 0.0, zc])
            caps.append((p0[:3] * [1, 1, 0] + off, p1[:3] * [1, 1, 0] + off))
        else:
            L = float(np.linalg.norm(p1 - p0))
            meshes.append(transform_mesh(cylinder_mesh(0.45 * w, L, 16, z0=0.0), _segment_frame(p0, p1)))
            caps.append((p0, p1))
    if plate is not None:
        # a plate filling the hull polygon (slightly thinner than the bars so its faces sit inside them)
        poly, frame = plate
        t = 0.7 * (z1 - z0) if planar else 0.35 * w
        zp = zc if planar else 0.0
        m = transform_mesh(prism_mesh(poly, zp - t / 2, zp + t / 2), frame)
        meshes.append(m)
        tris.append(m[0][m[1]])
    return meshes, caps, tris


def _ground_parts(joints, Dinv: np.ndarray, planar: bool, w: float, z0: float, z1: float):
    """Mounts of a ground body: a rail along each sliding joint, a pedestal under every other joint."""
    meshes: list[Mesh] = []
    for j in joints:
        c = Dinv[:3, :3] @ np.asarray(j.at, float) + Dinv[:3, 3]
        axis = Dinv[:3, :3] @ np.asarray(j.axis_vector(), float)
        sliding = j.type in ("prismatic", "slot", "cylindrical")
        if planar:
            if sliding:
                a = axis[:2] / max(np.linalg.norm(axis[:2]), 1e-12)
                meshes.append(stadium_mesh(c - 5.0 * w * np.append(a, 0), c + 5.0 * w * np.append(a, 0), 0.22 * w, z0, z1))
            else:
                tri = c[:2] + w * np.array([[-1.15, -2.1], [1.15, -2.1], [0.0, 0.0]])
                meshes.append(prism_mesh(tri, z0, z1))
                meshes.append(box_mesh((3.4 * w, 0.4 * w, z1 - z0), (c[0], c[1] - 2.3 * w, 0.5 * (z0 + z1))))
        else:
            if sliding:
                L = 10.0 * w
                meshes.append(transform_mesh(cylinder_mesh(0.2 * w, L, 12), frame_from_axis(c, axis)))
            else:
                meshes.append(transform_mesh(cylinder_mesh(0.16 * w, 1.6 * w, 12, z0=0.0), frame_from_axis(c, (0.0, 0.0, -1.0))))
                meshes.append(box_mesh((2.6 * w, 2.6 * w, 0.35 * w), c - np.array([0.0, 0.0, 1.75 * w])))
    tris = [m[0][m[1]] for m in meshes]
    return meshes, [], tris


def _outline_edges(pts: np.ndarray, planar: bool):
    """Bars along the convex hull of 3+ joint points, and the plate polygon (2-D outline, frame) when they are flat."""
    n = len(pts)
    if planar:
        hull = _hull_2d(pts[:, :2])
        if len(hull) < 3:  # collinear: bars between neighbours along the line
            d = pts[:, :2] - pts[0, :2]
            axis = d[np.argmax(np.linalg.norm(d, axis=1))]
            order = np.argsort(d @ axis)
            return [(int(order[i]), int(order[i + 1])) for i in range(n - 1)], None
        edges = [(int(hull[i]), int(hull[(i + 1) % len(hull)])) for i in range(len(hull))]
        return edges, (pts[hull, :2], np.eye(4))
    c = pts.mean(axis=0)
    _, s, vt = np.linalg.svd(pts - c)
    size = max(s[0], 1e-12)
    if s[1] < 1e-6 * size:  # collinear in space
        order = np.argsort((pts - c) @ vt[0])
        return [(int(order[i]), int(order[i + 1])) for i in range(n - 1)], None
    if s[2] < 1e-6 * size:  # coplanar: hull in the fitted plane
        frame = np.eye(4)
        frame[:3, :3] = np.column_stack([vt[0], vt[1], np.cross(vt[0], vt[1])])
        frame[:3, 3] = c
        uv = (pts - c) @ vt[:2].T
        hull = _hull_2d(uv)
        edges = [(int(hull[i]), int(hull[(i + 1) % len(hull)])) for i in range(len(hull))]
        return edges, (uv[hull], frame)
    # a solid spread of joints: bars along the edges of its 3-D hull
    from scipy.spatial import ConvexHull

    simplices = ConvexHull(pts).simplices
    edges = sorted({tuple(sorted((int(a), int(b)))) for tri in simplices for a, b in ((tri[0], tri[1]), (tri[1], tri[2]), (tri[2], tri[0]))})
    return edges, None


def _span(lo: float, hi: float) -> tuple[float, float]:
    return min(lo, hi), max(lo, hi)


# (body, location) -> (vertices, faces, bounded) of body.shape, or None; a function of the shape alone (bodies of the
# same shape share its result), raising a LinkwrightError located at `location` for a shape it rejects
ShapeMesher = Callable[[Body, str], "tuple[np.ndarray, np.ndarray, bool] | None"]


_STICKY_SCALE = 1.25  # the link width is kept while the ideal one (3.5 % of the diagonal) stays within this factor


def _pose_key(b: Body) -> tuple | None:
    return None if b.pose is None else (tuple(b.pose.position), tuple(b.pose.orientation))


class SceneBuilder:
    """Builds the Scene of successive versions of one document, re-meshing only the parts whose inputs changed.

    Each body mesh, joint glyph and point sphere is cached under a key of everything it depends on (the model values,
    the link width, the planar layer); an unchanged part gets the *same* mesh object back, which is how the viewport
    knows it need not re-upload it. So that one edit does not re-mesh everything, the drawing scale is sticky (kept
    while the ideal width is within a factor of 1.25) and planar layers are kept where they still separate joined links.
    """

    def __init__(self, shape_mesher: "ShapeMesher | None" = None) -> None:
        self.shape_mesher = shape_mesher
        self.reset()

    def reset(self) -> None:
        """Forget the scale, the layers and every cached mesh (the next build is from scratch)."""
        self._width: float | None = None
        self._layers: dict[str, int] = {}
        self._names: list[str] = []  # body names of the last build (to recognise a rename)
        self._top = 0  # the layer count the stack is centred for
        self._shapes: dict = {}  # shape_key -> (vertices, faces, bounded), "none" or ("error", where, message)
        self._bodies: dict = {}  # body key -> (mesh, capsules, triangles)
        # the world box (lo, hi) a run's bodies travelled through (Viewport3D.fit_motion): a floor's or wall's patch
        # covers it too, so a box that slid a metre is not drawn beyond the edge of its floor
        self.motion_extent: tuple[np.ndarray, np.ndarray] | None = None
        self._joints: dict = {}  # joint key -> local 4x4
        self._glyphs: dict = {}  # (type, width, span) -> mesh
        self._spheres: dict = {}  # width -> point mesh
        self._design_cache: dict = {}  # pose key -> read-only design 4x4
        self.meshed = 0  # body meshes and glyphs computed by the last build (cache misses)
        self.shapes_meshed = 0  # shapes the last build gave the shape mesher (one per shape definition not cached)

    def _shape(self, b: Body, shapes: dict):
        """(key, mesh) of b's shape: (vertices, faces, bounded), "none", or why it could not be meshed, as ("error",
        where in the shape, message), without the body's location (build locates it at each body that has it).
        Meshed once per shape definition (identical shapes, 3,000 equal spheres, share one mesh; the key is
        shape_identity, core.model.shape_key): from `shapes`, the meshes of this build so far, or the last build's."""
        key = shape_identity(b.shape)
        got = shapes.get(key) or self._shapes.get(key)  # (this build's, else the last build's)
        if got is None:
            try:
                out = self.shape_mesher(b, "shape")
                got = None if out is None else (np.asarray(out[0], float), np.asarray(out[1], int), bool(out[2]))
            except LinkwrightError as exc:  # a shape the library rejects is drawn as a link; the viewport never fails
                where = exc.location[len("shape"):] if exc.location.startswith("shape") else ""
                got = ("error", where, exc.message)
            except Exception as exc:
                got = ("error", "", str(exc))
            got = got if got is not None else "none"
            self.shapes_meshed += 1
        return key, got

    def build(self, mech: Mechanism) -> Scene:
        """The drawing of `mech` in its design configuration (meshes in body frames, sized to the mechanism)."""
        planar = mech.space == "planar"
        poses = {b.name: _pose_key(b) for b in mech.bodies}
        dcache = {}
        for b in mech.bodies:  # design poses, shared per distinct pose and read-only (most bodies: the identity)
            k = poses[b.name]
            if k not in dcache:
                D = self._design_cache.get(k)
                if D is None:
                    D = design_pose(b)
                    D.flags.writeable = False
                dcache[k] = D
        self._design_cache = dcache
        designs = {b.name: dcache[poses[b.name]] for b in mech.bodies}
        jidx: dict[str, list[int]] = {b.name: [] for b in mech.bodies}
        for i, j in enumerate(mech.joints):
            for n in dict.fromkeys(j.bodies):
                if n in jidx:
                    jidx[n].append(i)
        problems: list[str] = []
        shaped: dict[str, tuple[np.ndarray, np.ndarray, bool]] = {}
        shape_ids: dict[str, object] = {}  # body -> its shape's identity
        shapes: dict = {}
        self.shapes_meshed = 0
        if self.shape_mesher is not None:
            for bi, b in enumerate(mech.bodies):
                if b.shape is not None:
                    key, got = self._shape(b, shapes)
                    shapes[key] = got
                    shape_ids[b.name] = key
                    if got == "none":
                        pass
                    elif isinstance(got[0], str):  # ("error", where, message)
                        problems.append(f"bodies[{bi}].shape{got[1]}: {got[2]}")
                    else:
                        shaped[b.name] = got
        self._shapes = shapes

        world = [np.array([j.at for j in mech.joints], float).reshape(-1, 3)]
        world += [designs[b.name][:3, :3] @ np.asarray(p, float) + designs[b.name][:3, 3] for b in mech.bodies for p in b.points.values()]
        world += [designs[b.name][:3, 3] for b in mech.bodies if not jidx[b.name] and b.name not in shaped]
        # (each shape's vertices as one array: a list of their rows took 0.5 s for 3,000 spheres)
        solid = [v @ designs[name][:3, :3].T + designs[name][:3, 3] for name, (v, _f, bounded) in shaped.items()
                 if bounded and len(v)]
        pts = np.concatenate([world[0], np.array(world[1:]).reshape(-1, 3)] + solid)
        lo, hi = (pts.min(axis=0), pts.max(axis=0)) if len(pts) else (np.zeros(3), np.zeros(3))
        L = float(np.linalg.norm(hi - lo)) or 1.0
        bounds = _plane_bounds(mech, designs, shaped, pts, L)
        plo, phi = lo, hi  # the box a halfspace's patch is drawn around: the design's and a run's motion
        if self.motion_extent is not None:
            plo, phi = np.minimum(lo, self.motion_extent[0]), np.maximum(hi, self.motion_extent[1])
        PL = float(np.linalg.norm(phi - plo)) or 1.0
        ideal = 0.035 * L  # link width: readable at "fit" zoom for anything from a watch to a crane
        if self._width is None or not (1 / _STICKY_SCALE <= ideal / self._width <= _STICKY_SCALE):
            self._width = ideal
        w = self._width
        tol = 1e-6 * w / 0.035
        thick = 0.38 * w
        pitch = 1.25 * thick  # planar layer spacing along z
        if planar:
            keep = dict(self._layers)
            names = [b.name for b in mech.bodies]
            for i, (old, new) in enumerate(zip(self._names, names)):
                if new not in keep and old not in names and old in self._layers:
                    keep[new] = self._layers[old]  # a renamed body (same place in the list) keeps its layer
            layers = _colouring(mech, keep)
            top = max(layers.values(), default=0)
            if top > self._top or not self._layers:
                self._top = top
            self._layers = layers
        else:
            layers = {b.name: 0 for b in mech.bodies}
        self._names = [b.name for b in mech.bodies]
        zof = {n: (k - 0.5 * self._top) * pitch for n, k in layers.items()}  # the stack centred on z = 0
        meshed = 0

        bodies: list[BodyGeometry] = []
        cache: dict = {}
        for b in mech.bodies:
            D = designs[b.name]
            js = [mech.joints[i] for i in jidx[b.name]]
            z = zof[b.name]
            if b.name in shaped:
                v, f, bounded = shaped[b.name]
                if bounded and js and not b.ground:  # a shaped link: its shape and the bars to its joints
                    key = ("shape", shape_ids[b.name], planar, w, z, _pose_key(b), tuple(j.at for j in js))
                elif bounded:
                    key = ("shape", shape_ids[b.name])
                else:  # an unbounded shape (a halfspace): its plane drawn as a square sized to the scene
                    key = ("plane", shape_ids[b.name], _pose_key(b), tuple(plo), tuple(phi), _planes_key(bounds[b.name]))
            elif b.ground and js:
                key = ("ground", planar, w, z, _pose_key(b), tuple((j.type, j.at, j.axis) for j in js))
            elif js:
                slide = next((j.axis_vector() for j in js if j.type in ("prismatic", "slot")), None)
                key = ("link", planar, w, z, _pose_key(b), tuple(j.at for j in js), tuple(b.points.values()), slide)
            else:
                key = ("block", planar, w, z)
            got = self._bodies.get(key) or cache.get(key)
            if got is None:
                mesh, capsules, triangles = self._body_parts(b, D, js, shaped.get(b.name), planar, w, tol, z, thick, plo,
                                                             phi, PL, bounds.get(b.name))
                got = (mesh, capsules, np.full(len(capsules), 0.5 * w), triangles)
                meshed += 1
            cache[key] = got
            mesh, capsules, radii, triangles = got
            bodies.append(BodyGeometry(
                b.name, b.ground, D, mesh, capsules=capsules, radii=radii, triangles=triangles,
                from_shape=b.name in shaped, unbounded=b.name in shaped and not shaped[b.name][2],
            ))
        self._bodies = cache

        joints: list[JointGeometry] = []
        jcache: dict = {}
        gcache: dict = {}
        for j in mech.joints:
            b0 = j.bodies[0]
            span = 0.0
            z0 = z1 = 0.0
            if planar:
                z0, z1 = _span(zof[j.bodies[0]], zof[j.bodies[1]])
                span = (z1 - z0) + 2.2 * thick  # through both links and out a little on each side
            gkey = (j.type, w, span)
            mesh = self._glyphs.get(gkey) or gcache.get(gkey)
            if mesh is None:
                mesh = _glyph_mesh(j.type, w, span)
                meshed += 1
            gcache[gkey] = mesh
            jkey = (j.type, j.at, j.axis, j.axis2, poses[b0], z0, z1)
            local = self._joints.get(jkey)
            if local is None:
                local = jcache.get(jkey)
            if local is None:
                F = joint_design_frame(j)
                if planar:
                    F = F.copy()
                    F[2, 3] += 0.5 * (z0 + z1)
                local = inverse(designs[b0]) @ F
            jcache[jkey] = local
            row = JOINT_GLYPHS.get(j.type, JOINT_GLYPHS["fixed"])
            joints.append(JointGeometry(j.name, j.type, b0, local, mesh, row["color"]))
        self._joints, self._glyphs = jcache, gcache

        sphere = self._spheres.get(w) or sphere_mesh(0.42 * w, rows=10, cols=16)
        self._spheres = {w: sphere}
        points: list[PointGeometry] = []
        for b in mech.bodies:
            for pname, p in b.points.items():
                pos = np.asarray(p, float).copy()
                if planar:
                    pos[2] += zof[b.name] + 0.7 * thick  # just above its link so it is not buried in it
                points.append(PointGeometry(pname, b.name, pos, sphere))
        self.meshed = meshed
        return Scene(bodies, joints, points, w, (lo, hi), planar, problems)

    def _body_parts(self, b: Body, D, js, shape, planar, w, tol, z, thick, lo, hi, L, bounds=None):
        """(mesh, pick capsules, pick triangles) of one body in its frame; lo, hi, L: the box (and its diagonal) a
        halfspace's patch is drawn around; bounds: a halfspace's clipping planes (_plane_bounds, world frame)."""
        Dinv = inverse(D)
        if shape is not None:
            v, f, bounded = shape
            if not bounded:
                centre = 0.5 * (lo + hi)
                # with other planes to end at (a bin's floor and walls), the square reaches them, then is cut there
                reach = min(max((abs(float(n @ centre) - d) for n, d in bounds or ()), default=0.0), 10.0 * L)
                v, f = _plane_patch_near(v, f, Dinv[:3, :3] @ centre + Dinv[:3, 3], 1.6 * L + 2.0 * reach)
                if bounds:  # (clipped in the world frame, then back to the body's)
                    v, f = _clip_patch(v @ D[:3, :3].T + D[:3, 3], bounds)
                    v = (v - D[:3, 3]) @ D[:3, :3]
            if not (bounded and js and not b.ground):
                return (v, f), np.zeros((0, 2, 3)), v[f]
            # a shaped body a joint attaches (a pendulum's bob, a coupler carrying a plate): its shape, and bars from
            # its origin to each of its joints, so the mechanism reads as one (the bob hangs from its pin)
            local = np.array([Dinv[:3, :3] @ np.asarray(j.at, float) + Dinv[:3, 3] for j in js]).reshape(-1, 3)
            local = np.concatenate([np.zeros((1, 3)), local])
            if len(_unique_points(local, tol)) < 2:  # (its joints at its origin: the shape alone)
                return (v, f), np.zeros((0, 2, 3)), v[f]
            meshes, caps, tris = _link_parts(local, planar, w, z - thick / 2, z + thick / 2, tol, None)
            capsules = np.array([[p, q] for p, q in caps]).reshape(-1, 2, 3)
            return merge_meshes([(v, f)] + list(meshes)), capsules, np.concatenate([v[f]] + list(tris))
        if b.ground and js:
            # the frame is drawn as a mount at each of its joints, not as a plate spanning all pivots
            meshes, caps, tris = _ground_parts(js, Dinv, planar, w, z - thick / 2, z + thick / 2)
        else:
            local = np.array([Dinv[:3, :3] @ np.asarray(j.at, float) + Dinv[:3, 3] for j in js]).reshape(-1, 3)
            if len(local):
                # named points belong to the link too (a coupler point makes the coupler a triangle, as textbooks draw it)
                local = np.concatenate([local, np.array(list(b.points.values()), float).reshape(-1, 3)])
            else:
                local = np.zeros((1, 3))
            slide = next((np.asarray(j.axis_vector(), float) for j in js if j.type in ("prismatic", "slot")), None)
            meshes, caps, tris = _link_parts(local, planar, w, z - thick / 2, z + thick / 2, tol, slide)
        capsules = np.array([[p, q] for p, q in caps]).reshape(-1, 2, 3)
        return merge_meshes(meshes), capsules, np.concatenate(tris) if tris else np.zeros((0, 3, 3))


def build_scene(mech: Mechanism, shape_mesher: ShapeMesher | None = None) -> Scene:
    """The drawing of `mech` in its design configuration (meshes in body frames, sized to the mechanism)."""
    return SceneBuilder(shape_mesher).build(mech)


def default_shape_mesher(resolution: int = 32) -> ShapeMesher | None:
    """A mesher using core.shapes when that package is importable (None otherwise)."""
    try:
        from core.shapes import parse_shape
    except Exception:  # the shape library is optional for drawing: without it shapes draw as links
        return None

    def mesher(body: Body, location: str):
        shape = parse_shape(body.shape, location)
        v, f = shape.mesh(resolution)
        return np.asarray(v, float), np.asarray(f, int), bool(getattr(shape, "bounded", True))

    return mesher


_WALL_MARGIN = 0.1  # a wall's patch ends this fraction of the scene's size above its highest bounded point


def _plane_bounds(mech: Mechanism, designs: dict, shaped: dict, pts: np.ndarray, L: float) -> dict:
    """For each halfspace body, the world planes (n, d) that clip its drawn patch to {x : n . x <= d}: the other
    halfspaces' solids are cut away (a bin's walls end at its floor and at each other), and, with gravity, the patch
    ends _WALL_MARGIN L above the highest point of the bounded bodies (walls, not tall slabs).  A floor (its normal
    along up) is not cut by that height."""
    planes = {}
    for name, (v, f, bounded) in shaped.items():
        if bounded or not len(f):
            continue
        D = designs[name]
        tri = v[f[0]] @ D[:3, :3].T + D[:3, 3]
        n = np.cross(tri[1] - tri[0], tri[2] - tri[0])  # the patch faces out of the solid (core.shapes.plane_patch)
        size = float(np.linalg.norm(n))
        if size == 0.0:
            continue
        n = n / size
        planes[name] = (n, float(n @ tri[0]))
    u = mech.up_direction()
    up = None if u is None else np.asarray(u, float)
    bounds = {}
    for name, (n, d) in planes.items():
        # keep the part outside every other halfspace's solid: -n_o . x <= -d_o
        cut = [(-no, -do) for other, (no, do) in planes.items() if other != name and abs(no @ n) < 1.0 - 1e-9]
        if up is not None and len(pts) and abs(up @ n) < 1.0 - 1e-9:
            cut.append((up, float(np.max(pts @ up)) + _WALL_MARGIN * L))
        bounds[name] = cut
    return bounds


def _planes_key(bounds: list) -> tuple:
    """A hashable form of clipping planes (cache keys)."""
    return tuple((tuple(np.round(n, 12)), round(d, 12)) for n, d in bounds)


def _clip_patch(poly: np.ndarray, bounds: list) -> Mesh:
    """The convex polygon poly (k, 3, in order) clipped to every {x : n . x <= d} of bounds (Sutherland-Hodgman),
    as a triangle fan; the polygon unclipped when the cuts would leave nothing (a plane wholly inside another
    halfspace is still drawn)."""
    out = [np.asarray(p, float) for p in poly]
    for n, d in bounds:
        if not out:
            break
        kept = []
        for i, p in enumerate(out):
            q = out[(i + 1) % len(out)]
            sp, sq = float(n @ p) - d, float(n @ q) - d
            if sp <= 0.0:
                kept.append(p)
            if (sp < 0.0) != (sq < 0.0) and sp != sq:
                kept.append(p + (q - p) * (sp / (sp - sq)))
        out = kept
    if len(out) < 3:
        out = [np.asarray(p, float) for p in poly]
    v = np.array(out)
    f = np.array([[0, i, i + 1] for i in range(1, len(v) - 1)])
    return v, f


def _plane_patch_near(v: np.ndarray, f: np.ndarray, centre: np.ndarray, size: float) -> Mesh:
    """A square of side `size` in the plane of the flat mesh (v, f), centred where `centre` projects onto it."""
    tri = v[f[0]]
    n = np.cross(tri[1] - tri[0], tri[2] - tri[0])
    n = n / np.linalg.norm(n)
    c = centre - n * ((centre - tri[0]) @ n)
    T = frame_from_axis(c, n)
    h = size / 2
    quad = np.array([[-h, -h, 0.0], [h, -h, 0.0], [h, h, 0.0], [-h, h, 0.0]]) @ T[:3, :3].T + c
    return quad, np.array([[0, 1, 2], [0, 2, 3]])


# ---- ray casting (picking) ----------------------------------------------------------------------------------------
def ray_triangles(o: np.ndarray, d: np.ndarray, tri: np.ndarray) -> float:
    """Nearest ray parameter t >= 0 at which o + t d hits one of the triangles (T, 3, 3) (Möller–Trumbore); inf if none."""
    if len(tri) == 0:
        return math.inf
    e1 = tri[:, 1] - tri[:, 0]
    e2 = tri[:, 2] - tri[:, 0]
    p = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, p)
    ok = np.abs(det) > 1e-14
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    s = o - tri[:, 0]
    u = np.einsum("ij,ij->i", s, p) * inv
    q = np.cross(s, e1)
    v = (q @ d) * inv
    t = np.einsum("ij,ij->i", e2, q) * inv
    hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t >= 0)
    return float(t[hit].min()) if hit.any() else math.inf


def ray_capsules(o: np.ndarray, d: np.ndarray, seg: np.ndarray, r: np.ndarray) -> float:
    """Ray parameter of the closest approach to the nearest segment (K, 2, 3) passing within its radius; inf if none."""
    if len(seg) == 0:
        return math.inf
    a, b = seg[:, 0], seg[:, 1]
    u = b - a
    w0 = o - a
    dd = d @ d
    uu = np.einsum("ij,ij->i", u, u)
    du = u @ d
    dw = w0 @ d
    uw = np.einsum("ij,ij->i", u, w0)
    den = dd * uu - du * du
    # closest points of the two lines, then clamp the segment parameter and re-project onto the ray
    sc = np.where(den > 1e-14 * np.maximum(uu, 1e-300), (dd * uw - du * dw) / np.where(den > 0, den, 1.0), 0.0)
    sc = np.where(uu > 0, np.clip(sc, 0.0, 1.0), 0.0)
    pc = a + sc[:, None] * u
    tc = np.maximum(((pc - o) @ d) / dd, 0.0)
    dist = np.linalg.norm(o + tc[:, None] * d - pc, axis=1)
    hit = dist <= r
    if not hit.any():
        return math.inf
    # back off to the capsule surface along the ray (the depth order of hits is what picking needs)
    back = np.sqrt(np.maximum(r**2 - dist**2, 0.0)) / math.sqrt(dd)
    return float(np.maximum(tc - back, 0.0)[hit].min())


def ray_spheres(o: np.ndarray, d: np.ndarray, centres: np.ndarray, r: np.ndarray) -> float:
    """Nearest ray parameter t >= 0 at which o + t d enters one of the spheres; inf if none."""
    if len(centres) == 0:
        return math.inf
    oc = o - centres
    a = d @ d
    b = oc @ d
    c = np.einsum("ij,ij->i", oc, oc) - r**2
    disc = b * b - a * c
    ok = disc >= 0
    sq = np.sqrt(np.where(ok, disc, 0.0))
    t0, t1 = (-b - sq) / a, (-b + sq) / a
    t = np.where(t0 >= 0, t0, t1)
    hit = ok & (t >= 0)
    return float(t[hit].min()) if hit.any() else math.inf


def known_joint_types() -> list[str]:
    """Joint types with a glyph row (every type of core.joints)."""
    return [t for t in JOINT_TYPES if t in JOINT_GLYPHS]
