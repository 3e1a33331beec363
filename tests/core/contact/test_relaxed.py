"""The explicit step's relaxed problem (core.contact.relaxed): Anitescu's convex relaxation, the start of the first
attempt of the explicit method's step that stands in for a failed implicit one."""

from pathlib import Path

import numpy as np
import pytest

from contact_scenes import G, body, floor, mechanism
from core import io
from core.contact import build_model, initial_state, step
from core.contact import stepper as stp
from core.contact.plan import Workspace
from core.contact.relaxed import relaxed_start
from tests.conftest import EXAMPLES

H = 0.01
R = 0.1


def _explicit_problem(model, state, h=H):
    return stp._StepProblem(model, state, h, "explicit", "ac", stp._AC_RHO, False, frozenset(), stp._TOL["explicit"],
                            60, Workspace(), None, False, None, None)


def _sliding_ball(v0, mu):
    """A ball (radius R, 1 kg) touching the floor, sliding along x at v0 without spin."""
    return build_model(mechanism([floor(), body("ball", {"type": "sphere", "radius": R}, position=(0, 0, R),
                                                linear=(v0, 0, 0))], mu=mu))


def test_the_relaxed_problem_of_a_sliding_ball_lifts_it_by_mu_times_its_slip_and_newton_then_meets_coulombs_law():
    # A ball of mass m, radius r (I = 2/5 m r^2) sliding at v0 on the floor, mu 0.3, one step h.  The relaxation asks
    # u_n >= mu |u_t| instead of u_n >= 0 (u the contact point's velocity).  While the ball keeps sliding, with the
    # friction impulse mu p_n against the slip:
    #   v_x = v0 - mu p_n / m,  w_y = r mu p_n / I,  u_t = v_x - r w_y = v0 - mu p_n (1/m + r^2/I) = v0 - 3.5 mu p_n / m
    #   v_z = -g h + p_n / m = mu u_t  (the cone's boundary: the pair is loaded)
    # so p_n / m = (g h + mu v0) / (1 + 3.5 mu^2): the relaxed solution lifts the ball at v_z = mu u_t > 0 (Anitescu's
    # gliding), while Coulomb's law (the explicit method's exact rows) gives v_z = 0, p_n = m g h, v_x = v0 - mu g h.
    mu, v0 = 0.3, 1.0
    model = _sliding_ball(v0, mu)
    st = initial_state(model)
    prob = _explicit_problem(model, st)
    z, its, status = relaxed_start(prob)
    assert status in ("Solved", "AlmostSolved") and 0 < its <= 100
    pn = (G * H + mu * v0) / (1 + 3.5 * mu ** 2)  # per unit mass; m_ref = m = 1 (a ball on a static floor)
    u_t = v0 - 3.5 * mu * pn
    (pr,) = prob.pairs
    assert z[pr.off] == pytest.approx(pn, rel=1e-8)
    np.testing.assert_allclose(z[0:3], [v0 - mu * pn, 0.0, mu * u_t], rtol=0, atol=1e-9)
    np.testing.assert_allclose(z[3:6], [0.0, R * mu * pn / (0.4 * R ** 2), 0.0], rtol=0, atol=1e-8)
    # the impulses in the explicit problem's unknowns: its body rows (Newton-Euler in impulse form) hold
    np.testing.assert_allclose(prob.value(z)[:6], 0.0, rtol=0, atol=1e-10)
    # the explicit method's Newton attempt from there: Coulomb's law on the linearised gap, as from its own start
    first = stp._step_once(model, st, H, "explicit", stp._TOL["explicit"], 60, relaxed=True)
    own = step(model, st, H, "explicit")
    assert first.converged and own.converged
    np.testing.assert_allclose(first.state.v[1], [v0 - mu * G * H, 0.0, 0.0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(first.state.w[1], [0.0, mu * G * H * R / (0.4 * R ** 2), 0.0], rtol=0, atol=1e-8)
    (c,) = first.contacts
    assert c.pn == pytest.approx(G * H, rel=1e-8)
    for name in ("p", "v", "w"):
        np.testing.assert_allclose(getattr(first.state, name), getattr(own.state, name), rtol=0, atol=1e-10)


def test_a_resting_ball_is_held_by_the_relaxed_problem_exactly():
    # at rest on the floor: the free motion v_z = -g h is undone by p_n = m g h, no friction, no spin
    model = _sliding_ball(0.0, 0.5)
    prob = _explicit_problem(model, initial_state(model))
    z, _its, _status = relaxed_start(prob)
    (pr,) = prob.pairs
    np.testing.assert_allclose(z[:6], 0.0, atol=1e-10)
    assert z[pr.off] == pytest.approx(G * H, rel=1e-9)
    np.testing.assert_allclose(z[pr.off + 1:pr.off + 3], 0.0, atol=1e-10)


@pytest.mark.parametrize("name", ["contact_pendulum_strike.json", "contact_parts_feeder.json",
                                  "contact_fourbar_swing.json"])
def test_joints_and_driven_bodies_are_rows_of_the_relaxed_problem(name):
    # the joints' rows linearised at the start (G0 nu = -c(q0) / h) and the kinematic bodies' velocities (their driven
    # motion) are equalities of the relaxed problem, and its multipliers are the joints' impulses: Newton from its
    # solution reaches the explicit method's own solution of the step, a few steps into the example
    model = build_model(io.load(EXAMPLES / name))
    st = initial_state(model)
    ws = Workspace()
    for _ in range(5):
        st = step(model, st, H, "implicit", workspace=ws).state
    prob = _explicit_problem(model, st)
    z, _its, status = relaxed_start(prob)
    assert z is not None, status
    nb = prob.nb
    if prob.jstep is not None:
        # its velocities meet the linearised joint rows: the end of the step would close each joint to O(h^2)
        from core.contact.joints import joint_constraints

        plan = prob.jstep.plan
        for q, spec in enumerate(plan.specs):
            c0, G0 = joint_constraints(spec, plan.length[q], st.p[spec.a], prob.jstep.R0[spec.a], st.p[spec.b],
                                       prob.jstep.R0[spec.b], prob.jstep.turn0[q], prob.jstep.target[q])
            nu = np.zeros(12)
            for side, k in ((0, plan.ka[q]), (1, plan.kb[q])):
                if k >= 0:
                    nu[6 * side:6 * side + 6] = z[6 * k:6 * k + 6]
            np.testing.assert_allclose(G0 @ nu, -c0 / H, rtol=0, atol=1e-8)
    # its multipliers, mapped to the explicit problem's impulses (contacts and joints), give exactly its velocities:
    # the explicit step's body rows (Newton-Euler in impulse form, the same lever arms and joint gradients) hold
    np.testing.assert_allclose(prob.value(z)[:6 * nb], 0.0, rtol=0, atol=1e-8)
    kinematic = [k for k in range(nb) if not np.any(prob.Sinv[k])]
    for k in kinematic:
        np.testing.assert_allclose(z[6 * k:6 * k + 6], prob.c_body[k], rtol=0, atol=1e-9)
    first = stp._step_once(model, st, H, "explicit", stp._TOL["explicit"], 60, relaxed=True, ws=ws)
    own = step(model, st, H, "explicit", workspace=ws)
    assert first.converged and own.converged
    for name_ in ("p", "v", "w"):
        np.testing.assert_allclose(getattr(first.state, name_), getattr(own.state, name_), rtol=0, atol=1e-7)


def test_the_jammed_27_sphere_step_that_neither_method_solves_is_taken_by_the_explicit_step_from_the_relaxed_start():
    # bench/hard_states: the state before step 87 of a 27-sphere pile at mu 0.8 (seed 113437999, the README's
    # forty-seed draw), a frictional jam whose implicit step fails at every depth of halving.  The explicit
    # method's own attempts fail too, whole and halved; Newton started from the relaxed problem's solution (its
    # unique solution, whatever the jam) converges, and the step's end meets the overlap bound
    from bench.hard_states import load_state
    from bench.scenes import load

    state, meta = load_state(Path(__file__).resolve().parents[3] / "bench" / "hard_states"
                             / "pile27-mu0.8_s113437999_implicit_k087.npz")
    model = build_model(load(meta["document"]))
    h = meta["h"]
    own = stp._step_split(model, state, h, "explicit", stp._TOL["explicit"], 60, 1, stp._ATTEMPTS,
                          stp._Options(stp.SolverOptions(), stp.NewtonOptions()), Workspace(), None,
                          stp._Budget(stp._FALLBACK_ITER))
    assert not own.converged
    first = stp._step_once(model, state, h, "explicit", stp._TOL["explicit"], 60, relaxed=True)
    assert first.converged, first.reason
    assert len(first.contacts) > 50
    assert min(c.gap for c in first.contacts) >= -stp._DEPTH_LIMIT
    for c in first.contacts:
        assert c.pn >= 0.0 and np.linalg.norm(c.pf) <= c.mu * c.pn * (1 + 1e-7) + 1e-15


def test_the_relaxed_start_is_the_explicit_methods_alone():
    model = _sliding_ball(1.0, 0.3)
    with pytest.raises(ValueError, match="explicit"):
        stp._step_once(model, initial_state(model), H, "implicit", 1e-10, 60, relaxed=True)


def test_a_mixed_pile_step_the_implicit_attempts_fail_converges_from_the_explicit_step_that_predicts_it():
    # bench/hard_states: a mixed pile's step (seed 41371365, step 24) where a box's corner has slid past the edge of a
    # polytope's face.  Saved where every implicit attempt stalled at every depth of halving (with the slip measured
    # from B's spin about A's centre, and a resting face's starting point at a corner of it); with the slip of
    # core.contact.pair.carried_slip and the face's centre as its start (closest._deepest_face_point) it converges
    # whole (checked first), so the implicit step is made to fail here by a budget of 60 iterations and no halving.  The
    # explicit method's step overlaps by 1.4 mm at its end (the first-order error of its geometry for turning
    # bodies), so it is refused.  An implicit attempt started from that explicit step's end (every pair's closest
    # points at its end poses, its impulses) converges: the step is the implicit method's, and keeps its guarantees
    from bench.hard_states import load_state
    from bench.scenes import load

    state, meta = load_state(Path(__file__).resolve().parents[3] / "bench" / "hard_states"
                             / "mixed13_s41371365_implicit_k024.npz")
    model = build_model(load(meta["document"]))
    h = meta["h"]
    whole = step(model, state, h, fallback=False)
    assert whole.converged and whole.halvings == 0 and whole.method == "implicit", whole.reason
    assert min(c.gap for c in whole.contacts) >= -1e-9
    assert not step(model, state, h, fallback=False, max_iterations=60, max_halvings=0).converged
    explicit = stp._step_split(model, state, h, "explicit", stp._TOL["explicit"], 60, 1, stp._FALLBACK_ATTEMPTS,
                               stp._Options(stp.SolverOptions(), stp.NewtonOptions()), Workspace(), None,
                               stp._Budget(stp._FALLBACK_ITER))
    assert explicit.converged and min(c.gap for c in explicit.contacts) < -1e-3
    r = step(model, state, h, max_iterations=60, max_halvings=0)
    assert r.converged and r.method == "implicit", r.reason
    assert r.reason.startswith("converged from the explicit method's step: the implicit step failed")
    assert r.residual <= stp._TOL["implicit"]
    for c in r.contacts:
        assert c.gap >= -1e-9 and c.pn >= 0.0
        assert c.pn * max(c.gap, 0.0) <= 1e-9
        assert np.linalg.norm(c.pf) <= c.mu * c.pn * (1 + 1e-7) + 1e-15


def test_torsional_friction_is_a_fourth_component_of_the_relaxed_cone():
    # contact_pile.json's friction ellipsoid has a torsional axis (e_r > 0): each pair's cone has the relative spin
    # about the normal as a fourth component, and its multiplier is the torsional impulse.  Mapped into the explicit
    # problem's unknowns, the impulses give exactly the relaxed solution's velocities (the explicit step's body rows
    # hold), and every pair's impulse lies in its friction ellipsoid
    model = build_model(io.load(EXAMPLES / "contact_pile.json"))
    assert model.ellipsoid[2] > 0
    st = initial_state(model)
    ws = Workspace()
    for _ in range(30):  # (into the pile's contacts)
        st = step(model, st, H, "implicit", workspace=ws).state
    prob = _explicit_problem(model, st)
    assert any(pr.lay.nf == 3 for pr in prob.pairs)
    z, _its, status = relaxed_start(prob)
    assert z is not None, status
    np.testing.assert_allclose(prob.value(z)[:6 * prob.nb], 0.0, rtol=0, atol=1e-8)
    loaded = 0
    for pr in prob.pairs:
        pn, q = z[pr.off], z[pr.off + 1:pr.off + 1 + pr.lay.nf]
        assert pn >= -1e-12 and np.linalg.norm(q) <= pr.mu * pn * (1 + 1e-6) + 1e-12
        loaded += pn > 1e-6 and pr.lay.nf == 3
    assert loaded > 0


def test_an_explicit_step_that_fails_at_every_depth_is_made_again_from_the_relaxed_start():
    # bench/hard_states: the state before step 90 of a 27-sphere pile at mu 0.8 run by the explicit method (seed
    # 616621599, the README's forty-seed draw, where that run stopped).  From its warm start the first attempt stalls
    # within _NEAR times the tolerance at every depth of halving; made once more at its full size from the relaxed
    # problem's solution (stepper._relaxed_retry), the explicit method's step converges
    from bench.hard_states import load_state
    from bench.scenes import load

    state, meta = load_state(Path(__file__).resolve().parents[3] / "bench" / "hard_states"
                             / "pile27-mu0.8_s616621599_explicit_k090.npz")
    model = build_model(load(meta["document"]))
    h = meta["h"]
    assert not step(model, state, h, "explicit", fallback=False).converged
    r = step(model, state, h, "explicit")
    assert r.converged and r.halvings == 0 and r.method == "explicit", r.reason
    assert r.reason.startswith("converged from the relaxed problem's solution: the step failed")
    for c in r.contacts:
        assert c.pn >= 0.0 and np.linalg.norm(c.pf) <= c.mu * c.pn * (1 + 1e-7) + 1e-15


def _newton_fails(monkeypatch):
    """Every Newton attempt of both methods fails (as in the 64-sphere pile's creeping steps, docs/contact.md)."""
    def attempt(model_, state, h, method, *args, **kw):
        return stp.StepResult(state, False, 4, 1e-5, "MCP solver: stalled (residual 1e-05)", pairs=1)

    monkeypatch.setattr(stp, "_step_once", attempt)


@pytest.mark.parametrize("method", ["implicit", "explicit"])
def test_a_step_that_every_newton_attempt_fails_is_its_relaxed_problems_solution(monkeypatch, method):
    # The sliding ball of the first test, every Newton attempt of both methods made to fail: the step is the relaxed
    # problem's solution (stepper._relaxed_step), as derived there: p_n / m = (g h + mu v0) / (1 + 3.5 mu^2), the ball
    # lifted at v_z = mu u_t, so that it ends the step h mu u_t above the floor with its normal impulse (Anitescu's
    # glide, which the result's reason quotes)
    mu, v0 = 0.3, 1.0
    model = _sliding_ball(v0, mu)
    st = initial_state(model)
    _newton_fails(monkeypatch)
    res = step(model, st, H, method)
    pn = (G * H + mu * v0) / (1 + 3.5 * mu ** 2)
    u_t = v0 - 3.5 * mu * pn
    assert res.converged and res.method == "relaxed"
    np.testing.assert_allclose(res.state.v[1], [v0 - mu * pn, 0.0, mu * u_t], rtol=0, atol=1e-9)
    np.testing.assert_allclose(res.state.w[1], [0.0, R * mu * pn / (0.4 * R ** 2), 0.0], rtol=0, atol=1e-8)
    (c,) = res.contacts
    assert c.pn == pytest.approx(pn, rel=1e-8)  # (m = 1 kg)
    assert c.gap == pytest.approx(H * mu * u_t, rel=1e-6)  # (the end pose's true gap, from its closest-point query)
    assert f"loaded pairs end up to {H * mu * u_t:.3g} m apart" in res.reason
    assert "MCP solver: stalled (residual 1e-05)" in res.reason  # (why Newton failed, kept)
    # its residual is that of the explicit method's rows at it: not a solution of Coulomb's law (its normal row,
    # u_n = 0 while loaded, misses by mu u_t)
    assert res.residual > 1e-3
    # asked for no fallback, the step fails as Newton left it
    assert not step(model, st, H, method, fallback=False).converged


def test_the_relaxed_step_is_refused_when_its_end_overlaps(monkeypatch):
    # the spinning cube of test_stepper (the explicit method's step overlaps the floor by about 1.2 cm: its gap is
    # linearised at the face's closest point while an edge swings down): the relaxed problem has the same geometry,
    # so its end overlaps too and the implicit run's step fails with both reasons
    model = build_model(mechanism([floor(), body("box", {"type": "box", "size": [0.1, 0.1, 0.1]},
                                                 position=(0, 0, 0.0501), angular=(30, 0, 0))]))
    st = initial_state(model)
    _newton_fails(monkeypatch)
    res = step(model, st, H)
    assert not res.converged and res.state is st and res.method == ""
    deepest = float(res.reason.rsplit("its end overlaps by ", 1)[1].split(" m)")[0])
    # (millimetres, the first-order error of its geometry: the leading edge swings 12 mm below the face's plane, and
    # the relaxation lifts the sliding cube part of the way)
    assert deepest > 1e-3


def test_the_relaxed_step_solves_again_with_the_pairs_its_impulses_bring_into_range(monkeypatch):
    # ball b (radius R) flies at 5 m/s along 45 degrees into ball a, which rests on the floor 8 mm from ball c.  At
    # rest a-c's broad-phase margin is 2 h (0 + h g) + 1 mm + 0.02 R = 4.96 mm (kernels.broad_bounds), so the pair is
    # not a candidate; the impact drives a sideways at metres a second, through those 8 mm within the step.  The
    # relaxed step's end brings a and c into range: it is solved again with that pair, and ends with a and c apart
    # (every Newton attempt made to fail, as in test_a_step_that_every_newton_attempt_fails...)
    gap, d = 0.008, 2 * R + 1e-4
    s = np.sqrt(0.5)
    model = build_model(mechanism([
        floor(), body("a", {"type": "sphere", "radius": R}, position=(0, 0, R)),
        body("c", {"type": "sphere", "radius": R}, position=(2 * R + gap, 0, R)),
        body("b", {"type": "sphere", "radius": R}, position=(-d * s, 0, R + d * s), linear=(5 * s, 0, -5 * s))],
        mu=0.3))
    st = initial_state(model)
    ac = next(ip for ip, (a, b, _mu) in enumerate(model.pairs) if {model.names[a], model.names[b]} == {"a", "c"})
    _newton_fails(monkeypatch)
    res = step(model, st, H)
    assert res.converged and res.method == "relaxed"
    pa, pc = res.state.p[model.names.index("a")], res.state.p[model.names.index("c")]
    assert pa[0] > gap  # (a went further than the gap: c was in its way)
    assert np.linalg.norm(pa - pc) - 2 * R >= -stp._DEPTH_LIMIT  # the centre distance less the radii
    (c_ac,) = [c for c in res.contacts if c.pair == ac]
    assert c_ac.pn > 0  # a pushed c
