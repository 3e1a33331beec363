"""Benchmark: one edit of a 200-body mechanism in the GUI (command + structure analysis + every view refreshed).

Run: QT_QPA_PLATFORM=xcb LIBGL_ALWAYS_SOFTWARE=1 python bench/bench_gui_edit.py   (offscreen works too; the 3D
viewport then has no GL context). Prints milliseconds per edit (median of several)."""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from core.generate import ladder  # noqa: E402


def measure(window, repeats: int = 15, structural: int = 3) -> dict[str, float]:
    """Median milliseconds: full GUI edits (a node move; a joint type change, which also rebuilds the 3D view) and parts."""
    from core import structure

    doc = window.document
    names = doc.mechanism.joint_names()
    bodies = doc.mechanism.body_names()
    move, typ, analysis, panel, graph, props = [], [], [], [], [], []
    for r in range(structural):
        j = names[(7 * r) % len(names)]
        t0 = time.perf_counter()
        window.editor.update_joint(j, type="prismatic")  # command -> model -> changed -> every view re-reads
        typ.append((time.perf_counter() - t0) * 1e3)
        doc.undo_stack.undo()
    for r in range(repeats):
        b = bodies[(7 * r) % len(bodies)]
        x, y = doc.mechanism.layout[b]
        t0 = time.perf_counter()
        window.editor.move({b: (x + 10.0, y)})  # a real edit: new revision, re-analysis, every panel refreshed
        move.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        window.properties.refresh()
        props.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        structure.analyze(doc.mechanism)
        analysis.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        window.structure.refresh()
        panel.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        window.graph.sync()
        graph.append((time.perf_counter() - t0) * 1e3)
    med = statistics.median
    return {
        "edit_move_ms": med(move),
        "edit_joint_type_ms": med(typ),
        "analyze_ms": med(analysis),
        "structure_panel_ms": med(panel),
        "graph_sync_ms": med(graph),
        "properties_ms": med(props),
    }


def main() -> int:
    """Build a window over a 200-body ladder and print the timings."""
    from app.main import application
    from app.document import Document
    from app.window import MainWindow

    app = application()
    win = MainWindow(Document(ladder(200)))
    win.resize(1440, 900)
    win.show()
    app.processEvents()
    m = win.document.mechanism
    res = measure(win)
    print(f"GUI edit of a {len(m.bodies)}-body, {len(m.joints)}-joint mechanism ({win.document.structure().loops} loops), "
          f"platform {app.platformName()}:")
    for k, v in res.items():
        print(f"  {k:20s} {v:8.2f}")
    win.document.undo_stack.setClean()
    win.files.shutdown()
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
