"""Each joint type's table-driven motion: design frame, elementary-step product and local Jacobian."""

import math

import numpy as np
import pytest

from core.joints import JOINT_TYPES
from core.model import Joint
from core.joints import joint_design_frame
from core.transforms import inverse


@pytest.mark.parametrize("name", sorted(JOINT_TYPES))
def test_local_jacobian_matches_central_differences(name):
    jt = JOINT_TYPES[name]
    rng = np.random.default_rng(1)
    q = rng.uniform(-1.0, 1.0, jt.n_coordinates)
    J = jt.local_jacobian(q, pitch=0.3)
    assert J.shape == (jt.n_coordinates, 4, 4)
    h = 1e-6
    for k in range(jt.n_coordinates):
        e = np.zeros_like(q)
        e[k] = h
        fd = (jt.local_motion(q + e, 0.3) - jt.local_motion(q - e, 0.3)) / (2 * h)
        np.testing.assert_allclose(J[k], fd, atol=1e-8)


@pytest.mark.parametrize("name", sorted(JOINT_TYPES))
def test_motion_is_identity_at_zero_and_coordinates_match_dof(name):
    jt = JOINT_TYPES[name]
    np.testing.assert_allclose(jt.local_motion(np.zeros(jt.n_coordinates), 0.3), np.eye(4))
    dofs = {d for d in (jt.dof_planar, jt.dof_spatial) if d is not None}
    assert dofs == {jt.n_coordinates}


def test_revolute_about_a_world_axis_through_its_point():
    # T = F Rz(q) F^-1 turns points about the line through `at` along `axis`
    j = Joint("R", "revolute", ("a", "b"), at=(1.0, 2.0, 0.0), axis=(0.0, 0.0, 1.0))
    F = joint_design_frame(j)
    T = F @ JOINT_TYPES["revolute"].local_motion([math.pi / 2]) @ inverse(F)
    # the point (2, 2, 0) is 1 to the +x of the axis: a quarter turn puts it at (1, 3, 0)
    np.testing.assert_allclose(T @ [2, 2, 0, 1], [1, 3, 0, 1], atol=1e-14)


def test_helical_advances_pitch_per_turn():
    jt = JOINT_TYPES["helical"]
    T = jt.local_motion([2 * math.pi], pitch=0.25)
    np.testing.assert_allclose(T[:3, 3], [0, 0, 0.25], atol=1e-14)
    np.testing.assert_allclose(T[:3, :3], np.eye(3), atol=1e-14)


def test_slot_slides_along_the_slot_of_the_second_body():
    # the pin (body 0's joint point) stays on body 1's slot line for any slide s and rotation phi
    jt = JOINT_TYPES["slot"]
    j = Joint("pin", "slot", ("a", "b"), at=(0.0, 0.0, 0.0), axis=(1.0, 0.0, 0.0))
    F = joint_design_frame(j)
    for s, phi in [(0.3, 0.0), (0.3, 1.0), (-0.7, 2.5)]:
        aTb = F @ jt.local_motion([s, phi]) @ inverse(F)
        pin_in_b = inverse(aTb) @ [0, 0, 0, 1]
        assert abs(pin_in_b[1]) < 1e-14 and abs(pin_in_b[2]) < 1e-14
        assert pin_in_b[0] == pytest.approx(-s)
