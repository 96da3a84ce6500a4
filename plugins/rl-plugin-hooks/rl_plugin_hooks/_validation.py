"""``LogValidationReward``: TorchRL's evaluation hook, run by rl-plugin-video's evaluation hook."""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tensordict import TensorDictBase

from rl_plugin_video import EvaluationHook
from rlcore import REWARD_KEY, ConfigError, TrainerHookBase

from ._options import LogValidationRewardOptions

if TYPE_CHECKING:
    from rlcore import Trainer



class LogValidationReward(LogValidationRewardOptions, TrainerHookBase):
    """Evaluates the policy every ``record_interval`` batches (TorchRL's ``LogValidationReward``), at ``post_steps_log``.

    As in TorchRL, the first call evaluates, then every ``record_interval``-th: ``record_frames`` env
    steps across episode ends, the policy acting under ``exploration_type`` (``random`` by default, as in
    TorchRL) on ``environment`` (by default a fresh copy of the training env, its normalisation statistics
    frozen). The evaluation itself is rl-plugin-video's :class:`~rl_plugin_video.EvaluationHook` (its
    :meth:`~rl_plugin_video.EvaluationHook.run`, on rl-core's :func:`rlcore.evaluate`): one implementation.

    Each evaluation returns, to be logged: ``r_evaluation`` (the mean reward per step of the episodes that
    ended, divided by ``frame_skip``), ``total_r_evaluation`` (their mean return), the values of any other
    ``log_keys`` the policy reads or writes (histograms), rl-core's ``eval/episode_return`` and
    ``eval/episode_length`` (``eval_<suffix>/...`` with a ``suffix``), and ``log_pbar``. Beside the ``evaluation``
    hook, one of the two needs a ``suffix``: :meth:`register` refuses two evaluations under one name. Of
    data-parallel learners, rank 0 alone evaluates. The number of calls is its state. The options are those
    of :class:`~rl_plugin_hooks.LogValidationRewardOptions`.
    """

    ENV_DEPREC = "the environment should be passed under the 'environment' key and not the 'recorder' key."

    def __post_init__(self) -> None:
        if self.recorder is not None:  # TorchRL's old name of the argument
            if self.environment is not None:
                raise ValueError("environment and recorder conflict.")
            warnings.warn(self.ENV_DEPREC, DeprecationWarning, stacklevel=3)
            self.environment, self.recorder = self.recorder, None
        super().__post_init__()
        #: the evaluation hook that runs each evaluation (never registered itself: this hook schedules it)
        self.evaluation = EvaluationHook(
            record_interval=0,
            episodes=None,
            record_frames=self.record_frames,
            video=self.video,
            fps=self.fps,
            final=False,
            seed=self.seed,
            env=self.environment,
            directory=self.directory,
            policy=self.policy_exploration,
            exploration_type=self.exploration_type,
            log_keys=[REWARD_KEY] if self.log_keys is None else self.log_keys,
            out_keys=self.out_keys,
            suffix=self.suffix,
            log_pbar=self.log_pbar,
            frame_skip=self.frame_skip,
        )
        self.evaluation.config_key = self.config_key  # type: ignore[misc]
        self.evaluation.env_key = "environment"  # type: ignore[misc]
        self._count = 0
        self._trainer: Callable[[], Trainer | None] = lambda: None

    def __call__(self, batch: TensorDictBase | None = None) -> dict[str, Any] | None:
        """Evaluate on the first call and every ``record_interval``-th after it; return what to log, else ``None``.

        :param batch: the batch of the step (unused, TorchRL's signature).
        :raises ConfigError: when neither the hook nor its trainer gives a policy or an env.
        """
        out = None
        trainer = self._trainer()
        if self._count % self.record_interval == 0 and (trainer is None or trainer.world.is_main):  # the main process alone writes and logs
            if trainer is None and (self.policy_exploration is None or self.environment is None):
                raise ConfigError(f"{self.config_key}: as an op, it needs policy_exploration and environment (or register it with register(trainer))")
            out = {**self.evaluation.run(trainer).metrics(self.evaluation.prefix), "log_pbar": self.log_pbar}
        self._count += 1
        return out

    @property
    def last(self) -> Any:
        """The latest :class:`rl_plugin_video.Evaluation` (returns, lengths, values, video), or ``None``."""
        return self.evaluation.last

    def state_dict(self) -> dict[str, Any]:
        return {"_count": self._count}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._count = int(state_dict["_count"])

    def register(self, trainer: Trainer, name: str = "recorder") -> None:
        """Run at ``post_steps_log`` of ``trainer``, whose policy and env are used unless the hook names its own.

        :param trainer: the trainer.
        :param name: the name of its state in checkpoints (TorchRL's default).
        :raises ConfigError: when neither the hook nor the trainer gives an env (or a policy) to evaluate.
        """
        if self.environment is None and trainer.make_env is None:
            raise ConfigError(f"{self.config_key}.environment: the trainer has no make_env; name an env to evaluate on")
        if self.policy_exploration is None and trainer.policy is None:
            raise ConfigError(f"{self.config_key}.policy_exploration: the trainer's collector has no policy; give one to evaluate")
        self.evaluation.claim(trainer)
        trainer.register_module(name, self)
        self._trainer = weakref.ref(trainer)
        trainer.register_op("post_steps_log", self)


__all__ = ["LogValidationReward"]
