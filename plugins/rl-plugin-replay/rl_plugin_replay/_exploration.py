"""Exploration wrappers for collection policies: random warm-up, epsilon-greedy, Gaussian and OU noise.

Each wrapper is a ``tensordict.nn`` module around a policy that acts deterministically (greedy
Q-values, a deterministic actor) or samples by itself (SAC's actor). It explores only under
``InteractionType.RANDOM`` (the collector's); otherwise (``rlctl eval``, ``DETERMINISTIC``) it
is the wrapped policy, unchanged. While exploring it keeps a clock of frames (part of its
``state_dict``, so checkpoints and the weights sent to Ray workers carry it), and:

- for the first ``init_random_frames`` frames, acts uniformly at random over the action space;
- then applies its exploration to the wrapped policy's ``action``, with a coefficient annealed
  linearly over frames (:class:`LinearSchedule`):

  ==========================  =====================================================================
  :class:`RandomWarmup`       nothing more (the policy samples by itself)
  :class:`EGreedy`            with probability ``epsilon``, a uniformly random action instead
  :class:`GaussianNoise`      ``action + sigma * scale * N(0, 1)``, clipped to the bounds
  :class:`OrnsteinUhlenbeck`  ``action + scale * x``, ``x += theta * (mu - x) * dt + sigma * sqrt(dt) * N(0, 1)``
  ==========================  =====================================================================

  where ``scale`` is half the width of the action bounds. Random numbers come from torch's
  generator, whose state the trainer seeds and checkpoints.

The clock counts the trainer's frames, as ``total_frames`` does: each step acted on adds
``frames_per_step`` (``trainer.frame_skip`` times the torchrun ranks) per env, and the
``replay_buffer`` hook sets it to ``trainer.collected_frames`` at every batch (:meth:`follow`),
so a Ray worker's copy, which counts only its own steps, is set right with every weight update.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase
from tensordict.nn import InteractionType, TensorDictModuleBase, interaction_type


@dataclass(frozen=True)
class LinearSchedule:
    """``start`` at frame 0, ``end`` from ``frames`` on, linear in between (``frames`` 0 or ``None``: always ``end``)."""

    start: float
    end: float
    frames: int | None

    def __post_init__(self) -> None:
        if self.frames is not None and self.frames < 0:
            raise ValueError(f"a schedule's frames must be >= 0 or None, got {self.frames}")

    def __call__(self, frame: int) -> float:
        if not self.frames or frame >= self.frames:
            return self.end
        return self.start + (self.end - self.start) * (frame / self.frames)


class Exploration(TensorDictModuleBase):
    """Random warm-up and frame counting around ``policy``; subclasses add their exploration in :meth:`explore`.

    :param policy: a ``tensordict.nn`` module writing ``action``.
    :param action_space: the single env's Gymnasium action space (``Discrete`` or ``Box``).
    :param init_random_frames: frames acted uniformly at random before the policy acts.
    """

    low: torch.Tensor
    high: torch.Tensor

    def __init__(self, policy: Any, action_space: Any, init_random_frames: int = 0) -> None:
        super().__init__()
        from gymnasium import spaces

        self.policy = policy
        self.in_keys = list(getattr(policy, "in_keys", ["observation"]))
        self.out_keys = list(getattr(policy, "out_keys", ["action"]))
        # a policy that writes nothing but the action need not run while actions are random
        self._action_only = self.out_keys == ["action"]
        self.init_random_frames = int(init_random_frames or 0)
        self.discrete = isinstance(action_space, spaces.Discrete)
        if self.discrete:
            self.num_actions = int(action_space.n)
            self.action_shape: tuple[int, ...] = ()
        elif isinstance(action_space, spaces.Box):
            low = torch.as_tensor(np.asarray(action_space.low, dtype=np.float32))
            high = torch.as_tensor(np.asarray(action_space.high, dtype=np.float32))
            if not (torch.isfinite(low).all() and torch.isfinite(high).all()):
                raise ValueError("exploration needs bounded Box actions (finite low and high)")
            self.register_buffer("low", low, persistent=False)
            self.register_buffer("high", high, persistent=False)
            self.action_shape = tuple(action_space.shape)
        else:
            raise ValueError(f"exploration handles Discrete and Box action spaces, got {action_space}")
        #: the clock: the trainer's frames so far (in the module's ``state_dict``)
        self.frames = 0
        #: the trainer's frames one step of one env stands for
        self.frames_per_step = 1

    def random_action(self, n: int, device: torch.device) -> torch.Tensor:
        """``n`` uniformly random actions."""
        if self.discrete:
            return torch.randint(self.num_actions, (n,), device=device)
        return self.low + (self.high - self.low) * torch.rand((n, *self.action_shape), device=device)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Act: the wrapped policy, explored under ``RANDOM``, uniformly random during the warm-up."""
        if interaction_type() != InteractionType.RANDOM:
            return self.policy(tensordict)
        frame = self.frames
        n = tensordict.numel()
        self.frames += n * self.frames_per_step
        if frame < self.init_random_frames:
            if self._action_only:
                device = tensordict.get(self.in_keys[0]).device
                tensordict.set("action", self.random_action(n, device).reshape(*tensordict.shape, *self.action_shape))
                return tensordict
            tensordict = self.policy(tensordict)  # for the other keys it writes
            action = tensordict.get("action")
            tensordict.set("action", self.random_action(n, action.device).reshape(action.shape).to(action.dtype))
            return tensordict
        return self.explore(self.policy(tensordict), frame)

    def explore(self, tensordict: TensorDictBase, frame: int) -> TensorDictBase:
        """Change the policy's ``action`` at ``frame`` (the clock before this call)."""
        return tensordict

    def follow(self, frames: int, frames_per_step: int = 1) -> None:
        """Set the clock to the trainer's count.

        :param frames: the trainer's frames so far (``trainer.collected_frames``).
        :param frames_per_step: the trainer's frames one step of one env stands for.
        """
        self.frames, self.frames_per_step = int(frames), int(frames_per_step)

    def stats(self) -> dict[str, float]:
        """The current exploration coefficients, to log."""
        return {}

    def get_extra_state(self) -> dict[str, Any]:
        """The clock (and a subclass's state), for ``state_dict``."""
        return {"frames": self.frames, "frames_per_step": self.frames_per_step}

    def set_extra_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`get_extra_state`."""
        self.follow(state["frames"], state.get("frames_per_step", 1))


class RandomWarmup(Exploration):
    """Uniformly random actions for ``init_random_frames`` frames, then the (stochastic) policy's own.

    :param policy: a policy that samples under ``InteractionType.RANDOM``.
    :param action_space: the single env's action space.
    :param init_random_frames: frames acted at random first.
    """


class EGreedy(Exploration):
    """Epsilon-greedy over a discrete action space, epsilon annealed linearly over frames.

    :param policy: the greedy policy.
    :param action_space: a ``Discrete`` action space.
    :param eps_init: epsilon at frame 0.
    :param eps_end: epsilon from ``annealing_frames`` on.
    :param annealing_frames: frames over which epsilon goes from ``eps_init`` to ``eps_end``.
    :param init_random_frames: frames acted at random first.
    """

    def __init__(
        self,
        policy: Any,
        action_space: Any,
        eps_init: float = 1.0,
        eps_end: float = 0.05,
        annealing_frames: int | None = 10_000,
        init_random_frames: int = 0,
    ) -> None:
        super().__init__(policy, action_space, init_random_frames)
        if not self.discrete:
            raise ValueError("epsilon-greedy needs a Discrete action space; use GaussianNoise or OrnsteinUhlenbeck for Box actions")
        if not (0 <= eps_init <= 1 and 0 <= eps_end <= 1):
            raise ValueError(f"epsilon must be in [0, 1], got eps_init={eps_init} and eps_end={eps_end}")
        self.schedule = LinearSchedule(eps_init, eps_end, annealing_frames)

    @property
    def epsilon(self) -> float:
        """Epsilon at the current frame."""
        return self.schedule(self.frames)

    def explore(self, tensordict: TensorDictBase, frame: int) -> TensorDictBase:
        eps = self.schedule(frame)
        if eps <= 0:
            return tensordict
        action = tensordict.get("action")
        draws = torch.rand(action.shape)  # on the CPU: deciding costs no device round trip
        if eps >= 1 or min(draws.view(-1).tolist()) < eps:  # (most steps, once epsilon is small, keep the greedy actions)
            explore = (draws < eps).to(action.device)
            random = self.random_action(action.numel(), action.device).reshape(action.shape)
            tensordict.set("action", torch.where(explore, random, action))
        return tensordict

    def stats(self) -> dict[str, float]:
        return {"train/epsilon": self.epsilon}


class GaussianNoise(Exploration):
    """Additive Gaussian noise on a bounded continuous action, its scale annealed over frames.

    :param policy: a deterministic policy writing ``action`` within the bounds.
    :param action_space: a bounded ``Box`` action space.
    :param sigma_init: noise standard deviation at frame 0, in units of half the bounds' width.
    :param sigma_end: the standard deviation from ``annealing_frames`` on.
    :param annealing_frames: frames of the annealing (``None``: ``sigma_end`` throughout).
    :param init_random_frames: frames acted at random first.
    """

    def __init__(
        self,
        policy: Any,
        action_space: Any,
        sigma_init: float = 0.1,
        sigma_end: float = 0.1,
        annealing_frames: int | None = None,
        init_random_frames: int = 0,
    ) -> None:
        super().__init__(policy, action_space, init_random_frames)
        if self.discrete:
            raise ValueError("Gaussian noise needs a Box action space; use EGreedy for Discrete actions")
        if sigma_init < 0 or sigma_end < 0:
            raise ValueError(f"sigma must be >= 0, got sigma_init={sigma_init} and sigma_end={sigma_end}")
        self.schedule = LinearSchedule(sigma_init, sigma_end, annealing_frames)

    @property
    def sigma(self) -> float:
        """The noise scale at the current frame."""
        return self.schedule(self.frames)

    def explore(self, tensordict: TensorDictBase, frame: int) -> TensorDictBase:
        action = tensordict.get("action")
        scale = 0.5 * (self.high - self.low)
        noisy = action + self.schedule(frame) * scale * torch.randn_like(action)
        tensordict.set("action", torch.maximum(torch.minimum(noisy, self.high), self.low))
        return tensordict

    def stats(self) -> dict[str, float]:
        return {"train/sigma": self.sigma}


class OrnsteinUhlenbeck(Exploration):
    """Temporally correlated noise (an Ornstein-Uhlenbeck process per env) on a bounded continuous action.

    Each env's process starts again from ``mu`` where its episode begins: the module reads
    ``is_init`` (TorchRL's ``InitTracker`` key, which ``rlcore.Collector`` gives a policy that
    reads it); without it, the processes run on across episodes. Their state is checkpointed.

    :param policy: a deterministic policy writing ``action`` within the bounds.
    :param action_space: a bounded ``Box`` action space.
    :param theta: mean reversion rate.
    :param sigma: diffusion scale (annealed from ``sigma`` to ``sigma_end`` over ``annealing_frames``).
    :param mu: the mean the process reverts to.
    :param dt: the time step.
    :param sigma_end: the diffusion scale after the annealing; default ``sigma``.
    :param annealing_frames: frames of the annealing.
    :param init_random_frames: frames acted at random first.
    """

    def __init__(
        self,
        policy: Any,
        action_space: Any,
        theta: float = 0.15,
        sigma: float = 0.2,
        mu: float = 0.0,
        dt: float = 1e-2,
        sigma_end: float | None = None,
        annealing_frames: int | None = None,
        init_random_frames: int = 0,
    ) -> None:
        super().__init__(policy, action_space, init_random_frames)
        if self.discrete:
            raise ValueError("OU noise needs a Box action space; use EGreedy for Discrete actions")
        if sigma < 0 or (sigma_end is not None and sigma_end < 0) or theta < 0 or dt <= 0:
            raise ValueError(f"OU noise needs sigma, sigma_end, theta >= 0 and dt > 0, got {sigma}, {sigma_end}, {theta}, {dt}")
        self.theta, self.mu, self.dt = theta, mu, dt
        self.schedule = LinearSchedule(sigma, sigma if sigma_end is None else sigma_end, annealing_frames)
        self.noise: torch.Tensor | None = None  # [envs, *action_shape], created at the first step
        self.in_keys = [*self.in_keys, "is_init"]

    def explore(self, tensordict: TensorDictBase, frame: int) -> TensorDictBase:
        action = tensordict.get("action")
        if self.noise is None or self.noise.shape != action.shape:
            self.noise = torch.full_like(action, self.mu)
        elif self.noise.device != action.device:  # restored from a checkpoint, which loads on the CPU
            self.noise = self.noise.to(action.device)
        is_init = tensordict.get("is_init", None)
        if is_init is not None:  # [*batch, 1]: the envs whose episode begins with this step
            self.noise = torch.where(is_init.reshape(*action.shape[: tensordict.ndim], *[1] * len(self.action_shape)), self.mu, self.noise)
        sigma = self.schedule(frame)
        self.noise = self.noise + self.theta * (self.mu - self.noise) * self.dt + sigma * math.sqrt(self.dt) * torch.randn_like(action)
        noisy = action + 0.5 * (self.high - self.low) * self.noise
        tensordict.set("action", torch.maximum(torch.minimum(noisy, self.high), self.low))
        return tensordict

    def get_extra_state(self) -> dict[str, Any]:
        return {**super().get_extra_state(), "noise": None if self.noise is None else self.noise.clone()}

    def set_extra_state(self, state: dict[str, Any]) -> None:
        super().set_extra_state(state)
        if state["noise"] is not None:  # a copy that never acted (the trainer's, under Ray) has no process to give
            self.noise = state["noise"]

    def stats(self) -> dict[str, float]:
        return {"train/sigma": self.schedule(self.frames)}
