"""The 3D viewport: a pyqtgraph GLViewWidget that listens to the document and the selection and draws the mechanism."""

from __future__ import annotations

import contextlib
import math
from collections import OrderedDict

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
FORCE_ARROW_FRACTION = 0.25  # at scale 1, a force equal to the heaviest body's weight is this fraction of the scene
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


class _PatchItem(gl.GLMeshItem):
    """The mesh item of an unbounded shape's patch (_PATCH_OPTIONS); restores depth writes after painting (the items
    drawn after it, and the next frame's depth clear, which a disabled depth mask would skip)."""

    def paint(self) -> None:
        try:
            super().paint()
        finally:
            GL.glDepthMask(GL.GL_TRUE)


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
        self._groups: dict[str, gl.GLGraphicsItem.GLGraphicsItem] = {}  # per body: its frame (transform) node
        self._body_items: dict[str, gl.GLMeshItem] = {}
        self._body_meshes: dict[str, tuple] = {}  # the scene mesh object each body item shows (same object: unchanged)
        self._joint_items: dict[str, gl.GLMeshItem] = {}
        self._joint_meshes: dict[str, tuple] = {}
        self._joint_locals: dict[str, np.ndarray] = {}
        self._points: dict[tuple[str, str], tuple[gl.GLMeshItem, gl.GLTextItem]] = {}  # (body, point) -> sphere, label
        self._point_state: dict[tuple[str, str], tuple] = {}  # (body, point) -> (mesh, position, label position)
        self._poses: dict[str, np.ndarray] = {}
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
        self._force_reference = 0.0  # N: the heaviest body's weight (0: unknown, arrows scaled by the forces shown)
        self._force_factor = 1.0
        self._contact_data = (np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 3)))
        # a run's overlays name the bodies they belong to: those of bodies no longer in the document are not drawn
        # (a stale run's poses of a deleted body are not applied either: set_body_poses)
        self._contact_pairs: list[tuple[str, str]] | None = None  # per contact row: its pair's two bodies
        self._contact_shown = np.zeros(0, bool)  # which rows are drawn
        self._trail_data: dict[str, np.ndarray] = {}
        self._trail_owners: dict[str, tuple[str, str | None]] = {}  # trail -> (body, its named point or None)
        self._trail_items: dict[str, gl.GLLinePlotItem] = {}
        self._ghost_groups: dict[str, dict[str, gl.GLGraphicsItem.GLGraphicsItem]] = {}  # layer -> body -> node
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
        self.force_box.setToolTip("Length of the force arrows (1: the heaviest body's weight is a quarter of the scene)")
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
        """Place bodies by world 4x4 transforms of their frames (unknown names are ignored); no mesh is re-uploaded."""
        self._sync()  # a pending document update must not later overwrite these poses
        self._apply_poses(poses)

    def _apply_poses(self, poses: dict[str, np.ndarray]) -> None:
        for name, T in poses.items():
            group = self._groups.get(name)
            if group is None:
                continue
            T = np.asarray(T, dtype=float).reshape(4, 4)
            self._poses[name] = T
            group.setTransform(to_qmatrix(T))

    def set_pose_array(self, poses: np.ndarray, names: list[str] | None = None) -> None:
        """Pose bodies from a stacked (n_bodies, 4, 4) array (core.kinematics order: the document's bodies)."""
        names = self._doc.mechanism.body_names() if names is None else names
        self.set_body_poses(dict(zip(names, np.asarray(poses, dtype=float))))

    def body_poses(self) -> dict[str, np.ndarray]:
        """The current world 4x4 pose of every drawn body frame."""
        self._sync()
        return {k: v.copy() for k, v in self._poses.items()}

    def item_count(self) -> dict:
        """How many body, joint and point items are drawn."""
        self._sync()
        return {"bodies": len(self._body_items), "joints": len(self._joint_items), "points": len(self._points)}

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
        for _, t in self._points.values():
            t.setVisible(self._show_labels)
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
        """Arrow length per newton (m/N) of the force arrows."""
        lo, hi = self._scene.extent if self._scene is not None else (np.zeros(3), np.ones(3))
        size = max(float(np.linalg.norm(hi - lo)), 1e-6)
        ref = self._force_reference
        if ref <= 0:
            _p, fn, ff = self._drawn_contacts()
            F = np.concatenate([fn, ff])
            ref = float(np.linalg.norm(F, axis=1).max(initial=0.0)) or 1.0
        return FORCE_ARROW_FRACTION * size / ref * self._force_factor

    def set_force_reference(self, newtons: float) -> None:
        """The force drawn a quarter of the scene long at factor 1 (the heaviest body's weight of a contact run)."""
        self._force_reference = max(float(newtons), 0.0)
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
        for item in self._trail_items.values():
            item.setVisible(self._trails_on)

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
        s = self.force_scale()
        return p.copy(), p + s * fn, p + s * ff

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
        s = self.force_scale()
        self._normal_item.setData(pos=_arrow_segments(p, s * fn))
        self._friction_item.setData(pos=_arrow_segments(p, s * ff))

    def set_trails(self, trails: dict[str, np.ndarray], owners: dict[str, tuple[str, str | None]] | None = None) -> None:
        """Paths (k, 3) by name (named points, bodies' centres of mass) up to the cursor; items are re-used by name.
        owners: a trail's body and named point (None: its centre of mass); a trail is drawn while they are in the
        document (a trail without an owner always)."""
        self._sync()  # (the bodies and points the owners are checked against)
        self._trail_data = trails
        self._trail_owners = dict(owners or {})
        self._draw_trails()

    def _owned(self, name: str) -> bool:
        """Whether trail `name`'s body (and named point) are in the document."""
        owner = self._trail_owners.get(name)
        if owner is None:
            return True
        body, point = owner
        return body in self._by_name if point is None else (body, point) in self._points

    def _draw_trails(self) -> None:
        trails = {n: p for n, p in self._trail_data.items() if self._owned(n)}
        for name in [n for n in self._trail_items if n not in trails]:
            self.view.removeItem(self._trail_items.pop(name))
        for name, path in trails.items():
            path = np.asarray(path, float)
            item = self._trail_items.get(name)
            if item is None:
                item = self._trail_items[name] = gl.GLLinePlotItem(mode="line_strip", color=PALETTE["trail"], width=1.5)
                item.setGLOptions("translucent")
                item.setDepthValue(25)
                self.view.addItem(item)
            if len(path) >= 2:
                item.setData(pos=path)
            item.setVisible(self._trails_on and len(path) >= 2)

    def trails(self) -> dict[str, np.ndarray]:
        """The trails drawn, by name."""
        self._sync()
        return {k: np.asarray(v).copy() for k, v in self._trail_data.items() if self._owned(k)}

    def set_ghost_poses(self, poses, names: list[str], layer: str = "compare") -> None:
        """Translucent copies of bodies at world 4x4 poses (layer "compare": the comparison run, orange; "design":
        the design configuration, grey); a ghost's mesh is uploaded once, then only its transform changes."""
        self._sync()
        groups = self._ghost_groups.setdefault(layer, {})
        shown = self._ghost_poses.setdefault(layer, {})
        colour = PALETTE["ghost"] if layer == "compare" else PALETTE["design_ghost"]
        for name, T in zip(names, np.asarray(poses, float)):
            bg = self._by_name.get(name)
            if bg is None or bg.unbounded:
                continue
            group = groups.get(name)
            if group is None:
                group = groups[name] = gl.GLGraphicsItem.GLGraphicsItem()
                item = self._mesh_item(bg.mesh, colour, group)
                item.setGLOptions("translucent")
                group.setDepthValue(20)
                self.view.addItem(group)
            group.setTransform(to_qmatrix(T))
            shown[name] = T.copy()

    def ghost_poses(self, layer: str = "compare") -> dict[str, np.ndarray]:
        """World poses of the ghost bodies shown in a layer."""
        return {k: v.copy() for k, v in self._ghost_poses.get(layer, {}).items()}

    def clear_ghosts(self, layer: str = "compare") -> None:
        """Remove a layer's ghost bodies."""
        for group in self._ghost_groups.pop(layer, {}).values():
            self._discard(group)
        self._ghost_poses.pop(layer, None)

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
        self._force_reference = 0.0
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

    def _discard(self, item: gl.GLGraphicsItem.GLGraphicsItem) -> None:
        """Take a top-level item out of the view and apart from its children. pyqtgraph's parent and children refer to
        each other: together they were a reference cycle, freed by Python's collector at its next collection; apart,
        they are freed here, in the GUI thread (a collection in a run's thread ran the destructors of the mesh items
        and their OpenGL buffers there: app.collector)."""
        self.view.removeItem(item)
        _detach(item)

    def _mesh_item(self, mesh, colour, parent, patch: bool = False) -> gl.GLMeshItem:
        """An opaque mesh item, or (patch) a halfspace's translucent patch that writes no depth (_PatchItem)."""
        cls, options = (_PatchItem, _PATCH_OPTIONS) if patch else (gl.GLMeshItem, "opaque")
        return cls(parentItem=parent, meshdata=_mesh_data(mesh), color=colour, smooth=True, shader=_SHADER,
                   glOptions=options)

    def _renew(self, item: gl.GLMeshItem, mesh, colour, patch: bool = False) -> gl.GLMeshItem:
        """A new item for a changed mesh in the old one's place (an item shows one mesh for its whole life)."""
        parent = item.parentItem()
        item.setParentItem(None)
        return self._mesh_item(mesh, colour, parent, patch)

    def _update(self) -> None:
        """Bring the items up to the document: re-mesh only parts whose mesh changed, add new ones, drop vanished."""
        mech = self._doc.mechanism
        self._built = (id(mech), mech.content_revision)  # the document state the items show
        self._space, self._up = mech.space, mech.up_direction()
        self.view.up = up_axis(mech.space, self._up)
        scene = self._builder.build(mech)
        self._scene = scene
        self._by_name = {b.name: b for b in scene.bodies}
        self._sync_static(scene)
        leftover, moved = self._sync_bodies(scene)
        moved |= self._sync_joints(scene)
        self._sync_points(scene)
        for name in leftover:  # after the joints and points moved off them
            self._discard(self._groups.pop(name))
            for d in (self._body_items, self._body_meshes, self._poses, self._designs):
                d.pop(name, None)
        designs = {bg.name: bg.design for bg in scene.bodies}
        # after a change of geometry every body goes back to its design pose (a pose solved before belongs to another
        # mechanism); otherwise only bodies whose design pose changed (a free body's placement) move
        reset = designs if (moved or leftover) else {n: D for n, D in designs.items() if not _same(D, self._designs.get(n))}
        self._designs = designs
        self._apply_poses({n: D for n, D in reset.items() if not _same(D, self._poses.get(n))})
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
        if {n for n in self._trail_data if self._owned(n)} != set(self._trail_items):
            self._draw_trails()
        groups, shown = self._ghost_groups.get("compare", {}), self._ghost_poses.get("compare", {})
        for name in [n for n in groups if n not in self._by_name]:
            self._discard(groups.pop(name))
            shown.pop(name, None)

    def _sync_bodies(self, scene: Scene) -> tuple[list[str], bool]:
        """Create, re-mesh or re-key body items; returns the names whose items are no longer needed and whether any
        mesh changed."""
        names = {bg.name for bg in scene.bodies}
        pool: dict[int, list[str]] = {}  # vanished bodies by the mesh they show: a renamed body takes its old item
        for n in self._groups:
            if n not in names:
                pool.setdefault(id(self._body_meshes[n]), []).append(n)
        changed = False
        for bg in scene.bodies:
            name = bg.name
            item = self._body_items.get(name)
            if item is None and pool.get(id(bg.mesh)):
                old = pool[id(bg.mesh)].pop()
                for d in (self._groups, self._body_items, self._body_meshes, self._poses, self._designs):
                    if old in d:
                        d[name] = d.pop(old)
                continue
            if item is None:
                group = gl.GLGraphicsItem.GLGraphicsItem()
                self.view.addItem(group)
                self._groups[name] = group
                item = self._mesh_item(bg.mesh, self._body_colour(name), group, bg.unbounded)
                self._body_items[name] = item
            elif self._body_meshes[name] is not bg.mesh:
                item = self._body_items[name] = self._renew(item, bg.mesh, self._body_colour(name), bg.unbounded)
            else:
                continue
            # (a floor's patch re-drawn around a run's motion is not a change of the mechanism: the bodies keep
            # their poses)
            changed = changed or not bg.unbounded
            self._body_meshes[name] = bg.mesh
            # a wall or floor is a translucent patch drawn after everything it may stand in front of (_PatchItem)
            self._groups[name].setDepthValue(_PATCH_DEPTH if bg.unbounded else 0)
        return [n for ns in pool.values() for n in ns], changed

    def _sync_joints(self, scene: Scene) -> bool:
        """Create, re-mesh, re-parent or re-place joint glyphs; returns whether any glyph changed."""
        names = {jg.name for jg in scene.joints}
        pool: dict[int, list[str]] = {}
        for n in self._joint_items:
            if n not in names:
                pool.setdefault(id(self._joint_meshes[n]), []).append(n)
        changed = False
        for jg in scene.joints:
            name = jg.name
            item = self._joint_items.get(name)
            if item is None and pool.get(id(jg.mesh)):
                old = pool[id(jg.mesh)].pop()  # a renamed joint (or one of the same look) takes a vanished item
                for d in (self._joint_items, self._joint_meshes, self._joint_locals):
                    d[name] = d.pop(old)
                item = self._joint_items[name]
            parent = self._groups[jg.body]
            if item is None:
                item = self._mesh_item(jg.mesh, PALETTE[jg.color], parent)
                self._joint_items[name], self._joint_meshes[name] = item, jg.mesh
                self._joint_locals[name] = None
                changed = True
            elif self._joint_meshes[name] is not jg.mesh:
                item = self._joint_items[name] = self._renew(item, jg.mesh, item.opts["color"])
                item.setTransform(to_qmatrix(self._joint_locals[name]))
                self._joint_meshes[name] = jg.mesh
                changed = True
            if item.parentItem() is not parent:
                item.setParentItem(parent)
                changed = True
            if not _same(self._joint_locals[name], jg.local):
                item.setTransform(to_qmatrix(jg.local))
                self._joint_locals[name] = jg.local
                changed = True
        for ns in pool.values():
            for n in ns:
                self._joint_items.pop(n).setParentItem(None)
                self._joint_meshes.pop(n)
                self._joint_locals.pop(n)
                changed = True
        return changed

    def _sync_points(self, scene: Scene) -> None:
        """Named points: a sphere and a label per point, re-used across edits (all share one sphere mesh)."""
        keys = {(p.body, p.name) for p in scene.points}
        pool = [k for k in self._points if k not in keys]
        font = None
        for pg_ in scene.points:
            key = (pg_.body, pg_.name)
            parent = self._groups[pg_.body]
            entry = self._points.get(key)
            if entry is None and pool:
                old = pool.pop()
                entry = self._points[key] = self._points.pop(old)
                self._point_state[key] = self._point_state.pop(old)
            if entry is None:
                if font is None:
                    font = QFont()
                    font.setPointSizeF(9.0)
                item = self._mesh_item(pg_.mesh, PALETTE["point"], parent)
                label = gl.GLTextItem(parentItem=parent, text=pg_.name, color=LABEL, font=font)
                label.setVisible(self._show_labels)
                entry = self._points[key] = (item, label)
                self._point_state[key] = (pg_.mesh, None, None)
            item, label = entry
            if item.parentItem() is not parent:
                item.setParentItem(parent)
                label.setParentItem(parent)
            mesh, pos, text = self._point_state[key]
            if mesh is not pg_.mesh:
                item = self._renew(item, pg_.mesh, PALETTE["point"])
                self._points[key] = (item, label)
                pos = None
            if pos is None or not np.array_equal(pos, pg_.position):
                T = np.eye(4)
                T[:3, 3] = pg_.position
                item.setTransform(to_qmatrix(T))
            label_pos = pg_.position + np.array([0.6, 0.6, 0.0]) * scene.width
            if text != (pg_.name, tuple(label_pos)):
                label.setData(pos=label_pos, text=pg_.name)
            self._point_state[key] = (pg_.mesh, pg_.position, (pg_.name, tuple(label_pos)))
        for k in pool:
            item, label = self._points.pop(k)
            self._point_state.pop(k)
            item.setParentItem(None)
            label.setParentItem(None)

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
            item = self._mesh_item(transform_mesh(mesh, R), colour, None)
            self.view.addItem(item)
            self._static.append(item)

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
        for name, item in self._body_items.items():
            c = self._body_colour(name)
            if item.opts["color"] != c:  # setColor repaints: only items whose colour changes
                item.setColor(c)
        for jg in (self._scene.joints if self._scene else []):
            if self._plain:
                c = PALETTE[jg.color]
            elif jg.name in self._sel.joints:
                c = PALETTE["selected"]
            elif jg.name in self._sel.highlighted_joints:
                c = PALETTE["highlight"]
            else:
                c = PALETTE[jg.color]
            item = self._joint_items[jg.name]
            if item.opts["color"] != c:
                item.setColor(c)

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
            T = self._poses.get(bg.name, bg.design)
            R, p = T[:3, :3], T[:3, 3]
            ol, dl = R.T @ (o - p), R.T @ d  # the ray in the body frame (rigid: same parameter t)
            t = min(ray_capsules(ol, dl, bg.capsules, bg.radii), ray_triangles(ol, dl, bg.triangles))
            if bg.unbounded and t < math.inf:
                t = 1e300  # a floor or wall is picked only where nothing else is under the cursor
            if t < best[0]:
                best = (t, ("body", bg.name))
        if joints:
            for jg in self._scene.joints:
                T = self._poses.get(jg.body, np.eye(4)) @ jg.local
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
                add(v, self._poses.get(bg.name, bg.design))
        for jg in self._scene.joints:
            if len(jg.mesh[0]):
                add(jg.mesh[0], self._poses.get(jg.body, np.eye(4)) @ jg.local)
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


def _detach(item: gl.GLGraphicsItem.GLGraphicsItem) -> None:
    """Take every item under `item` off its parent (the parent-child references are the only cycle of an item)."""
    for child in item.childItems():
        _detach(child)
        child.setParentItem(None)


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    """Equal arrays (the scene builder hands back the very same object for an unchanged value: checked first)."""
    return a is b or (a is not None and b is not None and np.array_equal(a, b))


_MESH_DATA: "OrderedDict[int, tuple]" = OrderedDict()  # id(mesh) -> (mesh, its MeshData): the newest used
_MESH_DATA_SIZE = 4096


def _mesh_data(mesh) -> gl.MeshData:
    """The mesh with its vertex normals already set: pyqtgraph's MeshData.vertexNormals computes them in a Python loop
    over the vertices at the item's first paint (0.4-0.65 s of each Space switch at 241 bodies, 2.4 s of its repaint
    under load), and divides by zero for a vertex of degenerate faces only (NaN normals, a RuntimeWarning).  One
    MeshData per mesh object (the scene builder shares a joint glyph's mesh among the joints of one look; the items
    only read it; the cache holds the mesh, so its id is not reused while cached)."""
    hit = _MESH_DATA.get(id(mesh))
    if hit is not None and hit[0] is mesh:
        _MESH_DATA.move_to_end(id(mesh))
        return hit[1]
    v, f = mesh
    md = gl.MeshData(vertexes=np.asarray(v, np.float32), faces=np.asarray(f, np.uint32))
    md._vertexNormals = vertex_normals(md.vertexes(), md.faces())  # (the attribute vertexNormals caches in)
    _MESH_DATA[id(mesh)] = (mesh, md)
    if len(_MESH_DATA) > _MESH_DATA_SIZE:
        _MESH_DATA.popitem(last=False)
    return md


def vertex_normals(v: np.ndarray, f: np.ndarray) -> np.ndarray:
    """(N, 3) float32 unit normals of the vertices `v` of the faces `f`: the sum of the (area-weighted) normals of the
    faces around each vertex, normalised, as pyqtgraph's MeshData.vertexNormals; (0, 0, 0) where that sum is zero."""
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


def _extent_moved(old: tuple, new: tuple) -> bool:
    """Whether a scene's extent changed a lot: twice or a quarter the size, or half its size beyond the old box."""
    (lo0, hi0), (lo1, hi1) = old, new
    L0 = max(float(np.linalg.norm(hi0 - lo0)), 1e-9)
    L1 = float(np.linalg.norm(hi1 - lo1))
    return L1 > 2 * L0 or L1 < 0.25 * L0 or bool(np.any(lo1 < lo0 - 0.5 * L0) or np.any(hi1 > hi0 + 0.5 * L0))


def _arrow_segments(p: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Line segments (pairs of points) of arrows from p along v, each a shaft and four head strokes."""
    out = []
    for a, d in zip(p, v):
        L = float(np.linalg.norm(d))
        if L < 1e-12:
            continue
        u = d / L
        e1 = np.cross(u, [1.0, 0.0, 0.0] if abs(u[0]) < 0.9 else [0.0, 1.0, 0.0])
        e1 /= np.linalg.norm(e1)
        e2 = np.cross(u, e1)
        tip = a + d
        back = tip - 0.18 * d
        out += [a, tip]
        for e in (e1, -e1, e2, -e2):
            out += [tip, back + 0.07 * L * e]
    return np.array(out) if out else np.zeros((2, 3))


def _nice(x: float) -> float:
    """The 1-2-5 number nearest above x (grid spacing)."""
    e = 10 ** math.floor(math.log10(x))
    for m in (1, 2, 5, 10):
        if m * e >= x:
            return m * e
    return 10 * e
