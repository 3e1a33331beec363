"""Benchmark: the Plots panel's work on the GUI thread (CPU time, and paints of its plots).

- redraw: a contact run of a 64-body pile's size (2080 pairs; 170 of them in contact range, from random frames on;
  random forces at every frame: a pessimistic picture), 1000 frames recorded; one redraw after a batch of 25 new
  frames (the curves' new data, the plot's range, the window's paint), median of several.
- kinematics: the four-bar example solved at 3000 steps, its frames fed to the panel in batches of 34 (as the worker
  sends them), the window's events handled after each: CPU time and paints per batch.

Run: QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 1600x1000x24" python bench/bench_plots.py [--series 170]
[--frames 1000] (a software-rendered window, as the numbers in docs/gui.md; offscreen when no platform is set).
Nothing fails on a slow machine: compare runs made in one session."""

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
    def __init__(self, t: float, poses, values) -> None:
        self.t, self.poses, self.values = t, poses, values


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


def redraw(n_series: int, n_frames: int, repeats: int = 7) -> dict:
    """CPU ms of one redraw of a pile run's curves after a batch of new frames (median), and paints per redraw."""
    from app.playback.recording import FrameBatch
    from core.run import Channel

    bodies = ["floor"] + [f"s{k}" for k in range(64)]
    pairs = tuple(f"{bodies[j]}/{bodies[i]}" for j in range(1, 65) for i in range(j))  # 2080
    channels = [Channel("pair.normal_force", "normal force", "N", pairs),
                Channel("pair.active", "in contact range", "", pairs)]
    rng = np.random.default_rng(1)
    active = np.sort(rng.choice(len(pairs), n_series, replace=False))
    start = rng.integers(0, n_frames // 2, n_series)  # the frame each comes into range
    poses = np.tile(np.eye(4), (len(bodies), 1, 1))
    batch = 25
    total = n_frames + batch * (repeats + 1)

    def frame(k: int) -> _Frame:
        on = start <= k
        force, flag = np.zeros(len(pairs)), np.zeros(len(pairs), bool)
        flag[active[on]] = True
        force[active[on]] = 5 * np.abs(np.sin(0.05 * k + active[on])) + rng.random(int(on.sum()))
        return _Frame(0.01 * k, poses, {"pair.normal_force": force, "pair.active": flag})

    win, plots, rec = _window("contact")
    rec.begin("contact", bodies, channels, 0.01 * np.arange(total))
    plots.set_mode("normal force")
    rec.extend(FrameBatch([frame(k) for k in range(n_frames)]))
    plots._redraw_now()
    plots.q_curves  # (every curve made)
    _events(20)
    paints = _Paints([plots.q_widget])
    cpu, painted = [], []
    for r in range(repeats + 1):
        k0 = n_frames + batch * r
        frames = FrameBatch([frame(k) for k in range(k0, k0 + batch)])
        before = paints.count
        t0 = time.thread_time()
        rec.extend(frames)  # (a streaming contact run's redraw is timed: made now, as the spacing would)
        plots._redraw_now()
        _events()
        if r:  # (the first: warm-up)
            cpu.append(time.thread_time() - t0)
            painted.append(paints.count - before)
    shown = len(plots.visible_series())
    win.close()
    return {"series": shown, "frames": (n_frames, rec.count), "redraw_cpu_ms": 1e3 * statistics.median(cpu),
            "redraw_cpu_ms_min": 1e3 * min(cpu), "paints_per_redraw": statistics.median(painted)}


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
    ap.add_argument("--series", type=int, default=170, help="pairs in contact range (curves drawn)")
    ap.add_argument("--frames", type=int, default=1000, help="frames recorded before the redraws")
    args = ap.parse_args()
    QApplication.instance() or QApplication(sys.argv)
    r = redraw(args.series, args.frames)
    (f0, f1) = r["frames"]
    print(f"redraw of {r['series']} curves x {f0}-{f1} frames: {r['redraw_cpu_ms']:.0f} ms GUI-thread CPU "
          f"(min {r['redraw_cpu_ms_min']:.0f}), {r['paints_per_redraw']:g} paint(s) of the plot")
    k = kinematics()
    print(f"four-bar kinematics, {k['frames']} frames in {k['batches']} batches: {k['cpu_ms_per_batch']:.1f} ms "
          f"GUI-thread CPU per batch (the panel's update {k['update_ms_per_batch']:.1f} ms, then the paints), "
          f"{k['paints_per_batch']:.2f} plot paints per batch")


if __name__ == "__main__":
    main()
