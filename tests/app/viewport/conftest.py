"""GL viewport tests run on Mesa's software renderer under Xvfb (pytest-xvfb provides the display)."""

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "xcb")
os.environ.setdefault("LIBGL_ALWAYS_SOFTWARE", "1")

from PySide6.QtCore import QCoreApplication, Qt  # noqa: E402

# pyqtgraph caches shader programs per process: the GL widgets of all tests must share one context group.
if QCoreApplication.instance() is None:
    QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)


@pytest.fixture
def shown_view(qtbot):
    """show(mechanism, size=(640, 480), selection=None): a shown 3D view of the mechanism (or of a Document),
    exposed (its GL context made)."""
    from app.document import Document
    from app.selection import Selection
    from app.viewport import Viewport3D

    def show(mech, size=(640, 480), selection=None):
        doc = mech if isinstance(mech, Document) else Document(mech)
        vp = Viewport3D(doc, selection if selection is not None else Selection())
        qtbot.addWidget(vp)
        vp.resize(*size)
        vp.show()
        qtbot.waitExposed(vp)
        return vp

    return show
