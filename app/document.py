"""The one document the GUI edits: the core Mechanism, its undo stack and file state, with change signals."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack

from core import structure
from core.model import Mechanism

__all__ = ["Document"]


class Document(QObject):
    """Owns the Mechanism; views observe `changed`/`replaced` and re-read; edits arrive as undo commands."""

    changed = Signal()  # after every edit of the mechanism (including undo/redo)
    replaced = Signal()  # a different mechanism was loaded (new/open/revert): views rebuild
    pathChanged = Signal()  # the file name changed
    modifiedChanged = Signal(bool)  # the undo stack's clean state changed
    renamed = Signal(str, str)  # an edit, its undo or its redo renamed a body or joint (old name, new name)

    def __init__(self, mechanism: Mechanism | None = None, path: Path | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._mech = mechanism if mechanism is not None else Mechanism()
        self._path = Path(path) if path else None
        self._report: structure.StructureReport | None = None
        self._report_rev = -1
        self._report_key: tuple | None = None  # structure.structure_key of the mechanism `_report` is of
        self.undo_stack = QUndoStack(self)
        # Bound methods, not lambdas: Qt drops them when the document is destroyed, before its stack's final clear().
        self.undo_stack.cleanChanged.connect(self._clean_changed)
        self.undo_stack.indexChanged.connect(self._index_changed)

    def _clean_changed(self, clean: bool) -> None:
        self.modifiedChanged.emit(not clean)

    def _index_changed(self, _index: int) -> None:
        self.changed.emit()

    @property
    def mechanism(self) -> Mechanism:
        """The model; read it freely, change it only through commands pushed with `push`."""
        return self._mech

    @property
    def path(self) -> Path | None:
        """The file this document was loaded from or saved to (None for a new document)."""
        return self._path

    def set_path(self, path: Path | None) -> None:
        """Record the file name (after Save As)."""
        self._path = Path(path) if path else None
        self.pathChanged.emit()

    @property
    def modified(self) -> bool:
        """Whether there are edits since the last save/load."""
        return not self.undo_stack.isClean()

    def structure(self) -> structure.StructureReport:
        """The structure analysis of the current mechanism: computed again only when an edit changed what it reads
        (core.structure.structure_key); a node moved, a joint's `at` or a mass typed keep the report (the same
        object), which at 1,000 bodies cost 0.3-0.8 s of each such edit, with the Structure panel's rebuild it caused."""
        if self._report is None or self._report_rev != self._mech.revision:
            key = structure.structure_key(self._mech)
            if self._report is None or key != self._report_key:
                self._report = structure.analyze(self._mech)
                self._report_key = key
            self._report_rev = self._mech.revision
        return self._report

    def push(self, command: QUndoCommand) -> None:
        """Run an edit command and put it on the undo stack (emits `changed`)."""
        self.undo_stack.push(command)

    def replace(self, mechanism: Mechanism, path: Path | None = None) -> None:
        """Swap in another mechanism (a loaded file, a new document): clears undo history."""
        self._mech = mechanism
        self._report = None
        self.undo_stack.clear()
        self.undo_stack.setClean()
        self.set_path(path)
        self.replaced.emit()
        self.changed.emit()
        self.modifiedChanged.emit(False)

    def mark_saved(self, path: Path) -> None:
        """The document was written to `path`: it is clean now."""
        self.undo_stack.setClean()
        self.set_path(path)
