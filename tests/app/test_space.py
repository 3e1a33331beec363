"""The document's space from the GUI: File ▸ New ▸ Spatial Mechanism, and the Properties Space box switching an open
document between planar and spatial as one undoable edit (refused, with the reason, when something has no form in
the new space)."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtWidgets import QMenu

from core import io
from core.model import Body, Joint, Mechanism
from core.resources import resource_dir

from .conftest import drag
from .test_build_fourbar import assert_panel_matches_core, port_pos, node_pos, two_bodies_by_double_click

pytestmark = pytest.mark.gui

SPATIAL_ONLY = {"cylindrical", "universal", "spherical", "planar", "helical"}
EXAMPLES = resource_dir() / "examples"


def offered(win) -> list[str]:
    """The joint types the toolbar's Joint box offers."""
    return [win.joint_combo.itemData(i) for i in range(win.joint_combo.count())]


def new_menu_action(win, text: str):
    menu = win.findChild(QMenu, "newMenu")
    return next(a for a in menu.actions() if text in a.text().replace("&", ""))


def choose_space(win, space: str) -> None:
    """Pick `space` in the Properties Space box as a user does (the document page: nothing selected)."""
    win.selection.clear()
    box = win.properties.doc_space
    assert win.properties.pages.currentIndex() == 0 and box.isVisibleTo(win.properties)
    box.setCurrentIndex(box.findData(space))
    box.activated.emit(box.currentIndex())


def test_new_spatial_mechanism_offers_every_joint_type_and_counts_six_per_body(make_window, dialogs):
    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    assert [a.text().replace("&", "").split("\t")[0] for a in win.findChild(QMenu, "newMenu").actions()] == [
        "Planar Mechanism", "Spatial Mechanism", "Contact Scene"]
    win.document.undo_stack.setClean()
    new_menu_action(win, "Spatial Mechanism").trigger()
    m = win.document.mechanism
    assert m.space == "spatial" and not m.bodies and m.gravity is None and m.contact is None and m.simulation is None
    assert SPATIAL_ONLY <= set(offered(win)) and "slot" not in offered(win)
    assert win.properties.doc_space.currentData() == "spatial"
    # a spherical joint drawn with the mouse between two bodies: 6 freedoms per body, 3 taken by the joint
    vp, (a, b) = win.graph.viewport(), two_bodies_by_double_click(win)
    win.joint_combo.setCurrentIndex(win.joint_combo.findData("spherical"))
    win.joint_combo.activated.emit(win.joint_combo.currentIndex())
    drag(vp, port_pos(win, a), node_pos(win, b))
    j = win.document.mechanism.joints[0]
    assert j.type == "spherical" and win.graph.joints[j.name].letter == "S"
    assert win.structure.formula.text() == "M = 6(2-1) - 3·1 = 3"
    assert_panel_matches_core(win)
    # the planar one is still Ctrl+N and planar
    win.document.undo_stack.setClean()
    new_menu_action(win, "Planar Mechanism").trigger()
    assert win.document.mechanism.space == "planar" and set(offered(win)) == {"revolute", "prismatic", "slot", "fixed"}
    assert win.editor.joint_type == "revolute"  # spherical is not a planar type: the box went back to the first


def grid_normal(win) -> np.ndarray:
    """The world normal of the 3D view's grid (a GLGridItem lies in its local x-y plane)."""
    import pyqtgraph.opengl as gl

    from app.viewport.camera import from_qmatrix

    win.viewport.scene()  # (a pending document change applied)
    grid = next(item for item in win.viewport._static if isinstance(item, gl.GLGridItem))
    return from_qmatrix(grid.transform())[:3, :3] @ (0.0, 0.0, 1.0)


def test_switching_planar_to_spatial_is_one_undo_step_that_every_view_follows(make_window, dialogs):
    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    before = win.document.mechanism.copy()
    assert win.structure.formula.text() == "M = 3(4-1) - 2·4 = 1"
    assert not SPATIAL_ONLY & set(offered(win))
    choose_space(win, "spatial")
    m = win.document.mechanism
    assert m.space == "spatial" and win.document.modified
    assert m.bodies == before.bodies and m.joints == before.joints and m.gravity == before.gravity  # nothing moved
    assert SPATIAL_ONLY <= set(offered(win))
    assert win.structure.formula.text() == "M = 6(4-1) - 5·4 = -2"
    assert_panel_matches_core(win)
    # the 3D view follows: its up is against the four-bar's gravity (-y) in either space, and its grid, behind the
    # plane (x-y) in a planar document, lies level (normal to the up) in a spatial one
    assert np.allclose(win.viewport.view.up, (0, 1, 0)) and np.allclose(grid_normal(win), (0, 1, 0))
    assert "spatial" in win.statusBar().currentMessage()
    assert win.document.undo_stack.count() == 1
    assert win.document.undo_stack.undoText() == "Make the document spatial"
    # a spatial joint can be drawn now; Undo takes it back, then the switch
    win.joint_combo.setCurrentIndex(win.joint_combo.findData("spherical"))
    win.joint_combo.activated.emit(win.joint_combo.currentIndex())
    assert win.editor.connect("crank", "rocker") is not None
    win.action_set.undo.trigger()
    win.action_set.undo.trigger()
    assert win.document.mechanism == before and not win.document.modified
    assert win.properties.doc_space.currentData() == "planar"
    assert set(offered(win)) == {"revolute", "prismatic", "slot", "fixed"} and win.editor.joint_type == "revolute"
    assert win.structure.formula.text() == "M = 3(4-1) - 2·4 = 1"
    assert np.allclose(win.viewport.view.up, (0, 1, 0)) and np.allclose(grid_normal(win), (0, 0, 1))
    win.action_set.redo.trigger()
    assert win.document.mechanism.space == "spatial" and win.properties.doc_space.currentData() == "spatial"
    assert SPATIAL_ONLY <= set(offered(win)) and win.structure.formula.text() == "M = 6(4-1) - 5·4 = -2"
    # and back to planar through the box: the four-bar fits the plane
    choose_space(win, "planar")
    assert win.document.mechanism == before and win.properties.error.text() == ""
    # choosing the space shown is no edit
    count = win.document.undo_stack.count()
    choose_space(win, "planar")
    assert win.document.undo_stack.count() == count


@pytest.mark.parametrize("case, reason", [
    ("spherical", "joints[1].type: 'spherical' joints are not allowed in a planar document"),
    ("gravity", "gravity[2]: a planar document moves in the x-y plane: must be 0, got -9.81"),
    ("axis", "joints[0].axis: a revolute axis in a planar document must be along z"),
    ("velocity", "bodies[1].velocity.angular[0]: a planar document moves in the x-y plane (a body turns about z only)"),
])
def test_a_refused_switch_to_planar_leaves_the_document_unchanged_and_says_why(make_window, dialogs, case, reason):
    from core.model import Velocity

    bodies = [Body("ground", ground=True), Body("arm"), Body("tip")]
    joints = [Joint("A", "revolute", ("ground", "arm")), Joint("B", "revolute", ("arm", "tip"), at=(1.0, 0.0, 0.0))]
    gravity = None
    if case == "spherical":
        joints[1] = Joint("B", "spherical", ("arm", "tip"), at=(1.0, 0.0, 0.0))
    elif case == "gravity":
        gravity = (0.0, 0.0, -9.81)
    elif case == "axis":
        joints[0] = Joint("A", "revolute", ("ground", "arm"), axis=(1.0, 0.0, 0.0))
    else:
        bodies[1] = Body("arm", velocity=Velocity((0.0, 0.0, 0.0), (2.0, 0.0, 0.0)))
    win = make_window(Mechanism(name="arm", space="spatial", gravity=gravity, bodies=bodies, joints=joints,
                                layout={"ground": (0.0, 0.0), "arm": (100.0, 0.0), "tip": (200.0, 0.0)}))
    before = win.document.mechanism.copy()
    choose_space(win, "planar")
    m = win.document.mechanism
    assert m == before and m.space == "spatial" and not win.document.modified
    assert win.document.undo_stack.count() == 0
    assert win.properties.doc_space.currentData() == "spatial"  # the box shows the document again
    text = win.properties.error.text()
    assert text.startswith("Space: the document cannot be made planar: ") and reason in text
    assert reason in win.statusBar().currentMessage()
    assert SPATIAL_ONLY <= set(offered(win))
    # the reason goes once a switch succeeds (here: back to spatial is no switch; the message stays until then)
    if case == "gravity":
        win.editor.update_document(gravity=(0.0, -9.81, 0.0))
        choose_space(win, "planar")
        assert win.document.mechanism.space == "planar" and win.properties.error.text() == ""


def test_a_slot_has_no_spatial_form_so_the_switch_to_spatial_is_refused(make_window, dialogs):
    win = make_window(io.load(EXAMPLES / "quick_return.json"))
    before = win.document.mechanism.copy()
    choose_space(win, "spatial")
    assert win.document.mechanism == before and win.document.undo_stack.count() == 0
    assert "'slot' joints are not allowed in a spatial document" in win.properties.error.text()
    assert win.properties.doc_space.currentData() == "planar"


def _wheel(widget, qtbot, steps: int = -1) -> None:
    """A mouse-wheel turn over `widget`'s centre, as the window system delivers it."""
    from PySide6.QtCore import QPoint, QPointF, Qt
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication

    pos = QPointF(widget.rect().center())
    ev = QWheelEvent(pos, QPointF(widget.mapToGlobal(pos.toPoint())), QPoint(), QPoint(0, 120 * steps),
                     Qt.NoButton, Qt.NoModifier, Qt.NoScrollPhase, False)
    QApplication.sendEvent(widget, ev)


def test_a_wheel_over_an_unfocused_box_scrolls_and_changes_nothing(make_window, qtbot):
    """Scrolling the Properties page with the mouse over the Space box (or Method, Shape) switched the document's
    space: a wheel picks another item of a combo box, and the box sent it as the user's choice (helper-58's note).
    Now the box takes the wheel only once it has the focus (a click or Tab)."""
    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    win.selection.clear()
    box = win.properties.doc_space
    assert win.properties.pages.currentIndex() == 0 and box.isVisibleTo(win.properties)
    count = win.document.undo_stack.count()
    win.graph.setFocus()
    _wheel(box, qtbot)
    assert win.document.mechanism.space == "planar" and win.document.undo_stack.count() == count
    box.setFocus()
    qtbot.waitUntil(box.hasFocus)
    _wheel(box, qtbot)  # (with the focus it is the box's: the next item, spatial, one undoable edit)
    assert win.document.mechanism.space == "spatial" and win.document.undo_stack.count() == count + 1
