"""Kill a run with SIGKILL after one of its checkpoints, resume it, and keep a run never killed beside it."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True)
class KilledRun:
    """The two runs of :func:`kill_and_resume`, both ended."""

    #: the run directory of the run never killed
    whole: Path
    #: the run directory of the run killed with SIGKILL, then resumed to its end
    resumed: Path
    #: what the resume wrote on stderr
    stderr: str

    def metrics(self) -> tuple[dict[str, tuple[list[int], list[float]]], dict[str, tuple[list[int], list[float]]]]:
        """Both runs' metrics (:func:`rlcore.read_metrics`: ``{name: (frames, values)}``), the wall clock's (``perf/fps``) left out.

        A resumed run that logged a step twice, or lost one, differs from the run never killed.
        """
        from rlcore import read_metrics

        whole, resumed = read_metrics(self.whole), read_metrics(self.resumed)
        return ({k: v for k, v in whole.items() if k != "perf/fps"}, {k: v for k, v in resumed.items() if k != "perf/fps"})


def kill_and_resume(
    directory: str | os.PathLike[str],
    args: Sequence[str],
    kill_after: int,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 300.0,
    delay: float = 0.2,
) -> KilledRun:
    """Run ``rlctl ARGS`` twice side by side, kill one with SIGKILL after a checkpoint, and resume it.

    The runs write ``DIRECTORY/whole`` and ``DIRECTORY/resumed`` (their ``--out``). The second is
    killed at a random moment within ``delay`` seconds after its checkpoint at ``kill_after``
    frames is written, then resumed with ``--resume``. Asserts that the kill found the run still
    going, and that the run never killed and the resumed one both exit 0. Compare what they
    leave with :func:`last_checkpoint` and :meth:`KilledRun.metrics`.

    :param directory: where the two run directories go.
    :param args: the ``rlctl`` arguments from ``train`` on, without ``--out``; the run needs a seed (``--seed N``).
    :param kill_after: the frames of the checkpoint after which to kill (a multiple of ``trainer.save_trainer_interval``).
    :param env: environment variables over this process's (``RLCORE_PLUGINS``, ...); ``OMP_NUM_THREADS`` is 1 unless given.
    :param timeout: the seconds each run may take.
    :param delay: the most seconds between the checkpoint and the kill.
    :return: the two run directories and the resume's stderr.
    """
    directory = Path(directory)
    whole, resumed = directory / "whole", directory / "resumed"
    variables = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}

    def rlctl(out: Path, log: str, *extra: str) -> tuple[subprocess.Popen[bytes], Path]:
        """``rlctl`` writing into ``out``, its stderr in the file ``log`` (a pipe nobody reads could fill and stop it)."""
        command = [sys.executable, "-m", "rlcore", *args, "--out", str(out), *extra]
        with open(directory / log, "wb") as stderr:
            return subprocess.Popen(command, env=variables, stdout=subprocess.DEVNULL, stderr=stderr), directory / log

    directory.mkdir(parents=True, exist_ok=True)
    started: list[subprocess.Popen[bytes]] = []
    try:
        (reference, reference_log), (victim, victim_log) = rlctl(whole, "whole.stderr"), rlctl(resumed, "killed.stderr")
        started += [reference, victim]
        mark, deadline = f"ckpt-{kill_after:012d}", time.monotonic() + timeout
        while not any(p.name.startswith(mark) for p in (resumed / "checkpoints").glob("ckpt-*")):
            ended = victim.poll() is not None
            assert not ended, f"the run to kill ended (exit {victim.returncode}) before its checkpoint at {kill_after} frames: {victim_log.read_text()}"
            assert time.monotonic() < deadline, f"no checkpoint at {kill_after} frames after {timeout} s"
            time.sleep(0.02)
        time.sleep(random.uniform(0.0, delay))
        victim.send_signal(signal.SIGKILL)
        assert victim.wait(timeout=30) == -signal.SIGKILL, f"the run ended (exit {victim.returncode}) before the kill: kill it earlier"
        assert reference.wait(timeout=timeout) == 0, f"the run never killed failed: {reference_log.read_text()}"
        seeds = [yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))["trainer"]["seed"] for run in (whole, resumed)]
        assert seeds[0] == seeds[1], f"the two runs drew different seeds {seeds}: give them one (--seed N)"
        resume, resume_log = rlctl(resumed, "resumed.stderr", "--resume", str(resumed))
        started.append(resume)
        resume.wait(timeout=timeout)
        err = resume_log.read_text()
        assert resume.returncode == 0 and "resumed from" in err, f"the resume failed or started afresh: {err}"
    finally:  # a failed check leaves no run behind
        for process in started:
            if process.poll() is None:
                process.kill()
                process.wait()
    return KilledRun(whole, resumed, err)


def last_checkpoint(run_dir: str | os.PathLike[str]) -> tuple[Path, dict[str, Any]]:
    """The newest checkpoint of a run and its state, read with the backend its ``config.yaml`` names.

    :param run_dir: the run directory.
    :return: the checkpoint's path and its state (``loss_module``, ``optimizer``, ``modules``, ``collector``, ``counters``, ...).
    """
    import rlcore

    return rlcore.load_checkpoint(run_dir)
