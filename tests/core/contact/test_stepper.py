"""Analytic Jacobians vs finite differences, closest points, failure handling, recording and the CLI."""

import csv
import io as _io
import json
import math
from pathlib import Path

import numpy as np
import pytest

from contact_scenes import G, body, check_invariants, floor, mechanism
from core.cli import main as cli_main
from core.contact import build_model, initial_state, load_npz, simulate, step
from core.contact import recording as recording_mod
from core.contact.mcp import MCPResult
from core.contact.pair import contact_frame_aux, eval_pair, pair_layout, tangent_frame
from core.contact.closest import _multipliers, closest_points
from core.errors import LinkwrightError
from core.shapes import parse_shape
from core.transforms import quat_to_matrix


@pytest.mark.parametrize("a,b,dyn_b", [
    ({"type": "ellipsoid", "radii": [0.3, 0.2, 0.1]}, {"type": "sphere", "radius": 0.2}, True),
    ({"type": "box", "size": [0.3, 0.2, 0.1]}, {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}, False),
    ({"type": "box", "size": [0.3, 0.2, 0.1]}, {"type": "ellipsoid", "radii": [0.3, 0.2, 0.1]}, True),
    ({"type": "cylinder", "radius": 0.1, "length": 0.3}, {"type": "box", "size": [1, 1, 1]}, True),
])
@pytest.mark.parametrize("e_r", [0.0, 0.05])
def test_pair_jacobian_matches_finite_differences(a, b, dyn_b, e_r):
    rng = np.random.default_rng(3)
    sa, sb = parse_shape(a, "a"), parse_shape(b, "b")
    lay = pair_layout(sa.m, sb.m, 0.4, e_r)
    RA0, RB0 = quat_to_matrix(rng.standard_normal(4)), quat_to_matrix(rng.standard_normal(4))
    pA0, pB0 = rng.standard_normal(3), rng.standard_normal(3)
    cA, cB = 0.1 * rng.standard_normal(3), 0.1 * rng.standard_normal(3)
    x = np.concatenate((rng.standard_normal(3), 20 * rng.standard_normal(3), rng.standard_normal(3),
                        20 * rng.standard_normal(3), rng.standard_normal(6), rng.random(lay.size - 6)))

    def f(xx):
        return eval_pair(lay, 0.01, 0.4, (1.0, 0.7, e_r), 1.3, np.array([0, 0, 1.0]), sa, pA0, RA0, cA, xx[0:3],
                         xx[3:6], sb, pB0, RB0, cB, xx[6:9], xx[9:12], dyn_b, xx[12:])

    r, J, WA, JWA, WB, JWB = f(x)
    eps = 1e-6
    cols = range(x.size) if dyn_b else [i for i in range(x.size) if not 6 <= i < 12]
    for i in cols:
        e = np.zeros_like(x)
        e[i] = eps
        p, m = f(x + e), f(x - e)
        np.testing.assert_allclose(J[:, i], (p[0] - m[0]) / (2 * eps), atol=2e-6, rtol=1e-5)
        np.testing.assert_allclose(JWA[:, i], (p[2] - m[2]) / (2 * eps), atol=2e-6, rtol=1e-5)
        if dyn_b:
            np.testing.assert_allclose(JWB[:, i], (p[4] - m[4]) / (2 * eps), atol=2e-6, rtol=1e-5)


@pytest.mark.parametrize("e_r", [0.0, 0.05])
def test_two_bodies_moving_as_one_do_not_slip_and_a_fixed_body_measures_the_velocity_at_the_contact(e_r):
    # the friction rows are mu (e_k v_k) (phi = 0): v_k the slip of A relative to B's motion over the step
    from core.contact.bodies import cayley
    rng = np.random.default_rng(7)
    h, mu = 0.01, 0.4
    sa = parse_shape({"type": "box", "size": [0.3, 0.2, 0.1]}, "a")
    sb = parse_shape({"type": "ellipsoid", "radii": [0.3, 0.2, 0.1]}, "b")
    lay = pair_layout(sa.m, sb.m, mu, e_r)
    nf = lay.nf
    RA0, RB0 = quat_to_matrix(rng.standard_normal(4)), quat_to_matrix(rng.standard_normal(4))
    pA0, pB0 = rng.standard_normal(3), rng.standard_normal(3)
    cA, cB = np.zeros(3), np.zeros(3)
    e_aux = np.array([0, 0, 1.0])

    def slip(vA, wA, vB, wB, dyn_b, point):
        z = np.zeros(lay.size)
        z[lay.a1:lay.a1 + 3] = z[lay.a2:lay.a2 + 3] = point  # the contact: a1 = a2
        z[lay.lam:lay.s] = 0.5  # any multipliers: a normal n_B to measure along
        z[lay.pn] = 1.0
        r = eval_pair(lay, h, mu, (1.0, 0.7, e_r), 1.3, e_aux, sa, pA0, RA0, cA, vA, wA, sb, pB0, RB0, cB, vB, wB,
                      dyn_b, z)[0]
        return r[lay.pf:lay.pf + nf] / mu

    for _ in range(5):
        # A and B as one rigid body turning at w (up to 30 rad/s): the step moves B by p+ = p + h v,
        # R+ = cayley(h w / 2) R, so every point x of the pair ends at pB+ + R (x - pB), R = cayley(h w / 2)
        w, vB = 30 * rng.uniform(-1, 1, 3), rng.standard_normal(3)
        R = cayley(0.5 * h * w)
        vA = (pB0 + h * vB + R @ (pA0 - pB0) - pA0) / h  # A's centre carried along
        point = pB0 + h * vB + R @ (0.2 * rng.standard_normal(3))
        np.testing.assert_allclose(slip(vA, w, vB, w, True, point), 0.0, atol=1e-12)
        # measured with the velocity field of B at the end of the step (v_B + w x (x - pB+)) it would slip by
        # about h |w|^2 |pA - pB| / 2 (here ~ 1e-2 m/s): the rows are not that
        vA_field = vB + np.cross(w, pA0 + h * vA - (pB0 + h * vB))
        assert np.abs(vA_field - vA).max() > 1e-3
        # against a fixed B: A's velocity at its contact point, v_A + w_A x (a1 - pA+), along the tangent frame
        wA, vA = 30 * rng.uniform(-1, 1, 3), rng.standard_normal(3)
        nB = RB0 @ (sb.gradients(RB0.T @ (point - pB0)).T @ np.full(sb.m, 0.5))
        t, o = tangent_frame(nB, e_aux)
        u = vA + np.cross(wA, point - (pA0 + h * vA))
        expect = [t @ u, 0.7 * (o @ u)] + ([e_r * (nB @ wA)] if nf == 3 else [])
        np.testing.assert_allclose(slip(vA, wA, np.zeros(3), np.zeros(3), False, point), expect, rtol=1e-12,
                                   atol=1e-12)


def test_closest_points_ellipsoid_over_plane_match_the_support_formula():
    radii = np.array([0.2, 0.1, 0.05])
    q = np.array([0.9, 0.3, -0.2, 0.25])
    q /= np.linalg.norm(q)
    mech = mechanism([floor(), body("e", {"type": "ellipsoid", "radii": list(radii)}, position=(0.1, 0.2, 0.5),
                                    orientation=tuple(q))])
    model = build_model(mech)
    st = initial_state(model)
    z, res = closest_points(model, st, 0)
    assert res.converged
    R = quat_to_matrix(q)
    # lowest point of the ellipsoid: x = c - R A^2 R^T e_z / sqrt(e_z^T R A^2 R^T e_z), distance c_z - sqrt(...)
    M = R @ np.diag(radii**2) @ R.T
    c = st.p[1]  # body 0 of the model is the floor
    low = c - M[:, 2] / math.sqrt(M[2, 2])
    np.testing.assert_allclose(z[0:3], low, atol=1e-10)
    assert z[8] == pytest.approx(c[2] - math.sqrt(M[2, 2]), abs=1e-10)  # s (after a1, a2, lam, mu) = the distance
    np.testing.assert_allclose(z[3:6], low * [1, 1, 0], atol=1e-10)


def test_closest_points_of_two_spheres_lie_on_the_line_of_centres():
    mech = mechanism([body("a", {"type": "sphere", "radius": 0.1}, position=(0, 0, 0)),
                      body("b", {"type": "sphere", "radius": 0.2}, position=(0.5, 0.4, -0.3))], gravity=(0, 0, 0))
    model = build_model(mech)
    st = initial_state(model)
    z, res = closest_points(model, st, 0)
    assert res.converged
    c = np.array([0.5, 0.4, -0.3])
    u = c / np.linalg.norm(c)
    np.testing.assert_allclose(z[0:3], 0.1 * u, atol=1e-10)
    np.testing.assert_allclose(z[3:6], c - 0.2 * u, atol=1e-10)
    assert z[8] == pytest.approx(np.linalg.norm(c) - 0.3, abs=1e-10)
    # the start of the query is these points in closed form (a cold step starts every sphere pair there): the
    # KKT rows hold there already, so Newton makes no iteration
    assert res.iterations == 0


@pytest.mark.parametrize("kind", ["sphere", "plane"])
def test_closest_points_of_overlapping_spheres_and_of_a_sphere_in_a_plane_in_closed_form(kind):
    # a 0.1 m sphere 0.03 m into another one (centres 0.27 m apart, radii 0.1 and 0.2) or into the floor (centre at
    # z = 0.07): the closest points are the deepest points along the centre line (the plane's normal), s = -0.03 (not
    # the far sides' solution), with no Newton iteration from the closed-form start
    other = (body("b", {"type": "sphere", "radius": 0.2}, position=(0.27 * 0.6, 0.0, 0.27 * 0.8)) if kind == "sphere"
             else floor())
    mech = mechanism([body("a", {"type": "sphere", "radius": 0.1}, position=(0, 0, 0.07 if kind == "plane" else 0)),
                      other], gravity=(0, 0, 0))
    model = build_model(mech)
    st = initial_state(model)
    ip = 0
    z, res = closest_points(model, st, ip)
    assert res.converged and res.iterations == 0
    u = np.array([0.6, 0.0, 0.8]) if kind == "sphere" else np.array([0.0, 0.0, -1.0])  # from A's centre towards B
    a = model.pairs[ip][0]
    np.testing.assert_allclose(z[0:3], st.p[a] + 0.1 * u, atol=1e-15)
    assert z[8] == pytest.approx(-0.03, abs=1e-15)
    np.testing.assert_allclose(z[3:6], z[0:3] - 0.03 * u, atol=1e-15)  # B's point: 0.03 back along the normal


def test_closest_points_of_overlapping_cubes_measure_the_penetration_not_the_far_sides():
    # two 0.1 m cubes turned alike, B 0.09 m above A (and shifted 0.02 m along x): they overlap by 0.1 - 0.09 = 0.01
    # m along z (along x by 0.08). The KKT equations also hold at A's bottom face and B's top face (normal -z,
    # s = -(0.09 + 0.1) = -0.19): from there (the explicit method's warm start once a pair had sunk) Newton stays
    # on that far-side solution unless the query checks an overlap against the expanding polytope's depth
    R = quat_to_matrix(np.array([math.cos(0.2), 0.0, 0.0, math.sin(0.2)]))
    q = (math.cos(0.2), 0.0, 0.0, math.sin(0.2))
    off = R @ np.array([0.02, 0.0, 0.0]) + np.array([0.0, 0.0, 0.09])
    mech = mechanism([body("a", {"type": "box", "size": [0.1, 0.1, 0.1]}, orientation=q),
                      body("b", {"type": "box", "size": [0.1, 0.1, 0.1]}, position=tuple(off), orientation=q)],
                     gravity=(0, 0, 0))
    model = build_model(mech)
    st = initial_state(model)
    lay = pair_layout(6, 6, 0.0, 0.0)
    far = np.zeros(lay.n_geom)
    far[0:3] = np.array([0.0, 0.0, -0.05])  # A's bottom face
    far[3:6] = off + np.array([0.0, 0.0, 0.05])  # B's top face
    shape = model.shapes[0]  # A's (and B's) inequalities: the multipliers that make A's normal -z and B's +z
    far[lay.lam:lay.mu] = _multipliers(shape, np.array([0.0, 0.0, -0.05]), np.array([0.0, 0.0, -1.0]), 0.05)
    far[lay.mu:lay.s] = _multipliers(shape, np.array([0.0, 0.0, 0.05]), np.array([0.0, 0.0, 1.0]), 0.05)
    far[lay.s] = -0.19
    z_far, res_far = closest_points(model, st, 0, far)
    z, res = closest_points(model, st, 0)
    for zz, rr in ((z_far, res_far), (z, res)):
        assert rr.converged
        assert zz[lay.s] == pytest.approx(-0.01, abs=1e-9)  # the depth, whatever the start
        assert zz[2] == pytest.approx(0.05, abs=1e-9) and zz[5] == pytest.approx(0.04, abs=1e-9)


def test_geometry_elimination_solves_the_closest_point_rows_of_sphere_and_plane_pairs():
    # the fifth attempt's projection (stepper._geometry_elimination): at any velocities, the closest-point unknowns it
    # sets for a sphere on the floor and a sphere touching it make every closest-point row of the step exact (the
    # KKT rows n_A + n_B = 0, a2 - a1 = s n_A, |n_A| = 1 and the inequalities active on both surfaces), with s the
    # end-of-step gap in closed form: the centre distance minus the radii, the centre's height minus the radius
    from core.contact.plan import Workspace
    from core.contact.stepper import _StepProblem

    mech = mechanism([floor(), body("a", {"type": "sphere", "radius": 0.1}, position=(0, 0, 0.1)),
                      body("b", {"type": "sphere", "radius": 0.05}, position=(0.03, 0.02, 0.2 + 0.05 * math.sqrt(
                          1 - (0.036 / 0.15) ** 2)))])
    model = build_model(mech)
    st = initial_state(model)
    h = 0.01
    prob = _StepProblem(model, st, h, "implicit", "ac", 1.0, True, frozenset(), 1e-10, 60, Workspace(), None, True)
    assert prob.project is not None and len(prob.pairs) == 2
    rng = np.random.default_rng(5)
    z = prob.z0.copy()
    z[:6 * prob.nb] = 0.3 * rng.standard_normal(6 * prob.nb)
    zp = prob.project(z)
    F = prob.residual(zp, jac=False)
    F = F[0] if isinstance(F, tuple) else F
    V = zp[:6 * prob.nb].reshape(prob.nb, 6)
    centre = {i: st.p[i] + h * V[model.dynamic_slot[i], :3] for i in (1, 2)}
    for pr in prob.pairs:
        blk = slice(pr.off, pr.off + 9)
        np.testing.assert_allclose(F[blk], 0.0, atol=1e-12)
        if pr.b == 0:  # the floor
            expect = centre[pr.a][2] - model.shapes[pr.a].radius
        else:
            expect = (np.linalg.norm(centre[pr.b] - centre[pr.a]) - model.shapes[pr.a].radius
                      - model.shapes[pr.b].radius)
        assert zp[pr.off + 8] == pytest.approx(expect, abs=1e-14)
        # (the other unknowns are left as they were)
        np.testing.assert_array_equal(zp[pr.off + 9:pr.off + pr.sz], z[pr.off + 9:pr.off + pr.sz])
    np.testing.assert_array_equal(zp[:6 * prob.nb], z[:6 * prob.nb])


def test_overlap_bound_counts_how_far_a_body_reaches_beyond_its_closest_point_plane():
    # a cube standing on a corner over the floor (its body diagonal (1, 1, 1) turned to -z), its closest point a1
    # taken delta inside the three faces of the lowest corner (within the solver's tolerance of the surface): the
    # plane through a1 normal to n_A = sum lam_i grad f_i (lam_i = 1/sqrt(3) on those faces) leaves the corner
    # (1, 1, 1) delta . n_A = sqrt(3) delta beyond it, which the overlap bound must count (the depth of a1 inside
    # the cube, delta, let a box end 1.1e-9 m inside a wall in a mixed pile)
    from core.contact.plan import Workspace
    from core.contact.stepper import _DEPTH_LIMIT, _StepProblem
    from core.transforms import axis_angle_to_matrix

    hs = 0.05
    axis = np.cross([1.0, 1.0, 1.0], [0.0, 0.0, -1.0])
    angle = math.acos(-1.0 / math.sqrt(3.0))
    R = axis_angle_to_matrix(axis / np.linalg.norm(axis), angle)
    assert np.allclose(R @ np.ones(3) / math.sqrt(3.0), [0.0, 0.0, -1.0])
    w, xyz = math.cos(angle / 2), math.sin(angle / 2) * axis / np.linalg.norm(axis)
    p = np.array([0.0, 0.0, hs * math.sqrt(3.0) + 1e-5])  # (near enough for the broad phase)
    mech = mechanism([floor(), body("cube", {"type": "box", "size": [2 * hs] * 3}, position=tuple(p),
                                    orientation=(w, *xyz))], gravity=(0, 0, 0))
    model = build_model(mech)
    st = initial_state(model)
    prob = _StepProblem(model, st, 0.01, "implicit", "ac", 1.0, True, frozenset(), 1e-10, 60, Workspace(), None)
    assert len(prob.pairs) == 1
    pr = prob.pairs[0]
    lay = pr.lay
    delta = 3e-10
    corner = np.full(3, hs)
    a1 = p + R @ (corner - delta)
    z = prob.z0.copy()
    z[:6 * prob.nb] = 0.0  # at rest: the end-of-step poses are the start ones
    o = pr.off
    z[o + lay.a1:o + lay.a1 + 3] = a1
    z[o + lay.a2:o + lay.a2 + 3] = [a1[0], a1[1], 0.0]  # on the floor, straight below
    z[o + lay.lam:o + lay.lam + lay.m] = _multipliers(model.shapes[1], corner, R.T @ [0.0, 0.0, -1.0], hs)
    z[o + lay.mu:o + lay.mu + lay.k] = 1.0
    z[o + lay.s] = a1[2]
    F = prob.residual(z, jac=False)
    F = F[0] if isinstance(F, tuple) else F
    np.testing.assert_allclose(F[o + lay.a1:o + lay.a1 + 3], 0.0, atol=1e-12)  # the normals match
    assert np.sort(F[o + lay.lam:o + lay.lam + lay.m])[:3] == pytest.approx([delta] * 3, abs=1e-15)
    assert prob.depth_residual(z, F) == pytest.approx(math.sqrt(3.0) * delta * 1e-10 / _DEPTH_LIMIT, rel=1e-6)


def test_compiled_overlap_depth_is_the_bound_over_the_pairs():
    """kernels.overlap_depth (the overlap bound of depth_residual, compiled) against its terms written out in numpy,
    on random rows of three pairs with 1, 6 and 3 inequalities on A (the shorter rows padded with the index n, which
    reads 0), one with a negative separation; and NaN in a pair's rows gives NaN."""
    from core.contact.kernels import overlap_depth

    rng = np.random.default_rng(5)
    n = 60
    z, F = rng.standard_normal(n), rng.standard_normal(n)
    i_lam = np.array([[0, n, n, n, n, n], [1, 2, 3, 4, 5, 6], [7, 8, 9, n, n, n]])
    i_mu = np.array([[10, n], [11, 12], [13, 14]])
    i_s = np.array([15, 16, 17])
    i_a1 = np.array([[18, 19, 20], [21, 22, 23], [24, 25, 26]])
    i_a2 = np.array([[27, 28, 29], [30, 31, 32], [33, 34, 35]])
    span = np.array([0.1, 0.2, 0.3])
    z[16] = -0.7  # a negative separation

    zp, Fp = np.append(z, 0.0), np.append(F, 0.0)
    # per pair: sum lam+ (-f)+ on A's rows and on B's, |row a2|, the negative part of s, span |row a1|
    want = (np.sum(np.maximum(zp[i_lam], 0.0) * np.maximum(Fp[i_lam], 0.0), axis=1)
            + np.sum(np.maximum(zp[i_mu], 0.0) * np.maximum(Fp[i_mu], 0.0), axis=1)
            + np.linalg.norm(F[i_a2], axis=1) + np.maximum(-z[i_s], 0.0) + span * np.linalg.norm(F[i_a1], axis=1))
    assert overlap_depth(z, F, i_lam, i_mu, i_s, i_a1, i_a2, span) == pytest.approx(want.max(), rel=1e-14)
    F[30] = np.nan
    assert np.isnan(overlap_depth(z, F, i_lam, i_mu, i_s, i_a1, i_a2, span))


@pytest.mark.parametrize("overlap", [0.0, 3e-10, 2e-9])
def test_a_resting_sphere_keeps_the_overlap_of_its_start_up_to_half_the_limit(overlap):
    # a ball (r = 0.1 m) at rest on the floor, its centre `overlap` below r: gravity presses it down, so its contact
    # stays loaded and the step ends at the separation its normal row asks for, s = s_0 = -min(overlap, 4.5e-10)
    # (stepper._kept_overlap): an overlap up to half the limit is kept, a deeper one undone down to it, never made
    # deeper.  The ball does not move otherwise: its centre ends at r + s_0 (to the solver's tolerance)
    from core.contact.stepper import _DEPTH_LIMIT, _KEEP_OVERLAP

    r = 0.1
    model = build_model(mechanism([floor(), body("ball", {"type": "sphere", "radius": r}, position=(0, 0, r - overlap))]))
    res = step(model, initial_state(model), 0.01)
    assert res.converged and len(res.contacts) == 1
    kept = min(overlap, _KEEP_OVERLAP)
    assert _KEEP_OVERLAP == pytest.approx(0.5 * _DEPTH_LIMIT)
    assert res.contacts[0].gap == pytest.approx(-kept, abs=2e-12)
    assert res.state.p[1][2] == pytest.approx(r - kept, abs=2e-12)
    assert res.contacts[0].pn > 0.0


def test_only_pairs_with_a_closed_form_gap_keep_an_overlap():
    # _kept_overlap: two spheres 1e-10 m into each other keep it; a sphere 2e-9 m into the floor keeps half the limit;
    # separated spheres and a box on the floor keep nothing (0)
    from core.contact.closest import candidate_pairs
    from core.contact.plan import Workspace
    from core.contact.stepper import _KEEP_OVERLAP, _kept_overlap, _StepProblem

    mech = mechanism([floor(), body("a", {"type": "sphere", "radius": 0.1}, position=(0, 0, 0.1 - 2e-9)),
                      body("b", {"type": "sphere", "radius": 0.1}, position=(0.2 - 1e-10, 0, 0.3)),
                      body("c", {"type": "sphere", "radius": 0.05}, position=(0.5, 0, 0.3)),
                      body("box", {"type": "box", "size": [0.2, 0.2, 0.2]}, position=(1.0, 0, 0.1 - 1e-10))])
    model = build_model(mech)
    st = initial_state(model)
    st.p[2] = st.p[1] + [0.2 - 1e-10, 0, 0]  # (b beside a, centres 0.2 - 1e-10 apart)
    prob = _StepProblem(model, st, 0.01, "implicit", "ac", 1.0, True, frozenset(), 1e-10, 60, Workspace(), None)
    names = [b.name for b in mech.bodies]
    kept = {}
    for bt in prob.batches:
        s0 = _kept_overlap(bt, candidate_pairs(model, st, 0.01)[1])
        kept.update(zip(((names[pr.a], names[pr.b]) for pr in bt.prs), np.zeros(bt.P) if s0 is None else s0))
    assert kept[("a", "floor")] == pytest.approx(-_KEEP_OVERLAP, abs=1e-18)
    assert kept[("a", "b")] == pytest.approx(-1e-10, abs=1e-15)
    assert kept[("box", "floor")] == 0.0
    assert all(v == 0.0 for k, v in kept.items() if "c" in k)


def test_closest_points_of_an_ellipsoid_beside_a_tilted_cube_match_a_general_minimiser():
    # the mixed pile example's egg and cube (cube turned 30 degrees about x): from the support points along the line
    # of centres (a corner of the cube) the KKT Newton failed after 316 iterations; the Frank-Wolfe starting
    # direction fixes that. Reference: scipy's SLSQP on min |x - y|^2 subject to x in the ellipsoid, y in the cube
    from scipy.optimize import minimize

    radii = np.array([0.1, 0.06, 0.05])
    q = (math.cos(math.pi / 12), math.sin(math.pi / 12), 0.0, 0.0)
    mech = mechanism([body("egg", {"type": "ellipsoid", "radii": list(radii)}, position=(-0.05, 0.0, 0.45)),
                      body("cube", {"type": "box", "size": [0.12, 0.12, 0.12]}, position=(0.0, 0.12, 0.35),
                           orientation=q)], gravity=(0, 0, 0))
    model = build_model(mech)
    st = initial_state(model)
    z, res = closest_points(model, st, 0)
    assert res.converged and res.iterations <= 30, (res.iterations, res.reason)
    c_e, c_b, R = np.array([-0.05, 0.0, 0.45]), np.array([0.0, 0.12, 0.35]), quat_to_matrix(np.array(q))
    cons = [{"type": "ineq", "fun": lambda u: 1.0 - np.sum(((u[:3] - c_e) / radii) ** 2)},
            {"type": "ineq", "fun": lambda u: 0.06 - np.abs(R.T @ (u[3:] - c_b))}]
    ref = minimize(lambda u: np.sum((u[:3] - u[3:]) ** 2), np.concatenate((c_e, c_b)), constraints=cons,
                   method="SLSQP", options={"ftol": 1e-15, "maxiter": 500})
    assert ref.success
    lay = pair_layout(1, 6, 0.0, 0.0)
    assert z[lay.s] == pytest.approx(math.sqrt(ref.fun), abs=1e-6)  # the separation s is the distance
    np.testing.assert_allclose(z[0:3], ref.x[:3], atol=1e-4)
    np.testing.assert_allclose(z[3:6], ref.x[3:], atol=1e-4)


@pytest.mark.parametrize("a,b", [
    ({"type": "box", "size": [0.3, 0.2, 0.1]}, {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}),
    ({"type": "box", "size": [0.3, 0.2, 0.1]}, {"type": "ellipsoid", "radii": [0.3, 0.2, 0.1]}),
    ({"type": "cylinder", "radius": 0.1, "length": 0.3}, {"type": "box", "size": [1, 1, 1]}),
])
def test_compiled_closest_point_rows_match_the_numpy_rows(a, b):
    """kernels.geometry_rows (a batch of pairs in one call) gives eval_geometry's rows and Jacobian, pair by pair."""
    from core.contact.kernels import geometry_rows
    from core.contact.pair import eval_geometry
    from core.shapes.base import stack_rows

    rng = np.random.default_rng(5)
    sa, sb = parse_shape(a, "a"), parse_shape(b, "b")
    P, ng = 4, 7 + sa.m + sb.m
    RA, RB = (np.array([quat_to_matrix(rng.standard_normal(4)) for _ in range(P)]) for _ in range(2))
    pA, pB, cA, cB = (rng.standard_normal((P, 3)) for _ in range(4))
    z = rng.standard_normal((P, ng))
    z[:, 6:ng - 1] = rng.random((P, ng - 7))  # multipliers >= 0
    r, J = geometry_rows(*stack_rows([sa] * P), RA, pA, cA, *stack_rows([sb] * P), RB, pB, cB, z, True)
    for p in range(P):
        r0, J0 = eval_geometry(sa, RA[p], pA[p], cA[p], sb, RB[p], pB[p], cB[p], z[p])
        np.testing.assert_allclose(r[p], r0, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(J[p], J0, rtol=1e-12, atol=1e-12)


def test_closest_points_of_many_pairs_at_once_are_those_of_one_pair_at_a_time():
    """closest_points_many (the explicit method's queries: a compiled Newton run per pair, in batches) gives every
    pair of a mixed scene the gap closest_points gives it: separated, touching and overlapping pairs (two cubes
    sunk 0.01 m into each other: the penetration, not the far sides), with or without a start."""
    from core.contact.closest import _initial_geometry, closest_points_many

    q = (math.cos(0.2), 0.0, 0.0, math.sin(0.2))
    R = quat_to_matrix(np.array(q))
    off = R @ np.array([0.02, 0.0, 0.0]) + np.array([0.0, 0.0, 0.14])
    mech = mechanism([floor(),
                      body("a", {"type": "box", "size": [0.1, 0.1, 0.1]}, position=(0, 0, 0.05), orientation=q),
                      body("b", {"type": "box", "size": [0.1, 0.1, 0.1]}, position=tuple(off), orientation=q),
                      body("egg", {"type": "ellipsoid", "radii": [0.1, 0.06, 0.05]}, position=(0.3, 0.0, 0.06)),
                      body("can", {"type": "cylinder", "radius": 0.05, "length": 0.1}, position=(0.0, 0.3, 0.2)),
                      body("ball", {"type": "sphere", "radius": 0.05}, position=(0.3, 0.3, 0.05))],
                     gravity=(0, 0, 0))
    model = build_model(mech)
    st = initial_state(model)
    ips = list(range(len(model.pairs)))
    one = [closest_points(model, st, ip) for ip in ips]
    for guesses in (None, [_initial_geometry(model, st, ip) for ip in ips]):
        many = closest_points_many(model, st, ips, guesses)
        for ip, (z1, r1), (z2, r2) in zip(ips, one, many):
            assert r1.converged and r2.converged, (ip, r1.reason, r2.reason)
            assert z2[-1] == pytest.approx(z1[-1], abs=1e-9), ip  # the same signed distance s
            assert r2.residual <= 1e-12
    a, b = 1, 2  # the sunk cubes: overlap 0.1 - 0.09 = 0.01 m along z
    ip = next(i for i, (x, y, _mu) in enumerate(model.pairs) if {x, y} == {a, b})
    assert many[ip][0][-1] == pytest.approx(-0.01, abs=1e-9)


def test_explicit_step_reuses_the_end_query_of_the_last_step_only_at_the_same_poses(monkeypatch):
    """The explicit method queries each pair's closest points at the end of a step; the next step, starting from
    those very poses, takes that answer instead of asking again, and asks again once a body has been moved."""
    from core.contact import closest, stepper

    mech = mechanism([floor(), body("box", {"type": "box", "size": [0.1, 0.1, 0.1]}, position=(0, 0, 0.06),
                                    orientation=(math.cos(0.1), 0.0, math.sin(0.1), 0.0))])
    model = build_model(mech)
    asked = []
    real = closest.closest_points_many

    def counting(model_, state, ips, guesses=None):
        asked.append(list(ips))
        return real(model_, state, ips, guesses)

    # (the step's start queries go through closest.closest_points_chunked, its end query through the stepper's name)
    monkeypatch.setattr(closest, "closest_points_many", counting)
    monkeypatch.setattr(stepper, "closest_points_many", counting)
    st = step(model, initial_state(model), 0.01, "explicit").state
    assert asked == [[0], [0]]  # the start (no warm start yet) and the end
    asked.clear()
    r = step(model, st, 0.01, "explicit")
    assert r.converged and asked == [[0]]  # the end only: the start is the last step's end query
    moved = r.state.copy()
    moved.p[1] += np.array([0.0, 0.0, 0.001])  # the box lifted by 1 mm (body 0 is the floor)
    asked.clear()
    r2 = step(model, moved, 0.01, "explicit")
    assert r2.converged and asked == [[0], [0]]  # asked again at the start


def _drop():
    return mechanism([floor(), body("ball", {"type": "sphere", "radius": 0.1}, position=(0, 0, 0.3))])


def _implicit_fails(monkeypatch, failing=("implicit",)):
    """Every attempt of the `failing` methods fails (as in a frictional jam); the other method's are the real ones."""
    import core.contact.stepper as stp

    real = stp._step_once

    def attempt(model_, state, h, method, *args, **kw):
        if method in failing:
            return stp.StepResult(state, False, 4, 1e-5, "MCP solver: stalled (residual 1e-05)", pairs=1)
        return real(model_, state, h, method, *args, **kw)

    monkeypatch.setattr(stp, "_step_once", attempt)
    return stp


def test_a_failed_implicit_step_is_taken_by_the_explicit_method_when_its_end_meets_the_overlap_bound(monkeypatch):
    # two spheres sliding over each other onto the floor: the explicit method's gaps are linearised, and for spheres
    # (centre distance minus radii, convex in the positions) and a sphere on a plane (linear) the linearised gap is at
    # most the true one, so its step meets the overlap bound and stands in for the implicit step that failed
    mech = mechanism([floor(), body("a", {"type": "sphere", "radius": 0.1}, position=(0, 0, 0.1), linear=(0.5, 0, 0)),
                      body("b", {"type": "sphere", "radius": 0.1}, position=(0.05, 0, 0.1 + math.sqrt(0.2001 ** 2 -
                                                                                            0.05 ** 2)),
                           linear=(-0.3, 0.1, -0.2))], mu=0.8)  # (b 0.1 mm from a, closing at about 0.3 m/s)
    model = build_model(mech)
    st = initial_state(model)
    direct = step(model, st, 0.01, "explicit")
    assert direct.converged and direct.halvings == 0 and direct.method == "explicit"
    ok = step(model, st, 0.01)
    assert ok.converged and ok.method == "implicit"
    stp = _implicit_fails(monkeypatch)
    res = step(model, st, 0.01)
    assert res.converged and res.method == "explicit"
    assert res.reason.startswith("taken by the explicit method: the implicit step failed (step did not converge even "
                                 "when halved (MCP solver: stalled")
    # its first attempt, Newton from the solution of the relaxed problem (core.contact.relaxed), converged: that
    # attempt's end state and contacts, and the iterations of both methods counted (9 sizes (h to h/256) x 3
    # attempts x 4 iterations of the stubbed implicit attempts, then the relaxed start's interior point and Newton,
    # then the 4 of the implicit attempt started from its end, stubbed to fail too)
    first = stp._step_once(model, st, 0.01, "explicit", stp._TOL["explicit"], 60, relaxed=True)
    assert first.converged
    for name in ("p", "q", "v", "w"):
        np.testing.assert_array_equal(getattr(res.state, name), getattr(first.state, name))
    assert [c.pn for c in res.contacts] == [c.pn for c in first.contacts]
    assert res.iterations == 9 * 3 * 4 + first.iterations + 4
    # ... which is the explicit method's own step, started elsewhere: the same solution to the solver's tolerance
    # (two loaded pairs, one solution)
    for name in ("p", "v", "w"):
        np.testing.assert_allclose(getattr(res.state, name), getattr(direct.state, name), rtol=0, atol=1e-10)
    np.testing.assert_allclose([c.pn for c in res.contacts], [c.pn for c in direct.contacts], rtol=1e-7)
    assert min(c.gap for c in res.contacts) >= -stp._DEPTH_LIMIT and len(res.contacts) == 2
    assert all(c.pn > 0 for c in res.contacts)  # (both pairs pushed: a on the floor, b onto a)
    # asked not to, the step fails as the implicit method left it
    res = step(model, st, 0.01, fallback=False)
    assert not res.converged and res.method == "" and res.state is st
    # the recording marks the step (the solver channel's "fallback" column), and the CLI says so
    rec = simulate(model, t_end=0.02, dt=0.01)
    assert rec.completed and rec.fallback.tolist() == [0, 1, 1] and rec.method == "implicit"


@pytest.mark.parametrize("failing, code, said", [
    (("implicit",), 1, "failed with the implicit method and were taken by the explicit method"),
    (("implicit", "explicit"), 2, "failed with every Newton attempt and were taken as the solution of their relaxed "
                                  "problem")])
def test_the_cli_and_the_npz_file_say_which_steps_a_fallback_took(monkeypatch, tmp_path, capsys, failing, code, said):
    # every Newton attempt of the failing methods fails: each step is the explicit method's (code 1 of the solver
    # channel's fallback column) or, both failing, its relaxed problem's solution (stepper._relaxed_step, code 2)
    from core import io

    _implicit_fails(monkeypatch, failing)
    f = tmp_path / "drop.json"
    io.save(_drop(), f)
    out = tmp_path / "r.npz"
    assert cli_main(["simulate", str(f), "--t-end", "0.03", "--dt", "0.01", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"note: 3 step(s) (ending at t = 0.01, 0.02, 0.03 s) {said}" in err and err.count("note:") == 1
    rec = load_npz(out)
    assert rec.completed and rec.fallback.tolist() == [0] + [code] * 3
    # a file written without the column reads as no such step
    with np.load(out) as z:
        np.savez(tmp_path / "old.npz", **{k: z[k] for k in z.files if k != "fallback"})
    assert load_npz(tmp_path / "old.npz").fallback.tolist() == [0] * 4
    # ... and one written with the column as bool (before the relaxed problem's code 2) reads as 0 and 1
    with np.load(out) as z:
        np.savez(tmp_path / "bool.npz", **{k: (z[k] > 0 if k == "fallback" else z[k]) for k in z.files})
    assert load_npz(tmp_path / "bool.npz").fallback.tolist() == [0] + [1] * 3


def test_the_explicit_fallback_is_refused_when_its_true_gap_overlaps_and_the_step_fails(monkeypatch):
    # a cube 0.1 mm above the floor spinning at 30 rad/s about x: in 0.01 s it turns 0.3 rad and an edge swings into
    # the floor.  The explicit method linearises the gap of the face's closest point: its end overlaps by about
    # (0.05 (cos 0.3 + sin 0.3) - 0.05) ~ 1.2 cm (the edge's height below the centre's, 5 cm above the floor).  The
    # implicit method, whose gap is the end's, takes it; when it fails the explicit step is refused
    model = build_model(mechanism([floor(), body("box", {"type": "box", "size": [0.1, 0.1, 0.1]},
                                                 position=(0, 0, 0.0501), angular=(30, 0, 0))]))
    st = initial_state(model)
    direct = step(model, st, 0.01, "explicit")
    deepest = min(c.gap for c in direct.contacts)
    edge = 0.05 * (math.cos(0.3) + math.sin(0.3)) - 0.0501  # the leading edge below the floor, at the end pose
    assert direct.converged and deepest == pytest.approx(-edge, rel=0.1)
    assert step(model, st, 0.01).converged
    _implicit_fails(monkeypatch)
    res = step(model, st, 0.01)
    assert not res.converged and res.state is st and res.method == ""
    assert f"; the explicit method's step overlaps by {-deepest:.3g} m; " in res.reason
    # (and then its relaxed problem's, whose geometry is the explicit method's: test_relaxed)
    assert "; nor its relaxed problem (its end overlaps by " in res.reason


def test_failed_step_stops_the_run_and_keeps_every_frame(monkeypatch):
    model = build_model(_drop())
    calls = {"n": 0}
    real = recording_mod.step

    def flaky(model_, state, h, method="implicit", **kw):
        calls["n"] += 1
        if calls["n"] > 5:
            res = real(model_, state, h, method, **kw)
            res.converged, res.reason, res.state = False, "forced failure", state
            return res
        return real(model_, state, h, method, **kw)

    monkeypatch.setattr(recording_mod, "step", flaky)
    rec = simulate(model, t_end=0.2, dt=0.01)
    assert not rec.completed and "forced failure" in rec.reason
    assert rec.n_frames == 6  # the initial state plus five good steps
    assert np.all(np.isfinite(rec.position)) and np.all(np.isfinite(rec.velocity))


@pytest.mark.parametrize("method", ["implicit", "explicit"])
def test_newton_options_reach_the_newton_attempts_of_a_step(monkeypatch, method):
    # step(newton=NewtonOptions(...)) is what the step's Newton solves run with (the attempts, the halves, the
    # predictor of new pairs); without it they run with the defaults
    import core.contact.stepper as stp
    from core.contact.mcp import NewtonOptions

    model = build_model(mechanism([floor(), body("ball", {"type": "sphere", "radius": 0.1}, position=(0, 0, 0.1))]))
    st = initial_state(model)  # resting on the floor: the pair is solved
    seen = []
    real = stp.solve_mcp

    def spy(fun, z0, lower, **kw):
        seen.append(kw.get("options"))
        return real(fun, z0, lower, **kw)

    monkeypatch.setattr(stp, "solve_mcp", spy)
    opts = NewtonOptions(stall_far=25, theta_up=4.0)
    res = step(model, st, 0.01, method, newton=opts)
    assert res.converged and res.contacts and seen and all(o is opts for o in seen)
    seen.clear()
    assert step(model, st, 0.01, method).converged
    assert seen and all(o == NewtonOptions() for o in seen)


@pytest.mark.parametrize("shape", [{"type": "sphere", "radius": 0.1}, {"type": "box", "size": [0.2, 0.2, 0.2]}])
def test_non_converging_solver_is_reported_with_halving_attempts(monkeypatch, shape):
    # (a box on the floor: the last attempt, the cold start, has no closest points to eliminate and solves them)
    import core.contact.stepper as stp

    model = build_model(mechanism([floor(), body("ball", shape, position=(0, 0, 0.1))]))
    st = initial_state(model)  # resting, so the pair is a candidate
    monkeypatch.setattr(stp, "solve_mcp", lambda fun, z0, lower, **kw: MCPResult(z0, False, 3, 1.0, "stub"))
    res = step(model, st, 0.01, fallback=False)
    assert not res.converged and "halved" in res.reason and res.halvings >= 1
    # the reason of the last attempt made, the cold start's
    why = "step did not converge even when halved (MCP solver: stub (residual 1))"
    assert res.reason == why
    assert res.state is st  # state unchanged
    # with the fallbacks: the explicit method's step (stubbed too), then the relaxed problem's solution (no Newton
    # solve: it takes the step, the body resting on the floor), the reasons of both Newton failures kept
    res = step(model, st, 0.01)
    assert res.converged and res.method == "relaxed"
    assert res.reason.endswith(f"{why}; nor did the explicit method's ({why})")
    np.testing.assert_allclose(res.state.v[1], 0.0, rtol=0, atol=1e-9)


@pytest.mark.parametrize("method", ["implicit", "explicit"])
def test_step_schedule_is_the_attempts_in_order_then_halves_and_counts_every_iteration(monkeypatch, method):
    # every attempt fails: the step is then walked to the end of its schedule.  At each sub-step the attempts in
    # order (Alart-Curnier from the warm start, normalised from the warm start, then Alart-Curnier from a cold start,
    # with the closest points eliminated for the implicit method; the explicit method's geometry is fixed),
    # then the first half of it the same way, down to h/256 (max_halvings = 8); the second halves are never reached
    # since the first fails.  No attempt is made twice and the reported iterations are exactly those of the attempts
    # made (one each here)
    import core.contact.stepper as stp

    from core.contact.stepper import StepResult

    model = build_model(_drop())
    st = initial_state(model)
    calls, colds, elims, reaches, methods, relaxeds = [], [], [], [], [], []
    forms = ("ac", "normalised", "ac")

    def failing(model_, state, h, method_, tol, max_iter, extra=frozenset(), form="ac", **_kw):
        calls.append((id(state), h, form))
        methods.append(method_)
        reaches.append(_kw.get("reach"))
        colds.append(_kw.get("cold", False))
        elims.append(_kw.get("elim", False))
        relaxeds.append(_kw.get("relaxed", False))
        return StepResult(state, False, 1, 1.0, "forced", pairs=3)

    monkeypatch.setattr(stp, "_step_once", failing)
    real_relaxed, relaxed_its = stp.relaxed_start, []

    def relaxed(prob):
        got = real_relaxed(prob)
        relaxed_its.append(got[1])
        return got

    monkeypatch.setattr(stp, "relaxed_start", relaxed)
    h = 0.01
    res = step(model, st, h, method)
    # ... and last the relaxed problem's solution takes the step (_relaxed_step: the falling ball, no contact yet)
    assert res.converged and res.method == "relaxed" and len(relaxed_its) == 1 and "halved" in res.reason
    assert res.halvings == 8  # (the depth the failed step was halved to, recorded with it)
    assert stp._MAX_HALVINGS == 8
    schedule = [(id(st), h / 2 ** k, f) for k in range(9) for f in forms]
    if method == "explicit":
        # then the step once more at its full size, from the relaxed problem's solution (_relaxed_retry)
        schedule += [(id(st), h, "ac")]
        assert relaxeds == [False] * 27 + [True]
        assert res.reason.endswith("; nor from the relaxed problem's solution (forced)")
        assert res.reason.startswith("taken by its relaxed problem (loaded pairs end up to 0 m apart): ")
    if method == "implicit":
        # then the explicit method's fallback: its attempts, the first from the relaxed problem's solution, at h and
        # h/2 (_FALLBACK_HALVINGS = 1)
        assert stp._FALLBACK_HALVINGS == 1 and methods == ["implicit"] * 27 + ["explicit"] * 8
        schedule += [(id(st), h / 2 ** k, f) for k in range(2) for f in ("ac",) + forms]
        assert relaxeds == [False] * 27 + [True, False, False, False] * 2
        assert res.reason.endswith("; nor did the explicit method's (step did not converge even when halved (forced))")
    assert calls == schedule
    # every sub-step's broad phase covers the whole step's travel (the pairs of the step it is part of)
    assert reaches == [h] * len(calls)
    # the third attempt starts cold, and asks for the elimination (which only the implicit method makes)
    assert colds[:3] == [False, False, True]
    assert elims[:3] == [False, False, True]
    assert res.iterations == len(calls) + relaxed_its[0]
    # the interior-point solver: its attempt alone at each level
    calls.clear()
    step(model, st, h, method, solver="interior-point")
    assert [f for _i, _h, f in calls] == ["conic"] * 9 + (list(("ac",) + forms) * 2 if method == "implicit" else ["ac"])
    # a failed step's reason says once that it was halved, then the last attempt's reason
    assert res.reason.split(": ", 1)[1].startswith("step did not converge even when halved (forced)")


def test_a_sub_step_solves_the_pairs_within_reach_of_the_whole_step():
    # a ball (radius 0.1) falling at 1 m/s, 15 mm above the floor.  The broad phase's margin for a step of size h is
    # 2 h (|v| + h g) + 1 mm + 2 % of the radius (kernels.broad_bounds): for h = 0.01 s, 20 + 2 + 1 + 2 = 25 mm, so
    # the ball-floor pair is a candidate; for a quarter of it, 5 + 0.1 + 1 + 2 = 8.1 mm, so it is not.  A quarter
    # step that is part of the whole step (reach = h, as _step_split passes to the halves) solves the pair; alone it
    # does not.  Either way the ball does not reach the floor (10 mm of fall in h at most) and the step converges
    import core.contact.stepper as stp

    model = build_model(mechanism([floor(), body("ball", {"type": "sphere", "radius": 0.1}, position=(0, 0, 0.115),
                                                 linear=(0, 0, -1.0))]))
    st = initial_state(model)
    h = 0.01
    alone = stp._step_once(model, st, h / 4, "implicit", 1e-10, 60, ws=stp.Workspace())
    within = stp._step_once(model, st, h / 4, "implicit", 1e-10, 60, ws=stp.Workspace(), reach=h)
    whole = stp._step_once(model, st, h, "implicit", 1e-10, 60, ws=stp.Workspace())
    assert alone.converged and within.converged and whole.converged
    assert (alone.pairs, within.pairs, whole.pairs) == (0, 1, 1)
    # the same motion either way (no impulse: free fall over h/4)
    np.testing.assert_allclose(within.state.p, alone.state.p, atol=1e-12)


@pytest.mark.parametrize("spin", [(0.3, 0.2, 0.0), (0.0, 0.5, 0.0)])
def test_pyramids_landing_on_their_apexes_take_the_step_whole(spin):
    # Four faces meet at a square pyramid's apex, so the multipliers of a closest point there are not unique (the
    # contact normal is a point of a 1-D family of their combinations) and the Newton equations are singular in
    # them.  With three pairs the step gets the proximal term, on these multipliers too (weight h: their rows are
    # lengths): each landing step is solved whole (without the term on them the attempts stalled and the step was
    # halved: 264 and 447 iterations)
    a, height, m, h = 0.03, 0.05, 0.2, 0.01
    pyramid = {"type": "polytope", "vertices": [[a, a, height], [a, -a, height], [-a, a, height], [-a, -a, height],
                                                [0, 0, 0]]}
    slab = {"name": "slab", "ground": True, "shape": {"type": "box", "size": [1, 1, 0.1]},
            "pose": {"position": [0, 0, -0.05], "orientation": [1, 0, 0, 0]}}
    model = build_model(mechanism([slab] + [body(f"p{i}", pyramid, mass=m, position=(0.15 * i, 0, 0), angular=spin)
                                           for i in range(3)]))
    rec = simulate(model, t_end=0.1, dt=h)
    assert rec.completed and np.all(rec.halvings == 0)
    # (not the energy test: a body tipping over its pivot, an inverted pendulum, gains about 1e-7 J a step in this
    # first-order time-stepping; one pyramid alone, with no proximal term, does the same)
    check_invariants(model, rec, energy=False)
    # the apex carries the weight: over one step the normal impulse is m g h (a spin of 0.5 rad/s moves the centre
    # of mass by a few micrometres in a step: well within 1e-3 of it)
    assert rec.pn[1, :3] == pytest.approx(m * G * h, rel=1e-3)


@pytest.mark.parametrize("halves_converge", [True, False])
def test_an_attempt_stalled_near_the_tolerance_halves_the_step_without_the_other_attempts(monkeypatch, halves_converge):
    # the first attempt at the full step stalls near the tolerance (within _NEAR times it): the other attempts are
    # not made at that size, the step is halved at once; when the halves converge that is the step (its iterations
    # counted once each), and when they fail the step fails (the attempts left out are not made later)
    import core.contact.stepper as stp

    from core.contact.stepper import StepResult

    model = build_model(_drop())
    st = initial_state(model)
    h = 0.01
    calls = []

    def attempt(model_, state, hh, method_, tol, max_iter, extra=frozenset(), form="ac", **kw):
        calls.append((hh, form, kw.get("cold", False)))
        if hh == h and len(calls) == 1:
            return StepResult(state, False, 7, 2e-10, stp.NEAR_STALLED + " (residual 2e-10)", pairs=3)
        if hh < h and halves_converge:
            return StepResult(state, True, 5, 1e-11, "converged", pairs=3)
        return StepResult(state, False, 1, 1e-3, "MCP solver: stalled", pairs=3)

    monkeypatch.setattr(stp, "_step_once", attempt)
    assert 2e-10 <= stp._NEAR * stp._TOL["implicit"]
    res = step(model, st, h, fallback=False)
    if halves_converge:
        assert res.converged
        assert calls == [(h, "ac", False), (h / 2, "ac", False), (h / 2, "ac", False)]
        assert res.halvings == 1 and res.iterations == 7 + 5 + 5
    else:
        # the first half fails at every level down to h/256 (each of its sub-steps makes every attempt); nothing at
        # the full size after that
        assert not res.converged and res.state is st
        assert calls[0] == (h, "ac", False) and all(hh < h for hh, _f, _c in calls[1:])
        assert len(calls) == 1 + 8 * 3 and res.iterations == 7 + 8 * 3


def test_a_step_spends_at_most_its_iteration_budget_over_all_attempts_and_halves(monkeypatch):
    # every attempt fails after using all the iterations it is given: the step's budget (max_iterations) is shared by
    # its attempts and sub-steps, each attempt is capped at what is left, and the step stops when it is spent, with
    # that reason, instead of going on halving
    import core.contact.stepper as stp

    from core.contact.stepper import StepResult

    model = build_model(_drop())
    st = initial_state(model)
    caps = []

    def spends_all(model_, state, h, method_, tol, max_iter, extra=frozenset(), form="ac", restarts=1, **_kw):
        caps.append((h, max_iter, restarts))
        return StepResult(state, False, max_iter * (1 + restarts), 1e-5, "MCP solver: iteration limit", pairs=3)

    monkeypatch.setattr(stp, "_step_once", spends_all)
    res = step(model, st, 0.01, max_iterations=650, fallback=False)  # (the explicit method's fallback: tested below)
    # the first and last attempts make a run and a restart, the normalised form one run: 2 x 60 + 60 + 2 x 60 = 300
    # a sub-step.  650 = 300 at h, 300 at h/2, then 50 left at h/4: the first attempt's run and restart are each
    # capped at that: 700 in all, and nothing is left
    assert [c for _h, c, _r in caps] == [60] * 6 + [50]
    assert [r for _h, _c, r in caps] == [1, 0, 1, 1, 0, 1, 1]
    assert [h for h, _c, _r in caps] == [0.01] * 3 + [0.005] * 3 + [0.0025]
    assert res.iterations == 700 and not res.converged and res.state is st
    assert res.reason == ("step did not converge even when halved (the step's iteration budget is spent "
                          "(MCP solver: iteration limit))")
    # the default budget: 24 sub-steps of 2 x 60 + 60 + 2 x 60
    assert len(stp._ATTEMPTS) == 3 and stp._STEP_ITER == 24 * 5 * stp._NEWTON_ITER
    # with it, a step whose first half fails at every level makes every attempt at all 9 sizes (h to h/256): 2700
    caps.clear()
    res = step(model, st, 0.01, fallback=False)
    assert res.iterations == 9 * 5 * 60 and len(caps) == 27 and not res.converged
    assert "budget" not in res.reason


def test_an_attempt_that_meets_the_equations_but_not_the_overlap_bound_halves_the_step_at_once(monkeypatch):
    # the attempts differ in the friction form and the start, not in the step's geometry: when one meets the equations
    # but its overlap bound stays above the limit (a jammed chain of spheres), the others are not tried at that step
    # size; the step is halved, and each half starts again with the first attempt
    import core.contact.stepper as stp

    from core.contact.stepper import StepResult

    model = build_model(_drop())
    st = initial_state(model)
    calls = []

    def stalled_then_fine(model_, state, h, method_, tol, max_iter, extra=frozenset(), form="ac", **_kw):
        calls.append((h, form, _kw.get("cold", False)))
        if h == 0.01:
            return StepResult(state, False, 7, 2e-10, f"{stp._OVERLAP_STALLED} with the equations met", pairs=3)
        new = state.copy()
        new.t = state.t + h
        return StepResult(new, True, 3, 1e-11, "converged", pairs=3)

    monkeypatch.setattr(stp, "_step_once", stalled_then_fine)
    res = step(model, st, 0.01)
    assert res.converged and res.halvings == 1 and res.state.t == pytest.approx(st.t + 0.01)
    assert calls == [(0.01, "ac", False), (0.005, "ac", False), (0.005, "ac", False)]
    assert res.iterations == 7 + 3 + 3
    # a step that cannot be halved any more makes its other attempts
    calls.clear()
    res = step(model, st, 0.01, max_halvings=0, fallback=False)
    assert not res.converged and [f for _h, f, _c in calls] == ["ac", "normalised", "ac"]


@pytest.mark.parametrize("r, sp", [((0.0, 0.0), 0.3), ((0.06, -0.08), 0.5), ((0.06, -0.08), 0.1), ((0.3, 0.4), 0.0)])
def test_unloaded_friction_meets_the_friction_rows_of_a_pair_without_load(r, sp):
    """With pn = 0 a pair's friction rows are mu xi + phi (sig + sp) = 0 and 0 <= sig perp mu^2 - |phi|^2 >= 0, given
    r = mu xi: no slip, inside the disc (|xi| <= sp), on its rim (|xi| > sp, also with sp = 0 for a pair that
    touches). The closed form must meet them to rounding (the normalised attempt starts from it)."""
    from core.contact.stepper import _unloaded_friction

    mu = 0.4
    r = np.array(r)
    phi, sig = _unloaded_friction(r, sp, mu)
    np.testing.assert_allclose(r + phi * (sig + sp), 0.0, atol=1e-15)
    cone = mu * mu - phi @ phi
    assert sig >= 0.0 and cone >= -1e-15 and abs(sig * cone) <= 1e-15
    xi = np.linalg.norm(r) / mu
    if 0.0 < xi <= sp:  # inside the disc, sig = 0 and |phi| = mu |xi| / sp <= mu
        assert sig == 0.0 and np.linalg.norm(phi) == pytest.approx(mu * xi / sp)
    elif xi > sp:  # on the rim: |phi| = mu, phi against the slip, sig = |xi| - sp
        assert np.linalg.norm(phi) == pytest.approx(mu) and phi @ r < 0.0 and sig == pytest.approx(xi - sp)


def test_npz_round_trip_and_csv_columns(tmp_path):
    rec = simulate(build_model(_drop()), t_end=0.3, dt=0.01)
    p = tmp_path / "run.npz"
    rec.save(p)
    back = load_npz(p)
    for name in ("t", "position", "orientation", "gap", "pn", "iterations", "residual"):
        np.testing.assert_array_equal(getattr(back, name), getattr(rec, name))
    assert back.body_names == rec.body_names and back.pair_names == rec.pair_names
    c = tmp_path / "run.csv"
    rec.save(c)
    rows = list(csv.reader(open(c)))
    expect = ["t"] + [f"ball.{k}" for k in ("x", "y", "z", "qw", "qx", "qy", "qz", "vx", "vy", "vz", "wx", "wy", "wz")]
    expect += [f"ball/floor.{k}" for k in ("gap", "pn", "pt", "px", "py", "pz")] + ["solver.iters", "solver.residual"]
    assert rows[0] == expect
    assert len(rows) == 1 + 31
    # t = k h from k = 0 (the initial state)
    assert [float(r[0]) for r in rows[1:4]] == pytest.approx([0.0, 0.01, 0.02])
    assert float(rows[1][3]) == pytest.approx(0.3)


def test_a_pair_out_of_contact_range_is_recorded_with_its_bounding_sphere_points():
    """Pairs the broad phase leaves out: the gap a lower bound (here, two spheres and a sphere over a turned floor,
    the exact one less the broad phase's margin), the normal along the centre line or the plane's normal, the point
    on A its bounding sphere's nearest point and the point on B the gap further along -n."""
    c, s = np.cos(0.3), np.sin(0.3)
    tilt = [float(np.cos(0.15)), float(np.sin(0.15)), 0.0, 0.0]  # the floor turned 0.3 rad about x
    floor = {"name": "floor", "ground": True, "pose": {"orientation": tilt},
             "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}}
    mech = mechanism([floor, body("a", {"type": "sphere", "radius": 0.1}, position=(0, 0, 2.0)),
                      body("b", {"type": "sphere", "radius": 0.2}, position=(1.0, 0.5, 2.5))], gravity=(0, 0, 0))
    model = build_model(mech)
    rec = simulate(model, t_end=0.01, dt=0.01)
    names = rec.pair_names
    ab = names.index("a/b") if "a/b" in names else names.index("b/a")
    af = names.index("a/floor")
    assert not rec.active[:, [ab, af]].any()
    pa, pb = model.pairs[ab][0], model.pairs[ab][1]
    for k in range(2):
        x = {nm: rec.position[k, rec.body_names.index(nm)] for nm in ("a", "b")}
        xa, xb = x[model.names[pa]], x[model.names[pb]]
        dist = np.linalg.norm(xa - xb)
        n = (xa - xb) / dist  # from B's centre to A's
        gap = rec.gap[k, ab]
        assert 0.0 < gap <= dist - 0.3 + 1e-12 and gap > dist - 0.3 - 0.05  # a lower bound, near the exact gap
        np.testing.assert_allclose(rec.normal[k, ab], n, atol=1e-15)
        np.testing.assert_allclose(rec.point_a[k, ab], xa - model.radius[pa] * n, atol=1e-15)
        np.testing.assert_allclose(rec.point_b[k, ab], rec.point_a[k, ab] - gap * n, atol=1e-15)
        # the floor's normal, turned with it: (0, -sin 0.3, cos 0.3)
        np.testing.assert_allclose(rec.normal[k, af], (0.0, -s, c), atol=1e-15)
        xa = x["a"]
        np.testing.assert_allclose(rec.point_a[k, af], xa - 0.1 * np.array([0.0, -s, c]), atol=1e-15)
        exact = xa @ np.array([0.0, -s, c]) - 0.1  # the sphere's distance to the turned plane through the origin
        assert 0.0 < rec.gap[k, af] <= exact + 1e-12


def test_the_first_row_holds_the_start_geometry_of_the_pairs_in_contact_range():
    """Row 0 (the initial state, before any step): pairs in contact range carry their closest points, exact gap and
    normal from a query at the initial poses (a box resting on the floor: gap 0, its point on the floor plane, the
    floor's normal +z; a ball 2 mm above the box's top face, pair (box, ball): gap 2e-3, the point on the face below
    the ball's lowest point, and the ball's normal there, -z), with no impulse and not active; a far pair keeps its
    bounding-sphere values."""
    box = {"type": "box", "size": [0.2, 0.2, 0.2]}
    mech = mechanism([floor(), body("box", box, position=(0, 0, 0.1)),
                      body("ball", {"type": "sphere", "radius": 0.05}, position=(0.02, -0.03, 0.252)),
                      body("far", {"type": "sphere", "radius": 0.05}, position=(3.0, 0.0, 0.05))], gravity=(0, 0, -G))
    model = build_model(mech)
    rec = simulate(model, t_end=0.01, dt=0.01)
    names = rec.pair_names
    bf, bb = names.index("box/floor"), names.index("box/ball")
    assert not rec.active[0].any() and not rec.pn[0].any()
    assert abs(rec.gap[0, bf]) <= 1e-12
    assert abs(rec.point_a[0, bf, 2]) <= 1e-12 and np.all(np.abs(rec.point_a[0, bf, :2]) <= 0.1 + 1e-12)
    np.testing.assert_allclose(rec.normal[0, bf], (0.0, 0.0, 1.0), atol=1e-12)
    # the ball's lowest point is at z = 0.252 - 0.05 = 0.202, the box's top face at z = 0.2: gap 2 mm; the normal is
    # B's (the ball's) at its point, from B towards A: -z
    assert rec.gap[0, bb] == pytest.approx(2e-3, abs=1e-12)
    np.testing.assert_allclose(rec.point_a[0, bb], (0.02, -0.03, 0.2), atol=1e-12)
    np.testing.assert_allclose(rec.point_b[0, bb], (0.02, -0.03, 0.202), atol=1e-12)
    np.testing.assert_allclose(rec.normal[0, bb], (0.0, 0.0, -1.0), atol=1e-12)
    ff = names.index("far/floor")  # far from the others, but resting on the floor: in range too
    assert abs(rec.gap[0, ff]) <= 1e-12
    fb = names.index("box/far")
    a, b = model.pairs[fb][0], model.pairs[fb][1]
    d = rec.position[0, rec.body_names.index(model.names[a])] - rec.position[0, rec.body_names.index(model.names[b])]
    np.testing.assert_allclose(rec.normal[0, fb], d / np.linalg.norm(d), atol=1e-15)  # the centre line
    assert 0.0 < rec.gap[0, fb] < np.linalg.norm(d) - 0.05  # a lower bound from the bounding spheres


def _write(tmp_path, mech_dict):
    p = tmp_path / "scene.json"
    p.write_text(json.dumps(mech_dict))
    return str(p)


SCENE = {"format": "linkwright.mechanism", "version": 1, "space": "spatial", "gravity": [0, 0, -9.81],
         "bodies": [{"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}},
                    {"name": "ball", "mass": 1, "shape": {"type": "sphere", "radius": 0.1}, "pose": {"position": [0, 0, 0.2]}}],
         "simulation": {"dt": 0.01, "duration": 0.1}}


def test_cli_simulate_writes_csv_and_npz(tmp_path, capsys):
    f = _write(tmp_path, SCENE)
    out = tmp_path / "r.csv"
    assert cli_main(["simulate", f, "--out", str(out)]) == 0
    rows = list(csv.reader(open(out)))
    assert len(rows) == 1 + 11  # duration 0.1 at dt 0.01
    assert cli_main(["simulate", f, "--t-end", "0.05", "--dt", "0.005", "--method", "explicit", "--out", str(tmp_path / "r.npz")]) == 0
    rec = load_npz(tmp_path / "r.npz")
    assert rec.method == "explicit" and rec.n_frames == 11
    assert cli_main(["simulate", f, "--t-end", "0.02"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("t,ball.x")


@pytest.mark.parametrize("bad,where", [
    ({"bodies": [{"name": "ball", "mass": 1, "shape": {"type": "sphere", "radius": -1}}]}, "bodies[0].shape"),
    ({"contact": {"friction": -0.1}}, "contact.friction"),
])
def test_cli_simulate_bad_input_is_status_2(tmp_path, capsys, bad, where):
    f = _write(tmp_path, {**SCENE, **bad})
    assert cli_main(["simulate", f]) == 2
    assert where in capsys.readouterr().err


def test_cli_simulate_bad_options_are_status_2(tmp_path, capsys):
    f = _write(tmp_path, SCENE)
    assert cli_main(["simulate", f, "--dt", "-1"]) == 2
    assert "--dt" in capsys.readouterr().err
    assert cli_main(["simulate", f, "--out", str(tmp_path / "x.txt")]) == 2
    assert cli_main(["simulate", str(tmp_path / "missing.json")]) == 2


def test_cli_simulate_stopped_early_is_status_3(tmp_path, capsys, monkeypatch):
    f = _write(tmp_path, SCENE)
    real = recording_mod.step
    calls = {"n": 0}

    def flaky(model_, state, h, method="implicit", **kw):
        calls["n"] += 1
        res = real(model_, state, h, method, **kw)
        if calls["n"] > 3:
            res.converged, res.reason = False, "forced"
        return res

    monkeypatch.setattr(recording_mod, "step", flaky)
    out = tmp_path / "r.csv"
    assert cli_main(["simulate", f, "--out", str(out)]) == 3
    assert "stopped" in capsys.readouterr().err
    assert len(list(csv.reader(open(out)))) == 1 + 4


@pytest.mark.parametrize("name", ["contact_sphere_drop", "contact_box_slide", "contact_two_spheres",
                                  "contact_disc_roll", "contact_ellipsoid_drop", "contact_polytopes"])
def test_examples_run_from_the_cli(tmp_path, name):
    from pathlib import Path

    f = Path(__file__).resolve().parents[3] / "resources" / "examples" / f"{name}.json"
    assert cli_main(["simulate", str(f), "--t-end", "0.3", "--out", str(tmp_path / "r.npz")]) == 0
    rec = load_npz(tmp_path / "r.npz")
    assert rec.completed and rec.n_frames == 31
    act = rec.active
    assert np.all(rec.gap[act] >= -1e-9)


def test_batched_pair_evaluation_agrees_with_the_one_pair_form():
    """eval_pairs (vectorised over pairs, the shapes' rows compiled) gives each pair's eval_pair rows, Jacobians and
    wrenches to rounding, for a batch mixing shapes of one layout and random states."""
    from core.contact.pair import eval_pairs
    from core.shapes.base import stack_rows

    rng = np.random.default_rng(7)
    lay = pair_layout(1, 1, 0.4, 0.05)
    shapes_a = [parse_shape({"type": "sphere", "radius": r}, "a") for r in (0.1, 0.2, 0.1, 0.1)]
    shapes_b = [parse_shape(d, "b") for d in ({"type": "halfspace", "normal": [0, 0, 1]}, {"type": "sphere", "radius": 0.3},
                                               {"type": "sphere", "radius": 0.3}, {"type": "halfspace", "normal": [0, 1, 1]})]
    P = len(shapes_a)
    R = lambda: np.array([quat_to_matrix(rng.standard_normal(4)) for _ in range(P)])  # noqa: E731
    RA0, RB0 = R(), R()
    pA0, pB0, cA, cB = (rng.standard_normal((P, 3)) for _ in range(4))
    vA, wA, vB, wB = rng.standard_normal((P, 3)), 20 * rng.standard_normal((P, 3)), rng.standard_normal((P, 3)), 20 * rng.standard_normal((P, 3))
    z = np.concatenate((rng.standard_normal((P, 6)), rng.random((P, lay.size - 6))), axis=1)
    z[1, lay.s] = -z[1, lay.s]  # one penetrating pair
    mu = np.array([0.4, 0.3, 0.4, 0.5])
    m_ref = rng.random(P) + 0.5
    e_aux = np.tile([0.0, 0.0, 1.0], (P, 1))
    e_aux[3] = [1.0, 0.0, 0.0]
    ell = (1.0, 0.7, 0.05)
    out = eval_pairs(lay, 0.01, mu, ell, m_ref, e_aux, stack_rows(shapes_a), pA0, RA0, cA, vA, wA,
                     stack_rows(shapes_b), pB0, RB0, cB, vB, wB, z)
    for p in range(P):
        one = eval_pair(lay, 0.01, mu[p], ell, m_ref[p], e_aux[p], shapes_a[p], pA0[p], RA0[p], cA[p], vA[p], wA[p],
                        shapes_b[p], pB0[p], RB0[p], cB[p], vB[p], wB[p], True, z[p])
        for got, want in zip(out, one):
            np.testing.assert_allclose(got[p], want, rtol=1e-12, atol=1e-12)
    # the values-only form (the line search's) gives the same rows and wrenches, bit for bit, and no Jacobians
    vals = eval_pairs(lay, 0.01, mu, ell, m_ref, e_aux, stack_rows(shapes_a), pA0, RA0, cA, vA, wA,
                      stack_rows(shapes_b), pB0, RB0, cB, vB, wB, z, jac=False)
    for i in (0, 2, 4):
        np.testing.assert_array_equal(vals[i], out[i])
    assert vals[1] is vals[3] is vals[5] is None


@pytest.mark.parametrize("rho", [0.0, 1.0])
def test_batch_rows_is_the_batched_evaluation_then_the_body_blocks(rho):
    """kernels.batch_rows (the implicit step's one compiled call per batch) gives what its parts give: the pairs'
    unknowns gathered from the step's z and their bodies' velocities from its body rows, eval_pairs' rows (the normal
    row less floor / h, a kept overlap), and body_blocks' velocity changes subtracted from the body rows and the
    Jacobian blocks; the values-only call gives the same rows and body rows bit for bit."""
    from core.contact.kernels import batch_rows, body_blocks
    from core.contact.pair import PIN_SPEED, eval_pairs
    from core.shapes.base import stack_rows

    rng = np.random.default_rng(11)
    lay = pair_layout(1, 1, 0.4, 0.05)
    shapes_a = [parse_shape({"type": "sphere", "radius": r}, "a") for r in (0.1, 0.2, 0.15)]
    shapes_b = [parse_shape({"type": "sphere", "radius": r}, "b") for r in (0.3, 0.1, 0.2)]
    P, nb = 3, 4
    ka, kb = np.array([0, 1, 3]), np.array([2, 3, 1])  # the pairs' bodies among the step's dynamic bodies
    V = rng.standard_normal((nb, 6))
    R = lambda: np.array([quat_to_matrix(rng.standard_normal(4)) for _ in range(P)])  # noqa: E731
    RA0, RB0 = R(), R()
    pA0, pB0, cA, cB = (rng.standard_normal((P, 3)) for _ in range(4))
    size = lay.size
    zidx = 6 * nb + rng.permutation(P * size).reshape(P, size)  # the pair blocks' places in the step's unknowns
    z = rng.standard_normal(6 * nb + P * size)
    z[zidx[:, 6:]] = rng.random((P, size - 6))
    mu, m_ref = np.array([0.4, 0.3, 0.5]), rng.random(P) + 0.5
    e_aux = np.tile([0.0, 0.0, 1.0], (P, 1))
    ell = (1.0, 0.7, 0.05)
    floor = np.array([-2e-10, 0.0, -4.5e-10])
    SA, SB = (rng.standard_normal((P, 6, 6)) for _ in range(2))
    valid = np.arange(12 + size)
    Fb0 = rng.standard_normal((nb, 6))
    ra, rb = stack_rows(shapes_a), stack_rows(shapes_b)
    h = 0.01

    def batch(jac):
        Fb = Fb0.copy()
        r, blk = batch_rows(lay.m, lay.k, lay.nf, h, mu, *ell, PIN_SPEED, m_ref, e_aux, *ra, RA0, pA0, cA, *rb, RB0,
                            pB0, cB, V, ka, kb, True, z, zidx, floor, SA, SB, valid, Fb, jac, rho)
        return r, blk, Fb

    r, blk, Fb = batch(True)
    zp = z[zidx]
    ref = eval_pairs(lay, h, mu, ell, m_ref, e_aux, ra, pA0, RA0, cA, V[ka, :3], V[ka, 3:], rb, pB0, RB0, cB,
                     V[kb, :3], V[kb, 3:], zp, rho=rho)
    r_ref = ref[0].copy()
    r_ref[:, lay.pn] -= floor / h  # the normal row (s - floor) / h
    Fb_ref = Fb0.copy()
    _dA, _dB, blk_ref = body_blocks(SA, ref[2], ref[3], SB, ref[4], ref[5], ref[1], valid, True, True, Fb_ref, ka, kb)
    np.testing.assert_allclose(r, r_ref, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(Fb, Fb_ref, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(blk, blk_ref, rtol=1e-13, atol=1e-13)
    assert not np.allclose(Fb, Fb0)  # (the pairs' impulses do move their bodies)
    r_v, _blk, Fb_v = batch(False)
    np.testing.assert_array_equal(r_v, r)
    np.testing.assert_array_equal(Fb_v, Fb)


def test_impulses_of_a_halved_step_are_the_total_split_along_the_end_normal():
    """Two half steps with normals 0.1 rad apart: the merged contact keeps the total impulse vector the body
    received, and its friction part is tangential to the reported (end-of-step) normal."""
    from core.contact.stepper import ContactResult, _merge_contacts

    th = 0.1
    n1, n2 = np.array([0.0, 0.0, 1.0]), np.array([np.sin(th), 0.0, np.cos(th)])
    t1 = np.array([0.0, 1.0, 0.0])  # tangential to both normals
    pts = np.zeros(3)
    c1 = ContactResult(3, pts, pts, n1, 0.0, 2.0, 0.5 * t1, 0.0, np.zeros(3), 0.4)
    c2 = ContactResult(3, pts, pts, n2, 0.0, 1.0, 0.3 * t1, 0.0, np.zeros(3), 0.4)
    (m,) = _merge_contacts([c1], [c2])
    total = 2.0 * n1 + 0.5 * t1 + 1.0 * n2 + 0.3 * t1
    np.testing.assert_allclose(m.pn * m.normal + m.pf, total, atol=1e-15)
    assert abs(m.pf @ n2) < 1e-15
    # by hand: total . n2 = 2 cos(th) + 1
    assert m.pn == pytest.approx(2.0 * np.cos(th) + 1.0, rel=1e-15)


def test_a_pair_the_broad_phase_missed_is_solved_when_the_step_carries_a_body_into_it():
    """A ball at rest 5 mm above the floor, no gravity, pushed down by 100 N: the broad phase judges reach by the
    start-of-step velocity (zero) and leaves the pair out, but the step moves the ball 10 mm. The step must be
    solved again with the pair, landing exactly on the floor."""
    from core.contact import build_model, initial_state, step

    r, m, h, f, gap0 = 0.05, 1.0, 0.01, 100.0, 0.005
    mech = mechanism([floor(), body("ball", {"type": "sphere", "radius": r}, mass=m, position=(0, 0, r + gap0))],
                     gravity=(0, 0, 0))
    model = build_model(mech, forces={"ball": ((0, 0, -f), (0, 0, 0))})
    st = initial_state(model)
    from core.contact.closest import candidate_pairs

    assert candidate_pairs(model, st, h)[0] == []  # out of range at the start of the step
    res = step(model, st, h)
    assert res.converged
    ib = model.names.index("ball")
    # without contact the ball would move h^2 f/m = 10 mm, through the floor; with it the end gap is zero:
    # z = r, v = -gap0/h, and the normal impulse is the momentum change against free motion (v_free = -h f/m):
    # p_n = m (v - v_free) = -m gap0/h + h f
    assert res.state.p[ib][2] == pytest.approx(r, abs=1e-12)
    assert res.state.v[ib][2] == pytest.approx(-gap0 / h, abs=1e-9)
    (c,) = [c for c in res.contacts if c.pn > 0]
    assert c.pn == pytest.approx(m * (-gap0 / h) + h * f, rel=1e-9)


def test_prepare_kernels_compiles_every_kernel_of_the_step():
    """prepare_kernels (the CLI calls it before a run, so a machine's first compile happens up front, with a note)
    takes every compiled path of the step: each kernel then has a compiled signature (in a fresh process, where no
    other test has called them)."""
    import subprocess
    import sys

    code = ("from core.contact import kernels, prepare_kernels; prepare_kernels(); "
            "print(','.join(n for n in kernels.__all__ if not getattr(kernels, n).signatures))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[3])
    assert out.stdout.strip() == ""


def test_warm_normal_impulses_are_rescaled_to_the_step_size():
    """A sphere resting on a plane: the normal impulse per step is m g h, so a warm start taken from a step of another
    size starts from the impulse of this one (and the step converges at its starting point)."""
    from core.contact.stepper import _rescaled_impulse

    model = build_model(mechanism([floor(), body("ball", {"type": "sphere", "radius": 0.1}, position=(0, 0, 0.1))]))
    st = initial_state(model)
    for _ in range(3):  # settle at h = 0.01
        st = step(model, st, 0.01).state
    (ip, warm), = st.warm.items()
    assert warm["h"] == 0.01
    pn_full = warm["z"][-4]  # layout tail: pn, phi_t, phi_o, sig
    # the weight's impulse over the step, per m_ref (= the sphere's mass against a static plane): g h
    assert pn_full == pytest.approx(G * 0.01, rel=1e-9)
    tail = _rescaled_impulse(warm, warm["z"][-4:], 0.0025)
    assert tail[0] == pytest.approx(G * 0.0025, rel=1e-9)  # the quarter step's impulse
    np.testing.assert_array_equal(tail[1:], warm["z"][-3:])  # friction unknowns unchanged
    # the quarter step from that warm start: already at its solution
    r = step(model, st, 0.0025)
    assert r.converged and r.iterations <= 1
    assert r.state.warm[ip]["h"] == 0.0025


def test_broad_phase_bounds_against_a_tilted_plane_and_a_sphere_by_hand():
    """The compiled broad phase (kernels.broad_bounds): a ball of radius r at height 1 m above the origin, a ground
    half-space {n.x <= 0} whose body is turned by 30 degrees about x, and a second ball 0.5 m beside the first.
    By hand: the plane's world normal is R_x(30) e_z = (0, -sin 30, cos 30), so the ball's centre is cos 30 above it
    and the lower bound of the gap is cos 30 - r; the two balls' bound is 0.5 - 2 r. The margin is what a step can
    close: 2 h (c + h |g|) + 1 mm + 2 % of A's radius, c the speed at which the gap bound closes."""
    from core.contact.closest import candidate_pairs

    r, h, th = 0.1, 0.01, math.radians(30)
    q = [math.cos(th / 2), math.sin(th / 2), 0, 0]
    ground = floor()
    ground["pose"] = {"position": [0, 0, 0], "orientation": q}
    mech = mechanism([ground, body("a", {"type": "sphere", "radius": r}, position=(0, 0, 1), linear=(3, 0, 0),
                                   angular=(0, 4, 0)),
                      body("b", {"type": "sphere", "radius": r}, position=(0.5, 0, 1))])
    model = build_model(mech)
    st = initial_state(model)
    cand, lb = candidate_pairs(model, st, h)
    ia, ib = model.names.index("a"), model.names.index("b")
    ifl = model.names.index("floor")
    pair = {(a, b): k for k, (a, b, _mu) in enumerate(model.pairs)}
    k_floor = pair.get((ia, ifl))
    k_ab = pair.get((ia, ib), pair.get((ib, ia)))
    assert lb[k_floor] == pytest.approx(math.cos(th) - r, abs=1e-12)
    assert lb[k_ab] == pytest.approx(0.5 - 2 * r, abs=1e-12)
    assert cand == []  # both far outside the margins, 2 h (3 + h g) + 1 mm + 2 mm < 0.1 m (a runs at b at 3 m/s)
    # brought within reach: the ball 1 mm above the tilted plane along its normal is a candidate
    n = np.array([0.0, -math.sin(th), math.cos(th)])
    st.p[ia] = (r + 1e-3) * n
    cand, lb = candidate_pairs(model, st, h)
    assert lb[k_floor] == pytest.approx(1e-3, abs=1e-12) and k_floor in cand


def test_broad_phase_margin_counts_only_the_speed_that_closes_the_gap():
    """Two balls (r = 0.05 m) 20 mm apart without gravity: the broad phase's margin (kernels.broad_bounds) is
    2 h c + 1 mm + 2 % of r (2 mm), c the speed at which the distance of their centres falls.  A ball bounding volume is centred
    on the centre of mass, so a spin moves nothing, and by convexity of the norm a sideways motion does not close the
    gap (|d + h u| >= |d| + h u . d/|d|): the pair is no candidate however fast ball a slides past or spins (before,
    2 h (|v| + |w| r) counted both).  Moving at ball b, it is one once the margin exceeds the gap: c = 1.5 m/s gives
    32 mm at h = 0.01 s, c = 0.5 m/s gives 12 mm.  A half-space under a ball 3 mm above it: the plane's own motion
    counts (rising at 0.2 m/s, 4 + 2 mm), its sideways motion not."""
    from core.contact.closest import candidate_pairs

    r, h, gap = 0.05, 0.01, 0.02
    mech = mechanism([body("a", {"type": "sphere", "radius": r}, position=(0, 0, 0)),
                      body("b", {"type": "sphere", "radius": r}, position=(2 * r + gap, 0, 0))], gravity=(0, 0, 0))
    model = build_model(mech)
    st = initial_state(model)
    ia = model.names.index("a")
    (k,) = range(len(model.pairs))
    for v, w, within in (((0, 3, 0), (0, 0, 40), False),  # sliding past at 3 m/s and spinning: no closing speed
                         ((1.5, 0, 0), (0, 0, 0), True),  # 30 + 2 mm > 20 mm
                         ((0.5, 0, 0), (0, 0, 0), False),  # 10 + 2 mm < 20 mm
                         ((-1.5, 0, 0), (0, 0, 0), False)):  # moving away
        st.v[ia], st.w[ia] = v, w
        cand, lb = candidate_pairs(model, st, h)
        assert lb[k] == pytest.approx(gap, abs=1e-12)
        assert (cand == [k]) is within, (v, w)
    # a half-space whose body moves (as a driven one does), under a ball 3 mm above it
    ground = floor()
    mech = mechanism([ground, body("ball", {"type": "sphere", "radius": r}, position=(0, 0, r + 3e-3))],
                     gravity=(0, 0, 0))
    model = build_model(mech)
    st = initial_state(model)
    ig = model.names.index("floor")
    (k,) = range(len(model.pairs))
    assert candidate_pairs(model, st, h)[0] == []  # 1 mm + 2 % of r: 2 mm < 3 mm
    st.v[ig] = (5.0, 0.0, 0.0)  # sliding sideways: no closing speed
    assert candidate_pairs(model, st, h)[0] == []
    st.v[ig] = (0.0, 0.0, 0.2)  # rising at 0.2 m/s: 4 + 2 mm > 3 mm
    assert candidate_pairs(model, st, h)[0] == [k]


def test_broad_phase_keeps_a_solved_pair_within_twice_its_margin():
    """candidate_pairs(keep=...): a pair solved last step stays a candidate while its gap bound is within twice its
    margin, and no further; a new pair needs the margin itself; indices that are not pairs of the model are ignored.
    A ball (r = 0.1 m) at rest above a flat floor (g = 9.81): by hand its margin is 2 h^2 g + 1 mm + 2 % of r, and
    the gap bound is its height minus r."""
    from core.contact.closest import candidate_pairs

    r, h = 0.1, 0.01
    margin = 2 * h * h * G + 1e-3 + 0.02 * r
    model = build_model(mechanism([floor(), body("ball", {"type": "sphere", "radius": r}, position=(0, 0, 1))]))
    st = initial_state(model)
    ib = model.names.index("ball")
    (k,) = range(len(model.pairs))
    for gap, alone, kept in ((0.5 * margin, True, True), (1.5 * margin, False, True), (2.5 * margin, False, False)):
        st.p[ib] = (0.0, 0.0, r + gap)
        cand, lb = candidate_pairs(model, st, h)
        assert lb[k] == pytest.approx(gap, abs=1e-12)
        assert (cand == [k]) is alone
        assert (candidate_pairs(model, st, h, keep={k: None}.keys())[0] == [k]) is kept
        assert (candidate_pairs(model, st, h, keep=[-1, k, len(model.pairs)])[0] == [k]) is kept


def test_run_frames_cross_product_is_numpys_to_the_bit():
    """A run's frames compute the origins' velocities v - w x r with recording._cross_rows, numpy's cross product
    without its axis handling: the same operations in the same order, so the same bits (recordings do not change)."""
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=(50, 3)) * 10.0 ** rng.integers(-8, 8, (50, 1)), rng.normal(size=(50, 3))
    np.testing.assert_array_equal(recording_mod._cross_rows(a, b), np.cross(a, b))
    assert recording_mod._cross_rows(a[:0], b[:0]).shape == (0, 3)


def test_free_motion_rows_of_a_spinning_body_by_hand():
    """kernels.body_rows: c = (v0 + h (g + f/m), w_free), w_free the free rotation by the implicit midpoint rule of
    Euler's equations in the body frame, Ib (w2 - w1) + h wm x Ib wm = h tau, wm = (w1 + w2) / 2, w1 = R^T w0.
    A box (principal moments I1 != I2 != I3) turned 90 degrees about z and spinning about the world x+y direction:
    the midpoint equation holds, the kinetic energy and |Ib w| are those of the start (the rule keeps both quadratic
    invariants of Euler's equations), and w_free differs from the explicit Euler step
    w0 + h I0^-1 (-w0 x I0 w0), I0 = diag(I2, I1, I3) by hand, by O(h^2); M^-1 = diag(1/m, 1/m, 1/m, 1/I2, 1/I1, 1/I3).
    A sphere (isotropic: no gyroscopic term) gets w0 + h I0^-1 (tau - w0 x I0 w0) exactly (the term is zero to
    rounding)."""
    from core.contact.kernels import body_rows
    from core.contact.closest import _rot

    m, (a, b, c) = 2.0, (0.4, 0.2, 0.1)
    I1, I2, I3 = m * (b * b + c * c) / 12, m * (a * a + c * c) / 12, m * (a * a + b * b) / 12  # box about its axes
    q = [math.cos(math.pi / 4), 0, 0, math.sin(math.pi / 4)]
    w0 = np.array([1.5, 1.5, 0.0])
    mech = mechanism([floor(), body("box", {"type": "box", "size": [a, b, c]}, mass=m, position=(0, 0, 1),
                                    orientation=q, angular=tuple(w0)),
                      body("ball", {"type": "sphere", "radius": 0.1}, mass=m, position=(1, 0, 1),
                           orientation=q, angular=(3.0, -1.0, 2.0))])
    model = build_model(mech)
    st = initial_state(model)
    h = 0.01
    dyn = model.dynamic_bodies
    R = _rot(st.q)
    cb, S, ok = body_rows(h, dyn, R, model.inertia_body, model.inertia_inv, model.mass, st.v, st.w,
                          model.gravity, model.force, model.torque)
    assert ok.all()
    np.testing.assert_allclose(cb[0, :3], h * np.array([0, 0, -G]), atol=1e-15)
    Ib = np.diag([I1, I2, I3])
    w1 = R[dyn[0]].T @ w0
    w2 = R[dyn[0]].T @ cb[0, 3:]
    wm = 0.5 * (w1 + w2)
    np.testing.assert_allclose(Ib @ (w2 - w1) + h * np.cross(wm, Ib @ wm), 0.0, atol=1e-15)
    assert w2 @ Ib @ w2 == pytest.approx(w1 @ Ib @ w1, rel=1e-14)
    assert np.linalg.norm(Ib @ w2) == pytest.approx(np.linalg.norm(Ib @ w1), rel=1e-14)
    I0 = np.diag([I2, I1, I3])
    explicit = w0 + h * np.linalg.solve(I0, -np.cross(w0, I0 @ w0))  # (0, 0, 1.5^2 (I1 - I2)) / I3 along z
    # the two differ by h^2 |dw/dt| |d(dw/dt)/dw| / 2 at most, to first order: |dw/dt| = |w x I w| / I3 <= |w|^2 here
    # (|I_i - I_j| <= I3 for a box), and its derivative in w at most 2 |w| likewise
    assert np.max(np.abs(cb[0, 3:] - explicit)) <= h * h * np.linalg.norm(w0) ** 3
    assert np.max(np.abs(cb[0, 3:] - explicit)) > 0.0
    np.testing.assert_allclose(S[0], np.diag([1 / m] * 3 + [1 / I2, 1 / I1, 1 / I3]), rtol=1e-12, atol=1e-12)
    # the sphere: the explicit form, bit for bit
    wb = st.w[dyn[1]]
    Iw0 = R[dyn[1]] @ model.inertia_body[dyn[1]] @ R[dyn[1]].T
    assert np.max(np.abs(cb[1, 3:] - (wb + h * np.linalg.solve(Iw0, -np.cross(wb, Iw0 @ wb))))) <= 1e-15


def test_a_spin_too_fast_for_the_step_is_halved_and_keeps_its_energy():
    """A box spinning at 870 rad/s (8.7 rad a step at h = 0.01): the free rotation's midpoint equation has no Newton
    solution from the start at h (kernels._gyro_midpoint) but has one at h/2, so the step fails with that reason and is
    taken in halves; the run completes and keeps the kinetic energy (no contact, no gravity) to rounding."""
    import core.contact.stepper as stp
    from core.contact.kernels import _gyro_midpoint

    w0 = (-345.0, -512.0, 549.0)
    mech = mechanism([body("b", {"type": "box", "size": [0.3, 0.2, 0.1]}, mass=0.5, position=(0, 0, 1),
                           angular=w0)], gravity=(0, 0, 0))
    model = build_model(mech)
    w2 = np.empty(3)
    assert not _gyro_midpoint(model.inertia_body[0], np.array(w0), np.zeros(3), 0.01, w2)
    assert np.all(np.isfinite(w2))
    assert _gyro_midpoint(model.inertia_body[0], np.array(w0), np.zeros(3), 0.005, w2)
    r = stp._step_once(model, initial_state(model), 0.01, "implicit", 1e-10, 60)
    assert not r.converged and r.reason.startswith("the free rotation of body 'b' did not converge")
    rec = simulate(model, t_end=0.1, dt=0.01)
    assert rec.completed and rec.halvings[1] >= 1
    KE = rec.kinetic_energy()
    np.testing.assert_allclose(KE, KE[0], rtol=1e-12)


@pytest.mark.parametrize("method", ["implicit", "explicit"])
def test_a_step_too_long_for_a_box_to_turn_in_is_refused_and_the_run_never_gains_energy(method):
    """contact_box_slide (a 0.2 m box sliding at 2 m/s on a floor, mu 0.3) in steps of 1 s.  The step's rotation
    cayley(h w / 2) turns a body by 2 atan(h |w| / 2), never more than half a turn, so the equations have spurious
    solutions: the explicit method's step (also the implicit step's predictor for one or two new pairs) rolled the
    box at 12 rad/s, from which the implicit step went on to 95 rad a step (half a turn: a cube looks the same) and
    sped the box up from 2 to 20 m/s in five steps; the explicit method's box ended 2.3 m under the floor.  A step
    whose box turns by more than stepper._MAX_TURN rad is refused (and halved).  Checked: that refusal, no recorded
    turn above the bound, and the energy (kinetic plus m g z of the centre of mass) never above its start, as nothing
    but friction and the floor act on the box."""
    import core.contact.stepper as stp
    from core import io

    mech = io.load(Path(__file__).resolve().parents[3] / "resources" / "examples" / "contact_box_slide.json")
    model = build_model(mech)
    b = model.names.index("box")
    r = stp._step_once(model, initial_state(model), 1.0, "explicit", stp._TOL["explicit"], 60)
    assert not r.converged and r.reason.startswith(stp._TURNED) and "'box' turns by 12 rad" in r.reason
    rec = simulate(model, t_end=5.0, dt=1.0, method=method)
    assert rec.completed
    m, g = model.mass[b], -model.gravity[2]
    b = rec.body_names.index("box")  # (the recording's bodies are the moving ones)
    z = np.array([(quat_to_matrix(rec.orientation[k, b]) @ rec.com[b] + rec.position[k, b])[2]
                  for k in range(rec.n_frames)])
    E = rec.kinetic_energy() + m * g * z
    # (in steps this long the first-order scheme is far from exact: the box tips onto an edge, and the explicit
    # method's box jumps; but it never has more energy than it started with, where it reached 200 J/kg)
    assert np.all(E <= E[0] * (1 + 1e-9)), E
    # every step's end turn within the bound, for the sub-step it ended (the recorded w is a step's last sub-step's)
    h_end = 1.0 / 2.0 ** rec.halvings
    assert np.all(h_end * np.linalg.norm(rec.angular[:, b], axis=1) <= stp._MAX_TURN + 1e-12)


@pytest.mark.parametrize("method", ["implicit", "explicit"])
def test_a_spin_no_halving_can_take_is_refused_at_its_angular_velocity(method):
    """A box spinning at w in steps of h: the deepest halving (h / 2**8) still turns it by h |w| / 256 rad, over the
    2 rad a step may turn a body. Such a run stopped at t = 0 with a nested solver reason, for both methods (user test:
    1e6 rad/s); it is refused before its first step, at the body's angular velocity, with the time step that would
    do (2 / |w|). Just under the limit the run completes (halved)."""
    import core.contact.stepper as stp

    h = 0.01
    limit = stp._MAX_TURN * 2.0**stp._MAX_HALVINGS / h  # 51,200 rad/s

    def spinning(w):
        box = body("box", {"type": "box", "size": [0.1, 0.1, 0.1]}, position=(0, 0, 0.2), angular=(0, 0, w))
        return build_model(mechanism([floor(), box]))

    with pytest.raises(LinkwrightError) as err:
        simulate(spinning(1e6), t_end=0.02, dt=h, method=method)
    assert err.value.location == "bodies[1].velocity.angular"
    assert err.value.message == ("'box' spins at 1e+06 rad/s, too fast for steps of 0.01 s: a step may turn a body "
                                 "by at most 2 rad (h |w|), and even halved as far as it goes (to 3.91e-05 s) it "
                                 "would turn 39.1 rad; use a time step of at most 2e-06 s or a slower spin")
    assert simulate(spinning(0.9 * limit), t_end=0.02, dt=h, method=method).completed
    ball = body("ball", {"type": "sphere", "radius": 0.05}, position=(0, 0, 0.2), angular=(0, 0, 1e6))
    # a sphere's shape does not turn with it: any spin is taken
    assert simulate(build_model(mechanism([floor(), ball])), t_end=0.02, dt=h, method=method).completed


@pytest.mark.parametrize("rho,branch", [(1.0, "stick"), (1.0, "slide"), (0.3, "slide"), (-1.0, "cone")])
@pytest.mark.parametrize("e_r", [0.0, 0.05])
def test_impulse_form_jacobians_match_finite_differences(rho, branch, e_r):
    """The friction rows in the Alart-Curnier form (rho > 0; x = q - rho e v inside the disc |x| <= mu pn: sticking
    rows rho e v; outside: sliding rows q - mu pn x/|x|) and in the conic form (rho < 0: rows e v), and the wrenches,
    linear in the impulses q: their analytic Jacobians against central differences, with a dynamic B."""
    from core.contact.pair import eval_pairs
    from core.shapes.base import stack_rows

    rng = np.random.default_rng(11)
    sa = parse_shape({"type": "box", "size": [0.3, 0.2, 0.1]}, "a")
    sb = parse_shape({"type": "ellipsoid", "radii": [0.3, 0.2, 0.1]}, "b")
    lay = pair_layout(sa.m, sb.m, 0.4, e_r)
    RA0, RB0 = quat_to_matrix(rng.standard_normal(4))[None], quat_to_matrix(rng.standard_normal(4))[None]
    pA0, pB0 = rng.standard_normal((1, 3)), rng.standard_normal((1, 3))
    cA, cB = 0.1 * rng.standard_normal((1, 3)), 0.1 * rng.standard_normal((1, 3))
    x = np.concatenate((rng.standard_normal(3), 2 * rng.standard_normal(3), rng.standard_normal(3),
                        2 * rng.standard_normal(3), rng.standard_normal(6), rng.random(lay.size - 6)))
    o, pn, mu = 12, 0.5, 0.4
    iq = slice(o + lay.pf, o + lay.pf + lay.nf)
    x[o + lay.pn] = pn
    m_ref, e_aux = np.array([1.3]), np.array([[0.0, 0.0, 1.0]])
    ga, gb = stack_rows([sa]), stack_rows([sb])

    def f(xx, rho=rho):
        return eval_pairs(lay, 0.01, np.array([mu]), (1.0, 0.7, e_r), m_ref, e_aux, ga, pA0, RA0, cA, xx[None, 0:3],
                          xx[None, 3:6], gb, pB0, RB0, cB, xx[None, 6:9], xx[None, 9:12], xx[None, 12:], rho=rho)

    xi = f(x, -1.0)[0][0, lay.pf:lay.pf + lay.nf]  # the conic form's rows are the sliding speeds e_k v_k
    # impulses that put x = q - rho xi inside the disc of radius mu pn (|x| = mu pn / 2) or outside it (3 mu pn)
    d = rng.standard_normal(lay.nf)
    d /= np.linalg.norm(d)
    x[iq] = max(rho, 0.0) * xi + (0.5 if branch == "stick" else 3.0) * mu * pn * d
    r, J, WA, JWA, WB, JWB = f(x)
    if branch == "stick":
        np.testing.assert_allclose(r[0, lay.pf:lay.pf + lay.nf], rho * xi, rtol=1e-12)
    elif branch == "slide":  # q - mu pn d
        np.testing.assert_allclose(r[0, lay.pf:lay.pf + lay.nf], x[iq] - mu * pn * d, rtol=1e-12, atol=1e-15)
    eps = 1e-6
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        p, m = f(x + e), f(x - e)
        np.testing.assert_allclose(J[0, :, i], (p[0][0] - m[0][0]) / (2 * eps), atol=2e-6, rtol=1e-5)
        np.testing.assert_allclose(JWA[0, :, i], (p[2][0] - m[2][0]) / (2 * eps), atol=2e-6, rtol=1e-5)
        np.testing.assert_allclose(JWB[0, :, i], (p[4][0] - m[4][0]) / (2 * eps), atol=2e-6, rtol=1e-5)


def test_cold_attempt_ignores_a_corrupted_warm_start():
    """The step's second attempt starts cold (closest points from the start poses, no impulse): a warm start whose
    closest points and impulses are wrong (points a metre off, a huge impulse) cannot mislead it, and the step then
    gives the clean step's result."""
    import core.contact.stepper as stp

    R0 = 0.1
    mech = mechanism([floor(), body("s", {"type": "sphere", "radius": R0}, position=(0, 0, R0))], mu=0.5)
    model = build_model(mech)
    st = step(model, initial_state(model), 0.01).state  # resting: a warm start for every pair
    clean = step(model, st, 0.01)
    bad = st.copy()
    bad.warm = {ip: dict(w, z=w["z"] + np.r_[np.ones(6), np.zeros(w["z"].size - 6)] + 100.0 * (np.arange(w["z"].size) >= 6))
                for ip, w in st.warm.items()}
    cold = stp._step_once(model, bad, 0.01, "implicit", 1e-10, 60, form="ac", cold=True, ws=stp.Workspace())
    assert clean.converged and cold.converged
    np.testing.assert_allclose(cold.state.p, clean.state.p, atol=1e-12)
    np.testing.assert_allclose(cold.state.v, clean.state.v, atol=1e-10)
    # the sphere rests: the normal impulse is its weight over the step, m g h (m = 1)
    assert sum(c.pn for c in cold.contacts) == pytest.approx(G * 0.01, rel=1e-9)
    again = step(model, bad, 0.01)  # the whole step: whichever attempt converges, the same motion
    assert again.converged
    np.testing.assert_allclose(again.state.p, clean.state.p, atol=1e-12)


@pytest.mark.parametrize("dyn_b", [False, True])
@pytest.mark.parametrize("e_r", [0.0, 0.05])
@pytest.mark.parametrize("rho", [1.0, 0.0, -1.0])
def test_batched_explicit_pair_evaluation_agrees_with_the_one_pair_form(dyn_b, e_r, rho):
    """The explicit method's batched rows (_eval_explicit_batch, compiled) give each pair's one-pair numpy rows
    (_eval_explicit), Jacobians and wrenches to rounding, on random states: under the Alart-Curnier form (rho 1)
    pairs sticking, sliding and without load, under the normalised form (rho 0) and the conic form (rho -1)
    approaching and separating pairs; and the one-pair form's Jacobians are its central differences."""
    from types import SimpleNamespace

    from core.contact.explicit import _eval_explicit, _eval_explicit_batch, _explicit_size
    from core.contact.plan import _Pair

    rng = np.random.default_rng(11)
    P = 8
    mu = rng.uniform(0.2, 0.8, P)
    lay = pair_layout(0, 0, 0.5, e_r)
    nf, size = lay.nf, _explicit_size(lay)
    model = SimpleNamespace(ellipsoid=(1.0, 0.7, e_r))  # (the only field of the model the rows read)
    pA, pB = rng.standard_normal((P, 3)), rng.standard_normal((P, 3))
    state = SimpleNamespace(p=np.concatenate((pA, pB)))  # bodies A = 0..P-1, B = P..2P-1
    n = rng.standard_normal((P, 3))
    n /= np.linalg.norm(n, axis=1)[:, None]
    a1, a2 = pA + 0.2 * rng.standard_normal((P, 3)), pB + 0.2 * rng.standard_normal((P, 3))
    gap0 = 1e-3 * rng.standard_normal(P)
    e_aux = np.array([contact_frame_aux(x) for x in n])
    m_ref = rng.uniform(0.5, 2.0, P)
    vA, wA, vB, wB = (rng.standard_normal((P, 3)) for _ in range(4))
    if not dyn_b:
        vB[:], wB[:] = 0.0, 0.0
    h = 0.01
    z = np.concatenate((rng.uniform(0.0, 2.0, (P, 1)), rng.standard_normal((P, size - 1))), axis=1)
    z[0, 0] = 0.0  # a pair without load
    # pairs 1, 2 with no relative motion at the contact (A moves with B); under the Alart-Curnier form with impulses
    # inside their friction discs: sticking
    wA[1:3] = wB[1:3]
    vA[1:3] = vB[1:3] + np.cross(wB[1:3], a2[1:3] - pB[1:3]) - np.cross(wA[1:3], a1[1:3] - pA[1:3])
    if nf and rho > 0.0:
        z[1:3, 1:1 + nf] = 0.1 * mu[1:3, None] * z[1:3, :1]
    prs = [_Pair(ip=p, a=p, b=P + p, mu=mu[p], lay=lay, off=0, m_ref=m_ref[p], e_aux=e_aux[p], a1=a1[p], a2=a2[p],
                 n=n[p], gap0=gap0[p]) for p in range(P)]
    out = _eval_explicit_batch(nf, model, h, mu, m_ref, e_aux, n, a1 - pA, a2 - pB, gap0, vA, wA, vB, wB, dyn_b, z,
                               True, rho)
    assert out[0].shape == (P, size) and out[1].shape == (P, size, 12 + size) and out[3].shape == (P, 6, 12 + size)
    branches = set()
    for p in range(P):
        one = _eval_explicit(prs[p], model, state, vA[p], wA[p], vB[p], wB[p], dyn_b, z[p], h, rho)
        for got, want in zip(out[:4] + (out[4:] if dyn_b else ()), one[:4] + (one[4:] if dyn_b else ())):
            np.testing.assert_allclose(got[p], want, rtol=1e-12, atol=1e-12)
        # which branch of the friction law the pair is on, from its sliding speeds (e_t t, e_o o, e_r n) . v_rel
        vrel = vA[p] + np.cross(wA[p], a1[p] - pA[p]) - vB[p] - np.cross(wB[p], a2[p] - pB[p])
        t, o = tangent_frame(n[p], e_aux[p])
        xi = np.array([t @ vrel, 0.7 * (o @ vrel), e_r * (n[p] @ (wA[p] - wB[p]))])[:nf]
        x = z[p, 1:1 + nf] - rho * xi
        if rho > 0.0:
            branches.add("stick" if z[p, 0] > 0 and np.linalg.norm(x) <= mu[p] * z[p, 0] else
                         "slide" if z[p, 0] > 0 else "unloaded")
        else:
            branches.add("approaching" if one[0][0] < 0 else "separating")
    assert branches == ({"stick", "slide", "unloaded"} if rho > 0.0 else {"approaching", "separating"})
    # the analytic Jacobians of the rows and of A's wrench against central differences in the local unknowns
    # (vA, wA, vB, wB, the pair's block), each pair at its own point (away from the kinks of the friction law: not
    # the unloaded pair of the Alart-Curnier form, whose disc of radius mu pn closes at pn = 0)
    eps = 1e-6
    for p in range(1 if rho > 0.0 else 0, P):
        base = [vA[p], wA[p], vB[p], wB[p], z[p]]
        one = _eval_explicit(prs[p], model, state, *base[:4], dyn_b, base[4], h, rho)
        col = 0
        for k, x in enumerate(base):
            for i in range(x.size):
                if k in (2, 3) and not dyn_b:
                    col += 1
                    continue
                plus, minus = [y.copy() for y in base], [y.copy() for y in base]
                plus[k][i] += eps
                minus[k][i] -= eps
                fp = _eval_explicit(prs[p], model, state, *plus[:4], dyn_b, plus[4], h, rho)
                fm = _eval_explicit(prs[p], model, state, *minus[:4], dyn_b, minus[4], h, rho)
                np.testing.assert_allclose(one[1][:, col], (fp[0] - fm[0]) / (2 * eps), atol=1e-7)
                np.testing.assert_allclose(one[3][:, col], (fp[2] - fm[2]) / (2 * eps), atol=1e-7)
                col += 1
    # the values-only form gives the same rows and wrenches, bit for bit
    vals = _eval_explicit_batch(nf, model, h, mu, m_ref, e_aux, n, a1 - pA, a2 - pB, gap0, vA, wA, vB, wB, dyn_b, z,
                                False, rho)
    for i in (0, 2, 4):
        np.testing.assert_array_equal(vals[i], out[i])
