"""Learning benchmark of rl-plugin-pg: does each algorithm solve its classic-control task?

Each (algorithm, env) case trains several seeds from the algorithm's embedded defaults (with
rl-plugin-pg's preset for the env, if it has one, and any overrides listed in ``CASES``) and
reports, per seed, the mean return of the last 20 training episodes, the mean return of a
10-episode deterministic evaluation, and the first frame count at which the mean of the last
20 training episodes reached the threshold. A seed counts as solved when either final figure
reaches the threshold.

    python benchmarks/pg_learning.py                       # every case, 5 seeds
    python benchmarks/pg_learning.py --case ppo:CartPole-v1 --seeds 0 1 2
    python benchmarks/pg_learning.py --case a2c:CartPole-v1 --frames 200000 --workers 1

It prints a markdown table and a summary (seeds solved against the seeds required).
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import rlcore


@dataclass(frozen=True)
class Case:
    """One row group of the table: an algorithm on an env, and what counts as solved."""

    algo: str
    env: str
    frames: int
    threshold: float
    required: int
    overrides: tuple[str, ...] = field(default_factory=tuple)
    #: solved by the deterministic evaluation alone (else: by it or by the final training mean)
    eval_only: bool = False


CASES = [
    Case("ppo", "CartPole-v1", 100_000, 475.0, 4),
    Case("a2c", "CartPole-v1", 500_000, 475.0, 4),
    Case("ppo", "Acrobot-v1", 100_000, -100.0, 4),  # the bar is 300k frames; PPO gets there far sooner
    Case("ppo", "Pendulum-v1", 300_000, -250.0, 4),  # rl-plugin-pg's preset for Pendulum-v1 applies
    Case("pg", "CartPole-v1", 500_000, 475.0, 3),
    Case("spg", "CartPole-v1", 500_000, 475.0, 3),
    Case("ppo-kl", "CartPole-v1", 500_000, 475.0, 3),
]


class EpisodeRecorder:
    """A plugin of the run that records every finished training episode with the frame count and time."""

    def __init__(self, window: int = 20) -> None:
        self.window = window
        self.returns: list[float] = []
        self.frames: list[int] = []
        self.seconds: list[float] = []
        self._start = time.perf_counter()

    @rlcore.hookimpl
    def rl_setup(self) -> None:
        self._start = time.perf_counter()

    @rlcore.hookimpl
    def rl_pre_steps_log(self, trainer: Any) -> None:
        returns = trainer.collector.finished_episodes[0]
        now = time.perf_counter() - self._start
        for value in returns:
            self.returns.append(float(value))
            self.frames.append(trainer.collected_frames)
            self.seconds.append(now)

    def final_mean(self) -> float:
        """Mean return of the last ``window`` episodes."""
        return float(np.mean(self.returns[-self.window :])) if self.returns else float("nan")

    def first_reaching(self, threshold: float) -> tuple[int | None, float | None]:
        """Frames and seconds at which the mean of the last ``window`` episodes first reached ``threshold``."""
        last: deque[float] = deque(maxlen=self.window)
        for value, frames, seconds in zip(self.returns, self.frames, self.seconds):
            last.append(value)
            if len(last) == self.window and np.mean(last) >= threshold:
                return frames, seconds
        return None, None


def deterministic_eval(trainer: Any, episodes: int = 10, seed: int = 10_000) -> float:
    """Mean return of ``episodes`` episodes acting with the mode of the policy's distribution (``rlcore.evaluate``:
    the env's own rewards, a recurrent policy's state carried)."""
    env = trainer.make_env(num_envs=1)
    try:
        return float(np.mean(rlcore.evaluate(trainer.loss_module.policy, env, episodes, seed=seed)["returns"]))
    finally:
        env.close()


def train_recorded(overrides: list[str]) -> tuple[Any, EpisodeRecorder, float]:
    """Train rl-core with ``overrides`` in a throwaway run directory, without loggers or checkpoints.

    :return: the trainer, its episodes, and the wall seconds of ``trainer.train()``.
    """
    quiet = [
        "trainer.progress_bar=false",
        "trainer.save_trainer_interval=1000000000",
        "loggers.csv=null",
        "loggers.console=null",
    ]
    with tempfile.TemporaryDirectory() as run_dir:
        trainer = rlcore.build_trainer(rlcore.load_config(overrides=[*quiet, *overrides]), run_dir=run_dir)
        recorder = EpisodeRecorder()
        trainer.register_plugin(recorder, "benchmark.recorder")
        start = time.perf_counter()
        trainer.train()
        return trainer, recorder, time.perf_counter() - start


def train_case(case: Any, seed: int, frames: int | None, extra: tuple[str, ...]) -> tuple[Any, EpisodeRecorder, float]:
    """Train one seed of a case (its ``algo``, ``env``, ``frames`` unless ``frames`` is given, and ``overrides``,
    then ``extra``) on one torch thread; :func:`train_recorded`'s ``(trainer, recorder, seconds)``."""
    import torch

    torch.set_num_threads(1)
    overrides = [
        f"algo.name={case.algo}",
        f"env.id={case.env}",
        f"trainer.total_frames={frames or case.frames}",
        f"trainer.seed={seed}",
        *case.overrides,
        *extra,
    ]
    return train_recorded(overrides)


def run_one(case: Case, seed: int, frames: int | None, extra: tuple[str, ...]) -> dict[str, Any]:
    """Train one seed of ``case`` and return its row of the table."""
    trainer, recorder, seconds = train_case(case, seed, frames, extra)
    evaluation = deterministic_eval(trainer)
    reached, _ = recorder.first_reaching(case.threshold)
    final = recorder.final_mean()
    return {
        "algo": case.algo,
        "env": case.env,
        "seed": seed,
        "frames": trainer.collected_frames,
        "final": final,
        "eval": evaluation,
        "reached": reached,
        "solved": evaluation >= case.threshold or (not case.eval_only and final >= case.threshold),
        "seconds": seconds,
    }


def _run(args: tuple[Case, int, int | None, tuple[str, ...]]) -> dict[str, Any]:
    row = run_one(*args)
    print(
        f"# done {row['algo']} {row['env']} seed={row['seed']} final={row['final']:.1f} "
        f"eval={row['eval']:.1f} reached={row['reached']} in {row['seconds']:.0f}s",
        file=sys.stderr,
        flush=True,
    )
    return row


def run_jobs(run: Callable[[Any], dict[str, Any]], jobs: list[Any], workers: int) -> list[dict[str, Any]]:
    """``run(job)`` for every job, in order: in ``workers`` spawned processes (a fresh one per job), or here for one worker."""
    if workers > 1:
        with multiprocessing.get_context("spawn").Pool(workers, maxtasksperchild=1) as pool:
            return pool.map(run, jobs, chunksize=1)
    return [run(job) for job in jobs]


def main(argv: list[str] | None = None, cases: list[Case] = CASES, description: str | None = __doc__) -> int:
    """Train every seed of the chosen ``cases``, print their table and summary; 0 when every case passes."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    names = [f"{c.algo}:{c.env}" for c in cases]
    parser.add_argument("--case", action="append", choices=names, help="ALGO:ENV (repeatable; default: all)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--frames", type=int, help="override each case's frame budget")
    parser.add_argument("--set", dest="extra", action="append", default=[], metavar="KEY=VALUE", help="extra config override")
    parser.add_argument("--workers", type=int, default=2, help="parallel training processes (at most 2 advised)")
    args = parser.parse_args(argv)
    cases = [c for c in cases if args.case is None or f"{c.algo}:{c.env}" in args.case]
    jobs = [(case, seed, args.frames, tuple(args.extra)) for case in cases for seed in args.seeds]
    start = time.perf_counter()
    rows = run_jobs(_run, jobs, args.workers)

    print("| algo | env | seed | frames | final return (last 20) | eval return (10, deterministic) | frames to threshold | solved? | seconds |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        reached = row["reached"] if row["reached"] is not None else "-"
        print(
            f"| {row['algo']} | {row['env']} | {row['seed']} | {row['frames']} | {row['final']:.1f} | {row['eval']:.1f} "
            f"| {reached} | {'yes' if row['solved'] else 'no'} | {row['seconds']:.0f} |"
        )
    print()
    print("| algo | env | threshold | frames | seeds solved | required | pass? |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    ok = True
    for case in cases:
        solved = sum(r["solved"] for r in rows if r["algo"] == case.algo and r["env"] == case.env)
        passed = solved >= min(case.required, len(args.seeds))
        ok &= passed
        print(
            f"| {case.algo} | {case.env} | {case.threshold:g} | {args.frames or case.frames} | {solved}/{len(args.seeds)} "
            f"| {case.required}/5 | {'yes' if passed else 'no'} |"
        )
    print(f"\ntotal {time.perf_counter() - start:.0f}s", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
