"""Files: save and reopen, bad files, save-changes prompts, recent files, drag-and-drop, autosave and recovery."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QMessageBox

from app.files import EXAMPLES_DIR, recovery_dir
from core import io
from core.model import Body, Mechanism

pytestmark = pytest.mark.gui

SHIPPED = EXAMPLES_DIR / "fourbar.json"


@pytest.fixture(autouse=True)
def fourbar_copy(tmp_path, monkeypatch):
    """Tests open (and may save over) a private copy of the four-bar example, never the shipped file."""
    global FOURBAR
    work = tmp_path / "work"
    work.mkdir()
    FOURBAR = work / "fourbar.json"
    FOURBAR.write_bytes(SHIPPED.read_bytes())
    before = SHIPPED.read_bytes()
    yield FOURBAR
    assert SHIPPED.read_bytes() == before, "a test changed the shipped example"


def edited_fourbar(win) -> None:
    """Open the four-bar file and make one undoable edit."""
    assert win.files.open_path(FOURBAR)
    win.editor.add_body((300.0, 0.0))


def test_save_and_reopen_gives_the_same_document(make_window, dialogs, tmp_path, qtbot):
    win = make_window(Mechanism(name="empty"))
    assert win.files.open_example(SHIPPED)  # an example has no file of its own
    win.editor.add_body((300.0, 0.0))
    win.editor.connect("body1", "rocker")
    win.editor.toggle_ground(["body1"])
    before = io.to_dict(win.document.mechanism)
    assert win.document.modified and win.isWindowModified()
    dialogs.save_path = str(tmp_path / "mine")  # no suffix: .json is added
    qtbot.keyClick(win.graph, Qt.Key_S, Qt.ControlModifier)  # no path yet: Save behaves as Save As
    saved = tmp_path / "mine.json"
    assert saved.is_file() and not win.document.modified and not win.isWindowModified()
    assert win.document.path == saved.resolve()
    assert "mine.json" in win.windowTitle()
    other = make_window(Mechanism(name="other"))
    dialogs.open_path = str(saved)
    other.action_set.open.trigger()
    assert io.to_dict(other.document.mechanism) == before
    assert other.document.mechanism.layout == win.document.mechanism.layout  # graph positions are saved
    assert not other.document.modified and other.document.undo_stack.count() == 0
    assert str(saved.resolve()) in other.files.recent()
    assert "save" in dialogs.kinds() and "open" in dialogs.kinds()


def test_bad_file_shows_the_located_message_and_leaves_the_document_intact(make_window, dialogs, tmp_path):
    win = make_window(Mechanism(name="empty"))
    edited_fourbar(win)
    before, path, undo = io.dumps(win.document.mechanism), win.document.path, win.document.undo_stack.count()
    data = json.loads(FOURBAR.read_text())
    data["joints"][2]["bodies"] = ["coupler", "nowhere"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    dialogs.open_path = str(bad)
    dialogs.answer = QMessageBox.Discard
    win.action_set.open.trigger()
    kinds = dialogs.kinds()
    assert kinds[-1] == "critical"
    text = dialogs.calls[-1][2]
    assert "joints[2].bodies[1]" in text and "nowhere" in text
    # Untouched: same model, same file, same undo history, still modified.
    assert io.dumps(win.document.mechanism) == before
    assert win.document.path == path and win.document.undo_stack.count() == undo and win.document.modified
    (tmp_path / "junk.json").write_text("{ not json")
    assert not win.files.open_path(tmp_path / "junk.json", ask=False)
    assert "not valid JSON" in dialogs.calls[-1][2]
    assert io.dumps(win.document.mechanism) == before


def test_new_asks_to_save_changes_and_cancel_keeps_the_document(make_window, dialogs):
    win = make_window(Mechanism(name="empty"))
    edited_fourbar(win)
    before = io.dumps(win.document.mechanism)
    dialogs.answer = QMessageBox.Cancel
    win.action_set.new.trigger()
    assert dialogs.kinds()[-1] == "question" and "unsaved" in dialogs.calls[-1][2]
    assert io.dumps(win.document.mechanism) == before
    dialogs.answer = QMessageBox.Discard
    win.action_set.new.trigger()
    assert win.document.mechanism.bodies == [] and win.document.path is None and not win.document.modified
    # Nothing unsaved now: New asks nothing.
    n = len(dialogs.calls)
    win.action_set.new.trigger()
    assert len(dialogs.calls) == n


def test_close_with_changes_can_be_cancelled(make_window, dialogs):
    win = make_window(Mechanism(name="empty"))
    win.editor.add_body((0.0, 0.0))
    dialogs.answer = QMessageBox.Cancel
    assert not win.close()
    assert win.isVisible()
    dialogs.answer = QMessageBox.Discard
    assert win.close()


def test_revert_reloads_the_file(make_window, dialogs):
    win = make_window(Mechanism(name="empty"))
    edited_fourbar(win)
    dialogs.answer = QMessageBox.Yes
    win.action_set.revert.trigger()
    assert io.to_dict(win.document.mechanism) == io.to_dict(io.load(FOURBAR)) | {"layout": io.to_dict(win.document.mechanism)["layout"]}
    assert not win.document.modified


def test_examples_menu_lists_every_example(make_window):
    win = make_window(Mechanism(name="empty"))
    titles = [a.text() for a in win.examples_menu.actions()]
    assert len(titles) == len(list(EXAMPLES_DIR.glob("*.json"))) and "fourbar" in titles
    next(a for a in win.examples_menu.actions() if a.text() == "slider crank").trigger()
    assert win.document.mechanism.name == io.load(EXAMPLES_DIR / "slider_crank.json").name
    assert win.document.path is None  # an example opens as a new document: Save does not overwrite it


def test_recent_files_menu_and_settings_isolation(make_window, tmp_path):
    win = make_window(Mechanism(name="empty"))
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for p in (a, b):
        io.save(io.load(FOURBAR), p)
        win.files.open_path(p, ask=False)
    assert win.files.recent()[:2] == [str(b.resolve()), str(a.resolve())]
    assert [x.text() for x in win.recent_menu.actions()][:2] == ["&1 b.json", "&2 a.json"]
    # The settings went to the test's folder, not the user's.
    assert any(Path(tmp_path / "config").rglob("*.conf")) or any(Path(tmp_path / "config").rglob("*.ini"))


def test_drop_a_file_on_the_window_opens_it(make_window, tmp_path):
    win = make_window(Mechanism(name="empty"))
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(FOURBAR))])
    enter = QDragEnterEvent(QPoint(10, 10), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(win, enter)
    assert enter.isAccepted()
    drop = QDropEvent(QPointF(10, 10), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(win, drop)
    assert win.document.path == FOURBAR.resolve()
    assert win.document.mechanism.body_names() == ["ground", "crank", "coupler", "rocker"]


def test_a_file_without_layout_gets_an_automatic_layout(make_window):
    win = make_window(Mechanism(name="empty"))
    assert "layout" not in json.loads(FOURBAR.read_text())
    win.files.open_path(FOURBAR, ask=False)
    lay = win.document.mechanism.layout
    assert set(lay) == {"ground", "crank", "coupler", "rocker"}
    pts = list(lay.values())
    # Kamada–Kawai on a 4-cycle: neighbours ~ one spacing apart, no two nodes on top of each other.
    d = [((p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2) ** 0.5 for i, p in enumerate(pts) for q in pts[i + 1 :]]
    assert min(d) > 100
    # The ground is drawn at the bottom (largest scene y).
    assert lay["ground"][1] == max(p[1] for p in pts)
    assert not win.document.modified


def test_autosave_writes_a_recovery_file_that_the_next_start_offers(make_window, dialogs, qtbot):
    win = make_window(Mechanism(name="empty"))
    edited_fourbar(win)
    assert win.files.autosave_timer.interval() == 60_000 and win.files.autosave_timer.isActive()
    assert win.files.autosave()
    rec = win.files.recovery_file
    assert rec.is_file() and rec.parent == recovery_dir()
    assert str(recovery_dir()).startswith(os.environ["XDG_DATA_HOME"])
    expected = io.to_dict(win.document.mechanism)
    # Simulate a crash: the file is left behind under the name of a process that no longer exists.
    dead = rec.with_name("autosave-999999.json")
    rec.rename(dead)
    nxt = make_window(Mechanism(name="fresh"))
    dialogs.answer = QMessageBox.Yes
    assert nxt.files.offer_recovery()
    assert dialogs.calls[-1][1] == "Recover unsaved document?"
    assert io.to_dict(nxt.document.mechanism) == expected
    assert nxt.document.modified  # recovered edits are not on disk yet
    assert not dead.exists()
    # A saved (clean) document leaves no recovery file behind.
    win.document.undo_stack.setClean()
    assert not win.files.autosave() and not rec.exists()


@pytest.mark.parametrize("field", [{"time": "yesterday"}, {"time": 1e300}, {"path": 5}])
def test_a_recovery_file_with_a_bad_time_or_path_is_ignored_not_a_crash(make_window, dialogs, field):
    """The recovery file's document loaded, but its "time" and "path" were read outside the check: a string time, a
    time beyond the platform's clock or a numeric path ended the start with a traceback (TypeError,
    OverflowError) instead of the message that an unreadable recovery file was ignored."""
    win = make_window(Mechanism(name="fresh"))
    messages = []
    win.files.message.connect(messages.append)
    d = recovery_dir()
    d.mkdir(parents=True, exist_ok=True)
    dead = d / "autosave-999999.json"
    dead.write_text(json.dumps({"path": None, "time": 0, "document": io.to_dict(Mechanism(name="lost")), **field}))
    assert not win.files.offer_recovery()
    assert len(messages) == 1 and messages[0].startswith("An unreadable recovery file was ignored: "), messages
    assert "question" not in dialogs.kinds() and not dead.exists() and win.document.mechanism.name == "fresh"


def test_unmodified_document_is_not_autosaved(make_window):
    win = make_window(Mechanism(name="empty"))
    assert not win.files.autosave()
    assert not win.files.recovery_file.exists()


def test_dock_layout_is_remembered_across_windows(make_window):
    win = make_window(Mechanism(name="empty"))
    assert win.dock_structure.isVisible()
    win.dock_structure.hide()
    win.save_layout()
    again = make_window(Mechanism(name="empty"))
    assert not again.dock_structure.isVisible() and again.dock_properties.isVisible()


def test_a_save_that_cannot_be_written_shows_why_and_keeps_the_document_modified(make_window, dialogs, tmp_path):
    win = make_window(Mechanism(name="empty"))
    edited_fourbar(win)
    path = win.document.path
    target = tmp_path / "no_such_folder" / "mine.json"
    assert not win.files.write(target)
    assert dialogs.kinds()[-1] == "critical" and str(target) in dialogs.calls[-1][2]
    # Nothing was written, the document still belongs to its old file and still has unsaved edits.
    assert not target.parent.exists() and win.document.path == path and win.document.modified
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_save_the_loader_would_refuse_is_written_and_says_why(make_window, dialogs, tmp_path):
    """A document that Open would refuse (here a pair override naming a body that is not there, which deleting the
    body used to leave behind) is still written, so nothing is lost, and a warning gives the loader's reason; a
    document that opens again saves without one."""
    from dataclasses import replace

    from core.model import PairOverride

    win = make_window(Mechanism(name="empty"))
    edited_fourbar(win)
    n = len(dialogs.calls)
    assert win.files.write(tmp_path / "fine.json")
    assert dialogs.calls[n:] == []
    mech = win.document.mechanism
    mech.contact = replace(mech.contact_settings(), pairs=(PairOverride(("crank", "ghost"), 0.3),))  # (past the API)
    target = tmp_path / "mine.json"
    assert win.files.write(target)
    assert target.is_file() and dialogs.kinds()[-1] == "warning"
    assert "contact.pairs[0].bodies[1]: unknown body 'ghost'" in dialogs.calls[-1][2]


def test_save_as_without_a_suffix_asks_before_replacing_the_json_file_of_that_name(make_window, dialogs, tmp_path):
    """The save dialog asks about replacing the name as typed ("mine"), but ".json" is added after it: an existing
    mine.json was replaced without a word. Now it is asked here; No keeps the file and the document unsaved."""
    win = make_window(Mechanism(name="empty"))
    edited_fourbar(win)
    other = tmp_path / "mine.json"
    other.write_text("my other work")
    dialogs.save_path = str(tmp_path / "mine")
    dialogs.answer = QMessageBox.No
    assert not win.files.save_as()
    assert dialogs.kinds()[-1] == "question" and "mine.json" in dialogs.calls[-1][2]
    assert other.read_text() == "my other work" and win.document.modified and win.document.path == FOURBAR.resolve()
    dialogs.answer = QMessageBox.Yes
    assert win.files.save_as()
    assert io.to_dict(io.load(other)) == io.to_dict(win.document.mechanism) and not win.document.modified
    n = len(dialogs.calls)
    dialogs.save_path = str(tmp_path / "fresh")  # no file of that name: nothing to ask
    assert win.files.save_as() and (tmp_path / "fresh.json").is_file()
    assert dialogs.kinds()[n:] == ["save"]


def test_save_as_suggests_a_file_in_the_home_folder_for_a_name_with_a_slash(make_window, dialogs):
    """An unsaved document's Save As suggests its name as the file name: a name with a slash ('Crank/rocker') is
    one file in the home folder, not a file in a folder 'Crank' that does not exist."""
    win = make_window(Mechanism(name="Untitled"))
    assert win.editor.update_document(name="Crank/rocker \\ v2") is None
    dialogs.save_path = ""  # cancelled
    assert not win.files.save_as()
    suggested = Path(dialogs.calls[-1][2])
    assert dialogs.calls[-1][0] == "save" and suggested.parent == Path.home()
    assert suggested.name == "Crank-rocker - v2.json"


def test_the_recovery_question_of_an_untitled_document_without_a_name_names_no_empty_quotes(make_window, dialogs):
    """An unsaved document whose name was cleared (allowed since names may be empty) was offered as 'An autosave of
    “” from ...'; it is 'an untitled document'."""
    win = make_window(Mechanism(name=""))
    win.editor.add_body((300.0, 0.0))  # an edit of the untitled document: it is autosaved
    assert win.document.path is None and win.document.mechanism.name == "" and win.files.autosave()
    rec = win.files.recovery_file
    rec.rename(rec.with_name("autosave-999999.json"))  # left behind by a process that no longer runs
    nxt = make_window(Mechanism(name="fresh"))
    dialogs.answer = QMessageBox.No
    assert not nxt.files.offer_recovery()
    text = dialogs.calls[-1][2]
    assert "An autosave of an untitled document from " in text and "“”" not in text, text


def test_export_suggests_a_file_in_the_home_folder_for_a_name_with_a_slash(make_window, dialogs):
    """Save As turned 'Crank/rocker' into 'Crank-rocker.json'; File ▸ Export suggested ~/Crank/rocker.png, a file in a
    folder 'Crank' that is not there. Both use one rule; an empty name suggests 'linkwright.png'."""
    for name, stem in (("Crank/rocker", "Crank-rocker"), ("", "linkwright")):
        win = make_window(Mechanism(name=name))
        dialogs.save_path = ""  # the dialog cancelled: nothing exported
        assert not win.exports.export_png()
        assert dialogs.calls[-1][0] == "save" and dialogs.calls[-1][2] == str(Path.home() / f"{stem}.png")


def crashed_autosave(make_window, name: str, pid: int, mtime: float) -> Path:
    """The autosave a crashed instance (process `pid`, no longer running) left of an unsaved document `name`."""
    win = make_window(Mechanism(name="scratch"))
    win.editor.update_document(name=name)
    assert win.files.autosave()
    dead = win.files.recovery_file.with_name(f"autosave-{pid}.json")
    win.files.recovery_file.rename(dead)
    os.utime(dead, (mtime, mtime))
    return dead


class Answers:
    """QMessageBox.question answering from a queue (Cancel once it is empty), recording each question's text."""

    def __init__(self, monkeypatch, *answers) -> None:
        self.answers, self.texts = list(answers), []
        monkeypatch.setattr(QMessageBox, "question", staticmethod(self._ask))

    def _ask(self, parent, title, text, *args, **kwargs):
        self.texts.append(text)
        return self.answers.pop(0) if self.answers else QMessageBox.Cancel


def test_every_orphaned_autosave_is_offered_and_kept_until_recovered_or_discarded(make_window, monkeypatch):
    """Two documents edited in two sessions that both crashed left two autosaves: the next start offered the newest
    only and deleted both, so the other's edits were lost unasked. Each is offered (newest first), and deleted only
    when recovered or discarded; Cancel keeps it, and one not asked about (another was recovered) is kept too."""
    a = crashed_autosave(make_window, "DocA work", 999991, 1_700_000_000)
    b = crashed_autosave(make_window, "DocB work", 999992, 1_700_000_600)  # the newer
    # Cancel, Cancel: both asked about, newest first, both kept; the document is untouched
    win = make_window(Mechanism(name="fresh"))
    ask = Answers(monkeypatch, QMessageBox.Cancel, QMessageBox.Cancel)
    messages = []
    win.files.message.connect(messages.append)
    assert not win.files.offer_recovery()
    assert len(ask.texts) == 2 and "“DocB work”" in ask.texts[0] and "“DocA work”" in ask.texts[1], ask.texts
    assert "(autosave 1 of 2)" in ask.texts[0] and "Cancel keeps it" in ask.texts[0]
    assert a.exists() and b.exists() and win.document.mechanism.name == "fresh"
    assert messages == ["2 autosave(s) kept: offered again at the next start"]
    # Yes to the newest: DocB recovered; DocA, not asked about, kept
    win = make_window(Mechanism(name="fresh"))
    ask = Answers(monkeypatch, QMessageBox.Yes)
    assert win.files.offer_recovery()
    assert len(ask.texts) == 1 and win.document.mechanism.name == "DocB work" and win.document.modified
    assert a.exists() and not b.exists()
    # DocB's edits stay on disk until saved: its autosave is now this window's (not an orphan offered again)
    assert json.loads(win.files.recovery_file.read_text())["document"]["name"] == "DocB work"
    assert win.files.orphaned_recoveries() == [a]
    # the next start: DocA offered; Discard deletes it
    win = make_window(Mechanism(name="fresh"))
    ask = Answers(monkeypatch, QMessageBox.Discard)
    assert not win.files.offer_recovery()
    assert len(ask.texts) == 1 and "“DocA work”" in ask.texts[0] and not a.exists()
    assert win.document.mechanism.name == "fresh"


def test_discarding_one_autosave_goes_on_to_offer_the_next(make_window, monkeypatch):
    a = crashed_autosave(make_window, "DocA work", 999991, 1_700_000_000)
    b = crashed_autosave(make_window, "DocB work", 999992, 1_700_000_600)
    win = make_window(Mechanism(name="fresh"))
    ask = Answers(monkeypatch, QMessageBox.Discard, QMessageBox.Yes)
    assert win.files.offer_recovery()
    assert len(ask.texts) == 2 and not b.exists() and not a.exists()
    assert win.document.mechanism.name == "DocA work" and win.document.modified


def test_a_running_instance_autosave_is_neither_offered_nor_deleted(make_window, monkeypatch):
    """An autosave named with the id of a process that runs (another instance, or another window of this one) is
    live: not offered, not touched. One named with this process's id but none of its windows' was left by a crashed
    earlier process that had the same id (a container's app often has the same pid at every start): it is offered,
    where before it was taken for this window's own, never offered and overwritten."""
    d = recovery_dir()
    d.mkdir(parents=True, exist_ok=True)
    doc = {"path": None, "time": 1_700_000_000, "document": io.to_dict(Mechanism(name="theirs"))}
    live = d / f"autosave-{os.getppid()}-0badcafe.json"  # the parent process (pytest's launcher) runs
    live.write_text(json.dumps(doc))
    other = make_window(Mechanism(name="other window"))
    other.editor.update_document(name="other window's edit")
    assert other.files.autosave()
    earlier = d / f"autosave-{os.getpid()}.json"
    earlier.write_text(json.dumps(dict(doc, document=io.to_dict(Mechanism(name="before the restart")))))
    win = make_window(Mechanism(name="fresh"))
    assert win.files.orphaned_recoveries() == [earlier]
    ask = Answers(monkeypatch, QMessageBox.Cancel)
    assert not win.files.offer_recovery()
    assert len(ask.texts) == 1 and "“before the restart”" in ask.texts[0]
    assert live.exists() and other.files.recovery_file.exists() and earlier.exists()
    live.unlink()


def test_the_recovery_question_says_what_the_autosave_holds_and_how_it_stands_to_its_file(make_window, dialogs,
                                                                                        tmp_path):
    """The question showed only the name and the minute: two autosaves of one file read the same but for their
    times, and nothing said whether the file had been saved since. It names the autosave's bodies, joints and
    drivers, and the file's save time, before or after the autosave (or that the file is gone)."""
    path = tmp_path / "fourbar.json"
    shutil.copy(EXAMPLES_DIR / "fourbar.json", path)
    win = make_window(io.load(path), path)
    win.editor.add_body((300.0, 0.0))  # 5 bodies now, 4 joints, 1 driver: autosaved
    assert win.files.autosave()
    rec = win.files.recovery_file
    rec.rename(rec.with_name("autosave-999999.json"))  # left behind by a process that no longer runs
    stamp = json.loads(rec.with_name("autosave-999999.json").read_text())["time"]
    os.utime(path, (stamp + 60, stamp + 60))  # the file saved a minute after the autosave
    nxt = make_window(Mechanism(name="fresh"))
    dialogs.answer = QMessageBox.Cancel
    assert not nxt.files.offer_recovery()
    text = dialogs.calls[-1][2]
    assert "its 5 bodies, 4 joints and 1 driver; its file fourbar.json was saved at " in text, text
    assert text.split(".\n\n")[0].endswith(", after this autosave"), text
    path.unlink()  # the file gone: said so
    assert not nxt.files.offer_recovery()
    assert f"; its file {path} is no longer there" in dialogs.calls[-1][2]


def test_save_and_quit_take_the_value_being_typed_first(make_window, dialogs, tmp_path):
    """A value typed in a Properties field without Enter was left out of the file that Ctrl+S then marked saved, and
    Ctrl+Q closed the window without asking (the value reached the model during the close, after the save check: lost
    work; user test). Save, Save As, Quit, New and Open first take the edit in progress, as Enter does; a refused
    entry stops them, with its reason, the entry kept in its field."""
    from PySide6.QtTest import QTest

    path = tmp_path / "fb.json"
    win = make_window(io.load(EXAMPLES_DIR / "fourbar.json"))
    assert win.files.write(path)
    win.selection.set(bodies={"coupler"}, joints=set())
    field = win.properties.body_mass
    field.setFocus()
    field.selectAll()
    QTest.keyClicks(field, "5")  # typed, no Enter
    QTest.keyClick(field, Qt.Key_S, Qt.ControlModifier)
    saved = json.loads(path.read_text())
    assert next(b for b in saved["bodies"] if b["name"] == "coupler")["mass"] == 5.0
    assert not win.document.modified
    # a refused entry: nothing is saved and the window does not close over it
    field.setFocus()
    field.selectAll()
    QTest.keyClicks(field, "-1")
    messages = []
    win.files.message.connect(messages.append)
    assert not win.files.save()
    assert messages and messages[-1].startswith("The value typed was refused: "), messages
    assert not win.close() and win.isVisible() and field.text() == "-1"
    # the rename box: its name is taken before a save too
    field.setText("5")
    win.graph.start_rename("rocker")
    win.graph.rename_editor().setText("rocker2")
    assert win.files.save()
    assert "rocker2" in {b["name"] for b in json.loads(path.read_text())["bodies"]}


# ---- user test s54 ut1: U2, U3, U6, U7, U10 ------------------------------------------------------------------------
def test_a_file_opened_from_the_examples_folder_is_an_untitled_copy(make_window, dialogs, qtbot):
    """File ▸ Open started in resources/examples, and a file picked there kept its real path: Ctrl+S wrote into the
    shipped example without a word (U2). A file of the installed examples folder now opens as File ▸ Examples opens
    it, an untitled copy, the status bar saying so; Save asks for a name. The Open dialog starts in the home folder,
    then in the folder last used, never in the examples."""
    win = make_window(Mechanism(name="empty"))
    messages = []
    win.files.message.connect(messages.append)
    dialogs.open_path = str(SHIPPED)
    win.action_set.open.trigger()
    assert dialogs.calls[-1][0] == "open" and dialogs.calls[-1][2] == str(Path.home())
    assert win.document.path is None and win.document.mechanism.name == io.load(SHIPPED).name
    assert "untitled copy" in messages[-1] and "untitled copy" in win.statusBar().currentMessage()
    assert str(SHIPPED.resolve()) not in win.files.recent()
    win.editor.add_body((300.0, 0.0))
    dialogs.save_path = ""  # the save dialog cancelled: nothing written anywhere
    qtbot.keyClick(win.graph, Qt.Key_S, Qt.ControlModifier)
    assert dialogs.kinds()[-1] == "save" and win.document.modified
    # a drop of the example, and Open Recent of one (listed by an earlier version): an untitled copy too
    assert win.files.open_path(SHIPPED, ask=False) and win.document.path is None
    # the Open dialog starts in the folder last opened from (the shipped examples' folder is never remembered)
    assert win.files.open_path(FOURBAR, ask=False) and win.document.path == FOURBAR.resolve()
    win.action_set.new.trigger()
    dialogs.open_path = ""
    win.action_set.open.trigger()
    assert dialogs.calls[-1][0] == "open" and dialogs.calls[-1][2] == str(FOURBAR.parent.resolve())


def test_an_example_named_on_the_command_line_opens_as_an_untitled_copy(dialogs):
    from app.main import create_window

    from .conftest import dispose_windows

    win = create_window(str(SHIPPED), remember_layout=False)
    try:
        assert win.document.path is None and win.document.mechanism.name == io.load(SHIPPED).name
        assert "untitled copy" in win.statusBar().currentMessage()
    finally:
        dispose_windows([win])


def test_save_asks_before_replacing_a_file_changed_on_disk(make_window, dialogs, tmp_path):
    """Another program rewrote the open file: nothing said so, and Save overwrote it without a question (U3). The
    window's activation says so on the status bar (once); Save asks: Cancel saves nothing, No is Save As, Yes
    replaces it. A file saved or read here again is not a change."""
    from PySide6.QtCore import QEvent

    win = make_window(Mechanism(name="empty"))
    edited_fourbar(win)
    messages = []
    win.files.message.connect(messages.append)
    assert win.files.check_disk() is None and messages == []
    theirs = json.loads(FOURBAR.read_text()) | {"name": "changed outside"}
    FOURBAR.write_text(json.dumps(theirs, indent=1))
    QApplication.sendEvent(win, QEvent(QEvent.ActivationChange))  # the window is active: activated again
    assert messages and "fourbar.json was changed on disk" in messages[-1], messages
    n = len(messages)
    QApplication.sendEvent(win, QEvent(QEvent.ActivationChange))
    assert len(messages) == n  # told once
    dialogs.answer = QMessageBox.Cancel
    assert not win.action_set.save.trigger() and win.document.modified
    assert dialogs.kinds()[-1] == "question" and "changed on disk" in dialogs.calls[-1][2]
    assert json.loads(FOURBAR.read_text())["name"] == "changed outside"
    dialogs.answer = QMessageBox.No  # under another name
    dialogs.save_path = str(tmp_path / "mine")
    assert win.files.save()
    assert win.document.path == (tmp_path / "mine.json").resolve() and not win.document.modified
    assert json.loads(FOURBAR.read_text())["name"] == "changed outside"
    # back on the changed file: Yes replaces it; the next save asks nothing
    assert win.files.open_path(FOURBAR, ask=False)
    win.editor.add_body((300.0, 0.0))
    FOURBAR.write_text(json.dumps(theirs | {"name": "changed again"}))
    dialogs.answer = QMessageBox.Yes
    assert win.files.save() and json.loads(FOURBAR.read_text())["name"] == "changed outside"
    n = len(dialogs.calls)
    win.editor.add_body((400.0, 0.0))
    assert win.files.save() and dialogs.calls[n:] == []


def test_a_file_deleted_on_disk_is_not_reverted_to_and_save_asks_before_writing_it_again(make_window, dialogs):
    """The open file deleted by another program: Revert asked to discard the changes, then failed on the missing file;
    Save re-created it silently (U3, U10). Revert says there is no file and asks nothing; Save asks."""
    win = make_window(Mechanism(name="empty"))
    edited_fourbar(win)
    before = io.dumps(win.document.mechanism)
    FOURBAR.unlink()
    n = len(dialogs.calls)
    dialogs.answer = QMessageBox.Yes
    assert not win.files.revert()
    assert dialogs.kinds()[n:] == ["critical"] and "no longer on disk" in dialogs.calls[-1][2]
    assert io.dumps(win.document.mechanism) == before and win.document.modified
    assert win.files.check_disk() == "deleted"
    dialogs.answer = QMessageBox.Cancel
    assert not win.files.save() and not FOURBAR.exists()
    assert dialogs.kinds()[-1] == "question" and "deleted or moved" in dialogs.calls[-1][2]
    dialogs.answer = QMessageBox.Yes
    assert win.files.save() and FOURBAR.is_file() and not win.document.modified


def test_save_as_adds_json_to_a_name_with_a_dot(make_window, dialogs, tmp_path):
    """'design v1.2' was saved as 'design v1.2', which the Open dialog's *.json filter hides (U6): .json is added
    unless the name ends with it (any case)."""
    win = make_window(Mechanism(name="empty"))
    edited_fourbar(win)
    for typed, written in (("design v1.2", "design v1.2.json"), ("crank.v2", "crank.v2.json"),
                           ("Mine.JSON", "Mine.JSON"), ("plain.json", "plain.json")):
        dialogs.save_path = str(tmp_path / typed)
        assert win.files.save_as()
        assert win.document.path == (tmp_path / written).resolve() and (tmp_path / written).is_file(), typed


def test_the_suggested_file_name_has_no_control_characters_and_a_bounded_length(make_window, dialogs, tmp_path):
    """The Save As suggestion kept a document name's newlines and NUL characters and any length: a NUL made save_as
    raise ValueError (no dialog), a 300-character name gave a name too long to write (U7)."""
    from app.files import MAX_STEM_CHARS, suggested_stem

    assert suggested_stem(Mechanism(name="line1\nline2\x00 end\t/x")) == "line1 line2 end -x"
    assert suggested_stem(Mechanism(name="\x00\n ")) == "mechanism"
    assert suggested_stem(Mechanism(name="..hidden.")) == "hidden"
    long = suggested_stem(Mechanism(name="é" * 300))
    assert len(long) <= MAX_STEM_CHARS and len((long + ".json").encode()) <= 255
    for name in ("line1\nline2\x00", "x" * 300):
        win = make_window(Mechanism(name="Untitled"))
        win.editor.add_body((0.0, 0.0))
        assert win.editor.update_document(name=name) is None
        dialogs.save_path = ""
        assert not win.files.save_as()
        suggested = Path(dialogs.calls[-1][2])
        dialogs.save_path = str(tmp_path / suggested.name)  # the suggestion accepted as it is
        assert win.files.save_as(), dialogs.calls[-1]
        assert win.document.path.parent == tmp_path.resolve() and not win.document.modified
    # a name the system refuses (a NUL typed into the dialog) is a dialog, not an exception
    n = len(dialogs.calls)
    win.editor.add_body((100.0, 0.0))
    assert not win.files.write(tmp_path / "a\x00b.json")
    assert dialogs.kinds()[n:] == ["critical"] and "NUL" in dialogs.calls[-1][2] and win.document.modified


def test_a_file_that_cannot_be_opened_never_asks_to_save_changes(make_window, dialogs, tmp_path):
    """Dropping a PNG, or picking a recent file that was deleted, asked "Save changes?" first, and then failed (U10).
    The file is read first: a drop that does not open shows why and asks nothing; a missing recent file is offered
    for removal from the list instead."""
    win = make_window(Mechanism(name="empty"))
    edited_fourbar(win)
    before = io.dumps(win.document.mechanism)
    png = tmp_path / "picture.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(png))])
    n = len(dialogs.calls)
    QApplication.sendEvent(win, QDragEnterEvent(QPoint(10, 10), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier))
    drop = QDropEvent(QPointF(10, 10), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(win, drop)
    assert dialogs.kinds()[n:] == ["critical"] and "picture.png" in dialogs.calls[-1][2]
    assert io.dumps(win.document.mechanism) == before and win.document.modified
    # a recent file that is gone: offered for removal, not opened, nothing else asked
    gone = tmp_path / "gone.json"
    shutil.copy(FOURBAR, gone)
    win.files.add_recent(gone)
    gone.unlink()
    assert str(gone.resolve()) in win.files.recent()
    entry = next(a for a in win.recent_menu.actions() if a.text().endswith("gone.json"))
    dialogs.answer = QMessageBox.No  # kept in the list
    n = len(dialogs.calls)
    entry.trigger()
    assert dialogs.kinds()[n:] == ["question"] and "Remove it from Open Recent?" in dialogs.calls[-1][2]
    assert str(gone.resolve()) in win.files.recent() and io.dumps(win.document.mechanism) == before
    dialogs.answer = QMessageBox.Yes
    next(a for a in win.recent_menu.actions() if a.text().endswith("gone.json")).trigger()
    assert str(gone.resolve()) not in win.files.recent()
    assert not any(a.text().endswith("gone.json") for a in win.recent_menu.actions())
    assert io.dumps(win.document.mechanism) == before and win.document.modified


def test_a_polytope_of_too_many_vertices_is_refused_in_the_open_dialog(make_window, dialogs, tmp_path):
    """User test s56, S2: File > Open of a polytope of 1,000 vertices froze the window for 49 s; it is now refused on
    load with the located message of the vertex limit, and the document stays as it was."""
    import numpy as np

    from core import validate

    win = make_window(Mechanism(name="empty"))
    before = io.dumps(win.document.mechanism)
    p = np.random.default_rng(1).normal(size=(1000, 3))
    rows = (0.1 * p / np.linalg.norm(p, axis=1)[:, None]).tolist()
    doc = {"format": io.FORMAT, "version": io.VERSION, "space": "spatial",
           "bodies": [{"name": "rock", "mass": 1, "shape": {"type": "polytope", "vertices": rows}}]}
    bad = tmp_path / "poly_1000.json"
    bad.write_text(json.dumps(doc))
    assert not win.files.open_path(bad, ask=False)
    assert dialogs.kinds()[-1] == "critical"
    assert (f"bodies[0].shape.vertices: 1000 vertices, more than the limit of {validate.MAX_POLYTOPE_VERTICES}"
            in dialogs.calls[-1][2])
    assert io.dumps(win.document.mechanism) == before
