"""Switching a jointed document between kinematics and dynamics in the app: the Dynamics action adds or removes the
document's simulation section (undoably); the dynamics run goes through the contact run pipeline to the 3D view
and the plots, which offer the joint reactions."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from core import io
from core.model import SimulationSettings

from .test_contact_runs import finished

EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[3] / "resources" / "examples"

G = 9.81
M, L = 2.0, 1.0  # a uniform rod of 2 kg and 1 m, pinned at one end
ROD = {
    "format": "linkwright.mechanism", "version": 1, "name": "Rod pendulum", "space": "spatial", "gravity": [0, 0, -G],
    "bodies": [
        {"name": "ground", "ground": True},
        # no shape: a link drawn as a bar, its mass properties from the file (a uniform rod along its x axis)
        {"name": "rod", "mass": M, "com": [L / 2, 0, 0],
         "inertia": [[1e-3, 0, 0], [0, M * L * L / 12, 0], [0, 0, M * L * L / 12]], "points": {"tip": [L, 0, 0]}},
    ],
    # the pin at the rod's frame origin, axis y: the rod is drawn horizontal and released from rest
    "joints": [{"name": "pin", "type": "revolute", "bodies": ["ground", "rod"], "at": [0, 0, 0], "axis": [0, 1, 0]}],
    "drivers": [],
}


@pytest.fixture
def window(make_window, qtbot):
    def make(mech):
        win = make_window(mech)
        win.qtbot = qtbot
        return win

    return make


def test_a_rod_switched_to_dynamics_swings_and_its_joint_reaction_is_plotted(window, qtbot, tmp_path, dialogs):
    win = window(io.from_dict(ROD))
    pb, act, plots = win.playback, win.action_set.dynamics, win.plots
    # masses but no simulation section: a kinematics document (undriven: the driver message, nothing solved)
    assert pb.kind == "kinematics" and win.motion.kind_label.text().startswith("Run: driven kinematics")
    assert act.isEnabled() and not act.isChecked()
    assert win.motion.dynamics_button.defaultAction() is act and win.motion.dynamics_button.isVisible()
    qtbot.waitUntil(lambda: win.motion.status_label.text().startswith("drivers"), timeout=5000)

    assert "1 undriven" in win.status.drivers.text()  # the status bar's warning of a kinematics document
    act.trigger()  # the user checks Run ▸ Dynamics (or the Motion dock's Dynamics button)
    assert "1 free (dynamics)" in win.status.drivers.text()  # not a problem in a dynamics document
    mech = win.document.mechanism
    assert mech.simulation == SimulationSettings() and act.isChecked()
    assert pb.kind == "contact"
    assert win.motion.kind_label.text() == ("Run: contact dynamics: 1 moving body, 1 joint "
                                            "(geometrically implicit time-stepper)")
    win.action_set.run.trigger()  # Run (F5)
    finished(win)
    rec = pb.recording
    h, T = mech.simulation.dt, mech.simulation.duration
    assert rec.kind == "contact" and rec.ok and rec.count == round(T / h) + 1

    # the 3D view draws the shapeless rod (as in a kinematics run) and moves it with the frames
    assert "rod" in win.viewport.body_poses()
    win.motion.slider.setValue(0)
    np.testing.assert_allclose(win.viewport.body_poses()["rod"], np.eye(4), atol=1e-12)  # the design pose
    rod = rec.body_names.index("rod")
    for k in (rec.count // 3, rec.count - 1):
        win.motion.slider.setValue(k)
        P = win.viewport.body_poses()["rod"]
        np.testing.assert_allclose(P, rec.poses[k, rod], atol=1e-12)
        np.testing.assert_allclose(P[:3, 3], 0.0, atol=1e-9)  # the pin (the rod frame's origin) stays closed
    # it swings through hanging straight down (its x axis along -z) and, energy conserved, up to the horizontal on
    # the other side: its centre of mass back at the pin's height (to the stepper's first-order energy error, a
    # few per cent of m g d at this step: docs/contact.md)
    axis = rec.poses[: rec.count, rod, :3, 0]
    bottom = int(np.argmin(axis[:, 2]))
    assert axis[bottom, 2] < -0.999 and 0 < bottom < rec.count - 1
    com_z = (L / 2) * axis[bottom:, 2]
    assert abs(com_z.max()) < 0.02 * (L / 2) and axis[bottom:, 0].min() < -0.99

    # the joint reaction on the rod at release (at rest, so no centripetal part): about the pin,
    # I_p alpha = m g d with I_p = m L^2/12 + m d^2 = m L^2/3, d = L/2, so alpha = 3 g / (2 L); the centre of mass
    # falls with a = alpha d = 3 g / 4, and m a = m g + R gives R = m g / 4 upward, no horizontal part
    assert {"joint force", "joint force components", "joint torque components"} <= set(plots.modes())
    plots.set_mode("joint force components")
    assert plots.visible_series() == ["pin.x", "pin.y", "pin.z"]
    F = plots.joint_series()
    assert F.shape == (rec.count, 3) and np.isfinite(F).all()
    R = M * G / 4
    # frame 1 holds the first step's mean reaction (impulse / h): its vertical part is R to the step's first-order
    # error; its horizontal part is at most the centripetal force at the step's end, m (alpha h)^2 d
    alpha = 3 * G / (2 * L)
    assert F[1, 2] == pytest.approx(R, rel=1e-3)
    assert abs(F[1, 0]) <= M * (alpha * h) ** 2 * (L / 2) and F[1, 1] == 0.0
    plots.set_mode("joint force")
    assert plots.joint_series()[1, 0] == pytest.approx(R, rel=1e-3)  # |F|

    # the plot's CSV export writes the joint reaction series
    plots.set_mode("joint force components")
    out = tmp_path / "joint.csv"
    plots.export_csv(str(out))
    rows = list(csv.reader(out.open()))
    assert rows[0] == ["t [s]"] + [f"joint force components: pin.{x} [N]" for x in "xyz"]
    assert len(rows) == rec.count + 1 and float(rows[2][0]) == pytest.approx(h) and float(rows[2][3]) == F[1, 2]

    # File ▸ Export ▸ Run Data writes the joint reactions too (what `linkwright simulate` writes)
    ref = rec.contact_recording()
    assert ref.joint_names == ["pin"]
    np.testing.assert_array_equal(ref.joint_force[:, 0], F)

    # undo of the switch: the simulation section goes, the document is a kinematics one again
    win.document.undo_stack.undo()
    assert win.document.mechanism.simulation is None and pb.kind == "kinematics" and not act.isChecked()
    assert win.motion.kind_label.text().startswith("Run: driven kinematics")
    qtbot.waitUntil(lambda: win.motion.status_label.text().startswith("drivers"), timeout=5000)
    win.document.undo_stack.redo()
    assert win.document.mechanism.simulation == SimulationSettings() and pb.kind == "contact" and act.isChecked()
    finished(win)  # (the redo re-runs it by itself: a short run)
    act.trigger()  # unchecking removes the section again
    assert win.document.mechanism.simulation is None and pb.kind == "kinematics"
    assert not dialogs.calls


def test_the_dynamics_action_says_why_it_is_unavailable(window, qtbot):
    # a mechanism with no body with mass: nothing to simulate
    mech = io.load(EXAMPLES / "fourbar.json")
    mech.update_body("rocker", mass=None)
    win = window(mech)
    act = win.action_set.dynamics
    assert not act.isEnabled() and not act.isChecked() and "no body has a mass" in act.toolTip()
    assert win.editor.set_dynamics(True) is not None and win.document.mechanism.simulation is None
    # giving a link a mass makes it available (the action follows the document)
    win.editor.update_body("rocker", mass=0.4)
    assert act.isEnabled() and not act.isChecked() and win.playback.kind == "kinematics"
    # free bodies with mass always run as contact dynamics: checked, and not switchable
    win.files.open_example(EXAMPLES / "contact_sphere_drop.json")
    assert win.playback.kind == "contact" and act.isChecked() and not act.isEnabled()
    assert "free bodies with mass" in act.toolTip()
    finished(win)
    # a mechanism's dynamics run has its rank-based mobility analysed too (the status bar's tooltip says it is shown):
    # the pendulum's pin 1 and the free ball's 6 freedoms
    win.files.open_example(EXAMPLES / "contact_pendulum_strike.json")
    assert win.playback.kind == "contact"
    qtbot.waitUntil(lambda: win.status.drivers.toolTip().startswith("7 degree(s) of freedom (rank-based"), timeout=30000)
    finished(win)


def test_a_dynamics_document_the_stepper_refuses_shows_the_located_message(window, qtbot, dialogs):
    # the double pendulum's links have masses but neither shapes nor inertias: the contact stepper cannot simulate
    # them, which the Motion panel says (located) instead of guessing an inertia; switching back solves kinematics
    mech = io.load(EXAMPLES / "double_pendulum.json")
    while mech.drivers:
        mech.remove_driver(0)
    win = window(mech)
    pb = win.playback
    win.action_set.dynamics.trigger()
    assert pb.kind == "contact"
    qtbot.waitUntil(lambda: pb.status_kind == "error" and not pb.worker.running(), timeout=30000)
    assert win.motion.status_label.text() == "bodies[1]: a dynamic body needs a shape or an inertia"
    assert pb.recording.count == 0 and not dialogs.calls
    win.document.undo_stack.undo()
    assert pb.kind == "kinematics"
    qtbot.waitUntil(lambda: win.motion.status_label.text().startswith("drivers"), timeout=5000)


def test_the_point_traces_of_a_mechanism_swinging_in_x_z_are_drawn_in_x_z(window, qtbot):
    # the rod swings about y: its tip moves in the x-z plane (y stays 0), so the traces are x against z
    win = window(io.from_dict(ROD))
    win.action_set.dynamics.trigger()
    win.playback.run()
    finished(win)
    plots = win.plots
    assert plots.xy_plot.titleLabel.text == "Point traces (x-z plane)"
    rec = win.playback.recording
    x, z = plots.xy_curves[0].getData()
    np.testing.assert_allclose(x, rec.points[: rec.count, 0, 0])
    np.testing.assert_allclose(z, rec.points[: rec.count, 0, 2])
