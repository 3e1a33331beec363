"""Contact time-stepper benchmark on scenes drawn at random at every run (numbers for the README, not a test).

    python bench/bench_contact.py                       # every family, fresh seeds, both methods
    python bench/bench_contact.py --quick               # 2 seeds per family, 60 CPU-s budget per run
    python bench/bench_contact.py --seed 123456         # the same seeds as an earlier run (its printed master seed)
    python bench/bench_contact.py --scenes cubes4:17,42 --method implicit --steps 20 --budget 30

The scene families are in bench/scenes.py (sphere piles, turned cubes in a bin, a cube stack, a layer of cubes, a
mixed pile, a sphere on a plane, the disc). Each run (family, seed, method) goes in its own process, under a CPU
budget checked between steps (and passed to the solver as its cancel callable) and enforced by the operating
system (RLIMIT_CPU: a step that never returns is killed), with a wall-clock limit behind it; a run that stops early
is reported with its reason, keeping every step done before. Times are CPU times of one process with BLAS on one
thread. Results go to bench/results/contact.json (every run and step) and contact.md (the table).
Targets on one core (issue 19): every run completes; no step slower than 0.5 s; 27-sphere pile median >= 50 steps/s
and slowest seed >= 20; cube scenes >= 20 steps/s; sphere on a plane >= 3,000 steps/s.
"""

from __future__ import annotations

import os

# one core: BLAS and numba threads pinned before numpy is imported (also inherited by the worker processes)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import resource  # noqa: E402
import secrets  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict, dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

from hard_states import load_state, save_state  # noqa: E402
from scenes import FAMILIES, exact_overlap, load  # noqa: E402

SLOW_STEP = 0.5  # s: issue 19's bound on any step
QUICK_SEEDS = 2
QUICK_BUDGET = 60.0
FULL_BUDGET = 300.0


@dataclass
class Job:
    """One run: a family's scene for one seed (or a saved state), stepped n times with one method under a budget."""

    family: str
    seed: int
    method: str
    steps: int
    h: float = 0.01
    budget: float = 60.0  # CPU seconds of stepping
    # wall seconds of the whole process (default 3 budget + 60): a net for a process that stops using the CPU (the
    # CPU limit stops a busy one)
    wall_budget: float | None = None
    start_state: str | None = None  # an .npz of hard_states.py: start there (its document, not the family's)
    save_hard: str | None = None  # directory: save the state before every hard step
    hard_iterations: int = 100  # a step with more Newton iterations than this is hard


# --- the worker (one process per run) -------------------------------------------------------------------------------

def _finite(x) -> float | None:
    """x as a float, or None when it is not finite (the results stay standard JSON)."""
    return float(x) if x is not None and math.isfinite(x) else None


def _emit(f, rec: dict) -> None:
    f.write(json.dumps(rec) + "\n")
    f.flush()


def _hard_name(job: Job, k: int) -> str:
    return f"{job.family}_s{job.seed}_{job.method.replace('/', '-')}_k{k:03d}.npz"


def worker(job_file: str) -> None:
    """Run one job, writing one JSON line per event to the job's record file (read by the parent even after a kill)."""
    spec = json.loads(Path(job_file).read_text())
    job = Job(**spec["job"])
    out = open(spec["records"], "w")
    from core.contact import build_model, initial_state, prepare_kernels, step
    from core.contact.stepper import fallback_code
    from core.contact.plan import Workspace

    kernel_seconds = prepare_kernels()
    if job.start_state:
        state, meta = load_state(Path(job.start_state))
        doc = meta["document"]
        h = meta["h"]
    else:
        doc = FAMILIES[job.family].document(job.seed)
        h = job.h
    model = build_model(load(doc))
    if not job.start_state:
        state = initial_state(model)
    deepest0, checked = exact_overlap(model, state)
    pending = Path(spec["records"]).with_suffix(".pending.npz")
    _emit(out, {"type": "start", "kernel_seconds": kernel_seconds, "cpu0": time.process_time(),
                "pairs": len(model.pairs), "bodies": int(model.dynamic.sum()), "exact_checked_pairs": checked,
                "exact_initial": _finite(deepest0)})

    def meta_for(k, outcome):
        return {"family": job.family, "seed": job.seed, "method": job.method, "h": h, "step": k, "t": state.t,
                "document": doc, "outcome": outcome}

    # the run's caches (step plans per set of candidate pairs), as every run keeps them (core.contact.iter_steps): a
    # step without one builds its plan anew, which the sphere on a plane paid in about a third of its time
    ws = Workspace()
    spent = 0.0  # CPU seconds of the steps done (the budget counts stepping only, not the checks between steps)
    c0 = 0.0

    # a step's CPU time by this thread's clock: the process's clock, once the process has a CPU limit (below), is
    # sampled at the scheduler's tick (steps then read 0, 4, 8 ms ...); BLAS and numba run on this one thread
    def over_budget() -> bool:
        return spent + (time.thread_time() - c0) > job.budget

    stop = "completed"
    hard_limit = resource.getrlimit(resource.RLIMIT_CPU)[1]
    # no core dump when the CPU limit kills the process (SIGXCPU)
    resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    for k in range(job.steps):
        if spent > job.budget:
            stop = f"CPU budget of {job.budget:g} s spent after {k} steps (t = {state.t:.2f} s)"
            break
        if job.save_hard:
            # kept by the parent if this step is killed (it never returns)
            save_state(pending, state, meta_for(k, {"status": "killed", "iterations": -1, "cpu": job.budget}))
        # the operating system's CPU limit: a step that never returns is killed (SIGXCPU) a little after the budget
        soft = int(math.ceil(time.process_time() + job.budget - spent + 1 + 0.05 * job.budget))
        resource.setrlimit(resource.RLIMIT_CPU, (soft if hard_limit < 0 else min(soft, hard_limit), hard_limit))
        c0, w0 = time.thread_time(), time.perf_counter()
        method, _, solver = job.method.partition("/")  # "implicit/interior-point": that solver
        r = step(model, state, h, method, cancel=over_budget, solver=solver or "newton", workspace=ws)
        cpu, wall = time.thread_time() - c0, time.perf_counter() - w0
        spent += cpu
        if not r.converged and r.reason.startswith("cancelled"):  # the budget ran out inside the step: not a step
            stop = (f"CPU budget of {job.budget:g} s spent after {k} steps (t = {state.t:.2f} s; the step in "
                    "progress was cancelled)")
            break
        gaps = [c.gap for c in r.contacts]
        exact, _ = exact_overlap(model, r.state) if r.converged else (math.inf, 0)
        hard = (not r.converged) or r.iterations > job.hard_iterations
        if job.save_hard and hard and not job.start_state:
            status = "converged" if r.converged else "failed"
            save_state(Path(job.save_hard) / _hard_name(job, k), state,
                       meta_for(k, {"status": status, "iterations": r.iterations, "cpu": cpu, "reason": r.reason}))
        taken = fallback_code(r.method, method)
        _emit(out, {"type": "step", "k": k, "t": r.state.t, "cpu": cpu, "wall": wall, "iterations": r.iterations,
                    "halvings": r.halvings, "converged": r.converged, "reason": r.reason if not r.converged else "",
                    # (1: the explicit method took a failed implicit step, 2: its relaxed problem's solution did)
                    "fallback": taken == 1, "relaxed": taken == 2,
                    "pairs": r.pairs, "contacts": len(r.contacts), "min_gap": _finite(min(gaps)) if gaps else None,
                    "exact_min": _finite(exact), "residual": _finite(r.residual),
                    "proc_end": time.process_time()})
        if not r.converged:
            stop = f"failed at step {k} (t = {state.t:.2f} s): {r.reason}"
            break
        state = r.state
    pending.unlink(missing_ok=True)
    _emit(out, {"type": "end", "stop": stop, "cpu": spent})
    out.close()


# --- the parent -----------------------------------------------------------------------------------------------------

def _wait_rusage(proc: subprocess.Popen, timeout: float) -> tuple[int, float, bool]:
    """Wait for the child (killing it after `timeout` wall seconds): (exit status, its CPU seconds, killed)."""
    deadline = time.monotonic() + timeout
    killed = False
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline and not killed:
            proc.kill()
            killed = True
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, ru.ru_utime + ru.ru_stime, killed


def run_job(job: Job) -> dict:
    """Run a job in a child process and summarise it (the parent never waits longer than the wall budget)."""
    wall = job.wall_budget or 3 * job.budget + 60  # (a shared machine gives a run half a core or less)
    with tempfile.TemporaryDirectory(prefix="lw_bench_") as tmp:
        recs_path = Path(tmp) / "records.jsonl"
        job_path = Path(tmp) / "job.json"
        job_path.write_text(json.dumps({"job": asdict(job), "records": str(recs_path)}))
        err_path = Path(tmp) / "stderr.txt"
        with open(err_path, "w") as err:
            proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", str(job_path)],
                                    stdout=subprocess.DEVNULL, stderr=err)
            code, child_cpu, killed = _wait_rusage(proc, wall)
        recs = [json.loads(line) for line in recs_path.read_text().splitlines() if line.strip()] \
            if recs_path.exists() else []
        pending = recs_path.with_suffix(".pending.npz")
        steps = [r for r in recs if r["type"] == "step"]
        start = next((r for r in recs if r["type"] == "start"), None)
        end = next((r for r in recs if r["type"] == "end"), None)
        t_at = steps[-1]["t"] if steps else 0.0
        if end is not None:
            stop = end["stop"]
        elif killed:
            stop = f"killed after {wall:g} wall-s in step {len(steps)} (from t = {t_at:.2f} s)"
        elif code == -signal.SIGXCPU:
            stop = f"killed at the CPU budget ({job.budget:g} s) in step {len(steps)} (from t = {t_at:.2f} s)"
        else:
            tail = err_path.read_text().strip().splitlines()[-3:]
            stop = f"worker exited with status {code}: {' / '.join(tail)}"
        # a killed run: the step that never returned ran from the last record to the process's end
        unfinished = 0.0
        if end is None and start is not None:
            unfinished = max(0.0, child_cpu - (steps[-1]["proc_end"] if steps else start["cpu0"]))
        if end is None and job.save_hard and pending.exists() and not job.start_state:
            # the step that never returned: keep its start state, with what happened to it
            state, meta = load_state(pending)
            status = "killed" if killed or code == -signal.SIGXCPU else "crashed"
            meta["outcome"] = {"status": status, "iterations": -1, "cpu": unfinished, "reason": stop}
            save_state(Path(job.save_hard) / _hard_name(job, len(steps)), state, meta)
    return summarise(job, steps, stop, unfinished, start)


def summarise(job: Job, steps: list[dict], stop: str, unfinished: float, start: dict | None) -> dict:
    """One run's figures from its step records (unfinished: CPU seconds of a step killed before it returned)."""
    done = [s for s in steps if s["converged"]]
    times = np.array([s["cpu"] for s in done]) if done else np.zeros(0)
    completed = len(done) == job.steps
    stepped = float(np.sum([s["cpu"] for s in steps])) + unfinished
    its = [s["iterations"] for s in done]
    gaps = [s["min_gap"] for s in steps if s["min_gap"] is not None]
    exact = [s["exact_min"] for s in steps if s["exact_min"] is not None]
    slowest = max([float(times.max()) if times.size else 0.0] + [s["cpu"] for s in steps if not s["converged"]]
                  + [unfinished])
    return {
        "family": job.family, "seed": job.seed, "method": job.method, "steps": job.steps, "h": job.h,
        "completed": completed, "stop": stop, "steps_done": len(done), "t_reached": done[-1]["t"] if done else None,
        # (None: steps done but too short to register any CPU time)
        "cpu": stepped, "steps_per_s": (len(done) / stepped if stepped > 0 else None) if done else 0.0,
        "median_step": float(np.median(times)) if times.size else None, "slowest_step": slowest,
        "slow_steps": int(np.sum(times > SLOW_STEP)) + sum(s["cpu"] > SLOW_STEP for s in steps if not s["converged"])
        + int(unfinished > SLOW_STEP),
        "iterations": int(sum(its)), "iterations_per_step": float(np.mean(its)) if its else None,
        "max_iterations": max(its) if its else None,
        "halvings": int(sum(s["halvings"] for s in done)), "halved_steps": int(sum(s["halvings"] > 0 for s in done)),
        "fallback_steps": int(sum(bool(s.get("fallback")) for s in done)),
        "relaxed_steps": int(sum(bool(s.get("relaxed")) for s in done)),
        "deepest_gap": min(gaps) if gaps else None,
        "deepest_exact": min(exact) if exact else None,
        "exact_pairs": start["exact_checked_pairs"] if start else None,
        "kernel_seconds": start["kernel_seconds"] if start else None,
        "step_records": steps,
    }


def machine_reference() -> float:
    """Seconds for 200,000 additions of 3-vectors: the per-call numpy overhead that dominates these small solves.

    The shared build machine's speed varies between sessions (the same code has run the sphere on a plane at 480 and
    at 2,130 steps/s), so the bench prints this with its numbers; compare runs by ratios, or scaled by it."""
    a = np.zeros(3)
    t0 = time.process_time()
    for _ in range(200_000):
        a + a
    return time.process_time() - t0


def prepare_parent() -> float:
    """Load or compile the compiled kernels once (numba's cache), so no worker pays for compiling; returns seconds."""
    from core.contact import prepare_kernels

    return prepare_kernels()


def _fmt(x, spec, none="-"):
    return none if x is None else format(x, spec)


def _ms(seconds):
    return None if seconds is None else 1e3 * seconds


def aggregate(runs: list[dict]) -> list[dict]:
    """Per family and method over seeds: completed count, median and slowest-seed steps/s, worst figures."""
    rows = []
    keys = []
    for r in runs:
        if (r["family"], r["method"]) not in keys:
            keys.append((r["family"], r["method"]))
    for fam, method in keys:
        rs = [r for r in runs if r["family"] == fam and r["method"] == method]
        rates = [r["steps_per_s"] for r in rs if r["steps_per_s"] is not None]
        med_steps = [r["median_step"] for r in rs if r["median_step"] is not None]
        done = [r for r in rs if r["steps_done"]]
        gaps = [r["deepest_gap"] for r in rs if r["deepest_gap"] is not None]
        exact = [r["deepest_exact"] for r in rs if r["deepest_exact"] is not None]
        rows.append({
            "family": fam, "method": method, "seeds": [r["seed"] for r in rs], "runs": len(rs),
            "completed": sum(r["completed"] for r in rs),
            "median_steps_per_s": float(np.median(rates)) if rates else None,
            "slowest_seed_steps_per_s": min(rates) if rates else None,
            "median_step": float(np.median(med_steps)) if med_steps else None,
            "slowest_step": max(r["slowest_step"] for r in rs),
            "slow_steps": sum(r["slow_steps"] for r in rs),
            "iterations_per_step": (sum(r["iterations"] for r in done) / sum(r["steps_done"] for r in done)
                                    if done else None),
            "max_iterations": max((r["max_iterations"] for r in done), default=None),
            "halved_steps": sum(r["halved_steps"] for r in rs),
            "fallback_steps": sum(r.get("fallback_steps", 0) for r in rs),
            "relaxed_steps": sum(r.get("relaxed_steps", 0) for r in rs),
            "deepest_gap": min(gaps) if gaps else None, "deepest_exact": min(exact) if exact else None,
            "stops": sorted({r["stop"] for r in rs if not r["completed"]}),
        })
        rows[-1]["targets"] = unmet_targets(rows[-1])
    return rows


def unmet_targets(row: dict) -> list[str]:
    """Which of issue 19's targets a family's row misses: every run completes, no step slower than 0.5 s, no overlap
    deeper than 1e-9 m, and the family's steps/s (median over seeds, slowest seed) where the issue sets one."""
    unmet = []
    if row["completed"] < row["runs"]:
        unmet.append(f"{row['runs'] - row['completed']}/{row['runs']} incomplete")
    if row["slow_steps"]:
        unmet.append(f"{row['slow_steps']} step(s) > {SLOW_STEP:g} s")
    if row.get("fallback_steps"):  # (completed, but those steps by the explicit method: core.contact.stepper)
        unmet.append(f"{row['fallback_steps']} step(s) by the explicit method")
    if row.get("relaxed_steps"):  # (completed, but those steps glide: no solution of the step's equations)
        unmet.append(f"{row['relaxed_steps']} step(s) by the relaxed problem")
    overlaps = [x for x in (row["deepest_gap"], row["deepest_exact"]) if x is not None]
    if overlaps and min(overlaps) < -1e-9:
        unmet.append(f"overlap {min(overlaps):.1e} m")
    target = FAMILIES[row["family"]].target
    if target:
        med, slow = row["median_steps_per_s"], row["slowest_seed_steps_per_s"]
        if med is None or med < target[0]:
            unmet.append(f"median < {target[0]:g}/s")
        if slow is None or slow < target[1]:
            unmet.append(f"slowest seed < {target[1]:g}/s")
    return unmet


def markdown(meta: dict, rows: list[dict], runs: list[dict]) -> str:
    """The results as markdown: the per-family table (for the README) and every run."""
    lines = [f"Contact bench, {meta['date']}: `{meta['command']}`", "",
             f"Master seed {meta['master_seed']}; machine reference {meta['machine_reference']:.3f} s (200,000 numpy "
             f"3-vector additions); CPU time of one process, BLAS on one thread; budget {meta['budget']:g} CPU-s per "
             "run. Steps/s over each run's completed steps (a run that stopped early counts its stepping CPU up "
             "to the stop).", "",
             "| scene | method | completed | steps/s median | slowest seed | median step (ms) | slowest step (s) "
             "| steps > 0.5 s | Newton it./step (max) | halved steps | deepest gap (m) | overlap from poses (m) "
             "| issue 19 targets |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        lines.append(
            f"| {r['family']} | {r['method']} | {r['completed']}/{r['runs']} | "
            f"{_fmt(r['median_steps_per_s'], '.1f')} | {_fmt(r['slowest_seed_steps_per_s'], '.1f')} | "
            f"{_fmt(_ms(r['median_step']), '.1f')} | "
            f"{r['slowest_step']:.2f} | {r['slow_steps']} | {_fmt(r['iterations_per_step'], '.1f')} "
            f"({_fmt(r['max_iterations'], 'd')}) | {r['halved_steps']} | {_fmt(r['deepest_gap'], '.1e')} | "
            f"{_fmt(r['deepest_exact'], '.1e')} | {'; '.join(r['targets']) or 'met'} |")
    lines += ["", "Deepest gap: the most negative ContactResult.gap the solver reported. Overlap from poses: "
              "computed from the bodies' poses alone, independently of the solver: the most negative distance of "
              "sphere-sphere pairs and of any shape against a half-space (exact), and minus the overlap depth of "
              "two boxes or polytopes (at least 2 t for the largest ball of radius t inside both). Issue 19 targets: "
              "every run completes, no step slower than 0.5 s, no overlap deeper than 1e-9 m; 27-sphere piles "
              "median >= 50 steps/s and slowest seed >= 20, cube scenes >= 20, sphere on a plane >= 3,000.", "",
              "Every run:", "", "| scene | seed | method | steps | steps/s | median step (ms) | slowest step (s) | "
              "Newton it. | halved steps | deepest gap (m) | overlap from poses (m) | stop |",
              "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in runs:
        lines.append(f"| {r['family']} | {r['seed']} | {r['method']} | {r['steps_done']}/{r['steps']} | "
                     f"{_fmt(r['steps_per_s'], '.1f')} | {_fmt(_ms(r['median_step']), '.1f')} | "
                     f"{r['slowest_step']:.2f} | {r['iterations']} | {r['halved_steps']} | "
                     f"{_fmt(r['deepest_gap'], '.1e')} | {_fmt(r['deepest_exact'], '.1e')} | {r['stop']} |")
    return "\n".join(lines) + "\n"


def _columns(run: dict) -> dict:
    """A run for the JSON file: its step records as one list per field (a compact file for a long bench)."""
    recs = run["step_records"]
    keys = [k for k in (recs[0] if recs else {}) if k not in ("type", "proc_end")]
    return {**{k: v for k, v in run.items() if k != "step_records"},
            "step_fields": {k: [r[k] for r in recs] for k in keys}}


def _print_run(r: dict) -> None:
    print(f"  {r['family']:13s} seed {r['seed']:>10d} {r['method']:8s} {r['steps_done']:4d}/{r['steps']:<4d} "
          f"{_fmt(r['steps_per_s'], '8.1f', '       -')} steps/s  median {_fmt(_ms(r['median_step']), '7.1f')} ms  "
          f"slowest {r['slowest_step']:7.2f} s  iterations {r['iterations']:6d} "
          f"({_fmt(r['iterations_per_step'], '.1f')}/step)  halved {r['halved_steps']:3d}  "
          f">0.5 s {r['slow_steps']:3d}  gap {_fmt(r['deepest_gap'], '.1e')}  "
          f"overlap {_fmt(r['deepest_exact'], '.1e')}"
          + (f"  by the explicit method {r['fallback_steps']}" if r.get("fallback_steps") else "")
          + (f"  by the relaxed problem {r['relaxed_steps']}" if r.get("relaxed_steps") else "")
          + ("" if r["completed"] else f"\n      NOT COMPLETED: {r['stop']}"), flush=True)


def parse_scenes(text: str | None) -> list[tuple[str, list[int] | None]]:
    """'pile27,cubes4:17,42' -> [('pile27', None), ('cubes4', [17, 42])] (None: draw the seeds); ValueError with
    the offending item otherwise."""
    if not text:
        return [(name, None) for name, f in FAMILIES.items() if f.default]
    out: list[tuple[str, list[int] | None]] = []
    for i, part in enumerate(p.strip() for p in text.split(",")):
        fam, _, seed = part.partition(":")
        if part.isdigit() and out and out[-1][1] is not None:
            out[-1][1].append(int(part))  # another seed of the previous family
        elif fam not in FAMILIES:
            raise ValueError(f"item {i + 1} ({part!r}): unknown scene (known: {', '.join(FAMILIES)})")
        elif seed and not seed.isdigit():
            raise ValueError(f"item {i + 1} ({part!r}): a seed is a whole number >= 0")
        else:
            out.append((fam, [int(seed)] if seed else None))
    return out


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker(sys.argv[2])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, help="master seed: reproduces the seeds of an earlier run (default: random)")
    ap.add_argument("--scenes", help=f"comma-separated families, each optionally with seeds as family:s1,s2 "
                                     f"(default: {', '.join(n for n, f in FAMILIES.items() if f.default)}; "
                                     f"also {', '.join(n for n, f in FAMILIES.items() if not f.default)})")
    ap.add_argument("--method", choices=("implicit", "explicit", "both"), default="both")
    ap.add_argument("--solver", choices=("newton", "interior-point", "both"), default="newton",
                    help="the implicit method's MCP solver (core.contact.stepper.SOLVERS; default newton)")
    ap.add_argument("--steps", type=int, help="steps per run (default: the family's, 100-500; h = 0.01 s)")
    ap.add_argument("--seeds", type=int, help="seeds drawn per family (default 10 for the 27-sphere piles, 5 for "
                                              f"the others, 3 for the one-contact scenes; {QUICK_SEEDS} with --quick)")
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_SEEDS} seeds per family and a {QUICK_BUDGET:g} "
                                                         "CPU-s budget per run")
    ap.add_argument("--budget", type=float, help=f"CPU seconds of stepping per run (default {FULL_BUDGET:g}, "
                                                 f"{QUICK_BUDGET:g} with --quick)")
    ap.add_argument("--wall-budget", type=float, help="wall seconds per run before its process is killed (default "
                                                      "3 x budget + 60)")
    ap.add_argument("--save-hard", nargs="?", const=str(HERE / "hard_states"), metavar="DIR",
                    help="save the state before every hard step (default dir bench/hard_states)")
    ap.add_argument("--hard-iterations", type=int, default=100, help="a step with more Newton iterations is hard")
    ap.add_argument("--out", default=str(HERE / "results" / "contact"),
                    help="results path without extension (.json and .md; default bench/results/contact)")
    args = ap.parse_args()

    master = args.seed if args.seed is not None else secrets.randbits(31)
    budget = args.budget or (QUICK_BUDGET if args.quick else FULL_BUDGET)
    methods = ("implicit", "explicit") if args.method == "both" else (args.method,)
    solvers = ("newton", "interior-point") if args.solver == "both" else (args.solver,)
    # the implicit method once per solver ("implicit" is the default solver, Newton; "implicit/interior-point")
    methods = tuple(m if (m != "implicit" or sv == "newton") else f"{m}/{sv}" for m in methods for sv in
                    (solvers if m == "implicit" else ("newton",)))
    plan = []
    try:
        selection = parse_scenes(args.scenes)
    except ValueError as e:
        ap.error(f"--scenes: {e}")  # (exit status 2)
    if args.seed is not None and args.seed < 0:
        ap.error("--seed: a whole number >= 0")
    for name in ("steps", "seeds", "budget", "wall_budget"):
        if getattr(args, name) is not None and getattr(args, name) <= 0:
            ap.error(f"--{name.replace('_', '-')}: must be positive")
    for fam, seeds in selection:
        f = FAMILIES[fam]
        n = args.seeds or (QUICK_SEEDS if args.quick else f.seeds)
        # every family draws from the master seed's stream in a fixed order (so a subset reproduces too)
        drawn = [int(s) for s in np.random.default_rng([master, list(FAMILIES).index(fam)]).integers(0, 2**31, n)]
        plan.append((fam, seeds if seeds is not None else drawn))
    command = "python bench/bench_contact.py " + " ".join(sys.argv[1:])
    print(f"master seed {master} (rerun these seeds with --seed {master})")
    for fam, seeds in plan:
        print(f"  {fam:13s} seeds {', '.join(map(str, seeds))}")
    ref = machine_reference()
    print(f"machine reference: 200,000 numpy 3-vector additions take {ref:.3f} CPU-s", flush=True)
    # the compiled kernels (core.contact.kernels) load from numba's cache at a process's first step (compiled on a
    # machine's first run): a one-time cost, timed here and in every worker, and kept out of the rates
    print(f"loading (or compiling) the compiled kernels: {prepare_parent():.2f} s", flush=True)
    if args.save_hard:
        Path(args.save_hard).mkdir(parents=True, exist_ok=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "command": command, "master_seed": master,
            "machine_reference": ref, "budget": budget, "plan": plan}
    runs: list[dict] = []
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for fam, seeds in plan:
        f = FAMILIES[fam]
        print(f"{fam}: {f.description}", flush=True)
        for method in methods:
            for seed in seeds:
                job = Job(fam, seed, method, args.steps or f.steps, budget=budget, wall_budget=args.wall_budget,
                          save_hard=args.save_hard, hard_iterations=args.hard_iterations)
                r = run_job(job)
                _print_run(r)
                runs.append(r)
                rows = aggregate(runs)
                # written after every run: an interrupted bench keeps what it measured
                out.with_suffix(".json").write_text(json.dumps(
                    {"meta": meta, "families": rows, "runs": [_columns(r) for r in runs]}, separators=(",", ":")))
                out.with_suffix(".md").write_text(markdown(meta, rows, runs))
    print()
    print(markdown(meta, aggregate(runs), runs).split("\nEvery run:")[0])
    print(f"results: {out.with_suffix('.json')}, {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
