"""The one validation layer for user input: numbers, vectors, directions, names, text and run lengths.

The file loader (core.io), the edit API (core.model), the shape table (core.shapes), the command line (core.cli)
and the GUI's property editors all check values here, so a value is accepted or refused with the same located
message wherever it is typed.  Every bound below is documented in docs/file-format.md ("Bounds").
"""

from __future__ import annotations

import math
import numbers
import unicodedata
import os
import re
from typing import Any, Sequence

from .errors import LinkwrightError

__all__ = [
    "MAX_COORDINATE", "MIN_DIMENSION", "MAX_DIMENSION", "MAX_ASPECT", "MAX_SPEED", "MAX_ANGULAR_SPEED",
    "MAX_ACCELERATION", "MAX_DRIVEN", "MIN_MASS", "MAX_MASS", "MAX_FRICTION", "MIN_DT", "MAX_DURATION", "MAX_STEPS",
    "EMPTY_NAME",
    "MAX_NAME_LENGTH", "MAX_TEXT_LENGTH", "MAX_EXPRESSION_LENGTH", "MAX_INT_DIGITS", "MAX_START_OVERLAP", "MAX_MASS_RATIO",
    "MAX_RECORDING_FRACTION", "show", "number", "vector", "direction", "norm", "in_plane", "text", "name",
    "parse_number", "parse_vector", "step_count", "run_steps", "whole_step", "expression", "physical_memory",
    "recording_budget", "size_text",
    "recording_size",
]

# ---- documented bounds (SI units) ---------------------------------------------------------------------------------
MAX_COORDINATE = 1e6  # m: |x| of any position, point, joint location, plane offset or pitch (1000 km)
MIN_DIMENSION = 1e-6  # m: smallest radius, length or size of a shape (a micrometre)
MAX_DIMENSION = 1e6  # m: largest one
MAX_ASPECT = 1e6  # largest ratio of two dimensions of one shape (finer slivers lose all float precision)
MAX_SPEED = 1e6  # m/s: |v| of an initial linear velocity component
MAX_ANGULAR_SPEED = 1e6  # rad/s: |w| of an initial angular velocity component
MAX_ACCELERATION = 1e6  # m/s²: |g| of a gravity component
MAX_DRIVEN = 1e9  # rad or m (per s, per s²): |value|, |velocity| and |acceleration| of a driver during a run
MIN_MASS, MAX_MASS = 1e-9, 1e12  # kg (and kg/m³ for densities); MAX_MASS also bounds |inertia entries| (kg m²)
MAX_FRICTION = 1e3  # Coulomb coefficient; friction ellipsoid entries likewise
MIN_DT = 1e-9  # s: smallest time step
MAX_DURATION = 1e6  # s: longest simulated or solved time span
MAX_STEPS = 1_000_000  # steps of one run (a run of more steps is refused before it starts, not after an hour)
MAX_NAME_LENGTH = 200  # characters of a body, joint or point name
MAX_TEXT_LENGTH = 100_000  # characters of any other string (a description)
MAX_EXPRESSION_LENGTH = 2000  # characters of a driver expression (core.expr.MAX_LENGTH): a formula, not a program
MAX_INT_DIGITS = 30  # digits of an integer written in a file (larger ones are not numbers a mechanism needs)
# how many vertices or planes one polytope may be given by: each face of a polytope is an unknown (a multiplier) of every
# contact pair it is in, so a pair's block of the contact step grows with them and its cost with about their cube.
# Measured (a polytope of points on a 0.1 m sphere dropped on the floor, 30 steps of 0.01 s, 2 loaded cores): 100
# vertices ~0.03 s a step, 256 (508 faces) ~0.25 s, 500 ~1 s, 1,000 ~6 s (3 minutes for 0.3 s); two of 256 touching
# ~2 s a step.  A hull of 256 vertices has at most 2 * 256 - 4 = 508 faces, so planes are bounded at 512
MAX_POLYTOPE_VERTICES = 256
MAX_POLYTOPE_PLANES = 512
# how deep two bodies may overlap at the start of a contact run, in thinnest widths of the thinner one
# (core.contact.closest.start_overlaps): the first step ends with every gap >= 0, so a start overlap of depth d is
# pushed out within the step at about d / h, energy the scene never had (a 0.2 m cube started 8 cm inside the floor
# left it at 8 m/s and rose 2.8 m; 1 mm inside at h = 0.01 s: 0.1 m/s), and deeper ones cost the solver minutes (a
# 2 m cylinder through the walls of a 0.6 m bin, 8 widths deep).  Rounding in typed or computed positions overlaps by
# far less (a box set on a floor 1e-16 m; a turned box's corner with its height typed to four decimals 5e-5 m)
MAX_START_OVERLAP = 1e-3
# how many times heavier than a body one in contact range of it may be (both moved by forces; core.contact.recording):
# the contact step's stopping test is relative to its largest unknown, an impulse in the units of the lighter body's
# velocity, and its Newton systems grow as ill-conditioned as the ratio. A 0.1 m box on a 1 kg slab lying on the floor
# (set on it or dropped 1 cm, centred or 1-6 cm off, turned or not; 16 scenes per ratio): at 1000 every run completes
# with the contact force its weight's to 2e-11; at 3000 and 5000 two runs stop at the impact with their reason; at 1e4
# four stop and one completes wrongly (the slab squeezed out from under the box, which ends on the floor); at 1e9 a
# resting box's contact force is 10 % off its weight at every step
MAX_MASS_RATIO = 3e3
# how much of the machine's physical memory the recording of one run may take (its planned frames, core.run.frame_bytes
# each: every number of a frame as the app's recording holds it, 8 bytes, a flag 1), checked before the run starts: a
# contact run recorded every candidate pair's channels at every frame, in range or not (a 64-body pile, 2080 pairs:
# 0.35 MB a frame, 0.7 GB for 20 s at dt = 0.01 s, 349 GB for the longest run, MAX_STEPS; it holds the pairs that come
# into contact range now, core.run.ColumnStore, estimated at 8 a body: 95 kB a frame), and a recording that does not fit
# failed only when memory ran out (the app's frame arrays: a MemoryError; the command line: killed).  A quarter leaves
# room for what the recording is held beside: the app's second run (Compare), and growing, exporting or writing it
MAX_RECORDING_FRACTION = 0.25


def show(value: object) -> str:
    """The value as the user wrote it, shortened for a message (never fails, whatever the value)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**MAX_INT_DIGITS:
        return f"an integer of {len(str(abs(value)))} digits"  # str() is fine below Python's 4300-digit limit
    try:
        import json

        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        try:
            text = ascii(value)
        except RecursionError:  # (nested deeper than the interpreter's recursion limit)
            text = f"a {type(value).__name__} nested too deep"
    return text if len(text) <= 60 else text[:57] + "..."


def _what(lo: float | None, hi: float | None, positive: bool) -> str:
    if positive:
        return "a positive number" + (f" between {lo:g} and {hi:g}" if lo is not None and hi is not None else "")
    return "a number" + (f" between {lo:g} and {hi:g}" if lo is not None and hi is not None else "")


def number(value: object, location: str, lo: float | None = None, hi: float | None = None, *,
           positive: bool = False, nonneg: bool = False, what: str | None = None, typed: str | None = None) -> float:
    """A finite real number within [lo, hi] (either may be None); bool and huge integers are refused. `typed`: the
    text the number was read from, shown in a refusal instead of the number (parse_number)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or type(value).__name__ == "bool_":
        raise LinkwrightError(location, f"must be {what or 'a number'}, got {show(value)}")
    if isinstance(value, numbers.Integral) and abs(int(value)) >= 10**MAX_INT_DIGITS:
        raise LinkwrightError(location, f"number too large ({show(value)})")
    try:
        v = float(value)
    except (OverflowError, ValueError):
        raise LinkwrightError(location, f"number too large ({show(value)})") from None
    if math.isfinite(v) and not (positive and v <= 0) and not (nonneg and v < 0) and not (
            (lo is not None and v < lo) or (hi is not None and v > hi)):
        return v  # (before the refusals: the value's text is made only for a message, 6 us a number)
    got = typed if typed is not None else show(value)
    if not math.isfinite(v):
        raise LinkwrightError(location, f"must be a finite number, got {got}")
    if positive and v <= 0:
        raise LinkwrightError(location, f"must be a positive number, got {got}")
    if nonneg and v < 0:
        raise LinkwrightError(location, f"must not be negative, got {got}")
    rng = f"between {lo:g} and {hi:g}" if lo is not None and hi is not None else (
        f"at least {lo:g}" if lo is not None else f"at most {hi:g}")
    if positive and lo is not None and lo <= 0.0:  # (0 itself is refused above: say so here too)
        rng = f"more than 0 and at most {hi:g}" if hi is not None else "more than 0"
    raise LinkwrightError(location, f"must be {rng}, got {got}")


def vector(value: object, location: str, n: int = 3, bound: float | None = MAX_COORDINATE) -> tuple[float, ...]:
    """A list of n finite numbers, each with |x| <= bound (None: any finite number)."""
    if hasattr(value, "tolist") and not isinstance(value, (list, tuple)):
        value = value.tolist()  # numpy arrays from the edit API
    if not isinstance(value, (list, tuple)) or len(value) != n:
        got = f"{len(value)} values" if isinstance(value, (list, tuple)) else show(value)
        raise LinkwrightError(location, f"expected a list of {n} numbers, got {got}")
    lo = -bound if bound is not None else None
    return tuple(number(x, f"{location}[{i}]", lo, bound) for i, x in enumerate(value))


def norm(v: Sequence[float]) -> float:
    """Euclidean norm without overflow or underflow (inf only when the vector itself has an infinite entry)."""
    return math.hypot(*(float(x) for x in v))


def direction(value: object, location: str, n: int = 3) -> tuple[float, ...]:
    """A non-zero vector of n finite numbers (a direction: any scale; returned as given, not normalised)."""
    v = vector(value, location, n, bound=None)
    big = max(abs(x) for x in v)
    # scale by the largest component first: [1e200, 0, 0] and [1e-200, 0, 0] are both fine directions
    if big == 0.0 or norm([x / big for x in v]) == 0.0:
        raise LinkwrightError(location, "zero length")
    return v


def in_plane(v: Sequence[float], location: str, out_of_plane: Sequence[int], why: str = "") -> None:
    """Refuse a vector of a planar document (which moves in the x-y plane) with a component out of it: gravity's and
    a linear velocity's z (index 2), an angular velocity's x and y (0, 1: a body turns about z only).  A run has no
    freedom to follow them (a planar run dropped them silently: no gravity at all, a recorded velocity that vanished
    after the first row)."""
    for i in out_of_plane:
        x = v[i]
        if x != 0.0:
            shown = f"{x:g}" if float(f"{x:g}") == x else repr(float(x))  # (3, not the stored 3.0; every digit kept)
            raise LinkwrightError(f"{location}[{i}]", f"a planar document moves in the x-y plane{why}: must be 0, "
                                                      f"got {shown}")


def text(value: object, location: str, limit: int = MAX_TEXT_LENGTH, what: str = "text") -> str:
    """A string that can be written back as UTF-8 (no lone surrogates), at most `limit` characters (`what` it is, for
    the message: "expression" for a driver's, whose limit is MAX_EXPRESSION_LENGTH)."""
    if not isinstance(value, str):
        raise LinkwrightError(location, f"expected a string, got {show(value)}")
    if len(value) > limit:
        raise LinkwrightError(location, f"{what} too long ({len(value)} characters, limit {limit})")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = value[exc.start]
        raise LinkwrightError(location, f"invalid character {ascii(bad)} at position {exc.start} "
                                        "(a lone UTF-16 surrogate is not text)") from None
    return value


def name(value: object, location: str) -> str:
    """A usable name: non-empty text without surrounding spaces or control characters."""
    if not isinstance(value, str):
        raise LinkwrightError(location, f"a name must be text, got {show(value)}")
    if not value.strip():
        raise LinkwrightError(location, EMPTY_NAME)
    text(value, location, MAX_NAME_LENGTH)
    if value != value.strip():
        raise LinkwrightError(location, f"name {show(value)} has leading or trailing spaces")
    for i, ch in enumerate(value):
        if ord(ch) < 32 or ord(ch) == 127:
            raise LinkwrightError(location, f"name {show(value)} has a control character at position {i}")
    if all(_invisible(ch) for ch in value):
        raise LinkwrightError(location, f"name {show(value)} has no visible character (only spaces, format or "
                                        "combining characters)")
    return value


EMPTY_NAME = "a name must not be empty"  # (the one message of an empty name: a file, Properties, the graph's F2 box)


def _invisible(ch: str) -> bool:
    """Whether `ch` draws nothing by itself: a space of any kind, a format character (a zero-width space, a joiner,
    a direction mark, a byte-order mark), a combining mark with nothing to combine with, or a Hangul filler."""
    return ch.isspace() or unicodedata.category(ch) in ("Cf", "Zs", "Zl", "Zp", "Mn", "Me", "Cc") or ch in "\u115f\u1160\u3164\uffa0"


# a number as text: decimal with ASCII digits (as JSON and core.expr write them, with an optional '+' and the forms '5.'
# and '.5'), or inf / infinity / nan in any case, which number() then refuses as not finite with its own message
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|infinity|nan)",
                      re.IGNORECASE | re.ASCII)


def parse_number(s: str, location: str, lo: float | None = None, hi: float | None = None, *,
                 positive: bool = False, nonneg: bool = False) -> float:
    """A number typed as text (a GUI field, a command-line argument), checked like a number in a file."""
    t = s.strip() if isinstance(s, str) else s
    if not isinstance(t, str) or not t:
        raise LinkwrightError(location, "a number is required")
    shown = ascii(t[:20] + ("..." if len(t) > 20 else ""))[1:-1]  # printable, whatever was typed
    if len(t) > 1000:  # float() is linear in the length, but no number is written with a thousand digits
        raise LinkwrightError(location, f"'{shown}' is not a number")
    if not _DECIMAL.fullmatch(t):
        # float() alone would also read other scripts' digits ('١٢٣', full-width '１２') and '1_000': not numbers a file
        # or an expression takes (core.expr refuses them too), so a value typed here could not be typed there
        raise LinkwrightError(location, f"'{shown}' is not a number (numbers are decimal, such as 2, 0.5 or 1e-3)")
    # (a refusal shows what was typed, shortened: 400 digits read as inf said 'got Infinity', 1e-400 'got 0.0')
    typed = t if len(t) <= 20 else t[:17] + "..."
    return number(float(t), location, lo, hi, positive=positive, nonneg=nonneg, typed=typed)


def parse_vector(s: str, location: str, n: int = 3, bound: float | None = MAX_COORDINATE) -> tuple[float, ...]:
    """n numbers typed as text, separated by commas, semicolons or spaces."""
    parts = [p for p in s.replace(",", " ").replace(";", " ").split() if p] if isinstance(s, str) else []
    if len(parts) != n:
        raise LinkwrightError(location, f"expected {n} numbers, got {len(parts)}")
    lo = -bound if bound is not None else None
    return tuple(parse_number(p, f"{location}[{i}]", lo, bound) for i, p in enumerate(parts))


def step_count(t_end: Any, dt: Any, t_location: str = "simulation.duration", dt_location: str = "simulation.dt",
               limit: int = MAX_STEPS, count_location: str | None = None) -> int:
    """The number of steps of length dt that cover [0, t_end] (the last ends at t_end, or past it by less than a step
    when dt does not divide t_end: 1 s in steps of 0.3 s is 4 steps, to 1.2 s), refusing absurd ones before any work
    starts.  The locations are the document's
    fields by default (a caller whose values came from elsewhere, a command line's options, names those); too many
    steps is located at count_location (default t_location)."""
    T = number(t_end, t_location, 0.0, MAX_DURATION)
    h = number(dt, dt_location, MIN_DT, MAX_DURATION, positive=True)
    n = T / h  # finite: T <= MAX_DURATION and h >= MIN_DT
    if n > limit:
        raise LinkwrightError(count_location if count_location is not None else t_location,
                              f"{T:g} s in steps of {h:g} s is {n:.3g} steps; the limit is {limit:,} "
                              "(shorten the run or take a larger step)")
    # (1e-6 of a step: 0.3 / 0.1 = 2.9999999999999996 is 3 steps; a time of any length takes one step at least, so
    # 0.03 s in steps of 1e5 s is one step, to 1e5 s, not none)
    return max(int(math.ceil(n - 1e-6)), 1 if T > 0.0 else 0)


def run_steps(t_end: Any, dt: Any, t_location: str = "simulation.duration", dt_location: str = "simulation.dt",
              limit: int = MAX_STEPS, count_location: str | None = None) -> int:
    """The steps of a contact run to `t_end` in steps of `dt` (step_count, with its checks and locations), refusing
    an end time shorter than one step, 0 included, at t_location: such a run cannot end at its end time (it ran one
    whole step past it, End 1e-9 s with frames to t = 0.01 s, or for 0 s recorded the start alone while the app's End
    showed 1e-09 s). The document's duration, `linkwright simulate`'s --t-end and the Motion dock's End."""
    h = number(dt, dt_location, MIN_DT, MAX_DURATION, positive=True)
    T = number(t_end, t_location)  # (a number at all: the range's refusal below names one step as its lower end)
    if not 0.0 <= T <= MAX_DURATION:  # (step_count's own range, 0 to MAX_DURATION, would say "between 0 and ...")
        raise LinkwrightError(t_location, f"must be between one step ({h:g} s) and {MAX_DURATION:g} s, got {show(t_end)}")
    n = step_count(T, h, t_location, dt_location, limit, count_location)
    whole_step(T, h, t_location)
    return n


def whole_step(t_end: Any, dt: Any, t_location: str = "simulation.duration") -> None:
    """run_steps' own check, of numbers step_count has taken: an end time of at least one step of dt."""
    T, h = float(t_end), float(dt)
    if T / h < 1.0 - 1e-6:  # (the same 1e-6 of a step as step_count)
        raise LinkwrightError(t_location, f"{T:g} s is shorter than one step (dt = {h:g} s): a run takes whole steps; "
                                          "make the end time at least one step, or the step shorter")


def physical_memory() -> int:
    """Bytes of physical memory of this machine (4 GiB where the platform does not say)."""
    try:
        n = int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):  # (os.sysconf is POSIX's)
        n = 0
    return n if n > 0 else 4 * 2**30


def recording_budget() -> int:
    """Bytes the recording of one run may take: MAX_RECORDING_FRACTION of the physical memory."""
    return int(physical_memory() * MAX_RECORDING_FRACTION)


def size_text(n: float) -> str:
    """A number of bytes for a message: 608 bytes, 349 kB, 699 MB, 6.32 GB (powers of 1000)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} bytes"


def recording_size(frame_bytes: int, times: Sequence[float], location: str, count: str = "time") -> int:
    """The bytes of a run's recording, `frame_bytes` for each of its planned `times`, refused (located at `location`:
    the field that sets how many frames) beyond recording_budget(), before the run starts.  The message says how long
    a run fits: `count` "time" (a contact run: its end time) or "steps" (a kinematic run: frames = steps + 1)."""
    frames, frame_bytes = len(times), int(frame_bytes)
    total, budget = frame_bytes * frames, recording_budget()
    if total <= budget:
        return total
    fit = budget // frame_bytes if frame_bytes > 0 else frames  # frames that fit
    head = (f"the run's recording would take {size_text(total)} ({frames:,} frames of {size_text(frame_bytes)}); "
            f"one run may record at most {size_text(budget)} on this machine ({MAX_RECORDING_FRACTION:.0%} of its "
            f"{size_text(physical_memory())} of memory)")
    if fit < 2:
        raise LinkwrightError(location, f"{head}: the scene is too large to record a run of it (fewer bodies or "
                                        "pairs in contact)")
    if count == "steps":
        raise LinkwrightError(location, f"{head}: take at most {fit - 1:,} steps")
    last = float(times[fit - 1])
    raise LinkwrightError(location, f"{head}: end the run by t = {last:g} s ({fit:,} frames) or sooner")


def expression(value: object, location: str) -> str:
    """A driver expression of time t in the whitelist grammar, with bounded cost (see core.expr)."""
    from .expr import check_expression  # sympy is imported only when expressions are checked

    check_expression(value, location)  # type: ignore[arg-type]
    return value  # type: ignore[return-value]
