"""Idle freedoms: motions taken up by ball joints alone that move no ball joint's centre (an RSSR coupler's spin about the
line through its ball joints), set aside by the driver check; and shafts, whose turn in their bearings moves no joint
centre either but turns revolutes, cylindrical or universal joints, which a driver drives: real freedoms.

The expected values are derived by hand in each test (Gruebler-Kutzbach counts, ranks, the Cardan relation)."""

import math
from pathlib import Path

import numpy as np
import pytest

from core import io
from core.errors import LinkwrightError
from core.kinematics import check_drivers, compile_model, rank_mobility, solve_trajectory
from core.model import Body, Driver, Joint, Mechanism

EXAMPLES = Path(__file__).resolve().parents[3] / "resources" / "examples"


def _rx(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def _counts(m):
    r = rank_mobility(m)
    return r.gruebler, r.mobility_rank, r.redundant_constraints, r.idle_freedoms, r.freedoms_to_drive


def _cardan(beta):
    """Input shaft on a revolute about x through (-1, 0, 0), a universal joint at the origin (first axis z, on the input
    yoke; second axis normal to the output shaft in the shafts' plane, on the output yoke), output shaft on a revolute
    about (cos b, sin b, 0); the input driven, Rin = t."""
    m = Mechanism(name="cardan", space="spatial")
    m.bodies += [Body("g", ground=True), Body("inp"), Body("out")]
    cb, sb = math.cos(beta), math.sin(beta)
    m.joints += [
        Joint("Rin", "revolute", ("g", "inp"), (-1.0, 0.0, 0.0), axis=(1.0, 0.0, 0.0)),
        Joint("U", "universal", ("inp", "out"), (0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), axis2=(-sb, cb, 0.0)),
        Joint("Rout", "revolute", ("g", "out"), (cb, sb, 0.0), axis=(cb, sb, 0.0)),
    ]
    m.drivers.append(Driver("Rin", "t"))
    return m


@pytest.mark.parametrize("beta_deg", [30.0, 50.0])
def test_a_universal_joint_driveshaft_has_one_freedom_and_turns_its_output_by_the_cardan_relation(beta_deg):
    """The driveshaft was '0 degree(s) of freedom (rank-based, 1 idle freedom(s) set aside)', its one driver refused:
    its motion moves no joint centre (every centre lies on a shaft's axis). It turns Rin and Rout, revolutes.
    Counts by hand: Gruebler 6(3-1) - 5*2 - 4*1 = -2; every joint axis passes through the origin (a spherical
    mechanism), so the loop's three translation rows vanish: rank 3 of 6 rows, 4 coordinates, mobility 4 - 3 = 1,
    3 redundant, no idle freedom, 1 to drive.
    Output angle by hand: the input yoke's pin turns to u = Rx(th) z = (0, -sin th, cos th); the output yoke's pin,
    turned by phi about b = (cos B, sin B, 0) from v0 = (-sin B, cos B, 0), is v = v0 cos phi + (b x v0) sin phi
    = (-sin B cos phi, cos B cos phi, sin phi). The cross keeps them normal: u . v = -cos B sin th cos phi
    + cos th sin phi = 0, tan phi = cos B tan th, continuous through the turn as phi = atan2(cos B sin th, cos th)."""
    beta = math.radians(beta_deg)
    m = _cardan(beta)
    assert _counts(m) == (-2, 1, 3, 0, 1)
    km = compile_model(m)
    assert check_drivers(km) == 3  # the drivers determine the motion: rank 3 of the undriven coordinates
    t = np.linspace(0.0, 2 * math.pi, 73)  # a full turn of the input, every 5 degrees
    traj = solve_trajectory(km, t)
    assert traj.ok, traj.reason
    out = traj.q[:, km.coord_names.index("Rout")]
    expected = np.unwrap(np.arctan2(math.cos(beta) * np.sin(t), np.cos(t)))
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-12)
    for th in (0.3, 1.0, 2.0, 4.0):  # tan(out) = cos(beta) tan(in) at a few input angles (the grid holds them)
        k = int(np.argmin(np.abs(t - th)))
        assert math.tan(out[k]) == pytest.approx(math.cos(beta) * math.tan(t[k]), rel=1e-12)
    # the output turns once per input turn, faster where the input yoke lies in the shafts' plane (th = 90 degrees):
    # dphi/dth = cos B / (cos^2 th + cos^2 B sin^2 th), 1 / cos B there, cos B at th = 0
    vel = traj.qd[:, km.coord_names.index("Rout")]
    assert vel[0] == pytest.approx(math.cos(beta), rel=1e-12)
    assert vel[18] == pytest.approx(1.0 / math.cos(beta), rel=1e-12)  # t[18] = 90 degrees
    assert out[-1] == pytest.approx(2 * math.pi, abs=1e-12)


@pytest.mark.parametrize("space, at2", [("spatial", (1.0, 0.0, 0.0)), ("planar", (0.0, 0.0, 0.0))])
def test_coaxial_revolutes_in_series_are_two_freedoms_both_driven(space, at2):
    """ground -R1- a -R2- b, R2 on R1's axis (in space along x; in a plane, three links on one pin). Turning a while b
    stays (R1 = s, R2 = -s) moves no joint centre and no body on one joint (b), but it turns both revolutes: the
    chain was counted 1 freedom and 1 idle, its two drivers refused. By hand: an open chain, no loop, 2 coordinates,
    mobility 2 = Gruebler (6(3-1) - 5*2 = 2, planar 3(3-1) - 2*2 = 2), none idle; driven R1 = t, R2 = 2t, a turns
    by t and b by 3t."""
    m = Mechanism(name="shafts", space=space)
    m.bodies += [Body("g", ground=True), Body("a"), Body("b")]
    axis = (1.0, 0.0, 0.0) if space == "spatial" else (0.0, 0.0, 1.0)
    m.joints += [Joint("R1", "revolute", ("g", "a"), (0.0, 0.0, 0.0), axis=axis),
                 Joint("R2", "revolute", ("a", "b"), at2, axis=axis)]
    m.drivers.append(Driver("R1", "t"))
    words = r"2 degree\(s\) of freedom \(rank-based\) but 1 driver\(s\) are given: add 1"
    with pytest.raises(LinkwrightError, match=words):
        check_drivers(compile_model(m))
    m.drivers.append(Driver("R2", "2*t"))
    assert _counts(m) == (2, 2, 0, 0, 2)
    km = compile_model(m)
    traj = solve_trajectory(km, np.linspace(0.0, 1.0, 5))
    assert traj.ok, traj.reason
    u = np.array(axis)
    for k, t in enumerate(np.linspace(0.0, 1.0, 5)):
        for body, turns in (("a", t), ("b", 3 * t)):
            R = traj.poses[k, km.body_names.index(body), :3, :3]
            # a turn about u by `turns`: R u = u and the trace is 1 + 2 cos(turns); sin from the skew part about u
            np.testing.assert_allclose(R @ u, u, atol=1e-12)
            assert np.trace(R) == pytest.approx(1 + 2 * math.cos(turns), abs=1e-12)
            assert 0.5 * u @ np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]]) == pytest.approx(
                math.sin(turns), abs=1e-12)


def _turned_shaft(m, t_end, n):
    """The driven shaft's trajectory at n times to t_end, checked to turn about x by the driver's angle t (body 1's
    rotation Rx(t)): (compiled model, trajectory, times)."""
    km = compile_model(m)
    times = np.linspace(0.0, t_end, n)
    traj = solve_trajectory(km, times)
    assert traj.ok, traj.reason
    for k, t in enumerate(times):
        np.testing.assert_allclose(traj.poses[k, 1, :3, :3], _rx(t), atol=1e-12)
    return km, traj, times


def test_a_shaft_on_two_coaxial_revolute_bearings_turns_with_one_driver():
    """A shaft held to the ground by revolutes at x = 0 and x = 2, both about x: one freedom (the turn), 5 redundant
    constraints. By hand: Gruebler 6(2-1) - 5*2 = -4; both joints give the shaft the same twist (a turn about x), so the
    loop's 6 rows have rank 1 over the 2 coordinates: mobility 1, 5 redundant. The turn moves no joint centre, and it
    was set aside as idle (0 freedoms to drive, the bearing's driver refused); it turns both revolutes."""
    m = Mechanism(name="shaft", space="spatial")
    m.bodies += [Body("g", ground=True), Body("shaft")]
    m.joints += [Joint("B1", "revolute", ("g", "shaft"), (0.0, 0.0, 0.0), axis=(1.0, 0.0, 0.0)),
                 Joint("B2", "revolute", ("g", "shaft"), (2.0, 0.0, 0.0), axis=(1.0, 0.0, 0.0))]
    m.drivers.append(Driver("B1", "t"))
    assert _counts(m) == (-4, 1, 5, 0, 1)
    km, traj, times = _turned_shaft(m, 3.0, 7)
    for k, t in enumerate(times):
        assert traj.q[k, km.coord_names.index("B2")] == pytest.approx(t, abs=1e-12)  # the second bearing turns alike


def test_a_shaft_on_a_ball_joint_and_a_coaxial_cylindrical_joint_turns_by_the_cylinders_angle():
    """A shaft on a ball joint at the origin and a cylindrical joint about x through (2, 0, 0). Its turn about x moves
    no joint centre and changes the ball joint's coordinates and the cylindrical joint's angle (C.1): a real freedom,
    driven at C.1 (a rule that took up every joint of more than one coordinate as idle would set it aside).
    By hand: Gruebler 6(2-1) - 3 - 4 = -1; the ball gives the three turns about the origin, the cylinder the slide
    along x and the turn about x (a line through the origin): 5 coordinates, rank 4 (three turns and the slide), so
    mobility 1, 2 redundant, none idle."""
    m = Mechanism(name="shaft", space="spatial")
    m.bodies += [Body("g", ground=True), Body("shaft")]
    m.joints += [Joint("S", "spherical", ("g", "shaft"), (0.0, 0.0, 0.0)),
                 Joint("C", "cylindrical", ("g", "shaft"), (2.0, 0.0, 0.0), axis=(1.0, 0.0, 0.0))]
    m.drivers.append(Driver("C", "t", coordinate=1))
    assert _counts(m) == (-1, 1, 2, 0, 1)
    _km, traj, times = _turned_shaft(m, 1.0, 5)
    for k in range(len(times)):
        np.testing.assert_allclose(traj.poses[k, 1, :3, 3], 0.0, atol=1e-12)


def _strut(middle, offset):
    """A crank (revolute about z at the origin, driven A = t) and a strut from a ball joint on the ground at
    P0 = (3, 2, 1) to a ball joint on the crank at B = (1, 0, 0), of two bodies, cylinder and piston, joined by
    `middle` (a Joint at the given point, along the given direction P0B) drawn `offset` off the midpoint of P0B."""
    p0, b = np.array([3.0, 2.0, 1.0]), np.array([1.0, 0.0, 0.0])
    m = Mechanism(name="strut", space="spatial")
    m.bodies += [Body("g", ground=True), Body("crank"), Body("cylinder"), Body("piston")]
    m.joints += [Joint("A", "revolute", ("g", "crank"), (0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0)),
                 Joint("S0", "spherical", ("g", "cylinder"), tuple(p0)),
                 middle(tuple((p0 + b) / 2 + offset), tuple((b - p0) / np.linalg.norm(b - p0))),
                 Joint("S1", "spherical", ("piston", "crank"), tuple(b))]
    m.drivers.append(Driver("A", "t"))
    return m, p0, b


@pytest.mark.parametrize("offset", [0.0, 1e-4, 0.1, 1.0])
def test_a_strut_spins_idly_wherever_its_prismatic_joint_is_drawn(offset):
    """The strut's cylinder and piston slide in a prismatic joint along P0B. Its spin about P0B turns cylinder and
    piston together: it moves no ball joint's centre and changes the ball joints' coordinates alone (the slide
    stays): one idle freedom of two bodies. By hand: Gruebler 6(4-1) - 5 - 3 - 5 - 3 = 2; 8 coordinates, one loop of
    6 independent rows: mobility 2, 1 idle, 1 to drive. The slide is the strut's length: q_P = |B(t) - P0| -
    |B(0) - P0| with B(t) = (cos t, sin t, 0). A prismatic joint slides the same wherever its point is drawn: with
    the point off the line (user test: 0.1 mm off made it '2 degree(s) of freedom', its one driver refused, because
    the rule asked that point not to move) the counts and the run are the same."""
    m, p0, b = _strut(lambda at, d: Joint("P", "prismatic", ("cylinder", "piston"), at, axis=d),
                      np.array([0.0, 0.0, offset]))
    assert _counts(m) == (2, 2, 0, 1, 1)
    km = compile_model(m)
    t = np.linspace(0.0, 2.0, 9)
    traj = solve_trajectory(km, t)
    assert traj.ok, traj.reason
    tip = np.stack((np.cos(t), np.sin(t), np.zeros_like(t)), axis=1)
    np.testing.assert_allclose(traj.q[:, km.coord_names.index("P")],
                               np.linalg.norm(tip - p0, axis=1) - np.linalg.norm(b - p0), atol=1e-12)


def test_a_folding_strut_spins_idly_as_a_rigid_group():
    """The strut's two bodies joined by a revolute 0.5 off P0B's midpoint, its axis normal to P0B: the strut folds
    there, so its length |B - P0| is the revolute's to set, and with the revolute held the two bodies are one rigid
    group between two ball joints, whose spin about P0B is idle (a rule asking the revolute's point not to move
    counted no idle freedom and asked for a second driver). By hand: Gruebler 6(4-1) - 5 - 3 - 5 - 3 = 2; 8
    coordinates, one loop of 6 independent rows: mobility 2, 1 idle, 1 to drive."""
    m, _p0, _b = _strut(lambda at, d: Joint("R", "revolute", ("cylinder", "piston"), at,
                                           axis=tuple(np.cross(d, (0.0, 0.0, 1.0)))), np.array([0.0, 0.0, 0.5]))
    assert _counts(m) == (2, 2, 0, 1, 1)
    check_drivers(compile_model(m))


def test_a_body_held_by_one_ball_joint_is_never_idle_even_with_a_second_ball_joint_inside_its_group():
    """A bar a on a ball joint to the ground at the origin, and a bar b joined to it by a prismatic joint along x and
    a ball joint at (2, 0, 0): sliding would move that centre, so a and b are one rigid body (8 constraints on their
    6 relative freedoms, 2 redundant), a pendulum on one ball joint with 3 real freedoms. By hand: Gruebler
    6(3-1) - 3 - 5 - 3 = 1; 7 coordinates, the loop a-P-b-S-a has 4 independent twists (the slide and three turns
    about (2, 0, 0)): rank 4, mobility 3, 2 redundant. None is idle: the group is held by one ball joint (the inner
    one joins it to itself). (The rule that asked only that joint centres stay counted its spin about the x axis,
    through all three centres, as idle: 1.)"""
    m = Mechanism(name="pendulum", space="spatial")
    m.bodies += [Body("g", ground=True), Body("a"), Body("b")]
    m.joints += [Joint("S0", "spherical", ("g", "a"), (0.0, 0.0, 0.0)),
                 Joint("P", "prismatic", ("a", "b"), (1.0, 0.0, 0.0), axis=(1.0, 0.0, 0.0)),
                 Joint("S1", "spherical", ("a", "b"), (2.0, 0.0, 0.0))]
    assert _counts(m) == (1, 3, 2, 0, 3)


def test_the_examples_idle_freedoms_are_the_rssr_couplers_spin_alone():
    """Of the example documents only rssr.json has an idle freedom (its coupler's spin about BC); the rule that keeps
    shafts real changes none of their counts."""
    idle = {p.stem: rank_mobility(io.load(p)).idle_freedoms for p in sorted(EXAMPLES.glob("*.json"))}
    assert idle.pop("rssr") == 1
    assert set(idle.values()) == {0}
