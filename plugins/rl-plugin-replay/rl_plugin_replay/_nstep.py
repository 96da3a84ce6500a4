"""n-step transitions: rewards summed over up to ``n`` steps, the next observation ``n`` steps ahead.

For the step at ``t`` of an env, with ``m`` the steps up to and including the first episode end
within ``t .. t + n - 1`` (``m = n`` when the episode goes on)::

    reward            = sum_{k < m} gamma**k * r_{t+k}
    next observation  = the next observation of step t + m - 1 (the true final one if the episode ended)
    terminated, done  = those of step t + m - 1
    steps_to_next_obs = m                         (a loss bootstraps with gamma**m)

so a loss's target ``reward + gamma**m * (1 - terminated) * V(next observation)`` is the n-step
return, cut at termination and bootstrapped at truncation. The last ``n - 1`` steps of each env
have no ``n`` steps after them yet: they are held back and come out with the next batch, so
each step becomes exactly one transition, ``n - 1`` steps late. When an env's next batch does
not start from the held-back steps' last next observation (its episode was not ended there,
and yet the env starts afresh: a resumed run whose envs could not be saved), the held-back
steps end there, as at a truncation.
"""

from __future__ import annotations

from typing import Any, cast

import torch
from tensordict import TensorDict, TensorDictBase

from ._keys import PRIORITY_KEY, STEPS_KEY, WEIGHT_KEY


class NStepReturns:
    """Turns batches ``[envs, time]`` into n-step transitions ``[envs, time']``.

    :param n: steps summed (1 returns batches unchanged).
    :param gamma: the discount.
    """

    def __init__(self, n: int, gamma: float) -> None:
        if n < 1:
            raise ValueError(f"n_step must be >= 1, got {n}")
        if not 0 < gamma <= 1:
            raise ValueError(f"gamma must be in (0, 1], got {gamma}")
        self.n = n
        self.gamma = gamma
        self._tail: TensorDictBase | None = None  # the last n - 1 steps of each env, not yet emitted

    def __call__(self, batch: TensorDictBase) -> TensorDictBase:
        """The n-step transitions that ``batch`` completes, in time order per env.

        :param batch: a collector batch ``[envs, time]``, continuing the previous one.
        :return: ``[envs, time]`` transitions (``time - n + 1`` for the first batch).
        """
        if self.n == 1:
            return batch
        if batch.batch_dims != 2:
            raise ValueError(f"n-step returns need batches [envs, time], got batch size {list(batch.batch_size)}")
        steps = batch if self._tail is None else cast(TensorDictBase, torch.cat([self._cut(self._tail.to(batch.device), batch), batch], dim=1))
        n, length = self.n, steps.shape[1]
        self._tail = steps[:, max(length - (n - 1), 0) :].clone()
        width = length - n + 1  # starts with n steps ahead of them
        if width <= 0:  # not n steps yet: nothing complete
            empty = steps[:, :0]
            empty.set(STEPS_KEY, torch.zeros(*empty.batch_size, 1, dtype=torch.int64, device=steps.device))
            return empty
        reward = steps.get(("next", "reward"))  # [E, L, 1]
        done = steps.get(("next", "done")).reshape(reward.shape)
        r = reward.squeeze(-1).unfold(1, n, 1)  # [E, W, n]: window k of start t is step t + k
        d = done.squeeze(-1).unfold(1, n, 1).to(r.dtype)
        alive = torch.cat([torch.ones_like(d[..., :1]), torch.cumprod(1 - d[..., :-1], -1)], -1)  # no episode end before k
        discounts = self.gamma ** torch.arange(n, device=r.device, dtype=r.dtype)
        n_reward = (r * alive * discounts).sum(-1)
        m = alive.sum(-1).to(torch.int64)  # steps up to the first episode end, at most n
        last = torch.arange(width, device=r.device) + m - 1  # [E, W]: the step whose "next" the transition takes
        envs = torch.arange(steps.shape[0], device=r.device).unsqueeze(-1)
        out = steps[:, :width]
        nxt = steps.get("next")
        out.set("next", TensorDict({k: v[envs, last] for k, v in nxt.items()}, batch_size=out.batch_size, device=steps.device))
        out.set(("next", "reward"), n_reward.unsqueeze(-1).to(reward.dtype))
        out.set(STEPS_KEY, m.unsqueeze(-1))
        return out

    @staticmethod
    def _cut(tail: TensorDictBase, batch: TensorDictBase) -> TensorDictBase:
        """``tail``, truncated at its last step in the envs whose ``batch`` does not continue from it."""
        first = batch.get("observation", None)
        if not tail.shape[1] or not isinstance(first, torch.Tensor):
            return tail
        last = tail[:, -1]
        done = last.get(("next", "done")).reshape(-1)
        moved = (last.get(("next", "observation")) != first[:, 0]).reshape(len(done), -1).any(1)
        broken = moved & ~done
        if not broken.any():
            return tail
        for key in ("done", "truncated"):
            if ("next", key) in tail.keys(True):
                flags = tail.get(("next", key))
                flags[:, -1] |= broken.reshape(flags[:, -1].shape)
        return tail

    def state_dict(self) -> dict[str, Any]:
        """The held-back steps."""
        if self._tail is None:
            return {"tail": None}
        return {"tail": self._tail.to_dict(), "batch_size": list(self._tail.batch_size)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        tail = state.get("tail")
        self._tail = None if tail is None else TensorDict(tail, batch_size=state["batch_size"])


def bootstrap_target(sample: TensorDictBase, gamma: float, next_value: torch.Tensor) -> torch.Tensor:
    """The TD target of replay transitions, one-step or n-step: ``r + gamma**m * (1 - terminated) * next_value``.

    ``m`` is the sample's ``steps_to_next_obs`` (:class:`NStepReturns`' transitions), else 1; a
    terminated transition does not bootstrap, a truncated one does.

    :param sample: a replay sample ``[B]`` with ``("next", "reward" | "terminated")``.
    :param gamma: the discount.
    :param next_value: the value of ``("next", "observation")``, one row per transition: ``[B, 1]`` (``max_a Q'``,
        ``min_i Q'_i - alpha log pi``, ...), ``[B]``, or ``[B, N]`` (a distributional loss's atoms or quantiles).
    :return: the targets, of ``next_value``'s shape.
    :raises ValueError: when ``next_value`` has not one row per transition of ``sample``.
    """
    rows = sample.batch_size[0] if sample.batch_dims else 1
    if next_value.dim() == 0 or next_value.shape[0] != rows:
        raise ValueError(f"bootstrap_target: next_value of shape {list(next_value.shape)} has not one row per transition of the sample ({rows})")
    each = (rows,) + (1,) * (next_value.dim() - 1)  # a transition's reward, done and steps, against its row of values
    steps = sample.get(STEPS_KEY, None)
    discount = gamma if steps is None else gamma ** steps.reshape(each)
    bootstrap = torch.where(sample.get(("next", "terminated")).reshape(each), 0.0, discount)  # 0 where the episode terminated
    return torch.addcmul(sample.get(("next", "reward")).reshape(each), bootstrap, next_value)


def critics_loss(sample: TensorDictBase, q: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Critics' squared TD errors over a replay sample: each critic's mean, summed over the critics.

    With a prioritized sample the errors are weighted by its importance weights, and the largest
    ``|target - Q_i|`` of the critics goes back as each item's new priority (under ``PRIORITY_KEY``).

    :param sample: the replay sample ``[B]``.
    :param q: the critics' values of its actions, ``[K, B, 1]`` (``rl_plugin_nets.TwinQ``'s).
    :param target: the TD targets, ``[B, 1]`` (:func:`bootstrap_target`).
    :return: the loss, and ``|TD error|`` ``[B, 1]`` (the largest of the critics', detached) to log.
    """
    error = q - target
    weight = sample.get(WEIGHT_KEY, None)
    squared = error.pow(2) if weight is None else error.pow(2) * weight.reshape(1, -1, 1)
    td_error = error.detach().abs().amax(0)
    if weight is not None:  # a prioritized sample: send back new priorities
        sample.set(PRIORITY_KEY, td_error.reshape(-1))
    return squared.mean((1, 2)).sum(), td_error
