"""bench/bench_contact.py end to end on the cheapest scene: a run that cannot finish within its CPU budget is reported
as not completed, with its reason and the steps it did, instead of holding up the bench."""

import json
import subprocess
import sys

from tests.conftest import ROOT


def test_a_run_over_its_budget_is_reported_not_waited_on(tmp_path):
    out = tmp_path / "contact"
    # 100,000 steps of the sphere on a plane cannot fit in 0.5 CPU-s at any speed this solver has had (> 0.05 ms a
    # step), and a few steps always do
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_contact.py"), "--scenes", "sphere:7,disc",
                           "--seeds", "1", "--seed", "11", "--method", "implicit", "--steps", "100000",
                           "--budget", "0.5", "--out", str(out)],
                          capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "master seed 11" in proc.stdout and "seeds 7" in proc.stdout
    res = json.loads(out.with_suffix(".json").read_text())
    runs = res["runs"]
    assert [(r["family"], r["seed"]) for r in runs][0] == ("sphere", 7)
    # the disc's seed is drawn from the master seed: the same master seed draws it again
    assert runs[1]["family"] == "disc" and res["meta"]["plan"][1] == ["disc", [runs[1]["seed"]]]
    for r in runs:
        assert not r["completed"]
        assert r["stop"].startswith("CPU budget of 0.5 s spent after")
        assert 0 < r["steps_done"] < 100000
        assert len(r["step_fields"]["cpu"]) == r["steps_done"]
        assert r["steps_per_s"] > 0
    table = out.with_suffix(".md").read_text()
    assert "| sphere | implicit | 0/1 |" in table


def test_an_unknown_scene_is_a_located_error_with_status_2():
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_contact.py"), "--scenes", "pile27,cubez:3"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2
    assert "--scenes: item 2 ('cubez:3'): unknown scene" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_issue_targets_are_checked_per_family():
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_contact import unmet_targets

    row = {"family": "pile27", "runs": 10, "completed": 10, "slow_steps": 0, "deepest_gap": -1e-12,
           "deepest_exact": -8e-10, "median_steps_per_s": 55.0, "slowest_seed_steps_per_s": 21.0}
    assert unmet_targets(row) == []
    # one run short, a slow step, 2e-9 m of overlap from the poses, a slowest seed under 20 steps/s
    row.update(completed=9, slow_steps=1, deepest_exact=-2e-9, slowest_seed_steps_per_s=19.0)
    assert unmet_targets(row) == ["1/10 incomplete", "1 step(s) > 0.5 s", "overlap -2.0e-09 m",
                                  "slowest seed < 20/s"]
    # the mixed pile has no rate target in the issue: only completion, slow steps and overlap
    assert unmet_targets({**row, "family": "mixed13", "completed": 10, "slow_steps": 0, "deepest_exact": 0.0,
                          "median_steps_per_s": 1.0, "slowest_seed_steps_per_s": 1.0}) == []
    # steps a failed implicit step's fallbacks took: completed runs, but not the implicit method's steps
    assert unmet_targets({**row, "completed": 10, "slow_steps": 0, "deepest_exact": 0.0, "slowest_seed_steps_per_s": 21,
                          "fallback_steps": 2, "relaxed_steps": 1}) == [
        "2 step(s) by the explicit method", "1 step(s) by the relaxed problem"]


def test_scenes_outside_the_issue_run_only_when_named():
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_contact import parse_scenes
    from scenes import FAMILIES

    default = [name for name, _seeds in parse_scenes(None)]
    assert "pile64" not in default and default == [n for n in FAMILIES if n != "pile64"]
    assert parse_scenes("pile64:3") == [("pile64", [3])]


def test_saved_states_of_a_whole_run_replay_to_the_same_iterations(tmp_path):
    # --hard-iterations -1 saves the state before every step of a run; replay makes one step from each with the
    # current code, in one process: on the code that saved them the iterations are those saved, step by step (the
    # step is deterministic: the replay is a fixed set to compare two versions of the solver on)
    states = tmp_path / "states"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_contact.py"), "--scenes", "pile8:3",
                           "--seeds", "1", "--method", "implicit", "--steps", "12", "--budget", "60",
                           "--save-hard", str(states), "--hard-iterations", "-1", "--out", str(tmp_path / "b")],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert len(list(states.glob("pile8_s3_implicit_k*.npz"))) == 12
    out = tmp_path / "replay.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "hard_states.py"), "replay", str(states),
                           "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(out.read_text())
    steps = res["steps"]
    assert [s["step"] for s in steps] == list(range(12))
    assert all(s["converged"] for s in steps)
    assert [s["iterations"] for s in steps] == [s["saved_iterations"] for s in steps]
    assert sum(s["iterations"] for s in steps) > 0  # (the pile lands within the 12 steps)
    assert res["totals"]["pile8"]["states"] == 12
    assert "pile8" in proc.stdout and "ratio" in proc.stdout
    # --newton replays with other limits of the Newton attempts (here a proximal weight ten times larger: other
    # paths once the pile has three or more pairs), and compare sets one replay against another, state by state
    out2 = tmp_path / "replay2.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "hard_states.py"), "replay", str(states),
                           "--newton", "prox_scale=1", "--out", str(out2)], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    other = json.loads(out2.read_text())
    assert other["newton"] == {"prox_scale": 1.0}
    its2 = sum(s["iterations"] for s in other["steps"])
    assert its2 != sum(s["iterations"] for s in steps) and all(s["converged"] for s in other["steps"])
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "hard_states.py"), "compare", str(out), str(out2)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.strip().startswith("pile8"))
    base_its = sum(s["iterations"] for s in steps)
    assert f"{its2}/{base_its}" in row.replace(" ", "")  # the variant's iterations against the base's
    bad = subprocess.run([sys.executable, str(ROOT / "bench" / "hard_states.py"), "replay", str(states), "--newton",
                          "no_such_limit=1"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert bad.returncode == 2 and "no_such_limit=1" in bad.stderr and "prox_scale" in bad.stderr
