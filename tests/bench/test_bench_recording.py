"""bench/bench_recording.py end to end on a few steps: it prints its seed and writes the pile's recording sizes, the
pairs in range a small part of the candidate pairs and the recordings' measured bytes those of the pairs held."""

import json
import subprocess
import sys

from tests.conftest import ROOT


def test_a_short_run_writes_the_sizes_with_its_seed(tmp_path):
    out = tmp_path / "rec.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_recording.py"), "--seed", "5", "--t-end",
                           "0.03", "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("seed 5: 64 spheres in a bin")
    res = json.loads(out.read_text())
    assert res["seed"] == 5 and res["frames"] == 4 and res["completed"]
    assert res["pairs"] == 64 * 63 // 2 + 64 * 5  # (the spheres' pairs, and each sphere's with the floor and walls)
    assert 0 < res["pairs_ever_in_range"] < res["pairs"] // 10
    assert res["frame_bytes_ever_in_range"] < res["frame_bytes_every_pair"] // 5
    # the app's recording, measured: the bytes frame_bytes counts for the pairs it holds
    assert res["app_recording_bytes"] == res["frames"] * res["frame_bytes_ever_in_range"]
    assert "| pairs ever in contact range |" in out.with_suffix(".md").read_text()
