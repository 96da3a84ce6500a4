"""Evaluation: episodes of a policy on a vector env (the one evaluation loop), and ``rlctl eval``'s evaluation of a run.

The loop knows nothing of videos: it offers each frame through a callback, ``on_frame(render)``,
and ``render()`` draws it only when called; a recorder plugged in there decides what to keep.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from tensordict.nn import InteractionType, set_interaction_type

from .._kernel.manager import PluginManager
from .collector import Carry, rewards_of_env, to_tensor
from .policy import load_policy

#: ``on_frame(render)``: called before each action of the first env's first episode; ``render()``
#: returns that env's frame (``env.render()[0]``), drawn only when called.
FrameCallback = Callable[[Callable[[], Any]], Any]


class EvaluationResult(TypedDict):
    """What :func:`evaluate` returns.

    :param returns: each episode's return, in the env's own reward scale, in the order the episodes ended.
    :param lengths: each episode's length, in env steps.
    """

    returns: list[float]
    lengths: list[int]


def interaction_type(value: InteractionType | str) -> InteractionType:
    """``value`` as a ``tensordict.nn.InteractionType``; a name (``"deterministic"``, ``"random"``, ``"mode"``,
    ``"mean"``, ``"median"``) is read case-insensitively.

    :param value: an ``InteractionType`` or its name.
    :raises ValueError: for an unknown name (one line with the valid choices).
    """
    if isinstance(value, InteractionType):
        return value
    try:
        return InteractionType(str(value).lower())
    except ValueError:
        choices = ", ".join(t.value for t in InteractionType)
        raise ValueError(f"exploration_type: unknown value {value!r} (valid choices: {choices})") from None


@torch.no_grad()
def evaluate(
    policy: Any,
    env: Any,
    episodes: int | None = 1,
    *,
    max_frames: int | None = None,
    exploration_type: InteractionType | str = InteractionType.DETERMINISTIC,
    seed: int | None = None,
    on_frame: FrameCallback | None = None,
) -> EvaluationResult:
    """Roll ``policy`` out on the vector env ``env`` until ``episodes`` episodes ended or ``max_frames`` frames were stepped.

    Every env of ``env`` runs episodes side by side (several envs evaluate faster; shorter episodes end
    first). The envs are reset once, with ``seed`` (env ``i`` gets ``seed + i``); later episodes start
    through the vector env's autoreset (``SAME_STEP``, as ``rlcore.make_vector_env`` makes them, or
    ``NEXT_STEP``, whose reset steps are not counted). Returns are the env's own rewards:
    ``info["raw_reward"]`` when a wrapper scaled them. When ``max_frames`` comes first and no episode
    has ended, the first env's running episode counts, with its partial return and length.

    The policy is put in eval mode (``policy.train(False)``) and acts under ``exploration_type``
    (TorchRL's ``LogValidationReward`` argument); its training flag is restored afterwards. A policy
    that reads ``is_init`` is told where episodes begin, and what it writes under ``next`` (a recurrent
    state) is its input at the next step, as in collection.

    :param policy: a ``tensordict.nn`` module reading ``observation`` and writing ``action``.
    :param env: a ``gymnasium.vector.VectorEnv``; made with ``render_mode="rgb_array"`` when ``on_frame`` draws frames.
    :param episodes: how many episodes to finish; ``None`` runs until ``max_frames``.
    :param max_frames: stop once this many frames (env steps summed over the envs) were stepped; ``None``: no limit.
    :param exploration_type: a ``tensordict.nn.InteractionType`` or its name: ``"deterministic"`` (the
        distribution's deterministic sample, its mode for most), ``"random"``, ``"mode"``, ``"mean"``.
    :param seed: reset seed of the first episodes.
    :param on_frame: ``on_frame(render)`` before each action of the first env's first episode (the state
        the action is taken in), so an episode of length ``T`` offers ``T`` frames; ``render()`` returns the frame.
    :return: the returns and lengths of the first ``episodes`` episodes to end.
    :raises ValueError: when neither ``episodes`` nor ``max_frames`` is set, either is below 1,
        ``exploration_type`` is unknown, or the env does not autoreset.
    """
    if episodes is None and max_frames is None:
        raise ValueError("evaluate: set episodes or max_frames (both are None)")
    for name, value in (("episodes", episodes), ("max_frames", max_frames)):
        if value is not None and value < 1:
            raise ValueError(f"evaluate: {name} must be at least 1, got {value}")
    mode = interaction_type(exploration_type)
    autoreset = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
    if autoreset == AutoresetMode.DISABLED:
        raise ValueError("evaluate: the vector env must autoreset (autoreset_mode SAME_STEP or NEXT_STEP), not DISABLED")
    next_step = autoreset == AutoresetMode.NEXT_STEP
    device = _device(policy)
    n = env.num_envs
    episode_return, episode_length = np.zeros(n), np.zeros(n, dtype=np.int64)
    resetting = np.zeros(n, dtype=bool)  # NEXT_STEP autoreset: this env's next step only resets it
    returns: list[float] = []
    lengths: list[int] = []
    frames = 0
    recording = on_frame  # None once the first env's first episode ended

    def render() -> Any:
        rendered = env.render()
        if rendered is None or rendered[0] is None:
            raise RuntimeError("the evaluation env renders no frames: make it with render_mode='rgb_array'")
        return rendered[0]

    training = getattr(policy, "training", None)
    if training is not None:
        policy.train(False)
    try:
        obs, _ = env.reset(seed=seed)
        carry, starts = Carry(policy), np.ones(n, dtype=bool)  # (the rows whose observation begins an episode)
        with torch.inference_mode(), set_interaction_type(mode):
            while (episodes is None or len(returns) < episodes) and (max_frames is None or frames < max_frames):
                if recording is not None:
                    recording(render)
                step = carry(to_tensor(obs, device), starts)
                obs, reward, terminated, truncated, info = env.step(step["action"].cpu().numpy())
                counted = ~resetting
                starts = resetting if next_step else np.asarray(terminated) | np.asarray(truncated)
                episode_return[counted] += np.asarray(rewards_of_env(info, reward), dtype=np.float64)[counted]
                episode_length[counted] += 1
                frames += int(counted.sum())
                done = (np.asarray(terminated) | np.asarray(truncated)) & counted
                if done[0]:
                    recording = None  # one frame per action of the first episode
                returns.extend(episode_return[done].tolist())
                lengths.extend(episode_length[done].tolist())
                episode_return[done] = 0
                episode_length[done] = 0
                if next_step:
                    resetting = done
    finally:
        if training is not None:
            policy.train(training)
    if not returns and episode_length[0] > 0:  # the frame budget came first: the running episode counts
        returns.append(float(episode_return[0]))
        lengths.append(int(episode_length[0]))
    if episodes is not None:
        returns, lengths = returns[:episodes], lengths[:episodes]
    return {"returns": returns, "lengths": lengths}


def _device(policy: Any) -> torch.device:
    parameters = getattr(policy, "parameters", None)
    return next((p.device for p in parameters()), torch.device("cpu")) if callable(parameters) else torch.device("cpu")


def evaluate_run(
    run_dir: str | Path,
    episodes: int = 10,
    checkpoint: str | Path | None = None,
    seed: int | None = 0,
    plugin_manager: PluginManager | None = None,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    on_frame: FrameCallback | None = None,
) -> dict[str, Any]:
    """Evaluate the policy of a run's checkpoint deterministically on a fresh one-env env.

    The policy is :func:`rlcore.load_policy`'s, the env its :meth:`~rlcore.Policy.make_env`: the run's, with the
    normalisation statistics of the checkpoint, frozen.

    :param run_dir: the run directory.
    :param episodes: full episodes to run.
    :param checkpoint: a checkpoint path; default the newest readable one.
    :param seed: the evaluation env's seed.
    :param plugin_manager: the plugins (default: the installed ones).
    :param env_kwargs: keyword arguments of the env over the config's ``env.kwargs`` (``render_mode="rgb_array"``
        for ``on_frame`` to draw frames).
    :param on_frame: the frame callback of :func:`evaluate` (the first episode).
    :return: the checkpoint, its frames, the mean/std of returns, and each episode's return and length.
    """
    policy = load_policy(run_dir, checkpoint=checkpoint, preprocess=False, plugin_manager=plugin_manager)
    env = policy.make_env(1, **(env_kwargs or {}))
    try:
        result = evaluate(policy.module, env, episodes, seed=seed, on_frame=on_frame)
    finally:
        env.close()
    returns = torch.tensor(result["returns"], dtype=torch.float64)
    return {
        "checkpoint": str(policy.checkpoint),
        "frames": policy.frames,
        "episodes": episodes,
        "mean_return": float(returns.mean()),
        "std_return": float(returns.std(unbiased=False)),
        "returns": result["returns"],
        "lengths": result["lengths"],
    }
