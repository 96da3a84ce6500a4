"""An experiment: one config trained over several seeds, one run directory each, resumable as a whole.

::

    EXP_DIR/config.yaml        the config every run trains (``trainer.seed`` left to each run)
    EXP_DIR/experiment.json    the seeds asked for and those whose run has finished
    EXP_DIR/seed_<k>/          the run of seed k, a normal run directory (``rlctl eval``, ``rlctl plot``, ``--resume``)
    EXP_DIR/logs/seed_<k>.log  what its ``rlctl train`` printed

Running the same command again skips the finished runs, resumes those with a checkpoint and starts the others.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from rlcore import ConfigError, dump_config, shown

from ._jobs import SIGNAL_EXIT, Backend, Job, last_error, run_jobs

CONFIG = "config.yaml"
LOGS = "logs"
STATE = "experiment.json"
#: the seeds a run directory of an experiment is named after
RUN_NAME = re.compile(r"seed_(\d+)$")


def parse_seeds(text: str) -> list[int]:
    """``0-9``, ``0,3,7`` or ``0-3,8``: the seeds, in order, each once.

    :raises ConfigError: on anything else (one line).
    """
    seeds: list[int] = []
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        if not first.isdigit() or (dash and not last.isdigit()) or (dash and int(last) < int(first)):
            raise ConfigError(f"--seeds {shown(text)}: expected seeds such as 0-9, 0,3,7 or 0-3,8")
        seeds += [s for s in range(int(first), int(last or first) + 1) if s not in seeds]
    return seeds


def default_directory(config: Mapping[str, Any]) -> Path:
    """``experiments/<algo>_<env>_<hash of the config>``: the same command names the same experiment."""
    digest = hashlib.sha1(dump_config(config).encode()).hexdigest()[:8]
    env = str(config["env"]["id"]).replace("/", "-").rsplit(":", 1)[-1]
    return Path("experiments") / f"{config['algo']['name']}_{env}_{digest}"


def first_difference(a: Any, b: Any, where: str = "") -> str | None:
    """The dotted key where ``a`` and ``b`` first differ (``""`` for the roots), or ``None`` when equal."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in sorted(set(a) | set(b), key=str):
            found = first_difference(a.get(key), b.get(key), f"{where}.{key}" if where else str(key))
            if found is not None:
                return found
        return None
    return None if a == b else where


class Experiment:
    """The experiment directory ``path`` for ``config`` (its ``trainer.seed`` unset): created, or continued when it holds the same config.

    :raises ConfigError: when ``path`` holds something else, or an experiment of another config (the first key that differs).
    """

    def __init__(self, path: str | os.PathLike[str], config: Mapping[str, Any]) -> None:
        self.path = Path(path).absolute()  # (its runs may start in another working directory: a Ray worker's)
        config = yaml.safe_load(dump_config(config))  # (as the file holds it)
        stored = self.path / CONFIG
        if stored.is_file():
            earlier = yaml.safe_load(stored.read_text(encoding="utf-8"))
            key = first_difference(earlier, config)
            if key is not None:
                raise ConfigError(f"{self.path}: holds an experiment of another config ({key} differs); choose another --out")
        elif self.path.exists() and any(self.path.iterdir()):
            raise ConfigError(f"{self.path}: exists and is not an experiment directory; choose a new or empty one")
        else:
            self.path.mkdir(parents=True, exist_ok=True)
            stored.write_text(dump_config(config), encoding="utf-8")
        self.config_file = stored
        self.finished: set[int] = set(self._state().get("finished", []))

    def _state(self) -> dict[str, Any]:
        try:
            state = json.loads((self.path / STATE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return state if isinstance(state, dict) else {}

    def finish(self, seed: int) -> None:
        """Record that the run of ``seed`` has finished (written atomically)."""
        self.finished.add(seed)
        state = {**self._state(), "finished": sorted(self.finished)}
        tmp = self.path / f".{STATE}.tmp"
        tmp.write_text(json.dumps(state, indent=2), encoding="utf-8")
        os.replace(tmp, self.path / STATE)

    def run_dir(self, seed: int) -> Path:
        return self.path / f"seed_{seed}"

    def log(self, seed: int) -> Path:
        """What the run of ``seed`` printed."""
        return self.path / LOGS / f"seed_{seed}.log"

    def job(self, seed: int, done: Callable[[int, bool], None]) -> Job:
        """The run of ``seed``, its arguments decided when it starts (a Ray task retried after its worker died resumes)."""
        args = functools.partial(train_args, self.config_file, seed, self.run_dir(seed))
        return Job(f"seed {seed}", args, self.log(seed), done=done)


def train_args(config_file: Path, seed: int, run: Path) -> list[str]:
    """``rlctl train`` arguments for the run of ``seed`` in ``run``: a resume where it has a checkpoint, else a fresh start.

    A run still held by a process that is ending (of an experiment killed a moment ago, finishing its batch) is waited for first.
    """
    _wait_free(run)
    if has_checkpoint(run):
        return ["train", "--resume", str(run)]
    fresh = ["train", str(config_file), "--seed", str(seed), "--out", str(run)]
    return [*fresh, "--force"] if (run / CONFIG).is_file() else fresh  # (stopped before its first checkpoint)


def run_seeds(experiment: Experiment, seeds: list[int], backend: Backend, slots: int, say: Callable[[str], None]) -> int:
    """Train ``seeds`` in ``experiment`` (``slots`` at a time), skipping the finished ones.

    :return: the exit code: 0 when every run finished, 1 when one failed, 130/143 when a signal stopped them.
    """
    todo = [seed for seed in seeds if seed not in experiment.finished]
    say(f"experiment {experiment.path}: {len(seeds)} seeds, {len(seeds) - len(todo)} finished before, {len(todo)} to run, {slots} at a time")
    failed: list[str] = []

    def jobs() -> Iterator[Job]:
        for seed in todo:
            resumed = has_checkpoint(experiment.run_dir(seed))

            def done(code: int, _stopped: bool, seed: int = seed) -> None:
                if code == 0:
                    experiment.finish(seed)
                    say(f"seed {seed}: finished ({len(experiment.finished & set(seeds))}/{len(seeds)})")
                elif code not in SIGNAL_EXIT.values():
                    failed.append(f"seed {seed}")
                    say(f"seed {seed}: failed (exit {code}): {last_error(experiment.log(seed))}")

            say(f"seed {seed}: {'resumed' if resumed else 'started'} in {experiment.run_dir(seed)}")
            yield experiment.job(seed, done)

    stopped = run_jobs(jobs(), backend, slots, say)
    if stopped is not None:
        say(f"stopped; the same command resumes the experiment ({len(experiment.finished & set(seeds))}/{len(seeds)} finished)")
        return stopped
    if failed:
        say(f"{', '.join(failed)} failed; the same command runs them again (logs in {experiment.path / LOGS})")
        return 1
    return 0


def has_checkpoint(run: Path) -> bool:
    """Whether the run directory ``run`` holds a checkpoint to resume from (of any backend)."""
    return any((run / "checkpoints").glob("*"))


def _wait_free(run: Path, seconds: float = 60.0) -> None:
    """Wait (up to ``seconds``) until no process holds the run directory ``run`` (the kernel's ``flock`` on it)."""
    if not run.is_dir():
        return
    fd = os.open(run, os.O_RDONLY)
    try:
        deadline = time.monotonic() + seconds
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return  # (the run then says who holds it)
                time.sleep(0.2)
    finally:
        os.close(fd)  # (and the lock with it)
