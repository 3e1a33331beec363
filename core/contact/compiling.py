"""The compiled kernels made ready for a run without a compile that cannot be stopped: `ensure_kernels`.

numba compiles core.contact.kernels on a machine's first run (about a minute of CPU) and caches the result; every
later process loads it from the cache in a second or two (core.contact.prepare_kernels does either, in the calling
thread).  A compile in progress cannot be interrupted in its thread: the app's Stop and a window's close waited for
it, and the command line's Ctrl+C could land inside it.  So `ensure_kernels`:

1. loads the kernels in the calling thread (prepare_kernels) while a numba event listener watches this thread: the
   first kernel that would be compiled rather than loaded from the cache (numba's "numba:compile" event, which fires
   only on a cache miss) raises _CompileNeeded there, before any compiling starts;
2. then runs prepare_kernels in a child process (`python -c ...` calling _child_main: the same `core` package and
   environment, hence the same cache directory), which compiles the missing kernels and writes them to numba's cache,
   while the calling thread waits for it and looks at `cancel` every few milliseconds: on stop the child is
   terminated at once (what it had compiled stays cached; the next run compiles the rest) and KernelsCancelled is
   raised.  The compile holds an exclusive lock on the cache folder (_cache_lock): another process compiling into
   the same cache is waited for (stoppable too), and what it compiled is then loaded;
3. loads the kernels again in the calling thread, now from the cache.  Only when that still finds a kernel to
   compile (the child could not write a usable cache), when the child failed, or when numba cannot cache at all, are
   the kernels compiled in the calling thread, as before, and `notify` says so (Note.stage "in-process").

Where numba's cache is: NUMBA_CACHE_DIR when set, else `__pycache__` beside core/contact/kernels.py when that folder
is writable (a source checkout, a per-user install), else numba's per-user cache folder (~/.cache/numba/contact_<hash>
on Linux, numba's own fallback for a read-only site-packages).  When none of these can be written, the kernels are
not cached (kernels.CACHED is False) and every process compiles them (`kernel_cache_dir` returns None).
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Callable

__all__ = ["ensure_kernels", "KernelsCancelled", "Note", "kernel_cache_dir", "COMPILE_ESTIMATE_SECONDS"]

log = logging.getLogger(__name__)

# Seconds a cold compile takes (the status's estimate): 62.7 s of wall time (52.9 s of CPU) for prepare_kernels with
# an empty cache on the 2-core development machine, 2026-12; the child's start adds about 1 s and the load from the
# cache afterwards 1-1.5 s.
COMPILE_ESTIMATE_SECONDS = 60
POLL_SECONDS = 0.005  # how often the waiting thread looks at `cancel`
NOTE_SECONDS = 1.0  # how often `notify` is told the time so far while the child compiles


class KernelsCancelled(Exception):
    """`cancel` said stop while the kernels were being compiled (the child process has been terminated)."""


class _CompileNeeded(BaseException):
    """Raised in the loading thread at numba's first cache miss. A BaseException: the stepper's `except Exception`
    around a solver attempt must not take it for a failed attempt."""


@dataclass(frozen=True)
class Note:
    """What ensure_kernels is doing, for a status line.

    stage: "compiling" (a child process compiles the kernels; cancel stops it) or "in-process" (compiled in the
    calling thread, which cannot be stopped until it is done; `reason` says why). elapsed: seconds since the
    compile started; estimate: COMPILE_ESTIMATE_SECONDS."""

    stage: str
    elapsed: float
    estimate: float
    reason: str = ""


class _MissListener:
    """numba event listener raising _CompileNeeded in one thread when numba is about to compile (a cache miss)."""

    def __init__(self, thread_id: int) -> None:
        from numba.core import event

        class Listener(event.Listener):
            def on_start(inner, ev) -> None:  # noqa: N805 - the listener's self is the outer's closure
                if threading.get_ident() == thread_id:
                    raise _CompileNeeded(getattr(ev.data.get("dispatcher"), "__name__", "?"))

            def on_end(inner, ev) -> None:  # noqa: N805
                pass

        self._listener = Listener()
        self._event = event

    def __enter__(self) -> "_MissListener":
        self._event.register("numba:compile", self._listener)
        return self

    def __exit__(self, *exc) -> None:
        self._event.unregister("numba:compile", self._listener)


def _load_only() -> str | None:
    """prepare_kernels in this thread as long as every kernel loads from numba's cache; the name of the first kernel
    that would have been compiled instead (nothing compiled then), or None when all of them loaded."""
    from .recording import prepare_kernels

    try:
        with _MissListener(threading.get_ident()):
            prepare_kernels()
    except _CompileNeeded as exc:
        return str(exc.args[0]) if exc.args else "?"
    return None


def kernel_cache_dir() -> str | None:
    """The folder numba caches core.contact.kernels in (see the module's docstring), None when it cannot cache them.
    (numba's locator, read through its dispatcher's private attributes: None too if those have changed.)"""
    from . import kernels

    if not kernels.CACHED:
        return None
    try:
        return str(kernels.batch_rows._cache._cache_path)
    except AttributeError:
        return None


def _child_command() -> tuple[list[str], dict]:
    """The child's command line and environment: this interpreter, and this `core` package first on its path."""
    import core

    root = os.path.dirname(os.path.dirname(os.path.abspath(core.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    if env.get("NUMBA_CACHE_DIR"):  # (numba's, as this process reads it)
        env["NUMBA_CACHE_DIR"] = os.path.abspath(env["NUMBA_CACHE_DIR"])
    code = "import sys; from core.contact.compiling import _child_main; sys.exit(_child_main(sys.argv[1:]))"
    # -P: the working folder not first on the path (another `core` there would be imported instead)
    return [sys.executable, "-P", "-c", code, _kernels_file()], env


def _kernels_file() -> str:
    from . import kernels

    return os.path.abspath(kernels.__file__)


def _compile_in_child(cancel: Callable[[], bool], tick: Callable[[], None]) -> str:
    """Run the child compile; "" when it ended well, else why not. KernelsCancelled when `cancel` says stop (the child
    terminated first)."""
    try:
        cmd, env = _child_command()
        err = tempfile.TemporaryFile()  # (no writable temporary folder: said as the reason, as a failed start)
    except (OSError, TypeError, ValueError) as exc:
        return f"could not prepare the compiling process: {exc}"
    with err:
        try:
            # its own session: a terminal's Ctrl+C goes to this process, which stops the child itself; stdin a pipe
            # this process never writes to, which the child watches (closed: this process is gone, the child ends)
            proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err,
                                    start_new_session=True)
        except (OSError, TypeError, ValueError) as exc:  # (TypeError: no sys.executable in an embedded interpreter)
            return f"could not start {cmd[0]}: {exc}"
        try:
            while proc.poll() is None:
                if cancel():
                    raise KernelsCancelled("cancelled while the contact kernels were compiled")
                tick()
                time.sleep(POLL_SECONDS)
        finally:
            if proc.poll() is None:  # (cancelled, or an exception here: a Ctrl+C's KeyboardInterrupt)
                proc.terminate()
                try:
                    proc.wait(1.0)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                _remove_partial_files()
            proc.stdin.close()
        if proc.returncode != 0:
            err.seek(0)
            tail = err.read().decode(errors="replace").strip().splitlines()[-3:]
            return f"the compiling process ended with status {proc.returncode}" + (f": {' / '.join(tail)}" if tail else "")
    return ""


def _remove_partial_files() -> None:
    """Remove the cache files a terminated compile was writing: numba writes each to `<name>.tmp.<id>` and renames
    it when complete, so a child ended mid-write leaves that file behind (a few MB each, never read, never removed).
    Only the kernels' own (`kernels.*.tmp.*`): the caller holds the cache folder's lock (_cache_lock), which every
    compile into the cache holds (the child's and one in the calling process alike), so no other is writing one."""
    folder = kernel_cache_dir()
    try:
        names = os.listdir(folder) if folder else []
    except OSError:
        return
    for name in names:
        if name.startswith("kernels.") and ".tmp." in name:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, name))


def ensure_kernels(cancel: Callable[[], bool] | None = None, notify: Callable[[Note], None] | None = None) -> str:
    """Load the contact kernels in this thread; compile them first, when numba's cache lacks them, in a child process
    that `cancel` stops (KernelsCancelled). `notify` gets a Note when a compile starts and about once a second while
    it runs (in this thread). Returns how the kernels came: "loaded" (from the cache), "compiled" (by the child, then
    loaded) or "in-process" (compiled here: numba cannot cache them, or the child could not; the Note said why)."""
    from . import kernels
    from .recording import prepare_kernels

    cancel = cancel or (lambda: False)
    notify = notify or (lambda note: None)
    t0 = time.perf_counter()

    def in_process(reason: str) -> str:
        # (a warning: with no logging set up, Python prints it on stderr, the command line's note too)
        log.warning("note: compiling the contact kernels in this process (about %d s, which a stop waits for): %s",
                    COMPILE_ESTIMATE_SECONDS, reason)
        notify(Note("in-process", time.perf_counter() - t0, COMPILE_ESTIMATE_SECONDS, reason))
        with _cache_lock(lambda: False, lambda: None):  # (every compile into the cache holds its lock)
            prepare_kernels()
        return "in-process"

    if not kernels.CACHED:
        return in_process("numba has no writable cache folder (set NUMBA_CACHE_DIR to one)")
    missing = _load_only()
    if missing is None:
        return "loaded"
    if cancel():
        raise KernelsCancelled("cancelled before the contact kernels were compiled")
    t0 = time.perf_counter()
    last = [t0]
    notify(Note("compiling", 0.0, COMPILE_ESTIMATE_SECONDS))

    def tick() -> None:
        now = time.perf_counter()
        if now - last[0] >= NOTE_SECONDS:
            last[0] = now
            notify(Note("compiling", now - t0, COMPILE_ESTIMATE_SECONDS))

    with _cache_lock(cancel, tick) as waited:
        if waited and _load_only() is None:  # (another process compiled them meanwhile)
            return "compiled"
        failed = _compile_in_child(cancel, tick)
    if failed:
        return in_process(failed)
    if cancel():
        raise KernelsCancelled("cancelled while the contact kernels were compiled")
    missing = _load_only()
    if missing is not None:
        return in_process(f"the kernels the compiling process wrote could not be loaded from numba's cache "
                          f"({kernel_cache_dir()}; first missing: {missing})")
    return "compiled"


LOCK_NAME = "linkwright-kernels.lock"


@contextlib.contextmanager
def _cache_lock(cancel: Callable[[], bool], tick: Callable[[], None]):
    """An exclusive advisory lock on numba's cache folder for the compile (yields whether it had to wait for another
    process).  numba writes a kernel's cache index by reading, changing and writing it back, unlocked, and numbers the
    compiled files by their place in it: two processes compiling into one cache at once (two windows' first runs, an
    app's and a `linkwright simulate`'s) can lose each other's entries or give one signature's number to another's
    file.  The lock file is in the cache folder (else the temporary folder); where it cannot be made or locked
    (no fcntl or msvcrt), the compile goes on without it.  Waiting looks at `cancel` every POLL_SECONDS."""
    folder = kernel_cache_dir()
    try:
        fd = os.open(os.path.join(folder if folder and os.path.isdir(folder) else tempfile.gettempdir(), LOCK_NAME),
                     os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        yield False
        return
    try:
        lock, unlock = _lock_calls(fd)
        waited = False
        while lock is not None:
            try:
                lock()
                break
            except OSError:  # (held by another process)
                waited = True
                if cancel():
                    raise KernelsCancelled("cancelled while another process compiled the contact kernels")
                tick()
                time.sleep(POLL_SECONDS)
        try:
            yield waited
        finally:
            if lock is not None:
                unlock()
    finally:
        os.close(fd)


def _lock_calls(fd: int):
    """Non-blocking exclusive lock and unlock of file descriptor fd (fcntl on POSIX, msvcrt on Windows); (None, None)
    where neither is available."""
    try:
        import fcntl

        return (lambda: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)), (lambda: fcntl.flock(fd, fcntl.LOCK_UN))
    except ImportError:
        pass
    try:
        import msvcrt

        return (lambda: msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)), (lambda: msvcrt.locking(fd, msvcrt.LK_UNLCK, 1))
    except ImportError:
        return None, None


def _exit_with_parent() -> None:
    """In the child: end at once when stdin closes (the parent is gone). (os.read on the descriptor, not sys.stdin: a
    daemon thread blocked in a buffered read holds the buffer's lock, and the interpreter's exit then aborted, status
    -6, "could not acquire lock for <stdin> at interpreter shutdown".)"""
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    os._exit(3)


def _child_main(argv: list[str]) -> int:
    threading.Thread(target=_exit_with_parent, daemon=True).start()
    if argv and os.path.abspath(argv[0]) != _kernels_file():  # (a different core package: its cache is not ours)
        print(f"core.contact.kernels is {_kernels_file()}, not {argv[0]}", file=sys.stderr)
        return 4
    from .recording import prepare_kernels

    prepare_kernels()
    return 0
