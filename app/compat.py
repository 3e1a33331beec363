"""Work-arounds for defects of the Qt bindings that the app cannot avoid otherwise."""

from __future__ import annotations

import ctypes
import sys

__all__ = ["guard_singleton_refcounts", "bindings_leak_singletons"]

_HEADROOM = 1 << 40  # references added: at one lost reference per call, ~10^12 calls before it could matter


def bindings_leak_singletons() -> bool:
    """Whether calling a void Qt method loses a reference to None (PySide6 6.12.0 on CPython < 3.12 does)."""
    if sys.version_info >= (3, 12):  # None, True and False are immortal there: nothing to lose
        return False
    from PySide6.QtCore import QObject

    probe = QObject()
    before = sys.getrefcount(None)
    for _ in range(50):
        probe.setObjectName("probe")  # returns void
    return sys.getrefcount(None) < before - 25


def guard_singleton_refcounts() -> bool:
    """If the bindings drop references to None/True/False, give those singletons headroom so the process never
    deallocates them (a fatal 'deallocating None' after some 10^4 GUI calls); returns whether it was needed."""
    if not bindings_leak_singletons():
        return False
    for obj in (None, True, False):
        # CPython (non-debug) objects start with Py_ssize_t ob_refcnt; the singletons are never freed anyway.
        ctypes.c_ssize_t.from_address(id(obj)).value += _HEADROOM
    return True
