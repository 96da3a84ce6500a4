"""Any Gymnasium wrapper by import path: ``env.wrappers: {"gymnasium.wrappers.ClipAction": {}}``.

A ``gymnasium.Wrapper`` class wraps each env of the vector env (:func:`~rl_plugin_envs._inside.wrap_each_env`);
a ``gymnasium.vector.VectorWrapper`` class wraps the vector env. The options are the class's
keyword arguments, checked against its signature by rl-core's validator: a callable is given by its
import path (``{"gymnasium.wrappers.TransformReward": {"func": "mypackage.rewards:scale"}}``), an array
as a list.

A wrapper that may change rewards (any but an observation or action wrapper) gets :class:`KeepRawReward`
(or :class:`KeepRawRewardVector`) inside it: the env's own rewards stay in ``info["raw_reward"]``, so that
episode returns are logged and evaluated in the env's scale, as with the plugin's own reward wrappers.
"""

from __future__ import annotations

import inspect
from functools import partial
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import VectorWrapper

from rlcore import ConfigError, error_line, import_object, shown

from ._rewards import with_raw


class KeepRawReward(gymnasium.Wrapper):
    """The env's reward into ``info["raw_reward"]`` (unless a wrapper inside set it), for a reward wrapper around it.

    (On the step an episode ends, a ``SAME_STEP`` vector env hands this info on in ``info["final_info"]``,
    where rl-core reads it.)

    :param env: the env.
    """

    def step(self, action: Any) -> tuple[Any, ...]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, with_raw(info, reward)


class KeepRawRewardVector(VectorWrapper):
    """The vector env's rewards into ``info["raw_reward"]`` (unless a wrapper inside set it), for a reward wrapper around it.

    :param env: the vector env.
    """

    def step(self, actions: Any) -> tuple[Any, ...]:
        obs, reward, terminated, truncated, info = self.env.step(actions)
        return obs, reward, terminated, truncated, with_raw(info, np.array(reward, copy=True))  # (a copy: wrappers may change rewards in place)


def _inside_keeping_raw(cls: type, options: dict[str, Any], env: Any) -> Any:
    return cls(KeepRawReward(env), **options)


def load_wrapper_class(path: str) -> type:
    """The class at ``path`` (``package.module.Class``; ``package.module:Class`` too; modules of the working directory too).

    :raises ConfigError: naming ``env.wrappers.<path>`` when it cannot be imported or is no Gymnasium wrapper.
    """
    key = f"env.wrappers.{path}"
    try:
        cls = import_object(path)
    except Exception as err:  # whatever its module raises on import (a SyntaxError too)
        raise ConfigError(f"{key}: cannot import {shown(path)} ({error_line(err)})") from None
    if not (isinstance(cls, type) and issubclass(cls, (gymnasium.Wrapper, VectorWrapper))):
        raise ConfigError(f"{key}: {shown(path)} is not a Gymnasium wrapper class (gymnasium.Wrapper or gymnasium.vector.VectorWrapper)")
    return cls


def _apply(cls: type, path: str, arrays: frozenset[str], env: Any, **options: Any) -> Any:
    import numpy as np
    from gymnasium.vector import VectorActionWrapper, VectorObservationWrapper

    from ._inside import MISFIT, does_not_fit, wrap_each_env

    options = {name: np.asarray(value) if name in arrays and isinstance(value, list) else value for name, value in options.items()}

    if issubclass(cls, VectorWrapper):
        inner = env if issubclass(cls, (VectorObservationWrapper, VectorActionWrapper)) else KeepRawRewardVector(env)
        try:
            return cls(inner, **options)
        except MISFIT as err:
            raise does_not_fit(f"env.wrappers.{path}", err) from None
    if issubclass(cls, (gymnasium.ObservationWrapper, gymnasium.ActionWrapper)):
        return wrap_each_env(env, partial(cls, **options), f"env.wrappers.{path}")
    return wrap_each_env(env, partial(_inside_keeping_raw, cls, options), f"env.wrappers.{path}")


def wrapper_from_path(path: str) -> Any:
    """A wrapper factory ``factory(env, **options)`` for the Gymnasium wrapper class at ``path``.

    Its signature is the class's (``env`` included, which the option validator skips), so that the options are
    checked by name and type.

    :param path: ``gymnasium.wrappers.ClipAction``, ``mypackage.wrappers.MyWrapper``, ...
    :raises ConfigError: when the class cannot be imported or is no Gymnasium wrapper.
    """
    cls = load_wrapper_class(path)
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return partial(_apply, cls, path, frozenset())
    arrays = frozenset(name for name, param in signature.parameters.items() if "ndarray" in str(param.annotation))  # a list is given as one
    factory = partial(_apply, cls, path, arrays)
    factory.__signature__ = signature  # type: ignore[attr-defined]
    factory.__wrapped__ = cls.__init__  # type: ignore[attr-defined,misc]  # (where the validator resolves its annotations)
    return factory


__all__ = ["KeepRawReward", "KeepRawRewardVector", "load_wrapper_class", "wrapper_from_path"]
