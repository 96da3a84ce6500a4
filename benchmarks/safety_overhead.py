"""What the safety of a run costs on the PPO CartPole loop: the checkpoint checksum and non-finite scan, the type
checks at the hook boundary and the loggers' deadline guard (the run directory's lock, one ``flock`` a run, is none of it).

    python benchmarks/safety_overhead.py [--frames 100000] [--repeats 200]

First a PPO CartPole run with the defaults (``rlctl train --algo ppo``'s config, console logger off)
gives the loop's wall time, its batches, optimisation steps, logged values and checkpoints. Then
each mechanism is timed on that run's own trainer, against the peer it adds to (the same call
without the mechanism), and multiplied by how often the run uses it. Target: all of them together
under 1% of the loop's time.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from tensordict import TensorDict

import rlcore


def per_call(fn: Callable[[], object], repeats: int) -> float:
    """Median seconds of one call of ``fn`` over ``repeats`` timed batches of 10 calls."""
    times = []
    for _ in range(repeats):
        tic = time.perf_counter()
        for _ in range(10):
            fn()
        times.append((time.perf_counter() - tic) / 10)
    return statistics.median(times)


class Counting(rlcore.Logger):
    def __init__(self) -> None:
        super().__init__("count", ".")
        self.calls = 0

    def log_scalars(self, values: object, step: int) -> None:
        self.calls += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(1)

    with tempfile.TemporaryDirectory() as tmp:
        pm = rlcore.get_plugin_manager(only=["pg"])
        config = rlcore.load_config(
            algo={"name": "ppo"}, trainer={"total_frames": args.frames, "seed": 0, "progress_bar": False}, loggers={"console": None}, plugin_manager=pm
        )
        trainer = rlcore.build_trainer(config, run_dir=Path(tmp) / "run", plugin_manager=pm)
        counter = Counting()
        trainer.loggers.append(counter)  # unguarded: it counts the log calls the run makes
        tic = time.perf_counter()
        trainer.train()
        loop = time.perf_counter() - tic
        batches, steps, checkpoints, log_calls = trainer.batches, trainer.optim_steps, trainer.collected_frames // trainer.save_trainer_interval + 1, counter.calls

        # -- the checksum, once per checkpoint; the non-finite scan (and the wait for the loggers): a save against the backend's
        state, backend = trainer.state_dict(), trainer.checkpoint
        assert backend is not None
        checksum = per_call(lambda: rlcore.content_checksum(state), args.repeats)
        frames = trainer.collected_frames
        full = per_call(lambda: trainer.save_trainer(force_save=True) or setattr(trainer, "collected_frames", trainer.collected_frames + 1), args.repeats // 10)
        trainer.collected_frames = frames
        bare = per_call(lambda: backend.save(trainer.state_dict(), frames), args.repeats // 10)

        # -- the boundary checks: the chain of a data hook, and the logging hooks called in turn, against pluggy's call
        pm, hook, batch = trainer.plugin_manager, trainer.plugin_manager.hook, TensorDict({"observation": torch.zeros(8, 32, 4)}, [8, 32])
        chain = per_call(lambda: pm.call_chain("rl_process_optim_batch", TensorDict, trainer=trainer, batch=batch), args.repeats)
        plain_chain = per_call(lambda: hook.rl_process_optim_batch(trainer=trainer, batch=batch), args.repeats)
        each = per_call(lambda: pm.call_collecting("rl_post_steps_log", dict, trainer=trainer, batch=batch), args.repeats)
        plain_each = per_call(lambda: hook.rl_post_steps_log(trainer=trainer, batch=batch), args.repeats)
        chain_calls, each_calls = batches + steps, 2 * batches + steps

        # -- the loggers' guard: a queued write against a direct one, and the wait before each checkpoint
        direct = Counting()
        guarded = trainer.guard(Counting(), "bench")
        values = {"loss/objective": 1.0, "train/episode_return": 2.0}
        queued = per_call(lambda: guarded.log_scalars(values, 0), args.repeats)
        plain_log = per_call(lambda: direct.log_scalars(values, 0), args.repeats)
        wait = per_call(guarded.wait, args.repeats // 10)
        guarded.close()

    rows = [
        ("checkpoint checksum (CRC-32 of the state)", checksum, checkpoints),
        ("non-finite scan of the model and optimizer, wait for the loggers (a save vs the backend's)", max(full - bare, 0.0), checkpoints),
        ("data-hook chain (call_chain vs pluggy's call)", chain - plain_chain, chain_calls),
        ("logging-hook call in turn (call_collecting vs pluggy's call)", each - plain_each, each_calls),
        ("logger guard: a queued write vs a direct one", queued - plain_log, log_calls),
        ("logger guard: waiting for the loggers before a checkpoint", wait, checkpoints),
    ]
    print(f"PPO CartPole, {args.frames} frames: loop {loop:.2f} s, {batches} batches, {steps} optimisation steps, "
          f"{log_calls} logger writes, {checkpoints} checkpoints\n")
    print("| mechanism | per use (us) | uses | total (ms) | share of the loop |")
    print("| --- | --- | --- | --- | --- |")
    total = 0.0
    for name, cost, uses in rows:
        total += cost * uses
        print(f"| {name} | {cost * 1e6:.1f} | {uses} | {cost * uses * 1e3:.2f} | {cost * uses / loop:.3%} |")
    print(f"| **all of them** | | | {total * 1e3:.2f} | **{total / loop:.3%}** (target < 1%) |")


if __name__ == "__main__":
    main()
