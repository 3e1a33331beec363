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

__all__ = ["MCPProblem", "ConeBlock", "SolverOptions", "SolverResult", "solve"]


@dataclass(frozen=True)
class MCPProblem:
    """What is solved: F and its Jacobian, the bounds, optionally F alone (for line-search trials)."""

    fun: Callable  # z -> (F, J), J a dense ndarray or a core.contact.elements.ElementMatrix
    lower: np.ndarray  # (n,) lower bounds, -inf for free unknowns
    value: Callable | None = None  # z -> F (cheaper than fun when the Jacobian is not needed)
    cones: tuple = ()  # second-order cone blocks (ConeBlock), each N cones of one dimension d


@dataclass(frozen=True)
class ConeBlock:
    """N second-order cone complementarities of dimension d: X = scale * z[cols] and G = F[rows] (both (N, d)) lie in
    K = {(x0, x) : |x| <= x0} and X . G = 0.  The rows are not equations F = 0 and their unknowns are not bounded;
    every cone's rows and columns belong to one element of an ElementMatrix Jacobian (a pair's own unknowns)."""

    rows: np.ndarray  # (N, d) indices of the rows of G
    cols: np.ndarray  # (N, d) indices of the unknowns of X
    scale: np.ndarray  # (N, d) X = scale * z[cols] (a contact: (mu_f, 1, 1[, 1]) on (pn, q))


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
    cone_comp: float = 1e-8  # a cone's complementarity X . G is met below max(comp_tol, cone_comp |X| |G|) (the
    # friction impulse's direction and size to about this relative accuracy)
    cone_center: float = 1e-2  # a step keeps every cone pair near its own central ray: sqrt(det X det S) >= this
    # times X . S (1 on the central path; near 0 the scaling is ill-conditioned and the iteration stalls)
    cone_start: float = 0.9  # the start raises each cone's axis part to |rest| / cone_start (well inside the cone:
    # a contact's pn raised rather than its friction impulse shrunk) ...
    cone_margin: float = 1e-4  # ... and to at least this (m/s)
    cone_floor: float = 1e-10  # a cone's centring target kappa is at least cone_floor |X| |S|: below, the distance of
    # a sliding contact's X and S to the cone's boundary is lost to rounding (singular scaling)


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


def _det(x):
    """x0^2 - |x|^2 of each cone vector (rows of x), as (x0 - |x|)(x0 + |x|)."""
    nx = np.sqrt(np.einsum("ij,ij->i", x[:, 1:], x[:, 1:]))
    return (x[:, 0] - nx) * (x[:, 0] + nx)


def _jordan(x, s):
    """The Jordan product x o s = (x . s, x0 s + s0 x) of each pair of rows."""
    out = np.empty_like(x)
    out[:, 0] = np.einsum("ij,ij->i", x, s)
    out[:, 1:] = x[:, :1] * s[:, 1:] + s[:, :1] * x[:, 1:]
    return out


def _jordan_solve(lam, r):
    """v with lam o v = r (lam interior): the arrow matrix of lam inverted in closed form."""
    v = np.empty_like(r)
    v[:, 0] = (lam[:, 0] * r[:, 0] - np.einsum("ij,ij->i", lam[:, 1:], r[:, 1:])) / _det(lam)
    v[:, 1:] = (r[:, 1:] - v[:, :1] * lam[:, 1:]) / lam[:, :1]
    return v


def _nt_scaling(x, s):
    """Nesterov-Todd scaling of interior cone pairs (rows of x, s): W, W^-1, W^-2 (N, d, d) and lam = W s = W^-1 x,
    with W^2 s = x.  W = eta P(v), v = wbar^(1/2), wbar = (xbar + J sbar) / (2 gamma) (P the quadratic representation
    2 u u^T - det(u) J; xbar, sbar of determinant one; eta = (det x / det s)^(1/4))."""
    d = x.shape[1]
    Jd = np.ones(d)
    Jd[1:] = -1.0
    # (an interior point rounded onto the boundary is kept just inside it)
    dx = np.sqrt(np.maximum(_det(x), 1e-30 * x[:, 0] ** 2))
    ds = np.sqrt(np.maximum(_det(s), 1e-30 * s[:, 0] ** 2))
    xb, sb = x / dx[:, None], s / ds[:, None]
    gamma = np.sqrt(np.maximum(0.5 * (1.0 + np.einsum("ij,ij->i", xb, sb)), 1.0))  # (xb . sb >= 1 but for rounding)
    wb = (xb + Jd * sb) / (2.0 * gamma[:, None])
    eta = np.sqrt(dx / ds)
    v = wb.copy()
    v[:, 0] += 1.0
    v /= np.sqrt(2.0 * (wb[:, 0] + 1.0))[:, None]
    Jm = np.diag(Jd)
    W = eta[:, None, None] * (2.0 * v[:, :, None] * v[:, None, :] - Jm)
    Jv = Jd * v
    Wi = (2.0 * Jv[:, :, None] * Jv[:, None, :] - Jm) / eta[:, None, None]
    Jw = Jd * wb
    W2i = (2.0 * Jw[:, :, None] * Jw[:, None, :] - Jm) / (eta ** 2)[:, None, None]
    lam = np.einsum("nij,nj->ni", W, s)
    return W, Wi, W2i, lam


def _cone_step(x, dx, frac):
    """Largest a in (0, 1] with x + a dx / frac in the cone, times frac (x interior): the first root of the
    determinant along the ray (the cone's boundary is crossed there first)."""
    if x.shape[0] == 0:
        return 1.0
    A = _det(dx)
    Bq = x[:, 0] * dx[:, 0] - np.einsum("ij,ij->i", x[:, 1:], dx[:, 1:])
    C = _det(x)
    disc = Bq * Bq - A * C
    with np.errstate(divide="ignore", invalid="ignore"):
        sq = np.sqrt(np.maximum(disc, 0.0))
        q = -(Bq + np.where(Bq >= 0.0, sq, -sq))
        r1 = np.where(A != 0.0, q / A, np.inf)
        r2 = np.where(q != 0.0, C / q, np.inf)
    r1 = np.where((disc >= 0.0) & (r1 > 0.0), r1, np.inf)
    r2 = np.where((disc >= 0.0) & (r2 > 0.0), r2, np.inf)
    a = float(np.min(np.minimum(r1, r2)))
    return min(1.0, frac * a)


def _centred(x, s, gamma):
    """Every cone pair (rows of x, s) in the neighbourhood sqrt(det x det s) >= gamma x . s."""
    dx, ds = _det(x), _det(s)
    return bool(np.all((dx > 0.0) & (ds > 0.0) & (np.sqrt(np.maximum(dx, 0.0) * np.maximum(ds, 0.0))
                                                  >= gamma * np.einsum("ij,ij->i", x, s))))


def _add_cones(H, cones, blocks):
    """H plus the cone blocks W^-2 diag(scale) at (rows, cols) of each cone."""
    if not cones:
        return H
    if isinstance(H, ElementMatrix):
        for (R, C, c), vals in zip(cones, blocks):
            H = H.add_local(R, C, vals)
        return H
    H = H.copy()
    for (R, C, c), vals in zip(cones, blocks):
        np.add.at(H, (R[:, :, None], C[:, None, :]), vals)
    return H


def _scale_rows(H, s):
    if isinstance(H, ElementMatrix):
        return H.scale_rows(s)
    return H * s[:, None]


def solve(problem: MCPProblem, z0: np.ndarray, options: SolverOptions = SolverOptions(),
          cancel: Callable[[], bool] | None = None) -> SolverResult:
    """Solve the MCP from z0: the local phase from z0 when it is close, else (or when that fails) the interior-point
    phase, whose iterates close to the solution hand over to the local phase again (problems without cones: the
    local phase is a natural-map Newton step on bounds only)."""
    o = options
    lower = np.asarray(problem.lower, dtype=float)
    B = np.flatnonzero(np.isfinite(lower))
    lB = lower[B]
    z = np.array(z0, dtype=float)
    n = z.size
    cones = [(np.asarray(c.rows, int), np.asarray(c.cols, int), np.asarray(c.scale, float))
             for c in problem.cones if np.asarray(c.rows).size]
    free = np.ones(n, bool)
    free[B] = False
    for R, _C, _c in cones:
        free[R.ravel()] = False  # (cone rows are not equations F = 0)
    nC = sum(R.shape[0] for R, _C, _c in cones)
    local_ok = not cones  # (the natural map of the local phase is written for bounds only)
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
        """(eq, comp): the largest miss of an equation, bound or cone, the largest complementarity product."""
        if not (np.all(np.isfinite(F)) and np.all(np.isfinite(zz))):
            return np.inf, np.inf
        yy = zz[B] - lB
        eq = max(float(np.max(np.abs(F[free]), initial=0.0)), float(np.max(-F[B], initial=0.0)),
                 float(np.max(-yy, initial=0.0)))
        comp = float(np.max(np.maximum(yy, 0.0) * np.maximum(F[B], 0.0), initial=0.0))
        for R, C, c in cones:
            X, G = c * zz[C], F[R]
            eq = max(eq, float(np.max(np.linalg.norm(X[:, 1:], axis=1) - X[:, 0], initial=0.0)),
                     float(np.max(np.linalg.norm(G[:, 1:], axis=1) - G[:, 0], initial=0.0)))
            xg = np.einsum("ij,ij->i", X, G)
            rel = np.maximum(o.comp_tol, o.cone_comp * np.linalg.norm(X, axis=1) * np.linalg.norm(G, axis=1))
            comp = max(comp, float(np.max(xg * (o.comp_tol / rel), initial=0.0)))
        return eq, comp

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
    if local_ok and natural(z, F) <= o.local_from:
        ok, zl, Fl, Jl = _local(problem, z, F, J, B, lB, o, count, natural, done, evaluate, history)
        if ok:
            return finish(zl, 0, score(zl, Fl))

    # --- interior-point phase -------------------------------------------------------------------------------
    y = np.maximum(z[B] - lB, o.start_margin)
    z[B] = lB + y
    for R, C, c in cones:  # X well inside its cone: X0 raised to |X| / cone_start (a contact: pn raised, the
        # friction impulses kept; lowering them instead changes the bodies' spins, pn adds no torque on a sphere)
        X = c * z[C]
        nx = np.linalg.norm(X[:, 1:], axis=1)
        z[C[:, 0]] = np.maximum(np.maximum(X[:, 0], nx / o.cone_start) / c[:, 0], o.cone_margin)
    y = z[B] - lB
    F, J = evaluate(z)
    w = np.maximum(F[B], o.start_margin)
    S = []  # the cones' slacks (G = S on the central path)
    for R, C, c in cones:
        Sk = F[R].copy()
        Sk[:, 0] = np.maximum(Sk[:, 0], np.linalg.norm(Sk[:, 1:], axis=1) / o.cone_start + o.cone_margin)
        S.append(Sk)
    nbar = B.size + nC  # (each cone counts once: X o S = kappa e, e = (1, 0, ...))
    status = 1
    local_next = 0  # the local phase is tried again from this iteration on
    best_res, best_it = np.inf, 0  # the residual last halved, and when
    acceptable = 0  # consecutive iterates at the acceptable level
    merits: list = []  # central-path residual norms of the accepted iterates (nonmonotone search)

    def gap_mu(yy, ww, Xs, Ss):
        tot = float(np.sum(yy * ww))
        for Xk, Sk in zip(Xs, Ss):
            tot += float(np.sum(Xk * Sk))
        return tot / nbar if nbar else 0.0

    while True:
        if not (np.all(np.isfinite(F)) and np.all(np.isfinite(z))):
            status = 5
            break
        eq, comp = measures(z, F)
        res = score(z, F)
        if eq <= o.tol and comp <= o.comp_tol:
            status = 0
            break
        Xs = [c * z[C] for R, C, c in cones]
        mu = gap_mu(y, w, Xs, S)
        if local_ok and B.size and mu <= 10.0 * o.comp_tol and eq <= o.local_from and count["it"] >= local_next:
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
        prox = min(o.prox_cap, o.prox_scale * res)
        D = np.full(n, prox)
        D[B] = w / y + (prox if o.prox_bounded else 0.0)
        # bounded rows divided by 1 + D: D = w / y spans many decades near the solution (an active bound: D -> inf,
        # an inactive one: D -> 0), and the rows stay of order one; cone rows likewise by their block's size
        rs = np.ones(n)
        rs[B] = 1.0 / (1.0 + D[B])
        nt = [_nt_scaling(Xk, Sk) for Xk, Sk in zip(Xs, S)]
        cblocks = []
        for (R, C, c), (_W, _Wi, W2i, _lam) in zip(cones, nt):
            vals = W2i * c[:, None, :]
            cblocks.append(vals)
            rs[R] = 1.0 / (1.0 + np.max(np.abs(vals), axis=2))
        H = _scale_rows(_add_cones(_add_diag(J, D), cones, cblocks), rs)
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

        def cone_dirs(d, ts):
            """(dX, dS) of every cone for the direction d and the scaled complementarity right-hand sides ts."""
            dXs, dSs = [], []
            for (R, C, c), (_W, Wi, W2i, _lam), t in zip(cones, nt, ts):
                dX = c * d[C]
                dXs.append(dX)
                dSs.append(np.einsum("nij,nj->ni", Wi, t) - np.einsum("nij,nj->ni", W2i, dX))
            return dXs, dSs

        def step_to_boundary(dy_, dw_, dXs, dSs, frac_):
            a_ = min(_max_step(y, dy_, frac_), _max_step(w, dw_, frac_))
            for Xk, Sk, dX, dS in zip(Xs, S, dXs, dSs):
                a_ = min(a_, _cone_step(Xk, dX, frac_), _cone_step(Sk, dS, frac_))
            if cones and o.cone_center > 0.0:
                for _ in range(40):  # (shorter until every cone pair is centred enough)
                    if all(_centred(Xk + a_ * dX, Sk + a_ * dS, o.cone_center)
                           for Xk, Sk, dX, dS in zip(Xs, S, dXs, dSs)):
                        break
                    a_ *= 0.5
            return a_

        dyA = dz[B]
        dwA = -w - (w / y) * dyA
        dXA, dSA = cone_dirs(dz, [-lam for (_W, _Wi, _W2i, lam) in nt])
        a_aff = step_to_boundary(dyA, dwA, dXA, dSA, 1.0)
        mu_aff = gap_mu(y + a_aff * dyA, w + a_aff * dwA, [X + a_aff * d for X, d in zip(Xs, dXA)],
                        [Sk + a_aff * d for Sk, d in zip(S, dSA)])
        sigma = max(o.sigma_min, min(1.0, (mu_aff / mu) ** 3)) if mu > 0 else 0.0
        kappa = max(sigma * mu, 0.1 * o.comp_tol)  # (not below: the products need not be smaller than comp_tol)

        # each cone's target: kappa, and at least cone_floor |X| |S|
        kap_c = [np.maximum(kappa, o.cone_floor * np.linalg.norm(Xk, axis=1) * np.linalg.norm(Sk, axis=1))
                 for Xk, Sk in zip(Xs, S)]

        def cone_rhs(kap, corr):
            """Per cone: t = lam^-1 o (kap e - lam o lam - corr) and the rows' right-hand side S - G + W^-1 t."""
            ts, rows = [], []
            for (R, C, c), (W, Wi, _W2i, lam), Sk, cr, kc in zip(cones, nt, S, corr, kap_c):
                r = -_jordan(lam, lam)
                r[:, 0] += kc if kap > 0.0 else 0.0
                if cr is not None:
                    r -= cr
                t = _jordan_solve(lam, r)
                ts.append(t)
                rows.append(Sk - F[R] + np.einsum("nij,nj->ni", Wi, t))
            return ts, rows

        c_or = dyA * dwA
        c_cone = [_jordan(np.einsum("nij,nj->ni", Wi, dX), np.einsum("nij,nj->ni", W, dS))
                  for (W, Wi, _W2i, _lam), dX, dS in zip(nt, dXA, dSA)]
        rc = -F.copy()
        rc[B] += (kappa - c_or) / y
        ts, crow = cone_rhs(kappa, c_cone)
        for (R, _C, _c), v in zip(cones, crow):
            rc[R] = v
        dz2 = solver(rc * rs)
        if dz2 is not None and np.all(np.isfinite(dz2)):
            dz = dz2
            dy = dz[B]
            dw = (kappa - c_or) / y - w - (w / y) * dy
            dXs, dSs = cone_dirs(dz, ts)
        else:  # (the predictor direction alone)
            dy, dw, kappa, dXs, dSs = dyA, dwA, 0.0, dXA, dSA
        frac = min(max(o.boundary, 1.0 - mu), 1.0 - 1e-10)  # (y, w stay > 0 in floating point too)
        a = step_to_boundary(dy, dw, dXs, dSs, frac)

        def path_norm(Fz, zz, yz, wz, Sz):
            rF = Fz.copy()
            rF[B] -= wz
            tot = float(rF[free] @ rF[free] + rF[B] @ rF[B] + np.sum((yz * wz - kappa) ** 2))
            for (R, C, c), Sk, kc in zip(cones, Sz, kap_c):
                rS = Fz[R] - Sk
                XS = _jordan(c * zz[C], Sk)
                XS[:, 0] -= kc if kappa > 0.0 else 0.0
                tot += float(np.sum(rS * rS) + np.sum(XS * XS))
            return float(np.sqrt(tot))

        r0 = path_norm(F, z, y, w, S)
        ref = max([r0] + merits[-o.nonmonotone:])
        newton = False
        for trial in range(o.max_backtracks + 1):
            zt = z + a * dz
            yt, wt = y + a * dy, w + a * dw
            St = [Sk + a * d for Sk, d in zip(S, dSs)]
            Ft = value(zt)
            count["nfev"] += 1
            rt = path_norm(Ft, zt, yt, wt, St) if np.all(np.isfinite(Ft)) else np.inf
            if rt <= (1.0 - 1e-4 * a) * ref:
                break
            a *= 0.5
            if trial == 1 and not newton and kappa > 0.0:
                # the corrector's second-order term can make the direction ascend the merit: the plain Newton
                # direction of the central-path equations for this kappa descends it (same factorisation)
                rn = -F.copy()
                rn[B] += kappa / y
                tn, crn = cone_rhs(kappa, [None] * len(cones))
                for (R, _C, _c), v in zip(cones, crn):
                    rn[R] = v
                dzn = solver(rn * rs)
                if dzn is not None and np.all(np.isfinite(dzn)):
                    newton = True
                    dz, dy = dzn, dzn[B]
                    dw = kappa / y - w - (w / y) * dy
                    dXs, dSs = cone_dirs(dz, tn)
                    a = step_to_boundary(dy, dw, dXs, dSs, frac)
        merits.append(rt)
        # (with no decrease the shortest step is still taken: the barrier keeps it interior)
        z, y, w, S = zt, yt, np.maximum(wt, 1e-300), St
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
