"""Planar documents in the contact step: every body moves in the x-y plane with three freedoms, gravity in the plane."""

import json

import numpy as np
import pytest

from core import io
from core.contact import build_model, initial_state
from core.contact.joints import joint_errors
from core.contact.recording import ContactRun, iter_steps

G = 9.81


def _planar(bodies, joints=()):
    return io.loads(json.dumps({"format": "linkwright.mechanism", "version": 1, "space": "planar",
                                "gravity": [0, -G, 0], "bodies": bodies, "joints": list(joints),
                                "contact": {"friction": 0.5}}))


def test_a_body_thrown_in_a_planar_document_stays_in_its_plane_and_falls_as_the_scheme_says():
    # a ball thrown in the plane with a spin about z (an out-of-plane velocity or spin is refused on load:
    # tests/core/test_io.py): z, w_x, w_y stay 0 and the in-plane motion is the scheme's free fall: v_k = v0 - k h g,
    # y_k = y0 + h sum_{i=1..k} v_i = y0 + k h v0 - h^2 g k (k + 1) / 2, x_k = x0 + k h u
    u, v0, y0, h = 0.7, 1.2, 2.0, 0.01
    ball = {"name": "ball", "mass": 1.0, "shape": {"type": "sphere", "radius": 0.1},
            "pose": {"position": [0, y0, 0]}, "velocity": {"linear": [u, v0, 0.0], "angular": [0.0, 0.0, 1.0]}}
    model = build_model(_planar([{"name": "ground", "ground": True}, ball]))
    assert [js.name for js in model.joints] == ["ball (plane)"] and model.joints[0].implied
    st = initial_state(model)
    for k, res in enumerate(iter_steps(model, h, 30, state=st), start=1):
        assert res.converged, res.reason
        s = res.state
        assert abs(s.p[1, 2]) <= 1e-12 and np.abs(s.w[1, :2]).max() <= 1e-9 and abs(s.v[1, 2]) <= 1e-9
        np.testing.assert_allclose(s.p[1, :2], [k * h * u, y0 + k * h * v0 - h * h * G * k * (k + 1) / 2],
                                   atol=1e-12)
        np.testing.assert_allclose(s.w[1, 2], 1.0, atol=1e-12)  # (no torque about z: the spin in the plane stays)


def test_a_planar_pendulum_hits_a_box_and_nothing_leaves_the_plane():
    # a bob on a pin (a planar revolute, about z) swings down onto a box resting on the floor; the box is held in the
    # plane by its implied joint, the bob by its pin: no body leaves z = 0 and every joint stays closed; the run
    # records the document's joint only (the implied ones are not the document's)
    bob = {"name": "bob", "mass": 2.0, "shape": {"type": "sphere", "radius": 0.05},
           "pose": {"position": [-0.4, 0.45, 0]}}
    box = {"name": "box", "mass": 0.5, "shape": {"type": "box", "size": [0.1, 0.1, 0.1]},
           "pose": {"position": [0.08, 0.05, 0]}}
    floor = {"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 1, 0], "offset": 0}}
    mech = _planar([floor, bob, box], [{"name": "pin", "type": "revolute", "bodies": ["floor", "bob"],
                                       "at": [0, 0.45, 0]}])
    model = build_model(mech)
    hit = False
    for res in iter_steps(model, 0.005, 80):
        assert res.converged, res.reason
        assert np.abs(res.state.p[1:, 2]).max() <= 1e-9 and np.abs(joint_errors(model, res.state)).max() <= 1e-9
        hit |= any(model.pairs[c.pair][:2] in ((1, 2), (2, 1)) and c.pn > 0 for c in res.contacts)
    assert hit
    assert ContactRun(model, t_end=0.01).joint_names == ["pin"]


def _cube_on_plank(x, cube_first=False, depth=0.2):
    # user test ut2 P4: a 1 kg cube (0.1 m) resting on a 5 kg plank (2 x 0.05 x depth m) on the floor, mu 0.5
    floor = {"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 1, 0], "offset": 0}}
    plank = {"name": "plank", "mass": 5.0, "shape": {"type": "box", "size": [2.0, 0.05, depth]},
             "pose": {"position": [0, 0.025, 0]}}
    cube = {"name": "cube", "mass": 1.0, "shape": {"type": "box", "size": [0.1, 0.1, 0.1]},
            "pose": {"position": [x, 0.1, 0]}}
    return _planar([floor, cube, plank] if cube_first else [floor, plank, cube])


def _by_pair(model, res):
    return {frozenset(model.names[i] for i in model.pairs[c.pair][:2]): c for c in res.contacts}


def test_a_cube_resting_on_a_plank_in_a_planar_document_stays_at_rest_with_the_forces_of_its_equilibrium():
    # Equilibrium: the cube's weight m g = 9.81 N on the plank, the plank's and the cube's (M + m) g = 58.86 N on the
    # floor, no friction (nothing pushes along the floor, and nothing can across the plane), and the floor's contact
    # point under the centre of mass of the two, x = m x_c / (M + m) (the moments about z balance there).  The
    # contact across the plane is not unique (the plane joints take out-of-plane loads); before the proximal term of
    # planar documents this step stalled at every halving depth from 0.5 m off the plank's centre on
    m, M, h = 1.0, 5.0, 0.01
    for x, cube_first in ((-0.5, False), (-0.8, False), (-0.5, True)):
        model = build_model(_cube_on_plank(x, cube_first))
        for res in iter_steps(model, h, 10):
            assert res.converged, (x, res.reason)
            assert res.halvings == 0
            ic = model.names.index("cube")
            assert np.abs(res.state.v).max() <= 1e-12 and np.abs(res.state.w).max() <= 1e-12
            np.testing.assert_allclose(res.state.p[ic], [x, 0.1, 0.0], atol=1e-12)
            c = _by_pair(model, res)
            top, bottom = c[frozenset(("cube", "plank"))], c[frozenset(("plank", "floor"))]
            assert top.pn / h == pytest.approx(m * G, rel=1e-9)
            assert bottom.pn / h == pytest.approx((m + M) * G, rel=1e-9)
            assert frozenset(("cube", "floor")) not in c or c[frozenset(("cube", "floor"))].pn == 0.0
            assert np.abs(top.pf).max() / h <= 1e-9 and np.abs(bottom.pf).max() / h <= 1e-9  # (none across the plane)
            assert bottom.a1[0] == pytest.approx(m * x / (m + M), abs=1e-9)


def test_a_cube_pushed_on_a_plank_in_a_planar_document_holds_until_the_whole_friction_cone():
    # a horizontal push F at the cube's centre: below mu m g = 4.905 N the cube sticks (friction -F on it, the whole
    # cone in the plane: none of it spent across the plane), above it slides, accelerating at (F - mu m g) / m
    # relative to the floor less the plank's (the plank is held by the floor's friction: F < mu (M + m) g)
    m, h = 1.0, 0.01
    for F, sticks in ((0.95 * 0.5 * m * G, True), (1.1 * 0.5 * m * G, False)):
        model = build_model(_cube_on_plank(-0.5), forces={"cube": ((F, 0.0, 0.0), (0.0, 0.0, 0.0))})
        ic = model.names.index("cube")
        for res in iter_steps(model, h, 10):
            assert res.converged, res.reason
        c = _by_pair(model, res)[frozenset(("cube", "plank"))]
        if sticks:
            assert abs(res.state.v[ic, 0]) <= 1e-9
            assert np.linalg.norm(c.pf) / h == pytest.approx(F, rel=1e-6)
        else:
            assert res.state.v[ic, 0] == pytest.approx(10 * h * (F - 0.5 * m * G) / m, rel=1e-6)
            assert np.linalg.norm(c.pf) / h == pytest.approx(0.5 * m * G, rel=1e-6)
