"""Memory benchmark: the replay buffer's resident memory for 1M CartPole transitions against its capacity times the transition size.

A real batch of CartPole-v1 transitions is collected (rl-core's collector, random actions:
the keys, shapes and dtypes a DQN run stores), then written to a replay buffer of the given
capacity again and again until it is full. The process's resident memory (``VmRSS``) is read
before the first write and after the last; the storage's own figure is its preallocated bytes,
capacity times one transition. Then the same for a memory-mapped storage (its pages belong to
the page cache, so they count as the process's file-backed resident memory while mapped), and
sampling speed from the full buffer, uniform and prioritized.

    python benchmarks/replay_memory.py                     # 1M transitions
    python benchmarks/replay_memory.py --capacity 200000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from typing import Any


def rss_bytes() -> int:
    """Resident memory of this process (Linux ``/proc/self/status``), after returning the allocator's free pages."""
    import ctypes

    ctypes.CDLL("libc.so.6").malloc_trim(0)  # freed heap pages would otherwise be reused by the storage and not show up
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def cartpole_batch(frames: int) -> Any:
    """``frames`` CartPole transitions as rl-core's collector writes them, flattened to ``[frames]``."""
    from tensordict import TensorDict
    from tensordict.nn import TensorDictModuleBase

    import rlcore

    class Random(TensorDictModuleBase):
        in_keys = ["observation"]
        out_keys = ["action"]

        def forward(self, td: TensorDict) -> TensorDict:
            import torch

            td.set("action", torch.randint(2, td.batch_size))
            return td

    env = rlcore.make_vector_env("CartPole-v1", 1)
    collector = rlcore.Collector(env, Random(), frames)
    collector.set_seed(0)
    batch = collector.collect().reshape(-1)
    collector.shutdown()
    return batch


def fill(capacity: int, memmap: bool, chunk: Any) -> dict[str, Any]:
    import torch

    from rl_plugin_replay import make_replay_buffer

    with tempfile.TemporaryDirectory() as scratch:
        buffer = make_replay_buffer(capacity, memmap=memmap, scratch_dir=scratch)
        before = rss_bytes()
        start = time.perf_counter()
        while len(buffer) < capacity:
            buffer.extend(chunk)
        seconds = time.perf_counter() - start
        after = rss_bytes()
        item = buffer.storage.nbytes // capacity
        row = {
            "storage": "memory-mapped files" if memmap else "tensors in RAM",
            "transitions": len(buffer),
            "item_bytes": item,
            "nbytes": buffer.storage.nbytes,
            "rss": after - before,
            "fill_seconds": seconds,
        }
        if not memmap:
            torch.manual_seed(0)
            for sampler in ("uniform", "prioritized"):
                sampled = make_replay_buffer(capacity, sampler=sampler, batch_size=256)
                sampled.load_state_dict(buffer.state_dict())
                for _ in range(20):
                    sampled.sample()
                tic = time.perf_counter()
                for _ in range(500):
                    sampled.sample()
                row[f"sample_{sampler}_us"] = (time.perf_counter() - tic) / 500 * 1e6
        buffer.storage.close()
        return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--capacity", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    chunk = cartpole_batch(10_000)
    keys = ", ".join(
        f"{'.'.join(k) if isinstance(k, tuple) else k} {tuple(v.shape[1:])} {str(v.dtype).replace('torch.', '')}"
        for k, v in chunk.items(include_nested=True, leaves_only=True)
    )
    print(f"one CartPole transition: {keys}")
    rows = [fill(args.capacity, False, chunk), fill(args.capacity, True, chunk)]
    print()
    print("| storage | transitions | bytes per transition | capacity x transition (MB) | resident memory added (MB) | ratio | fill (s) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['storage']} | {r['transitions']} | {r['item_bytes']} | {r['nbytes'] / 1e6:.1f} | {r['rss'] / 1e6:.1f} "
            f"| {r['rss'] / r['nbytes']:.3f} | {r['fill_seconds']:.2f} |"
        )
    ram = rows[0]
    print()
    print(
        f"sampling 256 transitions from {ram['transitions']}: uniform {ram['sample_uniform_us']:.0f} us, "
        f"prioritized {ram['sample_prioritized_us']:.0f} us (sum tree of {ram['transitions']} leaves)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
