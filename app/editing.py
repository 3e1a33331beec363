"""Edit operations the views and actions call: they build commands and push them (no widget code here)."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from PySide6.QtCore import QObject, Qt, Signal

from core.errors import LinkwrightError
from core.joints import JOINT_TYPES
from core.model import Body, Driver, Joint, Pose, axis2_error, normal_axis2, planar_axis_error

from . import commands as cmd
from .jobs import BackgroundJobs, Job
from .layout import LayoutCancelled, LayoutGraph, auto_layout, layout_graph

__all__ = ["Editor", "SCENE_TO_METRES", "DEFAULT_PITCH", "SHAPE_PRESETS", "DEFAULT_BODY_MASS", "joint_types_for"]

SCENE_TO_METRES = 0.01  # a new joint is placed between its bodies' graph nodes, 100 scene units = 1 m
DEFAULT_PITCH = 0.01  # m per turn, given to a new helical joint (or a joint changed to helical) until the user edits it
DEFAULT_BODY_MASS = 1.0  # kg, given to a body added with a shape (edit it, or switch to a density, in Properties)
# The shape a new body of each kind gets (about 0.2 m across; a halfspace is the floor z <= 0 here, and when it is
# added, the first plane the scene does not have yet: new_halfspace). Every type of
# core.shapes.SHAPE_TYPES has a row; Properties edits the parameters afterwards.
SHAPE_PRESETS: dict[str, dict] = {
    "sphere": {"type": "sphere", "radius": 0.1},
    "box": {"type": "box", "size": [0.2, 0.2, 0.2]},
    "cylinder": {"type": "cylinder", "radius": 0.1, "length": 0.2},
    "disc": {"type": "disc", "radius": 0.1, "thickness": 0.02},
    "ellipsoid": {"type": "ellipsoid", "radii": [0.15, 0.1, 0.05]},
    "superellipsoid": {"type": "superellipsoid", "radii": [0.1, 0.1, 0.1], "exponents": [4, 4]},
    "polytope": {"type": "polytope", "vertices": [[0, 0, 0], [0.2, 0, 0], [0, 0.2, 0], [0, 0, 0.2]]},
    "halfspace": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0},
}


HALFSPACE_GAP = 0.3  # m between a new wall and the farthest point of the scene's bodies (about a body and a half)


def new_halfspace(mechanism, up=(0.0, 0.0, 1.0)) -> dict:
    """The shape of a halfspace added to `mechanism` (Edit ▸ Add Shaped Body ▸ Halfspace): a plane no ground
    halfspace of it already is and that no body of it crosses, so that the scene still runs (a second floor where the
    first one is made every run refused: user test s52, F7). In turn: the floor facing `up` (at 0, or under the
    lowest body), then walls facing inwards, each HALFSPACE_GAP beyond the bodies' farthest point on its side (in a
    planar document only the two in its x-y plane), then the ceiling above them; once all of those are there, one
    more wall farther out on the first side."""
    import numpy as np

    from core.shapes import parse_shape
    from core.transforms import quat_normalize, quat_to_matrix

    up_v = np.asarray(up, dtype=float)
    up_v = up_v / np.linalg.norm(up_v)
    planes, solids = [], []  # (world normal, offset) of the ground halfspaces; the bounded shapes' world supports
    for b in mechanism.bodies:
        if b.shape is None:
            continue
        try:
            shape = parse_shape(b.shape, "shape")
        except LinkwrightError:
            continue
        pose = b.pose
        R = quat_to_matrix(quat_normalize(pose.orientation)) if pose is not None else np.eye(3)
        p = np.asarray(pose.position if pose is not None else (0.0, 0.0, 0.0), dtype=float)
        if shape.bounded:
            solids.append(lambda d, shape=shape, R=R, p=p: float(d @ (R @ shape.support(R.T @ d) + p)))
        elif b.ground and shape.type == "halfspace":
            n = R @ shape.normal
            planes.append((n, shape.offset + float(n @ p)))

    def reach(d) -> float | None:
        """How far along the unit vector d the bodies reach (None without bounded bodies)."""
        return max((f(d) for f in solids), default=None)

    def taken(normal, offset=None) -> bool:
        return any(float(normal @ n) > 1.0 - 1e-9 and (offset is None or abs(offset - c) <= 1e-3) for n, c in planes)

    def wall(side, extra: float = 0.0) -> dict:
        """Facing -side, HALFSPACE_GAP (+ extra) beyond the bodies on that side: the solid {x : side·x >= at}."""
        at = max(reach(side) or 0.0, 0.0) + HALFSPACE_GAP + extra
        return _halfspace(-side, -at)

    # the horizontal directions: world axes where up is one, else two perpendicular to it; in-plane when planar
    axes = [np.eye(3)[i] for i in range(3) if abs(up_v[i]) < 1.0 - 1e-12]
    if len(axes) != 2:
        a = np.eye(3)[int(np.argmin(np.abs(up_v)))]
        h1 = a - (a @ up_v) * up_v
        h1 /= np.linalg.norm(h1)
        axes = [h1, np.cross(up_v, h1)]
    if mechanism.space == "planar":
        axes = [a for a in axes if abs(a[2]) < 1e-12] or [np.array([1.0, 0.0, 0.0])]
    if not taken(up_v):
        low = reach(-up_v)
        return _halfspace(up_v, min(0.0, -low) if low is not None else 0.0)
    for h in axes:
        for side in (h, -h):
            if not taken(-side):
                return wall(side)
    if not taken(-up_v) and (mechanism.space != "planar" or abs(up_v[2]) < 1e-12):
        return wall(up_v)
    extra = 0.0
    while True:  # every side has its plane: one more wall outside the others on the first side
        shape = wall(axes[0], extra)
        if not taken(np.asarray(shape["normal"], dtype=float), shape["offset"]):
            return shape
        extra += HALFSPACE_GAP


def _halfspace(normal, offset: float) -> dict:
    """The format's halfspace object, its offset rounded to a micrometre, down where rounding would move the plane
    into a body it touches (no -0.0)."""
    rounded = round(float(offset), 6)
    if rounded > offset + 1e-12:
        rounded = round(rounded - 1e-6, 6)
    return {"type": "halfspace", "normal": [round(float(x), 12) + 0.0 for x in normal], "offset": rounded + 0.0}


def joint_types_for(space: str) -> list[str]:
    """Joint type names allowed in a document of `space`, table order."""
    return [n for n, t in JOINT_TYPES.items() if t.dof(space) is not None]


def _axis2_for(joint: Joint, changes: dict):
    """The axis2 a universal joint takes when `changes` give it a new axis (or make it a universal) that its stored
    axis2 is not normal to: core.model.normal_axis2 (its projection normal to the new axis; None, the default, when it
    has none), so the edit is not refused over a field the Properties do not show. False when axis2 stays as it is
    (no axis2 stored, not a universal, or it fits)."""
    new = replace(joint, **{k: changes[k] for k in ("type", "axis") if k in changes})
    jt = JOINT_TYPES.get(new.type)
    if jt is None or not jt.axis2 or joint.axis2 is None:
        return False
    try:
        a = new.axis_vector()
        if not axis2_error(a, joint.axis2):
            return False
        return normal_axis2(a, joint.axis2)
    except (ArithmeticError, ValueError, TypeError, LinkwrightError):  # (a bad axis: the edit's own check refuses it)
        return False


def _vector_text(v) -> str:
    """A short 'x, y, z' for a status message (4 significant digits, no -0)."""
    return ", ".join(f"{float(x) + 0.0:.4g}" for x in v)


class Editor(QObject):
    """The editing verbs of the app over one Document and Selection; reports refusals through `message`."""

    message = Signal(str)  # a line for the status bar (what was done, or why it was refused)
    jointTypeChanged = Signal(str)
    _layoutDone = Signal(object, object, object)  # (its Job, _Layout, positions or the exception): from its thread

    def __init__(self, document, selection, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.document = document
        self.selection = selection
        self._joint_type = "revolute"
        self._layouts = BackgroundJobs("linkwright-layout")  # the auto layout (Ctrl+L) off the GUI thread
        self._layout: _Layout | None = None  # what the auto layout under way lays out, if one is
        # (queued: the worker thread emits it, the positions are applied here on the GUI thread)
        self._layoutDone.connect(self._layout_finished, Qt.QueuedConnection)
        document.changed.connect(self._prune_selection)
        document.changed.connect(self._keep_joint_type_allowed)  # (the space switched by an edit, undo or redo)
        document.replaced.connect(self._on_replaced)
        document.renamed.connect(self._follow_rename)

    # ---- state of the editing tools (not document truth) --------------------------------------------------------
    @property
    def joint_type(self) -> str:
        """The type a newly drawn joint gets."""
        return self._joint_type

    def set_joint_type(self, name: str) -> None:
        """Choose the type of joints drawn from now on."""
        if name in JOINT_TYPES and name != self._joint_type:
            self._joint_type = name
            self.jointTypeChanged.emit(name)

    def _on_replaced(self) -> None:
        self._cancel_layout()  # (its positions were for the mechanism that is gone)
        self.selection.clear()
        self._keep_joint_type_allowed()

    def _keep_joint_type_allowed(self) -> None:
        """The type drawn next is one the document's space allows (the first, revolute, when it is not)."""
        allowed = joint_types_for(self.document.mechanism.space)
        if self._joint_type not in allowed:
            self.set_joint_type(allowed[0])

    def _follow_rename(self, old: str, new: str) -> None:
        """A selected body or joint stays selected under its new name (a rename, its undo and its redo)."""
        sel = self.selection
        if old in sel.bodies:
            sel.set(bodies=(sel.bodies - {old}) | {new}, joints=sel.joints)
        elif old in sel.joints:
            sel.set(bodies=sel.bodies, joints=(sel.joints - {old}) | {new})

    def _prune_selection(self) -> None:
        m = self.document.mechanism
        self.selection.prune(m.body_names(), m.joint_names())

    # ---- helpers --------------------------------------------------------------------------------------------------
    def run(self, command: cmd.EditCommand) -> LinkwrightError | None:
        """Execute a command; on refusal report the located reason and return the error (nothing changes)."""
        # (its text is read first: a command the undo stack merges into the one before, an arrow-key nudge, is
        # deleted by the push, and reading it afterwards crashed the app at the second nudge)
        text = command.text()
        try:
            cmd.execute(self.document, command)
        except LinkwrightError as exc:
            self.message.emit(f"Refused: {exc}")
            return exc
        self.message.emit(text)
        return None

    @staticmethod
    def _unchanged(item, changes: dict) -> bool:
        """Whether `changes` would leave `item` (the document, a body or a joint) as it is (e.g. a field's value typed
        again after a refused entry: an empty undo step that marked the document modified)."""
        missing = object()  # (a field the item does not have: the command gives the located refusal)
        return all(getattr(item, k, missing) == v for k, v in changes.items())

    def undone(self) -> None:
        """Say what Undo just took back (the status bar kept the undone edit's own message, 'Add driver of R1', after
        every edit had been undone); and when the document is back as saved, that too."""
        st = self.document.undo_stack
        self.message.emit(self._with_state(f"Undid: {st.text(st.index())}"))

    def redone(self) -> None:
        """Say what Redo just applied again."""
        st = self.document.undo_stack
        self.message.emit(self._with_state(f"Redid: {st.text(st.index() - 1)}"))

    def _with_state(self, text: str) -> str:
        return text if self.document.modified else f"{text} — no unsaved changes"

    # ---- verbs ------------------------------------------------------------------------------------------------------
    def add_body(self, position: tuple[float, float]) -> str:
        """Add a new body at a graph position and select it; returns its name."""
        m = self.document.mechanism
        name = m.unique_name("body")
        self.run(cmd.AddBody(self.document, Body(name), (round(position[0], 1), round(position[1], 1))))
        self.selection.set(bodies=[name])
        return name

    def add_shaped_body(self, kind: str, at=(0.0, 0.0, 0.0), up=(0.0, 0.0, 1.0)) -> str | None:
        """Add a body with the preset `kind` of shape placed at world point `at` (mass 1 kg; a halfspace is a fixed
        ground whose outward normal is `up`, the floor under the document's gravity) and select it; returns its
        name, None if refused."""
        m = self.document.mechanism
        if kind not in SHAPE_PRESETS:
            self.message.emit(f"Refused: unknown shape '{kind}' (known: {', '.join(SHAPE_PRESETS)})")
            return None
        name = m.unique_name(kind)
        static = kind == "halfspace"  # unbounded: it has no mass, only a fixed body may carry it
        pose = None if tuple(at) == (0.0, 0.0, 0.0) else Pose(tuple(float(x) for x in at), (1.0, 0.0, 0.0, 0.0))
        shape = new_halfspace(m, up) if static else SHAPE_PRESETS[kind]
        body = Body(name, ground=static, mass=None if static else DEFAULT_BODY_MASS, shape=shape, pose=pose)
        xs = [p[0] for p in m.layout.values()]
        graph_pos = (round(max(xs) + 120.0, 1), 0.0) if xs else (0.0, 0.0)  # beside the graph's other nodes
        if self.run(cmd.AddBody(self.document, body, graph_pos)) is not None:
            return None
        self.selection.set(bodies=[name])
        return name

    def set_contact(self, **changes) -> LinkwrightError | None:
        """Change the document's contact settings (friction, ellipsoid, pairs); changing nothing is no edit."""
        c = self.document.mechanism.contact
        if "pairs" in changes:
            changes["pairs"] = tuple(changes["pairs"])  # (the record holds a tuple: the pairs table passes a list)
        if c is not None and self._unchanged(c, changes):
            return None
        return self.run(cmd.SetContact(self.document, **changes))

    def set_simulation(self, **changes) -> LinkwrightError | None:
        """Change the document's time-stepping settings (dt, duration, method); changing nothing is no edit (a
        document without the section gets it: that is an edit)."""
        s = self.document.mechanism.simulation
        if s is not None and self._unchanged(s, changes):
            return None
        return self.run(cmd.SetSimulation(self.document, **changes))

    def set_dynamics(self, on: bool) -> LinkwrightError | None:
        """Switch a jointed document with mass to contact dynamics (add a `simulation` section with the default step
        and duration) or back to kinematics (remove it): core.run.run_kind's rule; one undoable step."""
        from core.model import SimulationSettings
        from core.run import dynamics_option

        m = self.document.mechanism
        opt = dynamics_option(m)
        if bool(on) == opt.on:
            return None  # already so (an action re-checked from the document)
        if not opt.available:
            err = LinkwrightError("simulation", opt.reason)
            self.message.emit(f"Refused: {err}")
            return err
        command = cmd.SetProperties(self.document, simulation=SimulationSettings() if on else None)
        command.setText("Switch to dynamics (gravity, contact)" if on else "Switch to kinematics")
        return self.run(command)

    def set_space(self, space: str) -> LinkwrightError | None:
        """Make the document planar or spatial, one undoable step; the same space is no edit. The core's validation
        of the whole document in the new space decides (Mechanism.set_properties: what the loader would refuse in a
        file of that space): planar to spatial keeps every coordinate and is refused only for a slot joint (a
        planar-only pair); spatial to planar is refused at the first thing that has no planar form (a spherical
        joint, a revolute axis off z, gravity or a velocity out of the x-y plane). A refusal names it and changes
        nothing."""
        m = self.document.mechanism
        if space == m.space:
            return None
        command = cmd.SetProperties(self.document, space=space)
        command.setText(f"Make the document {space}")
        try:
            cmd.execute(self.document, command)
        except LinkwrightError as exc:
            self.message.emit(f"Refused: the document cannot be made {space}: {exc}")
            return exc
        rep = self.document.structure()
        if space == "spatial":
            self.message.emit(f"The document is spatial: every joint type can be drawn, each body has 6 freedoms "
                              f"({rep.mobility_formula}); coordinates unchanged, the 3D view's up is now z")
        else:
            self.message.emit(f"The document is planar: motion in the x-y plane, each body has 3 freedoms "
                              f"({rep.mobility_formula})")
        return None

    def set_pair_friction(self, a: str, b: str, friction: float | None) -> LinkwrightError | None:
        """Override (or, with None, stop overriding) the friction coefficient of the pair a/b."""
        return self.run(cmd.SetPairFriction(self.document, a, b, friction))

    def connect(self, a: str, b: str, type_name: str | None = None) -> str | None:
        """Add a joint of the current (or given) type between bodies `a` and `b`; returns its name or None."""
        m = self.document.mechanism
        if a == b:
            self.message.emit("A joint joins two different bodies: drop on another body")
            return None
        t = type_name or self._joint_type
        pa, pb = m.layout.get(a), m.layout.get(b)
        at = (0.0, 0.0, 0.0)
        if pa is not None and pb is not None:
            # Scene y grows downwards; the drawing's y grows upwards.
            at = (
                round((pa[0] + pb[0]) / 2 * SCENE_TO_METRES, 3),
                round(-(pa[1] + pb[1]) / 2 * SCENE_TO_METRES, 3),
                0.0,
            )
        stem = JOINT_TYPES[t].letter if t in JOINT_TYPES else "J"
        name = m.unique_name(stem)
        pitch = DEFAULT_PITCH if t in JOINT_TYPES and JOINT_TYPES[t].pitch else None
        if self.run(cmd.AddJoint(self.document, Joint(name, t, (a, b), at=at, pitch=pitch))) is not None:
            return None
        self.selection.set(joints=[name])
        return name

    def delete(self, bodies=(), joints=()) -> bool:
        """Delete bodies (and their joints) and joints as one undo step."""
        bodies, joints = list(bodies), list(joints)
        if not bodies and not joints:
            return False
        return self.run(cmd.RemoveItems(self.document, bodies, joints)) is None

    def delete_selection(self) -> bool:
        """Delete what is selected."""
        return self.delete(sorted(self.selection.bodies), sorted(self.selection.joints))

    def toggle_ground(self, names=None) -> None:
        """Mark the selected body as ground (or unmark it if it is ground already)."""
        names = sorted(self.selection.bodies) if names is None else list(names)
        if not names:
            self.message.emit("Select a body to mark as ground")
            return
        m = self.document.mechanism
        self.document.undo_stack.beginMacro("Toggle ground")
        try:
            for n in names:
                self.update_body(n, ground=not m.body(n).ground)
        finally:
            self.document.undo_stack.endMacro()

    def rename(self, old: str, new: str) -> LinkwrightError | None:
        """Rename a body or a joint."""
        new = new.strip()
        if new == old:
            return None
        # (a selected item stays selected under its new name: _follow_rename)
        if old in self.document.mechanism.body_names():
            return self.run(cmd.UpdateBody(self.document, old, name=new))
        return self.run(cmd.UpdateJoint(self.document, old, name=new))

    def update_document(self, **changes) -> LinkwrightError | None:
        """Change document-level fields (name, gravity, ...); changing nothing is no edit (and no undo step)."""
        if self._unchanged(self.document.mechanism, changes):
            return None
        return self.run(cmd.SetProperties(self.document, **changes))

    def update_body(self, target: str, /, **changes) -> LinkwrightError | None:
        """Change fields of a body (name= renames it); changing nothing is no edit (and no undo step)."""
        m = self.document.mechanism
        if target in m.body_names() and self._unchanged(m.body(target), changes):
            return None
        if changes.get("ground") and "velocity" not in changes and target in m.body_names():
            vel = m.body(target).velocity
            if vel is not None and any(x != 0.0 for x in (*vel.linear, *vel.angular)):
                # a ground body is fixed, so its initial velocity means nothing (and is refused): marking a moving
                # body as ground clears it, in the same undo step (undo brings both back)
                changes["velocity"] = None
        return self.run(cmd.UpdateBody(self.document, target, **changes))

    def update_joint(self, target: str, /, **changes) -> LinkwrightError | None:
        """Change fields of a joint (name= renames it); changing nothing is no edit (and no undo step)."""
        m = self.document.mechanism
        if target in m.joint_names() and self._unchanged(m.joint(target), changes):
            return None
        new_type = changes.get("type")
        if new_type in JOINT_TYPES and JOINT_TYPES[new_type].pitch and "pitch" not in changes:
            if target in m.joint_names() and m.joint(target).pitch is None:
                changes["pitch"] = DEFAULT_PITCH  # a helical joint needs one; the user edits it in Properties
        if (new_type in JOINT_TYPES and "axis" not in changes and m.space == "planar" and target in m.joint_names()
                and m.joint(target).axis is not None
                and planar_axis_error(new_type, m.joint(target).axis_vector())):
            # a revolute's z axis given in the file cannot be a prismatic's in a planar document: the new type takes
            # its own default axis (in the same undo step) rather than the change being refused
            changes["axis"] = None
        axis2 = False
        if ("type" in changes or "axis" in changes) and "axis2" not in changes and target in m.joint_names():
            axis2 = _axis2_for(m.joint(target), changes)
            if axis2 is not False:
                changes["axis2"] = axis2  # (in the same undo step)
        err = self.run(cmd.UpdateJoint(self.document, target, **changes))
        if err is None and axis2 is not False:
            # axis2 is not in the Properties: the user is told it changed, and to what
            now = f"({_vector_text(axis2)})" if axis2 is not None else "the default second axis"
            self.message.emit(f"Edit joint {changes.get('name', target)}: its axis2 is now {now}, normal to its axis "
                              "(a universal joint's two axes are perpendicular); Undo takes both back")
        return err

    def move(self, positions: dict[str, tuple[float, float]], nudge: bool = False) -> None:
        """Record new graph positions (one undo step)."""
        m = self.document.mechanism
        changed = {k: (round(float(x), 1), round(float(y), 1)) for k, (x, y) in positions.items() if m.layout.get(k) != (round(float(x), 1), round(float(y), 1))}
        if changed:
            self.run(cmd.MoveNodes(self.document, changed, merge=nudge))

    def layout_all(self) -> None:
        """Lay the whole graph out automatically, one undo step. It is computed in a worker thread on a frozen copy
        of the body graph (a 1000-body layout takes seconds) and applied when it is ready, unless the bodies or
        joints changed meanwhile; a second call while one is under way starts nothing."""
        m = self.document.mechanism
        if not m.bodies:
            return
        if self._layout is not None:
            self.message.emit("Auto layout is already being computed")
            return
        layout = self._layout = _Layout(layout_graph(m), m)
        self.message.emit(f"Laying out {len(layout.graph.names)} bodies…")
        self._layouts.start(lambda job: self._compute_layout(job, layout))

    def layout_running(self) -> bool:
        """Whether an auto layout is being computed."""
        return self._layout is not None

    def _compute_layout(self, job: Job, layout: _Layout) -> None:
        """(its thread) Compute the layout and hand it to the GUI thread; nothing if it was cancelled."""
        try:
            result = auto_layout(layout.graph, cancelled=job.cancelled)
        except LayoutCancelled:
            return
        except Exception as exc:  # noqa: BLE001 - an internal failure is reported, not raised in a thread
            result = exc
        if not job.cancelled():
            try:
                self._layoutDone.emit(job, layout, result)
            except RuntimeError:  # pragma: no cover - the editor was deleted without its window's shutdown
                pass

    def _layout_finished(self, job: Job, layout: _Layout, result) -> None:
        """(GUI thread) Apply a finished layout as one undoable step, if the body graph is still the one it laid
        out; otherwise drop it and say so."""
        self._layouts.finished(job)
        if layout is not self._layout:
            return  # cancelled (another mechanism was loaded)
        self._layout = None
        if isinstance(result, Exception):
            self.message.emit(f"Auto layout failed: {result}")
            return
        m = self.document.mechanism
        if m is not layout.mechanism or layout_graph(m) != layout.graph:
            self.message.emit("Auto layout dropped: the bodies or joints changed while it was computed "
                              "(Ctrl+L lays out again)")
            return
        if self.run(cmd.MoveNodes(self.document, result, text="Auto layout")) is None:
            took = time.perf_counter() - job.started
            self.message.emit(f"Auto layout of {len(result)} bodies" + (f" ({took:.1f} s)" if took >= 1.0 else ""))

    def _cancel_layout(self) -> None:
        """Ask an auto layout under way to stop; its result, if it still comes, is ignored."""
        self._layouts.cancel()
        self._layout = None

    def shutdown(self, timeout: float = 5.0) -> None:
        """The window closes: stop an auto layout under way and wait for its thread (it stops at its next step)."""
        self._cancel_layout()
        self._layouts.shutdown(timeout)

    def add_driver(self, joint: str | None = None) -> LinkwrightError | None:
        """Drive the first undriven joint coordinate (or `joint`'s) with the expression t."""
        m = self.document.mechanism
        driven = {(d.joint, d.coordinate) for d in m.drivers}
        candidates = [joint] if joint else [j.name for j in m.joints]
        for name in candidates:
            j = m.joint(name)
            dof = JOINT_TYPES[j.type].dof(m.space) or 0
            for c in range(dof):
                if (name, c) not in driven:
                    return self.run(cmd.AddDriver(self.document, Driver(name, "t", c)))
        if joint:
            j = m.joint(joint)
            fixed = not JOINT_TYPES[j.type].dof(m.space)
            self.message.emit(f"Joint {joint} is {j.type}: it has no coordinate to drive" if fixed
                              else f"Every coordinate of joint {joint} is driven already")
        else:
            self.message.emit("Every joint coordinate is driven already" if m.joints else "Add a joint first")
        return None

    def update_driver(self, index: int, **changes) -> LinkwrightError | None:
        """Change fields of the driver at `index`."""
        return self.run(cmd.UpdateDriver(self.document, index, **changes))

    def remove_driver(self, index: int) -> LinkwrightError | None:
        """Delete the driver at `index`."""
        return self.run(cmd.RemoveDriver(self.document, index))

    def remove_drivers(self, indices) -> None:
        """Delete the drivers at `indices`, as one undo step (as deleting several bodies is)."""
        rows = sorted(set(indices), reverse=True)  # (from the last: the earlier indices stay valid)
        if len(rows) == 1:
            self.remove_driver(rows[0])
            return
        self.document.undo_stack.beginMacro(f"Remove {len(rows)} drivers")
        try:
            for r in rows:
                self.run(cmd.RemoveDriver(self.document, r))
        finally:
            self.document.undo_stack.endMacro()


@dataclass(frozen=True, eq=False)
class _Layout:
    """What an auto layout lays out (a frozen copy of the body graph) and the document's mechanism it was taken from."""

    graph: LayoutGraph
    mechanism: object
