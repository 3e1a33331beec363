"""The edit API for contact scenes: body shape, mass or density, inertia, com, pose, velocity, and the document's
contact and time-stepping settings — validated with the loader's located messages, saved losslessly."""

from __future__ import annotations

import json
import math

import pytest

from core import io
from core.errors import LinkwrightError
from core.model import Body, ContactSettings, Mechanism, PairOverride, Pose, SimulationSettings, Velocity


def scene() -> Mechanism:
    """A ground plane and one 1 kg sphere, added through the edit API as the app does."""
    m = Mechanism(name="s", space="spatial", gravity=(0.0, 0.0, -9.81))
    m.add_body(Body("ground", ground=True, shape={"type": "halfspace", "normal": [0, 0, 1], "offset": 0}))
    m.add_body(Body("ball", mass=1.0, shape={"type": "sphere", "radius": 0.1}, pose=Pose((0.0, 0.0, 0.5))))
    return m


def located(fn, *args, **kwargs) -> LinkwrightError:
    with pytest.raises(LinkwrightError) as info:
        fn(*args, **kwargs)
    return info.value


def test_a_bad_shape_parameter_is_refused_with_the_loaders_location_and_nothing_changes():
    m = scene()
    before = m.copy()
    err = located(m.update_body, "ball", shape={"type": "sphere", "radius": -1})
    assert err.location == "bodies[1].shape.radius" and "positive" in err.message
    err = located(m.update_body, "ball", shape={"type": "box", "size": [0.1, 0, 0.1]})
    assert err.location == "bodies[1].shape.size[1]"
    err = located(m.update_body, "ball", shape={"type": "sphere", "radius": 0.1, "radii": [1, 1, 1]})
    assert err.location == "bodies[1].shape.radii"  # unknown key of a sphere, as the loader says
    err = located(m.update_body, "ball", shape={"type": "blob"})
    assert err.location == "bodies[1].shape.type" and "known types" in err.message
    assert m == before and m.revision == before.revision
    # The same text the loader gives for the same file.
    d = io.to_dict(m)
    d["bodies"][1]["shape"] = {"type": "sphere", "radius": -1}
    assert str(located(io.from_dict, d)) == "bodies[1].shape.radius: must be a positive number, got -1"


def test_mass_density_inertia_com_pose_and_velocity_are_checked():
    m = scene()
    assert located(m.update_body, "ball", density=1000.0).location == "bodies[1].density"  # with mass: both
    m.update_body("ball", mass=None, density=1000.0)
    assert m.body("ball").density == 1000.0
    assert located(m.update_body, "ball", shape=None).message == "density needs a shape to give the volume"
    err = located(m.update_body, "ball", inertia=((1, 0.5, 0), (0, 1, 0), (0, 0, 1)))
    assert err.location == "bodies[1].inertia" and err.message == "must be symmetric"
    assert located(m.update_body, "ball", inertia=((1, 0, 0), (0, 0, 0), (0, 0, 1))).message == "diagonal entries must be positive"
    assert located(m.update_body, "ball", com=(0.0, math.nan, 0.0)).location == "bodies[1].com[1]"
    err = located(m.update_body, "ball", pose=Pose((0, 0, 1), (1.0, 0.0, 0.0, 0.5)))
    assert err.location == "bodies[1].pose.orientation" and "not a unit quaternion" in err.message
    assert located(m.update_body, "ball", velocity=Velocity((0, 0, math.inf))).location == "bodies[1].velocity.linear[2]"
    m.update_body("ball", inertia=((0.004, 0, 0), (0, 0.004, 0), (0, 0, 0.004)), com=(0.0, 0.0, 0.01),
                  velocity=Velocity((1.0, 0.0, 0.0), (0.0, 2.0, 0.0)))
    assert m.body("ball").velocity.angular == (0.0, 2.0, 0.0)


def test_contact_and_simulation_settings_are_created_edited_and_checked():
    m = scene()
    assert m.contact is None and m.contact_settings() == ContactSettings()
    old = m.set_contact(friction=0.3)
    assert old is None and m.contact == ContactSettings(friction=0.3)
    assert located(m.set_contact, friction=-0.1).location == "contact.friction"
    assert located(m.set_contact, ellipsoid=(1, 0, 0)).location == "contact.ellipsoid[1]"
    assert located(m.set_contact, ellipsoid=(1, 1, -1)).location == "contact.ellipsoid[2]"
    m.set_contact(ellipsoid=[1, 1, 0.01])
    assert m.contact.ellipsoid == (1.0, 1.0, 0.01)
    assert m.set_simulation(dt=0.005) is None and m.simulation == SimulationSettings(dt=0.005)
    assert located(m.set_simulation, dt=0.0).location == "simulation.dt"
    assert located(m.set_simulation, duration=-1.0).location == "simulation.duration"
    assert located(m.set_simulation, method="rk4").location == "simulation.method"
    m.set_simulation(method="explicit", duration=2.0)
    assert m.simulation == SimulationSettings(0.005, 2.0, "explicit")


def test_pair_overrides_are_added_replaced_in_place_and_removed():
    m = scene()
    m.add_body(Body("box", mass=2.0, shape={"type": "box", "size": [0.2, 0.2, 0.2]}, pose=Pose((1.0, 0.0, 0.1))))
    m.set_pair_friction("ball", "ground", 0.2)
    m.set_pair_friction("box", "ground", 0.9)
    m.set_pair_friction("ground", "ball", 0.25)  # the same pair, either order: replaced where it was
    assert m.contact.pairs == (PairOverride(("ground", "ball"), 0.25), PairOverride(("box", "ground"), 0.9))
    assert m.contact.friction_for("ball", "ground") == 0.25 and m.contact.friction_for("ball", "box") == 0.5
    # a new pair goes after the two there: index 2
    assert located(m.set_pair_friction, "ball", "nobody", 0.1).location == "contact.pairs[2].bodies[1]"
    assert located(m.set_pair_friction, "ball", "ball", 0.1).location.startswith("contact.pairs")
    m.set_pair_friction("ball", "ground", None)
    assert m.contact.pairs == (PairOverride(("box", "ground"), 0.9),)
    m.rename_body("box", "crate")  # a rename follows into the overrides
    assert m.contact.pairs[0].bodies == ("crate", "ground")


def test_an_edited_scene_saves_losslessly_and_equals_the_same_json_written_by_hand(tmp_path):
    m = scene()
    m.update_body("ball", shape={"radius": 0.05, "type": "sphere"},  # keys in any order: stored as the loader does
                  pose=Pose((0.0, 0.0, 0.3), (math.cos(math.pi / 8), 0.0, 0.0, math.sin(math.pi / 8))),
                  velocity=Velocity((0.5, 0.0, 0.0), (0.0, 0.0, 0.0)))
    m.set_contact(friction=0.4)
    m.set_simulation(dt=0.005, duration=0.5)
    path = tmp_path / "scene.json"
    io.save(m, path)
    text = path.read_text()
    again = io.load(path)
    assert again == m and io.dumps(again) == text
    hand = {
        "format": "linkwright.mechanism", "version": 1, "name": "s", "space": "spatial", "gravity": [0, 0, -9.81],
        "bodies": [
            {"name": "ground", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1]}},
            {"name": "ball", "mass": 1, "shape": {"type": "sphere", "radius": 0.05},
             "pose": {"position": [0, 0, 0.3], "orientation": [math.cos(math.pi / 8), 0, 0, math.sin(math.pi / 8)]},
             "velocity": {"linear": [0.5, 0, 0]}},
        ],
        "contact": {"friction": 0.4}, "simulation": {"dt": 0.005, "duration": 0.5},
    }
    assert io.loads(json.dumps(hand)) == m


GROUND_FIXED = ("a ground body is fixed (it does not move): remove the velocity, or un-mark the body as ground (to "
                "move it at a set speed: a driven joint to the ground)")


def test_a_velocity_on_a_ground_body_is_refused_in_the_file_and_in_every_edit():
    """A ground body never moves: a velocity given to one was loaded, and ignored by every run (the tester's
    velocity_on_ground.json simulated with status 0). It is refused with its location, on load and by the edits
    (typing it into the Properties panel, marking a moving body as ground); zeros stay allowed."""
    d = io.to_dict(scene())
    d["bodies"][0]["velocity"] = {"linear": [1, 0, 0]}
    assert str(located(io.from_dict, d)) == f"bodies[0].velocity.linear: {GROUND_FIXED}"
    d["bodies"][0]["velocity"] = {"angular": [0, 0, 0.5]}
    assert str(located(io.from_dict, d)) == f"bodies[0].velocity.angular: {GROUND_FIXED}"
    d["bodies"][0]["velocity"] = {"linear": [0, 0, 0], "angular": [0, -0.0, 0]}
    assert io.from_dict(d).body("ground").velocity == Velocity()  # (zeros: nothing that a run ignores)

    m = scene()
    before = m.copy()
    err = located(m.update_body, "ground", velocity=Velocity((0.0, 0.2, 0.0)))
    assert (err.location, err.message) == ("bodies[0].velocity.linear", GROUND_FIXED)
    assert m == before and m.revision == before.revision
    m.update_body("ball", velocity=Velocity((0.0, 0.0, 0.0), (3.0, 0.0, 0.0)))
    before = m.copy()
    err = located(m.set_ground, "ball")
    assert (err.location, err.message) == ("bodies[1].velocity.angular", GROUND_FIXED)
    assert m == before and m.revision == before.revision
    m.update_body("ball", velocity=None)
    m.set_ground("ball")  # without its velocity the ball may be made ground
    assert m.body("ball").ground
    err = located(m.add_body, Body("wall", ground=True, velocity=Velocity((0.0, 0.0, 1.0))))
    assert err.location == "bodies[2].velocity.linear"
