"""Saved states of a sphere pile, to study the contact solver on its hard steps (a developer's tool, not a test).

    python bench/pile_states.py record --seed 1 --steps 100 --out seed1.pkl   # run the pile, keep every state
    python bench/pile_states.py solve seed1.pkl --hard                         # re-solve the halved steps
    python bench/pile_states.py solve seed1.pkl --at 61,69 --quick --mu 0.1    # one attempt, other friction

Pile trajectories are chaotic: a solver change that only picks another of several valid solutions of one step gives
another run, and a run's time is set by its few hardest steps. So solver changes are judged on the same saved
states, each step solved from its saved start (docs/contact.md). `record` keeps the state before every step and
how each step went; `solve` solves chosen steps again with the current code: the whole `step` (its attempts and
halving) or, with --quick, its first attempt alone (Newton on the Alart-Curnier form), optionally with another
friction coefficient (the pair layouts stay the same for every mu > 0; mu = 0 drops the friction unknowns).

BLAS runs single-threaded (as in `make bench`): with two threads the rounding differs, and so does the run.
The files are Python pickles: load only files you made.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import pickle  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scenes import pile8, pile27  # noqa: E402

from core.contact import build_model, initial_state, prepare_kernels, step  # noqa: E402

SCENES = {"27": pile27, "8": pile8}


def record(args) -> None:
    """Run the pile from rest, keeping the state before every step and each step's outcome."""
    model = build_model(SCENES[args.scene](args.seed))
    st = initial_state(model)
    states, outcomes = [], []
    for k in range(args.steps):
        states.append(st.copy())
        t0 = time.perf_counter()
        r = step(model, st, args.dt)
        dt = time.perf_counter() - t0
        outcomes.append({"seconds": dt, "iterations": r.iterations, "halvings": r.halvings, "pairs": r.pairs,
                         "converged": r.converged})
        print(f"{k:4d}  {dt:8.3f} s  iterations {r.iterations:6d}  halvings {r.halvings}  pairs {r.pairs}"
              + ("" if r.converged else f"  FAILED: {r.reason}"), flush=True)
        if not r.converged:
            break
        st = r.state
    with open(args.out, "wb") as f:
        pickle.dump({"scene": args.scene, "seed": args.seed, "dt": args.dt, "states": states,
                     "outcomes": outcomes}, f)
    total = sum(o["seconds"] for o in outcomes)
    print(f"{len(outcomes)} steps in {total:.1f} s; {sum(o['halvings'] > 0 for o in outcomes)} halved; "
          f"saved to {args.out}")


def solve(args) -> None:
    """Solve saved steps again with the current code."""
    with open(args.file, "rb") as f:
        saved = pickle.load(f)
    states, outcomes = saved["states"], saved["outcomes"]
    if args.at:
        ks = [int(k) for k in args.at.split(",")]
    elif args.hard:
        ks = [k for k, o in enumerate(outcomes) if o["halvings"] > 0 or not o["converged"]]
    else:
        ks = list(range(len(states)))
    scene = SCENES[saved["scene"]]
    model = build_model(scene(saved["seed"]) if args.mu is None else scene(saved["seed"], mu=args.mu))
    h = saved["dt"]
    total, failed = 0.0, 0
    for k in ks:
        t0 = time.perf_counter()
        if args.quick:
            # (private: the first attempt alone, no halving; imported here so that `record` and `solve` without --quick do
            # not depend on the stepper's internals)
            from core.contact.stepper import _step_once

            r = _step_once(model, states[k], h, "implicit", 1e-10, 60, form="ac")
        else:
            r = step(model, states[k], h)
        dt = time.perf_counter() - t0
        total += dt
        failed += not r.converged
        was = outcomes[k] if k < len(outcomes) else None
        note = f"  (recorded: {was['seconds']:.2f} s, halvings {was['halvings']})" if was else ""
        print(f"{k:4d}  {'converged' if r.converged else 'FAILED   '}  {dt:8.3f} s  iterations {r.iterations:6d}  "
              f"halvings {r.halvings}  residual {r.residual:.1e}{note}", flush=True)
    print(f"{len(ks)} steps in {total:.1f} s, {failed} not converged")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record", help="run a pile and save the state before every step")
    rec.add_argument("--scene", choices=sorted(SCENES), default="27", help="27 or 8 spheres (bench/scenes.py)")
    rec.add_argument("--seed", type=int, default=0, help="the jitter seed (bench_contact.py --scenes pile27:SEED)")
    rec.add_argument("--steps", type=int, default=100)
    rec.add_argument("--dt", type=float, default=0.01)
    rec.add_argument("--out", required=True)
    sol = sub.add_parser("solve", help="solve saved steps again")
    sol.add_argument("file")
    sol.add_argument("--at", help="comma-separated step numbers")
    sol.add_argument("--hard", action="store_true", help="the steps that were halved (or failed) when recorded")
    sol.add_argument("--quick", action="store_true", help="the step's first attempt only (no other attempt, no halving)")
    sol.add_argument("--mu", type=float, help="another friction coefficient for every pair")
    args = ap.parse_args()
    prepare_kernels()
    (record if args.cmd == "record" else solve)(args)


if __name__ == "__main__":
    main()
