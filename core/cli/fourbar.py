"""`linkwright fourbar --lengths G A B C`: the four-bar teaching report (Grashof class, limits, transmission angle)."""

from __future__ import annotations

import argparse
import json
import math
from decimal import Decimal
from typing import Sequence

from .. import validate
from ..errors import LinkwrightError
from ..fourbar import FourBar, assembles, classify, fixed, flat_only, report

NAME = "fourbar"
HELP = "four-bar teaching report: Grashof condition, class, rotating links, limits, transmission angle, toggles"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `fourbar`."""
    parser.add_argument("--lengths", nargs=4, type=float, required=True, metavar=("GROUND", "CRANK", "COUPLER", "ROCKER"),
                        help="link lengths")
    parser.add_argument("--branch", type=int, choices=(1, -1), default=1, help="assembly branch (+1 open, -1 crossed)")
    parser.add_argument("--json", action="store_true", help="print a JSON object")


def plain(x: float | Decimal, places: int) -> str:
    """x to `places` decimals without an exponent and without trailing zeros: 1000000, not 1e+06; 1.0000001."""
    t = f"{x:.{places}f}"
    if "." in t:
        t = t.rstrip("0").rstrip(".")
    return "0" if t == "-0" else t


def sum_text(terms: Sequence[float], places: int) -> str:
    """The sum of the terms as they print (plain, `places` decimals), exactly: the printed equation is true (the
    sums printed with 6 significant digits read '1 + 1e+06 = 1e+06', and '1 + 999999 = 1000000' for a rocker of
    1.0000001)."""
    return plain(sum(Decimal(plain(t, places)) for t in terms), places)


def report_places(values: Sequence[float], order: Sequence[tuple[Sequence[float], Sequence[float], int]] = ()) -> int:
    """The decimal places the numbers of a report print with (plain): at least those giving the smallest of
    `values` 6 significant digits, and as many more as print its different values differently (never "ground 1,
    crank 1, coupler 1, rocker 1" over a non-Grashof class) and give each (left terms, right terms, sign) of `order`
    printed sums that compare as `sign` says (-1 less, 1 greater: never "7 > 7")."""
    nonzero = [abs(v) for v in values if v]
    places = max(0, 5 - math.floor(math.log10(min(nonzero)))) if nonzero else 0

    def holds(k: int) -> bool:
        if len({plain(v, k) for v in values}) < len(set(values)):
            return False
        for left, right, sign in order:
            d = Decimal(sum_text(left, k)) - Decimal(sum_text(right, k))
            if (d > 0) - (d < 0) != sign:
                return False
        return True

    last = places + 30
    while places < last and not holds(places):
        places += 1
    return places


def text(rep: dict) -> str:
    """The human-readable report."""
    L = rep["lengths"]
    sl, pq = (rep["s"], rep["l"]), (rep["p"], rep["q"])
    sign = {"grashof": -1, "non-grashof": 1}.get(rep["grashof"])
    k = report_places(list(L.values()), [(sl, pq, sign)] if sign else [])
    n = lambda x: plain(x, k)  # noqa: E731
    f = lambda x: fixed(x, 3)  # noqa: E731  (angles: no "-0.000")
    lines = [f"four-bar: ground {n(L['ground'])}, crank {n(L['crank'])}, coupler {n(L['coupler'])}, "
             f"rocker {n(L['rocker'])}",
             f"s + l = {n(rep['s'])} + {n(rep['l'])} = {sum_text(sl, k)}; p + q = {n(rep['p'])} + "
             f"{n(rep['q'])} = {sum_text(pq, k)} ({rep['grashof']})",
             f"class: {rep['class']}",
             f"fully rotating links: {', '.join(rep['fully_rotating']) or 'none'}"]
    if rep["crank_range_deg"]:
        lines.append("crank range: {} .. {} deg".format(*map(f, rep["crank_range_deg"])))
    if rep["rocker_limits_deg"]:
        # the swing and the angle in its middle: a triple-rocker's limits -L, L are alike for a swing through 0 and
        # one through 180 degrees
        lines.append("rocker limit angles: " + ", ".join(f(a) for a in rep["rocker_limits_deg"]) +
                     f" deg (swing {f(rep['rocker_swing_deg'])} deg, through {f(rep['rocker_swing_through_deg'])} deg)")
    mu = rep["transmission_angle_deg"]
    if mu:
        lines.append(f"transmission angle: min {f(mu['min'])} deg at crank {f(mu['at_crank_deg'])} deg, "
                     f"max {f(mu['max'])} deg at crank {f(mu['max_at_crank_deg'])} deg")
    for tg in rep["toggles"]:
        lines.append(f"toggle: {tg['kind']} at crank {f(tg['crank_deg'])} deg")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Print the report; lengths that cannot be assembled are bad input (status 2), with no report."""
    lengths = [validate.number(x, f"--lengths[{i}]", validate.MIN_DIMENSION, validate.MAX_DIMENSION, positive=True)
               for i, x in enumerate(args.lengths)]
    fb = FourBar(*lengths)
    if not assembles(fb):
        c = classify(fb)
        three = (c["s"], c["p"], c["q"])
        k = report_places(lengths, [] if flat_only(fb) else [((c["l"],), three, 1)])
        others = f"{plain(c['s'], k)} + {plain(c['p'], k)} + {plain(c['q'], k)} = {sum_text(three, k)}"
        if flat_only(fb):
            raise LinkwrightError("--lengths", f"a four-bar of these lengths assembles only flat, as a straight line "
                                               f"where it cannot move: the longest link ({c['longest']} {plain(c['l'], k)}) "
                                               f"equals the other three together ({others})")
        raise LinkwrightError("--lengths", f"a four-bar cannot be assembled from these lengths: the longest link "
                                           f"({c['longest']} {plain(c['l'], k)}) is longer than the other three together "
                                           f"({others})")
    rep = report(fb, branch=args.branch)
    print(json.dumps(rep, indent=2) if args.json else text(rep))
    return 0
