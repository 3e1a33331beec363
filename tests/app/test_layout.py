"""Auto layout: stress majorization as good as the Kamada–Kawai minimisation it replaces, no overlap left on crowded
graphs, and Ctrl+L computed off the GUI thread, applied as one undo step, dropped after a structural edit."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from PySide6.QtCore import QTimer
from scipy.optimize import minimize

from app.files import EXAMPLES_DIR
from app.layout import (CLEARANCE, MARKER_BOX, MARKER_SHIFT, MAX_ITER, NODE_BOX, NODE_SPACING, WHOLE_MAX, X_STRETCH,
                        LayoutCancelled, LayoutGraph, auto_layout, components, graph_distances, layout_graph, separate,
                        stress, stress_majorization)
from core import io
from core.generate import ladder
from core.model import Body, Joint, Mechanism, Pose


def random_mechanism(n: int, seed: int) -> Mechanism:
    """n bodies joined by a random tree plus n/2 random extra joints (crowded: many short cycles and long edges)."""
    rng = np.random.default_rng(seed)
    m = Mechanism(name=f"random{n}")
    for i in range(n):
        m.add_body(Body(f"b{i}", ground=(i == 0)))
    k = 0
    for i in range(1, n):
        m.add_joint(Joint(f"J{k}", "revolute", (f"b{int(rng.integers(i))}", f"b{i}")))
        k += 1
    for _ in range(n // 2):
        a, b = rng.choice(n, 2, replace=False)
        m.add_joint(Joint(f"J{k}", "revolute", (f"b{a}", f"b{b}")))
        k += 1
    return m


def reference_kamada_kawai(n: int, edges) -> np.ndarray:
    """The stress sum (|p_i - p_j| - d_ij)^2 / d_ij^2 minimised by a general optimiser (L-BFGS from a circle), as the
    layout did before: the reference the majorization is compared with."""
    d = graph_distances(n, edges)
    iu = np.triu_indices(n, 1)
    target = d[iu]
    weight = 1.0 / target**2
    ang = 2 * np.pi * np.arange(n) / n
    x0 = np.column_stack([np.cos(ang), np.sin(ang)]) * (n / (2 * np.pi))
    x0 += 0.01 * np.random.default_rng(0).standard_normal((n, 2))

    def energy(flat):
        p = flat.reshape(n, 2)
        diff = p[iu[0]] - p[iu[1]]
        dist = np.sqrt((diff**2).sum(axis=1)) + 1e-9
        r = dist - target
        coef = (weight * r / dist)[:, None] * diff
        grad = np.column_stack([np.bincount(iu[0], coef[:, k], n) - np.bincount(iu[1], coef[:, k], n)
                                for k in (0, 1)])
        return 0.5 * float(np.sum(weight * r**2)), grad.ravel()

    return minimize(energy, x0.ravel(), jac=True, method="L-BFGS-B", options={"maxiter": 500}).x.reshape(n, 2)


def edges_of(m: Mechanism) -> tuple[int, list[tuple[int, int]]]:
    g = layout_graph(m)
    return len(g.names), list(g.edges)


def overlapping_nodes(pos: dict, box) -> list[tuple[str, str]]:
    """Pairs of bodies whose boxes (w, h) around their positions overlap (1 scene unit of tolerance)."""
    names = list(pos)
    p = np.array([pos[k] for k in names])
    iu = np.triu_indices(len(p), 1)
    d = np.abs(p[iu[0]] - p[iu[1]])
    bad = (d[:, 0] < box[0] - 1.0) & (d[:, 1] < box[1] - 1.0)
    return [(names[i], names[j]) for i, j in zip(iu[0][bad], iu[1][bad])]


def markers_under_nodes(m: Mechanism, pos: dict) -> list[tuple[str, str]]:
    """(joint, body) pairs whose joint marker box (MARKER_BOX, MARKER_SHIFT right of its edge's middle) overlaps the
    node box (NODE_BOX) of a body the joint does not join."""
    out = []
    names = list(pos)
    p = np.array([pos[k] for k in names])
    w, h = (NODE_BOX[0] + MARKER_BOX[0]) / 2 - 1.0, (NODE_BOX[1] + MARKER_BOX[1]) / 2 - 1.0
    for j in m.joints:
        mid = 0.5 * (np.array(pos[j.bodies[0]]) + np.array(pos[j.bodies[1]])) + (MARKER_SHIFT, 0.0)
        d = np.abs(p - mid)
        for k in np.nonzero((d[:, 0] < w) & (d[:, 1] < h))[0]:
            if names[k] not in j.bodies:
                out.append((j.name, names[k]))
    return out


# ---- the layout itself ----------------------------------------------------------------------------------------

EXAMPLES = ("fourbar", "fivebar", "jansen", "stewart_6ups", "watt_sixbar", "stephenson_sixbar", "planar_3rrr",
            "contact_pile")


@pytest.mark.parametrize("name", EXAMPLES)
def test_stress_of_the_examples_is_no_worse_than_kamada_kawai(name):
    # Both minimise the same stress; on these small graphs they find the same minimum (2% for rounding and
    # convergence tolerance; a lower one is fine).
    n, edges = edges_of(io.load(EXAMPLES_DIR / f"{name}.json"))
    d = graph_distances(n, edges)
    new, ref = stress(stress_majorization(n, edges), d), stress(reference_kamada_kawai(n, edges), d)
    assert new <= 1.02 * ref + 1e-6, (new, ref)


@pytest.mark.parametrize("make, factor", [
    # A ladder is a long thin strip that folds: both methods stop in local minima of the stress, the majorization's
    # were 1.00-1.19 times the L-BFGS ones on ladders of 40-1000 bodies (measured), hence 1.25.
    (lambda: ladder(60), 1.25),
    (lambda: ladder(150), 1.25),
    # Random graphs: within 1% of each other on 80-1000 bodies (measured), hence 1.05.
    (lambda: random_mechanism(80, 3), 1.05),
    (lambda: random_mechanism(150, 2), 1.05),
])
def test_stress_of_larger_graphs_stays_within_a_factor_of_kamada_kawai(make, factor):
    n, edges = edges_of(make())
    d = graph_distances(n, edges)
    new, ref = stress(stress_majorization(n, edges), d), stress(reference_kamada_kawai(n, edges), d)
    assert new <= factor * ref, (new / ref)


def test_a_path_is_laid_out_at_its_graph_distances():
    # 5 nodes on a path: the stress is 0 exactly when they lie on a line at unit spacing.
    p = stress_majorization(5, [(0, 1), (1, 2), (2, 3), (3, 4)])
    d = np.hypot(*(p[:, None, :] - p[None, :, :]).transpose(2, 0, 1))
    assert d[0, 1:] == pytest.approx([1, 2, 3, 4], abs=0.02)


@pytest.mark.parametrize("n, seed", [(120, 1), (250, 5)])
def test_crowded_graphs_are_left_with_no_overlap(n, seed):
    """Random graphs put many nodes within one edge of each other: the separation did not settle in its 200 steps
    and left overlapping boxes (34 pairs at 200 bodies); it now spreads the drawing until none is left."""
    m = random_mechanism(n, seed)
    pos = auto_layout(m)
    assert set(pos) == set(m.body_names())
    assert overlapping_nodes(pos, CLEARANCE) == []
    assert markers_under_nodes(m, pos) == []


def test_examples_keep_ground_at_the_bottom_and_boxes_and_markers_clear():
    for name in EXAMPLES:
        m = io.load(EXAMPLES_DIR / f"{name}.json")
        pos = auto_layout(m)
        assert overlapping_nodes(pos, CLEARANCE) == [], name
        assert markers_under_nodes(m, pos) == [], name
        grounds = [b.name for b in m.bodies if b.ground]
        ys = [p[1] for p in pos.values()]
        # the ground bodies' centre is below the drawing's centre (scene y grows downwards)
        assert np.mean([pos[g][1] for g in grounds]) > np.mean(ys), name


def whole_layout_as_before(g, max_iter=MAX_ITER) -> dict:
    """auto_layout as it was before graphs were laid out part by part: one stress drawing of the whole graph, rotated
    so the ground is down (else its long axis across), mirrored to read in document order, stretched and separated."""
    names, edges = g.names, list(g.edges)
    p = stress_majorization(len(names), edges, max_iter=max_iter) * NODE_SPACING
    c = p[list(g.grounds)].mean(axis=0) if g.grounds else np.zeros(2)
    if np.hypot(*c) > 1e-9:
        a = np.pi / 2 - np.arctan2(c[1], c[0])
    else:
        u = np.linalg.eigh(p.T @ p)[1][:, -1]
        a = -np.arctan2(u[1], u[0])
    p = p @ np.array([[np.cos(a), np.sin(a)], [-np.sin(a), np.cos(a)]])
    if np.dot(np.arange(len(names)) - (len(names) - 1) / 2, p[:, 0]) < 0:
        p[:, 0] = -p[:, 0]
    p = separate(p * np.array([X_STRETCH, 1.0]), CLEARANCE, edges=edges)
    return {nm: (round(float(x), 1), round(float(y), 1)) for nm, (x, y) in zip(names, p)}


@pytest.mark.parametrize("make, max_iter", [
    (lambda: io.load(EXAMPLES_DIR / "fourbar.json"), MAX_ITER),  # one part
    (lambda: io.load(EXAMPLES_DIR / "contact_pile.json"), MAX_ITER),  # ten loose bodies: few, still drawn whole
    (lambda: io.load(EXAMPLES_DIR / "contact_pendulum_strike.json"), MAX_ITER),  # a pendulum and a loose ball
    (lambda: ladder(150), 20),  # one part of more than WHOLE_MAX bodies
])
def test_a_graph_in_one_part_or_a_small_one_is_laid_out_as_before(make, max_iter):
    g = layout_graph(make())
    assert len(components(g)) == 1 or len(g.names) <= WHOLE_MAX
    assert auto_layout(g, max_iter=max_iter) == whole_layout_as_before(g, max_iter)


def loose_bodies(n: int) -> LayoutGraph:
    """A floor (ground) and n bodies joined to nothing (a contact scene of loose bodies)."""
    return LayoutGraph(("floor",) + tuple(f"b{i}" for i in range(n)), (), (0,))


def test_thousands_of_loose_bodies_are_laid_out_at_once_in_a_grid_clear_of_each_other():
    """3,000 loose bodies were one stress drawing of a 3,001 x 3,001 matrix: 7 s of a file's opening."""
    g = loose_bodies(3000)
    pos = auto_layout(g, cancelled=lambda: False)  # (about 10 ms: no stress drawing of loose bodies)
    assert list(pos) == list(g.names)
    assert len(set(pos.values())) == len(pos)
    assert overlapping_nodes(pos, CLEARANCE) == []  # (their boxes, node and margin, apart)
    assert all(pos["floor"][1] > y for n, (x, y) in pos.items() if n != "floor")  # the floor below the others
    p = np.array(list(pos.values()))
    w, h = np.ptp(p, axis=0)
    assert 1.0 < w / h < 3.0  # wider than tall, as the window


def test_parts_are_each_laid_out_as_alone_and_packed_apart():
    # two ladders and loose bodies: more than WHOLE_MAX bodies in 2 + 30 parts
    a, b = ladder(60), ladder(40)
    names = tuple(f"a.{n}" for n in a.body_names()) + tuple(f"b.{n}" for n in b.body_names()) + tuple(
        f"loose{i}" for i in range(30))
    ga, gb = layout_graph(a), layout_graph(b)
    k = len(ga.names)
    g = LayoutGraph(names, ga.edges + tuple((i + k, j + k) for i, j in gb.edges), ga.grounds + tuple(i + k for i in gb.grounds))
    assert len(g.names) > WHOLE_MAX and len(components(g)) == 32
    pos = auto_layout(g)
    assert overlapping_nodes(pos, CLEARANCE) == []
    parts = {"a": [n for n in names if n.startswith("a.")], "b": [n for n in names if n.startswith("b.")],
             "loose": [n for n in names if n.startswith("loose")]}
    boxes = {}
    for key, part in parts.items():
        p = np.array([pos[n] for n in part])
        boxes[key] = (p.min(axis=0) - np.array(CLEARANCE) / 2, p.max(axis=0) + np.array(CLEARANCE) / 2)
    for k1, k2 in (("a", "b"), ("a", "loose"), ("b", "loose")):  # the parts' boxes do not overlap
        (lo1, hi1), (lo2, hi2) = boxes[k1], boxes[k2]
        assert np.any(hi1 <= lo2) or np.any(hi2 <= lo1), (k1, k2)
    # each ladder is drawn as it is alone, moved
    for key, alone in (("a", auto_layout(a)), ("b", auto_layout(b))):
        shift = np.array([pos[n] for n in parts[key]]) - np.array([alone[n.split(".", 1)[1]] for n in parts[key]])
        assert np.ptp(shift, axis=0).max() <= 0.2  # (rounding to 0.1)
    # and markers of its joints clear of the other nodes
    m = Mechanism(name="two ladders")
    for n in names:
        m.add_body(Body(n))
    for i, (u, v) in enumerate(g.edges):
        m.add_joint(Joint(f"J{i}", "revolute", (names[u], names[v])))
    assert markers_under_nodes(m, pos) == []


def test_a_layout_in_parts_polls_cancelled():
    a = layout_graph(ladder(60))
    k = len(a.names)
    g = LayoutGraph(a.names + tuple(f"c{n}" for n in a.names), a.edges + tuple((i + k, j + k) for i, j in a.edges),
                    a.grounds)
    calls = []

    def cancelled():
        calls.append(1)
        return len(calls) > 3

    with pytest.raises(LayoutCancelled):
        auto_layout(g, cancelled=cancelled)


# ---- Ctrl+L in the window -------------------------------------------------------------------------------------

def big_window(make_window, qtbot):
    win = make_window(ladder(500))
    win.document.undo_stack.clear()
    return win


def layout_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("linkwright-layout") and t.is_alive()]


def test_ctrl_l_computes_off_the_gui_thread_and_is_one_undo_step(make_window, qtbot):
    win = big_window(make_window, qtbot)
    doc = win.document
    before = dict(doc.mechanism.layout)
    ticks = []
    timer = QTimer()
    timer.setInterval(1)
    timer.timeout.connect(lambda: ticks.append(doc.undo_stack.count()))
    timer.start()
    win.action_set.layout.trigger()
    # The action returned before the layout was applied: it runs in a thread...
    assert doc.mechanism.layout == before and doc.undo_stack.count() == 0
    assert "Laying out 500 bodies" in win.statusBar().currentMessage()
    qtbot.waitUntil(lambda: doc.undo_stack.count() == 1, timeout=60000)
    timer.stop()
    # ...while the event loop went on turning (timer ticks before the layout came)
    assert ticks.count(0) >= 1
    assert not win.editor.layout_running() and layout_threads() == []
    after = dict(doc.mechanism.layout)
    assert after != before and set(after) == set(before)
    assert overlapping_nodes(after, CLEARANCE) == []
    assert doc.undo_stack.text(0) == "Auto layout"
    assert "Auto layout of 500 bodies" in win.statusBar().currentMessage()
    doc.undo_stack.undo()  # one step takes every position back
    assert doc.mechanism.layout == before


def test_a_second_ctrl_l_while_one_runs_starts_nothing(make_window, qtbot):
    win = big_window(make_window, qtbot)
    doc = win.document
    win.action_set.layout.trigger()
    win.action_set.layout.trigger()
    assert "already being computed" in win.statusBar().currentMessage()
    assert len(layout_threads()) <= 1
    qtbot.waitUntil(lambda: not win.editor.layout_running(), timeout=60000)
    qtbot.wait(50)  # (a second result, were there one, would be queued behind the first)
    assert doc.undo_stack.count() == 1


def test_an_edit_of_the_bodies_while_it_runs_drops_the_layout(make_window, qtbot):
    win = big_window(make_window, qtbot)
    doc = win.document
    win.action_set.layout.trigger()
    assert win.editor.layout_running()
    win.editor.add_body((0.0, -500.0))  # the body graph changes under the computation
    laid = dict(doc.mechanism.layout)
    qtbot.waitUntil(lambda: not win.editor.layout_running(), timeout=60000)
    assert doc.mechanism.layout == laid  # nothing moved
    assert doc.undo_stack.count() == 1 and doc.undo_stack.text(0).startswith("Add body")
    assert "Auto layout dropped" in win.statusBar().currentMessage()
    assert layout_threads() == []


def test_a_move_while_it_runs_does_not_drop_the_layout(make_window, qtbot):
    win = big_window(make_window, qtbot)
    doc = win.document
    win.action_set.layout.trigger()
    x, y = doc.mechanism.layout["b3"]
    win.editor.move({"b3": (x + 40.0, y)})  # positions only: the structure laid out is the same
    qtbot.waitUntil(lambda: not win.editor.layout_running(), timeout=60000)
    assert doc.undo_stack.count() == 2 and doc.undo_stack.text(1) == "Auto layout"


def test_opening_another_file_while_it_runs_cancels_it(make_window, qtbot):
    win = big_window(make_window, qtbot)
    win.action_set.layout.trigger()
    assert win.files.open_path(EXAMPLES_DIR / "fourbar.json", ask=False)
    opened = dict(win.document.mechanism.layout)
    assert not win.editor.layout_running()
    qtbot.waitUntil(lambda: layout_threads() == [], timeout=60000)  # it stops at its next step
    qtbot.wait(50)
    assert win.document.mechanism.layout == opened and win.document.undo_stack.count() == 0
    assert win.statusBar().currentMessage() == (
        "Opened fourbar.json as an untitled copy of the shipped example: Save asks for a file name")


def test_closing_the_window_while_it_runs_leaves_no_thread(make_window, qtbot):
    win = big_window(make_window, qtbot)
    win.action_set.layout.trigger()
    assert layout_threads()
    win.files.shutdown()  # what closing the window does
    assert layout_threads() == []
    qtbot.wait(50)
    assert win.document.undo_stack.count() == 0  # and nothing is applied afterwards


# ---- opening a file without a layout ---------------------------------------------------------------------------

def test_opening_a_large_file_without_layout_lays_it_out_quickly_and_says_ctrl_l_refines_it(make_window, tmp_path):
    import json

    from app.files import MAX_ITER, open_layout_iterations

    m = ladder(400)
    data = io.to_dict(m)
    del data["layout"]
    path = tmp_path / "big.json"
    path.write_text(json.dumps(data))
    # 400 bodies: fewer stress iterations than a full layout's (the open path's budget)
    assert open_layout_iterations(m) < MAX_ITER
    win = make_window(Mechanism(name="empty"))
    assert win.files.open_path(path, ask=False)
    lay = win.document.mechanism.layout
    assert set(lay) == set(m.body_names())
    assert overlapping_nodes(lay, CLEARANCE) == []
    assert markers_under_nodes(win.document.mechanism, lay) == []
    assert "Ctrl+L lays it out in full" in win.statusBar().currentMessage()
    assert not win.document.modified and layout_threads() == []


def test_opening_a_small_file_without_layout_gets_the_full_layout(make_window):
    from app.files import MAX_ITER, open_layout_iterations

    win = make_window(Mechanism(name="empty"))
    path = EXAMPLES_DIR / "stewart_6ups.json"
    assert open_layout_iterations(io.load(path)) == MAX_ITER
    assert win.files.open_path(path, ask=False)
    assert win.document.mechanism.layout == auto_layout(io.load(path))
    assert win.statusBar().currentMessage() == (
        "Opened stewart_6ups.json as an untitled copy of the shipped example: Save asks for a file name")


def test_opening_a_file_of_many_loose_bodies_without_layout_gets_the_full_layout_at_once(make_window, tmp_path):
    """A contact scene of loose bodies is drawn part by part: its layout is quick whole, not a coarser one."""
    import json

    from app.files import open_layout_iterations

    m = Mechanism(name="loose", space="spatial", gravity=(0.0, 0.0, -9.81))
    m.add_body(Body("floor", ground=True, shape={"type": "halfspace", "normal": [0, 0, 1], "offset": 0}))
    for i in range(400):
        m.add_body(Body(f"b{i}", mass=1.0, shape={"type": "sphere", "radius": 0.01},
                        pose=Pose(position=(0.03 * (i % 20), 0.03 * (i // 20), 0.02))))
    data = io.to_dict(m)
    data.pop("layout", None)
    path = tmp_path / "loose.json"
    path.write_text(json.dumps(data))
    assert open_layout_iterations(m) == MAX_ITER  # (a graph of 401 bodies in one part would get fewer)
    win = make_window(Mechanism(name="empty"))
    assert win.files.open_path(path, ask=False)
    lay = win.document.mechanism.layout
    assert lay == auto_layout(m)
    assert overlapping_nodes(lay, CLEARANCE) == []
    assert win.statusBar().currentMessage() == "Opened loose.json"


def test_the_open_layout_budget_counts_every_part_it_draws():
    # (review: the budget was set by the largest part alone, so many mid-sized parts could cost many times
    # OPEN_LAYOUT_WORK on the GUI thread) one stress iteration costs the sum of the parts' squared sizes
    from app.files import MAX_ITER, OPEN_LAYOUT_WORK, open_layout_iterations
    from app.layout import drawing_work

    one = layout_graph(ladder(150))
    n = len(one.names)
    names, edges = (), ()
    for k in range(10):  # ten copies of the ladder, not joined to each other
        names += tuple(f"{k}.{x}" for x in one.names)
        edges += tuple((i + k * n, j + k * n) for i, j in one.edges)
    many = LayoutGraph(names, edges, tuple(i + k * n for k in range(10) for i in one.grounds))
    assert drawing_work(one) == n * n and drawing_work(many) == 10 * n * n
    assert open_layout_iterations(one) == min(MAX_ITER, int(OPEN_LAYOUT_WORK / (n * n)))
    assert open_layout_iterations(many) == max(10, int(OPEN_LAYOUT_WORK / (10 * n * n))) < open_layout_iterations(one)
