"""Elementary motions, their derivatives, the block inverse, composition rules and rotation conversions."""

import math

import numpy as np
import pytest

from core import transforms as tf


@pytest.mark.parametrize("q", [0.0, 0.3, -1.7, 2.9])
def test_elementary_motions_match_closed_forms(q):
    c, s = math.cos(q), math.sin(q)
    # thesis 2.4: the six elementary motions written out by hand
    expected = {
        tf.TX: [[1, 0, 0, q], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
        tf.TY: [[1, 0, 0, 0], [0, 1, 0, q], [0, 0, 1, 0], [0, 0, 0, 1]],
        tf.TZ: [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, q], [0, 0, 0, 1]],
        tf.RX: [[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1]],
        tf.RY: [[c, 0, s, 0], [0, 1, 0, 0], [-s, 0, c, 0], [0, 0, 0, 1]],
        tf.RZ: [[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
    }
    for k, m in expected.items():
        np.testing.assert_allclose(tf.elementary(k, q), m, atol=1e-15)
    np.testing.assert_allclose(tf.rot_z(q), expected[tf.RZ], atol=1e-15)
    np.testing.assert_allclose(tf.trans_y(q), expected[tf.TY], atol=1e-15)


@pytest.mark.parametrize("k", range(6))
@pytest.mark.parametrize("q", [0.0, 0.8, -2.2])
def test_elementary_derivatives_match_central_differences(k, q):
    h = 1e-5
    fd1 = (tf.elementary(k, q + h) - tf.elementary(k, q - h)) / (2 * h)
    fd2 = (tf.elementary(k, q + h) - 2 * tf.elementary(k, q) + tf.elementary(k, q - h)) / h**2
    np.testing.assert_allclose(tf.elementary_d1(k, q), fd1, atol=1e-9)
    np.testing.assert_allclose(tf.elementary_d2(k, q), fd2, atol=1e-5)


def test_translation_second_derivative_is_zero_and_generators_are_constant():
    for k in (tf.TX, tf.TY, tf.TZ):
        assert not tf.elementary_d2(k, 1.3).any()
    with pytest.raises(ValueError):
        tf.GENERATORS[0, 0, 3] = 5.0


def test_block_inverse_is_the_inverse_and_never_general():
    T = tf.compose(tf.rot_x(0.4), tf.trans_y(2.0), tf.rot_z(-1.1), tf.trans_x(0.3), tf.rot_y(2.5))
    Ti = tf.inverse(T)
    np.testing.assert_allclose(Ti @ T, np.eye(4), atol=1e-14)
    np.testing.assert_allclose(T @ Ti, np.eye(4), atol=1e-14)
    # block formula: R^T and -R^T p
    np.testing.assert_allclose(Ti[:3, :3], T[:3, :3].T, atol=1e-15)
    np.testing.assert_allclose(Ti[:3, 3], -T[:3, :3].T @ T[:3, 3], atol=1e-15)
    # batched
    batch = np.stack([T, tf.rot_z(0.2)])
    np.testing.assert_allclose(tf.inverse(batch) @ batch, np.broadcast_to(np.eye(4), (2, 4, 4)), atol=1e-14)


def test_composition_order_is_successive_motions():
    # rotate 90 deg about z then translate 1 along the NEW x: the origin lands on world +y
    T = tf.compose(tf.rot_z(math.pi / 2), tf.trans_x(1.0))
    np.testing.assert_allclose(tf.transform_point(T, [0, 0, 0]), [0, 1, 0], atol=1e-15)
    np.testing.assert_allclose(tf.compose(), np.eye(4))


def test_velocity_and_acceleration_composition_rules():
    # aTb(t) = Rz(w t) , bTc(t) = Tx(v t) Rx(u t); compare the composed derivatives with differences of aTc(t)
    w, v, u, t, h = 1.3, 0.7, -2.0, 0.4, 1e-5

    def parts(t):
        ab = tf.rot_z(w * t)
        dab = w * tf.elementary_d1(tf.RZ, w * t)
        ddab = w * w * tf.elementary_d2(tf.RZ, w * t)
        tx, rx = tf.trans_x(v * t), tf.rot_x(u * t)
        bc = tx @ rx
        dbc = v * tf.elementary_d1(tf.TX, v * t) @ rx + u * tx @ tf.elementary_d1(tf.RX, u * t)
        ddbc = (u * u * tx @ tf.elementary_d2(tf.RX, u * t)
                + 2 * v * u * tf.elementary_d1(tf.TX, v * t) @ tf.elementary_d1(tf.RX, u * t))
        return ab, dab, ddab, bc, dbc, ddbc

    ab, dab, ddab, bc, dbc, ddbc = parts(t)
    ac = lambda s: parts(s)[0] @ parts(s)[3]  # noqa: E731
    fd1 = (ac(t + h) - ac(t - h)) / (2 * h)
    fd2 = (ac(t + h) - 2 * ac(t) + ac(t - h)) / h**2
    np.testing.assert_allclose(tf.compose_velocity(ab, dab, bc, dbc), fd1, atol=1e-8)
    np.testing.assert_allclose(tf.compose_acceleration(ab, dab, ddab, bc, dbc, ddbc), fd2, atol=1e-4)
    # the velocity matrix of a rotation about z at rate w is w [e_z]x with zero origin velocity
    V = tf.velocity_matrix(ab, dab)
    np.testing.assert_allclose(V[:3, :3], w * tf.skew([0, 0, 1]), atol=1e-14)
    np.testing.assert_allclose(V[:3, 3], 0, atol=1e-14)
    # acceleration matrix of uniform rotation: w^2 [e_z]x^2 (centripetal)
    A = tf.acceleration_matrix(ab, ddab)
    np.testing.assert_allclose(A[:3, :3], w * w * tf.skew([0, 0, 1]) @ tf.skew([0, 0, 1]), atol=1e-14)


def test_frame_from_axis_is_right_handed_with_z_on_axis():
    F = tf.frame_from_axis([1, 2, 3], [0, 1, 1], axis2=[1, 0, 0])
    R = F[:3, :3]
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-14)
    assert np.linalg.det(R) == pytest.approx(1.0)
    np.testing.assert_allclose(R[:, 2], np.array([0, 1, 1]) / math.sqrt(2), atol=1e-15)
    np.testing.assert_allclose(R[:, 0], [1, 0, 0], atol=1e-15)
    np.testing.assert_allclose(F[:3, 3], [1, 2, 3])
    # z axis: the frame is the world frame's orientation up to a rotation about z
    Fz = tf.frame_from_axis([0, 0, 0], [0, 0, 1])
    np.testing.assert_allclose(Fz[:3, 2], [0, 0, 1])


def test_skew_is_cross_product():
    a, b = np.array([1.0, -2.0, 0.5]), np.array([0.3, 4.0, -1.0])
    np.testing.assert_allclose(tf.skew(a) @ b, np.cross(a, b))
    np.testing.assert_allclose(tf.unskew(tf.skew(a)), a)


def test_quaternion_known_values():
    # 90 deg about z: q = (cos 45, 0, 0, sin 45); R maps x to y
    q = tf.axis_angle_to_quat([0, 0, 2], math.pi / 2)
    np.testing.assert_allclose(q, [math.sqrt(0.5), 0, 0, math.sqrt(0.5)], atol=1e-15)
    np.testing.assert_allclose(tf.quat_to_matrix(q), [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-15)
    # 180 deg about x: q = (0, 1, 0, 0)
    np.testing.assert_allclose(tf.matrix_to_quat(np.diag([1.0, -1.0, -1.0])), [0, 1, 0, 0], atol=1e-15)
    # i * j = k
    np.testing.assert_allclose(tf.quat_multiply([0, 1, 0, 0], [0, 0, 1, 0]), [0, 0, 0, 1])
    np.testing.assert_allclose(tf.quat_normalize([-2, 0, 0, 0]), [1, 0, 0, 0])
    axis, angle = tf.quat_to_axis_angle([1, 0, 0, 0])
    assert angle == 0.0 and np.linalg.norm(axis) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        tf.quat_normalize([0, 0, 0, 0])


def test_rotation_conversions_round_trip():
    rng = np.random.default_rng(3)
    for _ in range(50):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        angle = rng.uniform(0, math.pi)
        R = tf.axis_angle_to_matrix(axis, angle)
        np.testing.assert_allclose(R, tf.quat_to_matrix(tf.axis_angle_to_quat(axis, angle)), atol=1e-14)
        q = tf.matrix_to_quat(R)
        np.testing.assert_allclose(tf.quat_to_matrix(q), R, atol=1e-14)
        a2, ang2 = tf.matrix_to_axis_angle(R)
        np.testing.assert_allclose(ang2, angle, atol=1e-12)
        np.testing.assert_allclose(a2, axis, atol=1e-10)
        # composition agrees: q1*q2 <-> R1 R2
        q2 = tf.axis_angle_to_quat(rng.normal(size=3), rng.uniform(-3, 3))
        np.testing.assert_allclose(tf.quat_to_matrix(tf.quat_multiply(q, q2)), R @ tf.quat_to_matrix(q2), atol=1e-14)
    # the 4x4 rotation equals the axis-angle matrix for an elementary rotation
    np.testing.assert_allclose(tf.axis_angle_to_matrix([0, 1, 0], 0.7), tf.rot_y(0.7)[:3, :3], atol=1e-15)


def test_quat_to_matrix_of_a_batch_is_each_quaternions_matrix():
    # a (2, 3, 4) stack of unnormalised quaternions gives the (2, 3, 3, 3) stack of their matrices
    q = np.random.default_rng(5).normal(size=(2, 3, 4))
    R = tf.quat_to_matrix(q)
    assert R.shape == (2, 3, 3, 3)
    for i in range(2):
        for j in range(3):
            np.testing.assert_allclose(R[i, j], tf.quat_to_matrix(q[i, j]), rtol=0, atol=1e-15)
