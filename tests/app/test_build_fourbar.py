"""Build a four-bar only through GUI input on the graph editor; the structure panel follows every step."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt

from core import io, structure
from core.model import Mechanism

from .conftest import click, double_click, drag

pytestmark = pytest.mark.gui


def panel_matrix(win) -> np.ndarray:
    """The incidence matrix as the structure panel's table model shows it."""
    model = win.structure.model
    out = np.zeros((model.rowCount(), model.columnCount()), dtype=int)
    for r in range(model.rowCount()):
        for c in range(model.columnCount()):
            out[r, c] = 1 if model.data(model.index(r, c)) == "1" else 0
    return out


def assert_panel_matches_core(win) -> None:
    """The panel shows what core.structure.analyze computes for the document right now (no event loop turn)."""
    rep = structure.analyze(win.document.mechanism.copy())
    np.testing.assert_array_equal(panel_matrix(win), rep.incidence.astype(int))
    model = win.structure.model
    assert [model.headerData(c, Qt.Horizontal).split("\n")[0] for c in range(model.columnCount())] == rep.joints
    assert win.structure.mobility.text() == f"M = {rep.mobility}"
    assert win.structure.formula.text() == rep.mobility_formula
    assert f"M = {rep.mobility}" in win.status.mobility.text()


def node_pos(win, name: str) -> QPoint:
    """Viewport pixel of a body node's centre."""
    return win.graph.mapFromScene(win.graph.bodies[name].pos())


def port_pos(win, name: str) -> QPoint:
    """Viewport pixel of a body node's + handle (drag from it to add a joint)."""
    item = win.graph.bodies[name]
    return win.graph.mapFromScene(item.mapToScene(item.port_local()))


def build_fourbar(win, qtbot) -> list[str]:
    """Draw four bodies and four revolute joints with the mouse and mark one ground with the G key."""
    vp = win.graph.viewport()
    win.graph.resetTransform()
    win.graph.centerOn(0, 0)
    spots = [QPoint(-180, 120), QPoint(-180, -100), QPoint(180, -100), QPoint(180, 120)]
    names = []
    for k, spot in enumerate(spots):
        double_click(vp, win.graph.mapFromScene(spot.x(), spot.y()))
        names.append(sorted(set(win.document.mechanism.body_names()) - set(names))[0])
        assert len(win.document.mechanism.bodies) == k + 1
        assert_panel_matches_core(win)
    for k in range(4):
        a, b = names[k], names[(k + 1) % 4]
        drag(vp, port_pos(win, a), node_pos(win, b))
        assert len(win.document.mechanism.joints) == k + 1
        assert set(win.document.mechanism.joints[-1].bodies) == {a, b}
        assert_panel_matches_core(win)
    click(vp, node_pos(win, names[0]))
    assert win.selection.bodies == {names[0]}
    win.graph.setFocus()
    qtbot.keyClick(win.graph, Qt.Key_G)
    assert win.document.mechanism.body(names[0]).ground
    assert_panel_matches_core(win)
    return names


def test_four_bar_built_with_the_mouse_has_mobility_one_and_the_core_incidence(make_window, qtbot):
    win = make_window(Mechanism(name="drawn"))
    names = build_fourbar(win, qtbot)
    m = win.document.mechanism
    rep = structure.analyze(m)
    # Planar Gruebler: M = 3(n-1) - 2 j1 with n = 4 bodies and j1 = 4 revolute joints -> 3·3 - 8 = 1.
    assert rep.mobility == 1
    assert win.structure.mobility.text() == "M = 1"
    assert win.structure.formula.text() == "M = 3(4-1) - 2·4 = 1"
    # A single closed loop: every body is binary, every row and column of the incidence matrix has two ones.
    assert rep.loops == 1 and rep.chain == "closed"
    assert (panel_matrix(win).sum(axis=0) == 2).all() and (panel_matrix(win).sum(axis=1) == 2).all()
    assert win.structure.loops.count() == 1
    assert [b.name for b in m.bodies if b.ground] == [names[0]]
    # The drawn joints got the toolbar's current type.
    assert {j.type for j in m.joints} == {"revolute"}
    assert win.graph.joints[m.joints[0].name].letter == "R"


def test_deleting_a_body_removes_its_joints(make_window, qtbot):
    win = make_window(Mechanism(name="drawn"))
    names = build_fourbar(win, qtbot)
    vp = win.graph.viewport()
    click(vp, node_pos(win, names[2]))
    assert win.selection.bodies == {names[2]}
    qtbot.keyClick(win.graph, Qt.Key_Delete)
    m = win.document.mechanism
    assert names[2] not in m.body_names()
    # The two joints at the deleted body are gone; no joint names a missing body (no orphans).
    assert len(m.joints) == 2
    assert all(b in m.body_names() for j in m.joints for b in j.bodies)
    assert set(win.graph.joints) == set(m.joint_names())
    assert_panel_matches_core(win)
    # Open chain of 3 bodies, 2 revolutes: M = 3·2 - 2·2 = 2.
    assert win.structure.mobility.text() == "M = 2"


def test_undo_to_empty_and_redo_to_the_full_four_bar(make_window, qtbot):
    win = make_window(Mechanism(name="drawn"))
    build_fourbar(win, qtbot)
    full = io.dumps(win.document.mechanism)
    steps = win.document.undo_stack.count()
    assert steps == 9  # 4 bodies + 4 joints + 1 ground toggle
    assert win.document.modified
    win.graph.setFocus()
    for _ in range(steps):
        qtbot.keyClick(win.graph, Qt.Key_Z, Qt.ControlModifier)
        assert_panel_matches_core(win)
    m = win.document.mechanism
    assert m.bodies == [] and m.joints == [] and not win.graph.bodies
    assert win.structure.model.rowCount() == 0
    assert not win.document.modified  # back at the clean state of the new document
    for _ in range(steps):
        qtbot.keyClick(win.graph, Qt.Key_Z, Qt.ControlModifier | Qt.ShiftModifier)
        assert_panel_matches_core(win)
    assert io.dumps(win.document.mechanism) == full


def test_a_node_drag_is_one_undo_step(make_window, qtbot):
    win = make_window(Mechanism(name="drawn"))
    build_fourbar(win, qtbot)
    name = win.document.mechanism.bodies[1].name
    before = win.document.mechanism.layout[name]
    n = win.document.undo_stack.count()
    start = node_pos(win, name) + QPoint(-20, 0)
    drag(win.graph.viewport(), start, start + QPoint(60, 40), steps=12)
    after = win.document.mechanism.layout[name]
    # The node followed the mouse by the dragged distance (1:1 view scale).
    assert after[0] - before[0] == pytest.approx(60, abs=1.5) and after[1] - before[1] == pytest.approx(40, abs=1.5)
    assert win.document.undo_stack.count() == n + 1
    win.document.undo_stack.undo()
    assert win.document.mechanism.layout[name] == before
    assert win.graph.bodies[name].pos().x() == pytest.approx(before[0])


def test_rename_in_place_with_f2_and_refusal_keeps_the_text(make_window, qtbot):
    win = make_window(Mechanism(name="drawn"))
    names = build_fourbar(win, qtbot)
    click(win.graph.viewport(), node_pos(win, names[1]))
    qtbot.keyClick(win.graph, Qt.Key_F2)
    ed = win.graph.rename_editor()
    assert ed is not None and ed.text() == names[1]
    # A duplicate name is refused: the editor stays open with the typed text and the reason.
    ed.setText(names[2])
    qtbot.keyClick(ed, Qt.Key_Return)
    assert win.graph.rename_editor() is ed and ed.text() == names[2]
    assert "duplicate" in ed.toolTip()
    assert names[1] in win.document.mechanism.body_names()
    ed.setText("crank")
    qtbot.keyClick(ed, Qt.Key_Return)
    assert win.graph.rename_editor() is None
    m = win.document.mechanism
    assert "crank" in m.body_names() and names[1] not in m.body_names()
    assert sum("crank" in j.bodies for j in m.joints) == 2  # the joints follow the rename
    assert win.structure.model.headerData(1, Qt.Vertical).startswith("crank")


def two_bodies_by_double_click(win) -> list[str]:
    """Add two bodies left and right of the scene centre by double-clicking the canvas; returns their names."""
    win.graph.resetTransform()
    win.graph.centerOn(0, 0)
    for x in (-150, 150):
        double_click(win.graph.viewport(), win.graph.mapFromScene(x, 0))
    return win.document.mechanism.body_names()


def test_joint_type_from_toolbar_and_edge_letters(make_window, qtbot):
    win = make_window(Mechanism(name="slider"))
    vp, (a, b) = win.graph.viewport(), two_bodies_by_double_click(win)
    win.joint_combo.setCurrentIndex(win.joint_combo.findData("prismatic"))
    win.joint_combo.activated.emit(win.joint_combo.currentIndex())
    assert win.editor.joint_type == "prismatic"
    drag(vp, port_pos(win, a), node_pos(win, b))
    j = win.document.mechanism.joints[0]
    assert j.type == "prismatic" and win.graph.joints[j.name].letter == "P"
    # A planar document offers only its joint types (no spherical in the plane).
    offered = [win.joint_combo.itemData(i) for i in range(win.joint_combo.count())]
    assert "spherical" not in offered and "slot" in offered
    # Dropping on empty canvas adds nothing.
    drag(vp, port_pos(win, a), win.graph.mapFromScene(0, 300))
    assert len(win.document.mechanism.joints) == 1


def test_shift_drop_offers_the_compact_joint_type_popup(make_window, monkeypatch):
    import app.panels.graph as graph_module

    win = make_window(Mechanism(name="popup"))
    vp, (a, b) = win.graph.viewport(), two_bodies_by_double_click(win)
    offered = []

    def fake_exec(menu, *args):
        offered.extend(act.data() for act in menu.actions())
        return next(act for act in menu.actions() if act.data() == "slot")

    monkeypatch.setattr(graph_module, "exec_menu", fake_exec)
    drag(vp, port_pos(win, a), node_pos(win, b), modifiers=Qt.ShiftModifier)
    assert offered == ["revolute", "prismatic", "slot", "fixed"]  # the planar types, table order
    j = win.document.mechanism.joints[0]
    assert j.type == "slot" and win.graph.joints[j.name].letter == "Sl"
    assert win.editor.joint_type == "revolute"  # the toolbar's choice is unchanged


def test_ctrl_click_and_rubber_band_select_several_bodies(make_window, qtbot):
    win = make_window(Mechanism(name="drawn"))
    names = build_fourbar(win, qtbot)
    vp = win.graph.viewport()
    click(vp, node_pos(win, names[1]))
    click(vp, node_pos(win, names[2]), modifiers=Qt.ControlModifier)
    assert win.selection.bodies == {names[1], names[2]}
    # A rubber band from an empty corner across the whole drawing selects every body (and the joints inside it).
    pts = [node_pos(win, n) for n in names]
    top_left = QPoint(min(p.x() for p in pts) - 90, min(p.y() for p in pts) - 60)
    bottom_right = QPoint(max(p.x() for p in pts) + 90, max(p.y() for p in pts) + 60)
    assert win.graph.itemAt(top_left) is None  # the drag starts on empty canvas
    drag(vp, top_left, bottom_right, steps=10)
    assert win.selection.bodies == set(names)
    # Delete removes the whole selection in one undo step.
    qtbot.keyClick(win.graph, Qt.Key_Delete)
    assert win.document.mechanism.bodies == [] and win.document.mechanism.joints == []
    win.document.undo_stack.undo()
    assert len(win.document.mechanism.bodies) == 4 and len(win.document.mechanism.joints) == 4


def test_the_rename_editor_closes_when_its_item_is_deleted_or_undone(make_window, qtbot):
    """F2 opens the in-place editor over a node; deleting that body (the toolbar's Delete) or undoing its addition
    while the editor is open closes it, rather than leaving it over an empty spot where Enter was refused with
    'unknown joint'."""
    win = make_window(Mechanism(name="drawn"))
    names = build_fourbar(win, qtbot)
    vp = win.graph.viewport()
    click(vp, node_pos(win, names[2]))
    qtbot.keyClick(win.graph, Qt.Key_F2)
    assert win.graph.rename_editor() is not None
    win.action_set.delete.trigger()
    assert names[2] not in win.document.mechanism.body_names()
    assert win.graph.rename_editor() is None
    win.document.undo_stack.undo()
    click(vp, node_pos(win, names[3]))
    qtbot.keyClick(win.graph, Qt.Key_F2)
    assert win.graph.rename_editor() is not None
    for _ in range(6):  # ground, the four joints, then the body itself
        win.action_set.undo.trigger()
    assert names[3] not in win.document.mechanism.body_names() and win.graph.rename_editor() is None
    # an editor over an item that stays is left open (a layout move, another body's edit)
    click(vp, node_pos(win, names[0]))
    qtbot.keyClick(win.graph, Qt.Key_F2)
    win.editor.add_body((400.0, 400.0))
    assert win.graph.rename_editor() is not None and win.graph.rename_editor().property("target") == names[0]
