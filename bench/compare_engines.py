"""Side by side: Linkwright (implicit, explicit) vs MuJoCo and PyBullet on the same scenes at the same step h.

    python bench/compare_engines.py [--dt H] [--t-roll T] [--t-box T]

MuJoCo and PyBullet are optional extras used only by this script (`pip install mujoco pybullet`); an engine
that is not installed gets a "not installed" row and the others still run.

Scenes (identical in every engine: same masses, sizes, friction, gravity, initial state and h):
* roll: a solid sphere (m = 1 kg, R = 0.1 m) resting on the plane z = 0, launched sliding with v0 = 2 m/s along x
  and no spin, mu = 0.3, gravity (0, 0, -9.81). Analytic solution (derived below): it slides until
  t* = 2 v0 / (7 mu g), then rolls without slipping at 5/7 v0 for ever.
* box: a cube (m = 1 kg, edge 0.2 m) at rest on an incline of alpha = 0.3 rad with mu = 0.5, the incline made by
  tilting gravity to g (sin alpha, 0, -cos alpha) over the plane z = 0. tan(0.3) = 0.309 < 0.5, so the cube is
  below the friction angle and must stick: zero creep analytically.

Metrics, computed by one function from every engine's trajectory (body position, quaternion, velocities):
* penetration: max over all steps of the depth of the body below the plane (sphere: R - z; cube: -min corner z);
* creep: in-plane displacement of the cube after t-box seconds (analytic 0);
* t_roll error: first sample time at which the contact-point slip speed is below SLIP_TOL, minus t* (the
  contact point is the sphere's lowest point, or midway through the penetration when there is one). A stepper
  that is exact in the sliding phase first reaches zero slip at the first step k with k h >= t*, so the best
  possible value on the grid is ceil(t*/h) h - t* (printed as the reference line);
* v_end error: sphere speed at t-roll relative to 5/7 v0, minus 1;
* steps/s: simulated steps per wall-clock second of each scene, including reading the state back every step
  (Linkwright records it in its Recording; the other engines are queried through their Python APIs).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from core import io  # noqa: E402
from core.contact import build_model, prepare_kernels, simulate  # noqa: E402

G = 9.81  # m/s^2
MASS = 1.0  # kg, both bodies
R = 0.1  # m, sphere radius
V0 = 2.0  # m/s, initial sliding speed of the sphere (no spin)
MU_ROLL = 0.3  # sphere/plane friction
HALF = 0.1  # m, half edge of the cube
ALPHA = 0.3  # rad, incline
MU_BOX = 0.5  # cube/plane friction (tan ALPHA = 0.309 < MU_BOX: sticks)
SLIP_TOL = 1e-3  # m/s; the sliding slip decreases by 3.5 mu g h = 0.1 m/s per step at h = 0.01

# Sliding phase (Coulomb friction mu m g opposing the contact-point slip, normal force m g):
#   m dv/dt = -mu m g                 -> v(t) = v0 - mu g t
#   I dw/dt = mu m g R, I = 2/5 m R^2 -> w(t) = 5/2 mu g t / R
# the slip v - w R = v0 - 7/2 mu g t vanishes at t* = 2 v0 / (7 mu g), where v = v0 - 2/7 v0 = 5/7 v0. After
# that rolling needs no friction force (flat plane, no rolling resistance), so the speed stays 5/7 v0. Check by
# angular momentum about the contact line, which friction cannot change: m v0 R = m v R + I v / R = 7/5 m v R.
T_STAR = 2 * V0 / (7 * MU_ROLL * G)
V_ROLL = 5 / 7 * V0
G_INCLINE = (G * math.sin(ALPHA), 0.0, -G * math.cos(ALPHA))


@dataclass
class Trajectory:
    """One body's motion sampled at t = k h (row 0 the initial state), world frame, plus the stepping wall time."""

    t: np.ndarray  # (K,)
    position: np.ndarray  # (K,3) centre of mass
    quat: np.ndarray  # (K,4) orientation (w, x, y, z)
    velocity: np.ndarray  # (K,3) of the centre of mass
    angular: np.ndarray  # (K,3) world frame
    seconds: float  # wall time of the steps
    note: str = ""  # e.g. why a run stopped early


def _rotation(q: np.ndarray) -> np.ndarray:
    """Rotation matrix of a unit quaternion (w, x, y, z)."""
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


CORNERS = HALF * np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)


def _slip(roll: Trajectory) -> np.ndarray:
    """Tangential speed of the sphere's material point at the contact point, per sample."""
    # The contact point is the sphere's lowest point, or, when the sphere penetrates the plane, the point midway
    # between its lowest point and the plane (where MuJoCo puts it; measuring at depth R instead would make a
    # soft contact that rolls exactly look like slipping at w * penetration / 2).
    z = roll.position[:, 2]
    low = z - R
    zc = np.where(low < 0, low / 2, low)
    r = np.zeros_like(roll.position)
    r[:, 2] = zc - z
    v = roll.velocity + np.cross(roll.angular, r)
    return np.linalg.norm(v[:, :2], axis=1)


def metrics(roll: Trajectory, box: Trajectory) -> dict[str, float | None]:
    """The compared numbers from the two scenes' trajectories (None where undefined, e.g. never rolled)."""
    out: dict[str, float | None] = {}
    out["pen_roll"] = max(0.0, float(R - roll.position[:, 2].min()))
    low = min(float((box.position[k] + CORNERS @ _rotation(box.quat[k]).T)[:, 2].min()) for k in range(box.t.size))
    out["pen_box"] = max(0.0, -low)
    out["creep"] = float(np.linalg.norm(box.position[-1, :2] - box.position[0, :2]))
    out["min_slip"] = float(_slip(roll)[np.searchsorted(roll.t, T_STAR):].min())
    rolling = np.flatnonzero(_slip(roll) < SLIP_TOL)
    out["t_roll_err"] = float(roll.t[rolling[0]] - T_STAR) if rolling.size else None
    out["v_end_err"] = float(np.linalg.norm(roll.velocity[-1, :2]) / V_ROLL - 1.0)
    out["sps_roll"] = (roll.t.size - 1) / roll.seconds if roll.seconds > 0 else None
    out["sps_box"] = (box.t.size - 1) / box.seconds if box.seconds > 0 else None
    return out


# ---------------------------------------------------------------- Linkwright

def _lw_doc(body: dict, mu: float, gravity) -> object:
    floor = {"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}}
    return io.loads(json.dumps({"format": "linkwright.mechanism", "version": 1, "space": "spatial",
                                "gravity": list(gravity), "bodies": [floor, body],
                                "contact": {"friction": mu, "ellipsoid": [1, 1, 0]}}))  # e_r = 0: no torsion


def _lw_run(body: dict, mu: float, gravity, h: float, t_end: float, method: str) -> Trajectory:
    model = build_model(_lw_doc(body, mu, gravity))
    t0 = time.perf_counter()
    rec = simulate(model, t_end=t_end, dt=h, method=method)
    sec = time.perf_counter() - t0
    # centred shapes: the body origin is the centre of mass
    return Trajectory(rec.t, rec.position[:, 0], rec.orientation[:, 0], rec.velocity[:, 0], rec.angular[:, 0], sec,
                      "" if rec.completed else rec.reason)


def linkwright(method: str, h: float, t_roll: float, t_box: float) -> tuple[Trajectory, Trajectory]:
    """Both scenes with Linkwright's contact stepper (method 'implicit' or 'explicit')."""
    ball = {"name": "ball", "mass": MASS, "shape": {"type": "sphere", "radius": R},
            "pose": {"position": [0, 0, R]}, "velocity": {"linear": [V0, 0, 0]}}
    box = {"name": "box", "mass": MASS, "shape": {"type": "box", "size": [2 * HALF] * 3},
           "pose": {"position": [0, 0, HALF]}}
    return (_lw_run(ball, MU_ROLL, (0, 0, -G), h, t_roll, method),
            _lw_run(box, MU_BOX, G_INCLINE, h, t_box, method))


# ---------------------------------------------------------------- MuJoCo (optional extra)

# Soft contacts: MuJoCo's contact is a constraint with a reference acceleration (spring-damper of time constant
# solref[0] and damping ratio solref[1]) and an impedance solimp; penetration and creep at rest are part of the
# model, not solver error. We keep MuJoCo's defaults (solref 0.02 1, solimp 0.9 0.95 0.001 0.5 2; solref[0] is
# clamped to >= 2 h anyway) and the default Euler integrator and Newton solver, and choose the elliptic friction
# cone (default pyramidal) with condim 3 (sliding friction only; matches Linkwright's e_r = 0). MuJoCo combines
# the two geoms' friction by max, so both get mu. No noslip iterations (the default).
MJ_OPTION = '<option timestep="{h}" gravity="{gx} {gy} {gz}" cone="elliptic" integrator="Euler"/>'


def _mj_run(geom: str, mu: float, gravity, h: float, t_end: float, z0: float, v0) -> tuple[Trajectory, str]:
    import mujoco  # optional extra

    xml = (f'<mujoco>{MJ_OPTION.format(h=h, gx=gravity[0], gy=gravity[1], gz=gravity[2])}<worldbody>'
           f'<geom name="floor" type="plane" size="5 5 0.1" condim="3" friction="{mu} 0 0"/>'
           f'<body pos="0 0 {z0}"><freejoint/>{geom.format(mu=mu, mass=MASS)}</body>'
           f'</worldbody></mujoco>')
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qvel[:3] = v0
    mujoco.mj_forward(m, d)
    n = int(round(t_end / h))
    pos, quat, vel, ang = np.zeros((n + 1, 3)), np.zeros((n + 1, 4)), np.zeros((n + 1, 3)), np.zeros((n + 1, 3))
    w = np.zeros(3)

    def read(k):
        pos[k], quat[k], vel[k] = d.qpos[:3], d.qpos[3:7], d.qvel[:3]
        mujoco.mju_rotVecQuat(w, d.qvel[3:6], d.qpos[3:7])  # free joint: angular velocity is in the body frame
        ang[k] = w

    read(0)
    t0 = time.perf_counter()
    for k in range(1, n + 1):
        mujoco.mj_step(m, d)
        read(k)
    sec = time.perf_counter() - t0
    params = (f"mujoco {mujoco.__version__}: cone={mujoco.mjtCone(m.opt.cone).name}, "
              f"integrator={mujoco.mjtIntegrator(m.opt.integrator).name}, solver={mujoco.mjtSolver(m.opt.solver).name}, "
              f"solref={' '.join(f'{x:g}' for x in m.geom_solref[1])}, "
              f"solimp={' '.join(f'{x:g}' for x in m.geom_solimp[1])}, impratio={m.opt.impratio:g}, "
              f"noslip_iterations={m.opt.noslip_iterations}, condim=3, friction combined by max")
    return Trajectory(np.arange(n + 1) * h, pos, quat, vel, ang, sec), params


def mujoco_run(h: float, t_roll: float, t_box: float) -> tuple[Trajectory, Trajectory, str]:
    """Both scenes in MuJoCo (mj_step with opt.timestep = h); also returns a line describing its contact parameters."""
    roll, params = _mj_run('<geom type="sphere" size="{R}" mass="{{mass}}" condim="3" friction="{{mu}} 0 0"/>'
                           .format(R=R), MU_ROLL, (0, 0, -G), h, t_roll, R, (V0, 0, 0))
    box, _ = _mj_run('<geom type="box" size="{a} {a} {a}" mass="{{mass}}" condim="3" friction="{{mu}} 0 0"/>'
                     .format(a=HALF), MU_BOX, G_INCLINE, h, t_box, HALF, (0, 0, 0))
    return roll, box, params


# ---------------------------------------------------------------- PyBullet (optional extra)

# Bullet (sequential impulses, maximal coordinates): the pair's friction and restitution are the PRODUCTS of the
# two bodies' coefficients (btManifoldResult), so the plane gets lateralFriction = 1 and the body mu; restitution
# 0 on both. Spinning and rolling friction are 0 (Bullet's default; matches e_r = 0). We ask for the implicit cone
# friction (enableConeFriction = 1; otherwise two independently clamped directions) and keep Bullet's defaults for
# the rest (50 solver iterations, ERP / split impulse position correction, contact breaking threshold). Sleeping is
# disabled so a resting body is not frozen by deactivation (that would hide creep).
def _pb_run(p, shape: int, mu: float, gravity, h: float, t_end: float, z0: float, v0) -> Trajectory:
    p.resetSimulation()
    p.setPhysicsEngineParameter(fixedTimeStep=h, numSubSteps=0, enableConeFriction=1, deterministicOverlappingPairs=1)
    p.setTimeStep(h)
    p.setGravity(*gravity)
    plane = p.createMultiBody(0, p.createCollisionShape(p.GEOM_PLANE))
    body = p.createMultiBody(MASS, shape(), basePosition=[0, 0, z0])  # inertia from the shape (uniform solid)
    p.changeDynamics(plane, -1, lateralFriction=1.0, restitution=0.0, rollingFriction=0.0, spinningFriction=0.0)
    p.changeDynamics(body, -1, lateralFriction=mu, restitution=0.0, rollingFriction=0.0, spinningFriction=0.0,
                     linearDamping=0.0, angularDamping=0.0, activationState=p.ACTIVATION_STATE_DISABLE_SLEEPING)
    p.resetBaseVelocity(body, list(v0), [0, 0, 0])
    n = int(round(t_end / h))
    pos, quat, vel, ang = np.zeros((n + 1, 3)), np.zeros((n + 1, 4)), np.zeros((n + 1, 3)), np.zeros((n + 1, 3))

    def read(k):
        x, q = p.getBasePositionAndOrientation(body)
        v, w = p.getBaseVelocity(body)
        pos[k], quat[k], vel[k], ang[k] = x, (q[3], q[0], q[1], q[2]), v, w  # Bullet quaternions are (x, y, z, w)

    read(0)
    t0 = time.perf_counter()
    for k in range(1, n + 1):
        p.stepSimulation()
        read(k)
    sec = time.perf_counter() - t0
    return Trajectory(np.arange(n + 1) * h, pos, quat, vel, ang, sec)


def pybullet_run(h: float, t_roll: float, t_box: float) -> tuple[Trajectory, Trajectory, str]:
    """Both scenes in PyBullet (DIRECT mode, setTimeStep(h)); also returns a line describing its settings."""
    import pybullet as p  # optional extra (prints its build time to stdout on import)

    cid = p.connect(p.DIRECT)
    try:
        roll = _pb_run(p, lambda: p.createCollisionShape(p.GEOM_SPHERE, radius=R), MU_ROLL, (0, 0, -G), h, t_roll,
                       R, (V0, 0, 0))
        box = _pb_run(p, lambda: p.createCollisionShape(p.GEOM_BOX, halfExtents=[HALF] * 3), MU_BOX, G_INCLINE, h,
                      t_box, HALF, (0, 0, 0))
        prm = p.getPhysicsEngineParameters()
        params = (f"pybullet {p.getAPIVersion()}: fixedTimeStep={prm['fixedTimeStep']:g}, "
                  f"numSubSteps={prm['numSubSteps']}, numSolverIterations={prm['numSolverIterations']}, "
                  "enableConeFriction=1, friction/restitution combined by product (plane 1 x body mu), "
                  "restitution 0, sleeping disabled")
    finally:
        p.disconnect(cid)
    return roll, box, params


# ---------------------------------------------------------------- table

COLUMNS = (("pen_roll", "pen roll [m]", "{:.2e}"), ("pen_box", "pen box [m]", "{:.2e}"),
           ("creep", "creep [m]", "{:.2e}"), ("t_roll_err", "t_roll err [s]", "{:+.4f}"),
           ("v_end_err", "v_end err", "{:+.2e}"), ("sps_roll", "steps/s roll", "{:.0f}"),
           ("sps_box", "steps/s box", "{:.0f}"))


def _row(name: str, r: dict | None, text: str = "") -> str:
    if r is None:
        return f"{name:22s} {text}"
    cells = ["n/a" if r[k] is None else fmt.format(r[k]) for k, _, fmt in COLUMNS]
    return f"{name:22s} " + " ".join(f"{c:>14s}" for c in cells)


def main() -> None:
    ap = argparse.ArgumentParser(description="Linkwright vs MuJoCo vs PyBullet on the same contact scenes.")
    ap.add_argument("--dt", type=float, default=0.01, help="time step h for every engine (s)")
    ap.add_argument("--t-roll", type=float, default=1.0, help="duration of the rolling-sphere scene (s)")
    ap.add_argument("--t-box", type=float, default=1.0, help="duration of the box-on-incline scene (s)")
    args = ap.parse_args()
    h = args.dt
    if not (h > 0 and args.t_roll > T_STAR + 2 * h and args.t_box > 0):
        ap.error(f"need --dt > 0, --t-roll > t* + 2 h = {T_STAR + 2 * h:.3f} s and --t-box > 0")

    rows, notes = [], []
    # the compiled kernels load from numba's cache (or compile, on a machine's first run) outside the timed runs
    notes.append(f"linkwright: kernels loaded in {prepare_kernels():.2f} s before the timed runs")
    for method in ("implicit", "explicit"):
        roll, box = linkwright(method, h, args.t_roll, args.t_box)
        stopped = [f"* linkwright {method}, {scene} scene {tr.note} (metrics over the frames computed)"
                   for scene, tr in (("roll", roll), ("box", box)) if tr.note]
        rows.append((f"linkwright {method}" + (" *" if stopped else ""), metrics(roll, box), ""))
        notes += stopped
    for name, fn in (("mujoco", mujoco_run), ("pybullet", pybullet_run)):
        try:
            roll, box, params = fn(h, args.t_roll, args.t_box)
        except ImportError:
            rows.append((name, None, f"not installed (pip install {name}); skipped"))
            continue
        rows.append((name, metrics(roll, box), ""))
        notes.append(params)
    for name, r, _ in rows:
        if r is not None and r["t_roll_err"] is None:
            notes.append(f"{name}: the slip never fell below {SLIP_TOL:g} m/s (smallest after t*: {r['min_slip']:.2e} m/s)")

    print(f"\nh = {h:g} s; roll: sphere R = {R} m, m = {MASS} kg, v0 = {V0} m/s, mu = {MU_ROLL}, {args.t_roll:g} s; "
          f"box: cube {2 * HALF} m, m = {MASS} kg, incline {ALPHA} rad (tilted gravity), mu = {MU_BOX}, {args.t_box:g} s")
    print(f"analytic: t* = 2 v0/(7 mu g) = {T_STAR:.4f} s, v_end = 5/7 v0 = {V_ROLL:.4f} m/s, creep 0, penetration 0; "
          f"best t_roll err on the grid = {math.ceil(T_STAR / h - 1e-12) * h - T_STAR:+.4f} s (slip tol {SLIP_TOL:g} m/s)")
    print(f"{'engine / method':22s} " + " ".join(f"{title:>14s}" for _, title, _ in COLUMNS))
    for name, r, text in rows:
        print(_row(name, r, text))
    for n in notes:
        print("  " + n)


if __name__ == "__main__":
    main()
