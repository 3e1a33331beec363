"""What is selected and highlighted, shared by the graph editor, the structure panel and the viewport."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

__all__ = ["Selection"]


class Selection(QObject):
    """Selected bodies and joints (by name) and a transient highlight (e.g. a hovered loop)."""

    changed = Signal()  # selection changed
    highlightChanged = Signal()  # highlight changed

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._bodies: frozenset[str] = frozenset()
        self._joints: frozenset[str] = frozenset()
        self._hl_bodies: frozenset[str] = frozenset()
        self._hl_joints: frozenset[str] = frozenset()

    @property
    def bodies(self) -> frozenset[str]:
        """Names of the selected bodies."""
        return self._bodies

    @property
    def joints(self) -> frozenset[str]:
        """Names of the selected joints."""
        return self._joints

    @property
    def highlighted_bodies(self) -> frozenset[str]:
        """Names of highlighted bodies (hover feedback, not a selection)."""
        return self._hl_bodies

    @property
    def highlighted_joints(self) -> frozenset[str]:
        """Names of highlighted joints."""
        return self._hl_joints

    def set(self, bodies=(), joints=()) -> None:
        """Replace the selection (emits `changed` only if it differs)."""
        b, j = frozenset(bodies), frozenset(joints)
        if (b, j) != (self._bodies, self._joints):
            self._bodies, self._joints = b, j
            self.changed.emit()

    def clear(self) -> None:
        """Select nothing."""
        self.set()

    def highlight(self, bodies=(), joints=()) -> None:
        """Replace the highlight (emits `highlightChanged` only if it differs)."""
        b, j = frozenset(bodies), frozenset(joints)
        if (b, j) != (self._hl_bodies, self._hl_joints):
            self._hl_bodies, self._hl_joints = b, j
            self.highlightChanged.emit()

    def prune(self, body_names, joint_names) -> None:
        """Drop names that no longer exist (after an edit)."""
        self.set(self._bodies & frozenset(body_names), self._joints & frozenset(joint_names))
        self.highlight(self._hl_bodies & frozenset(body_names), self._hl_joints & frozenset(joint_names))
