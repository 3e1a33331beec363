"""The GUI thread's work per batch of a streaming contact run is bounded by what changed: the readouts of a batch lay
out nothing beyond themselves and draw the window once, and a redraw of the plots sets new data only on curves whose
frames changed and ticks only the list rows whose pairs changed. A 64-body pile's run (2080 pairs) stalled the event
loop 0.1-0.2 s at every batch (every 0.5 s) with the Structure tab in front and 0.3-0.9 s with the Plots tab: each
readout's text went up through the dock's and the window's layouts (three window updates per batch, each a
composition of the whole window, 40-170 ms software-rendered), the progress bar repainted the window by itself,
the series list was told that all its rows changed at every redraw (and walked them all), and the curve work left
for later set every curve again, slice after slice, each slice a repaint."""

from __future__ import annotations

import time
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication

from core import io
from tests.app.playback.test_plot_many_series import N, plotted_normal_forces, spread_spheres

EXAMPLES = Path(__file__).resolve().parents[3] / "resources" / "examples"
class _Events(QObject):
    """Counts events of some types per receiver (an application-wide filter)."""

    def __init__(self, types) -> None:
        super().__init__()
        self.types = set(types)
        self.seen: list[tuple[QEvent.Type, QObject]] = []

    def eventFilter(self, obj, ev):  # noqa: N802 - Qt API
        if ev.type() in self.types:
            self.seen.append((ev.type(), obj))
        return False

    def count(self, kind, receivers) -> int:
        return sum(1 for t, o in self.seen if t == kind and any(o is r for r in receivers))


def test_a_batchs_readouts_lay_out_nothing_beyond_themselves_and_repaint_the_window_once(make_window, qtbot):
    win = make_window(io.load(EXAMPLES / "contact_pile.json"))
    pb, m = win.playback, win.motion
    qtbot.waitUntil(lambda: pb.recording.complete and not pb.worker.running(), timeout=60000)
    qtbot.wait(100)
    events = _Events((QEvent.LayoutRequest, QEvent.Paint, QEvent.UpdateLater))
    app = QApplication.instance()
    app.installEventFilter(events)
    try:
        for k in range(1, 6):  # what a batch of a streaming run changes: the status line's count, the progress bar
            pb._set_status(f"solving… {10 * k} / 2000 frames", "", "busy")
            painted_before = events.count(QEvent.Paint, [m.progress_bar])
            m._show_progress(k / 10, f"t = {0.1 * k:.3f} / 20.000 s · 9 steps/s · 20 s left")
            # the bar does not repaint (and composite the window) by itself, before the batch's other readouts
            assert events.count(QEvent.Paint, [m.progress_bar]) == painted_before, k
            qtbot.wait(30)
    finally:
        app.removeEventFilter(events)
    assert m.status_label.text() == "solving… 50 / 2000 frames" and m.progress_bar.value() == 50
    # before: each text went up through the panel's, the dock's and the window's layouts (5 each), and each lay-out
    # repainted part of the window again
    assert events.count(QEvent.LayoutRequest, [m, win.dock_motion, win]) == 0
    # the status line laid its text out before it was drawn: it did not ask for a second paint from its paint
    assert events.count(QEvent.UpdateLater, [m.status_label]) == 0
    assert events.count(QEvent.Paint, [m.progress_bar]) >= 5  # (drawn, with the others)


def test_a_redraw_sets_only_curves_with_new_frames_and_ticks_only_rows_that_changed(make_window, qtbot, monkeypatch):
    win = plotted_normal_forces(make_window, qtbot)
    pb, plots = win.playback, win.plots
    assert len(plots.q_curves) == N
    qtbot.wait(100)

    set_data = []
    original = pg.PlotDataItem.setData

    def counted(self, *a, **k):
        set_data.append(self)
        return original(self, *a, **k)

    monkeypatch.setattr(pg.PlotDataItem, "setData", counted)
    rows = []  # the rows the list is asked to draw again (one each; the whole list: all of them)
    lst = plots.series_list
    monkeypatch.setattr(lst, "update", lambda index: rows.append(1))
    monkeypatch.setattr(lst, "viewport", lambda: type("V", (), {"update": lambda _s: rows.append(lst.count())})())

    plots._redraw_now()  # the same frames: nothing to set, no row to tick again
    qtbot.wait(50)
    assert set_data == []  # before: the 40 curves shown got their same data again
    assert sum(rows) == 0  # before: all 820 rows at every redraw

    # a curve work slice left for later sets only the curves not yet up to date (before: all 40 again, each slice)
    plots._curves_due = True
    plots._update_curves()
    assert set_data == []

    # a pair that came into contact range since the list was drawn: its row alone is ticked again
    listed = plots._ever_active.copy()
    listed[int(listed.nonzero()[0][0])] = False
    plots._listed = (plots.quantity().name, listed)
    plots._update_curves()
    assert rows == [1]


def test_a_streaming_runs_redraws_leave_the_gui_thread_most_of_its_time(make_window, qtbot):
    from app.plots.panel import STREAM_REDRAW_MS, STREAM_REDRAW_SPACING

    win = make_window(spread_spheres())
    plots = win.plots
    plots._drawn_at = time.perf_counter()
    plots._redraw_cost = 0.01  # a cheap redraw: the next one after STREAM_REDRAW_MS
    assert STREAM_REDRAW_MS - 20 <= plots._stream_wait() <= STREAM_REDRAW_MS
    plots._redraw_cost = 0.4  # a costly one (many curves, a software-rendered window): after 3 times as long
    assert plots._stream_wait() >= 1000 * STREAM_REDRAW_SPACING * 0.4 - 20


class _Frame:
    """A frame of a run (core.run's protocol): the recording's last frame again, at time t."""

    def __init__(self, rec, t: float) -> None:
        k = rec.count - 1
        self.index, self.t, self.poses = k + 1, t, rec.poses[k]
        self.values = {name: rec.series(name)[k] for name in rec.channels}


def test_a_redraw_of_new_frames_paints_the_time_plot_once(make_window, qtbot):
    """pyqtgraph fits a plot's automatic range when it paints it; the range changed there (the new frames' times)
    gave every curve its data again and asked for a second paint: each redraw of a streaming run drew every curve
    twice (a 64-body pile's 170 in-range pairs: two paints of 0.3 s each). The range is fitted before the paint."""
    from app.playback.recording import FrameBatch

    win = plotted_normal_forces(make_window, qtbot)
    pb, plots = win.playback, win.plots
    rec = pb.recording
    qtbot.wait(200)
    events = _Events((QEvent.Paint,))
    app = QApplication.instance()
    app.installEventFilter(events)
    viewport = plots.q_widget.viewport()
    painted = []
    try:
        for k in range(3):  # frames arrive (each batch later than the view's range): the plot is redrawn
            x1 = plots.q_plot.getViewBox().viewRange()[0][1]
            before = events.count(QEvent.Paint, [viewport])
            t0 = rec.times[rec.count - 1]
            rec.extend(FrameBatch([_Frame(rec, t0 + 0.05 * (j + 1)) for j in range(5)]))
            qtbot.wait(150)
            painted.append(events.count(QEvent.Paint, [viewport]) - before)
            assert plots.q_plot.getViewBox().viewRange()[0][1] > x1  # (the range followed the new frames)
    finally:
        app.removeEventFilter(events)
    assert all(len(c.getOriginalDataset()[0]) == rec.count for c in plots.q_curves)
    assert painted == [1, 1, 1]  # before: [2, 2, 2]


def test_ticking_rows_of_a_long_series_list_lays_out_none_of_its_rows(make_window, qtbot, monkeypatch):
    """The list view answered any dataChanged, of a single row too, by laying out all its rows again (two rowCount
    calls per row: 90,000 for the 45,000 pairs of a 300-body pile, at every redraw of its streaming run)."""
    from app.plots.panel import _SeriesModel

    calls = []
    original = _SeriesModel.rowCount  # (counted from before the list is made: its bindings look the method up then)
    monkeypatch.setattr(_SeriesModel, "rowCount", lambda self, *a: calls.append(1) or original(self, *a))
    win = plotted_normal_forces(make_window, qtbot)
    model = win.plots.series_list.model_
    assert len(model.labels) == N * (N - 1) // 2 + N  # every pair of spheres, and each sphere with the floor
    for rows in ([3], list(range(0, 300, 3)), None):
        qtbot.wait(30)
        calls.clear()
        model.refresh(rows)
        qtbot.wait(30)  # (drawn)
        assert len(calls) < 0.1 * len(model.labels), rows  # (before: 2 per row, 1,640)
