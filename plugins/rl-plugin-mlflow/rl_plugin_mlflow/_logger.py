"""The MLflow logger: one MLflow run per rl-core run, written through :class:`mlflow.MlflowClient`.

The client (not MLflow's fluent API) keeps no global active run, so several loggers can live in
one process. Metrics are buffered and sent with ``log_batch``: at most every ``flush_secs``
seconds, every 1000 values, and on :meth:`~MLflowLogger.flush`/:meth:`~MLflowLogger.close`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag
from mlflow.exceptions import MlflowException

from rlcore import ConfigError, Logger, shown

#: Files of the run directory uploaded as artifacts on close.
CONFIG_SUFFIXES = (".yaml", ".yml", ".json", ".toml")
_MAX_PENDING = 1000  # MLflow's limit of metrics per log_batch request
_MAX_PARAM_LENGTH = 6000
_MAX_KEY_LENGTH = 250
_BAD_KEY_CHARS = re.compile(r"[^/\w.\- ]")
_STATUS = {"finished": "FINISHED", "failed": "FAILED", "killed": "KILLED"}


#: the file of the run directory that remembers its MLflow run, for ``rlctl train --resume``
RUN_ID_FILE = "mlflow_run_id"


class MLflowLogger(Logger):
    """Logs to one MLflow run: params, metrics with ``step`` = frames, videos and the config as artifacts.

    The tracking server is ``tracking_uri``, else ``MLFLOW_TRACKING_URI``, else a SQLite store in
    the run directory (``<log_dir>/mlflow.db``, artifacts in ``<log_dir>/mlartifacts``): MLflow 3
    no longer accepts its old file store by default. An experiment that exists is reused.

    :param exp_name: the run's name.
    :param log_dir: the run directory.
    :param experiment: the MLflow experiment's name.
    :param run_name: the MLflow run's name; default ``exp_name``.
    :param tags: run tags, ``{key: value}`` or a list of names (tagged with an empty value).
    :param tracking_uri: where to log, overriding ``MLFLOW_TRACKING_URI``.
    :param flush_secs: the longest time a metric waits in the buffer (``0`` sends every call).
    """

    def __init__(
        self,
        exp_name: str,
        log_dir: str | os.PathLike[str],
        experiment: str = "rlcore",
        run_name: str | None = None,
        tags: Mapping[str, Any] | Iterable[str] | None = None,
        tracking_uri: str | None = None,
        flush_secs: float = 5.0,
    ) -> None:
        super().__init__(exp_name, log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        uri, artifact_location = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI"), None
        if not uri:
            uri = f"sqlite:///{(self.log_dir / 'mlflow.db').resolve().as_posix()}"
            artifact_location = (self.log_dir / "mlartifacts").resolve().as_uri()
        self.tracking_uri = uri
        self.client = MlflowClient(tracking_uri=uri)
        self.experiment_id = _experiment_id(self.client, experiment, artifact_location)
        self._run_name, self._tags = run_name or exp_name, _tags(tags)
        self._run_id: str | None = None  # created at the first write, unless resume() continues the interrupted run
        id_file = self.log_dir / RUN_ID_FILE
        self._previous_run_id = id_file.read_text().strip() if id_file.is_file() else None
        self.flush_secs = flush_secs
        #: mp4 videos need rl-plugin-video's frame pipeline (the ``video`` extra)
        self.supports_video = importlib.util.find_spec("rl_plugin_video") is not None
        self._pending: list[Metric] = []
        self._sent_at = time.monotonic()
        self._hparams: dict[str, Any] | None = None
        self._closed = False

    @property
    def run_id(self) -> str:
        """The id of the MLflow run logged to; a new run is created (with the hparams) on first use."""
        if self._run_id is None:
            run = self.client.create_run(self.experiment_id, run_name=self._run_name, tags=self._tags)
            self._run_id = run.info.run_id
            (self.log_dir / RUN_ID_FILE).write_text(self._run_id)
            if self._hparams is not None:
                self._log_params(self._hparams)
        return self._run_id

    def resume(self, step: int) -> None:
        """Go on logging into the MLflow run of the interrupted run (its id is kept in the run directory).

        Nothing has been sent yet when the trainer resumes, so no new run was created. A run that
        has started logging already, or an interrupted one that the store no longer has, stays as
        it is. MLflow cannot delete logged points: values the interrupted run logged after ``step``
        stay in the history beside the resumed run's values at the same steps.
        """
        previous = self._previous_run_id
        if self._run_id is not None or previous is None:
            return
        try:
            self.client.get_run(previous)
        except MlflowException:
            return  # the old run is gone (another store): a new one starts at the first write
        self._run_id = previous
        self.client.update_run(previous, status="RUNNING")

    # ------------------------------------------------------------------ metrics
    def log_scalar(self, name: str, value: float, step: int) -> None:
        self.log_scalars({name: value}, step)

    def log_scalars(self, values: Mapping[str, float], step: int) -> None:
        """Buffer ``values``; send the buffer when it is full or older than ``flush_secs``."""
        now = int(time.time() * 1000)
        self._pending.extend(Metric(metric_key(k), float(v), now, int(step)) for k, v in values.items())
        if len(self._pending) >= _MAX_PENDING or time.monotonic() - self._sent_at >= self.flush_secs:
            self._send()

    def _send(self) -> None:
        pending, self._pending = self._pending, []
        if pending:
            self.client.log_batch(self.run_id, metrics=pending)  # the client splits it into requests
        self._sent_at = time.monotonic()

    def log_hparams(self, params: Mapping[str, Any]) -> None:
        """Log ``params`` as run params (values as text, cut to MLflow's 6000 characters).

        A resumed run has its params already, and MLflow refuses to change one: those the resumed
        run sets otherwise (a longer ``trainer.total_frames``) are logged as tags ``resumed.<key>``.
        """
        self._hparams = dict(params)
        if self._run_id is not None:  # a resumed run (else they go with the run's creation)
            self._log_params(self._hparams, logged=self.client.get_run(self._run_id).data.params)

    def _log_params(self, params: Mapping[str, Any], logged: Mapping[str, str] | None = None) -> None:
        batch = {metric_key(k): str(v)[:_MAX_PARAM_LENGTH] for k, v in params.items()}
        logged = logged or {}
        changed = [RunTag(f"resumed.{k}", v) for k, v in batch.items() if k in logged and logged[k] != v]
        self.client.log_batch(self.run_id, params=[Param(k, v) for k, v in batch.items() if k not in logged], tags=changed)

    # ------------------------------------------------------------------ artifacts
    def log_video(self, name: str, video: Any, step: int, fps: int = 30) -> None:
        """Upload ``video`` as ``videos/<name>_<step>.mp4`` (rl-plugin-video's ``write_mp4``); skipped with one warning without it."""
        if not self.supports_video:
            self.warn_once("rl-plugin-mlflow: videos are not logged; install rl-plugin-video (pip install 'rl-plugin-mlflow[video]')")
            return
        from rl_plugin_video import write_mp4

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"{metric_key(name).replace('/', '_')}_{int(step)}.mp4"
            write_mp4(path, video, fps)
            self.client.log_artifact(self.run_id, str(path), artifact_path="videos")

    def flush(self) -> None:
        if not self._closed:
            self._send()

    def close(self) -> None:
        """Send buffered metrics, upload ``<log_dir>/config.*`` (else the hparams as ``hparams.yaml``) and end
        the run: ``FINISHED``, or ``FAILED``/``KILLED`` when called while an exception propagates (the trainer
        closes its loggers in a ``finally`` block)."""
        if self._closed:
            return
        status = _STATUS[self.exit_status()]
        self._closed = True
        try:
            self._send()
            configs = [p for p in sorted(self.log_dir.glob("config.*")) if p.suffix in CONFIG_SUFFIXES and p.is_file()]
            for path in configs:
                self.client.log_artifact(self.run_id, str(path))
            if not configs and self._hparams is not None:
                self.client.log_dict(self.run_id, json.loads(json.dumps(self._hparams, default=str)), "hparams.yaml")
        finally:
            self.client.set_terminated(self.run_id, status=status)

    def __repr__(self) -> str:
        return f"MLflowLogger(exp_name={self.exp_name!r}, run_id={self._run_id!r}, tracking_uri={self.tracking_uri!r})"


def _experiment_id(client: MlflowClient, name: str, artifact_location: str | None) -> str:
    """The id of experiment ``name``, created when missing."""
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        try:
            return client.create_experiment(name, artifact_location=artifact_location)
        except MlflowException:  # created meanwhile by another process
            experiment = client.get_experiment_by_name(name)
            if experiment is None:
                raise
    if experiment.lifecycle_stage == "deleted":
        raise ConfigError(f"loggers.mlflow.experiment: MLflow experiment {shown(name)} is deleted; restore it or choose another name")
    return experiment.experiment_id


def _tags(tags: Mapping[str, Any] | Iterable[str] | None) -> dict[str, str]:
    if not tags:
        return {}
    if isinstance(tags, Mapping):
        return {str(k): str(v) for k, v in tags.items()}
    return {str(t): "" for t in tags}


def metric_key(name: str) -> str:
    """``name`` as a valid MLflow key: characters other than letters, digits, ``_-. /`` become ``_``."""
    key = "/".join(p for p in _BAD_KEY_CHARS.sub("_", str(name)).split("/") if p not in ("", ".", ".."))
    return key[:_MAX_KEY_LENGTH] or "_"

