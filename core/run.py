"""Runs: one protocol for every kind of motion (driven kinematics, contact dynamics), used by the CLI and the app.

A run is built from a frozen snapshot of a document and iterated (in a worker thread, or directly):

    run = open_run(mech, RunSpec(t_end=1.0), cancel=event.is_set)
    for frame in run:          # frame.index, frame.t, frame.poses (n_bodies, 4, 4), frame.values {channel: array}
        ...
    run.verdict                # Verdict(ok, reason, stop_time, cancelled) once the iteration has ended

Every run states its `kind` ("kinematics" or "contact"), the `body_names` its poses are for (world transforms of the
body frames), its `channels` (named per-frame arrays with labels and units: joint coordinates, named points, contact
pairs, energies, solver statistics) and the `times` it plans to reach.  It checks `cancel` between frames (the contact
stepper also inside a step) and ends with a verdict; frames yielded before a failure stay valid.  A run holds its own
state only: one compiled model can be run by several runs at once.

A channel may be sparse (Channel.sparse: a contact run's per-pair channels): each frame still carries every label's
values, and says which labels it computed in range (frame.ranged); the others' values follow from the frame's poses
(run.out_of_range).  A recording (ColumnStore: the command line's core.contact.record, the app's FrameRecording)
holds a sparse channel for the labels that have been in range only, so its memory grows with the contacts, not with
every candidate pair; frame_bytes counts the labels the run expects in range (run.expected_in_range).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterator, Protocol

import numpy as np

from . import validate
from .errors import LinkwrightError

__all__ = ["Channel", "RunFrame", "Verdict", "Run", "RunSpec", "RUN_KINDS", "run_kind", "describe_kind", "open_run",
           "massive_bodies", "undriven_massive_bodies", "DynamicsOption", "dynamics_option", "nothing_to_move",
           "frame_bytes", "kinematic_frame_bytes", "check_recording", "FIRST_FRAMES", "grown_room", "grow", "ColumnStore", "FIRST_COLUMNS"]

RUN_KINDS = ("kinematics", "contact")


@dataclass(frozen=True)
class Channel:
    """A named per-frame array: `labels` index its first axis (coordinates, pairs, bodies), `components` its second."""

    name: str  # key in RunFrame.values, e.g. "q", "pair.normal_force"
    title: str  # what it is, for a plot's title or a menu ("normal force")
    unit: str  # SI unit of the values ("N", "m", "rad or m", "" for counts)
    labels: tuple[str, ...]
    components: tuple[str, ...] = ()  # e.g. ("x", "y", "z"); empty for one scalar per label
    # the bodies each label belongs to, by name: a pair's two, a named point's or a body's one; empty where the labels
    # are not bodies' (coordinates, joints, energies). Views that drop a deleted body's overlays read them here.
    owners: tuple[tuple[str, ...], ...] = ()
    # a sparse channel (a contact run's per-pair ones): a recording holds it only for the labels that have been in
    # range at some recorded frame (ColumnStore); its values for the others follow from the poses (Run.out_of_range)
    sparse: bool = False
    dtype: str = "float64"  # of its numbers ("bool" for a flag)

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of one frame's array."""
        return (len(self.labels),) + ((len(self.components),) if self.components else ())

    @property
    def label_bytes(self) -> int:
        """Bytes of one label's numbers in one frame."""
        return np.dtype(self.dtype).itemsize * (len(self.components) or 1)


class RunFrame(Protocol):
    """One instant of a run."""

    index: int
    t: float
    poses: np.ndarray  # (n_bodies, 4, 4) world transforms of the body frames, in Run.body_names order
    # a run with sparse channels: the labels (indices) whose values this frame computed in range (a contact run: the
    # pairs solved in the step, and at frame 0 those whose closest points were found); the others' values are
    # Run.out_of_range's of the frame's poses
    ranged: np.ndarray

    @property
    def values(self) -> dict[str, np.ndarray]:
        """Per-channel arrays of this frame (shapes as Run.channels)."""


@dataclass(frozen=True)
class Verdict:
    """How a run ended: ok, or why and when it stopped (a cancelled run is not ok)."""

    ok: bool
    reason: str = ""
    stop_time: float | None = None  # the time that could not be reached
    cancelled: bool = False
    limit_time: float | None = None  # kinematics: where the motion ends (between the last frame and stop_time)


class Run(Protocol):
    """The protocol every kind of motion implements."""

    kind: str  # one of RUN_KINDS
    body_names: list[str]
    channels: tuple[Channel, ...]
    times: np.ndarray  # the planned frame times (a run that stops early yields a prefix)

    @property
    def verdict(self) -> Verdict | None:
        """None until the iteration has ended."""

    def __iter__(self) -> Iterator[RunFrame]:
        """Frames in time order."""

    # Runs with sparse channels (Channel.sparse) also have:
    #   expected_in_range: int   -- how many of their labels a recording should expect to hold (frame_bytes)
    #   out_of_range(rotations (k, n_bodies, 3, 3), origins (k, n_bodies, 3), labels) -> {channel: (k, len(labels),
    #       *components)}: the sparse channels' values of labels out of range at frames with those poses, the same
    #       numbers the frames carry for them


@dataclass(frozen=True)
class RunSpec:
    """What to run: None means the document's default (or the kind's)."""

    kind: str | None = None  # None: run_kind(document)
    t_end: float | None = None  # kinematics: default 1 s; contact: the document's simulation.duration
    steps: int | None = None  # kinematics: number of steps (frames = steps + 1), default 100
    dt: float | None = None  # contact: the step, default the document's simulation.dt
    method: str | None = None  # contact: "implicit" or "explicit", default the document's
    solver: str | None = None  # contact, implicit method: "newton" (default) or "interior-point"


def _massive(b) -> bool:
    return not b.ground and (b.mass is not None or b.density is not None)


def _free_massive_bodies(mech) -> list[str]:
    attached = {name for j in mech.joints for name in j.bodies}
    return [b.name for b in mech.bodies if _massive(b) and b.name not in attached]


def massive_bodies(mech) -> list[str]:
    """Names of the bodies that are not ground and have a mass or a density."""
    return [b.name for b in mech.bodies if _massive(b)]


def undriven_massive_bodies(mech) -> list[str]:
    """Names of the bodies with mass (not ground) that the drivers leave free to move: the bodies a contact run moves
    by forces, as the contact model decides them (core.contact.bodies._driven_part: a body with mass is kinematic only
    when the drivers fix it, core.kinematics.driver_fixed_masks' first mask; one whose only freedom is idle, an RSSR
    coupler's spin, is moved by forces). A LinkwrightError (located) for drivers that cannot be compiled."""
    massive = massive_bodies(mech)
    if not massive:
        return []
    from .kinematics import compile_model, driver_fixed_masks
    from .structure import grounded_part

    grounded = grounded_part(mech)  # (a part without ground floats: its root's freedoms are not coordinates)
    km = compile_model(mech)
    fixed_mask, _held = driver_fixed_masks(km)
    fixed = {name for name, f in zip(km.body_names, fixed_mask) if f and name in grounded}
    return [name for name in massive if name not in fixed]


def run_kind(mech) -> str:
    """'contact' (dynamics) when a free body has mass, or when the document has a `simulation` section and some body
    has mass; else 'kinematics' when there are joints; '' when nothing moves."""
    # The simulation section is the document's opt-in to dynamics: a mechanism whose links have masses but that has
    # no such section stays a kinematics document (removing its driver says "under-driven", it does not start to fall).
    if _free_massive_bodies(mech) or (mech.simulation is not None and massive_bodies(mech)):
        return "contact"
    if mech.joints:
        return "kinematics"
    return ""


@dataclass(frozen=True)
class DynamicsOption:
    """Whether the user may switch a document between kinematics and dynamics (adding or removing its `simulation`
    section), whether dynamics is on, and why the switch is unavailable ("" when it is available)."""

    available: bool
    on: bool
    reason: str


def dynamics_option(mech) -> DynamicsOption:
    """The state of the app's kinematics/dynamics switch for a document (core.run.run_kind's rule)."""
    on = run_kind(mech) == "contact"
    if _free_massive_bodies(mech):
        return DynamicsOption(False, on, "free bodies with mass always run as contact dynamics")
    if not mech.joints:
        return DynamicsOption(False, on, "nothing to move: the document has no joints and no free body with mass")
    if not massive_bodies(mech):
        return DynamicsOption(False, on, "no body has a mass: give a link a mass (or a shape and a density) in "
                                         "Properties to simulate its dynamics")
    return DynamicsOption(True, on, "")


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


# the time-stepper a contact run's method is, as the UI names it (docs/contact.md: the implicit method is the
# paper's; the explicit one, with its gap linearised at the start of the step, is there for comparison)
METHOD_TEXT = {"implicit": "geometrically implicit time-stepper",
               "explicit": "explicit time-stepper: linearised gap, for comparison"}


def describe_kind(mech, method: str | None = None) -> str:
    """One line for the UI: which run the document gets, and why; a contact run's names its time-stepper, `method`
    (the one the run will use: the Motion dock's choice) or else the document's simulation.method."""
    kind = run_kind(mech)
    if kind == "contact":
        if not mech.joints:
            what = _count(len(_free_massive_bodies(mech)), "free body", "free bodies") + " with mass"
        else:
            # (every body that is not ground moves: by forces, or, when the drivers fix it, by the drivers, whose
            # bodies' masses are not used; docs/contact.md)
            what = (_count(sum(not b.ground for b in mech.bodies), "moving body", "moving bodies") + ", "
                    + _count(len(mech.joints), "joint", "joints"))
            if mech.drivers:
                what += ", " + _count(len(mech.drivers), "driver", "drivers")
        meth = method or mech.simulation_settings().method
        return f"contact dynamics: {what} ({METHOD_TEXT.get(meth, f'{meth} time-stepper')})"
    if kind == "kinematics":
        return "driven kinematics: joints and drivers (matrix method)"
    return "nothing to move: the document has no joints and no free body with mass"


def nothing_to_move(mech, location: str = "") -> LinkwrightError:
    """Why a document with nothing to move (run_kind '') has no run: a body (not ground) drawn with a shape but without
    a mass or density, located at it, as when it lies beside a body with mass (core.contact.bodies.massless_shape);
    else `location`: describe_kind's 'nothing to move' ("" for the message alone)."""
    for i, b in enumerate(mech.bodies):
        if not b.ground and b.shape is not None and b.mass is None and b.density is None:
            from .contact.bodies import massless_shape

            return massless_shape(b, f"bodies[{i}]")
    return LinkwrightError(location, describe_kind(mech))


FIRST_FRAMES = 64  # frames a recording of a run has room for when it begins; the room doubles as frames arrive


def grown_room(room: int, need: int, planned: int) -> int:
    """The frames a recording's arrays grow to when `need` frames do not fit in their `room`: twice the room, or
    what is needed, but not beyond the `planned` frames unless more are needed."""
    rows = max(2 * room, need)
    return min(rows, planned) if need <= planned else rows


def grow(arrays: dict, n: int, rows: int) -> dict:
    """The arrays (changed in place, in their order, and returned) with room for `rows` rows, their first n kept:
    one at a time, each old one let go once copied (growing holds the old and the new of one array at once, not of
    all of them)."""
    for name, old in list(arrays.items()):
        arr = np.zeros((rows,) + old.shape[1:], old.dtype)
        arr[:n] = old[:n]
        arrays[name] = arr
    return arrays


FIRST_COLUMNS = 16  # labels a recording's sparse channels have room for at first; the room doubles as labels come


class ColumnStore:
    """A recording's sparse channels (Channel.sparse): each an array (rows, columns, *components) over the labels
    that have been in range at some recorded frame, `columns` (their indices, in the order they came into range).
    A label's rows before it came into range hold its out-of-range values (the `fill` its recording gives: a run's
    out_of_range of the recorded poses), so each column is the label's whole series.  The rows grow as a
    recording's other arrays do (core.run.grow), the columns by doubling as labels come into range."""

    def __init__(self, channels, rows: int) -> None:
        self.channels = {c.name: c for c in channels if c.sparse}
        n_labels = max((len(c.labels) for c in self.channels.values()), default=0)
        self.columns = np.zeros(0, int)
        self.column_of = np.full(n_labels, -1, int)  # each label's column, -1 while it has none
        room = min(FIRST_COLUMNS, n_labels)
        self.arrays = {name: np.zeros((rows, room) + c.shape[1:], c.dtype) for name, c in self.channels.items()}

    def grow_rows(self, n: int, rows: int) -> None:
        """Room for `rows` rows, the first n kept (core.run.grow)."""
        grow(self.arrays, n, rows)

    def add(self, labels, n: int, fill: Callable | None) -> np.ndarray:
        """Give columns to those of `labels` that have none (in their order), their first n rows filled by
        fill(first, stop, labels) -> {channel: (stop - first, len(labels), ...)} (zeros without one); the columns of
        all `labels`."""
        labels = np.asarray(labels, int).reshape(-1)
        new = labels[self.column_of[labels] < 0]
        if new.size:
            new = new[np.sort(np.unique(new, return_index=True)[1])]
            c0, c1 = self.columns.size, self.columns.size + new.size
            room = next(iter(self.arrays.values())).shape[1]
            if c1 > room:  # (columns double, one array at a time)
                cols = min(max(2 * room, c1), len(self.column_of))
                for name, old in list(self.arrays.items()):
                    arr = np.zeros((old.shape[0], cols) + old.shape[2:], old.dtype)
                    arr[:, :c0] = old[:, :c0]
                    self.arrays[name] = arr
            if n and fill is not None:
                # (a chunk of rows at a time: the out-of-range values of all the rows at once would take as much as
                # the columns they fill, many times over for a run's first columns)
                step = max(1, min(1024, 65536 // new.size))
                for first in range(0, n, step):
                    stop = min(n, first + step)
                    for name, v in fill(first, stop, new).items():
                        if name in self.arrays:
                            self.arrays[name][first:stop, c0:c1] = v
            self.columns = np.concatenate((self.columns, new))
            self.column_of[new] = np.arange(c0, c1)
        return self.column_of[labels]

    def series(self, name: str, n: int) -> np.ndarray:
        """(n, columns, ...) view of a sparse channel's recorded rows."""
        return self.arrays[name][:n, : self.columns.size]

    def row_bytes(self) -> int:
        """Bytes of one row of the columns so far."""
        return sum(c.label_bytes for c in self.channels.values()) * int(self.columns.size)


def frame_bytes(run: Run, in_range: int | None = None) -> int:
    """Bytes one frame of a run takes in a recording: its time, every body's pose (4 x 4) and every channel's numbers,
    8 bytes each (a flag 1), a sparse channel's (Channel.sparse) for `in_range` of its labels (default the run's
    expected_in_range), each with its index (8 bytes) once per recording, not counted per frame (the app's recording
    holds them so; the command line's holds less, and writes it besides)."""
    dense = sum(math.prod(c.shape) * np.dtype(c.dtype).itemsize for c in run.channels if not c.sparse)
    sparse = [c for c in run.channels if c.sparse]
    if sparse:
        n = getattr(run, "expected_in_range", 0) if in_range is None else in_range
        dense += sum(c.label_bytes for c in sparse) * min(int(n), max(len(c.labels) for c in sparse))
    return 8 * (1 + 16 * len(run.body_names)) + dense


def kinematic_frame_bytes(km) -> int:
    """frame_bytes of a kinematic run of the compiled model `km` (core.kinematics.TrajectoryRun: the bodies' poses and
    the KINEMATIC_CHANNELS of its coordinates and named points), known before the run is made."""
    from types import SimpleNamespace

    from .kinematics.trajectory import KINEMATIC_CHANNELS

    channels = tuple(Channel(name, title, unit, tuple(km.point_names if pts else km.coord_names),
                             ("x", "y", "z") if pts else ()) for name, (title, unit, pts) in KINEMATIC_CHANNELS.items())
    return frame_bytes(SimpleNamespace(channels=channels, body_names=list(km.body_names)))


def check_recording(run: Run, location: str) -> int:
    """Refuse a run whose recording (frame_bytes for each planned frame) would not fit in the memory one run may
    record in (core.validate.recording_size), located at the field that sets its length; its bytes otherwise."""
    return validate.recording_size(frame_bytes(run), run.times, location,
                                   "steps" if run.kind == "kinematics" else "time")


def open_run(mech, spec: RunSpec | None = None, cancel: Callable[[], bool] | None = None) -> Run:
    """The run of a document snapshot (LinkwrightError, located, for a document or spec that cannot run)."""
    spec = spec or RunSpec()
    kind = spec.kind or run_kind(mech)
    if kind == "kinematics":
        from .kinematics import TrajectoryRun, compile_model

        t_end = 1.0 if spec.t_end is None else float(spec.t_end)
        steps = 100 if spec.steps is None else int(spec.steps)
        if not (np.isfinite(t_end) and t_end > 0):
            raise LinkwrightError("t_end", f"must be a positive number of seconds, got {t_end}")
        if steps < 1:
            raise LinkwrightError("steps", f"must be at least 1, got {steps}")
        # k * (t_end / steps): the times `linkwright kinematics` has always written
        times = np.arange(steps + 1) * (t_end / steps)
        if np.any(np.diff(times) <= 0):  # (TrajectoryRun's "times: times must increase" named no field of the user's)
            raise LinkwrightError("steps", f"{steps:,} steps of an end time of {t_end!r} s cannot be told apart (a step "
                                           f"of {t_end / steps:g} s gives times that do not increase in double "
                                           "precision): take fewer steps or a longer end time")
        km = compile_model(mech)
        # The recording's size before the run is made: it depends on the frame's size and the number of frames only,
        # and the run evaluates every driver at every time first (driver_values_until: 107 s for 200 drivers and
        # 1,000,000 steps before the refusal, user test s55 K6).
        validate.recording_size(kinematic_frame_bytes(km), times, "steps", "steps")
        return TrajectoryRun(km, times, cancel=cancel)
    if kind == "contact":
        from .contact import ContactRun, build_model

        mech.check_contact_scene()  # (edits since loading may have repeated a floor or buried a body in one)
        points = {f"{b.name}.{p}": (b.name, tuple(x)) for b in mech.bodies for p, x in b.points.items()}
        run = ContactRun(build_model(mech, cancel=cancel), spec.t_end, spec.dt, spec.method, cancel=cancel,
                         points=points, solver=spec.solver)
        check_recording(run, "simulation.duration")  # (the document's field: a caller names its own, as step_count's)
        return run
    if kind:
        raise LinkwrightError("kind", f"unknown run kind '{kind}' (known: {', '.join(RUN_KINDS)})")
    raise nothing_to_move(mech, "bodies")
