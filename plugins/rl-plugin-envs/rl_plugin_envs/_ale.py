"""ALE's own vector env as a backend (``env.vectorization: ale``): Atari games stepped and preprocessed in C++ threads.

ale-py's ``AtariVectorEnv`` runs the games in a thread pool and preprocesses their frames there, as
Gymnasium's ``AtariPreprocessing`` and a frame stack would: 84 x 84 grey frames, 4 stacked, 4 frames
skipped per step (max-pooled), up to 30 no-ops and FIRE at reset. It autoresets in the step an episode
ends (``SAME_STEP``, with ``info["final_obs"]``), which is what rl-core's collector wants, so the
batches, episode statistics and truncation are those of ``sync`` and ``async``.

The game and the id's own settings come from the id's Gymnasium registration (``ALE/Pong-v5``:
``pong``, sticky actions with probability 0.25, the minimal action set, 108,000 frames at most);
``env.kwargs`` set any of ``AtariVectorEnv``'s other options (``img_height``, ``stack_num``,
``episodic_life``, ``num_threads``, ...). Rewards are the game's, not clipped (``AtariVectorEnv``
clips them by default): logged and evaluated returns are the game's score, and training on
clipped rewards is ``env.wrappers.clip_reward``, which keeps the score in ``raw_reward``.

Its envs cannot be saved: a resumed run starts fresh episodes (the collector says so). They draw
nothing: ``render_mode: rgb_array`` (``rlctl eval --video``) gives the frames the policy observed.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from rlcore import ConfigError, shown

#: ``AtariVectorEnv`` options that rl-core sets itself
_SET_HERE = ("game", "num_envs", "autoreset_mode", "batch_size")
#: the registration's settings (besides ``game``) that ``AtariVectorEnv`` takes under the same name
_FROM_SPEC = ("repeat_action_probability", "full_action_space", "max_num_frames_per_episode")


def atari_settings(env_id: str) -> dict[str, Any] | None:
    """The game of an ALE id and the settings its registration gives it (sticky actions, the action set, the
    episode's frames), or ``None`` for an id that is no ALE game (MinAtar's registrations name a game too)."""
    import gymnasium

    try:
        spec = gymnasium.spec(env_id)
    except gymnasium.error.Error:  # not registered (EnvPool's own Atari names, without ale-py)
        return None
    if "game" not in spec.kwargs or not str(spec.entry_point).startswith("ale_py"):
        return None
    return {key: spec.kwargs[key] for key in ("game", *_FROM_SPEC) if key in spec.kwargs}


def ale_options(env_id: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``AtariVectorEnv``'s keyword arguments for an Atari id and ``env.kwargs``.

    :raises ConfigError: when the id is no ALE game, ale-py is missing, or an option is unknown.
    """
    try:
        from ale_py.vector_env import AtariVectorEnv
    except ImportError as err:
        raise ConfigError(f"env.vectorization: ale needs ale-py ({err}); pip install 'rl-plugin-envs[atari]'") from None
    settings = atari_settings(env_id)
    if settings is None:
        raise ConfigError(f"env.vectorization: ale steps Atari games (ALE/Pong-v5, ...), not {shown(env_id)} (valid choices: sync, async)")
    options = [name for name in inspect.signature(AtariVectorEnv).parameters if name not in _SET_HERE]
    unknown = [key for key in kwargs if key not in options]
    if unknown:
        raise ConfigError(f"env.kwargs.{unknown[0]}: ale's AtariVectorEnv takes no such option (valid choices: {', '.join(options)})")
    return {**settings, "reward_clipping": False, **kwargs}


def ale_vector_env(make_env: Callable[[], Any], num_envs: int, *, env_id: str = "", kwargs: Mapping[str, Any] | None = None, **_: Any) -> Any:
    """``num_envs`` games of ``env_id`` in ale-py's ``AtariVectorEnv``, in ``SAME_STEP`` autoreset mode.

    :param make_env: unused (ale-py makes its own games).
    :param num_envs: games in the vector env.
    :param env_id: the run's env id (``ALE/Pong-v5``).
    :param kwargs: ``env.kwargs``: ``AtariVectorEnv``'s options.
    """
    from ale_py.vector_env import AtariVectorEnv
    from gymnasium.error import Error
    from gymnasium.vector import AutoresetMode

    from ._render import rendering

    kwargs = dict(kwargs or {})
    render_mode = kwargs.pop("render_mode", None)  # (its games draw nothing: rgb_array gives the observed frames)
    options = ale_options(env_id, kwargs)
    try:
        env = AtariVectorEnv(num_envs=num_envs, autoreset_mode=AutoresetMode.SAME_STEP, **options)
    except (TypeError, ValueError, RuntimeError, Error) as err:
        raise ConfigError(f"env.kwargs: ale cannot make {shown(env_id)} with {kwargs} ({err})") from None
    return rendering(env, render_mode, "ale")


__all__ = ["ale_options", "ale_vector_env"]
