"""Many simultaneous frictional contacts: spheres settling in a box (floor and four walls are half-spaces).

Every step of the run must converge (scaled natural residual <= 1e-10) and pass check_invariants: gap >= -1e-9,
p_n gap <= 1e-9, impulses inside the friction cone, friction opposing slip, energy never increasing, no NaN.
"""

import numpy as np

from contact_scenes import G, body, check_invariants, floor, mechanism, run

R, M, HALF = 0.05, 0.1, 0.13  # sphere radius (m), mass (kg), half-width of the box (m)


def _walls():
    return [floor()] + [{"name": f"wall{i}", "ground": True,
                         "shape": {"type": "halfspace", "normal": n, "offset": -HALF}}
                        for i, n in enumerate(([-1, 0, 0], [1, 0, 0], [0, -1, 0], [0, 1, 0]))]


def _pile(n_side=2, layers=2, seed=0):
    rng = np.random.default_rng(seed)
    balls = []
    for i in range(n_side):
        for j in range(n_side):
            for k in range(layers):
                x = (i - 0.5 * (n_side - 1)) * 0.11 + 0.004 * rng.standard_normal()
                y = (j - 0.5 * (n_side - 1)) * 0.11 + 0.004 * rng.standard_normal()
                balls.append(body(f"s{i}{j}{k}", {"type": "sphere", "radius": R}, mass=M,
                                  position=(x, y, R + 0.01 + 0.115 * k)))
    return mechanism(_walls() + balls, mu=0.4)


def test_eight_spheres_settle_in_a_box_with_every_invariant_at_every_step():
    # to 1 s: earlier versions stopped at the step from 0.53 s to 0.54 s (redundant loaded contacts, whose impulses
    # are not unique; docs/contact.md, The solver: the proximal term and the nonmonotone line search)
    model, rec = run(_pile(), 1.0)
    assert rec.completed, rec.reason
    assert rec.n_frames == 101
    check_invariants(model, rec)
    assert np.all(rec.residual <= 1e-10)
    # the stepper halves a step whose attempts all fail (core.contact.stepper._step_split): a few steps of the 100
    # (one or two here), so the per-solve invariants above are checked on nearly every step
    assert np.count_nonzero(rec.halvings) <= 5
    # tens of pairs were in contact range at once (sphere-sphere and sphere-wall), several of them loaded
    assert rec.active.sum(axis=1).max() >= 20
    assert (rec.pn > 1e-9).sum(axis=1).max() >= 8
    # every sphere stays inside the box (centre at least a radius from the floor and from each wall) and no two
    # spheres interpenetrate (centre distance >= 2 R), up to the overlap the stepper accepts: it bounds every pair's
    # depth by 9e-10 m (first order, from the closest-point rows, _DEPTH_LIMIT). The reported gaps alone did not
    # show it: the closest-point rows were once accepted at 1e-10 (1 + max|z|), 9e-10 m each with a sphere spinning
    # at 8 rad/s, and a halved step ended with a sphere 2.7e-9 m inside a wall while every gap read >= 0
    depth = 9e-10
    p = rec.position
    assert np.all(p[..., 2] >= R - depth)
    assert np.all(np.abs(p[..., 0:2]) <= HALF - R + depth)
    d = np.linalg.norm(p[:, :, None, :] - p[:, None, :, :], axis=-1)
    iu = np.triu_indices(p.shape[1], 1)
    assert np.all(d[:, iu[0], iu[1]] >= 2 * R - depth)
    # momentum balance of the whole pile in every step: the sphere-sphere impulses cancel in pairs, so the change of
    # the total momentum is the impulse of the floor and walls (normal and friction) plus the weight's m g h
    h = 0.01
    ground = [p_ for p_, (a, b, _mu) in enumerate(model.pairs) if not model.dynamic[b]]
    J = np.sum(rec.pn[:, ground, None] * rec.normal[:, ground] + rec.pf[:, ground], axis=1)  # (K, 3) on the spheres
    dP = M * np.diff(rec.velocity, axis=0).sum(axis=1)
    weight = np.array([0.0, 0.0, -len(rec.body_names) * M * G * h])
    np.testing.assert_allclose(dP, J[1:] + weight, atol=1e-9)
    # at the end the pile has landed (no vertical motion; a sphere may still roll): the ground carries its whole
    # weight (the floor's normal impulse with the walls' friction; jammed spheres may hold each other against the
    # walls, so the floor's share alone is not fixed)
    assert np.all(np.abs(rec.velocity[-2:, :, 2]) <= 1e-9)
    assert abs(J[-1, 2] + weight[2]) <= 1e-9
    floor_pairs = [p_ for p_, (a, b, _mu) in enumerate(model.pairs) if model.names[b] == "floor"]
    assert rec.pn[-1, floor_pairs].sum() > 0.5 * -weight[2]


def test_mixed_pile_example_runs_from_the_cli(tmp_path):
    from pathlib import Path

    from core.cli import main as cli_main
    from core.contact import load_npz

    f = Path(__file__).resolve().parents[3] / "resources" / "examples" / "contact_pile.json"
    # the first landings (a sphere on the floor, the pile's first sphere-sphere contacts) happen before 0.25 s
    assert cli_main(["simulate", str(f), "--t-end", "0.25", "--out", str(tmp_path / "r.npz")]) == 0
    rec = load_npz(tmp_path / "r.npz")
    assert rec.completed and rec.n_frames == 26
    assert np.all(rec.gap[rec.active] >= -1e-9)
    assert np.all(rec.residual <= 1e-10)
    assert rec.pn[-1].sum() > 0.0  # something rests on the floor


def test_spheres_falling_side_by_side_give_a_regular_step():
    """Separated bodies with equal velocities (zero relative slip): the friction unknowns of their pair are pinned
    by the phi max(s, 0)/h term, so the step is a regular Newton solve with no impulse between them."""
    from core.contact import build_model, initial_state, step

    mech = mechanism([body("a", {"type": "sphere", "radius": R}, mass=M, position=(0, 0, 1.0)),
                      body("b", {"type": "sphere", "radius": R}, mass=M, position=(2 * R + 0.003, 0, 1.0)),
                      body("c", {"type": "sphere", "radius": R}, mass=M, position=(R + 0.0015, 3 ** 0.5 * R + 0.003, 1.0))], mu=0.4)
    model = build_model(mech)
    st = initial_state(model)
    res = step(model, st, 0.01)
    assert res.converged and len(res.contacts) == 3
    # free fall: v = -g h for all three, no contact impulse, no spin
    np.testing.assert_allclose(res.state.v[:, 2], -G * 0.01, rtol=1e-12)
    assert all(c.pn == 0.0 and np.all(c.pf == 0.0) for c in res.contacts)
    assert np.max(np.abs(res.state.w)) == 0.0
    assert res.iterations <= 10  # a handful of Newton steps, not a stalled or regularised solve



def test_a_jammed_27_sphere_step_at_mu_0_8_is_solved_by_the_implicit_method():
    # bench/hard_states: the state before step 56 of a 27-sphere pile at mu 0.8 (seed 1572069541), whose attempts
    # once stalled at 1e-5 to 1e-4 at every depth of halving (two loaded pairs at the rims of their friction discs
    # trading their normal impulses back and forth at every Newton step), so that the explicit method took the step.
    # With the proximal weight grown on such a zigzag (NewtonOptions.zigzag_cos) the implicit step converges, and
    # its contacts keep every guarantee
    from pathlib import Path

    from bench.hard_states import load_state
    from bench.scenes import load
    from core.contact import build_model, step

    state, meta = load_state(Path(__file__).resolve().parents[3] / "bench" / "hard_states"
                             / "pile27-mu0.8_s1572069541_implicit_k056.npz")
    model = build_model(load(meta["document"]))
    r = step(model, state, meta["h"], "implicit")
    assert r.converged and r.method == "implicit", r.reason
    assert r.residual <= 1e-10
    assert len(r.contacts) > 60
    for c in r.contacts:
        assert c.gap >= -1e-9 and c.pn >= 0.0
        assert c.pn * max(c.gap, 0.0) <= 1e-9
        assert np.linalg.norm(c.pf) <= c.mu * c.pn * (1 + 1e-7) + 1e-15
