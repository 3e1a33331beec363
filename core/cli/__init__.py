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
           "interruption", "report_interruption", "build_parser_or_status", "command_signals",
           "release_signals", "signal_status"]


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


class _Signals:
    """Ctrl+C (SIGINT) and SIGTERM while a command runs in the main thread: one handler from the start of `main` (the
    commands' modules loading) to the process's exit (`command_signals`), or for run_command's call alone.

    Outside a run they raise (KeyboardInterrupt, _Terminated): loading or writing ends at once, the atomic writes'
    clean-up runs. During a run (the block of `run_interruptibly`) the first one raises nothing: it is noted, and the
    run's cancel callable (`cancel_requested`) reads it between solver iterations and steps, so the run ends as a
    cancelled run with its rows kept. (Raised inside the run, the KeyboardInterrupt could land in a numba dispatcher's
    call back into Python and come out as a SystemError with a traceback, the rows lost.) A second signal during the
    run raises as outside it.

    Python drops an exception raised in a weakref or ctypes callback ("Exception ignored ..."), and a library may
    swallow it: a signal whose exception fell there before the run (importlib's module locks, llvmlite's object cache
    while numba loads the kernels, the commands' imports) is raised again when the commands are loaded
    (build_parser_or_status), when run_command starts the command and when the run would start
    (`run_interruptibly`), instead of being lost.

    Once the command has its status (`finished`), a signal no longer raises (it would come out of the interpreter's
    exit as a traceback): the process ends at once, with the word and 130 or 143 if no signal had ended it yet."""

    def __init__(self) -> None:
        self.in_run = False
        self.caught: int | None = None  # the signal noted during the run
        self.raised: int | None = None  # the last signal raised outside the run
        self.finished = False  # the command has its status: the process only exits
        self.told = False  # `interrupted` or `terminated` has been said
        self.status: int | None = None  # then the command's status, 130 or 143

    def __call__(self, signum, _frame) -> None:
        if self.told:  # the command ends with the word and status of a signal already
            return
        if self.finished:
            self.told = True
            # (os.write, not print: the handler may run while the main thread is inside a write to sys.stderr)
            os.write(2, b"interrupted\n" if signum == signal.SIGINT else b"terminated\n")
            os._exit(128 + signum)
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

    def end(self, signum: int) -> int:
        """`interrupted` or `terminated` on stderr for the signal that ended the command; its status, 130 or 143.
        (A further signal is not raised: the command ends with this status.)"""
        self.told = True
        self.status = 128 + signum
        _say_signal(signum)
        return self.status


def _say_signal(signum: int) -> None:
    print("interrupted" if signum == signal.SIGINT else "terminated", file=sys.stderr)


def signal_status(exc: BaseException) -> int | None:
    """When `exc` is a signal's exception or one it caused (_signal_of): `interrupted` or `terminated` said on stderr
    and the status, 130 or 143; None otherwise (the caller re-raises it). Also any exception after a signal was
    raised (_Signals.raised): a library may replace the signal's exception by its own without chaining it (numpy's
    C extension, interrupted while it imports datetime: "PyCapsule_Import could not import module", then its
    ImportError 'bad install'), and the command ends because of the signal either way."""
    signum = _signal_of(exc)
    if signum is None and _signals is not None:
        signum = _signals.raised
    if signum is None:
        return None
    if _signals is not None:
        return _signals.end(signum)
    _say_signal(signum)
    return 128 + signum


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
    end it with 130 and 143 (_Signals: during a run, the rows computed so far are written first). The signals are
    those of `command_signals` when main installed them, else run_command's own for the call."""
    if _signals is not None:  # main's, since the process started (a Qt event loop's command takes them over itself)
        return _run_handled(args, _signals)
    if getattr(args, "_event_loop", False):  # (in a Qt event loop the exception would end in a slot, swallowed)
        return _run_handled(args, None)
    with _installed() as state:
        return _run_handled(args, state)


def _run_handled(args: argparse.Namespace, state: _Signals | None) -> int:
    with _standard_streams():
        try:
            if state is not None and state.raised is not None:  # dropped on the way here (_Signals): do not start
                state.throw(state.raised)
            return _run_command(args)
        except BaseException as exc:  # noqa: BLE001 - a signal's exception, or one it caused
            status = signal_status(exc)
            if status is None:
                raise
            return status


@contextmanager
def _installed() -> Iterator[_Signals | None]:
    """A _Signals as the SIGINT and SIGTERM handler for the block (None and the signals left alone outside the main
    thread), the previous handlers given back after it."""
    global _signals
    outer = _signals
    previous = {}
    state = _Signals()
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, state)
    except ValueError:  # not the main thread (a caller's worker): leave the signals alone
        pass
    if previous:
        _signals = state
    try:
        yield state if previous else None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if previous:
            _signals = outer


@contextmanager
def command_signals(program: bool) -> Iterator[_Signals | None]:
    """`main`'s Ctrl+C and SIGTERM, one _Signals from the start of the command (before its modules load) to its end:
    no moment where SIGTERM kills without a word or a signal's exception goes unhandled. `program`: the process's
    own command line, where the handler stays until the process exits (`_Signals.finished`); a caller's call (a test's)
    gets its handlers back after the block. Nested (main inside main), the outer one's."""
    global _signals
    if _signals is not None:
        yield _signals
        return
    if not program:
        previous_hook = sys.unraisablehook
        sys.unraisablehook = _quiet_signals(previous_hook)
        try:
            with _installed() as state:
                yield state
        finally:
            sys.unraisablehook = previous_hook
        return
    sys.unraisablehook = _quiet_signals(sys.unraisablehook)
    state = _Signals()
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, state)
    except ValueError:  # not the main thread
        yield None
        return
    _signals = state
    try:
        yield state
    finally:
        state.finished = True  # from here to the exit a signal ends the process (with the word, if none had)
        if state.status is not None:
            # Ended by a signal: the process exits now with 130 or 143. (Through the interpreter's exit, a
            # KeyboardInterrupt that had passed through an extension module's run of Python source, as while numpy
            # or numba load, made CPython end the process by SIGINT itself, status -2, after `interrupted`.)
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError, AttributeError):
                    pass
            os._exit(state.status)


def _quiet_signals(hook):
    """sys.unraisablehook that prints nothing for a signal's exception Python drops (raised in a weakref or ctypes
    callback, or a __del__: "Exception ignored in ... Traceback ... KeyboardInterrupt" after which the command still
    ended with `interrupted`, _Signals.raised having noted it), and hands any other to `hook`."""

    def quiet(unraisable) -> None:
        if unraisable.exc_value is not None and _signal_of(unraisable.exc_value) is not None:
            return
        hook(unraisable)

    return quiet


def release_signals() -> None:
    """Give SIGINT and SIGTERM back to Python's defaults (the GUI's start: it is no command of this package)."""
    global _signals
    if _signals is None:
        return
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except ValueError:
        return
    _signals = None


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
    KeyboardInterrupt traceback was printed; numpy's import turned it into an ImportError blaming the install, and
    dataclasses into a RuntimeError, both status 1; SIGTERM killed the process without a word). The signals are
    handled by `command_signals` (main's, installed before this); a signal whose exception a library swallowed while
    loading is found here too."""
    with command_signals(program=False) as state:
        try:
            built = build_parser(prog)
        except BaseException as exc:  # noqa: BLE001 - a signal's exception, or one it caused
            status = signal_status(exc)
            if status is None:
                raise
            return status
        if state is not None and state.raised is not None:  # raised, then swallowed on the way
            return state.end(state.raised)
        return built


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for the headless commands (`python -m core.cli ...`)."""
    with command_signals(program=argv is None) as state:
        try:
            built = build_parser_or_status()
            if isinstance(built, int):
                return built
            parser, _ = built
            args = parser.parse_args(argv)
            if not getattr(args, "command", None):
                parser.print_help()
                return 2
            return run_command(args)
        except BaseException as exc:  # noqa: BLE001 - a signal's exception (parsing), or one it caused
            status = signal_status(exc)
            if status is None:
                raise
            return status
