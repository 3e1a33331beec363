"""The force arrows' scale: a typical weight is drawn half a typical body long (not a quarter of the scene), arrows
are proportional up to a knee and logarithmic beyond it, and the x box scales them all (docs/viewport.md, Run
overlays). User test s58: with the heaviest body's weight a quarter of the scene long, every contact of a resting
pile of hundreds of spheres showed an arrow several spheres long, a forest that hid the bodies."""

from __future__ import annotations

import math

import numpy as np

from app.viewport.widget import ARROW_KNEE_SIZES, ARROW_WEIGHT_SIZES
from core import io

R, MASS, G = 0.05, 0.1, 9.81


def _document(bodies, duration):
    return io.from_dict({"format": "linkwright.mechanism", "version": 1, "space": "spatial", "gravity": [0, 0, -G],
                         "bodies": [{"name": "floor", "ground": True,
                                     "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}}] + bodies,
                         "contact": {"friction": 0.5}, "simulation": {"dt": 0.01, "duration": duration}})


def resting_pile(n: int = 5):
    """n x n spheres (r = 5 cm, 0.1 kg) side by side on a floor, 1 mm apart, and (n-1) x (n-1) spheres in the pockets
    on top of them, 1 mm above touching: a pile resting after a few steps."""
    pitch = 2 * R + 0.001
    top = R + math.sqrt((2 * R) ** 2 - 2 * (pitch / 2) ** 2) + 0.001  # touching the four below, plus 1 mm
    spheres = [{"name": f"a{i}_{j}", "mass": MASS, "shape": {"type": "sphere", "radius": R},
                "pose": {"position": [i * pitch, j * pitch, R]}} for i in range(n) for j in range(n)]
    spheres += [{"name": f"b{i}_{j}", "mass": MASS, "shape": {"type": "sphere", "radius": R},
                 "pose": {"position": [(i + 0.5) * pitch, (j + 0.5) * pitch, top]}}
                for i in range(n - 1) for j in range(n - 1)]
    return _document(spheres, 0.3)


def _run(make_window, qtbot, mech):
    win = make_window(mech)
    pb = win.playback
    if not pb.is_running() and not pb.recording.complete:
        win.action_set.run.trigger()
    qtbot.waitUntil(lambda: pb.recording.complete and not pb.worker.running(), timeout=120000)
    assert pb.recording.ok, pb.recording.reason
    win.motion.slider.setValue(pb.recording.count - 1)
    return win


def test_a_resting_piles_arrows_are_about_a_body_long_not_a_quarter_of_the_scene(make_window, qtbot):
    win = _run(make_window, qtbot, resting_pile())
    vp, rec = win.viewport, win.playback.recording
    p, tip_n, _tip_f = vp.contact_arrows()
    assert len(p) > 50  # the floor's 25 contacts, and 4 below each of the 16 spheres on top
    lengths = np.linalg.norm(tip_n - p, axis=1)
    size = 2 * R  # every body is a sphere of this diameter
    lo, hi = vp.scene().extent
    assert float(np.linalg.norm(hi - lo)) > 5 * size  # (the old rule: a weight a quarter of this long)
    # a weight (0.98 N) is half a sphere long; the pile's contacts carry a fraction of one to about two weights: no
    # arrow is longer than the knee, and most are shorter than a sphere
    forces = rec.series("pair.normal_force")[rec.cursor][rec.series("pair.active")[rec.cursor].astype(bool)]
    np.testing.assert_allclose(np.sort(lengths), np.sort(ARROW_WEIGHT_SIZES * size / (MASS * G) * forces), atol=1e-12)
    loaded = np.sort(lengths)[np.sort(forces) > 0.01 * MASS * G]  # (the contacts carrying 1 % of a weight or more)
    assert len(loaded) >= 40 and np.median(loaded) < size
    assert lengths.max() <= ARROW_KNEE_SIZES * size + 1e-12
    assert vp.force_scale() == ARROW_WEIGHT_SIZES * size / (MASS * G)


def test_one_box_resting_on_a_floor_draws_its_weight_up_to_its_middle(make_window, qtbot):
    box = {"name": "box", "mass": 1.0, "shape": {"type": "box", "size": [0.2, 0.2, 0.2]},
           "pose": {"position": [0.0, 0.0, 0.1]}}
    win = _run(make_window, qtbot, _document([box], 0.2))
    p, tip_n, tip_f = win.viewport.contact_arrows()
    assert len(p) == 1 and abs(p[0, 2]) < 1e-6  # the contact point on the box's bottom face
    # its weight, half a box (0.2 m) long, straight up: the tip at the box's middle height
    np.testing.assert_allclose(tip_n[0] - p[0], [0.0, 0.0, 0.1], atol=1e-6)
    np.testing.assert_allclose(tip_f, p, atol=1e-6)  # no friction at rest


def test_arrows_are_proportional_up_to_the_knee_logarithmic_beyond_and_scaled_by_the_box(shown_view):
    mech = _document([{"name": "ball", "mass": 1.0, "shape": {"type": "sphere", "radius": 0.1},
                       "pose": {"position": [0.0, 0.0, 0.1]}}], 1.0)
    vp = shown_view(mech)
    vp.set_force_reference(G, ["ball"])  # the ball's weight, the ball's size (0.2 m)
    up = np.array([[0.0, 0.0, 1.0]])
    forces = np.array([1.0, 6.0, 12.0, 600.0]) * G  # a weight, the knee's 6 weights, twice that, an impact's peak
    pts = np.zeros((4, 3))
    vp.set_contacts(pts, forces[:, None] * up, np.zeros((4, 3)))
    lengths = vp.contact_arrows()[1][:, 2]
    knee = ARROW_KNEE_SIZES * 0.2
    np.testing.assert_allclose(lengths[:2], [0.1, knee], rtol=1e-12)
    np.testing.assert_allclose(lengths[2:], knee * (1 + np.log([2.0, 100.0])), rtol=1e-12)
    assert lengths[3] < 10 * knee  # (proportional, the impact's arrow was 60 m long: across any scene)
    vp.force_box.setValue(2.0)  # the user doubles every arrow, beyond the knee too
    np.testing.assert_allclose(vp.contact_arrows()[1][:, 2], 2 * lengths, rtol=1e-12)
    # without a reference (no gravity, no mass) the frame's median normal force is drawn half a body long
    vp.force_box.setValue(1.0)
    vp.set_force_reference(0.0, ["ball"])
    vp.set_contacts(np.zeros((3, 3)), np.array([[0, 0, 1.0], [0, 0, 2.0], [0, 0, 3.0]]), np.zeros((3, 3)))
    np.testing.assert_allclose(vp.contact_arrows()[1][:, 2], [0.05, 0.1, 0.15], rtol=1e-12)
