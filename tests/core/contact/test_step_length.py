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
