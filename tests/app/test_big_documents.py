"""Large documents stay responsive: an edit's cost in the graph grows with what it changed, not with the document
(call counts, not timings), edits that change nothing the analysis or the 3D view read skip them, and closing the
window during a long rank-based count cancels it (user test s54 ut1, U5)."""

from __future__ import annotations

import threading
import time

import pytest

from app.panels.graph import JointItem
from core import io
from core.generate import ladder
from core.kinematics import AnalysisCancelled, rank_mobility
from core.model import Joint, Mechanism


def rails(rungs: int) -> Mechanism:
    """The user test's ladder: two rails of links from the ground, a rung between them at every step, one driver
    (3 rungs + 1 bodies, 4 rungs joints; its loops run down one rail and up the other: long ones)."""
    bodies = [{"name": "ground", "ground": True}]
    joints = []
    for i in range(rungs):
        bodies += [{"name": f"L{i}"}, {"name": f"R{i}"}, {"name": f"rung{i}"}]

    def joint(a, b, at):
        joints.append({"name": f"J{len(joints)}", "type": "revolute", "bodies": [a, b], "at": at})

    for i in range(rungs):
        for side, x in (("L", 0.0), ("R", 1.0)):
            joint("ground" if i == 0 else f"{side}{i - 1}", f"{side}{i}", [x, float(i), 0.0])
        joint(f"L{i}", f"rung{i}", [0.0, i + 0.5, 0.0])
        joint(f"rung{i}", f"R{i}", [1.0, i + 0.5, 0.0])
    layout = {b["name"]: [(k % 20) * 150.0, (k // 20) * 90.0] for k, b in enumerate(bodies)}
    return io.from_dict({"format": "linkwright.mechanism", "version": 1, "name": f"rails {rungs}", "space": "planar",
                         "bodies": bodies, "joints": joints, "layout": layout,
                         "drivers": [{"joint": "J0", "value": "0.1*sin(t)"}]})


def _graph(make_window, mech):
    win = make_window(mech)
    return win.document, win.editor, win.graph


@pytest.mark.parametrize("n", [100, 1000])
def test_a_graph_sync_after_one_move_reads_each_joint_a_fixed_number_of_times_and_touches_only_that_bodys_edges(
        make_window, monkeypatch, n):
    doc, editor, view = _graph(make_window, ladder(n))
    m = doc.mechanism
    scans = []
    monkeypatch.setattr(Mechanism, "joints_of", lambda self, body: scans.append(body) or [])  # (the O(n) scan per body)
    body = m.bodies[n // 2].name
    own = [j.name for j in m.joints if body in j.bodies]
    laid = []  # the joint items laid out again
    set_geometry = JointItem.set_geometry
    monkeypatch.setattr(JointItem, "set_geometry", lambda item, *a: laid.append(item.name) or set_geometry(item, *a))
    x, y = m.layout[body]
    editor.move({body: (x + 40.0, y)})  # the edit: the graph syncs (Document.changed)
    assert view.bodies[body].pos().x() == x + 40.0
    assert not scans  # no look-up of a body's joints by a scan of every joint
    # only the moved body's edges are laid out again
    assert sorted(laid) == sorted(own)
    # a sync reads every joint a fixed number of times (a per-body scan of every joint read each one once per body:
    # hundreds of times), and with nothing changed lays out none
    laid.clear()
    reads = []
    get = Joint.__getattribute__
    with monkeypatch.context() as mp:
        mp.setattr(Joint, "__getattribute__", lambda j, name: reads.append(name) or get(j, name))
        view.sync()
    assert 0 < len(reads) <= 12 * len(m.joints)
    assert not laid
    # the moved body's tooltip counts its joints (from the one pass over the joints)
    assert view.bodies[body].toolTip() == f"{body}: {len(own)} joint(s)"


def test_a_joints_tooltip_follows_a_renamed_body_and_a_reattached_joint(make_window):
    doc, editor, view = _graph(make_window, ladder(10))
    j = doc.mechanism.joints[3]
    a, b = j.bodies
    assert view.joints[j.name].toolTip() == f"{j.name}: revolute joint between {a} and {b}"
    assert editor.rename(a, "Koppel") is None
    assert view.joints[j.name].toolTip() == f"{j.name}: revolute joint between Koppel and {b}"


def test_a_node_move_keeps_the_structure_report_and_a_structural_edit_renews_it(make_window):
    doc, editor, _view = _graph(make_window, ladder(50))
    rep = doc.structure()
    x, y = doc.mechanism.layout["b7"]
    editor.move({"b7": (x + 10.0, y)})
    assert doc.structure() is rep  # nothing the analysis reads changed
    editor.update_joint("J3", type="prismatic")
    assert doc.structure() is not rep and doc.structure().joint_classes == rep.joint_classes
    doc.undo_stack.undo()
    doc.undo_stack.undo()
    assert doc.structure().mobility == rep.mobility and doc.structure().bodies == rep.bodies


def test_a_node_move_does_not_rebuild_the_3d_view(make_window, qtbot):
    win = make_window(ladder(30))
    calls = []
    real = win.viewport._update
    win.viewport._update = lambda: (calls.append(1), real())[1]
    m = win.document.mechanism
    x, y = m.layout["b4"]
    win.editor.move({"b4": (x + 20.0, y)})
    qtbot.wait(50)
    win.viewport.scene()  # (a query applies any pending change first)
    assert calls == []
    win.editor.update_joint("J2", type="prismatic")
    win.viewport.scene()
    assert calls == [1]


def test_the_rank_count_checks_its_cancel_flag_between_pieces_of_work():
    mech = rails(20)
    checks = []

    def cancel():
        checks.append(1)
        return False

    full = rank_mobility(mech, cancel=cancel)
    assert len(checks) >= 4 and full == rank_mobility(mech)  # checked several times; the count unchanged
    for stop_at in range(1, len(checks) + 1):  # whichever check says stop, the count stops there
        seen = []

        def stop(seen=seen, stop_at=stop_at):
            seen.append(1)
            return len(seen) >= stop_at

        with pytest.raises(AnalysisCancelled):
            rank_mobility(mech, cancel=stop)
        assert len(seen) == stop_at


def test_closing_the_window_during_a_long_rank_count_cancels_it_and_returns_promptly(make_window, qtbot,
                                                                                    monkeypatch):
    import app.playback.worker as worker

    started, outcome = threading.Event(), []
    real = worker.rank_mobility

    def slow_rank_mobility(mech, cancel=None):
        # the real count, made long: every check of the cancel flag waits 0.3 s first (as if each piece of work
        # between two checks were that long); a count that never checked would run for many seconds
        started.set()

        def slow_cancel():
            time.sleep(0.3)
            return cancel is not None and cancel()

        try:
            return real(mech, cancel=slow_cancel)
        except AnalysisCancelled:
            outcome.append("cancelled")
            raise

    monkeypatch.setattr(worker, "rank_mobility", slow_rank_mobility)
    win = make_window(rails(20))
    qtbot.waitUntil(started.is_set, timeout=15000)  # a run of the kinematics document analyses its geometry first
    solve_threads = [t for t in threading.enumerate() if t.name.startswith("linkwright-solve")]
    assert solve_threads
    win.document.undo_stack.setClean()
    t0 = time.perf_counter()
    win.close()  # closeEvent: cancels the jobs and joins their threads
    took = time.perf_counter() - t0
    assert not win.isVisible()
    assert outcome == ["cancelled"]  # the count saw the cancel flag and stopped
    assert not any(t.is_alive() for t in solve_threads)  # joined, not left running
    assert took < 5.0, f"closing took {took:.1f} s"
