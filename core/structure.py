"""Structure of a mechanism graph: incidence matrix, loops, chain class and Gruebler–Kutzbach mobility.

A pure function of the model, cheap enough to re-run on every edit (any half-drawn graph is accepted)."""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from .joints import joint_dof
from .model import Mechanism

__all__ = ["StructureReport", "analyze", "structure_key", "attached_part", "grounded_part"]


@dataclass(frozen=True)
class StructureReport:
    """Everything the structure analysis finds; indices refer to document order of bodies and joints."""

    space: str
    bodies: list[str]  # body names, document order (rows of the incidence matrix)
    joints: list[str]  # joint names, document order (columns)
    incidence: np.ndarray  # (n_bodies, n_joints) int8, a_ij = 1 when joint j attaches body i
    adjacency: list[list[tuple[int, int]]]  # per body: (neighbour body, joint) pairs
    degrees: list[int]  # joints per body (1 unary, 2 binary, 3 ternary, ...)
    grounds: list[int]  # indices of bodies marked ground
    ground: int | None  # the ground used as the root (first marked), None if none
    components: list[list[int]]  # connected components (body indices), the ground's first
    loops: int  # independent loops L = j - n + c (all ground bodies counted as one)
    fundamental_loops: list[list[int]]  # per loop, joint indices in traversal order, from the body nearest the ground
    loop_directions: list[list[int]]  # per loop joint: +1 traversed bodies[0] -> bodies[1], else -1
    loop_bodies: list[list[int]]  # per loop, the bodies visited (same order; body k is left by joint k); a loop
    # through two ground bodies passes from one to the other through the fixed frame, without a joint
    tree_joints: list[int]  # joints of the spanning forest (rooted at ground)
    chords: list[int]  # joints closing one fundamental loop each
    tree_parent: list[tuple[int, int] | None]  # per body: (parent body, joint) in the forest, None at roots
    chain: str  # "open" (no loop), "closed" (every body and joint on a loop), "mixed"
    simple: bool  # every body binary
    mobility: int  # Gruebler–Kutzbach count
    mobility_formula: str  # e.g. "M = 3(4-1) - 2·4 = 1"
    joint_classes: dict[int, int]  # constraints imposed (class) -> number of joints of that class
    coordinates: int  # sum of joint freedoms (joint coordinates)
    dependent_coordinates: int  # coordinates fixed by the loops (coordinates - mobility)
    n_drivers: int
    warnings: list[str] = field(default_factory=list)
    # the one of `warnings` that compares the drivers with the Gruebler–Kutzbach count ("" if none): a caller that has
    # the rank-based count shows its statement instead (core.kinematics.mobility.report_warnings), which sets idle
    # freedoms aside (the RSSR's coupler spin) and is what the kinematics' driver check goes by
    driver_warning: str = ""
    # the one of `warnings` that says the Gruebler–Kutzbach count finds no freedom (M <= 0: "it cannot move unless its
    # geometry is special"; "" if none): a caller whose rank-based count finds the geometry moving says so instead
    # (core.kinematics.mobility.report_warnings)
    gruebler_warning: str = ""
    # parts attached to no ground (a lone body is one; without any ground, one part is the fixed frame): each has 3
    # (planar) or 6 rigid-body freedoms, counted in the mobility, that no joint coordinate holds and no driver fixes
    floating_parts: int = 0

    @property
    def floating_freedoms(self) -> int:
        """The floating parts' rigid-body freedoms: 3 each in a planar document, 6 in space."""
        return (3 if self.space == "planar" else 6) * self.floating_parts

    def to_json(self) -> dict:
        """The report as JSON-ready data (names instead of indices)."""
        return {
            "space": self.space,
            "bodies": self.bodies,
            "joints": self.joints,
            "incidence": self.incidence.astype(int).tolist(),
            "mobility": self.mobility,
            "mobility_formula": self.mobility_formula,
            "loops": self.loops,
            "fundamental_loops": [[self.joints[j] for j in loop] for loop in self.fundamental_loops],
            "chain": self.chain,
            "simple": self.simple,
            "degrees": {b: d for b, d in zip(self.bodies, self.degrees)},
            "ground": None if self.ground is None else self.bodies[self.ground],
            "components": [[self.bodies[b] for b in comp] for comp in self.components],
            "joint_classes": {str(k): v for k, v in sorted(self.joint_classes.items(), reverse=True)},
            "coordinates": self.coordinates,
            "dependent_coordinates": self.dependent_coordinates,
            "drivers": self.n_drivers,
            "warnings": self.warnings,
        }


def attached_part(mech: Mechanism, seeds: Iterable[str]) -> set[str]:
    """The bodies `seeds` and every body joints attach to them, directly or through others."""
    part = set(seeds)
    grew = True
    while grew:
        grew = False
        for j in mech.joints:
            if (j.bodies[0] in part) != (j.bodies[1] in part):
                part.update(j.bodies)
                grew = True
    return part


def grounded_part(mech: Mechanism) -> set[str]:
    """The ground bodies and the bodies joints attach to them, directly or through others (every other body is in a
    part that floats: its rigid-body freedoms are no joint's coordinates)."""
    return attached_part(mech, (b.name for b in mech.bodies if b.ground))


def _formula(space: str, n_eff: int, classes: Counter, mobility: int) -> str:
    if n_eff == 0:  # (no bodies: "M = 3(0-1) = 0" did not add up)
        return "M = 0 (no bodies)"
    lam = 3 if space == "planar" else 6
    terms = "".join(f" - {c}·{k}" for c, k in sorted(classes.items(), reverse=True) if c > 0)
    return f"M = {lam}({n_eff}-1){terms} = {mobility}"


def structure_key(mech: Mechanism) -> tuple:
    """Everything analyze reads of `mech` (one linear pass): equal keys, equal reports (a caller keeps its report
    while the key stays the same: a node moved, a joint's `at` or a mass typed)."""
    from .run import run_kind

    return (mech.space, tuple((b.name, bool(b.ground), b.shape is not None) for b in mech.bodies),
            tuple((j.name, j.type, tuple(j.bodies)) for j in mech.joints), len(mech.drivers), run_kind(mech))


def analyze(mech: Mechanism) -> StructureReport:
    """Analyse the body-joint graph of `mech` (never raises for any graph the edit API can build)."""
    names = [b.name for b in mech.bodies]
    index = {nm: i for i, nm in enumerate(names)}
    n, m = len(names), len(mech.joints)
    end0 = [index[j.bodies[0]] for j in mech.joints]
    end1 = [index[j.bodies[1]] for j in mech.joints]
    ends = np.array([end0, end1], dtype=np.int64).T.reshape(m, 2)
    adjacency: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for k in range(m):
        a, b = end0[k], end1[k]
        adjacency[a].append((b, k))
        adjacency[b].append((a, k))
    incidence = np.zeros((n, m), dtype=np.int8)
    if m:
        cols = np.arange(m)
        incidence[ends[:, 0], cols] = 1
        incidence[ends[:, 1], cols] = 1
    degrees = [len(a) for a in adjacency]
    grounds = [i for i, b in enumerate(mech.bodies) if b.ground]
    ground = grounds[0] if grounds else None

    # Spanning forest by breadth-first search, rooted at the ground (shallow trees keep loops short).
    parent: list[tuple[int, int] | None] = [None] * n
    depth = [-1] * n
    components: list[list[int]] = []
    tree_joints: list[int] = []
    # All ground bodies are one fixed frame: they start the first search together (one component, several roots),
    # so a loop may run from one ground to another and close through the fixed frame.
    starts: list[list[int]] = ([grounds] if grounds else []) + [[i] for i in range(n)]
    for roots in starts:
        if depth[roots[0]] >= 0:
            continue
        for r in roots:
            depth[r] = 0
        comp = list(roots)
        queue = deque(roots)
        while queue:
            u = queue.popleft()
            for v, k in adjacency[u]:
                if depth[v] < 0:
                    depth[v] = depth[u] + 1
                    parent[v] = (u, k)
                    tree_joints.append(k)
                    comp.append(v)
                    queue.append(v)
        components.append(comp)
    in_tree = np.zeros(m, dtype=bool)
    in_tree[tree_joints] = True
    chords = [k for k in range(m) if not in_tree[k]]

    loops_j: list[list[int]] = []
    loops_d: list[list[int]] = []
    loops_b: list[list[int]] = []
    on_loop = np.zeros(m, dtype=bool)
    for k in chords:
        u, v = end0[k], end1[k]
        # Walk both ends up to their lowest common ancestor.
        up_v: list[tuple[int, int]] = []  # (body left, joint) going v -> lca
        up_u: list[tuple[int, int]] = []
        a, b = v, u
        while depth[a] > depth[b]:
            p, jk = parent[a]  # type: ignore[misc]
            up_v.append((a, jk))
            a = p
        while depth[b] > depth[a]:
            p, jk = parent[b]  # type: ignore[misc]
            up_u.append((b, jk))
            b = p
        while a != b and parent[a] is not None:  # two different grounds at the top: joined by the fixed frame
            p, jk = parent[a]  # type: ignore[misc]
            up_v.append((a, jk))
            a = p
            p, jk = parent[b]  # type: ignore[misc]
            up_u.append((b, jk))
            b = p
        # Traversal: u --chord--> v --up--> lca --down--> u.
        seq = [(u, k)] + up_v
        down = []
        prev = b  # the top of u's side: the common ancestor, or the other ground
        for body, jk in reversed(up_u):
            down.append((prev, jk))
            prev = body
        seq += down
        # Read the loop from the body nearest the ground (the common ancestor): the four-bar reads A-B-C-D.
        start = len(up_v) + 1
        seq = seq[start:] + seq[:start]
        joints_seq = [jk for _, jk in seq]
        bodies_seq = [body for body, _ in seq]
        dirs = [1 if end0[jk] == body else -1 for body, jk in seq]
        loops_j.append(joints_seq)
        loops_d.append(dirs)
        loops_b.append(bodies_seq)
    n_eff = n - max(len(grounds) - 1, 0)  # several grounds count as one fixed frame
    loops = m - n_eff + len(components)
    for joints_seq in loops_j:
        on_loop[joints_seq] = True

    # A body lies on a loop when one of its joints does (non-bridge joints are exactly the loop joints).
    body_on_loop = np.zeros(n, dtype=bool)
    if m:
        body_on_loop[ends[on_loop].ravel()] = True
    if loops == 0:
        chain = "open"
    elif on_loop.all() and body_on_loop.all():
        chain = "closed"
    else:
        chain = "mixed"
    simple = n > 0 and all(d == 2 for d in degrees)

    lam = 3 if mech.space == "planar" else 6
    dofs = [joint_dof(j.type, mech.space) for j in mech.joints]
    classes = Counter(lam - f for f in dofs)
    mobility = lam * (n_eff - 1) - sum(lam - f for f in dofs) if n_eff > 0 else 0
    coords = sum(dofs)

    warnings: list[str] = []
    if n and not grounds:
        warnings.append("no ground body: mark one body as the fixed ground")
    # several ground bodies with joints are one fixed frame of the joint graph (worth saying); ground bodies without
    # joints are contact geometry (a bin's floor and walls), which needs no warning
    joined = [g for g in grounds if degrees[g] > 0]
    if len(joined) > 1:
        warnings.append(f"{len(joined)} ground bodies with joints ({', '.join(names[g] for g in joined)}): they count "
                        "as one fixed frame")
    free = {i for i, b in enumerate(mech.bodies) if b.shape is not None and not b.ground}
    for i in range(n):
        if degrees[i] == 0 and i not in free and not mech.bodies[i].ground:
            warnings.append(f"body '{names[i]}' has no joint")
    ground_set = set(grounds)
    # Isolated bodies were reported above; what is left are parts with joints that never reach a ground.
    parts = [c for c in components if len(c) > 1 and not ground_set.intersection(c)]
    if parts and (ground is not None or len(parts) > 1):
        shown = "; ".join(", ".join(names[b] for b in c[:6]) + (", ..." if len(c) > 6 else "") for c in parts[:4])
        what = "not connected to the ground" if ground is not None else "disconnected from each other"
        warnings.append(f"{len(parts)} part(s) {what}: {shown}")
    gruebler_warning = ""
    if n > 1 and m:
        if mobility == 0:
            gruebler_warning = ("M = 0: a structure as counted by Gruebler–Kutzbach (it cannot move unless its geometry "
                                "is special)")
        elif mobility < 0:
            gruebler_warning = (
                f"M = {mobility}: overconstrained as counted by Gruebler–Kutzbach: at least {-mobility} redundant "
                "constraint(s), and it cannot move unless its geometry is special (a planar loop in space is: the "
                "rank-based mobility says how)"
            )
    if gruebler_warning:
        warnings.append(gruebler_warning)
    nd = len(mech.drivers)
    from .run import run_kind  # (a dynamics document's undriven freedoms move under forces: no driver is missing)

    # a floating part's rigid-body freedoms count in the mobility but are no joint's coordinates: no driver fixes them
    floating_parts = max(sum(1 for c in components if not ground_set.intersection(c)) - (0 if grounds else 1), 0)
    floating = lam * floating_parts
    drivable = mobility - floating
    of_floating = (f" ({floating} of them floating: of parts not attached to the ground, which no driver fixes)"
                   if floating else "")
    driver_warning = ""
    if run_kind(mech) == "contact" and nd <= drivable:
        pass
    elif nd and nd != drivable and mobility > 0:
        driver_warning = (
            f"{nd} driver(s) for mobility {mobility}{of_floating} as counted: the motion is "
            + ("not fully determined (unless the rest are idle freedoms, such as a coupler's spin)" if nd < drivable else "over-determined")
        )
    elif not nd and drivable > 0 and m:
        driver_warning = f"no drivers: mobility {mobility}{of_floating} needs {drivable} driver(s) to define a motion"
    if driver_warning:
        warnings.append(driver_warning)

    return StructureReport(
        space=mech.space,
        bodies=names,
        joints=[j.name for j in mech.joints],
        incidence=incidence,
        adjacency=adjacency,
        degrees=degrees,
        grounds=grounds,
        ground=ground,
        components=components,
        loops=loops,
        fundamental_loops=loops_j,
        loop_directions=loops_d,
        loop_bodies=loops_b,
        tree_joints=tree_joints,
        chords=chords,
        tree_parent=parent,
        chain=chain,
        simple=simple,
        mobility=mobility,
        mobility_formula=_formula(mech.space, n_eff, classes, mobility),
        joint_classes=dict(classes),
        coordinates=coords,
        dependent_coordinates=coords - mobility,
        n_drivers=nd,
        warnings=warnings,
        driver_warning=driver_warning,
        gruebler_warning=gruebler_warning,
        floating_parts=floating_parts,
    )
