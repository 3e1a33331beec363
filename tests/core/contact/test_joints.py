"""Joints as bilateral constraints of the contact step: the constraint rows from the joint table, their analytic
Jacobians against central differences, and the stepper's mechanisms against closed forms."""

import json
import math

import numpy as np
import pytest

from core import io
from core.contact import build_model, simulate
from core.contact.bodies import cayley
from core.contact.joints import JointSpec, eval_joint, joint_constraints, joint_rows
from core.errors import LinkwrightError
from core.joints import JOINT_TYPES
from core.transforms import quat_to_matrix

G = 9.81
SIMULATED = list(JOINT_TYPES)  # every type of format v1
PITCH = 0.05  # (helical)


def _spec(type_name, rng):
    """A joint of this type between two bodies with random frames (relative to their centres of mass)."""
    R1, R2 = quat_to_matrix(rng.standard_normal(4)), quat_to_matrix(rng.standard_normal(4))
    return JointSpec("j", type_name, 0, 1, joint_rows(JOINT_TYPES[type_name]), 0.3 * rng.standard_normal(3), R1,
                     0.3 * rng.standard_normal(3), R2, PITCH)


@pytest.mark.parametrize("name", SIMULATED)
def test_rows_leave_the_joint_type_its_freedoms(name):
    jt = JOINT_TYPES[name]
    dof = jt.dof_spatial if jt.dof_spatial is not None else jt.dof_planar
    assert 6 - joint_rows(jt).n == dof


@pytest.mark.parametrize("name", SIMULATED)
def test_constraints_vanish_on_every_motion_of_the_joint_and_not_off_it(name):
    # B placed by the joint's own motion from the table, oTb = oTa Fa M(q) Fb^-1, closes every row for any q; a
    # motion the joint does not allow (a small generic twist on top) opens at least one row
    rng = np.random.default_rng(7)
    jt = JOINT_TYPES[name]
    js = _spec(name, rng)
    pA, RA = rng.standard_normal(3), quat_to_matrix(rng.standard_normal(4))
    for _ in range(5):
        q = 3 * rng.standard_normal(max(jt.n_coordinates, 1))  # (a screw turned by up to several turns)
        M = jt.local_motion(q, PITCH)
        # A's joint frame in the world, then B's, then B's centre of mass from its joint frame
        WA_R, WA_p = RA @ js.axes_a, pA + RA @ js.rho_a
        WB_R, WB_p = WA_R @ M[:3, :3], WA_p + WA_R @ M[:3, 3]
        RB = WB_R @ js.axes_b.T
        pB = WB_p - RB @ js.rho_b
        turn = q[0] + 0.3  # (a screw's angle is known from a nearby configuration: within half a turn)
        c, _ = joint_constraints(js, 0.7, pA, RA, pB, RB, turn)
        np.testing.assert_allclose(c, 0.0, atol=1e-12)
        if js.rows.n:
            tw = 1e-3 * rng.standard_normal(6)
            c2, _ = joint_constraints(js, 0.7, pA, RA, pB + tw[:3], cayley(0.5 * tw[3:]) @ RB, turn)
            assert np.abs(c2).max() > 1e-6


@pytest.mark.parametrize("name", SIMULATED)
def test_gradients_match_finite_differences(name):
    rng = np.random.default_rng(11)
    js = _spec(name, rng)
    pA, pB = rng.standard_normal(3), rng.standard_normal(3)
    RA, RB = quat_to_matrix(rng.standard_normal(4)), quat_to_matrix(rng.standard_normal(4))
    _c, Gr = joint_constraints(js, 0.7, pA, RA, pB, RB, 7.0)
    eps = 1e-6
    for i in range(12):
        d = np.zeros(12)
        d[i] = eps

        def at(s):
            x = s * d  # world displacements and rotation perturbations R -> (I + [th]x) R (exactly: cayley)
            return joint_constraints(js, 0.7, pA + x[0:3], cayley(0.5 * x[3:6]) @ RA, pB + x[6:9],
                                     cayley(0.5 * x[9:12]) @ RB, 7.0)[0]

        np.testing.assert_allclose(Gr[:, i], (at(1) - at(-1)) / (2 * eps), atol=1e-8)


@pytest.mark.parametrize("name", SIMULATED)
@pytest.mark.parametrize("dyn_a,dyn_b", [(True, True), (False, True), (True, False)])
def test_row_jacobian_matches_finite_differences(name, dyn_a, dyn_b):
    rng = np.random.default_rng(5)
    js = _spec(name, rng)
    h = 0.01
    pA0, pB0 = rng.standard_normal(3), rng.standard_normal(3)
    RA0, RB0 = quat_to_matrix(rng.standard_normal(4)), quat_to_matrix(rng.standard_normal(4))
    x = np.concatenate((rng.standard_normal(3), 20 * rng.standard_normal(3), rng.standard_normal(3),
                        20 * rng.standard_normal(3)))

    def f(xx):
        return eval_joint(js, 0.7, h, pA0, RA0, xx[0:3], xx[3:6], dyn_a, pB0, RB0, xx[6:9], xx[9:12], dyn_b, -4.0)

    r, J = f(x)
    eps = 1e-6
    for i in range(12):
        e = np.zeros(12)
        e[i] = eps
        fd = (f(x + e)[0] - f(x - e)[0]) / (2 * eps)
        np.testing.assert_allclose(J[:, i], fd, atol=1e-6, rtol=1e-6)
        if (i < 6 and not dyn_a) or (i >= 6 and not dyn_b):
            assert np.all(J[:, i] == 0.0) and np.all(fd == 0.0)  # a static body does not move


# ---- the step: mechanisms against closed forms -------------------------------------------------------------------


def _doc(bodies, joints, gravity=(0, 0, -G), friction=0.5):
    return io.loads(json.dumps({"format": "linkwright.mechanism", "version": 1, "space": "spatial",
                                "gravity": list(gravity), "bodies": bodies, "joints": joints,
                                "contact": {"friction": friction}}))


def _rod(name, mass, length, position, angle, origin_at_end=True):
    """A slender rod (no shape) along its body x axis from its frame origin, turned by angle about y: mass,
    centre of mass and inertia given in the file (I = m l^2 / 12 about the centre, across the rod)."""
    i_c = mass * length ** 2 / 12.0
    return {"name": name, "mass": mass, "com": [0.5 * length, 0, 0],
            "inertia": [[1e-4 * i_c, 0, 0], [0, i_c, 0], [0, 0, i_c]],
            "pose": {"position": list(position), "orientation": [math.cos(angle / 2), 0, math.sin(angle / 2), 0]}}


def _steps(model, h, n):
    """(states, step results) of n steps; every step converged and closed every joint to 1e-9 m and 1e-9 rad."""
    from core.contact import initial_state
    from core.contact.joints import joint_errors
    from core.contact.recording import iter_steps

    states, results = [initial_state(model)], []
    for res in iter_steps(model, h, n):
        assert res.converged, res.reason
        err = joint_errors(model, res.state)
        assert np.all(err <= 1e-9), (res.state.t, err)
        states.append(res.state)
        results.append(res)
    return states, results


def test_compound_pendulum_small_amplitude_period():
    # a rod of length l hinged at one end about y: I_O = m l^2 / 3 about the pivot, its centre of mass d = l / 2
    # below it, so for small amplitude T = 2 pi sqrt(I_O / (m g d)) (the amplitude correction theta0^2 / 16 = 2.5e-5)
    m, l, th0 = 2.0, 1.0, 0.02
    # the rod hangs along -z at angle 0: its x axis turned by pi/2 + th0 about y points down and back
    mech = _doc([{"name": "ground", "ground": True}, _rod("rod", m, l, (0, 0, 0), math.pi / 2 - th0)],
                [{"name": "pin", "type": "revolute", "bodies": ["ground", "rod"], "axis": [0, 1, 0]}])
    model = build_model(mech)
    h = 0.005
    T = 2 * math.pi * math.sqrt((m * l * l / 3) / (m * G * l / 2))
    states, _ = _steps(model, h, int(1.3 * T / h))
    x = np.array([s.p[1, 0] for s in states])  # the centre of mass's swing, x = d sin(theta)
    t = np.arange(x.size) * h
    up = np.flatnonzero((x[:-1] < 0) & (x[1:] >= 0))  # upward zero crossings, interpolated
    tc = t[up] - x[up] * h / (x[up + 1] - x[up])
    down = np.flatnonzero((x[:-1] > 0) & (x[1:] <= 0))
    td = t[down] - x[down] * h / (x[down + 1] - x[down])
    crossings = np.sort(np.concatenate((tc, td)))
    assert crossings.size >= 2
    period = 2 * np.diff(crossings).mean()
    assert abs(period / T - 1) < 5e-4, (period, T)
    # the pivot stays at the origin: the centre of mass at distance l / 2
    r = np.array([np.linalg.norm(s.p[1]) for s in states])
    np.testing.assert_allclose(r, l / 2, atol=1e-9)


def test_block_on_a_frictionless_inclined_prismatic_joint():
    # a box (mass from its shape and density) on a prismatic joint whose axis falls at theta below the horizontal:
    # along the axis only gravity's component acts, v = g sin(theta) t; the joint holds it on the line and keeps its
    # orientation
    theta = 0.3
    axis = [math.cos(theta), 0.0, -math.sin(theta)]
    box = {"name": "block", "density": 500.0, "shape": {"type": "box", "size": [0.2, 0.1, 0.1]},
           "pose": {"position": [0, 0, 1]}}
    mech = _doc([{"name": "ground", "ground": True}, box],
                [{"name": "slide", "type": "prismatic", "bodies": ["ground", "block"], "at": [0, 0, 1], "axis": axis}])
    model = build_model(mech)
    h = 0.01
    states, results = _steps(model, h, 50)
    a = np.array(axis)
    for k, s in enumerate(states):
        t = k * h
        np.testing.assert_allclose(s.v[1], G * math.sin(theta) * t * a, atol=1e-9)
        np.testing.assert_allclose(s.w[1], 0.0, atol=1e-9)
    # the joint's reaction on the block carries gravity's normal component: m g cos(theta) over each step
    m = model.mass[1]
    F = np.array([r.joint_impulse[0, 0:3] for r in results]) / h
    np.testing.assert_allclose(np.linalg.norm(F, axis=1), m * G * math.cos(theta), rtol=1e-8)
    np.testing.assert_allclose(F @ a, 0.0, atol=1e-8 * m * G)


def _double_pendulum(h, n):
    l, m = 0.5, 1.0
    bodies = [{"name": "ground", "ground": True}, _rod("upper", m, l, (0, 0, 0), 0.3),
              _rod("lower", m, l, (l * math.cos(0.3), 0, -l * math.sin(0.3)), 1.2)]
    joints = [{"name": "A", "type": "revolute", "bodies": ["ground", "upper"], "axis": [0, 1, 0]},
              {"name": "B", "type": "revolute", "bodies": ["upper", "lower"], "axis": [0, 1, 0],
               "at": [l * math.cos(0.3), 0, -l * math.sin(0.3)]}]
    model = build_model(_doc(bodies, joints))
    states, _ = _steps(model, h, n)
    return _energy(model, states)


def _energy(model, states):
    """Kinetic + gravitational potential energy of the dynamic bodies at each state (J)."""
    E = []
    for s in states:
        e = 0.0
        for i in np.flatnonzero(model.dynamic):
            R = quat_to_matrix(s.q[i])
            Iw = R @ model.inertia_body[i] @ R.T
            e += 0.5 * model.mass[i] * s.v[i] @ s.v[i] + 0.5 * s.w[i] @ Iw @ s.w[i] - model.mass[i] * (
                model.gravity @ s.p[i])
        E.append(e)
    return np.array(E)


def test_double_pendulum_energy_error_shrinks_with_the_step():
    # no friction, no contact: the energy is constant; the step's error in it must be small (bounded over the
    # run) and at least first order in h (halving h at least nearly halves it)
    E1 = _double_pendulum(0.01, 100)
    E2 = _double_pendulum(0.005, 200)
    scale = 1.0 * G * 0.5  # m g l: the energy exchanged in the swing
    e1, e2 = np.abs(E1 - E1[0]).max(), np.abs(E2 - E2[0]).max()
    assert e1 < 0.03 * scale, e1  # (measured: 0.021 m g l at h = 0.01, oscillating, no drift)
    assert e2 < 0.6 * e1, (e1, e2)


def test_pendulum_strikes_a_resting_sphere():
    # a ball on a pin swings down and strikes a ball resting on the floor: contact and joint in one step; the joint
    # stays closed, no body enters another or the floor, the struck ball leaves forwards
    r = 0.05
    pivot = np.array([0.0, 0.0, 0.555])
    arm = 0.5
    a0 = 0.6  # initial angle of the arm from the vertical, towards -x
    bob_at = pivot + arm * np.array([-math.sin(a0), 0.0, -math.cos(a0)])
    floor = {"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}}
    bob = {"name": "bob", "density": 2000.0, "shape": {"type": "sphere", "radius": r},
           "pose": {"position": bob_at.tolist()}}
    ball = {"name": "ball", "density": 2000.0, "shape": {"type": "sphere", "radius": r},
            "pose": {"position": [0.09, 0, r]}}
    mech = _doc([floor, bob, ball], [{"name": "pin", "type": "revolute", "bodies": ["floor", "bob"],
                                      "at": pivot.tolist(), "axis": [0, 1, 0]}])
    model = build_model(mech)
    from contact_scenes import check_invariants

    rec = simulate(model, t_end=0.5, dt=0.005)
    assert rec.completed, rec.reason
    check_invariants(model, rec, energy=False)
    # the bob stays on its circle about the pivot (its centre of mass is its centre)
    bob_i = rec.body_names.index("bob")
    np.testing.assert_allclose(np.linalg.norm(rec.position[:, bob_i] - pivot, axis=1), arm, atol=1e-9)
    ball_i = rec.body_names.index("ball")
    pair = rec.pair_names.index("bob/ball") if "bob/ball" in rec.pair_names else rec.pair_names.index("ball/bob")
    assert rec.pn[:, pair].max() > 0  # they met
    assert rec.velocity[-1, ball_i, 0] > 0.1  # and the ball left forwards


def test_dynamic_body_without_shape_or_inertia_is_refused_located():
    mech = _doc([{"name": "ground", "ground": True}, {"name": "bar", "mass": 1.0}],
                [{"name": "pin", "type": "revolute", "bodies": ["ground", "bar"]}])
    with pytest.raises(LinkwrightError) as e:
        build_model(mech)
    assert str(e.value).startswith("bodies[1]:") and "needs a shape or an inertia" in str(e.value)
    mech = _doc([{"name": "ground", "ground": True}, {"name": "bar"}],
                [{"name": "pin", "type": "revolute", "bodies": ["ground", "bar"]}])
    with pytest.raises(LinkwrightError) as e:
        build_model(mech)
    assert str(e.value).startswith("bodies[1]:") and "needs a mass" in str(e.value)


def test_a_halfspace_on_a_body_with_mass_is_refused_located():
    # a half-space has no finite mass or inertia: the message names the body (the Properties type box offers
    # "halfspace" on a free body, and the CLI then printed the reason without saying which body)
    from core import io
    doc = {"format": "linkwright.mechanism", "version": 1, "space": "spatial", "gravity": [0, 0, -9.81],
           "bodies": [{"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1]}},
                      {"name": "slab", "mass": 1.0, "shape": {"type": "halfspace", "normal": [0, 0, 1]}}]}
    with pytest.raises(LinkwrightError) as e:
        build_model(io.loads(json.dumps(doc)))
    assert str(e.value).startswith("bodies[1]:") and "unbounded" in str(e.value)


def test_reactions_of_a_hanging_pendulum_are_recorded(tmp_path):
    # a bob hanging at rest below its pin: the pin holds its weight, force m g upwards and no moment about the pin
    # (the bob's centre of mass is on the vertical through it), at every step; the recording keeps them in .npz and
    # .csv, and a recording without joints is written as before
    from core.contact import load_npz

    bob = {"name": "bob", "mass": 2.0, "inertia": [[0.01, 0, 0], [0, 0.01, 0], [0, 0, 0.01]],
           "pose": {"position": [0, 0, -0.4]}}
    mech = _doc([{"name": "ground", "ground": True}, bob],
                [{"name": "pin", "type": "spherical", "bodies": ["ground", "bob"]}])
    rec = simulate(build_model(mech), t_end=0.05, dt=0.01)
    assert rec.completed and rec.joint_names == ["pin"]
    np.testing.assert_allclose(rec.joint_force[1:, 0], np.tile([0, 0, 2.0 * G], (5, 1)), atol=1e-9)
    np.testing.assert_allclose(rec.joint_torque[1:, 0], 0.0, atol=1e-9)
    np.testing.assert_allclose(rec.joint_force[0], 0.0)  # row 0: the initial state, no step yet
    rec.save(tmp_path / "r.npz")
    back = load_npz(tmp_path / "r.npz")
    assert back.joint_names == ["pin"]
    np.testing.assert_array_equal(back.joint_force, rec.joint_force)
    rec.save(tmp_path / "r.csv")
    header = (tmp_path / "r.csv").read_text().splitlines()[0].split(",")
    assert header[-8:] == ["pin.fx", "pin.fy", "pin.fz", "pin.tx", "pin.ty", "pin.tz", "solver.iters",
                           "solver.residual"]
    free = simulate(build_model(_doc([{"name": "ball", "mass": 1.0, "shape": {"type": "sphere", "radius": 0.1}}],
                                     [])), t_end=0.02, dt=0.01)
    free.save(tmp_path / "f.npz")
    with np.load(tmp_path / "f.npz") as d:
        assert not any(k.startswith("joint") for k in d.files)
    assert load_npz(tmp_path / "f.npz").joint_names == []


def test_cli_simulates_the_pendulum_example(tmp_path):
    from pathlib import Path

    from core.cli import main as cli_main

    example = Path(__file__).resolve().parents[3] / "resources" / "examples" / "contact_pendulum_strike.json"
    out = tmp_path / "run.csv"
    assert cli_main(["simulate", str(example), "--t-end", "0.3", "--out", str(out)]) == 0
    rows = (out.read_text()).splitlines()
    assert len(rows) == 1 + 61 and "pin.fx" in rows[0].split(",")


def _bar(name, mass, a, b):
    """A slender bar from point a to point b in the x-y plane (no shape): mass, centre of mass, inertia in the file."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    length = float(np.linalg.norm(b - a))
    ang = math.atan2(b[1] - a[1], b[0] - a[0])
    i_c = mass * length ** 2 / 12.0
    return {"name": name, "mass": mass, "com": [0.5 * length, 0, 0],
            "inertia": [[1e-3 * i_c, 0, 0], [0, i_c, 0], [0, 0, i_c]],
            "pose": {"position": a.tolist(), "orientation": [math.cos(ang / 2), 0, 0, math.sin(ang / 2)]}}


def test_planar_four_bar_in_space_swings_with_its_redundant_constraints():
    # four parallel revolutes in a spatial file: 3 x 6 - 4 x 5 = -2 by the count, mobility 1 in fact (two constraints
    # are redundant, so the step's Newton matrix is singular in the impulses); the solver's Levenberg-Marquardt
    # directions take it through: every joint closed at every step, the energy error small and first order
    A, B, C, D = [0, 0, 0], [0.5, 0.866, 0], [3.331, 2.924, 0], [4, 0, 0]
    bodies = [{"name": "ground", "ground": True}, _bar("crank", 1.0, A, B), _bar("coupler", 1.0, B, C),
              _bar("rocker", 1.0, D, C)]

    def pin(name, a, b, at):
        return {"name": name, "type": "revolute", "bodies": [a, b], "at": at, "axis": [0, 0, 1]}

    joints = [pin("A", "ground", "crank", A), pin("B", "crank", "coupler", B), pin("C", "coupler", "rocker", C),
              pin("D", "rocker", "ground", D)]
    model = build_model(_doc(bodies, joints, gravity=(0, -G, 0)))
    errs = []
    for h, n in ((0.01, 60), (0.005, 120)):
        states, results = _steps(model, h, n)
        E = _energy(model, states)
        # the error against the kinetic energy the swing reaches (the potential energy it converts)
        swing = max(_kinetic(model, s) for s in states)
        errs.append(np.abs(E - E[0]).max() / swing)
        assert all(np.all(np.isfinite(r.joint_impulse)) for r in results)
        # it moves: the crank turns under gravity (the coupler's weight pulls B down)
        assert abs(states[-1].w[1, 2]) > 1.0
    # (measured: 2.7 % at h = 0.01, 1.4 % at h / 2)
    assert errs[0] < 0.05 and errs[1] < 0.6 * errs[0], errs


def _kinetic(model, s):
    """Kinetic energy of the dynamic bodies at state s (J)."""
    out = 0.0
    for i in np.flatnonzero(model.dynamic):
        R = quat_to_matrix(s.q[i])
        out += 0.5 * model.mass[i] * s.v[i] @ s.v[i] + 0.5 * s.w[i] @ (R @ model.inertia_body[i] @ R.T) @ s.w[i]
    return out


def test_element_matrix_solves_with_elements_that_own_no_unknowns():
    # a joint is an element of its bodies' velocities and of its impulses, none of them its own (its rows do not
    # depend on its impulses, the own-own block would be zero): the elimination leaves them to the reduced system;
    # the solve and the Levenberg-Marquardt direction agree with dense linear algebra
    from core.contact.elements import ElementMatrix

    rng = np.random.default_rng(2)
    n = 6 * 3 + 2 * 4 + 3  # three bodies, two pair blocks of 4 own unknowns, one joint with 3 impulses
    pair_cols = np.array([np.r_[0:6, 6:12, 18:22], np.r_[6:12, 12:18, 22:26]])
    pair_blk = rng.standard_normal((2, 16, 16))
    pair_blk[:, 12:, 12:] += 4 * np.eye(4)
    joint_cols = np.array([np.r_[0:6, 12:18, 26:29]])
    joint_blk = np.zeros((1, 15, 15))
    joint_blk[0, 0:12, 12:] = rng.standard_normal((12, 3))  # body rows against the impulses
    joint_blk[0, 12:, 0:12] = rng.standard_normal((3, 12))  # joint rows against the velocities
    diag = np.r_[np.ones(18), np.zeros(11)]
    A = ElementMatrix(n, diag, [(pair_cols, pair_blk, 4), (joint_cols, joint_blk, 0)])
    dense = A.toarray()
    b = rng.standard_normal(n)
    np.testing.assert_allclose(A.solve(b), np.linalg.solve(dense, b), rtol=1e-9, atol=1e-10)
    nu = 1e-2
    lm = np.linalg.solve(dense.T @ dense + nu * np.eye(n), -dense.T @ b)
    np.testing.assert_allclose(A.lm_solve(nu, b), lm, rtol=1e-8, atol=1e-10)


def test_pendulum_strikes_a_row_of_balls_through_the_block_elimination():
    # enough pairs that the step's Newton equations are solved by eliminating the pair blocks (more than 250
    # unknowns): the joint's impulses go to the reduced system with the velocities; the joint stays closed and no
    # body enters another.  The balls touch: the impact's impulses through the row are indeterminate (the step
    # at impact stalled before the joint rows were weighted, plan._JOINT_WEIGHT)
    from contact_scenes import check_invariants

    from core.contact import initial_state, step
    from core.contact.stepper import Workspace

    r = 0.05
    pivot = np.array([0.0, 0.0, 0.555])
    bob_at = pivot + 0.5 * np.array([-math.sin(0.4), 0.0, -math.cos(0.4)])
    floor = {"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}}
    balls = [{"name": f"b{i}", "density": 2000.0, "shape": {"type": "sphere", "radius": r},
              "pose": {"position": [0.09 + 2 * r * i, 0, r]}} for i in range(10)]
    bob = {"name": "bob", "density": 2000.0, "shape": {"type": "sphere", "radius": r}, "pose": {"position": bob_at.tolist()}}
    model = build_model(_doc([floor, bob] + balls, [{"name": "pin", "type": "revolute", "bodies": ["floor", "bob"],
                                                      "at": pivot.tolist(), "axis": [0, 1, 0]}]))
    ws = Workspace()
    st = initial_state(model)
    step(model, st, 0.005, workspace=ws)
    assert max(p.ntot for p in ws._plans.values()) > 250  # (the block elimination's regime, stepper._DENSE_LIMIT)
    rec = simulate(model, t_end=0.4, dt=0.005)  # (a quarter period of the 0.5 m arm is 0.35 s)
    assert rec.completed, rec.reason
    check_invariants(model, rec, energy=False)
    bob_i = rec.body_names.index("bob")
    np.testing.assert_allclose(np.linalg.norm(rec.position[:, bob_i] - pivot, axis=1), 0.5, atol=1e-9)
    assert rec.pn[:, rec.pair_names.index("bob/b0")].max() > 0


def _example_model():
    from pathlib import Path

    return build_model(io.load(Path(__file__).resolve().parents[3] / "resources" / "examples" /
                               "contact_pendulum_strike.json"))


@pytest.mark.parametrize("method,solver", [("implicit", "interior-point"), ("explicit", "newton")])
def test_other_solver_and_method_keep_the_joint_closed(method, solver):
    from contact_scenes import check_invariants

    model = _example_model()
    rec = simulate(model, t_end=0.45, dt=0.005, method=method, solver=solver)
    assert rec.completed, rec.reason
    bob = rec.body_names.index("bob")
    np.testing.assert_allclose(np.linalg.norm(rec.position[:, bob] - [0, 0, 0.555], axis=1), 0.5, atol=1e-9)
    assert rec.pn[:, rec.pair_names.index("bob/ball")].max() > 0  # the strike is in the run
    if method == "implicit":
        check_invariants(model, rec, energy=False)


def test_every_friction_form_solves_the_same_jointed_step():
    # the joint rows do not depend on the friction form: one step with the ball resting on the floor (a loaded
    # frictional contact) and the pendulum swinging, solved by each attempt alone, gives the same end state
    from core.contact import initial_state
    from core.contact.recording import iter_steps
    from core.contact.stepper import SolverOptions, Workspace, _step_once

    model = _example_model()
    st = initial_state(model)
    for res in iter_steps(model, 0.005, 20):
        st = res.state
    ends = []
    for form in ("ac", "normalised", "conic"):
        res = _step_once(model, st, 0.005, "implicit", 1e-10, 60, form=form, ws=Workspace(), options=SolverOptions())
        assert res.converged, (form, res.reason)
        ends.append(np.concatenate((res.state.v.ravel(), res.state.w.ravel(), res.joint_impulse.ravel())))
    for e in ends[1:]:
        np.testing.assert_allclose(e, ends[0], atol=1e-7)


def test_nut_runs_down_a_vertical_screw():
    # a nut (no shape: mass and inertia in the file) on a helical joint along z, pitch p: its height and angle are
    # tied, z = k theta with k = p / 2 pi, so with the coordinate theta the nut is a body of inertia m k^2 + I_z
    # under the torque -m g k: the axial speed grows as a t, a = -g m k^2 / (m k^2 + I_z); it turns several times,
    # through the angle's half-turn wrap (the state carries its turns)
    m, i_z, p = 0.5, 2e-4, 0.02
    k = p / (2 * math.pi)
    nut = {"name": "nut", "mass": m, "inertia": [[1e-4, 0, 0], [0, 1e-4, 0], [0, 0, i_z]], "pose": {"position": [0, 0, 1]}}
    mech = _doc([{"name": "ground", "ground": True}, nut],
                [{"name": "screw", "type": "helical", "bodies": ["ground", "nut"], "at": [0, 0, 1], "pitch": p}])
    model = build_model(mech)
    h = 0.005
    states, _ = _steps(model, h, 100)
    a = -G * m * k * k / (m * k * k + i_z)
    t = np.arange(len(states)) * h
    vz = np.array([s.v[1, 2] for s in states])
    # the rotation of a step is 2 atan(h w / 2) = h w (1 - (h w)^2 / 12 + ...), not h w, and the screw row ties the
    # height to that rotation: the speed is off by a relative (h w)^2 / 12 per step (measured: 1.3 times that at the
    # end, accumulated), so the bound is twice it, with w = |a| t / k the exact spin
    w = np.abs(a) * t / k
    assert np.all(np.abs(vz - a * t) <= (h * w) ** 2 / 6 * np.abs(a * t) + 1e-12), np.abs(vz / (a * t + 1e-300) - 1).max()
    assert abs(vz[-1] / (a * t[-1]) - 1) > 1e-4  # (the bound is not idle: the error is there)
    turns = states[-1].joints["turns"][0]
    assert turns < -1.5 * math.pi  # past the half-turn wrap twice (down along +z is a negative angle for a positive pitch)
    np.testing.assert_allclose(states[-1].p[1, 2] - 1.0, k * turns, atol=1e-9)
    np.testing.assert_allclose(states[-1].p[1, :2], 0.0, atol=1e-9)


def test_bennett_linkage_swings_under_gravity_with_its_redundant_constraints():
    # the Bennett linkage: four revolutes on skew axes (DH loop (a, alpha), (b, beta), (a, alpha), (b, beta) with
    # a / sin(alpha) = b / sin(beta)), 3 x 6 - 4 x 5 = -2 by the count but mobility 1 by its geometry (three
    # redundant constraints, tests/core/kinematics/test_mobility_examples.py); released under gravity with
    # link masses from the file it swings, every joint closed to 1e-9 at every step (the LM directions take the
    # redundant rows)
    from core.model import Body, Joint, Mechanism
    from tests.core.bennett import bennett_loop

    pts, axes = bennett_loop(0.3, math.radians(40), math.radians(70), 0.7)
    mech = Mechanism(name="bennett", space="spatial", gravity=(0.0, 0.0, -G))
    mech.bodies.append(Body("ground", ground=True))
    for i in range(1, 4):  # link i between joints i and i + 1 (its frame the world's; inertia m L^2 / 12 about every
        # axis through the midpoint: a simple positive definite one)
        p, q = pts[i], pts[(i + 1) % 4]
        L = float(np.linalg.norm(q - p))
        I = 1.0 * L * L / 12
        mech.bodies.append(Body(f"l{i}", mass=1.0, com=tuple(0.5 * (p + q)),
                                inertia=((I, 0, 0), (0, I, 0), (0, 0, I))))
    bodies = ["ground", "l1", "l2", "l3"]
    for i in range(4):
        mech.joints.append(Joint("ABCD"[i], "revolute", (bodies[i], bodies[(i + 1) % 4]), tuple(map(float, pts[i])),
                                 axis=tuple(map(float, axes[i]))))
    model = build_model(mech)
    states, results = _steps(model, 0.01, 60)  # (asserts convergence and closure at every step)
    assert np.linalg.norm(states[-1].w[1]) > 0.1  # it moves
