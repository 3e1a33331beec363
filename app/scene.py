"""Building contact scenes in the app: Add Shaped Body ▸ sphere / box / … placed at a point the user chooses."""

from __future__ import annotations

from PySide6.QtWidgets import QInputDialog, QLineEdit, QWidget

from .editing import SHAPE_PRESETS
from .panels.properties import fmt_vector, parse_vector

__all__ = ["default_drop_point", "ask_point", "add_shaped_body"]

DROP_SPACING = 0.3  # m between the suggested drop heights of successive bodies (preset shapes are ~0.2 m across)


def default_drop_point(mechanism) -> tuple[float, float, float]:
    """Where a new body is suggested: on the z axis, above every body already placed (so nothing starts overlapping)."""
    tops = [b.pose.position[2] for b in mechanism.bodies if b.pose is not None and not b.ground]
    z = (max(tops) if tops else 0.0) + DROP_SPACING
    return (0.0, 0.0, round(z, 6))


def ask_point(parent: QWidget, title: str, default: tuple[float, float, float]) -> tuple[float, float, float] | None:
    """Ask for a world point 'x, y, z' (m); a bad entry is asked again with the reason; None if cancelled."""
    text, reason = fmt_vector(default), ""
    while True:
        label = "Place at x, y, z (m, world frame; z is up):" + (f"\n\n✗ {reason}" if reason else "")
        text, ok = QInputDialog.getText(parent, title, label, QLineEdit.Normal, text)
        if not ok:
            return None
        try:
            return parse_vector(text)  # type: ignore[return-value]
        except ValueError as exc:
            reason = str(exc)


def add_shaped_body(parent: QWidget, editor, kind: str) -> str | None:
    """Edit ▸ Add Shaped Body ▸ kind: ask where, then add it (one undo step); returns the new body's name."""
    if kind not in SHAPE_PRESETS:
        return None
    at = (0.0, 0.0, 0.0) if kind == "halfspace" else ask_point(parent, f"Add {kind}", default_drop_point(editor.document.mechanism))
    if at is None:
        return None
    return editor.add_shaped_body(kind, at)
