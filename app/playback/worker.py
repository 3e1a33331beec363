"""Background runs: a frozen snapshot of the document is analysed and run (core.run) in a background job.

The worker is a QObject living in the GUI thread; each run is a job of app.jobs (its own thread and cancel flag): a
loop over the run `core.run.open_run` builds for the snapshot (driven kinematics or contact dynamics), which checks
the cancel flag between frames (the contact stepper also inside a step). Results cross to the GUI thread by queued
signals tagged with the job's token, so a late batch of a cancelled job is recognised and dropped. The thread never
touches a widget.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from dataclasses import dataclass, field

import numpy as np
from PySide6.QtCore import QObject, Signal

from core.errors import LinkwrightError
from core.kinematics import AnalysisCancelled, rank_mobility
from core.model import Mechanism
from core.run import RunSpec, open_run, run_kind

from ..jobs import BackgroundJobs
from .recording import FrameBatch

__all__ = ["RunInfo", "RunEnd", "SolveWorker", "BATCH_SECONDS", "GUI_TURN_SECONDS"]

log = logging.getLogger(__name__)

BATCH_SECONDS = 0.04  # frames are sent in batches at most this often (the first frame at once)
CONTACT_BATCH_SECONDS = 0.5  # contact runs: their frames are bigger and every batch repaints the window's readouts
# contact runs: after sending a batch, the run's thread waits until the window has painted it (FrameBatch.shown, set by
# Playback), at most this long, before it computes on. While both ran, the GUI thread's work on a batch (its frames,
# the 3D view, the readouts, the window's composition) waited for the interpreter lock behind the run's Python at every
# switch interval and shared the 2 cores with it: 70-180 ms of the event loop per batch of the 20 s pile run, up to
# 300 ms; 35-115 ms with the wait. The run's thread had the lock about half of that time anyway: it waits 45-125 ms
# per batch, and its cost per step with the window shown rose 7 % on average (noisy). Kinematic runs (a batch every
# 40 ms, small) do not wait.
GUI_TURN_SECONDS = 0.15
_BLAS_LIMITED = []  # the process-wide BLAS thread limit, once applied
_KERNELS = threading.Lock()  # the contact kernels are loaded (or compiled) once per process, by the first run
_KERNELS_READY: list = []
SWITCH_INTERVAL = 0.001  # s: how long the GUI thread may wait for the interpreter lock held by a run's thread


def limit_blas_threads() -> None:
    """Share the process with contact runs (once, in the GUI thread, when the first SolveWorker is made, before any
    thread of the window's): BLAS/LAPACK single-threaded, a short interpreter switch interval.

    The contact step's dense solves are small; OpenBLAS's worker threads spin on every core while they run, which
    starved the GUI thread of a CPU for up to half a second per solve on a 2-core machine (and made the pile's steps
    four times slower there). And the GUI thread takes the interpreter lock many times per event (every Python slot
    and paint); at Python's default 5 ms switch interval each of those waited up to 5 ms behind the run's thread."""
    if not _BLAS_LIMITED:
        import sys

        from threadpoolctl import threadpool_limits

        _BLAS_LIMITED.append(threadpool_limits(limits=1, user_api="blas"))
        sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL))


def _gui_turn(batch: FrameBatch, cancel: threading.Event) -> None:
    """In a run's thread: wait until the GUI thread has shown `batch` (its `shown` set), the job is cancelled, or
    GUI_TURN_SECONDS have passed (a GUI thread busy with something else, a window that does not paint)."""
    deadline = time.perf_counter() + GUI_TURN_SECONDS
    while not batch.shown.wait(0.005):  # (the cancel flag looked at every 5 ms: Stop ends the thread at once)
        if cancel.is_set() or time.perf_counter() >= deadline:
            return


@dataclass(frozen=True)
class RunInfo:
    """What a run will produce: its kind, the bodies its poses are for, its channels and planned times."""

    kind: str
    body_names: list[str]
    channels: tuple  # core.run.Channel
    times: np.ndarray
    info: dict = field(default_factory=dict)  # contact: method, dt, pairs, typical_weight, weighed, header
    # time.perf_counter() when the run's thread began solving (the progress line's rate counts from it: the GUI thread
    # may take the began signal late, and the frames computed meanwhile are not computed in no time)
    started: float = 0.0


@dataclass(frozen=True)
class RunEnd:
    """How a run ended (its core.run.Verdict and the number of frames)."""

    ok: bool
    reason: str  # the verdict's reason ("" when ok)
    stop_time: float | None
    limit_time: float | None
    cancelled: bool
    frames: int
    # wall seconds from the run's first frame to its end, timed in the run's thread (the GUI thread may take the
    # began signal late, with every frame already computed: a busy event loop made a run look instantaneous)
    seconds: float = 0.0


class SolveWorker(QObject):
    """Starts, cancels and joins background solves; every signal carries the token `start` returned."""

    analysed = Signal(int, object)  # token, core.kinematics.RankMobility (or None if the analysis failed)
    began = Signal(int, object)  # token, RunInfo: the solve is running
    framesReady = Signal(int, object)  # token, FrameBatch: a list of frames (core.run protocol, in order)
    failed = Signal(int, str, str)  # token, location and message of a LinkwrightError (bad driver, bad document)
    crashed = Signal(int, str, str)  # token, message, traceback: a bug in a solver (logged; frames so far are kept)
    preparing = Signal(int)  # token: the contact solver's compiled kernels are being loaded (first run: compiled)
    # token, core.contact.compiling.Note: the kernels are being compiled (a machine's first run), sent when it starts
    # and about once a second while it lasts
    compiling = Signal(int, object)
    ended = Signal(int, object)  # token, RunEnd

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        # here, in the GUI thread, when the window is made and before any of its threads (runs, the layout, the
        # structure's rank count) can be in a BLAS call: OpenBLAS's thread count changed while another thread is in
        # one is a known cause of crashes in OpenBLAS (it was set by the first contact run, from its thread, then
        # before it started: a kinematics run or the layout could be in BLAS then)
        limit_blas_threads()
        self._jobs = BackgroundJobs("linkwright-solve")
        self.solves_started = 0  # how many jobs got as far as solving frames (for tests and diagnostics)

    @property
    def token(self) -> int:
        """Token of the newest job."""
        return self._jobs.token

    def start(self, mechanism: Mechanism, spec: RunSpec, analyse: bool = True) -> int:
        """Cancel the running job and start `spec`'s run on a snapshot of `mechanism`; returns its token."""
        snapshot = mechanism.copy()  # frozen here, on the GUI thread: later edits never reach the job
        return self._jobs.start(lambda job: self._run(job.token, snapshot, spec, analyse, job.cancel)).token

    def cancel(self) -> None:
        """Ask the running job to stop at its next frame (returns at once)."""
        self._jobs.cancel()

    def running(self) -> bool:
        """Whether any job thread is still alive."""
        return self._jobs.running()

    def threads(self) -> list[threading.Thread]:
        """The job threads not yet joined."""
        return self._jobs.threads()

    def shutdown(self, timeout: float = 10.0) -> None:
        """Cancel and join every job thread (window close, document replaced)."""
        self._jobs.shutdown(timeout)

    # ---- in the job thread: no widget, no document, only the snapshot and signals ---------------------------------
    def _prepare_kernels(self, token: int, cancel: threading.Event) -> bool:
        """The contact kernels loaded, once per process (the first contact run's thread; another run's waits for it):
        from numba's cache, or on a machine's first run compiled in a child process that Stop terminates at once
        (core.contact.compiling.ensure_kernels; the `compiling` signal tells the window). False when the job was
        cancelled meanwhile (this run's Stop, or waiting for another run's compile)."""
        from core.contact.compiling import KernelsCancelled, ensure_kernels

        while not _KERNELS.acquire(timeout=0.005):  # (another job's thread is loading them: Stop still ends this one)
            if cancel.is_set():
                return False
        try:
            if not _KERNELS_READY:
                self.preparing.emit(token)
                ensure_kernels(cancel=cancel.is_set, notify=lambda note: self.compiling.emit(token, note))
                _KERNELS_READY.append(True)
        except KernelsCancelled:
            return False
        finally:
            _KERNELS.release()
        return True

    def _run(self, token: int, mech: Mechanism, spec: RunSpec, analyse: bool, cancel: threading.Event) -> None:
        n = 0
        batch: list = []
        t_last = None  # the time of the newest frame computed
        began = time.perf_counter()
        try:
            if analyse:
                rm = None
                if mech.joints:  # (the joints' geometry: a mechanism's dynamics run has a mobility too)
                    try:
                        # (the cancel flag checked between its pieces: closing the window during a 1,000-body
                        # drawing's count waited 20 s for it, and then left the thread running)
                        rm = rank_mobility(mech, cancel=cancel.is_set)
                    except LinkwrightError:
                        rm = None  # the run reports the located problem
                    except AnalysisCancelled:
                        rm = None  # (the cancel check below ends the job)
                self.analysed.emit(token, rm)
            if cancel.is_set():
                self.ended.emit(token, RunEnd(False, "cancelled before the run began", None, None, True, 0))
                return
            stopped = ()
            if (spec.kind or run_kind(mech)) == "contact":
                # (a contact run's set-up checks the cancel flag too: building the model of a 64-body pile and its
                # start-up overlap queries took 200-400 ms that a Stop had to wait for)
                from core.contact.bodies import RunCancelled

                stopped = RunCancelled
                # the kernels first: the set-up's overlap queries call them (with an empty cache, compiled there, in
                # this thread, where Stop could not end it: 2-3 s of the sphere drop's set-up)
                if not self._prepare_kernels(token, cancel) or cancel.is_set():
                    self.ended.emit(token, RunEnd(False, "cancelled before the run began", None, None, True, 0))
                    return
            try:
                run = open_run(mech, spec, cancel=cancel.is_set)  # parses drivers, shapes; checks the drivers
            except LinkwrightError as exc:
                self.failed.emit(token, exc.location, exc.message)  # (located at the document's fields)
                return
            except stopped:
                self.ended.emit(token, RunEnd(False, "cancelled before the run began", None, None, True, 0))
                return
            info = {}
            if run.kind == "contact":
                m = run.model
                g = float(np.linalg.norm(m.gravity))
                # the bodies moved by forces (not the drivers' kinematic ones), their typical weight: the force
                # arrows' reference (Viewport3D.set_force_reference)
                weighed = [i for i in run.dyn if m.free[i] and m.mass[i] > 0]
                typical = float(np.median(m.mass[weighed]) * g) if weighed else 0.0
                info = {"method": run.method, "dt": run.h, "pairs": len(run.pair_names),
                        "typical_weight": typical, "weighed": [m.names[i] for i in weighed],
                        "header": run.header(),  # for exporting the run as `linkwright simulate` writes it
                        "out_of_range": run.out_of_range}  # (the recording's values of pairs it does not hold)
            self.solves_started += 1
            began = time.perf_counter()
            self.began.emit(token, RunInfo(run.kind, list(run.body_names), tuple(run.channels), run.times, info,
                                           began))
            last = 0.0
            every = CONTACT_BATCH_SECONDS if run.kind == "contact" else BATCH_SECONDS
            # the sparse channels are stacked for the labels in range so far (FrameBatch's columns: the same columns,
            # in the same order, as the recording's)
            sparse, known = tuple(c.name for c in run.channels if c.sparse), []
            for frame in run:
                batch.append(frame)
                n += 1
                t_last = frame.t
                now = time.perf_counter()
                if n == 1 or now - last >= every:
                    # (stacked here, not on the GUI thread)
                    sent = FrameBatch(batch, sparse, known)
                    self.framesReady.emit(token, sent)
                    batch = []
                    if run.kind == "contact":
                        _gui_turn(sent, cancel)
                    last = time.perf_counter()  # (the next batch: after as long of computing)
            if batch:
                self.framesReady.emit(token, FrameBatch(batch, sparse, known))
            v = run.verdict
            self.ended.emit(token, RunEnd(v.ok, v.reason, v.stop_time, v.limit_time, v.cancelled, n,
                                          time.perf_counter() - began))
        except MemoryError:  # (the machine's memory, taken by other programs: the run stops, its frames kept)
            log.warning("run %d ran out of memory after %d frames", token, n)
            if batch:
                self.framesReady.emit(token, batch)  # (one by one: stacking them may need memory too)
            why = f"no memory left to compute the next step ({n:,} frames computed)"
            self.ended.emit(token, RunEnd(False, f"stopped at t = {t_last:.6g} s: {why}" if t_last is not None
                                          else why, t_last, None, False, n, time.perf_counter() - began))
        except Exception as exc:  # noqa: BLE001 - a bug in a solver must not kill the thread silently
            log.error("run %d failed after %d frames", token, n, exc_info=True)
            if batch:
                self.framesReady.emit(token, batch)  # the frames before the failure stay valid
            self.crashed.emit(token, f"internal error in the solver: {type(exc).__name__}: {exc}", traceback.format_exc())
