"""Format v1: lossless round trip, atomic save, and one located message per kind of bad input."""

from __future__ import annotations

import copy
import json
import os

import pytest

from core import io
from core.errors import LinkwrightError
from tests.conftest import EXAMPLES


def load_error(data) -> LinkwrightError:
    text = data if isinstance(data, (str, bytes)) else json.dumps(data)
    with pytest.raises(LinkwrightError) as info:
        io.loads(text)
    return info.value


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.json")), ids=lambda p: p.stem)
def test_every_example_round_trips_losslessly(path, tmp_path):
    mech = io.load(path)
    out = tmp_path / "copy.json"
    io.save(mech, out)
    assert io.load(out) == mech
    # Saving again gives byte-identical text: the writer is deterministic.
    assert io.dumps(io.load(out)) == out.read_text()


def test_round_trip_keeps_optional_keys(fourbar_dict):
    d = copy.deepcopy(fourbar_dict)
    d["layout"] = {"crank": [10.5, -3]}
    d["bodies"][1]["points"] = {"tip": [0.5, 0.866, 0]}
    d["bodies"][3]["com"] = [3.6, 1.5, 0]
    d["drivers"][0]["value"] = "0.5*sin(2*pi*t)"
    m = io.loads(json.dumps(d))
    assert m.layout == {"crank": (10.5, -3.0)}
    assert io.loads(io.dumps(m)) == m
    assert json.loads(io.dumps(m))["bodies"][3]["com"] == [3.6, 1.5, 0]


def test_save_is_atomic_and_leaves_no_temporary_files(tmp_path, fourbar_dict, monkeypatch):
    mech = io.loads(json.dumps(fourbar_dict))
    target = tmp_path / "m.json"
    target.write_text("previous content")

    def boom(*a, **k):
        raise OSError("disk full")

    # A failure in the middle of writing must leave the old file intact and no temp file behind.
    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(LinkwrightError, match="disk full"):
        io.save(mech, target)
    assert target.read_text() == "previous content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]
    monkeypatch.undo()
    io.save(mech, target)
    assert io.load(target) == mech
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]


def test_a_name_with_a_nul_character_is_a_located_error_not_a_value_error(tmp_path, fourbar_dict):
    """A NUL in a file name made os.stat raise ValueError, which callers catching LinkwrightError (the app's Save,
    which then showed no dialog: user test s54 U7) let through; reading such a name did the same."""
    mech = io.loads(json.dumps(fourbar_dict))
    bad = tmp_path / "a\x00b.json"
    with pytest.raises(LinkwrightError, match="NUL character"):
        io.save(mech, bad)
    with pytest.raises(LinkwrightError, match="NUL character"):
        io.load(bad)
    assert list(tmp_path.iterdir()) == []


def test_unknown_body_names_the_known_ones(fourbar_dict):
    fourbar_dict["joints"][2]["bodies"][1] = "cranck"
    e = load_error(fourbar_dict)
    assert e.location == "joints[2].bodies[1]"
    assert str(e) == "joints[2].bodies[1]: unknown body 'cranck' (known: ground, crank, coupler, rocker)"


def test_wrong_type_of_value(fourbar_dict):
    fourbar_dict["bodies"][3]["mass"] = "heavy"
    e = load_error(fourbar_dict)
    assert (e.location, e.message) == ("bodies[3].mass", "expected a number, got a string")


def test_boolean_is_not_a_number(fourbar_dict):
    fourbar_dict["joints"][0]["at"] = [0, True, 0]
    assert load_error(fourbar_dict).location == "joints[0].at[1]"


def test_missing_key(fourbar_dict):
    del fourbar_dict["joints"][1]["type"]
    e = load_error(fourbar_dict)
    assert e.location == "joints[1]" and "missing key 'type'" in e.message


def test_unknown_key_is_reported_not_dropped(fourbar_dict):
    fourbar_dict["bodies"][1]["mas"] = 1.0
    e = load_error(fourbar_dict)
    assert e.location == "bodies[1].mas" and "unknown key" in e.message


def test_duplicate_body_name(fourbar_dict):
    fourbar_dict["bodies"][2]["name"] = "crank"
    e = load_error(fourbar_dict)
    assert (e.location, e.message) == ("bodies[2].name", "duplicate name 'crank'")


def test_duplicate_joint_name(fourbar_dict):
    fourbar_dict["joints"][3]["name"] = "A"
    assert load_error(fourbar_dict).location == "joints[3].name"


def test_joint_named_as_a_body_is_reported_at_the_joint(fourbar_dict):
    # the joint's name is the second use of 'crank' in the file: the body before it is not the one to rename
    fourbar_dict["joints"][0]["name"] = "crank"
    e = load_error(fourbar_dict)
    assert (e.location, e.message) == ("joints[0].name", "duplicate name 'crank'")


def test_joint_to_itself_is_rejected(fourbar_dict):
    fourbar_dict["joints"][1]["bodies"] = ["crank", "crank"]
    e = load_error(fourbar_dict)
    assert e.location == "joints[1].bodies" and "itself" in e.message


@pytest.mark.parametrize("vec", [[1, 2], "up", [1, 2, "x"], [1, 2, 3, 4]])
def test_bad_vector(fourbar_dict, vec):
    fourbar_dict["joints"][0]["at"] = vec
    assert load_error(fourbar_dict).location.startswith("joints[0].at")


def test_zero_axis(fourbar_dict):
    fourbar_dict["joints"][2]["axis"] = [0, 0, 0]
    e = load_error(fourbar_dict)
    assert str(e) == "joints[2].axis: zero length"


def test_planar_revolute_axis_must_be_z(fourbar_dict):
    fourbar_dict["joints"][1]["axis"] = [1, 0, 0]
    e = load_error(fourbar_dict)
    assert e.location == "joints[1].axis" and "along z" in e.message


PLANE = "a planar document moves in the x-y plane"
TURN = PLANE + " (a body turns about z only)"


@pytest.mark.parametrize("key, value, location, message", [
    ("gravity", [0, 0, -9.81], "gravity[2]", PLANE + ": must be 0, got -9.81"),
    ("gravity", [0, -9.81, 1e-300], "gravity[2]", PLANE + ": must be 0, got 1e-300"),
    ("linear", [1, 0, 3], "bodies[3].velocity.linear[2]", PLANE + ": must be 0, got 3"),
    ("angular", [0.5, 0, 1], "bodies[3].velocity.angular[0]", TURN + ": must be 0, got 0.5"),
    ("angular", [0, -2, 1], "bodies[3].velocity.angular[1]", TURN + ": must be 0, got -2"),
])
def test_a_planar_document_refuses_gravity_and_velocity_out_of_its_plane(fourbar_dict, key, value, location, message):
    """A planar run has no freedom out of the x-y plane: it dropped such values silently (gravity [0, 0, -9.81]: a
    scene with no gravity at all; a body's z velocity in the first row of the recording only). They are refused on
    load, in an edit and in a change of space, located at the component."""
    if key == "gravity":
        fourbar_dict["gravity"] = value
    else:
        fourbar_dict["bodies"][3]["velocity"] = {key: value}
    e = load_error(fourbar_dict)
    assert (e.location, e.message) == (location, message)
    # the same document in space is fine; made planar by an edit, it is refused the same way
    fourbar_dict["space"] = "spatial"
    for j in fourbar_dict["joints"]:
        j["axis"] = [0, 0, 1]
    m = io.loads(json.dumps(fourbar_dict))
    with pytest.raises(LinkwrightError) as info:
        m.set_properties(space="planar")
    assert str(info.value) == str(e)
    assert m.space == "spatial"


def test_a_planar_document_keeps_in_plane_gravity_and_velocity_and_any_z_position(fourbar_dict):
    fourbar_dict["gravity"] = [0.5, -9.81, 0]
    fourbar_dict["bodies"][3]["velocity"] = {"linear": [1, -2, 0], "angular": [0, 0, 3]}
    fourbar_dict["bodies"][3]["pose"] = {"position": [0, 0, 0.5]}  # (a layer in front of the others: allowed)
    m = io.loads(json.dumps(fourbar_dict))
    assert m.gravity == (0.5, -9.81, 0.0) and m.bodies[3].velocity.angular == (0.0, 0.0, 3.0)
    from core.model import Velocity

    with pytest.raises(LinkwrightError) as info:  # the edit API's check is the loader's
        m.update_body("rocker", velocity=Velocity((0.0, 0.0, 1.0), (0.0, 0.0, 0.0)))
    assert str(info.value) == "bodies[3].velocity.linear[2]: " + PLANE + ": must be 0, got 1"


def test_unknown_joint_type(fourbar_dict):
    fourbar_dict["joints"][0]["type"] = "hinge"
    e = load_error(fourbar_dict)
    assert e.location == "joints[0].type" and "unknown joint type 'hinge'" in e.message and "revolute" in e.message


def test_type_not_allowed_in_space(fourbar_dict):
    fourbar_dict["joints"][0]["type"] = "spherical"
    e = load_error(fourbar_dict)
    assert e.location == "joints[0].type" and "planar document" in e.message


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_rejected(fourbar_dict, token):
    text = json.dumps(fourbar_dict).replace('"mass": 0.4', f'"mass": {token}')
    e = load_error(text)
    assert "not a number in JSON" in e.message
    # where, as for every file-level error: a name or text holding the word before it is not mistaken for it
    fourbar_dict["description"] = f'a "{token}" in text, {token}: 1'
    text = json.dumps(fourbar_dict, indent=1).replace('"mass": 0.4', f'"mass": {token}')
    line = next(i for i, x in enumerate(text.splitlines(), 1) if f'"mass": {token}' in x)
    column = text.splitlines()[line - 1].index(token) + 1
    assert load_error(text).message == f"not valid JSON: {token} is not a number in JSON at line {line}, column {column}"


def test_huge_number_overflowing_to_infinity(fourbar_dict):
    text = json.dumps(fourbar_dict).replace('"mass": 0.4', '"mass": 1e999')
    e = load_error(text)
    assert e.location == "bodies[3].mass" and "finite" in e.message


def test_huge_integer_literals(fourbar_dict):
    # 10**400 parses as a Python int but has no float; 5000 digits exceed Python's int-parsing limit (4300).
    text = json.dumps(fourbar_dict).replace('"mass": 0.4', '"mass": 1' + "0" * 400)
    e = load_error(text)
    assert e.location == "bodies[3].mass" and "too large" in e.message
    text = json.dumps(fourbar_dict).replace('"mass": 0.4', '"mass": ' + "9" * 5000)
    assert "too many digits" in load_error(text).message


def test_not_json():
    e = load_error("{ this is not json")
    assert e.location == "" and e.message.startswith("not valid JSON") and "line 1" in e.message


@pytest.mark.parametrize("text, message", [
    ('{"format": "linkwright.mech', "Unterminated string starting at line 1, column 12"),  # a file cut short
    ('{"name": "a\tb"}', "Invalid control character at line 1, column 12"),
    ('{"format" 1}', "Expecting ':' delimiter at line 1, column 11"),
])
def test_json_errors_read_once_at_their_place(text, message):
    """User test s56, S8: a truncated file read 'Unterminated string starting at at line 1, column 345' (Python's
    reason ends in 'at' already)."""
    assert load_error(text).message == f"not valid JSON: {message}"


def test_not_utf8():
    assert "UTF-8" in load_error(b"\xff\xfe\x00garbage").message


@pytest.mark.parametrize("duration", [0.0, 1e-9, 0.005])
def test_a_duration_shorter_than_one_step_is_refused_at_the_duration(fourbar_dict, duration):
    """User test s54 ut1, U12: a run of it ended a whole step past it (or for 0 s recorded the start alone)."""
    fourbar_dict["simulation"] = {"dt": 0.01, "duration": duration}
    e = load_error(fourbar_dict)
    assert e.location == "simulation.duration" and e.message.startswith(f"{duration:g} s is shorter than one step "
                                                                        "(dt = 0.01 s)")
    fourbar_dict["simulation"] = {"dt": 0.01, "duration": 0.01}
    assert io.loads(json.dumps(fourbar_dict)).simulation.duration == 0.01


def test_a_utf8_byte_order_mark_is_read_past(tmp_path):
    """User test s54 ut1, U13: a file saved by Windows Notepad (UTF-8 with a byte-order mark) was refused with
    Python's hint 'Unexpected UTF-8 BOM (decode using utf-8-sig)'; the mark is no part of the JSON and is skipped.
    Only one, at the start: a second is not JSON."""
    text = (EXAMPLES / "fourbar.json").read_text(encoding="utf-8")
    p = tmp_path / "bom.json"
    p.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert io.load(p) == io.loads(text)
    assert io.loads("\ufeff" + text) == io.loads(text)
    e = load_error("\ufeff\ufeff" + text)
    assert e.message.startswith("not valid JSON") and "utf-8-sig" not in e.message


@pytest.mark.parametrize("key,value,loc", [("format", "something.else", "format"), ("version", 2, "version")])
def test_wrong_format_or_version(fourbar_dict, key, value, loc):
    fourbar_dict[key] = value
    assert load_error(fourbar_dict).location == loc


def test_top_level_must_be_object():
    assert "JSON object" in load_error("[1, 2, 3]").message


def test_fifty_megabyte_file_is_refused_quickly(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(50 * 1024 * 1024)
    with pytest.raises(LinkwrightError) as info:
        io.load(big)
    # one unit for both sizes: 50 x 2^20 bytes against the limit of 20 x 2^20 (MAX_FILE_BYTES)
    assert "too large" in info.value.message and "(50 MiB, limit 20 MiB)" in info.value.message


def test_deeply_nested_json_is_refused(fourbar_dict):
    fourbar_dict["name"] = "x"
    text = json.dumps(fourbar_dict)[:-1] + ', "layout": ' + "[" * 100000 + "]" * 100000 + "}"
    assert "nested too deeply" in load_error(text).message


def test_driver_expression_is_checked_at_load(fourbar_dict):
    fourbar_dict["drivers"][0]["value"] = "omega*t"
    e = load_error(fourbar_dict)
    assert e.location == "drivers[0].value" and "unknown name 'omega'" in e.message


def test_driver_of_unknown_joint(fourbar_dict):
    fourbar_dict["drivers"][0]["joint"] = "Z"
    assert load_error(fourbar_dict).location == "drivers[0].joint"


def test_driver_coordinate_out_of_range(fourbar_dict):
    fourbar_dict["drivers"][0]["coordinate"] = 1
    assert load_error(fourbar_dict).location == "drivers[0].coordinate"


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(LinkwrightError, match="no such file"):
        io.load(tmp_path / "nope.json")
    with pytest.raises(LinkwrightError, match="directory"):
        io.load(tmp_path)


def test_zero_quaternion_and_non_unit_quaternion(fourbar_dict):
    fourbar_dict["bodies"][1]["pose"] = {"orientation": [0, 0, 0, 0]}
    assert load_error(fourbar_dict).location == "bodies[1].pose.orientation"
    fourbar_dict["bodies"][1]["pose"] = {"orientation": [1, 1, 0, 0]}
    assert "unit quaternion" in load_error(fourbar_dict).message


def test_zero_or_negative_mass(fourbar_dict):
    fourbar_dict["bodies"][3]["mass"] = 0
    e = load_error(fourbar_dict)
    assert e.location == "bodies[3].mass" and "positive" in e.message


def test_negative_friction(fourbar_dict):
    fourbar_dict["contact"] = {"friction": -0.1}
    assert load_error(fourbar_dict).location == "contact.friction"


def test_schema_accepts_every_example_and_names_the_format():
    jsonschema = pytest.importorskip("jsonschema")  # optional test extra
    schema = json.loads((EXAMPLES.parent / "schema" / "mechanism-v1.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    for path in sorted(EXAMPLES.glob("*.json")):
        jsonschema.validate(json.loads(path.read_text()), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"format": "linkwright.mechanism", "version": 1, "space": "curved", "bodies": []}, schema)


def _ellipsoid_ranges() -> dict[int, tuple[float, bool, float]]:
    """The friction ellipsoid's row of docs/file-format.md's table of ranges, read: entry -> (low, low refused, high)
    ('more than A and at most B' or 'A to B'; a clause without entry names holds for all three)."""
    import re

    from tests.conftest import ROOT

    rows = [ln for ln in (ROOT / "docs" / "file-format.md").read_text().splitlines()
            if ln.startswith("|") and "ellipsoid" in ln.split("|")[1]]
    assert len(rows) == 1, rows
    ranges = {}
    for clause in rows[0].split("|")[2].split(";"):
        names = re.findall(r"e_[tor]", clause)
        m = re.search(r"more than ([\d.e+-]+) and at most ([\d.e+-]+)", clause)
        if m:
            lo, open_low, hi = float(m[1]), True, float(m[2])
        else:
            m = re.search(r"([\d.e+-]+) to ([\d.e+-]+)", clause)
            assert m, clause
            lo, open_low, hi = float(m[1]), False, float(m[2])
        for i in ([("e_t", "e_o", "e_r").index(n) for n in names] or [0, 1, 2]):
            ranges[i] = (lo, open_low, hi)
    assert sorted(ranges) == [0, 1, 2], rows[0]
    return ranges


def test_the_documented_friction_ellipsoid_bounds_are_the_loaders():
    """docs/file-format.md said the friction-ellipsoid entries may be 0 to 1000, but the loader refuses 0 for e_t and
    e_o (the ellipsoid's axes in the sliding directions; 0 for e_r is no torsional friction): each documented bound
    is what a file with that entry at it, and just beyond it, gets."""
    doc = json.loads((EXAMPLES / "contact_sphere_drop.json").read_text())

    def load(i: int, value: float):
        ell = [1.0, 1.0, 0.0]
        ell[i] = value
        doc["contact"] = {"friction": 0.5, "ellipsoid": ell}
        return io.loads(json.dumps(doc))

    ranges = _ellipsoid_ranges()
    assert ranges == {0: (0.0, True, 1000.0), 1: (0.0, True, 1000.0), 2: (0.0, False, 1000.0)}
    for i, (lo, open_low, hi) in ranges.items():
        where = f"contact.ellipsoid[{i}]"
        assert load(i, hi).contact.ellipsoid[i] == hi
        with pytest.raises(LinkwrightError) as e:
            load(i, hi * (1 + 1e-9))
        assert e.value.location == where and "1000" in e.value.message
        if open_low:
            assert load(i, 1e-9).contact.ellipsoid[i] == 1e-9
            with pytest.raises(LinkwrightError) as e:
                load(i, lo)
            assert str(e.value) == f"{where}: must be positive, got 0.0"
        else:
            assert load(i, lo).contact.ellipsoid[i] == lo
            with pytest.raises(LinkwrightError) as e:
                load(i, -1e-9)
            assert str(e.value) == f"{where}: must be non-negative, got -1e-09"


def test_an_empty_path_is_neither_read_nor_written_as_the_current_folder():
    with pytest.raises(LinkwrightError) as info:
        io.write_atomic("", lambda fh: fh.write("x"), "--csv")
    assert (info.value.location, info.value.message) == ("--csv", 'the file name is empty ("")')
    with pytest.raises(LinkwrightError) as info:
        io.load("")
    assert info.value.message == 'the file name is empty ("")'


def test_an_axis_shorter_than_its_bound_says_so(fourbar_dict):
    # user test s53 (G10): an axis of length 1e-13 (not zero) was refused as "zero length"; the bound is 1e-12
    fourbar_dict["joints"][2]["axis"] = [0, 0, 1e-13]
    assert str(load_error(fourbar_dict)) == "joints[2].axis: length 1e-13 is shorter than 1e-12"


def test_a_file_in_a_folder_that_cannot_hold_it_is_refused_in_one_wording(tmp_path):
    """Every writer names the first part of the folder's path that is a file, or the missing folder: the same words
    for the CSV writer, the PNG and plot exports and the animation (they said "Not a directory", "is not a folder" and
    "cannot create a file in ... (No such file or directory)" for these)."""
    from core.errors import LinkwrightError

    (tmp_path / "notes.txt").write_text("x")
    cases = {tmp_path / "notes.txt" / "a.csv": f"'{tmp_path / 'notes.txt'}' is not a folder",
             tmp_path / "notes.txt" / "deeper" / "a.csv": f"'{tmp_path / 'notes.txt'}' is not a folder",
             tmp_path / "none" / "a.csv": f"no such folder '{tmp_path / 'none'}'"}
    for path, why in cases.items():
        assert io.folder_problem(path) == why
        with pytest.raises(LinkwrightError) as err:
            io.write_atomic(path, lambda fh: fh.write("x"), "--out")
        assert (err.value.location, err.value.message) == ("--out", f"cannot write '{path}': {why}")
    assert io.folder_problem(tmp_path / "ok.csv") == ""
    assert (tmp_path / "notes.txt").read_text() == "x"


def _universal_doc(axis2) -> dict:
    return {"format": "linkwright.mechanism", "version": 1, "name": "U", "space": "spatial",
            "bodies": [{"name": "ground", "ground": True}, {"name": "s", "points": {"P": [0, 1, 0]}}],
            "joints": [{"name": "U", "type": "universal", "bodies": ["ground", "s"], "at": [0, 0, 0],
                        "axis": [0, 0, 1], "axis2": axis2}]}


@pytest.mark.parametrize("axis2, message", [
    ([1, 0, 1], "must be normal to axis (it makes 45.0 degrees with it)"),
    ([-1, 0, -1], "must be normal to axis (it makes 135.0 degrees with it)"),
    ([1, 0, 1e-3], "must be normal to axis (it makes 89.9 degrees with it)"),  # (digits enough to differ from 90)
    ([0, 0, -2], "must not be parallel to axis"),
])
def test_a_universal_joints_axis2_must_be_normal_to_its_axis(axis2, message):
    """User test s55 K4: a universal joint (Hooke's) turns about two perpendicular axes; an oblique axis2 was taken
    as its projection normal to axis without a word (turning about x where (1, 0, 1) was given). Refused, located, as a
    parallel one is; the same check refuses it in an edit (the app's Properties, through Mechanism.update_joint)."""
    e = load_error(_universal_doc(axis2))
    assert e.location == "joints[0].axis2" and e.message == message
    mech = io.loads(json.dumps(_universal_doc([1, 0, 0])))
    with pytest.raises(LinkwrightError) as info:
        mech.update_joint("U", axis2=tuple(float(x) for x in axis2))
    assert str(info.value) == f"joints[0].axis2: {message}"
    assert mech.joint("U").axis2 == (1.0, 0.0, 0.0)


def test_a_universal_joints_axis2_within_the_tolerance_of_normal_is_taken():
    """Within 1e-4 of normal (the cosine of the angle: axes rounded to a few digits in a file) axis2 is taken as the
    perpendicular axis it stands for, its projection normal to axis; 2e-4 off is refused. The Stewart example as it
    was written, its axes rounded to 6 digits (cosines up to 4.2e-7), loads."""
    import numpy as np

    from core.joints import joint_design_frame

    axis2 = np.array([1.0, 0.0, 5e-5])
    mech = io.loads(json.dumps(_universal_doc(axis2.tolist())))
    np.testing.assert_allclose(joint_design_frame(mech.joint("U"))[:3, 0], [1.0, 0.0, 0.0], atol=1e-15)
    with pytest.raises(LinkwrightError, match="normal to axis"):
        io.loads(json.dumps(_universal_doc([1, 0, 2e-4])))
    doc = json.loads((EXAMPLES / "stewart_6ups.json").read_text())
    rounded = 0
    for j in doc["joints"]:
        if j["type"] == "universal":  # (as a tool writing 6 digits would: the cosines are now about 1e-7)
            j["axis"], j["axis2"] = ([float(f"{x:.6g}") for x in v] for v in (j["axis"], j["axis2"]))
            a, b = (np.array(v) / np.linalg.norm(v) for v in (j["axis"], j["axis2"]))
            rounded += abs(float(a @ b)) > 1e-9
    assert rounded and io.loads(json.dumps(doc)).joint(doc["joints"][0]["name"])


def test_a_repeated_shape_is_parsed_once_and_each_body_keeps_its_own(monkeypatch):
    """3,000 equal spheres were parsed twice each (the body's reading, then the document's validation): a third of
    their file's loading."""
    import core.shapes

    calls = []
    parse = core.shapes.parse_shape

    def counting(shape, location):
        calls.append(location)
        return parse(shape, location)

    monkeypatch.setattr(core.shapes, "parse_shape", counting)
    bodies = [{"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}}]
    bodies += [{"name": f"b{i}", "mass": 1, "shape": {"type": "sphere", "radius": 0.01},
                "pose": {"position": [0.03 * i, 0.0, 0.02]}} for i in range(200)]
    data = {"format": io.FORMAT, "version": io.VERSION, "space": "spatial", "gravity": [0, 0, -9.81],
            "bodies": bodies}
    mech = io.from_dict(copy.deepcopy(data))
    # the floor and the sphere, once each when read (the document's validation does not build the loaded shapes
    # again: tests/core/shapes/test_polytope_hull.py, test_a_load_builds_each_shape_once)
    assert sorted(calls) == ["bodies[0].shape", "bodies[1].shape"]
    assert [b.shape for b in mech.bodies[1:]] == [{"type": "sphere", "radius": 0.01}] * 200
    assert mech.bodies[1].shape is not mech.bodies[2].shape  # (each body its own dict, as before)
    # a shape that differs only in its number's type (1 and 1.0 are written differently) is read on its own
    bodies[5]["shape"] = {"type": "sphere", "radius": 1}
    bodies[6]["shape"] = {"type": "sphere", "radius": 1.0}
    calls.clear()
    io.from_dict(copy.deepcopy(data))
    assert "bodies[5].shape" in calls and "bodies[6].shape" in calls
    # a bad shape repeated is refused at its first body
    for i in (7, 9):
        bodies[i]["shape"] = {"type": "sphere", "radius": -1}
    assert load_error(data).location == "bodies[7].shape.radius"


def test_parsed_json_nested_too_deep_is_refused_with_a_message_not_a_recursion_error():
    # (review: the app's recovery file is parsed by json and handed to from_dict; a shape nested ~1,000 deep raised
    # RecursionError from the shape memo's key, and the app started with a traceback.  io.loads checks the text's
    # nesting; from_dict now checks the parsed value's the same way)
    from core.model import shape_key
    from core.validate import show

    nested: list = []
    for _ in range(5000):
        nested = [nested]
    data = {"format": io.FORMAT, "version": io.VERSION, "space": "spatial",
            "bodies": [{"name": "a", "shape": {"type": "sphere", "radius": nested}}]}
    with pytest.raises(LinkwrightError) as exc:
        io.from_dict(data)
    assert exc.value.location == "" and f"limit {io.MAX_NESTING} levels" in exc.value.message
    # the helpers that write such a value for a message or a key never fail
    assert shape_key(nested) is None
    assert "nested too deep" in show(nested) or len(show(nested)) <= 60
    # a shipped example is still read
    example = __import__("pathlib").Path(__file__).resolve().parents[2] / "resources" / "examples" / "fourbar.json"
    assert io.from_dict(json.loads(example.read_text())).name == "Crank-rocker four-bar"
