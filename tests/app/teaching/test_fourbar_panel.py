"""The Four-bar dock: the teaching report of the open four-bar, recomputed once per burst of edits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.teaching import DEBOUNCE_MS, NOT_A_FOURBAR, grashof_text, transmission_curve
from core import io
from core.fourbar import FourBar, report
from tests.app.playback.test_playback import fourbar

EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[3] / "resources" / "examples"


def law_of_cosines_angle(x: float, y: float, opposite: float) -> float:
    """Angle (degrees) between sides x and y of a triangle whose third side is `opposite`."""
    return math.degrees(math.acos((x * x + y * y - opposite * opposite) / (2 * x * y)))


def test_builtin_example_shows_a_crank_rocker_with_its_grashof_numbers(make_window):
    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    fb = win.fourbar
    assert fb.is_fourbar() and fb.found.crank == "crank" and fb.found.joints == ("A", "B", "C", "D")
    # Drawn lengths: g = |D - A| = 4, a = |(0.5, 0.866)| = 1, b = |(3.331, 2.924) - (0.5, 0.866)| = 3.5,
    # c = |(3.331, 2.924) - (4, 0)| = 3 (to 4 digits). s = a = 1, l = g = 4, p = c = 3, q = b = 3.5:
    # s + l = 5 < p + q = 6.5 (Grashof) and the shortest link is the crank: a crank-rocker.
    assert fb.text("class") == "crank-rocker"
    assert "1 + 4 = 5 ≤ 3 + 3.5 = 6.5" in fb.text("grashof") and "(Grashof)" in fb.text("grashof")
    assert fb.text("rotating").startswith("crank (crank)")
    assert fb.text("crank_range") == "full turn"
    a, b, c, g = 1.0, 3.5, 3.0, 4.0
    # rocker limits: crank and coupler extended (|AC| = a + b) or folded (|AC| = b - a); theta4 = 180 - angle at D
    ext = 180 - law_of_cosines_angle(g, c, a + b)
    fold = 180 - law_of_cosines_angle(g, c, b - a)
    assert f"θ4 = {ext:.1f}° and {fold:.1f}°" in fb.text("rocker_limits")
    assert f"swing {fold - ext:.1f}°" in fb.text("rocker_limits")
    # transmission angle: |BD| = g - a at theta2 = 0 (smallest mu), g + a at theta2 = 180 (largest)
    mu_min, mu_max = law_of_cosines_angle(b, c, g - a), law_of_cosines_angle(b, c, g + a)
    assert f"min {mu_min:.1f}° at θ2 = 0.0°" in fb.text("transmission")
    assert f"max {mu_max:.1f}° at θ2 = 180.0°" in fb.text("transmission")
    assert "crank and coupler extended" in fb.text("toggles") and "crank and coupler folded" in fb.text("toggles")
    # the plot: mu over a full crank turn, its extremes where the text says
    x, y = fb.mu_curve.getOriginalDataset()
    assert x[0] == pytest.approx(-180) and x[-1] == pytest.approx(180) and len(x) == 721
    assert y.min() == pytest.approx(mu_min, abs=0.05) and x[np.argmin(y)] == pytest.approx(0.0, abs=0.5)
    assert y.max() == pytest.approx(mu_max, abs=0.05)


def test_jansen_linkage_is_not_a_fourbar(make_window):
    win = make_window(io.load(EXAMPLES / "jansen.json"))
    fb = win.fourbar
    assert not fb.is_fourbar() and fb.found is None
    assert fb.message.text().startswith(NOT_A_FOURBAR) and fb.reason in fb.message.text()
    assert fb.stack.currentWidget() is fb.message


def test_an_edit_updates_the_report_after_one_debounce(make_window, qtbot):
    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    fb = win.fourbar
    n = fb.analyses
    # two edits in a burst: crank 0.8 along its direction, then 0.6 (the drawing still closes)
    for r in (0.8, 0.6):
        assert win.editor.update_joint("B", at=(r / 2, r / 2 * math.sqrt(3), 0.0)) is None
    assert fb.pending() and fb.analyses == n and "1 + 4 = 5" in fb.text("grashof")  # not yet: debounced
    qtbot.waitUntil(lambda: not fb.pending(), timeout=DEBOUNCE_MS * 20)
    assert fb.analyses == n + 1  # one analysis for the burst
    b = math.hypot(3.331 - 0.3, 2.924 - 0.3 * math.sqrt(3))  # new coupler |C - B|
    c = math.hypot(3.331 - 4, 2.924)
    # s = a = 0.6, l = g = 4, p = c ~ 3, q = b: s + l = 4.6 < p + q: still a crank-rocker
    assert f"0.6 + 4 = 4.6 ≤ {c:.4g} + {b:.4g} = {b + c:.4g}" in fb.text("grashof")
    assert fb.text("class") == "crank-rocker"
    # the Plots dock follows the same edit: the coupler curve of the new geometry
    rec = win.playback.recording
    qtbot.waitUntil(lambda: rec.complete and rec.count == 101, timeout=10000)
    from core.kinematics import compile_model, solve_trajectory

    ref = solve_trajectory(compile_model(win.document.mechanism), np.linspace(0.0, 1.0, 101))
    np.testing.assert_allclose(np.column_stack(win.plots.xy_curves[0].getOriginalDataset()), ref.points[:, 0, :2], atol=1e-9)
    # deleting the rocker leaves no four-bar
    assert win.editor.delete(bodies=["rocker"])
    qtbot.waitUntil(lambda: not fb.pending(), timeout=DEBOUNCE_MS * 20)
    assert not fb.is_fourbar()
    win.action_set.undo.trigger()
    qtbot.waitUntil(lambda: fb.is_fourbar(), timeout=DEBOUNCE_MS * 20)
    assert fb.text("class") == "crank-rocker"


def test_non_grashof_document_reports_a_triple_rocker_with_crank_limits(make_window):
    # g = 4, a = b = c = 3: s + l = 3 + 4 = 7 > p + q = 3 + 3 = 6, non-Grashof
    win = make_window(fourbar(4.0, 3.0, 3.0, 3.0))
    fb = win.fourbar
    assert "3 + 4 = 7 > 3 + 3 = 6" in fb.text("grashof") and "(non-Grashof)" in fb.text("grashof")
    assert fb.text("class").startswith("triple-rocker") and fb.text("rotating") == "none"
    # crank limit: coupler and rocker extended, |BD| = b + c = 6: angle at A between AB and AD
    lim = law_of_cosines_angle(3.0, 4.0, 6.0)
    assert f"{-lim:.1f}°".replace("-", "−") in fb.text("crank_range") and f"{lim:.1f}°" in fb.text("crank_range")
    assert "coupler and rocker collinear (crank limit)" in fb.text("toggles")


def test_transmission_curve_breaks_where_the_loop_does_not_close():
    fb = FourBar(4.0, 3.0, 3.0, 3.0)  # the crank swings within +-117.3 degrees (|BD| <= b + c = 6)
    x, y, connect = transmission_curve(fb)
    lim = law_of_cosines_angle(3.0, 4.0, 6.0)
    assert x.min() >= -lim - 0.5 and x.max() <= lim + 0.5 and connect[:-1].all() and not connect[-1]
    # mu from the law of cosines at each crank angle: |BD|^2 = a^2 + g^2 - 2 a g cos theta2 = b^2 + c^2 - 2 b c cos mu
    bd2 = 9 + 16 - 24 * np.cos(np.radians(x))
    np.testing.assert_allclose(y, np.degrees(np.arccos((9 + 9 - bd2) / 18)), atol=1e-6)
    assert grashof_text(report(FourBar(4, 2, 3, 3))) == "2 + 4 = 6 ≤ 3 + 3 = 6".replace("≤", "=")  # change point


def test_links_row_names_the_bodies_and_joints_of_each_role(make_window):
    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    links = win.fourbar.text("links")
    # lengths from the drawing as in the Grashof test: g = 4 (A-D), a = 1 (A-B), b = 3.5 (B-C), c = 3 (C-D)
    for part in ("ground g = 4 m (ground, A–D)", "crank a = 1 m (crank, A–B)", "coupler b = 3.5 m (coupler, B–C)",
                 "rocker c = 3 m (rocker, C–D)"):
        assert part in links


def test_the_transmission_plot_labels_its_end_ticks(make_window, qtbot):
    """Every tick of the mu plot is labelled, the ends included (-180 and 180 deg of crank angle, 0 and 180 deg of
    mu): pyqtgraph leaves out a label that would reach past its axis, which the end labels did at 2 % padding."""
    from PySide6.QtGui import QPainter, QPixmap
    from PySide6.QtWidgets import QDockWidget

    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    win.resize(1440, 900)
    win.show()
    dock = win.fourbar
    while not isinstance(dock, QDockWidget):
        dock = dock.parentWidget()
    dock.raise_()  # (tabbed with Structure and Plots)
    fb = win.fourbar
    qtbot.waitUntil(lambda: fb.mu_widget.isVisible() and fb.mu_widget.width() > 200)
    canvas = QPixmap(10, 10)
    painter = QPainter(canvas)
    try:
        for side, wanted in (("bottom", {"-180", "-90", "0", "90", "180"}),
                             ("left", {"0", "45", "90", "135", "180"})):
            _axis, _ticks, texts = fb.mu_plot.getAxis(side).generateDrawSpecs(painter)
            assert {t[2] for t in texts} == wanted, side
    finally:
        painter.end()


def test_grashof_text_never_reads_equal_sums_as_unequal():
    """A change-point linkage (g 5, a 2, b 4, c 3: s + l = p + q = 7) drawn to three decimals measured 5e-5 off and
    read "2 + 5 = 7 > 3 + 4 = 7 (non-Grashof)": the sums get as many digits as tell them apart; an exact change point
    and an ordinary crank-rocker keep four."""
    near = report(FourBar(g=5.0, a=2.00005, b=4.0, c=3.0))
    assert near["grashof"] == "non-grashof" and grashof_text(near) == "2.00005 + 5 = 7.00005 > 3 + 4 = 7"
    assert grashof_text(report(FourBar(g=5.0, a=2.0, b=4.0, c=3.0))) == "2 + 5 = 7 = 3 + 4 = 7"
    assert grashof_text(report(FourBar(g=4.0, a=1.0, b=3.5, c=3.0))) == "1 + 4 = 5 ≤ 3 + 3.5 = 6.5"


def test_a_double_rocker_drawn_below_the_ground_line_reports_its_own_circuit(make_window, qtbot):
    """Edit the example's crank and coupler joints into a Grashof double-rocker (g 4, a 3, b 1, c 3.5) drawn with the
    crank below the ground line (theta2 = -60 deg). The drawing moves on the circuit below the ground line: the dock
    showed the crank range and rocker limits of the mirror-image circuit above it (38.6 ... 78.6 deg, not holding
    the drawn -60 deg)."""
    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    fb = win.fourbar
    g, a, b, c = 4.0, 3.0, 1.0, 3.5
    t2 = math.radians(-60.0)
    B = (a * math.cos(t2), a * math.sin(t2))
    # C: the rocker end at distance b from B and c from D = (4, 0), the intersection left of B -> D (open branch)
    dx, dy = g - B[0], -B[1]
    L = math.hypot(dx, dy)
    x = (L * L + b * b - c * c) / (2 * L)
    y = math.sqrt(b * b - x * x)
    C = (B[0] + (x * dx - y * dy) / L, B[1] + (x * dy + y * dx) / L)
    win.editor.update_joint("B", at=(B[0], B[1], 0.0))
    win.editor.update_joint("C", at=(C[0], C[1], 0.0))
    qtbot.waitUntil(lambda: not fb.pending(), timeout=DEBOUNCE_MS * 20)
    assert fb.text("class") == "double-rocker"
    # crank limits: coupler and rocker collinear, |BD| = c - b and c + b; below the ground line: negative angles
    lo, hi = law_of_cosines_angle(a, g, c + b), law_of_cosines_angle(a, g, c - b)
    assert fb.text("crank_range") == f"−{lo:.1f}° … −{hi:.1f}°"
    # rocker limits: crank and coupler collinear, |AC| = a + b and a - b; theta4 = -(180 - angle at D)
    r1, r2 = 180 - law_of_cosines_angle(g, c, a - b), 180 - law_of_cosines_angle(g, c, a + b)
    assert fb.text("rocker_limits").startswith(f"θ4 = −{r1:.1f}° and −{r2:.1f}°")
    assert "drawn at θ2 = −60.0°" in fb.text("convention")


def test_a_link_of_no_length_is_named_with_its_joints(make_window, qtbot):
    """Moving joint B onto A (a typo in B's `at`) leaves the crank with no length: the dock said only "must be a
    positive finite length, got 0.0", naming neither the link nor the joints to fix."""
    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    fb = win.fourbar
    a_at = win.document.mechanism.joint("A").at  # (the crank runs from A to B)
    assert win.editor.update_joint("B", at=a_at) is None
    qtbot.waitUntil(lambda: not fb.pending(), timeout=DEBOUNCE_MS * 20)
    assert not fb.is_fourbar()
    assert fb.message.text() == f"{NOT_A_FOURBAR}\n(joints A and B are at the same point: the crank has no length)"
    win.document.undo_stack.undo()
    qtbot.waitUntil(lambda: not fb.pending() and fb.is_fourbar(), timeout=DEBOUNCE_MS * 20)
    assert fb.text("class") == "crank-rocker"


def test_no_angle_of_the_tab_reads_minus_zero(make_window, qtbot):
    """The example with joint B moved to (1.25, 2.165): crank 2.5 at 60 degrees, a triple-rocker (2.215 + 4 > 2.5 + 3).
    Its smallest transmission angle is at crank 0 (|BD| = g - a), and the tab read "at θ2 = −0.0°"; its rocker swings
    between -L and L through 180 degrees, which the row now says."""
    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    fb = win.fourbar
    win.editor.update_joint("B", at=(1.25, 2.165, 0.0))
    qtbot.waitUntil(lambda: not fb.pending(), timeout=DEBOUNCE_MS * 20)
    f = fb.found.fourbar
    assert fb.text("class").startswith("triple-rocker")
    mu_min = law_of_cosines_angle(f.b, f.c, f.g - f.a)
    assert f"min {mu_min:.1f}° at θ2 = 0.0°" in fb.text("transmission")
    # crank and coupler only extend (|AC| = a + b): angle at D from the law of cosines, limits +-(180 - it), and the
    # rocker swings through 180 degrees, 2 * (angle at D)
    at_d = law_of_cosines_angle(f.g, f.c, f.a + f.b)
    assert fb.text("rocker_limits") == f"θ4 = −{180 - at_d:.1f}° and {180 - at_d:.1f}°   (swing {2 * at_d:.1f}°, through 180.0°)"
    assert not any("−0.0°" in fb.text(k) for k in fb.fields)


def test_an_angle_a_rounding_below_zero_reads_zero():
    # (the row's formatter alone: a report whose minimum's crank angle is -1e-14, as a drawn linkage's was)
    from app.teaching import summary_rows
    from core.fourbar import find_fourbar

    found = find_fourbar(io.load(EXAMPLES / "fourbar.json"))
    rep = report(found.fourbar, found.branch, theta2=found.theta2_design)
    rep["transmission_angle_deg"] = dict(rep["transmission_angle_deg"], at_crank_deg=-1.3e-14, max_at_crank_deg=-0.04)
    row = summary_rows(found, rep)["transmission"]
    assert "at θ2 = 0.0°," in row and row.count("θ2 = 0.0°") == 2 and "−0.0" not in row


def test_lengths_that_differ_are_shown_differently():
    """Lengths 1, 1.0000000001, 1, 1 are non-Grashof (1 + 1.0000000001 > 1 + 1): the Links row read "crank a = 1 m"
    beside the others' 1 m."""
    from app.teaching import summary_rows
    from core.fourbar import FoundFourBar

    fbar = FourBar(1.0, 1.0000000001, 1.0, 1.0)
    found = FoundFourBar(fbar, "ground", "crank", "coupler", "rocker", ("A", "B", "C", "D"), 1.0, 1)
    rows = summary_rows(found, report(fbar))
    assert "crank a = 1.0000000001 m" in rows["links"] and "ground g = 1 m" in rows["links"]
    assert rows["slpq"].startswith("s = 1 (ground), l = 1.0000000001 (crank)")


def test_the_contact_examples_four_bars_are_shown_in_their_plane(make_window):
    """contact_fourbar_swing.json is the example at a tenth of its size drawn in the x-z plane of a spatial document
    (pins along y): the tab showed "Not a single-loop planar four-bar". It reads as the example does, seen from the
    front (x to the right, z up); the parts feeder's four-bar is shown without its free box."""
    win = make_window(io.load(EXAMPLES / "contact_fourbar_swing.json"))
    fb = win.fourbar
    assert fb.is_fourbar() and fb.text("class") == "crank-rocker"
    # lengths from the joints' (x, z): A (0, 0.5), B (0.05, 0.5866), C (0.3331, 0.7924), D (0.4, 0.5)
    a, b, c, g = math.hypot(0.05, 0.0866), math.hypot(0.2831, 0.2058), math.hypot(0.0669, 0.2924), 0.4
    assert f"{a:.4g} + {g:.4g} = {a + g:.4g} ≤ {c:.4g} + {b:.4g} = {b + c:.4g}" in fb.text("grashof")
    ext, fold = 180 - law_of_cosines_angle(g, c, a + b), 180 - law_of_cosines_angle(g, c, b - a)
    assert fb.text("rocker_limits").startswith(f"θ4 = {ext:.1f}° and {fold:.1f}°")
    assert "from the ground line A→D in the x-z plane, seen with x to the right and z up" in fb.text("convention")
    assert "drawn at θ2 = 60.0°" in fb.text("convention") and "assembly open" in fb.text("convention")
    win2 = make_window(io.load(EXAMPLES / "contact_parts_feeder.json"))
    assert win2.fourbar.is_fourbar() and "(floor, A–D)" in win2.fourbar.text("links")
    assert "box" not in win2.fourbar.text("links")


def test_a_planar_four_bar_with_a_free_ball_is_shown(make_window):
    from core.model import Body

    mech = fourbar(4.0, 1.0, 3.5, 3.0)
    mech.add_body(Body("ball", density=1000.0, shape={"type": "sphere", "radius": 0.3}), position=(0.0, 0.0))
    win = make_window(mech)
    assert win.fourbar.is_fourbar() and win.fourbar.text("class") == "crank-rocker"
    assert "1 + 4 = 5 ≤ 3 + 3.5 = 6.5" in win.fourbar.text("grashof")


@pytest.mark.parametrize("normal, seen", [
    ((0.0, 0.0, 1.0), "A→D; drawn at"),  # the x-y plane, as in a planar document: nothing to add
    ((1.0, 0.0, 0.0), "A→D in the y-z plane, seen with y to the right and z up; drawn at"),
    ((0.6, 0.0, 0.8), "A→D in the plane normal to (0.6, 0, 0.8), seen from the tip of that normal; drawn at")])
def test_the_angles_row_says_how_a_four_bar_out_of_the_x_y_plane_is_seen(normal, seen):
    from app.teaching import summary_rows
    from core.fourbar import FoundFourBar

    fbar = FourBar(4.0, 1.0, 3.5, 3.0)
    found = FoundFourBar(fbar, "ground", "crank", "coupler", "rocker", ("A", "B", "C", "D"), 1.0, 1, normal)
    assert seen in summary_rows(found, report(fbar))["convention"]
