"""Background solves: a frozen snapshot of the mechanism is analysed and its driven motion solved in a Python thread.

The worker is a QObject living in the GUI thread; each solve runs in its own `threading.Thread` (visible to
`threading.enumerate()`, so the GUI tests catch a thread left behind) as a loop over `core.kinematics.TrajectoryRun`,
a generator that checks a cancel flag between frames. Results cross to the GUI thread by queued signals tagged with
the job's token, so a late batch of a cancelled job is recognised and dropped. The thread never touches a widget.
"""

from __future__ import annotations

import threading
import time
import traceback
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QObject, Signal

from core.errors import LinkwrightError
from core.kinematics import TrajectoryRun, compile_model, rank_mobility
from core.model import Mechanism

__all__ = ["RunInfo", "RunEnd", "SolveWorker", "BATCH_SECONDS"]

BATCH_SECONDS = 0.04  # frames are sent in batches at most this often (the first frame at once)


@dataclass(frozen=True)
class RunInfo:
    """What a solve will produce: names of the columns and the requested times."""

    body_names: list[str]
    coord_names: list[str]
    point_names: list[str]
    times: np.ndarray


@dataclass(frozen=True)
class RunEnd:
    """How a solve ended (TrajectoryRun's verdict)."""

    ok: bool
    reason: str  # TrajectoryRun.reason ("" when ok)
    stop_time: float | None
    limit_time: float | None
    cancelled: bool
    frames: int


class SolveWorker(QObject):
    """Starts, cancels and joins background solves; every signal carries the token `start` returned."""

    analysed = Signal(int, object)  # token, core.kinematics.RankMobility (or None if the analysis failed)
    began = Signal(int, object)  # token, RunInfo: the solve is running
    framesReady = Signal(int, object)  # token, list[core.kinematics.Frame] (in order)
    failed = Signal(int, str)  # token, located message of a LinkwrightError (bad driver, bad document)
    ended = Signal(int, object)  # token, RunEnd

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._token = 0
        self._cancel: threading.Event | None = None
        self._threads: list[threading.Thread] = []
        self.solves_started = 0  # how many jobs got as far as solving frames (for tests and diagnostics)

    @property
    def token(self) -> int:
        """Token of the newest job."""
        return self._token

    def start(self, mechanism: Mechanism, times, analyse: bool = True) -> int:
        """Cancel the running job and start one on a snapshot of `mechanism` at `times`; returns its token."""
        self.cancel()
        self._threads = [t for t in self._threads if t.is_alive()]
        self._token += 1
        snapshot = mechanism.copy()  # frozen here, on the GUI thread: later edits never reach the job
        cancel = threading.Event()
        self._cancel = cancel
        th = threading.Thread(target=self._run, args=(self._token, snapshot, np.asarray(times, float), analyse, cancel),
                              name=f"linkwright-solve-{self._token}", daemon=True)
        self._threads.append(th)
        th.start()
        return self._token

    def cancel(self) -> None:
        """Ask the running job to stop at its next frame (returns at once)."""
        if self._cancel is not None:
            self._cancel.set()
            self._cancel = None

    def running(self) -> bool:
        """Whether any job thread is still alive."""
        return any(t.is_alive() for t in self._threads)

    def threads(self) -> list[threading.Thread]:
        """The job threads not yet joined."""
        return list(self._threads)

    def shutdown(self, timeout: float = 10.0) -> None:
        """Cancel and join every job thread (window close, document replaced)."""
        self.cancel()
        for t in self._threads:
            t.join(timeout)
        self._threads = [t for t in self._threads if t.is_alive()]

    # ---- in the job thread: no widget, no document, only the snapshot and signals ---------------------------------
    def _run(self, token: int, mech: Mechanism, times: np.ndarray, analyse: bool, cancel: threading.Event) -> None:
        try:
            if analyse:
                try:
                    rm = rank_mobility(mech)
                except LinkwrightError:
                    rm = None  # the solve below reports the located problem
                self.analysed.emit(token, rm)
            if cancel.is_set():
                return
            try:
                km = compile_model(mech)  # parses the drivers
                run = TrajectoryRun(km, times, cancel=cancel.is_set)  # checks that the drivers determine the motion
            except LinkwrightError as exc:
                self.failed.emit(token, str(exc))
                return
            self.solves_started += 1
            self.began.emit(token, RunInfo(list(km.body_names), list(km.coord_names), list(km.point_names), times))
            batch: list = []
            last = 0.0
            n = 0
            for frame in run:
                batch.append(frame)
                n += 1
                now = time.perf_counter()
                if n == 1 or now - last >= BATCH_SECONDS:
                    self.framesReady.emit(token, batch)
                    batch, last = [], now
            if batch:
                self.framesReady.emit(token, batch)
            self.ended.emit(token, RunEnd(run.ok, run.reason, run.stop_time, run.limit_time, run.cancelled, n))
        except Exception as exc:  # noqa: BLE001 - a bug in a solver must not kill the thread silently
            traceback.print_exc()
            self.failed.emit(token, f"internal error in the solver: {type(exc).__name__}: {exc}")
