"""A minimal undo command for the viewport tests: it calls the core edit API, as the app's commands do."""

from __future__ import annotations

from PySide6.QtGui import QUndoCommand


class Edit(QUndoCommand):
    """Run `fn(mechanism)` on redo and `undo(mechanism)` on undo."""

    def __init__(self, doc, fn, undo):
        super().__init__("edit")
        self.doc, self.fn, self.undo_fn = doc, fn, undo

    def redo(self):
        self.fn(self.doc.mechanism)

    def undo(self):
        self.undo_fn(self.doc.mechanism)
