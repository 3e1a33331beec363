"""Automatic graph layout for the graph editor (stress majorization with numpy/scipy; no Qt)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.linalg import cho_solve
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import shortest_path
from scipy.sparse.linalg import ArpackNoConvergence, eigsh
from scipy.spatial.distance import cdist
from scipy.spatial import cKDTree

from core.model import Mechanism

__all__ = ["stress_majorization", "MAX_ITER", "graph_distances", "stress", "auto_layout", "layout_graph",
           "LayoutGraph", "LayoutCancelled", "separate", "NODE_SPACING", "components", "WHOLE_MAX", "drawing_work"]

NODE_SPACING = 150.0  # scene units between neighbouring nodes
X_STRETCH = 1.35  # nodes are wider than tall: spread the layout horizontally so labels stay clear
CLEARANCE = (112.0 + 40.0, 38.0 + 40.0)  # node box plus a margin for edge labels (scene units)
# a joint's marker on its edge (app.panels.graph.JointItem: a circle of radius 12 at the edge's middle, its name to the
# right) as a box (w, h) centred MARKER_SHIFT to the right of the middle, and the node box a marker keeps clear of
MARKER_BOX = (70.0, 30.0)
MARKER_SHIFT = 20.0
NODE_BOX = (112.0 + 16.0, 38.0 + 16.0)
RELAX = 1.9  # over-relaxed Guttman step x + RELAX (G(x) - x) (de Leeuw & Heiser 1980): about 1.5x fewer steps
TOL = 1e-4  # stop when an iteration lowers the stress by less than this fraction (Gansner, Koren & North use 1e-4)
MAX_ITER = 300


class LayoutCancelled(Exception):
    """The layout was asked to stop (its window closed)."""


def _check(cancelled: Callable[[], bool] | None) -> None:
    if cancelled is not None and cancelled():
        raise LayoutCancelled


def graph_distances(n: int, edges, cancelled: Callable[[], bool] | None = None) -> np.ndarray:
    """(n, n) shortest-path lengths in edges (unit length); parts not connected are the diameter plus one apart."""
    rows = [a for a, b in edges] + [b for a, b in edges]
    cols = [b for a, b in edges] + [a for a, b in edges]
    g = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n)).tocsr()
    # (by blocks of sources: the search holds Python's lock, and in one call it held a GUI waiting on a layout
    # thread for 60 ms at 1000 bodies)
    d = np.empty((n, n))
    for idx in np.array_split(np.arange(n), max(1, n // 128)):
        _check(cancelled)
        d[idx] = shortest_path(g, unweighted=True, directed=False, indices=idx)
    finite = d[np.isfinite(d)]
    # Disconnected parts sit a little further than the graph's diameter from each other.
    d[~np.isfinite(d)] = (finite.max() if finite.size else 1.0) + 1.0
    return d


def stress(p: np.ndarray, d: np.ndarray) -> float:
    """The Kamada–Kawai stress of positions p (n, 2) for target distances d (n, n): the sum over pairs of
    (|p_i - p_j| - d_ij)^2 / d_ij^2."""
    iu = np.triu_indices(len(p), 1)
    dist = np.sqrt(((p[iu[0]] - p[iu[1]]) ** 2).sum(axis=1))
    return float(np.sum((dist / d[iu] - 1.0) ** 2))


def _classical_mds(d: np.ndarray, seed: int) -> np.ndarray:
    """(n, 2) positions whose Euclidean distances best match d in the least-squares sense of the doubly centred
    squared distances (Torgerson's classical scaling): the stress iteration's start."""
    n = len(d)
    d2 = d**2
    r = d2.mean(axis=1)
    b = -0.5 * (d2 - r[:, None] - r[None, :] + r.mean())
    if n <= 64:
        lam, v = np.linalg.eigh(b)
        lam, v = lam[-2:], v[:, -2:]
    else:
        # (the two largest eigenpairs by Lanczos, O(n^2) per product; a seeded start vector keeps it deterministic)
        try:
            lam, v = eigsh(b, k=2, which="LA", v0=np.random.default_rng(seed).standard_normal(n))
        except ArpackNoConvergence:  # pragma: no cover - not seen; the iteration then starts on a circle
            ang = 2 * np.pi * np.arange(n) / n
            return np.column_stack([np.cos(ang), np.sin(ang)]) * (n / (2 * np.pi))
    return v * np.sqrt(np.maximum(lam, 0.0))


def stress_majorization(n: int, edges, seed: int = 0, cancelled: Callable[[], bool] | None = None,
                        tol: float = TOL, max_iter: int = MAX_ITER) -> np.ndarray:
    """Node positions (n, 2) whose distances approximate the graph distances (unit edge length): the Kamada–Kawai
    stress minimised by stress majorization (SMACOF; Gansner, Koren & North 2004), started from classical MDS."""
    if n < 2:
        return np.zeros((n, 2))
    d = graph_distances(n, edges, cancelled)
    rng = np.random.default_rng(seed)
    # (a small seeded jitter: a start on a line, a path's, would stay on it; the iteration keeps a subspace)
    x = _classical_mds(d, seed) + 0.01 * rng.standard_normal((n, 2))
    x -= x.mean(axis=0)
    np.fill_diagonal(d, 1.0)
    invd = 1.0 / d  # weights w_ij = 1/d_ij^2, and w_ij d_ij = 1/d_ij
    del d
    np.fill_diagonal(invd, 0.0)
    lap = -(invd**2)  # the weighted Laplacian L_w; with 1/n added everywhere it is positive definite, and on right
    np.fill_diagonal(lap, -lap.sum(axis=1))  # sides whose columns sum to zero (B(x) x's) it solves as L_w's
    lap += 1.0 / n  # pseudo-inverse; on a centred x, (L_w + 1/n) x = L_w x
    factor = (np.linalg.cholesky(lap), True)  # (numpy's lets go of Python's lock, scipy's cho_factor held it 0.2 s)
    m = np.empty((n, n))
    pairs = n * (n - 1) / 2
    prev = np.inf
    relax = RELAX
    for _ in range(max_iter):
        _check(cancelled)
        dist = cdist(x, x)
        np.fill_diagonal(dist, 1.0)
        np.maximum(dist, 1e-12, out=dist)
        np.divide(invd, dist, out=m)  # -B(x) off the diagonal: w_ij d_ij / |x_i - x_j| (0 on the diagonal)
        del dist
        bx = m.sum(axis=1)[:, None] * x - m @ x  # B(x) x
        # The stress of x, sum over pairs of w_ij (|x_i - x_j| - d_ij)^2, from the traces of the majorization
        # (pairs + tr x'L_w x - 2 tr x'B(x) x): one product with L_w instead of more passes over n x n arrays.
        s = pairs + float(np.sum(x * (lap @ x))) - 2.0 * float(np.sum(x * bx))
        if s > prev:
            relax = 1.0  # (the over-relaxed step overshot: plain Guttman steps from here, which never raise it)
        elif prev - s <= tol * s:
            break
        prev = s
        g = cho_solve(factor, bx)  # the Guttman transform x <- L_w^+ B(x) x
        x = g + (relax - 1.0) * (g - x)
    return x - x.mean(axis=0)


def _pushes(d: np.ndarray, w: float, h: float) -> tuple[np.ndarray, np.ndarray]:
    """Of offsets d (k, 2) between box centres, which boxes (w, h apart at least) overlap, and for those the push
    (half the overlap, along the axis of least overlap) that moves the second box away from the first."""
    ox = w - np.abs(d[:, 0])
    oy = h - np.abs(d[:, 1])
    hit = (ox > 0) & (oy > 0)
    push = np.zeros((int(hit.sum()), 2))
    dx, dy = d[hit, 0], d[hit, 1]
    along_x = ox[hit] / w <= oy[hit] / h
    # Coincident boxes get a deterministic direction (by index) instead of a zero one.
    sx = np.where(dx == 0, 1.0, np.sign(dx))
    sy = np.where(dy == 0, 1.0, np.sign(dy))
    push[along_x, 0] = sx[along_x] * (ox[hit][along_x] / 2 + 0.5)
    push[~along_x, 1] = sy[~along_x] * (oy[hit][~along_x] / 2 + 0.5)
    return hit, push


def _summed(idx: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    """(n, 2): the rows of v (k, 2) summed per index idx (k,)."""
    return np.column_stack([np.bincount(idx, v[:, k], n) for k in (0, 1)]).astype(float, copy=False)


def _close_pairs(p: np.ndarray, w: float, h: float) -> np.ndarray:
    """(k, 2) index pairs i < j of points p whose boxes (w, h) may overlap (|dx| <= w and |dy| <= h), found by a
    k-d tree in the box-scaled coordinates instead of testing every pair."""
    return cKDTree(p / (w, h)).query_pairs(1.0, p=np.inf, output_type="ndarray").reshape(-1, 2)


def _close_to(a: np.ndarray, b: np.ndarray, w: float, h: float) -> tuple[np.ndarray, np.ndarray]:
    """Index arrays (i, j) of the points a[i], b[j] with |dx| <= w and |dy| <= h (k-d trees, as _close_pairs)."""
    s = (w, h)
    m = cKDTree(a / s).sparse_distance_matrix(cKDTree(b / s), 1.0, p=np.inf, output_type="ndarray")
    return m["i"].astype(int), m["j"].astype(int)


EXPAND_EVERY = 25  # pushing iterations after which nodes still overlapping get more room (the drawing x EXPAND)
EXPAND = 1.1


def separate(p: np.ndarray, box: tuple[float, float], iterations: int = 200,
             edges: list[tuple[int, int]] = (), cancelled: Callable[[], bool] | None = None) -> np.ndarray:
    """Push apart nodes whose boxes (w, h) overlap, along the axis of least overlap (keeps the overall shape); with
    edges, also every node (NODE_BOX) from the joint markers (MARKER_BOX at an edge's middle) of the edges it is not
    on: the node moves one way, the edge's two ends the other. Pushes that do not settle (crowded parts whose pushes
    cancel) are helped by spreading the whole drawing a little about its centre, so no overlap is left."""
    p = np.array(p, dtype=float)
    n = len(p)
    if n < 2:
        return p
    w, h = box
    ends = np.array([(a, b) for a, b in edges if a != b], dtype=int).reshape(-1, 2)
    mw, mh = (NODE_BOX[0] + MARKER_BOX[0]) / 2, (NODE_BOX[1] + MARKER_BOX[1]) / 2  # centre distances of no overlap
    shift = np.array([MARKER_SHIFT, 0.0])
    it = 0
    while True:
        _check(cancelled)
        # (only pairs near each other can overlap: a k-d tree finds them; testing all n^2 pairs and all
        # edges x nodes marker pairs each iteration took 6.8 s for a random graph of 500 bodies)
        pairs = _close_pairs(p, w, h)
        hit, push = _pushes(p[pairs[:, 1]] - p[pairs[:, 0]], w, h)
        delta = _summed(pairs[hit, 1], push, n) - _summed(pairs[hit, 0], push, n)
        moved = bool(hit.any())
        if len(ends):
            marker = 0.5 * (p[ends[:, 0]] + p[ends[:, 1]]) + shift
            e_idx, n_idx = _close_to(marker, p, mw, mh)
            keep = (n_idx != ends[e_idx, 0]) & (n_idx != ends[e_idx, 1])  # a joint's marker sits on its own edge
            e_idx, n_idx = e_idx[keep], n_idx[keep]
            hit, push = _pushes(p[n_idx] - marker[e_idx], mw, mh)
            delta += _summed(n_idx[hit], push, n)
            for end in (0, 1):
                delta -= _summed(ends[e_idx[hit], end], push, n)
            moved = moved or bool(hit.any())
        if not moved:
            break
        it += 1
        if it % EXPAND_EVERY == 0 or it >= iterations:
            # Still overlapping: spread out (every distance grows, so overlaps of distinct nodes end).
            c = p.mean(axis=0)
            p = c + (p - c) * EXPAND
        else:
            p += delta
    return p


@dataclass(frozen=True)
class LayoutGraph:
    """What a layout reads of a mechanism, frozen (a worker thread lays it out while the document is edited)."""

    names: tuple[str, ...]  # the bodies in document order
    edges: tuple[tuple[int, int], ...]  # per joint, the indices of its two bodies
    grounds: tuple[int, ...]  # indices of the ground bodies


def layout_graph(mech: Mechanism) -> LayoutGraph:
    """The body graph of `mech` as a LayoutGraph."""
    names = tuple(mech.body_names())
    index = {nm: i for i, nm in enumerate(names)}
    return LayoutGraph(names, tuple((index[j.bodies[0]], index[j.bodies[1]]) for j in mech.joints),
                       tuple(index[b.name] for b in mech.bodies if b.ground))


# A graph of more bodies than this in several parts (bodies not joined to each other: a contact scene's loose bodies)
# has each part laid out on its own and the parts packed side by side (_pack); a smaller one is laid out whole, as one
# stress drawing (a floor under a few loose bodies: the bodies above it), which is quick at that size. The stress of
# parts not joined means nothing (their distance is a made-up one), and laying them out whole costs O(n^2) memory and
# time per iteration: 3,000 loose bodies took 7 s (a Cholesky factor of a 3,000 x 3,000 matrix and its solves).
WHOLE_MAX = 100
PACK_GAP = 40.0  # scene units between the boxes of two packed parts (the node boxes' margin, as in CLEARANCE)
PACK_ASPECT = 1.6  # the packed drawing's width over its height, about (the window and the node boxes are wide)


def components(g: LayoutGraph) -> list[list[int]]:
    """The node indices of each connected part of `g` (bodies joined by joints), each in document order, the parts by
    their first body."""
    n = len(g.names)
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in g.edges:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    parts: dict[int, list[int]] = {}
    for i in range(n):
        parts.setdefault(root(i), []).append(i)
    return list(parts.values())


def _layout_whole(g: LayoutGraph, spacing: float, cancelled: Callable[[], bool] | None, max_iter: int) -> np.ndarray:
    """(n, 2) positions of every node of `g` by one stress drawing of the whole graph (separated, rotated so the ground
    is down, read left to right in document order)."""
    names, edges = g.names, list(g.edges)
    p = stress_majorization(len(names), edges, cancelled=cancelled, max_iter=max_iter) * spacing
    c = p[list(g.grounds)].mean(axis=0) if g.grounds else np.zeros(2)
    if len(names) > 1 and np.hypot(*c) > 1e-9:
        # Rotate so the ground's direction from the centre points down (y grows downwards in the scene).
        a = np.pi / 2 - np.arctan2(c[1], c[0])
    elif len(names) > 1:
        # No ground to set it: the drawing's long axis across (the window and the node boxes are wider than tall).
        u = np.linalg.eigh(p.T @ p)[1][:, -1]
        a = -np.arctan2(u[1], u[0])
    if len(names) > 1:
        cs, sn = np.cos(a), np.sin(a)
        p = p @ np.array([[cs, sn], [-sn, cs]])
    if len(names) > 1 and np.dot(np.arange(len(names)) - (len(names) - 1) / 2, p[:, 0]) < 0:
        # The stress does not tell a drawing from its mirror image: read the bodies left to right in document order
        # (a four-bar's crank left of its rocker, the five-bar's 'left' on the left), as drawings usually are.
        p[:, 0] = -p[:, 0]
    return separate(p * np.array([X_STRETCH, 1.0]), CLEARANCE, edges=edges, cancelled=cancelled)


def _subgraph(g: LayoutGraph, part: list[int], edges: list[tuple[int, int]]) -> LayoutGraph:
    """The part `part` (node indices of g, with `edges`, those of g's edges within it, in g's order) of g as a graph
    of its own."""
    index = {i: k for k, i in enumerate(part)}
    return LayoutGraph(tuple(g.names[i] for i in part), tuple((index[a], index[b]) for a, b in edges),
                       tuple(index[i] for i in g.grounds if i in index))


def _pack(blocks: list[np.ndarray]) -> list[np.ndarray]:
    """The node positions of each block (k_i, 2) moved so that the blocks' boxes (their nodes' centres padded by
    CLEARANCE / 2, and PACK_GAP apart) sit in rows, left to right in the order given, a row ending where it would get
    wider than the whole drawing should be (about PACK_ASPECT times as wide as tall, never narrower than the widest
    block); the whole centred on the origin."""
    lo = [b.min(axis=0) - np.array(CLEARANCE) / 2 for b in blocks]
    size = [b.max(axis=0) + np.array(CLEARANCE) / 2 - l + PACK_GAP for b, l in zip(blocks, lo)]
    area = sum(float(s[0] * s[1]) for s in size)
    width = max(max(float(s[0]) for s in size), float(np.sqrt(area * PACK_ASPECT)))
    out = []
    x = y = row_h = 0.0
    for b, l, s in zip(blocks, lo, size):
        if x > 0 and x + s[0] > width:
            x, y, row_h = 0.0, y + row_h, 0.0
        out.append(b - l + (x, y))
        x += float(s[0])
        row_h = max(row_h, float(s[1]))
    allp = np.concatenate(out)
    c = np.round(0.5 * (allp.min(axis=0) + allp.max(axis=0)))  # (whole units: a grid's CLEARANCE stays exact)
    return [p - c for p in out]


def _grid(k: int, cols: int) -> np.ndarray:
    """(k, 2) node centres of k loose bodies in rows of `cols`, CLEARANCE apart (their boxes clear of each other)."""
    i = np.arange(k)
    return np.column_stack([i % cols, i // cols]) * np.array(CLEARANCE, float)


def _parts(g: LayoutGraph) -> list[list[int]]:
    """The parts auto_layout draws on their own: every part of a graph of more than WHOLE_MAX bodies, else the whole."""
    return components(g) if len(g.names) > WHOLE_MAX else [list(range(len(g.names)))]


def drawing_work(mech: Mechanism | LayoutGraph) -> int:
    """What one stress iteration over every drawing auto_layout makes of `mech` costs, in pairs of bodies: the sum of
    the squared sizes of its drawings (a part of one body is placed in the grid, not drawn)."""
    g = mech if isinstance(mech, LayoutGraph) else layout_graph(mech)
    parts = _parts(g)
    return sum(len(q) ** 2 for q in parts if len(q) > 1 or len(parts) == 1)


def auto_layout(mech: Mechanism | LayoutGraph, spacing: float = NODE_SPACING,
                cancelled: Callable[[], bool] | None = None, max_iter: int = MAX_ITER) -> dict[str, tuple[float, float]]:
    """Positions for every body of `mech` (scene units, y down), ground bodies towards the bottom; `cancelled`, if
    given, is polled and its True stops the layout with LayoutCancelled; max_iter caps the stress iterations.

    A graph in one part, or of at most WHOLE_MAX bodies, is one stress drawing (_layout_whole). A larger one in several
    parts has each part of two or more bodies drawn so, on its own, and the parts packed in rows (the largest first);
    the bodies joined to nothing follow in a grid (those not ground first, so a floor ends at the bottom)."""
    g = mech if isinstance(mech, LayoutGraph) else layout_graph(mech)
    names = g.names
    parts = _parts(g)
    if len(parts) == 1:
        p = _layout_whole(g, spacing, cancelled, max_iter)
        return {nm: (round(float(x), 1), round(float(y), 1)) for nm, (x, y) in zip(names, p)}
    joined = sorted((q for q in parts if len(q) > 1), key=lambda q: (-len(q), q[0]))
    grounds = set(g.grounds)
    loose = [q[0] for q in parts if len(q) == 1]
    loose = [i for i in loose if i not in grounds] + [i for i in loose if i in grounds]
    order: list[list[int]] = []
    blocks: list[np.ndarray] = []
    drawn: dict[tuple, np.ndarray] = {}  # parts of the same shape (joints between the same places, the same grounds:
    # a hundred copies of one pendulum) have the same drawing: it is made once (1000 two-body parts took 8 s)
    part_of = {i: k for k, q in enumerate(joined) for i in q}
    edges: list[list[tuple[int, int]]] = [[] for _ in joined]
    for a, b in g.edges:
        if a in part_of:  # (not a loose body's joint to itself)
            edges[part_of[a]].append((a, b))
    for q, e in zip(joined, edges):
        _check(cancelled)
        sub = _subgraph(g, q, e)
        key = (len(q), sub.edges, sub.grounds)
        if key not in drawn:
            drawn[key] = _layout_whole(sub, spacing, cancelled, max_iter)
        order.append(q)
        blocks.append(drawn[key])
    if loose:
        # a grid about PACK_ASPECT times as wide as tall, or as wide as the joined parts' widest
        cols = int(np.ceil(np.sqrt(len(loose) * PACK_ASPECT * CLEARANCE[1] / CLEARANCE[0])))
        if blocks:
            widest = max(float(np.ptp(b[:, 0])) for b in blocks)
            cols = max(cols, int(widest // CLEARANCE[0]) + 1)
        order.append(loose)
        blocks.append(_grid(len(loose), min(cols, len(loose))))
    out: dict[str, tuple[float, float]] = {}
    for q, p in zip(order, _pack(blocks)):
        for i, (x, y) in zip(q, p):
            out[names[i]] = (round(float(x), 1), round(float(y), 1))
    return {nm: out[nm] for nm in names}
