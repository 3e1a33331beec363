"""Work off the GUI thread: the one mechanism for the app's background jobs (the motion's runs, the auto layout).

Each job is a Python thread (visible to `threading.enumerate()`, so the GUI tests catch a thread left behind) with its
own cancel flag, which the work checks between its steps. A job works on a frozen copy of what it needs, taken on the
GUI thread before it starts, and never touches a widget or the document; its results cross back to the GUI thread by
the owner's queued signals, carrying the job's token, so that a late result of a job cancelled meanwhile is recognised
and dropped. Starting a job cancels the one before it; `shutdown` (window close, document replaced) cancels them all
and joins their threads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Job", "BackgroundJobs"]


@dataclass(eq=False)
class Job:
    """One background job: its token (1, 2, ... per BackgroundJobs), cancel flag and thread."""

    token: int
    cancel: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    started: float = field(default_factory=time.perf_counter)  # when it was started (perf_counter)

    def cancelled(self) -> bool:
        """Whether the job was asked to stop (its work checks this between steps)."""
        return self.cancel.is_set()


class BackgroundJobs:
    """Starts, cancels and joins the jobs of one kind; the newest is the current one."""

    def __init__(self, name: str) -> None:
        self.name = name  # the threads are named `name-token`
        self._token = 0
        self._current: Job | None = None
        self._jobs: list[Job] = []  # every job whose thread may still run (a cancelled one winds down)

    @property
    def token(self) -> int:
        """Token of the newest job (0 before the first)."""
        return self._token

    @property
    def current(self) -> Job | None:
        """The newest job, unless it was cancelled."""
        return self._current

    def start(self, work: Callable[[Job], None]) -> Job:
        """Cancel the current job and run `work(job)` in a new thread; returns the job."""
        self.cancel()
        self._jobs = [j for j in self._jobs if j.thread.is_alive()]
        self._token += 1
        job = Job(self._token)
        # (daemon: a job never holds the app's exit; shutdown joins it)
        job.thread = threading.Thread(target=work, args=(job,), name=f"{self.name}-{job.token}", daemon=True)
        self._current = job
        self._jobs.append(job)
        job.thread.start()
        return job

    def cancel(self) -> None:
        """Ask the current job to stop at its next check (returns at once)."""
        if self._current is not None:
            self._current.cancel.set()
            self._current = None

    def finished(self, job: Job) -> None:
        """`job` has handed over its result (GUI thread): join its thread, which has only its return left."""
        job.thread.join()
        if job in self._jobs:
            self._jobs.remove(job)
        if job is self._current:
            self._current = None

    def running(self) -> bool:
        """Whether any job's thread is still alive."""
        return any(j.thread.is_alive() for j in self._jobs)

    def threads(self) -> list[threading.Thread]:
        """The threads of the jobs not yet joined."""
        return [j.thread for j in self._jobs]

    def shutdown(self, timeout: float = 10.0) -> None:
        """Cancel every job and join its thread (each stops at its next check)."""
        self.cancel()
        for j in self._jobs:
            j.cancel.set()
        for j in self._jobs:
            j.thread.join(timeout)
        self._jobs = [j for j in self._jobs if j.thread.is_alive()]
