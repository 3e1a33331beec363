"""Format v1 JSON <-> Mechanism: validated loading with located errors, lossless atomic saving."""

from __future__ import annotations

import copy
import errno
import json
import math
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import IO, Any, Callable

import numpy as np

from . import validate
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
    shape_key,
)

__all__ = ["FORMAT", "VERSION", "MAX_FILE_BYTES", "load", "loads", "save", "dumps", "to_dict", "from_dict",
           "read_limited", "write_atomic", "readable_times", "number_text"]

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


def _num(v: Any, loc: str, positive: bool = False, nonneg: bool = False, bound: float | None = None,
         lo: float | None = None) -> float:
    """A finite number, |v| <= bound (or within [lo, bound]); the shared checks of core.validate."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise LinkwrightError(loc, f"expected a number, got {_typename(v)}")
    low = lo if lo is not None else (-bound if bound is not None and not (positive or nonneg) else None)
    return validate.number(v, loc, low, bound, positive=positive, nonneg=nonneg)


def _int(v: Any, loc: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise LinkwrightError(loc, f"expected a whole number, got {_typename(v) if not isinstance(v, float) else v}")
    validate.number(v, loc)  # refuses integers of hundreds of digits
    return v


def _str(v: Any, loc: str, **limit: Any) -> str:
    if not isinstance(v, str):
        raise LinkwrightError(loc, f"expected a string, got {_typename(v)}")
    return validate.text(v, loc, **limit)


def _bool(v: Any, loc: str) -> bool:
    if not isinstance(v, bool):
        raise LinkwrightError(loc, f"expected true or false, got {_typename(v)}")
    return v


def _vec(v: Any, loc: str, n: int = 3, bound: float | None = validate.MAX_COORDINATE) -> tuple[float, ...]:
    if not isinstance(v, list) or len(v) != n:
        got = f"{len(v)} values" if isinstance(v, list) else _typename(v)
        raise LinkwrightError(loc, f"expected a list of {n} numbers, got {got}")
    return tuple(_num(x, f"{loc}[{i}]", bound=bound) for i, x in enumerate(v))


def _nonzero_vec(v: Any, loc: str) -> tuple[float, float, float]:
    _vec(v, loc, bound=None)  # the type messages of the loader
    return validate.direction(v, loc)  # type: ignore[return-value]


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


def _body(v: Any, loc: str, shapes: dict | None = None) -> Body:
    """The body of JSON object `v`; `shapes`: the checked form of each shape read so far, by shape_key (a document's
    repeated shape is parsed once)."""
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
        inertia = tuple(_vec(r, f"{loc}.inertia[{i}]", bound=validate.MAX_MASS) for i, r in enumerate(rows))
        check_inertia(inertia, f"{loc}.inertia")
    pose = None
    if "pose" in d:
        pd = _obj(d["pose"], f"{loc}.pose", {"position": False, "orientation": False})
        pos = _vec(pd["position"], f"{loc}.pose.position") if "position" in pd else (0.0, 0.0, 0.0)
        q = _vec(pd["orientation"], f"{loc}.pose.orientation", 4, bound=2.0) if "orientation" in pd else (1.0, 0.0, 0.0, 0.0)
        check_orientation(q, f"{loc}.pose.orientation")
        pose = Pose(pos, q)  # type: ignore[arg-type]
    vel = None
    if "velocity" in d:
        vd = _obj(d["velocity"], f"{loc}.velocity", {"linear": False, "angular": False})
        vel = Velocity(
            _vec(vd["linear"], f"{loc}.velocity.linear", bound=validate.MAX_SPEED) if "linear" in vd else (0.0, 0.0, 0.0),  # type: ignore[arg-type]
            _vec(vd["angular"], f"{loc}.velocity.angular", bound=validate.MAX_ANGULAR_SPEED) if "angular" in vd else (0.0, 0.0, 0.0),  # type: ignore[arg-type]
        )
    shape = None
    if "shape" in d:
        from .shapes import parse_shape  # validates every shape parameter with its location

        key = shape_key(d["shape"]) if shapes is not None else None
        if key is None or key not in shapes:
            shape = parse_shape(d["shape"], f"{loc}.shape").to_dict()
            if key is not None:
                shapes[key] = shape
        shape = copy.deepcopy(shapes[key]) if key is not None else shape  # (a body's own, as before)
    if "mass" in d and "density" in d:
        raise LinkwrightError(f"{loc}.density", "give either mass or density, not both")
    if "density" in d and shape is None:
        raise LinkwrightError(f"{loc}.density", "density needs a shape to give the volume")
    return Body(
        name=name,
        ground=_bool(d["ground"], f"{loc}.ground") if "ground" in d else False,
        mass=_num(d["mass"], f"{loc}.mass", positive=True, lo=validate.MIN_MASS, bound=validate.MAX_MASS) if "mass" in d else None,
        density=_num(d["density"], f"{loc}.density", positive=True, lo=validate.MIN_MASS, bound=validate.MAX_MASS) if "density" in d else None,
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
        pitch=_num(d["pitch"], f"{loc}.pitch", bound=validate.MAX_COORDINATE) if "pitch" in d else None,
    )


def _driver(v: Any, loc: str) -> Driver:
    d = _obj(v, loc, _DRIVER_KEYS)
    coord = _int(d["coordinate"], f"{loc}.coordinate") if "coordinate" in d else 0
    return Driver(joint=_str(d["joint"], f"{loc}.joint"), value=_str(d["value"], f"{loc}.value", limit=validate.MAX_EXPRESSION_LENGTH, what="expression"), coordinate=coord)


def _contact(v: Any, loc: str) -> ContactSettings:
    d = _obj(v, loc, {"friction": False, "ellipsoid": False, "pairs": False})
    mu = _num(d["friction"], f"{loc}.friction", nonneg=True, bound=validate.MAX_FRICTION) if "friction" in d else 0.5
    ell = (1.0, 1.0, 0.0)
    if "ellipsoid" in d:
        ell = _vec(d["ellipsoid"], f"{loc}.ellipsoid", bound=None)  # (its range: Mechanism.validate)
    pairs = []
    for i, p in enumerate(_list(d.get("pairs", []), f"{loc}.pairs")):
        pl = f"{loc}.pairs[{i}]"
        pd = _obj(p, pl, {"bodies": True, "friction": True})
        b = _list(pd["bodies"], f"{pl}.bodies")
        if len(b) != 2:
            raise LinkwrightError(f"{pl}.bodies", "a pair names exactly two bodies")
        pairs.append(
            PairOverride((_str(b[0], f"{pl}.bodies[0]"), _str(b[1], f"{pl}.bodies[1]")), _num(pd["friction"], f"{pl}.friction", nonneg=True, bound=validate.MAX_FRICTION))
        )
    out = ContactSettings(friction=mu, ellipsoid=ell, pairs=tuple(pairs))  # type: ignore[arg-type]
    check_contact(out, loc)
    return out


def _simulation(v: Any, loc: str) -> SimulationSettings:
    d = _obj(v, loc, {"dt": False, "duration": False, "method": False})
    out = SimulationSettings(
        dt=_num(d["dt"], f"{loc}.dt", positive=True, lo=validate.MIN_DT, bound=validate.MAX_DURATION) if "dt" in d else 0.01,
        duration=_num(d["duration"], f"{loc}.duration", nonneg=True, bound=validate.MAX_DURATION) if "duration" in d else 1.0,
        method=_str(d["method"], f"{loc}.method") if "method" in d else "implicit",
    )
    check_simulation(out, loc)
    validate.run_steps(out.duration, out.dt, f"{loc}.duration", f"{loc}.dt")  # a run the document asks for is a sane one
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
    if _depth(data, MAX_NESTING) > MAX_NESTING:  # (parsed elsewhere, as the app's recovery files are: loads checks the text)
        raise LinkwrightError("", f"JSON nested too deeply for a mechanism file (limit {MAX_NESTING} levels)")
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
    shapes: dict = {}
    mech = Mechanism(
        name=_str(d["name"], "name") if "name" in d else "Untitled",
        description=_str(d["description"], "description") if "description" in d else "",
        space=space,
        gravity=_vec(d["gravity"], "gravity", bound=validate.MAX_ACCELERATION) if "gravity" in d else None,  # type: ignore[arg-type]
        bodies=[_body(b, f"bodies[{i}]", shapes) for i, b in enumerate(_list(d["bodies"], "bodies"))],
        joints=[_joint(j, f"joints[{i}]") for i, j in enumerate(_list(d.get("joints", []), "joints"))],
        drivers=[_driver(x, f"drivers[{i}]") for i, x in enumerate(_list(d.get("drivers", []), "drivers"))],
        layout=layout,  # type: ignore[arg-type]
        contact=_contact(d["contact"], "contact") if "contact" in d else None,
        simulation=_simulation(d["simulation"], "simulation") if "simulation" in d else None,
    )
    # (_body built each shape already: their stored forms are known valid)
    mech.validate(shapes={shape_key(b.shape) for b in mech.bodies if b.shape is not None})
    return mech


def _mib(n: int) -> str:
    """A size for a message, in MiB (2^20 bytes: the limit is 20 MiB) or, below one MiB, in bytes."""
    if n < 2**20:
        return f"{n} bytes"
    return f"{n / 2**20:.1f} MiB" if n % 2**20 else f"{n // 2**20} MiB"


def _line_col(text: str, pos: int) -> str:
    """'line L, column C' of character offset `pos` in `text` (both 1-based, as editors count)."""
    line = text.count("\n", 0, pos) + 1
    return f"line {line}, column {pos - (text.rfind(chr(10), 0, pos) + 1) + 1}"


def json_problem(exc: json.JSONDecodeError) -> str:
    """Python's reason for a JSON error, to be followed by ' at <place>': some of its reasons end in 'at' already
    ('Unterminated string starting at', 'Invalid control character at'), which read 'starting at at line 1'."""
    if exc.msg.startswith("Unexpected UTF-8 BOM"):
        return "a second byte-order mark (U+FEFF)"
    return exc.msg.removesuffix(" at")


def loads(text: str | bytes) -> Mechanism:
    """Parse format v1 JSON text into a validated Mechanism."""
    if len(text) > MAX_FILE_BYTES:
        raise LinkwrightError("", f"file too large for a mechanism ({_mib(len(text))}, limit {_mib(MAX_FILE_BYTES)})")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raw = text[: exc.start].decode("utf-8", errors="replace")
            raise LinkwrightError("", f"not a text file (invalid UTF-8 at {_line_col(raw, len(raw))}, byte {exc.start})") from None
    # A UTF-8 byte-order mark (Windows Notepad writes one) is no part of the JSON: json refused the file with Python's
    # own hint ('Unexpected UTF-8 BOM (decode using utf-8-sig)'); it is read as the text after it.
    text = text.removeprefix("\ufeff")
    # Reject pathological nesting before json (which recurses) sees it.
    depth = best = 0
    in_str = esc = False
    for i, ch in enumerate(text):
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
                raise LinkwrightError("", f"JSON nested too deeply for a mechanism file at {_line_col(text, i)} "
                                          f"(limit {MAX_NESTING} levels)")
        elif ch in "]}":
            depth -= 1

    def _no_constants(name: str) -> float:
        # (json gives no position: the first such token outside a string is the one it met)
        m = next((m for m in re.finditer(r'"(?:[^"\\]|\\.)*"|(-?(?:NaN|Infinity))', text) if m.group(1)), None)
        where = f" at {_line_col(text, m.start(1))}" if m else ""
        raise LinkwrightError("", f"not valid JSON: {name} is not a number in JSON{where}")

    def _unique_keys(pairs: list) -> dict:
        # a key given twice in one object: JSON parsers keep one of the values (Python's the last) and drop the
        # other without a word; a mechanism file says which it means
        out = dict(pairs)
        if len(out) < len(pairs):
            keys = [k for k, _v in pairs]
            key = next(k for i, k in enumerate(keys) if k in keys[:i])  # the first key given again
            m = [x.start() for x in re.finditer(re.escape(json.dumps(key)) + r"\s*:", text)]
            where = f" (its second at {_line_col(text, m[1])})" if len(m) == 2 else ""
            raise LinkwrightError("", f"not valid for a mechanism: the key {json.dumps(key)} appears twice in one "
                                      f"JSON object{where}; keep one")
        return out

    try:
        data = json.loads(text, parse_constant=_no_constants, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise LinkwrightError("", f"not valid JSON: {json_problem(exc)} at line {exc.lineno}, column {exc.colno}") from None
    except RecursionError:
        raise LinkwrightError("", "JSON nested too deeply for a mechanism file") from None
    except ValueError:  # Python's limit on digits in an integer literal (thousands of digits)
        m = re.search(r"\d{4000,}", text)
        where = f" at {_line_col(text, m.start())}" if m else ""
        raise LinkwrightError("", f"not valid JSON for a mechanism: a number has too many digits{where}") from None
    return from_dict(data)


def _os_message(exc: OSError) -> str:
    return exc.strerror or str(exc)


def folder_problem(path: str | os.PathLike) -> str:
    """Why the folder of `path` cannot hold a new file, in the words every writer uses ('' when it is a folder):
    "no such folder 'out'" or "'notes.txt' is not a folder" (the first part of the folder's path that is a file).
    Permissions and full disks show only when the file is made."""
    folder = Path(path).parent
    if folder.is_dir():
        return ""
    for part in reversed((folder, *folder.parents)):
        if part.exists() and not part.is_dir():
            return f"'{part}' is not a folder"
    return f"no such folder '{folder}'"


EMPTY_PATH = 'the file name is empty ("")'
NUL_PATH = "the file name holds a NUL character, which no file name may"


def read_limited(path: str | os.PathLike, limit: int = MAX_FILE_BYTES, what: str = "a mechanism file") -> bytes:
    """The bytes of a regular file of at most `limit` bytes; FIFOs, devices and folders are refused unread."""
    if os.fspath(path) in ("", b""):  # (Path("") is ".", the current folder: "is a directory" named no mistake)
        raise LinkwrightError("", EMPTY_PATH)
    p = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; we refuse it right after anyway.
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise LinkwrightError("", f"{p}: no such file") from None
    except IsADirectoryError:
        raise LinkwrightError("", f"{p}: is a directory, not {what}") from None
    except PermissionError:
        raise LinkwrightError("", f"{p}: permission denied") from None
    except OSError as exc:  # a symlink loop, a name too long, a component that is not a folder...
        raise LinkwrightError("", f"{p}: cannot open: {_os_message(exc)}") from None
    except ValueError:  # (an embedded NUL: the system refuses the name before looking)
        raise LinkwrightError("", f"{repr(str(p))[1:-1]}: cannot open: {NUL_PATH}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise LinkwrightError("", f"{p}: is a directory, not {what}")
        if not stat.S_ISREG(st.st_mode):
            raise LinkwrightError("", f"{p}: not a regular file (a device, pipe or socket), so not {what}")
        if st.st_size > limit:
            raise LinkwrightError("", f"{p.name}: file too large for {what} ({_mib(st.st_size)}, limit {_mib(limit)})")
        chunks, total = [], 0
        while total <= limit:  # st_size can lie (files in /proc, a file still growing): count what is read
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise LinkwrightError("", f"{p.name}: file too large for {what} (limit {_mib(limit)})")
        return b"".join(chunks)
    except OSError as exc:
        raise LinkwrightError("", f"{p}: cannot read: {_os_message(exc)}") from None
    finally:
        os.close(fd)


def load(path: str | os.PathLike) -> Mechanism:
    """Read and validate a format v1 mechanism file."""
    return loads(read_limited(path))


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


def _umask() -> int:
    """The process umask, read without changing it where the system allows (it is process-wide)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def write_atomic(path: str | os.PathLike, write: Callable[[IO], None], location: str = "", binary: bool = False,
                 suffix: str = ".tmp") -> None:
    """Write a file through `write(fh)` so that the user's file is either the old one or the complete new one.

    A temporary file in the same folder is written, flushed and fsynced, given the mode of the file it replaces
    (or the umask's default), renamed over the target and the folder is fsynced.  A symlink is written through
    (its target is replaced, the link stays).  Devices and pipes (/dev/null, a terminal) are written directly.
    Any failure is a LinkwrightError at `location` ("cannot write 'out.csv': No space left on device"), and the
    temporary file is removed."""
    if os.fspath(path) in ("", b""):  # (Path("") is ".": "cannot write '.': it is a folder" named no mistake)
        raise LinkwrightError(location, EMPTY_PATH)
    p = Path(path)
    shown = str(p)

    def fail(exc: OSError | str) -> LinkwrightError:
        why = exc if isinstance(exc, str) else _os_message(exc)
        return LinkwrightError(location, f"cannot write '{shown}': {why}")

    try:
        st = os.stat(p)  # follows symlinks: a loop or a dangling component shows here
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise fail(folder_problem(p)) from None
    except OSError as exc:
        raise fail(exc) from None
    except ValueError:  # (an embedded NUL: a ValueError, where every other bad name is an OSError)
        raise fail(NUL_PATH) from None
    mode = "wb" if binary else "w"
    kw: dict[str, Any] = {} if binary else {"encoding": "utf-8", "newline": ""}
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise fail("it is a folder")
    if st is not None and not stat.S_ISREG(st.st_mode):
        # A device or a pipe: there is no user's file to protect, and it cannot be renamed over.
        try:
            fd = os.open(p, os.O_WRONLY | getattr(os, "O_NONBLOCK", 0))  # a pipe without a reader fails at once
        except OSError as exc:
            raise fail("no process is reading that pipe" if exc.errno == errno.ENXIO else exc) from None
        try:
            os.set_blocking(fd, True)
            with os.fdopen(fd, mode, **kw) as fh:
                write(fh)
        except OSError as exc:
            raise fail(exc) from None
        return
    real = Path(os.path.realpath(p))  # write through symlinks: replace the target, keep the link
    folder = real.parent
    if problem := folder_problem(p):
        raise fail(problem)
    perms = stat.S_IMODE(st.st_mode) if st is not None else (0o666 & ~_umask())
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{real.name[:100]}.", suffix=suffix, dir=folder)
    except OSError as exc:
        raise fail(f"cannot create a file in '{folder}' ({_os_message(exc)})") from None
    try:
        with os.fdopen(fd, mode, **kw) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, perms)
        os.replace(tmp, real)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise fail(exc) from None
        raise
    try:  # make the rename itself durable
        dfd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass  # some file systems cannot fsync a folder; the data itself is on disk


# ---- run data written as text -------------------------------------------------------------------------------------
def readable_times(times) -> np.ndarray:
    """A run's times as a text file shows them, without the round-off of their computation: row k of a run is at
    t = k h, computed as a product (a contact run's k dt, a driven one's k (T / N)) that Python writes as
    0.30000000000000004 for 3 x 0.1 and 29.990000000000002 for 2999 x 0.01.  Each time is rounded to 15 significant
    digits: such a product, off by a few rounding errors of about 1e-16 of its value (below the 5e-16 at least that
    the 15th digit resolves), then reads as its short decimal form (0.3, 29.99) when it has one, and no time moves by more than 5e-15 of its value (below 1e-8 of a step for
    the 1,000,000 steps a run may take).  Non-finite times are kept.  The text writers use it: Recording.save_csv
    (core.contact) and Trajectory.columns / save_csv (core.kinematics, also `linkwright kinematics --json`).  Rounding
    again changes nothing (a decimal of 15 significant digits reads back from its float unchanged)."""
    return np.array([float(f"{x:.15g}") for x in np.asarray(times, dtype=float).ravel().tolist()], dtype=float)


def number_text(x) -> str:
    """A number of a run as a text file writes it: Python's repr, which reads back exactly, but a zero without a
    sign (a computed -0.0, such as a driver's effort of -0 N m or a quaternion component of a body turned about
    another axis, is written 0.0; adding 0.0 changes no other number).  The CSV writers use it: Recording.save_csv
    (core.contact) and Trajectory.save_csv (core.kinematics)."""
    return repr(float(x) + 0.0)


def save(mech: Mechanism, path: str | os.PathLike) -> None:
    """Write `mech` atomically (see write_atomic); LinkwrightError with the reason when it cannot be written."""
    text = dumps(mech)
    write_atomic(path, lambda fh: fh.write(text))
