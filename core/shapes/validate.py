"""Checks of format-v1 shape parameters that raise located LinkwrightErrors."""

from __future__ import annotations

import numbers

import numpy as np

from core import validate as shared
from core.errors import LinkwrightError

__all__ = [
    "show", "number", "positive", "vector", "positive_vector", "nonzero_vector",
    "exponents", "plane_rows", "point_rows", "proportioned", "EXPONENT_MAX",
]

EXPONENT_MAX = 50.0  # larger exponents overflow |x|^e in float64 a short distance outside the body


def show(value: object) -> str:
    """The value as the user wrote it (JSON spelling), shortened for a message."""
    return shared.show(value)


def number(value: object, location: str, what: str = "a number") -> float:
    """A finite real number with |x| <= MAX_COORDINATE (bool is not a number)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise LinkwrightError(location, f"must be {what}, got {show(value)}")
    return shared.number(value, location, -shared.MAX_COORDINATE, shared.MAX_COORDINATE)


def positive(value: object, location: str) -> float:
    """A dimension: a number between MIN_DIMENSION and MAX_DIMENSION metres."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise LinkwrightError(location, f"must be a positive number, got {show(value)}")
    return shared.number(value, location, shared.MIN_DIMENSION, shared.MAX_DIMENSION, positive=True)


def proportioned(dims: list[float], location: str) -> None:
    """Refuse a shape whose largest dimension is more than MAX_ASPECT times its smallest (a sliver or a needle)."""
    if max(dims) > shared.MAX_ASPECT * min(dims):
        raise LinkwrightError(location, f"dimensions {', '.join(f'{d:g}' for d in dims)} are too ill-proportioned "
                                        f"(the largest may be at most {shared.MAX_ASPECT:g} times the smallest)")


def _sequence(value: object, location: str, n: int | None, what: str) -> list:
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or (n is not None and len(value) != n):
        raise LinkwrightError(location, f"must be {what}, got {show(value)}")
    return list(value)


def vector(value: object, location: str, n: int = 3) -> list[float]:
    """A list of n finite numbers."""
    items = _sequence(value, location, n, f"a list of {n} numbers")
    return [number(v, f"{location}[{i}]") for i, v in enumerate(items)]


def positive_vector(value: object, location: str, n: int = 3) -> list[float]:
    """A list of n positive numbers."""
    items = _sequence(value, location, n, f"a list of {n} positive numbers")
    dims = [positive(v, f"{location}[{i}]") for i, v in enumerate(items)]
    proportioned(dims, location)
    return dims


def nonzero_vector(value: object, location: str) -> list[float]:
    """A 3-vector that is not zero (a direction)."""
    v = vector(value, location)
    if not any(v):
        raise LinkwrightError(location, "must not be the zero vector (it gives the direction)")
    return list(shared.direction(v, location))


def exponents(value: object, location: str) -> list[float]:
    """[e1, e2] with 2 <= e <= EXPONENT_MAX, and e2 = 2 whenever e1 = 2 (otherwise not C2 at the poles)."""
    items = _sequence(value, location, 2, "a list of 2 numbers [e1, e2]")
    es = [number(v, f"{location}[{i}]") for i, v in enumerate(items)]
    for i, e in enumerate(es):
        if not 2.0 <= e <= EXPONENT_MAX:
            raise LinkwrightError(
                f"{location}[{i}]",
                f"must be between 2 and {EXPONENT_MAX:g} (smaller is not convex and smooth, larger overflows), "
                f"got {show(items[i])}",
            )
    if es[0] == 2.0 and es[1] != 2.0:
        # (|x|^e2+|y|^e2)^(2/e2) is homogeneous of degree 2 but not quadratic: its Hessian jumps at the poles
        raise LinkwrightError(
            f"{location}[0]",
            f"must be above 2 when e2 = {es[1]:g} is not 2 (e1 = 2 with e2 > 2 is not twice differentiable at the poles)",
        )
    return es


def plane_rows(value: object, location: str) -> list[list[float]]:
    """A list of at least 4 planes [nx, ny, nz, d] with a non-zero normal."""
    rows = _sequence(value, location, None, "a list of planes [nx, ny, nz, d]")
    if len(rows) < 4:
        raise LinkwrightError(location, f"needs at least 4 planes to enclose a volume, got {len(rows)}")
    _at_most(len(rows), shared.MAX_POLYTOPE_PLANES, "planes", location)
    out = []
    for i, row in enumerate(rows):
        r = vector(row, f"{location}[{i}]", 4)
        if not any(r[:3]):
            raise LinkwrightError(f"{location}[{i}]", "has a zero normal [nx, ny, nz]")
        out.append(r)
    return out


def _at_most(n: int, limit: int, what: str, location: str) -> None:
    """Refuse a polytope of more than `limit` vertices or planes (checked before the rows are read: 20,000 of them)."""
    if n > limit:
        raise LinkwrightError(location, f"{n} {what}, more than the limit of {limit} (each face of a polytope is an "
                                        "unknown of every contact step it is in, and the step's cost grows with about "
                                        f"their cube): give a simpler hull, of at most {limit} {what}")


def point_rows(value: object, location: str) -> list[list[float]]:
    """A list of at least 4 points [x, y, z] (at most MAX_POLYTOPE_VERTICES)."""
    rows = _sequence(value, location, None, "a list of points [x, y, z]")
    if len(rows) < 4:
        raise LinkwrightError(location, f"needs at least 4 vertices to enclose a volume, got {len(rows)}")
    _at_most(len(rows), shared.MAX_POLYTOPE_VERTICES, "vertices", location)
    return [vector(row, f"{location}[{i}]") for i, row in enumerate(rows)]
