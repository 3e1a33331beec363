"""The interior-point MCP solver (core.contact.ipm) on problems with known solutions, and as a contact step solver."""

import numpy as np
import pytest

from core.contact import build_model, initial_state, step
from core.contact.elements import ElementMatrix
from core.contact.ipm import MCPProblem, SolverOptions, solve
from core.contact.stepper import Workspace


def _lcp(M, q):
    M, q = np.asarray(M, float), np.asarray(q, float)
    return MCPProblem(lambda z: (M @ z + q, M), np.zeros(q.size))


def test_lcp_with_a_known_active_set():
    # M = [[2, 1], [1, 2]], q = [-1, 1]: try z2 = 0 (bound active) -> 2 z1 - 1 = 0 -> z1 = 1/2, and then
    # F2 = z1 + 1 = 3/2 >= 0: the unique solution (M is positive definite) is z = (1/2, 0), F = (0, 3/2)
    res = solve(_lcp([[2, 1], [1, 2]], [-1, 1]), np.zeros(2))
    assert res.converged and res.status in (0, 6)
    assert res.z == pytest.approx([0.5, 0.0], abs=1e-9)
    assert res.iterations <= 30 and res.njev <= res.nfev


def test_degenerate_lcp_converges_to_zero():
    # M = I, q = 0: z = 0 with F = 0 too (every index degenerate: z_i = F_i = 0)
    res = solve(_lcp(np.eye(3), np.zeros(3)), np.ones(3))
    assert res.converged
    assert np.max(res.z) < 1e-6  # z_i F_i = z_i^2 <= comp_tol = 1e-14 -> z_i <= 1e-7


def test_redundant_constraints_solved_from_any_start():
    # M = [[1, 1], [1, 1]], q = [-1, -1]: every z >= 0 with z1 + z2 = 1 solves it (singular M: a statically
    # indeterminate pair of "impulses"; Newton on a complementarity function alone has a singular matrix here).
    # From a symmetric cold start the central path keeps z1 = z2 (z_i w_i = kappa with w_1 = w_2 = z1 + z2 - 1):
    # its limit is the continuum's middle (1/2, 1/2)
    res = solve(_lcp([[1, 1], [1, 1]], [-1, -1]), np.zeros(2), SolverOptions(local_from=0.0))
    assert res.converged and res.z == pytest.approx([0.5, 0.5], abs=1e-9)
    # from a lopsided start: some point of the continuum
    for z0 in ([0.9, 0.05], [3.0, 0.1]):
        res = solve(_lcp([[1, 1], [1, 1]], [-1, -1]), np.array(z0))
        assert res.converged
        assert res.z.sum() == pytest.approx(1.0, abs=1e-9) and np.all(res.z >= 0.0)


def _kojima_shindo(z):
    # the Kojima-Shindo NCP (a classic test problem: solutions (sqrt(6)/2, 0, 0, 1/2) and (1, 0, 3, 0))
    x1, x2, x3, x4 = z
    F = np.array([3 * x1**2 + 2 * x1 * x2 + 2 * x2**2 + x3 + 3 * x4 - 6,
                  2 * x1**2 + x1 + x2**2 + 3 * x3 + 2 * x4 - 2,
                  3 * x1**2 + x1 * x2 + 2 * x2**2 + 2 * x3 + 3 * x4 - 1,
                  x1**2 + 3 * x2**2 + 2 * x3 + 3 * x4 - 3])
    J = np.array([[6 * x1 + 2 * x2, 2 * x1 + 4 * x2, 1, 3],
                  [4 * x1 + 1, 2 * x2, 3, 2],
                  [6 * x1 + x2, x1 + 4 * x2, 2, 3],
                  [2 * x1, 6 * x2, 2, 3]], float)
    return F, J


def test_kojima_shindo_ncp_reaches_one_of_its_two_solutions():
    res = solve(MCPProblem(_kojima_shindo, np.zeros(4)), np.ones(4))
    assert res.converged
    known = [np.array([np.sqrt(6) / 2, 0, 0, 0.5]), np.array([1.0, 0, 3, 0])]
    assert min(np.max(np.abs(res.z - k)) for k in known) < 1e-7


def test_free_and_bounded_unknowns_mixed():
    # F0 = z0 - z1 - 1 (free), F1 = z1 + z0 - 3 with z1 >= 0: z1 > 0 needs z0 = 1 + z1 and 2 z1 + 1 - 3 = 0,
    # so z1 = 1, z0 = 2 (F1 = 0, z1 > 0: complementary)
    def fun(z):
        return np.array([z[0] - z[1] - 1, z[1] + z[0] - 3]), np.array([[1.0, -1.0], [1.0, 1.0]])

    res = solve(MCPProblem(fun, np.array([-np.inf, 0.0])), np.zeros(2))
    assert res.converged
    assert res.z == pytest.approx([2.0, 1.0], abs=1e-9)


def test_element_matrix_jacobian_gives_the_dense_answer():
    # the LCP of the first test with its Jacobian as one element block: the block-eliminated solve gives the same z
    M, q = np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([-1.0, 1.0])

    def fun(z):
        return M @ z + q, ElementMatrix(2, np.zeros(2), [(np.array([[0, 1]]), M[None], 1)])

    res = solve(MCPProblem(fun, np.zeros(2)), np.zeros(2))
    assert res.converged and res.z == pytest.approx([0.5, 0.0], abs=1e-9)


def test_cancel_stops_between_iterations():
    calls = []

    def cancel():
        calls.append(1)
        return len(calls) > 2

    res = solve(MCPProblem(_kojima_shindo, np.zeros(4)), np.ones(4), SolverOptions(local_from=0.0), cancel=cancel)
    assert not res.converged and res.status == 4 and res.reason == "cancelled"
    assert res.iterations == 2  # cancel is asked before each iteration: the third question stopped it


def test_iteration_limit_is_a_result_not_an_exception():
    # an LCP without solution (M = 0, q = -1: F = -1 < 0 for every z)
    res = solve(_lcp([[0.0]], [-1.0]), np.zeros(1), SolverOptions(max_iter=5))
    assert not res.converged and res.status in (1, 2, 3) and res.iterations <= 5


def _sphere_on_floor(v0):
    from core import io
    import json
    doc = {"format": "linkwright.mechanism", "version": 1, "space": "spatial", "gravity": [0, 0, -9.81],
           "bodies": [{"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1]}},
                      {"name": "ball", "mass": 1.0, "shape": {"type": "sphere", "radius": 0.1},
                       "pose": {"position": [0, 0, 0.1]}, "velocity": {"linear": [v0, 0, 0]}}],
           "contact": {"friction": 0.3}}
    return build_model(io.loads(json.dumps(doc)))


def test_interior_point_step_rolls_a_sliding_sphere_like_newton():
    # a sphere launched sliding at v0 on a plane: friction mu m g slows the centre and spins it up until it rolls
    # at 5/7 v0 (angular momentum about the contact point is conserved: m v0 r = m v r + (2/5) m r^2 w, v = w r)
    model = _sphere_on_floor(2.0)
    out = {}
    for solver in ("newton", "interior-point"):
        st, ws = initial_state(model), Workspace()
        for _ in range(150):
            r = step(model, st, 0.01, solver=solver, workspace=ws)
            assert r.converged, r.reason
            assert min(c.gap for c in r.contacts) >= -1e-9
            st = r.state
        out[solver] = st.v[1].copy()
    assert out["interior-point"][0] == pytest.approx(5.0 / 7.0 * 2.0, abs=1e-8)
    assert out["interior-point"] == pytest.approx(out["newton"], abs=1e-8)


def test_interior_point_step_is_cancelled_inside_the_solve():
    model = _sphere_on_floor(1.0)
    r = step(model, initial_state(model), 0.01, solver="interior-point", cancel=lambda: True)
    assert not r.converged and r.reason.startswith("cancelled")
