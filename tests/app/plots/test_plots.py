"""The Plots dock: joint coordinates over time and the coupler curve from the streamed frames, following the cursor."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt

from core import io
from core.kinematics import compile_model, solve_trajectory

EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[3] / "resources" / "examples"


def curve_xy(curve) -> tuple[np.ndarray, np.ndarray]:
    """The whole data set of a curve (getData() would give only the part clipped to the view)."""
    x, y = curve.getOriginalDataset()
    return (np.zeros(0), np.zeros(0)) if x is None else (np.asarray(x), np.asarray(y))


@pytest.fixture
def win(make_window, qtbot):
    w = make_window(io.load(EXAMPLES / "fourbar.json"))
    qtbot.waitUntil(lambda: w.playback.recording.complete and w.playback.recording.count == 101, timeout=10000)
    return w


def reference(win):
    return solve_trajectory(compile_model(win.document.mechanism), np.linspace(0.0, 1.0, 101))


def test_joint_curves_show_the_driver_and_the_solved_coordinates(win):
    plots, ref = win.plots, reference(win)
    assert plots.mode == "positions" and ref.coord_names == ["A", "B", "C", "D"]
    assert [c.name() for c in plots.q_curves] == ["A", "B", "C", "D"]  # one curve per coordinate, named in the legend
    legend_names = [label.text for _sample, label in plots.q_legend.items]
    assert legend_names == ["A", "B", "C", "D"]
    t = np.linspace(0.0, 1.0, 101)
    x, y = curve_xy(plots.q_curves[0])
    np.testing.assert_allclose(x, t, atol=1e-12)
    np.testing.assert_allclose(y, 2 * math.pi * t, atol=1e-9)  # joint A is the driver q = 2*pi*t
    for i, c in enumerate(plots.q_curves):
        np.testing.assert_allclose(curve_xy(c)[1], ref.q[:, i], atol=1e-9)
    plots.set_mode("velocities")
    x, y = curve_xy(plots.q_curves[0])
    np.testing.assert_allclose(y, np.full(101, 2 * math.pi), atol=1e-9)  # d/dt (2 pi t) = 2 pi
    for i, c in enumerate(plots.q_curves):
        np.testing.assert_allclose(curve_xy(c)[1], ref.qd[:, i], atol=1e-8)
    plots.set_mode("accelerations")
    np.testing.assert_allclose(curve_xy(plots.q_curves[0])[1], np.zeros(101), atol=1e-9)  # constant crank speed
    for i, c in enumerate(plots.q_curves):
        np.testing.assert_allclose(curve_xy(c)[1], ref.qdd[:, i], atol=1e-6)
    assert "q̈" in plots.q_plot.getAxis("left").toolTip()  # (the whole label: this window's plot is too low for it)


def test_coupler_point_trace_equals_the_solver_points(win):
    plots, ref = win.plots, reference(win)
    assert plots.xy_plot.getViewBox().state["aspectLocked"]  # (equal scales: the curve keeps its shape)
    assert ref.point_names == ["coupler.P"] and [c.name() for c in plots.xy_curves] == ["coupler.P"]
    x, y = curve_xy(plots.xy_curves[0])
    np.testing.assert_allclose(x, ref.points[:, 0, 0], atol=1e-9)
    np.testing.assert_allclose(y, ref.points[:, 0, 1], atol=1e-9)
    # a crank-rocker's crank turns once in 1 s: the coupler curve closes
    np.testing.assert_allclose([x[-1], y[-1]], [x[0], y[0]], atol=1e-6)


def test_the_markers_follow_the_time_cursor(win, qtbot):
    plots, ref = win.plots, reference(win)
    for k in (0, 37, 100):
        win.motion.slider.setValue(k)  # the user scrubs
        assert plots.cursor_time() == pytest.approx(k / 100, abs=1e-12)
        np.testing.assert_allclose(plots.marker_points(), ref.points[k, :, :2], atol=1e-9)
    win.motion.slider.setValue(0)
    win.playback.play()
    qtbot.waitUntil(lambda: win.playback.recording.cursor > 5, timeout=3000)
    win.playback.pause()
    k = win.playback.recording.cursor
    assert plots.cursor_time() == pytest.approx(win.playback.recording.times[k])
    np.testing.assert_allclose(plots.marker_points(), ref.points[k, :, :2], atol=1e-9)


def test_curves_grow_with_the_stream_and_are_reused_after_an_edit(win, qtbot):
    plots, rec = win.plots, win.playback.recording
    items = list(plots.q_curves) + list(plots.xy_curves)
    lengths = []
    rec.grew.connect(lambda n: lengths.append((n, len(curve_xy(plots.q_curves[0])[0]))))
    win.playback.set_range(1.0, 3000)  # a longer solve: several batches
    qtbot.waitUntil(lambda: rec.complete and rec.count == 3001, timeout=15000)
    assert len(lengths) > 1 and all(n == m for n, m in lengths)  # each batch drawn at once, nothing more
    x, y = curve_xy(plots.q_curves[0])
    np.testing.assert_allclose(y, 2 * math.pi * np.linspace(0, 1, 3001), atol=1e-9)
    assert rec.qd.shape == (3001, 4)  # rates kept in arrays preallocated for the requested frames
    np.testing.assert_allclose(rec.qd[:, 0], 2 * math.pi, atol=1e-9)
    # an edit (crank 0.8 instead of 1) clears the curves at once; the next solve refills the same items
    assert win.editor.update_joint("B", at=(0.4, 0.4 * math.sqrt(3), 0.0)) is None
    assert rec.count == 0 and all(len(curve_xy(c)[0]) == 0 for c in items) and plots.cursor_time() is None
    win.playback.set_range(1.0, 100)
    qtbot.waitUntil(lambda: rec.complete and rec.count == 101, timeout=10000)
    assert list(plots.q_curves) + list(plots.xy_curves) == items  # no item was re-created
    ref = reference(win)
    np.testing.assert_allclose(curve_xy(plots.xy_curves[0])[1], ref.points[:, 0, 1], atol=1e-9)
    np.testing.assert_allclose(win.playback.recording.qd[:101], ref.qd, atol=1e-8)


def test_another_document_gets_its_own_curves_and_an_empty_one_none(win, qtbot):
    plots, rec = win.plots, win.playback.recording
    win.document.replace(io.load(EXAMPLES / "double_pendulum.json"))  # what File ▸ Open does
    qtbot.waitUntil(lambda: rec.complete and rec.count == 101, timeout=10000)
    ref = reference(win)
    assert [c.name() for c in plots.q_curves] == ref.coord_names
    assert [c.name() for c in plots.xy_curves] == ref.point_names and len(ref.point_names) == 2
    assert [label.text for _s, label in plots.xy_legend.items] == ref.point_names
    for i, c in enumerate(plots.xy_curves):
        np.testing.assert_allclose(np.column_stack(curve_xy(c)), ref.points[:, i, :2], atol=1e-9)
    # the shoulder is driven by 0.5 sin(2 pi t)
    np.testing.assert_allclose(curve_xy(plots.q_curves[ref.coord_names.index("shoulder")])[1],
                               0.5 * np.sin(2 * math.pi * np.linspace(0, 1, 101)), atol=1e-9)
    from core.model import Mechanism

    win.document.replace(Mechanism())  # File ▸ New: nothing to solve, nothing drawn
    qtbot.waitUntil(lambda: "nothing to move" in win.motion.status_label.text(), timeout=5000)
    assert all(len(curve_xy(c)[0]) == 0 for c in plots.q_curves + plots.xy_curves)
    assert plots.cursor_time() is None and not plots.empty_label.isHidden()


def test_a_panel_made_after_the_solve_shows_the_recorded_rates(qtbot):
    # A panel made after the solve finished reads everything (rates included) from the recording.
    from app.document import Document
    from app.playback import Playback
    from app.plots import PlotsPanel

    pb = Playback(Document(io.load(EXAMPLES / "fourbar.json")))
    try:
        rec = pb.recording
        qtbot.waitUntil(lambda: rec.complete and rec.count == 101, timeout=10000)
        plots = PlotsPanel(pb)  # every batch was sent before this
        plots.set_mode("velocities")
        ref = solve_trajectory(compile_model(pb.document.mechanism), np.linspace(0.0, 1.0, 101))
        for i, c in enumerate(plots.q_curves):
            np.testing.assert_allclose(curve_xy(c)[1], ref.qd[:, i], atol=1e-8)
        np.testing.assert_allclose(rec.qdd[:101], ref.qdd, atol=1e-6)
        np.testing.assert_allclose(curve_xy(plots.xy_curves[0])[0], ref.points[:, 0, 0], atol=1e-9)
        plots.deleteLater()
    finally:
        pb.shutdown()


def test_contact_quantities_follow_the_channels_a_driver_effort_included():
    from app.plots.panel import NOT_PLOTTED, quantities
    from core.contact import ContactRun, build_model
    from core.run import Channel

    run = ContactRun(build_model(io.load(EXAMPLES / "contact_pendulum_strike.json")))
    channels = {c.name: c for c in run.channels}
    names = [q.name for q in quantities("contact", channels)]
    assert {"joint force", "joint force components", "joint torque components"} <= set(names)
    assert not {q.channel for q in quantities("contact", channels)} & NOT_PLOTTED
    # a channel the panel has no entry for (the driven joints' effort) is offered as it is: title, unit, labels
    channels["driver.effort"] = Channel("driver.effort", "driver effort", "N or N m", ("crank", "slider"))
    q = [q for q in quantities("contact", channels) if q.channel == "driver.effort"]
    assert [(x.name, x.axis, [lab for lab, _f in x.series]) for x in q] == [
        ("driver effort", "driver effort  [N or N m]", ["crank", "slider"])]

    class Rec:  # the recording's view of the channel over 3 frames
        def series(self, name):
            return np.array([[1.0, -2.0], [3.0, 4.0], [5.0, 6.0]]) if name == "driver.effort" else np.zeros((3, 0))

        def label_series(self, name, i):  # (FrameRecording.label_series of a channel that is not sparse)
            return self.series(name)[:, i]

    np.testing.assert_array_equal(q[0].series[1][1](Rec()), [-2.0, 4.0, 6.0])


def test_no_two_curves_of_a_plot_share_a_pen_up_to_twenty():
    """The legend tells up to twenty curves apart (the pile's 13 normal forces had three pairs of identical solid
    red, green and blue lines): colour and line style together differ for every pair, in the run's pens and in the
    comparison's, and no run pen looks like a comparison pen."""
    from app.plots.panel import _pens

    def look(pen):
        return pen.color().name(), pen.style()

    run, cmp_ = [look(p) for p in _pens(20)], [look(p) for p in _pens(20, dashed=True)]
    assert len(set(run)) == 20 and len(set(cmp_)) == 20 and not set(run) & set(cmp_)


def test_the_legend_stands_beside_the_view_and_covers_no_curve(make_window, qtbot):
    """In the pile's plots the legend, inside the view, covered the impact peaks (top-left) or the ends of the curves
    (bottom-right) in a plot a few names tall: it stands right of the view now, every name on screen, in a plot
    that keeps most of its width."""
    w = make_window(io.load(EXAMPLES / "contact_pile.json"))
    w.resize(1440, 900)  # the default window
    w.show()
    w.dock_plots.show()
    w.dock_plots.raise_()
    pb, plots = w.playback, w.plots
    qtbot.waitUntil(lambda: pb.recording.complete and not pb.worker.running(), timeout=120000)
    vb = plots.q_plot.getViewBox()
    for mode, n in (("normal force", 11), ("friction force", 11), ("gap", 11), ("energy", 3), ("solver iterations", 1)):
        plots.set_mode(mode)
        qtbot.waitUntil(lambda: len(plots.legend_names()) == n, timeout=5000)
        qtbot.wait(50)  # (the plot's layout settles)
        legend, view = plots.q_legend.mapRectToScene(plots.q_legend.boundingRect()), vb.sceneBoundingRect()
        assert legend.left() >= view.right(), mode  # beside the view: over no curve
        scene = plots.q_widget.mapToScene(plots.q_widget.viewport().rect()).boundingRect()
        assert scene.contains(legend), mode  # every name shown (none cut off at the plot's edge or bottom)
        assert view.width() >= 0.6 * scene.width(), mode
        for c in plots.q_curves:  # and no curve point lies under it (in the view's coordinates)
            x, y = curve_xy(c)
            if c.isVisible() and len(x):
                p = np.array([[q.x(), q.y()] for q in map(vb.mapViewToScene, map(QPointF, x, y))])
                assert not ((p[:, 0] >= legend.left()) & (p[:, 1] >= legend.top())
                            & (p[:, 1] <= legend.bottom())).any(), mode


def test_the_point_traces_legend_stands_beside_their_view_and_covers_no_trace(make_window, qtbot):
    """The point traces' legend stood inside their view, over the double pendulum's lower tip's trace (top left):
    it stands right of the view, as the time plot's, every name on screen, over no trace point, and the traces keep
    most of the plot's width."""
    w = _shown_run(make_window, qtbot, "double_pendulum.json")
    plots = w.plots
    vb = plots.xy_plot.getViewBox()
    names = ["upper.tip", "lower.tip"]
    qtbot.waitUntil(lambda: plots.xy_legend.isVisible()
                    and [label.text for _s, label in plots.xy_legend.items] == names, timeout=5000)
    qtbot.wait(50)  # (the plot's layout settles)
    legend, view = plots.xy_legend.mapRectToScene(plots.xy_legend.boundingRect()), vb.sceneBoundingRect()
    assert legend.left() >= view.right()  # beside the view: over no trace
    scene = plots.xy_widget.mapToScene(plots.xy_widget.viewport().rect()).boundingRect()
    assert scene.contains(legend)  # every name shown
    assert view.width() >= 0.6 * scene.width()
    for c in plots.xy_curves:  # and no trace point lies under it
        x, y = curve_xy(c)
        assert len(x)
        p = np.array([[q.x(), q.y()] for q in map(vb.mapViewToScene, map(QPointF, x, y))])
        assert not ((p[:, 0] >= legend.left()) & (p[:, 1] >= legend.top()) & (p[:, 1] <= legend.bottom())).any()
    q_legend = plots.q_legend.mapRectToScene(plots.q_legend.boundingRect())
    assert q_legend.left() >= plots.q_plot.getViewBox().sceneBoundingRect().right()  # (the time plot's still)


def _label_span(plots):
    """(label, axis) vertical extents in the scene of the time plot's y-axis label (written upwards) and its axis."""
    ax = plots.q_plot.getAxis("left")
    lab, box = ax.label.mapRectToScene(ax.label.boundingRect()), ax.sceneBoundingRect()
    return (lab.top(), lab.bottom()), (box.top(), box.bottom())


def _shown_run(make_window, qtbot, example: str):
    """The window of an example at the default size (1440 x 900) with the Plots dock raised, its run finished."""
    w = make_window(io.load(EXAMPLES / example))
    w.resize(1440, 900)
    w.show()
    w.dock_plots.show()
    w.dock_plots.raise_()
    qtbot.waitUntil(lambda: w.playback.recording.complete and not w.playback.worker.running(), timeout=120000)
    return w


@pytest.mark.parametrize("example", ["contact_pile.json", "fourbar.json"])
def test_the_y_axis_label_is_whole_at_the_default_size(make_window, qtbot, example):
    """At the default window size the solver plot's axis read "Newton iterations pe": every quantity's label lies
    within its axis's height, centred on it, and says what the quantity offers (not its unit alone)."""
    from app.plots.panel import axis_label

    w = _shown_run(make_window, qtbot, example)
    plots = w.plots
    ax = plots.q_plot.getAxis("left")
    assert len(plots.modes()) >= 3
    for mode in plots.modes():
        plots.set_mode(mode)
        qtbot.wait(20)
        (top, bottom), (a, b) = _label_span(plots)
        assert a - 1 <= top and bottom <= b + 1, (mode, ax.labelString())
        assert abs((top + bottom) - (a + b)) <= 4, mode  # centred (not where the previous, longer label was)
        assert ax.labelText == axis_label(plots.quantity().axis)[0], mode


def test_in_a_low_plot_the_y_axis_says_its_unit(make_window, qtbot):
    """A plot lower than its axis label (a low dock) writes the unit alone, within the axis; the title names the
    quantity and the axis's tooltip says the whole label."""
    w = make_window(io.load(EXAMPLES / "contact_sphere_drop.json"))
    w.resize(1440, 900)
    w.show()
    pb, plots = w.playback, w.plots
    qtbot.waitUntil(lambda: pb.recording.complete and not pb.worker.running(), timeout=60000)
    plots.set_mode("normal force")
    plots.q_widget.setFixedHeight(150)
    qtbot.waitUntil(lambda: plots.q_plot.getAxis("left").size().height() < 90, timeout=5000)
    qtbot.wait(50)
    ax = plots.q_plot.getAxis("left")
    (top, bottom), (a, b) = _label_span(plots)
    assert a - 1 <= top and bottom <= b + 1
    assert ax.labelText == "" and ax.labelUnits == "N"  # " (N)"
    assert ax.toolTip() == "normal force (N)" and plots.q_plot.titleLabel.text == "normal force"
    plots.q_widget.setMinimumHeight(0)
    plots.q_widget.setMaximumHeight(16777215)
    plots.q_widget.setFixedHeight(400)
    qtbot.waitUntil(lambda: plots.q_plot.getAxis("left").labelText == "normal force", timeout=5000)  # room again


def test_the_readout_gives_each_value_in_its_own_prefix_without_float_noise(make_window, qtbot):
    """The pile's gap axis is in mm; the readout said "ball1/floor -1.249e-16 ... m": it says each value with the SI
    prefix of its own size, to a ten-thousandth of the axis's span, float noise as 0 in the axis's unit."""
    w = _shown_run(make_window, qtbot, "contact_pile.json")
    pb, plots = w.playback, w.plots
    pb.seek_time(0.54)  # every body resting: the gaps in contact are float noise around 0
    ax = plots.q_plot.getAxis("left")
    for mode, unit, base in (("gap", "mm", "m"), ("normal force", "N", "N"), ("energy", "J", "J")):
        plots.set_mode(mode)
        qtbot.waitUntil(lambda: f"({unit})" in ax.labelString(), timeout=5000)
        text = plots.readout.text()
        assert text.startswith("t = 0.54 s: ") and "e-" not in text and "e+" not in text, text
        y0, y1 = plots.q_plot.getViewBox().viewRange()[1]
        step = 10.0 ** (math.floor(math.log10(y1 - y0)) - 4)
        shown = _readout_parts(plots)
        assert len(shown) == min(4, len(plots.visible_series()))
        for part in shown:
            lab, value, u = part.rsplit(" ", 2)
            v = plots.value_at_cursor(lab)
            assert u.endswith(base), part
            factor = {"": 1.0, "m": 1e-3, "µ": 1e-6, "k": 1e3}[u[:-len(base)]]
            assert abs(float(value) * factor - v) <= step / 2 + 1e-12, (part, v)
            if abs(v) < step / 2:
                assert value == "0" and u == unit, part  # (0 in the axis's unit)
            else:
                assert 0.1 <= abs(float(value)) < 1000.0, part  # (the axis's prefix, or its own)
    plots.set_mode("gap")
    assert "ball1/floor 0 mm" in plots.readout.text()  # (-1.2e-16 m)
    from app.plots.panel import readout_number

    assert readout_number(10.5234, 150.0) == "10.52" and readout_number(-1.249e-13, 420.0) == "0"
    assert readout_number(3.2156e-12, 1e-11) == "3.216e-12" and readout_number(3.0, 12.0) == "3"


def test_an_axis_of_zero_data_is_plain_around_zero(make_window, qtbot):
    """The sphere drop's friction force, angular velocity, halvings and fallbacks are identically zero. pyqtgraph kept
    the span of the plot shown before, centred on 0: after the residual's (about 1e-16) the unitless halvings axis
    wrote '(x1e-18)' and its ticks in units of 1e-18, after the normal force's the friction force axis spanned
    ±160 N. Whatever came before, such an axis spans about ±1 around 0, with plain tick labels and no multiplier."""
    w = _shown_run(make_window, qtbot, "contact_sphere_drop.json")
    plots = w.plots
    ax, vb = plots.q_plot.getAxis("left"), plots.q_plot.getViewBox()
    for before, zero in (("solver residual", "solver halvings"), ("solver residual", "solver fallback"),
                         ("normal force", "friction force"), ("energy", "angular velocity")):
        plots.set_mode(before)
        qtbot.wait(20)
        plots.set_mode(zero)
        qtbot.wait(20)
        assert plots.visible_series() and not np.abs(plots.joint_series()).any(), zero  # (all zero indeed)
        y0, y1 = vb.viewRange()[1]
        assert -1.5 < y0 < -0.9 and 0.9 < y1 < 1.5, (zero, y0, y1)
        assert ax.autoSIPrefixScale == 1.0 and ax.labelUnitPrefix == "" and "(x" not in ax.labelString(), zero
        (spacing, values), *_minor = ax.tickValues(y0, y1, ax.size().height())
        labels = ax.tickStrings(values, ax.autoSIPrefixScale, spacing)  # the major ticks' labels
        assert "0" in labels and not any("e" in t for t in labels), (zero, labels)


def test_a_plot_image_that_cannot_be_written_says_why_and_a_name_without_suffix_is_a_png(win, dialogs, tmp_path):
    from PySide6.QtGui import QImage

    plots = win.plots
    target = tmp_path / "no_such_folder" / "plot.png"
    dialogs.save_path = str(target)
    plots.image_button.click()
    assert dialogs.kinds() == ["save", "warning"] and str(target) in dialogs.calls[-1][2]  # not silently nothing
    assert not target.parent.exists()
    dialogs.save_path = str(tmp_path / "plot")  # typed without a suffix: a PNG, as the dialog's filter says
    plots.image_button.click()
    assert dialogs.kinds()[2:] == ["save"]
    img = QImage(str(tmp_path / "plot.png"))
    assert not img.isNull() and img.width() >= 800


@pytest.mark.parametrize("example, unit", [("double_pendulum.json", ""), ("contact_cam_follower.json", "N m")])
def test_an_axis_writes_its_values_plain_or_with_an_si_prefix_never_a_multiplier(make_window, qtbot, example, unit):
    """pyqtgraph scaled an axis whose unit it was not given (none, or one it has no prefix for) by a factor written in
    the label: the double pendulum's positions read '[rad or m] (x0.001)' with ticks ±500, the cam follower's joint
    torques and driver effort '[N m] (x0.001)' with ticks ±100. Every axis writes the values themselves (±0.5 rad)
    or, for a unit that takes one, with an SI prefix on the unit (the torques in mN m); never a multiplier."""
    w = _shown_run(make_window, qtbot, example)
    plots = w.plots
    ax, vb = plots.q_plot.getAxis("left"), plots.q_plot.getViewBox()
    prefixed = []
    for mode in plots.modes():
        plots.set_mode(mode)
        qtbot.wait(20)
        assert "(x" not in ax.labelString(), (mode, ax.labelString())
        assert ax.autoSIPrefixScale == 1.0 or ax.labelUnits, mode  # (a scale only as the prefix of a unit)
        y0, y1 = vb.viewRange()[1]
        (spacing, values), *_minor = ax.tickValues(y0, y1, ax.size().height())
        labels = ax.tickStrings(values, ax.autoSIPrefixScale, spacing)
        np.testing.assert_allclose([float(t) for t in labels], np.array(values) * ax.autoSIPrefixScale,
                                   rtol=1e-6, atol=1e-6 * spacing * ax.autoSIPrefixScale, err_msg=mode)
        if ax.labelUnits:
            prefixed.append((mode, ax.labelUnitPrefix + ax.labelUnits))
    if example == "double_pendulum.json":
        plots.set_mode("positions")
        qtbot.wait(20)
        y0, y1 = vb.viewRange()[1]
        (spacing, values), *_minor = ax.tickValues(y0, y1, ax.size().height())
        assert ax.tickStrings(values, ax.autoSIPrefixScale, spacing) == ["-0.5", "0", "0.5"]  # (the joints swing ±0.8)
        assert ax.labelUnits == "" and "[rad or m]" in ax.labelString()
    else:
        for mode in ("joint torque components", "driver effort"):  # (about ±0.1 N m)
            assert (mode, "mN m") in prefixed, prefixed


def test_numerical_noise_is_drawn_flat_and_said_and_a_small_residual_keeps_its_scale(make_window, qtbot):
    """The cam follower's gap (at most 3e-21 m) and its guide's reaction force (2e-13 N, with a 5 N contact force in
    the run) are round-off: drawn at their own scale they read as zeptometres and femtonewtons of motion and force.
    A plot whose data span less than the resolution of their unit (RESOLUTION: 1e-12 m; forces 1e-9 of the run's
    largest, 1e-8 N here) is drawn flat, as zero data are (±1 about 0, plain ticks, no prefix), and its title says
    so; the solver's residual (no unit, 5e-14) keeps its own scale, with scientific tick labels."""
    from app.plots.panel import flat_value, resolution

    assert resolution("m", 0.16) == 1e-12 and resolution("N", 5.0) == 1e-8 and resolution("N m", 0.1) == 1e-10
    # (another unit: round-off, 1e-12 of the run's largest; no unit: none)
    assert resolution("m/s", 1e3) == 1e-9 and resolution("m/s", 2e3) == 1e-8 and resolution("", 1.0) == 0.0
    assert flat_value(-3e-21, 0.0, 1e-12) == 0.0 and flat_value(0.15, 0.15 + 1e-16, 1e-12) == pytest.approx(0.15)
    assert flat_value(-5e-10, 0.0, 1e-12) is None and flat_value(0.0, 0.0, 0.0) == 0.0  # (a real 0.5 nm is drawn)
    w = _shown_run(make_window, qtbot, "contact_cam_follower.json")
    plots = w.plots
    ax, vb = plots.q_plot.getAxis("left"), plots.q_plot.getViewBox()

    def ticks():
        y0, y1 = vb.viewRange()[1]
        (spacing, values), *_minor = ax.tickValues(y0, y1, ax.size().height())
        return ax.tickStrings(values, ax.autoSIPrefixScale, spacing)

    for mode, unit, res in (("gap", "m", "1e-12"), ("joint force", "N", "1e-8"),
                            ("joint force components", "N", "1e-8")):
        plots.set_mode("normal force")  # (a plot of another scale before)
        qtbot.wait(20)
        plots.set_mode(mode)
        qtbot.wait(20)
        data = np.abs(plots.joint_series())
        assert 0 < data.max() < float(res), mode  # (noise indeed, not zero)
        y0, y1 = vb.viewRange()[1]
        assert -1.5 < y0 < -0.9 and 0.9 < y1 < 1.5, (mode, y0, y1)
        assert ax.labelUnits == unit and ax.labelUnitPrefix == "" and ax.autoSIPrefixScale == 1.0, ax.labelString()
        assert "0" in ticks() and not any("e" in t for t in ticks()), (mode, ticks())
        assert plots.q_plot.titleLabel.text.endswith(f" — numerical noise below {res} {unit}, drawn as 0"), mode
        assert all(part.endswith(f" 0 {unit}") for part in _readout_parts(plots)), (mode, plots.readout.text())
    plots.set_mode("normal force")  # (5 N: drawn as it is, and the title says no more than the quantity)
    qtbot.wait(20)
    assert plots.q_plot.titleLabel.text == "normal force" and vb.viewRange()[1][1] > 4.5
    plots.set_mode("solver residual")
    qtbot.wait(20)
    top = float(np.max(plots.joint_series()))
    assert 1e-14 < top < 1e-13  # (the solver's actual residual, far below its tolerance of 1e-10)
    y0, y1 = vb.viewRange()[1]
    assert y0 <= 0 and top <= y1 < 2 * top and plots.q_plot.titleLabel.text == "solver residual (of the step, scaled)"
    assert any(t.endswith("e-14") for t in ticks()) and "(x" not in ax.labelString(), ticks()


def test_the_axes_draw_the_ticks_of_their_range(make_window, qtbot):
    """An axis without a unit kept the tick labels it had drawn when its range changed (the range is given to the
    axis, which drew it again only when an SI prefix changed): after the cam follower's run the time axis read 0 ...
    0.3 s under a 3.2 s curve, the point traces' z axis 0.13 ... 0.138 m. Each axis draws the ticks of its range."""
    w = _shown_run(make_window, qtbot, "contact_cam_follower.json")
    plots = w.plots
    plots.set_mode("solver iterations")  # (a unitless y axis)
    qtbot.wait(50)
    drawn = {}
    for plot in (plots.q_plot, plots.xy_plot):
        for side in ("bottom", "left"):
            ax = plot.getAxis(side)
            drawn[ax] = []

            def record(p, axis_spec, tick_specs, text_specs, ax=ax, draw=ax.drawPicture):
                drawn[ax].append([text for _rect, _flags, text in text_specs])
                return draw(p, axis_spec, tick_specs, text_specs)

            ax.drawPicture = record  # (the tick labels each time the axis draws them)
    for plot, x, y in ((plots.q_plot, (10.0, 20.0), (10.0, 20.0)), (plots.xy_plot, (10.0, 20.0), (30.0, 40.0))):
        plot.getViewBox().setRange(xRange=x, yRange=y, padding=0.0)
    plots.grab()  # (painted)
    for plot, x, y in ((plots.q_plot, (10.0, 20.0), (10.0, 20.0)), (plots.xy_plot, (10.0, 20.0), (30.0, 40.0))):
        for side, (lo, hi) in (("bottom", x), ("left", y)):
            ax = plot.getAxis(side)
            assert drawn[ax], (plot.titleLabel.text, side)  # drawn again
            values = [float(t) for t in drawn[ax][-1]]
            assert values and all(lo <= v <= hi for v in values), (plot.titleLabel.text, side, drawn[ax][-1])


def test_a_long_title_keeps_the_plot_within_its_widget(make_window, qtbot):
    """A title longer than the view (the cam follower's joint force components, their noise note and the stale mark:
    about 150 characters) made the view as wide as the text: the plot ran out of its widget, its legend and the end
    of its curves cut off. The plot keeps its widget's width, the legend wholly on screen beside the view, and the
    title starts within the plot, centred as far as it can be, its whole text in its tooltip."""
    w = _shown_run(make_window, qtbot, "contact_cam_follower.json")
    plots = w.plots
    plots.set_mode("joint force components")
    w.playback.recording.set_stale(True)
    title = plots.q_plot.titleLabel
    assert "numerical noise" in title.text and title.text.endswith("(stale: the document changed since this run)")
    qtbot.wait(100)  # (the plot's layout settles)
    scene = plots.q_widget.mapToScene(plots.q_widget.viewport().rect()).boundingRect()
    legend = plots.q_legend.mapRectToScene(plots.q_legend.boundingRect())
    view = plots.q_plot.getViewBox().sceneBoundingRect()
    assert plots.q_plot.sceneBoundingRect().width() <= scene.width() + 1, (plots.q_plot.sceneBoundingRect(), scene)
    assert scene.contains(legend) and view.right() <= legend.left() and view.right() < scene.right()
    text = title.item.mapRectToScene(title.item.boundingRect())
    assert text.width() > view.width()  # (longer than the view indeed)
    assert text.left() >= plots.q_plot.sceneBoundingRect().left() - 1
    assert title.toolTip() == title.text


def _readout_parts(plots) -> list[str]:
    """The readout's 'label value [unit]' parts, after 't = ... s: '."""
    return plots.readout.text().split(": ", 1)[1].split(", ")


def test_the_readout_follows_the_series_ticked_off_and_on(win):
    """Unticking C left 'C 0.573' in the readout until the cursor or the y range changed (the legend already named
    A, B, D): the readout names the first four visible series whenever a series is ticked or unticked."""
    plots = win.plots
    win.playback.seek_time(0.37)
    assert [p.split(" ")[0] for p in _readout_parts(plots)] == ["A", "B", "C", "D"]
    plots.set_series_visible("C", False)
    assert plots.visible_series() == ["A", "B", "D"]
    assert [p.split(" ")[0] for p in _readout_parts(plots)] == ["A", "B", "D"], plots.readout.text()
    plots.set_series_visible("C", True)
    assert [p.split(" ")[0] for p in _readout_parts(plots)] == ["A", "B", "C", "D"], plots.readout.text()


def test_view_all_fits_the_whole_run_after_a_zoom_as_the_a_button_does(make_window, qtbot):
    """Right-click > View All after zooming in kept the zoomed time range (the curves, clipped to the view, gave it
    their clipped bounds) and spanned y ±1 about the flat part in view; it fits the whole run, as "A" does."""
    w = _shown_run(make_window, qtbot, "contact_sphere_drop.json")
    plots = w.plots
    plots.set_mode("gap")
    vb = plots.q_plot.getViewBox()
    qtbot.wait(100)
    vb.prepareForPaint()
    (x0, x1), (y0, y1) = vb.viewRange()
    assert x0 <= 0.0 and x1 >= 1.0 and y1 - y0 > 0.3  # the whole run: 1 s, the ball from 0.4 m down to 0
    vb.scaleBy((0.2, 0.2), center=(0.5, 0.1))
    qtbot.wait(50)
    (z0, z1), _ = vb.viewRange()
    assert z1 - z0 < 0.3
    [view_all] = [a for a in vb.menu.actions() if a.text() == "View All"]
    view_all.trigger()
    qtbot.wait(100)
    vb.prepareForPaint()
    (a0, a1), (b0, b1) = vb.viewRange()
    assert a0 == pytest.approx(x0, abs=0.01) and a1 == pytest.approx(x1, abs=0.01), vb.viewRange()
    assert b0 == pytest.approx(y0, abs=0.01) and b1 == pytest.approx(y1, abs=0.01), vb.viewRange()


def test_a_resting_force_reads_in_newtons_on_an_axis_in_kilonewtons(make_window, qtbot):
    """The readout followed the y axis's prefix: with impact peaks of 1.5 kN the pile's resting forces of about 10 N
    read '0.0105 kN'. Each value is written with the SI prefix of its own size, to a ten-thousandth of the axis's
    span (readout_number): '10.5 N' on an axis spanning 1.5 kN."""
    w = _shown_run(make_window, qtbot, "contact_pile.json")
    pb, plots = w.playback, w.plots
    pb.seek_time(0.54)  # every body resting
    plots.set_mode("normal force")
    vb, ax = plots.q_plot.getViewBox(), plots.q_plot.getAxis("left")
    vb.setYRange(-100.0, 1500.0, padding=0)  # an axis in kN (the peaks of a longer pile's impacts)
    qtbot.waitUntil(lambda: ax.labelUnitPrefix == "k", timeout=5000)
    parts = _readout_parts(plots)
    assert len(parts) == min(4, len(plots.visible_series())) and plots.readout.text().endswith(" N"), parts
    for part in parts:
        lab, value, unit = part.rsplit(" ", 2)
        v = plots.value_at_cursor(lab)
        assert 1.0 < v < 1000.0 and unit == "N", (part, v)  # (resting weights of a few newtons)
        assert abs(float(value) - v) <= 0.05 + 1e-9, (part, v)  # to 0.1 N: a ten-thousandth of 1.6 kN
    from app.plots.panel import readout_quantity

    assert readout_quantity(10.5234, 1500.0, "N", "k") == "10.5 N"  # (0.0105 kN)
    assert readout_quantity(1520.34, 1500.0, "N", "k") == "1.5203 kN" == readout_quantity(1520.34, 1500.0, "N")
    assert readout_quantity(150.2, 1500.0, "N", "k") == "0.1502 kN" and readout_quantity(0.981, 1.2, "N") == "0.981 N"
    assert readout_quantity(-1.249e-16, 0.42, "m", "m") == "0 mm" and readout_quantity(0.0123, 0.42, "m") == "12.3 mm"
    assert readout_quantity(0.0523, 0.42, "N m", "m") == "52.3 mN m" and readout_quantity(0.0, 1.0, "J") == "0 J"
    assert readout_quantity(2.5e-7, 1e-6, "m", "µ") == "0.25 µm" and readout_quantity(2e4, 1e5, "N") == "20 kN"


def test_a_plot_image_is_written_whole_or_not_at_all_with_the_reason(win, dialogs, tmp_path, monkeypatch, qtlog):
    """Plots > Image... as SVG: a folder of the name, or an old file the writer could not replace, was 'saved' with no
    word (only a check that the file existed after painting); a missing folder said "cannot write 'X': cannot write
    'X'" and Qt printed about 150 'Painter not active' warnings; .jpg and .bmp were written although the dialog offers
    PNG or SVG; the SVG was painted over the old file in place. Now the image is drawn in memory and written
    atomically (core.io.write_atomic), a failure said once with its reason, the old file kept."""
    import os
    import xml.etree.ElementTree as ET

    plots = win.plots

    def export(path) -> str:
        """The warning the export gave ('' when none)."""
        n = len(dialogs.calls)
        plots._export(plots.export_image, str(path))
        shown = [c for c in dialogs.calls[n:] if c[0] == "warning"]
        return shown[0][2] if shown else ""

    (tmp_path / "dir.svg").mkdir()
    assert export(tmp_path / "dir.svg") == f"Cannot write '{tmp_path / 'dir.svg'}': it is a folder"
    assert export(tmp_path / "dir.svg" / "no" / "p.svg") == (
        f"Cannot write '{tmp_path / 'dir.svg' / 'no' / 'p.svg'}': no such folder '{tmp_path / 'dir.svg' / 'no'}'")
    (tmp_path / "file.txt").write_text("a file")
    why = export(tmp_path / "file.txt" / "p.svg")
    assert why.startswith(f"Cannot write '{tmp_path / 'file.txt' / 'p.svg'}': ") and why.count("p.svg") == 1, why
    assert "folder" in why, why
    for name in ("p.jpg", "p.bmp", "p.pdf"):
        assert export(tmp_path / name) == f"'{tmp_path / name}': the plot is saved as PNG or SVG: give the file " \
                                          f"a .png or .svg name", name
        assert not (tmp_path / name).exists()
    for name in ("old.svg", "old.png"):  # the writer fails: the old file is kept whole
        old = tmp_path / name
        old.write_text("OLD")

        def refuse(src, dst):
            raise PermissionError(13, "Permission denied")

        with monkeypatch.context() as m:
            m.setattr(os, "replace", refuse)
            assert export(old) == f"Cannot write '{old}': Permission denied"
        assert old.read_text() == "OLD" and sorted(p.name for p in tmp_path.iterdir()) == sorted(
            ["dir.svg", "file.txt", "old.svg"] + (["old.png"] if name == "old.png" else []))  # (no part file left)
    assert not [r for r in qtlog.records if "Painter" in r.message or "QPainter" in r.message]
    assert export(tmp_path / "old.svg") == "" and export(tmp_path / "old.png") == ""  # written over the old ones
    root = ET.parse(tmp_path / "old.svg").getroot()
    assert root.tag.endswith("svg") and len(list(root.iter())) > 10
    from PySide6.QtGui import QImage

    img = QImage(str(tmp_path / "old.png"))
    assert not img.isNull() and img.width() >= 800


def test_beyond_the_legend_the_point_traces_are_named_by_hovering(make_window, qtbot):
    """Twenty named points on the four-bar's coupler: more than LEGEND_MAX traces, so no legend (it would fill the
    plot); a note in its place says so, and hovering a trace names it (a trace had no name anywhere then). The
    mouse over a point of trace P7's data (its position at frame 40, mapped to the scene) names P7; far from every
    trace, nothing."""
    import json

    from app.plots.panel import LEGEND_MAX

    doc = json.loads((EXAMPLES / "fourbar.json").read_text())
    coupler = next(b for b in doc["bodies"] if b["name"] == "coupler")
    coupler["points"] = {f"P{i}": [2.5 + 0.3 * i, 3.5 - 0.2 * i, 0.0] for i in range(20)}
    w = make_window(io.loads(json.dumps(doc)))
    w.resize(1440, 900)
    w.show()
    w.dock_plots.show()
    w.dock_plots.raise_()
    qtbot.waitUntil(lambda: w.playback.recording.complete and not w.playback.worker.running(), timeout=60000)
    plots = w.plots
    names = [f"coupler.P{i}" for i in range(20)]
    assert plots._point_names == names and len(names) > LEGEND_MAX
    qtbot.waitUntil(lambda: plots.xy_legend.note.isVisible(), timeout=5000)
    assert not plots.xy_legend.names()
    assert plots.xy_legend.note.toPlainText() == "20 traces:\nhover one for its name"
    qtbot.wait(50)  # (the plot's layout settles)
    vb = plots.xy_plot.getViewBox()
    P = w.playback.recording.points
    i0, i1 = plots._plane
    for i in (7, 13):
        at = vb.mapViewToScene(QPointF(float(P[40, i, i0]), float(P[40, i, i1])))
        assert plots.trace_at(at) == f"coupler.P{i}"
        plots._hover_trace(at)
        assert plots.xy_hover.isVisible() and plots.xy_hover.textItem.toPlainText() == f"coupler.P{i}"
    corner = vb.sceneBoundingRect().topLeft() + QPointF(2.0, 2.0)
    far = vb.mapSceneToView(corner)
    sx, sy = vb.viewPixelSize()
    d = np.hypot((P[..., i0] - far.x()) / sx, (P[..., i1] - far.y()) / sy).min()
    assert d > 6  # (the view's corner is no trace's: the hover names none there)
    plots._hover_trace(corner)
    assert plots.trace_at(corner) == "" and not plots.xy_hover.isVisible()


def test_a_contact_document_waiting_for_run_shows_none_of_the_previous_documents_series(make_window, qtbot):
    # (user test s56, S7: after File > Open of a long contact scene, which waits for Run, the series list still listed
    # the previous document's pairs and the plot its time axis)
    win = make_window(io.load(EXAMPLES / "contact_sphere_drop.json"))
    plots, rec = win.plots, win.playback.recording
    qtbot.waitUntil(lambda: rec.complete and rec.count > 1, timeout=60000)
    plots.set_mode("gap")
    assert plots.series_list.model_.labels  # the sphere's pair
    pile = io.load(EXAMPLES / "contact_pile.json")
    pile.set_simulation(duration=20.0)  # (2,000 steps: it waits for Run)
    win.document.replace(pile)  # what File > Open does
    assert not win.playback.auto_runs() and "press Run (F5)" in win.motion.status_label.text()
    assert plots.series_list.model_.labels == () and plots.quantities == []
    assert all(len(curve_xy(c)[0]) == 0 for c in plots.q_curves)


def test_the_driver_effort_says_that_friction_on_a_pushers_face_can_carry_part_of_the_weight(make_window, qtbot):
    """User test s58: a pusher's driver effort read about 4 % below mu M g + M a, documented (docs/contact.md,
    Statically indeterminate contacts: friction on the pusher's face can carry part of the pushed weight) but not said
    where the series are: a designer reading the effort plot could not know. The quantity's entry and each of its
    series' rows say so in their tooltip; other quantities' rows do not."""
    w = _shown_run(make_window, qtbot, "contact_parts_feeder.json")
    plots = w.plots
    i = plots.modes().index("driver effort")
    tip = plots.mode_combo.itemData(i, Qt.ToolTipRole)
    assert "mu M g + M a" in tip and "Statically indeterminate contacts" in tip
    plots.set_mode("driver effort")
    model = plots.series_list.model()
    assert model.rowCount() >= 1
    for r in range(model.rowCount()):
        assert model.data(model.index(r, 0), Qt.ToolTipRole) == tip
    plots.set_mode("energy")
    assert not model.data(model.index(0, 0), Qt.ToolTipRole)
    assert not plots.mode_combo.itemData(plots.modes().index("energy"), Qt.ToolTipRole)
