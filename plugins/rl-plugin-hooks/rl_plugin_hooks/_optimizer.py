"""``OptimizerHook``: an optimizer stepped from some loss components only; ``OptimizerGroups``, its config form."""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from rlcore import ConfigError, TrainerHookBase, clip_grad_norm, make_optimizer, shown

from ._options import OptimizerGroupOptions, OptimizerGroupsOptions, OptimizerHookOptions

if TYPE_CHECKING:
    from rlcore import Trainer

#: the optimizer hooks registered with each trainer, so that each gets its index (TorchRL's ``grad_norm_<index>``)
_REGISTERED: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


class OptimizerHook(OptimizerHookOptions, TrainerHookBase):
    """Steps ``optimizer`` from ``loss_components`` only (TorchRL's ``OptimizerHook``), at the ``optimizer`` point.

    Several hooks step several optimizers, each from its own components: an actor's and a critic's with
    their own learning rates. Each takes the gradients of the sum of its components with respect to its
    optimizer's parameters alone (``torch.autograd.grad``, the graph kept for the next hook), so a
    parameter group moves only with its own components even when another component reaches it too
    (an actor's loss through the critic). Each clips its own parameters' gradients: by norm, or by value
    with ``clip_grad_norm=False``, at ``clip_norm`` (the trainer's settings unless the hook has its own, as
    TorchRL's trainer passes its own). Each returns ``{"grad_norm_<index>": norm}`` (logged as
    ``optim/grad_norm_<index>``), which replaces the trainer's own optimizer step (the ``optimizer`` point's
    first result wins): pass ``optimizer=None`` to the trainer, as TorchRL's multi-optimizer recipe does.

    Its state is the optimizer's (moments, step counts), saved in checkpoints. The options are those of
    :class:`~rl_plugin_hooks.OptimizerHookOptions`.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.optimizer, torch.optim.Optimizer):
            raise ConfigError(f"{self.config_key}.optimizer: expected a torch.optim.Optimizer, got {type(self.optimizer).__name__}")
        if self.loss_components is not None and not self.loss_components:
            raise ConfigError(f"{self.config_key}.loss_components: cannot be empty; None steps from every loss* component")
        #: its position among the optimizer hooks of its trainer (``grad_norm_<index>``)
        self.index = 0
        self._trainer: Callable[[], Trainer | None] = lambda: None
        #: optimisation steps it may skip before its first step (a loss that gives its components only every few steps,
        #: as TD3 its ``loss_actor``) until it is refused for components its loss module never gives (a misspelt name)
        self.patience = 100
        #: the config key its messages name (a group's, ``hooks.optimizer_hook.groups.<group>``, for a group's hook)
        self.where = self.config_key
        self._stepped = False
        self._skipped = 0
        self._skipped_on: list[str] = []  # the losses of the last step it skipped, none of them its own

    def __call__(
        self,
        losses_td: Mapping[str, torch.Tensor],
        clip_grad_norm: bool | None = None,
        clip_norm: float | None = None,
        index: int | None = None,
    ) -> dict[str, torch.Tensor]:
        """One step of the optimizer from its components of ``losses_td``.

        :param losses_td: the loss module's output.
        :param clip_grad_norm: TorchRL's argument: by norm or by value; default the hook's, else its trainer's.
        :param clip_norm: TorchRL's argument: the threshold; default the hook's, else its trainer's, else no clipping.
        :param index: TorchRL's argument: names the logged norm; default the hook's :attr:`index`.
        :return: ``{"grad_norm_<index>": the norm of its gradients before clipping}``; nothing when the losses
            hold none of its components (a step it skips: TD3's between two actor updates).
        """
        keys = list(losses_td.keys())
        chosen = [k for k in keys if (k in self.loss_components if self.loss_components is not None else k.startswith("loss"))]
        if not chosen:
            self._skipped, self._skipped_on = self._skipped + 1, keys
            return {}
        self._stepped = True
        loss = sum((losses_td[k] for k in chosen[1:]), losses_td[chosen[0]])
        params = [p for group in self.optimizer.param_groups for p in group["params"] if p.requires_grad]
        if not loss.requires_grad:
            raise ValueError(f"OptimizerHook: the loss components {chosen} do not depend on any parameter that requires a gradient")
        grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
        for param, grad in zip(params, grads, strict=True):
            param.grad = grad
        trainer = self._trainer()
        if clip_grad_norm is None:
            clip_grad_norm = self.clip_grad_norm if self.clip_grad_norm is not None else getattr(trainer, "clip_grad_norm", True)
        if clip_norm is None:
            clip_norm = self.clip_norm if self.clip_norm is not None else getattr(trainer, "clip_norm", None)
        norm = _clip(params, bool(clip_grad_norm), clip_norm)
        self.optimizer.step()
        for param in params:  # optimizer.zero_grad(set_to_none=True)
            param.grad = None
        return {f"grad_norm_{self.index if index is None else index}": norm}

    def state_dict(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state_dict["optimizer"])

    def register(self, trainer: Trainer, name: str = "optimizer") -> None:
        """Step at the ``optimizer`` point of ``trainer``, after the optimizer hooks registered before it.

        :param trainer: the trainer, whose ``clip_grad_norm`` and ``clip_norm`` apply unless the hook has its own.
        :param name: the name of its state in checkpoints (unique: two hooks need two names).
        """
        trainer.register_module(name, self)
        self.index = _REGISTERED.get(trainer, 0)
        _REGISTERED[trainer] = self.index + 1
        self._trainer = weakref.ref(trainer)
        trainer.register_op("optimizer", self)
        trainer.register_op("post_steps", self._check_stepped)

    def _check_stepped(self) -> None:
        """After a batch: refuse a hook that has skipped :attr:`patience` steps and made none (its components are none of the losses')."""
        if not self._stepped and self._skipped >= self.patience:
            wanted = self.loss_components or ["loss*"]
            raise ConfigError(
                f"{self.where}.loss_components: none of {wanted} came in {self._skipped} optimisation steps "
                f"(the losses are {', '.join(self._skipped_on)})"
            )


def _clip(params: list[torch.Tensor], by_norm: bool, clip_norm: float | None) -> torch.Tensor:
    """Clip the gradients of ``params`` as TorchRL's optimizer hook does (by their global norm, or each value);
    return their norm before clipping."""
    norm = clip_grad_norm(params, clip_norm if by_norm else None)
    if not by_norm and clip_norm is not None:
        nn.utils.clip_grad_value_(params, clip_norm)
    return norm


class OptimizerGroups(OptimizerGroupsOptions, TrainerHookBase):
    """The config's ``optimizer_hook``: one :class:`OptimizerHook` per group, over the parameters its
    ``params`` prefixes name, stepped from its ``loss_components``, with its own optimizer options
    (the ``optim`` section's where it sets none). For example, PPO's actor and critic::

        hooks:
          optimizer_hook:
            groups:
              actor: {params: [policy.actor_net], loss_components: [loss_policy, loss_entropy], lr: 3.0e-4}
              critic: {params: [policy.critic_net], loss_components: [loss_value], lr: 1.0e-3}

    The groups' hooks replace the trainer's own optimizer step (``optim.lr_schedule`` moves only the
    trainer's own optimizer). Each group's state is saved as ``<name>.<group>``. The options are those of
    :class:`~rl_plugin_hooks.OptimizerGroupsOptions` and :class:`~rl_plugin_hooks.OptimizerGroupOptions`.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        #: the hook of each group, once registered
        self.hooks: dict[str, OptimizerHook] = {}
        self._covered_checked = False

    def register(self, trainer: Trainer, name: str = "optimizer_hook") -> None:
        """Build each group's optimizer over the loss module's parameters and register its hook.

        :param trainer: the trainer whose loss module's parameters are optimised.
        :param name: the prefix of the groups' names in checkpoints.
        :raises ConfigError: for a ``params`` prefix that names no parameter, or an optimizer option set nowhere.
        """
        named = dict(trainer.loss_module.named_parameters())
        optim = dict((getattr(trainer, "config", None) or {}).get("optim", {}))
        for group, options in self.group_options.items():
            key = f"{self.config_key}.groups.{group}"
            params = _select(named, options.params, f"{key}.params")
            optimizer = _make_optimizer(options, optim, params, key)
            hook = OptimizerHook(optimizer, options.loss_components, clip_grad_norm=options.clip_grad_norm, clip_norm=options.clip_norm)
            hook.where = key
            hook.register(trainer, f"{name}.{group}")
            self.hooks[group] = hook
        trainer.register_op("optimizer", self._check_covered)

    def _check_covered(self, losses: Mapping[str, torch.Tensor]) -> None:
        """Say once, at the first step, which ``loss*`` components of the loss module no group optimises (they would
        never move their parameters: SAC's ``loss_alpha`` without a group for ``log_alpha``)."""
        if self._covered_checked:
            return
        self._covered_checked = True
        named = [options.loss_components for options in self.group_options.values()]
        if any(components is None for components in named):  # a group that takes every loss* component
            return
        left = sorted(k for k in losses.keys() if k.startswith("loss") and not any(k in components for components in named if components))
        if left:
            warnings.warn(
                f"{self.config_key}.groups: no group's loss_components names {', '.join(left)}: "
                "the parameters only they move stay as they are (and optim.lr_schedule moves no group)",
                stacklevel=2,
            )

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        pass


def _select(named: Mapping[str, nn.Parameter], prefixes: list[str] | None, key: str) -> list[nn.Parameter]:
    """The parameters whose names are one of ``prefixes`` or start with one and a dot (all of them for ``None``)."""
    if prefixes is None:
        return list(named.values())
    chosen: dict[str, nn.Parameter] = {}
    for prefix in prefixes:
        found = {n: p for n, p in named.items() if n == prefix or n.startswith(prefix + ".")}
        if not found:
            modules = sorted({n.rsplit(".", 1)[0] for n in named if "." in n})
            raise ConfigError(f"{key}: {shown(prefix)} names no parameter of the loss module (valid choices: {', '.join(modules)})")
        chosen.update(found)
    return list(chosen.values())


def _make_optimizer(options: OptimizerGroupOptions, optim: Mapping[str, Any], params: list[nn.Parameter], key: str) -> torch.optim.Optimizer:
    """An optimizer from a group's options, the ``optim`` section filling in what the group leaves ``null``."""

    def option(name: str) -> Any:
        value = getattr(options, name)
        value = optim.get(name) if value is None else value
        if value is None:
            raise ConfigError(f"{key}.{name}: required (the trainer has no optim section to take it from)")
        return value

    return make_optimizer({name: option(name) for name in ("name", "lr", "eps", "weight_decay")}, params)


__all__ = ["OptimizerGroups", "OptimizerHook"]
