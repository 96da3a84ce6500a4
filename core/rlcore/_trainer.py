"""The trainer: TorchRL's loop, with every hook point dispatched through pluggy."""

from __future__ import annotations

import abc
import random
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ._checkpoint import CheckpointBackend
from ._logger import Logger
from ._markers import hookimpl
from ._plugins import PluginManager, get_plugin_manager

#: TorchRL's hook point names, as ``register_op`` takes them, with how their ops are called.
_KIND = {
    "batch_process": "data",
    "pre_steps_log": "logging",
    "pre_optim_steps": "operation",
    "process_optim_batch": "data",
    "post_loss": "post_loss",
    "optimizer": "optimizer",
    "post_optim": "operation",
    "post_optim_log": "logging",
    "post_steps": "operation",
    "post_steps_log": "logging",
}
OPS = tuple(_KIND)
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


class _Ops:
    """The ops given to ``register_op`` for one hook point, run in registration order (TorchRL's)."""

    def __init__(self, dest: str) -> None:
        self.ops: list[tuple[Callable[..., Any], dict[str, Any]]] = []
        impls = {  # plain functions with the hook's argument names, as pluggy reads them
            "data": lambda batch: self._data(batch),
            "logging": lambda batch: self._logging(batch),
            "post_loss": lambda batch: self._post_loss(batch),
            "optimizer": lambda losses: self._optimizer(losses),
            "operation": lambda: self._operation(),
        }
        setattr(self, f"rl_{dest}", hookimpl(impls[_KIND[dest]]))

    def _data(self, batch: Any) -> Any:
        for op, kwargs in self.ops:
            out = op(batch, **kwargs)
            batch = batch if out is None else out
        return batch

    def _operation(self) -> None:
        for op, kwargs in self.ops:
            op(**kwargs)

    def _post_loss(self, batch: Any) -> None:
        for op, kwargs in self.ops:
            op(batch, **kwargs)

    def _optimizer(self, losses: Any) -> Any:
        result = None
        for op, kwargs in self.ops:
            out = op(losses, **kwargs)
            if result is None:
                result = out
            elif out is not None:
                result.update(out)
        return result

    def _logging(self, batch: Any) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for op, kwargs in self.ops:
            merged.update(op(batch, **kwargs) or {})
        return merged


class _Core:
    """The trainer's own hook implementations: the default optimizer step and the standard metrics."""

    def __init__(self) -> None:
        self._tic = time.perf_counter()
        self._frames_at_tic = 0

    @hookimpl
    def rl_setup(self, trainer: Trainer) -> None:
        self._tic, self._frames_at_tic = time.perf_counter(), trainer.collected_frames

    @hookimpl(trylast=True)
    def rl_optimizer(self, trainer: Trainer, losses: Mapping[str, torch.Tensor]) -> dict[str, Any] | None:
        optimizer = trainer.optimizer
        if optimizer is None:
            return None
        terms = [value for key, value in losses.items() if key.startswith("loss")]
        if not terms:
            raise ValueError(f"the loss module returned no 'loss*' entry to optimise (got {', '.join(losses.keys())})")
        loss = sum(terms[1:], terms[0])
        params = [p for group in optimizer.param_groups for p in group["params"]]
        for param in params:  # optimizer.zero_grad(set_to_none=True), without its per-call overhead
            param.grad = None
        loss.backward()
        stats: dict[str, Any] = {}
        if trainer.clip_norm is not None:
            if trainer.clip_grad_norm:
                stats["grad_norm"] = clip_grad_norm(params, trainer.clip_norm)
            else:
                nn.utils.clip_grad_value_(params, trainer.clip_norm)
        optimizer.step()
        return stats

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
            values["optim/lr"] = float(trainer.optimizer.param_groups[0]["lr"])
        frames = trainer.collected_frames - self._frames_at_tic
        values["perf/fps"] = frames / max(now - self._tic, 1e-9)
        self._tic, self._frames_at_tic = now, trainer.collected_frames
        return values


class Trainer:
    """Collects batches, runs the optimisation steps and calls every hook point through pluggy.

    The parameters carry TorchRL's names. The plugins of ``plugin_manager`` (by default every
    installed plugin, see ``RLCORE_PLUGINS``) take part in the loop; so does ``loss_module`` when
    it has ``@rlcore.hookimpl`` methods.

    :param collector: an iterable of TensorDict batches ``[envs, time]`` (e.g. :class:`rlcore.Collector`).
    :param loss_module: returns a TensorDict of losses from a sub-batch.
    :param optimizer: steps the loss module's parameters; ``None`` leaves the step to hooks.
    :param total_frames: stop once this many frames are collected.
    :param frame_skip: frames each collected step stands for.
    :param optim_steps_per_batch: optimisation steps per batch.
    :param clip_grad_norm: clip gradients by norm (``True``) or by value (``False``).
    :param clip_norm: the clipping threshold; ``None`` disables clipping.
    :param progress_bar: show a progress bar when stderr is a terminal.
    :param seed: seeds python, numpy, torch and the collector's envs.
    :param save_trainer_interval: frames between checkpoints.
    :param log_interval: frames between two logged values of the same metric.
    :param loggers: loggers that receive every logged value.
    :param checkpoint: the checkpoint backend; ``None`` disables checkpoints.
    :param plugin_manager: the plugins of this trainer (the trainer works on a copy, which also holds
        what it registers itself); ``None`` loads the installed ones.
    :param run_dir: the run directory, if any.
    :param config: the resolved config the run was built from, if any.
    :param device: where the loss module and the optimisation run (hooks put their tensors there);
        default the device of ``loss_module``'s first parameter, else the CPU.
    """

    def __init__(
        self,
        *,
        collector: Iterable[Any],
        loss_module: nn.Module,
        optimizer: torch.optim.Optimizer | None = None,
        total_frames: int,
        frame_skip: int = 1,
        optim_steps_per_batch: int = 1,
        clip_grad_norm: bool = True,
        clip_norm: float | None = None,
        progress_bar: bool = True,
        seed: int | None = None,
        save_trainer_interval: int = 10000,
        log_interval: int = 10000,
        loggers: Iterable[Logger] | Logger | None = None,
        checkpoint: CheckpointBackend | None = None,
        plugin_manager: PluginManager | None = None,
        run_dir: str | Path | None = None,
        config: Mapping[str, Any] | None = None,
        device: str | torch.device | None = None,
    ) -> None:
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
        self.loggers: list[Logger] = [loggers] if isinstance(loggers, Logger) else list(loggers or [])
        self.checkpoint = checkpoint
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.config = dict(config) if config is not None else None
        first = next(iter(loss_module.parameters()), None) if isinstance(loss_module, nn.Module) else None
        self.device = torch.device(device) if device is not None else first.device if first is not None else torch.device("cpu")
        self.plugin_manager = plugin_manager.copy() if plugin_manager is not None else get_plugin_manager()

        self.collected_frames = 0
        self.batch_frames = 0
        self.batches = 0
        self.optim_steps = 0
        self.optim_step_in_batch = 0
        self.make_env: Callable[..., Any] | None = None  # set by build_trainer: a fresh env like the training one

        self._modules: dict[str, Any] = {}
        self._ops: dict[str, _Ops] = {}
        self._last_log: dict[str, int] = {}
        self._last_save = 0
        self._stop = False
        self._stop_optim = False
        self._step_stats: dict[str, list[Any]] = {}
        self._pbar: Any = None
        self._pbar_values: dict[str, float] = {}

        self.register_plugin(_Core(), "rlcore.trainer")
        if any(self.plugin_manager.parse_hookimpl_opts(loss_module, n) for n in dir(type(loss_module))):
            self.register_plugin(loss_module, "rlcore.loss_module")
        if seed is not None:
            self.set_seed(seed)

    # ------------------------------------------------------------------ TorchRL-style registration
    @property
    def policy(self) -> Any:
        """The collector's policy."""
        return getattr(self.collector, "policy", None)

    def register_op(self, dest: str, op: Callable[..., Any], **kwargs: Any) -> None:
        """Call ``op`` at hook point ``dest``, after the ops registered there before it (TorchRL's ``register_op``).

        :param dest: one of ``batch_process``, ``pre_steps_log``, ..., ``post_steps_log``.
        :param op: called as TorchRL calls it: ``op(batch, **kwargs)`` at data, logging and
            ``post_loss`` points, ``op(losses, **kwargs)`` at ``optimizer``, ``op(**kwargs)`` otherwise.
        :param kwargs: extra keyword arguments for ``op``.
        """
        if dest not in OPS:
            raise ValueError(f"unknown hook point {dest!r}; valid choices: {', '.join(OPS)}")
        if dest not in self._ops:
            self._ops[dest] = _Ops(dest)
            self.plugin_manager.add_plugin(self._ops[dest], f"rlcore.ops.{dest}")
        self._ops[dest].ops.append((op, kwargs))

    def register_module(self, module_name: str, module: Any) -> None:
        """Include ``module``'s ``state_dict`` in every checkpoint under ``module_name``."""
        if module_name in self._modules:
            raise RuntimeError(f"a module named {module_name!r} is already registered")
        self._modules[module_name] = module

    def register_plugin(self, plugin: Any, name: str | None = None) -> None:
        """Register an object with ``@rlcore.hookimpl`` methods as a plugin of this trainer only."""
        name = name or f"{type(plugin).__name__}-{id(plugin)}"
        if not self.plugin_manager.add_plugin(plugin, name):
            raise ValueError(f"plugin {name!r} is invalid: {self.plugin_manager.infos[name].status}")

    # ------------------------------------------------------------------ control
    def stop(self) -> None:
        """End training once the current batch is done (e.g. early stopping)."""
        self._stop = True

    def stop_optim_steps(self) -> None:
        """Skip the remaining optimisation steps of the current batch (e.g. KL far past its target)."""
        self._stop_optim = True

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
        """Log scalar ``values`` at the current frame count, throttled by ``log_interval``.

        :param values: ``{name: number or one-element tensor}``.
        :param log_pbar: also show them on the progress bar.
        :param force: log even within ``log_interval`` of the last value (e.g. a final evaluation).
        """
        step = self.collected_frames
        due: dict[str, float] = {}
        for key, value in values.items():
            number = _scalar(key, value)
            if number is None:
                continue
            if log_pbar:
                self._pbar_values[key] = number
            last = self._last_log.get(key)
            if force or last is None or step - last >= self.log_interval:
                self._last_log[key] = step
                due[key] = number
        if due:
            self._each_logger("log_scalars", due, step)

    def _each_logger(self, method: str, *args: Any) -> None:
        for logger in list(self.loggers):
            try:
                getattr(logger, method)(*args)
            except Exception as err:  # a logger that fails is reported once and dropped
                self.loggers.remove(logger)
                print(f"rlctl: logger {type(logger).__name__} failed and is dropped: {err}", file=sys.stderr)

    def _log_results(self, results: list[dict[str, Any] | None]) -> None:
        for result in results:
            if result:
                result = dict(result)
                pbar = bool(result.pop("log_pbar", False))
                self.log(result, log_pbar=pbar)

    def _accumulate(self, losses: Mapping[str, Any], stats: Mapping[str, Any] | None) -> None:
        """Keep this step's scalar losses and optimizer stats; :meth:`_pop_step_stats` averages them."""
        kept = self._step_stats
        for key, value in losses.items():
            if isinstance(value, torch.Tensor) and value.numel() == 1:
                name = f"loss/{key[5:]}" if key.startswith("loss_") else f"train/{key}"
                kept.setdefault(name, []).append(value.detach())
        for key, value in (stats or {}).items():
            kept.setdefault(f"optim/{key}", []).append(value.detach() if isinstance(value, torch.Tensor) else value)

    def _pop_step_stats(self) -> dict[str, float]:
        """The mean of each stat kept since the last call (one ``.tolist()``: one device sync)."""
        kept, self._step_stats = self._step_stats, {}
        if not kept:
            return {}
        means = [
            torch.stack([torch.as_tensor(v, dtype=torch.float32).reshape(()) for v in values]).mean() for values in kept.values()
        ]
        return dict(zip(kept, torch.stack(means).cpu().tolist(), strict=True))

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume: counters, loss module, optimizer, registered modules, RNG states."""
        state: dict[str, Any] = {
            "version": STATE_VERSION,
            "counters": {
                "collected_frames": self.collected_frames,
                "batches": self.batches,
                "optim_steps": self.optim_steps,
                "last_log": dict(self._last_log),
            },
            "loss_module": self.loss_module.state_dict(),
            "optimizer": self.optimizer.state_dict() if self.optimizer is not None else None,
            "modules": {name: module.state_dict() for name, module in self._modules.items()},
            "rng": _rng_state(),
        }
        if hasattr(self.collector, "state_dict"):
            state["collector"] = self.collector.state_dict()
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        counters = state["counters"]
        self.collected_frames = int(counters["collected_frames"])
        self.batches = int(counters["batches"])
        self.optim_steps = int(counters["optim_steps"])
        self._last_log = dict(counters.get("last_log", {}))
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
        return self.checkpoint.save(self.state_dict(), self.collected_frames)

    def load_from_file(self, file: str | Path | None = None) -> Path:
        """Resume from ``file``, or from the newest readable checkpoint of the backend when ``None``.

        Loggers are told (:meth:`rlcore.Logger.resume`) so that nothing logged after the checkpoint is doubled.
        """
        backend = self.checkpoint
        if backend is None:
            factory = self.plugin_manager.factory("checkpoint_backends", "torch")
            backend = factory(directory=Path(file).parent if file else Path("."), keep_last=1)
        path, state = backend.load(file)
        self.load_state_dict(state)
        self._each_logger("resume", self.collected_frames)
        return path

    # ------------------------------------------------------------------ the loop
    def train(self) -> None:
        """Run the loop until ``total_frames`` are collected or a hook calls :meth:`stop`."""
        hook = self.plugin_manager.hook
        self._open_pbar()
        try:
            hook.rl_setup(trainer=self)
            if self.collected_frames < self.total_frames:
                for batch in self.collector:
                    self._train_batch(batch)
                    if self._stop or self.collected_frames >= self.total_frames:
                        break
            self.save_trainer(force_save=True)
        except BaseException as err:
            hook.rl_exception(trainer=self, exception=err)
            raise
        finally:
            self.shutdown()

    def _train_batch(self, batch: Any) -> None:
        pm, hook = self.plugin_manager, self.plugin_manager.hook
        self.batch_frames = batch.numel() * self.frame_skip
        self.collected_frames += self.batch_frames
        batch = pm.call_chain("rl_batch_process", "batch", trainer=self, batch=batch)
        self._log_results(hook.rl_pre_steps_log(trainer=self, batch=batch))
        hook.rl_pre_optim_steps(trainer=self)
        self._stop_optim = False
        for j in range(self.optim_steps_per_batch):
            self.optim_step_in_batch = j
            sub = pm.call_chain("rl_process_optim_batch", "batch", trainer=self, batch=batch)
            losses = self.loss_module(sub)
            hook.rl_post_loss(trainer=self, batch=sub, losses=losses)
            stats = hook.rl_optimizer(trainer=self, losses=losses)
            self.optim_steps += 1
            self._accumulate(losses, stats)
            hook.rl_post_optim(trainer=self)
            self._log_results(hook.rl_post_optim_log(trainer=self, batch=sub))
            if self._stop_optim:
                break
        hook.rl_post_steps(trainer=self)
        self._log_results(hook.rl_post_steps_log(trainer=self, batch=batch))
        self.batches += 1
        self._update_pbar()
        self.save_trainer()

    def shutdown(self) -> None:
        """Call ``rl_shutdown``, close the progress bar, flush and close the loggers, stop the collector."""
        try:
            self.plugin_manager.hook.rl_shutdown(trainer=self)
        finally:
            if self._pbar is not None:
                self._pbar.close()
                self._pbar = None
            self._each_logger("close")
            if hasattr(self.collector, "shutdown"):
                self.collector.shutdown()

    def _open_pbar(self) -> None:
        if not self.progress_bar or not sys.stderr.isatty():
            return
        from tqdm import tqdm

        self._pbar = tqdm(total=self.total_frames, initial=self.collected_frames, unit="f", dynamic_ncols=True)

    def _update_pbar(self) -> None:
        if self._pbar is None:
            return
        self._pbar.update(min(self.collected_frames, self.total_frames) - self._pbar.n)
        if self._pbar_values:
            self._pbar.set_postfix({k.split("/")[-1]: f"{v:.4g}" for k, v in self._pbar_values.items()}, refresh=False)


def clip_grad_norm(params: Iterable[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Scale the gradients of ``params`` so that their global 2-norm is at most ``max_norm``.

    ``nn.utils.clip_grad_norm_``'s math, with torch's multi-tensor kernels for gradients on one
    device: torch's own function uses them on GPU only and loops over tensors in Python on CPU,
    which, for the small networks of RL, costs more than the backward pass of some layers.

    :param params: the parameters whose ``.grad`` to scale.
    :param max_norm: the largest global norm.
    :return: the global norm before clipping.
    """
    params = list(params)
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return torch.zeros(())
    if len({g.device for g in grads}) > 1:
        return nn.utils.clip_grad_norm_(params, max_norm)
    norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    torch._foreach_mul_(grads, torch.clamp(max_norm / (norm + 1e-6), max=1.0))
    return norm


def _scalar(key: str, value: Any) -> float | None:
    if isinstance(value, (bool, int, float, np.number)):
        return float(value)
    if isinstance(value, torch.Tensor) and value.numel() == 1 or isinstance(value, np.ndarray) and value.size == 1:
        return float(value.item())
    warnings.warn(f"not logging {key!r}: only scalars are logged, got {type(value).__name__}", stacklevel=3)
    return None


def _rng_state() -> dict[str, Any]:
    """Python, numpy and torch RNG states in types that ``torch.load(weights_only=True)`` accepts."""
    version, internal, gauss = random.getstate()
    _, keys, pos, has_gauss, cached = np.random.get_state()
    return {
        "python": {"version": version, "internal": torch.tensor(internal, dtype=torch.int64), "gauss": gauss},
        "numpy": {"keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos), "has_gauss": int(has_gauss), "cached": float(cached)},
        "torch": torch.get_rng_state(),
    }


def _set_rng_state(rng: Mapping[str, Any]) -> None:
    py, npy = rng["python"], rng["numpy"]
    random.setstate((py["version"], tuple(int(x) for x in py["internal"].tolist()), py["gauss"]))
    keys = np.asarray(npy["keys"].numpy(), dtype=np.uint32)
    np.random.set_state(("MT19937", keys, npy["pos"], npy["has_gauss"], npy["cached"]))
    torch.set_rng_state(rng["torch"])


__all__ = ["Trainer", "TrainerHookBase", "OPS"]
