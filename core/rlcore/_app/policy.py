"""A trained policy in one line: :func:`load_policy` reads a run's checkpoint, :meth:`Policy.predict` acts on raw observations.

The run's observation wrappers are applied by the wrappers themselves. The policy builds the run's
``env.wrappers`` pipeline over *feed* envs, one per row of the batch, each showing the observation it
is given; the pipeline is frozen, with the checkpoint's statistics. So every wrapper that transforms
observations (normalisation, a frame stack, resizing, a Gymnasium wrapper by import path) does what
it did in the run, and is written once. Actions go back down the pipeline's action wrappers
(Gymnasium's ``ClipAction``, ``RescaleAction``, ...) to the raw env's action space.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import torch
from gymnasium.vector import VectorActionWrapper
from tensordict.nn import InteractionType, set_interaction_type

from .._kernel.contracts import CONFIG_FILE
from .._kernel.errors import ConfigError, first_line
from .._kernel.manager import PluginManager, get_plugin_manager
from .build import build_loss_module, freeze, load_checkpoint
from .collector import Carry, to_tensor
from .config import read_config_file, resolve_config
from .envs import base_env, env_layers, load_env_states, make_vector_env, wrap_vector_env


class _Feed(gymnasium.Env[Any, Any]):
    """One env that shows the observation it is given: the raw end of a run's wrapper pipeline.

    A step ends the episode when ``starting`` is set, so that ``SAME_STEP`` autoreset starts the
    wrappers' episode (a frame stack's) on the given observation.
    """

    def __init__(self, observation_space: Any, action_space: Any, render_mode: str | None) -> None:
        self.observation_space, self.action_space, self.render_mode = observation_space, action_space, render_mode
        self.observation: Any = None
        self.starting = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        return self.observation, {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return self.observation, 0.0, self.starting, False, {}

    def render(self) -> None:
        return None


def raw_spaces(config: Mapping[str, Any], pm: PluginManager) -> tuple[Any, Any, str | None]:
    """One observation's and one action's space of the run's env before its wrappers (its vectorization's), and its render mode."""
    env_cfg = config["env"]
    raw = make_vector_env(env_cfg["id"], 1, vectorization=env_cfg["vectorization"], kwargs=env_cfg["kwargs"], plugin_manager=pm)
    try:
        return raw.single_observation_space, raw.single_action_space, getattr(raw, "render_mode", None)
    finally:
        raw.close()


class Preprocessor:
    """The run's wrapper pipeline over ``num_envs`` feed envs, frozen with the checkpoint's statistics: raw observations
    in, the policy's observations out; the policy's actions in, raw actions out.

    :param raw: :func:`raw_spaces`' spaces and render mode, which the feed envs take.
    :raises ConfigError: for a wrapper that cannot take given observations (one that reads an emulator's screen).
    """

    def __init__(
        self, config: Mapping[str, Any], pm: PluginManager, env_states: Mapping[str, Any], raw: tuple[Any, Any, str | None], num_envs: int = 1
    ) -> None:
        env_cfg = config["env"]
        self.raw = raw
        self.raw_observation_space, self.raw_action_space, _ = raw
        feed = partial(_Feed, *raw)
        base = pm.factory("vectorizations", "sync")(feed, num_envs, env_id=env_cfg["id"], kwargs={})  # (SAME_STEP autoreset, as the run's)
        try:
            self.env = wrap_vector_env(base, env_cfg["wrappers"], pm)
        except ConfigError as err:
            raise ConfigError(
                f"load_policy: {first_line(err)}: it cannot take given observations; "
                "load_policy(..., preprocess=False) acts on the observations of the run's env (policy.make_env())"
            ) from None
        load_env_states(self.env, env_states)
        freeze(self.env)
        self.num_envs = num_envs
        self._base = base_env(self.env)
        self._feeds: list[_Feed] = [env.unwrapped for env in self._base.envs]
        self._fresh = True

    def restart(self) -> None:
        """Start every row's episode afresh at the next :meth:`observe` (the wrappers reset, their statistics kept)."""
        self._fresh = True

    def observe(self, batch: Any, starts: np.ndarray) -> Any:
        """``batch`` (one raw observation per feed) through the wrappers; the episode of row ``i`` starts where ``starts[i]``."""
        for i, (feed, start) in enumerate(zip(self._feeds, starts)):
            feed.observation, feed.starting = _row(self.raw_observation_space, batch, i), bool(start)
        if self._fresh:
            self._fresh = False
            return self.env.reset()[0]
        return self.env.step(self.env.action_space.sample())[0]  # (the feeds ignore the action)

    def act(self, action: np.ndarray) -> np.ndarray:
        """The policy's actions down the wrappers' action transforms (vector ones, then each env's), to raw actions."""
        for layer in env_layers(self.env):
            if isinstance(layer, VectorActionWrapper):
                action = layer.actions(action)
        rows = []
        for env, row in zip(self._base.envs, action):
            while isinstance(env, gymnasium.Wrapper):
                if isinstance(env, gymnasium.ActionWrapper):
                    row = env.action(row)
                env = env.env
            rows.append(np.asarray(row))
        return np.stack(rows)

    def close(self) -> None:
        self.env.close()


class Policy:
    """A run's trained policy, acting on the raw observations of the run's env (before its wrappers).

    The policy keeps what the run's wrappers remember between steps (a frame stack) for each row of
    the batch: a row starts afresh when ``episode_start`` says so, and every row does at the first
    call and when the batch size changes.

    :ivar module: the ``tensordict.nn`` policy (reads ``observation``, writes ``action``), in eval mode.
    :ivar run_dir: the run directory.
    :ivar config: the run's resolved config.
    :ivar checkpoint: the checkpoint the weights come from.
    :ivar frames: the frames the run had collected at that checkpoint.
    :ivar observation_space: what :meth:`predict` takes: one raw observation's space (the wrapped env's without preprocessing).
    :ivar action_space: what :meth:`predict` returns: one raw action's space (the wrapped env's without preprocessing).
    """

    def __init__(
        self,
        module: Any,
        run_dir: Path,
        config: dict[str, Any],
        checkpoint: Path,
        frames: int,
        env_states: Mapping[str, Any],
        pm: PluginManager,
        preprocessor: Preprocessor | None,
        spaces: tuple[Any, Any],
    ) -> None:
        self.module, self.run_dir, self.config, self.checkpoint, self.frames = module, run_dir, config, checkpoint, frames
        self.observation_space, self.action_space = spaces
        self._env_states, self._pm, self._preprocessor = env_states, pm, preprocessor
        self._device = next((p.device for p in module.parameters()), torch.device("cpu"))

    def predict(self, observation: Any, state: Any = None, episode_start: Any = None, deterministic: bool = True) -> tuple[Any, Any]:
        """The actions for ``observation``: one raw observation or a batch of them, numpy or torch.

        :param observation: an observation of :attr:`observation_space`, or a batch ``[N, ...]`` of them.
        :param state: the recurrent state that the previous call returned: ``None`` at the start (and always for a
            feed-forward policy).
        :param episode_start: one bool per row: its episode starts with this observation (default: every row when
            ``state`` is ``None``, none otherwise). A recurrent policy starts those rows from a fresh state.
        :param deterministic: act with the distribution's deterministic value (its mode), or sample.
        :return: ``(action, state)``: the action, or a batch of them, as a numpy array (a torch tensor for a
            torch observation), in :attr:`action_space`; and the state to pass to the next call, ``{key: array}``
            (what a recurrent policy hands on: ``recurrent_state_h`` and ``recurrent_state_c`` of an LSTM), or ``None``.
        :raises ValueError: for an observation whose shape fits neither one observation nor a batch.
        """
        values = observation.values() if isinstance(observation, Mapping) else [observation]
        as_torch = any(isinstance(value, torch.Tensor) for value in values)
        batch, single = _as_batch(self.observation_space, observation)
        n = _rows(batch)
        given = None if episode_start is None else np.broadcast_to(np.asarray(episode_start, dtype=bool).reshape(-1), (n,))
        obs = batch if self._preprocessor is None else self._observe(batch, np.zeros(n, dtype=bool) if given is None else given)
        carry = Carry(self.module)
        for key, value in (state or {}).items():  # (one row's state, or a batch's)
            carry.state[key] = torch.as_tensor(np.asarray(value)).reshape(n, *np.shape(value)[int(not single) :]).to(self._device)
        mode = InteractionType.DETERMINISTIC if deterministic else InteractionType.RANDOM
        with torch.inference_mode(), set_interaction_type(mode):
            action = carry(to_tensor(obs, self._device), np.full(n, state is None) if given is None else given)["action"].cpu().numpy()
        if self._preprocessor is not None:
            action = self._preprocessor.act(action)
        handed: dict[str, Any] = {key: value.cpu().numpy() for key, value in carry.state.items()}
        if single:
            action, handed = np.asarray(action[0]), {key: value[0] for key, value in handed.items()}
        if as_torch:
            action, handed = torch.as_tensor(action), {key: torch.as_tensor(value) for key, value in handed.items()}
        return action, handed or None

    def make_env(self, num_envs: int = 1, **env_kwargs: Any) -> Any:
        """The run's env, with its wrappers and the checkpoint's statistics, frozen: what the run's evaluations step.

        :param num_envs: envs side by side.
        :param env_kwargs: keyword arguments of the env over the config's ``env.kwargs`` (``render_mode``).
        """
        return run_env(self.config, self._pm, self._env_states, num_envs, **env_kwargs)

    def reset(self) -> None:
        """Start every row afresh at the next call, as at the first."""
        if self._preprocessor is not None:
            self._preprocessor.restart()

    def close(self) -> None:
        """Close the wrapper pipeline (its envs)."""
        if self._preprocessor is not None:
            self._preprocessor.close()

    def __enter__(self) -> Policy:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Policy({self.config['algo']['name']} on {self.config['env']['id']}, {self.frames} frames, {self.checkpoint.name})"

    def _observe(self, batch: Any, starts: np.ndarray) -> Any:
        assert self._preprocessor is not None
        if self._preprocessor.num_envs != len(starts):
            self._preprocessor.close()
            self._preprocessor = Preprocessor(self.config, self._pm, self._env_states, self._preprocessor.raw, len(starts))
        return self._preprocessor.observe(batch, starts)


def _as_batch(space: Any, observation: Any) -> tuple[Any, bool]:
    """``observation`` (of ``space``, or a batch of them; a ``Dict``'s a mapping of its entries) as a batch of numpy arrays,
    and whether it was one observation.

    :raises ValueError: for one that fits neither one observation nor a batch, or a ``Dict``'s with other entries.
    """
    if isinstance(space, gymnasium.spaces.Dict):
        if not isinstance(observation, Mapping) or set(observation) != set(space.spaces):
            got = ", ".join(map(str, observation)) if isinstance(observation, Mapping) else type(observation).__name__
            raise ValueError(f"predict: a Dict observation has the entries {', '.join(space.spaces)}, got {got}")
        parts = {key: _as_batch(sub, observation[key]) for key, sub in space.spaces.items()}
        if len({single for _, single in parts.values()}) > 1:
            raise ValueError("predict: the entries of a Dict observation are one observation in some and a batch in others")
        return {key: batch for key, (batch, _) in parts.items()}, next(iter(parts.values()))[1]
    batch = np.asarray(observation.detach().cpu() if isinstance(observation, torch.Tensor) else observation)
    shape = tuple(space.shape)
    if batch.shape == shape:
        return batch[None], True
    if batch.ndim == len(shape) + 1 and batch.shape[1:] == shape:
        return batch, False
    dims = ", ".join(("N", *map(str, shape)))
    raise ValueError(f"predict: an observation of shape {tuple(batch.shape)} fits neither one observation {shape} nor a batch ({dims})")


def _rows(batch: Any) -> int:
    """The rows of a batch of observations (a ``Dict``'s: of its entries)."""
    return _rows(next(iter(batch.values()))) if isinstance(batch, Mapping) else len(batch)


def _row(space: Any, batch: Any, i: int) -> Any:
    """Row ``i`` of a batch of observations of ``space`` (a ``Dict``'s: a dict), in the space's dtype."""
    if isinstance(space, gymnasium.spaces.Dict):
        return {key: _row(sub, batch[key], i) for key, sub in space.spaces.items()}
    return np.asarray(batch[i], dtype=space.dtype)


def run_env(config: Mapping[str, Any], pm: PluginManager, env_states: Mapping[str, Any], num_envs: int = 1, **env_kwargs: Any) -> Any:
    """The env of a run's resolved config, with the wrappers' statistics ``env_states`` (a checkpoint's), frozen.

    :param env_kwargs: keyword arguments of the env over the config's ``env.kwargs`` (``render_mode``).
    """
    env_cfg = config["env"]
    kwargs = {**env_cfg["kwargs"], **env_kwargs}
    env = make_vector_env(env_cfg["id"], num_envs, vectorization=env_cfg["vectorization"], kwargs=kwargs, wrappers=env_cfg["wrappers"], plugin_manager=pm)
    load_env_states(env, env_states)
    freeze(env)
    return env


def run_of(path: str | Path) -> tuple[Path, Path | None]:
    """The run directory of ``path`` and the checkpoint it names: ``(path, None)`` for a run directory (or a directory
    that ought to be one), ``(run, path)`` for a checkpoint inside a run.

    :raises ConfigError: when ``path`` does not exist, or is a file in no run directory.
    """
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such run directory or checkpoint")
    if (path / CONFIG_FILE).is_file():
        return path, None
    run = next((parent for parent in path.resolve().parents if (parent / CONFIG_FILE).is_file()), None)
    if run is not None:
        return run, path
    if path.is_dir():
        return path, None  # (reading its config says what is missing)
    raise ConfigError(f"{path}: not a checkpoint of a run (no {CONFIG_FILE} in a directory above it)")


def load_policy(
    path: str | Path,
    *,
    checkpoint: str | Path | None = None,
    device: str | torch.device = "cpu",
    preprocess: bool = True,
    plugin_manager: PluginManager | None = None,
) -> Policy:
    """The trained policy of a run: ``load_policy("runs/ppo_CartPole-v1_...").predict(obs)``.

    It needs no trainer and no new run directory, and only the plugins of the run's algorithm, env and
    wrappers (not its loggers or hooks).

    :param path: a run directory (its newest readable checkpoint), or a checkpoint in one.
    :param checkpoint: a checkpoint of the run at ``path``, rather than its newest.
    :param device: where the policy runs.
    :param preprocess: apply the run's wrappers to the observations given to :meth:`Policy.predict`
        (raw env observations); ``False``: they are the wrapped env's (:meth:`Policy.make_env`'s).
    :param plugin_manager: the plugins (default: the installed ones).
    :raises ConfigError: for a path that is not a run or its checkpoint, a checkpoint of another run,
        or (with ``preprocess``) a wrapper that cannot take given observations.
    :raises CheckpointError: when no checkpoint can be read.
    """
    pm = plugin_manager or get_plugin_manager()
    run_dir, named = run_of(path)
    run_config = read_config_file(run_dir / CONFIG_FILE)
    # the run's loggers and hooks take no part: acting needs none of their plugins installed
    config = resolve_config({k: v for k, v in run_config.items() if k not in ("loggers", "hooks")}, pm)
    found, state = load_checkpoint(run_dir, checkpoint or named, pm)
    env_states = state.get("modules", {}).get("env", {})
    preprocessor = Preprocessor(config, pm, env_states, raw_spaces(config, pm)) if preprocess else None
    env = preprocessor.env if preprocessor is not None else run_env(config, pm, env_states)
    wrapped = env.single_observation_space, env.single_action_space
    if preprocessor is None:
        env.close()
    try:
        module, weights = build_loss_module(config, pm, *wrapped, device=str(device)), state["loss_module"]
        try:
            module.load_state_dict(weights)
        except (RuntimeError, KeyError, ValueError) as err:  # another run's checkpoint: other networks
            raise ConfigError(f"{found}: not a checkpoint of the run in {run_dir} ({first_line(err)})") from None
    except BaseException:
        if preprocessor is not None:
            preprocessor.close()
        raise
    spaces = (preprocessor.raw_observation_space, preprocessor.raw_action_space) if preprocessor is not None else wrapped
    policy = module.policy.eval().requires_grad_(False)
    return Policy(policy, run_dir, config, found, int(state["counters"]["collected_frames"]), env_states, pm, preprocessor, spaces)
