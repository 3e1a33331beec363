"""Time-stepping of rigid bodies with intermittent contact: geometrically implicit and explicit methods.

One step of size h solves, for the end-of-step velocities nu = (v, w) of every dynamic body and the
pair unknowns of every candidate pair (see core.contact.pair), the mixed complementarity problem
    v - v0 - h (g + f/m)                         - sum F / m            = 0
    w - w_free                                   - sum I0^-1 tau_c      = 0
    pair rows (closest points by KKT, non-penetration, friction ellipsoid)
    joint rows c(q+) / h = 0, their impulses m_ref G0^T lam in the sums above (core.contact.joints)
with I0 = R0 I_body R0^T, the world inertia at the START of the step, w_free the rotation without contact by the
implicit midpoint rule of Euler's equations in the body frame (kernels.body_rows: a free spin keeps its energy),
and the position update p+ = p + h v, Q+ = (1, h w / 2) * Q / sqrt(1 + h^2 |w|^2 / 4).

method "implicit": the geometry of every pair is evaluated at the end-of-step configuration (Chakraborty
et al. 2014).  method "explicit": contact points and normal from a closest-point query at the start of the
step and the gap linearised, gap0 / h + n . v_rel(nu) >= 0 (Anitescu-Potra / Stewart-Trinkle), with the
same bodies and friction ellipsoid.

Solution (step; docs/contact.md, "The solver"): the attempts of _ATTEMPTS in order: semismooth Newton
(core.contact.mcp) on the step's MCP with friction in the Alart-Curnier form from the warm start, in the normalised
form from the warm start, then in the Alart-Curnier form from a cold start with the closest points of sphere and
plane pairs eliminated; if none converges (or one meets the equations but not the overlap
bound, or stalls within _NEAR times the tolerance), the step as two half steps solved the same way, at most
max_halvings levels deep.  solver="interior-point":
the interior-point method with friction as second-order cones (core.contact.ipm) finished by Newton instead.
Convergence is always the global scaled natural residual <= tol, and for the implicit method every pair's overlap
depth (first order, from its closest-point rows) <= _DEPTH_LIMIT.  An implicit step that fails even halved is taken
by the explicit method when that converges and its end meets the same overlap bound, with the true gaps of a
closest-point query (_explicit_fallback; the result says so: StepResult.method).  A step that every Newton attempt
of both methods failed is, last, the solution of its relaxed problem (core.contact.relaxed: Anitescu's convex
relaxation of the explicit method's step, which has one solution whenever the pile can open) when its end meets the
method's overlap bound (_relaxed_step; StepResult.method "relaxed").  The step size h is fixed (the caller's dt); a
step that fails is reported as failed and the state is kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable, NamedTuple

import numpy as np

from .bodies import ContactModel, RunCancelled, State
from .closest import (_eliminable, _rot, b_normal, _sphere_plane_geometry, _spheres_geometry, _world_halfspace,
                      candidate_pairs, closest_points_chunked, closest_points_many)
from .elements import ElementMatrix
from .explicit import _eval_explicit_batch, _explicit_size
from .joints import JointStep
from .kernels import advance_poses, batch_rows, body_blocks, body_rows, contact_frames, overlap_depth, scatter_add
from . import ipm
from .ipm import SolverOptions
from .mcp import EXTRA_STALLED, NEAR_STALLED, MCPResult, NewtonOptions, natural_residual, solve_mcp
from .pair import DEPTH_LIMIT, PIN_SPEED, PairLayout, contact_frame_aux, cross3, separation_pin, tangent_frame
from .plan import Workspace, _Batch, _friction_slots, _Pair
from .relaxed import relaxed_start
from ..shapes.kinds import Cylinder
from ..transforms import matrix_to_quat

if TYPE_CHECKING:  # (core.kinematics is imported where a run has drivers)
    from ..kinematics import MotionEnd

__all__ = ["ContactResult", "StepResult", "step", "METHODS", "fallback_code", "SOLVERS", "turns_bounded",
           "too_fast_spin", "RESOLUTION", "MAX_REACH", "too_far", "longest_step", "step_too_long"]

METHODS = ("implicit", "explicit")
SOLVERS = ("newton", "interior-point")  # the step's solvers (docs/contact.md)
# --- the solver's constants (docs/contact.md, "Constants"; each measured on the bench's scenes and on saved hard steps)
_NEWTON_ITER = 60  # semismooth Newton iterations per run of a Newton attempt at most (step's max_iter)
# the stopping tolerance of each method: the scaled natural residual (core.contact.mcp.natural_residual) <= tol, and
# for the implicit method the overlap bound (_DEPTH_LIMIT).  The explicit method's rows are velocities (its gap is
# linearised: gap0 / h + n . v_rel >= 0), so 1e-8 leaves at most h 1e-8 (1 + max|z|) of position error per step, far
# under its linearisation's (millimetres on cube piles).  At 1e-10 its piles' Newton runs stalled at 1e-10 to 1e-8,
# a floor of rounding in their ill-conditioned friction rows: a 27-sphere pile (seed 1767924850) failed at step 81
# even at h/64 (7,542 iterations before it), and completed 100 steps at 1e-8 in 3,853 iterations without halving
_TOL = {"implicit": 1e-10, "explicit": 1e-8}
# An attempt whose Newton run stalls with its best residual within _NEAR times the tolerance ends there (no restart:
# mcp.NEAR_STALLED) and the step is halved at once; the attempts it leaves out are not made at that size.  Such runs
# sit on a floor that the other attempts, which change the start and the
# friction form, reach too: 27-sphere pile steps stalled at 1.2e-10 to 2.5e-10 (the overlap bound: closest points
# 5e-10 m off the surfaces, with the Newton directions dominated by indeterminate impulses) in all four attempts,
# about 110 iterations each, and their halves converged in 20-50.  Same seeds, 100 steps: 27-sphere piles at mu 0.4
# (6 seeds) 11,944 Newton iterations and 21.9 CPU-s against 15,428 and 32.1 s, the slowest steps 0.2-1.3 s against
# 0.5-1.8 s; at mu 0.8 (10 seeds, 9 complete either way) 58,862 and 113 s against 80,459 and 173 s; mixed piles (4
# seeds, 80 steps) 5,395 and 16.3 s against 5,006 and 16.9 s.  The attempts left out used to be made at the full
# size when the halves failed; with the explicit method's step behind the halving (_explicit_fallback) they never
# converged in the bench's draws (the ten- and forty-seed 27-sphere draws, the twenty mixed piles to 150 steps, the
# quick bench's cube and sphere piles) nor on the 23 saved hard states: the one step that reached them (the jammed
# pile) failed there too, so they were removed
_NEAR = 30.0
_MAX_HALVINGS = 8  # a step whose attempts all fail is halved, at most this many levels deep (h/256; max_halvings).
# The deeper levels are reached only where the shallower ones failed, and _STEP_ITER bounds the step whatever the
# depth.  27-sphere piles at mu 0.8, 100 steps, seeds 1-14: 9 runs complete with 3 levels (h/8), 12 with 6 (13
# without the budget: one step took 25 s).  The five runs of the bench's draws of ten and forty seeds that stopped
# with 6 levels (at mu 0.4 and 0.8): three of their failing steps converge at h/128 (2,247-2,711 iterations), and
# those runs then complete their 100 steps; the other two fail even at h/16384
_STEP_ITER = 7200  # Newton iterations (and interior-point iterations) of one step at most, over all its attempts and
# sub-steps: the step fails when they are spent (each attempt's runs are capped at what is left).  Set as the worst
# case of three levels of halving when a sub-step made four attempts (15 sub-steps of 4 x 2 x 60 iterations) and
# kept with three (20 sub-steps of 3 x 2 x 60; runs of 27-sphere piles at mu 0.8 had steps of up to 6,338) and
# without the normalised form's restart (24 sub-steps of 2 x 60 + 60 + 2 x 60)
_AC_RHO = 1.0  # Alart-Curnier parameter of the friction rows (impulses and speeds in the same units, m/s)
_HANDOVER_TOL = 1e-6  # the conic interior-point attempt stops at this residual ...
_HANDOVER_COMP = 1e-9  # ... and complementarity, and hands over to Newton (quadratic near a solution) ...
_HANDOVER_ITER = 30  # ... for at most this many iterations
_DENSE_LIMIT = 250  # above this many unknowns the Jacobian is assembled sparse
_PREDICT_MAX_PAIRS = 2  # the explicit predictor for new pairs only in steps with at most this many pairs
_LANDING_MAX_PAIRS = 4  # corners landing on a face (_patches) looked for in steps with at most this many pairs
_TIGHT_TOL = 1e-13  # a converged step of one or two pairs is polished towards this residual (at most _TIGHT_ITER
# more Newton iterations)
_TIGHT_ITER = 2
_QUERY_CHUNK = 4  # closest-point queries of a step's start between two looks at its cancel callable (_queries)
_DEPTH_LIMIT = DEPTH_LIMIT  # 9e-10 m (core.contact.pair): the deepest overlap of two bodies (first order) that an
# implicit step accepts, under the invariant gap >= -1e-9 of the validation tests. Measured on the 22 hard states of
# three 27-sphere runs: 26 s with 9e-10, 76 s with 5e-10; each closest-point row bounded by 1e-10 m or 3e-10 m
# instead: 61 s and 30 s
_KEEP_OVERLAP = 0.5 * _DEPTH_LIMIT  # the overlap of a step's start that a sphere or plane pair keeps (_kept_overlap)
# The finest length a step resolves: of the overlap bound, what the kept overlap leaves to the step's own error (4.5e-10
# m).  Every row of the overlap bound is a difference of world coordinates (closest points, end-of-step poses p + h v),
# each a double, so a coordinate whose doubles are further apart than this cannot be placed as finely as the bound
# asks.  (The scaled natural residual is no limit: its tolerance, 1e-10 (1 + max|z|), grows with the coordinates in
# z while their rounding is 1.1e-16 of them.)
RESOLUTION = _DEPTH_LIMIT - _KEEP_OVERLAP
# The farthest a body may reach from the origin on any axis (its centre of mass's coordinate plus its bounding radius):
# below 2^e doubles are at most 2^(e - 53) apart, so the largest power of two below which their spacing is within
# RESOLUTION: 2^21 m = 2,097,152 m (spacing 2.3e-10 m below it, 4.7e-10 m from it on).  Measured (docs/contact.md, How
# far from the origin: spheres of 1 cm and 1 um dropped onto a floor z <= -D from 8 seeded heights, 60 steps; an
# ellipsoid dropped turned and a box dropped onto a slab, 8 seeds of 40 steps): up to D = 1.5e6 m the Newton
# iterations are those at the origin, no step halved; from 2.1e6 m (spacing 4.7e-10 m) the steps at rest stall at
# overlaps of a few spacings: the 1 um sphere 46 iterations a step against 0.8, half its steps taken by the explicit
# method (user test F9), the 1 cm sphere and the ellipsoid halved, and from 4.2e6 m (9.3e-10 m, beyond the bound
# itself) the ellipsoid's runs stop.  core.contact.recording refuses a body that starts so far and stops a run that
# carries one there
MAX_REACH = 2.0 ** (math.floor(math.log2(RESOLUTION)) + 53)
_AUX_KEEP = 0.9  # a pair keeps last step's tangent-frame axis while |axis . normal| stays below this
_Z = np.array([0.0, 0.0, 1.0])


def planar_aux(model: ContactModel, n: np.ndarray) -> np.ndarray:
    """The auxiliary axis of a pair's tangent frame (pair.tangent_frame) at normal n: in a planar document the plane's
    normal z while n lies within _AUX_KEEP of the plane, so that the first tangent t = z x n / |z x n| lies in the plane
    and the second, o = n x t, is z for a normal in the plane: across the plane, where the bodies cannot slip and the
    friction is not unique (_StepProblem._initial_guess starts it at zero); otherwise pair.contact_frame_aux(n)."""
    if model.planar and abs(float(n[2])) <= _AUX_KEEP * float(np.linalg.norm(n)):
        return _Z.copy()
    return contact_frame_aux(n)
_FALLBACK_ITER = 1200  # Newton iterations of the explicit method's fallback step at most (beyond max_iterations) ...
_FALLBACK_HALVINGS = 1  # ... and its halving levels.  The one implicit step of the bench's draws that failed at every
# depth (a 27-sphere pile at mu 0.8, a frictional jam: its step converges at mu 0.75) is taken by the explicit method
# at one halving in 348 iterations, deepest true gap -2.3e-10 m; the implicit steps after it converge (25, 11, 64
# iterations).  Tried before halving instead of after it (the forty-seed draw at mu 0.8, master seed 1328632510):
# 192 steps taken by it in place of 198 halved ones, the same Newton iterations (-0.8 %), more steps over 0.5 s (76
# against 69) and one run that stops: the explicit step is as hard as the implicit one there, so it stays the last
# resort, not a shortcut
_NO_JAC = np.zeros((0, 0, 0))  # the Jacobian arguments of a values-only body_blocks call
_NO_FLOOR = np.zeros(0)  # batch_rows' floor of a batch without kept overlaps


@dataclass(frozen=True)
class ContactResult:
    """One candidate pair after a step (physical impulses over the step, world frame)."""

    pair: int  # index into model.pairs
    a1: np.ndarray  # closest point on A (end of step for implicit, start for explicit)
    a2: np.ndarray  # closest point on B
    normal: np.ndarray  # unit normal from B towards A
    gap: float  # signed separation at the end of the step (m); "explicit": from a closest-point query at the end
    # poses (its solver holds only the linearised gap >= 0, so this one shows the scheme's penetration)
    pn: float  # normal impulse (N s)
    pf: np.ndarray  # friction impulse vector on A, world (N s)
    pr: float  # torsional friction impulse about the normal (N m s)
    slip: np.ndarray  # end-of-step sliding velocity of A at the contact relative to B's motion (pair.carried_slip;
    # implicit method), world (m/s)
    mu: float  # friction coefficient of the pair


@dataclass
class StepResult:
    """Outcome of one step (a result; on failure `state` is the unchanged input state)."""

    state: State
    converged: bool
    iterations: int
    residual: float
    reason: str
    contacts: list = field(default_factory=list)
    halvings: int = 0  # how many times the step had to be split to converge
    pairs: int = 0  # candidate pairs in the step's solve (of the whole step, when it was halved)
    joint_impulse: np.ndarray | None = None  # (J, 6) per model joint: impulse on its bodies[1] over the step, N s,
    # and angular impulse about the joint origin, N m s (world; core.contact.joints.JointStep.impulses)
    driver_impulse: np.ndarray | None = None  # (D,) per driver: the generalised impulse it gives its coordinate over
    # the step to move the kinematic bodies against the contacts and joints (N s or N m s; _driver_impulses)
    method: str = ""  # the method that took the step: the one asked for, "explicit" when the implicit step failed
    # and the explicit method took it (_explicit_fallback), "relaxed" when both failed and the step is the solution of
    # its relaxed problem (_relaxed_step); "" when the step failed
    motion_end: MotionEnd | None = None  # the step failed because the drivers' motion cannot be followed to its end
    # (a driver's pole or bound, a limit position): why, and where that motion ends when it was found


def _has_warm_z(warm: dict | None, lay: PairLayout) -> bool:
    """Whether an implicit step's warm start holds a pair's unknowns (z) of its layout."""
    wz = None if warm is None else warm.get("z")
    return wz is not None and wz.size == lay.size


def _pair_pose(state: State, a: int, b: int) -> np.ndarray:
    """The poses of a pair's two bodies as one array (positions and quaternions of A and B)."""
    return np.concatenate((state.p[a], state.q[a], state.p[b], state.q[b]))


def _same_pose(warm: dict | None, state: State, a: int, b: int) -> bool:
    """Whether warm holds a converged closest-point query of the pair at exactly these poses (explicit method)."""
    pose = None if warm is None else warm.get("geo_pose")
    return pose is not None and np.array_equal(pose, _pair_pose(state, a, b))


def step(model: ContactModel, state: State, h: float, method: str = "implicit", *, tol: float | None = None,
         max_iter: int = _NEWTON_ITER, max_halvings: int = _MAX_HALVINGS, max_iterations: int = _STEP_ITER,
         cancel: Callable[[], bool] | None = None, workspace: "Workspace | None" = None, solver: str = "newton",
         options: SolverOptions | None = None, newton: NewtonOptions | None = None,
         fallback: bool = True) -> StepResult:
    """Advance `state` by h (no exception on failure: a result with converged=False and the input state).

    solver "newton" (default): the attempts of _ATTEMPTS in order until one converges: semismooth Newton with
    friction in the Alart-Curnier form from the warm start (the last step's solution), in the normalised form from
    the warm start, then in the Alart-Curnier form from a cold start, with (implicit method) the closest points of
    sphere and plane pairs eliminated.  If none does (or one meets the equations but not the
    overlap bound, or stalls within _NEAR times the tolerance: the other attempts rarely change that), the step is
    solved as two half steps the same way, at most max_halvings levels deep.  solver "interior-point": the conic
    interior-point attempt (_CONIC) alone
    (options: its SolverOptions), halved the same way.  Cost bound: max_iterations iterations over all the step's
    attempts and sub-steps, the step failing when they are spent; each attempt's runs are capped at what is left,
    so the last attempt may exceed it by at most max_iter + 24 (its restart and two active-set polishes), the
    interior-point attempt (solver "interior-point"), started with any budget left, by options.max_iter +
    _HANDOVER_ITER.  fallback (implicit method): a step that fails so is made through the explicit method's step
    (_explicit_fallback: its attempts, the first from its relaxed problem's solution, at most _FALLBACK_HALVINGS
    levels and _FALLBACK_ITER iterations more): an implicit attempt from that step's end, else the explicit step
    itself when its end meets the overlap bound; result.method says which method took the step.  (Explicit method:
    such a step is made once more at its full size from its relaxed problem's solution, _relaxed_retry.)  A step
    that fails so too is its relaxed problem's solution when its end meets the method's overlap bound
    (_relaxed_step, result.method "relaxed": a sliding loaded pair ends it apart by h mu |u_t|).

    tol: the stopping tolerance of the scaled natural residual (default: the method's, _TOL).  options: the
    interior point's limits (SolverOptions), newton: the Newton attempts' (core.contact.mcp.NewtonOptions); their
    defaults when None.  cancel() is checked
    at every evaluation of the step's equations and every interior-point iteration: a cancelled step is a failed one
    ("cancelled at ...").  workspace: this run's caches (Workspace; a step without one builds what it needs and keeps
    nothing)."""
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}")
    tol = _TOL[method] if tol is None else tol
    ws = workspace if workspace is not None else Workspace()
    forms = (_CONIC,) if solver == "interior-point" else _ATTEMPTS
    opts = _Options(options or SolverOptions(), newton or NewtonOptions())

    # the step's iterations, shared by its sub-steps (A step longer than the scene allows) as by its attempts and
    # halves: its own attempts', and those of the explicit method's step made for a failed one
    budget, spare = _Budget(max_iterations), _Budget(_FALLBACK_ITER)

    if model.drive is not None:
        # the drivers' motion to the step's end: where it cannot be followed (a driver's pole or bound, a limit
        # position) no attempt, halving or other method makes the step, and the run stops there with its reason
        from ..kinematics import MotionEnd

        got = ws.driven(model).at(state.t + h)
        if isinstance(got, MotionEnd) and got.end is not None:  # (a spent budget, no end found: halving may help)
            return StepResult(state, False, 0, float("nan"), f"the driven bodies at t = {state.t + h:.6g} s: "
                              f"{got.reason}", motion_end=got)
    longest = ws.longest_step(model)
    levels = _substep_levels(h, longest)
    if levels > _MAX_SUBSTEP_LEVELS:
        return StepResult(state, False, 0, float("nan"), step_too_long(h, longest))
    reach = h / 2.0**levels  # the step size the scene allows (A step longer than the scene allows)

    def whole(st: State, hs: float) -> StepResult:
        # one step of at most the scene's longest step: its attempts and halving, then the fallback.  Its reach (the
        # broad phase's travel and the patch test's) is that of the step the scene allows, also in the sub-steps of
        # a body spinning in contact: a cylinder tripped at 38 rad/s landed back on its rim in the first of two
        # sub-steps, whose own motion the patch test had found landing nothing; every attempt failed at every depth
        # (1,554 Newton iterations, the explicit method's step) where the whole step's test starts it from the patch
        # predictor (51)
        res = _step_split(model, st, hs, method, tol, max_iter, max_halvings, forms, opts, ws, cancel, budget,
                          reach=reach)
        if res.converged:
            res.method = method
        elif fallback:
            res = (_explicit_fallback if method == "implicit" else _relaxed_retry)(model, st, hs, max_iter, opts, ws,
                                                                                    cancel, res, spare)
            if not res.converged:
                res = _relaxed_step(model, st, hs, method, ws, cancel, res)
        return res

    levels = max(levels, _spin_levels(model, state, h))  # (a body spinning in contact: _CONTACT_TURN)
    try:
        return _sub_stepped(whole, state, h, levels)
    except (_Cancelled, RunCancelled):  # (RunCancelled: from the closest-point queries of a step's start)
        return StepResult(state, False, 0, float("nan"), f"cancelled at t = {state.t:.6g} s")


_TOO_LONG = "the step is too long for this scene"
# The longest step of a scene with gravity g and shaped bodies moved by forces other than spheres: _STEP_SCALE
# sqrt(a / |g|), a the smallest half-width of such a body (along its body axes), the time in which gravity moves
# it by about its own size.  A longer step is made as 2^k equal sub-steps (one recorded step; at most
# _MAX_SUBSTEP_LEVELS levels, beyond which the step fails with its reason).  Why: the implicit step's equations (and
# the explicit method's) have spurious solutions in which a box pivots on an edge, its normal impulse many times
# its weight's and friction tipping it, and Newton finds them once g h^2 / a is not small: a cube of 0.2 m sliding
# at 2 m/s with mu 0.3 rolled over its front edge in steps of 0.1 s (and rolled on in steps up to 1000 s), a cube
# resting on a box jumped off it gaining 10 % energy in steps of 0.2 s.  Measured on cubes of 0.05, 0.2 and 0.8 m
# sliding on a floor (mu 0.3, 0.6 and 0.9, speeds 10 sizes a second): the first spurious turn came at steps of 0.5
# to 1.5 sqrt(a / g) (0.5 at mu 0.9); a simple model of the pivot (the edge on the floor at the end of the step,
# the impulses' moments about the centre) has that branch for any step, at a turn of about (1 - mu) / (1 + mu) +
# 2 / (3 (1 + mu)) rad for small g h^2 / a, falling towards (1 - mu) / (1 + mu) as g h^2 / a grows, which is where
# Newton reaches it from the start.  Every example and bench scene has a longest step of 0.0128 s or more (the
# thinnest bodies: the disc and the cam follower, a = 0.01 m), so none of them is sub-stepped at its time step
_STEP_SCALE = 0.4
_MAX_SUBSTEP_LEVELS = 10  # at most 1024 sub-steps of a step


def _spin_levels(model: ContactModel, state: State, h: float) -> int:
    """k: the step made as 2^k sub-steps turns no body in contact by more than _CONTACT_TURN (from the start's spin;
    at most _MAX_SUBSTEP_LEVELS).  A body in contact: one whose turn is bounded (turns_bounded) with a pair in the
    last step's solve (state.warm: in contact range, touching or about to; with touching pairs alone, a die's landing
    step was made whole and rises of energy of 1.9 % were left); its spin about a cylinder's own axis is left out
    (that turn leaves its shape where it is, as a sphere's does)."""
    near = set()
    for ip in state.warm:
        a, b, _ = model.pairs[ip]
        near.update((a, b))
    rate = 0.0
    for i in near:
        if not turns_bounded(model, i):
            continue
        w = state.w[i]
        if isinstance(model.shapes[i], Cylinder):  # (a disc too)
            axis = _rot(state.q[i:i + 1])[0][:, 2]
            w = w - (w @ axis) * axis
        rate = max(rate, float(np.linalg.norm(w)))
    if h * rate <= _CONTACT_TURN:
        return 0
    return min(int(np.ceil(np.log2(h * rate / _CONTACT_TURN) - 1e-12)), _MAX_SUBSTEP_LEVELS)


def _substep_levels(h: float, longest: float) -> int:
    """k: a step of h is made as 2^k sub-steps of at most `longest` (_MAX_SUBSTEP_LEVELS at most, or it fails)."""
    return 0 if h <= longest else int(np.ceil(np.log2(h / longest) - 1e-12))


def step_too_long(h: float, longest: float) -> str:
    """Why a step of h cannot be taken in a scene whose longest step is `longest` (longest_step), '' if it can: more
    than 2^_MAX_SUBSTEP_LEVELS sub-steps. Known before a run starts (core.contact.ContactRun refuses its dt, as the
    command line and the app's runs open it), and the step's own reason if it still comes to one."""
    if _substep_levels(h, longest) <= _MAX_SUBSTEP_LEVELS:
        return ""
    return (f"{_TOO_LONG}: h = {h:.3g} s is more than {2 ** _MAX_SUBSTEP_LEVELS} times the longest step of this scene, "
            f"{longest:.3g} s (longest_step): use a shorter time step")


def longest_step(model: ContactModel) -> float:
    """The longest step this scene's steps are made with (_STEP_SCALE sqrt(a / |g|), see there); inf without gravity
    or without a shaped body moved by forces other than a sphere."""
    g = float(np.linalg.norm(model.gravity))
    a = np.inf
    axes = np.eye(3)
    for i, shape in enumerate(model.shapes):
        if shape is None or not model.free[i] or shape.type == "sphere":
            continue
        a = min(a, min(float((shape.support(e) - shape.support(-e)) @ e) / 2.0 for e in axes))
    return _STEP_SCALE * float(np.sqrt(a / g)) if g > 0.0 and np.isfinite(a) else np.inf


def _sub_stepped(whole: Callable[[State, float], StepResult], state: State, h: float, levels: int) -> StepResult:
    """The step as 2^levels equal sub-steps made by whole(state, size), one result (_in_halves)."""
    if levels <= 0:
        return whole(state, h)
    start = StepResult(state, False, 0, float("nan"), "")
    return _in_halves(state, start, lambda st: _sub_stepped(whole, st, 0.5 * h, levels - 1))


# the attempts of one (sub-)step, in order: (form, Newton iterations, restarts[, rho[, cold[, elim]]]).  The friction
# law in the Alart-Curnier form from the warm start (the last step's solution), in the normalised form
# (core.contact.pair) from the warm start, then in the Alart-Curnier form from a cold start (every pair from its closest
# points at the start of the step, no impulse: the warm start can itself be what fails) with the closest points of
# sphere and plane pairs eliminated (_geometry_elimination; the explicit method's geometry is fixed, and a step without
# such a pair has nothing to eliminate).  Chosen by measurement: every attempt run alone on 128 hard steps (steps that
# took over 60 iterations) of 27-sphere piles at mu 0.4 and 0.8, the 8-sphere pile, 4 and 8 cubes, the 3x3 layer and the
# mixed pile (seeds 21-23, 41-44, 2-7): the first attempt solved 48, the normalised form 72, the cold start 64, the
# elimination 61, the conic interior point 40 and none that no other attempt solved.  Tried in the order above the 128
# steps cost 71.6 CPU-s; with the cold start second 87.8 (the mixed pile: the normalised form solved all 15 of its hard
# steps, the cold start 8), and with the interior point among them 78.7, the same 22 steps left to halving in each
# order.  The cold start solves other steps (27-sphere piles at mu 0.8: 32 of 77, 20 of them ones the normalised form
# did not); the elimination others again (27-sphere piles at mu 0.8, 100 steps, 14 fresh seeds: 7 runs complete without
# it, 12 with it; the saved hard step that failed even at h/32 converges whole in 440 iterations).  Eliminating in every
# attempt instead only changed which steps failed.  The cold start without the elimination, once an attempt of its own
# between the normalised form and the elimination, is left out: one step from each of 2,400 saved states of 27-sphere
# piles (seeds 1-8 at mu 0.4 and 0.8), mixed piles (seeds 1-4), the cube scenes and the 8-sphere pile took 2.3 % and
# 2.9 % fewer Newton iterations on the piles without it, 0.7 % fewer on the mixed piles, the same on the others.  The
# normalised form makes no restart (solve_mcp's smoothed restart from its start): the elimination after it is its
# restart, from another start in another form.  The first attempt keeps its restart: without it 8 turned cubes in two
# layers stalled at 1e-5 in every attempt where the restart converges (4 of 240 saved steps failed even halved).  One
# step from each of 640 saved 27-sphere states at mu 0.4 and 640 at mu 0.8: 16,542 and 36,311 Newton iterations against
# 16,750 and 38,510 with the restart (with no restart in the first two attempts 17,023 and 35,090; in the normalised
# form's only, 18,796 and 39,687); the saved states of the other scenes the same iterations but the mixed and 8-cube
# piles, +1.5 %.  The bench's forty-seed draw (master seed 1328632510): at mu 0.4 all 40 runs complete either way,
# 73,536 iterations against 75,140 (geometric mean of the per-run ratios 0.99), 23 steps over 0.5 s against 26; at mu
# 0.8 38 of 40 complete either way (two others stop), 155,284 against 173,860 on the 36 common runs (0.88), 128 steps
# over 0.5 s against 144.  Without the normalised form (27-sphere piles, seeds 1-16, 100 steps): -4.4 % Newton
# iterations at mu 0.4, +17 % at mu 0.8, where it converges on half the steps it is tried on
_ATTEMPTS = (("ac", 60, 1), ("normalised", 60, 0), ("ac", 60, 1, _AC_RHO, True, True))
# the attempt of solver="interior-point": friction as second-order cones (core.contact.ipm), its iterations set by
# SolverOptions, then at most _HANDOVER_ITER Newton iterations
_CONIC = ("conic", 0, 0)
# the attempts of the explicit method's step that stands in for a failed implicit one (_explicit_fallback): first
# Newton from the solution of the step's relaxed problem (core.contact.relaxed: Anitescu's convex relaxation of the
# same geometry, which always has a solution), then the explicit method's own attempts.  Forced on the 25 saved hard
# states of bench/hard_states (the implicit step made to fail): the own attempts alone take 18 of them (the other
# seven: the two 27-sphere jams of the forty-seed draws at mu 0.8, a 27-sphere step at mu 0.4 and four mixed piles'
# steps, whose explicit step overlaps by 0.06-1.4 mm and is refused), the relaxed start alone 16 (both jams, in 42 and
# 37 iterations, and not four other pile steps, where its Newton run stalls), the two in this order 21 (all but the
# four mixed piles' steps, which then converge as the implicit attempt the explicit step predicts), in 1,657
# iterations (Newton's and the relaxed problem's) against 2,518
_FALLBACK_ATTEMPTS = (("ac", 60, 1, _AC_RHO, False, False, True),) + _ATTEMPTS


_OVERLAP_STALLED = "overlap bound not met"
_BUDGET_SPENT = "the step's iteration budget is spent"
_TURNED = "a body turns too far in one step"
_PASSED = "a body passes through another in one step"
_MAX_TURN = 2.0  # h |w| of a body's end-of-step angular velocity at most (a quarter turn: the step's rotation
# cayley(h w / 2) turns by 2 atan(h |w| / 2), 90 degrees at 2, and no more than 180 however fast w is).  Beyond it the
# step's equations have spurious solutions: the box of contact_box_slide in steps of 1 s rolled 95 rad a step (half a
# turn, a cube looks the same) and sped up from 2 to 20 m/s in five steps, gaining energy; such a step is halved.
# Spheres are left out (their shape does not turn with them: a fast-rolling ball is no problem), and so are bodies
# moved by the drivers.  The bench's scenes at h = 0.01 never come near it (the spinning ellipsoid: 0.6)


_CONTACT_TURN = 0.25  # h |w| of a body in contact at the start of a step at most: a faster spin sub-steps the step
# (_spin_levels; A body spinning in contact, docs/contact.md).  The step is first order, and a body that turns far in
# one step while it touches pivots about end-of-step corners it never had: a 16 mm polytope die thrown at 2.5 m/s
# (user test s58) tumbled at 1.4-2 rad a step at h = 0.01, gained energy in 76 of 300 steps (+11 % of its energy in
# one) and never settled; 18 throws of a cube, an octahedron and an icosahedron die (random speeds and spins), against
# no limit: 0.5 rad left rises of up to 1.9 % of the start's energy in 5 runs, 0.25 rad none above 0.1 % (each die at
# rest), 0.1 rad none either at 2.7 times the iterations of 0.25; 0.25 took 5,495 Newton iterations against 30,504
# with no limit (the tumbling runs end sooner)


def turns_bounded(model, i: int) -> bool:
    """Whether model body i's turn in a step is bounded by _MAX_TURN: moved by forces, shaped, not a sphere."""
    return bool(model.free[i]) and model.shapes[i] is not None and model.shapes[i].type != "sphere"


def too_fast_spin(model, w: np.ndarray, h: float) -> tuple[int, str] | None:
    """Of the bodies whose turn in a step is bounded (turns_bounded), the first whose spin (w, (N, 3) rad/s) is so
    fast that even the deepest halving of a step of h turns it by more than _MAX_TURN: (its index, why, with the
    time step that would do); None when there is none (such a run would stop at its first step)."""
    h_min = h / 2.0**_MAX_HALVINGS
    for i in range(model.n_bodies):
        rate = float(np.linalg.norm(w[i]))
        if h_min * rate > _MAX_TURN and turns_bounded(model, i):
            return i, (f"'{model.names[i]}' spins at {rate:.3g} rad/s, too fast for steps of {h:.3g} s: a step may "
                       f"turn a body by at most {_MAX_TURN:g} rad (h |w|), and even halved as far as it goes (to "
                       f"{h_min:.3g} s) it would turn {h_min * rate:.3g} rad; use a time step of at most "
                       f"{_MAX_TURN / rate:.3g} s or a slower spin")
    return None


def too_far(model, p: np.ndarray) -> tuple[int, int, float] | None:
    """Of the dynamic bodies (centres of mass at p, (N, 3)), the one that reaches farthest from the origin on an axis
    when that is MAX_REACH or more: (its index, the axis, its reach: the centre's coordinate plus the bounding radius,
    0 for a body without a shape); None when every one is nearer."""
    dyn = model.dynamic_bodies
    if dyn.size == 0:
        return None
    rad = np.asarray(model.radius, float)[dyn]
    reach = np.abs(np.asarray(p, float)[dyn]) + np.where(np.isfinite(rad), rad, 0.0)[:, None]
    k = int(np.argmax(reach))
    j, axis = divmod(k, 3)
    far = float(reach[j, axis])
    return (int(dyn[j]), axis, far) if not far < MAX_REACH else None  # (a non-finite reach is beyond too)


class _Cancelled(Exception):
    pass


class _Budget:
    """The Newton (and interior-point) iterations a step has left, shared by all its attempts and sub-steps."""

    def __init__(self, left: int):
        self.left = left


class _Options(NamedTuple):
    """The limits a step passes down to its attempts: the interior point's and the Newton attempts'."""

    ipm: SolverOptions
    newton: NewtonOptions


def _step_split(model, state, h, method, tol, max_iter, max_halvings, forms, opts, ws, cancel, budget,
                reach=None) -> StepResult:
    """The step by its attempts (_attempts); if none converges, as two halves solved the same way, at most
    max_halvings levels deep.  budget: the iterations the whole step has left (_Budget), shared by all its sub-steps.

    reach: the step size whose travel the broad phase and the patch test (_patches) cover (candidate_pairs; h when
    None).  The halves keep the whole step's: a sub-step solves the pairs of the step it is part of, not the fewer its
    own margin would take, and starts from the patch predictor where corners land within the whole step.
    (A saved 27-sphere state at mu 0.8 whose step failed at every depth, with a sub-step of 63 pairs against the
    step's 64: converged after 6 halvings in 882 Newton iterations with the whole step's pairs; docs/notes.)"""
    reach = h if reach is None else reach
    res = _attempts(model, state, h, method, tol, max_iter, max_halvings > 0, forms, opts, ws, cancel, budget, reach)
    if res.converged or max_halvings <= 0 or budget.left <= 0:
        return res
    return _in_halves(state, res, lambda st: _step_split(model, st, 0.5 * h, method, tol, max_iter, max_halvings - 1,
                                                          forms, opts, ws, cancel, budget, reach))


def _attempts(model, state, h, method, tol, max_iter, can_halve, forms, opts, ws, cancel, budget, reach=None):
    """One (sub-)step by the attempts `forms` in order, until one converges, each capped at the budget left (spent
    here).  An attempt that stalls at a floor ends them when the step can be halved (the other attempts change the
    path to the step's solution, not the floor): one that meets the equations but not the overlap bound, or that
    stalls within _NEAR times the tolerance."""
    its, res = 0, None
    for form, iters, restarts, *more in forms:
        if budget.left <= 0:
            break
        r = _step_once(model, state, h, method, tol, min(iters, max_iter, budget.left), form=form, ws=ws,
                       cancel=cancel, options=opts.ipm, newton=opts.newton, restarts=restarts, reach=reach,
                       **dict(zip(("rho", "cold", "elim", "relaxed"), more)))
        budget.left -= r.iterations
        its += r.iterations
        res = r
        res.iterations = its
        if res.converged:
            break
        if can_halve and r.reason.startswith((_OVERLAP_STALLED, NEAR_STALLED, _TURNED, _PASSED)):
            return res
    if res is None or (budget.left <= 0 and not res.converged):  # (the budget ran out before an attempt converged)
        why = f"{_BUDGET_SPENT} ({res.reason if res else 'by the sub-steps before this one'})"
        return StepResult(state, False, its, res.residual if res else float("nan"), why,
                          pairs=res.pairs if res else 0)
    return res


def _explicit_fallback(model, state, h, max_iter, opts, ws, cancel, failed: StepResult, budget: _Budget
                       ) -> StepResult:
    """The implicit step that `failed` (at every depth) made through the explicit method's step: its attempts
    (_FALLBACK_ATTEMPTS, the first from the solution of the step's relaxed problem), at most _FALLBACK_HALVINGS
    levels deep and the iterations left in budget (_FALLBACK_ITER for a whole step, its sub-steps sharing them).
    When it converges it predicts the step: an implicit attempt starts from its end (cold: every pair's closest
    points at its end poses, its impulses), and if that converges the step is
    the implicit method's (a mixed pile's step that every implicit attempt stalled on at every depth, where the
    explicit step's end overlapped by 1.4 mm, converges so in 36 iterations).  Otherwise the explicit step is
    accepted when the true gaps at its end (its closest-point queries, StepResult.contacts) meet the implicit method's
    overlap bound; else `failed` is returned with what the explicit step did added to its reason.

    Why this method: the geometrically implicit step with Coulomb friction need not have a solution (a pile that
    jams with mu 0.8 where it slides at 0.75); the explicit method's step, with the geometry fixed at the start and
    the gap linearised, is the problem whose form with a polyhedral friction cone has a solution for any friction
    coefficient (Anitescu and Potra 1997, Stewart and Trinkle 1996; here with the friction ellipsoid, whose existence
    the bench's runs show but no theorem quoted here covers).  Its gaps are first order only, hence the check at the
    end."""
    r = _step_split(model, state, h, "explicit", _TOL["explicit"], max_iter, _FALLBACK_HALVINGS, _FALLBACK_ATTEMPTS,
                    opts, ws, cancel, budget)
    its = failed.iterations + r.iterations
    if r.converged:
        # the implicit step predicted by it: an implicit attempt from its end (every pair's closest points at its end
        # poses, its impulses)
        corrected = _step_once(model, state, h, "implicit", _TOL["implicit"], max(1, min(max_iter, budget.left)),
                               ws=ws, cancel=cancel, newton=opts.newton, reach=h, cold=True, predictor=r)
        budget.left -= corrected.iterations
        its += corrected.iterations
        if corrected.converged:
            return replace(corrected, iterations=its, method="implicit",
                           reason=f"converged from the explicit method's step: the implicit step failed ({failed.reason})")
        deepest = min((c.gap for c in r.contacts), default=np.inf)
        if deepest >= -_DEPTH_LIMIT:
            return replace(r, iterations=its, method="explicit",
                           reason=f"taken by the explicit method: the implicit step failed ({failed.reason})")
        why = f"the explicit method's step overlaps by {-deepest:.3g} m"
    else:
        why = f"nor did the explicit method's ({r.reason})"
    return replace(failed, iterations=its, reason=f"{failed.reason}; {why}")


def _relaxed_retry(model, state, h, max_iter, opts, ws, cancel, failed: StepResult, budget: _Budget) -> StepResult:
    """The explicit method's step that `failed` (at every depth) made once more at its full size, by Newton from the
    solution of its relaxed problem (core.contact.relaxed; the first of _FALLBACK_ATTEMPTS).  The README's
    forty-seed draw of the explicit method had one run stop (27 spheres at mu 0.8, seed 616621599, step 90: every
    depth stalled near the tolerance from the warm start); from the relaxed start that step converges whole (102
    iterations) and the run completes.  As an attempt of every step instead (after the three, and made even after a
    near stall), the same draw took 7-9 % more Newton iterations, with half the halved steps."""
    if budget.left <= 0:
        return replace(failed, reason=f"{failed.reason}; {_BUDGET_SPENT} before the relaxed problem's retry")
    r = _step_once(model, state, h, "explicit", _TOL["explicit"], min(max_iter, budget.left), ws=ws, cancel=cancel,
                   newton=opts.newton, reach=h, relaxed=True)
    budget.left -= r.iterations
    its = failed.iterations + r.iterations
    if r.converged:
        return replace(r, iterations=its, method="explicit",
                       reason=f"converged from the relaxed problem's solution: the step failed ({failed.reason})")
    return replace(failed, iterations=its, reason=f"{failed.reason}; nor from the relaxed problem's solution ({r.reason})")


def _relaxed_step(model, state, h, method, ws, cancel, failed: StepResult) -> StepResult:
    """The step that `failed` by every Newton attempt of both methods (at every depth of halving, then the explicit
    method's step) taken as the solution of its relaxed problem (core.contact.relaxed): the explicit method's geometry
    with Anitescu's convex relaxation of Coulomb friction, a strictly convex programme over second-order cones with
    one solution whenever the linearised gaps can be opened, found by an interior point in a few tens of iterations.
    Accepted, as the explicit method's step is for an implicit run, when the true gaps at its end (closest-point
    queries at its end poses) meet the implicit method's overlap bound (an explicit run: as its own steps, first
    order).  What it gives up: a loaded pair that slides ends the step apart by h mu |u_t| instead of touching
    (Anitescu's glide), its end of step is not a solution of the step's equations, and no rebound or energy bound is
    checked on it; the result says so (method "relaxed", its reason with the widest such gap).  Why: a 64-sphere pile
    settling in a bin (bench/scenes.py box_pile_document(4, ...), seeds 1 and 2) met, at t = 0.84-0.87 s, steps whose
    Newton runs of both methods stall at every depth of halving (residuals 1e-7 to 1e-5 in the friction rows of
    the 47-53 of its 150 loaded pairs that slide), and the runs stopped there; this problem's solution took 22-25
    interior-point iterations (60 ms), its loaded pairs at most 0.2-0.3 mm apart, and the runs went on."""
    if cancel is not None and cancel():
        raise _Cancelled
    extra, its = frozenset(), failed.iterations
    while True:
        prob = _StepProblem(model, state, h, "explicit", "ac", _AC_RHO, False, extra, _TOL["explicit"], 1, ws, cancel,
                            reach=h)
        if prob.failure:
            return failed
        z, n, status = relaxed_start(prob)
        its += n
        if z is None:
            return replace(failed, iterations=its,
                           reason=f"{failed.reason}; nor its relaxed problem (clarabel: {status})")
        out, missed = prob.finish(MCPResult(z, True, its, 0.0, "converged"))
        if not missed or len(extra) >= len(model.pairs):
            break
        extra |= missed  # (pairs the broad phase left out that its end brings into range: solved again with them)
    if not out.converged:  # (a body turned too far, or passed through another)
        return replace(failed, iterations=its, reason=f"{failed.reason}; nor its relaxed problem ({out.reason})")
    deepest = min((c.gap for c in out.contacts), default=np.inf)
    if method == "implicit" and deepest < -_DEPTH_LIMIT:
        return replace(failed, iterations=its,
                       reason=f"{failed.reason}; nor its relaxed problem (its end overlaps by {-deepest:.3g} m)")
    # (loaded: the interior point leaves every pair an impulse of its tolerance's size, 1e-15 N s on pairs far apart)
    top = max((c.pn for c in out.contacts), default=0.0)
    glide = max((c.gap for c in out.contacts if c.pn > 1e-9 * top), default=0.0)
    # (its residual: the explicit method's rows at its solution, the Coulomb law its glide does not meet)
    residual = natural_residual(z, prob.value(z), prob.lower)
    return replace(out, iterations=its, method="relaxed", residual=residual, halvings=failed.halvings,
                   reason=f"taken by its relaxed problem (loaded pairs end up to {max(glide, 0.0):.3g} m apart): "
                          f"{failed.reason}")


def _in_halves(state: State, res: StepResult, half: Callable[[State], StepResult]) -> StepResult:
    """The step that res failed to solve, as two halves solved by half(start state); one result for the whole step:
    the geometry of the end of the second half, the impulses of both halves added (_merge_contacts)."""
    first = half(state)
    its = res.iterations + first.iterations
    if not first.converged:
        return StepResult(state, False, its, first.residual, _halved_reason(first.reason), res.contacts,
                          first.halvings + 1, max(res.pairs, first.pairs))
    second = half(first.state)
    its += second.iterations
    halvings, pairs = max(first.halvings, second.halvings) + 1, max(res.pairs, first.pairs, second.pairs)
    if not second.converged:
        return StepResult(state, False, its, second.residual, _halved_reason(second.reason), res.contacts, halvings,
                          pairs)
    def added(name):
        x, y = getattr(first, name), getattr(second, name)
        return None if x is None or y is None else x + y

    # (the method that took the step: a sub-step taken by the explicit method marks the whole step, _sub_stepped)
    return StepResult(second.state, True, its, max(first.residual, second.residual), "converged after halving",
                      _merge_contacts(first.contacts, second.contacts), halvings, pairs, added("joint_impulse"),
                      added("driver_impulse"), max(first.method, second.method, key=_taken_rank))


_HALVED = "step did not converge even when halved"
# what took a step (StepResult.method), from the method asked for to the last resort: a step made of sub-steps is
# marked by the one of its sub-steps' furthest down this list (the recording's fallback column: its index)
_TAKEN_BY = ("implicit", "explicit", "relaxed")


def _taken_rank(method: str) -> int:
    return _TAKEN_BY.index(method) if method else -1  # ("": a step within a step's attempts, not yet marked)


def fallback_code(taken: str, asked: str) -> int:
    """The recording's code of what took a step (its solver channel's fallback column): 0 the method asked for (or a
    failed step, ""), 1 the explicit method's step for a failed implicit one, 2 the relaxed problem's solution."""
    return 0 if taken in ("", asked) else _TAKEN_BY.index(taken)


def _halved_reason(reason: str) -> str:
    """The reason of a step that failed in halves: said once however deep the halving went, with the reason of the
    attempt that failed last."""
    return reason if reason.startswith(_HALVED) else f"{_HALVED} ({reason})"


def _rescaled_impulse(warm: dict, tail: np.ndarray, h: float, nf: int = 0, ac: bool = False) -> np.ndarray:
    """A pair's warm impulse unknowns [pn, friction..., sig] for a step of size h, in the form asked for
    (_impulse_form): the impulses, which a sustained load makes proportional to the step, are scaled by h over the
    step they came from (a halved step's sub-steps start from h/2 of the last full step's impulses, and the step
    after them from 2^k times theirs; the normalised friction unknowns and the sliding speed do not scale).  tail
    itself (not a copy) when nothing changes, the same step size and form: the callers copy it into the start."""
    h0 = warm.get("h")
    if (not h0 or h0 == h) and bool(warm.get("ac")) == ac:
        return tail
    out = _impulse_form(tail, nf, bool(warm.get("ac")), ac)
    if h0 and h0 != h:
        out[0] *= h / h0
        if ac:
            out[1:1 + nf] *= h / h0
    return out


def _impulse_form(tail: np.ndarray, nf: int, from_ac: bool, to_ac: bool) -> np.ndarray:
    """[pn, friction (nf), sig] converted between the normalised form (phi = q / pn, sig) and the Alart-Curnier one
    (q = pn phi, sig unused = 0)."""
    out = np.array(tail, dtype=float)
    if nf and from_ac != to_ac:
        pn = out[0]
        if to_ac:
            out[1:1 + nf] *= pn
            out[1 + nf] = 0.0
        else:
            out[1:1 + nf] = out[1:1 + nf] / pn if pn > 0.0 else 0.0
    return out


def _merge_contacts(c1, c2):
    """Contacts of a step solved as two halves: geometry of the end, impulses of both halves added.

    The normal turns between the halves, so the two impulse vectors are added and split again along the end
    normal (normal and tangential parts of the total impulse, which is what the bodies received)."""
    by = {c.pair: c for c in c1}
    out = []
    for c in c2:
        p = by.pop(c.pair, None)
        if p is None:
            out.append(c)
        else:
            total = p.pn * p.normal + p.pf + c.pn * c.normal + c.pf
            pn = float(total @ c.normal)
            out.append(ContactResult(c.pair, c.a1, c.a2, c.normal, c.gap, pn, total - pn * c.normal,
                                     p.pr * float(p.normal @ c.normal) + c.pr, c.slip, c.mu))
    out.extend(by.values())
    return sorted(out, key=lambda c: c.pair)


def _unloaded_friction(r: np.ndarray, sp: float, mu: float) -> tuple[np.ndarray, float]:
    """The friction unknowns (phi, sig) of a pair without load that meet its friction rows exactly: with pn = 0 the
    rows are mu xi + phi (sig + sp) = 0 and 0 <= sig perp mu^2 - |phi|^2 >= 0, where r = mu xi (the rows at
    phi = sig = 0) and sp >= 0 the separation pin.  No slip: phi = 0, sig = 0; |xi| <= sp (inside the disc): sig = 0,
    phi = -mu xi / sp; else on its rim: phi = -mu xi / |xi|, sig = |xi| - sp."""
    nr = float(np.sqrt(r @ r))
    if nr == 0.0:
        return np.zeros_like(r), 0.0
    xi = nr / mu
    if xi <= sp:
        return -r / sp, 0.0
    return -mu * r / nr, xi - sp


def _step_once(model: ContactModel, state: State, h: float, method: str, tol: float, max_iter: int,
               extra: frozenset = frozenset(), form: str = "ac", ws=None, cancel=None, options=None,
               restarts: int = 1, rho: float = _AC_RHO, cold: bool = False, elim: bool = False,
               newton: NewtonOptions | None = None, reach: float | None = None, relaxed: bool = False,
               predictor: "StepResult | None" = None) -> StepResult:
    """One attempt at the step (no halving): the step's MCP (_StepProblem) with friction in `form` ("ac":
    Alart-Curnier, "normalised" (core.contact.pair), "conic": the interior-point method on second-order cones,
    finished by Newton on the Alart-Curnier form), solved by semismooth Newton (max_iter iterations and `restarts`
    restarts; newton: its NewtonOptions) or the interior-point method (options).  extra: pairs added to the broad
    phase's (the missed pairs of a first solve); reach: the step size whose travel the broad phase covers (h when
    None; _step_split); relaxed (explicit method): Newton starts from the solution of the step's relaxed problem
    (core.contact.relaxed) instead of the warm start."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}")
    if ws is None:
        ws = Workspace()
    prob = _StepProblem(model, state, h, method, form, rho, cold, extra, tol, max_iter, ws, cancel, elim, newton,
                        reach, predictor)
    if prob.failure:
        return StepResult(state, False, 0, float("nan"), prob.failure)
    res = prob.solve(max_iter, restarts, options, relaxed)
    if not res.converged:
        why = (f"{_OVERLAP_STALLED} with the equations met" if res.reason == EXTRA_STALLED
               else NEAR_STALLED if res.reason == NEAR_STALLED else f"MCP solver: {res.reason}")
        return StepResult(state, False, res.iterations, res.residual, f"{why} (residual {res.residual:.3g})",
                          pairs=len(prob.pairs))
    out, missed = prob.finish(res)
    if missed and len(extra) < len(model.pairs):
        # the broad phase judged reach by the start-of-step velocities; an impulse in the step can carry a body
        # further, into a pair that was not solved: the step is solved again with it
        return _step_once(model, state, h, method, tol, max_iter, extra | missed, form, restarts=restarts, rho=rho,
                          cold=cold, ws=ws, cancel=cancel, options=options, elim=elim, newton=newton, reach=reach,
                          relaxed=relaxed, predictor=predictor)
    return out


class _StepProblem:
    """The MCP of one step: its unknowns z = [body velocities nu (6 per dynamic body), each pair's block (closest
    points and multipliers, then normal impulse and friction unknowns; core.contact.pair), the joints' impulses],
    their lower bounds, the starting point z0, the residual F(z) and its structured Jacobian (`residual`), and the
    solver's constant arrays (merit weights, proximal unknowns, feasibility, the overlap bound); `solve` runs the
    attempt's method on it and `finish` makes the step's result from a solution.  Built per attempt from the state,
    the plan of its candidate pairs (Workspace.plan) and the friction form; `failure` is set instead when the drivers
    cannot be followed over the step."""

    def __init__(self, model: ContactModel, state: State, h: float, method: str, form: str, rho: float, cold: bool,
                 extra: frozenset, tol: float, max_iter: int, ws: "Workspace", cancel, elim: bool = False,
                 newton: NewtonOptions | None = None, reach: float | None = None,
                 predictor: "StepResult | None" = None):
        self.model, self.state, self.h, self.method, self.form = model, state, h, method, form
        self.newton_options = newton  # (None: solve_mcp's defaults)
        self.tol, self.cancel, self.failure = tol, cancel, ""
        self._ell = tuple(float(x) for x in model.ellipsoid)  # (e_t, e_o, e_r) of the friction ellipsoid
        dyn = self.dyn = model.dynamic_bodies
        self.nb = dyn.size
        R0 = self.R0 = _rot(state.q)  # (N, 3, 3)
        # free-motion part of the body rows, c = (v0 + h (g + f/m), the free rotation by the implicit midpoint rule of
        # Euler's equations), and M^-1 per dynamic body (6x6 block-diagonal: I/m and the start-of-step world inverse
        # inertia; kernels.body_rows)
        c_body, Sinv, spun = body_rows(float(h), dyn, R0, model.inertia_body, model.inertia_inv, model.mass, state.v,
                                       state.w, model.gravity, model.force, model.torque)
        unsolved = ~spun & model.free[dyn]  # (a kinematic body's rows are its driven motion, set below)
        if unsolved.any():  # (the free rotation's midpoint equation unsolved: a smaller step solves it)
            i = int(dyn[np.flatnonzero(unsolved)[0]])
            self.failure = (f"the free rotation of body {model.names[i]!r} did not converge (spinning at "
                            f"{np.linalg.norm(state.w[i]):.3g} rad/s, {h * np.linalg.norm(state.w[i]):.3g} rad a step)")
            return
        self.driven = None
        if model.drive is not None:
            # the kinematic bodies' rows are their driven motion, nu = nu_driven (infinite mass: M^-1 = 0, so no
            # impulse moves them), with the velocities that carry them to the drivers' poses at t + h
            driven = _driven_motion(model, state, R0, h, ws)
            if isinstance(driven, str):
                self.failure = driven
                return
            self.driven = driven
            slots = model.dynamic_slot[model.drive.body]
            c_body, Sinv = c_body.copy(), Sinv.copy()
            c_body[slots] = driven[0]
            Sinv[slots] = 0.0
        self.c_body, self.Sinv = c_body, Sinv
        # the dynamic bodies whose turn in a step is bounded (_MAX_TURN): moved by forces, shaped, not spheres
        self.turns_matter = np.array([turns_bounded(model, i) for i in dyn], dtype=bool)

        cand, start_gap = candidate_pairs(model, state, h if reach is None else reach, keep=state.warm.keys())
        if extra:
            cand = sorted(set(cand) | extra)
        self.cand = cand
        self.warm_start = {} if cold else state.warm  # (cold: every pair from its closest points now, no impulse)
        self.ac = form in ("ac", "conic")  # friction unknowns are impulses (else fractions of pn, the normalised form)
        self.rho = rho if form == "ac" else (-1.0 if self.ac else 0.0)  # the kernels' friction rows (pair_terms)
        plan = self.plan = ws.plan(model, cand, method)
        self.pairs = plan.new_pairs()  # this step's pair records: the plan's constants, the state's data set below
        self.pred = predictor  # (given: the explicit step that predicts a failed step, _explicit_fallback)
        # the implicit method's new pairs: those without a warm start of their unknowns (a new contact), which start
        # from a closest-point query (_start_pairs)
        self._new = ([pr for pr in self.pairs if not _has_warm_z(self.warm_start.get(pr.ip), pr.lay)]
                     if method == "implicit" else [])
        self._start_geo = {}  # the new pairs' closest points at the start of the step, when queried here
        self._patched = False  # (the step starts from the patch predictor: every pair from its end, as a new pair)
        if method == "implicit" and predictor is None and len(cand) <= max(_PREDICT_MAX_PAIRS, _LANDING_MAX_PAIRS):
            new_ips = [pr.ip for pr in self._new] if len(cand) <= _PREDICT_MAX_PAIRS else []
            if new_ips:
                self._start_geo = dict(zip(new_ips, (g for g, _r in self._queries(state, new_ips))))
            # (the patches start the first attempt; in the others they matter only to new pairs, below)
            first = form == "ac" and not cold
            span = h if reach is None else reach  # (the patch test looks over the whole step's motion: _step_split)
            patches, landing = (_patches(model, state, self.R0, span, cand, self.warm_start, self._start_geo,
                                         self.c_body)
                                if len(cand) <= _LANDING_MAX_PAIRS and (first or new_ips) else ({}, set()))
            # (a new pair whose patch is a face, three corners or more, touching: a face resting on the other body)
            new = {pr.ip for pr in self._new}
            trigger = landing | {ip for ip, x in patches.items() if ip in new and len(x.points) >= 3}
            sliding = any(_face_slide(model, state, ip, patches[ip]) * span > _DEPTH_LIMIT for ip in trigger)
            if sliding and first:
                # corners land on a face, or a new pair is a face resting on the other body, and slide: the explicit
                # step's one linearised point per pair cannot carry the moment of a patch of contact.  The first
                # attempt starts from the step's relaxed problem with the patches' points as contact points
                # (_patch_predictor; every pair's patch: a pair resting on one point would rock there); the other
                # attempts, and this one when the relaxed problem has no solution, as any step (the relaxed
                # problem glides where its pairs slide, h mu |u_t|: a tilted cylinder landing while it slides at mu
                # 2.4 took 184-760 Newton iterations a step from it in every attempt, 2-7 from the explicit step)
                self.pred = _patch_predictor(model, state, h, frozenset(cand), patches, ws, cancel)
                self._patched = self.pred is not None
            # (a new face resting on the other body, at rest, starts from the start of the step: with the explicit
            # predictor a resting wedge rocked, and every attempt from there stalled; with the relaxed problem it
            # took 42 Newton iterations instead of 7)
            at_rest = bool(trigger) and not sliding
            if new_ips and self.pred is None and not at_rest:
                # a pair without a warm start (a new contact): the explicit step is a cheap, well-posed predictor of
                # the velocities and impulses, and the closest points at its end configuration start the implicit
                # solve.  Only with few pairs: with many it costs as much as the step itself; new pairs then start
                # from their closest points at the start of the step, with no impulse (on this step's pairs: the
                # broad phase's own and those added, extra or within reach of a whole step)
                pred = _step_once(model, state, h, "explicit", tol, max_iter, frozenset(cand), ws=ws, cancel=cancel,
                                  newton=newton, form="ac" if self.ac else "normalised")
                self.pred = pred if pred.converged else None
        self.new_warm_geo = {}
        self._start_pairs()
        self.ntot = ntot = plan.ntot
        self.z0 = self._initial_guess()
        self.batches = plan.new_batches(self.pairs)
        for bt in self.batches:
            # the start-of-step data of the batch's pair evaluations
            bt.e_aux = np.array([p.e_aux for p in bt.prs])
            bt.SA, bt.SB = Sinv[bt.ka], Sinv[bt.kb]
            if method == "implicit":
                bt.pA0, bt.RA0 = state.p[bt.a], R0[bt.a]
                bt.pB0, bt.RB0 = state.p[bt.b], R0[bt.b]
                bt.floor = _kept_overlap(bt, start_gap)
            else:  # the explicit method's fixed geometry: normal, lever arms, gap
                bt.n = np.array([p.n for p in bt.prs])
                bt.d1 = np.array([p.a1 for p in bt.prs]) - state.p[bt.a]
                bt.d2 = np.array([p.a2 for p in bt.prs]) - state.p[bt.b]
                bt.gap0 = np.array([p.gap0 for p in bt.prs])
        # the joints: bilateral constraints at the end of the step, impulses along their start-of-step gradients
        self.jstep = JointStep(plan.joints, model, state, R0, Sinv, h) if plan.joints.size else None
        if self.jstep is not None and self.jstep.failure:
            self.failure = self.jstep.failure  # (a driver without a value at the end of the step)
            return
        if self.jstep is not None:
            jwarm = (self.pred.state if self.pred is not None else state).joints
            lam0 = jwarm.get("lam")
            if lam0 is not None and lam0.size == plan.joints.size:
                self.z0[plan.joints.start:ntot] = lam0 * (h / jwarm["h"])  # (a sustained load's impulses scale with h)

        # the solver's constant arrays (commented where _Plan builds them): the lower bounds, the proximal term's
        # unknowns (many pairs, implicit method; the Newton equations are then solved by eliminating the pair
        # blocks), the projected sliding-speed multipliers, the merit function's weights, the closest-point rows
        self.lower = plan.lower_conic if form == "conic" else plan.lower
        self.dense = ntot <= _DENSE_LIMIT
        self.prox = None if plan.prox is None else plan.prox + h * plan.prox_length
        self.weights = plan.weights
        self.feasible = plan.feasible_conic if form == "conic" else plan.feasible
        self.condense = self.prox is not None and not self.dense
        self._structure = None  # the step's first sparse Jacobian: its index arrays serve every later one
        # the last attempt: the closest points of sphere and plane pairs eliminated (_geometry_elimination)
        self.project = _geometry_elimination(self) if elim and method == "implicit" else None

    # ---- the start ---------------------------------------------------------------------------------------------
    def _queries(self, state: State, ips: list, guesses: list | None = None) -> list:
        """closest_points_many of the pairs ips at `state` (from guesses), _QUERY_CHUNK pairs at a time with a look at
        the step's cancel before each chunk (closest_points_chunked; RunCancelled): a query without a closed form
        takes milliseconds, tens where its Newton run falls back on solve_mcp, and a 300-body bin's new pairs of one
        step took 0.55 s before the first look.  The same results: each pair's query is its own."""
        return closest_points_chunked(self.model, state, ips, self.cancel, guesses, _QUERY_CHUNK)

    def _start_pairs(self) -> None:
        """Each pair's start-of-step data: (implicit) its closest points and impulses to start from and its tangent
        frame; (explicit) its fixed geometry, normal, lever arms and gap from a closest-point query now."""
        model, state, h, R0, ac = self.model, self.state, self.h, self.R0, self.ac
        pred = self.pred
        hv = h * state.v  # (each body's predicted displacement)
        # the closest-point queries of the step's start, all in one (closest_points_many).  Implicit method: the new
        # pairs (no warm start), at the start and then from there at the predictor's end.  Explicit method: every
        # pair, but for those whose warm start is the last step's end-of-step query at these very poses (its answer:
        # the same function of the same poses and start; 8 turned cubes in two layers: a ninth of their step)
        if self.method == "implicit":
            ask = self.pairs if self._patched else self._new
            known = {}
            if ask:
                ips = [pr.ip for pr in ask]
                if all(ip in self._start_geo for ip in ips):
                    geos = [self._start_geo[ip] for ip in ips]  # (queried already: the predictor's test)
                elif self._patched:  # (from the warm start's points where there is one)
                    geos = [g for g, _r in self._queries(state, ips, [
                        self._start_geo.get(pr.ip, self._explicit_warm_geo(pr)) for pr in ask])]
                else:
                    geos = [g for g, _r in self._queries(state, ips)]
                if pred is not None:
                    geos = [g for g, _r in self._queries(pred.state, ips, geos)]
                known = dict(zip(ips, geos))
        else:
            known = {pr.ip: self.warm_start[pr.ip]["geo"] for pr in self.pairs
                     if _same_pose(self.warm_start.get(pr.ip), state, pr.a, pr.b)}
            ask = [pr for pr in self.pairs if pr.ip not in known]
            if ask:
                known.update(zip((pr.ip for pr in ask), (g for g, _r in self._queries(
                    state, [pr.ip for pr in ask], [self._explicit_warm_geo(pr) for pr in ask]))))
        for pr in self.pairs:
            ip, a, b, lay = pr.ip, pr.a, pr.b, pr.lay
            warm = self.warm_start.get(ip)
            if self.method == "implicit":
                pr.zf0 = None
                if ip not in known:  # (a warm start of its unknowns)
                    wz = warm["z"]
                    geo = wz[:lay.n_geom].copy()
                    pr.zf0 = _rescaled_impulse(warm, wz[lay.n_geom:], h, lay.nf, ac)  # (_initial_guess copies it)
                    # the closest points travel with the bodies: shift last step's points by this step's predicted
                    # motion (exact for rolling and sliding at constant speed, so Newton starts at the solution)
                    # (on a static body the point follows A's, as for rolling)
                    geo[0:3] += hv[a]
                    geo[3:6] += hv[b] if model.dynamic[b] else hv[a]
                else:
                    geo = known[ip]
                    pw = pred.state.warm.get(ip) if pred is not None else None  # (it solved this step's pairs)
                    if pw is not None and pw.get("zx") is not None:
                        pr.zf0 = _impulse_form(pw["zx"], lay.nf, bool(pw.get("ac")), ac)
                if (warm is not None and warm.get("n") is not None and pr.zf0 is not None and not self._patched
                        and abs(float(warm["e_aux"] @ warm["n"])) <= _AUX_KEEP):
                    pr.e_aux = warm["e_aux"]  # the same tangent frame as last step (its friction unknowns stay valid)
                else:
                    pr.e_aux = planar_aux(model, b_normal(model, a, b, R0[b], state.p[b], geo))
                pr.geo0 = geo
            else:
                glay = PairLayout(model.shapes[a].m, model.shapes[b].m, 0)
                geo = known[ip]
                self.new_warm_geo[ip] = geo
                nB = b_normal(model, a, b, R0[b], state.p[b], geo)
                pr.a1, pr.a2 = geo[0:3].copy(), geo[3:6].copy()
                pr.n = nB / np.linalg.norm(nB)
                pr.gap0 = float(geo[glay.s])
                pr.e_aux = planar_aux(model, pr.n)

    def _explicit_warm_geo(self, pr) -> np.ndarray | None:
        """The explicit method's start of a pair's closest-point query: last step's end-of-step points (or an implicit
        step's closest-point unknowns), None without them."""
        warm = self.warm_start.get(pr.ip)
        if warm is None:
            return None
        g0 = warm.get("geo")
        n_geom = PairLayout(self.model.shapes[pr.a].m, self.model.shapes[pr.b].m, 0).n_geom
        if g0 is None and warm.get("z") is not None:
            g0 = warm["z"][:n_geom]
        return g0 if g0 is not None and g0.size == n_geom else None

    def _initial_guess(self) -> np.ndarray:
        """z0: the velocities of the start (or of the predictor's end), each pair's start data and warm impulses."""
        z0 = np.zeros(self.ntot)
        start = self.pred.state if self.pred is not None else self.state
        for k, i in enumerate(self.dyn):
            z0[6 * k:6 * k + 3] = start.v[i]
            z0[6 * k + 3:6 * k + 6] = start.w[i]
        for pr in self.pairs:
            warm = self.warm_start.get(pr.ip)
            sz = pr.sz
            if self.method == "implicit":
                z0[pr.off:pr.off + pr.lay.n_geom] = pr.geo0
                if pr.zf0 is not None and pr.zf0.size == sz - pr.lay.n_geom:
                    z0[pr.off + pr.lay.n_geom:pr.off + sz] = pr.zf0
            elif warm is not None and warm.get("zx") is not None and warm["zx"].size == sz:
                z0[pr.off:pr.off + sz] = _rescaled_impulse(warm, warm["zx"], self.h, pr.lay.nf, self.ac)
            if self.model.planar and pr.lay.nf and pr.e_aux[2] == 1.0:
                # a planar document: the friction across the plane (along o, and the torsion about a normal in the
                # plane) starts at zero.  The bodies cannot slip across the plane, so any such friction within the
                # cone solves the step (their plane joints take it) and the proximal term keeps what the start has;
                # started from the predictor's (an explicit step's, as indeterminate), a cube resting on a plank kept
                # 2.7 N of friction across the plane, at rest, and half its friction cone with it (user test ut2 P4)
                _ipn, ipf, _isig = _friction_slots(pr.lay, self.method)
                z0[pr.off + ipf + 1:pr.off + ipf + pr.lay.nf] = 0.0
        return z0

    def consistent_friction(self, z: np.ndarray, which) -> np.ndarray:
        """For pairs without normal impulse, friction unknowns that satisfy their rows at the current velocities.

        With pn = 0 the rows mu xi + phi (sig + sp) = 0, 0 <= sig perp mu^2 - |phi|^2 >= 0 (sp = separation_pin(s/h))
        fix phi and sig and nothing else depends on them; starting from phi = sig = 0 instead gives a
        Newton direction that ignores these rows."""
        slots = lambda pr: _friction_slots(pr.lay, self.method)  # noqa: E731
        todo = [pr for pr in which if pr.lay.nf and z[pr.off + slots(pr)[0]] <= 0.0]
        if not todo:
            return z
        zc = z.copy()
        for pr in todo:
            _ipn, ipf, isig = slots(pr)
            zc[pr.off + ipf:pr.off + isig + 1] = 0.0  # phi = sig = 0: the rows are then mu xi (and pn's s/h)
        Fz = self.residual(zc, jac=False)  # (every pair's rows in one batched evaluation of the step)
        for pr in todo:
            ipn, ipf, isig = slots(pr)
            nf = pr.lay.nf
            r = Fz[pr.off:pr.off + pr.sz]
            if pr.mu > 0.0:
                sp = separation_pin(r[ipn])[0]  # of s/h (implicit) or of the linearised gap speed (explicit)
                z[pr.off + ipf:pr.off + ipf + nf], z[pr.off + isig] = _unloaded_friction(r[ipf:ipf + nf], sp, pr.mu)
        return z

    # ---- the equations -----------------------------------------------------------------------------------------
    def _batch_terms(self, bt, z, Fb, jac=True):
        """Rows of every pair of a batch (P, size), their velocity changes M^-1 W subtracted from the body rows Fb,
        and, with jac, their blocks of the step Jacobian in local columns (P, nl, nl)."""
        nb, h, model = self.nb, self.h, self.model
        V = z[:6 * nb].reshape(nb, 6)
        SA = bt.SA
        SB = bt.SB if bt.dyn_b else SA  # (a static B's velocity change is not used)
        if self.method == "implicit":  # (one compiled call: kernels.batch_rows, the rows of eval_pairs)
            lay = bt.lay
            r, blk = batch_rows(
                lay.m, lay.k, lay.nf, float(h), bt.mu, *self._ell, PIN_SPEED, bt.m_ref, bt.e_aux, *bt.rows_a, bt.RA0,
                bt.pA0, bt.cA, *bt.rows_b, bt.RB0, bt.pB0, bt.cB, V, bt.ka, bt.kb, bt.dyn_b, z, bt.zidx,
                _NO_FLOOR if bt.floor is None else bt.floor, SA, SB, bt.valid_idx, Fb, jac, float(self.rho))
            return r, (blk if jac else None)
        vA, wA = V[bt.ka, 0:3], V[bt.ka, 3:6]
        if bt.dyn_b:
            vB, wB = V[bt.kb, 0:3], V[bt.kb, 3:6]
        else:
            vB = wB = np.zeros((bt.P, 3))
        zp = z[bt.zidx]
        r, Jl, WA, JWA, WB, JWB = _eval_explicit_batch(
            bt.lay.nf, model, h, bt.mu, bt.m_ref, bt.e_aux, bt.n, bt.d1, bt.d2, bt.gap0, vA, wA, vB, wB, bt.dyn_b,
            zp, jac, self.rho)
        if not jac:
            JWA = JWB = Jl = _NO_JAC
        _dA, _dB, blk = body_blocks(SA, WA, JWA, SB, WB, JWB, Jl, bt.valid_idx, bt.dyn_b, jac, Fb, bt.ka, bt.kb)
        return r, (blk if jac else None)

    def residual(self, z: np.ndarray, jac: bool = True):
        """F(z) (and its Jacobian: dense below _DENSE_LIMIT unknowns, else an ElementMatrix of the pair and joint
        blocks with the identity on the body rows); cancel() is checked first (_Cancelled)."""
        if self.cancel is not None and self.cancel():
            raise _Cancelled()
        ntot, nb, dense = self.ntot, self.nb, self.dense
        Fv = np.empty(ntot)
        Fb = z[:6 * nb].reshape(nb, 6) - self.c_body
        Jd = np.zeros((ntot, ntot)) if dense and jac else None
        if Jd is not None:
            Jd[np.arange(6 * nb), np.arange(6 * nb)] = 1.0
        elems = []  # (columns, blocks, own unknowns) of each batch (sparse case)
        for bt in self.batches:
            r, blk = self._batch_terms(bt, z, Fb, jac)
            Fv[bt.zidx] = r
            if not jac:
                continue
            if Jd is not None:
                scatter_add(Jd, bt.cols, blk)
            else:
                elems.append((bt.cols, blk, bt.zidx.shape[1]))
        if self.jstep is not None:
            # each joint is an element of its bodies' velocities and its impulses, none of them its own (the joint rows
            # do not depend on the impulses: the impulses are left to the reduced system, core.contact.elements)
            for cols, blk in self.jstep.add(z, Fv, Fb, jac):
                if Jd is not None:
                    scatter_add(Jd, cols, blk)
                else:
                    elems.append((cols, blk, 0))
        Fv[:6 * nb] = Fb.ravel()
        if not jac:
            return Fv
        if dense:
            return Fv, Jd
        # each pair couples its own unknowns (the tail of its columns) only to its bodies' velocities: the Jacobian
        # is kept as these blocks, with the identity on the body rows (core.contact.elements)
        if self._structure is None:
            diag = np.zeros(ntot)
            diag[:6 * nb] = 1.0
            self._structure = ElementMatrix(ntot, diag, elems)
            return Fv, self._structure
        return Fv, self._structure.refill(self._structure.diag, elems)  # the same pattern all step long

    def value(self, z: np.ndarray) -> np.ndarray:
        """F(z) without the Jacobian (the line search's shortened trials; equal to the bit)."""
        return self.residual(z, jac=False)

    def depth_residual(self, z: np.ndarray, F: np.ndarray) -> float:
        """The deepest overlap of a pair's bodies that z admits, to first order: how far each body reaches beyond
        the support plane through its closest point (sum lam_i (-f_i(a1)) for A, exact for convex shapes, likewise
        B), the miss of the row a2 - a1 - s n_A, a negative s, and the mismatch r = n_A + n_B of the two planes'
        normals times the pair's smaller diameter D (a point of the smaller body lies within D of its closest
        point).  (Measured with the depth of a1 alone, min_i -f_i(a1), instead of the first term: a box's corner
        against a wall, a1 3.7e-10 m inside the box on its three faces, ended 1.1e-9 m deep in the wall while the
        bound said 7.1e-10 and the reported gap -3.5e-14.)  As a residual:
        <= tol when it is at most _DEPTH_LIMIT metres.  (The scaled natural residual admits 1e-10 (1 + max|z|) in
        every closest-point row whatever max|z| is: a sphere spinning at 8 rad/s let an 8-sphere pile step end with
        its closest points 9e-10 m inside both bodies, the sphere 2.7e-9 m inside a wall while every reported gap was
        >= 0; docs/contact.md.)"""
        # (compiled: kernels.overlap_depth.)  How far A reaches beyond the plane through a1 normal to
        # n_A = sum lam_i grad f_i: for every x in A, n_A . (x - a1) <= sum lam_i (f_i(x) - f_i(a1))
        # <= sum lam_i (-f_i(a1)) by convexity (lam_i >= 0); the rows hold -f_i(a1).  Likewise B beyond a2's plane
        depth = overlap_depth(z, F, *self.plan.depth_index)
        return float(depth) * (self.tol / _DEPTH_LIMIT)

    # ---- solving -----------------------------------------------------------------------------------------------
    def newton(self, z: np.ndarray, tol: float | None = None, **budget) -> MCPResult:
        """Semismooth Newton (core.contact.mcp.solve_mcp) on the whole step from z: value-only line-search trials,
        the proximal term, block elimination, the merit weights and the overlap bound."""
        return solve_mcp(self.residual, z, self.lower, tol=self.tol if tol is None else tol, fun_value=self.value,
                         near=_NEAR * self.tol,
                         prox=self.prox, condense=self.condense, feasible=self.feasible, weights=self.weights,
                         extra=self.depth_residual if self.plan.depth_index is not None else None,
                         project=self.project, options=self.newton_options, **budget)

    def solve(self, max_iter: int, restarts: int, options, relaxed: bool = False) -> MCPResult:
        """The attempt's method from z0: Newton (max_iter iterations, `restarts` restarts), or for the conic form the
        interior-point method to a loose tolerance handed to Newton; then, for one or two pairs, a few Newton
        iterations more towards _TIGHT_TOL.  relaxed (explicit method): Newton from the solution of the step's
        relaxed problem (core.contact.relaxed; its interior-point iterations are counted with Newton's)."""
        z0, its0 = self.z0, 0
        if relaxed and self.method != "explicit":
            raise ValueError("the relaxed problem is the explicit method's")
        if relaxed:
            z0, its0, status = relaxed_start(self)
            if z0 is None:
                return MCPResult(self.z0, False, its0, np.inf, f"its relaxed problem not solved (clarabel: {status})")
        if self.form == "normalised":
            z0 = self.consistent_friction(z0, self.pairs)
        if self.form == "conic":
            # the interior-point method to a loose tolerance (it keeps every bound and cone strictly feasible, which
            # regularises the degenerate directions of a jammed pile), then semismooth Newton on the Alart-Curnier
            # form (quadratic near a solution, where the interior point converges only linearly at stick-slip
            # transitions)
            loose = replace(options, tol=_HANDOVER_TOL, comp_tol=_HANDOVER_COMP)
            r = ipm.solve(ipm.MCPProblem(self.residual, self.lower, self.value, self.plan.cones), z0, loose,
                          self.cancel)
            res = MCPResult(r.z, r.converged, r.iterations, r.residual, r.reason)
            if r.converged:
                zn = r.z.copy()
                zn[self.plan.sig_idx] = 0.0  # (psi, the cones' multiplier, is not an unknown of the Alart-Curnier form)
                self.rho = _AC_RHO
                pol = self.newton(zn, max_iter=_HANDOVER_ITER, max_restarts=0, polish=False)
                res = MCPResult(pol.z, pol.converged, r.iterations + pol.iterations, pol.residual,
                                "converged" if pol.converged else f"Newton after the interior point: {pol.reason}")
        else:
            res = self.newton(z0, max_iter=max_iter, max_restarts=restarts)
        # (a start from a predictor that already meets the tolerance is polished by one Newton iteration: the relaxed
        # problem's solution, _patch_predictor, is exact only to its interior point's tolerance, 6e-12 m/s in a
        # resting box's velocity, which even the scaled residual of _TIGHT_TOL admits, 3e-14)
        unpolished = self.pred is not None and res.iterations == 0 and self.method == "implicit"
        if res.converged and len(self.pairs) <= 2 and (res.residual > _TIGHT_TOL or unpolished):
            # the stopping test is scaled by 1 + max|z|, and the multipliers of the inequalities can be large, so a
            # converged point may leave closest points ~1e-9 m off their surfaces; Newton converges quadratically
            # here, so one or two more iterations make the geometry exact to rounding (a box held on an incline: no
            # creep even at 1e-12 m).  Not with three or more pairs: there it took an eighth of the 27-sphere pile's
            # time, and pile steps sit at a floor near 1e-11 that the extra iterations rarely lower
            tol, n_iter = (0.0, 1) if unpolished else (_TIGHT_TOL, _TIGHT_ITER)
            tight = self.newton(res.z, tol=tol, max_iter=n_iter, max_restarts=0, polish=False)
            if tight.residual < res.residual:
                res = MCPResult(tight.z, True, res.iterations + tight.iterations, tight.residual, res.reason)
        return replace(res, iterations=res.iterations + its0) if its0 else res

    # ---- the result --------------------------------------------------------------------------------------------
    def finish(self, res: MCPResult) -> tuple[StepResult, frozenset]:
        """The step's result from a solution (the new state, each pair's contact, the joints' and drivers'
        impulses, the warm start of the next step), and the pairs the broad phase missed (their bounding volumes
        overlap at the end of the step but they were not solved)."""
        model, state, h, method, ac = self.model, self.state, self.h, self.method, self.ac
        pairs, nb, iters = self.pairs, self.nb, res.iterations
        z = res.z
        if ac:
            # the impulses onto their friction disc |q| <= mu pn: the rows hold it only to the tolerance (a sticking
            # pair's q - proj(q - rho e v) admits |q| up to mu pn + rho |e v|), which for a nearly unloaded pair can
            # be many times mu pn; the move is of the order of the residual, as the projection of the bounded
            # unknowns onto their bounds
            z = z.copy()
            for bt in self.batches:
                nf = bt.lay.nf
                if nf:
                    ipn, ipf, _isig = _friction_slots(bt.lay, method)
                    iq = bt.zidx[:, ipf:ipf + nf]
                    q = z[iq]
                    rad = bt.mu * np.maximum(z[bt.zidx[:, ipn]], 0.0)
                    nq = np.sqrt(np.sum(q * q, axis=1))
                    over = nq > rad
                    if over.any():
                        z[iq[over]] = q[over] * (rad[over] / nq[over])[:, None]
        turn = h * np.linalg.norm(z[:6 * nb].reshape(nb, 6)[:, 3:6], axis=1)
        turn[~self.turns_matter] = 0.0
        if turn.max(initial=0.0) > _MAX_TURN:
            i = int(self.dyn[int(np.argmax(turn))])
            return StepResult(state, False, iters, res.residual,
                              f"{_TURNED}: '{model.names[i]}' turns by {turn.max():.3g} rad (h |w|; at most "
                              f"{_MAX_TURN:g})", pairs=len(pairs)), frozenset()
        new = state.copy()
        new.t = state.t + h
        new.warm = {}
        advance_poses(float(h), self.dyn, z[:6 * nb].reshape(nb, 6), new.p, new.q, new.v, new.w)
        if self.driven is not None:  # (the same poses to rounding; exactly the drivers', so that no drift builds up)
            new.p[model.drive.body], new.q[model.drive.body] = self.driven[1], self.driven[2]
        contacts = []
        if method == "implicit":
            by_pair = {}
            for bt in self.batches:
                by_pair.update(zip((pr.ip for pr in bt.prs), _contacts_implicit(model, new, bt, z, self.h, ac)))
            contacts = [by_pair[pr.ip] for pr in pairs]
            for pr, c in zip(pairs, contacts):
                new.warm[pr.ip] = {"z": z[pr.off:pr.off + pr.lay.size].copy(), "n": c.normal, "e_aux": pr.e_aux,
                                   "h": h, "ac": ac}
        else:
            # the true gap at the end of the step, by a closest-point query at the end poses (the scheme holds only
            # its linearised gap >= 0: a negative one is its penetration); the query also starts the next step
            ends = closest_points_many(model, new, [pr.ip for pr in pairs], [self.new_warm_geo[pr.ip] for pr in pairs])
            for pr, (geo_end, r_end) in zip(pairs, ends):
                zp = z[pr.off:pr.off + _explicit_size(pr.lay)]
                gap_end = (float(geo_end[PairLayout(model.shapes[pr.a].m, model.shapes[pr.b].m, 0).s])
                           if r_end.converged else None)
                new.warm[pr.ip] = {"zx": zp.copy(), "geo": geo_end if r_end.converged else self.new_warm_geo[pr.ip],
                                   "geo_pose": _pair_pose(new, pr.a, pr.b) if r_end.converged else None,
                                   "h": h, "ac": ac}
                contacts.append(_contact_explicit(model, state, new, pr, zp, h, gap_end, ac))
        if not np.isfinite(z).all():  # (the new state is made of z and the finite old one)
            return StepResult(state, False, iters, res.residual, "non-finite state after step",
                              pairs=len(pairs)), frozenset()
        if method == "implicit":
            passed = _passed_through(model, state, self.R0, contacts, new)
            if passed is not None:
                return StepResult(state, False, iters, res.residual, passed, pairs=len(pairs)), frozenset()
        # the broad phase judged reach by the start-of-step velocities; an impulse in the step can carry a body
        # further, into a pair that was not solved: such a pair's bounding volumes overlap at the end (the bounding
        # volumes contain the shapes, so a pair whose volumes stay apart cannot touch)
        missed = frozenset()  # (every pair was solved when all were candidates)
        if len(self.cand) < len(model.pairs):
            _, end_bounds = candidate_pairs(model, new, h)
            missed = frozenset(np.flatnonzero(end_bounds <= 0.0).tolist()) - frozenset(self.cand)
        joint_impulse = driver_impulse = None
        if self.jstep is not None:
            new.joints = {"lam": z[self.plan.joints.start:self.ntot].copy(), "h": h,
                          "turns": self.jstep.end_turns(new)}
            joint_impulse = self.jstep.impulses(z)
        if model.driver_names:
            # each driver's impulse: of the kinematic bodies' drivers by virtual work, of a driven joint's coordinate
            # between bodies moved by forces its row's multiplier
            driver_impulse = np.zeros(len(model.driver_names))
            if self.driven is not None:
                driver_impulse[model.drive.driver] = _driver_impulses(model, state, contacts, self.jstep, z,
                                                                      self.driven[3])
            for i, imp in (self.jstep.driver_impulses(z) if self.jstep is not None else ()):
                driver_impulse[i] = imp
        return StepResult(new, True, iters, res.residual, "converged", contacts, pairs=len(pairs),
                          joint_impulse=joint_impulse, driver_impulse=driver_impulse), missed


def _passed_through(model: ContactModel, state: State, R0: np.ndarray, contacts: list,
                    end: State | None = None) -> str | None:
    """Why an implicit step's solution is refused because a pair in contact at its end (a normal impulse, its
    separation at most _DEPTH_LIMIT) has passed through each other in it; None when none has.  The step's rows hold at
    the end of the step only: its geometry there is exact (the closest points certify a separating slab of width s),
    but nothing in them sees the path.  The test: along the pair's end-of-step normal n (A's outward normal), at the
    start of the step (poses p, R0), B's extent lay wholly behind A's supporting plane (B's farthest point along n
    short of A's) or A's wholly beyond B's (A's nearest point along -n short of B's) -- one of the two started on the
    far side of the other along the direction in which the step ends it touching in front: they swapped sides, which
    a body can only do through the other.  A step of ordinary size cannot: it moves each body's support planes by at
    most h |v| plus its turn times its radius, and the two start touching or apart.

    Measured: a 1 kg cube resting face to face on a free 3 kg 30-degree wedge (h = 0.001 s), whose step was made in
    halves of h/128 one of which (76 Newton iterations, from the explicit predictor's tipped start) converged to a
    solution with the block at 32 km/s and the wedge at 5.5e4 rad/s (h |w| = 0.43, within _MAX_TURN): the block ended
    touching a face of the wedge that it had started 0.62 m behind, wider than the block's 0.17 m along that normal;
    the step was accepted and the run ended 'completed' with 1.1e9 J gained.  Such a step is halved as a step that
    turns a body too far is (_attempts), and fails with this reason at the deepest level (then the explicit method's
    step, _explicit_fallback).

    end (the step's end state): the test is skipped for a pair whose relative travel over the step is too short to
    carry one body through the other, which then cannot swap sides (_far_travelled); None: every pair is tested."""
    # (the pairs that touch at the end with a load: a pair apart at the end, its impulse a rounding, may have flown
    # past a corner of the other in a long step, which along its end normal looks the same)
    act = [c for c in contacts if c.pn > 0.0 and c.gap <= _DEPTH_LIMIT
           and all(model.halfspace[i] is None for i in model.pairs[c.pair][:2])]
    if not act:
        return None
    ab = np.array([model.pairs[c.pair][:2] for c in act])  # (P, 2) bodies A, B
    if end is not None:
        far = _far_travelled(model, state, end, ab, np.array([c.gap for c in act]))
        if not far.any():
            return None
        act, ab = [c for c, f in zip(act, far) if f], ab[far]
    n = -np.array([c.normal for c in act])  # (P, 3) A's outward normal (the contact's is B's, towards A)
    body = ab.ravel()  # (2P,) A and B of each pair
    d = np.repeat(n, 2, axis=0)  # (2P, 3) the direction along which each extent is taken
    loc = np.einsum("eji,ej->ei", R0[body], d)  # (the direction in the body's frame)
    top = np.empty(body.size)
    bottom = np.empty(body.size)
    groups: dict = {}  # (the entries of each shape object: one support call per shape, a pile's spheres share one)
    for j, i in enumerate(body.tolist()):
        groups.setdefault(id(model.shapes[i]), (model.shapes[i], []))[1].append(j)
    for shape, entries in groups.values():
        e = np.array(entries)
        sup = np.asarray(shape.support(np.vstack((loc[e], -loc[e]))), float).reshape(2, e.size, 3)
        base = np.einsum("ei,ei->e", d[e], state.p[body[e]]) - np.einsum("ei,ei->e", loc[e], model.com_body[body[e]])
        top[e] = base + np.einsum("ei,ei->e", loc[e], sup[0])
        bottom[e] = base + np.einsum("ei,ei->e", loc[e], sup[1])
    top_a, top_b, bottom_a, bottom_b = top[0::2], top[1::2], bottom[0::2], bottom[1::2]
    behind = np.maximum(top_a - top_b, bottom_a - bottom_b)  # > 0: B wholly behind A's plane, or A wholly beyond B's
    k = int(np.argmax(behind))
    if behind[k] <= 0.0:
        return None
    a, b = (model.names[i] for i in ab[k])
    return (f"{_PASSED}: '{a}' and '{b}' end it touching, but at its start, along their contact normal, one lay "
            f"wholly beyond the other's face ({top_a[k] - bottom_b[k]:.3g} m deep): the solution carries them "
            "through each other (the step's rows see only its end)")


def _far_travelled(model: ContactModel, state: State, end: State, ab: np.ndarray, gap: np.ndarray) -> np.ndarray:
    """(P,) bool: whether pairs ab (P, 2) in contact at the end of a step (separation gap) may have passed through
    each other in it (_passed_through); False where they cannot have.  A bound of how far the step moved each pair's
    support planes relative to each other, along any direction: the travel of B's centre of mass relative to A's, plus
    each body's turn times its bounding radius about its centre of mass (a point at distance r moves by
    2 sin(theta / 2) r <= 2 min |q_end -+ q_start| r).  At the end B lies in front of A's supporting plane along their
    normal, beyond it by the separation; to have started wholly behind it (or A wholly beyond B's), the pair's support
    planes must have moved by more than the separation plus the width of the thinner body along that normal, at
    least twice its inner radius (Shape.inner_radius).  A pair is skipped when its travel and overlap are within one
    inner radius, half that width: the slack of the end geometry's tolerance, so a skip never hides a refusal.  (A
    pile's contacts travel micrometres a step against radii of centimetres: the test had been 1-3 % of its time.)"""
    body = ab.ravel()  # (2P,) A and B of each pair
    move = end.p[body] - state.p[body]
    dq = end.q[body] - state.q[body]
    sq = end.q[body] + state.q[body]
    turn = 2.0 * np.sqrt(np.minimum(np.einsum("ei,ei->e", dq, dq), np.einsum("ei,ei->e", sq, sq))) * model.radius[body]
    rel = move[1::2] - move[0::2]
    travel = np.sqrt(np.einsum("ei,ei->e", rel, rel)) + turn[0::2] + turn[1::2]
    thin = np.minimum(model.inner_radius[body[0::2]], model.inner_radius[body[1::2]])
    return ~(travel - gap <= thin)  # (a non-finite travel is tested)


class Patch(NamedTuple):
    """The contact points that stand for a pair's patch of contact in a predictor (_patch_predictor): world points
    (k, 3) of body A (side 0) or B (side 1), each against the other body's face through the pair's closest point."""

    side: int
    points: np.ndarray
    normal: np.ndarray  # the pair's normal at the start, from B towards A (world)


def _patches(model: ContactModel, state: State, R0: np.ndarray, h: float, cand, warm: dict, start_geo: dict,
             c_body: np.ndarray) -> tuple[dict, set]:
    """The contact patches of a step's pairs, for its predictor (_patch_predictor): ({pair: Patch}, the pairs of
    those that land).  A pair has a patch where the step's free motion (c_body: the free end-of-step velocities of
    the dynamic bodies, _StepProblem) brings two or more corners of one body (Shape.corners: a box, polytope or
    cylinder) onto the half-space or the face of the other (a box, polytope or cylinder; the corners above that
    face): each corner's linearised end gap, gap + h u . n (u its free velocity relative to the other body's), at
    most _DEPTH_LIMIT, touching included.  It lands where one of those corners is apart at the start (by more than
    _DEPTH_LIMIT).  The closest points and normal of a pair of two bodies: its warm start's (warm: the state's, as
    the step's start), else start_geo's or a query's.

    Why patches: the explicit step with its one linearised point per pair is no predictor of a patch of contact: it
    cannot carry the moment the patch carries, and the face rocks on that point.  A 30-degree wedge prism resting on
    a floor (one pair, h = 0.001 s; the point a corner of its base, or its centre, neither under the centre of mass):
    the explicit predictor tipped it at 0.02 rad/s, its end 1.85e-5 m inside the floor, and every implicit attempt
    started there stalled (at 1.4e-6, at every depth of halving; the run stopped at t = 0); a block on the free wedge
    (two pairs) was made in halves of h/128, one of which carried the block through the wedge (32 km/s,
    _passed_through); a 1 mm bead at rest 0.22 m off the centre of a 1 m cube on a floor slid off at 1.6 m/s (the
    tipped cube's spin, through the friction rows).  Started from the start of the step instead (no predictor): 7,
    10 and 6 Newton iterations, every body at rest or at its closed form; but a cube sliding on its face beyond
    Painlevé's bound (mu > 5/3, docs/notes) never reached the impulse that trips it over its front edge from there,
    nor does a face that lands while it slides beyond the bound, or a box tripped so that lands back on its face while
    it turns about the edge it sticks on (a 0.1 m cube at mu 2-3, 2-4 m/s, 0.5-20 mm up: steps of 1,400-1,700 Newton
    iterations in halves, or the run stopped at its first step; on a loose slab 1,843).  Hence the relaxed problem
    over the patches.  The pairs that touch are patches in it too, so that it does not rock them on one point (the
    slab under that box).  Edges and corners of a new pair keep the explicit predictor: its one point is their
    contact (a tall box rocking on its edge, 0.0002 s steps: 9,715 iterations over 4,000 steps with it, 11,060 and a
    step of 976 iterations in five halvings without)."""
    out, landing = {}, set()
    for ip in cand:
        a, b, _mu = model.pairs[ip]
        if model.halfspace[b] is not None:
            n = R0[b] @ model.broad.plane_n[b]  # (_world_halfspace, from the start's rotations)
            sides = ((0, a, b, n, float(model.broad.plane_c[b] + n @ state.p[b]), False),)
        elif model.shapes[a].corners(_Z) is None or model.shapes[b].corners(_Z) is None:
            continue  # (a curved shape: no face for the other's corners, no corners of its own)
        else:
            w = warm.get(ip)
            if w is not None and w.get("z") is not None and w.get("n") is not None:
                geo, n = w["z"], w["n"]  # (last step's end: this one's start)
            else:
                geo = start_geo[ip] if ip in start_geo else closest_points_many(model, state, [ip])[0][0]
                n = b_normal(model, a, b, R0[b], state.p[b], geo)
            size = float(np.linalg.norm(n))
            if not size > 0.0:
                continue
            n = n / size  # (from B towards A)
            sides = ((0, a, b, n, float(n @ geo[3:6]), True), (1, b, a, -n, float(-n @ geo[0:3]), True))
        for side, x, y, nx, c, within in sides:
            got = _corners_onto(model, state, R0, h, x, y, nx, c, within, c_body)
            if got is not None:
                out[ip] = Patch(side, got[0], n)
                if got[1]:
                    landing.add(ip)
                break
    return out, landing


def _corners_onto(model: ContactModel, state: State, R0: np.ndarray, h: float, x: int, y: int, n: np.ndarray,
                  c: float, within: bool, c_body: np.ndarray) -> tuple[np.ndarray, bool] | None:
    """The corners of body x (world, (k, 3)) that the step's free motion (c_body, as _patches) brings onto the plane
    n . p = c of body y (n its outward normal, towards x) when two or more do, and whether one of them is apart at
    the start; within: only corners above y's face (their foot on the plane inside y's shape); None otherwise."""
    corners = model.shapes[x].corners(R0[x].T @ (-n))
    if corners is None:
        return None
    corners = corners - model.com_body[x]  # (from the centre of mass: a body point y is at p + R (y - com))
    # corner r (world R r): gap n.(p + R r) - c; normal speed n.v + (R r).(n x w), relative to y's motion, with the
    # free end-of-step velocities (p+ = p + h v): a driven body's driven ones, a static body's none
    kx, ky = model.dynamic_slot[x], model.dynamic_slot[y]
    vx, wx = (c_body[kx, :3], c_body[kx, 3:]) if kx >= 0 else (state.v[x], state.w[x])
    vy, wy = (c_body[ky, :3], c_body[ky, 3:]) if ky >= 0 else (state.v[y], state.w[y])
    vx = vx - vy - _cross(wy, state.p[x] - state.p[y])
    wx = wx - wy
    gap = float(n @ state.p[x]) - c + corners @ (R0[x].T @ n)
    # (touching: within the overlap bound, as two bodies resting on each other do)
    reach = gap + h * (float(n @ vx) + corners @ (R0[x].T @ _cross(n, wx))) <= _DEPTH_LIMIT
    if np.count_nonzero(reach) < 2:
        return None
    apart = reach & (gap > _DEPTH_LIMIT)
    if np.any(apart) and np.any(gap <= _DEPTH_LIMIT):
        # touching at the start, with corners apart that the free motion brings down: landing only when the start's
        # own motion brings them (a box turning onto its face about the edge it stands on), not gravity's h g alone
        # (a box leaning on an edge, held by a pusher: every step would land; review s57 regression scenes)
        wx0 = state.w[x] - state.w[y]
        vx0 = state.v[x] - state.v[y] - _cross(state.w[y], state.p[x] - state.p[y])
        apart &= gap + h * (float(n @ vx0) + corners @ (R0[x].T @ _cross(n, wx0))) <= _DEPTH_LIMIT
    pts = state.p[x] + corners[reach] @ R0[x].T
    if within:
        # the feet of the corners on y's face, in y's shape frame, inside y (to a tolerance of its size)
        feet = pts - np.outer(gap[reach], n)
        local = (feet - state.p[y]) @ R0[y] + model.com_body[y]
        if not np.all(model.shapes[y].contains(local, 1e-9 * float(model.shapes[y].bounding_radius))):
            return None
    return pts, bool(np.any(apart))


def _cross(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x x y of two 3-vectors (np.cross costs 20 us a call)."""
    return np.array([x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0]])


def _face_slide(model: ContactModel, state: State, ip: int, patch: Patch) -> float:
    """The fastest speed along the patch's plane (its normal) of the points of a patch (pair ip) relative to the other
    body, at the start of the step."""
    n = patch.normal
    a, b, _mu = model.pairs[ip]
    x, y = (a, b) if patch.side == 0 else (b, a)
    u = state.v[x] + np.cross(state.w[x], patch.points - state.p[x])
    u = u - state.v[y] - np.cross(state.w[y], patch.points - state.p[y])
    u = u - np.outer(u @ n, n)
    return float(np.max(np.linalg.norm(u, axis=1)))


def _patch_predictor(model: ContactModel, state: State, h: float, cand: frozenset, patches: dict, ws, cancel
                     ) -> "StepResult | None":
    """The predictor of a step whose pairs include a face resting on, or corners landing on, a face (patches:
    _patches): the solution of the explicit step's relaxed problem (core.contact.relaxed) with each patch's cone at
    every one of its points, taken as an explicit step (its velocities, end poses and summed impulses); None when it is not
    solved.  A convex problem with a unique solution: a face at rest stays at rest on its vertices (no rocking), and a
    face sliding with friction beyond Painlevé's bound gets the impulse that sticks its leading edge and trips it over
    (a 0.1 m cube at mu 2 and 3 sliding at 1-4 m/s; the implicit step from there converges in 3-4 iterations, where
    every attempt from the start of the step stalled; docs/notes/contact-solver.md)."""
    prob = _StepProblem(model, state, h, "explicit", "ac", _AC_RHO, False, cand, _TOL["explicit"], _NEWTON_ITER, ws,
                        cancel, False, None, None, None)
    if prob.failure:
        return None
    z, its, _status = relaxed_start(prob, patches)
    if z is None:
        return None
    out, missed = prob.finish(MCPResult(z, True, its, 0.0, "converged"))
    if missed and len(cand) < len(model.pairs):
        # (as _step_once: a pair the step's impulse carries a body into, which the broad phase did not solve)
        return _patch_predictor(model, state, h, cand | missed, patches, ws, cancel)
    return out if out.converged else None


def _kept_overlap(bt: "_Batch", start_gap: np.ndarray) -> np.ndarray | None:
    """The separation floor of each pair of batch bt in its normal row, 0 <= pn perp (s - floor) / h >= 0: minus the
    overlap of the start that the step keeps rather than undoes, min(0, max(gap, -_KEEP_OVERLAP)), for the pairs
    whose start gap is known exactly (those the last attempt eliminates, _eliminable: for a sphere with its frame at
    its centre the broad phase's lower gap bound start_gap, candidate_pairs, is the gap: the centre distance minus the
    radii, or the centre's height over the plane minus the radius); 0 for the others; None when all are 0.

    A step ends with overlaps of up to _DEPTH_LIMIT (the solver's tolerance).  Asked to undo them in the next step,
    a jammed cluster of spheres, which cannot give way, has no consistent end-of-step geometry: Newton met the
    equations but not the overlap bound, or stalled at 1e-9 just above the tolerance, for over a hundred iterations
    in every attempt.  Keeping up to half the limit leaves the other half to the step's own error, and overlaps beyond
    it are still undone.  Measured (Newton iterations per 100 steps): 27-sphere piles at mu 0.4, seeds 61-63: 5058,
    1899 and 1225 without it, 1904, 1614 and 1175 with it; at mu 0.8, seeds 61-66: 3 runs of 6 complete without it, 5
    with it."""
    if bt.closed_gap is None:
        return None
    floor = np.where(bt.closed_gap, np.minimum(np.maximum(start_gap[bt.ips], -_KEEP_OVERLAP), 0.0), 0.0)
    return floor if floor.any() else None  # (np.clip and np.any cost more per call than the arithmetic here)


def _geometry_elimination(prob: "_StepProblem"):
    """project(z) -> z with the closed-form closest points of the step's sphere-sphere and sphere-plane pairs (static
    plane) at the end-of-step poses of z (centres p + h v; the multipliers lam = mu = 1 of the spheres' inequality,
    whose gradient has unit length on the surface; s the centre distance minus the radii, or the centre's height
    over the plane minus the radius); None when the step has no such pair."""
    model, state, h, nb = prob.model, prob.state, float(prob.h), prob.nb
    ss, sp = [], []
    for pr in prob.pairs:
        if not _eliminable(model, pr.a, pr.b):
            continue
        sa, sb = model.shapes[pr.a], model.shapes[pr.b]
        if model.halfspace[pr.b] is None:
            ss.append((pr.off, pr.ka, pr.kb, pr.a, pr.b, sa.radius, sb.radius))
        else:
            nw, c = _world_halfspace(model, pr.b, state)
            sp.append((pr.off, pr.ka, pr.a, sa.radius, nw, c))
    if not ss and not sp:
        return None
    if ss:
        s_off = np.array([x[0] for x in ss])
        s_ka, s_kb = np.array([x[1] for x in ss]), np.array([x[2] for x in ss])
        s_pa, s_pb = state.p[[x[3] for x in ss]], state.p[[x[4] for x in ss]]
        s_ra, s_rb = np.array([x[5] for x in ss], float), np.array([x[6] for x in ss], float)
        s_dyn = s_kb >= 0
        s_kb = np.maximum(s_kb, 0)
        s_idx = s_off[:, None] + np.arange(9)
    if sp:
        p_off = np.array([x[0] for x in sp])
        p_ka = np.array([x[1] for x in sp])
        p_pa = state.p[[x[2] for x in sp]]
        p_ra = np.array([x[3] for x in sp], float)
        p_n = np.array([x[4] for x in sp])
        p_c = np.array([x[5] for x in sp], float)
        p_idx = p_off[:, None] + np.arange(9)

    def project(z):
        z = z.copy()
        V = z[:6 * nb].reshape(nb, 6)
        if ss:
            blk = _spheres_geometry(s_pa + h * V[s_ka, 0:3], s_ra,
                                    s_pb + np.where(s_dyn[:, None], h * V[s_kb, 0:3], 0.0), s_rb)
            ok = np.isfinite(blk[:, 0])  # (coincident centres: no closest points; the pair keeps its unknowns)
            z[s_idx[ok]] = blk[ok]
        if sp:
            z[p_idx] = _sphere_plane_geometry(p_pa + h * V[p_ka, 0:3], p_ra, p_n, p_c)
        return z

    return project


def _driven_motion(model: ContactModel, state: State, R0: np.ndarray, h: float, ws: "Workspace"):
    """The kinematic bodies over the step from state.t to t + h: their velocities (K, 6) that carry them to the
    drivers' poses at t + h (p+ = p + h v, R+ = cayley(h w / 2) R, as every body moves in the step), those poses
    (centres of mass (K, 3), quaternions (K, 4)) and their twists per unit rate of each driver (D, K, 6) at t + h;
    or the reason the drivers cannot be followed there."""
    d = model.drive
    from ..kinematics import MotionEnd

    got = ws.driven(model).at(state.t + h)
    if isinstance(got, MotionEnd):
        return f"the driven bodies at t = {state.t + h:.6g} s: {got.reason}"
    T, _twists, unit = got
    b = d.body
    R1 = T[d.km_body, :3, :3]
    p1 = T[d.km_body, :3, 3] + np.einsum("kij,kj->ki", R1, model.com_body[b])
    V = np.empty((b.size, 6))
    V[:, 0:3] = (p1 - state.p[b]) / h
    q1 = np.empty((b.size, 4))
    for k in range(b.size):
        rel = matrix_to_quat(R1[k] @ R0[b[k]].T)  # (w, x, y, z) of the rotation over the step
        if rel[0] < 0.0:
            rel = -rel
        # cayley(u) is the rotation of the quaternion (1, u) / |(1, u)|: u = h w / 2 = (x, y, z) / w
        V[k, 3:6] = (2.0 / h) * rel[1:] / rel[0]
        q1[k] = matrix_to_quat(R1[k])
        if q1[k] @ state.q[b[k]] < 0.0:
            q1[k] = -q1[k]  # (the same rotation; the sign nearest the last step's keeps the quaternions continuous)
    return V, p1, q1, unit[:, d.km_body]


def _driver_impulses(model: ContactModel, state: State, contacts: list, jstep, z: np.ndarray,
                     unit: np.ndarray) -> np.ndarray:
    """(D,) the impulse each driver gives its coordinate over the step: the kinematic bodies are massless for it,
    so by virtual work Q_d = -sum_k (F_k . v_k^d + T_k . w_k^d), (F_k, T_k) the impulse the contacts and joints give
    kinematic body k (about the world origin) and (v_k^d, w_k^d) its twist per unit rate of driver d (the velocity of
    its point at the world origin, and its angular velocity; the twists at the end of the step)."""
    slot = -np.ones(model.n_bodies, int)
    slot[model.drive.body] = np.arange(model.drive.body.size)
    W = np.zeros((model.drive.body.size, 6))
    for c in contacts:
        a, b, _mu = model.pairs[c.pair]
        P = c.pn * c.normal + c.pf  # on A; -P on B
        for body, point, sign in ((a, c.a1, 1.0), (b, c.a2, -1.0)):
            if slot[body] >= 0:
                W[slot[body], 0:3] += sign * P
                W[slot[body], 3:6] += sign * (np.cross(point, P) + c.pr * c.normal)
    if jstep is not None:
        for body, F, T in jstep.body_wrenches(z):
            if slot[body] >= 0:
                W[slot[body], 0:3] += F
                W[slot[body], 3:6] += T + np.cross(state.p[body], F)
    return -np.einsum("kj,dkj->d", W, unit)


    # None when it is for no pair of the batch


def _contacts_implicit(model, new, bt: "_Batch", z, h: float, impulses: bool = False) -> list:
    """The ContactResult of each pair of a batch (one layout) after an implicit step, computed for all of them at
    once (kernels.contact_frames: the normal from B's multipliers and gradients at its closest point, n = n_B / |n_B|
    from B towards A, at the end-of-step poses)."""
    lay = bt.lay
    Z = z[bt.zidx]
    e_t, e_o, e_r = model.ellipsoid
    n, pn, pf, prr, slip = contact_frames(
        new.q, new.p, new.v, new.w, bt.a, bt.b, bt.cB, bt.rows_b[0], bt.rows_b[1], bt.e_aux, bt.m_ref, Z, lay.mu,
        lay.pn, lay.pf, lay.nf, float(e_t), float(e_o), float(e_r), model.dynamic, impulses, h)
    gap = Z[:, lay.s].tolist()
    pn, prr = pn.tolist(), prr.tolist()
    return [ContactResult(pr.ip, Z[i, 0:3], Z[i, 3:6], n[i], gap[i], pn[i], pf[i], prr[i], slip[i], pr.mu)
            for i, pr in enumerate(bt.prs)]


# ---- the explicit method's contact result (its rows: core.contact.explicit) ----


def _contact_explicit(model, state, new, pr: _Pair, zp, h, gap_end: float | None = None,
                      impulses: bool = False) -> ContactResult:
    """An explicit pair's contact: impulses in the step's (start) frame, the gap at the end of the step (gap_end, the
    true one; else the linearised gap the scheme solved for)."""
    nf = pr.lay.nf
    pn = pr.m_ref * zp[0]
    pf = np.zeros(3)
    prr = 0.0
    if nf:
        e_t, e_o, e_r = model.ellipsoid
        t, o = tangent_frame(pr.n, pr.e_aux)
        f = pr.m_ref if impulses else pn
        pf = f * (e_t * zp[1] * t + e_o * zp[2] * o)
        if nf == 3:
            prr = f * e_r * zp[3]
    vrel = new.v[pr.a] + cross3(new.w[pr.a], pr.a1 - state.p[pr.a])
    if model.dynamic[pr.b]:
        vrel = vrel - new.v[pr.b] - cross3(new.w[pr.b], pr.a2 - state.p[pr.b])
    gap = pr.gap0 + h * (pr.n @ vrel) if gap_end is None else gap_end
    slip = vrel - (vrel @ pr.n) * pr.n
    return ContactResult(pr.ip, pr.a1, pr.a2, pr.n, float(gap), float(pn), pf, float(prr), slip, pr.mu)

