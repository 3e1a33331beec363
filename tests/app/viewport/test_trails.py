"""Trails of many bodies: every trail is a part of one line item, and a run's trails under one key are drawn
incrementally (the frames not drawn before are added; a cursor moved back draws a prefix), the same polylines as a
drawing from scratch. User test s58: a 300-sphere run's trails were 300 line items, 150 ms of GL calls per paint of
the 3D view, and every frame rebuilt every trail's whole path."""

from __future__ import annotations

import numpy as np
import pytest

from tests.app.viewport.test_batched import gl_items, spheres

pytestmark = pytest.mark.gui


def _paths(n_bodies: int, frames: int, seed: int = 3) -> np.ndarray:
    """(frames, bodies, 3) random walks of the bodies' centres, some bodies resting part of the time."""
    rng = np.random.default_rng(seed)
    steps = 0.01 * rng.standard_normal((frames, n_bodies, 3))
    steps[frames // 2:, : n_bodies // 2] = 0.0  # half of them come to rest half-way
    return np.cumsum(steps, axis=0)


def _segments(vp) -> set:
    """The drawn trail segments, as a set of rounded pairs of points."""
    pos = np.asarray(vp._trail_item.pos, float).reshape(-1, 2, 3) if vp._trail_item.visible() else np.zeros((0, 2, 3))
    return {tuple(np.round(s, 5).ravel()) for s in pos}


def test_every_trail_is_a_part_of_one_item(shown_view):
    few, many = shown_view(spheres(2)), shown_view(spheres(300))
    for vp, n in ((few, 2), (many, 300)):
        P = _paths(n, 20)
        vp.set_trails({f"s{i}": P[:, i] for i in range(n)}, {f"s{i}": (f"s{i}", None) for i in range(n)})
    assert gl_items(many) == gl_items(few)  # (one line item per trail made 300 of them)
    many.view.grabFramebuffer()  # (painted)


def test_trails_drawn_frame_by_frame_are_the_paths_up_to_the_cursor(shown_view):
    n, frames = 40, 120
    vp, fresh = shown_view(spheres(n)), shown_view(spheres(n))
    P = _paths(n, frames)
    owners = {f"s{i}": (f"s{i}", None) for i in range(n)}
    for k in list(range(0, 60)) + [59, 30, 0, 119, 80, 119]:  # streaming, scrubbing back, jumping ahead
        vp.set_trails({f"s{i}": P[: k + 1, i] for i in range(n)}, owners, key="run 1")
        fresh.set_trails({f"s{i}": P[: k + 1, i] for i in range(n)}, owners)  # (no key: drawn from scratch)
        assert _segments(vp) == _segments(fresh), k
        for name, path in vp.trails().items():  # the paths as given
            np.testing.assert_array_equal(path, P[: k + 1, int(name[1:])])
    # every step of a body that moved is drawn (steps below the drawing's tolerance, of bodies at rest, are not)
    k, P32 = 119, P.astype(np.float32).astype(float)  # (as drawn: single precision)
    moving = [(tuple(np.round(P32[j, i], 5)), tuple(np.round(P32[j + 1, i], 5))) for i in range(n // 2, n)
              for j in range(k)]
    assert {a + b for a, b in moving} <= _segments(vp)
    # another run (another key) is drawn from scratch
    Q = P[::-1].copy()
    vp.set_trails({f"s{i}": Q[:10, i] for i in range(n)}, owners, key="run 2")
    fresh.set_trails({f"s{i}": Q[:10, i] for i in range(n)}, owners)
    assert _segments(vp) == _segments(fresh)
