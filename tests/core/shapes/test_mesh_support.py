"""Meshes (closed, outward, on the surface, enclosing the volume), support points and bounding radii."""

from __future__ import annotations

import numpy as np
import pytest

from core.shapes import HALFSPACE_PATCH_SIZE, parse_shape

from .cases import BOUNDED, HALFSPACE, ident


def welded(verts: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Faces re-indexed so that vertices at the same position (duplicated along sharp edges) are one."""
    key = np.round(verts / (np.max(np.abs(verts)) * 1e-9)).astype(np.int64)
    _, inverse = np.unique(key, axis=0, return_inverse=True)
    return inverse.reshape(-1)[faces]


def signed_volume(verts: np.ndarray, faces: np.ndarray) -> float:
    a, b, c = (verts[faces[:, k]] for k in range(3))
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6)  # divergence theorem over the triangles


@pytest.mark.parametrize("case", BOUNDED, ids=ident)
def test_mesh_is_closed_consistently_oriented_and_outward(case):
    s = parse_shape(case, "s")
    verts, faces = s.mesh(24)
    assert verts.dtype == float and faces.dtype.kind == "i" and verts.shape[1] == faces.shape[1] == 3
    f = welded(verts, faces)
    directed = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    assert len(np.unique(directed, axis=0)) == len(directed)  # no directed edge twice: consistent orientation
    undirected = np.sort(directed, axis=1)
    _, counts = np.unique(undirected, axis=0, return_counts=True)
    assert np.all(counts == 2)  # every edge has exactly two faces: closed (watertight)
    a, b, c = (verts[faces[:, k]] for k in range(3))
    normals = np.cross(b - a, c - a)
    assert np.all(np.linalg.norm(normals, axis=1) > 0)  # no degenerate triangles
    # convex solid: every face normal points away from an interior point
    assert np.all(np.einsum("ij,ij->i", normals, (a + b + c) / 3 - s.interior_point()) > 0)


@pytest.mark.parametrize("case", BOUNDED, ids=ident)
def test_fine_mesh_encloses_the_volume(case):
    s = parse_shape(case, "s")
    verts, faces = s.mesh(160)
    # inscribed meshes lose O(1/n^2) of the volume; flat-faced solids are exact
    vol = signed_volume(verts, faces)
    assert vol == pytest.approx(s.volume, rel=3e-3)
    assert vol <= s.volume * (1 + 1e-12)  # vertices on a convex surface: the mesh is inside


def test_halfspace_mesh_is_a_patch_of_the_plane_facing_out():
    s = parse_shape(HALFSPACE, "s")
    verts, faces = s.mesh()
    n = np.array(HALFSPACE["normal"]) / 3.0
    a, b, c = (verts[faces[:, k]] for k in range(3))
    normals = np.cross(b - a, c - a)
    np.testing.assert_allclose(normals / np.linalg.norm(normals, axis=1)[:, None], [n, n], atol=1e-14)
    assert np.ptp(verts @ np.cross(n, [1, 0, 0]) / np.linalg.norm(np.cross(n, [1, 0, 0]))) > 0.5 * HALFSPACE_PATCH_SIZE
    assert np.all(np.isfinite(verts))
    np.testing.assert_allclose(s.values(verts), 0.0, atol=1e-12)  # the patch lies in the boundary plane


def _directions(seed: int, n: int = 60) -> np.ndarray:
    d = np.random.default_rng(seed).normal(size=(n, 3))
    # include the axes and a diagonal, where sign() and zero components matter
    return np.concatenate([d, np.eye(3), -np.eye(3), [[1.0, 1.0, 0.0], [0.0, -1.0, 1.0]]])


@pytest.mark.parametrize("case", BOUNDED, ids=ident)
def test_support_is_on_the_surface_and_farthest(case):
    s = parse_shape(case, "s")
    d = _directions(7)
    x = s.support(d)
    assert x.shape == d.shape
    np.testing.assert_allclose(s.values(x).max(axis=-1), 0.0, atol=1e-9)  # on the boundary
    verts, _ = s.mesh(64)
    best_vertex = np.max(d @ verts.T, axis=1)
    assert np.all(np.einsum("ij,ij->i", d, x) >= best_vertex - 1e-12)  # no mesh vertex is farther along d
    single = s.support(d[0])
    np.testing.assert_allclose(single, x[0])


@pytest.mark.parametrize("case", [c for c in BOUNDED if c["type"] in ("sphere", "ellipsoid", "superellipsoid")],
                         ids=ident)
def test_smooth_support_point_has_its_normal_along_d(case):
    # for a smooth strictly convex body the support point is where the outward normal equals d/|d|
    s = parse_shape(case, "s")
    d = np.random.default_rng(8).normal(size=(40, 3))
    g = s.gradients(s.support(d))[:, 0]
    np.testing.assert_allclose(g / np.linalg.norm(g, axis=1)[:, None], d / np.linalg.norm(d, axis=1)[:, None],
                               atol=1e-9)


def test_support_of_zero_direction_is_a_surface_point():
    for case in BOUNDED:
        s = parse_shape(case, "s")
        assert s.values(s.support(np.zeros(3))).max() == pytest.approx(0.0, abs=1e-9)


def test_halfspace_support():
    s = parse_shape(HALFSPACE, "s")
    n = np.array(HALFSPACE["normal"]) / 3.0
    on_plane = s.support(2 * n)
    assert s.values(on_plane)[0] == pytest.approx(0.0, abs=1e-14)
    far = s.support(np.array([0.0, 0.0, -1.0]))  # pointing into the solid: unbounded
    assert np.any(np.isinf(far)) and not np.any(np.isnan(far))
    assert far[2] == -np.inf


@pytest.mark.parametrize("case", BOUNDED, ids=ident)
def test_bounding_radius_contains_and_is_tight(case):
    s = parse_shape(case, "s")
    verts, _ = s.mesh(96)
    reach = np.linalg.norm(verts, axis=1).max()
    far = np.linalg.norm(s.support(np.random.default_rng(9).normal(size=(2000, 3))), axis=1).max()
    assert max(reach, far) <= s.bounding_radius * (1 + 1e-12)
    assert s.bounding_radius <= max(reach, far) * 1.01  # an origin-centred sphere not much larger than needed


@pytest.mark.parametrize("case", BOUNDED, ids=ident)
def test_inner_radius_is_at_most_half_the_width_along_every_direction(case):
    s = parse_shape(case, "s")
    d = np.random.default_rng(7).normal(size=(2000, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    width = np.einsum("ij,ij->i", d, s.support(d) - s.support(-d))
    assert 0.0 < 2.0 * s.inner_radius <= width.min() * (1 + 1e-12)


def test_face_is_the_vertices_farthest_along_a_direction():
    box = parse_shape({"type": "box", "size": [1.0, 2.0, 0.5]}, "s")
    top = box.face(np.array([0.0, 0.0, 1.0]))
    assert len(top) == 4 and np.all(top[:, 2] == 0.25)
    assert len(box.face(np.array([1.0, 0.0, 1.0]) / np.sqrt(2))) == 2  # an edge
    assert len(box.face(np.ones(3) / np.sqrt(3))) == 1  # a corner
    # a cylinder's cap: points of its rim (their mean its centre), only along the axis (to the tie); else no face
    cyl = parse_shape({"type": "cylinder", "radius": 0.4, "length": 1.5}, "s")
    cap = cyl.face(np.array([0.0, 0.0, -1.0]))
    assert len(cap) >= 3 and np.allclose(cap[:, 2], -0.75) and np.allclose(np.hypot(cap[:, 0], cap[:, 1]), 0.4)
    assert np.allclose(cap.mean(axis=0), [0.0, 0.0, -0.75])
    assert cyl.face(np.array([1e-3, 0.0, 1.0]) / np.hypot(1e-3, 1.0)) is None  # a tilted cap: its rim's lowest point
    assert cyl.face(np.array([1.0, 0.0, 0.0])) is None  # the curved side


def test_corners_are_the_vertices_or_rim_points_and_none_for_curved_shapes():
    box = parse_shape({"type": "box", "size": [1.0, 2.0, 0.5]}, "s")
    c = box.corners(np.array([0.0, 0.0, -1.0]))
    # the eight (+-0.5, +-1, +-0.25), each once, whatever the direction
    assert sorted(map(tuple, np.round(c, 12))) == sorted((x, y, z) for x in (-0.5, 0.5) for y in (-1.0, 1.0)
                                                         for z in (-0.25, 0.25))
    cyl = parse_shape({"type": "cylinder", "radius": 0.4, "length": 1.5}, "s")
    c = cyl.corners(np.array([0.0, 0.0, 1.0]))
    # each cap's face points, both caps: on the rims
    assert np.allclose(np.hypot(c[:, 0], c[:, 1]), 0.4) and np.allclose(np.abs(c[:, 2]), 0.75)
    top, bottom = c[c[:, 2] > 0], c[c[:, 2] < 0]
    assert np.allclose(top[:, :2], cyl.face(np.array([0.0, 0.0, 1.0]))[:, :2]) and len(bottom) == len(top)
    # lying on its side towards d: each rim's farthest point along d is one of them (a rolling cylinder's line of
    # contact), whatever the angle
    for ang in (0.3, 2.0, -1.1):
        d = np.array([np.cos(ang), np.sin(ang), 0.0])
        c = cyl.corners(d)
        deepest = c[np.isclose(c @ d, 0.4)]
        assert len(deepest) == 2 and np.allclose(deepest[:, :2], 0.4 * d[:2]) and set(deepest[:, 2]) == {0.75, -0.75}
    for spec in ({"type": "sphere", "radius": 1.0}, {"type": "ellipsoid", "radii": [1.0, 2.0, 3.0]}):
        assert parse_shape(spec, "s").corners(np.array([0.0, 0.0, 1.0])) is None


def test_mesh_resolution_controls_the_vertex_count():
    s = parse_shape({"type": "sphere", "radius": 1.0}, "s")
    v8, _ = s.mesh(8)
    v32, _ = s.mesh(32)
    assert len(v8) == 2 + 8 * 3 and len(v32) == 2 + 32 * 15  # poles + n_lon * (n_lat - 1) rings, n_lat = n/2
