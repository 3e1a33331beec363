"""The Plots panel on a contact run with many pairs of which few touch: curve items are made only for the series
shown (pairs that were in contact range), not while the panel is hidden, and reused when the plotted quantity
changes. One pyqtgraph curve per pair series, made on the GUI thread, froze the window for 17-25 s at the start of a
64-body run (2080 pairs) and for 104 s when its plotted quantity changed (6240 series)."""

from __future__ import annotations

import csv

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from core import io

N = 40  # spheres, 1 m apart on a floor: each rests on the floor, no two ever come near (820 pairs, 40 touch)


def spread_spheres():
    """40 spheres 1 m apart resting on a floor: 820 pairs, of which the 40 with the floor touch."""
    bodies = [{"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}}]
    bodies += [{"name": f"s{k}", "mass": 0.1, "shape": {"type": "sphere", "radius": 0.05},
                "pose": {"position": [1.0 * (k % 8), 1.0 * (k // 8), 0.05]}} for k in range(N)]
    return io.from_dict({"format": "linkwright.mechanism", "version": 1, "space": "spatial",
                         "gravity": [0, 0, -9.81], "bodies": bodies, "contact": {"friction": 0.4},
                         "simulation": {"dt": 0.01, "duration": 0.2}})


def plotted_normal_forces(make_window, qtbot):
    """A window on the spread spheres' run, done, with the Plots tab in front showing the normal forces (every pair
    that touched: one curve per sphere)."""
    win = make_window(spread_spheres())
    pb, plots = win.playback, win.plots
    win.dock_plots.raise_()
    if not pb.is_running() and not pb.recording.complete:
        win.action_set.run.trigger()
    qtbot.waitUntil(lambda: pb.recording.complete and not pb.worker.running(), timeout=60000)
    plots.set_mode("normal force")
    qtbot.waitUntil(lambda: len(_drawn(plots)) == N, timeout=10000)
    return win


def _items(plots) -> list:
    """The curve items in the time plot (made, whether drawn or not)."""
    return [c for c in plots.q_plot.getViewBox().addedItems if isinstance(c, pg.PlotDataItem)]


def _drawn(plots) -> list:
    return [c for c in _items(plots) if c.isVisible() and c.xData is not None and len(c.xData)]


def test_only_series_in_contact_get_curves_none_while_hidden_and_they_are_reused(make_window, qtbot, tmp_path):
    win = make_window(spread_spheres())
    pb, plots = win.playback, win.plots
    win.dock_structure.raise_()  # the Plots tab behind Structure
    qtbot.waitUntil(lambda: plots._off_screen(), timeout=3000)
    if not pb.is_running() and not pb.recording.complete:
        win.action_set.run.trigger()
    qtbot.waitUntil(lambda: pb.recording.complete and not pb.worker.running(), timeout=60000)
    # the recording holds the pairs that came into contact range (the 40 with the floor), not all 820
    rec = pb.recording
    assert rec.ok and len(rec.channels["pair.normal_force"].labels) == N * (N + 1) // 2
    assert rec.series("pair.normal_force").shape[1] == N and rec.series("pair.friction_force").shape[1:] == (N, 3)
    assert sorted(rec.channels["pair.active"].labels[i] for i in rec.columns) == sorted(f"s{k}/floor"
                                                                                       for k in range(N))
    qtbot.wait(300)  # (a redraw the stream left pending)
    plots.set_mode("normal force")
    assert len(_items(plots)) == 0  # hidden: no curve work at all (before: 820 items, one per pair)
    floor_pairs = [f"s{k}/floor" for k in range(N)]
    assert sorted(plots.visible_series()) == sorted(floor_pairs)  # (what is shown is known while hidden)

    win.dock_plots.raise_()  # shown: the pairs that touched get their curves
    qtbot.waitUntil(lambda: len(_drawn(plots)) == N, timeout=10000)
    assert len(_items(plots)) == N
    assert sorted(c.name() or plots._curve_labels[id(c)] for c in plots.q_curves) == sorted(floor_pairs)

    # the visible series export as before: t and the 40 floor pairs
    out = tmp_path / "series.csv"
    plots.export_csv(str(out))
    head = next(csv.reader(out.open()))
    assert head[0] == "t [s]" and sorted(head[1:]) == sorted(f"normal force: {p} [N]" for p in floor_pairs)

    # another quantity: the same items serve it, and only as many more as it shows (3 components of 40 pairs;
    # before: all 2460 series of the 820 pairs got one, each switch deleting and making thousands)
    plots.set_mode("friction force components")
    assert len(plots.visible_series()) == 3 * N
    qtbot.waitUntil(lambda: len(_drawn(plots)) == 3 * N, timeout=10000)
    assert len(_items(plots)) == 3 * N
    for mode in ("gap", "body position", "normal force"):
        plots.set_mode(mode)
        qtbot.waitUntil(lambda: len(_drawn(plots)) == len(plots.visible_series()), timeout=10000)
        assert len(_items(plots)) == 3 * N, mode  # no item made or deleted: reused
    assert len(_drawn(plots)) == N


def test_a_redraw_and_a_run_start_do_no_work_per_pair_of_the_scene(make_window, qtbot, monkeypatch):
    """The series list has a row per series (820 pairs) but reads only the rows it draws, and a redraw of the
    streaming run looks at the series shown, not at every pair: the list of item objects, built at each run's start
    and walked whole at every redraw to tick and tip its rows, and the functions made for every series of every
    quantity at the start, took 0.3-0.5 s of the GUI thread at the start of a 64-body run (2080 pairs) and 0.1-0.2 s
    at its redraws."""
    from app.plots import panel as plots_panel

    win = plotted_normal_forces(make_window, qtbot)
    pb, plots = win.playback, win.plots
    pairs = N * (N + 1) // 2
    assert plots.series_list.count() == pairs  # (every pair is listed, to be ticked)

    calls = {"visible": 0, "column": 0}
    visible, column = plots_panel.PlotsPanel._visible, plots_panel._column

    def counted_visible(self, q, i):
        calls["visible"] += 1
        return visible(self, q, i)

    def counted_column(*a, **k):
        calls["column"] += 1
        return column(*a, **k)

    monkeypatch.setattr(plots_panel.PlotsPanel, "_visible", counted_visible)
    monkeypatch.setattr(plots_panel, "_column", counted_column)
    plots._redraw_now()
    qtbot.wait(50)  # (the list draws the rows on screen)
    # the 40 series shown, and the list's rows on screen (a few tens): not the 820 pairs (before: 1640 looks)
    assert calls["visible"] < 200, calls
    assert calls["column"] <= 2 * N, calls

    # a quantity's series make their functions when asked for, not at the run's start (before: one per series of
    # every per-pair quantity: 820 * 6 here)
    calls["column"] = 0
    qs = plots_panel.quantities(pb.recording.kind, pb.recording.channels)
    assert calls["column"] <= 4  # (the solver's statistics, one series each)
    q = next(q for q in qs if q.name == "friction force components")
    assert len(q.series) == 3 * pairs and q.series[4][0] == q.labels[4] == "s1/floor.y"
    np.testing.assert_array_equal(q.series[4][1](pb.recording), pb.recording.label_series("pair.friction_force", 1)[:, 1])
    j = int(pb.recording.store.column_of[1])  # (s1/floor: a pair in range, held)
    np.testing.assert_array_equal(q.series[4][1](pb.recording), pb.recording.series("pair.friction_force")[:, j, 1])

    # the list's rows: ticked when shown, a pair never in range says why it is left out; ticking its row shows it
    model = plots.series_list.model()
    row = {lab: i for i, lab in enumerate(plots.quantity().labels)}
    touching, never = row["s0/floor"], row["s0/s1"]
    assert model.data(model.index(touching), Qt.CheckStateRole) == Qt.Checked
    assert model.data(model.index(never), Qt.CheckStateRole) == Qt.Unchecked
    assert "never in contact range" in model.data(model.index(never), Qt.ToolTipRole)
    assert model.setData(model.index(never), Qt.Checked.value, Qt.CheckStateRole)
    assert "s0/s1" in plots.visible_series()
    assert model.data(model.index(never), Qt.CheckStateRole) == Qt.Checked


def test_more_curves_than_the_legend_names_are_drawn_1px_wide(make_window, qtbot):
    """Qt's raster engine draws a 1 px line by its fast path and strokes a wider one as an outline to fill (a dotted
    one dot by dot): the curves of a 64-body pile's 170 in-range pairs, 2 px wide, took 0.3-0.4 s of the GUI thread to
    paint (1 px: 20 ms). A plot of more curves than the legend names (the series list and the readout tell them
    apart) draws them 1 px wide, each in its colour and line style still; a plot of few keeps 2 px lines."""
    from app.plots.panel import LEGEND_MAX, THIN_OVER, _pen

    win = plotted_normal_forces(make_window, qtbot)
    plots = win.plots
    assert THIN_OVER == LEGEND_MAX and N > THIN_OVER

    def looks():
        q = plots.quantity()
        return {lab: (c.opts["pen"].widthF(), c.opts["pen"].isCosmetic(), c.opts["pen"].color().name(),
                      c.opts["pen"].style())
                for i, c in plots._q_slots.items() if c.isVisible() for lab in (q.labels[i],)}

    def expected(lab, thin):
        p = _pen(plots.quantity().index[lab], thin=thin)
        return p.widthF(), True, p.color().name(), p.style()

    drawn = looks()
    assert len(drawn) == N and not plots.legend_names()
    assert {w for w, *_rest in drawn.values()} == {1.0}  # before: {2.0}
    # in the legend's place a note says why there is none (there was nothing: ut2 H7), beside the view
    assert plots.legend_note() == f"{N} curves: named in the series list"
    qtbot.wait(50)  # (the plot's layout settles)
    note = plots.q_legend.note.mapRectToScene(plots.q_legend.note.boundingRect())
    view = plots.q_plot.getViewBox().sceneBoundingRect()
    assert note.left() >= view.right() and note.width() > 0, (note, view)
    assert plots.q_widget.mapToScene(plots.q_widget.viewport().rect()).boundingRect().contains(note)
    assert all(v == expected(lab, True) for lab, v in drawn.items()), drawn

    # unticked down to the legend's sixteen: 2 px again (the same items), named in the legend
    unticked = sorted(drawn)[LEGEND_MAX:]
    for lab in unticked:
        plots.set_series_visible(lab, False)
    drawn = looks()
    assert len(drawn) == LEGEND_MAX and len(plots.legend_names()) == LEGEND_MAX and plots.legend_note() == ""
    assert all(v == expected(lab, False) for lab, v in drawn.items()), drawn
    plots.set_series_visible(unticked[0], True)  # one more: thin again
    assert {w for w, *_rest in looks().values()} == {1.0}
    assert plots.legend_note() == f"{LEGEND_MAX + 1} curves: named in the series list" and not plots.legend_names()
