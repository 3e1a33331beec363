"""Start-up: the four-bar opens by default; a bad FILE gives a dialog with the located message; slider-crank by mouse."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint

from app.main import open_start_window
from core import structure
from core.model import Mechanism

from .conftest import dispose_windows, double_click, drag
from .test_build_fourbar import assert_panel_matches_core, node_pos, port_pos

pytestmark = pytest.mark.gui


@pytest.fixture
def started(qtbot):
    """Windows made by open_start_window, closed after the test."""
    made = []

    def start(file=None):
        win = open_start_window(file)
        made.append(win)
        return win

    yield start
    dispose_windows(made)


def test_the_app_starts_with_the_four_bar(started, dialogs):
    win = started()
    assert win.document.mechanism.name == "Crank-rocker four-bar"
    assert win.document.path is None and not win.document.modified  # Save never overwrites the example
    assert win.structure.mobility.text() == "M = 1"
    assert "critical" not in dialogs.kinds()


def test_a_bad_start_file_shows_a_dialog_and_opens_the_four_bar(started, dialogs, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "linkwright.mechanism", "version": 1, "space": "plane", "bodies": []}')
    win = started(str(bad))
    assert dialogs.kinds() == ["critical"]
    assert "space" in dialogs.calls[0][2] and "bad.json" in dialogs.calls[0][2]
    assert win.document.mechanism.name == "Crank-rocker four-bar"


def test_slider_crank_drawn_with_the_mouse_has_mobility_one(make_window, qtbot):
    win = make_window(Mechanism(name="slider-crank"))
    vp = win.graph.viewport()
    win.graph.resetTransform()
    win.graph.centerOn(0, 0)
    for spot in (QPoint(-200, 120), QPoint(-200, -80), QPoint(150, -80), QPoint(150, 120)):
        double_click(vp, win.graph.mapFromScene(spot.x(), spot.y()))
    ground, crank, rod, slider = win.document.mechanism.body_names()
    for a, b in ((ground, crank), (crank, rod), (rod, slider)):
        drag(vp, port_pos(win, a), node_pos(win, b))
    win.joint_combo.setCurrentIndex(win.joint_combo.findData("prismatic"))
    win.joint_combo.activated.emit(win.joint_combo.currentIndex())
    drag(vp, port_pos(win, slider), node_pos(win, ground))
    win.editor.toggle_ground([ground])
    m = win.document.mechanism
    assert [j.type for j in m.joints] == ["revolute"] * 3 + ["prismatic"]
    # Planar: 3 revolutes + 1 prismatic, each removing 2 freedoms: M = 3(4-1) - 2·4 = 1.
    assert structure.analyze(m).mobility == 1
    assert_panel_matches_core(win)
    assert win.graph.joints[m.joints[-1].name].letter == "P"
