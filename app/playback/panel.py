"""The Motion panel: run/stop, play/pause, a time slider over the recorded frames, t readout, the run's settings
(end time and steps; for contact runs the method and the comparison), progress and status."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QValidator
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QSizePolicy,
    QSlider,
    QSpinBox,
    QStyle,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from core import validate
from core.errors import LinkwrightError

from .player import Playback
from .recording import time_text

__all__ = ["MotionPanel", "LabelHolder"]

STATUS_COLOURS = {"busy": "#546e7a", "ok": "#1b5e20", "stopped": "#e65100", "error": "#b71c1c",
                  "stale": "#8d6e00"}  # as the status bar


ERROR_STYLE = "QDoubleSpinBox { border: 2px solid #c62828; background: #ffebee; }"  # as a refused Properties field


def _leave_window_shortcuts(box, event, base) -> bool:
    """A spin box's `event`: a Ctrl shortcut of the window that its line edit claims (Ctrl+E, Export Animation: X11's
    'end of line') goes to the window, as from a Properties field (app.panels.properties.window_takes). The key goes
    first to the line edit (the box's focus proxy: _ShortcutFilter), then, not taken there, to the box, which hands
    it to the line edit again."""
    from ..panels.properties import window_takes

    if event.type() != QEvent.Type.ShortcutOverride:
        return base(event)
    handled = base(event)
    if event.isAccepted() and window_takes(box, event):
        event.ignore()
    return handled


class _ShortcutFilter(QObject):
    """On a spin box's line edit: the window's Ctrl shortcuts are not the line edit's (see _leave_window_shortcuts)."""

    def eventFilter(self, obj, event) -> bool:  # noqa: D102 - Qt API
        if event.type() == QEvent.Type.ShortcutOverride:
            from ..panels.properties import window_takes

            if window_takes(obj, event):
                event.ignore()
                return True
        return False


class _TypedEntry:
    """What the Motion dock's number boxes share: any text may be typed; an entry `reason` refuses is put back to the
    value shown, as a spin box does, and `refused` says why; finish() takes a pending entry before a window action."""

    def validate(self, text: str, pos: int):  # noqa: D102 - Qt API
        # (any text may be typed: one the box cannot take is refused with the reason when it is entered)
        return QValidator.Intermediate if self.reason(text) else QValidator.Acceptable, text, pos

    def fixup(self, text: str) -> str:  # noqa: D102 - Qt API
        # (the spin box calls this with an entry it will not take, before it puts back the value shown)
        why = self.reason(text)
        if why:
            self.refused.emit(why)
        return text

    def finish(self) -> str:
        """Take the typed text now, as Enter does (before an action of the window runs); the refusal's reason, '' if
        taken. A refused entry stays in the box."""
        why = self.reason(self.lineEdit().text())
        if why:
            self.refused.emit(why)
            return why
        self.interpretText()
        return ""


class StepsBox(_TypedEntry, QSpinBox):
    """The Steps box: a whole number of steps typed as text, taken as typed or refused with the reason (`refused`).

    A QSpinBox's own validator dropped the keys it could not take while they were typed: 1e3 became 13, -5 became 5
    and 1000001 became 100000 (the last digit refused), and a run started with a count nobody typed. Any text may be
    typed here; on Enter one that is not a whole number in range is put back to the value shown and `refused` says
    why. It also leaves the window's Ctrl shortcuts to the window."""

    refused = Signal(str)  # the reason a typed entry was not taken

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._filter = _ShortcutFilter(self)
        self.lineEdit().installEventFilter(self._filter)

    def event(self, event) -> bool:  # noqa: D102 - Qt API
        return _leave_window_shortcuts(self, event, super().event)

    def _number(self, text: str) -> str:
        return text.removeprefix(self.prefix()).strip()

    def _whole(self, text: str) -> int | None:
        """The whole number `text` is (decimal digits, or a number such as 1e3 with no fraction), None if none."""
        t = self._number(text)
        try:
            return int(t)
        except ValueError:
            pass
        try:
            v = validate.parse_number(t, "")
        except LinkwrightError:
            return None
        return int(v) if v == int(v) else None

    def reason(self, text: str) -> str:
        """Why the entry `text` cannot be taken ('' if it can)."""
        t = self._number(text)
        if not t:
            return "a number of steps is required"
        n = self._whole(t)
        shown = t if len(t) <= 20 else t[:17] + "..."
        if n is None:
            return f"'{shown}' is not a whole number of steps"
        if not self.minimum() <= n <= self.maximum():
            return f"must be between {self.minimum():,} and {self.maximum():,}, got {shown}"
        return ""

    def valueFromText(self, text: str) -> int:
        n = self._whole(text)
        return self.value() if n is None else n


class SecondsBox(_TypedEntry, QDoubleSpinBox):
    """A duration in seconds shown with six significant digits (0.0004 s, 12.3457 s, 1e+06 s) and kept to 1e-9 s:
    a fixed number of decimals showed 0.0004 s as 0.001 s.

    A typed entry it cannot take (not a number, out of its range, or one `check` refuses) is put back to the value
    shown, as a spin box does, and `refused` says why (it was put back without a word)."""

    refused = Signal(str)  # the reason a typed entry was not taken

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setDecimals(9)
        self._filter = _ShortcutFilter(self)
        self.lineEdit().installEventFilter(self._filter)
        self.check = lambda value: ""  # a further reason to refuse a value in range ('' : none)

    def reason(self, text: str) -> str:
        """Why the entry `text` cannot be taken ('' if it can)."""
        t = self._number(text)
        try:
            v = float(t)
        except ValueError:
            return f"{t!r} is not a number of seconds" if t else "a number of seconds is required"
        if not self.minimum() <= v <= self.maximum():  # (nan too)
            return f"must be between {self.minimum():g} and {self.maximum():g} s, got {t}"
        check = getattr(self, "check", None)  # (validate is called while the box is being built)
        return check(v) if check is not None else ""

    def event(self, event) -> bool:  # noqa: D102 - Qt API
        return _leave_window_shortcuts(self, event, super().event)

    def textFromValue(self, value: float) -> str:
        return f"{value:.6g}"

    def _number(self, text: str) -> str:
        return text.removesuffix(self.suffix()).strip()

    def valueFromText(self, text: str) -> float:
        try:
            return float(self._number(text))
        except ValueError:
            return self.value()



END_TIP = "Solve the motion from t = 0 to this time"
STEPS_TIP = "Number of time steps (frames = steps + 1)"


class LabelHolder(QWidget):
    """Holds a readout label outside its panel's layout, at the holder's size: a text change of the label (the status
    line at each batch of a streaming run, the time at each tick of playing, the plots' readout) does not lay the dock
    and the window out again. A label's setText asks its layout to recompute, and that went up through the dock to
    the main window: with the 3D view in it, each lay-out repainted and composited the whole window once more, three
    window updates per batch of a contact run instead of one (each 40-170 ms of a software-rendered window on a
    loaded machine, the GUI thread waiting for it)."""

    def __init__(self, label: QLabel) -> None:
        super().__init__()
        self.label = label
        label.setParent(self)
        self.setSizePolicy(label.sizePolicy())
        self.setMinimumSize(label.minimumSize())
        self.setMaximumSize(label.maximumSize())

    def sizeHint(self):  # noqa: D102 - Qt API
        return self.label.sizeHint()

    def minimumSizeHint(self):  # noqa: D102 - Qt API
        return self.label.minimumSizeHint()

    def resizeEvent(self, ev):  # noqa: N802 - Qt API
        super().resizeEvent(ev)
        self.label.setGeometry(self.rect())

    def event(self, ev):  # noqa: D102 - Qt API
        if ev.type() == QEvent.LayoutRequest:
            # the label's new text (it posts this to its parent): lay it out now, at its width, as the layout did; a
            # selectable label (a text control) otherwise lays its text out in its paint, asks for a repaint from
            # there, and the window was composited twice
            self.label.sizeHint()
            if self.label.wordWrap():
                self.label.heightForWidth(self.label.width())
        return super().event(ev)

    def fit(self) -> None:
        """Lay the panel out again only when the label's text no longer fits its width (a longer time readout)."""
        if self.label.sizeHint().width() > self.width() and self.sizePolicy().horizontalPolicy() != QSizePolicy.Ignored:
            self.updateGeometry()


class MotionPanel(QWidget):
    """Widgets over a Playback: they show its recording and cursor and forward the user's requests (no state here)."""

    def __init__(self, playback: Playback, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("motionPanel")
        self.playback = playback
        self._refusal = ""  # a refused End or Steps said on the status line while its box is red
        rec = playback.recording
        st = self.style()
        self._icons = (st.standardIcon(QStyle.SP_MediaPlay), st.standardIcon(QStyle.SP_MediaPause))

        self.play_button = QToolButton()
        self.play_button.setObjectName("motionPlay")
        self.play_button.setIcon(self._icons[0])
        self.play_button.setToolTip("Play / pause the motion (Space)")
        self.play_button.setAutoRaise(True)
        self.play_button.clicked.connect(playback.toggle)
        self.run_button = QToolButton()
        self.run_button.setObjectName("motionRun")
        self.stop_button = QToolButton()
        self.stop_button.setObjectName("motionStop")
        self.run_button.setText("Run")
        self.run_button.clicked.connect(playback.run)
        self.stop_button.setText("Stop")
        self.stop_button.clicked.connect(playback.stop)
        for b in (self.run_button, self.stop_button):
            b.setAutoRaise(True)
            b.setToolButtonStyle(Qt.ToolButtonTextBesideIcon)
        self.slider = QSlider(Qt.Horizontal)
        self.slider.setObjectName("motionSlider")
        self.slider.setToolTip("Scrub through the solved frames")
        self.slider.setRange(0, 0)
        self.slider.valueChanged.connect(playback.seek)
        self.slider.sliderPressed.connect(playback.pause)  # grabbing the slider stops playing
        self.time_label = QLabel()
        self.time_label.setObjectName("motionTime")
        self.time_label.setMinimumWidth(self.fontMetrics().horizontalAdvance("t = 00.000 s  000/000"))
        self.time_label.setAlignment(Qt.AlignRight | Qt.AlignVCenter)

        self.end_box = SecondsBox()
        self.end_box.setObjectName("motionEnd")
        self.end_box.setRange(validate.MIN_DT, validate.MAX_DURATION)
        self.end_box.setSuffix(" s")
        self.end_box.setKeyboardTracking(False)
        self.end_box.setToolTip(END_TIP)
        self.end_box.check = self._end_check
        self.end_box.refused.connect(self._end_refused)
        self.steps_box = StepsBox()
        self.steps_box.setObjectName("motionSteps")
        self.steps_box.setRange(1, validate.MAX_STEPS)
        self.steps_box.setKeyboardTracking(False)
        self.steps_box.setToolTip(STEPS_TIP)
        self.steps_box.refused.connect(self._steps_refused)
        self._typed = False  # an End or Steps typed since the last Enter (its value may be the one shown)
        for box in (self.end_box, self.steps_box):
            box.lineEdit().textEdited.connect(self._note_typed)
            box.editingFinished.connect(self._entry_finished)
        self.end_box.valueChanged.connect(self._range_edited)
        self.steps_box.valueChanged.connect(self._range_edited)
        self.method_combo = QComboBox()
        self.method_combo.setObjectName("motionMethod")
        self.method_combo.addItems(["implicit", "explicit"])
        self.method_combo.setToolTip("Contact time-stepping: geometrically implicit (the paper's) or explicit (linearised gap)")
        self.method_combo.activated.connect(lambda _i: playback.set_method(self.method_combo.currentText()))
        self.compare_box = QCheckBox("Compare")
        self.compare_box.setObjectName("motionCompare")
        self.compare_box.setToolTip("Also run the other method: its bodies as translucent ghosts in the 3D view, its gap "
                                    "and forces dashed in the plots")
        self.compare_box.toggled.connect(playback.set_compare)
        self.dynamics_button = QToolButton()  # shows the window's Dynamics action (use_actions); hidden without it
        self.dynamics_button.setObjectName("motionDynamics")
        self.dynamics_button.setAutoRaise(True)
        self.dynamics_button.setVisible(False)
        self.kind_label = QLabel()
        self.kind_label.setObjectName("motionKind")
        self.kind_label.setWordWrap(True)
        self.kind_label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.progress_bar = QProgressBar()
        self.progress_bar.setObjectName("motionProgress")
        self.progress_bar.setRange(0, 100)
        self.progress_bar.setTextVisible(True)
        self.progress_bar.setFormat("")
        self.status_label = QLabel()
        self.status_label.setObjectName("motionStatus")
        self.status_label.setWordWrap(True)
        self.status_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.status_label.setAlignment(Qt.AlignLeft | Qt.AlignTop)
        self.status_label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
        # room for three lines: a driver message wraps, and the dock should not jump in height as messages change
        self.status_label.setFixedHeight(3 * self.fontMetrics().lineSpacing() + 2)

        top = QHBoxLayout()
        top.setSpacing(6)
        top.addWidget(self.run_button)
        top.addWidget(self.stop_button)
        top.addWidget(self.play_button)
        top.addWidget(self.slider, 1)
        self._time_holder = LabelHolder(self.time_label)
        top.addWidget(self._time_holder)
        bottom = QHBoxLayout()
        bottom.setSpacing(6)
        bottom.addWidget(QLabel("End"))
        bottom.addWidget(self.end_box)
        bottom.addWidget(QLabel("Steps"))
        bottom.addWidget(self.steps_box)
        self.method_label = QLabel("Method")
        bottom.addWidget(self.method_label)
        bottom.addWidget(self.method_combo)
        bottom.addWidget(self.compare_box)
        bottom.addStretch(1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 4, 6, 4)
        lay.setSpacing(2)
        lay.addLayout(top)
        kind_row = QHBoxLayout()
        kind_row.setSpacing(6)
        kind_row.addWidget(self.kind_label, 1)
        kind_row.addWidget(self.dynamics_button)
        lay.addLayout(kind_row)
        lay.addLayout(bottom)
        lay.addWidget(self.progress_bar)
        lay.addWidget(LabelHolder(self.status_label))
        self.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Maximum)

        rec.cleared.connect(self._refresh_slider)
        rec.grew.connect(self._refresh_slider)
        rec.cursorChanged.connect(self._show_cursor)
        playback.statusChanged.connect(self._show_status)
        playback.playingChanged.connect(self._show_playing)
        playback.rangeChanged.connect(self._show_range)
        playback.kindChanged.connect(self._show_kind)
        playback.optionsChanged.connect(self._show_options)
        playback.progressChanged.connect(self._show_progress)
        playback.runningChanged.connect(self._show_running)
        self._show_kind(playback.kind, playback.kind_text)
        self._show_progress(*playback.progress)
        self._show_running(playback.is_running())
        self._show_status(playback.status, playback.status_tip, playback.status_kind)
        self._refresh_slider()

    # ---- model -> widgets (signals blocked so nothing echoes back) ---------------------------------------------
    def _refresh_slider(self, *_args) -> None:
        rec = self.playback.recording
        self.slider.blockSignals(True)
        self.slider.setRange(0, max(rec.count - 1, 0))
        self.slider.setValue(rec.cursor)
        self.slider.blockSignals(False)
        self.slider.setEnabled(rec.count > 1)
        self._show_cursor(rec.cursor)

    def _show_cursor(self, k: int) -> None:
        rec = self.playback.recording
        self.slider.blockSignals(True)
        self.slider.setValue(k)
        self.slider.blockSignals(False)
        t = rec.time_at(k)
        total = len(rec.requested)
        self.time_label.setText(f"t = {time_text(t, rec.step)} s  {k}/{max(total - 1, 0)}" if t is not None else "t = —")
        self._time_holder.fit()

    def _show_status(self, text: str, tip: str, kind: str = "busy") -> None:
        if getattr(self, "_refusal", ""):
            # a refused End or Steps stays said while its box is red: a run's progress ('solving… 1 / 101 frames')
            # wrote over it at once, and End 'nan' typed during a run looked ignored; the run's status is the tooltip
            self.status_label.setToolTip(f"{self._refusal}\n{tip or text}")
            return
        self.status_label.setText(text)
        self.status_label.setStyleSheet(f"color: {STATUS_COLOURS.get(kind, '')}")
        self.status_label.setToolTip(tip or text)

    def _show_playing(self, playing: bool) -> None:
        self.play_button.setIcon(self._icons[1 if playing else 0])

    def _show_kind(self, kind: str, text: str) -> None:
        self.kind_label.setText(f"Run: {text}")
        contact = kind == "contact"
        for w in (self.method_label, self.method_combo, self.compare_box):
            w.setVisible(contact)
        self.steps_box.setEnabled(not contact)  # a contact run's steps follow from its end time and the document's dt
        self._show_options()

    def _show_options(self) -> None:
        pb = self.playback
        if pb.kind == "contact":
            sim = pb.document.mechanism.simulation
            dt = float(sim.dt) if sim else 0.01
            try:  # (the steps the run will take: whole steps covering the end time, core.validate.step_count)
                steps = validate.step_count(pb.contact_end(), dt)
                self.steps_box.setPrefix("")
                self.steps_box.setToolTip(STEPS_TIP)
            except LinkwrightError as exc:
                # more than one run may take (its Run is refused with the reason): the box shows its limit (the
                # count itself, 1e12 for 1e6 s in steps of 1e-6 s, overflowed the box: OverflowError in this slot),
                # as "> 1000000", not as the count (a document's duration and dt from Properties or a file)
                steps = min(int(round(pb.contact_end() / dt)), self.steps_box.maximum())
                self.steps_box.setPrefix("> ")
                self.steps_box.setToolTip(f"End: {exc.message}")
            self._show_range(pb.contact_end(), max(steps, 1))
            self.method_combo.setCurrentText(pb.document_method())
            self.compare_box.blockSignals(True)
            self.compare_box.setChecked(pb.compare)
            self.compare_box.blockSignals(False)
        else:
            self.steps_box.setPrefix("")
            self.steps_box.setToolTip(STEPS_TIP)
            self._show_range(pb.t_end, pb.steps)

    def _show_progress(self, fraction: float, text: str) -> None:
        value = int(100 * min(max(fraction, 0.0), 1.0))
        if value != self.progress_bar.value():
            # (QProgressBar.setValue repaints at once, and the window was composited for it alone, then again for the
            # batch's other readouts: with its updates held, the bar is drawn with them, in one window update)
            self.progress_bar.setUpdatesEnabled(False)
            self.progress_bar.setValue(value)
            self.progress_bar.setUpdatesEnabled(True)
        if text != self.progress_bar.format():
            self.progress_bar.setFormat(text)

    def use_actions(self, run_action, stop_action, dynamics_action=None) -> None:
        """Show the window's Run and Stop actions (same shortcuts and state as the toolbar's) on the buttons, and its
        Dynamics switch beside the run's kind."""
        if dynamics_action is not None:
            self.dynamics_button.setDefaultAction(dynamics_action)
            self.dynamics_button.setVisible(True)
        for b, a in ((self.run_button, run_action), (self.stop_button, stop_action)):
            try:
                b.clicked.disconnect()
            except (RuntimeError, TypeError):
                pass
            b.setDefaultAction(a)
        self._show_running(self.playback.is_running())

    def _show_running(self, running: bool) -> None:
        (self.stop_button.defaultAction() or self.stop_button).setEnabled(running)

    def _show_range(self, t_end: float, steps: int) -> None:
        self._range = (float(t_end), int(steps))  # (the exact values: the boxes show them rounded)
        self.end_box.setStyleSheet("")  # (a refused End's red border: until a value is shown again)
        self.end_box.setToolTip(END_TIP)
        self.steps_box.setStyleSheet("")  # (and a refused Steps')
        if getattr(self, "_refusal", ""):
            self._refusal = ""
            self._show_status(self.playback.status, self.playback.status_tip, self.playback.status_kind)
        for box, v in ((self.end_box, t_end), (self.steps_box, steps)):
            box.blockSignals(True)
            box.setValue(v)
            box.blockSignals(False)

    def _end_check(self, t_end: float) -> str:
        """Why the run cannot go to `t_end` (Playback.end_refusal: the same check as every other End), or ''."""
        return self.playback.end_refusal(t_end)

    def _end_refused(self, reason: str) -> None:
        self._box_refused(self.end_box, "End", ERROR_STYLE, reason)

    def _steps_refused(self, reason: str) -> None:
        self._box_refused(self.steps_box, "Steps", ERROR_STYLE.replace("QDoubleSpinBox", "QSpinBox"), reason)

    def _box_refused(self, box, label: str, style: str, reason: str) -> None:
        """A typed End or Steps not taken: say why on the status line, in red, and on the box (the value shown is
        kept)."""
        self._typed = False
        text = self._refusal = f"{label}: {reason}"
        box.setStyleSheet(style)
        box.setToolTip(text)
        self.status_label.setText(text)
        self.status_label.setStyleSheet(f"color: {STATUS_COLOURS['error']}")
        self.status_label.setToolTip(f"{text}\nThe {label} box keeps {box.text()}.")

    def _note_typed(self, *_args) -> None:
        self._typed = True

    def _entry_finished(self) -> None:
        """Enter or leaving End or Steps: an entry typed and taken that is the value shown already (no change, so no
        edit follows) still ends the refusal before it (its red box and status line)."""
        typed, self._typed = self._typed, False
        if typed and self._refusal:
            self._show_options()

    # ---- widgets -> playback -------------------------------------------------------------------------------------
    def _range_edited(self, *_args) -> None:
        # the box edited gives its value, the other keeps the exact one shown (not its rounded display)
        t_end, steps = getattr(self, "_range", (self.end_box.value(), self.steps_box.value()))
        if self.sender() is not self.steps_box:
            t_end = self.end_box.value()
        if self.sender() is not self.end_box:
            steps = self.steps_box.value()
        # (an End not typed, from the arrows, Page Up, the wheel or setValue, skips the box's validation of typed
        # text: the Playback refuses it with the same reason, and the boxes show the range kept)
        why = self.playback.set_range(t_end, steps)
        if why:
            self._show_options()
            if self.sender() is self.steps_box:
                self._steps_refused(why)
            else:
                self._end_refused(why)

