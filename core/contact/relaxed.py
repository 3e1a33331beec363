"""The explicit step's relaxed problem: a convex problem that always has a solution, the start of one of the
attempts of the explicit step that stands in for a failed implicit one (core.contact.stepper._explicit_fallback).

The geometry is the explicit method's (each pair's closest points, normal and gap from a query at the start of the
step, the lever arms fixed), and the contact law is Anitescu's convex relaxation of Coulomb friction (M. Anitescu,
"Optimization-based simulation of nonsmooth rigid multibody dynamics", Math. Program. 105, 2006; A. Tasora and M.
Anitescu, Comput. Methods Appl. Mech. Eng. 200, 2011; Project Chrono's NSC contact): the end-of-step velocities nu
minimise the kinetic metric's distance to the free motion,

    min 1/2 (nu - nu_free)^T M (nu - nu_free)
    s.t. for every pair:   gap0 / h + n . u  >=  mu |(e_t t . u, e_o o . u[, e_r n . (w_A - w_B)])|   (a cone)
         for every joint:  c(q0) / h + G0 nu = 0                          (its rows, linearised at the start)
         for every kinematic body: nu = its driven motion

with u the relative velocity of the pair's contact points and nu_free the free motion of the step (docs/contact.md,
step 1).  Its dual variables are the contact impulses, inside the friction ellipsoid, and the joints' multipliers.
It is a strictly convex quadratic programme over second-order cones, so it has exactly one solution whenever the
constraints can be met (a pile's linearised gaps can be opened), and an interior-point method finds it in a few
tens of iterations (clarabel: P. Goulart and Y. Chen, "Clarabel: an interior-point solver for conic programs with
quadratic objectives", 2024).

What it relaxes: a sliding pair's normal velocity is mu |u_t| instead of zero, so a loaded pair that slides would
end the step apart by h mu |u_t| (Anitescu's gliding: millimetres for a sphere sliding at 0.5 m/s at mu 0.8).  Its
solution is therefore not taken as a step (but last, when both methods' Newton attempts fail:
core.contact.stepper._relaxed_step): it is where the explicit step's Newton attempt starts, which then meets
the explicit method's exact rows (Coulomb's law on the linearised gap).  In a jammed 27-sphere pile at mu 0.8 whose
step neither method solved from its own start at any depth of halving, Newton from this start converges in 22-25
iterations (docs/notes/contact-solver.md).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .pair import tangent_frame

__all__ = ["relaxed_start"]

_MAX_ITER = 100  # clarabel's interior-point iterations at most (the saved hard states' piles: 9-28)
_TOL = 1e-12  # its absolute and relative duality-gap and feasibility tolerances
_SOLVED = ("Solved", "AlmostSolved")


def relaxed_start(prob, patches: dict | None = None) -> tuple[np.ndarray | None, int, str]:
    """The solution of the relaxed problem of an explicit step's problem `prob` (core.contact.stepper._StepProblem
    with method "explicit" and the Alart-Curnier form, its pairs' start geometry set), in prob's unknowns: (z or None
    when the convex solve fails, its interior-point iterations, clarabel's status).

    patches: {pair index: stepper.Patch} for pairs whose contact is a patch (a face resting on a half-space, corners
    landing on a face): the pair's cone is written at each of its points (world points of A against B's face
    through the pair's closest point a2, or of B against A's through a1: its gap there, the same normal and tangent
    frame) instead of at its one closest point, and its impulses in z are their sums.  One point cannot carry the
    moment a face's patch carries (the face would rock on it); the vertices of the face can."""
    import clarabel

    model, state, h = prob.model, prob.state, float(prob.h)
    nb = prob.nb
    e_t, e_o, e_r = (float(x) for x in model.ellipsoid)
    A = _Rows()
    cones = []
    # the kinematic bodies (no inverse mass): their driven velocities, as equalities
    kinematic = [k for k in range(nb) if not np.any(prob.Sinv[k])]
    for k in kinematic:
        for c in range(6):
            A.add({6 * k + c: 1.0}, float(prob.c_body[k, c]))
    if kinematic:
        cones.append(clarabel.ZeroConeT(6 * len(kinematic)))
    # the joints' rows linearised at the start: G0 nu = -c(q0) / h (the step's own rows are c(q+) / h = 0)
    joint_rows = []
    if prob.jstep is not None:
        plan = prob.jstep.plan
        for q, (c0, G0) in enumerate(zip(prob.jstep.c0, prob.jstep.G0)):  # (the step's start rows and gradients)
            for i in range(len(c0)):
                row = {}
                for side, k in ((0, plan.ka[q]), (1, plan.kb[q])):
                    if k >= 0:
                        for c in range(6):
                            row[6 * k + c] = row.get(6 * k + c, 0.0) + float(G0[i, 6 * side + c])
                joint_rows.append((q, i, A.add(row, -float(c0[i]) / h)))
        if joint_rows:
            cones.append(clarabel.ZeroConeT(len(joint_rows)))
    # the pairs: s = (gap0 / h + n . u, mu e_t t . u, mu e_o o . u[, mu e_r n . w_rel]) in the second-order cone
    places = []
    patches = patches or {}
    for pr in prob.pairs:
        n = pr.n
        dirs = [(n, 1.0, False)]
        if pr.lay.nf:
            t, o = tangent_frame(n, pr.e_aux)
            dirs += [(t, pr.mu * e_t, False), (o, pr.mu * e_o, False)]
            if pr.lay.nf == 3:
                dirs.append((n, pr.mu * e_r, True))
        # the contact points: the pair's closest points, or the points of its patch (each at its own gap, on B's
        # plane through a2)
        patch = patches.get(pr.ip)
        if patch is None:
            points = [(pr.a1, pr.a2, pr.gap0)]
        elif patch.side == 0:  # (points of A, against B's face through a2)
            points = [(x, x - float(n @ (x - pr.a2)) * n, float(n @ (x - pr.a2))) for x in patch.points]
        else:  # (points of B, against A's face through a1)
            points = [(x + float(n @ (pr.a1 - x)) * n, x, float(n @ (pr.a1 - x))) for x in patch.points]
        firsts = []
        for a1, a2, gap0 in points:
            arms = ((pr.ka, a1 - state.p[pr.a], 1.0),) + (((pr.kb, a2 - state.p[pr.b], -1.0),) if pr.kb >= 0 else ())
            first = None
            for j, (e, scale, spin) in enumerate(dirs):
                row = {}
                for k, arm, sign in arms:
                    lin, ang = (np.zeros(3), e) if spin else (e, np.cross(arm, e))
                    for c in range(3):
                        row[6 * k + c] = row.get(6 * k + c, 0.0) - sign * scale * lin[c]
                        row[6 * k + 3 + c] = row.get(6 * k + 3 + c, 0.0) - sign * scale * ang[c]
                r = A.add(row, gap0 / h if j == 0 else 0.0)
                first = r if first is None else first
            cones.append(clarabel.SecondOrderConeT(len(dirs)) if len(dirs) > 1 else clarabel.NonnegativeConeT(1))
            firsts.append(first)
        places.append((pr, firsts, len(dirs)))
    # the metric: M on the bodies moved by forces (the inverse of the step's M^-1 blocks), the identity on the
    # kinematic ones (their velocities are fixed by the equalities)
    metric = [np.eye(6) if k in kinematic else np.linalg.inv(prob.Sinv[k]) for k in range(nb)]
    M = sp.block_diag(metric, format="csc") if nb else sp.csc_matrix((0, 0))
    q = -(M @ prob.c_body.reshape(-1))
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.max_iter = _MAX_ITER
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = _TOL
    sol = clarabel.DefaultSolver(sp.triu(M, format="csc"), q, A.matrix(6 * nb), A.rhs(), cones, settings).solve()
    status, its = str(sol.status), int(sol.iterations)
    x, y = np.asarray(sol.x, float), np.asarray(sol.z, float)
    if status not in _SOLVED or x.size != 6 * nb or not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        return None, its, status
    # the unknowns of prob: the velocities; per pair pn / m_ref and the friction impulses q_k = p_k / (m_ref e_k) (the
    # impulse on A is n y0 + mu (e_t y1 t + e_o y2 o) [+ mu e_r y3 n as a torque]); per joint lam with the impulse
    # m_ref G0^T lam = -G0^T y (the equality's multiplier)
    z = np.zeros(prob.ntot)
    z[:6 * nb] = x
    for pr, firsts, k in places:
        z[pr.off] = sum(y[r0] for r0 in firsts) / pr.m_ref
        z[pr.off + 1:pr.off + k] = pr.mu * sum(y[r0 + 1:r0 + k] for r0 in firsts) / pr.m_ref
    for q_, i, r in joint_rows:
        plan = prob.jstep.plan
        z[plan.off[q_] + i] = -y[r] / plan.m_ref[q_]
    return z, its, status


class _Rows:
    """The rows of clarabel's constraint A x + s = b, built one at a time: A's entries and b."""

    def __init__(self):
        self.i, self.j, self.v, self.b = [], [], [], []

    def add(self, row: dict, b: float) -> int:
        r = len(self.b)
        for j, v in row.items():
            if v != 0.0:
                self.i.append(r)
                self.j.append(j)
                self.v.append(v)
        self.b.append(b)
        return r

    def matrix(self, n: int) -> sp.csc_matrix:
        return sp.csc_matrix((self.v, (self.i, self.j)), shape=(len(self.b), n))

    def rhs(self) -> np.ndarray:
        return np.array(self.b, float)
