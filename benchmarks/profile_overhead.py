"""What ``--profile`` costs: PPO on CartPole with ``trainer.profile`` on, against the same run with it off.

    python benchmarks/profile_overhead.py [--frames 30000] [--repeats 5]

Both variants run in this process, in pairs, the order alternating, with one torch thread and the
same seed; the table gives the median loop time of each, their ratio, and each pair's ratio.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import tempfile
import time

import torch

import rlcore


def run(frames: int, profile: bool, seed: int) -> float:
    pm = rlcore.get_plugin_manager(only=["pg"])
    config = rlcore.load_config(
        algo={"name": "ppo"},
        trainer={"total_frames": frames, "seed": seed, "progress_bar": False, "profile": profile},
        loggers={"console": None},
        plugin_manager=pm,
    )
    with tempfile.TemporaryDirectory() as run_dir:
        trainer = rlcore.build_trainer(config, run_dir=f"{run_dir}/run", plugin_manager=pm)
        start = time.perf_counter()
        with contextlib.redirect_stderr(io.StringIO()):  # the table
            trainer.train()
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=30_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    off, on, pairs = [], [], []
    for i in range(args.repeats):
        order = (False, True) if i % 2 == 0 else (True, False)
        times = {profile: run(args.frames, profile, seed=i) for profile in order}
        off.append(times[False])
        on.append(times[True])
        pairs.append(times[True] / times[False])
    print(f"PPO CartPole, {args.frames} frames, {args.repeats} pairs in alternating order\n")
    print("| variant | median loop s | frames/s |")
    print("| --- | --- | --- |")
    for name, times in (("profile off", off), ("profile on", on)):
        print(f"| {name} | {statistics.median(times):.3f} | {args.frames / statistics.median(times):.0f} |")
    print(f"\nratio on/off: {statistics.median(on) / statistics.median(off):.3f} (pairs: {', '.join(f'{r:.3f}' for r in pairs)})")


if __name__ == "__main__":
    main()
