"""The edit API the GUI's commands call: each edit validates, applies, and can be undone exactly."""

from __future__ import annotations

import json

import pytest

from core import io
from core.errors import LinkwrightError
from core.model import Body, Driver, Joint


@pytest.fixture
def mech(fourbar_dict):
    return io.loads(json.dumps(fourbar_dict))


def test_remove_body_removes_its_joints_and_drivers_and_restores_exactly(mech):
    before = mech.copy()
    rec = mech.remove_body("crank")
    assert mech.body_names() == ["ground", "coupler", "rocker"]
    assert mech.joint_names() == ["C", "D"]  # A and B attached the crank
    assert mech.drivers == []  # the driver of A went with it
    mech.restore_body(rec)
    assert mech == before


def test_remove_body_takes_its_contact_pair_overrides_and_restores_them():
    """A friction override of the pair ball/box outlived the ball's deletion: the saved file named a body that is
    not there (it would not reopen), and every document-level edit was refused until the ball came back."""
    from core.model import PairOverride

    mech = io.load(__import__("pathlib").Path(__file__).resolve().parents[2] / "resources" / "examples"
                   / "contact_pile.json")
    mech.set_contact(pairs=(PairOverride(("ball1", "cube"), 0.3), PairOverride(("can", "egg"), 0.2)))
    before = mech.copy()
    rec = mech.remove_body("ball1")
    assert [p.bodies for p in mech.contact.pairs] == [("can", "egg")]
    io.loads(io.dumps(mech))  # the document as saved loads again
    mech.set_contact(friction=0.35)  # and document edits are accepted
    mech.set_contact(friction=before.contact.friction)
    mech.restore_body(rec)
    assert mech == before


def test_rename_body_follows_into_joints_and_layout(mech):
    mech.set_layout("crank", (1, 2))
    mech.rename_body("crank", "input")
    assert mech.joint("A").bodies == ("ground", "input")
    assert mech.joint("B").bodies == ("input", "coupler")
    assert mech.layout == {"input": (1.0, 2.0)}
    with pytest.raises(LinkwrightError, match="duplicate name 'rocker'"):
        mech.rename_body("input", "rocker")


def test_rename_joint_follows_into_drivers(mech):
    mech.update_joint("A", name="A1")
    assert mech.drivers[0].joint == "A1"


def test_change_joint_type_and_bodies(mech):
    old = mech.update_joint("C", type="prismatic", axis=(1.0, 0.0, 0.0))
    assert old.type == "revolute" and mech.joint("C").type == "prismatic"
    mech.update_joint("C", bodies=("crank", "rocker"))
    assert mech.joint("C").bodies == ("crank", "rocker")
    with pytest.raises(LinkwrightError, match="unknown body"):
        mech.update_joint("C", bodies=("crank", "nobody"))
    with pytest.raises(LinkwrightError, match="not allowed in a planar"):
        mech.update_joint("C", type="spherical")


def test_type_change_refused_when_it_drops_a_driven_coordinate(mech):
    with pytest.raises(LinkwrightError, match="drivers\\[0\\]"):
        mech.update_joint("A", type="fixed")


def test_failed_edit_changes_nothing(mech):
    before, rev = mech.copy(), mech.revision
    with pytest.raises(LinkwrightError):
        mech.update_joint("B", axis=(0.0, 0.0, 0.0))
    assert mech == before and mech.revision == rev


def test_every_edit_bumps_revision(mech):
    rev = mech.revision
    mech.add_body(Body("extra"))
    mech.add_joint(Joint("E", "revolute", ("extra", "ground")))
    mech.move = None
    mech.update_joint("E", at=(1.0, 1.0, 0.0))
    mech.set_ground("extra")
    mech.add_driver(Driver("E", "t"))
    mech.update_driver(1, value="2*t")
    mech.remove_driver(1)
    mech.remove_joint("E")
    assert mech.revision == rev + 8


def test_remove_joint_restores_drivers(mech):
    before = mech.copy()
    rec = mech.remove_joint("A")
    assert mech.drivers == []
    mech.restore_joint(rec)
    assert mech == before


def test_bad_driver_expression_is_refused(mech):
    with pytest.raises(LinkwrightError) as info:
        mech.update_driver(0, value="__import__('os')")
    assert info.value.location == "drivers[0].value"


def test_double_driving_is_refused(mech):
    with pytest.raises(LinkwrightError, match="already driven"):
        mech.add_driver(Driver("A", "t"))


def test_unique_name(mech):
    assert mech.unique_name("body") == "body1"
    mech.add_body(Body("body1"))
    assert mech.unique_name("body") == "body2"


def test_default_axes(mech):
    assert mech.joint("A").axis_vector() == (0.0, 0.0, 1.0)
    j = Joint("P", "prismatic", ("a", "b"))
    assert j.axis_vector() == (1.0, 0.0, 0.0)
    u = Joint("U", "universal", ("a", "b"), axis=(0.0, 0.0, 2.0))
    a, b = u.axis_vector(), u.axis2_vector()
    assert abs(sum(x * y for x, y in zip(a, b))) < 1e-12 and abs(sum(x * x for x in b) - 1) < 1e-12


def test_a_helical_joint_needs_a_pitch_so_that_saved_files_load_again(tmp_path):
    from core.model import Mechanism

    m = Mechanism(space="spatial")
    m.add_body(Body("g", ground=True))
    m.add_body(Body("a"))
    m.add_joint(Joint("H", "revolute", ("g", "a")))
    with pytest.raises(LinkwrightError) as info:
        m.update_joint("H", type="helical")  # the loader refuses a helical joint without pitch: so does the model
    assert info.value.location == "joints[0].pitch"
    m.update_joint("H", type="helical", pitch=0.02)
    io.save(m, tmp_path / "h.json")
    assert io.load(tmp_path / "h.json") == m
    with pytest.raises(LinkwrightError, match="needs a pitch"):
        m.update_joint("H", pitch=None)


@pytest.mark.parametrize("axis, axis2", [
    ((0.0, 0.0, 1.0), (1.0, 0.0, 1.0)),  # 45 degrees
    ((1.0, 2.0, 2.0), (3.0, -1.0, 0.5)),
    ((0.0, 0.6, 0.8), (-2.0, 5.0, 1.0)),
    ((1.0, 0.0, 0.0), (1.0, 1e-3, 0.0)),  # nearly parallel (cosine 1 - 5e-7): still a direction normal to axis
])
def test_an_oblique_axis2_becomes_its_projection_normal_to_the_axis(axis, axis2):
    """core.model.normal_axis2: a universal joint's axis2 not normal to its axis (axis2_error) becomes its projection
    onto the plane normal to the unit axis a, p = b - (b . a) a, normalised p / |p| (for b = axis2 at any length: the
    direction is the same). Checked against that formula in numpy, and the result is normal to a, of unit length, in
    the plane of a and b on b's side (p . b = |b|^2 - (b . a)^2 > 0), and fits (axis2_error says nothing)."""
    import numpy as np

    from core.model import axis2_error, normal_axis2

    a = np.array(axis) / np.linalg.norm(axis)
    b = np.array(axis2)
    assert axis2_error(tuple(a), axis2)  # (oblique: the case projected)
    p = b - (b @ a) * a
    expected = p / np.linalg.norm(p)
    got = np.array(normal_axis2(tuple(a), axis2))
    np.testing.assert_allclose(got, expected, atol=1e-12)
    assert abs(got @ a) < 1e-12 and abs(np.linalg.norm(got) - 1.0) < 1e-12 and got @ b > 0
    assert abs(np.linalg.det(np.array([a, b, got]))) < 1e-9 * np.linalg.norm(b)  # (in the plane of a and b)
    assert axis2_error(tuple(a), tuple(got)) == ""


def test_an_axis2_that_fits_stays_and_a_parallel_one_becomes_the_default():
    """An axis2 normal to the axis (to _NORMAL_TOL, cosine 1e-4) is kept as given, not renormalised; one parallel to
    the axis (axis2_error's 'must not be parallel to axis', either sense) has no projection: None, the joint's default
    second axis (Joint.axis2_vector)."""
    from core.model import axis2_error, normal_axis2

    z = (0.0, 0.0, 1.0)
    assert normal_axis2(z, (2.0, 0.0, 0.0)) == (2.0, 0.0, 0.0)
    assert normal_axis2(z, (1.0, 0.0, 5e-5)) == (1.0, 0.0, 5e-5)  # (a rounded file's axis: within the tolerance)
    for parallel in ((0.0, 0.0, 3.0), (0.0, 0.0, -1.0), (1e-10, 0.0, 1.0)):
        assert axis2_error(z, parallel) == "must not be parallel to axis"
        assert normal_axis2(z, parallel) is None
