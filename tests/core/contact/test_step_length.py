"""Steps longer than the scene's longest step (core.contact.stepper.longest_step) are made in equal sub-steps: the
implicit step's equations have spurious solutions in which a box pivots on an edge, and Newton finds them once
g h^2 / a is not small (a the body's half-size)."""

import math

import numpy as np
import pytest

from contact_scenes import G, body, check_invariants, floor, mechanism, run, total_energy
from core.contact import build_model, initial_state, step
from core.contact.stepper import _MAX_SUBSTEP_LEVELS, _STEP_SCALE, _TOO_LONG, longest_step

CUBE = {"type": "box", "size": [0.2, 0.2, 0.2]}


@pytest.mark.parametrize("mu, dt", [(0.3, 0.1), (0.3, 0.5), (0.6, 0.09), (0.9, 0.08)])
def test_a_box_sliding_in_long_steps_stays_flat_and_slows_at_mu_g(mu, dt):
    """A 0.2 m cube sliding at 2 m/s (mu <= 0.9 < 1: it cannot tip, the friction's moment about the front edge is
    smaller than the weight's) in steps of 0.08-0.5 s rolled over its front edge with the steps made whole (at 0.1
    s and mu 0.3: a quarter turn in two steps).  Made in sub-steps it stays flat, and one step of dt lowers its
    speed by mu g dt (every sub-step by mu g times its length) until it stops."""
    v0 = 2.0
    model, rec = run(mechanism([floor(), body("box", CUBE, position=(0, 0, 0.1), linear=(v0, 0, 0))], mu=mu), 1.0,
                     dt=dt)
    assert rec.completed
    check_invariants(model, rec)
    assert np.max(np.abs(rec.angular)) < 1e-9
    np.testing.assert_allclose(rec.orientation[:, 0], [[1, 0, 0, 0]] * len(rec.t), atol=1e-9)
    np.testing.assert_allclose(rec.position[:, 0, 2], 0.1, atol=1e-9)
    v_expected = np.maximum(v0 - mu * G * rec.t, 0.0)
    np.testing.assert_allclose(rec.velocity[:, 0, 0], v_expected, atol=1e-9)
    assert np.all(rec.halvings[1:] >= math.ceil(math.log2(dt / longest_step(model)) - 1e-12))


@pytest.mark.parametrize("dt", [0.2, 0.5, 1.0])
def test_a_box_resting_on_a_box_stays_at_rest_in_long_steps(dt):
    """A 0.1 m cube resting on a 0.3 x 0.3 x 0.1 m slab: in whole steps of 0.2 s it jumped and turned 54 degrees
    gaining 10 % energy, in steps of 0.5 s it left the slab for the floor.  In sub-steps nothing moves and each
    contact carries the weight above it."""
    low = body("low", {"type": "box", "size": [0.3, 0.3, 0.1]}, mass=2.0, position=(0, 0, 0.05))
    top = body("top", {"type": "box", "size": [0.1, 0.1, 0.1]}, mass=1.0, position=(0.05, 0.02, 0.15))
    model, rec = run(mechanism([floor(), low, top]), 2.0, dt=dt)
    assert rec.completed
    assert np.max(np.abs(rec.velocity)) < 1e-9 and np.max(np.abs(rec.angular)) < 1e-9
    e = total_energy(model, rec)
    assert np.max(e - e[0]) <= 1e-12 * abs(e[0]) + 1e-12


def test_the_longest_step_is_the_fraction_of_the_time_gravity_moves_the_thinnest_body_its_size():
    # 0.4 sqrt(a / g), a the smallest half-width of a shaped body moved by forces other than a sphere: a 0.2 m cube
    # and a slab 0.3 x 0.3 x 0.1 m (a = 0.05) together: the slab's
    low = body("low", {"type": "box", "size": [0.3, 0.3, 0.1]}, position=(0, 0, 0.05))
    cube = body("cube", CUBE, position=(0, 0, 0.2))
    assert longest_step(build_model(mechanism([floor(), cube]))) == pytest.approx(_STEP_SCALE * math.sqrt(0.1 / G))
    assert longest_step(build_model(mechanism([floor(), low, cube]))) == pytest.approx(
        _STEP_SCALE * math.sqrt(0.05 / G))
    # no bound for spheres (no edge to pivot on) nor without gravity
    ball = body("ball", {"type": "sphere", "radius": 0.01}, position=(0, 0, 0.01))
    assert longest_step(build_model(mechanism([floor(), ball]))) == math.inf
    assert longest_step(build_model(mechanism([floor(), cube], gravity=(0, 0, 0)))) == math.inf


def test_a_step_of_more_sub_steps_than_the_limit_fails_with_its_reason():
    model = build_model(mechanism([floor(), body("box", CUBE, position=(0, 0, 0.1))]))
    state = initial_state(model)
    too_long = 2 ** (_MAX_SUBSTEP_LEVELS + 1) * longest_step(model)
    r = step(model, state, too_long)
    assert not r.converged and r.reason.startswith(_TOO_LONG) and r.state is state
    r = step(model, state, 2 ** (_MAX_SUBSTEP_LEVELS - 1) * longest_step(model))  # within the limit: made
    assert r.converged and r.halvings == _MAX_SUBSTEP_LEVELS - 1


def test_a_run_whose_time_step_is_beyond_the_sub_step_limit_is_refused_before_it_starts():
    """User test s55 K8: a time step the scene cannot take (more than 2^_MAX_SUBSTEP_LEVELS of its longest step)
    stopped the run at its first step, status 3 'stopped early' with one row; it is known before the run: the run
    (core.run.open_run's, the command line's and the app's) is refused at simulation.dt with the step's own reason."""
    from core.contact.recording import ContactRun
    from core.errors import LinkwrightError

    model = build_model(mechanism([floor(), body("box", CUBE, position=(0, 0, 0.1))]))
    too_long = 2 ** (_MAX_SUBSTEP_LEVELS + 1) * longest_step(model)
    with pytest.raises(LinkwrightError) as e:
        ContactRun(model, t_end=too_long, dt=too_long)
    reason = step(model, initial_state(model), too_long).reason
    assert e.value.location == "simulation.dt" and e.value.message == reason and reason.startswith(_TOO_LONG)
    within = 2 ** (_MAX_SUBSTEP_LEVELS - 1) * longest_step(model)
    assert ContactRun(model, t_end=within, dt=within).n_steps == 1


def test_a_step_made_in_sub_steps_shares_one_iteration_budget_among_them(monkeypatch):
    """User test s57, S1: a step made in 2^k sub-steps had the cost bound per sub-step (a 1 um cube sliding, 128
    sub-steps: 38,383 Newton iterations and a minute in one step).  The budget (max_iterations) is the step's, shared
    by its sub-steps as by its attempts and halves: once spent, the next sub-step makes no attempt and the step
    stops with that reason; the explicit method's step for a failed one shares its own (_FALLBACK_ITER) the same way."""
    import core.contact.stepper as stp

    from core.contact.stepper import StepResult

    model = build_model(mechanism([floor(), body("box", CUBE, position=(0, 0, 0.1), linear=(1.0, 0, 0))]))
    h = 8 * longest_step(model)  # 8 sub-steps
    st = initial_state(model)
    made = []

    def costs_40(model_, state, hh, method_, tol, max_iter, extra=frozenset(), form="ac", restarts=1, **_kw):
        made.append(hh)
        # (a converged sub-step of 40 iterations: its end state is its start, the test counts iterations only)
        return StepResult(state, True, min(40, max_iter), 1e-11, "converged", pairs=1)

    monkeypatch.setattr(stp, "_step_once", costs_40)
    # 8 sub-steps of 40 iterations: 320 within a budget of 400, the step converges
    res = step(model, st, h, max_iterations=400, fallback=False)
    assert res.converged and res.iterations == 320 and len(made) == 8
    # within 250: six sub-steps make 240, the seventh's attempt is capped at the 10 left, the eighth has none
    made.clear()
    res = step(model, st, h, max_iterations=250, fallback=False)
    assert not res.converged and res.iterations <= 250
    assert "budget is spent" in res.reason and "sub-steps before this one" in res.reason
    assert len(made) == 7  # (the eighth makes no attempt)


def test_the_explicit_method_s_share_of_a_step_is_shared_by_its_sub_steps_too(monkeypatch):
    """The explicit method's step for a failed implicit one has _FALLBACK_ITER iterations for the whole step, shared by
    its sub-steps: here every implicit attempt fails and every explicit step converges in 50 iterations (its
    implicit attempt from the end then fails in 10, charged to the same share, and the explicit step is taken), so the
    explicit method takes sub-steps until the share is spent, and the step then fails.  With a share of 300: five
    sub-steps of the eight (each sub-step had its own share before: all 8 were taken and the step converged)."""
    import core.contact.stepper as stp

    from core.contact.stepper import StepResult

    model = build_model(mechanism([floor(), body("box", CUBE, position=(0, 0, 0.1), linear=(1.0, 0, 0))]))
    h = 8 * longest_step(model)
    st = initial_state(model)
    explicit = []

    def fake(model_, state, hh, method_, tol, max_iter, extra=frozenset(), form="ac", restarts=1, **kw):
        if method_ == "explicit":
            explicit.append(min(50, max_iter))
            return StepResult(state, max_iter >= 50, min(50, max_iter), 1e-11, "converged", pairs=1)
        return StepResult(state, False, min(10, max_iter), 1e-3, "MCP solver: stalled", pairs=1)

    monkeypatch.setattr(stp, "_step_once", fake)
    monkeypatch.setattr(stp, "_FALLBACK_ITER", 300)
    res = step(model, st, h, max_iterations=30)
    assert not res.converged
    assert explicit == [50] * 5  # (300 = 5 x (50 + 10); the sixth sub-step finds nothing left)


def _die(linear=(1.426, -0.373, -1.996), angular=(14.86, -11.62, -11.38)):
    # a 16 mm cube die (a polytope, 4 g) thrown from 5 cm onto the floor, mu 0.4 (user test s58's throw)
    a = 0.008
    verts = [[sx * a, sy * a, sz * a] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
    return mechanism([floor(), body("die", {"type": "polytope", "vertices": verts}, mass=0.004, position=(0, 0, 0.05),
                                    linear=linear, angular=angular)], mu=0.4)


def test_a_thrown_die_settles_without_gaining_energy():
    """A 16 mm die thrown at 2.5 m/s tumbles at 150-300 rad/s: in whole steps of 0.01 s it turned 1.4-2 rad a step
    (within _MAX_TURN), pivoted about corners it never had, gained energy in 76 of 300 steps (11 % of its energy in
    one step) and was still tumbling 4 m away after 3 s.  A body in contact turns at most _CONTACT_TURN a (sub-)step:
    the total energy never rises (no driver, plastic contacts) and the die comes to rest, its centre a half-size
    above the floor (lying on a face) within a second."""
    model, rec = run(_die(), 3.0)
    assert rec.completed
    check_invariants(model, rec)  # (among them: the total energy never rises from one step to the next)
    assert np.max(rec.halvings) >= 1  # (sub-stepped after it lands: the impact spins it up)
    assert np.all(np.linalg.norm(rec.velocity[rec.t >= 1.0, 0], axis=1) < 1e-6)  # (at rest within a second)
    assert abs(rec.position[-1, 0, 2] - 0.008) < 1e-6
    assert np.linalg.norm(rec.position[-1, 0, :2]) < 0.5


def test_a_body_in_contact_is_sub_stepped_by_its_spin_and_a_cylinder_s_own_axis_is_left_out():
    """_spin_levels: 2^k sub-steps of h turn a body in contact range (a pair of last step, state.warm) by at most
    _CONTACT_TURN;
    the die spinning at 60 rad/s: h |w| = 0.6 rad at h = 0.01 s, so k = ceil(log2(0.6 / 0.25)) = 2; a body without a
    pair (in flight) and a cylinder rolling about its own axis are not sub-stepped."""
    from core.contact.stepper import _CONTACT_TURN, _spin_levels

    model = build_model(_die(linear=(0, 0, 0), angular=(0, 0, 60.0)))
    st = initial_state(model)
    assert _spin_levels(model, st, 0.01) == 0  # (no pair yet: in flight)
    st.warm = {0: {}}
    assert _spin_levels(model, st, 0.01) == math.ceil(math.log2(0.01 * 60.0 / _CONTACT_TURN)) == 2
    assert _spin_levels(model, st, 0.004) == 0  # (0.24 rad)
    # a cylinder and a disc (r 0.05 m) rolling along x about their own axes (body z turned onto world y) at 100
    # rad/s, and tilted
    c = math.cos(math.pi / 4)
    for shape in ({"type": "cylinder", "radius": 0.05, "length": 0.01}, {"type": "disc", "radius": 0.05,
                                                                            "thickness": 0.01}):
        model = build_model(mechanism([floor(), body("wheel", shape, position=(0, 0, 0.05), orientation=(c, c, 0, 0),
                                                     angular=(0, 100.0, 0))]))
        st = initial_state(model)
        st.warm = {0: {}}
        assert _spin_levels(model, st, 0.01) == 0, shape["type"]
        st.w[1] = (20.0, 100.0, 0.0)  # (20 rad/s about x: 0.2 rad a step, within the limit)
        assert _spin_levels(model, st, 0.01) == 0
        st.w[1] = (60.0, 100.0, 0.0)
        assert _spin_levels(model, st, 0.01) == 2
