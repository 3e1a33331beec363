"""The Four-bar panel: the teaching report of the document's four-bar (Grashof, class, limits, transmission, toggles).

Observes the document: a burst of edits restarts a 100 ms single-shot timer, then `core.fourbar.find_fourbar` and
`report` (closed form, a few milliseconds) run once and the read-only form and the μ(θ2) plot are refilled.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QFormLayout, QFrame, QLabel, QScrollArea, QSplitter, QStackedWidget, QVBoxLayout, QWidget

from core.errors import LinkwrightError
from core.fourbar import find_fourbar, report

from .summary import ROWS, summary_rows, transmission_curve

__all__ = ["FourBarPanel", "DEBOUNCE_MS", "NOT_A_FOURBAR"]

DEBOUNCE_MS = 100  # edits closer together than this are analysed once
NOT_A_FOURBAR = "Not a single-loop planar four-bar."
_FG = "#37474f"


def _mechanism_key(mech) -> tuple:
    """What the report depends on (drivers choose the crank; graph-editor positions do not matter)."""
    return (mech.space, tuple(mech.bodies), tuple(mech.joints), tuple(mech.drivers))


class FourBarPanel(QWidget):
    """Read-only teaching report of the document's four-bar, or one line saying there is none."""

    def __init__(self, document, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("fourBarPanel")
        self.document = document
        self.found = None  # core.fourbar.FoundFourBar of the document, None if it is not a four-bar
        self.report: dict | None = None  # core.fourbar.report of it
        self.reason = ""  # why the document is not a four-bar
        self.analyses = 0  # how many times the report was computed (tests: the debounce)
        self._key = None

        self.message = QLabel(NOT_A_FOURBAR)
        self.message.setObjectName("fourBarMessage")
        self.message.setAlignment(Qt.AlignLeft | Qt.AlignTop)
        self.message.setWordWrap(True)
        self.message.setMargin(8)
        self.message.setStyleSheet(f"color: {_FG};")

        form_host = QWidget()
        form = QFormLayout(form_host)
        form.setLabelAlignment(Qt.AlignRight | Qt.AlignTop)
        form.setFieldGrowthPolicy(QFormLayout.AllNonFixedFieldsGrow)
        form.setContentsMargins(8, 6, 8, 6)
        form.setVerticalSpacing(3)
        self.fields: dict[str, QLabel] = {}
        for key, label in ROWS:
            v = QLabel()
            v.setObjectName(f"fourBar_{key}")
            v.setTextInteractionFlags(Qt.TextSelectableByMouse)  # copyable, never editable
            v.setWordWrap(True)
            if key in ("class", "grashof"):
                f = v.font()
                f.setBold(True)
                v.setFont(f)
            if key == "convention":
                v.setStyleSheet(f"color: {_FG};")
            self.fields[key] = v
            form.addRow(label + ":", v)
        scroll = QScrollArea()
        scroll.setWidget(form_host)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.NoFrame)

        self.mu_widget = pg.PlotWidget(background="w")
        self.mu_widget.setObjectName("fourBarTransmission")
        p = self.mu_plot = self.mu_widget.getPlotItem()
        p.setTitle("Transmission angle μ over the crank angle θ2", color=_FG, size="9pt")
        for side, text in (("bottom", "θ2 [°]"), ("left", "μ [°]")):
            ax = p.getAxis(side)
            ax.setPen(_FG)
            ax.setTextPen(_FG)
            ax.setLabel(text)
            ax.enableAutoSIPrefix(False)  # (degrees in the label)
        p.showGrid(x=True, y=True, alpha=0.25)
        # room beyond the end ticks (-180 and 180, 0 and 180): pyqtgraph leaves out a tick label that would reach past
        # its axis, and at 2 % of padding those four were never drawn
        p.setXRange(-180, 180, padding=0.07)
        p.setYRange(0, 180, padding=0.07)
        p.getAxis("bottom").setTicks([[(v, f"{v}") for v in range(-180, 181, 90)]])
        p.getAxis("left").setTicks([[(v, f"{v}") for v in range(0, 181, 45)]])
        band = pg.mkPen("#9e9e9e", width=1, style=Qt.DashLine)
        for v in (40.0, 140.0):  # the usual acceptable band of the transmission angle
            p.addItem(pg.InfiniteLine(pos=v, angle=0, movable=False, pen=band), ignoreBounds=True)
        self.mu_curve = pg.PlotDataItem(pen=pg.mkPen("#1565c0", width=2))
        self.mu_extremes = pg.ScatterPlotItem(size=8, pen=pg.mkPen("#b71c1c"), brush=pg.mkBrush("#ffffff"))
        p.addItem(self.mu_curve)
        p.addItem(self.mu_extremes)
        p.setMouseEnabled(x=False, y=False)  # a fixed teaching figure
        self.mu_widget.setMinimumWidth(240)

        split = QSplitter(Qt.Horizontal)
        split.addWidget(scroll)
        split.addWidget(self.mu_widget)
        split.setSizes([620, 380])  # proportions: the form wider than the figure
        split.setChildrenCollapsible(False)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.message)
        self.stack.addWidget(split)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.stack)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._timer.timeout.connect(self.refresh)
        document.changed.connect(self._timer.start)
        document.replaced.connect(self._timer.start)
        self.refresh()

    def pending(self) -> bool:
        """Whether an edit is waiting for the debounce before the report is recomputed."""
        return self._timer.isActive()

    def is_fourbar(self) -> bool:
        """Whether the report (not the one-line message) is shown."""
        return self.stack.currentIndex() == 1

    def text(self, key: str) -> str:
        """Text of the report's row `key` (see summary.ROWS)."""
        return self.fields[key].text()

    def refresh(self) -> None:
        """Recompute the report if what it depends on changed, and show it."""
        mech = self.document.mechanism
        key = _mechanism_key(mech)
        if key == self._key:
            return
        self._key = key
        self.analyses += 1
        try:
            found = find_fourbar(mech)
            rep = report(found.fourbar, branch=found.branch, theta2=found.theta2_design)
        except LinkwrightError as exc:
            self.found, self.report, self.reason = None, None, exc.message
            self.message.setText(f"{NOT_A_FOURBAR}\n({exc.message})")
            self.stack.setCurrentIndex(0)
            self.mu_curve.setData([], [])
            self.mu_extremes.setData([], [])
            return
        self.found, self.report, self.reason = found, rep, ""
        for k, text in summary_rows(found, rep).items():
            self.fields[k].setText(text)
        x, y, connect = transmission_curve(found.fourbar, found.branch)
        self.mu_curve.setData(x, y, connect=connect)
        mu = rep["transmission_angle_deg"]
        if mu:
            self.mu_extremes.setData([mu["at_crank_deg"], mu["max_at_crank_deg"]], [mu["min"], mu["max"]])
        else:
            self.mu_extremes.setData([], [])
        self.stack.setCurrentIndex(1)
