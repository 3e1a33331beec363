"""A jam (the drivers press a body moved by forces into something that cannot give way) stops a contact run with a
reason that says so and names the bodies (core.contact.jam; user test s53, G3: the run stopped with the solver's bare
reason, "step did not converge even when halved (MCP solver: line search failed ...)")."""

import json

import numpy as np
import pytest

from core import io
from core.contact import build_model, initial_state
from core.contact.jam import find_jam
from core.run import RunSpec, open_run
from tests.conftest import EXAMPLES


def _cam(edit) -> "object":
    """The cam follower example (a driven elliptical cam lifting a follower on a vertical prismatic guide), edited."""
    doc = json.loads((EXAMPLES / "contact_cam_follower.json").read_text())
    edit(doc)
    return io.loads(json.dumps(doc))


def _stop(mech, t_end):
    run = open_run(mech, RunSpec(kind="contact", t_end=t_end))
    frames = list(run)
    assert not run.verdict.ok and not run.verdict.cancelled
    return run, frames, run.verdict


def _guide_horizontal(doc):
    # user test s53 bad2/b33: the follower's guide turned horizontal; the cam, which starts touching the follower,
    # pushes up on a body that can only slide sideways
    guide = next(j for j in doc["joints"] if j["name"] == "guide")
    guide["axis"] = [1, 0, 0]


def _ceiling(doc):
    # user test s53 bad2/b11: a ceiling 0.5 mm above the follower's top face (z = 0.15 m); the cam lifts the follower
    # into it (its lift reaches 0.5 mm at t = 0.07 s)
    doc["bodies"].append({"name": "ceiling", "ground": True,
                          "shape": {"type": "halfspace", "normal": [0, 0, -1], "offset": -0.1505}})


def test_a_cam_pushing_a_follower_its_guide_holds_stops_with_a_jam_naming_them():
    # the guide lets the follower slide along x only, and the cam's contact normal at its top is vertical: no motion
    # of the follower makes way for the cam, which at t = h stands (a^2 - b^2) / (2 b) (2 h)^2 = 1.07e-5 m higher
    # (semi-axes a = 0.05, b = 0.03 m, 2 rad/s, h = 0.01 s): the least violation any motion leaves is about half of it
    # (the follower may rise by as much as it lets its guide open; tilting it a little gains 2 %), the certificate the
    # contact and the guide
    run, frames, v = _stop(_cam(_guide_horizontal), 0.05)
    assert len(frames) == 1 and v.stop_time == 0.0
    head = ("stopped at t = 0 s: a jam: the driven 'cam' presses 'follower' against joint 'guide' (no motion of the "
            "bodies moved by forces makes way for the drivers: each leaves a contact at least 5.2e-06 m deep or a "
            "joint that far open at the end of the step, to first order; contact follower/cam; joint guide); the step "
            "has no solution (")
    assert v.reason.startswith(head), v.reason
    assert "did not converge" in v.reason[len(head):]  # (the solver's reason, kept after it)
    jam = find_jam(run.model, initial_state(run.model), run.h)
    assert jam.depth == pytest.approx(0.5 * (0.05 ** 2 - 0.03 ** 2) / 0.06 * 0.02 ** 2, rel=0.05)
    assert not jam.friction and [run.model.joints[q].name for q in jam.joints] == ["guide"]


def test_a_cam_lifting_its_follower_into_a_ceiling_stops_with_a_jam_naming_them():
    run, frames, v = _stop(_cam(_ceiling), 0.2)
    assert v.stop_time == pytest.approx(0.06)  # (the steps before it are made: the follower rises 0.4 mm freely)
    head = "stopped at t = 0.06 s: a jam: the driven 'cam' presses 'follower' against 'ceiling'"
    assert v.reason.startswith(head), v.reason
    names = run.model.names
    contacts = [pair for pair in v.reason.split("; ") if pair.startswith("contacts ")]
    assert contacts == ["contacts follower/cam and follower/ceiling"], v.reason
    assert "the step has no solution (step did not converge" in v.reason
    assert "ceiling" in names


# user test s53 scenes/s4j: a planar four-bar driven at its crank brings its coupler (a plate 0.35 x 0.02 m) down
# onto a ball resting on the floor, friction 0.3; at t = 0.665 s the plate, tilted 5.5 degrees, presses the ball
FOURBAR_BALL = {
    "format": "linkwright.mechanism", "version": 1, "name": "planar four-bar hits a ball", "space": "planar",
    "gravity": [0, -9.81, 0],
    "bodies": [
        {"name": "ground", "ground": True, "shape": {"type": "halfspace", "normal": [0, 1, 0], "offset": 0}},
        {"name": "crank"},
        {"name": "coupler", "shape": {"type": "box", "size": [0.35, 0.02, 0.05]},
         "pose": {"position": [0.225, 0.12, 0], "orientation": [1, 0, 0, 0]}},
        {"name": "rocker"},
        {"name": "ball", "density": 1000, "shape": {"type": "sphere", "radius": 0.03},
         "pose": {"position": [0.25, 0.03, 0], "orientation": [1, 0, 0, 0]}}],
    "joints": [
        {"name": "A", "type": "revolute", "bodies": ["ground", "crank"], "at": [0, 0.2, 0]},
        {"name": "B", "type": "revolute", "bodies": ["crank", "coupler"], "at": [0.05, 0.2866, 0]},
        {"name": "C", "type": "revolute", "bodies": ["coupler", "rocker"], "at": [0.3331, 0.4924, 0]},
        {"name": "D", "type": "revolute", "bodies": ["rocker", "ground"], "at": [0.4, 0.2, 0]}],
    "drivers": [{"joint": "A", "value": "2*t"}],
    "contact": {"friction": 0.3, "ellipsoid": [1, 1, 0]},
    "simulation": {"dt": 0.005, "duration": 3.0, "method": "implicit"}}


def test_a_fourbar_coupler_coming_down_on_a_ball_stops_with_a_jam_locked_by_friction():
    # the plate's normal is 5.5 degrees off the floor's: without friction the ball would squirt out sideways (so the
    # rows alone have a motion that makes way), but a ball between two faces at an angle alpha locks when
    # tan(alpha / 2) < mu (a roller clutch), 0.048 < 0.3 here: every motion that makes way slides where friction holds
    run, frames, v = _stop(io.loads(json.dumps(FOURBAR_BALL)), 0.8)
    assert v.stop_time == pytest.approx(0.665)
    head = ("stopped at t = 0.665 s: a jam: the driven 'coupler' wedges 'ball' against 'ground', locked by friction "
            "(the bodies moved by forces could make way for the drivers only by sliding where friction holds them, "
            "to first order: forces within the friction cones balance on them; contacts ")
    assert v.reason.startswith(head), v.reason
    assert "; the solver found no step (step did not converge" in v.reason


def _wedge(alpha_deg: float, mu: float, speed: float = 0.1):
    """A ball (radius 0.05 m) on the floor and a plate above it tilted alpha about y, just touching the ball, driven
    straight down at `speed` (a kinematic body on a prismatic joint), friction mu."""
    r, a = 0.05, np.radians(alpha_deg)
    n = np.array([np.sin(a), 0.0, np.cos(a)])  # the plate's lower face's normal, towards the plate
    centre = np.array([0.0, 0.0, r]) + (r + 0.01) * n  # (the plate is 0.02 m thick)
    q = [np.cos(a / 2), 0.0, np.sin(a / 2), 0.0]
    doc = {"format": "linkwright.mechanism", "version": 1, "space": "spatial", "gravity": [0, 0, -9.81],
           "bodies": [{"name": "floor", "ground": True,
                       "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}},
                      {"name": "plate", "shape": {"type": "box", "size": [0.3, 0.3, 0.02]},
                       "pose": {"position": centre.tolist(), "orientation": q}},
                      {"name": "ball", "mass": 1.0, "shape": {"type": "sphere", "radius": r},
                       "pose": {"position": [0, 0, r]}}],
           "joints": [{"name": "slide", "type": "prismatic", "bodies": ["floor", "plate"], "at": centre.tolist(),
                       "axis": [0, 0, 1]}],
           "drivers": [{"joint": "slide", "value": f"-{speed}*t"}],
           "contact": {"friction": mu}, "simulation": {"dt": 0.01, "duration": 0.1}}
    return build_model(io.loads(json.dumps(doc)))


def test_a_ball_pressed_flat_between_a_plate_and_the_floor_is_a_jam_of_half_the_plates_travel():
    # the plate comes down u h = 1 mm in the step: the ball can meet one face only by overlapping the other, so the
    # least violation is half of it (the ball moved down by 0.5 mm into the floor and the plate 0.5 mm into it); its
    # certificate is both contacts, with or without friction
    for mu in (0.0, 0.5):
        model = _wedge(0.0, mu)
        jam = find_jam(model, initial_state(model), 0.01)
        assert jam is not None and not jam.friction
        assert jam.depth == pytest.approx(0.5 * 0.1 * 0.01, rel=1e-6)
        assert sorted(model.names[i] for ip in jam.pairs for i in model.pairs[ip][:2]) == ["ball", "ball", "floor",
                                                                                           "plate"]
        assert jam.text.startswith("a jam: the driven 'plate' presses 'ball' against 'floor' (no motion of the bodies "
                                   "moved by forces makes way for the drivers: each leaves a contact at least 0.0005 m "
                                   "deep"), jam.text


@pytest.mark.parametrize("mu, locked", [(0.3, True), (0.02, False), (0.0, False)])
def test_a_ball_wedged_by_a_tilted_plate_locks_when_the_angle_is_within_twice_the_friction_angle(mu, locked):
    # a plate tilted 5 degrees: the ball can make way by rolling or sliding out sideways, which is blocked by friction
    # exactly when tan(5 deg / 2) = 0.044 < mu (a roller between two faces): a jam at mu = 0.3, none at 0.02 or 0
    model = _wedge(5.0, mu)
    jam = find_jam(model, initial_state(model), 0.01)
    assert (jam is not None) == locked
    if locked:
        assert jam.friction and jam.text.startswith("a jam: the driven 'plate' wedges 'ball' against 'floor', locked "
                                                    "by friction (")


def test_a_failed_step_that_is_no_jam_keeps_its_reason(monkeypatch):
    # the cam follower at its start is no jam (the follower can rise with the cam); its first step made to fail by an
    # iteration budget of one keeps the solver's reason, as before
    from core.contact import recording, stepper

    made = stepper.step
    monkeypatch.setattr(recording, "step", lambda *a, **k: made(*a, max_iterations=1, fallback=False, **k))
    run, frames, v = _stop(io.load(EXAMPLES / "contact_cam_follower.json"), 0.05)
    assert v.reason.startswith("stopped at t = 0 s: the step's iteration budget is spent ("), v.reason
    assert "jam" not in v.reason
    assert find_jam(run.model, initial_state(run.model), run.h) is None


def test_a_step_that_meets_its_rows_is_no_jam_and_a_scene_without_drivers_is_never_one():
    # the four-bar's ball before the coupler reaches it; the pile of the examples (no driver)
    model = build_model(io.loads(json.dumps(FOURBAR_BALL)))
    assert find_jam(model, initial_state(model), 0.005) is None
    pile = build_model(io.load(EXAMPLES / "contact_pile.json"))
    assert find_jam(pile, initial_state(pile), 0.01) is None


def test_a_jam_of_joints_alone_is_worded_without_contacts():
    # review s53: a certificate of joints and no contact (a driven crank pulling a free link straight against a
    # pin to the ground) raised IndexError in the wording (the list of no contacts), which turned a stopped run into a
    # traceback; the wording names the joints alone
    from types import SimpleNamespace

    import numpy as np

    from core.contact.jam import JAM, _text

    joint = lambda name, a, b: SimpleNamespace(name=name, a=a, b=b, drive=None, implied=False)  # noqa: E731
    model = SimpleNamespace(names=("ground", "crank", "link"), kinematic_mask=np.array([False, True, False]),
                            free=np.array([False, False, True]), pairs=(),
                            joints=(joint("pin", 1, 2), joint("anchor", 0, 2)))
    text = _text(model, (), (0, 1), 2e-5, False)
    assert text.startswith(f"{JAM}: the driven 'crank' presses 'link' against joint 'anchor' through joint 'pin'")
    assert text.endswith("joints pin and anchor)") and "contact" not in text.split("(", 1)[1].split(";")[-1]
