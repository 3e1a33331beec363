"""The kinematic model: a Mechanism compiled once into flat arrays and index maps (Pinocchio style).

Frame notation: ``oTk`` is the world pose of body k; ``aTb`` the pose of b in a. A joint j between
a = bodies[0] and b = bodies[1] gives aTb(q) = Fa · M(q) · Fb^-1, where F is the joint's design frame
expressed in body a (Fa) and body b (Fb), and M(q) its motion (a product of elementary motions).
Every joint is padded to three motion steps (identity steps have scale 0), so whole-mechanism
evaluations are batched numpy operations over (n_joints, 3, 4, 4) arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import LinkwrightError
from ..expr import DriverExpression, parse_expression
from ..joints import JOINT_TYPES, joint_design_frame
from ..model import Mechanism
from ..structure import analyze
from ..transforms import from_rotation_translation, inverse, quat_to_matrix

__all__ = ["KinematicModel", "compile_model", "MAX_STEPS"]

MAX_STEPS = 3  # most elementary motions in one joint (spherical, planar)
PLANAR_ROWS = np.array([0, 1, 5])  # (x, y, rotation about z) of the 6-row loop residual / twist


@dataclass(eq=False)
class KinematicModel:
    """Constant, flat description of a mechanism for the solvers (never changed by an algorithm)."""

    name: str
    space: str  # "planar" or "spatial"
    body_names: list[str]
    joint_names: list[str]
    joint_types: list[str]  # the format's type of each joint ("revolute", "spherical", ...)
    coord_names: list[str]  # "<joint>" or "<joint>.<k>" for multi-coordinate joints
    nq: int  # number of joint coordinates
    q_offset: np.ndarray  # (m,) first coordinate of each joint
    q_dof: np.ndarray  # (m,) coordinates of each joint
    coord_joint: np.ndarray  # (nq,) joint of each coordinate
    ja: np.ndarray  # (m,) body index of bodies[0]
    jb: np.ndarray  # (m,) body index of bodies[1]
    joint_at: np.ndarray  # (m, 3) joint location, world, design configuration
    Fa: np.ndarray  # (m, 4, 4) joint design frame in body a
    Fb_inv: np.ndarray  # (m, 4, 4) inverse of the joint design frame in body b
    step_kind: np.ndarray  # (m, 3) elementary motion index (TX..RZ) of each step
    step_coord: np.ndarray  # (m, 3) global coordinate index of each step (0 for padding)
    step_scale: np.ndarray  # (m, 3) factor on the coordinate (0 for padding; pitch/2pi for helical)
    design_pose: np.ndarray  # (n, 4, 4) world pose of each body in the design configuration
    roots: np.ndarray  # bodies held at their design pose (ground and roots of parts without ground)
    floating_roots: int  # roots that are not ground: parts whose 6 (3) freedoms are held fixed here
    levels: list[tuple[np.ndarray, np.ndarray, np.ndarray]]  # per tree depth: (child, parent, joint)
    tree_forward: np.ndarray  # (m,) True when the tree goes from bodies[0] (parent) to bodies[1]
    tree_mask: np.ndarray  # (m,) joint is in the spanning tree
    chords: np.ndarray  # (L,) joint closing each fundamental loop
    rows: np.ndarray  # residual rows kept per loop (all 6, or x, y, rz for planar documents)
    pair_loop: np.ndarray  # (P,) loop of each (loop, joint, step) Jacobian contribution
    pair_joint: np.ndarray  # (P,) joint of each contribution
    pair_step: np.ndarray  # (P,) step (0..2) of each contribution
    pair_coef: np.ndarray  # (P,) +1/-1: side of the loop the step moves
    pair_col: np.ndarray  # (P,) coordinate column of each contribution
    point_names: list[str]  # "<body>.<point>"
    point_body: np.ndarray  # (np,) body of each named point
    point_local: np.ndarray  # (np, 3) named points in their body's frame
    drivers: list[DriverExpression] = field(default_factory=list)
    driven: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # (nd,) coordinates
    unknown: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # (nu,) the others
    length_scale: float = 1.0  # size of the mechanism (m), for tolerances

    @property
    def n_bodies(self) -> int:
        """Number of bodies."""
        return len(self.body_names)

    @property
    def n_joints(self) -> int:
        """Number of joints."""
        return len(self.joint_names)

    @property
    def n_loops(self) -> int:
        """Number of fundamental loops (loop-closure equations)."""
        return len(self.chords)

    @property
    def n_rows(self) -> int:
        """Number of scalar loop-closure equations."""
        return len(self.chords) * len(self.rows)

    @property
    def floating_freedoms(self) -> int:
        """Rigid-body freedoms of the floating roots (3 a part in a planar document, 6 in space): no coordinates."""
        return (3 if self.space == "planar" else 6) * self.floating_roots


def _body_pose(body) -> np.ndarray:
    if body.pose is None:
        return np.eye(4)
    return from_rotation_translation(quat_to_matrix(body.pose.orientation), body.pose.position)


def compile_model(mech: Mechanism, drivers: bool = True) -> KinematicModel:
    """Compile `mech` into a KinematicModel (LinkwrightError for unusable drivers)."""
    st = analyze(mech)
    n, m = len(mech.bodies), len(mech.joints)
    bindex = {b.name: i for i, b in enumerate(mech.bodies)}
    dofs = np.array([JOINT_TYPES[j.type].dof(mech.space) or 0 for j in mech.joints], dtype=np.int64)
    q_offset = np.concatenate(([0], np.cumsum(dofs)[:-1])).astype(np.int64) if m else np.zeros(0, np.int64)
    nq = int(dofs.sum())
    coord_names: list[str] = []
    coord_joint = np.zeros(nq, dtype=np.int64)
    for k, j in enumerate(mech.joints):
        for c in range(dofs[k]):
            coord_names.append(j.name if dofs[k] == 1 else f"{j.name}.{c}")
            coord_joint[q_offset[k] + c] = k

    design = np.stack([_body_pose(b) for b in mech.bodies]) if n else np.zeros((0, 4, 4))
    design_inv = inverse(design) if n else design
    ja = np.array([bindex[j.bodies[0]] for j in mech.joints], dtype=np.int64)
    jb = np.array([bindex[j.bodies[1]] for j in mech.joints], dtype=np.int64)
    Fa = np.zeros((m, 4, 4))
    Fb_inv = np.zeros((m, 4, 4))
    kind = np.zeros((m, MAX_STEPS), dtype=np.int64)
    coord = np.zeros((m, MAX_STEPS), dtype=np.int64)
    scale = np.zeros((m, MAX_STEPS))
    at = np.zeros((m, 3))
    for k, j in enumerate(mech.joints):
        jt = JOINT_TYPES[j.type]
        F = joint_design_frame(j)
        at[k] = j.at
        Fa[k] = design_inv[ja[k]] @ F
        Fb_inv[k] = inverse(design_inv[jb[k]] @ F)
        for s, ((ek, c, _), sc) in enumerate(zip(jt.motion, jt.scales(j.pitch))):
            kind[k, s], coord[k, s], scale[k, s] = ek, q_offset[k] + c, sc

    # Spanning forest from the structure analysis, grouped by depth so each level is one batched product.
    parent = st.tree_parent
    depth = np.full(n, -1, dtype=np.int64)
    roots = [i for i in range(n) if parent[i] is None]
    for r in roots:
        depth[r] = 0
    for i in range(n):  # (each body's depth once: up to the first body of known depth, then down again)
        up = []
        while depth[i] < 0:
            up.append(i)
            i = parent[i][0]
        for j in reversed(up):
            depth[j] = depth[parent[j][0]] + 1
    levels = []
    by_depth = np.argsort(depth, kind="stable")  # (bodies of one depth in their order)
    cuts = np.searchsorted(depth[by_depth], np.arange(1, int(depth.max(initial=0)) + 2))
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        kids = [int(i) for i in by_depth[lo:hi]]
        levels.append((np.array(kids, dtype=np.int64),
                       np.array([parent[i][0] for i in kids], dtype=np.int64),
                       np.array([parent[i][1] for i in kids], dtype=np.int64)))
    tree_mask = np.zeros(m, dtype=bool)
    tree_mask[st.tree_joints] = True
    tree_forward = np.ones(m, dtype=bool)
    for i in range(n):
        if parent[i] is not None:
            p, k = parent[i]
            tree_forward[k] = ja[k] == p

    # The tree joints of a chord's loop: those on the paths from its two bodies up to their nearest common ancestor
    # (the steps on the common path from the root cancel exactly), each with the sign of its effect on the chord's
    # a side (+) or b side (-): a walk up the deeper side first, as long as the loop.
    def loop_path(a: int, b: int) -> dict[int, int]:
        out: dict[int, int] = {}
        while a != b and (parent[a] is not None or parent[b] is not None):
            up_a = parent[b] is None or (parent[a] is not None and depth[a] >= depth[b])
            p, k = parent[a] if up_a else parent[b]
            out[k] = (1 if tree_forward[k] else -1) * (1 if up_a else -1)
            if up_a:
                a = p
            else:
                b = p
        return out

    chords = np.array(st.chords, dtype=np.int64)
    pl, pj, ps, pc = [], [], [], []
    for li, c in enumerate(chords):
        coefs = {int(c): 1}  # the chord's own steps move the "b via the chord" side
        coefs.update(loop_path(int(ja[c]), int(jb[c])))
        for k, v in sorted(coefs.items()):
            for s in range(MAX_STEPS):
                if scale[k, s] != 0.0:
                    pl.append(li), pj.append(k), ps.append(s), pc.append(float(v))
    pair_joint = np.array(pj, dtype=np.int64)
    pair_step = np.array(ps, dtype=np.int64)

    pnames, pbody, plocal = [], [], []
    for i, b in enumerate(mech.bodies):
        for pname, p in b.points.items():
            pnames.append(f"{b.name}.{pname}")
            pbody.append(i)
            plocal.append(p)
    extent = max(float(np.abs(at).max(initial=0.0)), float(np.abs(np.array(plocal, dtype=float)).max(initial=0.0)))

    km = KinematicModel(
        name=mech.name,
        space=mech.space,
        body_names=[b.name for b in mech.bodies],
        joint_names=[j.name for j in mech.joints],
        joint_types=[j.type for j in mech.joints],
        coord_names=coord_names,
        nq=nq,
        q_offset=q_offset,
        q_dof=dofs,
        coord_joint=coord_joint,
        ja=ja,
        jb=jb,
        joint_at=at,
        Fa=Fa,
        Fb_inv=Fb_inv,
        step_kind=kind,
        step_coord=coord,
        step_scale=scale,
        design_pose=design,
        roots=np.array(roots, dtype=np.int64),
        floating_roots=st.floating_parts,
        levels=levels,
        tree_forward=tree_forward,
        tree_mask=tree_mask,
        chords=chords,
        rows=PLANAR_ROWS if mech.space == "planar" else np.arange(6),
        pair_loop=np.array(pl, dtype=np.int64),
        pair_joint=pair_joint,
        pair_step=pair_step,
        pair_coef=np.array(pc),
        pair_col=coord[pair_joint, pair_step] if len(pj) else np.zeros(0, dtype=np.int64),
        point_names=pnames,
        point_body=np.array(pbody, dtype=np.int64),
        point_local=np.array(plocal, dtype=float).reshape(-1, 3),
        length_scale=max(1.0, extent),
    )
    if drivers:
        exprs, driven = [], []
        for i, d in enumerate(mech.drivers):
            loc = f"drivers[{i}]"
            if d.joint not in km.joint_names:
                raise LinkwrightError(f"{loc}.joint", f"unknown joint '{d.joint}'")
            k = km.joint_names.index(d.joint)
            if not 0 <= d.coordinate < dofs[k]:
                raise LinkwrightError(f"{loc}.coordinate", f"joint '{d.joint}' has {dofs[k]} coordinate(s)")
            col = int(q_offset[k] + d.coordinate)
            if col in driven:
                raise LinkwrightError(loc, f"joint '{d.joint}' coordinate {d.coordinate} is driven twice")
            exprs.append(parse_expression(d.value, f"{loc}.value"))
            driven.append(col)
        km.drivers = exprs
        km.driven = np.array(driven, dtype=np.int64)
        km.unknown = np.array([c for c in range(nq) if c not in set(driven)], dtype=np.int64)
    else:
        km.unknown = np.arange(nq, dtype=np.int64)
    return km
