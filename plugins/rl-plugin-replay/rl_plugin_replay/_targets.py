"""Target networks and their updaters, run after optimizer steps (TorchRL's ``HardUpdate``/``SoftUpdate``).

A loss module with target networks says which they are through one method::

    def target_networks(self) -> list[tuple[nn.Module, nn.Module]]:
        return [(self.qnet, self.target_qnet)]          # (online, target) pairs

(:class:`rlcore.TargetNetworks`); :func:`make_target` makes the frozen copy. After every ``interval``-th
optimizer step an updater sets, for every parameter and floating-point buffer of the targets::

    hard:  target = online
    soft:  target = (1 - tau) * target + tau * online    (Polyak averaging)

with torch's multi-tensor kernels (one call for all tensors, not a loop over them).
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar

import torch
from torch import nn

from rlcore import ConfigError, TargetNetworks, TrainerHookBase

from ._hook import OffPolicyLoss

M = TypeVar("M", bound=nn.Module)


def make_target(module: M) -> M:
    """A frozen copy of ``module``: its parameters become buffers of the same names.

    The copy computes what ``module`` computes (its ``state_dict`` has the same keys), but no
    optimizer built from ``loss_module.parameters()`` sees its tensors, and no gradient reaches them.
    A module whose forward reads ``self._parameters`` directly should fall back to
    ``self._buffers`` when it has no parameters (the first-party networks do).
    """
    target = copy.deepcopy(module)
    for child in target.modules():
        params, buffers = dict(child._parameters), dict(child._buffers)
        child._parameters.clear()
        child._buffers.clear()
        for name, param in params.items():  # the parameters first, so that state_dict keeps its order
            child.register_buffer(name, None if param is None else param.detach().requires_grad_(False))
        for name, buffer in buffers.items():
            child.register_buffer(name, buffer, persistent=name not in child._non_persistent_buffers_set)
    return target


def _named_tensors(module: nn.Module) -> dict[str, torch.Tensor]:
    """Parameters and floating-point buffers by name (a target holds its online network's parameters as buffers)."""
    found: dict[str, torch.Tensor] = dict(module.named_parameters())
    found.update({name: b for name, b in module.named_buffers() if b.is_floating_point()})
    return found


def _tensors(loss_module: Any) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """The online and target tensors of ``loss_module``'s target networks, paired by name."""
    if not isinstance(loss_module, TargetNetworks):
        raise TypeError(f"{type(loss_module).__name__} has no target_networks() method: it declares no target networks")
    online: list[torch.Tensor] = []
    target: list[torch.Tensor] = []
    for source, copy_ in loss_module.target_networks():
        a, b = _named_tensors(source), _named_tensors(copy_)
        if a.keys() != b.keys() or any(a[k].shape != b[k].shape for k in a):
            raise ValueError(f"target network of {type(source).__name__} does not match its online network")
        online += [a[k].detach() for k in a]
        target += [b[k].detach() for k in a]
    return online, target


class _TargetUpdate(TrainerHookBase):
    """Counts optimizer steps and updates the targets every ``interval`` of them."""

    def __init__(self, loss_module: Any = None, interval: int = 1) -> None:
        if interval < 1:
            raise ValueError(f"interval must be >= 1, got {interval}")
        self.interval = interval
        self.steps = 0
        self._loss_module: Any = None
        self._online: list[torch.Tensor] = []
        self._target: list[torch.Tensor] = []
        if loss_module is not None:
            self.attach(loss_module)

    def attach(self, loss_module: Any) -> None:
        """Update the target networks of ``loss_module`` (see :class:`TargetNetworks`).

        Its tensors are looked up at the first update, so that moving the module (``.to(device)``) after this is fine.
        """
        _tensors(loss_module)  # fail now for a module without target networks
        self._loss_module, self._online, self._target = loss_module, [], []

    @property
    def loss_module(self) -> Any:
        """The loss module whose target networks this updates (``None`` until it is given one, or registered)."""
        return self._loss_module

    @torch.no_grad()
    def step(self) -> None:
        """One optimizer step done: update the targets if it is the ``interval``-th since the last update."""
        self.steps += 1
        if self.steps % self.interval == 0 and self._loss_module is not None:
            if not self._target:
                self._online, self._target = _tensors(self._loss_module)
            self._update()

    def _update(self) -> None:
        raise NotImplementedError

    @torch.no_grad()
    def init_(self) -> None:
        """Copy the online networks into the targets now (TorchRL's ``init_``; the targets start as copies already).

        :raises RuntimeError: before the updater has a loss module (given, or its trainer's at :meth:`register`).
        """
        if self._loss_module is None:
            raise RuntimeError("init_() needs the loss module: give it to the updater, or register the updater first")
        online, target = _tensors(self._loss_module)
        torch._foreach_copy_(target, online)

    def register(self, trainer: Any, name: str = "target_updater") -> None:
        """Update ``trainer.loss_module``'s targets at ``post_optim``; checkpoint the step count under ``name``.

        :raises rlcore.ConfigError: when the loss module declares no target networks (an on-policy algorithm's).
        """
        if self._loss_module is None:
            if not isinstance(trainer.loss_module, TargetNetworks):
                algo = trainer.config.get("algo", {}).get("name") if trainer.config else None
                raise ConfigError(
                    f"hooks.{name}: the loss module of {algo or type(trainer.loss_module).__name__} has no target networks to update "
                    "(it has no target_networks(); dqn, sac, td3 and ddpg have)"
                )
            self.attach(trainer.loss_module)
        if isinstance(self._loss_module, OffPolicyLoss):
            self._loss_module.target_hook = self
        trainer.register_op("post_optim", self.step)
        trainer.register_module(name, self)

    def state_dict(self) -> dict[str, Any]:
        return {"steps": self.steps}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.steps = int(state_dict["steps"])


class HardUpdate(_TargetUpdate):
    """Copy the online networks into the targets every ``interval`` optimizer steps.

    :param loss_module: the loss module with target networks; default the trainer's, at :meth:`register`.
    :param interval: optimizer steps between two copies.
    :param value_network_update_interval: TorchRL's name of ``interval``, which it replaces.
    """

    def __init__(self, loss_module: Any = None, interval: int | None = None, *, value_network_update_interval: int | None = None) -> None:
        if interval is not None and value_network_update_interval is not None:
            raise ValueError("give interval or value_network_update_interval (its TorchRL name), not both")
        given = interval if interval is not None else value_network_update_interval
        super().__init__(loss_module, 1 if given is None else given)

    def _update(self) -> None:
        torch._foreach_copy_(self._target, self._online)


class SoftUpdate(_TargetUpdate):
    """Move the targets a fraction ``tau`` towards the online networks every ``interval`` optimizer steps.

    :param loss_module: the loss module with target networks; default the trainer's, at :meth:`register`.
    :param tau: the fraction (``1`` is a hard update).
    :param interval: optimizer steps between two updates.
    :param eps: TorchRL's other way to give it: the fraction the targets keep, ``1 - tau``.
    """

    def __init__(self, loss_module: Any = None, tau: float | None = None, interval: int = 1, *, eps: float | None = None) -> None:
        if eps is not None and tau is not None:
            raise ValueError("give tau or eps (= 1 - tau), not both")
        tau = 1 - eps if eps is not None else 0.005 if tau is None else tau
        if not 0 < tau <= 1:
            raise ValueError(f"tau must be in (0, 1], got {tau}")
        self.tau = tau
        super().__init__(loss_module, interval)

    def _update(self) -> None:
        torch._foreach_lerp_(self._target, self._online, self.tau)
