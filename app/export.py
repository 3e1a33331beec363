"""Exports of the 3D view: the viewport to PNG, its animation to GIF or MP4 (imageio, its ffmpeg plugin for MP4),
and the headless `linkwright render` / `linkwright --screenshot OUT.png --time T` behind them.

The motion shown comes from what runs documents today: a driven mechanism through the Motion dock's Playback (its
worker and recording), a contact document through `run_contact` (core.contact.simulate in a worker thread). Frames
are rendered on the GUI thread one per event-loop turn (the GL context lives there) and encoded by imageio in a
writer thread, so the window stays responsive and an export can be cancelled between frames.
"""

from __future__ import annotations

import math
import os
import queue
import sys
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from PySide6.QtCore import QEventLoop, QObject, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QImage, QPainter

from core import validate
from core.errors import LinkwrightError
from core.model import Mechanism
from core.transforms import quat_to_matrix

__all__ = [
    "Motion", "ANIMATION_SUFFIXES", "DEFAULT_FPS", "is_contact_document", "run_contact", "MotionRun",
    "AnimationExport", "fit_motion", "grab_viewport", "save_viewport_png", "image_to_array", "frame_times", "wait_for",
    "render_command", "screenshot_at", "ExportController",
]

ANIMATION_SUFFIXES = (".gif", ".mp4")
DEFAULT_FPS = 25  # frames per second of an exported animation
MAX_FRAMES = 20_000  # an animation longer than this is a mistake (13 min at 25 fps)
RENDER_SIZE = (800, 600)  # pixels of the viewport `linkwright render` draws
KINEMATIC_STEPS_PER_SECOND = 100  # frames solved per second of motion for --screenshot --time on a driven mechanism


@dataclass(frozen=True)
class Motion:
    """A run's frames as world transforms of the moving bodies' frames, and how the run ended."""

    times: np.ndarray  # (K,) s
    body_names: list[str]  # the bodies posed by the frames (bodies not listed stay in their design pose)
    poses: np.ndarray  # (K, B, 4, 4) world transforms of the body frames
    ok: bool  # the run reached the end time it was asked for
    reason: str  # why it stopped early ("" when ok)

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


def is_contact_document(mech: Mechanism) -> bool:
    """Whether the document is run by the contact stepper: a free body with a shape and a mass or density."""
    joined = {b for j in mech.joints for b in j.bodies}
    return any(b.shape is not None and not b.ground and (b.mass is not None or b.density is not None)
               and b.name not in joined for b in mech.bodies)


def run_contact(mech: Mechanism, t_end: float, progress: Callable[[int, int], None] | None = None,
                cancel: Callable[[], bool] | None = None) -> Motion:
    """Run a contact document to t_end (the one place exports run a contact document; LinkwrightError if bad)."""
    from core.contact import simulate

    rec = simulate(mech, t_end=t_end, progress=progress, cancel=cancel)
    K, B = rec.position.shape[:2]
    poses = np.zeros((K, B, 4, 4))
    poses[:, :, 3, 3] = 1.0
    for j in range(B):
        poses[:, j, :3, :3] = quat_to_matrix(rec.orientation[:, j])
        poses[:, j, :3, 3] = rec.position[:, j]
    return Motion(rec.t.copy(), list(rec.body_names), poses, bool(rec.completed), "" if rec.completed else rec.reason)


def _kinematic_motion(recording) -> Motion:
    """The Playback recording's frames as a Motion."""
    n = recording.count
    return Motion(recording.times[:n].copy(), list(recording.body_names), recording.poses[:n].copy(),
                  bool(recording.ok) and n > 0, recording.reason)


class MotionRun(QObject):
    """Runs the document to t_end in the background and emits `finished(Motion)` or `failed(message)` once."""

    progress = Signal(float)  # fraction of the run done
    finished = Signal(object)  # Motion
    failed = Signal(str)  # located message (bad document, nothing to move, error inside the run)

    def __init__(self, document, playback, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.document, self.playback = document, playback
        self._thread: threading.Thread | None = None
        self._cancel = threading.Event()
        self._done = False
        self._connected = False  # to the playback's signals (kinematics)

    # ---- control --------------------------------------------------------------------------------------------
    def start(self, t_end: float, steps: int | None = None) -> None:
        """Start running to `t_end` (kinematics: `steps` solved frames, default 100 per second)."""
        mech = self.document.mechanism
        if is_contact_document(mech):
            snapshot = mech.copy()  # frozen on the GUI thread: later edits never reach the run
            self._thread = threading.Thread(target=self._run_contact, args=(snapshot, float(t_end)),
                                            name="linkwright-export-run", daemon=True)
            self._thread.start()
            return
        if not mech.joints:
            self._finish_failed("nothing to move: the document has no joints and no free body with a shape and a mass")
            return
        pb = self.playback
        if t_end <= 0:  # the start only: whatever range is solved has it as frame 0
            t_end, steps = pb.t_end, pb.steps
        steps = steps or max(1, round(t_end * KINEMATIC_STEPS_PER_SECOND))
        pb.recording.completed.connect(self._kinematics_completed)
        pb.recording.grew.connect(self._kinematics_grew)
        pb.statusChanged.connect(self._kinematics_status)
        self._connected = True
        pb.set_range(t_end, steps)  # re-solves only if the range changed
        rec = pb.recording
        if rec.complete and pb.status_kind != "busy" and len(rec.requested) == steps + 1:
            self._kinematics_completed()  # already solved over exactly this range
        elif pb.status_kind == "error":
            self._kinematics_status(pb.status, pb.status_tip, pb.status_kind)

    def cancel(self) -> None:
        """Stop the run (a contact run stops at its next step)."""
        self._cancel.set()

    def shutdown(self) -> None:
        """Cancel and join the run's thread."""
        self.cancel()
        if self._thread is not None:
            self._thread.join(30)
        self._disconnect()

    # ---- kinematics: the Motion dock's playback --------------------------------------------------------------
    def _disconnect(self) -> None:
        if not self._connected:
            return
        self._connected = False
        pb = self.playback
        for sig, slot in ((pb.recording.completed, self._kinematics_completed), (pb.recording.grew, self._kinematics_grew),
                          (pb.statusChanged, self._kinematics_status)):
            try:
                sig.disconnect(slot)
            except (RuntimeError, TypeError):
                pass

    def _kinematics_grew(self, n: int) -> None:
        total = max(len(self.playback.recording.requested), 1)
        self.progress.emit(min(n / total, 1.0))

    def _kinematics_completed(self) -> None:
        if self._done:
            return
        self._disconnect()
        motion = _kinematic_motion(self.playback.recording)
        if not len(motion.times):
            self._finish_failed(self.playback.recording.reason or "the motion could not be solved")
            return
        self._done = True
        self.finished.emit(motion)

    def _kinematics_status(self, text: str, _tip: str, kind: str) -> None:
        if kind == "error" and not self._done:
            self._disconnect()
            self._finish_failed(text)

    def _finish_failed(self, message: str) -> None:
        self._done = True
        self.failed.emit(message)

    # ---- contact: a worker thread ---------------------------------------------------------------------------
    def _run_contact(self, mech: Mechanism, t_end: float) -> None:
        try:
            motion = run_contact(mech, t_end, progress=lambda k, n: self.progress.emit(k / max(n, 1)),
                                 cancel=self._cancel.is_set)
        except LinkwrightError as exc:
            self.failed.emit(str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - a bug in a run is reported, never a dead thread
            traceback.print_exc()
            self.failed.emit(f"internal error in the run: {type(exc).__name__}: {exc}")
            return
        self.finished.emit(motion)


def fit_motion(viewport, motion: Motion, samples: int = 24) -> None:
    """Aim the viewport's camera (keeping its direction) so every body stays in view over the whole motion: the
    viewport's own framing of a run (Viewport3D.fit_motion) with the bodies' origin paths at `samples` times."""
    if not len(motion.times):
        return
    ks = np.unique(np.linspace(0, len(motion.times) - 1, min(samples, len(motion.times))).round().astype(int))
    viewport.fit_motion({name: motion.poses[ks, i, :3, 3] for i, name in enumerate(motion.body_names)})


# ---- images ----------------------------------------------------------------------------------------------------
def grab_viewport(viewport) -> QImage:
    """The 3D view as drawn now (its OpenGL framebuffer, at the widget's size)."""
    viewport.scene()  # a pending document change is applied first
    return viewport.view.grabFramebuffer()


def save_viewport_png(viewport, path) -> None:
    """Write the 3D view to a PNG (LinkwrightError if it cannot be written)."""
    img = grab_viewport(viewport)
    if img.isNull() or not img.save(str(path), "PNG"):
        raise LinkwrightError(str(path), "cannot write the PNG")


def image_to_array(img: QImage) -> np.ndarray:
    """(height, width, 3) uint8 RGB copy of a QImage."""
    img = img.convertToFormat(QImage.Format.Format_RGB888)
    h, w = img.height(), img.width()
    buf = np.frombuffer(img.constBits(), np.uint8, count=img.sizeInBytes()).reshape(h, img.bytesPerLine())
    return buf[:, : w * 3].reshape(h, w, 3).copy()


def frame_times(t_end: float, fps: int) -> np.ndarray:
    """Times of an animation's frames: k / fps for k = 0 .. floor(t_end * fps)."""
    n = int(math.floor(t_end * fps + 1e-9)) + 1
    return np.arange(n) / fps


def _stamp(img: QImage, t: float) -> None:
    """Write 't = 0.52 s' in the lower-left corner (a slide needs the time, and it keeps still frames distinct)."""
    p = QPainter(img)
    f = QFont()
    f.setPixelSize(max(12, img.height() // 30))
    p.setFont(f)
    p.setPen(QColor(40, 40, 40))
    p.drawText(QPoint(10, img.height() - 10), f"t = {t:.2f} s")
    p.end()


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
                 stamp: bool = True, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.viewport, self.motion, self.path, self.fps, self.stamp = viewport, motion, Path(path), int(fps), stamp
        t_stop = motion.t_last if t_end is None else min(float(t_end), motion.t_last)
        self.times = frame_times(t_stop, self.fps)
        self.frames_done = 0
        self._size: tuple[int, int] | None = None
        self._queue: queue.Queue = queue.Queue()
        self._writer_error: str | None = None
        self._writer: threading.Thread | None = None
        self._cancelled = False
        self._ended = False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._next)

    def start(self) -> None:
        """Begin rendering (frames follow one per event-loop turn)."""
        if self.path.suffix.lower() not in ANIMATION_SUFFIXES:
            self._end(False, f"{self.path.name}: unknown animation type (use {' or '.join(ANIMATION_SUFFIXES)})")
            return
        if len(self.times) > MAX_FRAMES:
            self._end(False, f"{len(self.times)} frames is too many (limit {MAX_FRAMES}): lower the fps or the end time")
            return
        try:
            writer = _open_writer(self.path, self.fps)
        except Exception as exc:  # noqa: BLE001 - imageio/ffmpeg/OS refuse in many ways; the user gets the reason
            self._end(False, f"cannot write {self.path}: {exc}")
            return
        self._writer = threading.Thread(target=self._write, args=(writer,), name="linkwright-export-writer", daemon=True)
        self._writer.start()
        self._timer.start()

    def cancel(self) -> None:
        """Stop after the current frame; the partial file is removed."""
        self._cancelled = True

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
        k = self.frames_done
        t = float(self.times[k])
        self.viewport.set_body_poses(self.motion.poses_at(self.motion.index_at(t)))
        img = grab_viewport(self.viewport)
        if self._size is None:
            self._size = (img.width() // 2 * 2, img.height() // 2 * 2)  # even sizes for H.264
        elif (img.width(), img.height()) != self._size:  # the view was resized during the export
            img = img.scaled(*self._size, Qt.AspectRatioMode.IgnoreAspectRatio, Qt.TransformationMode.SmoothTransformation)
        img = img.convertToFormat(QImage.Format.Format_RGB888)
        if self.stamp:
            _stamp(img, t)
        w, h = self._size
        self._queue.put(image_to_array(img)[:h, :w])
        self.frames_done += 1
        self.progress.emit(self.frames_done, len(self.times))
        if self.frames_done >= len(self.times):
            self._close(True, "")
        else:
            self._timer.start()

    def _close(self, ok: bool, message: str) -> None:
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
        if not ok:
            self.path.unlink(missing_ok=True)  # no half-written animation left behind
        self._end(ok, message)

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
            self._writer_error = f"cannot write {self.path}: {exc}"
            while self._queue.get() is not None:  # drain until the GUI thread's end marker
                pass
        finally:
            try:
                writer.close()
            except Exception as exc:  # noqa: BLE001
                self._writer_error = self._writer_error or f"cannot write {self.path}: {exc}"


# ---- headless ------------------------------------------------------------------------------------------------------
def wait_for(signal_sources: list, timeout_s: float | None = None) -> None:
    """Run a local event loop until any of the given signals fires (or the timeout passes)."""
    loop = QEventLoop()
    for sig in signal_sources:
        sig.connect(loop.quit)
    if timeout_s is not None:
        QTimer.singleShot(int(timeout_s * 1000), loop.quit)
    loop.exec()
    for sig in signal_sources:
        try:
            sig.disconnect(loop.quit)
        except (RuntimeError, TypeError):
            pass


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


def run_motion(document, playback, t_end: float, steps: int | None = None,
               progress: Callable[[float], None] | None = None) -> tuple[Motion | None, str]:
    """Run the document to t_end while the event loop turns; (motion, '') or (None, reason)."""
    run = MotionRun(document, playback)
    out: dict = {}
    run.finished.connect(lambda m: out.setdefault("motion", m))
    run.failed.connect(lambda msg: out.setdefault("error", msg))
    if progress is not None:
        run.progress.connect(progress)
    run.start(t_end, steps)
    while not out:
        wait_for([run.finished, run.failed], timeout_s=0.5)
    run.shutdown()
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


def render_command(args) -> int:
    """`linkwright render FILE --out anim.gif|anim.mp4 [--t-end T] [--fps N]`: 0, 2 for bad input, 3 if the run
    stopped before T (the frames up to the stop are written)."""
    from core import io

    from .document import Document
    from .main import application
    from .playback import Playback
    from .selection import Selection
    from .viewport import Viewport3D

    out = Path(args.out)
    if out.suffix.lower() not in ANIMATION_SUFFIXES:
        raise LinkwrightError("--out", f"unknown animation type '{out.suffix or out.name}' (use .gif or .mp4)")
    if not (1 <= args.fps <= 120):
        raise LinkwrightError("--fps", f"must be between 1 and 120, got {args.fps}")
    if args.t_end is not None:
        _check_time(args.t_end, "--t-end")
    if not out.parent.exists():
        raise LinkwrightError("--out", f"cannot write '{out}': no such folder '{out.parent}'")
    mech = io.load(args.file)
    t_end = args.t_end
    if t_end is None:
        t_end = mech.simulation_settings().duration if is_contact_document(mech) else 1.0
    n = len(frame_times(t_end, args.fps))
    if n > MAX_FRAMES:
        raise LinkwrightError("--t-end", f"{n} frames is too many (limit {MAX_FRAMES}): lower --fps or --t-end")
    if is_contact_document(mech):
        from core.contact import build_model

        build_model(mech)  # a document the stepper refuses is bad input (status 2), found before any window opens

    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")) \
            and os.environ.get("QT_QPA_PLATFORM", "xcb").startswith(("xcb", "wayland")):
        # Qt would abort the process; say what to do instead
        raise LinkwrightError("render", "needs a display for OpenGL: run it under Xvfb (xvfb-run -a linkwright render ...)")
    application()
    document = Document(mech, Path(args.file).resolve())
    viewport = Viewport3D(document, Selection())
    viewport.resize(*RENDER_SIZE)
    viewport.setWindowTitle("Linkwright render")
    playback = Playback(document, viewport)
    viewport.show()
    wait_for([], timeout_s=0.3)  # the GL context is created and the first frame drawn
    viewport.set_view("front" if mech.space == "planar" else "iso")
    try:
        motion, error = run_motion(document, playback, t_end, steps=max(1, round(t_end * args.fps)),
                                   progress=_console_progress("running"))
        if motion is None:
            print(f"error: {args.file}: {error}", file=sys.stderr)
            return 3
        fit_motion(viewport, motion)
        export = AnimationExport(viewport, motion, out, args.fps, t_end)
        bar = _console_progress("rendering")
        export.progress.connect(lambda k, total: bar(k / max(total, 1)))
        result: dict = {}
        export.finished.connect(lambda ok, msg: result.update(ok=ok, msg=msg))
        export.start()
        while not result:
            wait_for([export.finished], timeout_s=0.5)
        if not result["ok"]:
            raise LinkwrightError("--out", result["msg"])
        if not motion.ok or motion.t_last < t_end - 1e-9:
            print(f"{args.file}: {stop_message(motion, t_end)} ({export.frames_done} frames written)", file=sys.stderr)
            return 3
        return 0
    finally:
        playback.shutdown()
        viewport.close()
        viewport.deleteLater()


def screenshot_at(window, t: float) -> tuple[bool, str]:
    """Run the window's document to t, show time t (or the last frame before a stop) in every view; (reached, reason)."""
    t = _check_time(t, "--time")
    if is_contact_document(window.document.mechanism):
        return _contact_screenshot_at(window, t)
    validate.step_count(t, 1.0 / KINEMATIC_STEPS_PER_SECOND, "--time")  # the frames run_motion will solve
    motion, error = run_motion(window.document, window.playback, t, progress=_console_progress("running"))
    if motion is None:
        return False, error
    k = motion.index_at(t)
    fit_motion(window.viewport, motion)  # nothing of the motion off-screen
    if is_contact_document(window.document.mechanism):
        window.viewport.set_body_poses(motion.poses_at(k))
    else:
        window.playback.seek(window.playback.recording.index_at(t))  # the slider, readout and viewport follow
    reached = motion.ok and motion.t_last >= t - 1e-9
    return reached, "" if reached else stop_message(motion, t)


def _contact_screenshot_at(window, t: float) -> tuple[bool, str]:
    """A contact document run to t by the window's own Motion dock (its worker and recording: every view follows),
    the cursor then at t, or at the last frame before a stop."""
    from core.contact import build_model

    # a document the stepper refuses is bad input (status 2), as in render: the run would never start and the wait
    # below would never end (the outside campaign: a floor that is not ground, with a shape and no mass)
    build_model(window.document.mechanism)
    pb = window.playback
    if pb.contact_end() < t:
        pb.set_range(t, 1)
    pb.run()
    rec = pb.recording
    show = _console_progress("running")
    while True:
        last = rec.time_at(rec.count - 1) if rec.count else None
        if last is not None and last >= t - 1e-9:
            break
        if rec.complete and not pb.is_running():
            break
        show(min(1.0, (last or 0.0) / t) if t > 0 else 1.0)
        wait_for([rec.completed], timeout_s=0.1)
    show(1.0)
    pb.stop()  # (the frames up to t are all it needs)
    pb.seek_time(t)
    wait_for([], timeout_s=0.2)
    last = rec.time_at(rec.count - 1) if rec.count else 0.0
    if last >= t - 1e-9:
        return True, ""
    why = rec.reason or "it ended early"
    return False, f"the run stopped before {t:g} s (last frame t = {last:.6g} s): {why}"


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
        from PySide6.QtWidgets import QFileDialog

        base = self.document.path.with_suffix(default_suffix) if self.document.path else Path.home() / f"{self.document.mechanism.name or 'linkwright'}{default_suffix}"
        path, _ = QFileDialog.getSaveFileName(self.window, title, str(base), filters)
        if not path:
            return None
        p = Path(path)
        return p if p.suffix else p.with_suffix(default_suffix)

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
            self._error("Cannot export", str(exc))
            return False
        self.message.emit(f"Exported the 3D view to {path.name}")
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
        mech = self.document.mechanism
        run = self._run = MotionRun(self.document, self.playback, self)
        run.progress.connect(self._run_progress)
        run.finished.connect(self._render)
        run.failed.connect(self._run_failed)  # bound methods: a contact run signals from its thread (queued here)
        if is_contact_document(mech):
            run.start(mech.simulation_settings().duration)
        else:
            run.start(self.playback.t_end, self.playback.steps)  # the Motion dock's range: no re-solve if solved
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
        exp = self._export = AnimationExport(self.viewport, motion, self._path, self.fps, parent=self)
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
        if self._saved_poses:
            self.viewport.set_body_poses(self._saved_poses)  # back to what the cursor shows
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
