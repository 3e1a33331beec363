"""Undoable edits: one QUndoCommand per kind of edit, each calling the core Mechanism's validated edit API.

A command is applied once by `execute` *before* it goes on the stack, so a refused edit (a LinkwrightError from
the core) never reaches the undo history; QUndoStack's own first redo() is then skipped."""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QUndoCommand

from core.model import Body, Driver, Joint, Mechanism

__all__ = [
    "EditCommand",
    "AddBody",
    "AddJoint",
    "AddDriver",
    "RemoveItems",
    "RemoveDriver",
    "UpdateBody",
    "UpdateJoint",
    "UpdateDriver",
    "MoveNodes",
    "SetProperties",
    "SetContact",
    "SetSimulation",
    "SetPairFriction",
    "execute",
]

MOVE_ID = 1001  # QUndoCommand.id() of MoveNodes: consecutive moves of the same nodes merge


class EditCommand(QUndoCommand):
    """Base: subclasses implement `_do(mech)` and `_undo(mech)`; the first redo after `execute` is a no-op.

    Undo also puts the graph layout's entries back in their order: a deleted body's entry, restored, went to the end
    of the mapping (so did a renamed body's, renamed back), and Save wrote an equal document in different bytes."""

    def __init__(self, document, text: str) -> None:
        super().__init__(text)
        self._doc = document
        self._skip_redo = False
        self._layout_order: list[str] = []  # the layout's keys before the edit

    @property
    def mechanism(self) -> Mechanism:
        """The document's current mechanism (looked up each time: Revert/Open replace it and clear the stack)."""
        return self._doc.mechanism

    def apply_first(self) -> None:
        """Apply the edit now (raises LinkwrightError and changes nothing if the core refuses it)."""
        order = list(self.mechanism.layout)
        self._do(self.mechanism)
        self._layout_order = order
        self._skip_redo = True

    def redo(self) -> None:  # noqa: D102 - Qt API
        if self._skip_redo:
            self._skip_redo = False
            return
        self._layout_order = list(self.mechanism.layout)
        self._do(self.mechanism)

    def undo(self) -> None:  # noqa: D102 - Qt API
        mech = self.mechanism
        self._undo(mech)
        restore_layout_order(mech, self._layout_order)

    def _do(self, mech: Mechanism) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _undo(self, mech: Mechanism) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


def restore_layout_order(mech: Mechanism, order: list[str]) -> None:
    """Reorder `mech.layout` (in place, the same positions) so the names in `order` come first, in that order."""
    lay = mech.layout
    keys = list(lay)
    known = [k for k in order if k in lay]
    first = set(known)
    wanted = known + [k for k in keys if k not in first]
    if keys != wanted:
        items = dict(lay)
        lay.clear()
        lay.update((k, items[k]) for k in wanted)


def execute(document, command: EditCommand) -> None:
    """Apply `command` to the document and push it on the undo stack; raises LinkwrightError if refused."""
    command.apply_first()
    document.push(command)


class AddBody(EditCommand):
    """Add one body, optionally with its graph-editor position."""

    def __init__(self, document, body: Body, position: tuple[float, float] | None = None) -> None:
        super().__init__(document, f"Add body {body.name}")
        self.body, self.position = body, position

    def _do(self, mech: Mechanism) -> None:
        mech.add_body(self.body, position=self.position)

    def _undo(self, mech: Mechanism) -> None:
        mech.remove_body(self.body.name)


class AddJoint(EditCommand):
    """Add one joint between two existing bodies."""

    def __init__(self, document, joint: Joint) -> None:
        super().__init__(document, f"Add {joint.type} joint {joint.name}")
        self.joint = joint

    def _do(self, mech: Mechanism) -> None:
        mech.add_joint(self.joint)

    def _undo(self, mech: Mechanism) -> None:
        mech.remove_joint(self.joint.name)


class AddDriver(EditCommand):
    """Add one driver."""

    def __init__(self, document, driver: Driver) -> None:
        super().__init__(document, f"Add driver of {driver.joint}")
        self.driver = driver
        self._index: int | None = None

    def _do(self, mech: Mechanism) -> None:
        self._index = mech.add_driver(self.driver)

    def _undo(self, mech: Mechanism) -> None:
        mech.remove_driver(self._index)  # type: ignore[arg-type]


class RemoveItems(EditCommand):
    """Delete bodies (with their joints and drivers) and joints; one undo step however many were selected."""

    def __init__(self, document, bodies=(), joints=()) -> None:
        bodies, joints = list(bodies), list(joints)
        n = len(bodies) + len(joints)
        what = (bodies + joints)[0] if n == 1 else f"{n} items"
        super().__init__(document, f"Delete {what}")
        self.bodies, self.joints = bodies, joints
        self._records: list[tuple[str, dict[str, Any]]] = []

    def _do(self, mech: Mechanism) -> None:
        records = []
        try:
            # Joints first: a selected joint of a selected body is then not removed twice.
            for name in self.joints:
                if name in mech.joint_names():
                    records.append(("joint", mech.remove_joint(name)))
            for name in self.bodies:
                records.append(("body", mech.remove_body(name)))
        except Exception:
            self._restore(mech, records)  # all or nothing
            raise
        self._records = records

    def _undo(self, mech: Mechanism) -> None:
        self._restore(mech, self._records)

    @staticmethod
    def _restore(mech: Mechanism, records) -> None:
        for kind, rec in reversed(records):
            (mech.restore_body if kind == "body" else mech.restore_joint)(rec)


class RemoveDriver(EditCommand):
    """Delete the driver at an index."""

    def __init__(self, document, index: int) -> None:
        super().__init__(document, f"Delete driver {index + 1}")
        self.index = index
        self._old: Driver | None = None

    def _do(self, mech: Mechanism) -> None:
        self._old = mech.remove_driver(self.index)

    def _undo(self, mech: Mechanism) -> None:
        mech.add_driver(self._old, self.index)  # type: ignore[arg-type]


class _Update(EditCommand):
    """Replace fields of one named item; generic over fields (name, ground, mass, points, type, at, axis, ...)."""

    kind = ""

    def __init__(self, document, target: str, /, **changes: Any) -> None:
        fields = ", ".join(changes)
        super().__init__(document, f"Rename {self.kind} {target} to {changes['name']}" if set(changes) == {"name"} else f"Edit {self.kind} {target}: {fields}")
        self.name, self.changes = target, changes
        self._old: dict[str, Any] = {}

    def _update(self, mech: Mechanism, target: str, /, **changes: Any):  # pragma: no cover - abstract
        raise NotImplementedError

    def _do(self, mech: Mechanism) -> None:
        old = self._update(mech, self.name, **self.changes)
        self._old = {k: getattr(old, k) for k in self.changes}
        if "name" in self.changes:
            self._doc.renamed.emit(self.name, self.changes["name"])

    def _undo(self, mech: Mechanism) -> None:
        self._update(mech, self.changes.get("name", self.name), **self._old)
        if "name" in self.changes:
            self._doc.renamed.emit(self.changes["name"], self.name)


class UpdateBody(_Update):
    """Edit fields of a body (a rename follows into joints and layout)."""

    kind = "body"

    def _update(self, mech: Mechanism, target: str, /, **changes: Any):
        return mech.update_body(target, **changes)


class UpdateJoint(_Update):
    """Edit fields of a joint (type, bodies, at, axis, axis2, pitch, name)."""

    kind = "joint"

    def _update(self, mech: Mechanism, target: str, /, **changes: Any):
        return mech.update_joint(target, **changes)


class UpdateDriver(EditCommand):
    """Edit fields of the driver at an index (joint, value, coordinate)."""

    def __init__(self, document, index: int, **changes: Any) -> None:
        super().__init__(document, f"Edit driver {index + 1}: {', '.join(changes)}")
        self.index, self.changes = index, changes
        self._old: dict[str, Any] = {}

    def _do(self, mech: Mechanism) -> None:
        old = mech.update_driver(self.index, **self.changes)
        self._old = {k: getattr(old, k) for k in self.changes}

    def _undo(self, mech: Mechanism) -> None:
        mech.update_driver(self.index, **self._old)


class MoveNodes(EditCommand):
    """Set graph-editor positions of bodies (a whole drag, or an auto-layout, is one step)."""

    def __init__(self, document, new: dict[str, tuple[float, float]], text: str = "", merge: bool = False) -> None:
        super().__init__(document, text or (f"Move {next(iter(new))}" if len(new) == 1 else f"Move {len(new)} bodies"))
        self.new = dict(new)
        self.merge = merge  # keyboard nudges merge with the previous nudge; drags never do
        self.old: dict[str, tuple[float, float] | None] = {}

    def _do(self, mech: Mechanism) -> None:
        old = {name: mech.layout.get(name) for name in self.new}
        for name, pos in self.new.items():
            mech.set_layout(name, pos)
        if not self.old:
            self.old = old

    def _undo(self, mech: Mechanism) -> None:
        for name, pos in self.old.items():
            mech.set_layout(name, pos)

    def id(self) -> int:  # noqa: D102 - Qt API
        return MOVE_ID

    def mergeWith(self, other: QUndoCommand) -> bool:  # noqa: D102 - Qt API
        # Keyboard nudges of the same nodes become one step; a drag is already one command.
        if not (isinstance(other, MoveNodes) and self.merge and other.merge and set(other.new) == set(self.new)):
            return False
        self.new = dict(other.new)
        return True


class SetProperties(EditCommand):
    """Change document-level fields (name, description, gravity, ...)."""

    def __init__(self, document, **changes: Any) -> None:
        super().__init__(document, f"Edit document: {', '.join(changes)}")
        self.changes = changes
        self._old: dict[str, Any] = {}

    def _do(self, mech: Mechanism) -> None:
        self._old = mech.set_properties(**self.changes)

    def _undo(self, mech: Mechanism) -> None:
        mech.set_properties(**self._old)


class _SetSettings(EditCommand):
    """Change fields of one settings record of the document (undo puts the old record, or its absence, back)."""

    key = ""  # "contact" or "simulation"
    label = ""

    def __init__(self, document, **changes: Any) -> None:
        super().__init__(document, f"Edit {self.label}: {', '.join(changes)}")
        self.changes = changes
        self._old: Any = None

    def _apply(self, mech: Mechanism):  # pragma: no cover - abstract
        raise NotImplementedError

    def _do(self, mech: Mechanism) -> None:
        self._old = self._apply(mech)

    def _undo(self, mech: Mechanism) -> None:
        mech.set_properties(**{self.key: self._old})


class SetContact(_SetSettings):
    """Change the contact settings: friction, ellipsoid, pairs (created with defaults if the document has none)."""

    key, label = "contact", "contact"

    def _apply(self, mech: Mechanism):
        return mech.set_contact(**self.changes)


class SetSimulation(_SetSettings):
    """Change the time-stepping settings: dt, duration, method."""

    key, label = "simulation", "simulation"

    def _apply(self, mech: Mechanism):
        return mech.set_simulation(**self.changes)


class SetPairFriction(EditCommand):
    """Override the friction of one pair of bodies (None drops the override)."""

    def __init__(self, document, a: str, b: str, friction: float | None) -> None:
        what = f"Friction of {a}/{b}" if friction is not None else f"Drop friction override of {a}/{b}"
        super().__init__(document, what)
        self.a, self.b, self.friction = a, b, friction
        self._old: Any = None

    def _do(self, mech: Mechanism) -> None:
        self._old = mech.set_pair_friction(self.a, self.b, self.friction)

    def _undo(self, mech: Mechanism) -> None:
        mech.set_properties(contact=self._old)

