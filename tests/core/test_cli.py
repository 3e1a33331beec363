"""The `linkwright` command as a user runs it: help, version, analyze, and bad input with status 2."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core import __version__, io, structure
from tests.conftest import EXAMPLES, ROOT
from tests.terminal import run_on_terminal, signal_when


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    # Run the installed entry point's module so the test uses the same code path as the console script.
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, cwd=ROOT, input=stdin, timeout=120)


def test_version_and_help():
    r = run("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"linkwright {__version__}"
    r = run("--help")
    assert r.returncode == 0 and "analyze" in r.stdout and "--screenshot" in r.stdout


def test_every_subcommand_has_help():
    from core.cli import commands

    for name in commands():
        r = run(name, "--help")
        assert r.returncode == 0, (name, r.stderr)
        assert r.stdout.startswith(f"usage: linkwright {name}")


def test_headless_commands_do_not_import_qt():
    code = "import sys; from app.cli import main; main(['analyze', sys.argv[1]]); assert 'PySide6' not in sys.modules, 'Qt imported'"
    r = subprocess.run([sys.executable, "-c", code, str(EXAMPLES / "fourbar.json")], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.json")), ids=lambda p: p.stem)
def test_analyze_json_matches_the_core(path):
    r = run("analyze", "--json", str(path))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    rep = structure.analyze(io.load(path))
    for key in ("space", "bodies", "joints", "incidence", "mobility", "mobility_formula", "loops", "fundamental_loops", "chain",
                "degrees", "warnings"):
        assert key in data
    assert data["mobility"] == rep.mobility and data["incidence"] == rep.incidence.tolist()
    assert data["chain"] in ("open", "closed", "mixed")
    from core.kinematics import rank_mobility

    r = rank_mobility(io.load(path))
    assert (data["mobility_rank"], data["redundant_constraints"]) == (r.mobility_rank, r.redundant_constraints)
    assert (data["freedoms_to_drive"], data["floating_freedoms"]) == (r.freedoms_to_drive, r.floating_freedoms)
    assert data["singular_freedoms"] == r.singular_freedoms  # (a four-bar drawn flat with l = s + p + q has 2)


def test_analyze_text_report():
    r = run("analyze", str(EXAMPLES / "fourbar.json"))
    assert r.returncode == 0
    assert "M = 3(4-1) - 2·4 = 1" in r.stdout and "incidence matrix" in r.stdout


def test_bad_file_gives_located_message_and_status_2(tmp_path, fourbar_dict):
    fourbar_dict["joints"][2]["bodies"][1] = "cranck"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(fourbar_dict))
    r = run("analyze", str(bad))
    assert r.returncode == 2
    assert r.stderr.strip() == "error: joints[2].bodies[1]: unknown body 'cranck' (known: ground, crank, coupler, rocker)"
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_missing_file_and_bad_arguments_status_2(tmp_path):
    r = run("analyze", str(tmp_path / "nope.json"))
    assert r.returncode == 2 and "no such file" in r.stderr and "Traceback" not in r.stderr
    r = run("analyze")
    assert r.returncode == 2 and "usage" in r.stderr


def test_a_mistyped_command_is_named_not_opened_as_a_file():
    r = run("analyse", str(EXAMPLES / "fourbar.json"))
    assert r.returncode == 2 and "'analyse' is not a command" in r.stderr and "did you mean 'analyze'" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_terminated_run_leaves_the_old_file_or_the_rows_solved_and_no_temporary_file(tmp_path):
    """`kinematics --csv` solves into a temporary file beside OUT; a SIGTERM (kill, a CI timeout) ends the command
    like Ctrl+C, with no traceback and no temporary file left: before the solve starts OUT keeps its old content and
    the message is `terminated`; during it the rows solved so far replace OUT and the message says how many (the
    signal lands in one or the other, 0.26 s of setting up or the 1,000,000 frames' solve)."""
    import re
    import signal
    import time

    out = tmp_path / "out.csv"
    out.write_text("old\n")
    p = subprocess.Popen([sys.executable, "-m", "app", "kinematics", str(EXAMPLES / "jansen.json"), "--steps",
                          "1000000", "--csv", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(".out.csv.*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(tmp_path.glob(".out.csv.*")), "the run did not start writing"
        time.sleep(0.5)  # setting up or solving, a few hundred of its million frames solved
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 128 + signal.SIGTERM and "Traceback" not in err
    assert sorted(x.name for x in tmp_path.iterdir()) == ["out.csv"]
    if err.strip() == "terminated":
        assert out.read_text() == "old\n"
    else:
        m = re.fullmatch(r"terminated at t = (\S+) s \((\d+) rows written\)", err.strip())
        assert m, err
        rows = out.read_text().splitlines()[1:]
        assert len(rows) == int(m[2]) > 0 and float(rows[-1].split(",")[0]) == float(m[1])


def _cli_args(*argv: str):
    from core.cli import build_parser

    return build_parser()[0].parse_args(list(argv))


@pytest.mark.parametrize("sig, word", [("SIGINT", "interrupted"), ("SIGTERM", "terminated")])
def test_a_signal_during_simulate_writes_the_rows_so_far_and_says_when(tmp_path, monkeypatch, capsys, sig, word):
    """Ctrl+C (or SIGTERM) during a run used to throw every computed row away with the word 'interrupted', and could
    land inside a numba dispatcher, a SystemError traceback and status 1. The signal now stops the run through its
    cancel callable: the rows computed before it are written, as for a run stopped early, and stderr says when.
    The signal comes here once row 40 is recorded (t = 0.4 s at dt = 0.01 s)."""
    import signal

    from core.cli import run_command
    from core.cli import simulate as sim_cli

    signum = getattr(signal, sig)

    def progress(k, n):
        if k == 40:
            signal.raise_signal(signum)

    progress.open = False
    monkeypatch.setattr(sim_cli, "_progress_bar", lambda: progress)
    out = tmp_path / "run.csv"
    out.write_text("old\n")
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    status = run_command(_cli_args("simulate", str(EXAMPLES / "contact_sphere_drop.json"), "--t-end", "1", "--out",
                                   str(out)))
    err = capsys.readouterr().err
    assert status == 128 + signum, err
    assert err.strip() == f"{word} at t = 0.4 s (41 rows written)"
    rows = out.read_text().splitlines()
    assert rows[0].startswith("t,ball.x,") and len(rows) == 1 + 41 and rows[-1].startswith("0.4,")
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before  # handlers given back


@pytest.mark.parametrize("sig, word", [("SIGINT", "interrupted"), ("SIGTERM", "terminated")])
def test_a_signal_during_kinematics_writes_the_rows_so_far_and_says_when(tmp_path, monkeypatch, capsys, sig, word):
    """As simulate: the frames solved before the signal (here once frame 30 of 100 over 1 s is solved) are written,
    to --csv OUT (its temporary file renamed onto it) and to stdout."""
    import signal

    from core.cli import run_command
    from core.kinematics import TrajectoryRun

    signum = getattr(signal, sig)
    real = TrajectoryRun._frame

    def frame(self, k, s):
        if k == 30:
            signal.raise_signal(signum)
        return real(self, k, s)

    monkeypatch.setattr(TrajectoryRun, "_frame", frame)
    out = tmp_path / "traj.csv"
    status = run_command(_cli_args("kinematics", str(EXAMPLES / "fourbar.json"), "--csv", str(out)))
    err = capsys.readouterr().err
    assert status == 128 + signum and err.strip() == f"{word} at t = 0.3 s (31 rows written)", err
    rows = out.read_text().splitlines()
    assert len(rows) == 1 + 31 and rows[-1].startswith("0.3,") and sorted(p.name for p in tmp_path.iterdir()) == [
        "traj.csv"]
    status = run_command(_cli_args("kinematics", str(EXAMPLES / "fourbar.json")))
    cap = capsys.readouterr()
    assert status == 128 + signum and cap.err.strip() == f"{word} at t = 0.3 s (31 rows written)"
    assert len(cap.out.splitlines()) == 1 + 31


def test_a_signal_that_becomes_a_numba_system_error_is_still_an_interruption(capsys):
    """A KeyboardInterrupt raised while compiled code called back into Python comes out of the dispatcher as a
    SystemError caused by it (a signal before the run, while the kernels load): 'interrupted' and 130, no traceback."""
    import argparse

    from core.cli import run_command

    def run(_args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise SystemError("CPUDispatcher(<function body_rows>) returned a result with an exception set") from exc

    status = run_command(argparse.Namespace(_run=run))
    assert status == 130 and capsys.readouterr().err.strip() == "interrupted"


def test_a_signal_dropped_before_the_run_stops_it_from_starting(capsys):
    """Python drops an exception raised in a weakref or ctypes callback ('Exception ignored ...'): a Ctrl+C that fell
    there while the kernels loaded was lost and the run went on to its end with status 0. The command notes the
    signal and ends when the run would start."""
    import argparse
    import signal

    from core.cli import cancel_requested, run_command, run_interruptibly

    started = []

    def run(_args):
        try:
            signal.raise_signal(signal.SIGINT)  # its KeyboardInterrupt dropped, as by a callback
        except KeyboardInterrupt:
            pass
        with run_interruptibly():
            started.append(cancel_requested())
        return 0

    status = run_command(argparse.Namespace(_run=run))
    assert status == 130 and not started and capsys.readouterr().err.strip() == "interrupted"


@pytest.mark.parametrize("entry", ["app.cli", "core.cli"])
@pytest.mark.parametrize("sig, word", [("SIGINT", "interrupted"), ("SIGTERM", "terminated")])
def test_a_signal_while_the_commands_load_is_a_word_not_a_traceback(entry, sig, word):
    """Ctrl+C in the first ~0.6 s (the commands' modules importing numpy, sympy, ...) printed a KeyboardInterrupt
    traceback, and SIGTERM killed the process without a word: now 'interrupted' and 130, 'terminated' and 143, as
    later on. (The signal comes as the commands load, in a process of its own.)"""
    import signal

    code = ("import signal, sys, core.cli as c, importlib\n"
            "real = c.build_parser\n"
            "def build_parser(*a, **k):\n"
            f"    signal.raise_signal(signal.{sig})\n"
            "    return real(*a, **k)\n"
            "c.build_parser = build_parser\n"
            f"sys.exit(importlib.import_module('{entry}').main(['analyze', sys.argv[1]]))\n")
    r = subprocess.run([sys.executable, "-c", code, str(EXAMPLES / "fourbar.json")], capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    assert r.returncode == 128 + getattr(signal, sig) and r.stderr.strip() == word, r.stderr
    assert r.stdout == ""


def _start_up_with(sig: str, patch: str, entry: str = "app.cli") -> subprocess.CompletedProcess:
    """`analyze fourbar.json` in a process of its own, `patch` (Python run first, with `sig` the signal's name, `c`
    core.cli and `signal` imported) arranging for the signal to come at a given moment of the start-up."""
    code = (f"import signal, sys, importlib, core.cli as c\nsig = signal.{sig}\n{patch}\n"
            f"sys.exit(importlib.import_module('{entry}').main())\n")
    return subprocess.run([sys.executable, "-c", code, "analyze", str(EXAMPLES / "fourbar.json")],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


_CHAINED = """real = c.build_parser
def build_parser(*a, **k):
    try:
        signal.raise_signal(sig)  # as numpy's import turns it into 'bad install', dataclasses into a RuntimeError
    except BaseException as exc:
        raise ImportError("Importing the numpy C-extensions failed ... bad install") from exc
    return real(*a, **k)
c.build_parser = build_parser"""

_SWALLOWED = """real = c.build_parser
def build_parser(*a, **k):
    try:
        signal.raise_signal(sig)
    except BaseException:  # a library (or a callback Python drops the exception of) swallows it
        pass
    return real(*a, **k)
c.build_parser = build_parser"""

_REPLACED = """real = c.build_parser
def build_parser(*a, **k):
    failed = False
    try:
        signal.raise_signal(sig)
    except BaseException:  # numpy's C extension: the signal's exception replaced, not chained
        failed = True
    if failed:
        raise ImportError("PyCapsule_Import could not import module 'datetime' ... bad install")
    return real(*a, **k)
c.build_parser = build_parser"""

_DROPPED = """import weakref
real = c.build_parser
class Thing:
    pass
def build_parser(*a, **k):
    thing = Thing()
    ref = weakref.ref(thing, lambda _: signal.raise_signal(sig))  # its exception dropped ('Exception ignored ...')
    del thing
    return real(*a, **k)
c.build_parser = build_parser"""

_AFTER_LOADING = """import app.cli
real = app.cli.run_command
def run_command(args):
    signal.raise_signal(sig)  # after the commands have loaded, before run_command
    return real(args)
app.cli.run_command = run_command"""


@pytest.mark.parametrize("patch", [_CHAINED, _REPLACED, _SWALLOWED, _DROPPED, _AFTER_LOADING],
                         ids=["chained", "replaced", "swallowed", "dropped", "after-loading"])
@pytest.mark.parametrize("sig, word", [("SIGINT", "interrupted"), ("SIGTERM", "terminated")])
def test_a_signal_anywhere_in_the_start_up_is_a_word_and_its_status(patch, sig, word):
    """User test s55 K5: a signal while the commands loaded came out, chained by numpy's import (an ImportError
    blaming the install) or by dataclasses (a RuntimeError), as a traceback with status 1; one whose exception a
    library swallowed was lost (the command ran on, status 0), one Python dropped (a weakref callback's) printed its
    'Exception ignored ... Traceback' beside `interrupted`; SIGTERM between the loading and the command's run
    killed the process without a word. One handler from main's start on: the word, 130 or 143, nothing run."""
    import signal

    r = _start_up_with(sig, patch)
    assert (r.returncode, r.stderr.strip(), r.stdout) == (128 + getattr(signal, sig), word, ""), r.stderr


@pytest.mark.parametrize("sig, word", [("SIGINT", "interrupted"), ("SIGTERM", "terminated")])
def test_a_signal_at_any_moment_of_a_command_s_start_is_a_word_and_its_status(sig, word):
    """The signal sent from outside at several moments of `kinematics`' first second, counted from when the program
    handles SIGTERM (the process's signal mask in /proc says so; before, Python is still starting and importing the
    program, a few tens of ms): the modules loading, the file loading, the run. Always 130 or 143 and the word (with
    how far the run got, if it had started), never a traceback, another status or a silent kill."""
    import signal
    import time

    def handles_sigterm(pid: int) -> bool:
        with open(f"/proc/{pid}/status") as fh:
            mask = next(line for line in fh if line.startswith("SigCgt:")).split()[1]
        return bool(int(mask, 16) >> (signal.SIGTERM - 1) & 1)

    signum = getattr(signal, sig)
    for delay in [0.0, 0.05, 0.15, 0.3, 0.6]:
        p = subprocess.Popen([sys.executable, "-m", "app.cli", "kinematics", str(EXAMPLES / "jansen.json"), "--steps",
                              "2000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        try:
            deadline = time.monotonic() + 30
            while not handles_sigterm(p.pid) and time.monotonic() < deadline:
                time.sleep(0.002)
            time.sleep(delay)
            p.send_signal(signum)
            _, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        assert p.returncode == 128 + signum and "Traceback" not in err, (delay, p.returncode, err)
        assert err.split()[0] == word, (delay, err)


def test_simulate_refuses_a_time_step_the_scene_cannot_take_with_status_2(tmp_path):
    """User test s55 K8: `simulate` of a scene whose dt is more than 2^_MAX_SUBSTEP_LEVELS of its longest step was
    status 3, 'stopped early' with one row; the run cannot start: status 2 and the located reason (simulation.dt for
    the file's step, --dt for a typed one), nothing written."""
    from core.contact import build_model
    from core.contact.stepper import _MAX_SUBSTEP_LEVELS, longest_step, step_too_long

    doc = {"format": "linkwright.mechanism", "version": 1, "space": "spatial", "gravity": [0, 0, -9.81],
           "bodies": [{"name": "floor", "ground": True,
                       "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}},
                      {"name": "box", "mass": 1.0, "shape": {"type": "box", "size": [0.2, 0.2, 0.2]},
                       "pose": {"position": [0, 0, 0.1]}}],
           "contact": {"friction": 0.5}, "simulation": {"dt": 0.01, "duration": 0.01}}
    longest = longest_step(build_model(io.from_dict(doc)))
    h = 2.0 ** (_MAX_SUBSTEP_LEVELS + 1) * longest
    f = tmp_path / "scene.json"
    out = tmp_path / "run.csv"
    for sim, opts, where in [({"dt": h, "duration": h}, [], "simulation.dt"),
                             ({"dt": 0.01, "duration": h}, ["--dt", repr(h)], "--dt")]:
        f.write_text(json.dumps(dict(doc, simulation=sim)))
        r = run("simulate", str(f), *opts, "--out", str(out))
        assert (r.returncode, r.stderr) == (2, f"error: {where}: {step_too_long(h, longest)}\n"), r.stderr
        assert not out.exists()


@pytest.mark.parametrize("lengths", [("1e6", "1", "1e6", "1"), ("1e6", "1", "999999", "1.0000001"),
                                     ("1", "1e-6", "1e6", "1e6"), ("0.1", "0.2", "0.25", "0.3"),
                                     ("1", "1.0000000001", "1", "1"), ("4", "1", "3.5", "3")])
def test_fourbar_prints_sums_that_are_true_as_printed(lengths):
    """User test s55 K10: with 6 significant digits the sum line read `s + l = 1 + 1e+06 = 1e+06`, and for a rocker
    of 1.0000001 `p + q = 1 + 999999 = 1000000` under a header reading 1.0000001. Each printed equation holds in
    decimal arithmetic, the lengths print as in the header (one plain format, no exponent), and the printed sums
    compare as the class says."""
    from decimal import Decimal

    from core.fourbar import FourBar, report

    r = run("fourbar", "--lengths", *lengths)
    assert r.returncode == 0, r.stderr
    header, sums = r.stdout.splitlines()[:2]
    shown = dict(part.split() for part in header.removeprefix("four-bar: ").split(", "))
    rep = report(FourBar(*map(float, lengths)))
    assert {name: float(v) for name, v in shown.items()} == pytest.approx(rep["lengths"], rel=1e-6)
    assert all("e" not in v for v in shown.values())
    assert len(set(shown.values())) == len(set(rep["lengths"].values()))  # different lengths print differently
    totals = []
    for side, (x, y) in zip(sums.split("; "), (("s", "l"), ("p", "q"))):
        name, terms, total = side.split(" = ")
        total = total.split(" (")[0]  # (the class after p + q)
        a, b = terms.split(" + ")
        assert name == f"{x} + {y}" and Decimal(a) + Decimal(b) == Decimal(total), sums
        assert {a, b} <= set(shown.values()) and (float(a), float(b)) == pytest.approx((rep[x], rep[y]), rel=1e-6)
        totals.append(Decimal(total))
    expected = {"grashof": -1, "non-grashof": 1, "equal": None}[rep["grashof"]]
    if expected is not None:
        assert (totals[0] > totals[1]) - (totals[0] < totals[1]) == expected, sums


def test_fourbar_refusal_prints_a_true_sum():
    """The refusal's `the other three together (1 + 1 + 1e+06 = ...)` is as true as printed too."""
    from decimal import Decimal

    r = run("fourbar", "--lengths", "1", "1e6", "1", "999997.0000001")
    assert r.returncode == 2
    three, total = r.stderr.rsplit("(", 1)[1].rstrip(")\n").split(" = ")
    assert sum(map(Decimal, three.split(" + "))) == Decimal(total) and "e+" not in r.stderr, r.stderr


def test_kinematics_json_writes_its_stop_time_as_the_rows_times(tmp_path):
    """User test s55 K11: `--json` wrote "stop_time": 2.3000000000000003 where the rows' times and the reason say
    2.3 (core.io.readable_times); the stop time is written as they are."""
    import re

    from core.io import readable_times

    doc = {"format": "linkwright.mechanism", "version": 1, "name": "triple rocker", "space": "planar",
           "bodies": [{"name": "ground", "ground": True}, {"name": "crank"}, {"name": "coupler"}, {"name": "rocker"}],
           "joints": [{"name": "A", "type": "revolute", "bodies": ["ground", "crank"], "at": [0.0, 0.0, 0.0]},
                      {"name": "B", "type": "revolute", "bodies": ["crank", "coupler"], "at": [2.0, 0.0, 0.0]},
                      {"name": "C", "type": "revolute", "bodies": ["coupler", "rocker"],
                       "at": [3.6875, -2.4803918541230536, 0.0]},
                      {"name": "D", "type": "revolute", "bodies": ["ground", "rocker"], "at": [4.0, 0.0, 0.0]}],
           "drivers": [{"joint": "A", "value": "t"}]}
    f = tmp_path / "triple_rocker.json"
    f.write_text(json.dumps(doc))
    r = run("kinematics", str(f), "--t-end", "3", "--steps", "30", "--json")
    data = json.loads(r.stdout)
    assert r.returncode == 3 and not data["ok"]
    said = float(re.match(r"stopped at t = (\S+):", data["reason"])[1])
    assert data["stop_time"] == said == readable_times([data["stop_time"]])[0]
    assert repr(data["stop_time"]) == repr(said)  # (as short as the reason's)


def test_a_driver_expression_too_long_is_refused_with_the_expression_limit_however_long():
    """User test s55 K11: a driver of 2,100 characters was `expression too long (2100 characters, limit 2000)`, one
    of 200,001 `text too long (200001 characters, limit 100000)`: a limit the documents never give for a driver.
    Both now quote the expression's limit (core.expr.MAX_LENGTH), in the same words."""
    from core.errors import LinkwrightError
    from core.expr import MAX_LENGTH

    doc = json.loads((EXAMPLES / "fourbar.json").read_text())
    for n in (MAX_LENGTH + 100, 100 * MAX_LENGTH + 1):
        text = doc["drivers"][0]["value"] = "t" + "+t" * ((n - 1) // 2)
        with pytest.raises(LinkwrightError) as e:
            io.from_dict(doc)
        assert (e.value.location, e.value.message) == (
            "drivers[0].value", f"expression too long ({len(text)} characters, limit {MAX_LENGTH})")


def test_a_negative_exponent_beyond_the_limit_is_too_large_in_size():
    """User test s55 K11: `2**-1074*t` was refused as `exponent -1074 is too large`: its size is."""
    from core.errors import LinkwrightError
    from core.expr import MAX_EXPONENT, check_expression

    for e in (-1074, MAX_EXPONENT + 1):
        with pytest.raises(LinkwrightError) as exc:
            check_expression(f"2**{e}*t" if e > 0 else f"2**({e})*t", "drivers[0].value")
        size = " in size" if e < 0 else ""
        assert f"exponent {e} is too large{size} (limit {MAX_EXPONENT})" in exc.value.message, exc.value.message


def test_a_non_finite_run_is_located_at_the_document_not_at_out(tmp_path, monkeypatch, capsys):
    """A run that computed a non-finite number said `error: --out: the run computed a non-finite gap ...`, blaming
    the output option for the run's (its document's) doing; it is located at FILE, with or without --out, and no
    file is written."""
    import core.contact
    from core.cli import main as cli_main

    real = core.contact.record

    def record(run, **kw):
        rec = real(run, **kw)
        rec.velocity[2] = float("nan")  # (not a gap: the pair, out of range, is not held, its gap follows from poses)
        return rec

    monkeypatch.setattr(core.contact, "record", record)
    f = str(EXAMPLES / "contact_sphere_drop.json")
    for extra in ([], ["--out", str(tmp_path / "run.csv")]):
        assert cli_main(["simulate", f, "--t-end", "0.05", *extra]) == 2
        cap = capsys.readouterr()
        assert cap.err.strip() == (f"error: {f}: the run computed a non-finite velocity at row 2 (t = 0.02 s); nothing was "
                                   "written") and cap.out == ""
    assert not list(tmp_path.iterdir())


def _simulate_until_it_runs(args, stdout, sig):
    """`linkwright simulate ARGS` with stderr on a terminal (its progress bar shows once the run has made a step),
    `sig` sent once the bar shows; (status, stderr)."""
    status, err = signal_when(["simulate", *args], sig, lambda err: b"simulating [" in err, stdout=stdout)
    return status, err.decode().replace("\r\n", "\n")


def _long_drop(tmp_path) -> Path:
    """The sphere drop at dt = 1 ms for 1000 s: a million steps, minutes of work."""
    d = json.loads((EXAMPLES / "contact_sphere_drop.json").read_text())
    d["simulation"] = {"dt": 0.001, "duration": 1000}
    path = tmp_path / "long.json"
    path.write_text(json.dumps(d))
    return path


def test_ctrl_c_during_simulate_to_stdout_keeps_the_rows_and_names_the_time(tmp_path):
    """The user's run: `linkwright simulate long.json > run.csv`, Ctrl+C once it runs. It gave no rows and
    'interrupted' (3 times in 45 a SystemError traceback and status 1); now the rows so far and when it stopped."""
    import re
    import signal

    with open(tmp_path / "run.csv", "w") as fh:
        status, err = _simulate_until_it_runs([str(_long_drop(tmp_path))], fh, signal.SIGINT)
    assert status == 130 and "Traceback" not in err, err
    m = re.search(r"\ninterrupted at t = (\S+) s \((\d+) rows written\)\n$", err)  # (on a line of its own)
    assert m, err
    rows = (tmp_path / "run.csv").read_text().splitlines()
    assert rows[0].startswith("t,ball.x,") and len(rows) == 1 + int(m[2]) and float(rows[-1].split(",")[0]) == float(m[1])
    assert 0 < float(m[1]) < 1000


def test_sigterm_during_simulate_replaces_the_output_with_the_rows_so_far(tmp_path):
    import re
    import signal

    from core.contact import load_npz

    out = tmp_path / "run.npz"
    out.write_bytes(b"old")
    status, err = _simulate_until_it_runs([str(_long_drop(tmp_path)), "--out", str(out)], subprocess.DEVNULL,
                                          signal.SIGTERM)
    assert status == 143 and "Traceback" not in err, err
    m = re.search(r"\nterminated at t = (\S+) s \((\d+) rows written\)\n$", err)
    assert m, err
    rec = load_npz(out)
    assert rec.n_frames == int(m[2]) and float(rec.t[-1]) == float(m[1]) and not rec.completed
    assert sorted(x.name for x in tmp_path.iterdir()) == ["long.json", "run.npz"]


@pytest.mark.serial
def test_simulate_exits_promptly_after_saying_it_was_interrupted(tmp_path):
    """Ctrl+C during `linkwright simulate contact_pile.json --t-end 60 --out run.csv`: the process ends soon after
    `interrupted at t = ...`. It took another 1.0-2.1 s (user test s52, F10): the interpreter's shutdown garbage-
    collected the contact run's 160,000 objects (numba's types and dispatchers) several times over. The rows are
    still all there."""
    import re
    import signal

    out = tmp_path / "run.csv"
    state = {"sent": False, "said": None}

    def watch(proc, err):
        if b"simulating [" in err and not state["sent"]:
            proc.send_signal(signal.SIGINT)
            state["sent"] = True
        if state["said"] is None and re.search(rb"rows? written\)", err):
            state["said"] = time.monotonic()

    code, text, ended = run_on_terminal(["simulate", str(EXAMPLES / "contact_pile.json"), "--t-end", "60", "--out",
                                         str(out)], watch)
    said = state["said"]
    assert code == 130 and said is not None, text
    m = re.search(r"\ninterrupted at t = (\S+) s \((\d+) rows written\)\n$", text)
    assert m, text
    rows = out.read_text().splitlines()
    assert len(rows) == 1 + int(m[2]) and float(rows[-1].split(",")[0]) == float(m[1])
    assert ended - said < 0.5, f"exited {ended - said:.2f} s after the message"


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (Linux /proc)."""
    import os

    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


@pytest.mark.serial
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_ctrl_c_during_the_first_compile_ends_simulate_at_once(tmp_path):
    """A machine's first `simulate` (an empty numba cache) compiles the contact kernels in a child process, saying so
    on a terminal; Ctrl+C then ends the command at once with `interrupted` and 130 (as anywhere before the run,
    README), and the compiling process with it (it is in a session of its own, so the terminal's Ctrl+C reaches only
    the command, which terminates it). (Before, the compile ran in the command's thread: the signal's exception was
    raised inside numba's compiler, after 20 ms to 1 s; the note came after 2 s, and said "preparing".)"""
    import os
    import signal

    out = tmp_path / "run.csv"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), PYTHONPATH=str(ROOT))
    state = {"sent": None, "children": []}

    def watch(proc, err):
        if state["sent"] is None and b"compiling the contact solver's kernels" in err:
            time.sleep(1.0)  # (well into the child's work)
            state["children"] = _children(proc.pid)
            state["sent"] = time.monotonic()
            proc.send_signal(signal.SIGINT)

    code, text, ended = run_on_terminal(["simulate", str(EXAMPLES / "contact_sphere_drop.json"), "--out", str(out)],
                                        watch, env=env)
    sent, children = state["sent"], state["children"]
    assert sent is not None, text
    assert code == 130 and text.endswith("\ninterrupted\n"), text
    assert ended - sent < 2.0, f"exited {ended - sent:.2f} s after Ctrl+C"
    assert len(children) == 1  # the compiling process, ended with the command:
    assert not Path(f"/proc/{children[0]}").exists()
    assert not out.exists()


def test_simulate_takes_the_output_suffix_in_any_case(tmp_path):
    """`--out RUN.NPZ` is the archive and `RUN.CSV` the table (as `render --out A.GIF` and the app's export take
    upper-case suffixes); another suffix is still refused."""
    from core.contact import load_npz

    f = str(EXAMPLES / "contact_sphere_drop.json")
    r = run("simulate", f, "--t-end", "0.02", "--out", str(tmp_path / "RUN.NPZ"))
    assert r.returncode == 0, r.stderr
    assert len(load_npz(tmp_path / "RUN.NPZ").t) == 3
    r = run("simulate", f, "--t-end", "0.02", "--out", str(tmp_path / "RUN.CSV"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "RUN.CSV").read_text().startswith("t,ball.x,")
    r = run("simulate", f, "--t-end", "0.02", "--out", str(tmp_path / "RUN.TXT"))
    assert r.returncode == 2 and "unknown output type" in r.stderr and not (tmp_path / "RUN.TXT").exists()


def _far_scene(tmp_path, name: str, body: dict, gravity=(0, 0, -9.81), dt: float = 0.01) -> Path:
    """The sphere drop with one more body and the given gravity and step."""
    d = json.loads((EXAMPLES / "contact_sphere_drop.json").read_text())
    d["bodies"].append(body)
    d["gravity"], d["simulation"] = list(gravity), {"dt": dt, "duration": 5 * dt}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(d))
    return path


def test_simulate_refuses_a_body_reaching_beyond_2_21_m_from_the_origin_located_with_status_2(tmp_path):
    """Finding F9: a scene far from the origin made endless runs (its steps stalled on rounding). An upright drum of
    radius 1e6 m and length 1e6 m at x = y = 1e6 m: its bounding sphere (radius sqrt(1e6^2 + 5e5^2) = 1.118e6 m) reaches
    2.118e6 m along x, beyond 2^21 m = 2,097,152 m where doubles are 2^-31 = 4.66e-10 m apart, coarser than the step's
    resolution of 4.5e-10 m. Refused before the first step, at the drum's position; 3 % nearer it runs."""
    drum = {"name": "drum", "mass": 1e3, "shape": {"type": "cylinder", "radius": 1e6, "length": 1e6},
            "pose": {"position": [1e6, 1e6, 5e5]}}  # (clear of the ball at the origin)
    r = run("simulate", str(_far_scene(tmp_path, "far", drum)))
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith(
        "error: bodies[2].pose.position: 'drum' reaches 2.12e+06 m from the origin along x (its centre of mass at x = "
        "1e+06 m, its bounding radius 1.12e+06 m): there doubles are 4.7e-10 m apart, coarser than the contact step's "
        "resolution of 4.5e-10 m (its overlap bound of 9e-10 m less the overlap of 4.5e-10 m it keeps): keep every body "
        "within 2097152 m (2^21 m) of the origin on each axis; move the scene nearer the origin"), r.stderr
    drum["pose"]["position"][:2] = [0.97e6, 0.97e6]  # reaches 2.088e6 m
    r = run("simulate", str(_far_scene(tmp_path, "near", drum)))
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == 1 + 6  # the header and t = 0 ... 0.05 s


def test_simulate_stops_a_body_that_flies_beyond_2_21_m_with_status_3_and_the_rows_before(tmp_path):
    # a ball at x = 1e6 m flying at 5e5 m/s along x in steps of 1 s, without gravity: at x = 1e6, 1.5e6, 2e6 m at
    # t = 0, 1, 2 s; the step to t = 3 s ends it at 2.5e6 m (doubles 4.66e-10 m apart there), beyond 2^21 m
    ball = {"name": "probe", "mass": 1.0, "shape": {"type": "sphere", "radius": 0.1}, "pose": {"position": [1e6, 0, 1]},
            "velocity": {"linear": [5e5, 0, 0], "angular": [0, 0, 0]}}
    r = run("simulate", str(_far_scene(tmp_path, "fly", ball, gravity=(0, 0, 0), dt=1.0)))
    assert r.returncode == 3, r.stderr
    rows = r.stdout.splitlines()
    assert rows[0].startswith("t,ball.x,") and [row.split(",")[0] for row in rows[1:]] == ["0.0", "1.0", "2.0"]
    head = rows[0].split(",")
    assert [float(row.split(",")[head.index("probe.x")]) for row in rows[1:]] == [1e6, 1.5e6, 2e6]
    assert r.stderr.startswith("simulation stopped early: stopped at t = 2 s: 'probe' reached 2.5e+06 m from the "
                               "origin along x (its centre of mass at x = 2.5e+06 m, its bounding radius 0.1 m): there "
                               "doubles are 4.7e-10 m apart"), r.stderr
    assert r.stderr.rstrip().endswith("move the scene nearer the origin (3 rows written)"), r.stderr


def test_simulate_plays_the_driven_rssr():
    """rssr.json (one driver, the coupler's spin idle): kinematics ran it and analyze called it fully driven, but
    simulate refused it with status 2, 'drivers: the mechanism has 2 degree(s) of freedom (rank-based) but 1
    driver(s) are given'. A driven document without masses plays its driven motion, as fourbar.json does."""
    r = run("simulate", str(EXAMPLES / "rssr.json"), "--t-end", "0.05")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("t,crank.x,") and "coupler.qw" in lines[0] and len(lines) == 1 + 6


def test_analyze_reports_the_idle_freedom_kinematics_sets_aside(tmp_path):
    """The RSSR's coupler spins about BC without moving a joint centre: `kinematics` of it undriven said 'the mechanism
    has 1 degree(s) of freedom (rank-based, 1 idle freedom(s) set aside)', `analyze` never mentioned it. Both now
    say it in the same words, from the same count (core.kinematics.mobility)."""
    doc = json.loads((EXAMPLES / "rssr.json").read_text())
    doc["drivers"] = []
    p = tmp_path / "rssr_undriven.json"
    p.write_text(json.dumps(doc))
    phrase = "the mechanism has 1 degree(s) of freedom (rank-based, 1 idle freedom(s) set aside)"
    k = run("kinematics", str(p), "--steps", "2")
    assert k.returncode == 2 and phrase in k.stderr
    for path, drivers in ((p, 0), (EXAMPLES / "rssr.json", 1)):
        a = run("analyze", str(path))
        assert a.returncode == 0 and f"{phrase} and {drivers} driver(s)" in a.stdout.splitlines()
        data = json.loads(run("analyze", "--json", str(path)).stdout)
        assert data["idle_freedoms"] == 1 and data["freedoms_to_drive"] == 1
    # a mechanism without idle freedoms says so by leaving the note out, as kinematics does
    a = run("analyze", str(EXAMPLES / "fourbar.json"))
    assert "the mechanism has 1 degree(s) of freedom (rank-based) and 1 driver(s)" in a.stdout.splitlines()


def test_analyze_judges_the_drivers_by_the_rank_based_count_alone(tmp_path):
    """rssr.json is fully driven with its one driver (the coupler's spin is idle), and analyze said so, but above it
    printed the Gruebler count's 'warning: 1 driver(s) for mobility 2 as counted: the motion is not fully determined
    (unless the rest are idle freedoms, ...)'. The drivers are judged once, by the rank-based count, in the words of
    the kinematics' driver check."""
    a = run("analyze", str(EXAMPLES / "rssr.json"))
    assert a.returncode == 0 and "warning" not in a.stdout and "as counted" not in a.stdout, a.stdout
    assert json.loads(run("analyze", "--json", str(EXAMPLES / "rssr.json")).stdout)["warnings"] == []
    doc = json.loads((EXAMPLES / "rssr.json").read_text())
    doc["drivers"] = []
    p = tmp_path / "rssr_undriven.json"
    p.write_text(json.dumps(doc))
    k = run("kinematics", str(p), "--steps", "2")
    said = k.stderr.strip().removeprefix("error: drivers: ")  # what the kinematics' driver check refuses it with
    assert k.returncode == 2 and said.startswith("the mechanism has 1 degree(s)"), k.stderr
    a = run("analyze", str(p))
    lines = a.stdout.splitlines()
    assert [ln for ln in lines if ln.startswith("warning:")] == [f"warning: {said}"], a.stdout
    assert lines[-1] == f"warning: {said}"  # after the count it comes from
    assert json.loads(run("analyze", "--json", str(p)).stdout)["warnings"] == [said]


def test_analyze_of_a_document_without_a_name_is_headed_by_its_file(tmp_path, fourbar_dict):
    """An empty name is allowed (a file may have "name": ""); analyze's first line was then ' (planar)'."""
    fourbar_dict["name"] = ""
    p = tmp_path / "unnamed four-bar.json"
    p.write_text(json.dumps(fourbar_dict))
    r = run("analyze", str(p))
    assert r.returncode == 0 and r.stdout.splitlines()[0] == "unnamed four-bar.json (planar)", r.stdout
    assert json.loads(run("analyze", "--json", str(p)).stdout)["name"] == ""  # (the data is the document's)
    from core import io
    from core.cli.analyze import report_text

    mech = io.loads(json.dumps(fourbar_dict))
    assert report_text(mech, structure.analyze(mech)).splitlines()[0] == "unnamed mechanism (planar)"


def _t_column(text: str) -> list[str]:
    rows = text.splitlines()
    assert rows[0].split(",")[0] == "t"
    return [row.split(",", 1)[0] for row in rows[1:]]


def test_the_time_column_is_written_without_round_off(tmp_path):
    """`simulate --dt 0.1 --t-end 0.3` wrote t = 0.30000000000000004 (row k is at k dt: 3 × 0.1), a 30 s run
    29.990000000000002, and `kinematics` 0.30000000000000004 and 0.7000000000000001 (k × T/N). The times are written
    as the user reads them, k h in its short decimal form: in CSV on stdout and in a file, and in `kinematics
    --json`; the .npz keeps the computed times."""
    from core.contact import load_npz

    f = str(EXAMPLES / "contact_sphere_drop.json")
    r = run("simulate", f, "--dt", "0.1", "--t-end", "0.3")
    assert r.returncode == 0, r.stderr
    assert _t_column(r.stdout) == ["0.0", "0.1", "0.2", "0.3"]
    r = run("simulate", f, "--dt", "0.01", "--t-end", "3", "--out", str(tmp_path / "run.csv"))
    assert r.returncode == 0, r.stderr
    assert _t_column((tmp_path / "run.csv").read_text()) == [repr(k / 100) for k in range(301)]
    r = run("simulate", f, "--dt", "0.1", "--t-end", "0.3", "--out", str(tmp_path / "run.npz"))
    assert r.returncode == 0, r.stderr
    assert load_npz(tmp_path / "run.npz").t[3] == 3 * 0.1 != 0.3  # (the lossless file: the times the run computed)

    fourbar = str(EXAMPLES / "fourbar.json")
    r = run("kinematics", fourbar, "--t-end", "3", "--steps", "30")
    assert r.returncode == 0, r.stderr
    assert _t_column(r.stdout) == [repr(k / 10) for k in range(31)]
    r = run("kinematics", fourbar, "--t-end", "0.7", "--steps", "7", "--csv", str(tmp_path / "k.csv"))
    assert r.returncode == 0, r.stderr
    assert _t_column((tmp_path / "k.csv").read_text()) == [repr(k / 10) for k in range(8)]  # T/N = 0.09999999999999999
    r = run("kinematics", fourbar, "--t-end", "3", "--steps", "30", "--json")
    assert [row[0] for row in json.loads(r.stdout)["rows"]] == [k / 10 for k in range(31)]


def test_readable_times_moves_times_by_round_off_only():
    """core.io.readable_times, which Recording.save_csv and Trajectory.save_csv / columns use: k h in its short form,
    other times to 15 significant digits; nothing moves by more than round-off."""
    import numpy as np

    k = np.arange(1_000_001)
    for h in (0.01, 1e-4, 0.3, 1e-9, 2.5e-3):
        t = k * h
        clean = io.readable_times(t)
        assert np.all(np.abs(clean - t) <= 5e-15 * t)
    t = io.readable_times(k * 0.01)
    assert [repr(float(x)) for x in t[[3, 6, 2999, 1_000_000]]] == ["0.03", "0.06", "29.99", "10000.0"]
    assert all(len(repr(float(x))) <= 9 for x in t)  # (at most 'nnnn.nn' and '10000.0': no noise digits)
    odd = io.readable_times([1 / 3, 12345.678901234567, float("nan"), math.inf])
    assert [repr(float(x)) for x in odd] == ["0.333333333333333", "12345.6789012346", "nan", "inf"]


def test_save_csv_called_from_python_writes_the_readable_times(tmp_path):
    """Recording.save_csv and Trajectory.save_csv wrote the computed times (3 x 0.1 as 0.30000000000000004, 7 x 0.1
    as 0.7000000000000001) when called from Python; only the CLI and the app's export, which rounded them through
    core.io.readable_times first, wrote 0.3. The methods write the readable times themselves, to a path and to an
    open file, without changing the run's data, and the lossless .npz keeps the computed times."""
    import io as _io

    import numpy as np

    from core.contact import build_model, load_npz, simulate
    from core.kinematics import compile_model, solve_trajectory

    rec = simulate(build_model(io.load(EXAMPLES / "contact_sphere_drop.json")), t_end=0.3, dt=0.1)
    assert repr(float(rec.t[3])) == "0.30000000000000004"  # (the times the run computed: k h)
    rec.save_csv(tmp_path / "run.csv")
    assert _t_column((tmp_path / "run.csv").read_text()) == ["0.0", "0.1", "0.2", "0.3"]
    buf = _io.StringIO()
    rec.save_csv(buf)
    assert buf.getvalue() == (tmp_path / "run.csv").read_bytes().decode()
    rec.save(tmp_path / "again.csv")
    assert (tmp_path / "again.csv").read_bytes().decode() == buf.getvalue()
    assert repr(float(rec.t[3])) == "0.30000000000000004"  # (the recording itself is unchanged)
    rec.save_npz(tmp_path / "run.npz")
    assert load_npz(tmp_path / "run.npz").t[3] == 3 * 0.1 != 0.3

    times = np.arange(8) * 0.1
    assert repr(float(times[7])) == "0.7000000000000001"
    traj = solve_trajectory(compile_model(io.load(EXAMPLES / "fourbar.json")), times)
    assert traj.ok, traj.reason
    buf = _io.StringIO()
    traj.save_csv(buf)
    assert _t_column(buf.getvalue()) == [repr(k / 10) for k in range(8)]
    head, table = traj.columns()  # (the rows `kinematics --json` writes)
    assert head[0] == "t" and table[:, 0].tolist() == [k / 10 for k in range(8)]
    assert repr(float(traj.times[7])) == "0.7000000000000001"


def test_simulate_help_says_what_the_default_solver_does():
    """`simulate --help` said the default solver was 'Newton on two forms of the friction law, then the conic
    interior point, then halves'; the default's attempts (core.contact.stepper._ATTEMPTS) hold no interior point:
    Newton on the Alart-Curnier form, the normalised form, Alart-Curnier from a cold start, then halving; the
    interior point is the other value of --solver."""
    from core.contact import stepper

    assert all(a[0] != stepper._CONIC[0] for a in stepper._ATTEMPTS)  # (what the help describes)
    r = run("simulate", "--help")
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    solver = text[text.index("--solver {newton,interior-point} ") + 33:text.index(" --out OUT ")]
    default = solver[solver.index("newton (default:"):solver.index(") or interior-point (")]
    assert "interior" not in default and "conic" not in default, default
    for attempt in ("Alart-Curnier form", "normalised form", "cold start", "halved"):
        assert attempt in default, (attempt, default)
    assert "or interior-point (the conic interior-point method alone" in solver, solver


def test_a_velocity_on_a_ground_body_is_a_located_error_with_status_2(tmp_path):
    """The tester's velocity_on_ground.json (the floor given {"linear": [1, 0, 0]}) simulated with status 0, the
    floor's velocity ignored."""
    doc = json.loads((EXAMPLES / "contact_sphere_drop.json").read_text())
    ground = next(i for i, b in enumerate(doc["bodies"]) if b.get("ground"))
    doc["bodies"][ground]["velocity"] = {"linear": [1, 0, 0]}
    p = tmp_path / "velocity_on_ground.json"
    p.write_text(json.dumps(doc))
    for command in (["simulate", str(p), "--t-end", "0.02"], ["analyze", str(p)]):
        r = run(*command)
        assert r.returncode == 2 and r.stdout == "", (command, r.stdout)
        assert r.stderr.startswith(f"error: bodies[{ground}].velocity.linear: a ground body is fixed (it does not "
                                   "move): remove the velocity, or un-mark the body as ground"), r.stderr


def _run_without(stream: str, *args: str) -> subprocess.CompletedProcess:
    """`linkwright ARGS` started with its standard output (stream "stdout", `>&-`) or error ("stderr", `2>&-`)
    closed: Python then has sys.stdout (sys.stderr) None."""
    close = ">&-" if stream == "stdout" else "2>&-"
    return subprocess.run(["sh", "-c", f'exec "$0" -m app "$@" {close}', sys.executable, *args],
                          stdout=subprocess.PIPE if stream == "stderr" else None,
                          stderr=subprocess.PIPE if stream == "stdout" else None, text=True, cwd=ROOT, timeout=300)


@pytest.mark.parametrize("args", [("analyze", str(EXAMPLES / "jansen.json")), ("fourbar", "--lengths", "4", "1", "3", "3.5"),
                                  ("kinematics", str(EXAMPLES / "fourbar.json"), "--steps", "2")])
def test_a_closed_standard_output_is_a_message_and_status_2(args):
    """`linkwright analyze FILE >&-` ended in a traceback (AttributeError: 'NoneType' object has no attribute
    'flush') and status 1; a closed stdout is now a write failure as /dev/full is: the message, status 2."""
    r = _run_without("stdout", *args)
    assert r.returncode == 2 and r.stderr == "error: cannot write the output: standard output is closed\n", r.stderr


def test_a_closed_standard_output_is_no_error_for_a_command_that_writes_a_file(tmp_path):
    out = tmp_path / "k.csv"
    r = _run_without("stdout", "kinematics", str(EXAMPLES / "fourbar.json"), "--steps", "2", "--csv", str(out))
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert len(out.read_text().splitlines()) == 4  # the header and 3 rows


def test_a_closed_standard_error_keeps_stdout_clean_and_the_status():
    """With stderr closed, print(file=sys.stderr) printed the error message on stdout (print's file=None), and
    `simulate` ended in a traceback (sys.stderr.isatty() of None) with status 1."""
    r = _run_without("stderr", "analyze", "no_such_file.json")
    assert r.returncode == 2 and r.stdout == ""
    r = _run_without("stderr", "simulate", str(EXAMPLES / "contact_sphere_drop.json"), "--t-end", "0.02")
    assert r.returncode == 0 and r.stdout.startswith("t,") and len(r.stdout.splitlines()) > 2, r.stdout[:200]


def test_a_driver_not_real_at_any_time_is_refused_on_load_and_one_real_somewhere_at_the_run(tmp_path):
    """asin(2) loaded (analyze status 0) and was refused only by a run, "not finite at t = 0", while tan(pi/2) was
    refused on load. A part without t that is not a real number is refused on load now; sqrt(-1-t), real for
    t <= -1, still loads, and a run reports it at its first time (docs/file-format.md, Drivers)."""
    doc = json.loads((EXAMPLES / "fourbar.json").read_text())
    for value, load, message in [
        ("asin(2)", 2, "error: drivers[0].value: asin(2) at column 1 is not a real number (asin and acos are real "
                       "from -1 to 1, log above 0, sqrt from 0 on)\n"),
        ("2*pi*t + log(-1)", 2, "error: drivers[0].value: log(-1) at column 10 is not a real number"),
        ("sqrt(-1-t)", 0, ""),
    ]:
        doc["drivers"][0]["value"] = value
        p = tmp_path / "d.json"
        p.write_text(json.dumps(doc))
        r = run("analyze", str(p))
        assert r.returncode == load and r.stderr.startswith(message), (value, r.stderr)
    r = run("kinematics", str(p), "--steps", "2")
    assert r.returncode == 2 and r.stderr == ("error: drivers[0].value: value of 'sqrt(-1-t)' is not finite at t = 0\n")


def test_an_empty_file_name_is_named_as_such():
    """`kinematics --csv ""` said "cannot write '.': it is a folder" (Path("") is "."), and `analyze ""` "'.: is a
    directory, not a mechanism file"; an empty name is reported as one (status 2)."""
    fourbar = str(EXAMPLES / "fourbar.json")
    for args, message in [(("kinematics", fourbar, "--csv", ""), 'error: --csv: the file name is empty ("")\n'),
                          (("simulate", str(EXAMPLES / "contact_sphere_drop.json"), "--out", ""),
                           'error: --out: the file name is empty ("")\n'),
                          (("analyze", ""), 'error: the file name is empty ("")\n'),
                          (("kinematics", ""), 'error: the file name is empty ("")\n')]:
        r = run(*args)
        assert r.returncode == 2 and r.stderr == message and r.stdout == "", (args, r.stderr)


def test_analyze_says_when_redundant_constraints_let_a_gruebler_structure_move(tmp_path):
    """A double parallelogram (three parallel cranks of length 1 at x = 0, 2, 4 under one coupler): Gruebler-Kutzbach
    counts M = 3(5 - 1) - 2*6 = 0, a structure, but the equal parallel cranks move (one redundant constraint: the
    third crank's loop repeats the second's). analyze printed the count's 'it cannot move unless its geometry is
    special' beside 'the mechanism has 1 degree(s) of freedom'; it now says, as the app's Structure panel does, that
    this geometry moves. With the third crank's top moved off parallel the count's warning is back (0 DOF by rank)."""
    bodies = [{"name": "ground", "ground": True}] + [{"name": n} for n in ("c1", "c2", "c3", "coupler")]
    joints = []
    for k, x in enumerate((0.0, 2.0, 4.0), start=1):
        joints.append({"name": f"A{k}", "type": "revolute", "bodies": ["ground", f"c{k}"], "at": [x, 0, 0]})
        joints.append({"name": f"B{k}", "type": "revolute", "bodies": [f"c{k}", "coupler"], "at": [x, 1, 0]})
    doc = {"format": "linkwright.mechanism", "version": 1, "name": "double parallelogram", "space": "planar",
           "bodies": bodies, "joints": joints, "drivers": [{"joint": "A1", "value": "t"}]}
    p = tmp_path / "dp.json"
    p.write_text(json.dumps(doc))
    a = run("analyze", str(p))
    assert a.returncode == 0, a.stderr
    assert "mobility (rank of the constraint Jacobian): 1, redundant constraints: 1" in a.stdout
    assert "cannot move unless" not in a.stdout, a.stdout
    warnings = json.loads(run("analyze", "--json", str(p)).stdout)["warnings"]
    assert warnings == ["Gruebler–Kutzbach M = 0, but this geometry moves: 1 DOF by rank, 1 redundant constraint (a "
                        "special geometry, such as parallel links of equal length or a planar loop in space, lets it "
                        "move; changed, it may lock)"]
    doc["joints"][5]["at"] = [4.2, 1, 0]  # B3 off parallel: the third loop now locks the second
    p.write_text(json.dumps(doc))
    warnings = json.loads(run("analyze", "--json", str(p)).stdout)["warnings"]
    assert any(w.startswith("M = 0: a structure as counted by Gruebler–Kutzbach") for w in warnings), warnings


def test_simulate_stops_a_jam_with_status_3_naming_the_bodies(tmp_path):
    # user test s53 (G3, bad2/b33): the cam follower with its guide turned horizontal; the cam pushes up on a follower
    # that can only slide sideways.  The run stopped with the solver's bare reason ("step did not converge even when
    # halved (stalled near the tolerance ...)"); it now says what jams what (core.contact.jam), the solver's after it
    doc = json.loads((EXAMPLES / "contact_cam_follower.json").read_text())
    next(j for j in doc["joints"] if j["name"] == "guide")["axis"] = [1, 0, 0]
    path = tmp_path / "cam_guide_horizontal.json"
    path.write_text(json.dumps(doc))
    r = run("simulate", str(path), "--t-end", "0.05")
    assert r.returncode == 3, r.stderr
    assert len(r.stdout.splitlines()) == 2  # the header and t = 0
    assert r.stderr.startswith("simulation stopped early: stopped at t = 0 s: a jam: the driven 'cam' presses "
                               "'follower' against joint 'guide' (no motion of the bodies moved by forces makes way "
                               "for the drivers: "), r.stderr
    assert "; the step has no solution (step did not converge even when halved" in r.stderr
    assert r.stderr.rstrip().endswith("(1 rows written)"), r.stderr


def test_a_universal_joint_with_an_oblique_axis2_is_refused_with_status_2(tmp_path):
    """User test s55 K4 (mob/universal_oblique_driven.json): an axis2 at 45 degrees to axis, driven, ran turning
    about the projection of axis2 (x); now the located refusal, status 2, as for any bad document."""
    doc = {"format": "linkwright.mechanism", "version": 1, "name": "U obl", "space": "spatial",
           "bodies": [{"name": "ground", "ground": True}, {"name": "s", "points": {"P": [0, 1, 0]}}],
           "joints": [{"name": "U", "type": "universal", "bodies": ["ground", "s"], "at": [0, 0, 0],
                       "axis": [0, 0, 1], "axis2": [1, 0, 1]}],
           "drivers": [{"joint": "U", "value": "0*t", "coordinate": 0}, {"joint": "U", "value": "t", "coordinate": 1}]}
    bad = tmp_path / "u.json"
    bad.write_text(json.dumps(doc))
    for command in ("kinematics", "analyze"):
        r = run(command, str(bad))
        assert r.returncode == 2 and r.stdout == ""
        assert r.stderr.strip() == "error: joints[0].axis2: must be normal to axis (it makes 45.0 degrees with it)"
