"""A stale contact run's overlays in the 3D view after a body is deleted: its contact points, force arrows, trails
and comparison ghosts are drawn for the bodies still in the document, as its poses are (user test s52, F4)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core import io

EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[3] / "resources" / "examples"


def long_pile_with_a_point():
    """contact_pile for 20 s (waits for Run, so an edit marks its frames stale instead of re-running), with a named
    point on ball1 (a point's trail)."""
    data = json.loads((EXAMPLES / "contact_pile.json").read_text())
    next(b for b in data["bodies"] if b["name"] == "ball1")["points"] = {"top": [0.0, 0.0, 0.08]}
    data["simulation"]["duration"] = 20.0
    return io.from_dict(data)


def pair_rows(win, frame: int) -> list[str]:
    """The run's pairs in contact range at a frame (the rows the 3D view is given)."""
    rec = win.playback.recording
    labels = rec.channels["pair.active"].labels
    return [labels[i] for i in rec.columns[rec.series("pair.active")[frame].astype(bool)]]


@pytest.mark.parametrize("compare", [False, True])
def test_a_deleted_bodys_contact_arrows_trails_and_ghost_go_with_it_and_come_back_on_undo(make_window, qtbot, compare):
    win = make_window(long_pile_with_a_point())
    pb, vp = win.playback, win.viewport
    win.action_set.run.trigger()
    qtbot.waitUntil(lambda: pb.recording.count >= 40, timeout=60000)  # ball1 lands at about t = 0.12 s
    pb.stop()
    qtbot.waitUntil(lambda: pb.recording.complete and not pb.worker.running(), timeout=10000)
    if compare:
        win.motion.compare_box.setChecked(True)
        qtbot.waitUntil(lambda: pb.ghost.count >= 40, timeout=60000)
    k = pb.recording.count - 1
    win.motion.slider.setValue(k)
    assert "ball1/floor" in pair_rows(win, k)
    n_drawn = len(vp.contact_arrows()[0])
    assert n_drawn == len(pair_rows(win, k))
    assert {"ball1", "ball1.top", "ball2"} <= set(vp.trails())
    if compare:
        assert "ball1" in vp.ghost_poses()

    win.editor.delete(bodies=["ball1"])  # the run's frames are kept, marked stale; the cursor stays
    assert pb.recording.stale and pb.recording.cursor == k
    # the bodies go back to their design poses (the view's rule after a change of geometry), and the overlays drawn at
    # the poses they left go with them: no contact point or arrow floats where ball1 touched the floor
    design = {bg.name: bg.design for bg in vp.scene().bodies}
    assert all(np.allclose(T, design[n]) for n, T in vp.body_poses().items())
    assert len(vp.contact_arrows()[0]) == 0 and vp.trails() == {} and vp.ghost_poses() == {}
    assert not vp._contact_item.visible() and not vp._normal_item.visible()
    # scrubbing the stale run draws the others' poses and overlays, never the deleted body's
    for frame in (k - 5, k):
        win.motion.slider.setValue(frame)
        others = [lab for lab in pair_rows(win, frame) if "ball1" not in lab.split("/")]
        assert len(others) < len(pair_rows(win, frame)) and len(vp.contact_arrows()[0]) == len(others)
        assert "ball1" not in vp.trails() and "ball1.top" not in vp.trails() and len(vp.trails()["ball2"]) == frame + 1
        assert "ball1" not in vp.ghost_poses() and ("ball2" in vp.ghost_poses()) == compare
    rec = pb.recording
    point = rec.label_series("pair.point_a", rec.channels["pair.active"].labels.index("ball1/floor"))[k]
    assert not np.any(np.all(np.isclose(vp.contact_arrows()[0], point), axis=1))

    win.document.undo_stack.undo()  # ball1 is back: the run is current again, and its overlays with it
    assert not pb.recording.stale
    win.motion.slider.setValue(k - 1)
    win.motion.slider.setValue(k)
    assert len(vp.contact_arrows()[0]) == n_drawn
    assert {"ball1", "ball1.top"} <= set(vp.trails())
    assert ("ball1" in vp.ghost_poses()) == compare
