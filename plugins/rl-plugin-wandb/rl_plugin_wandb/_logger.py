"""The Weights & Biases logger: one W&B run per rl-core run, its files under ``<log_dir>/wandb/``.

Steps are collected frames, which W&B's own ``step`` cannot carry: it must only increase, and a
value logged at a lower step is dropped. So W&B keeps its auto-incremented ``_step`` (one per
call here, every call committed) and every row carries ``frames``, declared the x-axis of all
metrics with ``define_metric("*", step_metric="frames")``.
"""

from __future__ import annotations

import importlib.util
import io
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np
import wandb

from rlcore import Logger

#: The x-axis of every metric.
STEP_METRIC = "frames"


#: the exit code a W&B run ends with: 0 finished, 1 failed, 130 killed (the shell's code of a run stopped by SIGINT)
_EXIT_CODE = {"finished": 0, "failed": 1, "killed": 130}

class WandbLogger(Logger):
    """Logs to one W&B run (``wandb.init(reinit="create_new")``, so other runs of the process are left alone).

    ``WANDB_MODE``, ``WANDB_PROJECT``, ``WANDB_ENTITY`` and W&B's other variables apply unless an
    option says otherwise (``WANDB_MODE=offline`` needs no account).

    :param exp_name: the run's name.
    :param log_dir: the run directory; W&B writes under ``<log_dir>/wandb/``.
    :param project: the W&B project; default ``WANDB_PROJECT``, else ``"rlcore"``.
    :param entity: the W&B user or team.
    :param tags: run tags.
    :param group: the run group, e.g. to gather the seeds of one experiment.
    :param mode: ``"online"``, ``"offline"``, ``"disabled"`` or ``"shared"``; default ``WANDB_MODE``, else online.
    :param notes: a description of the run.
    """

    def __init__(
        self,
        exp_name: str,
        log_dir: str | os.PathLike[str],
        project: str | None = None,
        entity: str | None = None,
        tags: Iterable[str] | str | None = None,
        group: str | None = None,
        mode: Literal["online", "offline", "disabled", "shared"] | None = None,
        notes: str | None = None,
    ) -> None:
        super().__init__(exp_name, log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.run = wandb.init(
            project=project or os.environ.get("WANDB_PROJECT") or "rlcore",
            entity=entity,
            name=exp_name,
            group=group,
            tags=[tags] if isinstance(tags, str) else list(tags or ()),
            notes=notes,
            mode=mode,  # None: WANDB_MODE
            dir=str(self.log_dir),
            reinit="create_new",
        )
        self.run.define_metric(STEP_METRIC)
        self.run.define_metric("*", step_metric=STEP_METRIC)
        #: mp4 videos need rl-plugin-video's frame pipeline (the ``video`` extra)
        self.supports_video = importlib.util.find_spec("rl_plugin_video") is not None
        self._closed = False

    def _log(self, values: Mapping[str, Any], step: int) -> None:
        self.run.log({STEP_METRIC: int(step), **values})  # committed now, as one row

    def log_scalar(self, name: str, value: float, step: int) -> None:
        self._log({name: float(value)}, step)

    def log_scalars(self, values: Mapping[str, float], step: int) -> None:
        """Log ``values`` as one W&B row with ``frames = step``."""
        if values:
            self._log({k: float(v) for k, v in values.items()}, step)

    def log_hparams(self, params: Mapping[str, Any]) -> None:
        """Add ``params`` to the run's config."""
        self.run.config.update(dict(params), allow_val_change=True)

    def log_histogram(self, name: str, values: Any, step: int) -> None:
        array = np.asarray(values.detach().cpu() if hasattr(values, "detach") else values, dtype=np.float64)
        self._log({name: wandb.Histogram(array.ravel())}, step)  # type: ignore[arg-type]  # (its stub says a Sequence; it takes an array)

    def log_video(self, name: str, video: Any, step: int, fps: int = 30) -> None:
        """Log ``video`` as a ``wandb.Video`` mp4, written by rl-plugin-video's ``write_mp4`` (W&B's own encoder needs
        moviepy); skipped with one warning without rl-plugin-video."""
        if not self.supports_video:
            self.warn_once("rl-plugin-wandb: videos are not logged; install rl-plugin-video (pip install 'rl-plugin-wandb[video]')")
            return
        from rl_plugin_video import write_mp4

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "video.mp4"
            write_mp4(path, video, fps)
            data = io.BytesIO(path.read_bytes())  # W&B moves its own copy into the run's media folder
        self._log({name: wandb.Video(data, format="mp4")}, step)

    def close(self) -> None:
        """Finish the run with the exit code of :meth:`~rlcore.Logger.exit_status`: 1 when called while an exception
        propagates (the trainer closes its loggers in a ``finally`` block), so W&B marks it failed; 130 for a run
        stopped by a signal."""
        if not self._closed:
            self._closed = True
            self.run.finish(exit_code=_EXIT_CODE[self.exit_status()])
