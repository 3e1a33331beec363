"""The interior-point solver's second-order cones (core.contact.ipm): the Nesterov-Todd scaling and the Jordan algebra
it is built on, the step to the cone's boundary, and a frictional contact solved through a cone (closed form)."""

import numpy as np
import pytest

from core.contact import ipm


def _interior(rng, n, d):
    x = rng.normal(size=(n, d))
    x[:, 0] = np.linalg.norm(x[:, 1:], axis=1) * (1.0 + rng.uniform(1e-3, 2.0, n))
    return x


@pytest.mark.parametrize("d", [3, 4])
def test_nesterov_todd_scaling_identities(d):
    rng = np.random.default_rng(d)
    x, s = _interior(rng, 20, d), _interior(rng, 20, d)
    W, Wi, W2i, lam = ipm._nt_scaling(x, s)
    for k in range(20):
        # W^2 s = x (the definition of the scaling point), W W^-1 = I, W^-2 = (W^-1)^2, lam = W s = W^-1 x
        assert np.allclose(W[k] @ W[k] @ s[k], x[k], rtol=1e-9, atol=1e-12)
        assert np.allclose(W[k] @ Wi[k], np.eye(d), atol=1e-9)
        assert np.allclose(Wi[k] @ Wi[k], W2i[k], rtol=1e-9, atol=1e-12)
        assert np.allclose(lam[k], Wi[k] @ x[k], rtol=1e-9, atol=1e-12)
        assert np.allclose(W[k], W[k].T)


def test_jordan_product_and_its_inverse():
    rng = np.random.default_rng(1)
    lam, r = _interior(rng, 10, 4), rng.normal(size=(10, 4))
    v = ipm._jordan_solve(lam, r)
    # lam o v = (lam . v, lam0 v + v0 lam) by definition
    lv = np.column_stack([np.sum(lam * v, axis=1), lam[:, :1] * v[:, 1:] + v[:, :1] * lam[:, 1:]])
    assert np.allclose(lv, r, atol=1e-10)
    assert np.allclose(ipm._jordan(lam, v), lv)


def test_cone_step_stops_at_the_boundary():
    rng = np.random.default_rng(2)
    x, dx = _interior(rng, 30, 3), rng.normal(size=(30, 3)) * 5.0
    for k in range(30):
        a = ipm._cone_step(x[k:k + 1], dx[k:k + 1], 1.0)
        end = x[k] + a * dx[k]
        if a < 1.0:  # the boundary: x0 = |x| there (and the point before it is inside)
            assert end[0] == pytest.approx(np.linalg.norm(end[1:]), rel=1e-8, abs=1e-12)
            inside = x[k] + 0.99 * a * dx[k]
            assert inside[0] > np.linalg.norm(inside[1:])
        else:
            assert end[0] >= np.linalg.norm(end[1:]) - 1e-12


@pytest.mark.parametrize("speed", [0.05, 0.5])  # sticking (below mu g h) and sliding
def test_block_on_a_plane_by_a_friction_cone(speed):
    """One velocity-level step of a unit point mass resting on the plane z = 0 with tangential speed v0: unknowns
    z = (vt (2), vn, pn, q (2), psi); rows vt - v0 - q = 0, vn + h g - pn = 0, pn >= 0 perp vn >= 0, and friction
    K contains (mu pn, q) and (psi, vt), (mu pn, q) . (psi, vt) = 0.  Closed form: pn = h g; sliding when
    |v0| > mu pn: q = -mu pn v0/|v0|, vt = v0 + q, psi = |vt|; else sticking: q = -v0, vt = 0."""
    mu, h, g = 0.3, 0.01, 9.81
    v0 = speed * np.array([0.6, 0.8])

    def fun(z):
        vt, vn, pn, q, psi = z[0:2], z[2], z[3], z[4:6], z[6]
        # rows: 0, 1 of vt; 2 of vn; 3 of pn (vn >= 0); 4, 5 the cone rows of q (vt); 6 of psi (psi itself)
        F = np.concatenate([vt - v0 - q, [vn + h * g - pn], [vn], vt, [psi]])
        J = np.zeros((7, 7))
        J[0, 0] = J[1, 1] = 1.0
        J[0, 4] = J[1, 5] = -1.0
        J[2, 2], J[2, 3] = 1.0, -1.0
        J[3, 2] = 1.0
        J[4, 0] = J[5, 1] = 1.0
        J[6, 6] = 1.0
        return F, J

    lower = np.full(7, -np.inf)
    lower[3] = 0.0
    cone = ipm.ConeBlock(rows=np.array([[6, 4, 5]]), cols=np.array([[3, 4, 5]]), scale=np.array([[mu, 1.0, 1.0]]))
    res = ipm.solve(ipm.MCPProblem(fun, lower, cones=(cone,)), np.zeros(7))
    assert res.converged, res.reason
    z = res.z
    pn = h * g
    if speed > mu * pn:
        q = -mu * pn * v0 / np.linalg.norm(v0)
    else:
        q = -v0
    assert z[3] == pytest.approx(pn, rel=1e-8)
    assert np.allclose(z[4:6], q, atol=1e-8)
    assert np.allclose(z[0:2], v0 + q, atol=1e-8)
