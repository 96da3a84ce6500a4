"""The ``optim`` section's optimizer, whose Adam steps without ``torch.optim.Optimizer.step``'s per-call work.

The small networks of RL take thousands of optimizer steps a minute, and there ``Optimizer.step``'s Python
around the fused Adam kernel (step hooks, profiler records, the state gathered again, tensors regrouped by
device) costs as much as the kernel itself: 250 us against 100 us for a 4-256-256-2 MLP on one CPU core, a
tenth of a DQN update. :func:`make_optimizer`'s Adam and AdamW step through torch's functional Adam
(``torch.optim.adam.adam``, public API) on the state torch's own first step created: the same update, bit
for bit, and the same ``state_dict``.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch.optim.adam import adam

from .config import optimizer_class, optimizer_options

#: Adam's options under which the functional call is torch's own step (any other value: torch's step)
PLAIN = {"amsgrad": False, "maximize": False, "capturable": False, "differentiable": False, "fused": True}


def make_optimizer(options: Mapping[str, Any], params: Any) -> torch.optim.Optimizer:
    """The optimizer of the ``optim`` section: ``name`` and the optimizer's own options (Adam and AdamW fused, on CPU as on GPU).

    :param options: the ``optim`` section, or a mapping with ``name`` and the optimizer's keyword arguments.
    :param params: the parameters (or parameter groups) to optimise.
    """
    cls = optimizer_class(options["name"])
    kwargs = optimizer_options(cls, options)
    if cls in (torch.optim.Adam, torch.optim.AdamW):
        kwargs.setdefault("fused", True)  # one kernel for all parameters: ~4x faster steps for small networks
    optimizer = cls(params, **kwargs)
    if isinstance(optimizer, torch.optim.Adam):  # (AdamW is one)
        optimizer.step = types.MethodType(_adam_step, optimizer)  # type: ignore[method-assign]  # (a method: LR schedulers wrap it)
    return optimizer


def _adam_step(optimizer: torch.optim.Adam, closure: Callable[[], Any] | None = None) -> Any:
    """``optimizer.step()``: each parameter group's fused update through torch's functional Adam.

    torch's own step runs instead for a closure, the first step (it creates the state), options other than
    :data:`PLAIN`, a tensor learning rate, or parameters on several devices or of several dtypes.
    """
    state = optimizer.state
    groups = [(group, [p for p in group["params"] if p.grad is not None]) for group in optimizer.param_groups]
    plain = all(
        all(group.get(key, default) == default for key, default in PLAIN.items())
        and not isinstance(group["lr"], torch.Tensor)
        and len({(p.device, p.dtype) for p in params}) <= 1
        and all(p in state for p in params)
        for group, params in groups
    )
    if closure is not None or not plain:
        return type(optimizer).step(optimizer, closure)
    for group, params in groups:
        if not params:
            continue
        states = [state[p] for p in params]
        beta1, beta2 = group["betas"]
        adam(
            params,
            [p.grad for p in params],
            [s["exp_avg"] for s in states],
            [s["exp_avg_sq"] for s in states],
            [],
            [s["step"] for s in states],
            fused=True,
            decoupled_weight_decay=group.get("decoupled_weight_decay", False),
            amsgrad=False,
            beta1=beta1,
            beta2=beta2,
            lr=group["lr"],
            weight_decay=group["weight_decay"],
            eps=group["eps"],
            maximize=False,
        )
    return None
