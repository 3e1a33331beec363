"""The 3D OpenGL viewport (pyqtgraph.opengl): the mechanism drawn from the document, posed by transforms only."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, Qt

# pyqtgraph caches compiled shader programs per process, so every GL widget must share one context group;
# this only takes effect before the QApplication exists (the app's main should set it too).
if QCoreApplication.instance() is None:
    QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)

from .widget import Viewport3D  # noqa: E402  (after the attribute)

__all__ = ["Viewport3D"]
