"""Plots of the recorded motion: joint coordinates over time and named-point traces (coupler curves)."""

from .panel import LEGEND_MAX, MODES, PlotsPanel

__all__ = ["PlotsPanel", "MODES", "LEGEND_MAX"]
