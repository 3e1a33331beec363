"""The run protocol (core.run): which run a document gets, frames, channels, cancel and verdicts of both kinds."""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path

import numpy as np
import pytest

from core import io
from core.contact import ContactRun, build_model, simulate
from core.errors import LinkwrightError
from core.kinematics import compile_model, solve_trajectory
from core.model import Mechanism
from core.run import DynamicsOption, RunSpec, describe_kind, dynamics_option, open_run, run_kind
from core.transforms import quat_to_matrix

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"


@pytest.mark.parametrize("name, kind", [("contact_sphere_drop", "contact"), ("contact_pile", "contact"),
                                        ("fourbar", "kinematics"), ("stewart_6ups", "kinematics")])
def test_the_document_decides_the_run(name, kind):
    mech = io.load(EXAMPLES / f"{name}.json")
    assert run_kind(mech) == kind
    assert describe_kind(mech).startswith({"contact": "contact dynamics", "kinematics": "driven kinematics"}[kind])


def _pendulum(simulation: bool, mass: float | None = 1.0, free_ball: bool = False) -> Mechanism:
    """A bar pinned to the ground (no shape: mass, centre of mass and inertia from the file), optionally with a
    simulation section and a free ball with mass."""
    bodies = [{"name": "ground", "ground": True},
              {"name": "bar", "com": [0.5, 0, 0], "inertia": [[0.01, 0, 0], [0, 0.1, 0], [0, 0, 0.1]]}]
    if mass is not None:
        bodies[1]["mass"] = mass
    if free_ball:
        bodies.append({"name": "ball", "mass": 1.0, "shape": {"type": "sphere", "radius": 0.1},
                       "pose": {"position": [3, 0, 1], "orientation": [1, 0, 0, 0]}})
    d = {"format": "linkwright.mechanism", "version": 1, "space": "spatial", "gravity": [0, 0, -9.81],
         "bodies": bodies,
         "joints": [{"name": "pin", "type": "revolute", "bodies": ["ground", "bar"], "axis": [0, 1, 0]}]}
    if simulation:
        d["simulation"] = {"dt": 0.01, "duration": 0.2, "method": "implicit"}
    return io.from_dict(d)


def test_a_simulation_section_and_mass_make_a_jointed_document_a_dynamics_run():
    # the simulation section is the document's opt-in to dynamics when some body has mass
    mech = _pendulum(simulation=True)
    assert run_kind(mech) == "contact"
    assert describe_kind(mech) == ("contact dynamics: 1 moving body, 1 joint (geometrically implicit "
                                   "time-stepper)")
    assert dynamics_option(mech) == DynamicsOption(True, True, "")
    run = open_run(mech)
    frames = list(run)
    assert run.kind == "contact" and run.verdict.ok and len(frames) == 21
    assert [c.labels for c in run.channels if c.name == "joint.force"] == [("pin",)]
    # without the section the same mechanism is a kinematics document (undriven: the driver check refuses it)
    mech = _pendulum(simulation=False)
    assert run_kind(mech) == "kinematics" and describe_kind(mech).startswith("driven kinematics")
    assert dynamics_option(mech) == DynamicsOption(True, False, "")
    with pytest.raises(LinkwrightError, match="drivers"):
        list(open_run(mech))
    # a simulation section but no body with mass: still kinematics, and the switch says why it is unavailable
    mech = _pendulum(simulation=True, mass=None)
    assert run_kind(mech) == "kinematics"
    opt = dynamics_option(mech)
    assert not opt.available and not opt.on and opt.reason.startswith("no body has a mass")
    # a four-bar with a link mass and no simulation section stays kinematics (the example)
    fourbar = io.load(EXAMPLES / "fourbar.json")
    assert fourbar.body("rocker").mass and fourbar.simulation is None and run_kind(fourbar) == "kinematics"


def test_a_free_body_with_mass_is_always_a_dynamics_run():
    for simulation in (False, True):
        mech = _pendulum(simulation=simulation, free_ball=True)
        assert run_kind(mech) == "contact"
        opt = dynamics_option(mech)
        assert opt.on and not opt.available and opt.reason.startswith("free bodies with mass")
    assert describe_kind(_pendulum(False, free_ball=True)).startswith("contact dynamics: 2 moving bodies, 1 joint")
    assert describe_kind(io.load(EXAMPLES / "contact_pile.json")).startswith("contact dynamics: ")
    assert "free bodies with mass" in describe_kind(io.load(EXAMPLES / "contact_pile.json"))
    assert not dynamics_option(Mechanism()).available


def test_the_line_of_a_contact_run_names_the_method_that_will_run():
    """The `Run: …` line said "geometrically implicit time-stepper" for every contact document, also one whose
    simulation.method is explicit; it names the document's method, or the one a caller (the Motion dock) will run."""
    d = json.loads((EXAMPLES / "contact_sphere_drop.json").read_text())
    implicit = "contact dynamics: 1 free body with mass (geometrically implicit time-stepper)"
    explicit = "contact dynamics: 1 free body with mass (explicit time-stepper: linearised gap, for comparison)"
    d["simulation"]["method"] = "explicit"
    mech = io.from_dict(d)
    assert describe_kind(mech) == explicit
    assert open_run(mech).method == "explicit"  # (the run the line describes)
    assert describe_kind(mech, "implicit") == implicit  # a caller's choice of method overrides the document's
    del d["simulation"]["method"]
    mech = io.from_dict(d)  # (no method in the file: the implicit default)
    assert describe_kind(mech) == implicit and describe_kind(mech, "explicit") == explicit


def test_a_document_with_nothing_to_move_has_no_run():
    assert run_kind(Mechanism()) == ""
    with pytest.raises(LinkwrightError, match="nothing to move"):
        open_run(Mechanism())


def test_a_shaped_body_without_mass_is_named_also_when_nothing_else_moves(tmp_path):
    """A ball with a shape but neither mass nor density beside a ball with mass is refused at it (the contact model's
    check); alone, it made the document one with nothing to move, and the CLI said only that. It is named there too,
    by the same check (the message is build_model's); a document without such a body still has nothing to move."""
    import subprocess
    import sys

    d = json.loads((EXAMPLES / "contact_sphere_drop.json").read_text())
    del d["bodies"][1]["mass"]  # (the ball's mass forgotten)
    mech = io.from_dict(d)
    assert run_kind(mech) == ""
    with pytest.raises(LinkwrightError) as alone:
        open_run(mech)
    assert str(alone.value) == "bodies[1]: body 'ball' has a shape but neither mass nor density (or mark it ground)"
    beside = json.loads(json.dumps(d))
    beside["bodies"].insert(1, {"name": "heavy", "mass": 1.0, "shape": {"type": "sphere", "radius": 0.1},
                                "pose": {"position": [1, 0, 0.5]}})
    with pytest.raises(LinkwrightError) as e:
        build_model(io.from_dict(beside))
    assert (e.value.location, e.value.message) == ("bodies[2]", alone.value.message)  # the same check's message
    # the command line: status 2 and the located message (it said '<file>: nothing to move: ...')
    path = tmp_path / "no_mass.json"
    path.write_text(json.dumps(d))
    r = subprocess.run([sys.executable, "-m", "app", "simulate", str(path)], capture_output=True, text=True,
                       cwd=EXAMPLES.parents[1], timeout=120)
    assert r.returncode == 2 and r.stderr.strip() == f"error: {alone.value}", r.stderr
    # nothing shaped to name: nothing to move, as before
    d["bodies"] = d["bodies"][:1]
    with pytest.raises(LinkwrightError, match="^bodies: nothing to move"):
        open_run(io.from_dict(d))


def test_kinematic_run_frames_are_the_trajectory():
    mech = io.load(EXAMPLES / "fourbar.json")
    run = open_run(mech, RunSpec(t_end=1.0, steps=20))
    assert run.kind == "kinematics" and run.verdict is None
    frames = list(run)
    assert run.verdict.ok and len(frames) == 21
    ref = solve_trajectory(compile_model(mech), np.arange(21) * 0.05)
    ch = {c.name: c for c in run.channels}
    assert ch["q"].labels == tuple(ref.coord_names) and ch["q"].shape == (4,)
    assert ch["points"].labels == tuple(ref.point_names) and ch["points"].shape == (1, 3)
    for k in (0, 7, 20):
        np.testing.assert_allclose(frames[k].poses, ref.poses[k], atol=1e-12)
        np.testing.assert_allclose(frames[k].values["q"], ref.q[k], atol=1e-12)
        np.testing.assert_allclose(frames[k].values["points"], ref.points[k], atol=1e-12)


def pose(position, quat) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = quat_to_matrix(np.asarray(quat, float))
    T[:3, 3] = position
    return T


def test_contact_run_frames_match_the_recording_and_forces_are_impulse_over_h():
    mech = io.load(EXAMPLES / "contact_box_slide.json")
    run = open_run(mech)
    assert run.kind == "contact" and run.body_names == ["floor", "box"]
    frames = list(run)
    rec = simulate(mech)
    assert run.verdict.ok and len(frames) == rec.n_frames == 101  # 1 s in steps of 0.01 s
    h = 0.01
    for k in (0, 13, 60, 100):
        f = frames[k]
        assert f.t == pytest.approx(k * h)
        np.testing.assert_array_equal(f.poses[1], pose(rec.position[k, 0], rec.orientation[k, 0]))
        np.testing.assert_array_equal(f.poses[0], np.eye(4))  # the floor stays where the document puts it
        np.testing.assert_array_equal(f.values["pair.normal_force"], rec.pn[k] / h)
        np.testing.assert_array_equal(f.values["pair.friction_force"], rec.pf[k] / h)
        assert tuple(f.values["solver"]) == (rec.iterations[k], rec.residual[k], rec.halvings[k], rec.fallback[k])
    # a 1 kg box resting on the floor: the normal force over a step is its weight m g = 9.81 N
    np.testing.assert_allclose(frames[60].values["pair.normal_force"], [9.81], rtol=1e-9)
    # while it slides (v0 = 2 m/s stops after v0 / (mu g) = 0.68 s) the friction force is mu m g = 0.3 * 9.81 N
    np.testing.assert_allclose(np.linalg.norm(frames[30].values["pair.friction_force"][0]), 0.3 * 9.81, rtol=1e-6)


def test_contact_run_energies():
    mech = io.load(EXAMPLES / "contact_sphere_drop.json")
    frames = list(open_run(mech))
    # 1 kg at z = 0.5 m, at rest: potential m g z = 4.905 J (zero at the origin), kinetic 0
    np.testing.assert_allclose(frames[0].values["energy"], [0.0, 4.905, 4.905], atol=1e-12)
    # resting on the floor at the end (centre at z = r = 0.1 m): potential 0.981 J, no kinetic energy left
    np.testing.assert_allclose(frames[-1].values["energy"], [0.0, 0.981, 0.981], atol=1e-6)
    # free fall before the contact (t = 0.2 s, fallen 0.2 m): speed is g t, kinetic = m (g t)^2 / 2 (to the
    # integrator's first order: v_k = g k h exactly, and the energy uses v)
    e = frames[20].values["energy"]
    assert e[0] == pytest.approx(0.5 * (9.81 * 0.2) ** 2, rel=1e-9)


def test_cancel_stops_a_contact_run_with_the_frames_before_it():
    mech = io.load(EXAMPLES / "contact_sphere_drop.json")
    flag = threading.Event()
    run = open_run(mech, cancel=flag.is_set)
    frames = []
    for f in run:
        frames.append(f)
        if len(frames) == 6:
            flag.set()
    v = run.verdict
    assert len(frames) == 6 and not v.ok and v.cancelled and v.reason.startswith("cancelled")
    assert v.stop_time == pytest.approx(0.05)


def test_bad_run_settings_are_located():
    """A contact run's settings are located at the document's fields, whoever gave them (they were located at the
    command line's options, --dt and --t-end, which the app renamed back by hand; each caller now names its own)."""
    mech = io.load(EXAMPLES / "contact_sphere_drop.json")
    for spec, where in ((RunSpec(dt=-1.0), "simulation.dt"), (RunSpec(t_end=math.nan), "simulation.duration"),
                        (RunSpec(method="magic"), "simulation.method"), (RunSpec(solver="magic"), "solver"),
                        (RunSpec(t_end=1000.0, dt=1e-4), "simulation.duration")):  # 1e7 steps
        with pytest.raises(LinkwrightError) as err:
            open_run(mech, spec)
        assert err.value.location == where, (spec, str(err.value))
    with pytest.raises(LinkwrightError, match="steps"):
        open_run(io.load(EXAMPLES / "fourbar.json"), RunSpec(steps=0))


def _collect(run) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    frames = list(run)
    return (np.array([f.poses for f in frames]), np.array([f.values["pair.pn"] for f in frames]),
            np.array([f.values["solver"] for f in frames]))


def test_one_model_run_twice_at_once_gives_the_serial_results():
    # the pile: many pairs, so the step structures of several pair sets are built while both runs go on
    model = build_model(io.load(EXAMPLES / "contact_pile.json"))
    serial = {m: _collect(ContactRun(model, 0.15, None, m)) for m in ("implicit", "explicit")}
    both: dict = {}

    def go(m):
        both[m] = _collect(ContactRun(model, 0.15, None, m))

    threads = [threading.Thread(target=go, args=(m,)) for m in ("implicit", "explicit")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for m in ("implicit", "explicit"):
        for a, b in zip(both[m], serial[m]):
            np.testing.assert_array_equal(a, b)


def test_contact_run_follows_named_points_of_the_bodies():
    mech = io.load(EXAMPLES / "contact_sphere_drop.json")
    mech.update_body("ball", points={"top": (0.0, 0.0, 0.1)})
    run = open_run(mech)
    ch = {c.name: c for c in run.channels}
    assert ch["points"].labels == ("ball.top",) and ch["points"].shape == (1, 3)
    frames = list(run)
    # the ball falls without turning (no friction before it lands, and it lands straight): the top stays 0.1 m
    # above the centre, which starts at z = 0.5 m and rests at z = r = 0.1 m
    np.testing.assert_allclose(frames[0].values["points"], [[0.0, 0.0, 0.6]], atol=1e-12)
    np.testing.assert_allclose(frames[-1].values["points"], [[0.0, 0.0, 0.2]], atol=1e-8)
    for f in frames[::10]:
        np.testing.assert_allclose(f.values["points"][0], f.poses[1, :3, :3] @ [0, 0, 0.1] + f.poses[1, :3, 3], atol=1e-12)


def test_cancel_is_honoured_inside_a_hard_contact_step():
    """Stop during a step of many Newton iterations (the pile) ends that step at the next check, between its
    iterations: the answer does not wait for the step to finish."""
    from core.contact import initial_state, step

    model = build_model(io.load(EXAMPLES / "contact_pile.json"))
    st, h = initial_state(model), 0.01
    for _ in range(60):  # find a step that asks the cancel callable many times (a hard step: many iterations)
        asked = [0]

        def never():
            asked[0] += 1
            return False

        full = step(model, st, h, "implicit", cancel=never)
        assert full.converged, full.reason
        if asked[0] >= 8 and full.iterations >= 4:
            break
        st = full.state
    else:
        pytest.fail("no step of the pile took several iterations")
    k = asked[0] // 2  # cancel half-way through that step

    calls = [0]

    def cancel_at_k():
        calls[0] += 1
        return calls[0] >= k

    r = step(model, st, h, "implicit", cancel=cancel_at_k)
    assert not r.converged and r.reason.startswith("cancelled")
    assert calls[0] == k  # the first "yes" ends the step: no further iteration asks again
    assert r.iterations < full.iterations  # it stopped inside the step, before the iterations the full step took
    np.testing.assert_array_equal(r.state.p, st.p)  # a cancelled step leaves the state as it was


def _driven_fourbar(expr: str) -> Mechanism:
    doc = json.loads((EXAMPLES / "fourbar.json").read_text())
    doc["drivers"][0]["value"] = expr
    return io.loads(json.dumps(doc).encode())


# the limit: where the first of |q|, |q'|, |q''| passes MAX_DRIVEN = 1e9 before t = 1 (u = 1 - t)
#   1/u:     q'' = 2/u³ = 1e9 at u = (2e-9)^(1/3)
#   log(u):  q' = -1/u, q'' = -1/u², |q''| = 1e9 at u = 1e-4.5
#   sqrt(u): q'' = -1/(4 u^1.5) = -1e9 at u = (2.5e-10)^(2/3)
@pytest.mark.parametrize("expr, limit", [("1/(1 - t)", 1 - 2e-9 ** (1 / 3)), ("log(1 - t)", 1 - 10**-4.5),
                                         ("sqrt(1 - t)", 1 - 2.5e-10 ** (2 / 3))])
def test_a_driver_undefined_mid_run_stops_the_run_with_the_frames_before_it(expr, limit):
    # Each driver is undefined at t = 1 (a pole, log(0), an infinite velocity -1/(2 sqrt(0))) and finite before:
    # over t = 0, 0.1, ..., 2 the run yields the 10 frames t < 1 and stops at t = 1, naming the driver and what of it
    # ends the motion where it ends (its acceleration passes the bound there; not "value ... is not finite at t = 1").
    mech = _driven_fourbar(expr)
    run = open_run(mech, RunSpec(t_end=2.0, steps=20))
    frames = list(run)
    v = run.verdict
    assert [f.t for f in frames] == pytest.approx([0.1 * k for k in range(10)])
    assert not v.ok and not v.cancelled and v.stop_time == pytest.approx(1.0)
    assert v.limit_time == pytest.approx(limit, rel=1e-9)
    assert v.reason == (f"stopped at t = 1: drivers[0].value: acceleration of '{expr}' passes the bound ±1e+09; "
                        f"the motion ends near t = {v.limit_time:.9g}")
    # the frames are the driven motion: the crank angle is the driver's value
    q = [f.values["q"][0] for f in frames]
    ref = {"1/(1 - t)": lambda t: 1 / (1 - t), "log(1 - t)": lambda t: np.log(1 - t),
           "sqrt(1 - t)": lambda t: np.sqrt(1 - t)}[expr]
    np.testing.assert_allclose(q, [ref(f.t) for f in frames], rtol=1e-12)


def test_a_driver_that_overflows_its_bound_between_two_times_is_quoted_where_the_motion_ends():
    """exp(800 t) in steps of 0.01 s: its acceleration 640,000 e^(800 t) passes 1e9 at t = ln(1e9 / 640000) / 800 =
    0.0091926 s. The reason quoted the next requested time's value ("acceleration of 'exp(800*t)' is 1.91e+09, beyond
    the bound ±1e+09 at t = 0.01"), not where the motion ended; it now names the bound passed there, and that time."""
    mech = _driven_fourbar("exp(800*t)")
    run = open_run(mech, RunSpec(t_end=1.0, steps=100))
    frames = list(run)
    v = run.verdict
    end = math.log(1e9 / 640000) / 800
    assert [f.t for f in frames] == [0.0] and v.stop_time == pytest.approx(0.01)
    assert v.limit_time == pytest.approx(end, rel=1e-9)
    assert v.reason == ("stopped at t = 0.01: drivers[0].value: acceleration of 'exp(800*t)' passes the bound ±1e+09; "
                        f"the motion ends near t = {v.limit_time:.9g}")
    assert "1.91e+09" not in v.reason and "at t = 0.01;" not in v.reason


def test_a_driver_undefined_at_the_first_time_is_a_located_error():
    # nothing can be computed: log(t) at t = 0 is a bad document, not a run that stops early
    mech = _driven_fourbar("log(t)")
    with pytest.raises(LinkwrightError) as info:
        open_run(mech, RunSpec(t_end=1.0, steps=4))
    assert info.value.location == "drivers[0].value" and "not finite at t = 0" in info.value.message


def test_a_contact_run_refuses_a_floor_repeated_by_an_edit():
    # the loader refuses a ground half-space that repeats another (a singular contact problem: minutes per step);
    # an edit after loading (here: the floor's body copied under another name, as Duplicate would) is caught when
    # the run opens, with the same located message
    import dataclasses

    mech = io.load(EXAMPLES / "contact_sphere_drop.json")
    floor = next(b for b in mech.bodies if b.ground)
    mech.bodies.append(dataclasses.replace(floor, name="floor2"))
    with pytest.raises(LinkwrightError) as info:
        open_run(mech)
    assert info.value.location.startswith("bodies[") and "floor" in info.value.message


def test_a_runs_channels_name_the_bodies_of_their_labels_whatever_the_names_hold():
    # a pair's label is 'A/B' and a named point's 'body.point': with '/' and '.' in body names the labels alone do not
    # say whose they are ('a/b/c' is a/b with c or a with b/c; 'a.b.top' is point 'b.top' of a or 'top' of a.b)
    mech = io.load(EXAMPLES / "contact_sphere_drop.json")
    mech.rename_body("floor", "b/c")
    mech.rename_body("ball", "a.b")
    mech.update_body("a.b", points={"top": (0.0, 0.0, 0.1)})
    for run in (open_run(mech), open_run(io.load(EXAMPLES / "fourbar.json"), RunSpec(t_end=1.0, steps=4))):
        ch = {c.name: c for c in run.channels}
        if run.kind == "contact":
            assert ch["pair.active"].labels == ("a.b/b/c",) and ch["pair.active"].owners == (("a.b", "b/c"),)
            assert ch["pair.normal_force"].owners == (("a.b", "b/c"),)
            assert ch["body.com"].labels == ("a.b",) and ch["body.com"].owners == (("a.b",),)
            assert ch["points"].labels == ("a.b.top",) and ch["points"].owners == (("a.b",),)
        else:  # the four-bar's one named point is on its coupler
            assert ch["points"].labels == ("coupler.P",) and ch["points"].owners == (("coupler",),)
            assert ch["q"].owners == ()  # (joint coordinates are no body's)
        assert all(len(c.owners) in (0, len(c.labels)) for c in run.channels)


def test_a_ground_body_keeps_a_mass_it_is_given_and_the_run_ignores_it():
    """User test s56, S11: a ground floor with "mass": 5 was accepted without a word. It is the documented rule
    (docs/file-format.md, `ground`): a ground body never moves, so its mass, density, inertia and centre of mass are
    not used; they are kept and saved, because marking a body with a mass as ground in the app (Toggle Ground, the
    Properties checkbox) keeps its mass for when it is un-marked, and such a document must open again."""
    doc = {"format": io.FORMAT, "version": io.VERSION, "space": "spatial", "gravity": [0, 0, -9.81],
           "bodies": [{"name": "floor", "ground": True, "mass": 5,
                       "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}},
                      {"name": "box", "mass": 1, "shape": {"type": "box", "size": [0.1, 0.1, 0.1]},
                       "pose": {"position": [0, 0, 0.06]}, "velocity": {"linear": [0.5, 0, 0]}}],
           "simulation": {"dt": 0.01, "duration": 0.1}}
    with_mass = io.from_dict(doc)
    assert with_mass.bodies[0].mass == 5 and io.from_dict(json.loads(io.dumps(with_mass))).bodies[0].mass == 5
    del doc["bodies"][0]["mass"]
    a, b = simulate(with_mass), simulate(io.from_dict(doc))
    assert a.n_frames == b.n_frames == 11 and np.array_equal(a.position, b.position)
    assert np.array_equal(a.pn, b.pn) and np.array_equal(a.mass, b.mass)  # the same run, bit for bit
