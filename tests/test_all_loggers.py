"""A short real PPO run with CSV, TensorBoard, MLflow and W&B at once and the evaluation hook: every metric in each."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

import rlcore

for module in ("rl_plugin_pg", "rl_plugin_tensorboard", "rl_plugin_mlflow", "rl_plugin_wandb", "rl_plugin_video"):
    pytest.importorskip(module)


def csv_metrics(run_dir: Path) -> dict[str, list[int]]:
    found: dict[str, list[int]] = defaultdict(list)
    with open(run_dir / "metrics.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            found[row["name"]].append(int(row["frames"]))
    return found


def tensorboard_metrics(run_dir: Path) -> dict[str, list[int]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir / "tensorboard"), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [e.step for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def mlflow_metrics(run_dir: Path, names: list[str]) -> dict[str, list[int]]:
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{(run_dir / 'mlflow.db').as_posix()}")
    (run,) = client.search_runs([client.get_experiment_by_name("rlcore").experiment_id])
    assert run.info.status == "FINISHED"
    assert run.data.params["algo.name"] == "ppo"
    assert any(a.path.startswith("config") for a in client.list_artifacts(run.info.run_id))
    return {name: [m.step for m in client.get_metric_history(run.info.run_id, name)] for name in names}


def wandb_metrics(run_dir: Path) -> dict[str, list[int]]:
    (wandb_run,) = (run_dir / "wandb").glob("offline-run-*")
    out = subprocess.run([sys.executable, "-m", "wandb", "leet", "inspect", "--json", str(wandb_run)],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    found: dict[str, list[int]] = defaultdict(list)
    for line in out.splitlines():
        record = json.loads(line) if line.startswith("{") else {}
        if record.get("type") != "history":
            continue
        items = record["history"]["item"]
        for key in items:
            if not key.startswith("_") and key != "frames":
                found[key].append(int(items["frames"]))
    return found


@pytest.mark.slow
def test_four_loggers_and_evaluation_see_every_metric(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    run_dir = tmp_path / "run"
    config = {
        "algo": {"name": "ppo"},
        "trainer": {"total_frames": 2048, "seed": 0, "progress_bar": False},
        "loggers": {"csv": {}, "tensorboard": {}, "mlflow": {}, "wandb": {}},
        "hooks": {"evaluation": {"record_interval": 1024, "episodes": 1, "video": True}},
    }
    trainer = rlcore.build_trainer(config, run_dir=run_dir)
    trainer.train()

    expected = csv_metrics(run_dir)
    for name in ("train/episode_return", "eval/episode_return", "loss/policy", "loss/value", "loss/entropy", "train/kl_approx", "train/explained_variance", "optim/lr", "perf/fps"):
        assert name in expected, name
    assert expected["eval/episode_return"][:2] == [1024, 2048]
    assert list((run_dir / "videos").glob("*.mp4"))

    assert tensorboard_metrics(run_dir) == dict(expected)
    assert mlflow_metrics(run_dir, list(expected)) == dict(expected)
    logged = wandb_metrics(run_dir)
    assert logged.pop("eval/video._type") == [1024, 2048]  # the videos, as wandb.Video
    assert {k: v for k, v in logged.items() if not k.startswith("eval/video.")} == dict(expected)


@pytest.mark.parametrize(
    ("name", "module", "cls"),
    [("tensorboard", "rl_plugin_tensorboard", "TensorBoardLogger"), ("mlflow", "rl_plugin_mlflow", "MLflowLogger"), ("wandb", "rl_plugin_wandb", "WandbLogger")],
)
def test_a_loggers_options_are_checked_by_name_and_type_as_its_class_takes_them(name: str, module: str, cls: str) -> None:
    import importlib

    from rlcore._kernel.options import options_of

    plugin = importlib.import_module(module)
    declared, open_ended = options_of(plugin.make_logger)  # what the config's loggers.<name> is checked against
    taken, _ = options_of(getattr(importlib.import_module(f"{module}._logger"), cls))
    assert not open_ended and {k: o.default for k, o in declared.items()} == {k: o.default for k, o in taken.items()}
    with pytest.raises(rlcore.ConfigError, match=rf"^unknown key loggers\.{name}\.colour \(valid choices: "):
        rlcore.load_config(overrides=[f"loggers.{name}.colour=red"])  # a typo stops the run before it starts
