"""Stop during a machine's first contact run, while the contact solver's kernels are compiled (numba, about a minute):
the run ends at once as stopped by the user, the status said what was going on meanwhile, and the next run compiles
the rest and runs.  Before, the compile ran in the run's thread, where it cannot be interrupted: the run's thread
ended 62 s after Stop (sphere drop, empty cache, Stop 3 s into the compile).

The test process has the kernels loaded already (tests/app/conftest.py), so the window runs in a child process with
an empty numba cache (NUMBA_CACHE_DIR).  It is the suite's one cold compile (60-120 s on the development machine),
and it times Stop: serial.  The window's side of it (the status, Stop, the fallback's status) is also checked in this
process with a stand-in for the compile."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES, ROOT

pytestmark = pytest.mark.gui

SCRIPT = r"""
import json, os, sys, time
from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtWidgets import QApplication
QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
qapp = QApplication([])
QCoreApplication.setOrganizationName("LinkwrightTests"); QCoreApplication.setApplicationName("LinkwrightTests")
from core import io
from app.document import Document
from app.window import MainWindow

cache, example = sys.argv[1], sys.argv[2]
out = {"statuses": []}
win = MainWindow(Document(io.load(example)))
win.show()
pb = win.playback

def wait(cond, timeout):
    end = time.perf_counter() + timeout
    while not cond() and time.perf_counter() < end:
        qapp.processEvents()
        s = win.motion.status_label.text()
        if not out["statuses"] or out["statuses"][-1] != s:
            out["statuses"].append(s)
        time.sleep(0.002)
    return cond()

def compiled_files():
    return sum(f.endswith(".nbi") for _, _, fs in os.walk(cache) for f in fs)

# the document's run starts by itself (the sphere drop's expected work is small); Stop once the compile is under way
out["compiling"] = wait(lambda: compiled_files() > 0, 240)
threads = pb.worker.threads()
t0 = time.perf_counter()
win.action_set.stop.trigger()
while any(t.is_alive() for t in threads) and time.perf_counter() - t0 < 120:
    time.sleep(0.002)
out["stop_seconds"] = time.perf_counter() - t0
wait(lambda: pb.recording.complete, 10)
out["stopped"] = {"status": win.motion.status_label.text(), "count": pb.recording.count,
                  "complete": pb.recording.complete}
out["statuses"].append("-- Run")
win.action_set.run.trigger()
wait(lambda: pb.recording.complete and pb.recording.count > 0 and not pb.worker.running(), 400)
out["rerun"] = {"status": win.motion.status_label.text(), "count": pb.recording.count, "ok": pb.recording.ok}
pb.worker.shutdown()
win.document.undo_stack.setClean()
win.close()
print(json.dumps(out), flush=True)
os._exit(0)
"""


@pytest.mark.serial
@pytest.mark.timeout(900)
def test_stop_during_the_first_compile_ends_the_run_at_once_and_the_next_run_works(tmp_path):
    cache = tmp_path / "numba"
    cache.mkdir()
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT), XDG_CONFIG_HOME=str(tmp_path / "cfg"),
               XDG_DATA_HOME=str(tmp_path / "data"))
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(cache), str(EXAMPLES / "contact_sphere_drop.json")],
                       env=env, cwd=ROOT, capture_output=True, text=True, timeout=850)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["compiling"], out["statuses"]
    # Stop ended the run at once, stopped by the user with no frame...
    assert out["stop_seconds"] < 2.0, f"the run's thread ended {out['stop_seconds']:.1f} s after Stop"
    assert out["stopped"] == {"status": "stopped by the user", "count": 0, "complete": True}
    # ...and the status had said what the run was doing (the compile, in a child process that Stop ends)
    before = out["statuses"][:out["statuses"].index("-- Run")]
    assert any(s.startswith("compiling the contact solver's kernels: a machine's first run only") for s in before), before
    # the next run compiled the rest (saying so) and ran to its end
    after = out["statuses"][out["statuses"].index("-- Run"):]
    assert any("compiling the contact solver's kernels" in s for s in after), after
    assert out["rerun"] == {"status": "101 frames, t = 0 … 1 s", "count": 101, "ok": True}
    assert sum(f.suffix == ".nbi" for f in cache.rglob("*")) > 50  # (written to the cache it was given)


@pytest.fixture
def stand_in_compile(monkeypatch):
    """The window's first contact run finds the kernels missing (this process has loaded them: the worker is made to
    prepare them again) and `compile(cancel, notify)` stands in for core.contact.compiling.ensure_kernels."""
    import app.playback.worker as worker_module
    from core.contact import compiling

    monkeypatch.setattr(worker_module, "_KERNELS_READY", [])

    def use(compile_):
        monkeypatch.setattr(compiling, "ensure_kernels", compile_)

    return use


def test_the_window_says_the_kernels_are_compiled_and_stop_ends_the_compile(make_window, qtbot, stand_in_compile):
    import time

    from core import io
    from core.contact.compiling import KernelsCancelled, Note

    asked = []

    def compile_until_stopped(cancel, notify):
        notify(Note("compiling", 12.4, 60))
        while not cancel():
            time.sleep(0.005)
        asked.append("stopped")
        raise KernelsCancelled("cancelled while the contact kernels were compiled")

    stand_in_compile(compile_until_stopped)
    win = make_window(io.load(EXAMPLES / "contact_sphere_drop.json"))  # (its run starts by itself)
    pb, label = win.playback, win.motion.status_label
    qtbot.waitUntil(lambda: label.text().startswith("compiling"), timeout=30000)
    assert label.text() == ("compiling the contact solver's kernels: a machine's first run only, about 60 s "
                            "(12 s so far)")
    assert "Stop (Shift+F5) ends the compile at once" in pb.status_tip
    win.action_set.stop.trigger()
    qtbot.waitUntil(lambda: pb.recording.complete and not pb.worker.running(), timeout=5000)
    assert asked == ["stopped"] and pb.recording.count == 0
    assert label.text() == "stopped by the user"


def test_the_window_says_when_the_kernels_are_compiled_in_the_runs_thread(make_window, qtbot, stand_in_compile):
    import threading

    from core import io
    from core.contact import prepare_kernels
    from core.contact.compiling import Note

    looked = threading.Event()

    def compile_here(cancel, notify):
        notify(Note("in-process", 0.0, 60, "numba has no writable cache folder (set NUMBA_CACHE_DIR to one)"))
        looked.wait(30)  # (the compile, as long as the test looks at the status)
        prepare_kernels()
        return "in-process"

    stand_in_compile(compile_here)
    win = make_window(io.load(EXAMPLES / "contact_sphere_drop.json"))
    pb = win.playback
    try:
        qtbot.waitUntil(lambda: "in this process" in pb.status, timeout=30000)
        assert pb.status == ("compiling the contact solver's kernels in this process, about 60 s: Stop takes effect "
                             "after it")
        assert pb.status_tip == ("They could not be compiled in a separate process that Stop can end: numba has no "
                                 "writable cache folder (set NUMBA_CACHE_DIR to one).")
        assert win.motion.status_label.text() == pb.status
    finally:
        looked.set()
    qtbot.waitUntil(lambda: pb.recording.complete and not pb.worker.running(), timeout=60000)
    assert pb.recording.ok and pb.recording.count == 101
