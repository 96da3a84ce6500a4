"""The ``evaluation`` hook: the policy on a separate env, with an optional video and TorchRL's logged keys.

TorchRL's ``Recorder`` / ``LogValidationReward``, counted in collected frames. The episodes run in
the kernel's evaluation loop, :func:`rlcore.evaluate`; this hook only schedules them, logs them and
records the frames the loop offers (and, for ``log_keys``, what the policy read and wrote at each step).
rl-plugin-hooks' ``LogValidationReward`` runs its evaluations through :meth:`EvaluationHook.run`.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

import rlcore
from rlcore import REWARD_KEY, ConfigError, as_key, hookimpl, key_name, shown

from ._hook import PluginHook, output_directory
from ._options import EvaluationOptions, VectorEnvLike
from ._recorder import VideoRecorder

if TYPE_CHECKING:
    from tensordict import TensorDictBase

    from rlcore import Trainer

#: the reward key of ``log_keys``, and the name it is logged under by default (TorchRL's)
REWARD_NAME = "r_evaluation"
NO_ENV = "the trainer has no make_env; name an env to evaluate on"
#: each trainer's evaluation hooks, by :attr:`EvaluationHook.prefix`
_CLAIMS: weakref.WeakKeyDictionary[Any, dict[str, EvaluationHook]] = weakref.WeakKeyDictionary()


@dataclass
class Evaluation:
    """What one evaluation gave.

    :param returns: the return of each episode, in the env's own reward scale.
    :param lengths: the length of each episode, in env steps.
    :param video: the mp4 file of the first episode, if one was recorded.
    :param values: the values of the hook's ``log_keys``, by the names they are logged under.
    """

    returns: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    video: Path | None = None
    values: dict[str, Any] = field(default_factory=dict)

    def metrics(self, prefix: str = "eval") -> dict[str, Any]:
        """``<prefix>/episode_return`` and ``<prefix>/episode_length`` (the means over the episodes), and :attr:`values`.

        :param prefix: the hook's :attr:`EvaluationHook.prefix`.
        """
        return {
            f"{prefix}/episode_return": float(np.mean(self.returns)),
            f"{prefix}/episode_length": float(np.mean(self.lengths)),
            **self.values,
        }


class EvaluationHook(EvaluationOptions, PluginHook):
    """Evaluates the policy (deterministic by default) every ``record_interval`` collected frames and at the end.

    Each evaluation builds a fresh one-env env with ``trainer.make_env`` (the training env's
    wrappers, normalisation statistics as they are then), runs ``episodes`` episodes with
    :func:`rlcore.evaluate`, logs ``eval/episode_return``, ``eval/episode_length`` and the values of
    ``log_keys`` through ``trainer.log`` and, with ``video``, writes the first episode to
    ``RUN_DIR/videos/eval_<frames>.mp4`` and hands it to the loggers that take videos. With a ``suffix``
    the metrics and the videos are named ``eval_<suffix>`` instead of ``eval``: two evaluation hooks of one
    trainer (this one and rl-plugin-hooks' ``log_validation_reward``, say) must differ in it. The options
    are those of :class:`~rl_plugin_video._options.EvaluationOptions`.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        #: ``log_keys`` as tensordict keys, each with the name it is logged under
        self.logged: dict[str | tuple[str, ...], str] = {}
        names = {as_key(k): v for k, v in (self.out_keys or {}).items()}
        for key in map(as_key, self.log_keys or ()):
            self.logged[key] = names.get(key, REWARD_NAME if key == REWARD_KEY else key_name(key))
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

    @property
    def prefix(self) -> str:
        """What the metrics and videos are named after: ``eval``, or ``eval_<suffix>``."""
        return "eval" if self.suffix is None else f"eval_{self.suffix}"

    def claim(self, trainer: Trainer) -> None:
        """Take :attr:`prefix` among ``trainer``'s evaluations: two hooks evaluating under one name would log the
        same metrics and overwrite each other's videos.

        :raises rlcore.ConfigError: when another evaluation of ``trainer`` has the same prefix.
        """
        claims = _CLAIMS.setdefault(trainer, {})
        other = claims.setdefault(self.prefix, self)
        if other is not self:
            raise ConfigError(
                f"{self.config_key}: {other.config_key} evaluates under the same name, {self.prefix} (metrics {self.prefix}/episode_return, "
                f"videos {self.prefix}_<frames>.mp4); set a different suffix on one of them"
            )

    # ------------------------------------------------------------------ hooks
    @hookimpl
    def rl_setup(self, trainer: Trainer) -> None:
        self.claim(trainer)
        if self.env is None and getattr(trainer, "make_env", None) is None:
            raise ConfigError(f"{self.config_key}.{self.env_key}: {NO_ENV}")
        if isinstance(self.env, str):  # an env id: made once now, so that a bad one is refused before training
            self._make_env(trainer)[0].close()
        if self.policy is None and _policy(trainer) is None:
            raise ConfigError(f"{self.config_key}: the trainer has no policy to evaluate")
        if self.video:
            output_directory(trainer, self.directory, "videos", f"{self.config_key}.directory")

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
        """Evaluate now (:meth:`run`), log the metrics and the video, and plan the next evaluation.

        :param trainer: the trainer whose policy is evaluated.
        """
        evaluation = self.run(trainer)
        trainer.log(evaluation.metrics(self.prefix), log_pbar=self.log_pbar, force=True)
        frames = trainer.collected_frames
        self._last_eval = frames
        if self.record_interval > 0:
            self._next_eval = (frames // self.record_interval + 1) * self.record_interval
        return evaluation

    def run(self, trainer: Trainer | None) -> Evaluation:
        """One evaluation: the episodes (or ``record_frames`` frames), the video, the values of ``log_keys``.

        Nothing is logged but the video (to the trainer's loggers): the caller logs :meth:`Evaluation.metrics`.

        :param trainer: the trainer whose policy, env, seed, run directory and loggers are used where the
            options name none; ``None`` when the options name the policy and the env (and a ``directory``
            for videos).
        """
        frames = getattr(trainer, "collected_frames", 0)
        recorder = None
        if self.video:
            directory = output_directory(trainer, self.directory, "videos", f"{self.config_key}.directory")  # type: ignore[arg-type]
            loggers = getattr(trainer, "loggers", ())
            recorder = VideoRecorder(directory, self.prefix, fps=self.fps, skip=self.skip, max_frames=self.max_frames, loggers=loggers)
        seed = self.seed if self.seed is not None else getattr(trainer, "seed", None)
        policy = self.policy if self.policy is not None else _policy(trainer)
        if policy is None:
            raise ConfigError(f"{self.config_key}: the trainer has no policy to evaluate")
        steps = _StepRecorder(policy) if any(key != REWARD_KEY for key in self.logged) else None
        env, owned = self._make_env(trainer)
        try:
            result = rlcore.evaluate(
                policy if steps is None else steps,
                env,
                self.episodes,
                max_frames=self.record_frames,
                exploration_type=self.exploration_type,
                seed=seed,
                on_frame=None if recorder is None else recorder.add,
            )
            values = self._values(result, steps)  # (a bad log_key raises here, with the recorder closed below)
        except BaseException:
            if recorder is not None:
                recorder.close()
            raise
        finally:
            if owned:
                env.close()
        evaluation = Evaluation(result["returns"], result["lengths"], values=values)
        if recorder is not None:
            evaluation.video = recorder.dump(frames)
        self.last = evaluation
        return evaluation

    def _values(self, result: Mapping[str, Any], steps: _StepRecorder | None) -> dict[str, Any]:
        """The values of ``log_keys``, by name (TorchRL's): the reward per step and the mean return, or what the policy saw."""
        values: dict[str, Any] = {}
        for key, name in self.logged.items():
            if key == REWARD_KEY:
                values[name] = sum(result["returns"]) / max(sum(result["lengths"]), 1) / self.frame_skip
                values[f"total_{name}"] = float(np.mean(result["returns"]))
                continue
            assert steps is not None
            values[name] = steps.values(key, f"{self.config_key}.log_keys")
        return values

    def _make_env(self, trainer: Trainer | None) -> tuple[Any, bool]:
        """The env of one evaluation, and whether this hook made it (and so closes it)."""
        kwargs = {"render_mode": "rgb_array"} if self.video else {}
        env = self.env
        if isinstance(env, str):
            pm = getattr(trainer, "plugin_manager", None)
            try:
                return rlcore.make_vector_env(env, 1, kwargs=kwargs, plugin_manager=pm), True
            except ConfigError as err:  # it names env.id, the run's env: say which option gave this one
                raise ConfigError(f"{self.config_key}.{self.env_key}: {str(err).removeprefix('env.id: ')}") from None
        if isinstance(env, VectorEnvLike) and not callable(env):
            return env, False
        if env is None:
            env = getattr(trainer, "make_env", None)
            if env is None:
                raise ConfigError(f"{self.config_key}.{self.env_key}: {NO_ENV}")
        return env(num_envs=1, **kwargs), True


class _StepRecorder(torch.nn.Module):
    """The policy, keeping what it read and wrote at each step of an evaluation (for ``log_keys``).

    :func:`rlcore.evaluate` puts it in eval mode and restores its training flag: it starts with the policy's flag.

    :param policy: the policy that acts.
    """

    def __init__(self, policy: Any) -> None:
        super().__init__()
        self.policy = policy
        self.training = bool(getattr(policy, "training", True))
        self.steps: list[TensorDictBase] = []

    def forward(self, td: TensorDictBase) -> TensorDictBase:
        out = self.policy(td)
        self.steps.append(out.copy())
        return out

    def values(self, key: str | tuple[str, ...], where: str) -> torch.Tensor:
        """``key``'s values over every env step, ``[steps, ...]``, as floats.

        :param key: a key the policy read or wrote.
        :param where: the option's config key, for the error.
        :raises ConfigError: when the policy neither read nor wrote ``key``.
        """
        present = [key_name(k) for k in self.steps[0].keys(include_nested=True, leaves_only=True)] if self.steps else []
        if not self.steps or key not in self.steps[0].keys(include_nested=True):
            choices = ", ".join(["next.reward", *present])
            raise ConfigError(f"{where}: {shown(key_name(key))} is not a key of the evaluation's steps (valid choices: {choices})")
        stacked = torch.stack([step.get(key) for step in self.steps])  # [time, envs, ...]
        return stacked.reshape(-1, *stacked.shape[2:]).float()


def _policy(trainer: Trainer | None) -> Any:
    policy = getattr(trainer, "policy", None)
    return policy if policy is not None else getattr(getattr(trainer, "loss_module", None), "policy", None)


__all__ = ["Evaluation", "EvaluationHook"]
