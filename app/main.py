"""Start the desktop app (or render its window to a PNG with --screenshot)."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEventLoop, Qt, QTimer
from PySide6.QtWidgets import QApplication

from core import io
from core.errors import LinkwrightError
from core.resources import resource_dir

__all__ = ["run_gui", "ORGANIZATION", "APPLICATION", "START_DOCUMENT", "create_window", "open_start_window", "application",
           "grab_window"]

ORGANIZATION = "Linkwright"
APPLICATION = "Linkwright"
START_DOCUMENT = resource_dir() / "examples" / "fourbar.json"
SCREENSHOT_SIZE = (1440, 900)


def missing_display() -> bool:
    """Whether Qt would find no display to open windows on (Linux without X or Wayland, on a platform that needs
    one): Qt then aborts the process, so callers say what to do instead (run it under Xvfb)."""
    import os

    return (sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
            and os.environ.get("QT_QPA_PLATFORM", "xcb").startswith(("xcb", "wayland")))


def application(argv: list[str] | None = None) -> QApplication:
    """The QApplication (created once), with the names QSettings and QStandardPaths use."""
    if QApplication.instance() is None:
        # The 3D viewport's GL widgets share compiled shaders: one context group (must precede the QApplication).
        QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
    app = QApplication.instance() or QApplication(argv if argv is not None else [sys.argv[0]])
    QCoreApplication.setOrganizationName(ORGANIZATION)
    QCoreApplication.setApplicationName(APPLICATION)
    app.setApplicationDisplayName("Linkwright")
    return app  # type: ignore[return-value]


def create_window(file: str | None = None, remember_layout: bool = True):
    """A main window with `file` (or the four-bar example) open; LinkwrightError if `file` is bad."""
    from .document import Document
    from .files import EXAMPLE_NOTE, is_example, prepare_loaded
    from .window import MainWindow

    example = bool(file) and is_example(file)
    if file:
        # (a file of the installed examples folder opens as an untitled copy, as File ▸ Examples opens it)
        mech, path = prepare_loaded(io.load(file)), None if example else Path(file).resolve()
    else:
        mech, path = prepare_loaded(io.load(START_DOCUMENT)), None
    win = MainWindow(Document(mech, path), remember_layout=remember_layout)
    if example:
        win.status.show(f"Opened {Path(file).name}{EXAMPLE_NOTE}")
    return win


def _wait(ms: int) -> None:
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def grab_window(win):
    """The window as drawn, the 3D view as its own framebuffer holds it: QWidget.grab() leaves out what the view
    paints with a QPainter over its GL drawing (the named points' labels)."""
    from PySide6.QtCore import QPoint, QRect
    from PySide6.QtGui import QPainter

    img = win.grab().toImage()
    view = win.viewport.view
    if view.isVisible() and view.width() > 0 and view.height() > 0:
        painter = QPainter(img)
        painter.drawImage(QRect(view.mapTo(win, QPoint(0, 0)), view.size()), view.grabFramebuffer())
        painter.end()
    return img


def run_gui(file: str | None = None, screenshot: str | None = None, time: float | None = None) -> int:
    """Run the GUI; with `screenshot`, render the window (3D viewport included) to that PNG and return 0 — after
    running the document to `time` if given (3 when the run stops before it; the last frame is rendered).  2 with a
    message when there is no display (Qt would abort) or the PNG cannot be written."""
    if missing_display():
        print("error: --screenshot needs a display for OpenGL: run it under Xvfb (xvfb-run -a linkwright --screenshot "
              "...)" if screenshot else "error: the app needs a display: run it under Xvfb or in a desktop session",
              file=sys.stderr)
        return 2
    app = application()
    if screenshot:
        try:
            win = create_window(file, remember_layout=False)
        except LinkwrightError as exc:
            msg = str(exc)
            print(f"error: {msg}" if file and msg.startswith(str(file)) else f"error: {file}: {msg}", file=sys.stderr)
            return 2
        win.resize(*SCREENSHOT_SIZE)
        win.show()
        win.graph.fit()
        _wait(600)  # let the docks settle and the GL viewport render its first frames
        win.graph.fit()
        status = 0
        try:
            if time is not None:
                from .export import screenshot_at

                reached, why = screenshot_at(win, time)
                if not reached:
                    print(f"{file or 'the document'}: {why}", file=sys.stderr)
                    status = 3
            _wait(200)
            from .export import save_png

            save_png(grab_window(win), screenshot, "--screenshot")
        except LinkwrightError as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = 2
        finally:
            win.files.shutdown()
            win.document.undo_stack.setClean()
            win.close()
            win.deleteLater()
            app.processEvents()
        return status

    win = open_start_window(file)
    return app.exec()


def open_start_window(file: str | None = None):
    """Show the interactive main window: `file`, or the four-bar after a dialog if `file` is bad; then offer recovery."""
    from PySide6.QtWidgets import QMessageBox

    error = None
    try:
        win = create_window(file)
    except LinkwrightError as exc:
        error = exc
        win = create_window(None)
    win.show()
    if error is not None:
        where = f"at {error.location}: " if error.location else ""
        QMessageBox.critical(win, "Cannot open file", f"{Path(file).name} could not be opened.\n\n{where}{error.message}")
    else:
        win.files.offer_recovery()
    return win
