"""Solver internals: the exact loop Jacobian against finite differences, and the linear solves (fast square path
and the rank-revealing minimum-norm fallback) against their definitions."""

from pathlib import Path

import numpy as np
import pytest

from core import io
from core.kinematics import Workspace, compile_model, forward, loop_jacobian, loop_residual, twist_jacobian
from core.kinematics.solver import RANK_RTOL, _lstsq
from core.model import Body, Joint, Mechanism

EXAMPLES = Path(__file__).resolve().parents[3] / "resources" / "examples"


def _all_spatial_types_loop() -> Mechanism:
    """One loop through every spatial joint type (and a second loop), placed off-axis so no row is trivial."""
    m = Mechanism(name="mixed", space="spatial")
    m.bodies += [Body("g", ground=True)] + [Body(f"b{i}") for i in range(1, 8)]
    J = [
        Joint("R", "revolute", ("g", "b1"), (0.1, 0.2, 0.0), axis=(0.2, 0.1, 1.0)),
        Joint("U", "universal", ("b1", "b2"), (1.0, 0.3, 0.2), axis=(0.0, 1.0, 0.3), axis2=(1.0, 0.0, 0.0)),
        Joint("C", "cylindrical", ("b2", "b3"), (1.5, 1.1, 0.4), axis=(1.0, 0.5, 0.2)),
        Joint("S", "spherical", ("b3", "b4"), (1.2, 2.0, 0.7)),
        Joint("P", "prismatic", ("b4", "b5"), (0.6, 2.2, 0.9), axis=(0.3, 1.0, -0.2)),
        Joint("H", "helical", ("b5", "b6"), (0.0, 1.8, 0.6), axis=(0.0, 0.4, 1.0), pitch=0.3),
        Joint("E", "planar", ("b6", "g"), (-0.3, 1.0, 0.3), axis=(0.1, 0.0, 1.0)),
        Joint("R2", "revolute", ("b2", "b7"), (1.4, 0.2, 0.1), axis=(1.0, 0.0, 0.0)),
        Joint("S2", "spherical", ("b7", "b4"), (1.3, 1.5, 0.8)),
    ]
    m.joints += J
    return m


def _fd_jacobian(ws: Workspace, q: np.ndarray, h: float = 1e-6) -> np.ndarray:
    cols = []
    for k in range(len(q)):
        e = np.zeros_like(q)
        e[k] = h
        forward(ws, q + e)
        rp = loop_residual(ws)
        forward(ws, q - e)
        rm = loop_residual(ws)
        cols.append((rp - rm) / (2 * h))
    return np.array(cols).T


@pytest.mark.parametrize("doc", ["mixed", "stewart_6ups.json", "rssr.json", "quick_return.json", "jansen.json"])
def test_loop_jacobian_matches_central_differences(doc):
    mech = _all_spatial_types_loop() if doc == "mixed" else io.load(EXAMPLES / doc)
    km = compile_model(mech, drivers=False)
    ws = Workspace(km)
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = rng.uniform(-0.4, 0.4, km.nq)  # away from the design pose: loops open, every term of C present
        forward(ws, q)
        J = loop_jacobian(ws).copy()
        fd = _fd_jacobian(ws, q)
        # central differences: error O(h^2) ~ 1e-12 plus round-off ~ 1e-16 / h ~ 1e-10 relative to the entries
        assert np.abs(J - fd).max() <= 1e-7 * max(1.0, np.abs(fd).max())
        assert np.abs(J).max() > 0.1


def test_twist_jacobian_is_the_loop_jacobian_at_closure():
    # At a closed loop (C = E4) the Rodrigues rows are half the gap's rotation rate expressed in frame b, the
    # translation rows its velocity in frame b: both null spaces coincide (same velocities)
    mech = io.load(EXAMPLES / "rssr.json")
    km = compile_model(mech, drivers=False)
    ws = Workspace(km)
    forward(ws, np.zeros(km.nq))  # the design configuration closes every loop
    assert np.abs(loop_residual(ws)).max() < 1e-12
    J, G = loop_jacobian(ws), twist_jacobian(ws)
    rank = np.linalg.matrix_rank(np.vstack((J, G)), tol=1e-9)
    assert rank == np.linalg.matrix_rank(J, tol=1e-9) == np.linalg.matrix_rank(G, tol=1e-9)


def test_square_full_rank_solve_matches_the_definition():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(7, 7))
    b = rng.normal(size=7)
    x, rank, sratio = _lstsq(A, b)
    assert rank == 7
    assert np.abs(A @ x - b).max() < 1e-12
    s = np.linalg.svd(A, compute_uv=False)
    # LU path: LAPACK's 1-norm reciprocal condition estimate; the 1- and 2-norm condition numbers of an n x n
    # matrix are within a factor n of each other
    assert s[-1] / s[0] / 7 <= sratio <= 7 * s[-1] / s[0]


@pytest.mark.parametrize("shape", [(6, 6), (6, 4), (4, 6)])
def test_rank_deficient_solve_is_the_minimum_norm_least_squares_step(shape):
    rng = np.random.default_rng(1)
    n, k = shape
    A = rng.normal(size=(n, 3)) @ rng.normal(size=(3, k))  # rank 3
    b = rng.normal(size=n)
    x, rank, sratio = _lstsq(A, b)
    assert rank == 3
    assert sratio < RANK_RTOL
    ref = np.linalg.pinv(A, rcond=1e-9) @ b  # the minimum-norm least-squares solution by definition
    assert np.abs(x - ref).max() < 1e-10
