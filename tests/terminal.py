"""Running the command line with its stderr on a terminal (a pty), in tests of its progress bars and interrupts."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def follow_terminal(master: int, proc, seconds: float, on_output) -> bytes:
    """Everything `proc` writes to its terminal (the pty `master`) until the terminal closes, the process ends or
    `seconds` pass; `on_output(text so far)` is called before each read and may return the seconds to wait from
    then on."""
    err, deadline = b"", time.monotonic() + seconds
    while time.monotonic() < deadline:
        more = on_output(err)
        if more is not None:
            deadline = time.monotonic() + more
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the process closed its terminal
                break
            if not chunk:
                break
            err += chunk
        elif proc.poll() is not None:
            break
    return err


def signal_when(args: list[str], sig, ready, seconds: float = 120, stdout=subprocess.DEVNULL,
                env: dict | None = None) -> tuple[int, bytes]:
    """Run `python -m app ARGS` with its stderr on a terminal and send it `sig` once `ready(stderr so far)` holds;
    (exit status, stderr bytes). Fails the test if it never became ready."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "app", *args], cwd=ROOT, env=env, stdout=stdout, stderr=slave)
    os.close(slave)
    sent = []

    def signal_once_ready(err: bytes) -> None:
        if not sent and ready(err):
            proc.send_signal(sig)
            sent.append(True)

    err = b""
    try:
        err = follow_terminal(master, proc, seconds, signal_once_ready)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    assert sent, err
    return proc.returncode, err


def run_on_terminal(args: list[str], on_output, seconds: float = 120, env: dict | None = None
                    ) -> tuple[int, str, float]:
    """Run `python -m app ARGS` with its stderr on a terminal, calling on_output(process, stderr so far) before each
    read (it may signal the process); (exit status, stderr text with "\n" line ends, time.monotonic() when it ended)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "app", *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=slave)
    os.close(slave)
    try:
        err = follow_terminal(master, proc, seconds, lambda text: on_output(proc, text))
        proc.wait(timeout=60)
        ended = time.monotonic()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return proc.returncode, err.decode().replace("\r\n", "\n"), ended
