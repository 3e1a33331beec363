"""The Plots panel on a contact run with many pairs of which few touch: curve items are made only for the series
shown (pairs that were in contact range), not while the panel is hidden, and reused when the plotted quantity
changes. One pyqtgraph curve per pair series, made on the GUI thread, froze the window for 17-25 s at the start of a
64-body run (2080 pairs) and for 104 s when its plotted quantity changed (6240 series)."""

from __future__ import annotations

import csv

import pyqtgraph as pg

from core import io

N = 40  # spheres, 1 m apart on a floor: each rests on the floor, no two ever come near (820 pairs, 40 touch)


def _spread_spheres():
    bodies = [{"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}}]
    bodies += [{"name": f"s{k}", "mass": 0.1, "shape": {"type": "sphere", "radius": 0.05},
                "pose": {"position": [1.0 * (k % 8), 1.0 * (k // 8), 0.05]}} for k in range(N)]
    return io.from_dict({"format": "linkwright.mechanism", "version": 1, "space": "spatial",
                         "gravity": [0, 0, -9.81], "bodies": bodies, "contact": {"friction": 0.4},
                         "simulation": {"dt": 0.01, "duration": 0.2}})


def _items(plots) -> list:
    """The curve items in the time plot (made, whether drawn or not)."""
    return [c for c in plots.q_plot.getViewBox().addedItems if isinstance(c, pg.PlotDataItem)]


def _drawn(plots) -> list:
    return [c for c in _items(plots) if c.isVisible() and c.xData is not None and len(c.xData)]


def test_only_series_in_contact_get_curves_none_while_hidden_and_they_are_reused(make_window, qtbot, tmp_path):
    win = make_window(_spread_spheres())
    pb, plots = win.playback, win.plots
    win.dock_structure.raise_()  # the Plots tab behind Structure
    qtbot.waitUntil(lambda: plots._off_screen(), timeout=3000)
    if not pb.is_running() and not pb.recording.complete:
        win.action_set.run.trigger()
    qtbot.waitUntil(lambda: pb.recording.complete and not pb.worker.running(), timeout=60000)
    assert pb.recording.ok and pb.recording.series("pair.normal_force").shape[1] == N * (N + 1) // 2
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
