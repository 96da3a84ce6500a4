"""The trainer: TorchRL's loop, every hook point dispatched through the plugin manager (pluggy's registrations and order)."""

from __future__ import annotations

import abc
import contextlib
import inspect
import random
import sys
import time
import types
import warnings
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase
from torch import nn
from tqdm import tqdm

from .. import hookspecs
from .._markers import hookimpl
from ..hookspecs import HOOK_POINTS, HookPoint
from .checkpoint import CheckpointBackend, CheckpointError, SingleFileCheckpoint
from .contracts import OnPolicyLoss, World
from .errors import error_line, first_line
from .guard import DEFAULT_TIMEOUT, GuardedLogger
from .logger import Gauge, Logger
from .manager import PluginManager, get_plugin_manager, where_failed
from .profile import NoProfiler, Profiler
from .world import OneProcess

STATE_VERSION = 1


class TrainerHookBase(abc.ABC):
    """A stateful hook, as in TorchRL: it registers its ops and its state with a trainer.

    A TorchRL hook class ports by changing its import to ``from rlcore import TrainerHookBase``.
    """

    @abc.abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """The hook's state, saved in every checkpoint."""

    @abc.abstractmethod
    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""

    @abc.abstractmethod
    def register(self, trainer: Trainer, name: str) -> None:
        """Attach to ``trainer``: usually ``trainer.register_op(...)`` and ``trainer.register_module(name, self)``."""


class _Op:
    """One op given to ``register_op``: a plugin of its own, which implements the hook of its point.

    Each op receives what TorchRL passes it: the hook's first argument after ``trainer`` (``batch`` or ``losses``), or
    nothing at an operation point; what it returns is what an implementation returns (a batch, a dict to log,
    optimizer statistics).

    :param op_of: what registered it: ``hooks.<name>`` for a hook of the config, else ``op <its name>`` (the plugin
        that profiles and hook recorders name).
    """

    def __init__(self, point: HookPoint, op: Callable[..., Any], kwargs: dict[str, Any], op_of: str) -> None:
        self.op_of = op_of
        name = f"rl_{point}"
        given = [a for a in inspect.signature(getattr(hookspecs, name)).parameters if a != "trainer"][:1]
        try:
            signature = inspect.signature(op)
        except (TypeError, ValueError):  # no signature to check (a builtin): it is called as it is
            signature = None
        if signature is not None:
            try:
                signature.bind(*given, **kwargs)
            except TypeError as err:
                call = ", ".join([*given, *(f"{k}=..." for k in kwargs)])
                raise TypeError(f"register_op({point!r}, {_qualname(op)}): it is called as op({call}), which its signature refuses ({err})") from None
        self.op, self.kwargs = op, kwargs
        method = {(): _alone, ("losses",): _given_losses}.get(tuple(given), _given_batch)
        function = types.FunctionType(method.__code__, method.__globals__, name)  # a copy of its own, to carry the marker
        setattr(self, name, types.MethodType(hookimpl(function), self))


# An op's implementations: methods of its _Op (pluggy reads their argument names; a profile tells two ops apart by their self).
def _alone(self: _Op) -> Any:
    return self.op(**self.kwargs)


def _given_batch(self: _Op, batch: Any) -> Any:
    return self.op(batch, **self.kwargs)


def _given_losses(self: _Op, losses: Any) -> Any:
    return self.op(losses, **self.kwargs)


def _qualname(op: Callable[..., Any]) -> str:
    """A function's qualified name; a callable object's class's."""
    return str(getattr(op, "__qualname__", None) or type(op).__qualname__)


class _Core:
    """The trainer's own hook implementations (the kernel's defaults are plugins too): the optimizer step and the standard metrics."""

    def __init__(self) -> None:
        self._tic = time.perf_counter()
        self._frames_at_tic = 0

    @hookimpl
    def rl_setup(self, trainer: Trainer) -> None:
        self._tic, self._frames_at_tic = time.perf_counter(), trainer.collected_frames

    @hookimpl(wrapper=True, trylast=True)
    def rl_optimizer(self, trainer: Trainer, losses: Mapping[str, torch.Tensor]) -> Generator[None, list[Any], list[Any]]:
        """The trainer's step, unless another implementation returned statistics (it wraps them: they have run)."""
        results = yield
        if results or trainer.optimizer is None:
            return results
        return [trainer.optimizer_step(losses)]

    @hookimpl(tryfirst=True)
    def rl_pre_steps_log(self, trainer: Trainer) -> dict[str, Any] | None:
        episodes = getattr(trainer.collector, "finished_episodes", None)
        if not episodes or not len(episodes[0]):
            return None
        returns, lengths = episodes
        return {
            "train/episode_return": float(np.mean(returns)),
            "train/episode_length": float(np.mean(lengths)),
            "log_pbar": True,
        }

    @hookimpl(tryfirst=True)
    def rl_post_steps_log(self, trainer: Trainer) -> dict[str, Any]:
        now = time.perf_counter()
        values = trainer._pop_step_stats()
        if trainer.optimizer is not None:
            values["optim/lr"] = Gauge(trainer.optimizer.param_groups[0]["lr"])
        frames = trainer.collected_frames - self._frames_at_tic
        values["perf/fps"] = frames / max(now - self._tic, 1e-9)
        self._tic, self._frames_at_tic = now, trainer.collected_frames
        return values


class Trainer:
    """Collects batches, runs the optimisation steps and calls every hook point through pluggy.

    The parameters carry TorchRL's names. The plugins of ``plugin_manager`` (by default every
    installed plugin, see ``RLCORE_PLUGINS``) take part in the loop; so does ``loss_module`` when
    it has ``@rlcore.hookimpl`` methods.

    :param collector: an iterable of TensorDict batches ``[envs, time]`` (e.g. :class:`rlcore.Collector`); one
        with ``@rlcore.hookimpl`` methods takes part in the loop as a plugin (like the loss module).
    :param loss_module: returns a TensorDict of losses from a sub-batch.
    :param optimizer: steps the loss module's parameters; ``None`` leaves the step to hooks.
    :param total_frames: stop once this many frames are collected.
    :param frame_skip: frames each collected step stands for.
    :param optim_steps_per_batch: optimisation steps per batch; ``None``: the loss module's own (an on-policy loss's
        epochs times minibatches, :class:`rlcore.OnPolicyLoss`), else 1.
    :param clip_grad_norm: clip gradients by norm (``True``) or by value (``False``).
    :param clip_norm: the clipping threshold; ``None`` disables clipping.
    :param progress_bar: show a progress bar when stderr is a terminal.
    :param seed: seeds python, numpy, torch and the collector's envs.
    :param save_trainer_interval: frames between checkpoints.
    :param log_interval: frames between two logged values of the same metric.
    :param loggers: loggers that receive every logged value.
    :param logger: one more logger (TorchRL's parameter).
    :param checkpoint: the checkpoint backend; ``None`` disables checkpoints (unless ``save_trainer_file``).
    :param save_trainer_file: TorchRL's checkpoint file, overwritten at every save: a ``.pt`` path is
        written by the ``torch`` backend, any other path is a directory written by ``torchsnapshot``.
    :param make_env: ``make_env(num_envs=1, **env_kwargs)`` returns a fresh vector env like the
        training one (its wrappers' statistics copied and frozen); evaluation hooks use it.
    :param logger_timeout: the deadline, in seconds, of each logger's writes: loggers run in threads of
        their own (:class:`~rlcore._guard.GuardedLogger`), and one that misses it is reported and dropped.
    :param max_batches: also stop after this many batches (the old torchrl ``train()``'s ``max_iters``).
    :param max_episodes: also stop once this many episodes have ended.
    :param profile: time every hook implementation of every plugin, and the collection, loss, backward,
        optimizer step and checkpoints; log them as ``perf/time/...`` and print a table at the end.
    :param plugin_manager: the plugins of this trainer (the trainer works on a copy, which also holds
        what it registers itself); ``None`` loads the installed ones.
    :param run_dir: the run directory, if any.
    :param config: the resolved config the run was built from, if any.
    :param device: where the loss module and the optimisation run (hooks put their tensors there);
        default the device of ``loss_module``'s first parameter, else the CPU.
    :param world: the processes this trainer learns with (:class:`rlcore.World`); default one, this one.
    """

    def __init__(
        self,
        *,
        collector: Iterable[Any],
        loss_module: nn.Module,
        optimizer: torch.optim.Optimizer | None = None,
        total_frames: int,
        frame_skip: int = 1,
        optim_steps_per_batch: int | None = None,
        clip_grad_norm: bool = True,
        clip_norm: float | None = None,
        progress_bar: bool = True,
        seed: int | None = None,
        save_trainer_interval: int = 10000,
        log_interval: int = 10000,
        loggers: Iterable[Logger] | Logger | None = None,
        logger: Logger | None = None,
        checkpoint: CheckpointBackend | None = None,
        save_trainer_file: str | Path | None = None,
        make_env: Callable[..., Any] | None = None,
        logger_timeout: float = DEFAULT_TIMEOUT,
        max_batches: int | None = None,
        max_episodes: int | None = None,
        profile: bool = False,
        plugin_manager: PluginManager | None = None,
        run_dir: str | Path | None = None,
        config: Mapping[str, Any] | None = None,
        device: str | torch.device | None = None,
        world: World | None = None,
        async_collection: bool = False,
    ) -> None:
        if async_collection:  # (TorchRL's flag: here the collector is what collects asynchronously)
            raise ValueError(
                "Trainer(async_collection=True): give the trainer an asynchronous collector instead, e.g. rl-plugin-ray's "
                "(a config's collector: {name: ray, mode: async})"
            )
        if optim_steps_per_batch is None:
            optim_steps_per_batch = loss_module.optim_steps_per_batch if isinstance(loss_module, OnPolicyLoss) else 1
        self.collector = collector
        self.loss_module = loss_module
        self.optimizer = optimizer
        self.total_frames = int(total_frames)
        self.frame_skip = int(frame_skip)
        self.optim_steps_per_batch = int(optim_steps_per_batch)
        self.clip_grad_norm = clip_grad_norm
        self.clip_norm = clip_norm
        self.progress_bar = progress_bar
        self.seed = seed
        self.save_trainer_interval = int(save_trainer_interval)
        self.log_interval = int(log_interval)
        self.logger_timeout = logger_timeout
        self.max_batches = max_batches
        self.max_episodes = max_episodes
        #: the run's profiler: it times the loop's parts and every hook implementation when the run profiles, else nothing
        self.profiler: Profiler = Profiler() if profile else NoProfiler()
        #: the processes this trainer learns with (:class:`rlcore.World`)
        self.world: World = world if world is not None else OneProcess()
        self._registering: str | None = None  # whose ops register_op is given now (see _registering_as)
        given = [loggers] if isinstance(loggers, Logger) else list(loggers or [])
        #: every logger of the run, each behind a :class:`~rlcore._guard.GuardedLogger`
        self.loggers: list[Logger] = [self.guard(one) for one in [*given, *([logger] if logger is not None else [])]]
        #: ``{name: why}`` of the loggers dropped during the run (their backends lack what came after)
        self.dropped_loggers: dict[str, str] = {}
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.config = dict(config) if config is not None else None
        first = next(iter(loss_module.parameters()), None) if isinstance(loss_module, nn.Module) else None
        self.device = torch.device(device) if device is not None else first.device if first is not None else torch.device("cpu")
        self.plugin_manager = plugin_manager.copy() if plugin_manager is not None else get_plugin_manager()
        if checkpoint is None and save_trainer_file is not None:
            checkpoint = self._file_checkpoint(Path(save_trainer_file))
        self.checkpoint = checkpoint
        #: a fresh env like the training one: ``make_env(num_envs=1, **env_kwargs)`` (``None`` if not given)
        self.make_env = make_env

        self.collected_frames = 0
        self.batch_frames = 0
        self.batches = 0
        self.episodes = 0
        self.optim_steps = 0
        self.optim_step_in_batch = 0
        #: the checkpoint this trainer resumed from (:meth:`load_from_file`), if any
        self.resumed_from: Path | None = None

        self._modules: dict[str, Any] = {}
        self._ops: dict[HookPoint, list[tuple[str, _Op]]] = {}  # the plugins of register_op's ops, by point, in order
        self._last_log: dict[str, int] = {}
        self._pending: dict[str, list[float]] = {}  # [mean, count] of each scalar not logged yet
        self._last_save = 0
        self._stop = False
        #: why training stopped before ``total_frames``: a :meth:`stop` reason, ``trainer.max_batches`` or ``trainer.max_episodes``
        self.stop_reason: str | None = None
        self._stop_optim = False
        self._step_stats: dict[str, list[Any]] = {}
        self._pbar: Any = None
        self._pbar_values: dict[str, float] = {}
        self._after_shutdown: list[Callable[[BaseException | None], None]] = []  # see after_shutdown
        self._failure: BaseException | None = None

        self.register_plugin(_Core(), "rlcore.trainer")
        if any(self.plugin_manager.parse_hookimpl_opts(loss_module, n) for n in dir(type(loss_module))):
            self.register_plugin(loss_module, "rlcore.loss_module")
        if any(self.plugin_manager.parse_hookimpl_opts(collector, n) for n in dir(type(collector))):
            self.register_plugin(collector, "rlcore.collector")
        if seed is not None:
            self.set_seed(seed)
        self.world.attach(self)

    # ------------------------------------------------------------------ TorchRL-style registration
    @property
    def policy(self) -> Any:
        """The collector's policy."""
        return getattr(self.collector, "policy", None)

    def register_op(self, dest: HookPoint, op: Callable[..., Any], **kwargs: Any) -> None:
        """Call ``op`` at hook point ``dest`` (TorchRL's ``register_op``), after the ops registered there before it.

        Each op is a plugin of its own, and pluggy calls the most recently registered plugins first: so that it calls
        a point's ops in the order they were given (TorchRL's), the trainer registers them anew, in reverse, when one
        is added. Like any plugin registered after others, they run before those (the loss module's among them).

        :param dest: one of :data:`rlcore.hookspecs.HOOK_POINTS` (``batch_process``, ..., ``post_steps_log``).
        :param op: called as TorchRL calls it: ``op(batch, **kwargs)`` at data, logging and
            ``post_loss`` points, ``op(losses, **kwargs)`` at ``optimizer``, ``op(**kwargs)`` otherwise.
        :param kwargs: extra keyword arguments for ``op``.
        :raises ValueError: for an unknown hook point.
        :raises TypeError: when ``op``'s signature cannot take the call it will get.
        """
        if dest not in HOOK_POINTS:
            raise ValueError(f"unknown hook point {dest!r}; valid choices: {', '.join(HOOK_POINTS)}")
        owner = self._registering or f"op {_qualname(op)}"
        ops = self._ops.setdefault(dest, [])
        ops.append((f"rlcore.op {owner} [{dest}] {len(ops)}", _Op(dest, op, kwargs, owner)))
        for name, _ in ops[:-1]:
            self.plugin_manager.unregister(name=name)
        for name, plugin in reversed(ops):  # the first op registered last: pluggy calls it first
            self.register_plugin(plugin, name)

    @contextlib.contextmanager
    def registering_as(self, owner: str) -> Iterator[None]:
        """The ops registered inside the ``with`` block are ``owner``'s (``hooks.<name>``: ``--profile``'s rows)."""
        before, self._registering = self._registering, owner
        try:
            yield
        finally:
            self._registering = before

    def after_shutdown(self, call: Callable[[BaseException | None], None]) -> None:
        """Call ``call(error)`` once :meth:`shutdown` has closed everything (``error``: the run's, or ``None``): the run
        directory's release."""
        self._after_shutdown.append(call)

    @property
    def modules(self) -> Mapping[str, Any]:
        """The modules registered with :meth:`register_module`, by name (each one's state is in every checkpoint)."""
        return self._modules

    @property
    def ops(self) -> Mapping[str, list[Callable[..., Any]]]:
        """The ops given to :meth:`register_op`, by hook point, in the order they are called (a copy)."""
        return {point: [op.op for _, op in ops] for point, ops in self._ops.items()}

    def register_module(self, module_name: str, module: Any) -> None:
        """Include ``module``'s ``state_dict`` in every checkpoint under ``module_name``.

        :raises TypeError: at once, for a name that is no string or a module without ``state_dict`` and ``load_state_dict``.
        """
        if not isinstance(module_name, str):
            raise TypeError(f"register_module(module_name, module): the name is a string, got {type(module_name).__name__} (the arguments swapped?)")
        if not (callable(getattr(module, "state_dict", None)) and callable(getattr(module, "load_state_dict", None))):
            raise TypeError(f"register_module({module_name!r}, module): a module has state_dict() and load_state_dict(); {type(module).__name__} has not")
        if module_name in self._modules:
            raise RuntimeError(f"a module named {module_name!r} is already registered")
        self._modules[module_name] = module

    def _file_checkpoint(self, path: Path) -> CheckpointBackend:
        """TorchRL's ``save_trainer_file``: one checkpoint at ``path``, overwritten at every save."""
        name = "torch" if path.suffix == ".pt" else "torchsnapshot"
        factory = self.plugin_manager.factory("checkpoint_backends", name, key="save_trainer_file")
        return SingleFileCheckpoint(factory(directory=path.parent, keep_last=1), path)

    def register_plugin(self, plugin: Any, name: str | None = None) -> None:
        """Register an object with ``@rlcore.hookimpl`` methods as a plugin of this trainer only."""
        self.plugin_manager.add_named(plugin, name or f"{type(plugin).__name__}-{id(plugin)}")

    # ------------------------------------------------------------------ control
    def stop(self, reason: str | None = None) -> None:
        """End training once the current batch is done (e.g. early stopping).

        :param reason: why, for the run's last line (``rlctl: 512 frames, run directory ... (stopped: REASON)``).
        """
        self._stop = True
        self.stop_reason = self.stop_reason or reason

    def stop_optim_steps(self) -> None:
        """Skip the remaining optimisation steps of the current batch (e.g. KL far past its target)."""
        self._stop_optim = True

    @property
    def optim_steps_stopped(self) -> bool:
        """Whether :meth:`stop_optim_steps` was called in the current batch."""
        return self._stop_optim

    def set_seed(self, seed: int) -> None:
        """Seed python, numpy, torch and the collector."""
        self.seed = seed
        random.seed(seed)
        np.random.seed(seed % 2**32)
        torch.manual_seed(seed)
        if hasattr(self.collector, "set_seed"):
            self.collector.set_seed(seed)

    # ------------------------------------------------------------------ logging
    def log(self, values: Mapping[str, Any], log_pbar: bool = False, *, force: bool = False) -> None:
        """Log ``values`` at the current frame count, each metric at most once per ``log_interval`` frames.

        A number (or a one-element tensor or array) is a scalar: the values a metric receives
        between two logged points are averaged, and the mean is logged (the old torchrl Logger's
        ``add_log``), except a :class:`rlcore.Gauge`, logged as it is at that point. A tensor or
        array of several numbers is logged as a histogram by the loggers that support histograms.

        :param values: ``{name: number, tensor or array}``.
        :param log_pbar: also show the scalars on the progress bar.
        :param force: log now even within ``log_interval`` of the last point (e.g. a final evaluation).
        :raises TypeError: for a name that is not a string, or a value that is neither a number, a tensor nor an array.
        """
        step = self.collected_frames
        due: dict[str, float] = {}
        for key, value in values.items():
            if not isinstance(key, str):
                raise TypeError(f"cannot log {key!r}: a metric's name is a string, got {type(key).__name__}")
            number = _loggable(key, value)
            if number is None:
                if not isinstance(value, (torch.Tensor, np.ndarray)):
                    raise TypeError(f"cannot log {key!r}: expected a number, a tensor or an array, got {type(value).__name__}")
                if self._due(key, step, force):
                    self._each_logger("log_histogram", key, value.detach().cpu() if isinstance(value, torch.Tensor) else value, step)
                continue
            if log_pbar:
                self._pbar_values[key] = number
            pending = self._pending.get(key)
            if pending is None or isinstance(value, Gauge):
                self._pending[key] = [number, 1]
            else:  # a running mean: a constant stays exactly itself
                pending[1] += 1
                pending[0] += (number - pending[0]) / pending[1]
            if self._due(key, step, force):
                due[key] = self._pending.pop(key)[0]
        if due:
            self._each_logger("log_scalars", due, step)

    def _due(self, key: str, step: int, force: bool) -> bool:
        """Whether ``key`` is logged at ``step`` (and if so, note it)."""
        last = self._last_log.get(key)
        if force or last is None or step - last >= self.log_interval:
            self._last_log[key] = step
            return True
        return False

    def guard(self, logger: Logger | Callable[[], Logger], name: str | None = None) -> GuardedLogger:
        """``logger`` behind a :class:`~rlcore._guard.GuardedLogger` with this trainer's ``logger_timeout``.

        :param logger: a logger, or a function that creates it (then in the logger's own thread).
        :param name: its name in messages (default: its class name).
        """
        if isinstance(logger, GuardedLogger):
            return logger
        return GuardedLogger(logger, name or type(logger).__name__, self.logger_timeout)

    def _each_logger(self, method: str, *args: Any) -> None:
        for logger in list(self.loggers):
            problem = logger.problem() if isinstance(logger, GuardedLogger) else None
            if problem is None:
                try:
                    getattr(logger, method)(*args)
                    continue
                except Exception as err:
                    problem = f"failed: {err}"
            self.drop_logger(logger, problem)

    def drop_logger(self, logger: Logger, problem: str) -> None:
        """Report a logger that failed or missed its deadline, once, and log nothing more to it."""
        if logger in self.loggers:
            self.loggers.remove(logger)
            if isinstance(logger, GuardedLogger):
                logger.abandon()
            name = logger.name if isinstance(logger, GuardedLogger) else type(logger).__name__
            self.dropped_loggers[name] = problem
            warnings.warn(f"logger {name} {problem}; it is dropped and the run goes on", stacklevel=3)

    def _close_loggers(self) -> None:
        """Close every logger (each within its deadline), reporting those that failed to."""
        for logger in list(self.loggers):
            try:
                logger.close()
                problem = logger.problem() if isinstance(logger, GuardedLogger) else None
            except Exception as err:
                problem = f"failed: {err}"
            if problem is not None:
                self.drop_logger(logger, problem)

    def _wait_for_loggers(self) -> None:
        """Wait (at most each one's deadline) until the loggers have written what they were given."""
        for logger in list(self.loggers):
            if isinstance(logger, GuardedLogger):
                logger.wait()
                problem = logger.problem()
                if problem is not None:
                    self.drop_logger(logger, problem)

    def _log_returned(self, hook_name: str, batch: Any) -> None:
        """Call a logging hook and log what each implementation returned (a dict, checked at the boundary)."""
        for plugin, result in self.plugin_manager.call_collecting(hook_name, Mapping, trainer=self, batch=batch):
            values = dict(result)
            pbar = bool(values.pop("log_pbar", False))
            with self.profiler.timed("logging"):
                try:
                    self.log(values, log_pbar=pbar)
                except (TypeError, ValueError, OverflowError) as err:  # a value no logger takes (a name, a type, 10**400)
                    raise self.plugin_manager.returned_by(plugin, hook_name, err) from None

    def _accumulate(self, losses: Mapping[str, Any], stats: Iterable[tuple[str | None, Mapping[str, Any]]]) -> None:
        """Keep this step's scalar losses and the optimizer statistics of each ``rl_optimizer`` implementation
        (``(plugin, statistics)``, each value checked here, where the plugin that returned it is known);
        :meth:`_pop_step_stats` averages them."""
        kept = self._step_stats
        for key, value in losses.items():
            if isinstance(value, torch.Tensor) and value.numel() == 1:
                name = f"loss/{key[5:]}" if key.startswith("loss_") else f"train/{key}"
                kept.setdefault(name, []).append(value.detach())
        for plugin, one in stats:
            for key, value in one.items():
                if not (isinstance(value, torch.Tensor) and value.numel() == 1):  # (a tensor stays on its device: no sync)
                    try:
                        if _loggable(key, value) is None:
                            raise TypeError(f"cannot log {key!r}: expected a number or a one-element tensor, got {type(value).__name__}")
                    except (TypeError, ValueError) as err:
                        raise self.plugin_manager.returned_by(plugin, "rl_optimizer", err) from None
                kept.setdefault(f"optim/{key}", []).append(value.detach() if isinstance(value, torch.Tensor) else value)

    def _pop_step_stats(self) -> dict[str, float]:
        """The mean of each stat kept since the last call (one ``.tolist()``: one device sync)."""
        kept, self._step_stats = self._step_stats, {}
        if not kept:
            return {}
        device = next((v.device for values in kept.values() for v in values if isinstance(v, torch.Tensor)), None)
        means = [
            torch.stack([torch.as_tensor(v, dtype=torch.float32, device=device).reshape(()) for v in values]).mean() for values in kept.values()
        ]  # (on one device: a CUDA run's loss values, and numbers or CPU tensors from optimizer hooks)
        return dict(zip(kept, torch.stack(means).cpu().tolist(), strict=True))

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume: counters, loss module, optimizer, registered modules, RNG states."""
        state: dict[str, Any] = {
            "version": STATE_VERSION,
            "counters": {
                "collected_frames": self.collected_frames,
                "batches": self.batches,
                "episodes": self.episodes,
                "optim_steps": self.optim_steps,
                "last_log": dict(self._last_log),
                "pending_means": {key: list(pending) for key, pending in self._pending.items()},
            },
            "loss_module": self.loss_module.state_dict(),
            "optimizer": self.optimizer.state_dict() if self.optimizer is not None else None,
            "modules": {name: module.state_dict() for name, module in self._modules.items()},
            "rng": _rng_state(),
            "world_size": self.world.world_size,
        }
        if hasattr(self.collector, "state_dict"):
            state["collector"] = self.collector.state_dict()
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        learners = int(state.get("world_size", 1))
        if learners != self.world.world_size:
            raise ValueError(f"the checkpoint was written by {learners} data-parallel learner(s); resume it with as many processes")
        counters = state["counters"]
        self.collected_frames = int(counters["collected_frames"])
        self.batches = int(counters["batches"])
        self.episodes = int(counters.get("episodes", 0))
        self.optim_steps = int(counters["optim_steps"])
        self._last_log = dict(counters.get("last_log", {}))
        self._pending = {key: [float(m), float(n)] for key, (m, n) in counters.get("pending_means", {}).items()}
        self._last_save = self.collected_frames
        self.loss_module.load_state_dict(state["loss_module"])
        if self.optimizer is not None and state.get("optimizer") is not None:
            self.optimizer.load_state_dict(state["optimizer"])
        for name, module_state in state.get("modules", {}).items():
            if name not in self._modules:
                warnings.warn(f"checkpoint holds state for {name!r}, which this run does not register", stacklevel=2)
                continue
            self._modules[name].load_state_dict(module_state)
        if "collector" in state and hasattr(self.collector, "load_state_dict"):
            self.collector.load_state_dict(state["collector"])
        if state.get("rng"):
            _set_rng_state(state["rng"])

    def save_trainer(self, force_save: bool = False) -> Path | None:
        """Write a checkpoint if ``save_trainer_interval`` frames passed since the last one (or ``force_save``)."""
        if self.checkpoint is None:
            return None
        if not force_save and self.collected_frames - self._last_save < self.save_trainer_interval:
            return None
        if force_save and self._last_save == self.collected_frames and self.checkpoint.checkpoints():
            return None
        self._last_save = self.collected_frames
        state = self.state_dict()
        _refuse_non_finite(state["loss_module"], "loss_module")
        _refuse_non_finite(state["optimizer"], "optimizer")
        self._each_logger("flush")  # what was logged before the checkpoint outlives a kill after it (the loggers' contract)
        self._wait_for_loggers()
        return self.checkpoint.save(state, self.collected_frames)

    def load_from_file(self, file: str | Path | None = None) -> Path:
        """Resume from ``file``, or from the newest checkpoint of the backend that it can read and that fits this run
        (another algorithm's, left there, is skipped with a warning, as an unreadable one is).

        Loggers are told (:meth:`rlcore.Logger.resume`) so that nothing logged after the checkpoint is doubled.

        :raises CheckpointError: when no checkpoint (or ``file``) can be read.
        :raises RuntimeError | KeyError | ValueError: why the newest readable checkpoint does not fit, when none does.
        """
        backend = self.checkpoint
        if backend is None:
            factory = self.plugin_manager.factory("checkpoint_backends", "torch")
            backend = factory(directory=Path(file).parent if file else Path("."), keep_last=1)
        candidates = [Path(file)] if file is not None else list(reversed(backend.checkpoints()))
        if not candidates:
            raise CheckpointError(f"no checkpoint in {backend.directory}")
        skipped: list[str] = []  # said once an older checkpoint fits (when none does, the newest's reason is the error)
        refused: Exception | None = None
        for candidate in candidates:
            try:
                path, state = backend.load(candidate)
                self.load_state_dict(state)
            except CheckpointError as err:
                if file is not None:
                    raise
                warnings.warn(f"skipping unreadable checkpoint {candidate}: {err}", stacklevel=2)
                continue
            except (RuntimeError, KeyError, ValueError) as err:  # another run's, or another algorithm's
                if file is not None:
                    raise
                refused = refused or err
                skipped.append(f"skipping checkpoint {candidate}: it does not fit this run ({first_line(err)})")
                continue
            for message in skipped:
                warnings.warn(message, stacklevel=2)
            self.resumed_from = path
            self._each_logger("resume", self.collected_frames)
            return path
        if refused is not None:
            raise refused
        raise CheckpointError(f"no readable checkpoint in {backend.directory}")

    # ------------------------------------------------------------------ the loop
    def train(self) -> None:
        """Run the loop until ``total_frames`` are collected, ``max_batches`` batches or ``max_episodes``
        episodes are done (the first criterion met wins), or a hook calls :meth:`stop`."""
        hook, profiler = self.plugin_manager.hook, self.profiler
        self._open_pbar()
        tic = time.perf_counter()
        unwatch = profiler.watch(self.plugin_manager)
        failure: BaseException | None = None
        try:
            hook.rl_setup(trainer=self)
            batches = iter(self.collector)
            while not self._done():
                with profiler.timed("collection"):
                    batch = next(batches, None)
                if batch is None:  # a finite collector ran out before the stop criteria
                    break
                self._train_batch(batch)
            if self._pending:  # the means not logged yet, of metrics logged less often than every batch
                pending, self._pending = self._pending, {}
                step = self.collected_frames  # (a metric already logged at this frame count keeps its one point)
                self.log({key: mean for key, (mean, _) in pending.items() if self._last_log.get(key) != step}, force=True)
                self._last_save = -1  # (a checkpoint of this frame count predates them: save anew, or a resume logs them twice)
            with profiler.timed("checkpoint"):
                self.save_trainer(force_save=True)
        except BaseException as err:
            failure = _ended_by_sys_exit(err) if isinstance(err, SystemExit) else err
            self.plugin_manager.blame(failure)
            hook.rl_exception(trainer=self, exception=failure)
            if failure is err:
                raise
            raise failure from err
        finally:
            profiler.wall = time.perf_counter() - tic
            self._failure = failure
            self.shutdown(failing=failure is not None)
            unwatch()
            if profiler.enabled and self.world.is_main:
                print(profiler.table(), file=sys.stderr)

    def _done(self) -> bool:
        """Whether a stop criterion is met: :meth:`stop`, ``total_frames``, ``max_batches``, ``max_episodes``.

        Learners of several processes decide together (:meth:`rlcore.World.any`): one's :meth:`stop` stops them
        all after the same batch, and episodes are counted over all of them.
        """
        if self.world.any(self._stop):
            self._stop = True
            return True
        if self.collected_frames >= self.total_frames:
            return True
        for key, count, limit in (("max_batches", self.batches, self.max_batches), ("max_episodes", self.episodes, self.max_episodes)):
            if limit is not None and count >= limit:
                self.stop_reason = f"trainer.{key}={limit}"
                return True
        return False

    def _train_batch(self, batch: Any) -> None:
        pm, hook, profiler = self.plugin_manager, self.plugin_manager.hook, self.profiler
        self.batch_frames = batch.numel() * self.frame_skip * self.world.world_size
        self.collected_frames += self.batch_frames
        finished = getattr(self.collector, "finished_episodes", None)
        self.episodes += self.world.total(len(finished[0]) if finished is not None else 0)  # every process's, as the checkpoint counts them
        batch = pm.call_chain("rl_batch_process", TensorDictBase, trainer=self, batch=batch)
        self._log_returned("rl_pre_steps_log", batch)
        hook.rl_pre_optim_steps(trainer=self)
        self._stop_optim = False
        for j in range(self.optim_steps_per_batch):
            self.optim_step_in_batch = j
            sub = pm.call_chain("rl_process_optim_batch", TensorDictBase, trainer=self, batch=batch)
            with profiler.timed("loss forward"):
                losses = self.loss_module(sub)
            hook.rl_post_loss(trainer=self, batch=sub, losses=losses)
            stats = pm.call_collecting("rl_optimizer", Mapping, trainer=self, losses=losses)
            self.optim_steps += 1
            with profiler.timed("logging"):
                self._accumulate(losses, stats)
            hook.rl_post_optim(trainer=self)
            self._log_returned("rl_post_optim_log", sub)
            if self._stop_optim:
                break
        hook.rl_post_steps(trainer=self)
        self._log_returned("rl_post_steps_log", batch)
        self.batches += 1
        self._update_pbar()
        with profiler.timed("checkpoint"):
            self.save_trainer()
        with profiler.timed("logging"):
            self.log(profiler.per_batch())

    def optimizer_step(self, losses: Mapping[str, torch.Tensor]) -> dict[str, Any]:
        """The trainer's own step (its ``rl_optimizer``): back-propagate the sum of the ``loss*`` entries, clip the
        gradients (``clip_grad_norm``/``clip_norm``), step the optimizer.

        :param losses: the loss module's output.
        :return: ``{"grad_norm": ...}`` when it clips by norm, else ``{}``.
        :raises ValueError: when ``losses`` has no ``loss*`` entry.
        """
        optimizer = self.optimizer
        assert optimizer is not None
        terms = [value for key, value in losses.items() if key.startswith("loss")]
        if not terms:
            raise ValueError(f"the loss module returned no 'loss*' entry to optimise (got {', '.join(losses.keys())})")
        params = [p for group in optimizer.param_groups for p in group["params"]]
        for param in params:  # optimizer.zero_grad(set_to_none=True), without its per-call overhead
            param.grad = None
        with self.profiler.timed("backward"):
            sum(terms[1:], terms[0]).backward()
        return self.apply_gradients()

    def apply_gradients(self) -> dict[str, Any]:
        """Clip the gradients the optimizer's parameters hold (``clip_grad_norm``/``clip_norm``) and step the optimizer:
        :meth:`optimizer_step` after its backward pass, for a plugin that computes the gradients itself.

        :return: ``{"grad_norm": ...}`` when it clips by norm, else ``{}``.
        """
        optimizer = self.optimizer
        assert optimizer is not None
        params = [p for group in optimizer.param_groups for p in group["params"]]
        stats: dict[str, Any] = {}
        if self.clip_norm is not None:
            if self.clip_grad_norm:
                stats["grad_norm"] = clip_grad_norm(params, self.clip_norm)
            else:
                nn.utils.clip_grad_value_(params, self.clip_norm)
        with self.profiler.timed("optimizer step"):
            optimizer.step()
        return stats

    def shutdown(self, *, failing: bool = False) -> None:
        """Call every ``rl_shutdown`` implementation (each one, even after another raised), close the progress bar,
        flush and close the loggers, stop the collector.

        :param failing: the run is failing with an error of its own: an ``rl_shutdown`` error is then only
            printed (on stderr), so as not to hide that one.
        :raises BaseException: the first error of an ``rl_shutdown`` implementation, unless ``failing``.
        """
        try:
            self.plugin_manager.call_every("rl_shutdown", trainer=self)
        except Exception as err:
            if not failing:
                raise
            print(f"rlcore: while stopping: {where_failed(err)}{error_line(err)}", file=sys.stderr)
        finally:
            if self._pbar is not None:
                self._pbar.close()
                self._pbar = None
            self._close_loggers()
            if hasattr(self.collector, "shutdown"):
                self.collector.shutdown()
            after, self._after_shutdown = self._after_shutdown, []
            for call in after:
                call(self._failure)

    def _open_pbar(self) -> None:
        if not self.progress_bar or not sys.stderr.isatty():
            return
        self._pbar = tqdm(total=self.total_frames, initial=self.collected_frames, unit="f", dynamic_ncols=True)

    def _update_pbar(self) -> None:
        if self._pbar is None:
            return
        self._pbar.update(min(self.collected_frames, self.total_frames) - self._pbar.n)
        if self._pbar_values:
            self._pbar.set_postfix({k.split("/")[-1]: f"{v:.4g}" for k, v in self._pbar_values.items()}, refresh=False)


def clip_grad_norm(params: Iterable[torch.Tensor], max_norm: float | None) -> torch.Tensor:
    """Scale the gradients of ``params`` so that their global 2-norm is at most ``max_norm``.

    ``nn.utils.clip_grad_norm_``'s math, with torch's multi-tensor kernels for gradients on one
    device: torch's own function uses them on GPU only and loops over tensors in Python on CPU,
    which, for the small networks of RL, costs more than the backward pass of some layers.

    :param params: the parameters whose ``.grad`` to scale.
    :param max_norm: the largest global norm; ``None``: the gradients stay as they are (only their norm is wanted).
    :return: the global norm before clipping.
    """
    params = list(params)
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return torch.zeros(())
    if len({g.device for g in grads}) > 1:
        return nn.utils.clip_grad_norm_(params, float("inf") if max_norm is None else max_norm)
    norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    if max_norm is not None:
        torch._foreach_mul_(grads, torch.clamp(max_norm / (norm + 1e-6), max=1.0))
    return norm


def _ended_by_sys_exit(exit: SystemExit) -> RuntimeError:
    """What a ``sys.exit()`` inside the loop is: a failure of the code that called it (a plugin's), not the run's end."""
    error = RuntimeError(f"it called sys.exit({exit.code!r}), which ends no run: raise an exception, or call trainer.stop()")
    return error.with_traceback(exit.__traceback__)


def _scalar(value: Any) -> float | None:
    """``value`` as a float if it is one number (a one-element tensor or array too), else ``None``."""
    if isinstance(value, (bool, int, float, np.number)):
        return float(value)
    if (isinstance(value, torch.Tensor) and value.numel() == 1) or (isinstance(value, np.ndarray) and value.size == 1):
        return float(value.item())
    return None


def _loggable(key: str, value: Any) -> float | None:
    """:func:`_scalar` of the value logged as ``key``, with a ``ValueError`` naming it for a number too large for a float."""
    try:
        return _scalar(value)
    except OverflowError:
        raise ValueError(f"cannot log {key!r}: {str(value)[:20]}... is too large for a float") from None


def _refuse_non_finite(state: Any, where: str) -> None:
    """Raise ``FloatingPointError`` naming the first floating-point tensor of ``state`` that holds a NaN or an infinity."""
    if isinstance(state, Mapping):
        for key, value in state.items():
            _refuse_non_finite(value, f"{where}.{key}")
    elif isinstance(state, (list, tuple)):
        for index, value in enumerate(state):
            _refuse_non_finite(value, f"{where}[{index}]")
    elif isinstance(state, torch.Tensor) and state.is_floating_point() and not bool(torch.isfinite(state).all()):
        raise FloatingPointError(f"not checkpointing {where}: it holds NaN or infinite values (the training diverged); the last good checkpoint is kept")





def _rng_state() -> dict[str, Any]:
    """Python, numpy and torch RNG states in types that ``torch.load(weights_only=True)`` accepts."""
    version, internal, gauss = random.getstate()
    _, keys, pos, has_gauss, cached = np.random.get_state(legacy=True)
    assert isinstance(keys, np.ndarray)
    return {
        "python": {"version": version, "internal": torch.tensor(internal, dtype=torch.int64), "gauss": gauss},
        "numpy": {"keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos), "has_gauss": int(has_gauss), "cached": float(cached)},
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None,
    }


def _set_rng_state(rng: Mapping[str, Any]) -> None:
    py, npy = rng["python"], rng["numpy"]
    random.setstate((py["version"], tuple(int(x) for x in py["internal"].tolist()), py["gauss"]))
    keys = np.asarray(npy["keys"].numpy(), dtype=np.uint32)
    np.random.set_state(("MT19937", keys, npy["pos"], npy["has_gauss"], npy["cached"]))
    torch.set_rng_state(rng["torch"])
    if rng.get("cuda") is not None and torch.cuda.is_available() and torch.cuda.device_count() == len(rng["cuda"]):
        torch.cuda.set_rng_state_all(rng["cuda"])


__all__ = ["Trainer", "TrainerHookBase"]
