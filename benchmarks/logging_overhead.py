"""The cost of logging to CSV, TensorBoard, MLflow and W&B (offline) at once, against CSV alone.

    python benchmarks/logging_overhead.py [--frames 16384] [--repeats 3]

PPO on CartPole, one torch thread, the same seed; every metric is logged every batch
(log_interval 1). The peer is the same run with the CSV logger only, measured in the same process.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import torch

import rlcore

VARIANTS = {
    "csv only (peer)": {"csv": {}},
    "csv + tensorboard": {"csv": {}, "tensorboard": {}},
    "csv + mlflow (sqlite)": {"csv": {}, "mlflow": {}},
    "csv + wandb (offline)": {"csv": {}, "wandb": {}},
    "all four": {"csv": {}, "tensorboard": {}, "mlflow": {}, "wandb": {}},
}


def run(loggers: dict, frames: int, seed: int) -> tuple[float, float]:
    """Wall times of building the run (loggers start) and of ``train()`` (the loop, then closing the loggers)."""
    with tempfile.TemporaryDirectory() as run_dir:
        config = {
            "algo": {"name": "ppo"},
            "trainer": {"total_frames": frames, "seed": seed, "progress_bar": False, "log_interval": 1, "save_trainer_interval": 10**12},
            "loggers": {"console": None, **loggers},
        }
        start = time.perf_counter()
        trainer = rlcore.build_trainer(config, run_dir=run_dir)
        built = time.perf_counter()
        trainer.train()
        return built - start, time.perf_counter() - built


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--frames", type=int, default=16384)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("WANDB_MODE", "offline")
    os.environ.setdefault("WANDB_SILENT", "true")
    os.environ.pop("MLFLOW_TRACKING_URI", None)
    torch.set_num_threads(1)
    run({"csv": {}}, 2048, 0)  # warm-up: imports, caches
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in VARIANTS}
    for repeat in range(args.repeats):
        for name, loggers in VARIANTS.items():
            times[name].append(run(loggers, args.frames, seed=repeat))
    setup = {name: statistics.median(t[0] for t in runs) for name, runs in times.items()}
    loop = {name: statistics.median(t[1] for t in runs) for name, runs in times.items()}
    peer = "csv only (peer)"
    print(f"medians of {args.repeats} runs of {args.frames} frames, every metric logged every batch\n")
    print("| loggers | start-up (s) | train loop + close (s) | loop ratio to csv only | whole-run ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name in VARIANTS:
        whole = (setup[name] + loop[name]) / (setup[peer] + loop[peer])
        print(f"| {name} | {setup[name]:.2f} | {loop[name]:.2f} | {loop[name] / loop[peer]:.3f} | {whole:.3f} |")


if __name__ == "__main__":
    main()
