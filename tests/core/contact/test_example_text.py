"""An example's description states what its run does: contact_disc_roll's ended in a cut-off formula
"(v = (v0 r - I w0 r... see docs/contact.md)" that pointed to a passage docs/contact.md does not have.  It now gives
the closed form in full, with the file's own values and sign convention, and the numbers it states are the run's."""

import json
import re

import numpy as np
import pytest

from core import io
from core.contact import build_model, simulate
from tests.conftest import EXAMPLES


def test_the_disc_roll_description_states_the_runs_rolling_speed_and_start():
    path = EXAMPLES / "contact_disc_roll.json"
    text = json.loads(path.read_text())["description"]
    assert "..." not in text and "docs/contact.md" not in text
    assert "v = (v0 + I w0 / (m r)) / (1 + I / (m r^2))" in text
    v = float(re.search(r"= ([0-9.]+) m/s, w = v / r", text).group(1))
    w = float(re.search(r"w = v / r = ([0-9.]+) rad/s", text).group(1))
    t_roll = float(re.search(r"from t = \(v0 - v\) / \(mu g\) = ([0-9.]+) s", text).group(1))
    # the values the formula is stated with are the file's: w0 about y negative (back-spin; rolling forward along +x
    # is w_y = +v / r), I = m r^2 / 2 about the disc's axis, which the pose turns to world y
    mech = io.load(path)
    disc = mech.body("disc")
    m, r = disc.mass, disc.shape["radius"]
    v0, w0 = disc.velocity.linear[0], disc.velocity.angular[1]
    assert (v0, w0, m, r) == (2.0, -5.0, 1.0, 0.1)
    model = build_model(mech)
    k = model.names.index("disc")
    axis_inertia = float(model.inertia_body[k][2, 2])
    assert axis_inertia == pytest.approx(m * r * r / 2, rel=1e-12)
    assert v == pytest.approx((v0 + axis_inertia * w0 / (m * r)) / (1 + axis_inertia / (m * r * r)), abs=1e-4)
    # and the run: rolling at that speed and spin, from the time stated (to the step)
    rec = simulate(model, t_end=0.6)
    assert rec.completed, rec.reason
    d = rec.body_names.index("disc")
    assert rec.velocity[-1, d, 0] == pytest.approx(v, abs=1e-4)
    assert rec.angular[-1, d, 1] == pytest.approx(w, abs=1e-3)
    slip = np.abs(rec.velocity[:, d, 0] - rec.angular[:, d, 1] * r)
    first = rec.t[np.flatnonzero(slip < 1e-8)[0]]
    assert t_roll <= first <= t_roll + model.dt + 1e-9
