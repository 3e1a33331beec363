"""A scene of many bodies is drawn by a few GL items (one draw call for every body, joint glyph and point), placed by
the poses, coloured by the selection, picked and painted as a scene of a few bodies is."""

from __future__ import annotations

import numpy as np
import pytest

from app.viewport.widget import PALETTE
from core import io
from core.transforms import rot_z

pytestmark = pytest.mark.gui


def spheres(n: int) -> "io.Mechanism":
    """A floor and n spheres (r = 0.1 m) in a square grid 0.3 m apart, 0.2 m above it."""
    k = int(np.ceil(np.sqrt(n)))
    bodies = [{"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}}]
    bodies += [{"name": f"s{i}", "mass": 1.0, "shape": {"type": "sphere", "radius": 0.1},
                "pose": {"position": [0.3 * (i % k), 0.3 * (i // k), 0.2]}} for i in range(n)]
    return io.from_dict({"format": "linkwright.mechanism", "version": 1, "space": "spatial",
                         "gravity": [0, 0, -9.81], "bodies": bodies})


def gl_items(vp) -> int:
    """Every GL item in the view's tree."""
    def count(items) -> int:
        return sum(1 + count(it.childItems()) for it in items)

    return count(vp.view.items)



def _pixels(vp) -> np.ndarray:
    img = vp.view.grabFramebuffer().convertToFormat(vp.view.grabFramebuffer().Format.Format_RGB888)
    arr = np.frombuffer(img.constBits(), np.uint8, count=img.sizeInBytes()).reshape(img.height(), img.bytesPerLine())
    return arr[:, : 3 * img.width()].reshape(img.height(), img.width(), 3).astype(int)


def test_many_bodies_are_drawn_by_as_many_gl_items_as_a_few(shown_view):
    few, many = shown_view(spheres(2)), shown_view(spheres(600))
    assert many.item_count()["bodies"] == 601
    assert gl_items(many) == gl_items(few) <= 12  # (one item per body and joint made 600 of them)
    assert many.gl_item_count() == gl_items(many)
    # and every sphere is in the one item, where its design pose puts it
    v = many.drawn_vertices("body", "s599")
    centre = 0.5 * (v.min(axis=0) + v.max(axis=0))
    np.testing.assert_allclose(centre, (0.3 * (599 % 25), 0.3 * (599 // 25), 0.2), atol=1e-5)


def test_a_moved_body_is_drawn_at_its_pose_and_selected_in_its_own_colour(shown_view):
    vp = shown_view(spheres(100))
    sel = vp._sel
    vp.set_view("top")
    # s37 rises 0.5 m and goes 0.45 m off the grid's side, turned: its vertices are its mesh under that pose
    T = rot_z(0.4)
    T[:3, 3] = (-0.45, 1.35, 0.7)
    vp.set_body_poses({"s37": T})
    mesh = next(bg for bg in vp.scene().bodies if bg.name == "s37").mesh[0]
    np.testing.assert_allclose(vp.drawn_vertices("body", "s37"), mesh @ T[:3, :3].T + T[:3, 3], atol=1e-5)
    x, y = vp.project(T[:3, 3])
    assert vp.pick(x, y) == "s37"
    s = vp.view.grabFramebuffer().width() / vp.view.width()
    xo, yo = vp.project((0.3 * 5, 0.3 * 5, 0.2))  # another sphere, s55, in the grid
    assert vp.pick(xo, yo) == "s55"
    before = _pixels(vp)
    sel.set(bodies=["s37"])
    after = _pixels(vp)
    px, other = after[int(y * s), int(x * s)], after[int(yo * s), int(xo * s)]
    # drawn where the pose puts it: shaded blue before, orange once selected; the other sphere stays as it was
    b = before[int(y * s), int(x * s)]
    assert b[2] > b[0] + 20
    assert px[0] > px[2] + 60
    np.testing.assert_array_equal(other, before[int(yo * s), int(xo * s)])
    assert np.allclose(vp.drawn_colour("body", "s37"), PALETTE["selected"], atol=0.5 / 255)
    assert np.allclose(vp.drawn_colour("body", "s55"), PALETTE["shape"], atol=0.5 / 255)
    with vp.without_selection():  # exports: every body in its own colour
        plain = _pixels(vp)[int(y * s), int(x * s)]
    assert plain[2] > plain[0] + 20


def test_posing_every_body_of_a_big_scene_moves_each_by_its_own_pose(shown_view):
    vp = shown_view(spheres(400))
    names = [bg.name for bg in vp.scene().bodies]
    poses = np.array([vp.body_poses()[n] for n in names])
    poses[:, 2, 3] += np.linspace(0.0, 1.0, len(names))  # each body lifted by its own height
    vp.set_pose_array(poses, names)
    for i in (1, 150, 400):
        mesh = vp.scene().bodies[i].mesh[0]
        P = poses[i]
        np.testing.assert_allclose(vp.drawn_vertices("body", names[i]), mesh @ P[:3, :3].T + P[:3, 3], atol=1e-5)
