"""Side by side: Linkwright (implicit, explicit) vs MuJoCo and PyBullet when installed (optional extras).

    python bench/compare_engines.py

Scenes at the same h = 0.01: a sphere launched sliding (v0 = 2 m/s, mu = 0.3) that must start rolling at
t* = 2 v0 / (7 mu g); a box on a 0.3 rad incline with mu = 0.5 (must stick: zero creep).
Prints penetration (m), creep over 1 s (m), transition-time error (s) and steps/s for each engine.
MuJoCo and PyBullet are imported only here; when missing a note is printed and they are skipped.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench_contact import FLOOR, _doc  # noqa: E402
from core.contact import build_model, simulate  # noqa: E402

G, H, MU_ROLL, V0, R = 9.81, 0.01, 0.3, 2.0, 0.1
ALPHA, MU_BOX = 0.3, 0.5


def linkwright(method):
    out = {}
    mech = _doc([FLOOR, {"name": "ball", "mass": 1, "shape": {"type": "sphere", "radius": R},
                         "pose": {"position": [0, 0, R]}, "velocity": {"linear": [V0, 0, 0]}}], mu=MU_ROLL)
    t0 = time.perf_counter()
    rec = simulate(build_model(mech), t_end=1.0, dt=H, method=method)
    out["steps/s"] = (rec.n_frames - 1) / (time.perf_counter() - t0)
    v, w = rec.velocity[:, 0, 0], rec.angular[:, 0, 1]
    t_roll = rec.t[np.flatnonzero(np.abs(v - w * R) < 1e-6)[0]]
    out["transition error"] = t_roll - 2 * V0 / (7 * MU_ROLL * G)
    out["penetration"] = max(0.0, -(rec.position[:, 0, 2] - R).min())
    g = (G * math.sin(ALPHA), 0, -G * math.cos(ALPHA))
    mech = _doc([FLOOR, {"name": "box", "mass": 1, "shape": {"type": "box", "size": [0.2, 0.2, 0.2]},
                         "pose": {"position": [0, 0, 0.1]}}], mu=MU_BOX, gravity=g)
    rec = simulate(build_model(mech), t_end=1.0, dt=H, method=method)
    out["creep"] = float(np.linalg.norm(rec.position[-1, 0, :2] - rec.position[0, 0, :2]))
    return out


def mujoco_run():
    import mujoco  # optional extra

    xml = f"""<mujoco><option timestep="{H}" gravity="0 0 {-G}"/><worldbody>
      <geom type="plane" size="5 5 .1" friction="{MU_ROLL} 0.005 0.0001"/>
      <body pos="0 0 {R}"><freejoint/><geom type="sphere" size="{R}" mass="1" friction="{MU_ROLL} 0.005 0.0001"/></body>
      </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qvel[0] = V0
    t0 = time.perf_counter()
    zs, roll = [], None
    for k in range(100):
        mujoco.mj_step(m, d)
        zs.append(d.qpos[2])
        if roll is None and abs(d.qvel[0] - d.qvel[4] * R) < 1e-3:
            roll = (k + 1) * H
    rate = 100 / (time.perf_counter() - t0)
    out = {"steps/s": rate, "penetration": max(0.0, R - min(zs)),
           "transition error": (roll if roll is not None else float("nan")) - 2 * V0 / (7 * MU_ROLL * G)}
    gx, gz = G * math.sin(ALPHA), -G * math.cos(ALPHA)
    xml = f"""<mujoco><option timestep="{H}" gravity="{gx} 0 {gz}"/><worldbody>
      <geom type="plane" size="5 5 .1" friction="{MU_BOX} 0.005 0.0001"/>
      <body pos="0 0 0.1"><freejoint/><geom type="box" size=".1 .1 .1" mass="1" friction="{MU_BOX} 0.005 0.0001"/></body>
      </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    x0 = d.qpos[:2].copy()
    for _ in range(100):
        mujoco.mj_step(m, d)
    out["creep"] = float(np.linalg.norm(d.qpos[:2] - x0))
    return out


def pybullet_run():
    import pybullet as p  # optional extra

    cid = p.connect(p.DIRECT)
    p.setTimeStep(H)
    p.setGravity(0, 0, -G)
    plane = p.createMultiBody(0, p.createCollisionShape(p.GEOM_PLANE))
    ball = p.createMultiBody(1, p.createCollisionShape(p.GEOM_SPHERE, radius=R), basePosition=[0, 0, R])
    for b in (plane, ball):
        p.changeDynamics(b, -1, lateralFriction=MU_ROLL, restitution=0)
    p.resetBaseVelocity(ball, [V0, 0, 0])
    t0 = time.perf_counter()
    zs, roll = [], None
    for k in range(100):
        p.stepSimulation()
        pos, _ = p.getBasePositionAndOrientation(ball)
        v, w = p.getBaseVelocity(ball)
        zs.append(pos[2])
        if roll is None and abs(v[0] - w[1] * R) < 1e-3:
            roll = (k + 1) * H
    rate = 100 / (time.perf_counter() - t0)
    out = {"steps/s": rate, "penetration": max(0.0, R - min(zs)),
           "transition error": (roll if roll is not None else float("nan")) - 2 * V0 / (7 * MU_ROLL * G)}
    p.resetSimulation()
    p.setTimeStep(H)
    p.setGravity(G * math.sin(ALPHA), 0, -G * math.cos(ALPHA))
    plane = p.createMultiBody(0, p.createCollisionShape(p.GEOM_PLANE))
    box = p.createMultiBody(1, p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.1, 0.1, 0.1]), basePosition=[0, 0, 0.1])
    for b in (plane, box):
        p.changeDynamics(b, -1, lateralFriction=MU_BOX)
    for _ in range(100):
        p.stepSimulation()
    pos, _ = p.getBasePositionAndOrientation(box)
    out["creep"] = float(np.hypot(pos[0], pos[1]))
    p.disconnect(cid)
    return out


def show(name, r):
    print(f"{name:22s} penetration={r['penetration']:.3e} m  creep={r['creep']:.3e} m  "
          f"transition error={r['transition error']:+.4f} s  {r['steps/s']:.0f} steps/s")


def main() -> None:
    show("linkwright implicit", linkwright("implicit"))
    show("linkwright explicit", linkwright("explicit"))
    for name, fn in (("mujoco", mujoco_run), ("pybullet", pybullet_run)):
        try:
            show(name, fn())
        except ImportError:
            print(f"note: {name} is not installed (pip install {name}); skipped")


if __name__ == "__main__":
    main()
