"""The factories of ``rl_register_env_wrappers``: their keyword parameters are the wrappers' options.

This module stays light (no numpy, no gymnasium, no torch at import): ``rlctl plugins list`` and
the config's validator read the signatures; the wrappers load when a factory is called.
Annotations stay real types (no postponed evaluation) so that rl-core's validator reads them.
"""

from functools import partial
from typing import Annotated, Any, Literal

from rlcore import Range, shown

PositiveInt = Annotated[int, Range(ge=1)]
PositiveFloat = Annotated[float, Range(gt=0)]
#: one number, or one per observation entry
Numbers = float | list[float]


def normalize_observation(env: Any, epsilon: PositiveFloat = 1e-8, clip: PositiveFloat = 10.0) -> Any:
    """Standardise observations with running statistics (``info["final_obs"]`` too); checkpointed, frozen on evaluation envs.

    :param env: the vector env.
    :param epsilon: added to the variance.
    :param clip: normalised values are clipped to ``[-clip, clip]``.
    """
    from ._normalize import NormalizeObservation

    _normalizable("normalize_observation", env)
    return NormalizeObservation(env, epsilon=epsilon, clip=clip)


def _normalizable(name: str, env: Any) -> None:
    """Refuse an observation space that is no ``Box`` (a ``Dict``'s); say that normalised images are floats, which the
    algorithms' ``encoder: auto`` gives an MLP rather than a CNN."""
    import warnings

    import numpy as np
    from gymnasium import spaces

    from rlcore import ConfigError

    space = env.single_observation_space
    if not isinstance(space, spaces.Box):
        raise ConfigError(f"env.wrappers.{name}: normalises Box observations, the env's are {type(space).__name__}: {space}")
    if len(space.shape) >= 2 and (np.issubdtype(space.dtype, np.integer) or space.dtype == bool):
        warnings.warn(
            f"env.wrappers.{name}: normalised, the {space.dtype} images {tuple(space.shape)} become floats, which the algorithms' "
            "encoder: auto gives an MLP (the CNN scales integer images itself; or set algo.encoder: cnn)",
            stacklevel=3,
        )


def normalize_reward(env: Any, gamma: Annotated[float, Range(gt=0, le=1)] = 0.99, epsilon: PositiveFloat = 1e-8, clip: PositiveFloat = 10.0) -> Any:
    """Scale rewards by the running standard deviation of the discounted return (``info["raw_reward"]`` keeps the env's).

    :param env: the vector env.
    :param gamma: the discount of the return whose spread is tracked.
    :param epsilon: added to the variance.
    :param clip: scaled rewards are clipped to ``[-clip, clip]``.
    """
    from ._normalize import NormalizeReward

    return NormalizeReward(env, gamma=gamma, epsilon=epsilon, clip=clip)


def fixed_normalize_observation(
    env: Any,
    source: Literal["rollout", "bounds", "given"] = "rollout",
    loc: Numbers | None = None,
    scale: Numbers | None = None,
    steps: PositiveInt = 1000,
    seed: Annotated[int, Range(ge=0)] = 0,
    clip: PositiveFloat | None = None,
) -> Any:
    """``(obs - loc) / scale`` with fixed statistics (the old torchrl's ``fixed_normalize_states``); checkpointed.

    :param env: the vector env.
    :param source: ``rollout``: mean and standard deviation of a random-action rollout of the env
        (``rlcore.get_stats_random_rollout``, at the first reset); ``bounds``: the observation
        space's ``[low, high]`` mapped to ``[-1, 1]``; ``given``: ``loc`` and ``scale``.
    :param loc: the means, for ``given``.
    :param scale: the standard deviations, for ``given``.
    :param steps: vector-env steps of the rollout.
    :param seed: the rollout's seed.
    :param clip: clip normalised values to ``[-clip, clip]``; ``null``: no clipping.
    """
    import numpy as np

    from rlcore import ConfigError

    from ._normalize import FixedNormalizeObservation

    key = "env.wrappers.fixed_normalize_observation"
    if source == "given" and (loc is None or scale is None):
        raise ConfigError(f"{key}.loc: source 'given' needs loc and scale")
    if source != "given" and (loc is not None or scale is not None):
        raise ConfigError(f"{key}.source: loc and scale are given, so source must be 'given' (it is {shown(source)})")
    if source == "given" and np.any(np.asarray(scale, dtype=np.float64) <= 0):
        raise ConfigError(f"{key}.scale: expected numbers > 0, got {shown(scale)}")
    _normalizable("fixed_normalize_observation", env)
    space = env.single_observation_space
    if source == "bounds" and not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high)) and np.all(space.high > space.low)):
        raise ConfigError(f"{key}.source: 'bounds' needs finite observation bounds, and {space} has none (valid choices: rollout, given)")
    try:
        return FixedNormalizeObservation(env, source=source, loc=loc, scale=scale, steps=steps, seed=seed, clip=clip)
    except ValueError as err:
        raise ConfigError(f"{key}: loc and scale must fit the observation shape {space.shape} ({err})") from None


def scale_reward(env: Any, scale: float = 1.0, loc: float = 0.0) -> Any:
    """``reward * scale + loc`` (TorchRL's ``RewardScaling``); ``info["raw_reward"]`` keeps the env's.

    :param env: the vector env.
    :param scale: the factor.
    :param loc: the offset.
    """
    from ._rewards import ScaleReward

    return ScaleReward(env, scale=scale, loc=loc)


def clip_reward(env: Any, min_reward: float | None = -1.0, max_reward: float | None = 1.0) -> Any:
    """Rewards clipped to ``[min_reward, max_reward]`` (Gymnasium's ``ClipReward``); ``info["raw_reward"]`` keeps the env's.

    :param env: the vector env.
    :param min_reward: the lower bound; ``null``: none.
    :param max_reward: the upper bound; ``null``: none.
    """
    from rlcore import ConfigError

    from ._rewards import ClipReward

    if min_reward is None and max_reward is None:
        raise ConfigError("env.wrappers.clip_reward: set min_reward or max_reward (both are null)")
    if min_reward is not None and max_reward is not None and min_reward >= max_reward:
        raise ConfigError(f"env.wrappers.clip_reward.max_reward: expected a number > min_reward={min_reward}, got {max_reward}")
    return ClipReward(env, min_reward=min_reward, max_reward=max_reward)


def frame_skip(env: Any, skip: Annotated[int, Range(ge=2)] = 4) -> Any:
    """Repeat each action ``skip`` times inside each env, summing rewards; the observation is the maximum of the last
    two frames (Gymnasium's ``MaxAndSkipObservation``). Comes before the vector-env wrappers; checkpointed.

    :param env: the vector env (``sync`` or ``async``).
    :param skip: frames per step.
    """
    from ._inside import FrameSkip, wrap_each_env

    return wrap_each_env(env, partial(FrameSkip, skip=skip), "env.wrappers.frame_skip")


def time_limit(env: Any, max_episode_steps: PositiveInt = 1000) -> Any:
    """Truncate each env's episodes after ``max_episode_steps`` steps (Gymnasium's ``TimeLimit``); comes before the vector-env wrappers.

    :param env: the vector env (``sync`` or ``async``).
    :param max_episode_steps: steps of an episode at most.
    """
    from ._inside import time_limit as limit
    from ._inside import wrap_each_env

    return wrap_each_env(env, partial(limit, max_episode_steps=max_episode_steps), "env.wrappers.time_limit")


def frame_stack(env: Any, stack_size: PositiveInt = 4, padding: Literal["reset", "zero"] = "reset") -> Any:
    """The last ``stack_size`` observations of each env, ``[stack_size, *obs_shape]`` (Gymnasium's ``FrameStackObservation``);
    comes before the vector-env wrappers; checkpointed.

    :param env: the vector env (``sync`` or ``async``).
    :param stack_size: observations stacked.
    :param padding: what fills the stack at an episode's start: the reset observation, or zeros.
    """
    from ._inside import FrameStack, wrap_each_env

    return wrap_each_env(env, partial(FrameStack, stack_size=stack_size, padding_type=padding), "env.wrappers.frame_stack")


def mask_observation(env: Any, keep: list[Annotated[int, Range(ge=0)]]) -> Any:
    """Only the entries ``keep`` of each flat observation: a partially observed task, such as CartPole without its
    velocities (``keep: [0, 2]``, the cart's position and the pole's angle), which a feed-forward policy cannot learn
    and a recurrent one can; comes before the vector-env wrappers.

    :param env: the vector env (``sync`` or ``async``).
    :param keep: the indices of the entries kept, in order.
    """
    from ._inside import KeepEntries, wrap_each_env

    return wrap_each_env(env, partial(KeepEntries, keep=keep), "env.wrappers.mask_observation")


def resize(env: Any, height: PositiveInt = 84, width: PositiveInt = 84) -> Any:
    """Resize image observations ``[H, W(, C)]`` (Gymnasium's ``ResizeObservation``, OpenCV's area interpolation;
    needs ``opencv-python-headless``); comes before the vector-env wrappers.

    :param env: the vector env (``sync`` or ``async``).
    :param height: rows.
    :param width: columns.
    """
    from ._inside import Resize, wrap_each_env

    _needs_cv2("resize")
    return wrap_each_env(env, partial(Resize, shape=(height, width)), "env.wrappers.resize")


def grayscale(env: Any, keep_dim: bool = False) -> Any:
    """RGB image observations ``[H, W, 3]`` to grey ``[H, W]`` (Gymnasium's ``GrayscaleObservation``); comes before the vector-env wrappers.

    :param env: the vector env (``sync`` or ``async``).
    :param keep_dim: keep a channel axis, ``[H, W, 1]``.
    """
    from ._inside import Grayscale, wrap_each_env

    return wrap_each_env(env, partial(Grayscale, keep_dim=keep_dim), "env.wrappers.grayscale")


def atari(
    env: Any,
    noop_max: Annotated[int, Range(ge=0)] = 30,
    frame_skip: PositiveInt = 4,
    screen_size: PositiveInt = 84,
    terminal_on_life_loss: bool = False,
    grayscale: bool = True,
) -> Any:
    """Atari preprocessing (Gymnasium's ``AtariPreprocessing``: no-op starts, frame skip with max-pooling of the last two
    frames, ``screen_size`` square grey frames, ``uint8``); the ALE env's own frame skip is turned off. Comes before the
    vector-env wrappers; follow it with ``frame_stack`` for the Nature-DQN input.

    :param env: the vector env of an ALE id (``ALE/Pong-v5``), ``sync`` or ``async``.
    :param noop_max: at most this many no-op actions after a reset.
    :param frame_skip: frames per step.
    :param screen_size: side of the square frames.
    :param terminal_on_life_loss: end the episode at a lost life.
    :param grayscale: grey frames ``[size, size]``, or RGB ``[size, size, 3]``.
    """
    from ._inside import atari as preprocess
    from ._inside import wrap_each_env

    _needs_cv2("atari")
    options: dict[str, Any] = {
        "noop_max": noop_max,
        "frame_skip": frame_skip,
        "screen_size": screen_size,
        "terminal_on_life_loss": terminal_on_life_loss,
        "grayscale_obs": grayscale,
    }
    return wrap_each_env(env, partial(preprocess, **options), "env.wrappers.atari")


def pixels(env: Any, key: str = "pixels", height: PositiveInt | None = None, width: PositiveInt | None = None, max_steps: PositiveInt = 4096) -> Any:
    """Rendered frames into each training batch under ``key``, ``[envs, time, H, W, 3]`` ``uint8`` (TorchRL's
    ``PixelRenderTransform``): the frame of the observation each action is taken on. Needs ``env.kwargs.render_mode: rgb_array``.

    :param env: the vector env.
    :param key: the batch key.
    :param height: resize frames to this height; ``null``: as rendered.
    :param width: resize frames to this width; ``null``: as rendered.
    :param max_steps: the most steps of frames kept between two batches.
    """
    from rlcore import ConfigError

    from ._pixels import PixelRender

    taken = ("observation", "action", "next", "sample_log_prob", "state_value", "advantage", "value_target")
    if key in taken or not key.isidentifier():
        raise ConfigError(f"env.wrappers.pixels.key: expected a name of its own for the frames (a batch has {', '.join(taken)}), got {shown(key)}")
    if height is not None:
        _needs_cv2("pixels")
    return PixelRender(env, key=key, height=height, width=width, max_steps=max_steps)


def _needs_cv2(name: str) -> None:
    from importlib.util import find_spec

    from rlcore import ConfigError

    if find_spec("cv2") is None:
        raise ConfigError(f"env.wrappers.{name}: needs OpenCV (pip install opencv-python-headless)")


#: every wrapper by its config name
WRAPPERS: dict[str, Any] = {
    "normalize_observation": normalize_observation,
    "normalize_reward": normalize_reward,
    "fixed_normalize_observation": fixed_normalize_observation,
    "scale_reward": scale_reward,
    "clip_reward": clip_reward,
    "frame_skip": frame_skip,
    "time_limit": time_limit,
    "frame_stack": frame_stack,
    "mask_observation": mask_observation,
    "resize": resize,
    "grayscale": grayscale,
    "atari": atari,
    "pixels": pixels,
}
#: the registry name under which wrappers named by import path are resolved (``gymnasium.wrappers.ClipAction``)
IMPORT_PATH = "*.*"


def envpool(make_env: Any, num_envs: int, **kwargs: Any) -> Any:
    """EnvPool's vector env (``env.vectorization: envpool``); see :func:`rl_plugin_envs._envpool.envpool_vector_env`."""
    from ._envpool import envpool_vector_env

    return envpool_vector_env(make_env, num_envs, **kwargs)


envpool.own_kwargs = True  # type: ignore[attr-defined]  # env.kwargs are EnvPool's options, checked when the pool is made


def ale(make_env: Any, num_envs: int, **kwargs: Any) -> Any:
    """ale-py's vector env of Atari games (``env.vectorization: ale``); see :func:`rl_plugin_envs._ale.ale_vector_env`."""
    from ._ale import ale_vector_env

    return ale_vector_env(make_env, num_envs, **kwargs)


ale.own_kwargs = True  # type: ignore[attr-defined]  # env.kwargs are AtariVectorEnv's options, checked when it is made


def import_path(path: str) -> Any:
    """The factory of the Gymnasium wrapper class at ``path``; see :func:`rl_plugin_envs._import_path.wrapper_from_path`."""
    from ._import_path import wrapper_from_path

    return wrapper_from_path(path)
