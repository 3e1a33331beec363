"""Minor GUI fixes from a user test of the contact scenes (findings items 5-10): the Motion dock's status during and
after runs and on opening, its End box's refusals, the Properties form's messages and angle bounds, Ctrl+E in a
field."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import io
from tests.app.playback.test_contact_runs import finished, long_pile  # (the contact-run tests' helpers)

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"


@pytest.fixture
def window(make_window, qtbot):
    def make(name=None):
        """A window on an example (by name), on a document, or empty."""
        win = make_window(io.load(EXAMPLES / f"{name}.json") if isinstance(name, str) else name)
        win.qtbot = qtbot
        return win

    return make


def test_an_edit_during_a_long_run_keeps_the_status_stale_while_the_run_goes_on(window, qtbot):
    """Item 6: the edit made the status stale, but the next frames of the run put back `solving… 13 / 3001 frames`
    until Stop; the status stays stale (the frame count goes to its tooltip) while the run goes on."""
    win = window(long_pile())
    pb = win.playback
    win.action_set.run.trigger()
    qtbot.waitUntil(lambda: pb.recording.count >= 2, timeout=60000)
    assert win.editor.update_body("ball1", density=800.0) is None
    n = pb.recording.count
    qtbot.waitUntil(lambda: pb.recording.count >= n + 3, timeout=60000)  # frames arrived after the edit
    assert pb.is_running() and pb.recording.stale
    assert pb.status_kind == "stale", pb.status
    assert win.motion.status_label.text().startswith("results are stale: the document changed; press Run (F5)")
    assert "solving…" in win.motion.status_label.toolTip()
    win.document.undo_stack.undo()  # back to the run's document: current again, its count shown
    qtbot.waitUntil(lambda: pb.recording.count >= n + 6, timeout=60000)
    assert pb.status_kind == "busy" and win.motion.status_label.text().startswith("solving… ")
    pb.stop()
    finished(win, 10000)


def _button(panel, text: str):
    from PySide6.QtWidgets import QPushButton

    return next(b for b in panel.findChildren(QPushButton) if b.text() == text)


def test_a_pair_cells_refusal_goes_with_its_row_when_an_undo_removes_it(window, qtbot):
    """Item 9: Add pair, 'abc' in its μ cell (refused, in red under the form), Ctrl+Z (undoes the Add pair): the
    table was empty, but 'contact.pairs[0]: 'abc' is not a number …' stayed under the form."""
    win = window("contact_sphere_drop")
    p = win.properties
    win.selection.clear()
    _button(p, "Add pair").click()
    assert p.pairs.rowCount() == 1
    p.pairs.item(0, 2).setText("abc")
    assert p.error.text().startswith("contact.pairs[0]: 'abc' is not a number"), p.error.text()
    win.document.undo_stack.undo()
    assert p.pairs.rowCount() == 0 and win.document.mechanism.contact_settings().pairs == ()
    assert p.error.text() == ""
    # a field's refusal is not a cell's: it stays across a refresh (its red entry is still there)
    p.doc_friction.setText("-1")
    p.doc_friction.editingFinished.emit()
    shown = p.error.text()
    assert shown and p.doc_friction.error
    _button(p, "Add pair").click()  # an edit: the form is refreshed
    assert p.error.text() == shown
    finished(win)


def test_roll_pitch_yaw_beyond_a_full_turn_is_refused_with_the_reason(window):
    """Item 10: `1e300, 0, 0` was taken as an undoable edit (quaternion (0.409, -0.913, 0, 0)) and the field then
    read `-131.724, 0, 0`; each angle is now within ±360° and one beyond is refused, located, nothing stored."""
    win = window("contact_sphere_drop")
    p, doc = win.properties, win.document
    win.selection.set(bodies=["ball"])
    before, undo_count = doc.mechanism.body("ball").pose, doc.undo_stack.count()
    for text, name in (("1e300, 0, 0", "roll"), ("0, -361, 0", "pitch"), ("0, 0, 720", "yaw")):
        p.body_rpy.setText(text)
        p.body_rpy.editingFinished.emit()
        assert doc.mechanism.body("ball").pose == before and doc.undo_stack.count() == undo_count
        assert p.body_rpy.error and p.body_rpy.text() == text  # the entry stays, in red
        i = doc.mechanism.body_names().index("ball")
        assert p.error.text().startswith(f"bodies[{i}].pose.orientation: {name} must be between -360 and 360 degrees"), \
            p.error.text()
    p.body_rpy.setText("-360, 0, 90")  # a full turn is taken
    p.body_rpy.editingFinished.emit()
    assert p.error.text() == "" and doc.undo_stack.count() == undo_count + 1
    assert p.body_rpy.text() == "0, 0, 90"
    finished(win)


def _type_end(win, text: str) -> None:
    """Click into the Motion dock's End box, select all, type `text`, Enter (as a user)."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    edit = win.motion.end_box.lineEdit()
    win.motion.end_box.setFocus(Qt.MouseFocusReason)
    QTest.keyClick(edit, Qt.Key_A, Qt.ControlModifier)
    QTest.keyClick(edit, Qt.Key_Delete)
    QTest.keyClicks(edit, text)
    QTest.keyClick(edit, Qt.Key_Return)


def test_the_end_box_says_why_it_refuses_a_typed_end(window, qtbot):
    """Item 8: 0, -1, 1e9, nan or abc typed in End were put back to '1 s' without a word; 100000 (1e7 steps of
    0.01 s) was taken, the Steps box showed 1000000 and the reason came only after F5. Each is now refused when it is
    typed, with the reason on the status line (in red) and on the box, and the value kept."""
    win = window("contact_sphere_drop")
    finished(win)
    m, pb = win.motion, win.playback
    token = pb.worker.token
    for text, why in (("0", "must be between 1e-09 and 1e+06 s, got 0"), ("-1", "got -1"), ("1e9", "got 1e9"),
                      ("nan", "got nan"), ("abc", "'abc' is not a number"),
                      ("100000", "100000 s in steps of 0.01 s is 1e+07 steps; the limit is 1,000,000")):
        _type_end(win, text)
        assert m.end_box.value() == 1.0 and pb.contact_end() == 1.0 and m.steps_box.value() == 100, text
        status = m.status_label.text()
        assert status.startswith("End: ") and why in status, (text, status)
        assert why in m.end_box.toolTip() and m.end_box.styleSheet()
    assert pb.worker.token == token and not pb.is_running()  # nothing re-ran
    _type_end(win, "0.5")  # a good one is taken: the red goes
    assert pb.contact_end() == 0.5 and m.steps_box.value() == 50 and not m.end_box.styleSheet()
    finished(win)
    assert m.status_label.text().startswith("51 frames")
    # an End beyond the limit by the document's dt edited after it: Steps says '> 1000000', not a wrong count
    _type_end(win, "100")
    assert pb.contact_end() == 100.0 and m.steps_box.text() == "10000"
    pb.stop()
    finished(win)
    assert win.editor.set_simulation(dt=1e-6) is None
    assert m.steps_box.text() == "> 1000000" and "the limit is 1,000,000" in m.steps_box.toolTip()
    assert win.editor.set_simulation(dt=0.01) is None
    assert m.steps_box.text() == "10000"
    pb.stop()
    finished(win)


def test_an_end_not_typed_is_refused_as_a_typed_one(window, qtbot):
    """Only a typed End was refused: the End box's arrows, Page Up or the wheel (stepBy), its setValue and the
    Playback's set_range took an End of more steps than a run may take (or out of range) without a word, Steps
    showed '> 1000000' and the reason came only at Run. Every one now goes through Playback.end_refusal."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    win = window("contact_sphere_drop")  # dt 0.01 s: the limit of 1,000,000 steps is at 10,000 s
    finished(win)
    m, pb = win.motion, win.playback
    _type_end(win, "9999.5")
    assert pb.contact_end() == 9999.5 and not m.end_box.styleSheet()
    pb.stop()
    finished(win)
    token = pb.worker.token
    QTest.keyClick(m.end_box.lineEdit(), Qt.Key_Up)  # one single step (1 s) up: 1,000,050 steps
    assert pb.contact_end() == 9999.5 and m.end_box.value() == 9999.5 and m.steps_box.text() == "999950"
    why = "10000.5 s in steps of 0.01 s is 1e+06 steps; the limit is 1,000,000"
    assert m.status_label.text().startswith(f"End: {why}") and why in m.end_box.toolTip() and m.end_box.styleSheet()
    m.end_box.setValue(20000.0)  # from code
    assert pb.contact_end() == 9999.5 and m.end_box.value() == 9999.5
    assert "20000 s in steps of 0.01 s" in m.status_label.text()
    assert pb.set_range(20000.0, 1).startswith("20000 s in steps of 0.01 s is 2e+06 steps; the limit is 1,000,000")
    assert pb.set_range(float("nan"), 1).startswith("must be between 1e-09 and 1e+06 s, got nan")
    assert pb.set_range(2e6, 1) == "must be between 1e-09 and 1e+06 s, got 2e+06"
    assert pb.contact_end() == 9999.5 and pb.worker.token == token and not pb.is_running()  # nothing re-ran
    QTest.keyClick(m.end_box.lineEdit(), Qt.Key_Down)  # a step the run can take is taken: the red goes
    assert pb.contact_end() == 9998.5 and not m.end_box.styleSheet()
    pb.stop()
    finished(win)
    # a driven mechanism: its steps are bounded too
    win.document.replace(io.load(EXAMPLES / "fourbar.json"))
    finished(win)
    assert pb.set_range(1.0, 2_000_000) == "steps must be between 1 and 1,000,000, got 2000000"
    assert (pb.t_end, pb.steps) != (1.0, 2_000_000)


def test_opening_another_document_resets_the_motion_status_at_once(window, qtbot):
    """Item 5: after opening another document the status line showed the previous one's for up to a second (a red
    'nothing to move' on a contact scene, the pile's '101 frames' and a full bar with no frame yet)."""
    win = window()
    pb, m = win.playback, win.motion
    assert pb.status_kind == "error" and "nothing to move" in m.status_label.text()
    win.document.replace(io.load(EXAMPLES / "contact_sphere_drop.json"))
    assert pb.status_kind == "busy" and "nothing to move" not in m.status_label.text(), m.status_label.text()
    finished(win)
    assert m.status_label.text().startswith("101 frames") and m.progress_bar.value() == 100
    win.document.replace(io.load(EXAMPLES / "contact_pile.json"))
    assert pb.status_kind == "busy" and not m.status_label.text().startswith("101 frames")
    assert m.progress_bar.value() == 0 and m.progress_bar.format() == ""
    finished(win)
