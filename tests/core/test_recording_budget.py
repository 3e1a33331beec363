"""A run's recording must fit the memory one run may take (core.validate.recording_budget, a quarter of the machine's
memory): a contact run records every candidate pair's channels at every frame, and a 64-body pile's frame is 0.35 MB,
so a long run could not be held at all (the app's recording allocated every planned frame at once: a MemoryError in
the GUI thread; the command line was killed or raised MemoryError).  A run whose planned recording is larger is
refused before it starts, located at the field that sets its length, with the numbers; a recording that cannot grow
for want of memory stops the run there with its rows kept.  The budget is made small here (no test allocates much)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import core.validate as validate
from core import io
from core.contact import record, simulate
from core.contact import recording as contact_recording
from core.errors import LinkwrightError
from core.run import RunSpec, frame_bytes, open_run

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"
GB = 25.3e9  # the machine's memory, as the tests make it


@pytest.fixture
def budget(monkeypatch):
    """Set the bytes one run may record (and the machine's memory the message quotes)."""

    def set_budget(n: int) -> None:
        monkeypatch.setattr(validate, "recording_budget", lambda: n)
        monkeypatch.setattr(validate, "physical_memory", lambda: int(GB))

    return set_budget


def test_a_frame_of_a_contact_run_is_its_time_poses_and_every_channel_in_doubles():
    run = open_run(io.load(EXAMPLES / "contact_sphere_drop.json"), RunSpec(t_end=0.1))
    # floor and ball: 2 poses of 16 numbers; 1 pair: 15 pair numbers of its 9 per-pair channels... counted from the
    # channels themselves: the time, 2 x 16 pose numbers and every channel's numbers
    values = sum(int(np.prod(c.shape)) for c in run.channels)
    assert frame_bytes(run) == 8 * (1 + 2 * 16 + values) == 608
    pile = open_run(io.load(EXAMPLES / "contact_pile.json"), RunSpec(t_end=0.1))
    assert len(pile.pair_names) == 35 and frame_bytes(pile) == 7584


def test_a_contact_run_whose_recording_exceeds_the_budget_is_refused_at_its_duration_with_the_numbers(budget):
    mech = io.load(EXAMPLES / "contact_sphere_drop.json")
    budget(608 * 50)  # 50 frames of the sphere drop (608 bytes each)
    with pytest.raises(LinkwrightError) as e:
        open_run(mech, RunSpec(t_end=1.0))  # 101 frames at dt = 0.01 s
    assert e.value.location == "simulation.duration"
    assert e.value.message == ("the run's recording would take 61.4 kB (101 frames of 608 bytes); one run may record "
                               "at most 30.4 kB on this machine (25% of its 25.3 GB of memory): end the run by "
                               "t = 0.49 s (50 frames) or sooner")
    assert len(open_run(mech, RunSpec(t_end=0.49)).times) == 50  # as said: that run starts
    with pytest.raises(LinkwrightError) as e:  # (the library's simulate too)
        simulate(mech, t_end=1.0)
    assert e.value.location == "simulation.duration"


def test_a_scene_of_which_not_two_frames_fit_is_refused_as_too_large(budget):
    budget(1000)
    with pytest.raises(LinkwrightError, match=r"the scene is too large to record a run of it"):
        open_run(io.load(EXAMPLES / "contact_pile.json"), RunSpec(t_end=0.1))


def test_a_kinematic_run_whose_recording_exceeds_the_budget_is_refused_at_its_steps(budget):
    mech = io.load(EXAMPLES / "fourbar.json")
    per = frame_bytes(open_run(mech, RunSpec(t_end=1.0, steps=10)))
    budget(per * 31)
    with pytest.raises(LinkwrightError) as e:
        open_run(mech, RunSpec(t_end=1.0, steps=100))
    assert e.value.location == "steps" and e.value.message.endswith(": take at most 30 steps")
    open_run(mech, RunSpec(t_end=1.0, steps=30))


def _args(*argv: str):
    from core.cli import build_parser

    return build_parser()[0].parse_args(list(argv))


def test_simulate_refuses_a_recording_over_the_budget_with_status_2_naming_the_option_typed(budget, capsys, tmp_path):
    from core.cli import run_command

    budget(608 * 50)
    f = str(EXAMPLES / "contact_sphere_drop.json")  # (its duration: 1 s)
    out = tmp_path / "run.csv"
    assert run_command(_args("simulate", f, "--t-end", "2", "--out", str(out))) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --t-end: the run's recording would take 122 kB (201 frames of 608 bytes)"), err
    assert err.endswith("end the run by t = 0.49 s (50 frames) or sooner")
    assert run_command(_args("simulate", f, "--out", str(out))) == 2  # the file's duration: named as the file's field
    assert capsys.readouterr().err.startswith("error: simulation.duration: the run's recording would take 61.4 kB")
    assert not out.exists()
    assert run_command(_args("kinematics", str(EXAMPLES / "fourbar.json"), "--steps", "100000")) == 2
    assert capsys.readouterr().err.startswith("error: --steps: the run's recording would take")


def test_record_grows_its_rows_as_they_come_and_keeps_the_same_numbers(monkeypatch):
    mech = io.load(EXAMPLES / "contact_pile.json")
    whole = record(open_run(mech, RunSpec(t_end=0.2)))
    sizes = []
    grown = contact_recording._grown
    monkeypatch.setattr(contact_recording, "FIRST_ROWS", 4)
    monkeypatch.setattr(contact_recording, "_grown", lambda s, n, rows: sizes.append(rows) or grown(s, n, rows))
    rec = record(open_run(mech, RunSpec(t_end=0.2)))
    assert sizes == [8, 16, 21]  # 21 rows: room for 4, then 8, 16 and the 21 planned (no more)
    for name in ("t", "position", "orientation", "active", "gap", "pn", "pf", "point_a", "normal", "iterations"):
        np.testing.assert_array_equal(getattr(rec, name), getattr(whole, name), err_msg=name)
    assert rec.completed and rec.n_frames == 21


def test_a_recording_that_cannot_grow_stops_the_run_with_its_rows_kept_status_3(monkeypatch, capsys, tmp_path):
    from core.cli import run_command

    def no_memory(series, n, rows):
        raise MemoryError

    monkeypatch.setattr(contact_recording, "FIRST_ROWS", 16)
    monkeypatch.setattr(contact_recording, "_grown", no_memory)
    rec = record(open_run(io.load(EXAMPLES / "contact_sphere_drop.json"), RunSpec(t_end=1.0)))
    assert rec.n_frames == 16 and not rec.completed
    assert rec.reason.startswith("stopped at t = 0.15 s: no memory left to record more rows (the 16 rows kept take ")
    out = tmp_path / "run.csv"
    assert run_command(_args("simulate", str(EXAMPLES / "contact_sphere_drop.json"), "--out", str(out))) == 3
    err = capsys.readouterr().err
    assert "simulation stopped early: stopped at t = 0.15 s: no memory left to record more rows" in err
    assert err.rstrip().endswith("(16 rows written)") and len(out.read_text().splitlines()) == 1 + 16


def test_a_step_that_finds_no_memory_stops_the_run_with_its_rows_kept(monkeypatch):
    from core.contact.recording import ContactRun

    frame = ContactRun._frame

    def short_of_memory(self, k, st, res):
        if k == 5:
            raise MemoryError
        return frame(self, k, st, res)

    monkeypatch.setattr(ContactRun, "_frame", short_of_memory)
    rec = record(open_run(io.load(EXAMPLES / "contact_sphere_drop.json"), RunSpec(t_end=1.0)))
    assert rec.n_frames == 5 and not rec.completed
    assert rec.reason.startswith("stopped at t = 0.04 s: no memory left to compute the next step (the 5 rows kept "
                                 "take "), rec.reason
