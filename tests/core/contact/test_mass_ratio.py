"""Bodies in contact range of one another differ in mass by at most validate.MAX_MASS_RATIO (3000): beyond it the contact step's Newton
systems are as ill-conditioned as the ratio, and its stopping test, relative to the largest impulse, meets the heavier
body's equations only roughly (a 10 t box dropped onto a 1 kg slab squeezed it out; a box of 1e9 kg resting on one of
1 kg had its contact force 10 % off its weight at every step, exit status 0)."""

import pytest

from contact_scenes import G, body, floor, mechanism
from core import validate
from core.contact import build_model, simulate
from core.errors import LinkwrightError

H = 0.01


def _stack(m_top):
    low = body("low", {"type": "box", "size": [0.3, 0.3, 0.1]}, mass=1.0, position=(0, 0, 0.05))
    top = body("top", {"type": "box", "size": [0.1, 0.1, 0.1]}, mass=m_top, position=(0, 0, 0.15))
    return build_model(mechanism([floor(), low, top]))


def test_a_box_as_heavy_as_the_ratio_allows_rests_on_a_light_one_with_its_weight_as_contact_force():
    # at rest, the top box's contact impulse over a step is its weight's, m g h
    m_top = validate.MAX_MASS_RATIO
    model = _stack(m_top)
    rec = simulate(model, t_end=0.3, dt=H)
    assert rec.completed
    names = [{model.names[a], model.names[b]} for a, b, _mu in model.pairs]
    on_top = names.index({"low", "top"})
    assert rec.pn[1:, on_top] == pytest.approx(m_top * G * H, rel=1e-9)


def test_bodies_in_contact_range_at_the_start_that_differ_more_are_refused_at_the_heavier_one():
    with pytest.raises(LinkwrightError) as err:
        simulate(_stack(10 * validate.MAX_MASS_RATIO), t_end=0.05, dt=H)
    assert err.value.location == "bodies[2]"
    assert err.value.message.startswith("'top' (3e+04 kg) is 3e+04 times as heavy as 'low' (1 kg), in contact range: "
                                        "at most 3000 times")


def _apart(gap_x):
    """A 1e4 kg box on the floor and a 1 kg ball on the floor gap_x metres from its side, rolling to it at 1 m/s."""
    heavy = body("heavy", {"type": "box", "size": [0.2, 0.2, 0.2]}, mass=1e4, position=(0, 0, 0.1))
    ball = body("ball", {"type": "sphere", "radius": 0.05}, mass=1.0, position=(0.1 + gap_x + 0.05, 0, 0.05),
                linear=(-1.0, 0, 0), angular=(0, -20.0, 0))  # rolling: w = v / r about -y
    return build_model(mechanism([floor(), heavy, ball]))


def test_bodies_that_never_come_into_contact_range_are_not_refused():
    # 100 m apart for 0.3 s at 1 m/s: they never come near (the check used to refuse every shaped pair, "which it can
    # touch", whatever the distance; the user test's box and ball 100 m apart)
    rec = simulate(_apart(100.0), t_end=0.3, dt=H)
    assert rec.completed and rec.t[-1] == pytest.approx(0.3)


def test_bodies_that_come_into_contact_range_stop_the_run_before_that_step():
    # 0.2 m apart at 1 m/s: the ball reaches the box's side after about 0.2 s, and the broad phase takes the pair in a
    # step or a few before (its margin: what can be travelled in a step, and 1 mm); the run stops there, with the
    # frames before kept, and the step that solved the pair not kept
    model = _apart(0.2)
    rec = simulate(model, t_end=0.5, dt=H)
    assert not rec.completed
    assert rec.reason.startswith(f"stopped at t = {rec.t[-1]:.6g} s: 'heavy' (1e+04 kg) is 1e+04 times as heavy as "
                                 "'ball' (1 kg), came into contact range: at most 3000 times")
    assert 0.1 < rec.t[-1] < 0.2  # 0.2 m at 1 m/s (rolling on the floor: no friction force slows it)
    pair = [{model.names[a], model.names[b]} for a, b, _mu in model.pairs].index({"heavy", "ball"})
    assert not rec.active[:, pair].any()  # no kept step solved the pair


def test_a_heavy_body_touching_only_fixed_ones_is_not_refused():
    # against the floor alone the pair's unknowns are in the heavy body's own units: no ratio
    heavy = body("heavy", {"type": "box", "size": [0.1, 0.1, 0.1]}, mass=1e12, position=(0, 0, 0.05))
    rec = simulate(build_model(mechanism([floor(), heavy])), t_end=0.05, dt=H)
    assert rec.completed
    assert rec.pn[1:, 0] == pytest.approx(1e12 * G * H, rel=1e-9)
