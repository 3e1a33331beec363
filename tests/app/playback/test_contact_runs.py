"""Contact documents in the window: runs stream frames to the 3D view and the plots, Run/Stop, stale results,
the comparison of methods, a run's exception, exports, and the event loop's latency during a run."""

from __future__ import annotations

import csv
import re
import threading
import time
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PySide6.QtCore import QElapsedTimer, QTimer
from PySide6.QtGui import QImage

from core import io
from core.contact import simulate
from core.errors import LinkwrightError
from core.model import Mechanism
from core.transforms import quat_to_matrix

EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[3] / "resources" / "examples"


@pytest.fixture
def window(make_window, qtbot):
    def make(name):
        """A window on an example (by name) or on a document."""
        win = make_window(io.load(EXAMPLES / f"{name}.json") if isinstance(name, str) else name)
        win.qtbot = qtbot
        return win

    return make


def long_pile() -> Mechanism:
    """contact_pile for 20 s (2,000 steps): a run that waits for Run on opening (by the prior estimate) and after an
    edit (by the measured one), and is still going when a test looks at it (the file's 1 s runs by itself, in about
    half a second)."""
    mech = io.load(EXAMPLES / "contact_pile.json")
    mech.set_simulation(duration=20.0)
    return mech


def finished(win, timeout: int = 60000) -> None:
    """Wait until the window's run has ended and its thread is gone."""
    pb = win.playback
    win.qtbot.waitUntil(lambda: pb.recording.complete and not pb.worker.running(), timeout=timeout)


def pose(position, quat) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = quat_to_matrix(np.asarray(quat, float))
    T[:3, 3] = position
    return T


def drawn_length(force, scale: float, knee: float):
    """The documented arrow length of a force magnitude (docs/viewport.md, Run overlays): scale x force up to the knee,
    knee x (1 + ln(scale x force / knee)) beyond it."""
    L = scale * np.asarray(force, float)
    return np.where(L > knee, knee * (1 + np.log(np.maximum(L, knee) / knee)), L)


def assert_arrows_of_frame(arrows, scale: float, ref, k: int, p: int, knee: float = np.inf) -> None:
    """The 3D view's arrows (Viewport3D.contact_arrows) are pair p's at frame k of the core's recording `ref`: from
    the contact point along the normal force and the friction force (force = impulse / h), scale x force long up to
    the knee (logarithmic beyond it); none while the pair is out of contact range."""
    pts, tip_n, tip_f = arrows
    h = ref.dt
    if ref.active[k, p]:
        np.testing.assert_allclose(pts, [ref.point_a[k, p]], atol=1e-12)
        for tip, force in ((tip_n, ref.normal[k, p] * ref.pn[k, p] / h), (tip_f, ref.pf[k, p] / h)):
            f = float(np.linalg.norm(force))
            want = force / f * drawn_length(f, scale, knee) if f > 0 else 0 * force
            np.testing.assert_allclose(tip - pts, [want], atol=1e-12)
    else:
        assert len(pts) == 0


@pytest.mark.parametrize("name, body, pair", [("contact_sphere_drop", "ball", "ball/floor"),
                                              ("contact_box_slide", "box", "box/floor"),
                                              ("contact_disc_roll", "disc", "disc/floor")])
def test_a_contact_example_runs_by_itself_and_every_view_follows_the_cursor(window, name, body, pair):
    win = window(name)
    pb, plots = win.playback, win.plots
    assert pb.kind == "contact" and win.motion.kind_label.text().startswith("Run: contact dynamics")
    finished(win)
    rec = pb.recording
    ref = simulate(win.document.mechanism)  # the CLI's run of the same document
    h = ref.dt
    n = round(win.document.mechanism.simulation_settings().duration / h) + 1  # frames at 0, h, ..., duration
    assert rec.ok and rec.count == ref.n_frames == n
    b = ref.body_names.index(body)
    p = ref.pair_names.index(pair)
    plots.set_mode("normal force")
    for k in (0, 17, 45, n - 1):
        win.motion.slider.setValue(k)  # the user scrubs
        np.testing.assert_allclose(win.viewport.body_poses()[body], pose(ref.position[k, b], ref.orientation[k, b]),
                                   atol=1e-12)
        assert plots.cursor_time() == pytest.approx(k * h)
        assert plots.value_at_cursor(pair) == pytest.approx(ref.pn[k, p] / h, abs=1e-12)  # force = impulse / h
        assert_arrows_of_frame(win.viewport.contact_arrows(), win.viewport.force_scale(), ref, k, p,
                               win.viewport.arrow_knee())
        # the body's trail (its centre of mass's path) ends where the body is: origin + R(q) com
        com = ref.position[k, b] + quat_to_matrix(ref.orientation[k, b]) @ ref.com[b]
        np.testing.assert_allclose(win.viewport.trails()[body][-1], com, atol=1e-12)
        assert len(win.viewport.trails()[body]) == k + 1
    plots.set_mode("friction force")
    win.motion.slider.setValue(30)
    assert plots.value_at_cursor(pair) == pytest.approx(np.linalg.norm(ref.pf[30, p]) / h, abs=1e-12)
    plots.set_mode("gap")
    assert plots.value_at_cursor(pair) == pytest.approx(ref.gap[30, p], abs=1e-15)


def test_the_sphere_rests_with_its_weight_on_the_floor(window):
    win = window("contact_sphere_drop")
    finished(win)
    win.plots.set_mode("normal force")
    win.motion.slider.setValue(100)
    # 1 kg at rest on the floor at t = 1 s: the normal force is m g
    assert win.plots.value_at_cursor("ball/floor") == pytest.approx(9.81, rel=1e-9)
    win.plots.set_mode("body position")
    assert win.plots.value_at_cursor("ball.z") == pytest.approx(0.1, abs=1e-8)  # resting on its radius


@pytest.mark.serial
def test_a_long_contact_run_waits_for_run_and_stop_keeps_its_frames(window, qtbot):
    # the pile for 20 s (2,000 steps, about 6 s of stepping alone on this machine), so that the run is still going
    # when the test looks at it: the file's 1 s of this pile takes well under a second, which a busy machine's GUI
    # thread can see end between two looks
    win = window(long_pile())
    pb = win.playback
    assert not pb.auto_runs() and pb.expected_seconds() > 2.0
    assert pb.recording.count == 0 and not pb.worker.running()
    assert "press Run (F5)" in win.motion.status_label.text()
    win.action_set.run.trigger()
    qtbot.waitUntil(lambda: pb.recording.count >= 3, timeout=60000)
    assert win.action_set.stop.isEnabled()
    # while it runs: simulated time, steps per second and the time left (left out below one second: then the
    # rate shown must say so for the steps that remain; h = 0.01 s)...
    qtbot.waitUntil(lambda: "steps/s" in win.motion.progress_bar.format(), timeout=60000)
    m = re.fullmatch(r"t = (\d+\.\d{3}) / 20\.000 s · (\d+) steps/s(?: · (\d+) s left)?",
                     win.motion.progress_bar.format())
    assert m, win.motion.progress_bar.format()
    if m.group(3) is None:
        assert (20.0 - float(m.group(1))) / 0.01 / float(m.group(2)) < 1.5  # (rounded rate and time)
    # ...and scrubbing reaches the newest frame, whose poses the 3D view shows
    rec, slider = pb.recording, win.motion.slider
    assert not rec.complete and slider.maximum() == rec.count - 1
    slider.setValue(slider.maximum())
    assert rec.cursor == rec.count - 1
    for name, P in zip(rec.body_names, rec.poses[rec.count - 1]):
        np.testing.assert_array_equal(win.viewport.body_poses()[name], P)
    threads = pb.worker.threads()
    t0 = time.perf_counter()
    win.action_set.stop.trigger()
    while any(t.is_alive() for t in threads) and time.perf_counter() - t0 < 5.0:
        time.sleep(0.002)
    took = time.perf_counter() - t0
    assert not any(t.is_alive() for t in threads)
    assert took < 0.1, f"the run's thread ended {took * 1000:.0f} ms after Stop"
    qtbot.waitUntil(lambda: pb.recording.complete, timeout=3000)
    rec = pb.recording
    assert rec.count >= 3 and not rec.ok
    assert win.motion.status_label.text().startswith("stopped by the user at t = ")
    assert not win.action_set.stop.isEnabled()
    win.motion.slider.setValue(rec.count - 1)  # the frames so far can be scrubbed
    assert rec.cursor == rec.count - 1


def test_the_view_follows_a_contact_runs_newest_frame_until_the_user_scrubs_back(window, qtbot):
    win = window(long_pile())
    pb, rec, slider = win.playback, win.playback.recording, win.motion.slider

    def next_batch() -> None:
        n = rec.count
        qtbot.waitUntil(lambda: rec.count > n, timeout=60000)

    win.action_set.run.trigger()
    qtbot.waitUntil(lambda: rec.count >= 2, timeout=60000)
    for _ in range(2):  # batch after batch, the cursor, the slider and the 3D view are on the newest frame
        next_batch()
        assert not rec.complete
        assert rec.cursor == rec.count - 1 and slider.value() == rec.count - 1
        for name, P in zip(rec.body_names, rec.poses[rec.count - 1]):
            np.testing.assert_array_equal(win.viewport.body_poses()[name], P)
    slider.setValue(1)  # the user scrubs back: the cursor stays where they put it while frames come
    next_batch()
    next_batch()
    assert rec.cursor == 1 and rec.count > 3
    slider.setValue(slider.maximum())  # back on the newest frame: followed again
    next_batch()
    assert rec.cursor == rec.count - 1
    pb.stop()
    qtbot.waitUntil(lambda: rec.complete, timeout=5000)


def _sphere_pile(duration: float) -> Mechanism:
    """27 spheres (r = 5 cm, 3 x 3 x 3, 1 cm apart) over a floor."""
    bodies = [{"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}}]
    bodies += [{"name": f"s{i}{j}{k}", "mass": 0.1, "shape": {"type": "sphere", "radius": 0.05},
                "pose": {"position": [0.11 * i, 0.11 * j, 0.06 + 0.11 * k]}}
               for i in range(3) for j in range(3) for k in range(3)]
    return io.from_dict({"format": "linkwright.mechanism", "version": 1, "space": "spatial",
                         "gravity": [0, 0, -9.81], "bodies": bodies, "contact": {"friction": 0.4},
                         "simulation": {"dt": 0.01, "duration": duration}})


def test_the_pile_runs_by_itself_and_longer_or_bigger_piles_wait_for_run(window, qtbot):
    """Before a document's first run its expected work came from 2 ms per shaped pair and step: the pile's 35 pairs
    (most of them far apart, never in contact range) made its 1 s about 7 s, so it waited for Run, though it takes
    about half a second. The prior is now per body moved and joint holding one (measured on the examples): the pile
    runs by itself when opened; the same pile for 20 s, and 27 spheres, still wait for Run."""
    win = window("contact_pile")
    pb = win.playback
    assert pb.auto_runs() and pb.is_running() and pb.status_kind == "busy"
    finished(win)
    assert pb.recording.ok and pb.recording.count == 101
    win.document.replace(long_pile())  # (2,000 steps)
    assert not pb.auto_runs() and not pb.is_running() and pb.recording.count == 0
    assert pb.status_kind == "stale" and "press Run (F5)" in win.motion.status_label.text()
    for duration in (20.0, 1.0):
        win.document.replace(_sphere_pile(duration))
        assert not pb.auto_runs() and not pb.is_running() and pb.recording.count == 0
        assert "press Run (F5)" in win.motion.status_label.text()
    assert not pb.worker.running()


@pytest.mark.serial
def test_the_event_loop_stays_responsive_during_a_contact_run(window, qtbot):
    # a 20-second contact run (2,000 steps, about 6 s of stepping alone on this machine): it waits for Run, and is
    # still going after the one second measured below (60 frames, measured before, took 0.2 s once the solver got
    # faster: no tick came in between)
    win = window(long_pile())
    pb = win.playback
    gaps = []
    clock = QElapsedTimer()
    probe = QTimer()
    probe.setInterval(10)

    def tick():
        gaps.append(clock.restart())

    probe.timeout.connect(tick)
    win.action_set.run.trigger()
    qtbot.waitUntil(lambda: pb.recording.count >= 2, timeout=60000)  # the kernels are loaded, steps are running
    clock.start()
    probe.start()
    qtbot.wait(1000)  # one second of the run, the event loop turning
    still_running = pb.worker.running() and not pb.recording.complete
    probe.stop()
    pb.stop()
    qtbot.waitUntil(lambda: not pb.worker.running(), timeout=10000)
    assert still_running  # (the ticks measured the event loop while the run was stepping)
    g = np.array(gaps[1:])
    assert len(g) > 20
    # latency = how much later than its 10 ms interval a tick comes; 95 of 100 ticks within 50 ms, none blocked long
    late = np.percentile(g, 95) - 10
    assert late < 50, f"95th percentile of the tick gaps {np.percentile(g, 95):.0f} ms (max {g.max()} ms)"
    assert g.max() < 250, f"the event loop was blocked {g.max()} ms"


def test_a_contact_runs_thread_computes_nothing_while_the_window_shows_its_batch(window, qtbot, monkeypatch):
    """The event loop's long gaps during a contact run were the GUI thread's work on a batch (taking its frames, the 3D
    view, the readouts, the window's composition) done while the run's thread computed on: the GUI thread waited for
    the interpreter lock behind the run's Python at every switch interval, and the two shared the CPUs (2 cores: 80-140
    ms per batch, up to 300 ms). After sending a batch the run's thread waits until the window has painted it: no
    frame is computed between a batch's sending and the end of the window's paint that shows it."""
    import app.playback.player as player_mod
    import app.playback.worker as worker_mod
    from app.playback.recording import FrameBatch
    from PySide6.QtCore import QEvent, QObject

    # (the thread's bound and the release without a paint out of the way: a loaded machine's paint may come later)
    monkeypatch.setattr(worker_mod, "GUI_TURN_SECONDS", 30.0)
    monkeypatch.setattr(player_mod, "SHOWN_FALLBACK_MS", 30000)
    computed = []  # perf_counter when each frame was computed (the run's thread)
    real_open = worker_mod.open_run

    class Timed:
        def __init__(self, run):
            self._run = run

        def __getattr__(self, name):
            return getattr(self._run, name)

        def __iter__(self):
            for f in self._run:
                computed.append(time.perf_counter())
                yield f

    monkeypatch.setattr(worker_mod, "open_run", lambda *a, **k: Timed(real_open(*a, **k)))
    sent, shown = {}, {}  # batch number -> perf_counter: made (in the run's thread, before it is sent), shown

    class Shown(threading.Event):
        def set(self):
            shown.setdefault(self.key, time.perf_counter())
            super().set()

    real_init = FrameBatch.__init__

    def init(self, *a, **k):
        real_init(self, *a, **k)
        self.shown = Shown()
        self.shown.key = len(sent)
        sent[len(sent)] = time.perf_counter()

    monkeypatch.setattr(FrameBatch, "__init__", init)
    win = window(long_pile())
    pb = win.playback

    class Paints(QObject):  # when the window's paints (its UpdateRequest events) began
        def __init__(self):
            super().__init__()
            self.began = []

        def eventFilter(self, obj, ev):  # noqa: N802 - Qt API
            if ev.type() == QEvent.UpdateRequest:
                self.began.append(time.perf_counter())
            return False

    paints = Paints()
    win.installEventFilter(paints)
    win.action_set.run.trigger()
    qtbot.waitUntil(lambda: len(shown) >= 4, timeout=60000)
    pb.stop()
    qtbot.waitUntil(lambda: not pb.worker.running(), timeout=10000)
    win.removeEventFilter(paints)
    waits = [(sent[k], shown[k]) for k in sorted(shown, key=shown.get) if k in sent]
    assert len(waits) >= 4
    for t_sent, t_shown in waits:
        # the window painted between the batch's sending and its release (released after that paint, by a queued call)
        assert any(t_sent < t < t_shown for t in paints.began), (t_sent, t_shown)
        assert not any(t_sent < t < t_shown for t in computed), "a frame was computed while the batch was shown"
    assert len(computed) > len(waits)  # (frames were computed between the batches)


def test_edits_mark_a_long_run_stale_and_rerun_a_short_one(window, qtbot):
    # the pile for 20 s (2,000 steps) so that the run is still going when the edit comes: the file's 1 s of this pile
    # takes about half a second (a short run, which re-runs by itself)
    win = window(long_pile())
    pb = win.playback
    win.action_set.run.trigger()
    qtbot.waitUntil(lambda: pb.recording.count >= 2, timeout=60000)
    token = pb.worker.token
    assert win.editor.update_body("ball1", density=800.0) is None
    assert pb.recording.stale and pb.recording.count >= 2  # kept, marked
    assert "stale" in win.motion.status_label.text() and pb.status_kind == "stale"
    assert "stale" in win.plots.q_plot.titleLabel.text
    assert pb.worker.token == token  # the run goes on
    pb.stop()
    qtbot.waitUntil(lambda: pb.recording.complete and not pb.worker.running(), timeout=10000)
    assert pb.recording.stale and "stale" in win.motion.status_label.text()
    win.action_set.run.trigger()  # a new run of the edited document
    qtbot.waitUntil(lambda: pb.recording.count >= 1, timeout=60000)
    assert not pb.recording.stale and "stale" not in win.plots.q_plot.titleLabel.text
    pb.stop()
    qtbot.waitUntil(lambda: not pb.worker.running(), timeout=10000)
    # a short run (the sphere drop, about 0.2 s of work) re-runs by itself after an edit
    win.document.replace(io.load(EXAMPLES / "contact_sphere_drop.json"))
    finished(win)
    assert pb.auto_runs()
    token = pb.worker.token
    assert win.editor.update_body("ball", mass=2.0) is None
    qtbot.waitUntil(lambda: pb.worker.token == token + 1, timeout=3000)
    finished(win)
    assert pb.recording.ok and not pb.recording.stale and pb.recording.count == 101


def test_undoing_the_edit_that_made_a_run_stale_makes_it_current_again(window, qtbot):
    """Run, Stop, edit (stale), undo: the document is again the one the frames were computed for, so they are not
    stale and the status line says what the run's end said; redo makes them stale again."""
    win = window(long_pile())  # (a long run: edits mark it stale instead of re-running, as above)
    pb = win.playback
    win.action_set.run.trigger()
    qtbot.waitUntil(lambda: pb.recording.count >= 2, timeout=60000)
    pb.stop()
    qtbot.waitUntil(lambda: pb.recording.complete and not pb.worker.running(), timeout=10000)
    after_run = (pb.status, pb.status_kind)
    assert after_run[1] == "stopped" and "stopped by the user" in after_run[0]
    assert win.editor.update_body("ball1", density=800.0) is None
    assert pb.recording.stale and pb.status_kind == "stale"
    win.document.undo_stack.undo()
    assert not pb.recording.stale and (pb.status, pb.status_kind) == after_run
    assert "stale" not in win.plots.q_plot.titleLabel.text and "stale" not in win.motion.status_label.text()
    win.document.undo_stack.redo()
    assert pb.recording.stale and pb.status_kind == "stale"


@pytest.mark.parametrize("failing, t_from, code, said", [
    (("implicit",), 0.5, 1, " · 50 step(s) by the explicit method"),
    (("implicit", "explicit"), 0.9, 2, " · 10 step(s) by the relaxed problem")])
def test_steps_the_fallbacks_took_are_counted_in_the_status_line_and_plotted(window, monkeypatch, failing, t_from,
                                                                              code, said):
    # every Newton attempt of the `failing` methods from t_from on fails (as in a frictional jam): the explicit
    # method's step takes those steps (core.contact.stepper._explicit_fallback; code 1) or, both failing, their relaxed
    # problem's solution (_relaxed_step; code 2); the run completes, and the status line, its tooltip and the plot of
    # the solver's fallback column say so
    import core.contact.stepper as stp

    real = stp._step_once

    def attempt(model_, state, h, method, *args, **kw):
        if method in failing and state.t >= t_from - 1e-9:
            return stp.StepResult(state, False, 1, 1e-5, "MCP solver: stalled (residual 1e-05)", pairs=1)
        return real(model_, state, h, method, *args, **kw)

    monkeypatch.setattr(stp, "_step_once", attempt)
    win = window("contact_sphere_drop")
    finished(win)
    rec = win.playback.recording
    assert rec.ok and rec.count == 101
    taken = rec.series("solver")[:, 3]
    first = round(t_from / 0.01) + 1  # the first step failed: the one ending at t_from + dt
    assert taken[:first].sum() == 0 and taken[first:].tolist() == [float(code)] * (101 - first)
    label = win.motion.status_label
    assert label.text().endswith(said)
    assert ("a contact that slides ends it slightly apart" in label.toolTip()) == (code == 2)
    assert ("explicit" in label.text()) == (code == 1)
    win.plots.set_mode("solver fallback")
    np.testing.assert_array_equal(win.plots.joint_series()[:, 0], taken)


def test_a_jam_is_named_in_the_status_line_with_the_solvers_reason_in_its_tooltip(window):
    # user test s53 (G3): the cam follower with its guide turned horizontal, the cam pushing up on a body that cannot
    # move up: the run stops at its first step; the status line said "stopped at t = 0.00 s: step did not converge
    # even when halved", now what jams what (core.contact.jam), the rest of the reason in its tooltip
    mech = io.load(EXAMPLES / "contact_cam_follower.json")
    guide = next(j for j in mech.joints if j.name == "guide")
    mech.joints[mech.joints.index(guide)] = __import__("dataclasses").replace(guide, axis=(1.0, 0.0, 0.0))
    win = window(mech)
    finished(win)
    pb = win.playback
    assert pb.status_kind == "stopped"
    assert win.motion.status_label.text() == ("stopped at t = 0.00 s: a jam: the driven 'cam' presses 'follower' "
                                              "against joint 'guide'")
    assert pb.status_tip.startswith("stopped at t = 0 s: a jam: the driven 'cam' presses 'follower' against joint "
                                    "'guide' (no motion of the bodies moved by forces makes way for the drivers")
    assert "the step has no solution (step did not converge" in pb.status_tip


def test_comparison_runs_the_explicit_method_as_ghosts_and_dashed_curves(window, qtbot):
    win = window("contact_sphere_drop")
    finished(win)
    pb, plots = win.playback, win.plots
    plots.set_mode("gap")
    # the legend names the curves drawn: no comparison entry while there is no comparison run
    assert plots.legend_names() == ["ball/floor"]
    win.motion.compare_box.setChecked(True)
    assert pb.compare and win.action_set.compare.isChecked()
    qtbot.waitUntil(lambda: pb.ghost.complete and pb.ghost.count == 101, timeout=60000)
    qtbot.waitUntil(lambda: not pb.ghost_worker.running(), timeout=5000)
    ref = simulate(win.document.mechanism, method="explicit")
    qtbot.waitUntil(lambda: plots.legend_names() == ["ball/floor", "ball/floor (explicit)"], timeout=5000)
    assert any(c.name() == "ball/floor (explicit)" for c in plots.ghost_curves)
    for k in (10, 40, 100):
        win.motion.slider.setValue(k)
        np.testing.assert_allclose(win.viewport.ghost_poses()["ball"], pose(ref.position[k, 0], ref.orientation[k, 0]),
                                   atol=1e-12)
        assert plots.value_at_cursor("ball/floor", ghost=True) == pytest.approx(ref.gap[k, 0], abs=1e-15)
    plots.set_series_visible("ball/floor", False)  # an unticked series leaves the legend with its comparison
    assert plots.legend_names() == [] and not plots.q_legend.isVisible()
    plots.set_series_visible("ball/floor", True)
    assert plots.legend_names() == ["ball/floor", "ball/floor (explicit)"]
    win.action_set.compare.trigger()  # off again
    assert not pb.compare and win.viewport.ghost_poses() == {} and pb.ghost.count == 0
    assert plots.legend_names() == ["ball/floor"]


def test_an_exception_in_a_run_is_a_dialog_and_the_app_stays_usable(window, qtbot, dialogs, monkeypatch, caplog):
    from core.contact import recording as recording_module

    real = recording_module.ContactRun._frame

    def broken(self, k, st, res):
        if k == 5:
            raise RuntimeError("a bug in the frame")
        return real(self, k, st, res)

    monkeypatch.setattr(recording_module.ContactRun, "_frame", broken)
    win = window("contact_sphere_drop")
    pb = win.playback
    qtbot.waitUntil(lambda: "critical" in dialogs.kinds(), timeout=60000)
    assert "a bug in the frame" in dialogs.calls[-1][2]
    logged = [r for r in caplog.records if r.name == "app.playback.worker" and r.levelname == "ERROR"]
    assert logged and "after 5 frames" in logged[0].getMessage() and "a bug in the frame" in logged[0].exc_text
    qtbot.waitUntil(lambda: not pb.worker.running(), timeout=5000)
    assert pb.recording.count == 5 and pb.recording.complete and not pb.recording.ok  # the frames before it stay
    assert pb.status_kind == "error"
    monkeypatch.setattr(recording_module.ContactRun, "_frame", real)
    win.action_set.run.trigger()
    finished(win)
    assert pb.recording.ok and pb.recording.count == 101


def test_plot_exports_read_back(window, tmp_path):
    win = window("contact_sphere_drop")
    finished(win)
    plots = win.plots
    plots.set_mode("normal force")
    ref = simulate(win.document.mechanism)
    out = tmp_path / "series.csv"
    plots.export_csv(str(out))
    rows = list(csv.reader(open(out)))
    assert rows[0] == ["t [s]", "normal force: ball/floor [N]"] and len(rows) == 102
    np.testing.assert_allclose(np.array(rows[1:], float), np.column_stack((ref.t, ref.pn[:, 0] / ref.dt)), atol=1e-12)
    plots.export_image(str(tmp_path / "plot.png"))
    img = QImage(str(tmp_path / "plot.png"))
    assert not img.isNull() and img.width() >= 800
    plots.export_image(str(tmp_path / "plot.svg"))
    root = ET.parse(tmp_path / "plot.svg").getroot()
    assert root.tag.endswith("svg") and len(list(root.iter())) > 10


def test_plot_csv_of_a_comparison_leaves_the_times_without_its_frame_empty(window, qtbot, tmp_path):
    """CSV... with a comparison run that has fewer frames (stopped early): the comparison's column is empty where
    it has no frame at the row's time, never 'nan'; the file is written whole or not at all."""
    win = window("contact_sphere_drop")
    finished(win)
    pb, plots = win.playback, win.plots
    plots.set_mode("gap")
    win.motion.compare_box.setChecked(True)
    qtbot.waitUntil(lambda: pb.ghost.complete and pb.ghost.count == 101, timeout=60000)
    qtbot.waitUntil(lambda: not pb.ghost_worker.running(), timeout=5000)
    ref = simulate(win.document.mechanism, method="explicit")
    pb.ghost.count = 40  # what a comparison run stopped after 40 frames holds
    out = tmp_path / "series.csv"
    plots.export_csv(str(out))
    text = out.read_text()
    assert "nan" not in text
    rows = list(csv.reader(text.splitlines()))
    assert rows[0] == ["t [s]", "gap: ball/floor [m]", "gap: ball/floor (explicit) [m]"] and len(rows) == 102
    np.testing.assert_allclose([float(r[2]) for r in rows[1:41]], ref.gap[:40, 0], atol=1e-15)
    assert all(r[2] == "" and r[1] != "" for r in rows[41:])
    # a folder that is not there: the located reason, and no file
    with pytest.raises(LinkwrightError, match="cannot write"):
        plots.export_csv(str(tmp_path / "no" / "series.csv"))


def test_dragging_the_plot_cursor_seeks(window):
    win = window("contact_sphere_drop")
    finished(win)
    line = win.plots.cursor_line
    line.setValue(0.423)
    line.sigDragged.emit(line)  # what a mouse drag of the line does
    rec = win.playback.recording
    assert rec.cursor == 42 and win.motion.slider.value() == 42  # the last frame at or before t = 0.423 s


def test_new_document_leaves_nothing_of_the_contact_run(window, qtbot):
    win = window("contact_sphere_drop")
    finished(win)
    win.document.replace(Mechanism())  # File ▸ New
    qtbot.waitUntil(lambda: "nothing to move" in win.motion.status_label.text(), timeout=5000)
    plots = win.plots
    assert not plots.q_legend.isVisible() and plots.cursor_time() is None
    assert all(len(c.getOriginalDataset()[0] if c.getOriginalDataset()[0] is not None else []) == 0
               for c in plots.q_curves)
    assert win.viewport.trails() == {} and len(win.viewport.contact_arrows()[0]) == 0
    # nor its quantities, series, axis text, point traces or progress
    assert plots.modes() == [] and plots.series_list.count() == 0 and plots.q_curves == plots.ghost_curves == []
    assert plots.q_plot.getAxis("left").labelText == "" and plots.q_plot.titleLabel.text == ""
    assert plots.xy_widget.isHidden()
    assert win.motion.progress_bar.value() == 0 and win.motion.progress_bar.format() == ""
    assert threading.active_count() >= 1


def test_clicking_the_time_plot_seeks(window, qtbot):
    from PySide6.QtCore import QPointF, Qt

    win = window("contact_sphere_drop")
    finished(win)
    plots = win.plots
    win.dock_plots.raise_()  # the Plots tab in front, as the user has it when clicking
    qtbot.waitUntil(lambda: plots.q_widget.isVisible(), timeout=3000)
    qtbot.wait(50)
    vb = plots.q_plot.getViewBox()
    y = sum(vb.viewRange()[1]) / 2
    scene_pos = vb.mapViewToScene(QPointF(0.655, y))
    pos = plots.q_widget.mapFromScene(scene_pos)
    qtbot.mouseClick(plots.q_widget.viewport(), Qt.LeftButton, pos=pos)
    rec = win.playback.recording
    # the click lands within a pixel of t = 0.655 s: the frame at or before it is 65 (t = 0.65 s), give or take one
    qtbot.waitUntil(lambda: rec.cursor in (64, 65, 66), timeout=3000)
    assert plots.cursor_time() == pytest.approx(rec.times[rec.cursor])


def test_pairs_never_in_contact_range_are_left_out_of_the_plot_until_ticked(window, qtbot):
    win = window(long_pile())
    pb, plots = win.playback, win.plots
    win.action_set.run.trigger()
    qtbot.waitUntil(lambda: pb.recording.count >= 12, timeout=60000)
    pb.stop()
    qtbot.waitUntil(lambda: pb.recording.complete and not pb.worker.running(), timeout=10000)
    plots.set_mode("normal force")
    rec = pb.recording
    pairs = list(rec.channels["pair.active"].labels)
    ever = rec.ever_in_range()  # (the recording holds the pairs that came into range: their columns)
    assert sorted(rec.columns[rec.series("pair.active").astype(bool).any(axis=0)]) == np.flatnonzero(ever).tolist()
    assert 0 < ever.sum() < len(pairs)  # some pairs touch (bodies on the floor), others never come close
    assert plots.visible_series() == [p for p, e in zip(pairs, ever) if e]
    never = pairs[int(np.flatnonzero(~ever)[0])]
    plots.set_series_visible(never, True)  # the user ticks it: shown (all zero)
    assert never in plots.visible_series()
    i = [c.name() for c in plots.q_curves].index(never) if len(pairs) <= 16 else pairs.index(never)
    assert plots.q_curves[i].isVisible()
    np.testing.assert_array_equal(plots.q_curves[i].getOriginalDataset()[1], np.zeros(rec.count))


def test_the_y_axis_writes_the_unit_with_the_scale_of_the_values(window, qtbot):
    win = window("contact_sphere_drop")
    finished(win)
    win.dock_plots.raise_()  # the Plots tab in front (it autoranges when shown)
    ax = win.plots.q_plot.getAxis("left")
    win.plots.set_mode("gap")
    # the ball's gap falls from 0.5 - 0.1 = 0.4 m to 0: pyqtgraph writes the ticks in mm and says so in the label
    qtbot.waitUntil(lambda: ax.autoSIPrefixScale == pytest.approx(1e3), timeout=5000)
    assert ax.labelString().endswith(">gap (mm)</span>") and "x1e" not in ax.labelString()
    assert win.plots.q_plot.titleLabel.text == "gap (negative: penetration)"
    win.plots.set_mode("normal force")  # the ball's weight, 9.81 N at rest: no prefix
    qtbot.waitUntil(lambda: ax.autoSIPrefixScale == 1.0, timeout=5000)
    assert "normal force (N)" in ax.labelString()
    # the time axis writes seconds whatever the run's length (its label says so): not 0-1000 "t [s] (x0.001)"
    t_ax = win.plots.q_plot.getAxis("bottom")
    assert t_ax.autoSIPrefixScale == 1.0 and "x0.001" not in t_ax.labelString() and "t [s]" in t_ax.labelString()


def test_a_point_moving_along_one_line_fills_its_trace_view(window):
    # the cam-jump follower's face point moves along z only (its x and y stay put): its trace is a segment, and the
    # trace view must frame it (its length a good part of the view's height), not show a dot on axes a metre wide
    # (with the two axes at equal scales the view was as wide as the plot in metres)
    win = window("contact_cam_jump")
    finished(win)
    plots = win.plots
    rec = win.playback.recording
    P = rec.points[: rec.count, 0]
    i0, i1 = plots._plane
    length = float(np.ptp(P[:, i1]))
    assert length > 1e-3 and float(np.ptp(P[:, i0])) < 1e-9 * length + 1e-12  # (a segment along the second axis)
    plots.xy_widget.resize(400, 300)  # (a plot of a usual size: the test window leaves the docks small)
    plots.xy_widget.grab()  # (a paint: the view applies its automatic range when it is drawn)
    (_x0, _x1), (y0, y1) = plots.xy_plot.getViewBox().viewRange()
    assert y0 <= P[:, i1].min() and P[:, i1].max() <= y1  # the whole segment is in view ...
    assert length >= 0.5 * (y1 - y0)  # ... and fills at least half of its height
    assert not plots.xy_plot.getViewBox().state["aspectLocked"]  # (a coupler curve keeps equal scales: test_plots)


def test_trails_follow_the_bodies_moved_by_forces_not_the_driven_links(window):
    """contact_parts_feeder: the box, moved by forces, has a trail; the driven crank and rocker, drawn without a
    shape or a mass, have no centre of mass but their frames' origins, whose arcs ran off the view: no trail."""
    win = window("contact_parts_feeder")
    finished(win)
    rec = win.playback.recording
    win.motion.slider.setValue(rec.count - 1)
    header = rec.info["header"]
    moved = {n for n, m in zip(header["body_names"], header["mass"]) if m > 0}
    assert moved == {"box"} and {"crank", "rocker", "coupler"} <= set(header["body_names"])
    trails = win.viewport.trails()
    assert set(trails) == moved | set(rec.point_names)  # (and the named points': the coupler's edge)
    np.testing.assert_allclose(trails["box"][-1], rec.values["body.com"][rec.count - 1,
                                                                         header["body_names"].index("box")])


def test_a_links_trail_is_the_path_of_its_centre_of_mass(window):
    """contact_fourbar_swing's links have their frames at the world origin, far from their mass: the 3D view's
    trail of the crank is the path of its centre of mass, which turns about the fixed joint A and so stays at its
    design distance from A (|(0.025, 0, 0.5433) - (0, 0, 0.5)| = 0.05 m), not its origin's arc 0.5 m away."""
    win = window("contact_fourbar_swing")  # (3 s of work: it waits for Run)
    win.playback.run()
    finished(win)
    rec = win.playback.recording
    assert rec.count > 50
    win.motion.slider.setValue(rec.count - 1)
    trail = win.viewport.trails()["crank"]
    A = np.array([0.0, 0.0, 0.5])
    r = np.linalg.norm(np.array([0.025, 0.0, 0.5433]) - A)
    assert len(trail) == rec.count
    np.testing.assert_allclose(np.linalg.norm(trail - A, axis=1), r, atol=1e-7)
    assert np.ptp(trail[:, 2]) > 0.01  # it swings


def test_end_steps_and_method_follow_the_documents_simulation_edits(window, qtbot):
    """A contact run's End is the document's duration and Steps End/dt: editing dt, duration or method in the
    Document properties (or undoing it) shows the values the next run uses, not the ones of the file as opened."""
    win = window("contact_sphere_drop")  # 1 s in steps of 0.01 s, implicit
    pb, motion = win.playback, win.motion
    finished(win)
    assert (motion.end_box.value(), motion.steps_box.value()) == (1.0, 100)
    doc = win.document
    assert win.editor.set_simulation(duration=0.5) is None
    assert pb.contact_end() == 0.5 and (motion.end_box.value(), motion.steps_box.value()) == (0.5, 50)
    assert win.editor.set_simulation(dt=0.02) is None
    assert (motion.end_box.value(), motion.steps_box.value()) == (0.5, 25)
    assert win.editor.set_simulation(method="explicit") is None
    assert motion.method_combo.currentText() == "explicit" == pb.document_method()
    finished(win)
    assert pb.recording.count == 26  # the run the boxes describe: 0.5 s in 25 steps
    for _ in range(3):
        doc.undo_stack.undo()
    assert (motion.end_box.value(), motion.steps_box.value()) == (1.0, 100)
    assert motion.method_combo.currentText() == "implicit"
    finished(win)


def test_the_run_line_names_the_method_of_the_document_or_the_one_chosen_in_the_dock(make_window, qtbot):
    """The Motion dock said "(geometrically implicit time-stepper)" for a document whose simulation.method is
    explicit, and after the dock's Method chose explicit; it names the method that runs (the dock's choice, else the
    document's)."""
    d = io.to_dict(io.load(EXAMPLES / "contact_sphere_drop.json"))
    d["simulation"]["method"] = "explicit"
    win = make_window(io.from_dict(d))
    win.qtbot = qtbot
    pb, m = win.playback, win.motion
    implicit, explicit = "(geometrically implicit time-stepper)", "(explicit time-stepper: linearised gap, for comparison)"
    assert m.kind_label.text() == f"Run: contact dynamics: 1 free body with mass {explicit}"
    finished(win)
    assert pb.recording.info["method"] == "explicit" and m.method_combo.currentText() == "explicit"
    m.method_combo.setCurrentText("implicit")  # the user chooses the other method in the dock
    m.method_combo.activated.emit(m.method_combo.currentIndex())
    assert m.kind_label.text().endswith(implicit) and pb.document_method() == "implicit"
    finished(win)
    assert pb.recording.info["method"] == "implicit"  # (the run the line names)
    assert win.editor.set_simulation(duration=0.5) is None  # an edit keeps the dock's choice, and the line
    assert m.kind_label.text().endswith(implicit)
    finished(win)
    win.document.replace(io.from_dict(d))  # another document: its own method again
    assert m.kind_label.text().endswith(explicit) and m.method_combo.currentText() == "explicit"
    finished(win)


def test_stop_is_greyed_out_when_a_burst_of_edits_ends_on_a_run_that_waits_for_run(window, qtbot):
    """An edit that makes a long contact run short starts a re-run after the debounce (Stop enabled); undoing it
    within the debounce makes the run a long one that waits for Run: nothing runs, so Stop is greyed out again."""
    win = window(long_pile())
    pb = win.playback
    assert not pb.auto_runs() and not win.action_set.stop.isEnabled()
    assert win.editor.set_simulation(duration=0.02) is None  # 2 steps: re-runs by itself after the debounce
    assert pb.auto_runs() and win.action_set.stop.isEnabled()
    win.document.undo_stack.undo()  # back to 1 s, before the debounce fired
    assert not pb.auto_runs() and not pb.is_running()
    assert not win.action_set.stop.isEnabled() and not win.motion.stop_button.isEnabled()
    qtbot.wait(400)  # past the debounce: no run started behind the greyed-out Stop
    assert not pb.worker.running() and pb.recording.count == 0 and not win.action_set.stop.isEnabled()


def test_a_contact_run_that_waits_for_run_shows_no_progress_of_an_earlier_run(window, qtbot):
    """Opening a long contact scene after a run (it waits for Run) leaves the progress bar empty, not full with the
    previous document's 't = 1.000 / 1.000 s'; so does an edit burst that drops the frames and waits for Run."""
    win = window("contact_sphere_drop")
    pb, bar = win.playback, win.motion.progress_bar
    finished(win)
    assert bar.value() == 100 and bar.format() == "t = 1.000 / 1.000 s"
    win.document.replace(long_pile())
    assert pb.status_kind == "stale" and pb.recording.count == 0
    assert bar.value() == 0 and bar.format() == "" and pb.progress == (0.0, "")
    assert win.editor.set_simulation(duration=0.02) is None  # short: re-runs by itself
    finished(win)
    assert bar.value() == 100 and bar.format() == "t = 0.020 / 0.020 s"
    assert win.editor.set_simulation(duration=0.04) is None  # drops the frames, re-runs after the debounce ...
    # ... but the burst ends on a long run, which waits for Run (long by this document's measured step time: back
    # at the file's 1 s, a fast 2-step run made the 100 steps expected under AUTO_RUN_SECONDS, and they re-ran)
    assert win.editor.set_simulation(duration=1000.0) is None
    assert not pb.auto_runs()
    assert pb.recording.count == 0 and pb.status_kind == "stale"
    assert bar.value() == 0 and bar.format() == ""


def test_a_refused_run_shows_no_progress_of_an_earlier_run(window, qtbot):
    """Opening a document whose run is refused (a ball buried in the floor: a located error) after a finished run
    left the progress bar full with the previous document's 't = 1.000 / 1.000 s' next to the red error; a refused
    run has no progress. So does a run of the same document refused after an edit."""
    win = window("contact_sphere_drop")
    pb, bar = win.playback, win.motion.progress_bar
    finished(win)
    assert bar.value() == 100 and bar.format() == "t = 1.000 / 1.000 s"
    d = io.to_dict(win.document.mechanism)
    d["bodies"][1]["pose"]["position"] = [0, 0, -0.5]  # buried in the floor
    win.document.replace(io.from_dict(d))
    qtbot.waitUntil(lambda: pb.status_kind == "error" and not pb.is_running(), timeout=20000)
    assert win.motion.status_label.text().startswith("bodies[1].pose.position: ") and pb.recording.count == 0
    assert bar.value() == 0 and bar.format() == "" and pb.progress == (0.0, "")
    win.document.replace(io.load(EXAMPLES / "contact_sphere_drop.json"))
    finished(win)
    assert bar.value() == 100
    # End 100 s, then dt 1e-6 s: 1e8 steps, and Run is refused (an End of too many steps set directly is refused by
    # the dock itself, test_minor_gui_fixes.test_an_end_not_typed_is_refused_as_a_typed_one)
    win.motion.end_box.setValue(100.0)
    assert pb.contact_end() == 100.0
    pb.stop()
    qtbot.waitUntil(lambda: not pb.is_running(), timeout=20000)
    assert win.editor.set_simulation(dt=1e-6) is None
    pb.run()
    qtbot.waitUntil(lambda: pb.status_kind == "error" and not pb.is_running(), timeout=20000)
    assert win.motion.status_label.text().startswith("End: ") and pb.recording.count == 0
    assert bar.value() == 0 and bar.format() == ""


def test_a_shaped_body_without_mass_is_named_when_nothing_else_moves(window, qtbot):
    """The sphere drop with its ball's mass forgotten has nothing to move; the status line said only that, where the
    same body beside one with mass is named. It is named, by the same check."""
    d = io.to_dict(io.load(EXAMPLES / "contact_sphere_drop.json"))
    del d["bodies"][1]["mass"]
    win = window(io.from_dict(d))
    pb = win.playback
    message = "bodies[1]: body 'ball' has a shape but neither mass nor density (or mark it ground)"
    qtbot.waitUntil(lambda: pb.status_kind == "error", timeout=5000)
    assert pb.kind == "" and win.motion.status_label.text() == message and pb.recording.count == 0
    assert win.motion.kind_label.text().startswith("Run: nothing to move")
    d["bodies"].insert(1, {"name": "heavy", "mass": 1.0, "shape": {"type": "sphere", "radius": 0.1},
                           "pose": {"position": [1, 0, 0.5]}})  # beside a body with mass: the run refuses it
    win.document.replace(io.from_dict(d))
    qtbot.waitUntil(lambda: pb.status_kind == "error" and not pb.is_running(), timeout=20000)
    assert win.motion.status_label.text() == message.replace("bodies[1]", "bodies[2]")
    assert win.editor.update_body("ball", mass=1.0) is None  # given its mass: it runs
    finished(win)
    assert pb.recording.ok


def test_a_scene_reaching_beyond_2_21_m_from_the_origin_is_refused_on_the_status_line_located(window, qtbot):
    """Finding F9: a scene far from the origin ran for ever (its steps stalled on rounding). The Motion dock shows the
    contact run's refusal (core.contact.recording): a drum of radius 1e6 m and length 1e6 m at x = y = 1e6 m reaches
    1e6 + sqrt(1e6^2 + 5e5^2) = 2.118e6 m along x with its bounding sphere, beyond 2^21 m = 2,097,152 m, where doubles
    are 2^-31 = 4.66e-10 m apart (more than the step's resolution, 4.5e-10 m). 3 % nearer the origin it runs."""
    d = io.to_dict(io.load(EXAMPLES / "contact_sphere_drop.json"))
    d["simulation"]["duration"] = 0.05
    d["bodies"].append({"name": "drum", "mass": 1e3, "shape": {"type": "cylinder", "radius": 1e6, "length": 1e6},
                        "pose": {"position": [1e6, 1e6, 5e5]}})
    win = window(io.from_dict(d))
    pb = win.playback
    qtbot.waitUntil(lambda: pb.status_kind == "error" and not pb.is_running(), timeout=20000)
    text = win.motion.status_label.text()
    assert text.startswith("bodies[2].pose.position: 'drum' reaches 2.12e+06 m from the origin along x (its centre of "
                           "mass at x = 1e+06 m, its bounding radius 1.12e+06 m): there doubles are 4.7e-10 m apart"), text
    assert text.endswith("move the scene nearer the origin") and pb.recording.count == 0
    d["bodies"][2]["pose"]["position"] = [0.97e6, 0.97e6, 5e5]  # reaches 2.088e6 m
    win.document.replace(io.from_dict(d))
    finished(win)
    assert pb.recording.ok and pb.recording.count == 6


def test_opening_a_long_contact_scene_during_a_run_or_an_edits_debounce_waits_for_run(window, qtbot):
    """A long contact scene opened while the previous document's run is under way waits for Run with Stop greyed
    out (it stayed enabled with nothing running), and one opened within the debounce of an edit of the previous
    document is not started by that edit's re-run (the pile ran without Run)."""
    win = window("jansen")
    pb = win.playback
    pb.set_range(1.0, 200000)  # a long kinematics run
    qtbot.waitUntil(lambda: pb.worker.running() and pb.recording.count > 0, timeout=10000)
    assert win.action_set.stop.isEnabled()
    win.document.replace(long_pile())
    assert pb.status_kind == "stale" and not pb.is_running()
    assert not win.action_set.stop.isEnabled() and not win.motion.stop_button.isEnabled()
    win.document.replace(io.load(EXAMPLES / "fourbar.json"))
    pb.set_range(1.0, 100)  # (the dock's range is kept across documents)
    finished(win)
    pb.set_range(0.5, 100)  # an edit: re-runs after the debounce ...
    win.document.replace(long_pile())  # ... but another document is opened first
    qtbot.wait(400)  # past the debounce
    assert not pb.worker.running() and pb.recording.count == 0 and pb.status_kind == "stale"
    assert not win.action_set.stop.isEnabled()


def _sphere_drop_at_dt(window, qtbot, dt):
    """The sphere drop with simulation.dt = dt, its first run finished and no run going: (window, playback, dock)."""
    win = window("contact_sphere_drop")
    finished(win)
    pb = win.playback
    assert win.editor.set_simulation(dt=dt) is None
    pb.stop()
    qtbot.waitUntil(lambda: not pb.is_running(), timeout=20000)
    return win, pb, win.motion


def test_an_end_time_of_more_steps_than_a_box_holds_is_shown_and_its_run_refused(window, qtbot):
    """End 1e6 s at dt = 1e-6 s: 1e12 steps. The Motion dock put that count into its Steps box (a 32-bit int):
    OverflowError in the slot, which left the box and the method choice as they were; the box now shows its limit,
    and Run is refused with the reason, nothing started. (End 1e6 s is set at dt = 1 s, 1e6 steps, the limit: the dock
    refuses an End of more steps than that itself; dt is made 1e-6 s after it.)"""
    win, pb, m = _sphere_drop_at_dt(window, qtbot, 1.0)
    m.end_box.setValue(1e6)
    assert pb.contact_end() == 1e6 and m.end_box.value() == 1e6
    assert win.editor.set_simulation(dt=1e-6) is None
    assert m.steps_box.value() == m.steps_box.maximum() == 1_000_000 and m.steps_box.text() == "> 1000000"
    assert m.method_combo.currentText() == "implicit" and not pb.is_running()
    pb.run()  # refused in the run's thread, before any step
    qtbot.waitUntil(lambda: not pb.is_running(), timeout=20000)
    assert "1e+06 s in steps of 1e-06 s is 1e+12 steps; the limit is 1,000,000" in m.status_label.text()
    assert pb.recording.count == 0


def test_a_run_refused_for_its_end_time_names_the_end_box_not_a_command_line_option(window, qtbot):
    """The contact run's own check named `--t-end` (the command line's option); in the app the status line said
    '--t-end: 1000 s in steps of 0.0001 s ...', an option the app has not. The check names the document's
    simulation.duration, and the Motion dock, whose End gave the value, names its End. (End 1000 s is set at dt =
    0.01 s, 1e5 steps; the dock refuses an End of more steps than the limit itself; dt is made 1e-4 s after it.)"""
    win, pb, m = _sphere_drop_at_dt(window, qtbot, 0.01)
    m.end_box.setValue(1000.0)
    assert pb.contact_end() == 1000.0 and not pb.is_running()
    assert win.editor.set_simulation(dt=1e-4) is None
    pb.run()
    qtbot.waitUntil(lambda: not pb.is_running(), timeout=20000)
    status = m.status_label.text()
    assert status.startswith("End: 1000 s in steps of 0.0001 s is 1e+07 steps; the limit is 1,000,000"), status
    assert "--" not in status and "simulation.duration" not in status and pb.recording.count == 0


def test_a_count_of_the_geometry_before_an_edit_is_not_taken_for_the_new_one(window, qtbot, monkeypatch):
    """A long contact run analyses its geometry's mobility at its start, in its thread. If the geometry is edited
    before that count arrives, the run goes on (its frames are marked stale, no re-run) and the count that arrives is
    the old geometry's: it is dropped, not shown as the new one's."""
    import app.playback.worker as worker_mod

    real, armed, release, entered = worker_mod.rank_mobility, threading.Event(), threading.Event(), threading.Event()

    def held_rank_mobility(mech, cancel=None):  # once armed: the analysis of the run's snapshot, held until the edit
        if armed.is_set():  # has been made
            entered.set()
            release.wait(30.0)
        return real(mech, cancel=cancel)

    monkeypatch.setattr(worker_mod, "rank_mobility", held_rank_mobility)
    win = window("contact_pendulum_strike")
    pb = win.playback
    finished(win)  # (its one-second file run, analysed as it started)
    # long: after an edit it waits for Run instead of re-running (40,000 steps: over the auto-run rule's 2 s at any
    # cost per step its one-second run measured, 0.1 ms a step or more; 20 s ran by itself on a fast machine)
    pb.set_range(200.0, 1)
    assert not pb.auto_runs()
    x, y, z = win.document.mechanism.joint("pin").at
    assert win.editor.update_joint("pin", at=(x, y, z + 0.01)) is None  # a new geometry: its count is not known
    assert pb.mobility is None
    armed.set()
    win.action_set.run.trigger()
    assert entered.wait(30.0)  # the run's thread is analysing the geometry with the pin at z + 0.01
    assert win.editor.update_joint("pin", at=(x, y, z + 0.02)) is None  # edited before that count arrived
    assert pb.recording.stale or pb.recording.count == 0
    release.set()
    qtbot.waitUntil(lambda: pb.recording.count >= 2, timeout=60000)  # the old geometry's count has been delivered
    qtbot.wait(50)
    assert pb.mobility is None, "the count of the geometry before the edit was taken for the edited one"
    pb.stop()
    finished(win)


def test_a_runs_cost_per_step_is_timed_in_its_thread_even_when_the_gui_takes_its_signals_late(window, qtbot):
    """The auto-run rule's cost per step was the time between the GUI thread taking the run's began and ended signals.
    An event loop busy while a short run was computed took both in one pass: the run looked instantaneous, and a run
    of 40,000 steps of it then re-ran by itself at every edit (the fresh-clone CI, under load). It is timed in the
    run's thread: here the GUI thread waits for the whole run before taking any of its signals, and the cost per step
    is still the run's own (its thread's time from the began signal to the ended one, over its steps)."""
    from PySide6.QtCore import Qt

    win = window("contact_pendulum_strike")
    pb = win.playback
    finished(win)
    stamps = {}
    pb.worker.began.connect(lambda *_: stamps.setdefault("began", time.perf_counter()), Qt.DirectConnection)
    pb.worker.ended.connect(lambda *_: stamps.setdefault("ended", time.perf_counter()), Qt.DirectConnection)
    pb.run()
    for th in pb.worker.threads():  # the GUI thread takes no signal until the run has ended
        th.join(60.0)
    assert "ended" in stamps
    finished(win)
    frames = pb.recording.count
    assert frames > 100 and pb.recording.complete
    own = (stamps["ended"] - stamps["began"]) / (frames - 1)
    assert pb.seconds_per_step == pytest.approx(own, rel=0.25)


def test_the_progress_rate_counts_from_when_the_run_began_in_its_thread(window, qtbot):
    """The progress line's steps/s counted from when the GUI thread took the run's began signal: with the event loop
    busy for a second after Run, that signal and a second's frames arrived together and the rate read as if those
    frames had cost nothing (thousands of steps/s). It counts from the run's own start (RunInfo.started): the rate
    shown is the frames over the time since the run's thread began, within the signals' delivery."""
    import re

    from PySide6.QtCore import Qt

    win = window("contact_pendulum_strike")
    pb = win.playback
    finished(win)
    pb.set_range(200.0, 1)  # a long run: it is still going when the rate is read
    qtbot.waitUntil(lambda: not pb.is_running(), timeout=20000)
    began = {}
    pb.worker.began.connect(lambda *_: began.setdefault("t", time.perf_counter()), Qt.DirectConnection)
    texts = []
    pb.progressChanged.connect(lambda _f, text: texts.append((time.perf_counter(), pb.recording.count, text)))
    pb.run()
    time.sleep(1.5)  # the GUI thread busy: the run's signals wait in the queue
    qtbot.waitUntil(lambda: any("steps/s" in t for _, _, t in texts), timeout=30000)
    pb.stop()
    qtbot.waitUntil(lambda: not pb.is_running(), timeout=20000)
    at, count, text = next(x for x in texts if "steps/s" in x[2])
    shown = float(re.search(r"([0-9.]+) steps/s", text).group(1))
    own = (count - 1) / (at - began["t"])  # the rate since the run's thread began
    assert shown == pytest.approx(own, rel=0.2), text


def test_plot_csv_writes_a_computed_negative_zero_as_0(window, tmp_path):
    """The cam-jump's driver effort is -0.0 N m on frames where the follower is off the cam (a product of zeros with a
    negative factor); the plot export wrote '-0.0' there, as the command line's CSV did (core.io.number_text)."""
    win = window("contact_cam_jump")
    finished(win)
    plots = win.plots
    mode = next(m for m in plots.modes() if "effort" in m.lower())
    plots.set_mode(mode)
    assert np.any(np.signbit(plots.recording.series("driver.effort")) & (plots.recording.series("driver.effort") == 0))
    out = tmp_path / "effort.csv"
    plots.export_csv(str(out))
    text = out.read_text()
    assert "-0.0," not in text and not any(line.endswith("-0.0") for line in text.splitlines())
