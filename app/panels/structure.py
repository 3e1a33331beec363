"""Structure panel: incidence matrix, mobility with its formula, loops, chain class, degrees and warnings.

Re-reads the document's (cached) structure report on every `changed`, in the same event-loop turn."""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QItemSelection, QItemSelectionModel, QModelIndex, QSize, Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFormLayout,
    QFrame,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QSplitter,
    QStyle,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from core.joints import JOINT_TYPES
from core.kinematics.mobility import (drivable_freedoms, redundant_text, report_warnings, special_geometry_note,
                                      verdict_awaits_rank)
from core.run import run_kind

from . import shortened

__all__ = ["IncidenceModel", "StructurePanel", "MOBILITY_COLOURS"]

_DEGREE_NAMES = {0: "isolated", 1: "unary", 2: "binary", 3: "ternary", 4: "quaternary", 5: "quinary"}

# the colour of `M = …`: how the drivers meet the freedoms a driver can fix (StructurePanel.driver_state); "checking":
# not judged yet, the rank-based count that judges them is being computed (core.kinematics.mobility.verdict_awaits_rank)
MOBILITY_COLOURS = {"determined": "#1b5e20", "undriven": "#0d47a1", "overdriven": "#0d47a1", "free": "#0d47a1",
                    "structure": "#b71c1c", "checking": "#78909c"}


BODY_HEADER_CHARS = 24  # a body name in the matrix's row header is shortened to this many characters, with "…" (a
# 100-character name took the whole table and pushed every joint column out of view); the tooltip has it whole
JOINT_HEADER_CHARS = 5  # likewise a joint name in its (38 px) column header


LOOP_TEXT_NAMES = 24  # a loop's line in the loops list names at most this many joints (the first and last ones)


def _chain(names: list[str], sep: str) -> str:
    """The names joined by `sep`; beyond LOOP_TEXT_NAMES, the first and last few around "…"."""
    if len(names) <= LOOP_TEXT_NAMES:
        return sep.join(names)
    half = LOOP_TEXT_NAMES // 2
    return sep.join(names[:half]) + sep + "…" + sep + sep.join(names[-half:])


class IncidenceModel(QAbstractTableModel):
    """The incidence matrix of the structure report: rows bodies, columns joints, a 1 where a joint attaches a body."""

    def __init__(self, document, parent=None) -> None:
        super().__init__(parent)
        self.document = document
        self._report = document.structure()
        self._types: list[str] = []
        self._bold = QFont()
        self._bold.setBold(True)
        self._one = QBrush(QColor("#cfe0f5"))
        self._ground = QBrush(QColor("#e4e6ea"))

    def refresh(self) -> None:
        """Re-read the report (a reset: the shape of the matrix may have changed)."""
        self.beginResetModel()
        self._report = self.document.structure()
        self._types = [j.type for j in self.document.mechanism.joints]
        self.endResetModel()

    @property
    def report(self):
        """The report this model shows."""
        return self._report

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: D102 - Qt API
        return 0 if parent.isValid() else len(self._report.bodies)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: D102 - Qt API
        return 0 if parent.isValid() else len(self._report.joints)

    def data(self, index: QModelIndex, role: int = Qt.DisplayRole):  # noqa: D102 - Qt API
        if not index.isValid():
            return None
        r, c = index.row(), index.column()
        v = int(self._report.incidence[r, c])
        if role == Qt.DisplayRole:
            return "1" if v else ""
        if role == Qt.TextAlignmentRole:
            return int(Qt.AlignCenter)
        if role == Qt.BackgroundRole:
            if v:
                return self._one
            if r in self._report.grounds:
                return self._ground
        if role == Qt.FontRole and v:
            return self._bold
        if role == Qt.ToolTipRole:
            j, b = self._report.joints[c], self._report.bodies[r]
            return f"joint {j} {'attaches' if v else 'does not attach'} body {b}"
        if role == Qt.UserRole:
            return v
        return None

    def headerData(self, section: int, orientation, role: int = Qt.DisplayRole):  # noqa: D102 - Qt API
        rep = self._report
        if orientation == Qt.Horizontal:
            if section >= len(rep.joints):
                return None
            t = self._types[section] if section < len(self._types) else ""
            letter = JOINT_TYPES[t].letter if t in JOINT_TYPES else "?"
            if role == Qt.DisplayRole:
                return f"{shortened(rep.joints[section], JOINT_HEADER_CHARS)}\n{letter}"
            if role == Qt.ToolTipRole:
                return f"joint {rep.joints[section]} ({t})"
        else:
            if section >= len(rep.bodies):
                return None
            ground = section in rep.grounds
            if role == Qt.DisplayRole:
                return f"{shortened(rep.bodies[section], BODY_HEADER_CHARS)}{' [G]' if ground else ''}  ({rep.degrees[section]})"
            if role == Qt.ToolTipRole:
                d = rep.degrees[section]
                return f"body {rep.bodies[section]}{' (ground)' if ground else ''}: {d} joint(s), {_DEGREE_NAMES.get(d, f'{d}-ary')}"
            if role == Qt.FontRole and ground:
                return self._bold
        return None


class StructurePanel(QWidget):
    """Shows the structure analysis of the document; incidence selection is synced with the shared Selection."""

    def __init__(self, document, selection, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.document, self.selection = document, selection
        self._syncing = False
        self.rank = None  # core.kinematics.RankMobility of the current geometry (computed off the GUI thread)
        self.rank_pending = False  # `rank` is None and being computed for the current geometry (it will arrive)
        self.driver_state = ""  # the drivers against the freedoms to drive: a key of MOBILITY_COLOURS
        self._shown = None  # the structure report the widgets show

        self.model = IncidenceModel(document, self)
        self.table = QTableView()
        self.table.setObjectName("incidenceTable")
        self.table.setModel(self.model)
        self.table.setSelectionMode(QAbstractItemView.ExtendedSelection)
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.Fixed)
        self.table.horizontalHeader().setDefaultSectionSize(38)
        self.table.horizontalHeader().setMinimumHeight(38)
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.Fixed)
        self.table.setToolTip("Incidence matrix: rows are bodies (with their degree), columns joints (with their type)")
        self.table.selectionModel().selectionChanged.connect(self._table_to_selection)

        self.mobility = QLabel()
        self.mobility.setObjectName("mobilityLabel")
        f = QFont(self.mobility.font())
        f.setPointSizeF(f.pointSizeF() * 1.6)
        f.setBold(True)
        self.mobility.setFont(f)
        self.formula = QLabel()
        self.formula.setObjectName("formulaLabel")
        self.formula.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.formula.setToolTip("Gruebler–Kutzbach count: λ(n−1) − Σ (constraints per joint)")
        # the rank-based count beside it: the freedoms and redundant constraints of the geometry as drawn
        self.rank_text = QLabel()
        self.rank_text.setObjectName("rankLabel")
        self.rank_text.setWordWrap(True)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setMinimumWidth(200)
        self.chain = QLabel()
        self.degrees = QLabel()
        self.degrees.setWordWrap(True)
        self.loops = QListWidget()
        self.loops.setObjectName("loopsList")
        self.loops.setMouseTracking(True)
        self.loops.setToolTip("Fundamental loops (hover one to highlight its joints)")
        self.loops.itemEntered.connect(self._hover_loop)
        self.loops.viewport().installEventFilter(self)
        self.warnings = QListWidget()
        self.warnings.setObjectName("warningsList")
        self.warnings.setWordWrap(True)

        summary = QWidget()
        form = QFormLayout(summary)
        form.setContentsMargins(6, 2, 6, 2)
        form.addRow(self.mobility)
        form.addRow(self.formula)
        form.addRow("By rank:", self.rank_text)
        form.addRow("Counts:", self.summary)
        form.addRow("Chain:", self.chain)
        form.addRow("Degrees:", self.degrees)
        lists = QWidget()
        lay = QVBoxLayout(lists)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.setSpacing(2)
        for lst in (self.loops, self.warnings):
            lst.setMinimumHeight(48)
        lay.addWidget(_caption("Fundamental loops"))
        lay.addWidget(self.loops, 3)
        lay.addWidget(_caption("Warnings"))
        lay.addWidget(self.warnings, 2)

        split = QSplitter(Qt.Horizontal)
        split.addWidget(self.table)
        split.addWidget(summary)
        split.addWidget(lists)
        split.setStretchFactor(0, 4)
        split.setStretchFactor(1, 2)
        split.setStretchFactor(2, 3)
        split.setSizes([520, 330, 420])
        outer = QVBoxLayout(self)
        outer.setContentsMargins(2, 2, 2, 2)
        outer.addWidget(split)

        document.changed.connect(self.refresh)
        selection.changed.connect(self._selection_to_table)
        self.refresh()

    def sizeHint(self) -> QSize:  # noqa: D102 - Qt API
        return QSize(640, 260)

    def set_rank_mobility(self, rank, pending: bool = False) -> None:
        """Judge the drivers by this rank-based count, as the status bar's DOF readout does. None: not known for the
        current geometry; `pending`, it is being computed (the drivers are not judged until it arrives, unless the
        Gruebler count's verdict cannot be contradicted), else the structure report's Gruebler count judges them."""
        pending = bool(pending) and rank is None
        if rank is self.rank and pending == self.rank_pending:
            return
        self.rank, self.rank_pending = rank, pending
        self._show_drivers(self.document.structure())

    # ---- model -> widgets -------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Re-read the structure report into every widget (not when it is the report shown already: an edit that
        changed nothing the analysis reads, such as a node moved, keeps the document's report)."""
        rep = self.document.structure()
        if rep is self._shown:
            self._show_drivers(rep)
            return
        self._shown = rep
        self._syncing = True
        try:
            self.model.refresh()
        finally:
            self._syncing = False
        n, m = len(rep.bodies), len(rep.joints)
        self.mobility.setText(f"M = {rep.mobility}")
        self.formula.setText(rep.mobility_formula)
        self.summary.setText(
            f"{n} bodies, {m} joints, {rep.loops} loop{'s' if rep.loops != 1 else ''}; "
            f"{rep.coordinates} joint coordinates, {rep.n_drivers} driver{'s' if rep.n_drivers != 1 else ''}"
        )
        self.chain.setText(f"{rep.chain}{', simple' if rep.simple else ''}" if n else "—")
        counts: dict[int, int] = {}
        for d in rep.degrees:
            counts[d] = counts.get(d, 0) + 1
        self.degrees.setText(", ".join(f"{k} {_DEGREE_NAMES.get(d, f'{d}-ary')}" for d, k in sorted(counts.items())) or "—")
        self.loops.clear()
        for i, loop in enumerate(rep.fundamental_loops):
            bodies = [rep.bodies[b] for b in rep.loop_bodies[i]]
            joints = [rep.joints[j] for j in loop]
            # (a long loop's text shortened: a 1,051-body ladder's 350 loops of up to 700 joints each were 124,000
            # names joined into lines no one reads, at every structural edit)
            text = f"L{i + 1}: " + _chain(joints, " – ") + f"   ({len(loop)} joints)"
            item = QListWidgetItem(text)
            item.setData(Qt.UserRole, (joints, bodies))
            item.setToolTip("bodies: " + _chain(bodies, " → "))
            self.loops.addItem(item)
        self._show_drivers(rep)
        self._selection_to_table()

    def _show_drivers(self, rep) -> None:
        """The colour and tooltip of `M = …` and the warnings: what depends on the rank-based count."""
        m = len(rep.joints)
        # the text is the Gruebler count (next to its formula); the colour judges the drivers as the driver check
        # does, by the rank-based count once it has arrived (an RSSR's one driver fixes its one freedom: the
        # coupler's spin is idle); while it is being computed they are not judged (a spatial four-bar of revolutes
        # counts M = -2, no freedom, and has 1); when none is coming the Gruebler count judges them
        need, nd = drivable_freedoms(rep, self.rank), rep.n_drivers
        checking = verdict_awaits_rank(rep, self.rank, self.rank_pending)
        if checking:
            state = "checking"
        elif need > 0 and nd == need:
            state = "determined"
        elif need <= 0 and m:
            state = "structure"
        elif nd != need:
            state = "undriven" if nd < need else "overdriven"
        else:  # no joint, so no driver: free bodies (each a floating part) or none
            state = "free"
        self.driver_state = state
        self.mobility.setStyleSheet(f"color: {MOBILITY_COLOURS[state]};")
        contact = run_kind(self.document.mechanism) == "contact"
        self.mobility.setToolTip(self._mobility_tip(rep, state, need, contact))
        self.rank_text.setText(self._rank_text(rep))
        self.rank_text.setToolTip(RANK_TIP)
        self.warnings.clear()
        icon = self.style().standardIcon(QStyle.SP_MessageBoxWarning)
        info = self.style().standardIcon(QStyle.SP_MessageBoxInformation)
        # the rank-based count's note where the Gruebler count finds no freedom but the geometry moves
        note = special_geometry_note(rep, self.rank)
        # the driver warning from the rank-based count once known (idle freedoms set aside: the RSSR is fully driven
        # with one driver, which the Gruebler count's warning doubted); none while that count is being computed
        for w in report_warnings(rep, self.rank, contact):
            if checking and rep.driver_warning and w == rep.driver_warning:
                continue
            self.warnings.addItem(QListWidgetItem(info if note and w == note else icon, w))

    def _rank_text(self, rep) -> str:
        """The rank-based count in a line: its freedoms and redundant constraints, or why it is not shown."""
        if not rep.joints:
            return "—"
        if self.rank is None:
            return "being computed…" if self.rank_pending else "not known (computed when the motion runs)"
        r = self.rank
        notes = [f"{r.idle_freedoms} idle set aside"] if r.idle_freedoms else []
        notes += [f"{r.singular_freedoms} of a singular position set aside"] if r.singular_freedoms else []
        notes += [f"{r.floating_freedoms} floating"] if r.floating_freedoms else []
        dof = f"{r.effective} DOF" + (f" ({', '.join(notes)})" if notes else "")
        text = f"{dof}, {redundant_text(r.redundant_constraints)}"
        if not r.design_closed:
            text += " (of the drawing: its loops do not close as drawn)"
        return text

    def _mobility_tip(self, rep, state: str, need: int, contact: bool) -> str:
        """What the label's number and colour say."""
        nd, what = rep.n_drivers, f"M = {rep.mobility}: the Gruebler–Kutzbach count"
        if state == "free":
            return f"{what}. Colour: blue, no joint, nothing for a driver to fix"
        if state == "checking":
            return (f"{what}. Colour: grey, the drivers ({nd}) not judged yet: the rank-based count that judges them "
                    "(as the driver check does: idle freedoms, such as a coupler's spin, set aside, and a redundant "
                    "constraint not counted as a lost freedom) is being computed for this geometry")
        if self.rank is not None:
            count = (f"the drivers judged by the rank-based count, as the driver check does: "
                     f"{self.rank.freedoms_text()}, {redundant_text(self.rank.redundant_constraints)}, "
                     f"{max(need, 0)} for drivers to fix")
        else:
            floating = rep.floating_freedoms
            count = (f"the drivers judged by this count, the rank-based one (which sets idle freedoms aside, such as a "
                     f"coupler's spin) not being known for this geometry (it is computed when the motion runs): "
                     f"{max(need, 0)} for drivers to fix"
                     + (f", {floating} floating (of parts not attached to the ground, which no driver fixes)"
                        if floating else ""))
        verdict = {
            "determined": f"green, {nd} driver(s): the motion is determined",
            "structure": f"red, no freedom for a driver to fix ({nd} driver(s))",
            "undriven": f"blue, {nd} driver(s): {need - nd} freedom(s) not driven"
                        + (" (gravity and contact move them: a dynamics run)" if contact else ""),
            "overdriven": f"blue, {nd} driver(s): {nd - need} too many",
        }[state]
        return f"{what}. Colour: {count}; {verdict}"

    def _selection_to_table(self) -> None:
        rep = self.model.report
        rows = [i for i, b in enumerate(rep.bodies) if b in self.selection.bodies]
        cols = [k for k, j in enumerate(rep.joints) if j in self.selection.joints]
        sel = QItemSelection()
        last_row, last_col = self.model.rowCount() - 1, self.model.columnCount() - 1
        for r in rows:
            if last_col >= 0:
                sel.select(self.model.index(r, 0), self.model.index(r, last_col))
        for c in cols:
            if last_row >= 0:
                sel.select(self.model.index(0, c), self.model.index(last_row, c))
        self._syncing = True
        try:
            self.table.selectionModel().select(sel, QItemSelectionModel.ClearAndSelect)
        finally:
            self._syncing = False

    # ---- widgets -> selection ---------------------------------------------------------------------------------
    def _table_to_selection(self, *_args) -> None:
        if self._syncing:
            return
        rep = self.model.report
        sm = self.table.selectionModel()
        bodies = {rep.bodies[i.row()] for i in sm.selectedRows()}
        joints = {rep.joints[i.column()] for i in sm.selectedColumns()}
        if not bodies and not joints:
            # Single cells: a 1 means that joint, an empty cell that body.
            for idx in sm.selectedIndexes():
                if rep.incidence[idx.row(), idx.column()]:
                    joints.add(rep.joints[idx.column()])
                else:
                    bodies.add(rep.bodies[idx.row()])
        self.selection.set(bodies=bodies, joints=joints)

    def _hover_loop(self, item: QListWidgetItem) -> None:
        joints, bodies = item.data(Qt.UserRole)
        self.selection.highlight(bodies=bodies, joints=joints)

    def eventFilter(self, obj, event) -> bool:  # noqa: D102 - Qt API
        if obj is self.loops.viewport() and event.type() == event.Type.Leave:
            self.selection.highlight()
        return super().eventFilter(obj, event)


RANK_TIP = ("The rank-based count: the rank of the loop-closure equations at the geometry as drawn. DOF = joint "
            "coordinates − rank (plus the rigid-body freedoms of a part attached to no ground; idle freedoms, such as "
            "a coupler's spin, set aside); redundant constraints = loop equations − rank. Unlike the "
            "Gruebler–Kutzbach count it sees a special geometry: a double parallelogram counts M = 0 and moves with "
            "1 DOF and 1 redundant constraint. The status bar's DOF is this count; it is computed at the start of "
            "a run of a changed geometry")


def _caption(text: str) -> QLabel:
    lab = QLabel(text)
    lab.setStyleSheet("font-weight: bold; color: #37474f; margin-top: 4px;")
    return lab


def _separator() -> QFrame:
    f = QFrame()
    f.setFrameShape(QFrame.HLine)
    f.setFrameShadow(QFrame.Sunken)
    return f
