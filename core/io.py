"""Format v1 JSON <-> Mechanism: validated loading with located errors, lossless atomic saving."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from .errors import LinkwrightError
from .model import (
    Body,
    ContactSettings,
    Driver,
    Joint,
    Mechanism,
    PairOverride,
    Pose,
    SimulationSettings,
    Velocity,
    check_contact,
    check_inertia,
    check_orientation,
    check_simulation,
)

__all__ = ["FORMAT", "VERSION", "MAX_FILE_BYTES", "load", "loads", "save", "dumps", "to_dict", "from_dict"]

FORMAT = "linkwright.mechanism"
VERSION = 1
MAX_FILE_BYTES = 20 * 1024 * 1024  # a mechanism is kilobytes; refuse files that cannot be one
MAX_NESTING = 32  # the format nests 5 levels; deeper JSON is not a mechanism


# ---- typed readers: each returns the value or raises a located error --------------------------------------------
def _typename(v: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true/false", type(None): "null"}.get(
        type(v), "a number" if isinstance(v, (int, float)) else type(v).__name__
    )


def _obj(v: Any, loc: str, keys: dict[str, bool]) -> dict:
    """An object whose keys are all known (`keys`: name -> required)."""
    if not isinstance(v, dict):
        raise LinkwrightError(loc, f"expected an object, got {_typename(v)}")
    for k, req in keys.items():
        if req and k not in v:
            raise LinkwrightError(loc, f"missing key '{k}'")
    for k in v:
        if k not in keys:
            raise LinkwrightError(f"{loc}.{k}" if loc else k, f"unknown key (known: {', '.join(keys)})")
    return v


def _num(v: Any, loc: str, positive: bool = False, nonneg: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise LinkwrightError(loc, f"expected a number, got {_typename(v)}")
    try:
        f = float(v)
    except OverflowError:  # a JSON integer with hundreds of digits
        raise LinkwrightError(loc, "number too large") from None
    if not math.isfinite(f):
        raise LinkwrightError(loc, f"must be a finite number, got {v}")
    if positive and f <= 0:
        raise LinkwrightError(loc, f"must be a positive number, got {v}")
    if nonneg and f < 0:
        raise LinkwrightError(loc, f"must not be negative, got {v}")
    return f


def _int(v: Any, loc: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise LinkwrightError(loc, f"expected a whole number, got {_typename(v) if not isinstance(v, float) else v}")
    return v


def _str(v: Any, loc: str) -> str:
    if not isinstance(v, str):
        raise LinkwrightError(loc, f"expected a string, got {_typename(v)}")
    return v


def _bool(v: Any, loc: str) -> bool:
    if not isinstance(v, bool):
        raise LinkwrightError(loc, f"expected true or false, got {_typename(v)}")
    return v


def _vec(v: Any, loc: str, n: int = 3) -> tuple[float, ...]:
    if not isinstance(v, list) or len(v) != n:
        got = f"{len(v)} values" if isinstance(v, list) else _typename(v)
        raise LinkwrightError(loc, f"expected a list of {n} numbers, got {got}")
    return tuple(_num(x, f"{loc}[{i}]") for i, x in enumerate(v))


def _nonzero_vec(v: Any, loc: str) -> tuple[float, float, float]:
    t = _vec(v, loc)
    if math.sqrt(sum(x * x for x in t)) < 1e-12:
        raise LinkwrightError(loc, "zero length")
    return t  # type: ignore[return-value]


def _list(v: Any, loc: str) -> list:
    if not isinstance(v, list):
        raise LinkwrightError(loc, f"expected a list, got {_typename(v)}")
    return v


# ---- document pieces ---------------------------------------------------------------------------------------------
_BODY_KEYS = {
    "name": True, "ground": False, "mass": False, "density": False, "inertia": False, "com": False,
    "points": False, "shape": False, "pose": False, "velocity": False,
}
_JOINT_KEYS = {"name": True, "type": True, "bodies": True, "at": False, "axis": False, "axis2": False, "pitch": False}
_DRIVER_KEYS = {"joint": True, "value": True, "coordinate": False}
_TOP_KEYS = {
    "format": True, "version": True, "name": False, "space": True, "gravity": False, "bodies": True, "joints": False,
    "drivers": False, "layout": False, "contact": False, "simulation": False, "description": False,
}


def _body(v: Any, loc: str) -> Body:
    d = _obj(v, loc, _BODY_KEYS)
    name = _str(d["name"], f"{loc}.name")
    points = {}
    if "points" in d:
        pts = d["points"]
        if not isinstance(pts, dict):
            raise LinkwrightError(f"{loc}.points", f"expected an object mapping point names to [x, y, z], got {_typename(pts)}")
        for pname, p in pts.items():
            points[pname] = _vec(p, f"{loc}.points.{pname}")
    inertia = None
    if "inertia" in d:
        rows = _list(d["inertia"], f"{loc}.inertia")
        if len(rows) != 3:
            raise LinkwrightError(f"{loc}.inertia", "expected a 3x3 matrix (three rows of three numbers)")
        inertia = tuple(_vec(r, f"{loc}.inertia[{i}]") for i, r in enumerate(rows))
        check_inertia(inertia, f"{loc}.inertia")
    pose = None
    if "pose" in d:
        pd = _obj(d["pose"], f"{loc}.pose", {"position": False, "orientation": False})
        pos = _vec(pd["position"], f"{loc}.pose.position") if "position" in pd else (0.0, 0.0, 0.0)
        q = _vec(pd["orientation"], f"{loc}.pose.orientation", 4) if "orientation" in pd else (1.0, 0.0, 0.0, 0.0)
        check_orientation(q, f"{loc}.pose.orientation")
        pose = Pose(pos, q)  # type: ignore[arg-type]
    vel = None
    if "velocity" in d:
        vd = _obj(d["velocity"], f"{loc}.velocity", {"linear": False, "angular": False})
        vel = Velocity(
            _vec(vd["linear"], f"{loc}.velocity.linear") if "linear" in vd else (0.0, 0.0, 0.0),  # type: ignore[arg-type]
            _vec(vd["angular"], f"{loc}.velocity.angular") if "angular" in vd else (0.0, 0.0, 0.0),  # type: ignore[arg-type]
        )
    shape = None
    if "shape" in d:
        from .shapes import parse_shape  # validates every shape parameter with its location

        shape = parse_shape(d["shape"], f"{loc}.shape").to_dict()
    if "mass" in d and "density" in d:
        raise LinkwrightError(f"{loc}.density", "give either mass or density, not both")
    if "density" in d and shape is None:
        raise LinkwrightError(f"{loc}.density", "density needs a shape to give the volume")
    return Body(
        name=name,
        ground=_bool(d["ground"], f"{loc}.ground") if "ground" in d else False,
        mass=_num(d["mass"], f"{loc}.mass", positive=True) if "mass" in d else None,
        density=_num(d["density"], f"{loc}.density", positive=True) if "density" in d else None,
        inertia=inertia,  # type: ignore[arg-type]
        com=_vec(d["com"], f"{loc}.com") if "com" in d else None,  # type: ignore[arg-type]
        points=points,  # type: ignore[arg-type]
        shape=shape,
        pose=pose,
        velocity=vel,
    )


def _joint(v: Any, loc: str) -> Joint:
    d = _obj(v, loc, _JOINT_KEYS)
    bodies = _list(d["bodies"], f"{loc}.bodies")
    if len(bodies) != 2:
        raise LinkwrightError(f"{loc}.bodies", f"a joint joins exactly two bodies, got {len(bodies)}")
    if d.get("type") == "helical" and "pitch" not in d:
        raise LinkwrightError(f"{loc}.pitch", "a helical joint needs a pitch (advance per full turn)")
    return Joint(
        name=_str(d["name"], f"{loc}.name"),
        type=_str(d["type"], f"{loc}.type"),
        bodies=(_str(bodies[0], f"{loc}.bodies[0]"), _str(bodies[1], f"{loc}.bodies[1]")),
        at=_vec(d["at"], f"{loc}.at") if "at" in d else (0.0, 0.0, 0.0),  # type: ignore[arg-type]
        axis=_nonzero_vec(d["axis"], f"{loc}.axis") if "axis" in d else None,
        axis2=_nonzero_vec(d["axis2"], f"{loc}.axis2") if "axis2" in d else None,
        pitch=_num(d["pitch"], f"{loc}.pitch") if "pitch" in d else None,
    )


def _driver(v: Any, loc: str) -> Driver:
    d = _obj(v, loc, _DRIVER_KEYS)
    coord = _int(d["coordinate"], f"{loc}.coordinate") if "coordinate" in d else 0
    return Driver(joint=_str(d["joint"], f"{loc}.joint"), value=_str(d["value"], f"{loc}.value"), coordinate=coord)


def _contact(v: Any, loc: str) -> ContactSettings:
    d = _obj(v, loc, {"friction": False, "ellipsoid": False, "pairs": False})
    mu = _num(d["friction"], f"{loc}.friction", nonneg=True) if "friction" in d else 0.5
    ell = (1.0, 1.0, 0.0)
    if "ellipsoid" in d:
        ell = _vec(d["ellipsoid"], f"{loc}.ellipsoid")
    pairs = []
    for i, p in enumerate(_list(d.get("pairs", []), f"{loc}.pairs")):
        pl = f"{loc}.pairs[{i}]"
        pd = _obj(p, pl, {"bodies": True, "friction": True})
        b = _list(pd["bodies"], f"{pl}.bodies")
        if len(b) != 2:
            raise LinkwrightError(f"{pl}.bodies", "a pair names exactly two bodies")
        pairs.append(
            PairOverride((_str(b[0], f"{pl}.bodies[0]"), _str(b[1], f"{pl}.bodies[1]")), _num(pd["friction"], f"{pl}.friction", nonneg=True))
        )
    out = ContactSettings(friction=mu, ellipsoid=ell, pairs=tuple(pairs))  # type: ignore[arg-type]
    check_contact(out, loc)
    return out


def _simulation(v: Any, loc: str) -> SimulationSettings:
    d = _obj(v, loc, {"dt": False, "duration": False, "method": False})
    out = SimulationSettings(
        dt=_num(d["dt"], f"{loc}.dt", positive=True) if "dt" in d else 0.01,
        duration=_num(d["duration"], f"{loc}.duration", nonneg=True) if "duration" in d else 1.0,
        method=_str(d["method"], f"{loc}.method") if "method" in d else "implicit",
    )
    check_simulation(out, loc)
    return out


def _depth(v: Any, limit: int) -> int:
    """Nesting depth of a JSON value, iteratively (deep input must not exhaust the stack)."""
    stack, best = [(v, 1)], 0
    while stack:
        x, dep = stack.pop()
        best = max(best, dep)
        if dep > limit:
            return dep
        if isinstance(x, dict):
            stack.extend((y, dep + 1) for y in x.values())
        elif isinstance(x, list):
            stack.extend((y, dep + 1) for y in x)
    return best


def from_dict(data: Any) -> Mechanism:
    """Build and validate a Mechanism from parsed format v1 JSON (LinkwrightError with location on any problem)."""
    if not isinstance(data, dict):
        raise LinkwrightError("", f"a mechanism file is a JSON object, got {_typename(data)}")
    if data.get("format") != FORMAT:
        raise LinkwrightError("format", f"expected \"{FORMAT}\", got {json.dumps(data.get('format'))} — not a Linkwright mechanism file")
    if data.get("version") != VERSION or isinstance(data.get("version"), bool):
        raise LinkwrightError("version", f"this Linkwright reads version {VERSION} files, got {json.dumps(data.get('version'))}")
    d = _obj(data, "", _TOP_KEYS)
    space = _str(d["space"], "space")
    if space not in ("planar", "spatial"):
        raise LinkwrightError("space", f"must be 'planar' or 'spatial', got '{space}'")
    layout = {}
    if "layout" in d:
        lay = d["layout"]
        if not isinstance(lay, dict):
            raise LinkwrightError("layout", f"expected an object mapping body names to [x, y], got {_typename(lay)}")
        layout = {k: _vec(p, f"layout.{k}", 2) for k, p in lay.items()}
    mech = Mechanism(
        name=_str(d["name"], "name") if "name" in d else "Untitled",
        description=_str(d["description"], "description") if "description" in d else "",
        space=space,
        gravity=_vec(d["gravity"], "gravity") if "gravity" in d else None,  # type: ignore[arg-type]
        bodies=[_body(b, f"bodies[{i}]") for i, b in enumerate(_list(d["bodies"], "bodies"))],
        joints=[_joint(j, f"joints[{i}]") for i, j in enumerate(_list(d.get("joints", []), "joints"))],
        drivers=[_driver(x, f"drivers[{i}]") for i, x in enumerate(_list(d.get("drivers", []), "drivers"))],
        layout=layout,  # type: ignore[arg-type]
        contact=_contact(d["contact"], "contact") if "contact" in d else None,
        simulation=_simulation(d["simulation"], "simulation") if "simulation" in d else None,
    )
    mech.validate()
    return mech


def loads(text: str | bytes) -> Mechanism:
    """Parse format v1 JSON text into a validated Mechanism."""
    if len(text) > MAX_FILE_BYTES:
        raise LinkwrightError("", f"file too large for a mechanism ({len(text) / 1e6:.0f} MB, limit {MAX_FILE_BYTES // 2**20} MB)")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LinkwrightError("", f"not a text file (invalid UTF-8 at byte {exc.start})") from None
    # Reject pathological nesting before json (which recurses) sees it.
    depth = best = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            best = max(best, depth)
            if best > MAX_NESTING:
                raise LinkwrightError("", f"JSON nested too deeply for a mechanism file (limit {MAX_NESTING} levels)")
        elif ch in "]}":
            depth -= 1

    def _no_constants(name: str) -> float:
        raise LinkwrightError("", f"not valid JSON: {name} is not a number in JSON")

    try:
        data = json.loads(text, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        raise LinkwrightError("", f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    except RecursionError:
        raise LinkwrightError("", "JSON nested too deeply for a mechanism file") from None
    except ValueError:  # Python's limit on digits in an integer literal (thousands of digits)
        raise LinkwrightError("", "not valid JSON for a mechanism: a number has too many digits") from None
    return from_dict(data)


def load(path: str | os.PathLike) -> Mechanism:
    """Read and validate a format v1 mechanism file."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_FILE_BYTES:
            raise LinkwrightError("", f"{p.name}: file too large for a mechanism ({size / 1e6:.0f} MB, limit {MAX_FILE_BYTES // 2**20} MB)")
        raw = p.read_bytes()
    except FileNotFoundError:
        raise LinkwrightError("", f"{p}: no such file") from None
    except IsADirectoryError:
        raise LinkwrightError("", f"{p}: is a directory, not a mechanism file") from None
    except PermissionError:
        raise LinkwrightError("", f"{p}: permission denied") from None
    return loads(raw)


def _clean(x: float) -> float | int:
    """Numbers as written: integral floats become ints so files stay readable (and load back equal)."""
    return int(x) if float(x).is_integer() and abs(x) < 1e15 else x


def _v(t) -> list:
    return [_clean(x) for x in t]


def to_dict(mech: Mechanism) -> dict:
    """The format v1 JSON object of `mech` (only keys that carry information are written)."""
    out: dict[str, Any] = {"format": FORMAT, "version": VERSION, "name": mech.name}
    if mech.description:
        out["description"] = mech.description
    out["space"] = mech.space
    if mech.gravity is not None:
        out["gravity"] = _v(mech.gravity)
    bodies = []
    for b in mech.bodies:
        d: dict[str, Any] = {"name": b.name}
        if b.ground:
            d["ground"] = True
        if b.mass is not None:
            d["mass"] = _clean(b.mass)
        if b.density is not None:
            d["density"] = _clean(b.density)
        if b.inertia is not None:
            d["inertia"] = [_v(r) for r in b.inertia]
        if b.com is not None:
            d["com"] = _v(b.com)
        if b.points:
            d["points"] = {k: _v(p) for k, p in b.points.items()}
        if b.shape is not None:
            d["shape"] = b.shape
        if b.pose is not None:
            d["pose"] = {"position": _v(b.pose.position), "orientation": _v(b.pose.orientation)}
        if b.velocity is not None:
            d["velocity"] = {"linear": _v(b.velocity.linear), "angular": _v(b.velocity.angular)}
        bodies.append(d)
    out["bodies"] = bodies
    joints = []
    for j in mech.joints:
        d = {"name": j.name, "type": j.type, "bodies": list(j.bodies), "at": _v(j.at)}
        if j.axis is not None:
            d["axis"] = _v(j.axis)
        if j.axis2 is not None:
            d["axis2"] = _v(j.axis2)
        if j.pitch is not None:
            d["pitch"] = _clean(j.pitch)
        joints.append(d)
    out["joints"] = joints
    out["drivers"] = [
        {"joint": d.joint, "value": d.value, **({"coordinate": d.coordinate} if d.coordinate else {})} for d in mech.drivers
    ]
    if mech.layout:
        out["layout"] = {k: _v(p) for k, p in mech.layout.items()}
    if mech.contact is not None:
        c = mech.contact
        cd: dict[str, Any] = {"friction": _clean(c.friction), "ellipsoid": _v(c.ellipsoid)}
        if c.pairs:
            cd["pairs"] = [{"bodies": list(p.bodies), "friction": _clean(p.friction)} for p in c.pairs]
        out["contact"] = cd
    if mech.simulation is not None:
        s = mech.simulation
        out["simulation"] = {"dt": _clean(s.dt), "duration": _clean(s.duration), "method": s.method}
    return out


def dumps(mech: Mechanism) -> str:
    """Format v1 JSON text of `mech` (2-space indented, stable key order)."""
    return json.dumps(to_dict(mech), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def save(mech: Mechanism, path: str | os.PathLike) -> None:
    """Write `mech` atomically: a temporary file in the same folder, flushed, then renamed over `path`."""
    p = Path(path)
    text = dumps(mech)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent if str(p.parent) else ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
