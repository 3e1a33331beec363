"""GL viewport tests run on Mesa's software renderer under Xvfb (pytest-xvfb provides the display)."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "xcb")
os.environ.setdefault("LIBGL_ALWAYS_SOFTWARE", "1")

from PySide6.QtCore import QCoreApplication, Qt  # noqa: E402

# pyqtgraph caches shader programs per process: the GL widgets of all tests must share one context group.
if QCoreApplication.instance() is None:
    QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
