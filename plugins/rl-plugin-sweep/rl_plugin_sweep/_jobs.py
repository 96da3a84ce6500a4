"""Runs of ``rlctl train`` as jobs: started, watched and stopped, a few at a time, on a backend that places them.

A :class:`Job` is one ``rlctl`` command line. A backend (:class:`LocalProcesses` here, Ray actors in
``_ray``) starts it and hands back a :class:`Running` handle; :func:`run_jobs` keeps ``slots`` of them
running, polls them, stops those a watcher gives up on (a pruned trial) and forwards the first and second
SIGINT or SIGTERM to them, so that each run checkpoints and stops as a lone ``rlctl train`` would.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

#: seconds between two polls of the running jobs
POLL_SECONDS = 0.5
SIGNAL_EXIT: dict[int, int] = {signal.SIGINT: 130, signal.SIGTERM: 143}


@dataclass
class Job:
    """One ``rlctl`` command line and what is done when it ends.

    :param name: how the job is named in messages (``seed 3``, ``trial 7``).
    :param args: ``rlctl``'s arguments (``train CONFIG --seed 3 --out DIR``), asked for where and when the job starts.
    :param log: the file that receives its stdout and stderr.
    :param watch: called at every poll while it runs; ``True`` stops it (a pruned trial).
    :param done: called with its exit code when it has ended, and whether :attr:`watch` stopped it.
    """

    name: str
    args: Callable[[], list[str]]
    log: Path
    watch: Callable[[], bool] = lambda: False
    done: Callable[[int, bool], None] = lambda code, stopped: None
    stopped: bool = field(default=False, init=False)


class Running(Protocol):
    """A started job."""

    def poll(self) -> int | None:
        """Its exit code once it has ended, else ``None``."""

    def signal(self, signum: int) -> None:
        """Send it ``signum`` (SIGTERM: checkpoint and stop after the batch; a second one: stop at once)."""


class Backend(Protocol):
    """Where jobs run."""

    #: jobs at a time unless told otherwise (the CPUs there)
    slots: int

    def start(self, job: Job) -> Running:
        """Start ``job``."""

    def close(self) -> None:
        """Release what the backend holds (a local cluster it started)."""


def start_rlctl(args: Sequence[str], root: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
    """``python -m rlcore ROOT ARGS``, rlctl of this Python with the caller's root options (``--plugin``), in a session of its
    own (a Ctrl-C at the terminal reaches the caller, which forwards it once), its output appended to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "rlcore", *root, *args], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=end_with_parent,
        )


def exit_code(returncode: int) -> int:
    """A process's exit code as a shell gives it: 130 for one ended by SIGINT, 143 by SIGTERM, 128 + N by signal N."""
    return returncode if returncode >= 0 else 128 - returncode


class LocalProcesses:
    """Each job a process of this machine (:func:`start_rlctl`), ended by the kernel when the experiment process dies (Linux).

    :param root: ``rlctl``'s root options for every job (``--plugin NAME``, ``--no-plugin NAME``).
    """

    def __init__(self, root: Sequence[str] = ()) -> None:
        self.root = list(root)
        self.slots = cpu_count()

    def start(self, job: Job) -> Running:
        return _Process(start_rlctl(job.args(), self.root, job.log))

    def close(self) -> None:
        pass


class _Process:
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    def poll(self) -> int | None:
        code = self.process.poll()
        return None if code is None else exit_code(code)

    def signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signum)


def end_with_parent() -> None:
    """(In the child, before exec) Signals as a process of its own has them, and SIGTERM when the parent dies (Linux): an
    experiment killed with SIGKILL leaves no run training on, unseen; each checkpoints and stops.

    A thread of a Ray worker blocks SIGINT and SIGTERM, and a child inherits the mask across exec: unblocked here, or
    no signal would ever reach the run.
    """
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    for signum in SIGNAL_EXIT:
        signal.signal(signum, signal.SIG_DFL)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def run_jobs(jobs: Iterator[Job], backend: Backend, slots: int, say: Callable[[str], None]) -> int | None:
    """Run ``jobs``, at most ``slots`` at a time, each pulled from the iterator when a slot is free.

    A first SIGINT or SIGTERM is forwarded to every running job (each checkpoints and stops), and no job starts
    after it; a second is forwarded too (each stops at once). A job a watcher gives up on gets SIGTERM.

    :return: the exit code of the signal that stopped the jobs (130, 143), or ``None`` when all ran.
    """
    running: list[tuple[Job, Running]] = []
    received: list[int] = []

    def forward(signum: int, _frame: Any) -> None:
        received.append(signum)
        name = signal.Signals(signum).name
        say(f"{name}: {'stopping the runs at once' if len(received) > 1 else 'each run writes a checkpoint and stops'}")
        for _, handle in running:
            handle.signal(signum)

    main = threading.current_thread() is threading.main_thread()
    before = {signum: signal.signal(signum, forward) for signum in SIGNAL_EXIT} if main else {}
    try:
        exhausted = False
        while running or not (exhausted or received):
            while len(running) < slots and not (exhausted or received):
                job = next(jobs, None)
                if job is None:
                    exhausted = True
                else:
                    seen = len(received)
                    handle = backend.start(job)
                    running.append((job, handle))
                    for signum in received[seen:]:  # (one that came while it started)
                        handle.signal(signum)
            for entry in list(running):
                job, handle = entry
                code = handle.poll()
                if code is None:
                    if not job.stopped and not received and job.watch():
                        job.stopped = True
                        handle.signal(signal.SIGTERM)
                    continue
                running.remove(entry)
                job.done(code, job.stopped)
            if running:
                time.sleep(POLL_SECONDS)
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
    return SIGNAL_EXIT[received[0]] if received else None


def last_error(log: Path) -> str:
    """The line of ``log`` that says why an ``rlctl`` run failed (its last ``rlctl: error``), else its last line."""
    try:
        lines = [line for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    except OSError:
        return f"no log at {log}"
    errors = [line for line in lines if line.startswith("rlctl: error")]
    return (errors or lines or ["it printed nothing"])[-1].removeprefix("rlctl: error: ")


def cpu_count() -> int:
    """The CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (macOS)
        return os.cpu_count() or 1
