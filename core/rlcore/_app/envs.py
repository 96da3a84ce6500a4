"""Vector envs from a Gymnasium id or a registered env, with the configured wrappers."""

from __future__ import annotations

import contextlib
import difflib
import importlib
import inspect
import os
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from importlib.metadata import entry_points
from typing import Annotated, Any, Literal

from .._kernel.errors import ConfigError, PluginError, error_line, shown, valid_choices
from .._kernel.manager import PluginManager, get_plugin_manager
from .._kernel.options import Range, check_value, import_module, validate_options


def make_vector_env(
    env_id: str,
    num_envs: int = 1,
    *,
    vectorization: str = "sync",
    kwargs: Mapping[str, Any] | None = None,
    wrappers: Mapping[str, Mapping[str, Any] | None] | None = None,
    plugin_manager: PluginManager | None = None,
) -> Any:
    """A ``gymnasium.vector.VectorEnv`` in ``SAME_STEP`` autoreset mode, as the collector wants it.

    :param env_id: a name from ``rl_register_envs`` or a Gymnasium id (``CartPole-v1``).
    :param num_envs: how many copies run side by side.
    :param vectorization: a backend from ``rl_register_vectorizations``: ``sync`` (one process),
        ``async`` (a process per env), or one a plugin adds.
    :param kwargs: keyword arguments of the env (``render_mode`` among them).
    :param wrappers: ``{name: options}`` from ``rl_register_env_wrappers``, applied in order.
    :param plugin_manager: where registered envs and wrappers are looked up.
    :raises ConfigError: for an unknown env id, vectorization or wrapper.
    """

    pm = plugin_manager or get_plugin_manager()
    kwargs = dict(kwargs or {})
    make_one = partial(env_maker(env_id, pm)[0], **kwargs)
    backend = pm.factory("vectorizations", vectorization, key="env.vectorization")
    with pm.making("vectorizations", vectorization) as who:
        env = _vector_env(backend(make_one, num_envs, env_id=env_id, kwargs=kwargs), f"env.vectorization: {who}")
    return wrap_vector_env(env, wrappers or {}, pm)


def wrap_vector_env(env: Any, wrappers: Mapping[str, Mapping[str, Any] | None], pm: PluginManager) -> Any:
    """``env`` under the ``env.wrappers`` pipeline ``wrappers`` (``{name: options}``, applied in order); closed on failure.

    :raises ConfigError: for an unknown wrapper or a bad option.
    """
    try:
        for name, values in checked_wrappers(wrappers, pm, defaults=False).items():
            wrapper = pm.factory("env_wrappers", name, key="env.wrappers")
            with pm.making("env_wrappers", name) as who:
                env = _vector_env(wrapper(env, **values), f"env.wrappers.{name}: {who}")
    except BaseException:
        env.close()  # (the worker processes of an async env would keep the interpreter from exiting)
        raise
    return env


def checked_wrappers(wrappers: Mapping[str, Mapping[str, Any] | None], pm: PluginManager, *, defaults: bool = True) -> dict[str, dict[str, Any]]:
    """An ``env.wrappers`` pipeline with each wrapper's options checked against its factory, as a config's are.

    :param wrappers: ``{name: options}``, in order.
    :param pm: where the wrappers are looked up.
    :param defaults: also write out the options left to their defaults (a run's record, which pins them).
    :raises ConfigError: for an unknown wrapper, or a bad option, naming it.
    """
    return {
        name: validate_options(f"env.wrappers.{name}", pm.factory("env_wrappers", name, key="env.wrappers"), options or {}, ("env",), defaults=defaults)
        for name, options in wrappers.items()
    }


def _vector_env(env: Any, made_by: str) -> Any:
    """``env``, when it is a vector env (it steps, resets and has spaces).

    :param made_by: who made it, for the message.
    :raises PluginError: naming ``made_by`` otherwise.
    """
    if all(hasattr(env, attr) for attr in ("step", "reset", "single_observation_space", "single_action_space", "num_envs")):
        return env
    raise PluginError(f"{made_by} returned {env!r:.60}, expected a gymnasium.vector.VectorEnv")


def env_maker(env_id: str, plugin_manager: PluginManager) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """How one env of ``env_id`` is made: ``(make(**kwargs), constructor)``, the constructor being
    what receives the kwargs (to check their names).

    ``env_id`` is a name from ``rl_register_envs``, a Gymnasium id, or Gymnasium's ``module:EnvId``
    (the module is imported first, as ``gymnasium.make`` does). An id that a package registers when
    it is imported works without that import: the packages of :data:`REGISTERING_MODULES` (``ALE/``
    ids: ale-py) and those that declare a ``gymnasium.envs`` entry point (MinAtar) are loaded when
    the id is not registered yet.

    :raises ConfigError: for an id that is neither registered by a plugin nor a Gymnasium id, with close matches.
    """

    import gymnasium  # (lazy: plugins import this module's helpers at their top; rlctl plugins list imports no gymnasium)
    from gymnasium.envs.registration import load_env_creator


    registered = plugin_manager.registry("envs")
    if env_id in registered:
        factory = registered[env_id][1]
        return factory, factory
    gym_id = gymnasium_id(env_id)
    if gym_id is not None:

        entry = gymnasium.spec(gym_id).entry_point
        constructor: Callable[..., Any] = load_env_creator(entry) if isinstance(entry, str) else entry or gymnasium.make
        return partial(make_gymnasium_env, env_id), constructor

    wanted = env_id.rsplit(":", 1)[-1]
    names = [*registered, *gymnasium.registry]  # (gymnasium_id imported every package of REGISTERING_MODULES for an id without "/")
    close = [name for name in names if name.rsplit("/", 1)[-1].lower() == wanted.lower()]
    close += [name for name in names if name.lower().startswith(wanted.lower().split("-")[0]) and name not in close]
    close = close[:5]
    close = close or difflib.get_close_matches(wanted, names, n=5, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    namespace = wanted.split("/")[0] if "/" in wanted else None
    package = next((pkg for prefix, pkg in REGISTERING_MODULES.items() if wanted.startswith(prefix)), None)
    if package is not None and namespace is not None and not any(n.startswith(f"{namespace}/") for n in gymnasium.registry):
        hint += f"; its ids come with the package {package[1]} (pip install {package[1]})"
    raise ConfigError(f"env.id: unknown env {shown(env_id)} (neither a Gymnasium id nor a registered env{hint})")


#: Packages that register Gymnasium ids when they are imported, by the ids' prefix: ``(module, pip name)``.
REGISTERING_MODULES: dict[str, tuple[str, str]] = {
    "ALE/": ("ale_py", "ale-py"),
    "MinAtar/": ("minatar.gym", "minatar"),
    "dm_control/": ("shimmy", "shimmy[dm-control]"),
    "MiniGrid-": ("minigrid", "minigrid"),
    "BabyAI-": ("minigrid", "minigrid"),
}
_ENTRY_POINTS_LOADED: list[bool] = []


def _headless_rendering() -> None:
    """Without a display, render ``rgb_array`` frames off-screen: pygame's dummy video driver (no SDL error
    line on every run) and MuJoCo's EGL (its default needs a display); a value the user set is kept.
    SDL (pygame) takes no signal handlers: it would turn a SIGTERM into a quit event nobody reads, and pygame
    prints no greeting on stdout, where ``rlctl eval`` writes its JSON."""
    os.environ.setdefault("SDL_NO_SIGNAL_HANDLERS", "1")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
        os.environ.setdefault("MUJOCO_GL", "egl")


def gymnasium_id(env_id: str) -> str | None:
    """The id of ``env_id`` in Gymnasium's registry once the package that registers it is imported, or ``None``.

    ``module:EnvId`` imports ``module`` (Gymnasium's own form); an id missing from the registry loads
    the package :data:`REGISTERING_MODULES` names for its prefix, then the ``gymnasium.envs`` entry
    points (Gymnasium 0.26-0.29's plugins, which MinAtar still declares), once per process, then, for
    an id without a namespace, the packages of :data:`REGISTERING_MODULES` one by one until one registers it.

    :raises ConfigError: when the module of ``module:EnvId`` cannot be imported.
    """

    import gymnasium  # (lazy: see env_maker)

    _headless_rendering()  # before an env's module is imported (MuJoCo reads MUJOCO_GL then)
    module, _, name = env_id.rpartition(":")
    if module:
        try:
            import_module(module)  # as `python -m` finds it: a module of the working directory too
        except Exception as err:  # whatever it raises on import (a SyntaxError too)
            raise ConfigError(f"env.id: cannot import module {shown(module)} of {shown(name)} ({error_line(err)[:100]})") from None
    if name in gymnasium.registry:
        return name
    prefix = next((p for p in REGISTERING_MODULES if name.startswith(p)), None)
    if prefix is not None:
        with contextlib.suppress(ImportError):
            importlib.import_module(REGISTERING_MODULES[prefix][0])
        if name in gymnasium.registry:
            return name
    if not _ENTRY_POINTS_LOADED:

        _ENTRY_POINTS_LOADED.append(True)
        for entry_point in entry_points(group="gymnasium.envs"):
            try:
                loaded = entry_point.load()
                if callable(loaded):
                    loaded()
            except Exception:  # a broken package leaves its ids out, never the lookup
                continue
    if "/" not in name:  # an id a package registers without its namespace ("PongNoFrameskip-v4": ale-py's)
        for module, _ in dict.fromkeys(REGISTERING_MODULES.values()):
            if name in gymnasium.registry:
                break
            with contextlib.suppress(Exception):
                importlib.import_module(module)
    return name if name in gymnasium.registry else None


def make_gymnasium_env(env_id: str, **kwargs: Any) -> Any:
    """``gymnasium.make`` for ``env_id`` (see :func:`gymnasium_id`), importing the package that registers it
    first: also in the worker process of an async vector env started with ``spawn``.

    :param env_id: a Gymnasium id, or ``module:EnvId``.
    :param kwargs: the env's keyword arguments.
    """

    import gymnasium  # (lazy: see env_maker)

    return gymnasium.make(gymnasium_id(env_id) or env_id, **kwargs)


#: Keyword arguments ``gymnasium.make`` takes itself, whatever the env.
_MAKE_KWARGS: dict[str, Any] = {
    "max_episode_steps": Annotated[int, Range(ge=1)] | None,
    "disable_env_checker": bool,
    "render_mode": Literal["rgb_array", "human", "ansi", "rgb_array_list", "depth_array"] | None,
}


def check_env(env_id: str, kwargs: Mapping[str, Any], plugin_manager: PluginManager) -> None:
    """Refuse an unknown env id, or a keyword argument its constructor does not take, before anything is built; the
    values too for an env of ``rl_register_envs`` (its factory's annotations, as for every factory's options).

    :raises ConfigError: naming ``env.id`` or ``env.kwargs.<name>`` and the valid choices.
    """

    make, constructor = env_maker(env_id, plugin_manager)
    if make is constructor:  # an env of rl_register_envs: its factory declares its options, as every factory does
        validate_options("env.kwargs", constructor, kwargs)
        return
    for key, annotation in _MAKE_KWARGS.items():
        if key in kwargs:
            check_value(f"env.kwargs.{key}", kwargs[key], annotation)
    try:
        params = inspect.signature(constructor).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    names = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and n != "self"]
    names += [n for n in _MAKE_KWARGS if n not in names]  # (gymnasium.make's own)
    for key in kwargs:
        if key not in names:
            raise ConfigError(f"env.kwargs.{key}: {env_id} takes no such argument (valid choices: {valid_choices(names, key) or 'none'})")


def get_stats_random_rollout(
    env: Any, steps: int = 1000, seed: int | None = 0, eps: float = 1e-4, plugin_manager: PluginManager | None = None
) -> dict[str, Any]:
    """Mean and standard deviation of the observations of a random-action rollout (TorchRL's helper of the same name).

    What a fixed observation normalisation (the old torchrl's ``fixed_normalize_states``) is set from.

    :param env: a vector env, or an env id (then made with :func:`make_vector_env`, one env, and closed).
    :param steps: vector-env steps to take; each reset and step of every env counts.
    :param seed: the rollout's reset and action-sampling seed.
    :param eps: a dimension whose standard deviation is below this is constant in the rollout and left as it is
        (``loc`` 0, ``scale`` 1, as TorchRL's helper does): an unlit pixel or a flag that lights up later is not
        multiplied by ``1 / eps``.
    :param plugin_manager: where an env id is looked up.
    :return: ``{"loc": mean, "scale": std}``, float32 tensors of the observation's shape.
    """
    import numpy as np  # (lazy: numpy and torch, as above)
    import torch

    own = isinstance(env, str)
    if own:
        env = make_vector_env(env, 1, plugin_manager=plugin_manager)
    try:
        obs, _ = env.reset(seed=seed)
        env.action_space.seed(seed)
        seen = [np.asarray(obs, dtype=np.float64)]
        for _ in range(steps):
            obs, *_ = env.step(env.action_space.sample())
            seen.append(np.asarray(obs, dtype=np.float64))
    finally:
        if own:
            env.close()
    flat = np.concatenate(seen).reshape(-1, *env.single_observation_space.shape)
    loc, scale = flat.mean(axis=0), flat.std(axis=0)
    constant = scale < eps
    loc[constant], scale[constant] = 0.0, 1.0
    return {"loc": torch.as_tensor(loc, dtype=torch.float32), "scale": torch.as_tensor(scale, dtype=torch.float32)}


def env_layers(env: Any) -> Iterator[Any]:
    """``env`` and every layer under it, outermost first: each wrapper's ``env``, down to the vector env (and the env
    it holds as ``env``, if any).

    :param env: a (wrapped) env.
    """
    while env is not None:
        yield env
        env = getattr(env, "env", None)


def env_states(env: Any) -> dict[str, Any]:
    """The ``state_dict`` of every wrapper of ``env`` that has one, outermost first, keyed by position."""
    return {f"{depth}:{type(layer).__name__}": layer.state_dict() for depth, layer in enumerate(env_layers(env)) if hasattr(layer, "state_dict")}


def load_env_states(env: Any, states: Mapping[str, Any]) -> None:
    """Restore :func:`env_states` into an env built with the same wrappers."""
    for depth, layer in enumerate(env_layers(env)):
        key = f"{depth}:{type(layer).__name__}"
        if key in states:
            layer.load_state_dict(states[key])


def base_env(env: Any) -> Any:
    """The vector env under ``env``'s wrappers (those with an ``env`` attribute)."""
    while hasattr(env, "env") and not hasattr(env, "envs") and not hasattr(env, "env_state"):
        env = env.env
    return env
