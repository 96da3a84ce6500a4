"""The ``evaluation`` hook: the deterministic policy on a separate env, with an optional video.

TorchRL's ``Recorder`` / ``LogValidationReward``, counted in collected frames.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, set_interaction_type

from rlcore import ConfigError, hookimpl

from ._hook import PluginHook, output_directory
from ._options import EvaluationOptions
from ._recorder import VideoRecorder

if TYPE_CHECKING:
    from rlcore import Trainer


@dataclass
class Evaluation:
    """What one evaluation gave.

    :param returns: the return of each episode, in the env's own reward scale.
    :param lengths: the length of each episode, in env steps.
    :param video: the mp4 file of the first episode, if one was recorded.
    """

    returns: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    video: Path | None = None

    def metrics(self) -> dict[str, float]:
        """``eval/episode_return`` and ``eval/episode_length``, the means over the episodes."""
        return {"eval/episode_return": float(np.mean(self.returns)), "eval/episode_length": float(np.mean(self.lengths))}


@contextmanager
def deterministic(policy: Any) -> Iterator[None]:
    """Put ``policy`` in eval mode and act deterministically (the distribution's mode), without gradients.

    The policy's training flag is restored on exit.

    :param policy: a ``tensordict.nn`` module (any object with ``training``/``train`` works).
    """
    training = getattr(policy, "training", None)
    if training is not None:
        policy.train(False)
    try:
        with torch.no_grad(), set_interaction_type(InteractionType.DETERMINISTIC):
            yield
    finally:
        if training is not None:
            policy.train(training)


def run_episodes(
    policy: Any,
    env: Any,
    episodes: int | None = 1,
    max_frames: int | None = None,
    recorder: VideoRecorder | None = None,
    seed: int | None = None,
) -> Evaluation:
    """Roll ``policy`` out on the one-env vector env ``env``, episode after episode.

    Each episode starts with ``env.reset()``, so any autoreset mode works. It stops after
    ``episodes`` episodes or ``max_frames`` steps, whichever comes first; when ``max_frames``
    comes first and no episode has ended, the running episode counts with its partial return.
    ``recorder`` receives one frame per action of the first episode (the state the action was
    taken in), so a video of an episode of length ``T`` has ``ceil(T / skip)`` frames.
    Call it inside :func:`deterministic` to evaluate.

    :param policy: reads ``observation``, writes ``action``.
    :param env: a ``gymnasium.vector.VectorEnv`` with one env (``render_mode="rgb_array"`` to record).
    :param episodes: how many episodes; ``None`` runs until ``max_frames``.
    :param max_frames: the most steps in all; ``None`` for no limit.
    :param recorder: where the frames of the first episode go.
    :param seed: reset seed of the first episode.
    :raises ValueError: when ``env`` has more than one env, or neither limit is set.
    """
    if getattr(env, "num_envs", 1) != 1:
        raise ValueError(f"run_episodes needs a vector env with one env, got num_envs={env.num_envs}")
    if episodes is None and max_frames is None:
        raise ValueError("set episodes or max_frames")
    device = next((p.device for p in _parameters(policy)), torch.device("cpu"))
    result = Evaluation()
    steps = 0
    while episodes is None or len(result.returns) < episodes:
        obs, _ = env.reset(seed=seed if not result.returns else None)
        episode_return, length = 0.0, 0
        record = recorder if not result.returns else None
        while True:
            if record is not None:
                record.add(lambda: _frame(env))
            observation = torch.as_tensor(obs, device=device)
            observation = observation.float() if observation.is_floating_point() else observation
            action = policy(TensorDict({"observation": observation}, batch_size=[1], device=device))["action"]
            obs, reward, terminated, truncated, info = env.step(action.cpu().numpy())
            episode_return += float(np.asarray(info.get("raw_reward", reward)).reshape(-1)[0])
            length += 1
            steps += 1
            if bool(terminated[0] or truncated[0]) or (max_frames is not None and steps >= max_frames):
                break
        if bool(terminated[0] or truncated[0]) or not result.returns:
            result.returns.append(episode_return)
            result.lengths.append(length)
        if max_frames is not None and steps >= max_frames:
            break
    return result


def _parameters(policy: Any) -> Iterator[torch.Tensor]:
    parameters = getattr(policy, "parameters", None)
    return iter(parameters()) if callable(parameters) else iter(())


def _frame(env: Any) -> Any:
    frames = env.render()
    if frames is None or frames[0] is None:
        raise RuntimeError("the evaluation env renders no frames: make it with render_mode='rgb_array'")
    return frames[0]


class EvaluationHook(EvaluationOptions, PluginHook):
    """Evaluates the deterministic policy every ``record_interval`` collected frames and at the end.

    Each evaluation builds a fresh one-env env with ``trainer.make_env`` (the training env's
    wrappers, normalisation statistics as they are then), runs ``episodes`` episodes, logs
    ``eval/episode_return`` and ``eval/episode_length`` through ``trainer.log`` and, with
    ``video``, writes the first episode to ``RUN_DIR/videos/eval_<frames>.mp4`` and hands it to
    the loggers that take videos. The options are those of
    :class:`~rl_plugin_video._options.EvaluationOptions`.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        self._next_eval = self.record_interval
        self._last_eval = -1
        self._failed = False
        #: the latest :class:`Evaluation`
        self.last: Evaluation | None = None

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        return {"next_eval": self._next_eval, "last_eval": self._last_eval}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._next_eval = int(state_dict["next_eval"])
        self._last_eval = int(state_dict["last_eval"])

    # ------------------------------------------------------------------ hooks
    @hookimpl
    def rl_setup(self, trainer: Trainer) -> None:
        if self.env is None and getattr(trainer, "make_env", None) is None:
            raise ConfigError("hooks.evaluation.env: the trainer has no make_env; name an env to evaluate on")
        if _policy(trainer) is None:
            raise ConfigError("hooks.evaluation: the trainer has no policy to evaluate")
        if self.video:
            output_directory(trainer, self.directory, "videos", "hooks.evaluation.directory")

    @hookimpl
    def rl_post_steps(self, trainer: Trainer) -> None:
        frames = trainer.collected_frames
        periodic = self.record_interval > 0 and frames >= self._next_eval
        last = self.final and frames >= trainer.total_frames
        if periodic or last:
            self.evaluate(trainer)

    @hookimpl
    def rl_exception(self, trainer: Trainer) -> None:
        self._failed = True

    @hookimpl
    def rl_shutdown(self, trainer: Trainer) -> None:
        frames = trainer.collected_frames
        if self.final and not self._failed and frames > 0 and frames != self._last_eval:
            self.evaluate(trainer)

    # ------------------------------------------------------------------ evaluating
    def evaluate(self, trainer: Trainer) -> Evaluation:
        """Evaluate now, log the metrics and the video, and plan the next evaluation.

        :param trainer: the trainer whose policy is evaluated.
        """
        frames = trainer.collected_frames
        policy = _policy(trainer)
        recorder = None
        if self.video:
            directory = output_directory(trainer, self.directory, "videos", "hooks.evaluation.directory")
            recorder = VideoRecorder(directory, "eval", fps=self.fps, skip=self.skip, max_frames=self.max_frames, loggers=trainer.loggers)
        seed = self.seed if self.seed is not None else getattr(trainer, "seed", None)
        env = self._make_env(trainer)
        try:
            with deterministic(policy):
                result = run_episodes(policy, env, self.episodes, self.record_frames, recorder, seed)
        except BaseException:
            if recorder is not None:
                recorder.close()
            raise
        finally:
            env.close()
        trainer.log(result.metrics(), force=True)
        if recorder is not None:
            result.video = recorder.dump(frames)
        self.last = result
        self._last_eval = frames
        if self.record_interval > 0:
            self._next_eval = (frames // self.record_interval + 1) * self.record_interval
        return result

    def _make_env(self, trainer: Trainer) -> Any:
        kwargs = {"render_mode": "rgb_array"} if self.video else {}
        if self.env is None:
            return trainer.make_env(num_envs=1, **kwargs)
        if callable(self.env):
            return self.env(num_envs=1, **kwargs)
        from rlcore import make_vector_env

        return make_vector_env(self.env, 1, kwargs=kwargs, plugin_manager=trainer.plugin_manager)


def _policy(trainer: Trainer) -> Any:
    policy = getattr(trainer, "policy", None)
    return policy if policy is not None else getattr(getattr(trainer, "loss_module", None), "policy", None)


__all__ = ["Evaluation", "EvaluationHook", "deterministic", "run_episodes"]
