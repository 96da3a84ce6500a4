"""rl-plugin-replay: replay buffers, target networks and exploration for off-policy losses.

Two hooks by name, for the config's ``hooks`` section (an algorithm's defaults list them)::

    hooks:
      replay_buffer: {capacity: 100000, batch_size: 64, sampler: prioritized}
      target_updater: {kind: soft, tau: 0.005}

and the public API an off-policy loss builds on (DQN, SAC and third-party losses alike):

=============================  ==========================================================================
:class:`ReplayBuffer`          preallocated TensorDict storage, uniform or prioritized sampling
:func:`make_replay_buffer`     a buffer from plain options
:class:`TensorStorage`         the storage: ``[capacity, ...]`` tensors, optionally memory-mapped
:class:`UniformSampler`,       which items a sample takes; the prioritized one keeps a vectorised
:class:`PrioritizedSampler`    :class:`SumTree` and writes importance weights under ``"_weight"``
:class:`NStepReturns`          n-step transitions from collector batches
:func:`bootstrap_target`       a sample's TD target ``r + gamma**m (1 - terminated) V(s')``, one-step or n-step
:func:`critics_loss`           critics' squared TD errors of a sample, weighted and sending back priorities when prioritized
:class:`ReplayBufferTrainer`   the hook: extend at ``batch_process``, sample at ``process_optim_batch``,
                               update priorities at ``post_loss`` (TorchRL's)
:class:`HardUpdate`,           target-network updaters at ``post_optim``
:class:`SoftUpdate`
:func:`make_target`,           a frozen copy of a network; what a loss module declares its targets with
:class:`TargetNetworks`
:class:`EGreedy`,              exploration wrappers of a collection policy, with ``init_random_frames``
:class:`GaussianNoise`,        of uniformly random actions first
:class:`OrnsteinUhlenbeck`,
:class:`RandomWarmup`
:class:`LinearSchedule`        a coefficient annealed over frames
:func:`flush_denormal`         denormal floats to zero on the CPU while training (Adam on dead ReLUs)
:class:`OffPolicyLoss`         a loss module's mixin: refuses a run without the replay buffer hook (or with
                               target networks and no updater), denormals flushed while training, and
                               the compiled update where it applies (``compiled_update``)
:class:`CompiledUpdate`        a loss module's losses and gradients as one ``torch.compile`` program
``INDEX_KEY`` ...              the keys of samples: ``"index"``, ``"_weight"``, ``"td_error"``, ``"steps_to_next_obs"``
=============================  ==========================================================================

This module stays light: importing it (``rlctl plugins list``) imports neither torch nor
tensordict; the classes load when first used.
"""

from __future__ import annotations

import os
import warnings
from types import SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Literal

from rlcore import ConfigError, HookFactory, Range, check_device, hookimpl, lazy_getattr, validate_options

from ._keys import INDEX_KEY, PRIORITY_KEY, STEPS_KEY, TRANSITION_KEYS, WEIGHT_KEY

if TYPE_CHECKING:
    from rlcore import TargetNetworks

    from ._buffer import ReplayBuffer, make_replay_buffer
    from ._compiled import CompiledUpdate
    from ._exploration import EGreedy, GaussianNoise, LinearSchedule, OrnsteinUhlenbeck, RandomWarmup
    from ._hook import OffPolicyLoss, ReplayBufferTrainer
    from ._nstep import NStepReturns, bootstrap_target, critics_loss
    from ._perf import flush_denormal
    from ._samplers import PrioritizedSampler, UniformSampler
    from ._storage import TensorStorage
    from ._targets import HardUpdate, SoftUpdate, make_target
    from ._tree import SumTree

__version__ = "0.1.0"

_LAZY = {
    "ReplayBuffer": "._buffer",
    "make_replay_buffer": "._buffer",
    "CompiledUpdate": "._compiled",
    "TensorStorage": "._storage",
    "UniformSampler": "._samplers",
    "PrioritizedSampler": "._samplers",
    "SumTree": "._tree",
    "NStepReturns": "._nstep",
    "bootstrap_target": "._nstep",
    "critics_loss": "._nstep",
    "ReplayBufferTrainer": "._hook",
    "OffPolicyLoss": "._hook",
    "HardUpdate": "._targets",
    "SoftUpdate": "._targets",
    "TargetNetworks": "rlcore",
    "make_target": "._targets",
    "EGreedy": "._exploration",
    "GaussianNoise": "._exploration",
    "OrnsteinUhlenbeck": "._exploration",
    "RandomWarmup": "._exploration",
    "LinearSchedule": "._exploration",
    "flush_denormal": "._perf",
}

__all__ = [
    "INDEX_KEY",
    "PRIORITY_KEY",
    "STEPS_KEY",
    "WEIGHT_KEY",
    "CompiledUpdate",
    "EGreedy",
    "GaussianNoise",
    "HardUpdate",
    "LinearSchedule",
    "NStepReturns",
    "OffPolicyLoss",
    "OrnsteinUhlenbeck",
    "PrioritizedSampler",
    "RandomWarmup",
    "ReplayBuffer",
    "ReplayBufferTrainer",
    "SoftUpdate",
    "SumTree",
    "TargetNetworks",
    "TensorStorage",
    "UniformSampler",
    "bootstrap_target",
    "critics_loss",
    "flush_denormal",
    "make_replay_buffer",
    "make_target",
    "replay_buffer",
    "rl_register_hooks",
    "target_updater",
]

Positive = Annotated[int, Range(ge=1)]
ALPHA, BETA, TAU = 0.6, 0.4, 0.005  # the defaults of the hooks' options
NonNegative = Annotated[float, Range(ge=0)]


__getattr__ = lazy_getattr(__name__, _LAZY)


def __dir__() -> list[str]:
    return __all__


def _check(ok: bool, key: str, message: str) -> None:
    if not ok:
        raise ConfigError(f"hooks.{key}: {message}")


# ---------------------------------------------------------------------------- the hooks by name


def replay_buffer(
    capacity: Positive = 1_000_000,
    batch_size: Positive = 256,
    sampler: Literal["uniform", "prioritized"] = "uniform",
    alpha: NonNegative = ALPHA,
    beta: Annotated[float, Range(ge=0, le=1)] = BETA,
    beta_end: Annotated[float, Range(ge=0, le=1)] | None = None,
    priority_eps: Annotated[float, Range(gt=0)] = 1e-6,
    n_step: Positive | None = None,
    gamma: Annotated[float, Range(gt=0, le=1)] | None = None,
    init_random_frames: Annotated[int, Range(ge=0)] | None = None,
    device: str | None = None,
    memmap: bool = False,
    scratch_dir: str | None = None,
    flatten_tensordicts: bool = True,
    max_dims: list[int] | None = None,
    checkpoint: bool = True,
    exclude_keys: tuple[str, ...] = ("pixels",),
) -> ReplayBufferTrainer:
    """The ``replay_buffer`` hook: a :class:`ReplayBufferTrainer` over a new buffer.

    :param capacity: transitions kept (the storage is allocated once, for this many).
    :param batch_size: transitions per optimisation step.
    :param sampler: ``uniform`` or ``prioritized`` (proportional prioritized replay).
    :param alpha: prioritisation exponent.
    :param beta: importance-sampling exponent at the start of the run.
    :param beta_end: anneal ``beta`` linearly to this over the run (``null``: constant).
    :param priority_eps: added to ``|td_error|`` in priorities.
    :param n_step: n-step transitions; ``null``: the loss module's ``n_step`` (else 1).
    :param gamma: the n-step discount; ``null``: the loss module's ``gamma``.
    :param init_random_frames: frames collected before learning starts; ``null``: the loss module's (else 0).
    :param device: where the buffer and samples live; ``null``: the trainer's device.
    :param memmap: keep the storage in memory-mapped files.
    :param scratch_dir: where memory-mapped files go (default the system's temporary directory).
    :param flatten_tensordicts: store single transitions rather than ``[time]`` trajectories.
    :param max_dims: without flattening, pad batches to these sizes (``-1``: no padding).
    :param checkpoint: include the buffer in checkpoints (``false`` for very large buffers:
        a resumed run then starts with an empty buffer, and says so).
    :param exclude_keys: batch keys left out of the buffer: the ``pixels`` wrapper's frames, there for videos.
    :raises rlcore.ConfigError: for a bad value, naming the key.
    """
    # each option as its annotation declares it, called from Python too (a config's are checked already), converted (1e5 is 100000)
    o = SimpleNamespace(**validate_options("hooks.replay_buffer", replay_buffer, locals()))
    key = "replay_buffer"
    capacity, batch_size, n_step, init_random_frames, max_dims = o.capacity, o.batch_size, o.n_step, o.init_random_frames, o.max_dims
    alpha, beta, beta_end, priority_eps, gamma = o.alpha, o.beta, o.beta_end, o.priority_eps, o.gamma
    for excluded in exclude_keys:
        why = f"{excluded!r} is part of the transitions every off-policy loss reads ({', '.join(TRANSITION_KEYS)}); leave out other keys only, such as pixels"
        _check(excluded not in TRANSITION_KEYS, f"{key}.exclude_keys", why)
    _check(batch_size <= capacity, f"{key}.batch_size", f"{batch_size} is more than the capacity {capacity}: a sample would repeat items")
    cpu = device in (None, "cpu")
    _check(not memmap or cpu, f"{key}.memmap", f"memory-mapped storage lives on the CPU, not on {device!r}")
    if device is not None:
        check_device(device, f"hooks.{key}.device")
    if memmap and scratch_dir is not None:
        _check(os.path.isdir(scratch_dir), f"{key}.scratch_dir", f"no such directory: {scratch_dir}")
    if not flatten_tensordicts and max_dims is not None:
        _check(
            len(max_dims) == 2 and all(d == -1 or d >= 1 for d in max_dims),
            f"{key}.max_dims",
            f"expected the sizes of the batches' two dimensions [envs, time], each >= 1 or -1 (no padding), got {max_dims}",
        )
    ignored = [  # options that do nothing with the others as they are: said once, not refused
        (
            sampler == "uniform" and (alpha, beta, beta_end) != (ALPHA, BETA, None),
            "alpha, beta and beta_end weigh prioritized samples; the uniform sampler ignores them",
        ),
        (flatten_tensordicts and max_dims is not None, "max_dims pads trajectories; it is ignored, since flatten_tensordicts stores transitions"),
        (not memmap and scratch_dir is not None, "scratch_dir holds memory-mapped storage; it is ignored, since memmap is false"),
    ]
    for unused, why in ignored:
        if unused:
            warnings.warn(f"hooks.{key}: {why}", stacklevel=2)
    from ._buffer import make_replay_buffer
    from ._hook import ReplayBufferTrainer

    try:
        buffer = make_replay_buffer(
            capacity, sampler=sampler, alpha=alpha, beta=beta, priority_eps=priority_eps, batch_size=batch_size,
            device=device or "cpu", memmap=memmap, scratch_dir=scratch_dir,
        )  # fmt: skip
    except RuntimeError as err:  # a device torch does not know
        raise ConfigError(f"hooks.{key}.device: {err}") from None
    except MemoryError as err:  # a prioritized sampler's tree larger than the machine
        raise ConfigError(f"hooks.{key}.capacity: {err}") from None
    return ReplayBufferTrainer(
        buffer,
        batch_size=batch_size,
        memmap=memmap,
        device=device,
        flatten_tensordicts=flatten_tensordicts,
        max_dims=max_dims,
        n_step=n_step,
        gamma=gamma,
        init_random_frames=init_random_frames,
        beta_end=beta_end,
        checkpoint=checkpoint,
        exclude_keys=exclude_keys,
    )


def target_updater(
    kind: Literal["hard", "soft"] = "soft",
    tau: Annotated[float, Range(gt=0, le=1)] = TAU,
    interval: Positive = 1,
) -> HardUpdate | SoftUpdate:
    """The ``target_updater`` hook: updates the loss module's target networks after optimizer steps.

    :param kind: ``hard`` (copy every ``interval`` steps) or ``soft`` (move ``tau`` of the way every ``interval`` steps).
    :param tau: the soft update's fraction.
    :param interval: optimizer steps between two updates.
    :raises rlcore.ConfigError: for a bad value, naming the key.
    """
    checked = validate_options("hooks.target_updater", target_updater, locals())  # from Python too
    tau, interval = checked["tau"], checked["interval"]
    if kind == "hard" and tau != TAU:
        warnings.warn("hooks.target_updater: tau is ignored: it moves the targets of a soft update, and a hard update copies them", stacklevel=2)
    from ._targets import HardUpdate, SoftUpdate

    return HardUpdate(interval=interval) if kind == "hard" else SoftUpdate(tau=tau, interval=interval)


@hookimpl
def rl_register_hooks() -> dict[str, HookFactory]:
    """``replay_buffer`` and ``target_updater``."""
    return {"replay_buffer": replay_buffer, "target_updater": target_updater}
