"""Structure analysis speed: a 1,000-body, 1,500-joint graph must analyse well under 10 ms (live GUI updates); and the
rank-based count (core.kinematics.rank_mobility, computed off the GUI thread) of large drawings: open chains, ladders
of four-bar loops (core.generate.ladder) and random graphs with seeds drawn at every run (printed; `--seed` repeats a
run). Results go to bench/results/structure.json and structure.md."""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core import structure  # noqa: E402
from core.generate import ladder  # noqa: E402
from core.kinematics import rank_mobility  # noqa: E402
from core.model import Body, Joint, Mechanism  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "structure"


def random_mechanism(n_bodies: int, n_joints: int, seed: int = 0) -> Mechanism:
    """A connected random planar graph: a random spanning tree plus random chords."""
    rng = np.random.default_rng(seed)
    m = Mechanism(space="planar")
    m.bodies = [Body(f"b{i}", ground=i == 0) for i in range(n_bodies)]
    joints = []
    for k in range(1, n_bodies):
        joints.append(Joint(f"t{k}", "revolute", (f"b{k}", f"b{int(rng.integers(0, k))}")))
    while len(joints) < n_joints:
        a, b = (int(x) for x in rng.integers(0, n_bodies, 2))
        if a != b:
            joints.append(Joint(f"c{len(joints)}", "revolute", (f"b{a}", f"b{b}")))
    m.joints = joints
    return m


def chain(n: int) -> Mechanism:
    """An open planar chain of n bodies on revolutes (no loop)."""
    m = Mechanism(name=f"chain{n}", space="planar")
    m.bodies = [Body(f"b{i}", ground=i == 0) for i in range(n)]
    m.joints = [Joint(f"J{i}", "revolute", (f"b{i}", f"b{i + 1}"), (float(i), 0.0, 0.0)) for i in range(n - 1)]
    return m


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, help="master seed of the random graphs (default: drawn)")
    args = ap.parse_args()
    master = args.seed if args.seed is not None else secrets.randbelow(2**31)
    seeds = [int(s) for s in np.random.default_rng(master).integers(0, 2**31, 3)]
    print(f"master seed {master}; random graph seeds {seeds}")
    rows = []
    for n, j in ((200, 300), (1000, 1500)):
        m = random_mechanism(n, j)
        structure.analyze(m)  # warm up
        times = []
        for _ in range(30):
            t0 = time.perf_counter()
            rep = structure.analyze(m)
            times.append(time.perf_counter() - t0)
        print(f"structure.analyze {n} bodies / {j} joints ({rep.loops} loops): "
              f"median {np.median(times) * 1e3:.2f} ms, min {min(times) * 1e3:.2f} ms")
        rows.append({"what": "structure.analyze", "scene": f"random {n} bodies / {j} joints", "seed": 0,
                     "median_ms": float(np.median(times) * 1e3)})
    scenes = [(f"chain {n}", 0, chain(n)) for n in (1000, 3000)]
    scenes += [(f"ladder {n}", 0, ladder(n)) for n in (1000, 3000)]
    scenes += [(f"random {n} bodies / {j} joints", s, random_mechanism(n, j, s))
               for (n, j), s in zip(((200, 300), (500, 700), (1000, 1500)), seeds)]
    for name, seed, m in scenes:
        t0 = time.process_time()
        r = rank_mobility(m)
        cpu = time.process_time() - t0
        print(f"rank_mobility {name} (seed {seed}): {cpu:.2f} CPU-s, {r.coordinates} coordinates, {r.equations} "
              f"loop equations, rank {r.rank}, mobility {r.mobility_rank}")
        rows.append({"what": "rank_mobility", "scene": name, "seed": seed, "cpu_s": cpu,
                     "coordinates": r.coordinates, "equations": r.equations, "rank": r.rank})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.with_suffix(".json").write_text(json.dumps({"master_seed": master, "rows": rows}, indent=1))
    lines = [f"master seed {master}", "", "| what | scene | seed | result |", "| --- | --- | ---: | ---: |"]
    for r in rows:
        result = f"{r['median_ms']:.2f} ms (median)" if "median_ms" in r else f"{r['cpu_s']:.2f} CPU-s"
        lines.append(f"| {r['what']} | {r['scene']} | {r['seed']} | {result} |")
    OUT.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
