"""The collector: a Gymnasium vector env stepped by a ``tensordict.nn`` policy, batches of ``[envs, time]``."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import InteractionType, set_interaction_type

from .envs import base_env


def rewards_of_env(info: dict[str, Any], reward: Any) -> Any:
    """The env's own rewards of one vector step: ``info["raw_reward"]`` where a wrapper that changes rewards kept them,
    else ``reward``.

    An env inside a ``SAME_STEP`` vector env that ended its episode hands on its reset's info, its last step's in
    ``info["final_info"]``: that env's raw reward is read there.

    :param info: the vector step's info.
    :param reward: the vector step's rewards.
    """
    raw = info.get("raw_reward", reward)
    final = info.get("final_info")
    if final is None or "raw_reward" not in final:
        return raw
    ended = np.asarray(final.get("_raw_reward", info["_final_info"]))
    raw = np.array(raw, dtype=np.float64, copy=True)
    raw[ended] = np.asarray(final["raw_reward"], dtype=np.float64)[ended]
    return raw


def to_tensor(array: Any, device: torch.device) -> Any:
    """A tensor on ``device`` sharing ``array``'s memory where it can; floating point becomes float32. A mapping of
    arrays (the observations of a ``Dict`` space) becomes a ``TensorDict`` of them, its batch size their first dimension."""
    if isinstance(array, Mapping):
        values = {key: to_tensor(value, device) for key, value in array.items()}
        return TensorDict(values, batch_size=next(iter(values.values())).shape[:1], device=device)
    tensor = torch.from_numpy(array) if isinstance(array, np.ndarray) else torch.as_tensor(array)
    if tensor.dtype != torch.float32 and tensor.is_floating_point():
        tensor = tensor.float()
    return tensor if device.type == "cpu" else tensor.to(device)


class Carry:
    """A policy stepped with what it hands on from one env step to the next, TorchRL's way: the entries it writes under
    ``next`` (a recurrent state) are its inputs at the next step, and a policy whose ``in_keys`` hold ``is_init`` is told
    which rows begin an episode. The one place that knows it, for the collector, the evaluation loop and ``Policy.predict``.

    :param policy: the ``tensordict.nn`` policy.
    """

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.tracks_init = "is_init" in getattr(policy, "in_keys", ())
        #: the entries the policy wrote under ``next`` at its last step, by key
        self.state: dict[str, torch.Tensor] = {}

    def __call__(self, obs: Any, starts: Any) -> TensorDictBase:
        """The policy's step on observations ``obs`` ``[N, ...]``, ``starts`` one bool per row (its episode begins); what
        the step writes under ``next`` is taken out of it and kept in :attr:`state` for the next call."""
        values = {"observation": obs, **self.state}
        if self.tracks_init:
            values["is_init"] = torch.as_tensor(np.asarray(starts, dtype=bool), device=obs.device).reshape(-1, 1)
        step = self.policy(TensorDict(values, batch_size=obs.shape[:1], device=obs.device, non_blocking=False))
        handed: Any = step.pop("next") if "next" in step.keys() else {}
        self.state = dict(handed.items())
        return step


def with_rows(batch: Any, values: list[Any], rows: np.ndarray) -> Any:
    """A copy of a batch of observations (an array, or a mapping of them) with ``values`` in the rows ``rows``."""
    if isinstance(batch, Mapping):
        return {key: with_rows(part, [value[key] for value in values], rows) for key, part in batch.items()}
    out = batch.copy()
    out[rows] = np.stack(values)
    return out


def _plain(obs: Any) -> Any:
    """Observations as a checkpoint holds them: a tensor, or a ``Dict`` space's as a plain dict of tensors."""
    return obs.to_dict() if isinstance(obs, TensorDictBase) else obs


#: ``observer(render, done)``: see :meth:`Collector.add_step_observer`.
StepObserver = Callable[[Callable[[], Any], np.ndarray], None]


class Collector:
    """Collects ``frames_per_batch`` frames at a time from a vector env (a :class:`CollectorProtocol`).

    The env must auto-reset in Gymnasium's ``SAME_STEP`` mode (``rlcore.make_vector_env`` does
    this), so that the true final observation of an episode is at hand: it is written to
    ``("next", "observation")`` while ``observation`` of the next step is the reset one.
    Termination and truncation are kept apart.

    Batch keys (TorchRL's): ``observation``, what the policy writes (``action``,
    ``sample_log_prob``, ``state_value``, ...), ``("next", "observation")``, and
    ``("next", "reward" | "done" | "terminated" | "truncated")`` of shape ``[envs, time, 1]``.
    A policy whose ``in_keys`` hold ``is_init`` (TorchRL's ``InitTracker`` key) is also given
    ``is_init`` ``[envs, 1]``, true on the first step of each env's episode, and the batch keeps it. What the
    policy writes under ``next`` (a recurrent state) is its input at the next step (:class:`Carry`), and the batch
    keeps both: the state each step began with, and under ``next`` the one it handed on.

    :param env: a ``gymnasium.vector.VectorEnv`` in ``SAME_STEP`` autoreset mode.
    :param policy: a ``tensordict.nn`` module reading ``observation`` and writing ``action``.
    :param frames_per_batch: frames per batch; a multiple of ``env.num_envs``.
    :param device: where the policy runs and the batch lives.
    """

    def __init__(self, env: Any, policy: Any, frames_per_batch: int, device: str | torch.device = "cpu") -> None:
        if env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP) != AutoresetMode.SAME_STEP:
            raise ValueError("the collector needs a vector env with autoreset_mode=AutoresetMode.SAME_STEP")
        if frames_per_batch % env.num_envs:
            raise ValueError(f"frames_per_batch={frames_per_batch} is not a multiple of num_envs={env.num_envs}")
        self.env = env
        self.policy = policy
        self.num_envs = env.num_envs
        self.frames_per_batch = frames_per_batch
        self.steps_per_batch = frames_per_batch // env.num_envs
        self.device = torch.device(device)
        self._seed: int | None = None
        self._obs: torch.Tensor | None = None
        self._episode_return = np.zeros(self.num_envs)
        self._episode_length = np.zeros(self.num_envs, dtype=np.int64)
        #: returns and lengths of the episodes that ended in the last batch
        self.finished_episodes: tuple[np.ndarray, np.ndarray] = (np.empty(0), np.empty(0, dtype=np.int64))
        self._observers: list[StepObserver] = []
        self._carry = Carry(policy)

    def add_step_observer(self, observer: StepObserver) -> Callable[[], None]:
        """Call ``observer(render, done)`` after every env step of collection.

        ``render()`` returns the envs' frames (the env renders ``rgb_array``): a callable, so that
        frames are drawn only when the observer wants them; ``done`` is ``terminated | truncated``
        per env. Recorders use it to film the training envs.

        :param observer: the function to call.
        :return: a function that removes the observer again.
        """
        self._observers.append(observer)
        return lambda: self._observers.remove(observer) if observer in self._observers else None

    def set_seed(self, seed: int) -> None:
        """Reset the envs with ``seed`` (env ``i`` gets ``seed + i``) before the next batch."""
        self._seed = seed
        self._obs = None
        self.env.action_space.seed(seed)

    def reset(self) -> None:
        """Start fresh episodes in every env."""
        obs, _ = self.env.reset(seed=self._seed)
        self._seed = None
        self._obs = to_tensor(obs, self.device)
        self._carry.state = {}
        self._episode_return[:] = 0
        self._episode_length[:] = 0

    def __iter__(self) -> Iterator[TensorDict]:
        while True:
            yield self.collect()

    @torch.no_grad()
    def collect(self) -> TensorDict:
        """Step every env ``steps_per_batch`` times and return the batch ``[envs, time]``.

        The steps run in ``torch.inference_mode`` (the cheapest mode for small tensors); the
        batch is stacked after it, so that its tensors are ordinary ones, free to use in autograd.
        """
        if self._obs is None:
            self.reset()
        env, device, n = self.env, self.device, self.num_envs
        columns: dict[str, list[Any]] = {}
        handed_on: dict[str, list[torch.Tensor]] = {}  # what the policy wrote under "next"
        next_obs_list, rewards, raw_rewards, terminateds, truncateds = [], [], [], [], []
        carry = self._carry
        starts = self._episode_length == 0  # the envs whose next step begins an episode
        with torch.inference_mode(), set_interaction_type(InteractionType.RANDOM):
            for _ in range(self.steps_per_batch):
                # the observation is on ``device`` already: nothing to move, nothing to wait for
                step = carry(self._obs, starts)
                for key, state in carry.state.items():
                    handed_on.setdefault(key, []).append(state)
                for key, value in step.items():
                    columns.setdefault(key, []).append(value)
                obs, reward, terminated, truncated, info = env.step(step["action"].cpu().numpy())
                done = starts = terminated | truncated
                for observer in self._observers:
                    observer(env.render, done)
                self._obs = to_tensor(obs, device)
                if "final_obs" in info:  # an episode ended (SAME_STEP autoreset): obs holds the reset observation
                    rows = np.flatnonzero(done)
                    next_obs_list.append(to_tensor(with_rows(obs, [info["final_obs"][i] for i in rows], rows), device))
                else:
                    next_obs_list.append(self._obs)
                rewards.append(reward)
                raw_rewards.append(rewards_of_env(info, reward))
                terminateds.append(terminated)
                truncateds.append(truncated)
        terminated_np, truncated_np = np.stack(terminateds, axis=1), np.stack(truncateds, axis=1)
        self._count_episodes(np.stack(raw_rewards, axis=1), terminated_np | truncated_np)
        terminated_t = torch.as_tensor(terminated_np, device=device).unsqueeze(-1)
        truncated_t = torch.as_tensor(truncated_np, device=device).unsqueeze(-1)
        batch: dict[str, Any] = {key: torch.stack(values, dim=1) for key, values in columns.items()}
        batch["next"] = {
            "observation": torch.stack(next_obs_list, dim=1),
            "reward": torch.as_tensor(np.stack(rewards, axis=1), dtype=torch.float32, device=device).unsqueeze(-1),
            "terminated": terminated_t,
            "truncated": truncated_t,
            "done": terminated_t | truncated_t,
            **{key: torch.stack(values, dim=1) for key, values in handed_on.items()},
        }
        return TensorDict(batch, batch_size=[n, self.steps_per_batch], device=device)

    def _count_episodes(self, raw_reward: np.ndarray, done: np.ndarray) -> None:
        """Set :attr:`finished_episodes` from a batch's unscaled rewards and episode ends ``[envs, time]``.

        Episodes are listed in the order they ended; running ones carry their return and length over to the next batch.
        """
        returns, lengths = [], []
        start = np.zeros(self.num_envs, dtype=np.int64)  # where each env's running episode began in this batch
        for t, env in zip(*np.nonzero(done.T), strict=True):
            returns.append(self._episode_return[env] + raw_reward[env, start[env] : t + 1].sum())
            lengths.append(self._episode_length[env] + t + 1 - start[env])
            self._episode_return[env], self._episode_length[env], start[env] = 0, 0, t + 1
        steps = done.shape[1]
        self._episode_return += [raw_reward[env, start[env] :].sum() for env in range(self.num_envs)]
        self._episode_length += steps - start
        self.finished_episodes = (np.array(returns, dtype=np.float64), np.array(lengths, dtype=np.int64))

    def state_dict(self) -> dict[str, Any]:
        """Where collection stands: current observations, running episodes, and the envs' own state.

        The envs are saved when the vector env is a :class:`rlcore.SaveableVectorEnv` that can
        capture them now; otherwise they are recorded as ``None`` and a resumed run starts fresh episodes.
        """

        base = base_env(self.env)
        return {
            "observation": None if self._obs is None else _plain(self._obs.clone()),  # not an inference tensor
            "episode_return": torch.from_numpy(self._episode_return.copy()),
            "episode_length": torch.from_numpy(self._episode_length.copy()),
            "envs": base.env_state() if self._obs is not None and hasattr(base, "env_state") else None,
            "carried": {key: value.clone() for key, value in self._carry.state.items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`; without saved envs, episodes restart (with a warning)."""

        saved = len(state["episode_length"])
        if saved != self.num_envs:
            raise ValueError(f"the checkpoint's collector ran {saved} envs, env.num_envs is {self.num_envs}")
        self._seed = None
        if state.get("envs") is None or state.get("observation") is None:
            base = base_env(self.env)
            which = base.unsaveable() if hasattr(base, "unsaveable") else None
            warnings.warn(
                f"the envs of this run cannot be saved ({which or type(base).__name__}); the resumed run starts fresh episodes",
                stacklevel=2,
            )
            self._obs = None
            return
        base_env(self.env).load_env_state(state["envs"])
        obs = state["observation"]
        self._obs = (TensorDict(obs, batch_size=[self.num_envs]) if isinstance(obs, Mapping) else obs).to(self.device)
        self._carry.state = {key: value.to(self.device) for key, value in state.get("carried", {}).items()}
        self._episode_return = state["episode_return"].numpy().copy()
        self._episode_length = state["episode_length"].numpy().copy()

    def update_policy_weights_(self, policy_weights: Any = None) -> None:
        """Nothing to do: the envs of this collector act with the trainer's own policy object.

        :param policy_weights: ignored (TorchRL's signature).
        """

    def shutdown(self) -> None:
        """Close the envs."""
        self.env.close()
