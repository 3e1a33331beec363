"""Directions typed at any scale: a half-space normal is "not zero (any scale)" (docs/file-format.md, Bounds), so
[0, 0, 1e-200], whose squared length underflows to 0, is the +z plane like [0, 0, 1], in the contact model and in a
run, and a shape's support direction of any scale is that direction."""

import warnings

import numpy as np
import pytest

from contact_scenes import body, mechanism
from core.contact import build_model, simulate
from core.shapes import parse_shape

BALL = {"type": "sphere", "radius": 0.1}
CUBE = {"type": "box", "size": [0.2, 0.2, 0.2]}


def _scene(normal, offset=0.0):
    floor = {"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": list(normal), "offset": offset}}
    return mechanism([floor, body("ball", BALL, position=(0, 0, 0.3)),
                      body("box", CUBE, position=(0.5, 0, 0.1), linear=(1, 0, 0))])


@pytest.mark.parametrize("scale", [1e-200, 1e-300, 1e-320, 1e6])
def test_a_halfspace_normal_of_any_scale_is_its_direction_in_the_contact_model_and_the_run(scale):
    ref = simulate(build_model(_scene((0, 0, 1))), t_end=0.2, dt=0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (before: divide by zero in the contact model, the floor's normal NaN)
        model = build_model(_scene((0, 0, scale), offset=0.0))
        n, c = model.halfspace[0]
        np.testing.assert_array_equal(n, [0.0, 0.0, 1.0])
        assert c == 0.0
        rec = simulate(model, t_end=0.2, dt=0.01)
    assert rec.completed, rec.reason
    assert np.all(np.isfinite(rec.gap))
    # the same run as with the unit normal: the ball falls onto the floor, the box slides on it (before: both fell
    # through it, the gaps NaN)
    np.testing.assert_array_equal(rec.position, ref.position)
    np.testing.assert_array_equal(rec.gap, ref.gap)
    assert rec.position[-1, 1, 2] == pytest.approx(0.1, abs=1e-6)  # (the box: recorded bodies are the moving ones)
    assert rec.position[:, 0, 2].min() >= 0.1 - 1e-6


def test_a_tiny_normal_keeps_its_offset_ratio_and_a_tilted_one_its_direction():
    # offset / |normal|: [0, 0, 1e-200] with offset 5e-202 is the plane z <= 0.05
    n, c = build_model(_scene((0, 0, 1e-200), offset=5e-202)).halfspace[0]
    np.testing.assert_array_equal(n, [0.0, 0.0, 1.0])
    assert c == pytest.approx(0.05, rel=1e-12)
    n, c = build_model(_scene((0, 3e-250, 4e-250))).halfspace[0]
    np.testing.assert_allclose(n, [0.0, 0.6, 0.8], rtol=1e-15)


@pytest.mark.parametrize("scale", [1e-200, 1e200])
def test_a_support_direction_of_any_scale_is_that_direction(scale):
    # the shapes' unit_directions scales before the norm: [1e-200, 0, 0] was taken for the zero direction (+z)
    box = parse_shape(CUBE, "shape")
    np.testing.assert_array_equal(box.support(np.array([scale, 0.0, 0.0])), box.support(np.array([1.0, 0.0, 0.0])))
    assert box.support(np.array([scale, 0.0, 0.0]))[0] == 0.1
    ball = parse_shape(BALL, "shape")
    np.testing.assert_allclose(ball.support(np.array([0.0, scale, 0.0])), [0.0, 0.1, 0.0], atol=1e-15)
