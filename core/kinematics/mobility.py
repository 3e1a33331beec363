"""Rank-based mobility at the design configuration, idle freedoms, and the check that drivers determine the motion."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..errors import LinkwrightError
from ..model import Mechanism
from ..structure import analyze
from ..transforms import skew
from .model import KinematicModel, compile_model
from .solver import (RANK_RTOL, Workspace, _step_twists, forward, loop_bias, loop_bias_forms, loop_residual,
                     twist_jacobian)

__all__ = ["RankMobility", "rank_mobility", "AnalysisCancelled", "check_drivers", "body_twist_jacobian", "fixed_by_drivers", "driver_fixed_masks",
           "freedoms_text", "drivers_text", "driver_warning", "report_warnings", "drivable_freedoms",
           "verdict_awaits_rank"]


@dataclass(frozen=True)
class RankMobility:
    """Mobility from the rank of the loop-closure Jacobian, next to the Gruebler–Kutzbach count."""

    coordinates: int  # joint coordinates n_q
    equations: int  # scalar loop-closure equations (3 or 6 per loop)
    rank: int  # rank of the constraint Jacobian at the design configuration
    mobility_rank: int  # n_q - rank + floating_freedoms
    redundant_constraints: int  # equations - rank
    idle_freedoms: int  # freedoms taken up by ball joints alone that move no ball joint's centre (an RSSR coupler's spin)
    freedoms_to_drive: int  # what the drivers must fix (check_drivers): n_q - rank - idle (no floating freedom)
    gruebler: int  # the structure analysis' count
    drivers: int
    design_closed: bool  # the loops close in the design configuration (else the rank is of an unassembled drawing)
    # 3 (planar) or 6 per part attached to no ground (StructureReport.floating_parts): real freedoms, counted in the
    # mobility, but no joint's coordinates, so no driver fixes them (the kinematics holds such a part in place)
    floating_freedoms: int = 0
    # first-order freedoms that no motion follows: the design configuration is a singular position (a four-bar drawn
    # flat with l = s + p + q has 2 first-order freedoms and cannot move; _second_order_freedoms)
    singular_freedoms: int = 0

    def freedoms_text(self) -> str:
        """'N degree(s) of freedom (rank-based[, K idle freedom(s) set aside][, S first-order ...][, F of them floating
        ...])' for the `effective` freedoms, as the driver check says it."""
        return freedoms_text(self.effective, self.idle_freedoms, self.floating_freedoms, self.singular_freedoms)

    @property
    def mobility(self) -> int:
        """Alias of `mobility_rank`."""
        return self.mobility_rank

    @property
    def effective(self) -> int:
        """The mechanism's degrees of freedom: rank-based mobility without the idle freedoms and those of a singular
        position (floating ones included; those a driver can fix are `freedoms_to_drive`)."""
        return self.mobility_rank - self.idle_freedoms - self.singular_freedoms

    def to_json(self) -> dict:
        """JSON-ready summary."""
        return {
            "mobility_rank": self.mobility_rank,
            "redundant_constraints": self.redundant_constraints,
            "idle_freedoms": self.idle_freedoms,
            "freedoms_to_drive": self.freedoms_to_drive,
            "floating_freedoms": self.floating_freedoms,
            "singular_freedoms": self.singular_freedoms,
            "rank": self.rank,
            "equations": self.equations,
            "coordinates": self.coordinates,
            "gruebler": self.gruebler,
            "drivers": self.drivers,
            "design_closed": self.design_closed,
        }


class AnalysisCancelled(Exception):
    """rank_mobility's `cancel` callable said stop (checked between its pieces of work: the model compiled, each
    block's SVD, each block's second-order forms): there is no count.  Not a LinkwrightError: nothing is wrong with
    the document."""


def _check(cancel: Callable[[], bool] | None) -> None:
    if cancel is not None and cancel():
        raise AnalysisCancelled()


class _Block(NamedTuple):
    """One diagonal block of the loop-closure Jacobian G[:, cols] (_loop_blocks), with its SVD."""

    rows: np.ndarray  # rows of G
    cols: np.ndarray  # positions among the columns asked for
    u: np.ndarray  # full SVD of G[rows][:, cols]: u (r x r), s, vt (c x c)
    s: np.ndarray
    vt: np.ndarray


def _loop_blocks(km: KinematicModel, G: np.ndarray, cols: np.ndarray,
                 cancel: Callable[[], bool] | None = None) -> tuple[list[_Block], float]:
    """G[:, cols] as diagonal blocks, each with its SVD, and the rank threshold of the whole matrix (RANK_RTOL times
    its largest singular value, at least 1, as _rank's).  Two loops are in one block when they share a coordinate: a
    loop's rows depend on its own joints' coordinates only, so G is block diagonal in these blocks (loops of different
    biconnected parts of the graph share none: a Stephenson chain's loops are one block, a row of four-bars hinged
    at single bodies one block each).  A coordinate of no loop is a block with no rows.  The rank, null spaces and
    second-order forms are computed per block: a large drawing's count costs the sum of its blocks' SVDs, not one SVD
    of the whole (cubic in its size), and the singular value of a block is one of the whole's."""
    nl, per = km.n_loops, len(km.rows)
    pos = np.full(km.nq, -1)
    pos[cols] = np.arange(len(cols))
    # components of the graph of loops (nodes 0..nl-1) and coordinates (nl..nl+nq-1), an edge per Jacobian entry
    nodes = nl + km.nq
    graph = sp.coo_matrix((np.ones(len(km.pair_loop)), (km.pair_loop, nl + km.pair_col)), shape=(nodes, nodes))
    _n, label = connected_components(graph, directed=False)
    order = np.argsort(label, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(label[order]) != 0])
    blocks, smax = [], 0.0
    for members in np.split(order, starts[1:]):
        loops, coords = members[members < nl], members[members >= nl] - nl
        c = pos[coords]
        c = c[c >= 0]
        if not len(c):  # (a loop whose coordinates are not asked for: its rows are zero in G[:, cols])
            continue
        _check(cancel)  # (before each block's SVD: the work between two checks is one block's)
        rows = (loops[:, None] * per + np.arange(per)).ravel()
        u, s, vt = np.linalg.svd(G[np.ix_(rows, cols[c])]) if len(rows) else (np.zeros((0, 0)), np.zeros(0),
                                                                               np.eye(len(c)))
        blocks.append(_Block(rows, c, u, s, vt))
        smax = max(smax, s[0] if len(s) else 0.0)
    return blocks, RANK_RTOL * max(smax, 1.0)


def _block_rank(block: _Block, threshold: float) -> int:
    return int((block.s > threshold).sum())


def _loop_rank(split: tuple[list[_Block], float]) -> int:
    """The rank of G[:, cols] from its blocks (_loop_blocks)."""
    blocks, threshold = split
    return sum(_block_rank(b, threshold) for b in blocks)


def _loop_null_space(split: tuple[list[_Block], float], n: int) -> np.ndarray:
    """(n, k) orthonormal basis of the null space of G[:, cols] (n columns; as _null_space) from its blocks."""
    blocks, threshold = split
    cols = np.arange(n)
    parts = []
    for b in blocks:
        basis = b.vt[_block_rank(b, threshold):].T
        part = np.zeros((len(cols), basis.shape[1]))
        part[b.cols] = basis
        parts.append(part)
    return np.hstack(parts) if parts else np.zeros((len(cols), 0))


def _body_twists_along(ws: Workspace, rates: np.ndarray) -> np.ndarray:
    """(n_bodies, 6, k): world twist (v, w) of each body along each of the k motions `rates` (nq, k) of the
    coordinates, at the last `forward` (twists add from the root along the tree; cost n_bodies x k)."""
    km = ws.km
    S = _step_twists(ws)
    k = rates.shape[1]
    out = np.zeros((km.n_bodies, 6, k))
    if km.nq == 0 or not k:  # only fixed joints: nothing moves (and the padded step indices point at no coordinate)
        return out
    for child, par, jt in km.levels:
        for c, p, j in zip(child, par, jt):
            sign = 1.0 if km.tree_forward[j] else -1.0
            # (a padding step has S = 0, whatever coordinate its index names)
            out[c] = out[p] + sign * (S[j].T @ rates[km.step_coord[j]])
    return out


def body_twist_jacobian(ws: Workspace) -> np.ndarray:
    """(n_bodies, 6, nq): world twist (v, w) of each body per unit rate of each coordinate, at the last `forward`."""
    return _body_twists_along(ws, np.eye(ws.km.nq))


# Joints without an axis: a ball joint's three coordinates are angles of its own parametrisation, not a turn about or a
# slide along an axis of the joint as every other joint's are (the axes an actuator drives). A motion only they take up
# is what the literature calls a passive or idle freedom (Hunt, Kinematic Geometry of Mechanisms; Tsai, Mechanism
# Design): a link between two ball joints spinning about the line through their centres.
AXISLESS_JOINTS = frozenset({"spherical"})


def _axisless(km: KinematicModel, cols: np.ndarray) -> np.ndarray:
    """The coordinates among `cols` of joints without an axis (ball joints): the only ones an idle motion changes."""
    return np.array([c for c in cols if km.joint_types[km.coord_joint[c]] in AXISLESS_JOINTS], dtype=np.int64)


def _idle_constraints(km: KinematicModel, ws: Workspace, cols: np.ndarray) -> np.ndarray:
    """Rows on the coordinates `cols` of ball joints (_axisless) that vanish on idle motions, and only on them: the
    idle motions are the null space of these rows stacked on the loops' G[:, cols], every other coordinate held.
    A motion the loops allow is idle when it turns or slides no joint about or along an axis: it changes the
    coordinates of ball joints alone (so only their columns are asked for; a drawing without ball joints has no idle
    freedom, at no cost). The bodies joined by joints with an axis then move as one rigid group, and the motion
    - moves no ball joint's centre (the centre in each of its two bodies: a group between two ball joints can only
      spin about the line through their centres, the RSSR coupler's spin or an S-P-S strut's), and
    - moves no group held by one ball joint alone (it would carry whatever it is attached to: never idle).
    Where a joint with an axis is drawn does not matter: a prismatic joint's point off an S-P-S strut's line (its
    slide is the same anywhere) or a revolute inside a rigid group leave the group's spin idle.
    The first rule keeps shafts real: a shaft turning in its bearings moves no joint centre either (every centre lies
    on a rotation axis: a universal-joint driveshaft, coaxial revolutes in series, a shaft on two coaxial bearings),
    but it turns revolutes (or cylindrical, universal joints), whose angles a driver drives."""
    if not len(cols):
        return np.zeros((0, 0))
    Jb = _body_twists_along(ws, np.eye(km.nq)[:, cols])
    # the rigid groups: bodies joined by joints with an axis (union-find)
    root = list(range(km.n_bodies))

    def find(k: int) -> int:
        while root[k] != k:
            root[k] = root[root[k]]
            k = root[k]
        return k

    ball = [km.joint_types[j] in AXISLESS_JOINTS for j in range(km.n_joints)]
    for j in range(km.n_joints):
        if not ball[j]:
            root[find(int(km.ja[j]))] = find(int(km.jb[j]))
    group = np.array([find(k) for k in range(km.n_bodies)], dtype=np.int64)
    rows = []
    holds = np.zeros(km.n_bodies, dtype=np.int64)  # ball joints that join each group to another one
    for j in range(km.n_joints):
        if not ball[j]:
            continue
        P = np.hstack((np.eye(3), -skew(km.joint_at[j])))  # velocity of the body point at the centre: v - at x w
        a, b = int(km.ja[j]), int(km.jb[j])
        rows += [P @ Jb[a], P @ Jb[b]]
        if group[a] != group[b]:
            holds[group[a]] += 1
            holds[group[b]] += 1
    for k in range(km.n_bodies):
        if holds[group[k]] <= 1:
            rows.append(Jb[k])  # a group held by one ball joint carries whatever it is attached to: never idle
    return np.vstack(rows) if rows else np.zeros((0, len(cols)))


def _idle_basis(km: KinematicModel, ws: Workspace, G: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """(len(cols), i) orthonormal basis of the idle motions among the coordinates `cols`, every other one held."""
    ball = _axisless(km, cols)
    if not len(ball):
        return np.zeros((len(cols), 0))
    b = _null_space(np.vstack((G[:, ball], _idle_constraints(km, ws, ball))), len(ball))
    basis = np.zeros((len(cols), b.shape[1]))
    basis[[list(cols).index(c) for c in ball]] = b
    return basis


def freedoms_text(n: int, idle: int, floating: int = 0, singular: int = 0) -> str:
    """The mechanism's n freedoms (idle ones and the first-order ones of a singular position set aside, `floating` of
    them those of parts attached to no ground), in the words `check_drivers`, `linkwright analyze` and the app's status
    bar (its DOF) use."""
    notes = (f", {idle} idle freedom(s) set aside" if idle else "") + (
        f", {singular} first-order freedom(s) of a singular position set aside: no motion follows them" if singular
        else "") + (
        f", {floating} of them floating: of parts not attached to the ground, which no driver fixes" if floating else "")
    return f"{n} degree(s) of freedom (rank-based{notes})"


def drivers_text(n: int, idle: int, drivers: int, floating: int = 0, singular: int = 0) -> str:
    """The driver check's words for `drivers` driver(s) where n freedoms need one (idle ones and the first-order ones of
    a singular position set aside, and the `floating` freedoms of parts attached to no ground, which no driver fixes,
    besides)."""
    what = "add" if drivers < n else "remove"
    return (f"the mechanism has {freedoms_text(n + floating, idle, floating, singular)} "
            f"but {drivers} driver(s) are given: "
            f"{what} {abs(n - drivers)} driver(s) so the motion is determined")


def driver_warning(rank: RankMobility, drivers: int, contact: bool = False) -> str:
    """'' when `drivers` fix the freedoms the rank-based count leaves to drive (or fewer in a dynamics document,
    whose undriven freedoms move under forces); else the driver check's words (check_drivers refuses a run for
    them)."""
    need = rank.freedoms_to_drive
    if drivers == need or (contact and drivers < need):
        return ""
    return drivers_text(need, rank.idle_freedoms, drivers, rank.floating_freedoms, rank.singular_freedoms)


def redundant_text(n: int) -> str:
    """'1 redundant constraint', '3 redundant constraints'."""
    return f"{n} redundant constraint{'' if n == 1 else 's'}"


def special_geometry_note(report, rank: RankMobility | None) -> str:
    """'' unless the Gruebler–Kutzbach count finds no freedom (M <= 0) and the rank-based count finds the geometry as
    drawn moving (its redundant constraints, which the count takes as independent, let it: a double parallelogram, a
    planar loop in space); then what to say instead of the count's "it cannot move unless its geometry is special"."""
    if rank is None or report.mobility > 0 or rank.freedoms_to_drive <= 0:
        return ""
    return (f"Gruebler–Kutzbach M = {report.mobility}, but this geometry moves: {rank.effective} DOF by rank, "
            f"{redundant_text(rank.redundant_constraints)} (a special geometry, such as parallel links of equal length "
            "or a planar loop in space, lets it move; changed, it may lock)")


def report_warnings(report, rank: RankMobility | None, contact: bool = False) -> list[str]:
    """A structure report's warnings with its driver warning (from the Gruebler–Kutzbach count, which knows no idle
    freedom) replaced by the rank-based one, and its warning that the count finds no freedom replaced by
    special_geometry_note when the rank-based count finds the geometry moving; as they are without the rank."""
    if rank is None:
        return list(report.warnings)
    note = special_geometry_note(report, rank)
    out = [note if (note and w == report.gruebler_warning) else w for w in report.warnings
           if not (report.driver_warning and w == report.driver_warning)]
    w = driver_warning(rank, report.n_drivers, contact)
    return out + ([w] if w else [])


def drivable_freedoms(report, rank: RankMobility | None) -> int:
    """The freedoms the drivers must fix, as the driver check counts them: the rank-based count's once known (idle
    and floating freedoms set aside), else the structure report's Gruebler–Kutzbach count less its floating parts'
    freedoms (it knows no idle freedom)."""
    if rank is not None:
        return rank.freedoms_to_drive
    return report.mobility - report.floating_freedoms


def verdict_awaits_rank(report, rank: RankMobility | None, pending: bool) -> bool:
    """Whether the drivers are not to be judged yet: the rank-based count is `pending` (asked for the current geometry,
    not yet arrived) and may contradict the verdict of the Gruebler–Kutzbach count, which it may whenever there is a
    joint (redundant constraints raise the freedoms to drive: a spatial four-bar of revolutes counts -2 and has 1; idle
    ones lower them: an RSSR counts 2 and needs 1). Without a joint there is nothing for it to count. When no rank-based
    count is coming (not pending: its analysis failed, or no run computes it), the Gruebler count judges."""
    return pending and rank is None and bool(report.joints)


_MAX_FORMS = 200  # first-order freedoms beyond which a singular position's forms are not decided (p k^2 entries)


def _cone_dimension(Q: np.ndarray, tol: float) -> int:
    """An upper bound on the dimension of the real cone {a : a^T Q_i a = 0 for every i} of symmetric forms Q (p, k, k)
    (entries below `tol` count as zero): k when every form vanishes. A nonzero semidefinite combination C of the forms
    confines the cone to C's kernel (a^T C a = 0 with C semidefinite gives C a = 0): the count goes on there, the forms
    restricted to it; with none to be found, a nonzero indefinite form still confines the cone to its own zero set,
    of one dimension less (a four-bar's change point: two branches crossing, 1 of 2). A single form is decided
    exactly; of several, the combinations tried are a basis of their span (the bound may then exceed the cone's)."""
    V = np.eye(Q.shape[1])
    while V.shape[1]:
        d = V.shape[1]
        F = (V.T @ Q @ V).reshape(len(Q), d * d)  # the forms on the span of V
        _u, sv, wt = np.linalg.svd(F, full_matrices=False)
        W = np.eye(d)  # the kernels of this pass' semidefinite forms, within V
        indefinite = False
        for sigma, w in zip(sv, wt):
            if sigma <= tol or not W.shape[1]:
                break
            B = W.T @ (sigma * w.reshape(d, d)) @ W
            ev, vec = np.linalg.eigh(0.5 * (B + B.T))
            pos, neg = ev > tol, ev < -tol
            if pos.any() and neg.any():
                indefinite = True
            elif pos.any() or neg.any():
                W = W @ vec[:, ~(pos | neg)]  # the kernel of a nonzero semidefinite form
        if W.shape[1] == d:
            return d - 1 if indefinite else d
        V = V @ W  # (again: a form indefinite on V may be semidefinite on the smaller span)
    return 0


def _second_order_freedoms(ws: Workspace, G: np.ndarray, cols: np.ndarray,
                           split: tuple[list[_Block], float], cancel: Callable[[], bool] | None = None) -> int:
    """An upper bound on the freedoms that a motion of the coordinates `cols` (the others held) can follow from the
    configuration in `ws`: the dimension of the first-order motions v (G[:, cols] v = 0) that also satisfy the loop
    equations to second order. Along a motion q(s), G q'' + loop_bias(q') = 0 (solver.loop_bias), so
    Y^T loop_bias(q') = 0 for Y the left null space of G[:, cols]: p quadratic forms on the k first-order motions.
    At a regular configuration they vanish (every first-order motion is a motion's velocity: the count is the
    rank-based k); at a singular one they need not, and a first-order freedom they exclude is followed by no motion
    (the lowest nonzero derivative of an analytic motion satisfies both orders; a configuration rigid to second order
    is rigid, as Connelly and Whiteley's second-order rigidity of frameworks). A four-bar drawn flat with
    l = s + p + q: k = 2, one definite form, 0 freedoms; drawn flat at a change point (s + l = p + q): one indefinite
    form, 1 (two branches cross there).
    Decided per block of G (_loop_blocks): on the first-order motions a block's forms depend on its own coordinates
    alone (a loop's bias is its joints' brackets plus the bracket of the twist it is carried with and its closing
    twist G_L v, which is 0 on them), so the real cone is the product of the blocks' cones, and its dimension the sum.
    Singular loops in different blocks (four-bars hinged at single bodies, each drawn flat) are each decided exactly;
    the bound is only an upper bound when one block has several forms that no semidefinite combination decides."""
    km = ws.km
    blocks, threshold = split  # (_loop_blocks(km, G, cols), made once by the caller)
    # the forms of a regular configuration are round-off (1e-17 of the mechanism's size); those of a singular one
    # are of the order of the size over a link length
    tol = 1e-7 * threshold / RANK_RTOL
    parts = []  # (block, Y, N) of the blocks with first-order freedoms and rows left over: forms to decide
    total = 0
    for b in blocks:
        r = _block_rank(b, threshold)
        k = len(b.cols) - r
        total += k
        if k and b.u.shape[1] > r:
            parts.append((b, b.u[:, r:], b.vt[r:].T))
    if not parts:
        return total

    def rates_of(b, N):  # (k, nq): the block's first-order motions as rates of every coordinate
        rates = np.zeros((N.shape[1], km.nq))
        rates[:, cols[b.cols]] = N.T
        return rates

    # Probe every block at once with two (reproducibly) random first-order motions, one part in each block: a nonzero
    # form vanishes on a random one with probability 0, so a regular configuration is told without computing the
    # p k^2 form entries (a block's rows see its own part only).
    rng = np.random.default_rng(0)
    probes = []
    for _ in range(2):
        x = np.zeros(km.nq)
        for b, _Y, N in parts:
            a = rng.standard_normal(N.shape[1])
            x += (a / np.linalg.norm(a)) @ rates_of(b, N)
        probes.append(loop_bias(ws, x))
    for b, Y, N in parts:
        if all(np.abs(Y.T @ bias[b.rows]).max(initial=0.0) <= tol for bias in probes):
            continue
        _check(cancel)
        k = N.shape[1]
        if k > _MAX_FORMS:  # too many to decide: a nonzero form confines the motions to a cone of one dimension less
            total -= 1
            continue
        loops = np.unique(b.rows // len(km.rows))
        forms = loop_bias_forms(ws, rates_of(b, N), loops)[b.rows]  # (rows of the block, k, k)
        total -= k - _cone_dimension(np.tensordot(Y, forms, axes=(0, 0)), tol)
    return total


class _Analysis(NamedTuple):
    """The counts of a kinematic model at its design configuration (_analysis)."""

    ws: Workspace  # the workspace at the design configuration
    closed: bool  # the loops close there
    G: np.ndarray  # the loops' twist Jacobian
    rank: int  # rank of G
    idle: int  # idle freedoms
    singular: int  # first-order freedoms of a singular position that no motion follows
    need: int  # freedoms the drivers must fix


def _analysis(km: KinematicModel, cancel: Callable[[], bool] | None = None) -> _Analysis:
    """The one definition of the counts that rank_mobility and check_drivers report (AnalysisCancelled when `cancel`
    says stop, checked between the pieces of the work)."""
    ws = Workspace(km)
    _check(cancel)
    forward(ws, np.zeros(km.nq))
    closed = bool(np.abs(loop_residual(ws)).max(initial=0.0) <= 1e-9 * km.length_scale)
    G = twist_jacobian(ws)
    _check(cancel)
    every = np.arange(km.nq)
    idle = _idle_basis(km, ws, G, every).shape[1]
    split = _loop_blocks(km, G, every, cancel)
    rank = _loop_rank(split)
    first = km.nq - rank
    _check(cancel)
    # (a drawing whose loops do not close is no configuration of the mechanism: its first-order count stands)
    second = _second_order_freedoms(ws, G, every, split, cancel) if closed and first else first
    second = max(second, idle)  # (idle freedoms are motions: the bound counts them)
    return _Analysis(ws, closed, G, rank, idle, first - second, second - idle)


def rank_mobility(mech: Mechanism, cancel: Callable[[], bool] | None = None) -> RankMobility:
    """Rank-based mobility, redundant constraints and idle freedoms of `mech` at its design configuration.  cancel: a
    background job's flag, checked between the pieces of the work (AnalysisCancelled when it says stop): a
    1,000-body drawing's count takes seconds, and a window closed meanwhile must not wait for it."""
    _check(cancel)
    km = compile_model(mech, drivers=False)
    _check(cancel)
    a = _analysis(km, cancel)
    return RankMobility(
        coordinates=km.nq,
        equations=km.n_rows,
        rank=a.rank,
        mobility_rank=km.nq - a.rank + km.floating_freedoms,
        redundant_constraints=km.n_rows - a.rank,
        idle_freedoms=a.idle,
        freedoms_to_drive=a.need,
        gruebler=analyze(mech).mobility,
        drivers=len(mech.drivers),
        design_closed=a.closed,
        floating_freedoms=km.floating_freedoms,
        singular_freedoms=a.singular,
    )


def fixed_by_drivers(km: KinematicModel, idle: bool = False) -> np.ndarray:
    """(n_bodies,) bool: the bodies the drivers fix (with `idle`, fix but for idle freedoms); driver_fixed_masks'
    first (second) mask."""
    return driver_fixed_masks(km)[1 if idle else 0]


def driver_fixed_masks(km: KinematicModel) -> tuple[np.ndarray, np.ndarray]:
    """(fixed, fixed but for idle freedoms), each (n_bodies,) bool, at the design configuration.  fixed: the bodies
    that cannot move while every driver is held (no motion of the undriven coordinates that keeps every loop closed
    moves them; rank by RANK_RTOL).  The second mask also has the bodies those motions move only as idle freedoms do
    (an RSSR coupler's spin about its own axis, the freedom check_drivers sets aside: the rows of _idle_constraints,
    as _analysis counts them).  At a drawing of a singular position the motions are those check_drivers counts (to
    second order).  Bodies of a part without ground keep their root's six freedoms, which are not coordinates: call
    it on a part with ground."""
    ws = Workspace(km)
    forward(ws, np.zeros(km.nq))
    U = km.unknown
    if not len(U):
        return np.ones(km.n_bodies, bool), np.ones(km.n_bodies, bool)
    G = twist_jacobian(ws)
    split = _loop_blocks(km, G, U)
    free = _loop_null_space(split, len(U))  # orthonormal motions of the undriven coordinates that keep the loops closed
    idle = _idle_basis(km, ws, G, U)
    if free.shape[1] > idle.shape[1] and np.abs(loop_residual(ws)).max(initial=0.0) <= 1e-9 * km.length_scale and (
            _second_order_freedoms(ws, G, U, split) <= idle.shape[1]):
        # a drawing at a singular position where the drivers determine the motion to second order (check_drivers'
        # count: a double parallelogram drawn flat): its first-order freedoms beyond the idle ones are followed by
        # no motion, so with the drivers held only the idle motions are left
        free = idle
    E = np.eye(km.nq)[:, U]  # (the rates of every coordinate along a motion of the undriven ones)
    motion = _body_twists_along(ws, E @ free)  # (n, 6, k): world twists of the bodies along those motions
    tol = RANK_RTOL * max(km.length_scale, 1.0)
    fixed = np.abs(motion).max(axis=(1, 2), initial=0.0) <= tol
    held = fixed.copy()
    if fixed.all():
        return fixed, held
    idle_motion = _body_twists_along(ws, E @ idle)  # (n, 6, i)
    for k in np.flatnonzero(~fixed):
        # body k moves only idly when every twist the free motions give it is one an idle motion gives it
        u, s, _vt = np.linalg.svd(idle_motion[k])
        span = u[:, :int((s > tol).sum())]
        held[k] = np.abs(motion[k] - span @ (span.T @ motion[k])).max(initial=0.0) <= tol
    return fixed, held


def _null_space(A: np.ndarray, n: int) -> np.ndarray:
    """(n, k) orthonormal basis of A's null space (rank by RANK_RTOL, as _rank)."""
    if not A.shape[0]:
        return np.eye(n)
    _u, s, vt = np.linalg.svd(A)
    rank = int((s > RANK_RTOL * max(s[0] if len(s) else 0.0, 1.0)).sum())
    return vt[rank:].T


def check_drivers(km: KinematicModel) -> int:
    """Raise a located LinkwrightError unless the drivers determine the motion; returns the rank of the loop Jacobian
    in the unknowns along the motion: with drivers, len(unknowns) - idle freedoms (at a drawing of a singular
    position, where they determine the motion to second order only, more than the drawing's own rank)."""
    a = _analysis(km)
    nd = len(km.driven)
    if nd != a.need:
        raise LinkwrightError("drivers", drivers_text(a.need, a.idle, nd, km.floating_freedoms, a.singular))
    U = km.unknown
    split = _loop_blocks(km, a.G, U)
    rank_u = _loop_rank(split)
    # every freedom the drivers leave must be idle: null(G_U) equals null([G_U; idle rows]); at a singular position
    # (a four-bar drawn flat) a first-order freedom that no motion follows is left too (_second_order_freedoms)
    idle_u = _idle_basis(km, a.ws, a.G, U).shape[1]
    if rank_u < a.rank or (len(U) - rank_u > idle_u and not (
            a.closed and _second_order_freedoms(a.ws, a.G, U, split) <= idle_u)):
        names = ", ".join(km.coord_names[c] for c in km.driven)
        raise LinkwrightError(
            "drivers",
            f"the driven coordinates ({names}) do not determine the motion: they are fixed by the loops "
            "or leave another freedom free; drive other joints",
        )
    # (with drivers the motion's configurations near a singular drawing are regular: every unknown but the idle ones
    # is determined to first order there; without, nothing moves and the drawing's rank stays)
    return len(U) - idle_u if nd else rank_u
