"""Stop during a machine's first contact run, while the contact solver's kernels are compiled (numba, about a minute):
the run ends at once as stopped by the user, the status said what was going on meanwhile, and the next run compiles
the rest and runs.  Before, the compile ran in the run's thread, where it cannot be interrupted: the run's thread
ended 62 s after Stop (sphere drop, empty cache, Stop 3 s into the compile).

The test process has the kernels loaded already (tests/app/conftest.py), so the window runs in a child process with
an empty numba cache (NUMBA_CACHE_DIR).  It is the suite's one cold compile (60-120 s on the development machine),
and it times Stop: serial."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES, ROOT

pytestmark = [pytest.mark.gui, pytest.mark.serial]

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
