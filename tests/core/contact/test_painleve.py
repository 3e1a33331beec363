"""A cube sliding on a face with friction beyond Painlevé's bound (user test s56, S1): it trips over its front edge.

A cube of half-size a on a floor, sliding along x at v, friction mu.  Standing on its front edge r = (a, 0, -a) from
the centre of mass, a normal force N there (friction -mu N along x) accelerates the edge along the normal by
N (1/m - a (mu a - a) / I_y), I_y = 2/3 m a^2: negative once mu > 5/3 (Painlevé's paradox), so rigid bodies with
Coulomb friction have no sliding motion there, and the edge sticks at once, an impulse that trips the cube over it
(derived in the first test).  The step's attempts from the resting face never found that impulse (every depth of
halving failed, and the run stopped at t = 0); the step's relaxed problem over the face's vertices predicts it
(stepper._patch_predictor)."""

from __future__ import annotations

import numpy as np
import pytest

from contact_scenes import G, body, check_invariants, floor, mechanism, run

A = 0.05  # the cube's half-size (a 0.1 m cube)
CUBE = {"type": "box", "size": [2 * A, 2 * A, 2 * A]}


def sliding_cube(mu, v):
    return mechanism([floor(), body("cube", CUBE, position=(0, 0, A), linear=(v, 0, 0))], mu=mu)


@pytest.mark.parametrize("mu", [2.0, 3.0])
def test_a_cube_sliding_beyond_the_bound_trips_over_its_front_edge_as_the_sticking_impulse_says(mu):
    from core.contact import build_model, initial_state, step

    v, h = 3.0, 1e-4
    # the sticking impulse at the edge (gravity's impulse m g h is 3e-4 of it at this h): angular momentum about the
    # edge, m v a (the centre of mass a above it, moving at v), equals (I_y + m |r|^2) w = (2/3 + 2) m a^2 w, so
    # w = 3 v / (8 a); the centre of mass then moves at w x (-a, 0, a) = (w a, 0, w a) = (3/8 v, 0, 3/8 v) about the
    # edge.  Impulses: tangential m (3/8 v - v) = -5/8 m v, normal 3/8 m v (+ m g h): a ratio just below 5/3, inside
    # the cone at mu 2 and 3 (sticking is consistent)
    w_ref = 3.0 * v / (8.0 * A)  # 22.5 rad/s
    vc_ref = 3.0 / 8.0 * v
    assert 5.0 / 8.0 / (3.0 / 8.0) < mu
    model = build_model(sliding_cube(mu, v))
    r = step(model, initial_state(model), h)
    assert r.converged and r.halvings == 0 and r.method == "implicit", r.reason
    i = model.names.index("cube")
    # (the step's rotation, h w = 2e-3 rad, makes the end-of-step edge differ from the instant's at order h w)
    assert r.state.w[i] == pytest.approx([0.0, w_ref, 0.0], rel=5e-3, abs=1e-6)
    assert r.state.v[i] == pytest.approx([vc_ref, 0.0, vc_ref], rel=5e-3, abs=1e-6)
    (c,) = r.contacts
    assert c.pn == pytest.approx(3.0 / 8.0 * v + G * h, rel=5e-3)  # (m = 1 kg)


@pytest.mark.parametrize("mu", [2.0, 3.0])
@pytest.mark.parametrize("v", [1.0, 2.0, 4.0])
def test_runs_of_a_cube_sliding_beyond_the_bound_complete_losing_energy(mu, v):
    # every one of these stopped at t = 0 before (0.01 s steps, 0.3 s)
    model, rec = run(sliding_cube(mu, v), 0.3)
    assert rec.completed, rec.reason
    assert not rec.fallback.any()
    check_invariants(model, rec, energy=False)
    i = rec.body_names.index("cube")
    assert rec.angular[1, i, 1] > 0.5 * 3.0 * v / (8.0 * A)  # it tipped forward in the first step
    # the trip is an inelastic impulse: the energy falls in the first step (later tumbling impacts on an edge are the
    # pivot's first-order error, docs/contact.md, hence energy=False above)
    m = 1.0
    I_c = m * (2 * A) ** 2 / 6.0
    E = 0.5 * m * np.sum(rec.velocity[:, i] ** 2, axis=1) + 0.5 * I_c * np.sum(rec.angular[:, i] ** 2, axis=1) \
        + m * G * rec.position[:, i, 2]
    assert E[1] < E[0]


@pytest.mark.parametrize("mu", [2.0, 3.0])
def test_an_upright_cylinder_sliding_beyond_its_bound_trips_over_its_rim(mu):
    # a cylinder of radius r and length 2 b = 2 r (bound 19/12 < mu): the same sticking impulse at the rim's front
    # point (r, 0, -b): m v b = (I_y + m (r^2 + b^2)) w, I_y = m (3 r^2 + 4 b^2) / 12; the centre then moves at
    # w x (-r, 0, b) = (w b, 0, w r)
    from core.contact import build_model, initial_state, step

    r_, b_, v, h = 0.05, 0.05, 3.0, 1e-4
    I_y = (3 * r_**2 + 4 * b_**2) / 12.0  # (m = 1 kg)
    w_ref = v * b_ / (I_y + r_**2 + b_**2)  # 23.23 rad/s
    assert 1.0 / 1.0 - r_ * (mu * b_ - r_) / I_y < 0.0  # beyond the bound
    model = build_model(mechanism([floor(), body("cyl", {"type": "cylinder", "radius": r_, "length": 2 * b_},
                                                 position=(0, 0, b_), linear=(v, 0, 0))], mu=mu))
    res = step(model, initial_state(model), h)
    assert res.converged and res.halvings == 0 and res.method == "implicit", res.reason
    i = model.names.index("cyl")
    assert res.state.w[i] == pytest.approx([0.0, w_ref, 0.0], rel=5e-3, abs=1e-6)
    assert res.state.v[i] == pytest.approx([w_ref * b_, 0.0, w_ref * r_], rel=5e-3, abs=1e-6)


@pytest.mark.parametrize("mu", [2.0, 3.0])
def test_a_cube_landing_flat_while_sliding_beyond_the_bound_trips_as_the_sticking_impulse_says(mu):
    # the face 1e-7 m above the floor, falling at vz: it lands within the step, and its front edge sticks at once.
    # Angular momentum about the edge r = (a, 0, -a): m (a vx - (-a) vz) = m a (vx + vz) (vz < 0) before, (8/3) m a^2
    # w after, so w = 3 (vx + vz) / (8 a) (11.25 rad/s here); the centre then moves at (w a, 0, w a).  Impulses:
    # tangential m (w a - vx), normal m (w a - vz) (+ m g h): a ratio of 1.35, inside the cone at mu 2 and 3.  (The
    # step closes the 1e-7 m gap over h: the edge ends moving at -1e-3 m/s, and gravity adds g h = 1e-3 m/s: both
    # within the tolerance below)
    from core.contact import build_model, initial_state, step

    vx, vz, d, h = 2.0, -0.5, 1e-7, 1e-4
    w_ref = 3.0 * (vx + vz) / (8.0 * A)
    assert abs(w_ref * A - vx) / (w_ref * A - vz) < mu
    model = build_model(mechanism([floor(), body("cube", CUBE, position=(0, 0, A + d), linear=(vx, 0, vz))], mu=mu))
    r = step(model, initial_state(model), h)
    assert r.converged and r.halvings == 0 and r.method == "implicit", r.reason
    i = model.names.index("cube")
    assert r.state.w[i] == pytest.approx([0.0, w_ref, 0.0], rel=5e-3, abs=1e-6)
    assert r.state.v[i] == pytest.approx([w_ref * A, 0.0, w_ref * A], rel=5e-3, abs=1e-6)


@pytest.mark.parametrize("shape, mu, v, drop", [
    (CUBE, 2.0, 4.0, 5e-4), (CUBE, 3.0, 2.0, 5e-4),
    ({"type": "cylinder", "radius": A, "length": 2 * A}, 2.0, 4.0, 3e-3),
    ({"type": "cylinder", "radius": A, "length": 2 * A}, 3.0, 0.5, 5e-4),
    ({"type": "cylinder", "radius": A, "length": 2 * A}, 3.0, 4.0, 2e-2),
    ({"type": "cylinder", "radius": A, "length": 2 * A}, 2.0, 4.0, 2e-2)])
def test_runs_of_a_box_or_cylinder_landing_flat_while_sliding_beyond_the_bound_complete(shape, mu, v, drop):
    # dropped flat from `drop` above the floor while sliding at v: the face lands, trips over its front edge and lands
    # back on a face while it turns (each stopped its run at one of these landings before).  The last: tripped at 38
    # rad/s, the cylinder lands back on its rim in a step made in two sub-steps (a body spinning in contact), whose
    # patch test looked only at the sub-step's own motion: no predictor, every attempt failed at every depth and the
    # explicit method's step took it (1,554 Newton iterations); the test looks at the whole step's motion now
    mech = mechanism([floor(), body("b", shape, position=(0, 0, A + drop), linear=(v, 0, 0))], mu=mu)
    model, rec = run(mech, 0.4)
    assert rec.completed, rec.reason
    assert not rec.fallback.any()
    assert np.max(rec.iterations) <= 200  # (the dearest step: 12 or less, 50 where it lands back; 1,554 before)
    check_invariants(model, rec, energy=False)
    i = rec.body_names.index("b")
    assert np.max(rec.angular[:, i, 1]) > 1.0  # it tipped forward


@pytest.mark.parametrize("slab_first", [True, False])
def test_a_cube_landing_flat_on_a_loose_slab_while_sliding_beyond_the_bound_trips_as_on_the_floor(slab_first):
    # the face lands on a 5 kg slab resting on the floor (mu 3 everywhere), within the step: the slab is held by the
    # floor (its friction impulse there can reach mu (3/8 m v + ...) > the 5/8 m v the cube's edge puts on it), so the
    # cube trips over its front edge as on the floor, w = 3 (vx + vz) / (8 a) (the landing test above).  The corners
    # that land are the cube's on the slab's face whichever body the document lists first (user test s57, S2)
    from core.contact import build_model, initial_state, step

    mu, vx, vz, d, h = 3.0, 2.0, -0.5, 1e-7, 1e-4
    t = 0.02  # the slab's thickness
    slab = body("slab", {"type": "box", "size": [0.6, 0.4, t]}, mass=5.0, position=(0, 0, t / 2))
    cube = body("cube", CUBE, position=(0, 0, t + A + d), linear=(vx, 0, vz))
    model = build_model(mechanism([floor()] + ([slab, cube] if slab_first else [cube, slab]), mu=mu))
    r = step(model, initial_state(model), h)
    assert r.converged and r.halvings == 0 and r.method == "implicit", r.reason
    w_ref = 3.0 * (vx + vz) / (8.0 * A)
    i, j = model.names.index("cube"), model.names.index("slab")
    assert r.state.w[i] == pytest.approx([0.0, w_ref, 0.0], rel=5e-3, abs=1e-6)
    assert r.state.v[i] == pytest.approx([w_ref * A, 0.0, w_ref * A], rel=5e-3, abs=1e-6)
    assert np.linalg.norm(r.state.v[j]) < 1e-9  # (the slab held)


def test_a_squat_cylinder_landing_tilted_while_it_slides_below_its_bound_lands_flat_and_slides():
    # r = 0.1, length 2 b = 0.07, tilted 0.75 degrees onto its front rim point, 0.5 mm up, sliding at 3.2 m/s, mu 2.4:
    # below its bound (at the front rim point r (mu b - r) < 0, so a normal force there only lifts it: no trip; the
    # relaxed problem's loaded points all slide, and it would make them glide up at mu |u_t|).  Once flat on its face
    # it slides with friction mu m g: vx falls by mu g h a step, no turn.  (Outside regression hunt s57, paint 2032:
    # the patch predictor started the landing steps from the relaxed solution, its slide nearly stopped and the face
    # turned flat; every first attempt failed, 72-81 Newton iterations a step against 2-7 from the explicit predictor:
    # the steps still take two attempts each, a cost docs/notes/contact-solver.md records, not asserted here)
    from core.contact import build_model, initial_state, step

    r_, b_, mu, v, h, tilt, drop = 0.1, 0.035, 2.4, 3.2, 0.01, np.radians(0.75), 5e-4
    assert r_ * (mu * b_ - r_) < 0.0
    low = b_ * np.cos(tilt) + r_ * np.sin(tilt)  # the centre's height over the front rim point
    q = (np.cos(tilt / 2), 0.0, np.sin(tilt / 2), 0.0)  # (about +y: the front rim point, +x, is the lowest)
    model = build_model(mechanism([floor(), body("cyl", {"type": "cylinder", "radius": r_, "length": 2 * b_},
                                                 position=(0, 0, low + drop), orientation=q, linear=(v, 0, 0))],
                                  mu=mu))
    state, i = initial_state(model), model.names.index("cyl")
    vx = []
    for k in range(7):
        res = step(model, state, h)
        assert res.converged and res.halvings == 0 and res.method == "implicit", res.reason
        state = res.state
        vx.append(state.v[i, 0])
    # flat on its face from the fifth step on: Coulomb's sliding friction, no turn, no trip
    assert np.diff(vx[4:]) == pytest.approx([-mu * G * h] * 2, rel=1e-6)
    assert np.linalg.norm(state.w[i]) < 1e-6
    assert abs(state.v[i, 2]) < 1e-6
