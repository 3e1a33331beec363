"""Benchmark: the Plots panel's work on the GUI thread (CPU time, and paints of its plots).

- redraw: a contact run of a pile's size (sparse per-pair channels, as a contact run records them: the pairs in contact
  range at some frame held), random forces at every frame (a pessimistic picture), 1000 frames recorded; one redraw
  after a batch of 25 new frames (the curves' new data, the plot's range, the window's paint), median of several,
  and of that the panel's update (new data and range) apart from the window's events (the paint). Two cases by
  default: a 64-body pile's 170 in-range pairs (2080 pairs) and a 300-body pile's 900 (45,150 pairs: user test s58).
- kinematics: the four-bar example solved at 3000 steps, its frames fed to the panel in batches of 34 (as the worker
  sends them), the window's events handled after each: CPU time and paints per batch.

Run: QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 1600x1000x24" python bench/bench_plots.py [--series 170,900]
[--bodies 64,300] [--frames 1000] (a software-rendered window, as the numbers in docs/gui.md; offscreen when no
platform is set). Nothing fails on a slow machine: compare runs made in one session."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # (its windows paint with Qt's raster engine either way)

import numpy as np  # noqa: E402
from PySide6.QtCore import QEvent, QObject  # noqa: E402
from PySide6.QtWidgets import QApplication, QMainWindow  # noqa: E402


class _Paints(QObject):
    """Counts paint events of the plots' views."""

    def __init__(self, widgets) -> None:
        super().__init__()
        self.count = 0
        for w in widgets:
            w.viewport().installEventFilter(self)

    def eventFilter(self, obj, ev):  # noqa: N802 - Qt API
        if ev.type() == QEvent.Paint:
            self.count += 1
        return False


class _Playback:
    """What the panel reads of a Playback: a recording, no comparison run."""

    def __init__(self, kind: str) -> None:
        from app.playback.recording import FrameRecording

        self.recording, self.ghost, self.kind = FrameRecording(), None, kind

    def seek_time(self, t: float) -> None:
        pass


class _Frame:
    def __init__(self, t: float, poses, values, ranged=()) -> None:
        self.t, self.poses, self.values, self.ranged = t, poses, values, ranged


def _window(kind: str):
    from app.plots import PlotsPanel

    pb = _Playback(kind)
    win = QMainWindow()
    win.resize(1440, 400)
    plots = PlotsPanel(pb)
    win.setCentralWidget(plots)
    win.show()
    _events(20)
    return win, plots, pb.recording


def _events(n: int = 5) -> None:
    app = QApplication.instance()
    for _ in range(n):
        app.processEvents()
        time.sleep(0.002)


def redraw(n_series: int, n_frames: int, n_bodies: int = 64, repeats: int = 7) -> dict:
    """CPU ms of one redraw of a pile run's curves after a batch of new frames (median; the panel's update apart), the
    plot's paints per redraw and its curve items."""
    import pyqtgraph as pg

    from app.playback.recording import FrameBatch
    from app.plots.panel import _Bundle
    from core.run import Channel

    bodies = ["floor"] + [f"s{k}" for k in range(n_bodies)]
    pairs = tuple(f"{bodies[j]}/{bodies[i]}" for j in range(1, n_bodies + 1) for i in range(j))
    sparse = ("pair.normal_force", "pair.active")
    channels = [Channel("pair.normal_force", "normal force", "N", pairs, sparse=True),
                Channel("pair.active", "in contact range", "", pairs, sparse=True, dtype="bool")]
    rng = np.random.default_rng(1)
    active = np.sort(rng.choice(len(pairs), n_series, replace=False))
    start = rng.integers(0, n_frames // 2, n_series)  # the frame each comes into range
    poses = np.tile(np.eye(4), (len(bodies), 1, 1))
    batch = 25
    total = n_frames + batch * (repeats + 1)
    known: list = []  # (the run's labels in range so far: FrameBatch's)

    def out_of_range(_rot, _origins, labels) -> dict:  # (a pair out of range: no force, not in range)
        k = len(_rot)
        return {"pair.normal_force": np.zeros((k, len(labels))), "pair.active": np.zeros((k, len(labels)), bool)}

    def frame(k: int) -> _Frame:
        on = active[start <= k]
        force = np.zeros(len(pairs))  # (a frame's values over every pair; the batch stacks the columns held)
        flag = np.zeros(len(pairs), bool)
        flag[on] = True
        force[on] = 5 * np.abs(np.sin(0.05 * k + on)) + rng.random(on.size)
        return _Frame(0.01 * k, poses, {"pair.normal_force": force, "pair.active": flag}, on)

    def frames(k0: int, k1: int) -> FrameBatch:
        return FrameBatch([frame(k) for k in range(k0, k1)], sparse, known)

    win, plots, rec = _window("contact")
    rec.begin("contact", bodies, channels, 0.01 * np.arange(total), {"out_of_range": out_of_range})
    plots.set_mode("normal force")
    for k0 in range(0, n_frames, 100):
        rec.extend(frames(k0, min(k0 + 100, n_frames)))
    plots._redraw_now()
    plots.q_curves  # (every curve made)
    _events(20)
    paints = _Paints([plots.q_widget])
    cpu, update, painted = [], [], []
    for r in range(repeats + 1):
        k0 = n_frames + batch * r
        new = frames(k0, k0 + batch)
        before = paints.count
        t0 = time.thread_time()
        rec.extend(new)  # (a streaming contact run's redraw is timed: made now, as the spacing would)
        plots._redraw_now()
        t1 = time.thread_time()
        _events()
        if r:  # (the first: warm-up)
            cpu.append(time.thread_time() - t0)
            update.append(t1 - t0)
            painted.append(paints.count - before)
    shown = len(plots.visible_series())
    items = sum(1 for c in plots.q_plot.getViewBox().addedItems  # (curve items, or bundles of many curves)
                if isinstance(c, (pg.PlotDataItem, _Bundle)) and c.isVisible())
    win.close()
    return {"series": shown, "pairs": len(pairs), "frames": (n_frames, rec.count),
            "redraw_cpu_ms": 1e3 * statistics.median(cpu), "redraw_cpu_ms_min": 1e3 * min(cpu),
            "update_cpu_ms": 1e3 * statistics.median(update), "paints_per_redraw": statistics.median(painted),
            "items": items}


def kinematics(steps: int = 3000, batch: int = 34) -> dict:
    """GUI-thread CPU ms and plot paints per batch of a four-bar run's frames fed to the panel."""
    from app.playback.recording import FrameBatch
    from core import io
    from core.run import RunSpec, open_run

    run = open_run(io.load(ROOT / "resources" / "examples" / "fourbar.json"), RunSpec(t_end=1.0, steps=steps))
    frames = list(run)
    win, plots, rec = _window("kinematics")
    paints = _Paints([plots.q_widget, plots.xy_widget])
    rec.begin("kinematics", run.body_names, run.channels, np.linspace(0.0, 1.0, steps + 1))
    _events()
    grew = [0.0]

    def timed(n, on_grew=plots._on_grew):
        t = time.thread_time()
        on_grew(n)
        grew[0] += time.thread_time() - t

    rec.grew.disconnect(plots._on_grew)
    rec.grew.connect(timed)
    before, n = paints.count, 0
    t0 = time.thread_time()
    for k in range(0, len(frames), batch):
        rec.extend(FrameBatch(frames[k:k + batch]))
        n += 1
        _events(3)
    cpu = time.thread_time() - t0
    win.close()
    return {"frames": rec.count, "batches": n, "cpu_ms_per_batch": 1e3 * cpu / n,
            "update_ms_per_batch": 1e3 * grew[0] / n, "paints_per_batch": (paints.count - before) / n}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", default="170,900", help="pairs in contact range (curves drawn), one case each")
    ap.add_argument("--bodies", default="64,300", help="the pile's bodies, one per case (the last for the rest)")
    ap.add_argument("--frames", type=int, default=1000, help="frames recorded before the redraws")
    args = ap.parse_args()
    QApplication.instance() or QApplication(sys.argv)
    series = [int(n) for n in args.series.split(",")]
    bodies = [int(n) for n in args.bodies.split(",")]
    for k, n in enumerate(series):
        r = redraw(n, args.frames, bodies[min(k, len(bodies) - 1)])
        (f0, f1) = r["frames"]
        print(f"redraw of {r['series']} curves ({r['pairs']} pairs) x {f0}-{f1} frames: {r['redraw_cpu_ms']:.0f} ms "
              f"GUI-thread CPU (min {r['redraw_cpu_ms_min']:.0f}; the panel's update {r['update_cpu_ms']:.0f}, then "
              f"the paint), {r['paints_per_redraw']:g} paint(s) of the plot, {r['items']} item(s) drawing them")
    k = kinematics()
    print(f"four-bar kinematics, {k['frames']} frames in {k['batches']} batches: {k['cpu_ms_per_batch']:.1f} ms "
          f"GUI-thread CPU per batch (the panel's update {k['update_ms_per_batch']:.1f} ms, then the paints), "
          f"{k['paints_per_batch']:.2f} plot paints per batch")


if __name__ == "__main__":
    main()
