"""Python's collector of reference cycles runs in the GUI thread only, while a main window is open.

CPython collects cycles in whichever thread allocates past the collector's threshold: in the app mostly a run's
thread (app.jobs), which allocates the most. Cycles hold objects of the GUI: a body's items in the 3D view (pyqtgraph's
GL items: a parent and its children refer to each other; each mesh item holds its OpenGL buffers), a removed plot
curve, a graphics item. Their C++ destructors then ran in the run's thread while the GUI thread painted and handled
events, and Qt objects must be destroyed in their own thread (user test U14: one segmentation fault in 19 runs, while
bodies were deleted during a streaming contact run; measured: about a quarter of the GL items of the bodies deleted
during runs were freed in a run's thread, and the destructor of a QObject freed that way runs there).

So while a main window is open (`hold`), the automatic collection is off and a timer in the GUI thread collects
instead, by CPython's own rule: a collection starts only when generation 0's count passes its threshold (allocations
less deallocations since its last collection; gc.get_threshold), and then collects the oldest generation g whose
count passes its threshold (for g >= 1 its count is the collections of generation g - 1 since its own), a full
collection only when the objects moved to the oldest generation since the last full one are at least a quarter of
those that survived it (a full collection of the app's 250,000 objects takes 0.1-0.7 s). pyqtgraph's GarbageCollector (pyqtgraph.util.garbage_collector) has the same idea but collects the oldest
generation whenever its count passes its threshold (every tenth middle collection: a GUI-thread pause of up to 0.7 s
many times a minute during a run) and never gives the automatic collection back. When the last window holding it is gone, the automatic collection is on again (the tests' and the command
line's cores run without an event loop).
"""

from __future__ import annotations

import functools
import gc
import threading

from PySide6.QtCore import QCoreApplication, QObject, QTimer

__all__ = ["GuiCollector", "hold", "collector", "INTERVAL_MS"]

INTERVAL_MS = 50  # how often the GUI thread looks at the collector's counts (a look is a call of gc.get_count)


class GuiCollector(QObject):
    """The GUI thread's collector: `check` on a timer does what CPython's automatic collection would have done."""

    def __init__(self, parent: QObject | None = None, interval_ms: int = INTERVAL_MS) -> None:
        super().__init__(parent)
        self._holders: set[int] = set()
        self._was_enabled = gc.isenabled()
        self._long_lived_total = 0  # objects that survived the last full collection (CPython's long_lived_total)
        self._long_lived_pending = 0  # objects moved to the oldest generation since (long_lived_pending)
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.check)

    def hold(self, owner: QObject) -> None:
        """Collect in the GUI thread only until `owner` is destroyed (a main window)."""
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("the collector is held from the GUI thread")
        key = id(owner)
        if key in self._holders:
            return
        if not self._holders:
            self._was_enabled = gc.isenabled()
            gc.disable()
            self._timer.start()
        self._holders.add(key)
        # (keyed by the owner's id when it was held: the destroyed signal's argument may be a new wrapper of the half
        # torn down object)
        owner.destroyed.connect(functools.partial(self.release, key))

    def release(self, key: int, _obj=None) -> None:
        """The holder `key` (id of its owner) is gone; the last one turns the automatic collection on again."""
        if key not in self._holders:
            return
        self._holders.discard(key)
        if not self._holders:
            if self._was_enabled:
                gc.enable()
            try:
                self._timer.stop()
            except RuntimeError:  # (the application, and this collector with it, went first)
                pass

    def check(self) -> int:
        """Collect the generation CPython would collect now (GUI thread); returns the unreachable objects found."""
        t = gc.get_threshold()
        counts = gc.get_count()
        if t[0] <= 0 or not self._was_enabled:
            return 0  # (the collection switched off, by its thresholds or before the first window: as in CPython)
        if counts[0] <= t[0]:
            return 0  # (CPython starts a collection only when generation 0 passes its threshold)
        for g in (2, 1, 0):
            if counts[g] > t[g]:
                if g == 2 and self._long_lived_pending < self._long_lived_total / 4:
                    continue
                return self._collect(g)
        return 0

    def _collect(self, g: int) -> int:
        young = len(gc.get_objects(0)) + len(gc.get_objects(1)) if g == 1 else 0
        found = gc.collect(g)
        if g == 1:
            self._long_lived_pending += max(young - found, 0)  # (the survivors moved to the oldest generation)
        elif g == 2:
            self._long_lived_pending = 0
            self._long_lived_total = len(gc.get_objects())
        return found


_COLLECTOR: list[GuiCollector] = []


def collector() -> GuiCollector | None:
    """The application's collector (None before the first `hold`)."""
    c = _COLLECTOR[0] if _COLLECTOR else None
    try:
        if c is not None:
            c.objectName()  # (gone with its application: a new one is made)
    except RuntimeError:
        _COLLECTOR.clear()
        c = None
    return c


def hold(owner: QObject) -> GuiCollector:
    """Collect reference cycles in the GUI thread only while `owner` (a main window) lives."""
    c = collector()
    if c is None:
        c = GuiCollector(QCoreApplication.instance())
        _COLLECTOR.append(c)
    c.hold(owner)
    return c
