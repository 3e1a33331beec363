"""Exports read back: the 3D view as PNG, animations as GIF (frame count) and MP4 (header, frames); the headless
`linkwright render` and `--screenshot --time` with their exit statuses; the shown time equals the core's frame."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import imageio.v2 as iio2
import imageio.v3 as iio3
import numpy as np
import pytest
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QPushButton

from core import io
from core.contact import simulate
from core.kinematics import TrajectoryRun, compile_model
from core.transforms import quat_to_matrix

from app.export import frame_times, screenshot_at

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
    # solved at t = 0, 0.1, ...: the step to 0.4 fails (the limit is near 0.336 s), 0.3 s is the last frame
    assert r.returncode == 3 and "Traceback" not in r.stderr
    assert "stopped before 1 s (last frame t = 0.3 s): cannot assemble" in r.stderr
    assert iio3.imread(tmp_path / "stops.gif", index=None).shape[0] == 4  # the frames up to the stop: t = 0 .. 0.3


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


def test_render_without_a_display_says_to_use_xvfb_instead_of_aborting(tmp_path):
    env = _env()
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    r = subprocess.run([sys.executable, "-m", "app", "render", str(EXAMPLES / "fourbar.json"), "--out",
                        str(tmp_path / "x.gif")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Xvfb" in r.stderr and not (tmp_path / "x.gif").exists()


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
    assert r.returncode == 3 and "stopped before 0.8 s (last frame t = 0.33 s): cannot assemble" in r.stderr
    assert not QImage(str(out3)).isNull()  # the last frame was rendered all the same
    r = run_cli("--screenshot", tmp_path / "x.png", "--time", "-1", EXAMPLES / "fourbar.json")
    assert r.returncode == 2 and "--time" in r.stderr
    r = run_cli("--time", "1", EXAMPLES / "fourbar.json")
    assert r.returncode == 2 and "--screenshot" in r.stderr


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
