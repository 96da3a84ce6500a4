"""The ranks of a data-parallel run under ``torchrun``: one process per learner, gradients averaged, one run directory.

- The config is the whole run's, as in one process; the ranks share it out (the run builder asks the
  :class:`rlcore.World`). Each rank builds its own ``env.num_envs / N`` envs and collects its share of every
  batch, ``collector.frames_per_batch / N`` frames, so that a batch, summed over the ranks, is the batch of
  one process; rank ``r`` seeds its RNGs and envs from ``seed + r * env.num_envs / N``: its env ``i`` gets
  the seed of env ``r * env.num_envs / N + i`` of one process.
- The loss module starts identical on every rank (rank 0's parameters and buffers are broadcast) and
  stays so: at the end of every backward pass the gradients are averaged over the ranks
  (:class:`GradientAverager`), before clipping and the optimizer step, whichever plugin implements
  ``rl_optimizer``.
- Frames are counted across ranks and the ranks stop together: a signal or a hook's ``trainer.stop()`` on
  one rank stops all of them after the same batch, and ``trainer.max_episodes`` counts the episodes of every rank.
- Rank 0 alone writes the run directory (the config, the loggers' files, the checkpoints). Each
  checkpoint holds every rank's own collector, RNG and module states (:class:`RanksCheckpoint`) and the
  checksums of every rank's parameters (a save refuses replicas that differ); a run resumes with the same
  number of ranks.

Processes talk through ``torch.distributed``: gloo on CPU, NCCL when ``trainer.device`` is CUDA (each
rank on ``cuda:<LOCAL_RANK>``; write ``device: cuda``).
"""

from __future__ import annotations

import os
import pickle
import sys
import warnings
from collections.abc import Callable, Generator, Iterable, Mapping
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import torch
import torch.distributed as dist

from rlcore import CheckpointBackend, CheckpointError, ConfigError, Trainer, content_checksum, hookimpl

T = TypeVar("T")

#: Seconds a collective may wait for the other ranks before the run fails (env ``RLCORE_DIST_TIMEOUT``).
DEFAULT_TIMEOUT = 600.0
#: The parts of a trainer's state that differ from rank to rank (the rest is rank 0's).
RANK_KEYS = ("collector", "rng", "modules")


class Ranks:
    """The ranks of a data-parallel run, as this process sees them: an :class:`rlcore.World`.

    :param rank: this process's rank.
    :param world_size: how many ranks there are.
    :param local_rank: its rank on its node (its GPU with NCCL).
    :param backend: ``gloo`` or ``nccl``.
    :param group: the process group of small CPU messages (flags, objects): the default group with gloo,
        a gloo group beside NCCL.
    :param owned: whether this plugin initialised the process group (it then destroys it when the run ends).
    """

    def __init__(self, rank: int, world_size: int, local_rank: int, backend: str, group: Any, owned: bool) -> None:
        self.rank, self.world_size, self.local_rank = rank, world_size, local_rank
        self.backend, self.group, self.owned = backend, group, owned
        self.averager: GradientAverager | None = None

    @classmethod
    def from_environment(cls, device: str) -> Ranks:
        """Join the data-parallel run ``torchrun`` started.

        Initialises ``torch.distributed`` from the environment ``torchrun`` sets (unless the caller did),
        with gloo, or NCCL when ``device`` is CUDA (then on ``cuda:<LOCAL_RANK>``). Ranks other than 0
        show no warnings (rank 0 shows the same ones).

        :param device: ``trainer.device``.
        :raises ConfigError: when torch has no distributed support or the device cannot be used.
        """
        if not dist.is_available():
            raise ConfigError("torchrun: this build of torch has no torch.distributed")
        rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0") or 0)
        cuda = torch.device(device).type == "cuda"
        owned = not dist.is_initialized()
        if owned:
            if cuda:
                if local_rank >= torch.cuda.device_count():
                    raise ConfigError(f"trainer.device: rank {rank} needs cuda:{local_rank}; this node has {torch.cuda.device_count()} GPU(s)")
                torch.cuda.set_device(local_rank)
            timeout = float(os.environ.get("RLCORE_DIST_TIMEOUT", DEFAULT_TIMEOUT))
            dist.init_process_group("nccl" if cuda else "gloo", timeout=timedelta(seconds=timeout))
        backend = str(dist.get_backend())
        group = dist.new_group(backend="gloo") if backend != "gloo" else None
        if rank != 0:
            warnings.simplefilter("ignore")
        return cls(dist.get_rank(), dist.get_world_size(), local_rank, backend, group, owned)

    @property
    def is_main(self) -> bool:
        """Whether this is rank 0, the one that writes the run directory."""
        return self.rank == 0

    def __repr__(self) -> str:
        return f"Ranks(rank={self.rank}, world_size={self.world_size}, backend={self.backend!r})"

    # ------------------------------------------------------------------ messages
    def broadcast(self, value: T) -> T:
        """Rank 0's ``value``, on every rank (pickled; for small objects and states)."""
        box = [value]
        dist.broadcast_object_list(box, src=0, group=self.group)
        return box[0]

    def gather(self, value: Any) -> list[Any] | None:
        """Every rank's ``value``, in rank order, on rank 0 (``None`` on the others)."""
        out: list[Any] | None = [None] * self.world_size if self.is_main else None
        dist.gather_object(value, out, dst=0, group=self.group)
        return out

    def all_gather(self, value: Any) -> list[Any]:
        """Every rank's ``value``, in rank order, on every rank."""
        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, value, group=self.group)
        return out

    def any(self, flag: bool) -> bool:
        """Whether ``flag`` is true on some rank (one all-reduce)."""
        return self.total(int(flag)) > 0

    def total(self, count: int) -> int:
        """The sum of ``count`` over the ranks (one all-reduce)."""
        tensor = torch.tensor([count], dtype=torch.int64)
        dist.all_reduce(tensor, group=self.group)
        return int(tensor.item())

    def on_main(self, fn: Callable[[], T], share: bool = True) -> T | None:
        """Call ``fn`` on rank 0 only; every rank gets its result (``share``) or raises its exception.

        :param fn: what rank 0 does (create the run directory, read a checkpoint).
        :param share: broadcast the result; otherwise the other ranks get ``None``.
        """
        result: T | None = None
        outcome: tuple[str, Any] | None = None
        if self.is_main:
            try:
                result = fn()
            except Exception as err:
                self.broadcast(("error", _portable(err)))
                raise
            outcome = ("ok", result if share else None)
        outcome = self.broadcast(outcome)
        assert outcome is not None
        if outcome[0] == "error":
            raise outcome[1]
        return result if self.is_main else outcome[1]

    # ------------------------------------------------------------------ the loop
    def attach(self, trainer: Trainer) -> None:
        """Make ``trainer`` one of the ranks: rank 0's parameters everywhere, gradients averaged, optimisation steps stopped together."""
        for tensor in [*trainer.loss_module.parameters(), *trainer.loss_module.buffers()]:
            dist.broadcast(tensor.data, src=0)
        self.averager = GradientAverager(trainer.loss_module.parameters(), self.world_size)
        trainer.register_plugin(_Learners(self), "torchrun.learners")

    def checkpoint(self, backend: CheckpointBackend) -> CheckpointBackend:
        """``backend`` as every rank calls it (:class:`RanksCheckpoint`)."""
        return RanksCheckpoint(backend, self)

    def close(self) -> None:
        """Remove the gradient hooks; destroy the process group if this plugin created it."""
        if self.averager is not None:
            self.averager.remove()
            self.averager = None
        if self.owned and dist.is_initialized():
            dist.destroy_process_group()


class _Learners:
    """The hooks of a data-parallel trainer: optimisation steps stopped together, the process group closed at the end."""

    def __init__(self, ranks: Ranks) -> None:
        self.ranks = ranks

    @hookimpl(wrapper=True)
    def rl_post_optim_log(self, trainer: Trainer) -> Generator[None, Any, Any]:
        """After every other implementation: if one rank skips the batch's remaining steps, all do."""
        result = yield
        if self.ranks.any(trainer.optim_steps_stopped):
            trainer.stop_optim_steps()
        return result

    @hookimpl(trylast=True)
    def rl_shutdown(self) -> None:
        self.ranks.close()


class GradientAverager:
    """Averages the gradients of ``params`` over the ranks at the end of every backward pass.

    What ``DistributedDataParallel`` does, without wrapping the module (algorithms, hooks and their
    ``trainer.loss_module`` stay as they are): a hook on each parameter notes that its gradient was
    accumulated; at the end of the backward pass the noted gradients are summed over the ranks in one
    flat all-reduce per device and dtype, and divided by the number of ranks. Gradients accumulated
    over several backward passes stay averages (the average is linear). Every rank must run the
    same backward passes over the same parameters, as data-parallel training does.

    :param params: the parameters (those that do not require gradients are left out).
    :param world_size: the number of ranks.
    :param group: the process group (default: the default group).
    """

    def __init__(self, params: Iterable[torch.Tensor], world_size: int, group: Any = None) -> None:
        unique: dict[int, torch.Tensor] = {}
        for param in params:
            if param.requires_grad:
                unique.setdefault(id(param), param)
        self.params = list(unique.values())
        self.world_size, self.group = world_size, group
        self._ready: dict[int, torch.Tensor] = {}
        self._queued = False
        self._handles = [param.register_post_accumulate_grad_hook(partial(self._accumulated, index)) for index, param in enumerate(self.params)]

    def _accumulated(self, index: int, param: torch.Tensor) -> None:
        self._ready[index] = param
        if not self._queued:
            self._queued = True
            torch.autograd.Variable._execution_engine.queue_callback(self._average)

    def _average(self) -> None:
        ready, self._ready, self._queued = self._ready, {}, False
        buckets: dict[tuple[Any, Any], list[torch.Tensor]] = {}
        for index in sorted(ready):
            grad = ready[index].grad
            if grad is not None:
                buckets.setdefault((grad.device, grad.dtype), []).append(grad)
        for grads in buckets.values():
            flat = torch.cat([grad.reshape(-1) for grad in grads])
            dist.all_reduce(flat, group=self.group)
            flat.div_(self.world_size)
            offset = 0
            for grad in grads:
                grad.copy_(flat[offset : offset + grad.numel()].view_as(grad))
                offset += grad.numel()

    def remove(self) -> None:
        """Remove the hooks from the parameters."""
        for handle in self._handles:
            handle.remove()
        self._handles = []


def is_collective(backend: CheckpointBackend) -> bool:
    """Whether ``backend`` writes and reads with collectives of ``torch.distributed`` (each rank its own part).

    A backend says so with a ``collective`` attribute; without one, a backend that writes with
    torchsnapshot is (``Snapshot.take`` and ``restore`` join the default process group).
    """
    declared = getattr(backend, "collective", None)
    if declared is not None:
        return bool(declared)
    module = sys.modules.get(type(backend).__module__)
    return module is not None and any(str(getattr(value, "__module__", "")).startswith("torchsnapshot") for value in vars(module).values())


class RanksCheckpoint(CheckpointBackend):
    """The checkpoints of data-parallel learners: every rank calls :meth:`save` and :meth:`load` together.

    With a backend that writes from one process (``torch``), rank 0 gathers the other ranks' own
    states (:data:`RANK_KEYS`) into its checkpoint (under ``distributed.ranks``) and writes it;
    loading, rank 0 reads it and sends each rank its part. With a collective backend
    (torchsnapshot, see :func:`is_collective`), every rank writes its whole state as its own part
    of one snapshot, and reads it back. Either way the checkpoint records the number of ranks
    (``distributed.world_size``) and the checksum of every rank's parameters; a save whose ranks'
    parameters differ is refused. Only rank 0 renames, prunes and lists checkpoints.

    :param backend: the run's backend (``checkpoint.backend``), on the run directory of rank 0.
    :param ranks: the ranks.
    """

    def __init__(self, backend: CheckpointBackend, ranks: Ranks) -> None:
        super().__init__(backend.directory, backend.keep_last)
        self.backend, self.ranks = backend, ranks
        self.suffix, self.temp_prefix = backend.suffix, backend.temp_prefix
        self.collective = is_collective(backend)
        listing = [str(path) for path in backend.checkpoints()] if ranks.is_main else []
        listing, self._main_pid = ranks.broadcast((listing, os.getpid()))
        self._known = [Path(path) for path in listing]

    def checkpoints(self) -> list[Path]:
        """Rank 0's checkpoints, as every rank knows them (no rank reads another's disk)."""
        return list(self._known)

    def path_for(self, frames: int) -> Path:
        return self.backend.path_for(frames)

    def write(self, state: Mapping[str, Any], path: Path) -> None:
        self.backend.write(state, path)

    def read(self, path: Path) -> dict[str, Any]:
        return self.backend.read(path)

    def save(self, state: Mapping[str, Any], frames: int) -> Path:
        """Write one checkpoint of every rank's state (called by every rank).

        :raises RuntimeError: when the ranks' parameters differ (the gradients were not averaged).
        """
        ranks = self.ranks
        checksums = ranks.all_gather(content_checksum(state["loss_module"]))
        if len(set(checksums)) > 1:
            raise RuntimeError(f"the {ranks.world_size} learners' parameters differ at {frames} frames (checksums {checksums}); not checkpointing")
        meta = {"world_size": ranks.world_size, "parameters_crc": checksums}
        path: Path | None = None
        if self.collective:
            own = {**state, "distributed": {**meta, "rank": ranks.rank}}
            if ranks.is_main:
                path = self.backend.save(own, frames)
            else:  # the same temporary name as rank 0's save, which torchsnapshot takes anyway
                final = self.backend.path_for(frames)
                self.backend.write_checked(own, final.parent / f".tmp-{final.name}-{self._main_pid}")
        else:
            parts = ranks.gather({key: state[key] for key in RANK_KEYS if key in state})
            if ranks.is_main:
                path = self.backend.save({**state, "distributed": {**meta, "ranks": parts}}, frames)
        saved = Path(ranks.broadcast(str(path) if path is not None else ""))  # (rank 0's path: it wrote the checkpoint)
        self._known = [*[p for p in self._known if p != saved], saved][-self.keep_last :]
        return saved

    def load(self, path: str | os.PathLike[str] | None = None) -> tuple[Path, dict[str, Any]]:
        """This rank's state in ``path``, or in the newest checkpoint every rank can read (called by every rank)."""
        ranks = self.ranks
        if not self.collective:
            loaded = ranks.on_main(lambda: self.backend.load(path))
            assert loaded is not None
            found, state = loaded
            meta = state.get("distributed")
            if isinstance(meta, Mapping) and len(meta.get("ranks") or []) == ranks.world_size:
                mine = meta["ranks"][ranks.rank]
                state = {**state, **mine, "distributed": {k: v for k, v in meta.items() if k != "ranks"}}
            return found, state
        candidates = [Path(path)] if path is not None else list(reversed(self._known))
        if not candidates:
            raise CheckpointError(f"no checkpoint in {self.directory}")
        for candidate in candidates:
            read: dict[str, Any] | None = None
            error: CheckpointError | None = None
            try:
                read = self.backend.read_checked(candidate)
            except CheckpointError as err:
                error = err
            if not ranks.any(error is not None):
                assert read is not None
                return candidate, read
            problem = error or CheckpointError(f"{candidate} is unreadable on another learner")
            if path is not None:
                raise problem
            if ranks.is_main:
                warnings.warn(f"skipping unreadable checkpoint {candidate}: {problem}", stacklevel=2)
        raise CheckpointError(f"no readable checkpoint in {self.directory}")


def _portable(err: Exception) -> Exception:
    """``err`` if it can be sent to the other ranks (pickled), else a ``RuntimeError`` with its message."""
    try:
        pickle.loads(pickle.dumps(err))
    except Exception:
        return RuntimeError(f"{type(err).__name__}: {err}")
    return err


__all__ = ["GradientAverager", "Ranks", "RanksCheckpoint", "is_collective"]
