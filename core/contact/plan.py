"""What a step's problem is made of apart from the state (core.contact.stepper's _StepProblem fills it in).

_Plan: for one set of candidate pairs and one method, each pair's layout and place among the unknowns, the bounds,
the batches of the compiled evaluation and the solver's constant arrays; built once per set and read-only after.
Workspace: a run's caches (the plans of the pair sets met, the pair tables, the driven motion), so that the compiled
model stays constant and several runs of one model can go at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from . import ipm
from .bodies import ContactModel
from .closest import _eliminable
from .explicit import _explicit_size
from .joints import JointPlan
from .pair import PairLayout, pair_layout
from ..shapes.base import stack_rows

__all__ = ["Workspace"]

_JOINT_WEIGHT = 10.0  # the merit function's weight of the joint rows: measured on one hard step (a pendulum striking a


_PLAN_CACHE = 256  # step plans a workspace keeps (sets of candidate pairs met)


@dataclass
class _Pair:
    ip: int
    a: int
    b: int
    mu: float
    lay: PairLayout
    off: int  # offset of the pair block in the global unknowns
    m_ref: float
    e_aux: np.ndarray
    # explicit method only: fixed geometry from the start of the step
    a1: np.ndarray | None = None
    a2: np.ndarray | None = None
    n: np.ndarray | None = None
    gap0: float = 0.0
    geo0: np.ndarray | None = None  # implicit: starting closest-point unknowns
    zf0: np.ndarray | None = None  # implicit: starting impulse unknowns (warm start or predictor)
    # assembly data from the step's plan (cols and valid: read-only arrays shared by every step of that plan)
    ka: int = -1  # index of A among the dynamic bodies
    kb: int = -1  # index of B, -1 when B is static
    sz: int = 0  # size of the pair block
    cols: np.ndarray | None = None  # global indices of the local unknowns [nuA, nuB?, pair block]
    valid: np.ndarray | None = None  # which of the 12 + sz local Jacobian columns exist


def _layout_for(model, ip, method):
    a, b, mu = model.pairs[ip]
    e_r = model.ellipsoid[2]
    if method == "implicit":
        return pair_layout(model.shapes[a].m, model.shapes[b].m, mu, e_r)
    return pair_layout(0, 0, mu, e_r)  # explicit: only the impulse part (offsets shifted below)


@dataclass
class _Batch:
    """Pairs evaluated together (same layout, B static or dynamic alike): stacked per-step data."""

    prs: list
    lay: PairLayout
    dyn_b: bool
    P: int
    ka: np.ndarray
    kb: np.ndarray
    zidx: np.ndarray  # (P, size) global indices of the pair blocks
    cols: np.ndarray  # (P, nl) global columns of the local unknowns
    valid: np.ndarray  # (12 + size,) which local Jacobian columns exist
    valid_idx: np.ndarray | None = None  # ... their indices
    SA: np.ndarray | None = None  # (P, 6, 6) M^-1 of each pair's A
    SB: np.ndarray | None = None  # ... and of B (dynamic B)
    mu: np.ndarray | None = None
    m_ref: np.ndarray | None = None
    e_aux: np.ndarray | None = None
    rows_a: tuple | None = None  # the inequality rows (kinds (P, m), params) of the pairs' A (core.shapes.stack_rows)
    rows_b: tuple | None = None  # ... and of their B
    pA0: np.ndarray | None = None
    RA0: np.ndarray | None = None
    cA: np.ndarray | None = None
    pB0: np.ndarray | None = None
    RB0: np.ndarray | None = None
    cB: np.ndarray | None = None
    a: np.ndarray | None = None  # (P,) the pairs' bodies A
    b: np.ndarray | None = None  # ... and B
    n: np.ndarray | None = None  # explicit method: (P, 3) the start-of-step normals
    d1: np.ndarray | None = None  # ... (P, 3) lever arms of A's closest points (from A's centre)
    d2: np.ndarray | None = None  # ... and of B's
    gap0: np.ndarray | None = None  # ... (P,) the start-of-step gaps
    floor: np.ndarray | None = None  # implicit method: (P,) the separation each pair's normal row asks for (<= 0: the
    # overlap of the start it keeps, _kept_overlap), or None when every pair asks for s >= 0
    ips: np.ndarray | None = None  # (P,) the pairs' indices in the model
    closed_gap: np.ndarray | None = None  # (P,) whether the broad phase's gap bound is the pair's gap (_kept_overlap);


class Workspace:
    """Per-run caches of the stepper: the step plan of each set of candidate pairs met, and the pair tables (the
    model itself stays constant, so several runs of one model can go at once, each with its own workspace)."""

    def __init__(self):
        self._plans: dict = {}
        self._tables: dict = {}
        self._driven: dict = {}
        self._longest: dict = {}

    def driven(self, model: ContactModel):
        """This run's solver of the model's driven motion (core.kinematics.DrivenMotion: it continues from the times
        it has solved)."""
        got = self._driven.get(id(model))
        if got is None:
            from ..kinematics import DrivenMotion

            got = self._driven[id(model)] = (model, DrivenMotion(model.drive.km))  # (the model kept: its id unique)
        return got[1]

    def longest_step(self, model: ContactModel) -> float:
        """The longest step of the model's scene (core.contact.stepper.longest_step), computed once per run."""
        got = self._longest.get(id(model))
        if got is None:
            from .stepper import longest_step

            got = self._longest[id(model)] = (model, longest_step(model))  # (the model kept: its id unique)
        return got[1]

    def plan(self, model: ContactModel, cand: list[int], method: str) -> "_Plan":
        """The step structure of these candidate pairs (cached: the same pairs stay in range for most steps, so a
        step's setup is spent on the state only)."""
        key = (id(model), tuple(cand), method)
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= _PLAN_CACHE:
                self._plans.clear()  # (a long run through many pair sets: start again rather than keep them all)
            plan = self._plans[key] = _Plan(model, cand, method, self.table(model, method))
        return plan

    def table(self, model: ContactModel, method: str) -> "_PairTable":
        """Every pair of the model under one method."""
        key = (id(model), method)
        tab = self._tables.get(key)
        if tab is None:
            tab = self._tables[key] = (model, _PairTable(model, method))  # (the model is kept: its id stays unique)
        return tab[1]


class _Plan:
    """What a step's problem is made of apart from the state, for one set of candidate pairs and one method: each
    pair's layout, place among the unknowns and local columns, the bounds, the batches of the compiled evaluation, the
    solver's constant arrays.  Built once per set and never changed after (its index and bound arrays are made
    read-only; the shape groups are shared as they are); new_pairs and new_batches give each step its own records to
    fill with the state's data."""

    def __init__(self, model: ContactModel, cand: list[int], method: str, tab: "_PairTable"):
        nb = model.dynamic_bodies.size
        c = np.asarray(cand, int)
        n = c.size
        sz = tab.sz[c]
        off = 6 * nb + np.cumsum(sz) - sz  # each pair's block follows the bodies' velocities, in pair order
        # the joints' unknowns follow the pair blocks (core.contact.joints)
        self.joints = JointPlan(model, 6 * nb + int(sz.sum()))
        self.ntot = ntot = 6 * nb + int(sz.sum()) + self.joints.size
        lower = np.full(ntot, -np.inf)
        # with many pairs the impulse unknowns get the MCP solver's proximal term: in a pile they are statically
        # indeterminate (a continuum of solutions) and the plain Newton direction is dominated by that continuum
        # (with one or two pairs the term only slows the last iterations down: the disc example needs 3x more)
        # ... and the Newton equations are solved by eliminating the pair blocks (each couples only to its bodies'
        # velocities; with the proximal term a block is regular) and then the bodies' velocities
        # Both methods: the explicit method's piles are as indeterminate.  Measured on the explicit bench's seeds
        # (100 steps, 150 for the mixed pile): 27-sphere piles at mu 0.4 took 16,168 and 14,275 Newton iterations
        # for 79 and 98 steps before their 60 CPU-s ran out, and 2,364 and 1,347 (4.3 and 2.5 CPU-s) for all 100
        # with the term; at mu 0.8 one of two runs failed at step 70 (4,061 iterations) and now both complete
        # (2,725 and 1,355 against 1,968); 8-sphere piles 559 and 375 against 3,408 and 480; the cube scenes -3 %
        # to +18 % per run (cubes4 769 and 975 against 761 and 826, cubes8 1,064 and 1,175 against 974 and 1,099);
        # the mixed pile 1,614 and 1,601 against 1,760 and 2,090
        # In a planar document every pair is indeterminate, however few: its bodies are held in the plane by joints
        # (their own or the implied ones, bodies._plane_specs), which take the out-of-plane forces and moments too, so
        # a contact's friction across the plane, and the place of a face-to-face contact's point across it, form a
        # continuum of solutions.  Without the term a 1 kg cube resting on a 5 kg plank on the floor, 0.5 m from the
        # plank's centre, stalled at every halving depth at its first step (user test ut2 P4: 1,779 iterations, 1e-4
        # at best); with it the step converges in 13 iterations, the forces the weights
        pile = n > 2 or (model.planar and n > 0)
        prox = np.zeros(ntot) if pile else None
        prox_pair = _prox_weights(model, tab, c) if pile else None
        prox_length = np.zeros(ntot) if pile else None  # (the part of the term weighed by h, _StepProblem)
        # the sliding-speed multipliers stay >= 0 during the iteration (projected Newton, solve_mcp's feasible): with
        # a negative one the friction rows describe friction that drives the slip, and pile steps stalled on such
        # points.  Only those: with the normal impulses projected too, 27-sphere piles (seeds 1-8, 100 steps) took 22 %
        # more Newton iterations at mu 0.4 and 29 % more at mu 0.8 (docs/notes/contact-solver.md)
        feasible = np.zeros(ntot, bool)
        # the closest-point rows of the overlap bound (_StepProblem.depth_residual), per pair: its rows -f_i(a1),
        # -g_j(a2) (padded with the index of a +inf appended to F), its separation s and its row a2 - a1 - s n_A
        implicit = method == "implicit"
        if implicit and n:
            i_lam = np.full((n, max(tab.lay[ip].m for ip in cand)), ntot)
            i_mu = np.full((n, max(tab.lay[ip].k for ip in cand)), ntot)
            i_s, i_a1, i_a2 = np.empty(n, int), np.empty((n, 3), int), np.empty((n, 3), int)
            # a pair's smaller diameter (of its bounded bodies): the lever of a mismatch of its normals
            span = tab.span[c]
        # the batches of the compiled pair evaluation: one per layout and kind of B (under the explicit method the
        # layout is the friction dimension alone); each pair's block indices and local columns are rows of its batch's
        # arrays
        keyed: dict = {}
        sig_idx: list = []
        cones: dict = {}  # friction dimension -> [(rows, cols, scale)] (conic form)
        for q, ip in enumerate(cand):
            keyed.setdefault((tab.lay[ip], tab.kb[ip] >= 0), []).append(q)
        self.batches = []
        pair_cols, pair_valid = [None] * n, [None] * n
        ar6 = np.arange(6)
        for members in keyed.values():
            m = np.array(members)
            ips = c[m]
            lay, size = tab.lay[ips[0]], int(sz[m[0]])
            ka, kb = tab.ka[ips], tab.kb[ips]
            dyn_b = bool(kb[0] >= 0)
            zidx = off[m][:, None] + np.arange(size)
            # global columns of the local unknowns [nuA, nuB (dynamic B only), pair block]; the MCP pairs rows with
            # unknowns slot by slot, so they are the rows too
            cols = np.hstack([6 * ka[:, None] + ar6] + ([6 * kb[:, None] + ar6] if dyn_b else []) + [zidx])
            valid = np.ones(12 + size, bool)
            if not dyn_b:
                valid[6:12] = False
            ipn, _ipf, isig = _friction_slots(lay, method)
            if implicit:
                lower[zidx] = lay.lower()
                if prox is not None:
                    prox[zidx[:, ipn:]] = 1.0  # pn, then the friction unknowns: the tail of the block
                    prox[zidx[:, ipn]] = prox_pair[m]  # (pn's weight: _prox_weights)
                    # the closest points of pairs of two shapes with flat faces: non-unique while two faces are
                    # parallel (a separated box over a floor), which leaves the Newton equations singular
                    prox[zidx[tab.flat[ips], 0:6]] = 1.0
                    # the multipliers of a shape with several inequalities: not unique where more than three of its
                    # faces meet at the closest point (most vertices of a random hull meet four to six), which leaves
                    # the Newton equations singular there as well.  Their rows -f_i(a1), -g_j(a2) are lengths, the
                    # impulses' rows speeds: the term's weight on them is h times the impulses' (prox_length), the
                    # travel in one step at the speed e.  One step from each of 1,200 saved mixed-pile states (seeds
                    # 1-8): -9 % Newton iterations, and a saved state whose attempts stalled at 2.6e-5 (a box corner
                    # against a polytope vertex) converges; with a weight of 1, not h, +4 % to +9 %; on the spheres'
                    # single multipliers too, 27-sphere piles +3.5 % (mu 0.4) and +7.7 % (mu 0.8).  Mixed piles of 15
                    # fresh seeds: 15 runs complete against 13, -24 % iterations on the 13
                    if lay.m > 1:
                        prox_length[zidx[:, lay.lam:lay.lam + lay.m]] = 1.0
                    if lay.k > 1:
                        prox_length[zidx[:, lay.mu:lay.mu + lay.k]] = 1.0
                i_lam[m, :lay.m] = zidx[:, lay.lam:lay.lam + lay.m]
                i_mu[m, :lay.k] = zidx[:, lay.mu:lay.mu + lay.k]
                i_s[m], i_a1[m], i_a2[m] = zidx[:, lay.s], zidx[:, lay.a1:lay.a1 + 3], zidx[:, lay.a2:lay.a2 + 3]
            else:
                lower[zidx[:, ipn]] = 0.0
                if prox is not None:
                    prox[zidx[:, ipn:]] = 1.0  # the block is [pn, friction unknowns]: all of it
                    prox[zidx[:, ipn]] = prox_pair[m]
            if lay.nf:
                lower[zidx[:, isig]] = 0.0
                feasible[zidx[:, isig]] = True
                sig_idx.append(zidx[:, isig].ravel())
                # the conic form: (mu pn, q) and the rows (psi, e v) in K, complementary (psi not bounded)
                slots = np.r_[isig, _ipf:_ipf + lay.nf]
                cones.setdefault(lay.nf, []).append((zidx[:, slots], zidx[:, np.r_[ipn, _ipf:_ipf + lay.nf]],
                                                     np.column_stack([tab.mu[ips]] + [np.ones(len(ips))] * lay.nf)))
            _frozen(cols)
            _frozen(valid)
            for j, q in enumerate(members):
                pair_cols[q], pair_valid[q] = cols[j], valid
            a, b = tab.a[ips], tab.b[ips]
            closed = tab.closed[ips]
            self.batches.append(dict(
                members=members, lay=lay, dyn_b=dyn_b, P=len(members), ka=_frozen(ka), kb=_frozen(np.maximum(kb, 0)),
                zidx=_frozen(zidx), cols=cols, valid=valid, valid_idx=_frozen(np.flatnonzero(valid)),
                mu=_frozen(tab.mu[ips]), m_ref=_frozen(tab.m_ref[ips]),
                rows_a=tab.rows(a, lay.m) if implicit else None, rows_b=tab.rows(b, lay.k) if implicit else None,
                a=_frozen(a), b=_frozen(b),
                cA=_frozen(model.com_body[a]), cB=_frozen(model.com_body[b]),
                ips=_frozen(np.array(ips)), closed_gap=_frozen(closed) if closed.any() else None))
        self.pairs = [dict(ip=ip, a=int(tab.a[ip]), b=int(tab.b[ip]), mu=float(tab.mu[ip]), lay=tab.lay[ip],
                           off=int(off[q]), m_ref=float(tab.m_ref[ip]), ka=int(tab.ka[ip]), kb=int(tab.kb[ip]),
                           sz=int(sz[q]), cols=pair_cols[q], valid=pair_valid[q]) for q, ip in enumerate(cand)]
        self.lower = _frozen(lower)
        # the conic form's psi (in the sig slot) is free; the Alart-Curnier form keeps the slot bounded with the row
        # sig itself (0 <= sig perp sig >= 0: sig = 0; measured on 63 saved hard steps: 10% fewer iterations than free)
        sig_idx = np.concatenate(sig_idx) if sig_idx else np.zeros(0, int)
        self.sig_idx = _frozen(sig_idx)
        lower_conic, feasible_conic = lower.copy(), feasible.copy()
        lower_conic[sig_idx], feasible_conic[sig_idx] = -np.inf, False
        self.lower_conic, self.feasible_conic = _frozen(lower_conic), _frozen(feasible_conic)
        self.cones = tuple(ipm.ConeBlock(*(_frozen(np.concatenate([blk[i] for blk in blks])) for i in range(3)))
                           for blks in cones.values())
        self.prox = None if prox is None else _frozen(prox)
        self.prox_length = None if prox is None else _frozen(prox_length)
        self.feasible = _frozen(feasible)
        # the merit function measures the angular-velocity rows (rad/s) as the speed at the radius of gyration (m/s,
        # like every other velocity row): unweighted, the spins of light spheres (large inverse inertia) dominated it
        # and pile steps stalled on its local minima (solve_mcp's weights; measured in docs/notes/contact-solver.md)
        weights = np.ones(ntot)
        weights[:6 * nb].reshape(nb, 6)[:, 3:6] = model.gyration[model.dynamic_bodies, None]
        # the joint rows weigh more: a pendulum striking a row of ten touching balls stalled at impact with them
        # unweighted (120 iterations, every attempt, even halved), the same step without the joint converged in 29
        # (core.contact.joints)
        weights[self.joints.start:ntot] = _JOINT_WEIGHT
        self.weights = _frozen(weights)
        self.depth_index = (tuple(_frozen(x) for x in (i_lam, i_mu, i_s, i_a1, i_a2, span)) if implicit and n
                            else None)
        # every field of each step's records, built once through the dataclasses' own __init__ (a step's records are
        # copies of these: copying an instance dict costs a fraction of an __init__ with a dozen keyword arguments)
        self._pair_fields = [vars(_Pair(e_aux=None, **pr)) for pr in self.pairs]
        self._batch_fields = [(bt["members"], vars(_Batch(prs=None, **{k: v for k, v in bt.items() if k != "members"})))
                              for bt in self.batches]

    def new_pairs(self) -> list["_Pair"]:
        """Fresh pair records of one step (the constants filled in)."""
        return [_record(_Pair, fields) for fields in self._pair_fields]

    def new_batches(self, pairs: list["_Pair"]) -> list["_Batch"]:
        """Fresh batch records of one step over its pair records."""
        out = []
        for members, fields in self._batch_fields:
            bt = _record(_Batch, fields)
            bt.prs = [pairs[q] for q in members]
            out.append(bt)
        return out


def _record(cls, fields: dict):
    """A new instance of the dataclass cls with these values of all its fields (a copy of a template's vars)."""
    obj = cls.__new__(cls)
    obj.__dict__.update(fields)
    return obj


class _PairTable:
    """Every pair of a model under one method: bodies, friction, layout, block size, reduced mass, places of its
    bodies among the dynamic ones (-1: static)."""

    def __init__(self, model: ContactModel, method: str):
        P = len(model.pairs)
        self.a, self.b = model.broad.ia.reshape(P), model.broad.ib.reshape(P)
        self.mu = np.array([mu for _a, _b, mu in model.pairs], float).reshape(P)
        self.lay = [_layout_for(model, ip, method) for ip in range(P)]
        self.sz = np.array([lay.size if method == "implicit" else _explicit_size(lay) for lay in self.lay], int)
        # the impulse unknowns are scaled by the pair's reduced mass (A's mass against a static or kinematic B)
        self.m_ref = model.reduced_mass(self.a, self.b)
        self.ka, self.kb = model.dynamic_slot[self.a], model.dynamic_slot[self.b]
        # pairs whose closest points the last attempt eliminates (implicit method), and whose start gap the broad
        # phase knows exactly (_kept_overlap)
        self.closed = np.array([method == "implicit" and _eliminable(model, a, b) for a, b, _mu in model.pairs],
                               bool).reshape(P)
        # pairs of two shapes with flat faces (their closest points get the proximal term, _Plan), and each pair's
        # smaller diameter of its bounded bodies (the lever of a mismatch of its normals, depth_residual)
        self.flat = np.array([model.shapes[a].flat_faces and model.shapes[b].flat_faces for a, b, _mu in model.pairs],
                             bool).reshape(P)
        self.span = 2.0 * np.minimum(model.radius[self.a], model.radius[self.b]).astype(float).reshape(P)
        # the bodies' inequality rows for the compiled evaluation (core.shapes.stack_rows), per number of rows m: the
        # rows of every body with m inequalities (another's for the others), so that a batch's are one gather (rows)
        self._rows = {}
        for m in {sh.m for sh in model.shapes if sh is not None}:  # (None: a body without a shape)
            first = next(sh for sh in model.shapes if sh is not None and sh.m == m)
            kinds, params = stack_rows([sh if sh is not None and sh.m == m else first for sh in model.shapes])
            self._rows[m] = (_frozen(kinds), _frozen(params))

    def rows(self, bodies: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
        """The inequality rows (kinds (P, m), params (P, m, ROW_PARAMS)) of these bodies, each with m inequalities."""
        kinds, params = self._rows[m]
        return _frozen(kinds[bodies]), _frozen(params[bodies])


def _prox_weights(model: ContactModel, tab: _PairTable, cand: np.ndarray) -> np.ndarray:
    """The proximal term's weight on each candidate pair's normal impulse: m / M, m the lighter of its bodies moved by
    forces, M the heaviest body moved by forces in its contact cluster (the bodies that the step's pairs connect;
    static and kinematic bodies connect nothing).  1 where the cluster's masses are equal.

    The term regularises the directions along which the impulses are not unique, with a weight sized for a mode in
    which a unit of the pair's scaled impulse (the impulse over the reduced mass, about the lighter body's mass)
    changes the pair's relative velocity by about one.  Where a heavy body bears on light ones through a chain of
    contacts, the normal impulses' mode that stops it changes it by about m / M: a 300 kg box dropped 1 cm onto a
    1 kg one on the floor, 3 cm off centre, stalled at every halving depth while the term weighed 300 times that
    mode's response, and converges with the weight scaled to it.  The friction impulses keep the weight 1: scaled
    too, a 1000 kg box set on the 1 kg one took 109 Newton iterations in its first step instead of 33 and ended it
    with a residual spin of 1.8e-9 rad/s (docs/notes/contact-solver.md)."""
    a, b = tab.a[cand], tab.b[cand]
    free, mass = model.free, np.asarray(model.mass, float)
    both = free[a] & free[b]
    nbod = free.size
    graph = sp.coo_matrix((np.ones(int(both.sum())), (a[both], b[both])), shape=(nbod, nbod))
    _n, comp = csgraph.connected_components(graph, directed=False)
    heaviest = np.zeros(comp.max() + 1)
    np.maximum.at(heaviest, comp[free], mass[free])
    one = np.where(free[a], a, b)  # a body of the pair moved by forces, if it has one
    light = np.where(both, np.minimum(mass[a], mass[b]), mass[one])
    moved = free[one]
    return np.where(moved, light / np.where(moved, heaviest[comp[one]], 1.0), 1.0)


def _frozen(a: np.ndarray) -> np.ndarray:
    """a, read-only (a plan's arrays are shared by every step that uses it)."""
    a.setflags(write=False)
    return a


def _friction_slots(lay: PairLayout, method: str) -> tuple[int, int, int]:
    """Offsets (in the pair block) of pn, the friction unknowns phi and sig."""
    if method == "implicit":
        return lay.pn, lay.pf, lay.sig
    return 0, 1, 1 + lay.nf
