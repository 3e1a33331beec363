"""Exports: the run's data to CSV or .npz (the CLI's formats), the 3D view to PNG, its animation to GIF or MP4
(imageio, its ffmpeg plugin for MP4), and the headless `linkwright render` / `linkwright --screenshot OUT.png --time T`
behind them.

Every motion shown or exported comes from the app's one run pipeline: the Motion dock's Playback (its worker running
core.run's run of the document, its FrameRecording). `MotionRun` uses the recorded frames when they are fresh and
reach the time wanted, and otherwise runs the document through the Playback. Frames are rendered on the GUI thread one
per event-loop turn (the GL context lives there) and encoded by imageio in a writer thread, so the window stays
responsive and an export can be cancelled between frames.
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import signal
import socket
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from PySide6.QtCore import QEventLoop, QObject, QPoint, QSocketNotifier, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QImage, QPainter

from core import io, validate
from core.cli import typed_options
from core.errors import LinkwrightError

__all__ = [
    "Motion", "ANIMATION_SUFFIXES", "RUN_DATA_SUFFIXES", "DEFAULT_FPS", "motion_of", "MotionRun", "save_run_data",
    "AnimationExport", "fit_motion", "grab_viewport", "save_viewport_png", "image_to_array", "frame_times", "wait_for",
    "render_command", "screenshot_at", "ExportController",
]

ANIMATION_SUFFIXES = (".gif", ".mp4")
RUN_DATA_SUFFIXES = (".csv", ".npz")
DEFAULT_FPS = 25  # frames per second of an exported animation
MAX_FRAMES = 20_000  # an animation longer than this is a mistake (13 min at 25 fps)
RENDER_SIZE = (800, 600)  # pixels of the window `linkwright render` draws in (frames: its drawing area, 800 x 568)
KINEMATIC_STEPS_PER_SECOND = 100  # frames solved per second of motion for --screenshot --time on a driven mechanism
TIME_TOLERANCE = 1e-9  # s: a frame this close to the time wanted reaches it (k * (T / N) may miss T by an ulp)


@dataclass(frozen=True)
class Motion:
    """A run's frames as world transforms of the moving bodies' frames, and whether they reach the time wanted."""

    times: np.ndarray  # (K,) s
    body_names: list[str]  # the bodies posed by the frames (bodies not listed stay in their design pose)
    poses: np.ndarray  # (K, B, 4, 4) world transforms of the body frames
    ok: bool  # the frames reach the end time asked for
    reason: str  # why the run stopped before it ("" when ok)

    def index_at(self, t: float) -> int:
        """The last frame at or before time t (0 if t precedes them all)."""
        return int(max(np.searchsorted(self.times, t + 1e-12, side="right") - 1, 0))

    def poses_at(self, k: int) -> dict[str, np.ndarray]:
        """Body name -> 4x4 world pose at frame k."""
        return dict(zip(self.body_names, self.poses[k]))

    @property
    def t_last(self) -> float:
        """Time of the last frame."""
        return float(self.times[-1]) if len(self.times) else 0.0


def motion_of(recording, t_end: float) -> Motion:
    """The frames of the Motion dock's recording (app.playback.FrameRecording) up to t_end as a Motion: every body
    of a kinematic run, the moving bodies of a contact run (the fixed ones stay as designed)."""
    n = recording.count
    if n:
        n = int(np.searchsorted(recording.times[:n], t_end + TIME_TOLERANCE, side="right"))
    names = list(recording.body_names)
    idx = list(range(len(names)))
    if recording.kind == "contact":
        names = list(recording.channels["body.position"].labels)
        idx = [recording.body_names.index(b) for b in names]
    times = recording.times[:n].copy()
    reached = n > 0 and float(times[-1]) >= t_end - TIME_TOLERANCE
    reason = "" if reached else (recording.reason or "it ended early")
    return Motion(times, names, recording.poses[:n][:, idx].copy(), reached, reason)


class MotionRun(QObject):
    """The motion of the document from t = 0 to t_end, from the Motion dock's run pipeline (its Playback): the frames
    already recorded when they are fresh (not stale) and reach t_end, or end there by themselves; otherwise the
    dock's run is (re)started for it. Emits `finished(Motion)` or `failed(message)` once.

    A contact run that goes on past t_end is stopped once it is there (its frames are kept); a driven mechanism is
    solved over [0, t_end] in `steps` steps (the dock's range is set to it: solved again only if it changed)."""

    progress = Signal(float)  # fraction of [0, t_end] recorded
    finished = Signal(object)  # Motion
    failed = Signal(str)  # located message (bad document, nothing to move, a run that cannot start)

    def __init__(self, playback, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.playback = playback
        self.t_end = 0.0
        self.reused = False  # the frames came from a run that was recorded, or under way, already
        self._started = False  # this object started the dock's run (cancel stops it)
        self._stopping = False
        self._done = False
        self._connected = False

    # ---- control --------------------------------------------------------------------------------------------
    def start(self, t_end: float, steps: int | None = None) -> None:
        """Get the frames up to `t_end` (a driven mechanism: `steps` steps, default 100 per second)."""
        pb = self.playback
        if not pb.kind:
            self._fail(pb.kind_text or "nothing to move")
            return
        self._connect()
        if pb.kind == "contact":
            self._start_contact(float(t_end))
        else:
            self._start_kinematics(float(t_end), steps)

    def cancel(self) -> None:
        """Give up waiting; a run this object started is stopped (its frames are kept, as by Stop)."""
        if self._done:
            return
        self._done = True
        self._disconnect()
        if self._started and self.playback.is_running():
            self.playback.stop("the export was cancelled")  # (not the user's Stop: an export would not reuse it)

    def shutdown(self) -> None:
        """Cancel (the Playback owns the run's thread and joins it)."""
        self.cancel()

    # ---- starting ---------------------------------------------------------------------------------------------
    def _start_kinematics(self, t_end: float, steps: int | None) -> None:
        pb = self.playback
        if t_end <= 0:  # the start only: whatever range is solved has it as frame 0
            t_end, steps = pb.t_end, pb.steps
        self.t_end = t_end
        steps = steps or max(1, round(t_end * KINEMATIC_STEPS_PER_SECOND))
        self._started = (pb.t_end, pb.steps) != (t_end, steps)
        why = pb.set_range(t_end, steps)  # solves again only if the range changed
        if why:  # (a range no run may take: the Motion dock's own refusal)
            self._started = False
            self._fail(why)
            return
        self.reused = not self._started  # solved, or being solved, over exactly this range
        self._check()
        if pb.status_kind == "error":
            self._on_status(pb.status, pb.status_tip, pb.status_kind)

    def _start_contact(self, t_end: float) -> None:
        pb, rec = self.playback, self.playback.recording
        self.t_end = t_end
        fresh = not rec.stale and (rec.kind == "contact" or pb.is_running())
        run_end = float(rec.requested[-1]) if len(rec.requested) else pb.contact_end()
        last = rec.time_at(rec.count - 1) if rec.count else None
        covered = last is not None and last >= t_end - TIME_TOLERANCE
        ended_by_itself = rec.complete and not rec.cancelled  # a new run would stop at the same place
        # a run the user stopped is what they chose to keep: its frames are animated (running it again would throw
        # them away, and cancelling that run left fewer than they had)
        stopped_by_user = rec.complete and rec.stopped_by_user and rec.count > 0
        if fresh and (covered or stopped_by_user
                      or (run_end >= t_end - TIME_TOLERANCE and (pb.is_running() or ended_by_itself))):
            self.reused = True
        else:
            if pb.contact_end() < t_end - TIME_TOLERANCE:
                why = pb.set_range(t_end, 1)
                if why:
                    self._fail(why)
                    return
            self._started = True
            pb.run()
        self._check()

    # ---- following the Playback's recording --------------------------------------------------------------------
    def _connect(self) -> None:
        pb = self.playback
        pb.recording.grew.connect(self._check)
        pb.recording.completed.connect(self._check)
        pb.statusChanged.connect(self._on_status)
        self._connected = True

    def _disconnect(self) -> None:
        if not self._connected:
            return
        self._connected = False
        pb = self.playback
        for sig, slot in ((pb.recording.grew, self._check), (pb.recording.completed, self._check),
                          (pb.statusChanged, self._on_status)):
            try:
                sig.disconnect(slot)
            except (RuntimeError, TypeError):
                pass

    def _check(self, *_args) -> None:
        if self._done:
            return
        rec, t_end = self.playback.recording, self.t_end
        last = rec.time_at(rec.count - 1) if rec.count else None
        if last is not None:
            self.progress.emit(min(last / t_end, 1.0) if t_end > 0 else 1.0)
        if last is not None and last >= t_end - TIME_TOLERANCE and not rec.complete:
            if len(rec.requested) and rec.requested[-1] > t_end + TIME_TOLERANCE and not self._stopping:
                self._stopping = True  # the run goes on past t_end: stop it there (then it completes)
                self.playback.stop(f"it has reached the {t_end:g} s asked for")
            return
        if rec.complete:
            self._finish()

    def _on_status(self, text: str, _tip: str, kind: str) -> None:
        if kind == "error" and not self._done and not self.playback.is_running() and not self.playback.recording.count:
            self._fail(text)  # the run could not start (a bad driver, a shape the stepper refuses)

    def _finish(self) -> None:
        rec = self.playback.recording
        motion = motion_of(rec, self.t_end)
        if not len(motion.times):
            self._fail(rec.reason or "the motion could not be solved")
            return
        self._done = True
        self._disconnect()
        self.finished.emit(motion)

    def _fail(self, message: str) -> None:
        self._done = True
        self._disconnect()
        self.failed.emit(message)


def save_run_data(recording, path) -> int:
    """Write the Motion dock's run (app.playback.FrameRecording) as the CLI writes it, atomically: a contact run as
    `linkwright simulate --out` does (.csv or .npz by the suffix), a driven mechanism's run as `linkwright kinematics
    --csv` does (.csv). Returns the number of rows; LinkwrightError with the reason if nothing could be written."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in RUN_DATA_SUFFIXES:
        raise LinkwrightError("", f"{path.name}: unknown type of run data (use .csv or .npz)")
    if not recording.count:
        raise LinkwrightError("", "there is no run to export yet: run the document (Run, F5) first")
    if recording.kind == "contact":
        rec = recording.contact_recording()
        rec.check_finite(path.name)  # before the file is touched (located at the name typed, as the CLI at its --out)
        if suffix == ".npz":
            io.write_atomic(path, rec.save_npz, binary=True, suffix=".npz")
        else:
            io.write_atomic(path, rec.save_csv)  # (t as `linkwright simulate` writes it: 0.3, not 0.30000000000000004)
        return rec.n_frames
    if suffix != ".csv":
        raise LinkwrightError("", f"{path.name}: the run of a driven mechanism is exported as CSV (the columns of "
                                  "`linkwright kinematics --csv`)")
    traj = recording.trajectory()
    io.write_atomic(path, traj.save_csv)  # (t as `linkwright kinematics` writes it)
    return len(traj.times)


def fit_motion(viewport, motion: Motion, samples: int = 24) -> None:
    """Aim the viewport's camera (keeping its direction) so every body stays in view over the whole motion: the
    viewport's own framing of a run (Viewport3D.fit_motion) with the bodies' poses at `samples` times."""
    if not len(motion.times):
        return
    from .playback.recording import sample_frames

    viewport.fit_motion({name: motion.poses[sample_frames(len(motion.times), samples), i]
                         for i, name in enumerate(motion.body_names)})


# ---- images ----------------------------------------------------------------------------------------------------
def grab_viewport(viewport) -> QImage:
    """The 3D view as drawn now (its OpenGL framebuffer, at the widget's size), without the selection's colours: an
    exported image shows the mechanism, not what is selected in the window (which keeps showing it)."""
    viewport.scene()  # a pending document change is applied first
    with viewport.without_selection():
        return viewport.view.grabFramebuffer()


def save_viewport_png(viewport, path) -> None:
    """Write the 3D view to a PNG (LinkwrightError if it cannot be written)."""
    save_png(grab_viewport(viewport), path, str(path))


def save_png(img: QImage, path, location: str) -> None:
    """Write an image to a PNG file atomically (core.io.write_atomic); a located LinkwrightError with the reason
    ("no such folder", "it is a folder", ...) when it cannot be, or when the name is not a .png."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice

    if Path(path).suffix.lower() != ".png":
        raise LinkwrightError(location, f"'{path}': the image is a PNG: give the file a .png name")
    if problem := io.folder_problem(path):
        raise LinkwrightError(location, f"cannot write '{path}': {problem}")
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    if img.isNull() or not img.save(buf, "PNG"):
        raise LinkwrightError(location, f"cannot write '{path}': the image could not be encoded")
    io.write_atomic(path, lambda fh: fh.write(bytes(data)), location, binary=True, suffix=".png")


def image_to_array(img: QImage) -> np.ndarray:
    """(height, width, 3) uint8 RGB copy of a QImage."""
    img = img.convertToFormat(QImage.Format.Format_RGB888)
    h, w = img.height(), img.width()
    buf = np.frombuffer(img.constBits(), np.uint8, count=img.sizeInBytes()).reshape(h, img.bytesPerLine())
    return buf[:, : w * 3].reshape(h, w, 3).copy()


def frame_times(t_end: float, fps: int) -> np.ndarray:
    """Times of an animation's frames: k / fps for k = 0 .. floor(t_end * fps), and t_end itself when it falls between
    two of them (the state asked for is the last frame: `--t-end 0.5 --fps 1` gave t = 0 alone, `--t-end 0.37` at 25
    fps ended at 0.36)."""
    n = int(math.floor(t_end * fps + 1e-9)) + 1
    times = np.arange(n) / fps
    if t_end - times[-1] > TIME_TOLERANCE:
        times = np.append(times, t_end)
    return times


def _stamp(img: QImage, t: float, step: float | None = None) -> None:
    """Write 't = 0.52 s' in the lower-left corner (a slide needs the time, and it keeps still frames distinct): more
    digits when frames `step` seconds apart would read the same."""
    from .playback.recording import time_text  # (app.playback imports this module)

    p = QPainter(img)
    f = QFont()
    f.setPixelSize(max(12, img.height() // 30))
    p.setFont(f)
    p.setPen(QColor(40, 40, 40))
    p.drawText(QPoint(10, img.height() - 10), f"t = {time_text(t, step, decimals=2)} s")
    p.end()


def unwritable(path: Path) -> str:
    """Why a file cannot be made at `path` ('' when it can): a folder there, or a folder that refuses a new file
    (read-only, missing, not a folder, no permission), found by making and removing this process's part file beside
    it (AnimationExport.part_path) before any frame is rendered: the GIF writer opens its file only when it closes."""
    if path.is_dir():
        return "it is a folder"
    if problem := io.folder_problem(path):
        return problem
    part = AnimationExport.part_path(path)
    try:
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    except OSError as exc:
        return io._os_message(exc)
    os.close(fd)
    with contextlib.suppress(OSError):
        part.unlink()
    return ""


def _open_writer(path: Path, fps: int):
    """An imageio writer for a GIF (pillow) or an MP4 (ffmpeg, H.264): append_data(frame) / close()."""
    import imageio.v2 as iio2
    import imageio.v3 as iio3

    if path.suffix.lower() == ".gif":
        w = iio3.imopen(path, "w", plugin="pillow")

        class _Gif:  # the pillow plugin writes every frame at close (one GIF, looping)
            def append_data(self, frame: np.ndarray) -> None:
                w.write(frame, is_batch=False, duration=1000.0 / fps, loop=0)

            def close(self) -> None:
                w.close()

        return _Gif()
    # H.264 in yuv420p (plays everywhere) needs even sizes: frames are cropped to even sizes before they come here.
    return iio2.get_writer(path, format="FFMPEG", mode="I", fps=fps, codec="libx264", pixelformat="yuv420p",
                           macro_block_size=2, ffmpeg_log_level="error")


class AnimationExport(QObject):
    """Renders a Motion frame by frame through the viewport and encodes it; `finished(ok, message)` once."""

    progress = Signal(int, int)  # frames done, frames in all
    finished = Signal(bool, str)  # ok, message (the reason when not ok)

    def __init__(self, viewport, motion: Motion, path, fps: int = DEFAULT_FPS, t_end: float | None = None,
                 stamp: bool = True, show: Callable[[int], None] | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.viewport, self.motion, self.path, self.fps, self.stamp = viewport, motion, Path(path), int(fps), stamp
        # the frames go to a hidden file beside the animation, renamed onto it once complete: a cancelled or failed
        # export (or one stopped by Ctrl+C) leaves an existing file of that name as it was, and nothing else
        self._part = self.part_path(self.path)
        # draws the motion's frame k in the viewport: the Playback's show_frame (bodies, contact arrows, trails and
        # ghosts of that frame); without it only the bodies are posed
        self.show = show
        t_stop = motion.t_last if t_end is None else min(float(t_end), motion.t_last)
        self.times = frame_times(t_stop, self.fps)
        self.frames_done = 0
        self._size: tuple[int, int] | None = None
        self._queue: queue.Queue = queue.Queue()
        self._writer_error: str | None = None
        self._writer: threading.Thread | None = None
        self._cancelled = False
        self.interrupted = False  # interrupt(): the file ends with the frames rendered so far
        self._ended = False
        self._closing = False  # _close is under way (its local event loop may let abort() in)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._next)

    @staticmethod
    def part_path(path: Path) -> Path:
        """The hidden file beside `path` that this process's export of it writes first."""
        return path.with_name(f".{path.name}.{os.getpid()}.part{path.suffix}")

    def start(self) -> None:
        """Begin rendering (frames follow one per event-loop turn)."""
        if self.path.suffix.lower() not in ANIMATION_SUFFIXES:
            self._end(False, f"{self.path.name}: unknown animation type (use {' or '.join(ANIMATION_SUFFIXES)})")
            return
        if len(self.times) > MAX_FRAMES:
            self._end(False, f"{len(self.times)} frames is too many (limit {MAX_FRAMES}): lower the fps or the end time")
            return
        why = unwritable(self.path)  # (before any frame is rendered: a read-only folder was found only at the end)
        if why:
            self._end(False, f"cannot write '{self.path}': {why}")
            return
        try:
            writer = _open_writer(self._part, self.fps)
        except Exception as exc:  # noqa: BLE001 - imageio/ffmpeg/OS refuse in many ways; the user gets the reason
            self._end(False, self._cannot_write(exc))
            return
        self._writer = threading.Thread(target=self._write, args=(writer,), name="linkwright-export-writer", daemon=True)
        self._writer.start()
        self._timer.start()

    def cancel(self) -> None:
        """Stop after the current frame; the partial file is removed."""
        self._cancelled = True

    def interrupt(self) -> None:
        """Stop after the current frame and finish the file with the frames rendered so far (a playable animation,
        `finished(True, '')`); with no frame rendered yet nothing is written (`finished(False, ...)`)."""
        self.interrupted = True

    def abort(self) -> None:
        """Stop now (window close): the writer thread is ended and joined, the partial file removed."""
        self._cancelled = True
        self._timer.stop()
        if not self._ended:
            self._close(False, "cancelled")

    def _next(self) -> None:
        if self._ended:
            return
        if self._cancelled or self._writer_error:
            self._close(False, self._writer_error or "cancelled")
            return
        if self.interrupted:
            self._close(self.frames_done > 0, "" if self.frames_done else "no frame was rendered")
            return
        k = self.frames_done
        t = float(self.times[k])
        k_frame = self.motion.index_at(t)
        if self.show is not None:
            self.show(k_frame)
        else:
            self.viewport.set_body_poses(self.motion.poses_at(k_frame))
        img = grab_viewport(self.viewport)
        if self._size is None:
            self._size = (img.width() // 2 * 2, img.height() // 2 * 2)  # even sizes for H.264
        elif (img.width(), img.height()) != self._size:  # the view was resized during the export
            img = img.scaled(*self._size, Qt.AspectRatioMode.IgnoreAspectRatio, Qt.TransformationMode.SmoothTransformation)
        img = img.convertToFormat(QImage.Format.Format_RGB888)
        if self.stamp:
            # (the frames are 1 / fps apart but for the last, which may come sooner: t_end itself)
            _stamp(img, t, min(1.0 / self.fps, float(np.ptp(self.times[-2:])) or 1.0 / self.fps))
        w, h = self._size
        self._queue.put(image_to_array(img)[:h, :w])
        self.frames_done += 1
        self.progress.emit(self.frames_done, len(self.times))
        if self.frames_done >= len(self.times):
            self._close(True, "")
        else:
            self._timer.start()

    def _close(self, ok: bool, message: str) -> None:
        if self._closing:  # (abort() while the file is being finished: the export ends once, as it ends here)
            return
        self._closing = True
        self._queue.put(None)  # the writer closes the file (a GIF is encoded now, off the GUI thread)
        if self._writer is not None:
            # Wait in a local event loop so the window keeps painting while the file is finished.
            loop = QEventLoop()
            poll = QTimer()
            poll.setInterval(20)
            poll.timeout.connect(lambda: None if self._writer.is_alive() else loop.quit())
            poll.start()
            if self._writer.is_alive():
                loop.exec()
            poll.stop()
            self._writer.join()
        if ok and self._writer_error:
            ok, message = False, self._writer_error
        if ok:
            try:
                os.replace(self._part, self.path)
            except OSError as exc:
                ok, message = False, self._cannot_write(exc)
        if not ok:
            with contextlib.suppress(OSError):  # (a folder that refuses the part file refuses its removal too)
                self._part.unlink(missing_ok=True)  # no half-written animation left behind
        self._end(ok, message)

    def _cannot_write(self, exc: Exception) -> str:
        """The reason an export could not write its file, worded as the app's other exports word it."""
        why = io._os_message(exc) if isinstance(exc, OSError) else str(exc)
        return f"cannot write '{self.path}': {why}"

    def _end(self, ok: bool, message: str) -> None:
        self._ended = True
        self.finished.emit(ok, message)

    def _write(self, writer) -> None:
        try:
            while True:
                frame = self._queue.get()
                if frame is None:
                    break
                if self._writer_error is None:
                    writer.append_data(frame)
        except Exception as exc:  # noqa: BLE001 - reported to the GUI thread, which ends the export
            self._writer_error = self._cannot_write(exc)
            while self._queue.get() is not None:  # drain until the GUI thread's end marker
                pass
        finally:
            try:
                writer.close()
            except Exception as exc:  # noqa: BLE001
                self._writer_error = self._writer_error or self._cannot_write(exc)


# ---- headless ------------------------------------------------------------------------------------------------------
_display_lost = False  # wait_for saw the application's event loop end (_stop_signals)
DISPLAY_LOST = ("the connection to the display was lost (did the X server end?): Qt's event loop has stopped; "
                "nothing was written")


def wait_for(signal_sources: list, timeout_s: float | None = None) -> None:
    """Run a local event loop until any of the given signals fires (or the timeout passes).  A LinkwrightError
    (DISPLAY_LOST) when the application's event loop has ended: Qt's xcb plugin calls QCoreApplication.exit(1) when
    the X11 connection breaks, and every QEventLoop.exec then returns at once (the callers' loops spun at 100 % CPU
    for ever)."""
    loop = QEventLoop()
    for sig in signal_sources:
        sig.connect(loop.quit)
    if timeout_s is not None:
        QTimer.singleShot(int(timeout_s * 1000), loop.quit)
    status = loop.exec()  # (loop.quit: 0; QCoreApplication.exit(n) while it turns: n; already ended: -1)
    for sig in signal_sources:
        try:
            sig.disconnect(loop.quit)
        except (RuntimeError, TypeError):
            pass
    if status != 0:
        global _display_lost
        _display_lost = True
        raise LinkwrightError("display", DISPLAY_LOST)


def _console_progress(label: str) -> Callable[[float], None]:
    """A progress line on stderr when it is a terminal (nothing otherwise)."""
    last = [-1]

    def show(frac: float) -> None:
        if not sys.stderr.isatty():
            return
        pct = int(100 * min(max(frac, 0.0), 1.0))
        if pct != last[0]:
            last[0] = pct
            sys.stderr.write(f"\r{label} [{'#' * (pct // 4):<25}] {pct:3d}%")
            if pct >= 100:
                sys.stderr.write("\n")
            sys.stderr.flush()

    return show


def run_motion(playback, t_end: float, steps: int | None = None,
               progress: Callable[[float], None] | None = None) -> tuple[Motion | None, str]:
    """The motion to t_end from the Playback's run pipeline (MotionRun) while the event loop turns; (motion, '') or
    (None, reason)."""
    run = MotionRun(playback)
    out: dict = {}
    run.finished.connect(lambda m: out.setdefault("motion", m))
    run.failed.connect(lambda msg: out.setdefault("error", msg))
    if progress is not None:
        run.progress.connect(progress)
    run.start(t_end, steps)
    try:
        while not out:
            wait_for([run.finished, run.failed], timeout_s=0.5)
    finally:
        run.shutdown()
    if progress is not None:
        progress(1.0)
    return out.get("motion"), out.get("error", "")


def stop_message(motion: Motion, t: float) -> str:
    """'the run stopped before 1 s (last frame t = 0.3 s): cannot assemble ...' for a run that did not reach t."""
    why = motion.reason or "it ended early"
    if why.startswith("stopped at t = ") and ": " in why:
        why = why.split(": ", 1)[1]  # the time is said once, as the last frame's
    return f"the run stopped before {t:g} s (last frame t = {motion.t_last:.6g} s): {why}"


def _check_time(value: float, option: str) -> float:
    # the shared bound of every run length (1e308 overflowed into the step count: OverflowError in the GUI)
    return validate.number(value, option, 0.0, validate.MAX_DURATION, what="a non-negative number of seconds")


@contextmanager
def _stop_signals(cleanup: Callable[[], None], graceful: Callable[[int], bool] | None = None):
    """Ctrl+C (SIGINT) and SIGTERM while `render` turns Qt's event loop end the process at once, as a headless
    command ends: cleanup() (the part file of the animation goes; an existing file of its name is left as it was),
    "interrupted" or "terminated" on stderr, status 130 or 143.  The signals reach Qt's loop through a socket that
    Python's signal handler writes to (signal.set_wakeup_fd): a KeyboardInterrupt raised in a Qt slot was printed and
    swallowed and the render then waited forever, and a handler run by Python's own mechanism ran only after the
    export's last frame (the signal came to another thread).  Once the display has gone away (wait_for: Qt's loop no
    longer turns) Python's handler ends the process itself, e.g. while the render waits for its writer thread.
    The first signal is offered to graceful(signum) first: when it returns True it has taken the stop over (the
    render finishes its file with the frames rendered so far, then ends with 130 or 143); a second signal ends the
    process at once.  Needs the QApplication."""
    rsock, wsock = socket.socketpair()
    rsock.setblocking(False)
    wsock.setblocking(False)

    def finish(signum: int) -> None:
        cleanup()
        # (os.write, not print: the handler may run while the main thread is inside a write to sys.stderr)
        os.write(2, b"interrupted\n" if signum == signal.SIGINT else b"terminated\n")
        os._exit(128 + signum)

    taken: list[int] = []  # the signal graceful() took over

    def stop() -> None:
        try:
            data = rsock.recv(64)
        except OSError:
            return
        sigs = [b for b in data if b in (signal.SIGINT, signal.SIGTERM)]
        if not sigs:
            return
        if not taken and graceful is not None and graceful(sigs[0]):
            taken.append(sigs[0])
            sigs = sigs[1:]
        if sigs:
            finish(sigs[0])

    def handler(signum, _frame) -> None:
        if _display_lost:
            finish(signum)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    old_fd = signal.set_wakeup_fd(wsock.fileno(), warn_on_full_buffer=False)
    notifier = QSocketNotifier(rsock.fileno(), QSocketNotifier.Type.Read)
    notifier.activated.connect(stop)
    try:
        yield
    finally:
        notifier.setEnabled(False)
        signal.set_wakeup_fd(old_fd)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        rsock.close()
        wsock.close()


def render_command(args) -> int:
    """`linkwright render FILE --out anim.gif|anim.mp4 [--t-end T] [--fps N]`: 0, 2 for bad input, 3 if the run
    stopped before T (the frames up to the stop are written)."""
    from core.cli.simulate import prepare_kernels_noted
    from core.run import RunSpec, nothing_to_move, open_run, run_kind

    from .main import application, missing_display

    if args.out == "":  # (Path("") is ".": "unknown animation type ''" named no mistake; as simulate --out "")
        raise LinkwrightError("--out", io.EMPTY_PATH)
    out = Path(args.out)
    if out.suffix.lower() not in ANIMATION_SUFFIXES:
        raise LinkwrightError("--out", f"unknown animation type '{out.suffix or out.name}' (use .gif or .mp4)")
    if not (1 <= args.fps <= 120):
        raise LinkwrightError("--fps", f"must be between 1 and 120, got {args.fps}")
    if args.t_end is not None:
        _check_time(args.t_end, "--t-end")
    why = unwritable(out)  # (before the run: a folder that refuses the file is found now, not after the frames)
    if why:
        raise LinkwrightError("--out", f"cannot write '{out}': {why}")
    mech = io.load(args.file)
    kind = run_kind(mech)
    if not kind:  # nothing to move: bad input (status 2), found before any window opens
        raise nothing_to_move(mech, args.file)
    contact = kind == "contact"
    t_end = args.t_end
    if t_end is None:
        t_end = mech.simulation_settings().duration if contact else 1.0
    n = len(frame_times(t_end, args.fps))
    if n > MAX_FRAMES:
        raise LinkwrightError("--t-end", f"{n} frames is too many (limit {MAX_FRAMES}): lower --fps or --t-end")
    if contact:
        # a document the stepper refuses is bad input (status 2), found before any window opens; the run's checks
        # name the document's fields, and the end time typed is --t-end (too many steps of the file's dt, or an end
        # time shorter than one step: validate.run_steps, as `simulate`; it wrote one frame, status 0 or 3)
        with typed_options({"simulation.duration": "--t-end" if args.t_end is not None else None}):
            validate.run_steps(t_end, mech.simulation_settings().dt)
            prepare_kernels_noted()  # (open_run's start-up checks use them: compiled first, where Ctrl+C stops it)
            open_run(mech, RunSpec(kind="contact", t_end=max(t_end, mech.simulation_settings().duration)))
    else:
        # an end time of more than 0, as `kinematics --t-end` (0 wrote one frame, status 0)
        validate.number(t_end, "--t-end", 0.0, validate.MAX_DURATION, positive=True)
        # so is a driver undefined or out of bounds at t = 0, or more drivers than freedoms (status 2, as in
        # `linkwright kinematics`; found in the window's run, it was status 3, "stopped early", with no frame)
        open_run(mech, RunSpec(kind="kinematics", t_end=1.0, steps=1))

    if missing_display():  # (Qt would abort the process; say what to do instead)
        raise LinkwrightError("render", "needs a display for OpenGL: run it under Xvfb (xvfb-run -a linkwright render ...)")
    application()
    stop = _RenderStop()
    with _stop_signals(lambda: AnimationExport.part_path(out).unlink(missing_ok=True), stop):
        return _render(args, mech, out, t_end, stop)


class _RenderStop:
    """Ctrl+C or SIGTERM while `render` draws its frames (_stop_signals' graceful): the export stops after the frame
    it draws and finishes the file with the frames rendered so far, a playable GIF or MP4, and the render ends with
    130 or 143 saying how far it got.  Before the frames (loading, the run) the signal ends the render at once, with
    nothing written, as before."""

    def __init__(self) -> None:
        self.export: AnimationExport | None = None
        self.signum: int | None = None

    def __call__(self, signum: int) -> bool:
        if self.export is None or self.signum is not None:
            return False
        self.signum = signum
        self.export.interrupt()
        return True


def _render(args, mech, out: Path, t_end: float, stop: _RenderStop | None = None) -> int:
    """render_command's window, run and export (after its checks; Ctrl+C and SIGTERM: _stop_signals, _RenderStop)."""
    from .document import Document
    from .playback import Playback
    from .selection import Selection
    from .viewport import Viewport3D

    document = Document(mech, Path(args.file).resolve())
    viewport = Viewport3D(document, Selection())
    viewport.resize(*RENDER_SIZE)
    viewport.setWindowTitle("Linkwright render")
    playback = Playback(document, viewport)
    viewport.show()
    try:
        wait_for([], timeout_s=0.3)  # the GL context is created and the first frame drawn
        viewport.set_view("front" if mech.space == "planar" else "iso")
        motion, error = run_motion(playback, t_end, steps=max(1, round(t_end * args.fps)),
                                   progress=_console_progress("running"))
        if motion is None:
            print(f"error: {args.file}: {error}", file=sys.stderr)
            return 3
        fit_motion(viewport, motion)
        export = AnimationExport(viewport, motion, out, args.fps, t_end, show=playback.show_frame)
        bar = _console_progress("rendering")
        export.progress.connect(lambda k, total: bar(k / max(total, 1)))
        result: dict = {}
        export.finished.connect(lambda ok, msg: result.update(ok=ok, msg=msg))
        if stop is not None:
            stop.export = export
        export.start()
        try:
            while not result:
                wait_for([export.finished], timeout_s=0.5)
        except BaseException:  # (the display went away: the writer thread ended, the part file removed)
            export.abort()
            raise
        if stop is not None and stop.signum is not None:
            word = "interrupted" if stop.signum == signal.SIGINT else "terminated"
            n = export.frames_done
            if sys.stderr.isatty() and n < len(export.times):
                sys.stderr.write("\n")  # (after the progress bar, which stopped short of its end)
            if result["ok"]:
                t_last = float(export.times[n - 1])
                print(f"{word} at t = {t_last:g} s ({n} frame{'s' if n != 1 else ''} written to {out})",
                      file=sys.stderr)
            else:  # (no frame yet, or the file could not be finished: its part file is gone, an old file kept)
                print(f"{word}: {result['msg']}; nothing written", file=sys.stderr)
            return 128 + stop.signum
        if not result["ok"]:
            raise LinkwrightError("--out", result["msg"])
        if not motion.ok:
            print(f"{args.file}: {stop_message(motion, t_end)} ({export.frames_done} frames written)", file=sys.stderr)
            return 3
        return 0
    finally:
        playback.shutdown()
        viewport.close()
        viewport.deleteLater()


def screenshot_at(window, t: float) -> tuple[bool, str]:
    """Run the window's document to t through its Motion dock (every view follows) and show time t, or the last frame
    before a stop; (reached, reason)."""
    from core.cli.simulate import prepare_kernels_noted
    from core.run import RunSpec, nothing_to_move, open_run

    t = _check_time(t, "--time")
    pb = window.playback
    mech = window.document.mechanism
    if not pb.kind:  # nothing to move to time t: bad input (status 2), as in render
        raise nothing_to_move(mech, "--time")
    if pb.kind == "contact":
        # a document the stepper refuses is bad input (status 2), as in render, before the window waits for a run:
        # the run's own start-up checks (a floor that is not ground, with a shape and no mass; bodies started inside
        # one another, a floor given twice, a spin too fast for the step: were status 3, "stopped early")
        validate.step_count(t, mech.simulation_settings().dt, "--time")
        prepare_kernels_noted()  # (open_run's start-up checks use them: compiled first, where Ctrl+C stops it)
        with typed_options({"simulation.duration": "--time"}):  # (a recording too large for the machine: its end)
            open_run(mech, RunSpec(kind="contact", t_end=t))
    else:
        validate.step_count(t, 1.0 / KINEMATIC_STEPS_PER_SECOND, "--time")  # the frames run_motion will solve
        # a driver refused at t = 0, or more drivers than freedoms: bad input (status 2), as in render
        open_run(mech, RunSpec(kind="kinematics", t_end=1.0, steps=1))
    motion, error = run_motion(pb, t, progress=_console_progress("running"))
    if motion is None:
        return False, error
    if pb.kind == "kinematics":
        fit_motion(window.viewport, motion)  # nothing of the motion off-screen (a contact run frames itself)
    pb.seek_time(t)  # the slider, readouts, plots and viewport follow
    wait_for([], timeout_s=0.2)
    return motion.ok, "" if motion.ok else stop_message(motion, t)


# ---- in the app: File ▸ Export --------------------------------------------------------------------------------------
class ExportController(QObject):
    """File ▸ Export: the 3D view to PNG and its animation to GIF/MP4, with a progress dialog that can cancel."""

    message = Signal(str)  # a line for the status bar
    done = Signal(bool, str)  # an animation export ended: ok, path or reason

    def __init__(self, window, document, viewport, playback, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.window, self.document, self.viewport, self.playback = window, document, viewport, playback
        self.fps = DEFAULT_FPS
        self.dialog = None  # the QProgressDialog while an animation export runs
        self._run: MotionRun | None = None
        self._export: AnimationExport | None = None
        self._saved_poses: dict | None = None
        self._path: Path | None = None

    def _error(self, title: str, text: str) -> None:
        from PySide6.QtWidgets import QMessageBox

        QMessageBox.critical(self.window, title, text)

    def _ask_path(self, title: str, filters: str, default_suffix: str) -> Path | None:
        from .files import ask_save_path, suggested_stem

        # (an unsaved document's name with a slash, "Crank/rocker", suggested a file in a folder "Crank")
        base = (self.document.path.with_suffix(default_suffix) if self.document.path
                else Path.home() / f"{suggested_stem(self.document.mechanism, 'linkwright')}{default_suffix}")
        return ask_save_path(self.window, title, str(base), filters)

    @property
    def busy(self) -> bool:
        """Whether an animation export is under way."""
        return self.dialog is not None

    def export_png(self) -> bool:
        """Ask for a file name and write the 3D view as it is drawn now."""
        path = self._ask_path("Export 3D view as PNG", "PNG image (*.png)", ".png")
        if path is None:
            return False
        try:
            save_viewport_png(self.viewport, path)
        except LinkwrightError as exc:
            self._error("Cannot export", exc.message)  # (it names the file; its location is the file again)
            return False
        self.message.emit(f"Exported the 3D view to {path.name}")
        return True

    def has_run(self) -> bool:
        """Whether the Motion dock holds frames of a run to export."""
        return self.playback.recording.count > 0

    def export_run_data(self, path=None) -> bool:
        """Ask for a .csv or .npz name and write the Motion dock's run (the frames so far if it stopped early, or is
        still going) as `linkwright simulate --out` / `linkwright kinematics --csv` write it; False if nothing was
        written (a dialog says why)."""
        rec = self.playback.recording
        if not rec.count:
            self._error("Nothing to export", "There is no run to export yet: run the document (Run, F5) first.")
            return False
        if path is None:
            filters = ("CSV table (*.csv);;NumPy archive, lossless (*.npz)" if rec.kind == "contact"
                       else "CSV table (*.csv)")
            path = self._ask_path("Export run data", filters, ".csv")
            if path is None:
                return False
        path = Path(path)
        try:
            rows = save_run_data(rec, path)
        except LinkwrightError as exc:
            self._error("Cannot export run data", str(exc))  # (with its place: the file's name)
            return False
        notes = []
        if not rec.complete:
            notes.append("the run is still going: the frames so far")
        elif not rec.ok:
            notes.append("the run stopped early: the frames before the stop")
        if rec.stale:
            notes.append("computed before the last edits")
        note = f" ({'; '.join(notes)})" if notes else ""
        self.message.emit(f"Exported {rows} frames of the run to {path.name}{note}")
        return True

    def export_animation(self, path=None) -> bool:
        """Ask for a .gif or .mp4 name, run the document if needed, render its animation; False if nothing started."""
        if self.busy:
            return False
        path = Path(path) if path else self._ask_path("Export animation", "GIF animation (*.gif);;MP4 video (*.mp4)", ".gif")
        if path is None:
            return False
        if path.suffix.lower() not in ANIMATION_SUFFIXES:
            self._error("Cannot export", f"{path.name}: unknown animation type (use .gif or .mp4)")
            return False
        why = unwritable(path)  # (before the run and the rendering, not after them)
        if why:
            self._error("Cannot export", f"cannot write '{path}': {why}")
            return False
        from PySide6.QtWidgets import QProgressDialog

        self._path = path
        self.playback.pause()
        self._saved_poses = self.viewport.body_poses()
        dlg = QProgressDialog(f"Running the motion for {path.name}…", "Cancel", 0, 1000, self.window)
        dlg.setObjectName("exportProgress")
        dlg.setWindowTitle("Export animation")
        dlg.setWindowModality(Qt.WindowModality.WindowModal)  # no edits while the frames are drawn from the document
        dlg.setMinimumDuration(0)
        dlg.setAutoClose(False)
        dlg.setAutoReset(False)
        dlg.canceled.connect(self.cancel)
        dlg.show()
        self.dialog = dlg
        run = self._run = MotionRun(self.playback, self)
        run.progress.connect(self._run_progress)
        run.finished.connect(self._render)
        run.failed.connect(self._run_failed)
        pb = self.playback
        if pb.kind == "contact":
            run.start(pb.contact_end())  # the Motion dock's run: its frames when they are fresh
        else:
            run.start(pb.t_end, pb.steps)  # the Motion dock's range: no re-solve if solved
        return True

    def cancel(self) -> None:
        """Stop the export (the run, or the rendering; no partial file is left)."""
        if self._export is not None:
            self._export.cancel()
        elif self._run is not None:
            self._run.cancel()
            self._finish(False, "cancelled")

    def _run_failed(self, message: str) -> None:
        self._finish(False, message)

    def _run_progress(self, frac: float) -> None:
        if self.dialog is not None and self._export is None:
            self.dialog.setValue(int(500 * frac))  # the run is the first half of the bar

    def _render(self, motion: Motion) -> None:
        if self.dialog is None:
            return  # cancelled meanwhile
        self.dialog.setLabelText(f"Rendering {self._path.name}…")
        exp = self._export = AnimationExport(self.viewport, motion, self._path, self.fps, show=self.playback.show_frame,
                                             parent=self)
        exp.progress.connect(lambda k, n: self.dialog is not None and self.dialog.setValue(500 + int(500 * k / max(n, 1))))
        exp.finished.connect(self._finish)
        exp.start()

    def _finish(self, ok: bool, message: str) -> None:
        if self.dialog is None:
            return
        dlg, self.dialog = self.dialog, None
        dlg.canceled.disconnect(self.cancel)
        dlg.close()
        dlg.deleteLater()
        if self._run is not None:
            self._run.shutdown()
            self._run.deleteLater()
        self._run, self._export = None, None
        if self.playback.recording.count:
            self.playback.show_cursor()  # back to what the cursor shows
        elif self._saved_poses:
            self.viewport.set_body_poses(self._saved_poses)
        path = self._path
        if ok:
            self.message.emit(f"Exported the animation to {path.name}")
            self.done.emit(True, str(path))
        else:
            self.message.emit(f"Animation not exported: {message}")
            if message != "cancelled":
                self._error("Cannot export animation", message)
            self.done.emit(False, message)

    def shutdown(self) -> None:
        """Stop any export now and join its threads (window close)."""
        if self._export is not None:
            self._export.abort()  # ends it through _finish
        elif self._run is not None:
            self._run.shutdown()
            self._finish(False, "cancelled")
