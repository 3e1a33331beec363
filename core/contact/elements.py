"""A square matrix assembled from dense element blocks, and its solve by eliminating each element's own unknowns.

The Jacobian of a contact step has this form: each pair (an element) couples its own unknowns (closest points,
multipliers, impulses) to each other and to the velocities of its two bodies, which are shared with the other
pairs of those bodies; nothing else couples.  Kept as blocks, the operations the Newton solver needs (row
scaling and a diagonal for the Fischer-Burmeister reformulation, products, the Newton solve) are batched numpy
over the elements, with no global sparse assembly (the elimination's loops over the elements are compiled:
core.contact.kernels); a scipy.sparse copy is made only when a caller asks for one.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .kernels import back_substitute, eliminate, eliminate_rhs

__all__ = ["ElementMatrix", "ACCEPT"]


class ElementMatrix:
    """A = diag(d) + sum over elements e of P_e^T B_e P_e (n x n).

    groups: a list of (cols, blocks, own): cols (P, nl) the global indices of the P elements' local unknowns,
    blocks (P, nl, nl) their dense blocks, own the number of trailing local unknowns that are the element's own
    (they appear in no other element); the leading nl - own are shared.  Groups of equal (nl, own) are merged."""

    _DENSE_S = 600  # the reduced (shared-unknown) system is solved dense up to this size, sparse above
    _REFINE = 3  # iterative refinement steps at most

    def __init__(self, n: int, diag: np.ndarray, groups: list, _layout=None):
        self.shape = (n, n)
        self.diag = np.asarray(diag, dtype=float)
        if _layout is None:
            merged: dict = {}
            for i, (cols, _blocks, own) in enumerate(groups):
                if len(cols):
                    merged.setdefault((cols.shape[1], own), []).append(i)
            plan = list(merged.items())
            layouts = []
            for (_nl, own), idx in plan:
                cols = groups[idx[0]][0] if len(idx) == 1 else np.concatenate([groups[i][0] for i in idx])
                layouts.append(_Layout(cols, own))
            _layout = (layouts, _Layout.finish(layouts, n), plan, {})  # {}: structures derived from this one
            blocks_out = _merge_blocks(plan, groups)
        else:
            blocks_out = groups
        self._layout, self._x, self._plan, self._derived = _layout
        self.blocks = blocks_out
        self._csc = None

    def refill(self, diag: np.ndarray, groups: list) -> "ElementMatrix":
        """A matrix with this one's structure and new values: groups as for the constructor, with the same columns
        in the same order (the index arrays are not rebuilt)."""
        return ElementMatrix(self.shape[0], diag, _merge_blocks(self._plan, groups), _layout=self._structure())

    def _structure(self):
        return self._layout, self._x, self._plan, self._derived

    # --- algebra used by the Newton solver -------------------------------------------------------------------
    def _with(self, diag, blocks):
        return ElementMatrix(self.shape[0], diag, blocks, _layout=self._structure())

    def scale_rows(self, s: np.ndarray) -> "ElementMatrix":
        """diag(s) A."""
        return self._with(self.diag * s, [s[lay.cols][:, :, None] * B for lay, B in zip(self._layout, self.blocks)])

    def add_diagonal(self, v: np.ndarray) -> "ElementMatrix":
        """A + diag(v) (the blocks are shared with A, not copied)."""
        return self._with(self.diag + v, self.blocks)

    def lm_system(self, nu: float) -> "ElementMatrix":
        """The augmented Levenberg-Marquardt matrix [[nu I, A^T], [A, -I]] (2n x 2n, unknowns (d, r)): solving it
        with right-hand side (0, -b) gives d = -(A^T A + nu I)^-1 A^T b, r = A d + b.  It keeps the element structure
        (each element's own unknowns are its own in d and in r), and it is symmetric quasi-definite, so every own-own
        block is regular and eliminating them needs no pivoting across elements, unlike the normal equations
        A^T A + nu I, which couple the elements that share an unknown and need a sparse LU."""
        n = self.shape[0]
        x = self._x[self.diag[self._x] != 0.0]
        key = ("lm", x.tobytes())
        template = self._derived.get(key)  # the same structure's earlier augmented matrix: reuse its index arrays
        groups = []
        for lay, B in zip(self._layout, self.blocks):
            P, nl = lay.cols.shape
            ns, k = lay.ns, nl - lay.ns
            # local order: d shared, r shared, d own, r own (the own ones last)
            pos_d = np.concatenate((np.arange(ns), 2 * ns + np.arange(k)))
            pos_r = np.concatenate((ns + np.arange(ns), 2 * ns + k + np.arange(k)))
            Ba = np.zeros((P, 2 * nl, 2 * nl))
            Ba[:, pos_d[:, None], pos_r[None, :]] = B.transpose(0, 2, 1)
            Ba[:, pos_r[:, None], pos_d[None, :]] = B
            # the diagonal of A on own unknowns: its (r_i, d_i) and (d_i, r_i) entries
            od = self.diag[lay.own]
            Ba[:, pos_d[ns:], pos_r[ns:]] += od
            Ba[:, pos_r[ns:], pos_d[ns:]] += od
            cols = None if template is not None else np.concatenate(
                (lay.cols[:, :ns], n + lay.cols[:, :ns], lay.own, n + lay.own), axis=1)
            groups.append((cols, Ba, 2 * k))
        # the diagonal of A on shared unknowns couples d_i and r_i: 2 x 2 elements with no own unknowns
        if x.size:
            Bx = np.zeros((x.size, 2, 2))
            Bx[:, 0, 1] = Bx[:, 1, 0] = self.diag[x]
            groups.append((None if template is not None else np.stack((x, n + x), axis=1), Bx, 0))
        diag = np.concatenate((np.full(n, float(nu)), -np.ones(n)))
        if template is not None:
            return template.refill(diag, groups)
        self._derived[key] = aug = ElementMatrix(2 * n, diag, groups)
        return aug

    def __matmul__(self, v: np.ndarray) -> np.ndarray:
        out = self.diag * v
        for lay, B in zip(self._layout, self.blocks):
            out += np.bincount(lay.flat, (B @ v[lay.cols][:, :, None]).ravel(), minlength=self.shape[0])
        return out

    def rmatvec(self, v: np.ndarray) -> np.ndarray:
        """A^T v."""
        out = self.diag * v
        for lay, B in zip(self._layout, self.blocks):
            out += np.bincount(lay.flat, (v[lay.cols][:, None, :] @ B).ravel(), minlength=self.shape[0])
        return out

    def tocsc(self) -> sp.csc_matrix:
        if self._csc is None:
            n = self.shape[0]
            rows, cols, vals = [np.arange(n)], [np.arange(n)], [self.diag]
            for lay, B in zip(self._layout, self.blocks):
                rows.append(lay.rr)
                cols.append(lay.cc)
                vals.append(B.ravel())
            self._csc = sp.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                                      shape=self.shape).tocsc()
        return self._csc

    def toarray(self) -> np.ndarray:
        return self.tocsc().toarray()

    # --- the solve ----------------------------------------------------------------------------------------------
    def solve(self, rhs: np.ndarray) -> np.ndarray | None:
        """x with A x = rhs by eliminating every element's own unknowns (LU factors of the own-own blocks, compiled),
        then the Schur complement on the shared ones; None when an own-own block is singular or the result stays
        inaccurate after iterative refinement (the caller then uses a sparse LU of the whole)."""
        x_idx = self._x
        nx = x_idx.size
        d = self.diag
        parts = []
        s_flat, s_vals = [np.zeros(0, int)], [np.zeros(0)]
        for lay, B in zip(self._layout, self.blocks):
            B = np.ascontiguousarray(B)
            LU, piv, IBgx, Sxx, ok = eliminate(B, lay.ns, np.ascontiguousarray(d[lay.own]))
            if not ok:
                return None
            parts.append((lay, B, (LU, piv), IBgx))
            s_flat.append(lay.sflat)
            s_vals.append(Sxx.ravel())
        if not all(np.all(np.isfinite(v)) for v in s_vals):
            return None
        try:
            if nx <= self._DENSE_S:
                S = np.bincount(np.concatenate(s_flat), np.concatenate(s_vals), minlength=nx * nx).reshape(nx, nx)
                S[np.arange(nx), np.arange(nx)] += d[x_idx]
                lu = sla.lu_factor(S, check_finite=False)
                solve_s = lambda b: sla.lu_solve(lu, b, check_finite=False)  # noqa: E731
            else:
                flat = np.concatenate(s_flat + [np.arange(nx) * (nx + 1)])
                S = sp.coo_matrix((np.concatenate(s_vals + [d[x_idx]]), (flat // nx, flat % nx)),
                                  shape=(nx, nx)).tocsc()
                solve_s = spla.splu(S).solve
        except (np.linalg.LinAlgError, RuntimeError, ValueError):
            return None

        def apply(b):
            b = np.ascontiguousarray(b, dtype=float)
            out = np.empty_like(b)
            bx = b[x_idx].copy()
            ys = [eliminate_rhs(B, lay.ns, *fac, lay.own, lay.wx, b, bx) for lay, B, fac, _IBgx in parts]
            dx = solve_s(bx)
            out[x_idx] = dx
            for (lay, _B, _fac, IBgx), yg in zip(parts, ys):
                back_substitute(IBgx, lay.own, lay.wx, yg, dx, out)
            return out

        # the own-own blocks are factored without pivoting across them, and a block of a sticking contact is
        # ill-conditioned (its friction rows carry only a small proximal term): iterative refinement (a few more
        # applications of the same factors) recovers the accuracy; an inaccurate solve is refused
        sol = apply(rhs)
        scale = np.linalg.norm(rhs) + 1e-300
        accept = ACCEPT * (1.0 + scale)  # the acceptance test of core.contact.mcp._solve_linear's sparse LU
        for _ in range(self._REFINE):
            if not np.all(np.isfinite(sol)):
                return None
            res = rhs - self @ sol
            if np.linalg.norm(res) <= 1e-10 * scale:
                return sol
            sol = sol + apply(res)
        if not np.all(np.isfinite(sol)) or np.linalg.norm(self @ sol - rhs) > accept:
            return None
        return sol


ACCEPT = 1e-8  # a solve is accepted with a residual norm below this times 1 + |rhs|


def _merge_blocks(plan, groups):
    """The blocks of groups stacked in the order of a merge plan (one array per (nl, own))."""
    return [groups[idx[0]][1] if len(idx) == 1 else np.concatenate([groups[i][1] for i in idx]) for _key, idx in plan]


class _Layout:
    """Index arrays of one group of elements (fixed while only the values change)."""

    def __init__(self, cols, own):
        self.cols = np.asarray(cols, dtype=int)
        nl = self.cols.shape[1]
        self.ns = nl - own
        self.own = np.ascontiguousarray(self.cols[:, self.ns:])
        self.flat = self.cols.ravel()
        self.rr = np.repeat(self.cols, nl, axis=1).ravel()  # row of each block entry, row-major
        self.cc = np.tile(self.cols, (1, nl)).ravel()

    @staticmethod
    def finish(layouts, n):
        """The shared unknowns (every index that is no element's own) and each element's places among them."""
        is_x = np.ones(n, bool)
        for lay in layouts:
            if np.any(~is_x[lay.own]):
                raise ValueError("an element's own unknowns appear in another element")
            is_x[lay.own] = False
        x = np.flatnonzero(is_x)
        where = np.full(n, -1)
        where[x] = np.arange(x.size)
        for lay in layouts:
            lay.wx = where[lay.cols[:, :lay.ns]]
            if np.any(lay.wx < 0):
                raise ValueError("an element's shared unknowns include another element's own unknowns")
            ns = lay.ns
            # place of each entry of the element's shared-shared block in the (row-major) reduced matrix
            lay.sflat = (np.repeat(lay.wx, ns, axis=1) * x.size + np.tile(lay.wx, (1, ns))).ravel()
        return x
