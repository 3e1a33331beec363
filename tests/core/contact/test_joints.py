"""Joints as bilateral constraints of the contact step: the constraint rows from the joint table, their analytic
Jacobians against central differences, and the stepper's mechanisms against closed forms."""

import json
import math

import numpy as np
import pytest

from core import io
from core.contact import build_model, simulate
from core.contact.bodies import cayley
from core.contact.joints import JointSpec, eval_joint, joint_constraints, joint_rows
from core.errors import LinkwrightError
from core.joints import JOINT_TYPES
from core.transforms import quat_to_matrix

G = 9.81
SIMULATED = [name for name in JOINT_TYPES if name != "helical"]


def _spec(type_name, rng):
    """A joint of this type between two bodies with random frames (relative to their centres of mass)."""
    R1, R2 = quat_to_matrix(rng.standard_normal(4)), quat_to_matrix(rng.standard_normal(4))
    return JointSpec("j", type_name, 0, 1, joint_rows(JOINT_TYPES[type_name]), 0.3 * rng.standard_normal(3), R1,
                     0.3 * rng.standard_normal(3), R2)


@pytest.mark.parametrize("name", SIMULATED)
def test_rows_leave_the_joint_type_its_freedoms(name):
    jt = JOINT_TYPES[name]
    dof = jt.dof_spatial if jt.dof_spatial is not None else jt.dof_planar
    assert 6 - joint_rows(jt).n == dof


def test_helical_is_refused():
    with pytest.raises(ValueError, match="couples"):
        joint_rows(JOINT_TYPES["helical"])


@pytest.mark.parametrize("name", SIMULATED)
def test_constraints_vanish_on_every_motion_of_the_joint_and_not_off_it(name):
    # B placed by the joint's own motion from the table, oTb = oTa Fa M(q) Fb^-1, closes every row for any q; a
    # motion the joint does not allow (a small generic twist on top) opens at least one row
    rng = np.random.default_rng(7)
    jt = JOINT_TYPES[name]
    js = _spec(name, rng)
    pA, RA = rng.standard_normal(3), quat_to_matrix(rng.standard_normal(4))
    for _ in range(5):
        q = rng.standard_normal(max(jt.n_coordinates, 1))
        M = jt.local_motion(q)
        # A's joint frame in the world, then B's, then B's centre of mass from its joint frame
        WA_R, WA_p = RA @ js.axes_a, pA + RA @ js.rho_a
        WB_R, WB_p = WA_R @ M[:3, :3], WA_p + WA_R @ M[:3, 3]
        RB = WB_R @ js.axes_b.T
        pB = WB_p - RB @ js.rho_b
        c, _ = joint_constraints(js, 0.7, pA, RA, pB, RB)
        np.testing.assert_allclose(c, 0.0, atol=1e-12)
        if js.rows.n:
            tw = 1e-3 * rng.standard_normal(6)
            c2, _ = joint_constraints(js, 0.7, pA, RA, pB + tw[:3], cayley(0.5 * tw[3:]) @ RB)
            assert np.abs(c2).max() > 1e-6


@pytest.mark.parametrize("name", SIMULATED)
def test_gradients_match_finite_differences(name):
    rng = np.random.default_rng(11)
    js = _spec(name, rng)
    pA, pB = rng.standard_normal(3), rng.standard_normal(3)
    RA, RB = quat_to_matrix(rng.standard_normal(4)), quat_to_matrix(rng.standard_normal(4))
    _c, Gr = joint_constraints(js, 0.7, pA, RA, pB, RB)
    eps = 1e-6
    for i in range(12):
        d = np.zeros(12)
        d[i] = eps

        def at(s):
            x = s * d  # world displacements and rotation perturbations R -> (I + [th]x) R (exactly: cayley)
            return joint_constraints(js, 0.7, pA + x[0:3], cayley(0.5 * x[3:6]) @ RA, pB + x[6:9],
                                     cayley(0.5 * x[9:12]) @ RB)[0]

        np.testing.assert_allclose(Gr[:, i], (at(1) - at(-1)) / (2 * eps), atol=1e-8)


@pytest.mark.parametrize("name", SIMULATED)
@pytest.mark.parametrize("dyn_a,dyn_b", [(True, True), (False, True), (True, False)])
def test_row_jacobian_matches_finite_differences(name, dyn_a, dyn_b):
    rng = np.random.default_rng(5)
    js = _spec(name, rng)
    h = 0.01
    pA0, pB0 = rng.standard_normal(3), rng.standard_normal(3)
    RA0, RB0 = quat_to_matrix(rng.standard_normal(4)), quat_to_matrix(rng.standard_normal(4))
    x = np.concatenate((rng.standard_normal(3), 20 * rng.standard_normal(3), rng.standard_normal(3),
                        20 * rng.standard_normal(3)))

    def f(xx):
        return eval_joint(js, 0.7, h, pA0, RA0, xx[0:3], xx[3:6], dyn_a, pB0, RB0, xx[6:9], xx[9:12], dyn_b)

    r, J = f(x)
    eps = 1e-6
    for i in range(12):
        e = np.zeros(12)
        e[i] = eps
        fd = (f(x + e)[0] - f(x - e)[0]) / (2 * eps)
        np.testing.assert_allclose(J[:, i], fd, atol=1e-6, rtol=1e-6)
        if (i < 6 and not dyn_a) or (i >= 6 and not dyn_b):
            assert np.all(J[:, i] == 0.0) and np.all(fd == 0.0)  # a static body does not move
