"""A contact recording holds the per-pair values of the pairs that came into contact range (Recording.pair_columns,
core.run.ColumnStore); the other pairs' values follow from the poses (OutOfRange).  Its files: the .npz keeps what it
holds (and what the rest follows from), the .csv has a column group per pair ever in range, as before; a .npz written
before (every pair's arrays, data/pile_before_columns.npz and .csv: the 5-sphere pile example for 0.2 s, written by
the code of commit 9fbdf1d) still loads, to the same numbers."""

from __future__ import annotations

import io as _io
from pathlib import Path

import numpy as np
import pytest

from core import io
from core.contact import load_npz, record
from core.run import RunSpec, open_run

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "resources" / "examples"
DATA = Path(__file__).resolve().parent / "data"
PAIR_ATTRS = ("active", "gap", "pn", "pf", "pr", "point_a", "point_b", "normal")


def _csv(rec, pairs=None) -> str:
    out = _io.StringIO(newline="")
    rec.save_csv(out, pairs)
    return out.getvalue()


@pytest.fixture(scope="module")
def pile():
    return record(open_run(io.load(EXAMPLES / "contact_pile.json"), RunSpec(t_end=0.2)))


def test_a_file_written_before_loads_with_every_pair_held(pile):
    old = load_npz(DATA / "pile_before_columns.npz")
    assert old.pair_columns.tolist() == list(range(35)) and old.out_of_range is None
    assert old.gap.shape == (21, 35) and old.pf.shape == (21, 35, 3) and old.active.dtype == bool
    # the same run's start as the code of now records it (its later rows moved when the friction rows' slip changed:
    # core.contact.pair.carried_slip, so they are compared with the CSV that code wrote, below)
    assert old.pair_names == pile.pair_names and pile.pair_columns.size < 35
    for attr in PAIR_ATTRS + ("t", "position", "orientation", "velocity", "angular"):
        if attr in ("point_a", "point_b", "normal", "gap"):
            # (a converged closest-point query's, from GJK's points: the same to rounding, not to the bit; GJK's
            # simplex step by signed volumes moved one point of the file's by 7e-18 m)
            np.testing.assert_allclose(getattr(old, attr)[0], getattr(pile, attr)[0], rtol=1e-12, atol=1e-15,
                                       err_msg=attr)
        else:
            np.testing.assert_array_equal(getattr(old, attr)[0], getattr(pile, attr)[0], err_msg=attr)
    np.testing.assert_array_equal(old.t, pile.t)
    # its CSV, written now, is the CSV the code then wrote (the pairs ever in range, in pair order)
    text = (DATA / "pile_before_columns.csv").read_bytes().decode()
    assert _csv(old) == text
    # ... and the CSV of the run recorded now has the same columns
    assert _csv(pile).splitlines()[0] == text.splitlines()[0]


def test_the_npz_keeps_the_pairs_held_and_loads_to_the_same_numbers(pile, tmp_path):
    pile.save_npz(tmp_path / "r.npz")
    with np.load(tmp_path / "r.npz") as z:
        # (K, C) arrays for the C pairs held, not (K, 35); the out-of-range values' constants beside them
        assert z["pair_columns"].tolist() == pile.pair_columns.tolist()
        assert z["gap"].shape == (21, pile.pair_columns.size) and z["point_a"].shape == (21, pile.pair_columns.size, 3)
        assert {"out_of_range.a", "out_of_range.radius", "out_of_range.rotation"} <= set(z.files)
    back = load_npz(tmp_path / "r.npz")
    assert back.pair_columns.tolist() == pile.pair_columns.tolist()
    for attr in PAIR_ATTRS:
        np.testing.assert_array_equal(back.pairs[attr], pile.pairs[attr], err_msg=attr)
        np.testing.assert_array_equal(getattr(back, attr), getattr(pile, attr), err_msg=attr)
    assert _csv(back) == _csv(pile)


def test_the_csv_has_the_pairs_ever_in_range_and_any_pair_asked_for(pile):
    ever = pile.ever_active().tolist()
    assert 0 < len(ever) < 35 and set(ever) <= set(pile.pair_columns.tolist())
    head = _csv(pile).splitlines()[0].split(",")
    assert [c[:-4] for c in head if c.endswith(".gap")] == [pile.pair_names[p] for p in ever]
    # a pair never in range, asked for: its out-of-range values (no impulse; the bounding spheres' gap)
    never = next(p for p in range(35) if p not in pile.pair_columns)
    rows = [r.split(",") for r in _csv(pile, [never]).splitlines()]
    name = pile.pair_names[never]
    gap = np.array([float(r[rows[0].index(f"{name}.gap")]) for r in rows[1:]])
    pn = np.array([float(r[rows[0].index(f"{name}.pn")]) for r in rows[1:]])
    np.testing.assert_array_equal(gap, pile.gap[:, never])
    assert not pn.any() and (gap > 0).all()


def test_pair_series_reads_held_and_other_pairs_alike(pile):
    sel = [int(pile.pair_columns[0]), next(p for p in range(35) if p not in pile.pair_columns)]
    for attr in PAIR_ATTRS:
        np.testing.assert_array_equal(pile.pair_series(attr, sel), getattr(pile, attr)[:, sel], err_msg=attr)
