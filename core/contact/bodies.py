"""Rigid-body model and state for contact simulation (model/data split: the model is never changed, except for the
stepper's cache of step structures in ContactModel.step_plans, filled with entries built from the model alone and
cleared when it grows large).

Frames: every body has a body frame (the document's pose is that frame's origin and orientation) and a
centre of mass `com_body` in it.  Inside the stepper a body's state is its centre-of-mass position p,
its orientation quaternion Q = (w, x, y, z) (body -> world), and the world-frame linear velocity of the
centre of mass v and angular velocity w.  A body point y (body frame) is at x = p + R(Q) (y - com_body).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import numpy as np

from ..errors import LinkwrightError
from ..structure import attached_part, grounded_part
from ..transforms import matrix_to_quat, quat_to_matrix

__all__ = ["ContactModel", "State", "build_model", "massless_shape", "initial_state", "cayley", "cayley_jacobian", "origin_pose",
           "RunCancelled", "check_cancel", "touching_pairs"]


class RunCancelled(Exception):
    """A run's cancel callable said stop while the run was being set up (build_model, ContactRun's start-up checks
    and its first frame's geometry): there is no run.  Not a LinkwrightError: nothing is wrong with the document."""


def check_cancel(cancel: Callable[[], bool] | None) -> None:
    """Raise RunCancelled when `cancel` says stop."""
    if cancel is not None and cancel():
        raise RunCancelled("cancelled before the run began")


def cayley(u: np.ndarray) -> np.ndarray:
    """Rotation matrix of the unit quaternion (1, u)/sqrt(1+|u|^2) (the position update's rotation)."""
    ux, uy, uz = u
    D = 1.0 + ux * ux + uy * uy + uz * uz
    a = 1.0 - (ux * ux + uy * uy + uz * uz)
    return np.array([
        [a + 2 * ux * ux, 2 * (ux * uy - uz), 2 * (ux * uz + uy)],
        [2 * (ux * uy + uz), a + 2 * uy * uy, 2 * (uy * uz - ux)],
        [2 * (ux * uz - uy), 2 * (uy * uz + ux), a + 2 * uz * uz],
    ]) / D


def cayley_jacobian(w: np.ndarray, h: float) -> np.ndarray:
    """T with dtheta = T dw: world rotation perturbation of cayley(h w / 2) per change of w."""
    u = 0.5 * h * w
    D = 1.0 + float(u @ u)
    ux, uy, uz = u
    # (h / D) (I + [u]x), from omega = 2 (I + [u]x) du / (1 + |u|^2) for q = (1, u)/sqrt(1 + |u|^2)
    return (h / D) * np.array([[1.0, -uz, uy], [uz, 1.0, -ux], [-uy, ux, 1.0]])


@dataclass(frozen=True)
class ContactModel:
    """Constant description of a contact scene (built once from a Mechanism)."""

    names: tuple[str, ...]  # body names, index = body index
    dynamic: np.ndarray  # (N,) bool: integrated bodies; the others are fixed obstacles
    mass: np.ndarray  # (N,) kg (1 for static bodies, unused)
    inertia_body: np.ndarray  # (N,3,3) about the centre of mass, body axes
    com_body: np.ndarray  # (N,3) centre of mass in the body frame
    shapes: tuple  # (N,) core.shapes.Shape or None
    radius: np.ndarray  # (N,) bounding radius about the centre of mass (inf for half-spaces)
    halfspace: tuple  # (N,) None or (normal(3), offset) in the body frame for half-space shapes
    pairs: tuple[tuple[int, int, float], ...]  # candidate pairs (a, b, mu): a dynamic; b dynamic or static
    ellipsoid: tuple[float, float, float]  # (e_t, e_o, e_r)
    gravity: np.ndarray  # (3,) m/s^2
    force: np.ndarray  # (N,3) constant external force at the centre of mass, N
    torque: np.ndarray  # (N,3) constant external torque, world frame, N m
    init_pose: tuple  # (N,) (origin position, quaternion) from the document
    init_velocity: tuple  # (N,) (linear velocity of the origin, angular velocity), world
    dt: float = 0.01  # the document's default step
    duration: float = 1.0  # the document's default end time
    method: str = "implicit"  # the document's default method
    joints: tuple = ()  # core.contact.joints.JointSpec of every joint with a dynamic body (bilateral constraints)
    kinematic: np.ndarray | None = None  # (N,) bool: dynamic bodies moved by the drivers (infinite mass), see DriveSpec
    drive: "DriveSpec | None" = None  # the driven motion of the kinematic bodies (None: no driver moves one)
    driver_names: tuple = ()  # every driver of the document (its effort: StepResult.driver_impulse), ...
    driver_units: tuple = ()  # ... and its effort's unit ("N" or "N m")
    doc_index: tuple = ()  # (N,) each body's index in the document's bodies (a message's bodies[i]; massless helper
    #                        bodies take no part, so it is not the model's index); () for a model built by hand
    planar: bool = False  # a planar document's: every body moved by forces is held in the x-y plane by joints (its
    #                       own or implied ones, _plane_specs), so the out-of-plane parts of its contacts' impulses
    #                       are not unique (plan._Plan's proximal term, stepper.planar_aux)

    @property
    def n_bodies(self) -> int:
        """Number of bodies (dynamic and static)."""
        return len(self.names)

    @cached_property
    def dynamic_bodies(self) -> np.ndarray:
        """(nb,) indices of the dynamic bodies, in body order (their place in a step's velocity unknowns)."""
        return np.flatnonzero(self.dynamic)

    @cached_property
    def dynamic_slot(self) -> np.ndarray:
        """(N,) each body's index among the dynamic bodies, -1 for a static one."""
        out = -np.ones(self.n_bodies, int)
        out[self.dynamic_bodies] = np.arange(self.dynamic_bodies.size)
        return out

    def body_location(self, i: int) -> str:
        """A message's location of model body i: 'bodies[k]', k its index in the document (doc_index; i itself for a
        model built without one)."""
        return f"bodies[{self.doc_index[i] if self.doc_index else i}]"

    @cached_property
    def free(self) -> np.ndarray:
        """(N,) bool: the bodies moved by forces (dynamic and not kinematic)."""
        return self.dynamic & ~self.kinematic_mask

    @cached_property
    def kinematic_mask(self) -> np.ndarray:
        """(N,) bool: the bodies moved by the drivers (all False without drivers)."""
        return np.zeros(self.n_bodies, bool) if self.kinematic is None else np.asarray(self.kinematic, bool)

    def reduced_mass(self, a, b) -> np.ndarray:
        """The reduced mass of body pairs (a, b) (arrays of indices): m_a m_b / (m_a + m_b), or the mass of the one
        moved by forces when the other is static or kinematic (infinite mass)."""
        a, b = np.asarray(a, int), np.asarray(b, int)
        fa, fb = self.free[a], self.free[b]
        ma, mb = self.mass[a], self.mass[b]
        return np.where(fa & fb, ma * mb / (ma + mb), np.where(fa, ma, mb))

    @cached_property
    def inertia_inv(self) -> np.ndarray:
        """(N, 3, 3) inverse body inertias of the dynamic bodies (zero for static ones)."""
        out = np.zeros_like(self.inertia_body)
        dyn = np.flatnonzero(self.dynamic)
        if dyn.size:
            out[dyn] = np.linalg.inv(self.inertia_body[dyn])
        return out

    @cached_property
    def gyration(self) -> np.ndarray:
        """(N,) radius of gyration sqrt(trace(I) / 3m) of each dynamic body (0 for static ones), metres."""
        out = np.zeros(self.n_bodies)
        dyn = np.flatnonzero(self.dynamic)
        if dyn.size:
            out[dyn] = np.sqrt(np.trace(self.inertia_body[dyn], axis1=1, axis2=2) / (3.0 * self.mass[dyn]))
        return out

    @cached_property
    def inner_radius(self) -> np.ndarray:
        """(N,) the radius of a ball inside each body's shape (Shape.inner_radius: its width along every direction is
        at least twice it); 0 for a body without a shape."""
        return np.array([0.0 if s is None else float(s.inner_radius) for s in self.shapes])

    @cached_property
    def broad(self) -> "BroadPhaseData":
        """Constant arrays of the broad phase (computed once per model)."""
        n = self.n_bodies
        ia = np.array([a for a, _b, _mu in self.pairs], int)
        ib = np.array([b for _a, b, _mu in self.pairs], int)
        hs = np.flatnonzero([h is not None for h in self.halfspace])
        plane_n, plane_c = np.zeros((n, 3)), np.zeros(n)
        for b in hs:
            # a half-space body's plane n.(y - com) <= offset - n.com in centre-of-mass body coordinates
            plane_n[b] = self.halfspace[b][0]
            plane_c[b] = self.halfspace[b][1] - self.halfspace[b][0] @ self.com_body[b]
        r = np.asarray(self.radius, float)
        is_hs = np.zeros(n, bool)
        is_hs[hs] = True
        return BroadPhaseData(ia, ib, np.where(np.isfinite(r), r, 0.0), is_hs[ib], plane_n, plane_c,
                              float(np.sqrt(self.gravity @ self.gravity)))


@dataclass(frozen=True)
class BroadPhaseData:
    """Per-model constants of the broad phase (ContactModel.broad)."""

    ia: np.ndarray  # (P,) body A of each candidate pair
    ib: np.ndarray  # (P,) body B
    radius: np.ndarray  # (N,) bounding radius, 0 for half-spaces
    to_plane: np.ndarray  # (P,) pair whose B is a half-space
    plane_n: np.ndarray  # (N, 3) half-space bodies: the normal in the body frame (zero for the other bodies) ...
    plane_c: np.ndarray  # (N,) ... and the offset relative to the centre of mass
    gravity: float  # |g|, m/s^2


@dataclass
class State:
    """Data: the bodies' state at one instant (static bodies keep their initial values)."""

    t: float  # s
    p: np.ndarray  # (N,3) centre-of-mass positions, world
    q: np.ndarray  # (N,4) orientations (w, x, y, z), body -> world
    v: np.ndarray  # (N,3) linear velocities of the centres of mass, world
    w: np.ndarray  # (N,3) angular velocities, world
    warm: dict = field(default_factory=dict)  # per pair index: last step's pair unknowns (warm start)
    joints: dict = field(default_factory=dict)  # last step's joint unknowns {"lam": (n,), "h": step} (warm start) and
    # the screw joints' rotation angles {"turns": (J,)} (core.contact.joints)

    def copy(self) -> "State":
        """An independent snapshot."""
        return State(self.t, self.p.copy(), self.q.copy(), self.v.copy(), self.w.copy(), dict(self.warm),
                     dict(self.joints))


def origin_pose(model: ContactModel, state: State, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Position of body i's frame origin and the velocity of that origin (world)."""
    R = quat_to_matrix(state.q[i])
    r = R @ model.com_body[i]
    return state.p[i] - r, state.v[i] - np.cross(state.w[i], r)


def _attached(mech) -> set[str]:
    names = set()
    for j in mech.joints:
        names.update(j.bodies)
    return names


def massless_shape(body, location: str) -> LinkwrightError:
    """The refusal of a body (not ground, attached by no joint) drawn with a shape but given neither a mass nor a
    density: it would take no part in a contact run (build_model; core.run.nothing_to_move names it too)."""
    return LinkwrightError(location, f"body '{body.name}' has a shape but neither mass nor density (or mark it ground)")


def _takes_part(body, attached: set[str]) -> bool:
    """Whether a body is in a contact run: ground (static), or with a mass or density, or attached by a joint."""
    return body.ground or body.mass is not None or body.density is not None or body.name in attached


def _apart_rule(mech, names, shaped, free, dyn, half) -> Callable[[str, str], str | None]:
    """The rule of which bodies of a contact run touch, over the run's bodies (`names`, those of mech.bodies that take
    part, and per body: shaped, moved by forces, dynamic, a half-space): a function of two body names giving why they
    never touch, None when they can (a pair of the run).  A body that takes no part never touches."""
    index = {name: i for i, name in enumerate(names)}
    # two dynamic bodies joined by a joint never touch (their shapes meet at the joint: links drawn as bars overlap at
    # their pins); a dynamic body and a static one do (a pendulum hinged to the ground that carries the floor)
    linked = {frozenset(j.bodies): j.name for j in mech.joints}

    def apart(a: str, b: str) -> str | None:
        i, k = index.get(a), index.get(b)
        if i is None or k is None:
            return f"'{a if i is None else b}' takes no part in contact (neither ground nor with a mass)"
        if not (shaped[i] and shaped[k]):
            return f"'{a if not shaped[i] else b}' has no shape"
        if not (free[i] or free[k]):
            return "neither is moved by forces (static and kinematic bodies do not touch each other: their motions are given)"
        if half[i] and half[k]:
            return "both are half-spaces"
        joint = linked.get(frozenset((a, b)))
        if dyn[i] and dyn[k] and joint is not None:
            return f"they are joined by joint '{joint}' (bodies joined by a joint do not touch each other)"
        return None

    return apart


def touching_pairs(mech) -> list[tuple[str, str]]:
    """The pairs of the document's bodies that a contact run would solve (build_model's pairs, by name, in its order),
    found without building the shapes (the Properties panel's Add pair offers only these).  LinkwrightError when the
    drivers cannot be analysed."""
    from ..shapes.kinds import Halfspace

    attached = _attached(mech)
    kin_names = _driven_part(mech)[0]
    bodies = [b for b in mech.bodies if _takes_part(b, attached)]
    dyn = [not b.ground for b in bodies]
    free = [d and b.name not in kin_names for d, b in zip(dyn, bodies)]
    shaped = [b.shape is not None for b in bodies]
    half = [b.shape is not None and b.shape.get("type") == Halfspace.type for b in bodies]  # (build_model: parsed)
    apart = _apart_rule(mech, [b.name for b in bodies], shaped, free, dyn, half)
    return [(a.name, b.name) for i, a in enumerate(bodies) for b in bodies[i + 1:] if apart(a.name, b.name) is None]


def build_model(mech, *, forces: dict | None = None, cancel: Callable[[], bool] | None = None) -> ContactModel:
    """ContactModel of a Mechanism: ground bodies are static (their shapes obstacles), free shaped bodies with mass and
    every body a joint attaches are dynamic; joints are bilateral constraints (core.contact.joints).

    cancel is checked at every body and every row of the pair table: RunCancelled when it says stop (a 64-body scene
    takes 40 ms or more here, a Stop must not wait)."""
    from ..shapes import mass_properties, parse_shape

    attached = _attached(mech)
    kin_names, drive_km, kin_poses, kin_drivers, rheonomic = _driven_part(mech)
    names, dyn, kin, mass, inertia, com, shapes, radius, half, poses, vels = [], [], [], [], [], [], [], [], [], [], []
    doc_index = []
    for i, b in enumerate(mech.bodies):
        check_cancel(cancel)
        loc = f"bodies[{i}]"
        shape = parse_shape(b.shape, f"{loc}.shape") if b.shape is not None else None
        is_kin = b.name in kin_names
        is_dyn = not b.ground and _takes_part(b, attached)
        if is_dyn and not is_kin and b.mass is None and (b.density is None or shape is None):
            if drive_km is not None:
                raise LinkwrightError(loc, f"body '{b.name}' is attached by a joint and the drivers do not fix its "
                                           "motion: give it a mass (or a shape and a density), or drive it")
            raise LinkwrightError(loc, f"body '{b.name}' is attached by a joint: a dynamic body needs a mass (or a "
                                       "shape and a density)")
        if not b.ground and not is_dyn:
            if shape is not None:
                raise massless_shape(b, loc)
            continue  # a massless helper body takes no part in contact dynamics
        if is_kin:
            # moved by the drivers: infinite mass (its velocity rows are its driven motion, core.contact.stepper);
            # unit mass and an inertia of its size only weight its rows in the solver's merit function
            size = float(shape.bounding_radius) if shape is not None and shape.bounded else 0.1
            m, c, I = 1.0, (b.com or (0.0, 0.0, 0.0)), size * size * np.eye(3)
        elif is_dyn:
            if shape is not None:
                m, c, I = mass_properties(shape, b.mass, b.density, loc)
            else:
                if b.mass is None:
                    raise LinkwrightError(f"{loc}.mass", "a body without a shape needs a mass")
                m, c, I = b.mass, (0.0, 0.0, 0.0), None
            if b.com is not None:
                c = b.com
            if b.inertia is not None:
                I = b.inertia
            if I is None:
                raise LinkwrightError(loc, "a dynamic body needs a shape or an inertia")
            I = np.asarray(I, dtype=float)
            if not np.all(np.linalg.eigvalsh(0.5 * (I + I.T)) > 0):
                raise LinkwrightError(f"{loc}.inertia", "inertia must be symmetric positive definite")
        else:
            m, c, I = 1.0, (b.com or (0.0, 0.0, 0.0)), np.eye(3)
        c = np.asarray(c, dtype=float)
        hs = None
        rad = np.inf
        if shape is not None:
            if shape.type == "halfspace":
                # the shape's unit normal and plane offset, divided by |normal| as the shape computes it (scaled
                # first, core.shapes.kinds.Halfspace): a normal of any scale, [0, 0, 1e-200] too, is the +z plane
                hs = (np.asarray(shape.normal, dtype=float).copy(), float(shape.offset))
            else:
                # bounding radius is about the body origin; move it to the centre of mass (conservative)
                rad = float(shape.bounding_radius) + float(np.linalg.norm(c))
        names.append(b.name)
        doc_index.append(i)
        dyn.append(is_dyn)
        kin.append(is_kin)
        mass.append(float(m))
        inertia.append(np.asarray(I, dtype=float))
        com.append(c)
        shapes.append(shape)
        radius.append(rad)
        half.append(hs)
        pose = b.pose
        poses.append((np.asarray(pose.position if pose else (0, 0, 0), float),
                      np.asarray(pose.orientation if pose else (1, 0, 0, 0), float)))
        vel = b.velocity
        vels.append((np.asarray(vel.linear if vel else (0, 0, 0), float),
                     np.asarray(vel.angular if vel else (0, 0, 0), float)))
    contact = mech.contact
    ell = tuple(float(e) for e in (contact.ellipsoid if contact else (1.0, 1.0, 0.0)))
    pairs = []
    n = len(names)
    free = [d and not k for d, k in zip(dyn, kin)]  # moved by forces (kinematic bodies are moved by the drivers)
    apart = _apart_rule(mech, names, [s is not None for s in shapes], free, dyn, [h is not None for h in half])
    for a in range(n):
        check_cancel(cancel)
        for b in range(a + 1, n):
            if apart(names[a], names[b]) is not None:
                continue
            mu = contact.friction_for(names[a], names[b]) if contact else 0.5
            # body A of a pair is always moved by forces; a half-space is always B
            if not free[a] or half[a] is not None:
                pairs.append((b, a, float(mu)))
            else:
                pairs.append((a, b, float(mu)))
    # a friction given for two bodies that never touch is a mistake in the document (its value would be ignored)
    for i, p in enumerate(contact.pairs if contact else ()):
        why = apart(*p.bodies)
        if why is not None:
            raise LinkwrightError(f"contact.pairs[{i}].bodies", f"'{p.bodies[0]}' and '{p.bodies[1]}' never touch: "
                                                                f"{why}; remove the pair")
    F = np.zeros((n, 3))
    T = np.zeros((n, 3))
    for name, (f, tau) in (forces or {}).items():
        k = names.index(name)
        F[k] = f
        T[k] = tau
    sim = mech.simulation
    check_cancel(cancel)
    joints = _joint_specs(mech, names, free, com, poses, rheonomic)  # (in the design configuration: the document's)
    if mech.space == "planar":
        joints += _plane_specs(mech, names, free, com, poses)
    for i in range(n):
        if kin[i]:  # a kinematic body starts where the drivers put it at t = 0, moving as they move it
            X, tw = kin_poses[names[i]]
            poses[i] = (X[:3, 3].copy(), matrix_to_quat(X[:3, :3]))
            vels[i] = (tw[0:3] + np.cross(tw[3:6], X[:3, 3]), tw[3:6].copy())
    drive = None
    if drive_km is not None:
        km_index = {name: k for k, name in enumerate(drive_km.body_names)}
        moved = [i for i in range(n) if kin[i]]
        drive = DriveSpec(drive_km, np.array(moved, int), np.array([km_index[names[i]] for i in moved], int),
                          np.array(kin_drivers, int))
    driver_names, driver_units = _driver_labels(mech)
    return ContactModel(
        names=tuple(names), dynamic=np.array(dyn, bool), mass=np.array(mass), inertia_body=np.array(inertia).reshape(n, 3, 3),
        com_body=np.array(com).reshape(n, 3), shapes=_shared(shapes), radius=np.array(radius), halfspace=tuple(half),
        pairs=tuple(pairs), ellipsoid=ell,
        gravity=np.asarray(mech.gravity if mech.gravity is not None else (0.0, 0.0, 0.0), float),
        force=F, torque=T, init_pose=tuple(poses), init_velocity=tuple(vels),
        dt=float(sim.dt) if sim else 0.01, duration=float(sim.duration) if sim else 1.0,
        method=str(sim.method) if sim else "implicit", joints=joints, kinematic=np.array(kin, bool), drive=drive,
        driver_names=driver_names, driver_units=driver_units, doc_index=tuple(doc_index),
        planar=mech.space == "planar",
    )


@dataclass(frozen=True)
class DriveSpec:
    """The driven part of a contact scene: the kinematic model of the bodies the drivers fix (with the ground and the
    joints between them), and where each of its bodies is among the contact model's."""

    km: object  # core.kinematics.KinematicModel (constant)
    body: np.ndarray  # (K,) contact-model index of each kinematic body
    km_body: np.ndarray  # (K,) its index in km
    driver: np.ndarray  # (D_k,) each of km's drivers' index among the document's (ContactModel.driver_names)


def _coordinate_step(jtype: str, coordinate: int) -> tuple[str, int]:
    """("t", axis) when a joint type's coordinate slides it along an axis of its frame, ("r", axis) when it turns it
    (a screw's coordinate turns it: its translation follows)."""
    from ..joints import JOINT_TYPES
    from ..transforms import RX

    kinds = [k for k, c, scale in JOINT_TYPES[jtype].motion if c == coordinate and scale == "1"]
    rot = [k - RX for k in kinds if k >= RX]
    return ("r", rot[0]) if rot else ("t", kinds[0])


def _driver_labels(mech) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Per driver of the document, its label ("<joint>", or "<joint>.<coordinate>" for a joint of several
    coordinates, as the kinematics names them) and the unit of its effort ("N m" when it turns its joint, "N" when it
    slides it)."""
    from ..joints import JOINT_TYPES

    names, units = [], []
    for d in mech.drivers:
        j = mech.joint(d.joint)
        names.append(j.name if JOINT_TYPES[j.type].dof(mech.space) == 1 else f"{j.name}.{d.coordinate}")
        units.append("N m" if _coordinate_step(j.type, d.coordinate)[0] == "r" else "N")
    return tuple(names), tuple(units)


def _plane_specs(mech, names, free, com, poses) -> tuple:
    """A planar document's bodies move in the x-y plane with three freedoms each: every body moved by forces that no
    joint holds in the plane (a free body, or the first body of a group of jointed bodies without ground; the joints
    of a planar document all keep their bodies' relative motion in the plane) gets an implied planar joint to the
    ground, its frame at the body's origin with z normal to the plane."""
    from ..joints import JOINT_TYPES
    from .joints import JointSpec, joint_rows

    held = grounded_part(mech)
    need, seen = [], set(held)
    for i, name in enumerate(names):
        if not free[i] or name in seen:
            continue
        need.append(i)
        seen |= attached_part(mech, (name,))  # (the jointed bodies this one's plane joint also holds)
    if not need:
        return ()
    ground = [i for i, name in enumerate(names) if mech.bodies[mech.body_index(name)].ground]
    if not ground:
        raise LinkwrightError("bodies", "a planar document needs a ground body to simulate its bodies in the plane")
    g = ground[0]
    rows = joint_rows(JOINT_TYPES["planar"])
    out = []
    for i in need:
        ends = []
        for k in (g, i):
            pos, quat = poses[k]
            R = quat_to_matrix(quat / np.linalg.norm(quat))
            ends.append((R.T @ (poses[i][0] - pos) - com[k], R.T))  # (the frame: the body's origin, world axes)
        out.append(JointSpec(f"{names[i]} (plane)", "planar", g, i, rows, ends[0][0], ends[0][1], ends[1][0],
                             ends[1][1], 0.0, implied=True))
    return tuple(out)


def _driven_part(mech) -> tuple[set, object, dict, list, list]:
    """The bodies the drivers fix (kinematic bodies), the kinematic model of their motion (None when no driver moves
    them), each one's world pose and twist at t = 0 ({name: (T (4, 4), twist (6,))}), and the document's drivers
    split: those of the kinematic model (their joints join held bodies: ground or kinematic) and the others (their
    joints move a body the drivers do not fix: rows of the step, core.contact.joints).  A body is fixed when no motion
    of the mechanism's part attached to the ground, with every driver held, moves it but as an idle freedom does
    (core.kinematics.driver_fixed_masks' second mask, at the design configuration: the count check_drivers makes);
    such a body with a mass is moved by forces (its idle freedom is real in dynamics)."""
    from dataclasses import replace

    from ..kinematics import DrivenMotion, MotionEnd, compile_model, driver_fixed_masks
    from ..run import massive_bodies

    if not mech.drivers:
        return set(), None, {}, [], []
    ground = {b.name for b in mech.bodies if b.ground}
    part = grounded_part(mech)
    joint_of = {j.name: j for j in mech.joints}
    on_part = [i for i, d in enumerate(mech.drivers) if joint_of[d.joint].bodies[0] in part]
    sub = replace(mech, bodies=[b for b in mech.bodies if b.name in part],
                  joints=[j for j in mech.joints if j.bodies[0] in part], drivers=[mech.drivers[i] for i in on_part],
                  contact=None, simulation=None, layout={})
    kin, held = set(), set(ground)
    if sub.drivers:
        km = compile_model(sub)
        fixed_mask, held_mask = driver_fixed_masks(km)
        fixed = {name for name, f in zip(km.body_names, fixed_mask) if f}
        held |= {name for name, f in zip(km.body_names, held_mask) if f}
        # a body the drivers fix but for an idle freedom (an RSSR coupler's spin) is moved as the kinematics moves it
        # when it has no mass; with a mass that freedom is real (contact can spin it): it is moved by forces, held by
        # its joints to the bodies the drivers move
        kin = held - ground - ((held - fixed) & set(massive_bodies(mech)))
    kin_drivers = [i for i, d in enumerate(mech.drivers) if set(joint_of[d.joint].bodies) <= held]
    rheonomic = [i for i in range(len(mech.drivers)) if i not in kin_drivers]
    if not kin_drivers:
        return set(), None, {}, [], rheonomic
    sub = replace(sub, bodies=[b for b in sub.bodies if b.name in held],
                  joints=[j for j in sub.joints if set(j.bodies) <= held],
                  drivers=[mech.drivers[i] for i in kin_drivers])
    km = compile_model(sub)
    got = DrivenMotion(km).at(0.0)
    if isinstance(got, MotionEnd):
        raise LinkwrightError("drivers", f"the driven bodies at t = 0 s: {got.reason}")
    T, tw, _unit = got
    idx = {name: k for k, name in enumerate(km.body_names)}
    at0 = {name: (T[idx[name]], tw[idx[name]]) for name in kin}
    return kin, km, at0, kin_drivers, rheonomic


def _joint_specs(mech, names, dyn, com, poses, rheonomic=()) -> tuple:
    """The JointSpec of every joint with a body moved by forces (dyn): its frame in each body's axes, relative to
    the centre of mass (in the design configuration: the document's poses, core.kinematics.model)."""
    from ..expr import parse_expression
    from ..joints import JOINT_TYPES, joint_design_frame
    from .joints import JointSpec, joint_rows

    drives = {}  # joint name -> its driven coordinate's row (a driver the kinematic bodies do not take)
    for i in rheonomic:
        d = mech.drivers[i]
        j = mech.joint(d.joint)
        if j.name in drives:
            raise LinkwrightError(f"drivers[{i}]", f"joint '{j.name}' has a second driver: the contact time-stepper "
                                                   "drives one coordinate of a joint between bodies moved by forces")
        kind, axis = _coordinate_step(j.type, d.coordinate)
        if kind == "r" and len(joint_rows(JOINT_TYPES[j.type]).rot) != 2:
            raise LinkwrightError(f"drivers[{i}]", f"a {j.type} joint turns about more than one axis: the contact "
                                                   "time-stepper drives the rotation of a joint with one")
        expr = parse_expression(d.value, f"drivers[{i}].value")
        q0 = float(expr.evaluate(0.0)[0][0])  # (LinkwrightError, located, where it has no value at t = 0)
        if abs(q0) > 1e-9:
            # the bodies it moves start in the document's poses, where the coordinate is 0: a driver starting
            # elsewhere would have to jump there within the first step
            raise LinkwrightError(f"drivers[{i}].value", f"is {q0:g} at t = 0 s, but the bodies of joint '{j.name}' start "
                                                         "in the design configuration, where its coordinate is 0: a "
                                                         "driver between bodies moved by forces must start at 0")
        drives[j.name] = (kind, axis, expr, i)
    out = []
    for k, j in enumerate(mech.joints):
        ia, ib = names.index(j.bodies[0]), names.index(j.bodies[1])
        if not (dyn[ia] or dyn[ib]):
            continue  # between two static bodies: nothing to hold
        try:
            rows = joint_rows(JOINT_TYPES[j.type])
        except ValueError as e:
            raise LinkwrightError(f"joints[{k}].type", f"{e}: the contact time-stepper does not simulate it yet")
        F = joint_design_frame(j)
        frames = []
        for i in (ia, ib):
            pos, quat = poses[i]
            R = quat_to_matrix(quat / np.linalg.norm(quat))
            frames.append((R.T @ (F[:3, 3] - pos) - com[i], R.T @ F[:3, :3]))
        out.append(JointSpec(j.name, j.type, ia, ib, rows, frames[0][0], frames[0][1], frames[1][0], frames[1][1],
                             j.pitch_value(), drive=drives.get(j.name)))
    return tuple(out)


def initial_state(model: ContactModel) -> State:
    """The state at t = 0 from the document's poses and velocities."""
    n = model.n_bodies
    p = np.zeros((n, 3))
    q = np.zeros((n, 4))
    v = np.zeros((n, 3))
    w = np.zeros((n, 3))
    for i in range(n):
        pos, quat = model.init_pose[i]
        quat = quat / np.linalg.norm(quat)
        R = quat_to_matrix(quat)
        r = R @ model.com_body[i]
        p[i] = pos + r
        q[i] = quat
        lin, ang = model.init_velocity[i]
        if model.dynamic[i]:
            w[i] = ang
            v[i] = lin + np.cross(ang, r)  # the document gives the origin's velocity
    return State(0.0, p, q, v, w)


def _shared(shapes) -> tuple:
    """The shapes with equal ones replaced by one object (the contact step groups pairs by shape object identity:
    a pile of equal spheres is evaluated with one call per step evaluation)."""
    first: dict = {}
    return tuple(None if s is None else first.setdefault(s, s) for s in shapes)
