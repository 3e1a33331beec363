"""Shared fixtures: paths to the shipped examples and a tiny document builder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "resources" / "examples"


@pytest.fixture
def fourbar_dict() -> dict:
    """The normative format-v1 example of the foundation issue, as parsed JSON."""
    return json.loads((EXAMPLES / "fourbar.json").read_text())
