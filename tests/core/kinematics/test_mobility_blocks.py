"""The rank-based count computed per block of the loop-closure Jacobian (core.kinematics.mobility._loop_blocks):
loops that share no coordinate are independent blocks, so the rank, the null space and the second-order forms add up
over them. The definitions they must agree with (one SVD of the whole matrix, the idle freedoms as the null space of
the whole stacked matrix) are written out in the tests."""

import numpy as np
import pytest
from hypothesis import given, settings

from core import io
from core.generate import ladder
from core.kinematics import compile_model, rank_mobility
from core.kinematics.mobility import (AXISLESS_JOINTS, _idle_basis, _loop_blocks, _loop_null_space, _loop_rank,
                                      body_twist_jacobian)
from core.kinematics.solver import RANK_RTOL, Workspace, forward, twist_jacobian
from core.model import Body, Joint, Mechanism
from core.transforms import skew
from tests.core.kinematics.test_singular_positions import EXAMPLES
from tests.core.test_structure import graphs


def _whole_rank(A):
    """The rank as one SVD of the whole matrix gives it (RANK_RTOL of the largest singular value, at least 1)."""
    if not A.size:
        return 0
    s = np.linalg.svd(A, compute_uv=False)
    return int((s > RANK_RTOL * max(s[0], 1.0)).sum())


def _whole_idle(km, ws, G):
    """The idle freedoms by their definition over every coordinate (docs/kinematics.md): motions the loops allow
    that change no coordinate of a joint with an axis (the bodies it joins then move as one group), move no ball
    joint's centre and no group held by one ball joint alone."""
    Jb = body_twist_jacobian(ws)
    rows = [G]
    groups = [{k} for k in range(km.n_bodies)]
    for j in range(km.n_joints):
        if km.joint_types[j] not in AXISLESS_JOINTS:
            a, b = next(g for g in groups if km.ja[j] in g), next(g for g in groups if km.jb[j] in g)
            if a is not b:
                groups.remove(b)
                a |= b
    holds = {id(g): 0 for g in groups}
    for j in range(km.n_joints):
        if km.joint_types[j] in AXISLESS_JOINTS:
            P = np.hstack((np.eye(3), -skew(km.joint_at[j])))
            rows += [P @ Jb[km.ja[j]], P @ Jb[km.jb[j]]]
            a, b = next(g for g in groups if km.ja[j] in g), next(g for g in groups if km.jb[j] in g)
            if a is not b:
                holds[id(a)] += 1
                holds[id(b)] += 1
    rows += [Jb[k] for g in groups if holds[id(g)] <= 1 for k in g]
    axis = [c for c in range(km.nq) if km.joint_types[km.coord_joint[c]] not in AXISLESS_JOINTS]
    rows.append(np.eye(km.nq)[axis])
    return km.nq - _whole_rank(np.vstack(rows))


def _check_against_whole(km):
    ws = Workspace(km)
    forward(ws, np.zeros(km.nq))
    G = twist_jacobian(ws)
    every = np.arange(km.nq)
    split = _loop_blocks(km, G, every)
    assert _loop_rank(split) == _whole_rank(G)
    N = _loop_null_space(split, km.nq)
    assert N.shape == (km.nq, km.nq - _whole_rank(G))
    if N.size:
        np.testing.assert_allclose(N.T @ N, np.eye(N.shape[1]), atol=1e-10)  # orthonormal
        assert np.abs(G @ N).max(initial=0.0) <= 1e-9 * max(1.0, np.abs(G).max(initial=0.0))  # motions the loops allow
    assert _idle_basis(km, ws, G, every).shape[1] == _whole_idle(km, ws, G)
    # the blocks partition the rows that carry entries and the columns
    blocks, _threshold = split
    cols = np.concatenate([b.cols for b in blocks]) if blocks else np.zeros(0, int)
    assert sorted(cols) == list(range(km.nq))
    rows = np.concatenate([b.rows for b in blocks]) if blocks else np.zeros(0, int)
    assert len(set(rows)) == len(rows)
    outside = np.setdiff1d(np.arange(km.n_rows), rows)
    assert not np.any(G[outside])
    for b in blocks:  # nothing of a block's rows lies in another block's columns
        others = np.setdiff1d(every, b.cols)
        assert not np.any(G[np.ix_(b.rows, others)])


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.json")), ids=lambda p: p.stem)
def test_the_blocks_give_the_whole_matrix_counts_on_every_example(path):
    doc = io.load(path)
    km = compile_model(doc, drivers=False)
    _check_against_whole(km)


@settings(max_examples=40, deadline=None)
@given(graphs())
def test_the_blocks_give_the_whole_matrix_counts_on_random_graphs(m):
    _check_against_whole(compile_model(m, drivers=False))


def _flat_fourbars(specs):
    """Four-bars on one ground, each with ground pivots at (0, y) and (4, y), crank, coupler and rocker drawn flat on
    the line at height y (B, C at x = b, c): the loops share the ground body but no joint."""
    m = Mechanism(name="flat", space="planar")
    m.bodies.append(Body("ground", ground=True))
    for i, (b, c, y) in enumerate(specs):
        m.bodies += [Body(f"crank{i}"), Body(f"coupler{i}"), Body(f"rocker{i}")]
        for name, pair, x in ((f"A{i}", ("ground", f"crank{i}"), 0.0), (f"B{i}", (f"crank{i}", f"coupler{i}"), b),
                              (f"C{i}", (f"coupler{i}", f"rocker{i}"), c), (f"D{i}", (f"rocker{i}", "ground"), 4.0)):
            m.joints.append(Joint(name, "revolute", pair, (x, y, 0.0), axis=(0.0, 0.0, 1.0)))
    return m


@pytest.mark.parametrize("n", [2, 5])
def test_several_four_bars_drawn_flat_at_their_change_points_are_each_decided_exactly(n):
    """n four-bars at a change point (ground 4, crank 1 drawn pointing back, coupler 3, rocker 2: 1 + 4 = 3 + 2), all
    drawn flat, on one ground. Each alone has 2 first-order freedoms and one indefinite second-order form, 1 freedom
    (test_singular_positions). Their loops share no coordinate, so each form is a form of its own loop's motions and
    the motions that satisfy every form are the product of each loop's two branch lines: n freedoms, n set aside.
    (Decided as one set of n forms on 2n motions, the count was an upper bound: 3 for two, 9 for five.)"""
    r = rank_mobility(_flat_fourbars([(-1.0, 2.0, 5.0 * i) for i in range(n)]))
    assert (r.gruebler, r.mobility_rank, r.singular_freedoms, r.effective) == (n, 2 * n, n, n)


def test_a_rigid_flat_four_bar_beside_one_at_its_change_point():
    """One four-bar with l = s + p + q drawn flat (crank 1, coupler 2, rocker 1: a definite form, 0 freedoms) and one at
    its change point (1 freedom): 4 first-order freedoms, 3 set aside, 1 left."""
    r = rank_mobility(_flat_fourbars([(1.0, 3.0, 0.0), (-1.0, 2.0, 5.0)]))
    assert (r.gruebler, r.mobility_rank, r.singular_freedoms, r.effective) == (2, 4, 3, 1)


def test_a_long_ladder_and_a_chain_listed_leaf_first_are_counted_by_their_blocks():
    """ladder(n): a revolute chain of n bodies with a cross link b_i - b_(i+3) every third body, each closing a
    four-bar loop with the chain; Gruebler 3 (n - 1) - 2 J. Its loops share bodies b_(i+3) but no joint: blocks of one
    loop each, every loop a regular four-bar (rank 3): mobility = Gruebler. A chain whose bodies are listed from its
    free end back to the ground (the tree's depth found from the leaf up) has a freedom per joint and no loop."""
    n = 1500
    m = ladder(n)
    joints = len(m.joints)
    r = rank_mobility(m)
    assert r.gruebler == 3 * (n - 1) - 2 * joints
    assert (r.mobility_rank, r.redundant_constraints, r.singular_freedoms) == (r.gruebler, 0, 0)
    km = compile_model(m, drivers=False)
    ws = Workspace(km)
    forward(ws, np.zeros(km.nq))
    blocks, _ = _loop_blocks(km, twist_jacobian(ws), np.arange(km.nq))
    assert sum(1 for b in blocks if len(b.rows)) == km.n_loops  # one block per loop

    chain = Mechanism(name="chain", space="planar")
    k = 400
    chain.bodies = [Body(f"b{i}", ground=(i == 0)) for i in reversed(range(k))]
    chain.joints = [Joint(f"J{i}", "revolute", (f"b{i}", f"b{i + 1}"), (float(i), 0.0, 0.0)) for i in range(k - 1)]
    r = rank_mobility(chain)
    assert (r.gruebler, r.mobility_rank, r.rank, r.equations) == (k - 1, k - 1, 0, 0)
