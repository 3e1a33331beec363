"""Four-bar teaching analysis: Grashof class, limits, transmission angle, toggles, closed-form positions, coupler curves.

Layout: ground pivots A = (0, 0) and D = (g, 0); crank AB (length a) at absolute angle theta2, coupler BC (b),
rocker DC (c) at absolute angle theta4. Branch +1 puts C to the left of the line B -> D (the usual "open"
drawing with C above the ground), branch -1 is the crossed assembly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import LinkwrightError
from .model import Mechanism

__all__ = ["FourBar", "closed_form", "closed_form_motion", "transmission_angle", "classify", "report", "coupler_curve", "find_fourbar",
           "grashof_digits", "length_digits", "fixed", "plane_normal", "assembles", "flat_only", "CANNOT_ASSEMBLE", "FLAT_ONLY"]

_EPS = 1e-12
# sine of the angle two pin axes of a four-bar may make and count as parallel: the tolerance a planar document's
# revolute axes have from z (core.model)
_PARALLEL_TOL = 1e-9


@dataclass(frozen=True)
class FourBar:
    """Link lengths of a planar four-bar: ground g, crank a (input), coupler b, rocker c (output)."""

    g: float
    a: float
    b: float
    c: float

    def __post_init__(self) -> None:
        for name in ("g", "a", "b", "c"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                label = {"g": "ground", "a": "crank", "b": "coupler", "c": "rocker"}[name]
                raise LinkwrightError(f"lengths.{label}", f"must be a positive finite length, got {v}")


def closed_form(fb: FourBar, theta2, branch: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(theta3, theta4, assembles) for crank angles theta2 (vector-loop circle intersection); NaN-free."""
    t2 = np.atleast_1d(np.asarray(theta2, dtype=float))
    bx, by = fb.a * np.cos(t2), fb.a * np.sin(t2)
    dx, dy = fb.g - bx, -by
    L = np.hypot(dx, dy)
    ok = _closes(fb, L) & (L > _EPS)
    Ls = np.where(L > _EPS, L, 1.0)
    x = (Ls**2 + fb.b**2 - fb.c**2) / (2 * Ls)
    y = branch * np.sqrt(np.clip(fb.b**2 - x**2, 0.0, None))
    ex, ey = dx / Ls, dy / Ls
    cx, cy = bx + x * ex - y * ey, by + x * ey + y * ex
    t3 = np.arctan2(cy - by, cx - bx)
    t4 = np.arctan2(cy, cx - fb.g)
    return t3, t4, ok


def _closes(fb: FourBar, bd):
    """Whether coupler and rocker reach across the diagonal |BD| = bd (array or number): |b - c| <= bd <= b + c."""
    return (bd <= fb.b + fb.c + _EPS) & (bd >= abs(fb.b - fb.c) - _EPS)


def transmission_angle(fb: FourBar, theta2, branch: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Transmission angle mu (between coupler and rocker, radians) at crank angles theta2, and where the loop closes."""
    t2 = np.asarray(theta2, dtype=float)
    ok = closed_form(fb, t2, branch)[2]
    # |BD|^2 = a^2 + g^2 - 2 a g cos t2 = b^2 + c^2 - 2 b c cos mu (the same for both assembly branches)
    bd2 = fb.a**2 + fb.g**2 - 2 * fb.a * fb.g * np.cos(t2)
    mu = np.arccos(np.clip((fb.b**2 + fb.c**2 - bd2) / (2 * fb.b * fb.c), -1.0, 1.0))
    return mu, ok


def closed_form_motion(fb: FourBar, theta2, omega2, alpha2, branch: int = 1):
    """Angles, angular velocities and accelerations of coupler and rocker from the differentiated vector loop.

    Returns (t3, t4, w3, w4, a3, a4); from a e^{i t2} + b e^{i t3} - c e^{i t4} - g = 0."""
    t2 = np.atleast_1d(np.asarray(theta2, dtype=float))
    t3, t4, _ = closed_form(fb, t2, branch)
    a, b, c = fb.a, fb.b, fb.c
    s34 = np.sin(t3 - t4)
    w3 = a * omega2 * np.sin(t4 - t2) / (b * s34)
    w4 = a * omega2 * np.sin(t3 - t2) / (c * s34)
    # second derivative: b a3 i e3 - c a4 i e4 = -(a a2 i e2 - a w2^2 e2 - b w3^2 e3 + c w4^2 e4) =: r
    rx = -(-a * alpha2 * np.sin(t2) - a * omega2**2 * np.cos(t2) - b * w3**2 * np.cos(t3) + c * w4**2 * np.cos(t4))
    ry = -(a * alpha2 * np.cos(t2) - a * omega2**2 * np.sin(t2) - b * w3**2 * np.sin(t3) + c * w4**2 * np.sin(t4))
    # [-b sin t3, c sin t4; b cos t3, -c cos t4] [a3, a4] = [rx, ry]
    det = b * c * (np.sin(t3) * np.cos(t4) - np.sin(t4) * np.cos(t3))
    a3 = (rx * (-c * np.cos(t4)) - c * np.sin(t4) * ry) / det
    a4 = (-b * np.sin(t3) * ry - b * np.cos(t3) * rx) / det
    return t3, t4, w3, w4, a3, a4


def grashof_digits(rep: dict, digits: int) -> int:
    """The significant digits (at least `digits`) that print s + l and p + q of a report differently unless they are
    equal (a change point): a drawn linkage 5e-5 off the change point printed "2 + 5 = 7 > 3 + 4 = 7"."""
    if rep["grashof"] != "equal":
        while digits < 17 and f"{rep['s_plus_l']:.{digits}g}" == f"{rep['p_plus_q']:.{digits}g}":
            digits += 1
    return digits


def length_digits(rep: dict, digits: int) -> int:
    """The significant digits (at least grashof_digits') that print the report's different lengths differently: the
    lengths 1, 1.0000000001, 1, 1 read "ground 1, crank 1, coupler 1, rocker 1" over a non-Grashof class."""
    digits = grashof_digits(rep, digits)
    values = sorted(set(rep["lengths"].values()))
    while digits < 17 and len({f"{v:.{digits}g}" for v in values}) < len(values):
        digits += 1
    return digits


def fixed(x: float, places: int) -> str:
    """x with `places` decimals, rounded before the sign is written: a tiny negative angle read "-0.0"."""
    r = round(x, places)
    return f"{r if r != 0 else 0.0:.{places}f}"  # (round(-1e-14, 1) is -0.0)


CANNOT_ASSEMBLE = "cannot be assembled (the longest link is longer than the other three together)"
# the longest link exactly as long as the other three: the loop closes only as a straight line, a rigid structure
FLAT_ONLY = "assembles only flat (the longest link equals the other three together: a straight line, where it cannot move)"


def flat_only(fb: FourBar) -> bool:
    """Whether the longest link equals the other three together (to 1e-12 of their length): the loop closes only as a
    straight line, all pivots on it, and cannot move from there (assembles() is False for it)."""
    s, p, q, l = sorted((fb.g, fb.a, fb.b, fb.c))
    return abs(l - (s + p + q)) <= 1e-12 * (p + q)


def assembles(fb: FourBar) -> bool:
    """Whether the four lengths close a loop other than a flat line: the longest shorter than the other three together."""
    s, p, q, l = sorted((fb.g, fb.a, fb.b, fb.c))
    return l < s + p + q - 1e-12 * (p + q)


def classify(fb: FourBar) -> dict:
    """Grashof condition (s, l, p, q), class, and which links fully rotate relative to the ground."""
    links = {"ground": fb.g, "crank": fb.a, "coupler": fb.b, "rocker": fb.c}
    order = sorted(links.items(), key=lambda kv: kv[1])
    (sn, s), (_, p), (_, q), (ln, l) = order
    lhs, rhs = s + l, p + q
    tol = 1e-12 * rhs
    if abs(lhs - rhs) <= tol:
        kind, grashof = "change point", "equal"
    elif lhs < rhs:
        grashof = "grashof"
        kind = {"ground": "double-crank (drag link)", "crank": "crank-rocker", "rocker": "crank-rocker (the rocker turns fully)",
                "coupler": "double-rocker"}[sn]
    else:
        kind, grashof = "triple-rocker (non-Grashof)", "non-grashof"
    if not assembles(fb):  # the loop cannot close (or only as a flat line)
        kind = FLAT_ONLY if flat_only(fb) else CANNOT_ASSEMBLE
    # a shortest link turns fully relative to the others (Grashof and change point): a crank or rocker that is one
    # turns fully against the ground, and both do when the ground is one.  Lengths can tie only in a change point
    # (two shortest links s with s + l < s + q would need l < q): a parallelogram's crank and rocker both turn fully
    shortest = [name for name, v in links.items() if v <= s + tol]
    if grashof == "non-grashof":
        rotating = []
    elif "ground" in shortest:
        rotating = ["crank", "rocker"]
    else:
        rotating = [name for name in ("crank", "rocker") if name in shortest]
    return {"s": s, "l": l, "p": p, "q": q, "shortest": sn, "longest": ln, "s_plus_l": lhs, "p_plus_q": rhs,
            "grashof": grashof, "class": kind, "fully_rotating": rotating}


def _tri_angle(x: float, y: float, opposite: float) -> float | None:
    """Angle between sides x and y of a triangle with the third side `opposite` (None if impossible)."""
    if x * y <= _EPS:  # a side of zero length (e.g. crank = coupler folded): no angle there
        return None
    cosv = (x * x + y * y - opposite * opposite) / (2 * x * y)
    if cosv < -1 - 1e-12 or cosv > 1 + 1e-12:
        return None
    # Kahan's form ("Miscalculating Area and Angles of a Needle-like Triangle", 2014): acos(cosv) loses the angle of
    # a needle-like triangle (sides 1, 1 and 1e-10: cosv rounds to 1, acos gives 0 for 1e-10 rad); the half-angle
    # tangent from differences of the sides, grouped as below, keeps it to a few ulps. Sides within the tolerance
    # above of a flat triangle give 0 or pi.
    a, b = max(x, y), min(x, y)
    c = opposite
    mu = c - (a - b) if b >= c else b - (a - c)
    num = ((a - b) + c) * mu
    den = (a + (b + c)) * ((a - c) + b)
    if num <= 0.0:
        return 0.0
    if den <= 0.0:
        return math.pi
    return 2.0 * math.atan(math.sqrt(num / den))


def _input_range(fb: FourBar) -> list[float] | None:
    """[min, max] crank angle when the crank cannot turn fully (limits: coupler and rocker collinear)."""
    lims = []
    for r in (fb.b + fb.c, abs(fb.b - fb.c)):
        ang = _tri_angle(fb.a, fb.g, r)  # angle at A between AB and AD
        if ang is not None and 1e-12 < ang < math.pi - 1e-12:
            lims.append(ang)
    if not lims:
        return None
    return [-max(lims), max(lims)] if len(lims) == 1 else [min(lims), max(lims)]


def _wrapped_deg(t: float) -> float:
    """The angle t (radians) in degrees in (-180, 180]: one position, one number (a crank at pi was read -180 where
    its sample came from -pi and 180 where it was computed, in one report)."""
    return _wrapped(math.degrees(math.atan2(math.sin(t), math.cos(t))))


def _wrapped(d: float) -> float:
    """The angle d (degrees) in (-180, 180]."""
    d = math.remainder(d, 360.0)
    return 180.0 if d <= -180.0 + 1e-9 else d


def _same_angle(x: float, y: float) -> bool:
    """Whether two angles in degrees are the same direction (to 1e-9 degrees)."""
    return abs(math.remainder(x - y, 360.0)) <= 1e-9


def report(fb: FourBar, branch: int = 1, samples: int = 721, theta2: float | None = None) -> dict:
    """The teaching report: class, rotatable links, rocker limits, transmission angle, toggles (angles in degrees).

    `theta2`: the drawing's crank angle (radians). A crank that stops at two limits on each side of the ground line (a
    Grashof double-rocker) moves on one of two mirror-image circuits, each holding both assembly branches: the side of
    the ground line the drawing is on picks it (default: above, positive crank angles)."""
    cls = classify(fb)
    out: dict = {"lengths": {"ground": fb.g, "crank": fb.a, "coupler": fb.b, "rocker": fb.c}, **cls}
    if not assembles(fb):  # no configuration: nothing below (ranges, limits, angles, toggles) exists
        return {**out, "crank_range_deg": None, "rocker_limits_deg": None, "rocker_swing_deg": None,
                "rocker_swing_through_deg": None,
                "transmission_angle_deg": None, "toggles": [], "branch": branch}
    deg = math.degrees
    full_crank = "crank" in cls["fully_rotating"]
    rng = None if full_crank else _input_range(fb)
    sign = branch  # of the rocker's and crank's angles at the toggles below
    if rng is not None and rng[0] > 0:  # two circuits (each with both branches): its angles have the sign of its side
        sign = -1 if theta2 is not None and math.sin(theta2) < 0 else 1
        rng = sorted(sign * x for x in rng)
    if full_crank:
        t2 = np.linspace(-math.pi, math.pi, samples)
    elif rng is not None:
        t2 = np.linspace(rng[0], rng[1], samples)
        # the range found may be the excluded side: keep the side that assembles, told by |BD| at its middle (not by
        # closed_form, which has no position where B meets D: the middle of a kite's range, g = a and b = c, where
        # the range is its complement's otherwise)
        mid = 0.5 * (rng[0] + rng[1])
        if not _closes(fb, math.sqrt(max(fb.a**2 + fb.g**2 - 2 * fb.a * fb.g * math.cos(mid), 0.0))):
            t2 = np.linspace(rng[1], 2 * math.pi + rng[0], samples)
    else:
        t2 = np.linspace(-math.pi, math.pi, samples)
    mu, ok = transmission_angle(fb, t2, branch)
    t2, mu = t2[ok], mu[ok]
    out["crank_range_deg"] = None if full_crank or rng is None else [deg(float(t2.min())), deg(float(t2.max()))]
    # rocker limits: crank and coupler collinear (extended |AC| = a + b, folded |AC| = |b - a|)
    limits = []
    arcs = []  # the limits as the rocker reaches them: in [0, 180] degrees on branch 1, [180, 360] on branch -1
    toggles = []
    for name, r in (("extended", fb.a + fb.b), ("folded", abs(fb.b - fb.a))):
        ang_d = _tri_angle(fb.g, fb.c, r)  # angle at D between DA and DC
        ang_a = _tri_angle(fb.g, r, fb.c)  # angle at A between AD and AC
        if ang_d is None or ang_a is None:
            continue
        t4l = math.pi - sign * ang_d
        # B lies on the ray A -> C when extended, or folded with the crank longer than the coupler; else opposite C.
        # (Folded with a > b is reached on the other assembly branch of the same circuit, as in a double-rocker.)
        t2l = sign * ang_a if name == "extended" or fb.a > fb.b else sign * ang_a + math.pi
        arcs.append(math.degrees(t4l))
        limits.append(_wrapped_deg(t4l))
        toggles.append({"kind": f"crank and coupler {name}", "crank_deg": _wrapped_deg(t2l), "rocker_deg": limits[-1]})
    # the swing and the middle of the arc the rocker sweeps, from the limits as reached (not as printed: a limit at
    # 180 degrees on branch -1 is the end at -180 of an arc below the ground line, and "swing 270 through 45" was read
    # where it swings 90 through -135); the limits +-L of a triple-rocker are alike whether it swings through 0 or
    # through 180 degrees (its swing 2 L or 360 - 2 L tells), and "-96.6, 96.6" alone was read the wrong way
    swing = abs(arcs[0] - arcs[1]) if len(arcs) == 2 else None
    through = _wrapped(0.5 * (arcs[0] + arcs[1])) if len(arcs) == 2 else None
    if len(limits) == 1 and cls["grashof"] != "grashof":
        # One collinear position only: the circuit joins its mirror image, so the rocker swings between +-limit,
        # through 0 when the extended position is missing (a + b > g + c), else through 180 degrees.
        mirror = dict(toggles[-1], crank_deg=_wrapped(-toggles[-1]["crank_deg"]), rocker_deg=_wrapped(-limits[0]))
        if not all(_same_angle(mirror[k], toggles[-1][k]) for k in ("crank_deg", "rocker_deg")):
            toggles.append(mirror)  # (a rhombus' one toggle, crank 0 and rocker 180 degrees, is its own mirror)
        missing_extended = toggles[-1]["kind"].endswith("folded")
        swing = 2 * abs(limits[0]) if missing_extended else 2 * (180.0 - abs(limits[0]))
        through = 0.0 if missing_extended else 180.0
        limits.append(_wrapped(-limits[0]))
    if rng is not None and not full_crank:
        for lim in rng:
            toggles.append({"kind": "coupler and rocker collinear (crank limit)", "crank_deg": deg(lim)})
    out["rocker_limits_deg"] = sorted(limits) if "rocker" not in cls["fully_rotating"] and limits else None
    out["rocker_swing_deg"] = swing if out["rocker_limits_deg"] else None
    out["rocker_swing_through_deg"] = through if out["rocker_limits_deg"] else None
    if len(mu):
        # mu depends on the crank angle only through |BD|^2 = a^2 + g^2 - 2 a g cos t2, and grows with it: its
        # extremes are at t2 = 0 and 180 degrees where the crank reaches them, else at the ends of its range (which
        # the samples hold), and are chosen by cos t2, not by the sampled mu: where mu is flat (a crank of 1e-6
        # against links of 1e6) the sample at -0.5 degrees tied with t2 = 0 and was given as the minimum's place.
        # The exact angles come first, so that a sample a rounding away from 0 (-1e-14) does not win the tie either;
        # and a rhombus' minimum, 0 at t2 = 0 where B meets D and the closed form is degenerate, is taken there
        lo_t, hi_t = float(t2.min()), float(t2.max())
        exact = [t for t in (0.0, math.pi) if full_crank or any(lo_t < t + k * 2 * math.pi < hi_t for k in (-1, 0, 1))]
        if exact:
            t2 = np.concatenate((exact, t2))
            mu = np.concatenate((transmission_angle(fb, np.array(exact), branch)[0], mu))
        i, j = int(np.argmax(np.cos(t2))), int(np.argmin(np.cos(t2)))
        out["transmission_angle_deg"] = {"min": deg(float(mu[i])), "at_crank_deg": _wrapped_deg(float(t2[i])),
                                         "max": deg(float(mu[j])), "max_at_crank_deg": _wrapped_deg(float(t2[j]))}
    else:
        out["transmission_angle_deg"] = None
    out["toggles"] = toggles
    out["branch"] = branch
    return out


def coupler_curve(fb: FourBar, point: tuple[float, float], theta2=None, branch: int = 1) -> np.ndarray:
    """Path (k, 2) of a coupler point given as (along BC, left of BC) from B, over crank angles (assembling only)."""
    t2 = np.linspace(-math.pi, math.pi, 361) if theta2 is None else np.atleast_1d(np.asarray(theta2, dtype=float))
    t3, _, ok = closed_form(fb, t2, branch)
    u, v = point
    x = fb.a * np.cos(t2) + u * np.cos(t3) - v * np.sin(t3)
    y = fb.a * np.sin(t2) + u * np.sin(t3) + v * np.cos(t3)
    return np.column_stack((x, y))[ok]


@dataclass(frozen=True)
class FoundFourBar:
    """A four-bar found in a document: lengths and which bodies/joints play which role."""

    fourbar: FourBar
    ground: str
    crank: str
    coupler: str
    rocker: str
    joints: tuple[str, str, str, str]  # A (ground-crank), B, C, D (rocker-ground)
    theta2_design: float  # absolute crank angle in the design configuration (from the line A -> D)
    branch: int  # assembly branch of the design drawing
    # unit normal of the plane it moves in (along the pins): angles are counter-clockwise seen from its tip (see
    # plane_normal: +z in a planar document, -y for a four-bar drawn in the x-z plane, seen from the front)
    normal: tuple[float, float, float] = (0.0, 0.0, 1.0)


def plane_normal(axis) -> np.ndarray:
    """The unit normal, along the pin `axis`, from whose tip the four-bar's angles are counter-clockwise: the normal
    e_i x e_j of the world plane nearest to its plane, with i before j in x, y, z (+z for the x-y plane: x right, y up;
    -y for x-z: x right, z up, the 3D view's front; +x for y-z: y right, z up), whichever way the pins point. (The
    axis of joint A as given would read a four-bar drawn in x-z like the planar example as its mirror image, the
    crossed assembly at -60 degrees, to a teacher looking at it from the front.)"""
    n = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    k = int(np.argmax(np.abs(n)))  # the world axis nearest to the pins (the first of equals)
    return n * (np.sign(n[k]) * (-1.0 if k == 1 else 1.0)) + 0.0  # (+ 0.0: no -0.0 components)


def find_fourbar(mech: Mechanism) -> FoundFourBar:
    """The four-bar of `mech` (4 revolute joints with parallel axes in one loop of 4 bodies, one of them ground), or
    LinkwrightError. Bodies that no joint attaches (free parts for contact) are left out; in a spatial document it is
    analysed in the plane normal to its pins, offsets along them left out."""
    if len(mech.joints) != 4 or any(j.type != "revolute" for j in mech.joints):
        raise LinkwrightError("joints", "a four-bar has exactly 4 bodies and 4 revolute joints")
    jointed = {name for j in mech.joints for name in j.bodies}
    if len(jointed) != 4:
        raise LinkwrightError("joints", "a four-bar has exactly 4 bodies and 4 revolute joints")
    grounds = [b.name for b in mech.bodies if b.ground and b.name in jointed]
    if len(grounds) != 1:
        raise LinkwrightError("bodies", "a four-bar needs exactly one ground body")
    g = grounds[0]
    at_ground = [j for j in mech.joints if g in j.bodies]
    if len(at_ground) != 2:
        raise LinkwrightError("joints", "the ground must carry exactly two joints")
    driven = {d.joint for d in mech.drivers}
    ja, jd = sorted(at_ground, key=lambda j: (j.name not in driven, mech.joints.index(j)))
    crank, rocker = ja.other(g), jd.other(g)
    rest = [j for j in mech.joints if j not in (ja, jd)]
    jb = next((j for j in rest if crank in j.bodies), None)
    jc = next((j for j in rest if rocker in j.bodies), None)
    if jb is None or jc is None or jb is jc:
        raise LinkwrightError("joints", "the joints do not form a single four-bar loop")
    coupler = jb.other(crank)
    if jc.other(rocker) != coupler:
        raise LinkwrightError("joints", "the joints do not form a single four-bar loop")
    spatial = mech.space != "planar"
    # (a planar document's axes are along z, to 1e-9: its plane is the x-y plane exactly)
    n = plane_normal(ja.axis_vector()) if spatial else np.array((0.0, 0.0, 1.0))
    if spatial:
        for j in (jb, jc, jd):
            if np.linalg.norm(np.cross(n, j.axis_vector())) > _PARALLEL_TOL:
                raise LinkwrightError(f"joints[{mech.joints.index(j)}].axis",
                                      f"the axis of joint {j.name} is not parallel to the axis of joint {ja.name}: "
                                      f"a planar four-bar turns about parallel pins")
    # the joints seen along the pins (projected onto the plane through the origin normal to them)
    A, B, C, D = (p - (p @ n) * n for p in (np.array(j.at, dtype=float) for j in (ja, jb, jc, jd)))
    lengths = [float(np.linalg.norm(D - A)), float(np.linalg.norm(B - A)), float(np.linalg.norm(C - B)),
               float(np.linalg.norm(C - D))]
    seen = " seen along the pins" if spatial else ""
    for length, role, (p, q) in zip(lengths, ("ground", "crank", "coupler", "rocker"), ((ja, jd), (ja, jb), (jb, jc), (jc, jd))):
        if not length > 0:  # (FourBar's own refusal named no joint: "must be a positive finite length, got 0.0")
            raise LinkwrightError("joints", f"joints {p.name} and {q.name} are at the same point{seen}: "
                                            f"the {role} has no length")
    fb = FourBar(*lengths)
    ex = (D - A) / fb.g
    ey = np.cross(n, ex)  # (x along A -> D, y a quarter turn counter-clockwise from it about n)
    rel = lambda v: np.array([v @ ex, v @ ey])  # noqa: E731
    b2, c2, d2 = rel(B - A), rel(C - A), rel(D - A)
    theta2 = math.atan2(b2[1], b2[0])
    side = (d2[0] - b2[0]) * (c2[1] - b2[1]) - (d2[1] - b2[1]) * (c2[0] - b2[0])
    return FoundFourBar(fb, g, crank, coupler, rocker, (ja.name, jb.name, jc.name, jd.name), theta2, 1 if side > 0 else -1,
                        tuple(float(x) for x in n))
