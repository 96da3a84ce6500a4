"""Learning benchmark of the off-policy algorithms: DQN on CartPole-v1, SAC on Pendulum-v1.

Each case trains several seeds from the algorithm's embedded defaults (``rlctl config show dqn``,
``rlctl config show sac``: nothing is overridden but the seed and the frame budget) and
evaluates the final policy deterministically (greedy for DQN, the tanh of the mean for SAC) on
10 episodes of a fresh env. A seed is solved when that evaluation reaches the threshold (the
issue's criterion); the table also shows the mean return of the last 20 training episodes and
the first frame count at which that mean reached the threshold.

    python benchmarks/offpolicy_learning.py                        # both cases, 5 seeds each
    python benchmarks/offpolicy_learning.py --case dqn:CartPole-v1 --seeds 0 1 2
    python benchmarks/offpolicy_learning.py --case sac:Pendulum-v1 --workers 1

It prints a markdown table and a summary (seeds solved against the seeds required); the exit
status is 0 when every case passes.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from pg_learning import deterministic_eval, train_recorded


@dataclass(frozen=True)
class Case:
    """An algorithm on an env, its frame budget, and what counts as solved."""

    algo: str
    env: str
    frames: int
    threshold: float
    required: int
    overrides: tuple[str, ...] = field(default_factory=tuple)


CASES = [
    Case("dqn", "CartPole-v1", 100_000, 475.0, 4),
    Case("sac", "Pendulum-v1", 20_000, -200.0, 4),
]


def run_one(case: Case, seed: int, frames: int | None, extra: tuple[str, ...]) -> dict[str, Any]:
    """Train one seed of ``case`` from the defaults and evaluate it; return its row of the table."""
    import torch

    torch.set_num_threads(1)
    frames = frames or case.frames
    overrides = [f"algo.name={case.algo}", f"env.id={case.env}", f"trainer.total_frames={frames}", f"trainer.seed={seed}"]
    overrides += [*case.overrides, *extra]
    trainer, recorder, seconds = train_recorded(overrides)
    evaluation = deterministic_eval(trainer, episodes=10)
    reached, _ = recorder.first_reaching(case.threshold)
    return {
        "algo": case.algo,
        "env": case.env,
        "seed": seed,
        "frames": trainer.collected_frames,
        "final": recorder.final_mean(),
        "eval": evaluation,
        "reached": reached,
        "solved": evaluation >= case.threshold,
        "seconds": seconds,
    }


def _run(args: tuple[Case, int, int | None, tuple[str, ...]]) -> dict[str, Any]:
    row = run_one(*args)
    print(
        f"# done {row['algo']} {row['env']} seed={row['seed']} eval={row['eval']:.1f} final={row['final']:.1f} "
        f"reached={row['reached']} in {row['seconds']:.0f}s",
        file=sys.stderr,
        flush=True,
    )
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    names = [f"{c.algo}:{c.env}" for c in CASES]
    parser.add_argument("--case", action="append", choices=names, help="ALGO:ENV (repeatable; default: all)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--frames", type=int, help="override each case's frame budget")
    parser.add_argument("--set", dest="extra", action="append", default=[], metavar="KEY=VALUE", help="extra config override")
    parser.add_argument("--workers", type=int, default=2, help="parallel training processes (at most 2 advised)")
    args = parser.parse_args(argv)
    cases = [c for c in CASES if args.case is None or f"{c.algo}:{c.env}" in args.case]
    jobs = [(case, seed, args.frames, tuple(args.extra)) for case in cases for seed in args.seeds]
    start = time.perf_counter()
    if args.workers > 1:
        with multiprocessing.get_context("spawn").Pool(args.workers, maxtasksperchild=1) as pool:
            rows = pool.map(_run, jobs, chunksize=1)
    else:
        rows = [_run(job) for job in jobs]

    print(
        "| algo | env | seed | frames | eval return (10 episodes, deterministic) | final return (last 20 training episodes) "
        "| frames to threshold (training mean) | solved? | seconds |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        reached = row["reached"] if row["reached"] is not None else "-"
        print(
            f"| {row['algo']} | {row['env']} | {row['seed']} | {row['frames']} | {row['eval']:.1f} | {row['final']:.1f} "
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
