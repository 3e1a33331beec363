"""Building contact scenes in the app: Add Shaped Body ▸ sphere / box / … placed at a point the user chooses."""

from __future__ import annotations

from PySide6.QtWidgets import QInputDialog, QLineEdit, QWidget

from core import validate
from core.errors import LinkwrightError

from .editing import SHAPE_PRESETS
from .panels.properties import fmt_vector, parse_vector

__all__ = ["up_direction", "default_drop_point", "ask_point", "add_shaped_body"]

DROP_SPACING = 0.3  # m between the suggested drop heights of successive bodies (preset shapes are ~0.2 m across)


def up_direction(mechanism) -> tuple[float, float, float]:
    """The document's up (core.model.Mechanism.up_direction), +z when it has no gravity."""
    return mechanism.up_direction() or (0.0, 0.0, 1.0)


def _up_text(up) -> str:
    """'+z', '-y', ... for a world axis, else the direction itself."""
    for i, axis in enumerate("xyz"):
        if abs(abs(up[i]) - 1.0) < 1e-12:
            return ("+" if up[i] > 0 else "-") + axis
    return f"({fmt_vector(up)})"


def default_drop_point(mechanism) -> tuple[float, float, float]:
    """Where a new body is suggested: on the up axis through the origin (up_direction), above every body already
    placed (so nothing starts overlapping)."""
    up = up_direction(mechanism)
    heights = [sum(u * x for u, x in zip(up, b.pose.position)) for b in mechanism.bodies
               if b.pose is not None and not b.ground]
    h = (max(heights) if heights else 0.0) + DROP_SPACING
    return tuple(round(u * h, 6) + 0.0 for u in up)


def ask_point(parent: QWidget, title: str, default: tuple[float, float, float],
              up: tuple[float, float, float] = (0.0, 0.0, 1.0)) -> tuple[float, float, float] | None:
    """Ask for a world point 'x, y, z' (m); a bad entry is asked again with the reason; None if cancelled."""
    text, reason = fmt_vector(default), ""
    while True:
        label = (f"Place at x, y, z (m, world frame; up is {_up_text(up)}):"
                 + (f"\n\n✗ {reason}" if reason else ""))
        text, ok = QInputDialog.getText(parent, title, label, QLineEdit.Normal, text)
        if not ok:
            return None
        try:
            # within the bound of every position (a point beyond it was refused by the edit after the dialog had
            # closed: the entry lost, the reason only on the status bar)
            return validate.vector(parse_vector(text), "position")  # type: ignore[return-value]
        except (ValueError, LinkwrightError) as exc:
            reason = str(exc)


def add_shaped_body(parent: QWidget, editor, kind: str) -> str | None:
    """Edit ▸ Add Shaped Body ▸ kind: ask where, then add it (one undo step); returns the new body's name."""
    if kind not in SHAPE_PRESETS:
        return None
    m = editor.document.mechanism
    up = up_direction(m)
    at = (0.0, 0.0, 0.0) if kind == "halfspace" else ask_point(parent, f"Add {kind}", default_drop_point(m), up)
    if at is None:
        return None
    return editor.add_shaped_body(kind, at, up=up)
