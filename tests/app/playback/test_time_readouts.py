"""Time readouts tell a run's frames apart: the Motion dock's slider readout, its progress bar and the Plots panel's
cursor readout show as many digits as the run's step needs (with dt below 1 ms every frame read t = 0.000 s; user
test s52, F5), while a run of ordinary steps reads as it always did."""

from __future__ import annotations

import pytest

from app.playback.recording import time_text
from core import io

EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[3] / "resources" / "examples"


@pytest.mark.parametrize("t, step, kw, text", [
    (0.52, 0.01, {}, "0.520"),  # ordinary: three decimals, as always
    (0.52, None, {}, "0.520"),
    (1.0, 0.001, {}, "1.000"),  # (a millisecond still reads in three decimals)
    (0.00037, 1e-5, {}, "0.00037"),  # a decimal more per tenfold shorter step
    (0.5203, 2.5e-4, {}, "0.5203"),
    (3.7e-7, 1e-8, {}, "3.7e-07"),  # below a microsecond: the digits the step needs, in exponent form
    (1.23e-7, 1e-9, {}, "1.23e-07"),
    (0.0, 1e-9, {}, "0"),
    (0.54, 0.01, {"significant": 4}, "0.54"),  # the plots' readout: four significant digits, as always
    (1.234, 0.01, {"significant": 4}, "1.234"),
    (123.45, 0.01, {"significant": 4}, "123.45"),  # (four would read 123.5 for two frames)
    (0.52, 1 / 25, {"decimals": 2}, "0.52"),  # an animation's stamp at 25 fps, as always
    (1e-6, 1e-6, {"decimals": 2}, "0.000001"),
])
def test_time_text_keeps_the_ordinary_form_and_adds_the_digits_a_short_step_needs(t, step, kw, text):
    assert time_text(t, step, **kw) == text


@pytest.mark.parametrize("step", [1e-3, 4e-4, 1e-5, 3e-7, 1e-8, 1e-9])
def test_consecutive_frames_read_differently(step):
    times = [k * step for k in range(2001)]
    for kw in ({}, {"significant": 4}, {"decimals": 2}):
        texts = [time_text(t, step, **kw) for t in times]
        assert all(a != b for a, b in zip(texts, texts[1:])), (step, kw)


@pytest.mark.parametrize("dt, at_37, end", [(1e-5, "0.00037", "0.00100"), (1e-8, "3.7e-07", "1e-06")])
def test_the_motion_dock_and_the_plots_read_a_short_steps_frames_apart(make_window, qtbot, dt, at_37, end):
    mech = io.load(EXAMPLES / "contact_sphere_drop.json")
    mech.set_simulation(dt=dt, duration=100 * dt)  # 100 steps: runs by itself
    win = make_window(mech)
    pb = win.playback
    qtbot.waitUntil(lambda: pb.recording.complete and not pb.worker.running(), timeout=60000)
    assert pb.recording.ok and pb.recording.count == 101
    win.motion.slider.setValue(37)
    assert win.motion.time_label.text() == f"t = {at_37} s  37/100"
    assert win.motion.progress_bar.format() == f"t = {end} / {end} s"
    win.plots.set_mode("gap")
    assert win.plots.readout.text().startswith(f"t = {at_37} s: ")
    win.motion.slider.setValue(38)
    assert win.motion.time_label.text() != f"t = {at_37} s  37/100"


def test_an_ordinary_run_reads_as_before(make_window, qtbot):
    win = make_window(io.load(EXAMPLES / "contact_sphere_drop.json"))  # dt = 0.01 s, 1 s
    pb = win.playback
    qtbot.waitUntil(lambda: pb.recording.complete and not pb.worker.running(), timeout=60000)
    win.motion.slider.setValue(52)
    assert win.motion.time_label.text() == "t = 0.520 s  52/100"
    assert win.motion.progress_bar.format() == "t = 1.000 / 1.000 s"
    win.plots.set_mode("gap")
    assert win.plots.readout.text().startswith("t = 0.52 s: ")


def test_the_status_of_a_run_that_stopped_early_names_its_time_to_the_step():
    from app.playback.player import short_reason
    from app.playback.worker import RunEnd

    def end(t):
        return RunEnd(False, f"stopped at t = {t:.6g} s: step did not converge", t, None, False, 10)

    assert short_reason(end(0.3), 0.01) == "stopped at t = 0.30 s: step did not converge"  # as always
    assert short_reason(end(4.2e-8), 1e-9) == "stopped at t = 4.2e-08 s: step did not converge"  # (was t = 0.00 s)


def test_a_short_reason_keeps_the_clause_around_its_asides():
    # (user test s56, S5: the mass-ratio reason was cut at its first parenthesis, the status read only "'heavy'")
    from app.playback.player import short_reason
    from app.playback.worker import RunEnd

    def end(why):
        return RunEnd(False, f"stopped at t = 0.15 s: {why}", 0.15, None, False, 10)

    heavy = ("'heavy' (100 kg) is 1e+04 times as heavy as 'light' (0.01 kg), in contact: at most 3000 times (beyond "
             "that the contact step may fail or go wrong: a 10 t box (on a slab) squeezed it out)")
    assert short_reason(end(heavy), 0.01) == ("stopped at t = 0.15 s: 'heavy' is 1e+04 times as heavy as 'light', "
                                             "in contact: at most 3000 times")
    # nested asides and the clauses after the first go to the tooltip, as before
    halved = ("step did not converge even when halved (MCP solver: stalled (residual 1.8e-05)); the explicit "
              "method's step overlaps by 0.00285 m")
    assert short_reason(end(halved), 0.01) == "stopped at t = 0.15 s: step did not converge even when halved"
    # a name in quotes is kept whole, and a parenthesis that never closes is text
    assert short_reason(end("'wheel (left)' (100 kg) is 1e+04 times as heavy as 'arm (' (0.01 kg)"), 0.01) == (
        "stopped at t = 0.15 s: 'wheel (left)' is 1e+04 times as heavy as 'arm ('")
    # a call in an expression is not an aside
    assert short_reason(end("value of 'sin(t)/t' is not finite"), 0.01).endswith("value of 'sin(t)/t' is not finite")


def test_the_expected_work_is_told_apart_from_the_threshold(make_window, monkeypatch):
    # (user test s56, S9: "expected ≈ 2 s of work, more than 2 s" for 2.3 s)
    from app.playback import player

    win = make_window(io.load(EXAMPLES / "contact_pile.json"))
    pb = win.playback
    for est, shown in ((2.3, "≈ 2.3 s"), (2.03, "≈ 2.03 s"), (9.96, "≈ 10 s"), (37.4, "≈ 37 s")):
        monkeypatch.setattr(type(pb), "expected_seconds", lambda self, e=est: e)
        assert f"(expected {shown} of work, more than {player.AUTO_RUN_SECONDS:g} s)" in pb._wait_text("opened")
