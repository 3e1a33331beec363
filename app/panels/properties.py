"""Properties panel: the selected body or joint (or the document), and the drivers table with a live syntax check.

Fields show model values; an entry is parsed and pushed as a command when editing finishes. A bad entry stays in
the field, drawn red with the reason, and is not applied (never silently accepted or lost)."""

from __future__ import annotations

from typing import Any, Callable

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
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
from core.joints import JOINT_TYPES

from ..editing import joint_types_for

__all__ = ["Field", "PropertiesPanel", "DriversModel", "parse_number", "parse_vector", "parse_name"]

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
    return tuple(parse_number(p) for p in parts)  # type: ignore[return-value]


def parse_name(text: str) -> str:
    """A usable name (the core's shared name check: non-empty, printable, at most 200 characters)."""
    t = text.strip()
    if not t:
        raise ValueError("a name must not be empty")
    try:
        return validate.name(t, "")
    except LinkwrightError as exc:
        raise ValueError(exc.message) from None


def fmt_number(v: float | None) -> str:
    """A number as the user would type it ('' for None)."""
    return "" if v is None else f"{v:.6g}"


def fmt_vector(v) -> str:
    """A vector as 'x, y, z' ('' for None)."""
    return "" if v is None else ", ".join(f"{x:.6g}" for x in v)


class Field(QLineEdit):
    """A line edit bound to one model value: parses on entry, commits through a callback, shows refusals in red."""

    errorChanged = Signal(str)

    def __init__(self, parse: Callable[[str], Any], commit: Callable[[Any], LinkwrightError | None], placeholder: str = "", tip: str = "") -> None:
        super().__init__()
        self._parse, self._commit = parse, commit
        self._shown = ""
        self._error = ""
        self._tip = tip
        self.setPlaceholderText(placeholder)
        self.setToolTip(tip)
        self.editingFinished.connect(self._finish)

    @property
    def error(self) -> str:
        """Why the current entry was refused ('' if it was not)."""
        return self._error

    def show_value(self, text: str, force: bool = False) -> None:
        """Display the model's value (a refused entry stays unless `force`, e.g. another item was selected)."""
        if self._error and not force:
            return
        self._set_error("")
        self._shown = text
        if self.text() != text:
            self.blockSignals(True)
            self.setText(text)
            self.setCursorPosition(0)
            self.blockSignals(False)

    def _set_error(self, reason: str) -> None:
        if reason == self._error:
            return
        self._error = reason
        self.setStyleSheet(ERROR_STYLE if reason else "")
        self.setToolTip(reason if reason else self._tip)
        self.errorChanged.emit(reason)

    def _finish(self) -> None:
        text = self.text()
        if text == self._shown and not self._error:
            return
        try:
            value = self._parse(text)
        except ValueError as exc:
            self._set_error(str(exc))
            return
        err = self._commit(value)
        if err is not None:
            self._set_error(err.message)
            return
        self._set_error("")
        self._shown = text


class DriversModel(QAbstractTableModel):
    """Table of the document's drivers (joint, coordinate, expression); edits become commands."""

    HEADERS = ("Joint", "Coord.", "Expression q(t)")

    def __init__(self, document, editor, parent=None) -> None:
        super().__init__(parent)
        self.document, self.editor = document, editor
        # Refused entries (row, column) -> (text, reason): shown in red so the user's input is not lost.
        self.drafts: dict[tuple[int, int], tuple[str, str]] = {}
        self._red = QBrush(QColor("#ffcdd2"))

    def refresh(self) -> None:
        """Re-read the drivers."""
        self.beginResetModel()
        n = len(self.document.mechanism.drivers)
        self.drafts = {k: v for k, v in self.drafts.items() if k[0] < n}
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: D102 - Qt API
        return 0 if parent.isValid() else len(self.document.mechanism.drivers)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: D102 - Qt API
        return 0 if parent.isValid() else 3

    def headerData(self, section, orientation, role=Qt.DisplayRole):  # noqa: D102 - Qt API
        if role == Qt.DisplayRole:
            return self.HEADERS[section] if orientation == Qt.Horizontal else str(section + 1)
        return None

    def flags(self, index):  # noqa: D102 - Qt API
        return Qt.ItemIsSelectable | Qt.ItemIsEnabled | Qt.ItemIsEditable

    def data(self, index, role=Qt.DisplayRole):  # noqa: D102 - Qt API
        if not index.isValid():
            return None
        d = self.document.mechanism.drivers[index.row()]
        draft = self.drafts.get((index.row(), index.column()))
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
        if role != Qt.EditRole or not index.isValid():
            return False
        r, c = index.row(), index.column()
        raw = str(value)
        text = raw.strip()
        key = ("joint", "coordinate", "value")[c]
        if c == 1:
            try:
                v: Any = int(text)
            except ValueError:
                self._draft(r, c, raw, f"'{text}' is not a whole number")
                return False
        else:
            v = text
        d = self.document.mechanism.drivers[r]
        if getattr(d, key) == v:
            self.drafts.pop((r, c), None)
            self.dataChanged.emit(index, index)
            return True
        err = self.editor.update_driver(r, **{key: v})
        if err is not None:
            self._draft(r, c, raw, err.message)  # exactly as typed
            return False
        self.drafts.pop((r, c), None)
        return True

    def _draft(self, r: int, c: int, text: str, reason: str) -> None:
        self.drafts[(r, c)] = (text, reason)
        idx = self.index(r, c)
        self.dataChanged.emit(idx, idx)


class _ExpressionDelegate(QStyledItemDelegate):
    """Editor for the expression column: checks the syntax on every keystroke."""

    def __init__(self, panel: "PropertiesPanel") -> None:
        super().__init__(panel)
        self.panel = panel

    def createEditor(self, parent, option, index):  # noqa: D102 - Qt API
        ed = QLineEdit(parent)
        if index.column() == 2:
            ed.textEdited.connect(lambda text, ed=ed: self.panel.live_check(ed, text, index.row()))
        return ed


class PropertiesPanel(QWidget):
    """Edits the single selected body or joint, or the document when nothing is selected; lists the drivers."""

    def __init__(self, document, selection, editor, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.document, self.selection, self.editor = document, selection, editor
        self._target: tuple[str, str] | None = None  # ("body"|"joint", name) shown in the form

        self.title = QLabel()
        self.title.setObjectName("propertiesTitle")
        self.title.setStyleSheet("font-weight: bold; font-size: 11pt;")
        self.error = QLabel()
        self.error.setObjectName("propertiesError")
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #c62828;")

        # Document page.
        self.doc_name = self._field(parse_name, lambda v: self._doc_set(name=v), tip="document name")
        self.doc_gravity = self._field(
            lambda t: parse_vector(t, optional=True), lambda v: self._doc_set(gravity=v), "none", "gravity vector, m/s² (empty: none)"
        )
        self.doc_space = QLabel()
        doc_page = QWidget()
        f = QFormLayout(doc_page)
        f.addRow("Name", self.doc_name)
        f.addRow("Space", self.doc_space)
        f.addRow("Gravity", self.doc_gravity)

        # Body page.
        self.body_name = self._field(parse_name, lambda v: self._rename(v), tip="body name (F2 in the graph)")
        self.body_ground = QCheckBox("fixed ground")
        self.body_ground.setToolTip("the ground body is the fixed frame (G in the graph)")
        self.body_ground.toggled.connect(lambda on: self._body_set(ground=on))
        self.body_mass = self._field(
            lambda t: parse_number(t, optional=True, positive=True), lambda v: self._body_set(mass=v), "none", "mass, kg (empty: none)"
        )
        self.points = QTableWidget(0, 2)
        self.points.setObjectName("pointsTable")
        self.points.setHorizontalHeaderLabels(["Point", "x, y, z (m)"])
        self.points.horizontalHeader().setSectionResizeMode(1, QHeaderView.Stretch)
        self.points.verticalHeader().hide()
        self.points.setMaximumHeight(110)
        self.points.itemChanged.connect(self._points_edited)
        add_pt = QPushButton("Add point")
        add_pt.clicked.connect(self._add_point)
        rm_pt = QPushButton("Remove point")
        rm_pt.clicked.connect(self._remove_point)
        body_page = QWidget()
        f = QFormLayout(body_page)
        f.addRow("Name", self.body_name)
        f.addRow("", self.body_ground)
        f.addRow("Mass", self.body_mass)
        f.addRow("Points", self.points)
        row = QHBoxLayout()
        row.addWidget(add_pt)
        row.addWidget(rm_pt)
        f.addRow("", row)

        # Joint page.
        self.joint_name = self._field(parse_name, lambda v: self._rename(v), tip="joint name (F2 in the graph)")
        self.joint_type = QComboBox()
        self.joint_type.setToolTip("joint type")
        self.joint_type.activated.connect(lambda _i: self._joint_set(type=self.joint_type.currentData()))
        self.joint_a = QComboBox()
        self.joint_b = QComboBox()
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
        joint_page = QWidget()
        f = QFormLayout(joint_page)
        f.addRow("Name", self.joint_name)
        f.addRow("Type", self.joint_type)
        f.addRow("Body 1", self.joint_a)
        f.addRow("Body 2", self.joint_b)
        f.addRow("At (m)", self.joint_at)
        f.addRow("Axis", self.joint_axis)
        f.addRow("Pitch (m)", self.joint_pitch)

        self.pages = QStackedWidget()
        for p in (doc_page, body_page, joint_page):
            self.pages.addWidget(p)

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
        lay.addWidget(self.pages)
        lay.addWidget(self.error)
        cap = QLabel("Drivers")
        cap.setStyleSheet("font-weight: bold; font-size: 11pt; margin-top: 6px;")
        lay.addWidget(cap)
        lay.addWidget(self.driver_table, 1)
        lay.addWidget(self.driver_check)
        row = QHBoxLayout()
        row.addWidget(add_dr)
        row.addWidget(rm_dr)
        row.addStretch(1)
        lay.addLayout(row)

        document.changed.connect(self.refresh)
        document.replaced.connect(lambda: self.refresh(force=True))
        selection.changed.connect(lambda: self.refresh(force=True))
        self.refresh(force=True)

    # ---- construction helpers ---------------------------------------------------------------------------------
    def _field(self, parse, commit, placeholder: str = "", tip: str = "") -> Field:
        fld = Field(parse, commit, placeholder, tip)
        fld.errorChanged.connect(self._show_error)
        return fld

    def _show_error(self, reason: str) -> None:
        fld = self.sender()
        name = {v: k for k, v in self._labels().items()}.get(fld, "")
        self.error.setText(f"{name}: {reason}" if reason else "")

    def _labels(self) -> dict[str, Field]:
        return {
            "name": self.body_name if self._target and self._target[0] == "body" else self.joint_name,
            "mass": self.body_mass,
            "at": self.joint_at,
            "axis": self.joint_axis,
            "pitch": self.joint_pitch,
            "gravity": self.doc_gravity,
            "document name": self.doc_name,
        }

    # ---- model -> widgets -------------------------------------------------------------------------------------
    def refresh(self, force: bool = False) -> None:
        """Show the selected item's values (`force`: the target changed, drop refused entries)."""
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
        if force:
            self.error.setText("")
        if target is None:
            n = len(sb) + len(sj)
            self.title.setText(f"{n} items selected" if n > 1 else f"Document “{m.name}”")
            self.pages.setCurrentIndex(0)
            self.doc_name.show_value(m.name, force)
            self.doc_space.setText(m.space)
            self.doc_gravity.show_value(fmt_vector(m.gravity), force)
        elif target[0] == "body":
            b = m.body(target[1])
            self.title.setText(f"Body “{b.name}”")
            self.pages.setCurrentIndex(1)
            self.body_name.show_value(b.name, force)
            self.body_ground.blockSignals(True)
            self.body_ground.setChecked(b.ground)
            self.body_ground.blockSignals(False)
            self.body_mass.show_value(fmt_number(b.mass), force)
            self.points.blockSignals(True)
            self.points.setRowCount(len(b.points))
            for r, (pn, p) in enumerate(b.points.items()):
                self.points.setItem(r, 0, QTableWidgetItem(pn))
                self.points.setItem(r, 1, QTableWidgetItem(fmt_vector(p)))
            self.points.blockSignals(False)
        else:
            j = m.joint(target[1])
            self.title.setText(f"Joint “{j.name}” ({j.type})")
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

    # ---- widgets -> commands ------------------------------------------------------------------------------------
    def _doc_set(self, **changes) -> LinkwrightError | None:
        from ..commands import SetProperties

        return self.editor.run(SetProperties(self.document, **changes))

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
        if err is not None and ("type" in changes or "bodies" in changes):
            # A combo cannot hold a refused value: show the reason and the model's value again.
            self.refresh()
            self.error.setText(f"{next(iter(changes))}: {err.message}")
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
            self.error.setText(f"points row {r + 1}: {exc}")
            return
        points = {(name if k == r else n): (vec if k == r else v) for k, (n, v) in enumerate(items)}
        err = self.editor.update_body(self._target[1], points=points)
        if err is not None:
            self.error.setText(f"points: {err.message}")
        else:
            self.error.setText("")

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
        for r in rows:
            self.editor.remove_driver(r)

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
