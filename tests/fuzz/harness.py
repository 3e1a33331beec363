"""Running the `linkwright` command in-process and judging its outcome the way the fuzzing campaign did.

Every outcome must be: status 0, 2 or 3; for 2, one located message line ("error: where: what", or argparse's
usage error); never a traceback or a Python warning; finished within a bound; no non-finite number in any output
(standard output or the files the command wrote)."""

from __future__ import annotations

import contextlib
import io as pyio
import json
import math
import re
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

CPU_BOUND = 60.0  # s of CPU for one command; the campaign's hangs ran for minutes
_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


@dataclass
class Outcome:
    """What one command did."""

    argv: list[str]
    status: int
    stdout: str
    stderr: str
    cpu: float
    outputs: list[Path] = field(default_factory=list)


def run_cli(argv: list[str], outputs: list[Path] | None = None) -> Outcome:
    """Run `linkwright ARGV` in this process (the console script's code path) and capture what it printed."""
    from app.cli import main

    out, err = pyio.StringIO(), pyio.StringIO()
    t0 = time.process_time()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            status = main(list(argv))
        except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
            status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    text = err.getvalue() + "".join(f"{w.filename}:{w.lineno}: {w.category.__name__}: {w.message}\n" for w in caught)
    return Outcome(list(argv), int(status), out.getvalue(), text, time.process_time() - t0, list(outputs or []))


def check(o: Outcome, cpu_bound: float = CPU_BOUND) -> None:
    """Assert the promise of the README for one outcome (the assertion message says which part failed)."""
    where = f"linkwright {' '.join(a[:60] for a in o.argv)}"
    assert o.status in (0, 2, 3), f"{where}: status {o.status}\n{o.stderr}"
    assert "Traceback" not in o.stderr and "Warning:" not in o.stderr, f"{where}:\n{o.stderr}"
    assert o.cpu < cpu_bound, f"{where}: {o.cpu:.1f} s of CPU"
    if o.status == 2:
        lines = [ln for ln in o.stderr.splitlines() if ln.strip()]
        messages = [ln for ln in lines if ln.startswith("error: ") or ": error: " in ln]
        assert len(messages) == 1, f"{where}: expected one error line, got:\n{o.stderr}"
        usage = [ln for ln in lines if ln not in messages]
        assert all(ln.startswith(("usage:", " ")) for ln in usage), f"{where}: stray output:\n{o.stderr}"
        assert len(messages[0]) > len("error: ") + 3, f"{where}: empty message"
    assert_finite_text(o.stdout, where)
    for p in o.outputs:
        if p.is_file():
            assert_finite_file(p, where)


def assert_finite_text(text: str, where: str) -> None:
    """No NaN or infinity in CSV or JSON text."""
    s = text.strip()
    if not s:
        return
    if s[0] in "[{":
        def bad(name: str) -> float:
            raise AssertionError(f"{where}: non-finite number {name} in the JSON output")

        json.loads(s, parse_constant=bad)
        return
    for line in s.splitlines()[1:]:
        for cell in line.split(","):
            c = cell.strip().strip('"').lower()
            if c in ("nan", "inf", "-inf", "+inf", "infinity", "-infinity"):
                raise AssertionError(f"{where}: non-finite number in the output: {line[:200]}")
            if _NUMBER.match(c):
                assert math.isfinite(float(c)), f"{where}: non-finite number in the output: {line[:200]}"


def assert_finite_file(p: Path, where: str) -> None:
    """No non-finite number in a written .csv or .npz file."""
    if p.read_bytes()[:2] == b"PK":  # a .npz (zip) archive
        with np.load(p, allow_pickle=False) as d:
            for k in d.files:
                a = d[k]
                if a.dtype.kind == "f":
                    assert np.isfinite(a).all(), f"{where}: non-finite {k} in {p.name}"
    else:
        assert_finite_text(p.read_text(encoding="utf-8", errors="replace"), where)

__all__ = ["Outcome", "run_cli", "check", "assert_finite_text", "assert_finite_file", "CPU_BOUND"]
