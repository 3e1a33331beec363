"""The time plot of many curves (a pile's in-range pairs): beyond BUNDLE_OVER curves it draws them all in one item,
each series as its own line in its own pen, not one pyqtgraph curve item per series. A 300-body pile's 900 curves took
0.24 s of the GUI thread per redraw of its streaming run in user test s58 (0.72 s with random forces: bench_plots.py),
most of it pyqtgraph's work per item and its automatic range over them all.

The recordings here are made by the test, as a contact run records them (sparse per-pair channels), with forces from
a formula (`force`) the reference values are computed from."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QMainWindow

DT = 0.01
CHANNELS = ("pair.normal_force", "pair.active")


def force(pairs: np.ndarray, k: np.ndarray, start: np.ndarray) -> np.ndarray:
    """(len(k), len(pairs)) normal forces of the in-range pairs at frames k: 0 before the frame each comes into range
    (start), then a level of its own with a wave on it."""
    k = np.asarray(k, float)[:, None]
    p = np.asarray(pairs, float)[None, :]
    f = 1.0 + 0.01 * p + (0.5 + 0.001 * p) * np.sin(0.07 * k + p)
    return np.where(k >= np.asarray(start)[None, :], f, 0.0)


class _Playback:
    """What the panel reads of a Playback: a recording (and a comparison run's)."""

    def __init__(self, ghost: bool) -> None:
        from app.playback.recording import FrameRecording

        self.recording, self.kind = FrameRecording(), "contact"
        self.ghost = FrameRecording() if ghost else None
        self.sought: list[float] = []

    def seek_time(self, t: float) -> None:
        self.sought.append(t)
        self.recording.set_cursor(self.recording.index_at(t))


class _Frame:
    def __init__(self, t, poses, values, ranged) -> None:
        self.t, self.poses, self.values, self.ranged = t, poses, values, ranged


class Pile:
    """A window with a Plots panel on a pile's contact run: n_series of its pairs come into contact range (from random
    frames on, in the first half), their normal forces from `force` (the comparison run's, when there is one, 1.5
    times the run's)."""

    def __init__(self, qtbot, n_bodies: int, n_series: int, n_frames: int, ghost: bool = False, seed: int = 3) -> None:
        from app.playback.recording import FrameBatch
        from app.plots import PlotsPanel
        from core.run import Channel

        bodies = ["floor"] + [f"s{k}" for k in range(n_bodies)]
        self.labels = tuple(f"{bodies[j]}/{bodies[i]}" for j in range(1, n_bodies + 1) for i in range(j))
        channels = [Channel("pair.normal_force", "normal force", "N", self.labels, sparse=True),
                    Channel("pair.active", "in contact range", "", self.labels, sparse=True, dtype="bool")]
        rng = np.random.default_rng(seed)
        self.active = np.sort(rng.choice(len(self.labels), n_series, replace=False))
        self.start = rng.integers(0, n_frames // 2, n_series)
        self.times = DT * np.arange(n_frames)
        poses = np.tile(np.eye(4), (len(bodies), 1, 1))

        def out_of_range(rot, _origins, labels) -> dict:
            return {"pair.normal_force": np.zeros((len(rot), len(labels))),
                    "pair.active": np.zeros((len(rot), len(labels)), bool)}

        self.pb = _Playback(ghost)
        self.win = QMainWindow()
        self.win.resize(1440, 400)
        self.plots = PlotsPanel(self.pb)
        self.win.setCentralWidget(self.plots)
        self.win.show()
        qtbot.waitExposed(self.win)
        recs = [(self.pb.recording, 1.0, {})] + ([(self.pb.ghost, 1.5, {"method": "explicit"})] if ghost else [])
        for rec, scale, info in recs:
            rec.begin("contact", bodies, channels, self.times, dict(info, out_of_range=out_of_range))
        self.plots.set_mode("normal force")
        for rec, scale, _info in recs:
            known: list = []
            F = scale * force(self.active, np.arange(n_frames), self.start)
            for k0 in range(0, n_frames, 50):
                frames = []
                for k in range(k0, min(k0 + 50, n_frames)):
                    on = self.start <= k
                    values = {"pair.normal_force": np.zeros(len(self.labels)),
                              "pair.active": np.zeros(len(self.labels), bool)}
                    values["pair.normal_force"][self.active] = F[k]
                    values["pair.active"][self.active[on]] = True
                    frames.append(_Frame(self.times[k], poses, values, self.active[on]))
                rec.extend(FrameBatch(frames, CHANNELS, known))
            rec.finish(True)
        self.plots._redraw_now()
        qtbot.wait(50)

    def expected(self, label: str, scale: float = 1.0) -> np.ndarray:
        """The recorded normal force of a pair, from the formula."""
        j = int(np.flatnonzero(self.active == self.labels.index(label))[0])
        return scale * force(self.active[j:j + 1], np.arange(len(self.times)), self.start[j:j + 1])[:, 0]

    def close(self) -> None:
        self.win.close()
        self.win.deleteLater()


@pytest.fixture
def pile(qtbot):
    made = []

    def make(*args, **kwargs) -> Pile:
        p = Pile(qtbot, *args, **kwargs)
        made.append(p)
        return p

    yield make
    for p in made:
        p.close()


def _curve_items(plots) -> list:
    """The time plot's items that draw curves and draw some now: pyqtgraph curve items and bundles."""
    from app.plots.panel import _Bundle

    return [c for c in plots.q_plot.getViewBox().addedItems
            if isinstance(c, (pg.PlotDataItem, _Bundle)) and c.isVisible()
            and (isinstance(c, _Bundle) or (c.xData is not None and len(c.xData)))]


def _look(pen) -> tuple:
    return pen.color().name(), pen.style(), pen.widthF(), pen.isCosmetic()


def test_900_curves_are_one_item_drawing_each_series_as_recorded_in_its_own_pen(pile):
    from app.plots.panel import BUNDLE_OVER, _pen

    p = pile(300, 900, 120)
    plots = p.plots
    shown = plots.visible_series()
    assert sorted(shown) == sorted(p.labels[i] for i in p.active) and len(shown) == 900 > BUNDLE_OVER
    assert _curve_items(plots) == [plots.q_bundle]  # one item (before: 900 curve items)
    assert plots.q_curves == [] and plots.q_bundle.count() == 900
    # each series drawn over the run's times with the recorded values, in series order, each in the pen its own curve
    # item had (1 px: more curves than the legend names)
    assert list(plots.q_bundle.labels) == shown
    q = plots.quantity()
    for lab, pen in zip(shown, plots.q_bundle.pens):
        x, y = plots.curve_data(lab)
        np.testing.assert_array_equal(x, p.times)
        np.testing.assert_array_equal(y, p.expected(lab))
        assert _look(pen) == _look(_pen(q.index[lab], thin=True)), lab
    assert plots.legend_names() == [] and plots.legend_note() == "900 curves: named in the series list"
    # a series unticked leaves the bundle; ticked again, it is drawn again
    lab = shown[5]
    plots.set_series_visible(lab, False)
    assert plots.curve_data(lab) is None and plots.q_bundle.count() == 899 and lab not in plots.q_bundle.labels
    assert plots.legend_note() == "899 curves: named in the series list"
    plots.set_series_visible(lab, True)
    np.testing.assert_array_equal(plots.curve_data(lab)[1], p.expected(lab))


def test_the_view_range_of_many_curves_covers_all_their_data_as_their_curve_items_did(pile, qtbot, monkeypatch):
    from app.plots import panel

    p = pile(64, 200, 150)
    plots, vb = p.plots, p.plots.q_plot.getViewBox()
    F = force(p.active, np.arange(150), p.start)  # every series' values, from the formula
    lo, hi = float(F.min()), float(F.max())
    assert plots.q_bundle.dataBounds(0) == (p.times[0], p.times[-1])
    assert plots.q_bundle.dataBounds(1) == (lo, hi)  # its extent: all the series' data
    qtbot.wait(50)
    (x0, x1), (y0, y1) = vb.viewRange()
    assert x0 < p.times[0] and x1 > p.times[-1] and y0 < lo and y1 > hi
    pad = vb.suggestPadding(1)  # (pyqtgraph's margin beyond the data, and a pen's half width)
    assert (y1 - y0) <= (hi - lo) * (1 + 2 * pad) * 1.01
    bundled = vb.viewRange()
    # the same series drawn by one curve item each (the threshold raised): the same view range
    monkeypatch.setattr(panel, "BUNDLE_OVER", 10 ** 6)
    plots._update_curves(budget=float("inf"))
    assert not plots.q_bundle.isVisible() and len(_curve_items(plots)) == 200
    qtbot.wait(50)
    np.testing.assert_allclose(vb.viewRange(), bundled, rtol=1e-9, atol=0)
    for lab in plots.visible_series()[:20]:
        np.testing.assert_array_equal(plots.curve_data(lab)[1], p.expected(lab))  # (the items' data)


def test_crossing_the_threshold_switches_between_curve_items_and_the_bundle(pile):
    """Unticked down to BUNDLE_OVER curves, the series get their curve items again (drawn alike); ticked beyond it,
    the bundle draws them and the items are hidden and empty (kept for reuse)."""
    from app.plots.panel import BUNDLE_OVER

    p = pile(64, BUNDLE_OVER + 5, 80)
    plots = p.plots
    shown = plots.visible_series()
    assert _curve_items(plots) == [plots.q_bundle]
    for lab in shown[:5]:
        plots.set_series_visible(lab, False)
    plots._flush_curves()
    assert len(plots.visible_series()) == BUNDLE_OVER
    items = _curve_items(plots)
    assert not plots.q_bundle.isVisible() and plots.q_bundle.count() == 0
    assert len(items) == BUNDLE_OVER and all(isinstance(c, pg.PlotDataItem) for c in items)
    for lab in shown[5:]:
        np.testing.assert_array_equal(plots.curve_data(lab)[1], p.expected(lab))
    plots.set_series_visible(shown[0], True)
    assert _curve_items(plots) == [plots.q_bundle] and plots.q_bundle.count() == BUNDLE_OVER + 1
    made = [c for c in plots.q_plot.getViewBox().addedItems if isinstance(c, pg.PlotDataItem)]
    assert len(made) == BUNDLE_OVER and not any(c.isVisible() for c in made)  # (kept for reuse, hidden)
    assert all(c.xData is None or len(c.xData) == 0 for c in made)


def test_a_comparison_run_of_many_series_is_a_second_bundle_dashed_over_the_first(pile):
    from app.plots.panel import _pen

    p = pile(64, 70, 90, ghost=True)
    plots = p.plots
    shown = plots.visible_series()
    assert len(shown) == 70  # 140 curves: the run's and the comparison's
    assert _curve_items(plots) == [plots.q_bundle, plots.g_bundle]
    assert plots.g_bundle.count() == 70 and plots.g_bundle.labels[0] == shown[0] + " (explicit)"
    q = plots.quantity()
    for lab, pen in zip(shown, plots.g_bundle.pens):
        x, y = plots.curve_data(lab, ghost=True)
        np.testing.assert_array_equal(y, p.expected(lab, 1.5))
        np.testing.assert_array_equal(plots.curve_data(lab)[1], p.expected(lab))
        assert _look(pen) == _look(_pen(q.index[lab], dashed=True, thin=True))
    assert plots.legend_note() == "140 curves: named in the series list"
    items = plots.q_plot.getViewBox().addedItems
    assert items.index(plots.g_bundle) > items.index(plots.q_bundle)  # (drawn over the run's)


def test_a_long_run_is_downsampled_and_a_zoom_clipped_keeping_every_peak(pile, qtbot):
    """Beyond DOWNSAMPLE_FACTOR frames per pixel the bundle draws the highest and lowest value of each bin of frames
    (as pyqtgraph's curve items do); zoomed in, the frames in view (and a bin beyond each side)."""
    from app.plots.panel import DOWNSAMPLE_FACTOR

    p = pile(64, 130, 30000)
    plots, vb = p.plots, p.plots.q_plot.getViewBox()
    plots.q_widget.grab()  # (painted)
    lines = plots.q_bundle.lines()
    assert len(lines) == 130
    span = np.diff(vb.viewRange()[0])[0]
    ds = int(span / DT / (vb.width() * DOWNSAMPLE_FACTOR))  # (frames a bin: pyqtgraph's choice)
    assert ds >= 3
    bins = -(-len(p.times) // ds)
    for lab, (x, y) in zip(plots.q_bundle.labels, lines):
        ref = p.expected(lab)
        assert len(x) == len(y) == 2 * bins  # downsampled: each bin's highest and lowest value
        np.testing.assert_array_equal(y[0::2], [ref[k:k + ds].max() for k in range(0, len(ref), ds)])
        np.testing.assert_array_equal(y[1::2], [ref[k:k + ds].min() for k in range(0, len(ref), ds)])
        assert x[0] <= p.times[ds] and x[-1] >= p.times[-ds]  # (the last, shorter bin too)
    # zoomed in on a second: the frames in it, drawn whole (under DOWNSAMPLE_FACTOR frames a pixel)
    vb.setXRange(40.0, 41.0, padding=0)
    qtbot.wait(20)
    plots.q_widget.grab()
    for lab, (x, y) in zip(plots.q_bundle.labels, plots.q_bundle.lines()):
        inside = (p.times >= 40.0) & (p.times <= 41.0)
        assert x[0] < 40.0 and x[-1] >= 41.0 and len(x) <= inside.sum() + 2  # (to the edges: a frame beyond each)
        keep = (x >= 40.0) & (x <= 41.0)
        np.testing.assert_array_equal(x[keep], p.times[inside])
        np.testing.assert_array_equal(y[keep], p.expected(lab)[inside])
    vb.autoRange()  # ("View All": the whole run again)
    qtbot.wait(20)
    plots.q_widget.grab()
    assert plots.q_bundle.lines()[0][0][-1] >= p.times[-10]


def test_a_redraw_of_the_same_frames_sets_no_bundle_data_and_new_frames_do(pile, monkeypatch):
    from app.playback.recording import FrameBatch
    from app.plots.panel import _Bundle

    p = pile(64, 150, 60)
    plots, rec = p.plots, p.pb.recording
    calls = []
    original = _Bundle.set_curves
    monkeypatch.setattr(_Bundle, "set_curves", lambda self, *a, **k: calls.append(self) or original(self, *a, **k))
    plots._redraw_now()
    assert calls == []
    last = rec.count - 1
    values = {name: rec.series(name)[last] for name in CHANNELS}  # (the held columns: FrameBatch's sparse layout)
    batch = FrameBatch([_Frame(rec.times[last] + DT, rec.poses[last], values, ())])
    batch.columns = rec.columns.copy()
    rec.extend(batch)
    plots._redraw_now()
    assert calls == [plots.q_bundle]
    lab = plots.visible_series()[0]
    x, y = plots.curve_data(lab)
    assert len(x) == rec.count == 61 and y[-1] == y[-2]


def test_a_click_on_many_curves_seeks_and_the_export_draws_them(pile, qtbot, tmp_path, monkeypatch):
    """The bundle lies over the whole view: a click on it still seeks (it takes no mouse event), and the plot's PNG
    draws the curves as their curve items did: the same colours, nearly the same pixels (a dotted line's dots may
    fall a pixel apart)."""
    from app.plots import panel

    p = pile(64, 200, 150)
    plots, vb = p.plots, p.plots.q_plot.getViewBox()
    qtbot.wait(50)
    pos = plots.q_widget.mapFromScene(vb.mapViewToScene(QPointF(0.655, sum(vb.viewRange()[1]) / 2)))
    qtbot.mouseClick(plots.q_widget.viewport(), Qt.LeftButton, pos=pos)
    qtbot.waitUntil(lambda: bool(p.pb.sought), timeout=3000)
    assert p.pb.sought[-1] == pytest.approx(0.655, abs=2 * vb.viewPixelSize()[0])

    def exported(name: str) -> np.ndarray:
        plots.export_image(str(tmp_path / name))
        img = QImage(str(tmp_path / name)).convertToFormat(QImage.Format.Format_RGB32)
        return np.frombuffer(img.constBits(), np.uint8).reshape(img.height(), img.width(), 4)[..., :3].copy()

    bundled = exported("bundle.png")
    monkeypatch.setattr(panel, "BUNDLE_OVER", 10 ** 6)
    plots._update_curves(budget=float("inf"))
    qtbot.wait(50)
    items = exported("items.png")
    assert bundled.shape == items.shape
    assert (bundled != items).any(axis=2).mean() < 0.05

    def colours(a):
        return {tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)) for c in panel._PALETTE if
                (np.abs(a.astype(int) - [int(c[i:i + 2], 16) for i in (5, 3, 1)]).sum(axis=2) == 0).sum() > 20}

    assert colours(bundled) == colours(items) and len(colours(items)) == len(panel._PALETTE)


def test_a_contact_run_of_150_spheres_on_a_floor_draws_their_forces_in_the_bundle(make_window, qtbot):
    """A real run, streamed to the window: 150 spheres 1 m apart resting on a floor (11,325 pairs, the 150 with the
    floor in contact range); their normal forces, one curve each, in one item, each the recording's series, about
    the sphere's weight once it rests."""
    from core import io

    n = 150
    bodies = [{"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}}]
    bodies += [{"name": f"s{k}", "mass": 0.1, "shape": {"type": "sphere", "radius": 0.05},
                "pose": {"position": [1.0 * (k % 15), 1.0 * (k // 15), 0.05]}} for k in range(n)]
    doc = io.from_dict({"format": "linkwright.mechanism", "version": 1, "space": "spatial", "gravity": [0, 0, -9.81],
                        "bodies": bodies, "contact": {"friction": 0.4},
                        "simulation": {"dt": 0.01, "duration": 0.2}})
    from tests.app.playback.test_contact_runs import finished

    win = make_window(doc)
    win.qtbot = qtbot  # (finished's)
    win.dock_plots.raise_()
    if not (win.playback.is_running() or win.playback.recording.complete):  # (a short run starts by itself)
        win.action_set.run.trigger()
    finished(win, timeout=120000)
    pb, plots = win.playback, win.plots
    plots.set_mode("normal force")
    qtbot.waitUntil(lambda: plots.q_bundle.count() == n, timeout=10000)
    rec = pb.recording
    assert sorted(plots.visible_series()) == sorted(f"s{k}/floor" for k in range(n))
    assert _curve_items(plots) == [plots.q_bundle]
    labels = rec.channels["pair.normal_force"].labels
    for lab in plots.visible_series():
        x, y = plots.curve_data(lab)
        np.testing.assert_array_equal(x, rec.times[: rec.count])
        np.testing.assert_array_equal(y, rec.label_series("pair.normal_force", labels.index(lab)))
        assert y[-1] == pytest.approx(0.1 * 9.81, rel=0.05)


def test_the_bundles_extent_is_the_union_of_its_series_as_curve_items_give_it(qtbot):
    """The view's "visible data only" (an orthogonal range) and its percentile range (frac) ask the bundle for the
    extent of part of its data: the union of what a pyqtgraph curve item of each series gives."""
    from app.plots.panel import _Bundle, _bundle_pen

    rng = np.random.default_rng(7)
    x = np.linspace(0.0, 2.0, 400)
    ys = [rng.normal(k, 1.0 + k, x.size) for k in range(30)]
    ys[3][17] = np.nan  # (non-finite values are passed over)
    ys[4][:] = np.inf
    bundle = _Bundle()
    bundle.set_curves(x, ys, [_bundle_pen(k) for k in range(30)], [f"c{k}" for k in range(30)])
    items = [pg.PlotCurveItem(x, y, pen=_bundle_pen(k)) for k, y in enumerate(ys)]
    for ax, frac, ortho in ((0, 1.0, None), (1, 1.0, None), (1, 1.0, (0.5, 0.7)), (0, 1.0, (-1.0, 2.0)),
                            (1, 0.9, None)):
        bounds = [b for b in (c.dataBounds(ax, frac, ortho) for c in items) if b[0] is not None]
        expected = (min(b[0] for b in bounds), max(b[1] for b in bounds))
        assert bundle.dataBounds(ax, frac, ortho) == pytest.approx(expected, rel=1e-12), (ax, frac, ortho)
    assert bundle.pixelPadding() == items[0].pixelPadding()
    finite = np.concatenate([y[np.isfinite(y)] for y in ys])
    assert bundle.extent() == (finite.min(), finite.max())
