"""Kinematics by the 4x4 matrix method: open chains, loop closure, velocities, accelerations, trajectories, mobility.

Typical use (model/data separation: the compiled model is constant, a Workspace holds buffers):

    km = compile_model(mech)                      # once per document snapshot
    traj = solve_trajectory(km, np.linspace(0, 1, 101))
    poses = body_poses(km, traj.q[-1])            # (n_bodies, 4, 4) world transforms
"""

from __future__ import annotations

from .mobility import (
    AnalysisCancelled,
    RankMobility,
    body_twist_jacobian,
    check_drivers,
    driver_fixed_masks,
    fixed_by_drivers,
    rank_mobility,
)
from .model import KinematicModel, compile_model
from .solver import (
    PositionResult,
    Workspace,
    body_poses,
    body_twists,
    forward,
    loop_jacobian,
    loop_residual,
    point_kinematics,
    point_positions,
    solve_accelerations,
    solve_positions,
    solve_velocities,
    twist_jacobian,
)
from .trajectory import DrivenMotion, Frame, MotionEnd, Trajectory, TrajectoryRun, driver_values, solve_trajectory, trajectory_of

__all__ = [
    "KinematicModel", "compile_model", "Workspace", "PositionResult",
    "forward", "body_poses", "loop_residual", "loop_jacobian", "twist_jacobian",
    "solve_positions", "solve_velocities", "solve_accelerations", "body_twists",
    "point_positions", "point_kinematics",
    "Frame", "Trajectory", "TrajectoryRun", "DrivenMotion", "MotionEnd", "fixed_by_drivers", "driver_fixed_masks",
    "solve_trajectory", "trajectory_of", "driver_values",
    "RankMobility", "rank_mobility", "AnalysisCancelled", "check_drivers", "body_twist_jacobian",
]
