"""``optimizer.step()`` for the kernel's ``rl_optimizer``, with Adam's fused kernel called directly.

The small networks of RL take thousands of optimizer steps a minute, and there
``torch.optim.Optimizer.step``'s Python around the fused Adam kernel (step hooks, profiler records,
regrouping every tensor by device at each call) costs as much as the kernel. :func:`optimizer_step`
calls the kernel with the same tensors and arguments, so the parameters and the optimizer's state
come out bit-identical. It does so for a fused Adam or AdamW with plain options, which is what the
``optim`` section builds for ``adam`` and ``adamw``, while nothing hooks or wraps its ``step`` (an LR
scheduler of ``torch.optim.lr_scheduler`` wraps it); any other optimizer steps as usual.
"""

from __future__ import annotations

import weakref

import torch
from torch.optim.optimizer import _global_optimizer_post_hooks, _global_optimizer_pre_hooks

#: Adam options the direct call supports (any other value: the optimizer steps as usual)
_PLAIN = {"amsgrad": False, "maximize": False, "capturable": False, "differentiable": False, "fused": True}
_plain_options: weakref.WeakKeyDictionary[torch.optim.Optimizer, bool] = weakref.WeakKeyDictionary()


def optimizer_step(optimizer: torch.optim.Optimizer) -> None:
    """``optimizer.step()``: for a plain fused Adam or AdamW, each parameter group's fused update called directly.

    :param optimizer: the run's optimizer, its gradients computed.
    """
    if not _direct(optimizer):
        optimizer.step()
        return
    state = optimizer.state
    groups = [(group, [p for p in group["params"] if p.grad is not None]) for group in optimizer.param_groups]
    if any(p not in state for _, params in groups for p in params):  # the first step: torch creates the state
        optimizer.step()
        return
    for group, params in groups:
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


def _direct(optimizer: torch.optim.Optimizer) -> bool:
    """Whether the fused kernel may be called for ``optimizer`` now: plain options, nothing hooked to or wrapping its step."""
    hooked = optimizer._optimizer_step_pre_hooks or optimizer._optimizer_step_post_hooks
    if hooked or _global_optimizer_pre_hooks or _global_optimizer_post_hooks or "step" in vars(optimizer):
        return False
    plain = _plain_options.get(optimizer)
    if plain is None:
        plain = _plain_options[optimizer] = _has_plain_options(optimizer)
    return plain


def _has_plain_options(optimizer: torch.optim.Optimizer) -> bool:
    if not isinstance(optimizer, torch.optim.Adam):  # (AdamW is an Adam)
        return False
    for group in optimizer.param_groups:
        if any(group.get(key, default) != default for key, default in _PLAIN.items()) or isinstance(group["lr"], torch.Tensor):
            return False
    params = [p for group in optimizer.param_groups for p in group["params"]]
    return len({(p.device, p.dtype) for p in params}) == 1
