"""The contact step's complementarity solver: a primal-dual interior-point method (Mehrotra predictor-corrector).

Problem (a mixed complementarity problem with lower bounds, MCPProblem): find z with
    F_i(z) = 0                                  for every free index i (lower_i = -inf)
    y_i = z_i - l_i >= 0,  F_i(z) >= 0,  y_i F_i(z) = 0     for every bounded index i.
The method keeps every bounded y_i and a slack w_i for its row strictly positive and follows the central path
    F_free(z) = 0,   F_B(z) - w = 0,   y o w = kappa,   kappa -> 0
by Newton steps.  Eliminating w leaves one linear system per step with the Jacobian of F plus a diagonal,
    (J + diag(w / y on the bounded indices)) dz = -F + (kappa - c) / y   (c: the corrector's second-order term),
which keeps the block structure of a contact step's Jacobian (core.contact.elements).  Why this method: in a pile
the contact impulses are statically indeterminate and the closest-point multipliers of flat faces degenerate, so
the Jacobian of F is singular at the solution; the barrier term w / y regularises exactly those directions and the
iterates follow the analytic centre of the solution set, where semismooth Newton on a complementarity function
stalls (Acary, Bremond, Huber 2018 on FCLIB; Dojo, Howell et al. 2022, solves its contact steps the same way).

Each iteration: one evaluation of F and J, one factorisation, two solves (the affine predictor with kappa = 0 gives
the centring parameter sigma = (mu_aff / mu)^3, Mehrotra 1992; the corrector aims at kappa = sigma mu), a step
length by the fraction-to-the-boundary rule, and a backtracking search on the norm of the central-path residual
for kappa (nonlinear F: a full step may increase it).  The cost of a call is bounded by max_iter evaluations and
factorisations (plus at most max_backtracks values per iteration); cancel() is checked before every iteration.

Convergence (all three): max |F_free| <= tol, min F_B >= -tol, max y_i F_i(z)^+ <= comp_tol.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import scipy.linalg as sla
import scipy.sparse.linalg as spla

from .elements import ElementMatrix

__all__ = ["MCPProblem", "SolverOptions", "SolverResult", "solve"]


@dataclass(frozen=True)
class MCPProblem:
    """What is solved: F and its Jacobian, the bounds, optionally F alone (for line-search trials)."""

    fun: Callable  # z -> (F, J), J a dense ndarray or a core.contact.elements.ElementMatrix
    lower: np.ndarray  # (n,) lower bounds, -inf for free unknowns
    value: Callable | None = None  # z -> F (cheaper than fun when the Jacobian is not needed)


@dataclass(frozen=True)
class SolverOptions:
    """Every tolerance and limit of the solver (defaults measured on the contact benchmark, docs/contact.md)."""

    tol: float = 1e-10  # equality rows and the bounded rows' feasibility, in the rows' units (m/s, m)
    max_iter: int = 150  # iterations (evaluations with Jacobian, factorisations) at most
    stall_iter: int = 60  # ... and at most this many without halving the residual
    acceptable_tol: float = 1e-8  # a solve that stays at this level (and acceptable_comp) for acceptable_iter
    acceptable_comp: float = 1e-13  # iterations without reaching tol ends there, converged ("acceptable", as in
    acceptable_iter: int = 10  # IPOPT: degenerate contacts make Newton converge only linearly near the solution)
    nonmonotone: int = 4  # a trial point is compared with the largest of the last this many merits and the current
    max_backtracks: int = 8  # halvings of the step length per iteration at most
    boundary: float = 0.99  # fraction-to-the-boundary factor (at least; tends to 1 as mu -> 0)
    start_margin: float = 1e-4  # bounded unknowns and slacks start at least this far from their bounds
    regularization: tuple = (1e-10, 1e-8, 1e-6)  # diagonal added to the free unknowns when J + D is singular
    comp_tol: float = 1e-14  # complementarity products y_i F_i (pn gap / h under load: a gap of h 1e-14 / pn)
    local_from: float = 1e-3  # the local phase is tried from a start with a natural residual below this
    prox_scale: float = 0.1  # proximal (primal) regularisation of the free unknowns, per unit natural residual
    prox_cap: float = 1e-2  # ... at most
    prox_bounded: bool = True  # ... also on the bounded unknowns
    local_every: int = 5  # interior-point iterations between tries of the local phase at the end of the path
    sigma_min: float = 0.0  # centring parameter at least (mu falls at most by 1/sigma_min per iteration)
    local_iter: int = 4  # local iterations per try at most
    local_rate: float = 0.5  # each must reduce the natural residual at least by this factor


@dataclass
class SolverResult:
    """Outcome of one solve (a result, never an exception), in the manner of scipy's OptimizeResult."""

    z: np.ndarray  # last iterate (the solution when converged)
    converged: bool
    status: int  # 0 converged, 1 iteration limit, 2 singular system, 3 stalled, 4 cancelled, 5 non-finite, 6 acceptable
    iterations: int
    nfev: int  # evaluations of F (with or without Jacobian)
    njev: int  # evaluations of the Jacobian (= factorisations)
    residual: float  # max of the three convergence measures, each divided by its tolerance times tol
    reason: str
    history: list = field(default_factory=list)  # (eq, comp, mu, step length) per iteration


_REASONS = {0: "converged", 1: "iteration limit", 2: "singular Newton system",
            3: "stalled (residual not halved in stall_iter iterations)",
            4: "cancelled", 5: "non-finite values", 6: "converged to the acceptable level"}


_ACCURACY = 1e-9  # relative residual a Newton direction must meet (else the sparse LU of the whole)


def _factor(H):
    """A solver rhs -> x for H (dense or ElementMatrix), or None when singular."""
    if isinstance(H, ElementMatrix):
        # block elimination (the pair blocks' own unknowns first); its own-own blocks are factored without pivoting
        # across blocks, which can be inaccurate when a loaded contact's impulse column is nearly zero in its own
        # block (D -> 0): then a sparse LU of the whole
        elim = H.factor()

        def solve_elem(b):
            x = elim(b) if elim is not None else None
            if x is not None and not np.linalg.norm(H @ x - b) <= _ACCURACY * np.linalg.norm(b):
                x = None  # (the elimination's own test is absolute: here each direction must be accurate)
            if x is None:
                if not sparse:
                    try:
                        sparse.append(spla.splu(H.tocsc()))
                    except (RuntimeError, ValueError):
                        return None
                x = sparse[0].solve(b)
            return x

        sparse: list = []
        return solve_elem
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sla.LinAlgWarning)  # (a singular H is detected just below)
            lu = sla.lu_factor(H, check_finite=False)
    except (np.linalg.LinAlgError, ValueError):
        return None
    if not np.all(np.isfinite(lu[0])) or np.min(np.abs(np.diag(lu[0]))) <= 1e-300:
        return None
    return lambda b: sla.lu_solve(lu, b, check_finite=False)


def _add_diag(H, v):
    if isinstance(H, ElementMatrix):
        return H.add_diagonal(v)
    H = H.copy()
    H[np.diag_indices_from(H)] += v
    return H


def _max_step(x, dx, frac):
    """Largest a in (0, 1] with x + a dx >= (1 - frac) x (x > 0)."""
    neg = dx < 0.0
    if not np.any(neg):
        return 1.0
    return float(min(1.0, frac * np.min(-x[neg] / dx[neg])))


def _scale_rows(H, s):
    if isinstance(H, ElementMatrix):
        return H.scale_rows(s)
    return H * s[:, None]


def solve(problem: MCPProblem, z0: np.ndarray, options: SolverOptions = SolverOptions(),
          cancel: Callable[[], bool] | None = None) -> SolverResult:
    """Solve the MCP from z0: the local phase from z0 when it is close, else (or when that fails) the interior-point
    phase, whose iterates close to the solution hand over to the local phase again."""
    o = options
    lower = np.asarray(problem.lower, dtype=float)
    B = np.flatnonzero(np.isfinite(lower))
    lB = lower[B]
    z = np.array(z0, dtype=float)
    n = z.size
    free = np.ones(n, bool)
    free[B] = False
    value = problem.value or (lambda zz: problem.fun(zz)[0])
    count = {"it": 0, "nfev": 0, "njev": 0}
    history: list = []

    def evaluate(zz):
        count["nfev"] += 1
        count["njev"] += 1
        return problem.fun(zz)

    def natural(zz, F):
        nat = F.copy()
        nat[B] = np.minimum(zz[B] - lB, F[B])
        return float(np.max(np.abs(nat), initial=0.0)) if np.all(np.isfinite(nat)) else np.inf

    def measures(zz, F):
        """(eq, comp): the largest miss of an equation or bound, the largest complementarity product."""
        if not (np.all(np.isfinite(F)) and np.all(np.isfinite(zz))):
            return np.inf, np.inf
        yy = zz[B] - lB
        eq = max(float(np.max(np.abs(F[free]), initial=0.0)), float(np.max(-F[B], initial=0.0)),
                 float(np.max(-yy, initial=0.0)))
        return eq, float(np.max(np.maximum(yy, 0.0) * np.maximum(F[B], 0.0), initial=0.0))

    def score(zz, F):
        eq, comp = measures(zz, F)
        return max(eq, comp * (o.tol / o.comp_tol))

    def done(zz, F):
        eq, comp = measures(zz, F)
        return eq <= o.tol and comp <= o.comp_tol

    def finish(zz, status, res):
        return SolverResult(zz, status in (0, 6), status, count["it"], count["nfev"], count["njev"], res,
                            _REASONS[status], history)

    if n == 0:
        return finish(z, 0, 0.0)
    F, J = evaluate(z)
    if not np.all(np.isfinite(F)):
        return finish(z, 5, np.inf)
    if done(z, F):
        return finish(z, 0, score(z, F))
    if natural(z, F) <= o.local_from:
        ok, zl, Fl, Jl = _local(problem, z, F, J, B, lB, o, count, natural, done, evaluate, history)
        if ok:
            return finish(zl, 0, score(zl, Fl))

    # --- interior-point phase -------------------------------------------------------------------------------
    y = np.maximum(z[B] - lB, o.start_margin)
    z[B] = lB + y
    F, J = evaluate(z)
    w = np.maximum(F[B], o.start_margin)
    status = 1
    local_next = 0  # the local phase is tried again from this iteration on
    best_res, best_it = np.inf, 0  # the residual last halved, and when
    acceptable = 0  # consecutive iterates at the acceptable level
    merits: list = []  # central-path residual norms of the accepted iterates (nonmonotone search)
    while True:
        if not (np.all(np.isfinite(F)) and np.all(np.isfinite(z))):
            status = 5
            break
        eq, comp = measures(z, F)
        res = score(z, F)
        if eq <= o.tol and comp <= o.comp_tol:
            status = 0
            break
        if B.size and np.mean(y * w) <= 10.0 * o.comp_tol and eq <= o.local_from and count["it"] >= local_next:
            # at the end of the central path: the local phase on the identified active set (quadratic, and it
            # moves a contact across its complementarity corner in one step, where the path is sharply curved)
            local_next = count["it"] + o.local_every
            ok, zl, Fl, Jl = _local(problem, z, F, J, B, lB, o, count, natural, done, evaluate, history)
            if ok:
                return finish(zl, 0, score(zl, Fl))
        if res < 0.5 * best_res:
            best_res, best_it = res, count["it"]
        elif count["it"] - best_it >= o.stall_iter:
            status = 3  # no halving of the residual in stall_iter iterations: a stall (the caller halves the step)
            break
        acceptable = acceptable + 1 if (eq <= o.acceptable_tol and comp <= o.acceptable_comp) else 0
        if acceptable > o.acceptable_iter:
            status = 6
            break
        if count["it"] >= o.max_iter:
            status = 1
            break
        if cancel is not None and cancel():
            status = 4
            break
        count["it"] += 1
        mu = float(np.mean(y * w)) if B.size else 0.0
        prox = min(o.prox_cap, o.prox_scale * res)
        D = np.full(n, prox)
        D[B] = w / y + (prox if o.prox_bounded else 0.0)
        # bounded rows divided by 1 + D: D = w / y spans many decades near the solution (an active bound: D -> inf,
        # an inactive one: D -> 0), and the rows stay of order one
        rs = np.ones(n)
        rs[B] = 1.0 / (1.0 + D[B])
        H = _scale_rows(_add_diag(J, D), rs)
        # predictor (kappa = 0, no corrector term): rhs -F; a singular or inaccurate system is regularised
        dz = None
        for reg in (0.0,) + tuple(o.regularization):
            solver = _factor(_add_diag(H, np.where(free, reg, 0.0)) if reg else H)
            dz = solver(-F * rs) if solver is not None else None
            if dz is not None and np.all(np.isfinite(dz)):
                break
            dz = None
        if dz is None:
            status = 2
            break
        dyA = dz[B]
        dwA = -w - (w / y) * dyA
        a_aff = min(_max_step(y, dyA, 1.0), _max_step(w, dwA, 1.0))
        mu_aff = float(np.mean((y + a_aff * dyA) * (w + a_aff * dwA))) if B.size else 0.0
        sigma = max(o.sigma_min, min(1.0, (mu_aff / mu) ** 3)) if mu > 0 else 0.0
        kappa = max(sigma * mu, 0.1 * o.comp_tol)  # (not below: the products need not be smaller than comp_tol)
        c = dyA * dwA
        rc = -F.copy()
        rc[B] += (kappa - c) / y
        dz2 = solver(rc * rs)
        if dz2 is not None and np.all(np.isfinite(dz2)):
            dz = dz2
            dy = dz[B]
            dw = (kappa - c) / y - w - (w / y) * dy
        else:  # (the predictor direction alone)
            dy, dw, kappa = dyA, dwA, 0.0
        frac = min(max(o.boundary, 1.0 - mu), 1.0 - 1e-10)  # (y, w stay > 0 in floating point too)
        a = min(_max_step(y, dy, frac), _max_step(w, dw, frac))

        def path_norm(Fz, yz, wz):
            rF = Fz.copy()
            rF[B] -= wz
            return float(np.sqrt(rF @ rF + np.sum((yz * wz - kappa) ** 2)))

        r0 = path_norm(F, y, w)
        ref = max([r0] + merits[-o.nonmonotone:])
        newton = False
        for trial in range(o.max_backtracks + 1):
            zt = z + a * dz
            yt, wt = y + a * dy, w + a * dw
            Ft = value(zt)
            count["nfev"] += 1
            rt = path_norm(Ft, yt, wt) if np.all(np.isfinite(Ft)) else np.inf
            if rt <= (1.0 - 1e-4 * a) * ref:
                break
            a *= 0.5
            if trial == 1 and not newton and kappa > 0.0:
                # the corrector's second-order term can make the direction ascend the merit: the plain Newton
                # direction of the central-path equations for this kappa descends it (same factorisation)
                rn = -F.copy()
                rn[B] += kappa / y
                dzn = solver(rn * rs)
                if dzn is not None and np.all(np.isfinite(dzn)):
                    newton = True
                    dz, dy = dzn, dzn[B]
                    dw = kappa / y - w - (w / y) * dy
                    a = min(_max_step(y, dy, frac), _max_step(w, dw, frac))
        merits.append(rt)
        # (with no decrease the shortest step is still taken: the barrier keeps it interior)
        z, y, w = zt, yt, np.maximum(wt, 1e-300)
        z[B] = lB + y
        history.append((res, eq, comp, mu, a))
        F, J = evaluate(z)
    return finish(z, status, score(z, F))


def _local(problem, z, F, J, B, lB, o, count, natural, done, evaluate, history):
    """The local phase: semismooth Newton on the natural map min(y, F_B) (each bounded row replaced by its unit row
    where the bound is the smaller), at most o.local_iter iterations, each required to reduce the natural residual
    by o.local_rate; quadratic near a solution whose active set it has identified.  (ok, z, F, J)."""
    n = z.size
    res = natural(z, F)
    for _ in range(o.local_iter):
        count["it"] += 1
        act = (z[B] - lB) <= F[B]
        sc = np.ones(n)
        sc[B[act]] = 0.0
        v = np.zeros(n)
        v[B[act]] = 1.0
        rhs = -F.copy()
        rhs[B[act]] = -(z[B[act]] - lB[act])
        solver = _factor(_add_diag(_scale_rows(J, sc), v))
        d = solver(rhs) if solver is not None else None
        if d is None or not np.all(np.isfinite(d)):
            return False, z, F, J
        zt = z + d
        zt[B] = np.maximum(zt[B], lB)
        Ft, Jt = evaluate(zt)
        rt = natural(zt, Ft)
        history.append((rt, np.nan, np.nan, np.nan, 1.0))
        if not rt <= o.local_rate * res:
            return False, z, F, J
        z, F, J, res = zt, Ft, Jt, rt
        if done(z, F):
            return True, z, F, J
    return False, z, F, J
