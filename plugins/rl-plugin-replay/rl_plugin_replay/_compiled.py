"""The compiled update of an off-policy loss: its losses and their gradients as one compiled program.

An off-policy update is a few dozen small operators (a DQN update on a 256-256 MLP: about 60, forward and
backward), and on one CPU core each costs 5 to 15 us of dispatch and autograd bookkeeping, around matrix
products that take about as long. ``torch.compile`` removes that cost where it sees the whole computation, so
the loss module's forward and the gradients of its ``loss*`` entries are traced as one program, compiled at the
first update::

    out   = loss_module(sample)                          its own forward, unchanged
    grads = d (sum of out["loss*"]) / d params           torch.autograd.grad, inside the program

The program runs in the loss module's place (the trainer's ``loss_module(sub)``) and returns its output,
detached; the trainer's ``rl_post_loss`` hooks see it, then the loss module's ``rl_optimizer`` puts the
gradients in ``.grad`` and the trainer's own step clips them and steps the optimizer
(:meth:`rlcore.Trainer.apply_gradients`): checkpoints are those of the eager path, and a run resumes on either.

Measured on one core (benchmarks/RESULTS.md, 2026-11-29): DQN's 4-256-256-2 update, batch 64, 2.1 ms eager
against 1.0 ms compiled for the program and 0.25 ms for the step around it; compiling takes 5 to 15 s.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from ._keys import PRIORITY_KEY

#: inductor's options: its wrapper around the kernels in C++, not Python (200 us a call less on one core)
OPTIONS = {"cpp_wrapper": True}


#: the updates a run must plan for the compiled update to be on by default: its compilation (5 to 35 s, cold) pays
#: for itself after about 10,000 (DQN's saves 0.5 ms an update, SAC's 3 ms, on one core of the 2026-11-29 machine)
AUTO_UPDATES = 20_000


def worth_compiling(trainer: Any) -> str | None:
    """Why the compiled update is not on by default in ``trainer``: off the CPU, or too few updates to pay for compiling."""
    if torch.device(trainer.device).type != "cpu":
        return f"on {trainer.device}, the compiled update is on only when asked for"
    batch = (trainer.config or {}).get("collector", {}).get("frames_per_batch")
    planned = trainer.optim_steps_per_batch * trainer.total_frames // batch if batch else 0
    if planned < AUTO_UPDATES:
        return f"the run plans {planned} updates, fewer than the {AUTO_UPDATES} that pay for compiling"
    return None


def eager_because(loss_module: Any, trainer: Any, implementations: Callable[[str], list[str]]) -> str | None:
    """Why ``loss_module`` trains on the eager path in ``trainer``; ``None`` when the compiled update applies.

    :param implementations: the names of the plugins implementing a hook, by hook name.
    """
    optimizer = trainer.optimizer
    trained = {id(p) for p in loss_module.parameters() if p.requires_grad}
    if {id(p) for group in optimizer.param_groups for p in group["params"]} != trained:
        return "the optimizer's parameters are not the loss module's trainable ones"
    if trainer.world.world_size > 1:
        return "data-parallel learners average the gradients during a backward pass"
    others = [name for name in implementations("rl_optimizer") if name not in ("rlcore.trainer", "rlcore.loss_module")]
    if others:
        return f"{', '.join(others)} implement{'s' if len(others) == 1 else ''} rl_optimizer"
    return None


class CompiledUpdate:
    """A loss module's losses and gradients as one compiled program (:meth:`losses`), applied by :meth:`step`.

    :param loss_module: the off-policy loss; its ``forward`` must change no Python state (its sample's
        ``"td_error"`` aside): it is traced once.
    :param options: inductor's options (``torch.compile``'s ``options``) besides :data:`OPTIONS`.
    """

    def __init__(self, loss_module: nn.Module, options: Mapping[str, Any] | None = None) -> None:
        self.loss_module = loss_module
        self.params = [p for p in loss_module.parameters() if p.requires_grad]
        self.grads: tuple[torch.Tensor, ...] | None = None
        self.compiled = False
        self.keys: list[Any] = []  # the samples' keys, from the first
        self._program = torch.compile(self._losses_and_grads, fullgraph=True, dynamic=False, options={**OPTIONS, **(options or {})})

    def _losses_and_grads(self, size: int, *tensors: torch.Tensor) -> tuple[tuple[torch.Tensor, ...], dict[str, torch.Tensor], torch.Tensor | None]:
        sample = TensorDict(batch_size=[size])  # (rebuilt in the program: a TensorDict's guards cost 150 us a call, its tensors' 10)
        for key, value in zip(self.keys, tensors, strict=True):
            sample.set(key, value)
        out = self.loss_module(sample)
        total = sum(value for key, value in out.items() if key.startswith("loss"))
        grads = torch.autograd.grad(total, self.params, allow_unused=True, materialize_grads=True)
        return grads, {key: value.detach() for key, value in out.items()}, sample.get(PRIORITY_KEY, None)

    def losses(self, sample: TensorDictBase) -> TensorDict | None:
        """The loss module's output on ``sample``, detached, its gradients kept for :meth:`step`; the new priorities
        under ``"td_error"`` in ``sample`` when the loss writes them.

        :return: ``None`` when the program does not compile (a warning says why, once; the run goes on eagerly).
        """
        try:
            with torch._dynamo.config.patch(trace_autograd_ops=True):  # torch.autograd.grad inside the program
                if not self.keys:
                    self.keys = list(sample.keys(include_nested=True, leaves_only=True))
                self.grads, values, priority = self._program(sample.batch_size[0], *(sample.get(key) for key in self.keys))
        except Exception as err:  # a module dynamo cannot trace, or inductor cannot build
            if self.compiled:
                raise  # it compiled and ran before: an error of the computation, not of compiling
            why = str(err).strip().splitlines()[0] if str(err).strip() else ""
            warnings.warn(
                f"rl-plugin-replay: {type(self.loss_module).__name__}'s update does not compile ({type(err).__name__}: {why[:200]}); it runs eagerly",
                stacklevel=3,
            )
            return None
        self.compiled = True
        if priority is not None:
            sample.set(PRIORITY_KEY, priority)
        return TensorDict(values, batch_size=[])

    def step(self, trainer: Any) -> dict[str, Any]:
        """Put the gradients of the last :meth:`losses` in ``.grad``; clip them and step the optimizer as the trainer does.

        :return: the trainer's step's statistics (``grad_norm`` when it clips by norm).
        """
        grads, self.grads = self.grads, None
        assert grads is not None, "step() before losses()"
        for param, value in zip(self.params, grads, strict=True):
            param.grad = value
        return dict(trainer.apply_gradients())
