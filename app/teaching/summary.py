"""The four-bar teaching report as rows of text, and the transmission-angle curve to plot (no Qt here)."""

from __future__ import annotations

import math

import numpy as np

from core.fourbar import FoundFourBar, FourBar, fixed, grashof_digits, length_digits, transmission_angle

__all__ = ["ROWS", "num", "grashof_text", "summary_rows", "transmission_curve"]

# (key, label) of the report's rows, in the order shown
ROWS = (
    ("links", "Links"),
    ("slpq", "s, l, p, q"),
    ("grashof", "Grashof"),
    ("class", "Class"),
    ("rotating", "Fully rotating"),
    ("crank_range", "Crank range"),
    ("rocker_limits", "Rocker limits"),
    ("transmission", "Transmission angle μ"),
    ("toggles", "Toggle positions"),
    ("convention", "Angles"),
)
_ROLE_JOINTS = {"ground": (0, 3), "crank": (0, 1), "coupler": (1, 2), "rocker": (2, 3)}  # A-D, A-B, B-C, C-D
_SYMBOL = {"ground": "g", "crank": "a", "coupler": "b", "rocker": "c"}


def num(x: float, digits: int = 4) -> str:
    """A length as the teaching text shows it (4 significant digits unless told, no trailing zeros)."""
    return f"{x:.{digits}g}"


def _deg(x: float) -> str:
    """An angle in degrees to 0.1, rounded before its sign is written (a tiny negative read "−0.0°")."""
    return f"{fixed(x, 1)}°".replace("-", "−")


_AXES = "xyz"


def _plane(normal: tuple[float, float, float]) -> str:
    """Where the angles are seen from, for a four-bar out of the x-y plane (core.fourbar.plane_normal): '' in it."""
    n = tuple(float(x) for x in normal)
    if n == (0.0, 0.0, 1.0):
        return ""
    if sorted(abs(x) for x in n) == [0.0, 0.0, 1.0]:  # a world plane: named, its axes right and up
        i, j = (k for k in range(3) if n[k] == 0.0)
        return f" in the {_AXES[i]}-{_AXES[j]} plane, seen with {_AXES[i]} to the right and {_AXES[j]} up"
    return " in the plane normal to ({}), seen from the tip of that normal".format(", ".join(f"{x:.4g}" for x in n))


def grashof_text(rep: dict) -> str:
    """'1 + 4 = 5 ≤ 3 + 3.5 = 6.5' — s + l against p + q with the numbers, the sign telling the case."""
    sign = {"grashof": "≤", "equal": "=", "non-grashof": ">"}[rep["grashof"]]
    d = grashof_digits(rep, 4)  # (as many digits as tell the sums apart: a linkage drawn 5e-5 off a change point
    # read "2 + 5 = 7 > 3 + 4 = 7")
    n = lambda x: f"{x:.{d}g}"  # noqa: E731
    return f"{n(rep['s'])} + {n(rep['l'])} = {n(rep['s_plus_l'])} {sign} {n(rep['p'])} + {n(rep['q'])} = {n(rep['p_plus_q'])}"


def summary_rows(found: FoundFourBar, rep: dict) -> dict[str, str]:
    """Text of every row of ROWS for the four-bar `found` and its `core.fourbar.report`."""
    roles = {"ground": found.ground, "crank": found.crank, "coupler": found.coupler, "rocker": found.rocker}
    out: dict[str, str] = {}
    d = length_digits(rep, 4)  # (lengths that differ print differently: not "crank a = 1" over a non-Grashof class)
    out["links"] = "   ".join(
        f"{role} {_SYMBOL[role]} = {num(rep['lengths'][role], d)} m ({roles[role]}, {found.joints[i]}–{found.joints[j]})"
        for role, (i, j) in _ROLE_JOINTS.items())
    out["slpq"] = (f"s = {num(rep['s'], d)} ({rep['shortest']}), l = {num(rep['l'], d)} ({rep['longest']}), "
                   f"p = {num(rep['p'], d)}, q = {num(rep['q'], d)}")
    sign = {"grashof": "≤", "equal": "=", "non-grashof": ">"}[rep["grashof"]]
    verdict = {"grashof": "Grashof", "equal": "change point", "non-grashof": "non-Grashof"}[rep["grashof"]]
    out["grashof"] = f"s + l {sign} p + q:   {grashof_text(rep)}   ({verdict})"
    out["class"] = rep["class"]
    rot = rep["fully_rotating"]
    out["rotating"] = ", ".join(f"{r} ({roles[r]})" for r in rot) + " — relative to the ground" if rot else "none"
    cr = rep["crank_range_deg"]
    out["crank_range"] = "full turn" if "crank" in rot else (f"{_deg(cr[0])} … {_deg(cr[1])}" if cr else "—")
    lim = rep["rocker_limits_deg"]
    if lim:
        out["rocker_limits"] = (f"θ4 = {_deg(lim[0])} and {_deg(lim[1])}   (swing {_deg(rep['rocker_swing_deg'])}, "
                                f"through {_deg(rep['rocker_swing_through_deg'])})")
    else:
        out["rocker_limits"] = "the rocker turns fully" if "rocker" in rot else "—"
    mu = rep["transmission_angle_deg"]
    if mu:
        out["transmission"] = (f"min {_deg(mu['min'])} at θ2 = {_deg(mu['at_crank_deg'])},   "
                               f"max {_deg(mu['max'])} at θ2 = {_deg(mu['max_at_crank_deg'])}")
        if mu["min"] < 40.0 or mu["max"] > 140.0:
            out["transmission"] += "   (outside 40°…140°: poor force transmission there)"
    else:
        out["transmission"] = "— (the loop does not assemble)"
    tg = []
    for t in rep["toggles"]:
        s = f"{t['kind']}: θ2 = {_deg(t['crank_deg'])}"
        if "rocker_deg" in t:
            s += f", θ4 = {_deg(t['rocker_deg'])}"
        tg.append(s)
    out["toggles"] = "\n".join(tg) if tg else "none"
    branch = "open (C left of B→D)" if rep["branch"] == 1 else "crossed"
    out["convention"] = (f"θ2 (crank) and θ4 (rocker) counter-clockwise from the ground line "
                         f"{found.joints[0]}→{found.joints[3]}{_plane(found.normal)}; "
                         f"drawn at θ2 = {_deg(math.degrees(found.theta2_design))}; "
                         f"assembly {branch}")
    return out


def transmission_curve(fb: FourBar, branch: int = 1, samples: int = 721) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(theta2_deg, mu_deg, connect) over a full crank turn, only where the loop assembles; connect[i]: join i to i+1."""
    t2 = np.linspace(-math.pi, math.pi, samples)
    mu, ok = transmission_angle(fb, t2, branch)
    idx = np.flatnonzero(ok)
    connect = np.zeros(len(idx), dtype=bool)
    connect[:-1] = np.diff(idx) == 1  # no line across an interval where the loop does not close
    return np.degrees(t2[idx]), np.degrees(mu[idx]), connect
