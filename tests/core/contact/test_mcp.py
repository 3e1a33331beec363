"""Tests of the semismooth Newton MCP solver on problems with known solutions."""

import numpy as np
import pytest
import scipy.sparse as sp

from core.contact.mcp import fb_function, natural_residual, solve_mcp


def _lcp(M, q):
    """F(z) = M z + q with its Jacobian (an LCP is an MCP with all bounds at 0)."""
    return lambda z: (M @ z + q, M)


def _random_monotone_lcp(n, rng, skew=True):
    """Monotone LCP with a planted complementary solution: M = A^T A (+ skew), z*, w* disjoint supports."""
    A = rng.standard_normal((n, n))
    M = A.T @ A / n
    if skew:
        S = rng.standard_normal((n, n))
        M = M + (S - S.T)  # skew part keeps M monotone (z^T M z unchanged)
    support = rng.random(n) < 0.5
    z_star = np.where(support, rng.random(n) + 0.1, 0.0)
    w_star = np.where(support, 0.0, rng.random(n) + 0.1)
    q = w_star - M @ z_star  # so that M z* + q = w*, complementary to z*
    return M, q, z_star


@pytest.mark.parametrize("n,seed", [(5, 0), (20, 1), (50, 2), (50, 3)])
def test_random_monotone_lcp_recovers_planted_solution(n, seed):
    rng = np.random.default_rng(seed)
    M, q, z_star = _random_monotone_lcp(n, rng)
    res = solve_mcp(_lcp(M, q), np.zeros(n), np.zeros(n))
    assert res.converged, res.reason
    assert res.residual <= 1e-10
    # M = A^T A/n + skew is positive definite for a square random A, so the solution is unique
    np.testing.assert_allclose(res.z, z_star, atol=1e-8)


def test_values_only_trials_of_the_line_search_give_the_same_iterates_with_fewer_jacobians():
    """fun_value is used at shortened trial points only; the iterates are those of the plain solve."""
    # Kojima-Shindo from (0,0,0,0): its first Newton steps are cut by the line search
    calls = {"jac": 0, "value": 0}

    def fun(x):
        calls["jac"] += 1
        return _kojima_shindo(x)

    def value(x):
        calls["value"] += 1
        return _kojima_shindo(x)[0]

    plain = solve_mcp(fun, np.zeros(4), np.zeros(4))
    n_plain = calls["jac"]
    calls["jac"] = 0
    fast = solve_mcp(fun, np.zeros(4), np.zeros(4), fun_value=value)
    assert fast.converged and plain.converged
    np.testing.assert_array_equal(fast.z, plain.z)
    assert fast.iterations == plain.iterations
    assert calls["value"] > 0 and calls["jac"] < n_plain
    # the result counts them: every call with the Jacobian, and every call in all
    assert (fast.njev, fast.nfev) == (calls["jac"], calls["jac"] + calls["value"])
    assert (plain.njev, plain.nfev) == (n_plain, n_plain)


def test_result_reports_status_and_residual_history():
    """The scipy-style fields: status 0 with the residual history ending at the tolerance (one entry per iterate,
    the start included); a problem without solution gives a nonzero status and its history."""
    rng = np.random.default_rng(5)
    M, q, _z = _random_monotone_lcp(8, rng)
    res = solve_mcp(_lcp(M, q), np.zeros(8), np.zeros(8), max_restarts=0)
    assert res.converged and res.status == 0
    assert len(res.history) == res.iterations + 1 and res.history[-1] == res.residual <= 1e-10
    assert res.history[0] == natural_residual(np.zeros(8), q, np.zeros(8))
    bad = solve_mcp(_lcp(np.zeros((1, 1)), np.array([-1.0])), np.zeros(1), np.zeros(1), max_iter=20, max_restarts=0)
    assert not bad.converged and bad.status in (1, 2, 3) and len(bad.history) >= 1


def test_sparse_lcp_uses_sparse_path_and_converges():
    rng = np.random.default_rng(7)
    n = 400
    # tridiagonal, strictly diagonally dominant: a P-matrix, unique solution
    main = 4.0 + rng.random(n)
    off = -rng.random(n - 1)
    M = sp.diags([off, main, off], [-1, 0, 1], format="csc")
    support = rng.random(n) < 0.5
    z_star = np.where(support, rng.random(n) + 0.1, 0.0)
    w_star = np.where(support, 0.0, rng.random(n) + 0.1)
    q = w_star - M @ z_star
    res = solve_mcp(lambda z: (M @ z + q, M), np.zeros(n), np.zeros(n))
    assert res.converged
    np.testing.assert_allclose(res.z, z_star, atol=1e-8)


def _kojima_shindo(x):
    """Kojima-Shindo NCP (Kojima & Shindo 1986), solutions (1,0,3,0) and (sqrt(6)/2,0,0,1/2)."""
    x1, x2, x3, x4 = x
    F = np.array([
        3 * x1**2 + 2 * x1 * x2 + 2 * x2**2 + x3 + 3 * x4 - 6,
        2 * x1**2 + x1 + x2**2 + 3 * x3 + 2 * x4 - 2,
        3 * x1**2 + x1 * x2 + 2 * x2**2 + 2 * x3 + 3 * x4 - 1,
        x1**2 + 3 * x2**2 + 2 * x3 + 3 * x4 - 3,
    ])
    J = np.array([
        [6 * x1 + 2 * x2, 2 * x1 + 4 * x2, 1, 3],
        [4 * x1 + 1, 2 * x2, 3, 2],
        [6 * x1 + x2, x1 + 4 * x2, 2, 3],
        [2 * x1, 6 * x2, 2, 3],
    ], dtype=float)
    return F, J


@pytest.mark.parametrize("z0", [[0, 0, 0, 0], [1, 1, 1, 1], [1, 0, 1, 0], [1, 0, 0, 0], [0.5, 2, 0.1, 3]])
def test_kojima_shindo_reaches_one_of_its_two_solutions(z0):
    res = solve_mcp(_kojima_shindo, np.array(z0, float), np.zeros(4))
    assert res.converged, res.reason
    sols = [np.array([1.0, 0, 3, 0]), np.array([np.sqrt(6) / 2, 0, 0, 0.5])]
    assert min(np.max(np.abs(res.z - s)) for s in sols) < 1e-7


def test_degenerate_lcp_with_both_sides_zero():
    # q = 0 and M = I: the solution z = 0 has z_i = F_i = 0 for every i (fully degenerate)
    n = 6
    res = solve_mcp(_lcp(np.eye(n), np.zeros(n)), np.ones(n), np.zeros(n))
    assert res.converged
    np.testing.assert_allclose(res.z, 0.0, atol=1e-9)


def test_rank_deficient_lcp_with_a_continuum_of_solutions():
    # M = [[1,1],[1,1]], q = [-1,-1]: every z >= 0 with z1 + z2 = 1 solves it; the Jacobian is singular there
    M = np.array([[1.0, 1.0], [1.0, 1.0]])
    q = np.array([-1.0, -1.0])
    res = solve_mcp(_lcp(M, q), np.array([3.0, 0.2]), np.zeros(2))
    assert res.converged, res.reason
    assert np.all(res.z >= -1e-12)
    assert abs(res.z.sum() - 1.0) < 1e-9


def test_mixed_problem_qp_kkt_matches_closed_form():
    # min 0.5|x|^2 - c.x  s.t.  x1 + x2 <= 1 with c = (1, 2): KKT x = c - y (1,1), y = max(0, (c1+c2-1)/2) = 1
    # so x = (0, 1), y = 1.  Unknowns (x1, x2 free; y >= 0 paired with the slack 1 - x1 - x2).
    c = np.array([1.0, 2.0])

    def fun(z):
        x, y = z[:2], z[2]
        F = np.array([x[0] - c[0] + y, x[1] - c[1] + y, 1.0 - x[0] - x[1]])
        J = np.array([[1.0, 0, 1], [0, 1.0, 1], [-1.0, -1.0, 0]])
        return F, J

    res = solve_mcp(fun, np.zeros(3), np.array([-np.inf, -np.inf, 0.0]))
    assert res.converged
    np.testing.assert_allclose(res.z, [0.0, 1.0, 1.0], atol=1e-10)


def test_penalised_fb_variant_also_converges():
    rng = np.random.default_rng(11)
    M, q, z_star = _random_monotone_lcp(30, rng)
    res = solve_mcp(_lcp(M, q), np.zeros(30), np.zeros(30), lam=0.9)
    assert res.converged
    np.testing.assert_allclose(res.z, z_star, atol=1e-8)


def test_unsolvable_lcp_is_a_result_not_an_exception():
    # M = 0, q = -1: F(z) = -1 < 0 for all z, no solution exists
    res = solve_mcp(_lcp(np.zeros((1, 1)), np.array([-1.0])), np.zeros(1), np.zeros(1), max_iter=20)
    assert not res.converged
    assert np.all(np.isfinite(res.z))
    assert res.reason


def test_warm_start_from_solution_takes_no_iterations():
    rng = np.random.default_rng(4)
    M, q, z_star = _random_monotone_lcp(10, rng)
    res = solve_mcp(_lcp(M, q), z_star, np.zeros(10))
    assert res.converged and res.iterations == 0


def test_fb_function_zero_exactly_on_complementarity_and_gradient_matches_fd():
    a = np.array([0.0, 2.0, 0.0, 1.0, -1.0, 0.3])
    b = np.array([3.0, 0.0, 0.0, 1.0, 0.5, -0.2])
    phi, da, db = fb_function(a, b)
    assert np.allclose(phi[:3], 0.0) and np.all(np.abs(phi[3:]) > 1e-3)
    eps = 1e-7
    for lam in (1.0, 0.8):
        phi, da, db = fb_function(a[3:], b[3:], lam)
        fda = (fb_function(a[3:] + eps, b[3:], lam)[0] - fb_function(a[3:] - eps, b[3:], lam)[0]) / (2 * eps)
        fdb = (fb_function(a[3:], b[3:] + eps, lam)[0] - fb_function(a[3:], b[3:] - eps, lam)[0]) / (2 * eps)
        np.testing.assert_allclose(da, fda, atol=1e-6)
        np.testing.assert_allclose(db, fdb, atol=1e-6)


def test_natural_residual_definition():
    z = np.array([1.0, 0.0, 2.0])
    F = np.array([0.0, -0.5, 0.25])
    lower = np.array([0.0, 0.0, -np.inf])
    # nat = (min(1,0), min(0,-0.5), 0.25) = (0, -0.5, 0.25), scaled by 1 + max|z| = 3
    assert natural_residual(z, F, lower) == pytest.approx(0.5 / 3.0)
    # a further residual of the caller's (extra) counts when it is the larger: max(0.5 / 3, 0.5) = 0.5; when it is
    # smaller the scaled one stands
    assert natural_residual(z, F, lower, lambda z_, F_: 0.5) == pytest.approx(0.5)
    assert natural_residual(z, F, lower, lambda z_, F_: 0.1) == pytest.approx(0.5 / 3.0)


def test_active_set_polish_converges_fast_at_a_degenerate_solution():
    """NCP F(x) = (x1 + x2^2 - 1, x1 + x2 - 1): at x* = (0, 1), F(x*) = (0 + 1 - 1, 0 + 1 - 1) = (0, 0), so index 1
    is degenerate (x1 = 0 and F1 = 0) and the FB reformulation is not differentiable there.  The active-set
    Gauss-Newton imposes both x1 = 0 and F1 = 0 (with F2 = 0 for x2 > 0) and converges in a few steps."""
    from core.contact.mcp import _active_set_polish

    def fun(x):
        return np.array([x[0] + x[1] ** 2 - 1.0, x[0] + x[1] - 1.0]), np.array([[1.0, 2.0 * x[1]], [1.0, 1.0]])

    xs = np.array([0.0, 1.0])
    lower = np.zeros(2)
    best = [np.inf, None]
    ok, z, iters = _active_set_polish(fun, xs + np.array([1e-4, -2e-4]), lower, lower, np.ones(2, bool), 1e-12, best)
    assert ok and iters <= 5
    np.testing.assert_allclose(z, xs, atol=1e-11)


def test_active_set_polish_ends_when_its_residual_stops_falling():
    # F(x) = x^2 + 1e-7 (a free unknown) has no root: Gauss-Newton from x = 1e-3 (x <- x/2 - 5e-8/x, damped) brings
    # the residual |F| / (1 + |x|) from 1.1e-6 to near its floor 1e-7, then circles x = 0.  The polish ends (stalled) at
    # the first iteration k >= polish_stall whose best residual is above stall_gain times the best polish_stall
    # iterations before (the start's residual counts as iteration 0), instead of spending all polish_iter
    # iterations; with polish_stall = 0 it spends them all.
    from core.contact import mcp

    def fun(x):
        return np.array([x[0] ** 2 + 1e-7]), np.array([[2.0 * x[0]]])

    opts = mcp.NewtonOptions()
    x0, lower = np.array([1e-3]), np.array([-np.inf])
    args = (fun, x0, lower, np.zeros(1), np.zeros(1, bool), 1e-12)
    r0 = (1e-6 + 1e-7) / (1.0 + 1e-3)
    best = [r0, x0.copy(), []]  # (the third entry collects the residual of every polish iteration)
    ok, _z, iters = mcp._active_set_polish(*args, best, None, opts.polish_iter, None, opts.polish_stall,
                                           opts.stall_gain)
    res = np.minimum.accumulate(np.r_[r0, best[2]])
    W = opts.polish_stall
    assert len(best[2]) == iters and res[-1] < 1.1e-7  # it came within 10 % of the floor ...
    assert not ok and 0 < W <= iters < opts.polish_iter  # ... and ended before its iteration limit
    assert iters == min(k for k in range(W, iters + 1) if res[k] > opts.stall_gain * res[k - W])
    best = [r0, x0.copy(), []]
    ok, _z, iters = mcp._active_set_polish(*args, best, None, opts.polish_iter, None, 0, opts.stall_gain)
    assert not ok and iters == opts.polish_iter


@pytest.mark.parametrize("n,seed", [(20, 1), (50, 2)])
def test_proximal_term_keeps_the_unique_solution(n, seed):
    # the proximal term e (z_i - z_i^k) vanishes at the current iterate, so it changes the path, not the solutions:
    # the planted solution of a positive definite LCP (unique) is found with it as without it
    rng = np.random.default_rng(seed)
    M, q, z_star = _random_monotone_lcp(n, rng)
    res = solve_mcp(_lcp(M, q), np.zeros(n), np.zeros(n), prox=np.ones(n))
    assert res.converged and res.residual <= 1e-10
    np.testing.assert_allclose(res.z, z_star, atol=1e-8)


def _particle_on_redundant_contacts(k, mu, v_free, m=1.0):
    """A particle (velocity v, free) on k coincident frictional contacts with normal e_z, the stepper's normalised
    rows: m (v - v_free) = sum pn_i (phi_i, 1); pn_i >= 0 perp v_z >= 0; mu v_t + phi_i sig_i = 0;
    sig_i >= 0 perp mu^2 - |phi_i|^2 >= 0.  Only sum pn_i is determined: the Jacobian is singular at every solution."""
    n = 3 + 4 * k

    def fun(z):
        v = z[:3]
        F = np.zeros(n)
        J = np.zeros((n, n))
        F[:3] = m * (v - v_free)
        J[:3, :3] = m * np.eye(3)
        for i in range(k):
            o = 3 + 4 * i
            pn, phi, sig = z[o], z[o + 1:o + 3], z[o + 3]
            F[:3] -= pn * np.array([phi[0], phi[1], 1.0])
            J[:3, o] -= [phi[0], phi[1], 1.0]
            J[0, o + 1] -= pn
            J[1, o + 2] -= pn
            F[o], J[o, 2] = v[2], 1.0
            F[o + 1:o + 3] = mu * v[:2] + phi * sig
            J[o + 1:o + 3, :2] = mu * np.eye(2)
            J[o + 1:o + 3, o + 1:o + 3] = sig * np.eye(2)
            J[o + 1:o + 3, o + 3] = phi
            F[o + 3] = mu * mu - phi @ phi
            J[o + 3, o + 1:o + 3] = -2.0 * phi
        return F, J

    lower = np.full(n, -np.inf)
    lower[3::4] = 0.0  # pn
    lower[6::4] = 0.0  # sig
    prox = np.ones(n)
    prox[:3] = 0.0  # the multipliers only
    return fun, lower, prox


@pytest.mark.parametrize("k", [2, 5])
@pytest.mark.parametrize("mu", [0.3, 2.0])
def test_proximal_term_on_redundant_frictional_contacts(k, mu):
    # v_free = (1, 0.5, -1), m = 1: the normal rows give v_z = 0 and sum pn = m * 1; the friction disc of radius
    # mu sum pn = mu.  |v_free,t| = sqrt(1.25) = 1.118 > mu = 0.3: slides, v_t = v_free,t (1 - mu / 1.118);
    # mu = 2 > 1.118: sticks, v = 0.  The split of sum pn among the k contacts is arbitrary (any one is a solution)
    v_free = np.array([1.0, 0.5, -1.0])
    fun, lower, prox = _particle_on_redundant_contacts(k, mu, v_free)
    res = solve_mcp(fun, np.zeros(lower.size), lower, prox=prox)
    assert res.converged and res.residual <= 1e-10, res.reason
    vt = v_free[:2] * max(0.0, 1.0 - mu / np.hypot(1.0, 0.5))
    np.testing.assert_allclose(res.z[:3], [vt[0], vt[1], 0.0], atol=1e-9)
    assert abs(res.z[3::4].sum() - 1.0) < 1e-9 and np.all(res.z[3::4] >= 0.0)


def _element_matrix(rng, sizes, n_x, n_shared=6):
    """An ElementMatrix of groups of elements (P_j elements with k_j own unknowns each, at shuffled indices), each
    coupling its own unknowns to n_shared of the n_x shared ones (a contact pair and its bodies' velocities), with
    a diagonal on the shared ones; returns (A, its dense copy assembled here independently, own index groups)."""
    from core.contact.elements import ElementMatrix

    n = n_x + sum(P * k for P, k in sizes)
    idx = rng.permutation(n)
    xs = idx[:n_x]
    diag = np.zeros(n)
    diag[xs] = 4.0 + rng.random(n_x)
    dense = np.diag(diag)
    groups, owns, at = [], [], n_x
    for P, k in sizes:
        own = idx[at:at + P * k].reshape(P, k)
        at += P * k
        cols = np.array([np.concatenate((rng.choice(xs, n_shared, replace=False), o)) for o in own])
        B = rng.standard_normal((P, n_shared + k, n_shared + k)) + 3.0 * np.eye(n_shared + k)
        for c, b in zip(cols, B):
            dense[np.ix_(c, c)] += b  # elements sum where they share unknowns
        groups.append((cols, B, k))
        owns.append(own)
    return ElementMatrix(n, diag, groups), dense, owns


def _sparse(A):
    """A's matrix (its blocks, shared) solved with the reduced system sparse at any size, as for large piles."""
    from core.contact.elements import ElementMatrix

    return ElementMatrix(A.shape[0], A.diag, A.blocks, _layout=A._structure(), dense_s=0)


def test_element_matrix_products_and_reformulation_match_its_dense_copy():
    rng = np.random.default_rng(6)
    A, D, _ = _element_matrix(rng, [(6, 5), (3, 8)], 12)
    v, s, w = rng.standard_normal(D.shape[0]), rng.random(D.shape[0]) + 0.5, rng.random(D.shape[0])
    np.testing.assert_allclose(A @ v, D @ v, atol=1e-12)
    np.testing.assert_allclose(A.rmatvec(v), D.T @ v, atol=1e-12)
    np.testing.assert_allclose(A.toarray(), D, atol=1e-14)
    # what the FB reformulation does to a Jacobian: rows scaled, a diagonal added
    np.testing.assert_allclose(A.scale_rows(s).add_diagonal(w).toarray(), s[:, None] * D + np.diag(w), atol=1e-14)


def test_block_elimination_solves_like_a_dense_solve():
    rng = np.random.default_rng(7)
    A, D, _ = _element_matrix(rng, [(6, 5), (3, 8)], 12)
    rhs = rng.standard_normal(D.shape[0])
    np.testing.assert_allclose(A.solve(rhs), np.linalg.solve(D, rhs), rtol=1e-9, atol=1e-12)
    # the reduced system solved sparse, as for large piles
    np.testing.assert_allclose(_sparse(A).solve(rhs), np.linalg.solve(D, rhs), rtol=1e-9, atol=1e-12)


def test_dense_s_chooses_the_sparse_solve_of_the_reduced_system_and_derived_matrices_keep_it(monkeypatch):
    """ElementMatrix(..., dense_s=k): the reduced (shared-unknown) system of more than k unknowns is factored sparse
    (scipy's splu), else dense (default k = _DENSE_S = 600: this matrix's 12, and 24 for the Levenberg-Marquardt
    system, are dense). The matrices made from it (rows scaled, a diagonal added, refilled) keep k; the results agree
    with the dense path's and with numpy's dense solve."""
    import scipy.sparse.linalg as spla

    from core.contact import elements
    from core.contact.elements import ElementMatrix

    calls = []
    real = spla.splu
    monkeypatch.setattr(elements.spla, "splu", lambda S, *a, **k: calls.append(S.shape) or real(S, *a, **k))
    rng = np.random.default_rng(7)
    A, D, _ = _element_matrix(rng, [(6, 5), (3, 8)], 12)
    rhs = rng.standard_normal(D.shape[0])
    b = rng.standard_normal(D.shape[0])
    assert A.dense_s == ElementMatrix._DENSE_S == 600
    x = A.solve(rhs)
    d = A.lm_solve(1e-3, b)
    assert calls == []  # dense
    S = _sparse(A)
    assert S.dense_s == 0
    np.testing.assert_allclose(S.solve(rhs), x, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(S.solve(rhs), np.linalg.solve(D, rhs), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(S.lm_solve(1e-3, b), d, rtol=1e-9, atol=1e-12)
    assert calls == [(12, 12), (12, 12), (24, 24)]  # solve: the 12 shared unknowns; LM: (d_s, r_s)
    s, w = 0.5 + rng.random(D.shape[0]), rng.random(D.shape[0])
    for derived in (S.scale_rows(s), S.add_diagonal(w), S.refill(S.diag, [(lay.cols, B, lay.cols.shape[1] - lay.ns)
                                                                          for lay, B in zip(S._layout, S.blocks)])):
        assert derived.dense_s == 0
    calls.clear()
    np.testing.assert_allclose(S.scale_rows(s).add_diagonal(w).solve(rhs),
                               np.linalg.solve(s[:, None] * D + np.diag(w), rhs), rtol=1e-9, atol=1e-12)
    assert calls == [(12, 12)]
    # a matrix of the default keeps its dense path when derived
    assert A.scale_rows(s).dense_s == A.add_diagonal(w).dense_s == 600


def test_levenberg_marquardt_direction_by_elimination_matches_the_normal_equations():
    from core.contact.mcp import _lm_direction

    rng = np.random.default_rng(9)
    A, D, _ = _element_matrix(rng, [(5, 6), (2, 9)], 18)
    b = rng.standard_normal(D.shape[0])
    for nu in (1e-8, 1e-3, 1.0):
        # the LM step minimises |A d + b|^2 + nu |d|^2: (A^T A + nu I) d = -A^T b, solved here dense
        # (the later calls reuse the first call's index arrays; a row-scaled copy of A shares them too)
        ref = np.linalg.solve(D.T @ D + nu * np.eye(D.shape[0]), -D.T @ b)
        np.testing.assert_allclose(_lm_direction(A, b, nu), ref, rtol=1e-8, atol=1e-10)
    s = 0.5 + rng.random(D.shape[0])
    ref = np.linalg.solve((s[:, None] * D).T @ (s[:, None] * D) + 1e-3 * np.eye(D.shape[0]), -(s[:, None] * D).T @ b)
    np.testing.assert_allclose(_lm_direction(A.scale_rows(s), b, 1e-3), ref, rtol=1e-8, atol=1e-10)


def test_levenberg_marquardt_elimination_matches_the_dense_direction_also_for_a_rank_deficient_matrix():
    rng = np.random.default_rng(11)
    A, D, owns = _element_matrix(rng, [(5, 6), (3, 9)], 18)
    b = rng.standard_normal(D.shape[0])
    n = D.shape[0]

    def dense_lm(D, nu):
        # (D^T D + nu I)^-1 D^T b, as the least-squares solution of [D; sqrt(nu) I] d = [-b; 0] (a QR-stable
        # reference: the normal equations of a rank-deficient D at a small nu lose digits of their own)
        stacked = np.vstack((D, np.sqrt(nu) * np.eye(n)))
        return np.linalg.lstsq(stacked, np.concatenate((-b, np.zeros(n))), rcond=None)[0]

    for nu in (1e-8, 1e-3, 1.0):
        d = A.lm_solve(nu, b)
        assert d is not None  # the elimination itself, not the normal equations' fallback
        np.testing.assert_allclose(d, dense_lm(D, nu), rtol=1e-8, atol=1e-10)
    # rank-deficient: an own unknown of element 0 with no entry at all (a zero column of A, the own-own block
    # singular: only nu keeps its Cholesky block regular) and an own row of element 1 of group 1 zero
    A.blocks[0][0, :, 6 + 2] = 0.0
    A.blocks[1][1, 6 + 4, :] = 0.0
    D = A.toarray()
    assert np.linalg.matrix_rank(D) == n - 1
    for nu in (1e-8, 1e-3):
        d = A.lm_solve(nu, b)
        assert d is not None
        np.testing.assert_allclose(d, dense_lm(D, nu), rtol=1e-8, atol=1e-10)
        assert abs(d[owns[0][0, 2]]) <= 1e-12  # no component along the zero column
    # the reduced system solved sparse, as for large piles
    np.testing.assert_allclose(_sparse(A).lm_solve(1e-3, b), dense_lm(D, 1e-3), rtol=1e-8, atol=1e-10)
    # without damping the singular own block's Cholesky factor fails: refused (the caller solves the normal equations)
    assert A.lm_solve(0.0, b) is None


def test_levenberg_marquardt_with_a_damping_per_unknown_is_the_stacked_least_squares_step():
    """The active-set polish's step: least squares of [J on the rows kept; unit rows on the bound unknowns ib] d =
    -[F kept; a_ib], damped by nu. Through lm_solve: J with the other rows zeroed, damping nu + 1 on ib, right-hand
    side -a on ib; the reference is the stacked system [rows; unit rows; sqrt(nu) I] solved by QR least squares."""
    rng = np.random.default_rng(12)
    A, D, _ = _element_matrix(rng, [(5, 6), (3, 9)], 18)
    n = D.shape[0]
    F, a = rng.standard_normal(n), rng.random(n)
    keep = rng.random(n) < 0.7
    ib = np.flatnonzero(~keep | (rng.random(n) < 0.1))  # bound rows: the dropped ones, and some kept ones too
    e = np.zeros(n)
    e[ib] = 1.0
    E = np.eye(n)[ib]
    for nu in (1e-8, 1e-3):
        stacked = np.vstack((D[keep], E, np.sqrt(nu) * np.eye(n)))
        ref = np.linalg.lstsq(stacked, -np.concatenate((F[keep], a[ib], np.zeros(n))), rcond=None)[0]
        d = A.scale_rows(keep.astype(float)).lm_solve(nu + e, np.where(keep, F, 0.0), -e * a)
        assert d is not None
        np.testing.assert_allclose(d, ref, rtol=1e-8, atol=1e-10)


def test_element_matrix_refilled_with_new_values_keeps_its_structure():
    rng = np.random.default_rng(10)
    A, _, _ = _element_matrix(rng, [(4, 5), (3, 7)], 10)
    groups = [(lay.cols, 2.0 * B, lay.cols.shape[1] - lay.ns) for lay, B in zip(A._layout, A.blocks)]
    np.testing.assert_allclose(A.refill(A.diag, groups).toarray(), 2.0 * A.toarray() - np.diag(A.diag), atol=1e-14)


def test_block_elimination_refuses_a_singular_block_and_newton_takes_no_lu_direction():
    # an element's singular own-own block: the condensed solve gives no direction (the Newton attempt then takes a
    # Levenberg-Marquardt step; on mixed piles the sparse LU of the whole, tried here before, gave directions that
    # took more iterations), while the uncondensed solve is the LU's
    from core.contact.mcp import _solve_linear

    rng = np.random.default_rng(8)
    A, D, _ = _element_matrix(rng, [(4, 5)], 12)
    # element 0's own-own block made singular (one own unknown has no entry in its own rows), while the whole matrix
    # stays regular through the element's coupling to the shared unknowns
    B = A.blocks[0]
    B[0, 6:, 6 + 2] = 0.0
    D = A.toarray()
    assert np.linalg.matrix_rank(D) == D.shape[0]
    rhs = rng.standard_normal(D.shape[0])
    assert A.solve(rhs) is None
    assert _solve_linear(A, rhs, condense=True) is None
    np.testing.assert_allclose(_solve_linear(A, rhs, condense=False), np.linalg.solve(D, rhs), rtol=1e-8)


def test_element_matrix_refuses_own_unknowns_shared_with_another_element():
    from core.contact.elements import ElementMatrix

    cols = np.array([[0, 1, 2], [0, 2, 3]])  # unknown 2 is element 0's own but element 1 uses it
    with pytest.raises(ValueError, match="own unknowns"):
        ElementMatrix(4, np.ones(4), [(cols, np.ones((2, 3, 3)), 1)])


def test_an_attempt_that_stalls_close_to_a_solution_ends_early():
    # F(x) = x^2 + 1e-7 has no root; its residual is smallest, 1e-7, at x = 0, closer than the stall threshold
    # (1e-6): Newton circles there without halving its best residual, and the attempt ends as "stalled" long before
    # its 200 iterations (then the active-set polish gets its 12), not as "iteration limit" after all of them
    from core.contact import mcp

    def fun(x):
        return np.array([x[0] ** 2 + 1e-7]), np.array([[2.0 * x[0]]])

    opts = mcp.NewtonOptions()
    assert 1e-7 < opts.stall_below
    res = solve_mcp(fun, np.array([1.0]), np.array([-np.inf]), max_iter=200, max_restarts=0)
    assert not res.converged and res.reason == "stalled"
    assert res.iterations <= 2 * opts.stall + opts.polish_iter
    assert abs(res.residual - 1e-7) < 1e-9


def test_a_solve_that_stalls_near_the_tolerance_ends_without_restart():
    # F(x) = x^2 + 1e-7 stalls at its best residual 1e-7 (above): with near >= 1e-7 the solve ends after the first
    # run (and its polish) as NEAR_STALLED, without the restarts it is allowed; with near below 1e-7 it restarts
    from core.contact import mcp

    def fun(x):
        return np.array([x[0] ** 2 + 1e-7]), np.array([[2.0 * x[0]]])

    res = solve_mcp(fun, np.array([1.0]), np.array([-np.inf]), max_iter=200, max_restarts=2, near=1e-6)
    assert not res.converged and res.reason == mcp.NEAR_STALLED and res.restarts == 0
    res = solve_mcp(fun, np.array([1.0]), np.array([-np.inf]), max_iter=200, max_restarts=2, near=1e-8)
    assert not res.converged and res.reason != mcp.NEAR_STALLED and res.restarts == 2


def test_an_attempt_that_stalls_far_from_a_solution_ends_after_the_longer_window():
    # F(x) = x^2 + 1e-3 has no root; its smallest residual, 1e-3 at x = 0, is far above the stall threshold of the
    # close stall (1e-6): Newton circles around 0 without halving its best residual, and the attempt ends as
    # "stalled" stall_far iterations after its last halving, not as "iteration limit" after its 200 iterations (no
    # polish: it is not close enough)
    from core.contact import mcp

    def fun(x):
        return np.array([x[0] ** 2 + 1e-3]), np.array([[2.0 * x[0]]])

    opts = mcp.NewtonOptions()
    assert 1e-3 > opts.stall_below and opts.stall_far > opts.stall
    res = solve_mcp(fun, np.array([1.0]), np.array([-np.inf]), max_iter=200, max_restarts=0)
    assert not res.converged and res.reason == "stalled"
    # it ends at the first iteration whose best residual is not half the best of stall_far iterations before
    best, W = np.minimum.accumulate(res.history), opts.stall_far
    assert res.iterations == min(k for k in range(W, len(best)) if best[k] > 0.5 * best[k - W]) < 200
    assert 1e-3 <= res.residual < 1.1e-3


def test_an_attempt_that_meets_the_equations_but_not_the_further_residual_ends_without_restart():
    # F(x) = x - 1 is met exactly after one Newton step; a further residual (a contact step's overlap bound) that
    # stays at 5 tol whatever x is cannot be lowered by more iterations, a polish or a restart: the attempt ends
    # _EXTRA_STALL iterations after the equations were met, with its own reason, instead of spending its 200
    # iterations and its restarts
    from core.contact import mcp

    calls = []

    def fun(x):
        calls.append(x[0])
        return np.array([x[0] - 1.0]), np.array([[1.0]])

    res = solve_mcp(fun, np.array([3.0]), np.array([-np.inf]), tol=1e-10, max_iter=200, max_restarts=3,
                    extra=lambda z, F: 5e-10)
    assert not res.converged and res.reason == mcp.EXTRA_STALLED
    assert res.iterations == 1 + mcp.NewtonOptions().extra_stall  # one step to x = 1, then the stall window
    assert res.residual == pytest.approx(5e-10) and res.z[0] == pytest.approx(1.0)
    assert res.restarts == 0 and len(calls) == res.iterations + 1  # no restart was made
    # a further residual that falls with the iterations is waited for: x - 1 = 2^-k, extra = |x - 1| (above tol
    # until the equations are long met at their own tolerance 1)
    res = solve_mcp(fun, np.array([3.0]), np.array([-np.inf]), tol=1.0, max_iter=50,
                    extra=lambda z, F: 0.5 if z[0] > 1.0 + 1e-9 else 0.0)
    assert res.converged


def test_feasible_unknowns_never_leave_their_bounds_and_the_planted_solution_is_found():
    """solve_mcp(feasible=...) projects the marked bounded unknowns onto their bounds at every trial point."""
    rng = np.random.default_rng(11)
    n = 30
    M, q, z_star = _random_monotone_lcp(n, rng)
    lower = np.full(n, -np.inf)
    lower[::2] = 0.0  # even indices bounded (complementarity), odd ones free: F_i = 0 there
    # plant a solution of this MCP: free rows have F = 0, bounded rows keep the LCP's complementary pair
    q = np.where(np.isfinite(lower), q, -(M @ z_star))
    feasible = np.isfinite(lower)
    seen = []

    def fun(z):
        seen.append(z.copy())
        return M @ z + q, M

    z0 = rng.standard_normal(n)  # starts outside the bounds on about half of the bounded indices
    res = solve_mcp(fun, z0, lower, feasible=feasible)
    assert res.converged, res.reason
    np.testing.assert_allclose(res.z, z_star, atol=1e-8)
    # every point the solver evaluated (the start included) had its marked unknowns on or above their bounds
    assert np.all(np.array(seen)[:, feasible] >= 0.0)
    # without the option the plain Newton iterates do leave the bounds from this start (so the check above can fail)
    seen.clear()
    plain = solve_mcp(fun, z0, lower)
    assert plain.converged
    assert np.any(np.array(seen)[:, feasible] < 0.0)


def test_weights_set_the_merit_of_the_free_rows_but_not_the_solution_or_the_stopping_test():
    """solve_mcp(weights=w) iterates exactly as the solver on the free rows multiplied by w; only the merit changes."""
    lower = np.array([0.0, -np.inf, 0.0, -np.inf])  # Kojima-Shindo with x2 and x4 free (their rows equations)
    w = np.array([1.0, 30.0, 1.0, 0.05])  # (the weights of bounded rows are not used)
    scale = np.where(np.isfinite(lower), 1.0, w)
    runs = {}
    for mode in ("weighted", "rows scaled", "plain"):
        seen = []

        def fun(z, mode=mode, seen=seen):
            seen.append(z.copy())
            F, J = _kojima_shindo(z)
            return (scale * F, scale[:, None] * J) if mode == "rows scaled" else (F, J)

        res = solve_mcp(fun, np.zeros(4), lower, weights=w if mode == "weighted" else None)
        assert res.converged, (mode, res.reason)
        runs[mode] = (res, np.array(seen))
    (rw, sw), (rs, ss), (rp, sp_) = runs["weighted"], runs["rows scaled"], runs["plain"]
    # the same points evaluated, in the same order: the weights enter the merit exactly as a scaling of the rows
    assert sw.shape == ss.shape
    np.testing.assert_array_equal(sw, ss)
    # ... and they matter: the unweighted solver takes another path (here a longer one) to the same solution
    assert sp_.shape != sw.shape or np.any(sp_ != sw)
    np.testing.assert_allclose(rw.z, rp.z, atol=1e-9)
    # the stopping test and the reported residual are those of the unweighted equations
    F = _kojima_shindo(rw.z)[0]
    assert rw.residual == pytest.approx(natural_residual(rw.z, F, lower), rel=1e-12, abs=1e-300)
    assert rw.residual <= 1e-10


def test_levenberg_marquardt_elimination_of_elements_that_share_nothing():
    """Elements with only own unknowns (no shared ones: the reduced system is empty) give the dense LM direction
    (D^T D + nu I)^-1 (-D^T b) too, with no fallback."""
    from core.contact.elements import ElementMatrix

    rng = np.random.default_rng(13)
    P, nl = 3, 4
    cols = np.arange(P * nl).reshape(P, nl)
    A = ElementMatrix(P * nl, np.zeros(P * nl), [(cols, rng.standard_normal((P, nl, nl)), nl)])
    D, b = A.toarray(), rng.standard_normal(P * nl)
    d = A.lm_solve(1e-3, b)
    assert d is not None
    np.testing.assert_allclose(d, np.linalg.solve(D.T @ D + 1e-3 * np.eye(P * nl), -D.T @ b), rtol=1e-10, atol=1e-12)


def test_block_elimination_of_elements_that_share_nothing():
    """Elements with only own unknowns (the reduced system is empty) are solved by their own blocks alone."""
    from core.contact.elements import ElementMatrix

    rng = np.random.default_rng(14)
    P, nl = 3, 4
    cols = np.arange(P * nl).reshape(P, nl)
    A = ElementMatrix(P * nl, np.zeros(P * nl), [(cols, rng.standard_normal((P, nl, nl)) + 3.0 * np.eye(nl), nl)])
    rhs = rng.standard_normal(P * nl)
    np.testing.assert_allclose(A.solve(rhs), np.linalg.solve(A.toarray(), rhs), rtol=1e-10, atol=1e-12)


def test_block_elimination_refuses_a_singular_schur_complement():
    rng = np.random.default_rng(15)
    A, D, _ = _element_matrix(rng, [(2, 5)], 20)
    # a shared unknown with no diagonal that no element touches: a zero row and column of the Schur complement
    free = np.setdiff1d(A._x, np.concatenate([lay.cols.ravel() for lay in A._layout]))[0]
    A.diag[free] = 0.0
    assert A.factor() is None
    A.diag[free] = 1.0
    rhs = rng.standard_normal(D.shape[0])
    np.testing.assert_allclose(A.factor()(rhs), np.linalg.solve(A.toarray(), rhs), rtol=1e-9, atol=1e-12)


def test_schur_complement_assembly_adds_the_element_parts_in_order():
    """kernels.scatter_add into a Fortran-ordered matrix (ElementMatrix.factor's Schur complement) gives the bits of
    the np.bincount of the elements' entries (pairs that share a body add into the same entries, in element order)."""
    from core.contact.kernels import scatter_add

    rng = np.random.default_rng(16)
    nx, ns = 9, 4
    parts = [(np.array([rng.choice(nx, ns, replace=False) for _ in range(P)]), rng.standard_normal((P, ns, ns)))
             for P in (5, 3)]
    S = np.zeros((nx, nx), order="F")
    flat, vals = [], []
    for wx, Sxx in parts:
        scatter_add(S, wx, Sxx)
        flat.append((np.repeat(wx, ns, axis=1) * nx + np.tile(wx, (1, ns))).ravel())
        vals.append(Sxx.ravel())
    ref = np.bincount(np.concatenate(flat), np.concatenate(vals), minlength=nx * nx).reshape(nx, nx)
    assert np.array_equal(S, ref)


def test_compiled_row_scaling_gives_the_bits_of_the_numpy_product():
    rng = np.random.default_rng(17)
    A, D, _ = _element_matrix(rng, [(6, 5), (3, 8)], 12)
    s = rng.standard_normal(D.shape[0])
    As = A.scale_rows(s)
    assert np.array_equal(As.diag, A.diag * s)
    for lay, B, Bs in zip(A._layout, A.blocks, As.blocks):
        assert np.array_equal(Bs, s[lay.cols][:, :, None] * B)


def test_compiled_reformulation_gives_the_bits_of_fb_function():
    """mcp._reformulate's Phi, dA, dB (kernels.fb_reformulate, compiled) against fb_function on the bounded indices
    and the weighted F on the free ones, bit for bit: kinks (a = b = 0), either argument zero or negative, the
    penalised (lam < 1) and smoothed (eps > 0) variants."""
    from core.contact.mcp import _phi_value, _reformulate

    rng = np.random.default_rng(18)
    n = 400
    a = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 3, n)
    b = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 3, n)
    a[:40], b[20:60] = 0.0, 0.0
    lower = np.where(rng.random(n) < 0.3, -np.inf, rng.standard_normal(n))
    bounded = np.isfinite(lower)
    lower0 = np.where(bounded, lower, 0.0)
    z = np.where(bounded, lower0 + a, a)
    J = sp.identity(n, format="csc")
    for lam in (1.0, 0.8):
        for eps in (0.0, 1e-3):
            for weights in (1.0, 0.5 + rng.random(n)):
                phi, da, db = fb_function(np.where(bounded, z - lower0, 0.0), b, lam, eps)
                Phi, H, dB = _reformulate(z, b, J, lower0, bounded, lam, eps, weights)
                assert np.array_equal(Phi, np.where(bounded, phi, weights * b))
                assert np.array_equal(dB, np.where(bounded, db, weights))
                assert np.array_equal(H.diagonal(), np.where(bounded, da, 0.0) + dB)
                assert np.array_equal(_phi_value(z, b, lower0, bounded, lam, eps, weights), Phi)


def test_compiled_natural_residual_gives_the_bits_of_its_definition():
    rng = np.random.default_rng(19)
    n = 300
    z, F = rng.standard_normal(n), rng.standard_normal(n) * 10.0 ** rng.integers(-6, 2, n)
    lower = np.where(rng.random(n) < 0.3, -np.inf, rng.standard_normal(n))
    bounded = np.isfinite(lower)

    def reference(z, F):
        nat = np.where(bounded, np.minimum(np.where(bounded, z - lower, 0.0), F), F)
        return float(np.max(np.abs(nat)) / (1.0 + np.max(np.abs(z))))

    assert natural_residual(z, F, lower) == reference(z, F)
    F[7] = np.nan
    assert np.isnan(natural_residual(z, F, lower)) and np.isnan(reference(z, F))
    assert natural_residual(np.zeros(0), np.zeros(0), np.zeros(0)) == 0.0


def test_adaptive_proximal_weight_damps_an_overshooting_newton_step():
    # F(x) = a atan(x / a), a = 1e-3, from x0 = 0.05 = 50 a: the Newton step x - F/F' = x - (1 + (x/a)^2) a atan(x/a)
    # overshoots to about -3.8 (the classic divergence of Newton on atan), the line search cuts it short, and the
    # proximal weight e = 0.1 |F| ~ 1.5e-4 against F' = 1/2501 ~ 4e-4 hardly damps it.  The adaptive factor
    # (NewtonOptions.theta_up) raises the weight after such a cut step until the damped steps converge to the root
    # x = 0; with the factor held at 1 the same run takes more iterations (it stalls)
    from core.contact.mcp import NewtonOptions

    a = 1e-3

    def fun(z):
        return a * np.arctan(z / a), np.diag(1.0 / (1.0 + (z / a) ** 2))

    def solve(options=None):
        return solve_mcp(fun, np.array([50.0 * a]), np.array([-np.inf]), prox=np.ones(1), max_restarts=0,
                         polish=False, options=options)

    res = solve()
    assert res.converged and abs(res.z[0]) < 1e-12
    fixed = solve(NewtonOptions(theta_up=1.0))  # the weight held at its base value
    assert res.iterations < fixed.iterations


def test_adaptive_levenberg_marquardt_damping_crosses_a_nearly_singular_direction():
    # F(x) = A x - b, A = diag(1, s), s = 1e-6, free unknowns, root x* = (0, 1), from x0 = (0, 0): |F| = s = 1e-6
    # while the root is 1 away, so the Newton step d = (0, 1) fails the descent test grad.d = -|F|^2 = -1e-12 <=
    # -1e-10 |d|^2.1 and the step is the Levenberg-Marquardt one, (A^T A + nu I) d = -A^T F.  Along the second axis
    # it moves s^2 / (s^2 + nu) of the way: with nu = |F| = 1e-6 (lm_mu held at 1) that is 1e-6 of it per iteration,
    # and the run stalls.  The problem is linear, so every full LM step's gain ratio is 1: lm_mu falls fourfold per
    # iteration (NewtonOptions.lm_adapt) until nu is below s^2 = 1e-12 (about ten iterations), and then the steps are
    # Gauss-Newton ones, which reach the root
    from core.contact.mcp import NewtonOptions

    s = 1e-6
    A, b = np.diag([1.0, s]), np.array([0.0, s])

    def solve(options=None):
        return solve_mcp(lambda z: (A @ z - b, A.copy()), np.zeros(2), np.full(2, -np.inf), max_restarts=0,
                         polish=False, options=options)

    res = solve()
    assert res.converged and np.allclose(res.z, [0.0, 1.0], atol=1e-3)
    assert 10 <= res.iterations <= 20
    fixed = solve(NewtonOptions(lm_adapt=1.0))
    assert not fixed.converged and abs(fixed.z[1]) < 1e-3  # crawled 1e-6 of the way per iteration


def test_the_zigzag_test_marks_a_step_that_turns_back_without_shrinking():
    # the proximal weight's zigzag test (NewtonOptions.zigzag_cos, zigzag_amp; defaults 0.5 and 0.5): a step in the
    # marked unknowns that turns back by more than acos(-0.5) = 120 degrees with at least half the last one's
    # length is an oscillation; a reversal that shrinks fourfold is a converging sequence, and a turn of 90
    # degrees is neither
    from core.contact.mcp import NewtonOptions, _turns_back

    opts = NewtonOptions()
    last = np.array([0.04, -0.04, 0.0])  # two normal impulses trading load (their sum fixed)
    assert _turns_back(np.array([-0.035, 0.037, 0.001]), last, opts)
    assert not _turns_back(-0.25 * last, last, opts)  # shrinking: converging
    assert not _turns_back(np.array([0.04, 0.04, 0.0]), last, opts)  # orthogonal
    # cos(angle) = -0.4 > -0.5: a turn of 114 degrees is not enough
    u = last / np.linalg.norm(last)
    v = np.array([1.0, 1.0, 0.0]) / np.sqrt(2.0)  # orthogonal to u
    assert not _turns_back(np.linalg.norm(last) * (-0.4 * u + np.sqrt(1 - 0.16) * v), last, opts)
    assert _turns_back(np.linalg.norm(last) * (-0.6 * u + 0.8 * v), last, opts)
    assert not _turns_back(-last, last, NewtonOptions(zigzag_cos=1.0))  # turned off
    assert not _turns_back(np.zeros(3), last, opts) and not _turns_back(last, np.zeros(3), opts)
