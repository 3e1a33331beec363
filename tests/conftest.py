"""Shared fixtures: paths to the shipped examples and a tiny document builder."""

from __future__ import annotations

import json
import os
from pathlib import Path

# BLAS on one thread for every test, as the app and the command line run it (app/cli.py, app/playback/worker.py):
# the contact piles are chaotic, and a matrix product summed in another order by a second thread changes a run's
# rounding and so its path (tests/core/contact/test_pile.py's eight spheres, test_relaxed.py's saved explicit step:
# they passed after the app tests, whose first run limits BLAS for the whole process, and failed when run alone)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

threadpool_limits(limits=1, user_api="blas")  # (numpy may have been imported first, by a plugin)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "resources" / "examples"


@pytest.fixture
def fourbar_dict() -> dict:
    """The normative format-v1 example of the foundation issue, as parsed JSON."""
    return json.loads((EXAMPLES / "fourbar.json").read_text())
