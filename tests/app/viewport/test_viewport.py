"""The 3D viewport widget: renders, poses by transforms only, picks by numpy rays, follows document and selection."""

from __future__ import annotations

import numpy as np
import pytest
import pyqtgraph.opengl as gl
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QVector3D
from PySide6.QtWidgets import QApplication

from app.document import Document
from app.selection import Selection
from app.viewport import Viewport3D
from app.viewport.camera import from_qmatrix, to_qmatrix
from app.viewport.widget import BACKGROUND, PALETTE
from core import io
from core.transforms import axis_angle_to_matrix, from_rotation_translation, rot_z, translation
from tests.app.viewport.edits import Edit
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.gui


@pytest.fixture
def fourbar_view(shown_view):
    doc, sel = Document(io.load(EXAMPLES / "fourbar.json")), Selection()
    return shown_view(doc, selection=sel), doc, sel


def _pixels(vp) -> np.ndarray:
    img = vp.view.grabFramebuffer().convertToFormat(vp.view.grabFramebuffer().Format.Format_RGB888)
    ptr = img.constBits()
    arr = np.frombuffer(ptr, np.uint8, count=img.sizeInBytes()).reshape(img.height(), img.bytesPerLine())
    return arr[:, : 3 * img.width()].reshape(img.height(), img.width(), 3).astype(int)


def _scale(vp) -> float:
    """Framebuffer pixels per widget pixel (device pixel ratio)."""
    return vp.view.grabFramebuffer().width() / vp.view.width()


def _body_midpoint(vp, name: str) -> np.ndarray:
    """World midpoint of a body's first link bar (its pick capsule) in the current pose."""
    bg = next(b for b in vp.scene().bodies if b.name == name)
    T = vp.body_poses()[name]
    m = bg.capsules[0].mean(axis=0)
    return T[:3, :3] @ m + T[:3, 3]


def test_fourbar_renders_nonblank_with_expected_items(fourbar_view):
    vp, doc, _ = fourbar_view
    mech = doc.mechanism
    n_points = sum(len(b.points) for b in mech.bodies)
    assert vp.item_count() == {"bodies": len(mech.bodies), "joints": len(mech.joints), "points": n_points}
    assert vp.item_count() == {"bodies": 4, "joints": 4, "points": 1}
    px = _pixels(vp)
    differs = np.abs(px - np.array(BACKGROUND)).sum(axis=2) > 30
    assert differs.mean() > 0.02  # links, grid and glyphs cover a visible part of the frame
    # the link colour (soft blue: blue channel well above red) is actually on screen
    bluish = (px[..., 2] - px[..., 0] > 40) & (px[..., 2] > 120)
    assert bluish.sum() > 500
    info = vp.renderer_info()
    assert "OpenGL" in info and len(info) > len("; OpenGL ")


def test_numpy_transform_to_qmatrix_is_row_major():
    # a rotation of 0.7 rad about (1, 2, 3) followed by a translation: asymmetric, so a transposed copy would fail
    T = from_rotation_translation(axis_angle_to_matrix(np.array([1.0, 2.0, 3.0]) / np.sqrt(14), 0.7), (0.3, -1.2, 2.5))
    item = gl.GLMeshItem()
    item.setTransform(to_qmatrix(T))
    for p in ([0.0, 0.0, 0.0], [1.0, -2.0, 0.5], [0.25, 4.0, -3.0]):
        q = item.transform().map(QVector3D(*p))
        expect = T @ np.append(p, 1.0)
        assert np.allclose([q.x(), q.y(), q.z()], expect[:3], atol=1e-6)
    assert np.allclose(from_qmatrix(to_qmatrix(T)), T)
    # the translation of a pure translation is the fourth column of the numpy matrix
    q = to_qmatrix(translation((1.0, 2.0, 3.0))).map(QVector3D(0, 0, 0))
    assert (q.x(), q.y(), q.z()) == (1.0, 2.0, 3.0)


def test_pick_at_projected_midpoint_returns_that_body(fourbar_view):
    vp, _, _ = fourbar_view
    for name in ("crank", "coupler", "rocker"):
        x, y = vp.project(_body_midpoint(vp, name))
        assert vp.pick(x, y) == name, name
    assert vp.pick(2.0, 2.0) is None  # top-left corner: only background
    assert vp.pick(vp.view.width() - 3.0, vp.view.height() - 3.0) is None


def test_pick_follows_body_poses(fourbar_view):
    vp, _, _ = fourbar_view
    old = _body_midpoint(vp, "crank")
    # turn the crank 180 degrees about joint A (the origin): its midpoint goes to minus itself in x-y
    T = rot_z(np.pi)
    vp.set_body_poses({"crank": T})
    new = _body_midpoint(vp, "crank")
    assert np.allclose(new[:2], -old[:2])
    assert vp.pick(*vp.project(new)) == "crank"
    assert vp.pick(*vp.project(old)) != "crank"


def _colour_is(vp, kind: str, name: str, rgba) -> bool:
    return np.allclose(vp.drawn_colour(kind, name), rgba, atol=0.5 / 255)


def test_set_body_poses_moves_vertices_only(fourbar_view):
    vp, _, _ = fourbar_view
    before = _pixels(vp)  # paints: everything uploaded
    uploads = dict(vp._solid.uploads)
    meshes = {bg.name: bg.mesh for bg in vp.scene().bodies}
    poses = {"crank": rot_z(0.9), "coupler": translation((0.4, -0.3, 0.0)), "rocker": rot_z(-0.2)}
    vp.set_body_poses(poses)
    after = _pixels(vp)
    # faces and colours stay uploaded; only the vertices (and their normals) are sent again, once
    assert vp._solid.uploads == {**uploads, "positions": uploads["positions"] + 1, "normals": uploads["normals"] + 1}
    assert {bg.name: bg.mesh for bg in vp.scene().bodies} == meshes
    for name, T in poses.items():
        v = meshes[name][0]
        np.testing.assert_allclose(vp.drawn_vertices("body", name), v @ T[:3, :3].T + T[:3, 3], atol=1e-5)
    # a joint glyph rides on its first body: joint B (on the coupler) moved with it
    jg = next(j for j in vp.scene().joints if j.name == "B")
    T = poses[jg.body] @ jg.local
    np.testing.assert_allclose(vp.drawn_vertices("joint", "B"), jg.mesh[0] @ T[:3, :3].T + T[:3, 3], atol=1e-5)
    assert np.abs(after - before).sum() > 0  # and the picture did move


def test_selection_and_highlight_change_colours(fourbar_view):
    vp, _, sel = fourbar_view
    assert _colour_is(vp, "body", "coupler", PALETTE["body"])
    assert _colour_is(vp, "body", "ground", PALETTE["ground"])
    x, y = vp.project(_body_midpoint(vp, "coupler"))
    s = _scale(vp)
    before = _pixels(vp)[int(y * s), int(x * s)]
    uploads = dict(vp._solid.uploads)
    sel.set(bodies=["coupler"], joints=["B"])
    assert _colour_is(vp, "body", "coupler", PALETTE["selected"])
    assert _colour_is(vp, "joint", "B", PALETTE["selected"])
    assert _colour_is(vp, "body", "crank", PALETTE["body"])
    after = _pixels(vp)[int(y * s), int(x * s)]
    assert vp._solid.uploads == {**uploads, "colours": uploads["colours"] + 1}  # a selection uploads colours only
    # the selection colour is orange: red well above blue, where the link was blue before
    assert before[2] > before[0] and after[0] > after[2] + 60
    sel.highlight(bodies=["rocker"], joints=["A"])
    assert _colour_is(vp, "body", "rocker", PALETTE["highlight"])
    assert _colour_is(vp, "joint", "A", PALETTE["highlight"])
    sel.clear()
    assert _colour_is(vp, "body", "coupler", PALETTE["body"])


def test_front_view_of_planar_document_shows_xy_plane(fourbar_view):
    vp, _, _ = fourbar_view
    vp.set_view("iso")
    vp.set_view("front")
    x0, y0 = vp.project((1.0, 1.0, 0.0))
    x1, y1 = vp.project((2.0, 1.0, 0.0))
    x2, y2 = vp.project((1.0, 2.0, 0.0))
    # +x goes right, +y goes up the screen (pixel y decreases), both with no sideways component
    assert x1 - x0 > 10 and abs(y1 - y0) < 1e-6
    assert y0 - y2 > 10 and abs(x2 - x0) < 1e-6
    _, V = vp.camera_matrices()
    # the camera looks down -z: the world z axis maps onto the eye-space z axis (towards the viewer)
    assert np.allclose(V[2, :3], [0.0, 0.0, 1.0], atol=1e-6)


def _shown_view(shown_view, example: str, size=(500, 400)) -> Viewport3D:
    """A shown 3D view of an example document."""
    return shown_view(io.load(EXAMPLES / example), size)


def test_initial_views_and_fit_frames_everything(shown_view):
    vp = _shown_view(shown_view, "stewart_6ups.json")
    _, V = vp.camera_matrices()
    assert abs(V[2, 2]) < 0.99 and abs(V[2, 1]) > 0.1  # a spatial document starts oblique (iso), not axis-on
    for name in ("front", "top", "iso", "fit"):
        vp.set_view(name)
        pts = vp._world_vertices()
        xy = np.array([vp.project(p) for p in pts[:: max(1, len(pts) // 400)]])
        assert (xy[:, 0] >= 0).all() and (xy[:, 0] <= vp.view.width()).all(), name
        assert (xy[:, 1] >= 0).all() and (xy[:, 1] <= vp.view.height()).all(), name
    with pytest.raises(ValueError):
        vp.set_view("sideways")


def test_fit_motion_frames_the_bodies_where_they_are_drawn(shown_view):
    # the parts feeder's crank, coupler and rocker are bars without shapes whose frames sit at the world origin, up
    # to 0.5 m from the bars: a run that does not move them is framed like Fit (not by balls around their origins,
    # which framed 2 m for 0.5 m of mechanism), and a body carried 0.3 m away is still framed
    vp = _shown_view(shown_view, "contact_parts_feeder.json")
    vp.set_view("fit")
    fit_distance = vp.view.opts["distance"]
    still = {name: np.repeat(T[None], 3, axis=0) for name, T in vp.body_poses().items()}
    assert vp.fit_motion(still)
    assert vp.view.opts["distance"] == pytest.approx(fit_distance, rel=0.05)
    moved = dict(still)
    moved["box"] = still["box"].copy()
    moved["box"][-1, :3, 3] += (0.3, 0.0, 0.0)
    assert vp.fit_motion(moved)
    bg = next(b for b in vp.scene().bodies if b.name == "box")
    T = moved["box"][-1]
    for p in bg.mesh[0]:
        x, y = vp.project(T[:3, :3] @ p + T[:3, 3])
        assert 0 <= x <= vp.view.width() and 0 <= y <= vp.view.height()


def test_a_runs_motion_widens_the_floor_under_it_and_keeps_the_poses(shown_view):
    """contact_box_slide's box slides about a metre: after the run's framing (fit_motion) the floor's patch reaches
    under the whole path (it was sized from the design, and the box was drawn beyond its edge, floating), and
    re-drawing the floor leaves every body's pose where the run put it."""
    vp = _shown_view(shown_view, "contact_box_slide.json")
    floor = lambda: next(b for b in vp.scene().bodies if b.name == "floor")  # noqa: E731
    x_before = floor().mesh[0][:, 0].max()
    poses = {name: np.repeat(T[None], 2, axis=0) for name, T in vp.body_poses().items()}
    poses["box"] = poses["box"].copy()
    poses["box"][-1, :3, 3] += (1.5, 0.0, 0.0)  # the box 1.5 m along x at the run's end
    vp.set_pose_array(poses["box"][-1][None], ["box"])
    assert x_before < 1.5 + 0.1
    assert vp.fit_motion(poses)
    v = floor().mesh[0]
    assert v[:, 0].max() >= 1.5 + 0.1 and v[:, 0].min() <= -0.1  # under the box's whole path (0.1: half its side)
    np.testing.assert_allclose(vp.body_poses()["box"], poses["box"][-1])


def test_document_edits_rebuild_only_for_geometry(fourbar_view):
    vp, doc, _ = fourbar_view
    items = {bg.name: bg.mesh for bg in vp.scene().bodies}
    old_mass = doc.mechanism.body("rocker").mass
    doc.push(Edit(doc, lambda m: m.update_body("rocker", mass=1.5), lambda m: m.update_body("rocker", mass=old_mass)))
    QApplication.processEvents()  # updates are coalesced to the next event-loop turn (or the next query)
    assert all(bg.mesh is items[bg.name] for bg in vp.scene().bodies)
    doc.push(Edit(doc, lambda m: m.update_joint("B", at=(0.6, 0.8, 0.0)), lambda m: m.update_joint("B", at=(0.5, 0.866, 0.0))))
    QApplication.processEvents()
    assert next(bg for bg in vp.scene().bodies if bg.name == "crank").mesh is not items["crank"]
    ends = next(b for b in vp.scene().bodies if b.name == "crank").capsules[0][:, :2]
    assert any(np.allclose(e, (0.6, 0.8)) for e in ends)
    doc.undo_stack.undo()
    ends = next(b for b in vp.scene().bodies if b.name == "crank").capsules[0][:, :2]
    assert any(np.allclose(e, (0.5, 0.866)) for e in ends)
    doc.replace(io.load(EXAMPLES / "slider_crank.json"))
    mech = doc.mechanism
    assert vp.item_count() == {"bodies": len(mech.bodies), "joints": len(mech.joints),
                               "points": sum(len(b.points) for b in mech.bodies)}


def test_click_selects_body_and_ctrl_adds(fourbar_view, qtbot):
    vp, _, sel = fourbar_view
    def at(name):
        x, y = vp.project(_body_midpoint(vp, name))
        return QPoint(round(x), round(y))
    qtbot.mouseClick(vp.view, Qt.MouseButton.LeftButton, pos=at("crank"))
    assert sel.bodies == {"crank"}
    qtbot.mouseClick(vp.view, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ControlModifier, pos=at("rocker"))
    assert sel.bodies == {"crank", "rocker"}
    qtbot.mouseClick(vp.view, Qt.MouseButton.LeftButton, pos=QPoint(3, 3))
    assert sel.bodies == frozenset() and sel.joints == frozenset()


def test_pick_item_prefers_the_joint_glyph_on_its_link(fourbar_view):
    vp, doc, _ = fourbar_view
    # joint B's pin sits where crank and coupler meet: aiming at it selects the joint, aiming at nothing selects nothing
    x, y = vp.project(np.asarray(doc.mechanism.joint("B").at))
    assert vp.pick_item(x, y) == ("joint", "B")
    assert vp.pick(x, y) in ("crank", "coupler")
    assert vp.pick_item(3.0, 3.0) is None


def test_kinematic_poses_keep_joint_glyphs_on_both_bodies(fourbar_view):
    # poses from core.kinematics (world transforms of body frames) close the loop: every joint's world position is the
    # same whether carried by its first or its second body, so the glyphs drawn on bodies[0] stay on both links
    from core.kinematics import compile_model, solve_trajectory

    vp, doc, _ = fourbar_view
    mech = doc.mechanism
    traj = solve_trajectory(compile_model(mech), np.array([0.0, 0.1, 0.2]))
    assert traj.ok
    vp.set_pose_array(traj.poses[-1], traj.body_names)
    world = vp.body_poses()
    for jg in vp.scene().joints:
        j = mech.joint(jg.name)
        carried = (world[jg.body] @ jg.local)[:2, 3]  # the glyph frame's origin (x-y; z is the layer depth)
        other = world[j.other(jg.body)] @ np.append(j.at, 1.0)  # design frames are the world frame here
        assert np.allclose(carried, other[:2], atol=1e-6), jg.name
        drawn = vp.drawn_vertices("joint", jg.name).mean(axis=0)  # (the pin's vertices are symmetric about its axis)
        assert np.allclose(drawn[:2], other[:2], atol=1e-5), jg.name
    # the crank turned by 2*pi*0.2 rad about A (driver 2*pi*t): its B end moved accordingly
    ang = 2 * np.pi * 0.2
    b = world["crank"] @ np.array([0.5, 0.866, 0.0, 1.0])
    assert np.allclose(b[:2], rot_z(ang)[:2, :2] @ [0.5, 0.866], atol=1e-9)


@pytest.mark.parametrize("gravity", [(0.0, -9.81, 0.0), (9.81, 0.0, 0.0), (0.0, 0.0, 9.81), (-3.0, 0.0, -4.0)])
def test_a_spatial_view_stands_against_its_gravity(shown_view, gravity):
    # a spatial document whose gravity is not -z (a scene drawn with y up, or upside down): the orbit turns about the
    # direction against the gravity, the front view shows that direction straight up the screen, the top view looks
    # down along the gravity, and the grid lies normal to it (before: always z, whatever the gravity)
    mech = io.load(EXAMPLES / "contact_box_slide.json")
    mech.gravity = gravity
    vp = shown_view(mech, (500, 400))
    up = -np.asarray(gravity) / np.linalg.norm(gravity)
    assert np.allclose(vp.view.up, up)
    vp.set_view("front")
    _, V = vp.camera_matrices()
    # eye space: x right, y up the screen, z towards the viewer (the view matrix is single precision)
    # the world up is the screen's up
    assert np.allclose(V[:3, :3] @ up, [0.0, 1.0, 0.0], atol=1e-6)
    vp.set_view("top")
    _, V = vp.camera_matrices()
    assert np.allclose(V[:3, :3] @ up, [0.0, 0.0, 1.0], atol=1e-6)  # looking down: the up points at the viewer
    vp.set_view("iso")
    _, V = vp.camera_matrices()
    # the iso view looks down on the scene at 30 degrees, with the up along the screen's up-and-towards-the-viewer
    assert np.allclose(V[:3, :3] @ up, [0.0, np.cos(np.radians(30)), np.sin(np.radians(30))], atol=1e-6)
    grid = next(item for item in vp._static if isinstance(item, gl.GLGridItem))
    normal = from_qmatrix(grid.transform())[:3, :3] @ [0.0, 0.0, 1.0]  # a GLGridItem lies in its local x-y plane
    assert np.allclose(normal, up, atol=1e-6)
