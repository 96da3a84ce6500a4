"""Seeds in parallel against one at a time: ``rlctl train --seeds`` with ``--jobs`` one per core, and with ``--jobs 1``.

Both sides train the same experiment (PPO on CartPole, the embedded defaults, ``--frames`` each), in fresh
experiment directories, back to back in one run of this script (the machine's speed drifts from day to day), the
order of the two alternating from one repeat to the next. The table gives each side's wall time and its total
frames per second; the ratio is the speed-up of running the seeds in parallel.

    python benchmarks/seeds_parallel.py                       # 4 seeds of 20k frames, 2 repeats
    python benchmarks/seeds_parallel.py --seeds 8 --frames 50000 --jobs 4
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def experiment(seeds: int, frames: int, jobs: int, out: Path) -> float:
    """Seconds to train ``seeds`` seeds of ``frames`` frames, ``jobs`` at a time."""
    command = [sys.executable, "-m", "rlcore", "train", "--seeds", f"0-{seeds - 1}", "--jobs", str(jobs), "--frames", str(frames),
               "--set", "loggers.console=null", "--out", str(out)]  # fmt: skip
    tic = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - tic


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--frames", type=int, default=20_000)
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)), help="runs at a time on the parallel side (default: the cores)")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    sides = {f"--jobs {args.jobs}": args.jobs, "--jobs 1": 1}
    seconds: dict[str, list[float]] = {name: [] for name in sides}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            order = list(sides) if repeat % 2 == 0 else list(reversed(sides))
            for name in order:
                seconds[name].append(experiment(args.seeds, args.frames, sides[name], Path(tmp) / f"{repeat}_{sides[name]}"))
    total = args.seeds * args.frames
    print(f"{args.seeds} seeds x {args.frames} frames of PPO on CartPole, {len(os.sched_getaffinity(0))} cores, best of {args.repeats}\n")
    print(f"| {'runs at a time':<14} | {'wall s':>7} | {'frames/s':>9} |")
    print(f"| {'-' * 14} | {'-' * 6}: | {'-' * 8}: |")
    for name in sides:
        best = min(seconds[name])
        print(f"| {name:<14} | {best:7.1f} | {total / best:9.0f} |")
    parallel, alone = (min(seconds[name]) for name in sides)
    print(f"\nspeed-up of --jobs {args.jobs} over --jobs 1: {alone / parallel:.2f}x")


if __name__ == "__main__":
    main()
