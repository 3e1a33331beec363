"""Incremental viewport updates on a 200-body document: an edit re-meshes only the parts whose inputs it changed, and
the same few GL items draw the result."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtWidgets import QApplication

from app.document import Document
from app.selection import Selection
from app.viewport import Viewport3D
from app.viewport.geometry import SceneBuilder
from app.viewport.widget import PALETTE
from core.generate import ladder
from core.model import Body, Joint, Mechanism
from core.transforms import rot_z
from tests.app.viewport.edits import Edit

pytestmark = pytest.mark.gui


def serpentine(n: int = 200) -> Mechanism:
    """The benchmark's 200-body ladder, with a named point on body b50."""
    m = ladder(n)
    m.update_body("b50", points={"P": (0.3, 0.2, 0.0)})
    return m


@pytest.fixture
def big(qtbot):
    doc, sel = Document(serpentine(200)), Selection()
    vp = Viewport3D(doc, sel)
    qtbot.addWidget(vp)
    vp.resize(480, 360)
    vp.show()
    qtbot.waitExposed(vp)
    return vp, doc, sel


def _meshes(vp) -> dict:
    return {bg.name: bg.mesh for bg in vp.scene().bodies}


def _remeshed(before: dict, vp) -> set:
    """Names of bodies whose mesh is not the same object as before (new bodies included)."""
    return {n for n, m in _meshes(vp).items() if before.get(n) is not m}


def _colour_is(vp, kind: str, name: str, rgba) -> bool:
    return np.allclose(vp.drawn_colour(kind, name), rgba, atol=0.5 / 255)


def _glyph_centre(vp, name: str) -> np.ndarray:
    v = vp.drawn_vertices("joint", name)
    return 0.5 * (v.min(axis=0) + v.max(axis=0))


def test_editing_one_joint_remeshes_only_its_bodies(big):
    vp, doc, sel = big
    mech = doc.mechanism
    j = mech.joint("J100")
    a, b = j.bodies
    sel.set(bodies=[a])
    before, items = _meshes(vp), vp.gl_item_count()
    new_at = (j.at[0] + 0.2, j.at[1] + 0.1, 0.0)  # inside the bounding box: the drawing keeps its scale
    doc.push(Edit(doc, lambda m: m.update_joint("J100", at=new_at), lambda m: m.update_joint("J100", at=j.at)))
    QApplication.processEvents()
    # the two links through J100 get new meshes; J100's pin keeps its mesh (same type and span) and only moves
    assert _remeshed(before, vp) == {a, b} and vp._builder.meshed == 2
    assert vp.gl_item_count() == items  # (the same items draw the new meshes)
    assert np.allclose(_glyph_centre(vp, "J100")[:2], new_at[:2], atol=1e-5)
    ends = next(g for g in vp.scene().bodies if g.name == b).capsules.reshape(-1, 3)[:, :2]
    assert any(np.allclose(e, new_at[:2]) for e in ends)  # b's new bar reaches the moved pin
    assert _colour_is(vp, "body", a, PALETTE["selected"])  # the re-meshed body keeps the selection colour
    assert _colour_is(vp, "body", b, PALETTE["body"])
    doc.undo_stack.undo()
    QApplication.processEvents()
    assert _remeshed(before, vp) == {a, b} and vp._builder.meshed == 2  # undo re-meshes the same two links
    assert vp.item_count() == {"bodies": 200, "joints": len(mech.joints), "points": 1}


def test_changes_in_one_turn_make_one_update(big, monkeypatch):
    vp, doc, _ = big
    builds = []
    build = vp._builder.build
    monkeypatch.setattr(vp._builder, "build", lambda m: builds.append(1) or build(m))
    for k, name in enumerate(("J10", "J11", "J12")):
        at = doc.mechanism.joint(name).at
        doc.push(Edit(doc, lambda m, n=name, p=(at[0], at[1] + 0.05 * (k + 1), 0.0): m.update_joint(n, at=p),
                       lambda m, n=name, p=at: m.update_joint(n, at=p)))
    assert builds == []  # nothing yet: the three signals are coalesced
    QApplication.processEvents()
    assert builds == [1]
    QApplication.processEvents()
    assert builds == [1]
    # one update for the last state: every body touched by J10..J12 re-meshed once
    touched = {n for name in ("J10", "J11", "J12") for n in doc.mechanism.joint(name).bodies}
    assert vp._builder.meshed == len(touched)
    assert np.allclose(_glyph_centre(vp, "J12")[:2], doc.mechanism.joint("J12").at[:2], atol=1e-5)


def test_queries_see_a_pending_change_at_once(big):
    vp, doc, _ = big
    doc.push(Edit(doc, lambda m: m.add_body(Body("extra")), lambda m: m.remove_body("extra")))
    assert vp.item_count()["bodies"] == 201  # no event processed: the query applied the pending update
    assert "extra" in {b.name for b in vp.scene().bodies}


def test_adding_a_body_draws_it_and_remeshes_nothing_else(big):
    vp, doc, _ = big
    before, items = _meshes(vp), vp.gl_item_count()
    doc.push(Edit(doc, lambda m: m.add_body(Body("lone")), lambda m: m.remove_body("lone")))
    QApplication.processEvents()
    assert _remeshed(before, vp) == {"lone"}
    assert vp.item_count()["bodies"] == 201 and vp.drawn_vertices("body", "lone") is not None
    assert vp.gl_item_count() == items

    # a body and the joint that hangs it on b199: its block, its pin and b199's re-meshed link
    def add(m):
        m.add_body(Body("tip"))
        m.add_joint(Joint("Jtip", "revolute", ("b199", "tip"), at=(5.0, 9.0, 0.0)))

    def remove(m):
        m.remove_body("tip")

    before = _meshes(vp)
    doc.push(Edit(doc, add, remove))
    QApplication.processEvents()
    assert _remeshed(before, vp) == {"tip", "b199"}
    assert np.allclose(_glyph_centre(vp, "Jtip")[:2], (5.0, 9.0), atol=1e-5)
    assert vp.gl_item_count() == items


def test_deleting_a_body_removes_its_parts(big):
    vp, doc, _ = big
    mech = doc.mechanism
    gone_joints = {mech.joints[i].name for i in mech.joints_of("b120")}
    neighbours = {n for i in mech.joints_of("b120") for n in mech.joints[i].bodies} - {"b120"}
    n_joints = len(mech.joints)
    before, items = _meshes(vp), vp.gl_item_count()
    record = {}
    doc.push(Edit(doc, lambda m: record.update(r=m.remove_body("b120")), lambda m: m.restore_body(record["r"])))
    QApplication.processEvents()
    assert vp.item_count() == {"bodies": 199, "joints": n_joints - len(gone_joints), "points": 1}
    assert vp.drawn_vertices("body", "b120") is None
    assert all(vp.drawn_vertices("joint", n) is None for n in gone_joints)
    # only the neighbours lose a joint point (their links are re-meshed); nothing else is touched
    assert _remeshed(before, vp) == neighbours
    assert vp.gl_item_count() == items
    doc.undo_stack.undo()
    QApplication.processEvents()
    assert vp.item_count() == {"bodies": 200, "joints": n_joints, "points": 1}


def test_rename_keeps_mesh_pose_selection_and_label(big):
    vp, doc, sel = big
    T = rot_z(0.3)
    vp.set_body_poses({"b50": T})
    drawn = vp.drawn_vertices("body", "b50")
    label = vp._points[("b50", "P")][0]
    before = _meshes(vp)
    doc.push(Edit(doc, lambda m: m.rename_body("b50", "coupler"), lambda m: m.rename_body("coupler", "b50")))
    sel.set(bodies=["coupler"])  # the app renames the selection with the body
    QApplication.processEvents()
    assert vp._builder.meshed == 0 and _meshes(vp)["coupler"] is before["b50"]
    assert np.allclose(vp.body_poses()["coupler"], T)  # nothing else changed: the pose stays
    np.testing.assert_array_equal(vp.drawn_vertices("body", "coupler"), drawn)
    assert vp.drawn_vertices("body", "b50") is None
    assert _colour_is(vp, "body", "coupler", PALETTE["selected"])
    # the point moved to the renamed body with its label
    assert list(vp._points) == [("coupler", "P")] and vp._points[("coupler", "P")][0] is label
    assert vp.drawn_vertices("point", ("coupler", "P")) is not None
    # a joint rename likewise keeps its glyph
    pin = vp.drawn_vertices("joint", "J7")
    doc.push(Edit(doc, lambda m: m.update_joint("J7", name="pin7"), lambda m: m.update_joint("pin7", name="J7")))
    QApplication.processEvents()
    np.testing.assert_array_equal(vp.drawn_vertices("joint", "pin7"), pin)
    assert vp.drawn_vertices("joint", "J7") is None and vp._builder.meshed == 0


def test_pose_updates_after_an_edit_move_vertices_only(big):
    vp, doc, _ = big
    doc.push(Edit(doc, lambda m: m.update_joint("J3", at=(3.1, 0.2, 0.0)), lambda m: m.update_joint("J3", at=(3.0, 0.0, 0.0))))
    QApplication.processEvents()
    vp.view.grabFramebuffer()  # (a paint: everything uploaded)
    before = dict(vp._solid.uploads)
    names = doc.mechanism.body_names()
    poses = np.stack([rot_z(0.01 * i) for i in range(len(names))])
    vp.set_pose_array(poses, names)
    vp.view.grabFramebuffer()
    up = vp._solid.uploads
    assert up["faces"] == before["faces"] and up["colours"] == before["colours"]  # no new layout, no new colour
    assert up["positions"] == before["positions"] + 1 and up["normals"] == before["normals"] + 1
    v = next(bg for bg in vp.scene().bodies if bg.name == "b77").mesh[0]
    np.testing.assert_allclose(vp.drawn_vertices("body", "b77"), v @ rot_z(0.77)[:3, :3].T, atol=1e-5)


def test_non_geometric_edit_remeshes_nothing(big):
    vp, doc, _ = big
    vp.set_body_poses({"b5": rot_z(0.5)})
    before = _meshes(vp)
    doc.push(Edit(doc, lambda m: m.update_body("b9", mass=3.0), lambda m: m.update_body("b9", mass=None)))
    QApplication.processEvents()
    assert _remeshed(before, vp) == set()
    assert np.allclose(vp.body_poses()["b5"], rot_z(0.5))  # a mass edit does not throw away the pose


def test_builder_keeps_scale_and_layers_across_edits():
    m = serpentine(60)
    builder = SceneBuilder()
    s0 = builder.build(m)
    assert builder.meshed == len(m.bodies) + 1  # every link, and one pin glyph shared by all revolutes
    m.update_joint("J20", at=(m.joint("J20").at[0], 1.4, 0.0))
    s1 = builder.build(m)
    assert s1.width == s0.width and builder.meshed == 2  # the two links through J20
    same = [a.mesh is b.mesh for a, b in zip(s0.bodies, s1.bodies)]
    assert same.count(False) == 2
    # a joint far outside the drawing changes the ideal width by more than the sticky factor: everything re-meshes
    m.update_joint("J20", at=(200.0, 1.4, 0.0))
    s2 = builder.build(m)
    lo, hi = s2.extent
    assert s2.width == pytest.approx(0.035 * np.linalg.norm(hi - lo))
    assert builder.meshed == len(m.bodies) + 1


def test_builder_layers_stay_a_valid_colouring_and_mostly_unchanged():
    m = serpentine(60)
    builder = SceneBuilder()
    builder.build(m)
    layers0 = dict(builder._layers)
    m.remove_body("b10")
    m.add_joint(Joint("X", "revolute", ("b30", "b31"), at=(5.0, 2.0, 0.0)))  # a second joint between a pair
    m.add_joint(Joint("Y", "revolute", ("b2", "b40"), at=(4.0, 2.0, 0.0)))
    builder.build(m)
    layers = builder._layers
    for j in m.joints:  # joined links never share a layer
        assert layers[j.bodies[0]] != layers[j.bodies[1]], j.name
    kept = sum(layers[n] == layers0[n] for n in layers)
    assert kept >= len(layers) - 2  # at most the two bodies of the new cross joint Y move
