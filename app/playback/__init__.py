"""Playback: background runs of the document (kinematics or contact dynamics), the recording, its time cursor and the
Motion panel."""

from .panel import MotionPanel
from .player import Playback
from .recording import FrameRecording
from .worker import SolveWorker

__all__ = ["MotionPanel", "Playback", "FrameRecording", "SolveWorker"]
