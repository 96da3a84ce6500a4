"""The ``replay_buffer`` hook: TorchRL's ``ReplayBufferTrainer``, plus what an off-policy loop needs around it.

At each hook point of the loop (TorchRL's):

- ``batch_process``: n-step transitions (when ``n_step > 1``), flattened to single transitions
  (``flatten_tensordicts``) or padded (``max_dims``), are written to the buffer;
- ``process_optim_batch``: each optimisation step gets a fresh sample of ``batch_size`` items;
- ``post_loss``: with a prioritized buffer, the priorities of the sampled items are set from
  what the loss wrote under ``"td_error"``.

And, beyond TorchRL's hook:

- ``batch_process``: the clock of every exploration wrapper in the loss module (the collection
  policy's, see :mod:`rl_plugin_replay._exploration`) is set to the trainer's frames, so that
  its warm-up and annealing count what ``total_frames`` counts: every torchrun rank, every Ray
  worker, ``frame_skip``;
- ``pre_optim_steps``: no optimisation step runs while fewer than ``init_random_frames`` frames
  are collected (the trainer's ``optim_steps_per_batch`` is 0 for those batches); ``beta`` is
  annealed towards ``beta_end`` over the run;
- ``post_steps_log``: ``train/buffer_size``, ``train/update_to_data`` (optimisation steps per
  collected frame, in the batch) and the exploration wrappers' ``stats()`` (``train/epsilon``, ``train/sigma``).

Its state (the stored items, priorities, held-back n-step steps) goes into every checkpoint,
unless ``checkpoint=False``.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase, pad

import rlcore
from rlcore import ConfigError, Gauge, TrainerHookBase, hookimpl, require_keys

from ._buffer import ReplayBuffer
from ._compiled import CompiledUpdate, eager_because, worth_compiling
from ._exploration import Exploration, LinearSchedule
from ._keys import NEXT_KEYS, PRIORITY_KEY, TRANSITION_KEYS
from ._nstep import NStepReturns
from ._perf import flush_denormal
from ._samplers import PrioritizedSampler


class ReplayBufferTrainer(TrainerHookBase):
    """Fills a replay buffer with collected batches and feeds the loss with samples of it.

    The first five parameters are TorchRL's ``ReplayBufferTrainer``'s, with the same meaning.
    Options left ``None`` are read, at :meth:`register`, from the trainer's loss module when it
    has an attribute of that name (``n_step``, ``gamma``, ``init_random_frames``), so that an
    algorithm's ``algo`` section stays their one source. A loss module that declares
    ``on_policy = True`` (rl-plugin-pg's) is refused: it learns from each batch as collected.

    :param replay_buffer: the buffer (see :func:`rl_plugin_replay.make_replay_buffer`).
    :param batch_size: items per sample; default the buffer's ``batch_size``.
    :param memmap: the buffer's storage is memory-mapped (informative: set it on the storage; the
        ``replay_buffer`` config factory does).
    :param device: where samples are put; default the trainer's device (where an empty buffer's
        storage then moves too).
    :param flatten_tensordicts: store single transitions (the batch reshaped to ``[envs * time]``)
        rather than one ``[time]`` trajectory per env.
    :param max_dims: without flattening, pad each batch dimension to this size (``-1``: no padding); the
        padding is zeros, stored and sampled as the trajectories' steps are (TorchRL's): a loss that reads
        trajectories masks it itself (all its flags are false, its ``("next", "done")`` too).
    :param n_step: transitions over ``n`` steps (see :class:`NStepReturns`).
    :param gamma: the discount of the n-step rewards.
    :param init_random_frames: frames to collect before the first optimisation step.
    :param beta_end: anneal a prioritized buffer's ``beta`` linearly to this over the run's total frames.
    :param checkpoint: include the buffer in checkpoints; without it a resumed run starts with an
        empty buffer (and says so).
    :param priority_key: where the loss writes the new priorities.
    :param exclude_keys: batch keys not stored (frames rendered for videos, say).
    """

    def __init__(
        self,
        replay_buffer: ReplayBuffer,
        batch_size: int | None = None,
        memmap: bool = False,
        device: str | torch.device | None = None,
        flatten_tensordicts: bool = False,
        max_dims: Sequence[int] | None = None,
        *,
        n_step: int | None = None,
        gamma: float | None = None,
        init_random_frames: int | None = None,
        beta_end: float | None = None,
        checkpoint: bool = True,
        priority_key: str = PRIORITY_KEY,
        exclude_keys: Sequence[str] = (),
    ) -> None:
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.replay_buffer = replay_buffer
        self.batch_size = batch_size
        self.memmap = memmap
        self.device = torch.device(device) if device is not None else None
        self.flatten_tensordicts = flatten_tensordicts
        self.max_dims = list(max_dims) if max_dims is not None else None
        self.n_step = n_step
        self.gamma = gamma
        self.init_random_frames = init_random_frames
        self.beta_end = beta_end
        self.checkpoint = checkpoint
        self.priority_key = priority_key
        self.exclude_keys = list(exclude_keys)
        self.nstep: NStepReturns | None = None
        self._trainer: Any = None
        self._optim_steps: int | None = None  # the trainer's optim_steps_per_batch once learning runs
        self._beta_start: float | None = None
        self._steps_in_batch = 0
        self._refill = 0  # items the buffer must hold again before learning (after resuming without it)
        self._explorers: list[Exploration] = []
        self._ranks = 1  # data-parallel learners, each with its share of the buffer

    # ------------------------------------------------------------------ TorchRL's ops
    def extend(self, batch: TensorDictBase) -> None:
        """Write a collected batch ``[envs, time]`` to the buffer (``batch_process``); the batch itself is left as it is."""
        excluded = [key for key in self.exclude_keys if key in batch.keys()]
        data = batch.exclude(*excluded) if excluded else batch
        if self.nstep is not None:
            data = self.nstep(data)
        if self.flatten_tensordicts:
            data = data.reshape(-1)
        elif self.max_dims is not None:
            pads: list[int] = []
            for dim in range(data.batch_dims):  # tensordict's pad order: first dimension first
                target = self.max_dims[dim]
                if target != -1 and data.batch_size[dim] > target:
                    raise ConfigError(f"hooks.replay_buffer.max_dims: {self.max_dims} is smaller than the batches, {list(data.batch_size)}")
                pads += [0, 0 if target == -1 else target - data.batch_size[dim]]
            data = pad(data, pads)
        if data.batch_size.numel():  # (the first batches of n-step transitions may be empty)
            try:
                self.replay_buffer.extend(data)
            except MemoryError as err:  # the storage is allocated at the first write
                raise ConfigError(f"hooks.replay_buffer.capacity: {err}") from None

    def sample(self, batch: TensorDictBase) -> TensorDictBase:
        """A fresh sample of the buffer for one optimisation step (``process_optim_batch``)."""
        sample = self.replay_buffer.sample(self.batch_size)
        self._steps_in_batch += 1
        return sample if self.device is None or sample.device == self.device else sample.to(self.device)

    def update_priority(self, batch: TensorDictBase) -> None:
        """Set the sampled items' priorities from ``batch[priority_key]`` (``post_loss``)."""
        self.replay_buffer.update_tensordict_priority(batch, self.priority_key)

    # ------------------------------------------------------------------ the loop around them
    def pace_exploration(self, batch: TensorDictBase) -> None:
        """Set the exploration wrappers' clocks to the trainer's frames (``batch_process``)."""
        trainer = self._trainer
        for explorer in self._explorers:
            explorer.follow(trainer.collected_frames, trainer.frame_skip * self._ranks)  # each rank steps its share of the envs

    def gate(self) -> None:
        """Skip the batch's optimisation steps before ``init_random_frames`` (``pre_optim_steps``); anneal ``beta``."""
        trainer = self._trainer
        if self._optim_steps is None:
            self._optim_steps = trainer.optim_steps_per_batch
        learning = trainer.collected_frames >= (self.init_random_frames or 0) and len(self.replay_buffer) >= max(self._refill, 1)
        trainer.optim_steps_per_batch = self._optim_steps if learning else 0
        self._steps_in_batch = 0
        sampler = self.replay_buffer.sampler
        if self._beta_start is not None and self.beta_end is not None and isinstance(sampler, PrioritizedSampler):
            sampler.beta = LinearSchedule(self._beta_start, self.beta_end, trainer.total_frames)(trainer.collected_frames)

    def log(self, batch: TensorDictBase) -> dict[str, float]:
        """``train/buffer_size``, ``train/update_to_data``, (prioritized) ``train/beta`` and the exploration
        wrappers' coefficients, e.g. ``train/epsilon`` (``post_steps_log``)."""
        values = {
            "train/buffer_size": Gauge(len(self.replay_buffer) * self._ranks),  # (every rank's share holds as many)
            "train/update_to_data": self._steps_in_batch / max(self._trainer.batch_frames, 1),
        }
        if isinstance(self.replay_buffer.sampler, PrioritizedSampler):
            values["train/beta"] = Gauge(self.replay_buffer.sampler.beta)
        for explorer in self._explorers:
            values.update({name: Gauge(value) for name, value in explorer.stats().items()})
        return values

    def register(self, trainer: Any, name: str = "replay_buffer") -> None:
        """Attach to ``trainer`` at TorchRL's hook points, and checkpoint the buffer under ``name``."""
        loss = trainer.loss_module
        if isinstance(loss, rlcore.OnPolicyLoss):
            raise ConfigError(
                f"hooks.{name}: the algorithm learns on-policy, from each batch as it is collected; a replay buffer "
                f"feeds off-policy algorithms (dqn, sac, td3, ddpg): remove hooks.{name}"
            )
        if isinstance(loss, OffPolicyLoss) and not self.flatten_tensordicts:
            raise ConfigError(
                f"hooks.{name}.flatten_tensordicts: the algorithm learns from single transitions, not trajectories: set it true "
                "(false stores [envs, time] trajectories, as TorchRL's ReplayBufferTrainer does by default)"
            )
        self._trainer = trainer
        if trainer.world.world_size > 1:
            self._share(name, trainer.world.world_size)
        self._beta_start = getattr(self.replay_buffer.sampler, "beta", None)  # before a checkpoint restores an annealed one
        if self.device is None:
            self.device = trainer.device
            if not self.replay_buffer.storage.allocated and not self.replay_buffer.storage.memmap:
                self.replay_buffer.to(self.device)  # an empty buffer follows the trainer's device
        declared = {"n_step": loss.n_step, "gamma": loss.gamma} if isinstance(loss, rlcore.OffPolicyLoss) else {}
        for key in ("n_step", "gamma"):  # the algorithm's, unless given; a value of its own that differs is a mistake
            own, algorithm = getattr(self, key), declared.get(key)
            if own is None:
                setattr(self, key, algorithm)
            elif algorithm is not None and own != algorithm:
                raise ConfigError(f"hooks.{name}.{key}: {own} differs from the algorithm's {key} ({algorithm}): leave it null to take that")
        self.n_step = int(self.n_step or 1)
        if self.init_random_frames is None:
            self.init_random_frames = int(loss.init_random_frames or 0) if isinstance(loss, rlcore.OffPolicyLoss) else 0
        if self.n_step > 1:
            if not self.flatten_tensordicts and (self.max_dims is None or self.max_dims[-1] == -1):
                raise ConfigError(
                    f"hooks.{name}.flatten_tensordicts: n_step={self.n_step} stores trajectories shorter in the first batch than "
                    "in the next ones; flatten them or pad them with max_dims"
                )
            if self.gamma is None:
                raise ConfigError(f"hooks.{name}.gamma: n_step={self.n_step} needs a discount, and the loss module has no gamma")
            self.nstep = NStepReturns(self.n_step, float(self.gamma))
        if self.init_random_frames >= trainer.total_frames:
            warnings.warn(
                f"hooks.{name}: init_random_frames={self.init_random_frames} is not below total_frames={trainer.total_frames}: no step will learn",
                stacklevel=2,
            )
        self._explorers = [module for module in loss.modules() if isinstance(module, Exploration)]
        if isinstance(loss, OffPolicyLoss):
            loss.replay_hook = self
        trainer.register_op("batch_process", self.pace_exploration)  # (the buffer is extended in rl_batch_process, last)
        trainer.register_op("pre_optim_steps", self.gate)
        trainer.register_op("process_optim_batch", self.sample)
        trainer.register_op("post_loss", self.update_priority)
        trainer.register_op("post_steps_log", self.log)
        trainer.register_module(name, self)
        trainer.register_plugin(self, f"hooks.{name}")

    def _share(self, name: str, ranks: int) -> None:
        """Of ``ranks`` data-parallel learners, keep and sample this rank's share of the buffer, so that an update,
        averaged over the ranks, is that of one process: ``capacity / ranks`` items, samples of ``batch_size / ranks``."""
        size = self.batch_size or self.replay_buffer.batch_size
        if size is None or size % ranks:
            raise ConfigError(f"hooks.{name}.batch_size: {size} items a sample do not split over {ranks} data-parallel learners: make it a multiple of {ranks}")
        if self.replay_buffer.capacity < ranks:
            raise ConfigError(f"hooks.{name}.capacity: {self.replay_buffer.capacity} items do not split over {ranks} data-parallel learners")
        self.batch_size = size // ranks
        self.replay_buffer.resize(self.replay_buffer.capacity // ranks)
        self._ranks = ranks

    @hookimpl(trylast=True)
    def rl_batch_process(self, batch: TensorDictBase) -> None:
        """:meth:`extend` with the batch as every other ``batch_process`` hook and op leaves it (a reward scaled there is stored scaled).

        :raises rlcore.ConfigError: when a key of a transition is missing (a ``select_keys`` hook that left it out).
        """
        require_keys(batch, (*TRANSITION_KEYS[:2], *(("next", k) for k in NEXT_KEYS)), "hooks.replay_buffer", "every off-policy loss")
        self.extend(batch)

    @hookimpl(trylast=True)
    def rl_shutdown(self) -> None:
        """Remove the buffer's memory-mapped files when the run ends (after its last checkpoint)."""
        if self.replay_buffer.storage.memmap:
            self.replay_buffer.storage.close()

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """The buffer (unless ``checkpoint=False``) and the held-back n-step steps."""
        if not self.checkpoint:
            return {"omitted": True}
        return {
            "replay_buffer": self.replay_buffer.state_dict(),
            "nstep": self.nstep.state_dict() if self.nstep is not None else None,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`; a checkpoint without the buffer leaves it empty, and says so on stderr."""
        if state_dict.get("omitted"):
            self._refill = max(self.init_random_frames or 0, 1)
            print(
                "rl-plugin-replay: the checkpoint holds no replay buffer (replay_buffer.checkpoint=false): the resumed run starts "
                f"with an empty buffer and learns again once it holds {self._refill} transitions",
                file=sys.stderr,
            )
            return
        try:
            self.replay_buffer.load_state_dict(state_dict["replay_buffer"])
        except MemoryError as err:
            raise ConfigError(f"hooks.replay_buffer.capacity: {err}") from None
        if self.nstep is not None and state_dict.get("nstep") is not None:
            self.nstep.load_state_dict(state_dict["nstep"])
        sampler = self.replay_buffer.sampler
        if isinstance(sampler, PrioritizedSampler) and self._beta_start is not None and self.beta_end is None:
            sampler.beta = self._beta_start  # a constant beta is the config's (a resumed run may set another)


class OffPolicyLoss:
    """The mixin of an off-policy loss module (before ``nn.Module``): ``class MyLoss(OffPolicyLoss, nn.Module)``, for a
    loss that is an :class:`rlcore.OffPolicyLoss` (``gamma``, ``n_step``, ``init_random_frames``).

    Its hook implementations: the run refuses to start unless a :class:`ReplayBufferTrainer` feeds
    the loss its samples, single transitions (the config's ``hooks.replay_buffer``, with
    ``flatten_tensordicts``), and, when the loss has target networks (``target_networks()``), an
    updater moves them (``hooks.target_updater``); denormal floats are flushed to zero while it trains
    (:func:`flush_denormal`).
    """

    #: the hook that feeds this loss (set by :meth:`ReplayBufferTrainer.register`)
    replay_hook: ReplayBufferTrainer | None = None
    #: the hook that updates its target networks (set by the updaters' ``register``)
    target_hook: Any = None
    #: train with the compiled update (:class:`CompiledUpdate`): ``None`` where it applies and pays (a CPU run of
    #: :data:`AUTO_UPDATES` updates or more), ``True`` wherever it applies (else the run is refused, saying why),
    #: ``False`` never (the first-party algorithms' ``algo.compile``)
    compiled_update: bool | None = False
    _compiled: CompiledUpdate | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The module's output; during a run on the compiled update, its losses computed with their gradients (detached)."""
        compiled = self._compiled
        if compiled is not None and torch.is_grad_enabled() and not torch.compiler.is_compiling():
            losses = compiled.losses(*args, **kwargs)
            if losses is not None:
                return losses
            self._compiled = None  # it did not compile: said once, and eager from now on
        return super().__call__(*args, **kwargs)  # type: ignore[misc]

    @hookimpl
    def rl_setup(self, trainer: Any) -> None:
        """Refuse a run without a replay buffer, or with target networks that nothing updates; flush denormals.

        A buffer's ``sample`` or an updater's ``step`` given to ``trainer.register_op`` by hand, as the seeds do, counts.
        """
        fed_by = [hook for hook in _op_owners(trainer, "process_optim_batch") if isinstance(hook, ReplayBufferTrainer)]
        updated_by = [hook for hook in _op_owners(trainer, "post_optim") if getattr(hook, "loss_module", None) is self]
        self.replay_hook = self.replay_hook or next(iter(fed_by), None)
        self.target_hook = self.target_hook or next(iter(updated_by), None)
        if self.replay_hook is None:
            raise ConfigError(
                "hooks.replay_buffer: this algorithm learns from the samples of a replay buffer, and the config has none "
                "(e.g. --set 'hooks.replay_buffer={capacity: 100000}')"
            )
        if self.target_hook is None and isinstance(self, rlcore.TargetNetworks) and self.target_networks():
            raise ConfigError(
                "hooks.target_updater: this algorithm has target networks, and the config has no updater for them: they would "
                "never move (e.g. --set 'hooks.target_updater={kind: soft, tau: 0.005}')"
            )
        flush_denormal(True)
        self._compiled = None
        if self.compiled_update is not False and trainer.optimizer is not None:
            why = eager_because(self, trainer, lambda hook: [i.plugin_name for i in getattr(trainer.plugin_manager.hook, hook).get_hookimpls()])
            if why is None and self.compiled_update is None:
                why = worth_compiling(trainer)
            if why is None:
                self._compiled = CompiledUpdate(self)  # type: ignore[arg-type]  # (an nn.Module: the mixin comes before it)
            elif self.compiled_update:
                raise ConfigError(f"algo.compile: the update cannot be compiled here: {why}; set it null or false")

    @hookimpl
    def rl_optimizer(self, trainer: Any, losses: Any) -> dict[str, Any] | None:
        """On the compiled update, the trainer's step with the gradients computed with ``losses`` (else nothing)."""
        if self._compiled is None or self._compiled.grads is None:
            return None
        return self._compiled.step(trainer)

    @hookimpl
    def rl_shutdown(self) -> None:
        flush_denormal(False)
        self._compiled = None


def _op_owners(trainer: Any, point: str) -> list[Any]:
    """The objects whose bound methods were given to ``trainer.register_op`` at ``point``."""
    return [owner for op in trainer.ops.get(point, []) if (owner := getattr(op, "__self__", None)) is not None]
