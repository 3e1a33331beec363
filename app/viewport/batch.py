"""Many rigid parts drawn as one GL mesh item: one vertex buffer, one draw call, however many bodies.

A part is a mesh in its own frame carried by one of several frames (a body's pose); a part may sit in that frame at a
fixed local transform (a joint glyph, a named point's sphere), baked into its vertices once. Moving the frames
recomputes the world vertices and normals of every part in numpy, per run of parts with the same vertex count (one
batched matrix product: 3,000 equal spheres are one product of their 482 vertices by 3,000 rotations), and uploads
them; faces and colours are uploaded only when they change. pyqtgraph drew one item per body: each item's paint is
some Python and a dozen GL calls (0.2-0.3 ms), which at a few thousand bodies was most of every frame.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pyqtgraph.opengl as gl
from OpenGL import GL
from pyqtgraph.opengl.items.GLMeshItem import DirtyFlag

__all__ = ["MeshBatch", "vertex_normals"]

_NORMALS: "OrderedDict[int, tuple]" = OrderedDict()  # id(mesh) -> (mesh, its vertex normals): the newest used
_NORMALS_SIZE = 4096


def vertex_normals(v: np.ndarray, f: np.ndarray) -> np.ndarray:
    """(N, 3) float32 unit normals of the vertices `v` of the faces `f`: the sum of the (area-weighted) normals of the
    faces around each vertex, normalised; (0, 0, 0) where that sum is zero (a vertex of degenerate faces only)."""
    v = np.asarray(v, np.float64)
    f = np.asarray(f, np.int64)
    out = np.zeros((len(v), 3))
    if len(f):
        p = v[f]  # (F, 3, 3)
        fn = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
        for k in range(3):
            np.add.at(out, f[:, k], fn)
    norm = np.sqrt((out * out).sum(axis=1))
    ok = norm > 0.0
    out[ok] /= norm[ok, None]
    return out.astype(np.float32)


def _normals(mesh) -> np.ndarray:
    """The vertex normals of a mesh object, computed once per object (the scene builder hands back the same object for
    an unchanged part, and shares one mesh among equal shapes; the cache holds the mesh, so its id is not reused)."""
    hit = _NORMALS.get(id(mesh))
    if hit is not None and hit[0] is mesh:
        _NORMALS.move_to_end(id(mesh))
        return hit[1]
    n = vertex_normals(mesh[0], mesh[1])
    _NORMALS[id(mesh)] = (mesh, n)
    if len(_NORMALS) > _NORMALS_SIZE:
        _NORMALS.popitem(last=False)
    return n


def _rgba8(colours: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(np.asarray(colours, float) * 255.0), 0, 255).astype(np.uint8)


class MeshBatch(gl.GLMeshItem):
    """One GL mesh item drawing many parts (see the module). `set_parts` lays the parts out (an edit of the drawing),
    `set_frames` moves them (a pose; computed at the next paint or query), `set_colours` colours each part.

    Parts are keyed (any hashable: ("body", name), ("joint", name)); `vertices(key)` is a part's world vertices as
    drawn. `uploads` counts what was sent to the GL buffers, by kind (positions, normals, colours, faces)."""

    def __init__(self, shader, glOptions="opaque", depth_writes: bool = True) -> None:
        super().__init__(smooth=True, computeNormals=True, shader=shader, glOptions=glOptions)
        self._depth_writes = depth_writes  # False: the options turn depth writes off; paint turns them back on
        self._dirty = DirtyFlag(0)
        self.uploads = {"positions": 0, "normals": 0, "colours": 0, "faces": 0}
        self.keys: list = []  # parts in buffer order
        self._where: dict = {}  # key -> its index in self.keys
        self._frame_of = np.zeros(0, np.int64)  # per part (buffer order): its frame's row
        self._counts = np.zeros(0, np.int64)  # per part: vertex count
        self._starts = np.zeros(1, np.int64)  # per part: first vertex; last entry: the total
        self._runs: list = []  # (first part, end part, local vertices (k | 1, V, 3), local normals, first vertex)
        self._frames = np.zeros((0, 4, 4))
        self._placed: np.ndarray | None = None  # the frames the vertices were computed for
        self._colours = np.zeros((0, 4), np.uint8)
        self._layout: tuple = ()
        self.vertexes = self.normals = self.colors = self.faces = None

    # ---- layout ---------------------------------------------------------------------------------------------------
    def set_parts(self, parts: list) -> bool:
        """Lay out parts: (key, frame row, mesh (vertices, faces), local 4x4 or None) each. Nothing is done when the
        layout is the one drawn (same keys, rows and mesh objects, equal locals); returns whether it changed."""
        layout = tuple((k, r, id(m), None if L is None else np.asarray(L, float).tobytes()) for k, r, m, L in parts)
        if layout == self._layout:
            return False
        self._meshes = [m for _k, _r, m, _L in parts]  # (held: the layout compares their ids)
        self._layout = layout
        parts = [p for p in parts if len(p[2][0]) and len(p[2][1])]
        by_count: dict[int, list] = {}
        for p in parts:
            by_count.setdefault(len(p[2][0]), []).append(p)
        order = [p for v in sorted(by_count) for p in by_count[v]]
        self.keys = [p[0] for p in order]
        self._where = {k: i for i, k in enumerate(self.keys)}
        self._frame_of = np.array([p[1] for p in order], np.int64)
        self._counts = np.array([len(p[2][0]) for p in order], np.int64)
        self._starts = np.concatenate([[0], np.cumsum(self._counts)]).astype(np.int64)
        self._runs, faces, first = [], [], 0
        for count in sorted(by_count):
            run = by_count[count]
            k = len(run)
            meshes = [p[2] for p in run]
            starts = self._starts[first:first + k]
            if all(m is meshes[0] for m in meshes) and all(p[3] is None for p in run):
                # one mesh for the whole run (equal shapes): its vertices broadcast against every frame
                v = np.asarray(meshes[0][0], np.float32)[None]
                n = _normals(meshes[0])[None]
                faces.append((np.asarray(meshes[0][1], np.uint32)[None] + starts[:, None, None].astype(np.uint32))
                             .reshape(-1, 3))
            else:
                v = np.stack([np.asarray(m[0], np.float64) for m in meshes])
                n = np.stack([_normals(m) for m in meshes]).astype(np.float64)
                local = [i for i, p in enumerate(run) if p[3] is not None]
                if local:  # a part fixed in its frame: its vertices and normals in the frame once
                    L = np.stack([np.asarray(run[i][3], float) for i in local])
                    v[local] = np.matmul(v[local], L[:, :3, :3].transpose(0, 2, 1)) + L[:, None, :3, 3]
                    n[local] = np.matmul(n[local], L[:, :3, :3].transpose(0, 2, 1))
                v, n = v.astype(np.float32), n.astype(np.float32)
                faces += [np.asarray(m[1], np.uint32) + np.uint32(s) for m, s in zip(meshes, starts)]
            self._runs.append((first, first + k, v, n, int(self._starts[first])))
            first += k
        total = int(self._starts[-1])
        if total:
            self.vertexes = np.zeros((total, 3), np.float32)
            self.normals = np.zeros((total, 3), np.float32)
            self.faces = np.ascontiguousarray(np.concatenate(faces), np.uint32)
            self.colors = np.zeros((total, 4), np.uint8)
        else:
            self.vertexes = self.normals = self.faces = self.colors = None
        self._colours = np.zeros((len(self.keys), 4), np.uint8)
        self._placed = None
        self._dirty |= DirtyFlag.FACES | DirtyFlag.COLOR | DirtyFlag.POSITION | DirtyFlag.NORMAL
        self.update()
        return True

    def set_frames(self, frames: np.ndarray) -> None:
        """The (rows, 4, 4) world transforms of the frames the parts are carried by (kept by reference: the caller
        sets new ones, or changes them in place and calls this again); the vertices follow at the next paint."""
        self._frames = frames
        self.update()

    def set_colours(self, colours: dict) -> None:
        """RGBA floats by part key (a part left out keeps its colour); uploads only when a colour changes."""
        if not self.keys:
            return
        new = self._colours.copy()
        rows = [self._where[k] for k in colours if k in self._where]
        if rows:
            new[rows] = _rgba8([colours[k] for k in colours if k in self._where])
        if np.array_equal(new, self._colours) and not (DirtyFlag.COLOR & self._dirty):
            return
        self._colours = new
        self.colors = np.repeat(new, self._counts, axis=0)
        self._dirty |= DirtyFlag.COLOR
        self.update()

    def colour(self, key) -> tuple | None:
        """The RGBA (0-1, as uploaded: 8 bits a channel) a part is drawn in, None for no such part."""
        i = self._where.get(key)
        return None if i is None else tuple(float(c) / 255.0 for c in self._colours[i])

    def vertices(self, key) -> np.ndarray | None:
        """The world vertices of a part as drawn (float32), None for no such part."""
        i = self._where.get(key)
        if i is None:
            return None
        self.place()
        return self.vertexes[self._starts[i]:self._starts[i + 1]].copy()

    # ---- the per-frame work ---------------------------------------------------------------------------------------
    def place(self) -> None:
        """Compute the world vertices and normals of every part from the frames, if they changed since."""
        if self.vertexes is None or (self._placed is not None and np.array_equal(self._placed, self._frames)):
            return
        F = np.asarray(self._frames, float)[self._frame_of]
        R = F[:, :3, :3].transpose(0, 2, 1).astype(np.float32)  # (rows act on row vectors: v @ R^T)
        t = F[:, :3, 3].astype(np.float32)
        for a, b, v, n, s in self._runs:
            e = s + int(self._starts[b] - self._starts[a])
            k, m = b - a, v.shape[1]
            pos = self.vertexes[s:e].reshape(k, m, 3)
            np.matmul(v, R[a:b], out=pos)
            pos += t[a:b, None, :]
            np.matmul(n, R[a:b], out=self.normals[s:e].reshape(k, m, 3))
        self._placed = np.array(self._frames, float, copy=True)
        self._dirty |= DirtyFlag.POSITION | DirtyFlag.NORMAL

    def parseMeshData(self) -> DirtyFlag:
        """What to upload before this paint (GLMeshItem.paint calls it; the item's arrays are set above)."""
        self.place()
        dirty, self._dirty = self._dirty, DirtyFlag(0)
        for flag, name in ((DirtyFlag.POSITION, "positions"), (DirtyFlag.NORMAL, "normals"),
                           (DirtyFlag.COLOR, "colours"), (DirtyFlag.FACES, "faces")):
            if flag & dirty:
                self.uploads[name] += 1
        return dirty

    def meshDataChanged(self) -> None:  # (GLMeshItem's: it would drop the arrays; a batch has no MeshData)
        self.update()

    def paint(self) -> None:
        if self.vertexes is None and not self._dirty:
            return
        try:
            super().paint()
        finally:
            if not self._depth_writes:
                GL.glDepthMask(GL.GL_TRUE)  # (restored for the items drawn after it and the next frame's depth clear)
