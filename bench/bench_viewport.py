"""Benchmark: the 3D viewport on a 200-body planar document (Mesa llvmpipe under X; no offscreen: it needs GL).

Run: xvfb-run -a python bench/bench_viewport.py   (with no DISPLAY the script starts its own Xvfb if it can).
Prints median milliseconds of: a full build, one geometry edit (a joint's `at`), one non-geometry edit (a mass),
posing 200 bodies with set_body_poses, a pick, and (for scale) one repaint of the frame."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _ensure_display() -> subprocess.Popen | None:
    """Start a private Xvfb when there is no X display (returns it, to be ended at exit); exits with a hint if impossible."""
    if os.environ.get("DISPLAY"):
        return None
    if shutil.which("Xvfb") is None:
        print("no X display: run it as   xvfb-run -a python bench/bench_viewport.py", file=sys.stderr)
        raise SystemExit(2)
    r, w = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "1280x1024x24", "-nolisten", "tcp"],
                            pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(w)
    with os.fdopen(r) as f:
        number = f.readline().strip()  # Xvfb writes its display number once it accepts connections
    if not number:
        proc.terminate()
        print("could not start Xvfb: run it as   xvfb-run -a python bench/bench_viewport.py", file=sys.stderr)
        raise SystemExit(2)
    os.environ["DISPLAY"] = f":{number}"
    return proc


def main() -> int:
    """Build a viewport over a 200-body document and print the timings."""
    xvfb = _ensure_display()
    os.environ["QT_QPA_PLATFORM"] = "xcb"
    os.environ.setdefault("LIBGL_ALWAYS_SOFTWARE", "1")
    try:
        from PySide6.QtCore import QCoreApplication, Qt
        from PySide6.QtGui import QUndoCommand
        from PySide6.QtWidgets import QApplication

        QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
        app = QApplication.instance() or QApplication([])
        import numpy as np

        from app.document import Document
        from app.selection import Selection
        from app.viewport import Viewport3D
        from core.generate import ladder
        from core.transforms import rot_z

        class Edit(QUndoCommand):
            def __init__(self, fn, undo):
                super().__init__("edit")
                self.fn, self.undo_fn = fn, undo

            def redo(self):
                self.fn(doc.mechanism)

            def undo(self):
                self.undo_fn(doc.mechanism)

        med = statistics.median
        doc, sel = Document(ladder(200)), Selection()
        t0 = time.perf_counter()
        vp = Viewport3D(doc, sel)
        builds = [(time.perf_counter() - t0) * 1e3]
        vp.resize(800, 600)
        vp.show()
        for _ in range(20):
            app.processEvents()
            time.sleep(0.01)
        mech = doc.mechanism
        counts = vp.item_count()

        def timed(push_edit) -> float:
            t0 = time.perf_counter()
            push_edit()
            vp.item_count()  # any query brings the viewport up to date (a coalesced update runs at the latest here)
            return (time.perf_counter() - t0) * 1e3

        geo, nongeo = [], []
        for r in range(15):
            name = mech.joints[40 + 7 * r].name
            old = mech.joint(name).at
            new = (old[0] + 0.2, old[1] + 0.1, 0.0)  # inside the bounding box: the scale of the drawing stays
            geo.append(timed(lambda: doc.push(Edit(lambda m: m.update_joint(name, at=new), lambda m: m.update_joint(name, at=old)))))
            geo.append(timed(doc.undo_stack.undo))
            body = mech.bodies[30 + 5 * r].name
            mass = mech.body(body).mass
            nongeo.append(timed(lambda: doc.push(Edit(lambda m: m.update_body(body, mass=2.0), lambda m: m.update_body(body, mass=mass)))))
            nongeo.append(timed(doc.undo_stack.undo))

        for copy in [mech.copy() for _ in range(4)]:  # a full build again: a copy of the mechanism replaces it
            t0 = time.perf_counter()
            doc.replace(copy)
            vp.item_count()
            builds.append((time.perf_counter() - t0) * 1e3)
        mech = doc.mechanism
        names = mech.body_names()
        poses, picks, paints = [], [], []
        for r in range(15):
            frame = {n: rot_z(0.01 * r * (i % 5)) for i, n in enumerate(names)}
            t0 = time.perf_counter()
            vp.set_body_poses(frame)
            poses.append((time.perf_counter() - t0) * 1e3)
        vp.set_body_poses({n: np.eye(4) for n in names})
        vp.set_view("fit")
        for r in range(15):
            x, y = vp.project(np.asarray(mech.joints[5 * r].at))
            t0 = time.perf_counter()
            vp.pick_item(x, y)
            picks.append((time.perf_counter() - t0) * 1e3)
        for r in range(5):
            t0 = time.perf_counter()
            vp.view.grabFramebuffer()
            paints.append((time.perf_counter() - t0) * 1e3)

        print(f"3D viewport, {len(mech.bodies)} bodies / {len(mech.joints)} joints, items {counts}, "
              f"platform {app.platformName()}, {vp.renderer_info() or 'no GL context'}:")
        rows = [("full build", builds), ("geometry edit update", geo), ("non-geometry edit update", nongeo),
                ("set_body_poses (all)", poses), ("pick_item", picks), ("repaint (grabFramebuffer)", paints)]
        for label, xs in rows:
            print(f"  {label:28s} median {med(xs):8.2f} ms   min {min(xs):8.2f} ms")
        vp.close()
        del vp
        app.shutdown()  # before Xvfb goes away, so the X connection closes cleanly
        return 0
    finally:
        if xvfb is not None:
            xvfb.terminate()
            xvfb.wait(5)


if __name__ == "__main__":
    sys.exit(main())
