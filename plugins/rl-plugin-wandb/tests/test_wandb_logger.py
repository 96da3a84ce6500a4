"""The wandb logger against real offline W&B runs, read back from the run's ``.wandb`` log by W&B's own reader.

``wandb leet inspect --json RUN_DIR`` prints every record of a run's transaction log as one JSON line
(history rows, config updates, metric definitions, the exit code): the log that ``wandb sync`` uploads.
The Logger contract comes from rl-core's kit (``rlcore_testing.LoggerConformance``); the tests
below it check what only W&B has: run metadata, the ``frames`` axis, histograms and videos.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import imageio.v2 as imageio
import numpy as np
import pytest
import torch

from rl_plugin_wandb._logger import WandbLogger
from rlcore_testing import LoggerConformance, PluginConformance, Scalars


@pytest.fixture(autouse=True)
def offline_wandb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    for var in ("WANDB_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR", "WANDB_DATA_DIR", "WANDB_ARTIFACT_DIR"):
        monkeypatch.setenv(var, str(tmp_path / "wandb-home" / var.lower()))
    for var in ("WANDB_PROJECT", "WANDB_ENTITY", "WANDB_RUN_GROUP", "WANDB_TAGS", "WANDB_NAME"):
        monkeypatch.delenv(var, raising=False)


def run_dir(logger: WandbLogger) -> Path:
    """The run's folder: ``<log_dir>/wandb/offline-run-<time>-<id>/``."""
    return Path(logger.run.dir).parent


def records(logger: WandbLogger) -> list[dict[str, Any]]:
    """Every record of the run's transaction log (read once per closed logger)."""
    if not hasattr(logger, "_test_records"):
        logger._test_records = read_records(run_dir(logger))  # type: ignore[attr-defined]
    return logger._test_records  # type: ignore[attr-defined]


def read_records(folder: Path) -> list[dict[str, Any]]:
    """Every record of the transaction log of the run in ``folder``, by W&B's own reader."""
    cmd = [sys.executable, "-m", "wandb", "leet", "inspect", "--json", str(folder)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def scalars(recs: list[dict[str, Any]]) -> Scalars:
    """``{name: [(frames, value)]}`` of the history rows' numbers."""
    values: Scalars = {}
    for history in of_type(recs, "history"):
        item = history["item"]
        for key, value in item.items():
            if not key.startswith("_") and key != "frames" and isinstance(value, (int, float)):
                values.setdefault(key, []).append((item["frames"], value))
    return values


def of_type(recs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r[kind] for r in recs if r["type"] == kind]


def rows(recs: list[dict[str, Any]], key: str) -> list[tuple[int, Any]]:
    """``(frames, value)`` of every history row holding ``key``."""
    return [(h["item"]["frames"], h["item"][key]) for h in of_type(recs, "history") if key in h["item"]]


@pytest.mark.slow
class TestWandbLogger(LoggerConformance):
    resume_mode = "new_run"  # an offline W&B run cannot be continued: the resumed logger starts another

    def make_logger(self, log_dir: Path) -> WandbLogger:
        return WandbLogger("run", log_dir)

    def read_back(self, logger: WandbLogger) -> Scalars:  # type: ignore[override]
        return scalars(records(logger))

    def read_back_killed(self, log_dir: Path) -> None:
        """W&B's limit: wandb-core holds the transaction log in memory and stops with the process it serves, so a killed
        run's ``.wandb`` file keeps its 7-byte header alone, flushed or not (no public call writes it through)."""
        (folder,) = (log_dir / "wandb").glob("offline-run-*")
        assert not scalars(read_records(folder)), "W&B now keeps a killed run's rows: read them back here"
        return None

    def read_hparams(self, logger: WandbLogger) -> dict[str, Any]:  # type: ignore[override]
        return {k: v for config in of_type(records(logger), "config") for k, v in config["update"].items()}

    def run_status(self, logger: WandbLogger) -> str:  # type: ignore[override]
        codes = [e.get("exit_code", 0) for e in of_type(records(logger), "exit")]
        return {(0,): "finished", (130,): "killed"}.get(tuple(codes), "failed")


class TestWandbPlugin(PluginConformance):
    plugin = "wandb"
    distribution = "rl-plugin-wandb"
    provides = {"loggers": ["wandb"]}
    heavy_modules = ("torch", "wandb")


@pytest.mark.slow
def test_run_metadata_frames_axis_histogram_and_video(tmp_path: Path) -> None:
    log_dir = tmp_path / "run"
    logger = WandbLogger("ppo_run", log_dir, project="rl-tests", tags=["ppo"], group="seeds")
    assert logger.supports_video
    logger.log_hparams({"algo.lr": 3e-4, "algo.name": "ppo", "env.wrappers": ["normalize"]})
    logger.log_scalar("train/episode_return", 1.5, 128)
    logger.log_scalars({"train/episode_return": 2.5, "loss/objective": -0.25}, 256)
    logger.log_scalars({"train/episode_return": 0.5}, 64)  # a lower frame count is kept, not dropped
    logger.log_histogram("policy/logits", torch.randn(500), 256)
    logger.log_video("eval/video", np.full((5, 21, 33, 3), 200, dtype=np.uint8), step=512, fps=10)
    logger.close()
    logger.close()  # idempotent

    assert run_dir(logger).parent == log_dir / "wandb"
    recs = records(logger)
    (run,) = of_type(recs, "run")
    assert (run["display_name"], run["project"], run["tags"], run["run_group"]) == ("ppo_run", "rl-tests", ["ppo"], "seeds")
    config = {k: v for c in of_type(recs, "config") for k, v in c["update"].items()}
    assert config["algo.lr"] == 3e-4 and config["algo.name"] == "ppo" and config["env.wrappers"] == ["normalize"]
    assert {"glob_name": "*", "step_metric": "frames"}.items() <= of_type(recs, "metric")[-1].items()

    assert rows(recs, "train/episode_return") == [(128, 1.5), (256, 2.5), (64, 0.5)]
    assert rows(recs, "loss/objective") == [(256, -0.25)]
    assert rows(recs, "policy/logits._type") == [(256, "histogram")]
    assert sum(rows(recs, "policy/logits.values")[0][1]) == 500

    ((frames, path),) = rows(recs, "eval/video.path")
    assert frames == 512 and rows(recs, "eval/video._type") == [(512, "video-file")]
    video = np.stack(imageio.mimread(run_dir(logger) / "files" / path))
    assert video.shape == (5, 22, 34, 3)  # padded to even sizes for H.264
    assert abs(int(video[:, :21, :33].mean()) - 200) <= 3
    assert [e.get("exit_code", 0) for e in of_type(recs, "exit")] == [0]


@pytest.mark.slow
def test_mode_option_and_two_runs_in_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "online")  # the option wins; online would need an account
    first = WandbLogger("first", tmp_path / "a", mode="offline")
    second = WandbLogger("second", tmp_path / "b", mode="offline")
    first.log_scalar("x", 1.0, 10)
    second.log_scalar("x", 2.0, 20)
    first.log_scalar("x", 3.0, 30)
    second.close()
    first.close()
    assert rows(records(first), "x") == [(10, 1.0), (30, 3.0)]
    assert rows(records(second), "x") == [(20, 2.0)]


def test_a_bad_mode_is_refused_with_the_config() -> None:
    import rlcore

    with pytest.raises(rlcore.ConfigError, match=r"^loggers.wandb.mode: unknown value 'bogus' \(valid choices: online, offline, shared, disabled\)$"):
        rlcore.load_config(overrides=["algo.name=ppo", "loggers.wandb.mode=bogus"])


@pytest.mark.slow
def test_video_skipped_with_a_warning_without_rl_plugin_video(tmp_path: Path) -> None:
    logger = WandbLogger("run", tmp_path)
    logger.supports_video = False  # as when rl-plugin-video is not installed
    with pytest.warns(UserWarning, match="rl-plugin-video"):
        logger.log_video("eval/video", np.zeros((2, 4, 4, 3), dtype=np.uint8), step=1)
    logger.close()
    assert rows(records(logger), "eval/video.path") == []
