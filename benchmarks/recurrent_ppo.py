"""Recurrent PPO against feed-forward PPO on a partially observed task: CartPole without its velocities.

``env.wrappers.mask_observation: {keep: [0, 2]}`` leaves the policy the cart's position and the pole's angle; the
velocities must be inferred from what came before, which an LSTM can and a feed-forward policy cannot. Both sides run
the same settings (rl-zoo3's for sb3-contrib's RecurrentPPO on CartPoleNoVel-v1: 8 envs x 32 steps, 4 epochs of one
minibatch, gamma 0.999, lambda 0.98, ReLU heads of 64, learning rate and clip range annealed linearly to 0,
normalised observations and rewards); the recurrent side adds ``algo.recurrent: {hidden_size: 64}``, nothing else.

Per seed it reports the mean return of the last 20 training episodes, of a 20-episode deterministic evaluation, and
the first frame count at which the last 20 training episodes averaged 400. It passes when every recurrent seed's
evaluation reaches 400 and no feed-forward seed's reaches 200.

    python benchmarks/recurrent_ppo.py                      # 3 seeds each, 300k frames
    python benchmarks/recurrent_ppo.py --seeds 0 1 2 3 4 --frames 500000
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from pg_learning import Case, deterministic_eval, run_jobs, train_case

THRESHOLD, FEED_FORWARD_CEILING = 400.0, 200.0
SETTINGS = (
    "env.wrappers.mask_observation.keep=[0, 2]",
    "env.wrappers.normalize_observation={}",
    "env.wrappers.normalize_reward.gamma=0.999",
    "env.num_envs=8",
    "collector.frames_per_batch=256",
    "algo.gamma=0.999",
    "algo.gae_lambda=0.98",
    "algo.epochs=4",
    "algo.minibatches=1",
    "algo.activation=relu",
    "algo.net_arch={pi: [64], vf: [64]}",
    "algo.schedule.clip_range=0.0",  # (PPO's default: 0.2 annealed to 0, as the zoo's lin_0.2)
    "optim.lr=1e-3",
    "optim.lr_schedule=linear",
)
VARIANTS = {"recurrent": ("algo.recurrent={hidden_size: 64}",), "feed-forward": ()}


def _run(job: tuple[str, int, int]) -> dict[str, Any]:
    variant, seed, frames = job
    case = Case("ppo", "CartPole-v1", frames, THRESHOLD, 3, overrides=(*SETTINGS, *VARIANTS[variant]))
    trainer, recorder, seconds = train_case(case, seed, frames, ())
    row = {
        "variant": variant,
        "seed": seed,
        "frames": trainer.collected_frames,
        "final": recorder.final_mean(),
        "eval": deterministic_eval(trainer, episodes=20),
        "reached": recorder.first_reaching(THRESHOLD)[0],
        "seconds": seconds,
    }
    print(f"# done {variant} seed={seed} final={row['final']:.1f} eval={row['eval']:.1f} reached={row['reached']} in {seconds:.0f}s", file=sys.stderr, flush=True)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--frames", type=int, default=300_000)
    parser.add_argument("--workers", type=int, default=2, help="parallel training processes (at most 2 advised)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = run_jobs(_run, [(variant, seed, args.frames) for variant in VARIANTS for seed in args.seeds], args.workers)
    print(f"| policy | seed | frames | final return (last 20) | eval return (20, deterministic) | frames to {THRESHOLD:g} | seconds |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        reached = row["reached"] if row["reached"] is not None else "-"
        print(f"| {row['variant']} | {row['seed']} | {row['frames']} | {row['final']:.1f} | {row['eval']:.1f} | {reached} | {row['seconds']:.0f} |")
    solved = sum(r["eval"] >= THRESHOLD for r in rows if r["variant"] == "recurrent")
    best = max(r["eval"] for r in rows if r["variant"] == "feed-forward")
    ok = solved == len(args.seeds) and best < FEED_FORWARD_CEILING
    print(f"\nrecurrent: {solved}/{len(args.seeds)} seeds evaluate at {THRESHOLD:g} or more; feed-forward: best evaluation {best:.1f} "
          f"(below {FEED_FORWARD_CEILING:g}: {'yes' if best < FEED_FORWARD_CEILING else 'no'}); pass: {'yes' if ok else 'no'}")  # fmt: skip
    print(f"total {time.perf_counter() - start:.0f}s", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
