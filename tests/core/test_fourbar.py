"""The transmission angle of the teaching analysis against the geometry of the closed-form positions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.fourbar import FourBar, closed_form, report, transmission_angle

EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[2] / "resources" / "examples"


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


def test_a_flat_transmission_angle_has_its_extremes_at_crank_0_and_180_degrees():
    """A crank of 1e-6 against links of 1e6 (a crank-rocker: s + l = 1e6 + 1e-6 < p + q = 2e6): mu hardly changes over
    the turn, and the sampled minimum was read at -0.5 degrees. The extremes are where |BD| = |g - a| (t2 = 0: the
    smallest diagonal, the smallest mu) and g + a (t2 = 180 degrees), for any lengths whose crank turns fully."""
    g, a, b, c = 1e6, 1e-6, 1e6, 1e6
    ta = report(FourBar(g, a, b, c))["transmission_angle_deg"]
    assert ta["at_crank_deg"] == 0.0 and ta["max_at_crank_deg"] == 180.0
    # law of cosines in triangle BCD: cos mu = (b² + c² - |BD|²) / (2 b c); here about 0.5, so mu about 60 degrees
    assert ta["min"] == pytest.approx(math.degrees(math.acos((b * b + c * c - (g - a) ** 2) / (2 * b * c))), abs=1e-9)
    assert ta["max"] == pytest.approx(math.degrees(math.acos((b * b + c * c - (g + a) ** 2) / (2 * b * c))), abs=1e-9)


def test_a_drawn_triple_rocker_has_its_smallest_transmission_angle_at_crank_0_not_a_rounding_below_it():
    """The example with joint B moved to (1.25, 2.165): a crank of 2.5 at 60 degrees, a triple-rocker (2.215 + 4 >
    2.5 + 3). Its crank swings through 0, where |BD| = g - a is smallest and so is mu; a sample a rounding away from 0
    (-1.3e-14, the middle of the sampled range) tied with it and the Four-bar tab read "θ2 = −0.0°"."""
    from core import io
    from core.fourbar import find_fourbar

    mech = io.load(EXAMPLES / "fourbar.json")
    mech.update_joint("B", at=(1.25, 2.165, 0.0))
    found = find_fourbar(mech)
    fb = found.fourbar
    rep = report(fb, found.branch, theta2=found.theta2_design)
    assert rep["class"].startswith("triple-rocker")
    ta = rep["transmission_angle_deg"]
    assert ta["at_crank_deg"] == 0.0
    assert ta["min"] == pytest.approx(math.degrees(math.acos((fb.b**2 + fb.c**2 - (fb.g - fb.a) ** 2) / (2 * fb.b * fb.c))))


def test_fixed_rounds_before_it_writes_the_sign():
    from core.fourbar import fixed

    assert [fixed(x, 1) for x in (-1.3e-14, -0.04, -0.0, 0.0, -0.06, 104.3088)] == ["0.0", "0.0", "0.0", "0.0", "-0.1", "104.3"]
    assert fixed(-4e-4, 3) == "0.000" and fixed(-96.62244, 3) == "-96.622"


@pytest.mark.parametrize("lengths, through", [((4.0, 2.5, 2.2151, 3.0), 180.0), ((1.0, 1.1, 1.0, 1.0), 0.0)])
def test_a_triple_rocker_says_through_which_angle_its_rocker_swings(lengths, through):
    """Both triple-rockers have rocker limits -L and L; the first swings 360 - 2 L through 180 degrees, the second
    2 L through 0 (the user test read "-96.622, 96.622" and "-174.268, 174.268" alike).
    (4, 2.5, 2.2151, 3): crank and coupler only extend (a + b = 4.7151 < g + c = 7; folded a - b = 0.285 < g - c = 1
    cannot be), angle at D = acos((g² + c² - 4.7151²) / (2 g c)) = 83.378, L = 180 - 83.378 = 96.622, swing
    2 * 83.378 = 166.755. At crank 0, |BD| = g - a = 1.5 and the angle at D between D -> B (pointing back, 180 degrees)
    and D -> C is acos((c² + 1.5² - b²) / (2 c 1.5)) = 45.2: the rocker is at 134.8, outside [-L, L]: through 180.
    (1, 1.1, 1, 1): only folded (a + b = 2.1 > g + c = 2), |AC| = a - b = 0.1, angle at D = acos(0.995) = 5.732,
    L = 174.268, swing 348.536; at crank 0, |BD| = a - g = 0.1 and D -> B points along +x, C left of B -> D (the open
    branch), below the ground line: the rocker is at -acos((c² + 0.01 - b²) / (2 c 0.1)) = -87.13 degrees, inside
    [-L, L]: through 0."""
    g, a, b, c = lengths
    fb = FourBar(g, a, b, c)
    rep = report(fb)
    acos_deg = lambda x, y, opp: math.degrees(math.acos((x * x + y * y - opp * opp) / (2 * x * y)))  # noqa: E731
    if through == 180.0:
        at_d = acos_deg(g, c, a + b)
        L, swing = 180.0 - at_d, 2 * at_d
        rocker_at_0 = 180.0 - acos_deg(c, g - a, b)
    else:
        at_d = acos_deg(g, c, a - b)
        L, swing = 180.0 - at_d, 2 * (180.0 - at_d)
        rocker_at_0 = -acos_deg(c, a - g, b)
    assert rep["rocker_limits_deg"] == pytest.approx([-L, L], abs=1e-9)
    assert rep["rocker_swing_deg"] == pytest.approx(swing, abs=1e-9) and rep["rocker_swing_through_deg"] == through
    # the closed form's rocker at crank 0 is where the hand geometry puts it, on the arc the report names
    t4 = math.degrees(closed_form(fb, 0.0)[1][0])
    assert t4 == pytest.approx(rocker_at_0, abs=1e-9)
    assert abs(math.remainder(t4 - through, 360.0)) < swing / 2


def test_a_crank_rocker_swings_through_the_middle_of_its_limits():
    # the example (4, 1, 3.5, 3): rocker limits 180 - (angle at D) with |AC| = b + a = 4.5 and b - a = 2.5, both
    # above the ground line, the rocker between them: its swing is their difference, through their mean
    g, a, b, c = 4.0, 1.0, 3.5, 3.0
    acos_deg = lambda x, y, opp: math.degrees(math.acos((x * x + y * y - opp * opp) / (2 * x * y)))  # noqa: E731
    ext, fold = 180.0 - acos_deg(g, c, a + b), 180.0 - acos_deg(g, c, b - a)
    rep = report(FourBar(g, a, b, c))
    assert rep["rocker_swing_deg"] == pytest.approx(fold - ext)
    assert rep["rocker_swing_through_deg"] == pytest.approx((ext + fold) / 2)


def _example_in(plane: str, axis_sign: float = 1.0, offsets=(0.0, 0.0, 0.0, 0.0)) -> dict:
    """fourbar.json redrawn in a spatial document in the world plane `plane` ("x-y", "x-z", "y-z"): its (x, y) put on
    the plane's first and second axes, the pins along the third axis times `axis_sign`, each joint moved along its pin
    by `offsets` (a real linkage's links lie side by side)."""
    import json

    doc = json.loads((EXAMPLES / "fourbar.json").read_text())
    first, second = ("xyz".index(k) for k in plane.split("-"))
    normal = 3 - first - second
    doc["space"] = "spatial"
    doc.pop("gravity")
    for body in doc["bodies"]:
        body.pop("points", None)
    for j, off in zip(doc["joints"], offsets):
        x, y = j["at"][:2]
        at = [0.0, 0.0, 0.0]
        at[first], at[second], at[normal] = x, y, off
        axis = [0.0, 0.0, 0.0]
        axis[normal] = axis_sign
        j["at"], j["axis"] = at, axis
    return doc


@pytest.mark.parametrize("axis_sign", [1.0, -1.0])
@pytest.mark.parametrize("plane, normal", [("x-y", (0, 0, 1)), ("x-z", (0, -1, 0)), ("y-z", (1, 0, 0))])
def test_a_four_bar_with_parallel_pins_in_a_world_plane_of_a_spatial_document_is_the_planar_one(plane, normal, axis_sign):
    """The example drawn in x-z (x to the right, z up: the 3D view's front) or y-z (y right, z up) of a spatial
    document, its pins either way along the normal and its joints at different depths along them, reads as drawn
    in the planar document: the same lengths (measured in the plane), drawn at the same crank angle, on the same
    assembly branch. Angles are counter-clockwise seen from the tip of `normal`: e_first x e_second of the plane."""
    from core import io
    from core.fourbar import find_fourbar

    planar = find_fourbar(io.load(EXAMPLES / "fourbar.json"))
    found = find_fourbar(io.loads(__import__("json").dumps(_example_in(plane, axis_sign, (0.0, 0.1, -0.2, 0.3)))))
    np.testing.assert_allclose([found.fourbar.g, found.fourbar.a, found.fourbar.b, found.fourbar.c],
                               [planar.fourbar.g, planar.fourbar.a, planar.fourbar.b, planar.fourbar.c], rtol=1e-12)
    # the drawing: B - A = (0.5, 0.866) in the plane's axes, 60 degrees; C above the ground line, left of B -> D
    assert math.degrees(found.theta2_design) == pytest.approx(math.degrees(math.atan2(0.866, 0.5)), abs=1e-9)
    assert found.branch == planar.branch == 1 and found.normal == normal
    assert (found.ground, found.crank, found.coupler, found.rocker) == ("ground", "crank", "coupler", "rocker")


def test_the_contact_examples_four_bars_are_found_and_their_free_parts_left_out():
    """contact_fourbar_swing.json and contact_parts_feeder.json: four-bars in the x-z plane of a spatial document, pins
    along y; the feeder has a free box (no joint) beside them. Lengths from the joints' (x, z) by hand."""
    from core import io
    from core.fourbar import find_fourbar

    swing = find_fourbar(io.load(EXAMPLES / "contact_fourbar_swing.json"))
    # A (0, 0.5), B (0.05, 0.5866), C (0.3331, 0.7924), D (0.4, 0.5): the example at a tenth of its size
    np.testing.assert_allclose([swing.fourbar.g, swing.fourbar.a, swing.fourbar.b, swing.fourbar.c],
                               [0.4, math.hypot(0.05, 0.0866), math.hypot(0.2831, 0.2058), math.hypot(0.0669, 0.2924)])
    assert math.degrees(swing.theta2_design) == pytest.approx(math.degrees(math.atan2(0.0866, 0.05)))
    assert swing.branch == 1 and swing.normal == (0.0, -1.0, 0.0)
    feeder = find_fourbar(io.load(EXAMPLES / "contact_parts_feeder.json"))
    # A (-0.16, 0.437), B (-0.12, 0.506282), C (-0.153808, 0.30916), D (0, 0.437); the box is no part of it
    assert (feeder.ground, feeder.crank, feeder.coupler, feeder.rocker) == ("floor", "crank", "coupler", "rocker")
    np.testing.assert_allclose([feeder.fourbar.g, feeder.fourbar.a, feeder.fourbar.b, feeder.fourbar.c],
                               [0.16, math.hypot(0.04, 0.069282), math.hypot(0.033808, 0.197122),
                                math.hypot(0.153808, 0.12784)])
    # C is right of B -> D = (0.12, -0.069282): (B -> D) x (B -> C) = 0.12 * -0.197122 - (-0.069282) * -0.033808 < 0
    assert feeder.branch == -1 and math.degrees(feeder.theta2_design) == pytest.approx(60.0, abs=1e-3)
    assert report(feeder.fourbar, feeder.branch, theta2=feeder.theta2_design)["class"] == "crank-rocker"


def test_a_planar_four_bar_with_a_free_ball_is_found_without_it():
    from core import io
    from core.fourbar import find_fourbar
    from core.model import Body

    mech = io.load(EXAMPLES / "fourbar.json")
    plain = find_fourbar(mech)
    mech.add_body(Body("ball", density=1000.0, shape={"type": "sphere", "radius": 0.3}), position=(0.0, 0.0))
    mech.add_body(Body("wall", ground=True), position=(0.0, 0.0))  # (a second ground, for contact only)
    assert len(mech.bodies) == 6
    found = find_fourbar(mech)
    assert found == plain


def test_a_four_bar_that_is_not_planar_or_not_alone_is_still_refused():
    """A pin tilted out of parallel (B's axis 0.001 off y) is no planar four-bar, and the reason names the joint; a
    fifth body hinged to the ground is no four-bar; a jointed loop of four with its ground elsewhere has no ground."""
    import json

    from core import io
    from core.errors import LinkwrightError
    from core.fourbar import find_fourbar
    from core.model import Body, Joint

    doc = _example_in("x-z")
    doc["joints"][1]["axis"] = [0.0, 1.0, 0.001]
    with pytest.raises(LinkwrightError) as err:
        find_fourbar(io.loads(json.dumps(doc)))
    assert err.value.location == "joints[1].axis"
    assert err.value.message == "the axis of joint B is not parallel to the axis of joint A: a planar four-bar turns about parallel pins"
    mech = io.load(EXAMPLES / "fourbar.json")
    mech.add_body(Body("flap"), position=(0.0, 0.0))
    mech.add_joint(Joint("E", "revolute", ("ground", "flap"), at=(2.0, 0.0, 0.0)))
    with pytest.raises(LinkwrightError, match="a four-bar has exactly 4 bodies and 4 revolute joints"):
        find_fourbar(mech)
    doc = json.loads((EXAMPLES / "fourbar.json").read_text())
    doc["bodies"][0].pop("ground")
    doc["bodies"].append({"name": "floor", "ground": True})
    with pytest.raises(LinkwrightError, match="a four-bar needs exactly one ground body"):
        find_fourbar(io.loads(json.dumps(doc)))


def test_rocker_limits_of_a_needle_like_folded_triangle_keep_their_small_angle():
    """Ground 1, crank 1 + 1e-10, coupler 1, rocker 1: folded, crank and coupler leave |AC| = a - b (about 1e-10), so
    the triangle A-C-D has sides g = c = 1 and that needle between them. Its angle at D is 2 asin(r / 2) (isosceles),
    and the rocker's limits are +-(180 deg - that angle); acos of the law of cosines rounds the angle to 0 (limits of
    exactly 180 and a swing of 360)."""
    fb = FourBar(g=1.0, a=1.0000000001, b=1.0, c=1.0)
    r = fb.a - fb.b  # the folded length, as the report computes it
    limit = 180.0 - math.degrees(2.0 * math.asin(r / 2.0))
    rep = report(fb)
    assert sorted(rep["rocker_limits_deg"]) == pytest.approx([-limit, limit], abs=1e-13)
    assert rep["rocker_limits_deg"][1] < 180.0
    assert rep["rocker_swing_deg"] == pytest.approx(2 * limit, abs=1e-12)  # (the extended position is missing)
    # an ordinary triangle is unchanged: the 3-4-5 right angle and the equilateral's 60 degrees
    from core.fourbar import _tri_angle

    assert _tri_angle(3.0, 4.0, 5.0) == pytest.approx(math.pi / 2, rel=1e-15)
    assert _tri_angle(2.0, 2.0, 2.0) == pytest.approx(math.pi / 3, rel=1e-15)
    assert _tri_angle(1.0, 1.0, 2.5) is None  # no triangle


@pytest.mark.parametrize("g, a, b, c", [(2, 2, 1, 1), (3, 3, 1, 1), (4, 4, 1, 1), (2, 2, 1.5, 1.5), (5, 5, 2, 2)])
def test_a_kite_change_point_moves_its_crank_about_zero(g, a, b, c):
    """User test s55 (K1): a kite (ground = crank, coupler = rocker < ground) was given the complement of its crank
    range, through 180 degrees where nothing assembles.  By hand: B = a (cos t, sin t), D = (g, 0), so |BD|^2 =
    g^2 + a^2 - 2 g a cos t = 2 g^2 (1 - cos t) (g = a); the loop closes while |BD| <= b + c, i.e. cos t >=
    1 - (b + c)^2 / (2 g^2): the range is -T .. T with that T.  The transmission angle, cos mu = (b^2 + c^2 - |BD|^2) /
    (2 b c), is 0 at t = 0 (B on D: the coupler folded on the rocker) and 180 degrees at the limits (|BD| = b + c)."""
    rep = report(FourBar(g, a, b, c))
    limit = math.degrees(math.acos(1.0 - (b + c) ** 2 / (2.0 * g * g)))
    assert rep["class"] == "change point"
    assert rep["crank_range_deg"] == pytest.approx([-limit, limit], abs=1e-9)
    mu = rep["transmission_angle_deg"]
    assert mu["min"] == pytest.approx(0.0, abs=1e-6) and mu["at_crank_deg"] == pytest.approx(0.0, abs=1e-9)
    # (mu is a square root's worth of rounding off 180 at a limit, where |BD| = b + c: d mu / d|BD| is infinite)
    assert mu["max"] == pytest.approx(180.0, abs=1e-5) and abs(mu["max_at_crank_deg"]) == pytest.approx(limit, abs=1e-9)


@pytest.mark.parametrize("lengths", [(4, 2, 3, 3), (3, 1, 2, 4), (4, 3, 1, 2)])
def test_the_crossed_branch_of_a_change_point_swings_like_the_mirror_of_the_open_one(lengths):
    """User test s55 (K2): on branch -1 a rocker limit at 180 degrees (pivots collinear) is the end at -180 of an arc
    below the ground line, and the swing was computed across 0 ('-90, 180: swing 270 through 45' for a rocker that
    moves between -90 and -180).  The two branches are mirror images in the ground line: the same swing, the middle
    of the arc mirrored."""
    fb = FourBar(*map(float, lengths))
    up, down = report(fb, 1), report(fb, -1)
    assert down["rocker_swing_deg"] == pytest.approx(up["rocker_swing_deg"], abs=1e-9)
    assert down["rocker_swing_deg"] < 180.0
    assert down["rocker_swing_through_deg"] == pytest.approx(-up["rocker_swing_through_deg"], abs=1e-9)
    # by hand for (4, 2, 3, 3): the folded toggle |AC| = 1 puts C on the ground line beyond D (rocker at 180), the
    # extended one |AC| = 5 makes the triangle 4-3-5, right-angled at D (rocker at -90): swing 90 through -135
    if lengths == (4, 2, 3, 3):
        assert (down["rocker_swing_deg"], down["rocker_swing_through_deg"]) == pytest.approx((90.0, -135.0))
