"""The transmission angle of the teaching analysis against the geometry of the closed-form positions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.fourbar import FourBar, closed_form, report, transmission_angle


def test_transmission_angle_is_the_angle_between_coupler_and_rocker():
    fb = FourBar(g=4.0, a=1.0, b=3.5, c=3.0)  # the built-in crank-rocker
    t2 = np.linspace(-np.pi, np.pi, 181)
    for branch in (1, -1):
        t3, t4, ok = closed_form(fb, t2, branch)
        mu, ok2 = transmission_angle(fb, t2, branch)
        assert ok.all() and (ok == ok2).all()  # a crank-rocker closes at every crank angle
        # mu is the angle at C between C->B (direction t3 + pi) and C->D (direction t4 + pi): |t4 - t3| wrapped to [0, pi]
        expected = np.abs(np.angle(np.exp(1j * (t4 - t3))))
        np.testing.assert_allclose(mu, expected, atol=1e-12)
    # At crank angle 0 the diagonal BD = g - a = 3: cos mu = (b² + c² - 9) / (2 b c) = 12.25 / 21.
    assert transmission_angle(fb, 0.0)[0] == np.arccos(12.25 / 21)


def test_a_parallelogram_turns_crank_and_rocker_fully_and_a_rhombus_lists_its_one_toggle_once():
    """Change-point four-bars with tied lengths: in a parallelogram (ground 2, crank 1, coupler 2, rocker 1) both
    shortest links are the crank and the rocker, and assembled as a parallelogram the rocker stays parallel to the
    crank (theta4 = theta2), so it turns fully too; a rhombus (all 1) has a shortest ground, so both turn fully.  The
    rhombus' only crank-coupler toggle (crank 0, rocker 180 degrees) is its own mirror image: listed once."""
    from core.fourbar import classify, report

    para = FourBar(2.0, 1.0, 2.0, 1.0)
    assert classify(para)["grashof"] == "equal"
    assert classify(para)["fully_rotating"] == ["crank", "rocker"]
    # (the parallelogram is branch +1 above the ground line and -1 below it: C left of B -> D, the module's branches)
    for t2, branch in ((np.linspace(0.1, 3.0, 7), 1), (np.linspace(-3.0, -0.1, 7), -1)):
        _t3, t4, ok = closed_form(para, t2, branch)
        assert ok.all() and np.allclose(t4, t2)
    rep = report(para)
    assert rep["rocker_limits_deg"] is None
    rhombus = report(FourBar(1.0, 1.0, 1.0, 1.0))
    assert rhombus["fully_rotating"] == ["crank", "rocker"]
    kinds = [(t["kind"], round(t["crank_deg"], 9) % 360.0) for t in rhombus["toggles"]]
    assert len(kinds) == len(set(kinds)) == 1
    # a strict Grashof crank-rocker keeps one shortest link
    assert classify(FourBar(4.0, 2.0, 3.5, 3.0))["fully_rotating"] == ["crank"]


@pytest.mark.parametrize("lengths", [(1.0, 1.0, 1.0, 1.0), (4.0, 1.0, 3.5, 3.0), (1.0, 3.0, 3.5, 4.0)])
def test_transmission_extremes_are_at_crank_0_and_180_degrees(lengths):
    """mu depends on the crank angle only through |BD|^2 = a^2 + g^2 - 2 a g cos t2 and grows with it: for a crank
    that turns fully, min mu at t2 = 0 (|BD| = |g - a|) and max at 180 degrees (|BD| = g + a), by the law of cosines
    in triangle BCD.  A rhombus' minimum is 0 (B on D), where the sampled value read 0.5 degrees."""
    g, a, b, c = lengths
    fb = FourBar(g, a, b, c)
    rep = report(fb)
    assert "crank" in rep["fully_rotating"]

    def mu(bd):
        return math.degrees(math.acos(max(-1.0, min(1.0, (b * b + c * c - bd * bd) / (2 * b * c)))))

    ta = rep["transmission_angle_deg"]
    assert ta["min"] == pytest.approx(mu(abs(g - a)), abs=1e-9) and ta["at_crank_deg"] == pytest.approx(0.0, abs=1e-9)
    assert ta["max"] == pytest.approx(mu(g + a), abs=1e-9) and abs(ta["max_at_crank_deg"]) == pytest.approx(180.0)


@pytest.mark.parametrize("side", [1, -1])
@pytest.mark.parametrize("branch", [1, -1])
def test_a_double_rocker_reports_the_circuit_the_drawing_is_on(side, branch):
    """A Grashof double-rocker (ground 4, crank 3, coupler 1, rocker 3.5: the coupler is shortest) has two mirror-image
    circuits, one above the ground line and one below, each holding both assembly branches. Its crank stops where
    coupler and rocker are collinear, |BD| = c - b = 2.5 or c + b = 4.5: cos t2 = (a² + g² - |BD|²) / (2 a g); its
    rocker where crank and coupler are, |AC| = a + b = 4 or a - b = 2: t4 = 180° - (angle at D), cos = (g² + c² -
    |AC|²) / (2 g c). Above the ground line these angles are positive; a drawing below it (side -1), on either branch,
    moves through their mirror images, and the report must say so (it gave the circuit above for every drawing, and
    on the crossed branch the rocker limits of the circuit below with toggle crank angles outside its crank range)."""
    g, a, b, c = 4.0, 3.0, 1.0, 3.5
    fb = FourBar(g, a, b, c)
    cosang = lambda x, y, opp: math.degrees(math.acos((x * x + y * y - opp * opp) / (2 * x * y)))  # noqa: E731
    crank = sorted(side * t for t in (cosang(a, g, c - b), cosang(a, g, c + b)))
    rocker = sorted(side * (180.0 - cosang(g, c, r)) for r in (a + b, a - b))
    theta2 = side * math.radians(60.0)  # the drawing: inside the crank's range on its side
    assert closed_form(fb, theta2, branch)[2][0]
    rep = report(fb, branch, theta2=theta2)
    assert rep["class"] == "double-rocker" and rep["branch"] == branch
    np.testing.assert_allclose(rep["crank_range_deg"], crank, atol=1e-9)
    np.testing.assert_allclose(rep["rocker_limits_deg"], rocker, atol=1e-9)
    assert rep["crank_range_deg"][0] < math.degrees(theta2) < rep["crank_range_deg"][1]
    # every toggle is a position of this circuit: its crank angle within the range, its rocker angle within the limits
    for t in rep["toggles"]:
        assert crank[0] - 1e-9 <= t["crank_deg"] <= crank[1] + 1e-9, t
        if "rocker_deg" in t:
            assert rocker[0] - 1e-9 <= t["rocker_deg"] <= rocker[1] + 1e-9, t
    # mu is 0 and 180 degrees at the crank limits, where coupler and rocker are folded (|BD| = c - b) and extended
    mu = rep["transmission_angle_deg"]
    assert mu["at_crank_deg"] == pytest.approx(side * cosang(a, g, c - b), abs=1e-9)
    assert mu["max_at_crank_deg"] == pytest.approx(side * cosang(a, g, c + b), abs=1e-9)
