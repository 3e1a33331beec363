"""Structure analysis speed: a 1,000-body, 1,500-joint graph must analyse well under 10 ms (live GUI updates)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core import structure  # noqa: E402
from core.model import Body, Joint, Mechanism  # noqa: E402


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


def main() -> None:
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


if __name__ == "__main__":
    main()
