"""rl-plugin-envs: env wrappers by name, any Gymnasium wrapper by import path, and EnvPool as a vectorization.

Wrappers are listed under ``env.wrappers`` and applied in that order::

    env:
      id: ALE/Pong-v5
      wrappers:
        atari: {}                     # no-op starts, frame skip 4 with max-pooling, 84 x 84 grey
        frame_stack: {stack_size: 4}
        clip_reward: {}
        "gymnasium.wrappers.ClipAction": {}   # any Gymnasium wrapper class by import path

=================================  ==============================================================================
``normalize_observation``          running mean / std of observations (checkpointed, frozen for evaluation)
``normalize_reward``               rewards over the running std of the discounted return
``fixed_normalize_observation``    fixed ``loc`` / ``scale``: given, from the space's bounds or a random rollout
``scale_reward``, ``clip_reward``  affine reward scaling, clipping (``info["raw_reward"]`` keeps the env's)
``frame_skip``                     repeat actions, max-pool the last two frames (inside each env)
``time_limit``                     truncate episodes (inside each env)
``frame_stack``                    stack the last N observations (inside each env)
``mask_observation``               keep some entries of flat observations: a partially observed task (inside each env)
``resize``, ``grayscale``          image observations (inside each env)
``atari``                          Gymnasium's Atari preprocessing (inside each env)
``pixels``                         rendered frames into the batch (``pixels``), TorchRL's ``PixelRenderTransform``
=================================  ==============================================================================

Wrappers that act inside each env come before the vector-env wrappers. ``env.vectorization:
envpool`` steps the envs with EnvPool (``pip install envpool``), ``env.vectorization: ale`` Atari
games with ale-py's ``AtariVectorEnv``.

This module stays light: importing it imports neither torch nor numpy nor gymnasium.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from rlcore import ConfigError, EnvWrapperFactory, VectorizationFactory, env_layers, hookimpl

from ._factories import IMPORT_PATH, WRAPPERS, ale, envpool, import_path

__version__ = "0.1.0"

#: the shape of an Atari env's observations without preprocessing
ATARI_SCREEN = (210, 160, 3)

__all__ = ["IMPORT_PATH", "WRAPPERS", "ale", "envpool", "import_path", "rl_batch_process", "rl_register_env_wrappers", "rl_register_vectorizations", "rl_setup"]


@hookimpl
def rl_register_env_wrappers() -> dict[str, EnvWrapperFactory]:
    """Every wrapper by name, and the resolver of Gymnasium wrappers by import path (the pattern ``*.*``)."""
    return {**WRAPPERS, IMPORT_PATH: import_path}


@hookimpl
def rl_register_vectorizations() -> dict[str, VectorizationFactory]:
    """``envpool``: EnvPool's C++ vector env; ``ale``: ale-py's, of Atari games."""
    return {"envpool": envpool, "ale": ale}


@hookimpl
def rl_setup(trainer: Any) -> None:
    """Say when Atari's raw screens are trained on (without the ``atari`` wrapper); refuse a ``pixels`` wrapper that
    would see no frames (on envs the training process does not step) or too few (``max_steps`` below a batch's steps)."""
    import warnings

    import rlcore

    from ._pixels import find_pixel_render

    collector = getattr(trainer, "collector", None)
    space = getattr(getattr(collector, "env", None), "single_observation_space", None)
    if getattr(space, "shape", None) == ATARI_SCREEN:
        warnings.warn(
            f"env.wrappers: the policy sees Atari's raw {ATARI_SCREEN[0]} x {ATARI_SCREEN[1]} colour screens, a CNN of millions of "
            "weights; the usual preprocessing is env.wrappers={atari: {}, frame_stack: {stack_size: 4}} (84 x 84 grey, 4 frames)",
            stacklevel=2,
        )
    render = find_pixel_render(getattr(collector, "env", None))
    if render is None:
        return
    if not isinstance(collector, rlcore.Collector):
        raise ConfigError(
            f"env.wrappers.pixels: frames are rendered where the envs step, and {type(collector).__name__} steps them in other "
            "processes (valid choices: collector.name: local)"
        )
    steps = collector.frames_per_batch // collector.env.num_envs
    if render.max_steps < steps:
        raise ConfigError(f"env.wrappers.pixels.max_steps: {render.max_steps} steps of frames kept, a batch has {steps}; raise max_steps")


@hookimpl(wrapper=True)
def rl_batch_process(trainer: Any, batch: Any) -> Generator[None, Any, Any]:
    """Write the frames of a ``pixels`` wrapper into the batch, before every other hook sees it (a recorder, an
    algorithm that flattens it)."""
    if any(type(layer).__name__ == "PixelRender" for layer in env_layers(getattr(getattr(trainer, "collector", None), "env", None))):
        from ._pixels import add_pixels

        add_pixels(trainer, batch)
    return (yield)
