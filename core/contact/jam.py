"""Why a failed step has no solution when the drivers jam a part (docs/contact.md, "Measured limits": jams).

A jam: the drivers move a kinematic body (infinite mass, its motion prescribed) into a body moved by forces that
cannot give way, because another contact, a static body or a joint holds it.  Such a step has no solution with finite
impulses, and the run stops with it; `find_jam` says so, naming the bodies, when (and only when) a step has failed.

The test is first-order feasibility of the step's geometry, the explicit method's linearisation of its gaps and the
joints' rows: with every kinematic body at its driven pose at the end of the step (exactly: the drivers' motion over
the step, `stepper._driven_motion`) and every body moved by forces displaced by d = h nu from its pose at the start,

    every contact:   gap_i + J_i d  >= 0       (gap_i: a closest-point query at those poses; J_i: n . (dA - dB))
    every joint row: c_j + G_j d     = 0       (c_j: the row at those poses, in metres; G_j its gradient)

Is there a displacement d of the bodies moved by forces that meets them all?  Both kinds of rows are the step
problem's own (the explicit method's normal rows gap0 / h + n . v_rel and the joints' c(q+) / h, with their Jacobian
in the velocities of the bodies moved by forces: `_StepProblem.residual`), so nothing here differentiates anything.
As the linear programme (scipy.optimize.linprog, HiGHS's dual simplex)

    min s   over (d, s >= 0)   such that   gap_i + J_i d >= -s,   |c_j + G_j d| <= s,

s* (metres) is the least violation any motion leaves: every motion of the bodies moved by forces leaves some contact
at least s* deep or some joint at least s* open.  The step's rows are met when s* is within the overlap bound the step
accepts (`pair.DEPTH_LIMIT`); a larger s* is a jam.  The LP's dual solution y (y >= 0 on the rows, summing to 1,
J^T y = 0 over the bodies moved by forces, the rows' values at d = 0 weighted by y summing to -s*) is then a Farkas
certificate that the rows relaxed by anything less than s* cannot be met, and as a vertex of the dual polyhedron (an
extreme ray of the cone of such y) its support is minimal, an irreducible infeasible subset (Gleeson and Ryan 1990):
the contacts and joints that make the jam, no proper subset of which does.

Friction: when some displacement meets the rows, friction may still lock the parts (a ball under a plate tilted by
alpha from the floor locks when tan(alpha / 2) < mu, a roller clutch).  A second LP replaces each rough contact's
normal row by Anitescu's relaxation of its friction cone, gap_i + J_i d >= |X_i d| (X_i d: its slip times mu and
the friction ellipsoid's factors, the explicit method's friction rows at zero impulse; torsion left out), as the
_DIRECTIONS faces of a pyramid that circumscribes the cone, so that its rows hold wherever the cone's do; when it
is infeasible its certificate is a set of forces within the friction cones that balance on the bodies moved by
forces and that the drivers press: a jam locked by friction.

Cost: one closest-point query per candidate pair, one evaluation of the step's rows and their Jacobian (dense), and
one or two LPs of (6 x bodies moved by forces + 1) unknowns and (pairs, 8 per rough pair in the second, + 2 x joint
rows) rows; run only after a step has failed (core.contact.recording.ContactRun).  First order in the motion of the
bodies moved by forces, with one closest point per pair: a jam that only their curvature or a second point of a
pair's contact makes is not named, and that step keeps the solver's reason.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bodies import ContactModel, State
from .pair import DEPTH_LIMIT

__all__ = ["Jam", "find_jam", "JAM"]

JAM = "a jam"  # how a jam's reason starts (after "stopped at t = ...: ")
_SUPPORT = 1e-7  # a row is in the certificate when its dual value is above this (the values sum to 1)
_LP_TOL = 1e-10  # HiGHS's primal and dual feasibility tolerances (its finest), on rows scaled to the violation at d = 0


@dataclass(frozen=True)
class Jam:
    """A failed step's jam: the least violation s* (m) every motion of the bodies moved by forces leaves, the
    certificate's contacts (model pair indices) and joints (model joint indices), and what the reason says."""

    depth: float
    pairs: tuple[int, ...]
    joints: tuple[int, ...]
    friction: bool  # the contacts lock by friction (no jam without it)
    text: str


def find_jam(model: ContactModel, state: State, h: float, workspace=None) -> Jam | None:
    """The jam that makes the step of size h from `state` infeasible (module doc), or None when the drivers jam
    nothing there: the step's rows can be met to first order, or no driver takes part in what makes them unmet, or the
    test cannot be made (the drivers' motion cannot be followed to the step's end, a body's free rotation fails)."""
    rows = _step_rows(model, state, h, workspace)
    if rows is None:
        return None
    prob, g, Jg, X, c, Jc = rows
    worst = max(float(np.max(-g, initial=0.0)), float(np.max(np.abs(c), initial=0.0)))
    if not worst > DEPTH_LIMIT:
        return None  # (the bodies moved by forces held still meet every row)
    # without friction: is there a displacement that meets the rows?
    friction = False
    got = _least_violation(g, Jg, c, Jc, worst)
    owner = np.arange(g.size)  # (each contact row's pair among prob.pairs)
    if got is None:
        # with friction: do the contacts lock?  Anitescu's relaxation of each friction cone (the normal row at least
        # the slip's row, |X d|), as a pyramid of _DIRECTIONS faces circumscribing the cone: its rows hold wherever
        # the cone's do, so an infeasible pyramid is a jam, and its certificate's friction lies within the cones
        rough = [i for i, x in enumerate(X) if x is not None]
        if not rough:
            return None
        ang = 2.0 * np.pi * np.arange(_DIRECTIONS) / _DIRECTIONS
        faces = np.stack((np.cos(ang), np.sin(ang)), axis=1)  # (the directions of slip, in the tangent frame)
        smooth = [i for i, x in enumerate(X) if x is None]
        owner = np.array(smooth + [i for i in rough for _k in range(_DIRECTIONS)], int)
        g = g[owner]
        Jg = np.vstack([Jg[smooth]] + [Jg[i] - faces @ X[i][:2] for i in rough])  # (torsion left out: relaxed)
        got = _least_violation(g, Jg, c, Jc, worst)
        if got is None:
            return None
        friction = True
    depth, yp, yj = got
    pairs = tuple(sorted({prob.pairs[int(owner[k])].ip for k in np.flatnonzero(yp > _SUPPORT)}))
    joints = ()
    if c.size:
        jplan = prob.plan.joints
        rows_of = np.repeat(np.arange(len(jplan.n)), jplan.n)
        joints = tuple(sorted({int(rows_of[k]) for k in np.flatnonzero(yj > _SUPPORT)}))
    text = _text(model, pairs, joints, depth, friction)
    return None if text is None else Jam(depth, pairs, joints, friction, text)


_DIRECTIONS = 8  # faces of the friction pyramids (circumscribing each cone: its rows are the cone's, relaxed)


def _step_rows(model: ContactModel, state: State, h: float, workspace=None):
    """The rows of the test (module doc) in metres against d = h nu of the bodies moved by forces: the step problem at
    the poses of the test, the contacts' normal rows g + Jg d, per contact with friction the rows X d of its slip
    times the friction coefficient and the friction ellipsoid's factors (None without friction), the joints' rows
    c + Jc d; None when the test cannot be made."""
    from .plan import Workspace
    from .stepper import _NEWTON_ITER, _TOL, _StepProblem, _driven_motion, _rot

    drivers = model.drive is not None or any(js.drive is not None for js in model.joints)
    if not drivers or not model.free.any():
        return None
    ws = workspace if workspace is not None else Workspace()  # (the run's: its drivers' motion continues from the
    # times solved last, not from t = 0 again)
    mid = state.copy()
    if model.drive is not None:
        # the kinematic bodies where the drivers put them at the end of the step
        driven = _driven_motion(model, state, _rot(state.q), h, ws)
        if isinstance(driven, str):
            return None
        b = model.drive.body
        mid.p[b], mid.q[b] = driven[1], driven[2]
    # the explicit method's problem of the step at these poses, in the normalised friction form: each candidate
    # pair's closest points, normal and gap from a query now, the joints' rows and gradients now (a driven joint row:
    # its value at t + h); cold, so that no warm start is read (the broad phase keeps the last step's pairs)
    prob = _StepProblem(model, mid, h, "explicit", "normalised", 0.0, True, frozenset(), _TOL["explicit"],
                        _NEWTON_ITER, ws, None)
    if prob.failure:
        return None
    prob.dense = True  # (the rows wanted are few: the Jacobian as one matrix)
    # at z = 0 (no displacement, no impulse) a pair's normal row is gap0 / h + n . v_rel and its friction rows
    # mu e_k (t_k . v_rel) (core.contact.explicit), a joint's c(q+) / h; their Jacobian in the velocities
    F, Jz = prob.residual(np.zeros(prob.ntot))
    free = np.flatnonzero(model.free[prob.dyn])
    cols = (6 * free[:, None] + np.arange(6)).ravel()
    prows = np.array([pr.off for pr in prob.pairs], int)
    X = [Jz[pr.off + 1:pr.off + 1 + pr.lay.nf][:, cols] if pr.lay.nf else None for pr in prob.pairs]
    jplan = prob.plan.joints
    jrows = np.arange(jplan.start, jplan.start + jplan.size, dtype=int) if prob.jstep is not None else np.zeros(0, int)
    return (prob, h * F[prows], Jz[np.ix_(prows, cols)], X, h * F[jrows], Jz[np.ix_(jrows, cols)])


def _least_violation(g, Jg, c, Jc, scale):
    """min s over (d, s >= 0) with g + Jg d >= -s and |c + Jc d| <= s (HiGHS's dual simplex, the rows divided by
    scale): None when s* is within the step's overlap bound, else (s*, the dual values of the contact rows and of the
    joint rows, y >= 0 summing to 1)."""
    from scipy.optimize import linprog

    A = np.vstack((-Jg, Jc, -Jc))
    A = np.hstack((A, -np.ones((A.shape[0], 1))))
    bub = np.concatenate((g, -c, c)) / scale
    cost = np.zeros(A.shape[1])
    cost[-1] = 1.0
    bounds = [(None, None)] * (A.shape[1] - 1) + [(0.0, None)]
    if not (np.isfinite(A).all() and np.isfinite(bub).all()):
        return None  # (a closest-point query or a row gone wrong: no test)
    res = linprog(cost, A_ub=A, b_ub=bub, bounds=bounds, method="highs-ds",
                  options={"primal_feasibility_tolerance": _LP_TOL, "dual_feasibility_tolerance": _LP_TOL})
    if res.status != 0 or res.fun is None:
        return None
    depth = float(res.fun) * scale
    if not depth > DEPTH_LIMIT:
        return None
    y = -np.asarray(res.ineqlin.marginals, float)
    P, R = g.size, c.size
    return depth, y[:P], y[P:P + R] + y[P + R:]


def _listed(items) -> str:
    """a, a and b, a, b and c."""
    q = list(items)
    return q[0] if len(q) == 1 else ", ".join(q[:-1]) + " and " + q[-1]




def _text(model: ContactModel, pairs: tuple, joints: tuple, depth: float, friction: bool) -> str | None:
    """What the reason says of a jam: which driven bodies (or driven joints) press which bodies moved by forces
    against what (static bodies, joints to them), then in brackets why it is a jam and the certificate's contacts and
    joints; None when no driver takes part in it."""
    names = model.names
    kin, free = model.kinematic_mask, model.free
    pressers, drivers, pressed, against, via, held = [], [], [], [], [], []

    def add(lst, x):
        if x not in lst:
            lst.append(x)

    for ip in pairs:
        a, b, _mu = model.pairs[ip]
        for i in (a, b):
            add(pressers if kin[i] else pressed if free[i] else against, f"'{names[i]}'")
    for q in joints:
        js = model.joints[q]
        if js.implied:
            continue  # (a body of a planar document held in its plane: not a joint of the document)
        if js.drive is not None:
            add(drivers, f"'{js.name}'")
        for i in (js.a, js.b):
            if kin[i]:
                add(pressers, f"'{names[i]}'")
            elif free[i]:
                add(pressed, f"'{names[i]}'")
        if js.drive is not None:
            continue
        if kin[js.a] or kin[js.b]:
            add(via, f"'{js.name}'")
        elif free[js.a] and free[js.b]:
            add(held, f"'{js.name}'")
        else:
            add(against, f"joint '{js.name}'")
    if not (pressers or drivers) or not pressed:
        return None
    who = []
    if pressers:
        who.append(f"the driven {_listed(pressers)}")
    if drivers:
        who.append(f"the driver{'s' if len(drivers) > 1 else ''} of joint{'s' if len(drivers) > 1 else ''} "
                   f"{_listed(drivers)}")
    many = len(pressers) + len(drivers) > 1
    verb = ("wedge" if friction else "press") + ("" if many else "s" if friction else "es")
    what = " and ".join(who) + f" {verb} {_listed(pressed)}"
    if against:
        what += " against " + _listed(against)
    elif many:
        what += " between them"
    if via:
        what += f" through joint{'s' if len(via) > 1 else ''} {_listed(via)}"
    if held:
        what += f", held by joint{'s' if len(held) > 1 else ''} {_listed(held)}"
    named = [model.joints[q].name for q in joints if not model.joints[q].implied]
    parts = []  # (a certificate of joints alone, a driven chain pulled straight, names no contact)
    if pairs:
        contacts = _listed([f"{names[model.pairs[ip][0]]}/{names[model.pairs[ip][1]]}" for ip in pairs])
        parts.append(f"contact{'s' if len(pairs) > 1 else ''} {contacts}")
    if named:
        parts.append(f"joint{'s' if len(named) > 1 else ''} {_listed(named)}")
    where = "; ".join(parts)
    if friction:
        return (f"{JAM}: {what}, locked by friction (the bodies moved by forces could make way for the drivers only "
                f"by sliding where friction holds them, to first order: forces within the friction cones balance on "
                f"them; {where})")
    return (f"{JAM}: {what} (no motion of the bodies moved by forces makes way for the drivers: each leaves a "
            f"contact at least {depth:.2g} m deep or a joint that far open at the end of the step, to first order; "
            f"{where})")
