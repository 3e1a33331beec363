"""The 3D view during a run: trails up to the cursor, force arrows (scale, toggle), transforms only, refitting."""

from __future__ import annotations

import math

import numpy as np

from core import io

EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[3] / "resources" / "examples"


def test_the_coupler_curve_is_traced_up_to_the_cursor(make_window, qtbot):
    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    rec = win.playback.recording
    qtbot.waitUntil(lambda: rec.complete and rec.count == 101, timeout=10000)
    for k in (1, 40, 100):
        win.motion.slider.setValue(k)
        trail = win.viewport.trails()["coupler.P"]
        np.testing.assert_allclose(trail, rec.points[: k + 1, 0], atol=1e-12)  # every frame up to the cursor
    win.viewport.set_trails_visible(False)
    assert not win.viewport._trail_item.visible()


def test_scrubbing_a_contact_run_moves_shapes_by_transform_only(make_window, qtbot, monkeypatch):
    win = make_window(io.load(EXAMPLES / "contact_sphere_drop.json"))
    rec = win.playback.recording
    qtbot.waitUntil(lambda: rec.complete and rec.count == 101, timeout=60000)
    qtbot.waitUntil(lambda: not win.playback.worker.running(), timeout=5000)
    vp = win.viewport
    vp.view.grabFramebuffer()
    uploads = dict(vp._solid.uploads)
    mesh = next(bg for bg in vp.scene().bodies if bg.name == "ball").mesh
    for k in (0, 30, 60, 100):
        win.motion.slider.setValue(k)
        # the ball falls from z = 0.5 m: its body frame is where the recording puts it, and its vertices with it
        T = rec.poses[k, rec.body_names.index("ball")]
        np.testing.assert_allclose(vp.body_poses()["ball"], T, atol=1e-12)
        np.testing.assert_allclose(vp.drawn_vertices("body", "ball"), mesh[0] @ T[:3, :3].T + T[:3, 3], atol=1e-5)
        vp.view.grabFramebuffer()
    assert next(bg for bg in vp.scene().bodies if bg.name == "ball").mesh is mesh
    assert vp._solid.uploads["faces"] == uploads["faces"] and vp._solid.uploads["colours"] == uploads["colours"]


def test_force_arrows_scale_and_toggle(make_window, qtbot):
    win = make_window(io.load(EXAMPLES / "contact_sphere_drop.json"))
    rec = win.playback.recording
    qtbot.waitUntil(lambda: rec.complete and rec.count == 101, timeout=60000)
    vp = win.viewport
    win.motion.slider.setValue(100)  # resting: one contact, normal force m g = 9.81 N straight up
    p, tip_n, _tip_f = vp.contact_arrows()
    # at factor 1 the typical weight (the one ball's, 1 kg * 9.81 m/s^2) is half a typical body size long: the ball's
    # diameter, 0.2 m (its weight, as the normal force of the ball at rest, reaches its centre)
    length = 0.1
    np.testing.assert_allclose(tip_n - p, [[0.0, 0.0, length]], atol=1e-9)
    vp.force_box.setValue(2.0)  # the user lengthens the arrows
    np.testing.assert_allclose(vp.contact_arrows()[1] - p, [[0.0, 0.0, 2 * length]], atol=1e-9)
    assert vp._normal_item.visible()
    vp.set_forces_visible(False)
    assert not vp._normal_item.visible() and not vp._contact_item.visible()
    vp.set_forces_visible(True)
    assert vp._normal_item.visible()
    win.motion.slider.setValue(5)  # in the air: no contact, no arrow
    assert len(vp.contact_arrows()[0]) == 0 and not vp._normal_item.visible()


def test_force_arrows_are_drawn_over_the_bodies_they_act_on(make_window, qtbot):
    """The normal force on body A points from the contact point into A: a depth-tested arrow was hidden inside the
    box (toggling Forces changed no pixel). Every part of the arrow's shaft must show."""
    from app.export import grab_viewport, image_to_array

    win = make_window(io.load(EXAMPLES / "contact_box_slide.json"))
    rec = win.playback.recording
    qtbot.waitUntil(lambda: rec.complete and rec.count == 101, timeout=60000)
    vp = win.viewport
    win.motion.slider.setValue(10)  # sliding on the floor: one contact
    vp.force_box.setValue(3.0)  # long enough to measure on screen; the lower part is inside the 0.2 m box
    p, tip_n, _tip_f = vp.contact_arrows()
    assert len(p) == 1
    on = image_to_array(grab_viewport(vp))
    vp.set_forces_visible(False)
    off = image_to_array(grab_viewport(vp))
    vp.set_forces_visible(True)
    changed = np.any(on != off, axis=2)
    (x0, y0), (x1, y1) = vp.project(p[0]), vp.project(tip_n[0])
    assert math.hypot(x1 - x0, y1 - y0) > 40  # the shaft is tens of pixels long on screen
    for f in np.linspace(0.1, 0.8, 8):  # along the shaft (the head is drawn at the tip)
        x, y = round(x0 + f * (x1 - x0)), round(y0 + f * (y1 - y0))
        assert changed[y - 2:y + 3, x - 2:x + 3].any(), f"the arrow is hidden at {f:.0%} of its length"


def test_typed_coordinates_far_away_refit_the_view(make_window, qtbot):
    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    vp = win.viewport
    qtbot.waitUntil(lambda: win.playback.recording.complete, timeout=10000)
    far = (40.0, 30.0, 0.0)  # D typed 50 m away (the drawing is ~4 m wide)
    assert win.editor.update_joint("D", at=far) is None
    vp.scene()  # the pending update (and its refit) now
    x, y = vp.project(far)
    assert 0 <= x <= vp.view.width() and 0 <= y <= vp.view.height()
    x, y = vp.project((0.0, 0.0, 0.0))  # and A, at the origin, is still in view
    assert 0 <= x <= vp.view.width() and 0 <= y <= vp.view.height()
    assert math.isfinite(vp.view.opts["distance"])


def test_the_design_configuration_ghost_stays_while_the_bodies_move(make_window, qtbot):
    win = make_window(io.load(EXAMPLES / "fourbar.json"))
    rec = win.playback.recording
    qtbot.waitUntil(lambda: rec.complete and rec.count == 101, timeout=10000)
    vp = win.viewport
    assert vp.ghost_poses("design") == {}
    vp.set_design_ghost(True)
    win.motion.slider.setValue(25)  # the crank has turned by 2 pi * 0.25 = 90 degrees
    ghosts = vp.ghost_poses("design")
    assert set(ghosts) == {"crank", "coupler", "rocker"}  # every moving body; the ground has no ghost
    np.testing.assert_allclose(ghosts["crank"], np.eye(4), atol=1e-12)  # the drawing: every coordinate zero
    np.testing.assert_allclose(vp.body_poses()["crank"][:2, :2], [[0.0, -1.0], [1.0, 0.0]], atol=1e-9)
    vp.set_design_ghost(False)
    assert vp.ghost_poses("design") == {}


def test_the_view_frames_the_whole_motion_of_a_contact_run(make_window, qtbot):
    win = make_window(io.load(EXAMPLES / "contact_box_slide.json"))
    rec = win.playback.recording
    qtbot.waitUntil(lambda: rec.complete and rec.count == 101, timeout=60000)
    vp = win.viewport
    # the box slides v0^2 / (2 mu g) = 4 / (2 * 0.3 * 9.81) = 0.68 m: its last position is in view, as is the first
    for k in (0, 100):
        p = rec.values["body.position"][k, 0]
        assert abs(p[0] - (0.0 if k == 0 else 4 / (2 * 0.3 * 9.81))) < 0.01
        x, y = vp.project(p)
        assert 0 <= x <= vp.view.width() and 0 <= y <= vp.view.height()


def _pile_view(shown_view, walls=None):
    """A shown 3D view of the pile in its bin, iso view (walls: the names of the walls kept; None: all four)."""
    data = io.load(EXAMPLES / "contact_pile.json")
    for name in [b.name for b in data.bodies if b.name.startswith("wall_")]:
        if walls is not None and name not in walls:
            data.remove_body(name)
    return shown_view(data)


def _frame(vp) -> np.ndarray:
    """The 3D view as the window draws it (the selection's colours included: an export's grab leaves them out)."""
    from app.export import image_to_array

    vp.scene()  # (a pending document change applied first)
    return image_to_array(vp.view.grabFramebuffer()).astype(int)


def test_trails_show_through_the_walls_of_a_bin(qtbot, shown_view):
    """contact_pile's floor and four walls are translucent patches. They were drawn before the trails and wrote
    depth, so every part of a trail behind a wall (in the iso view: the whole inside of the bin) failed the depth
    test: toggling Trails changed almost no pixel. Each trail must show wherever no body stands in front of it."""
    vp = _pile_view(shown_view)
    walls = {bg.name for bg in vp.scene().bodies if bg.unbounded}
    assert {"floor", "wall_px", "wall_nx", "wall_py", "wall_ny"} <= walls
    z = np.linspace(0.02, 0.5, 40)[:, None]
    trails = {f"c{k}": np.hstack([np.full_like(z, x), np.full_like(z, y), z])  # vertical paths in the bin's corners
              for k, (x, y) in enumerate([(0.24, 0.24), (0.24, -0.24), (-0.24, 0.24), (-0.24, -0.24)])}
    vp.set_trails(trails)
    on = _frame(vp)
    vp.set_trails_visible(False)
    off = _frame(vp)
    vp.set_trails_visible(True)
    changed = np.any(on != off, axis=2)
    s = on.shape[1] / vp.view.width()  # framebuffer pixels per widget pixel
    seen = hidden = 0
    for path in trails.values():
        for p in path[1:-1]:
            x, y = vp.project(p)
            if not (3 <= x <= vp.view.width() - 3 and 3 <= y <= vp.view.height() - 3):
                continue  # out of the frame
            if vp.pick(x, y) not in walls | {None}:
                continue  # a body is under this pixel (in front of the trail or behind it): not judged
            i, j = round(y * s), round(x * s)
            if changed[i - 2:i + 3, j - 2:j + 3].any():
                seen += 1
            else:
                hidden += 1
    assert seen + hidden > 100
    assert hidden <= 0.05 * (seen + hidden), f"{hidden} of {seen + hidden} trail points hidden by a wall"
    np.testing.assert_array_equal(_frame(vp), on)  # the next frame is the same (depth writes restored for the clear)


def test_walls_do_not_cover_the_bodies_in_front_of_them(qtbot, shown_view):
    """The walls the camera looks at from the bin's inside lie behind every body: no body pixel changes when they
    are drawn (a patch that writes no depth is still depth-tested against the bodies drawn before it)."""
    full = _pile_view(shown_view)
    _, V = full.camera_matrices()
    eye = np.linalg.inv(V)[:3, 3]
    back = {b.name for b in full._doc.mechanism.bodies
            if b.name.startswith("wall_") and np.dot(b.shape["normal"], eye) > b.shape["offset"]}
    assert len(back) == 2  # iso: two walls behind the pile, two in front of it
    views = _pile_view(shown_view, walls=back), _pile_view(shown_view, walls=set())
    for vp in views:
        for key in ("rotation", "center", "distance"):
            vp.view.opts[key] = full.view.opts[key]
    a, b = (_frame(vp) for vp in views)
    s = a.shape[1] / full.view.width()
    bodies = {bg.name for bg in full.scene().bodies if not bg.unbounded}
    body_px = np.zeros(a.shape[:2], bool)
    for i in range(4, a.shape[0] - 4, 4):
        for j in range(4, a.shape[1] - 4, 4):
            if views[0].pick(j / s, i / s) in bodies:
                body_px[i - 1:i + 2, j - 1:j + 2] = True  # the sample and its neighbours (still on the body)
    assert body_px.sum() > 2000
    walls_drawn = np.any(a != b, axis=2)
    assert (walls_drawn & ~body_px).sum() > 5000  # the back walls are drawn (beside and behind the bodies)
    assert (walls_drawn & body_px).sum() <= 0.01 * body_px.sum()  # (a body's outline may differ by a pixel)


def test_a_selected_wall_stays_translucent(qtbot, shown_view):
    """Selecting a wall of the pile's bin drew it opaque orange: the sphere behind the front wall (wall_px, right in
    the iso view) was hidden. Selected or highlighted, a wall is tinted towards the selection's colour and stays
    translucent: the bodies behind it still show through it, shaded as before."""
    from app.viewport.widget import PALETTE

    vp = _pile_view(shown_view)
    _, V = vp.camera_matrices()
    eye = np.linalg.inv(V)[:3, 3]
    wall = next(b for b in vp._doc.mechanism.bodies if b.name == "wall_px")
    assert np.dot(wall.shape["normal"], eye) <= wall.shape["offset"]  # between the camera and the pile
    plain = _frame(vp)
    s = plain.shape[1] / vp.view.width()
    bodies = {bg.name for bg in vp.scene().bodies if not bg.unbounded}
    for mark in (lambda: vp._sel.set(bodies={"wall_px"}), lambda: vp._sel.highlight(bodies={"wall_px"})):
        mark()
        marked = _frame(vp)
        tint = np.any(marked != plain, axis=2)  # the wall's area on screen
        assert tint.sum() > 5000  # the selection shows
        under = np.zeros_like(tint)  # samples of the wall's area where a body lies behind it
        beside = np.zeros_like(tint)  # and where none does
        for i in range(4, tint.shape[0] - 4, 4):
            for j in range(4, tint.shape[1] - 4, 4):
                if tint[i, j]:
                    (under if vp.pick(j / s, i / s) in bodies else beside)[i, j] = True
        assert under.sum() > 80 and beside.sum() > 1000  # (the sphere behind the wall)
        # through a translucent wall the body's shading stays (an opaque one is one flat colour)
        assert marked[under].std(axis=0).mean() > 0.5 * plain[under].std(axis=0).mean()
        change = (marked - plain)[beside].mean(axis=0)
        assert np.abs(change).max() > 15  # the wall is tinted (selected: orange, highlighted: cyan)
        # and the body differs from the wall beside it
        assert np.abs(marked[under].mean(axis=0) - marked[beside].mean(axis=0)).max() > 20
        assert vp.drawn_colour("body", "wall_px")[3] < 1.0
        vp._sel.set()
        vp._sel.highlight()
        assert np.allclose(vp.drawn_colour("body", "wall_px"), PALETTE["plane"], atol=0.5 / 255)
    np.testing.assert_array_equal(_frame(vp), plain)
