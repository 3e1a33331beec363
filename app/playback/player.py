"""Playback: re-solve the motion when the document changes, fill the recording, drive the viewport from the cursor."""

from __future__ import annotations

import time

import numpy as np
from PySide6.QtCore import QObject, QTimer, Signal

from core.kinematics import RankMobility

from .recording import Recording
from .worker import RunEnd, RunInfo, SolveWorker

__all__ = ["Playback", "DEBOUNCE_MS", "TICK_MS", "STATUS_KINDS", "short_reason"]

DEBOUNCE_MS = 150  # edits closer together than this make one solve
TICK_MS = 30  # playback timer (about 33 frames per second of wall time)
STATUS_KINDS = ("busy", "ok", "stopped", "error")  # what the status line reports


def _geometry_key(mech) -> tuple:
    """What the rank mobility depends on (the frozen body and joint records compare by value; layout is not in it)."""
    return (mech.space, tuple(mech.bodies), tuple(mech.joints))


def short_reason(end: RunEnd) -> str:
    """'stopped at t = 0.30 s: cannot assemble' from a TrajectoryRun reason (details go to the tooltip)."""
    why = end.reason
    head = "stopped at t = "
    if why.startswith(head) and ": " in why:
        why = why.split(": ", 1)[1]
    why = why.split("; the motion ends", 1)[0].split(" (", 1)[0]
    t = end.stop_time
    return f"stopped at t = {t:.2f} s: {why}" if t is not None else why


class Playback(QObject):
    """Owns the worker, the recording and the play timer for one document; the viewport is posed from the cursor."""

    statusChanged = Signal(str, str, str)  # text for the status line, its tooltip (details), kind (STATUS_KINDS)
    mobilityChanged = Signal(object)  # core.kinematics.RankMobility of the current geometry, None while unknown
    playingChanged = Signal(bool)
    rangeChanged = Signal(float, int)  # t_end, steps

    def __init__(self, document, viewport=None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.document = document
        self.viewport = viewport
        self.recording = Recording(self)
        self.worker = SolveWorker(self)
        self.t_end = 1.0
        self.steps = 100
        self.status = ""
        self.status_tip = ""
        self.status_kind = "busy"
        self.mobility: RankMobility | None = None
        self._key = None  # kinematic content of the last solve started
        self._geo_key = None  # geometry of the last analysis asked for
        self._token = -1  # the job whose frames are wanted (-1: none; a cancelled job's late signals are dropped)
        self._analysis_token = -1  # job whose analysis is the one wanted
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self._start)
        self._clock = QTimer(self)
        self._clock.setInterval(TICK_MS)
        self._clock.timeout.connect(self._tick)
        self._play_origin = (0.0, 0.0)  # (wall time, motion time) when playing started
        self._resume_t: float | None = None  # after a re-solve, put the cursor back at this time once it is solved
        self.worker.analysed.connect(self._on_analysed)
        self.worker.began.connect(self._on_began)
        self.worker.framesReady.connect(self._on_frames)
        self.worker.failed.connect(self._on_failed)
        self.worker.ended.connect(self._on_ended)
        self.recording.cursorChanged.connect(self._pose)
        document.changed.connect(self._on_changed)
        document.replaced.connect(self._on_replaced)
        self._on_changed()
        self._start_now()

    # ---- public --------------------------------------------------------------------------------------------------
    def times(self) -> np.ndarray:
        """The requested times t = k·t_end/steps, k = 0..steps."""
        return np.linspace(0.0, self.t_end, self.steps + 1)

    def set_range(self, t_end: float, steps: int) -> None:
        """Solve up to `t_end` seconds in `steps` steps (re-solves if it changed)."""
        t_end, steps = float(t_end), int(steps)
        if not (np.isfinite(t_end) and t_end > 0 and steps >= 1):
            return
        if (t_end, steps) == (self.t_end, self.steps):
            return
        self.t_end, self.steps = t_end, steps
        self.rangeChanged.emit(t_end, steps)
        self._restart()

    def seek(self, k: int) -> None:
        """Show frame k (the user scrubs; a cursor position waiting for a re-solve is forgotten)."""
        self._resume_t = None
        self.recording.set_cursor(k)

    @property
    def playing(self) -> bool:
        """Whether the cursor is advancing in real time."""
        return self._clock.isActive()

    def play(self) -> None:
        """Advance the cursor at real time from where it is (looping at the end)."""
        if self.playing or not self.recording.count:
            return
        self._resume_t = None
        rec = self.recording
        if rec.complete and rec.cursor >= rec.count - 1:
            rec.set_cursor(0)  # play from the start again
        self._play_origin = (time.perf_counter(), rec.time_at() or 0.0)
        self._clock.start()
        self.playingChanged.emit(True)

    def pause(self) -> None:
        """Stop advancing the cursor."""
        if self.playing:
            self._clock.stop()
            self.playingChanged.emit(False)

    def toggle(self) -> None:
        """Play or pause (Space)."""
        self.pause() if self.playing else self.play()

    def shutdown(self) -> None:
        """Stop the timers, cancel the solve and join its thread (window close)."""
        self._debounce.stop()
        self._token = -1
        self.pause()
        self.worker.shutdown()

    # ---- document ----------------------------------------------------------------------------------------------
    def _on_replaced(self) -> None:
        self.worker.shutdown()  # the old document's solve: cancel and join now
        self._key = self._geo_key = None
        self._resume_t = None
        self._on_changed()
        self._start_now()  # a new document, not a burst of edits: no need to wait

    def _on_changed(self) -> None:
        mech = self.document.mechanism
        key = (_geometry_key(mech), tuple(mech.drivers))
        if key == self._key:
            return  # layout moves, renames of the document, ...: the motion is the same
        self._key = key
        geo = key[0]
        if geo != self._geo_key:
            self._geo_key = geo
            self.mobility = None
            self.mobilityChanged.emit(None)
        self._restart()

    def _restart(self) -> None:
        """Drop the recording at once (it belongs to the old mechanism) and solve again after the debounce."""
        self.worker.cancel()
        self._token = -1
        if self.recording.count and not self.playing:
            self._resume_t = self.recording.time_at()  # an edit while looking at t: show t again once re-solved
        self.recording.clear()
        self._set_status("solving…", "", "busy")
        self._debounce.start()

    def _start_now(self) -> None:
        self._debounce.stop()
        self._start()

    def _start(self) -> None:
        mech = self.document.mechanism
        analyse = self.mobility is None
        if not mech.joints:
            self.worker.cancel()
            self._show_design()
            self._set_status("nothing to move: the document has no joints", "", "error")
            return
        token = self._token = self.worker.start(mech, self.times(), analyse=analyse)
        if analyse:
            self._analysis_token = token

    # ---- worker results (GUI thread; stale tokens are dropped) -------------------------------------------------------
    def _on_analysed(self, token: int, rm) -> None:
        if token == self._analysis_token and rm is not None:
            self.mobility = rm
            self.mobilityChanged.emit(rm)

    def _on_began(self, token: int, info: RunInfo) -> None:
        if token == self._token:
            self.recording.begin(info.body_names, info.coord_names, info.point_names, info.times)
            self._set_status(f"solving… 0 / {len(info.times)} frames", "", "busy")

    def _on_frames(self, token: int, frames) -> None:
        if token != self._token:
            return
        rec = self.recording
        rec.extend(frames)
        if self._resume_t is not None and not self.playing and rec.times[rec.count - 1] >= self._resume_t - 1e-12:
            rec.set_cursor(rec.index_at(self._resume_t))
            self._resume_t = None
        self._set_status(f"solving… {self.recording.count} / {len(self.recording.requested)} frames", "", "busy")

    def _on_failed(self, token: int, message: str) -> None:
        if token == self._token:
            self.pause()
            self.recording.clear()
            self._show_design()
            self._set_status(message, "The motion cannot be solved; the design configuration is shown.", "error")

    def _on_ended(self, token: int, end: RunEnd) -> None:
        if token != self._token or end.cancelled:
            return
        rec = self.recording
        if self._resume_t is not None and rec.count and not self.playing:
            rec.set_cursor(rec.count - 1)  # stopped before the time shown: the nearest solved frame
        self._resume_t = None
        rec.finish(end.ok, end.reason, end.stop_time)
        if end.ok:
            self._set_status(f"{rec.count} frames, t = 0 … {rec.time_at(rec.count - 1):g} s", "", "ok")
        else:
            tip = end.reason
            if rec.count:
                tip += f"\nThe {rec.count} frames before it can be played and scrubbed."
            self._set_status(short_reason(end), tip, "stopped")

    # ---- cursor ------------------------------------------------------------------------------------------------
    def _pose(self, _k: int) -> None:
        P = self.recording.pose_at_cursor()
        if P is not None and self.viewport is not None:
            self.viewport.set_pose_array(P, self.recording.body_names)

    def _show_design(self) -> None:
        """Put every body back in its design pose (the viewport keeps solved poses across edits of drivers only)."""
        scene = self.viewport.scene() if self.viewport is not None else None
        if scene is not None:
            self.viewport.set_body_poses({bg.name: bg.design for bg in scene.bodies})

    def _tick(self) -> None:
        rec = self.recording
        if not rec.count:
            return  # a re-solve is under way: keep the clock, so playing resumes in phase
        wall0, t0 = self._play_origin
        t = t0 + (time.perf_counter() - wall0)
        first, last = float(rec.times[0]), float(rec.times[rec.count - 1])
        if t > last:
            if not rec.complete:
                t = last  # hold at the newest frame until more arrive
            elif last > first:
                t = first + (t - first) % (last - first)  # loop
            else:
                t = first
        rec.set_cursor(rec.index_at(t))

    def _set_status(self, text: str, tip: str, kind: str) -> None:
        self.status, self.status_tip, self.status_kind = text, tip, kind
        self.statusChanged.emit(text, tip, kind)
