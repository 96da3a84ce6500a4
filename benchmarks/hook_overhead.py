"""Hook-dispatch overhead: PPO on CartPole with 10 no-op plugins on every hook, against the same run with none.

    python benchmarks/hook_overhead.py [--frames 16384] [--repeats 5]

Both variants run in this process, interleaved in alternating order, with one torch thread and the
same seed; the table gives the median loop time of each and the ratio, then the ratio of each pair
and the time of the dispatch alone. Target: the 10 plugins cost under 2% of loop time.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from typing import Any

import torch

import rlcore
from rlcore import hookimpl
from rlcore.hookspecs import LOOP_HOOKS


def make_noop_plugin() -> Any:
    """An object implementing every loop and lifecycle hook, doing nothing."""

    class NoOp:
        pass

    plugin = NoOp()
    for name in (*LOOP_HOOKS, "rl_setup", "rl_shutdown"):
        if name == "rl_optimizer":
            setattr(plugin, name, hookimpl(lambda trainer, losses: None))
        else:
            setattr(plugin, name, hookimpl(lambda trainer: None))
    return plugin


def run(frames: int, plugins: int, seed: int) -> float:
    pm = rlcore.get_plugin_manager(only=["pg"])
    config = {
        "algo": {"name": "ppo"},
        "trainer": {"total_frames": frames, "seed": seed, "progress_bar": False, "save_trainer_interval": 10**12},
        "loggers": {"csv": {}, "console": None},
    }
    with tempfile.TemporaryDirectory() as run_dir:
        trainer = rlcore.build_trainer(config, run_dir=run_dir, plugin_manager=pm)
        for i in range(plugins):
            trainer.register_plugin(make_noop_plugin(), f"noop-{i}")
        start = time.perf_counter()
        trainer.train()
        return time.perf_counter() - start


def dispatch_cost(plugins: int, steps: int, calls: int = 20000) -> float:
    """Seconds per batch spent in hook dispatch alone, for a batch of ``steps`` optimisation steps."""
    from tensordict import TensorDict

    pm = rlcore.PluginManager(discover=False)
    for i in range(plugins):
        pm.add_plugin(make_noop_plugin(), f"noop-{i}")
    hook, batch, trainer = pm.hook, TensorDict({}, [4, 128]), object()
    start = time.perf_counter()
    for _ in range(calls):
        hook.rl_post_optim(trainer=trainer)
    operation = (time.perf_counter() - start) / calls
    start = time.perf_counter()
    for _ in range(calls):
        pm.call_chain("rl_process_optim_batch", TensorDict, trainer=trainer, batch=batch)
    data = (time.perf_counter() - start) / calls
    # per batch: 1 + steps data-hook calls, 4 + 4 x steps other hook calls
    return data * (1 + steps) + operation * (4 + 4 * steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--frames", type=int, default=16384)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    run(2048, 0, 0)  # warm-up
    times: dict[int, list[float]] = {0: [], 10: []}
    for repeat in range(args.repeats):
        for plugins in (0, 10) if repeat % 2 == 0 else (10, 0):  # alternating: a slow spell or a drift hits both
            times[plugins].append(run(args.frames, plugins, seed=repeat))
    base, loaded = statistics.median(times[0]), statistics.median(times[10])
    print(f"| variant | median loop time (s), {args.repeats} runs of {args.frames} frames | frames/s |")
    print("| --- | ---: | ---: |")
    print(f"| no plugins (peer) | {base:.3f} | {args.frames / base:.0f} |")
    print(f"| 10 no-op plugins on all {len(LOOP_HOOKS) + 2} hooks | {loaded:.3f} | {args.frames / loaded:.0f} |")
    pairs = sorted(b / a for a, b in zip(times[0], times[10], strict=True))
    print(f"\noverhead ratio: {loaded / base:.4f} ({(loaded / base - 1) * 100:+.2f}% loop time; target < +2%)")
    print(f"per pair: {', '.join(f'{r:.3f}' for r in pairs)}; median {statistics.median(pairs):.4f}")
    config = rlcore.load_config(algo={"name": "ppo"})  # the run's batch: PPO's defaults
    steps = config["algo"]["epochs"] * config["algo"]["minibatches"]
    per_batch = base / (args.frames / config["collector"]["frames_per_batch"])
    extra = dispatch_cost(10, steps) - dispatch_cost(0, steps)
    print(f"dispatch alone: {extra * 1e6:.0f} us more per batch with 10 plugins, {extra / per_batch * 100:.2f}% of a batch's {per_batch * 1000:.0f} ms")


if __name__ == "__main__":
    main()
