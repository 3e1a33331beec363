"""Playback: run the document's motion in the worker, fill the recording, drive the views from the one time cursor.

Which run a document gets follows from the document (core.run.run_kind): free bodies with mass, or a `simulation`
section and bodies with mass (the Dynamics action adds or removes that section) -> contact dynamics; a mechanism
otherwise -> kinematics. Re-run rule after an edit (or on open): kinematics always re-runs by itself (after
a 150 ms debounce); a contact run re-runs by itself when its expected work is at most AUTO_RUN_SECONDS, otherwise its
frames are kept, marked stale, and Run (F5) starts it. Expected work = steps x seconds per step, measured on this
document's last contact run, or before any run the prior (prior_seconds_per_step: PRIOR_SECONDS_PER_UNIT_STEP per
unit of work, a body the run moves or a joint that holds a body moved by forces, work_units, and a term in the square
of the shaped bodies moved by forces, crowd_bodies), for either method.
"""

from __future__ import annotations

import copy
import functools
import re
import time
from dataclasses import replace

import numpy as np
from PySide6.QtCore import QEvent, QObject, QTimer, Signal

from core import validate
from core.errors import LinkwrightError
from core.kinematics import RankMobility
from core.run import RunSpec, describe_kind, nothing_to_move, run_kind, undriven_massive_bodies

from ..export import fit_motion, motion_of
from .recording import FrameRecording, time_text
from .worker import RunEnd, RunInfo, SolveWorker

__all__ = ["Playback", "DEBOUNCE_MS", "TICK_MS", "STATUS_KINDS", "AUTO_RUN_SECONDS", "short_reason",
           "expected_contact_seconds", "work_units"]

DEBOUNCE_MS = 150  # edits closer together than this make one run
TICK_MS = 30  # playback timer (about 33 frames per second of wall time)
STATUS_KINDS = ("busy", "ok", "stopped", "error", "stale")  # what the status line reports
PROGRESS_SECONDS = 0.25  # the progress bar is updated at most this often while frames stream
SHOWN_FALLBACK_MS = 50  # a batch is taken as shown after this long if its window has not painted it (_ShownAfterPaint)
AUTO_RUN_SECONDS = 2.0  # contact runs expected to take longer than this wait for Run after an edit
# Before a document's first contact run, the cost of one step (prior_seconds_per_step):
#     PRIOR_SECONDS_PER_UNIT_STEP x (units + crowd^2 / PRIOR_CROWD_BODIES)
# units: work_units (a body the run moves, or a joint that holds a body moved by forces); crowd: crowd_bodies (the
# shaped bodies moved by forces). The linear term is the cost of a step of a few bodies: measured on the 13 shipped
# contact examples (resources/examples/contact_*.json, each for its file's duration, both methods; CPU time of
# core.run.open_run's run alone, headless, OPENBLAS_NUM_THREADS=1, kernels loaded): 0.15-2.3 ms per unit and step,
# median 0.7 ms; 1.5 ms is about twice the median. The explicit method measured 0.7-3 times the implicit one's per
# step, within the same bound: no factor of its own. The quadratic term is the crowd's: a step's Newton iterations
# each cost about as much as its unknowns, and a pile takes more of them the more bodies bear on each other (on
# average a step 5 for 8 spheres, 19 for 27, 144 for 300; CPU a step 1.0-9.5 ms for the examples, 7.4 ms for 8
# spheres, 33 ms for 27, 0.77 s for 64, 4.3-5.2 s for 300: about the square of the bodies beyond a few dozen).
# Estimated / measured CPU of whole runs (implicit, headless, 2-core machine shared with other jobs, s58): the 13
# examples 0.54-3.1 (the polytopes 0.54: 0.95 s of work estimated 0.5 s; the two spheres 3.1); bench piles of 8 and
# 27 spheres for 1 s 2.3 and 2.9; a bin of 30 mixed parts for 2 s 4.7 (4.8 s measured); 30 toppling dominoes for
# 1.5 s 0.81 (20.8 s); a bench pile of 64 spheres (seed 1) 0.53 (67 s for its 87 steps: they grow to 4-13 s as it
# settles, and the run stopped at t = 0.87 s on a step that did not converge, a step the relaxed problem's solution
# now takes); the user test's bin of 300 bodies 1.4
# and 1.7 in two runs (1,440 s estimated for its 200 steps; 4.3 and 5.2 s a step measured over its first 61, after
# which the run stops on a step that does not converge). The linear prior alone (before s58) made these 0.09 (the
# 300 bodies: 90 s) to 2.8. PRIOR_CROWD_BODIES 20 is the middle of the crowded scenes' spread: 30 made the 300
# bodies 0.95 and the dominoes 0.65, 15 the 300 bodies 1.8 and the bin of 30 parts 6. A prior, not a forecast:
# expect it within a factor of about 5 either way (what the scene does decides the rest: a pile that stalls costs
# more, bodies that fall apart less); the measured seconds per step of the document's last complete run replace it.
PRIOR_SECONDS_PER_UNIT_STEP = 1.5e-3
PRIOR_CROWD_BODIES = 20.0
OTHER_METHOD = {"implicit": "explicit", "explicit": "implicit"}
# the locations of a run's checks (core.run.open_run, the contact run: the document's fields and RunSpec's) whose
# values the Motion dock gives, and the dock's fields that show them: a refused run names the field
DOCK_FIELDS = {"simulation.duration": "End", "simulation.method": "Method", "t_end": "End", "steps": "Steps"}


def _motion_key(mech) -> tuple:
    """What the motion depends on (frozen records compare by value; layout and names of the document are not in it)."""
    return (mech.space, tuple(mech.bodies), tuple(mech.joints), tuple(mech.drivers), mech.gravity, mech.contact,
            mech.simulation)


def _geometry_key(mech) -> tuple:
    """What the rank mobility depends on."""
    return (mech.space, tuple(mech.bodies), tuple(mech.joints))


def _units_key(mech) -> tuple:
    """What work_units and crowd_bodies depend on: the bodies' names, ground, whether they have mass and a shape,
    their design poses and points (the kinematic model's frames and length scale), the joints, and which coordinates
    are driven (not the driver expressions, nor masses, which shapes, velocities, contact or simulation settings)."""
    return (mech.space,
            tuple((b.name, b.ground, b.mass is not None or b.density is not None, b.shape is not None, b.pose,
                   tuple(b.points.items()))
                  for b in mech.bodies),
            tuple(mech.joints), tuple((d.joint, d.coordinate) for d in mech.drivers))


def work_units(mech) -> int:
    """The units of work of a contact run's step, counted without building the model: the bodies the run moves (not
    ground, with a mass or density or attached by a joint: core.contact.build_model's dynamic bodies, the ones the
    drivers move too) and the joints that hold a body moved by forces (core.run.undriven_massive_bodies; every joint
    when the drivers cannot be analysed). Pairs are not counted: a pile's bodies touch a few neighbours each, not
    every other body (the pile's 35 shaped pairs had 7 in contact range on average).

    It runs in the GUI thread at an edit (the auto-run rule, before a document's first contact run), and the driver
    analysis compiles the kinematic model (2-10 ms, about 40 ms on a first call): the count is kept for the last
    structures seen (_units_key), so an edit of a driver's expression, a mass, an initial velocity, a shape, friction, dt
    or duration, an undo or a redo costs a comparison. Which bodies the drivers fix does not depend on what the driver
    expressions say, only on which coordinates they drive: the analysis compiles them as 0, so the count is the same
    with an expression that does not compile (it was every joint then)."""
    return _work_units(_ByUnitsKey(mech))[0]


def crowd_bodies(mech) -> int:
    """The bodies that can crowd a contact run's step: those moved by forces (not fixed by the drivers) that have a
    shape (they can touch). A step's Newton iterations each cost about as much as its unknowns (the elimination over
    the contacts is sparse), and how many iterations it takes grows with how many such bodies bear on each other
    (a pile's load goes through its bodies): the prior's quadratic term (prior_seconds_per_step). Counted with
    work_units, once per structure."""
    return _work_units(_ByUnitsKey(mech))[1]


def prior_seconds_per_step(mech) -> float:
    """The cost of one step of a contact run of `mech` before any run of it (the auto-run rule's prior):
    PRIOR_SECONDS_PER_UNIT_STEP x (units + crowd^2 / PRIOR_CROWD_BODIES), units = work_units, crowd = crowd_bodies
    (the calibration and how far off it is: the constants' comment)."""
    units, crowd = _work_units(_ByUnitsKey(mech))
    return PRIOR_SECONDS_PER_UNIT_STEP * (max(units, 1) + crowd * crowd / PRIOR_CROWD_BODIES)


class _ByUnitsKey:
    """A mechanism that hashes and compares by its _units_key (work_units' cache key)."""

    __slots__ = ("mech", "key")

    def __init__(self, mech) -> None:
        self.mech, self.key = mech, _units_key(mech)

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other) -> bool:
        return isinstance(other, _ByUnitsKey) and self.key == other.key


@functools.lru_cache(maxsize=8)  # the last structures seen: undo and redo come back to one
def _work_units(keyed: _ByUnitsKey) -> tuple[int, int]:
    """(work_units, crowd_bodies) of the mechanism."""
    mech = keyed.mech
    attached = {n for j in mech.joints for n in j.bodies}
    moving = [b for b in mech.bodies
              if not b.ground and (b.mass is not None or b.density is not None or b.name in attached)]
    massive = {b.name for b in moving if b.mass is not None or b.density is not None}
    try:
        structure = copy.copy(mech)
        structure.drivers = [replace(d, value="0") for d in mech.drivers]  # (a shallow copy: the document's stay)
        forced = set(undriven_massive_bodies(structure)) if mech.joints else massive
    except LinkwrightError:
        forced = attached | massive
    units = len(moving) + sum(1 for j in mech.joints if forced.intersection(j.bodies))
    return units, sum(1 for b in moving if b.shape is not None and b.name in forced)


def expected_contact_seconds(mech, t_end: float | None, seconds_per_step: float | None = None) -> float:
    """Estimated wall time of a contact run of `mech` to `t_end` (None: its duration), the auto-run rule's measure:
    steps x `seconds_per_step` (measured on the document's last run), else x prior_seconds_per_step(mech)."""
    sim = mech.simulation
    dt = float(sim.dt) if sim else 0.01
    T = float(t_end if t_end is not None else (sim.duration if sim else 1.0))
    steps = max(T / dt, 0.0) if dt > 0 else 0.0
    if seconds_per_step is None:
        seconds_per_step = prior_seconds_per_step(mech)
    return steps * seconds_per_step


def _fallback_steps(rec: FrameRecording) -> tuple[int, int]:
    """How many steps of a contact run the explicit method's step took, and how many its relaxed problem's solution
    (the solver channel's fallback column: codes 1 and 2, core.contact.stepper.fallback_code)."""
    c = rec.channel("solver")
    if c is None or "fallback" not in c.labels:
        return 0, 0
    code = rec.series("solver")[:, c.labels.index("fallback")]
    return int(np.count_nonzero(code == 1)), int(np.count_nonzero(code == 2))


def short_reason(end: RunEnd, step: float | None = None) -> str:
    """'stopped at t = 0.30 s: cannot assemble' from a run's reason (details go to the tooltip); step: the run's frame
    spacing (more digits for a short one: time_text)."""
    why = end.reason
    head = "stopped at t = "
    if why.startswith(head) and ": " in why:
        why = why.split(": ", 1)[1]
    why = _without_asides(why).split("; ", 1)[0]
    t = end.stop_time
    if t is None:
        return why
    # (a kinematics run locates where the motion ends, between the last frame and the one that failed: a crank at its
    # limit at t = 0.0742 s read "stopped at t = 0.08 s")
    limit = "" if end.limit_time is None else f"; the motion ends near t = {end.limit_time:.4g} s"
    return f"stopped at t = {time_text(t, step, decimals=2)} s: {why}{limit}"


def _without_asides(text: str) -> str:
    """`text` without its parenthesised asides, nested ones too ("'heavy' (100 kg) is 1e+04 times as heavy as 'light'
    (0.01 kg), ..." -> "'heavy' is 1e+04 times as heavy as 'light', ..."; cutting the text at its first parenthesis
    left "'heavy'").  A name in quotes ('wheel (left)') is kept as it is, and a parenthesis that is never closed is
    text, not an aside."""
    quoted, pairs, stack = set(), {}, []
    i = 0
    while i < len(text):  # the quoted names: from a quote that starts a word to one that ends it
        if text[i] == "'" and (i == 0 or not text[i - 1].isalnum()):
            end = next((k for k in range(i + 1, len(text)) if text[k] == "'" and (
                k + 1 == len(text) or not text[k + 1].isalnum())), None)
            if end is not None:
                quoted.update(range(i, end + 1))
                i = end + 1
                continue
        i += 1
    for i, ch in enumerate(text):  # the parentheses outside them that close
        if i in quoted:
            continue
        if ch == "(" and (i == 0 or text[i - 1] == " " or stack):
            stack.append(i)
        elif ch == ")" and stack:
            pairs[stack.pop()] = i
    out, i = [], 0
    while i < len(text):
        if i in pairs:
            i = pairs[i] + 1
            continue
        out.append(text[i])
        i += 1
    return re.sub(r" +([,;:.])", r"\1", re.sub(r"  +", " ", "".join(out))).strip()


class _ShownAfterPaint(QObject):
    """Tells the runs' threads when the GUI thread has shown their batches (FrameBatch.shown: a contact run's thread
    waits for it before it computes on, worker.GUI_TURN_SECONDS at most): once the window has painted what taking the
    batch changed (the 3D view, the readouts; Qt paints a window in a later turn of the event loop, its UpdateRequest:
    the batches taken before that event are released by a queued call made when it comes, which runs after the paint),
    at once when no window is visible, or after SHOWN_FALLBACK_MS when the window does not paint (minimised, nothing
    changed). A batch taken after that event and before the queued call waits for the next paint."""

    def __init__(self, parent: QObject, widget=None) -> None:
        super().__init__(parent)
        self.widget = widget  # a widget of the window that shows the runs (None: no window)
        self._pending: list = []  # the batches' threading.Events, taken since the window's last paint began
        self._window = None  # the window watched
        self._fallback = QTimer(self)
        self._fallback.setSingleShot(True)
        self._fallback.setInterval(SHOWN_FALLBACK_MS)
        self._fallback.timeout.connect(self.release)

    def add(self, shown) -> None:
        """`shown` (a threading.Event) is to be set once the window has painted what the GUI thread did so far."""
        window = self.widget.window() if self.widget is not None else None
        if window is None or not window.isVisible():
            shown.set()
            return
        if window is not self._window:
            if self._window is not None:
                self._window.removeEventFilter(self)
            window.installEventFilter(self)
            self._window = window
        self._pending.append(shown)
        if not self._fallback.isActive():
            self._fallback.start()

    def eventFilter(self, obj, ev) -> bool:  # noqa: N802 - Qt API
        if self._pending and ev.type() == QEvent.UpdateRequest and obj is self._window:
            painted, self._pending = self._pending, []
            self._fallback.stop()
            QTimer.singleShot(0, self, functools.partial(_set_all, painted))  # (a queued call: after this paint)
        return False

    def release(self) -> None:
        """Set the pending batches' events now."""
        self._fallback.stop()
        pending, self._pending = self._pending, []
        _set_all(pending)


def _set_all(events) -> None:
    for e in events:
        e.set()


class _Job:
    """Bookkeeping of one run in the GUI thread: its worker, recording, token and progress clock."""

    def __init__(self, owner: "Playback", recording: FrameRecording) -> None:
        self.worker = SolveWorker(owner)
        self.recording = recording
        self.token = -1  # the job whose frames are wanted (-1: none; a cancelled job's late signals are dropped)
        self.started = 0.0  # wall time of the first frame
        self.stopped_by_user = False
        self.stop_note = ""  # why a stop that was not the user's came (an export that has the frames it needs)


class Playback(QObject):
    """Owns the workers, the recordings and the play timer for one document; the views follow the cursor."""

    statusChanged = Signal(str, str, str)  # text for the status line, its tooltip (details), kind (STATUS_KINDS)
    mobilityChanged = Signal(object)  # core.kinematics.RankMobility of the current geometry, None while unknown
    playingChanged = Signal(bool)
    rangeChanged = Signal(float, int)  # t_end, steps (kinematics)
    kindChanged = Signal(str, str)  # run kind of the document ("kinematics", "contact", ""), one line for the UI
    runningChanged = Signal(bool)  # a run of the document is under way
    progressChanged = Signal(float, str)  # fraction of the planned frames recorded, text (time, steps/s, time left)
    crashed = Signal(str, str)  # message, traceback: a run failed with an exception (the window shows a dialog)
    optionsChanged = Signal()  # contact end time, method or comparison changed

    def __init__(self, document, viewport=None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.document = document
        self.viewport = viewport
        self.recording = FrameRecording(self)
        self.ghost = FrameRecording(self)  # comparison: the other method's run of the same document
        self._main = _Job(self, self.recording)
        self._ghost = _Job(self, self.ghost)
        self.worker = self._main.worker
        self.ghost_worker = self._ghost.worker
        self.t_end = 1.0
        self.steps = 100
        self.contact_t_end: float | None = None  # None: the document's simulation.duration
        self.method: str | None = None  # None: the document's simulation.method
        self.compare = False
        self.kind = ""
        self.kind_text = ""
        self.status = ""
        self.status_tip = ""
        self.status_kind = "busy"
        self.progress = (0.0, "")
        self.mobility: RankMobility | None = None
        self.seconds_per_step: float | None = None  # measured on this document's last contact run
        self._key = None  # motion content of the document as last seen
        # the motion content the recording's run was started for, and the status its end gave (an edit that is
        # undone brings the document back to it: the frames are no longer stale)
        self._run_key = None
        self._run_status: tuple[str, str, str] | None = None
        self._geo_key = None  # geometry of the last analysis asked for
        self._simulation = None  # the document's simulation section as last seen
        self._analysis_token = -1
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self._start)
        self._clock = QTimer(self)
        self._clock.setInterval(TICK_MS)
        self._clock.timeout.connect(self._tick)
        self._play_origin = (0.0, 0.0)  # (wall time, motion time) when playing started
        self._shown = _ShownAfterPaint(self, viewport)  # the runs' threads wait for the batches' paint (worker)
        self._resume_t: float | None = None  # after a re-run, put the cursor back at this time once it is recorded
        for job in (self._main, self._ghost):
            w = job.worker
            w.began.connect(lambda tok, info, j=job: self._on_began(j, tok, info))
            w.framesReady.connect(lambda tok, frames, j=job: self._on_frames(j, tok, frames))
            w.failed.connect(lambda tok, where, msg, j=job: self._on_failed(j, tok, where, msg))
            w.crashed.connect(lambda tok, msg, tb, j=job: self._on_crashed(j, tok, msg, tb))
            w.ended.connect(lambda tok, end, j=job: self._on_ended(j, tok, end))
            w.preparing.connect(lambda tok, j=job: self._on_preparing(j, tok))
            w.compiling.connect(lambda tok, note, j=job: self._on_compiling(j, tok, note))
        self.worker.analysed.connect(self._on_analysed)
        self.recording.cursorChanged.connect(self._on_cursor)
        document.changed.connect(self._on_changed)
        document.replaced.connect(self._on_replaced)
        self._on_changed(start=False)
        self._open()

    # ---- public --------------------------------------------------------------------------------------------------
    def times(self) -> np.ndarray:
        """The requested times of a kinematic run, t = k·t_end/steps, k = 0..steps."""
        return np.arange(self.steps + 1) * (self.t_end / self.steps)

    def spec(self, method: str | None = None) -> RunSpec:
        """The run of the current document with the panel's settings."""
        if self.kind == "contact":
            return RunSpec(kind="contact", t_end=self.contact_t_end, method=method or self.method)
        return RunSpec(kind="kinematics", t_end=self.t_end, steps=self.steps)

    def document_method(self) -> str:
        """The method a contact run uses (the panel's choice, else the document's)."""
        sim = self.document.mechanism.simulation
        return self.method or (sim.method if sim else "implicit")

    def contact_end(self) -> float:
        """The end time of a contact run (the panel's choice, else the document's duration)."""
        sim = self.document.mechanism.simulation
        return float(self.contact_t_end if self.contact_t_end is not None else (sim.duration if sim else 1.0))

    def expected_seconds(self) -> float:
        """Estimated wall time of the document's contact run (0 for other kinds)."""
        if self.kind != "contact":
            return 0.0
        # (before the first run: work_units, which analyses the drivers once per structure of the mechanism)
        return expected_contact_seconds(self.document.mechanism, self.contact_t_end, self.seconds_per_step)

    def auto_runs(self) -> bool:
        """Whether an edit re-runs the motion by itself (the rule in this module's docstring)."""
        return self.kind == "kinematics" or (self.kind == "contact" and self.expected_seconds() <= AUTO_RUN_SECONDS)

    def end_refusal(self, t_end: float) -> str:
        """Why the motion cannot be run to `t_end` seconds ('' if it can): outside [MIN_DT, MAX_DURATION] s, or for
        a contact run more steps of the document's dt than a run may take (the run's own check,
        core.validate.step_count). The one check of every End: typed in the Motion dock, stepped there with the
        arrows or the wheel, set from code (set_range)."""
        t_end = float(t_end)
        if not validate.MIN_DT <= t_end <= validate.MAX_DURATION:  # (nan too)
            return f"must be between {validate.MIN_DT:g} and {validate.MAX_DURATION:g} s, got {t_end:g}"
        if self.kind != "contact":
            return ""
        sim = self.document.mechanism.simulation
        try:
            validate.run_steps(t_end, float(sim.dt) if sim else 0.01)
        except LinkwrightError as exc:
            return exc.message
        return ""

    def _shorter_than_a_step(self) -> str:
        """Why the contact run's End is refused as shorter than one step of the document's dt ('' if it is not)."""
        sim = self.document.mechanism.simulation
        end, dt = self.contact_end(), float(sim.dt) if sim else 0.01
        try:
            validate.step_count(end, dt)
        except LinkwrightError:
            return ""  # (too many steps: the run's own refusal, in its thread)
        try:
            validate.whole_step(end, dt)
        except LinkwrightError as exc:
            return exc.message
        return ""

    def set_range(self, t_end: float, steps: int) -> str:
        """Kinematics: solve up to `t_end` seconds in `steps` steps; contact: run to `t_end` (re-runs if it changed).
        A range that cannot be run is not taken: the reason is returned (end_refusal; steps outside [1, MAX_STEPS]
        for a driven mechanism), '' when the range was taken or was already the one set."""
        t_end, steps = float(t_end), int(steps)
        why = self.end_refusal(t_end)
        if not why and self.kind != "contact" and not 1 <= steps <= validate.MAX_STEPS:
            why = f"steps must be between 1 and {validate.MAX_STEPS:,}, got {steps}"
        if why:
            return why
        if self.kind == "contact":
            if t_end != self.contact_end():
                self.contact_t_end = t_end
                self.optionsChanged.emit()
                self._edited()
            return ""
        if (t_end, steps) == (self.t_end, self.steps):
            return ""
        self.t_end, self.steps = t_end, steps
        self.rangeChanged.emit(t_end, steps)
        self._restart()
        return ""

    def set_method(self, method: str) -> None:
        """Contact runs: 'implicit' or 'explicit' (re-runs by the auto-run rule)."""
        if method != self.document_method():
            self.method = method
            self._update_kind()  # (the `Run: …` line names the method that will run)
            self.optionsChanged.emit()
            self._edited()

    def set_compare(self, on: bool) -> None:
        """Run the other method alongside (contact documents): ghost bodies in the 3D view, dashed curves in plots."""
        on = bool(on)
        if on == self.compare:
            return
        self.compare = on
        self.optionsChanged.emit()
        if not on:
            self._cancel_job(self._ghost)
            self.ghost.clear()
            if self.viewport is not None:
                self.viewport.clear_ghosts()
        elif self.kind == "contact" and (self.recording.count or self.is_running()) and not self.recording.stale:
            self._start_ghost()

    def run(self) -> None:
        """Run the document now (Run, F5): cancels a run under way and starts over."""
        self._debounce.stop()
        self._restart(debounce=False)

    def stop(self, note: str = "") -> None:
        """Stop the run under way (Stop, Shift+F5): its frames are kept, with the reason (`note`: why, when it is
        not the user who stops it, e.g. a screenshot that has reached its time)."""
        for job in (self._main, self._ghost):
            if job.token != -1 and job.worker.running() and not job.recording.complete:
                job.stopped_by_user = True
                job.stop_note = note
                job.worker.cancel()

    def is_running(self) -> bool:
        """Whether a run of the document is under way."""
        return self._main.token != -1 and not self.recording.complete

    def seek(self, k: int) -> None:
        """Show frame k (the user scrubs; a cursor position waiting for a re-run is forgotten)."""
        self._resume_t = None
        self.recording.set_cursor(k)

    def seek_time(self, t: float) -> None:
        """Show the last recorded frame at or before time t."""
        self.seek(self.recording.index_at(t))

    def show_cursor(self) -> None:
        """Show the cursor's frame in the views again (after an export drew other frames in the 3D view)."""
        self._on_cursor(self.recording.cursor)

    def show_frame(self, k: int) -> None:
        """Draw recorded frame k in the 3D view as the cursor would (bodies, contact arrows, trails up to it, the
        comparison's ghosts at its time) without moving the cursor: an exported animation's frames."""
        rec = self.recording
        if self.viewport is None or not rec.count:
            return
        k = int(min(max(k, 0), rec.count - 1))
        self.viewport.set_pose_array(rec.poses[k], rec.body_names)
        self._show_overlays(k)
        self._sync_ghost(float(rec.times[k]))

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
        """Stop the timers, cancel the runs and join their threads (window close)."""
        self._debounce.stop()
        self._main.token = self._ghost.token = -1
        self._shown.release()
        self.pause()
        self.worker.shutdown()
        self.ghost_worker.shutdown()

    # ---- document ----------------------------------------------------------------------------------------------
    def _on_replaced(self) -> None:
        self._debounce.stop()  # (a re-run an edit of the old document scheduled: not for this one)
        self.worker.shutdown()  # the old document's runs: cancel and join now
        self.ghost_worker.shutdown()
        self._key = self._geo_key = self._run_key = self._run_status = None
        self._resume_t = None
        self.contact_t_end = self.method = None
        self.seconds_per_step = None
        self._main.token = self._ghost.token = -1
        self._shown.release()
        self.pause()
        self.recording.clear()  # the old document's frames
        self.ghost.clear()
        if self.viewport is not None:
            self.viewport.clear_ghosts()
        self.optionsChanged.emit()
        self._on_changed(start=False)
        self._open()

    def _open(self) -> None:
        """A document was opened: run it at once, unless it is a long contact run (then it waits for Run)."""
        if self.kind == "contact" and not self.auto_runs():
            self._cancel_job(self._main)
            self.recording.clear()
            self._show_design()
            self._clear_progress()
            self._set_running(False)  # (the old document's run, if one was under way, is cancelled)
            self._set_status(self._wait_text("opened"), "", "stale")
            return
        if self.kind:  # the previous document's status and progress go at once (they stayed until the run began)
            self._clear_progress()
            self._set_status("solving…", "", "busy")
        self._start_now()  # a new document, not a burst of edits: no need to wait

    def _on_changed(self, start: bool = True) -> None:
        mech = self.document.mechanism
        key = _motion_key(mech)
        if key == self._key:
            return  # layout moves, renames of the document, ...: the motion is the same
        self._key = key
        self._update_kind()
        if mech.simulation != self._simulation:
            # the document's dt, duration or method: what the Motion panel's End, Steps and Method show for a
            # contact run (a Properties edit or its undo changed them)
            self._simulation = mech.simulation
            self.optionsChanged.emit()
        geo = _geometry_key(mech)
        if geo != self._geo_key:
            self._geo_key = geo
            self.mobility = None
            self._analysis_token = -1  # (an analysis under way is of the old geometry: its count is dropped)
            self.mobilityChanged.emit(None)
        if start:
            self._edited()

    def _update_kind(self) -> None:
        """The run's kind and its line for the UI, which names the method that will run (the dock's, else the
        document's)."""
        mech = self.document.mechanism
        kind, text = run_kind(mech), describe_kind(mech, self.method)
        if (kind, text) != (self.kind, self.kind_text):
            if kind != self.kind:
                self.seconds_per_step = None
            self.kind, self.kind_text = kind, text
            self.kindChanged.emit(kind, text)

    def _edited(self) -> None:
        """The motion changed: re-run by the auto-run rule, else mark the results stale."""
        if self.auto_runs() or self.kind != "contact":
            self._restart()
            return
        self._debounce.stop()
        # (a re-run an earlier edit of the burst scheduled is not coming: Stop must not stay enabled for it)
        self._set_running(self.is_running())
        if self._key == self._run_key and (self.recording.count or self.is_running()):
            # back to the document the frames were computed for (an undo): they are current again
            self.recording.set_stale(False)
            if self.is_running():
                self._show_solving()
            elif self._run_status is not None:
                self._set_status(*self._run_status)
        elif self.is_running():
            self.recording.set_stale(True)
            self._show_solving()
        elif self.recording.count:
            self.recording.set_stale(True)
            self._set_status(self._wait_text("changed"), "Edits since the run started are not in its frames.", "stale")
        else:
            self._clear_progress()
            self._set_status(self._wait_text("opened"), "", "stale")

    def _clear_progress(self) -> None:
        """No run and no frames: no progress (of the previous document's run, of a run an edit dropped or refused)."""
        self.progress = (0.0, "")
        self.progressChanged.emit(*self.progress)

    def _wait_text(self, why: str) -> str:
        est = self.expected_seconds()
        head = "results are stale: the document changed" if why == "changed" else "contact run not started"
        # (to as many digits as tell it from the threshold: '≈ 2 s of work, more than 2 s' was 2.3 s)
        shown = next((t for t in (f"{est:.{d}f}" for d in range(4)) if float(t) > AUTO_RUN_SECONDS), f"{est:.4g}")
        return f"{head}; press Run (F5) (expected ≈ {shown} s of work, more than {AUTO_RUN_SECONDS:g} s)"

    def _cancel_job(self, job: _Job) -> None:
        job.worker.cancel()
        job.token = -1
        job.stopped_by_user = False
        job.stop_note = ""

    def _restart(self, debounce: bool = True) -> None:
        """Drop the recording at once (it belongs to the old document) and run again (after the debounce)."""
        self._cancel_job(self._main)
        self._cancel_job(self._ghost)
        if self.recording.count and not self.playing:
            self._resume_t = self.recording.time_at()  # an edit while looking at t: show t again once re-run
        self.recording.clear()
        self.ghost.clear()
        if self.viewport is not None:
            self.viewport.clear_ghosts()
        self._set_status("solving…", "", "busy")
        self._set_running(True)
        if debounce:
            self._debounce.start()
        else:
            self._start()

    def _start_now(self) -> None:
        self._debounce.stop()
        self._start()

    def _start(self) -> None:
        mech = self.document.mechanism
        if not self.kind:
            # (a body drawn with a shape but no mass or density is named, as beside a body with mass)
            self._no_run(str(nothing_to_move(mech)), "")
            return
        why = self._shorter_than_a_step() if self.kind == "contact" else ""
        if why:
            # the dock's End checked when it was typed, then dt edited past it: the run would end a whole step past
            # the End (core.validate.run_steps; the run itself takes a time of any length as one step at least)
            self._no_run(f"End: {why}", "The motion cannot be solved; the design configuration is shown.", pause=True)
            return
        analyse = self.mobility is None
        self._main.stopped_by_user, self._main.stop_note = False, ""
        self._run_key, self._run_status = self._key, None
        token = self._main.token = self.worker.start(mech, self.spec(), analyse=analyse)
        self._set_running(True)
        if analyse:
            self._analysis_token = token
        if self.kind == "contact" and self.compare:
            self._start_ghost()

    def _no_run(self, text: str, detail: str, pause: bool = False) -> None:
        """The motion cannot be run: the runs cancelled (and, pause, the cursor stopped), no frames, the design
        configuration shown, why in the status as an error."""
        self._cancel_job(self._main)
        self._cancel_job(self._ghost)
        if pause:
            self.pause()
        self.recording.clear()
        self.ghost.clear()
        self._show_design()
        self._set_running(False)
        self._clear_progress()
        self._set_status(text, detail, "error")

    def _start_ghost(self) -> None:
        self._ghost.stopped_by_user, self._ghost.stop_note = False, ""
        self._ghost.token = self.ghost_worker.start(self.document.mechanism,
                                                    self.spec(OTHER_METHOD[self.document_method()]), analyse=False)

    # ---- worker results (GUI thread; stale tokens are dropped) -------------------------------------------------------
    def _on_analysed(self, token: int, rm) -> None:
        if token == self._analysis_token and rm is not None:
            self.mobility = rm
            self.mobilityChanged.emit(rm)

    def _on_preparing(self, job: _Job, token: int) -> None:
        if token == job.token and job is self._main and not self.recording.stale:
            self._set_status("preparing the contact solver…", "Loading its compiled kernels (1-3 s).", "busy")

    def _on_compiling(self, job: _Job, token: int, note) -> None:
        """The kernels are compiled (a machine's first run): what, how long so far, and whether Stop can end it."""
        if token != job.token or job is not self._main or self.recording.stale:
            return
        if note.stage == "compiling":
            text = (f"compiling the contact solver's kernels: a machine's first run only, about {note.estimate:.0f} s "
                    f"({note.elapsed:.0f} s so far)")
            tip = ("numba compiles them once and caches them; every later run loads them in a second or two. "
                   "Stop (Shift+F5) ends the compile at once; the next run goes on from what it had compiled.")
        else:
            text = (f"compiling the contact solver's kernels in this process, about {note.estimate:.0f} s: Stop "
                    "takes effect after it")
            tip = f"They could not be compiled in a separate process that Stop can end: {note.reason}."
        self._set_status(text, tip, "busy")

    def _on_began(self, job: _Job, token: int, info: RunInfo) -> None:
        if token != job.token:
            return
        job.recording.begin(info.kind, info.body_names, info.channels, info.times, info.info)
        job.started = info.started or time.perf_counter()  # (the run's thread's clock: perf_counter is process-wide)
        if job is self._main and self.viewport is not None and info.kind == "contact":
            # (the arrows' scale: the run's typical weight drawn half its bodies' typical size long)
            self.viewport.set_force_reference(info.info.get("typical_weight", 0.0), info.info.get("weighed"))
        if job is self._main:
            if self._key != self._run_key:  # (an edit came before the run began: begin() made its frames current)
                job.recording.set_stale(True)
            self._show_solving()
            self._progress(force=True)

    def _on_frames(self, job: _Job, token: int, frames) -> None:
        shown = getattr(frames, "shown", None)  # (a FrameBatch: its run's thread waits for it to be shown)
        if token != job.token:
            if shown is not None:
                shown.set()
            return
        if shown is not None:
            self._shown.add(shown)
        rec = job.recording
        # a contact run is watched as it goes: the view stays on its newest frame until the user scrubs back or
        # plays (a re-run after an edit goes back to the time shown instead; a stale run's frames wait for a scrub)
        rec.extend(frames, follow=job is self._main and rec.kind == "contact" and not self.playing
                   and self._resume_t is None and not rec.stale)
        if rec.full and not job.stopped_by_user:  # no memory to keep more frames: the run stops, its frames kept
            job.stopped_by_user = True  # (its end is taken, not dropped as a cancelled job's; _on_ended says why)
            job.worker.cancel()
        if job is self._ghost:
            self._sync_ghost()
            return
        if self._resume_t is not None and not self.playing and rec.times[rec.count - 1] >= self._resume_t - 1e-12:
            rec.set_cursor(rec.index_at(self._resume_t))
            self._resume_t = None
        self._show_solving()
        self._progress()

    def _show_solving(self) -> None:
        """The status of the main run under way: its frames so far, or, when the document was edited since it
        started, that its results are stale (the progress goes on in the bar and the tooltip)."""
        rec = self.recording
        count = f"{rec.count} / {len(rec.requested)} frames"
        if rec.stale:
            status = (self._wait_text("changed"), "Edits since the run started are not in its frames; the run goes on "
                      f"with the document as it was when it started (solving… {count}).", "stale")
        else:
            status = (f"solving… {count}", "", "busy")
        if status != (self.status, self.status_tip, self.status_kind):
            self._set_status(*status)

    def _progress(self, force: bool = False) -> None:
        rec = self.recording
        now = time.perf_counter()
        if not force and rec.count < len(rec.requested) and now - getattr(self, "_progress_shown", 0.0) < PROGRESS_SECONDS:
            return  # a progress bar repaints at once when its value changes: a few times a second is enough
        self._progress_shown = now
        n, total = rec.count, max(len(rec.requested), 1)
        t = rec.time_at(n - 1) if n else 0.0
        t_end = float(rec.requested[-1]) if len(rec.requested) else 0.0
        elapsed = time.perf_counter() - self._main.started
        rate = (n - 1) / elapsed if n > 1 and elapsed > 0 else 0.0
        text = f"t = {time_text(t, rec.step)} / {time_text(t_end, rec.step)} s"
        if rate > 0:
            left = (total - n) / rate
            running = self._main.token != -1 and not rec.complete  # (a stopped run has nothing left to compute)
            text += f" · {rate:.0f} steps/s · {left:.0f} s left" if left >= 1 and running else f" · {rate:.0f} steps/s"
        if n >= total:
            text = f"t = {time_text(t, rec.step)} / {time_text(t_end, rec.step)} s"
        self.progress = (n / total, text)
        self.progressChanged.emit(n / total, text)

    def _on_failed(self, job: _Job, token: int, location: str, message: str) -> None:
        if token != job.token:
            return
        # a run's value the Motion dock gives is named as the dock's field: its End, not the document's duration
        # (nor a command line's --t-end); the rest keep the document's location (simulation.dt, drivers[0], ...)
        message = str(LinkwrightError(DOCK_FIELDS.get(location, location), message))
        job.token = -1
        if job is self._ghost:
            self.ghost.clear()
            return
        self.pause()
        self.recording.clear()
        self._show_design()
        self._set_running(False)
        self._clear_progress()  # (a refused run has none: the bar showed the previous document's run, full)
        self._set_status(message, "The motion cannot be solved; the design configuration is shown.", "error")

    def _on_crashed(self, job: _Job, token: int, message: str, tb: str) -> None:
        if token != job.token:
            return
        job.token = -1
        job.recording.finish(False, message, job.recording.time_at(job.recording.count - 1))
        if job is self._main:
            self._set_running(False)
            kept = f"; the {self.recording.count} frames before it are kept" if self.recording.count else ""
            self._set_status(message + kept, tb.strip().splitlines()[-1] if tb else "", "error")
        self.crashed.emit(message, tb)

    def _on_ended(self, job: _Job, token: int, end: RunEnd) -> None:
        if token != job.token:
            return
        if end.cancelled and not job.stopped_by_user:
            return
        rec = job.recording
        reason, stop = end.reason, end.stop_time
        note = job.stop_note if end.cancelled else ""  # (a stop that was not the user's: an export has its frames)
        if rec.full:  # frames came that there was no memory to keep: the run ends at the last frame kept, not ok
            last = rec.time_at(rec.count - 1)
            reason = f"stopped at t = {last:.6g} s: {rec.full}" if last is not None else rec.full
            stop, note = last, ""
            end = RunEnd(False, reason, stop, None, False, rec.count, end.seconds)
        elif end.cancelled:  # Stop: the frames so far are the result, with the reason
            last = rec.time_at(rec.count - 1)
            stop = last
            if note:
                reason = f"stopped at t = {last:.6g} s: {note}" if last is not None else note
            else:
                reason = f"stopped by the user at t = {last:.6g} s" if last is not None else "stopped by the user"
        job.stopped_by_user = False
        job.stop_note = ""
        if job is self._ghost:
            rec.finish(end.ok, reason, stop, end.cancelled)
            self._sync_ghost()
            return
        if self._resume_t is not None and rec.count and not self.playing:
            rec.set_cursor(rec.count - 1)  # stopped before the time shown: the nearest solved frame
        self._resume_t = None
        rec.finish(end.ok, reason, stop, end.cancelled, by_user=end.cancelled and not note and not rec.full)
        self._set_running(False)
        if rec.kind == "contact" and end.ok and end.frames > 1:
            # (timed in the run's thread: this thread may have taken the began signal late, the run already done)
            self.seconds_per_step = end.seconds / (end.frames - 1)
        if rec.kind == "contact" and rec.count and self.viewport is not None:
            # the bodies' paths may leave the view framed on the initial poses (a sliding box, a rolling disc)
            fit_motion(self.viewport, motion_of(rec, rec.time_at(rec.count - 1)), samples=48)
        if end.ok:
            text, tip = f"{rec.count} frames, t = 0 … {rec.time_at(rec.count - 1):g} s", ""
            explicit, relaxed = _fallback_steps(rec)
            if explicit:
                text += f" · {explicit} step(s) by the explicit method"
                tip = ("The implicit step failed there even when halved, and the explicit method took it; its end "
                       "met the same overlap bound (Plots: solver fallback, 1).")
            if relaxed:
                text += f" · {relaxed} step(s) by the relaxed problem"
                tip = (tip + "\n" if tip else "") + (
                    "Every Newton attempt failed there, and the step is the solution of its relaxed problem (convex "
                    "friction): a contact that slides ends it slightly apart (Plots: solver fallback, 2).")
            self._set_status(text, tip, "ok")
        elif note and rec.count:  # the frames asked for are there: not a failure, no warning colour
            self._set_status(f"{rec.count} frames, t = 0 … {rec.time_at(rec.count - 1):g} s ({note})", reason, "ok")
        else:
            tip = reason
            if rec.count:
                tip += f"\nThe {rec.count} frames before it can be played and scrubbed."
            text = reason if end.cancelled else short_reason(RunEnd(end.ok, reason, stop, end.limit_time,
                                                                    end.cancelled, end.frames), rec.step)
            self._set_status(text, tip, "stopped")
        self._run_status = (self.status, self.status_tip, self.status_kind)
        if rec.stale:
            self._set_status(self._wait_text("changed"), "Edits since the run started are not in its frames.", "stale")
        self._progress(force=True)

    # ---- cursor ------------------------------------------------------------------------------------------------
    def _on_cursor(self, _k: int) -> None:
        rec = self.recording
        P = rec.pose_at_cursor()
        if P is not None and self.viewport is not None:
            self.viewport.set_pose_array(P, rec.body_names)
            self._show_overlays()
        self._sync_ghost()

    def _show_overlays(self, k: int | None = None) -> None:
        """Contact points and force arrows at frame k (default the cursor's), trails up to it."""
        rec, vp = self.recording, self.viewport
        if vp is None or not rec.count:
            return
        k = min(rec.cursor if k is None else k, rec.count - 1)
        # each overlay names its bodies: the 3D view leaves out those of bodies deleted since the run started (a stale
        # run's contact arrows and trails floated where a deleted body had been)
        pair_bodies, point_owners = self._overlay_owners(rec)
        if rec.kind == "contact":
            # (the pairs in contact range: among the columns the recording holds, core.run.ColumnStore)
            row = {name: rec.series(name)[k] for name in ("pair.active", "pair.point_a", "pair.normal",
                                                          "pair.normal_force", "pair.friction_force")}
            active = row["pair.active"].astype(bool)
            vp.set_contacts(row["pair.point_a"][active], row["pair.normal"][active]
                            * row["pair.normal_force"][active][:, None], row["pair.friction_force"][active],
                            [pair_bodies[i] for i in rec.columns[active]])
        trails, owners = {}, dict(point_owners)
        if "points" in rec.values and rec.values["points"].shape[1]:
            for i, name in enumerate(rec.point_names):
                trails[name] = rec.values["points"][: k + 1, i]
        if rec.kind == "contact":
            # each body's path is its centre of mass's (a link whose frame sits at the world origin, far from its
            # mass, drew a wide arc of its origin off the view), for the bodies moved by forces: a kinematic body's
            # motion is the drivers' (named points trace it), and one drawn without a shape or a mass has no centre
            # of mass but its frame's origin (the parts feeder's crank drew a wide arc off the view); the run's
            # header gives kinematic bodies the mass 0
            mass = rec.info.get("header", {}).get("mass")
            for i, name in enumerate(rec.channels["body.com"].labels):
                if mass is None or mass[i] > 0.0:
                    trails[name] = rec.values["body.com"][: k + 1, i]
                    owners[name] = (name, None)
        vp.set_trails(trails, owners, key=rec.serial)  # (prefixes of one run's series: drawn incrementally)

    @staticmethod
    def _overlay_owners(rec: FrameRecording) -> tuple[list[tuple[str, str]], dict[str, tuple[str, str]]]:
        """The run's pairs' two bodies (in pair order) and its named points' (body, point), from the channels' owners
        (core.run.Channel.owners; a point's label is its body's name, '.', its own)."""
        pairs, pts = rec.channels.get("pair.active"), rec.channels.get("points")
        pair_bodies = list(pairs.owners) if pairs else []
        point_owners = {lab: (own[0], lab[len(own[0]) + 1:]) for lab, own in zip(pts.labels, pts.owners)} if pts else {}
        return pair_bodies, point_owners

    def _sync_ghost(self, t: float | None = None) -> None:
        """The comparison run's bodies at time t, default the cursor's (translucent ghosts)."""
        g = self.ghost
        if self.viewport is None or not self.compare or not g.count:
            return
        if t is None:
            t = self.recording.time_at()
        if t is None:
            t = 0.0
        g.set_cursor(g.index_at(t))
        ghosts = [n for n, dyn in zip(g.body_names, self._dynamic_mask(g)) if dyn]
        idx = [g.body_names.index(n) for n in ghosts]
        self.viewport.set_ghost_poses(g.poses[g.cursor][idx], ghosts)

    @staticmethod
    def _dynamic_mask(rec: FrameRecording) -> list[bool]:
        c = rec.channels.get("body.position")
        moving = set(c.labels) if c else set()
        return [n in moving for n in rec.body_names]

    def _show_design(self) -> None:
        """Put every body back in its design pose (the viewport keeps solved poses across edits of drivers only)."""
        scene = self.viewport.scene() if self.viewport is not None else None
        if scene is not None:
            self.viewport.set_body_poses({bg.name: bg.design for bg in scene.bodies})
            self.viewport.set_contacts(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 3)))
            self.viewport.set_trails({})

    def _tick(self) -> None:
        rec = self.recording
        if not rec.count:
            return  # a re-run is under way: keep the clock, so playing resumes in phase
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

    def _set_running(self, on: bool) -> None:
        if getattr(self, "_running", None) != on:
            self._running = on
            self.runningChanged.emit(on)

    def _set_status(self, text: str, tip: str, kind: str) -> None:
        self.status, self.status_tip, self.status_kind = text, tip, kind
        self.statusChanged.emit(text, tip, kind)

