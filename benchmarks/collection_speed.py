"""Collection speed: frames/s of collecting with one policy, rl-core's vectorizations against SB3's and TorchRL's.

Two settings, each with the same policy object and env count on every side:

- ``cartpole``: 64 ``CartPole-v1`` envs, a [64, 64] tanh MLP with a categorical head;
- ``pong``: 8 ``ALE/Pong-v5`` envs with Gymnasium's Atari preprocessing (no-op starts, frame skip 4
  with max-pooling, 84 x 84 grey) and a stack of 4 frames, the Nature-DQN CNN with a categorical head.
  EnvPool's ``Pong-v5`` does the same preprocessing in C++ (its own defaults: 84 x 84 grey, 4 frames).

Backends: rl-core's ``rlcore.Collector`` (whole ``[envs, time]`` TensorDict batches) on ``sync``,
``async``, ``envpool`` and, for Pong, ``ale`` (ale-py's ``AtariVectorEnv``: C++ threads, EnvPool's
preprocessing); Stable-Baselines3's ``DummyVecEnv`` and ``SubprocVecEnv`` (the loop
``actions = policy(obs); obs = venv.step(actions)``, nothing stored: SB3's collection without its
rollout buffer); TorchRL's ``ParallelEnv`` of ``GymEnv`` under its ``SyncDataCollector`` (``Collector`` in 0.14). Each
measure collects ``--frames`` frames after one warm-up batch, in a fresh process, one torch
thread, the backends' order alternating between repeats; the median of the repeats is printed.

Two reference rows bound what any collector on this machine can reach: ``EnvPool alone`` steps
the pool with random actions (EnvPool's own next-step autoreset, no policy, no batch; as many
threads as rl-core's envpool default), ``policy alone`` runs the policy on a fixed batch of
observations (no env). A collector needs both each step, so it cannot pass
``1 / (1 / envpool + 1 / policy)`` frames/s when it runs them in turn, nor the slower of the two
when it overlaps them: both are printed after the table, with their ratios to SB3's fastest.
``Gymnasium vector + policy`` is the policy stepping the env's own vectorised implementation
(``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")``: Gymnasium's numpy
``CartPoleVectorEnv``, all envs in one numpy step; ale-py's ``AtariVectorEnv``, C++ threads with
EnvPool's preprocessing) in a bare loop ``obs = env.step(policy(obs))``: no batch, and its
next-step autoreset counts the step that resets an env as a frame. No collector built on that env
can be faster.

SB3 and TorchRL are not dependencies of the project: when they cannot be imported they are
installed with ``pip install --target`` into throwaway folders under the temp dir, without their
dependencies (so no other torch is pulled; pg_speed_vs_sb3.py does the same for SB3).

    python benchmarks/collection_speed.py                            # both settings, 3 repeats
    python benchmarks/collection_speed.py --setting cartpole --frames 100000 --repeats 5
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pg_speed_vs_sb3 import ensure_sb3

TORCHRL_DIR = Path(tempfile.gettempdir()) / "rlcore-bench-torchrl"
SETTINGS = {
    "cartpole": {"env": "CartPole-v1", "num_envs": 64, "steps": 64},
    "pong": {"env": "ALE/Pong-v5", "num_envs": 8, "steps": 32},
}
BACKENDS = ["rl-core sync", "rl-core async", "rl-core envpool", "rl-core ale", "SB3 DummyVecEnv", "SB3 SubprocVecEnv", "TorchRL ParallelEnv"]
#: backends measured in some settings only
ONLY = {"rl-core ale": ("pong",)}
REFERENCES = ["EnvPool alone", "policy alone", "Gymnasium vector + policy"]


def ensure_torchrl() -> None:
    """Make ``torchrl`` importable, installing it into :data:`TORCHRL_DIR` without dependencies if needed."""
    if str(TORCHRL_DIR) not in sys.path:
        sys.path.insert(0, str(TORCHRL_DIR))
    if importlib.util.find_spec("torchrl") is not None:
        return
    print(f"# installing torchrl into {TORCHRL_DIR} (no dependencies)", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(TORCHRL_DIR), "torchrl"], check=True)
    importlib.invalidate_caches()


def make_net(setting: str, n_actions: int) -> Any:
    """The policy network of a setting: logits of observations (``uint8`` frames scaled inside the CNN)."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    if setting == "cartpole":
        return nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, n_actions))
    from rl_plugin_nets import NatureCNN

    return nn.Sequential(NatureCNN((4, 84, 84)), nn.Linear(512, n_actions))


def sample(net: Any, obs: Any) -> Any:
    """Actions sampled from the categorical of ``net``'s logits (Gumbel-max), as a tensor."""
    import torch

    logits = net(obs)
    return (logits - torch.empty_like(logits).exponential_().log()).argmax(-1)


def gym_pong(make: Any) -> Any:
    """An ``ALE/Pong-v5`` env with Gymnasium's Atari preprocessing and a stack of 4 frames."""
    import ale_py
    import gymnasium

    gymnasium.register_envs(ale_py)
    env = gymnasium.make("ALE/Pong-v5", frameskip=1)
    return gymnasium.wrappers.FrameStackObservation(gymnasium.wrappers.AtariPreprocessing(env), 4)


def measure(backend: str, setting: str, frames: int) -> float:
    """Frames/s of collecting ``frames`` frames with ``backend`` (after a warm-up batch)."""
    import torch

    torch.set_num_threads(1)
    spec = SETTINGS[setting]
    n, steps = spec["num_envs"], spec["steps"]
    batches = max(1, frames // (n * steps))
    net = make_net(setting, 2 if setting == "cartpole" else 6)
    if backend in REFERENCES:
        return measure_reference(backend, setting, batches * steps, net)
    if backend.startswith("rl-core"):
        from tensordict.nn import TensorDictModule

        import rlcore

        vectorization = backend.split()[-1]
        preprocessed = vectorization in ("envpool", "ale")  # (in C++, as the Python wrappers would)
        wrappers = {"atari": {}, "frame_stack": {"stack_size": 4}} if setting == "pong" and not preprocessed else None
        env = rlcore.make_vector_env(spec["env"], n, vectorization=vectorization, wrappers=wrappers)
        policy = TensorDictModule(lambda obs: sample(net, obs), in_keys=["observation"], out_keys=["action"])
        collector = rlcore.Collector(env, policy, n * steps)
        collector.set_seed(0)
        collector.collect()
        start = time.perf_counter()
        for _ in range(batches):
            collector.collect()
        seconds = time.perf_counter() - start
        collector.shutdown()
        return batches * n * steps / seconds
    if backend.startswith("SB3"):
        ensure_sb3()
        import gymnasium
        from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

        make = (lambda: gymnasium.make("CartPole-v1")) if setting == "cartpole" else (lambda: gym_pong(None))
        venv = (DummyVecEnv if "Dummy" in backend else SubprocVecEnv)([make] * n)
        venv.seed(0)
        obs = venv.reset()
        total = (batches + 1) * steps
        start = 0.0
        with torch.inference_mode():
            for i in range(total):
                if i == steps:
                    start = time.perf_counter()
                actions = sample(net, torch.as_tensor(obs, dtype=torch.float32 if setting == "cartpole" else torch.uint8)).numpy()
                obs, _, _, _ = venv.step(actions)
        seconds = time.perf_counter() - start
        venv.close()
        return batches * n * steps / seconds
    ensure_torchrl()
    from tensordict.nn import TensorDictModule
    try:
        from torchrl.collectors import SyncDataCollector
    except ImportError:  # torchrl 0.14 renamed it
        from torchrl.collectors import Collector as SyncDataCollector
    from torchrl.envs import GymEnv, GymWrapper, ParallelEnv

    make = (lambda: GymEnv("CartPole-v1")) if setting == "cartpole" else (lambda: GymWrapper(gym_pong(None)))
    env = ParallelEnv(n, make)
    policy = TensorDictModule(lambda obs: sample(net, obs), in_keys=["observation"], out_keys=["action"])

    def one_hot_policy(td: Any) -> Any:  # TorchRL's Gym envs take one-hot discrete actions
        td = policy(td)
        td["action"] = torch.nn.functional.one_hot(td["action"], env.action_spec.shape[-1])
        return td

    collector = SyncDataCollector(env, one_hot_policy, frames_per_batch=n * steps, total_frames=-1)
    iterator = iter(collector)
    next(iterator)
    start = time.perf_counter()
    for _ in range(batches):
        next(iterator)
    seconds = time.perf_counter() - start
    collector.shutdown()
    return batches * n * steps / seconds


def measure_reference(reference: str, setting: str, steps: int, net: Any) -> float:
    """Frames/s of one of :data:`REFERENCES` over ``steps`` steps of the setting's envs (after as many warm-up steps)."""
    import os

    import envpool
    import gymnasium
    import numpy as np
    import torch

    spec = SETTINGS[setting]
    n = spec["num_envs"]
    task = "CartPole-v1" if setting == "cartpole" else "Pong-v5"
    env: Any
    if reference == "Gymnasium vector + policy":
        if setting == "pong":
            import ale_py

            gymnasium.register_envs(ale_py)
        env = gymnasium.make_vec(spec["env"], num_envs=n, vectorization_mode="vector_entry_point")
        obs = torch.as_tensor(env.reset(seed=0)[0])

        def step(i: int) -> None:
            nonlocal obs
            obs = torch.as_tensor(env.step(sample(net, obs).numpy())[0])

    else:
        env = envpool.make(task, env_type="gymnasium", num_envs=n, seed=0, num_threads=min(n, len(os.sched_getaffinity(0))))  # rl-core's envpool default (EnvPool runs on Linux only)
        ids = np.arange(n, dtype=np.int32)
        first = torch.as_tensor(env.reset(ids)[0], dtype=torch.float32 if setting == "cartpole" else torch.uint8)
        actions = np.random.default_rng(0).integers(0, env.action_space.n, (2 * steps, n))
        if reference == "policy alone":
            step = lambda i: sample(net, first)
        else:
            step = lambda i: env.step(actions[i], ids)
    with torch.inference_mode():
        for i in range(steps):
            step(i)
        start = time.perf_counter()
        for i in range(steps, 2 * steps):
            step(i)
        seconds = time.perf_counter() - start
    env.close()
    return steps * n / seconds


def _measure(backend: str, setting: str, frames: int) -> float | str:
    """:func:`measure` in a fresh process (``python collection_speed.py --one ...``); an error's one line instead of a number."""
    done = subprocess.run([sys.executable, __file__, "--one", backend, setting, str(frames)], capture_output=True, text=True, timeout=1800)
    lines = done.stdout.strip().splitlines()
    if done.returncode == 0 and lines:
        return float(lines[-1])
    error = [line for line in done.stderr.strip().splitlines() if line.strip()]
    return error[-1][:100] if error else f"exit {done.returncode}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--setting", action="append", choices=list(SETTINGS), help="default: both")
    parser.add_argument("--backend", action="append", choices=BACKENDS + REFERENCES, help="default: all")
    parser.add_argument("--frames", type=int, default=65_536, help="frames collected per measure (after a warm-up batch)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--one", nargs=3, metavar=("BACKEND", "SETTING", "FRAMES"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(measure(args.one[0], args.one[1], int(args.one[2])))
        return 0
    settings, backends = args.setting or list(SETTINGS), args.backend or BACKENDS + REFERENCES
    results: dict[tuple[str, str], list[float]] = {}
    errors: dict[tuple[str, str], str] = {}
    for repeat in range(args.repeats):
        for setting in settings:
            frames = args.frames if setting == "cartpole" else max(args.frames // 8, 2048)
            order = backends if repeat % 2 == 0 else list(reversed(backends))
            for backend in (b for b in order if setting in ONLY.get(b, (setting,))):
                value = _measure(backend, setting, frames)
                if isinstance(value, str):
                    errors[(backend, setting)] = value
                else:
                    results.setdefault((backend, setting), []).append(value)
                print(f"# {setting} {backend}: {value if isinstance(value, str) else f'{value:,.0f} frames/s'}", file=sys.stderr, flush=True)
    header = " | ".join(f"{s}: {SETTINGS[s]['num_envs']} x {SETTINGS[s]['env']}" for s in settings)
    print(f"| backend | {header} |")
    print("| --- | " + " | ".join("---" for _ in settings) + " |")
    for backend in backends:
        cells = []
        for setting in settings:
            values = results.get((backend, setting))
            if setting not in ONLY.get(backend, (setting,)):
                cells.append("-")
            else:
                cells.append(f"{statistics.median(values):,.0f} frames/s" if values else f"n/a ({errors.get((backend, setting), '-')})")
        print(f"| {backend} | " + " | ".join(cells) + " |")
    print()
    for setting in settings:
        ours = {b: statistics.median(v) for (b, s), v in results.items() if s == setting and b.startswith("rl-core")}
        sb3 = {b: statistics.median(v) for (b, s), v in results.items() if s == setting and b.startswith("SB3")}
        if ours and sb3:
            best, peer = max(ours, key=ours.__getitem__), max(sb3, key=sb3.__getitem__)
            print(f"{setting}: rl-core's fastest ({best}) / SB3's fastest ({peer}) = {ours[best] / sb3[peer]:.2f}x")
            env_alone, policy_alone, vector = (statistics.median(results.get((r, setting)) or [0.0]) for r in REFERENCES)
            if env_alone and policy_alone:
                in_turn, overlapped = 1 / (1 / env_alone + 1 / policy_alone), min(env_alone, policy_alone)
                print(
                    f"{setting}: an EnvPool collector cannot pass {in_turn:,.0f} frames/s with env and policy in turn "
                    f"({in_turn / sb3[peer]:.2f}x SB3's fastest), {overlapped:,.0f} with them overlapped ({overlapped / sb3[peer]:.2f}x)"
                )
            if vector:
                print(f"{setting}: the policy on the env's own vectorised {SETTINGS[setting]['env']}, bare loop: {vector:,.0f} frames/s ({vector / sb3[peer]:.2f}x SB3's fastest)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
