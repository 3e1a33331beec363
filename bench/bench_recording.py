"""Benchmark: the memory a contact run's recording takes, per frame, on a pile of 64 spheres in a bin.

A contact run's per-pair channels (in range, gap, impulses, forces, points, normal) are held for the pairs that have
been in contact range at some frame (core.run.ColumnStore); before, every candidate pair was recorded at every frame.
This runs the pile (bench/scenes.py's box_pile_document: 4 x 4 x 4 spheres of 5 cm in a bin of half-width 0.25 m, its
jitter from a seed drawn at each run and printed; `--seed` repeats it) and records it twice, as the command line does
(core.contact.record) and as the app does (app.playback.recording.FrameRecording fed FrameBatches, as its worker
sends them), and prints:

- the candidate pairs, the pairs ever in contact range, and the pairs in range at the last frame;
- bytes per frame: every candidate pair's channels (what was recorded before: every number of every channel, 8 bytes
  each, the in-range flag too), the pairs ever in range (what the recordings hold now: core.run.frame_bytes for
  them), and core.run.frame_bytes's estimate (the budget check's, made before the run starts);
- each recording's bytes as measured (its arrays' nbytes, over the recorded frames), and the longest time the app's
  recording took to take a batch of 20 frames (the GUI thread's work, a doubling of its arrays included);
- what a 10 s run at h = 0.01 s (1001 frames) takes both ways.

Writes bench/results/recording.json and recording.md.  Run: python bench/bench_recording.py [--seed N] [--t-end T]
[--dt H] (BLAS pinned to one thread; a few minutes on a shared machine)."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from core import io  # noqa: E402
from core.contact import prepare_kernels, record  # noqa: E402
from core.run import RunSpec, frame_bytes, open_run  # noqa: E402
from core.validate import size_text  # noqa: E402
from scenes import box_pile_document  # noqa: E402

TEN_SECONDS = 1001  # frames of a 10 s run at h = 0.01 s


def pile64(seed: int) -> dict:
    """64 spheres (r = 5 cm, 0.1 kg) on a jittered 4 x 4 x 4 grid in a bin of half-width 0.25 m."""
    return box_pile_document(4, 0.25, 0.12, 0.005, 0.125, seed=seed)


def app_recording_bytes(run) -> tuple[int, int, float]:
    """The app's recording of the run (FrameRecording, fed FrameBatches of 20 frames as the worker stacks them):
    (bytes of its arrays over the recorded frames, frames, the longest extend in seconds: the GUI thread's work on
    a batch, a doubling of the arrays included)."""
    from app.playback.recording import FrameBatch, FrameRecording

    rec = FrameRecording()
    rec.begin(run.kind, run.body_names, run.channels, run.times,
              {"header": run.header(), "out_of_range": run.out_of_range})
    sparse, known, batch, longest = tuple(c.name for c in run.channels if c.sparse), [], [], 0.0

    def extend(frames):
        nonlocal longest
        b = FrameBatch(frames, sparse, known)  # (made in the worker's thread)
        t0 = time.perf_counter()
        rec.extend(b)
        longest = max(longest, time.perf_counter() - t0)

    for f in run:
        batch.append(f)
        if len(batch) == 20:
            extend(batch)
            batch = []
    if batch:
        extend(batch)
    n = rec.count
    held = (rec.times[:n].nbytes + rec.poses[:n].nbytes + sum(a[:n].nbytes for a in rec.values.values())
            + sum(rec.series(name).nbytes for name in rec.store.arrays))
    return held, n, longest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=None, help="the pile's jitter seed (default: drawn and printed)")
    ap.add_argument("--t-end", type=float, default=1.0, help="simulated seconds (default 1)")
    ap.add_argument("--dt", type=float, default=0.01, help="the step (default 0.01 s)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "recording.json"))
    args = ap.parse_args()
    seed = int(np.random.SeedSequence().entropy % 2**31) if args.seed is None else args.seed
    print(f"seed {seed}: 64 spheres in a bin (bench/scenes.py box_pile_document(4, 0.25, 0.12, 0.005, 0.125)), "
          f"t_end = {args.t_end:g} s, dt = {args.dt:g} s", flush=True)
    prepare_kernels()
    mech = io.from_dict(pile64(seed))
    spec = RunSpec(t_end=args.t_end, dt=args.dt)

    t0 = time.perf_counter()
    run = open_run(mech, spec)
    P = len(run.pair_names)
    # what a frame took before: every candidate pair's channels, every number 8 bytes (the in-range flag too)
    every = 8 * (1 + 16 * len(run.body_names) + sum(math.prod(c.shape) for c in run.channels))
    estimate = frame_bytes(run)
    rec = record(run)
    seconds = time.perf_counter() - t0
    K = rec.n_frames
    ever = int(rec.pair_columns.size)
    now = int(rec.pairs["active"][-1].sum())
    after = frame_bytes(run, ever)
    cli = sum(a.nbytes for a in (rec.t, rec.position, rec.orientation, rec.velocity, rec.angular, rec.iterations,
                                 rec.residual, rec.halvings, rec.fallback))
    cli += sum(a.nbytes for a in rec.pairs.values())
    cli_every = cli - sum(a.nbytes for a in rec.pairs.values()) + sum(
        K * P * a[0, 0].nbytes if a.shape[1] else 0 for a in rec.pairs.values())
    app, app_frames, longest = app_recording_bytes(open_run(mech, spec))

    out = {"seed": seed, "scene": "box_pile_document(4, 0.25, 0.12, 0.005, 0.125)", "t_end": args.t_end,
           "dt": args.dt, "frames": K, "completed": rec.completed, "reason": rec.reason, "seconds": round(seconds, 1),
           "pairs": P, "pairs_ever_in_range": ever, "pairs_in_range_last_frame": now,
           "frame_bytes_every_pair": every, "frame_bytes_ever_in_range": after, "frame_bytes_estimate": estimate,
           "app_recording_bytes": app, "app_frames": app_frames, "app_longest_extend_s": round(longest, 4),
           "cli_recording_bytes": cli,
           "cli_recording_bytes_every_pair": cli_every,
           "ten_seconds_every_pair": every * TEN_SECONDS, "ten_seconds_ever_in_range": after * TEN_SECONDS}
    lines = [
        f"# Recording memory: 64 spheres in a bin (seed {seed})", "",
        f"`python bench/bench_recording.py --seed {seed} --t-end {args.t_end:g} --dt {args.dt:g}`: {K} frames "
        f"({'completed' if rec.completed else rec.reason}), {seconds:.0f} s.", "",
        "| | |", "| --- | --- |",
        f"| candidate pairs | {P:,} |",
        f"| pairs ever in contact range | {ever:,} |",
        f"| pairs in range at the last frame | {now:,} |",
        f"| bytes per frame, every candidate pair (before) | {size_text(every)} |",
        f"| bytes per frame, pairs ever in range (now) | {size_text(after)} |",
        f"| bytes per frame, the budget check's estimate (frame_bytes) | {size_text(estimate)} |",
        f"| the app's recording, measured ({app_frames} frames) | {size_text(app)} "
        f"({size_text(app / app_frames)} a frame); its longest batch of 20 frames taken in {1000 * longest:.1f} ms |",
        f"| the command line's recording, measured | {size_text(cli)} (every pair: {size_text(cli_every)}) |",
        f"| a 10 s run at h = 0.01 s (1,001 frames), before | {size_text(every * TEN_SECONDS)} |",
        f"| a 10 s run at h = 0.01 s, now | {size_text(after * TEN_SECONDS)} |", ""]
    print("\n".join(lines))
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    path.with_suffix(".md").write_text("\n".join(lines))
    print(f"wrote {path} and {path.with_suffix('.md')}")


if __name__ == "__main__":
    main()
