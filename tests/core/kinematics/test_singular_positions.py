"""A mechanism drawn at a singular position: the rank of the loop-closure Jacobian there counts first-order freedoms
that no motion follows; the second-order condition of the loop equations sets them aside (RankMobility's
singular_freedoms). The expected values are derived by hand in each test."""

import math
from pathlib import Path

import numpy as np
import pytest

from core import io
from core.errors import LinkwrightError
from core.kinematics import check_drivers, compile_model, rank_mobility, solve_trajectory
from core.model import Body, Driver, Joint, Mechanism

EXAMPLES = Path(__file__).resolve().parents[3] / "resources" / "examples"


def _flat_fourbar(b, c, space="planar", drive="2*pi*t"):
    """Ground pivots A = (0, 0) and D = (4, 0), crank A-B, coupler B-C, rocker C-D, every pivot on the x axis (B, C at
    x = b, c), revolutes about z."""
    m = Mechanism(name="flat", space=space)
    m.bodies += [Body("ground", ground=True), Body("crank"), Body("coupler"), Body("rocker")]
    for name, pair, x in (("A", ("ground", "crank"), 0.0), ("B", ("crank", "coupler"), b),
                          ("C", ("coupler", "rocker"), c), ("D", ("rocker", "ground"), 4.0)):
        m.joints.append(Joint(name, "revolute", pair, (x, 0.0, 0.0), axis=(0.0, 0.0, 1.0)))
    if drive:
        m.drivers.append(Driver("A", drive))
    return m


@pytest.mark.parametrize("space, gruebler, redundant", [("planar", 1, 1), ("spatial", -2, 4)])
def test_a_four_bar_drawn_flat_with_its_longest_link_the_sum_of_the_others_cannot_move(space, gruebler, redundant):
    """Ground 4, crank 1, coupler 2, rocker 1 (l = s + p + q, the tester's fb/collinear.json): it assembles only flat,
    and there it is rigid. analyze said 2 degree(s) of freedom and asked for a second driver.
    First order: a revolute at (x, 0) gives the loop the planar twist (0, -x, 1), so the loop's 3 rows have rank 2 (in
    a spatial file the 3 out-of-plane rows vanish too): 4 - 2 = 2 first-order freedoms, the heights y_B, y_C of B and C.
    Second order: the horizontal reaches of crank, coupler and rocker, 1 - y_B^2/2, 2 - (y_C - y_B)^2/4 and
    1 - y_C^2/2, must still add up to 4: y_B^2/2 + (y_C - y_B)^2/4 + y_C^2/2 = 0, a definite form, so y_B = y_C = 0:
    no motion follows either freedom, 0 degrees of freedom."""
    m = _flat_fourbar(1.0, 3.0, space)
    r = rank_mobility(m)
    assert (r.gruebler, r.mobility_rank, r.redundant_constraints, r.idle_freedoms) == (gruebler, 2, redundant, 0)
    assert (r.singular_freedoms, r.effective, r.freedoms_to_drive) == (2, 0, 0)
    words = ("0 degree(s) of freedom (rank-based, 2 first-order freedom(s) of a singular position set aside: no motion "
             "follows them)")
    assert r.freedoms_text() == words
    with pytest.raises(LinkwrightError) as e:
        check_drivers(compile_model(m))
    assert e.value.message == (f"the mechanism has {words} but 1 driver(s) are given: remove 1 driver(s) so the "
                               "motion is determined")
    # without a driver it is a structure: the run holds it where it is drawn
    m.drivers.clear()
    traj = solve_trajectory(compile_model(m), np.linspace(0.0, 1.0, 5))
    assert traj.ok, traj.reason
    assert np.abs(traj.q).max() == 0.0


def test_a_four_bar_drawn_flat_at_its_change_point_has_one_freedom_and_its_crank_turns():
    """Ground 4, crank 1 (drawn pointing back, B = (-1, 0)), coupler 3, rocker 2: s + l = p + q (1 + 4 = 3 + 2), a
    change point, drawn flat where its two assembly branches cross. First order: 2 freedoms, as above.
    Second order: x_B = -1 + y_B^2/2, x_C = x_B + 3 - (y_C - y_B)^2/6 = 4 - 2 + y_C^2/4 (the rocker points back from D),
    so y_B^2/2 - (y_C - y_B)^2/6 - y_C^2/4 = 0: an indefinite form (positive at y_C = 0, negative at y_B = 0), whose
    zeros are two lines, the branches' tangents: 1 freedom, driven at the crank. The crank (the shortest link, Grashof
    s + l <= p + q) turns fully, the coupler and rocker keeping their lengths."""
    m = _flat_fourbar(-1.0, 2.0)
    r = rank_mobility(m)
    assert (r.gruebler, r.mobility_rank, r.singular_freedoms, r.effective, r.freedoms_to_drive) == (1, 2, 1, 1, 1)
    km = compile_model(m)
    check_drivers(km)
    t = np.linspace(0.0, 1.0, 41)
    traj = solve_trajectory(km, t)
    assert traj.ok, traj.reason
    np.testing.assert_allclose(traj.q[:, km.coord_names.index("A")], 2 * math.pi * t, atol=1e-12)
    body = {n: i for i, n in enumerate(km.body_names)}
    for T in traj.poses:
        b = (T[body["crank"]] @ np.array([-1.0, 0, 0, 1]))[:3]
        c = (T[body["coupler"]] @ np.array([2.0, 0, 0, 1]))[:3]
        np.testing.assert_allclose((T[body["rocker"]] @ np.array([2.0, 0, 0, 1]))[:3], c, atol=1e-7)
        assert np.linalg.norm(b) == pytest.approx(1.0, abs=1e-12)
        assert np.linalg.norm(c - b) == pytest.approx(3.0, abs=1e-7)
        assert np.linalg.norm(c - np.array([4.0, 0, 0])) == pytest.approx(2.0, abs=1e-7)
    # with no driver, the one freedom is asked for
    m.drivers.clear()
    with pytest.raises(LinkwrightError, match=r"1 degree\(s\) of freedom .* but 0 driver\(s\) are given: add 1"):
        check_drivers(compile_model(m))


def test_no_example_is_drawn_at_a_singular_position():
    """The examples' counts are the rank-based ones: every first-order freedom is followed by a motion."""
    for p in sorted(EXAMPLES.glob("*.json")):
        r = rank_mobility(io.load(p))
        assert r.singular_freedoms == 0, p.name


def test_two_crossed_slots_have_one_freedom_where_their_branches_cross_and_no_one_coordinate_drives_it():
    """A body held to the ground by two pin-in-slot joints at the origin, both slots along x: S0's slot in the ground
    with the body's pin, S1's slot in the body with the ground's pin. With the body at (x, y) turned by th: S0 keeps
    its pin on the ground's x axis, y = 0; S1 keeps the ground's pin, at (-x cos th, x sin th) in the body, on the
    body's x axis, x sin th = 0. Two branches cross at the drawing: turning about the pins (x = 0) and sliding along the
    slots (th = 0). First order: only y = 0 (x sin th is of second order), 2 freedoms (4 coordinates, rank 2); second
    order: x th = 0, an indefinite form: 1 freedom. Holding either joint coordinate leaves the other branch free (a
    held turn, th = 0, lets it slide), so the driver check refuses each single driver at the drawing."""
    m = Mechanism(name="slots", space="planar")
    m.bodies += [Body("g", ground=True), Body("b")]
    m.joints += [Joint("S0", "slot", ("b", "g")), Joint("S1", "slot", ("g", "b"))]
    r = rank_mobility(m)
    assert (r.gruebler, r.rank, r.mobility_rank, r.singular_freedoms, r.freedoms_to_drive) == (1, 2, 2, 1, 1)
    for coordinate in (0, 1):
        m.drivers = [Driver("S0", "t", coordinate=coordinate)]
        with pytest.raises(LinkwrightError, match="do not determine the motion"):
            check_drivers(compile_model(m))


@pytest.mark.parametrize("name", ["fourbar", "rssr", "stewart_6ups", "quick_return"])
def test_the_bias_forms_are_the_bilinear_forms_of_the_loop_bias(name):
    """solver.loop_bias_forms(ws, V) evaluates on x the bias loop_bias(x @ V) that the accelerations solve with, at any
    configuration (a random one here, loops not closed)."""
    from core.kinematics.solver import Workspace, forward, loop_bias, loop_bias_forms

    km = compile_model(io.load(EXAMPLES / f"{name}.json"), drivers=False)
    rng = np.random.default_rng(3)
    ws = Workspace(km)
    forward(ws, 0.3 * rng.standard_normal(km.nq))
    V = rng.standard_normal((3, km.nq))
    F = loop_bias_forms(ws, V)
    np.testing.assert_allclose(F, np.swapaxes(F, 1, 2), atol=0)
    for x in rng.standard_normal((4, 3)):
        np.testing.assert_allclose(F @ x @ x, loop_bias(ws, x @ V), atol=1e-12 * max(1.0, np.abs(F).max()))


def _double_parallelogram(up):
    """Three unit cranks on ground pivots A1, A2, A3 at x = 0, 2, 4, their tips B1, B2, B3 joined by one coupler;
    drawn with the cranks pointing up (`up`) or flat along +x; driver A1 = 2 pi t (a turn a second)."""
    m = Mechanism(name="double parallelogram", space="planar")
    m.bodies += [Body("ground", ground=True), Body("c1"), Body("c2"), Body("c3"), Body("coupler")]
    tip = (0.0, 1.0) if up else (1.0, 0.0)
    for k, x in enumerate((0.0, 2.0, 4.0), start=1):
        m.joints.append(Joint(f"A{k}", "revolute", ("ground", f"c{k}"), (x, 0.0, 0.0)))
        m.joints.append(Joint(f"B{k}", "revolute", (f"c{k}", "coupler"), (x + tip[0], tip[1], 0.0)))
    m.drivers.append(Driver("A1", "2*pi*t"))
    return m


@pytest.mark.parametrize("up", [True, False])
def test_a_double_parallelogram_turns_through_its_flat_positions(up):
    """The third crank carries a parallelogram through its change points (locomotive coupling rods): with unit cranks
    B_k = A_k + e^(i th_k) and the coupler rigid with B3 - B2 = B2 - B1 (A3 - A2 = A2 - A1), |B3 - A3| = 1 gives
    |2 e^(i th2) - e^(i th1)| = 1, 5 - 4 cos(th2 - th1) = 1, th2 = th1: every crank turns with the driven one and the
    coupler never turns, through the flat positions too, where the loop Jacobian loses a rank (a first-order freedom
    that the second order excludes: one way on). Frames every 0.01 s hit them exactly (t = 0.25, 0.75 drawn up; t = 0,
    0.5, 1 drawn flat): the run stopped there ('singular Jacobian'; drawn flat, at t = 0.5, and its first frame had
    the rates 2.63 and -1.01 rad/s for cranks 2 and 3). So q_A = 2 pi t, q_B = -2 pi t, rates +-2 pi and no
    acceleration at every frame."""
    km = compile_model(_double_parallelogram(up))
    t = np.linspace(0.0, 1.0, 101)
    traj = solve_trajectory(km, t)
    assert traj.ok, traj.reason
    for k in (1, 2, 3):
        a, b = km.coord_names.index(f"A{k}"), km.coord_names.index(f"B{k}")
        np.testing.assert_allclose(traj.q[:, a], 2 * np.pi * t, atol=1e-9)
        np.testing.assert_allclose(traj.q[:, b], -2 * np.pi * t, atol=1e-9)
        np.testing.assert_allclose(traj.qd[:, a], 2 * np.pi, atol=1e-7)
        np.testing.assert_allclose(traj.qd[:, b], -2 * np.pi, atol=1e-7)
        np.testing.assert_allclose(traj.qdd[:, [a, b]], 0.0, atol=1e-5)


@pytest.mark.parametrize("up", [True, False])
def test_the_drivers_fix_every_body_of_a_double_parallelogram_drawn_flat_too(up):
    """Which bodies the drivers fix (driver_fixed_masks; a contact run moves the others by forces) is the count's:
    drawn flat, the double parallelogram's cranks 2 and 3 and its coupler have a first-order freedom with the driven
    crank held (the flat loop's y-motions of B2 and B3, 2 and 4 times the coupler's turn about B1), which the second
    order excludes, as check_drivers does. So the one driver fixes every body, as drawn up; with masses, no body is
    left to contact dynamics (drawn flat, cranks 2 and 3 and the coupler were)."""
    from dataclasses import replace

    from core.kinematics import driver_fixed_masks
    from core.run import undriven_massive_bodies

    m = _double_parallelogram(up)
    fixed, held = driver_fixed_masks(compile_model(m))
    assert fixed.all() and held.all()
    m.bodies = [m.bodies[0]] + [replace(b, mass=1.0) for b in m.bodies[1:]]
    assert undriven_massive_bodies(m) == []


def _flat_change_point_rates():
    """The flat change-point four-bar of _flat_fourbar(-1, 2) (crank 1 about A = (0, 0), coupler 3, rocker 2 about
    D = (4, 0)) with B = e^(i th), C = D + 2 e^(i phi): |C - B|^2 = 9 is F = 12 + 16 cos phi - 8 cos th -
    4 cos(phi - th) = 0. At the flat position th = phi = pi its first derivatives vanish (F_th = 8 sin th -
    4 sin(phi - th), F_phi = -16 sin phi + 4 sin(phi - th)), so along a branch the second order decides r = dphi/dth:
    F_thth + 2 F_thphi r + F_phiphi r^2 = -4 - 8 r + 20 r^2 = 0, r = (1 -+ sqrt 6) / 5 = -0.2899, 0.6899 (the two
    branches), their mean 1/5 on neither. Mirrored in the x axis, (pi + u, pi + v) -> (pi - u, pi - v) maps each
    branch (its tangent v = r u) onto itself: phi - pi is odd in th - pi, so d2phi/dth2 = 0 at the crossing.
    Returns the roots, smaller first, and the joint rates (A, B, C, D) of the crank turning at w for a rocker rate
    ratio r: the coupler's angle psi (0 flat) has -th' + 3 psi' = -2 phi' (the y components of B, C at the
    flat position), so A = th', B = psi' - th', C = phi' - psi', D = -phi' (D's bodies are rocker, ground)."""
    roots = sorted(((1 - math.sqrt(6)) / 5, (1 + math.sqrt(6)) / 5))

    def rates(r, w=2 * math.pi):
        phi = r * w
        psi = (w - 2 * phi) / 3
        return np.array([w, psi - w, phi - psi, -phi])

    return roots, rates


def test_a_frame_where_a_change_point_four_bar_crosses_its_branches_is_the_arriving_branchs():
    """User test s55 K3 (flatcp_2pi.json): the flat change-point four-bar driven at its crank, 2 pi t, is back flat at
    t = 1, where its two branches cross. The frame there had the rates of neither branch but their mean (rocker
    2 pi / 5 = 1.2566 rad/s where the run arrives at 2 pi 0.6899 = 4.3348): a Newton solve finds the crossing only to
    the square root of its tolerance, off it along the lost direction, where the rates solved are the line's point
    midway between the two roots; the solve had kept the rank, so the frame was taken as a regular one. Now the
    frame is the branch's the run came along (rates and accelerations, see _flat_change_point_rates), and the motion
    ends there; the first frame, drawn at the crossing, keeps the branch with the smaller rates."""
    roots, rates = _flat_change_point_rates()
    km = compile_model(_flat_fourbar(-1.0, 2.0))
    assert km.coord_names == ["A", "B", "C", "D"]
    traj = solve_trajectory(km, np.linspace(0.0, 1.5, 151))
    assert not traj.ok and len(traj.times) == 101 and traj.times[-1] == 1.0
    assert "two assembly branches cross here" in traj.reason
    assert traj.limit_time == pytest.approx(1.0, abs=1e-9)
    # the start: the smaller root
    np.testing.assert_allclose(traj.qd[0], rates(roots[0]), atol=1e-6)
    # the arriving branch: the root nearer the rocker's rate ratio a frame before (0.6897 at t = 0.99)
    before = -traj.qd[-2, 3] / (2 * math.pi)
    arriving = min(roots, key=lambda r: abs(r - before))
    assert arriving == roots[1] and abs(before - arriving) < 1e-3
    np.testing.assert_allclose(traj.qd[-1], rates(arriving), atol=1e-6)  # the mean gave -1.2566 for D
    # accelerations: the crank's none, the rocker's none (phi'' = 0 at the crossing), so neither the coupler's; to
    # the interpolant's round-off (accelerations of up to 30 rad/s^2 on the way)
    np.testing.assert_allclose(traj.qdd[-1], 0.0, atol=2e-3)


@pytest.mark.parametrize("n", [151, 152, 140])
def test_a_run_ending_at_a_crossing_has_its_frame_there_whether_a_requested_time_hits_it_or_not(n):
    """The flat change-point four-bar (as above) over 0 ... 1.5 s in n frames: 151 hit the crossing at t = 1 (a
    requested time; its frame is the fork's, the motion ends at the next time), 152 and 140 do not (frames 0.99338
    and 1.00331, 0.99281 and 1.00360: a bisection locates it). Either way the run keeps every requested time before
    the crossing and then one frame at the crossing itself: at t = 1 (to the bisection's 1e-9), with the arriving
    branch's rates and no acceleration (_flat_change_point_rates), flat (crank at 2 pi, the other joints back at 0),
    and that time is the motion's end (limit_time); stop_time is the first requested time not reached. Before, a
    crossing located by bisection ended the motion at the frame before it (0.99338: no frame at the crossing)."""
    roots, rates = _flat_change_point_rates()
    times = np.linspace(0.0, 1.5, n)
    traj = solve_trajectory(compile_model(_flat_fourbar(-1.0, 2.0)), times)
    assert not traj.ok and "two assembly branches cross here" in traj.reason
    before = int(np.searchsorted(times, 1.0, side="left"))  # the requested times before the crossing
    hit = times[before] == 1.0
    assert hit == (n == 151)
    assert len(traj.times) == before + 1
    np.testing.assert_array_equal(traj.times[:-1], times[:before])
    assert traj.times[-1] == pytest.approx(1.0, abs=1e-9) and traj.times[-1] > times[before - 1]
    assert traj.limit_time == traj.times[-1]
    assert traj.stop_time == times[before + 1 if hit else before]
    np.testing.assert_allclose(traj.qd[-1], rates(roots[1]), atol=1e-6)
    np.testing.assert_allclose(traj.qdd[-1], 0.0, atol=2e-3)
    np.testing.assert_allclose(traj.q[-1], [2 * math.pi, -2 * math.pi, 0.0, 0.0], atol=1e-6)


@pytest.mark.parametrize("delta", [1e-3, 1e-4, 3e-5, 1e-5, 1e-6, 1e-8, 0.0])
def test_frames_just_before_a_change_point_have_the_branchs_motion(delta):
    """The same four-bar at t = 1 - delta, just before its crossing: near it the solve's accelerations came from a
    nearly singular Jacobian (at delta = 1e-5 the rocker's was -149 rad/s^2 where the branch's is 2.7e-4). Every
    frame's rates and accelerations are the branch's: the triangle B C D solved in 40 digits (mpmath; C on either
    side of BD, the side whose rocker rate is nearer the arriving one) and differentiated in th, at the crossing
    itself the second order's (_flat_change_point_rates)."""
    import mpmath as mp

    roots, rates = _flat_change_point_rates()
    km = compile_model(_flat_fourbar(-1.0, 2.0))
    t = 1.0 - delta
    traj = solve_trajectory(km, np.r_[np.linspace(0.0, 0.98, 50), t])
    assert traj.ok and traj.times[-1] == t, traj.reason
    w = 2 * math.pi
    if delta:
        mp.mp.dps = 40

        def angles(th, side):  # (coupler angle psi, rocker angle phi) at crank angle th
            B = (mp.cos(th), mp.sin(th))
            u = (B[0] - 4, B[1])
            d = mp.sqrt(u[0] ** 2 + u[1] ** 2)
            x = (d * d + 4 - 9) / (2 * d)  # C = D + x u/d + side h n/d, |C - D| = 2, |C - B| = 3
            h = mp.sqrt(4 - x * x)
            C = (4 + (x * u[0] - side * h * u[1]) / d, (x * u[1] + side * h * u[0]) / d)
            return mp.atan2(C[1] - B[1], C[0] - B[0]), mp.atan2(C[1], C[0] - 4)

        th = mp.pi - mp.mpf(w) * mp.mpf(delta)
        refs = []
        for side in (1, -1):
            d1 = [float(mp.diff(lambda x: angles(x, side)[i], th)) * w for i in (0, 1)]
            d2 = [float(mp.diff(lambda x: angles(x, side)[i], th, 2)) * w * w for i in (0, 1)]
            refs.append((np.array([w, d1[0] - w, d1[1] - d1[0], -d1[1]]),
                         np.array([0.0, d2[0], d2[1] - d2[0], -d2[1]])))
        qd, qdd = min(refs, key=lambda ref: abs(ref[0][3] + w * roots[1]))
    else:
        qd, qdd = rates(roots[1]), np.zeros(4)
    np.testing.assert_allclose(traj.qd[-1], qd, atol=1e-6)
    np.testing.assert_allclose(traj.qdd[-1], qdd, atol=2e-3)


def test_a_slider_crank_driven_at_its_slider_to_the_dead_centre_arrives_at_the_cranks_rate():
    """User test s55 K3 (sc_slider_touch.json): crank r = 0.5 about the origin drawn at 60 degrees, rod l = 1.2, the
    slider on the x axis driven from x0 to the outer dead centre x = r + l at t = 1 and back,
    x = x0 + (r + l - x0) sin(pi t / 2). Near the dead centre x = r cos th + sqrt(l^2 - r^2 sin^2 th)
    = r + l - (r / 2)(1 + r / l) th^2 + O(th^4) and r + l - x = (r + l - x0)(pi^2 / 8)(1 - t)^2 + O((1 - t)^4), so
    th = +-k (1 - t) + O((1 - t)^3), k = sqrt((r + l - x0)(pi^2 / 8) / ((r / 2)(1 + r / l))): two branches cross (the
    crank turning back or on), and the crank arrives at th' = -k, with no acceleration (th is odd in 1 - t). The
    frame there had the mean of the two, 0 (3.7e-11). The rod's angle b (0 at the dead centre) has
    r th' + l b' = 0 (the y components), so the joint rates are A = th', B = b' - th', C = -b', P = 0."""
    r, l, th0 = 0.5, 1.2, math.pi / 3
    B = (r * math.cos(th0), r * math.sin(th0), 0.0)
    x0 = r * math.cos(th0) + math.sqrt(l * l - (r * math.sin(th0)) ** 2)
    m = Mechanism(name="sc", space="planar")
    m.bodies += [Body("ground", ground=True), Body("crank"), Body("rod"), Body("slider")]
    m.joints += [Joint("A", "revolute", ("ground", "crank"), (0.0, 0.0, 0.0)),
                 Joint("B", "revolute", ("crank", "rod"), B),
                 Joint("C", "revolute", ("rod", "slider"), (x0, 0.0, 0.0)),
                 Joint("P", "prismatic", ("ground", "slider"), (x0, 0.0, 0.0), axis=(1.0, 0.0, 0.0))]
    m.drivers.append(Driver("P", f"{r + l - x0!r}*sin(pi*t/2)"))
    km = compile_model(m)
    assert km.coord_names == ["A", "B", "C", "P"]
    traj = solve_trajectory(km, np.linspace(0.0, 2.0, 21))
    assert not traj.ok and traj.times[-1] == 1.0 and "two assembly branches cross here" in traj.reason
    assert traj.limit_time == pytest.approx(1.0, abs=1e-9)
    k = math.sqrt((r + l - x0) * (math.pi**2 / 8) / ((r / 2) * (1 + r / l)))
    th_d = -k
    b_d = -r * th_d / l
    assert traj.q[-1, 0] == pytest.approx(-th0, abs=1e-9)  # the crank at 0 degrees
    np.testing.assert_allclose(traj.qd[-1], [th_d, b_d - th_d, -b_d, 0.0], atol=1e-6)  # the mean gave 0 for A
    assert abs(traj.qdd[-1, 0]) < 2e-3
