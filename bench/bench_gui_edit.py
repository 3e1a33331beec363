"""Benchmark: one edit of a 200-body and a 1,000-body mechanism in the GUI (command + structure analysis + every view
refreshed), with and without the repaint that follows it, and a Space switch (planar -> spatial -> planar).

Run: QT_QPA_PLATFORM=xcb LIBGL_ALWAYS_SOFTWARE=1 python bench/bench_gui_edit.py [--sizes 200 1000]   (offscreen works
too; the 3D viewport then has no GL context, so its repaint is not measured). Prints milliseconds per edit (median of
several): wall time, and the GUI thread's CPU time (time.thread_time: what the user waits for when the machine is not
shared; a run or a rank-based count the edit starts works in its own thread). Results go to bench/results/gui_edit.json
and gui_edit.md."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from core.generate import ladder  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "gui_edit"


class _Clock:
    """Wall and GUI-thread CPU milliseconds of a block."""

    def __enter__(self):
        self.w, self.c = time.perf_counter(), time.thread_time()
        return self

    def __exit__(self, *exc):
        self.wall = (time.perf_counter() - self.w) * 1e3
        self.cpu = (time.thread_time() - self.c) * 1e3


def _repaint(window, app) -> None:
    """Paint the whole window now (every panel, the graph and the 3D view), as the event loop does after an edit."""
    window.repaint()
    app.processEvents()


def measure(window, app, repeats: int = 15, structural: int = 3, spaces: int = 1) -> dict[str, float]:
    """Median milliseconds: full GUI edits (a node move; a joint type change, which also rebuilds the 3D view), each
    alone and with the repaint after it, a Space switch with its repaint, and the parts of an edit."""
    from core import structure

    doc = window.document
    names = doc.mechanism.joint_names()
    bodies = doc.mechanism.body_names()
    keys = ("edit_move", "edit_move_repaint", "edit_joint_type", "edit_joint_type_repaint", "space_switch_repaint",
            "analyze", "structure_panel", "graph_sync", "properties")
    wall = {k: [] for k in keys}
    cpu = {k: [] for k in keys}

    def rec(key, clock):
        wall[key].append(clock.wall)
        cpu[key].append(clock.cpu)

    def edit_and_repaint(key, edit):
        """Time an edit (command -> model -> changed -> every view re-reads) as `key`, and with the repaint that
        follows it as `key`_repaint."""
        with _Clock() as c:
            edit()
        rec(key, c)
        with _Clock() as c2:
            _repaint(window, app)
        c2.wall += c.wall
        c2.cpu += c.cpu
        rec(key + "_repaint", c2)

    _repaint(window, app)
    for r in range(structural):
        j = names[(7 * r) % len(names)]
        edit_and_repaint("edit_joint_type", lambda: window.editor.update_joint(j, type="prismatic"))
        doc.undo_stack.undo()
        _repaint(window, app)
    for r in range(repeats):
        b = bodies[(7 * r) % len(bodies)]
        x, y = doc.mechanism.layout[b]
        # (a real edit: new revision, re-analysis, every panel refreshed)
        edit_and_repaint("edit_move", lambda: window.editor.move({b: (x + 10.0, y)}))
        with _Clock() as c:
            window.properties.refresh()
        rec("properties", c)
        with _Clock() as c:
            structure.analyze(doc.mechanism)
        rec("analyze", c)
        with _Clock() as c:
            window.structure.refresh()
        rec("structure_panel", c)
        with _Clock() as c:
            window.graph.sync()
        rec("graph_sync", c)
    for _ in range(spaces):
        for sp in ("spatial", "planar"):
            with _Clock() as c:
                window.editor.set_space(sp)
                _repaint(window, app)
            rec("space_switch_repaint", c)
    med = statistics.median
    out = {}
    for k in keys:
        if wall[k]:
            out[f"{k}_ms"] = med(wall[k])
            out[f"{k}_cpu_ms"] = med(cpu[k])
    return out


def main() -> int:
    """Build a window over a 200-body and a 1,000-body ladder and print, and write, the timings."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[200, 1000], help="bodies of the ladders (200 1000)")
    args = ap.parse_args()
    from app.main import application
    from app.document import Document
    from app.window import MainWindow

    app = application()
    rows = []
    for n in args.sizes:
        win = MainWindow(Document(ladder(n)))
        win.resize(1440, 900)
        win.show()
        for _ in range(20):
            app.processEvents()
            time.sleep(0.02)
        m = win.document.mechanism
        big = n > 500
        res = measure(win, app, repeats=5 if big else 15, structural=2 if big else 3)
        head = (f"GUI edit of a {len(m.bodies)}-body, {len(m.joints)}-joint mechanism "
                f"({win.document.structure().loops} loops), platform {app.platformName()}:")
        print(head)
        print(f"  {'':28s} {'wall ms':>9s} {'GUI CPU ms':>11s}")
        for k in res:
            if not k.endswith("_cpu_ms"):
                base = k[:-3]
                print(f"  {base:28s} {res[k]:9.2f} {res[base + '_cpu_ms']:11.2f}")
        rows.append({"bodies": len(m.bodies), "joints": len(m.joints), "platform": app.platformName(), **res})
        win.document.undo_stack.setClean()
        win.close()  # (closeEvent: shuts every background job down)
        win.deleteLater()
        app.processEvents()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.with_suffix(".json").write_text(json.dumps({"when": time.strftime("%Y-%m-%d %H:%M"), "rows": rows}, indent=1))
    lines = [f"{time.strftime('%Y-%m-%d %H:%M')}, ladder mechanisms (core.generate.ladder), platform "
             f"{rows[0]['platform'] if rows else ''}; median ms, wall / GUI-thread CPU", "",
             "| what | " + " | ".join(f"{r['bodies']} bodies" for r in rows) + " |",
             "| --- |" + " ---: |" * len(rows)]
    for k in (rows[0] if rows else {}):
        if k.endswith("_ms") and not k.endswith("_cpu_ms"):
            base = k[:-3]
            lines.append(f"| {base} | " + " | ".join(f"{r[k]:.1f} / {r[base + '_cpu_ms']:.1f}" for r in rows) + " |")
    OUT.with_suffix(".md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
