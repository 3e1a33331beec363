"""GUI test setup: Xvfb + Mesa, isolated QSettings/app data, dialogs that never block, no leftovers."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "xcb")
os.environ.setdefault("LIBGL_ALWAYS_SOFTWARE", "1")

import gc  # noqa: E402
import threading  # noqa: E402

import pytest  # noqa: E402
import shiboken6  # noqa: E402
from PySide6.QtCore import QCoreApplication, QEvent, QPointF, QSettings, Qt  # noqa: E402
from PySide6.QtGui import QMouseEvent  # noqa: E402
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox  # noqa: E402

# The viewport's GL widgets share one context group; this must precede the QApplication pytest-qt creates.
if QCoreApplication.instance() is None:
    QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)


class Dialogs:
    """Stands in for QMessageBox / QFileDialog statics: records every call and answers without blocking."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []
        self.answer = QMessageBox.Discard  # reply to question()
        self.open_path = ""  # reply to getOpenFileName
        self.save_path = ""  # reply to getSaveFileName ...
        self.save_filter = ""  # ... and the filter chosen in it

    def kinds(self) -> list[str]:
        """The kinds of dialogs shown so far."""
        return [c[0] for c in self.calls]

    def _record(self, kind):
        def f(parent=None, title="", text="", *args, **kwargs):
            self.calls.append((kind, title, text))
            if kind == "question":
                return self.answer
            if kind == "open":
                return (self.open_path, "")
            if kind == "save":
                return (self.save_path, self.save_filter)
            return QMessageBox.Ok

        return staticmethod(f)


@pytest.fixture(scope="session", autouse=True)
def compiled_kernels():
    """The contact step's compiled kernels loaded before any GUI test runs a simulation: on a fresh clone numba
    compiles them first (about 40 s on the development machine, longer under load), and a test's timeout is for the
    run it watches, not for a machine's first compile (the app does the same compile in its worker thread)."""
    from core.contact import prepare_kernels

    prepare_kernels()


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch, qapp):
    """Point QSettings and the app data location at a temporary folder; never show a real dialog."""
    cfg, data = tmp_path / "config", tmp_path / "data"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(cfg))
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    for fmt in (QSettings.NativeFormat, QSettings.IniFormat):
        QSettings.setPath(fmt, QSettings.UserScope, str(cfg))
    QCoreApplication.setOrganizationName("LinkwrightTests")
    QCoreApplication.setApplicationName("LinkwrightTests")
    dialogs = Dialogs()
    for name, kind in (("question", "question"), ("critical", "critical"), ("warning", "warning"), ("information", "information"), ("about", "about")):
        monkeypatch.setattr(QMessageBox, name, dialogs._record(kind))
    monkeypatch.setattr(QFileDialog, "getOpenFileName", dialogs._record("open"))
    monkeypatch.setattr(QFileDialog, "getSaveFileName", dialogs._record("save"))
    import app.panels.graph as graph_module

    def no_popup(menu, pos):
        dialogs.calls.append(("menu", menu.objectName(), ""))
        return None  # dismissed

    monkeypatch.setattr(graph_module, "exec_menu", no_popup)
    threads_before = {t.ident for t in threading.enumerate()}
    yield dialogs
    flush_deletes()
    left = [w for w in QApplication.topLevelWidgets() if w.isVisible()]
    assert not left, f"test left visible top-level widgets: {left}"
    extra = [t for t in threading.enumerate() if t.ident not in threads_before and t.is_alive()]
    assert not extra, f"test left threads running: {extra}"


def flush_deletes() -> None:
    """Deliver pending events, run every pending deleteLater now, and collect Python garbage.

    Outside an event loop Qt 6 keeps a deleteLater'd object until the next loop starts (which would be inside a later
    test), and a window caught in a reference cycle would be freed by Python's collector at a random moment, possibly
    in the middle of event delivery. Both are made to happen here, between tests, where nothing else is running.
    """
    QApplication.processEvents()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.collect()
    QApplication.processEvents()


def dispose_windows(windows) -> None:
    """Close main windows as a user would (threads joined, no save prompt) and delete them at once."""
    for win in windows:
        if not shiboken6.isValid(win):
            continue
        win.files.shutdown()
        win.document.undo_stack.setClean()  # no "save changes?" on teardown
        win.close()
        win.deleteLater()
    flush_deletes()
    alive = [w for w in windows if shiboken6.isValid(w)]
    assert not alive, f"windows not deleted after close: {alive}"


@pytest.fixture
def dialogs(isolated) -> Dialogs:
    """The recorder of dialogs the code under test asked for."""
    return isolated


@pytest.fixture
def make_window(qtbot):
    """Factory for main windows (closed and deleted after the test, modified or not)."""
    from app.document import Document
    from app.window import MainWindow

    made = []

    def make(mechanism=None, path=None):
        win = MainWindow(Document(mechanism, path))
        made.append(win)
        win.show()
        qtbot.waitExposed(win)
        # Shortcuts (B, G, Del, Ctrl+Z, ...) go to the active window.
        win.raise_()
        win.activateWindow()
        qtbot.waitUntil(lambda: QApplication.activeWindow() is win, timeout=3000)
        return win

    yield make
    dispose_windows(made)


def send_mouse(widget, kind, pos, button=Qt.LeftButton, buttons=None, modifiers=Qt.NoModifier) -> None:
    """Deliver one mouse event (press/move/release/dblclick) at widget pixel `pos`."""
    types = {
        "press": QMouseEvent.Type.MouseButtonPress,
        "move": QMouseEvent.Type.MouseMove,
        "release": QMouseEvent.Type.MouseButtonRelease,
        "dblclick": QMouseEvent.Type.MouseButtonDblClick,
    }
    local = QPointF(pos)
    glob = QPointF(widget.mapToGlobal(local.toPoint()))
    if buttons is None:
        buttons = Qt.NoButton if kind == "release" else button
    ev = QMouseEvent(types[kind], local, glob, Qt.NoButton if kind == "move" else button, buttons, modifiers)
    QApplication.sendEvent(widget, ev)


def drag(widget, start, end, steps: int = 6, modifiers=Qt.NoModifier) -> None:
    """Press at `start`, move in steps to `end`, release (a real mouse drag as Qt sees it)."""
    send_mouse(widget, "press", start, modifiers=modifiers)
    for k in range(1, steps + 1):
        p = QPointF(start) + (QPointF(end) - QPointF(start)) * (k / steps)
        send_mouse(widget, "move", p, buttons=Qt.LeftButton, modifiers=modifiers)
    send_mouse(widget, "release", end, modifiers=modifiers)


def click(widget, pos, modifiers=Qt.NoModifier) -> None:
    """A left click at widget pixel `pos`."""
    send_mouse(widget, "press", pos, modifiers=modifiers)
    send_mouse(widget, "release", pos, modifiers=modifiers)


def double_click(widget, pos) -> None:
    """A left double click as Qt delivers it (press, release, double-click, release)."""
    send_mouse(widget, "press", pos)
    send_mouse(widget, "release", pos)
    send_mouse(widget, "dblclick", pos)
    send_mouse(widget, "release", pos)
