"""Saved hard contact steps: a regression set for the contact solver (a developer's tool, not a test).

    python bench/hard_states.py list [DIR_OR_FILES...]                 # what is saved (default bench/hard_states/)
    python bench/hard_states.py solve [DIR_OR_FILES...] [--method M] [--solver S] [--budget S]   # solve each again
    python bench/hard_states.py replay [DIR_OR_FILES...] [--out FILE.json] [--newton KEY=VALUE ...]
                                                                       # one step from each, in this process
    python bench/hard_states.py compare BASE.json OTHER.json ...       # replays against a base, step by step

`bench_contact.py --save-hard` saves the state before every step that needed more than --hard-iterations Newton
iterations, failed, or ran past its budget. A saved state is one .npz file holding the State's fields (t, p, q, v,
w, and the warm start flattened into `warm:<pair>:<key>` arrays) and, as JSON in `meta`, the scene's document (so a
file stays valid when a scene generator changes), its family and seed, the step h, the method and how the step went
when it was saved. `solve` steps each saved state once more with the current code, each in its own process under
a CPU budget (bench_contact.py's runner), and prints iterations, CPU time and whether it converged next to the
recorded values. The files contain no pickles (np.load with allow_pickle=False).

`replay` makes one step from every saved state in this process (each step bounded by its own iteration budget) and
prints, per family, the Newton iterations now against those saved, the CPU time, and the steps that failed or were
halved. Saved from whole runs (`bench_contact.py --save-hard DIR --hard-iterations -1` saves the state before every
step), the states are a fixed set on which two versions of the solver compare step by step: a change to the
solver changes a pile's later states (the piles are chaotic: one run's iterations vary 0.4 to 2.5 times between
variants of equal merit), but not the states of a replay, so its totals are not dominated by a few runs' paths.
`--newton KEY=VALUE` (repeatable) replays with other limits of the Newton attempts (fields of
core.contact.mcp.NewtonOptions, e.g. `--newton prox_scale=0.03 --newton zigzag_cos=1`).

`compare` reads replays written with --out and prints, per family and per other replay, the Newton iterations
against the base's on the same states: in all, on the base's ordinary steps (at most 60 iterations) and on its hard
ones (the two move differently: a change often helps one and costs the other), the median step, the CPU time, and
the failed and halved steps.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

# one core: BLAS and numba threads pinned before numpy is imported (replay's CPU times; as bench_contact.py)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

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


HARD = 60  # Newton iterations: a step of the base replay above this is counted as hard by compare


def compare(base: str, others: list[str]) -> None:
    """Print each replay of `others` against `base` on the states both made (replay --out files)."""
    def load(path):
        data = json.loads(Path(path).read_text())
        return {s["file"]: s for s in data["steps"]}, data.get("newton", {})

    b, _ = load(base)
    print(f"base {base}: {len(b)} states")
    for path in others:
        o, opts = load(path)
        print(f"\n{path}" + (f" (newton {opts})" if opts else ""))
        print(f"  {'family':14s} {'states':>6s} {'iterations':>17s} {'ordinary steps':>20s} {'hard steps':>20s} "
              f"{'median':>7s} {'CPU':>6s} {'failed':>7s} {'halved':>7s}")
        fams = sorted({s["family"] for s in b.values()})
        for fam in fams:
            keys = sorted(k for k in b if k in o and b[k]["family"] == fam)
            if not keys:
                continue
            bi = np.array([b[k]["iterations"] for k in keys])
            oi = np.array([o[k]["iterations"] for k in keys])
            bc = sum(b[k]["cpu"] for k in keys)
            oc = sum(o[k]["cpu"] for k in keys)
            hard = bi > HARD

            def part(mask):
                x, y = int(oi[mask].sum()), int(bi[mask].sum())
                return f"{x:7d}/{y:<7d}" + (f"{x / y:5.2f}" if y else "    -")

            print(f"  {fam:14s} {len(keys):6d} {part(np.ones_like(hard))} {part(~hard):>20s} {part(hard):>20s} "
                  f"{np.median(oi):3.0f}/{np.median(bi):<3.0f} {oc / bc if bc else float('nan'):6.2f} "
                  f"{sum(not o[k]['converged'] for k in keys):3d}/{sum(not b[k]['converged'] for k in keys):<3d} "
                  f"{sum(o[k]['halvings'] > 0 for k in keys):3d}/{sum(b[k]['halvings'] > 0 for k in keys):<3d}")


def _newton_option(text: str) -> tuple[str, float]:
    """KEY=VALUE of --newton: a field of NewtonOptions and a number."""
    import argparse

    from core.contact.mcp import NewtonOptions

    key, sep, value = text.partition("=")
    fields = NewtonOptions.__dataclass_fields__
    if not sep or key not in fields:
        raise argparse.ArgumentTypeError(f"{text!r}: expected KEY=VALUE with KEY one of {', '.join(fields)}")
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: {value!r} is not a number") from None
    return key, int(number) if isinstance(fields[key].default, int) and number.is_integer() else number


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
    rep = sub.add_parser("replay", help="one step from every saved state, in this process: totals per family")
    rep.add_argument("paths", nargs="*")
    rep.add_argument("--out", help="write the totals and every step's iterations to this JSON file")
    rep.add_argument("--newton", action="append", type=_newton_option, default=[], metavar="KEY=VALUE",
                     help="a field of core.contact.mcp.NewtonOptions to replay with (repeatable)")
    cmp = sub.add_parser("compare", help="replays (--out files) against a base replay, step by step")
    cmp.add_argument("base")
    cmp.add_argument("others", nargs="+")
    sys.path.insert(0, str(HERE.parent))
    args = ap.parse_args()
    if args.cmd == "compare":
        missing = [p for p in [args.base, *args.others] if not Path(p).exists()]
        if missing:
            ap.error(f"no such file: {missing[0]}")
        compare(args.base, args.others)
        return
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
    if args.cmd == "replay":
        replay(files, args.out, dict(args.newton))
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


def replay(files: list[Path], out: str | None = None, newton: dict | None = None) -> dict:
    """One step from every saved state with the current code, in this process; totals per family (printed, and
    written with every step to `out` as JSON when given).  newton: NewtonOptions fields to change (their defaults
    otherwise)."""
    import time

    sys.path[:0] = [str(HERE.parent), str(HERE)]
    from scenes import load

    from core.contact import build_model, prepare_kernels, step
    from core.contact.plan import Workspace

    from core.contact.mcp import NewtonOptions

    options = NewtonOptions(**(newton or {}))
    prepare_kernels()
    models: dict = {}
    steps, totals = [], {}
    for f in files:
        state, m = load_state(f)
        key = json.dumps(m["document"], sort_keys=True)
        if key not in models:
            models[key] = build_model(load(m["document"]))
        method, _, solver = m["method"].partition("/")  # ("implicit/interior-point": that solver, as bench_contact)
        c0 = time.process_time()
        r = step(models[key], state, m["h"], method, workspace=Workspace(), solver=solver or "newton",
                 newton=options)
        cpu = time.process_time() - c0
        saved = m["outcome"]["iterations"]
        steps.append({"file": f.name, "family": m["family"], "seed": m["seed"], "step": m["step"],
                      "iterations": r.iterations, "saved_iterations": saved, "converged": r.converged,
                      "halvings": r.halvings, "cpu": cpu})
        t = totals.setdefault(m["family"], {"states": 0, "iterations": 0, "saved_iterations": 0, "cpu": 0.0,
                                            "failed": 0, "halved": 0})
        t["states"] += 1
        t["iterations"] += r.iterations
        t["saved_iterations"] += max(saved, 0)
        t["cpu"] += cpu
        t["failed"] += not r.converged
        t["halved"] += r.halvings > 0
    print(f"{'family':16s} {'states':>6s} {'iterations':>10s} {'saved':>10s} {'ratio':>6s} {'CPU-s':>8s} "
          f"{'failed':>6s} {'halved':>6s}")
    for fam, t in sorted(totals.items()):
        ratio = t["iterations"] / t["saved_iterations"] if t["saved_iterations"] else float("nan")
        print(f"{fam:16s} {t['states']:6d} {t['iterations']:10d} {t['saved_iterations']:10d} {ratio:6.3f} "
              f"{t['cpu']:8.2f} {t['failed']:6d} {t['halved']:6d}")
    result = {"totals": totals, "steps": steps, "newton": dict(newton or {})}
    if out:
        Path(out).write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
