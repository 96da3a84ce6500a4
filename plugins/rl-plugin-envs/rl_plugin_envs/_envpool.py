"""EnvPool as a vector-env backend (``env.vectorization: envpool``): envs stepped in C++ threads.

EnvPool resets an env that ended on the *next* step (Gymnasium's ``NEXT_STEP``); rl-core's
collector wants ``SAME_STEP``: the env is reset at once, its reset observation returned, and the
true final observation kept in ``info["final_obs"]``. :class:`EnvPoolVectorEnv` does that with
EnvPool's partial reset (``reset(env_ids)``), so batches, episode statistics and truncation (a
time limit's end bootstraps, a termination does not) are the same as with ``sync`` and ``async``.

Threads: unless ``env.kwargs`` sets EnvPool's ``num_threads``, the pool runs one thread per CPU core
this process may use (at most one per env), not EnvPool's default of one thread per env: threads
beyond the cores only add hand-offs. On 2 cores, 64 CartPoles collect 113k frames/s with 2 threads
and 65k-112k with 64; 8 Pongs 1.6k with 2 threads or 8. (A cheap env such as CartPole goes faster
still with 1 thread, 129k, which leaves a core to the training loop; a costly one such as Pong
slower, 1.4k: set ``num_threads`` for the env at hand.)

Seeds: EnvPool seeds env ``i`` with ``seed + i`` when the pool is made; ``reset(seed=s)`` makes the
pool again with seed ``s`` once it has stepped (the collector seeds once per run). EnvPool's envs cannot be saved: a
resumed run starts fresh episodes (the collector says so). They draw nothing: ``render_mode: rgb_array`` gives the
frames an image env's policy observed.
"""

from __future__ import annotations

import difflib
import os
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from rlcore import ConfigError, shown


def envpool_task(env_id: str) -> str:
    """EnvPool's name of a Gymnasium id: ``ALE/Pong-v5`` is ``Pong-v5``; other ids are the same.

    :raises ConfigError: when EnvPool has no such env (with close matches), or is not installed.
    """
    try:
        import envpool
    except ImportError as err:
        raise ConfigError(f"env.vectorization: envpool is not installed ({err}); pip install envpool") from None
    task = env_id.removeprefix("ALE/").rpartition(":")[2]
    known = envpool.list_all_envs()
    if task not in known:
        close = difflib.get_close_matches(task, known, n=5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ConfigError(f"env.vectorization: envpool has no env {shown(task)} (from env.id {shown(env_id)}){hint}")
    return task


#: EnvPool options that come from elsewhere than ``env.kwargs``
_SET_HERE = ("num_envs", "batch_size", "seed")


class EnvPoolVectorEnv(VectorEnv):
    """An EnvPool pool behind Gymnasium's vector-env API, in ``SAME_STEP`` autoreset mode.

    :param task: EnvPool's env name (``CartPole-v1``, ``Pong-v5``, ``HalfCheetah-v5``).
    :param num_envs: envs in the pool.
    :param seed: env ``i`` is seeded ``seed + i``.
    :param kwargs: EnvPool's own options for the task (``max_episode_steps``, ``frame_skip``, ``img_height``,
        ``num_threads``, ...).
    """

    def __init__(self, task: str, num_envs: int, seed: int = 0, kwargs: Mapping[str, Any] | None = None) -> None:
        self.task, self.num_envs = task, num_envs
        self.kwargs = {"num_threads": min(num_envs, _cores()), **(kwargs or {})}
        self._seed = seed
        self.pool = self._make(seed)
        self._fresh = True  # the pool has not stepped since it was made with ``_seed``
        self.single_observation_space = self.pool.observation_space
        self.single_action_space = self.pool.action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}
        self.render_mode = None
        self._all = np.arange(num_envs, dtype=np.int32)

    def _make(self, seed: int) -> Any:
        import envpool

        options = [k for k in envpool.make_spec(self.task).config._fields if k not in _SET_HERE]
        unknown = [k for k in self.kwargs if k not in options]
        if unknown:
            raise ConfigError(f"env.kwargs.{unknown[0]}: envpool's {self.task} takes no such option (valid choices: {', '.join(options)})")
        # EnvPool makes its spaces anew at each reset, and Gymnasium warns each time that it casts their float64 bounds to float32
        warnings.filterwarnings("ignore", message=".*precision lowered by casting to float32")
        try:
            return envpool.make(self.task, env_type="gymnasium", num_envs=self.num_envs, seed=int(seed), **self.kwargs)
        except (TypeError, ValueError, RuntimeError) as err:
            raise ConfigError(f"env.kwargs: envpool cannot make {self.task!r} with {self.kwargs} ({err})") from None

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        if seed is not None:
            first = int(seed[0] if isinstance(seed, (list, tuple)) else seed)
            if first != self._seed or not self._fresh:
                self.pool.close()
                self.pool, self._seed = self._make(first), first
            self._fresh = True
        obs, info = self.pool.reset(self._all)
        return obs, dict(info)

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        self._fresh = False
        obs, reward, terminated, truncated, info = self.pool.step(np.asarray(actions), self._all)
        info = dict(info)
        done = np.logical_or(terminated, truncated)
        if done.any():
            ended = np.flatnonzero(done).astype(np.int32)
            reset_obs, _ = self.pool.reset(ended)
            final = obs.copy()
            obs = obs.copy()
            obs[ended] = reset_obs
            info["final_obs"], info["_final_obs"] = final, done
            info["final_info"], info["_final_info"] = {}, done
        return obs, np.asarray(reward, dtype=np.float64), np.asarray(terminated, dtype=bool), np.asarray(truncated, dtype=bool), info

    def close_extras(self, **kwargs: Any) -> None:
        close = getattr(self.pool, "close", None)
        if close is not None:
            close()


def _cores() -> int:
    """CPU cores this process may run on."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def envpool_vector_env(make_env: Callable[[], Any], num_envs: int, *, env_id: str = "", kwargs: Mapping[str, Any] | None = None, **_: Any) -> EnvPoolVectorEnv:
    """``num_envs`` envs of ``env_id`` stepped by EnvPool in C++ threads; ``env.kwargs`` are EnvPool's options for the task.

    :param make_env: unused (EnvPool makes its own envs).
    :param num_envs: envs in the pool.
    :param env_id: the run's env id (``CartPole-v1``, ``ALE/Pong-v5``: EnvPool's Atari envs preprocess
        themselves, 84 x 84 grey frames stacked by 4, as its ``Pong-v5`` defines; an ALE id's registration
        gives its sticky actions and action set, as with ``sync`` and ``ale``).
    :param kwargs: ``env.kwargs``.
    """
    from ._ale import atari_settings
    from ._render import rendering

    atari = atari_settings(env_id) or {}
    kwargs = {**{key: atari[key] for key in ("repeat_action_probability", "full_action_space") if key in atari}, **(kwargs or {})}
    render_mode = kwargs.pop("render_mode", None)  # (its envs draw nothing: rgb_array gives the observed frames of image envs)
    return rendering(EnvPoolVectorEnv(envpool_task(env_id), num_envs, kwargs=kwargs), render_mode, "envpool")


__all__ = ["EnvPoolVectorEnv", "envpool_task", "envpool_vector_env"]
