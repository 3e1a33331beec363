"""The CSV writers (a contact run's Recording.save_csv, `linkwright simulate`; a driven run's Trajectory.save_csv,
`linkwright kinematics`) write a zero without its sign: a computed -0.0 was written '-0.0' (the cam jump's driver
effort in 84 of its first 101 rows, cam.qx and cam.qz; the double pendulum's accelerations).  Every other number is
written as before, as Python's repr, and reads back exactly."""

import csv
import io as textio

import numpy as np

from core import io
from core.contact import build_model, simulate
from core.io import number_text
from core.kinematics.trajectory import trajectory_of
from core.run import RunSpec, open_run
from tests.conftest import EXAMPLES


def _cells(text):
    rows = list(csv.reader(textio.StringIO(text)))
    return rows[0], rows[1:]


def test_number_text_drops_the_sign_of_zero_only():
    assert number_text(-0.0) == "0.0" and number_text(np.float64(-0.0)) == "0.0" and number_text(0.0) == "0.0"
    for x in (-1e-300, -5e-324, -2.5, 0.1 + 0.2, 1e308, -7, np.float64(-3.25)):
        assert number_text(x) == repr(float(x))


def test_a_contact_runs_csv_has_no_negative_zero_and_reads_back_exactly():
    rec = simulate(build_model(io.load(EXAMPLES / "contact_cam_jump.json")), t_end=0.2)
    effort = rec.driver_effort
    assert np.any((effort == 0.0) & np.signbit(effort))  # (the run computes -0.0: the case the writer must handle)
    out = textio.StringIO()
    rec.save_csv(out)
    head, rows = _cells(out.getvalue())
    assert not any(c == "-0.0" for row in rows for c in row)
    col = head.index("shaft.effort")
    got = np.array([float(row[col]) for row in rows])
    np.testing.assert_array_equal(got, effort[:, 0])  # the same numbers (-0.0 == 0.0), every digit kept
    assert all(row[col] == repr(float(x)) for row, x in zip(rows, effort[:, 0]) if x != 0.0)


def test_a_driven_runs_csv_has_no_negative_zero_and_reads_back_exactly():
    run = open_run(io.load(EXAMPLES / "double_pendulum.json"), RunSpec(kind="kinematics", t_end=1.0, steps=50))
    traj = trajectory_of(run)
    head, table = traj.columns()
    assert np.any((table == 0.0) & np.signbit(table))
    out = textio.StringIO()
    traj.save_csv(out)
    got_head, rows = _cells(out.getvalue())
    assert got_head == head
    assert not any(c == "-0.0" for row in rows for c in row)
    np.testing.assert_array_equal(np.array(rows, dtype=float), table)
