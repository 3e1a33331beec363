"""The mechanism document: bodies (nodes), joints (edges), drivers, and the edit API the GUI's commands call."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from . import validate
from .errors import LinkwrightError
from .joints import JOINT_TYPES

__all__ = [
    "Vec3",
    "Pose",
    "Velocity",
    "Body",
    "Joint",
    "Driver",
    "PairOverride",
    "ContactSettings",
    "SimulationSettings",
    "Mechanism",
    "planar_axis_error",
    "axis2_error",
    "normal_axis2",
    "SPACES",
    "check_name",
    "check_inertia",
    "check_orientation",
    "check_contact",
    "check_simulation",
    "canonical_shape",
]

Vec3 = tuple[float, float, float]
SPACES = ("planar", "spatial")
_Z = (0.0, 0.0, 1.0)
_X = (1.0, 0.0, 0.0)
_PLANAR_TOL = 1e-9  # how far from the z axis a planar revolute axis may be (relative)
# how far from normal to its axis a universal joint's axis2 may be: the cosine of their angle, 1e-4 (0.0057 degrees).
# Files hold axes rounded to a few digits (the Stewart example's, written to 6: cosines of 1.5e-7 to 4.2e-7), which
# are taken as the perpendicular axis they stand for (its projection, frame_from_axis); an axis2 meant to be oblique
# is off by degrees
_NORMAL_TOL = 1e-4
_PARALLEL_COS = 1 - 1e-9  # an axis2 whose |cos| with the axis is above this is parallel to it (axis2_error, normal_axis2)


def planar_axis_error(jtype: str, axis: Vec3) -> str:
    """Why a joint of this type cannot have this (unit) axis in a planar document ('' when it can): a revolute
    turns about z, a prismatic or slot joint slides in the x-y plane."""
    if jtype == "revolute" and (abs(axis[0]) > _PLANAR_TOL or abs(axis[1]) > _PLANAR_TOL):
        return "a revolute axis in a planar document must be along z"
    if jtype in ("prismatic", "slot") and abs(axis[2]) > _PLANAR_TOL:
        return f"a {jtype} axis in a planar document must lie in the x-y plane"
    return ""


def axis2_error(axis: Vec3, axis2: Vec3) -> str:
    """Why a universal joint cannot have this (nonzero) axis2 with this (unit) axis ('' when it can): a universal
    joint (Hooke's) turns about two perpendicular axes, so axis2 must be normal to axis (_NORMAL_TOL; an oblique one
    was taken as its projection without a word), and a parallel one is no second axis."""
    b = _unit(axis2)
    cos = sum(x * y for x, y in zip(axis, b))
    if abs(cos) > _PARALLEL_COS:
        return "must not be parallel to axis"
    if abs(cos) <= _NORMAL_TOL:
        return ""
    angle = math.degrees(math.acos(max(-1.0, min(1.0, cos))))
    digits = 1  # enough to differ from 90
    while digits < 12 and round(angle, digits) == 90.0:
        digits += 1
    return f"must be normal to axis (it makes {angle:.{digits}f} degrees with it)"


def normal_axis2(axis: Vec3, axis2: Vec3) -> Vec3 | None:
    """The axis2 a universal joint with this (unit) axis takes for a stored (nonzero) axis2 that was meant for another
    axis (an edit of the axis, or of the type to universal): axis2 itself when it fits (axis2_error says nothing), else
    its projection onto the plane normal to axis, b - (b . a) a, normalised; None (the joint's default second axis,
    Joint.axis2_vector) when axis2 is parallel to axis and has no such projection."""
    if not axis2_error(axis, axis2):
        return tuple(axis2)
    b = _unit(axis2)
    d = sum(x * y for x, y in zip(axis, b))
    if abs(d) > _PARALLEL_COS:  # (axis2_error's parallel: what is left of it is round-off)
        return None
    return _unit(tuple(x - d * y for x, y in zip(b, axis)))


@dataclass(frozen=True)
class Pose:
    """A body's initial placement: position and unit quaternion (w, x, y, z), world frame."""

    position: Vec3 = (0.0, 0.0, 0.0)
    orientation: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)


def _frame(b: "Body") -> tuple[Any, Any]:
    """Rotation matrix and position of a body's initial pose (world frame)."""
    import numpy as np

    from .transforms import quat_normalize, quat_to_matrix

    pose = b.pose or Pose()
    return quat_to_matrix(quat_normalize(pose.orientation)), np.asarray(pose.position, dtype=float)


@dataclass(frozen=True)
class Velocity:
    """A body's initial velocity: linear and angular, world frame."""

    linear: Vec3 = (0.0, 0.0, 0.0)
    angular: Vec3 = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Body:
    """A rigid body (graph node); everything attached to it is in its own frame."""

    name: str
    ground: bool = False
    mass: float | None = None  # kg
    density: float | None = None  # kg/m³, with a shape instead of mass
    inertia: tuple[Vec3, Vec3, Vec3] | None = None  # about the centre of mass, body axes
    com: Vec3 | None = None  # centre of mass, body frame
    points: dict[str, Vec3] = field(default_factory=dict)  # named points, body frame
    shape: dict | None = None  # the format's shape object (validated by core.shapes.parse_shape)
    pose: Pose | None = None  # initial pose; None = the world frame (design configuration)
    velocity: Velocity | None = None  # initial velocity of a free body


@dataclass(frozen=True)
class Joint:
    """A joint (graph edge) between exactly two bodies, placed in world coordinates of the design configuration."""

    name: str
    type: str
    bodies: tuple[str, str]
    at: Vec3 = (0.0, 0.0, 0.0)
    axis: Vec3 | None = None  # None = the type's default (z; x for sliding types)
    axis2: Vec3 | None = None  # universal joints: the second axis (default: perpendicular to axis)
    pitch: float | None = None  # helical: advance along the axis per full turn (m); None reads as 0 in the model

    def pitch_value(self) -> float:
        """The helical pitch (advance per full turn), 0 when not given."""
        return 0.0 if self.pitch is None else float(self.pitch)

    def axis_vector(self) -> Vec3:
        """The unit joint axis (the type's default when none is given)."""
        if self.axis is None:
            return _X if self.type in ("prismatic", "slot") else _Z
        return _unit(self.axis)

    def axis2_vector(self) -> Vec3:
        """The unit second axis of a universal joint (default: a unit vector normal to the first)."""
        a = self.axis_vector()
        if self.axis2 is not None:
            return _unit(self.axis2)
        ref = _X if abs(a[0]) < 0.9 else (0.0, 1.0, 0.0)
        d = sum(x * y for x, y in zip(ref, a))
        return _unit(tuple(r - d * x for r, x in zip(ref, a)))

    def other(self, body: str) -> str:
        """The body at the other end of this joint from `body`."""
        return self.bodies[1] if self.bodies[0] == body else self.bodies[0]


@dataclass(frozen=True)
class Driver:
    """A driven joint coordinate: an expression of time t (radians or metres from the design configuration)."""

    joint: str
    value: str
    coordinate: int = 0


@dataclass(frozen=True)
class PairOverride:
    """A friction coefficient for one pair of bodies."""

    bodies: tuple[str, str]
    friction: float


@dataclass(frozen=True)
class ContactSettings:
    """Contact parameters: Coulomb friction and the friction ellipsoid (e_t, e_o, e_r)."""

    friction: float = 0.5
    ellipsoid: Vec3 = (1.0, 1.0, 0.0)
    pairs: tuple[PairOverride, ...] = ()

    def friction_for(self, a: str, b: str) -> float:
        """The friction coefficient of the pair (a, b): its override, else the default."""
        for p in self.pairs:
            if set(p.bodies) == {a, b}:
                return p.friction
        return self.friction


@dataclass(frozen=True)
class SimulationSettings:
    """Time-stepping defaults of the document."""

    dt: float = 0.01
    duration: float = 1.0
    method: str = "implicit"


def _unit(v: Iterable[float]) -> Vec3:
    v = tuple(float(x) for x in v)
    big = max(abs(x) for x in v)
    v = tuple(x / big for x in v)  # scaled first: [1e200, 0, 0] must not overflow when squared
    n = validate.norm(v)
    return (v[0] / n, v[1] / n, v[2] / n)


def _norm(v: Iterable[float]) -> float:
    return validate.norm(tuple(v))


def check_name(name: object, location: str) -> None:
    """Raise unless `name` is a usable name (a non-empty string without surrounding spaces)."""
    validate.name(name, location)


def _finite_vec(v: Iterable[float], location: str, n: int = 3) -> None:
    """Raise unless `v` is n finite numbers."""
    v = tuple(v)
    if len(v) != n:
        raise LinkwrightError(location, f"expected a list of {n} numbers, got {len(v)} values")
    for i, x in enumerate(v):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            raise LinkwrightError(f"{location}[{i}]", f"must be a finite number, got {x}")


def check_inertia(inertia, location: str) -> None:
    """Raise unless `inertia` is a symmetric 3x3 matrix with a positive diagonal."""
    rows = tuple(inertia)
    if len(rows) != 3:
        raise LinkwrightError(location, "expected a 3x3 matrix (three rows of three numbers)")
    for i, r in enumerate(rows):
        _finite_vec(r, f"{location}[{i}]")
    for i in range(3):
        for k in range(3):
            if abs(rows[i][k] - rows[k][i]) > 1e-9 * (1 + abs(rows[i][k])):
                raise LinkwrightError(location, "must be symmetric")
    if min(rows[i][i] for i in range(3)) <= 0:
        raise LinkwrightError(location, "diagonal entries must be positive")
    # a rigid body's principal moments are positive and each is at most the sum of the other two (I1 = sum of
    # m (y^2 + z^2) and so on: I1 + I2 - I3 = 2 sum m z^2 >= 0, zero for a flat body); others are accepted by the
    # solver and give motion no body can have
    import numpy as np

    lam = np.linalg.eigvalsh(np.array(rows, dtype=float))
    moments = ", ".join(f"{x:.6g}" for x in lam)
    if not lam[0] > 0.0:
        raise LinkwrightError(location, f"not positive definite (principal moments {moments}): a rigid body's "
                                        "inertia has three positive principal moments")
    if lam[2] > (lam[0] + lam[1]) * (1.0 + 1e-9):
        raise LinkwrightError(location, f"principal moments {moments}: the largest is more than the sum of the "
                                        "other two, which no mass distribution gives (I1 + I2 >= I3)")


def check_orientation(q, location: str) -> None:
    """Raise unless `q` is a unit quaternion [w, x, y, z] (norm within 1e-6 of 1)."""
    _finite_vec(q, location, 4)
    qn = _norm(q)
    if qn < 1e-12:
        raise LinkwrightError(location, "zero quaternion (need a unit quaternion [w, x, y, z])")
    if abs(qn - 1.0) > 1e-6:
        raise LinkwrightError(location, f"not a unit quaternion (its norm is {qn:.6g})")


def check_contact(c: "ContactSettings", location: str = "contact") -> None:
    """Raise unless the contact settings hold (mu >= 0, e_t, e_o > 0, e_r >= 0, pairs of two bodies)."""
    _nonneg(c.friction, f"{location}.friction")
    _finite_vec(c.ellipsoid, f"{location}.ellipsoid")
    for i, e in enumerate(c.ellipsoid):
        if e < 0 or (i < 2 and e == 0):
            raise LinkwrightError(f"{location}.ellipsoid[{i}]", f"must be {'positive' if i < 2 else 'non-negative'}, got {e}")
    for i, p in enumerate(c.pairs):
        if len(p.bodies) != 2:
            raise LinkwrightError(f"{location}.pairs[{i}].bodies", "a pair names exactly two bodies")
        _nonneg(p.friction, f"{location}.pairs[{i}].friction")


def check_simulation(s: "SimulationSettings", location: str = "simulation") -> None:
    """Raise unless dt > 0, duration >= 0 and the method is 'implicit' or 'explicit'."""
    if isinstance(s.dt, bool) or not isinstance(s.dt, (int, float)) or not (math.isfinite(s.dt) and s.dt > 0):
        raise LinkwrightError(f"{location}.dt", f"must be a positive number, got {s.dt}")
    _nonneg(s.duration, f"{location}.duration")
    if s.method not in ("implicit", "explicit"):
        raise LinkwrightError(f"{location}.method", f"must be 'implicit' or 'explicit', got '{s.method}'")


def shape_key(shape: object) -> str | None:
    """A key that is equal for two shape objects only when they hold the same JSON values of the same types (a
    document's repeated shape is checked once: 3,000 equal spheres); None for anything JSON cannot write (then the
    shape is checked on its own). (The JSON text tells 1 from 1.0 and True; the repr, a key 1 from "1", a tuple from a
    list and a numpy number from a float.)"""
    import json

    try:
        return json.dumps(shape, allow_nan=True) + "\n" + repr(shape)
    except (TypeError, ValueError, RecursionError):  # (a shape nested too deep for json: checked on its own)
        return None


def canonical_shape(shape: dict | None, location: str = "shape") -> dict | None:
    """The shape object as the loader stores it (validated, keys in the format's order), so saving round-trips."""
    if shape is None:
        return None
    from .shapes import parse_shape

    return parse_shape(shape, location).to_dict()


def _nonneg(v: object, location: str) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise LinkwrightError(location, f"must be a finite number, got {v}")
    if v < 0:
        raise LinkwrightError(location, f"must not be negative, got {v}")


_ATOMS = (str, int, float, bool, type(None))


def _immutable(v: Any) -> bool:
    """Whether `v` can never change: an atom, a tuple of immutable values, an empty dict (a body's `points`), or a
    frozen dataclass of them."""
    if isinstance(v, _ATOMS):
        return True
    if isinstance(v, tuple):
        return all(_immutable(x) for x in v)
    if isinstance(v, dict) and not v:  # (a body's `points`: the edit API replaces a body, it never fills its dict)
        return True
    params = getattr(type(v), "__dataclass_params__", None)
    if params is not None and params.frozen:
        return all(_immutable(getattr(v, f)) for f in v.__dataclass_fields__)
    return False


@dataclass
class Mechanism:
    """One mechanism document; edit it only through its methods so every change is validated and counted."""

    name: str = "Untitled"
    description: str = ""
    space: str = "planar"
    gravity: Vec3 | None = None
    bodies: list[Body] = field(default_factory=list)
    joints: list[Joint] = field(default_factory=list)
    drivers: list[Driver] = field(default_factory=list)
    layout: dict[str, tuple[float, float]] = field(default_factory=dict)  # graph-editor node positions
    contact: ContactSettings | None = None
    simulation: SimulationSettings | None = None
    revision: int = field(default=0, compare=False)  # bumped by every edit; views cache on it
    # bumped (with `revision`) by set_layout only: revision - layout_revision changes with every edit but a node
    # moved, which changes nothing the motion, the structure or the 3D view shows (content_revision)
    layout_revision: int = field(default=0, compare=False)

    @property
    def content_revision(self) -> int:
        """Bumped by every edit but set_layout's (the graph editor's node positions)."""
        return self.revision - self.layout_revision

    # ---- look-up -------------------------------------------------------------------------------------------
    def body_index(self, name: str) -> int:
        """Index of the body called `name` (LinkwrightError if none)."""
        for i, b in enumerate(self.bodies):
            if b.name == name:
                return i
        raise LinkwrightError("bodies", f"unknown body '{name}'{self._known_bodies()}")

    def joint_index(self, name: str) -> int:
        """Index of the joint called `name` (LinkwrightError if none)."""
        for i, j in enumerate(self.joints):
            if j.name == name:
                return i
        raise LinkwrightError("joints", f"unknown joint '{name}'")

    def body(self, name: str) -> Body:
        """The body called `name`."""
        return self.bodies[self.body_index(name)]

    def joint(self, name: str) -> Joint:
        """The joint called `name`."""
        return self.joints[self.joint_index(name)]

    def up_direction(self) -> tuple[float, float, float] | None:
        """The unit vector against the gravity (a planar document's gravity is in its plane, e.g. -y: up is +y);
        None without gravity."""
        g = self.gravity
        n = math.sqrt(sum(x * x for x in g)) if g is not None else 0.0
        return None if n == 0.0 else tuple(0.0 - x / n for x in g)  # type: ignore[return-value]  (0.0 - x: no -0.0)

    def body_names(self) -> list[str]:
        """Names of the bodies in document order."""
        return [b.name for b in self.bodies]

    def joint_names(self) -> list[str]:
        """Names of the joints in document order."""
        return [j.name for j in self.joints]

    def joints_of(self, body: str) -> list[int]:
        """Indices of the joints that attach `body`."""
        return [i for i, j in enumerate(self.joints) if body in j.bodies]

    def unique_name(self, stem: str) -> str:
        """A body/joint name starting with `stem` that is not used yet."""
        used = set(self.body_names()) | set(self.joint_names())
        k = 1
        while f"{stem}{k}" in used:
            k += 1
        return f"{stem}{k}"

    def copy(self) -> "Mechanism":
        """A deep, independent snapshot (for workers, undo and reset).  Values that cannot change (a frozen body,
        joint or driver holding only strings, numbers and tuples of them) are shared, the rest deep-copied: a plain
        deepcopy of a 1,000-body document took 0.15-0.5 s of the GUI thread at every edit (each run's snapshot)."""
        new = copy.copy(self)
        new.bodies = [b if _immutable(b) else copy.deepcopy(b) for b in self.bodies]
        new.joints = [j if _immutable(j) else copy.deepcopy(j) for j in self.joints]
        new.drivers = [d if _immutable(d) else copy.deepcopy(d) for d in self.drivers]
        new.layout = {k: v if _immutable(v) else copy.deepcopy(v) for k, v in self.layout.items()}
        new.gravity = copy.deepcopy(self.gravity)
        new.contact = copy.deepcopy(self.contact)
        new.simulation = copy.deepcopy(self.simulation)
        return new

    def _known_bodies(self) -> str:
        names = self.body_names()
        if not names:
            return " (the document has no bodies)"
        shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
        return f" (known: {shown})"

    # ---- validation shared by the loader and the edit API ---------------------------------------------------
    def _names(self, known: tuple[set, set] | None) -> tuple:
        """(body names, joint names): `known` when given (validate keeps them as it goes), else the lists."""
        return known if known is not None else (self.body_names(), self.joint_names())

    def check_body(self, body: Body, location: str, replacing: str | None = None,
                   known: tuple[set, set] | None = None, shapes: set | None = None) -> None:
        """Raise a located LinkwrightError if `body` cannot be in this document (`known`: the sets of its body and
        joint names, when the caller keeps them; `shapes`: the shape_keys of shapes already found valid, which are
        not checked again, and to which this body's is added)."""
        check_name(body.name, f"{location}.name")
        bodies, joints = self._names(known)
        if body.name != replacing and (body.name in bodies or body.name in joints):
            raise LinkwrightError(f"{location}.name", f"duplicate name '{body.name}'")
        for key in ("mass", "density"):
            v = getattr(body, key)
            if v is not None:
                validate.number(v, f"{location}.{key}", validate.MIN_MASS, validate.MAX_MASS, positive=True)
        if body.mass is not None and body.density is not None:
            raise LinkwrightError(f"{location}.density", "give either mass or density, not both")
        if body.shape is not None:
            from .shapes import parse_shape  # local: shapes pull in scipy, not needed for plain linkages

            key = shape_key(body.shape) if shapes is not None else None
            if key is None or key not in shapes:
                parse_shape(body.shape, f"{location}.shape")  # the loader's checks and located messages
                if key is not None:
                    shapes.add(key)
        if body.density is not None and body.shape is None:
            raise LinkwrightError(f"{location}.density", "density needs a shape to give the volume")
        if body.inertia is not None:
            for i, row in enumerate(body.inertia):
                validate.vector(row, f"{location}.inertia[{i}]", bound=validate.MAX_MASS)
            check_inertia(body.inertia, f"{location}.inertia")
        if body.com is not None:
            validate.vector(body.com, f"{location}.com")
        if body.pose is not None:
            validate.vector(body.pose.position, f"{location}.pose.position")
            validate.vector(body.pose.orientation, f"{location}.pose.orientation", 4, bound=2.0)
            check_orientation(body.pose.orientation, f"{location}.pose.orientation")
        if body.velocity is not None:
            validate.vector(body.velocity.linear, f"{location}.velocity.linear", bound=validate.MAX_SPEED)
            validate.vector(body.velocity.angular, f"{location}.velocity.angular", bound=validate.MAX_ANGULAR_SPEED)
            if body.ground:  # (a run would ignore it: a ground body never moves; zeros are harmless, kept)
                for key in ("linear", "angular"):
                    if any(x != 0.0 for x in getattr(body.velocity, key)):
                        raise LinkwrightError(f"{location}.velocity.{key}",
                                              "a ground body is fixed (it does not move): remove the velocity, or "
                                              "un-mark the body as ground (to move it at a set speed: a driven joint "
                                              "to the ground)")
            if self.space == "planar":
                validate.in_plane(body.velocity.linear, f"{location}.velocity.linear", (2,))
                validate.in_plane(body.velocity.angular, f"{location}.velocity.angular", (0, 1),
                                  " (a body turns about z only)")
        for pname, p in body.points.items():
            check_name(pname, f"{location}.points")
            validate.vector(p, f"{location}.points.{pname}")

    def check_joint(self, joint: Joint, location: str, replacing: str | None = None,
                    known: tuple[set, set] | None = None) -> None:
        """Raise a located LinkwrightError if `joint` cannot be in this document (`known`: as check_body's)."""
        check_name(joint.name, f"{location}.name")
        names, jnames = self._names(known)
        if joint.name != replacing and (joint.name in jnames or joint.name in names):
            raise LinkwrightError(f"{location}.name", f"duplicate name '{joint.name}'")
        jt = JOINT_TYPES.get(joint.type)
        if jt is None:
            raise LinkwrightError(f"{location}.type", f"unknown joint type '{joint.type}' (known: {', '.join(JOINT_TYPES)})")
        if jt.dof(self.space) is None:
            allowed = [n for n, t in JOINT_TYPES.items() if t.dof(self.space) is not None]
            raise LinkwrightError(
                f"{location}.type", f"'{joint.type}' joints are not allowed in a {self.space} document (allowed: {', '.join(allowed)})"
            )
        if len(joint.bodies) != 2:
            raise LinkwrightError(f"{location}.bodies", "a joint joins exactly two bodies")
        for k, b in enumerate(joint.bodies):
            if b not in names:
                raise LinkwrightError(f"{location}.bodies[{k}]", f"unknown body '{b}'{self._known_bodies()}")
        if joint.bodies[0] == joint.bodies[1]:
            raise LinkwrightError(f"{location}.bodies", f"a joint cannot join body '{joint.bodies[0]}' to itself")
        validate.vector(joint.at, f"{location}.at")
        for key in ("axis", "axis2"):
            v = getattr(joint, key)
            if v is not None:
                validate.direction(v, f"{location}.{key}")
                if _norm(v) < 1e-12:  # (direction refused an exact zero; the message says the bound it misses)
                    raise LinkwrightError(f"{location}.{key}", f"length {_norm(v):.3g} is shorter than 1e-12")
        if self.space == "planar":
            why = planar_axis_error(joint.type, joint.axis_vector())
            if why:
                raise LinkwrightError(f"{location}.axis", why)
        if joint.pitch is not None:
            validate.number(joint.pitch, f"{location}.pitch", -validate.MAX_COORDINATE, validate.MAX_COORDINATE)
        if jt.pitch and joint.pitch is None:  # as the loader requires it: what the edit API builds must load again
            raise LinkwrightError(f"{location}.pitch", f"a {joint.type} joint needs a pitch (advance per full turn)")
        if jt.axis2 and joint.axis2 is not None:
            why = axis2_error(joint.axis_vector(), joint.axis2)
            if why:
                raise LinkwrightError(f"{location}.axis2", why)

    def check_driver(self, driver: Driver, location: str) -> None:
        """Raise a located LinkwrightError if `driver` names no joint, a bad coordinate or a bad expression."""
        from .expr import check_expression  # local: expr pulls in sympy, not needed for plain model edits

        if driver.joint not in self.joint_names():
            raise LinkwrightError(f"{location}.joint", f"unknown joint '{driver.joint}' (known: {', '.join(self.joint_names()) or 'none'})")
        j = self.joint(driver.joint)
        dof = JOINT_TYPES[j.type].dof(self.space) or 0
        if not (0 <= driver.coordinate < max(dof, 1)) or dof == 0:
            raise LinkwrightError(
                f"{location}.coordinate",
                f"joint '{j.name}' ({j.type}) has {dof} coordinate(s); coordinate {driver.coordinate} does not exist",
            )
        check_expression(driver.value, f"{location}.value")

    def validate(self, shapes: set | None = None) -> None:
        """Check the whole document, raising the first problem found with its location (`shapes`: the shape_keys of
        shapes the caller found valid, as io.from_dict built them: not built again, a polytope of many vertices is not
        free)."""
        if self.space not in SPACES:
            raise LinkwrightError("space", f"must be 'planar' or 'spatial', got '{self.space}'")
        validate.text(self.name, "name")
        validate.text(self.description, "description")
        if self.gravity is not None:
            validate.vector(self.gravity, "gravity", bound=validate.MAX_ACCELERATION)
            if self.space == "planar":
                validate.in_plane(self.gravity, "gravity", (2,))
        # each name is checked against those before it in the file (bodies, then joints), so a clash is reported
        # at its second use: a joint named as a body at the joint
        bodies, joints = self.bodies, self.joints
        self.bodies, self.joints = [], []
        known: tuple[set, set] = (set(), set())  # the names so far (a list of them per check was O(n^2): 0.4 s of a
        # Space switch of 1,000 bodies)
        shapes = set(shapes or ())  # the shapes found valid so far (each parsed once: 3,000 equal spheres, one parse)
        try:
            for i, b in enumerate(bodies):
                self.check_body(b, f"bodies[{i}]", known=known, shapes=shapes)
                self.bodies.append(b)
                known[0].add(b.name)
            for i, j in enumerate(joints):
                self.check_joint(j, f"joints[{i}]", known=known)
                self.joints.append(j)
                known[1].add(j.name)
        finally:
            self.bodies, self.joints = bodies, joints
        for i, d in enumerate(self.drivers):
            self.check_driver(d, f"drivers[{i}]")
        driven = [(d.joint, d.coordinate) for d in self.drivers]
        for i, key in enumerate(driven):
            if key in driven[:i]:
                raise LinkwrightError(f"drivers[{i}]", f"joint '{key[0]}' coordinate {key[1]} is driven twice")
        names = set(self.body_names())
        for name, pos in self.layout.items():
            if name not in names:
                raise LinkwrightError("layout", f"unknown body '{name}'{self._known_bodies()}")
            validate.vector(pos, f"layout.{name}", 2)
        if self.simulation is not None:
            check_simulation(self.simulation)
            validate.run_steps(self.simulation.duration, self.simulation.dt, "simulation.duration", "simulation.dt")
        if self.contact is not None:
            check_contact(self.contact)
            validate.number(self.contact.friction, "contact.friction", 0.0, validate.MAX_FRICTION)
            validate.vector(self.contact.ellipsoid, "contact.ellipsoid", bound=None)
            for i, e in enumerate(self.contact.ellipsoid):  # (never negative: check_contact refused that)
                validate.number(e, f"contact.ellipsoid[{i}]", 0.0, validate.MAX_FRICTION)
            given: dict = {}
            for i, p in enumerate(self.contact.pairs):
                validate.number(p.friction, f"contact.pairs[{i}].friction", 0.0, validate.MAX_FRICTION)
                for k, b in enumerate(p.bodies):
                    if b not in names:
                        raise LinkwrightError(f"contact.pairs[{i}].bodies[{k}]", f"unknown body '{b}'{self._known_bodies()}")
                if p.bodies[0] == p.bodies[1]:  # (a body never touches itself; the edit refuses it too)
                    raise LinkwrightError(f"contact.pairs[{i}].bodies",
                                          f"a pair needs two different bodies, got '{p.bodies[0]}' twice")
                key = frozenset(p.bodies)
                if key in given:  # (which friction would the pair get? the file has to say one)
                    raise LinkwrightError(f"contact.pairs[{i}].bodies", f"the pair {'/'.join(p.bodies)} is given "
                                                                         f"again (contact.pairs[{given[key]}]); keep one")
                given[key] = i

    def _ground_halfspaces(self) -> list[tuple[int, Any, float]]:
        """(index, unit outward normal, offset) of every ground half-space, in the world frame."""
        import numpy as np

        from .shapes import parse_shape

        out = []
        for i, b in enumerate(self.bodies):
            if b.ground and b.shape is not None and b.shape.get("type") == "halfspace":
                h = parse_shape(b.shape, f"bodies[{i}].shape")
                R, p = _frame(b)
                n = R @ h.normal
                out.append((i, n, h.offset + float(n @ p)))
        return out

    def check_contact_scene(self) -> None:
        """The checks of a contact scene as a whole (a repeated ground half-space), made by every contact run before it
        starts (core.run.open_run; the run then refuses bodies that start overlapping, by their real overlap in its
        contact model: core.contact.closest.start_overlaps, validate.MAX_START_OVERLAP, two bodies at one point
        included).  Not on load: a document that fails them is a scene being edited (the app adds a second floor where
        the first one is, and a new body where the last one was), and it opens, so it can be fixed; only its contact
        run is refused."""
        self._check_ground_planes()

    def _check_ground_planes(self) -> None:
        """Refuse a ground half-space that is another one again (within a micrometre and 1e-6 rad): the contact
        constraints of a body on both are redundant, the contact solver's matrix is singular, and 60 copies of the
        floor under a rolling disc took minutes for three steps."""
        import numpy as np

        walls = self._ground_halfspaces()
        if len(walls) < 2:
            return
        idx = [w[0] for w in walls]
        N, C = np.array([w[1] for w in walls]), np.array([w[2] for w in walls])
        for start in range(0, len(walls), 256):  # rows in blocks: memory stays small for thousands of planes
            same = ((np.abs(N[start:start + 256, None, :] - N[None, :, :]).max(axis=-1) <= 1e-6)
                    & (np.abs(C[start:start + 256, None] - C[None, :]) <= validate.MIN_DIMENSION))
            same &= np.arange(len(walls))[None, :] < np.arange(start, start + len(same))[:, None]  # earlier ones
            if same.any():
                a = int(np.argmax(same.any(axis=1)))
                i, j = idx[start + a], idx[int(np.argmax(same[a]))]
                raise LinkwrightError(
                    f"bodies[{i}].shape", f"the same half-space as bodies[{j}] ('{self.bodies[j].name}'); "
                                          "remove one (a body touching both would have redundant contacts)")

    # ---- the edit API (every method validates first, then changes, then bumps the revision) ----------------------
    def _touch(self) -> None:
        self.revision += 1

    def add_body(self, body: Body, index: int | None = None, position: tuple[float, float] | None = None) -> int:
        """Insert `body` (at `index`, default last) and optionally its graph position; returns its index."""
        self.check_body(body, f"bodies[{len(self.bodies) if index is None else index}]")
        if body.shape is not None:
            body = replace(body, shape=canonical_shape(body.shape))
        index = len(self.bodies) if index is None else index
        self.bodies.insert(index, body)
        if position is not None:
            self.layout[body.name] = (float(position[0]), float(position[1]))
        self._touch()
        return index

    def remove_body(self, name: str) -> dict[str, Any]:
        """Remove a body with its joints and their drivers; returns what `restore_body` needs to undo it."""
        bi = self.body_index(name)
        removed_joints = [(i, self.joints[i]) for i in self.joints_of(name)]
        gone = {j.name for _, j in removed_joints}
        removed_drivers = [(i, d) for i, d in enumerate(self.drivers) if d.joint in gone]
        record = {
            "index": bi,
            "body": self.bodies[bi],
            "joints": removed_joints,
            "drivers": removed_drivers,
            "layout": self.layout.get(name),
            "contact": self.contact,  # (its pair overrides that name the body go with it)
        }
        self.drivers = [d for d in self.drivers if d.joint not in gone]
        self.joints = [j for j in self.joints if j.name not in gone]
        del self.bodies[bi]
        self.layout.pop(name, None)
        if self.contact is not None and any(name in p.bodies for p in self.contact.pairs):
            self.contact = replace(self.contact, pairs=tuple(p for p in self.contact.pairs if name not in p.bodies))
        self._touch()
        return record

    def restore_body(self, record: dict[str, Any]) -> None:
        """Undo `remove_body` exactly (same indices)."""
        self.bodies.insert(record["index"], record["body"])
        for i, j in record["joints"]:
            self.joints.insert(i, j)
        for i, d in record["drivers"]:
            self.drivers.insert(i, d)
        if record["layout"] is not None:
            self.layout[record["body"].name] = record["layout"]
        self.contact = record["contact"]
        self._touch()

    def rename_body(self, old: str, new: str) -> None:
        """Rename a body, updating every joint, layout entry and contact pair that names it."""
        self.update_body(old, name=new)

    def update_body(self, target: str, /, **changes: Any) -> Body:
        """Replace fields of the body `target` (e.g. name=, ground=, mass=, points=); returns the old body."""
        bi = self.body_index(target)
        old = self.bodies[bi]
        new = replace(old, **changes)
        self.check_body(new, f"bodies[{bi}]", replacing=old.name)
        if "shape" in changes and new.shape is not None:
            new = replace(new, shape=canonical_shape(new.shape))
        self.bodies[bi] = new
        if new.name != old.name:
            self.joints = [
                replace(j, bodies=tuple(new.name if b == old.name else b for b in j.bodies)) if old.name in j.bodies else j
                for j in self.joints
            ]
            if old.name in self.layout:
                self.layout[new.name] = self.layout.pop(old.name)
            if self.contact is not None and self.contact.pairs:
                pairs = tuple(
                    replace(p, bodies=tuple(new.name if b == old.name else b for b in p.bodies)) for p in self.contact.pairs
                )
                self.contact = replace(self.contact, pairs=pairs)
        self._touch()
        return old

    def set_ground(self, name: str, ground: bool = True) -> Body:
        """Mark (or unmark) the body `name` as the fixed ground; returns the old body."""
        return self.update_body(name, ground=ground)

    def add_joint(self, joint: Joint, index: int | None = None) -> int:
        """Insert `joint` (at `index`, default last); returns its index."""
        index = len(self.joints) if index is None else index
        self.check_joint(joint, f"joints[{index}]")
        self.joints.insert(index, joint)
        self._touch()
        return index

    def remove_joint(self, name: str) -> dict[str, Any]:
        """Remove a joint and its drivers; returns what `restore_joint` needs to undo it."""
        ji = self.joint_index(name)
        record = {
            "index": ji,
            "joint": self.joints[ji],
            "drivers": [(i, d) for i, d in enumerate(self.drivers) if d.joint == name],
        }
        self.drivers = [d for d in self.drivers if d.joint != name]
        del self.joints[ji]
        self._touch()
        return record

    def restore_joint(self, record: dict[str, Any]) -> None:
        """Undo `remove_joint` exactly."""
        self.joints.insert(record["index"], record["joint"])
        for i, d in record["drivers"]:
            self.drivers.insert(i, d)
        self._touch()

    def update_joint(self, target: str, /, **changes: Any) -> Joint:
        """Replace fields of the joint `target` (type=, bodies=, at=, axis=, pitch=, name=); returns the old joint.

        Drivers of the joint follow a rename; a type change that removes a driven coordinate is refused."""
        ji = self.joint_index(target)
        old = self.joints[ji]
        if "bodies" in changes:
            changes["bodies"] = tuple(changes["bodies"])
        new = replace(old, **changes)
        self.check_joint(new, f"joints[{ji}]", replacing=old.name)
        dof = JOINT_TYPES[new.type].dof(self.space) or 0
        for k, d in enumerate(self.drivers):
            if d.joint == old.name and d.coordinate >= dof:
                raise LinkwrightError(
                    f"joints[{ji}].type", f"drivers[{k}] drives coordinate {d.coordinate}, which a {new.type} joint does not have"
                )
        self.joints[ji] = new
        if new.name != old.name:
            self.drivers = [replace(d, joint=new.name) if d.joint == old.name else d for d in self.drivers]
        self._touch()
        return old

    def add_driver(self, driver: Driver, index: int | None = None) -> int:
        """Insert a driver (validated, expression checked); returns its index."""
        index = len(self.drivers) if index is None else index
        self.check_driver(driver, f"drivers[{index}]")
        if any(d.joint == driver.joint and d.coordinate == driver.coordinate for d in self.drivers):
            raise LinkwrightError(f"drivers[{index}]", f"joint '{driver.joint}' coordinate {driver.coordinate} is already driven")
        self.drivers.insert(index, driver)
        self._touch()
        return index

    def remove_driver(self, index: int) -> Driver:
        """Remove the driver at `index`; returns it."""
        if not 0 <= index < len(self.drivers):
            raise LinkwrightError(f"drivers[{index}]", "no such driver")
        d = self.drivers.pop(index)
        self._touch()
        return d

    def update_driver(self, index: int, **changes: Any) -> Driver:
        """Replace fields of the driver at `index` (joint=, value=, coordinate=); returns the old driver."""
        if not 0 <= index < len(self.drivers):
            raise LinkwrightError(f"drivers[{index}]", "no such driver")
        old = self.drivers[index]
        new = replace(old, **changes)
        self.check_driver(new, f"drivers[{index}]")
        if any(k != index and d.joint == new.joint and d.coordinate == new.coordinate for k, d in enumerate(self.drivers)):
            raise LinkwrightError(f"drivers[{index}]", f"joint '{new.joint}' coordinate {new.coordinate} is already driven")
        self.drivers[index] = new
        self._touch()
        return old

    def set_layout(self, name: str, position: tuple[float, float] | None) -> tuple[float, float] | None:
        """Set (or clear, with None) the graph-editor position of a body; returns the old one."""
        self.body_index(name)
        old = self.layout.get(name)
        if position is None:
            self.layout.pop(name, None)
        else:
            x, y = validate.vector(tuple(position), f"layout.{name}", 2)  # what the loader accepts, no more
            self.layout[name] = (x, y)
        self._touch()
        self.layout_revision += 1
        return old

    def set_properties(self, **changes: Any) -> dict[str, Any]:
        """Change document-level fields (name, space, gravity, contact, simulation); returns the old values."""
        allowed = {"name", "description", "space", "gravity", "contact", "simulation"}
        bad = set(changes) - allowed
        if bad:
            raise LinkwrightError(sorted(bad)[0], "not a document property")
        old = {k: getattr(self, k) for k in changes}
        trial = replace(self, **changes)
        trial.validate()
        for k, v in changes.items():
            setattr(self, k, v)
        self._touch()
        return old

    def contact_settings(self) -> ContactSettings:
        """The document's contact settings (the defaults when it has none)."""
        return self.contact if self.contact is not None else ContactSettings()

    def simulation_settings(self) -> SimulationSettings:
        """The document's time-stepping settings (the defaults when it has none)."""
        return self.simulation if self.simulation is not None else SimulationSettings()

    def set_contact(self, **changes: Any) -> ContactSettings | None:
        """Change contact fields (friction=, ellipsoid=, pairs=), creating the settings if absent; returns the old."""
        if "ellipsoid" in changes:
            changes["ellipsoid"] = tuple(float(x) for x in changes["ellipsoid"])
        if "pairs" in changes:
            changes["pairs"] = tuple(PairOverride(tuple(p.bodies), p.friction) for p in changes["pairs"])
        return self.set_properties(contact=replace(self.contact_settings(), **changes))["contact"]

    def set_simulation(self, **changes: Any) -> SimulationSettings | None:
        """Change time-stepping fields (dt=, duration=, method=), creating the settings if absent; returns the old."""
        return self.set_properties(simulation=replace(self.simulation_settings(), **changes))["simulation"]

    def set_pair_friction(self, a: str, b: str, friction: float | None) -> ContactSettings | None:
        """Override the friction of the pair (a, b), or drop its override with None; returns the old settings."""
        c = self.contact_settings()
        kept = tuple(p for p in c.pairs if set(p.bodies) != {a, b})
        if friction is None:
            pairs = kept
        else:
            at = next((i for i, p in enumerate(c.pairs) if set(p.bodies) == {a, b}), len(kept))
            pairs = kept[:at] + (PairOverride((a, b), friction),) + kept[at:]
        return self.set_contact(pairs=pairs)
