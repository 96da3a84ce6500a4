"""The options of the three hooks, as light dataclasses (no torch, no imageio).

They are the single source of every option's name, type, range and default: the factories that
``rl_register_hooks`` returns carry their signatures, and the hook classes inherit them. The
kernel's validator (:func:`rlcore.validate_options`) checks them, from a config and from Python
alike. Annotations stay real types (no postponed evaluation) so the kernel can read them.
"""

import dataclasses
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal, Protocol, runtime_checkable

from rlcore import ConfigError, Range, RunPath, validate_fields

Positive = Annotated[int, Range(ge=1)]
NonNegative = Annotated[int, Range(ge=0)]
#: A batch key: a string (dotted for nested keys, ``next.reward``) or a tuple of strings (``("next", "reward")``).
Key = str | tuple[str, ...]
#: How the evaluated policy acts: the names of ``tensordict.nn.InteractionType`` (TorchRL's ``ExplorationType``).
ExplorationName = Literal["deterministic", "random", "mode", "mean", "median"]


@runtime_checkable
class VectorEnvLike(Protocol):
    """An env instance to evaluate on: a Gymnasium vector env (what :func:`rlcore.evaluate` steps)."""

    num_envs: int

    def reset(self, *, seed: Any = None, options: Any = None) -> Any: ...

    def step(self, actions: Any) -> Any: ...


@dataclasses.dataclass(eq=False)
class VideoRecorderOptions:
    """Options of the ``video_recorder`` hook: videos of the training envs in ``RUN_DIR/videos/``.

    :param source: where frames come from: ``pixels`` (the batch's ``key``), ``render`` (the training
        env's ``render()``, which needs ``render_mode="rgb_array"`` in ``env.kwargs``), or ``auto``
        (``render`` when the training env renders ``rgb_array``, ``pixels`` otherwise).
    :param key: the batch key holding frames for ``pixels``, dotted for nested keys (``next.pixels``).
    :param fps: frames per second of the mp4 files.
    :param skip: keep one frame in ``skip``.
    :param max_frames: the most frames one video holds; a full video is written and the next one starts later.
    :param interval: collected frames between the starts of two videos (``0``: one after another).
    :param dump_on_episode_end: end a video once every recorded env has ended an episode.
    :param max_envs: the most envs tiled into the video's grid (the first ones).
    :param name: file prefix (``train_000012000.mp4``) and log name (``train/video``).
    :param directory: where the mp4 files go; default ``RUN_DIR/videos``.
    """

    source: Literal["auto", "pixels", "render"] = "auto"
    key: str = "pixels"
    fps: Positive = 30
    skip: Positive = 1
    max_frames: Positive = 1000
    interval: NonNegative = 10_000
    dump_on_episode_end: bool = True
    max_envs: Positive = 16
    name: str = "train"
    directory: RunPath | None = None

    def __post_init__(self) -> None:
        validate_fields(self, "hooks.video_recorder", VideoRecorderOptions)


@dataclasses.dataclass(eq=False)
class TensorDictRecorderOptions:
    """Options of the ``tensordict_recorder`` hook: collected batches saved in ``RUN_DIR/rollouts/``.

    With the defaults every batch is saved: set ``interval`` or ``max_batches`` to bound the disk used.

    :param interval: collected frames between two saved batches (``0``: every batch).
    :param max_batches: stop after saving this many batches (``None``: no limit).
    :param keys: save only these keys, dotted for nested ones (``next.reward``); ``None`` saves all.
    :param directory: where the rollouts go; default ``RUN_DIR/rollouts``.
    """

    interval: NonNegative = 0
    max_batches: Positive | None = None
    keys: list[str] | None = None
    directory: RunPath | None = None

    def __post_init__(self) -> None:
        validate_fields(self, "hooks.tensordict_recorder", TensorDictRecorderOptions)


@dataclasses.dataclass(eq=False)
class EvaluationOptions:
    """Options of the ``evaluation`` hook: the deterministic policy on a separate env.

    Logs ``eval/episode_return`` (mean) and ``eval/episode_length`` (mean) every ``record_interval``
    collected frames and once more when training ends.

    :param record_interval: collected frames between two evaluations (``0``: only at the end).
    :param episodes: full episodes per evaluation; ``None`` rolls out ``record_frames`` frames instead.
    :param record_frames: the most frames one evaluation steps; when reached first, the episodes
        finished so far count (or the running one, with its partial return, if none finished).
    :param video: record the first evaluated episode to ``RUN_DIR/videos/eval_<frames>.mp4``.
    :param fps: frames per second of the video.
    :param skip: keep one frame in ``skip`` in the video.
    :param max_frames: the most frames one video holds.
    :param final: evaluate once more when training ends (unless it failed).
    :param seed: reset seed of each evaluation's first episode; default the trainer's seed.
    :param env: evaluate on this env instead of ``trainer.make_env``: a Gymnasium id, a callable
        ``env(num_envs=1, **env_kwargs)`` returning a vector env, or (from Python) a vector env instance,
        used as it is for every evaluation and left open (TorchRL's ``environment``).
    :param directory: where the videos go; default ``RUN_DIR/videos``.
    :param policy: (from Python) the policy to evaluate instead of the trainer's (TorchRL's ``policy_exploration``).
    :param exploration_type: how the policy acts: ``deterministic`` (its distribution's deterministic
        sample, the mode for most), ``random`` (it samples), ``mode``, ``mean`` or ``median``; from Python a
        ``tensordict.nn.InteractionType`` (TorchRL's ``ExplorationType``) too.
    :param log_keys: also log these keys of the evaluation (TorchRL's): ``next.reward`` logs the mean reward
        per step divided by ``frame_skip`` and ``total_<name>``, the mean return of the episodes; any key the
        policy reads or writes (``observation``, ``action``, ...) logs its values over the evaluation's steps
        (a histogram, or a scalar if there is one value).
    :param out_keys: the names ``log_keys`` are logged under (``{key: name}``); by default ``next.reward`` is
        ``r_evaluation`` and any other key its dotted name.
    :param suffix: the metrics and the videos are named ``eval_<suffix>`` instead of ``eval``
        (``eval_<suffix>/episode_return``, ``eval_<suffix>_<frames>.mp4``): two evaluation hooks of one run (say
        deterministic and random) must differ in it, or the run is refused.
    :param log_pbar: show the logged values on the progress bar.
    :param frame_skip: frames each env step stands for: the mean reward per step of ``log_keys`` is divided by it.
    """

    #: the config key of the hook, in messages
    config_key: ClassVar[str] = "hooks.evaluation"
    #: the option that names the env, in messages (a hook built on this one may call it otherwise)
    env_key: ClassVar[str] = "env"

    record_interval: NonNegative = 10_000
    episodes: Positive | None = 5
    record_frames: Positive | None = None
    video: bool = False
    fps: Positive = 30
    skip: Positive = 1
    max_frames: Positive = 1000
    final: bool = True
    seed: int | None = None
    env: str | Callable[..., Any] | VectorEnvLike | None = None
    directory: RunPath | None = None
    policy: Callable[..., Any] | None = None
    exploration_type: ExplorationName = "deterministic"
    log_keys: list[Key] | None = None
    out_keys: dict[Key, str] | None = None
    suffix: str | None = None
    log_pbar: bool = False
    frame_skip: Positive = 1

    def __post_init__(self) -> None:
        validate_fields(self, self.config_key, EvaluationOptions)
        if self.episodes is None and self.record_frames is None:
            raise ConfigError(f"{self.config_key}.episodes: set episodes or record_frames (both are null)")


__all__ = ["EvaluationOptions", "ExplorationName", "Key", "TensorDictRecorderOptions", "VectorEnvLike", "VideoRecorderOptions"]
