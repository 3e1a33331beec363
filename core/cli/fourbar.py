"""`linkwright fourbar --lengths G A B C`: the four-bar teaching report (Grashof class, limits, transmission angle)."""

from __future__ import annotations

import argparse
import json

from .. import validate
from ..errors import LinkwrightError
from ..fourbar import FourBar, assembles, classify, fixed, flat_only, grashof_digits, length_digits, report

NAME = "fourbar"
HELP = "four-bar teaching report: Grashof condition, class, rotating links, limits, transmission angle, toggles"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `fourbar`."""
    parser.add_argument("--lengths", nargs=4, type=float, required=True, metavar=("GROUND", "CRANK", "COUPLER", "ROCKER"),
                        help="link lengths")
    parser.add_argument("--branch", type=int, choices=(1, -1), default=1, help="assembly branch (+1 open, -1 crossed)")
    parser.add_argument("--json", action="store_true", help="print a JSON object")


def text(rep: dict) -> str:
    """The human-readable report."""
    L = rep["lengths"]
    dl = length_digits(rep, 6)  # (lengths that differ print differently: never "ground 1, crank 1, coupler 1,
    # rocker 1" over a non-Grashof class)
    d = grashof_digits(rep, 6)  # (as many digits as tell s + l from p + q: never "7 > 7")
    f = lambda x: fixed(x, 3)  # noqa: E731  (angles: no "-0.000")
    lines = [f"four-bar: ground {L['ground']:.{dl}g}, crank {L['crank']:.{dl}g}, coupler {L['coupler']:.{dl}g}, "
             f"rocker {L['rocker']:.{dl}g}",
             f"s + l = {rep['s']:.{d}g} + {rep['l']:.{d}g} = {rep['s_plus_l']:.{d}g}; p + q = {rep['p']:.{d}g} + "
             f"{rep['q']:.{d}g} = {rep['p_plus_q']:.{d}g} ({rep['grashof']})",
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
        others = f"{c['s']:g} + {c['p']:g} + {c['q']:g} = {c['s'] + c['p'] + c['q']:g}"
        if flat_only(fb):
            raise LinkwrightError("--lengths", f"a four-bar of these lengths assembles only flat, as a straight line "
                                               f"where it cannot move: the longest link ({c['longest']} {c['l']:g}) "
                                               f"equals the other three together ({others})")
        raise LinkwrightError("--lengths", f"a four-bar cannot be assembled from these lengths: the longest link "
                                           f"({c['longest']} {c['l']:g}) is longer than the other three together "
                                           f"({others})")
    rep = report(fb, branch=args.branch)
    print(json.dumps(rep, indent=2) if args.json else text(rep))
    return 0
