"""Bodies deleted while a contact run streams (user test U14: one segmentation fault in 19 runs, no trace).

Deleting a body drops its items from the views; pyqtgraph's GL items (a body's frame and its mesh, which refer to each
other) were a reference cycle that Python's collector freed at its next collection, and that collection ran in
whichever thread allocated past the threshold: mostly the run's, which allocates the most. The C++ destructors of
the GUI's objects (QObjects, OpenGL buffers) then ran in the run's thread while the GUI thread painted. Measured
before the fix: about a quarter of the deleted bodies' GL items were freed in a run's thread. Now reference cycles
are collected in the GUI thread only while a window is open (app.collector), and the 3D view takes a deleted body's
items apart, so they are freed at once, in the GUI thread."""

from __future__ import annotations

import gc
import json
import threading
from pathlib import Path

import pytest

from app.viewport.batch import MeshBatch
from core import io

EXAMPLES = Path(__file__).resolve().parents[3] / "resources" / "examples"


class CollectionThreads:
    """Records the thread of every collection of reference cycles (gc.callbacks)."""

    def __init__(self) -> None:
        self.threads: list[str] = []

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self.threads.append(threading.current_thread().name)

    def elsewhere(self) -> list[str]:
        return [t for t in self.threads if t != threading.main_thread().name]

    def __enter__(self) -> "CollectionThreads":
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc) -> None:
        gc.callbacks.remove(self)


def pile(duration: float):
    """contact_pile for `duration` seconds (2 s: an edit re-runs it at once, expected 1.5 s of work for its 5 balls,
    0.6 s for 2; 10 s: expected 7.5 s, 3 s for 2 balls, more than AUTO_RUN_SECONDS: an edit marks its frames stale
    and the run goes on)."""
    data = json.loads((EXAMPLES / "contact_pile.json").read_text())
    data["simulation"]["duration"] = duration
    return io.from_dict(data)


def test_a_thread_never_collects_cycles_while_a_window_is_open(make_window, qtbot):
    win = make_window(pile(4.0))  # (waits for Run: no run's thread allocates meanwhile)
    assert not gc.isenabled()  # the automatic collection is the GUI thread's timer now
    with CollectionThreads() as seen:
        def allocate():
            junk = []
            for _ in range(50_000):  # past every generation's threshold many times over
                a, b = [], []
                a.append(b)
                b.append(a)  # (a cycle: only the collector frees it)
                junk.append(a)
                if len(junk) > 100:
                    junk.clear()

        t = threading.Thread(target=allocate, name="allocating")
        t.start()
        t.join()
        assert seen.elsewhere() == []  # before: dozens of collections, in the allocating thread
        # the GUI thread's timer collects them
        qtbot.waitUntil(lambda: gc.get_count()[0] <= gc.get_threshold()[0], timeout=2000)
    assert seen.threads and seen.elsewhere() == []
    assert win.isVisible()


def test_the_automatic_collection_is_on_again_when_the_last_window_is_gone(qtbot):
    from app.document import Document
    from app.window import MainWindow
    from tests.app.conftest import dispose_windows

    assert gc.isenabled()
    wins = [MainWindow(Document(pile(4.0))), MainWindow(Document(pile(4.0)))]
    assert not gc.isenabled()
    dispose_windows(wins[:1])
    assert not gc.isenabled()  # (one window still open)
    dispose_windows(wins[1:])
    assert gc.isenabled()


@pytest.mark.parametrize("duration", [2.0, 10.0])
def test_bodies_deleted_while_a_contact_run_streams(make_window, qtbot, duration):
    win = make_window(pile(duration))
    pb, vp, doc, a = win.playback, win.viewport, win.document, win.action_set
    rec = pb.recording
    auto = pb.auto_runs()
    assert auto == (duration < 5)
    with CollectionThreads() as seen:
        a.run.trigger()
        qtbot.waitUntil(lambda: rec.count >= 1, timeout=60000)  # (the first frame comes at once, then the steps)
        assert pb.is_running() and not rec.complete
        frames = {}
        for names in (["ball1"], ["egg", "cube"]):
            batches = (vp._solid, vp._patches)
            win.selection.set(bodies=names)
            a.delete.trigger()  # as the user deletes: the selection, the Delete action
            assert not set(names) & set(doc.mechanism.body_names())
            assert vp.item_count()["bodies"] == len(doc.mechanism.bodies)
            # the deleted bodies are no longer drawn, and no mesh item went with them (the bodies are parts of one
            # item: nothing is left for a collection in the run's thread to free; their trails' line items go)
            assert all(vp.drawn_vertices("body", n) is None for n in names)
            assert (vp._solid, vp._patches) == batches and all(b in vp.view.items for b in batches)
            assert all(isinstance(b, MeshBatch) for b in batches)
            qtbot.wait(30)
            frames[names[0]] = rec.count
        a.undo.trigger()  # egg and cube come back
        assert {"egg", "cube"} <= set(doc.mechanism.body_names()) and "ball1" not in doc.mechanism.body_names()
        a.redo.trigger()
        a.undo.trigger()
        if not auto:  # the run goes on with the document as it was when it started, its frames stale; Stop ends it
            assert pb.is_running() and rec.stale
            n = rec.count
            qtbot.waitUntil(lambda: rec.count > n, timeout=60000)
            a.stop.trigger()
        qtbot.waitUntil(lambda: rec.complete and not pb.worker.running(), timeout=120000)
        qtbot.wait(100)  # (the collector's timer has run)
    assert seen.elsewhere() == []  # every collection in the GUI thread, none in a run's
    assert seen.threads  # (the runs made garbage enough for some)
    bodies = set(doc.mechanism.body_names())
    assert "ball1" not in bodies and {"egg", "cube"} <= bodies
    # the 3D view draws the document's bodies, posed by the run's frames where the run has them
    assert set(vp.body_poses()) == bodies and vp.item_count()["bodies"] == len(bodies)
    if auto:  # a short run re-ran by itself for the document as it is now: its bodies are the document's
        assert rec.ok and set(rec.body_names) <= bodies and not rec.stale
        assert pb.status_kind == "ok"
    else:  # the long run went on until Stop: its frames are kept, stale (for the document as it was), with the reason
        assert rec.stale and "ball1" in rec.body_names and rec.count > frames["egg"]
        assert rec.stopped_by_user and rec.reason.startswith("stopped by the user at t = ")
        assert pb.status_kind == "stale"
    assert not pb.worker.running()


def test_a_run_stopped_before_its_first_frame_leaves_the_point_traces_empty(make_window, qtbot, monkeypatch, request):
    """(Found by the U14 stress script: Run then Stop at once, on a document with named points.) The recording is
    cleared for the new run and ended before the run began; its end redrew the plots, whose point traces were still
    the previous run's, indexed into the empty recording: IndexError in the slot. The run's thread is held at the
    start of building its run (open_run) until Stop has been pressed, so the run always ends before its first frame
    (whether Stop came before the thread began was a race: the test asserted only when it did)."""
    from app.playback import worker as worker_module

    real_open_run = worker_module.open_run
    entered, gate = threading.Event(), threading.Event()
    request.addfinalizer(gate.set)  # (a failing test leaves no thread waiting)

    def gated_open_run(*args, **kwargs):
        entered.set()
        gate.wait(60)
        return real_open_run(*args, **kwargs)

    win = make_window(io.load(EXAMPLES / "contact_cam_follower.json"))
    pb, plots, a = win.playback, win.plots, win.action_set
    qtbot.waitUntil(lambda: pb.recording.complete and not pb.worker.running(), timeout=60000)
    assert plots.xy_curves and len(plots.xy_curves[0].getData()[0]) == pb.recording.count > 1
    monkeypatch.setattr(worker_module, "open_run", gated_open_run)
    a.run.trigger()
    qtbot.waitUntil(entered.is_set, timeout=60000)  # the run's thread is about to build its run
    assert pb.is_running() and pb.recording.count == 0
    a.stop.trigger()
    gate.set()  # (its set-up sees the cancel flag: its end comes with no frame)
    qtbot.waitUntil(lambda: pb.recording.complete and not pb.worker.running(), timeout=60000)
    assert pb.recording.count == 0
    assert pb.status == "stopped by the user"
    x, _y = plots.xy_curves[0].getData()
    assert x is None or len(x) == 0  # the trace of a recording without frames is empty
    a.run.trigger()  # and the next run draws its trace again
    qtbot.waitUntil(lambda: pb.recording.complete and not pb.worker.running(), timeout=60000)
    assert len(plots.xy_curves[0].getData()[0]) == pb.recording.count > 1
