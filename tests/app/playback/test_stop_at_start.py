"""Stop during a contact run's set-up: the worker's run ends at once as cancelled, with no frame.  Building the model
and the start-up overlap queries did not look at the cancel flag: on a 64-body pile (2080 pairs) a Stop then took
72-208 ms to end the run's thread."""

from __future__ import annotations

import threading

import pytest

from app.playback.worker import SolveWorker
from core import io
from core.contact import closest
from core.run import RunSpec

N = 24  # spheres side by side in two layers on a floor: 300 pairs, 40 touching at the start


def _spheres():
    bodies = [{"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}}]
    bodies += [{"name": f"s{k}", "mass": 0.1, "shape": {"type": "sphere", "radius": 0.05},
                "pose": {"position": [0.1 * (k % 4), 0.1 * ((k // 4) % 3), 0.05 + 0.1 * (k // 12)]}}
               for k in range(N)]
    return io.from_dict({"format": "linkwright.mechanism", "version": 1, "space": "spatial",
                         "gravity": [0, 0, -9.81], "bodies": bodies, "simulation": {"dt": 0.01, "duration": 0.2}})


def _run(qtbot, worker, mech):
    """Start the run; (began tokens, ended RunEnds)."""
    began, ended = [], []
    worker.began.connect(lambda tok, info: began.append(tok))
    worker.ended.connect(lambda tok, end: ended.append(end))
    worker.start(mech, RunSpec(), analyse=False)
    qtbot.waitUntil(lambda: bool(ended) and not worker.running(), timeout=30000)
    return began, ended


@pytest.fixture
def worker(qtbot):
    w = SolveWorker()
    yield w
    w.shutdown()


def test_stop_while_the_model_is_built_ends_the_run_at_that_body(qtbot, worker, monkeypatch):
    import core.shapes

    mass, seen = core.shapes.mass_properties, []

    def mass_then_stop(*a, **k):  # Stop pressed while the third sphere's mass properties are computed
        seen.append(threading.current_thread().name)
        if len(seen) == 3:
            worker.cancel()
        return mass(*a, **k)

    monkeypatch.setattr(core.shapes, "mass_properties", mass_then_stop)
    began, ended = _run(qtbot, worker, _spheres())
    assert len(seen) == 3 and seen[0].startswith("linkwright-solve")  # (no further body: before, all 24 of them)
    assert began == [] and len(ended) == 1
    end = ended[0]
    assert end.cancelled and not end.ok and end.frames == 0 and end.reason.startswith("cancelled")


def test_stop_during_the_start_up_overlap_queries_ends_the_run_within_a_chunk_of_pairs(qtbot, worker, monkeypatch):
    many, sizes = closest.closest_points_many, []

    def query_then_stop(model, state, ips, guesses=None):  # Stop pressed during the first chunk
        sizes.append(len(ips))
        worker.cancel()
        return many(model, state, ips, guesses)

    monkeypatch.setattr(closest, "closest_points_many", query_then_stop)
    began, ended = _run(qtbot, worker, _spheres())
    assert sizes == [closest.CANCEL_CHUNK]  # (before: the 40 touching pairs in one call, then the first frame's)
    assert began == [] and len(ended) == 1
    assert ended[0].cancelled and ended[0].frames == 0
