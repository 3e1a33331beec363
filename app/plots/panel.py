"""The Plots panel: selectable time series of the run (joint coordinates; contact forces, gaps, body motion, energies,
solver statistics) and named-point traces in the plane they move in (x-y, or x-z / y-z when they move less along z),
all following the one time cursor.

The panel observes a Playback's recordings (the run and, in comparison mode, the other method's run). Which
quantities it offers follows from the run's channels (core.run.Channel). A time-plot curve item is made only for a
series that is shown (a contact pair's once the pair has been in contact range), a few tens of milliseconds of them
at a time, and not while the panel is hidden; items are kept for the same series names and reused for others (a
pyqtgraph curve costs about a millisecond of the GUI thread to make: one per pair of a 64-body pile, 2080, froze the
window for seconds), and only get `setData` on views of the recording's arrays as frames arrive. Beyond BUNDLE_OVER
curves one item draws them all (_Bundle), a line per series. Click or drag on the time plot seeks. The visible series
export to CSV, the plot to PNG or SVG (drawn in memory, written atomically).
"""

from __future__ import annotations

import csv
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Callable

import numpy as np
import pyqtgraph as pg
import pyqtgraph.exporters  # noqa: F401 - registers the exporters
from PySide6.QtCore import QAbstractListModel, QBuffer, QIODevice, QModelIndex, QRectF, Qt, QTimer
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtWidgets import (
    QComboBox,
    QGraphicsTextItem,
    QHBoxLayout,
    QLabel,
    QListView,
    QMessageBox,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from core import io
from core.errors import LinkwrightError

from ..files import ask_save_path
from ..playback.panel import LabelHolder
from ..playback.recording import time_text

__all__ = ["PlotsPanel", "MODES", "LEGEND_MAX", "NOT_PLOTTED", "Quantity", "quantities"]

# kinematics: combo entry -> (label of the y axis, which channel)
MODES = {
    "positions": ("q  [rad or m]", "q"),
    "velocities": ("q̇  [rad/s or m/s]", "qd"),
    "accelerations": ("q̈  [rad/s² or m/s²]", "qdd"),
}
# units the time plot's axis writes with an SI prefix (mm, kN, mN m, ...); an axis of any other unit, or none, writes
# plain numbers (_Axis)
SI_UNITS = ("N", "m", "m/s", "rad/s", "J", "N m")
# contact channels not offered as time plots: impulses (their forces are offered), contact geometry and body
# orientations (drawn in the 3D view), the in-range flags (they choose which pair series are shown), named points
# (the x-y traces)
NOT_PLOTTED = frozenset({"pair.active", "pair.pn", "pair.pf", "pair.pr", "pair.point_a", "pair.point_b", "pair.normal",
                         "body.orientation", "points"})
# The resolution of a plot's values by their unit: data that all lie within it of one value (their whole span below
# it) are that value, drawn without extent (_View: ±1 about 0, ±10 % of another value), and the plot's title says
# "numerical noise below 1e-12 m, drawn as 0". Below it the numbers are round-off and the solver's tolerance, not
# motion or force: drawn at their own scale, the cam follower's gap of 3e-21 m read in zeptometres and its guide's
# reaction of 2e-13 N in femtonewtons. unit -> (absolute, relative to the run's largest |value| in that unit), the
# larger of the two rounded up to a power of ten; a unit not listed: ROUND_OFF; no unit (counts, the solver's
# residual, whose small values are its point): no resolution, drawn at any scale.
RESOLUTION = {
    # lengths (gaps, positions, point traces): 1 pm, a thousandth of the contact solver's overlap bound (9e-10 m)
    "m": (1e-12, 1e-12),
    # forces and torques: 1 pN, or a billionth of the run's largest (the implicit contact solver stops at a scaled
    # residual of 1e-10 of its largest unknown; the explicit one's 1e-8 lets more noise than this through)
    "N": (1e-12, 1e-9),
    "N m": (1e-12, 1e-9),
    "N or N m": (1e-12, 1e-9),
}
# any other unit (velocities, energies, joint coordinates): 1e-12 of it, or of the run's largest (round-off)
ROUND_OFF = (1e-12, 1e-12)
LEGEND_MAX = 16  # more series than this: no legend (it would take much of the plot's width)
HOVER_PX = 6  # the point trace plot names the trace within this many pixels of the mouse
LEGEND_GAP = 8  # px between a plot's view and its legend (drawn beside it: _PlacedLegend)
LEGEND_SHARE = 0.4  # the most of a plot's width its legend takes
STREAM_REDRAW_MS = 200  # contact runs: while frames stream, curves are redrawn at most this often
# ... and at most this share of the GUI thread's time: the next redraw waits STREAM_REDRAW_SPACING times as long as
# the last one took (its curves' new data and the window update that drew them); many curves of a long run took
# 100-300 ms of the GUI thread per redraw on a software-rendered window, at every batch
STREAM_REDRAW_SPACING = 3.0
REFRESH_ROWS = 32  # the series list repaints at most this many changed rows one by one, of more its whole view
CURVE_SLICE_S = 0.04  # the GUI thread makes or reuses curve items for at most about this long, then lets events in
# a time plot of more curves than this draws them 1 px wide (_pen's thin): Qt's raster engine draws a 1 px line by its
# fast path and strokes a wider one as an outline to fill, each dot of a dotted one apart. 170 curves of 1000 frames
# (a 64-body pile's in-range pairs) took 410 ms of the GUI thread to paint 2 px wide (most of it the dotted ones), 20 ms
# 1 px wide; drawn as one item per pen (NaN breaks between its series) their paint took as long as apart (460 ms). The
# legend names the curves up to this many; beyond it they are told apart by the series list and the readout.
THIN_OVER = LEGEND_MAX
# a time plot of more curves than this draws them all in one item (_Bundle), not one pyqtgraph curve item each: an
# item's new data, its share of the automatic range and its own work in the paint cost the GUI thread about 0.5 ms a
# curve at each redraw; 900 curves of 1200 frames (a 300-body pile's in-range pairs, bench/bench_plots.py) took
# 720-900 ms a redraw drawn by items, 148-158 ms by the bundle (most of it Qt drawing the lines), 170 curves 126-157 ms
# against 33-41 ms. Up to LEGEND_MAX curves each series needs its own item: the legend's samples are the items. The
# bundle measured cheaper from 17 curves on (17: 13 against 21 ms; 40: 20 against 40 ms; 120: 33 against 100 ms), but
# the tests of tests/app/playback (test_plot_many_series, test_gui_work_per_batch) look at the curve items of 40 and
# 120 series (their count, pens and data): so up to 120 curves the items stay, and the two ways of drawing meet here.
BUNDLE_OVER = 120
# pyqtgraph's curve items downsample beyond this many frames per pixel of the view's width (PlotDataItem's
# autoDownsampleFactor); the bundle does as they do
DOWNSAMPLE_FACTOR = 5.0
_FG = "#37474f"
_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")


class _PlacedLegend(pg.LegendItem):
    """A plot's legend (the time plot's, the point traces'), beside its view, right of it, in a column of the plot's
    layout that is as wide as the legend: inside the view it covered curves wherever it went (the pile's impact peaks
    in the top-left corner, the ends of the curves in a right one, in a plot a few names tall; the double pendulum's
    lower tip's trace). It names the plot's curves drawn (show_curves), in as few columns as the height beside the
    view allows (fit), and cannot be dragged (pyqtgraph's legend re-anchors itself where a drag drops it, which could
    be over the curves again)."""

    def __init__(self, plot: pg.PlotItem, widget: QWidget, many: str = "") -> None:
        super().__init__(labelTextColor=_FG, frame=False)
        self.plot_widget = widget  # the plot's widget: the legend takes at most LEGEND_SHARE of its width
        self.slot = pg.GraphicsWidget()
        self.slot.setMinimumHeight(0)
        plot.layout.addItem(self.slot, 2, 3, 2, 1)  # (the view's row and the bottom axis's)
        self._set_slot_width(0)
        self.setParentItem(self.slot)
        # at the top-left of its column (where its own resizing puts it), the column LEGEND_GAP right of the view; not
        # pyqtgraph's anchor, which follows the column's geometry changes: one arriving while the window was deleted
        # called the deleted column, an exception in Qt's event loop
        plot.layout.setColumnSpacing(2, LEGEND_GAP)
        self._slot_height = -1.0  # the column's height the legend's layout was fitted to (_on_slot_geometry)
        self.slot.geometryChanged.connect(self._on_slot_geometry)
        self.key: tuple | None = None  # the curves it lists now (None: to be listed again)
        # more curves drawn than it names: a note in its column says how many and where they are named ('35 curves:
        # named in the series list'; many: the words after the count, as 'curves:<br>named in ...'; none: no note)
        self.many = many
        self.note = QGraphicsTextItem(self.slot)
        self.note.setDefaultTextColor(QColor(_FG))
        self.note.setVisible(False)
        self._note = ""  # (the note's text)

    def mouseDragEvent(self, ev):  # noqa: N802 - Qt API
        ev.ignore()

    def names(self) -> list[str]:
        """The names it shows (none while it is hidden)."""
        return [label.text for _sample, label in self.items] if self.isVisible() else []

    def show_curves(self, curves: list, labels: dict[int, str], others: int = 0) -> None:
        """Name the curves drawn (not one hidden or without data) by their labels (id(curve) -> name); hidden when
        none is, or more than LEGEND_MAX (too wide beside the plot) with `others`, the curves drawn by other items (the
        time plot's bundle: _Bundle)."""
        drawn = [c for c in curves if c.isVisible() and c.xData is not None and len(c.xData)]
        total = len(drawn) + others
        key = (tuple(id(c) for c in drawn), others)
        changed = key != self.key
        if changed:
            self.key = key
            self.clear()
            if total <= LEGEND_MAX:
                for c in drawn:
                    self.addItem(c, labels.get(id(c), ""))
        shown = 0 < total <= LEGEND_MAX
        note = f"{total} {self.many}" if self.many and total > LEGEND_MAX else ""
        if note != self._note:
            self._note = note
            self.note.setHtml(note)
            self.note.setVisible(bool(note))
            changed = True
        if changed or shown != self.isVisibleTo(self.slot):
            # (laid out again only when its names or visibility changed: a layout of the legend costs tens of
            # milliseconds of the GUI thread, and this runs at every redraw while a run's frames stream)
            self.setVisible(shown)
            self.fit()

    def note_text(self) -> str:
        """What the note in its column says (more curves drawn than it names), '' when there is none."""
        return self.note.toPlainText().replace("\u2028", " ").replace("\n", " ") if self._note else ""

    def conceal(self) -> None:
        """Hide it (a new run is coming) and close its column; its names are kept for the same curves."""
        self.setVisible(False)
        self._note = ""
        self.note.setVisible(False)
        self.fit()

    def _set_slot_width(self, w: float) -> None:
        self.slot.setMinimumWidth(w)
        self.slot.setMaximumWidth(w)

    def _on_slot_geometry(self) -> None:
        """Its column changed size: lay it out again when the column's height changed (the rows it has room for),
        not for the widths that fit itself sets."""
        h = self.slot.height()
        if h != self._slot_height:
            self._slot_height = h
            self.fit()

    def fit(self) -> None:
        """Lay the names out in as few columns as the height beside the view (and its bottom axis) allows, and make
        the column of the plot as wide as the legend (none while it is hidden)."""
        n = len(self.items)
        if not self.isVisible() or not n:
            width = math.ceil(self.note.boundingRect().width()) + 4 if self._note else 0  # (the note's, or none)
            if self.slot.maximumWidth() != width:
                self._set_slot_width(width)
            return
        row = max(max(sample.height(), label.height()) for sample, label in self.items)
        height = self.slot.height()  # (0 until the plot is laid out: one column meanwhile)
        rows = max(1, min(n, int(height // max(row, 1.0)))) if height > 0 else n
        cols = -(-n // rows)
        # the legend's width with c columns, as pyqtgraph's LegendItem lays it out (row by row, c entries a row, each
        # its sample and label 3 px apart): the widest row.  Computed here, so the legend is laid out once (each
        # setColumnCount lays out every entry again: trying the counts one by one took 40-50 ms of the GUI thread)
        entry = [sample.width() + label.width() + 6.0 for sample, label in self.items]

        def width_of(c: int) -> float:
            return max(sum(entry[k:k + c]) for k in range(0, n, c))

        # at most LEGEND_SHARE of the plot's width (a plot too low for its names: they run off below)
        while cols > 1 and math.ceil(width_of(cols)) + 4 > LEGEND_SHARE * self.plot_widget.width():
            cols -= 1
        if cols != self.columnCount:
            self.setColumnCount(cols)
        width = math.ceil(self.width()) + 4
        if self.slot.maximumWidth() != width:
            self._set_slot_width(width)


@dataclass(frozen=True)
class Quantity:
    """A plottable quantity: its axis label and its series (label, values over the recorded frames of a recording)."""

    name: str
    axis: str  # label of the y axis, with the unit
    channel: str  # the channel it reads
    series: Sequence  # (label, f(recording) -> (count,) array) per series (_Series: made when asked for)
    comparable: bool = False  # drawn also for the comparison run (dashed)
    pairs: tuple[int, ...] = ()  # per-pair quantities: the contact pair of each series
    note: str = ""  # said in the plot's title, not on the axis (a long axis label is cut off in a low plot)
    tip: str = ""  # what to know in reading it: the tooltip of its entry in the quantity box and of its series' rows
    # (the axis says what is plotted in a few words and its unit; at the default window size the time plot's y axis is
    # about 130 px tall, and a label longer than that is written with its unit alone: _fit_axis_label)

    @property
    def title(self) -> str:
        """The plot's title: the quantity, and its note."""
        return f"{self.name} ({self.note})" if self.note else self.name

    @cached_property
    def labels(self) -> tuple[str, ...]:
        """The series' labels, in order (without making their functions)."""
        return self.series.labels if isinstance(self.series, _Series) else tuple(lab for lab, _f in self.series)

    @cached_property
    def index(self) -> dict[str, int]:
        """label -> series index."""
        return {lab: i for i, lab in enumerate(self.labels)}

    @cached_property
    def pair_rows(self) -> np.ndarray:
        """(len(series),) the contact pair of each series (empty when it is not a per-pair quantity)."""
        return np.asarray(self.pairs, int)


class _Series(Sequence):
    """A quantity's series over one channel's rows (or rows and components), each (label, f(recording) -> values)
    made when asked for: a per-pair quantity of a 64-body pile has 2080 series (6240 with components), and making all
    their functions for every quantity at each run's start took about 0.2 s of the GUI thread."""

    def __init__(self, channel: str, labels, comps=(), norm: bool = False) -> None:
        self.channel, self.norm, self.ncomp = channel, norm, len(comps)
        self.labels = tuple(f"{lab}.{x}" for lab in labels for x in comps) if comps else tuple(labels)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        i = int(i)
        if i < 0:
            i += len(self.labels)
        if not 0 <= i < len(self.labels):
            raise IndexError(i)
        if self.ncomp:
            return self.labels[i], _column(self.channel, i // self.ncomp, i % self.ncomp)
        return self.labels[i], _column(self.channel, i, norm=self.norm)


def _column(channel: str, i: int, comp: int | None = None, norm: bool = False) -> Callable:
    # (label i's series: FrameRecording.label_series, a sparse channel's column or, for a pair never in contact
    # range, its out-of-range values from the poses)
    def f(rec) -> np.ndarray:
        a = rec.label_series(channel, i)
        if not len(a):
            return np.zeros(0)
        if norm:
            return np.linalg.norm(a, axis=1)
        return a if comp is None else a[:, comp]
    return f


# What to know in reading a channel's series (Quantity.tip), beyond its title and unit.
CHANNEL_TIPS = {
    "driver.effort": (
        "The force (N) or torque (N m) each driver applies along its coordinate. Where the driven body touches "
        "another with friction (a pusher's face against a box), the split of the load among redundant contacts is "
        "not unique: friction on the face can carry part of the pushed body's weight, and the effort can then differ "
        "from mu M g + M a by that share (about 4 % low for a pusher moving five boxes, 10-15 % in a slider-crank "
        "pushing a box; with a frictionless face, friction 0 for that pair, it matches to 1e-3 N). docs/contact.md, "
        "Statically indeterminate contacts."),
}


def quantities(kind: str, channels: dict) -> list[Quantity]:
    """The quantities a run with these channels offers, in menu order."""
    out: list[Quantity] = []
    if kind == "kinematics":
        for mode, (axis, ch) in MODES.items():
            c = channels.get(ch)
            if c is not None:
                out.append(Quantity(mode, axis, ch, tuple((lab, _column(ch, i)) for i, lab in enumerate(c.labels))))
        return out

    def per_label(name, ch, axis, comparable=False, norm=False, comps=False, note="", tip=""):
        c = channels.get(ch)
        if c is None or not c.labels:
            return
        if comps:
            series = _Series(ch, c.labels, c.components)
            rows = tuple(i for i in range(len(c.labels)) for _x in c.components)
        else:
            series = _Series(ch, c.labels, norm=norm)
            rows = tuple(range(len(c.labels)))
        out.append(Quantity(name, axis, ch, series, comparable, rows if ch.startswith("pair.") else (), note,
                            tip or CHANNEL_TIPS.get(ch, "")))

    per_label("normal force", "pair.normal_force", "normal force  [N]", comparable=True)
    per_label("friction force", "pair.friction_force", "|friction force|  [N]", comparable=True, norm=True)
    per_label("friction force components", "pair.friction_force", "friction force  [N]", comparable=True, comps=True)
    per_label("gap", "pair.gap", "gap  [m]", comparable=True, note="negative: penetration")
    per_label("body position", "body.position", "position  [m]", comparable=True, comps=True, note="of its origin")
    per_label("centre of mass", "body.com", "position  [m]", comparable=True, comps=True)
    per_label("body velocity", "body.velocity", "velocity  [m/s]", comparable=True, comps=True, note="of its origin")
    per_label("angular velocity", "body.angular", "ω  [rad/s]", comparable=True, comps=True)
    per_label("joint force", "joint.force", "|reaction force|  [N]", comparable=True, norm=True,
              note="on the joint's second body")
    per_label("joint force components", "joint.force", "reaction force  [N]", comparable=True, comps=True,
              note="on the joint's second body")
    per_label("joint torque components", "joint.torque", "reaction torque  [N m]", comparable=True, comps=True,
              note="on the joint's second body, about the joint")
    per_label("energy", "energy", "energy  [J]", comparable=True)
    c = channels.get("solver")
    if c is not None:
        for i, (lab, axis, note) in enumerate((("iterations", "Newton iterations", "per step"),
                                               ("residual", "residual", "of the step, scaled"),
                                               ("halvings", "halvings", "of the step"),
                                               ("fallback", "fallback",
                                                "1: the explicit method took the step, 2: its relaxed problem"))):
            out.append(Quantity(f"solver {lab}", axis, "solver", ((lab, _column("solver", i)),), True, note=note))
    # Any other channel (a driver's effort, ...) is offered as it is: its title, unit, labels and components.
    offered = {q.channel for q in out} | NOT_PLOTTED
    for name, c in channels.items():
        if name not in offered:
            per_label(c.title, name, f"{c.title}  [{c.unit}]" if c.unit else c.title, comparable=True,
                      comps=bool(c.components))
    return out


def axis_label(axis: str) -> tuple[str, str]:
    """(text, unit) of a y-axis label 'text  [unit]': an SI unit goes to pyqtgraph, which writes it with the prefix
    of the values' scale ('gap (µm)') instead of an '(x1e-06)' multiplier; other units stay in the text."""
    if axis.endswith("]") and "[" in axis:
        text, unit = axis[:-1].rsplit("[", 1)
        if unit.strip() in SI_UNITS:
            return text.strip(), unit.strip()
    return axis, ""


def _readout_rounded(v: float, span: float) -> tuple[float, int]:
    """v (finite) rounded to a ten-thousandth of span, and its significant digits (0 for 0); four digits when span
    is none."""
    if not (math.isfinite(span) and span > 0):
        return (v, 4) if v else (0.0, 0)
    step = 10.0 ** (math.floor(math.log10(span)) - 4)
    r = round(v / step) * step
    if r == 0:
        return 0.0, 0
    return r, max(1, math.floor(math.log10(abs(r))) - math.floor(math.log10(step)) + 1)


def readout_number(v: float, span: float) -> str:
    """v written to a ten-thousandth of span (the axis's), as '%g' writes it: 10.52 on a 150 N axis, 0 for -1.2e-13
    on a 420 mm one, 3.216e-12 for 3.2156e-12 on a 1e-11 one."""
    if not math.isfinite(v):
        return str(v)
    r, digits = _readout_rounded(v, span)
    return f"{r:.{digits}g}" if digits else "0"


def readout_quantity(v: float, span: float, unit: str, axis_prefix: str = "") -> str:
    """v in an SI `unit` to a ten-thousandth of span (readout_number's digits), with the axis's prefix when that writes
    it from 0.1 to 1000 ('0.981 N' beside an axis in N), otherwise with the prefix of its own size ('10.5 N' on an axis
    in kN, whose prefix the impact peaks set: it read '0.0105 kN'; '12.3 mm' beside an axis in m); 0 with the axis's
    prefix ('0 mm')."""
    if not math.isfinite(v):
        return f"{v} {unit}"
    r, digits = _readout_rounded(v, span)
    if not digits:
        return f"0 {axis_prefix}{unit}"
    scale, prefix = 10.0 ** -pg.functions.SI_PREFIX_EXPONENTS.get(axis_prefix, 0), axis_prefix
    if not 0.1 <= abs(r * scale) < 1000.0:
        scale, prefix = pg.siScale(r)
    x = r * scale
    digits = max(digits, math.floor(math.log10(abs(x))) + 1)  # (all of its integer digits: never '1.5e+02')
    return f"{x:.{digits}g} {prefix}{unit}"


def _pen(i: int, dashed: bool = False, thin: bool = False):
    """The pen of a plot's i-th series: the ten colours, then the same colours dotted (the comparison run's dashed,
    then dash-dot-dotted), so no two curves of one plot look the same up to twenty (the pile's 13 normal forces had
    three pairs of identical red, green and blue lines); 2 px wide, or 1 px when thin (a plot of more curves than the
    legend names: THIN_OVER)."""
    styles = (Qt.DashLine, Qt.DashDotDotLine) if dashed else (Qt.SolidLine, Qt.DotLine)
    k = len(_PALETTE)
    return pg.mkPen(_PALETTE[i % k], width=1 if thin else 2, style=styles[(i // k) % 2])


@lru_cache(maxsize=None)
def _shared_pen(i: int, dashed: bool, thin: bool):
    """_pen(i, dashed, thin), one pen object for every series drawn alike (the bundle's: not a pen made per series at
    each redraw). Not to be changed."""
    return _pen(i, dashed, thin)


def _bundle_pen(i: int, dashed: bool = False):
    """The bundle's pen of the plot's i-th series (_pen's, thin: more curves than the legend names)."""
    return _shared_pen(i % (2 * len(_PALETTE)), dashed, True)  # (_pen's looks repeat every twenty series)


def _pens(n: int, dashed: bool = False) -> list:
    """n distinguishable pens (_pen)."""
    return [_pen(i, dashed) for i in range(n)]


def resolution(unit: str, largest: float) -> float:
    """The resolution of a plot's values in `unit` (RESOLUTION) in a run whose largest |value| in that unit is
    `largest`: a power of ten; 0 without a unit."""
    if not unit:
        return 0.0
    absolute, relative = RESOLUTION.get(unit, ROUND_OFF)
    r = max(absolute, relative * largest if math.isfinite(largest) else 0.0)
    return 10.0 ** math.ceil(math.log10(r) - 1e-9)


def flat_value(lo: float, hi: float, res: float) -> float | None:
    """The value data from lo to hi are drawn at when their whole span is at most res (None when they have extent):
    their middle, 0 when that is within res of 0."""
    if not (math.isfinite(lo) and math.isfinite(hi) and hi - lo <= res):
        return None
    mid = 0.5 * (lo + hi)
    return 0.0 if abs(mid) <= res else mid


def _noise_note(lo: float, hi: float, res: float, unit: str) -> str:
    """What a plot's title says when its data from lo to hi are drawn flat below the resolution res (nothing when
    they are drawn as they are: identically one value)."""
    v = flat_value(lo, hi, res) if res > 0 else None
    if v is None or (lo == hi == v):
        return ""
    e = round(math.log10(res))  # (a power of ten: resolution)
    return f"numerical noise below {'1e%d' % e if e else '1'} {unit}, drawn {'as 0' if v == 0 else 'flat'}"


def _extent(arrays) -> tuple[float, float]:
    """(lowest, highest) finite value of the arrays ((inf, -inf) when there is none)."""
    lo, hi = math.inf, -math.inf
    for a in arrays:
        a = np.asarray(a, float)
        a = a[np.isfinite(a)]
        if a.size:
            lo, hi = min(lo, float(a.min())), max(hi, float(a.max()))
    return lo, hi


def _peaks(y: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The highest and the lowest value of y in each bin of frames beginning at `starts` (the last bin: to the end),
    one after the other (pyqtgraph's 'peak' downsampling, the last, shorter bin kept)."""
    out = np.empty(2 * len(starts))
    out[0::2] = np.maximum.reduceat(y, starts)
    out[1::2] = np.minimum.reduceat(y, starts)
    return out


class _Bundle(pg.GraphicsObject):
    """Many curves of the time plot in one item (more than BUNDLE_OVER): each series drawn as its own line in its own
    pen, one after the other in series order (as many curve items draw: the same colours, line styles, and the same one
    on top where they cross), over the x values they share. One pyqtgraph curve item per series cost the GUI thread
    about 0.5 ms a curve at each redraw (its new data, its bounds for the automatic range, its paint's own work): 0.72 s
    for 900 curves. The bundle's extent for the automatic range is computed in numpy when its data change (dataBounds),
    and its lines are clipped to the view (while the x range is not automatic) and downsampled (the highest and the
    lowest value per bin of frames) as the curve items' are, when it is painted for another view.
    Not one curve item per pen (its series joined, broken by pyqtgraph's connect array): that drew each pen's series
    together, so where curves cross the last pen's colour covered the others (a dense band of 900 curves took the
    colour of the last pen drawn), and it painted slower (a sketch of both, 900 random curves of 1200 frames: 220-270 ms
    a redraw against 160 ms)."""

    def __init__(self) -> None:
        super().__init__()
        self.labels: tuple[str, ...] = ()
        self.x = np.zeros(0)
        self.ys: list[np.ndarray] = []  # the series' values over x (views of the recording's arrays)
        self.pens: list = []
        self.key = None  # what its data were set from (the panel's: the same frames are not set again)
        self._extent = (math.inf, -math.inf)  # the lowest and highest finite value of all its series
        self._bounds: dict = {}  # (axis, frac, orthoRange) -> dataBounds
        self._pad = 0.0  # pixels its pens draw beyond the data (pixelPadding)
        self._rect = None  # the bounding rectangle, while the view's scale stays
        self._lines = None  # (clip and downsampling, the lines drawn): made when painted
        self._index: dict[str, int] | None = None
        self.setVisible(False)

    def count(self) -> int:
        """The curves it draws."""
        return len(self.ys)

    def extent(self) -> tuple[float, float]:
        """(lowest, highest) finite value of its series ((inf, -inf) when there is none)."""
        return self._extent

    def curve(self, label: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The x and y of the series labelled so (all its frames), None when it draws none by that name."""
        if self._index is None:
            self._index = {lab: k for k, lab in enumerate(self.labels)}
        k = self._index.get(label)
        return None if k is None or not len(self.x) else (self.x, self.ys[k])

    def lines(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """The lines as last painted (clipped to the view, downsampled), x and y of each series: empty before a
        paint."""
        if self._lines is None:
            return []
        out = []
        for line in self._lines[1]:
            xy = pg.functions.ndarray_from_qpolygonf(line) if len(line) else np.zeros((0, 2))
            out.append((xy[:, 0].copy(), xy[:, 1].copy()))
        return out

    def set_curves(self, x, ys, pens, labels, key=None) -> None:
        """Draw these series (each y over x, in its pen, named by its label), instead of those it drew."""
        self.prepareGeometryChange()
        self.x, self.ys, self.pens, self.labels = np.asarray(x, float), list(ys), list(pens), tuple(labels)
        self.key, self._index = key, None
        lo, hi = math.inf, -math.inf
        for y in self.ys:  # (a series with a non-finite value: its finite ones)
            if not len(y):
                continue
            a, b = float(y.min()), float(y.max())
            if not (math.isfinite(a) and math.isfinite(b)):
                y = y[np.isfinite(y)]
                if not y.size:
                    continue
                a, b = float(y.min()), float(y.max())
            lo, hi = min(lo, a), max(hi, b)
        self._extent = (lo, hi)
        self._pad = max((p.widthF() * 0.7072 for p in self.pens if p.isCosmetic()), default=0.0)  # (pyqtgraph's)
        self._bounds.clear()
        self._rect = self._lines = None
        self.setVisible(bool(self.ys) and len(self.x) > 0)
        self.informViewBoundsChanged()
        self.update()

    def clear(self) -> None:
        """Draw nothing."""
        if self.ys or self.key is not None:
            self.set_curves(np.zeros(0), [], [], [])

    # ---- pyqtgraph's item protocol: its extent (the automatic range), its bounds, its paint ------------------------
    def dataBounds(self, ax, frac=1.0, orthoRange=None):  # noqa: N802 - pyqtgraph API
        """(lowest, highest) of its data along axis ax (0: x, 1: y), of the points within orthoRange along the other
        axis when given, of the central `frac` of each series' values when below 1 (as pyqtgraph's curve items)."""
        key = (ax, frac, None if orthoRange is None else tuple(orthoRange))
        if key in self._bounds:
            return self._bounds[key]
        out = (None, None)
        x = self.x
        if self.ys and len(x):
            if orthoRange is None and frac >= 1.0:
                if ax == 0:
                    fx = x[np.isfinite(x)]
                    out = (float(fx.min()), float(fx.max())) if fx.size else out
                elif self._extent[0] <= self._extent[1]:
                    out = self._extent
            else:
                los, his = [], []
                for y in self.ys:
                    d, other = (x, y) if ax == 0 else (y, x)
                    if orthoRange is not None:
                        d = d[(other >= orthoRange[0]) & (other <= orthoRange[1])]
                    d = d[np.isfinite(d)]
                    if d.size:
                        b = (d.min(), d.max()) if frac >= 1.0 else np.percentile(d, [50 * (1 - frac), 50 * (1 + frac)])
                        los.append(float(b[0]))
                        his.append(float(b[1]))
                out = (min(los), max(his)) if los else (None, None)
        self._bounds[key] = out
        return out

    def pixelPadding(self):  # noqa: N802 - pyqtgraph API
        return self._pad

    def boundingRect(self):  # noqa: N802 - Qt API
        if self._rect is None:
            (x0, x1), (y0, y1) = self.dataBounds(0), self.dataBounds(1)
            if x0 is None or y0 is None:
                return QRectF()
            px = py = 0.0
            if self._pad > 0:
                vx, vy = self.pixelVectors()
                px = 0.0 if vx is None else vx.length() * self._pad
                py = 0.0 if vy is None else vy.length() * self._pad
            self._rect = QRectF(x0 - px, y0 - py, x1 - x0 + 2 * px, y1 - y0 + 2 * py)
        return self._rect

    def viewTransformChanged(self):  # noqa: N802 - pyqtgraph API
        super().viewTransformChanged()
        self._rect = None  # (its pens' padding, in data units, follows the view's scale)
        self.prepareGeometryChange()

    def _window(self) -> tuple[int, int, int]:
        """(i0, i1, ds): the frames drawn, i0 to i1 (those in view and one bin beyond each side while the x range is
        not automatic, else all), and the frames per bin (1: not downsampled), as pyqtgraph's curve items choose
        them."""
        x, vb = self.x, self.getViewBox()
        m = len(x)
        if vb is None or m < 2:
            return 0, m, 1
        left, right = vb.viewRange()[0]
        dx, width = float(x[-1] - x[0]) / (m - 1), vb.width()
        ds = 1
        if dx > 0 and width > 0:
            per = (right - left) / dx / (width * DOWNSAMPLE_FACTOR)
            ds = max(1, int(per)) if math.isfinite(per) else 1
        if vb.autoRangeEnabled()[0]:
            return 0, m, ds
        i0 = min(max(int(np.searchsorted(x, left)) - ds, 0), m)
        return i0, min(max(int(np.searchsorted(x, right)) + ds, i0), m), ds

    def paint(self, p, *args):  # noqa: N802 - Qt API
        if not self.ys:
            return
        window = self._window()
        if self._lines is None or self._lines[0] != window:
            i0, i1, ds = window
            x = self.x[i0:i1]
            starts = None
            if ds > 1 and len(x):
                starts = np.arange(0, len(x), ds)
                x = np.repeat(x[(starts + np.minimum(starts + ds, len(x))) // 2], 2)  # (each bin's middle frame)
            lines = []
            for y in self.ys:
                y = y[i0:i1] if starts is None else _peaks(y[i0:i1], starts)
                line = pg.functions.create_qpolygonf(len(x))
                xy = pg.functions.ndarray_from_qpolygonf(line)
                xy[:, 0], xy[:, 1] = x, y
                lines.append(line)
            self._lines = (window, lines)
        opts = self._exportOpts
        p.setRenderHint(QPainter.RenderHint.Antialiasing,
                        opts.get("antialias", True) if opts else bool(pg.getConfigOption("antialias")))
        for pen, line in zip(self.pens, self._lines[1]):
            p.setPen(pen)
            p.drawPolyline(line)


class _View(pg.ViewBox):
    """The plots' view: an axis whose data have no extent (a friction force, a joint value or a point coordinate that
    is identically zero, or constant), or none above its resolution (numerical noise: RESOLUTION), is shown around
    their value at a scale of its own, ±10 % of it, ±1 about 0 (flat_value). pyqtgraph kept the span of whatever was
    shown before, centred on the value: the span of the residual before the zero halvings, so their unitless axis
    wrote '(x1e-18)' (a first plot's 0..1: '(x0.001)'), or a 300 N span before a zero friction force; and it drew
    noise at its own scale (the cam follower's gap in zeptometres)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.resolution = [0.0, 0.0]  # (x, y): the plot's resolution along each axis (set by the panel)

    def childrenBounds(self, frac=None, orthoRange=(None, None), items=None):  # noqa: N802 - pyqtgraph API
        bounds = super().childrenBounds(frac=frac, orthoRange=orthoRange, items=items)
        for ax, r in enumerate(bounds):
            v = flat_value(r[0], r[1], self.resolution[ax]) if r is not None else None
            if v is not None:
                half = 0.1 * abs(v) or 1.0
                bounds[ax] = [v - half, v + half]
        return bounds

    def autoRange(self, padding=None, items=None, item=None):  # noqa: N802 - pyqtgraph API
        """Fit the view to all its data (right-click > View All), as the "A" button does: the automatic range on
        again, fitted now. pyqtgraph's autoRange fits the items' bounding rectangles, which for curves clipped to the
        view (setClipToView) are the part in view: after a zoom it kept the zoomed time range, and the flat part of a
        gap in view spanned ±1 m."""
        if items is not None or item is not None or padding is not None:
            super().autoRange(padding=padding, items=items, item=item)
            return
        self.enableAutoRange()
        self.updateAutoRange()


class _Axis(pg.AxisItem):
    """The plots' axis: an SI prefix when its label has a unit that takes one (pyqtgraph's units=, given for SI_UNITS:
    'gap (mm)'), otherwise plain numbers. pyqtgraph scaled an axis without a unit by a multiplier in the label: the
    double pendulum's positions read '[rad or m] (x0.001)' with ticks ±500, the cam follower's torques '[N m]
    (x0.001)', numbers to be multiplied by the label's factor; a time axis of 0.6 s read 600 (x0.001)."""

    def updateAutoSIPrefix(self):  # noqa: N802 - pyqtgraph API
        if self.labelUnits:
            super().updateAutoSIPrefix()
        elif self.autoSIPrefixScale != 1.0 or self.labelUnitPrefix:
            self.autoSIPrefixScale, self.labelUnitPrefix = 1.0, ""
            self._updateLabel()
        else:  # (the ticks of the new range: as pyqtgraph's axis without SI prefixes does)
            self.picture = None
            self.update()


class _Title(pg.LabelItem):
    """A plot's title that never makes the plot wider than its widget: one longer than the view (a quantity with its
    noise note and the stale mark; the point traces' noise note in their narrow plot) is centred over the view as far
    as the plot's width allows and runs into the empty corners beside the view (beyond the plot's width: cut off, the
    whole of it in its tooltip). pyqtgraph's title made the view at least as wide as its text, pushing the plot's
    right part, the legend and the end of the curves, out of the widget."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.geometryChanged.connect(lambda: self.resizeEvent(None))  # (moved without a new size: placed again)

    def setText(self, text, **args):  # noqa: N802 - pyqtgraph API
        super().setText(text, **args)
        self.setToolTip(text)

    def resizeEvent(self, ev):  # noqa: N802 - Qt API
        super().resizeEvent(ev)
        plot = self.parentItem()
        if plot is None or not hasattr(self, "item"):
            return
        # (the text's extent in the plot's coordinates, moved back within the plot: left edge first)
        r = self.mapRectToItem(plot, self.item.mapRectToParent(self.item.boundingRect()))
        shift = min(0.0, plot.boundingRect().right() - r.right())
        shift = max(shift, plot.boundingRect().left() - r.left())
        if shift:
            self.item.moveBy(shift, 0.0)

    def updateMin(self):  # noqa: N802 - pyqtgraph API
        super().updateMin()
        h = self._sizeHint[Qt.SizeHint.MinimumSize][1]
        self._sizeHint[Qt.SizeHint.MinimumSize] = self._sizeHint[Qt.SizeHint.PreferredSize] = (0.0, h)
        self.setMinimumWidth(0)
        self.updateGeometry()


def _plot_widget(title: str, x: str, y: str) -> pg.PlotWidget:
    """A plot with its axes labelled (their units in the text, "t [s]": plain numbers; the time plot's y axis is
    labelled later, an SI unit with pyqtgraph's units=, which writes the prefix of the values' scale: "gap (mm)");
    its view ranges data without extent by their own value (_View)."""
    w = pg.PlotWidget(background="w", viewBox=_View(),
                      axisItems={side: _Axis(side) for side in ("left", "bottom")})
    p = w.getPlotItem()
    p.layout.removeItem(p.titleLabel)  # (the title: _Title)
    p.titleLabel.scene().removeItem(p.titleLabel)
    p.titleLabel = _Title("", size="11pt", parent=p)
    p.layout.addItem(p.titleLabel, 0, 1)
    p.setTitle(title, color=_FG, size="9pt")
    for side, text in (("bottom", x), ("left", y)):
        ax = p.getAxis(side)
        ax.setPen(_FG)
        ax.setTextPen(_FG)
        ax.setLabel(text)
    p.showGrid(x=True, y=True, alpha=0.25)
    return w


def _is_checked(value) -> bool:
    """A check state as a view hands it to setData (an int or a Qt.CheckState)."""
    return value == Qt.Checked or value == Qt.Checked.value


class _SeriesModel(QAbstractListModel):
    """The series list's rows: the plotted quantity's series, ticked when shown, read from the panel when a row is
    drawn. A list of item objects (QListWidget) was built with a row per series at each run's start and walked whole
    at every redraw of a streaming run to tick and tip its rows: 2080 rows of a 64-body pile, 0.1-0.2 s of the GUI
    thread each time; the view now asks only for the rows on screen, and a change is one dataChanged."""

    def __init__(self, panel: "PlotsPanel") -> None:
        super().__init__(panel)
        self.panel = panel
        self.labels: tuple[str, ...] = ()
        self.view: QListView | None = None  # the list that shows the rows (refresh repaints it)

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802 - Qt API
        return 0 if parent.isValid() else len(self.labels)

    def data(self, index, role=Qt.DisplayRole):
        i = index.row()
        if not (index.isValid() and 0 <= i < len(self.labels)):
            return None
        if role == Qt.DisplayRole:
            return self.labels[i]
        if role == Qt.CheckStateRole:
            return Qt.Checked if self.panel._row_shown(i) else Qt.Unchecked
        if role == Qt.ToolTipRole:
            return self.panel._row_tip(i)
        return None

    def flags(self, index):
        return Qt.ItemIsEnabled | Qt.ItemIsSelectable | Qt.ItemIsUserCheckable

    def setData(self, index, value, role=Qt.EditRole) -> bool:  # noqa: N802 - Qt API
        if role != Qt.CheckStateRole or not index.isValid() or not 0 <= index.row() < len(self.labels):
            return False
        self.panel._series_toggled(self.labels[index.row()], _is_checked(value))
        return True

    def set_labels(self, labels) -> None:
        """The rows of another quantity (or none)."""
        labels = tuple(labels)
        if labels != self.labels:
            self.beginResetModel()
            self.labels = labels
            self.endResetModel()

    def refresh(self, rows=None) -> None:
        """The ticks or tips may have changed (of these rows, default all): the list view draws again the rows it
        shows, which reads them (data). Not by dataChanged: the list view answers any dataChanged, of one row too,
        by laying out its rows again, two rowCount calls per row (Qt 6.11: 90,000 for the 45,000 pairs of a 300-body
        pile, 50-70 ms of the GUI thread per redraw of a streaming run); a repaint reads the rows on screen only.
        The rows' data is the panel's state, read when drawn: no other view shows this model."""
        view = self.view
        if not self.labels or view is None:
            return
        if rows is None or len(rows) > REFRESH_ROWS:
            view.viewport().update()
            return
        for i in rows:
            view.update(self.index(int(i)))


class _SeriesList(QListView):
    """The series list (its rows: _SeriesModel)."""

    def __init__(self, panel: "PlotsPanel") -> None:
        super().__init__()
        self.setUniformItemSizes(True)  # (no row is measured to lay the list out)
        self.model_ = _SeriesModel(panel)
        self.model_.view = self
        self.setModel(self.model_)

    def count(self) -> int:
        """Its number of rows (the quantity's series)."""
        return self.model_.rowCount()

    def labels(self) -> tuple[str, ...]:
        return self.model_.labels


class PlotsPanel(QWidget):
    """A selectable quantity of the run over time (its series checkable), and named-point traces, with the cursor."""

    def __init__(self, playback, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("plotsPanel")
        self.playback = playback
        self.recording = rec = playback.recording
        self.ghost = getattr(playback, "ghost", None)
        cursor_pen, marker_pen = pg.mkPen("#212121", width=1.5, style=Qt.DashLine), pg.mkPen("#212121", width=2)

        self.mode_combo = QComboBox()
        self.mode_combo.setObjectName("plotsMode")
        self.mode_combo.setToolTip("Which quantity to plot over time")
        self.mode_combo.setMinimumContentsLength(16)
        self.mode_combo.currentIndexChanged.connect(lambda _i: self._show_mode())
        self.series_list = _SeriesList(self)
        self.series_list.setObjectName("plotsSeries")
        self.series_list.setToolTip("Series of the quantity: tick to show")
        self.series_list.setMaximumWidth(220)

        self.q_widget = _plot_widget("", "t [s]", MODES["positions"][0])
        self.q_widget.setObjectName("plotsJoint")
        self.q_plot = self.q_widget.getPlotItem()
        self.q_plot.setClipToView(True)  # long recordings: draw only what is in view, downsampled
        self.q_plot.setDownsampling(auto=True, mode="peak")
        self.q_legend = _PlacedLegend(self.q_plot, self.q_widget, many="curves:<br>named in the series list")  # (beside the view)
        self.cursor_line = pg.InfiniteLine(angle=90, movable=True, pen=cursor_pen,
                                           hoverPen=pg.mkPen("#d84315", width=2.5))
        self.cursor_line.setToolTip("The time cursor: drag it (or click the plot) to seek")
        self.cursor_line.setVisible(False)
        self.cursor_line.sigDragged.connect(lambda line: self.playback.seek_time(float(line.value())))
        self.q_plot.addItem(self.cursor_line, ignoreBounds=True)
        self.q_plot.scene().sigMouseClicked.connect(self._plot_clicked)

        self.xy_widget = _plot_widget("Point traces (x-y plane)", "x [m]", "y [m]")
        self.xy_widget.setObjectName("plotsPoints")
        self.xy_plot = self.xy_widget.getPlotItem()
        self.xy_plot.setAspectLocked(True)  # a coupler curve keeps its shape (not a trace along one line: _lock_aspect)
        # (beside the view, as the time plot's; beyond LEGEND_MAX traces the hover names them: _hover_trace)
        self.xy_legend = _PlacedLegend(self.xy_plot, self.xy_widget, many="traces:<br>hover one for its name")
        self.xy_hover = pg.TextItem(color=_FG, anchor=(0, 1), fill=pg.mkBrush(255, 255, 255, 220))
        self.xy_hover.setZValue(20)
        self.xy_hover.setVisible(False)
        self.xy_plot.addItem(self.xy_hover, ignoreBounds=True)
        self.xy_plot.scene().sigMouseMoved.connect(self._hover_trace)
        self.point_marker = pg.ScatterPlotItem(size=9, pen=marker_pen, brush=pg.mkBrush("#ffffff"))
        self.point_marker.setZValue(10)
        self.point_marker.setVisible(False)
        # (not in the automatic range: it sits on the traces, and its symbol's pixel size, turned into metres at the
        # view's scale, kept a short trace's view a metre tall)
        self.xy_plot.addItem(self.point_marker, ignoreBounds=True)

        self.quantities: list[Quantity] = []
        # the time plot's curve items, made only for series shown (_update_curves): series index -> item, of the run
        # and of the comparison run; items of another quantity's series wait, hidden and empty, in _spare
        self._q_slots: dict[int, pg.PlotDataItem] = {}
        self._g_slots: dict[int, pg.PlotDataItem] = {}
        self._spare: list[pg.PlotDataItem] = []
        # beyond BUNDLE_OVER curves the series shown are drawn by these instead (the run's; the comparison's, dashed,
        # over them), and have no curve item
        self.q_bundle, self.g_bundle = _Bundle(), _Bundle()
        for bundle in (self.q_bundle, self.g_bundle):
            self.q_plot.getViewBox().addItem(bundle)
        self._curves_due = False  # curve work left to do: the panel was hidden, or the last slice ran out of time
        self._more = QTimer(self)  # the next slice of curve work (CURVE_SLICE_S)
        self._more.setSingleShot(True)
        self._more.setInterval(0)
        self._more.timeout.connect(self._update_curves)
        self._curve_labels: dict[int, str] = {}  # id(curve) -> its name in its plot's legend
        self._thin = False  # the time plot's curves are drawn 1 px wide (more of them than THIN_OVER)
        self.xy_curves: list[pg.PlotDataItem] = []
        self._series_names: list[str] = []
        self._ghost_suffix = ""
        self._point_names: list[str] = []
        self._plane = (0, 1)  # the axes of the point traces (_trace_plane)
        self._traces = None  # (points array, key, boxes) of trace_at: _trace_boxes
        self._hidden: set[tuple[str, str]] = set()  # (quantity, series) the user unticked
        self._shown: set[tuple[str, str]] = set()  # (quantity, series) the user ticked
        self._ever_active = np.zeros(0, bool)  # per contact pair: in contact range at some recorded frame
        self._listed: tuple = (None, None)  # (quantity, _ever_active) the series list's ticks were last drawn for
        # a contact run's many series (per pair) are redrawn a few times a second while frames stream, not per batch
        self._redraw = QTimer(self)
        self._redraw.setSingleShot(True)
        self._redraw.setInterval(STREAM_REDRAW_MS)
        self._redraw.timeout.connect(self._redraw_now)
        self._drawn_at = 0.0
        self._redraw_cost = 0.0  # s: the last streaming redraw, with the window update that drew it (_redraw_now)
        self._redraw_begun = 0.0
        self._cost_probe = QTimer(self)  # a zero timer fires once the redraw's posted events (its paint) are done
        self._cost_probe.setSingleShot(True)
        self._cost_probe.setInterval(0)
        self._cost_probe.timeout.connect(self._redraw_done)
        # id(curve item) -> what its data were last set from (generation, quantity, series, frames): a slice of curve
        # work left for later (_more) sets only the curves not yet up to date; it set every curve shown again
        self._curve_keys: dict[int, tuple] = {}
        self._generation = 0  # counts the runs' clears and starts (a curve's key names the frames it was set from)
        self._noise = ""  # the time plot's title says when its data are numerical noise drawn flat (RESOLUTION)
        self._scales: dict[tuple[str, str], tuple[int, float]] = {}  # (run or ghost, channel) -> (frames read, max|v|)
        self._kind = None
        self.empty_label = QLabel("No frames yet: the motion is being solved, or cannot be.")
        self.empty_label.setObjectName("plotsEmpty")
        self.empty_label.setStyleSheet(f"color: {_FG};")
        self.readout = QLabel()
        self.readout.setObjectName("plotsReadout")
        self.readout.setStyleSheet(f"color: {_FG};")
        self.readout.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.csv_button = QToolButton()
        self.csv_button.setText("CSV…")
        self.csv_button.setToolTip("Export the visible series to a CSV file")
        self.csv_button.clicked.connect(self._ask_csv)
        self.image_button = QToolButton()
        self.image_button.setText("Image…")
        self.image_button.setToolTip("Export the time plot as PNG or SVG")
        self.image_button.clicked.connect(self._ask_image)

        top = QHBoxLayout()
        top.setContentsMargins(4, 2, 4, 0)
        top.addWidget(QLabel("Plot:"))
        top.addWidget(self.mode_combo)
        top.addSpacing(12)
        top.addWidget(self.empty_label)
        self._readout_holder = LabelHolder(self.readout)
        top.addWidget(self._readout_holder, 1)
        top.addWidget(self.csv_button)
        top.addWidget(self.image_button)
        split = QSplitter(Qt.Horizontal)
        split.addWidget(self.series_list)
        split.addWidget(self.q_widget)
        split.addWidget(self.xy_widget)
        split.setSizes([160, 600, 400])  # proportions: the time plot wider
        split.setChildrenCollapsible(False)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addLayout(top)
        lay.addWidget(split, 1)

        self._label_lengths: dict[tuple, float] = {}  # the y axis's whole label by text, unit and prefix: its length
        for sig in (self.q_plot.getViewBox().sigResized, self.q_plot.getViewBox().sigYRangeChanged):
            sig.connect(lambda *_a: self._fit_axis_label())
        # (the readout's digits follow the axis's span)
        self.q_plot.getViewBox().sigYRangeChanged.connect(lambda *_a: self._write_readout())
        rec.cleared.connect(self._on_cleared)
        rec.began.connect(self._on_began)
        rec.grew.connect(self._on_grew)
        rec.cursorChanged.connect(self._on_cursor)
        rec.completed.connect(self._redraw_now)
        rec.staleChanged.connect(self._show_stale)
        if self.ghost is not None:
            self.ghost.grew.connect(lambda _n: self._redraw.isActive() or self._redraw.start(self._stream_wait()))
            self.ghost.cleared.connect(self._on_ghost_cleared)
            self.ghost.began.connect(lambda: self._show_mode(rebuild_only=True))
        doc = getattr(playback, "document", None)
        if doc is not None:
            # another document: its run's series come when it begins (a long contact run waits for Run; until then
            # the list showed the previous document's pairs and time axis, user test s56 S7)
            doc.replaced.connect(self._forget_run)
        self._on_cleared()
        if rec.kind:
            self._on_began()
        if rec.count:  # frames recorded before this panel existed
            self._on_grew(rec.count)

    # ---- reading (tests, readouts) -----------------------------------------------------------------------------
    @property
    def mode(self) -> str:
        """The quantity plotted ('positions', 'normal force', ...)."""
        return self.mode_combo.currentText()

    def modes(self) -> list[str]:
        """The quantities offered for the current run."""
        return [q.name for q in self.quantities]

    def set_mode(self, mode: str) -> None:
        """Plot this quantity (one of `modes()`)."""
        self.mode_combo.setCurrentIndex(self.modes().index(mode))

    def quantity(self) -> Quantity | None:
        """The quantity plotted."""
        i = self.mode_combo.currentIndex()
        return self.quantities[i] if 0 <= i < len(self.quantities) else None

    def joint_series(self) -> np.ndarray:
        """(count, n) values of the plotted quantity's series over the recorded frames."""
        q = self.quantity()
        if q is None:
            return np.zeros((self.recording.count, 0))
        cols = [f(self.recording) for _lab, f in q.series]
        return np.column_stack(cols) if cols else np.zeros((self.recording.count, 0))

    @property
    def q_curves(self) -> list[pg.PlotDataItem]:
        """The time plot's curve items of the run, in series order (only series shown have one; none while the plot
        draws more than BUNDLE_OVER curves: its bundle, q_bundle, draws them)."""
        self._flush_curves()
        return [self._q_slots[i] for i in sorted(self._q_slots)]

    @property
    def ghost_curves(self) -> list[pg.PlotDataItem]:
        """The time plot's curve items of the comparison run, in series order."""
        self._flush_curves()
        return [self._g_slots[i] for i in sorted(self._g_slots)]

    def curve_data(self, label: str, ghost: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
        """The x and y the time plot draws for a series of the plotted quantity (the comparison run's with ghost=True),
        by its curve item or its bundle, all its frames (before clipping and downsampling); None when it draws none."""
        self._flush_curves()
        q = self.quantity()
        i = q.index.get(label) if q is not None else None
        if i is None:
            return None
        c = (self._g_slots if ghost else self._q_slots).get(i)
        if c is not None and c.isVisible() and c.xData is not None and len(c.xData):
            return c.getOriginalDataset()
        bundle = self.g_bundle if ghost else self.q_bundle
        return bundle.curve(label + (self._ghost_suffix if ghost else ""))

    def _flush_curves(self) -> None:
        """Do the curve work left (hidden panel, a slice out of time) now, all of it (a reader wants the curves)."""
        if self._curves_due:
            self._more.stop()
            self._update_curves(budget=math.inf)

    def visible_series(self) -> list[str]:
        """Labels of the series shown."""
        q = self.quantity()
        if q is None:
            return []
        labels = q.labels
        return [labels[i] for i in np.flatnonzero(self._visible_mask(q))]

    def _visible(self, q: Quantity, i: int) -> bool:
        """Ticked by the user, or not unticked and (for a contact pair) in contact range at some frame."""
        key = (q.name, q.labels[i])
        if key in self._hidden:
            return False
        if key in self._shown or not q.pairs:
            return True
        p = q.pairs[i]
        return p < len(self._ever_active) and bool(self._ever_active[p])

    def _visible_mask(self, q: Quantity) -> np.ndarray:
        """_visible of every series of q, as an array (from the pairs' in-range flags and the user's ticks: no loop
        over the series)."""
        n = len(q.labels)
        if q.pairs:
            rows, ever = q.pair_rows, self._ever_active
            mask = np.zeros(n, bool)
            inside = rows < len(ever)
            mask[inside] = ever[rows[inside]]
        else:
            mask = np.ones(n, bool)
        for keys, on in ((self._shown, True), (self._hidden, False)):
            for name, lab in keys:
                i = q.index.get(lab) if name == q.name else None
                if i is not None:
                    mask[i] = on
        return mask

    def _row_shown(self, i: int) -> bool:
        """Whether series i of the quantity plotted is shown (its row's tick)."""
        q = self.quantity()
        return q is not None and i < len(q.labels) and self._visible(q, i)

    def _row_tip(self, i: int) -> str:
        """The tooltip of series i's row: why a pair's series is left out, else what to know in reading the
        quantity (Quantity.tip, '' for most)."""
        q = self.quantity()
        if q is None:
            return ""
        if not q.pairs or i >= len(q.pairs):
            return q.tip
        p = q.pairs[i]
        if p < len(self._ever_active) and self._ever_active[p]:
            return q.tip
        return "never in contact range so far: left out until it is (tick to show)"

    def set_series_visible(self, label: str, on: bool) -> None:
        """Show or hide one series of the current quantity."""
        q = self.quantity()
        if q is not None and label in q.index:
            self._series_toggled(label, on)

    def value_at_cursor(self, label: str, ghost: bool = False) -> float | None:
        """The plotted value of a series at the time cursor (the comparison run's with ghost=True)."""
        q = self.quantity()
        rec = self.ghost if ghost else self.recording
        if q is None or rec is None or not rec.count:
            return None
        t = self.recording.time_at()
        k = rec.index_at(t if t is not None else 0.0)
        i = q.index.get(label)
        if i is None:
            return None
        return float(q.series[i][1](rec)[k])

    def cursor_time(self) -> float | None:
        """Time the vertical cursor line marks (None while hidden)."""
        return float(self.cursor_line.value()) if self.cursor_line.isVisible() else None

    def marker_points(self) -> np.ndarray:
        """(n_points, 2) positions of the cursor markers on the point traces."""
        x, y = self.point_marker.getData()
        return np.column_stack((x, y)) if x is not None else np.zeros((0, 2))

    # ---- recording events --------------------------------------------------------------------------------------
    def _on_cleared(self) -> None:
        """A new run is coming (or none): empty every curve and hide the legends (items are kept for the same names)."""
        self._redraw.stop()
        self._generation += 1
        self._curve_keys.clear()
        self._redraw_cost = 0.0
        self._more.stop()
        self._curves_due = False
        self._traces = None  # (the last run's traces: let go)
        for c in list(self._q_slots.values()) + list(self._g_slots.values()) + self.xy_curves:
            c.setData([], [])
        self.q_bundle.clear()
        self.g_bundle.clear()
        self.q_legend.conceal()  # (their columns close)
        self.xy_legend.conceal()
        self.xy_hover.setVisible(False)
        self.cursor_line.setVisible(False)
        self.point_marker.setData([], [])
        self.point_marker.setVisible(False)
        self.empty_label.setVisible(True)
        self.readout.setText("")
        self._noise = ""
        self._scales = {k: v for k, v in self._scales.items() if k[0] != "run"}
        self._show_stale(False)
        if not getattr(self.playback, "kind", True):
            self._forget_run()

    def _on_ghost_cleared(self) -> None:
        """The comparison run is gone (or a new one is coming): its curves go."""
        self._generation += 1
        self._scales = {k: v for k, v in self._scales.items() if k[0] != "ghost"}
        self._update_curves()

    def _forget_run(self) -> None:
        """The document has nothing to run: no quantity, series, axis text or point trace of the previous one."""
        self.quantities = []
        self.mode_combo.blockSignals(True)
        self.mode_combo.clear()
        self.mode_combo.blockSignals(False)
        self._kind = None
        self._show_mode(rebuild_only=True)  # no quantity: no curves, an empty series list, no title or axis text
        self._point_names = []
        self.xy_curves = self._rebuild(self.xy_plot, self.xy_legend, self.xy_curves, [])
        self.xy_widget.setVisible(False)

    def _on_began(self) -> None:
        """The run's channels are known: offer its quantities (the same ones keep the user's choice)."""
        rec = self.recording
        qs = quantities(rec.kind, rec.channels)
        names = [q.name for q in qs]
        if names != self.modes() or rec.kind != self._kind:
            keep = self.mode if self.mode in names and rec.kind == self._kind else None
            self.quantities = qs
            self.mode_combo.blockSignals(True)
            self.mode_combo.clear()
            self.mode_combo.addItems(names)
            for k, q in enumerate(qs):
                if q.tip:
                    self.mode_combo.setItemData(k, q.tip, Qt.ToolTipRole)
            if keep:
                self.mode_combo.setCurrentText(keep)
            self.mode_combo.blockSignals(False)
        else:
            self.quantities = qs
        if rec.kind != self._kind:
            self._hidden.clear()
            self._shown.clear()
        self._kind = rec.kind
        self._ever_active = np.zeros(0, bool)
        self._show_mode(rebuild_only=True)
        if rec.point_names != self._point_names:
            self._point_names = list(rec.point_names)
            self.xy_curves = self._rebuild(self.xy_plot, self.xy_legend, self.xy_curves, self._point_names)
        self.xy_widget.setVisible(bool(self._point_names) or rec.kind == "kinematics")

    def _rebuild(self, plot, legend, old, names, dashed: bool = False, suffix: str = "") -> list:
        """New curves of `plot` for these names (its legend lists them again at the next show_curves)."""
        for c in old:
            plot.removeItem(c)
            self._curve_labels.pop(id(c), None)
        named = len(names) <= LEGEND_MAX
        out = []
        for name, pen in zip(names, _pens(len(names), dashed)):
            c = pg.PlotDataItem(pen=pen, name=(name + suffix) if named else None, skipFiniteCheck=True)
            plot.addItem(c)
            self._curve_labels[id(c)] = name + suffix
            out.append(c)
        legend.key = None
        return out

    def _sync_legend(self) -> None:
        """The time plot's legend names the curves drawn: not a series unticked or left out, not the comparison's
        while there is none."""
        curves = [self._q_slots[i] for i in sorted(self._q_slots)] + [self._g_slots[i] for i in sorted(self._g_slots)]
        self.q_legend.show_curves(curves, self._curve_labels, self.q_bundle.count() + self.g_bundle.count())

    def legend_names(self) -> list[str]:
        """The names the time plot's legend shows (none while it is hidden)."""
        self._flush_curves()
        return self.q_legend.names()

    def legend_note(self) -> str:
        """What the time plot says in place of its legend when it draws more curves than the legend names ('' when
        there is none)."""
        self._flush_curves()
        return self.q_legend.note_text()

    def _release(self, slots: dict) -> None:
        """The curves of these series leave them, hidden and empty, for other series (_take)."""
        for c in slots.values():
            c.setData([], [])
            c.setVisible(False)
            self._curve_labels.pop(id(c), None)
            self._curve_keys.pop(id(c), None)
            self._spare.append(c)
        slots.clear()
        self.q_legend.key = None

    def _take(self, i: int, label: str, named: bool, dashed: bool) -> pg.PlotDataItem:
        """A curve item for series i of the time plot: a spare one, or a new one (added to the view directly: the
        PlotItem's addItem also walks all its curves, for its context menu's averaging, at each addition)."""
        if self._spare:
            c = self._spare.pop()
            c.setPen(_pen(i, dashed, self._thin))
        else:
            c = pg.PlotDataItem(pen=_pen(i, dashed, self._thin), skipFiniteCheck=True)
            c.setDownsampling(auto=True, method="peak")  # (the plot's: long recordings drawn downsampled, clipped)
            c.setClipToView(True)
            self.q_plot.getViewBox().addItem(c)
        c.opts["name"] = label if named else None
        self._curve_labels[id(c)] = label
        self.q_legend.key = None
        return c

    def _on_grew(self, count: int) -> None:
        rec = self.recording
        if rec.kind == "contact" and not rec.complete and count > 1:
            if not self._redraw.isActive():
                wait = self._stream_wait()
                if wait > 0:
                    self._redraw.start(wait)
                    return
                # now, with the batch's other readouts: one window update draws them all (from a timer, the plot's
                # own update came after theirs, and the whole window was composited twice)
                self._redraw_now()
            return
        self._redraw_now()

    def _stream_wait(self) -> int:
        """ms until the next redraw of a streaming run: STREAM_REDRAW_MS after the last one, or STREAM_REDRAW_SPACING
        times the time the last one took, whichever is longer."""
        spacing = max(STREAM_REDRAW_MS / 1000, STREAM_REDRAW_SPACING * self._redraw_cost)
        wait = spacing - (time.perf_counter() - self._drawn_at)
        return int(1000 * min(max(wait, 0.0), spacing))

    def _redraw_done(self) -> None:
        """The redraw's events are done (its window update too): how long it took, for the next one's spacing."""
        self._redraw_cost = time.perf_counter() - self._redraw_begun

    def _redraw_now(self) -> None:
        self._redraw.stop()
        self._drawn_at = self._redraw_begun = time.perf_counter()
        if not self._off_screen():
            self._cost_probe.start()
        self.empty_label.setVisible(False)
        self._update_curves()
        self._update_point_curves()
        self._on_cursor(self.recording.cursor)

    # ---- drawing -----------------------------------------------------------------------------------------------
    def _show_mode(self, rebuild_only: bool = False) -> None:
        q = self.quantity()
        names = list(q.labels) if q else []
        suffix = f" ({self._ghost_method()})"
        if names != self._series_names:
            self._release(self._q_slots)
            self.q_bundle.clear()
        if names != self._series_names or suffix != self._ghost_suffix or not (q and q.comparable):
            self._release(self._g_slots)
            self.g_bundle.clear()
        self._series_names, self._ghost_suffix = names, suffix
        self.series_list.model_.set_labels(names)
        self._show_checks(q)
        self._fit_axis_label()
        self._noise = ""
        self._show_stale(self.recording.stale)
        if rebuild_only:
            self._sync_legend()
            return
        self._update_curves()
        self.q_plot.enableAutoRange()
        self._on_cursor(self.recording.cursor)

    def _fit_axis_label(self) -> None:
        """Label the time plot's y axis with the quantity's axis text and unit, or, when that is longer than the axis
        is tall (a low dock, a long channel title), with its unit alone (the title names the quantity; the tooltip
        says it all); centred on the axis (pyqtgraph re-centres a changed label only when the axis is resized)."""
        q = self.quantity()
        text, unit = axis_label(q.axis) if q else ("", "")
        ax = self.q_plot.getAxis("left")
        key = (text, unit, ax.labelUnitPrefix, ax.autoSIPrefixScale)  # (the prefix or multiplier is written too)
        if key not in self._label_lengths:
            ax.setLabel(text, units=unit)
            key = (text, unit, ax.labelUnitPrefix, ax.autoSIPrefixScale)
            self._label_lengths[key] = ax.label.boundingRect().width()
        height = ax.size().height()  # (a hidden plot's is not the one it will be shown at: judged when it is resized)
        if self.q_widget.isVisible() and height > 0 and self._label_lengths[key] > height:
            text = "[" + text.rsplit("[", 1)[1] if text.endswith("]") and "[" in text else ""  # ("[N m]")
        if (ax.labelText, ax.labelUnits) != (text, unit):
            ax.setLabel(text, units=unit)
        ax.setToolTip(f"{key[0]} ({unit})" if unit else key[0])
        ax.resizeEvent()

    def _show_checks(self, q: Quantity | None) -> None:
        """Tick the series shown (a pair never in contact range is left out until it is, unless ticked): the list
        draws its rows on screen again, reading them from _visible (_SeriesModel)."""
        if q is not None:
            self.series_list.model_.refresh()
        self._listed = (q.name if q is not None else None, self._ever_active.copy())

    def _show_new_checks(self, q: Quantity) -> None:
        """Tick the rows of the pairs that came into or left contact range since the list was last drawn (a streaming
        run's redraw): only their rows change, and nothing while the panel is off screen (the list reads its rows
        when it is drawn). The whole list was refreshed at every redraw, and the list view then walked every row
        (2080 rows of a 64-body pile: 10-80 ms of the GUI thread per redraw, with the panel's tab behind another's
        too, and a repaint of the window after it)."""
        name, ever = self._listed
        now = self._ever_active
        if name != q.name or ever is None or ever.shape != now.shape:
            if not self._off_screen():
                self._show_checks(q)
            return
        if self._off_screen():
            return
        if q.pairs:
            changed = np.flatnonzero(ever != now)
            if changed.size:
                self.series_list.model_.refresh(np.flatnonzero(np.isin(q.pair_rows, changed)))
        self._listed = (q.name, now.copy())

    def _ghost_method(self) -> str:
        g = self.ghost
        return g.info.get("method", "comparison") if g is not None and g.info else "comparison"

    def _series_toggled(self, label: str, on: bool) -> None:
        """The user ticked (on) or unticked a series of the quantity plotted."""
        q = self.quantity()
        if q is None:
            return
        key = (q.name, label)
        if on:
            self._hidden.discard(key)
            self._shown.add(key)
        else:
            self._hidden.add(key)
            self._shown.discard(key)
        self._show_checks(q)
        self._update_curves()
        self.q_plot.enableAutoRange()
        # (the readout names the first four series shown: rewritten now, not when the cursor or the y range next
        # changes; unticking C left "C 0.573" in it)
        self._write_readout()

    def _scan_active(self) -> None:
        """Which contact pairs were in contact range at some recorded frame (of the run or the comparison run:
        FrameRecording.ever_in_range, which reads the frames that arrived since it last looked, not all of them)."""
        seen = []
        for rec in (self.recording, self.ghost):
            if rec is not None and "pair.active" in rec.channels:
                seen.append(rec.ever_in_range("pair.active"))
        self._ever_active = seen[0] if seen else np.zeros(0, bool)
        if len(seen) == 2 and seen[1].shape == seen[0].shape:
            self._ever_active = seen[0] | seen[1]

    def _update_curves(self, budget: float = CURVE_SLICE_S) -> None:
        """Draw the series shown: up to BUNDLE_OVER curves a curve item for each that has none yet (for at most
        `budget` seconds, the rest in the next slice), new data for the others; beyond it, all of them in the bundles.
        None of it while the panel is hidden (done when it is shown)."""
        q = self.quantity()
        rec = self.recording
        if q is None:
            return
        self._scan_active()
        self._show_new_checks(q)
        if budget < math.inf and self._off_screen():
            self._curves_due = True
            return
        self._more.stop()
        self._curves_due = False
        t = rec.times[: rec.count]
        g = self.ghost if (self.ghost is not None and self.ghost.count and q.comparable) else None
        g_has = g is not None and g.channels.get(q.channel) is not None
        channel = rec.channels.get(q.channel)
        unit = channel.unit if channel is not None else ""
        res = resolution(unit, self._largest(unit))
        self.q_plot.getViewBox().resolution[1] = res
        mask = self._visible_mask(q)
        shown = np.flatnonzero(mask)
        curves = len(shown) * (2 if g_has else 1)
        thin = curves > THIN_OVER
        if thin != self._thin:  # (the curves made so far take the other width)
            self._thin = thin
            for slots, dashed in ((self._q_slots, False), (self._g_slots, True)):
                for i, c in slots.items():
                    c.setPen(_pen(i, dashed, thin))
        if curves > BUNDLE_OVER:
            # (the bundles draw them; curve items made while fewer were shown wait, hidden and empty, as spares)
            for slots in (self._q_slots, self._g_slots):
                if slots:
                    self._release(slots)
            drawn = self._bundle_curves(q, shown, t, g if g_has else None)
        else:
            self.q_bundle.clear()
            self.g_bundle.clear()
            drawn = self._item_curves(q, mask, t, g if g_has else None, budget)
        noise = _noise_note(*_extent(drawn), res, unit)
        if noise != self._noise:
            self._noise = noise
            self._show_stale(rec.stale)
        self._sync_legend()
        self._settle_view(self.q_plot)
        if self._curves_due and not self._off_screen():
            self._continue_curves()

    def _bundle_curves(self, q: Quantity, shown: np.ndarray, t: np.ndarray, g) -> list:
        """Draw the series shown in the bundles (the run's, and the comparison run's when g is given), their data set
        only when they or the frames changed; the values drawn, as their extents."""
        rec = self.recording
        drawn = []
        for bundle, r, dashed, suffix in ((self.q_bundle, rec, False, ""),
                                          (self.g_bundle, g, True, self._ghost_suffix)):
            if r is None:
                bundle.clear()
                continue
            key = (self._generation, q.name, r.count, shown.tobytes())
            if bundle.key != key:
                x = t if r is rec else r.times[: r.count]
                ys, pens, labels = [], [], []
                for i in shown.tolist():
                    lab, f = q.series[i]
                    y = f(r) if r.count else np.zeros(0)
                    if len(y) == len(x):
                        ys.append(y)
                        pens.append(_bundle_pen(i, dashed))
                        labels.append(lab + suffix)
                bundle.set_curves(x, ys, pens, labels, key)
            drawn.append(np.array(bundle.extent()))
        return drawn

    def _item_curves(self, q: Quantity, mask: np.ndarray, t: np.ndarray, g, budget: float) -> list:
        """Draw the series shown by their curve items (the comparison run's too when g is given): a curve item for
        each that has none yet (for at most `budget` seconds, the rest in the next slice: _curves_due), new data for
        the others; the values drawn."""
        rec = self.recording
        tg = g.times[: g.count] if g is not None else None
        named = len(q.series) <= LEGEND_MAX
        suffix = self._ghost_suffix
        making = 0.0  # s spent making curve items in this slice (new data for the others is not sliced: each slice is
        # drawn by a repaint of the plot and the window, which costs more than the data of every curve)
        drawn = []  # the values drawn (their extent against the plot's resolution)
        # (the series shown and those with a curve to hide: not a loop over every series of the quantity, 6240 for
        # the friction components of a 64-body pile, at every redraw)
        todo = set(np.flatnonzero(mask).tolist())
        todo.update(self._q_slots)
        todo.update(self._g_slots)
        for i in sorted(todo):
            lab, f = q.series[i]
            show = bool(mask[i])
            c = self._q_slots.get(i)
            if show and c is None:
                if making > budget:
                    self._curves_due = True
                    continue
                t0 = time.perf_counter()
                c = self._q_slots[i] = self._take(i, lab, named, dashed=False)
                making += time.perf_counter() - t0
            if c is not None:
                if show:
                    y = f(rec) if rec.count else np.zeros(0)
                    key = (self._generation, q.name, i, rec.count)
                    if self._curve_keys.get(id(c)) != key:
                        c.setData(t, y) if len(y) == len(t) else c.setData([], [])
                        self._curve_keys[id(c)] = key
                    drawn.append(y if len(y) == len(t) else y[:0])
                elif c.isVisible():
                    c.setData([], [])
                    self._curve_keys.pop(id(c), None)
                c.setVisible(show)
            c = self._g_slots.get(i)
            if g is not None and show:
                if c is None:
                    if making > budget:
                        self._curves_due = True
                        continue
                    t0 = time.perf_counter()
                    c = self._g_slots[i] = self._take(i, lab + suffix, named, dashed=True)
                    making += time.perf_counter() - t0
                y = f(g)
                key = (self._generation, q.name, i, g.count)
                if self._curve_keys.get(id(c)) != key:
                    c.setData(tg, y)
                    self._curve_keys[id(c)] = key
                c.setVisible(True)
                drawn.append(y)
            elif c is not None and c.isVisible():
                c.setData([], [])
                self._curve_keys.pop(id(c), None)
                c.setVisible(False)
        return drawn

    def _settle_view(self, plot: pg.PlotItem) -> None:
        """Fit the plot's automatic range to its new data now, before the window paints it: pyqtgraph fits it when
        the plot is painted, and the range it changes there gives every curve its data again (clipped and downsampled
        for the new range) and asks for a second paint of the plot (two paints per redraw of a streaming run, each
        drawing every curve)."""
        if not self._off_screen():
            plot.getViewBox().prepareForPaint()

    def _continue_curves(self) -> None:
        """The next slice of curve work: at once, or, while a contact run's frames stream, with its next redraw (each
        slice is drawn by a repaint of the plot and of the window: the slices one after the other, at the start of a
        64-body pile, with tens of pairs coming into contact range at each batch, left the event loop no turn for
        seconds)."""
        rec = self.recording
        if rec.kind == "contact" and not rec.complete and rec.count > 1:
            if not self._redraw.isActive():
                self._redraw.start(self._stream_wait())
        elif not self._more.isActive():
            self._more.start()

    def _off_screen(self) -> bool:
        """Not on screen: hidden, or its tab behind another dock's (still 'visible' to Qt, with nothing exposed)."""
        return not self.isVisible() or self.visibleRegion().isEmpty()

    def showEvent(self, ev):  # noqa: N802 - Qt API
        super().showEvent(ev)
        if self._curves_due:  # (curve work left while it was hidden)
            self._continue_curves()

    def paintEvent(self, ev):  # noqa: N802 - Qt API
        super().paintEvent(ev)
        if self._curves_due:  # (its tab brought to the front)
            self._continue_curves()

    def _largest(self, unit: str) -> float:
        """The largest |value| of the run (and the comparison run) in any channel of this unit (the scale of its
        resolution: RESOLUTION); each frame is read once (a streaming run's new frames at each redraw)."""
        out = 0.0
        for which, rec in (("run", self.recording), ("ghost", self.ghost)):
            for name, c in (rec.channels.items() if rec is not None and unit else ()):
                if c.unit != unit:
                    continue
                done, big = self._scales.get((which, name), (0, 0.0))
                if done > rec.count:  # (another run's)
                    done, big = 0, 0.0
                new = np.abs(rec.series(name)[done:])
                if new.size:
                    top = float(new.max())
                    if not math.isfinite(top):
                        new = new[np.isfinite(new)]
                        top = float(new.max()) if new.size else 0.0
                    big = max(big, top)
                self._scales[(which, name)] = (rec.count, big)
                out = max(out, big)
        return out

    def _trace_plane(self, P: np.ndarray) -> tuple[int, int]:
        """The two axes the point traces are drawn in: x-y, unless the points move less along z than along y or x
        (a mechanism drawn in the x-z or y-z plane of a spatial document), then the two of largest spread."""
        if P.size == 0:
            return 0, 1
        spread = np.ptp(P.reshape(-1, P.shape[-1]), axis=0)
        if spread[2] <= min(spread[0], spread[1]):
            return 0, 1
        return tuple(sorted(np.argsort(spread)[1:]))  # (the two largest)

    def _update_point_curves(self) -> None:
        rec = self.recording
        P = rec.points[: rec.count]
        plane = self._trace_plane(P)
        if plane != self._plane:
            self._plane = plane
            names = "xyz"
            a, b = names[plane[0]], names[plane[1]]
            self.xy_plot.setLabel("bottom", f"{a} [m]")
            self.xy_plot.setLabel("left", f"{b} [m]")
        i0, i1 = self._plane
        res = resolution("m", self._largest("m"))
        self.xy_plot.getViewBox().resolution = [res, res]
        # each curve is its point's, by name: a recording may hold none of them (cleared for a run that has not begun,
        # which a Stop at once ended: the previous run's curves indexed an empty array)
        held = {name: k for k, name in enumerate(rec.point_names)}
        for name, c in zip(self._point_names, self.xy_curves):
            k = held.get(name)
            if k is None:
                c.setData([], [])
            else:
                c.setData(P[:, k, i0], P[:, k, i1])
        notes = [f"{'xyz'[k]}: {n}" for k in self._plane if (n := _noise_note(*_extent([P[..., k]]), res, "m"))]
        title = f"Point traces ({'xyz'[i0]}-{'xyz'[i1]} plane)" + "".join(f" — {n}" for n in notes)
        if title != self.xy_plot.titleLabel.text:  # (a new title lays the plot out again: not at every redraw)
            self.xy_plot.setTitle(title)
        self.xy_legend.show_curves(self.xy_curves, self._curve_labels)
        self._lock_aspect(P[..., [i0, i1]])
        self._settle_view(self.xy_plot)

    def trace_at(self, scene_pos) -> str:
        """The name of the point trace within HOVER_PX pixels of a scene position of the trace plot ('' if none): of
        two within reach, the nearer one."""
        rec = self.recording
        vb = self.xy_plot.getViewBox()
        if not self._point_names or rec.count == 0 or not vb.sceneBoundingRect().contains(scene_pos):
            return ""
        at = vb.mapSceneToView(scene_pos)
        sx, sy = vb.viewPixelSize()  # (view units per pixel)
        if not (sx > 0 and sy > 0):
            return ""
        shown = [i for i, c in enumerate(self.xy_curves) if c.isVisible()]
        if not shown:
            return ""
        x, y, lo, hi = self._trace_boxes(rec, shown)
        # (the traces whose bounding box is within reach: only their frames are read)
        gap = np.maximum(np.maximum(lo - (at.x(), at.y()), (at.x(), at.y()) - hi), 0.0) / (sx, sy)
        reach = np.flatnonzero(np.einsum("ij,ij->i", gap, gap) <= HOVER_PX ** 2)
        if not reach.size:
            return ""
        d2 = ((x[:, reach] - at.x()) / sx) ** 2 + ((y[:, reach] - at.y()) / sy) ** 2
        near = np.nanmin(d2, axis=0)
        k = int(np.argmin(near))
        return self._point_names[shown[reach[k]]] if near[k] <= HOVER_PX ** 2 else ""

    def _trace_boxes(self, rec, shown: list) -> tuple:
        """The shown traces' coordinates in the trace plot's plane, x and y (frames, traces), and their bounding boxes
        lo and hi (traces, 2): kept while the recording, its frames, the plane and the traces shown stay the same (the
        mouse moves many times between two batches of frames)."""
        points = rec.points
        key = (rec.count, self._plane, tuple(shown))
        kept = self._traces
        if kept is not None and kept[0] is points and kept[1] == key:
            return kept[2]
        i0, i1 = self._plane
        P = points[: rec.count]
        x, y = P[:, shown, i0], P[:, shown, i1]
        # (fmin and fmax pass over NaN: a trace of NaN only has a NaN box, never within reach)
        lo = np.stack((np.fmin.reduce(x, axis=0), np.fmin.reduce(y, axis=0)), axis=1)
        hi = np.stack((np.fmax.reduce(x, axis=0), np.fmax.reduce(y, axis=0)), axis=1)
        self._traces = (points, key, (x, y, lo, hi))
        return x, y, lo, hi

    def _hover_trace(self, scene_pos) -> None:
        """Name the point trace under the mouse, beside it (the legend names at most LEGEND_MAX of them)."""
        name = self.trace_at(scene_pos) if self.xy_widget.isVisible() else ""
        if name:
            at = self.xy_plot.getViewBox().mapSceneToView(scene_pos)
            if self.xy_hover.textItem.toPlainText() != name:
                self.xy_hover.setText(name)
            self.xy_hover.setPos(at)
        self.xy_hover.setVisible(bool(name))

    def _lock_aspect(self, P2: np.ndarray) -> None:
        """Equal scales on the trace plot's axes (a coupler curve keeps its shape), except while every trace lies
        along one line (a follower's point moving along z alone): with equal scales its view was as wide as the plot
        in metres and the segment, 3 cm long, a dot; unlocked, each axis fits its data."""
        spans = np.ptp(P2.reshape(-1, 2), axis=0) if P2.size else np.zeros(2)
        lock = not (spans.max() > 0.0 and spans.min() < 0.01 * spans.max())
        if lock != bool(self.xy_plot.getViewBox().state["aspectLocked"]):
            self.xy_plot.setAspectLocked(lock)

    def _on_cursor(self, k: int) -> None:
        rec = self.recording
        t = rec.time_at(k)
        if t is None:
            return
        self.cursor_line.blockSignals(True)
        self.cursor_line.setValue(t)
        self.cursor_line.blockSignals(False)
        self.cursor_line.setVisible(True)
        if self._point_names:
            p = rec.points[k]
            self.point_marker.setData(p[:, self._plane[0]], p[:, self._plane[1]])
            self.point_marker.setVisible(True)
        self._write_readout()

    def _write_readout(self) -> None:
        """The values of the first four series shown at the cursor, each to a ten-thousandth of the y axis's span
        (float noise far below it reads 0): in an SI unit each with its unit and a prefix that writes it from 0.1 to
        1000, the axis's when it does (a resting 10.5 N on an axis in kN, whose prefix the impact peaks set, read
        '0.0105 kN': readout_quantity); in any other unit as plain numbers, the unit once at the end."""
        q, t = self.quantity(), self.recording.time_at()
        if q is None or t is None or not self.recording.count:
            return
        text, si = axis_label(q.axis)
        ax = self.q_plot.getAxis("left")
        prefix = ax.labelUnitPrefix if si and ax.autoSIPrefix and ax.autoSIPrefixScale != 1.0 else ""
        unit = "" if si else (text.rsplit("[", 1)[1].rstrip("]") if text.endswith("]") and "[" in text else "")
        y0, y1 = self.q_plot.getViewBox().viewRange()[1]
        span = abs(y1 - y0)
        parts = []
        for lab in self.visible_series()[:4]:
            v = self.value_at_cursor(lab)
            if v is None:
                parts.append(f"{lab} –")
            else:
                parts.append(f"{lab} {readout_quantity(v, span, si, prefix) if si else readout_number(v, span)}")
        head = f"t = {time_text(t, self.recording.step, significant=4)} s: "
        self.readout.setText(head + ", ".join(parts) + (f" {unit}" if unit and parts else ""))
        self._readout_holder.fit()

    def _show_stale(self, stale: bool) -> None:
        """Title the time plot: the quantity, whether its data are noise drawn flat, whether the run is stale."""
        q = self.quantity()
        title = q.title if q else ""
        if self._noise:
            title += f" — {self._noise}"
        if stale:
            title += "  (stale: the document changed since this run)"
        self.q_plot.setTitle(title, color="#8d6e00" if stale else _FG, size="9pt")

    def _plot_clicked(self, ev) -> None:
        """A click in the time plot seeks to the time under the mouse."""
        if ev.button() != Qt.LeftButton or not self.recording.count:
            return
        vb = self.q_plot.getViewBox()
        pos = ev.scenePos()
        if not vb.sceneBoundingRect().contains(pos):
            return
        self.playback.seek_time(float(vb.mapSceneToView(pos).x()))

    # ---- export ------------------------------------------------------------------------------------------------
    def export_csv(self, path: str) -> None:
        """Write t and the visible series (and the comparison run's, suffixed by its method) to a CSV file."""
        q = self.quantity()
        rec = self.recording
        cols, head = [rec.times[: rec.count]], ["t [s]"]
        unit = q.axis.rsplit("[", 1)[1].rstrip("]") if q and "[" in q.axis else ""
        shown = np.flatnonzero(self._visible_mask(q)) if q else ()
        for i in shown:
            lab, f = q.series[i]
            head.append(f"{q.name}: {lab}" + (f" [{unit}]" if unit else ""))
            cols.append(f(rec))
        g = self.ghost
        ghost_cols = []
        if q is not None and q.comparable and g is not None and g.count:
            k = np.array([g.index_at(t) for t in rec.times[: rec.count]], int)
            exact = np.isclose(g.times[k], rec.times[: rec.count])  # the other run has a frame at this time
            for i in shown:
                lab, f = q.series[i]
                head.append(f"{q.name}: {lab} ({self._ghost_method()})" + (f" [{unit}]" if unit else ""))
                ghost_cols.append(np.where(exact, f(g)[k], np.nan))
        def write(fh):
            w = csv.writer(fh)
            w.writerow(head)
            # (an empty cell where the other run has no frame at the time: CSV's missing value, not 'nan')
            for row in np.column_stack(cols + ghost_cols) if rec.count else []:
                w.writerow([io.number_text(x) if np.isfinite(x) else "" for x in row])

        io.write_atomic(path, write, "CSV")

    def export_image(self, path: str) -> None:
        """Save the time plot as PNG (raster) or SVG (vector) by the file's extension: drawn in memory, then written
        atomically (core.io.write_atomic: the old file stays whole when the new one cannot be written). A
        LinkwrightError says why it cannot be ("no such folder", "it is a folder", a name of another kind)."""
        p = Path(path)
        kind = p.suffix.lower()
        if kind not in (".png", ".svg"):
            raise LinkwrightError("", f"'{path}': the plot is saved as PNG or SVG: give the file a .png or .svg name")
        if problem := io.folder_problem(p):
            raise LinkwrightError("", f"cannot write '{path}': {problem}")
        if kind == ".png":
            from ..export import save_png  # (the app's one PNG writer: encoded in memory, written atomically)

            exporter = pg.exporters.ImageExporter(self.q_plot)
            exporter.parameters()["width"] = max(int(self.q_widget.width()), 800)
            img = exporter.export(toBytes=True)
            save_png(img if img is not None else QImage(), path, "")
            return
        data = self._svg_bytes()
        io.write_atomic(path, lambda fh: fh.write(data), "", binary=True, suffix=kind)

    def _svg_bytes(self) -> bytes:
        """The time plot as an SVG document. pyqtgraph 0.14's SVGExporter cannot parse the paths Qt 6 writes
        (pyqtgraph issue #3485): Qt's own SVG generator paints the plot instead, into memory (painting into a file
        that could not be opened gave no error but about 150 'Painter not active' warnings)."""
        from PySide6.QtCore import QSize
        from PySide6.QtSvg import QSvgGenerator

        rect = self.q_plot.sceneBoundingRect()
        buf = QBuffer()
        buf.open(QIODevice.OpenModeFlag.WriteOnly)
        gen = QSvgGenerator()
        gen.setOutputDevice(buf)
        gen.setSize(QSize(int(rect.width()), int(rect.height())))
        gen.setViewBox(QRectF(0, 0, rect.width(), rect.height()))
        gen.setTitle(self.mode)
        painter = QPainter()
        if not painter.begin(gen):
            raise LinkwrightError("", "the plot could not be drawn as SVG")
        try:
            self.q_widget.scene().render(painter, QRectF(0, 0, rect.width(), rect.height()), rect)
        finally:
            painter.end()
        return bytes(buf.data())

    def _ask_csv(self) -> None:
        path = ask_save_path(self, "Export series", "series.csv", "CSV (*.csv)")
        if path is not None:
            self._export(self.export_csv, str(path))

    def _ask_image(self) -> None:
        path = ask_save_path(self, "Export plot", "plot.png", "PNG image (*.png);;SVG (*.svg)")
        if path is not None:
            self._export(self.export_image, str(path))

    def _export(self, fn, path: str) -> None:
        try:
            fn(path)
        except (OSError, LinkwrightError) as exc:  # (LinkwrightError: core.io.write_atomic's reason)
            why = exc.message if isinstance(exc, LinkwrightError) else f"cannot write '{path}': {exc.strerror or exc}"
            QMessageBox.warning(self, "Export failed", why[:1].upper() + why[1:])
