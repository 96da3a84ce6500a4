"""The logger interface: what a logger plugin implements, and how a logged value says it is a gauge."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any


class Logger:
    """Base class of every logger; subclasses write to one backend.

    Steps are collected frames. Values are plain Python numbers; videos are ``uint8`` arrays
    of shape ``[time, height, width, 3]`` (see :meth:`log_video`). Backends without videos or histograms keep
    the default no-op methods and leave ``supports_video`` false.

    :param exp_name: the run's name (see :func:`generate_exp_name`).
    :param log_dir: the run directory; a backend writes its files under it.
    """

    #: Whether :meth:`log_video` writes anything.
    supports_video: bool = False

    def __init__(self, exp_name: str, log_dir: str | os.PathLike[str]) -> None:
        self.exp_name = exp_name
        self.log_dir = Path(log_dir)

    def log_scalar(self, name: str, value: float, step: int) -> None:
        """Log one scalar.

        :param name: the metric name, e.g. ``train/episode_return``.
        :param value: the value.
        :param step: collected frames.
        """
        raise NotImplementedError

    def log_scalars(self, values: Mapping[str, float], step: int) -> None:
        """Log several scalars at one step; backends with a batch API override this.

        :param values: ``{name: value}``.
        :param step: collected frames.
        """
        for name, value in values.items():
            self.log_scalar(name, value, step)

    def log_hparams(self, params: Mapping[str, Any]) -> None:
        """Record the run's flattened config (``{"algo.lr": 3e-4, ...}``).

        :param params: flat ``{dotted key: value}``.
        """

    def log_video(self, name: str, video: Any, step: int, fps: int = 30) -> None:
        """Log a video.

        Recorders pass the frame pipeline's format: a ``uint8`` numpy array ``[time, height, width, 3]``
        of RGB frames, channels last (sides padded to even sizes when the video was read back from its
        mp4 file). A backend that accepts more (floats in ``[0, 1]``, grey or RGBA frames, channels
        first) says so.

        :param name: the video's name, e.g. ``eval/video``.
        :param video: ``uint8`` array ``[time, height, width, 3]``, RGB.
        :param step: collected frames.
        :param fps: frames per second.
        """

    def log_histogram(self, name: str, values: Any, step: int) -> None:
        """Log the distribution of ``values``.

        :param name: the histogram's name.
        :param values: an array or tensor of numbers.
        :param step: collected frames.
        """

    def resume(self, step: int) -> None:
        """The run continues from a checkpoint taken at ``step``: forget what was logged after it.

        Values logged after the checkpoint are logged again by the resumed run; a backend that can
        drop them (the CSV logger rewrites its file) keeps one value per step and metric.

        :param step: the checkpoint's collected frames.
        """

    def warn_once(self, message: str) -> None:
        """Warn ``message`` the first time only (a video skipped for a missing optional dependency, ...).

        :param message: the warning, one line.
        """
        warned: set[str] = self.__dict__.setdefault("_warned", set())
        if message not in warned:
            warned.add(message)
            warnings.warn(message, stacklevel=3)

    def flush(self) -> None:
        """Make everything logged so far durable."""

    def close(self) -> None:
        """Flush and release the backend; the logger is not used afterwards."""
        self.flush()

    #: set while a run stops for a signal (``rlctl``'s SIGINT/SIGTERM handler): it ends ``"killed"``, checkpointed
    stopped_by_signal = False

    @staticmethod
    def exit_status() -> str:
        """How the run ends, for :meth:`close` to tell the backend: ``"finished"``; ``"failed"`` when called while an
        exception propagates, as the trainer closes its loggers; ``"killed"`` for a ``KeyboardInterrupt``, or a run
        stopped by a signal (:attr:`stopped_by_signal`) after its last batch."""
        error = sys.exc_info()[1]
        if error is None:
            return "killed" if Logger.stopped_by_signal else "finished"
        return "killed" if isinstance(error, KeyboardInterrupt) else "failed"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(exp_name={self.exp_name!r}, log_dir={str(self.log_dir)!r})"


class Gauge(float):
    """A number that says where something stands (a buffer's size, epsilon, the learning rate).

    :meth:`rlcore.Trainer.log` averages the values a metric receives between two logged points;
    a gauge is logged as it is at the logged point instead. A hook returns one as any number::

        return {"train/buffer_size": rlcore.Gauge(len(buffer))}
    """

    __slots__ = ()
