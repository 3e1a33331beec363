"""Mixed complementarity solver: semismooth Newton on the (penalised) Fischer-Burmeister reformulation.

Problem (MCP with lower bounds): find z with, for every index i,
  - free i (lower[i] = -inf):      F_i(z) = 0
  - bounded i (lower[i] finite):  z_i - l_i >= 0,  F_i(z) >= 0,  (z_i - l_i) F_i(z) = 0.

Each bounded pair is replaced by phi(a, b) = lam*(sqrt(a^2+b^2) - a - b) - (1-lam)*max(a,0)*max(b,0)
(Chen-Chen-Kanzow; lam = 1 is plain Fischer-Burmeister), giving a semismooth system Phi(z) = 0 whose
merit psi = 0.5*|Phi|^2 is continuously differentiable.  Newton steps use an element of the
generalised Jacobian; when the Newton direction does not exist or is not a good descent direction the
step falls back to a Levenberg-Marquardt step (which also converges on non-isolated solutions, e.g. a
friction multiplier that is free while the normal impulse is zero).  Nonmonotone Armijo backtracking on psi
(reference: the largest of the last 5 merits); on stagnation the solver restarts from a perturbed point with
stronger regularisation.  Optional: a proximal term on marked unknowns (multipliers that may be non-unique,
see _newton), and block elimination of a Jacobian given as element blocks (core.contact.elements).  An attempt
that stalls ends early (NewtonOptions.stall close to a solution, stall_far farther from it), and one that meets the
equations but not the caller's further residual ends at once, without polish or restart (extra_stall,
EXTRA_STALLED).  Every limit of the method is a field of NewtonOptions, with what it was measured to do.

Stopping: the scaled natural residual max_i |nat_i(z)| / (1 + max|z|) <= tol, with
nat_i = F_i for free i and min(z_i - l_i, F_i) for bounded i (the normalisation PATH reports).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .elements import ACCEPT, ElementMatrix
from .kernels import fb_reformulate, natural_parts

__all__ = ["MCPResult", "NewtonOptions", "solve_mcp", "natural_residual", "fb_function", "EXTRA_STALLED",
           "NEAR_STALLED"]

_SQRT_HALF = np.sqrt(0.5)


@dataclass(frozen=True)
class MCPResult:
    """Outcome of one MCP solve (a result, never an exception)."""

    z: np.ndarray  # final iterate (the solution when converged)
    converged: bool  # scaled natural residual <= tol
    iterations: int  # Newton iterations over all attempts
    residual: float  # scaled natural residual at z
    reason: str  # "converged" or why it stopped
    restarts: int = 0  # number of perturbed restarts used
    nfev: int = 0  # evaluations of F (with or without the Jacobian)
    njev: int = 0  # ... of those with the Jacobian
    history: tuple = ()  # scaled natural residual at every iterate, in order (all attempts)

    @property
    def status(self) -> int:
        """0 converged, 1 iteration limit, 2 line search failed, 3 stalled, 4 evaluation failed or not finite."""
        for code, word in ((0, "converged"), (1, "iteration limit"), (2, "line search"), (3, "stalled")):
            if self.reason.startswith(word):
                return code
        return 4


@dataclass(frozen=True)
class NewtonOptions:
    """Every limit of the semismooth Newton solver (solve_mcp) apart from the caller's tolerance and iteration count,
    each with what it was measured to do (measured on the contact bench's piles and on saved hard steps; more in
    docs/notes/contact-solver.md).  Pass one to solve_mcp(options=...) or core.contact.stepper.step(newton=...)."""

    # A run close to a solution (best scaled natural residual <= stall_below) that has not halved its best residual
    # in `stall` iterations ends ("stalled"): the active-set polish and the restart then start at once.  Pile steps
    # stall like this for a hundred iterations and more.  Saved pile steps: 27 spheres 12.5 s with 30, 11.5 s with
    # 12, 10.8 s with 16; 8 spheres 4.8, 4.4, 4.3 s; explicit 8 spheres 49.0 s and 47.8 s (16)
    stall: int = 16
    stall_below: float = 1e-6
    # Farther from a solution the window is stall_far: the failed runs of 87 saved hard steps (4,266 runs) spent
    # 3,419 of their iterations after a window of 30, and 2 runs that converged would have been ended (windows of
    # 20 and 10: 9 and 35 runs).  27-sphere piles at mu 0.8, seeds 1-14: 13 runs complete against 12 without
    stall_far: int = 30
    stall_gain: float = 0.5  # "not halved": the best residual above this times the one a window earlier
    # A run whose iterates meet the natural residual but not the caller's further residual (extra) and do not halve
    # it in extra_stall iterations ends at once (EXTRA_STALLED), without polish or restart: on a 27-sphere pile at
    # mu 0.8 a jammed chain kept its overlap at 1.0e-9 m in every attempt for over 100 iterations, its halves
    # converged in 4 and 5
    extra_stall: int = 5
    # The proximal term's weight e = min(prox_cap, theta prox_scale |Phi|) on the marked unknowns (_newton).  Saved
    # 27-sphere steps: a scale of 1.0 took a third more iterations, 0.03 and less gave steps of hundreds; no floor
    # (even 1e-8 slowed settled pile steps down to a linear rate)
    prox_scale: float = 0.1
    prox_cap: float = 0.1
    # theta, the weight's adaptive factor: x theta_up after an accepted step shorter than theta_cut (the direction
    # overshot), / theta_up after a longer one, within [1, theta_max].  27-sphere piles, seeds 1-40 at mu 0.4 and
    # 0.8: 78 of the 80 runs complete against 72 without it (theta_up = 1), -13 % Newton iterations at mu 0.8
    theta_up: float = 10.0
    theta_cut: float = 0.25
    theta_max: float = 1e6
    # ... and x theta_up too after a step that turns back in the marked unknowns: its part in them at an angle of
    # more than acos(-zigzag_cos) to the last step's part, and at least zigzag_amp times as long (an oscillation,
    # not a converging sequence of shrinking steps).  Traced on a 27-sphere step at mu 0.8 whose attempts stalled
    # at 1e-3: two loaded sphere pairs at the rim of their friction discs traded their normal impulses back and
    # forth (pn 0.12 and 0.05, then 0.08 and 0.08, ...; the sum fixed: statically indeterminate) at every full step
    # the nonmonotone search accepted, with theta at 1.  One step from each of 1,600 saved 27-sphere states (seeds
    # 1-8, every step of 100, at mu 0.4 and 0.8; 14,900 and 24,986 Newton iterations without the rule): 14,618
    # (-1.9 %) and 22,351 (-10.5 %); cos 0.3 with amp 0.5 the same (-1.8 %, -10.6 %); without the amplitude test,
    # cos 0.5 +2.7 % and -10.2 %, cos 0.8 -0.6 % and -4.1 %, any turn back (cos 0) +28 % at mu 0.4.  The theta
    # grown by the gain ratio instead (a full step that raised the merit): +17 % at mu 0.4.  Runs of the README's
    # draws: forty seeds -1.1 % and -8.6 %, ten seeds +16 % and +13 % (fifty together +2.0 % and -4.7 %); the ten-seed
    # draw's jammed step at mu 0.8, which the explicit method took, converges whole (277 iterations).  zigzag_cos = 1
    # turns it off
    zigzag_cos: float = 0.5
    zigzag_amp: float = 0.5
    # Where the Newton direction is missing or not a good descent direction (near a pile step's solution it is long
    # along nearly singular directions of H: |d| of 1e2-1e4 at a residual of 1e-8, every iteration) the step is the
    # Levenberg-Marquardt one, (H^T H + nu I) d = -H^T Phi, nu = lm_mu |Phi|.  lm_mu adapts to the step's gain
    # ratio r (the merit's actual decrease over the decrease its linear model predicts; Fan 2003, Fan and Pan 2006):
    # / lm_adapt after a full step with r > lm_gain_good, x lm_adapt after a shortened step or r < lm_gain_poor,
    # within [lm_mu_min, lm_mu_max].  With lm_mu fixed at 1 such runs crawled at a rate of about 0.9 per iteration
    # (a singular value s of H with s^2 ~ 0.1 nu keeps 90 % of its error).  27-sphere piles, seeds 1-24, 100 steps:
    # at mu 0.4, 47,872 Newton iterations against 54,038 (geometric mean of the per-run ratios 0.935), at mu 0.8 24
    # runs complete against 22, with 11 % more iterations on the runs that completed both ways (geometric mean of
    # the per-run ratios 1.03, from 0.39 to 2.03); mixed piles (seeds 1-6) 12,451 against 15,537; the cube scenes
    # and the 8-sphere pile the same or fewer.  The bench's forty seeds of its earlier README table (master seed
    # 2082669808): -7 % at mu 0.4, 39 runs complete against 38 at mu 0.8 and -12 % on the 38.  An upper bound of 1
    # (never more damping than the fixed rule): the same at mu 0.4, 23 runs complete at mu 0.8
    lm_adapt: float = 4.0
    lm_gain_poor: float = 0.25
    lm_gain_good: float = 0.75
    lm_mu_min: float = 1e-8
    lm_mu_max: float = 1e4
    # Nonmonotone line search (Grippo, Lampariello and Lucidi 1986): Armijo's condition against the largest of the
    # last `nonmonotone` merits.  With the monotone search the 27-sphere pile's steps crawled along LM steps and
    # stalled; monotone only once a run's best residual is below 1e-6 (27-sphere piles, seeds 1-8, mu 0.4): +41 %
    # Newton iterations
    nonmonotone: int = 5
    # A failed run whose best residual is at most polish_from gets at most polish_iter Gauss-Newton iterations on
    # the active set its best point identifies (_active_set_polish).  Without it (27-sphere piles, seeds 1-24 at
    # mu 0.4 and 0.8) 42 of 48 runs complete against 46; with the explicit method's step behind the halving (seeds
    # 1-8) every run completes either way, and without it they take 8 % and 10.5 % more Newton iterations
    polish_from: float = 1e-5
    polish_iter: int = 12
    # ... and ends when its best residual has not fallen below stall_gain times the one polish_stall iterations
    # earlier (the polish is Gauss-Newton on a smooth system: right active set, fast convergence; wrong one, a flat
    # or rising residual).  On 27-sphere piles (mu 0.4 seeds 1-3, mu 0.8 seeds 1-4) and mixed piles (seeds 1-3) it
    # was called 239 times and converged 12 times, 11 of them within 5 iterations; the failed polishes were 17 % of
    # the CPU time.  Replayed on their residual histories, a window of 3 keeps 11 of the 12 (the other took 9
    # iterations, its residual at 1.0e-10 for 6) with 31 % of the polish iterations; 0 (none) keeps the 12 iterations
    polish_stall: int = 3


_DEFAULT = NewtonOptions()


def natural_residual(z: np.ndarray, F: np.ndarray, lower: np.ndarray,
                     extra: Callable[[np.ndarray, np.ndarray], float] | None = None) -> float:
    """Scaled natural residual max|nat(z)| / (1 + max|z|) of an MCP with lower bounds.

    extra(z, F), when given, is a further residual of the caller's (in the same units: <= tol when met), and the
    larger of the two is returned: a contact step bounds there how deep its bodies may overlap, in metres, which
    the scaled residual admits at 1e-10 (1 + max|z|) per closest-point row whatever max|z| is (a spin rate)."""
    z = np.ascontiguousarray(z, dtype=float)
    if z.size == 0:
        return 0.0
    nat_max, z_max = natural_parts(z, np.ascontiguousarray(F, dtype=float), np.ascontiguousarray(lower, dtype=float))
    res = float(nat_max / (1.0 + z_max))
    return res if extra is None else max(res, float(extra(z, F)))


def fb_function(a: np.ndarray, b: np.ndarray, lam: float = 1.0, eps: float = 0.0
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Penalised (and, for eps > 0, smoothed) Fischer-Burmeister value and one element (da, db) of its gradient."""
    rho = np.sqrt(a * a + b * b + 2.0 * eps * eps)
    small = rho < 1e-300
    rs = np.where(small, 1.0, rho)
    phi = lam * (rho - a - b)
    # at the kink (0, 0) any (xi - 1, eta - 1) with xi^2 + eta^2 <= 1 is a generalised gradient; take the diagonal
    da = lam * (np.where(small, _SQRT_HALF, a / rs) - 1.0)
    db = lam * (np.where(small, _SQRT_HALF, b / rs) - 1.0)
    if lam < 1.0:
        ap = np.maximum(a, 0.0)
        bp = np.maximum(b, 0.0)
        phi = phi - (1.0 - lam) * ap * bp
        da = da - (1.0 - lam) * (a > 0) * bp
        db = db - (1.0 - lam) * (b > 0) * ap
    return phi, da, db


def _fb_parts(z, F, lower, bounded, lam, eps, weights):
    """Phi(z), dA = d Phi / d z from the 'a' argument (diagonal) and dB (scales row i of J): fb_function on the
    bounded indices (a = z - lower, b = F), weights times F on the free ones (kernels.fb_reformulate, compiled)."""
    F = np.ascontiguousarray(F, dtype=float)
    w = np.full(F.shape, weights) if np.ndim(weights) == 0 else np.ascontiguousarray(weights, dtype=float)
    return fb_reformulate(np.ascontiguousarray(z, dtype=float), F, np.ascontiguousarray(lower, dtype=float),
                          np.ascontiguousarray(bounded, dtype=bool), float(lam), float(eps), w)


def _reformulate(z, F, J, lower, bounded, lam, eps=0.0, weights=1.0):
    """Phi(z), its generalised Jacobian H = Da + Db J (rows of free indices are J's rows times their weights), and
    the diagonal Db."""
    Phi, dA, dB = _fb_parts(z, F, lower, bounded, lam, eps, weights)
    if isinstance(J, ElementMatrix):
        H = J.scale_rows(dB).add_diagonal(dA)
    elif sp.issparse(J):
        J = J.tocsc()
        H = sp.csc_matrix((J.data * dB[J.indices], J.indices, J.indptr), shape=J.shape)  # rows scaled by Db
        H = _add_diagonal(H, dA)
    else:
        H = dB[:, None] * J
        H[np.diag_indices_from(H)] += dA
    return Phi, H, dB


def _add_diagonal(H, v):
    """H + diag(v) for a CSC matrix H (in place on a copy of the values when H stores its whole diagonal, which the
    Jacobian of an MCP that pairs each row with its unknown usually does); an ElementMatrix adds it to its diagonal."""
    if isinstance(H, ElementMatrix):
        return H.add_diagonal(v)
    n = H.shape[0]
    cols = np.repeat(np.arange(n), np.diff(H.indptr))
    on = np.flatnonzero(H.indices == cols)
    if on.size != n or np.any(cols[on] != np.arange(n)):
        return (H + sp.diags(v)).tocsc()
    data = H.data.copy()
    data[on] += v
    return sp.csc_matrix((data, H.indices, H.indptr), shape=H.shape)


def _phi_value(z, F, lower, bounded, lam, eps=0.0, weights=1.0):
    """Phi(z) only (for the line search)."""
    return _fb_parts(z, F, lower, bounded, lam, eps, weights)[0]


def _sparse(H):
    """H as a scipy.sparse matrix when it is sparse or an ElementMatrix, else H (dense)."""
    return H.tocsc() if isinstance(H, ElementMatrix) else H


def _tmul(H, v):
    """H^T v."""
    return H.rmatvec(v) if isinstance(H, ElementMatrix) else H.T @ v


def _solve_linear(H, rhs, condense=False):
    """Newton direction H d = rhs, or None when H is (numerically) singular.

    condense: an ElementMatrix H is solved by eliminating its elements' own unknowns (ElementMatrix.solve); None
    when that fails (the caller then takes a Levenberg-Marquardt step)."""
    if condense and isinstance(H, ElementMatrix):
        # no sparse LU of the whole when the elimination fails: an own-own block was singular or the solve stayed
        # inaccurate after refinement, and H was then (nearly) singular too.  Measured on mixed piles (80 steps,
        # seeds 1-4): the sparse LU's directions took 7,761 Newton iterations and 25.2 CPU-s, the caller's LM step in
        # their place 5,006 and 16.8 s (each LU 9-13 ms; 11 of 20 captured ones had relative residuals above 1e-8)
        return H.solve(rhs)
    try:
        if isinstance(H, ElementMatrix) or sp.issparse(H):
            d = spla.splu(H.tocsc()).solve(rhs)
        else:
            d = np.linalg.solve(H, rhs)
    except (np.linalg.LinAlgError, RuntimeError, ValueError):
        return None
    if not np.all(np.isfinite(d)):
        return None
    # a nearly singular H gives a direction dominated by rounding (e.g. a contact point free along a flat
    # face of a separated pair): let the caller take the minimum-norm LM step instead
    with np.errstate(over="ignore"):  # (a huge d: an overflowing norm is inf, and d is refused)
        if np.linalg.norm(H @ d - rhs) > ACCEPT * (1.0 + np.linalg.norm(rhs)):
            return None
    return d


def _lm_direction(H, Phi, nu):
    """Levenberg-Marquardt direction (H^T H + nu I) d = -H^T Phi (for an ElementMatrix H by eliminating the
    elements of its augmented system, ElementMatrix.lm_solve, with the normal equations as the fallback)."""
    if isinstance(H, ElementMatrix):
        d = H.lm_solve(nu, Phi)
        if d is not None:
            return d
    H = _sparse(H)
    g = H.T @ Phi
    if sp.issparse(H):
        A = (H.T @ H + nu * sp.identity(H.shape[1], format="csc")).tocsc()
        try:
            d = spla.splu(A).solve(-g)
        except RuntimeError:
            return -g
    else:
        A = H.T @ H
        A[np.diag_indices_from(A)] += nu
        try:
            d = np.linalg.solve(A, -g)
        except np.linalg.LinAlgError:
            return -g
    return d if np.all(np.isfinite(d)) else -g


def solve_mcp(
    fun: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
    z0: np.ndarray,
    lower: np.ndarray,
    *,
    tol: float = 1e-10,
    max_iter: int = 60,
    lam: float = 1.0,
    max_restarts: int = 3,
    rng_seed: int = 0,
    fun_value: Callable[[np.ndarray], np.ndarray] | None = None,
    prox: np.ndarray | None = None,
    condense: bool = False,
    polish: bool = True,
    feasible: np.ndarray | None = None,
    weights: np.ndarray | None = None,
    extra: Callable[[np.ndarray, np.ndarray], float] | None = None,
    project: Callable[[np.ndarray], np.ndarray] | None = None,
    near: float | None = None,
    options: NewtonOptions | None = None,
) -> MCPResult:
    """Solve the MCP {F(z) = 0 on free indices, 0 <= z - l perp F(z) >= 0 on bounded ones}; fun(z) -> (F, J).

    fun_value(z) -> F, when given, is used at the line search's shortened trial points (where the Jacobian is not
    needed); it must return the same F as fun.

    prox, when given, weighs the unknowns whose Newton equations get a proximal term (see _newton; 0: none, 1 for
    unknowns in the units of their rows): the multipliers of a problem whose solutions may be non-unique in them
    (contact impulses of a pile; a contact step weighs the multipliers of its closest points, whose rows are
    lengths, by h).

    condense: when fun's Jacobian is an ElementMatrix (core.contact.elements), the Newton equations are solved by
    eliminating its elements' own unknowns (a Levenberg-Marquardt step where that fails).

    polish=False leaves out the active-set polish of a stalled attempt (for a few more iterations from a point that
    already meets a looser tolerance, where the polish could only repeat what Newton did).

    feasible, when given, marks bounded unknowns whose iterates are kept on their bounds (projected semismooth Newton:
    every trial point of the line search is projected, z_i <- max(z_i, l_i)).  For problems whose F has spurious
    near-solutions outside the bounds: a contact step's sliding-speed multiplier below zero turns friction around
    (it then drives the slip), and Newton iterates of a pile settled there, on a local minimum of the merit function
    (34 hard saved pile steps: one attempt converged on 11 with the sliding multipliers projected, on none
    without).  Off by default: on small degenerate NCPs the projected path can be longer (Kojima-Shindo from 0: 42
    iterations, not 28).

    weights, when given, are positive weights of the free equations in the reformulation (Phi_i = w_i F_i): they set
    the merit function 0.5 |Phi|^2 that the line search decreases and the least-squares (LM) steps minimise, and
    leave the solutions, the Newton directions and the stopping test (unweighted) as they are.  For equations in
    different units: a contact step weights its bodies' angular-velocity rows by their radius of gyration (velocity
    units like the other rows; unweighted, the spins of light spheres dominated the merit).

    extra(z, F), when given, is a further residual that the stopping test takes with the scaled natural residual
    (natural_residual: the larger of the two must be <= tol).

    near, when given: a run that fails with its best residual at most near (after the active-set polish) ends the
    solve without restart, with the reason NEAR_STALLED (a restart comes back to the same floor; the caller decides).

    project(z) -> z, when given, maps the start of every Newton attempt and every trial point of its line search to
    another point before F is evaluated there: nonlinear elimination of unknowns that have a unique solution given
    the others (a contact step's closest points at the end-of-step poses).  The line search then decreases the merit
    of the projected points, the merit of the reduced system.

    options: the solver's limits (NewtonOptions; its defaults when None)."""
    opts = options or _DEFAULT
    # (writable copies: a read-only array would be another signature of the compiled kernels, loaded on first use)
    lower = np.array(lower, dtype=float)
    bounded = np.isfinite(lower)
    lower0 = np.where(bounded, lower, 0.0)
    proj = None if feasible is None else np.asarray(feasible, bool) & bounded
    wts = 1.0 if weights is None else np.array(weights, dtype=float)
    z = np.array(z0, dtype=float)
    if proj is not None:
        z = np.where(proj, np.maximum(z, lower0), z)
    n = z.size
    if n == 0:
        return MCPResult(z, True, 0, 0.0, "converged")
    rng = None  # the restarts' perturbations (created when first needed)
    total_iter = 0
    best = [np.inf, z.copy(), []]  # residual and point of the best iterate seen (returned on failure), history
    reason = "iteration limit"
    count = [0, 0]  # evaluations of F, of F with J
    fun_j, fun = fun, lambda x: (count.__setitem__(slice(0, 2), [count[0] + 1, count[1] + 1]), fun_j(x))[1]
    if fun_value is not None:
        fun_v, fun_value = fun_value, lambda x: (count.__setitem__(0, count[0] + 1), fun_v(x))[1]
    for restart in range(max_restarts + 1):
        # attempt 0: plain semismooth Newton from z0; later attempts: smoothing continuation (eps -> 0), which
        # leaves the kinks of the FB function and so escapes most non-solution minima of the merit function
        if restart == 0:
            zs, eps0 = z, 0.0
        elif restart == 1:
            zs, eps0 = np.array(z0, dtype=float), 1e-2
        else:
            rng = rng or np.random.default_rng(rng_seed)
            zs = best[1] + 1e-3 * restart * (1.0 + np.abs(best[1])) * rng.standard_normal(n)
            eps0 = 10.0 ** (restart - 3)
        zs = np.where(bounded, np.maximum(zs, lower0), zs) if restart else zs
        ok, zf, it, why = _newton(fun, zs, lower, lower0, bounded, lam, eps0, max_iter, tol, best, fun_value, prox,
                                  condense, proj, wts, extra, project, opts)
        total_iter += it
        if why == EXTRA_STALLED:
            reason = why  # (neither the polish nor a restart changes what keeps extra above tol: the caller decides)
            break
        if not ok and polish and best[0] <= opts.polish_from:
            # close but stalled (degenerate or non-unique solutions): Gauss-Newton on the identified active set
            ok, zf, it = _active_set_polish(fun, best[1], lower, lower0, bounded, tol, best, extra, opts.polish_iter,
                                            fun_value, opts.polish_stall, opts.stall_gain)
            total_iter += it
        if ok:
            # project onto the bounds: moves bounded entries by at most tol (no tiny negative multipliers out)
            zf = np.where(bounded, np.maximum(zf, lower0), zf)
            return MCPResult(zf, True, total_iter, best[0], "converged", restart, count[0], count[1], tuple(best[2]))
        reason = why
        if near is not None and best[0] <= near:
            reason = NEAR_STALLED  # (a restart would come back to the same floor: the caller decides)
            break
    return MCPResult(best[1], False, total_iter, float(best[0]), reason, restart, count[0], count[1],
                     tuple(best[2]))


def _newton(fun, z, lower, lower0, bounded, lam, eps, max_iter, tol, best, fun_value=None, prox=None,
            condense=False, proj=None, weights=1.0, extra=None, project=None, opts=_DEFAULT):
    """One attempt of (smoothed) semismooth Newton with Armijo search; updates best in place.

    With prox, the direction solves (H + e Db P) d = -Phi, P = diag(prox), e = min(prox_cap, theta prox_scale |Phi|):
    the Newton equation of F_i(z) + e (z_i - z_i^k) for the marked i, a proximal-point term that vanishes at the current
    iterate z^k (Phi is unchanged, so are the solutions and the stopping test).  Where the marked unknowns are not
    unique at a solution (statically indeterminate contact impulses) H is singular along that continuum and the
    plain Newton direction is dominated by it; the proximal term removes the singularity, and because e shrinks
    with the residual the fast local convergence is kept.  theta adapts the weight to how well the regularised
    Newton model predicted the last step, as the damping of a Levenberg-Marquardt method: it grows theta_up-fold
    after an iteration whose accepted step was shorter than theta_cut (the direction overshot: a nearly singular H)
    or turned back in the marked unknowns (an oscillation along the continuum: _turns_back), and falls as much, to 1
    at least, after one that did neither (at most theta_max; e stays below prox_cap; the fields of NewtonOptions)."""
    rho_descent, p_descent = 1e-10, 2.1
    theta = 1.0  # the proximal weight's adaptive factor
    lm_mu = 1.0  # the LM step's adaptive damping factor
    if project is not None:
        z = project(z)
    try:
        F, J = fun(z)
    except (FloatingPointError, ValueError, np.linalg.LinAlgError) as exc:
        return False, z, 0, f"function evaluation failed ({exc})"
    if not np.all(np.isfinite(F)):
        return False, z, 0, "function not finite at the starting point"
    merits: list[float] = []  # merit of the last iterates: the Armijo reference is their maximum (nonmonotone)
    best_at = [np.inf] * (max_iter + 1)  # best residual of this attempt after each iteration
    met = 0  # consecutive iterates that meet the natural residual but not extra
    marked = None if prox is None else prox > 0.0  # the proximal term's unknowns
    last_marked = None  # the last accepted step's part in them (the zigzag test)
    short = False  # the last accepted step was shortened: the next full step is tried without its Jacobian first
    for it in range(max_iter + 1):
        nat = natural_residual(z, F, lower)
        res = nat if extra is None else max(nat, float(extra(z, F)))
        if len(best) > 2:  # (the history, when the caller keeps one)
            best[2].append(res)
        if res < best[0]:
            best[0], best[1] = res, z.copy()
        if res <= tol:
            return True, z, it, "converged"
        if it == max_iter:
            break
        best_at[it] = min(res, best_at[it - 1]) if it else res
        met = met + 1 if nat <= tol else 0
        if met > opts.extra_stall and _not_falling(best_at, it, opts.extra_stall, opts.stall_gain):
            return False, z, it, EXTRA_STALLED
        if opts.stall and best_at[it] <= opts.stall_below and _not_falling(best_at, it, opts.stall, opts.stall_gain):
            return False, z, it, "stalled"
        if opts.stall_far and _not_falling(best_at, it, opts.stall_far, opts.stall_gain):
            return False, z, it, "stalled"
        Phi, H, dB = _reformulate(z, F, J, lower0, bounded, lam, eps, weights)
        if eps > 0.0 and np.max(np.abs(Phi)) <= 10.0 * eps:
            eps = 0.0 if eps < 1e-13 else 0.1 * eps  # continuation: tighten the smoothing
            Phi, H, dB = _reformulate(z, F, J, lower0, bounded, lam, eps, weights)
        psi = 0.5 * float(Phi @ Phi)
        merits.append(psi)
        psi_ref = max(merits[-opts.nonmonotone:])
        grad = _tmul(H, Phi)
        if prox is not None:
            reg = min(opts.prox_cap, theta * opts.prox_scale * np.sqrt(2.0 * psi)) * dB * prox
            Hp = H + np.diag(reg) if isinstance(H, np.ndarray) else _add_diagonal(H, reg)
        else:
            Hp = H
        d = _solve_linear(Hp, -Phi, condense)
        with np.errstate(over="ignore"):  # (a huge d: |d| overflows to inf and the LM step is taken)
            gd = float(grad @ d) if d is not None else 0.0
            poor = d is None or gd > -rho_descent * float(np.linalg.norm(d)) ** p_descent
        t, zt = 0.0, None
        if not poor:
            t, zt, Ft, Jt, psit = _armijo(fun, z, d, psi_ref, gd, lower0, bounded, lam, eps, fun_value, proj, weights,
                                          project=project, value_first=short)
        lm_step = False
        if zt is None:
            # Newton direction missing, not a good descent direction (near a solution: long along the nearly
            # singular directions of H), or without decrease along it: LM step, damped by lm_mu times the residual
            # size (a Newton direction's failed line search was measured: 27-sphere piles of the forty-seed bench
            # whose run stopped there (three): one of them completes with the LM step; one step from each of 2,400
            # saved states: 27 iterations more)
            d = _lm_direction(H, Phi, lm_mu * min(1e-2, np.sqrt(2 * psi)) + 1e-14)
            gd = float(grad @ d)
            lm_step = gd < 0.0
            if not lm_step:
                d = -grad
                gd = -float(grad @ grad)
            t, zt, Ft, Jt, psit = _armijo(fun, z, d, psi_ref, gd, lower0, bounded, lam, eps, fun_value, proj, weights,
                                          project=project, value_first=short)
        short = t < 1.0
        if lm_step:
            # the gain ratio of the LM step: the merit's actual decrease over the decrease its linear model predicts
            # (Fan 2003; Fan and Pan 2006): a good full step lowers the damping, a poor or shortened one raises it
            lin = Phi + H @ d
            predicted = psi - 0.5 * float(lin @ lin)
            gain = (psi - psit) / predicted if zt is not None and predicted > 0.0 else 0.0
            if t >= 1.0 and gain > opts.lm_gain_good:
                lm_mu = max(lm_mu / opts.lm_adapt, opts.lm_mu_min)
            elif t < 1.0 or gain < opts.lm_gain_poor:
                lm_mu = min(lm_mu * opts.lm_adapt, opts.lm_mu_max)
        if zt is None:
            return False, z, it + 1, "line search failed"
        if prox is not None:
            step_marked = (zt - z)[marked]
            back = last_marked is not None and _turns_back(step_marked, last_marked, opts)
            last_marked = step_marked
            theta = (min(theta * opts.theta_up, opts.theta_max) if t < opts.theta_cut or back
                     else max(theta / opts.theta_up, 1.0))
        z, F, J = zt, Ft, Jt
    return False, z, max_iter, "iteration limit"


def _turns_back(step: np.ndarray, last: np.ndarray, opts: NewtonOptions) -> bool:
    """The zigzag test of the proximal weight (NewtonOptions.zigzag_cos): step turns back against last by more than
    acos(-zigzag_cos), with at least zigzag_amp times its length."""
    a, b = float(np.linalg.norm(step)), float(np.linalg.norm(last))
    return a > opts.zigzag_amp * b and float(step @ last) < -opts.zigzag_cos * a * b


def _not_falling(best_at, it: int, window: int, gain: float) -> bool:
    """The stall test of a run (Newton's and the polish's): best_at[k] is its best residual after k iterations; True
    when the one after `it` is above gain times the one `window` iterations earlier."""
    return it >= window and best_at[it] > gain * best_at[it - window]


EXTRA_STALLED = "stalled on the further residual (the natural residual met)"
NEAR_STALLED = "stalled near the tolerance"


def _max_col_norm2(H):
    """Largest squared column norm of H (scale of H^T H for the LM damping)."""
    H = _sparse(H)
    if sp.issparse(H):
        return float(np.max(np.asarray(H.multiply(H).sum(axis=0)))) if H.shape[1] else 1.0
    return float(np.max(np.sum(H * H, axis=0))) if H.size else 1.0


def _armijo(fun, z, d, psi, gd, lower0, bounded, lam, eps, fun_value=None, proj=None, weights=1.0, beta=0.5,
            sigma=1e-4, project=None, value_first=False):
    """Backtracking on the merit 0.5 |Phi|^2 along d: (t, z + t d, F, J, merit) or (t, None, ...) on failure.

    The full step is evaluated with its Jacobian (it is usually accepted), unless value_first (after a shortened
    step, when the next one is often shortened too); shorter trials with fun_value when given, and the Jacobian is
    then computed at the accepted point only.  (The same points and values either way: fun_value returns fun's F.
    A 27-sphere pile at mu 0.8, 100 steps: 42 % of the line searches shortened the step, each after a Jacobian of
    the full step that was not used; with value_first after a shortened step, the same 12,706 Newton iterations and
    end state to the bit in 1.5-2 % less CPU time.)"""
    t = 1.0
    while t > 1e-12:
        zt = z + t * d
        if proj is not None:
            zt = np.where(proj, np.maximum(zt, lower0), zt)  # projected search (solve_mcp's feasible)
        if project is not None:
            zt = project(zt)  # (solve_mcp's project: the caller's elimination)
        value_only = fun_value is not None and (t < 1.0 or value_first)
        try:
            if value_only:
                Ft, Jt = fun_value(zt), None
            else:
                Ft, Jt = fun(zt)
        except (FloatingPointError, ValueError, np.linalg.LinAlgError):
            Ft = None
        if Ft is not None and np.isfinite(Ft).all():
            Phit = _phi_value(zt, Ft, lower0, bounded, lam, eps, weights)
            psit = 0.5 * float(Phit @ Phit)
            if psit <= psi + sigma * t * gd:
                if value_only:
                    try:
                        Ft, Jt = fun(zt)
                    except (FloatingPointError, ValueError, np.linalg.LinAlgError):
                        return t, None, None, None, np.inf
                return t, zt, Ft, Jt, psit
        t *= beta
    return t, None, None, None, np.inf


def _active_set_polish(fun, z, lower, lower0, bounded, tol, best, extra=None, max_iter=_DEFAULT.polish_iter,
                       fun_value=None, stall=_DEFAULT.polish_stall, stall_gain=_DEFAULT.stall_gain):
    """Gauss-Newton (LM-damped) on the smooth system of the active set identified at z.

    Bounded index i: at its bound when z_i - l_i <= F_i (equation z_i = l_i), else F_i = 0; a degenerate index
    (both small) gets both equations, so the system stays consistent at a degenerate solution where the FB
    reformulation is not differentiable and semismooth Newton stalls.  Free indices: F_i = 0.  The identified
    system is overdetermined but consistent at the solution; the LM step (H^T H + nu I) d = -H^T G is minimum norm
    on non-isolated solutions (non-unique impulses).  fun_value(z) -> F (as solve_mcp's) evaluates the trial points,
    where the Jacobian is not needed.  The polish ends (stalled) when its best residual has not fallen below
    stall_gain times the one `stall` iterations earlier (its start's for the first).  Returns (converged, z,
    iterations); updates best."""
    n = z.size
    best_at = [best[0]]  # the polish's best residual after each iteration (its start's first)
    value = fun_value if fun_value is not None else (lambda x: fun(x)[0])
    for it in range(max_iter):
        try:
            F, J = fun(z)
        except (FloatingPointError, ValueError, np.linalg.LinAlgError):
            return False, z, it
        a = np.where(bounded, z - lower0, 0.0)
        nat_scale = np.max(np.abs(np.where(bounded, np.minimum(a, F), F))) if n else 0.0
        delta = max(100.0 * nat_scale, 1e-13)
        at_bound = bounded & (a <= F)
        degenerate = bounded & (np.maximum(a, F) <= delta)
        eq_f = ~at_bound | degenerate  # rows F_i = 0
        eq_b = at_bound | degenerate  # rows z_i = l_i
        ib = np.flatnonzero(eq_b)
        G = np.concatenate((F[eq_f], a[ib]))
        g_norm = float(np.linalg.norm(G))
        d = None
        if isinstance(J, ElementMatrix):
            # the stacked system [J on the rows eq_f; unit rows on ib] through J's element structure: J with the
            # other rows zeroed, and the unit rows as one more damping of their unknowns (ElementMatrix.lm_solve);
            # as a plain sparse matrix its normal equations took a sparse LU, ~20 ms a step on a 27-sphere pile
            e = np.zeros(n)
            e[ib] = 1.0
            Jf = J.scale_rows(eq_f.astype(float))
            Jc = Jf.tocsc()
            col2 = np.asarray(Jc.multiply(Jc).sum(axis=0)).ravel() + e  # squared column norms of the stack
            nu = max(1e-14, min(1e-6, g_norm)) * max(1.0, float(col2.max())) * 1e-6
            d = Jf.lm_solve(nu + e, np.where(eq_f, F, 0.0), -e * a)
        if d is None:
            J = _sparse(J)
            if sp.issparse(J):
                H = sp.vstack((J.tocsr()[eq_f], sp.csr_matrix((np.ones(ib.size), (np.arange(ib.size), ib)),
                                                              shape=(ib.size, n))))
                H = H.tocsc()
            else:
                E = np.zeros((ib.size, n))
                E[np.arange(ib.size), ib] = 1.0
                H = np.vstack((J[eq_f], E))
            d = _lm_direction(H, G, max(1e-14, min(1e-6, g_norm)) * max(1.0, _max_col_norm2(H)) * 1e-6)
        z_new = z + d
        try:
            F_new = value(z_new)
        except (FloatingPointError, ValueError, np.linalg.LinAlgError):
            return False, z, it + 1
        if not np.all(np.isfinite(F_new)):
            return False, z, it + 1
        z_proj = np.where(bounded, np.maximum(z_new, lower0), z_new)
        F_proj = value(z_proj) if np.any(z_proj != z_new) else F_new
        res = natural_residual(z_proj, F_proj, lower, extra)
        if len(best) > 2:  # (the history, when the caller keeps one)
            best[2].append(res)
        if res < best[0]:
            best[0], best[1] = res, z_proj.copy()
        if res <= tol:
            return True, z_proj, it + 1
        best_at.append(min(res, best_at[-1]))
        if stall and _not_falling(best_at, it + 1, stall, stall_gain):
            return False, z, it + 1
        z = z_new
    return False, z, max_iter
