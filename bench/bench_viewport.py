"""Benchmark: the 3D viewport on a 200-body planar document (Mesa llvmpipe under X; no offscreen: it needs GL).

Run: xvfb-run -a python bench/bench_viewport.py   (with no DISPLAY the script starts its own Xvfb if it can).
Prints median milliseconds of: a full build, one geometry edit (a joint's `at`), one non-geometry edit (a mass),
posing 200 bodies with set_body_poses, a pick, and (for scale) one repaint of the frame.

Then a contact run's frame on a 300-sphere pile (`--run-frames N`, default 1000 recorded frames; 900 contacts with
forces, every body's trail): the GUI thread's CPU time (time.thread_time) of the 3D view's overlays of one frame
(set_contacts, set_trails) and its repaint, frame after frame at the end of the recording, against the drawing before
(an arrow loop in Python, one line item per trail set to its whole path), the two run alternately."""

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

        run_rows = _run_frames(app, vp.__class__, Document, Selection, np)
        print(f"3D viewport, {len(mech.bodies)} bodies / {len(mech.joints)} joints, items {counts}, "
              f"platform {app.platformName()}, {vp.renderer_info() or 'no GL context'}:")
        rows = [("full build", builds), ("geometry edit update", geo), ("non-geometry edit update", nongeo),
                ("set_body_poses (all)", poses), ("pick_item", picks), ("repaint (grabFramebuffer)", paints)]
        for label, xs in rows:
            print(f"  {label:28s} median {med(xs):8.2f} ms   min {min(xs):8.2f} ms")
        print("a contact run's frame, 300 spheres, 900 contacts, 300 trails (GUI-thread CPU, overlays + repaint):")
        for label, xs in run_rows:
            print(f"  {label:28s} median {med(xs):8.2f} ms   min {min(xs):8.2f} ms")
        vp.close()
        del vp
        app.shutdown()  # before Xvfb goes away, so the X connection closes cleanly
        return 0
    finally:
        if xvfb is not None:
            xvfb.terminate()
            xvfb.wait(5)


def _old_arrow_segments(p, v, np):
    """The arrows as drawn before (a Python loop over them), for comparison."""
    out = []
    for a, d in zip(p, v):
        L = float(np.linalg.norm(d))
        if L < 1e-12:
            continue
        u = d / L
        e1 = np.cross(u, [1.0, 0.0, 0.0] if abs(u[0]) < 0.9 else [0.0, 1.0, 0.0])
        e1 /= np.linalg.norm(e1)
        e2 = np.cross(u, e1)
        tip = a + d
        back = tip - 0.18 * d
        out += [a, tip]
        for e in (e1, -e1, e2, -e2):
            out += [tip, back + 0.07 * L * e]
    return np.array(out) if out else np.zeros((2, 3))


def _run_frames(app, Viewport3D, Document, Selection, np, n_bodies: int = 300, contacts: int = 900) -> list:
    """GUI-thread CPU ms per frame of a contact run's 3D overlays and repaint: this code against the drawing before."""
    import argparse

    import pyqtgraph.opengl as gl

    from core import io

    frames = 1000
    if "--run-frames" in sys.argv:
        frames = int(sys.argv[sys.argv.index("--run-frames") + 1])
    k = int(np.ceil(np.sqrt(n_bodies)))
    bodies = [{"name": "floor", "ground": True, "shape": {"type": "halfspace", "normal": [0, 0, 1], "offset": 0}}]
    bodies += [{"name": f"s{i}", "mass": 0.1, "shape": {"type": "sphere", "radius": 0.05},
                "pose": {"position": [0.11 * (i % k), 0.11 * (i // k), 0.05]}} for i in range(n_bodies)]
    mech = io.from_dict({"format": "linkwright.mechanism", "version": 1, "space": "spatial",
                         "gravity": [0, 0, -9.81], "bodies": bodies})
    vp = Viewport3D(Document(mech), Selection())
    vp.resize(800, 600)
    vp.show()
    for _ in range(20):
        app.processEvents()
        time.sleep(0.01)
    rng = np.random.default_rng(1)
    start = np.array([[0.11 * (i % k), 0.11 * (i // k), 0.05] for i in range(n_bodies)])
    paths = start + np.cumsum(0.002 * rng.standard_normal((frames, n_bodies, 3)), axis=0)
    names = [f"s{i}" for i in range(n_bodies)]
    owners = {n: (n, None) for n in names}
    vp.set_force_reference(0.981, names)
    old_items = []

    def contacts_of(j):
        r = np.random.default_rng(j)
        return (r.uniform(0, 1.5, (contacts, 3)), r.uniform(0, 3, (contacts, 3)), r.uniform(0, 0.3, (contacts, 3)))

    def new_frame(j):
        p, fn, ff = contacts_of(j)
        vp.set_contacts(p, fn, ff)
        vp.set_trails({n: paths[: j + 1, i] for i, n in enumerate(names)}, owners, key="bench")
        vp.view.grabFramebuffer()

    def old_frame(j):
        p, fn, ff = contacts_of(j)
        vp.set_contacts(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 3)))  # (its items drawn by hand below)
        vp.set_trails({})
        s = vp.force_scale()
        vp._contact_item.setData(pos=p)
        vp._normal_item.setData(pos=_old_arrow_segments(p, s * fn, np))
        vp._friction_item.setData(pos=_old_arrow_segments(p, s * ff, np))
        for it in (vp._contact_item, vp._normal_item, vp._friction_item):
            it.setVisible(True)
        if not old_items:
            for _ in names:
                it = gl.GLLinePlotItem(mode="line_strip", width=1.5)
                it.setGLOptions("translucent")
                vp.view.addItem(it)
                old_items.append(it)
        for i, it in enumerate(old_items):
            it.setData(pos=paths[: j + 1, i])
            it.setVisible(True)
        vp.view.grabFramebuffer()
        for it in old_items:
            it.setVisible(False)

    new_frame(frames - 40)  # (the trails' buffer built up to there, as a run streaming to it has)
    rows = {"this code": [], "before (loop, item per trail)": []}
    for j in range(frames - 30, frames):
        for label, f in (("this code", new_frame), ("before (loop, item per trail)", old_frame)):
            c0 = time.thread_time()
            f(j)
            rows[label].append((time.thread_time() - c0) * 1e3)
    for it in old_items:
        vp.view.removeItem(it)
    vp.close()
    return list(rows.items())


if __name__ == "__main__":
    sys.exit(main())
