"""`linkwright analyze FILE [--json]`: the structure report of a mechanism file."""

from __future__ import annotations

import argparse
import json
import os

from .. import io, structure

NAME = "analyze"
HELP = "print the structure analysis of a mechanism file (incidence matrix, loops, mobility)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `analyze`."""
    parser.add_argument("file", metavar="FILE", help="a Linkwright mechanism file (.json)")
    parser.add_argument("--json", action="store_true", help="print a JSON object instead of the text report")


def report_text(mech, rep: structure.StructureReport, warnings: list[str] | None = None, file: str | None = None) -> str:
    """The human-readable structure report (warnings: those to print, default the report's); its first line is the
    document's name, or without one (a file may leave it empty) the file's name, or 'unnamed mechanism'."""
    title = mech.name or (os.path.basename(file) if file else "") or "unnamed mechanism"
    lines = [f"{title} ({rep.space})", f"bodies: {len(rep.bodies)}, joints: {len(rep.joints)}, loops: {rep.loops}"]
    lines.append(f"mobility: {rep.mobility_formula}")
    lines.append(f"chain: {rep.chain}{' (simple)' if rep.simple and rep.loops else ''}")
    w = max([len(b) for b in rep.bodies] + [6])
    header = " " * (w + 1) + " ".join(f"{j:>4}" for j in rep.joints)
    lines.append("incidence matrix (rows: bodies, columns: joints):")
    lines.append(header)
    for b, row in zip(rep.bodies, rep.incidence):
        lines.append(f"{b:<{w}} " + " ".join(f"{int(x):>4}" for x in row))
    lines.append("degrees: " + ", ".join(f"{b}={d}" for b, d in zip(rep.bodies, rep.degrees)))
    for i, loop in enumerate(rep.fundamental_loops):
        lines.append(f"loop {i + 1}: " + " - ".join(rep.joints[j] for j in loop))
    for w_ in rep.warnings if warnings is None else warnings:
        lines.append(f"warning: {w_}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Load, analyse and print."""
    from ..run import run_kind

    mech = io.load(args.file)
    rep = structure.analyze(mech)
    data = rep.to_json()
    data["name"] = mech.name
    rank = _rank_mobility(mech)
    warnings = rep.warnings
    if rank is not None:
        from ..kinematics.mobility import report_warnings

        data.update(mobility_rank=rank.mobility, redundant_constraints=rank.redundant_constraints,
                    idle_freedoms=rank.idle_freedoms, freedoms_to_drive=rank.freedoms_to_drive,
                    floating_freedoms=rank.floating_freedoms, singular_freedoms=rank.singular_freedoms)
        # the drivers judged by the rank-based count (idle freedoms set aside), as the kinematics' driver check judges
        # them, in place of the Gruebler count's warning (which said the RSSR's motion was not fully determined)
        warnings = data["warnings"] = report_warnings(rep, rank, run_kind(mech) == "contact")
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        print(report_text(mech, rep, [], args.file))
        if rank is not None:
            print(f"mobility (rank of the constraint Jacobian): {rank.mobility}, "
                  f"redundant constraints: {rank.redundant_constraints}")
            # the freedoms the drivers must fix, idle ones set aside, in the words of the kinematics' driver check
            print(f"the mechanism has {rank.freedoms_text()} and {len(mech.drivers)} driver(s)")
        for w in warnings:  # (after the counts they come from)
            print(f"warning: {w}")
    return 0


def _rank_mobility(mech):
    """The kinematics engine's rank-based mobility (core.kinematics.RankMobility), None without that engine."""
    try:
        from ..kinematics import rank_mobility
    except ImportError:
        return None
    return rank_mobility(mech)
