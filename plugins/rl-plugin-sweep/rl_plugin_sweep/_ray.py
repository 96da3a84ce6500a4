"""The Ray backend: each job an actor on a Ray cluster that runs its ``rlctl train`` process, restarted where its worker dies.

The cluster is a local one started for the jobs (``--jobs`` CPUs, else all of this machine's) or the one at
``--address``; rl-plugin-ray's :class:`~rl_plugin_ray.Session` starts and stops it, and leaves no process behind on
Ctrl-C. Ray places the actors (one CPU each); the experiment directory must be a path every node sees (a shared
file system), as each run writes its run directory and log there.

A worker that dies (killed, out of memory, its node lost) takes its run with it (the run's process gets SIGTERM
and checkpoints); Ray starts the actor again, up to :data:`RESTARTS` times, and the job starts again from the
run's last checkpoint: its arguments are decided in the new worker.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import ray

from rl_plugin_ray import Session
from rlcore import first_line

from ._jobs import Job, Running, exit_code, start_rlctl

#: times a job's actor is started again after its worker died
RESTARTS = 3


class RayActors:
    """Jobs as Ray actors.

    :param address: the cluster to join, or ``None`` to start a local one.
    :param root: ``rlctl``'s root options for every job.
    :param cpus: the CPUs of a local cluster (default: all of this machine's).
    """

    def __init__(self, address: str | None, root: Sequence[str] = (), cpus: int | None = None) -> None:
        self.session = Session.open(address, cpus)
        #: jobs at a time by default: the cluster's CPUs
        self.slots = max(1, int(self.session.cpus()))
        self.root = list(root)
        self._runner = ray.remote(_Runner).options(num_cpus=1, max_restarts=RESTARTS, max_task_retries=RESTARTS, max_concurrency=2)

    def start(self, job: Job) -> Running:
        actor: Any = self._runner.remote(self.root)  # (an actor handle: its methods are called with .remote)
        return _Actor(actor, actor.run.remote(job.args, str(job.log)), job)

    def close(self) -> None:
        self.session.close()


class _Runner:
    """One job in a Ray worker: its ``rlctl`` process, and the signals sent to it."""

    def __init__(self, root: list[str]) -> None:
        self.root = root
        self.process: subprocess.Popen[bytes] | None = None

    def run(self, args: Callable[[], list[str]], log: str) -> int:
        Path(log).parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"rl-plugin-sweep: in Ray worker pid {os.getpid()}\n")
        self.process = start_rlctl(args(), self.root, Path(log))
        return exit_code(self.process.wait())

    def signal(self, signum: int) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signum)


class _Actor:
    def __init__(self, actor: Any, result: Any, job: Job) -> None:
        self.actor, self.result, self.job = actor, result, job

    def poll(self) -> int | None:
        ready, _ = ray.wait([self.result], timeout=0)
        if not ready:
            return None
        try:
            code = int(ray.get(self.result))
        except ray.exceptions.RayError as err:  # (its worker died more often than the actor restarts)
            with contextlib.suppress(OSError), open(self.job.log, "a", encoding="utf-8") as log:
                log.write(f"rlctl: error: its Ray worker failed: {first_line(err)}\n")
            code = 1
        ray.kill(self.actor)
        return code

    def signal(self, signum: int) -> None:
        self.actor.signal.remote(signum)
