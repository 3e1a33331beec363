"""The growing recording of a solved motion (poses, coordinates with rates, named points) and the one time cursor over it."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QObject, Signal

__all__ = ["Recording"]


class Recording(QObject):
    """Frames of one solve in preallocated flat arrays, filled as batches arrive, plus the cursor (a frame index)."""

    cleared = Signal()  # emptied: a new solve is coming (or none can run)
    grew = Signal(int)  # number of frames now recorded
    completed = Signal()  # the solve ended (`ok`, `reason`, `stop_time` are set)
    cursorChanged = Signal(int)  # the frame shown; views re-read `pose_at_cursor()` etc.

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.clear()

    # ---- filling (GUI thread, from the worker's signals) ---------------------------------------------------------
    def clear(self) -> None:
        """Drop every frame (and the cursor's frame)."""
        self.body_names: list[str] = []
        self.coord_names: list[str] = []
        self.point_names: list[str] = []
        self.requested = np.zeros(0)  # the times asked for
        self.times = np.zeros(0)  # (capacity,) solved times; valid up to `count`
        self.q = np.zeros((0, 0))  # (capacity, nq) joint coordinates
        self.qd = np.zeros((0, 0))  # (capacity, nq) their rates
        self.qdd = np.zeros((0, 0))  # (capacity, nq) their accelerations
        self.poses = np.zeros((0, 0, 4, 4))  # (capacity, n_bodies, 4, 4) world transforms of the body frames
        self.points = np.zeros((0, 0, 3))  # (capacity, n_points, 3) named points, world
        self.count = 0  # frames recorded
        self.complete = False  # the solve ended (successfully or not)
        self.ok = True
        self.reason = ""
        self.stop_time: float | None = None
        self.cursor = 0
        self.cleared.emit()

    def begin(self, body_names, coord_names, point_names, times) -> None:
        """Start an empty recording with room for every requested time."""
        self.clear()
        self.body_names, self.coord_names, self.point_names = list(body_names), list(coord_names), list(point_names)
        self.requested = np.asarray(times, float).copy()
        k = len(self.requested)
        self.times = np.zeros(k)
        self.q = np.zeros((k, len(self.coord_names)))
        self.qd = np.zeros((k, len(self.coord_names)))
        self.qdd = np.zeros((k, len(self.coord_names)))
        self.poses = np.zeros((k, len(self.body_names), 4, 4))
        self.points = np.zeros((k, len(self.point_names), 3))

    def extend(self, frames) -> None:
        """Append solved frames (core.kinematics.Frame, in order)."""
        if not frames:
            return
        first = self.count
        for f in frames:
            k = self.count
            if k >= len(self.times):
                break
            self.times[k] = f.t
            self.q[k] = f.q
            self.qd[k] = f.qd
            self.qdd[k] = f.qdd
            self.poses[k] = f.poses
            if len(self.point_names):
                self.points[k] = f.points
            self.count += 1
        self.grew.emit(self.count)
        if first == 0:
            self.cursorChanged.emit(self.cursor)  # the cursor's frame exists now

    def finish(self, ok: bool, reason: str = "", stop_time: float | None = None) -> None:
        """The solve ended: record how."""
        self.complete, self.ok, self.reason, self.stop_time = True, bool(ok), reason, stop_time
        self.completed.emit()

    # ---- reading ---------------------------------------------------------------------------------------------
    def set_cursor(self, k: int) -> None:
        """Show frame k (clamped to the recorded frames)."""
        k = int(min(max(k, 0), max(self.count - 1, 0)))
        if k != self.cursor:
            self.cursor = k
            self.cursorChanged.emit(k)

    def time_at(self, k: int | None = None) -> float | None:
        """Time of frame k (default: the cursor's), None if it is not recorded."""
        k = self.cursor if k is None else k
        return float(self.times[k]) if 0 <= k < self.count else None

    def index_at(self, t: float) -> int:
        """The last recorded frame at or before time t (0 if t precedes them all)."""
        if not self.count:
            return 0
        return int(max(np.searchsorted(self.times[: self.count], t + 1e-12, side="right") - 1, 0))

    def pose_at_cursor(self) -> np.ndarray | None:
        """(n_bodies, 4, 4) body poses at the cursor, None while nothing is recorded."""
        return self.poses[self.cursor] if self.cursor < self.count else None

    def duration(self) -> float:
        """Time span of the recorded frames."""
        return float(self.times[self.count - 1] - self.times[0]) if self.count > 1 else 0.0
