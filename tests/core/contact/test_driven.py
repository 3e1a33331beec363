"""Driven joints in the contact step: the bodies the drivers fix move as the kinematics says (infinite mass), take
part in contact with the bodies moved by forces, and each driver's effort is recorded; checked against closed forms."""

import json

import numpy as np
import pytest

from core import io
from core.contact import build_model, initial_state, simulate
from core.contact.joints import joint_errors
from core.contact.recording import iter_steps
from core.errors import LinkwrightError
from core.transforms import quat_to_matrix
from tests.conftest import EXAMPLES

G = 9.81


def _doc(bodies, joints, drivers, friction=0.5, space="spatial", pairs=()):
    return io.loads(json.dumps({"format": "linkwright.mechanism", "version": 1, "space": space,
                                "gravity": [0, 0, -G], "bodies": bodies, "joints": joints, "drivers": drivers,
                                "contact": {"friction": friction, "pairs": [{"bodies": list(b), "friction": f}
                                                                           for b, f in pairs]}}))


def _box(name, size, position, **extra):
    return {"name": name, "shape": {"type": "box", "size": list(size)},
            "pose": {"position": list(position), "orientation": [1, 0, 0, 0]}, **extra}


FLOOR = {"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0.0}}


def _run(model, h, n):
    """Step results of n steps; every step converged, every joint closed to 1e-9 and every gap >= -1e-9 m."""
    out, st = [], initial_state(model)
    for res in iter_steps(model, h, n, state=st):
        assert res.converged, res.reason
        assert all(c.gap >= -1e-9 for c in res.contacts)
        assert np.abs(joint_errors(model, res.state)).max(initial=0.0) <= 1e-9
        out.append(res)
    return out


def test_a_driven_platform_lifts_a_box_with_the_force_m_g_plus_a():
    # a platform (no mass: the drivers fix it) on a prismatic joint driven up with z = a t^2 / 2 carries a 2 kg box:
    # the box rides on it (no penetration, no separation), the contact force is N = m (g + a) at every step (the
    # step's mean force, and the motion is uniformly accelerated) and the driver, pushing a massless platform, gives
    # exactly that force
    m, a, h = 2.0, 1.5, 0.01
    mech = _doc([{"name": "ground", "ground": True}, _box("platform", (0.6, 0.6, 0.1), (0, 0, 0.5)),
                 _box("box", (0.2, 0.2, 0.2), (0, 0, 0.65), mass=m)],
                [{"name": "lift", "type": "prismatic", "bodies": ["ground", "platform"], "at": [0, 0, 0.5],
                  "axis": [0, 0, 1]}],
                [{"joint": "lift", "value": f"{a / 2} * t**2"}])
    model = build_model(mech)
    assert list(model.kinematic) == [False, True, False] and model.driver_names == ("lift",)
    results = _run(model, h, 40)
    for k, res in enumerate(results):
        t = (k + 1) * h
        st = res.state
        np.testing.assert_allclose(st.p[1, 2], 0.5 + a * t * t / 2, atol=1e-12)  # the platform where driven
        np.testing.assert_allclose(st.p[2, 2] - st.p[1, 2], 0.15, atol=1e-9)  # the box rides on it
        if k == 0:
            continue  # (the first step's mean velocity is a h / 2 from rest: its mean force is m (g + a / 2))
        assert sum(c.pn for c in res.contacts) / h == pytest.approx(m * (G + a), rel=1e-9)
        assert res.driver_impulse[0] / h == pytest.approx(m * (G + a), rel=1e-9)


def test_a_driven_pusher_slides_a_box_with_the_force_of_sliding_friction():
    # a pusher (no mass) on a prismatic joint driven at constant speed u along x meets a box resting on the floor
    # (friction mu) and pushes it along: after the (inelastic) impact the box slides at u, and the pusher's force,
    # which the driver gives, balances sliding friction, mu m g (the pusher's face is frictionless, so the floor
    # carries the whole weight); the pusher and the floor never touch (a kinematic and a static body: both motions
    # given)
    m, mu, u, h = 1.0, 0.4, 0.2, 0.01
    mech = _doc([FLOOR, _box("pusher", (0.1, 0.4, 0.1), (0.0, 0, 0.06)),
                 _box("box", (0.2, 0.2, 0.2), (0.16, 0, 0.1), mass=m)],
                [{"name": "slide", "type": "prismatic", "bodies": ["floor", "pusher"], "at": [0, 0, 0.06],
                  "axis": [1, 0, 0]}],
                [{"joint": "slide", "value": f"{u} * t"}], friction=mu, pairs=[(("box", "pusher"), 0.0)])
    model = build_model(mech)
    pairs = {(model.names[a], model.names[b]) for a, b, _ in model.pairs}
    assert pairs == {("box", "floor"), ("box", "pusher")}
    results = _run(model, h, 60)
    late = results[30:]  # (the gap of 0.01 m closes at t = 0.05 s)
    for res in late:
        np.testing.assert_allclose(res.state.v[2], [u, 0, 0], atol=1e-9)
        assert res.driver_impulse[0] / h == pytest.approx(mu * m * G, rel=1e-6)


def test_a_pendulum_on_a_driven_carriage_loads_the_driver_with_its_joint_reaction():
    # mixed: a carriage (no mass) driven along x carries a pendulum bob (dynamic) on a pin; the driver's effort is
    # the force the carriage needs against the pin's reaction along x (the carriage is massless): Q = F_x, the
    # reaction the pin gives the bob; the pin stays closed to 1e-9 at every step
    bob = {"name": "bob", "mass": 1.5, "inertia": [[0.01, 0, 0], [0, 0.01, 0], [0, 0, 0.01]],
           "pose": {"position": [0, 0, -0.5]}}
    mech = _doc([{"name": "ground", "ground": True}, {"name": "carriage"}, bob],
                [{"name": "rail", "type": "prismatic", "bodies": ["ground", "carriage"], "axis": [1, 0, 0]},
                 {"name": "pin", "type": "revolute", "bodies": ["carriage", "bob"], "axis": [0, 1, 0]}],
                [{"joint": "rail", "value": "0.1 * sin(6 * t)"}])
    model = build_model(mech)
    assert list(model.kinematic) == [False, True, False]
    results = _run(model, 0.01, 50)
    swing = [abs(r.state.p[2, 0] - r.state.p[1, 0]) for r in results]
    assert max(swing) > 1e-3  # the carriage's motion swings the bob
    for res in results:
        assert res.driver_impulse[0] == pytest.approx(res.joint_impulse[0, 0], rel=1e-9, abs=1e-12)


def test_the_recording_keeps_the_driver_effort(tmp_path):
    from core.contact import load_npz

    mech = _doc([{"name": "ground", "ground": True}, _box("platform", (0.6, 0.6, 0.1), (0, 0, 0.5)),
                 _box("box", (0.2, 0.2, 0.2), (0, 0, 0.65), mass=1.0)],
                [{"name": "lift", "type": "prismatic", "bodies": ["ground", "platform"], "at": [0, 0, 0.5],
                  "axis": [0, 0, 1]}],
                [{"joint": "lift", "value": "0"}])  # held still: the box's weight
    rec = simulate(build_model(mech), t_end=0.03, dt=0.01)
    assert rec.completed and rec.driver_names == ["lift"]
    np.testing.assert_allclose(rec.driver_effort[1:, 0], G, rtol=1e-9)
    assert rec.mass[0] == 0.0  # (the platform, driven, is not in the energies)
    rec.save(tmp_path / "r.npz")
    np.testing.assert_array_equal(load_npz(tmp_path / "r.npz").driver_effort, rec.driver_effort)
    rec.save(tmp_path / "r.csv")
    head = (tmp_path / "r.csv").read_text().splitlines()[0].split(",")
    assert "lift.effort" in head


def test_a_body_the_drivers_do_not_fix_needs_a_mass_located():
    # a crank driven about y with a massless bar pinned to it: the bar swings freely (not fixed by the driver), so
    # it must have a mass
    mech = _doc([{"name": "ground", "ground": True}, {"name": "crank"}, {"name": "bar"}],
                [{"name": "a", "type": "revolute", "bodies": ["ground", "crank"], "axis": [0, 1, 0]},
                 {"name": "b", "type": "revolute", "bodies": ["crank", "bar"], "at": [0.2, 0, 0], "axis": [0, 1, 0]}],
                [{"joint": "a", "value": "t"}])
    with pytest.raises(LinkwrightError) as e:
        build_model(mech)
    assert str(e.value).startswith("bodies[2]:") and "drivers do not fix" in str(e.value)


def test_a_driven_joint_between_free_bodies_turns_them_against_each_other():
    # no gravity: two discs on one axis (z) through both centres of mass, joined by a revolute driven as
    # theta = t^2 / 2 (the drivers fix neither disc: the driver is a row of the step, the coordinate at the end of
    # the step equal to its value). Angular momentum is conserved (the joint's impulses are internal): I_A w_A +
    # I_B w_B = 0; the step's rotation update turns a body by 2 atan(h w / 2) about z, so step k's w_B solves
    # 2 atan(h w_B / 2) - 2 atan(h w_A / 2) = dtheta_k = theta(t_k) - theta(t_k-1) with w_A = -(I_B / I_A) w_B, and
    # the driver's torque over step k is I_B (w_B,k - w_B,k-1) / h
    from scipy.optimize import brentq

    from core.transforms import quat_to_matrix

    IA, IB, h = 0.02, 0.05, 0.01
    # (moments about x and y of 0.03: a body's largest principal moment is at most the sum of the other two)
    disc = lambda name, I: {"name": name, "mass": 1.0, "inertia": [[0.03, 0, 0], [0, 0.03, 0], [0, 0, I]]}  # noqa
    mech = io.loads(json.dumps({"format": "linkwright.mechanism", "version": 1, "space": "spatial",
                                "gravity": [0, 0, 0], "bodies": [disc("A", IA), disc("B", IB)],
                                "joints": [{"name": "motor", "type": "revolute", "bodies": ["A", "B"]}],
                                "drivers": [{"joint": "motor", "value": "t**2 / 2"}]}))
    model = build_model(mech)
    assert not model.kinematic.any() and model.drive is None and model.driver_names == ("motor",)
    assert model.joints[0].drive[:2] == ("r", 2)
    results = _run(model, h, 50)
    theta = lambda t: t * t / 2  # noqa: E731
    wB_prev = 0.0
    for k, res in enumerate(results, start=1):
        st = res.state
        RA, RB = quat_to_matrix(st.q[0]), quat_to_matrix(st.q[1])
        rel = RA.T @ RB
        assert np.arctan2(rel[1, 0], rel[0, 0]) == pytest.approx(theta(k * h), abs=1e-9)  # the coordinate as driven
        assert IA * st.w[0, 2] + IB * st.w[1, 2] == pytest.approx(0.0, abs=1e-12)
        turn = theta(k * h) - theta((k - 1) * h)
        wB = brentq(lambda w: 2 * np.arctan(h * w / 2) + 2 * np.arctan(h * IB / IA * w / 2) - turn, 0.0, 100.0,
                    xtol=1e-15)
        assert res.driver_impulse[0] / h == pytest.approx(IB * (wB - wB_prev) / h, rel=1e-6)
        wB_prev = wB


def test_the_effort_unit_follows_what_the_drivers_move():
    # a prismatic driver's effort is a force (N), a revolute driver's a torque (N m)
    from core.contact.recording import ContactRun

    def run(jtype, axis):
        mech = _doc([{"name": "ground", "ground": True}, _box("platform", (0.6, 0.6, 0.1), (0, 0, 0.5)),
                     _box("box", (0.2, 0.2, 0.2), (0, 0, 0.65), mass=1.0)],
                    [{"name": "j", "type": jtype, "bodies": ["ground", "platform"], "at": [0, 0, 0.5], "axis": axis}],
                    [{"joint": "j", "value": "0"}])
        return next(c for c in ContactRun(build_model(mech), t_end=0.01).channels if c.name == "driver.effort")

    assert run("prismatic", [0, 0, 1]).unit == "N" and run("revolute", [0, 0, 1]).unit == "N m"
    assert run("revolute", [0, 0, 1]).labels == ("j",)


@pytest.mark.parametrize("jtype, drive", [("revolute", ("r", 2)), ("prismatic", ("t", 2)), ("slot", ("t", 0)),
                                          ("slot", ("r", 2)), ("cylindrical", ("r", 2)), ("planar", ("t", 1))])
def test_a_driven_coordinates_row_gradient_matches_finite_differences(jtype, drive):
    # the driven coordinate's row (its value at the poses minus the target) against central differences of the
    # world displacements and rotations of both bodies (R -> cayley(dtheta / 2) R)
    from core.contact.bodies import cayley
    from core.contact.joints import JointSpec, joint_constraints, joint_rows
    from core.joints import JOINT_TYPES
    from core.transforms import quat_to_matrix

    rng = np.random.default_rng(5)
    R1, R2 = quat_to_matrix(rng.standard_normal(4)), quat_to_matrix(rng.standard_normal(4))
    js = JointSpec("j", jtype, 0, 1, joint_rows(JOINT_TYPES[jtype]), 0.3 * rng.standard_normal(3), R1,
                   0.3 * rng.standard_normal(3), R2, drive=drive + (None, 0))
    pA, pB = rng.standard_normal(3), rng.standard_normal(3)
    RA, RB = quat_to_matrix(rng.standard_normal(4)), quat_to_matrix(rng.standard_normal(4))
    c, Gr = joint_constraints(js, 0.7, pA, RA, pB, RB, 0.4, 0.25)
    assert c.size == js.rows.n + 1
    eps = 1e-6
    for i in range(12):
        d = np.zeros(12)
        d[i] = eps

        def at(s):
            x = s * d
            return joint_constraints(js, 0.7, pA + x[0:3], cayley(0.5 * x[3:6]) @ RA, pB + x[6:9],
                                     cayley(0.5 * x[9:12]) @ RB, 0.4, 0.25)[0]

        np.testing.assert_allclose(Gr[:, i], (at(1) - at(-1)) / (2 * eps), atol=1e-8)


def test_a_driver_between_free_bodies_must_start_at_the_design_value_located():
    # the bodies start in the document's poses (coordinate 0): a driver at 20 rad at t = 0 would jump there
    disc = {"mass": 1.0, "inertia": [[0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]]}
    mech = io.loads(json.dumps({"format": "linkwright.mechanism", "version": 1, "space": "spatial",
                                "gravity": [0, 0, 0], "bodies": [{"name": "A", **disc}, {"name": "B", **disc}],
                                "joints": [{"name": "m", "type": "revolute", "bodies": ["A", "B"]}],
                                "drivers": [{"joint": "m", "value": "1/(0.05 - t)"}]}))
    with pytest.raises(LinkwrightError) as e:
        build_model(mech)
    assert str(e.value).startswith("drivers[0].value: is 20 at t = 0 s")


def _rssr(coupler: dict, driver: str) -> "object":
    """rssr.json's RSSR (B = (1, 0, 0), C = (3, 1.2, 2.5)) with its coupler replaced by `coupler`, a floor far below
    (a contact scene) and its crank driven by `driver`."""
    doc = json.loads((EXAMPLES / "rssr.json").read_text())
    doc["bodies"] = [b if b["name"] != "coupler" else {"name": "coupler", **coupler} for b in doc["bodies"]]
    doc["bodies"].append({**FLOOR, "shape": {**FLOOR["shape"], "offset": -5.0}})
    doc["drivers"][0]["value"] = driver
    doc["contact"] = {"friction": 0.5}
    return io.loads(json.dumps(doc))


def test_a_driven_rssr_moves_its_massless_coupler_as_the_kinematics_does():
    # rssr.json: one driver for the one freedom that is not idle (the coupler's spin about BC moves no joint centre).
    # The coupler was not counted as fixed by the driver (its spin moves it), so the driven part left it out, the
    # rocker's joint became a free one and the run was refused: 'drivers: the mechanism has 2 degree(s) of freedom
    # (rank-based) but 1 driver(s) are given'. Without a mass the coupler is moved as the kinematics moves it: every
    # body's pose at every step is the trajectory's
    from core.kinematics import compile_model, solve_trajectory

    mech = io.load(EXAMPLES / "rssr.json")
    model = build_model(mech)
    assert dict(zip(model.names, model.kinematic)) == {"ground": False, "crank": True, "coupler": True, "rocker": True}
    rec = simulate(model, t_end=0.2, dt=0.01)
    assert rec.completed
    traj = solve_trajectory(compile_model(mech), rec.t)
    assert traj.ok
    for name in ("crank", "coupler", "rocker"):
        i, k = rec.body_names.index(name), traj.body_names.index(name)
        np.testing.assert_allclose(rec.position[:, i], traj.poses[:, k, :3, 3], atol=1e-9)
        R = np.array([quat_to_matrix(q) for q in rec.orientation[:, i]])
        np.testing.assert_allclose(R, traj.poses[:, k, :3, :3], atol=1e-9)


def test_a_massive_coupler_keeps_its_idle_spin_in_contact():
    # the same RSSR with the crank held still and a coupler that has a mass, a sphere's shape centred on BC and an
    # initial spin about BC: the idle freedom is real here (a contact could spin it), so the coupler is moved by
    # forces, held at B and C by its spherical joints to the kinematic crank and rocker, and keeps spinning at w
    # (a sphere's inertia is isotropic and its centre on the axis: no joint reaction); the massless coupler of the
    # test above cannot spin (the kinematics' minimum-norm rates leave the idle spin at rest)
    B, C = np.array([1.0, 0.0, 0.0]), np.array([3.0, 1.2, 2.5])
    e = (C - B) / np.linalg.norm(C - B)
    w = 2.0
    coupler = {"shape": {"type": "sphere", "radius": 0.2}, "mass": 1.0,
               "pose": {"position": list(0.5 * (B + C)), "orientation": [1, 0, 0, 0]},
               "velocity": {"linear": [0, 0, 0], "angular": list(w * e)}}
    model = build_model(_rssr(coupler, "0"))
    assert dict(zip(model.names, model.kinematic)) == {"ground": False, "crank": True, "coupler": False,
                                                        "rocker": True, "floor": False}
    h, n = 0.01, 30
    results = _run(model, h, n)
    k = model.names.index("coupler")
    for res in results:
        np.testing.assert_allclose(res.state.w[k], w * e, atol=1e-8)
    # turned about BC by n Cayley steps of angle 2 atan(h w / 2) each, its centre still
    R = quat_to_matrix(results[-1].state.q[k])
    angle = np.arctan2(np.linalg.norm(R - R.T) / (2 * np.sqrt(2)), (np.trace(R) - 1) / 2)
    assert angle == pytest.approx(n * 2 * np.arctan(h * w / 2), abs=1e-8)
    np.testing.assert_allclose(results[-1].state.p[k], 0.5 * (B + C), atol=1e-9)
    # without the mass the coupler is the kinematics': no spin
    massless = build_model(_rssr({}, "0"))
    assert bool(massless.kinematic[massless.names.index("coupler")])


@pytest.mark.parametrize("value, t_end, reason, end", [
    # acceleration 800^2 exp(800 t) reaches the bound 1e9 at t = ln(1e9 / 640000) / 800
    ("exp(800*t)-1", 0.05, "drivers[0].value: acceleration of 'exp(800*t)-1' passes the bound ±1e+09",
     np.log(1e9 / 800 ** 2) / 800),
    # acceleration 2 / (1 - t)^3 reaches it at 1 - t = (2e-9)^(1/3), before the pole at t = 1
    ("1/(1-t)-1", 1.2, "drivers[0].value: acceleration of '1/(1-t)-1' passes the bound ±1e+09", 1 - 2e-9 ** (1 / 3)),
])
def test_a_contact_run_whose_driver_passes_its_bound_stops_with_the_drivers_reason(value, t_end, reason, end):
    # user test s53 (G2): the step failed at every depth of halving and by the explicit method, and the run stopped
    # with "step did not converge even when halved (the driven bodies at ...)", the driver's reason twice in it; as a
    # kinematics run does, it now says the driver's and where the motion ends, keeping the frames before it
    from core.run import RunSpec, open_run

    mech = io.load(EXAMPLES / "contact_cam_follower.json")
    mech.drivers = [__import__("dataclasses").replace(mech.drivers[0], value=value)]
    run = open_run(mech, RunSpec(kind="contact", t_end=t_end))
    frames = list(run)
    v, h = run.verdict, run.h
    last = np.floor(end / h) * h  # the last step's start before the end: every step before it is made
    assert not v.ok and not v.cancelled and v.limit_time == pytest.approx(end, rel=1e-6)
    assert len(frames) == round(last / h) + 1 and v.stop_time == pytest.approx(last, abs=1e-12)
    assert v.reason == f"stopped at t = {last:.6g} s: {reason}; the motion ends near t = {v.limit_time:.9g}"
    assert "converge" not in v.reason and "explicit" not in v.reason


def _pair_added(name: str, a: str, b: str):
    mech = io.load(EXAMPLES / f"{name}.json")
    mech.set_pair_friction(a, b, 0.9)
    return mech


@pytest.mark.parametrize("make, why", [
    # a driven link (the feeder's coupler plate) and the floor: both given their motions
    (lambda: _pair_added("contact_parts_feeder", "coupler", "floor"),
     "'coupler' and 'floor' never touch: neither is moved by forces"),
    # two fixed planes of the pile
    (lambda: _pair_added("contact_pile", "floor", "wall_px"), "'floor' and 'wall_px' never touch: neither is moved"),
    # the cam follower's ground has no shape
    (lambda: _pair_added("contact_cam_follower", "cam", "ground"), "'cam' and 'ground' never touch: 'ground' has no "
                                                                   "shape"),
    # two links moved by forces joined by a joint (their shapes meet at the pin)
    (lambda: _doc([FLOOR, _box("a", (0.1, 0.1, 0.1), (0, 0, 0.5), mass=1.0), _box("b", (0.1, 0.1, 0.1), (0.1, 0, 0.5),
                                                                                  mass=1.0)],
                  [{"name": "pin", "type": "spherical", "bodies": ["a", "b"], "at": [0.05, 0, 0.5]}], [],
                  pairs=[(("a", "b"), 0.9)]),
     "'a' and 'b' never touch: they are joined by joint 'pin'"),
])
def test_a_friction_given_for_bodies_that_never_touch_is_refused_located(make, why):
    # user test s53 (G4): the pair's friction was silently ignored (the run has no such pair)
    mech = make()
    i = len(mech.contact.pairs) - 1
    with pytest.raises(LinkwrightError) as e:
        build_model(mech)
    assert e.value.location == f"contact.pairs[{i}].bodies" and e.value.message.startswith(why)
    assert e.value.message.endswith("; remove the pair")
    from core.contact import touching_pairs

    # the pairs that can touch are the run's without the pair (build_model's, by name)
    mech.set_pair_friction(*mech.contact.pairs[i].bodies, None)
    model = build_model(mech)
    assert touching_pairs(mech) == [(model.names[min(a, b)], model.names[max(a, b)]) for a, b, _mu in model.pairs]


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("contact_*.json")))
def test_the_pairs_offered_are_the_pairs_a_run_solves_on_every_example(name):
    """touching_pairs classifies the bodies from the document without building their shapes (the Properties panel's
    Add pair), build_model from the parsed shapes: one rule (bodies._apart_rule) between them, the same pairs."""
    from core.contact import touching_pairs

    mech = io.load(EXAMPLES / name)
    model = build_model(mech)
    expected = [(model.names[min(a, b)], model.names[max(a, b)]) for a, b, _mu in model.pairs]
    assert touching_pairs(mech) == expected  # (contact_fourbar_swing has none: its links are joined)


def test_a_box_landing_on_a_driven_platform_is_predicted_by_its_relative_free_motion(monkeypatch):
    # review s57: the patch predictor's test for corners landing (stepper._patches) takes each body's free motion over
    # the step: gravity's h g for the box, none for the platform the driver lifts at u (its driven velocity).  The box
    # (sliding at 1 m/s, at rest vertically) 2.5 mm above the platform closes the gap by h (u + g h) = 2.98 mm in a
    # step of 0.01 s: it lands, and the step starts from the predictor; with gravity given to the platform as well
    # (their relative fall cancelled) it would close only h u = 2 mm, and would not
    import core.contact.stepper as stepper

    u, h, d = 0.2, 0.01, 2.5e-3
    assert h * u < d <= h * (u + G * h)
    mech = _doc([{"name": "ground", "ground": True}, _box("platform", (0.6, 0.6, 0.1), (0, 0, 0.5)),
                 _box("box", (0.2, 0.2, 0.2), (0, 0, 0.65 + d), mass=1.0, velocity={"linear": [1.0, 0, 0]})],
                [{"name": "lift", "type": "prismatic", "bodies": ["ground", "platform"], "at": [0, 0, 0.5],
                  "axis": [0, 0, 1]}],
                [{"joint": "lift", "value": f"{u} * t"}])
    model = build_model(mech)
    called = []
    real = stepper._patch_predictor
    monkeypatch.setattr(stepper, "_patch_predictor", lambda *a, **k: called.append(1) or real(*a, **k))
    res = stepper.step(model, initial_state(model), h)
    assert res.converged and called
    (c,) = [c for c in res.contacts if c.pn > 0]
    assert c.gap >= -1e-9
