"""The minimal input of every failure class of issue 21, shared by the core, CLI and GUI regression tests.

Each builder returns the text of a mechanism file (str) that Linkwright must refuse with a located message;
`special_inputs` gives paths that are not regular files."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Callable

from tests.conftest import EXAMPLES


def example(name: str) -> dict:
    """A shipped example as parsed JSON."""
    return json.loads((EXAMPLES / f"{name}.json").read_text())


def _doc(name: str, change: Callable[[dict], None]) -> str:
    d = copy.deepcopy(example(name))
    change(d)
    return json.dumps(d)


def _drive(expr: str) -> str:
    return _doc("fourbar", lambda d: d["drivers"][0].__setitem__("value", expr))


def _surrogate(d: dict) -> None:
    d["bodies"][1]["name"] = "\ud800"
    for j in d["joints"]:
        j["bodies"] = ["\ud800" if b == "crank" else b for b in j["bodies"]]


def _pile(n: int) -> Callable[[dict], None]:
    def change(d: dict) -> None:
        d["bodies"] = [{"name": f"b{i}", "mass": 1, "shape": {"type": "sphere", "radius": 0.1}} for i in range(n)]
    return change


def _wall(d: dict) -> None:
    d["bodies"].append({"name": "wall", "ground": True,
                        "shape": {"type": "halfspace", "normal": [1, 9007199254740993, 0], "offset": 0}})


def _long_can(d: dict) -> None:
    can = next(b for b in d["bodies"] if b["name"] == "can")
    can["shape"]["length"] = 2


# class -> (file text, the location the message must name)
REGRESSION_DOCS: dict[str, tuple[Callable[[], str], str]] = {
    # 1: a JSON integer of 401 digits (text surgery: json.dumps would write the same digits)
    "huge_integer_radius": (lambda: json.dumps(example("contact_two_spheres")).replace(
        '"radius": 0.1', '"radius": 1' + "0" * 400), "bodies[0].shape.radius"),
    "huge_integer_driver": (lambda: _drive("1" * 400), "drivers[0].value"),
    # 3: degenerate shapes
    "tiny_cylinder": (lambda: _doc("contact_two_spheres", lambda d: d["bodies"][0].__setitem__(
        "shape", {"type": "cylinder", "radius": 1e-300, "length": 0.1})), "bodies[0].shape.radius"),
    "needle_box": (lambda: _doc("contact_two_spheres", lambda d: d["bodies"][0].__setitem__(
        "shape", {"type": "box", "size": [1e-6, 1, 1e3]})), "bodies[0].shape.size"),
    # 4: a lone surrogate in a name
    "surrogate_name": (lambda: _doc("fourbar", _surrogate), "bodies[1].name"),
    # 5: expressions: undefined values and unbounded costs
    "tan_pole": (lambda: _drive("tan(pi/2)"), "drivers[0].value"),
    "zero_division": (lambda: _drive("1/(t-t)"), "drivers[0].value"),
    "log_zero": (lambda: _drive("log(0*t)"), "drivers[0].value"),
    "integer_growth": (lambda: _drive("((t*2**64)**64)**64"), "drivers[0].value"),
    "power_tower": (lambda: _drive("**".join(["t"] * 60)), "drivers[0].value"),
    "max_of_119": (lambda: _drive("max(" + ",".join(f"sin({k}*t)" for k in range(1, 120)) + ")"), "drivers[0].value"),
    # the failure of the long expression campaign (LINKWRIGHT_FUZZ_EXAMPLES=1200, seed 1): a constant exponent
    # hidden in a function call escaped the exponent bound, and sympy computed (-64)**(2**64) exactly in C, where
    # the compile budget cannot interrupt it (8 GB, then MemoryError); shrunk from
    # -(-(-((-(64))**(max(72, 231.1969232526539, 2**64)))))
    "exponent_through_max": (lambda: _drive("2**max(1, 2**64)"), "drivers[0].value"),
    "exponent_through_abs": (lambda: _drive("2**abs(10**7)"), "drivers[0].value"),  # ValueError (4300 digits)
    # a function of a huge constant: sympy evaluates it in arbitrary precision (tanh of an mpmath number of 10^300
    # digits: OverflowError), found by the outside campaign
    "function_of_huge_constant": (lambda: _drive("tanh(exp(1e300))*t"), "drivers[0].value"),
    # a function of an undefined part: sympy turned atan(zoo) into AccumulationBounds and then failed in cse
    # (ValueError), found by the outside campaign inside a longer atan2(min(...)) expression
    "function_of_undefined": (lambda: _drive("atan(tan(pi/2))*t"), "drivers[0].value"),
    # 9: a position that makes every gap infinite
    "far_position": (lambda: _doc("contact_two_spheres", lambda d: d["bodies"][1]["pose"].__setitem__(
        "position", [0, 0, 1e308])), "bodies[1].pose.position[2]"),
    "huge_axis_spatial": (lambda: _doc("contact_two_spheres", lambda d: d["bodies"][0]["velocity"].__setitem__(
        "linear", [1e200, 0, 0])), "bodies[0].velocity.linear[0]"),
    # 10: pathological scenes
    "wall_normal": (lambda: _doc("contact_two_spheres", _wall), "bodies[2].shape.normal[1]"),
    # 11: file-level JSON errors are located by line and column
    "bad_json": (lambda: '{\n "format": "linkwright.mechanism",\n "version": 1,\n "space": oops\n}', ""),
    "too_many_digits": (lambda: '{\n  "format": "linkwright.mechanism", "version": 1,\n  "space": "planar", "x": '
                        + "9" * 5000 + "}", ""),
}


# Scenes that load (a scene being edited) and whose contact run is refused at the location, before any stepping
# (core.run.open_run: Mechanism.check_contact_scene): `simulate` exits 2, `analyze` analyses the structure.
SCENE_DOCS: dict[str, tuple[Callable[[], str], str]] = {
    # 10: pathological scenes
    "hundred_coincident": (lambda: _doc("contact_two_spheres", _pile(100)), "bodies[1].pose.position"),
    # found by the outside campaign: a 2 m can through the walls of the 0.6 m bin of contact_pile took 4 minutes of
    # one step before "did not converge"; a tilted wall through the pile overflowed inside the solver
    "can_through_the_walls": (lambda: _doc("contact_pile", _long_can), "bodies[8].pose.position"),
    # found by the outside campaign: copies of the floor made every contact redundant (a singular solver matrix,
    # scipy's LinAlgWarning) and 60 of them under the rolling disc took minutes for three steps
    "duplicated_floor": (lambda: _doc("contact_box_slide", lambda d: d["bodies"].append(
        dict(d["bodies"][0], name="floor2", shape={"type": "halfspace", "normal": [0, 0, 2], "offset": 0}))),
        "bodies[2].shape"),
    # (the run names the body deepest in the wall for its size: the can, 0.48 m into it)
    "tilted_wall_through_the_pile": (lambda: _doc("contact_pile", lambda d: d["bodies"][1]["shape"].__setitem__(
        "normal", [-1, 0, -3.0])), "bodies[8].pose.position"),
    # found by a user-level sweep: two shaped bodies added at the same point in the app ran, and left at 10 m/s
    "two_coincident": (lambda: _doc("contact_two_spheres", _pile(2)), "bodies[1].pose.position"),
}


def write_regression_docs(folder: Path, docs: dict | None = None) -> dict[str, Path]:
    """Every regression document (of `docs`, default REGRESSION_DOCS) written into `folder` (name -> path)."""
    out = {}
    for name, (build, _) in (REGRESSION_DOCS if docs is None else docs).items():
        p = folder / f"{name}.json"
        p.write_text(build(), encoding="utf-8", errors="surrogatepass")
        out[name] = p
    return out


def special_inputs(folder: Path) -> dict[str, str]:
    """Input paths that are not regular files: a FIFO (no writer: reading it would wait forever), devices, a folder,
    a symlink loop."""
    fifo = folder / "pipe.json"
    os.mkfifo(fifo)
    loop = folder / "loop.json"
    os.symlink(folder / "loop2.json", loop)
    os.symlink(loop, folder / "loop2.json")
    return {"fifo": str(fifo), "dev_zero": "/dev/zero", "dev_urandom": "/dev/urandom", "folder": str(folder),
            "symlink_loop": str(loop)}
