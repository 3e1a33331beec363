"""Graph editor: bodies as nodes, joints as edges, over the document; every change goes through the Editor."""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QBrush, QColor, QFont, QKeyEvent, QPainter, QPainterPath, QPainterPathStroker, QPen
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsLineItem,
    QGraphicsScene,
    QGraphicsView,
    QLineEdit,
    QMenu,
    QStyleOptionGraphicsItem,
    QWidget,
)

from core.joints import JOINT_TYPES

from ..editing import joint_types_for

__all__ = ["GraphView", "BodyItem", "JointItem"]

NODE_W, NODE_H = 112.0, 38.0
PORT_R = 7.0
EDGE_SPREAD = 30.0  # distance between parallel joints of the same two bodies
JOINT_NAME_W = 56  # px: a joint's name beside its marker is shortened with "…" to this width (the tooltip has it)

C_BODY = QColor("#dfe8f3")
C_BODY_EDGE = QColor("#35577f")
C_GROUND = QColor("#4a4f57")
C_SELECT = QColor("#e07b00")
C_HILITE = QColor("#ffd54a")
C_EDGE = QColor("#3b3f45")
C_PORT = QColor("#ffffff")


def exec_menu(menu: QMenu, global_pos):
    """Show a popup menu and return the chosen action (one place, so tests can answer without a modal loop)."""
    return menu.exec(global_pos)


class BodyItem(QGraphicsItem):
    """A body node: a rounded box with its name; ground bodies are dark with a hatched ground symbol."""

    def __init__(self, view: "GraphView", name: str) -> None:
        super().__init__()
        self.view = view
        self.name = name
        self.ground = False
        self.highlighted = False
        self.setFlags(
            QGraphicsItem.ItemIsMovable | QGraphicsItem.ItemIsSelectable | QGraphicsItem.ItemSendsGeometryChanges
        )
        self.setAcceptHoverEvents(True)
        self.setZValue(2)
        self.setToolTip(name)

    def boundingRect(self) -> QRectF:  # noqa: D102 - Qt API
        return QRectF(-NODE_W / 2 - 4, -NODE_H / 2 - 4, NODE_W + PORT_R * 2 + 8, NODE_H + 22)

    def shape(self) -> QPainterPath:  # noqa: D102 - Qt API
        p = QPainterPath()
        p.addRoundedRect(QRectF(-NODE_W / 2, -NODE_H / 2, NODE_W, NODE_H), 8, 8)
        p.addEllipse(self.port_local(), PORT_R + 2, PORT_R + 2)
        return p

    def port_local(self) -> QPointF:
        """Centre of the connector handle (drag from it to another body to add a joint)."""
        return QPointF(NODE_W / 2, 0.0)

    def on_port(self, scene_pos: QPointF) -> bool:
        """Whether a scene point lies on the connector handle."""
        d = self.mapFromScene(scene_pos) - self.port_local()
        return math.hypot(d.x(), d.y()) <= PORT_R + 3

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:  # noqa: D102
        painter.setRenderHint(QPainter.Antialiasing)
        rect = QRectF(-NODE_W / 2, -NODE_H / 2, NODE_W, NODE_H)
        selected = self.isSelected()
        if self.ground:
            # The classic ground symbol under the box: a bar with hatching.
            painter.setPen(QPen(C_GROUND, 2))
            y = NODE_H / 2 + 5
            painter.drawLine(QPointF(-NODE_W / 2 + 6, y), QPointF(NODE_W / 2 - 6, y))
            x = -NODE_W / 2 + 10
            while x < NODE_W / 2 - 4:
                painter.drawLine(QPointF(x, y), QPointF(x - 7, y + 8))
                x += 10
        fill = C_HILITE if self.highlighted else (C_GROUND if self.ground else C_BODY)
        painter.setBrush(QBrush(fill))
        painter.setPen(QPen(C_SELECT if selected else C_BODY_EDGE, 3.0 if selected else 1.5))
        painter.drawRoundedRect(rect, 8, 8)
        painter.setPen(QPen(QColor("white") if self.ground and not self.highlighted else QColor("#10151c")))
        f = QFont(painter.font())
        f.setPointSizeF(10)
        f.setBold(self.ground)
        painter.setFont(f)
        text = painter.fontMetrics().elidedText(self.name, Qt.ElideRight, int(NODE_W - 14))
        painter.drawText(rect, Qt.AlignCenter, text)
        painter.setBrush(QBrush(C_PORT))
        painter.setPen(QPen(C_BODY_EDGE, 1.5))
        painter.drawEllipse(self.port_local(), PORT_R, PORT_R)
        painter.drawLine(self.port_local() + QPointF(-3.5, 0), self.port_local() + QPointF(3.5, 0))
        painter.drawLine(self.port_local() + QPointF(0, -3.5), self.port_local() + QPointF(0, 3.5))

    def itemChange(self, change, value):  # noqa: D102 - Qt API
        if change == QGraphicsItem.ItemPositionHasChanged:
            self.view.body_moved(self.name)
        return super().itemChange(change, value)


class JointItem(QGraphicsItem):
    """A joint edge between two body nodes, labelled with its type letter and name."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.letter = "?"
        self.type = ""
        self.highlighted = False
        self.a = QPointF()
        self.b = QPointF()
        self.offset = 0.0
        self.bodies: tuple[str, str] = ("", "")
        self._path = QPainterPath()
        self._label = QPointF()
        self.fresh = True  # not placed yet (set_geometry not called)
        self.setFlags(QGraphicsItem.ItemIsSelectable)
        self.setZValue(1)

    def set_geometry(self, a: QPointF, b: QPointF, offset: float) -> None:
        """Place the edge between two node centres, bent sideways by `offset` (parallel joints)."""
        self.prepareGeometryChange()
        self.fresh = False
        self.a, self.b, self.offset = QPointF(a), QPointF(b), offset
        mid = (a + b) / 2
        d = b - a
        length = math.hypot(d.x(), d.y()) or 1.0
        normal = QPointF(-d.y() / length, d.x() / length)
        self._label = mid + normal * offset
        p = QPainterPath(a)
        if abs(offset) > 1e-6:
            p.quadTo(mid + normal * (2 * offset), b)
        else:
            p.lineTo(b)
        self._path = p

    def label_pos(self) -> QPointF:
        """Scene position of the type label (the middle of the edge)."""
        return self.mapToScene(self._label)

    def boundingRect(self) -> QRectF:  # noqa: D102 - Qt API
        return self._path.boundingRect().united(QRectF(self._label - QPointF(40, 16), self._label + QPointF(60, 16))).adjusted(-6, -6, 6, 6)

    def shape(self) -> QPainterPath:  # noqa: D102 - Qt API
        s = QPainterPathStroker()
        s.setWidth(10)
        p = s.createStroke(self._path)
        p.addEllipse(self._label, 13, 13)
        return p

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:  # noqa: D102
        painter.setRenderHint(QPainter.Antialiasing)
        selected = self.isSelected()
        if self.highlighted:
            painter.setPen(QPen(C_HILITE, 8, Qt.SolidLine, Qt.RoundCap))
            painter.drawPath(self._path)
        color = C_SELECT if selected else C_EDGE
        painter.setPen(QPen(color, 3.0 if selected else 2.0))
        painter.setBrush(Qt.NoBrush)
        painter.drawPath(self._path)
        painter.setBrush(QBrush(C_HILITE if self.highlighted else QColor("white")))
        painter.drawEllipse(self._label, 12, 12)
        f = QFont(painter.font())
        f.setPointSizeF(9)
        f.setBold(True)
        painter.setFont(f)
        painter.setPen(QPen(color))
        painter.drawText(QRectF(self._label - QPointF(12, 12), self._label + QPointF(12, 12)), Qt.AlignCenter, self.letter)
        f.setBold(False)
        f.setPointSizeF(8)
        painter.setFont(f)
        painter.setPen(QPen(QColor("#5a6270")))
        # (shortened as the body names are: a long joint name ran under the next joint's marker)
        painter.drawText(self._label + self.name_offset(),
                         painter.fontMetrics().elidedText(self.name, Qt.ElideRight, JOINT_NAME_W))

    def name_offset(self) -> QPointF:
        """Where the joint's name starts (its baseline) from the marker's centre: to the right, raised above the edge
        when the edge runs closer to horizontal (the line would cross the text)."""
        d = self.b - self.a
        return QPointF(15, -9) if abs(d.x()) > abs(d.y()) else QPointF(15, 4)


class GraphView(QGraphicsView):
    """The graph editor view: observes the document and selection, edits through the Editor."""

    connectModeChanged = Signal(bool)

    def __init__(self, document, selection, editor, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.document, self.selection, self.editor = document, selection, editor
        self._scene = QGraphicsScene(self)
        self._scene.setSceneRect(-4000, -4000, 8000, 8000)
        self.setScene(self._scene)
        self.setRenderHints(QPainter.Antialiasing | QPainter.TextAntialiasing)
        self.setDragMode(QGraphicsView.RubberBandDrag)
        self.setTransformationAnchor(QGraphicsView.AnchorUnderMouse)
        self.setViewportUpdateMode(QGraphicsView.SmartViewportUpdate)
        self.setBackgroundBrush(QColor("#f7f8fa"))
        self.setMinimumSize(320, 240)
        self.setToolTip("")
        self.bodies: dict[str, BodyItem] = {}
        self.joints: dict[str, JointItem] = {}
        self._syncing = False  # pushing model state into items: do not echo back
        self._groups: dict[frozenset, list[JointItem]] = {}  # joint items by the pair of bodies they join
        self._pairs_of: dict[str, list[frozenset]] = {}  # body -> the keys of _groups with it
        self._connect_mode = False
        self._connect_from: str | None = None
        self._rubber: QGraphicsLineItem | None = None
        self._press_positions: dict[str, QPointF] = {}
        self._editor_line: QLineEdit | None = None
        self._pan: QPointF | None = None
        self._scene.selectionChanged.connect(self._scene_selection_changed)
        document.changed.connect(self.sync)
        document.replaced.connect(self._rebuild)
        selection.changed.connect(self._selection_to_items)
        selection.highlightChanged.connect(self._highlight_to_items)
        self._rebuild()

    # ---- model -> items -------------------------------------------------------------------------------------------
    def _rebuild(self) -> None:
        self._cancel_rename()
        self._syncing = True
        try:
            self._scene.clear()
            self.bodies.clear()
            self.joints.clear()
        finally:
            self._syncing = False
        self._rubber = None
        self.sync()
        QTimer.singleShot(0, self.fit)

    def _fallback_position(self, index: int) -> QPointF:
        # Bodies without a stored position (a document without layout) go on a grid until moved.
        return QPointF((index % 6) * 160.0, (index // 6) * 110.0)

    def sync(self) -> None:
        """Bring the items in line with the model (incremental: only what differs is touched)."""
        m = self.document.mechanism
        self._syncing = True
        try:
            names = m.body_names()
            keep = set(names)
            for gone in [n for n in self.bodies if n not in keep]:
                self._scene.removeItem(self.bodies.pop(gone))
            # joints per body, in one pass over the joints (a scan of every joint for each body, m.joints_of, made a
            # sync O(bodies x joints): 0.39 s of a 0.69 s node move at 1,051 bodies)
            degree: dict[str, int] = {}
            for j in m.joints:
                for x in set(j.bodies):
                    degree[x] = degree.get(x, 0) + 1
            for i, b in enumerate(m.bodies):
                item = self.bodies.get(b.name)
                if item is None:
                    item = BodyItem(self, b.name)
                    self.bodies[b.name] = item
                    self._scene.addItem(item)
                lay = m.layout.get(b.name)
                pos = QPointF(lay[0], lay[1]) if lay is not None else self._fallback_position(i)
                if item.pos() != pos:
                    item.setPos(pos)
                if item.ground != b.ground:
                    item.ground = b.ground
                    item.update()
                tip = f"{b.name}{' (ground)' if b.ground else ''}: {degree.get(b.name, 0)} joint(s)"
                if item.toolTip() != tip:
                    item.setToolTip(tip)
            jkeep = set(m.joint_names())
            for gone in [n for n in self.joints if n not in jkeep]:
                self._scene.removeItem(self.joints.pop(gone))
            for j in m.joints:
                item = self.joints.get(j.name)
                if item is None:
                    item = JointItem(j.name)
                    self.joints[j.name] = item
                    self._scene.addItem(item)
                jt = JOINT_TYPES.get(j.type)
                letter = jt.letter if jt else "?"
                if item.letter != letter or item.type != j.type:
                    item.letter, item.type = letter, j.type
                    item.update()
                # (compared whole: a body renamed or a joint re-attached changed the text, not the letter)
                tip = f"{j.name}: {j.type} joint between {j.bodies[0]} and {j.bodies[1]}"
                if item.toolTip() != tip:
                    item.setToolTip(tip)
                item.bodies = tuple(j.bodies)
            self._layout_edges()
            self._selection_to_items()
            self._highlight_to_items()
        finally:
            self._syncing = False
        ed = self._editor_line
        if ed is not None and ed.property("target") not in self.bodies and ed.property("target") not in self.joints:
            # the item being renamed is gone (Delete or Undo from the toolbar while the editor was open): Enter
            # would have been refused as "unknown joint", over an empty spot
            self._cancel_rename()

    def _layout_edges(self, only_body: str | None = None) -> None:
        if only_body is None:  # (a sync: the joints may have changed; index them by body pair and by body)
            groups: dict[frozenset, list[JointItem]] = {}
            for item in self.joints.values():
                groups.setdefault(frozenset(item.bodies), []).append(item)
            self._groups = groups
            self._pairs_of = {}
            for key in groups:
                for x in key:
                    self._pairs_of.setdefault(x, []).append(key)
            chosen = groups.values()
        else:  # a node dragged: only its own edges (a scan of every joint per mouse move was O(joints))
            chosen = [self._groups[key] for key in self._pairs_of.get(only_body, ())]
        for items in chosen:
            n = len(items)
            for k, item in enumerate(items):
                a, b = (self.bodies[x].pos() for x in item.bodies)
                # Orient the offset consistently for the pair, whichever way each joint lists its bodies.
                sign = 1.0 if item.bodies[0] <= item.bodies[1] else -1.0
                offset = sign * (k - (n - 1) / 2) * EDGE_SPREAD
                if a != item.a or b != item.b or offset != item.offset or item.fresh:
                    # (only edges whose ends moved: every prepareGeometryChange re-indexes the item in the scene,
                    # which for every joint of a 1,000-body graph made each sync cost tens of ms)
                    item.set_geometry(a, b, offset)

    def body_moved(self, name: str) -> None:
        """A node moved (dragged or set from the model): its edges follow."""
        if name in self.bodies and not self._syncing:  # a sync lays all edges out once at its end
            self._layout_edges(only_body=name)

    def _selection_to_items(self) -> None:
        was = self._syncing
        self._syncing = True
        try:
            sb, sj = self.selection.bodies, self.selection.joints
            for n, item in self.bodies.items():
                if item.isSelected() != (n in sb):
                    item.setSelected(n in sb)
            for n, item in self.joints.items():
                if item.isSelected() != (n in sj):
                    item.setSelected(n in sj)
        finally:
            self._syncing = was

    def _highlight_to_items(self) -> None:
        hb, hj = self.selection.highlighted_bodies, self.selection.highlighted_joints
        for n, item in self.bodies.items():
            if item.highlighted != (n in hb):
                item.highlighted = n in hb
                item.update()
        for n, item in self.joints.items():
            if item.highlighted != (n in hj):
                item.highlighted = n in hj
                item.update()

    # ---- items -> selection ---------------------------------------------------------------------------------------
    def _scene_selection_changed(self) -> None:
        if self._syncing:
            return
        items = self._scene.selectedItems()
        self.selection.set(
            bodies=[i.name for i in items if isinstance(i, BodyItem)],
            joints=[i.name for i in items if isinstance(i, JointItem)],
        )

    # ---- geometry helpers ---------------------------------------------------------------------------------------
    def body_at(self, view_pos) -> BodyItem | None:
        """The body node under a viewport position, if any."""
        for it in self.items(view_pos):
            if isinstance(it, BodyItem):
                return it
        return None

    def fit(self) -> None:
        """Zoom to show the whole graph."""
        if not self.bodies:
            self.resetTransform()
            self.centerOn(0, 0)
            return
        r = QRectF()
        for it in self.bodies.values():
            r = r.united(it.sceneBoundingRect())
        r = r.adjusted(-60, -60, 60, 60)
        self.fitInView(r, Qt.KeepAspectRatio)
        # Never zoom in beyond 1:1 (a two-node graph would otherwise fill the screen).
        if self.transform().m11() > 1.0:
            self.resetTransform()
            self.centerOn(r.center())

    def cursor_scene_pos(self) -> QPointF:
        """Where a new body goes: under the mouse if it is over the view, else the view's centre."""
        p = self.mapFromGlobal(self.cursor().pos())
        if self.viewport().rect().contains(p):
            return self.mapToScene(p)
        return self.mapToScene(self.viewport().rect().center())

    def add_body_here(self) -> str:
        """Add a body under the mouse (shortcut B) or in the view centre, clear of other nodes."""
        p = self.cursor_scene_pos()
        for _ in range(50):
            if not any(abs(it.pos().x() - p.x()) < NODE_W and abs(it.pos().y() - p.y()) < NODE_H + 10 for it in self.bodies.values()):
                break
            p += QPointF(0, NODE_H + 24)
        return self.editor.add_body((p.x(), p.y()))

    def set_connect_mode(self, on: bool) -> None:
        """In connect mode every drag from a body draws a joint (otherwise only drags from the + handle do)."""
        if on != self._connect_mode:
            self._connect_mode = on
            self.viewport().setCursor(Qt.CrossCursor if on else Qt.ArrowCursor)
            self.connectModeChanged.emit(on)

    # ---- mouse ------------------------------------------------------------------------------------------------------
    def mousePressEvent(self, event) -> None:  # noqa: D102 - Qt API
        self._cancel_rename(commit=True)
        if event.button() == Qt.MiddleButton:
            self._pan = event.position()
            self.viewport().setCursor(Qt.ClosedHandCursor)
            return
        if event.button() == Qt.LeftButton:
            item = self.body_at(event.position().toPoint())
            sp = self.mapToScene(event.position().toPoint())
            if item is not None and (self._connect_mode or item.on_port(sp)):
                self._connect_from = item.name
                start = item.mapToScene(item.port_local()) if not self._connect_mode else item.pos()
                self._rubber = QGraphicsLineItem(start.x(), start.y(), sp.x(), sp.y())
                self._rubber.setPen(QPen(C_SELECT, 2, Qt.DashLine))
                self._rubber.setZValue(5)
                self._scene.addItem(self._rubber)
                event.accept()
                return
        super().mousePressEvent(event)
        self._press_positions = {n: QPointF(it.pos()) for n, it in self.bodies.items() if it.isSelected()}

    def mouseMoveEvent(self, event) -> None:  # noqa: D102 - Qt API
        if self._pan is not None:
            d = event.position() - self._pan
            self._pan = event.position()
            self.horizontalScrollBar().setValue(self.horizontalScrollBar().value() - int(d.x()))
            self.verticalScrollBar().setValue(self.verticalScrollBar().value() - int(d.y()))
            return
        if self._rubber is not None:
            sp = self.mapToScene(event.position().toPoint())
            line = self._rubber.line()
            self._rubber.setLine(line.x1(), line.y1(), sp.x(), sp.y())
            return
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event) -> None:  # noqa: D102 - Qt API
        if self._pan is not None and event.button() == Qt.MiddleButton:
            self._pan = None
            self.viewport().setCursor(Qt.CrossCursor if self._connect_mode else Qt.ArrowCursor)
            return
        if self._rubber is not None and event.button() == Qt.LeftButton:
            self._scene.removeItem(self._rubber)
            self._rubber = None
            source, self._connect_from = self._connect_from, None
            target = self.body_at(event.position().toPoint())
            if source is not None and source not in self.bodies:  # (deleted, or undone, while the line was drawn)
                self.editor.message.emit(f"No joint added: the body '{source}' the line started from is gone")
            elif target is None:
                self.editor.message.emit("Drop on another body to add a joint")
            elif source is not None:
                if event.modifiers() & Qt.ShiftModifier and source != target.name:
                    t = self._ask_joint_type(event.globalPosition().toPoint())
                    if t is not None:
                        self.editor.connect(source, target.name, t)
                else:
                    self.editor.connect(source, target.name)
            return
        super().mouseReleaseEvent(event)
        if event.button() == Qt.LeftButton:
            moved = {
                n: (it.pos().x(), it.pos().y())
                for n, it in self.bodies.items()
                if n in self._press_positions and it.pos() != self._press_positions[n]
            }
            self._press_positions = {}
            if moved:
                self.editor.move(moved)  # the whole drag is one undo step

    def _ask_joint_type(self, global_pos) -> str | None:
        """The compact joint-type popup (Shift while dropping a joint); None if dismissed."""
        menu = QMenu(self)
        menu.setObjectName("jointTypePopup")
        for t in joint_types_for(self.document.mechanism.space):
            a = menu.addAction(f"{JOINT_TYPES[t].letter}   {t}")
            a.setData(t)
            a.setToolTip(JOINT_TYPES[t].description)
        chosen = exec_menu(menu, global_pos)
        return chosen.data() if chosen is not None else None

    def mouseDoubleClickEvent(self, event) -> None:  # noqa: D102 - Qt API
        if event.button() != Qt.LeftButton:
            return super().mouseDoubleClickEvent(event)
        pos = event.position().toPoint()
        body = self.body_at(pos)
        if body is not None:
            self.start_rename(body.name)
            return
        for it in self.items(pos):
            if isinstance(it, JointItem):
                self.start_rename(it.name)
                return
        sp = self.mapToScene(pos)
        self.editor.add_body((sp.x(), sp.y()))

    def wheelEvent(self, event) -> None:  # noqa: D102 - Qt API
        factor = 1.0015 ** event.angleDelta().y()
        scale = self.transform().m11() * factor
        if 0.1 < scale < 4.0:
            self.scale(factor, factor)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: D102 - Qt API
        # Arrow keys nudge the selected nodes (consecutive nudges merge into one undo step).
        steps = {Qt.Key_Left: (-10, 0), Qt.Key_Right: (10, 0), Qt.Key_Up: (0, -10), Qt.Key_Down: (0, 10)}
        if event.key() in steps and self.selection.bodies:
            dx, dy = steps[event.key()]
            new = {}
            for n in self.selection.bodies:
                p = self.bodies[n].pos()
                new[n] = (p.x() + dx, p.y() + dy)
            self.editor.move(new, nudge=True)
            return
        if event.key() == Qt.Key_Escape:
            if self._rubber is not None:
                self._scene.removeItem(self._rubber)
                self._rubber = None
                self._connect_from = None
                return
            if self._connect_mode:
                self.set_connect_mode(False)
                return
            self.selection.clear()
            return
        super().keyPressEvent(event)

    def contextMenuEvent(self, event) -> None:  # noqa: D102 - Qt API
        pos = event.pos()
        menu = QMenu(self)
        body = self.body_at(pos)
        joint = next((it for it in self.items(pos) if isinstance(it, JointItem)), None) if body is None else None
        if body is not None:
            if body.name not in self.selection.bodies:
                self.selection.set(bodies=[body.name])
            menu.addAction("Toggle ground", lambda: self.editor.toggle_ground([body.name]))
            menu.addAction("Rename", lambda: self.start_rename(body.name))
            menu.addAction("Delete", lambda: self.editor.delete(bodies=[body.name]))
        elif joint is not None:
            if joint.name not in self.selection.joints:
                self.selection.set(joints=[joint.name])
            types = menu.addMenu("Joint type")
            for t in joint_types_for(self.document.mechanism.space):
                a = QAction(f"{JOINT_TYPES[t].letter}  {t}", types)
                a.setCheckable(True)
                a.setChecked(t == joint.type)
                a.triggered.connect(lambda _c=False, t=t, n=joint.name: self.editor.update_joint(n, type=t))
                types.addAction(a)
            menu.addAction("Rename", lambda: self.start_rename(joint.name))
            menu.addAction("Delete", lambda: self.editor.delete(joints=[joint.name]))
        else:
            sp = self.mapToScene(pos)
            menu.addAction("Add body here", lambda: self.editor.add_body((sp.x(), sp.y())))
            menu.addAction("Auto layout", self.editor.layout_all)
            menu.addAction("Fit graph", self.fit)
        exec_menu(menu, event.globalPos())

    # ---- rename in place (F2) ----------------------------------------------------------------------------------
    def start_rename(self, name: str | None = None) -> bool:
        """Open an in-place editor over a node or joint label (default: the single selected item)."""
        if name is None:
            sel = list(self.selection.bodies) + list(self.selection.joints)
            if len(sel) != 1:
                self.editor.message.emit("Select one body or joint to rename")
                return False
            name = sel[0]
        self._cancel_rename()
        if name in self.bodies:
            center = self.bodies[name].pos()
        elif name in self.joints:
            center = self.joints[name].label_pos() + QPointF(30, 0)
        else:
            return False
        ed = QLineEdit(name, self.viewport())
        ed.setObjectName("renameEditor")
        ed.setFixedWidth(int(NODE_W + 20))
        p = self.mapFromScene(center)
        ed.move(p.x() - ed.width() // 2, p.y() - ed.sizeHint().height() // 2)
        ed.selectAll()
        ed.returnPressed.connect(self._commit_rename)
        ed.setProperty("target", name)
        ed.installEventFilter(self)
        ed.show()
        ed.setFocus()
        self._editor_line = ed
        return True

    def rename_editor(self) -> QLineEdit | None:
        """The open in-place rename editor (None when closed)."""
        return self._editor_line

    def finish_rename(self) -> str:
        """Take the name typed in the open rename editor, as Enter does; the refusal's reason ('' when taken or no
        editor is open; a refused name stays in the editor)."""
        self._cancel_rename(commit=True)
        return "" if self._editor_line is None else self._editor_line.toolTip()

    def eventFilter(self, obj, event) -> bool:  # noqa: D102 - Qt API
        if obj is self._editor_line and event.type() == event.Type.KeyPress and event.key() == Qt.Key_Escape:
            self._cancel_rename()
            return True
        return super().eventFilter(obj, event)

    def _commit_rename(self) -> None:
        ed = self._editor_line
        if ed is None:
            return
        old = ed.property("target")
        err = self.editor.rename(old, ed.text())
        if err is not None:
            # Keep the typed text and say why (never silently drop the user's input).
            ed.setStyleSheet("QLineEdit { border: 2px solid #c62828; background: #ffebee; }")
            ed.setToolTip(err.message)
            return
        self._cancel_rename()

    def _cancel_rename(self, commit: bool = False) -> None:
        ed = self._editor_line
        if ed is None:
            return
        if commit and ed.text().strip() != ed.property("target"):
            self._commit_rename()
            if self._editor_line is not None:  # refused: stays open
                return
        self._editor_line = None
        ed.removeEventFilter(self)
        ed.hide()
        ed.deleteLater()
        self.setFocus()
