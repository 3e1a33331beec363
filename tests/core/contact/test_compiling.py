"""core.contact.compiling: the kernels' first-run compile runs in a child process that a stop terminates at once,
then they are loaded from numba's cache in the calling thread; compiled in the calling thread only when that cannot
work, with the reason.  (Before, prepare_kernels compiled them in the run's thread, 53 s of CPU on the development
machine, and the app's Stop waited for all of it: the run's thread ended 62 s after Stop.)

The cold compile itself is exercised once, in tests/app/playback/test_stop_during_compile.py (serial); here the
child is a stand-in process, and the kernels are loaded already."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from numba import njit

from core.contact import compiling, kernels, prepare_kernels
from core.contact.compiling import KernelsCancelled, ensure_kernels
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def loaded():
    """The kernels compiled or loaded in this process (on a fresh clone: compiled, about a minute)."""
    prepare_kernels()


def _stand_in_child(monkeypatch, code: str, misses: list) -> None:
    """The kernels look missing from the cache for as many loads as `misses` holds (the names of the kernels that
    numba would have compiled), and the compiling process runs `code` instead."""
    monkeypatch.setattr(compiling, "_load_only", lambda: misses.pop(0) if misses else None)
    monkeypatch.setattr(compiling, "_child_command", lambda: ([sys.executable, "-c", code], dict(os.environ)))


def test_a_cache_miss_is_caught_before_numba_compiles_and_only_in_the_watching_thread():
    @njit(cache=False)
    def twice(x):
        return 2.0 * x

    with compiling._MissListener(threading.get_ident()):
        with pytest.raises(compiling._CompileNeeded):
            twice(1.0)
        assert not twice.overloads  # (nothing was compiled: the miss is caught before numba's compiler runs)
        out = []
        other = threading.Thread(target=lambda: out.append(twice(2.0)))  # another thread compiles as usual
        other.start()
        other.join()
    assert out == [4.0] and len(twice.overloads) == 1
    assert twice(3.0) == 6.0  # (and the listener is gone)


def test_kernels_in_the_cache_are_loaded_without_a_child_process(loaded, monkeypatch):
    def no_child(*a, **k):
        raise AssertionError("a compiling process was started")

    monkeypatch.setattr(compiling.subprocess, "Popen", no_child)
    notes = []
    assert ensure_kernels(notify=notes.append) == "loaded"
    assert notes == []


def test_a_stop_terminates_the_compiling_process_at_once(loaded, monkeypatch, tmp_path):
    pid_file = tmp_path / "pid"
    _stand_in_child(monkeypatch, f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
                                 "time.sleep(120)", ["batch_rows"])
    stopped = []

    def cancel() -> bool:  # Stop, once the compiling process is under way
        if pid_file.exists() and pid_file.read_text():
            stopped.append(stopped[0] if stopped else time.perf_counter())
        return bool(stopped)

    notes = []
    with pytest.raises(KernelsCancelled):
        ensure_kernels(cancel=cancel, notify=notes.append)
    took = time.perf_counter() - stopped[0]
    assert took < 1.0, f"ensure_kernels returned {took * 1000:.0f} ms after the stop"
    assert notes and notes[0].stage == "compiling" and notes[0].estimate == compiling.COMPILE_ESTIMATE_SECONDS
    with pytest.raises(ProcessLookupError):  # (terminated and reaped)
        os.kill(int(pid_file.read_text()), 0)


def test_a_stopped_compile_leaves_no_partly_written_cache_file(loaded, monkeypatch, tmp_path):
    # numba writes a cache file as <name>.tmp.<id> and renames it when complete: a compile terminated mid-write left
    # the partial file in the cache folder for good (review s57). The complete files stay.
    monkeypatch.setattr(compiling, "kernel_cache_dir", lambda: str(tmp_path))
    partial, done = tmp_path / "kernels.batch_rows-10.py311.1.nbc.tmp.1f2e", tmp_path / "kernels.step-3.py311.nbi"
    _stand_in_child(monkeypatch, f"import time; open({str(done)!r}, 'w').write('index'); "
                                 f"open({str(partial)!r}, 'w').write('half'); time.sleep(120)", ["batch_rows"])
    with pytest.raises(KernelsCancelled):
        ensure_kernels(cancel=lambda: partial.exists())
    assert not partial.exists() and done.read_text() == "index"
    assert (tmp_path / compiling.LOCK_NAME).exists()  # (the lock file is no cache file: it stays)


def test_a_compile_that_ends_well_is_loaded_from_the_cache_after_it(loaded, monkeypatch):
    misses = ["batch_rows"]
    _stand_in_child(monkeypatch, "pass", misses)
    notes = []
    assert ensure_kernels(notify=notes.append) == "compiled"
    assert misses == [] and [n.stage for n in notes] == ["compiling"]


def test_a_failed_compiling_process_falls_back_to_compiling_here_and_says_why(loaded, monkeypatch):
    _stand_in_child(monkeypatch, "import sys; sys.stderr.write('no space left on device\\n'); sys.exit(5)",
                    ["batch_rows"])
    notes = []
    assert ensure_kernels(notify=notes.append) == "in-process"
    assert [n.stage for n in notes] == ["compiling", "in-process"]
    assert "status 5" in notes[-1].reason and "no space left on device" in notes[-1].reason


def test_a_cache_this_process_cannot_load_is_said(loaded, monkeypatch):
    _stand_in_child(monkeypatch, "pass", ["batch_rows", "batch_rows"])  # missing again after the child's compile
    notes = []
    assert ensure_kernels(notify=notes.append) == "in-process"
    assert "could not be loaded from numba's cache" in notes[-1].reason and "batch_rows" in notes[-1].reason


def test_without_a_writable_cache_folder_the_kernels_are_compiled_here(loaded, monkeypatch):
    monkeypatch.setattr(kernels, "CACHED", False)
    monkeypatch.setattr(compiling.subprocess, "Popen", lambda *a, **k: pytest.fail("a compiling process started"))
    notes = []
    assert ensure_kernels(notify=notes.append) == "in-process"
    assert "NUMBA_CACHE_DIR" in notes[0].reason and compiling.kernel_cache_dir() is None


def test_no_writable_cache_folder_does_not_break_the_import():
    """numba finds no folder to cache the kernels in (a read-only install and home; here its locators told to use
    none that fits a module file): `njit(cache=True)` raised RuntimeError ("cannot cache function '_sk': no locator
    available") when core.contact was imported; now the kernels are not cached."""
    import numba

    assert hasattr(numba.config, "CACHE_LOCATOR_CLASSES")  # (numba >= 0.62, pyproject.toml)
    env = dict(os.environ, NUMBA_CACHE_LOCATOR_CLASSES="IPythonCacheLocator", PYTHONPATH=str(ROOT))
    env.pop("NUMBA_CACHE_DIR", None)
    r = subprocess.run([sys.executable, "-c", "from core.contact import kernels, compiling; "
                        "print(kernels.CACHED, compiling.kernel_cache_dir())"], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.split() == ["False", "None"], r.stderr


def test_the_compiling_process_ends_when_its_parent_is_gone(tmp_path):
    """The child watches its stdin, a pipe from the parent: closed (the parent killed outright, no chance to stop
    the child), it ends at once instead of compiling on."""
    cmd, env = compiling._child_command()
    env["NUMBA_CACHE_DIR"] = str(tmp_path)  # (empty: it would compile for a minute)
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        proc.stdin.close()
        assert proc.wait(timeout=10) == 3
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()


def test_the_compiling_process_refuses_another_core_package(tmp_path):
    """It compiles the kernels of the `core` package its parent imported (the cache is per source file): a
    different file named on its command line is refused."""
    cmd, env = compiling._child_command()
    proc = subprocess.Popen(cmd[:-1] + [str(tmp_path / "kernels.py")], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        status = proc.wait(timeout=120)  # (its stdin kept open meanwhile: closed, it would end with status 3)
    finally:
        proc.stdin.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert status == 4 and "not" in proc.stderr.read()
    assert cmd[-1] == os.path.abspath(kernels.__file__)


def test_a_compile_waits_for_another_process_compiling_into_the_same_cache(loaded, monkeypatch, tmp_path):
    # review s57: two processes compiling into one numba cache at once can corrupt its index; the compile takes an
    # exclusive lock on the cache folder.  Another process holds it: the compile waits (a stop ends the wait at
    # once); once it is released and the kernels load from the cache, no compiling process of this one's is started
    monkeypatch.setattr(compiling, "kernel_cache_dir", lambda: str(tmp_path))
    started = []
    misses = ["batch_rows", "batch_rows"]
    _stand_in_child(monkeypatch, "import sys; sys.exit(0)", misses)
    real_child = compiling._compile_in_child
    monkeypatch.setattr(compiling, "_compile_in_child", lambda *a: started.append(1) or real_child(*a))
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
         "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()",
         str(tmp_path / compiling.LOCK_NAME)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        stop = threading.Event()
        threading.Timer(0.2, stop.set).start()
        t0 = time.perf_counter()
        with pytest.raises(KernelsCancelled):
            ensure_kernels(cancel=stop.is_set)
        assert time.perf_counter() - t0 < 2.0 and not started  # (it waited, and a stop ended the wait)
        misses[:] = ["batch_rows"]  # (missing once more; then the other process's compile has written them)
        threading.Timer(0.3, holder.stdin.close).start()  # (the other process ends, its lock with it)
        assert ensure_kernels() == "compiled" and not started
    finally:
        holder.kill()
        holder.wait()
