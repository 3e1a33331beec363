"""The generic solver against the four-bar and slider-crank closed forms; branches; limits; the teaching report."""

import math
from pathlib import Path

import numpy as np
import pytest
import sympy

from core.fourbar import FourBar, closed_form, closed_form_motion, report, classify, coupler_curve, find_fourbar
from core import io
from core.kinematics import TrajectoryRun, compile_model, solve_trajectory, trajectory_of
from core.model import Body, Driver, Joint, Mechanism

EXAMPLES = Path(__file__).resolve().parents[3] / "resources" / "examples"


def fourbar_doc(fb: FourBar, theta0: float, branch: int = 1, drive: str = "2*pi*t") -> Mechanism:
    """A planar four-bar drawn at crank angle theta0 on `branch` (positions from the closed form)."""
    t3, t4, ok = closed_form(fb, theta0, branch)
    assert ok[0]
    A, D = np.array([0.0, 0.0]), np.array([fb.g, 0.0])
    B = fb.a * np.array([math.cos(theta0), math.sin(theta0)])
    C = D + fb.c * np.array([math.cos(t4[0]), math.sin(t4[0])])
    m = Mechanism(name="fb", space="planar")
    m.bodies += [Body("ground", ground=True), Body("crank"), Body("coupler", points={"P": (float(B[0]) + 0.5, float(B[1]) + 1.0, 0.0)}),
                 Body("rocker")]
    for name, bodies, p in [("A", ("ground", "crank"), A), ("B", ("crank", "coupler"), B),
                            ("C", ("coupler", "rocker"), C), ("D", ("rocker", "ground"), D)]:
        m.joints.append(Joint(name, "revolute", bodies, (float(p[0]), float(p[1]), 0.0)))
    m.drivers.append(Driver("A", drive))
    return m


def _angle(R):
    return math.atan2(R[1, 0], R[0, 0])


# (lengths, design crank angle, oscillation amplitude: None = full turns of the crank). Where the crank cannot turn
# fully it oscillates inside its range (double-rocker: 38.6..78.6 deg; triple-rocker: -92.3..92.3 deg, see report()).
CASES = {
    "crank-rocker": (FourBar(4.0, 1.0, 3.5, 3.0), 0.6, None),
    "double-crank": (FourBar(1.0, 3.0, 3.5, 3.0), 0.6, None),
    "crank-rocker, rocker shortest": (FourBar(4.0, 3.0, 3.5, 1.0), 1.0, 0.2),
    "double-rocker": (FourBar(4.0, 3.0, 1.0, 3.5), math.radians(58.6), 0.2),
    "triple-rocker": (FourBar(3.0, 3.5, 2.2, 2.5), 0.0, 0.6),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("branch", [1, -1])
def test_full_cycle_matches_closed_form(case, branch):
    fb, th0, amp = CASES[case]
    t = sympy.Symbol("t")
    if amp is not None:  # the crank cannot turn fully: oscillate it inside its range
        drive, qt = f"{amp}*sin(2*pi*t)", amp * sympy.sin(2 * sympy.pi * t)
    else:  # non-uniform rate so the accelerations are not trivial
        drive, qt = "2*pi*t + 0.2*sin(2*pi*t)", 2 * sympy.pi * t + 0.2 * sympy.sin(2 * sympy.pi * t)
    m = fourbar_doc(fb, th0, branch, drive)
    km = compile_model(m)
    traj = solve_trajectory(km, np.linspace(0.0, 1.0, 101))
    assert traj.ok, traj.reason
    # driver: theta2 = th0 + q(t); reference derivatives of q(t) by sympy
    f = [sympy.lambdify(t, e) for e in (qt, sympy.diff(qt, t), sympy.diff(qt, t, 2))]
    t2 = th0 + np.array([f[0](x) for x in traj.times])
    w2 = np.array([f[1](x) for x in traj.times])
    a2 = np.array([f[2](x) for x in traj.times])
    t3, t4, w3, w4, a3, a4 = closed_form_motion(fb, t2, w2, a2, branch)
    t3_0, t4_0, _ = closed_form(fb, th0, branch)
    ic, ir = km.body_names.index("coupler"), km.body_names.index("rocker")
    # body angles from the solved poses (design drawing at angle t3_0 / t4_0)
    coup = np.array([_angle(P[ic]) for P in traj.poses]) + t3_0[0]
    rock = np.array([_angle(P[ir]) for P in traj.poses]) + t4_0[0]
    wrap = lambda x: (x + np.pi) % (2 * np.pi) - np.pi  # noqa: E731
    assert np.abs(wrap(coup - t3)).max() < 1e-10
    assert np.abs(wrap(rock - t4)).max() < 1e-10
    iA, iB, iD = (km.coord_names.index(n) for n in "ABD")
    # absolute rates: coupler = crank + relative B; rocker = -(D: ground relative to rocker)
    assert np.abs(traj.qd[:, iA] + traj.qd[:, iB] - w3).max() < 1e-8
    assert np.abs(-traj.qd[:, iD] - w4).max() < 1e-8
    assert np.abs(traj.qdd[:, iA] + traj.qdd[:, iB] - a3).max() < 1e-8
    assert np.abs(-traj.qdd[:, iD] - a4).max() < 1e-8
    # loop residual: C lands on the rocker's C
    assert np.all(np.isfinite(traj.points))


def test_crossed_branch_is_kept_over_the_cycle():
    fb = FourBar(4.0, 1.0, 3.5, 3.0)
    m = fourbar_doc(fb, 0.6, branch=-1)
    traj = solve_trajectory(compile_model(m), np.linspace(0, 1, 41))
    assert traj.ok
    t3_0, t4_0, _ = closed_form(fb, 0.6, -1)
    ir = 3
    rock = np.array([_angle(P[ir]) for P in traj.poses]) + t4_0[0]
    _, open4, _ = closed_form(fb, 0.6 + 2 * np.pi * traj.times, 1)
    _, cross4, _ = closed_form(fb, 0.6 + 2 * np.pi * traj.times, -1)
    wrap = lambda x: np.abs((x + np.pi) % (2 * np.pi) - np.pi)  # noqa: E731
    assert wrap(rock - cross4).max() < 1e-10
    assert wrap(rock - open4).min() > 0.1  # never jumped to the open branch


def test_non_grashof_crank_stops_at_its_limit_angle():
    fb = FourBar(3.0, 3.5, 2.2, 2.5)  # s + l = 2.2 + 3.5 > 2.5 + 3: triple rocker
    assert classify(fb)["grashof"] == "non-grashof"
    m = fourbar_doc(fb, 0.0, 1, "2*pi*t")
    traj = solve_trajectory(compile_model(m), np.linspace(0, 0.5, 101))
    assert not traj.ok and "stopped at t =" in traj.reason
    # limit: coupler and rocker collinear, |BD| = b + c: cos t2 = (a^2 + g^2 - (b+c)^2) / (2 a g)
    t_lim = math.acos((3.5**2 + 3.0**2 - 4.7**2) / (2 * 3.5 * 3.0)) / (2 * math.pi)
    assert traj.times[-1] <= t_lim < traj.stop_time
    assert traj.limit_time == pytest.approx(t_lim, abs=1e-6)
    assert np.all(np.isfinite(traj.q)) and len(traj.times) > 10


def test_slider_crank_matches_closed_form():
    a, b, th0 = 1.0, 3.0, 0.4
    B = (a * math.cos(th0), a * math.sin(th0), 0.0)
    xc0 = a * math.cos(th0) + math.sqrt(b**2 - (a * math.sin(th0)) ** 2)
    m = Mechanism(name="sc", space="planar")
    m.bodies += [Body("ground", ground=True), Body("crank"), Body("rod"), Body("slider")]
    m.joints += [Joint("A", "revolute", ("ground", "crank"), (0.0, 0.0, 0.0)),
                 Joint("B", "revolute", ("crank", "rod"), B),
                 Joint("C", "revolute", ("rod", "slider"), (xc0, 0.0, 0.0)),
                 Joint("P", "prismatic", ("ground", "slider"), (xc0, 0.0, 0.0), axis=(1.0, 0.0, 0.0))]
    m.drivers.append(Driver("A", "2*pi*t"))
    km = compile_model(m)
    traj = solve_trajectory(km, np.linspace(0, 1, 101))
    assert traj.ok
    # x_C(theta) = a cos theta + sqrt(b^2 - a^2 sin^2 theta), theta = th0 + 2 pi t, differentiated by sympy
    t = sympy.Symbol("t")
    th = th0 + 2 * sympy.pi * t
    x = a * sympy.cos(th) + sympy.sqrt(b**2 - a**2 * sympy.sin(th) ** 2) - xc0
    fs = [sympy.lambdify(t, e) for e in (x, sympy.diff(x, t), sympy.diff(x, t, 2))]
    iP = km.coord_names.index("P")
    for k, arr in enumerate((traj.q, traj.qd, traj.qdd)):
        ref = np.array([fs[k](s) for s in traj.times])
        assert np.abs(arr[:, iP] - ref).max() < (1e-10 if k == 0 else 1e-8)


def test_report_classes_and_limits():
    assert classify(FourBar(4, 1, 3.5, 3))["class"] == "crank-rocker"
    assert classify(FourBar(1, 3, 3.5, 3))["class"].startswith("double-crank")
    assert classify(FourBar(4, 3, 1, 3.5))["class"] == "double-rocker"
    assert classify(FourBar(4, 2, 3, 3))["class"] == "change point"  # 2 + 4 = 3 + 3
    assert classify(FourBar(3, 3.5, 2.2, 2.5))["class"].startswith("triple-rocker")
    rep = report(FourBar(4, 1, 3.5, 3))
    # rocker limits: crank and coupler collinear; angle at D from the triangle (g, c, a +- b)
    lims = sorted(180 - math.degrees(math.acos((16 + 9 - r * r) / 24)) for r in (4.5, 2.5))
    assert rep["rocker_limits_deg"] == pytest.approx(lims, abs=1e-9)
    # transmission angle extremes at crank 0 (|BD| = 3) and 180 deg (|BD| = 5)
    mu = rep["transmission_angle_deg"]
    assert mu["min"] == pytest.approx(math.degrees(math.acos((3.5**2 + 9 - 9) / (2 * 3.5 * 3))), abs=1e-9)
    assert mu["max"] == pytest.approx(math.degrees(math.acos((3.5**2 + 9 - 25) / 21)), abs=1e-9)


def test_coupler_curve_and_document_detection():
    fb = FourBar(4.0, 1.0, 3.5, 3.0)
    curve = coupler_curve(fb, (3.5, 0.0), np.linspace(0, 2 * np.pi, 50))
    # a point at C on the coupler stays on the rocker's circle about D
    assert np.abs(np.hypot(curve[:, 0] - 4.0, curve[:, 1]) - 3.0).max() < 1e-12
    found = find_fourbar(fourbar_doc(fb, 0.6))
    assert (found.fourbar.g, found.fourbar.a, found.fourbar.b, found.fourbar.c) == pytest.approx((4, 1, 3.5, 3))
    assert found.theta2_design == pytest.approx(0.6) and found.branch == 1


def _circuit(fb: FourBar, n: int = 20001):
    """Crank angle, coupler and rocker angles of every assembling configuration on both branches (dense sampling)."""
    t2 = np.linspace(-np.pi, np.pi, n)
    out = []
    for br in (1, -1):
        t3, t4, ok = closed_form(fb, t2, br)
        out.append(np.column_stack((t2[ok], t3[ok], t4[ok])))
    return np.vstack(out)


@pytest.mark.parametrize("lengths", [(4, 3, 1, 3.5), (3, 3.5, 2.2, 2.5), (4, 1, 3.5, 3)])
def test_toggles_are_collinear_configurations_that_assemble(lengths):
    fb = FourBar(*lengths)
    for tg in report(fb)["toggles"]:
        if not tg["kind"].startswith("crank and coupler"):
            continue
        # at the toggle's crank angle one of the branches has the coupler along the crank (extended: same
        # direction; folded: opposite), with the rocker at the reported angle
        t2 = math.radians(tg["crank_deg"])
        want = 0.0 if tg["kind"].endswith("extended") else math.pi
        hits = []
        for br in (1, -1):
            t3, t4, ok = closed_form(fb, t2, br)
            d = abs((t3[0] - t2 - want + math.pi) % (2 * math.pi) - math.pi)
            if ok[0] and d < 1e-6:
                hits.append(math.degrees(t4[0]))
        assert hits and min(abs(h - tg["rocker_deg"]) for h in hits) < 1e-6, tg


def test_non_grashof_rocker_swings_between_symmetric_limits():
    fb = FourBar(3.0, 3.5, 2.2, 2.5)
    rep = report(fb)
    # only the folded position exists (a + b = 5.7 > g + c = 5.5): |AC| = a - b = 1.3 at the limits, and the
    # circuit joins its mirror image through rocker angle 0, so the limits are +-phi with
    # |AC|^2 = g^2 + c^2 + 2 g c cos(phi) (C = D + c e^{i phi}, D = (g, 0))
    phi = math.degrees(math.acos((1.3**2 - 9 - 6.25) / (2 * 3 * 2.5)))
    assert rep["rocker_limits_deg"] == pytest.approx([-phi, phi], abs=1e-9)
    assert rep["rocker_swing_deg"] == pytest.approx(2 * phi, abs=1e-9)
    t4 = np.degrees(_circuit(fb)[:, 2])
    assert np.abs(t4).max() == pytest.approx(phi, abs=1e-2) and np.abs(t4).min() < 0.1


@pytest.mark.parametrize("lengths", [(4, 1, 3, 2), (4, 2, 4, 2), (4, 2.5, 3.5, 3), (3, 1, 3, 1)])
def test_one_crank_position_is_one_number_in_the_report(lengths):
    """Every angle of the report lies in (-180, 180]. At a change point (s + l = p + q) the transmission angle
    mu = angle BCD grows with |BD|^2 = a^2 + g^2 - 2 a g cos(t2), so its maximum is at t2 = 180 deg, where the crank
    points back and B, A, D lie on one line; the crank and coupler fold there too when the coupler reaches back
    from B to C = D - c (|AC| = g - c = b - a): the same position, which the report gave as -180 (from the sample at
    -pi) and 180 (computed) in one report (user test)."""
    rep = report(FourBar(*lengths))
    angles = [rep["transmission_angle_deg"]["at_crank_deg"], rep["transmission_angle_deg"]["max_at_crank_deg"]]
    angles += [v for tg in rep["toggles"] for k, v in tg.items() if k.endswith("_deg")]
    angles += rep["rocker_limits_deg"] or []
    assert all(-180.0 < a <= 180.0 for a in angles), angles
    assert rep["transmission_angle_deg"]["max_at_crank_deg"] == pytest.approx(180.0)
    folded = [tg for tg in rep["toggles"] if tg["kind"] == "crank and coupler folded"]
    assert folded and folded[0]["crank_deg"] == pytest.approx(180.0)


def test_degenerate_lengths_do_not_crash_the_report():
    # crank = coupler: the folded position has |AC| = 0 (no triangle); 10 > 1 + 1 + 1 never closes
    assert report(FourBar(4, 2, 2, 3))["rocker_limits_deg"] is not None
    rep = report(FourBar(10, 1, 1, 1))
    assert rep["class"].startswith("cannot be assembled") and rep["transmission_angle_deg"] is None


def test_change_point_stops_instead_of_switching_branch():
    # g + a = b + c (4 + 2 = 3 + 3): at crank angle pi all four pivots are collinear, B = (-2, 0), C = (1, 0), and
    # the two assembly branches meet; no frame hits it exactly, so the solver must notice it passed it.
    fb = FourBar(4.0, 2.0, 3.0, 3.0)
    assert classify(fb)["class"] == "change point"
    m = fourbar_doc(fb, 0.6, 1, "2*pi*t")
    traj = solve_trajectory(compile_model(m), np.linspace(0, 1, 201))
    t_change = (math.pi - 0.6) / (2 * math.pi)  # crank angle 0.6 + 2 pi t reaches pi
    # (located by bisection: a midpoint where the Jacobian at the branch's position has lost the rank is the crossing;
    # the run's last frame is there, after every requested time before it)
    assert not traj.ok and "two assembly branches cross here (a change point)" in traj.reason
    assert traj.times[-2] < t_change < traj.stop_time
    assert traj.limit_time == traj.times[-1] == pytest.approx(t_change, abs=1e-6)
    assert len(traj.times) == np.searchsorted(np.linspace(0, 1, 201), t_change) + 1
    # every frame kept is on the drawn branch
    t3_0, t4_0, _ = closed_form(fb, 0.6, 1)
    rock = np.array([_angle(P[3]) for P in traj.poses]) + t4_0[0]
    _, ref, _ = closed_form(fb, 0.6 + 2 * np.pi * traj.times, 1)
    assert np.abs((rock - ref + np.pi) % (2 * np.pi) - np.pi).max() < 1e-9



def test_a_crank_rocker_stepped_many_turns_at_a_time_turns_to_the_end():
    # The four-bar example's crank turns once a second: a step of 50 s is 50 turns.  A step that fails or would move
    # far is walked in sub-steps (one step of 5000 s used to say "the motion ends near t = 781.6" for this linkage,
    # which turns forever, after its coordinates had jumped whole turns at a time).  After whole turns every link is
    # back where it was drawn: the crank at 2 pi * 50, the coupler's joint B turned back by as much (the coupler
    # does not turn), the rocker's C and D at their drawn 0, not whole turns away (as a solution from a 50-turn
    # extrapolation left them: D = 1055 rad).
    km = compile_model(io.load(EXAMPLES / "fourbar.json"))
    fine = solve_trajectory(km, np.linspace(0.0, 50.0, 1001))  # 20 frames a turn
    assert fine.ok
    for steps in (1, 5):
        traj = solve_trajectory(km, np.linspace(0.0, 50.0, steps + 1))
        assert traj.ok and traj.limit_time is None, traj.reason
        A, B, C, D = traj.q[-1]
        assert A == pytest.approx(100 * math.pi, abs=1e-9) and B == pytest.approx(-100 * math.pi, abs=1e-9)
        assert abs(C) < 1e-9 and abs(D) < 1e-9
        k = np.searchsorted(fine.times, traj.times - 1e-9)  # every frame where the finely stepped run has it
        np.testing.assert_allclose(traj.q, fine.q[k], atol=1e-8)
        np.testing.assert_allclose(traj.qd, fine.qd[k], atol=1e-8)


def test_steps_too_coarse_for_the_substep_budget_stop_without_claiming_an_end():
    # 5000 turns in one step need far more than 200 sub-steps: the run stops, says why, and names no end of motion
    km = compile_model(io.load(EXAMPLES / "fourbar.json"))
    traj = trajectory_of(TrajectoryRun(km, [0.0, 5000.0], max_substeps=200))
    assert not traj.ok and len(traj.times) == 1 and traj.stop_time == 5000.0 and traj.limit_time is None
    assert traj.reason.startswith("stopped at t = 5000: the steps are too coarse to follow the motion: 200 sub-steps")
    assert "ends near" not in traj.reason


@pytest.mark.parametrize("steps", [1, 3, 40])
def test_a_driven_rocker_stops_at_its_dead_position_however_coarse_the_steps(steps):
    # Crank-rocker g = 4, a = 1, b = 3.5, c = 3 driven at its rocker (joint D, rocker angle = -q_D) at 0.5 rad/s: the
    # rocker cannot pass its limit where crank and coupler fold, |AC| = b - a = 2.5; the angle at D of the triangle
    # (g, c, 2.5) is acos((g^2 + c^2 - 2.5^2) / (2 g c)), so the rocker's limit angle is pi minus it.  There the crank
    # (unknown) is at a dead position: the motion ends at t* = (limit - drawn rocker angle) / 0.5, whatever the steps.
    fb = FourBar(4.0, 1.0, 3.5, 3.0)
    m = fourbar_doc(fb, 0.6)
    m.drivers = [Driver("D", "-0.5*t")]
    _, t4_0, _ = closed_form(fb, 0.6, 1)
    limit = math.pi - math.acos((16 + 9 - 2.5**2) / 24)
    t_star = (limit - t4_0[0]) / 0.5
    assert 0.1 < t_star < 2.0
    traj = solve_trajectory(compile_model(m), np.linspace(0.0, 2.5, steps + 1))
    assert not traj.ok and traj.limit_time is not None, traj.reason
    assert traj.times[-1] <= t_star < traj.stop_time
    assert traj.limit_time == pytest.approx(t_star, abs=1e-6)
    assert traj.reason.endswith(f"the motion ends near t = {traj.limit_time:.9g}")


def test_a_cancel_is_seen_between_the_sub_steps_of_a_long_step():
    # one step of 5000 turns would take the whole sub-step budget (seconds); the cancel flag is read every 64 of them
    km = compile_model(io.load(EXAMPLES / "fourbar.json"))
    asked = [0]

    def cancel():
        asked[0] += 1
        return asked[0] > 2  # no before the first and second frames, yes inside the long step

    run = TrajectoryRun(km, [0.0, 1.0, 5000.0], cancel=cancel)
    frames = list(run)
    assert len(frames) == 2 and run.cancelled and run.verdict.reason == "cancelled at t = 5000"
    assert run._substeps < 64 + 16  # (the first step, one turn, takes a few sub-steps too)
