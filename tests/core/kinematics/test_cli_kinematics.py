"""`linkwright kinematics` and `linkwright fourbar`: columns, early stop (status 3), located errors (status 2)."""

import csv
import io as _io
import json
import math
from pathlib import Path

import numpy as np
import pytest

from core.cli import main

EXAMPLES = Path(__file__).resolve().parents[3] / "resources" / "examples"


def test_kinematics_csv_columns_and_rows(tmp_path, capsys):
    out = tmp_path / "fb.csv"
    assert main(["kinematics", str(EXAMPLES / "fourbar.json"), "--t-end", "0.5", "--steps", "10", "--csv", str(out)]) == 0
    rows = list(csv.reader(out.open()))
    head = rows[0]
    assert head[:4] == ["t", "A", "A.vel", "A.acc"]
    assert head[-9:] == [f"coupler.P.{c}" for c in ("x", "y", "z", "vx", "vy", "vz", "ax", "ay", "az")]
    assert len(rows) == 12  # header + N+1 frames
    # t = k T / N and the driver A = 2 pi t
    last = dict(zip(head, map(float, rows[-1])))
    assert last["t"] == pytest.approx(0.5) and last["A"] == pytest.approx(math.pi) and last["A.vel"] == pytest.approx(2 * math.pi)


def test_kinematics_stops_early_with_status_3(capsys, tmp_path):
    # The RSSR crank locks near 107 degrees (see the example's description): driving it a full turn must stop early.
    doc = json.loads((EXAMPLES / "rssr.json").read_text())
    doc["drivers"][0]["value"] = "2*pi*t"
    p = tmp_path / "rssr_full_turn.json"
    p.write_text(json.dumps(doc))
    code = main(["kinematics", str(p), "--steps", "20", "--json"])
    cap = capsys.readouterr()
    assert code == 3
    data = json.loads(cap.out)
    assert not data["ok"] and 0 < len(data["rows"]) < 21
    assert "stopped at t =" in cap.err and cap.err.count("\n") == 1


def test_kinematics_of_a_document_without_joints_says_there_is_nothing_to_move(capsys):
    """A contact scene of free bodies has no coordinates: the located message (status 2) instead of a time column."""
    code = main(["kinematics", str(EXAMPLES / "contact_box_slide.json"), "--steps", "2"])
    cap = capsys.readouterr()
    assert code == 2 and cap.out == ""
    assert "contact_box_slide.json: nothing to move by kinematics: the document has no joints" in cap.err
    # the hint names the file as the user gave it (it said 'linkwright simulate FILE', literally)
    assert cap.err.rstrip("\n").endswith(f"move by contact dynamics: linkwright simulate {EXAMPLES / 'contact_box_slide.json'}")


@pytest.mark.parametrize("name, free", [("contact_pendulum_strike.json", "bob, ball"),
                                        ("contact_fourbar_swing.json", "crank, coupler, rocker"),
                                        ("contact_cam_follower.json", "follower"), ("contact_cam_jump.json", "follower")])
def test_kinematics_of_a_dynamics_document_points_to_simulate(name, free, capsys):
    """A document whose drivers leave bodies with mass free (an undriven pendulum, a cam's follower on its guide)
    asked for 'add 1 driver(s) so the motion is determined', where those bodies move under forces: it is refused, at
    the file with status 2, naming them and `linkwright simulate`, as a document without joints is."""
    code = main(["kinematics", str(EXAMPLES / name), "--steps", "2"])
    cap = capsys.readouterr()
    assert code == 2 and cap.out == ""
    assert cap.err.startswith(f"error: {EXAMPLES / name}: the mechanism has ") and cap.err.count("\n") == 1
    assert cap.err.rstrip("\n").endswith(
        f"the drivers leave free ({free}) move by contact dynamics: linkwright simulate {EXAMPLES / name}")
    assert "add" not in cap.err


def test_the_simulate_hint_names_the_path_given_quoted_for_a_shell(tmp_path, capsys, monkeypatch):
    """The hint is a command to copy: the path as the user typed it (relative stays relative), quoted where a shell
    would split it (a space in the name)."""
    p = tmp_path / "my cam.json"
    p.write_text((EXAMPLES / "contact_cam_follower.json").read_text())
    monkeypatch.chdir(tmp_path)
    assert main(["kinematics", "my cam.json", "--steps", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: my cam.json: the mechanism has ")
    assert err.rstrip("\n").endswith("move by contact dynamics: linkwright simulate 'my cam.json'")


def test_kinematics_of_an_underdriven_kinematics_document_still_asks_for_drivers(tmp_path, capsys):
    # the four-bar without its driver: its rocker's mass is data for a later simulation (no `simulation` section: a
    # kinematics document, core.run.run_kind), so a driver is missing
    doc = json.loads((EXAMPLES / "fourbar.json").read_text())
    doc["drivers"] = []
    p = tmp_path / "fourbar_undriven.json"
    p.write_text(json.dumps(doc))
    assert main(["kinematics", str(p), "--steps", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: drivers: the mechanism has 1 degree(s) of freedom (rank-based) but 0 driver(s) are "
                          "given: add 1 driver(s)") and "simulate" not in err


def test_bad_expression_exits_2_with_location(tmp_path, capsys):
    doc = json.loads((EXAMPLES / "fourbar.json").read_text())
    doc["drivers"][0]["value"] = "omega*t"
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    assert main(["kinematics", str(p)]) == 2
    err = capsys.readouterr().err
    assert "drivers[0].value" in err and "omega" in err and "Traceback" not in err


def test_fourbar_report_json(capsys):
    assert main(["fourbar", "--lengths", "4", "1", "3.5", "3", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["class"] == "crank-rocker" and rep["fully_rotating"] == ["crank"]
    assert (rep["s"], rep["l"], rep["p"], rep["q"]) == (1, 4, 3, 3.5)
    assert main(["fourbar", "--lengths", "4", "0", "3.5", "3"]) == 2


def _fourbar_text(capsys, *lengths: str) -> list[str]:
    assert main(["fourbar", "--lengths", *lengths]) == 0
    return capsys.readouterr().out.splitlines()


def _acos_deg(x: float, y: float, opposite: float) -> float:
    """Angle (degrees) between sides x and y of a triangle whose third side is `opposite` (law of cosines)."""
    return math.degrees(math.acos((x * x + y * y - opposite * opposite) / (2 * x * y)))


def test_the_fourbar_text_gives_a_triple_rockers_swing_and_the_angle_it_swings_through(capsys):
    """"rocker limit angles: -96.622, 96.622 deg" alone was read as a swing of 193 degrees through 0; the rocker of
    (4, 2.5, 2.2151, 3) swings 166.755 through 180, that of (1, 1.1, 1, 1) 348.536 through 0."""
    # crank and coupler extended, |AC| = a + b = 4.7151: angle at D = acos((g² + c² - |AC|²) / (2 g c)) = 83.378, the
    # limits +-(180 - 83.378); the rocker swings between them through 180 (2 * 83.378), since folded (a - b = 0.285
    # < g - c = 1) they never are and the mirror circuit joins this one at the crank limits
    at_d = _acos_deg(4, 3, 2.5 + 2.2151)
    lines = _fourbar_text(capsys, "4", "2.5", "2.2151", "3")
    assert (f"rocker limit angles: {at_d - 180:.3f}, {180 - at_d:.3f} deg (swing {2 * at_d:.3f} deg, through 180.000 deg)"
            in lines)
    # folded only (a + b = 2.1 > g + c = 2): |AC| = a - b = 0.1, angle at D = acos(0.995) = 5.732; limits
    # +-(180 - 5.732), through 0: the swing is 2 * (180 - 5.732)
    at_d = _acos_deg(1, 1, 1.1 - 1)
    lines = _fourbar_text(capsys, "1", "1.1", "1", "1")
    assert (f"rocker limit angles: {at_d - 180:.3f}, {180 - at_d:.3f} deg (swing {2 * (180 - at_d):.3f} deg, "
            f"through 0.000 deg)" in lines)


def test_the_fourbar_text_of_degenerate_lengths(capsys):
    """A crank of 1e-6 against links of 1e6: mu is flat, and its minimum was read at crank -0.500 deg (a sample) where
    it is at 0 (|BD| = g - a, the shortest diagonal); lengths 1, 1.0000000001, 1, 1 were headed "ground 1, crank 1,
    coupler 1, rocker 1" over a non-Grashof class (1 + 1.0000000001 > 1 + 1)."""
    lines = _fourbar_text(capsys, "1e6", "1e-6", "1e6", "1e6")
    # cos mu = (b² + c² - |BD|²) / (2 b c) = 0.5 to 1e-12 at both ends: 60 degrees
    assert "transmission angle: min 60.000 deg at crank 0.000 deg, max 60.000 deg at crank 180.000 deg" in lines
    lines = _fourbar_text(capsys, "1", "1.0000000001", "1", "1")
    assert lines[0] == "four-bar: ground 1, crank 1.0000000001, coupler 1, rocker 1"
    assert lines[2] == "class: triple-rocker (non-Grashof)"
    # no "-0.000": every number of the text is rounded before its sign is written
    for lengths in (("4", "2.5", "2.2151", "3"), ("1e6", "1e-6", "1e6", "1e6"), ("4", "3", "1", "3.5")):
        assert "-0.000" not in "\n".join(_fourbar_text(capsys, *lengths))


def test_unwritable_csv_path_exits_2_with_location(tmp_path, capsys):
    out = tmp_path / "no_such_folder" / "fb.csv"
    assert main(["kinematics", str(EXAMPLES / "fourbar.json"), "--csv", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --csv: cannot write") and "Traceback" not in err
    assert not out.parent.exists()


def test_multi_coordinate_joints_get_numbered_columns(capsys):
    # quick_return: the slot joint 'pin' has two coordinates (0: slide, 1: rotation), the others one
    assert main(["kinematics", str(EXAMPLES / "quick_return.json"), "--steps", "2"]) == 0
    head = capsys.readouterr().out.splitlines()[0].split(",")
    assert head[:10] == ["t", "A", "A.vel", "A.acc", "pin.0", "pin.0.vel", "pin.0.acc", "pin.1", "pin.1.vel", "pin.1.acc"]
    assert "pin" not in head


@pytest.mark.parametrize("expr", ["1/(1-t)", "log(1-t)"])
@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_a_driver_undefined_mid_run_exits_3_with_the_rows_before_it(expr, fmt, tmp_path, capsys):
    # Over t in [0, 2] in 20 steps the driver is finite for t = 0 ... 0.9 and undefined at t = 1 (a pole, log(0)):
    # the 10 rows before it are written, with A = the driver's value, and the reason names the driver and the time.
    doc = json.loads((EXAMPLES / "fourbar.json").read_text())
    doc["drivers"][0]["value"] = expr
    p = tmp_path / "pole.json"
    p.write_text(json.dumps(doc))
    out = tmp_path / "pole.csv"
    args = ["--json"] if fmt == "json" else ["--csv", str(out)]
    assert main(["kinematics", str(p), "--t-end", "2", "--steps", "20", *args]) == 3
    cap = capsys.readouterr()
    if fmt == "json":
        data = json.loads(cap.out)
        head, rows = data["columns"], data["rows"]
        assert not data["ok"] and data["stop_time"] == 1.0 and "drivers[0].value" in data["reason"]
    else:
        head, *rows = list(csv.reader(out.open()))
        rows = [[float(x) for x in r] for r in rows]
    assert len(rows) == 10
    f = {"1/(1-t)": lambda t: 1 / (1 - t), "log(1-t)": lambda t: math.log(1 - t)}[expr]
    for r in rows:
        assert r[head.index("A")] == pytest.approx(f(r[0]), rel=1e-12)
    assert cap.err.count("\n") == 1
    assert cap.err.startswith(f"kinematics: stopped at t = 1: drivers[0].value: acceleration of '{expr}' passes the "
                              "bound ±1e+09; the motion ends near t = 0.99")


def test_kinematics_with_one_step_of_many_turns_turns_to_the_end(capsys):
    # the four-bar example's crank-rocker turns forever: 50 turns in one step is followed in sub-steps to t = 50 (a
    # coarse step was once reported as the end of the motion), with every joint where 50 whole turns put it
    code = main(["kinematics", str(EXAMPLES / "fourbar.json"), "--t-end", "50", "--steps", "1", "--json"])
    cap = capsys.readouterr()
    assert code == 0 and cap.err == ""
    data = json.loads(cap.out)
    assert data["ok"] and data["limit_time"] is None and len(data["rows"]) == 2
    last = dict(zip(data["columns"], data["rows"][-1]))
    assert last["t"] == 50 and last["A"] == pytest.approx(100 * math.pi) and last["B"] == pytest.approx(-100 * math.pi)
    assert abs(last["C"]) < 1e-9 and abs(last["D"]) < 1e-9


@pytest.mark.parametrize("lengths, message", [
    # 10 > 1 + 2 + 3: no loop closes
    (("10", "1", "2", "3"), "a four-bar cannot be assembled from these lengths: the longest link (ground 10) is longer "
                            "than the other three together (1 + 2 + 3 = 6)"),
    # 3 = 1 + 1 + 1: the loop closes only as a straight line, all four pivots on it, and cannot move from there
    (("1", "1", "1", "3"), "a four-bar of these lengths assembles only flat, as a straight line where it cannot move: "
                           "the longest link (rocker 3) equals the other three together (1 + 1 + 1 = 3)")])
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_fourbar_lengths_that_cannot_be_assembled_are_refused_with_status_2(lengths, message, json_flag, capsys):
    # 1 1 1 3 said "class: cannot be assembled" and then printed rocker limits, a transmission angle and a toggle of
    # a linkage that does not exist; such lengths are bad input (README: status 2), one located line, no report
    assert main(["fourbar", "--lengths", *lengths, *json_flag]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err == f"error: --lengths: {message}\n"


def test_the_fourbar_report_of_lengths_that_cannot_close_presumes_no_assembly():
    # the core report (the API, the Four-bar dock) gives the Grashof numbers and the class, and no limits, swing,
    # crank range, transmission angle or toggles
    from core.fourbar import FourBar, report

    rep = report(FourBar(1, 1, 1, 3))  # (3 = 1 + 1 + 1: it closes only flat, where it cannot move)
    assert rep["class"].startswith("assembles only flat") and (rep["s_plus_l"], rep["p_plus_q"]) == (4, 2)
    assert rep["rocker_limits_deg"] is None and rep["rocker_swing_deg"] is None and rep["crank_range_deg"] is None
    assert rep["transmission_angle_deg"] is None and rep["toggles"] == [] and rep["fully_rotating"] == []


def test_the_simulate_hint_names_a_massive_body_whose_only_freedom_the_drivers_leave_is_idle(tmp_path, capsys):
    """rssr.json with a coupler that has a mass (a sphere on BC) and an undriven pendulum hinged to the ground: two
    freedoms to drive (the coupler's spin about BC is idle), one driver.  A contact run moves the coupler by forces
    (its idle spin is real motion with a mass) as well as the pendulum, so the refusal names both, as the contact
    model decides them (core.contact.build_model: neither is kinematic)."""
    from core import io
    from core.contact import build_model

    doc = json.loads((EXAMPLES / "rssr.json").read_text())
    coupler = {"name": "coupler", "mass": 1.0, "shape": {"type": "sphere", "radius": 0.2},
               "pose": {"position": [2.0, 0.6, 1.25], "orientation": [1, 0, 0, 0]}}
    doc["bodies"] = [b if b["name"] != "coupler" else coupler for b in doc["bodies"]]
    doc["bodies"] += [{"name": "pend", "mass": 1.0, "shape": {"type": "sphere", "radius": 0.1},
                       "pose": {"position": [-2.0, 0.0, -1.0], "orientation": [1, 0, 0, 0]}},
                      {"name": "floor", "ground": True,
                       "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": -5.0}}]
    doc["joints"].append({"name": "P", "type": "revolute", "bodies": ["ground", "pend"], "at": [-2.0, 0.0, 0.0],
                          "axis": [0, 1, 0]})
    doc["contact"] = {"friction": 0.5}
    doc["simulation"] = {"duration": 0.1, "dt": 0.01}  # (a dynamics document: its masses move by forces)
    f = tmp_path / "rssr_pend.json"
    f.write_text(json.dumps(doc))
    model = build_model(io.load(f))
    moved = [n for n, dyn, kin in zip(model.names, model.dynamic, model.kinematic) if dyn and not kin]
    assert moved == ["coupler", "pend"]
    assert main(["kinematics", str(f), "--steps", "2"]) == 2
    err = capsys.readouterr().err
    assert f"the drivers leave free (coupler, pend) move by contact dynamics: linkwright simulate {f}" in err


@pytest.mark.parametrize("name", ["double_pendulum", "fivebar"])
def test_kinematics_json_writes_a_zero_without_its_sign_as_the_csv_does(name, tmp_path, capsys):
    """`kinematics --json` wrote a computed -0.0 as -0.0 (the double pendulum's and the five-bar's accelerations)
    where the CSV writes 0.0 (core.io.number_text); both now hold the same numbers, no negative zero."""
    from core import io
    from core.kinematics.trajectory import trajectory_of
    from core.run import RunSpec, open_run

    traj = trajectory_of(open_run(io.load(EXAMPLES / f"{name}.json"), RunSpec(kind="kinematics", t_end=1.0, steps=100)))
    table = traj.columns()[1]
    assert np.any((table == 0.0) & np.signbit(table))  # (the run computes -0.0: the case the writer must handle)
    assert main(["kinematics", str(EXAMPLES / f"{name}.json"), "--json"]) == 0
    text = capsys.readouterr().out
    assert "-0.0," not in text and "-0.0]" not in text
    data = json.loads(text)
    rows = np.array(data["rows"], dtype=float)
    assert not np.any((rows == 0.0) & np.signbit(rows))
    np.testing.assert_array_equal(rows, table)  # every other number as computed
    out = tmp_path / "run.csv"
    assert main(["kinematics", str(EXAMPLES / f"{name}.json"), "--csv", str(out)]) == 0
    csv_rows = list(csv.reader(out.open()))[1:]
    assert [[repr(x) for x in row] for row in data["rows"]] == csv_rows  # the same text as the CSV's cells
