"""The viewport's scene description and ray casting, without OpenGL."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.viewport.geometry import (
    JOINT_GLYPHS, box_mesh, build_scene, default_shape_mesher, geometry_signature, ray_capsules, ray_spheres,
    ray_triangles,
)
from core import io
from core.errors import LinkwrightError
from core.joints import JOINT_TYPES
from core.model import Body, Joint, Mechanism, Pose
from tests.conftest import EXAMPLES


def test_every_joint_type_has_a_glyph_row():
    assert set(JOINT_TYPES) <= set(JOINT_GLYPHS)


def test_ray_hits_unit_box_face_at_distance():
    # a ray from (0, 0, 5) straight down meets the top face z = 0.5 of the unit box after 4.5
    v, f = box_mesh((1.0, 1.0, 1.0))
    t = ray_triangles(np.array([0.0, 0.0, 5.0]), np.array([0.0, 0.0, -1.0]), v[f])
    assert t == pytest.approx(4.5)
    assert ray_triangles(np.array([2.0, 0.0, 5.0]), np.array([0.0, 0.0, -1.0]), v[f]) == math.inf


def test_ray_capsule_and_sphere_distances():
    seg = np.array([[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]])
    # passing 0.05 above the segment middle, radius 0.1: surface entry at 5 - sqrt(0.1^2 - 0.05^2)
    t = ray_capsules(np.array([0.5, 0.05, 5.0]), np.array([0.0, 0.0, -1.0]), seg, np.array([0.1]))
    assert t == pytest.approx(5.0 - math.sqrt(0.01 - 0.0025))
    # beyond the end cap by more than the radius: no hit
    assert ray_capsules(np.array([1.2, 0.0, 5.0]), np.array([0.0, 0.0, -1.0]), seg, np.array([0.1])) == math.inf
    # sphere radius 1 at the origin, ray from x = -3: enters at t = 2
    t = ray_spheres(np.array([-3.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0]), np.zeros((1, 3)), np.array([1.0]))
    assert t == pytest.approx(2.0)


def test_fourbar_scene_links_follow_joint_count():
    mech = io.load(EXAMPLES / "fourbar.json")
    scene = build_scene(mech)
    by = {b.name: b for b in scene.bodies}
    # crank and rocker: two joints each -> one bar; the coupler has 2 joints + point P -> a triangle: 3 hull bars
    assert len(by["crank"].capsules) == 1 and len(by["rocker"].capsules) == 1
    assert len(by["coupler"].capsules) == 3
    assert len(by["coupler"].triangles) > 0  # the plate
    # the crank bar runs from A to B (x-y), whatever its layer depth
    ends = by["crank"].capsules[0][:, :2]
    assert {tuple(np.round(e, 6)) for e in ends} == {(0.0, 0.0), (0.5, 0.866)}
    assert [j.type for j in scene.joints] == ["revolute"] * 4
    assert len(scene.points) == 1 and scene.points[0].body == "coupler"


def test_signature_ignores_non_geometric_edits():
    mech = io.load(EXAMPLES / "fourbar.json")
    s0 = geometry_signature(mech)
    mech.update_body("rocker", mass=2.0)
    assert geometry_signature(mech) == s0
    mech.update_joint("B", at=(0.5, 0.9, 0.0))
    assert geometry_signature(mech) != s0


def test_shape_body_is_drawn_as_its_mesh():
    assert default_shape_mesher() is not None  # core.shapes is part of the project now
    mech = Mechanism(space="spatial")
    mech.add_body(Body("ground", ground=True))
    mech.add_body(Body("ball", shape={"type": "sphere", "radius": 0.25}))
    mech.add_joint(Joint("S", "spherical", ("ground", "ball"), at=(0.0, 0.0, 1.0)))
    scene = build_scene(mech, default_shape_mesher())
    ball = next(b for b in scene.bodies if b.name == "ball")
    assert ball.from_shape
    # the mesh is the radius-0.25 sphere (its vertices first, each on the sphere, body frame) and a bar from the
    # ball's centre to its joint 1 m above (a shaped link reads as hanging from its joint)
    sphere_v, _f = default_shape_mesher()(mech.bodies[1], "bodies[1].shape")[:2]
    n = len(sphere_v)
    assert np.allclose(np.linalg.norm(ball.mesh[0][:n], axis=1), 0.25, atol=1e-9)
    assert ball.mesh[0][n:, 2].max() == pytest.approx(1.0, abs=1e-9) and len(ball.capsules) == 1
    # a ball whose joint is at its centre is its sphere alone
    mech.update_joint("S", at=(0.0, 0.0, 0.0))
    ball = next(b for b in build_scene(mech, default_shape_mesher()).bodies if b.name == "ball")
    assert np.allclose(np.linalg.norm(ball.mesh[0], axis=1), 0.25, atol=1e-9)


def test_every_example_builds_a_scene():
    drawn = 0
    for path in sorted(EXAMPLES.glob("*.json")):
        try:
            mech = io.load(path)
        except LinkwrightError:
            continue  # an example the loader rejects is the loader tests' finding; the viewport draws loaded documents
        drawn += 1
        scene = build_scene(mech, default_shape_mesher())
        assert len(scene.bodies) == len(mech.bodies), path.name
        assert len(scene.joints) == len(mech.joints), path.name
        for b in scene.bodies:
            v, f = b.mesh
            assert len(f) > 0 and np.isfinite(v).all() and f.max() < len(v), (path.name, b.name)
        assert not scene.problems, (path.name, scene.problems)
    assert drawn >= 11  # the eleven kinematic examples at least


def test_a_bins_walls_are_drawn_from_its_floor_to_just_above_its_contents():
    """A wall's patch is cut where it enters the floor's solid and the other walls' solids, and ends _WALL_MARGIN of
    the scene's size above the highest bounded point (along -gravity): a bin reads as a bin, not as tall slabs."""
    from app.viewport.geometry import _WALL_MARGIN

    mech = Mechanism(space="spatial", gravity=(0.0, 0.0, -9.81))
    mech.add_body(Body("floor", ground=True, shape={"type": "halfspace", "normal": [0, 0, 1], "offset": 0}))
    # the solid beyond x = 0.3 (outward normal -x), and the solid beyond y = -0.3 (outward normal +y)
    mech.add_body(Body("wall_x", ground=True, shape={"type": "halfspace", "normal": [-1, 0, 0], "offset": -0.3}))
    mech.add_body(Body("wall_y", ground=True, shape={"type": "halfspace", "normal": [0, 1, 0], "offset": -0.3}))
    mech.add_body(Body("ball", shape={"type": "sphere", "radius": 0.1}, pose=Pose(position=(0.0, 0.0, 0.5))))
    scene = build_scene(mech, default_shape_mesher())
    by = {b.name: b for b in scene.bodies}
    # the scene's size: the diagonal of the ball's bounding box (0.2 m cube), its top z = 0.6
    top = 0.6 + _WALL_MARGIN * 0.2 * math.sqrt(3)
    wx = by["wall_x"].mesh[0]  # (ground bodies without a pose: body frame = world frame)
    assert np.allclose(wx[:, 0], 0.3)
    assert wx[:, 2].min() == pytest.approx(0.0, abs=1e-12) and wx[:, 2].max() == pytest.approx(top, rel=0.02)
    assert wx[:, 1].min() == pytest.approx(-0.3, abs=1e-12)  # cut by wall_y's solid (y <= -0.3)
    wy = by["wall_y"].mesh[0]
    assert wy[:, 0].max() == pytest.approx(0.3, abs=1e-12) and wy[:, 2].min() == pytest.approx(0.0, abs=1e-12)
    # the floor (its normal along up) keeps its height, cut by the walls only: x <= 0.3, y >= -0.3
    fl = by["floor"].mesh[0]
    assert np.allclose(fl[:, 2], 0.0) and fl[:, 0].max() == pytest.approx(0.3) and fl[:, 1].min() == pytest.approx(-0.3)
    for b in (by["wall_x"], by["wall_y"], by["floor"]):  # every drawn triangle a real one
        v, f = b.mesh
        assert len(f) >= 1 and np.all(np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]),
                                                      axis=1) > 1e-9)


def test_halfspace_is_drawn_as_a_patch_sized_to_the_scene():
    mech = Mechanism(space="spatial")
    mech.add_body(Body("floor", ground=True, shape={"type": "halfspace", "normal": [0, 0, 1], "offset": 0}))
    mech.add_body(Body("ball", shape={"type": "sphere", "radius": 0.1}))
    scene = build_scene(mech, default_shape_mesher())
    floor = next(b for b in scene.bodies if b.name == "floor")
    assert floor.unbounded
    v = floor.mesh[0]
    # the scene is the ball (diagonal of its bounding box 2*0.1*sqrt(3)), the patch side 1.6 times that, in z = 0
    side = 1.6 * 0.2 * math.sqrt(3)
    assert np.allclose(v[:, 2], 0.0)
    assert np.ptp(v[:, 0]) == pytest.approx(side, rel=0.02) and np.ptp(v[:, 1]) == pytest.approx(side, rel=0.02)


def counting(mesher):
    """`mesher`, counting its calls in .calls."""
    def call(body, location):
        call.calls += 1
        return mesher(body, location)

    call.calls = 0
    return call


def test_identical_shapes_are_meshed_once_and_every_body_is_drawn():
    """3,000 equal spheres were meshed one by one (5 s of a file's opening): the shape cache was per body index."""
    from app.viewport.geometry import SceneBuilder

    mech = Mechanism(space="spatial", gravity=(0.0, 0.0, -9.81))
    mech.add_body(Body("floor", ground=True, shape={"type": "halfspace", "normal": [0, 0, 1], "offset": 0}))
    for i in range(200):
        mech.add_body(Body(f"b{i}", mass=1.0, shape={"type": "sphere", "radius": 0.01},
                           pose=Pose(position=(0.03 * (i % 20), 0.03 * (i // 20), 0.02))))
    mesher = counting(default_shape_mesher())
    builder = SceneBuilder(mesher)
    scene = builder.build(mech)
    assert mesher.calls == 2 and builder.shapes_meshed == 2  # the floor and one sphere
    assert builder.meshed == 2  # (and one body mesh each)
    assert [b.name for b in scene.bodies] == mech.body_names() and not scene.problems
    sphere_v = default_shape_mesher()(mech.bodies[1], "shape")[0]
    for b in scene.bodies[1:]:
        assert b.from_shape and np.array_equal(b.mesh[0], sphere_v)
    # the whole scene's extent holds every sphere (placed by its pose)
    assert scene.extent[1][0] == pytest.approx(0.03 * 19 + 0.01, abs=1e-6)
    assert scene.extent[1][1] == pytest.approx(0.03 * 9 + 0.01, abs=1e-6)
    # a second build meshes nothing again
    builder.build(mech)
    assert mesher.calls == 2 and builder.shapes_meshed == 0


def test_a_bad_shape_is_located_at_each_body_that_has_it():
    from app.viewport.geometry import SceneBuilder

    bad = {"type": "sphere", "radius": -1}
    # (built without the edit API, which refuses such a shape: the viewport still draws what it is given)
    mech = Mechanism(space="spatial", bodies=[Body("a", shape={"type": "sphere", "radius": 0.1}), Body("b", shape=bad),
                                              Body("c", shape=dict(bad))])
    mesher = counting(default_shape_mesher())
    builder = SceneBuilder(mesher)
    scene = builder.build(mech)
    assert scene.problems == ["bodies[1].shape.radius: must be a positive number, got -1",
                              "bodies[2].shape.radius: must be a positive number, got -1"]
    assert mesher.calls == 2  # the bad shape was tried once
    assert [b.from_shape for b in scene.bodies] == [True, False, False]  # drawn as links
    # the same shape moved to another index is located there
    mech.bodies = [mech.bodies[1], mech.bodies[0]]
    assert builder.build(mech).problems == ["bodies[0].shape.radius: must be a positive number, got -1"]
    assert mesher.calls == 2


def test_the_shape_cache_knows_shapes_by_core_model_shape_key(monkeypatch):
    """One notion of shape identity: the 3D view's mesh cache is keyed by core.model.shape_key, as the loader's and
    validation's checked shapes are (it was keyed by repr(shape))."""
    import app.viewport.geometry as geometry
    from app.viewport.geometry import SceneBuilder
    from core.model import shape_key

    keys = []
    monkeypatch.setattr(geometry, "shape_key", lambda s: keys.append(s) or shape_key(s))
    a, b = {"type": "sphere", "radius": 0.1}, {"type": "sphere", "radius": 0.2}
    mech = Mechanism(space="spatial", bodies=[Body("a", shape=a), Body("b", shape=b), Body("c", shape=dict(a))])
    mesher = counting(default_shape_mesher())
    builder = SceneBuilder(mesher)
    scene = builder.build(mech)
    assert a in keys and b in keys
    assert mesher.calls == 2  # equal keys, one mesh: a and c
    assert scene.bodies[0].mesh is scene.bodies[2].mesh and scene.bodies[1].mesh is not scene.bodies[0].mesh
    # a shape JSON cannot write has no key: meshed on its own each time, and drawn all the same
    odd = {"type": "sphere", "radius": 0.1, "note": {1, 2}}
    assert shape_key(odd) is None
    mech = Mechanism(space="spatial", bodies=[Body("a", shape=a), Body("d", shape=odd), Body("e", shape=odd)])
    mesher = counting(lambda body, loc: default_shape_mesher()(Body(body.name, shape=a), loc))
    scene = SceneBuilder(mesher).build(mech)
    assert mesher.calls == 3 and all(bg.from_shape for bg in scene.bodies)
