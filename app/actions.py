"""The window's QActions: text, shortcut, tooltip, icon and the controller verb each one triggers."""

from __future__ import annotations

from PySide6.QtCore import QObject, QSize, Qt
from PySide6.QtGui import QAction, QIcon, QKeySequence
from PySide6.QtWidgets import QStyle, QWidget

from core.resources import resource_dir
from core.run import dynamics_option

__all__ = ["Actions", "icon"]

ICONS = resource_dir() / "icons"
DYNAMICS_TIP = ("Simulate the mechanism's dynamics under gravity and contact (the contact time-stepper) instead of "
                "its driven kinematics: adds the document's simulation section (dt, duration, method); unchecking "
                "removes it. Undoable")
RUN_DATA_TIP = ("Write the Motion dock's run to CSV or .npz, as `linkwright simulate --out` (contact) or "
                "`linkwright kinematics --csv` (driven mechanism) write it")


def icon(name: str) -> QIcon:
    """An icon from resources/icons (SVG)."""
    return QIcon(str(ICONS / f"{name}.svg"))


class _EditTip(QObject):
    """Keeps the Undo (Redo) action's tooltip and text naming the edit, 'Undo Rename body … (Ctrl+Z)', and the action
    enabled while the stack can undo (redo); a child of the action, so the connections end with it (the stack is
    cleared after the window's actions are gone)."""

    def __init__(self, action: QAction, verb: str, keys: str) -> None:
        super().__init__(action)
        self._verb, self._keys = verb, keys

    def show(self, text: str) -> None:
        self.parent().setToolTip(f"{self._verb} {text} ({self._keys})" if text else f"{self._verb} ({self._keys})")
        self.parent().setText(f"&{self._verb} {text}" if text else f"&{self._verb}")  # (the Edit menu's item)

    def enable(self, on: bool) -> None:
        self.parent().setEnabled(on)


class Actions:
    """Creates every action of the main window and connects it to the file controller, editor and views."""

    def __init__(self, window: QWidget, files, editor, graph, document, viewport, playback=None, exports=None) -> None:
        st = window.style()
        self._window = window
        self._files = files

        def act(text: str, slot, shortcut=None, tip: str = "", ico: QIcon | None = None, checkable: bool = False) -> QAction:
            a = QAction(text, window)
            if shortcut is not None:
                keys = shortcut if isinstance(shortcut, (list, tuple)) else [shortcut]
                a.setShortcuts([QKeySequence(k) for k in keys])
            label = tip or text.replace("&", "").rstrip(".")
            if a.shortcut().toString():
                label += f" ({a.shortcut().toString(QKeySequence.NativeText)})"
            a.setToolTip(label)
            a.setStatusTip(tip or label)
            if ico is not None:
                a.setIcon(ico)
            a.setCheckable(checkable)
            if checkable:
                a.toggled.connect(lambda on, a=a: self._checked(a, slot, on))
            else:
                a.triggered.connect(lambda _checked=False: self._guarded(slot))
            window.addAction(a)  # shortcuts work whichever dock has focus
            return a

        # File
        self.new = act("&New", files.new, QKeySequence.New, "Start an empty planar mechanism (x-y plane)",
                       st.standardIcon(QStyle.SP_FileIcon))
        self.new_spatial = act("New &Spatial Mechanism", files.new_spatial, None,
                               "Start an empty spatial mechanism: 6 freedoms per body, every joint type (cylindrical, "
                               "universal, spherical, planar, helical, ...)")
        self.open = act("&Open…", files.open, QKeySequence.Open, "Open a mechanism file", st.standardIcon(QStyle.SP_DialogOpenButton))
        self.save = act("&Save", files.save, QKeySequence.Save, "Save the document", st.standardIcon(QStyle.SP_DialogSaveButton))
        self.save_as = act("Save &As…", files.save_as, QKeySequence("Ctrl+Shift+S"), "Save under another name")
        self.revert = act("&Revert", files.revert, None, "Reload the file, dropping unsaved changes", st.standardIcon(QStyle.SP_BrowserReload))
        self.quit = act("&Quit", window.close, QKeySequence("Ctrl+Q"), "Quit Linkwright")
        if exports is not None:
            self.export_png = act("3D View as &PNG…", exports.export_png, None, "Save the 3D view as drawn now to a PNG")
            self.export_animation = act("&Animation (GIF, MP4)…", exports.export_animation, QKeySequence("Ctrl+E"),
                                        "Render the 3D view's animation to a GIF or an MP4 (runs the document first)")
            self.export_run_data = act("&Run Data (CSV, NPZ)…", exports.export_run_data, None, RUN_DATA_TIP)
            if playback is not None:
                def show_run_data_state(*_args) -> None:
                    has = exports.has_run()
                    self.export_run_data.setEnabled(has)
                    tip = RUN_DATA_TIP if has else "No run to export yet: run the document (Run, F5) first"
                    self.export_run_data.setToolTip(tip)
                    self.export_run_data.setStatusTip(tip)

                for sig in (playback.recording.cleared, playback.recording.grew):
                    sig.connect(show_run_data_state)
                show_run_data_state()
        self.new_contact = act("New &Contact Scene", files.new_contact_scene, QKeySequence("Ctrl+Shift+N"),
                               "Start a contact scene: a ground plane, z up; add shaped bodies to it")

        # Edit
        # (the stack's own createUndoAction connects its triggered to QUndoStack.undo before any slot of ours: a typed
        # entry not yet confirmed could not be taken first, and Undo undid an older edit while the entry was lost)
        stack = document.undo_stack
        self.undo = act("&Undo", lambda: (stack.undo(), editor.undone()), "Ctrl+Z", "Undo",
                        st.standardIcon(QStyle.SP_ArrowBack))
        self.redo = act("&Redo", lambda: (stack.redo(), editor.redone()), ["Ctrl+Shift+Z", "Ctrl+Y"], "Redo",
                        st.standardIcon(QStyle.SP_ArrowForward))
        # the toolbar's buttons say "Undo" and "Redo" (the action's text names the edit, "Undo Add driver of R1": the
        # buttons widened with it and pushed Run and Stop behind the toolbar's overflow arrow); the tooltip names it
        for action, verb, keys, changed, can in (
                (self.undo, "Undo", "Ctrl+Z", stack.undoTextChanged, stack.canUndoChanged),
                (self.redo, "Redo", "Ctrl+Shift+Z", stack.redoTextChanged, stack.canRedoChanged)):
            action.setIconText(verb)
            tip = _EditTip(action, verb, keys)
            changed.connect(tip.show)
            can.connect(tip.enable)
            tip.show(stack.undoText() if verb == "Undo" else stack.redoText())
            tip.enable(stack.canUndo() if verb == "Undo" else stack.canRedo())
        self.add_body = act("Add &Body", graph.add_body_here, "B", "Add a body under the mouse (or double-click the canvas)", icon("add_body"))
        self.connect_mode = act(
            "&Connect Mode", graph.set_connect_mode, "J", "Drag from body to body to add joints (or drag from a body's + handle)", icon("connect"), checkable=True
        )
        graph.connectModeChanged.connect(self.connect_mode.setChecked)
        self.ground = act("Toggle &Ground", editor.toggle_ground, "G", "Mark the selected body as the fixed ground", icon("ground"))
        self.delete = act(
            "&Delete", editor.delete_selection, [QKeySequence.Delete, QKeySequence("Backspace")], "Delete the selection (a body takes its joints)", st.standardIcon(QStyle.SP_TrashIcon)
        )
        self.rename = act("Re&name", graph.start_rename, "F2", "Rename the selected body or joint in place", icon("rename"))
        self.select_all = act("Select &All", lambda: editor.selection.set(editor.document.mechanism.body_names(), editor.document.mechanism.joint_names()), QKeySequence.SelectAll)
        from .editing import SHAPE_PRESETS
        from .scene import add_shaped_body

        self.add_shapes = {
            kind: act(kind.capitalize() + ("" if kind == "halfspace" else "…"),
                      lambda k=kind: add_shaped_body(window, editor, k), None,
                      "Add a fixed floor plane, facing up against the gravity (z <= 0 when gravity is along -z)"
                      if kind == "halfspace" else f"Add a 1 kg {kind} at a point you choose")
            for kind in SHAPE_PRESETS
        }
        self.add_driver = act("Add D&river", lambda: editor.add_driver(next(iter(editor.selection.joints)) if len(editor.selection.joints) == 1 else None), "Ctrl+D", "Drive the selected joint with q = t")

        # View
        self.layout = act("Auto &Layout", editor.layout_all, "Ctrl+L", "Lay the graph out automatically (stress majorization; computed in the background)", icon("layout"))
        self.fit_graph = act("&Fit Graph", graph.fit, "F", "Zoom the graph editor to show every body", icon("fit"))
        self.views = []
        if viewport is not None:
            for key, (text, sc) in {"front": ("Front View", "Ctrl+1"), "top": ("Top View", "Ctrl+2"), "iso": ("Iso View", "Ctrl+3"), "fit": ("Fit 3D View", "Ctrl+0")}.items():
                self.views.append(act(text, lambda k=key: viewport.set_view(k), sc, f"3D viewport: {text.lower()}"))
        if playback is not None:
            self.play = act("&Play / Pause", playback.toggle, "Space", "Play or pause the motion", st.standardIcon(QStyle.SP_MediaPlay))
            self.run = act("&Run", playback.run, "F5", "Run the document's motion now (kinematics or contact dynamics)",
                           icon("run") if (ICONS / "run.svg").exists() else st.standardIcon(QStyle.SP_MediaSeekForward))
            self.stop = act("&Stop", playback.stop, "Shift+F5", "Stop the run; the frames so far are kept",
                            st.standardIcon(QStyle.SP_MediaStop))
            self.stop.setEnabled(playback.is_running())
            playback.runningChanged.connect(self.stop.setEnabled)
            self.compare = act("&Compare Methods", playback.set_compare, "Ctrl+M",
                               "Contact runs: also run the other method and show it as ghosts and dashed curves",
                               checkable=True)
            playback.optionsChanged.connect(lambda: self.compare.setChecked(playback.compare))

            self.dynamics = act("&Dynamics (gravity, contact)", lambda on: self._switch_dynamics(editor, on), None,
                                DYNAMICS_TIP, checkable=True)
            self.dynamics.setIconText("Dynamics")  # on the Motion dock's button; the menu says what it simulates
            document.changed.connect(lambda: self.show_dynamics_state(document))
            document.replaced.connect(lambda: self.show_dynamics_state(document))
            self.show_dynamics_state(document)

    def finish_editing(self) -> bool:
        """Take the entry typed but not yet confirmed (a Properties field, a Motion dock box, a table cell, the graph's
        rename box) before any action of the window runs, as Enter or leaving the field would (FileController.
        finish_editing, as Save and Quit do). A toolbar button does not take the focus and a shortcut leaves it
        where it is, so the field never finished: the action ran, the panel showed the model again and the entry was
        gone (Undo even undid an older edit). False when the entry is refused: it stays in its field, in red, with
        the reason; the action does not run over it (Esc in the field puts the model's value back)."""
        return self._files.finish_editing()

    def _guarded(self, slot) -> None:
        if self.finish_editing():
            slot()

    def _checked(self, action: QAction, slot, on: bool) -> None:
        """A checkable action toggled: the pending entry first; refused, the check mark goes back."""
        if self.finish_editing():
            slot(on)
            return
        action.blockSignals(True)
        action.setChecked(not on)
        action.blockSignals(False)

    def _switch_dynamics(self, editor, on: bool) -> None:
        if editor.set_dynamics(on) is not None:
            self.show_dynamics_state(editor.document)  # refused: the check mark goes back to what the document says

    def show_dynamics_state(self, document) -> None:
        """Check, enable and explain the Dynamics action from the document (core.run.dynamics_option)."""
        opt = dynamics_option(document.mechanism)
        a = self.dynamics
        a.blockSignals(True)  # the document is the truth: showing it must not toggle it back
        a.setChecked(opt.on)
        a.blockSignals(False)
        a.setEnabled(opt.available)
        tip = DYNAMICS_TIP if opt.available else f"Dynamics unavailable: {opt.reason}"
        a.setToolTip(tip)
        a.setStatusTip(tip)

    def toolbar_icon_size(self) -> QSize:
        """Icon size of the main toolbar."""
        return QSize(22, 22)
