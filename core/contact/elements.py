"""A square matrix assembled from dense element blocks, and its solve by eliminating each element's own unknowns.

The Jacobian of a contact step has this form: each pair (an element) couples its own unknowns (closest points,
multipliers, impulses) to each other and to the velocities of its two bodies, which are shared with the other
pairs of those bodies; nothing else couples.  Kept as blocks, the operations the Newton solver needs (row
scaling and a diagonal for the Fischer-Burmeister reformulation, products, the Newton solve) are batched numpy
over the elements, with no global sparse assembly; a scipy.sparse copy is made only when a caller asks for one.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

__all__ = ["ElementMatrix"]


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
            for cols, blocks, own in groups:
                if len(cols):
                    merged.setdefault((cols.shape[1], own), []).append((cols, blocks))
            _layout = []
            blocks_out = []
            for (nl, own), parts in merged.items():
                cols = parts[0][0] if len(parts) == 1 else np.concatenate([c for c, _ in parts])
                _layout.append(_Layout(n, cols, own))
                blocks_out.append(parts[0][1] if len(parts) == 1 else np.concatenate([b for _, b in parts]))
            _layout = (_layout, _Layout.finish(_layout, n))
        else:
            blocks_out = groups
        self._layout, self._x = _layout
        self.blocks = blocks_out
        self._csc = None

    # --- algebra used by the Newton solver -------------------------------------------------------------------
    def _with(self, diag, blocks):
        return ElementMatrix(self.shape[0], diag, blocks, _layout=(self._layout, self._x))

    def scale_rows(self, s: np.ndarray) -> "ElementMatrix":
        """diag(s) A."""
        return self._with(self.diag * s, [s[lay.cols][:, :, None] * B for lay, B in zip(self._layout, self.blocks)])

    def add_diagonal(self, v: np.ndarray) -> "ElementMatrix":
        """A + diag(v) (the blocks are shared with A, not copied)."""
        return self._with(self.diag + v, self.blocks)

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
        """x with A x = rhs by eliminating every element's own unknowns (batched inverses of the own-own blocks),
        then the Schur complement on the shared ones; None when an own-own block is singular or the result stays
        inaccurate after iterative refinement (the caller then uses a sparse LU of the whole)."""
        x_idx = self._x
        nx = x_idx.size
        d = self.diag
        parts = []
        s_flat, s_vals = [np.zeros(0, int)], [np.zeros(0)]
        for lay, B in zip(self._layout, self.blocks):
            ns = lay.ns
            Bgg = B[:, ns:, ns:].copy()
            Bgg[:, lay.kk, lay.kk] += d[lay.own]
            try:
                inv = np.linalg.inv(Bgg)
            except np.linalg.LinAlgError:
                return None
            IBgx = inv @ B[:, ns:, :ns]
            Sxx = B[:, :ns, :ns] - B[:, :ns, ns:] @ IBgx
            parts.append((lay, inv, IBgx, B[:, :ns, ns:]))
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
                S = sp.coo_matrix((np.concatenate(s_vals + [d[x_idx]]), (flat // nx, flat % nx)), shape=(nx, nx)).tocsc()
                solve_s = spla.splu(S).solve
        except (np.linalg.LinAlgError, RuntimeError, ValueError):
            return None

        def apply(b):
            out = np.empty_like(b)
            bx = b[x_idx].copy()
            ys = []
            for lay, inv, _IBgx, Bxg in parts:
                yg = (inv @ b[lay.own][:, :, None])[:, :, 0]
                ys.append(yg)
                bx -= np.bincount(lay.wx.ravel(), (Bxg @ yg[:, :, None]).ravel(), minlength=nx)
            dx = solve_s(bx)
            out[x_idx] = dx
            for (lay, _inv, IBgx, _Bxg), yg in zip(parts, ys):
                out[lay.own] = yg - (IBgx @ dx[lay.wx][:, :, None])[:, :, 0]
            return out

        # the own-own blocks are inverted without pivoting across them, and a block of a sticking contact is
        # ill-conditioned (its friction rows carry only a small proximal term): iterative refinement (a few more
        # applications of the same factors) recovers the accuracy; an inaccurate solve is refused
        sol = apply(rhs)
        scale = np.linalg.norm(rhs) + 1e-300
        accept = _ACCEPT * (1.0 + scale)  # the acceptance test of core.contact.mcp._solve_linear's sparse LU
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


_ACCEPT = 1e-8  # a solve is accepted with a residual norm below this times 1 + |rhs|


class _Layout:
    """Index arrays of one group of elements (fixed while only the values change)."""

    def __init__(self, n, cols, own):
        self.cols = np.asarray(cols, dtype=int)
        P, nl = self.cols.shape
        self.ns = nl - own
        self.own = self.cols[:, self.ns:]
        self.kk = np.arange(own)
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
