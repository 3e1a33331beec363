"""User test s54 ut1 (drawing, editing, files): an entry typed but not confirmed is taken before any action of the
window runs (U1); spaces are no value (U4); the message under the Properties form goes with its edit (U9); the
Motion dock's Steps and End take what was typed or say why not (U11); a run shorter than one step is refused (U12);
names, typed numbers, the title and the points table (U13)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from app.files import EXAMPLES_DIR, prepare_loaded
from core import io

pytestmark = pytest.mark.gui


@pytest.fixture
def fourbar_win(make_window):
    """A window with the four-bar example (ground, crank, coupler, rocker; joints A B C D)."""
    return make_window(prepare_loaded(io.load(EXAMPLES_DIR / "fourbar.json")))


def _type(win, qtbot, fld, text: str) -> None:
    """Give `fld` the focus and type `text` over its content, without Enter."""
    fld.setFocus(Qt.MouseFocusReason)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is fld)
    fld.selectAll()
    QTest.keyClick(fld, Qt.Key_Delete)
    QTest.keyClicks(fld, text)


def _click_toolbar(win, action) -> None:
    button = win.toolbar.widgetForAction(action)
    assert button.focusPolicy() == Qt.NoFocus  # (the point: the field keeps the focus, editingFinished never comes)
    QTest.mouseClick(button, Qt.LeftButton)


# ---- U1: the pending entry is taken before the action ----------------------------------------------------------------
def test_a_typed_mass_is_taken_before_the_toolbars_add_body(fourbar_win, qtbot):
    """Case A: crank's mass 7 typed (no Enter), toolbar Add Body: the body was added and the 7 was gone."""
    win = fourbar_win
    m = lambda: win.document.mechanism  # noqa: E731
    win.selection.set(bodies=["crank"])
    _type(win, qtbot, win.properties.body_mass, "7")
    n = len(m().bodies)
    _click_toolbar(win, win.action_set.add_body)
    assert m().body("crank").mass == 7.0 and len(m().bodies) == n + 1
    st = win.document.undo_stack
    assert st.text(st.index() - 2).startswith("Edit body crank") and st.text(st.index() - 1).startswith("Add body")


def test_toolbar_undo_with_a_typed_value_undoes_that_value(fourbar_win, qtbot):
    """Case B: an Add body, then B's At typed as 9, 9, 0 (no Enter), toolbar Undo: the Add body was undone and the
    typed At thrown away. Now the entry is taken first, and Undo undoes it: the Add body stays, Redo brings the At."""
    win = fourbar_win
    m = lambda: win.document.mechanism  # noqa: E731
    win.action_set.add_body.trigger()
    n, at = len(m().bodies), m().joint("B").at
    win.selection.set(joints=["B"])
    _type(win, qtbot, win.properties.joint_at, "9, 9, 0")
    _click_toolbar(win, win.action_set.undo)
    assert len(m().bodies) == n and m().joint("B").at == at
    assert win.properties.joint_at.text() == ", ".join(f"{x:g}" for x in at)
    win.action_set.redo.trigger()
    assert m().joint("B").at == (9.0, 9.0, 0.0)
    assert win.action_set.undo.text().startswith("&Undo Edit joint B")  # (the Edit menu's item names the edit)


def test_a_typed_name_is_taken_before_toggle_ground(fourbar_win, qtbot):
    """Case C: rocker renamed rocker2 (no Enter), toolbar Toggle Ground: rocker became ground, the rename was lost."""
    win = fourbar_win
    m = lambda: win.document.mechanism  # noqa: E731
    win.selection.set(bodies=["rocker"])
    _type(win, qtbot, win.properties.body_name, "rocker2")
    _click_toolbar(win, win.action_set.ground)
    assert "rocker" not in m().body_names() and m().body("rocker2").ground


def test_ctrl_d_in_a_field_takes_the_typed_value_first(fourbar_win, qtbot):
    """Case D2: B's At typed as 1, 1, 0, Ctrl+D in the field: the driver was added and the At replaced by the model's
    value without a word."""
    win = fourbar_win
    m = lambda: win.document.mechanism  # noqa: E731
    win.selection.set(joints=["B"])
    drivers = len(m().drivers)
    fld = win.properties.joint_at
    _type(win, qtbot, fld, "1, 1, 0")
    QTest.keyClick(fld, Qt.Key_D, Qt.ControlModifier)
    assert m().joint("B").at == (1.0, 1.0, 0.0) and len(m().drivers) == drivers + 1
    assert fld.text() == "1, 1, 0" and not fld.error


def test_an_edit_from_elsewhere_does_not_wipe_an_entry_being_typed(fourbar_win, qtbot):
    """D2's cause: a document edit while a field held unconfirmed text showed the model's value over it."""
    win = fourbar_win
    win.selection.set(joints=["B"])
    fld = win.properties.joint_at
    _type(win, qtbot, fld, "1, 1")
    assert win.editor.update_body("crank", mass=2.0) is None  # (an edit that does not touch B's At)
    assert fld.text() == "1, 1" and QApplication.focusWidget() is fld
    QTest.keyClicks(fld, ", 0")
    QTest.keyClick(fld, Qt.Key_Return)
    assert win.document.mechanism.joint("B").at == (1.0, 1.0, 0.0)


def test_a_refused_pending_entry_stops_the_action_and_stays_in_red(fourbar_win, qtbot):
    """An entry that cannot be taken is not dropped by the action: it stays in its field, in red with the reason,
    the action does not run, and the status bar says why (as Save does)."""
    win = fourbar_win
    m = lambda: win.document.mechanism  # noqa: E731
    win.selection.set(bodies=["crank"])
    fld = win.properties.body_mass
    _type(win, qtbot, fld, "abc")
    n, index = len(m().bodies), win.document.undo_stack.index()
    _click_toolbar(win, win.action_set.add_body)
    assert len(m().bodies) == n and win.document.undo_stack.index() == index
    assert fld.text() == "abc" and "'abc' is not a number" in fld.error
    assert "'abc' is not a number" in win.properties.error.text()
    assert win.statusBar().currentMessage().startswith("The value typed was refused: ")
    # a checkable action (Connect Mode) keeps its check mark as it was
    _click_toolbar(win, win.action_set.connect_mode)
    assert not win.action_set.connect_mode.isChecked()
    # Esc leaves the entry: the model's value again, no refusal; the action runs
    QTest.keyClick(fld, Qt.Key_Escape)
    assert fld.text() == "" and not fld.error and win.properties.error.text() == ""
    _click_toolbar(win, win.action_set.add_body)
    assert len(m().bodies) == n + 1
    win.action_set.undo.trigger()
    win.selection.set(bodies=["crank"])
    # a good value typed, then the same button runs
    _type(win, qtbot, fld, "3")
    _click_toolbar(win, win.action_set.add_body)
    assert m().body("crank").mass == 3.0 and len(m().bodies) == n + 1


def test_a_typed_end_is_taken_before_run(fourbar_win, qtbot):
    """A Motion dock box applies on editingFinished too: End typed, then the toolbar's Run, runs to that End."""
    win = fourbar_win
    box = win.motion.end_box
    box.setFocus(Qt.MouseFocusReason)
    qtbot.waitUntil(lambda: QApplication.focusWidget() in (box, box.lineEdit()))
    box.lineEdit().selectAll()
    QTest.keyClicks(box.lineEdit(), "2")
    _click_toolbar(win, win.action_set.run)
    assert win.playback.t_end == 2.0


# ---- U4: spaces are no value -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("field", ["doc_dt", "doc_duration", "doc_friction", "doc_ellipsoid"])
def test_spaces_in_an_empty_optional_field_are_no_edit(fourbar_win, qtbot, field):
    """One space and Enter in the empty dt field added a simulation section (the four-bar became a contact-dynamics
    document, marked modified)."""
    win = fourbar_win
    win.selection.clear()
    fld = getattr(win.properties, field)
    assert fld.text() == ""
    _type(win, qtbot, fld, "  ")
    QTest.keyClick(fld, Qt.Key_Return)
    m = win.document.mechanism
    assert m.simulation is None and m.contact is None
    assert win.document.undo_stack.count() == 0 and not win.document.modified
    assert fld.text() == "" and not fld.error


def test_spaces_around_the_value_shown_are_no_edit(fourbar_win, qtbot):
    win = fourbar_win
    win.selection.set(bodies=["rocker"])
    fld = win.properties.body_mass
    shown = fld.text()
    _type(win, qtbot, fld, f"  {shown} ")
    QTest.keyClick(fld, Qt.Key_Return)
    assert win.document.undo_stack.count() == 0 and fld.text() == shown


# ---- U9: the message under the form goes with its edit ---------------------------------------------------------------
def test_a_refusal_under_the_form_goes_when_a_later_edit_is_taken(make_window, qtbot):
    """Density, then Shape none: refused ('density needs a shape'); then Shape box: taken, but the red refusal stood
    under the form."""
    win = make_window(prepare_loaded(io.load(EXAMPLES_DIR / "contact_sphere_drop.json")))
    p = win.properties
    ball = next(b.name for b in win.document.mechanism.bodies if b.shape and b.shape["type"] == "sphere")
    win.selection.set(bodies=[ball])
    kind = p.body_mass_kind
    kind.setCurrentIndex(kind.findData("density"))
    kind.activated.emit(kind.currentIndex())
    assert win.document.mechanism.body(ball).density is not None
    shape = p.body_shape
    shape.setCurrentIndex(shape.findData(None))
    shape.activated.emit(shape.currentIndex())
    assert "density" in p.error.text()
    shape.setCurrentIndex(shape.findData("box"))
    shape.activated.emit(shape.currentIndex())
    assert win.document.mechanism.body(ball).shape["type"] == "box"
    assert p.error.text() == ""
    # a field's refusal stays while its red entry does, through another edit that is taken
    _type(win, qtbot, p.body_inertia, "1, 2")
    QTest.keyClick(p.body_inertia, Qt.Key_Return)
    assert "inertia: expected 3" in p.error.text()
    assert win.editor.update_body(ball, density=900.0) is None
    assert "inertia: expected 3" in p.error.text() and p.body_inertia.text() == "1, 2"
    win.selection.clear()  # and a selection changed clears it
    assert p.error.text() == ""


# ---- U11: Steps and End take what was typed or say why not ----------------------------------------------------------
def _enter(box, qtbot, text: str) -> None:
    box.setFocus(Qt.MouseFocusReason)
    qtbot.waitUntil(lambda: QApplication.focusWidget() in (box, box.lineEdit()))
    box.lineEdit().selectAll()
    QTest.keyClick(box.lineEdit(), Qt.Key_Delete)
    QTest.keyClicks(box.lineEdit(), text)
    QTest.keyClick(box.lineEdit(), Qt.Key_Return)


def test_the_steps_box_never_changes_what_was_typed(fourbar_win, qtbot):
    """1e3 became 13 steps, -5 became 5, 1000001 became 100000: the box dropped the keys it could not take."""
    win = fourbar_win
    m, pb = win.motion, win.playback
    steps = pb.steps
    for text, why in (("-5", "must be between 1 and 1,000,000, got -5"), ("0", "got 0"),
                      ("1000001", "must be between 1 and 1,000,000, got 1000001"),
                      ("2.5", "'2.5' is not a whole number of steps"), ("abc", "'abc' is not a whole number")):
        _enter(m.steps_box, qtbot, text)
        assert pb.steps == steps and m.steps_box.value() == steps, text
        assert m.status_label.text() == f"Steps: {why}" or why in m.status_label.text(), (text, m.status_label.text())
        assert why in m.steps_box.toolTip() and m.steps_box.styleSheet()
    _enter(m.steps_box, qtbot, "1e3")  # a whole number written with an exponent is that number
    assert pb.steps == 1000 and m.steps_box.value() == 1000 and not m.steps_box.styleSheet()
    _enter(m.steps_box, qtbot, "50")
    assert pb.steps == 50


def test_the_end_box_refuses_nan_with_the_reason(fourbar_win, qtbot):
    win = fourbar_win
    m, pb = win.motion, win.playback
    t_end = pb.t_end
    _enter(m.end_box, qtbot, "nan")
    assert pb.t_end == t_end and "got nan" in m.end_box.toolTip() and m.end_box.styleSheet()
    # a run's progress did not write over the refusal (End 'nan' typed during a long run looked ignored); the run's
    # status goes to the tooltip until a value is taken
    pb.statusChanged.emit("solving… 1 / 101 frames", "", "busy")
    assert m.status_label.text().startswith("End: must be between") and "got nan" in m.status_label.text()
    assert "solving… 1 / 101 frames" in m.status_label.toolTip()
    _enter(m.end_box, qtbot, "2")
    assert pb.t_end == 2.0 and not m.end_box.styleSheet() and not m.status_label.text().startswith("End:")
    _enter(m.end_box, qtbot, "nan")
    assert m.status_label.text().startswith("End: ")
    _enter(m.end_box, qtbot, "2")  # the value it has, typed again: the refusal goes too
    assert pb.t_end == 2.0 and not m.end_box.styleSheet() and not m.status_label.text().startswith("End:")


# ---- U12: a run shorter than one step --------------------------------------------------------------------------------
def test_a_contact_end_shorter_than_one_step_is_refused(make_window, qtbot):
    """Duration 0 or 1e-9 s (dt 0.01 s): End showed 1e-09 s and the run recorded frames to t = 0.01 s (or 0 s alone).
    Now refused with the location, in Properties and in the Motion dock's End, as `linkwright simulate` does."""
    win = make_window(prepare_loaded(io.load(EXAMPLES_DIR / "contact_sphere_drop.json")))
    win.selection.clear()
    p = win.properties
    end = win.playback.contact_end()
    for text in ("0", "1e-9", "0.005"):
        _type(win, qtbot, p.doc_duration, text)
        QTest.keyClick(p.doc_duration, Qt.Key_Return)
        assert win.document.mechanism.simulation_settings().duration == end, text
        assert p.error.text().startswith("simulation.duration: ") and "is shorter than one step (dt = 0.01 s)" in \
            p.error.text(), p.error.text()
    _enter(win.motion.end_box, qtbot, "1e-9")
    assert win.playback.contact_end() == end
    assert "1e-09 s is shorter than one step (dt = 0.01 s)" in win.motion.status_label.text()
    # an End taken, then dt edited past it: Run is refused with the reason, nothing recorded
    pb = win.playback
    _enter(win.motion.end_box, qtbot, "0.05")
    assert pb.contact_end() == 0.05
    pb.stop()
    qtbot.waitUntil(lambda: not pb.is_running(), timeout=30000)
    assert win.editor.set_simulation(dt=0.1) is None
    pb.run()
    assert not pb.is_running() and pb.recording.count == 0
    assert pb.status == "End: 0.05 s is shorter than one step (dt = 0.1 s): a run takes whole steps; make the end " \
                        "time at least one step, or the step shorter", pb.status


# ---- U13: names, typed numbers, title, points ------------------------------------------------------------------------
def test_one_message_for_an_empty_name_and_invisible_names_refused(fourbar_win, qtbot):
    from core.validate import EMPTY_NAME

    win = fourbar_win
    win.selection.set(bodies=["crank"])
    fld = win.properties.body_name
    _type(win, qtbot, fld, " crank ")
    QTest.keyClick(fld, Qt.Key_Return)
    assert fld.text() == "crank" and win.document.undo_stack.count() == 0  # (spaces around the name: no edit)
    _type(win, qtbot, fld, " ")
    QTest.keyClick(fld, Qt.Key_Return)
    i = win.document.mechanism.body_names().index("crank")
    assert fld.error == f"bodies[{i}].name: {EMPTY_NAME}"  # (located, as every Properties refusal: s56, S10)
    err = win.editor.rename("crank", "")  # what the graph's F2 box says
    assert err is not None and err.message == EMPTY_NAME
    fld.setText("\u200b")
    assert "has no visible character" in fld.finish()
    assert "crank" in win.document.mechanism.body_names()


def test_a_refused_huge_mass_shows_what_was_typed(fourbar_win, qtbot):
    win = fourbar_win
    win.selection.set(bodies=["crank"])
    fld = win.properties.body_mass
    i = win.document.mechanism.body_names().index("crank")
    fld.setText("1" * 400)
    assert fld.finish() == f"bodies[{i}].mass: must be a finite number, got 11111111111111111..."
    fld.setText("1e-400")
    assert fld.finish() == f"bodies[{i}].mass: must be a positive number, got 1e-400"


def test_a_new_documents_title_says_untitled_once(make_window):
    from core.model import Mechanism

    win = make_window(Mechanism(name="Untitled"))
    assert win.windowTitle() == "Untitled[*] — Linkwright"
    win.files.new()
    assert win.windowTitle() == "Untitled[*] — Linkwright"
    assert win.editor.update_document(name="Crane") is None
    assert win.windowTitle() == "Untitled[*] — Crane — Linkwright"


def test_a_point_out_of_range_names_its_row(make_window, qtbot):
    from core.model import Body, Mechanism

    win = make_window(Mechanism(name="p", bodies=[Body("g", ground=True),
                                                  Body("b", points={"P1": (0.0, 0.0, 0.0), "P2": (1.0, 0.0, 0.0)})]))
    win.selection.set(bodies=["b"])
    p = win.properties
    p.points.item(1, 1).setText("1e7, 0, 0")
    assert p.error.text().startswith("points row 2: "), p.error.text()
    assert win.document.mechanism.body("b").points["P2"] == (1.0, 0.0, 0.0)
