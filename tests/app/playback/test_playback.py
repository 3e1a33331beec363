"""Kinematic playback in the window: background solve, recording, scrubbing, re-solve on edits, stop reasons, threads."""

from __future__ import annotations

import math
import re
import threading

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from core import io
from core.kinematics import compile_model, rank_mobility, solve_trajectory
from core.model import Body, Driver, Joint, Mechanism

EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[3] / "resources" / "examples"


def fourbar(g: float, a: float, b: float, c: float, theta: float = math.pi / 3, drive: str | None = "2*pi*t") -> Mechanism:
    """A planar four-bar drawn with ground pivots A=(0,0), D=(g,0), crank a at angle theta, coupler b, rocker c."""
    B = (a * math.cos(theta), a * math.sin(theta))
    # C: intersection of the circles |C-B| = b and |C-D| = c (the upper one): the loop closes in the drawing
    dx, dy = g - B[0], -B[1]
    d = math.hypot(dx, dy)
    x = (b * b - c * c + d * d) / (2 * d)
    h = math.sqrt(b * b - x * x)
    C = (B[0] + (x * dx - h * dy) / d, B[1] + (x * dy + h * dx) / d)
    m = Mechanism(name="fourbar test")
    for name, ground in (("ground", True), ("crank", False), ("coupler", False), ("rocker", False)):
        m.add_body(Body(name, ground=ground), position=(0.0, 0.0))
    for name, bodies, at in (("A", ("ground", "crank"), (0, 0)), ("B", ("crank", "coupler"), B),
                             ("C", ("coupler", "rocker"), C), ("D", ("rocker", "ground"), (g, 0))):
        m.add_joint(Joint(name, "revolute", bodies, at=(float(at[0]), float(at[1]), 0.0)))
    if drive:
        m.add_driver(Driver("A", drive))
    return m


def solved(win, frames: int | None = None, timeout: int = 10000) -> None:
    """Wait until the window's recording is complete (with `frames` frames, if given)."""
    rec = win.playback.recording
    win.qtbot.waitUntil(lambda: rec.complete and (frames is None or rec.count == frames), timeout=timeout)


@pytest.fixture
def window(make_window, qtbot):
    def make(mech=None):
        win = make_window(mech if mech is not None else io.load(EXAMPLES / "fourbar.json"))
        win.qtbot = qtbot
        return win

    return make


def crank_pose(win) -> np.ndarray:
    return win.viewport.body_poses()["crank"]


def test_fourbar_solves_in_the_background_and_scrubbing_poses_the_crank(window, qtbot):
    win = window()
    assert win.motion.end_box.value() == 1.0 and win.motion.steps_box.value() == 100
    solved(win, 101)  # t = k/100, k = 0..100
    rec = win.playback.recording
    assert rec.ok and win.motion.slider.maximum() == 100
    ref = solve_trajectory(compile_model(win.document.mechanism), np.linspace(0.0, 1.0, 101))
    ci = ref.body_names.index("crank")
    for k in (0, 17, 63, 100):
        win.motion.slider.setValue(k)  # the user scrubs
        assert rec.cursor == k
        np.testing.assert_allclose(crank_pose(win), ref.poses[k, ci], atol=1e-9)
        # the crank is driven by 2*pi*t about A = origin: its rotation is Rz(2*pi*t_k)
        phi = 2 * math.pi * k / 100
        np.testing.assert_allclose(crank_pose(win)[:2, :2], [[math.cos(phi), -math.sin(phi)], [math.sin(phi), math.cos(phi)]], atol=1e-9)
        assert win.motion.time_label.text().startswith(f"t = {k / 100:.3f} s")
    assert "101 frames" in win.motion.status_label.text()
    qtbot.waitUntil(lambda: not win.playback.worker.running(), timeout=3000)  # the job thread ends with the solve


def test_play_advances_the_cursor_in_real_time_and_loops(window, qtbot):
    win = window()
    solved(win, 101)
    rec = win.playback.recording
    win.motion.slider.setValue(90)
    win.action_set.play.trigger()  # Space
    assert win.playback.playing
    # 0.1 s of motion remain; real time playback wraps to the start within ~0.3 s wall time
    qtbot.waitUntil(lambda: rec.cursor < 50, timeout=3000)
    qtbot.waitUntil(lambda: rec.cursor > 5, timeout=3000)
    win.action_set.play.trigger()
    assert not win.playback.playing
    k = rec.cursor
    qtbot.wait(100)
    assert rec.cursor == k  # paused: the cursor stays


def test_space_key_toggles_play(window, qtbot):
    win = window()
    solved(win, 101)
    win.graph.setFocus()
    qtbot.keyClick(win.graph, Qt.Key_Space)
    assert win.playback.playing
    qtbot.keyClick(win.graph, Qt.Key_Space)
    assert not win.playback.playing


def test_edit_while_solving_cancels_and_rebuilds_with_the_new_geometry(window, qtbot):
    win = window()
    solved(win, 101)
    pb = win.playback
    ended = []
    pb.worker.ended.connect(pb_record(ended))
    pb.set_range(1.0, 50000)  # a long solve (tens of seconds), so the edit surely arrives while it runs
    rec = pb.recording
    qtbot.waitUntil(lambda: rec.count > 0, timeout=5000)
    long_token = pb.worker.token
    assert not rec.complete and win.motion.slider.maximum() == rec.count - 1  # the slider grows with the frames
    # move B along the crank's direction: crank length 0.8 instead of 1 (the drawing still closes)
    assert win.editor.update_joint("B", at=(0.4, 0.4 * math.sqrt(3), 0.0)) is None
    assert rec.count == 0  # the old frames belong to the old geometry: dropped at once
    pb.set_range(1.0, 100)  # within the debounce: one new solve
    qtbot.waitUntil(lambda: rec.complete and rec.count == 101, timeout=10000)
    assert pb.worker.token == long_token + 1
    qtbot.waitUntil(lambda: not pb.worker.running(), timeout=5000)
    assert all(not t.is_alive() for t in pb.worker.threads())
    assert [e.cancelled for tok, e in ended if tok == long_token] == [True]  # cancelled, never completed
    ref = solve_trajectory(compile_model(win.document.mechanism), np.linspace(0.0, 1.0, 101))
    np.testing.assert_allclose(rec.poses[:101], ref.poses, atol=1e-9)
    # the coupler's joint B now sits 0.8 from A: at t = 0.25 the crank is at 60 + 90 degrees
    win.motion.slider.setValue(25)
    B = crank_pose(win) @ np.array([0.4, 0.4 * math.sqrt(3), 0.0, 1.0])
    np.testing.assert_allclose(B[:2], [0.8 * math.cos(math.radians(150)), 0.8 * math.sin(math.radians(150))], atol=1e-9)


def pb_record(out: list):
    """A slot appending (token, end) to `out` (list.append is safe from any thread)."""
    return lambda token, end: out.append((token, end))


def test_non_grashof_stops_early_with_the_reason_and_keeps_the_frames(window, qtbot):
    # g = 4, a = b = c = 3: s + l = 7 > p + q = 6, non-Grashof; the crank cannot turn a full revolution
    mech = fourbar(4.0, 3.0, 3.0, 3.0)
    win = window(mech)
    solved(win)
    rec = win.playback.recording
    ref = solve_trajectory(compile_model(mech), np.linspace(0.0, 1.0, 101))
    assert not ref.ok and 1 < len(ref.times) < 101
    assert not rec.ok and rec.count == len(ref.times)
    status = win.motion.status_label.text()
    assert status.startswith(f"stopped at t = {ref.stop_time:.2f} s: ")
    # (the reason's first clause without its aside: "passed a singular position (toggle, ...) between two frames")
    why = re.sub(r" \([^()]*\)", "", ref.reason.split(": ", 1)[1]).split(";")[0]
    # ... and where the motion ends, located between the last frame and the one that failed
    assert ref.times[-1] < ref.limit_time < ref.stop_time
    assert status.endswith(f"{why}; the motion ends near t = {ref.limit_time:.4g} s"), (status, ref.reason)
    assert ref.reason in win.motion.status_label.toolTip()
    assert win.motion.slider.maximum() == rec.count - 1
    for k in (0, rec.count - 1):
        win.motion.slider.setValue(k)
        np.testing.assert_allclose(win.viewport.body_poses()["rocker"], ref.poses[k, ref.body_names.index("rocker")], atol=1e-9)


def test_a_driver_undefined_mid_run_stops_with_its_location_and_keeps_the_frames(window, qtbot, dialogs):
    # 1/(0.5 - t) has a pole at t = 0.5: over the default 0 ... 1 s in 100 steps the Motion dock gets the 50 frames
    # before it and the core's verdict, naming the driver and the time (the CLI exits 3 with the same reason)
    mech = fourbar(4.0, 1.0, 3.5, 3.0, drive="1/(0.5 - t)")
    win = window(mech)
    solved(win)
    rec = win.playback.recording
    assert not rec.ok and rec.count == 50 and rec.time_at(49) == pytest.approx(0.49)
    status = win.motion.status_label.text()
    head = "stopped at t = 0.50 s: drivers[0].value: acceleration of '1/(0.5 - t)' passes the bound ±1e+09"
    assert status.startswith(head + "; the motion ends near t = ") and status.endswith(" s")
    assert 0.49 < float(status[len(head) + len("; the motion ends near t = "):-2]) <= 0.5  # (the pole, located)
    assert "The 50 frames before it can be played" in win.motion.status_label.toolTip()
    assert not dialogs.calls


def test_underdriven_document_shows_the_driver_message_and_solves_nothing(window, qtbot, dialogs):
    win = window()
    solved(win, 101)
    pb = win.playback
    win.motion.slider.setValue(30)
    assert not np.allclose(crank_pose(win), np.eye(4))
    started = pb.worker.solves_started
    assert win.editor.remove_driver(0) is None
    qtbot.waitUntil(lambda: "driver" in win.motion.status_label.text(), timeout=5000)
    text = win.motion.status_label.text()
    assert text.startswith("drivers: ") and "1 degree(s) of freedom" in text and "0 driver(s)" in text
    assert pb.worker.solves_started == started  # no trajectory was started
    qtbot.waitUntil(lambda: not pb.worker.running(), timeout=3000)
    assert pb.recording.count == 0 and not win.motion.slider.isEnabled()
    np.testing.assert_allclose(crank_pose(win), np.eye(4))  # back in the design configuration
    assert not dialogs.calls  # background work never opens a dialog


def test_bad_driver_expression_shows_the_located_message(window, qtbot, dialogs):
    # a driver value that is not finite at t = 0 is a located error, reported in the status line
    mech = fourbar(4.0, 1.0, 3.5, 3.0, drive="1/t")
    win = window(mech)
    qtbot.waitUntil(lambda: win.motion.status_label.text().startswith("drivers"), timeout=5000)
    assert win.playback.recording.count == 0 and not dialogs.calls


def test_status_bar_uses_rank_mobility_less_idle_freedoms(window, qtbot):
    win = window(io.load(EXAMPLES / "rssr.json"))
    rm = rank_mobility(win.document.mechanism)
    # RSSR: Gruebler counts 2 (the coupler's spin about its own axis), one of them idle; one driver suffices
    assert (rm.gruebler, rm.idle_freedoms, rm.effective, len(win.document.mechanism.drivers)) == (2, 1, 1, 1)
    qtbot.waitUntil(lambda: "fully driven" in win.status.drivers.text(), timeout=8000)
    assert win.status.drivers.text().startswith("DOF 1 · drivers 1")
    assert "idle" in win.status.drivers.toolTip()
    solved(win, 101)
    assert win.playback.recording.ok


def test_closing_the_window_joins_the_solver_thread(window, qtbot):
    win = window()
    win.playback.set_range(1.0, 50000)
    qtbot.waitUntil(lambda: win.playback.recording.count > 0, timeout=5000)
    threads = win.playback.worker.threads()
    assert any(t.is_alive() for t in threads) and all(isinstance(t, threading.Thread) for t in threads)
    win.close()
    assert not any(t.is_alive() for t in threads)


def test_steps_field_resolves_and_moving_a_node_does_not(window, qtbot):
    win = window()
    solved(win, 101)
    token = win.playback.worker.token
    rev = win.document.mechanism.revision
    win.editor.move({"crank": (123.0, 45.0)})  # a graph-editor position is not part of the motion
    assert win.document.mechanism.revision > rev and win.document.mechanism.layout["crank"] == (123.0, 45.0)
    qtbot.wait(250)  # longer than the debounce
    assert win.playback.worker.token == token and win.playback.recording.count == 101
    grew_in = set()
    win.playback.recording.grew.connect(lambda _n: grew_in.add(threading.get_ident()))
    win.motion.steps_box.setValue(40)  # as the user commits a new step count
    solved(win, 41)
    assert grew_in == {threading.main_thread().ident}  # frames reach the recording on the GUI thread only
    assert win.playback.worker.token == token + 1
    np.testing.assert_allclose(win.playback.recording.times[:41], np.linspace(0.0, 1.0, 41))
    win.motion.end_box.setValue(2.0)
    solved(win, 41)
    assert win.playback.recording.time_at(40) == pytest.approx(2.0)


def test_the_end_box_shows_short_durations_and_a_steps_edit_keeps_the_exact_end(window):
    """End shows six significant digits (0.0004 s is not 0.001 s), and editing Steps keeps the end time as it is,
    not as shown (0.12345 s stays 0.12345 s); Steps goes up to the run limit."""
    win = window()
    pb, motion = win.playback, win.motion
    pb.set_range(0.0004, 4)
    assert motion.end_box.text() == "0.0004 s" and motion.end_box.value() == pytest.approx(0.0004, abs=1e-15)
    pb.set_range(0.123456789, 10)
    assert motion.end_box.text() == "0.123457 s"
    motion.steps_box.setValue(20)  # as the user commits a new step count
    assert (pb.t_end, pb.steps) == (0.123456789, 20)
    motion.end_box.setValue(2.5)
    assert (pb.t_end, pb.steps) == (2.5, 20)
    # typed as a user types it: the text is read back through the box's own parsing
    motion.end_box.lineEdit().selectAll()
    QTest.keyClicks(motion.end_box.lineEdit(), "1.5e-3")
    QTest.keyClick(motion.end_box.lineEdit(), Qt.Key_Return)
    assert pb.t_end == pytest.approx(1.5e-3, abs=1e-15) and motion.end_box.text() == "0.0015 s"
    motion.steps_box.setValue(200_000)  # (above the old 100,000 limit; under the run limit)
    assert pb.steps == 200_000 and motion.steps_box.value() == 200_000


def test_replacing_the_document_joins_the_old_solve_and_solves_the_new_one(window, qtbot):
    win = window()
    win.playback.set_range(1.0, 50000)
    qtbot.waitUntil(lambda: win.playback.recording.count > 0, timeout=5000)
    old = win.playback.worker.threads()
    win.document.replace(io.load(EXAMPLES / "slider_crank.json"))  # what File ▸ Open does
    assert not any(t.is_alive() for t in old)  # cancelled and joined at once
    win.playback.set_range(1.0, 100)
    solved(win, 101)
    ref = solve_trajectory(compile_model(win.document.mechanism), np.linspace(0.0, 1.0, 101))
    assert win.playback.recording.body_names == ref.body_names
    np.testing.assert_allclose(win.playback.recording.poses[:101], ref.poses, atol=1e-9)


def test_an_empty_document_has_nothing_to_move(window, qtbot):
    win = window()
    win.document.replace(Mechanism())  # File ▸ New
    qtbot.waitUntil(lambda: "nothing to move" in win.motion.status_label.text(), timeout=3000)
    assert win.playback.recording.count == 0 and not win.playback.worker.running()


def test_after_an_edit_the_cursor_returns_to_the_time_shown(window, qtbot):
    win = window()
    solved(win, 101)
    win.motion.slider.setValue(30)
    assert win.editor.update_joint("B", at=(0.4, 0.4 * math.sqrt(3), 0.0)) is None  # crank length 0.8
    solved(win, 101)
    rec = win.playback.recording
    assert rec.cursor == 30 and win.motion.slider.value() == 30
    ref = solve_trajectory(compile_model(win.document.mechanism), np.linspace(0.0, 1.0, 101))
    np.testing.assert_allclose(crank_pose(win), ref.poses[30, ref.body_names.index("crank")], atol=1e-9)


def test_work_units_analyses_the_drivers_once_per_structure(monkeypatch):
    """work_units (the auto-run rule's prior, in the GUI thread at each edit before a contact run) compiled the
    kinematic model and analysed the drivers at every edit of the motion (2-10 ms, about 40 ms on a first call): it
    is now counted once per structure (bodies, their mass or none, poses and points, joints, driven coordinates), so
    editing an expression, a mass, friction, dt or the duration, or undoing back to a structure seen, costs nothing."""
    import copy
    from dataclasses import replace

    import app.playback.player as player
    from core import io as core_io

    calls = []
    real = player.undriven_massive_bodies
    monkeypatch.setattr(player, "undriven_massive_bodies", lambda m: calls.append(m) or real(m))
    player._work_units.cache_clear()
    mech = core_io.load(EXAMPLES / "contact_tray_tilt.json")  # 6 moving bodies, its one joint driven
    assert player.work_units(mech) == 6 and len(calls) == 1

    def edited(**fields):
        m = copy.copy(mech)
        for k, v in fields.items():
            setattr(m, k, v)
        return m

    bodies = [replace(b, mass=b.mass * 2) if b.mass is not None else b for b in mech.bodies]
    for m in (edited(drivers=[replace(d, value="0.3*sin(t)") for d in mech.drivers]),
              edited(drivers=[replace(d, value="sin(") for d in mech.drivers]),  # (refused by the run; the same count)
              edited(bodies=bodies),
              edited(simulation=replace(mech.simulation, dt=0.005, duration=3.0)),
              edited(contact=replace(mech.contact_settings(), friction=0.9))):
        assert player.work_units(m) == 6
    assert len(calls) == 1
    # the driven coordinate gone: its joint now holds a body moved by forces, the tray (a structure of its own)
    assert player.work_units(edited(drivers=[])) == 7 and len(calls) == 2
    assert player.work_units(mech) == 6 and len(calls) == 2  # (back: undo)
    # the analysis never saw the expressions (which coordinates are driven is all it needs)
    assert [d.value for d in calls[0].drivers] == ["0"] * len(mech.drivers)


def _bin_of(n: int, duration: float = 2.0) -> Mechanism:
    """n spheres (r = 3.5 cm, 0.1 kg) on a grid 10 cm apart in layers 10 cm apart, above the floor of a 1 m bin."""
    import json

    side = math.ceil(math.sqrt(min(n, 81)))
    walls = [{"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}}] + [
        {"name": f"wall{i}", "ground": True, "shape": {"type": "halfspace", "normal": nrm, "offset": -0.5}}
        for i, nrm in enumerate(([-1, 0, 0], [1, 0, 0], [0, -1, 0], [0, 1, 0]))]
    balls = [{"name": f"s{k}", "mass": 0.1, "shape": {"type": "sphere", "radius": 0.035},
              "pose": {"position": [0.1 * (k % side) - 0.4, 0.1 * (k // side % side) - 0.4, 0.1 + 0.1 * (k // side ** 2)]}}
             for k in range(n)]
    doc = {"format": "linkwright.mechanism", "version": 1, "space": "spatial", "gravity": [0, 0, -9.81],
           "bodies": walls + balls, "contact": {"friction": 0.5}, "simulation": {"dt": 0.01, "duration": duration}}
    return io.loads(json.dumps(doc))


def test_the_prior_estimate_grows_with_the_square_of_the_bodies_that_can_crowd_a_step():
    """User test s58: a bin of 300 bodies for 2 s was 'expected ≈ 90 s of work' (1.5 ms a step for each body, 200
    steps) and took 1-40 s a step (CPU, 4.3-5.2 s a step on average over its first 61 steps). A step's cost grows about
    as the square of the bodies that bear on each other (its Newton iterations each cost as its unknowns, and it
    takes more of them: 2-5 for up to 8 spheres, 19 for 27, 144 for 300), so the prior has a term in the square of
    the shaped bodies moved by forces (crowd_bodies). For 300 such bodies it is within a factor of 2 of the work
    measured on the user's bin of 300 mixed parts (the prior counts bodies, not their shapes: this bin is of spheres);
    a mechanism of shapeless links (none can touch) keeps the linear prior, and the shipped
    examples' auto-run decisions are as documented (docs/gui.md)."""
    import app.playback.player as player

    big = _bin_of(300)
    assert player.work_units(big) == 300 and player.crowd_bodies(big) == 300
    measured = 5.2 * 200  # (seconds of CPU a step, the more of two runs over the bin's first 61, on 2 shared cores)
    assert 0.5 * measured <= player.expected_contact_seconds(big, None) <= 2.0 * measured
    # per step: a quarter of the bodies costs about a sixteenth once crowded, not a quarter
    per = {n: player.prior_seconds_per_step(_bin_of(n)) for n in (1, 8, 75, 300)}
    assert per[300] / per[75] > 10 and per[8] / per[1] < 12
    # links without shapes: no crowd, the linear prior (1.5 ms a step for each body and joint held by forces)
    chain = io.load(EXAMPLES / "contact_fourbar_swing.json")
    assert player.crowd_bodies(chain) == 0
    assert player.prior_seconds_per_step(chain) == player.PRIOR_SECONDS_PER_UNIT_STEP * player.work_units(chain)
    # the shipped examples that re-run by themselves, and those that wait for Run
    for name in ("pile", "sphere_drop", "box_slide", "disc_roll", "parts_feeder", "cam_follower", "two_spheres",
                 "pendulum_strike", "polytopes"):
        assert player.expected_contact_seconds(io.load(EXAMPLES / f"contact_{name}.json"), None) <= 2.0, name
    for name in ("fourbar_swing", "tray_tilt"):
        assert player.expected_contact_seconds(io.load(EXAMPLES / f"contact_{name}.json"), None) > 2.0, name
