"""Contact time-stepper on the mechanism examples (numbers for the README, not a test).

    python bench/bench_mechanisms.py                  # every scene, jointed and free, fresh jitter seeds
    python bench/bench_mechanisms.py --seed 123456    # the jitter of an earlier run (its printed seed)
    python bench/bench_mechanisms.py --scenes tray,cam --steps 50 --budget 60

Scenes: the examples resources/examples/contact_parts_feeder.json (pusher), contact_cam_follower.json (cam),
contact_tray_tilt.json (tray) and contact_fourbar_swing.json (swinging four-bar), each run for its file's duration
at its file's step. Per scene two runs:

* jointed: the example as it is (driven links are kinematic bodies, the other jointed links dynamic);
* free: the same bodies without joints and drivers: every body the drivers move is fixed where it starts (a ground
  body: the tray stays level, the cam and the plate stand still), every other body with mass is a free body (the
  four-bar's rods fall freely), bodies without shape and mass are left out. The ratio of the two rates is the cost
  of the joints (their rows, the driven bodies' poses from the kinematics and the contacts they cause).

Randomness: the free parts of the pusher and the tray start jittered (up to 2 mm horizontally, up to 2 degrees about
the vertical) by a seed drawn at each run and printed (`--seed` reproduces it); the cam and the four-bar have no free
part and are not jittered. Times are CPU times of this process (BLAS and numba on one thread), per `step()` with one
workspace per run; the compiled kernels are loaded first and left out. A run stops at its CPU budget (checked between
steps and passed to the solver as its cancel callable) or at a failed step, with its reason, keeping the steps done.
Results: bench/results/mechanisms.json (every step's time) and mechanisms.md (the table the README quotes).
"""

from __future__ import annotations

import os

# one core: BLAS and numba threads pinned before numpy is imported
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import copy  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import secrets  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from core import io  # noqa: E402

EXAMPLES = ROOT / "resources" / "examples"
# scene -> (example file, names of the free parts that are jittered)
SCENES = {
    "pusher": ("contact_parts_feeder.json", ("box",)),
    "cam": ("contact_cam_follower.json", ()),
    "tray": ("contact_tray_tilt.json", ("ball1", "ball2", "cube1", "cube2", "roller")),
    "fourbar": ("contact_fourbar_swing.json", ()),
}
JITTER_MM = 2.0
JITTER_DEG = 2.0
DEFAULT_BUDGET = 120.0  # CPU seconds of stepping per run


def _quat_mul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return [w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2]


def jittered(doc: dict, parts: tuple[str, ...], rng: np.random.Generator) -> dict:
    """The document with each named part moved by up to JITTER_MM horizontally and turned by up to JITTER_DEG about
    the vertical (no part moves into another or into what it rests on: the moves are horizontal and small against
    the clearances of the examples)."""
    doc = copy.deepcopy(doc)
    for b in doc["bodies"]:
        if b["name"] in parts:
            pose = b.setdefault("pose", {"position": [0, 0, 0], "orientation": [1, 0, 0, 0]})
            dx, dy = rng.uniform(-JITTER_MM, JITTER_MM, 2) * 1e-3
            pose["position"] = [pose["position"][0] + dx, pose["position"][1] + dy, pose["position"][2]]
            a = math.radians(rng.uniform(-JITTER_DEG, JITTER_DEG))
            pose["orientation"] = _quat_mul([math.cos(a / 2), 0, 0, math.sin(a / 2)], pose.get("orientation", [1, 0, 0, 0]))
    return doc


def free_variant(doc: dict) -> dict:
    """The same bodies without joints and drivers (module docstring): driven bodies fixed where they start, every
    other body with mass free, bodies without shape and mass left out."""
    from core.contact import build_model

    model = build_model(io.loads(json.dumps(doc)))
    moving = {n for n, f in zip(model.names, model.free) if f}  # moved by forces (not static, not kinematic)
    out = copy.deepcopy(doc)
    out["joints"], out["drivers"] = [], []
    bodies = []
    for b in out["bodies"]:
        if b.get("ground") or b["name"] in moving:
            bodies.append(b)
        elif b.get("shape") is not None:  # a driven body with a shape: an obstacle where it starts
            bodies.append({k: v for k, v in b.items() if k not in ("mass", "density", "inertia", "com")} | {"ground": True})
    out["bodies"] = bodies
    out["name"] = doc.get("name", "") + " (free bodies)"
    return out


def run(doc: dict, steps: int | None, budget: float) -> dict:
    """Step a document (its own dt; its duration unless `steps`) under a CPU budget: the run's figures."""
    from core.contact import build_model, initial_state, step
    from core.contact.plan import Workspace

    mech = io.loads(json.dumps(doc))
    model = build_model(mech)
    h = model.dt
    n = steps or int(round(model.duration / h))
    state = initial_state(model)
    ws = Workspace()
    spent, c0 = 0.0, 0.0

    def over_budget() -> bool:
        return spent + (time.process_time() - c0) > budget

    cpu, its, halvings, gaps = [], [], [], []
    stop = "completed"
    for k in range(n):
        if spent > budget:
            stop = f"CPU budget of {budget:g} s spent after {k} steps (t = {state.t:.2f} s)"
            break
        c0 = time.process_time()
        r = step(model, state, h, model.method, cancel=over_budget, workspace=ws)
        dt = time.process_time() - c0
        spent += dt
        if not r.converged:
            stop = (f"CPU budget of {budget:g} s spent in step {k}" if r.reason.startswith("cancelled")
                    else f"failed at step {k} (t = {state.t:.2f} s): {r.reason}")
            break
        cpu.append(dt)
        its.append(r.iterations)
        halvings.append(r.halvings)
        gaps.extend(c.gap for c in r.contacts)
        state = r.state
    times = np.array(cpu)
    return {"steps": n, "steps_done": len(cpu), "completed": len(cpu) == n, "stop": stop, "h": h,
            "bodies": int(model.free.sum()), "kinematic": int(model.kinematic_mask.sum()), "joints": len(mech.joints),
            "drivers": len(mech.drivers), "pairs": len(model.pairs),
            "cpu": spent, "steps_per_s": len(cpu) / spent if spent > 0 else None,
            "median_step": float(np.median(times)) if times.size else None,
            "slowest_step": float(times.max()) if times.size else None,
            "iterations_per_step": float(np.mean(its)) if its else None, "max_iterations": max(its, default=None),
            "halved_steps": int(np.sum(np.array(halvings) > 0)), "deepest_gap": min(gaps) if gaps else None,
            "step_cpu": cpu, "step_iterations": its}


def _fmt(x, spec, none="-"):
    return none if x is None else format(x, spec)


def markdown(meta: dict, rows: list[dict]) -> str:
    """The results table (for the README) with its heading."""
    lines = [f"Mechanism bench, {meta['date']}: `{meta['command']}`", "",
             f"Jitter seed {meta['seed']}; CPU time of one process, BLAS on one thread; budget {meta['budget']:g} "
             "CPU-s per run. jointed: the example; free: its bodies without joints and drivers (driven bodies fixed "
             "where they start, the others free). Bodies: moved by forces (and kinematic: moved by the drivers). "
             "Cost of joints: free steps/s over jointed steps/s.", "",
             "| scene | run | bodies (kinematic) | joints (driven) | steps | steps/s | median step (ms) "
             "| slowest step (s) | Newton it./step (max) | halved steps | deepest gap (m) | cost of joints |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        ratio = r.get("cost")
        lines.append(
            f"| {r['scene']} | {r['variant']} | {r['bodies']} ({r['kinematic']}) | {r['joints']} ({r['drivers']}) | "
            f"{r['steps_done']}/{r['steps']} | "
            f"{_fmt(r['steps_per_s'], '.1f')} | {_fmt(None if r['median_step'] is None else 1e3 * r['median_step'], '.1f')}"
            f" | {_fmt(r['slowest_step'], '.3f')} | {_fmt(r['iterations_per_step'], '.1f')} "
            f"({_fmt(r['max_iterations'], 'd')}) | {r['halved_steps']} | {_fmt(r['deepest_gap'], '.1e')} | "
            f"{_fmt(ratio, '.1f', '')}{'x' if ratio is not None else ''} |")
    stops = [f"{r['scene']} {r['variant']}: {r['stop']}" for r in rows if not r["completed"]]
    if stops:
        lines += ["", "Not completed: " + "; ".join(stops) + "."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, help="jitter seed: reproduces an earlier run's start poses (default: random)")
    ap.add_argument("--scenes", default=",".join(SCENES), help=f"comma-separated, of {', '.join(SCENES)}")
    ap.add_argument("--steps", type=int, help="steps per run (default: the file's duration / dt)")
    ap.add_argument("--budget", type=float, default=DEFAULT_BUDGET, help="CPU seconds of stepping per run")
    ap.add_argument("--out", default=str(HERE / "results" / "mechanisms"),
                    help="results path without extension (.json and .md; default bench/results/mechanisms)")
    args = ap.parse_args()
    names = [s.strip() for s in args.scenes.split(",") if s.strip()]
    for s in names:
        if s not in SCENES:
            ap.error(f"--scenes: unknown scene {s!r} (known: {', '.join(SCENES)})")
    for name in ("steps", "budget"):
        if getattr(args, name) is not None and getattr(args, name) <= 0:
            ap.error(f"--{name}: must be positive")
    if args.seed is not None and args.seed < 0:
        ap.error("--seed: a whole number >= 0")
    seed = args.seed if args.seed is not None else secrets.randbits(31)
    print(f"jitter seed {seed} (rerun with --seed {seed})", flush=True)
    from core.contact import prepare_kernels

    print(f"loading (or compiling) the compiled kernels: {prepare_kernels():.2f} s", flush=True)
    command = " ".join(["python bench/bench_mechanisms.py"] + sys.argv[1:])
    meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "command": command, "seed": seed, "budget": args.budget}
    rows: list[dict] = []
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for scene in names:
        fname, parts = SCENES[scene]
        # every scene draws from the seed's stream in a fixed order (so a subset reproduces too)
        rng = np.random.default_rng([seed, list(SCENES).index(scene)])
        doc = jittered(json.loads((EXAMPLES / fname).read_text()), parts, rng)
        pair = []
        for variant, d in (("jointed", doc), ("free", free_variant(doc))):
            r = {"scene": scene, "variant": variant, "file": fname} | run(d, args.steps, args.budget)
            pair.append(r)
            rows.append(r)
            print(f"  {scene:8s} {variant:8s} {r['steps_done']:4d}/{r['steps']:<4d} "
                  f"{_fmt(r['steps_per_s'], '8.1f')} steps/s  median "
                  f"{_fmt(None if r['median_step'] is None else 1e3 * r['median_step'], '6.1f')} ms  slowest "
                  f"{_fmt(r['slowest_step'], '6.3f')} s  it/step {_fmt(r['iterations_per_step'], '.1f')}"
                  + ("" if r["completed"] else f"\n      NOT COMPLETED: {r['stop']}"), flush=True)
        a, b = pair[0]["steps_per_s"], pair[1]["steps_per_s"]
        pair[0]["cost"] = b / a if a and b else None
        # written after every scene: an interrupted bench keeps what it measured
        out.with_suffix(".json").write_text(json.dumps({"meta": meta, "runs": rows}, separators=(",", ":")))
        out.with_suffix(".md").write_text(markdown(meta, rows))
    print()
    print(markdown(meta, rows))
    print(f"results: {out.with_suffix('.json')}, {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
