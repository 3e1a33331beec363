"""app.collector: while a main window is open the GUI thread collects reference cycles by CPython's own rule, on a
timer, with the automatic collection off; afterwards the automatic collection is as it was before.

CPython's rule (3.11; the gc module's documentation of set_threshold, and gc_collect_generations in
Modules/gcmodule.c): the collector keeps a count per generation, generation 0's the allocations less deallocations
of tracked objects since its last collection, generation g >= 1's the collections of generation g - 1 since its own.
A collection starts only when generation 0's count exceeds threshold0 (and threshold0 is not 0: 0 switches the
collection off); it then collects the oldest generation whose count exceeds its threshold (and the younger ones with
it), except that the oldest generation (2) is skipped, for the next younger one that qualifies, while the objects
moved into it since the last full collection (long_lived_pending) are fewer than a quarter of those that survived
that collection (long_lived_total). Collecting generation g sets the counts of 0..g to 0 and adds 1 to g + 1's;
collecting generation 1 moves its survivors into generation 2 (long_lived_pending grows by them); a full collection
sets long_lived_pending to 0 and long_lived_total to the objects that survive it."""

from __future__ import annotations

import gc
from types import SimpleNamespace

import pytest
from PySide6.QtCore import QObject

from app import collector as collector_module
from app.collector import GuiCollector


class FakeGc(SimpleNamespace):
    """Stands in for the gc module inside app.collector: counts and thresholds as set, collections recorded."""

    def __init__(self, counts=(0, 0, 0), threshold=(700, 10, 10), enabled=True, young=(0, 0), everything=0):
        super().__init__()
        self.counts, self.threshold, self.enabled = list(counts), tuple(threshold), enabled
        self.young, self.everything = young, everything  # objects in generations 0 and 1, and in all
        self.collected: list[int] = []
        self.found = 0  # unreachable objects each collection finds

    def get_count(self):
        return tuple(self.counts)

    def get_threshold(self):
        return self.threshold

    def collect(self, g=2):
        self.collected.append(g)
        for i in range(g + 1):  # (as CPython's collection does to the counts)
            self.counts[i] = 0
        if g < 2:
            self.counts[g + 1] += 1
        return self.found

    def get_objects(self, generation=None):
        return [None] * (self.everything if generation is None else self.young[generation])

    def isenabled(self):
        return self.enabled

    def enable(self):
        self.enabled = True

    def disable(self):
        self.enabled = False


@pytest.fixture
def fake_gc(monkeypatch, qapp):
    fake = FakeGc()
    monkeypatch.setattr(collector_module, "gc", fake)
    return fake


@pytest.mark.parametrize("counts, expected", [
    ((700, 0, 0), None),  # generation 0 at its threshold, not past it
    ((701, 0, 0), 0),
    ((701, 10, 0), 0),  # generation 1 at its threshold: generation 0 only
    ((701, 11, 0), 1),  # generation 1 past its threshold: generations 0 and 1
    ((5000, 11, 3), 1),  # (however far generation 0 has gone: one collection, the oldest that qualifies)
    ((701, 11, 11), 2),  # generation 2 past its threshold, and the long-lived objects allow it (see below)
    ((701, 0, 11), 2),  # the oldest that passes its threshold, whatever the younger counts
    ((5, 11, 0), None),  # generation 1 past its threshold but generation 0 not: CPython starts no collection
    ((0, 11, 11), None),
])
def test_the_gui_collector_collects_the_generation_cpython_would(fake_gc, counts, expected):
    c = GuiCollector()
    fake_gc.counts = list(counts)
    c._long_lived_total, c._long_lived_pending = 1000, 250  # (a quarter: a full collection is allowed)
    c.check()
    assert fake_gc.collected == ([] if expected is None else [expected])


def test_a_full_collection_waits_for_a_quarter_of_the_long_lived_objects(fake_gc):
    """Generation 2 past its threshold is skipped for generation 1 while fewer objects than a quarter of those that
    survived the last full collection have moved into it since; the survivors of each generation-1 collection (the
    objects in generations 0 and 1 before it, less the unreachable ones it found) count towards that quarter."""
    c = GuiCollector()
    fake_gc.counts = [701, 11, 11]
    c._long_lived_total, c._long_lived_pending = 1000, 240
    # a generation-1 collection of the 30 objects in generations 0 and 1, of which 20 are unreachable: 10 move on
    fake_gc.young, fake_gc.found = (25, 5), 20
    c.check()
    assert fake_gc.collected == [1]  # 240 < 1000 / 4: generation 1 instead
    assert fake_gc.counts == [0, 0, 12] and c._long_lived_pending == 250
    fake_gc.counts, fake_gc.everything, fake_gc.found = [701, 0, 12], 1200, 0
    c.check()
    assert fake_gc.collected == [1, 2]  # 250 >= 1000 / 4: the full collection
    assert (c._long_lived_pending, c._long_lived_total) == (0, 1200)  # reset by it: 1200 objects survived
    fake_gc.counts = [701, 0, 11]
    c._long_lived_pending = 249
    c.check()
    assert fake_gc.collected == [1, 2, 0]  # (skipped, and generation 1 has not passed its threshold: generation 0)


def test_nothing_is_collected_when_the_collection_is_switched_off(fake_gc):
    """threshold0 = 0 switches CPython's collection off; so does gc.disable() before the first window (the collector
    then stands in for a collection that would not have run)."""
    fake_gc.counts = [5000, 11, 11]
    c = GuiCollector()
    c._long_lived_pending = 1
    fake_gc.threshold = (0, 10, 10)
    assert c.check() == 0 and fake_gc.collected == []
    fake_gc.threshold = (700, 10, 10)
    fake_gc.enabled = False
    c = GuiCollector()
    owner = QObject()
    c.hold(owner)
    assert c.check() == 0 and fake_gc.collected == []
    owner.deleteLater()
    c.release(id(owner))


def test_the_automatic_collection_is_off_while_an_owner_lives_and_as_it_was_after(fake_gc, qtbot):
    """Off from the first hold to the last owner's end, the timer running meanwhile; then on again if it was on, and
    left off if it was off before (gc.disable() by the program stays its choice)."""
    for before in (True, False):
        fake_gc.enabled = before
        c = GuiCollector()
        a, b = QObject(), QObject()
        c.hold(a)
        assert not fake_gc.enabled and c._timer.isActive()
        c.hold(b)
        c.hold(a)  # (twice: one holder)
        with qtbot.waitSignal(a.destroyed):
            a.deleteLater()
        assert not fake_gc.enabled and c._timer.isActive()  # (b still open)
        with qtbot.waitSignal(b.destroyed):
            b.deleteLater()
        assert fake_gc.enabled == before and not c._timer.isActive()


def test_a_window_turns_the_automatic_collection_off_and_back_as_it_was(qtbot):
    """The same with the real collector and main windows: off while a window is open; after the last one, on again
    if it was on before the first, and still off if the program had switched it off."""
    from app.document import Document
    from app.window import MainWindow
    from core.model import Body, Mechanism
    from tests.app.conftest import dispose_windows

    def window():
        m = Mechanism(name="gc")
        m.bodies.append(Body("ground", ground=True))
        return MainWindow(Document(m))

    assert gc.isenabled()
    try:
        for before in (True, False):
            (gc.enable if before else gc.disable)()
            win = window()
            assert not gc.isenabled()
            dispose_windows([win])
            assert gc.isenabled() == before
    finally:
        gc.enable()
