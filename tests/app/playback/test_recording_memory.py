"""The app's recording holds the frames a run has yielded, not every frame it plans: begin() allocated arrays for all
planned frames at once (a 64-body pile, 2080 pairs, 0.35 MB a frame: np.zeros((1000001, 2080, 3)) is 46.5 GiB, a
MemoryError in the GUI thread's slot).  It now starts with room for a few frames and doubles as they arrive; a run
whose planned recording exceeds the budget one run may take (core.validate.recording_budget) is refused at its start
with the Motion dock's End named, and a recording that cannot grow for want of memory stops its run with its frames
kept and the reason on the status line."""

from __future__ import annotations

import numpy as np
import pytest

import core.validate as validate
from app.playback import recording as recording_mod
from app.playback.recording import FIRST_CAPACITY, FrameBatch, FrameRecording
from core import io
from core.run import RunSpec, frame_bytes, open_run

EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[3] / "resources" / "examples"


def _sphere_drop(t_end: float):
    run = open_run(io.load(EXAMPLES / "contact_sphere_drop.json"), RunSpec(t_end=t_end))
    return run, list(run)


def test_begin_makes_room_for_a_few_frames_not_every_planned_one(qapp):
    run, frames = _sphere_drop(0.05)
    planned = np.arange(1_000_001) * 0.01  # a run of the longest length: room for it all was 1e6 frames per channel
    rec = FrameRecording()
    rec.begin(run.kind, run.body_names, run.channels, planned)
    assert len(rec.times) == FIRST_CAPACITY == 64 and len(rec.requested) == 1_000_001
    assert all(len(a) == FIRST_CAPACITY for a in rec.values.values()) and len(rec.poses) == FIRST_CAPACITY


def test_the_recording_doubles_as_frames_arrive_up_to_the_planned_frames_with_the_same_numbers(qapp):
    run, frames = _sphere_drop(1.5)  # 151 frames
    rec = FrameRecording()
    rec.begin(run.kind, run.body_names, run.channels, run.times, {"out_of_range": run.out_of_range})
    rooms = []
    sparse, known = tuple(c.name for c in run.channels if c.sparse), []  # (as the worker stacks its batches)
    for k in range(0, len(frames), 10):
        rec.extend(FrameBatch(frames[k:k + 10], sparse, known))
        rooms.append(len(rec.times))
    assert sorted(set(rooms)) == [64, 128, 151] and rec.count == 151  # (doubled, then the planned frames: no more)
    for name, a in rec.values.items():
        np.testing.assert_array_equal(a[:151], np.stack([f.values[name] for f in frames]), err_msg=name)
    for name in sparse:  # (the one pair, held from when it came into range, its rows before from the poses)
        assert rec.series(name).shape[1] == 1
        np.testing.assert_array_equal(rec.label_series(name, 0), np.stack([f.values[name][0] for f in frames]),
                                      err_msg=name)
    np.testing.assert_array_equal(rec.poses[:151], np.stack([f.poses for f in frames]))
    np.testing.assert_array_equal(rec.times[:151], run.times)
    # one frame's bytes as core.run.frame_bytes counts them for the budget (the pair it expects in range held)
    assert (rec.times[:1].nbytes + rec.poses[:1].nbytes + sum(a[:1].nbytes for a in rec.values.values())
            + rec.store.row_bytes() == frame_bytes(run))


def test_a_recording_that_cannot_grow_keeps_its_frames_and_says_why(qapp, monkeypatch):
    run, frames = _sphere_drop(1.0)
    rec = FrameRecording()
    rec.begin(run.kind, run.body_names, run.channels, run.times)
    real = FrameRecording._allocate

    def allocate(self, capacity):
        if capacity > FIRST_CAPACITY:
            raise MemoryError
        real(self, capacity)

    monkeypatch.setattr(FrameRecording, "_allocate", allocate)
    rec.extend(FrameBatch(frames[:60]))
    rec.extend(FrameBatch(frames[60:70]))  # no room for these, and no memory to make it
    rec.extend(FrameBatch(frames[70:72]))  # (later ones are not taken either)
    assert rec.count == 60 and rec.time_at(59) == pytest.approx(0.59)
    assert rec.full.startswith("no memory left to record more frames (the 60 frames kept take 36.1 kB; growing to "
                               "101 frames failed)"), rec.full
    rec.begin(run.kind, run.body_names, run.channels, run.times)
    assert rec.full == "" and rec.count == 0


@pytest.fixture
def window(make_window, qtbot):
    win = make_window(io.load(EXAMPLES / "contact_sphere_drop.json"))
    qtbot.waitUntil(lambda: win.playback.recording.complete and not win.playback.worker.running(), timeout=60000)
    return win


def test_a_run_over_the_budget_is_refused_on_the_status_line_naming_end(window, qtbot, monkeypatch):
    pb, m = window.playback, window.motion
    assert pb.recording.ok and pb.recording.count == 101  # (the file's 1 s: within any budget)
    monkeypatch.setattr(validate, "recording_budget", lambda: 601 * 50)
    monkeypatch.setattr(validate, "physical_memory", lambda: int(25.3e9))
    pb.run()
    qtbot.waitUntil(lambda: not pb.is_running() and pb.status_kind == "error", timeout=30000)
    assert m.status_label.text() == ("End: the run's recording would take 60.7 kB (101 frames of 601 bytes); one run "
                                     "may record at most 30.1 kB on this machine (25% of its 25.3 GB of memory): end "
                                     "the run by t = 0.49 s (50 frames) or sooner")
    assert pb.recording.count == 0  # (refused before its first frame)


def test_a_run_whose_recording_cannot_grow_stops_with_its_frames_kept_and_the_reason(window, qtbot, monkeypatch):
    pb, m = window.playback, window.motion
    real = FrameRecording._allocate

    def allocate(self, capacity):
        if capacity > FIRST_CAPACITY and self is pb.recording:
            raise MemoryError
        real(self, capacity)

    monkeypatch.setattr(FrameRecording, "_allocate", allocate)
    pb.run()
    qtbot.waitUntil(lambda: pb.recording.complete and not pb.worker.running(), timeout=60000)
    rec = pb.recording
    assert 1 <= rec.count <= FIRST_CAPACITY and not rec.ok and not rec.cancelled
    last = rec.time_at(rec.count - 1)
    assert rec.reason.startswith(f"stopped at t = {last:.6g} s: no memory left to record more frames (the "
                                 f"{rec.count} frames kept take "), rec.reason
    assert pb.status_kind == "stopped"
    assert m.status_label.text().startswith(f"stopped at t = {last:.2f} s: no memory left to record more frames")
    assert f"The {rec.count} frames before it can be played and scrubbed." in pb.status_tip
    assert recording_mod.FIRST_CAPACITY == FIRST_CAPACITY


def test_a_run_that_finds_no_memory_for_a_step_stops_with_its_frames_kept_not_a_crash(window, qtbot, monkeypatch):
    from core.contact.recording import ContactRun

    pb, m = window.playback, window.motion
    frame, crashes = ContactRun._frame, []

    def short_of_memory(self, k, st, res):
        if k == 5:
            raise MemoryError
        return frame(self, k, st, res)

    monkeypatch.setattr(ContactRun, "_frame", short_of_memory)
    pb.crashed.connect(lambda *a: crashes.append(a))
    pb.run()
    qtbot.waitUntil(lambda: pb.recording.complete and not pb.worker.running(), timeout=60000)
    rec = pb.recording
    assert rec.count == 5 and not rec.ok and crashes == []
    assert rec.reason == "stopped at t = 0.04 s: no memory left to compute the next step (5 frames computed)"
    assert pb.status_kind == "stopped"
    assert m.status_label.text() == "stopped at t = 0.04 s: no memory left to compute the next step"
