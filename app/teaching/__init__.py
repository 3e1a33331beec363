"""Teaching views: the four-bar report (Grashof, class, limits, transmission angle, toggles) of the open document."""

from .panel import DEBOUNCE_MS, NOT_A_FOURBAR, FourBarPanel
from .summary import grashof_text, summary_rows, transmission_curve

__all__ = ["FourBarPanel", "DEBOUNCE_MS", "NOT_A_FOURBAR", "grashof_text", "summary_rows", "transmission_curve"]
