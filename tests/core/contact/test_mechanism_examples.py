"""The mechanism examples of the contact time-stepper (resources/examples/contact_*.json with joints): each runs
from the command line and behaves physically, checked against a criterion derived in the test."""

from pathlib import Path

import numpy as np
import pytest

from core import io
from core.contact import build_model, initial_state, simulate
from core.contact.joints import joint_errors
from core.contact.recording import iter_steps
from core.transforms import quat_to_matrix

EXAMPLES = Path(__file__).resolve().parents[3] / "resources" / "examples"


def _model(name):
    return build_model(io.load(EXAMPLES / f"{name}.json"))


def _states(model, h, t_end):
    """Every state of a run of t_end at step h; every step converged and closed every joint to 1e-9 m and 1e-9 rad."""
    states = [initial_state(model)]
    for res in iter_steps(model, h, int(round(t_end / h))):
        assert res.converged, res.reason
        err = joint_errors(model, res.state)
        assert np.all(err <= 1e-9), (res.state.t, err)
        states.append(res.state)
    return states


def _energy(model, states):
    """(total energy, kinetic energy) of the dynamic bodies at each state (J): kinetic + gravity's potential."""
    E, K = [], []
    for s in states:
        e = k = 0.0
        for i in np.flatnonzero(model.dynamic):
            R = quat_to_matrix(s.q[i])
            k += 0.5 * model.mass[i] * s.v[i] @ s.v[i] + 0.5 * s.w[i] @ (R @ model.inertia_body[i] @ R.T) @ s.w[i]
            e -= model.mass[i] * model.gravity @ s.p[i]  # (s.p is the centre of mass)
        E.append(e + k)
        K.append(k)
    return np.array(E), np.array(K)


# ---- the four-bar swinging under gravity (no driver) ---------------------------------------------------------------


def test_fourbar_swing_keeps_its_joints_closed_and_its_energy_to_first_order():
    # no friction, no contact, no driver: the energy is constant; the step's error in it is first order in h and
    # oscillates without drift (docs/contact.md, Joints). Measured on this example: 7 % of the largest kinetic energy
    # at h = 0.01 s, 2.8 % at h / 2, and over 3 s no more than over the first second
    model = _model("contact_fourbar_swing")
    errs = []
    for h, t_end in ((0.01, 2.0), (0.005, 1.0)):
        states = _states(model, h, t_end)
        E, K = _energy(model, states)
        n1 = int(round(1.0 / h)) + 1  # the first second
        errs.append(np.abs(E[:n1] - E[0]).max() / K.max())
        if t_end > 1.0:
            # no drift: the second second's error is no larger than the first's (up to a margin for its oscillation)
            assert np.abs(E[n1:] - E[0]).max() <= 1.25 * np.abs(E[:n1] - E[0]).max()
        # it swings: the crank turns at more than 5 rad/s at some time (it falls from rest under the links' weight)
        crank = model.names.index("crank")
        assert max(abs(s.w[crank, 1]) for s in states) > 5.0
    assert errs[0] < 0.1, errs
    assert errs[1] < 0.6 * errs[0], errs  # first order: halving h at least nearly halves the error



# ---- helpers for the driven examples -------------------------------------------------------------------------------


def _run(name, t_end, dt=None):
    """The recording of an example run to t_end (its own step unless dt), completed, with no body entering another
    (every pair's gap >= -1e-9 m at every step)."""
    model = _model(name)
    rec = simulate(model, t_end=t_end, dt=dt or model.dt)
    assert rec.completed, rec.reason
    for name_ in ("position", "orientation", "velocity", "angular", "gap", "pn"):
        assert np.all(np.isfinite(getattr(rec, name_))), name_
    assert np.all(rec.gap[rec.active] >= -1e-9), rec.gap[rec.active].min()
    return model, rec


def _pair(rec, a, b):
    return rec.pair_names.index(f"{a}/{b}") if f"{a}/{b}" in rec.pair_names else rec.pair_names.index(f"{b}/{a}")


# ---- the cam ---------------------------------------------------------------------------------------------------------

CAM_A, CAM_B, CAM_Z = 0.05, 0.03, 0.1  # the cam's semi-axes (x, z at angle 0) and its shaft's height (the files)
FOLLOWER_HALF = 0.01  # half the follower's thickness


def _cam_support(theta):
    """Height above the shaft of the cam's highest point when turned by theta: the support function of the ellipse
    (semi-axes a along x, b along z) in the direction z, which the shaft's rotation turns by -theta in its frame:
    h = sqrt(a^2 sin^2 theta + b^2 cos^2 theta). A flat follower face rests at that height."""
    return np.sqrt((CAM_A * np.sin(theta)) ** 2 + (CAM_B * np.cos(theta)) ** 2)


def test_cam_follower_at_low_speed_follows_the_profile():
    # at 2 rad/s the follower's acceleration w^2 h''(theta) is at most 4 (a^2 - b^2) / b = 0.21 m/s^2, far below g: it
    # stays on the cam, so its height is the profile's: z = z_shaft + h(2 t) + half its thickness. The implicit step
    # closes the loaded contact exactly at the end of each step (gap within the solver's tolerance): 1e-8 m here
    # (measured: 1e-16), where a lag or a linearised gap would show as millimetres
    model, rec = _run("contact_cam_follower", 1.6)  # half a turn: one rise and fall
    f = rec.body_names.index("follower")
    expected = CAM_Z + _cam_support(2.0 * rec.t) + FOLLOWER_HALF
    assert np.abs(rec.position[:, f, 2] - expected).max() < 1e-8
    lift = rec.position[:, f, 2] - rec.position[0, f, 2]
    assert lift.max() > 0.019  # it rose by a - b = 2 cm at the nose
    np.testing.assert_allclose(rec.position[:, f, :2], 0.0, atol=1e-9)  # the guide holds it on its line
    p = _pair(rec, "cam", "follower")
    assert np.all(rec.pn[1:, p] > 0)  # loaded at every step: it never leaves the cam
    # the shaft's torque, by power balance (no friction): effort w = N dz/dt = N h'(theta) w, so effort = N h'(theta),
    # with the load N = m (g + w^2 h''(theta)) that lifts the follower along the profile; h = sqrt(u),
    # u = a^2 sin^2 + b^2 cos^2, u' = (a^2 - b^2) sin 2theta, u'' = 2 (a^2 - b^2) cos 2theta
    th = 2.0 * rec.t[1:]
    u = (CAM_A * np.sin(th)) ** 2 + (CAM_B * np.cos(th)) ** 2
    du, ddu = (CAM_A**2 - CAM_B**2) * np.sin(2 * th), 2 * (CAM_A**2 - CAM_B**2) * np.cos(2 * th)
    h1 = du / (2 * np.sqrt(u))
    h2 = ddu / (2 * np.sqrt(u)) - du**2 / (4 * u**1.5)
    m = model.mass[model.names.index("follower")]
    effort = m * (9.81 + 4.0 * h2) * h1
    assert rec.driver_names == ["shaft"]
    # (to 1 % of its peak: the recorded effort is the step's impulse / h, measured within 0.1 %)
    np.testing.assert_allclose(rec.driver_effort[1:, 0], effort, atol=0.01 * np.abs(effort).max())


def test_cam_follower_jumps_at_high_speed():
    # at 30 rad/s past a nose the follower would need w^2 (a^2 - b^2) / a = 28.8 m/s^2 downwards, more than g: it
    # separates, the pair's gap opens (> 1 mm) for some frames and closes again on the next flank
    model, rec = _run("contact_cam_jump", 0.3)
    p = _pair(rec, "cam", "follower")
    f = rec.body_names.index("follower")
    open_ = rec.gap[:, p] > 1e-3
    assert open_.sum() >= 5, rec.gap[:, p].max()
    # until the first nose (w t = pi / 2) it climbs the rising flank in contact: on the profile there
    rising = rec.t < 0.6 * (np.pi / 2) / 30.0
    expected = CAM_Z + _cam_support(30.0 * rec.t) + FOLLOWER_HALF
    assert np.abs(rec.position[rising, f, 2] - expected[rising]).max() < 1e-3
    # and it flies above the profile where the gap is open
    assert np.all(rec.position[open_, f, 2] > expected[open_] + 1e-3 - 1e-9)


# ---- the parts feeder ------------------------------------------------------------------------------------------------


def test_parts_feeder_plate_tips_the_box_over():
    # the coupler's plate meets the standing box (4 x 4 x 6 cm) at its lowest point, t = 1.06 s (the kinematics of
    # the file: the plate's front edge reaches the box's back face x = 0.005 m then), with its lower edge 4 cm up the
    # back face: above w / (2 mu) = 2.5 cm, so the box tips about its front edge rather than sliding, and once past
    # its balance angle atan(w / H) = 34 degrees it falls over: by t = 1.4 s its long axis has turned by more than 60
    # degrees (it lies on its face: 90)
    model, rec = _run("contact_parts_feeder", 1.4)
    b = rec.body_names.index("box")
    p = _pair(rec, "box", "coupler")
    pushed = rec.pn[:, p] > 1e-6  # (N s; the solver leaves round-off of 1e-17 on a pair in range but open)
    assert pushed.any()
    first = np.flatnonzero(pushed)[0]
    assert 1.0 < rec.t[first] < 1.1
    up = np.array([quat_to_matrix(q)[:, 2] for q in rec.orientation[:, b]])  # the box's long axis in the world
    tilt = np.degrees(np.arccos(np.clip(up[:, 2], -1, 1)))
    assert tilt[:first].max() < 1e-6  # it stood still until the push
    assert tilt[-1] > 60.0, tilt[-1]
    # no body entered another: the box's lowest corner never below the floor (from the poses alone)
    corners = np.array([[sx * 0.02, sy * 0.02, sz * 0.03] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    low = min((rec.position[k, b, 2] + (quat_to_matrix(rec.orientation[k, b]) @ corners.T)[2]).min()
              for k in range(rec.n_frames))
    assert low > -1e-9, low


# ---- the tilting tray --------------------------------------------------------------------------------------------------

TRAY_HINGE = np.array([-0.2, 0.0, 0.3])  # the hinge line's point (the file); its axis is y


def _tray_angle(t):
    """The tray's tilt (the file's driver): 0.3 (1 - cos(pi min(t, 2) / 2)), from level to 0.6 rad in 2 s."""
    return 0.3 * (1 - np.cos(np.pi * np.minimum(t, 2.0) / 2))


def test_tray_parts_stick_until_the_friction_angle_then_slide_and_fall_to_the_floor():
    # a cube resting on the tray slides once the tilt passes the friction angle atan(0.3) = 0.29 rad (t = 0.98 s; the
    # tray's own rotation adds accelerations of at most w^2 r + w' r = 0.25 m/s^2, 2.5 % of g, which moves that angle
    # by 0.02 rad): below 0.26 rad it has not slid on the tray, by 0.4 rad it has slid 5 mm or more. By t = 1.8 s every
    # part has left the tray for the floor.
    model, rec = _run("contact_tray_tilt", 1.8)
    cube = rec.body_names.index("cube1")
    theta = _tray_angle(rec.t)
    # the cube's centre in the tray's frame: undo the tray's rotation by theta about the hinge (y axis; x -> -z)
    rel = rec.position[:, cube] - TRAY_HINGE
    c, s = np.cos(theta), np.sin(theta)
    along = c * rel[:, 0] - s * rel[:, 2]  # (R_y(theta)^T rel).x
    across = s * rel[:, 0] + c * rel[:, 2]  # its height above the hinge line, in the tray's frame
    early = theta < 0.26
    # "not moved" up to the step's first-order error on an arc: a body carried round the hinge at distance r is
    # advanced along its end-of-step velocity (p+ = p + h v+), which falls inside the arc by r (h w)^2 / 2 per step,
    # towards the hinge (measured: 4.6e-5 m by 0.26 rad, against 1.3e-4 m summed here)
    r = np.linalg.norm(rel[0])
    w = np.gradient(theta, rec.t)
    drift = np.cumsum(r * (rec.dt * w) ** 2 / 2)
    assert np.all(np.abs(along[early] - along[0]) <= drift[early] + 1e-7)  # (+ 0.1 um: its landing, 0.5 mm down)
    np.testing.assert_allclose(across[early][5:], 0.025, atol=1e-6)  # resting on its face (after landing)
    assert along[np.searchsorted(theta, 0.4)] - along[0] > 5e-3
    # the hinge's driver effort while the parts still rest on the tray (t in 0.05 ... 0.2 s: landed, the tray nearly
    # level, the balls only starting to roll): the parts turn with the tray, so the driver's torque about the hinge
    # (axis +y) balances their weight and gives them the tray's angular acceleration, Q = sum (m r^2 + I_yy) theta''
    # - sum m g r_x, r from the hinge (the tray's own weight is not in it: a kinematic body's mass is infinite,
    # docs/contact.md). To 0.5 % (measured: 0.1 %; the balls' rolling adds 0.2 % by 0.3 s)
    resting = (rec.t >= 0.05) & (rec.t <= 0.2)
    thdd = 0.3 * (np.pi / 2) ** 2 * np.cos(np.pi * rec.t / 2)
    Q = np.zeros(rec.n_frames)
    for part in ("ball1", "ball2", "cube1", "cube2", "roller"):
        i, k = model.names.index(part), rec.body_names.index(part)
        arm = rec.position[:, k] - TRAY_HINGE
        i_yy = np.array([(R @ model.inertia_body[i] @ R.T)[1, 1] for R in map(quat_to_matrix, rec.orientation[:, k])])
        Q += (model.mass[i] * (arm[:, 0] ** 2 + arm[:, 2] ** 2) + i_yy) * thdd - model.mass[i] * 9.81 * arm[:, 0]
    np.testing.assert_allclose(rec.driver_effort[resting, 0], Q[resting], rtol=5e-3)
    # every part has left the tray over its low edge (x = -0.2 + 0.4 cos(theta) = 0.13 m at the end) and lies on the
    # floor: its pair with the floor closed (to 1 mm: a cube may rest on an edge against another part)
    edge = -0.2 + 0.4 * np.cos(theta[-1])
    for part in ("ball1", "ball2", "cube1", "cube2", "roller"):
        k = rec.body_names.index(part)
        assert rec.gap[-1, _pair(rec, part, "floor")] < 1e-3, part
        assert rec.position[-1, k, 0] > edge, part


# ---- the command line --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["contact_parts_feeder", "contact_cam_follower", "contact_cam_jump",
                                  "contact_tray_tilt", "contact_fourbar_swing"])
def test_cli_simulates_the_example(name, tmp_path):
    # `linkwright simulate FILE` (here its first steps): status 0 and a CSV row per step with every body's pose
    from core.cli import main as cli_main

    out = tmp_path / "run.csv"
    assert cli_main(["simulate", str(EXAMPLES / f"{name}.json"), "--t-end", "0.06", "--out", str(out)]) == 0
    rows = out.read_text().splitlines()
    h = _model(name).dt
    assert len(rows) == 1 + int(round(0.06 / h)) + 1
