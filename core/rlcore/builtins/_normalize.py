"""Normalisation wrappers for vector envs; their statistics are saved in checkpoints."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import VectorWrapper


class RunningMeanStd:
    """Mean and variance over batches (Chan et al.'s parallel update)."""

    def __init__(self, shape: tuple[int, ...] = ()) -> None:
        self.mean = np.zeros(shape, dtype=np.float64)
        self.var = np.ones(shape, dtype=np.float64)
        self.count = 1e-4

    def update(self, x: np.ndarray) -> None:
        batch_mean, batch_var, batch_count = x.mean(axis=0), x.var(axis=0), x.shape[0]
        delta = batch_mean - self.mean
        total = self.count + batch_count
        self.mean = self.mean + delta * batch_count / total
        m2 = self.var * self.count + batch_var * batch_count + delta**2 * self.count * batch_count / total
        self.var = m2 / total
        self.count = total

    def state_dict(self) -> dict[str, Any]:
        import torch

        return {"mean": torch.tensor(self.mean), "var": torch.tensor(self.var), "count": float(self.count)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.mean = np.asarray(state["mean"], dtype=np.float64).copy()
        self.var = np.asarray(state["var"], dtype=np.float64).copy()
        self.count = float(state["count"])


class NormalizeObservation(VectorWrapper):
    """``(obs - mean) / sqrt(var + epsilon)``, clipped; statistics update while ``training`` is true."""

    def __init__(self, env: Any, epsilon: float = 1e-8, clip: float = 10.0) -> None:
        super().__init__(env)
        self.rms = RunningMeanStd(env.single_observation_space.shape)
        self.epsilon, self.clip = epsilon, clip
        self.training = True

    def _normalize(self, obs: np.ndarray) -> np.ndarray:
        out = (obs - self.rms.mean) / np.sqrt(self.rms.var + self.epsilon)
        return np.clip(out, -self.clip, self.clip).astype(np.float32)

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        if self.training:
            self.rms.update(obs)
        return self._normalize(obs), info

    def step(self, actions: Any) -> tuple[Any, ...]:
        obs, reward, terminated, truncated, info = self.env.step(actions)
        if self.training:
            self.rms.update(obs)
        if "final_obs" in info:
            final = info["final_obs"].copy()
            for i in np.flatnonzero(info["_final_obs"]):
                final[i] = self._normalize(final[i])
            info = {**info, "final_obs": final}
        return self._normalize(obs), reward, terminated, truncated, info

    def state_dict(self) -> dict[str, Any]:
        return self.rms.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rms.load_state_dict(state)


class NormalizeReward(VectorWrapper):
    """Rewards divided by the running standard deviation of the discounted return, clipped."""

    def __init__(self, env: Any, gamma: float = 0.99, epsilon: float = 1e-8, clip: float = 10.0) -> None:
        super().__init__(env)
        self.rms = RunningMeanStd()
        self.returns = np.zeros(env.num_envs)
        self.gamma, self.epsilon, self.clip = gamma, epsilon, clip
        self.training = True

    def step(self, actions: Any) -> tuple[Any, ...]:
        obs, reward, terminated, truncated, info = self.env.step(actions)
        if self.training:
            self.returns = self.returns * self.gamma + reward
            self.rms.update(self.returns)
            self.returns[terminated | truncated] = 0.0
        scaled = np.clip(reward / np.sqrt(self.rms.var + self.epsilon), -self.clip, self.clip)
        return obs, scaled, terminated, truncated, {**info, "raw_reward": info.get("raw_reward", reward)}

    def state_dict(self) -> dict[str, Any]:
        import torch

        return {**self.rms.state_dict(), "returns": torch.from_numpy(self.returns.copy())}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rms.load_state_dict(state)
        self.returns = np.asarray(state["returns"], dtype=np.float64).copy()
