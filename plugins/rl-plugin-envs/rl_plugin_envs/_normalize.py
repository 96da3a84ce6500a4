"""Normalisation wrappers for vector envs: running statistics (checkpointed) and fixed ones."""

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


class _ObservationTransform(VectorWrapper):
    """A vector wrapper that maps observations to ``float32``, the final observations of ``SAME_STEP`` autoreset
    (``info["final_obs"]``) too; its observation space is an unbounded ``float32`` ``Box`` of the env's shape."""

    def __init__(self, env: Any) -> None:
        from gymnasium.spaces import Box
        from gymnasium.vector.utils import batch_space

        super().__init__(env)
        self.single_observation_space = Box(-np.inf, np.inf, env.single_observation_space.shape, np.float32)
        self.observation_space = batch_space(self.single_observation_space, env.num_envs)

    def transform(self, obs: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def observation_module(self) -> Any:
        """:meth:`transform` as a ``torch.nn.Module``, with the statistics of now (what ``rlctl export`` bakes in)."""
        raise NotImplementedError

    def observe(self, obs: np.ndarray) -> None:
        """See observations before they are transformed (statistics)."""

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self.observe(obs)
        return self.transform(obs), info

    def step(self, actions: Any) -> tuple[Any, ...]:
        obs, reward, terminated, truncated, info = self.env.step(actions)
        self.observe(obs)
        if "final_obs" in info:
            final = info["final_obs"]
            final = final.copy() if final.dtype == object else final.astype(np.float32)  # (EnvPool's: one array, maybe uint8)
            for i in np.flatnonzero(info["_final_obs"]):
                final[i] = self.transform(final[i])
            info = {**info, "final_obs": final}
        return self.transform(obs), reward, terminated, truncated, info


class NormalizeObservation(_ObservationTransform):
    """``(obs - mean) / sqrt(var + epsilon)``, clipped; statistics update while ``training`` is true."""

    def __init__(self, env: Any, epsilon: float = 1e-8, clip: float = 10.0) -> None:
        super().__init__(env)
        self.rms = RunningMeanStd(env.single_observation_space.shape)
        self.epsilon, self.clip = epsilon, clip
        self.training = True

    def observe(self, obs: np.ndarray) -> None:
        if self.training:
            self.rms.update(obs)

    def transform(self, obs: np.ndarray) -> np.ndarray:
        out = (obs - self.rms.mean) / np.sqrt(self.rms.var + self.epsilon)
        return np.clip(out, -self.clip, self.clip).astype(np.float32)

    def observation_module(self) -> Any:
        from ._modules import Standardize

        return Standardize(self.rms.mean, np.sqrt(self.rms.var + self.epsilon), self.clip)

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


class FixedNormalizeObservation(_ObservationTransform):
    """``(obs - loc) / scale`` with fixed statistics (the old torchrl's ``fixed_normalize_states``), optionally clipped.

    The statistics are given, or taken from the observation space's bounds (``[low, high]`` to
    ``[-1, 1]``), or from a random-action rollout of the env itself (:func:`rlcore.get_stats_random_rollout`),
    run at the first reset unless a checkpoint (or the training env, for evaluation envs) provided them.

    :param env: the vector env.
    :param source: ``rollout``, ``bounds`` or ``given``.
    :param loc: the given means (one number or one per observation entry).
    :param scale: the given standard deviations.
    :param steps: vector-env steps of the rollout.
    :param seed: the rollout's seed.
    :param clip: clip normalised values to ``[-clip, clip]``; ``None``: no clipping.
    """

    def __init__(
        self,
        env: Any,
        source: str = "rollout",
        loc: Any = None,
        scale: Any = None,
        steps: int = 1000,
        seed: int = 0,
        clip: float | None = None,
    ) -> None:
        super().__init__(env)
        self.source, self.steps, self.seed, self.clip = source, steps, seed, clip
        self.training = True
        space = env.single_observation_space
        self.loc: np.ndarray | None = None
        self.scale: np.ndarray | None = None
        if source == "given":
            self.loc = np.broadcast_to(np.asarray(loc, dtype=np.float64), space.shape).copy()
            self.scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), space.shape).copy()
        elif source == "bounds":
            low, high = np.asarray(space.low, dtype=np.float64), np.asarray(space.high, dtype=np.float64)
            self.loc, self.scale = (high + low) / 2, (high - low) / 2

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        if self.loc is None:
            import rlcore

            stats = rlcore.get_stats_random_rollout(self.env, steps=self.steps, seed=self.seed)
            self.loc, self.scale = stats["loc"].double().numpy(), stats["scale"].double().numpy()
        return super().reset(**kwargs)

    def transform(self, obs: np.ndarray) -> np.ndarray:
        if self.loc is None or self.scale is None:
            raise RuntimeError("fixed_normalize_observation: the statistics are computed at the first reset")
        out = (obs - self.loc) / self.scale
        if self.clip is not None:
            out = np.clip(out, -self.clip, self.clip)
        return out.astype(np.float32)

    def observation_module(self) -> Any:
        from ._modules import Standardize

        if self.loc is None or self.scale is None:
            raise RuntimeError("fixed_normalize_observation: the statistics are computed at the first reset")
        return Standardize(self.loc, self.scale, self.clip)

    def state_dict(self) -> dict[str, Any]:
        import torch

        if self.loc is None or self.scale is None:
            return {"loc": None, "scale": None}
        return {"loc": torch.from_numpy(self.loc.copy()), "scale": torch.from_numpy(self.scale.copy())}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("loc") is not None:
            self.loc = np.asarray(state["loc"], dtype=np.float64).copy()
            self.scale = np.asarray(state["scale"], dtype=np.float64).copy()


__all__ = ["FixedNormalizeObservation", "NormalizeObservation", "NormalizeReward", "RunningMeanStd"]
