"""The Shape base class: a convex set {x : f_i(x) <= 0} in its body frame, built from a table of parameters."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from core.errors import LinkwrightError

__all__ = ["Param", "Shape", "REQUIRED", "unit_directions", "stack_rows"]

REQUIRED = object()  # marker: a parameter without a default


@dataclass(frozen=True)
class Param:
    """One format key of a shape type: its JSON name, its check, and the name the geometry reads it by."""

    key: str  # JSON key
    check: Callable[[object, str], object]  # (value, location) -> validated JSON-ready value
    name: str = ""  # argument name for _build (default: the key), so aliases can rename keys
    default: object = REQUIRED  # REQUIRED, None (optional, absent), or a value
    rows: bool = False  # the value is a list of rows of numbers (a polytope's planes, vertices), not one vector


def unit_directions(d: np.ndarray) -> np.ndarray:
    """d (..., 3) normalised; zero directions become +z (any point is then a farthest point)."""
    d = np.asarray(d, dtype=float)
    # scaled by the largest component first (as core.validate.norm and the shapes' normals): |d|^2 of [1e-200, 0, 0]
    # underflows to 0 and of [1e200, 0, 0] overflows, yet both are the x direction
    big = np.max(np.abs(d), axis=-1, keepdims=True)
    d = d / np.where(big > 0.0, big, 1.0)
    n = np.linalg.norm(d, axis=-1, keepdims=True)
    return np.where(n > 0.0, d / np.where(n > 0.0, n, 1.0), np.array([0.0, 0.0, 1.0]))


def stack_rows(shapes) -> tuple[np.ndarray, np.ndarray]:
    """The rows of shapes with equal m stacked for the compiled evaluation of a batch of pairs: kinds (P, m) and
    params (P, m, ROW_PARAMS) (Shape.rows)."""
    kinds = np.stack([sh.rows[0] for sh in shapes])
    params = np.stack([sh.rows[1] for sh in shapes])
    return kinds, params


class Shape:
    """A convex shape {x : f_i(x) <= 0, i = 1..m} in its body frame; subclasses are rows of SHAPE_TYPES."""

    type: ClassVar[str] = ""  # the format's type name
    PARAMS: ClassVar[tuple[Param, ...]] = ()  # the format keys of this type
    ONE_OF: ClassVar[tuple[str, ...]] = ()  # keys of which exactly one must be given (polytope)
    bounded: ClassVar[bool] = True  # False only for the halfspace
    # True where the surface has flat faces (planes among its inequalities): two such faces parallel to each other
    # make the closest points of a pair non-unique (core.contact: those pairs' points get a proximal term)
    flat_faces: ClassVar[bool] = False

    # set by _build in every subclass
    m: int  # number of inequalities
    volume: float  # m^3 (inf if unbounded)
    com: np.ndarray  # (3,) centroid in the body frame
    bounding_radius: float  # radius of an origin-centred sphere containing the shape
    inner_radius: float  # radius of a ball inside the shape (so its width along every direction is at least twice it)
    _groups: list  # inequality groups (core.shapes.inequalities), concatenated in order
    _cov: np.ndarray  # (3, 3) covariance of the uniform solid about com, per unit volume

    def __init__(self, **params: object) -> None:
        """Build from format keys, e.g. Sphere(radius=0.1); raises LinkwrightError like parse_shape."""
        self._setup(params, "shape")

    @classmethod
    def from_json(cls, data: Mapping, location: str) -> "Shape":
        """Build from a format-v1 object (with or without its "type")."""
        obj = cls.__new__(cls)
        obj._setup({k: v for k, v in data.items() if k != "type"}, location)
        return obj

    def _setup(self, data: Mapping, location: str) -> None:
        known = [p.key for p in self.PARAMS]
        for key in data:
            if key not in known:
                raise LinkwrightError(
                    f"{location}.{key}", f"is not a {self.type} key (a {self.type} has: {', '.join(known)})"
                )
        given = [k for k in self.ONE_OF if k in data]
        if self.ONE_OF and len(given) != 1:
            raise LinkwrightError(
                location,
                f"a {self.type} needs exactly one of {' or '.join(repr(k) for k in self.ONE_OF)}, "
                f"got {len(given)}",
            )
        json_values: dict[str, object] = {}
        args: dict[str, object] = {}
        for p in self.PARAMS:
            if p.key in data:
                value = p.check(data[p.key], f"{location}.{p.key}")
            elif p.default is REQUIRED:
                raise LinkwrightError(f"{location}.{p.key}", f"is missing (a {self.type} needs it)")
            elif p.default is None:
                continue
            else:
                value = p.default
            json_values[p.key] = value
            args[p.name or p.key] = value
        self._json = json_values
        self._location = location
        self._build(**args)
        self.m = sum(g.m for g in self._groups)
        self.com = np.asarray(self.com, dtype=float)
        self.com.setflags(write=False)
        # the inequalities as rows of the compiled evaluation (core.contact.kernels.shape_rows): kinds (m,), params
        # (m, ROW_PARAMS), in the order of the groups
        kinds = np.concatenate([np.full(g.m, g.kind, np.int64) for g in self._groups])
        params = np.concatenate([g.row_params() for g in self._groups])
        kinds.setflags(write=False)
        params.setflags(write=False)
        self.rows = (kinds, params)

    def _build(self, **args: object) -> None:  # pragma: no cover - every row overrides it
        raise NotImplementedError

    # --- inequalities -------------------------------------------------------------------------
    def values(self, x: np.ndarray) -> np.ndarray:
        """f_i(x): points (..., 3) -> (..., m); <= 0 inside, about the signed distance near the surface."""
        x = np.asarray(x, dtype=float)
        if len(self._groups) == 1:
            return self._groups[0].values(x)
        return np.concatenate([g.values(x) for g in self._groups], axis=-1)

    def gradients(self, x: np.ndarray) -> np.ndarray:
        """grad f_i(x): (..., 3) -> (..., m, 3)."""
        x = np.asarray(x, dtype=float)
        if len(self._groups) == 1:
            return self._groups[0].gradients(x)
        return np.concatenate([g.gradients(x) for g in self._groups], axis=-2)

    def hessians(self, x: np.ndarray) -> np.ndarray:
        """Hessians of f_i(x): (..., 3) -> (..., m, 3, 3)."""
        x = np.asarray(x, dtype=float)
        if len(self._groups) == 1:
            return self._groups[0].hessians(x)
        return np.concatenate([g.hessians(x) for g in self._groups], axis=-3)

    def evaluate(self, x: np.ndarray, hessians: bool = True):
        """(values, gradients, Hessians) in one call; the Hessians None unless asked."""
        x = np.asarray(x, dtype=float)
        if len(self._groups) == 1:
            return self._groups[0].evaluate(x, hessians)
        parts = [g.evaluate(x, hessians) for g in self._groups]
        return (np.concatenate([p[0] for p in parts], axis=-1), np.concatenate([p[1] for p in parts], axis=-2),
                np.concatenate([p[2] for p in parts], axis=-3) if hessians else None)

    def contains(self, x: np.ndarray, tol: float = 0.0) -> np.ndarray:
        """Whether points (..., 3) satisfy every f_i <= tol."""
        return np.all(self.values(x) <= tol, axis=-1)

    # --- mass properties ----------------------------------------------------------------------
    def inertia(self, mass: float) -> np.ndarray:
        """Inertia tensor (3, 3) about com in body axes for a uniform solid of this mass."""
        c = self._cov
        return mass * (np.trace(c) * np.eye(3) - c)

    def interior_point(self) -> np.ndarray:
        """A point strictly inside (the centroid)."""
        return self.com.copy()

    # --- drawing, broad phase, format ---------------------------------------------------------
    def mesh(self, resolution: int = 24) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - overridden
        """Vertices (V, 3) on the surface and faces (F, 3), outward counter-clockwise."""
        raise NotImplementedError

    def support(self, d: np.ndarray) -> np.ndarray:  # pragma: no cover - overridden
        """A point of the shape farthest along d: (..., 3) -> (..., 3)."""
        raise NotImplementedError

    def face(self, d: np.ndarray) -> np.ndarray | None:
        """The vertices of the face farthest along the unit direction d, for a shape of planes only (box, polytope);
        None for the others."""
        return None

    def corners(self, d: np.ndarray) -> np.ndarray | None:
        """The points that stand for the shape in a patch of contact with a plane that the unit direction d (body
        frame) points into, body frame (k, 3): its vertices (box, polytope), points of a cylinder's two rims (one of
        each rim its farthest along d); None for a shape with curved faces only."""
        return None

    def to_dict(self) -> dict:
        """The format-v1 object; parse_shape(s.to_dict(), loc) == s."""
        return {"type": self.type, **{k: _copy(v) for k, v in self._json.items()}}

    def _key(self) -> str:
        """repr of to_dict(), computed once (a shape does not change after it is built; the contact step groups
        equal shapes in a dict every step)."""
        key = self.__dict__.get("_key_cache")
        if key is None:
            key = self.__dict__["_key_cache"] = repr(self.to_dict())
        return key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Shape) and type(other) is type(self) and (other is self or other._key() == self._key())

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._json.items())
        return f"{type(self).__name__}({args})"


def _copy(v: object) -> object:
    return [_copy(x) for x in v] if isinstance(v, list) else v
