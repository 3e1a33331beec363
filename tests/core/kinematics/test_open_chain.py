"""Open chains: body poses and named-point positions, velocities and accelerations against the differentiated closed form."""

from pathlib import Path

import numpy as np
import sympy

from core import io
from core.kinematics import compile_model, solve_trajectory

EXAMPLES = Path(__file__).resolve().parents[3] / "resources" / "examples"


def test_double_pendulum_points_match_the_differentiated_closed_form():
    mech = io.load(EXAMPLES / "double_pendulum.json")
    traj = solve_trajectory(compile_model(mech), np.linspace(0.0, 1.0, 41))
    assert traj.ok, traj.reason
    # Shoulder at the origin, elbow at (0, -1), lower tip at (0, -1.8) in the drawing; both joints turn about z:
    # elbow(t) = Rz(q1) (0, -1); tip(t) = elbow(t) + Rz(q1 + q2) (0, -0.8), with the example's drivers
    # q1 = 0.5 sin(2 pi t), q2 = 0.8 sin(4 pi t); velocities and accelerations by sympy.
    t = sympy.Symbol("t")
    q1 = 0.5 * sympy.sin(2 * sympy.pi * t)
    q2 = 0.8 * sympy.sin(4 * sympy.pi * t)

    def rz(a, v):
        return sympy.Matrix([sympy.cos(a) * v[0] - sympy.sin(a) * v[1], sympy.sin(a) * v[0] + sympy.cos(a) * v[1], 0])

    elbow = rz(q1, (0, -1))
    tip = elbow + rz(q1 + q2, (0, -0.8))
    refs = {"upper.tip": elbow, "lower.tip": tip}
    for name, expr in refs.items():
        k = traj.point_names.index(name)
        for got, e in ((traj.points, expr), (traj.point_vel, expr.diff(t)), (traj.point_acc, expr.diff(t, 2))):
            f = sympy.lambdify(t, e, "numpy")
            ref = np.array([np.asarray(f(x), dtype=float).ravel() for x in traj.times])
            np.testing.assert_allclose(got[:, k], ref, atol=1e-9, rtol=0)
