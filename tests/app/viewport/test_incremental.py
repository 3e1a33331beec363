"""Incremental viewport updates on a 200-body document: an edit re-creates only the items whose mesh it changed."""

from __future__ import annotations

import numpy as np
import pyqtgraph.opengl as gl
import pytest
from PySide6.QtWidgets import QApplication

from app.document import Document
from app.selection import Selection
from app.viewport import Viewport3D
from app.viewport.camera import from_qmatrix
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


@pytest.fixture
def uploads(monkeypatch):
    """Counts GL mesh items created and setMeshData calls (each creation calls it once too)."""
    counts = {"created": 0, "setMeshData": 0}
    init, set_mesh = gl.GLMeshItem.__init__, gl.GLMeshItem.setMeshData

    def counting_init(self, *a, **kw):
        counts["created"] += 1
        init(self, *a, **kw)

    def counting_set(self, **kw):
        counts["setMeshData"] += 1
        set_mesh(self, **kw)

    monkeypatch.setattr(gl.GLMeshItem, "__init__", counting_init)
    monkeypatch.setattr(gl.GLMeshItem, "setMeshData", counting_set)
    return counts


def _snapshot(vp) -> dict:
    return {"bodies": dict(vp._body_items), "joints": dict(vp._joint_items), "groups": dict(vp._groups)}


def _renewed(before: dict, vp) -> tuple[set, set]:
    """Names of bodies and joints whose item is not the same object as before."""
    bodies = {n for n, it in vp._body_items.items() if before["bodies"].get(n) is not it}
    joints = {n for n, it in vp._joint_items.items() if before["joints"].get(n) is not it}
    return bodies, joints


def test_editing_one_joint_recreates_only_its_bodies(big, uploads):
    vp, doc, sel = big
    mech = doc.mechanism
    j = mech.joint("J100")
    a, b = j.bodies
    sel.set(bodies=[a])
    before = _snapshot(vp)
    new_at = (j.at[0] + 0.2, j.at[1] + 0.1, 0.0)  # inside the bounding box: the drawing keeps its scale
    doc.push(Edit(doc, lambda m: m.update_joint("J100", at=new_at), lambda m: m.update_joint("J100", at=j.at)))
    QApplication.processEvents()
    bodies, joints = _renewed(before, vp)
    # the two links through J100 get new meshes; J100's pin keeps its mesh (same type and span) and only moves
    assert bodies == {a, b}
    assert joints == set()
    assert uploads["created"] == 2 and uploads["setMeshData"] == 2
    assert np.allclose(from_qmatrix(vp._joint_items["J100"].transform())[:2, 3], new_at[:2])
    ends = next(g for g in vp.scene().bodies if g.name == b).capsules.reshape(-1, 3)[:, :2]
    assert any(np.allclose(e, new_at[:2]) for e in ends)  # b's new bar reaches the moved pin
    assert vp._body_items[a].opts["color"] == PALETTE["selected"]  # the re-created item keeps the selection colour
    assert vp._body_items[b].opts["color"] == PALETTE["body"]
    doc.undo_stack.undo()
    QApplication.processEvents()
    assert uploads["created"] == 4  # undo re-meshes the same two links, nothing else
    assert vp.item_count() == {"bodies": 200, "joints": len(mech.joints), "points": 1}


def test_changes_in_one_turn_make_one_update(big, uploads, monkeypatch):
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
    assert uploads["created"] == len(touched)
    pin = vp._joint_items["J12"]
    assert np.allclose(from_qmatrix(pin.transform())[:2, 3], doc.mechanism.joint("J12").at[:2])


def test_queries_see_a_pending_change_at_once(big):
    vp, doc, _ = big
    doc.push(Edit(doc, lambda m: m.add_body(Body("extra")), lambda m: m.remove_body("extra")))
    assert vp.item_count()["bodies"] == 201  # no event processed: the query applied the pending update
    assert "extra" in {b.name for b in vp.scene().bodies}


def test_adding_a_body_adds_exactly_its_items(big, uploads):
    vp, doc, _ = big
    before = _snapshot(vp)
    doc.push(Edit(doc, lambda m: m.add_body(Body("lone")), lambda m: m.remove_body("lone")))
    QApplication.processEvents()
    bodies, joints = _renewed(before, vp)
    assert bodies == {"lone"} and joints == set()
    assert uploads["created"] == 1
    assert vp.item_count()["bodies"] == 201 and "lone" in vp._groups

    # a body and the joint that hangs it on b199: its block, its pin and b199's re-meshed link
    def add(m):
        m.add_body(Body("tip"))
        m.add_joint(Joint("Jtip", "revolute", ("b199", "tip"), at=(5.0, 9.0, 0.0)))

    def remove(m):
        m.remove_body("tip")

    before = _snapshot(vp)
    doc.push(Edit(doc, add, remove))
    QApplication.processEvents()
    bodies, joints = _renewed(before, vp)
    assert bodies == {"tip", "b199"} and joints == {"Jtip"}
    assert uploads["created"] == 4


def test_deleting_a_body_removes_its_items(big, uploads):
    vp, doc, _ = big
    mech = doc.mechanism
    gone_joints = {mech.joints[i].name for i in mech.joints_of("b120")}
    neighbours = {n for i in mech.joints_of("b120") for n in mech.joints[i].bodies} - {"b120"}
    n_joints = len(mech.joints)
    group = vp._groups["b120"]
    before = _snapshot(vp)
    record = {}
    doc.push(Edit(doc, lambda m: record.update(r=m.remove_body("b120")), lambda m: m.restore_body(record["r"])))
    QApplication.processEvents()
    assert vp.item_count() == {"bodies": 199, "joints": n_joints - len(gone_joints), "points": 1}
    assert "b120" not in vp._groups and group not in vp.view.items
    assert not gone_joints & set(vp._joint_items)
    bodies, joints = _renewed(before, vp)
    # only the neighbours lose a joint point (their links are re-meshed); nothing else is touched
    assert bodies == neighbours and joints == set()
    assert uploads["created"] == len(neighbours)
    doc.undo_stack.undo()
    QApplication.processEvents()
    assert vp.item_count() == {"bodies": 200, "joints": n_joints, "points": 1}


def test_rename_keeps_items_pose_and_selection(big, uploads):
    vp, doc, sel = big
    T = rot_z(0.3)
    vp.set_body_poses({"b50": T})
    item, group = vp._body_items["b50"], vp._groups["b50"]
    point_items = dict(vp._points)
    before = _snapshot(vp)
    doc.push(Edit(doc, lambda m: m.rename_body("b50", "coupler"), lambda m: m.rename_body("coupler", "b50")))
    sel.set(bodies=["coupler"])  # the app renames the selection with the body
    QApplication.processEvents()
    assert uploads["created"] == 0 and uploads["setMeshData"] == 0
    assert vp._body_items["coupler"] is item and vp._groups["coupler"] is group and "b50" not in vp._groups
    assert np.allclose(vp.body_poses()["coupler"], T)  # nothing else changed: the pose stays
    assert item.opts["color"] == PALETTE["selected"]
    # the point moved to the renamed body with its sphere and label
    assert [k for k in vp._points] == [("coupler", "P")]
    assert vp._points[("coupler", "P")] == point_items[("b50", "P")]
    bodies, joints = _renewed(before, vp)
    assert bodies == {"coupler"} and joints == set()  # same objects, only keyed by the new name
    # a joint rename likewise keeps its glyph
    pin = vp._joint_items["J7"]
    doc.push(Edit(doc, lambda m: m.update_joint("J7", name="pin7"), lambda m: m.update_joint("pin7", name="J7")))
    QApplication.processEvents()
    assert vp._joint_items["pin7"] is pin and "J7" not in vp._joint_items
    assert uploads["created"] == 0


def test_pose_updates_after_an_edit_only_set_transforms(big, uploads):
    vp, doc, _ = big
    doc.push(Edit(doc, lambda m: m.update_joint("J3", at=(3.1, 0.2, 0.0)), lambda m: m.update_joint("J3", at=(3.0, 0.0, 0.0))))
    QApplication.processEvents()
    made = uploads["created"]
    names = doc.mechanism.body_names()
    poses = np.stack([rot_z(0.01 * i) for i in range(len(names))])
    vp.set_pose_array(poses, names)
    assert uploads["created"] == made and uploads["setMeshData"] == made
    assert np.allclose(from_qmatrix(vp._groups["b77"].transform()), rot_z(0.77))


def test_non_geometric_edit_touches_no_item(big, uploads):
    vp, doc, _ = big
    vp.set_body_poses({"b5": rot_z(0.5)})
    doc.push(Edit(doc, lambda m: m.update_body("b9", mass=3.0), lambda m: m.update_body("b9", mass=None)))
    QApplication.processEvents()
    assert uploads["created"] == 0
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
