"""The process-wide BLAS thread limit of contact runs is set in the GUI thread when the window's SolveWorker is made,
before any run's thread starts (U14 audit of the paths across threads): set from the run's thread, OpenBLAS's thread count changed while another thread
could be in a BLAS call (the GUI thread's, or a comparison run's, which started with it and set it too): a known
cause of crashes in OpenBLAS."""

from __future__ import annotations

import threading
from pathlib import Path

import threadpoolctl

from app.playback import worker as worker_module
from app.playback.worker import SolveWorker
from core import io
from core.run import RunSpec

EXAMPLES = Path(__file__).resolve().parents[3] / "resources" / "examples"


def test_the_blas_thread_limit_is_set_in_the_gui_thread_before_any_run_thread_starts(qtbot, monkeypatch):
    calls = []
    real = threadpoolctl.threadpool_limits

    def recording(*args, **kwargs):
        calls.append((threading.current_thread().name, [t.name for t in threading.enumerate()]))
        return real(*args, **kwargs)

    monkeypatch.setattr(threadpoolctl, "threadpool_limits", recording)
    monkeypatch.setattr(worker_module, "_BLAS_LIMITED", [])  # (as in a new process: not limited yet)
    w = SolveWorker()
    ended = []
    w.ended.connect(lambda tok, end: ended.append(end))
    token = w.start(io.load(EXAMPLES / "contact_sphere_drop.json"), RunSpec(kind="contact", t_end=0.05))
    assert token == 1
    qtbot.waitUntil(lambda: bool(ended), timeout=60000)
    w.shutdown()
    assert ended[0].ok
    assert len(calls) == 1
    thread, alive = calls[0]
    assert thread == threading.main_thread().name  # before: linkwright-solve-1
    assert not any(n.startswith("linkwright-solve") for n in alive)  # (no run's thread yet)
