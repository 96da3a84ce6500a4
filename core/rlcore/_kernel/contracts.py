"""The contracts between the kernel and the plugins, each stated once and typed.

A plugin's part satisfies one of these protocols (structurally: no base class is needed, though a
class may name the protocol it implements); mypy checks a plugin against them where the plugin
annotates what it returns (``def rl_register_loggers() -> dict[str, rlcore.LoggerFactory]``), and
the runtime-checkable ones are what the kernel and the plugins test with ``isinstance`` instead of
reading attributes they hope are there. ``docs/plugins.md`` documents each.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    import gymnasium
    from tensordict import TensorDictBase
    from torch import nn

    from .checkpoint import CheckpointBackend
    from .logger import Logger
    from .trainer import Trainer

T = TypeVar("T")

# ----------------------------------------------------------------------------- the run directory

#: The resolved config of a run, in its run directory.
CONFIG_FILE = "config.yaml"
#: Who holds a run directory (written once the run is built; read to name the holder of a lock).
HOLDER_FILE = ".rlcore-run"
#: The checkpoint backend's folder in a run directory.
CHECKPOINTS = "checkpoints"
#: rl-core's own entries of a run directory, which no option may name as a file of its own (:data:`rlcore.RunPath`).
OWN_ENTRIES = (CONFIG_FILE, HOLDER_FILE, CHECKPOINTS)

# ----------------------------------------------------------------------------- what an algorithm builds


@runtime_checkable
class LossModule(Protocol):
    """What an algorithm's builder returns (:class:`rlcore.Algorithm`): a ``torch.nn.Module``.

    ``loss_module(batch)`` returns a TensorDict of losses: the entries whose key starts with ``loss``
    are summed and minimised, the other scalar ones are logged (``train/<key>``). Its ``policy`` is the
    ``tensordict.nn`` module that collects: it reads ``observation``, writes ``action`` (and may write
    ``sample_log_prob``, ``state_value``), and acts deterministically under
    ``tensordict.nn.InteractionType.DETERMINISTIC``. A loss module with ``@rlcore.hookimpl`` methods
    takes part in the loop as a plugin of the run.
    """

    policy: Any

    def __call__(self, batch: TensorDictBase) -> TensorDictBase: ...

    def parameters(self, recurse: bool = True) -> Iterator[nn.Parameter]: ...


@runtime_checkable
class OnPolicyLoss(LossModule, Protocol):
    """A loss module that learns from each batch as it was collected (the policy-gradient family): a replay
    buffer, or n-step returns computed elsewhere, would feed it the wrong data, and hooks refuse them."""

    #: optimisation steps per batch (epochs x minibatches), when ``trainer.optim_steps_per_batch`` is null
    optim_steps_per_batch: int
    #: the discount
    gamma: float


@runtime_checkable
class OffPolicyLoss(LossModule, Protocol):
    """A loss module that learns from transitions sampled from a replay buffer (DQN, SAC, TD3): the buffer reads
    its discount, its n-step horizon and the frames to collect at random before it learns."""

    #: the discount
    gamma: float
    #: the n-step horizon of its targets (1: one-step)
    n_step: int
    #: frames collected with random actions before the first update
    init_random_frames: int


@runtime_checkable
class TargetNetworks(Protocol):
    """A loss module with target networks, which a target updater (``hooks.target_updater``) moves towards the online ones."""

    def target_networks(self) -> list[tuple[nn.Module, nn.Module]]:
        """``(online, target)`` pairs of modules with the same structure."""
        ...


# ----------------------------------------------------------------------------- the parts of a run


@runtime_checkable
class CollectorProtocol(Protocol):
    """What the trainer needs from a collector (:class:`rlcore.Collector` is one; a remote one is another).

    Iterating yields batches: TensorDicts of shape ``[envs, time]`` with TorchRL's keys. The
    trainer reads :attr:`policy` and :attr:`finished_episodes` after each batch, seeds the
    collector once, checkpoints it and shuts it down when training ends; :meth:`update_policy_weights_`
    is how a collector acting elsewhere receives new weights (called by the ``update_weights`` hook, or
    by the collector itself).
    """

    #: the collection policy (a ``tensordict.nn`` module reading ``observation``, writing ``action``)
    policy: Any
    #: ``(returns, lengths)``: numpy arrays of the episodes that ended in the last batch, unscaled rewards
    finished_episodes: tuple[Any, Any]

    def __iter__(self) -> Iterator[TensorDictBase]:
        """Batches ``[envs, time]``, without end: the trainer decides when to stop."""
        ...

    def set_seed(self, seed: int) -> None:
        """Seed the envs (env ``i`` with ``seed + i``) and the action sampling before the next batch."""

    def state_dict(self) -> dict[str, Any]:
        """Where collection stands (observations, running episodes, the envs' state where it can be saved)."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state_dict`."""

    def update_policy_weights_(self, policy_weights: Any = None) -> None:
        """Make the envs act with the trainer's current policy weights (a no-op when they share the policy)."""

    def shutdown(self) -> None:
        """Stop collecting and close the envs."""


@runtime_checkable
class EnvWrapperProtocol(Protocol):
    """What rl-core expects of a vector-env wrapper (``rl_register_env_wrappers``).

    A wrapper is a ``gymnasium.vector.VectorWrapper`` (it holds the env it wraps in ``env``). When
    it changes rewards, it keeps the env's own ones in ``info["raw_reward"]`` (the first wrapper
    to change them sets it, later ones keep it), so that episode returns are logged in the env's
    scale. A wrapper with statistics (running means) updates them only while ``training`` is true
    (evaluation envs get a frozen copy) and saves them with ``state_dict``/``load_state_dict``,
    which every checkpoint carries. A wrapper that changes observations may offer
    ``observation_module()``: its transform as a ``torch.nn.Module``, with its statistics of now,
    which ``rlctl export`` (rl-plugin-export) bakes into an exported policy.
    """

    #: the wrapped vector env
    env: Any
    #: whether statistics update (true while training, false on evaluation envs)
    training: bool

    def state_dict(self) -> dict[str, Any]:
        """The wrapper's statistics, in types a checkpoint holds."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""


@runtime_checkable
class SaveableVectorEnv(Protocol):
    """A vector env that can save and restore where its envs are (simulator state, RNGs, episode counters).

    A vector-env backend (``rl_register_vectorizations``) implements it when it can; the collector
    then checkpoints it, and a resumed run continues its episodes exactly. It may also implement
    ``unsaveable() -> str | None``, which names what stops :meth:`env_state` (an env, a wrapper): the
    resumed run's warning then says it.
    """

    def env_state(self) -> Any:
        """The state of every env, in types a checkpoint holds; ``None`` when it cannot be captured now."""

    def load_env_state(self, state: Any) -> None:
        """Restore what :meth:`env_state` returned, into a vector env built the same way."""


@runtime_checkable
class World(Protocol):
    """The processes a run is one of: one (:class:`rlcore.OneProcess`, the default), or data-parallel learners
    that a plugin provides (``rl_world``: rl-plugin-torchrun's ranks).

    The trainer and the run builder ask it, never a launcher: each rank builds ``env.num_envs / world_size``
    envs and collects that share of every batch, frames and episodes are counted over the ranks, a stop on
    one rank stops all of them after the same batch, and the main rank alone writes the run directory.
    """

    #: this process's rank, 0 to ``world_size - 1``
    rank: int
    #: how many processes learn together
    world_size: int

    @property
    def is_main(self) -> bool:
        """Whether this process writes the run directory (the config, the loggers' files, the checkpoints)."""
        ...

    def broadcast(self, value: T) -> T:
        """The main rank's ``value``, on every rank."""
        ...

    def gather(self, value: Any) -> list[Any] | None:
        """Every rank's ``value`` in rank order, on the main rank (``None`` on the others)."""
        ...

    def total(self, count: int) -> int:
        """``count`` summed over the ranks."""
        ...

    def any(self, flag: bool) -> bool:
        """Whether ``flag`` is true on some rank."""
        ...

    def on_main(self, fn: Callable[[], T], share: bool = True) -> T | None:
        """``fn()`` on the main rank alone; every rank gets its result (``share``, else ``None``) or raises its error."""
        ...

    def attach(self, trainer: Trainer) -> None:
        """Join ``trainer`` to the others: the same parameters everywhere, gradients reduced at every backward pass."""

    def checkpoint(self, backend: CheckpointBackend) -> CheckpointBackend:
        """``backend`` as every rank calls it (each rank's own state saved, the main rank's files)."""
        ...

    def close(self) -> None:
        """Leave the others, once the run has ended."""


# ----------------------------------------------------------------------------- what the registry hooks return


class AlgorithmBuilder(Protocol):
    """``Algorithm.build``: the loss module, from the resolved ``algo`` section (less ``name``) and the single-env spaces."""

    def __call__(self, *, config: Mapping[str, Any], observation_space: gymnasium.Space[Any], action_space: gymnasium.Space[Any], device: Any) -> Any: ...


class LoggerFactory(Protocol):
    """``rl_register_loggers``: ``factory(exp_name=..., log_dir=..., **options)``, the options its other keyword parameters."""

    def __call__(self, *, exp_name: str, log_dir: Path) -> Logger: ...


class CheckpointBackendFactory(Protocol):
    """``rl_register_checkpoint_backends``: ``factory(directory=..., keep_last=...)``."""

    def __call__(self, *, directory: Path, keep_last: int) -> CheckpointBackend: ...


class CollectorFactory(Protocol):
    """``rl_register_collectors``: ``factory(env, policy, frames_per_batch, *, device, make_env, **options)`` (see the hookspec)."""

    def __call__(self, env: Any, policy: Any, frames_per_batch: int, *, device: Any, make_env: Callable[[int], Any]) -> CollectorProtocol: ...


class VectorizationFactory(Protocol):
    """``rl_register_vectorizations``: ``factory(make_env, num_envs, env_id=..., kwargs=...)``, a vector env in ``SAME_STEP`` mode."""

    def __call__(self, make_env: Callable[[], Any], num_envs: int, *, env_id: str, kwargs: Mapping[str, Any]) -> Any: ...


class EnvWrapperFactory(Protocol):
    """``rl_register_env_wrappers``: ``factory(env, **options)``, the wrapped vector env."""

    def __call__(self, env: Any) -> Any: ...


class EnvFactory(Protocol):
    """``rl_register_envs``: ``factory(**kwargs)`` (``env.kwargs``), one ``gymnasium.Env``."""

    def __call__(self) -> gymnasium.Env[Any, Any]: ...


class HookFactory(Protocol):
    """``rl_register_hooks``: ``factory(**options)``, an :class:`rlcore.TrainerHookBase` or an object with hook methods."""

    def __call__(self) -> Any: ...
