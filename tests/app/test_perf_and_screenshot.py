"""A 200-body mechanism still edits fluidly; `linkwright --screenshot` renders the whole window to a PNG."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from core import structure
from core.generate import ladder

pytestmark = pytest.mark.gui

ROOT = Path(__file__).resolve().parents[2]


def test_200_body_edit_analysis_and_refresh_is_fast(make_window):
    win = make_window(ladder(200))
    m = win.document.mechanism
    times = []
    for r in range(5):
        x, y = m.layout["b5"]
        t0 = time.perf_counter()
        win.editor.move({"b5": (x + 10.0, y)})  # command + re-analysis + every panel refreshed, same turn
        times.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    win.editor.delete(bodies=["b100"])  # a structural edit: the matrix loses a row and its columns
    t_delete = time.perf_counter() - t0
    best = min(times)
    print(f"\n200-body GUI edit (move): {best * 1e3:.1f} ms; delete body: {t_delete * 1e3:.1f} ms")
    rep = structure.analyze(win.document.mechanism.copy())
    # Every view already shows the edited document (no event-loop turn in between).
    assert win.structure.model.rowCount() == 199 and win.structure.model.columnCount() == len(rep.joints)
    assert win.structure.mobility.text() == f"M = {rep.mobility}"
    assert len(win.graph.bodies) == 199 and "b100" not in win.graph.bodies
    assert best < 1.0 and t_delete < 2.0  # loose: the measured numbers are printed (and in bench/)


def _env() -> dict:
    env = dict(os.environ)
    env["QT_QPA_PLATFORM"] = "xcb"
    env["LIBGL_ALWAYS_SOFTWARE"] = "1"
    env["XDG_CONFIG_HOME"] = os.environ["XDG_CONFIG_HOME"]  # the isolated folders of this test
    env["XDG_DATA_HOME"] = os.environ["XDG_DATA_HOME"]
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_screenshot_renders_a_non_blank_png_with_the_viewport(tmp_path):
    assert os.environ.get("DISPLAY"), "pytest-xvfb provides a display"
    out = tmp_path / "out.png"
    r = subprocess.run(
        [sys.executable, "-m", "app", "--screenshot", str(out), str(ROOT / "resources/examples/fourbar.json")],
        cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 0, r.stderr
    img = QImage(str(out))
    assert not img.isNull() and img.width() >= 1000 and img.height() >= 700
    # Non-blank: many distinct colours overall, and in the right-hand region where the 3D view dock sits.
    colours = {img.pixel(x, y) for x in range(0, img.width(), 7) for y in range(0, img.height(), 7)}
    assert len(colours) > 50
    right = {img.pixel(x, y) for x in range(int(img.width() * 0.7), img.width(), 3) for y in range(80, int(img.height() * 0.55), 3)}
    assert len(right) > 20


def test_screenshot_of_a_bad_file_exits_2_with_the_located_message(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "linkwright.mechanism", "version": 1, "space": "planar", "bodies": [{"name": 3}]}')
    out = tmp_path / "out.png"
    r = subprocess.run(
        [sys.executable, "-m", "app", "--screenshot", str(out), str(bad)],
        cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 2
    assert "bodies[0].name" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


def test_the_screenshot_image_has_the_3d_views_point_labels(make_window, qtbot):
    """QWidget.grab() left out what the 3D view paints with a QPainter (the label 'P' of the four-bar's coupler
    point, with Labels on): the screenshot's image is the window with the view's own framebuffer over it."""
    from app.main import grab_window
    from core import io

    win = make_window(io.load(Path(__file__).resolve().parents[2] / "resources" / "examples" / "fourbar.json"))
    qtbot.waitUntil(lambda: win.playback.recording.complete, timeout=10000)
    view = win.viewport.view
    origin = view.mapTo(win, view.rect().topLeft())

    def view_part(img: QImage) -> QImage:
        return img.copy(origin.x(), origin.y(), view.width(), view.height())

    qtbot.wait(200)
    with_labels = view_part(grab_window(win))
    win.viewport.set_labels_visible(False)
    qtbot.wait(200)
    assert view_part(grab_window(win)) != with_labels  # the label was in the screenshot
