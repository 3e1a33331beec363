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

from .kernels import (all_finite, back_substitute, eliminate, eliminate_into, eliminate_rhs, finish_schur,
                      lm_back_substitute, lm_eliminate, lm_eliminate_rhs, scale_blocks, scatter_add)

__all__ = ["ElementMatrix", "ACCEPT"]


class ElementMatrix:
    """A = diag(d) + sum over elements e of P_e^T B_e P_e (n x n).

    groups: a list of (cols, blocks, own): cols (P, nl) the global indices of the P elements' local unknowns,
    blocks (P, nl, nl) their dense blocks, own the number of trailing local unknowns that are the element's own
    (they appear in no other element); the leading nl - own are shared.  Groups of equal (nl, own) are merged.
    dense_s: the size up to which the reduced (shared-unknown) system is solved dense, sparse above (default
    _DENSE_S; 0 takes the sparse path at any size, as for large piles); the matrices derived from this one keep it."""

    _DENSE_S = 600  # the reduced (shared-unknown) system is solved dense up to this size, sparse above
    _REFINE = 3  # iterative refinement steps at most

    def __init__(self, n: int, diag: np.ndarray, groups: list, _layout=None, dense_s: int | None = None):
        self.dense_s = self._DENSE_S if dense_s is None else int(dense_s)
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
        return ElementMatrix(self.shape[0], diag, _merge_blocks(self._plan, groups), _layout=self._structure(),
                             dense_s=self.dense_s)

    def _structure(self):
        return self._layout, self._x, self._plan, self._derived

    # --- algebra used by the Newton solver -------------------------------------------------------------------
    def _with(self, diag, blocks):
        return ElementMatrix(self.shape[0], diag, blocks, _layout=self._structure(), dense_s=self.dense_s)

    def scale_rows(self, s: np.ndarray) -> "ElementMatrix":
        """diag(s) A."""
        s = np.ascontiguousarray(s, dtype=float)
        return self._with(self.diag * s, [scale_blocks(np.ascontiguousarray(B), lay.cols, s)
                                          for lay, B in zip(self._layout, self.blocks)])

    def add_diagonal(self, v: np.ndarray) -> "ElementMatrix":
        """A + diag(v) (the blocks are shared with A, not copied)."""
        return self._with(self.diag + v, self.blocks)

    def add_local(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> "ElementMatrix":
        """A plus vals (N, d, e) at the entries (rows[i], cols[i]) (N, d) x (N, e): each i's rows and columns must
        be own unknowns of one element (the interior-point solver's cone blocks of a pair)."""
        own_map = self._derived.get("own_map")
        if own_map is None:
            n = self.shape[0]
            g_of, p_of, l_of = np.full(n, -1), np.zeros(n, int), np.zeros(n, int)
            for gi, lay in enumerate(self._layout):
                P, nl = lay.cols.shape
                g_of[lay.own] = gi
                p_of[lay.own] = np.arange(P)[:, None]
                l_of[lay.own] = np.arange(lay.ns, nl)[None, :]
            own_map = self._derived["own_map"] = (g_of, p_of, l_of)
        g_of, p_of, l_of = own_map
        rows, cols = np.asarray(rows), np.asarray(cols)
        g = g_of[rows[:, 0]]
        if np.any(g < 0) or np.any(g_of[rows] != g[:, None]) or np.any(g_of[cols] != g[:, None]) or np.any(
                p_of[rows] != p_of[rows[:, :1]]) or np.any(p_of[cols] != p_of[rows[:, :1]]):
            raise ValueError("add_local: entries outside one element's own unknowns")
        blocks = list(self.blocks)
        for gi in np.unique(g):
            sel = g == gi
            B = blocks[gi] = blocks[gi].copy()
            pe = p_of[rows[sel, 0]]
            np.add.at(B, (pe[:, None, None], l_of[rows[sel]][:, :, None], l_of[cols[sel]][:, None, :]), vals[sel])
        return self._with(self.diag, blocks)

    def lm_solve(self, nu, b: np.ndarray, f: np.ndarray | None = None) -> np.ndarray | None:
        """The Levenberg-Marquardt direction d = -(A^T A + nu I)^-1 A^T b, or None when the elimination fails or stays
        inaccurate (the caller then solves the normal equations).  nu may also be a positive damping per unknown
        (diag(nu) instead of nu I), and f a right-hand side of the d rows: then d = (A^T A + diag(nu))^-1 (f - A^T b),
        the least-squares step of A d + b together with rows sqrt(c_i) (d_i - f_i / c_i) for unknowns damped by c_i more
        (the active-set polish's bound rows, mcp._active_set_polish).

        The normal equations couple all elements that share an unknown; the augmented system
        [[diag(nu), A^T], [A, -I]] (d, r) = (f, -b) (r = A d + b) keeps the element structure, and is solved here without
        being formed.  An element's own rows occur in no other element, so their r unknowns are eliminated exactly
        (r_o = A_o d + b_o), which adds Bo^T Bo (Bo its rows of A) to the element's d-d block; its own d unknowns then
        have the SPD block nu I + Bo_oo^T Bo_oo (Cholesky, k x k, instead of an LU of the 2k x 2k augmented own-own
        block: kernels.lm_eliminate).  What remains is the Schur complement on the shared unknowns (d_s, r_s),
        symmetric quasi-definite [[T_dd, T_dr], [T_rd, T_rr]] with T_rr = -(I + ...) (eigenvalues <= -1): r_s is
        eliminated with a Cholesky factor of -T_rr, d_s with one of the SPD T_dd - T_dr T_rr^-1 T_rd (_sqd_factor:
        about half the flops of an LU of the whole).  27-sphere pile, 30 captured LM calls: 6.0 -> 1.55 ms a call,
        and closer to a QR least-squares reference (worst relative error 3e-8 -> 2e-9).  Iterative refinement on the
        augmented system's residual and the acceptance test are solve's."""
        n = self.shape[0]
        x_idx = self._x
        m = x_idx.size
        dg = self.diag
        lm_cols = self._derived.get("lm_cols")
        if lm_cols is None:  # each element's (d_s, r_s) places in the reduced system: d_s first, then r_s
            lm_cols = self._derived["lm_cols"] = [np.ascontiguousarray(np.concatenate((lay.wx, m + lay.wx), axis=1))
                                                  for lay in self._layout]
        nu = np.broadcast_to(np.asarray(nu, dtype=float), (n,))
        f0 = np.zeros(n) if f is None else np.asarray(f, dtype=float)
        parts = []
        dense = 2 * m <= self.dense_s
        S = np.zeros((2 * m, 2 * m)) if dense else None
        s_rows, s_cols, s_vals = [], [], []
        for lay, B, cols in zip(self._layout, self.blocks, lm_cols):
            B = np.ascontiguousarray(B)
            d_own = np.ascontiguousarray(dg[lay.own])
            L, WT, Sx, ok = lm_eliminate(B, lay.ns, d_own, np.ascontiguousarray(nu[lay.own]))
            if not ok:
                return None
            parts.append((lay, B, d_own, L, WT, cols))
            if dense:
                scatter_add(S, cols, Sx)
            else:
                w = cols.shape[1]
                s_rows.append(np.repeat(cols, w, axis=1).ravel())
                s_cols.append(np.tile(cols, (1, w)).ravel())
                s_vals.append(Sx.ravel())
        i = np.arange(m)
        diag_rows = np.concatenate((i, m + i, i, m + i))
        diag_cols = np.concatenate((i, m + i, m + i, i))
        diag_vals = np.concatenate((nu[x_idx], -np.ones(m), dg[x_idx], dg[x_idx]))
        try:
            if dense:
                S[diag_rows, diag_cols] += diag_vals  # (distinct entries: np.add.at's sums, without its cost)
                if not all_finite(S):
                    return None
                solve_s = _sqd_factor(S, m)
                if solve_s is None:
                    return None
            else:
                S = sp.coo_matrix((np.concatenate(s_vals + [diag_vals]), (np.concatenate(s_rows + [diag_rows]),
                                   np.concatenate(s_cols + [diag_cols]))), shape=(2 * m, 2 * m)).tocsc()
                if not np.all(np.isfinite(S.data)):
                    return None
                solve_s = spla.splu(S).solve
        except (np.linalg.LinAlgError, RuntimeError, ValueError):
            return None

        def apply(f, g):
            bx = np.concatenate((f[x_idx], g[x_idx]))
            zs = [lm_eliminate_rhs(B, lay.ns, L, WT, d_own, lay.own, lay.wx, m, f, g, bx)
                  for lay, B, d_own, L, WT, _c in parts]
            sx = solve_s(bx)
            out_d = np.empty(n)
            out_r = np.empty(n)
            out_d[x_idx] = sx[:m]
            out_r[x_idx] = sx[m:]
            for (lay, B, d_own, L, WT, _c), z in zip(parts, zs):
                lm_back_substitute(B, lay.ns, L, WT, d_own, lay.own, lay.wx, m, z, g, sx, out_d, out_r)
            return out_d, out_r

        def residual(d, r):  # (f, -b) - [[diag(nu), A^T], [A, -I]] (d, r)
            return f0 - (nu * d + self.rmatvec(r)), r - b - self @ d

        d, r = apply(f0, -np.asarray(b, dtype=float))
        scale = np.sqrt(b @ b + f0 @ f0) + 1e-300
        accept = ACCEPT * (1.0 + scale)
        for _ in range(self._REFINE):
            if not (np.all(np.isfinite(d)) and np.all(np.isfinite(r))):
                return None
            rf, rg = residual(d, r)
            if np.sqrt(rf @ rf + rg @ rg) <= 1e-10 * scale:
                return d
            dd, dr = apply(rf, rg)
            d = d + dd
            r = r + dr
        if not (np.all(np.isfinite(d)) and np.all(np.isfinite(r))):
            return None
        rf, rg = residual(d, r)
        if np.sqrt(rf @ rf + rg @ rg) > accept:
            return None
        return d

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
        """The assembled matrix (entries of elements that share an unknown summed).  The pattern (each block
        entry's place among the matrix's sorted entries) is computed once per structure and kept with it; a
        refilled matrix only sums its values into place (0.08 ms on a 27-sphere pile's step Jacobian, against 0.8
        ms for a COO assembly; the active-set polish asks for it every iteration)."""
        if self._csc is None:
            n = self.shape[0]
            pattern = self._derived.get("csc")
            if pattern is None:
                keys = np.concatenate([np.arange(n) * (n + 1)] + [lay.cc * n + lay.rr for lay in self._layout])
                uniq, where = np.unique(keys, return_inverse=True)  # sorted by column, then row: CSC order
                indptr = np.searchsorted(uniq // n, np.arange(n + 1))
                pattern = self._derived["csc"] = (where, (uniq % n).astype(np.int32), indptr.astype(np.int32),
                                                  uniq.size)
            where, indices, indptr, nnz = pattern
            data = np.bincount(where, np.concatenate([self.diag] + [B.ravel() for B in self.blocks]), minlength=nnz)
            self._csc = sp.csc_matrix((data, indices, indptr), shape=self.shape)
        return self._csc

    def toarray(self) -> np.ndarray:
        return self.tocsc().toarray()

    # --- the solve ----------------------------------------------------------------------------------------------
    def solve(self, rhs: np.ndarray) -> np.ndarray | None:
        """x with A x = rhs by eliminating every element's own unknowns (LU factors of the own-own blocks, compiled),
        then the Schur complement on the shared ones; None when an own-own block is singular or the result stays
        inaccurate after iterative refinement (the Newton solver then takes a Levenberg-Marquardt step)."""
        solver = self.factor()
        return None if solver is None else solver(rhs)

    def factor(self):
        """A solver rhs -> x (or None when inaccurate) for A x = rhs, from one factorisation (see solve); None when
        an own-own block or the Schur complement is singular."""
        x_idx = self._x
        nx = x_idx.size
        d = self.diag
        dense = nx <= self.dense_s
        # the Schur complement S on the shared unknowns: dense, in Fortran order (LAPACK factors it in place), or
        # its entries for a sparse matrix; the elements' parts add in their order (pairs that share a body add
        # into the same entries)
        S = np.zeros((nx, nx), order="F") if dense else None
        parts = []
        s_flat, s_vals = [], []
        if dense:
            d = np.ascontiguousarray(d, dtype=float)
        for lay, B in zip(self._layout, self.blocks):
            B = np.ascontiguousarray(B)
            if dense:  # (eliminated and added into S in one compiled pass)
                LU, piv, IBgx, ok = eliminate_into(B, lay.ns, d, lay.own, lay.wx, S)
            else:
                LU, piv, IBgx, Sxx, ok = eliminate(B, lay.ns, np.ascontiguousarray(d[lay.own]))
            if not ok:
                return None
            parts.append((lay, B, (LU, piv), IBgx))
            if not dense:
                s_flat.append(lay.sflat)
                s_vals.append(Sxx.ravel())
        # (dense: S checked for finite entries, then the diagonal added, in one compiled pass)
        if not (finish_schur(S, x_idx, d) if dense else all(np.all(np.isfinite(v)) for v in s_vals)):
            return None
        if nx == 0:  # no shared unknowns: nothing is left after the elements' own ones
            solve_s = lambda b: b  # noqa: E731
        elif dense:
            lu, piv, info = _getrf(S, overwrite_a=1)
            if info != 0:  # an exactly zero pivot: singular
                return None
            solve_s = lambda b: _getrs(lu, piv, b, overwrite_b=1)[0]  # noqa: E731  (b: apply's own copy)
        else:
            flat = np.concatenate(s_flat + [np.arange(nx) * (nx + 1)])
            S = sp.coo_matrix((np.concatenate(s_vals + [d[x_idx]]), (flat // nx, flat % nx)),
                              shape=(nx, nx)).tocsc()
            try:
                solve_s = spla.splu(S).solve
            except (RuntimeError, ValueError):
                return None

        forward = [(B, lay.ns, LU, piv, lay.own, lay.wx) for lay, B, (LU, piv), _IBgx in parts]
        backward = [(IBgx, lay.own, lay.wx) for lay, _B, _fac, IBgx in parts]

        def apply(b):
            b = np.ascontiguousarray(b, dtype=float)
            out = np.empty_like(b)
            bx = b[x_idx]
            ys = [eliminate_rhs(*args, b, bx) for args in forward]
            dx = solve_s(bx)
            out[x_idx] = dx
            for args, yg in zip(backward, ys):
                back_substitute(*args, yg, dx, out)
            return out

        # the own-own blocks are factored without pivoting across them, and a block of a sticking contact is
        # ill-conditioned: iterative refinement (a few more applications of the same factors) recovers the
        # accuracy; an inaccurate solve is refused
        def solve(rhs):
            sol = apply(rhs)
            scale = np.linalg.norm(rhs) + 1e-300
            accept = ACCEPT * (1.0 + scale)
            # (a solve from a nearly singular block can be finite but huge, and the norm of its residual then
            # overflows: inf, so the solve is refused, without numpy's overflow warning)
            with np.errstate(over="ignore"):
                for _ in range(self._REFINE):
                    if not np.isfinite(sol).all():
                        return None
                    res = rhs - self @ sol
                    if np.linalg.norm(res) <= 1e-10 * scale:
                        return sol
                    sol = sol + apply(res)
                if not np.isfinite(sol).all() or np.linalg.norm(self @ sol - rhs) > accept:
                    return None
            return sol

        return solve


ACCEPT = 1e-8  # a solve is accepted with a residual norm below this times 1 + |rhs|


def _sqd_factor(S, m):
    """A solver for the symmetric quasi-definite S = [[T_dd, T_dr], [T_rd, T_rr]] (2m x 2m, -T_rr positive
    definite, T_dd - T_dr T_rr^-1 T_rd positive definite) by two Cholesky factors: C = -T_rr = Lc Lc^T,
    W = Lc^-1 T_rd, T = T_dd + W^T W = Lt Lt^T; None if a factor fails."""
    if m == 0:  # no shared unknowns: nothing is left after the elements' own ones
        return lambda bx: np.zeros(0)
    Lc, info = _potrf(-S[m:, m:], lower=1, clean=0, overwrite_a=1)
    if info != 0:
        return None
    W, info = _trtrs(Lc, S[m:, :m], lower=1)
    if info != 0:
        return None
    T = S[:m, :m] + W.T @ W
    Lt, info = _potrf(T, lower=1, clean=0, overwrite_a=1)
    if info != 0:
        return None

    def solve(bx):
        u, _ = _trtrs(Lc, bx[m:], lower=1)
        xd, _ = _potrs(Lt, bx[:m] + W.T @ u, lower=1)
        y, _ = _trtrs(Lc, W @ xd - u, lower=1, trans=1)
        return np.concatenate((xd, y))

    return solve


_potrf, _potrs, _trtrs, _getrf, _getrs = sla.lapack.get_lapack_funcs(("potrf", "potrs", "trtrs", "getrf", "getrs"),
                                                                      dtype=float)


def _merge_blocks(plan, groups):
    """The blocks of groups stacked in the order of a merge plan (one array per (nl, own))."""
    return [groups[idx[0]][1] if len(idx) == 1 else np.concatenate([groups[i][1] for i in idx]) for _key, idx in plan]


class _Layout:
    """Index arrays of one group of elements (fixed while only the values change)."""

    def __init__(self, cols, own):
        self.cols = np.array(cols, dtype=int)  # a writable copy (a read-only array is another compiled signature)
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
