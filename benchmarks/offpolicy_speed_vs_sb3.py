"""Speed benchmark: rl-core DQN and SAC against Stable-Baselines3's and SBX's, with rl-zoo3's hyperparameters.

DQN on CartPole-v1 and SAC on Pendulum-v1, each with rl-zoo3's tuned settings
(``hyperparams/dqn.yml``, ``hyperparams/sac.yml`` of DLR-RM/rl-baselines3-zoo) and every
hyperparameter pinned on all sides (:data:`DQN`, :data:`SAC`): the same exploration schedule,
warm-up, update-to-data schedule, target updates, networks, batch and buffer sizes. The peers
(``--peers``, both by default) are Stable-Baselines3 (SB3, torch) and SBX (SB3 in JAX, ``sbx-rl``),
whose DQN and SAC take SB3's keyword arguments: both get the same ones (:func:`sb3_arguments`).
Each run in a fresh process, pinned alone to one core (``--core``, by default the last this process
may use) with one thread (torch's; for SBX also XLA's, OpenMP's and the BLAS's, through
``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1``, ``OMP_NUM_THREADS=1``
and ``JAX_PLATFORMS=cpu``); runs in groups back to back, one run of each framework per seed, the order
rotating from group to group (rl-core, SB3, SBX; then SB3, SBX, rl-core; ...; pairs alternate).

Every ``eval_every`` frames (after that batch's updates) each evaluates its policy
deterministically on ``eval_episodes`` episodes of a separate env; the clocks stop while it
does. Printed per run: whole-loop frames/s (frames / training wall seconds, evaluations
excluded), frames per CPU second (frames / ``time.process_time()`` of the run's process, all its
threads, evaluations excluded), for SBX the seconds JAX spent compiling (included in the training
seconds, so in the frames/s: ``_sbx_peer.CompileTimer`` says how it is measured), and the training
wall seconds at which the evaluation first reached the threshold (475 on CartPole, -200 on Pendulum)
with the last evaluation's return; then the median frames/s of each framework, rl-core's ratio to each
peer (of the medians, per group, and of the medians per CPU second), and how often and how fast each
reached the threshold.

How the schedules match: SB3's DQN collects ``train_freq=256`` steps, then runs
``gradient_steps=128`` updates; rl-core collects ``frames_per_batch=256`` frames, then runs
``optim_steps_per_batch=128`` steps. SB3 copies the Q-network into its target every
``target_update_interval=10`` env steps, i.e. within ten steps of the end of each round of
updates and never during one (the Q-network changes only in those rounds): its updates always
use the Q-network as it was after the previous round, which is what rl-core's hard update
every 128 optimisation steps gives. All act at random for the first ``learning_starts`` frames
and first update once more frames than that are collected. SAC runs one update per env step on
all sides. SBX runs SB3's loop (collection, replay buffer, schedules, target copies) with its own
updates, so all of this holds for it as it does for SB3, with two arguments SBX does not take put
otherwise: DQN's ``max_grad_norm=10`` becomes an ``optax.clip_by_global_norm(10)`` before its Adam
(torch's ``clip_grad_norm_`` clips by the same global norm), and SAC's ``target_update_interval=1`` is
what SBX's SAC always does. Its networks start from flax's initialisation (LeCun normal), not torch's.

Stable-Baselines3 is not a dependency of the project: when it cannot be imported, it is
installed with ``pip install --target`` into a throwaway folder under the temp dir, without its
dependencies (so no other torch is pulled); the few it needs beyond rl-core's own (cloudpickle,
pandas, matplotlib) are installed there too when missing. Nor is SBX: it gets a venv of its own
under the temp dir (``rlcore-bench-sbx-venv``), made once with ``python -m venv`` and reused,
into which that venv's pip installs ``sbx-rl``, ``jax``, ``jaxlib``, ``flax``, ``optax`` and
``stable-baselines3`` at pinned versions (``_sbx_peer.SBX_REQUIREMENTS``; changing them makes
it anew) under the repository's ``constraints.txt`` (``-c``), so that the torch SB3 pulls in is
the pinned CPU wheel, not a CUDA build, and gymnasium and numpy are rl-core's versions. Each SBX
run is a process of that venv's interpreter (``_sbx_peer.py``), which imports this module (its top
level is the standard library) for the settings, the clock and the evaluations. SBX runs in float32
on the CPU: with ``--device`` other than cpu or ``--autocast-bf16`` it is left out.

    python benchmarks/offpolicy_speed_vs_sb3.py                      # both, seeds 0-2, against SB3 and SBX
    python benchmarks/offpolicy_speed_vs_sb3.py --algo dqn --seeds 0 1 2 3 4
    python benchmarks/offpolicy_speed_vs_sb3.py --algo sac --frames 10000 --seeds 0 --peers sbx   # against SBX alone
    python benchmarks/offpolicy_speed_vs_sb3.py --algo sac --frames 6000 --breakdown   # where a frame's time goes (rl-core and SB3)
    python benchmarks/offpolicy_speed_vs_sb3.py --algo sac --frames 6000 --sb3-flush-denormal   # SB3 with denormals flushed too
    python benchmarks/offpolicy_speed_vs_sb3.py --algo sac --frames 6000 --device cuda          # rl-core and SB3 on a GPU
    python benchmarks/offpolicy_speed_vs_sb3.py --algo sac --frames 6000 --autocast-bf16        # their updates in bfloat16 autocast
    python benchmarks/offpolicy_speed_vs_sb3.py --algo dqn --compile false        # rl-core's eager update (default: algo.compile=null, auto)
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from typing import Any

# The top level imports the standard library only (and _sbx_peer, which does too): SBX's venv, which has no rl-core,
# imports this module for the settings, the clock and the evaluations. pg_speed_vs_sb3 (SB3 pinned, installed without
# its dependencies into a temp folder; the machine's description) imports rl-core: it is imported where it is used.
from _sbx_peer import ensure_sbx, pin_to_core, run_sbx

#: rl-zoo3's CartPole-v1 DQN (hyperparams/dqn.yml), with SB3's defaults for what it leaves out
DQN = {
    "env": "CartPole-v1",
    "frames": 50_000,  # n_timesteps
    "lr": 2.3e-3,
    "batch_size": 64,
    "buffer_size": 100_000,
    "learning_starts": 1000,
    "gamma": 0.99,
    "target_update_interval": 10,  # SB3 env steps; see the module docstring for rl-core's equivalent
    "train_freq": 256,
    "gradient_steps": 128,
    "exploration_fraction": 0.16,
    "exploration_initial_eps": 1.0,  # SB3 default
    "exploration_final_eps": 0.04,
    "net_arch": [256, 256],  # ReLU (SB3 default)
    "max_grad_norm": 10.0,  # SB3 default
    "adam_eps": 1e-8,  # SB3 default (torch's)
    "threshold": 475.0,
    "eval_every": 5000,
}
#: rl-zoo3's Pendulum-v1 SAC (hyperparams/sac.yml: n_timesteps and learning_rate), SB3's defaults for the rest
SAC = {
    "env": "Pendulum-v1",
    "frames": 20_000,
    "lr": 1e-3,
    "batch_size": 256,
    "buffer_size": 1_000_000,
    "learning_starts": 100,
    "gamma": 0.99,
    "tau": 0.005,
    "train_freq": 1,
    "gradient_steps": 1,
    "init_alpha": 1.0,  # ent_coef="auto": log(1.0) at the start, learned
    "net_arch": [256, 256],  # ReLU, actor and each of the two critics
    "adam_eps": 1e-8,
    "threshold": -200.0,
    "eval_every": 1000,
}
SETTINGS = {"dqn": DQN, "sac": SAC}
EVAL_EPISODES = 5


class Clock:
    """Training wall time and this process's CPU time, with the evaluations taken out, and the evaluations' results."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.paused = 0.0
        self.cpu_paused = 0.0
        self.evals: list[tuple[int, float, float]] = []  # (frames, training seconds, mean return)
        self.restart()

    def restart(self) -> None:
        """Start both clocks from now (training starts)."""
        self.start = time.perf_counter()
        self.cpu_start = time.process_time()

    def training_seconds(self) -> float:
        return time.perf_counter() - self.start - self.paused

    def training_cpu_seconds(self) -> float:
        """The CPU seconds of this process (all its threads: ``time.process_time``) while training."""
        return time.process_time() - self.cpu_start - self.cpu_paused

    def evaluate(self, frames: int, run_episodes: Any) -> None:
        seconds = self.training_seconds()
        tic, cpu = time.perf_counter(), time.process_time()
        returns = run_episodes()
        self.paused += time.perf_counter() - tic
        self.cpu_paused += time.process_time() - cpu
        self.evals.append((frames, seconds, sum(returns) / len(returns)))

    def reached(self) -> tuple[int | None, float | None]:
        for frames, seconds, mean in self.evals:
            if mean >= self.threshold:
                return frames, seconds
        return None, None


#: the hook points of one optimisation step: what :func:`run_rlcore` counts as the update under ``--breakdown``
UPDATE_HOOKS = ("rl_process_optim_batch", "rl_post_loss", "rl_optimizer", "rl_post_optim")
UPDATE_ROWS = ("loss forward", "backward", "optimizer step")


def rlcore_config(algo: str, seed: int, frames: int, profile: bool = False, device: str = "cpu") -> dict[str, Any]:
    """rl-core's config of ``algo`` with the pinned hyperparameters, quiet (no console, no CSV, no checkpoints)."""
    import rlcore

    if algo == "dqn":
        h = DQN
        overrides = [
            "algo.name=dqn", f"env.id={h['env']}", "env.num_envs=1",
            f"collector.frames_per_batch={h['train_freq']}", f"trainer.optim_steps_per_batch={h['gradient_steps']}",
            f"algo.gamma={h['gamma']}", "algo.double_dqn=false", "algo.dueling=false", "algo.n_step=1", "algo.loss=huber",
            f"algo.hidden_sizes={h['net_arch']}", "algo.activation=relu",
            f"algo.eps_init={h['exploration_initial_eps']}", f"algo.eps_end={h['exploration_final_eps']}",
            f"algo.eps_annealing_frames={int(h['exploration_fraction'] * frames)}", f"algo.init_random_frames={h['learning_starts']}",
            f"optim.lr={h['lr']}", f"optim.eps={h['adam_eps']}", "optim.lr_schedule=constant",
            "trainer.clip_grad_norm=true", f"trainer.clip_norm={h['max_grad_norm']}",
            f"hooks.replay_buffer.capacity={h['buffer_size']}", f"hooks.replay_buffer.batch_size={h['batch_size']}",
            "hooks.replay_buffer.sampler=uniform", "hooks.target_updater.kind=hard",
            f"hooks.target_updater.interval={h['gradient_steps']}",
        ]  # fmt: skip
    else:
        h = SAC
        overrides = [
            "algo.name=sac", f"env.id={h['env']}", "env.num_envs=1",
            f"collector.frames_per_batch={h['train_freq']}", f"trainer.optim_steps_per_batch={h['gradient_steps']}",
            f"algo.gamma={h['gamma']}", f"algo.hidden_sizes={h['net_arch']}", "algo.activation=relu",
            f"algo.init_alpha={h['init_alpha']}", "algo.learn_alpha=true", "algo.target_entropy=null", "algo.n_step=1",
            f"algo.init_random_frames={h['learning_starts']}",
            f"optim.lr={h['lr']}", f"optim.eps={h['adam_eps']}", "optim.lr_schedule=constant", "trainer.clip_norm=null",
            f"hooks.replay_buffer.capacity={h['buffer_size']}", f"hooks.replay_buffer.batch_size={h['batch_size']}",
            "hooks.replay_buffer.sampler=uniform", "hooks.target_updater.kind=soft", f"hooks.target_updater.tau={h['tau']}",
            "hooks.target_updater.interval=1",
        ]  # fmt: skip
    quiet = ["trainer.progress_bar=false", "trainer.save_trainer_interval=1000000000", "loggers.csv=null", "loggers.console=null"]
    quiet += [f"trainer.profile={str(profile).lower()}", f"trainer.device={device}"]
    return rlcore.load_config(overrides=[*overrides, f"trainer.total_frames={frames}", f"trainer.seed={seed}", *quiet])


def run_rlcore(
    algo: str, seed: int, frames: int, breakdown: bool = False, device: str = "cpu", autocast: bool = False, compile: str = "auto"
) -> dict[str, Any]:
    """Train rl-core's ``algo`` with the pinned hyperparameters; return frames/s and the seconds to the threshold.

    :param breakdown: profile the run (``trainer.profile``) and return the seconds of its optimisation steps
        (sampling, losses, backward, optimizer, target update) as ``update_seconds``.
    :param device: the trainer's device (the networks, and the replay buffer's storage with them).
    :param autocast: run the loss module's forward under ``torch.autocast`` in bfloat16 (its backward follows).
    :param compile: rl-core's ``algo.compile``: ``auto`` (null: the compiled update where it applies and pays), ``true``
        or ``false``; its compilation, at the first update, counts in the training time.
    """
    import torch

    import rlcore

    torch.set_num_threads(1)
    h = SETTINGS[algo]
    config = rlcore_config(algo, seed, frames, breakdown, device)
    config["algo"]["compile"] = {"auto": None, "true": True, "false": False}[compile]
    clock = Clock(h["threshold"])

    class Evaluate:
        def __init__(self) -> None:
            self.next = h["eval_every"]
            self.env: Any = None

        @rlcore.hookimpl
        def rl_setup(self, trainer: Any) -> None:
            self.env = trainer.make_env(num_envs=1)
            clock.restart()

        @rlcore.hookimpl(trylast=True)
        def rl_post_steps(self, trainer: Any) -> None:
            if trainer.collected_frames >= self.next:
                self.next += h["eval_every"]
                policy = trainer.loss_module.policy
                clock.evaluate(trainer.collected_frames, lambda: rlcore.evaluate(policy, self.env, EVAL_EPISODES, seed=10_000)["returns"])

    with tempfile.TemporaryDirectory() as run_dir:
        trainer = rlcore.build_trainer(config, run_dir=run_dir)
        trainer.register_plugin(Evaluate(), "benchmark.evaluate")
        if autocast:
            trainer.loss_module.forward = in_bf16(trainer.loss_module.forward, device)  # type: ignore[method-assign]
        trainer.train()
        seconds, cpu_seconds = clock.training_seconds(), clock.training_cpu_seconds()
    row = run_row("rl-core", algo, seed, trainer.collected_frames, seconds, clock, cpu_seconds=cpu_seconds)
    if breakdown:
        rows = trainer.profiler.rows()
        row["update_seconds"] = sum(t for where, what, t in rows if what in UPDATE_HOOKS or (where == "rl-core" and what in UPDATE_ROWS))
        row["updates"] = trainer.optim_steps
    return row


def in_bf16(fn: Any, device: str) -> Any:
    """``fn`` run under ``torch.autocast(device, bfloat16)``: matrix products in bfloat16 (AMX or tensor cores), the rest as it was."""
    import torch

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with torch.autocast(torch.device(device).type, dtype=torch.bfloat16):
            return fn(*args, **kwargs)

    return wrapped


def sb3_arguments(algo: str, seed: int) -> dict[str, Any]:
    """The keyword arguments of Stable-Baselines3's ``algo`` with the pinned hyperparameters of :data:`SETTINGS`, but for
    the device and the policy's activation function (torch's ReLU for SB3, flax's for SBX, whose DQN and SAC take the
    same names: ``_sbx_peer.sbx_model`` maps the two SBX lacks, DQN's ``max_grad_norm`` and SAC's ``target_update_interval``)."""
    h = SETTINGS[algo]
    kwargs: dict[str, Any] = {  # the keyword arguments of both
        "learning_rate": h["lr"],
        **{key: h[key] for key in ("batch_size", "buffer_size", "learning_starts", "gamma", "train_freq", "gradient_steps")},
        "seed": seed,
        "verbose": 0,
        "policy_kwargs": {"net_arch": h["net_arch"], "optimizer_kwargs": {"eps": h["adam_eps"]}},
    }
    if algo == "dqn":
        kwargs.update(
            target_update_interval=h["target_update_interval"],
            exploration_fraction=h["exploration_fraction"],
            exploration_initial_eps=h["exploration_initial_eps"],
            exploration_final_eps=h["exploration_final_eps"],
            max_grad_norm=h["max_grad_norm"],
            tau=1.0,
        )
    else:
        kwargs.update(tau=h["tau"], ent_coef=f"auto_{h['init_alpha']}", target_update_interval=1, target_entropy="auto")
        kwargs["policy_kwargs"]["n_critics"] = 2
    return kwargs


def sb3_model(algo: str, seed: int, device: str = "cpu") -> Any:
    """Stable-Baselines3's ``algo`` with the pinned hyperparameters of :data:`SETTINGS` (not trained yet)."""
    from pg_speed_vs_sb3 import ensure_sb3

    ensure_sb3()
    import torch
    from stable_baselines3 import DQN as SB3DQN
    from stable_baselines3 import SAC as SB3SAC

    kwargs = sb3_arguments(algo, seed)
    kwargs["policy_kwargs"]["activation_fn"] = torch.nn.ReLU
    return (SB3DQN if algo == "dqn" else SB3SAC)("MlpPolicy", SETTINGS[algo]["env"], device=device, **kwargs)


def learn_evaluated(model: Any, algo: str, frames: int, clock: Clock) -> None:
    """``model.learn`` for ``frames`` frames, evaluating every ``eval_every`` frames on ``clock``, which starts as the
    learning does: SB3's loop, which SBX's models run too (the child of ``_sbx_peer`` calls this in SBX's venv)."""
    import gymnasium as gym
    from stable_baselines3.common.callbacks import BaseCallback

    h = SETTINGS[algo]
    eval_env = gym.make(h["env"])

    def episodes(model: Any) -> list[float]:
        returns = []
        for episode in range(EVAL_EPISODES):
            obs, _ = eval_env.reset(seed=10_000 + episode)
            total, done = 0.0, False
            while not done:
                action, _ = model.predict(obs, deterministic=True)
                obs, reward, terminated, truncated, _ = eval_env.step(action)
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
        return returns

    class Evaluate(BaseCallback):
        """Evaluates before the rollout that follows the updates of the batch that crossed ``eval_every``."""

        def __init__(self) -> None:
            super().__init__()
            self.next = h["eval_every"]

        def _on_rollout_start(self) -> None:
            if self.num_timesteps >= self.next:
                self.next += h["eval_every"]
                clock.evaluate(self.num_timesteps, lambda: episodes(self.model))

        def _on_training_end(self) -> None:
            self._on_rollout_start()

        def _on_step(self) -> bool:
            return True

    clock.restart()
    model.learn(total_timesteps=frames, callback=Evaluate())


def run_sb3(
    algo: str, seed: int, frames: int, breakdown: bool = False, flush_denormal: bool = False, device: str = "cpu", autocast: bool = False
) -> dict[str, Any]:
    """Train Stable-Baselines3's ``algo`` with the same hyperparameters; return frames/s and the seconds to the threshold.

    :param breakdown: time its ``train`` (sampling, losses, backward, optimizers, target update) and return
        the seconds as ``update_seconds``.
    :param flush_denormal: flush denormal floats to zero, as rl-core's off-policy losses do while they train.
    :param device: SB3's ``device`` (its networks and the sampled minibatches; its buffer stays in NumPy).
    :param autocast: run its ``train`` (the updates) under ``torch.autocast`` in bfloat16.
    """
    from pg_speed_vs_sb3 import ensure_sb3

    ensure_sb3()
    import torch

    torch.set_num_threads(1)
    torch.set_flush_denormal(flush_denormal)
    clock = Clock(SETTINGS[algo]["threshold"])
    model = sb3_model(algo, seed, device)
    if autocast:
        model.train = in_bf16(model.train, device)  # type: ignore[method-assign]
    timed = {"seconds": 0.0, "updates": 0}
    if breakdown:
        train = model.train

        def timed_train(gradient_steps: int, batch_size: int = 100) -> None:
            tic = time.perf_counter()
            train(gradient_steps=gradient_steps, batch_size=batch_size)
            timed["seconds"] += time.perf_counter() - tic
            timed["updates"] += gradient_steps

        model.train = timed_train  # type: ignore[method-assign]
    learn_evaluated(model, algo, frames, clock)
    seconds, cpu_seconds = clock.training_seconds(), clock.training_cpu_seconds()
    row = run_row("Stable-Baselines3", algo, seed, model.num_timesteps, seconds, clock, cpu_seconds=cpu_seconds)
    if breakdown:
        row["update_seconds"], row["updates"] = timed["seconds"], timed["updates"]
    return row


#: the display names of the frameworks, rl-core first, then the peers of ``--peers``
NAMES = {"rl-core": "rl-core", "sb3": "Stable-Baselines3", "sbx": "SBX"}


def run_row(name: str, algo: str, seed: int, frames: int, seconds: float, clock: Clock, cpu_seconds: float | None = None, **extra: Any) -> dict[str, Any]:
    """One run's row (printed as it ends): frames/s over the training wall seconds, frames per CPU second of the
    training process, the evaluations; ``extra`` goes into the row as it is (SBX's compile seconds, its versions)."""
    reached_frames, reached = clock.reached()
    cpu_seconds = clock.training_cpu_seconds() if cpu_seconds is None else cpu_seconds
    row = {
        "name": name,
        "algo": algo,
        "seed": seed,
        "frames": frames,
        "seconds": seconds,
        "fps": frames / seconds,
        "cpu_seconds": cpu_seconds,
        "fps_cpu": frames / cpu_seconds,
        "to_threshold": reached,
        "frames_to_threshold": reached_frames,
        "final": clock.evals[-1][2] if clock.evals else float("nan"),
        **extra,
    }
    compiled = ""
    if "compile_seconds" in extra:
        compiled = (f", JAX compiling {extra['compile_seconds']:.2f} s of it (first update call {extra['first_update_call_seconds']:.2f} s, "
                    f"later ones {extra['later_update_call_seconds']:.3f} s)")  # fmt: skip
    print(
        f"# {name} {algo} seed={seed}: {row['fps']:.0f} frames/s, {row['fps_cpu']:.0f} per CPU s{compiled}, "
        f"threshold at {reached} s ({reached_frames} frames), last eval {row['final']:.1f}",
        file=sys.stderr,
        flush=True,
    )
    return row


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def report(algo: str, rows: list[dict[str, Any]]) -> None:
    """The runs' table, each framework's medians, rl-core's ratio to each peer (of the medians, and per group of runs
    back to back: the rows' ``group``), and how often and how fast each reached the threshold."""
    from pg_speed_vs_sb3 import describe_machine

    h = SETTINGS[algo]
    names = [name for name in NAMES.values() if any(r["name"] == name for r in rows)]
    versions = next((f"; SBX: {r['versions']}, one thread" for r in rows if "versions" in r), "")
    print(f"\n### {algo.upper()} on {h['env']}\n\n{describe_machine()}{versions}\n")
    print(
        f"| framework | seed | frames | training wall s | frames/s | frames per CPU s | JAX compile s | wall s to {h['threshold']:g} (eval) | frames to it | last eval |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        reached = f"{r['to_threshold']:.1f}" if r["to_threshold"] is not None else "not reached"
        at = r["frames_to_threshold"] if r["frames_to_threshold"] is not None else "-"
        compiled = f"{r['compile_seconds']:.2f}" if "compile_seconds" in r else "-"
        print(
            f"| {r['name']} | {r['seed']} | {r['frames']} | {r['seconds']:.1f} | {r['fps']:.0f} | {r['fps_cpu']:.0f} | {compiled} | {reached} | {at} | {r['final']:.1f} |"
        )
    runs = {name: [r for r in rows if r["name"] == name] for name in names}
    fps = {name: _median([r["fps"] for r in runs[name]]) for name in names}
    fps_cpu = {name: _median([r["fps_cpu"] for r in runs[name]]) for name in names}
    print()
    medians = "; ".join(f"{name} {algo.upper()}: {fps[name]:.0f} frames/s ({fps_cpu[name]:.0f} per CPU s)" for name in names)
    print(f"{medians} (medians of {len(runs['rl-core'])} runs each)")
    by_group = {(r["group"], r["name"]): r for r in rows}
    for peer in names[1:]:
        groups = sorted({group for group, name in by_group if name == peer})
        ratios = [by_group[group, "rl-core"]["fps"] / by_group[group, peer]["fps"] for group in groups]
        print(f"rl-core/{peer}: ratio of medians {fps['rl-core'] / fps[peer]:.2f}x; per group {', '.join(f'{r:.2f}' for r in ratios)}; "
              f"median {_median(ratios):.2f}x; per CPU second, ratio of medians {fps_cpu['rl-core'] / fps_cpu[peer]:.2f}x")  # fmt: skip
    for name in names:
        reached = [r["to_threshold"] for r in runs[name] if r["to_threshold"] is not None]
        median = f", median {_median(reached):.1f} s" if reached else ""
        print(f"{name}: {h['threshold']:g} reached in {len(reached)} of {len(runs[name])} runs{median}")


def matmul_floor(algo: str) -> tuple[int, float]:
    """``(count, seconds)``: how many products of a batch by a hidden layer ``[B, 256] x [256, 256]`` one update
    needs at the least, and the seconds they take on one thread (the rest of the networks' products are far smaller).

    SAC (one critic's and the actor's hidden layer each count one): forward, the actor at s and at s' (2), the
    target critics (2), the critics (2), the critics at the actor's action (2); backward, the critics' weights and
    inputs (4), the critics' inputs for the actor loss (2), the actor's weights and inputs (2). DQN: forward, the
    Q-network at s and the target at s' (2, and a third at s' for double DQN, off here); backward, weights and inputs (2).
    """
    import torch

    torch.set_num_threads(1)
    h = SETTINGS[algo]
    count = 16 if algo == "sac" else 4
    x, w = torch.randn(h["batch_size"], 256), torch.randn(256, 256)
    for _ in range(20):
        x @ w
    tic = time.perf_counter()
    for _ in range(200):
        x @ w
    return count, (time.perf_counter() - tic) / 200 * count


#: the profiler's names of the matrix products of the networks
PRODUCTS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")


def products_per_update(algo: str, frames: int = 1000) -> float:
    """ms per optimisation step of rl-core's matrix products: their self time under ``torch.profiler`` over a run of
    ``frames`` frames past the warm-up of random actions (seed 0; run it in a fresh process)."""
    import torch
    from torch.profiler import profile

    import rlcore

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as run_dir:
        trainer = rlcore.build_trainer(rlcore_config(algo, 0, SETTINGS[algo]["learning_starts"] + frames), run_dir=run_dir)
        with profile() as prof:
            trainer.train()
    products = sum(event.self_cpu_time_total for event in prof.key_averages() if event.key in PRODUCTS) / 1e6
    return products / trainer.optim_steps * 1e3


def report_breakdown(algo: str, rows: list[dict[str, Any]], device: str = "cpu") -> None:
    """Per frame: the optimisation steps and the rest of the loop, for each framework; and, on the CPU, the floor of the update's products."""
    from pg_speed_vs_sb3 import describe_machine

    print(f"\n### Where a frame's time goes, {algo.upper()} (seed {rows[0]['seed']}; rl-core profiled, SB3's train timed)\n\n{describe_machine()}\n")
    print("| framework | frames/s | ms per frame | update ms per frame | rest of the loop ms per frame | updates |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        frame = r["seconds"] / r["frames"] * 1e3
        update = r["update_seconds"] / r["frames"] * 1e3
        print(f"| {r['name']} | {r['fps']:.0f} | {frame:.2f} | {update:.2f} | {frame - update:.2f} | {r['updates']} |")
    if device != "cpu":
        return
    count, floor = matmul_floor(algo)
    per_update = floor * 1e3 * (rows[0]["updates"] / rows[0]["frames"])
    print(f"\nfloor: {count} products [{SETTINGS[algo]['batch_size']}, 256] x [256, 256] per update, {floor * 1e3:.2f} ms, "
          f"{per_update:.2f} ms per frame at this update-to-data ratio")  # fmt: skip
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        products = pool.submit(products_per_update, algo).result()
    ours, theirs = rows
    update = ours["update_seconds"] / ours["updates"] * 1e3
    budget = theirs["seconds"] / theirs["frames"] * 1e3 / 2  # ms a frame at 2x SB3's frames/s
    rest = budget - products * ours["updates"] / ours["frames"]
    loop = {r["name"]: (r["seconds"] - r["update_seconds"]) / r["frames"] * 1e3 for r in rows}
    print(f"rl-core's matrix products, all of them (torch.profiler's self time over 1000 frames past the warm-up): {products:.2f} ms of the "
          f"{update:.2f} ms of an update; 2x SB3 leaves {budget:.2f} ms for a whole frame, {rest:.2f} ms of it for everything "
          f"besides the products, where the loop around the updates takes {loop['rl-core']:.2f} ms (SB3's {loop['Stable-Baselines3']:.2f} ms)")  # fmt: skip


def parse_peers(text: str) -> list[str]:
    """``--peers``: a comma-separated subset of ``sb3,sbx``, in :data:`NAMES`'s order."""
    peers = {peer.strip() for peer in text.split(",") if peer.strip()}
    unknown = peers - {"sb3", "sbx"}
    if unknown or not peers:
        raise argparse.ArgumentTypeError(f"peers are sb3 and sbx, comma-separated: not {text!r}")
    return [peer for peer in NAMES if peer in peers]


def run_one(framework: str, algo: str, seed: int, frames: int, core: int | None, **extra: Any) -> dict[str, Any]:
    """One run of ``framework`` (a key of :data:`NAMES`) in a fresh process pinned to ``core``: a spawned worker of this
    interpreter for rl-core and SB3, a process of SBX's venv for SBX (which takes no ``extra``)."""
    if framework == "sbx":
        return run_sbx(algo, seed, frames, core)
    fn: Any = run_rlcore if framework == "rl-core" else run_sb3
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context, initializer=pin_to_core, initargs=(core,)) as pool:
        return pool.submit(fn, algo, seed, frames, **extra).result()


def rotated(frameworks: list[str], group: int) -> list[str]:
    """The order of the runs of group ``group``: ``frameworks`` rotated by ``group`` (pairs alternate, triples rotate)."""
    shift = group % len(frameworks)
    return frameworks[shift:] + frameworks[:shift]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algo", choices=["dqn", "sac", "both"], default="both")
    parser.add_argument("--frames", type=int, help="frames per run (default: rl-zoo3's n_timesteps, 50000 for DQN, 20000 for SAC)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--peers",
        type=parse_peers,
        default=["sb3", "sbx"],
        help="the peers rl-core runs against, comma-separated: sb3 (Stable-Baselines3), sbx (SBX, in a venv of its own) (default: sb3,sbx)",
    )
    default_core = max(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    parser.add_argument(
        "--core", type=int, default=default_core, help=f"the core every run is pinned to, alone (default: the last this process may use, {default_core})"
    )
    parser.add_argument(
        "--sb3-flush-denormal",
        action="store_true",
        help="SB3 flushes denormal floats to zero too (rl-core's off-policy losses do: Adam's moments of dead ReLUs decay into them)",
    )
    parser.add_argument("--device", default="cpu", help="rl-core's and SB3's device, e.g. cuda (default: cpu); SBX is left out off the CPU")
    parser.add_argument(
        "--autocast-bf16",
        action="store_true",
        help="rl-core's and SB3's updates under torch.autocast in bfloat16 (matrix products in bfloat16: AMX on a CPU that has it); SBX is left out",
    )
    parser.add_argument(
        "--compile", choices=("auto", "true", "false"), default="auto", help="rl-core's algo.compile (default auto: the compiled update where it applies and pays)"
    )
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="instead of the timed groups, one pair (the first seed) whatever --peers says: rl-core profiled, SB3's train timed; the updates against the rest",
    )
    args = parser.parse_args(argv)
    peers = ["sb3"] if args.breakdown else args.peers
    if "sbx" in peers and (args.device != "cpu" or args.autocast_bf16):
        print("# SBX left out: it runs in float32 on the CPU (JAX_PLATFORMS=cpu), not on --device or under --autocast-bf16", file=sys.stderr)
        peers = [peer for peer in peers if peer != "sbx"]
        if not peers:
            parser.error("no peer left to run against")
    if "sb3" in peers:
        from pg_speed_vs_sb3 import ensure_sb3

        ensure_sb3()
    if "sbx" in peers:
        ensure_sbx()  # before the timed runs: installs once
    algos = ["dqn", "sac"] if args.algo == "both" else [args.algo]
    for algo in algos:
        frames = int(args.frames or SETTINGS[algo]["frames"])  # type: ignore[arg-type]
        if args.breakdown:
            rows = [run_one(framework, algo, args.seeds[0], frames, args.core, breakdown=True, device=args.device) for framework in ("rl-core", "sb3")]
            report_breakdown(algo, rows, args.device)
            continue
        # groups back to back, one run of each framework, the order rotating from group to group, so that a slow spell of a
        # shared machine hits all of them
        jobs = [(group, framework, seed) for group, seed in enumerate(args.seeds) for framework in rotated(["rl-core", *peers], group)]
        rows = []
        for group, framework, seed in jobs:  # one at a time, each in a fresh process
            extra: dict[str, Any] = {}
            if framework != "sbx":
                extra = {"device": args.device, "autocast": args.autocast_bf16}
            if framework == "sb3" and args.sb3_flush_denormal:
                extra["flush_denormal"] = True
            if framework == "rl-core":
                extra["compile"] = args.compile
            rows.append({**run_one(framework, algo, seed, frames, args.core, **extra), "group": group})
        report(algo, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
