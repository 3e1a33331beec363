"""Kinematic playback: background solves of the driven motion, the recording, its time cursor and the Motion panel."""

from .panel import MotionPanel
from .player import Playback
from .recording import Recording
from .worker import SolveWorker

__all__ = ["MotionPanel", "Playback", "Recording", "SolveWorker"]
