"""The ``evaluation`` hook: the deterministic policy on a separate env, with an optional video.

TorchRL's ``Recorder`` / ``LogValidationReward``, counted in collected frames. The episodes run in
the kernel's evaluation loop, :func:`rlcore.evaluate`; this hook only schedules them, logs them and
records the frames the loop offers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import rlcore
from rlcore import ConfigError, hookimpl

from ._hook import PluginHook, output_directory
from ._options import EvaluationOptions
from ._recorder import VideoRecorder

if TYPE_CHECKING:
    from rlcore import Trainer

NO_ENV = "hooks.evaluation.env: the trainer has no make_env; name an env to evaluate on"


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


class EvaluationHook(EvaluationOptions, PluginHook):
    """Evaluates the deterministic policy every ``record_interval`` collected frames and at the end.

    Each evaluation builds a fresh one-env env with ``trainer.make_env`` (the training env's
    wrappers, normalisation statistics as they are then), runs ``episodes`` episodes with
    :func:`rlcore.evaluate`, logs ``eval/episode_return`` and ``eval/episode_length`` through
    ``trainer.log`` and, with ``video``, writes the first episode to ``RUN_DIR/videos/eval_<frames>.mp4``
    and hands it to the loggers that take videos. The options are those of
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
            raise ConfigError(NO_ENV)
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
        recorder = None
        if self.video:
            directory = output_directory(trainer, self.directory, "videos", "hooks.evaluation.directory")
            recorder = VideoRecorder(directory, "eval", fps=self.fps, skip=self.skip, max_frames=self.max_frames, loggers=trainer.loggers)
        seed = self.seed if self.seed is not None else getattr(trainer, "seed", None)
        env = self._make_env(trainer)
        try:
            result = rlcore.evaluate(
                _policy(trainer),
                env,
                self.episodes,
                max_frames=self.record_frames,
                seed=seed,
                on_frame=None if recorder is None else recorder.add,
            )
        except BaseException:
            if recorder is not None:
                recorder.close()
            raise
        finally:
            env.close()
        evaluation = Evaluation(result["returns"], result["lengths"])
        trainer.log(evaluation.metrics(), force=True)
        if recorder is not None:
            evaluation.video = recorder.dump(frames)
        self.last = evaluation
        self._last_eval = frames
        if self.record_interval > 0:
            self._next_eval = (frames // self.record_interval + 1) * self.record_interval
        return evaluation

    def _make_env(self, trainer: Trainer) -> Any:
        kwargs = {"render_mode": "rgb_array"} if self.video else {}
        env = self.env
        if isinstance(env, str):
            return rlcore.make_vector_env(env, 1, kwargs=kwargs, plugin_manager=trainer.plugin_manager)
        if env is None:
            env = getattr(trainer, "make_env", None)
            if env is None:
                raise ConfigError(NO_ENV)
        return env(num_envs=1, **kwargs)


def _policy(trainer: Trainer) -> Any:
    policy = getattr(trainer, "policy", None)
    return policy if policy is not None else getattr(getattr(trainer, "loss_module", None), "policy", None)


__all__ = ["Evaluation", "EvaluationHook"]
