"""Document files: new/open/save/save-as/revert, recent files, examples, autosave and crash recovery."""

from __future__ import annotations

import json
import os
import re
import time
import unicodedata
import uuid
from pathlib import Path

from PySide6.QtCore import QObject, QSettings, QStandardPaths, QTimer, Signal
from PySide6.QtWidgets import QAbstractItemView, QApplication, QFileDialog, QMessageBox, QWidget

from core import io
from core.errors import LinkwrightError
from core.model import Body, ContactSettings, Mechanism, SimulationSettings
from core.resources import resource_dir

from .layout import MAX_ITER, auto_layout, drawing_work

__all__ = [
    "FileController", "EXAMPLES_DIR", "examples", "recovery_dir", "prepare_loaded", "contact_scene", "MAX_RECENT",
    "AUTOSAVE_MS", "with_suffix", "ask_save_path", "suggested_stem", "is_example", "disk_identity", "MAX_STEM_CHARS",
    "EXAMPLE_NOTE",
]

EXAMPLES_DIR = resource_dir() / "examples"
MAX_RECENT = 10
AUTOSAVE_MS = 60_000
FILE_FILTER = "Linkwright mechanisms (*.json);;All files (*)"
# What the status bar adds when a shipped example is opened (File ▸ Examples, or its file opened any other way).
EXAMPLE_NOTE = " as an untitled copy of the shipped example: Save asks for a file name"


# The longest file name a save dialog suggests, before its suffix: in characters, and in UTF-8 bytes (file systems
# allow 255 bytes a name; a 300-character title made a default name that could not be written).
MAX_STEM_CHARS = 100
MAX_STEM_BYTES = 200


def suggested_stem(mech: Mechanism, fallback: str = "mechanism") -> str:
    """The file name a save dialog suggests for an unsaved document: its name, without the separators that would put
    it in a folder ("Crank/rocker" suggested a file in a folder "Crank"), its control characters (a newline, a NUL:
    the name is any text, and a NUL made the save fail) and line breaks made spaces, runs of spaces made one, no
    leading dot (a hidden file) nor trailing dot or space, and at most MAX_STEM_CHARS characters (MAX_STEM_BYTES
    in UTF-8); `fallback` when nothing is left."""
    text = "".join(" " if unicodedata.category(c) in ("Cc", "Zl", "Zp") else c for c in mech.name)
    text = " ".join(text.replace("/", "-").replace("\\", "-").split())
    text = text[:MAX_STEM_CHARS]
    while len(text.encode("utf-8", "surrogatepass")) > MAX_STEM_BYTES:
        text = text[:-1]
    return text.lstrip(". ").rstrip(". ") or fallback


# a dotted end of a file name that names a file type (".png", ".mp4"): a letter, then letters or digits
_FILE_TYPE = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,7}")


def with_suffix(path, suffix: str, parent: QWidget | None = None, only: tuple[str, ...] | None = None) -> Path | None:
    """A name typed in a save dialog, given `suffix` when it has none: a dotted end that is not a file type's
    ('run v1.2', 'frame.001') is part of the name, which then gets the suffix. With `only`, the name's suffix is one of those
    (case aside) or none, and any other dotted part belongs to the name: 'design v1.2' is saved as
    'design v1.2.json', not as 'design v1.2', which the Open dialog's filter hides. The dialog asked about replacing
    the name as typed, not the one written: when that file exists the user is asked here; None if they keep it."""
    p = Path(path)
    if only is None:
        if _FILE_TYPE.fullmatch(p.suffix):  # ('run v1.2': '.2' is part of the name, not a file type)
            return p
    elif p.name.lower().endswith(tuple(s.lower() for s in only)):
        return p
    p = p.with_name(p.name + suffix)
    if p.exists():
        answer = QMessageBox.question(parent, "Replace file?", f"{p.name} already exists. Replace it?",
                                      QMessageBox.Yes | QMessageBox.No, QMessageBox.No)
        if answer != QMessageBox.Yes:
            return None
    return p


def ask_save_path(parent: QWidget | None, title: str, suggested: str, filters: str) -> Path | None:
    """The save dialog of an export: the name the user gave, with the file type of the filter they chose when it has
    none ('run v1.2' with "MP4 video (*.mp4)" chosen: 'run v1.2.mp4'; with_suffix); None if they cancelled.
    `filters` as Qt's ("PNG image (*.png);;SVG (*.svg)"); the first filter's type when none is reported."""
    path, chosen = QFileDialog.getSaveFileName(parent, title, suggested, filters)
    if not path:
        return None
    picked = re.search(r"\(\*(\.\w+)\)", chosen or "") or re.search(r"\(\*(\.\w+)\)", filters)
    return with_suffix(path, picked.group(1) if picked else "", parent)


def is_example(path) -> bool:
    """Whether `path` is one of the installed examples (in EXAMPLES_DIR): it opens as an untitled copy, however it
    is opened, so that Save never writes into the shipped file."""
    try:
        return Path(path).resolve().parent == EXAMPLES_DIR.resolve()
    except (OSError, ValueError, RuntimeError):  # (RuntimeError: a symlink loop, which the loader then names)
        return False


def disk_identity(path) -> tuple[int, int, int] | None:
    """What tells a file's version on disk from another: (inode, mtime in ns, size); None when there is no file.
    An editor's atomic save gives the file a new inode, another write a new mtime or size."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def examples() -> list[Path]:
    """The shipped example files, sorted by name."""
    return sorted(EXAMPLES_DIR.glob("*.json"))


def _in_item_view(w: QWidget) -> bool:
    """Whether `w` is inside a table or list view (a cell's editor)."""
    parent = w.parentWidget()
    while parent is not None:
        if isinstance(parent, QAbstractItemView):
            return True
        parent = parent.parentWidget()
    return False


def _recovery_detail(mech, orig: str | None, stamp: float) -> str:
    """What an autosave holds and how it stands to its file, for the recovery question: 'its 4 bodies, 4 joints and
    1 driver; its file fourbar.json was saved at 14:02, after this autosave' (two autosaves of one file told apart
    by more than their times, and an autosave older than the saved file said to be so)."""
    def count(n: int, one: str, many: str) -> str:
        return f"{n} {one if n == 1 else many}"

    parts = [count(len(mech.bodies), "body", "bodies"), count(len(mech.joints), "joint", "joints")]
    if mech.drivers:
        parts.append(count(len(mech.drivers), "driver", "drivers"))
    text = "its " + (", ".join(parts[:-1]) + " and " + parts[-1])
    if orig:
        try:
            saved = Path(orig).stat().st_mtime
        except OSError:
            return text + f"; its file {orig} is no longer there"
        at = time.strftime("%Y-%m-%d %H:%M", time.localtime(saved))
        text += f"; its file {Path(orig).name} was saved at {at}, {'after' if saved > stamp else 'before'} this autosave"
    return text


def recovery_dir() -> Path:
    """Where autosaves of unsaved documents go (the platform's app data location)."""
    base = QStandardPaths.writableLocation(QStandardPaths.AppDataLocation) or str(Path.home() / ".linkwright")
    return Path(base) / "recovery"


# What the stress iterations of a layout made while a file opens may cost, in pair-iterations (n^2 per iteration):
# about 0.2 s; up to 258 bodies that is the full layout (MAX_ITER), a 1000-body file gets 20 iterations (0.3-0.5 s
# with the separation, against 1-2 s for the full layout; opening such a file costs 3-4 s of CPU besides).
OPEN_LAYOUT_WORK = 2.0e7


def open_layout_iterations(mech: Mechanism) -> int:
    """The stress iterations prepare_loaded gives `mech`'s layout (fewer than a full layout's for a large graph: one
    of more bodies than 258 joined together, or many parts that together cost as much; a scene of many bodies joined
    to nothing is placed in a grid)."""
    return max(10, min(MAX_ITER, int(OPEN_LAYOUT_WORK / max(drawing_work(mech), 1))))


def prepare_loaded(mech: Mechanism) -> Mechanism:
    """Give bodies without a stored graph position an automatic layout (before the document takes the model); a
    large graph's is a quicker, coarser one (open_layout_iterations), which Ctrl+L refines."""
    missing = [b.name for b in mech.bodies if b.name not in mech.layout]
    if missing:
        pos = auto_layout(mech, max_iter=open_layout_iterations(mech))
        if len(missing) == len(mech.bodies):
            mech.layout.update(pos)
        else:
            # Keep the user's positions; place the others near the automatic ones, shifted clear of the stored part.
            xs = [p[0] for p in mech.layout.values()]
            dx = (max(xs) + 200.0) if xs else 0.0
            for n in missing:
                mech.layout[n] = (pos[n][0] + dx, pos[n][1])
    return mech


def _quick_layout(mech: Mechanism) -> bool:
    """Whether prepare_loaded will give `mech` a coarser layout than Ctrl+L does."""
    return any(b.name not in mech.layout for b in mech.bodies) and open_layout_iterations(mech) < MAX_ITER


# e_r of a new contact scene's friction ellipsoid, in metres: the torsional friction moment is at most mu p_n e_r, as
# a contact patch's. A disc-shaped patch of radius a pressed evenly gives (2/3) a, so 0.01 m is a patch of 1.5 cm
# radius: small beside the faces of the shapes Add Shaped Body gives (0.2 m across; a box flat on the floor would
# have up to 0.077 m), so it never overstates the torsion, and it is the value of the pile, disc and polytope
# examples (the box examples use 0.02). With e_r = 0 (the file format's default) a box spun on the floor kept
# turning for ever once it had stopped sliding (user test s52, F11); with 0.01 a 1 kg box 0.2 m across spun at
# 3 rad/s stops in about 0.4 s (mu = 0.5).
NEW_SCENE_TORSION = 0.01


def contact_scene() -> Mechanism:
    """A new contact scene: spatial, z up, gravity -9.81 m/s² along z, a fixed ground halfspace z <= 0, and the
    default contact and time-stepping settings written out (so they show, and are saved, as the file's values), but
    for torsional friction: e_r = NEW_SCENE_TORSION, not the format's 0."""
    ground = Body("ground", ground=True, shape={"type": "halfspace", "normal": [0.0, 0.0, 1.0], "offset": 0.0})
    contact = ContactSettings(ellipsoid=(1.0, 1.0, NEW_SCENE_TORSION))
    return Mechanism(name="Contact scene", space="spatial", gravity=(0.0, 0.0, -9.81), bodies=[ground],
                     layout={"ground": (0.0, 0.0)}, contact=contact, simulation=SimulationSettings())


# The recovery files of this process's windows (by name): live, never another instance's orphans.
_IN_USE: set[str] = set()


def _autosave_pid(f: Path) -> int | None:
    """The process id in an autosave's name, autosave-<pid>-<id>.json (or autosave-<pid>.json, as written before)."""
    try:
        return int(f.stem.split("-")[1])
    except (IndexError, ValueError):
        return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class FileController(QObject):
    """File operations of one window over its Document; dialogs go through QMessageBox/QFileDialog statics."""

    message = Signal(str)
    recentChanged = Signal()

    def __init__(self, window: QWidget, document, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.window, self.document = window, document
        self.autosave_timer = QTimer(self)
        self.autosave_timer.setInterval(AUTOSAVE_MS)
        self.autosave_timer.timeout.connect(self.autosave)
        self.autosave_timer.start()
        # the process id says whether the instance that wrote it still runs; the random part tells this one's file
        # from one a crashed earlier process with the same id left (a container's app often has the same pid at
        # every start: that autosave was taken for this window's own, never offered, and overwritten)
        self.recovery_file = recovery_dir() / f"autosave-{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
        _IN_USE.add(self.recovery_file.name)
        document.modifiedChanged.connect(self._modified_changed)
        # The version of the document's file on disk as last read or written here (disk_identity), and the version
        # last told about (check_disk): Save asks before replacing a file another program changed or deleted.
        self._disk: tuple[Path | None, tuple | None] = (None, None)
        self._told: tuple | None = None
        document.pathChanged.connect(self._remember_disk)
        self._remember_disk()

    def _remember_disk(self) -> None:
        """The document's file is as on disk now (it was opened, saved or given to this window)."""
        path = self.document.path
        self._set_disk(disk_identity(path) if path is not None else None)

    def _set_disk(self, identity: tuple | None) -> None:
        """The document's file is the version `identity` (disk_identity), as read or written here."""
        self._disk = (self.document.path, identity)
        self._told = identity

    def disk_change(self) -> str | None:
        """'changed' or 'deleted' when the document's file on disk is no longer the version last read or written
        here (another program wrote, replaced, moved or deleted it); None when it is the same, or the document has
        no file."""
        return self._disk_change()[0]

    def _disk_change(self) -> tuple[str | None, tuple | None]:
        """disk_change, and the file's disk_identity it was told by (one look at the file)."""
        path = self.document.path
        if path is None:
            return None, None
        known_path, known = self._disk
        now = disk_identity(path)
        if known_path != path:  # (the path was set without this controller: take the file as it is now)
            self._disk, self._told = (path, now), now
            return None, now
        if now == known:
            return None, now
        return ("deleted" if now is None else "changed"), now

    def check_disk(self) -> str | None:
        """When the window is activated: say on the status bar, once for each new version, that the document's file
        was changed or deleted by another program since it was opened or saved here (what Save and Revert then do);
        the kind of change, or None."""
        change, now = self._disk_change()
        if change is None:
            return None
        if now == self._told:
            return change
        self._told = now
        name = self.document.path.name
        self.message.emit(f"{name} was changed on disk by another program: Revert loads that version, Save asks "
                          "before replacing it" if change == "changed" else
                          f"{name} was deleted or moved on disk: Save asks before writing it there again")
        return change

    # ---- dialogs (one place, so tests can replace them) ----------------------------------------------------------
    def _error(self, title: str, text: str) -> None:
        QMessageBox.critical(self.window, title, text)

    # ---- queries --------------------------------------------------------------------------------------------------
    def finish_editing(self) -> bool:
        """Take the edit in progress as Enter or leaving its field does (a Properties field, a Motion dock box, a table
        cell, the graph's rename box) before the document is saved, closed or replaced: typed but unconfirmed text was left out of the
        file that Save then marked saved, and Quit closed without asking. False, with the reason on the status bar,
        when the entry is refused (it stays in its field, in red): nothing is saved or closed over it."""
        graph = getattr(self.window, "graph", None)
        if graph is not None and graph.rename_editor() is not None:
            why = graph.finish_rename()
            if why:
                self.message.emit(f"The new name was refused: {why} (Esc leaves it)")
                return False
        w = QApplication.focusWidget()
        finish = getattr(w, "finish", None)  # (a Properties field: parse and commit now)
        box = w.parent() if w is not None else None
        if not callable(finish) and callable(getattr(box, "finish", None)):
            finish = box.finish  # (a Motion dock box's line edit: the box takes its text)
        if callable(finish):
            why = finish()
            if why:
                self.message.emit(f"The value typed was refused: {why}")
                return False
        elif w is not None and _in_item_view(w):
            w.clearFocus()  # (a table cell's editor: its view commits it on losing the focus)
        return True

    def maybe_save(self) -> bool:
        """Ask to save unsaved changes; True when it is fine to discard the current document now."""
        if not self.finish_editing():
            return False
        if not self.document.modified:
            return True
        name = self.document.path.name if self.document.path else "Untitled"
        answer = QMessageBox.question(
            self.window,
            "Save changes?",
            f"“{name}” has unsaved changes. Save them before closing it?",
            QMessageBox.Save | QMessageBox.Discard | QMessageBox.Cancel,
            QMessageBox.Save,
        )
        if answer == QMessageBox.Save:
            return self.save()
        return answer == QMessageBox.Discard

    # ---- operations -----------------------------------------------------------------------------------------------
    def new(self, space: str = "planar") -> bool:
        """Start an empty mechanism: planar (the x-y plane, 3 freedoms per body) or spatial (6 per body, every joint
        type)."""
        if not self.maybe_save():
            return False
        self.document.replace(Mechanism(name="Untitled", space=space), None)
        self.message.emit("New spatial mechanism: every joint type, 6 freedoms per body" if space == "spatial"
                          else "New planar mechanism (x-y plane)")
        return True

    def new_spatial(self) -> bool:
        """Start an empty spatial mechanism (File ▸ New ▸ Spatial Mechanism)."""
        return self.new("spatial")

    def new_contact_scene(self) -> bool:
        """Start a contact scene: a ground plane (z up) to which shaped bodies are added."""
        if not self.maybe_save():
            return False
        self.document.replace(contact_scene(), None)
        self.message.emit("New contact scene: add bodies with Edit ▸ Add Shaped Body")
        return True

    def open(self) -> bool:
        """Ask for a file and open it (the file is read before "Save changes?" is asked: a file that cannot be
        opened costs nothing). The dialog starts in the document's folder, else the folder last opened from or
        saved to, else the home folder; never in the shipped examples (File ▸ Examples opens those)."""
        if not self.finish_editing():
            return False
        path, _ = QFileDialog.getOpenFileName(self.window, "Open mechanism", self.start_folder(), FILE_FILTER)
        return bool(path) and self.open_path(path)

    def start_folder(self) -> str:
        """Where the Open dialog starts: the document's folder, the last folder used, or home."""
        for folder in (self.document.path.parent if self.document.path else None, QSettings().value("lastFolder")):
            if (isinstance(folder, (str, Path)) and folder and Path(folder).is_dir()
                    and not is_example(Path(folder) / "x")):
                return str(folder)
        return str(Path.home())

    def _remember_folder(self, p: Path) -> None:
        try:
            QSettings().setValue("lastFolder", str(p.resolve().parent))
        except (OSError, ValueError, RuntimeError):
            pass

    def _load(self, p: Path, what: str = "Cannot open file") -> tuple[Mechanism, tuple | None] | None:
        """The mechanism in `p` and the version of the file it was read from (disk_identity); None, with the
        loader's located message in a dialog and on the status bar, when it cannot be opened."""
        identity = disk_identity(p)
        try:
            mech = io.load(p)
        except LinkwrightError as exc:
            where = f"at {exc.location}: " if exc.location else ""
            self._error(what, f"{p.name} could not be opened.\n\n{where}{exc.message}")
            self.message.emit(f"Cannot open {p.name}: {exc}")
            return None
        return mech, identity

    def open_path(self, path, ask: bool = True) -> bool:
        """Open `path`; a bad file shows the loader's located message and leaves the current document untouched. The
        file is read first, then "Save changes?" is asked (`ask`): a file that does not open never asks to give up
        the document's changes. A file in the installed examples folder opens as an untitled copy (open_example)."""
        p = Path(path)
        if is_example(p):
            return self.open_example(p, ask=ask)
        loaded = self._load(p)
        if loaded is None:
            return False
        if ask:
            if not self.maybe_save():
                return False
            if disk_identity(p) != loaded[1]:  # (the answer Save wrote that file: read what it holds now)
                loaded = self._load(p)
                if loaded is None:
                    return False
        return self._show_loaded(p, *loaded)

    def _show_loaded(self, p: Path, mech: Mechanism, identity, example: bool = False) -> bool:
        """The loaded `mech` becomes the document: of file `p`, read as version `identity`; or, an `example`, an
        untitled copy of it."""
        quick = _quick_layout(mech)
        mech = prepare_loaded(mech)
        self.document.replace(mech, None if example else p.resolve())
        if not example:
            self._set_disk(identity)  # (the version read, not the one on disk now: a write since is a change)
            self.add_recent(p)
            self._remember_folder(p)
        self.message.emit(f"Opened {p.name}" + (EXAMPLE_NOTE if example else "") + (
            "; its graph, which the file does not lay out, was laid out quickly: Ctrl+L lays it out in full"
            if quick else ""))
        return True

    def open_example(self, path, ask: bool = True) -> bool:
        """Open a shipped example as a new, unsaved document (so Save does not overwrite the example): from File ▸
        Examples, and a file of the examples folder opened any other way."""
        p = Path(path)
        loaded = self._load(p, "Cannot open example")
        if loaded is None:
            return False
        if ask and not self.maybe_save():
            return False
        return self._show_loaded(p, *loaded, example=True)

    def save(self) -> bool:
        """Save to the document's file (Save As when it has none). When that file was changed or deleted on disk
        since it was opened or saved here, ask first: Yes replaces it (or writes it again), No saves under another
        name (Save As), Cancel saves nothing."""
        if not self.finish_editing():
            return False
        if self.document.path is None:
            return self.save_as()
        change = self.disk_change()
        if change is not None:
            name = self.document.path.name
            what = (f"“{name}” was changed on disk by another program since it was opened or saved here.\n\n"
                    f"Replace it with this document? " if change == "changed" else
                    f"“{name}” was deleted or moved since it was opened or saved here.\n\nSave it there again? ")
            answer = QMessageBox.question(
                self.window, "File changed on disk", what + "Yes saves over it; No saves this document under another "
                "name (Save As); Cancel saves nothing.",
                QMessageBox.Yes | QMessageBox.No | QMessageBox.Cancel, QMessageBox.Cancel)
            if answer == QMessageBox.No:
                return self.save_as()
            if answer != QMessageBox.Yes:
                return False
        return self.write(self.document.path)

    def save_as(self) -> bool:
        """Ask for a file name and save there (.json added unless the name ends with it)."""
        if not self.finish_editing():
            return False
        stem = suggested_stem(self.document.mechanism)
        start = str(self.document.path) if self.document.path else str(Path.home() / f"{stem}.json")
        path, _ = QFileDialog.getSaveFileName(self.window, "Save mechanism as", start, FILE_FILTER)
        p = with_suffix(path, ".json", self.window, only=(".json",)) if path else None
        return p is not None and self.write(p)

    def write(self, path) -> bool:
        """Write the document atomically to `path` and mark it saved; any failure (a ValueError of a name the
        system refuses too) is a dialog, and the document stays as it was."""
        p = Path(path)
        try:
            io.save(self.document.mechanism, p)
            resolved = p.resolve()
        except (OSError, LinkwrightError, ValueError) as exc:
            self._error("Cannot save file", f"{p} could not be written:\n\n{exc}")
            return False
        self.document.mark_saved(resolved)
        self._remember_disk()
        self.add_recent(p)
        self._remember_folder(p)
        self.discard_recovery()
        self.message.emit(f"Saved {p.name}")
        try:  # the file as written is what Open will read: say now if it would be refused there
            io.loads(io.dumps(self.document.mechanism))
        except LinkwrightError as exc:  # (an edit the checks missed: the work is on disk, and the reason shown)
            QMessageBox.warning(self.window, "Saved, but it will not open",
                                f"{p.name} was saved, but opening it will be refused:\n\n{exc}\n\n"
                                "Fix this in the document and save again.")
        return True

    def revert(self) -> bool:
        """Reload the file from disk, dropping unsaved changes (after confirmation). The file is read first: when it
        is no longer there, or does not open, that is said and nothing is asked."""
        path = self.document.path
        if path is None:
            self.message.emit("Nothing to revert to: the document was never saved")
            return False
        if not path.is_file():
            self._error("Cannot revert", f"{path.name} is no longer on disk ({path}): there is no file to revert to."
                        "\n\nThe document is unchanged; Save writes it there again.")
            self.message.emit(f"Cannot revert: {path.name} is no longer on disk")
            return False
        loaded = self._load(path, "Cannot revert")
        if loaded is None:
            return False
        if self.document.modified:
            answer = QMessageBox.question(
                self.window, "Revert?", f"Discard all changes since {path.name} was last saved?", QMessageBox.Yes | QMessageBox.No, QMessageBox.No
            )
            if answer != QMessageBox.Yes:
                return False
        return self._show_loaded(path, *loaded)

    # ---- recent files ---------------------------------------------------------------------------------------------
    def recent(self) -> list[str]:
        """Recently opened or saved files, newest first (a file no longer there stays listed until it is picked and
        its removal accepted, or the list is cleared: a folder of a drive not mounted comes back)."""
        value = QSettings().value("recentFiles", [])
        if isinstance(value, str):
            value = [value]
        return [v for v in (value or []) if isinstance(v, str) and v]

    def add_recent(self, path) -> None:
        """Put `path` at the top of the recent files."""
        p = str(Path(path).resolve())
        items = [p] + [v for v in self.recent() if v != p]
        QSettings().setValue("recentFiles", items[:MAX_RECENT])
        self.recentChanged.emit()

    def remove_recent(self, path: str) -> None:
        """Take `path` off the recent files."""
        QSettings().setValue("recentFiles", [v for v in self.recent() if v != path])
        self.recentChanged.emit()

    def open_recent(self, path: str) -> bool:
        """Open a recent file (File ▸ Open Recent); one no longer on disk is offered for removal from the list,
        before anything else is asked."""
        p = Path(path)
        if not p.is_file():
            answer = QMessageBox.question(
                self.window, "File not found", f"{p.name} is no longer at {p.parent} (moved, renamed or deleted)."
                "\n\nRemove it from Open Recent?", QMessageBox.Yes | QMessageBox.No, QMessageBox.Yes)
            if answer == QMessageBox.Yes:
                self.remove_recent(path)
                self.message.emit(f"{p.name} was removed from Open Recent")
            return False
        return self.open_path(p)

    def clear_recent(self) -> None:
        """Forget the recent files."""
        QSettings().setValue("recentFiles", [])
        self.recentChanged.emit()

    # ---- autosave and recovery ------------------------------------------------------------------------------------
    def autosave(self) -> bool:
        """Write the unsaved document to the recovery file (nothing when it is saved)."""
        if not self.document.modified:
            return False
        try:
            self.recovery_file.parent.mkdir(parents=True, exist_ok=True)
            data = {
                "path": str(self.document.path) if self.document.path else None,
                "time": time.time(),
                "document": io.to_dict(self.document.mechanism),
            }
            text = json.dumps(data, allow_nan=False)
            io.write_atomic(self.recovery_file, lambda fh: fh.write(text), "autosave")
        except (OSError, LinkwrightError, ValueError) as exc:
            self.message.emit(f"Autosave failed: {exc}")
            return False
        return True

    def discard_recovery(self) -> None:
        """Remove this window's recovery file (after a save or a clean exit)."""
        try:
            self.recovery_file.unlink()
        except FileNotFoundError:
            pass
        except OSError:
            pass

    def _modified_changed(self, modified: bool) -> None:
        if not modified:
            self.discard_recovery()

    def orphaned_recoveries(self) -> list[Path]:
        """Recovery files left by instances that did not exit cleanly: those of a process no longer running, or named
        with this process's id but not one of its windows' (a crashed earlier process had the same id). A running
        instance's file is none of them."""
        out = []
        for f in sorted(recovery_dir().glob("autosave-*.json")):
            pid = _autosave_pid(f)
            if pid is None or f.name in _IN_USE:
                continue
            if pid == os.getpid() or not _pid_alive(pid):
                out.append(f)
        return out

    def _read_recovery(self, f: Path):
        """(mechanism, original path or None, time text, time) of the autosave `f`; None, with a message and `f`
        deleted, when it cannot be read (it could never be recovered)."""
        try:
            data = json.loads(io.read_limited(f, what="a recovery file").decode("utf-8"))
            mech = prepare_loaded(io.from_dict(data["document"]))
            # (read here too: a "time" or "path" of the wrong type ended the start with a traceback)
            orig = data.get("path")
            if orig is not None and not isinstance(orig, str):
                raise TypeError(f"path: expected a string, got {type(orig).__name__}")
            stamp = data.get("time", f.stat().st_mtime)
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))
        except FileNotFoundError:
            return None  # (taken by another instance starting at the same time)
        except (OSError, ValueError, KeyError, TypeError, OverflowError, LinkwrightError) as exc:
            self.message.emit(f"An unreadable recovery file was ignored: {exc}")
            f.unlink(missing_ok=True)
            return None
        return mech, orig, when, float(stamp)

    def offer_recovery(self) -> bool:
        """After a crash: offer each orphaned autosave (left by an instance that did not exit normally; a running
        instance's own is not one), newest first, until one is recovered into this window; True if one was.

        Each question has three answers: Yes recovers it (its file becomes this window's autosave), Discard deletes
        it, Cancel (or closing the question) keeps it. An autosave is deleted only when recovered or discarded: one
        kept, or not asked about because another was recovered first, is offered again at the next start."""
        def mtime(f: Path) -> float:
            try:
                return f.stat().st_mtime
            except OSError:
                return 0.0

        files = sorted(self.orphaned_recoveries(), key=mtime, reverse=True)
        kept = 0
        for k, f in enumerate(files):
            entry = self._read_recovery(f)
            if entry is None:
                continue
            mech, orig, when, stamp = entry
            # (an untitled document may have an empty name: the question read 'An autosave of “” from ...')
            shown = Path(orig).name if orig else mech.name
            what = f"“{shown}”" if shown else "an untitled document"
            which = f" (autosave {k + 1} of {len(files)})" if len(files) > 1 else ""
            answer = QMessageBox.question(
                self.window,
                "Recover unsaved document?",
                f"Linkwright did not close properly. An autosave of {what} from {when} exists{which}: "
                f"{_recovery_detail(mech, orig, stamp)}.\n\n"
                "Recover it? Discard deletes it; Cancel keeps it, to be offered again at the next start.",
                QMessageBox.Yes | QMessageBox.Discard | QMessageBox.Cancel,
                QMessageBox.Yes,
            )
            if answer == QMessageBox.Discard:
                f.unlink(missing_ok=True)
                continue
            if answer != QMessageBox.Yes:
                kept += 1
                continue
            self.document.replace(mech, Path(orig) if orig else None)
            # The recovered edits are not on disk: the document must show as modified until saved.
            self.document.undo_stack.resetClean()
            self._adopt_recovery(f)
            left = sum(1 for g in files[k + 1:] if g.exists()) + kept
            self.message.emit("Recovered the autosaved document: save it to keep it" + (
                f" ({left} other autosave(s) kept: offered at the next start)" if left else ""))
            return True
        if kept:
            self.message.emit(f"{kept} autosave(s) kept: offered again at the next start")
        return False

    def _adopt_recovery(self, f: Path) -> None:
        """The recovered autosave `f` becomes this window's recovery file (so the recovered edits are on disk until
        saved, and the file is no longer an orphan); if it cannot be moved, an autosave is written and `f` deleted
        only once that worked."""
        try:
            os.replace(f, self.recovery_file)
            return
        except FileNotFoundError:
            pass  # (taken by another instance starting at the same time: this window keeps its own copy)
        except OSError:
            pass
        if self.autosave():
            f.unlink(missing_ok=True)

    def shutdown(self) -> None:
        """The window closes normally: stop autosaving, drop the recovery file, and stop an auto layout under way."""
        editor = getattr(self.window, "editor", None)
        if editor is not None:
            editor.shutdown()  # (its thread joined: nothing runs on after the window)
        self.autosave_timer.stop()
        self.discard_recovery()
        _IN_USE.discard(self.recovery_file.name)
