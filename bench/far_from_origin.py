"""Newton iterations of the contact step as a function of the distance from the origin (docs/contact.md, "How far
from the origin"): seeded scenes moved along z so that their contact is at z = -D, run with the reach check off (a
contact run refuses a body reaching stepper.MAX_REACH = 2^21 m, and a file positions beyond 1e6 m; this measures
what they refuse).

Scenes: a 1 cm and a 1 um sphere dropped onto a floor from eight seeded heights (0.01-1 m), 60 steps each; an
ellipsoid dropped turned and spinning (8 seeds, 40 steps); a box dropped onto a slab lying on the floor (8 seeds, 40
steps); h = 0.01 s.  Prints one markdown row per distance: mean Newton iterations a step, [steps halved, steps by
the explicit method], and the runs that stopped.

    python bench/far_from_origin.py [--distances 0,1e5,1e6,1.5e6,2.1e6,4.2e6,8.4e6] [--seeds 8]
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import core.contact.recording as recording  # noqa: E402
from core import io, validate  # noqa: E402
from core.contact import build_model, simulate  # noqa: E402

FAMILIES = ("sphere 1 cm", "sphere 1 um", "ellipsoid", "box on a slab")


def _quat(rng) -> list[float]:
    q = rng.normal(size=4)
    return [float(x) for x in q / np.linalg.norm(q)]


def document(family: str, D: float, seed: int) -> dict:
    """The scene of `family` for `seed`, its floor z <= -D."""
    rng = np.random.default_rng(seed)
    base = np.array([0.0, 0.0, -D])
    bodies = [{"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": -D}}]
    if family.startswith("sphere"):
        r = 0.01 if family.endswith("cm") else 1e-6
        drop = float(rng.uniform(0.01, 1.0))
        bodies.append({"name": "ball", "density": 1000.0, "shape": {"type": "sphere", "radius": r},
                       "pose": {"position": [0.0, 0.0, -D + r + drop]}})
    else:
        v = [float(x) for x in rng.uniform(-0.5, 0.5, 2)] + [0.0]
        w = [float(x) for x in rng.uniform(-2, 2, 3)]
        if family == "ellipsoid":
            p = base + [0, 0, 0.14 + rng.uniform(0, 0.01)]
            bodies.append({"name": "egg", "mass": 1.0, "shape": {"type": "ellipsoid", "radii": [0.1, 0.07, 0.05]},
                           "pose": {"position": [float(x) for x in p], "orientation": _quat(rng)},
                           "velocity": {"linear": v, "angular": w}})
        else:
            p = base + [rng.uniform(-0.05, 0.05), rng.uniform(-0.05, 0.05), 0.11 + rng.uniform(0, 0.01)]
            bodies.append({"name": "slab", "mass": 1.0, "shape": {"type": "box", "size": [0.4, 0.4, 0.05]},
                           "pose": {"position": [float(x) for x in base + [0, 0, 0.025]]}})
            bodies.append({"name": "box", "mass": 2.0, "shape": {"type": "box", "size": [0.1, 0.1, 0.1]},
                           "pose": {"position": [float(x) for x in p]}, "velocity": {"linear": v, "angular": [0, 0, 0]}})
    return {"format": "linkwright.mechanism", "version": 1, "name": family, "space": "spatial",
            "gravity": [0, 0, -9.81], "bodies": bodies, "contact": {"friction": 0.5}}


def measure(family: str, D: float, seeds: int) -> str:
    """The table cell of `family` at distance D."""
    steps = 60 if family.startswith("sphere") else 40
    its, halved, explicit, stopped = [], 0, 0, 0
    for seed in range(seeds):
        rec = simulate(build_model(io.from_dict(document(family, D, seed))), t_end=steps * 0.01, dt=0.01)
        its += list(rec.iterations[1:])
        halved += int(np.count_nonzero(rec.halvings[1:]))
        explicit += int(np.count_nonzero(rec.fallback[1:] == 1))  # (2: the relaxed problem's, not counted here)
        stopped += not rec.completed
    cell = f"{np.mean(its):.1f}" + (f" [{halved}, {explicit}]" if halved or explicit else "")
    return cell + (f", {stopped} of {seeds} runs stopped" if stopped else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--distances", default="0,1e5,1e6,1.5e6,2.1e6,4.2e6,8.4e6")
    ap.add_argument("--seeds", type=int, default=8)
    args = ap.parse_args()
    # the reach check off, and the file's coordinate bound (1e6 m) lifted: this measures beyond them
    recording.too_far = lambda model, p: None
    validate.MAX_COORDINATE = 1e12
    validate.vector.__defaults__ = (3, 1e12)
    io._vec.__defaults__ = (3, 1e12)
    print("| D | spacing | " + " | ".join(FAMILIES) + " |")
    print("| --- | --- |" + " --- |" * len(FAMILIES))
    for D in (float(x) for x in args.distances.split(",")):
        cells = [measure(f, D, args.seeds) for f in FAMILIES]
        spacing = f"{np.spacing(D):.2g} m" if D else ""
        print(f"| {D:g} m | {spacing} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
