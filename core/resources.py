"""Where the shipped resources (examples, icons, the format's JSON schema) are.

In a source checkout or an editable install they are the repository's `resources/` folder; a wheel
(`pip install .`) ships the same files as the data-only package `linkwright_resources` (pyproject.toml maps it to
`resources/`), found here through the import system without importing anything.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

__all__ = ["resource_dir"]

PACKAGE = "linkwright_resources"


@lru_cache(maxsize=None)
def resource_dir() -> Path:
    """The folder holding `examples/`, `icons/` and `schema/`."""
    source = Path(__file__).resolve().parents[1] / "resources"
    if (source / "examples").is_dir():
        return source
    spec = importlib.util.find_spec(PACKAGE)
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return source  # (not found: paths under it then name what is missing)
