"""app.jobs: the one mechanism for background work (the motion's runs, the auto layout)."""

from __future__ import annotations

import threading

from app.jobs import BackgroundJobs


def test_a_new_job_cancels_the_current_one_and_shutdown_joins_every_thread():
    jobs = BackgroundJobs("test-job")
    began = [threading.Event(), threading.Event()]
    seen: list[tuple[int, bool]] = []

    def work(job):
        began[job.token - 1].set()
        job.cancel.wait(10.0)  # a long job: works until it is asked to stop
        seen.append((job.token, job.cancelled()))

    first = jobs.start(work)
    assert began[0].wait(5.0) and jobs.current is first and jobs.running()
    assert first.thread.name == "test-job-1" and first.thread.daemon
    second = jobs.start(work)  # the first is asked to stop; its thread winds down by itself
    assert first.cancelled() and not second.cancelled() and jobs.current is second and jobs.token == 2
    first.thread.join(5.0)
    assert seen == [(1, True)]
    assert began[1].wait(5.0)
    jobs.shutdown(5.0)
    assert seen == [(1, True), (2, True)] and not jobs.running() and jobs.threads() == [] and jobs.current is None


def test_a_finished_job_is_joined_and_is_no_longer_current():
    jobs = BackgroundJobs("test-job")
    done = threading.Event()
    job = jobs.start(lambda j: done.set())
    assert done.wait(5.0)
    jobs.finished(job)  # (the owner's result slot, on the GUI thread)
    assert not job.thread.is_alive() and jobs.current is None and jobs.threads() == []
    jobs.cancel()  # nothing to cancel: no error
    assert not job.cancelled()
