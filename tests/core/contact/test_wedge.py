"""A polytope wedge on a frictionless floor: at rest alone, and a block sliding down it while it recoils (user test
P2 and P3): closed forms, and the step that once carried the block through the wedge."""

import math

import numpy as np
import pytest

from contact_scenes import G, body, check_invariants, floor, mechanism, run, total_energy

THETA = math.radians(30.0)  # the wedge's slope
M_WEDGE, M_BLOCK = 3.0, 1.0
LENGTH, WIDTH = 1.0, 0.5  # the wedge's base along x and its width along y; its height is LENGTH tan(THETA)
CUBE = 0.1  # the block's edge


def wedge_vertices(origin="centroid"):
    """The prism's six vertices: the base [0, LENGTH] x [-WIDTH/2, WIDTH/2] at z = 0, the slope rising towards -x to
    the height H at x = 0; in a frame at the middle of the base's back edge ("corner", as the user's scene) or at the
    centroid (the triangle's centroid (LENGTH/3, H/3) in x-z); and where that frame is in the world."""
    H = LENGTH * math.tan(THETA)
    v = np.array([[0, -WIDTH / 2, 0], [0, WIDTH / 2, 0], [LENGTH, -WIDTH / 2, 0], [LENGTH, WIDTH / 2, 0],
                  [0, -WIDTH / 2, H], [0, WIDTH / 2, H]], float)
    shift = np.array([LENGTH / 3, 0.0, H / 3]) if origin == "centroid" else np.zeros(3)
    return v - shift, shift  # (vertices in the body frame, the frame's origin in the world at rest on the floor)


def wedge_body(origin="centroid", mass=M_WEDGE):
    verts, at = wedge_vertices(origin)
    return body("wedge", {"type": "polytope", "vertices": verts.tolist()}, mass=mass, position=tuple(at))


def block_on_slope(s=0.4):
    """The cube resting face to face on the slope: turned by THETA about y (its bottom face along the slope), its
    centre CUBE/2 above the slope's point at x = s (the slope is z = (LENGTH - x) tan THETA)."""
    normal = np.array([math.sin(THETA), 0.0, math.cos(THETA)])  # the slope's outward normal
    on_slope = np.array([s, 0.0, (LENGTH - s) * math.tan(THETA)])
    centre = on_slope + CUBE / 2 * normal
    q = (math.cos(THETA / 2), 0.0, math.sin(THETA / 2), 0.0)
    return body("block", {"type": "box", "size": [CUBE] * 3}, mass=M_BLOCK, position=tuple(centre), orientation=q)


def pair_index(model, a, b):
    return next(i for i, (i_a, i_b, _mu) in enumerate(model.pairs) if {model.names[i_a], model.names[i_b]} == {a, b})


@pytest.mark.parametrize("h,t_end", [(0.001, 0.1), (0.01, 0.3)])
@pytest.mark.parametrize("block_first", [False, True])
def test_a_block_slides_down_a_free_frictionless_wedge_as_the_closed_form_says(h, t_end, block_first):
    """The classic movable wedge (mass M, slope theta, on a frictionless floor) with a block (mass m) on its
    frictionless slope.  Unknowns: the wedge's acceleration A (along -x: the block pushes it back), the block's
    acceleration a relative to the wedge (down the slope, (cos, 0, -sin)) and the normal force N.
      block, along the slope normal n = (sin, 0, cos), in the wedge's (accelerating) frame:
          N - m g cos + m A sin = 0         (the frame's force -m (-A, 0, 0) has the component m A sin along n)
      block, along the slope:  m a = m g sin + m A cos
      wedge, horizontally:     M A = N sin
    so N = m (g cos - A sin), M A = m sin (g cos - A sin), A = m g sin cos / (M + m sin^2), and
    a = g sin + A cos = g sin (M + m sin^2 + m cos^2) / (M + m sin^2) = (M + m) g sin / D,  N = M m g cos / D,
    D = M + m sin^2.  Here M = 3 kg, m = 1 kg, theta = 30 degrees: A = 1.30703 m/s^2, a = 6.03692 m/s^2,
    N = 7.84219 N.  The step's forces are constant, so after k steps the velocities are k h times the accelerations
    exactly (to the solver's tolerance), and the normal impulse of every step is N h.  (At h = 0.001 the first step
    of this scene was once made in halves, one of which carried the block through the wedge at 32 km/s, and the run
    ended 'completed' with 1.1e9 J gained; the order of the bodies changed only how much.)"""
    s, c = math.sin(THETA), math.cos(THETA)
    D = M_WEDGE + M_BLOCK * s * s
    A = M_BLOCK * G * s * c / D
    a_rel = (M_WEDGE + M_BLOCK) * G * s / D
    N = M_WEDGE * M_BLOCK * G * c / D
    assert (A, a_rel, N) == pytest.approx((1.30703, 6.03692, 7.84219), abs=5e-6)
    bodies = [wedge_body(), block_on_slope()]
    if block_first:
        bodies.reverse()
    model, rec = run(mechanism([floor()] + bodies, mu=0.0), t_end, dt=h)
    assert rec.completed, rec.reason
    assert not rec.fallback.any() and not rec.halvings.any()
    check_invariants(model, rec)
    iw, ib = rec.body_names.index("wedge"), rec.body_names.index("block")
    t = rec.t[:, None]
    np.testing.assert_allclose(rec.velocity[:, iw], t * [-A, 0.0, 0.0], rtol=0, atol=1e-9)
    down = np.array([c, 0.0, -s])  # down the slope
    np.testing.assert_allclose(rec.velocity[:, ib] - rec.velocity[:, iw], t * a_rel * down, rtol=0, atol=1e-9)
    assert np.max(np.abs(rec.angular)) < 1e-9
    k = pair_index(model, "wedge", "block")
    np.testing.assert_allclose(rec.pn[1:, k] / h, N, rtol=1e-8)
    # vertically the wedge is in equilibrium: the floor carries its weight and the block's push N cos theta
    np.testing.assert_allclose(rec.pn[1:, pair_index(model, "wedge", "floor")] / h, M_WEDGE * G + N * c, rtol=1e-8)
    # horizontal momentum stays 0; energy only falls (the scheme's first-order loss, h^2 a . F / 2 a step)
    px = M_WEDGE * rec.velocity[:, iw, 0] + M_BLOCK * rec.velocity[:, ib, 0]
    assert np.max(np.abs(px)) < 1e-9
    E = total_energy(model, rec)
    assert E[-1] <= E[0] + 1e-9


@pytest.mark.parametrize("origin", ["corner", "centroid"])
@pytest.mark.parametrize("h", [0.001, 0.002, 0.01])
@pytest.mark.parametrize("mu", [0.0, 0.5])
def test_a_wedge_rests_on_a_frictionless_floor_whatever_its_frame(origin, h, mu):
    """The wedge alone, at rest on the floor, its body frame at a corner of its base or at its centroid: it stays at
    rest, and the floor's normal impulse is its weight times h at every step (a body at rest: the floor's force
    balances gravity, M g = 29.43 N, and its moment about the centre of mass is zero, so the contact point is under
    the centroid).  It once stopped at t = 0 at h = 0.001 and 0.002 s with its frame at the corner ('step did not
    converge even when halved ... the explicit method's step overlaps by 1.85e-05 m'): the explicit predictor of
    the new pair, with one linearised contact point at a corner of the resting face, tipped it, and every implicit
    attempt started there stalled.  The frame was not the cause: at the centroid the same step stalled too and
    happened to converge after 7 halvings (823 Newton iterations)."""
    model, rec = run(mechanism([floor(), wedge_body(origin)], mu=mu), 20 * h, dt=h)
    assert rec.completed, rec.reason
    assert not rec.fallback.any() and not rec.halvings.any()
    assert np.max(rec.iterations) <= 20
    check_invariants(model, rec)
    assert np.max(np.abs(rec.velocity)) < 1e-12 and np.max(np.abs(rec.angular)) < 1e-12
    np.testing.assert_allclose(rec.pn[1:, 0] / h, M_WEDGE * G, rtol=1e-9)
    # the contact point is under the centroid (x = LENGTH / 3 in the world, the base's middle in y)
    np.testing.assert_allclose(rec.point_a[1:, 0, :2], np.tile([LENGTH / 3, 0.0], (rec.n_frames - 1, 1)), atol=1e-8)


def test_a_block_1mm_above_the_free_wedge_lands_on_it():
    """The block 1 mm above the slope of the free wedge resting on the floor (h = 0.001): it once stopped at t = 0
    (the wedge's starting closest point was a corner of its resting base, three faces active and two of their
    multipliers zero, and every attempt stalled at 1.2e-6 at every depth); it falls, lands and slides as above."""
    blk = block_on_slope()
    n = np.array([math.sin(THETA), 0.0, math.cos(THETA)])
    blk["pose"]["position"] = list(np.array(blk["pose"]["position"]) + 1e-3 * n)
    model, rec = run(mechanism([floor(), wedge_body(), blk], mu=0.0), 0.1, dt=0.001)
    assert rec.completed, rec.reason
    assert not rec.fallback.any()
    check_invariants(model, rec)
    iw = rec.body_names.index("wedge")
    assert np.max(np.abs(rec.velocity[:, iw])) < 0.2  # (0.13 m/s after landing: A = 1.307 m/s^2 for 0.1 s at most)
    k = pair_index(model, "wedge", "block")
    assert rec.active[-1, k] and rec.gap[-1, k] < 1e-9


def test_a_step_that_carries_a_body_through_another_is_refused(monkeypatch):
    """stepper._passed_through.  The user's step, reproduced: the block on the free wedge at rest, a step of h/128 =
    7.8e-6 s from the start the old path took (the explicit predictor's tipped start, the support map's corner of the
    resting base) converges in 76 Newton iterations to a solution whose geometry is exact (the pair touches at its
    end, no overlap) but whose block moves at 32 km/s: it ends touching a face of the wedge behind which it started
    0.62 m deep.  That step is now a failure with its reason, not a step; and the test does not refuse the ordinary
    step of the same scene."""
    from core.contact import build_model, closest, stepper
    from core.contact.bodies import initial_state
    from core.contact.plan import Workspace

    model = build_model(mechanism([floor(), wedge_body(), block_on_slope()], mu=0.0))
    st = initial_state(model)
    with monkeypatch.context() as mp:
        # the old start: the predictor whatever the new pairs' start, the support map's corner as the base's point
        mp.setattr(stepper, "_patches", lambda *_a: ({}, set()))
        mp.setattr(closest, "_deepest_face_point", lambda shape, d: np.asarray(shape.support(d), float))
        r = stepper._step_once(model, st, 0.001 / 128, "implicit", 1e-10, 60, ws=Workspace(), form="ac", restarts=1)
    assert not r.converged and r.reason.startswith(stepper._PASSED), r.reason
    assert "'wedge' and 'block'" in r.reason and "(0.616 m deep)" in r.reason
    r = stepper.step(model, st, 0.001)
    assert r.converged and r.halvings == 0 and np.max(np.abs(r.state.v)) < 0.01


def test_passed_through_reads_the_start_along_the_end_normal():
    """_passed_through directly: the block resting on the slope at the start, and a contact at the end whose normal
    says the block touches the wedge from below its slope (the slope's normal reversed): along that normal the block
    lay wholly beyond the wedge's face at the start, so a step ending so is refused; with the slope's own normal (the
    ordinary contact) it is not, nor without a normal impulse."""
    from core.contact import build_model
    from core.contact.bodies import initial_state
    from core.contact.stepper import ContactResult, _PASSED, _passed_through, _rot

    model = build_model(mechanism([floor(), wedge_body(), block_on_slope()], mu=0.0))
    st = initial_state(model)
    k = pair_index(model, "wedge", "block")
    a = model.pairs[k][0]
    slope = np.array([math.sin(THETA), 0.0, math.cos(THETA)])  # the wedge's outward normal at the slope
    n_b = -slope if model.names[a] == "wedge" else slope  # the contact's normal is B's, towards A: the ordinary one
    R0 = _rot(st.q)

    def contact(normal, pn):
        return ContactResult(k, np.zeros(3), np.zeros(3), normal, 0.0, pn, np.zeros(3), 0.0, np.zeros(3), 0.0)

    assert _passed_through(model, st, R0, [contact(n_b, 1e-2)]) is None
    why = _passed_through(model, st, R0, [contact(-n_b, 1e-2)])
    assert why is not None and why.startswith(_PASSED)
    assert _passed_through(model, st, R0, [contact(-n_b, 0.0)]) is None
    # given the step's end: a pair that travelled less than it takes to pass through is not tested, one that
    # travelled across the block is
    end = st.copy()
    assert _passed_through(model, st, R0, [contact(-n_b, 1e-2)], end) is None
    end.p[model.names.index("block")] += 0.2 * slope
    why = _passed_through(model, st, R0, [contact(-n_b, 1e-2)], end)
    assert why is not None and why.startswith(_PASSED)
