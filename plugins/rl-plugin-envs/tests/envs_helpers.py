"""Helpers of the tests: vector envs built the way a run builds them, and a state round trip."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict.nn import TensorDictModuleBase

import rlcore
from rlcore import base_env, env_states, load_env_states


class RandomPolicy(TensorDictModuleBase):
    """Uniformly random actions of a ``Discrete(n)`` space, as the collector asks for them."""

    in_keys = ["observation"]
    out_keys = ["action"]

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def forward(self, tensordict: Any) -> Any:
        return tensordict.set("action", torch.randint(0, self.n, tensordict.batch_size))


def make(env_id: str, num_envs: int = 2, wrappers: dict[str, Any] | None = None, **options: Any) -> Any:
    """``rlcore.make_vector_env`` with the installed plugins."""
    return rlcore.make_vector_env(env_id, num_envs, wrappers=wrappers, **options)


def save(env: Any) -> tuple[Any, Any]:
    """The wrappers' statistics and the envs' own state, as a checkpoint holds them."""
    return env_states(env), base_env(env).env_state()


def restore(env: Any, state: tuple[Any, Any]) -> None:
    load_env_states(env, state[0])
    base_env(env).load_env_state(state[1])


def rollout(env: Any, actions: list[Any]) -> list[tuple[Any, ...]]:
    """``(obs, reward, terminated, truncated, final_obs or None)`` of each step."""
    out = []
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        final = info["final_obs"].copy() if "final_obs" in info else None
        out.append((np.array(obs, copy=True), np.array(reward, copy=True), terminated.copy(), truncated.copy(), final))
    return out


def assert_same(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            if u is None or v is None:
                assert u is None and v is None
            elif u.dtype == object:
                assert all(np.array_equal(p, q) for p, q in zip(u, v) if p is not None)
            else:
                assert np.array_equal(u, v)
