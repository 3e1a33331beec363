"""Saved hard contact steps: a regression set for the contact solver (a developer's tool, not a test).

    python bench/hard_states.py list [DIR_OR_FILES...]                 # what is saved (default bench/hard_states/)
    python bench/hard_states.py solve [DIR_OR_FILES...] [--method M] [--solver S] [--budget S]   # solve each again

`bench_contact.py --save-hard` saves the state before every step that needed more than --hard-iterations Newton
iterations, failed, or ran past its budget. A saved state is one .npz file holding the State's fields (t, p, q, v,
w, and the warm start flattened into `warm:<pair>:<key>` arrays) and, as JSON in `meta`, the scene's document (so a
file stays valid when a scene generator changes), its family and seed, the step h, the method and how the step went
when it was saved. `solve` steps each saved state once more with the current code, each in its own process under
a CPU budget (bench_contact.py's runner), and prints iterations, CPU time and whether it converged next to the
recorded values. The files contain no pickles (np.load with allow_pickle=False).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DEFAULT_DIR = HERE / "hard_states"


def save_state(path: Path, state, meta: dict) -> None:
    """Write a contact State and its metadata (JSON-serialisable dict) to an .npz file."""
    arrays = {"t": np.array(state.t), "p": state.p, "q": state.q, "v": state.v, "w": state.w,
              "meta": np.array(json.dumps(meta))}
    for ip, entry in state.warm.items():
        if isinstance(entry, dict):
            for key, val in entry.items():
                if val is not None:
                    arrays[f"warm:{ip}:{key}"] = np.asarray(val)
        elif entry is not None:
            arrays[f"warm:{ip}"] = np.asarray(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:  # (an open file: np.savez would append .npz to a temporary name)
        np.savez_compressed(f, **arrays)


def load_state(path: Path):
    """(State, meta) from a file written by save_state."""
    from core.contact import State

    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        warm: dict = {}
        for name in z.files:
            if not name.startswith("warm:"):
                continue
            parts = name.split(":")
            val = z[name]
            val = float(val) if val.ndim == 0 else val.copy()
            if len(parts) == 2:
                warm[int(parts[1])] = val
            else:
                warm.setdefault(int(parts[1]), {})[parts[2]] = val
        state = State(float(z["t"]), z["p"].copy(), z["q"].copy(), z["v"].copy(), z["w"].copy(), warm)
    return state, meta


def _files(args: list[str]) -> list[Path]:
    paths = [Path(a) for a in args] or [DEFAULT_DIR]
    out: list[Path] = []
    for p in paths:
        out += sorted(p.glob("*.npz")) if p.is_dir() else [p]
    return out


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    ls = sub.add_parser("list", help="list saved states")
    ls.add_argument("paths", nargs="*")
    sol = sub.add_parser("solve", help="solve every saved step again (each in its own process, under a budget)")
    sol.add_argument("paths", nargs="*")
    sol.add_argument("--method", choices=("saved", "implicit", "explicit"), default="saved",
                     help="the method to solve with (default: the one the state was saved from)")
    sol.add_argument("--solver", choices=("newton", "interior-point"), default="newton",
                     help="the implicit method's solver (default newton)")
    sol.add_argument("--budget", type=float, default=60.0, help="CPU seconds per step (default 60)")
    sol.add_argument("--wall-budget", type=float, help="wall seconds per step before it is killed (default 3 x "
                                                       "budget + 60)")
    args = ap.parse_args()
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        ap.error(f"no such file or directory: {missing[0]}")  # (exit status 2)
    files = _files(args.paths)
    if not files:
        ap.error("no saved states (.npz) found")
    if args.cmd == "list":
        for f in files:
            _state, m = load_state(f)
            o = m["outcome"]
            print(f"{f.name}: {m['family']} seed {m['seed']} {m['method']} step {m['step']} (t = {m['t']:.2f} s): "
                  f"{o['status']}, {o['iterations']} iterations, {o['cpu']:.2f} CPU-s")
        return
    sys.path.insert(0, str(HERE))
    from bench_contact import Job, prepare_parent, run_job

    prepare_parent()
    total, failed = 0.0, 0
    for f in files:
        _state, m = load_state(f)
        method = m["method"] if args.method == "saved" else args.method
        if args.solver and method == "implicit":
            method += "/" + args.solver
        job = Job(family=m["family"], seed=m["seed"], method=method, steps=1, h=m["h"], budget=args.budget,
                  wall_budget=args.wall_budget, start_state=str(f))
        run = run_job(job)
        o = m["outcome"]
        total += run["cpu"]
        failed += not run["completed"]
        step = run["step_records"][0] if run["step_records"] else None
        its = step["iterations"] if step else "-"
        print(f"{f.name:40s} {'converged' if run['completed'] else 'FAILED   '} {run['cpu']:8.2f} CPU-s  "
              f"iterations {its!s:>6}  halvings {step['halvings'] if step else '-'}"
              f"   (saved: {o['status']}, {o['iterations']} iterations, {o['cpu']:.2f} s)"
              + ("" if run["completed"] else f"  {run['stop']}"), flush=True)
    print(f"{len(files)} saved steps in {total:.1f} CPU-s, {failed} not converged")


if __name__ == "__main__":
    main()
