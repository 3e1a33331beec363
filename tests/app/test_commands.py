"""Undo commands: refused edits never reach the stack; nudges merge; a multi-delete is one step; layout."""

from __future__ import annotations

import numpy as np
import pytest

from app import commands as cmd
from app.document import Document
from app.layout import auto_layout, stress_majorization
from core import io
from core.errors import LinkwrightError
from core.model import Body, Joint, Mechanism


def four_bar() -> Mechanism:
    m = Mechanism(name="fb")
    for n in ("g", "a", "b", "c"):
        m.add_body(Body(n, ground=(n == "g")), position=(0.0, 0.0))
    for k, (x, y) in enumerate((("g", "a"), ("a", "b"), ("b", "c"), ("c", "g"))):
        m.add_joint(Joint(f"J{k}", "revolute", (x, y)))
    return m


def test_a_refused_edit_changes_nothing_and_is_not_on_the_stack(qapp):
    doc = Document(four_bar())
    before = io.dumps(doc.mechanism)
    with pytest.raises(LinkwrightError) as e:
        cmd.execute(doc, cmd.AddJoint(doc, Joint("J9", "revolute", ("a", "nowhere"))))
    assert e.value.location == "joints[4].bodies[1]"
    with pytest.raises(LinkwrightError):
        cmd.execute(doc, cmd.UpdateBody(doc, "a", name="b"))  # duplicate
    assert io.dumps(doc.mechanism) == before and doc.undo_stack.count() == 0


def test_remove_items_is_one_step_and_restores_exactly(qapp):
    doc = Document(four_bar())
    before = io.to_dict(doc.mechanism)  # dicts: the layout's key order is not part of the document
    # J0 g-a, J1 a-b, J2 b-c, J3 c-g: deleting body a (with J0, J1) and joint J3 leaves only J2.
    cmd.execute(doc, cmd.RemoveItems(doc, bodies=["a"], joints=["J1", "J3"]))
    m = doc.mechanism
    assert m.body_names() == ["g", "b", "c"] and m.joint_names() == ["J2"]
    assert doc.undo_stack.count() == 1
    doc.undo_stack.undo()
    assert io.to_dict(doc.mechanism) == before
    doc.undo_stack.redo()
    assert doc.mechanism.body_names() == ["g", "b", "c"]


def test_undoing_a_delete_or_a_rename_saves_the_same_bytes(qapp, tmp_path):
    """Deleting a body then Undo restored an equal document with the body's entry moved to the end of `layout`, so
    Save wrote different bytes (a diff in version control for no change); likewise a rename undone. Undo puts the
    entries back in their order, at every undo of a redo too."""
    from app.files import EXAMPLES_DIR, prepare_loaded

    doc = Document(prepare_loaded(io.load(EXAMPLES_DIR / "fourbar.json")))  # as the app opens it: a layout given
    assert list(doc.mechanism.layout)[-1] != "crank"  # (else its moving to the end would not show)
    saved = tmp_path / "before.json"
    io.save(doc.mechanism, saved)
    before = saved.read_bytes()

    def saved_now() -> bytes:
        out = tmp_path / "after.json"
        io.save(doc.mechanism, out)
        return out.read_bytes()

    cmd.execute(doc, cmd.RemoveItems(doc, bodies=["crank"]))
    doc.undo_stack.undo()
    assert saved_now() == before
    doc.undo_stack.redo()
    doc.undo_stack.undo()
    assert saved_now() == before
    cmd.execute(doc, cmd.UpdateBody(doc, "crank", name="input"))
    doc.undo_stack.undo()
    assert saved_now() == before
    doc.undo_stack.redo()
    doc.undo_stack.undo()
    assert saved_now() == before


def test_rename_follows_into_joints_and_undoes(qapp):
    doc = Document(four_bar())
    cmd.execute(doc, cmd.UpdateBody(doc, "a", name="crank"))
    assert doc.mechanism.joint("J0").bodies == ("g", "crank") and "crank" in doc.mechanism.layout
    doc.undo_stack.undo()
    assert doc.mechanism.joint("J0").bodies == ("g", "a") and "a" in doc.mechanism.layout


def test_nudges_merge_but_drags_do_not(qapp):
    doc = Document(four_bar())
    for k in range(3):
        cmd.execute(doc, cmd.MoveNodes(doc, {"a": (10.0 * (k + 1), 0.0)}, merge=True))
    assert doc.undo_stack.count() == 1 and doc.mechanism.layout["a"] == (30.0, 0.0)
    cmd.execute(doc, cmd.MoveNodes(doc, {"a": (50.0, 0.0)}))
    cmd.execute(doc, cmd.MoveNodes(doc, {"a": (60.0, 0.0)}))
    assert doc.undo_stack.count() == 3
    doc.undo_stack.undo()
    doc.undo_stack.undo()
    assert doc.mechanism.layout["a"] == (30.0, 0.0)
    doc.undo_stack.undo()
    assert doc.mechanism.layout["a"] == (0.0, 0.0)


def test_changed_is_emitted_once_per_edit_and_undo(qapp):
    doc = Document(four_bar())
    seen = []
    doc.changed.connect(lambda: seen.append(doc.mechanism.revision))
    cmd.execute(doc, cmd.UpdateJoint(doc, "J0", type="prismatic"))
    doc.undo_stack.undo()
    assert len(seen) == 2 and doc.mechanism.joint("J0").type == "revolute"


def test_layout_distances_follow_graph_distances():
    # A path of 4 nodes: graph distances 1, 2, 3 between the first node and the others.
    p = stress_majorization(4, [(0, 1), (1, 2), (2, 3)])
    d = [float(((p[0] - p[k]) ** 2).sum() ** 0.5) for k in (1, 2, 3)]
    assert d == pytest.approx([1, 2, 3], abs=0.05)
    # Disconnected parts are kept apart instead of collapsing onto each other.
    q = stress_majorization(4, [(0, 1), (2, 3)])
    assert min(float(((q[i] - q[j]) ** 2).sum() ** 0.5) for i in range(4) for j in range(i + 1, 4)) > 0.5


def test_auto_layout_covers_every_body_and_is_deterministic():
    m = four_bar()
    a, b = auto_layout(m), auto_layout(m)
    assert a == b and set(a) == set(m.body_names())
    assert a["g"][1] == max(p[1] for p in a.values())  # ground at the bottom


def test_auto_layout_boxes_do_not_overlap():
    from app.layout import CLEARANCE

    from core import io as _io
    from app.files import EXAMPLES_DIR

    for name in ("stewart_6ups", "jansen", "fivebar"):
        m = _io.load(EXAMPLES_DIR / f"{name}.json")
        pos = list(auto_layout(m).values())
        for i, a in enumerate(pos):
            for b in pos[i + 1 :]:
                # Two node boxes (with label margin) overlap only if they overlap along both axes.
                assert abs(a[0] - b[0]) >= CLEARANCE[0] - 1.0 or abs(a[1] - b[1]) >= CLEARANCE[1] - 1.0, name


def test_separate_pushes_coincident_nodes_apart():
    from app.layout import separate

    p = separate(np.zeros((3, 2)), (10.0, 4.0))
    d = [abs(p[i] - p[j]) for i in range(3) for j in range(i + 1, 3)]
    assert all(x[0] >= 9.0 or x[1] >= 3.0 for x in d)


def test_auto_layout_keeps_joint_markers_off_other_bodies():
    """A joint's marker (a circle of radius 12 at its edge's middle, app.panels.graph.JointItem) is never drawn under
    a body box (NODE_W x NODE_H) that the joint does not connect: in Stewart's platform the markers S1, S4, U1 and U4
    were hidden under cyl2, cyl3, rod6 and rod5."""
    from app.files import EXAMPLES_DIR
    from app.panels.graph import NODE_H, NODE_W
    from core import io as _io

    radius = 12.0
    for name in ("stewart_6ups", "jansen", "fivebar", "watt_sixbar", "stephenson_sixbar", "planar_3rrr"):
        m = _io.load(EXAMPLES_DIR / f"{name}.json")
        pos = {k: np.array(v) for k, v in auto_layout(m).items()}
        for j in m.joints:
            mid = 0.5 * (pos[j.bodies[0]] + pos[j.bodies[1]])
            for body, c in pos.items():
                if body in j.bodies:
                    continue
                # the circle meets the box when its centre is within the radius of the box (the nearest point of
                # the box is the centre clamped to the box)
                near = np.clip(mid, c - (NODE_W / 2, NODE_H / 2), c + (NODE_W / 2, NODE_H / 2))
                assert np.hypot(*(mid - near)) >= radius, (name, j.name, body)
