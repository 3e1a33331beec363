"""A polytope given by vertices: the merge of coplanar hull facets (one plane per flat face) and the bound on the
number of vertices and planes (user test s56, S2: a 1,000-vertex polytope took 18 s to load, 20,000 over 5 minutes)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from core import io, model, validate
from core.errors import LinkwrightError
from core.shapes import parse_shape
from core.shapes import polyhedra
from core.shapes.polyhedra import _merge_planes, _oriented_hull, hull_of_points
from tests.conftest import EXAMPLES, ROOT


def _brute_force(normals, offsets, scale):
    """The rule stated plainly: in order, a facet's plane is kept unless a plane kept before it agrees with it (every
    normal component within 1e-7, the offset within 1e-7 * scale)."""
    kept: list[int] = []
    for i in range(len(offsets)):
        if not any(np.max(np.abs(normals[i] - normals[j])) < 1e-7 and abs(offsets[i] - offsets[j]) < 1e-7 * scale
                   for j in kept):
            kept.append(i)
    return normals[kept], offsets[kept]


def _point_sets():
    rng = np.random.default_rng(56)
    for n in (4, 5, 12, 40, 150):
        for _ in range(6):
            yield rng.normal(size=(n, 3))
            p = rng.normal(size=(n, 3))
            yield p / np.linalg.norm(p, axis=1)[:, None]
    g = np.linspace(-1.0, 1.0, 4)
    grid = np.array(np.meshgrid(g, g, g)).reshape(3, -1).T  # a cube with points exactly on its faces and inside
    yield grid
    for _ in range(8):
        q = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        yield (grid * rng.uniform(0.01, 3.0, 3)) @ q.T + rng.normal(size=3)  # a turned box
        yield rng.integers(-2, 3, size=(60, 3)).astype(float)  # integer points: many exactly coplanar
    for _ in range(8):
        k = int(rng.integers(10, 120))
        t, r = rng.uniform(0, 2 * np.pi, k), rng.uniform(0.3, 1.0, k)
        yield np.c_[np.cos(t), np.sin(t), rng.choice([-0.5, 0.5], k)]  # prism: caps of many coplanar points
        yield np.c_[r * np.cos(t), r * np.sin(t), rng.choice([-0.5, 0.5], k)]
        p = rng.uniform(-1, 1, size=(k, 3))
        p[np.arange(k), rng.integers(0, 3, k)] = rng.choice([-1.0, 1.0], k)  # on a cube's faces
        yield p
        for eps in (1e-10, 3e-8, 1e-7, 3e-7):  # near-coplanar: around the merge tolerance
            yield p + rng.normal(scale=eps, size=p.shape)


@pytest.mark.parametrize("pts", list(_point_sets()))
def test_merge_equals_the_brute_force_rule(pts):
    verts, tris, eq = _oriented_hull(pts)
    scale = float(np.max(np.ptp(pts, axis=0)))
    normals, offsets = _merge_planes(eq[:, :3], -eq[:, 3], scale)
    ref_n, ref_d = _brute_force(eq[:, :3], -eq[:, 3], scale)
    assert np.array_equal(normals, ref_n) and np.array_equal(offsets, ref_d)


def test_a_cube_of_many_points_has_six_planes():
    g = np.linspace(-0.05, 0.05, 7)
    pts = np.array(np.meshgrid(g, g, g)).reshape(3, -1).T  # 343 points, 98 on each face: many triangles per face
    *_, normals, offsets = hull_of_points(pts, "v")
    assert len(normals) == 6 and np.allclose(offsets, 0.05)
    assert np.allclose(np.sort(np.abs(normals).sum(axis=1)), 1.0)


def test_the_shipped_polytopes_keep_their_planes():
    doc = json.loads((EXAMPLES / "contact_polytopes.json").read_text())
    for i, b in enumerate(doc["bodies"]):
        if b.get("shape", {}).get("type") == "polytope" and "vertices" in b["shape"]:
            pts = np.array(b["shape"]["vertices"], dtype=float)
            _v, _t, eq = _oriented_hull(pts)
            scale = float(np.max(np.ptp(pts, axis=0)))
            ref_n, ref_d = _brute_force(eq[:, :3], -eq[:, 3], scale)
            g = parse_shape(b["shape"], f"bodies[{i}].shape")._groups[0]
            assert np.array_equal(g.normals, ref_n) and np.array_equal(g.offsets, ref_d)


def _poly_doc(n: int, key: str = "vertices") -> dict:
    rng = np.random.default_rng(n)
    p = rng.normal(size=(n, 3))
    p = 0.1 * p / np.linalg.norm(p, axis=1)[:, None]
    rows = p.tolist() if key == "vertices" else np.c_[p, np.full(n, 0.1)].tolist()  # tangent planes of the sphere
    return {"format": io.FORMAT, "version": io.VERSION, "space": "spatial", "bodies": [
        {"name": "rock", "mass": 1, "shape": {"type": "polytope", key: rows}}]}


def test_vertices_and_planes_at_the_limit_load():
    m = io.from_dict(_poly_doc(validate.MAX_POLYTOPE_VERTICES))
    assert len(m.bodies[0].shape["vertices"]) == validate.MAX_POLYTOPE_VERTICES
    s = parse_shape(m.bodies[0].shape, "s")
    assert s._groups[0].m <= 2 * validate.MAX_POLYTOPE_VERTICES - 4  # faces of a hull of that many points
    m = io.from_dict(_poly_doc(validate.MAX_POLYTOPE_PLANES, "planes"))
    assert len(m.bodies[0].shape["planes"]) == validate.MAX_POLYTOPE_PLANES


@pytest.mark.parametrize("key, limit", [("vertices", validate.MAX_POLYTOPE_VERTICES),
                                        ("planes", validate.MAX_POLYTOPE_PLANES)])
def test_more_than_the_limit_is_refused_located(key, limit):
    doc = _poly_doc(limit + 1, key)
    with pytest.raises(LinkwrightError) as e:
        io.from_dict(doc)
    assert e.value.location == f"bodies[0].shape.{key}"
    assert e.value.message.startswith(f"{limit + 1} {key}, more than the limit of {limit}")
    with pytest.raises(LinkwrightError) as e:  # an edit too
        model.canonical_shape(doc["bodies"][0]["shape"], "bodies[0].shape")
    assert e.value.location == f"bodies[0].shape.{key}"


def test_cli_refuses_20000_vertices_with_status_2(tmp_path):
    f = tmp_path / "many.json"
    f.write_text(json.dumps(_poly_doc(20000)))
    r = subprocess.run([sys.executable, "-m", "app", "analyze", str(f)], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    assert r.returncode == 2
    assert "bodies[0].shape.vertices: 20000 vertices, more than the limit of 256" in r.stderr


def test_a_load_builds_each_shape_once(monkeypatch):
    built = []
    real = polyhedra.hull_of_points
    import core.shapes.kinds as kinds

    def counting(*a, **k):
        built.append(a[1])
        return real(*a, **k)

    monkeypatch.setattr(kinds, "hull_of_points", counting)
    io.from_dict(_poly_doc(50))
    assert built == ["bodies[0].shape.vertices"]
