"""The worker's batches of frames carry their numbers stacked per channel (made in the run's thread), and the
recording copies a block per channel from them: the same recording as frame by frame."""

from __future__ import annotations

import numpy as np

from app.playback.recording import FrameBatch, FrameRecording
from core import io
from core.run import RunSpec, open_run


def _record(frames, run, batches):
    rec = FrameRecording()
    rec.begin(run.kind, run.body_names, run.channels, run.times)
    for k in range(0, len(frames), 7):
        part = frames[k:k + 7]
        rec.extend(FrameBatch(part) if batches else list(part))
    return rec


def test_a_batch_extends_the_recording_as_its_frames_one_by_one(qapp):
    for name, spec in (("contact_pile.json", RunSpec(t_end=0.2)), ("fourbar.json", RunSpec(t_end=1.0, steps=30))):
        run = open_run(io.load(f"resources/examples/{name}"), spec)
        frames = list(run)
        batch = FrameBatch(frames[:7])
        assert batch.values is not None and list(batch) == frames[:7]  # (stacked, and still the list of frames)
        a, b = _record(frames, run, True), _record(frames, run, False)
        assert a.count == b.count == len(frames)
        np.testing.assert_array_equal(a.times, b.times)
        np.testing.assert_array_equal(a.poses, b.poses)
        assert a.values.keys() == b.values.keys()
        for ch in a.values:
            assert a.values[ch].dtype == b.values[ch].dtype
            np.testing.assert_array_equal(a.values[ch], b.values[ch], err_msg=f"{name}: {ch}")
