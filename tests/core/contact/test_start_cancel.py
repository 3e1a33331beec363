"""A contact run's set-up checks its cancel callable: building the model (every body, every row of the pair table),
the start-up overlap queries and the first frame's queries (a chunk of pairs at a time).  A 64-body pile spent
200-400 ms there, which a Stop had to wait for.  When not cancelled the results are the same."""

import numpy as np
import pytest

from contact_scenes import body, floor, mechanism
from core.contact import ContactRun, build_model, closest
from core.contact.bodies import RunCancelled
from core.run import RunSpec, open_run

# 24 spheres side by side in two layers on a floor: 300 pairs, 40 of them touching at the start
SPHERES = [body(f"s{k}", {"type": "sphere", "radius": 0.05}, mass=0.1,
                position=(0.1 * (k % 4), 0.1 * ((k // 4) % 3), 0.05 + 0.1 * (k // 12))) for k in range(24)]


def _pile():
    return mechanism([floor()] + SPHERES)


class _After:
    """A cancel callable that says stop from its n-th call on (counting every call)."""

    def __init__(self, n):
        self.n, self.calls = n, 0

    def __call__(self):
        self.calls += 1
        return self.calls >= self.n


def test_build_model_stops_at_the_body_or_pair_row_where_cancel_says_so():
    mech = _pile()
    stop = _After(3)
    with pytest.raises(RunCancelled):
        build_model(mech, cancel=stop)
    assert stop.calls == 3  # (looked at for every body: it stopped at the third, not at the end)
    stop = _After(len(mech.bodies) + 2)  # during the pair table
    with pytest.raises(RunCancelled):
        build_model(mech, cancel=stop)
    assert stop.calls == len(mech.bodies) + 2
    stop = _After(2)  # open_run passes the run's cancel callable on to build_model
    with pytest.raises(RunCancelled):
        open_run(mech, RunSpec(kind="contact"), cancel=stop)
    assert stop.calls == 2


def _count_queries(monkeypatch):
    """Record the number of pairs of each closest_points_many call."""
    sizes = []
    many = closest.closest_points_many

    def counted(model, state, ips, guesses=None):
        sizes.append(len(ips))
        return many(model, state, ips, guesses)

    monkeypatch.setattr(closest, "closest_points_many", counted)
    return sizes


def test_the_start_overlap_queries_stop_within_a_chunk_of_pairs(monkeypatch):
    model = build_model(_pile())
    sizes = _count_queries(monkeypatch)
    ContactRun(model, t_end=0.01)  # (uncancelled: all the start-up pairs in one call)
    total = sizes[0]
    assert total > 2 * closest.CANCEL_CHUNK
    sizes.clear()
    stop = _After(2)
    with pytest.raises(RunCancelled):
        ContactRun(model, t_end=0.01, cancel=stop)
    assert sizes == [closest.CANCEL_CHUNK] and stop.calls == 2  # (one chunk queried, then it stopped)


def test_a_run_cancelled_during_its_first_frame_yields_no_frame_and_is_cancelled(monkeypatch):
    model = build_model(_pile())
    flag = {"on": False}
    run = ContactRun(model, t_end=0.05, cancel=lambda: flag["on"])
    sizes = _count_queries(monkeypatch)
    many = closest.closest_points_many

    def first_chunk_then_stop(*a, **k):  # Stop pressed while the first frame's first chunk is queried
        flag["on"] = True
        return many(*a, **k)

    monkeypatch.setattr(closest, "closest_points_many", first_chunk_then_stop)
    assert list(run) == []
    v = run.verdict
    assert v.cancelled and not v.ok and v.stop_time == 0.0 and v.reason.startswith("cancelled")


def test_not_cancelled_the_set_up_gives_the_same_run():
    mech = _pile()
    a = list(ContactRun(build_model(mech), t_end=0.03))
    b = list(ContactRun(build_model(mech, cancel=lambda: False), t_end=0.03, cancel=lambda: False))
    assert len(a) == len(b) == 4
    for fa, fb in zip(a, b):
        for k in fa.values:
            np.testing.assert_array_equal(fa.values[k], fb.values[k])


def test_a_step_looks_at_its_cancel_between_chunks_of_its_start_queries(monkeypatch):
    """A step's start queries the closest points of its new pairs (GJK then Newton where there is no closed form: up to
    tens of ms a pair); a 300-body bin's first look at its cancel came 0.55 s into a step. They are made
    _QUERY_CHUNK pairs at a time with a look before each, and a step cancelled there ends "cancelled"."""
    from core.contact import initial_state, step, stepper

    boxes = [body(f"b{k}", {"type": "box", "size": [0.1, 0.1, 0.1]}, mass=0.1,
                  position=(0.1 * (k % 4), 0.1 * (k // 4), 0.05)) for k in range(12)]
    model = build_model(mechanism([floor()] + boxes))
    sizes = _count_queries(monkeypatch)
    r = step(model, initial_state(model), 0.01)  # (no cancel: all in one call)
    assert r.converged and sizes == [41]  # (every pair is new: the 12 on the floor and 29 neighbours, edges included)
    sizes.clear()
    r = step(model, initial_state(model), 0.01, cancel=lambda: False)
    assert r.converged and sum(sizes) == 41 and max(sizes) == stepper._QUERY_CHUNK
    sizes.clear()
    stop = _After(2)
    r = step(model, initial_state(model), 0.01, cancel=stop)
    assert not r.converged and r.reason.startswith("cancelled")
    assert sizes == [stepper._QUERY_CHUNK] and stop.calls == 2  # (one chunk queried, then it stopped)
