"""Structure analysis: incidence, loops, chain class and Gruebler–Kutzbach mobility of every example and of random graphs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import io, structure
from core.joints import JOINT_TYPES
from core.model import Body, Driver, Joint, Mechanism
from tests.conftest import EXAMPLES

# Textbook mobility of each example: (Gruebler–Kutzbach M, independent loops, chain class).
# Planar M = 3(n-1) - 2·p_lower - 1·p_higher; spatial M = 6(n-1) - sum(6 - f).
TEXTBOOK = {
    "fourbar": (3 * 3 - 2 * 4, 1, "closed"),  # 4 bodies, 4 R
    "slider_crank": (3 * 3 - 2 * 4, 1, "closed"),  # 4 bodies, 3 R + 1 P
    "watt_sixbar": (3 * 5 - 2 * 7, 2, "closed"),  # 6 bodies, 7 R
    "stephenson_sixbar": (3 * 5 - 2 * 7, 2, "closed"),
    "fivebar": (3 * 4 - 2 * 5, 1, "closed"),  # 2 DOF
    "planar_3rrr": (3 * 7 - 2 * 9, 2, "closed"),  # 8 bodies, 9 R: 3 DOF
    "double_pendulum": (3 * 2 - 2 * 2, 0, "open"),
    "jansen": (3 * 7 - 2 * 10, 3, "closed"),  # 8 bodies, 10 R
    "rssr": (6 * 3 - 5 * 2 - 3 * 2, 1, "closed"),  # 2 = 1 + the coupler's idle spin
    "stewart_6ups": (6 * 13 - 4 * 6 - 5 * 6 - 3 * 6, 5, "closed"),  # 14 bodies; U(2) P(1) S(3) per leg
    "quick_return": (3 * 4 - 2 * 5 - 1 * 1, 2, "closed"),  # 5 bodies, 4 R + 1 P + 1 slot (higher pair)
}


@pytest.mark.parametrize("stem", sorted(TEXTBOOK))
def test_example_has_textbook_mobility(stem):
    mech = io.load(EXAMPLES / f"{stem}.json")
    rep = structure.analyze(mech)
    m, loops, chain = TEXTBOOK[stem]
    assert (rep.mobility, rep.loops, rep.chain) == (m, loops, chain)
    assert rep.mobility_formula.endswith(f"= {m}")
    assert len(rep.fundamental_loops) == loops


def test_fourbar_report_in_detail(fourbar_dict):
    import json

    rep = structure.analyze(io.loads(json.dumps(fourbar_dict)))
    # Columns A..D join ground-crank, crank-coupler, coupler-rocker, rocker-ground.
    assert rep.incidence.tolist() == [[1, 0, 0, 1], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
    assert rep.mobility_formula == "M = 3(4-1) - 2·4 = 1"
    assert rep.degrees == [2, 2, 2, 2] and rep.simple
    assert sorted(rep.fundamental_loops[0]) == [0, 1, 2, 3]
    assert rep.warnings == []
    assert rep.dependent_coordinates == 3  # 4 joint angles, 1 free


def test_fundamental_loop_is_a_closed_walk():
    mech = io.load(EXAMPLES / "jansen.json")
    rep = structure.analyze(mech)
    for joints, dirs, bodies in zip(rep.fundamental_loops, rep.loop_directions, rep.loop_bodies):
        # Walking the joints in order, each leaves the body the previous one arrived at, and the walk returns home.
        at = bodies[0]
        for k, d in zip(joints, dirs):
            a, b = (mech.body_index(n) for n in mech.joints[k].bodies)
            frm, to = (a, b) if d == 1 else (b, a)
            assert frm == at
            at = to
        assert at == bodies[0]


def test_mixed_chain_and_warnings():
    m = Mechanism(space="planar")
    for n in ("g", "a", "b", "c", "tail", "lonely"):
        m.add_body(Body(n, ground=(n == "g")))
    for name, a, b in (("J1", "g", "a"), ("J2", "a", "b"), ("J3", "b", "g"), ("J4", "b", "tail")):
        m.add_joint(Joint(name, "revolute", (a, b)))
    rep = structure.analyze(m)
    assert rep.chain == "mixed" and rep.loops == 1 and not rep.simple
    assert any("'lonely' has no joint" in w for w in rep.warnings)
    assert any("'c' has no joint" in w for w in rep.warnings)


def test_no_ground_several_grounds_disconnected():
    m = Mechanism(space="planar")
    for n in "abcd":
        m.add_body(Body(n))
    m.add_joint(Joint("J1", "revolute", ("a", "b")))
    m.add_joint(Joint("J2", "revolute", ("c", "d")))
    rep = structure.analyze(m)
    assert rep.ground is None
    assert any("no ground" in w for w in rep.warnings)
    assert any("disconnected" in w for w in rep.warnings)
    m.set_ground("a")
    m.set_ground("c")
    rep = structure.analyze(m)
    # Two grounds are one fixed frame: n_eff = 3, M = 3·2 - 2·2 = 2.
    assert rep.mobility == 2 and any("2 ground bodies with joints (a, c)" in w for w in rep.warnings)


def test_the_part_attached_to_the_ground_is_found_through_joints_of_any_direction():
    """structure.grounded_part: every ground body and what joints attach to it, through joints written either way
    round (J3 is b -> g); a jointed part that reaches no ground, and a lone body, float. attached_part: the part of
    given bodies."""
    m = Mechanism(space="planar")
    for n in ("g", "g2", "a", "b", "c", "d", "lonely"):
        m.add_body(Body(n, ground=n in ("g", "g2")))
    for name, a, b in (("J1", "a", "g"), ("J2", "a", "b"), ("J3", "b", "g"), ("J4", "c", "d")):
        m.add_joint(Joint(name, "revolute", (a, b)))
    assert structure.grounded_part(m) == {"g", "g2", "a", "b"}  # (g2 has no joint: ground all the same)
    assert structure.attached_part(m, ["d"]) == {"c", "d"}
    assert structure.attached_part(m, ["lonely"]) == {"lonely"}
    assert structure.grounded_part(Mechanism()) == set()


def test_the_gruebler_driver_warning_sets_a_floating_parts_freedoms_aside(fourbar_dict):
    """The four-bar (driven at A) with a pair of bodies pinned to each other and to nothing else: M = 3(6-1) - 2·5 = 5,
    3 of them the pair's rigid-body freedoms (one floating part), which no driver fixes: 2 freedoms for drivers, so
    one driver is missing, and with F driven none (it asked for 5)."""
    m = io.from_dict(fourbar_dict)
    m.add_body(Body("a"))
    m.add_body(Body("b"))
    m.add_joint(Joint("F", "revolute", ("a", "b")))
    rep = structure.analyze(m)
    assert (rep.mobility, rep.floating_parts) == (5, 1)
    assert rep.driver_warning == ("1 driver(s) for mobility 5 (3 of them floating: of parts not attached to the ground, "
                                  "which no driver fixes) as counted: the motion is not fully determined (unless the "
                                  "rest are idle freedoms, such as a coupler's spin)")
    m.add_driver(Driver("F", "t"))
    assert structure.analyze(m).driver_warning == ""
    # without any ground one part is the fixed frame: the other floats
    m.set_ground("ground", False)
    assert structure.analyze(m).floating_parts == 1


def test_ground_bodies_without_joints_are_contact_geometry_not_a_warning():
    """A bin's floor and walls (ground bodies with shapes and no joint) are no second fixed frame of the joint
    graph: the shipped contact_pile (five ground half-spaces) has no ground warning."""
    from core import io
    from pathlib import Path

    pile = io.load(Path(__file__).resolve().parents[2] / "resources" / "examples" / "contact_pile.json")
    assert sum(b.ground for b in pile.bodies) == 5
    assert not any("ground bodies" in w for w in structure.analyze(pile).warnings)


def test_overconstrained_and_structure_warnings():
    m = Mechanism(space="planar")
    for n in ("g", "a", "b"):
        m.add_body(Body(n, ground=n == "g"))
    for name, a, b in (("J1", "g", "a"), ("J2", "a", "b"), ("J3", "b", "g")):
        m.add_joint(Joint(name, "revolute", (a, b)))
    rep = structure.analyze(m)
    assert rep.mobility == 0 and any("structure" in w for w in rep.warnings)  # a triangle: 3·2 - 2·3 = 0
    m.add_joint(Joint("J4", "revolute", ("a", "g")))
    rep = structure.analyze(m)
    assert rep.mobility == -2 and any("overconstrained" in w for w in rep.warnings)
    assert rep.loops == 2


def test_empty_and_single_body_documents():
    rep = structure.analyze(Mechanism())
    assert rep.incidence.shape == (0, 0) and rep.loops == 0 and rep.mobility == 0
    # the formula the structure panel shows after File ▸ New adds up (it read "M = 3(0-1) = 0")
    assert rep.mobility_formula == "M = 0 (no bodies)"
    m = Mechanism(space="spatial")
    m.add_body(Body("g", ground=True))
    assert structure.analyze(m).mobility == 0
    assert structure.analyze(m).mobility_formula == "M = 6(1-1) = 0"


def test_driver_count_warning(fourbar_dict):
    import json

    fourbar_dict["drivers"] = []
    rep = structure.analyze(io.loads(json.dumps(fourbar_dict)))
    assert any("no drivers" in w for w in rep.warnings)


@st.composite
def graphs(draw):
    """Random mechanisms the edit API can build: names, any joint types of the space, any body pairs."""
    space = draw(st.sampled_from(["planar", "spatial"]))
    n = draw(st.integers(0, 12))
    types = [t for t, jt in JOINT_TYPES.items() if jt.dof(space) is not None]
    m = Mechanism(space=space)
    for i in range(n):
        m.add_body(Body(f"b{i}", ground=draw(st.booleans()) if i < 3 else False))
    if n >= 2:
        for k in range(draw(st.integers(0, 20))):
            a = draw(st.integers(0, n - 1))
            b = draw(st.integers(0, n - 2))
            b = b + 1 if b >= a else b  # never a self-joint
            axis = (1.0, 0.0, 0.0) if draw(st.booleans()) and space == "spatial" else None
            jtype = draw(st.sampled_from(types))
            pitch = 0.1 if JOINT_TYPES[jtype].pitch else None  # helical joints need one
            m.add_joint(Joint(f"j{k}", jtype, (f"b{a}", f"b{b}"), axis=axis, pitch=pitch))
    # Then some of the other edits the GUI makes: removals, renames, re-pointing joints.
    for step in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["remove_body", "remove_joint", "rename", "repoint"]))
        if kind == "remove_body" and m.bodies:
            m.remove_body(draw(st.sampled_from(m.body_names())))
        elif kind == "remove_joint" and m.joints:
            m.remove_joint(draw(st.sampled_from(m.joint_names())))
        elif kind == "rename" and m.bodies:
            m.rename_body(draw(st.sampled_from(m.body_names())), f"renamed{step}")
        elif kind == "repoint" and m.joints and len(m.bodies) >= 2:
            a, b = draw(st.permutations(m.body_names()))[:2]
            m.update_joint(draw(st.sampled_from(m.joint_names())), bodies=(a, b))
    return m


@settings(max_examples=150, deadline=None)
@given(graphs())
def test_random_graph_invariants(m):
    rep = structure.analyze(m)
    n, j = len(m.bodies), len(m.joints)
    if j:
        assert (rep.incidence.sum(axis=0) == 2).all()  # every joint joins exactly two distinct bodies
    n_eff = n - max(len(rep.grounds) - 1, 0)  # all grounds are one fixed frame
    assert rep.loops == j - n_eff + len(rep.components)
    assert len(rep.fundamental_loops) == rep.loops
    assert sorted(rep.tree_joints + rep.chords) == list(range(j))
    assert sum(len(c) for c in rep.components) == n
    assert rep.degrees == rep.incidence.sum(axis=1).tolist()
    lam = 3 if m.space == "planar" else 6
    n_eff = n - max(len(rep.grounds) - 1, 0)
    expected = lam * (n_eff - 1) - sum(lam - (JOINT_TYPES[x.type].dof(m.space)) for x in m.joints) if n_eff else 0
    assert rep.mobility == expected
    assert rep.to_json()["mobility"] == rep.mobility


def test_self_joint_cannot_be_built():
    m = Mechanism()
    m.add_body(Body("a"))
    from core.errors import LinkwrightError

    with pytest.raises(LinkwrightError, match="itself"):
        m.add_joint(Joint("J", "revolute", ("a", "a")))


def test_large_graph_analyses():
    rng = np.random.default_rng(1)
    m = Mechanism(space="planar")
    for i in range(1000):
        m.bodies.append(Body(f"b{i}", ground=i == 0))
    for k in range(1500):
        a = int(rng.integers(0, 1000)) if k >= 999 else k + 1
        b = int(rng.integers(0, 1000)) if k >= 999 else int(rng.integers(0, k + 1))
        if a == b:
            b = (a + 1) % 1000
        m.joints.append(Joint(f"j{k}", "revolute", (f"b{a}", f"b{b}")))
    rep = structure.analyze(m)
    assert rep.loops == 1500 - 1000 + 1 == len(rep.fundamental_loops)


def test_four_bar_with_two_ground_bodies_is_the_same_four_bar(fourbar_dict):
    import json

    from core.kinematics import compile_model, solve_trajectory

    one = io.loads(json.dumps(fourbar_dict))
    # The same linkage drawn with the second pivot on its own ground body "base2".
    fourbar_dict["bodies"].append({"name": "base2", "ground": True})
    fourbar_dict["joints"][3]["bodies"] = ["rocker", "base2"]
    two = io.loads(json.dumps(fourbar_dict))
    r1, r2 = structure.analyze(one), structure.analyze(two)
    # n_eff = 5 - 1 = 4 bodies, 4 joints: L = 4 - 4 + 1 = 1 loop, closed through the fixed frame; M = 3·3 - 2·4 = 1.
    assert (r2.loops, r2.mobility, r2.chain, len(r2.components)) == (1, 1, "closed", 1)
    assert sorted(r2.fundamental_loops[0]) == [0, 1, 2, 3]
    times = np.linspace(0.0, 1.0, 21)
    t1, t2 = solve_trajectory(compile_model(one), times), solve_trajectory(compile_model(two), times)
    assert t1.ok and t2.ok
    assert np.allclose(t1.q, t2.q, atol=1e-10) and np.allclose(t1.points, t2.points, atol=1e-10)


def test_a_dynamics_document_is_not_warned_of_missing_drivers():
    # the pendulum strike example runs as contact dynamics: its pin's freedom moves under gravity, no driver missing;
    # the same mechanism without its simulation section and free ball is a kinematics document: the warning stays
    from dataclasses import replace

    mech = io.load(EXAMPLES / "contact_pendulum_strike.json")
    assert not any("driver" in w for w in structure.analyze(mech).warnings)
    kin = replace(mech, simulation=None, bodies=[b for b in mech.bodies if b.name != "ball"])
    assert any("no drivers" in w for w in structure.analyze(kin).warnings)


def test_the_driver_warning_is_named_and_replaced_by_the_rank_based_one():
    """The structure report's driver warning comes from the Gruebler count (mobility 2 for the RSSR, whose coupler
    spin is idle); report_warnings puts the rank-based statement in its place (none: one driver is enough)."""
    from core.kinematics import rank_mobility
    from core.kinematics.mobility import report_warnings

    mech = io.load(EXAMPLES / "rssr.json")
    rep = structure.analyze(mech)
    assert rep.driver_warning and rep.warnings == [rep.driver_warning]
    assert report_warnings(rep, None) == rep.warnings  # (the rank not known: the count there is)
    assert report_warnings(rep, rank_mobility(mech)) == []
    from dataclasses import replace

    bare = replace(mech, drivers=[])
    warned = report_warnings(structure.analyze(bare), rank_mobility(bare))
    assert warned == ["the mechanism has 1 degree(s) of freedom (rank-based, 1 idle freedom(s) set aside) but 0 "
                      "driver(s) are given: add 1 driver(s) so the motion is determined"]
