"""rl-core plugin: the ``video_recorder``, ``tensordict_recorder`` and ``evaluation`` hooks, ``rlctl eval --video``,
and the frame pipeline that every logger taking videos uses.

Turn the hooks on in the config's ``hooks`` section::

    hooks:
      evaluation: {record_interval: 10000, episodes: 5, video: true, fps: 30}
      video_recorder: {interval: 50000, skip: 2}
      tensordict_recorder: {max_batches: 4, keys: [observation, action, next.reward]}

The frame pipeline (public): :func:`to_rgb` (one frame as ``uint8`` RGB ``[H, W, 3]``), :func:`tile`
(frames of several envs as one grid), :func:`to_video_frame` (a frame, a batch or a list as one
frame), :func:`to_rgb_video` (a video as ``uint8`` RGB ``[T, H, W, 3]``), :func:`pad_even`,
:func:`write_mp4`, :func:`read_video` and :class:`VideoRecorder` (frames streamed to mp4 files).
:func:`rlcore.as_key` reads a batch key as the hooks' options take it (``next.reward``, ``[next, reward]``).

This module stays light: numpy, torch, tensordict and imageio are imported only when a hook is
created or one of the names below is used.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING, Any

from rlcore import HookFactory, hook_factory, hookimpl, lazy_getattr

from ._options import EvaluationOptions, TensorDictRecorderOptions, VideoRecorderOptions

if TYPE_CHECKING:
    import click

    from ._evaluation import Evaluation, EvaluationHook
    from ._frames import pad_even, tile, to_rgb, to_rgb_video, to_video_frame
    from ._recorder import VideoRecorder, read_video, write_mp4
    from ._rollouts import TensorDictRecorderHook, load_rollouts, save_rollout
    from ._video_hook import VideoRecorderHook

_LAZY = {
    "Evaluation": "._evaluation",
    "EvaluationHook": "._evaluation",
    "pad_even": "._frames",
    "tile": "._frames",
    "to_rgb": "._frames",
    "to_rgb_video": "._frames",
    "to_video_frame": "._frames",
    "VideoRecorder": "._recorder",
    "read_video": "._recorder",
    "write_mp4": "._recorder",
    "TensorDictRecorderHook": "._rollouts",
    "load_rollouts": "._rollouts",
    "save_rollout": "._rollouts",
    "VideoRecorderHook": "._video_hook",
}

__all__ = [
    "Evaluation",
    "EvaluationHook",
    "EvaluationOptions",
    "TensorDictRecorderHook",
    "TensorDictRecorderOptions",
    "VideoRecorder",
    "VideoRecorderHook",
    "VideoRecorderOptions",
    "evaluation",
    "load_rollouts",
    "pad_even",
    "read_video",
    "save_rollout",
    "tensordict_recorder",
    "tile",
    "to_rgb",
    "to_rgb_video",
    "to_video_frame",
    "video_recorder",
    "write_mp4",
]


__getattr__ = lazy_getattr(__name__, _LAZY)


def _factory(name: str, options: type, module: str, hook_class: str, python_only: tuple[str, ...] = ()) -> Callable[..., Any]:
    """The ``rl_register_hooks`` factory of a hook (:func:`rlcore.hook_factory`): imports the hook class only when called."""
    return hook_factory(name, options, lambda: getattr(import_module(module, __name__), hook_class), python_only)


video_recorder = _factory("video_recorder", VideoRecorderOptions, "._video_hook", "VideoRecorderHook")
tensordict_recorder = _factory("tensordict_recorder", TensorDictRecorderOptions, "._rollouts", "TensorDictRecorderHook")
evaluation = _factory("evaluation", EvaluationOptions, "._evaluation", "EvaluationHook", python_only=("policy",))


@hookimpl
def rl_register_hooks() -> dict[str, HookFactory]:
    return {"video_recorder": video_recorder, "tensordict_recorder": tensordict_recorder, "evaluation": evaluation}


@hookimpl
def rl_register_commands(cli: click.Group) -> None:
    """``rlctl eval --video [--fps N]``: record the first evaluated episode."""
    from ._command import add_video_option

    add_video_option(cli)
