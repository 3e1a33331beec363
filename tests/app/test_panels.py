"""Structure and properties panels: selection sync, loop hover, validation on entry, drivers with live check."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtWidgets import QLineEdit

from app.files import EXAMPLES_DIR, prepare_loaded
from core import io, structure

pytestmark = pytest.mark.gui


@pytest.fixture
def fourbar_win(make_window):
    """A window with the four-bar example (ground, crank, coupler, rocker; joints A B C D)."""
    return make_window(prepare_loaded(io.load(EXAMPLES_DIR / "fourbar.json")))


def test_incidence_rows_and_columns_select_bodies_and_joints_both_ways(fourbar_win):
    win = fourbar_win
    table, model = win.structure.table, win.structure.model
    sm = table.selectionModel()
    # Clicking the header of row 1 is what a user does; the selection model gets the same request.
    rows = QItemSelectionModel.ClearAndSelect | QItemSelectionModel.Rows
    cols = QItemSelectionModel.ClearAndSelect | QItemSelectionModel.Columns
    # Row 1 (crank) in the table -> the body is selected in the graph.
    sm.select(model.index(1, 0), rows)
    assert win.selection.bodies == {"crank"} and win.graph.bodies["crank"].isSelected()
    # Column 2 (joint C) -> the joint.
    sm.select(model.index(0, 2), cols)
    assert win.selection.joints == {"C"} and win.selection.bodies == frozenset()
    assert win.graph.joints["C"].isSelected()
    # And back: selecting in the shared selection (the graph, the viewport) selects the row and column.
    win.selection.set(bodies=["rocker"], joints=["A"])
    assert [i.row() for i in sm.selectedRows()] == [3]
    assert [i.column() for i in sm.selectedColumns()] == [0]
    # A single "1" cell means its joint; an empty cell its body.
    sm.select(model.index(1, 1), QItemSelectionModel.ClearAndSelect)  # crank x B: 1
    assert win.selection.joints == {"B"}
    sm.select(model.index(0, 1), QItemSelectionModel.ClearAndSelect)  # ground x B: 0
    assert win.selection.bodies == {"ground"}


def test_hovering_a_loop_highlights_its_joints(fourbar_win):
    win = fourbar_win
    rep = structure.analyze(win.document.mechanism)
    assert win.structure.loops.count() == rep.loops == 1
    item = win.structure.loops.item(0)
    win.structure.loops.itemEntered.emit(item)
    assert win.selection.highlighted_joints == {"A", "B", "C", "D"}
    assert all(win.graph.joints[j].highlighted for j in "ABCD")
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    QApplication.sendEvent(win.structure.loops.viewport(), QEvent(QEvent.Leave))
    assert win.selection.highlighted_joints == frozenset()


def test_warnings_and_chain_follow_edits(fourbar_win):
    win = fourbar_win
    assert win.structure.chain.text().startswith("closed")
    win.editor.toggle_ground(["ground"])  # no ground any more
    texts = [win.structure.warnings.item(i).text() for i in range(win.structure.warnings.count())]
    assert texts == structure.analyze(win.document.mechanism).warnings
    assert any("no ground" in t for t in texts)


def test_bad_number_is_red_with_the_reason_and_not_applied(fourbar_win, qtbot):
    win = fourbar_win
    win.selection.set(bodies=["rocker"])
    p = win.properties
    assert p.pages.currentIndex() == 1 and p.body_mass.text() == "0.4"
    n = win.document.undo_stack.count()
    p.body_mass.setText("heavy")
    p.body_mass.editingFinished.emit()
    i = win.document.mechanism.body_names().index("rocker")
    assert p.body_mass.error.startswith(f"bodies[{i}].mass: 'heavy' is not a number (numbers are decimal")
    assert "c62828" in p.body_mass.styleSheet()
    assert "mass" in p.error.text() and "not a number" in p.error.text()
    assert win.document.mechanism.body("rocker").mass == 0.4 and win.document.undo_stack.count() == n
    # Another edit elsewhere refreshes the panel, but the refused entry is not lost.
    win.editor.move({"crank": (5.0, 5.0)})
    assert p.body_mass.text() == "heavy"
    # The core refuses a negative mass: shown the same way.
    p.body_mass.setText("-2")
    p.body_mass.editingFinished.emit()
    assert "positive" in p.body_mass.error and win.document.mechanism.body("rocker").mass == 0.4
    p.body_mass.setText("1.25")
    p.body_mass.editingFinished.emit()
    assert p.body_mass.error == "" and p.body_mass.styleSheet() == ""
    assert win.document.mechanism.body("rocker").mass == 1.25
    win.document.undo_stack.undo()
    assert win.document.mechanism.body("rocker").mass == 0.4 and p.body_mass.text() == "0.4"


def test_a_renamed_item_stays_selected_through_undo_and_redo(fourbar_win):
    """Rename joint C to C2 in Properties, undo, redo: C (then C2) stays selected and Properties keeps showing it
    (undo had cleared the selection: Properties jumped to the document's page)."""
    win = fourbar_win
    win.selection.set(joints=["C"])
    p = win.properties
    p.joint_name.setText("C2")
    p.joint_name.editingFinished.emit()
    assert win.selection.joints == {"C2"} and p.pages.currentIndex() == 2 and p.joint_name.text() == "C2"
    win.document.undo_stack.undo()
    assert "C" in win.document.mechanism.joint_names()
    assert win.selection.joints == {"C"} and p.pages.currentIndex() == 2 and p.joint_name.text() == "C"
    win.document.undo_stack.redo()
    assert win.selection.joints == {"C2"} and p.joint_name.text() == "C2"
    # a body too, and an item renamed while not selected leaves the selection as it is
    win.selection.set(bodies=["rocker"])
    assert win.editor.rename("coupler", "link") is None
    assert win.selection.bodies == {"rocker"}
    assert win.editor.rename("rocker", "lever") is None and win.selection.bodies == {"lever"}
    win.document.undo_stack.undo()
    assert win.selection.bodies == {"rocker"}


def test_an_entry_that_changes_nothing_shows_the_model_value(fourbar_win):
    """A name typed with a trailing space ('C ') or a number typed another way ('0.50') is the value the model has:
    no edit, no undo step, and the field then shows the model's text, not what was typed."""
    win = fourbar_win
    win.selection.set(joints=["C"])
    p = win.properties
    p.joint_name.setText("C ")
    p.joint_name.editingFinished.emit()
    assert p.joint_name.text() == "C" and win.document.undo_stack.count() == 0
    win.selection.set(bodies=["coupler"])
    assert win.editor.update_body("coupler", mass=0.5) is None and win.document.undo_stack.count() == 1
    assert p.body_mass.text() == "0.5"
    p.body_mass.setText("0.50")  # the same number written another way
    p.body_mass.editingFinished.emit()
    assert p.body_mass.text() == "0.5" and win.document.undo_stack.count() == 1


def test_a_type_change_that_the_given_axis_does_not_fit_takes_the_types_default_axis(fourbar_win):
    """The four-bar example's joint D has axis [0, 0, 1] (a revolute's, in a planar document): making it prismatic
    or a slot takes the new type's default axis (x) in the same undo step instead of being refused."""
    win = fourbar_win
    m = win.document.mechanism
    assert m.space == "planar" and m.joint("D").axis == (0.0, 0.0, 1.0)
    assert win.editor.update_joint("D", type="prismatic") is None
    assert m.joint("D").type == "prismatic" and m.joint("D").axis is None and m.joint("D").axis_vector() == (1.0, 0.0, 0.0)
    win.document.undo_stack.undo()  # one step: type and axis back
    assert m.joint("D").type == "revolute" and m.joint("D").axis == (0.0, 0.0, 1.0)
    # an axis the new type can take is kept; one given with the change is the user's (refused if it does not fit)
    assert win.editor.update_joint("D", type="prismatic", axis=(0.0, 0.0, 1.0)) is not None
    assert m.joint("D").type == "revolute"


def test_joint_fields_edit_through_commands(fourbar_win):
    win = fourbar_win
    win.selection.set(joints=["B"])
    p = win.properties
    assert p.pages.currentIndex() == 2 and p.joint_at.text() == "0.5, 0.866, 0"
    p.joint_at.setText("0.5 0.9")
    p.joint_at.editingFinished.emit()
    assert "three numbers" in p.joint_at.error
    p.joint_at.setText("0.5, 0.9, 0")
    p.joint_at.editingFinished.emit()
    assert win.document.mechanism.joint("B").at == (0.5, 0.9, 0.0)
    # A spatial axis is refused in a planar document (the core's rule), the entry stays red.
    p.joint_axis.setText("1, 0, 0")
    p.joint_axis.editingFinished.emit()
    assert "along z" in p.joint_axis.error and win.document.mechanism.joint("B").axis is None
    # Type change through the combo is one undoable command; the edge letter follows.
    idx = p.joint_type.findData("prismatic")
    p.joint_type.setCurrentIndex(idx)
    p.joint_type.activated.emit(idx)
    assert win.document.mechanism.joint("B").type == "prismatic" and win.graph.joints["B"].letter == "P"
    win.document.undo_stack.undo()
    assert win.document.mechanism.joint("B").type == "revolute" and win.graph.joints["B"].letter == "R"


def test_driver_expression_live_syntax_check_and_commit(fourbar_win, qtbot):
    win = fourbar_win
    p = win.properties
    table, model = p.driver_table, p.drivers
    assert model.rowCount() == 1 and model.data(model.index(0, 2)) == "2*pi*t"
    idx = model.index(0, 2)
    table.setCurrentIndex(idx)
    table.edit(idx)
    ed = table.findChild(QLineEdit)
    assert ed is not None and ed.text() == "2*pi*t"
    qtbot.keyClick(ed, Qt.Key_End)
    qtbot.keyClicks(ed, "+")  # "2*pi*t+" is incomplete
    assert "syntax error" in p.driver_check.text() and "c62828" in ed.styleSheet()
    qtbot.keyClicks(ed, "sin(t)")
    assert p.driver_check.text().startswith("✓") and ed.styleSheet() == ""
    qtbot.keyClick(ed, Qt.Key_Return)  # the delegate commits on the next event-loop turn
    qtbot.waitUntil(lambda: win.document.mechanism.drivers[0].value == "2*pi*t+sin(t)", timeout=2000)
    # Committing a bad expression is refused: the cell keeps the text, drawn red, with the reason.
    assert not model.setData(idx, "2*t +* ")
    assert model.data(idx) == "2*t +* " and model.data(idx, Qt.BackgroundRole) is not None
    assert "not applied" in model.data(idx, Qt.ToolTipRole)
    assert win.document.mechanism.drivers[0].value == "2*pi*t+sin(t)"
    # Names outside the whitelist are refused too (never evaluated).
    assert not model.setData(idx, "__import__('os')")
    assert win.document.mechanism.drivers[0].value == "2*pi*t+sin(t)"


def test_add_and_remove_driver(fourbar_win):
    win = fourbar_win
    win.selection.set(joints=["D"])
    win.action_set.add_driver.trigger()
    m = win.document.mechanism
    assert [(d.joint, d.value) for d in m.drivers] == [("A", "2*pi*t"), ("D", "t")]
    assert "2 drivers" in win.structure.summary.text()
    assert "1 too many" in win.status.drivers.text()
    win.properties.driver_table.selectRow(1)
    win.properties._remove_driver()
    assert [d.joint for d in win.document.mechanism.drivers] == ["A"]
    assert "fully driven" in win.status.drivers.text()


def test_about_lists_versions_and_the_gl_renderer(fourbar_win, dialogs, qtbot):
    import numpy as np
    import PySide6
    from PySide6.QtCore import qVersion

    win = fourbar_win
    qtbot.waitUntil(lambda: bool(win.viewport.renderer_info()), timeout=5000)
    text = win.about_text()
    assert qVersion() in text and PySide6.__version__ in text and np.__version__ in text
    assert win.viewport.renderer_info() in text
    win.about()
    assert dialogs.kinds()[-1] == "about"


def test_status_bar_shows_mobility_and_messages(fourbar_win):
    win = fourbar_win
    assert "M = 1" in win.status.mobility.text()
    win.editor.add_body((0.0, 0.0))
    assert win.statusBar().currentMessage() == "Add body body1"
    win.editor.connect("body1", "body1")
    assert "two different bodies" in win.statusBar().currentMessage()


def test_the_status_bar_says_what_undo_and_redo_did_not_the_undone_edit(fourbar_win, qtbot):
    """After every edit had been undone back to the saved document the status bar still said 'Add driver of B' (the
    undone edit's own message, shown for 8 s): Undo and Redo (the actions, as the menu, toolbar and Ctrl+Z run them)
    say what they did, and that the document is as saved once it is."""
    win = fourbar_win
    bar, undo, redo = win.statusBar(), win.action_set.undo, win.action_set.redo
    win.editor.rename("coupler", "link")
    win.editor.add_driver("B")
    assert bar.currentMessage() == "Add driver of B" and win.document.modified
    undo.trigger()
    assert bar.currentMessage() == "Undid: Add driver of B"
    qtbot.keyClick(win.graph, Qt.Key_Z, Qt.ControlModifier)
    assert bar.currentMessage() == "Undid: Rename body coupler to link — no unsaved changes"
    assert not win.document.modified
    redo.trigger()
    assert bar.currentMessage() == "Redid: Rename body coupler to link" and win.document.modified
    redo.trigger()
    assert bar.currentMessage() == "Redid: Add driver of B"


def test_status_bar_calls_the_freedoms_of_free_bodies_with_mass_free_dynamics(make_window):
    """A contact scene of free bodies (the pile: five shaped bodies with mass, no joints) has 6 freedoms a body, moved
    by gravity and contact: 'free (dynamics)', as a jointed dynamics document's undriven freedoms are."""
    win = make_window(prepare_loaded(io.load(EXAMPLES_DIR / "contact_pile.json")))
    assert "DOF 30 · drivers 0" in win.status.drivers.text() and "30 free (dynamics)" in win.status.drivers.text()


def test_named_points_are_edited_with_validation(fourbar_win):
    win = fourbar_win
    win.selection.set(bodies=["coupler"])
    p = win.properties
    assert p.points.rowCount() == 1 and p.points.item(0, 0).text() == "P"
    p._add_point()
    assert list(win.document.mechanism.body("coupler").points) == ["P", "P1"]
    assert p.points.rowCount() == 2
    p.points.item(1, 1).setText("1, two, 3")  # itemChanged -> parsed -> refused
    assert "not a number" in p.error.text() and win.document.mechanism.body("coupler").points["P1"] == (0.0, 0.0, 0.0)
    assert p.points.item(1, 1).text() == "1, two, 3"  # the entry stays, marked
    p.points.item(1, 1).setText("1, 2, 3")
    assert win.document.mechanism.body("coupler").points["P1"] == (1.0, 2.0, 3.0) and p.error.text() == ""
    win.document.undo_stack.undo()
    assert win.document.mechanism.body("coupler").points["P1"] == (0.0, 0.0, 0.0)


def test_a_refused_point_entry_does_not_block_editing_another_point(fourbar_win):
    win = fourbar_win
    win.selection.set(bodies=["coupler"])
    p = win.properties
    p._add_point()
    p.points.item(1, 1).setText("1, two, 3")  # refused, stays shown in red
    p.points.item(0, 1).setText("2, 3, 0")  # another row: taken from the model, applied
    pts = win.document.mechanism.body("coupler").points
    assert pts == {"P": (2.0, 3.0, 0.0), "P1": (0.0, 0.0, 0.0)} and p.error.text() == ""
    p.points.item(1, 0).setText("P")  # renaming P1 to an existing name is refused with the reason
    assert "duplicate point name 'P'" in p.error.text()
    assert list(win.document.mechanism.body("coupler").points) == ["P", "P1"]
    p.points.item(1, 0).setText("tip")
    assert list(win.document.mechanism.body("coupler").points) == ["P", "tip"]


def test_joint_body_combos_change_one_end_and_refusals_restore_the_model(fourbar_win):
    win = fourbar_win
    win.selection.set(joints=["B"])  # B joins crank and coupler
    p = win.properties
    i = p.joint_b.findText("rocker")
    p.joint_b.setCurrentIndex(i)
    p.joint_b.activated.emit(i)
    assert win.document.mechanism.joint("B").bodies == ("crank", "rocker")
    # Choosing the same body for both ends is refused by the core: the combo shows the model again, with the reason.
    i = p.joint_a.findText("rocker")
    p.joint_a.setCurrentIndex(i)
    p.joint_a.activated.emit(i)
    assert win.document.mechanism.joint("B").bodies == ("crank", "rocker")
    assert p.joint_a.currentText() == "crank" and "itself" in p.error.text()
    win.document.undo_stack.undo()
    assert win.document.mechanism.joint("B").bodies == ("crank", "coupler")


def test_changing_a_joint_to_helical_gives_it_a_pitch_and_the_file_reopens(make_window, tmp_path):
    from app.editing import DEFAULT_PITCH

    win = make_window(prepare_loaded(io.load(EXAMPLES_DIR / "rssr.json")))  # spatial: helical is offered
    win.selection.set(joints=["A"])
    p = win.properties
    idx = p.joint_type.findData("helical")
    assert idx >= 0
    p.joint_type.setCurrentIndex(idx)
    p.joint_type.activated.emit(idx)
    j = win.document.mechanism.joint("A")
    assert j.type == "helical" and j.pitch == DEFAULT_PITCH and p.joint_pitch.isEnabled()
    win.files.write(tmp_path / "h.json")
    assert io.load(tmp_path / "h.json") == win.document.mechanism
    # Clearing the pitch of a helical joint is refused with the reason, not saved as a file that cannot load.
    p.joint_pitch.setText("")
    p.joint_pitch.editingFinished.emit()
    assert "needs a pitch" in p.joint_pitch.error and win.document.mechanism.joint("A").pitch == DEFAULT_PITCH


def test_a_refused_driver_entry_stays_with_its_driver_when_a_row_above_goes(make_window):
    """Drivers A, B, D; a refused expression typed on B's row, then A's driver removed: the red entry moved to D's
    row (it was kept by row number), and undo moved it back.  It belongs to B's driver."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    from app.files import EXAMPLES_DIR, prepare_loaded
    from core import io as _io

    win = make_window(prepare_loaded(_io.load(EXAMPLES_DIR / "fourbar.json")))
    ed, p = win.editor, win.properties
    ed.add_driver("B")
    ed.add_driver("D")
    model = p.drivers
    assert not model.setData(model.index(1, 2), "3*t +* ")  # refused on B's row

    def shown():
        return {model.data(model.index(r, 0)): (model.data(model.index(r, 2)),
                                                model.data(model.index(r, 2), Qt.BackgroundRole) is not None)
                for r in range(model.rowCount())}

    assert shown()["B"] == ("3*t +* ", True) and shown()["D"] == ("t", False)
    p.driver_table.selectRow(0)
    p._remove_driver()
    QApplication.processEvents()
    assert set(shown()) == {"B", "D"}
    assert shown()["B"] == ("3*t +* ", True) and shown()["D"] == ("t", False)
    win.document.undo_stack.undo()
    QApplication.processEvents()
    assert shown()["A"][1] is False and shown()["B"] == ("3*t +* ", True) and shown()["D"] == ("t", False)


def test_long_names_do_not_widen_the_window_or_fill_the_matrix(make_window, qtbot):
    """A 158-character body name (the limit is 200) in the Properties title made the window 2263 px wide, and a long
    body name in the incidence matrix's row header pushed every joint column out of view: both are shortened with
    "…", the whole name in the tooltip."""
    from PySide6.QtCore import Qt as _Qt

    from app.panels.structure import BODY_HEADER_CHARS

    win = make_window(prepare_loaded(io.load(EXAMPLES_DIR / "fourbar.json")))
    win.resize(1440, 900)
    win.show()
    qtbot.waitExposed(win)
    width = win.width()
    long = "rocker_" + "x" * 151
    assert win.editor.rename("rocker", long) is None
    win.selection.set(bodies=[long])
    qtbot.wait(50)
    title = win.properties.title
    assert title.text().startswith("Body “rocker_") and "…" in title.text() and title.toolTip() == long
    assert win.width() == width
    model = win.structure.model
    row = win.document.mechanism.body_names().index(long)
    shown = model.headerData(row, _Qt.Vertical, _Qt.DisplayRole)
    assert shown.startswith("rocker_") and "…" in shown and len(shown.split("  (")[0]) == BODY_HEADER_CHARS
    assert long in model.headerData(row, _Qt.Vertical, _Qt.ToolTipRole)


def test_a_title_wider_than_the_dock_is_elided_with_the_whole_name_in_the_tooltip(make_window, qtbot):
    """At the default window size the pile's title read 'Document “Small pile of mixed shapes in a' (cut mid-word by
    the dock's edge, no ellipsis, no tooltip): the name is elided with "…" to the width the title has (its closing
    quote kept), the whole name in the tooltip; with room enough the title is whole again."""
    win = make_window(prepare_loaded(io.load(EXAMPLES_DIR / "contact_pile.json")))
    win.resize(1440, 900)
    win.show()
    qtbot.waitExposed(win)
    qtbot.wait(50)
    title, name = win.properties.title, win.document.mechanism.name
    assert name == "Small pile of mixed shapes in a box"
    room = title.contentsRect().width()
    assert title.fontMetrics().horizontalAdvance(f"Document “{name}”") > room  # (the dock is too narrow for it)
    text = title.text()
    assert text.startswith("Document “Small pile") and text.endswith("…”"), text
    assert title.fontMetrics().horizontalAdvance(text) <= room  # all of it shown
    assert title.toolTip() == name
    win.resizeDocks([win.dock_properties], [900], Qt.Horizontal)  # the user widens the dock
    qtbot.waitUntil(lambda: title.text() == f"Document “{name}”", timeout=3000)
    assert title.toolTip() == ""


def test_removing_several_drivers_is_one_undo_step(make_window):
    """Three driver rows selected and removed: one Ctrl+Z brings all three back (it brought back one)."""
    from PySide6.QtCore import QItemSelectionModel as _Sel

    win = make_window(prepare_loaded(io.load(EXAMPLES_DIR / "fourbar.json")))
    win.editor.add_driver("B")
    win.editor.add_driver("D")
    before = [(d.joint, d.value) for d in win.document.mechanism.drivers]
    assert len(before) == 3
    p = win.properties
    sel = p.driver_table.selectionModel()
    for r in range(3):
        sel.select(p.drivers.index(r, 0), _Sel.Select | _Sel.Rows)
    p._remove_driver()
    assert win.document.mechanism.drivers == []
    win.document.undo_stack.undo()
    assert [(d.joint, d.value) for d in win.document.mechanism.drivers] == before


def test_editing_one_component_of_a_field_keeps_the_others_exactly(make_window):
    """A vector is entered whole: the field must show the stored values as they read back, or changing one component
    silently rounds the others to the six significant digits shown (C's x 3.3310434 became 3.33104 when its y was
    edited)."""
    from dataclasses import replace

    mech = prepare_loaded(io.load(EXAMPLES_DIR / "fourbar.json"))
    mech.joints[2] = replace(mech.joints[2], at=(3.3310434, 2.9239523, 0.0))  # a designer's exact closure
    win = make_window(mech)
    win.selection.set(joints=["C"])
    p = win.properties
    x, y, z = (float(v) for v in p.joint_at.text().split(","))
    assert (x, y, z) == (3.3310434, 2.9239523, 0.0)
    p.joint_at.setText(f"{p.joint_at.text().split(',')[0]}, 2.95, 0")
    p.joint_at.editingFinished.emit()
    assert p.joint_at.error == "" and win.document.mechanism.joint("C").at == (3.3310434, 2.95, 0.0)
    # every number the examples store reads back from its field as stored (an inertia of slender rods here)
    path = EXAMPLES_DIR / "contact_fourbar_swing.json"
    win.files.open_path(path, ask=False)
    win.selection.set(bodies=["coupler"])
    I = io.load(path).body("coupler").inertia
    shown = [float(v) for v in p.body_inertia.text().split(",")]
    assert shown == [I[0][0], I[1][1], I[2][2], I[0][1], I[0][2], I[1][2]]
    assert p.body_mass.text() == "0.5"  # a value six digits give exactly is shown as it is typed


def test_retyping_the_model_value_after_a_refused_entry_is_no_undo_step(fourbar_win):
    """A mistyped field corrected back to the value the model has changes nothing: it must not leave an undo step
    that does nothing (Ctrl+Z seemed not to work) nor mark the saved document modified (the title's *)."""
    win = fourbar_win
    p, stack = win.properties, win.document.undo_stack
    assert not win.document.modified
    cases = [
        ({"bodies": ["rocker"]}, p.body_mass, "heavy", "0.4"),
        ({"joints": ["C"]}, p.joint_at, "3.331, 2.924", "3.331, 2.924, 0"),
        ({"joints": ["C"]}, p.joint_name, "", "C"),
        ({}, p.doc_gravity, "0, -9.81", "0, -9.81, 0"),
    ]
    for selected, field, bad, same in cases:
        win.selection.set(**selected)
        before = stack.index()
        field.setText(bad)
        field.editingFinished.emit()
        assert field.error, bad
        field.setText(same)  # (the value shown before the mistake: the model's)
        field.editingFinished.emit()
        assert field.error == "" and field.styleSheet() == ""
        assert stack.index() == before and not win.document.modified, same
    # a real change after that is still one step
    win.selection.set(bodies=["rocker"])
    p.body_mass.setText("0.5")
    p.body_mass.editingFinished.emit()
    assert win.document.mechanism.body("rocker").mass == 0.5 and stack.index() == 1


def test_add_driver_on_a_joint_it_cannot_drive_says_why(fourbar_win):
    """Add Driver with one joint selected drives that joint: when it cannot, the status bar names the joint and why
    (a fixed joint has no coordinate; a driven revolute has no free one), not 'Every joint coordinate is driven
    already' while B, C and D have none."""
    win = fourbar_win
    messages = []
    win.editor.message.connect(messages.append)
    win.selection.set(joints=["A"])  # driven by 2*pi*t
    win.action_set.add_driver.trigger()
    assert messages[-1] == "Every coordinate of joint A is driven already"
    assert win.editor.update_joint("B", type="fixed") is None
    win.selection.set(joints=["B"])
    win.action_set.add_driver.trigger()
    assert messages[-1] == "Joint B is fixed: it has no coordinate to drive"
    assert len(win.document.mechanism.drivers) == 1
    win.selection.clear()
    win.action_set.add_driver.trigger()  # nothing selected: the first undriven coordinate (C's)
    assert [d.joint for d in win.document.mechanism.drivers] == ["A", "C"]


def test_the_toolbars_undo_button_keeps_its_width_and_run_and_stop_stay_visible(fourbar_win, qtbot):
    """The Undo action's text names the edit ('Undo Add driver of D'); the toolbar button says 'Undo' (the edit is
    in its tooltip), so that a long edit name does not push Run and Stop behind the toolbar's overflow arrow."""
    win = fourbar_win
    win.resize(1440, 900)
    qtbot.wait(50)
    tb, a = win.toolbar, win.action_set
    win.selection.set(joints=["D"])
    a.add_driver.trigger()
    assert win.editor.rename("coupler", "coupler_with_a_longer_name") is None
    qtbot.wait(50)
    for act in (a.run, a.stop):
        assert tb.widgetForAction(act).isVisible(), act.text()
    assert a.undo.text() == "&Undo Rename body coupler to coupler_with_a_longer_name"  # (the Edit menu's item)
    button = tb.widgetForAction(a.undo)
    assert button.text() == "Undo" and "coupler_with_a_longer_name" in a.undo.toolTip()
    win.document.undo_stack.undo()
    assert tb.widgetForAction(a.redo).text() == "Redo" and a.redo.toolTip().startswith("Redo ")
    win.document.undo_stack.undo()
    win.document.undo_stack.undo()
    assert a.undo.toolTip() == "Undo (Ctrl+Z)"


def test_the_document_name_may_be_cleared_as_a_file_may_have_it_empty(make_window, tmp_path):
    """A file whose name is "" loads; typing an empty document name was refused ('a name must not be empty'). The
    document name is a display title (text, like the description), not a name joints refer to: clearing the field
    clears it, in one undo step, the file is saved with "name": "" and reopens so, and the window title and the
    panel's title leave out the empty name."""
    win = make_window(prepare_loaded(io.load(EXAMPLES_DIR / "fourbar.json")))
    win.selection.set()
    p, stack = win.properties, win.document.undo_stack
    p.doc_name.setText("  ")
    p.doc_name.editingFinished.emit()
    assert p.doc_name.error == "" and p.error.text() == ""
    assert win.document.mechanism.name == "" and stack.count() == 1
    assert p.title.text() == "Document" and win.windowTitle() == "Untitled[*] — Linkwright"
    path = tmp_path / "unnamed.json"
    io.save(win.document.mechanism, path)
    assert io.load(path).name == ""
    stack.undo()
    assert win.document.mechanism.name == "Crank-rocker four-bar" and p.doc_name.text() == "Crank-rocker four-bar"
    # the loaded empty name is shown as it is, and typing a name again is one step
    win2 = make_window(prepare_loaded(io.load(path)))
    win2.selection.set()
    assert win2.properties.doc_name.text() == "" and win2.properties.title.text() == "Document"
    win2.properties.doc_name.setText("Four-bar")
    win2.properties.doc_name.editingFinished.emit()
    assert win2.document.mechanism.name == "Four-bar" and win2.properties.title.text() == "Document “Four-bar”"


def test_the_structure_panel_judges_the_drivers_by_the_rank_based_count(make_window, qtbot):
    """The RSSR with its one driver: the status bar said 'fully driven' (rank-based, the coupler's spin idle) while the
    Structure panel listed the Gruebler count's 'the motion is not fully determined (unless the rest are idle
    freedoms ...)'. Once the rank-based count is known the panel's driver warning is that count's (none here)."""
    win = make_window(prepare_loaded(io.load(EXAMPLES_DIR / "rssr.json")))
    qtbot.waitUntil(lambda: win.structure.rank is not None, timeout=30000)
    texts = [win.structure.warnings.item(i).text() for i in range(win.structure.warnings.count())]
    assert texts == [] and "fully driven" in win.status.drivers.text()
    # without its driver: the driver check's words, from the same count (the geometry is the same: no new analysis)
    assert win.editor.remove_driver(0) is None
    texts = [win.structure.warnings.item(i).text() for i in range(win.structure.warnings.count())]
    assert texts == ["the mechanism has 1 degree(s) of freedom (rank-based, 1 idle freedom(s) set aside) but 0 "
                     "driver(s) are given: add 1 driver(s) so the motion is determined"]


def test_the_status_bar_and_the_driver_check_count_a_floating_part_alike(make_window, qtbot):
    """The four-bar with a pair of bodies pinned to each other and to nothing else: that part's three planar
    rigid-body freedoms are real (DOF 1 + 1 + 3 = 5, the rank-based mobility) but no joint's coordinates, so no driver
    fixes them. The status bar said 'DOF 5 · drivers 1 — 4 undriven' where the driver check said 'the mechanism has 2
    degree(s) of freedom ... add 1 driver(s)'; both now count 5, 3 of them floating, and ask for 1 driver more."""
    from core.model import Body, Joint

    mech = io.load(EXAMPLES_DIR / "fourbar.json")
    mech.add_body(Body("a"))
    mech.add_body(Body("b"))
    mech.add_joint(Joint("F", "revolute", ("a", "b"), at=(6.0, 0.0, 0.0)))
    win = make_window(prepare_loaded(mech))
    qtbot.waitUntil(lambda: win.status.rank is not None, timeout=30000)
    status = win.status.drivers.text()
    assert status.startswith("DOF 5 · drivers 1") and "1 undriven, 3 floating" in status
    assert (win.status.rank.effective, win.status.rank.floating_freedoms, win.status.rank.freedoms_to_drive) == (5, 3, 2)
    check = ("the mechanism has 5 degree(s) of freedom (rank-based, 3 of them floating: of parts not attached to the "
             "ground, which no driver fixes) but 1 driver(s) are given: add 1 driver(s) so the motion is determined")
    qtbot.waitUntil(lambda: win.motion.status_label.text() == f"drivers: {check}", timeout=8000)
    warnings = [win.structure.warnings.item(i).text() for i in range(win.structure.warnings.count())]
    assert check in warnings
    # the one driver more that the check asks for: nothing left to drive, the floating part's freedoms stay
    assert win.editor.add_driver("F") is None
    status = win.status.drivers.text()
    assert status.startswith("DOF 5 · drivers 2") and "3 floating" in status and "undriven" not in status
    warnings = [win.structure.warnings.item(i).text() for i in range(win.structure.warnings.count())]
    assert not any("driver(s)" in w for w in warnings)



def test_the_mobility_colour_judges_the_drivers_as_the_driver_check_does(make_window, qtbot):
    """`M = …` was coloured by the Gruebler count alone: the RSSR with its one driver (M = 2, one of them the
    coupler's idle spin) and a four-bar with a floating part and two drivers (M = 5, 3 of them floating) were drawn
    blue, under-driven, where the driver check and the status bar find them fully driven. The colour now follows the
    rank-based count once it has arrived (drivers == freedoms_to_drive: determined, green), the Gruebler count until
    then; the text stays the Gruebler count and the tooltip says which count the colour judges by."""
    from app.panels.structure import MOBILITY_COLOURS
    from core.model import Body, Joint

    def colour(panel) -> str:
        return panel.mobility.styleSheet()

    win = make_window(prepare_loaded(io.load(EXAMPLES_DIR / "rssr.json")))
    panel = win.structure
    qtbot.waitUntil(lambda: panel.rank is not None, timeout=30000)
    assert panel.rank.freedoms_to_drive == 1 and "fully driven" in win.status.drivers.text()
    assert panel.mobility.text() == "M = 2"  # the Gruebler count, next to its formula
    assert panel.driver_state == "determined" and MOBILITY_COLOURS["determined"] in colour(panel)
    assert "rank-based" in panel.mobility.toolTip() and "determined" in panel.mobility.toolTip()
    # without a rank-based count (none is coming: its analysis failed, or no run computes it) the Gruebler count
    # judges: 1 driver for 2; while one is being computed the drivers are not judged
    rank = panel.rank
    panel.set_rank_mobility(None)
    assert panel.driver_state == "undriven" and MOBILITY_COLOURS["undriven"] in colour(panel)
    assert "not being known for this geometry" in panel.mobility.toolTip()
    panel.set_rank_mobility(None, pending=True)
    assert panel.driver_state == "checking" and MOBILITY_COLOURS["checking"] in colour(panel)
    assert "is being computed" in panel.mobility.toolTip()
    panel.set_rank_mobility(rank)
    assert panel.driver_state == "determined"
    # truly under-driven: without its driver the rank-based count still needs 1
    assert win.editor.remove_driver(0) is None
    assert panel.rank is rank  # (the same geometry: no new analysis)
    assert panel.driver_state == "undriven" and MOBILITY_COLOURS["undriven"] in colour(panel)
    assert MOBILITY_COLOURS["determined"] not in colour(panel)

    # a floating part: its 3 freedoms are no driver's to fix; 1 driver leaves one undriven, 2 determine the motion
    mech = io.load(EXAMPLES_DIR / "fourbar.json")
    mech.add_body(Body("a"))
    mech.add_body(Body("b"))
    mech.add_joint(Joint("F", "revolute", ("a", "b"), at=(6.0, 0.0, 0.0)))
    win2 = make_window(prepare_loaded(mech))
    panel2 = win2.structure
    qtbot.waitUntil(lambda: panel2.rank is not None, timeout=30000)
    assert panel2.mobility.text() == "M = 5" and panel2.driver_state == "undriven"
    assert "3 of them floating" in panel2.mobility.toolTip()
    assert win2.editor.add_driver("F") is None
    assert panel2.driver_state == "determined" and MOBILITY_COLOURS["determined"] in colour(panel2)


def _colour(label) -> str:
    return label.styleSheet()


def _warnings(panel) -> list[str]:
    return [panel.warnings.item(i).text() for i in range(panel.warnings.count())]


def _spatial_rrrr():
    """A spatial four-bar of revolutes (contact_fourbar_swing's, its pins along y: a planar loop in space) as a driven
    kinematics document: Gruebler–Kutzbach counts M = 6·3 − 4·5 = −2, the rank-based count 1 freedom to drive."""
    from core.model import Driver

    mech = io.load(EXAMPLES_DIR / "contact_fourbar_swing.json")
    mech.set_properties(simulation=None)
    mech.add_driver(Driver("A", "2*pi*t"))
    return mech


def test_the_drivers_are_not_judged_while_the_rank_based_count_is_computed(make_window, qtbot, tmp_path):
    """A spatial four-bar of revolutes counts M = −2 (no freedom: red, 'structure') by Gruebler–Kutzbach and has 1 by
    the rank of its loop equations, so with its one driver it is fully driven. The rank-based count arrives from the
    run's thread a moment after the file is opened or the geometry edited: until then `M = …` was red and the status
    bar said 'structure', then both turned green. While it is pending they now say nothing about the drivers (grey,
    'checking…'), and judge them once it has arrived."""
    from app.panels.structure import MOBILITY_COLOURS

    red, green = MOBILITY_COLOURS["structure"], MOBILITY_COLOURS["determined"]
    win = make_window(prepare_loaded(io.load(EXAMPLES_DIR / "fourbar.json")))
    panel, status = win.structure, win.status
    qtbot.waitUntil(lambda: panel.rank is not None, timeout=30000)
    assert panel.driver_state == "determined"

    path = tmp_path / "rrrr.json"
    io.save(_spatial_rrrr(), path)
    assert win.files.open_path(path, ask=False)
    # the same event-loop turn as the open: the rank-based count is being computed (its result is a queued signal)
    rep = win.document.structure()
    assert rep.mobility == -2 and panel.mobility.text() == "M = -2" and win.playback.kind == "kinematics"
    assert panel.rank is None and red not in _colour(panel.mobility) and panel.driver_state != "structure"
    assert red not in status.drivers.text() and "structure" not in status.drivers.text()
    assert panel.driver_state == "checking" and MOBILITY_COLOURS["checking"] in _colour(panel.mobility)
    assert "is being computed" in panel.mobility.toolTip() and panel.rank_pending and status.rank_pending
    assert "checking…" in status.drivers.text() and "being computed" in status.drivers.toolTip()
    assert not any("driver(s)" in w for w in _warnings(panel))  # nor the Gruebler count's driver warning
    qtbot.waitUntil(lambda: panel.rank is not None, timeout=30000)
    assert panel.rank.freedoms_to_drive == 1 and not panel.rank_pending and not status.rank_pending
    assert panel.driver_state == "determined" and green in _colour(panel.mobility)
    assert "fully driven" in status.drivers.text() and status.drivers.text().startswith("DOF 1 · drivers 1")

    # an edit of the geometry (C moved in the loop's plane): while the new geometry's count is computed the views
    # keep the last count's verdict (no grey at every edit of a point), and judge by the new count once it arrives
    held = panel.rank
    x, y, z = win.document.mechanism.joint("C").at
    assert win.editor.update_joint("C", at=(x + 0.01, y, z)) is None
    assert win.playback.mobility is None and panel.rank is held and status.rank is held
    assert panel.driver_state == "determined" and green in _colour(panel.mobility) and "fully driven" in status.drivers.text()
    qtbot.waitUntil(lambda: win.playback.mobility is not None, timeout=30000)
    assert panel.rank is win.playback.mobility and panel.rank is not held
    assert panel.driver_state == "determined" and green in _colour(panel.mobility)
    assert "fully driven" in status.drivers.text()
    # C's pin turned out of parallel with the others: the loop is no longer a planar one in space, its rank-based
    # count has no freedom (a structure). The held verdict stays until that count arrives, then the views say so
    assert win.editor.update_joint("C", axis=(0.3, 1.0, 0.0)) is None
    assert panel.driver_state == "determined"
    qtbot.waitUntil(lambda: win.playback.mobility is not None, timeout=30000)
    assert panel.rank.freedoms_to_drive == 0 and panel.driver_state == "structure" and red in _colour(panel.mobility)

    # the parts feeder (a spatial RRRR tray with a free part on it) counts M = 4, 6 of them the part's floating
    # freedoms: -2 for the one driver, which the rank-based count finds fully driven
    assert win.files.open_example(EXAMPLES_DIR / "contact_parts_feeder.json")
    assert win.playback.kind == "contact" and panel.rank_pending
    assert panel.driver_state == "checking" and red not in _colour(panel.mobility)
    assert "checking…" in status.drivers.text()
    qtbot.waitUntil(lambda: panel.rank is not None, timeout=30000)
    assert panel.driver_state == "determined" and green in _colour(panel.mobility)


def test_without_a_rank_based_count_coming_the_gruebler_count_judges(make_window):
    """A contact scene whose run waits for Run (the tray tilt, about 10 s of work) computes no rank-based count until
    then: nothing is pending, and the Gruebler count judges the drivers as before (no 'checking' that never ends)."""
    win = make_window(prepare_loaded(io.load(EXAMPLES_DIR / "contact_tray_tilt.json")))
    panel, status = win.structure, win.status
    assert win.playback.kind == "contact" and not win.playback.is_running()
    assert panel.rank is None and not panel.rank_pending and not status.rank_pending
    assert panel.driver_state == "determined" and "not being known" in panel.mobility.toolTip()
    assert "checking" not in status.drivers.text() and "not known" in status.drivers.toolTip()


def test_a_planar_structure_and_an_overdriven_four_bar_are_judged_once_the_rank_arrives(make_window, qtbot):
    """Not judging while the rank-based count is pending hides no true verdict: the four-bar with its coupler pinned
    to the ground (M = −1) is red in the panel and the status bar once the count has arrived, and the four-bar with
    two drivers is over-driven (blue in the panel, '1 too many' in red in the status bar)."""
    from app.panels.structure import MOBILITY_COLOURS

    red = MOBILITY_COLOURS["structure"]
    win = make_window(prepare_loaded(io.load(EXAMPLES_DIR / "fourbar.json")))
    panel, status = win.structure, win.status
    qtbot.waitUntil(lambda: panel.rank is not None, timeout=30000)
    assert win.editor.connect("coupler", "ground", "revolute")
    assert win.document.structure().mobility == -1
    assert panel.driver_state == "checking" and red not in _colour(panel.mobility)
    qtbot.waitUntil(lambda: panel.rank is not None, timeout=30000)
    assert panel.rank.freedoms_to_drive == 0
    assert panel.driver_state == "structure" and red in _colour(panel.mobility)
    assert "structure" in status.drivers.text() and red in status.drivers.text()

    win.document.undo_stack.undo()  # the four-bar again, then a second driver: the same geometry, the count is known
    qtbot.waitUntil(lambda: panel.rank is not None, timeout=30000)
    assert panel.driver_state == "determined"
    assert win.editor.add_driver("D") is None
    assert panel.rank is not None and panel.driver_state == "overdriven"
    assert MOBILITY_COLOURS["overdriven"] in _colour(panel.mobility)
    assert "1 too many" in status.drivers.text() and red in status.drivers.text()
    # a geometry edit of the over-driven four-bar: judged by the last count while the new one is computed, and by
    # the new one once it arrives: over-driven throughout
    x, y, z = win.document.mechanism.joint("C").at
    assert win.editor.update_joint("C", at=(x + 0.01, y, z)) is None
    assert win.playback.mobility is None and panel.driver_state == "overdriven" and "1 too many" in status.drivers.text()
    qtbot.waitUntil(lambda: win.playback.mobility is not None, timeout=30000)
    assert panel.driver_state == "overdriven" and "1 too many" in status.drivers.text() and red in status.drivers.text()


def test_marking_a_moving_body_as_ground_clears_its_velocity_in_the_same_undo_step(make_window):
    """A ground body is fixed, and a velocity on one is refused: marking the sphere drop's falling ball as ground (the
    Properties checkbox, Toggle Ground) was refused, the checkbox going back, until the user cleared its velocity.
    It now clears the velocity in the same edit; one undo brings the ball and its velocity back."""
    from core.model import Velocity

    win = make_window(prepare_loaded(io.load(EXAMPLES_DIR / "contact_sphere_drop.json")))
    m = win.document.mechanism
    ball = next(b.name for b in m.bodies if not b.ground)
    assert win.editor.update_body(ball, velocity=Velocity((0.5, 0.0, 0.0), (0.0, 0.0, 2.0))) is None
    win.selection.set(bodies=[ball])
    p = win.properties
    p.body_ground.setChecked(True)  # the panel's checkbox
    b = win.document.mechanism.body(ball)
    assert b.ground and b.velocity is None and p.body_ground.isChecked()
    win.document.undo_stack.undo()
    b = win.document.mechanism.body(ball)
    assert not b.ground and b.velocity == Velocity((0.5, 0.0, 0.0), (0.0, 0.0, 2.0))
    win.editor.toggle_ground([ball])  # the toolbar's Toggle Ground
    assert win.document.mechanism.body(ball).ground and win.document.mechanism.body(ball).velocity is None
    win.document.undo_stack.undo()
    assert win.document.mechanism.body(ball).velocity == Velocity((0.5, 0.0, 0.0), (0.0, 0.0, 2.0))


def _double_parallelogram():
    """Three parallel cranks of equal length between the ground and one coupler, driven at A1: Gruebler–Kutzbach
    counts M = 3·4 − 2·6 = 0, a structure; the rank of its loop equations finds 1 freedom and 1 redundant
    constraint (the third crank repeats what the first two impose, in this geometry only)."""
    from core.model import Body, Driver, Joint, Mechanism

    m = Mechanism(name="double parallelogram")
    m.add_body(Body("ground", ground=True))
    for n in ("c1", "c2", "c3", "coupler"):
        m.add_body(Body(n))
    for k, x in enumerate((0.0, 2.0, 4.0), start=1):
        m.add_joint(Joint(f"A{k}", "revolute", ("ground", f"c{k}"), at=(x, 0.0, 0.0)))
        m.add_joint(Joint(f"B{k}", "revolute", (f"c{k}", "coupler"), at=(x, 1.0, 0.0)))
    m.add_driver(Driver("A1", "t"))
    return prepare_loaded(m)


def test_the_structure_panel_says_when_redundant_constraints_let_a_structure_move(make_window, qtbot):
    """The double parallelogram: the panel listed 'M = 0: a structure ... (it cannot move unless its geometry is
    special)' beside a green M and the status bar's 'DOF 1 · fully driven', and never said how many redundant
    constraints it has. A 'By rank' line gives the rank-based count's freedoms and redundant constraints, and when that
    count finds a geometry the Gruebler count calls a structure moving, the panel says so instead of the warning;
    with the geometry no longer special (a crank out of parallel) the warning is back, the count agreeing."""
    win = make_window(_double_parallelogram())
    panel = win.structure
    qtbot.waitUntil(lambda: panel.rank is not None, timeout=30000)
    assert panel.mobility.text() == "M = 0" and panel.driver_state == "determined"
    assert panel.rank_text.text() == "1 DOF, 1 redundant constraint"
    assert "fully driven" in win.status.drivers.text() and "1 redundant constraint" in win.status.drivers.toolTip()
    assert "1 redundant constraint" in panel.mobility.toolTip()
    warnings = _warnings(panel)
    assert warnings == ["Gruebler–Kutzbach M = 0, but this geometry moves: 1 DOF by rank, 1 redundant constraint "
                        "(a special geometry, such as parallel links of equal length or a planar loop in space, lets "
                        "it move; changed, it may lock)"], warnings
    # the third crank's top moved: no longer parallel, a structure by either count
    held = panel.rank
    assert win.editor.update_joint("B3", at=(4.2, 1.0, 0.0)) is None
    qtbot.waitUntil(lambda: panel.rank is not held and panel.rank is not None, timeout=30000)
    assert panel.driver_state == "structure" and panel.rank_text.text() == "0 DOF, 0 redundant constraints"
    assert any(w.startswith("M = 0: a structure") for w in _warnings(panel))
    assert not any("this geometry moves" in w for w in _warnings(panel))
    # while a count is being computed (a joint removed: not judged), the line says so
    assert win.editor.delete(joints=["B3"])
    assert panel.rank is None and panel.rank_pending and panel.rank_text.text() == "being computed…"
    qtbot.waitUntil(lambda: panel.rank is not None, timeout=30000)
    assert panel.rank_text.text() == "2 DOF, 0 redundant constraints"
    # the RSSR: its idle freedom named
    win.files.open_example(EXAMPLES_DIR / "rssr.json")
    qtbot.waitUntil(lambda: panel.rank is not None, timeout=30000)
    assert panel.rank_text.text() == "1 DOF (1 idle set aside), 0 redundant constraints"


def test_window_shortcuts_the_line_edit_would_take_fire_from_a_properties_field(fourbar_win, qtbot, dialogs):
    """Ctrl+E (Export Animation) did nothing while a Properties field had the focus: the QLineEdit claimed it as
    "end of line". A window shortcut with Ctrl now goes to the window; the field keeps its own text edits."""
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    win = fourbar_win
    fld = win.properties.doc_name
    fld.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is fld)
    fld.clear()
    QTest.keyClicks(fld, "abc")
    fld.setCursorPosition(0)
    QTest.keyClick(fld, Qt.Key_E, Qt.ControlModifier)
    # the export asked for a file name (the test's dialog answers "cancel"), and the field did not move its cursor
    assert dialogs.kinds() == ["save"]
    assert fld.cursorPosition() == 0 and QApplication.focusWidget() is fld
    # Ctrl+Z in the field undoes the typing, not the document's last edit (the export took "abc" as the name: the
    # entry typed after it is undone); Ctrl+A selects the field's text
    undo_index = win.document.undo_stack.index()
    QTest.keyClicks(fld, "de")
    assert fld.text() == "deabc"
    QTest.keyClick(fld, Qt.Key_Z, Qt.ControlModifier)
    assert win.document.undo_stack.index() == undo_index
    assert fld.text() in ("abc", "dabc") and win.document.mechanism.name == "abc"
    QTest.keyClicks(fld, "xy")
    QTest.keyClick(fld, Qt.Key_A, Qt.ControlModifier)
    assert fld.selectedText() == fld.text() != "" and not win.selection.bodies
    # a plain letter is typed, not taken by its window shortcut (B adds a body)
    bodies = len(win.document.mechanism.bodies)
    QTest.keyClick(fld, Qt.Key_B)
    assert fld.text() == "b" and len(win.document.mechanism.bodies) == bodies


def test_ctrl_z_after_an_entry_is_taken_undoes_the_document_edit(fourbar_win, qtbot):
    """Name typed in a Properties field and taken with Enter, then Ctrl+Z with the field still focused: the field put
    its old text back while the document kept the new name, and when the focus left the field that text was taken as
    another edit (user test s58). Once an entry is taken, Ctrl+Z and Ctrl+Y are the document's Undo and Redo; while
    one is being typed they stay the field's (the test above)."""
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    win = fourbar_win
    fld = win.properties.doc_name
    fld.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is fld)
    old = win.document.mechanism.name
    fld.selectAll()
    QTest.keyClicks(fld, "renamed")
    QTest.keyClick(fld, Qt.Key_Return)
    assert win.document.mechanism.name == "renamed"
    n = win.document.undo_stack.index()
    QTest.keyClick(fld, Qt.Key_Z, Qt.ControlModifier)
    assert win.document.undo_stack.index() == n - 1 and win.document.mechanism.name == old == fld.text()
    QTest.keyClick(fld, Qt.Key_Y, Qt.ControlModifier)
    assert win.document.undo_stack.index() == n and win.document.mechanism.name == "renamed" == fld.text()
    win.graph.setFocus()  # (the focus leaves the field: nothing more is taken)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is not fld)
    assert win.document.undo_stack.index() == n and win.document.undo_stack.count() == n


def test_ctrl_e_fires_from_the_motion_docks_end_and_steps_boxes(fourbar_win, qtbot, dialogs):
    """The Motion dock's End and Steps spin boxes claimed Ctrl+E for their line edit as a Properties field did."""
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    win = fourbar_win
    for box in (win.motion.end_box, win.motion.steps_box):
        box.setFocus()
        qtbot.waitUntil(lambda: QApplication.focusWidget() in (box, box.lineEdit()))
        n = len(dialogs.calls)
        QTest.keyClick(box.lineEdit(), Qt.Key_E, Qt.ControlModifier)
        assert dialogs.kinds()[n:] == ["save"], box.objectName()
        QTest.keyClick(box.lineEdit(), Qt.Key_A, Qt.ControlModifier)  # the box's own: select its text
        assert box.lineEdit().selectedText() == box.lineEdit().text() != ""


def test_arrow_key_nudges_one_after_another_are_one_undo_step(fourbar_win, qtbot):
    """Two arrow-key nudges in a row crashed the app (segmentation fault, unsaved work lost; user test): the undo
    stack merges the second nudge into the first and deletes it, and the editor then read the deleted command's text
    for the status bar. Three nudges of the crank, 10 px each to the right: one undo step, the status says the move,
    and undo puts the node back."""
    from PySide6.QtTest import QTest

    win = fourbar_win
    x0, y0 = win.document.mechanism.layout["crank"]
    win.selection.set(bodies={"crank"}, joints=set())
    win.graph.viewport().setFocus()
    count = win.document.undo_stack.count()
    for _ in range(3):
        QTest.keyClick(win.graph.viewport(), Qt.Key_Right)
    assert win.document.mechanism.layout["crank"] == pytest.approx((x0 + 30.0, y0))
    assert win.document.undo_stack.count() == count + 1
    win.editor.move({"crank": (x0 + 40.0, y0)}, nudge=True)  # (the editor's own call, as the key handler makes it)
    assert win.document.undo_stack.count() == count + 1
    win.document.undo_stack.undo()
    assert win.document.mechanism.layout["crank"] == pytest.approx((x0, y0))


def test_a_driver_cell_edited_after_a_refused_one_keeps_its_editor(fourbar_win, qtbot, qtlog):
    """Each driver-cell edit taken after a refused one printed Qt's 'commitData called with an editor that does not
    belong to this view' (user test): the edit reached the document, whose change reset the table's model from within
    setData, destroying the editor the view was still committing (the use-after-delete of the arrow-key crash). The
    cells now change in place while the number of drivers stays."""
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    win = fourbar_win
    table = win.properties.driver_table
    model = table.model()

    def edit(row, col, text):
        idx = model.index(row, col)
        table.setCurrentIndex(idx)
        table.edit(idx)
        qtbot.waitUntil(lambda: isinstance(QApplication.focusWidget(), QLineEdit))
        ed = QApplication.focusWidget()
        ed.selectAll()
        QTest.keyClicks(ed, text)
        QTest.keyClick(ed, Qt.Key_Return)
        qtbot.wait(50)

    edit(0, 2, "sin(")  # refused: kept in red
    edit(0, 2, "t")
    edit(0, 0, "nonexist")  # refused
    edit(0, 0, "C")
    assert [(d.joint, d.value) for d in win.document.mechanism.drivers] == [("C", "t")]
    assert not [r for r in qtlog.records if "commitData" in r.message]
    win.document.undo_stack.undo()
    win.document.undo_stack.undo()
    assert model.data(model.index(0, 0)) == win.document.mechanism.drivers[0].joint == "A"


def test_a_refused_body_choice_is_no_longer_shown_once_a_choice_is_taken(fourbar_win):
    """Joint B joins crank and coupler. Choosing coupler as its first body is refused (a joint to itself) and says
    so under the form; that text stayed after later choices were taken (user test). A taken choice clears it."""
    win = fourbar_win
    win.selection.set(bodies=set(), joints={"B"})
    props = win.properties
    for box, name in ((props.joint_a, "coupler"), (props.joint_a, "ground")):
        box.setCurrentIndex(box.findText(name))
        box.activated.emit(box.currentIndex())
        if name == "coupler":
            assert props.error.text().startswith("bodies: ") and "itself" in props.error.text()
    assert win.document.mechanism.joint("B").bodies == ("ground", "coupler")
    assert props.error.text() == ""


def test_a_joint_line_whose_body_is_deleted_before_the_drop_adds_nothing_and_says_why(fourbar_win):
    """Dragging a joint line from the coupler's + handle, the coupler deleted meanwhile (Edit ▸ Delete), then
    dropping on the ground: the status bar said "Refused: joints[2].bodies[0]: unknown body 'coupler' ...", naming a
    joint that does not exist (user test). Now nothing is added and the reason is the body's."""
    from tests.app.conftest import send_mouse
    from tests.app.test_build_fourbar import node_pos, port_pos

    win = fourbar_win
    vp = win.graph.viewport()
    start, end = port_pos(win, "coupler"), node_pos(win, "ground")
    send_mouse(vp, "press", start)
    send_mouse(vp, "move", (start + end) / 2, buttons=Qt.LeftButton)
    messages = []
    win.editor.message.connect(messages.append)
    assert win.editor.delete(bodies=["coupler"])
    joints = len(win.document.mechanism.joints)
    send_mouse(vp, "release", end)
    assert len(win.document.mechanism.joints) == joints
    assert messages[-1] == "No joint added: the body 'coupler' the line started from is gone", messages


def test_a_new_axis_of_a_universal_joint_takes_its_axis2_normal_to_it(make_window):
    """A universal joint's axis2 must be normal to its axis (core.model.axis2_error; user test s55 K4), and the
    Properties show no axis2 field: a new axis (typed in Axis) or a change to universal that the stored axis2 is not
    normal to takes axis2's projection normal to the new axis, in the same undo step, instead of a refusal the user
    could not clear. Axis z, axis2 x; axis (1, 0, 1): x - (x . a) a = (0.5, 0, -0.5), axis2 (1, 0, -1)/sqrt 2.
    The Properties do not show axis2, so the status bar says it changed and to what (core.model.normal_axis2 computes
    it: the app's edit no longer projects on its own)."""
    import math

    from core.model import Body, Joint, Mechanism

    m = Mechanism(name="u", space="spatial")
    m.bodies += [Body("ground", ground=True), Body("s")]
    m.joints += [Joint("U", "universal", ("ground", "s"), axis=(0.0, 0.0, 1.0), axis2=(1.0, 0.0, 0.0)),
                 Joint("R", "revolute", ("s", "ground"), axis=(0.0, 0.0, 1.0), axis2=(1.0, 0.0, 1.0))]
    win = make_window(m)
    messages = []
    win.editor.message.connect(messages.append)
    stack = win.document.undo_stack
    steps = stack.count()
    win.selection.set(joints=["U"])
    p = win.properties
    p.joint_axis.setText("1, 0, 1")
    p.joint_axis.editingFinished.emit()
    u = win.document.mechanism.joint("U")
    assert not p.joint_axis.error and u.axis == (1.0, 0.0, 1.0)
    r = 1 / math.sqrt(2)
    assert u.axis2 == pytest.approx((r, 0.0, -r), abs=1e-15)
    assert abs(sum(x * y for x, y in zip(u.axis2, u.axis))) < 1e-15  # normal to the new axis
    said = ("Edit joint U: its axis2 is now (0.7071, 0, -0.7071), normal to its axis (a universal joint's two axes "
            "are perpendicular); Undo takes both back")
    assert messages[-1] == said, messages
    assert win.status.bar.currentMessage() == said  # (the window's status bar shows it)
    assert stack.count() == steps + 1  # one undo step
    stack.undo()  # one step: both back
    u = win.document.mechanism.joint("U")
    assert u.axis == (0.0, 0.0, 1.0) and u.axis2 == (1.0, 0.0, 0.0)
    assert stack.index() == steps
    # a revolute keeps an oblique axis2 unused; made a universal, it takes its projection (x), and is told so
    assert win.editor.update_joint("R", type="universal") is None
    assert win.document.mechanism.joint("R").axis2 == pytest.approx((1.0, 0.0, 0.0), abs=1e-15)
    assert messages[-1].startswith("Edit joint R: its axis2 is now (1, 0, 0), normal to its axis"), messages
    # an axis2 that fits is kept as it is, without a word about it; one given with the change is the user's (refused
    # if oblique)
    assert win.editor.update_joint("U", axis=(0.0, 1.0, 0.0)) is None
    assert win.document.mechanism.joint("U").axis2 == (1.0, 0.0, 0.0)
    assert messages[-1] == "Edit joint U: axis", messages
    # an axis along the stored axis2 leaves it no projection: the default second axis
    assert win.editor.update_joint("U", axis=(2.0, 0.0, 0.0)) is None
    assert win.document.mechanism.joint("U").axis2 is None
    assert messages[-1].startswith("Edit joint U: its axis2 is now the default second axis, normal to its axis")
    err = win.editor.update_joint("U", axis=(0.0, 0.0, 1.0), axis2=(1.0, 0.0, 1.0))
    assert err is not None and str(err) == "joints[0].axis2: must be normal to axis (it makes 45.0 degrees with it)"


def test_rows_cut_short_in_a_shape_field_read_once_at_their_place():
    """User test s56, S8: Python's reason 'Unterminated string starting at' was followed by ' at column ...' too."""
    from app.panels.properties import parse_values

    with pytest.raises(ValueError) as e:
        parse_values('[[0, 0, 0], ["a')
    assert str(e.value) == "not a list of numbers: Unterminated string starting at column 14"
