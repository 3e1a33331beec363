"""Properties panel: the selected body or joint (or the document), and the drivers table with a live syntax check.

Fields show model values; an entry is parsed and pushed as a command when editing finishes. A bad entry stays in
the field, drawn red with the reason, and is not applied (never silently accepted or lost)."""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import replace
from typing import Any, Callable

import numpy as np
from scipy.spatial.transform import Rotation

from PySide6.QtCore import QAbstractTableModel, QEvent, QModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QKeyEvent, QKeySequence
from PySide6.QtWidgets import (
    QSizePolicy,
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QStackedWidget,
    QStyle,
    QStyledItemDelegate,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core import validate
from core.errors import LinkwrightError
from core.expr import check_expression
from core.io import json_problem
from core.joints import JOINT_TYPES
from core.model import Pose, Velocity
from core.shapes import SHAPE_TYPES, parse_shape

from ..editing import SHAPE_PRESETS, joint_types_for

__all__ = [
    "Field", "PropertiesPanel", "DriversModel", "parse_number", "parse_vector", "parse_name", "parse_title", "parse_values",
    "parse_inertia", "parse_angles", "rpy_degrees_to_quaternion", "quaternion_to_rpy_degrees",
]

ERROR_STYLE = "QLineEdit { border: 2px solid #c62828; background: #ffebee; }"


# ---- parsers: text -> value, or ValueError with the reason --------------------------------------------------------
def parse_number(text: str, optional: bool = False, positive: bool = False) -> float | None:
    """A finite number (empty means None when optional); the core's shared number check (core.validate)."""
    t = text.strip()
    if not t:
        if optional:
            return None
        raise ValueError("a number is required")
    try:
        return validate.parse_number(t, "", positive=positive)
    except LinkwrightError as exc:
        raise ValueError(exc.message) from None


def parse_vector(text: str, optional: bool = False) -> tuple[float, float, float] | None:
    """Three numbers separated by commas or spaces (empty means None when optional)."""
    t = text.strip()
    if not t:
        if optional:
            return None
        raise ValueError("three numbers x, y, z are required")
    parts = [p for p in t.replace(",", " ").replace(";", " ").split() if p]
    if len(parts) != 3:
        raise ValueError(f"expected three numbers x, y, z, got {len(parts)}")
    return tuple(_component(p, k) for k, p in enumerate(parts))  # type: ignore[return-value]


class ComponentRefusal(ValueError):
    """A refused number of several typed in one field: `part` is its index as the file's location writes it ('[2]',
    appended to the field's location: bodies[2].pose.position[2], as the core locates a component it refuses)."""

    def __init__(self, message: str, part: str) -> None:
        super().__init__(message)
        self.part = part


def _component(text: str, k: int) -> float:
    try:
        return parse_number(text)  # type: ignore[return-value]
    except ValueError as exc:
        raise ComponentRefusal(str(exc), f"[{k}]") from None


MAX_ANGLE_DEGREES = 360.0  # |roll|, |pitch|, |yaw| typed in Properties: a full turn either way


def parse_angles(text: str) -> tuple[float, float, float]:
    """Roll, pitch, yaw in degrees, each within ±MAX_ANGLE_DEGREES (1e300° was taken and shown as -131.724°: any
    angle beyond a full turn is a typing slip, not an orientation one would mean)."""
    try:
        v = parse_vector(text)
    except ComponentRefusal as exc:  # (the file stores a quaternion: its [k] is not the angle typed)
        raise ValueError(f"{('roll', 'pitch', 'yaw')[int(exc.part[1])]} {exc}") from None
    for name, x in zip(("roll", "pitch", "yaw"), v):
        if abs(x) > MAX_ANGLE_DEGREES:
            raise ValueError(f"{name} must be between {-MAX_ANGLE_DEGREES:g} and {MAX_ANGLE_DEGREES:g} degrees, "
                             f"got {x:g}")
    return v  # type: ignore[return-value]


def parse_name(text: str) -> str:
    """A usable name (the core's shared name check: non-empty, printable, at most 200 characters)."""
    t = text.strip()
    if not t:
        raise ValueError(validate.EMPTY_NAME)
    try:
        return validate.name(t, "")
    except LinkwrightError as exc:
        raise ValueError(exc.message) from None


def parse_title(text: str) -> str:
    """The document's name: a display title, any text the file format takes (core.validate.text), empty included;
    not a name anything refers to, as a body's or a joint's is."""
    try:
        return validate.text(text.strip(), "")
    except LinkwrightError as exc:
        raise ValueError(exc.message) from None


def fmt_number(v: float | None) -> str:
    """A number as the user would type it ('' for None): six significant digits, or as many as it takes to read
    back the stored value (a vector is entered whole: editing one component must not round the others)."""
    if v is None:
        return ""
    short = f"{v:.6g}"
    return short if float(short) == v else repr(float(v))


def fmt_vector(v) -> str:
    """A vector as 'x, y, z' ('' for None)."""
    return "" if v is None else ", ".join(fmt_number(x) for x in v)


def parse_values(text: str) -> Any:
    """A shape parameter: one number, numbers separated by commas or spaces (a list), or JSON rows such as
    [[0, 0, 0], [1, 0, 0], ...]; empty means None (the key is left out)."""
    t = text.strip()
    if not t:
        return None
    if t.startswith("["):
        def no_constant(name: str) -> float:
            raise ValueError(f"{name} is not a number")

        try:
            return json.loads(t, parse_constant=no_constant)  # data only: JSON never runs code
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a list of numbers: {json_problem(exc)} at column {exc.colno}") from None
    parts = [p for p in t.replace(",", " ").replace(";", " ").split() if p]
    if len(parts) == 1:
        return parse_number(parts[0])
    return [_component(p, k) for k, p in enumerate(parts)]


def parse_rows(text: str) -> Any:
    """A shape parameter whose value is rows of numbers (a polytope's vertices): as parse_values, but a number refused
    in a flat list typed there is located at the field, not at a flat index ([k]), which is no place in the file's
    rows ([i][j])."""
    try:
        return parse_values(text)
    except ComponentRefusal as exc:
        raise ValueError(str(exc)) from None


def fmt_values(v: Any) -> str:
    """A shape parameter as parse_values reads it back."""
    if v is None:
        return ""
    if isinstance(v, (int, float)):
        return fmt_number(v)
    if v and isinstance(v[0], (list, tuple)):
        return json.dumps([[float(x) for x in row] for row in v])
    return fmt_vector(v)


def parse_inertia(text: str):
    """Inertia about the centre of mass: 'Ixx, Iyy, Izz', or 'Ixx, Iyy, Izz, Ixy, Ixz, Iyz', or nine numbers row by
    row; empty means None (computed from the shape)."""
    t = text.strip()
    if not t:
        return None
    v = [parse_number(p) for p in t.replace(",", " ").replace(";", " ").split() if p]
    if len(v) == 3:
        v = [v[0], v[1], v[2], 0.0, 0.0, 0.0]
    if len(v) == 6:
        xx, yy, zz, xy, xz, yz = v
        return ((xx, xy, xz), (xy, yy, yz), (xz, yz, zz))
    if len(v) == 9:
        return (tuple(v[0:3]), tuple(v[3:6]), tuple(v[6:9]))
    raise ValueError(f"expected 3 (diagonal), 6 (Ixx, Iyy, Izz, Ixy, Ixz, Iyz) or 9 numbers, got {len(v)}")


def fmt_inertia(I) -> str:
    """An inertia matrix as parse_inertia reads it (the diagonal alone when the products are zero)."""
    if I is None:
        return ""
    d = [I[0][0], I[1][1], I[2][2]]
    off = [I[0][1], I[0][2], I[1][2]]
    return fmt_vector(d if not any(off) else d + off)


def rpy_degrees_to_quaternion(rpy) -> tuple[float, float, float, float]:
    """Unit quaternion (w, x, y, z) of roll, pitch, yaw in degrees: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    q = Rotation.from_euler("xyz", rpy, degrees=True).as_quat(scalar_first=True)  # lowercase: fixed (world) axes
    if q[0] < 0:
        q = -q  # the same rotation; a non-negative w keeps files stable
    return tuple(float(x) for x in q)  # type: ignore[return-value]


def quaternion_to_rpy_degrees(q) -> tuple[float, float, float]:
    """Roll, pitch, yaw in degrees of a unit quaternion (w, x, y, z)."""
    with warnings.catch_warnings():
        # pitch ±90°: roll and yaw turn about one axis, scipy gives it all to roll (yaw 0) and warns about it on
        # stderr at every refresh of the field; the angles shown are the same rotation
        warnings.filterwarnings("ignore", "Gimbal lock detected", UserWarning)
        e = Rotation.from_quat(np.asarray(q, float), scalar_first=True).as_euler("xyz", degrees=True)
    return tuple(0.0 if abs(x) < 1e-12 else float(x) for x in e)  # type: ignore[return-value]


# the text edits a line edit keeps when the window has the same keys (Ctrl+Z undoes the typing, not the document)
_TEXT_EDITS = (QKeySequence.StandardKey.Undo, QKeySequence.StandardKey.Redo, QKeySequence.StandardKey.SelectAll,
               QKeySequence.StandardKey.Copy, QKeySequence.StandardKey.Cut, QKeySequence.StandardKey.Paste)
_COMMAND_MODIFIERS = (Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier
                      | Qt.KeyboardModifier.MetaModifier)


def window_takes(widget: QWidget, event: QKeyEvent) -> bool:
    """Whether the key `event` (a ShortcutOverride) is an enabled shortcut of `widget`'s window that a text field
    should give up: it has Ctrl, Alt or Meta and is not one of the field's own text edits."""
    if not event.modifiers() & _COMMAND_MODIFIERS or any(event.matches(k) for k in _TEXT_EDITS):
        return False
    keys = QKeySequence(event.keyCombination())
    for action in widget.window().actions():
        if action.isEnabled() and any(s.matches(keys) == QKeySequence.SequenceMatch.ExactMatch for s in action.shortcuts()):
            return True
    return False


class LineEdit(QLineEdit):
    """A QLineEdit that leaves the window's Ctrl shortcuts to the window (see `event`)."""

    def event(self, event) -> bool:
        # A QLineEdit claims some Ctrl keys for itself before the window's shortcuts see them (on X11 Ctrl+E is "end
        # of line"): Ctrl+E, Export Animation, did nothing while a field had the focus. A combination with Ctrl, Alt
        # or Meta that an enabled window action has goes to that action; the field keeps the edits of its own text
        # (undo, redo, select all, copy, cut, paste) and every key without those modifiers (typing B, G, Del).
        if event.type() == QEvent.Type.ShortcutOverride:
            handled = super().event(event)
            if event.isAccepted() and window_takes(self, event):
                event.ignore()
            return handled
        return super().event(event)


class Field(LineEdit):
    """A line edit bound to one model value: parses on entry, commits through a callback, shows refusals in red."""

    errorChanged = Signal(str)
    # an entry was refused, with the reason (at every refusal, also one that repeats the field's refusal: the status
    # bar says the latest one)
    refused = Signal(str)
    committed = Signal()  # an entry was taken (the panel then shows the model's value: "C " typed for C reads "C")

    def __init__(self, parse: Callable[[str], Any], commit: Callable[[Any], LinkwrightError | None], placeholder: str = "",
                 tip: str = "", located: bool = False) -> None:
        super().__init__()
        self._parse, self._commit = parse, commit
        self._located = located  # show a refusal with its location (bodies[1].shape.radius: ...)
        self._shown = ""
        self._error = ""
        self._error_located = False  # the refusal names its place (the core's location): no label before it
        self._tip = tip
        # where the field's value is in the file (bodies[2].mass), for the current selection ('' for none): an entry
        # that does not parse is refused at that place, as the core's refusals of a parsed value are (set by the panel)
        self.locate: Callable[[], str] | None = None
        self.setPlaceholderText(placeholder)
        self.setToolTip(tip)
        self.editingFinished.connect(self._finish)

    @property
    def error(self) -> str:
        """Why the current entry was refused ('' if it was not)."""
        return self._error

    @property
    def error_located(self) -> bool:
        """Whether `error` begins with its location (the core refused the value in a located field)."""
        return self._error_located

    def show_value(self, text: str, force: bool = False) -> None:
        """Display the model's value (a refused entry stays unless `force`, e.g. another item was selected)."""
        if self._error and not force:
            return
        if not force and text == self._shown and self.hasFocus() and self.text() != text:
            # an entry being typed while an edit elsewhere changed the document (this value unchanged): the refresh
            # must not wipe it (Ctrl+D in the At field replaced the typed '1, 1, 0' with the model's value)
            return
        self._set_error("")
        self._shown = text
        if self.text() != text:
            self.blockSignals(True)
            self.setText(text)
            self.setCursorPosition(0)
            self.blockSignals(False)

    def _set_error(self, reason: str, located: bool = False) -> None:
        if reason == self._error:
            return
        self._error, self._error_located = reason, located
        self.setStyleSheet(ERROR_STYLE if reason else "")
        self.setToolTip(reason if reason else self._tip)
        self.errorChanged.emit(reason)

    def event(self, event) -> bool:
        # Undo and Redo are the field's own while an entry is being typed (or refused); once it is taken (Enter) or
        # none was typed, they are the document's: Ctrl+Z after Enter put the old text back in the field while the
        # document kept the new value, then committed that text as another edit when the focus left (user test s58)
        if (event.type() == QEvent.Type.ShortcutOverride and self.text() == self._shown and not self._error
                and (event.matches(QKeySequence.StandardKey.Undo) or event.matches(QKeySequence.StandardKey.Redo))):
            event.ignore()
            return True
        return super().event(event)

    def keyPressEvent(self, event) -> None:  # noqa: N802 - Qt API
        # Esc leaves an entry typed or refused: the field shows the model's value again (and its refusal goes); the
        # way out of a refused entry that stops an action of the window (Actions.finish_editing)
        if event.key() == Qt.Key.Key_Escape and (self.text() != self._shown or self._error):
            self.show_value(self._shown, force=True)
            event.accept()
            return
        super().keyPressEvent(event)

    def finish(self) -> str:
        """Take the typed text now, as Enter does (before a save or a close); the refusal's reason, '' if taken."""
        self._finish()
        return self._error

    def _finish(self) -> None:
        text = self.text()
        if text.strip() == self._shown.strip():
            # the value shown, give or take spaces (one space typed in the empty dt field added a simulation section
            # and made the four-bar a dynamics document), or typed again after a refused entry: no edit; the field
            # shows the model's value (a refusal it had goes)
            if text != self._shown or self._error:
                self.show_value(self._shown, force=True)
            return
        where = self.locate() if self.locate is not None else ""
        try:
            value = self._parse(text)
        except ValueError as exc:
            if where:
                self._set_error(f"{where}{getattr(exc, 'part', '')}: {exc}", True)
            else:
                self._set_error(str(exc))
            self.refused.emit(self._error)
            return
        err = self._commit(value)
        if err is not None:
            located = bool(err.location) and (self._located or bool(where))
            self._set_error(str(err) if located else err.message, located)
            self.refused.emit(self._error)
            return
        self._set_error("")
        self._shown = text
        self.committed.emit()


class DriversModel(QAbstractTableModel):
    """Table of the document's drivers (joint, coordinate, expression); edits become commands."""

    HEADERS = ("Joint", "Coord.", "Expression q(t)")

    def __init__(self, document, editor, parent=None) -> None:
        super().__init__(parent)
        self.document, self.editor = document, editor
        # Refused entries (driver's joint, its coordinate, column) -> (text, reason): shown in red so the user's
        # input is not lost, and kept with its driver (a row number moved it to another driver when one above was
        # removed)
        self.drafts: dict[tuple[str, int, int], tuple[str, str]] = {}
        self._red = QBrush(QColor("#ffcdd2"))
        self._rows = len(document.mechanism.drivers)  # (the rows the views know of: changed by a reset only)

    def refresh(self) -> None:
        """Re-read the drivers: their cells change in place while their number stays (an edit through a cell's
        editor calls this from within setData: a model reset there destroyed the editor the view was still
        committing, 'commitData called with an editor that does not belong to this view'); a reset when it changes."""
        drivers = self.document.mechanism.drivers
        there = {(d.joint, d.coordinate) for d in drivers}
        if len(drivers) == self._rows:
            self.drafts = {k: v for k, v in self.drafts.items() if k[:2] in there}
            if self._rows:
                self.dataChanged.emit(self.index(0, 0), self.index(self._rows - 1, 2))
            return
        self.beginResetModel()
        self.drafts = {k: v for k, v in self.drafts.items() if k[:2] in there}
        self._rows = len(drivers)
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: D102 - Qt API
        return 0 if parent.isValid() else self._rows

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: D102 - Qt API
        return 0 if parent.isValid() else 3

    def headerData(self, section, orientation, role=Qt.DisplayRole):  # noqa: D102 - Qt API
        if role == Qt.DisplayRole:
            return self.HEADERS[section] if orientation == Qt.Horizontal else str(section + 1)
        return None

    def flags(self, index):  # noqa: D102 - Qt API
        return Qt.ItemIsSelectable | Qt.ItemIsEnabled | Qt.ItemIsEditable

    def data(self, index, role=Qt.DisplayRole):  # noqa: D102 - Qt API
        if not index.isValid() or index.row() >= len(self.document.mechanism.drivers):  # (until the reset)
            return None
        d = self.document.mechanism.drivers[index.row()]
        draft = self.drafts.get((d.joint, d.coordinate, index.column()))
        value = (d.joint, str(d.coordinate), d.value)[index.column()]
        if role in (Qt.DisplayRole, Qt.EditRole):
            return draft[0] if draft else value
        if role == Qt.BackgroundRole and draft:
            return self._red
        if role == Qt.ToolTipRole:
            if draft:
                return f"not applied: {draft[1]}"
            return ("driven joint", "joint coordinate index (0 = first)", "expression of time t, radians or metres")[index.column()]
        return None

    def setData(self, index, value, role=Qt.EditRole) -> bool:  # noqa: D102 - Qt API
        if role != Qt.EditRole or not index.isValid() or index.row() >= len(self.document.mechanism.drivers):
            return False
        r, c = index.row(), index.column()
        d = self.document.mechanism.drivers[r]
        key_of = (d.joint, d.coordinate, c)
        raw = str(value)
        text = raw.strip()
        key = ("joint", "coordinate", "value")[c]
        if c == 1:
            try:
                v: Any = int(text)
            except ValueError:
                self._draft(index, key_of, raw, f"'{text}' is not a whole number")
                return False
        else:
            v = text
        if getattr(d, key) == v:
            self.drafts.pop(key_of, None)
            self.dataChanged.emit(index, index)
            return True
        err = self.editor.update_driver(r, **{key: v})
        if err is not None:
            self._draft(index, key_of, raw, err.message)  # exactly as typed
            return False
        self.drafts.pop(key_of, None)
        return True

    def _draft(self, index, key: tuple[str, int, int], text: str, reason: str) -> None:
        self.drafts[key] = (text, reason)
        self.dataChanged.emit(index, index)


class _ExpressionDelegate(QStyledItemDelegate):
    """Editor for the expression column: checks the syntax on every keystroke."""

    def __init__(self, panel: "PropertiesPanel") -> None:
        super().__init__(panel)
        self.panel = panel

    def createEditor(self, parent, option, index):  # noqa: D102 - Qt API
        ed = LineEdit(parent)
        if index.column() == 2:
            ed.textEdited.connect(lambda text, ed=ed: self.panel.live_check(ed, text, index.row()))
        return ed


SPACE_REFUSED = "Space: the document cannot be made"
SPACE_TIP = ("the document's space: planar (motion in the x-y plane, 3 freedoms per body; revolute, prismatic, "
             "slot, fixed joints) or spatial (6 per body; every joint type but slot). Switching is one undo step; "
             "a document with something that has no form in the other space (a spherical joint, gravity out of the "
             "plane, a slot) is refused with its location")


class PropertiesPanel(QWidget):
    """Edits the single selected body or joint, or the document when nothing is selected; lists the drivers."""

    # a line for the status bar: a refusal of an entry, a table cell or a choice ('Refused: ...', also when the
    # document's edit refused it, the editor's message: this one comes after it and says it as the form does)
    message = Signal(str)
    refusalWithdrawn = Signal(str)  # that status line ('Refused: ...') no longer holds: the window clears it if shown

    def __init__(self, document, selection, editor, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.document, self.selection, self.editor = document, selection, editor
        self._target: tuple[str, str] | None = None  # ("body"|"joint", name) shown in the form
        self._refreshing = False  # in refresh: the message under the form is withdrawn (or not) once it is done
        # the message under the form about a cell of the Pairs or Points table: it goes with the row it was about
        # (a refresh rebuilds the tables from the model, the red cell with them: an undo, another edit)
        self._cell_error = ""

        self.title = _TitleLabel()
        self.title.setObjectName("propertiesTitle")
        self.title.setStyleSheet("font-weight: bold; font-size: 11pt;")
        # never wider than the dock (a 158-character body name made the window 2263 px wide): a name too long for the
        # dock's width is elided with "…" (_TitleLabel), the whole name in the tooltip
        self.title.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.error = QLabel()
        self.error.setObjectName("propertiesError")
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #c62828;")

        # Document page.
        self.doc_name = self._field(parse_title, lambda v: self._doc_set(name=v), "(no name)",
                                    "document name (a title; may be empty)")
        self.doc_gravity = self._field(
            lambda t: parse_vector(t, optional=True), lambda v: self._doc_set(gravity=v), "none", "gravity vector, m/s² (empty: none)"
        )
        self.doc_space = _combo("spaceCombo", [("planar (x-y plane)", "planar"), ("spatial", "spatial")],
                                SPACE_TIP, self._space_chosen)
        # Contact and time stepping (empty fields show the defaults the simulation uses).
        self.doc_friction = self._field(
            lambda t: parse_number(t, optional=True), lambda v: self._contact_set(friction=0.5 if v is None else v),
            "0.5 (default)", "Coulomb friction coefficient μ ≥ 0 of every pair without an override", located=True)
        self.doc_ellipsoid = self._field(
            lambda t: parse_vector(t, optional=True),
            lambda v: self._contact_set(ellipsoid=(1.0, 1.0, 0.0) if v is None else v),
            "1, 1, 0 (default)", "friction ellipsoid e_t, e_o, e_r (e_r in m; 0: no torsional friction)", located=True)
        self.pairs = _table("pairsTable", ["Body A", "Body B", "μ"], self._pair_edited, stretch=None)
        self.pairs.setToolTip("per-pair friction overrides")
        add_pair = QPushButton("Add pair")
        add_pair.setToolTip("override the friction of a pair of shaped bodies")
        add_pair.clicked.connect(self._add_pair)
        rm_pair = QPushButton("Remove pair")
        rm_pair.clicked.connect(self._remove_pair)
        self.doc_dt = self._field(
            lambda t: parse_number(t, optional=True, positive=True),
            lambda v: self._simulation_set(dt=0.01 if v is None else v), "0.01 (default)", "time step h, s", located=True)
        self.doc_duration = self._field(
            lambda t: parse_number(t, optional=True),
            lambda v: self._simulation_set(duration=1.0 if v is None else v), "1 (default)", "simulated time, s", located=True)
        self.doc_method = _combo("methodCombo", [("implicit (geometrically implicit NCP)", "implicit"),
                                                 ("explicit (linearised gap)", "explicit")],
                                 "time-stepping method of the contact simulation", self._method_chosen)
        doc_page = _form([
            ("Name", self.doc_name), ("Space", self.doc_space), ("Gravity", self.doc_gravity),
            "Contact", ("Friction μ", self.doc_friction), ("Ellipsoid", self.doc_ellipsoid), ("Pairs", self.pairs),
            ("", _buttons(add_pair, rm_pair)),
            "Simulation", ("dt (s)", self.doc_dt), ("Duration (s)", self.doc_duration), ("Method", self.doc_method),
        ])

        # Body page.
        self.body_name = self._field(parse_name, lambda v: self._rename(v), tip="body name (F2 in the graph)")
        self.body_ground = QCheckBox("fixed ground")
        self.body_ground.setToolTip("the ground body is the fixed frame (G in the graph)")
        self.body_ground.toggled.connect(lambda on: self._body_set(ground=on))
        self.body_mass_kind = _combo("massKind", [("Mass (kg)", "mass"), ("Density (kg/m³)", "density")],
                                     "give the mass, or a density and let the shape's volume give the mass",
                                     self._mass_kind_chosen)
        self.body_mass = self._field(
            lambda t: parse_number(t, optional=True, positive=True), self._mass_set, "none", "mass, kg (empty: none)"
        )
        self.body_shape = _combo("shapeType", [("none", None)] + [(k, k) for k in SHAPE_PRESETS],
                                 "the body's convex shape (contact and drawing); see docs/shapes.md",
                                 self._shape_type_chosen)
        self.shape_params = QWidget()
        self.shape_params.setObjectName("shapeParams")
        self._shape_form = QFormLayout(self.shape_params)
        self._shape_form.setContentsMargins(0, 0, 0, 0)
        self.shape_fields: dict[str, Field] = {}  # format key -> field, for the shape type shown
        self._shape_kind: str | None = None
        self.body_inertia = self._field(
            parse_inertia, lambda v: self._body_set(inertia=v), "from the shape",
            "inertia about the centre of mass, body axes, kg·m²: Ixx, Iyy, Izz [, Ixy, Ixz, Iyz] (empty: from the shape)",
            located=True)
        self.body_com = self._field(
            lambda t: parse_vector(t, optional=True), lambda v: self._body_set(com=v), "from the shape",
            "centre of mass, body frame, m (empty: the shape's centroid)", located=True)
        self.body_position = self._field(
            parse_vector, lambda v: self._pose_set(position=v), "0, 0, 0", "initial position of the body frame, world, m",
            located=True)
        self.body_rpy = self._field(
            parse_angles, lambda v: self._pose_set(orientation=rpy_degrees_to_quaternion(v)), "0, 0, 0",
            "initial orientation: roll, pitch, yaw in degrees about the fixed x, y, z axes (stored as a quaternion)",
            located=True)
        self.body_velocity = self._field(
            lambda t: parse_vector(t, optional=True), lambda v: self._velocity_set(linear=v), "0, 0, 0",
            "initial velocity of the body origin, world, m/s", located=True)
        self.body_angular = self._field(
            lambda t: parse_vector(t, optional=True), lambda v: self._velocity_set(angular=v), "0, 0, 0",
            "initial angular velocity, world, rad/s", located=True)
        self.points = _table("pointsTable", ["Point", "x, y, z (m)"], self._points_edited, stretch=1)
        add_pt = QPushButton("Add point")
        add_pt.clicked.connect(self._add_point)
        rm_pt = QPushButton("Remove point")
        rm_pt.clicked.connect(self._remove_point)
        body_page = _form([
            ("Name", self.body_name), ("", self.body_ground), (self.body_mass_kind, self.body_mass),
            ("Points", self.points), ("", _buttons(add_pt, rm_pt)),
            "Shape", ("Type", self.body_shape), self.shape_params, ("Inertia", self.body_inertia),
            ("Centre of mass", self.body_com),
            "Initial state", ("Position (m)", self.body_position), ("Roll, pitch, yaw (°)", self.body_rpy),
            ("Velocity (m/s)", self.body_velocity), ("Angular (rad/s)", self.body_angular),
        ])

        # Joint page.
        self.joint_name = self._field(parse_name, lambda v: self._rename(v), tip="joint name (F2 in the graph)")
        self.joint_type = Combo()
        self.joint_type.setToolTip("joint type")
        self.joint_type.activated.connect(lambda _i: self._joint_set(type=self.joint_type.currentData()))
        self.joint_a = Combo()
        self.joint_b = Combo()
        for k, combo in enumerate((self.joint_a, self.joint_b)):
            combo.setToolTip(f"body {k + 1} of the joint")
            combo.activated.connect(lambda _i, k=k, combo=combo: self._joint_body_chosen(k, combo.currentText()))
        self.joint_at = self._field(parse_vector, lambda v: self._joint_set(at=v), "x, y, z", "joint location in the design configuration, m")
        self.joint_axis = self._field(
            lambda t: parse_vector(t, optional=True), lambda v: self._joint_set(axis=v), "default", "joint axis (empty: the type's default)"
        )
        self.joint_pitch = self._field(
            lambda t: parse_number(t, optional=True), lambda v: self._joint_set(pitch=v), "—", "helical pitch: advance per turn, m"
        )
        joint_page = _form([
            ("Name", self.joint_name), ("Type", self.joint_type), ("Body 1", self.joint_a), ("Body 2", self.joint_b),
            ("At (m)", self.joint_at), ("Axis", self.joint_axis), ("Pitch (m)", self.joint_pitch),
        ])

        self.pages = QStackedWidget()
        for p in (doc_page, body_page, joint_page):
            self.pages.addWidget(p)
        pages_scroll = QScrollArea()  # the body and document pages are taller than a small dock
        pages_scroll.setWidgetResizable(True)
        pages_scroll.setFrameShape(QScrollArea.NoFrame)
        pages_scroll.setWidget(self.pages)

        # Drivers.
        self.drivers = DriversModel(document, editor, self)
        self.driver_table = QTableView()
        self.driver_table.setObjectName("driversTable")
        self.driver_table.setModel(self.drivers)
        self.driver_table.setItemDelegate(_ExpressionDelegate(self))
        self.driver_table.horizontalHeader().setSectionResizeMode(2, QHeaderView.Stretch)
        self.driver_table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeToContents)
        self.driver_table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeToContents)
        self.driver_table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.driver_table.setEditTriggers(QAbstractItemView.DoubleClicked | QAbstractItemView.EditKeyPressed | QAbstractItemView.AnyKeyPressed)
        self.driver_check = QLabel()
        self.driver_check.setObjectName("driverCheck")
        self.driver_check.setWordWrap(True)
        add_dr = QPushButton(self.style().standardIcon(QStyle.SP_FileDialogNewFolder), "Add driver")
        add_dr.setToolTip("drive the selected joint (or the first undriven joint) with q = t")
        add_dr.clicked.connect(self._add_driver)
        rm_dr = QPushButton(self.style().standardIcon(QStyle.SP_TrashIcon), "Remove")
        rm_dr.clicked.connect(self._remove_driver)

        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 4, 6, 4)
        lay.addWidget(self.title)
        lay.addWidget(pages_scroll, 2)
        lay.addWidget(self.error)
        cap = QLabel("Drivers")
        cap.setStyleSheet("font-weight: bold; font-size: 11pt; margin-top: 6px;")
        lay.addWidget(cap)
        lay.addWidget(self.driver_table, 1)
        lay.addWidget(self.driver_check)
        row = _buttons(add_dr, rm_dr)
        row.addStretch(1)
        lay.addLayout(row)

        document.changed.connect(self.refresh)
        document.replaced.connect(lambda: self.refresh(force=True))
        selection.changed.connect(lambda: self.refresh(force=True))
        self.refresh(force=True)

    # ---- construction helpers ---------------------------------------------------------------------------------
    def _field(self, parse, commit, placeholder: str = "", tip: str = "", located: bool = False) -> Field:
        fld = Field(parse, commit, placeholder, tip, located)
        fld.locate = lambda fld=fld: self._file_location(fld)
        fld.errorChanged.connect(self._show_error)
        fld.refused.connect(self._field_refused)
        fld.committed.connect(self.refresh)
        return fld

    def _file_location(self, fld: Field) -> str:
        """Where `fld`'s value is in the file for the item shown (bodies[2].pose.position, simulation.dt), as the
        loader and the core's edits locate their refusals ('' if the field is not one of the item's)."""
        m = self.document.mechanism
        if self._target is None:
            return {self.doc_name: "name", self.doc_gravity: "gravity", self.doc_friction: "contact.friction",
                    self.doc_ellipsoid: "contact.ellipsoid", self.doc_dt: "simulation.dt",
                    self.doc_duration: "simulation.duration"}.get(fld, "")
        kind, name = self._target
        if kind == "body" and name in m.body_names():
            keys = {self.body_name: "name", self.body_mass: self.body_mass_kind.currentData() or "mass",
                    self.body_inertia: "inertia", self.body_com: "com", self.body_position: "pose.position",
                    self.body_rpy: "pose.orientation", self.body_velocity: "velocity.linear",
                    self.body_angular: "velocity.angular",
                    **{f: f"shape.{k}" for k, f in self.shape_fields.items()}}
            return f"bodies[{m.body_names().index(name)}].{keys[fld]}" if fld in keys else ""
        if kind == "joint" and name in m.joint_names():
            keys = {self.joint_name: "name", self.joint_at: "at", self.joint_axis: "axis", self.joint_pitch: "pitch"}
            return f"joints[{m.joint_names().index(name)}].{keys[fld]}" if fld in keys else ""
        return ""

    def _show_error(self, reason: str) -> None:
        """A field's refusal came or went (Field.errorChanged): the message under the form; a refusal is said in the
        status bar by _field_refused (at each one, also when it repeats the field's)."""
        old = self.error.text()
        # (a refusal gone: another field's that still stands stays said, under the form and in the status bar)
        self.error.setText(self._error_text(self.sender(), reason) if reason else self._field_refusal())
        if not reason:
            self._withdrawn(old)

    def _field_refused(self, reason: str) -> None:
        """A field's entry was refused (Field.refused): the status bar says so, as the form does."""
        self.message.emit(f"Refused: {self._error_text(self.sender(), reason)}")

    def _say(self, text: str) -> None:
        """The message under the form: a refusal (also said in the status bar: the latest refusal, whichever field,
        table cell or choice it was about; user test s58 saw the status bar keep a refused size while a mass was
        refused), or '' when the one shown no longer holds."""
        old = self.error.text()
        self.error.setText(text)
        if text:
            self.message.emit(f"Refused: {text}")
        else:
            self._withdrawn(old)

    def _withdrawn(self, old: str) -> None:
        """The refusal `old` under the form no longer holds: so the status bar stops saying it (if it still does)."""
        if old and not self._refreshing and old != self.error.text():
            self.refusalWithdrawn.emit(f"Refused: {old}")

    def _error_text(self, fld: Field, reason: str) -> str:
        if not reason or fld.error_located:  # (a located refusal names its place: 'simulation.dt: ...', once)
            return reason
        name = {v: k for k, v in self._labels().items()}.get(fld, "")
        return f"{name}: {reason}"

    def _field_refusal(self) -> str:
        """The message of a field of the page shown that still holds a refused entry ('' if none)."""
        page = self.pages.currentWidget()
        for fld in self._labels().values():
            if fld.error and page.isAncestorOf(fld):
                return self._error_text(fld, fld.error)
        return ""

    def _labels(self) -> dict[str, Field]:
        return {
            "name": self.body_name if self._target and self._target[0] == "body" else self.joint_name,
            "mass": self.body_mass,
            "at": self.joint_at,
            "axis": self.joint_axis,
            "pitch": self.joint_pitch,
            "gravity": self.doc_gravity,
            "document name": self.doc_name,
            "friction": self.doc_friction,
            "ellipsoid": self.doc_ellipsoid,
            "dt": self.doc_dt,
            "duration": self.doc_duration,
            "inertia": self.body_inertia,
            "centre of mass": self.body_com,
            "position": self.body_position,
            "orientation": self.body_rpy,
            "velocity": self.body_velocity,
            "angular velocity": self.body_angular,
            **{f"shape {k}": f for k, f in self.shape_fields.items()},
        }

    # ---- model -> widgets -------------------------------------------------------------------------------------
    def refresh(self, force: bool = False) -> None:
        """Show the selected item's values (`force`: the target changed, drop refused entries). A refusal under the form
        that no longer holds after it goes from the status bar too (one the form still shows, a field's that is kept,
        is not said again: an edit elsewhere said what it did)."""
        if self._refreshing:
            self._show_form(force)
            return
        old = self.error.text()
        self._refreshing = True
        try:
            self._show_form(force)
        finally:
            self._refreshing = False
        self._withdrawn(old)

    def _show_form(self, force: bool) -> None:
        m = self.document.mechanism
        sb, sj = self.selection.bodies, self.selection.joints
        if len(sb) == 1 and not sj and next(iter(sb)) in m.body_names():
            target = ("body", next(iter(sb)))
        elif len(sj) == 1 and not sb and next(iter(sj)) in m.joint_names():
            target = ("joint", next(iter(sj)))
        else:
            target = None
        force = force or target != self._target
        self._target = target
        # the message under the form goes with the edit it was about: an edit that was taken since (any, its undo,
        # a selection changed) shows the model, so a refusal of a choice (Density with no shape) or of a table cell
        # no longer holds; only a field still holding a refused entry keeps its message (after the form is shown)
        self.error.setText("")
        self._cell_error = ""
        if target is None:
            n = len(sb) + len(sj)
            self._titled(f"{n} items selected" if n > 1 else "Document “{}”" if m.name else "Document", m.name)
            self.pages.setCurrentIndex(0)
            self.doc_name.show_value(m.name, force)
            self.doc_space.setCurrentIndex(max(self.doc_space.findData(m.space), 0))
            self.doc_gravity.show_value(fmt_vector(m.gravity), force)
            c, sim = m.contact, m.simulation
            self.doc_friction.show_value("" if c is None else fmt_number(c.friction), force)
            self.doc_ellipsoid.show_value("" if c is None else fmt_vector(c.ellipsoid), force)
            self._show_pairs(() if c is None else c.pairs)
            self.doc_dt.show_value("" if sim is None else fmt_number(sim.dt), force)
            self.doc_duration.show_value("" if sim is None else fmt_number(sim.duration), force)
            self.doc_method.setCurrentIndex(max(self.doc_method.findData(m.simulation_settings().method), 0))
        elif target[0] == "body":
            b = m.body(target[1])
            self._titled("Body “{}”", b.name)
            self.pages.setCurrentIndex(1)
            self.body_name.show_value(b.name, force)
            self.body_ground.blockSignals(True)
            self.body_ground.setChecked(b.ground)
            self.body_ground.blockSignals(False)
            by_density = b.density is not None
            self.body_mass_kind.setCurrentIndex(1 if by_density else 0)
            self.body_mass.show_value(fmt_number(b.density if by_density else b.mass), force)
            self._show_shape(b, force)
            self.body_inertia.show_value(fmt_inertia(b.inertia), force)
            self.body_com.show_value(fmt_vector(b.com), force)
            pose = b.pose or Pose()
            self.body_position.show_value(fmt_vector(pose.position), force)
            # (angles derived from the quaternion, shown rounded: an unchanged entry does not touch the quaternion)
            self.body_rpy.show_value(", ".join(f"{x:.6g}" for x in quaternion_to_rpy_degrees(pose.orientation)), force)
            self.body_velocity.show_value("" if b.velocity is None else fmt_vector(b.velocity.linear), force)
            self.body_angular.show_value("" if b.velocity is None else fmt_vector(b.velocity.angular), force)
            self.points.blockSignals(True)
            self.points.setRowCount(len(b.points))
            for r, (pn, p) in enumerate(b.points.items()):
                self.points.setItem(r, 0, QTableWidgetItem(pn))
                self.points.setItem(r, 1, QTableWidgetItem(fmt_vector(p)))
            self.points.blockSignals(False)
        else:
            j = m.joint(target[1])
            self._titled(f"Joint “{{}}” ({j.type})", j.name)
            self.pages.setCurrentIndex(2)
            self.joint_name.show_value(j.name, force)
            for combo, items, current in (
                (self.joint_a, m.body_names(), j.bodies[0]),
                (self.joint_b, m.body_names(), j.bodies[1]),
            ):
                combo.blockSignals(True)
                combo.clear()
                combo.addItems(items)
                combo.setCurrentText(current)
                combo.blockSignals(False)
            self.joint_type.blockSignals(True)
            self.joint_type.clear()
            for t in joint_types_for(m.space):
                self.joint_type.addItem(f"{JOINT_TYPES[t].letter}  {t}", t)
            self.joint_type.setCurrentIndex(max(self.joint_type.findData(j.type), 0))
            self.joint_type.blockSignals(False)
            self.joint_at.show_value(fmt_vector(j.at), force)
            self.joint_axis.show_value(fmt_vector(j.axis), force)
            self.joint_pitch.show_value(fmt_number(j.pitch), force)
            self.joint_pitch.setEnabled(bool(JOINT_TYPES[j.type].pitch) if j.type in JOINT_TYPES else False)
        self.drivers.refresh()
        if not force:
            self.error.setText(self._field_refusal())

    # ---- widgets -> commands ------------------------------------------------------------------------------------
    def _doc_set(self, **changes) -> LinkwrightError | None:
        return self.editor.update_document(**changes)

    def _contact_set(self, **changes) -> LinkwrightError | None:
        return self.editor.set_contact(**changes)

    def _simulation_set(self, **changes) -> LinkwrightError | None:
        err = self.editor.set_simulation(**changes)
        if err is not None and "method" in changes:
            self.refresh()
            self._say(str(err))
        return err

    def _space_chosen(self, space: str) -> None:
        """Switch the document's space (one undo step); a refusal puts the box back and says why under the form."""
        err = self.editor.set_space(space)  # (the space shown again is no edit)
        if err is not None:
            self.refresh()
            self._say(f"{SPACE_REFUSED} {space}: {err}")
        elif self.error.text().startswith(SPACE_REFUSED):
            self._say("")  # (an earlier refusal: it no longer holds)

    def _method_chosen(self, method: str) -> None:
        if method != self.document.mechanism.simulation_settings().method:  # re-choosing the shown one is no edit
            self._simulation_set(method=method)

    def _titled(self, pattern: str, name: str) -> None:
        """The title `pattern` with the name in its {} place, elided to the title's width (the whole name as
        tooltip)."""
        self.title.set_title(pattern, name)

    def _show_pairs(self, pairs) -> None:
        self.pairs.blockSignals(True)
        self.pairs.setRowCount(len(pairs))
        for r, p in enumerate(pairs):
            for c, text in enumerate((p.bodies[0], p.bodies[1], fmt_number(p.friction))):
                self.pairs.setItem(r, c, QTableWidgetItem(text))
        self.pairs.blockSignals(False)

    def _pair_edited(self, item: QTableWidgetItem) -> None:
        # Only the edited cell is read; the other cells come from the model.
        pairs = list(self.document.mechanism.contact_settings().pairs)
        r, c = item.row(), item.column()
        if not 0 <= r < len(pairs):
            return
        p = pairs[r]
        try:
            if c == 2:
                p = replace(p, friction=parse_number(item.text()))
            else:
                bodies = list(p.bodies)
                bodies[c] = parse_name(item.text())
                p = replace(p, bodies=tuple(bodies))
        except ValueError as exc:
            self._red_cell(self.pairs, item, str(exc))
            self._show_cell_error(f"contact.pairs[{r}]: {exc}")
            return
        pairs[r] = p
        err = self.editor.set_contact(pairs=pairs)
        if err is not None:
            self._red_cell(self.pairs, item, str(err))
            self._show_cell_error(str(err))
        else:
            self._say("")

    def _show_cell_error(self, text: str) -> None:
        """The refusal of a table cell's entry under the form, until the tables are shown again from the model."""
        self._say(text)
        self._cell_error = text

    def _red_cell(self, table: QTableWidget, item: QTableWidgetItem, reason: str) -> None:
        table.blockSignals(True)
        item.setBackground(QBrush(QColor("#ffcdd2")))
        item.setToolTip(reason)
        table.blockSignals(False)

    def _add_pair(self) -> None:
        """Give the first pair of bodies that can touch (core.contact.touching_pairs: not two fixed bodies, nor two
        joined by a joint, ...) without a friction of its own the document's friction; the user edits it after."""
        from core.contact import touching_pairs

        m = self.document.mechanism
        c = m.contact_settings()
        try:
            touching = touching_pairs(m)
        except LinkwrightError as exc:  # (drivers that cannot be analysed: which bodies they fix is not known)
            self._say(f"Add pair: which bodies the drivers fix is not known: {exc}")
            return
        taken = {frozenset(p.bodies) for p in c.pairs}
        for a, b in touching:
            if frozenset((a, b)) not in taken:
                self.editor.set_pair_friction(a, b, c.friction)
                return
        self._say("contact.pairs: every pair of bodies that can touch has a friction of its own already"
                           if touching else "contact.pairs: no two bodies of this document can touch")

    def _remove_pair(self) -> None:
        r = self.pairs.currentRow()
        pairs = self.document.mechanism.contact_settings().pairs
        if 0 <= r < len(pairs):
            self.editor.set_pair_friction(*pairs[r].bodies, None)

    def _show_shape(self, b, force: bool) -> None:
        kind = b.shape["type"] if b.shape else None
        self.body_shape.setCurrentIndex(max(self.body_shape.findData(kind), 0))
        if kind != self._shape_kind:
            while self._shape_form.rowCount():
                self._shape_form.removeRow(0)
            self.shape_fields = {}
            for prm in (SHAPE_TYPES[kind].PARAMS if kind in SHAPE_TYPES else ()):
                fld = self._field(parse_rows if prm.rows else parse_values, lambda v, key=prm.key: self._shape_set(key, v), "—" if prm.default is not None else "",
                                  f"{kind} {prm.key} (docs/shapes.md)", located=True)
                fld.setObjectName(f"shape_{prm.key}")
                self.shape_fields[prm.key] = fld
                self._shape_form.addRow(prm.key.capitalize(), fld)
            self._shape_kind = kind
        for key, fld in self.shape_fields.items():
            fld.show_value(fmt_values(b.shape.get(key)), force)

    def _shape_type_chosen(self, kind: str | None) -> None:
        if self._target is None or self._target[0] != "body":
            return
        b = self.document.mechanism.body(self._target[1])
        if (b.shape["type"] if b.shape else None) == kind:
            return
        err = self._body_set(shape=None if kind is None else SHAPE_PRESETS[kind])
        if err is not None:  # a combo cannot hold a refused value: show the model's and the reason
            self.refresh()
            self._say(str(err))

    def _shape_set(self, key: str, value) -> LinkwrightError | None:
        if self._target is None or self._target[0] != "body":
            return None
        shape = dict(self.document.mechanism.body(self._target[1]).shape or {})
        if value is None:
            shape.pop(key, None)
        else:
            shape[key] = value
            # keys of which a shape takes exactly one (a polytope's planes or vertices): the one typed replaces the
            # other in the same edit (one at a time, either edit was refused: 'needs exactly one ..., got 2 / 0')
            one_of = getattr(SHAPE_TYPES.get(shape.get("type")), "ONE_OF", ())
            for other in (one_of if key in one_of else ()):
                if other != key:
                    shape.pop(other, None)
        return self._body_set(shape=shape)

    def _mass_set(self, value: float | None) -> LinkwrightError | None:
        if self.body_mass_kind.currentData() == "density":
            return self._body_set(density=value, mass=None)
        return self._body_set(mass=value, density=None)

    def _mass_kind_chosen(self, kind: str) -> None:
        """Switch between mass and density, keeping the body's mass (converted with the shape's volume)."""
        if self._target is None or self._target[0] != "body":
            return
        b = self.document.mechanism.body(self._target[1])
        if (kind == "density") == (b.density is not None):
            return
        volume = None
        if b.shape is not None:
            shp = parse_shape(b.shape, "shape")
            volume = shp.volume if shp.bounded else None
        if kind == "density":
            if b.shape is None:
                self.refresh()
                self._say("density: needs a shape to give the volume")
                return
            err = self._body_set(mass=None, density=None if (b.mass is None or volume is None) else b.mass / volume)
        else:
            err = self._body_set(density=None, mass=None if (b.density is None or volume is None) else b.density * volume)
        if err is not None:
            self.refresh()
            self._say(str(err))

    def _pose_set(self, **changes) -> LinkwrightError | None:
        if self._target is None or self._target[0] != "body":
            return None
        b = self.document.mechanism.body(self._target[1])
        pose = replace(b.pose or Pose(), **changes)
        if b.pose is None and pose == Pose():
            return None  # nothing to store: the body stays in the world frame
        return self._body_set(pose=pose)

    def _velocity_set(self, **changes) -> LinkwrightError | None:
        if self._target is None or self._target[0] != "body":
            return None
        b = self.document.mechanism.body(self._target[1])
        changes = {k: (0.0, 0.0, 0.0) if v is None else v for k, v in changes.items()}
        vel = replace(b.velocity or Velocity(), **changes)
        if vel == Velocity() and (b.velocity is None or all(v == (0.0, 0.0, 0.0) for v in changes.values())):
            vel = None  # both cleared: no initial velocity
        if vel == b.velocity:
            return None
        return self._body_set(velocity=vel)

    def _rename(self, new: str) -> LinkwrightError | None:
        if self._target is None:
            return None
        return self.editor.rename(self._target[1], new)

    def _body_set(self, **changes) -> LinkwrightError | None:
        if self._target is None or self._target[0] != "body":
            return None
        err = self.editor.update_body(self._target[1], **changes)
        if err is not None and "ground" in changes:
            self.refresh()
        return err

    def _joint_set(self, **changes) -> LinkwrightError | None:
        if self._target is None or self._target[0] != "joint":
            return None
        err = self.editor.update_joint(self._target[1], **changes)
        combo = next((k for k in ("type", "bodies") if k in changes), None)
        if err is not None and combo:
            # A combo cannot hold a refused value: show the reason and the model's value again.
            self.refresh()
            self._say(f"{combo}: {err.message}")
        elif err is None and combo and self.error.text().startswith(("type: ", "bodies: ")):
            self._say("")  # (a choice taken: the refusal of an earlier one goes, as a field's does)
        return err

    def _joint_body_chosen(self, k: int, name: str) -> None:
        # The other end comes from the model, not from the other combo box.
        if self._target is None or self._target[0] != "joint":
            return
        bodies = list(self.document.mechanism.joint(self._target[1]).bodies)
        bodies[k] = name
        self._joint_set(bodies=tuple(bodies))

    def _points_edited(self, item: QTableWidgetItem) -> None:
        if self._target is None or self._target[0] != "body":
            return
        # Only the edited cell is read: the other rows come from the model (a refused entry elsewhere, still shown
        # in red, must not block or leak into this edit).
        items = list(self.document.mechanism.body(self._target[1]).points.items())
        r, c = item.row(), item.column()
        if not 0 <= r < len(items):
            return
        name, vec = items[r]
        try:
            if c == 0:
                name = parse_name(item.text())
                if name != items[r][0] and any(n == name for n, _ in items):
                    raise ValueError(f"duplicate point name '{name}'")
            else:
                vec = parse_vector(item.text())
        except ValueError as exc:
            self.points.blockSignals(True)
            item.setBackground(QBrush(QColor("#ffcdd2")))
            item.setToolTip(str(exc))
            self.points.blockSignals(False)
            self._show_cell_error(f"points row {r + 1}: {exc}")
            return
        points = {(name if k == r else n): (vec if k == r else v) for k, (n, v) in enumerate(items)}
        err = self.editor.update_body(self._target[1], points=points)
        if err is not None:
            self._show_cell_error(f"points row {r + 1}: {err.message}")  # (as a refusal of the entry itself)
        else:
            self._say("")

    def _add_point(self) -> None:
        if self._target is None or self._target[0] != "body":
            return
        b = self.document.mechanism.body(self._target[1])
        k = 1
        while f"P{k}" in b.points:
            k += 1
        self.editor.update_body(b.name, points={**b.points, f"P{k}": (0.0, 0.0, 0.0)})

    def _remove_point(self) -> None:
        if self._target is None or self._target[0] != "body":
            return
        r = self.points.currentRow()
        b = self.document.mechanism.body(self._target[1])
        names = list(b.points)
        if 0 <= r < len(names):
            self.editor.update_body(b.name, points={k: v for k, v in b.points.items() if k != names[r]})

    def _add_driver(self) -> None:
        joint = next(iter(self.selection.joints)) if len(self.selection.joints) == 1 else None
        self.editor.add_driver(joint)

    def _remove_driver(self) -> None:
        rows = sorted({i.row() for i in self.driver_table.selectionModel().selectedRows()}, reverse=True)
        if not rows and self.driver_table.currentIndex().isValid():
            rows = [self.driver_table.currentIndex().row()]
        if rows:
            self.editor.remove_drivers(rows)

    def live_check(self, editor: QLineEdit, text: str, row: int) -> str:
        """Check a driver expression while it is typed; returns the reason it is invalid ('' if valid)."""
        try:
            check_expression(text, f"drivers[{row}].value")
        except LinkwrightError as exc:
            editor.setStyleSheet(ERROR_STYLE)
            editor.setToolTip(exc.message)
            self.driver_check.setText(f"✗ {exc.message}")
            self.driver_check.setStyleSheet("color: #c62828;")
            return exc.message
        editor.setStyleSheet("")
        editor.setToolTip("")
        self.driver_check.setText("✓ valid expression of t")
        self.driver_check.setStyleSheet("color: #1b5e20;")
        return ""


def _form(rows) -> QWidget:
    """A form page from rows: (label, widget or layout), a widget spanning the row, or a str section heading."""
    page = QWidget()
    f = QFormLayout(page)
    for row in rows:
        if isinstance(row, str):
            lab = QLabel(row)
            lab.setStyleSheet("font-weight: bold; margin-top: 6px;")
            f.addRow(lab)
        elif isinstance(row, tuple):
            f.addRow(*row)
        else:
            f.addRow(row)
    return page


class Combo(QComboBox):
    """A combo box that the mouse wheel changes only once it has the focus (a click or Tab gives it): scrolling the
    panel over an unfocused one scrolls the panel. A wheel over it picked another item, an undoable edit of the
    document (the Space box switched the document to planar, the Shape box replaced a body's shape) while the user
    only meant to scroll."""

    def __init__(self) -> None:
        super().__init__()
        self.setFocusPolicy(Qt.StrongFocus)  # (not WheelFocus: a wheel does not take the focus)

    def wheelEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        if self.hasFocus():
            super().wheelEvent(event)
        else:
            event.ignore()  # (passed on to the scroll area)


def _combo(name: str, items: list[tuple[str, Any]], tip: str, chosen) -> QComboBox:
    """A combo box of (text, data) items calling `chosen(data)` when the user picks one (never on refresh)."""
    c = Combo()
    c.setObjectName(name)
    for text, data in items:
        c.addItem(text, data)
    c.setToolTip(tip)
    c.activated.connect(lambda _i: chosen(c.currentData()))
    return c


class _TitleLabel(QLabel):
    """The panel's title, "Body “{}”" with a name: the name elided with "…" to the label's width, the rest of the
    pattern kept (its closing quote, a joint's type), again at every resize; the whole name in the tooltip while it
    is elided (a long name was cut mid-word at the dock's edge)."""

    def __init__(self) -> None:
        super().__init__()
        self._pattern, self._name = "", ""

    def set_title(self, pattern: str, name: str) -> None:
        """Show `pattern` with `name` in its {} place (a pattern without {} is shown as it is)."""
        self._pattern, self._name = pattern, name
        self._elide()

    def resizeEvent(self, ev) -> None:  # noqa: D102 - Qt API
        super().resizeEvent(ev)
        self._elide()

    def changeEvent(self, ev) -> None:  # noqa: D102 - Qt API (the style sheet's bold font arrives on polish)
        super().changeEvent(ev)
        if ev.type() == ev.Type.FontChange:
            self._elide()

    def _elide(self) -> None:
        whole = self._pattern.replace("{}", self._name)
        fm, room = self.fontMetrics(), self.contentsRect().width()
        if not self.isVisible() or fm.horizontalAdvance(whole) <= room:
            text = whole  # (a hidden label's width is not the one it will be shown at: judged when it is resized)
        elif "{}" in self._pattern:
            rest = fm.horizontalAdvance(self._pattern.replace("{}", ""))
            name = fm.elidedText(self._name, Qt.ElideRight, max(room - rest, 0)) or "…"
            text = self._pattern.replace("{}", name)
        else:
            text = fm.elidedText(whole, Qt.ElideRight, room)
        if text != self.text():
            self.setText(text)
        tip = (self._name or whole) if text != whole else ""
        if tip != self.toolTip():
            self.setToolTip(tip)


def _table(name: str, headers: list[str], edited, stretch: int | None) -> QTableWidget:
    """A small editable table of a form (`stretch`: the column that takes the width; None: all share it)."""
    t = QTableWidget(0, len(headers))
    t.setObjectName(name)
    t.setHorizontalHeaderLabels(headers)
    if stretch is None:
        t.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
    else:
        t.horizontalHeader().setSectionResizeMode(stretch, QHeaderView.Stretch)
    t.verticalHeader().hide()
    t.setMaximumHeight(110)
    t.itemChanged.connect(edited)
    return t


def _buttons(*buttons: QPushButton) -> QHBoxLayout:
    """Buttons side by side on one form row."""
    row = QHBoxLayout()
    for b in buttons:
        row.addWidget(b)
    return row

