"""Headless sub-commands of the `linkwright` command, one module each, discovered automatically."""

from __future__ import annotations

import argparse
import errno
import importlib
import io
import os
import pkgutil
import signal
import sys
from contextlib import contextmanager
from types import ModuleType
from typing import Iterator, Mapping, Sequence

from .. import __version__
from ..errors import LinkwrightError

__all__ = ["commands", "build_parser", "run_command", "main", "typed_options"]


def commands() -> dict[str, ModuleType]:
    """The sub-command modules in this package (each defines NAME, HELP, add_arguments, run)."""
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        if all(hasattr(mod, a) for a in ("NAME", "HELP", "add_arguments", "run")):
            found[mod.NAME] = mod
    return found


def build_parser(prog: str = "linkwright") -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    """The top-level parser with one sub-parser per command."""
    parser = argparse.ArgumentParser(prog=prog, description="Linkwright: design, analyse and simulate mechanisms.")
    parser.add_argument("--version", action="version", version=f"linkwright {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, mod in commands().items():
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser, sub


@contextmanager
def typed_options(options: Mapping[str, str | None]) -> Iterator[None]:
    """The core locates a run's checks at the document's fields (simulation.duration, simulation.dt, ...); where a
    value came from an option the user typed, an error raised in the block names that option instead (`options`:
    document location -> option, None for a value that came from the file)."""
    try:
        yield
    except LinkwrightError as exc:
        option = options.get(exc.location)
        if option is None:
            raise
        raise LinkwrightError(option, exc.message) from None


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that a command ends as after Ctrl+C: `finally` blocks and the atomic
    writes' clean-up run (killed outright, `kinematics --csv` left its temporary file beside OUT)."""


def _terminate(signum, _frame) -> None:
    raise _Terminated(signum)


class _ClosedStream(io.TextIOBase):
    """A standard stream the command was started without (`linkwright analyze FILE >&-`: Python sets sys.stdout to
    None, and print() then dropped the output without a word). Writing to a closed stdout is an OSError (EBADF), as
    writing to /dev/full is ENOSPC, and ends the command with its message and status 2; what goes to a closed stderr
    has nowhere to go and is dropped (the status still tells)."""

    def __init__(self, name: str, fail: bool) -> None:
        super().__init__()
        self._name, self._fail = name, fail

    def writable(self) -> bool:  # noqa: D102 - io API
        return True

    def write(self, s: str) -> int:  # noqa: D102 - io API
        if self._fail and s:
            raise OSError(errno.EBADF, f"{self._name} is closed")
        return len(s)


@contextmanager
def _standard_streams() -> Iterator[None]:
    """sys.stdout and sys.stderr, where the process has none, as _ClosedStream for the block."""
    missing = {name: getattr(sys, name) is None for name in ("stdout", "stderr")}
    if missing["stdout"]:
        sys.stdout = _ClosedStream("standard output", fail=True)
    if missing["stderr"]:
        sys.stderr = _ClosedStream("standard error", fail=False)
    try:
        yield
    finally:
        for name, was_missing in missing.items():
            if was_missing:
                setattr(sys, name, None)


def run_command(args: argparse.Namespace) -> int:
    """Run a parsed sub-command: user errors become a located message on stderr and status 2."""
    previous = None
    if not getattr(args, "_event_loop", False):  # (in a Qt event loop the exception would end in a slot, swallowed)
        try:
            previous = signal.signal(signal.SIGTERM, _terminate)
        except ValueError:  # not the main thread (a caller's worker): leave the signal alone
            pass
    try:
        with _standard_streams():
            try:
                return _run_command(args)
            except _Terminated:
                print("terminated", file=sys.stderr)
                return 128 + signal.SIGTERM
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run_command(args: argparse.Namespace) -> int:
    try:
        status = int(args._run(args) or 0)
        sys.stdout.flush()  # a full disk or a closed pipe shows here, as a message and not at exit
        return status
    except LinkwrightError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            _silence_stdout()
            return 0
        _silence_stdout()
        print(f"error: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush of unwritable output raises nothing."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for the headless commands (`python -m core.cli ...`)."""
    parser, _ = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    return run_command(args)
