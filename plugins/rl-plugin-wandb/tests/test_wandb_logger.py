"""The wandb logger against real offline W&B runs, read back from the run's ``.wandb`` log by W&B's own reader.

``wandb leet inspect --json RUN_DIR`` prints every record of a run's transaction log as one JSON line
(history rows, config updates, metric definitions, the exit code): the log that ``wandb sync`` uploads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import imageio.v2 as imageio
import numpy as np
import pytest
import torch

import rlcore
from rl_plugin_wandb._logger import WandbLogger


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
    cmd = [sys.executable, "-m", "wandb", "leet", "inspect", "--json", str(run_dir(logger))]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def of_type(recs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r[kind] for r in recs if r["type"] == kind]


def rows(recs: list[dict[str, Any]], key: str) -> list[tuple[int, Any]]:
    """``(frames, value)`` of every history row holding ``key``."""
    return [(h["item"]["frames"], h["item"][key]) for h in of_type(recs, "history") if key in h["item"]]


def test_scalars_hparams_histogram_and_video(tmp_path: Path) -> None:
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


def test_failed_run_exits_with_code_1(tmp_path: Path) -> None:
    logger = WandbLogger("run", tmp_path)
    logger.log_scalar("a", 1.0, 1)
    with pytest.raises(RuntimeError):
        try:
            raise RuntimeError("diverged")
        finally:
            logger.close()
    assert of_type(records(logger), "exit")[0]["exit_code"] == 1


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


def test_video_skipped_with_a_warning_without_imageio(tmp_path: Path) -> None:
    logger = WandbLogger("run", tmp_path)
    logger.supports_video = False  # as when imageio is not installed
    with pytest.warns(UserWarning, match="imageio"):
        logger.log_video("eval/video", np.zeros((2, 4, 4, 3), dtype=np.uint8), step=1)
    logger.close()
    assert rows(records(logger), "eval/video.path") == []


def test_discovered_through_its_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RLCORE_PLUGINS", raising=False)
    pm = rlcore.get_plugin_manager()
    info = {i.name: i for i in pm.describe()}["wandb"]
    assert (info.status, info.distribution, info.provides) == ("ok", "rl-plugin-wandb", {"loggers": ["wandb"]})
    logger = rlcore.get_logger("wandb", exp_name="run-1", log_dir=tmp_path, plugin_manager=pm, project="via-registry")
    assert isinstance(logger, WandbLogger) and isinstance(logger, rlcore.Logger)
    logger.log_scalars({"x": 1.0}, 8)
    logger.close()
    recs = records(logger)
    assert of_type(recs, "run")[0]["project"] == "via-registry" and rows(recs, "x") == [(8, 1.0)]


def test_listing_plugins_does_not_import_wandb() -> None:
    code = (
        "import sys, rlcore\n"
        "infos = {i.name: i for i in rlcore.get_plugin_manager().describe()}\n"
        "assert infos['wandb'].provides == {'loggers': ['wandb']}, infos\n"
        "assert 'wandb' not in sys.modules\n"
    )
    env = {**os.environ, "RLCORE_PLUGINS": "rl-plugin-wandb"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)
