"""The app's recording of a contact run holds the per-pair channels for the pairs that came into contact range only
(FrameRecording.store, core.run.ColumnStore), fed as the worker feeds it (FrameBatch stacks a batch's per-pair
channels for the pairs in range so far) or frame by frame.  Before, every candidate pair's channels were held at every
frame (820 pairs here, 40 of which touch): the memory of a frame grew as the number of bodies squared."""

from __future__ import annotations

import numpy as np

from app.playback.recording import FrameBatch, FrameRecording
from core import io
from core.contact import record
from core.run import RunSpec, open_run

N = 40


def spread(n: int = N, t_end: float = 0.05):
    """n spheres 1 m apart on a floor (n (n + 1) / 2 pairs, the n with the floor in range), and s0 dropped from
    0.3 m (its pair with the floor comes into range late)."""
    bodies = [{"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}}]
    bodies += [{"name": f"s{k}", "mass": 0.1, "shape": {"type": "sphere", "radius": 0.05},
                "pose": {"position": [1.0 * (k % 8), 1.0 * (k // 8), 0.3 if k == 0 else 0.05]}} for k in range(n)]
    return io.from_dict({"format": "linkwright.mechanism", "version": 1, "space": "spatial",
                         "gravity": [0, 0, -9.81], "bodies": bodies, "contact": {"friction": 0.4},
                         "simulation": {"dt": 0.01, "duration": t_end}})


def fed(mech, spec, batches: bool = True) -> tuple[FrameRecording, list]:
    run = open_run(mech, spec)
    rec = FrameRecording()
    rec.begin(run.kind, run.body_names, run.channels, run.times,
              {"header": run.header(), "out_of_range": run.out_of_range})
    frames = list(run)
    if batches:  # (as the worker sends them: the sparse channels stacked for the pairs in range so far)
        sparse, known = tuple(c.name for c in run.channels if c.sparse), []
        for i in range(0, len(frames), 7):
            rec.extend(FrameBatch(frames[i:i + 7], sparse, known))
    else:
        for f in frames:
            rec.extend([f])
    rec.finish(True)
    return rec, frames


def test_the_app_recording_holds_the_pairs_in_range_and_reads_every_pair_as_the_frames_had_it():
    mech = spread(t_end=0.3)
    for batches in (True, False):
        rec, frames = fed(mech, RunSpec(), batches)
        labels = rec.channels["pair.active"].labels
        assert len(labels) == N * (N + 1) // 2 and rec.count == len(frames) == 31
        # the 40 sphere/floor pairs, s0/floor last: it came into range when s0 landed
        assert sorted(labels[i] for i in rec.columns) == sorted(f"s{k}/floor" for k in range(N))
        assert labels[rec.columns[-1]] == "s0/floor"
        assert rec.series("pair.gap").shape == (31, N) and rec.series("pair.point_a").shape == (31, N, 3)
        per_frame = sum(rec.series(name)[:1].nbytes for name in rec.store.arrays)
        assert per_frame == N * sum(c.label_bytes for c in rec.channels.values() if c.sparse)
        assert rec.ever_in_range().sum() == N
        # every pair's series, held or not, is what the frames carried, bit for bit (the rows before s0/floor came
        # into range filled from the poses)
        for name in ("pair.gap", "pair.normal", "pair.point_a", "pair.point_b", "pair.normal_force", "pair.active"):
            every = np.array([f.values[name] for f in frames])
            for i in (labels.index("s0/floor"), labels.index("s1/floor"), labels.index("s0/s1"),
                      labels.index("s5/s17")):
                np.testing.assert_array_equal(rec.label_series(name, i), every[:, i], err_msg=f"{name} {labels[i]}")


def test_the_app_recording_exports_what_the_command_line_records():
    mech = spread()
    rec, _frames = fed(mech, RunSpec())
    app, cli = rec.contact_recording(), record(open_run(mech, RunSpec()))
    assert app.pair_columns.tolist() == cli.pair_columns.tolist()
    for attr in ("active", "gap", "pn", "pf", "pr", "point_a", "point_b", "normal"):
        np.testing.assert_array_equal(app.pairs[attr], cli.pairs[attr], err_msg=attr)
    np.testing.assert_array_equal(app.gap, cli.gap)


def test_the_series_of_a_pair_never_in_range_and_the_pairs_ever_in_range_follow_the_frames_as_they_arrive():
    """FrameRecording.label_series keeps a never-in-range pair's values and computes only the frames that arrived
    since it was last asked; ever_in_range (the plots' list of pairs in range) reads only the new frames too: after
    every batch both are what the frames so far carried."""
    mech = spread(t_end=0.3)
    run = open_run(mech, RunSpec())
    rec = FrameRecording()
    rec.begin(run.kind, run.body_names, run.channels, run.times,
              {"header": run.header(), "out_of_range": run.out_of_range})
    frames = list(run)
    labels = rec.channels["pair.active"].labels
    never, late = labels.index("s5/s17"), labels.index("s0/floor")
    sparse, known = tuple(c.name for c in run.channels if c.sparse), []
    for i in range(0, len(frames), 7):
        rec.extend(FrameBatch(frames[i:i + 7], sparse, known))
        so_far = frames[:rec.count]
        for name in ("pair.gap", "pair.point_a"):
            every = np.array([f.values[name] for f in so_far])
            for k in (never, late):
                np.testing.assert_array_equal(rec.label_series(name, k), every[:, k], err_msg=f"{name} {labels[k]}")
        was = rec.ever_in_range()
        np.testing.assert_array_equal(was, np.array([f.values["pair.active"] for f in so_far]).any(axis=0))
    assert was[late] and not was[never]
    assert (("pair.gap", never) in rec._never) and (("pair.gap", late) not in rec._never)  # (held: its column)
