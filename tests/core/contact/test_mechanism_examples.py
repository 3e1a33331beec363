"""The mechanism examples of the contact time-stepper (resources/examples/contact_*.json with joints): each runs
from the command line and behaves physically, checked against a criterion derived in the test."""

from pathlib import Path

import numpy as np
import pytest

from contact_scenes import check_invariants, total_energy
from core import io
from core.contact import build_model, initial_state
from core.contact.joints import joint_errors
from core.contact.recording import iter_steps
from core.transforms import quat_to_matrix

EXAMPLES = Path(__file__).resolve().parents[3] / "resources" / "examples"


def _model(name):
    return build_model(io.load(EXAMPLES / f"{name}.json"))


def _states(model, h, t_end):
    """Every state of a run of t_end at step h; every step converged and closed every joint to 1e-9 m and 1e-9 rad."""
    states = [initial_state(model)]
    for res in iter_steps(model, h, int(round(t_end / h))):
        assert res.converged, res.reason
        err = joint_errors(model, res.state)
        assert np.all(err <= 1e-9), (res.state.t, err)
        states.append(res.state)
    return states


def _energy(model, states):
    """(total energy, kinetic energy) of the dynamic bodies at each state (J): kinetic + gravity's potential."""
    E, K = [], []
    for s in states:
        e = k = 0.0
        for i in np.flatnonzero(model.dynamic):
            R = quat_to_matrix(s.q[i])
            k += 0.5 * model.mass[i] * s.v[i] @ s.v[i] + 0.5 * s.w[i] @ (R @ model.inertia_body[i] @ R.T) @ s.w[i]
            e -= model.mass[i] * model.gravity @ s.p[i]  # (s.p is the centre of mass)
        E.append(e + k)
        K.append(k)
    return np.array(E), np.array(K)


# ---- the four-bar swinging under gravity (no driver) ---------------------------------------------------------------


def test_fourbar_swing_keeps_its_joints_closed_and_its_energy_to_first_order():
    # no friction, no contact, no driver: the energy is constant; the step's error in it is first order in h and
    # oscillates without drift (docs/contact.md, Joints). Measured on this example: 7 % of the largest kinetic energy
    # at h = 0.01 s, 2.8 % at h / 2, and over 3 s no more than over the first second
    model = _model("contact_fourbar_swing")
    errs = []
    for h, t_end in ((0.01, 2.0), (0.005, 1.0)):
        states = _states(model, h, t_end)
        E, K = _energy(model, states)
        n1 = int(round(1.0 / h)) + 1  # the first second
        errs.append(np.abs(E[:n1] - E[0]).max() / K.max())
        if t_end > 1.0:
            # no drift: the second second's error is no larger than the first's (up to a margin for its oscillation)
            assert np.abs(E[n1:] - E[0]).max() <= 1.25 * np.abs(E[:n1] - E[0]).max()
        # it swings: the crank turns at more than 5 rad/s at some time (it falls from rest under the links' weight)
        crank = model.names.index("crank")
        assert max(abs(s.w[crank, 1]) for s in states) > 5.0
    assert errs[0] < 0.1, errs
    assert errs[1] < 0.6 * errs[0], errs  # first order: halving h at least nearly halves the error

