"""Rank-based mobility (redundant constraints, idle freedoms), driver checks, and the example documents."""

import math
from pathlib import Path

import numpy as np
import pytest

from core import io
from core.errors import LinkwrightError
from core.kinematics import compile_model, rank_mobility, solve_trajectory, body_poses, Workspace, forward, loop_residual
from core.kinematics.symbolic import planar_loop_equations
from core.model import Body, Driver, Joint, Mechanism
from tests.core.bennett import bennett_loop

EXAMPLES = Path(__file__).resolve().parents[3] / "resources" / "examples"


def _chain_doc(points, axes, space="spatial", drive="A"):
    """A single loop ground-l1-l2-l3 of revolute joints A, B, C, D at `points` with `axes`."""
    m = Mechanism(name="loop", space=space)
    m.bodies += [Body("ground", ground=True), Body("l1"), Body("l2"), Body("l3")]
    names = ["A", "B", "C", "D"]
    pairs = [("ground", "l1"), ("l1", "l2"), ("l2", "l3"), ("l3", "ground")]
    for n, pr, p, ax in zip(names, pairs, points, axes):
        m.joints.append(Joint(n, "revolute", pr, tuple(map(float, p)), axis=tuple(map(float, ax))))
    if drive:
        m.drivers.append(Driver(drive, "t"))
    return m


def test_planar_fourbar_in_a_spatial_file_has_three_redundant_constraints():
    pts = [(0, 0, 0), (0.5, 0.866, 0), (3.331, 2.924, 0), (4, 0, 0)]
    m = _chain_doc(pts, [(0, 0, 1)] * 4)
    r = rank_mobility(m)
    # Gruebler spatial: 6(4-1) - 5*4 = -2; rank 3 of 6 loop equations -> mobility 1, 3 redundant
    assert (r.gruebler, r.mobility_rank, r.redundant_constraints, r.idle_freedoms) == (-2, 1, 3, 0)
    traj = solve_trajectory(compile_model(m), np.linspace(0, 1, 21))
    assert traj.ok  # the min-norm Newton step copes with the redundant rows


def test_bennett_linkage_is_mobile_despite_gruebler():
    # DH loop (a, alpha), (b, beta), (a, alpha), (b, beta) with a / sin(alpha) = b / sin(beta) (Bennett condition),
    # closed at crank angle 0.7 (tests/core/bennett.py)
    pts, axes = bennett_loop(1.0, math.radians(40), math.radians(70), 0.7)
    m = _chain_doc(pts, axes)
    r = rank_mobility(m)
    assert (r.gruebler, r.mobility_rank, r.redundant_constraints) == (-2, 1, 3)
    traj = solve_trajectory(compile_model(m), np.linspace(0, 0.5, 11))
    assert traj.ok, traj.reason


def test_rssr_has_one_idle_freedom_and_assembles():
    m = io.load(EXAMPLES / "rssr.json")
    r = rank_mobility(m)
    # 6(4-1) - 5*2 - 3*2 = 2, of which the coupler's spin about BC is idle
    assert (r.gruebler, r.mobility_rank, r.idle_freedoms, r.effective) == (2, 2, 1, 1)
    km = compile_model(m)
    traj = solve_trajectory(km, np.linspace(0, 0.25, 26))
    assert traj.ok, traj.reason
    # the coupler length BC is preserved (world positions of the two sphere centres)
    ws = Workspace(km)
    for q in traj.q[::5]:
        T = forward(ws, q)
        B = T[1] @ np.r_[1.0, 0, 0, 1]
        C = T[3] @ np.r_[3.0, 1.2, 2.5, 1]
        assert np.linalg.norm(B - C) == pytest.approx(math.sqrt(4 + 1.44 + 6.25), abs=1e-11)
        assert np.abs(loop_residual(ws)).max() <= 1e-12


def test_the_rssr_driver_fixes_every_body_but_for_the_idle_spin():
    # with the crank held, only the coupler's spin about BC is left: it moves the coupler (so fixed_by_drivers does not
    # count it fixed) but no joint centre, so with idle freedoms set aside, as check_drivers sets them aside, the
    # driver fixes every body (what the contact step's driven part takes: core.contact.bodies._driven_part)
    from core.kinematics import fixed_by_drivers

    km = compile_model(io.load(EXAMPLES / "rssr.json"))
    assert dict(zip(km.body_names, fixed_by_drivers(km).tolist())) == {
        "ground": True, "crank": True, "coupler": False, "rocker": True}
    assert fixed_by_drivers(km, idle=True).all()
    # a freedom that is not idle stays one: the RSSR without its driver moves crank, coupler and rocker
    undriven = compile_model(io.load(EXAMPLES / "rssr.json"), drivers=False)
    assert fixed_by_drivers(undriven, idle=True).tolist() == [True, False, False, False]


def test_one_call_gives_the_bodies_the_drivers_fix_and_those_they_fix_but_for_idle_freedoms():
    # the RSSR driven at its crank: the coupler's spin about BC is its one freedom left, and it is idle (it moves no
    # joint centre): fixed but for it, not fixed; the contact step's driven part (core.contact.bodies._driven_part)
    # takes both masks from this one call, the kinematics' message (core.run.undriven_massive_bodies) the first
    from core.kinematics import driver_fixed_masks, fixed_by_drivers

    km = compile_model(io.load(EXAMPLES / "rssr.json"))
    fixed, held = driver_fixed_masks(km)
    assert fixed.tolist() == [True, True, False, True] and held.tolist() == [True, True, True, True]
    assert (fixed_by_drivers(km) == fixed).all() and (fixed_by_drivers(km, idle=True) == held).all()
    # the four-bar driven at its crank: every body fixed, no idle freedom
    assert [m.tolist() for m in driver_fixed_masks(compile_model(io.load(EXAMPLES / "fourbar.json")))] == [[True] * 4] * 2


def test_a_floating_part_counts_its_rigid_body_freedoms_and_the_drivers_those_of_the_joints():
    """The four-bar with a pair of bodies pinned to each other and to nothing else (planar). The pair's three
    rigid-body freedoms are freedoms of the mechanism, DOF = 1 (four-bar) + 1 (pin F) + 3 = 5, as the app's status bar
    counts them; the driver check said 2. No driver fixes the pair's rigid-body freedoms (no joint has them as
    coordinates): the check asks for the 2 the joints have, and names the 5 and the 3 floating ones."""
    from core.kinematics import check_drivers

    m = io.load(EXAMPLES / "fourbar.json")
    m.bodies += [Body("a"), Body("b")]
    m.joints.append(Joint("F", "revolute", ("a", "b"), (6.0, 0.0, 0.0)))
    r = rank_mobility(m)
    # rank: 5 coordinates (A..D, F) less the four-bar loop's 3 independent equations, plus 3 for the pair's root
    assert (r.mobility_rank, r.effective, r.floating_freedoms, r.freedoms_to_drive) == (5, 5, 3, 2)
    words = "5 degree(s) of freedom (rank-based, 3 of them floating: of parts not attached to the ground, which no driver fixes)"
    assert r.freedoms_text() == words
    with pytest.raises(LinkwrightError) as e:
        check_drivers(compile_model(m))
    assert e.value.message == f"the mechanism has {words} but 1 driver(s) are given: add 1 driver(s) so the motion is determined"
    # driving F too: every freedom a driver can fix is driven; the pair stays where it is drawn, turning about F
    m.drivers.append(Driver("F", "t"))
    km = compile_model(m)
    check_drivers(km)
    traj = solve_trajectory(km, np.linspace(0, 0.5, 6))
    assert traj.ok, traj.reason
    a = km.body_names.index("a")
    np.testing.assert_allclose(traj.poses[:, a], np.broadcast_to(np.eye(4), traj.poses[:, a].shape), atol=1e-12)
    assert traj.q[-1, km.coord_names.index("F")] == pytest.approx(0.5)
    # in space the pair floats with 6 freedoms
    m.space = "spatial"
    assert rank_mobility(m).floating_freedoms == 6


def test_drivable_freedoms_are_the_rank_based_counts_once_known_else_the_gruebler_less_floating():
    """What the Structure panel colours `M = …` by: the freedoms the drivers must fix."""
    from core.kinematics.mobility import drivable_freedoms
    from core.structure import analyze

    rssr = io.load(EXAMPLES / "rssr.json")
    # Gruebler: 6(4-1) - 5*2 - 3*2 = 2, knowing no idle freedom; rank-based: 2 less the coupler's idle spin = 1
    assert (drivable_freedoms(analyze(rssr), None), drivable_freedoms(analyze(rssr), rank_mobility(rssr))) == (2, 1)
    m = io.load(EXAMPLES / "fourbar.json")
    m.bodies += [Body("a"), Body("b")]
    m.joints.append(Joint("F", "revolute", ("a", "b"), (6.0, 0.0, 0.0)))
    # Gruebler planar: 3(6-1) - 2*5 = 5, less the floating pair's 3; rank-based: 5 less 3 floating, as well
    assert (drivable_freedoms(analyze(m), None), drivable_freedoms(analyze(m), rank_mobility(m))) == (2, 2)


def test_stewart_platform_assembles_and_moves():
    m = io.load(EXAMPLES / "stewart_6ups.json")
    r = rank_mobility(m)
    assert r.mobility_rank == 6 and r.idle_freedoms == 0
    traj = solve_trajectory(compile_model(m), np.linspace(0, 0.5, 11))
    assert traj.ok, traj.reason
    assert np.abs(traj.q).max() > 1e-3


@pytest.mark.parametrize("name", ["fourbar", "slider_crank", "watt_sixbar", "stephenson_sixbar", "fivebar", "jansen",
                                  "quick_return", "double_pendulum"])
def test_planar_examples_solve_a_full_second(name):
    m = io.load(EXAMPLES / f"{name}.json")
    km = compile_model(m)
    traj = solve_trajectory(km, np.linspace(0, 1, 51))
    assert traj.ok, traj.reason
    assert rank_mobility(m).mobility_rank == rank_mobility(m).gruebler  # no special geometry in these
    assert np.all(np.isfinite(traj.point_acc))
    # the body poses stay rigid transforms
    P = body_poses(km, traj.q[-1])
    np.testing.assert_allclose(np.einsum("nji,njk->nik", P[:, :3, :3], P[:, :3, :3]), np.broadcast_to(np.eye(3), P[:, :3, :3].shape), atol=1e-12)


def test_wrong_number_of_drivers_is_a_located_error_before_solving():
    pts = [(0, 0, 0), (0.5, 0.866, 0), (3.331, 2.924, 0), (4, 0, 0)]
    m = _chain_doc(pts, [(0, 0, 1)] * 4, space="planar", drive=None)
    with pytest.raises(LinkwrightError) as e:
        solve_trajectory(compile_model(m), [0.0, 0.1])
    assert e.value.location == "drivers" and "1 degree(s) of freedom" in e.value.message
    m.drivers += [Driver("A", "t"), Driver("D", "t")]
    with pytest.raises(LinkwrightError, match="remove 1"):
        solve_trajectory(compile_model(m), [0.0, 0.1])


def test_bad_driver_expression_is_located():
    pts = [(0, 0, 0), (0.5, 0.866, 0), (3.331, 2.924, 0), (4, 0, 0)]
    m = _chain_doc(pts, [(0, 0, 1)] * 4, space="planar", drive=None)
    m.drivers.append(Driver("A", "omega*t"))
    with pytest.raises(LinkwrightError) as e:
        compile_model(m)
    assert e.value.location == "drivers[0].value" and "omega" in e.value.message
    m.drivers[0] = Driver("A", "log(t - 0.5)")
    with pytest.raises(LinkwrightError) as e:
        solve_trajectory(compile_model(m), np.linspace(0, 1, 5))
    assert e.value.location == "drivers[0].value"


def test_symbolic_loop_equations_vanish_on_the_numeric_solution():
    import sympy
    m = io.load(EXAMPLES / "fourbar.json")
    eqs = planar_loop_equations(m, numeric=True)
    km = compile_model(m)
    traj = solve_trajectory(km, [0.0, 0.13])
    subs = {sympy.Symbol(f"q_{n}", real=True): v for n, v in zip(km.coord_names, traj.q[-1])}
    assert max(abs(float(e.subs(subs))) for e in eqs) < 1e-12


def test_only_fixed_joints_has_rank_mobility_zero():
    # a body welded to the ground: no coordinates at all, Gruebler 3(2-1) - 3 = 0
    m = Mechanism(name="weld", space="planar")
    m.bodies += [Body("ground", ground=True), Body("b")]
    m.joints.append(Joint("W", "fixed", ("ground", "b")))
    r = rank_mobility(m)
    assert (r.gruebler, r.mobility_rank, r.coordinates, r.redundant_constraints) == (0, 0, 0, 0)


from hypothesis import given, settings  # noqa: E402

from tests.core.test_structure import graphs  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(graphs())
def test_rank_mobility_never_raises_on_editable_graphs(m):
    # `linkwright analyze --json` reports it for every document that loads, half-drawn ones included
    r = rank_mobility(m)
    assert 0 <= r.rank <= min(r.equations, r.coordinates)
    assert r.redundant_constraints == r.equations - r.rank >= 0
    assert 0 <= r.idle_freedoms <= r.mobility_rank
    # the freedoms of a singular position are first-order ones, and the drivers fix what the count leaves but the
    # floating parts' freedoms
    assert 0 <= r.singular_freedoms <= r.mobility_rank - r.floating_freedoms
    assert r.effective == r.freedoms_to_drive + r.floating_freedoms and r.freedoms_to_drive >= 0
