"""``rlctl eval --video``: the plugin's options on the kernel's ``eval`` command (light: click only).

The kernel's ``eval`` callback passes extra keyword arguments on to ``evaluate_run`` and returns the
report that ``rlctl`` prints; the wrapper here asks for a rendering env, records the frames the
evaluation loop offers, and adds the video's path to the report.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

#: the eval command's options this plugin adds
OPTIONS = ("video", "fps")


def add_video_option(cli: click.Group) -> None:
    """Add ``--video`` and ``--fps`` to ``cli``'s ``eval`` command; nothing when it has none (or has them already).

    :param cli: the ``rlctl`` group that ``rl_register_commands`` receives.
    """
    command = cli.commands.get("eval")
    if command is None or command.callback is None or any(p.name in OPTIONS for p in command.params):
        return
    command.params += [
        click.Option(
            ["--video"], is_flag=True, help="Record the first episode to RUN_DIR/videos/eval_<frames>.mp4 (rl-plugin-video)."
        ),
        click.Option(["--fps"], type=click.IntRange(min=1), default=30, show_default=True, help="Frames per second of the video."),
    ]
    command.callback = _with_video(command.callback)


def _with_video(callback: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """``callback`` that, with ``video=True``, records the first episode and adds ``video`` (its path) to the report."""

    @functools.wraps(callback)
    def evaluate(*, video: bool = False, fps: int = 30, **kwargs: Any) -> dict[str, Any]:
        if not video:
            return {**callback(**kwargs), "video": None}
        from ._recorder import VideoRecorder

        recorder = VideoRecorder(Path(kwargs["run_dir"]) / "videos", prefix="eval", fps=fps, max_frames=None)
        env_kwargs = {**(kwargs.pop("env_kwargs", None) or {}), "render_mode": "rgb_array"}
        other = kwargs.pop("on_frame", None)  # another plugin's wrapper may watch the frames too

        def on_frame(render: Callable[[], Any]) -> None:
            recorder.add(render)
            if other is not None:
                other(render)

        try:
            report = callback(**kwargs, env_kwargs=env_kwargs, on_frame=on_frame)
        except BaseException:
            recorder.close()
            raise
        path = recorder.dump(int(report["frames"]))
        return {**report, "video": None if path is None else str(path)}

    return evaluate


__all__ = ["add_video_option"]
