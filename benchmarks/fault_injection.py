"""Fault injection: SIGKILL a PPO CartPole run many times (half of the kills inside checkpoint writes), resume it
after each, and check it ends bit-identical to a run never killed, with every metric logged once.

The peer is the same run never killed, trained in the same invocation. Prints one row per
vectorization backend.

    python benchmarks/fault_injection.py                       # 50 kills each, sync and async
    python benchmarks/fault_injection.py --kills 200 --vectorization sync
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fault_injection import BATCH, assert_same_run, kill_and_resume, start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=50, help="kills per backend")
    parser.add_argument("--vectorization", nargs="+", default=["sync", "async"])
    args = parser.parse_args()
    frames = (4 * args.kills + 8) * BATCH
    print("| vectorization | kills | inside a checkpoint write | frames | wall s | ends identical to the run never killed |")
    print("| --- | --- | --- | --- | --- | --- |")
    for vectorization in args.vectorization:
        with tempfile.TemporaryDirectory() as tmp:
            whole, killed = Path(tmp) / "whole", Path(tmp) / "killed"
            tic = time.perf_counter()
            reference = start(whole, frames, vectorization, resume=False)
            done = kill_and_resume(killed, frames, args.kills, vectorization, seed=1, timeout=3600)
            _, err = reference.communicate(timeout=3600)
            assert reference.returncode == 0, err
            try:
                assert_same_run(whole, killed, frames)
                verdict = "yes"
            except AssertionError as err:
                verdict = f"NO: {err}"
            print(f"| {vectorization} | {done.kills} | {done.inside_writes} | {frames} | {time.perf_counter() - tic:.0f} | {verdict} |")


if __name__ == "__main__":
    main()
