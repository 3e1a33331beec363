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
           "frame_bytes", "check_recording", "FIRST_FRAMES", "grown_room", "grow"]

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

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of one frame's array."""
        return (len(self.labels),) + ((len(self.components),) if self.components else ())


class RunFrame(Protocol):
    """One instant of a run."""

    index: int
    t: float
    poses: np.ndarray  # (n_bodies, 4, 4) world transforms of the body frames, in Run.body_names order

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


def frame_bytes(run: Run) -> int:
    """Bytes one frame of a run takes in a recording: its time, every body's pose (4 x 4) and every channel's numbers,
    8 bytes each (the app's recording holds them so; the command line's holds less, and writes it besides)."""
    values = sum(math.prod(c.shape) for c in run.channels)
    return 8 * (1 + 16 * len(run.body_names) + values)


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
        run = TrajectoryRun(compile_model(mech), np.arange(steps + 1) * (t_end / steps), cancel=cancel)
        check_recording(run, "steps")
        return run
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
