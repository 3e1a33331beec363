"""The growing recording of a run (body poses and named channels, generic over core.run's kinds) and its time cursor."""

from __future__ import annotations

import itertools
import math
import threading

import numpy as np
from PySide6.QtCore import QObject, Signal

from core.run import FIRST_FRAMES, Channel, ColumnStore, grow, grown_room

__all__ = ["FrameRecording", "FrameBatch", "time_text"]


def time_text(t: float, step: float | None = None, decimals: int = 3, significant: int | None = None) -> str:
    """A time for a readout, without its unit: `decimals` decimals (0.520), or `significant` digits (0.54), as long as
    that tells frames `step` seconds apart from one another; else as many decimals as the step needs (0.0052 at
    dt = 1e-4), and below a microsecond significant digits enough for the step, in exponent form (4.2e-08)."""
    t = float(t)
    if significant is not None:  # the readout's own form while its last digit is no coarser than the step
        last = 10.0 ** (math.floor(math.log10(abs(t))) - significant + 1) if t else 0.0
        if step is None or not step > 0 or step >= last * (1 - 1e-9):
            return f"{t:.{significant}g}"
    elif step is None or not step > 0 or step >= 10.0 ** -decimals * (1 - 1e-9):
        return f"{t:.{decimals}f}"
    if step >= 1e-6 * (1 - 1e-9):  # (1 - 1e-9: a step of 1e-4 s needs 4 decimals, whatever its last bit)
        return f"{t:.{max(math.ceil(-math.log10(step) - 1e-9), decimals if significant is None else 0)}f}"
    if not t:
        return "0"
    return f"{t:.{max(math.ceil(math.log10(abs(t) / step) - 1e-9), 0) + 1}g}"


class FrameBatch(list):
    """Frames of a run handed to the GUI thread together (the worker's framesReady), their numbers also stacked per
    channel, in the run's thread, where it is made: FrameRecording.extend then copies a block per channel instead of
    writing each frame's arrays one at a time.  A sparse channel (core.run.Channel.sparse: a contact run's per-pair
    ones) is stacked for `columns` only: the labels in range at some frame so far (`known`, the run's list, which the
    batch extends in order with its frames' `ranged`), not for all of a 64-body pile's 2080 pairs.  Still the list of
    frames."""

    def __init__(self, frames=(), sparse=(), known: list | None = None) -> None:
        super().__init__(frames)
        self.shown = threading.Event()  # set by the GUI thread once it has shown the batch (SolveWorker: its turn)
        self.times = self.poses = self.values = None
        self.columns = np.zeros(0, int)
        if not self:
            return
        try:
            first = self[0].values
            if any(f.values.keys() != first.keys() for f in self):
                return
            sparse = set(sparse) & set(first)
            if sparse:
                known = [] if known is None else known
                seen = set(known)
                for f in self:
                    for i in np.asarray(getattr(f, "ranged", ()), int).tolist():
                        if i not in seen:
                            seen.add(i)
                            known.append(i)
                self.columns = np.array(known, int)
            self.times = np.array([f.t for f in self], float)
            self.poses = np.stack([np.asarray(f.poses) for f in self])
            self.values = {name: np.stack([np.asarray(f.values[name])[self.columns] if name in sparse
                                           else np.asarray(f.values[name]) for f in self]) for name in first}
        except (ValueError, MemoryError):  # (frames of different shapes, or no memory to stack them: one by one)
            self.times = self.poses = self.values = None


FIRST_CAPACITY = FIRST_FRAMES  # frames a recording has room for when its run begins (core.run: it doubles)


_FILLINGS = itertools.count(1)  # the fillings of every recording of the process, numbered (FrameRecording.serial)


class FrameRecording(QObject):
    """Frames of one run in arrays that grow as they arrive (doubling, up to the planned frames), plus the cursor (an
    index).

    `poses[k]` are the world transforms of `body_names` at `times[k]`; `values[name][k]` the channel `name`
    (core.run.Channel) at that frame. Valid up to `count` (the arrays may be longer: room for the next frames).
    A sparse channel (Channel.sparse: a contact run's per-pair ones) is held for the labels that have been in range
    at some frame only (`store`, core.run.ColumnStore: `series(name)` is (count, columns), `columns` their labels;
    `label_series` one label's values, computed from the poses for a label never in range)."""

    cleared = Signal()  # emptied: a new run is coming (or none can run)
    began = Signal()  # a run started: kind, names and channels are known (no frame yet)
    grew = Signal(int)  # number of frames now recorded
    completed = Signal()  # the run ended (`ok`, `reason`, `stop_time` are set)
    cursorChanged = Signal(int)  # the frame shown; views re-read `pose_at_cursor()` etc.
    staleChanged = Signal(bool)  # the document changed since this run started (its results no longer match it)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.stale = False
        self.clear()

    # ---- filling (GUI thread, from the worker's signals) ---------------------------------------------------------
    def clear(self) -> None:
        """Drop every frame, name and channel (and the cursor's frame)."""
        # which filling of the recording this is: frames once recorded never change within one (the 3D view's trails
        # are drawn incrementally under this key: Viewport3D.set_trails)
        self.serial = next(_FILLINGS)  # (process-wide: a key no other recording's filling has)
        self.kind = ""
        self.body_names: list[str] = []
        self.channels: dict[str, Channel] = {}
        self.requested = np.zeros(0)  # the planned times
        self.step: float | None = None  # s: the shortest spacing of the planned times (time readouts tell them apart)
        self.times = np.zeros(0)  # (capacity,) recorded times; valid up to `count`
        self.poses = np.zeros((0, 0, 4, 4))  # (capacity, n_bodies, 4, 4)
        self.values: dict[str, np.ndarray] = {}  # channel -> (capacity, *channel.shape), the channels not sparse
        self.store = ColumnStore((), 0)  # the sparse channels: (capacity, columns, *components)
        self._out_of_range = None  # the run's out_of_range (core.run protocol), for the labels not held
        self._never: dict = {}  # (channel, label) -> (frames, values): label_series of labels never in range so far
        self._ever: dict = {}  # flag channel -> (frames, labels set): ever_in_range so far
        self.count = 0
        self.complete = False  # the run ended (successfully or not)
        self.ok = True
        self.reason = ""
        self.stop_time: float | None = None
        self.cancelled = False  # the run was stopped (Stop) before it ended by itself
        self.stopped_by_user = False  # ... by the user's Stop (not by an export or a screenshot: finish's by_user)
        self.full = ""  # why no more frames can be kept (no memory to grow the arrays); "" while they can
        self.cursor = 0
        self.info: dict = {}  # what the run was (method, step, ...), for readouts
        self.set_stale(False)
        self.cleared.emit()

    def begin(self, kind: str, body_names, channels, times, info: dict | None = None) -> None:
        """Start an empty recording with room for its first frames (FIRST_CAPACITY, or every planned time if fewer):
        it grows as frames arrive, so a run stopped early, or refused memory, never held its planned length."""
        self.clear()
        self.kind = kind
        self.info = dict(info or {})
        self.body_names = list(body_names)
        self.channels = {c.name: c for c in channels}
        self.requested = np.asarray(times, float).copy()
        gaps = np.diff(self.requested)
        gaps = gaps[gaps > 0]
        self.step = float(gaps.min()) if len(gaps) else None
        self.poses = np.zeros((0, len(self.body_names), 4, 4))
        self.store = ColumnStore(channels, 0)
        self._out_of_range = self.info.pop("out_of_range", None)
        self._allocate(max(min(len(self.requested), FIRST_CAPACITY), 1))
        self.began.emit()

    def _allocate(self, capacity: int) -> None:
        """(Re)allocate for `capacity` frames, keeping the recorded ones (core.run.grow: one array at a time); `times`
        last, so that its length is the room every array has even when a MemoryError stops this midway."""
        for name, c in self.channels.items():
            if not c.sparse:
                self.values.setdefault(name, np.zeros((0,) + c.shape))
        grow(self.values, self.count, capacity)
        self.store.grow_rows(self.count, capacity)
        frames = grow({"poses": self.poses, "times": self.times}, self.count, capacity)
        self.poses, self.times = frames["poses"], frames["times"]

    def _room(self, frames: int) -> bool:
        """Room for `frames` more frames: the arrays double (up to the planned frames, or as far as needed beyond
        them); False, with `full` saying why, when the machine has no memory for that."""
        need = self.count + frames
        if need <= len(self.times):
            return True
        capacity = grown_room(len(self.times), need, len(self.requested))
        try:
            self._allocate(capacity)
        except MemoryError:
            from core.validate import size_text

            per_frame = (self.times.itemsize + self.poses[:1].nbytes + sum(a[:1].nbytes for a in self.values.values())
                         + self.store.row_bytes())
            self.full = (f"no memory left to record more frames (the {self.count:,} frames kept take "
                         f"{size_text(self.count * per_frame)}; growing to {capacity:,} frames failed)")
            return False
        return True

    def extend(self, frames, follow: bool = False) -> None:
        """Append frames (core.run protocol: t, poses, values), in order. `follow`: a cursor on the newest frame (or
        a recording without frames) moves on to the newest of these, as a live view of a run does."""
        if not frames or self.full:
            return
        first = self.count
        at_newest = self.cursor >= first - 1
        if not self._room(len(frames)):
            return  # (the frames so far stay; the player stops the run with `full` as its reason)
        if (isinstance(frames, FrameBatch) and frames.values is not None and frames.poses.shape[1:] == self.poses.shape[1:]
                and all(frames.values[n].shape[1:2] == frames.columns.shape for n in self.store.arrays
                        if n in frames.values)):  # (sparse channels stacked by columns: FrameBatch's sparse)
            k0, k1 = self.count, self.count + len(frames)  # (a block per channel: FrameBatch)
            if self.store.arrays:
                cols = self._columns(frames.columns, k0)
                if cols is None:
                    return
                whole = cols.size == self.store.columns.size and np.array_equal(cols, np.arange(cols.size))
                missing = np.setdiff1d(np.arange(self.store.columns.size), cols)
            self.times[k0:k1] = frames.times
            self.poses[k0:k1] = frames.poses
            for name, block in frames.values.items():
                arr = self.values.get(name)
                if arr is not None:
                    arr[k0:k1] = block
                elif name in self.store.arrays:
                    arr = self.store.arrays[name]
                    if whole:
                        arr[k0:k1, : cols.size] = block
                    else:
                        arr[k0:k1, cols] = block
            if self.store.arrays and missing.size:  # (columns the batch did not stack: out of range in its frames)
                for name, v in self._fill(k0, k1, self.store.columns[missing]).items():
                    if name in self.store.arrays:
                        self.store.arrays[name][k0:k1, missing] = v
            self.count = k1
        else:
            for f in frames:
                k = self.count
                if self.store.arrays:
                    if self._columns(getattr(f, "ranged", ()), k) is None:
                        break  # (the frames so far stay)
                    cols = self.store.columns
                self.times[k] = f.t
                self.poses[k] = f.poses
                for name, v in f.values.items():
                    arr = self.values.get(name)
                    if arr is not None:
                        arr[k] = v
                    elif name in self.store.arrays:
                        self.store.arrays[name][k, : cols.size] = np.asarray(v)[cols]
                self.count += 1
        self.grew.emit(self.count)
        if follow and at_newest and self.cursor != self.count - 1:
            self.cursor = self.count - 1
            self.cursorChanged.emit(self.cursor)
        elif first == 0:
            self.cursorChanged.emit(self.cursor)  # the cursor's frame exists now

    def finish(self, ok: bool, reason: str = "", stop_time: float | None = None, cancelled: bool = False,
               by_user: bool = False) -> None:
        """The run ended: record how (cancelled: stopped before it ended by itself; by_user: by the user's Stop, not by
        an export or a screenshot that had what it needed or was cancelled)."""
        self.complete, self.ok, self.reason, self.stop_time = True, bool(ok), reason, stop_time
        self.cancelled = bool(cancelled)
        self.stopped_by_user = self.cancelled and bool(by_user)
        self.completed.emit()

    def set_stale(self, stale: bool) -> None:
        """Mark the frames as computed for an older version of the document (or not)."""
        if stale != self.stale:
            self.stale = stale
            self.staleChanged.emit(stale)

    def _columns(self, labels, k: int) -> np.ndarray | None:
        """The sparse channels' columns of `labels`, added for those that have none (their first k rows filled from
        the poses); None, with `full` saying why, when the machine has no memory for them."""
        try:
            return self.store.add(labels, k, self._fill)
        except MemoryError:
            from core.validate import size_text

            self.full = (f"no memory left to record more frames (the {self.count:,} frames kept; adding the columns of "
                         f"pairs that came into contact range to {size_text(self.store.row_bytes() * len(self.times))} "
                         "failed)")
            return None

    def _fill(self, first: int, stop: int, labels) -> dict:
        """The sparse channels' values of `labels` out of range at recorded frames first..stop-1 (from their poses)."""
        if self._out_of_range is None:
            return {}
        P = self.poses[first:stop]
        return self._out_of_range(P[:, :, :3, :3], P[:, :, :3, 3], labels)

    # ---- reading ---------------------------------------------------------------------------------------------
    def series(self, name: str) -> np.ndarray:
        """(count, *shape) view of a channel over the recorded frames (empty if the run has no such channel); of a
        sparse channel (count, columns, *components): the labels `columns` holds."""
        arr = self.values.get(name)
        if arr is None and name in self.store.arrays:
            return self.store.series(name, self.count)
        return arr[: self.count] if arr is not None else np.zeros((0,))

    @property
    def columns(self) -> np.ndarray:
        """The labels (indices) the sparse channels hold: those in range at some recorded frame, in the order they
        came into range."""
        return self.store.columns

    def label_series(self, name: str, i: int) -> np.ndarray:
        """(count, *components) values of label i of a channel over the recorded frames: of a sparse channel its
        column, or for a label never in range its out-of-range values from the poses (empty without the channel).
        Those are kept per channel and label, each call computing the frames that arrived since the last one only (a
        plot redraws its series at every batch of frames)."""
        arr = self.values.get(name)
        if arr is not None:
            return arr[: self.count, i]
        if name not in self.store.arrays:
            return np.zeros(0)
        j = self.store.column_of[i] if 0 <= i < len(self.store.column_of) else -1
        if j >= 0:
            self._never.pop((name, i), None)  # (in range now: its column holds it)
            return self.store.arrays[name][: self.count, j]
        done, kept = self._never.get((name, i), (0, None))
        if kept is None or done < self.count:
            values = self._fill(done, self.count, [i]).get(name)
            if values is None:
                c = self.channels[name]
                return np.zeros((self.count,) + c.shape[1:], c.dtype)
            kept = values[:, 0] if kept is None else np.concatenate((kept, values[:, 0]))
            self._never[(name, i)] = (self.count, kept)
        return kept

    def ever_in_range(self, name: str = "pair.active") -> np.ndarray:
        """(labels,) bool: the labels whose flag channel `name` is set at some recorded frame (all False without it).
        Kept, each call reading the frames that arrived since the last one only; a new array whenever it changes (one
        returned earlier stays as it was)."""
        c = self.channels.get(name)
        a = self.series(name)
        if c is None or a.ndim != 2:
            return np.zeros(len(c.labels) if c else 0, bool)
        done, ever = self._ever.get(name, (0, None))
        if ever is None:
            ever = np.zeros(len(c.labels), bool)
        if len(a) > done:
            held = a[done:].any(axis=0).astype(bool)
            ever = ever.copy()
            if c.sparse:
                ever[self.store.columns[: held.size][held]] = True
            else:
                ever |= held
        self._ever[name] = (len(a), ever)
        return ever

    def channel(self, name: str) -> Channel | None:
        """The channel description, None if this run has none by that name."""
        return self.channels.get(name)

    # joint quantities of a kinematic run (empty arrays for other kinds), for the readouts and the joint plot
    def _kin(self, name: str) -> np.ndarray:
        arr = self.values.get(name)
        return arr if arr is not None else np.zeros((len(self.times), 0))

    @property
    def coord_names(self) -> list[str]:
        """Joint coordinate names (kinematic runs)."""
        c = self.channels.get("q")
        return list(c.labels) if c else []

    @property
    def point_names(self) -> list[str]:
        """Named points ('body.point') of the run."""
        c = self.channels.get("points")
        return list(c.labels) if c else []

    q = property(lambda self: self._kin("q"), doc="(capacity, nq) joint coordinates")
    qd = property(lambda self: self._kin("qd"), doc="(capacity, nq) joint rates")
    qdd = property(lambda self: self._kin("qdd"), doc="(capacity, nq) joint accelerations")
    points = property(lambda self: self.values.get("points", np.zeros((len(self.times), 0, 3))),
                      doc="(capacity, n_points, 3) named points, world")

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

    def contact_recording(self):
        """The recorded frames of a contact run as a core.contact.Recording (what `linkwright simulate` writes)."""
        from core.contact import Recording

        if self.kind != "contact" or "header" not in self.info:
            raise ValueError(f"not a contact run: {self.kind or 'nothing'} recorded")
        n = self.count
        if self.complete:
            reason = self.reason
        else:
            last = self.time_at(n - 1)
            reason = f"still running (frames up to t = {last:.6g} s)" if last is not None else "still running"
        series = {k: v[:n] for k, v in self.values.items()}
        series.update({k: self.store.series(k, n) for k in self.store.arrays})
        return Recording.from_series(self.info["header"], self.times[:n], series, self.ok and self.complete, reason,
                                     columns=self.store.columns.copy())

    def trajectory(self):
        """The recorded frames of a kinematic run as a core.kinematics.Trajectory (what `linkwright kinematics`
        writes)."""
        from core.kinematics import Trajectory

        if self.kind != "kinematics":
            raise ValueError(f"not a kinematic run: {self.kind or 'nothing'} recorded")
        n = self.count
        return Trajectory(coord_names=self.coord_names, point_names=self.point_names, body_names=list(self.body_names),
                          times=self.times[:n].copy(), q=self.q[:n].copy(), qd=self.qd[:n].copy(),
                          qdd=self.qdd[:n].copy(), poses=self.poses[:n].copy(), points=self.points[:n].copy(),
                          point_vel=self.values["point_vel"][:n].copy(), point_acc=self.values["point_acc"][:n].copy(),
                          requested=len(self.requested), ok=self.ok and self.complete, reason=self.reason,
                          stop_time=self.stop_time)

    def duration(self) -> float:
        """Time span of the recorded frames."""
        return float(self.times[self.count - 1] - self.times[0]) if self.count > 1 else 0.0


def sample_frames(n: int, samples: int = 24) -> np.ndarray:
    """Indices of at most `samples` frames spread evenly over n frames, the first and the last among them."""
    return np.unique(np.linspace(0, n - 1, min(samples, n)).round().astype(int))
