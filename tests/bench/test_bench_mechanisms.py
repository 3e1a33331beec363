"""bench/bench_mechanisms.py: its runs end to end on a few steps, its jitter reproduced from the printed seed, and the
free variant that measures the cost of joints."""

import json
import subprocess
import sys

import numpy as np

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
EXAMPLES = ROOT / "resources" / "examples"


def test_a_short_run_writes_both_variants_of_each_scene(tmp_path):
    out = tmp_path / "mech"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_mechanisms.py"), "--scenes", "cam,pusher",
                           "--steps", "3", "--seed", "9", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "jitter seed 9" in proc.stdout
    res = json.loads(out.with_suffix(".json").read_text())
    assert res["meta"]["seed"] == 9
    runs = res["runs"]
    assert [(r["scene"], r["variant"]) for r in runs] == [("cam", "jointed"), ("cam", "free"), ("pusher", "jointed"),
                                                          ("pusher", "free")]
    for r in runs:
        assert r["completed"] and r["steps_done"] == 3 and len(r["step_cpu"]) == 3
    # the cam: one body moved by forces (the follower) and the cam moved by its driver; free: the cam stands still
    assert (runs[0]["bodies"], runs[0]["kinematic"], runs[0]["joints"], runs[0]["drivers"]) == (1, 1, 2, 1)
    assert (runs[1]["bodies"], runs[1]["kinematic"], runs[1]["joints"], runs[1]["drivers"]) == (1, 0, 0, 0)
    table = out.with_suffix(".md").read_text()
    assert "| cam | jointed | 1 (1) | 2 (1) | 3/3 |" in table


def test_an_unknown_scene_is_an_error_with_status_2():
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_mechanisms.py"), "--scenes", "tray,cams"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2
    assert "--scenes: unknown scene 'cams'" in proc.stderr and "Traceback" not in proc.stderr


def test_the_jitter_is_reproduced_by_its_seed_and_stays_small():
    from bench_mechanisms import JITTER_MM, SCENES, jittered

    fname, parts = SCENES["tray"]
    doc = json.loads((EXAMPLES / fname).read_text())
    a = jittered(doc, parts, np.random.default_rng([5, 2]))
    b = jittered(doc, parts, np.random.default_rng([5, 2]))
    c = jittered(doc, parts, np.random.default_rng([6, 2]))
    assert a == b and a != c
    for before, after in zip(doc["bodies"], a["bodies"]):
        if before["name"] in parts:
            d = np.subtract(after["pose"]["position"], before["pose"]["position"])
            assert 0 < np.abs(d[:2]).max() <= JITTER_MM * 1e-3 and d[2] == 0  # horizontal, at most 2 mm
            assert abs(np.linalg.norm(after["pose"]["orientation"]) - 1) < 1e-12
        else:
            assert after == before


def test_the_free_variant_fixes_driven_bodies_and_frees_the_others():
    from bench_mechanisms import free_variant

    tray = free_variant(json.loads((EXAMPLES / "contact_tray_tilt.json").read_text()))
    assert tray["joints"] == [] and tray["drivers"] == []
    by_name = {b["name"]: b for b in tray["bodies"]}
    assert by_name["tray"]["ground"] is True and "density" not in by_name["tray"]  # the tray stays where it starts
    assert "ground" not in by_name["ball1"]
    # the four-bar: its rods (mass and inertia in the file, no shape) become free bodies; the ground stays
    bar = free_variant(json.loads((EXAMPLES / "contact_fourbar_swing.json").read_text()))
    assert [b["name"] for b in bar["bodies"]] == ["ground", "crank", "coupler", "rocker"] and bar["joints"] == []
    # the feeder: the massless crank and rocker (no shape) are left out, the coupler's plate is fixed
    feeder = free_variant(json.loads((EXAMPLES / "contact_parts_feeder.json").read_text()))
    names = {b["name"]: b for b in feeder["bodies"]}
    assert set(names) == {"floor", "coupler", "box"} and names["coupler"]["ground"] is True
