"""The ``video_recorder`` hook: videos of the training envs, from the batch's pixels or the env's ``render()``.

Rendered frames come through the collector's step observers (``Collector.add_step_observer``): the
hook watches the training envs without changing them. Frames of a batch key (``source: pixels``)
are read in ``rl_batch_process`` by a hook wrapper: from the batch as collected, ``[envs, time]``,
with what the other implementations wrote into it (rl-plugin-envs' ``pixels`` wrapper, a hook of
the user's), before or after an algorithm flattens it to ``[envs * time]`` (rl-plugin-pg does).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rlcore import ConfigError, as_key, hookimpl, shown

from ._frames import as_array
from ._hook import PluginHook, output_directory
from ._options import VideoRecorderOptions
from ._recorder import VideoRecorder

if TYPE_CHECKING:
    from rlcore import Trainer


class VideoRecorderHook(VideoRecorderOptions, PluginHook):
    """Records videos of the training envs into ``RUN_DIR/videos/<name>_<frames>.mp4``.

    A video starts at the beginning of training and then every ``interval`` collected frames; it
    ends when ``max_frames`` frames are written or, with ``dump_on_episode_end``, once every
    recorded env has ended an episode. Several envs are tiled into a grid. Frames are streamed to
    the mp4 writer, so memory does not grow with the video. The options are those of
    :class:`~rl_plugin_video._options.VideoRecorderOptions`.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        self._trainer: Trainer | None = None
        self._directory: Path | None = None
        self._recorder: VideoRecorder | None = None
        self._ended: np.ndarray | None = None
        self._next_start = 0
        self._render = False
        self._remove_observer: Callable[[], None] | None = None

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        return {"next_start": self._next_start}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._next_start = int(state_dict["next_start"])

    # ------------------------------------------------------------------ hooks
    @hookimpl
    def rl_setup(self, trainer: Trainer) -> None:
        self._trainer = trainer
        self._directory = output_directory(trainer, self.directory, "videos", "hooks.video_recorder.directory")
        env = getattr(trainer.collector, "env", None)
        renders = getattr(env, "render_mode", None) == "rgb_array"
        if self.source == "render" and not renders:
            raise ConfigError(
                "hooks.video_recorder.source: 'render' needs a training env made with render_mode='rgb_array' "
                "(set env.kwargs.render_mode)"
            )
        add_step_observer = getattr(trainer.collector, "add_step_observer", None)
        if self.source == "render" and add_step_observer is None:
            raise ConfigError(
                "hooks.video_recorder.source: 'render' needs a collector with add_step_observer "
                f"(rlcore.Collector), not {type(trainer.collector).__name__}: training videos need the envs in this process "
                "(collector.name: local); a key of frames the collector itself puts in its batches works too (source: pixels, key: ...)"
            )
        self._render = self.source == "render" or (self.source == "auto" and renders and add_step_observer is not None)
        if self._render and add_step_observer is not None:
            self._remove_observer = add_step_observer(self._on_step)
        self._maybe_start()

    @hookimpl(wrapper=True)
    def rl_batch_process(self, batch: Any) -> Generator[None, Any, Any]:
        """Record the frames of the processed batch, in its ``[envs, time]`` shape as collected."""
        collected = batch
        processed = yield
        if not self._render and self._recorder is not None:
            self._record_batch(_with_time(collected, processed, self.key))
        return processed

    @hookimpl
    def rl_post_steps_log(self, trainer: Trainer) -> None:
        self._maybe_start()

    @hookimpl
    def rl_shutdown(self, trainer: Trainer) -> None:
        if self._remove_observer is not None:
            self._remove_observer()
            self._remove_observer = None
        self._dump()

    # ------------------------------------------------------------------ recording
    def _record_batch(self, batch: Any) -> None:
        """Feed the frames of ``batch[key]`` (``[envs, time, ...]``) step by step."""
        if self._recorder is None:
            return
        pixels = batch.get(as_key(self.key), None)
        if pixels is None:
            collector = getattr(self._trainer, "collector", None)
            other = (
                ", or record the env's render() (source: render, env.kwargs.render_mode: rgb_array)"
                if collector is None or getattr(collector, "add_step_observer", None) is not None  # it steps the envs here
                else f" ({type(collector).__name__} steps the envs in other processes, where their render() cannot be recorded: "
                "collector.name: local records it, hooks.evaluation.video: true films the policy with any collector)"
            )
            raise ConfigError(f"hooks.video_recorder.key: the batch has no key {shown(self.key)}; set key to the batch's frames{other}")
        done = batch.get(("next", "done"), None)
        if batch.batch_dims == 1:  # a batch of one env's steps
            pixels, done = pixels[None], None if done is None else done[None]
        envs = min(int(pixels.shape[0]), self.max_envs)
        pixels = as_array(pixels[:envs])
        steps = pixels.shape[1]
        ended = np.zeros((envs, steps), dtype=bool)
        if done is not None:
            ended = np.asarray(as_array(done[:envs]).reshape(envs, steps, -1).any(-1), dtype=bool)
        for t in range(steps):
            if self._recorder is None:
                break
            self._on_step(pixels[:, t], ended[:, t])

    def _on_step(self, frames: Any, done: np.ndarray) -> None:
        """One env step: offer its frames, and end the video when it is full or its episodes ended."""
        recorder = self._recorder
        if recorder is None:
            return
        if callable(frames):
            render = frames
            recorder.add(lambda: list(render())[: self.max_envs])
        else:
            recorder.add(frames)
        done = np.asarray(done, dtype=bool).reshape(-1)[: self.max_envs]
        self._ended = done.copy() if self._ended is None else self._ended | done
        if recorder.full or (self.dump_on_episode_end and self._ended.all()):
            self._dump()

    def _maybe_start(self) -> None:
        if self._recorder is not None or self._trainer is None or self._directory is None:
            return
        frames = self._trainer.collected_frames
        if frames < self._next_start:
            return
        self._recorder = VideoRecorder(
            self._directory, self.name, fps=self.fps, skip=self.skip, max_frames=self.max_frames, loggers=self._trainer.loggers
        )
        self._ended = None
        self._next_start = frames + self.interval

    def _dump(self) -> None:
        if self._recorder is not None and self._trainer is not None:
            self._recorder.dump(self._trainer.collected_frames)
        self._recorder = None


def _with_time(collected: Any, processed: Any, key: str) -> Any:
    """The batch to record from: the collected one (``[envs, time]``, changed in place by the data hooks) when it holds
    ``key``, else the processed one, brought back to ``[envs, time]`` when an algorithm flattened it."""
    if collected.get(as_key(key), None) is not None or processed is None:
        return collected
    if processed.batch_dims == 1 and collected.batch_dims == 2 and processed.numel() == collected.numel():
        return processed.reshape(collected.batch_size)
    return processed


__all__ = ["VideoRecorderHook"]
