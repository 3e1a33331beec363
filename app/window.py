"""The main window: wires one Document and Selection to the panels, docks, menus and actions (no logic here)."""

from __future__ import annotations

import platform
from pathlib import Path

import numpy as np
import PySide6
from PySide6.QtCore import QEvent, QSettings, Qt, qVersion
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QComboBox, QDockWidget, QLabel, QMainWindow, QMenu, QMessageBox, QToolBar, QWidget

from core import __version__
from core.joints import JOINT_TYPES

from . import collector
from .actions import Actions, icon
from .document import Document
from .editing import Editor, joint_types_for
from .export import ExportController
from .files import FileController, examples
from .panels.graph import GraphView
from .panels.properties import PropertiesPanel
from .panels.status import StatusReadout
from .panels.structure import StructurePanel
from .playback import MotionPanel, Playback
from .plots import PlotsPanel
from .selection import Selection
from .teaching import FourBarPanel
from .viewport import Viewport3D

__all__ = ["MainWindow"]

STATE_VERSION = 3  # bump when the dock set changes, so an old saved layout is not applied
PROPERTIES_MIN_WIDTH = 380  # px, the Properties dock's first-start width at least (default_dock_sizes)


class MainWindow(QMainWindow):
    """Linkwright's main window over one document."""

    def __init__(self, document: Document | None = None, parent: QWidget | None = None, remember_layout: bool = True) -> None:
        super().__init__(parent)
        # reference cycles are collected in this thread only while the window lives: never a run's thread, which
        # would run the C++ destructors of the GUI's objects (app.collector; first, before a run starts)
        collector.hold(self)
        self.remember_layout = remember_layout  # False for --screenshot: a fixed layout, the user's settings untouched
        self.setObjectName("LinkwrightMainWindow")
        self.setWindowIcon(icon("app"))
        self.setAcceptDrops(True)
        self.setDockOptions(QMainWindow.AnimatedDocks | QMainWindow.AllowTabbedDocks | QMainWindow.AllowNestedDocks)
        self.document = document if document is not None else Document()
        self.selection = Selection(self)
        self.editor = Editor(self.document, self.selection, self)
        self.files = FileController(self, self.document, self)

        self.graph = GraphView(self.document, self.selection, self.editor)
        self.graph.setObjectName("graphEditor")
        self.setCentralWidget(self.graph)
        self.properties = PropertiesPanel(self.document, self.selection, self.editor)
        self.structure = StructurePanel(self.document, self.selection)
        self.viewport = Viewport3D(self.document, self.selection)
        self.viewport.setObjectName("viewport3d")
        self.viewport.setMinimumSize(280, 220)
        self.dock_properties = self._dock("Properties", "propertiesDock", self.properties, Qt.LeftDockWidgetArea)
        self.dock_viewport = self._dock("3D View", "viewportDock", self.viewport, Qt.RightDockWidgetArea)
        self.dock_structure = self._dock("Structure", "structureDock", self.structure, Qt.BottomDockWidgetArea)
        self.playback = Playback(self.document, self.viewport, self)
        self.motion = MotionPanel(self.playback)
        self.dock_motion = self._dock("Motion", "motionDock", self.motion, Qt.RightDockWidgetArea)
        self.plots = PlotsPanel(self.playback)
        self.dock_plots = self._dock("Plots", "plotsDock", self.plots, Qt.BottomDockWidgetArea)
        self.fourbar = FourBarPanel(self.document)
        self.dock_fourbar = self._dock("Four-bar", "fourBarDock", self.fourbar, Qt.BottomDockWidgetArea)
        self.tabifyDockWidget(self.dock_structure, self.dock_plots)  # bottom tabs: the graph and 3D view stay large
        self.tabifyDockWidget(self.dock_plots, self.dock_fourbar)
        self.dock_structure.raise_()
        self._layout_restored = False

        self.status = StatusReadout(self.statusBar(), self.document)
        self.editor.message.connect(self.status.show)
        self.files.message.connect(self.status.show)
        self.properties.message.connect(self.status.show)  # (its refusals: the latest is the one the bar says)
        self.properties.refusalWithdrawn.connect(self.status.withdraw)
        # the rank-based mobility and whether it is on its way: the Structure panel and the status bar judge the
        # drivers by it, and not at all while it is being computed
        self._run_under_way = self.playback.is_running()
        self._held_rank = None  # (structure key, RankMobility): the last count that arrived (_show_rank_mobility)
        self.document.replaced.connect(self._forget_rank)
        self.playback.mobilityChanged.connect(self._show_rank_mobility)
        self.playback.runningChanged.connect(self._on_running)
        self.playback.recording.staleChanged.connect(self._show_rank_mobility)
        self._show_rank_mobility()
        self.exports = ExportController(self, self.document, self.viewport, self.playback, self)
        self.exports.message.connect(self.status.show)
        self.action_set = Actions(self, self.files, self.editor, self.graph, self.document, self.viewport, self.playback,
                                  self.exports)
        self.motion.use_actions(self.action_set.run, self.action_set.stop, self.action_set.dynamics)
        self.playback.crashed.connect(self._run_crashed)
        self._build_menus()
        self._build_toolbar()

        self.document.pathChanged.connect(self._update_title)
        self.document.modifiedChanged.connect(self._update_title)
        self.document.changed.connect(self._update_title)
        self.files.recentChanged.connect(self._fill_recent)
        self._update_title()
        self._fill_recent()
        self.resize(1440, 900)
        if remember_layout:
            self.restore_layout()

    # ---- construction -----------------------------------------------------------------------------------------------
    def _dock(self, title: str, name: str, widget: QWidget, area) -> QDockWidget:
        d = QDockWidget(title, self)
        d.setObjectName(name)
        d.setWidget(widget)
        self.addDockWidget(area, d)
        return d

    def _build_menus(self) -> None:
        a = self.action_set
        mb = self.menuBar()
        f = mb.addMenu("&File")
        new_menu = f.addMenu("&New")
        new_menu.setObjectName("newMenu")
        new_menu.setToolTipsVisible(True)  # each kind says what it starts with
        # The toolbar's New stays "New"; in this menu it reads as the kind of document (same action, same shortcut).
        new_menu.addAction(f"&Planar Mechanism\t{a.new.shortcut().toString()}", a.new.trigger).setToolTip(
            a.new.toolTip())
        new_menu.addAction("&Spatial Mechanism", a.new_spatial.trigger).setToolTip(a.new_spatial.toolTip())
        new_menu.addAction(f"&Contact Scene\t{a.new_contact.shortcut().toString()}", a.new_contact.trigger).setToolTip(
            a.new_contact.toolTip())
        f.addAction(a.open)
        self.recent_menu = f.addMenu("Open &Recent")
        self.examples_menu = f.addMenu("&Examples")
        for p in examples():
            self.examples_menu.addAction(p.stem.replace("_", " "), lambda p=p: self.files.open_example(p)).setToolTip(str(p))
        f.addSeparator()
        f.addActions([a.save, a.save_as, a.revert])
        export_menu = f.addMenu("&Export")
        export_menu.setObjectName("exportMenu")
        export_menu.setToolTipsVisible(True)  # a greyed-out item says why on hover
        export_menu.addActions([a.export_run_data, a.export_png, a.export_animation])
        f.addSeparator()
        f.addAction(a.quit)
        e = mb.addMenu("&Edit")
        e.addActions([a.undo, a.redo])
        e.addSeparator()
        e.addActions([a.add_body, a.connect_mode, a.ground, a.rename, a.delete, a.add_driver])
        shapes = e.addMenu("Add &Shaped Body")
        shapes.setObjectName("addShapeMenu")
        shapes.addActions(list(a.add_shapes.values()))
        e.addSeparator()
        e.addAction(a.select_all)
        v = mb.addMenu("&View")
        v.addActions([a.layout, a.fit_graph])
        if a.views:
            v.addSeparator()
            v.addActions(a.views)
        v.addSeparator()
        r = mb.addMenu("&Run")
        r.addActions([a.run, a.stop, a.play])
        r.addSeparator()
        r.addAction(a.dynamics)
        r.addAction(a.compare)
        r.setToolTipsVisible(True)  # a greyed-out Dynamics says why on hover
        for d in (self.dock_properties, self.dock_viewport, self.dock_motion, self.dock_structure, self.dock_plots,
                  self.dock_fourbar):
            v.addAction(d.toggleViewAction())
        h = mb.addMenu("&Help")
        h.addAction("&About Linkwright", self.about)
        h.addAction("Keyboard &Shortcuts", self.shortcuts)

    def _build_toolbar(self) -> None:
        a = self.action_set
        tb = QToolBar("Main", self)
        tb.setObjectName("mainToolbar")
        tb.setIconSize(a.toolbar_icon_size())
        tb.setToolButtonStyle(Qt.ToolButtonTextBesideIcon)
        tb.addActions([a.new, a.open, a.save])
        tb.addSeparator()
        tb.addActions([a.undo, a.redo])
        tb.addSeparator()
        tb.addActions([a.add_body, a.connect_mode])
        tb.addWidget(QLabel(" Joint: "))
        self.joint_combo = QComboBox()
        self.joint_combo.setObjectName("jointTypeCombo")
        self.joint_combo.setToolTip("Type of the next joint drawn (change a joint's type in Properties or by right-click)")
        self.joint_combo.activated.connect(lambda _i: self.editor.set_joint_type(self.joint_combo.currentData()))
        self.editor.jointTypeChanged.connect(self._show_joint_type)
        self.document.replaced.connect(self._fill_joint_types)
        self.document.changed.connect(self._follow_space)  # a space switched by an edit, its undo or its redo
        tb.addWidget(self.joint_combo)
        self._fill_joint_types()
        tb.addActions([a.ground, a.delete])
        tb.addSeparator()
        tb.addActions([a.layout, a.fit_graph])
        tb.addSeparator()
        tb.addActions([a.run, a.stop])
        self.addToolBar(Qt.TopToolBarArea, tb)
        self.toolbar = tb

    def _follow_space(self) -> None:
        """After an edit (or its undo, redo) that switched the document's space: the Joint box offers that space's
        types, and the 3D view looks from that space's default direction (front for planar, iso for spatial: its
        up axis follows the space, y or z, and the planar front view looks along the spatial up)."""
        space = self.document.mechanism.space
        if space == self._joint_space:
            return
        self._fill_joint_types()
        self.viewport.scene()  # (brings the view up to the document: its presets are the new space's)
        self.viewport.set_view("front" if space == "planar" else "iso")

    def _fill_joint_types(self) -> None:
        self._joint_space = self.document.mechanism.space
        self.joint_combo.blockSignals(True)
        self.joint_combo.clear()
        for t in joint_types_for(self.document.mechanism.space):
            self.joint_combo.addItem(f"{JOINT_TYPES[t].letter} — {t}", t)
        self.joint_combo.blockSignals(False)
        self._show_joint_type(self.editor.joint_type)

    def _show_joint_type(self, name: str) -> None:
        self.joint_combo.blockSignals(True)
        self.joint_combo.setCurrentIndex(max(self.joint_combo.findData(name), 0))
        self.joint_combo.blockSignals(False)

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        items = self.files.recent()
        for i, p in enumerate(items):
            self.recent_menu.addAction(f"&{i + 1} {Path(p).name}", lambda p=p: self.files.open_recent(p)).setToolTip(p)
        if items:
            self.recent_menu.addSeparator()
            self.recent_menu.addAction("Clear Menu", self.files.clear_recent)
        self.recent_menu.setEnabled(bool(items))

    def _on_running(self, on: bool) -> None:
        self._run_under_way = on
        self._show_rank_mobility()

    def _show_rank_mobility(self, *_args) -> None:
        """Give the Structure panel and the status bar Playback's rank-based mobility of the current geometry, and
        whether it is pending. Playback analyses the geometry at the start of a run when it has no count for it, so
        one is pending while its count is None and a run of the current document is under way or scheduled (the
        debounce after an edit); not when the run ended without one (its analysis failed), nor when no run computes
        it (a contact run that waits for Run, frames stale after an edit, a document that cannot run).

        While a count is pending for a geometry edit of the same structure (the same bodies and joints: a point
        dragged, a length typed) the views keep judging by the last count that arrived, as an editor keeps its last
        diagnostics until new ones are ready: the verdict changes once, when the new count arrives, instead of going
        grey at every edit (about 150 ms each, all the while a point is dragged). Otherwise (a file opened, a joint
        added or removed) they show the pending state."""
        rank = self.playback.mobility
        pending = rank is None and self._run_under_way and not self.playback.recording.stale
        rep = self.document.structure()
        shape = (tuple(rep.bodies), tuple(rep.joints), rep.mobility, rep.floating_freedoms)
        if rank is not None:
            self._held_rank = (shape, rank)
        elif pending and self._held_rank is not None and self._held_rank[0] == shape:
            rank, pending = self._held_rank[1], False
        self.structure.set_rank_mobility(rank, pending)
        self.status.set_rank_mobility(rank, pending)

    def _forget_rank(self) -> None:
        self._held_rank = None  # (a different mechanism: its count is not the last one's)
        self._show_rank_mobility()

    def _update_title(self, *_args) -> None:
        name = self.document.path.name if self.document.path else "Untitled"
        title = self.document.mechanism.name  # (may be empty: it is a title, and the file may leave it empty)
        if title in (name, Path(name).stem):
            title = ""  # (a new document is 'Untitled', named 'Untitled': 'Untitled — Untitled' said it twice)
        self.setWindowTitle(f"{name}[*] — {title} — Linkwright" if title else f"{name}[*] — Linkwright")
        self.setWindowModified(self.document.modified)

    # ---- help ---------------------------------------------------------------------------------------------------------
    def about_text(self) -> str:
        """Versions shown in Help ▸ About."""
        renderer = self.viewport.renderer_info() or "unknown (the 3D view has not drawn yet)"
        return (
            f"<h3>Linkwright {__version__}</h3><p>Draw mechanisms as graphs, see their structure, animate their motion.</p>"
            f"<table><tr><td>Qt</td><td>{qVersion()}</td></tr><tr><td>PySide6</td><td>{PySide6.__version__}</td></tr>"
            f"<tr><td>numpy</td><td>{np.__version__}</td></tr><tr><td>Python</td><td>{platform.python_version()}</td></tr>"
            f"<tr><td>OpenGL renderer</td><td>{renderer}</td></tr></table>"
        )

    def about(self) -> None:
        """Help ▸ About."""
        QMessageBox.about(self, "About Linkwright", self.about_text())

    def shortcuts(self) -> None:
        """Help ▸ Keyboard Shortcuts."""
        rows = "".join(
            f"<tr><td>{a.text().replace('&', '')}</td><td><b>{a.shortcut().toString()}</b></td></tr>"
            for a in self.action_set.__dict__.values()
            if hasattr(a, "shortcut") and a.shortcut().toString()
        )
        QMessageBox.information(self, "Keyboard shortcuts", f"<table>{rows}</table><p>Double-click the canvas: add a body. Drag from a body's + handle to another body: add a joint.</p>")

    def _run_crashed(self, message: str, details: str) -> None:
        """A run failed with an exception (a bug): say so; the frames before it stay, the app goes on."""
        QMessageBox.critical(self, "Run failed", f"{message}\n\nThe frames computed before the failure are kept; "
                             "the details are in the log.")

    # ---- settings, drops, close ------------------------------------------------------------------------------------
    def save_layout(self) -> None:
        """Remember the window geometry and dock layout."""
        s = QSettings()
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/state", self.saveState(STATE_VERSION))

    def restore_layout(self) -> None:
        """Restore the remembered geometry and dock layout, if any."""
        s = QSettings()
        geo, state = s.value("window/geometry"), s.value("window/state")
        if geo is not None:
            self.restoreGeometry(geo)
        if state is not None:
            self._layout_restored = self.restoreState(state, STATE_VERSION)

    def default_dock_sizes(self) -> None:
        """The first-start proportions: graph editor largest, a wide 3D view, a compact structure strip."""
        w = max(self.width(), 1000)
        # (Properties at least as wide as its form's rows: at 1440 px a fifth cut its fields and the pairs' mu column)
        props = max(int(w * 0.2), PROPERTIES_MIN_WIDTH)
        # (the 3D View at least as wide as its toolbar: at 1440 px its last buttons went behind an overflow arrow)
        view = max(int(w * 0.32), self.viewport.toolbar.sizeHint().width() + 8)
        self.resizeDocks([self.dock_properties, self.dock_viewport], [props, view], Qt.Horizontal)
        self.resizeDocks([self.dock_structure], [int(max(self.height(), 700) * 0.3)], Qt.Vertical)

    def showEvent(self, event) -> None:  # noqa: D102 - Qt API
        super().showEvent(event)
        if not self._layout_restored:
            self._layout_restored = True  # only once, and never over a remembered layout
            self.default_dock_sizes()

    def changeEvent(self, event) -> None:  # noqa: D102 - Qt API
        super().changeEvent(event)
        if event.type() == QEvent.ActivationChange and self.isActiveWindow() and hasattr(self, "files"):
            self.files.check_disk()  # (another program changed or deleted the file: the status bar says so)

    def dragEnterEvent(self, event) -> None:  # noqa: D102 - Qt API
        urls = event.mimeData().urls()
        if urls and urls[0].isLocalFile():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: D102 - Qt API
        urls = [u for u in event.mimeData().urls() if u.isLocalFile()]
        if urls:
            event.acceptProposedAction()
            self.files.open_path(urls[0].toLocalFile())

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: D102 - Qt API
        if not self.files.maybe_save():
            event.ignore()
            return
        if self.remember_layout:
            self.save_layout()
        self.files.shutdown()
        self.exports.shutdown()
        self.playback.shutdown()  # cancel the solve and join its thread
        event.accept()
