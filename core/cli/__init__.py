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

__all__ = ["commands", "build_parser", "run_command", "main", "typed_options", "cancel_requested", "run_interruptibly",
           "interruption", "report_interruption", "build_parser_or_status"]


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

    @property
    def signum(self) -> int:
        return self.args[0] if self.args else signal.SIGTERM


def _terminate(signum, _frame) -> None:
    raise _Terminated(signum)


class _Signals:
    """Ctrl+C (SIGINT) and SIGTERM while run_command runs a command in the main thread.

    Outside a run they raise (KeyboardInterrupt, _Terminated): loading or writing ends at once, the atomic writes'
    clean-up runs. During a run (the block of `run_interruptibly`) the first one raises nothing: it is noted, and the
    run's cancel callable (`cancel_requested`) reads it between solver iterations and steps, so the run ends as a
    cancelled run with its rows kept. (Raised inside the run, the KeyboardInterrupt could land in a numba dispatcher's
    call back into Python and come out as a SystemError with a traceback, the rows lost.) A second signal during the
    run raises as outside it.

    Python drops an exception raised in a weakref or ctypes callback ("Exception ignored ..."): a signal whose
    exception fell there before the run (importlib's module locks, llvmlite's object cache while numba loads the
    kernels) is raised again when the run would start (`run_interruptibly`), instead of being lost."""

    def __init__(self) -> None:
        self.in_run = False
        self.caught: int | None = None  # the signal noted during the run
        self.raised: int | None = None  # the last signal raised outside the run

    def __call__(self, signum, _frame) -> None:
        if self.in_run and self.caught is None:
            self.caught = signum
            return
        self.raised = signum
        self.throw(signum)

    @staticmethod
    def throw(signum: int) -> None:
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise _Terminated(signum)


_signals: _Signals | None = None  # the command's, while run_command handles the signals


def cancel_requested() -> bool:
    """Whether Ctrl+C or SIGTERM came during the command's run (a run's cancel callable; always False when
    run_command does not handle the signals: not the main thread, or a Qt event loop's command)."""
    return _signals is not None and _signals.caught is not None


@contextmanager
def run_interruptibly() -> Iterator[None]:
    """The block is the command's run (its run is opened with cancel=cancel_requested): Ctrl+C and SIGTERM there stop
    it through its cancel callable instead of raising (_Signals); after the block `interruption()` tells."""
    state = _signals
    if state is None:
        yield
        return
    if state.raised is not None:  # its exception was dropped on the way (_Signals): the run does not start
        state.throw(state.raised)
    state.in_run = True
    try:
        yield
    finally:
        state.in_run = False


def interruption() -> int | None:
    """The signal (SIGINT or SIGTERM) that stopped the command's run, None if none came."""
    return None if _signals is None else _signals.caught


def report_interruption(signum: int, t_last: float | None, rows: int) -> int:
    """After the rows computed before an interruption are written: `interrupted at t = 0.42 s (43 rows written)` on
    stderr ("terminated" for SIGTERM) and the shell's status for the signal, 130 or 143."""
    word = "interrupted" if signum == signal.SIGINT else "terminated"
    where = f"at t = {t_last:.6g} s" if rows and t_last is not None else "before the first row"
    print(f"{word} {where} ({rows} row{'s' if rows != 1 else ''} written)", file=sys.stderr)
    return 128 + signum


def _signal_of(exc: BaseException) -> int | None:
    """SIGINT or SIGTERM when `exc` is the exception a signal raised, or one it caused (a KeyboardInterrupt raised
    while compiled code called back into Python comes out as a SystemError whose cause it is), else None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, KeyboardInterrupt):
            return signal.SIGINT
        if isinstance(exc, _Terminated):
            return exc.signum
        exc = exc.__cause__ or exc.__context__
    return None


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
    """Run a parsed sub-command: user errors become a located message on stderr and status 2; Ctrl+C and SIGTERM
    end it with 130 and 143 (_Signals: during a run, the rows computed so far are written first)."""
    global _signals
    outer = _signals
    previous = {}
    state = _Signals()
    if not getattr(args, "_event_loop", False):  # (in a Qt event loop the exception would end in a slot, swallowed)
        try:
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous[sig] = signal.signal(sig, state)
        except ValueError:  # not the main thread (a caller's worker): leave the signals alone
            pass
    if previous:
        _signals = state
    try:
        with _standard_streams():
            try:
                return _run_command(args)
            except BaseException as exc:  # noqa: BLE001 - a signal's exception, or one it caused
                signum = _signal_of(exc)
                if signum is None:
                    raise
                print("interrupted" if signum == signal.SIGINT else "terminated", file=sys.stderr)
                return 128 + signum
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if previous:
            _signals = outer


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


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush of unwritable output raises nothing."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def build_parser_or_status(prog: str = "linkwright"):
    """build_parser(), or the status of a Ctrl+C or SIGTERM that came while it imported the commands' modules (numpy,
    sympy, ...: the first ~0.6 s): `interrupted` or `terminated` on stderr and 130 or 143, as later on (a
    KeyboardInterrupt traceback was printed; SIGTERM killed the process without a word)."""
    try:
        previous = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread
        previous = None
    try:
        return build_parser(prog)
    except (KeyboardInterrupt, _Terminated) as exc:
        signum = _signal_of(exc)
        print("interrupted" if signum == signal.SIGINT else "terminated", file=sys.stderr)
        return 128 + signum
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for the headless commands (`python -m core.cli ...`)."""
    built = build_parser_or_status()
    if isinstance(built, int):
        return built
    parser, _ = built
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    return run_command(args)
