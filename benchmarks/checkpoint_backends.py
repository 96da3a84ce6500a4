"""Save time, load time and on-disk size of rl-core's checkpoint backends.

Each backend is built the way a run builds it, through the plugin manager::

    rlcore.get_plugin_manager().factory("checkpoint_backends", name)(directory=..., keep_last=2)

The state is what a trainer saves: an MLP with a few million parameters, its Adam state after
a few steps, the RNG states and some counters. Every save goes through the backend's atomic
write-and-rename and its pruning (``keep_last=2``); every load reads the newest checkpoint
(from the page cache: this measures the serialisation, not the disk). Backends take turns in
each round; the table shows the median of ``--repeats`` rounds after one warm-up round, then
the ratios against the first backend.

Usage::

    python benchmarks/checkpoint_backends.py [--hidden 1024] [--layers 4] [--repeats 7] [--backends torch torchsnapshot]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import torch

import rlcore


@dataclass
class Result:
    """Medians for one backend.

    :param name: the backend's registered name.
    :param save_s: seconds per save.
    :param load_s: seconds per load.
    :param size_bytes: bytes on disk of one checkpoint.
    """

    name: str
    save_s: float
    load_s: float
    size_bytes: int


def build_state(hidden: int, layers: int, seed: int = 0) -> tuple[dict[str, Any], int]:
    """A trainer-like state: MLP weights, Adam state after three steps, RNG states, counters.

    :param hidden: the width of the hidden layers.
    :param layers: the number of hidden layers.
    :param seed: the seed of every RNG.
    :return: the state and the model's parameter count.
    """
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    sizes = [64, *[hidden] * layers, 16]
    modules: list[torch.nn.Module] = []
    for n_in, n_out in pairwise(sizes):
        modules += [torch.nn.Linear(n_in, n_out), torch.nn.Tanh()]
    model = torch.nn.Sequential(*modules[:-1])
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
    for _ in range(3):
        optimizer.zero_grad()
        model(torch.randn(32, sizes[0])).pow(2).mean().backward()
        optimizer.step()
    state = {
        "collected_frames": 1_000_000,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "rng": _rng_state(),
        "hooks": {"counter": {"calls": 123}},
    }
    return state, sum(p.numel() for p in model.parameters())


def _rng_state() -> dict[str, Any]:
    """RNG states as the trainer stores them: tensors and plain values, which every backend loads
    (the ``torch`` backend's ``weights_only=True`` loader refuses numpy arrays)."""
    version, internal, gauss = random.getstate()
    _, keys, pos, has_gauss, cached = np.random.get_state()
    return {
        "python": {"version": version, "internal": torch.tensor(internal, dtype=torch.int64), "gauss": gauss},
        "numpy": {
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached": float(cached),
        },
        "torch": torch.get_rng_state(),
    }


def disk_size(path: Path) -> int:
    """Bytes of a checkpoint file, or of every file under a checkpoint directory.

    :param path: the checkpoint.
    """
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[float, Any]:
    """Call ``fn(*args, **kwargs)`` once.

    :param fn: what to time.
    :return: seconds taken and its result.
    """
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - start, result


def measure(names: Sequence[str], state: dict[str, Any], directory: Path, repeats: int) -> list[Result]:
    """Save and load ``state`` ``repeats`` times with each backend, after a warm-up.

    Backends take turns within each round, so a busy machine slows them alike.

    :param names: the registered backend names.
    :param state: what to checkpoint.
    :param directory: where checkpoints go (a sub-directory per backend).
    :param repeats: how many timed saves and loads per backend.
    """
    pm = rlcore.get_plugin_manager()
    backends = {name: pm.factory("checkpoint_backends", name)(directory=directory / name, keep_last=2) for name in names}
    saves: dict[str, list[float]] = {name: [] for name in names}
    loads: dict[str, list[float]] = {name: [] for name in names}
    newest: dict[str, Path] = {}
    for i in range(repeats + 1):
        for name, backend in backends.items():
            save_s, newest[name] = timed(backend.save, state, frames=i)
            load_s, (loaded_path, loaded) = timed(backend.load)
            assert loaded_path == newest[name]
            assert all(torch.equal(loaded["model"][k], v) for k, v in state["model"].items())
            if i:  # round 0 is the warm-up (imports, allocator)
                saves[name].append(save_s)
                loads[name].append(load_s)
    return [
        Result(name, statistics.median(saves[name]), statistics.median(loads[name]), disk_size(newest[name]))
        for name in names
    ]


def table(results: Sequence[Result]) -> str:
    """A markdown table of the results, then the ratios of each backend to the first.

    :param results: one per backend; the first is the reference.
    """
    lines = ["| backend | save (ms) | load (ms) | size (MB) |", "| --- | ---: | ---: | ---: |"]
    for r in results:
        lines.append(f"| {r.name} | {r.save_s * 1e3:.1f} | {r.load_s * 1e3:.1f} | {r.size_bytes / 2**20:.2f} |")
    ref = results[0]
    for r in results[1:]:
        lines.append("")
        lines.append(
            f"{r.name}/{ref.name}: save x{r.save_s / ref.save_s:.2f}, load x{r.load_s / ref.load_s:.2f}, "
            f"size x{r.size_bytes / ref.size_bytes:.3f}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the arguments, measure every backend and print the table.

    :param argv: command-line arguments (default: ``sys.argv[1:]``).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=1024, help="width of the hidden layers")
    parser.add_argument("--layers", type=int, default=4, help="number of hidden layers")
    parser.add_argument("--repeats", type=int, default=7, help="timed saves and loads per backend")
    parser.add_argument("--backends", nargs="+", default=["torch", "torchsnapshot"], help="first one is the reference")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's choice)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    state, n_params = build_state(args.hidden, args.layers)
    print(
        f"model: MLP {args.layers}x{args.hidden}, {n_params / 1e6:.2f}M parameters (+ Adam state), float32; "
        f"median of {args.repeats} rounds after 1 warm-up round; torch {torch.__version__}, {torch.get_num_threads()} threads\n"
    )
    with tempfile.TemporaryDirectory(prefix="rlcore-ckpt-bench-") as tmp:
        results = measure(args.backends, state, Path(tmp), args.repeats)
    print(table(results))


if __name__ == "__main__":
    main()
