"""Generalised advantage estimation (Schulman et al., 2016), vectorised over envs, looped over time."""

from __future__ import annotations

import numpy as np
import torch


@torch.no_grad()
def gae(
    reward: torch.Tensor,
    value: torch.Tensor,
    next_value: torch.Tensor,
    terminated: torch.Tensor,
    done: torch.Tensor,
    gamma: float,
    gae_lambda: float,
) -> torch.Tensor:
    """Advantages of a batch ``[envs, time, 1]``.

    ``next_value`` is the value of ``("next", "observation")``, the true next observation even
    where an episode ended. So a truncated episode is bootstrapped from the value of its last
    observation, a terminated one is not, and the last step of the batch is bootstrapped
    from the value of the observation that follows it::

        delta_t = r_t + gamma * (1 - terminated_t) * V(s'_t) - V(s_t)
        A_t     = delta_t + gamma * lambda * (1 - done_t) * A_{t+1}

    :param reward: rewards ``[E, T, 1]``.
    :param value: ``V(s_t)`` ``[E, T, 1]``.
    :param next_value: ``V(s'_t)`` ``[E, T, 1]``.
    :param terminated: whether ``s'_t`` is terminal ``[E, T, 1]`` (bool).
    :param done: whether the episode ended at ``t`` (terminated or truncated) ``[E, T, 1]`` (bool).
    :param gamma: the discount.
    :param gae_lambda: GAE's lambda (1 gives Monte-Carlo returns minus the baseline).
    :return: advantages ``A_t`` ``[E, T, 1]``; the value targets are ``A_t + V(s_t)``.
    """
    delta = reward + gamma * next_value * (~terminated) - value
    carry = (gamma * gae_lambda) * (~done)
    # the recursion runs in NumPy, time-major: a step over a few envs costs ~1 us there, several in torch
    deltas, carries = (x.squeeze(-1).T.cpu().numpy() for x in (delta, carry))
    advantages = np.empty_like(deltas)
    advantage = np.zeros_like(deltas[0])
    for t in range(len(deltas) - 1, -1, -1):
        advantage = deltas[t] + carries[t] * advantage
        advantages[t] = advantage
    return torch.from_numpy(np.ascontiguousarray(advantages.T)).unsqueeze(-1).to(delta.device)
