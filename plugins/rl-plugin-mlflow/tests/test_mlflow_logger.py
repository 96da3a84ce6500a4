"""The mlflow logger against real MLflow stores (SQLite, and a real ``mlflow server``), read back with MlflowClient.

The Logger contract comes from rl-core's kit (``rlcore_testing.LoggerConformance``); the tests
below it check what only MLflow has: the store and artifacts, buffering, experiments, a server.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import imageio.v2 as imageio
import numpy as np
import pytest
from mlflow import MlflowClient
from mlflow.entities import ViewType

import rlcore
from rl_plugin_mlflow._logger import MLflowLogger, metric_key
from rlcore_testing import LoggerConformance, PluginConformance, Scalars

HPARAMS = {"algo.lr": 3e-4, "algo.name": "ppo", "trainer.total_frames": 4096, "env.wrappers": ["normalize"]}


@pytest.fixture(autouse=True)
def no_tracking_uri(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty, migrated MLflow SQLite store; copying it saves the seconds its schema migrations take."""
    path = tmp_path_factory.mktemp("template") / "mlflow.db"
    MlflowClient(f"sqlite:///{path.as_posix()}").search_experiments()
    return path


@pytest.fixture
def run_dir(tmp_path: Path, template_db: Path) -> Path:
    """A run directory whose ``mlflow.db`` already exists (as when a run is resumed)."""
    shutil.copy(template_db, tmp_path / "mlflow.db")
    return tmp_path


def history(client: MlflowClient, run_id: str, key: str) -> list[tuple[int, float]]:
    return [(m.step, m.value) for m in client.get_metric_history(run_id, key)]


@pytest.mark.slow
class TestMLflowLogger(LoggerConformance):
    resume_mode = "append"  # the interrupted MLflow run goes on; MLflow cannot delete logged points

    @pytest.fixture(autouse=True)
    def _template(self, template_db: Path) -> None:
        self.template_db = template_db

    def make_logger(self, log_dir: Path) -> MLflowLogger:
        log_dir.mkdir(parents=True, exist_ok=True)
        if not (log_dir / "mlflow.db").exists():
            shutil.copy(self.template_db, log_dir / "mlflow.db")
        return MLflowLogger("run", log_dir)

    def read_back(self, logger: MLflowLogger) -> Scalars:  # type: ignore[override]
        client = MlflowClient(logger.tracking_uri)
        names = client.get_run(logger.run_id).data.metrics
        return {name: history(client, logger.run_id, name) for name in names}

    def read_back_killed(self, log_dir: Path) -> Scalars:
        client = MlflowClient(f"sqlite:///{(log_dir / 'mlflow.db').as_posix()}")
        (run,) = client.search_runs([e.experiment_id for e in client.search_experiments(view_type=ViewType.ALL)])
        return {name: history(client, run.info.run_id, name) for name in run.data.metrics}

    def read_hparams(self, logger: MLflowLogger) -> dict[str, str]:  # type: ignore[override]
        return MlflowClient(logger.tracking_uri).get_run(logger.run_id).data.params

    def run_status(self, logger: MLflowLogger) -> str:  # type: ignore[override]
        return MlflowClient(logger.tracking_uri).get_run(logger.run_id).info.status.lower()


class TestMLflowPlugin(PluginConformance):
    plugin = "mlflow"
    distribution = "rl-plugin-mlflow"
    provides = {"loggers": ["mlflow"]}
    heavy_modules = ("torch", "mlflow")


def log_a_run(logger: MLflowLogger) -> None:
    logger.log_hparams(HPARAMS)
    logger.log_scalar("train/episode_return", 1.5, 128)
    logger.log_scalars({"train/episode_return": 2.5, "loss/objective": -0.25}, 256)
    logger.log_video("eval/video", np.full((5, 21, 33, 3), 200, dtype=np.uint8), step=256, fps=10)


@pytest.mark.slow
def test_local_sqlite_store_in_the_run_directory(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text("algo:\n  name: ppo\n")
    logger = MLflowLogger("ppo_run", run_dir)
    assert logger.supports_video
    log_a_run(logger)
    logger.close()
    logger.close()  # idempotent

    assert (run_dir / "mlflow.db").is_file()
    client = MlflowClient(f"sqlite:///{(run_dir / 'mlflow.db').as_posix()}")
    run = client.get_run(logger.run_id)
    assert (run.info.status, run.info.run_name) == ("FINISHED", "ppo_run")
    assert client.get_experiment(run.info.experiment_id).name == "rlcore"
    assert run.data.params == {"algo.lr": "0.0003", "algo.name": "ppo", "trainer.total_frames": "4096", "env.wrappers": "['normalize']"}
    assert history(client, logger.run_id, "train/episode_return") == [(128, 1.5), (256, 2.5)]
    assert history(client, logger.run_id, "loss/objective") == [(256, -0.25)]

    assert {a.path for a in client.list_artifacts(logger.run_id)} == {"config.yaml", "videos"}
    assert [a.path for a in client.list_artifacts(logger.run_id, "videos")] == ["videos/eval_video_256.mp4"]
    assert (run_dir / "mlartifacts").is_dir()
    local = client.download_artifacts(logger.run_id, "videos/eval_video_256.mp4", str(tmp_path))
    frames = np.stack(imageio.mimread(local))
    assert frames.shape == (5, 22, 34, 3)  # padded to even sizes for H.264
    assert abs(int(frames[:, :21, :33].mean()) - 200) <= 3


def test_metrics_are_buffered_until_flush(run_dir: Path) -> None:
    logger = MLflowLogger("run", run_dir, flush_secs=3600)
    client = MlflowClient(logger.tracking_uri)
    for step in range(1, 6):
        logger.log_scalars({"a": float(step), "b": -float(step)}, step * 100)
    assert client.get_metric_history(logger.run_id, "a") == []
    logger.flush()
    assert history(client, logger.run_id, "a") == [(s * 100, float(s)) for s in range(1, 6)]
    logger.log_scalar("a", 6.0, 600)
    logger.close()
    assert history(client, logger.run_id, "a")[-1] == (600, 6.0)


def test_existing_experiment_reused_with_tags_and_hparams_artifact(
    tmp_path: Path, template_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(template_db, tmp_path / "shared.db")
    uri = f"sqlite:///{(tmp_path / 'shared.db').as_posix()}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.chdir(tmp_path)  # MLflow's own default artifact root, for a store given by URI, is ./mlruns
    first = MLflowLogger("a", tmp_path / "a", experiment="shared", tags={"team": "rl"})
    second = MLflowLogger("b", tmp_path / "b", experiment="shared", run_name="second", tags=["baseline"])
    assert first.experiment_id == second.experiment_id
    second.log_hparams({"algo.lr": 0.1})
    first.close()
    second.close()
    assert not (tmp_path / "a" / "mlflow.db").exists()
    client = MlflowClient(uri)
    runs = {r.info.run_name: r for r in client.search_runs([first.experiment_id])}
    assert set(runs) == {"a", "second"}
    assert runs["a"].data.tags["team"] == "rl" and runs["second"].data.tags["baseline"] == ""
    assert all(r.info.status == "FINISHED" for r in runs.values())
    assert [a.path for a in client.list_artifacts(second.run_id)] == ["hparams.yaml"]
    assert client.list_artifacts(first.run_id) == []


def test_keys_are_made_valid(run_dir: Path) -> None:
    assert metric_key("eval/return:mean?") == "eval/return_mean_"
    assert metric_key("/a//b/") == "a/b"
    logger = MLflowLogger("run", run_dir, flush_secs=0)
    logger.log_scalar("eval/return:mean", 1.0, 10)
    logger.close()
    assert history(MlflowClient(logger.tracking_uri), logger.run_id, "eval/return_mean") == [(10, 1.0)]


def test_video_skipped_with_a_warning_without_rl_plugin_video(run_dir: Path) -> None:
    logger = MLflowLogger("run", run_dir)
    logger.supports_video = False  # as when rl-plugin-video is not installed
    with pytest.warns(UserWarning, match="rl-plugin-video"):
        logger.log_video("eval/video", np.zeros((2, 4, 4, 3), dtype=np.uint8), step=1)
    logger.close()
    assert MlflowClient(logger.tracking_uri).list_artifacts(logger.run_id) == []


#: the server process behind each ``mlflow_server`` URL, for tests that kill it
SERVERS: dict[str, subprocess.Popen[bytes]] = {}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def mlflow_server(tmp_path: Path, template_db: Path) -> Iterator[str]:
    """A real ``mlflow server`` on loopback with a SQLite backend and proxied artifacts, all in ``tmp_path``."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    shutil.copy(template_db, tmp_path / "server.db")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] = "false"  # no background job workers, which a test does not need
    cmd = [
        sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
        "--backend-store-uri", f"sqlite:///{(tmp_path / 'server.db').as_posix()}",
        "--serve-artifacts", "--artifacts-destination", str(tmp_path / "server-artifacts"),
    ]  # fmt: skip
    log = open(tmp_path / "server.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    SERVERS[url] = proc
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"mlflow server did not start:\n{(tmp_path / 'server.log').read_text()[-3000:]}")
            time.sleep(0.25)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):  # a test may have killed it already
            os.killpg(proc.pid, signal.SIGTERM)  # the server's own process group (uvicorn runs as its child)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="process groups")
def test_logs_to_a_tracking_server(tmp_path: Path, mlflow_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)
    run_dir = tmp_path / "run"
    logger = MLflowLogger("served", run_dir, experiment="remote")
    log_a_run(logger)
    logger.close()
    assert not (run_dir / "mlflow.db").exists()

    client = MlflowClient(mlflow_server)
    run = client.get_run(logger.run_id)
    assert run.info.status == "FINISHED" and client.get_experiment(run.info.experiment_id).name == "remote"
    assert run.data.params["algo.name"] == "ppo"
    assert history(client, logger.run_id, "train/episode_return") == [(128, 1.5), (256, 2.5)]
    assert {a.path for a in client.list_artifacts(logger.run_id)} == {"hparams.yaml", "videos"}
    assert list((tmp_path / "server-artifacts").rglob("eval_video_256.mp4"))


def test_options_pass_through_the_registry(run_dir: Path) -> None:
    pm = rlcore.get_plugin_manager()
    logger = rlcore.get_logger("mlflow", exp_name="run-1", log_dir=run_dir, plugin_manager=pm, experiment="via-registry")
    assert isinstance(logger, MLflowLogger)
    logger.close()
    assert MlflowClient(logger.tracking_uri).get_experiment_by_name("via-registry") is not None


def test_resume_continues_the_interrupted_mlflow_run(run_dir: Path) -> None:
    first = MLflowLogger("run", run_dir, flush_secs=0)
    first.log_hparams({"algo.lr": 0.1, "trainer.total_frames": 100})
    for step in (1, 2, 3):
        first.log_scalars({"loss": float(step)}, step)
    first.close()
    second = MLflowLogger("run", run_dir, flush_secs=0)
    second.resume(3)  # the trainer's order: resume, then the resumed run's params
    second.log_hparams({"algo.lr": 0.1, "trainer.total_frames": 200, "trainer.seed": 1})
    assert second.run_id == first.run_id
    second.log_scalars({"loss": 4.0}, 4)
    second.close()
    client = MlflowClient(second.tracking_uri)
    (run,) = client.search_runs([second.experiment_id], run_view_type=ViewType.ALL)  # no run made and deleted
    assert run.info.run_id == first.run_id and run.info.status == "FINISHED"
    assert run.data.params == {"algo.lr": "0.1", "trainer.total_frames": "100", "trainer.seed": "1"}  # MLflow keeps a param's first value
    assert run.data.tags["resumed.trainer.total_frames"] == "200"  # the resumed run's own, beside it
    assert "resumed.algo.lr" not in run.data.tags and "resumed.trainer.seed" not in run.data.tags
    assert history(client, run.info.run_id, "loss") == [(1, 1.0), (2, 2.0), (3, 3.0), (4, 4.0)]


def rlctl_train(run: Path, *args: str, uri: str) -> subprocess.Popen[str]:
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "RLCORE_PLUGINS": "rl-plugin-pg,rl-plugin-mlflow"}
    argv = [sys.executable, "-m", "rlcore", "train", "--algo", "ppo", "--out", str(run), "--logger", "mlflow", "--set", "loggers.console=null", *args]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_a_tracking_server_that_does_not_answer_costs_the_run_its_deadline_only(tmp_path: Path) -> None:
    start = time.monotonic()
    run = rlctl_train(tmp_path / "run", "--frames", "1024", "--set", "trainer.logger_setup_timeout=2", uri="http://127.0.0.1:9")
    _, err = run.communicate(timeout=120)
    assert time.monotonic() - start < 60  # MLflow's own retries take minutes
    logger, why = "logger mlflow of plugin 'mlflow' (rl-plugin-mlflow)", "was not set up within 2 s (trainer.logger_setup_timeout)"
    dropped = [line for line in err.splitlines() if "mlflow" in line]
    assert dropped[0] == f"rlctl: warning: {logger} {why}; it is dropped and the run goes on"
    # trained, but not a clean success: the last line and the exit status say what the run lacks
    assert run.returncode == 1 and dropped[1:] == [err.splitlines()[-1]] and err.splitlines()[-1].endswith(f"; {logger} {why}, so it lacks values of this run")
    assert "Traceback" not in err and (tmp_path / "run" / "metrics.csv").read_text().count("\n") > 5


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="process groups")
def test_a_tracking_server_that_dies_mid_run_is_dropped_at_its_deadline(tmp_path: Path, mlflow_server: str) -> None:
    run_dir = tmp_path / "run"
    run = rlctl_train(run_dir, "--frames", "1e7", "--set", "trainer.logger_timeout=2", "--set", "loggers.mlflow.flush_secs=0.2", uri=mlflow_server)
    try:
        client = MlflowClient(mlflow_server)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and run.poll() is None:
            experiment = client.get_experiment_by_name("rlcore")
            runs = client.search_runs([experiment.experiment_id]) if experiment else []
            if runs and runs[0].data.metrics:
                break
            time.sleep(0.2)
        os.killpg(SERVERS[mlflow_server].pid, signal.SIGKILL)  # the server dies without a word
        time.sleep(3.5)  # the deadline, and a bit
        rows = (run_dir / "metrics.csv").read_text().count("\n")
        time.sleep(3)
        assert (run_dir / "metrics.csv").read_text().count("\n") > rows  # training goes on
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 143, err  # (the signal's status: the run was stopped)
    dropped = [line for line in err.splitlines() if "logger mlflow" in line]
    assert len(dropped) == 2 and dropped[0].endswith("; it is dropped and the run goes on"), err
    assert dropped[1] == err.splitlines()[-1] and dropped[1].endswith(", so it lacks values of this run")  # the last line says so
