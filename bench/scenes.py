"""Contact scenes for the benchmark: format-v1 documents built from a seed (a developer's tool, not a test).

    from scenes import FAMILIES, mechanism
    mech = mechanism("cubes4", seed=1234)       # a Mechanism (core.io.loads of the document)
    doc = FAMILIES["cubes4"].document(1234)     # the format-v1 document (a dict) itself

Every family is one kind of scene whose random parts (jitter, small turns, drop heights, placement, launch
velocity) come from numpy's generator with the given seed, so a benchmark can draw new seeds at every run (no
solver can be tuned to one trajectory) and any run is reproduced from its seed. Scenes are built without initial
overlap: bodies lie on grids with clearance or are placed by rejection on their bounding spheres
(tests/bench/test_scenes.py checks it).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from core import io
from core.transforms import quat_to_matrix

ROOT = Path(__file__).resolve().parents[1]
G = 9.81
FLOOR = {"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}}
_WALL_NORMALS = ([-1, 0, 0], [1, 0, 0], [0, -1, 0], [0, 1, 0])


def document(bodies: list[dict], mu: float = 0.5, ell=(1, 1, 0), gravity=(0, 0, -G), name: str = "") -> dict:
    """A format-v1 document (dict) of free bodies and ground shapes with one friction coefficient."""
    doc = {"format": "linkwright.mechanism", "version": 1, "space": "spatial", "gravity": list(gravity),
           "bodies": bodies, "contact": {"friction": mu, "ellipsoid": list(ell)}}
    if name:
        doc["name"] = name
    return doc


def load(doc: dict):
    """The Mechanism of a document, through the file reader (so the bench sees exactly what a file would give)."""
    return io.loads(json.dumps(doc))


def bin_walls(half: float) -> list[dict]:
    """Floor z = 0 and four walls |x|, |y| <= half, all half-spaces (a square bin)."""
    return [FLOOR] + [{"name": f"wall{i}", "ground": True, "shape": {"type": "halfspace", "normal": n, "offset": -half}}
                      for i, n in enumerate(_WALL_NORMALS)]


# --- sphere piles (the bench's original 27- and 8-sphere piles; the same documents for the same seed) -------------

def box_pile_document(n_side: int, half: float, pitch: float, jitter: float, dz: float, mu: float = 0.4,
                      radius: float = 0.05, mass: float = 0.1, seed: int = 0) -> dict:
    """n_side^3 spheres on a jittered grid (pitch, layers dz apart from z = 0.06 m) in a bin of half-width `half`
    (the horizontal jitter, standard deviation `jitter`, from numpy's generator with this seed).

    A sphere whose jitter would bring it into an earlier one of its layer (layers are dz > 2 radius apart, so only
    spheres of one layer can meet) or into a wall is drawn again, so no scene starts overlapping; a seed whose first
    draws overlap nowhere gives the same scene as a plain draw."""
    rng = np.random.default_rng(seed)
    balls, centres = [], []
    for i in range(n_side):
        for j in range(n_side):
            for k in range(n_side):
                while True:
                    p = np.array([(i - 0.5 * (n_side - 1)) * pitch + jitter * rng.standard_normal(),
                                  (j - 0.5 * (n_side - 1)) * pitch + jitter * rng.standard_normal(), 0.06 + dz * k])
                    clear_of_walls = np.all(np.abs(p[:2]) + radius <= half)
                    if clear_of_walls and all(np.linalg.norm(p - c) >= 2 * radius for c in centres):
                        break
                centres.append(p)
                balls.append({"name": f"s{i}{j}{k}", "mass": mass, "shape": {"type": "sphere", "radius": radius},
                              "pose": {"position": p.tolist()}})
    return document(bin_walls(half) + balls, mu=mu, name=f"{n_side ** 3} spheres in a bin (seed {seed})")


def pile27_document(seed: int = 0, mu: float = 0.4) -> dict:
    """27 spheres (r = 5 cm, 0.1 kg) settling in a bin of half-width 0.2 m."""
    return box_pile_document(3, 0.2, 0.12, 0.005, 0.125, mu=mu, seed=seed)


def pile8_document(seed: int = 0, mu: float = 0.4) -> dict:
    """The 2x2x2 pile of tests/core/contact/test_pile.py (bin half-width 0.13 m)."""
    return box_pile_document(2, 0.13, 0.11, 0.004, 0.115, mu=mu, seed=seed)


def pile27(seed: int = 0, mu: float = 0.4):
    """The 27-sphere pile as a Mechanism."""
    return load(pile27_document(seed, mu))


def pile8(seed: int = 0, mu: float = 0.4):
    """The 8-sphere pile as a Mechanism."""
    return load(pile8_document(seed, mu))


# --- cubes ----------------------------------------------------------------------------------------------------------

CUBE = 0.1  # edge (m)
CUBE_DENSITY = 500.0  # kg/m^3: 0.5 kg cubes
_CUBE_VERTS = 0.5 * CUBE * np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)


def small_turn(rng: np.random.Generator, max_deg: float, min_deg: float = 0.5) -> list[float]:
    """A unit quaternion (w, x, y, z) turning by an angle uniform in [min_deg, max_deg] about a random axis."""
    axis = rng.standard_normal(3)
    axis /= np.linalg.norm(axis)
    a = math.radians(rng.uniform(min_deg, max_deg))
    return [math.cos(a / 2)] + list(math.sin(a / 2) * axis)


def _cube(name: str, center, q) -> dict:
    return {"name": name, "density": CUBE_DENSITY, "shape": {"type": "box", "size": [CUBE] * 3},
            "pose": {"position": [float(c) for c in center], "orientation": [float(c) for c in q]}}


def cube_layer(rng: np.random.Generator, nx: int, ny: int, base: float, *, gap: float = 0.01,
               drop=(0.003, 0.008), max_deg: float = 3.0, prefix: str = "c") -> tuple[list[dict], float]:
    """An nx x ny layer of slightly turned cubes, centres (CUBE + gap) apart (1 cm between faces), each with its
    lowest corner `drop` (uniform in the range) above the height `base`. Returns the bodies and the layer's top.

    With turns of at most 3 degrees a cube reaches at most CUBE/2 (cos + 2 sin)(3 deg) - CUBE/2 = 3.5 mm beyond its
    unturned faces, so neighbours 1 cm apart keep > 3 mm between their bounding boxes."""
    bodies, top = [], base
    pitch = CUBE + gap
    for i in range(nx):
        for j in range(ny):
            q = small_turn(rng, max_deg)
            v = _CUBE_VERTS @ quat_to_matrix(np.array(q)).T
            z = base + rng.uniform(*drop) - v[:, 2].min()
            c = ((i - 0.5 * (nx - 1)) * pitch, (j - 0.5 * (ny - 1)) * pitch, z)
            bodies.append(_cube(f"{prefix}{i}{j}", c, q))
            top = max(top, z + v[:, 2].max())
    return bodies, top


def _cube_bin_half(n: int, gap: float = 0.01) -> float:
    """Half-width of a bin around an n x n cube layer with 1.5 cm (less up to 3.5 mm of turn) to each wall."""
    return 0.5 * (n * CUBE + (n - 1) * gap) + 0.015


def cubes_document(seed: int, layers: int = 1, n: int = 2, mu: float = 0.5) -> dict:
    """n x n slightly turned cubes per layer (turns up to 3 degrees, 1 cm apart), each layer dropped 3-8 mm onto the
    floor of a bin or onto the layer below (measured from that layer's highest corner)."""
    rng = np.random.default_rng(seed)
    bodies, base = [], 0.0
    for k in range(layers):
        layer, base = cube_layer(rng, n, n, base, prefix=f"c{k}_")
        bodies += layer
    count = layers * n * n
    return document(bin_walls(_cube_bin_half(n)) + bodies, mu=mu, name=f"{count} turned cubes in a bin (seed {seed})")


def stack_document(seed: int, n: int = 5, mu: float = 0.5) -> dict:
    """n cubes stacked on the floor, each offset by up to 5 mm horizontally and turned by up to 3 degrees, with
    1-3 mm between a cube's lowest corner and the highest corner below (3-8 mm above the floor for the first)."""
    rng = np.random.default_rng(seed)
    bodies, base = [], 0.0
    for k in range(n):
        q = small_turn(rng, 3.0)
        v = _CUBE_VERTS @ quat_to_matrix(np.array(q)).T
        z = base + (rng.uniform(0.003, 0.008) if k == 0 else rng.uniform(0.001, 0.003)) - v[:, 2].min()
        xy = rng.uniform(-0.005, 0.005, 2)
        bodies.append(_cube(f"c{k}", (xy[0], xy[1], z), q))
        base = z + v[:, 2].max()
    return document([FLOOR] + bodies, mu=mu, name=f"stack of {n} cubes (seed {seed})")


# --- mixed shapes ---------------------------------------------------------------------------------------------------

def random_quaternion(rng: np.random.Generator) -> list[float]:
    """A uniformly distributed random orientation (normalised Gaussian 4-vector)."""
    q = rng.standard_normal(4)
    return list(q / np.linalg.norm(q))


def _mixed_shapes(rng: np.random.Generator) -> list[tuple[str, dict, float]]:
    """(name, shape, bounding radius) of 4 spheres, 3 cubes, 2 cylinders, 2 ellipsoids and 2 polytopes."""
    out = []
    for i in range(4):
        r = rng.uniform(0.035, 0.055)
        out.append((f"ball{i}", {"type": "sphere", "radius": r}, r))
    for i in range(3):
        s = rng.uniform(0.06, 0.09)
        out.append((f"cube{i}", {"type": "box", "size": [s, s, s]}, s * math.sqrt(3) / 2))
    for i in range(2):
        r, L = rng.uniform(0.03, 0.045), rng.uniform(0.06, 0.12)
        out.append((f"can{i}", {"type": "cylinder", "radius": r, "length": L}, math.hypot(r, L / 2)))
    for i in range(2):
        radii = rng.uniform(0.025, 0.06, 3)
        out.append((f"egg{i}", {"type": "ellipsoid", "radii": list(radii)}, float(radii.max())))
    for i in range(2):
        # the convex hull of 10 random points on an ellipsoid (triangular faces: no four points coplanar)
        d = rng.standard_normal((10, 3))
        pts = d / np.linalg.norm(d, axis=1)[:, None] * rng.uniform(0.035, 0.06, 3)
        pts -= pts.mean(axis=0)
        out.append((f"rock{i}", {"type": "polytope", "vertices": pts.tolist()},
                    float(np.linalg.norm(pts, axis=1).max())))
    return out


def mixed_document(seed: int, half: float = 0.2, mu: float = 0.5, clearance: float = 0.003) -> dict:
    """13 shapes (spheres, cubes, cylinders, ellipsoids, polytopes) at random positions and orientations in a bin of
    half-width `half`, placed by rejection so that bounding spheres stay `clearance` apart (and off floor and walls)."""
    rng = np.random.default_rng(seed)
    placed: list[tuple[np.ndarray, float]] = []
    bodies = []
    for name, shape, R in _mixed_shapes(rng):
        zmax = 0.5
        for attempt in range(100_000):
            if attempt and attempt % 200 == 0:
                zmax += 0.05  # the low space is full: allow higher
            lim = half - R - clearance
            c = np.array([rng.uniform(-lim, lim), rng.uniform(-lim, lim), rng.uniform(R + clearance, zmax)])
            if all(np.linalg.norm(c - c2) >= R + R2 + clearance for c2, R2 in placed):
                break
        else:  # (unreachable: the allowed height grows until there is room)
            raise RuntimeError(f"mixed pile: no room for {name}")
        placed.append((c, R))
        # shapes are body-centred except polytopes (recentred above on their vertex mean: their bound holds too)
        bodies.append({"name": name, "density": 500.0, "shape": shape,
                       "pose": {"position": c.tolist(), "orientation": random_quaternion(rng)}})
    return document(bin_walls(half) + bodies, mu=mu, name=f"mixed pile of {len(bodies)} shapes (seed {seed})")


# --- one-contact scenes ---------------------------------------------------------------------------------------------

def sphere_plane_document(seed: int) -> dict:
    """A sphere (1 kg, r = 0.1 m) launched sliding on the plane z = 0 (mu 0.3) at 0.5-2 m/s in a random direction,
    with a random spin of up to 10 rad/s about the vertical (it slides, then rolls)."""
    rng = np.random.default_rng(seed)
    heading = rng.uniform(0, 2 * math.pi)
    v = rng.uniform(0.5, 2.0)
    ball = {"name": "ball", "mass": 1.0, "shape": {"type": "sphere", "radius": 0.1}, "pose": {"position": [0, 0, 0.1]},
            "velocity": {"linear": [v * math.cos(heading), v * math.sin(heading), 0.0],
                         "angular": [0.0, 0.0, rng.uniform(-10, 10)]}}
    return document([FLOOR, ball], mu=0.3, name=f"sphere on a plane (seed {seed})")


def disc_document(seed: int) -> dict:
    """resources/examples/contact_disc_roll.json with its launch speed drawn in 1.5-2.5 m/s and its back-spin in
    2-8 rad/s (the example: 2 m/s and 5 rad/s)."""
    rng = np.random.default_rng(seed)
    doc = json.loads((ROOT / "resources/examples/contact_disc_roll.json").read_text())
    disc = next(b for b in doc["bodies"] if b["name"] == "disc")
    disc["velocity"] = {"linear": [rng.uniform(1.5, 2.5), 0.0, 0.0], "angular": [0.0, -rng.uniform(2.0, 8.0), 0.0]}
    doc["name"] = f"disc rolling and sliding (seed {seed})"
    return doc


# --- the families ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Family:
    """One kind of scene: its builder from a seed, and what the bench runs by default."""

    name: str
    document: Callable[[int], dict]  # seed -> format-v1 document
    description: str
    dynamic: int  # number of free bodies
    steps: int  # steps of a bench run (h = 0.01 s)
    seeds: int  # seeds drawn per run (full bench; --quick draws fewer)
    target: tuple[float, float] | None = None  # issue 19's steps/s on one core: (median over seeds, slowest seed)
    default: bool = True  # run when no scenes are named (--scenes); False: only when named


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("pile27", lambda s: pile27_document(s, 0.4), "27 spheres in a bin, jitter seed, mu 0.4", 27, 100, 10,
           (50, 20)),
    Family("pile27-mu0.8", lambda s: pile27_document(s, 0.8), "27 spheres in a bin, jitter seed, mu 0.8", 27, 100, 10,
           (50, 20)),
    Family("pile8", lambda s: pile8_document(s, 0.4), "8 spheres in a bin, jitter seed, mu 0.4", 8, 100, 5),
    Family("cubes4", lambda s: cubes_document(s, 1, 2), "4 turned cubes dropped 3-8 mm into a bin", 4, 100, 5,
           (20, 20)),
    Family("cubes8", lambda s: cubes_document(s, 2, 2), "8 turned cubes in two layers in a bin", 8, 100, 5, (20, 20)),
    Family("stack5", stack_document, "5-cube stack, small random offsets and turns", 5, 100, 5, (20, 20)),
    Family("layer9", lambda s: cubes_document(s, 1, 3), "3x3 layer of turned cubes in a bin", 9, 100, 5, (20, 20)),
    Family("mixed13", mixed_document, "13 mixed shapes (spheres, cubes, cylinders, ellipsoids, polytopes)", 13, 150,
           5),
    Family("sphere", sphere_plane_document, "sphere launched on a plane (random direction, speed, spin)", 1, 500, 3,
           (3000, 3000)),
    Family("disc", disc_document, "the disc example, random launch speed and back-spin", 1, 300, 3),
    # (not one of issue 19's scenes, and minutes a run: only when named, --scenes pile64)
    Family("pile64", lambda s: box_pile_document(4, 0.25, 0.12, 0.005, 0.125, seed=s),
           "64 spheres in a bin (4 layers), jitter seed, mu 0.4", 64, 150, 3, default=False),
)}


def mechanism(family: str, seed: int):
    """The Mechanism of a family's scene for this seed."""
    return load(FAMILIES[family].document(seed))


# --- overlap check independent of the solver ------------------------------------------------------------------------

def _world_planes(model, state, i, R) -> tuple[np.ndarray, np.ndarray]:
    """(normals (m, 3), offsets (m,)) of a box or polytope body in the world: n.x <= d (unit n)."""
    sh = model.shapes[i]
    zero = np.zeros(3)
    n_body, d_body = sh.gradients(zero), -sh.values(zero)  # the plane inequalities n.y - d are linear
    origin = state.p[i] - R @ model.com_body[i]
    n = n_body @ R.T
    return n, d_body + n @ origin


def polytope_overlap(n_a, d_a, n_b, d_b) -> float:
    """Overlap depth bound of two convex polytopes {n.x <= d}: 2 t for the largest ball (radius t) inside both (a
    linear programme, HiGHS, its radius certified at its centre), 0 when they do not overlap. Translating one by less
    than 2 t cannot separate them, so the depth is at least this; it is exact when the overlap is a slab between two
    parallel faces."""
    from scipy.optimize import linprog

    A = np.vstack([n_a, n_b])
    A = np.hstack([A, np.ones((len(A), 1))])  # n.x + t <= d
    b = np.concatenate([d_a, d_b])
    res = linprog(c=[0, 0, 0, -1], A_ub=A, b_ub=b, bounds=[(None, None)] * 3 + [(None, 1.0)], method="highs")
    if res.status != 0:
        return 0.0
    # the radius is certified at the programme's centre x: the ball of radius min(d - n.x) about x is inside both.
    # (The programme's own t may exceed it by its feasibility tolerance: two boxes touching face to face, the
    # solver's gap 6e-23 m, gave t = 5e-9 m at HiGHS's default tolerance and 1.4e-9 m at 1e-10, with the rows
    # violated by as much; mixed piles, seeds 41371365 and 1988375039)
    return 2.0 * max(0.0, float(np.min(b - A[:, :3] @ res.x[:3])))


def exact_overlap(model, state) -> tuple[float, int]:
    """(most negative signed distance, number of pairs checked) over the model's candidate pairs, from the poses
    alone (independent of the contact solver): exact distances for sphere-sphere (centre distance minus radii) and
    any shape against a half-space (the shape's support point along the inward normal); for two boxes or polytopes
    minus the overlap depth bound of polytope_overlap when they overlap (nothing when they do not). Other pairs
    (curved shape against a polytope or another curved shape) are not checked. Returns (inf, 0) when no pair is."""
    deepest, checked = math.inf, 0
    R = [quat_to_matrix(q) for q in state.q]
    planes: dict[int, tuple] = {}

    def to_world(i, y):
        return state.p[i] + R[i] @ (y - model.com_body[i])

    for a, b, _mu in model.pairs:
        sa, sb = model.shapes[a], model.shapes[b]
        if model.halfspace[b] is not None or model.halfspace[a] is not None:
            hs, other = (b, a) if model.halfspace[b] is not None else (a, b)
            n_body, off = model.halfspace[hs]
            n_body = np.asarray(n_body, float)
            nrm = np.linalg.norm(n_body)
            n_body, off = n_body / nrm, off / nrm
            n = R[hs] @ n_body
            off_w = float(n @ to_world(hs, n_body * off))
            y = model.shapes[other].support(R[other].T @ (-n))
            d = float(n @ to_world(other, y) - off_w)
        elif sa.type == "sphere" and sb.type == "sphere":
            d = float(np.linalg.norm(to_world(a, np.zeros(3)) - to_world(b, np.zeros(3))) - sa.radius - sb.radius)
        elif sa.type in ("box", "polytope") and sb.type in ("box", "polytope"):
            checked += 1
            if np.linalg.norm(to_world(a, np.zeros(3)) - to_world(b, np.zeros(3))) > \
                    sa.bounding_radius + sb.bounding_radius:
                continue  # bounding spheres (about the body origins) apart
            for i in (a, b):
                if i not in planes:
                    planes[i] = _world_planes(model, state, i, R[i])
            depth = polytope_overlap(*planes[a], *planes[b])
            if depth > 0:
                deepest = min(deepest, -depth)
            continue
        else:
            continue
        checked += 1
        deepest = min(deepest, d)
    return deepest, checked
