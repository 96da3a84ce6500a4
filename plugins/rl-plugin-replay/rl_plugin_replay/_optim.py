"""rl-core's optimizer step, with Adam's fused kernel called directly.

Off-policy losses take one optimizer step per sampled minibatch, thousands per minute, on small
networks; there ``torch.optim.Optimizer.step``'s Python around the fused Adam kernel (step hooks,
profiler records, regrouping every tensor by device each call) costs as much as the kernel.
:class:`FusedAdamStep` does what the kernel's own ``rl_optimizer`` does (sum the ``loss*``
entries, back-propagate, clip the gradients by norm or by value, step the optimizer) with the
same tensors and the same arithmetic, so the parameters and the optimizer's state come out
bit-identical; it only skips that Python. It declines (returns ``None``, and the kernel's step
runs) for any optimizer but a fused Adam or AdamW, which is what the ``optim`` section builds
for ``adam`` and ``adamw``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

#: Adam options the direct call supports (the others make it decline)
_PLAIN = {"amsgrad": False, "maximize": False, "capturable": False, "differentiable": False, "fused": True}


class FusedAdamStep:
    """The kernel's optimizer step for a fused Adam/AdamW, calling ``torch._fused_adam_`` directly.

    Use it from a loss module's ``rl_optimizer`` hook::

        @hookimpl
        def rl_optimizer(self, trainer, losses):
            return self.optimizer_step(trainer, losses)   # None: the kernel's own step runs
    """

    def __init__(self) -> None:
        self._optimizer: Any = None
        self._params: list[nn.Parameter] = []

    def _supported(self, optimizer: Any) -> bool:
        if not isinstance(optimizer, torch.optim.Adam):
            return False
        for group in optimizer.param_groups:
            if any(group.get(key, default) != default for key, default in _PLAIN.items()) or isinstance(group["lr"], torch.Tensor):
                return False
        params = [p for group in optimizer.param_groups for p in group["params"]]
        return len({(p.device, p.dtype) for p in params}) == 1

    def __call__(self, trainer: Any, losses: Mapping[str, torch.Tensor]) -> dict[str, Any] | None:
        """One optimizer step on the sum of the ``loss*`` entries of ``losses``; ``None`` for an optimizer it does not handle.

        :return: ``{"grad_norm": ...}`` when gradients are clipped by norm, else ``{}`` (as the kernel's step).
        """
        optimizer = trainer.optimizer
        if optimizer is not self._optimizer:
            self._optimizer = optimizer
            self._params = [p for group in optimizer.param_groups for p in group["params"]] if self._supported(optimizer) else []
        if not self._params:
            return None
        terms = [value for key, value in losses.items() if key.startswith("loss")]
        if not terms:
            raise ValueError(f"the loss module returned no 'loss*' entry to optimise (got {', '.join(losses.keys())})")
        loss = sum(terms[1:], terms[0])
        for param in self._params:
            param.grad = None
        profiler = trainer.profiler  # (the kernel's step times the same two rows)
        tic = time.perf_counter() if profiler is not None else 0.0
        loss.backward()
        if profiler is not None:
            profiler.add("backward", time.perf_counter() - tic)
        stats: dict[str, Any] = {}
        if trainer.clip_norm is not None:
            grads = [p.grad for p in self._params if p.grad is not None]
            if trainer.clip_grad_norm:
                stats["grad_norm"] = _clip_grad_norm(grads, trainer.clip_norm)
            else:
                nn.utils.clip_grad_value_(self._params, trainer.clip_norm)
        if profiler is None:
            self._step(optimizer)
        else:
            with profiler.timed("optimizer step"):
                self._step(optimizer)
        return stats

    @staticmethod
    def _step(optimizer: torch.optim.Adam) -> None:
        """``optimizer.step()``: each parameter group's fused update, the state created by torch at the first step."""
        state = optimizer.state
        for group in optimizer.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            if any(p not in state for p in params):  # the first step: let torch create the state
                optimizer.step()
                return
        for group in optimizer.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            states = [state[p] for p in params]
            steps = [s["step"] for s in states]
            beta1, beta2 = group["betas"]
            torch._foreach_add_(steps, 1)
            fused = torch._fused_adamw_ if group.get("decoupled_weight_decay", False) else torch._fused_adam_
            fused(
                params,
                [p.grad for p in params],
                [s["exp_avg"] for s in states],
                [s["exp_avg_sq"] for s in states],
                [],
                steps,
                amsgrad=False,
                lr=group["lr"],
                beta1=beta1,
                beta2=beta2,
                weight_decay=group["weight_decay"],
                eps=group["eps"],
                maximize=False,
                grad_scale=None,
                found_inf=None,
            )


def _clip_grad_norm(grads: list[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Scale ``grads`` in place so that their global 2-norm is at most ``max_norm`` (rl-core's clipping); the norm before."""
    if not grads:
        return torch.zeros(())
    norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    torch._foreach_mul_(grads, torch.clamp(max_norm / (norm + 1e-6), max=1.0))
    return norm
