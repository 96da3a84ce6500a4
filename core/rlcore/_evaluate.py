"""Evaluation: full episodes of a policy on a vector env, and ``rlctl eval``'s evaluation of a run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, set_interaction_type

from ._collector import _to_tensor
from ._config import CONFIG_FILE, read_config_file, resolve_config
from ._envs import load_env_states
from ._plugins import PluginManager, get_plugin_manager
from ._run import _backend, _build_parts, _freeze
from ._video import VideoWriter


@torch.no_grad()
def evaluate(
    policy: Any,
    env: Any,
    episodes: int,
    deterministic: bool = True,
    seed: int | None = None,
    video: Any = None,
) -> dict[str, Any]:
    """Run ``episodes`` full episodes of ``policy`` on the vector env ``env``.

    :param policy: a ``tensordict.nn`` policy.
    :param env: a vector env in ``SAME_STEP`` autoreset mode (``rlcore.make_vector_env``).
    :param episodes: how many episodes to finish.
    :param deterministic: act with the distribution's mode rather than sampling.
    :param seed: reset seed.
    :param video: a :class:`rlcore.VideoWriter` that receives ``env.render()`` before each action
        of the first env's first episode (the env renders ``rgb_array``).
    :return: ``{"returns": [...], "lengths": [...]}`` of the first ``episodes`` episodes.
    """
    device = next((p.device for p in policy.parameters()), torch.device("cpu"))
    n = env.num_envs
    obs, _ = env.reset(seed=seed)
    episode_return, episode_length = np.zeros(n), np.zeros(n, dtype=np.int64)
    returns: list[float] = []
    lengths: list[int] = []
    mode = InteractionType.DETERMINISTIC if deterministic else InteractionType.RANDOM
    recording = video is not None
    with torch.inference_mode(), set_interaction_type(mode):
        while len(returns) < episodes:
            if recording:
                video.append(env.render()[0])
            step = policy(TensorDict({"observation": _to_tensor(obs, device)}, batch_size=[n], device=device))
            obs, reward, terminated, truncated, info = env.step(step["action"].cpu().numpy())
            episode_return += info.get("raw_reward", reward)
            episode_length += 1
            done = terminated | truncated
            recording = recording and not done[0]  # one frame per action of the first episode
            returns.extend(episode_return[done].tolist())
            lengths.extend(episode_length[done].tolist())
            episode_return[done] = 0
            episode_length[done] = 0
    return {"returns": returns[:episodes], "lengths": lengths[:episodes]}


def evaluate_run(
    run_dir: str | Path,
    episodes: int = 10,
    checkpoint: str | Path | None = None,
    seed: int | None = 0,
    video: bool = False,
    plugin_manager: PluginManager | None = None,
) -> dict[str, Any]:
    """Evaluate the policy of a run's checkpoint deterministically on a fresh env.

    :param run_dir: the run directory.
    :param episodes: full episodes to run.
    :param checkpoint: a checkpoint path; default the newest readable one.
    :param seed: the evaluation env's seed.
    :param video: record the first episode to ``RUN_DIR/videos/eval_<frames>.mp4``.
    :param plugin_manager: the plugins (default: the installed ones).
    :return: the checkpoint, its frames, the mean/std of returns, each episode's return and length,
        and the video's path.
    """
    pm = plugin_manager or get_plugin_manager()
    run_dir = Path(run_dir)
    config = resolve_config(read_config_file(run_dir / CONFIG_FILE), pm)
    if video:
        config["env"]["kwargs"] = {**config["env"]["kwargs"], "render_mode": "rgb_array"}
    _, env, loss_module = _build_parts(config, pm, num_envs=1)
    path, state = _backend(config, run_dir, pm).load(checkpoint)
    loss_module.load_state_dict(state["loss_module"])
    load_env_states(env, state.get("modules", {}).get("env", {}))
    _freeze(env)
    frames = int(state["counters"]["collected_frames"])
    writer = None
    if video:
        (run_dir / "videos").mkdir(exist_ok=True)
        writer = VideoWriter(run_dir / "videos" / f"eval_{frames:012d}.mp4", fps=env.metadata.get("render_fps") or 30)
    try:
        result = evaluate(loss_module.policy, env, episodes, deterministic=True, seed=seed, video=writer)
    finally:
        env.close()
        if writer is not None:
            writer.close()
    returns = torch.tensor(result["returns"], dtype=torch.float64)
    return {
        "checkpoint": str(path),
        "video": str(writer.path) if writer is not None else None,
        "frames": frames,
        "episodes": episodes,
        "mean_return": float(returns.mean()),
        "std_return": float(returns.std(unbiased=False)),
        "returns": result["returns"],
        "lengths": result["lengths"],
    }
