"""The 3D viewport: a pyqtgraph GLViewWidget that listens to the document and the selection and draws the mechanism."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pyqtgraph.opengl as gl
from OpenGL import GL
from pyqtgraph.opengl import shaders
from pyqtgraph.opengl.GLGraphicsItem import GLOptions
from PySide6.QtCore import QPointF, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QColor, QFont, QQuaternion, QVector3D
from PySide6.QtWidgets import QDoubleSpinBox, QToolBar, QVBoxLayout, QWidget

from app.document import Document
from app.selection import Selection

from .camera import from_qmatrix, pixel_ray, to_qmatrix, up_axis, up_rotation, view_quaternion, views
from .batch import MeshBatch
from .geometry import (
    Scene, SceneBuilder, cylinder_mesh, default_shape_mesher, merge_meshes, ray_capsules, ray_triangles,
    sphere_mesh, transform_mesh,
)

__all__ = ["Viewport3D"]

# ---- look ----------------------------------------------------------------------------------------------------------
BACKGROUND = (232, 235, 239)
GRID = (120, 128, 140, 90)
PALETTE = {  # RGBA floats
    "body": (0.47, 0.62, 0.80, 1.0),  # soft steel blue
    "shape": (0.55, 0.70, 0.82, 1.0),
    "ground": (0.56, 0.57, 0.55, 1.0),  # warm grey
    "pin": (0.86, 0.66, 0.33, 1.0),  # brass
    "slide": (0.36, 0.64, 0.60, 1.0),  # teal
    "fixed": (0.40, 0.42, 0.46, 1.0),
    "point": (0.84, 0.33, 0.30, 1.0),
    "plane": (0.62, 0.64, 0.66, 0.22),  # halfspaces (floors, walls): translucent
    "selected": (1.00, 0.55, 0.10, 1.0),
    "highlight": (0.30, 0.80, 0.90, 1.0),
    "ghost": (0.95, 0.55, 0.20, 0.35),  # the comparison run's bodies: translucent orange
    "contact": (0.10, 0.10, 0.10, 1.0),
    "normal": (0.84, 0.18, 0.16, 1.0),  # normal force arrows
    "friction": (0.13, 0.45, 0.85, 1.0),  # friction force arrows
    "trail": (0.35, 0.35, 0.45, 0.85),
    "design_ghost": (0.55, 0.57, 0.60, 0.30),  # the design configuration: translucent grey
}
PATCH_MARKED_ALPHA = 0.35  # a selected or highlighted floor or wall: its colour at this opacity (translucent as "plane")
# Force arrows (force_scale, contact_arrows): at x 1 the run's typical weight (the median weight of its bodies moved by
# forces) is drawn ARROW_WEIGHT_SIZES of the typical body size long (the median of those bodies' sizes, each the
# longest edge of its drawing's bounding box): a resting body's weight reaches from its contact to about its middle.
# Arrows are proportional up to ARROW_KNEE_SIZES body sizes and grow logarithmically beyond (an impact's peak force is
# not drawn across the scene); the x box scales both.
ARROW_WEIGHT_SIZES = 0.5
ARROW_KNEE_SIZES = 3.0
ARROW_FALLBACK_SIZE = 0.05  # the body size, as a fraction of the scene's diagonal, when no body has a bounded drawing
FORCE_BOX_TIP = ("Length of the force arrows. At × 1 a typical weight (the median weight of the run's bodies moved by "
                 "forces) is drawn half a typical body size long (the median size of those bodies), so a resting "
                 "body's weight reaches about its middle; without gravity, the frame's median normal force is. "
                 f"Arrows are proportional to their forces up to {ARROW_KNEE_SIZES:g} body sizes (at × 1) and grow "
                 "logarithmically beyond, so an impact's peak is not drawn across the scene. × 2 doubles every arrow.")
TRAIL_TOLERANCE = 1e-4  # of the scene's diagonal: a trail's drawn polyline skips steps shorter than this (sub-pixel)
LABEL = (40, 44, 52)
_CLICK_SLOP = 4.0  # pixels a press may move and still count as a click

# Two-sided lambert with a head light and a fill light, in eye space: legible on any winding, never black.
_SHADER = shaders.ShaderProgram("linkwright_lit", [
    shaders.VertexShader("""
        uniform mat4 u_mvp;
        uniform mat3 u_normal;
        attribute vec4 a_position;
        attribute vec3 a_normal;
        attribute vec4 a_color;
        varying vec4 v_color;
        varying vec3 v_normal;
        void main() {
            v_normal = normalize(u_normal * a_normal);
            v_color = a_color;
            gl_Position = u_mvp * a_position;
        }
    """),
    shaders.FragmentShader("""
        #ifdef GL_ES
        precision mediump float;
        #endif
        varying vec4 v_color;
        varying vec3 v_normal;
        void main() {
            vec3 n = normalize(v_normal);
            float key = abs(dot(n, normalize(vec3(-0.35, 0.45, 1.0))));
            float fill = abs(dot(n, normalize(vec3(0.8, -0.3, 0.4))));
            float spec = pow(key, 24.0) * 0.18;
            vec3 rgb = v_color.rgb * (0.34 + 0.56 * key + 0.16 * fill) + vec3(spec);
            gl_FragColor = vec4(min(rgb, vec3(1.0)), v_color.a);
        }
    """),
])


# A floor's or wall's patch: blended and depth-tested (a body in front of it is not covered), but it writes no depth,
# so nothing drawn after it behind it (a trail, a ghost inside a bin) is hidden by it; drawn after the bodies, trails
# and ghosts (depth value 28) it tints whatever lies behind it, and overlapping walls blend in any order.
_PATCH_OPTIONS = {**GLOptions["translucent"], "glDepthMask": (GL.GL_FALSE,)}
_PATCH_DEPTH = 28  # after the opaque bodies (0), ghosts (20) and trails (25); before the contact overlay (30)
_GHOST_DEPTH = 20


class _GLView(gl.GLViewWidget):
    """GLViewWidget with a turntable orbit about the document's up axis, view-plane panning and click detection."""

    clicked = Signal(float, float, object)  # x, y (widget pixels), keyboard modifiers
    contextReady = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, rotationMethod="quaternion")
        self.up = np.array([0.0, 0.0, 1.0])
        self.renderer = ""
        self.before_paint = None  # called first in every paint (the viewport brings itself up to date)
        self._press: QPointF | None = None
        self._dragged = False

    def initializeGL(self) -> None:
        """Initialise items and record the renderer strings of the new context."""
        super().initializeGL()
        from OpenGL import GL

        def text(name: int) -> str:
            v = GL.glGetString(name)
            return v.decode(errors="replace") if isinstance(v, bytes) else str(v)

        self.renderer = f"{text(GL.GL_RENDERER)}; OpenGL {text(GL.GL_VERSION)}"
        self.contextReady.emit()

    def paintGL(self) -> None:
        """Paint the items, after any pending document update (so no frame shows a stale mechanism)."""
        if self.before_paint is not None:
            self.before_paint()
        super().paintGL()

    def orbit(self, azim: float, elev: float) -> None:
        """Turn the scene about the world up axis (azim, degrees) and tilt it about the screen's x axis (elev)."""
        q = self.opts["rotation"]
        turn = QQuaternion.fromAxisAndAngle(QVector3D(*self.up), -azim)
        tilt = QQuaternion.fromAxisAndAngle(QVector3D(1.0, 0.0, 0.0), elev)
        self.opts["rotation"] = (tilt * q * turn).normalized()
        self.update()

    def mousePressEvent(self, ev) -> None:
        self._press = ev.position()
        self._dragged = False
        super().mousePressEvent(ev)

    def mouseMoveEvent(self, ev) -> None:
        pos = ev.position()
        if self._press is not None and (pos - self._press).manhattanLength() > _CLICK_SLOP:
            self._dragged = True
        if not self._dragged:
            self.mousePos = pos  # no motion until the press becomes a drag (a click must not nudge the camera)
            return
        diff = pos - self.mousePos
        self.mousePos = pos
        buttons, mods = ev.buttons(), ev.modifiers()
        left = buttons == Qt.MouseButton.LeftButton
        if left and not (mods & (Qt.KeyboardModifier.ShiftModifier | Qt.KeyboardModifier.ControlModifier)):
            self.orbit(-diff.x(), diff.y())
        elif left or buttons in (Qt.MouseButton.MiddleButton, Qt.MouseButton.RightButton):
            self.pan(diff.x(), diff.y(), 0, relative="view")

    def mouseReleaseEvent(self, ev) -> None:
        if self._press is not None and not self._dragged and ev.button() == Qt.MouseButton.LeftButton:
            p = ev.position()
            self.clicked.emit(p.x(), p.y(), ev.modifiers())
        self._press = None
        self._dragged = False


class Viewport3D(QWidget):
    """The mechanism in 3D: observes the document (geometry, poses) and the selection (highlight colours)."""

    def __init__(self, document: Document, selection: Selection, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._doc = document
        self._sel = selection
        self.view = _GLView(self)
        self.view.setBackgroundColor(BACKGROUND)
        self.view.opts["fov"] = 35  # a long lens: little perspective distortion, as engineering views expect
        self._builder = SceneBuilder(default_shape_mesher())
        self._show_labels = True
        self._plain = False  # without_selection: no selection colours
        self._scene: Scene | None = None
        self._by_name: dict = {}
        self._space = "planar"
        self._up = None  # the document's up (against its gravity), None without gravity
        self._static: list = []  # grid and axis triad
        self._static_key: tuple | None = None  # what they were built for
        # Every body, joint glyph and point sphere is a part of one mesh item (MeshBatch: one draw call); floors and
        # walls of another (translucent patches); each ghost layer of its own. A body's pose is a row of _P.
        self._solid = MeshBatch(_SHADER, "opaque")
        self._patches = MeshBatch(_SHADER, _PATCH_OPTIONS, depth_writes=False)
        self._patches.setDepthValue(_PATCH_DEPTH)  # drawn after everything it may stand in front of
        self.view.addItem(self._solid)
        self.view.addItem(self._patches)
        self._row: dict[str, int] = {}  # body name -> its row of _P (the scene's order)
        self._P = np.zeros((0, 4, 4))  # world pose of every body's frame
        self._body_meshes: dict[str, tuple] = {}  # the scene mesh object each body is drawn with (same: unchanged)
        self._joint_state: dict[str, tuple] = {}  # joint -> (mesh, body, local) drawn
        self._points: dict[tuple[str, str], list] = {}  # (body, point) -> [label, label position in the body, world]
        self._designs: dict[str, np.ndarray] = {}
        self._fitted: tuple | None = None  # camera state after the last fit (re-fit on resize while unchanged)
        # several `changed` signals in one event-loop turn make one update, at the next turn or at the first query
        self._pending = False
        self._built: tuple[int, int] | None = None  # (id of the mechanism, its content_revision) of the last _update
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._sync)
        self.view.before_paint = self._sync

        bar = QToolBar(self)
        bar.setIconSize(bar.iconSize() * 0.75)
        for name, key, tip in (("Front", "front", "Front view (1)"), ("Top", "top", "Top view (7)"),
                               ("Iso", "iso", "Isometric view (0)"), ("Fit", "fit", "Frame all (F)")):
            act = QAction(name, self)
            act.setToolTip(tip)
            act.setShortcut(tip[tip.index("(") + 1])
            act.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            act.triggered.connect(lambda _=False, k=key: self.set_view(k))
            bar.addAction(act)
            self.addAction(act)
        self._labels_action = QAction("Labels", self, checkable=True, checked=True)
        self._labels_action.setToolTip("Show point labels")
        self._labels_action.toggled.connect(self.set_labels_visible)
        bar.addSeparator()
        bar.addAction(self._labels_action)
        # run overlays: contact points and force arrows, trails, the comparison run's ghost bodies
        self._forces_on, self._trails_on = True, True
        self._force_reference = 0.0  # N: the run's typical weight (0: unknown, arrows scaled by the forces shown)
        self._force_bodies: tuple[str, ...] | None = None  # the bodies whose median size is the arrows' length unit
        self._body_size_cache: tuple = (None, None, 0.0)  # (scene, bodies, size): _body_size
        self._force_factor = 1.0
        self._contact_data = (np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 3)))
        # a run's overlays name the bodies they belong to: those of bodies no longer in the document are not drawn
        # (a stale run's poses of a deleted body are not applied either: set_body_poses)
        self._contact_pairs: list[tuple[str, str]] | None = None  # per contact row: its pair's two bodies
        self._contact_shown = np.zeros(0, bool)  # which rows are drawn
        self._trail_data: dict[str, np.ndarray] = {}
        self._trail_owners: dict[str, tuple[str, str | None]] = {}  # trail -> (body, its named point or None)
        self._trail_key = None  # the caller's key of the trails' series (set_trails): same key, prefixes of one series
        self._trail_cache: _TrailCache | None = None  # the drawn polylines' segments, frame by frame
        # every trail is a part of one line item (one per trail cost a 300-body pile's paint 150 ms of GL calls)
        self._trail_item = gl.GLLinePlotItem(pos=np.zeros((2, 3)), mode="lines", color=PALETTE["trail"], width=1.5)
        self._trail_item.setGLOptions("translucent")
        self._trail_item.setDepthValue(25)
        self._trail_item.setVisible(False)
        self._ghosts: dict[str, MeshBatch] = {}  # layer -> its bodies' item
        self._ghost_poses: dict[str, dict[str, np.ndarray]] = {}
        self._design_on = False
        self._fit_extent: tuple | None = None  # scene extent at the last fit
        self._fit_extra = np.zeros((0, 3))  # world points framed as well (a run's motion, fit_motion)
        self._contact_item = gl.GLScatterPlotItem(pos=np.zeros((1, 3)), color=PALETTE["contact"], size=7, pxMode=True)
        self._normal_item = gl.GLLinePlotItem(pos=np.zeros((2, 3)), mode="lines", color=PALETTE["normal"], width=3)
        self._friction_item = gl.GLLinePlotItem(pos=np.zeros((2, 3)), mode="lines", color=PALETTE["friction"], width=3)
        # Drawn over everything (no depth test): a contact point lies on the bodies' surfaces and the force on body A
        # points into it, so depth-tested arrows were hidden inside the very bodies they act on.
        on_top = {**GLOptions["translucent"], GL.GL_DEPTH_TEST: False}
        for it in (self._contact_item, self._normal_item, self._friction_item):
            it.setGLOptions(on_top)
            it.setDepthValue(30)  # drawn last, after the bodies, the floor, trails and ghosts
            it.setVisible(False)
            self.view.addItem(it)
        self.view.addItem(self._trail_item)
        self._forces_action = QAction("Forces", self, checkable=True, checked=True)
        self._forces_action.setToolTip("Show contact points and contact-force arrows (red: normal, blue: friction)")
        self._forces_action.toggled.connect(self.set_forces_visible)
        self._trails_action = QAction("Trails", self, checkable=True, checked=True)
        self._trails_action.setToolTip("Show the paths of named points (and, in a contact run, the centres of mass of "
                                       "the bodies moved by forces) up to the time cursor")
        self._trails_action.toggled.connect(self.set_trails_visible)
        self.force_box = QDoubleSpinBox()
        self.force_box.setObjectName("viewportForceScale")
        self.force_box.setRange(0.01, 1000.0)
        self.force_box.setDecimals(2)
        self.force_box.setValue(1.0)
        self.force_box.setPrefix("× ")
        self.force_box.setToolTip(FORCE_BOX_TIP)
        self.force_box.valueChanged.connect(self.set_force_factor)
        bar.addAction(self._forces_action)
        bar.addWidget(self.force_box)
        bar.addAction(self._trails_action)
        self._design_action = QAction("Design", self, checkable=True, checked=False)
        self._design_action.setToolTip("Show the design configuration as translucent grey ghosts")
        self._design_action.toggled.connect(self.set_design_ghost)
        bar.addAction(self._design_action)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(bar)
        lay.addWidget(self.view, 1)
        self.setMinimumSize(200, 160)
        self.toolbar = bar  # (its width is the 3D View dock's first-start width at least: MainWindow.default_dock_sizes)

        self.view.clicked.connect(self._on_click)
        document.changed.connect(self._on_changed)
        document.replaced.connect(self._on_replaced)
        selection.changed.connect(self._recolour)
        selection.highlightChanged.connect(self._recolour)
        self._update()
        self._initial_view()

    # ---- public API -------------------------------------------------------------------------------------------
    def set_view(self, name: str) -> None:
        """Look from a preset direction ('front', 'top', 'iso') and frame everything, or just frame it ('fit')."""
        if name != "fit":
            presets = views(self._space, self._up)
            if name not in presets:
                raise ValueError(f"unknown view '{name}' (known: {', '.join(presets)}, fit)")
            back, up = presets[name]
            self.view.opts["rotation"] = view_quaternion(back, up)
        self._sync()
        self._fit()

    def renderer_info(self) -> str:
        """GL_RENDERER and GL_VERSION of the viewport's context ('' before the context exists)."""
        return self.view.renderer

    def set_body_poses(self, poses: dict[str, np.ndarray]) -> None:
        """Place bodies by world 4x4 transforms of their frames (unknown names are ignored): the batched item places
        its parts' vertices and normals at its next paint and uploads those (faces and colours are not re-uploaded)."""
        self._sync()  # a pending document update must not later overwrite these poses
        self._apply_poses(poses)

    def _apply_poses(self, poses: dict[str, np.ndarray]) -> None:
        for name, T in poses.items():
            i = self._row.get(name)
            if i is not None:
                self._P[i] = np.asarray(T, dtype=float).reshape(4, 4)
        self._posed()

    def _posed(self) -> None:
        """The poses in _P changed: the body items follow at the next paint, the point labels now."""
        self._solid.set_frames(self._P)
        self._patches.set_frames(self._P)
        self._place_labels()

    def set_pose_array(self, poses: np.ndarray, names: list[str] | None = None) -> None:
        """Pose bodies from a stacked (n_bodies, 4, 4) array (core.kinematics order: the document's bodies)."""
        self._sync()
        names = self._doc.mechanism.body_names() if names is None else names
        poses = np.asarray(poses, dtype=float).reshape(-1, 4, 4)
        rows = np.array([self._row.get(n, -1) for n in names], np.int64).reshape(-1)
        ok = rows >= 0
        self._P[rows[ok]] = poses[: len(rows)][ok]
        self._posed()

    def body_poses(self) -> dict[str, np.ndarray]:
        """The current world 4x4 pose of every drawn body frame."""
        self._sync()
        return {n: self._P[i].copy() for n, i in self._row.items()}

    def _pose(self, name: str) -> np.ndarray:
        return self._P[self._row[name]]

    def item_count(self) -> dict:
        """How many bodies, joint glyphs and named points are drawn."""
        self._sync()
        n_joints = len(self._scene.joints) if self._scene is not None else 0
        return {"bodies": len(self._row), "joints": n_joints, "points": len(self._points)}

    def gl_item_count(self) -> int:
        """How many GL items the view draws (every item in its tree, static grid and axes, overlays included)."""
        self._sync()

        def count(items) -> int:
            return sum(1 + count(it.childItems()) for it in items)

        return count(self.view.items)

    def drawn_colour(self, kind: str, name) -> tuple | None:
        """The RGBA a body ('body', name), joint glyph ('joint', name) or named point ('point', (body, point)) is
        drawn in now (as uploaded: 8 bits a channel), None if it is not drawn."""
        return self._drawn(lambda batch: batch.colour((kind, name)))

    def drawn_vertices(self, kind: str, name) -> np.ndarray | None:
        """The world vertices of a body, joint glyph or point sphere as sent to GL (its mesh placed by its body's
        pose), None if it is not drawn."""
        return self._drawn(lambda batch: batch.vertices((kind, name)))

    def _drawn(self, read):
        """read(batch) of the first batch of the solid parts and the patches that draws the part, else None."""
        self._sync()
        for batch in (self._solid, self._patches):
            got = read(batch)
            if got is not None:
                return got
        return None

    def pick(self, x: float, y: float) -> str | None:
        """The body under widget pixel (x, y), by casting the camera ray against link capsules and mesh triangles."""
        self._sync()
        hit = self._pick(x, y, joints=False)
        return hit[1] if hit else None

    def pick_item(self, x: float, y: float) -> tuple[str, str] | None:
        """('body' | 'joint', name) of the nearest thing under widget pixel (x, y), or None."""
        self._sync()
        return self._pick(x, y, joints=True)

    def set_labels_visible(self, on: bool) -> None:
        """Show or hide the names of points."""
        self._show_labels = bool(on)
        self._sync()
        for entry in self._points.values():
            entry[0].setVisible(self._show_labels)
        if self._labels_action.isChecked() != self._show_labels:
            self._labels_action.setChecked(self._show_labels)

    @contextlib.contextmanager
    def without_selection(self):
        """Draw every body and joint in its own colour (no selection or highlight tint) inside the block: exported
        images and animations show the mechanism, not what is selected in the window."""
        self._sync()
        self._plain = True
        self._recolour()
        try:
            yield self
        finally:
            self._plain = False
            self._recolour()

    def camera_matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """The current (projection, view) 4x4 matrices of the widget in numpy."""
        vp = (0, 0, max(self.view.width(), 1), max(self.view.height(), 1))
        return from_qmatrix(self.view.projectionMatrix(vp, vp)), from_qmatrix(self.view.viewMatrix())

    def project(self, p) -> tuple[float, float]:
        """Widget pixel (x, y) at which the world point p appears."""
        P, V = self.camera_matrices()
        c = P @ V @ np.append(np.asarray(p, float), 1.0)
        ndc = c[:3] / c[3]
        return (ndc[0] + 1) * 0.5 * self.view.width(), (1 - ndc[1]) * 0.5 * self.view.height()

    def scene(self) -> Scene | None:
        """The drawn scene description (meshes in body frames)."""
        self._sync()
        return self._scene

    # ---- run overlays -------------------------------------------------------------------------------------------
    def force_scale(self) -> float:
        """Arrow length per newton (m/N) of the force arrows, up to the knee (arrow_lengths): at factor 1 the run's
        typical weight (set_force_reference) is ARROW_WEIGHT_SIZES of the typical body size long; without one (no
        gravity, no mass), the median normal force of the frame shown is."""
        ref = self._force_reference
        if ref <= 0:
            _p, fn, _ff = self._drawn_contacts()
            f = np.linalg.norm(fn, axis=1)
            f = f[f > 0]
            ref = float(np.median(f)) if len(f) else 1.0
        return ARROW_WEIGHT_SIZES * self._body_size() / ref * self._force_factor

    def arrow_knee(self) -> float:
        """The arrow length (m) up to which arrows are proportional to their forces (ARROW_KNEE_SIZES body sizes,
        times the factor)."""
        return ARROW_KNEE_SIZES * self._body_size() * self._force_factor

    def arrow_lengths(self, forces) -> np.ndarray:
        """The drawn lengths (m) of arrows of these force magnitudes (N): force_scale() x force up to the knee,
        beyond it knee x (1 + ln(length / knee)), so a force ten times another is still drawn longer."""
        L = self.force_scale() * np.asarray(forces, float)
        knee = self.arrow_knee()
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(L > knee, knee * (1.0 + np.log(np.maximum(L, knee) / knee)), L)

    def _arrow_vectors(self, forces: np.ndarray) -> np.ndarray:
        """(n, 3) arrows of (n, 3) forces: along each force, arrow_lengths long."""
        f = np.linalg.norm(forces, axis=1)
        unit = np.divide(forces, f[:, None], out=np.zeros_like(forces), where=f[:, None] > 0)
        return unit * self.arrow_lengths(f)[:, None]

    def _body_size(self) -> float:
        """The arrows' length unit (m): the median size of the force reference's bodies (set_force_reference; else
        every body but ground ones), each the longest edge of the bounding box of its drawing in its frame; halfspaces
        have none. ARROW_FALLBACK_SIZE of the scene's diagonal when none has a size."""
        scene = self._scene
        key_scene, key_bodies, size = self._body_size_cache
        if scene is key_scene and self._force_bodies == key_bodies and size > 0:
            return size
        sizes = []
        if scene is not None:
            wanted = None if self._force_bodies is None else set(self._force_bodies)
            for bg in scene.bodies:
                if bg.unbounded or bg.ground or (wanted is not None and bg.name not in wanted):
                    continue
                v = np.asarray(bg.mesh[0], float)
                if len(v):
                    sizes.append(float(np.ptp(v, axis=0).max()))
        sizes = [x for x in sizes if x > 0]
        if sizes:
            size = float(np.median(sizes))
        else:
            lo, hi = scene.extent if scene is not None else (np.zeros(3), np.ones(3))
            size = ARROW_FALLBACK_SIZE * max(float(np.linalg.norm(hi - lo)), 1e-6)
        self._body_size_cache = (scene, self._force_bodies, size)
        return size

    def set_force_reference(self, newtons: float, bodies=None) -> None:
        """The force drawn ARROW_WEIGHT_SIZES of a body size long at factor 1: a contact run's typical weight (the
        median weight of its bodies moved by forces); bodies: the names whose median size is that unit (None: every
        body of the document but ground ones)."""
        self._force_reference = max(float(newtons), 0.0)
        self._force_bodies = None if bodies is None else tuple(bodies)
        self._draw_contacts()

    def set_force_factor(self, factor: float) -> None:
        """Lengthen (> 1) or shorten the force arrows."""
        self._force_factor = float(factor)
        if self.force_box.value() != factor:
            self.force_box.setValue(factor)
        self._draw_contacts()

    def set_forces_visible(self, on: bool) -> None:
        """Show or hide contact points and force arrows."""
        self._forces_on = bool(on)
        if self._forces_action.isChecked() != self._forces_on:
            self._forces_action.setChecked(self._forces_on)
        self._draw_contacts()

    def set_trails_visible(self, on: bool) -> None:
        """Show or hide the trails."""
        self._trails_on = bool(on)
        if self._trails_action.isChecked() != self._trails_on:
            self._trails_action.setChecked(self._trails_on)
        self._trail_item.setVisible(self._trails_on and self._trail_cache is not None and self._trail_cache.drawn > 0)

    def set_contacts(self, points, normal_forces, friction_forces, pairs=None) -> None:
        """Contact points (n, 3) and the forces on body A there (normal and friction, (n, 3) newtons), world; pairs:
        each row's two body names (a row is drawn while both bodies are in the document), None: every row drawn."""
        self._sync()  # (the bodies the rows are checked against)
        self._contact_data = tuple(np.asarray(a, float).reshape(-1, 3) for a in (points, normal_forces, friction_forces))
        self._contact_pairs = None if pairs is None else [tuple(ab) for ab in pairs]
        self._draw_contacts()

    def contact_arrows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What is drawn: contact points and the tip of each normal and friction arrow (world)."""
        self._sync()
        p, fn, ff = self._drawn_contacts()
        return p.copy(), p + self._arrow_vectors(fn), p + self._arrow_vectors(ff)

    def _contact_mask(self) -> np.ndarray:
        """Which contact rows belong to bodies in the document."""
        n = len(self._contact_data[0])
        if self._contact_pairs is None:
            return np.ones(n, bool)
        return np.array([a in self._by_name and b in self._by_name for a, b in self._contact_pairs], bool).reshape(n)

    def _drawn_contacts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        mask = self._contact_mask()
        return tuple(a[mask] for a in self._contact_data)

    def _draw_contacts(self) -> None:
        self._contact_shown = self._contact_mask()
        p, fn, ff = (a[self._contact_shown] for a in self._contact_data)
        show = self._forces_on and len(p) > 0
        self._contact_item.setVisible(show)
        self._normal_item.setVisible(show)
        self._friction_item.setVisible(show)
        if not show:
            return
        self._contact_item.setData(pos=p)
        self._normal_item.setData(pos=_arrow_segments(p, self._arrow_vectors(fn)))
        self._friction_item.setData(pos=_arrow_segments(p, self._arrow_vectors(ff)))

    def set_trails(self, trails: dict[str, np.ndarray], owners: dict[str, tuple[str, str | None]] | None = None,
                   key=None) -> None:
        """Paths (k, 3) by name (named points, bodies' centres of mass) up to the cursor, drawn as parts of one line
        item. owners: a trail's body and named point (None: its centre of mass); a trail is drawn while they are in
        the document (a trail without an owner always). key: calls with the same key (not None) promise the same
        names, paths of one length, each a prefix or an extension of the last call's (a run's series up to another
        cursor): only the frames not drawn before are added, and a cursor moved back draws a prefix of what was; so
        a frame of a long run costs what its new frames need, not the whole history's polylines."""
        self._sync()  # (the bodies and points the owners are checked against)
        self._trail_data = trails
        self._trail_owners = dict(owners or {})
        self._trail_key = key
        self._draw_trails()

    def _owned(self, name: str) -> bool:
        """Whether trail `name`'s body (and named point) are in the document."""
        owner = self._trail_owners.get(name)
        if owner is None:
            return True
        body, point = owner
        return body in self._by_name if point is None else (body, point) in self._points

    def _draw_trails(self) -> None:
        names = tuple(n for n in self._trail_data if self._owned(n))
        paths = [np.asarray(self._trail_data[n], float).reshape(-1, 3) for n in names]
        length = len(paths[0]) if paths else 0
        cache = self._trail_cache
        if not (cache is not None and self._trail_key is not None and cache.key == self._trail_key
                and cache.names == names and all(len(p) == length for p in paths)):
            lo, hi = self._scene.extent if self._scene is not None else (np.zeros(3), np.ones(3))
            tol = TRAIL_TOLERANCE * max(float(np.linalg.norm(hi - lo)), 1e-9)
            cache = self._trail_cache = _TrailCache(self._trail_key, names, tol)
        segments = cache.upto(paths)
        self._trail_item.setData(pos=segments if len(segments) else np.zeros((2, 3), np.float32))
        self._trail_item.setVisible(self._trails_on and len(segments) > 0)

    def trails(self) -> dict[str, np.ndarray]:
        """The trails drawn, by name."""
        self._sync()
        return {k: np.asarray(v).copy() for k, v in self._trail_data.items() if self._owned(k)}

    def set_ghost_poses(self, poses, names: list[str], layer: str = "compare") -> None:
        """Translucent copies of bodies at world 4x4 poses (layer "compare": the comparison run, orange; "design":
        the design configuration, grey); a ghost's mesh is uploaded once, then only its transform changes."""
        self._sync()
        shown = self._ghost_poses.setdefault(layer, {})
        for name, T in zip(names, np.asarray(poses, float)):
            bg = self._by_name.get(name)
            if bg is None or bg.unbounded:
                continue
            shown[name] = T.copy()
        self._draw_ghosts(layer)

    def _draw_ghosts(self, layer: str) -> None:
        """A layer's ghost bodies as one translucent item (its parts laid out again only when its bodies change)."""
        shown = self._ghost_poses.get(layer, {})
        batch = self._ghosts.get(layer)
        if batch is None:
            if not shown:
                return
            batch = self._ghosts[layer] = MeshBatch(_SHADER, "translucent")
            batch.setDepthValue(_GHOST_DEPTH)
            self.view.addItem(batch)
        names = [n for n in shown if n in self._by_name and not self._by_name[n].unbounded]
        batch.set_parts([(("body", n), i, self._by_name[n].mesh, None) for i, n in enumerate(names)])
        batch.set_frames(np.array([shown[n] for n in names], float).reshape(-1, 4, 4))
        colour = PALETTE["ghost"] if layer == "compare" else PALETTE["design_ghost"]
        batch.set_colours({("body", n): colour for n in names})

    def ghost_poses(self, layer: str = "compare") -> dict[str, np.ndarray]:
        """World poses of the ghost bodies shown in a layer."""
        return {k: v.copy() for k, v in self._ghost_poses.get(layer, {}).items()}

    def clear_ghosts(self, layer: str = "compare") -> None:
        """Remove a layer's ghost bodies."""
        self._ghost_poses.pop(layer, None)
        batch = self._ghosts.get(layer)
        if batch is not None:
            batch.set_parts([])

    def set_design_ghost(self, on: bool) -> None:
        """Show the bodies' design configuration as translucent grey ghosts (beside the posed bodies)."""
        self._design_on = bool(on)
        if self._design_action.isChecked() != self._design_on:
            self._design_action.setChecked(self._design_on)
        self.clear_ghosts("design")
        if self._design_on and self._scene is not None:
            bodies = [bg for bg in self._scene.bodies if not bg.ground]
            self.set_ghost_poses([bg.design for bg in bodies], [bg.name for bg in bodies], "design")

    # ---- document -----------------------------------------------------------------------------------------------
    def _on_replaced(self) -> None:
        self._pending = False
        self._timer.stop()
        self._builder.reset()  # a new document: its own scale and layers
        self.clear_ghosts()
        self.clear_ghosts("design")
        self.set_trails({})
        self._fit_extra = np.zeros((0, 3))
        self.set_contacts(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 3)))
        self._force_reference, self._force_bodies = 0.0, None
        self._update()
        self._initial_view()

    def _on_changed(self) -> None:
        mech = self._doc.mechanism
        if not self._pending and self._built == (id(mech), mech.content_revision):
            return  # (a node moved in the graph: nothing drawn here changed; the scene's rebuild and diff of every
            # body and joint took 0.25-0.45 s of each such edit at 1,051 bodies)
        self._pending = True
        self._timer.start()

    def _sync(self) -> None:
        """Apply a pending document change now (every query and every paint calls this first)."""
        if self._pending:
            self._pending = False
            self._timer.stop()
            self._update()

    def _initial_view(self) -> None:
        self.set_view("front" if self._space == "planar" else "iso")

    def _update(self) -> None:
        """Bring the drawing up to the document: the scene builder re-meshes only parts whose inputs changed; the body
        items are laid out again only when a part's mesh, frame or place in it changed."""
        mech = self._doc.mechanism
        self._built = (id(mech), mech.content_revision)  # the document state the items show
        self._space, self._up = mech.space, mech.up_direction()
        self.view.up = up_axis(mech.space, self._up)
        scene = self._builder.build(mech)
        self._scene = scene
        self._by_name = {b.name: b for b in scene.bodies}
        self._sync_static(scene)
        renamed, leftover, moved = self._match(scene)
        old_row, old_P = self._row, self._P
        names = [bg.name for bg in scene.bodies]
        designs = {bg.name: bg.design for bg in scene.bodies}
        # after a change of geometry every body goes back to its design pose (a pose solved before belongs to another
        # mechanism); otherwise only bodies whose design pose changed (a free body's placement) move, and a renamed
        # body keeps its pose
        P = np.array([designs[n] for n in names], float).reshape(-1, 4, 4)
        if not (moved or leftover):
            for i, n in enumerate(names):
                src = renamed.get(n, n)
                j = old_row.get(src)
                if j is not None and _same(designs[n], self._designs.get(src)):
                    P[i] = old_P[j]
        self._row = {n: i for i, n in enumerate(names)}
        self._P = P
        self._designs = designs
        self._sync_points(scene)
        self._lay_out(scene)
        self._posed()
        if moved or leftover:
            # a run's contact arrows, trails and comparison ghosts were drawn at the poses just left: they go with them
            # (a stale run's next frame shown draws them again, for the bodies still in the document)
            self._contact_data, self._contact_pairs = (np.zeros((0, 3)),) * 3, None
            self._trail_data, self._trail_owners = {}, {}
            self.clear_ghosts()
        self._recolour()
        if self._design_on:
            self.set_design_ghost(True)  # the design configuration changed with the document
        self._drop_vanished_overlays()
        if self._fit_extent is not None and _extent_moved(self._fit_extent, scene.extent):
            self._fit()  # typed coordinates took the mechanism far from what the camera frames

    def _drop_vanished_overlays(self) -> None:
        """A run's contact arrows, trails and comparison ghosts of bodies (or points) the document no longer has go
        (and come back with them, an undo): a stale run is drawn for the bodies that still exist, as its poses are."""
        if not np.array_equal(self._contact_mask(), self._contact_shown):
            self._draw_contacts()
        if self._trail_cache is None or tuple(n for n in self._trail_data if self._owned(n)) != self._trail_cache.names:
            self._draw_trails()
        shown = self._ghost_poses.get("compare", {})
        for name in [n for n in shown if n not in self._by_name]:
            shown.pop(name)
        for layer in self._ghosts:
            self._draw_ghosts(layer)

    def _match(self, scene: Scene) -> tuple[dict[str, str], list[str], bool]:
        """Compare the scene with the one drawn: (renamed bodies, new name -> old: a vanished body with the very mesh
        of a new one; vanished bodies; whether any drawn geometry changed: a body's mesh but a floor's patch, or a
        joint glyph's mesh, body or place)."""
        names = {bg.name for bg in scene.bodies}
        pool: dict[int, list[str]] = {}  # vanished bodies by the mesh they showed
        for n, m in self._body_meshes.items():
            if n not in names:
                pool.setdefault(id(m), []).append(n)
        renamed: dict[str, str] = {}
        moved = False
        for bg in scene.bodies:
            prev = self._body_meshes.get(bg.name)
            if prev is None and pool.get(id(bg.mesh)):
                renamed[bg.name] = pool[id(bg.mesh)].pop()
            elif prev is not bg.mesh:
                # (a floor's patch re-drawn around a run's motion is not a change of the mechanism: the bodies keep
                # their poses)
                moved = moved or not bg.unbounded
        leftover = [n for ns in pool.values() for n in ns]
        self._body_meshes = {bg.name: bg.mesh for bg in scene.bodies}
        jnames = {jg.name for jg in scene.joints}
        jpool: dict[int, list[str]] = {}
        for n, state in self._joint_state.items():
            if n not in jnames:
                jpool.setdefault(id(state[0]), []).append(n)
        for jg in scene.joints:
            state = self._joint_state.get(jg.name)
            if state is None and jpool.get(id(jg.mesh)):
                state = self._joint_state[jpool[id(jg.mesh)].pop()]  # a renamed joint (or one of the same look)
            body = renamed.get(jg.body, jg.body)
            if state is None or state[0] is not jg.mesh or state[1] != body or not _same(state[2], jg.local):
                moved = True
        moved = moved or any(jpool.values())
        self._joint_state = {jg.name: (jg.mesh, jg.body, jg.local) for jg in scene.joints}
        return renamed, leftover, moved

    def _lay_out(self, scene: Scene) -> None:
        """The parts of the body items: each body's mesh, and the joint glyphs and point spheres it carries."""
        solid, patches = [], []
        for bg in scene.bodies:
            (patches if bg.unbounded else solid).append((("body", bg.name), self._row[bg.name], bg.mesh, None))
        for jg in scene.joints:
            solid.append((("joint", jg.name), self._row[jg.body], jg.mesh, jg.local))
        for pg_ in scene.points:
            T = np.eye(4)
            T[:3, 3] = pg_.position
            solid.append((("point", (pg_.body, pg_.name)), self._row[pg_.body], pg_.mesh, T))
        self._solid.set_parts(solid)
        self._patches.set_parts(patches)

    def _sync_points(self, scene: Scene) -> None:
        """Named points' labels, re-used across edits (their spheres are parts of the body item)."""
        keys = {(p.body, p.name) for p in scene.points}
        pool = [k for k in self._points if k not in keys]
        font = None
        for pg_ in scene.points:
            key = (pg_.body, pg_.name)
            entry = self._points.get(key)
            if entry is None and pool:
                entry = self._points[key] = self._points.pop(pool.pop())
            if entry is None:
                if font is None:
                    font = QFont()
                    font.setPointSizeF(9.0)
                label = gl.GLTextItem(text=pg_.name, color=LABEL, font=font)
                label.setVisible(self._show_labels)
                self.view.addItem(label)
                entry = self._points[key] = [label, None, None]
            if entry[0].text != pg_.name:
                entry[0].setData(text=pg_.name)
            entry[1] = pg_.position + np.array([0.6, 0.6, 0.0]) * scene.width  # beside the sphere, in the body frame
        for k in pool:
            self.view.removeItem(self._points.pop(k)[0])

    def _place_labels(self) -> None:
        """Each point's label where its body's pose puts it."""
        for (body, _), entry in self._points.items():
            i = self._row.get(body)
            if i is None or entry[1] is None:
                continue
            T = self._P[i]
            w = T[:3, :3] @ entry[1] + T[:3, 3]
            if entry[2] is None or not np.array_equal(entry[2], w):
                entry[0].setData(pos=w)
                entry[2] = w

    def _sync_static(self, scene: Scene) -> None:
        """Grid in the document's ground plane behind the mechanism (planar: x-y; spatial: normal to its up, x-y
        without gravity), and a small axis triad at the origin."""
        # the grid is laid out in a frame whose z is the up (R: that frame to the world)
        R = np.eye(3) if scene.planar else up_rotation(self._space, self._up)
        lo, hi = scene.extent
        corners = np.array([[(lo, hi)[i][0], (lo, hi)[j][1], (lo, hi)[k][2]]
                            for i in (0, 1) for j in (0, 1) for k in (0, 1)]) @ R
        lo, hi = corners.min(axis=0), corners.max(axis=0)
        L = max(float(np.linalg.norm(hi - lo)), 10 * scene.width, 1e-9)
        step = _nice(L / 8)
        half = step * math.ceil(0.5 * max(hi[0] - lo[0], hi[1] - lo[1], L) / step + 2)
        cx, cy = step * round(0.5 * (lo[0] + hi[0]) / step), step * round(0.5 * (lo[1] + hi[1]) / step)
        z = (lo[2] - 3 * scene.width) if scene.planar else min(0.0, lo[2])
        key = (step, half, cx, cy, z, scene.width, scene.planar, tuple(R.ravel()))
        if key == self._static_key:
            return
        self._static_key = key
        for item in self._static:
            self.view.removeItem(item)
        self._static.clear()
        grid = gl.GLGridItem(color=GRID, glOptions="translucent")
        grid.setSpacing(step, step, step)
        grid.setSize(2 * half, 2 * half, 1)
        grid.translate(cx, cy, z)
        if not scene.planar:
            T = np.eye(4)
            T[:3, :3] = R
            grid.applyTransform(to_qmatrix(T), local=False)
        grid.setDepthValue(-10)
        self.view.addItem(grid)
        self._static.append(grid)
        length = 1.2 * step
        axes, colours = [], {}
        for k, colour in enumerate(((0.85, 0.25, 0.25, 1.0), (0.25, 0.65, 0.30, 1.0), (0.25, 0.40, 0.85, 1.0))):
            shaft = cylinder_mesh(0.06 * scene.width * 1.5, length, 10, z0=0.0)
            tip = cylinder_mesh(0.2 * scene.width, 0.35 * scene.width, 10, z0=length)
            mesh = merge_meshes([shaft, tip, sphere_mesh(0.12 * scene.width, rows=6, cols=10)])
            R = np.eye(4)
            if k == 0:
                R[:3, :3] = [[0, 0, 1], [0, 1, 0], [-1, 0, 0]]
            elif k == 1:
                R[:3, :3] = [[1, 0, 0], [0, 0, 1], [0, -1, 0]]
            R[2, 3] = z if scene.planar else 0.0
            axes.append((("axis", k), 0, transform_mesh(mesh, R), None))
            colours[("axis", k)] = colour
        triad = MeshBatch(_SHADER, "opaque")
        triad.set_parts(axes)
        triad.set_frames(np.eye(4)[None])
        triad.set_colours(colours)
        self.view.addItem(triad)
        self._static.append(triad)

    # ---- selection ----------------------------------------------------------------------------------------------
    def _body_colour(self, name: str) -> tuple:
        bg = self._by_name.get(name)
        patch = bg is not None and bg.unbounded  # a floor or wall
        if not self._plain and (name in self._sel.bodies or name in self._sel.highlighted_bodies):
            c = PALETTE["selected" if name in self._sel.bodies else "highlight"]
            # a floor or wall is tinted but stays translucent (opaque, a selected wall hid the bodies in the bin)
            return (*c[:3], PATCH_MARKED_ALPHA) if patch else c
        if patch:
            return PALETTE["plane"]
        if bg is not None and bg.ground:
            return PALETTE["ground"]
        return PALETTE["shape"] if (bg is not None and bg.from_shape) else PALETTE["body"]

    def _recolour(self) -> None:
        """Every part's colour (the items upload them only when one changed)."""
        if self._scene is None:
            return
        colours = {("body", n): self._body_colour(n) for n in self._row}
        for jg in self._scene.joints:
            if self._plain:
                c = PALETTE[jg.color]
            elif jg.name in self._sel.joints:
                c = PALETTE["selected"]
            elif jg.name in self._sel.highlighted_joints:
                c = PALETTE["highlight"]
            else:
                c = PALETTE[jg.color]
            colours[("joint", jg.name)] = c
        for key in self._points:
            colours[("point", key)] = PALETTE["point"]
        self._solid.set_colours(colours)
        self._patches.set_colours(colours)

    def _on_click(self, x: float, y: float, mods) -> None:
        hit = self.pick_item(x, y)
        add = bool(mods & Qt.KeyboardModifier.ControlModifier)
        bodies, joints = (set(self._sel.bodies), set(self._sel.joints)) if add else (set(), set())
        if hit is not None:
            target = bodies if hit[0] == "body" else joints
            if add and hit[1] in target:
                target.discard(hit[1])  # Ctrl-click on a selected item takes it out again
            else:
                target.add(hit[1])
        self._sel.set(bodies=bodies, joints=joints)

    # ---- picking and framing ------------------------------------------------------------------------------------
    def _pick(self, x: float, y: float, joints: bool) -> tuple[str, str] | None:
        if self._scene is None:
            return None
        P, V = self.camera_matrices()
        o, d = pixel_ray(P, V, x, y, max(self.view.width(), 1), max(self.view.height(), 1))
        best: tuple[float, tuple[str, str] | None] = (math.inf, None)
        for bg in self._scene.bodies:
            T = self._pose(bg.name)
            R, p = T[:3, :3], T[:3, 3]
            ol, dl = R.T @ (o - p), R.T @ d  # the ray in the body frame (rigid: same parameter t)
            t = min(ray_capsules(ol, dl, bg.capsules, bg.radii), ray_triangles(ol, dl, bg.triangles))
            if bg.unbounded and t < math.inf:
                t = 1e300  # a floor or wall is picked only where nothing else is under the cursor
            if t < best[0]:
                best = (t, ("body", bg.name))
        if joints:
            for jg in self._scene.joints:
                T = self._pose(jg.body) @ jg.local
                R, p = T[:3, :3], T[:3, 3]
                v, f = jg.mesh
                t = ray_triangles(R.T @ (o - p), R.T @ d, v[f])
                if t < math.inf and t <= best[0]:  # a joint glyph sits on its links: at a tie the joint is what was aimed at
                    best = (t, ("joint", jg.name))
        return best[1]

    def _world_vertices(self) -> np.ndarray:
        """The corners (lo, hi) of the world box of every drawn vertex (bodies but unbounded ones, and joints) as two
        points, or none. The box of a mesh turned by R is that of its vertices turned, worked out once per mesh and
        rotation (3,000 equal spheres, unturned: once, not 3,000 x 600 vertices), then moved by each translation."""
        if self._scene is None:
            return np.zeros((0, 3))
        turned: dict = {}
        los, his = [], []

        def add(v, T) -> None:
            R = T[:3, :3]
            key = (id(v), R.tobytes())
            box = turned.get(key)
            if box is None:
                w = v @ R.T
                box = turned[key] = (w.min(axis=0), w.max(axis=0), v)  # (v kept: its id stays its own meanwhile)
            los.append(box[0] + T[:3, 3])
            his.append(box[1] + T[:3, 3])

        for bg in self._scene.bodies:
            v = bg.mesh[0]
            if len(v) and not bg.unbounded:
                add(v, self._pose(bg.name))
        for jg in self._scene.joints:
            if len(jg.mesh[0]):
                add(jg.mesh[0], self._pose(jg.body) @ jg.local)
        if not los:
            return np.zeros((0, 3))
        return np.array([np.min(los, axis=0), np.max(his, axis=0)])

    def fit_motion(self, poses: dict[str, np.ndarray]) -> bool:
        """Frame the scene together with the bodies at these poses ((k, 4, 4) world transforms of their frames by
        body name: a run's motion, sampled), unless the user has moved the camera since the last fit; returns whether
        it did.  Each body is framed by the corners of its geometry's bounding box carried by every pose, so a link
        drawn far from its frame's origin (a bar between two joints, its frame at the world origin) is framed where
        it is drawn, not where its origin goes."""
        if self._fitted is not None and self._fitted[:3] != self._camera_state()[:3]:
            return False
        self._sync()
        extra = []
        for name, T in poses.items():
            bg = self._by_name.get(name)
            if bg is None or bg.unbounded or not len(bg.mesh[0]):
                continue
            v = np.asarray(bg.mesh[0], float)
            lo, hi = v.min(axis=0), v.max(axis=0)
            corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
            T = np.asarray(T, float).reshape(-1, 4, 4)
            extra.append((np.einsum("kij,cj->kci", T[:, :3, :3], corners) + T[:, None, :3, 3]).reshape(-1, 3))
        self._fit_extra = np.concatenate(extra) if extra else np.zeros((0, 3))
        if len(self._fit_extra):  # the floors and walls reach under the whole motion too
            self._builder.motion_extent = (self._fit_extra.min(axis=0), self._fit_extra.max(axis=0))
            self._update()
        self._fit()
        return True

    def _fit(self) -> None:
        self._sync()
        pts = self._world_vertices()
        if len(self._fit_extra):
            pts = np.concatenate([pts, self._fit_extra])
        if len(pts) == 0:
            centre, radius = np.zeros(3), 1.0
        else:
            lo, hi = pts.min(axis=0), pts.max(axis=0)
            centre, radius = 0.5 * (lo + hi), max(0.5 * float(np.linalg.norm(hi - lo)), 1e-6)
        w, h = max(self.view.width(), 1), max(self.view.height(), 1)
        half_h = math.radians(self.view.opts["fov"]) / 2  # the widget's fov is horizontal
        half_v = math.atan(math.tan(half_h) * h / w)
        dist = radius / math.sin(min(half_h, half_v)) * 1.04
        self.view.opts["center"] = QVector3D(*centre)
        self.view.opts["distance"] = dist
        self.view.update()
        self._fitted = self._camera_state()
        if self._scene is not None:
            self._fit_extent = tuple(np.array(a, float) for a in self._scene.extent)

    def _camera_state(self) -> tuple:
        o = self.view.opts
        return (o["rotation"].toVector4D().toTuple(), o["center"].toTuple(), o["distance"], self.view.size().toTuple())

    def resizeEvent(self, ev) -> None:
        """Re-frame on a resize while the camera is still where the last preset view put it."""
        super().resizeEvent(ev)
        if self._fitted is not None and self._fitted[:3] == self._camera_state()[:3]:
            self._fit()


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    """Equal arrays (the scene builder hands back the very same object for an unchanged value: checked first)."""
    return a is b or (a is not None and b is not None and np.array_equal(a, b))


def _extent_moved(old: tuple, new: tuple) -> bool:
    """Whether a scene's extent changed a lot: twice or a quarter the size, or half its size beyond the old box."""
    (lo0, hi0), (lo1, hi1) = old, new
    L0 = max(float(np.linalg.norm(hi0 - lo0)), 1e-9)
    L1 = float(np.linalg.norm(hi1 - lo1))
    return L1 > 2 * L0 or L1 < 0.25 * L0 or bool(np.any(lo1 < lo0 - 0.5 * L0) or np.any(hi1 > hi0 + 0.5 * L0))


def _arrow_segments(p: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Line segments (pairs of points) of arrows from p along v, each a shaft and four head strokes (vectorised: a
    loop over the arrows took a 300-body pile's frame 170 ms)."""
    p, v = np.asarray(p, float).reshape(-1, 3), np.asarray(v, float).reshape(-1, 3)
    L = np.linalg.norm(v, axis=1)
    keep = L >= 1e-12
    p, v, L = p[keep], v[keep], L[keep]
    if not len(p):
        return np.zeros((2, 3))
    u = v / L[:, None]
    ref = np.where((np.abs(u[:, 0]) < 0.9)[:, None], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    e1 = np.cross(u, ref)
    e1 /= np.linalg.norm(e1, axis=1)[:, None]
    e2 = np.cross(u, e1)
    tip = p + v
    back = tip - 0.18 * v
    w = 0.07 * L[:, None]
    out = np.stack([p, tip, tip, back + w * e1, tip, back - w * e1, tip, back + w * e2, tip, back - w * e2], axis=1)
    return out.reshape(-1, 3)


class _TrailCache:
    """The drawn trails' line segments, frame by frame (frame j's block: each trail's step from its last drawn point
    to its point at frame j + 1, where it has moved more than `tol` since; so the polylines up to frame k are the
    first blocks, a prefix of one array)."""

    def __init__(self, key, names: tuple, tol: float) -> None:
        self.key, self.names, self.tol = key, names, tol
        self.seg = np.zeros((0, 3), np.float32)  # (room, 3) segment ends, pairs
        self.used = 0  # rows of seg in use
        self.ends = [0]  # ends[j]: rows used by the blocks of frames < j
        self.last: np.ndarray | None = None  # (trails, 3) each trail's last drawn point
        self.drawn = 0  # rows drawn by the last upto

    def upto(self, paths: list[np.ndarray]) -> np.ndarray:
        """The segments of `paths` (all one length k, of the series the cache was made for) up to frame k - 1."""
        k = len(paths[0]) if paths else 0
        built = len(self.ends) - 1  # frames whose steps are in the blocks
        if k - 1 > built:
            P = np.stack([p[max(built, 0):k] for p in paths], axis=1)  # (frames, trails, 3)
            if self.last is None:
                self.last = P[0].copy()
            blocks = []
            for j in range(1, len(P)):
                moved = np.linalg.norm(P[j] - self.last, axis=1) > self.tol
                if moved.any():
                    blocks.append(np.stack([self.last[moved], P[j, moved]], axis=1).reshape(-1, 3))
                    self.last[moved] = P[j, moved]
                else:
                    blocks.append(np.zeros((0, 3)))
            need = self.used + sum(len(b) for b in blocks)
            if need > len(self.seg):
                room = np.zeros((max(need, 2 * len(self.seg), 64), 3), np.float32)
                room[: self.used] = self.seg[: self.used]
                self.seg = room
            for b in blocks:
                self.seg[self.used: self.used + len(b)] = b
                self.used += len(b)
                self.ends.append(self.used)
        self.drawn = self.ends[max(k - 1, 0)] if k >= 1 else 0
        return self.seg[: self.drawn]


def _nice(x: float) -> float:
    """The 1-2-5 number nearest above x (grid spacing)."""
    e = 10 ** math.floor(math.log10(x))
    for m in (1, 2, 5, 10):
        if m * e >= x:
            return m * e
    return 10 * e
