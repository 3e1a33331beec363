"""Layering: core never imports Qt, pyqtgraph, OpenGL or app (so it runs headless and in notebooks)."""

from __future__ import annotations

import ast
from pathlib import Path

FORBIDDEN = ("PySide6", "PyQt5", "PyQt6", "shiboken6", "pyqtgraph", "OpenGL", "app")
CORE = Path(__file__).resolve().parents[2] / "core"


def imported_roots(path: Path) -> set[str]:
    """Top-level package names a module imports (absolute imports only; relative ones stay inside core)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


def test_core_imports_no_gui_package():
    files = sorted(CORE.rglob("*.py"))
    assert len(files) > 5
    bad = {str(f.relative_to(CORE)): sorted(imported_roots(f) & set(FORBIDDEN)) for f in files}
    assert {k: v for k, v in bad.items() if v} == {}


def test_the_checker_sees_a_gui_import(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from PySide6.QtCore import QObject\n    import pyqtgraph.opengl as gl\n")
    assert imported_roots(f) >= {"PySide6", "pyqtgraph"}
