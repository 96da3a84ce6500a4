"""The options of the hooks, as light dataclasses (no torch): TorchRL's constructor arguments, in TorchRL's order.

They are the single source of every option's name, type, range and default: the hook classes inherit
them, and the factories that ``rl_register_hooks`` returns carry their signatures (less the options only
Python can give: an optimizer, a collector, a policy). The kernel's validator
(:func:`rlcore.validate_options`) checks them, from a config and from Python alike, so that a bad value
is one line naming ``hooks.<name>.<option>``. Annotations stay real types (no postponed evaluation) so
the kernel can read them.
"""

import dataclasses
from dataclasses import KW_ONLY, dataclass
from typing import Annotated, Any, ClassVar, Literal

from rl_plugin_video import EvaluationOptions
from rlcore import ConfigError, Range, RunPath, validate_fields, validate_options

Positive = Annotated[int, Range(ge=1)]
PositiveFloat = Annotated[float, Range(gt=0)]
#: A batch key: a string, dotted for nested keys (``next.reward``), or a tuple of strings (``("next", "reward")``).
Key = str | tuple[str, ...]
#: The evaluation hook's own declarations of the options LogValidationReward hands it on as they are.
_EVALUATION = {f.name: f.type for f in dataclasses.fields(EvaluationOptions)}
EnvOption = _EVALUATION["env"]
ExplorationOption = _EVALUATION["exploration_type"]



class HookOptions:
    """Checks the dataclass fields of a hook's options with rl-core's validator after ``__init__``.

    The values are stored converted to their declared types (``1e4`` for an integer is ``10000``).
    """

    #: the hook's name in the config's ``hooks`` section (``hooks.<name>.<option>`` in messages)
    config_name: ClassVar[str]
    #: options that only Python can give (objects): left out of the config's factory
    python_only: ClassVar[tuple[str, ...]] = ()

    @property
    def config_key(self) -> str:
        """``hooks.<name>``."""
        return f"hooks.{self.config_name}"

    def __post_init__(self) -> None:
        validate_fields(self, self.config_key)


@dataclass(eq=False)
class BatchSubSamplerOptions(HookOptions):
    """Options of ``batch_subsampler``: sub-trajectories of the batch at each optimisation step.

    :param batch_size: transitions per sub-batch: the sub-batch is ``[batch_size // sub_traj_len, sub_traj_len]``.
    :param sub_traj_len: the length of each sub-trajectory; ``0`` (or below) takes the whole time dimension.
    :param min_sub_traj_len: the shortest sub-trajectory when the batch holds short episodes (``0``: none).
    """

    config_name: ClassVar[str] = "batch_subsampler"

    batch_size: Positive
    sub_traj_len: int = 0
    min_sub_traj_len: int = 0


@dataclass(eq=False)
class ClearCudaCacheOptions(HookOptions):
    """Options of ``clear_cuda_cache``: ``torch.cuda.empty_cache()`` once every ``interval`` calls (batches).

    :param interval: calls between two clears.
    """

    config_name: ClassVar[str] = "clear_cuda_cache"

    interval: Positive


@dataclass(eq=False)
class CountFramesLogOptions(HookOptions):
    """Options of ``count_frames_log``: logs ``n_frames``, the frames collected so far, times ``frame_skip``.

    :param frame_skip: frames each collected step stands for.
    :param log_pbar: show the count on the progress bar.
    """

    config_name: ClassVar[str] = "count_frames_log"

    frame_skip: Positive
    log_pbar: bool = False


@dataclass(eq=False)
class LogScalarOptions(HookOptions):
    """Options of ``log_scalar``: logs the mean of a batch key (the reward by default) before optimisation.

    :param logname: the name it is logged under.
    :param log_pbar: show it on the progress bar.
    :param reward_key: the key whose mean is logged; default ``next.reward``.
    """

    config_name: ClassVar[str] = "log_scalar"

    logname: str = "r_training"
    log_pbar: bool = False
    reward_key: Key | None = None


@dataclass(eq=False)
class OptimizerHookOptions(HookOptions):
    """Options of :class:`OptimizerHook` (Python only: its optimizer is an object; the config's
    ``optimizer_hook`` takes :class:`OptimizerGroupsOptions`).

    :param optimizer: a ``torch.optim.Optimizer``, stepped from ``loss_components`` only.
    :param loss_components: the keys of the losses it steps from; ``None``: every ``loss*`` key.
    :param clip_grad_norm: clip its parameters' gradients by their norm (``True``) or by value (``False``);
        ``None``: as the trainer it is registered with (TorchRL passes the trainer's).
    :param clip_norm: the clipping threshold; ``None``: the trainer's (no clipping without a trainer).
    """

    config_name: ClassVar[str] = "optimizer_hook"
    python_only: ClassVar[tuple[str, ...]] = ("optimizer",)

    optimizer: Any
    loss_components: list[str] | None = None
    _: KW_ONLY
    clip_grad_norm: bool | None = None
    clip_norm: PositiveFloat | None = None


@dataclass
class OptimizerGroupOptions:
    """One optimizer of the config's ``optimizer_hook``; ``null`` optimizer keys take the ``optim`` section's.

    :param loss_components: the loss keys it steps from; ``null``: every ``loss*`` key.
    :param params: the parameters it steps, by name prefix in ``loss_module.named_parameters()``
        (``policy.actor_net``); ``null``: all of them.
    :param name: ``adam``, ``adamw``, ``sgd`` or ``rmsprop``.
    :param lr: its learning rate.
    :param eps: Adam's and RMSprop's epsilon.
    :param weight_decay: L2 penalty (decoupled for AdamW).
    :param clip_grad_norm: clip by norm (true) or by value (false); ``null``: ``trainer.clip_grad_norm``.
    :param clip_norm: its clipping threshold; ``null``: ``trainer.clip_norm``.
    """

    loss_components: list[str] | None = None
    params: list[str] | None = None
    name: Literal["adam", "adamw", "sgd", "rmsprop"] | None = None
    lr: PositiveFloat | None = None
    eps: PositiveFloat | None = None
    weight_decay: Annotated[float, Range(ge=0)] | None = None
    clip_grad_norm: bool | None = None
    clip_norm: PositiveFloat | None = None


@dataclass(eq=False)
class OptimizerGroupsOptions(HookOptions):
    """Options of the config's ``optimizer_hook``: one :class:`OptimizerHook` per group, each with its own
    optimizer over its own parameters, stepped from its own loss components (actor and critic with their
    own learning rates). It replaces the trainer's own optimizer step.

    :param groups: ``{group: options}``, each of :class:`OptimizerGroupOptions`.
    """

    config_name: ClassVar[str] = "optimizer_hook"

    groups: dict[str, dict[str, Any]]

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.groups:
            raise ConfigError(f"{self.config_key}.groups: name at least one optimizer group")
        #: each group's options, checked
        self.group_options = {
            group: OptimizerGroupOptions(**validate_options(f"{self.config_key}.groups.{group}", OptimizerGroupOptions, values))
            for group, values in self.groups.items()
        }


@dataclass(eq=False)
class RewardNormalizerOptions(HookOptions):
    """Options of ``reward_normalizer``: TorchRL's running reward normalisation.

    :param decay: the exponential moving average's decay of the reward statistics.
    :param scale: the normalised reward is multiplied by it.
    :param eps: the smallest variance; default the machine epsilon of torch's default dtype.
    :param log_pbar: accepted as TorchRL accepts it (its normaliser logs nothing).
    :param reward_key: the reward's key; default ``next.reward``.
    """

    config_name: ClassVar[str] = "reward_normalizer"

    decay: Annotated[float, Range(ge=0, le=1)] = 0.999
    scale: float = 1.0
    eps: PositiveFloat | None = None
    log_pbar: bool = False
    reward_key: Key | None = None


@dataclass(eq=False)
class SelectKeysOptions(HookOptions):
    """Options of ``select_keys``: keep only these keys of each collected batch.

    :param keys: the keys kept, dotted for nested ones (``next.reward``).
    """

    config_name: ClassVar[str] = "select_keys"

    keys: list[Key]


@dataclass(eq=False)
class UpdateWeightsOptions(HookOptions):
    """Options of ``update_weights``: push the policy's weights to the collector every ``update_weights_interval`` batches.

    :param collector: (Python only) the collector; default the trainer's.
    :param update_weights_interval: batches between two pushes.
    """

    config_name: ClassVar[str] = "update_weights"
    python_only: ClassVar[tuple[str, ...]] = ("collector",)

    collector: Any = None
    update_weights_interval: Positive = 1


@dataclass(eq=False, kw_only=True)
class LogValidationRewardOptions(HookOptions):
    """Options of ``log_validation_reward``: TorchRL's evaluation hook, every ``record_interval`` batches.

    :param record_interval: batches between two evaluations (the first is after the first batch).
    :param record_frames: frames (env steps) of one evaluation, across episode ends.
    :param frame_skip: frames each env step stands for; the mean reward per step is divided by it.
    :param policy_exploration: (Python only) the policy to evaluate; default the trainer's.
    :param environment: the env to evaluate on: a Gymnasium id, or from Python a vector env instance or a
        callable ``env(num_envs=1, **kwargs)``; default a fresh copy of the training env (``trainer.make_env``).
    :param exploration_type: how the policy acts: ``random`` (TorchRL's default), ``deterministic``, ``mode``,
        ``mean`` or ``median``; from Python an ``ExplorationType`` too.
    :param log_keys: keys to log; default ``[next.reward]``: the mean reward per step (``r_evaluation``) and the
        mean return of the episodes (``total_r_evaluation``).
    :param out_keys: the names ``log_keys`` are logged under; default ``next.reward`` as ``r_evaluation``.
    :param suffix: the metrics and videos are named ``eval_<suffix>`` instead of ``eval``; with the ``evaluation`` hook in the
        same run, one of the two needs a suffix.
    :param log_pbar: show the values on the progress bar.
    :param recorder: (Python only) TorchRL's deprecated name of ``environment``.
    :param video: (rl-core) record the evaluation's first episode to ``RUN_DIR/videos``.
    :param fps: (rl-core) the video's frame rate.
    :param seed: (rl-core) reset seed of each evaluation; default the trainer's seed.
    :param directory: (rl-core) where videos go instead of ``RUN_DIR/videos``.
    """

    config_name: ClassVar[str] = "log_validation_reward"
    python_only: ClassVar[tuple[str, ...]] = ("policy_exploration", "recorder")

    record_interval: Positive
    record_frames: Positive
    frame_skip: Positive = 1
    policy_exploration: Any = None
    environment: EnvOption = None  # type: ignore[valid-type]
    exploration_type: ExplorationOption = "random"  # type: ignore[valid-type]
    log_keys: list[Key] | None = None
    out_keys: dict[Key, str] | None = None
    suffix: str | None = None
    log_pbar: bool = False
    recorder: Any = None
    video: bool = False
    fps: Positive = 30
    seed: int | None = None
    directory: RunPath | None = None


__all__ = [
    "BatchSubSamplerOptions",
    "ClearCudaCacheOptions",
    "CountFramesLogOptions",
    "HookOptions",
    "Key",
    "LogScalarOptions",
    "LogValidationRewardOptions",
    "OptimizerGroupOptions",
    "OptimizerGroupsOptions",
    "OptimizerHookOptions",
    "RewardNormalizerOptions",
    "SelectKeysOptions",
    "UpdateWeightsOptions",
]
