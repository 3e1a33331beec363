"""A contact run keeps every body within stepper.MAX_REACH (2^21 m) of the origin on each axis: farther out doubles
are further apart than the contact step resolves (its overlap bound of 9e-10 m less the overlap of 4.5e-10 m it keeps),
and its steps stall (user test, F9: a 1 um sphere resting on a floor 2.1e6 m from the origin took about 47 Newton
iterations a step, half its steps taken by the explicit method).  A body that starts so far is refused, located at
its position; one that gets there stops the run with the frames before kept."""

import math

import numpy as np
import pytest

from contact_scenes import body, floor, mechanism
from core.contact import build_model, simulate
from core.contact.stepper import MAX_REACH, RESOLUTION
from core.errors import LinkwrightError


def test_the_reach_is_the_largest_power_of_two_below_which_doubles_are_as_fine_as_the_step_resolves():
    # the step resolves its overlap bound (9e-10 m) less the overlap a sphere pair keeps (half of it): 4.5e-10 m.
    # Doubles in [2^20, 2^21) are 2^(20 - 52) = 2^-32 = 2.33e-10 m apart, within it; in [2^21, 2^22) 2^-31 = 4.66e-10 m
    assert RESOLUTION == pytest.approx(9e-10 - 4.5e-10, rel=1e-15)
    assert MAX_REACH == 2.0**21 == 2_097_152.0
    assert np.spacing(np.nextafter(MAX_REACH, 0.0)) == 2.0**-32 <= RESOLUTION < 2.0**-31 == np.spacing(MAX_REACH)


def _drum(x: float):
    """An upright drum (radius 1e6 m, 1e6 m long) standing on the floor, its axis at x: its bounding sphere (radius
    sqrt(1e6^2 + 5e5^2) = 1.118e6 m about its centre) reaches x + 1.118e6 m along x; and a ball resting on the floor
    100 km from the origin, clear of it."""
    drum = body("drum", {"type": "cylinder", "radius": 1e6, "length": 1e6}, mass=1e3, position=(x, 0, 5e5))
    ball = body("ball", {"type": "sphere", "radius": 0.1}, position=(-1e5, 0, 0.1))
    return build_model(mechanism([floor(), ball, drum]))


def test_a_body_that_reaches_beyond_is_refused_at_the_start_located_at_its_position():
    reach = 1e6 + math.hypot(1e6, 5e5)  # 2.118e6 m > 2^21 = 2.097e6 m
    assert reach > 2.0**21
    with pytest.raises(LinkwrightError) as err:
        simulate(_drum(1e6), t_end=0.05, dt=0.01)
    assert err.value.location == "bodies[2].pose.position"
    assert err.value.message.startswith(
        f"'drum' reaches {reach:.3g} m from the origin along x (its centre of mass at x = 1e+06 m, its bounding radius "
        "1.12e+06 m): there doubles are 4.7e-10 m apart, coarser than the contact step's resolution of 4.5e-10 m")
    assert err.value.message.endswith("keep every body within 2097152 m (2^21 m) of the origin on each axis; move the "
                                      "scene nearer the origin")


def test_a_scene_just_inside_the_reach_runs():
    assert 0.97e6 + math.hypot(1e6, 5e5) < 2.0**21  # 2.088e6 m
    rec = simulate(_drum(0.97e6), t_end=0.05, dt=0.01)
    assert rec.completed, rec.reason
    assert rec.t[-1] == pytest.approx(0.05)
    assert np.all(rec.gap[rec.active] >= -1e-9)


def _flying(v: float):
    """A ball 1 m over the floor at x = 1e6 m flying along x at v m/s, without gravity (it never touches the floor)."""
    ball = body("ball", {"type": "sphere", "radius": 0.1}, position=(1e6, 0, 1.0), linear=(v, 0, 0))
    return build_model(mechanism([floor(), ball], gravity=(0, 0, 0)))


def test_a_body_that_travels_beyond_the_reach_stops_the_run_with_the_frames_before_kept():
    # x = 1e6, 1.5e6, 2e6 m at t = 0, 1, 2 s (+ 0.1 m of its radius: within 2^21 m); the step to t = 3 s ends it at
    # 2.5e6 m, beyond: not kept, and the run stops there with its reason
    rec = simulate(_flying(5e5), t_end=5.0, dt=1.0)
    assert not rec.completed
    np.testing.assert_array_equal(rec.t, [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(rec.position[:, 0, 0], [1e6, 1.5e6, 2e6])
    assert rec.reason.startswith("stopped at t = 2 s: 'ball' reached 2.5e+06 m from the origin along x (its centre of "
                                 "mass at x = 2.5e+06 m, its bounding radius 0.1 m): there doubles are 4.7e-10 m apart")


def test_a_body_that_stays_within_the_reach_runs_to_the_end():
    rec = simulate(_flying(2e5), t_end=5.0, dt=1.0)  # to x = 2e6 m at t = 5 s
    assert rec.completed, rec.reason
    assert rec.position[-1, 0, 0] == 2e6
