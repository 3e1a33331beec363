"""Cost of building a polytope from many vertices: the merge of coplanar hull facets (core.shapes.polyhedra._merge_planes,
a k-d tree) against the pairwise loop it replaced (_merge_planes_pairwise, O(F^2): 18 s for a file of 1,000 vertices),
on points on a sphere (no two facets coplanar: F = 2N - 4) and on a cube's faces (many coplanar triangles); and the
load of a file with one polytope at the vertex limit (core.validate.MAX_POLYTOPE_VERTICES). Prints a table; nothing is
asserted. The pairwise reference is timed only up to --reference-max vertices (3,000 took 80 s a call)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core import io, validate  # noqa: E402
from core.shapes.polyhedra import _merge_planes, _oriented_hull  # noqa: E402


def _merge_planes_pairwise(normals: np.ndarray, offsets: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """The O(F^2) loop that _merge_planes replaced (the rule as first written), timed against it."""
    kept_n: list[np.ndarray] = []
    kept_d: list[float] = []
    for n, d in zip(normals, offsets):
        if not any(np.max(np.abs(n - kn)) < 1e-7 and abs(d - kd) < 1e-7 * scale for kn, kd in zip(kept_n, kept_d)):
            kept_n.append(n)
            kept_d.append(float(d))
    return np.array(kept_n), np.array(kept_d)

def points(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "sphere":
        p = rng.normal(size=(n, 3))
        return 0.1 * p / np.linalg.norm(p, axis=1)[:, None]
    p = rng.uniform(-0.05, 0.05, size=(n, 3))  # on a 0.1 m cube's faces
    p[np.arange(n), rng.integers(0, 3, n)] = rng.choice([-0.05, 0.05], n)
    return p


def timed(f, *args) -> tuple[float, object]:
    t = time.perf_counter()
    out = f(*args)
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="200,1000,3000,20000")
    ap.add_argument("--reference-max", type=int, default=1000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print("| points | N | facets | merged planes | merge (s) | pairwise reference (s) |")
    print("|---|---|---|---|---|---|")
    for kind in ("sphere", "cube"):
        for n in map(int, args.sizes.split(",")):
            pts = points(kind, n, rng)
            _verts, _tris, eq = _oriented_hull(pts)
            scale = float(np.max(np.ptp(pts, axis=0)))
            t_new, (normals, _d) = timed(_merge_planes, eq[:, :3], -eq[:, 3], scale)
            ref = "-"
            if n <= args.reference_max:
                t_ref, (rn, _rd) = timed(_merge_planes_pairwise, eq[:, :3], -eq[:, 3], scale)
                ref = f"{t_ref:.3f}" + ("" if np.array_equal(rn, normals) else " (DIFFERENT)")
            print(f"| {kind} | {n} | {len(eq)} | {len(normals)} | {t_new:.4f} | {ref} |")
    n = validate.MAX_POLYTOPE_VERTICES
    doc = {"format": io.FORMAT, "version": io.VERSION, "space": "spatial", "bodies": [
        {"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}},
        {"name": "rock", "mass": 1, "shape": {"type": "polytope", "vertices": points("sphere", n, rng).tolist()},
         "pose": {"position": [0, 0, 0.2]}}]}
    text = json.dumps(doc)
    io.loads(text)  # (imports and first calls)
    best = min(timed(io.loads, text)[0] for _ in range(5))
    print(f"\nload of a file with one polytope of {n} vertices (the limit): {best * 1e3:.1f} ms (best of 5)")


if __name__ == "__main__":
    main()
