"""The Plots panel: joint coordinates over time and named-point traces in the x-y plane, with the time cursor.

The panel observes a Playback: its recording (positions, points, cursor) and its worker's frame batches, from which
it keeps the joint rates and accelerations the recording does not store. Curve items are made once per set of
coordinate/point names and only get `setData` on views of preallocated arrays as frames arrive.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSplitter, QVBoxLayout, QWidget


__all__ = ["PlotsPanel", "MODES", "LEGEND_MAX"]

# combo entry -> (label of the y axis, which array)
MODES = {
    "positions": ("q  [rad or m]", "q"),
    "velocities": ("q̇  [rad/s or m/s]", "qd"),
    "accelerations": ("q̈  [rad/s² or m/s²]", "qdd"),
}
LEGEND_MAX = 16  # more coordinates than this: no legend (it would cover the plot)
_FG = "#37474f"


_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")


def _pens(n: int) -> list:
    """n distinguishable pens (built once per set of curves; colours repeat after ten)."""
    return [pg.mkPen(_PALETTE[i % len(_PALETTE)], width=2) for i in range(n)]


def _plot_widget(title: str, x: str, y: str) -> pg.PlotWidget:
    w = pg.PlotWidget(background="w")
    p = w.getPlotItem()
    p.setTitle(title, color=_FG, size="9pt")
    for side, text in (("bottom", x), ("left", y)):
        ax = p.getAxis(side)
        ax.setPen(_FG)
        ax.setTextPen(_FG)
        ax.setLabel(text)
    p.showGrid(x=True, y=True, alpha=0.25)
    return w


class PlotsPanel(QWidget):
    """q(t), q̇(t) or q̈(t) of every joint coordinate, and the x-y traces of the named points, following the cursor."""

    def __init__(self, playback, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("plotsPanel")
        self.playback = playback
        self.recording = rec = playback.recording
        cursor_pen, marker_pen = pg.mkPen("#212121", width=1.5, style=Qt.DashLine), pg.mkPen("#212121", width=2)  # built once

        self.mode_combo = QComboBox()
        self.mode_combo.setObjectName("plotsMode")
        self.mode_combo.addItems(list(MODES))
        self.mode_combo.setToolTip("Which joint quantity to plot over time")
        self.mode_combo.currentIndexChanged.connect(lambda _i: self._show_mode())

        self.q_widget = _plot_widget("Joint coordinates", "t [s]", MODES["positions"][0])
        self.q_widget.setObjectName("plotsJoint")
        self.q_plot = self.q_widget.getPlotItem()
        self.q_plot.setClipToView(True)  # long recordings: draw only what is in view, downsampled
        self.q_plot.setDownsampling(auto=True, mode="peak")
        self.q_legend = self.q_plot.addLegend(offset=(8, 8), labelTextColor=_FG, brush=pg.mkBrush(255, 255, 255, 200))
        self.cursor_line = pg.InfiniteLine(angle=90, movable=False, pen=cursor_pen)
        self.cursor_line.setVisible(False)
        self.q_plot.addItem(self.cursor_line, ignoreBounds=True)

        self.xy_widget = _plot_widget("Point traces (x-y plane)", "x [m]", "y [m]")
        self.xy_widget.setObjectName("plotsPoints")
        self.xy_plot = self.xy_widget.getPlotItem()
        self.xy_plot.setAspectLocked(True)  # a coupler curve keeps its shape
        self.xy_legend = self.xy_plot.addLegend(offset=(8, 8), labelTextColor=_FG, brush=pg.mkBrush(255, 255, 255, 200))
        self.point_marker = pg.ScatterPlotItem(size=9, pen=marker_pen, brush=pg.mkBrush("#ffffff"))
        self.point_marker.setZValue(10)
        self.point_marker.setVisible(False)
        self.xy_plot.addItem(self.point_marker)

        self.q_curves: list[pg.PlotDataItem] = []
        self.xy_curves: list[pg.PlotDataItem] = []
        self._coord_names: list[str] = []
        self._point_names: list[str] = []
        self.empty_label = QLabel("No frames yet: the motion is being solved, or cannot be.")
        self.empty_label.setObjectName("plotsEmpty")
        self.empty_label.setStyleSheet(f"color: {_FG};")

        top = QHBoxLayout()
        top.setContentsMargins(4, 2, 4, 0)
        top.addWidget(QLabel("Joint plot:"))
        top.addWidget(self.mode_combo)
        top.addSpacing(12)
        top.addWidget(self.empty_label)
        top.addStretch(1)
        split = QSplitter(Qt.Horizontal)
        split.addWidget(self.q_widget)
        split.addWidget(self.xy_widget)
        split.setSizes([600, 400])  # proportions: the time plot wider
        split.setChildrenCollapsible(False)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addLayout(top)
        lay.addWidget(split, 1)

        rec.cleared.connect(self._on_cleared)
        rec.grew.connect(self._on_grew)
        rec.cursorChanged.connect(self._on_cursor)
        self._on_cleared()
        if rec.count:  # frames recorded before this panel existed
            self._on_grew(rec.count)

    # ---- reading (tests, readouts) -----------------------------------------------------------------------------
    @property
    def mode(self) -> str:
        """The joint quantity plotted: 'positions', 'velocities' or 'accelerations'."""
        return self.mode_combo.currentText()

    def set_mode(self, mode: str) -> None:
        """Plot this joint quantity (one of MODES)."""
        self.mode_combo.setCurrentIndex(list(MODES).index(mode))

    def joint_series(self) -> np.ndarray:
        """(count, nq) view of the plotted joint quantity over the recorded frames."""
        n = self.recording.count
        which = MODES[self.mode][1]
        return getattr(self.recording, which)[:n]

    # ---- recording events --------------------------------------------------------------------------------------
    def _on_cleared(self) -> None:
        """A new solve is coming: empty every curve (items are kept for the next recording's names)."""
        for c in self.q_curves + self.xy_curves:
            c.setData([], [])
        self.cursor_line.setVisible(False)
        self.point_marker.setData([], [])
        self.point_marker.setVisible(False)
        self.empty_label.setVisible(True)

    def _ensure_items(self) -> None:
        """Buffers sized for the recording, and one curve per coordinate / point (rebuilt only when names change)."""
        rec = self.recording
        if rec.coord_names != self._coord_names:
            self._coord_names = list(rec.coord_names)
            self.q_curves = self._rebuild(self.q_plot, self.q_legend, self.q_curves, self._coord_names)
        if rec.point_names != self._point_names:
            self._point_names = list(rec.point_names)
            self.xy_curves = self._rebuild(self.xy_plot, self.xy_legend, self.xy_curves, self._point_names)

    def _rebuild(self, plot, legend, old, names) -> list:
        for c in old:
            plot.removeItem(c)  # also leaves the legend
        legend.setVisible(0 < len(names) <= LEGEND_MAX)
        named = len(names) <= LEGEND_MAX
        out = []
        for name, pen in zip(names, _pens(len(names))):
            c = pg.PlotDataItem(pen=pen, name=name if named else None, skipFiniteCheck=True)
            plot.addItem(c)
            out.append(c)
        return out

    def _on_grew(self, count: int) -> None:
        self._ensure_items()
        self.empty_label.setVisible(False)
        self._update_joint_curves()
        self._update_point_curves()
        self._on_cursor(self.recording.cursor)

    # ---- drawing -----------------------------------------------------------------------------------------------
    def _show_mode(self) -> None:
        self.q_plot.getAxis("left").setLabel(MODES[self.mode][0])
        self._update_joint_curves()
        self.q_plot.enableAutoRange()
        self._on_cursor(self.recording.cursor)

    def _update_joint_curves(self) -> None:
        rec = self.recording
        t = rec.times[: rec.count]
        Y = self.joint_series()
        if len(Y) != len(t):
            return
        for i, c in enumerate(self.q_curves):
            c.setData(t, Y[:, i])

    def _update_point_curves(self) -> None:
        rec = self.recording
        P = rec.points[: rec.count]
        for i, c in enumerate(self.xy_curves):
            c.setData(P[:, i, 0], P[:, i, 1])

    def _on_cursor(self, k: int) -> None:
        rec = self.recording
        t = rec.time_at(k)
        if t is None:
            return
        self.cursor_line.setValue(t)
        self.cursor_line.setVisible(True)
        if self._point_names:
            p = rec.points[k]
            self.point_marker.setData(p[:, 0], p[:, 1])
            self.point_marker.setVisible(True)

    def cursor_time(self) -> float | None:
        """Time the vertical cursor line marks (None while hidden)."""
        return float(self.cursor_line.value()) if self.cursor_line.isVisible() else None

    def marker_points(self) -> np.ndarray:
        """(n_points, 2) positions of the cursor markers on the point traces."""
        x, y = self.point_marker.getData()
        return np.column_stack((x, y)) if x is not None else np.zeros((0, 2))
