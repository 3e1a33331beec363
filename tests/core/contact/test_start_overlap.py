"""Bodies that start inside one another: a contact run refuses an overlap deeper than validate.MAX_START_OVERLAP of
the thinner body's thinnest width (located, before any step), and accepts a shallower one (rounding in typed positions)."""

import numpy as np
import pytest

from contact_scenes import G, body, floor, mechanism
from core.contact import build_model, simulate
from core import validate
from core.errors import LinkwrightError

CUBE = {"type": "box", "size": [0.2, 0.2, 0.2]}  # thinnest width 0.2 m: MAX_START_OVERLAP * 0.2 = 2e-4 m accepted


@pytest.mark.parametrize("depth", [0.08, 1e-3, 3e-4])
def test_a_cube_started_inside_the_floor_is_refused_with_its_depth(depth):
    # the cube's centre at z = 0.1 - depth: its bottom face `depth` below the floor (an 8 cm start left the floor at
    # 8 m/s and rose 2.8 m before this check)
    mech = mechanism([floor(), body("cube", CUBE, position=(0, 0, 0.1 - depth))])
    with pytest.raises(LinkwrightError) as err:
        simulate(build_model(mech), t_end=0.05)
    assert err.value.location == "bodies[1].pose.position"
    assert f"'cube' starts {depth:.3g} m inside 'floor'" in err.value.message
    assert "0.0002 m" in err.value.message and "move them apart" in err.value.message


def test_two_spheres_started_inside_one_another_are_refused_at_the_later_one():
    # radius 0.1 each, centres 0.12 apart: 0.08 m deep; thinnest width 0.2, so 2e-4 m accepted; both move: located at
    # the later in the file (the one put where the other is), as every start overlap is (closest.start_located)
    mech = mechanism([floor(), body("a", {"type": "sphere", "radius": 0.1}, position=(0, 0, 0.5)),
                      body("b", {"type": "sphere", "radius": 0.1}, position=(0.12, 0, 0.5))])
    with pytest.raises(LinkwrightError) as err:
        simulate(build_model(mech), t_end=0.05)
    assert err.value.location == "bodies[2].pose.position"
    assert "'b' starts 0.08 m inside 'a'" in err.value.message


def test_an_overlap_within_a_thousandth_of_the_width_runs_and_is_pushed_out_at_depth_over_dt():
    # 1e-4 m deep (half of what is accepted): the first step ends with the gap >= 0 (the cube rests on the floor
    # after it), so the cube leaves at the speed that closes the overlap in one step, depth / h (its impulse also
    # cancels gravity's -g h), a hop of (depth / h)^2 / (2 g) = 5.1e-6 m: what the limit allows at most
    depth, h = 1e-4, 0.01
    assert depth < validate.MAX_START_OVERLAP * 0.2
    mech = mechanism([floor(), body("cube", CUBE, position=(0, 0, 0.1 - depth))])
    rec = simulate(build_model(mech), t_end=0.2, dt=h)
    assert rec.completed, rec.reason
    np.testing.assert_allclose(rec.velocity[1, 0], [0.0, 0.0, depth / h], atol=1e-9)
    top = rec.position[:, 0, 2].max() - 0.1
    assert top <= (depth / h) ** 2 / (2 * G) + 1e-9
    assert rec.gap[-1].min() >= -1e-9


def test_bodies_set_exactly_touching_run():
    # a cube on the floor and a sphere on the cube, each exactly touching (gap 0 to rounding)
    mech = mechanism([floor(), body("cube", CUBE, position=(0, 0, 0.1)),
                      body("ball", {"type": "sphere", "radius": 0.05}, position=(0, 0, 0.25))])
    rec = simulate(build_model(mech), t_end=0.05)
    assert rec.completed, rec.reason
