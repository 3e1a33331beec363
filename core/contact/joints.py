"""Joints between the bodies of a contact scene as bilateral constraints of the step (docs/contact.md, "Joints").

A joint between bodies A = bodies[0] and B = bodies[1] (either may be static) carries a frame on each body: the
joint's design frame F (core.joints) in A's and in B's body axes.  The joint type's motion M(q) (the joint table,
one row per type) says which relative motions of B's frame in A's are free; every other relative translation and
rotation is fixed, and each fixed one is one scalar constraint c_k(pA, RA, pB, RB) = 0 (metres):

    translations fixed along joint axis e (in A's frame when the type's translations come before its rotations,
    in B's frame when after, as the pin-in-slot):  c = e . (x_B - x_A)     x: the joint origin on each body
    no rotation free:                    c = L (z_A . y_B), L (x_A . z_B), L (y_A . x_B)   (theta_x, theta_y, theta_z)
    one rotation free, about axis a:     c = L (e_i^A . e_a^B) for the two axes i != a
    two rotations free, a then b:        c = L (e_a^A . e_b^B)                             (universal)
    three rotations free:                nothing

(L: a length, the larger radius of gyration of the joint's dynamic bodies, so that the rotation rows are in metres
like the translation rows.)  The step imposes c at the END of the step, c(p+, R+) / h = 0 with p+ = p + h v and
R+ = cayley(h w / 2) R (core.contact.kernels.end_poses), rows in m/s like the contact rows; the constraint impulse is
m_ref G0^T lam, with lam free unknowns in m/s (m_ref the joint's reduced mass) and G0 the gradient of c at the START
of the step (as SHAKE: the impulses act along the start-of-step constraint normals and the closure holds at the end;
the step's Jacobian is then exact without second derivatives of c, and a pendulum's energy stays bounded).

A screw (helical) joint couples its translation along the axis to its rotation about it (a "pitch" step of the
table on the coordinate of a rotation about the same axis): its translation row along the axis becomes
c = e . (x_B - x_A) - (pitch / 2 pi) theta, theta the rotation of B's frame about the axis relative to A's, counted
in turns from the design configuration (the state carries it from step to step: State.joints["turns"]).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..joints import JointType
from ..transforms import RX, TZ, quat_to_matrix
from .bodies import cayley, cayley_jacobian

__all__ = ["JointRows", "JointSpec", "JointPlan", "JointStep", "joint_rows", "joint_constraints", "eval_joint", "joint_wrench",
           "joint_errors", "state_turns"]

_NO_ROTATION = ((2, 1), (0, 2), (1, 0))  # z_A . y_B ~ theta_x, x_A . z_B ~ theta_y, y_A . x_B ~ theta_z


@dataclass(frozen=True)
class JointRows:
    """Which relative motions a joint type fixes: translation axes (of A's or B's joint frame) and rotation rows."""

    trans_frame: str  # "a" or "b": the body whose joint frame carries the fixed translation directions
    trans: tuple[int, ...]  # fixed translation axes (0 x, 1 y, 2 z of the joint frame)
    rot: tuple[tuple[int, int], ...]  # rows e_i^A . e_j^B, as (i, j)
    screw: int = -1  # the axis whose translation follows the rotation about it (helical), -1: none

    @property
    def n(self) -> int:
        """Number of scalar constraints."""
        return len(self.trans) + len(self.rot) + (self.screw >= 0)


def joint_rows(jt: JointType) -> JointRows:
    """The constraints of a joint type, derived from its motion in the joint table (ValueError for a type whose
    translations sit on both sides of its rotations, or couple otherwise than along the axis they turn about)."""
    steps = jt.motion
    screw = -1
    for k, c, kind in steps:
        if kind == "pitch":
            if k > TZ or screw >= 0 or not any(k2 == RX + k and c2 == c and s2 == "1" for k2, c2, s2 in steps):
                raise ValueError(f"a {jt.name} joint couples its coordinates in a way the step cannot hold")
            screw = k
    steps = tuple(st for st in steps if st[2] != "pitch")  # (the coupled translation is the screw row)
    rot_at = [i for i, (k, _c, _s) in enumerate(steps) if k >= RX]
    tr = [(i, k) for i, (k, _c, _s) in enumerate(steps) if k <= TZ]
    if all(i < min(rot_at, default=len(steps)) for i, _k in tr):
        frame = "a"
    elif all(i > max(rot_at) for i, _k in tr):
        frame = "b"
    else:
        raise ValueError(f"a {jt.name} joint has translations on both sides of its rotations")
    free_t = {k for _i, k in tr} | ({screw} if screw >= 0 else set())
    trans = tuple(ax for ax in range(3) if ax not in free_t)
    axes = [steps[i][0] - RX for i in rot_at]
    if len(set(axes)) != len(axes):
        raise ValueError(f"a {jt.name} joint rotates twice about one axis")
    if not axes:
        rot = _NO_ROTATION
    elif len(axes) == 1:
        rot = tuple((i, axes[0]) for i in range(3) if i != axes[0])
    elif len(axes) == 2:
        rot = ((axes[0], axes[1]),)
    else:
        rot = ()
    return JointRows(frame, trans, rot, screw)


@dataclass(frozen=True, eq=False)
class JointSpec:
    """One joint of a ContactModel: its bodies (model indices), constraints and frames in the bodies' axes."""

    name: str
    type: str
    a: int  # bodies[0]
    b: int  # bodies[1]
    rows: JointRows
    rho_a: np.ndarray  # (3,) joint origin relative to A's centre of mass, A's body axes
    axes_a: np.ndarray  # (3, 3) joint frame axes (columns) in A's body axes
    rho_b: np.ndarray
    axes_b: np.ndarray
    pitch: float = 0.0  # helical: advance along the axis per turn (m)
    implied: bool = False  # not a joint of the document: a body of a planar document held in its plane
    drive: tuple | None = None  # a driven coordinate: (kind "t" or "r", axis of the joint frame, DriverExpression,
    # index among the document's drivers): one more row, the coordinate at the end of the step minus its value then

    @property
    def n(self) -> int:
        """Number of scalar rows (the joint's constraints and its driven coordinate's)."""
        return self.rows.n + (self.drive is not None)

    @property
    def angle_axis(self) -> int:
        """The axis whose rotation angle the state tracks in turns (a screw's, a driven rotation's), -1: none."""
        if self.rows.screw >= 0:
            return self.rows.screw
        return self.drive[1] if self.drive is not None and self.drive[0] == "r" else -1


def joint_constraints(js: JointSpec, length: float, pA, RA, pB, RB, turn: float = 0.0,
                      target: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The constraint values c (n,) in metres at these poses (centres of mass p, rotations R) and their gradients
    G (n, 12) with respect to (pA, thetaA, pB, thetaB) (theta: world rotation perturbations, R -> (I + [dtheta]x) R).
    turn: a screw joint's (or driven rotation's) angle (rad) at a nearby configuration (the start of the step): the
    angle is taken within half a turn of it.  target: a driven joint's coordinate value (m or rad): its last row is
    the coordinate minus target (a rotation times length)."""
    rA, rB = RA @ js.rho_a, RB @ js.rho_b
    EA, EB = RA @ js.axes_a, RB @ js.axes_b  # world joint axes (columns)
    xA, xB = pA + rA, pB + rB
    d = xB - xA
    rows = js.rows
    n = js.n
    c = np.empty(n)
    G = np.zeros((n, 12))
    E = EA if rows.trans_frame == "a" else EB
    for k, ax in enumerate(rows.trans):
        e = E[:, ax]
        c[k] = e @ d
        G[k, 0:3] = -e
        G[k, 6:9] = e
        if rows.trans_frame == "a":  # e turns with A: d(e . d) = e . (dxB - dxA) + dthetaA . (e x d)
            G[k, 3:6] = -np.cross(xB - pA, e)
            G[k, 9:12] = np.cross(rB, e)
        else:
            G[k, 3:6] = -np.cross(rA, e)
            G[k, 9:12] = np.cross(xA - pB, e)
    for k, (i, j) in enumerate(rows.rot, start=len(rows.trans)):
        u, w = EA[:, i], EB[:, j]
        c[k] = length * (u @ w)
        g = length * np.cross(u, w)  # d(u . w) = (u x w) . (dthetaA - dthetaB)
        G[k, 3:6] = g
        G[k, 9:12] = -g
    if rows.screw >= 0:
        # the translation along the axis minus pitch / 2 pi times the rotation about it
        k, ax = rows.n - 1, rows.screw
        e = E[:, ax]
        theta, dth = _screw_angle(EA, EB, ax, turn)
        lead = js.pitch / (2.0 * np.pi)
        c[k] = e @ d - lead * theta
        G[k, 0:3], G[k, 6:9] = -e, e
        if rows.trans_frame == "a":
            G[k, 3:6] = -np.cross(xB - pA, e) - lead * dth
            G[k, 9:12] = np.cross(rB, e) + lead * dth
        else:
            G[k, 3:6] = -np.cross(rA, e) - lead * dth
            G[k, 9:12] = np.cross(xA - pB, e) + lead * dth
    if js.drive is not None:
        # the driven coordinate (counted from the design configuration, as the kinematics counts it) minus its value
        k, (kind, ax) = n - 1, js.drive[:2]
        if kind == "t":  # the translation along the joint axis (in the frame that carries the translations)
            e = E[:, ax]
            c[k] = e @ d - target
            G[k, 0:3], G[k, 6:9] = -e, e
            if rows.trans_frame == "a":
                G[k, 3:6], G[k, 9:12] = -np.cross(xB - pA, e), np.cross(rB, e)
            else:
                G[k, 3:6], G[k, 9:12] = -np.cross(rA, e), np.cross(xA - pB, e)
        else:  # the rotation about the joint axis, in metres (times length, as the rotation rows)
            theta, dth = _screw_angle(EA, EB, ax, turn)
            c[k] = length * (theta - target)
            G[k, 3:6], G[k, 9:12] = length * dth, -length * dth  # (d theta = dth . (dthetaA - dthetaB))
    return c, G


def _screw_angle(EA, EB, ax, turn):
    """The rotation theta of B's joint frame about axis ax relative to A's, within half a turn of `turn`, and
    g with d theta = g . (dthetaA - dthetaB)."""
    i, j = (ax + 1) % 3, (ax + 2) % 3  # theta = atan2(e_j^A . e_i^B, e_i^A . e_i^B)
    s, co = EA[:, j] @ EB[:, i], EA[:, i] @ EB[:, i]
    ang = np.arctan2(s, co)
    theta = turn + (ang - turn + np.pi) % (2.0 * np.pi) - np.pi
    ds, dc = np.cross(EA[:, j], EB[:, i]), np.cross(EA[:, i], EB[:, i])
    return theta, (co * ds - s * dc) / (s * s + co * co)


def eval_joint(js: JointSpec, length: float, h: float, pA0, RA0, vA, wA, dynA: bool, pB0, RB0, vB, wB,
               dynB: bool, turn: float = 0.0, target: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The joint's rows c(p+, R+) / h (n,) at the end-of-step poses of velocities (vA, wA), (vB, wB) (a static body
    keeps its pose) and their Jacobian (n, 12) with respect to (vA, wA, vB, wB)."""
    if dynA:
        pA, RA, TA = pA0 + h * vA, cayley(0.5 * h * wA) @ RA0, cayley_jacobian(wA, h)
    else:
        pA, RA, TA = pA0, RA0, None
    if dynB:
        pB, RB, TB = pB0 + h * vB, cayley(0.5 * h * wB) @ RB0, cayley_jacobian(wB, h)
    else:
        pB, RB, TB = pB0, RB0, None
    c, G = joint_constraints(js, length, pA, RA, pB, RB, turn, target)
    J = np.zeros_like(G)
    if dynA:  # dp+ = h dv, dtheta+ = T dw
        J[:, 0:3] = G[:, 0:3]
        J[:, 3:6] = G[:, 3:6] @ TA / h
    if dynB:
        J[:, 6:9] = G[:, 6:9]
        J[:, 9:12] = G[:, 9:12] @ TB / h
    return c / h, J


def joint_wrench(G0: np.ndarray, m_ref: float, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The constraint impulses m_ref G0^T lam on A and on B as wrenches [impulse, angular impulse about the centre of
    mass] (6 each), for start-of-step gradients G0 (n, 12)."""
    W = m_ref * (lam @ G0)
    return W[0:6], W[6:12]


class JointPlan:
    """The joints' place in a step's unknowns (after the pair blocks, from offset off0): per joint its unknowns, its
    dynamic bodies' places among the velocities (-1: static), its reduced mass and rotation length, its element's
    global columns [nuA (dynamic A), nuB (dynamic B), lam]; constant for a model."""

    def __init__(self, model, off0: int):
        self.specs = model.joints
        slot = model.dynamic_slot
        self.n, self.off, self.ka, self.kb, self.m_ref, self.length, self.cols = [], [], [], [], [], [], []
        off = off0
        for js in self.specs:
            ka, kb = int(slot[js.a]), int(slot[js.b])
            m_ref = float(model.reduced_mass(js.a, js.b))  # (a static or kinematic body: infinite mass)
            nc = js.n
            cols = [6 * k + np.arange(6) for k in (ka, kb) if k >= 0] + [off + np.arange(nc)]
            c = np.concatenate(cols)
            c.setflags(write=False)
            self.n.append(nc)
            self.off.append(off)
            self.ka.append(ka)
            self.kb.append(kb)
            self.m_ref.append(float(m_ref))
            self.length.append(float(max(model.gyration[js.a], model.gyration[js.b])))
            self.cols.append(c)
            off += nc
        self.start, self.size = off0, off - off0


class JointStep:
    """The joints' terms in one step's equations: start-of-step constraint gradients G0 and the velocity changes per
    unit lam they give their bodies (K = M^-1 m_ref G0^T), the end-of-step rows, their Jacobian blocks and, after the
    solve, the reactions."""

    def __init__(self, plan: JointPlan, model, state, R0: np.ndarray, Sinv: np.ndarray, h: float):
        self.plan, self.h = plan, float(h)
        self.dyn = model.dynamic
        self.p0, self.R0 = state.p, R0
        self.turn0 = state_turns(model, state)
        # the driven coordinates' values at the end of the step ("" or why a driver has none there)
        self.target, self.failure = np.zeros(len(plan.specs)), ""
        for q, js in enumerate(plan.specs):
            if js.drive is not None:
                val, _d1, _d2, bad, why = js.drive[2].evaluate_until([state.t + h])
                if bad == 0:
                    self.failure = f"{js.drive[2].location}: {why}"
                self.target[q] = val[0]
        self.c0, self.G0, self.KA, self.KB = [], [], [], []  # (c0: the rows at the start, the relaxed problem's)
        for q, js in enumerate(plan.specs):
            c0, G0 = joint_constraints(js, plan.length[q], state.p[js.a], R0[js.a], state.p[js.b], R0[js.b],
                                       self.turn0[q], self.target[q])
            m = plan.m_ref[q]
            self.c0.append(c0)
            self.G0.append(G0)
            self.KA.append(Sinv[plan.ka[q]] @ (m * G0[:, 0:6].T) if plan.ka[q] >= 0 else None)
            self.KB.append(Sinv[plan.kb[q]] @ (m * G0[:, 6:12].T) if plan.kb[q] >= 0 else None)

    def add(self, z: np.ndarray, Fv: np.ndarray, Fb: np.ndarray, jac: bool) -> list:
        """Write the joint rows into Fv, subtract their velocity changes from the body rows Fb (nb, 6); with jac, the
        elements [(cols (1, nl), block (1, nl, nl))] of the step Jacobian in each joint's columns: body rows -K
        (against lam), joint rows dc+/h (against the velocities), zero against lam."""
        plan, h = self.plan, self.h
        out = []
        zero = np.zeros(3)
        for q, js in enumerate(plan.specs):
            ka, kb, o, nc = plan.ka[q], plan.kb[q], plan.off[q], plan.n[q]
            lam = z[o:o + nc]
            vA, wA = (z[6 * ka:6 * ka + 3], z[6 * ka + 3:6 * ka + 6]) if ka >= 0 else (zero, zero)
            vB, wB = (z[6 * kb:6 * kb + 3], z[6 * kb + 3:6 * kb + 6]) if kb >= 0 else (zero, zero)
            r, J = eval_joint(js, plan.length[q], h, self.p0[js.a], self.R0[js.a], vA, wA, ka >= 0,
                              self.p0[js.b], self.R0[js.b], vB, wB, kb >= 0, self.turn0[q], self.target[q])
            Fv[o:o + nc] = r
            if ka >= 0:
                Fb[ka] -= self.KA[q] @ lam
            if kb >= 0:
                Fb[kb] -= self.KB[q] @ lam
            if not jac:
                continue
            nl = plan.cols[q].size
            blk = np.zeros((1, nl, nl))
            i = 0
            for k, K, jc in ((ka, self.KA[q], slice(0, 6)), (kb, self.KB[q], slice(6, 12))):
                if k >= 0:
                    blk[0, i:i + 6, nl - nc:] = -K
                    blk[0, nl - nc:, i:i + 6] = J[:, jc]
                    i += 6
            out.append((plan.cols[q][None, :], blk))
        return out

    def end_turns(self, new) -> np.ndarray:
        """(J,) each screw joint's (and driven rotation's) angle at the end-of-step state `new` (counted from the
        start's; 0 for the other joints): the next step's reference (State.joints["turns"])."""
        out = np.zeros(len(self.plan.specs))
        for q, js in enumerate(self.plan.specs):
            if js.angle_axis >= 0:
                EA = quat_to_matrix(new.q[js.a]) @ js.axes_a
                EB = quat_to_matrix(new.q[js.b]) @ js.axes_b
                out[q] = _screw_angle(EA, EB, js.angle_axis, self.turn0[q])[0]
        return out

    def driver_impulses(self, z: np.ndarray) -> list:
        """[(driver index, impulse)] of the driven joints' coordinates over the step: the generalised impulse the
        driver gives its coordinate, m_ref lam (a translation, N s) or m_ref length lam (a rotation, N m s)."""
        plan = self.plan
        out = []
        for q, js in enumerate(plan.specs):
            if js.drive is not None:
                lam = z[plan.off[q] + plan.n[q] - 1]
                out.append((js.drive[3], plan.m_ref[q] * lam * (plan.length[q] if js.drive[0] == "r" else 1.0)))
        return out

    def body_wrenches(self, z: np.ndarray) -> list:
        """[(body, F, T)] the impulse each joint gives each of its bodies that is not static over the step: F (N s)
        and the angular impulse T about the body's centre of mass at the start of the step (N m s), world frame."""
        plan = self.plan
        out = []
        for q, js in enumerate(plan.specs):
            lam = z[plan.off[q]:plan.off[q] + plan.n[q]]
            WA, WB = joint_wrench(self.G0[q], plan.m_ref[q], lam)
            for body, k, W in ((js.a, plan.ka[q], WA), (js.b, plan.kb[q], WB)):
                if k >= 0:
                    out.append((body, W[0:3], W[3:6]))
        return out

    def impulses(self, z: np.ndarray) -> np.ndarray:
        """(J, 6) the constraint impulse each joint gives its bodies[1] over the step: [linear impulse (N s), angular
        impulse about the joint origin (N m s)], world frame, along the start-of-step constraint gradients."""
        plan = self.plan
        out = np.zeros((len(plan.specs), 6))
        for q, js in enumerate(plan.specs):
            lam = z[plan.off[q]:plan.off[q] + plan.n[q]]
            _WA, WB = joint_wrench(self.G0[q], plan.m_ref[q], lam)
            rB = self.R0[js.b] @ js.rho_b
            out[q, 0:3] = WB[0:3]
            out[q, 3:6] = WB[3:6] - np.cross(rB, WB[0:3])
        return out


def state_turns(model, state) -> np.ndarray:
    """(J,) the screw joints' rotation angles a state carries (zeros: the design configuration)."""
    turns = state.joints.get("turns")
    return turns if turns is not None and turns.size == len(model.joints) else np.zeros(len(model.joints))


def joint_errors(model, state) -> np.ndarray:
    """(J, 2) how far each joint of the model is from closed at a state: the largest translation row, the screw row
    included (m), and the largest rotation row (rad, to first order)."""
    out = np.zeros((len(model.joints), 2))
    turns = state_turns(model, state)
    for k, js in enumerate(model.joints):
        R = [quat_to_matrix(state.q[i]) for i in (js.a, js.b)]
        c, _ = joint_constraints(js, 1.0, state.p[js.a], R[0], state.p[js.b], R[1], turns[k])
        c = c[:js.rows.n]  # (the constraints; a driven coordinate's row is how far it is from its value)
        nt, nr = len(js.rows.trans), len(js.rows.rot)
        out[k] = (max(np.abs(c[:nt]).max(initial=0.0), np.abs(c[nt + nr:]).max(initial=0.0)),
                  np.abs(c[nt:nt + nr]).max(initial=0.0))
    return out
