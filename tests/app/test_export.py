"""Exports read back: the 3D view as PNG, animations as GIF (frame count) and MP4 (header, frames); the headless
`linkwright render` and `--screenshot --time` with their exit statuses; the shown time equals the core's frame."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import imageio.v2 as iio2
import imageio.v3 as iio3
import numpy as np
import pytest
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QMenu, QMessageBox, QPushButton

from core import io
from core.contact import simulate
from core.kinematics import TrajectoryRun, compile_model
from core.transforms import quat_to_matrix

from app.export import frame_times, image_to_array, screenshot_at
from tests.app.playback.test_contact_runs import assert_arrows_of_frame
from tests.terminal import follow_terminal, signal_when

pytestmark = pytest.mark.gui

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "resources" / "examples"


def _env() -> dict:
    env = dict(os.environ)
    env["QT_QPA_PLATFORM"] = "xcb"
    env["LIBGL_ALWAYS_SOFTWARE"] = "1"
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """`linkwright ARGS` in a fresh process (on the test's Xvfb display)."""
    return subprocess.run([sys.executable, "-m", "app", *map(str, args)], cwd=ROOT, env=_env(), capture_output=True,
                          text=True, timeout=300)


def stopping_fourbar(tmp_path) -> Path:
    """The four-bar with its rocker driven at -2 rad/s: the rocker reaches its limit, the motion stops at t = 0.34 s."""
    m = io.load(EXAMPLES / "fourbar.json")
    m.drivers = [dataclasses.replace(m.drivers[0], joint="D", value="-2*t")]
    path = tmp_path / "stops.json"
    io.save(m, path)
    return path


def wait_export(qtbot, win, start) -> tuple[bool, str]:
    """Start an animation export through the window's ExportController and wait for its end."""
    with qtbot.waitSignal(win.exports.done, timeout=120_000) as blocker:
        assert start()
    return tuple(blocker.args)


def test_png_export_is_the_viewport_at_its_size(make_window, dialogs, tmp_path):
    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    dialogs.save_path = str(tmp_path / "view")  # .png is added
    win.action_set.export_png.trigger()
    img = QImage(str(tmp_path / "view.png"))
    assert not img.isNull()
    dpr = win.viewport.view.devicePixelRatioF()
    assert (img.width(), img.height()) == (round(win.viewport.view.width() * dpr), round(win.viewport.view.height() * dpr))
    # not blank: the links are drawn over the background (flat shading: a few colours, but not one)
    from collections import Counter
    counts = Counter(img.pixel(x, y) for x in range(0, img.width(), 5) for y in range(0, img.height(), 5))
    assert len(counts) > 5 and counts.most_common(1)[0][1] < 0.95 * sum(counts.values())


def test_exported_images_leave_the_selection_out_and_the_window_keeps_it(make_window, dialogs, tmp_path):
    # an image for slides or docs shows the mechanism in its own colours: the user test's GIF drew the selected body
    # orange in every frame. The export with the coupler and joint B selected is the export with nothing selected, to
    # the pixel, and the window still shows the selection afterwards
    from app.viewport.widget import PALETTE

    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    dialogs.save_path = str(tmp_path / "plain.png")
    win.action_set.export_png.trigger()
    win.selection.set(bodies=["coupler"], joints=["B"])
    dialogs.save_path = str(tmp_path / "selected.png")
    win.action_set.export_png.trigger()
    plain, selected = (image_to_array(QImage(str(tmp_path / f"{n}.png"))) for n in ("plain", "selected"))
    assert np.array_equal(plain, selected)
    assert np.allclose(win.viewport.drawn_colour("body", "coupler"), PALETTE["selected"], atol=0.5 / 255)
    assert np.allclose(win.viewport.drawn_colour("joint", "B"), PALETTE["selected"], atol=0.5 / 255)


def test_a_refused_png_name_is_said_once(make_window, dialogs, tmp_path):
    # user test s53 (H8): "/x/v.jpg: '/x/v.jpg': the image is a PNG: ..." (the message's location was the path again)
    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    dialogs.save_path = str(tmp_path / "v.jpg")
    win.action_set.export_png.trigger()
    assert dialogs.calls[-1][0] == "critical"
    assert dialogs.calls[-1][2] == f"'{tmp_path / 'v.jpg'}': the image is a PNG: give the file a .png name"
    assert not (tmp_path / "v.jpg").exists()


def test_gif_export_of_a_driven_motion_has_one_frame_per_tick(make_window, dialogs, qtbot, tmp_path):
    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    win.exports.fps = 10
    out = tmp_path / "motion.gif"
    ok, msg = wait_export(qtbot, win, lambda: win.exports.export_animation(out))
    assert ok, msg
    frames = iio3.imread(out, index=None)
    # The Motion dock's range (t = 0 .. 1 s) at 10 frames per second: t = 0, 0.1, ..., 1.0.
    assert frames.shape[0] == len(frame_times(win.playback.t_end, 10)) == 11
    h, w = frames.shape[1:3]
    assert (w, h) == (win.viewport.view.width() // 2 * 2, win.viewport.view.height() // 2 * 2)
    assert not np.array_equal(frames[0], frames[3])  # the linkage moves
    assert win.exports.dialog is None  # the progress dialog is gone


def test_mp4_export_of_a_contact_scene_reads_back_with_its_header(make_window, qtbot, tmp_path):
    m = io.load(EXAMPLES / "contact_sphere_drop.json")
    m.set_simulation(duration=0.2)
    win = make_window(m)
    win.exports.fps = 20
    out = tmp_path / "drop.mp4"
    ok, msg = wait_export(qtbot, win, lambda: win.exports.export_animation(out))
    assert ok, msg
    reader = iio2.get_reader(out)
    meta = reader.get_meta_data()
    reader.close()
    assert meta["codec"] == "h264" and meta["fps"] == 20
    frames = iio3.imread(out, index=None, plugin="FFMPEG")
    assert frames.shape[0] == 5  # t = 0, 0.05, ..., 0.2 s
    assert meta["size"] == (frames.shape[2], frames.shape[1])


def test_cancelling_an_export_during_the_run_leaves_no_file_and_no_thread(make_window, qtbot, tmp_path):
    win = make_window(io.load(EXAMPLES / "contact_sphere_drop.json"))  # 1 s of contact steps: the run takes a while
    out = tmp_path / "drop.gif"
    with qtbot.waitSignal(win.exports.done, timeout=60_000) as blocker:
        assert win.exports.export_animation(out)
        assert win.exports.dialog is not None and win.exports.dialog.isVisible()
        win.exports.dialog.findChild(QPushButton).click()  # the dialog's Cancel button
    assert blocker.args == [False, "cancelled"]
    assert not out.exists() and win.exports.dialog is None
    # (the conftest fails the test if the run's thread were still alive)


def test_an_animation_to_a_folder_that_refuses_the_file_says_why_at_once(make_window, dialogs, qtbot, tmp_path):
    # user test s53 (H1): the GIF writer opens its file only when it closes, so a folder that refused it was found at
    # the end, where removing the part file raised out of the export: a traceback, the progress dialog never closed
    # and every later export did nothing (render hung). A path under a regular file refuses as a read-only folder does.
    (tmp_path / "notes.txt").write_text("x")
    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    assert not win.exports.export_animation(tmp_path / "notes.txt" / "a.gif")
    assert dialogs.kinds() == ["critical"]
    assert f"cannot write '{tmp_path / 'notes.txt' / 'a.gif'}': '{tmp_path / 'notes.txt'}' is not a folder" in dialogs.calls[0][2]
    assert not win.exports.busy and win.exports.dialog is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    win.exports.fps = 5
    ok, msg = wait_export(qtbot, win, lambda: win.exports.export_animation(tmp_path / "a.gif"))  # the next one works
    assert ok, msg


def test_an_animation_whose_file_cannot_be_finished_ends_with_the_reason(make_window, dialogs, qtbot, tmp_path,
                                                                         monkeypatch):
    # the folder refuses the finished file and the removal of the part file alike (as a read-only one does): the
    # export still ends, with the reason, and the next one starts
    import app.export as export_module

    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    win.exports.fps = 5

    def refused(*_a, **_k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(export_module.os, "replace", refused)
    monkeypatch.setattr(export_module.Path, "unlink", refused)
    ok, msg = wait_export(qtbot, win, lambda: win.exports.export_animation(tmp_path / "a.gif"))
    assert not ok and msg == f"cannot write '{tmp_path / 'a.gif'}': Permission denied"
    assert not win.exports.busy and win.exports.dialog is None and not (tmp_path / "a.gif").exists()


def test_render_to_a_folder_that_refuses_the_file_is_status_2_before_the_run(tmp_path):
    # user test s53 (H1): a traceback after the frames were rendered, then render hung until it was killed
    (tmp_path / "notes.txt").write_text("x")
    out = tmp_path / "notes.txt" / "a.gif"
    r = run_cli("render", EXAMPLES / "fourbar.json", "--out", out, "--t-end", "0.2")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1] == f"error: --out: cannot write '{out}': '{out.parent}' is not a folder"


def test_a_refused_animation_name_shows_a_dialog_and_writes_nothing(make_window, dialogs, tmp_path):
    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    assert not win.exports.export_animation(tmp_path / "motion.avi")
    assert dialogs.kinds() == ["critical"] and "unknown animation type" in dialogs.calls[0][2]
    assert not (tmp_path / "motion.avi").exists()


def test_screenshot_time_shows_the_cores_frame_in_the_viewport(make_window):
    win = make_window(io.load(EXAMPLES / "contact_sphere_drop.json"))
    reached, why = screenshot_at(win, 0.3)
    assert reached, why
    rec = simulate(io.load(EXAMPLES / "contact_sphere_drop.json"), t_end=0.3)  # the core's run, independently
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = quat_to_matrix(rec.orientation[-1, 0]), rec.position[-1, 0]
    assert np.allclose(win.viewport.body_poses()["ball"], T, atol=1e-12)
    assert T[2, 3] < 0.5 - 0.1  # it has fallen (from 0.5 m, for 0.3 s)

    win2 = make_window(io.load(EXAMPLES / "fourbar.json"))
    reached, why = screenshot_at(win2, 0.25)
    assert reached, why
    pb = win2.playback
    assert pb.recording.time_at() == pytest.approx(0.25, abs=1e-12)
    km = compile_model(io.load(EXAMPLES / "fourbar.json"))
    frame = list(TrajectoryRun(km, np.array([0.0, 0.25])))[-1]
    poses = win2.viewport.body_poses()
    for name, P in zip(km.body_names, frame.poses):
        assert np.allclose(poses[name], P, atol=1e-9), name


def test_render_writes_gif_and_mp4_and_reports_statuses(tmp_path):
    gif = tmp_path / "drop.gif"
    r = run_cli("render", EXAMPLES / "contact_sphere_drop.json", "--out", gif, "--t-end", "0.2", "--fps", "10")
    assert r.returncode == 0, r.stderr
    frames = iio3.imread(gif, index=None)
    # t = 0, 0.1, 0.2, each the 3D view of the 800x600 render window (its toolbar rows excluded)
    assert frames.shape[0] == 3 and frames.shape[2] == 800 and 500 < frames.shape[1] <= 600 and frames.shape[3] == 3
    # README states the frames' size as rendered (user test s55 K12: it said "an 800x600 3D view window" alone)
    import re

    stated = re.search(r"the frames (\d+) x (\d+) pixels", (ROOT / "README.md").read_text())
    assert stated and (int(stated[1]), int(stated[2])) == (frames.shape[2], frames.shape[1])
    mp4 = tmp_path / "linkage.mp4"
    r = run_cli("render", EXAMPLES / "fourbar.json", "--out", mp4, "--t-end", "0.5", "--fps", "8")
    assert r.returncode == 0, r.stderr
    reader = iio2.get_reader(mp4)
    meta = reader.get_meta_data()
    reader.close()
    assert meta["fps"] == 8 and meta["codec"] == "h264"
    assert iio3.imread(mp4, index=None, plugin="FFMPEG").shape[0] == 5  # floor(0.5 * 8) + 1

    stops = stopping_fourbar(tmp_path)
    r = run_cli("render", stops, "--out", tmp_path / "stops.gif", "--t-end", "1", "--fps", "10")
    # solved at t = 0, 0.1, ...: the rocker's dead position lies between 0.3 and 0.4 s (the limit is near 0.336 s),
    # located by the kinematics, and 0.3 s is the last frame
    assert r.returncode == 3 and "Traceback" not in r.stderr
    assert "stopped before 1 s (last frame t = 0.3 s): passed a singular position" in r.stderr
    assert "the motion ends near t = 0.3358" in r.stderr
    assert iio3.imread(tmp_path / "stops.gif", index=None).shape[0] == 4  # the frames up to the stop: t = 0 .. 0.3


def test_the_last_frame_is_at_the_end_time_asked_for(tmp_path):
    """`render --t-end 0.5 --fps 1` gave one frame, t = 0, and `--t-end 0.37` at 25 fps ended at 0.36 s: the end time
    is the last frame also when it falls between two (k / fps for the others, as before)."""
    assert frame_times(0.5, 1).tolist() == [0.0, 0.5]
    t = frame_times(0.37, 25)
    assert len(t) == 11 and t[-1] == 0.37 and np.allclose(t[:-1], np.arange(10) / 25)
    assert frame_times(1.0, 3).tolist() == [0.0, 1 / 3, 2 / 3, 1.0]  # (a multiple: no extra frame)
    assert len(frame_times(0.2, 10)) == 3 and len(frame_times(0.3, 10)) == 4

    f = EXAMPLES / "contact_sphere_drop.json"
    one, two = tmp_path / "fps1.gif", tmp_path / "fps2.gif"
    for out, fps in ((one, "1"), (two, "2")):
        r = run_cli("render", f, "--out", out, "--t-end", "0.5", "--fps", fps)
        assert r.returncode == 0, r.stderr
    a, b = iio3.imread(one, index=None).astype(float), iio3.imread(two, index=None).astype(float)
    assert a.shape[0] == 2 and b.shape[0] == 2  # t = 0 and t = 0.5 both times
    moved = np.abs(a[1] - a[0]).mean()  # the ball fell 0.3 m onto the floor, the stamp changed
    assert moved > 1 and np.abs(a[1] - b[1]).mean() < 0.05 * moved  # the same state, t = 0.5 s, at either rate


def _past_zero(err: bytes, bar: bytes) -> bool:
    """Whether the progress bar `bar` (b"running [", b"rendering [") shows on the terminal output `err`, past 0 %."""
    return bar in err and b"  0%" not in err.rsplit(b"\r", 1)[-1]


def _render_signalled(tmp_path, file: Path, out: Path, sig, when: bytes, *args: str):
    """Run `render FILE --out OUT ARGS` with its stderr on a terminal (its progress bars show) and send `sig` once
    the bar `when` (b"running [" or b"rendering [") is past 0 %; (status, stderr text)."""
    code, err = signal_when(["render", str(file), "--out", str(out), *args], sig, lambda err: _past_zero(err, when),
                            seconds=180, env=_env())
    return code, err.decode(errors="replace")


@pytest.mark.parametrize("sig, status, word, name", [
    (signal.SIGINT, 130, "interrupted", "motion.gif"),
    (signal.SIGTERM, 143, "terminated", "motion.mp4"),
])
def test_render_stopped_by_a_signal_while_it_draws_writes_the_frames_drawn(tmp_path, sig, status, word, name):
    """Ctrl+C or SIGTERM while render draws its frames wrote nothing (the old file kept, the frames drawn lost; as
    `simulate` and `kinematics` keep their rows, da223a1): the file is now finished with the frames rendered so far,
    a playable GIF or MP4 in place of the old file, stderr says how far it got, status 130 or 143, no part file."""
    out = tmp_path / name
    out.write_bytes(b"old content")
    total = 30 * 25 + 1
    code, err = _render_signalled(tmp_path, EXAMPLES / "fourbar.json", out, sig, b"rendering [",
                                  "--t-end", "30", "--fps", "25")
    assert code == status, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1].strip()  # (a line of its own, after the progress bar)
    head, _, tail = last.partition(f" frames written to {out})")
    assert head.startswith(f"{word} at t = ") and tail == "", last
    n = int(head.rsplit("(", 1)[1])
    t = float(head.split("t = ")[1].split(" s")[0])
    assert 1 <= n < total and t == pytest.approx((n - 1) / 25)
    frames = iio3.imread(out, index=None, **({"plugin": "FFMPEG"} if name.endswith(".mp4") else {}))
    assert frames.shape[0] == n and frames.shape[2] == 800  # a playable animation of the frames drawn
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_render_stopped_by_a_signal_during_its_run_keeps_the_old_file(tmp_path):
    """Before any frame is drawn (the run of the motion) a signal ends the render at once: nothing to write, the old
    file as it was and no part file."""
    out = tmp_path / "cam.gif"
    out.write_bytes(b"old content")
    code, err = _render_signalled(tmp_path, EXAMPLES / "contact_cam_follower.json", out, signal.SIGINT, b"running [",
                                  "--t-end", "20")
    assert code == 130, err
    assert err.strip().endswith("interrupted") and "Traceback" not in err
    assert out.read_bytes() == b"old content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cam.gif"]


def test_an_interrupted_export_keeps_the_frames_drawn_or_writes_nothing(make_window, qtbot, tmp_path):
    """AnimationExport.interrupt (render's Ctrl+C and SIGTERM): after three frames the file is finished with those
    three, a playable GIF in place of the old file; before any frame nothing is written, the old file kept and no
    part file left."""
    from app.export import AnimationExport, motion_of

    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    rec = finished_run(qtbot, win)
    motion = motion_of(rec, 1.0)
    out = tmp_path / "a.gif"
    for stop_after, expected in ((0, (False, "no frame was rendered")), (3, (True, ""))):
        out.write_bytes(b"old content")
        export = AnimationExport(win.viewport, motion, out, 25, 1.0, show=win.playback.show_frame)
        results = []
        export.finished.connect(lambda ok, msg: results.append((ok, msg)))
        if stop_after:
            export.progress.connect(lambda k, _n: export.interrupt() if k == stop_after else None)
        else:
            export.interrupt()
        export.start()
        qtbot.waitUntil(lambda: bool(results), timeout=60_000)
        assert results == [expected] and export.frames_done == stop_after
        if stop_after:
            assert iio3.imread(out, index=None).shape[0] == 3
        else:
            assert out.read_bytes() == b"old content"
        assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no part file


def test_render_ends_with_a_message_when_its_display_goes_away(tmp_path):
    """Killing the X server under a render (Ctrl+C to xvfb-run stops Xvfb first) left the render spinning at 100 %
    CPU, deaf to SIGINT and SIGTERM: Qt's xcb plugin ends the application's event loop when the connection breaks,
    and every wait of the render's then returned at once. Now it ends by itself: status 2, a message, the old file as
    it was and no part file. (The X server is killed while the contact run goes on: its progress bar shows on a
    terminal. When a GL call of Mesa's notices the break first, Xlib ends the process at once, status 1 and its
    'fatal IO error': that outcome never hung.)"""
    import pty

    out = tmp_path / "cam.gif"
    out.write_bytes(b"old content")
    rfd, wfd = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(wfd), "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
                            pass_fds=(wfd,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(wfd)
    master = proc = None
    err = b""
    try:
        with os.fdopen(rfd) as fh:
            display = ":" + fh.readline().strip()
        env = _env()
        env["DISPLAY"] = display
        master, slave = pty.openpty()
        proc = subprocess.Popen([sys.executable, "-m", "app", "render", str(EXAMPLES / "contact_cam_follower.json"),
                                 "--out", str(out), "--t-end", "20"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=slave)
        os.close(slave)
        killed = []

        def kill_the_display_once_under_way(err: bytes):
            if not killed and _past_zero(err, b"running ["):  # the run is under way (1 % or more)
                xvfb.terminate()
                xvfb.wait(timeout=30)
                killed.append(True)
                return 60  # (it span for ever)
            return None

        err = follow_terminal(master, proc, 120, kill_the_display_once_under_way)
        assert killed, err
        proc.wait(timeout=5)
    finally:
        for p in (proc, xvfb):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        if master is not None:
            os.close(master)
    text = err.decode(errors="replace")
    assert "Traceback" not in text
    assert out.read_bytes() == b"old content"
    if proc.returncode == 1 and "fatal IO error" in text:  # Xlib's end (see above)
        return
    assert proc.returncode == 2, text
    assert text.rstrip().endswith("error: display: the connection to the display was lost (did the X server end?): "
                                  "Qt's event loop has stopped; nothing was written"), text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cam.gif"]


def test_a_wait_after_the_event_loop_has_ended_is_an_error_not_a_spin():
    """wait_for once QCoreApplication.exit has been called (as Qt's xcb plugin does when the X11 connection breaks):
    QEventLoop.exec returns at once, and the render's `while not done: wait_for(...)` loops span; it is a located
    error now. (In a process of its own: the exit would end every later test's event loop.)"""
    code = ("from PySide6.QtCore import QCoreApplication\n"
            "from PySide6.QtWidgets import QApplication\n"
            "from core.errors import LinkwrightError\n"
            "from app.export import wait_for\n"
            "app = QApplication([])\n"
            "wait_for([], timeout_s=0.01)\n"
            "QCoreApplication.exit(1)\n"
            "try:\n"
            "    wait_for([], timeout_s=30)\n"
            "except LinkwrightError as exc:\n"
            "    print(exc)\n")
    env = _env()
    env["QT_QPA_PLATFORM"] = "offscreen"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("display: the connection to the display was lost"), r.stderr


@pytest.mark.parametrize("args, where", [
    (["--out", "x.avi"], "--out"),
    (["--out", "x.gif", "--fps", "0"], "--fps"),
    (["--out", "x.gif", "--t-end", "nan"], "--t-end"),
    (["--out", "nowhere/x.gif"], "--out"),
])
def test_render_refuses_bad_options_with_status_2(tmp_path, args, where):
    args = [str(tmp_path / a) if a.endswith((".avi", ".gif")) else a for a in args]
    r = run_cli("render", EXAMPLES / "fourbar.json", *args)
    assert r.returncode == 2 and where in r.stderr and "Traceback" not in r.stderr
    assert not list(tmp_path.glob("*.gif"))


@pytest.mark.parametrize("name, steps, command", [("contact_sphere_drop.json", 0.5, "simulate"),
                                                   ("contact_sphere_drop.json", 0.0, "simulate"),
                                                   ("fourbar.json", 0.0, "kinematics")])
def test_render_refuses_an_end_time_shorter_than_one_step_as_simulate_and_kinematics_do(tmp_path, name, steps,
                                                                                       command):
    """User test s55 K7: `render --t-end` shorter than one step of the scene's dt (or 0) wrote one frame, status 0 or
    3 'it ended early', where `simulate` and `kinematics` refuse it: the same located message and status 2, before
    any frame (`steps`: the end time in steps of the file's dt)."""
    f = EXAMPLES / name
    t_end = steps * (io.load(f).simulation_settings().dt if command == "simulate" else 1.0)
    r = run_cli("render", f, "--out", tmp_path / "x.gif", "--t-end", repr(t_end))
    same = run_cli(command, f, "--t-end", repr(t_end))
    assert same.returncode == 2 and same.stderr.startswith("error: --t-end: ")
    assert (r.returncode, r.stderr, r.stdout) == (2, same.stderr, "")
    assert not list(tmp_path.iterdir())


def test_render_to_an_empty_file_name_says_so():
    """`render FILE --out ""` said "unknown animation type ''" (Path("") is "."); the empty name is named as
    `simulate --out ""` names it (status 2, nothing else on stderr)."""
    r = run_cli("render", EXAMPLES / "fourbar.json", "--out", "")
    assert r.returncode == 2 and r.stderr == 'error: --out: the file name is empty ("")\n' and r.stdout == ""


def test_render_names_its_t_end_for_too_many_steps_of_the_files_dt(tmp_path):
    """The contact run's check is located at the document's simulation.duration; the end time was typed, so render
    names --t-end (15000 s at the sphere drop's dt = 0.01 s: 1.5e6 steps), and the file's dt is no option of it."""
    r = run_cli("render", EXAMPLES / "contact_sphere_drop.json", "--out", tmp_path / "x.gif", "--t-end", "15000",
                "--fps", "1")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("error: --t-end: 15000 s in steps of 0.01 s is 1.5e+06 steps"), r.stderr
    assert not list(tmp_path.glob("*.gif"))


def test_render_without_a_display_says_to_use_xvfb_instead_of_aborting(tmp_path):
    env = _env()
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    r = subprocess.run([sys.executable, "-m", "app", "render", str(EXAMPLES / "fourbar.json"), "--out",
                        str(tmp_path / "x.gif")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Xvfb" in r.stderr and not (tmp_path / "x.gif").exists()


@pytest.mark.parametrize("argv", [["--screenshot", "x.png"], []])
def test_the_app_without_a_display_says_to_use_xvfb_instead_of_aborting(tmp_path, argv):
    """Qt aborts (status 134) without a display; the app says what to do instead, status 2."""
    env = _env()
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    argv = [str(tmp_path / a) if a.endswith(".png") else a for a in argv]
    r = subprocess.run([sys.executable, "-m", "app", *argv, str(EXAMPLES / "fourbar.json")], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Xvfb" in r.stderr and "Traceback" not in r.stderr
    assert not list(tmp_path.glob("*.png"))


def test_a_screenshot_to_an_empty_file_name_is_status_2(tmp_path):
    # user test s53 (H5): "" read as no --screenshot: the interactive app opened and never exited
    r = subprocess.run([sys.executable, "-m", "app", "--screenshot", "", str(EXAMPLES / "fourbar.json")], cwd=ROOT,
                       env=_env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.strip() == 'error: --screenshot: the file name is empty ("")', r.stderr


@pytest.mark.parametrize("name,why", [("x.jpg", "give the file a .png name"), ("nowhere/x.png", "no such folder")])
def test_screenshot_to_a_file_it_cannot_write_says_why_with_status_2(tmp_path, name, why):
    r = run_cli("--screenshot", tmp_path / name, EXAMPLES / "fourbar.json")
    assert r.returncode == 2 and why in r.stderr and "--screenshot" in r.stderr and "Traceback" not in r.stderr
    assert not list(tmp_path.rglob("x.*"))


def test_render_of_a_bad_file_is_the_located_message_and_status_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "linkwright.mechanism", "version": 1, "space": "spatial", "bodies": '
                   '[{"name": "b", "mass": 1, "shape": {"type": "sphere", "radius": -1}}]}')
    r = run_cli("render", bad, "--out", tmp_path / "x.gif")
    assert r.returncode == 2 and "bodies[0].shape.radius" in r.stderr and "Traceback" not in r.stderr


def test_screenshot_at_a_time_exits_0_or_3_with_the_last_frame(tmp_path):
    out = tmp_path / "drop.png"
    r = run_cli("--screenshot", out, "--time", "0.3", EXAMPLES / "contact_sphere_drop.json")
    assert r.returncode == 0, r.stderr
    img = QImage(str(out))
    assert not img.isNull() and (img.width(), img.height()) == (1440, 900)
    out3 = tmp_path / "stops.png"
    r = run_cli("--screenshot", out3, "--time", "0.8", stopping_fourbar(tmp_path))
    assert r.returncode == 3 and "stopped before 0.8 s (last frame t = 0.33 s): passed a singular position" in r.stderr
    assert "the motion ends near t = 0.3358" in r.stderr
    assert not QImage(str(out3)).isNull()  # the last frame was rendered all the same
    r = run_cli("--screenshot", tmp_path / "x.png", "--time", "-1", EXAMPLES / "fourbar.json")
    assert r.returncode == 2 and "--time" in r.stderr
    r = run_cli("--time", "1", EXAMPLES / "fourbar.json")
    assert r.returncode == 2 and "--screenshot" in r.stderr


# ---- File ▸ Export ▸ Run Data: the Motion dock's run, as the CLI writes it -----------------------------------------
def finished_run(qtbot, win):
    """The window's Motion dock run, waited for until it has ended."""
    qtbot.waitUntil(lambda: win.playback.recording.complete and not win.playback.is_running(), timeout=120_000)
    return win.playback.recording


def short_drop(tmp_path, duration: float = 0.2) -> Path:
    """The sphere-drop example cut to `duration` (it hits the floor near t = 0.3 s: 0.4 s includes contact)."""
    m = io.load(EXAMPLES / "contact_sphere_drop.json")
    m.set_simulation(duration=duration)
    path = tmp_path / "drop.json"
    io.save(m, path)
    return path


def test_run_data_of_a_contact_run_is_what_simulate_writes(make_window, dialogs, qtbot, tmp_path):
    from core.cli import main as cli
    from core.contact import load_npz

    doc = short_drop(tmp_path, 0.4)
    win = make_window(io.load(doc), doc)
    rec = finished_run(qtbot, win)
    assert rec.ok and win.action_set.export_run_data.isEnabled()
    dialogs.save_path = str(tmp_path / "app.csv")
    win.action_set.export_run_data.trigger()  # File ▸ Export ▸ Run Data…
    assert cli(["simulate", str(doc), "--out", str(tmp_path / "cli.csv")]) == 0
    app_rows = list(csv.reader((tmp_path / "app.csv").open()))
    cli_rows = list(csv.reader((tmp_path / "cli.csv").open()))
    # the same columns (the ball's state, the ball/floor pair, which touches near t = 0.3 s) and the same numbers:
    # the dock's run and the CLI's are one run protocol on one document
    assert "ball/floor.pn" in app_rows[0] and len(app_rows) == 1 + 41  # header + t = 0, 0.01, ..., 0.4
    assert app_rows == cli_rows

    assert win.exports.export_run_data(tmp_path / "app.npz")
    assert cli(["simulate", str(doc), "--out", str(tmp_path / "cli.npz")]) == 0
    a, c = load_npz(tmp_path / "app.npz"), load_npz(tmp_path / "cli.npz")
    assert (a.method, a.dt, a.body_names, a.pair_names) == (c.method, c.dt, c.body_names, c.pair_names)
    assert a.completed and c.completed
    for name in ("t", "position", "orientation", "velocity", "angular", "active", "gap", "pn", "pf", "pr", "point_a",
                 "point_b", "normal", "iterations", "residual", "halvings", "fallback", "mass", "inertia", "com"):
        assert np.array_equal(getattr(a, name), getattr(c, name)), name
    assert not [d for d in dialogs.kinds() if d == "critical"]


def test_run_data_of_a_stopped_contact_run_is_the_frames_so_far(make_window, qtbot, tmp_path):
    from core.contact import load_npz, simulate as core_simulate

    # the pile for 30 s: the Stop lands mid-run (its own 1 s is computed in about half a second, and a run that
    # ended before the Stop reached it made this test fail now and then)
    mech = io.load(EXAMPLES / "contact_pile.json")
    mech.set_simulation(duration=30.0)
    win = make_window(mech)  # a long run: it waits for Run
    pb = win.playback
    pb.run()
    qtbot.waitUntil(lambda: pb.recording.count >= 2, timeout=120_000)
    pb.stop()
    rec = finished_run(qtbot, win)
    n = rec.count
    assert rec.cancelled and 2 <= n < len(rec.requested)
    assert win.exports.export_run_data(tmp_path / "part.npz")
    part = load_npz(tmp_path / "part.npz")
    assert not part.completed and "stopped by the user" in part.reason and part.t.size == n
    # the rows are the core's run of the same document up to the stop
    core = core_simulate(io.load(EXAMPLES / "contact_pile.json"), t_end=float(rec.times[n - 1]))
    assert core.t.size == n
    for name in ("t", "position", "orientation", "velocity", "gap", "pn", "iterations"):
        assert np.array_equal(getattr(part, name), getattr(core, name)), name


def test_run_data_of_a_driven_motion_is_what_kinematics_writes(make_window, dialogs, qtbot, tmp_path):
    from core.cli import main as cli

    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    finished_run(qtbot, win)
    assert (win.playback.t_end, win.playback.steps) == (1.0, 100)  # the CLI's defaults
    assert win.exports.export_run_data(tmp_path / "app.csv")
    assert cli(["kinematics", str(EXAMPLES / "fourbar.json"), "--csv", str(tmp_path / "cli.csv")]) == 0
    assert (tmp_path / "app.csv").read_text() == (tmp_path / "cli.csv").read_text()
    # a driven motion has no .npz format in the CLI: refused with a dialog, nothing written
    assert not win.exports.export_run_data(tmp_path / "app.npz")
    assert dialogs.kinds() == ["critical"] and "exported as CSV" in dialogs.calls[0][2]
    assert not (tmp_path / "app.npz").exists()


def test_run_data_of_a_motion_that_stops_early_is_the_rows_before_the_stop(make_window, qtbot, tmp_path):
    from core.cli import main as cli

    doc = stopping_fourbar(tmp_path)
    win = make_window(io.load(doc), doc)
    rec = finished_run(qtbot, win)
    assert not rec.ok and 0 < rec.count < 101
    assert win.exports.export_run_data(tmp_path / "app.csv")
    assert cli(["kinematics", str(doc), "--csv", str(tmp_path / "cli.csv")]) == 3  # stopped early: status 3
    rows = (tmp_path / "app.csv").read_text()
    assert rows == (tmp_path / "cli.csv").read_text() and rows.count("\n") == 1 + rec.count


def test_run_data_with_a_non_finite_number_is_refused_at_the_file_named(make_window, dialogs, qtbot, tmp_path,
                                                                         monkeypatch):
    """The export's check for non-finite numbers (core's Recording.check_finite) said '--out', the command line's
    option (and the dialog dropped the place); the dialog now names the file the user chose, and nothing is
    written."""
    doc = short_drop(tmp_path, 0.05)
    win = make_window(io.load(doc), doc)
    rec = finished_run(qtbot, win)
    bad = rec.contact_recording()
    bad.position[2, 0, 2] = math.inf
    monkeypatch.setattr(rec, "contact_recording", lambda: bad)
    for name in ("app.csv", "app.npz"):
        assert not win.exports.export_run_data(tmp_path / name)
        text = dialogs.calls[-1][2]
        assert text.startswith(f"{name}: the run computed a non-finite position at row 2") and "--out" not in text
        assert not (tmp_path / name).exists()
    assert dialogs.kinds() == ["critical", "critical"]


def test_run_data_export_refusals_are_dialogs(make_window, dialogs, qtbot, tmp_path):
    from core.model import Mechanism

    win = make_window(Mechanism())  # nothing to move: no run
    assert win.action_set.export_run_data in win.findChild(QMenu, "exportMenu").actions()  # File ▸ Export ▸ Run…
    assert not win.action_set.export_run_data.isEnabled()
    assert "No run" in win.action_set.export_run_data.toolTip()
    assert not win.exports.export_run_data(tmp_path / "x.csv")
    assert dialogs.kinds() == ["critical"] and "no run to export" in dialogs.calls[-1][2]

    win2 = make_window(io.load(EXAMPLES / "fourbar.json"))
    finished_run(qtbot, win2)
    assert win2.action_set.export_run_data.isEnabled()
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert not win2.exports.export_run_data(blocker / "run.csv")  # its folder cannot be made a file in
    assert dialogs.kinds() == ["critical", "critical"] and "cannot write" in dialogs.calls[-1][2]
    assert not win2.exports.export_run_data(tmp_path / "run.txt")
    assert "unknown type of run data" in dialogs.calls[-1][2] and not (tmp_path / "run.txt").exists()
    if os.geteuid() != 0:  # root writes into a read-only folder
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        try:
            assert not win2.exports.export_run_data(ro / "run.csv")
            assert "cannot write" in dialogs.calls[-1][2] and not list(ro.iterdir())
        finally:
            ro.chmod(0o700)


# ---- exports use the Motion dock's recording: no second run ---------------------------------------------------------
@pytest.fixture
def runs_made(monkeypatch):
    """Counts the runs of documents solved in this process, whoever solves them (the core's run classes: a run
    counts when its frames are asked for; a run built only for its start-up checks, as a screenshot's, does not)."""
    from core.contact import ContactRun

    made = {"contact": 0, "kinematics": 0}
    for cls in (ContactRun, TrajectoryRun):
        frames = cls.__iter__

        def counting(self, _frames=frames):
            made[self.kind] += 1
            return _frames(self)

        monkeypatch.setattr(cls, "__iter__", counting)
    return made


def test_an_animation_after_a_run_reuses_its_frames(make_window, qtbot, tmp_path, runs_made):
    doc = short_drop(tmp_path)
    win = make_window(io.load(doc), doc)
    pb = win.playback
    rec = finished_run(qtbot, win)
    assert runs_made["contact"] == 1  # the Motion dock's run
    win.exports.fps = 10
    ok, msg = wait_export(qtbot, win, lambda: win.exports.export_animation(tmp_path / "a.gif"))
    assert ok, msg
    assert runs_made["contact"] == 1  # the recorded frames were used: nothing was run again
    assert iio3.imread(tmp_path / "a.gif", index=None).shape[0] == 3  # t = 0, 0.1, 0.2
    assert pb.recording is rec and rec.count == 21

    rec.set_stale(True)  # results of an older document: not used, the dock's run is started again
    ok, msg = wait_export(qtbot, win, lambda: win.exports.export_animation(tmp_path / "b.gif"))
    assert ok, msg
    assert runs_made["contact"] == 2 and not rec.stale and rec.count == 21


def test_a_driven_animation_after_a_run_reuses_its_frames(make_window, qtbot, tmp_path, runs_made):
    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    finished_run(qtbot, win)
    made = runs_made["kinematics"]
    win.exports.fps = 5
    ok, msg = wait_export(qtbot, win, lambda: win.exports.export_animation(tmp_path / "a.gif"))
    assert ok, msg
    assert runs_made["kinematics"] == made
    assert iio3.imread(tmp_path / "a.gif", index=None).shape[0] == 6  # t = 0, 0.2, ..., 1


def test_screenshot_at_a_time_a_run_has_reached_runs_nothing_again(make_window, qtbot, tmp_path, runs_made):
    doc = short_drop(tmp_path, 0.4)
    win = make_window(io.load(doc), doc)
    finished_run(qtbot, win)
    reached, why = screenshot_at(win, 0.25)
    assert reached, why
    assert runs_made["contact"] == 1 and win.playback.recording.time_at() == pytest.approx(0.25, abs=1e-9)


def test_every_animation_frame_shows_the_overlays_of_its_own_time(make_window, qtbot, tmp_path, monkeypatch):
    """Contact arrows, trails and the comparison's ghosts in an exported frame are those of the frame's time, not of
    the cursor (a GIF once showed the whole trail and the last frame's arrow in every frame)."""
    import app.export as export_module

    m = io.load(EXAMPLES / "contact_box_slide.json")
    m.set_simulation(duration=0.3)
    doc = tmp_path / "slide.json"
    io.save(m, doc)
    win = make_window(io.load(doc), doc)
    pb, vp = win.playback, win.viewport
    win.action_set.compare.setChecked(True)  # the explicit method as ghosts
    rec = finished_run(qtbot, win)
    qtbot.waitUntil(lambda: pb.ghost.complete and pb.ghost.count == rec.count, timeout=120_000)
    pb.seek(rec.count - 1)  # the cursor at the end: every overlay of the end is on screen before the export
    seen = []
    grab = export_module.grab_viewport

    def recording_grab(viewport):
        seen.append((viewport.body_poses()["box"], viewport.trails()["box"].copy(), viewport.contact_arrows(),
                     viewport.ghost_poses()["box"]))
        return grab(viewport)

    monkeypatch.setattr(export_module, "grab_viewport", recording_grab)
    win.exports.fps = 10
    ok, msg = wait_export(qtbot, win, lambda: win.exports.export_animation(tmp_path / "a.gif"))
    assert ok, msg
    ref = simulate(io.load(doc))  # the core's run of the same document
    expl = simulate(io.load(doc), method="explicit")
    p, b = ref.pair_names.index("box/floor"), ref.body_names.index("box")
    assert len(seen) == 4  # t = 0, 0.1, 0.2, 0.3
    s = vp.force_scale()
    for j, (poses, trail, arrows, ghost) in enumerate(seen):
        k = 10 * j  # the frame at t = j / 10 s (dt = 0.01 s)
        np.testing.assert_allclose(poses[:3, 3], ref.position[k, b], atol=1e-12)
        assert len(trail) == k + 1  # the path up to this frame, not up to the cursor
        np.testing.assert_allclose(trail[-1], ref.position[k, b], atol=1e-12)
        np.testing.assert_allclose(ghost[:3, 3], expl.position[k, b], atol=1e-12)
        assert_arrows_of_frame(arrows, s, ref, k, p, vp.arrow_knee())
    assert ref.active[10:31, p].all()  # the box slides on the floor: arrows in the later frames
    # afterwards the views show the cursor's frame again
    assert len(vp.trails()["box"]) == rec.count
    np.testing.assert_allclose(vp.body_poses()["box"][:3, 3], ref.position[-1, b], atol=1e-12)


def test_an_animation_of_a_run_the_user_stopped_is_of_its_frames(make_window, qtbot, tmp_path, runs_made):
    # user test s53 (H6): the export ran the whole document again (the user's frames were thrown away), and cancelling
    # that run left fewer frames than they had
    m = io.load(EXAMPLES / "contact_pile.json")
    m.set_simulation(duration=30.0)  # 3000 steps: still running when Stop comes
    win = make_window(m)
    pb = win.playback
    win.action_set.run.trigger()
    qtbot.waitUntil(lambda: pb.recording.count >= 30, timeout=60_000)
    pb.stop()
    rec = finished_run(qtbot, win)
    assert rec.cancelled and runs_made["contact"] == 1
    kept, t_last = rec.count, rec.time_at(rec.count - 1)
    win.exports.fps = 25
    ok, msg = wait_export(qtbot, win, lambda: win.exports.export_animation(tmp_path / "stopped.gif"))
    assert ok, msg
    assert runs_made["contact"] == 1 and pb.recording.count == kept  # nothing run again, the frames kept
    # its frames at 25 per second up to the last frame kept (frame_times ends exactly at it)
    assert iio3.imread(tmp_path / "stopped.gif", index=None).shape[0] == len(frame_times(t_last, 25))


def test_an_export_after_a_cancelled_export_runs_the_document_again(make_window, qtbot, tmp_path, runs_made):
    # review s53: a run stopped by cancelling an export is not the user's Stop; its frames must not be taken for the
    # animation the next export asks for (it would end early without a word)
    m = io.load(EXAMPLES / "contact_pile.json")
    m.set_simulation(duration=30.0)  # waits for Run; the export starts it
    win = make_window(m)
    pb = win.playback
    with qtbot.waitSignal(win.exports.done, timeout=60_000) as blocker:
        assert win.exports.export_animation(tmp_path / "a.gif")
        qtbot.waitUntil(lambda: pb.recording.count >= 20, timeout=60_000)
        win.exports.dialog.findChild(QPushButton).click()  # Cancel: the run the export started is stopped
    assert blocker.args == [False, "cancelled"]
    finished_run(qtbot, win)
    rec = pb.recording
    assert rec.cancelled and not rec.stopped_by_user and runs_made["contact"] == 1
    with qtbot.waitSignal(win.exports.done, timeout=60_000):
        assert win.exports.export_animation(tmp_path / "b.gif")
        qtbot.waitUntil(lambda: runs_made["contact"] == 2, timeout=60_000)  # the document runs again
        win.exports.dialog.findChild(QPushButton).click()


def test_a_run_stopped_at_the_screenshots_time_says_so_not_the_user(make_window, tmp_path):
    m = io.load(EXAMPLES / "contact_sphere_drop.json")
    m.set_simulation(duration=30.0)  # 3000 steps: still running when it reaches 0.3 s, so the screenshot stops it
    win = make_window(m)
    reached, why = screenshot_at(win, 0.3)
    assert reached, why
    rec = win.playback.recording
    assert rec.complete and rec.cancelled and rec.time_at(rec.count - 1) < 30.0
    status = win.motion.status_label.text()
    # the frames asked for are there: the ok status (not the orange of a stop), with the note; nothing "left"
    assert status.endswith("s (it has reached the 0.3 s asked for)") and " frames, t = 0 … " in status, status
    assert "stopped at t = " in win.motion.status_label.toolTip()
    assert "left" not in win.playback.progress[1]
    assert rec.time_at() == pytest.approx(0.3, abs=1e-12)  # the screenshot shows 0.3 s


def test_screenshot_time_of_a_contact_document_the_stepper_refuses_is_status_2(tmp_path):
    # found by the outside campaign: the floor of contact_sphere_drop made a free body with a shape and no mass; the
    # window opened it, its run never started and --screenshot --time waited forever
    doc = json.loads((EXAMPLES / "contact_sphere_drop.json").read_text())
    doc["bodies"][0]["ground"] = False
    p = tmp_path / "loose_floor.json"
    p.write_text(json.dumps(doc))
    r = run_cli("--screenshot", tmp_path / "x.png", "--time", "0.5", p)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "error: bodies[0]: body 'floor' has a shape but neither mass nor density" in r.stderr


def _box_inside_floor(doc):
    doc["bodies"][1]["pose"]["position"][2] = 0.05  # (the 0.2 m box's centre 5 cm above the floor: 5 cm of it inside)


def _floor_twice(doc):
    doc["bodies"].append(dict(doc["bodies"][0], name="floor2"))


def _spin_too_fast(doc):
    doc["bodies"][1]["velocity"] = {"angular": [0.0, 0.0, 1e6]}


@pytest.mark.parametrize("edit, message", [
    (_box_inside_floor, "error: bodies[1].pose.position: 'box' starts"),
    (_floor_twice, "error: bodies[2].shape: the same half-space as bodies[0]"),
    (_spin_too_fast, "error: bodies[1].velocity.angular: 'box' spins at 1e+06 rad/s"),
])
def test_a_contact_run_that_cannot_start_is_status_2_for_a_screenshot_at_a_time_as_for_render(edit, message, tmp_path):
    # user test s53 (G1): the run's start-up refusals came back from the window's run as "stopped early" (status 3,
    # no `error:` line) for --screenshot --time, while `simulate` and `render` exit 2 with the located message
    doc = json.loads((EXAMPLES / "contact_box_slide.json").read_text())
    edit(doc)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    for argv in (("--screenshot", tmp_path / "x.png", "--time", "0.3", p), ("render", p, "--out", tmp_path / "x.gif")):
        r = run_cli(*argv)
        assert r.returncode == 2 and "Traceback" not in r.stderr, (argv, r.stderr)
        errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error")]
        assert len(errors) == 1 and errors[0].startswith(message), (argv, r.stderr)


@pytest.mark.parametrize("time, example, message", [
    # found by the outside campaign: 1e308 overflowed into a step count (OverflowError, then a hang in the GUI)
    ("1e308", "fourbar", "error: --time: must be between 0 and 1e+06, got 1e+308"),
    ("1e308", "contact_sphere_drop", "error: --time: must be between 0 and 1e+06, got 1e+308"),
    # within the bound of a run length but 2e6 frames at 100 per second for a driven mechanism: refused, not solved
    ("20000", "fourbar", "error: --time: 20000 s in steps of 0.01 s is 2e+06 steps; the limit is 1,000,000"),
])
def test_screenshot_times_beyond_the_run_bounds_are_refused(time, example, message, tmp_path):
    r = run_cli("--screenshot", tmp_path / "x.png", "--time", time, EXAMPLES / f"{example}.json")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error")]
    assert len(errors) == 1 and errors[0].startswith(message), r.stderr


def test_render_and_a_screenshot_at_a_time_of_nothing_to_move_exit_2(tmp_path):
    """A ground body alone: `render` and `--screenshot --time` ran nothing and exited 3 ("stopped early") with an
    error line; nothing to move is bad input, status 2, as in `simulate` and `kinematics`."""
    p = tmp_path / "ground_only.json"
    p.write_text(json.dumps({"format": "linkwright.mechanism", "version": 1, "space": "planar",
                             "bodies": [{"name": "g", "ground": True}]}))
    for argv in (("render", p, "--out", tmp_path / "x.gif"), ("--screenshot", tmp_path / "x.png", "--time", "0.5", p)):
        r = run_cli(*argv)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert r.stderr.startswith("error: ") and "nothing to move" in r.stderr, r.stderr


@pytest.mark.parametrize("value, message", [
    ("1/t", "error: drivers[0].value: value of '1/t' is not finite at t = 0"),
    ("1e300*t", "error: drivers[0].value: velocity of '1e300*t' is 1e+300, beyond the bound"),
])
def test_render_and_a_screenshot_at_a_time_of_a_driver_refused_at_t_0_exit_2(tmp_path, value, message):
    """A driver undefined (or beyond its bound) at the first time is a located error, status 2, in `kinematics`;
    `render` and `--screenshot --time` found it only in the window's run and exited 3 ("stopped early") with no
    frame at all."""
    m = io.load(EXAMPLES / "fourbar.json")
    m.drivers = [dataclasses.replace(m.drivers[0], value=value)]
    p = tmp_path / "pole.json"
    io.save(m, p)
    for argv in (("render", p, "--out", tmp_path / "x.gif"), ("--screenshot", tmp_path / "x.png", "--time", "0.5", p)):
        r = run_cli(*argv)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert r.stderr.startswith(message), r.stderr
    assert not list(tmp_path.glob("x.*"))


def test_run_data_export_without_a_suffix_asks_before_replacing_the_csv_of_that_name(make_window, dialogs, qtbot,
                                                                                    tmp_path):
    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    finished_run(qtbot, win)
    kept = tmp_path / "run.csv"
    kept.write_text("an earlier export")
    dialogs.save_path = str(tmp_path / "run")  # the dialog asked about "run" only
    dialogs.answer = QMessageBox.No
    assert not win.exports.export_run_data()
    assert dialogs.kinds() == ["save", "question"] and kept.read_text() == "an earlier export"
    dialogs.answer = QMessageBox.Yes
    assert win.exports.export_run_data()
    assert kept.read_text().startswith("t,A,A.vel")


def test_render_and_a_screenshot_name_a_shaped_body_without_mass(tmp_path):
    """A ball with a shape but no mass, alone on a floor: nothing moves, and `render` and `--screenshot --time` say
    why at the body (as `simulate` does, core.run.nothing_to_move), not only 'nothing to move'."""
    p = tmp_path / "no_mass.json"
    p.write_text(json.dumps({"format": "linkwright.mechanism", "version": 1, "space": "spatial",
                             "bodies": [{"name": "floor", "ground": True,
                                         "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}},
                                        {"name": "ball", "shape": {"type": "sphere", "radius": 0.1},
                                         "pose": {"position": [0, 0, 0.5]}}]}))
    for argv in (("render", p, "--out", tmp_path / "x.gif"), ("--screenshot", tmp_path / "x.png", "--time", "0.5", p)):
        r = run_cli(*argv)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert r.stderr.startswith("error: bodies[1]: body 'ball' has a shape but neither mass nor density"), r.stderr


def test_an_animations_stamps_tell_the_frames_of_a_short_run_apart(make_window, qtbot, tmp_path, monkeypatch):
    """The stamp wrote 't = 0.00 s' on every frame of a run shorter than 5 ms (user test s52, F5): its digits follow
    the frames' spacing (app.playback.recording.time_text), and an ordinary animation's read as before."""
    import app.export as export_module
    from app.export import AnimationExport, motion_of

    stamps = []

    class Painter(export_module.QPainter):  # what the stamp writes
        def drawText(self, *args):
            stamps.append(args[-1])
            return super().drawText(*args)

    monkeypatch.setattr(export_module, "QPainter", Painter)

    def stamped(t_end: float, fps: int, dt: float) -> list[str]:
        mech = io.load(EXAMPLES / "contact_sphere_drop.json")
        mech.set_simulation(dt=dt, duration=t_end)
        win = make_window(mech)
        qtbot.waitUntil(lambda: win.playback.recording.complete and not win.playback.worker.running(), timeout=60_000)
        export = AnimationExport(win.viewport, motion_of(win.playback.recording, t_end), tmp_path / "a.gif", fps, t_end,
                                 show=win.playback.show_frame)
        results = []
        export.finished.connect(lambda ok, msg: results.append((ok, msg)))
        stamps.clear()
        export.start()
        qtbot.waitUntil(lambda: bool(results), timeout=60_000)
        assert results == [(True, "")]
        return list(stamps)

    assert stamped(1e-6, 25, 1e-8) == ["t = 0.000000 s", "t = 0.000001 s"]  # (were both t = 0.00 s)
    assert stamped(0.2, 25, 0.01) == [f"t = {t} s" for t in ("0.00", "0.04", "0.08", "0.12", "0.16", "0.20")]


def test_an_export_name_with_a_version_number_gets_the_chosen_type(make_window, dialogs, qtbot, tmp_path):
    # user test s54 (U6's exports): 'run v1.2' was taken as a name with the file type '.2' and written without one
    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    finished_run(qtbot, win)
    dialogs.save_path = str(tmp_path / "run v1.2")
    assert win.exports.export_run_data()
    assert (tmp_path / "run v1.2.csv").read_text().startswith("t,A,A.vel")
    # the animation dialog's chosen filter gives a name without a type its suffix: MP4, not the default GIF
    assert win.exports._ask_path("Export animation", "GIF animation (*.gif);;MP4 video (*.mp4)", ".gif") == \
        tmp_path / "run v1.2.gif"
    dialogs.save_filter = "MP4 video (*.mp4)"
    assert win.exports._ask_path("Export animation", "GIF animation (*.gif);;MP4 video (*.mp4)", ".gif") == \
        tmp_path / "run v1.2.mp4"
    dialogs.save_path = str(tmp_path / "clip.gif")  # a typed type is kept whatever the filter
    assert win.exports._ask_path("Export animation", "GIF animation (*.gif);;MP4 video (*.mp4)", ".gif") == \
        tmp_path / "clip.gif"


def test_the_plots_image_export_takes_the_chosen_filters_type(make_window, dialogs, qtbot, tmp_path):
    # review s55: the plots' own save dialogs took the first filter's type whatever the user chose ("plot" with SVG
    # chosen was written as PNG): every export dialog asks through app.files.ask_save_path
    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    finished_run(qtbot, win)
    dialogs.save_path = str(tmp_path / "plot v2")
    dialogs.save_filter = "SVG (*.svg)"
    win.plots._ask_image()
    assert (tmp_path / "plot v2.svg").read_bytes().lstrip().startswith((b"<?xml", b"<svg"))
