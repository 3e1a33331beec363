"""A run's recording must fit the memory one run may take (core.validate.recording_budget, a quarter of the machine's
memory): a contact run recorded every candidate pair's channels at every frame, and a 64-body pile's frame was 0.35
MB, so a long run could not be held at all (the app's recording allocated every planned frame at once: a MemoryError
in the GUI thread; the command line was killed or raised MemoryError).  A run whose planned recording is larger is
refused before it starts, located at the field that sets its length, with the numbers; a recording that cannot grow
for want of memory stops the run there with its rows kept.  A recording now holds the per-pair channels of the pairs
that come into contact range only (core.run.ColumnStore), and frame_bytes counts the pairs a run expects in range.
The budget is made small here (no test allocates much)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import core.validate as validate
from core import io
from core.contact import record, simulate
from core.contact import recording as contact_recording
from core.errors import LinkwrightError
import core.run as core_run
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


def test_a_frame_of_a_contact_run_is_its_time_poses_its_channels_and_the_pairs_expected_in_range():
    run = open_run(io.load(EXAMPLES / "contact_sphere_drop.json"), RunSpec(t_end=0.1))
    # floor and ball: 2 poses of 16 numbers; the channels not per pair in doubles; the per-pair channels for the
    # pairs the run expects in contact range (here its one pair): 19 doubles and the in-range flag's byte
    dense = sum(8 * int(np.prod(c.shape)) for c in run.channels if not c.sparse)
    per_pair = sum(c.label_bytes for c in run.channels if c.sparse)
    assert per_pair == 8 * 19 + 1 and run.expected_in_range == 1
    assert frame_bytes(run) == 8 * (1 + 2 * 16) + dense + per_pair == 601
    pile = open_run(io.load(EXAMPLES / "contact_pile.json"), RunSpec(t_end=0.1))
    # 5 spheres: 8 a body moved by forces, but not more than its 35 pairs
    assert len(pile.pair_names) == 35 and pile.expected_in_range == 35 and frame_bytes(pile) == 7339


def _spread(n: int, pitch: float = 1.0):
    """n spheres `pitch` apart resting on a floor: n (n + 1) / 2 pairs, of which the n with the floor touch."""
    bodies = [{"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}}]
    bodies += [{"name": f"s{k}", "mass": 0.1, "shape": {"type": "sphere", "radius": 0.05},
                "pose": {"position": [pitch * (k % 8), pitch * (k // 8), 0.05]}} for k in range(n)]
    return io.from_dict({"format": "linkwright.mechanism", "version": 1, "space": "spatial",
                         "gravity": [0, 0, -9.81], "bodies": bodies, "contact": {"friction": 0.4},
                         "simulation": {"dt": 0.01, "duration": 0.05}})


def test_a_contact_recording_scales_with_the_pairs_in_contact_range_not_with_every_pair():
    """40 spheres apart on a floor: 820 candidate pairs, 40 in contact range.  Before, every pair's channels were
    recorded at every frame (and frame_bytes counted them); the recording holds the 40 now, and frame_bytes counts
    the pairs the run expects (8 a body moved by forces: 320), not 820."""
    mech = _spread(40)
    run = open_run(mech, RunSpec())
    per_pair = sum(c.label_bytes for c in run.channels if c.sparse)
    assert len(run.pair_names) == 820 and run.expected_in_range == 320
    assert frame_bytes(run) == frame_bytes(run, 0) + 320 * per_pair
    assert frame_bytes(run, 820) - frame_bytes(run) == 500 * per_pair
    rec = record(run)
    floor = sorted(rec.pair_names.index(f"s{k}/floor") for k in range(40))
    assert sorted(rec.pair_columns.tolist()) == floor and rec.ever_active().tolist() == floor
    assert rec.pairs["gap"].shape == (6, 40) and rec.pairs["pf"].shape == (6, 40, 3)
    held = sum(a.nbytes for a in rec.pairs.values())
    assert held == 6 * 40 * (8 * 15 + 1)  # (active, gap, pn, pf, pr, point_a, point_b, normal of 40 pairs)
    # the other pairs' values follow from the poses: impulses 0, the bounding spheres' gap (1 m apart: 0.9 m)
    p = rec.pair_names.index("s0/s1")
    assert not rec.pn[:, p].any() and not rec.active[:, p].any()
    np.testing.assert_allclose(rec.gap[:, p], 0.9, atol=1e-9)
    np.testing.assert_allclose(rec.normal[:, p], np.tile([-1.0, 0.0, 0.0], (6, 1)), atol=1e-12)
    # ... the numbers the run's frames carry for them, bit for bit
    frames = list(open_run(mech, RunSpec()))
    for attr in ("active", "gap", "pn", "pf", "pr", "point_a", "point_b", "normal"):
        np.testing.assert_array_equal(np.array([f.values[f"pair.{attr}"] for f in frames]), getattr(rec, attr),
                                      err_msg=attr)


def test_a_pair_that_comes_into_range_late_has_its_earlier_rows_from_the_poses():
    """A column is added when its pair first comes into range; its rows before hold the pair's out-of-range values
    (computed from the recorded poses), as the frames had them."""
    mech = io.load(EXAMPLES / "contact_sphere_drop.json")
    run = open_run(mech, RunSpec(t_end=0.4))
    rec = record(run)
    first = int(np.flatnonzero(rec.pairs["active"][:, 0])[0])
    assert first > 5  # (the ball falls before it comes into range)
    frames = list(open_run(mech, RunSpec(t_end=0.4)))
    assert [f.ranged.tolist() for f in frames[1:first]] == [[]] * (first - 1)
    for attr in ("gap", "point_a", "point_b", "normal"):
        np.testing.assert_array_equal(np.array([f.values[f"pair.{attr}"] for f in frames]), rec.pairs[attr],
                                      err_msg=attr)


def test_a_contact_run_whose_recording_exceeds_the_budget_is_refused_at_its_duration_with_the_numbers(budget):
    mech = io.load(EXAMPLES / "contact_sphere_drop.json")
    budget(601 * 50)  # 50 frames of the sphere drop (601 bytes each)
    with pytest.raises(LinkwrightError) as e:
        open_run(mech, RunSpec(t_end=1.0))  # 101 frames at dt = 0.01 s
    assert e.value.location == "simulation.duration"
    assert e.value.message == ("the run's recording would take 60.7 kB (101 frames of 601 bytes); one run may record "
                               "at most 30.1 kB on this machine (25% of its 25.3 GB of memory): end the run by "
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


def test_a_kinematic_run_too_large_to_record_is_refused_before_its_drivers_are_evaluated(budget, monkeypatch):
    """User test s55 K6: a 200-driver chain at --steps 1000000 was refused for its recording size after 107 s, the
    run having evaluated every driver at every time first (driver_values_until). The size depends on the frame's
    size and the number of frames only: the refusal now comes before any driver is evaluated, with the same numbers
    as the run's own frame size gives."""
    import core.kinematics.trajectory as trajectory
    from core.kinematics import compile_model

    mech = io.load(EXAMPLES / "jansen.json")
    per = frame_bytes(open_run(mech, RunSpec(t_end=1.0, steps=10)))
    evaluated = []
    real = trajectory.driver_values_until
    monkeypatch.setattr(trajectory, "driver_values_until", lambda km, times: evaluated.append(len(times)) or
                        real(km, times))
    budget(per * 31)
    with pytest.raises(LinkwrightError) as e:
        open_run(mech, RunSpec(t_end=1.0, steps=1_000_000))
    assert e.value.location == "steps" and e.value.message.endswith(": take at most 30 steps")
    assert evaluated == []  # refused before the drivers were evaluated at the million times
    open_run(mech, RunSpec(t_end=1.0, steps=30))
    assert evaluated == [31]
    assert core_run.kinematic_frame_bytes(compile_model(mech)) == per  # the size known before, as the run's


def test_steps_too_short_to_tell_apart_are_refused_at_the_steps():
    """User test s55 K9: `--t-end 5e-324 --steps 3` was refused as `times: times must increase`, a field the user
    never typed. The steps (t_end / steps rounds to 0) are named, and the command says --steps."""
    mech = io.load(EXAMPLES / "fourbar.json")
    t_end, steps = 5e-324, 3
    assert t_end / steps == 0.0  # (the premise: the step underflows)
    with pytest.raises(LinkwrightError) as e:
        open_run(mech, RunSpec(t_end=t_end, steps=steps))
    assert e.value.location == "steps" and "cannot be told apart" in e.value.message
    assert e.value.message.startswith(f"{steps} steps of an end time of {t_end!r} s cannot be told apart")
    open_run(mech, RunSpec(t_end=1e-300, steps=7))  # tiny, but steps that increase: runs


def _args(*argv: str):
    from core.cli import build_parser

    return build_parser()[0].parse_args(list(argv))


def test_simulate_refuses_a_recording_over_the_budget_with_status_2_naming_the_option_typed(budget, capsys, tmp_path):
    from core.cli import run_command

    budget(601 * 50)
    f = str(EXAMPLES / "contact_sphere_drop.json")  # (its duration: 1 s)
    out = tmp_path / "run.csv"
    assert run_command(_args("simulate", f, "--t-end", "2", "--out", str(out))) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --t-end: the run's recording would take 121 kB (201 frames of 601 bytes)"), err
    assert err.endswith("end the run by t = 0.49 s (50 frames) or sooner")
    assert run_command(_args("simulate", f, "--out", str(out))) == 2  # the file's duration: named as the file's field
    assert capsys.readouterr().err.startswith("error: simulation.duration: the run's recording would take 60.7 kB")
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
