"""The Qt bindings in use must not leak references to None (PySide6 6.12.0 does, and the app then aborts)."""

from __future__ import annotations

import sys


def test_void_qt_calls_keep_none_alive():
    from PySide6.QtCore import QObject

    probe = QObject()
    before = sys.getrefcount(None)
    for _ in range(200):
        probe.setObjectName("probe")  # a void method: a leaking binding drops one reference to None per call
    # (From CPython 3.12 None is immortal and its count is constant.) Allow a little noise from the interpreter; a leaking binding loses ~200.
    assert sys.getrefcount(None) >= before - 20
